"""Gradient makers of the embedding / sampling / optimizer ops (csrc/ops/embed.c).

- ``Gather(DATA, INDICES)``: as in Caffe2, the gradient of DATA is sparse, a
  ``core.GradientSlice(indices=INDICES, values=dOUT)`` (no op: the rows of dOUT
  belong to the rows INDICES of DATA; repeated indices add up). The optimizers
  update only those rows (``ScatterWeightedSum``, ``SparseAdagrad``, ...);
  gradient accumulation and gradient makers that need it dense get a
  ``SparseToDense`` (see core). INDICES get no gradient. The op
  ``GatherGradient(DATA, INDICES, dOUT)`` (the dense gradient) stays available.
- ``OneHot``, ``WeightedSample`` and ``Adagrad`` have no gradient (integer or
  random outputs, and an optimizer step).
"""

from . import core
from .core import GradientRegistry


@GradientRegistry.RegisterGradient("Gather")
def _gather_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    return [], [core.GradientSlice(str(op.input[1]), g_output[0]), None]


GradientRegistry.RegisterNoGradient("OneHot", "WeightedSample", "Adagrad")
