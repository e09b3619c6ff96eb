"""Gradient makers of the unsorted segment reductions (csrc/ops/segment.c).

Input orders and op names are Caffe2's (SegmentOpGetGradient in segment_reduction_op.h):
[SCALARS], dOUT, SEGMENT_IDS.

- ``UnsortedSegment{Sum,Mean}(DATA, SEGMENT_IDS)``:
  ``UnsortedSegment{Sum,Mean}Gradient([dOUT, SEGMENT_IDS]) -> DATA_grad``; row k is
  dOUT[ids[k]] (Sum) or dOUT[ids[k]] / count(ids == ids[k]) (Mean).
- ``UnsortedSegmentWeightedSum(DATA, SCALARS, SEGMENT_IDS)``:
  ``UnsortedSegmentWeightedSumGradient([SCALARS, dOUT, SEGMENT_IDS]) -> DATA_grad``.
  With ``grad_on_weights=1`` (Caffe2's maker refused it for the segment ops: "grads on aux
  inputs are not yet implemented"), as our SortedSegmentWeightedSum:
  ``UnsortedSegmentWeightedSumWithMainInputGradient([SCALARS, dOUT, SEGMENT_IDS, DATA])
  -> (DATA_grad, SCALARS_grad)``.
- ``SparseUnsortedSegment{Sum,Mean,WeightedSum}(DATA, [SCALARS,] INDICES, SEGMENT_IDS)``: the
  same gradient ops (as Caffe2's maker) give the rows of a sparse gradient,
  ``core.GradientSlice(INDICES, values)``, the values blob named ``<OUT>_<DATA>_grad_values``;
  the WithMainInput op takes INDICES as a fifth input to read the rows DATA[INDICES[k]].
- SEGMENT_IDS and INDICES get no gradient, SCALARS none without ``grad_on_weights``;
  ``Unique`` (integer outputs) and the gradient ops have none.
"""

from . import core
from .core import GradientRegistry


def _grad_on_weights(op):
    for a in op.arg:
        if a.name == "grad_on_weights":
            return bool(a.i)
    return False


def _values_name(op):
    return "%s_%s_grad_values" % (op.output[0], op.input[0])


def _segment_grad(grad_type, sparse):
    def maker(op, g_output):
        n_in = len(op.input)
        if g_output[0] is None:
            return [], [None] * n_in
        data, ids = str(op.input[0]), str(op.input[-1])
        out = _values_name(op) if sparse else data + "_grad"
        grad_op = core.CreateOperator(grad_type, [g_output[0], ids], [out])
        g_data = core.GradientSlice(str(op.input[1]), out) if sparse else out
        return [grad_op], [g_data] + [None] * (n_in - 1)
    return maker


def _segment_weighted_grad(sparse):
    def maker(op, g_output):
        n_in = len(op.input)
        if g_output[0] is None:
            return [], [None] * n_in
        data, scalars, ids = str(op.input[0]), str(op.input[1]), str(op.input[-1])
        out = _values_name(op) if sparse else data + "_grad"
        g_data = core.GradientSlice(str(op.input[2]), out) if sparse else out
        if _grad_on_weights(op):
            ins = [scalars, g_output[0], ids, data] + ([str(op.input[2])] if sparse else [])
            grad_op = core.CreateOperator("UnsortedSegmentWeightedSumWithMainInputGradient", ins,
                                          [out, scalars + "_grad"])
            return [grad_op], [g_data, scalars + "_grad"] + [None] * (n_in - 2)
        grad_op = core.CreateOperator("UnsortedSegmentWeightedSumGradient", [scalars, g_output[0], ids],
                                      [out])
        return [grad_op], [g_data] + [None] * (n_in - 1)
    return maker


GradientRegistry.RegisterGradient("UnsortedSegmentSum")(_segment_grad("UnsortedSegmentSumGradient", False))
GradientRegistry.RegisterGradient("UnsortedSegmentMean")(_segment_grad("UnsortedSegmentMeanGradient", False))
GradientRegistry.RegisterGradient("SparseUnsortedSegmentSum")(
    _segment_grad("UnsortedSegmentSumGradient", True))
GradientRegistry.RegisterGradient("SparseUnsortedSegmentMean")(
    _segment_grad("UnsortedSegmentMeanGradient", True))
GradientRegistry.RegisterGradient("UnsortedSegmentWeightedSum")(_segment_weighted_grad(False))
GradientRegistry.RegisterGradient("SparseUnsortedSegmentWeightedSum")(_segment_weighted_grad(True))
GradientRegistry.RegisterNoGradient(
    "Unique", "UnsortedSegmentSumGradient", "UnsortedSegmentMeanGradient",
    "UnsortedSegmentWeightedSumGradient", "UnsortedSegmentWeightedSumWithMainInputGradient")
