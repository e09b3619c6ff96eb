"""Gradient makers of the deduplication ops (csrc/ops/segment.c).

- ``UnsortedSegmentSum(DATA, SEGMENT_IDS)``: each row of DATA went to one
  segment, so its gradient is that segment's output gradient:
  ``Gather([dOUT, SEGMENT_IDS]) -> DATA_grad`` (shape SEGMENT_IDS.shape +
  dOUT.shape[1:], i.e. DATA's). Caffe2 used its UnsortedSegmentSumGradient op,
  which computed the same rows.
- ``UnsortedSegmentMean(DATA, SEGMENT_IDS)``:
  ``UnsortedSegmentMeanGradient([dOUT, SEGMENT_IDS]) -> DATA_grad``, each row
  dOUT[ids[k]] / count(ids == ids[k]), as Caffe2's maker.
- SEGMENT_IDS get no gradient; ``Unique`` (integer outputs) and
  ``UnsortedSegmentMeanGradient`` have none.
"""

from . import core
from .core import GradientRegistry


def _segment_grad(grad_type):
    def maker(op, g_output):
        if g_output[0] is None:
            return [], [None, None]
        g_data = str(op.input[0]) + "_grad"
        grad_op = core.CreateOperator(grad_type, [g_output[0], op.input[1]], [g_data])
        return [grad_op], [g_data, None]
    return maker


GradientRegistry.RegisterGradient("UnsortedSegmentSum")(_segment_grad("Gather"))
GradientRegistry.RegisterGradient("UnsortedSegmentMean")(_segment_grad("UnsortedSegmentMeanGradient"))
GradientRegistry.RegisterNoGradient("Unique", "UnsortedSegmentMeanGradient")
