"""Gradient makers of the embedding / sampling / optimizer ops (csrc/ops/embed.c).

- ``Gather(DATA, INDICES)``: Caffe2 returned a sparse gradient (a GradientSlice
  of INDICES and the output gradient). We keep gradients dense: the maker
  emits ``GatherGradient(DATA, INDICES, dOUT) -> DATA_grad``, which scatter-adds
  the rows of dOUT into zeros shaped like DATA (repeated indices accumulate).
  INDICES get no gradient.
- ``OneHot``, ``WeightedSample`` and ``Adagrad`` have no gradient (integer or
  random outputs, and an optimizer step).
"""

from . import core
from .core import GradientRegistry


@GradientRegistry.RegisterGradient("Gather")
def _gather_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    g_data = str(op.input[0]) + "_grad"
    grad_op = core.CreateOperator("GatherGradient", [op.input[0], op.input[1], g_output[0]], [g_data])
    return [grad_op], [g_data, None]


GradientRegistry.RegisterNoGradient("OneHot", "WeightedSample", "Adagrad")
