"""Gradient makers of the sorted-segment reductions and NanCheck / Assert / EnforceFinite
(csrc/ops/sorted_segment.c), and of EnsureDense (csrc/ops/util.c).

Input orders are Caffe2's (SegmentOpGetGradient in segment_reduction_op.h):
[SCALARS], dOUT, SEGMENT_IDS, [DATA (WithMainInput)], [INDICES (sparse WithMainInput)].

- ``SortedSegment{Sum,Mean}(DATA, SEGMENT_IDS)``:
  ``SortedSegment{Sum,Mean}Gradient([dOUT, SEGMENT_IDS]) -> DATA_grad``.
- ``SortedSegmentWeightedSum(DATA, SCALARS, SEGMENT_IDS)``:
  ``SortedSegmentWeightedSumGradient([SCALARS, dOUT, SEGMENT_IDS]) -> DATA_grad``; with
  ``grad_on_weights=1``, ``SortedSegmentWeightedSumWithMainInputGradient([SCALARS, dOUT,
  SEGMENT_IDS, DATA]) -> (DATA_grad, SCALARS_grad)``.
- ``SparseSortedSegment{Sum,Mean,WeightedSum}(DATA, [SCALARS,] INDICES, SEGMENT_IDS)``: the
  same gradient ops (as Caffe2, which had no Sparse*Gradient op for them) give the rows of a
  sparse gradient, ``core.GradientSlice(INDICES, values)``; the WithMainInput op takes INDICES
  as a fifth input to read the rows DATA[INDICES[k]] for SCALARS_grad.
- ``SortedSegmentRange{Sum,Mean,LogSumExp,LogMeanExp,Max}(DATA, SEGMENT_IDS)``:
  ``SortedSegmentRange{Sum,Mean,LogSumExp,LogMeanExp,Max}Gradient([DATA, OUT, dOUT, SEGMENT_IDS])
  -> DATA_grad``
  (Caffe2's AbstractSortedSegmentRangeDef::GetGradient: the forward input and output too).
- ``NanCheck(X, ...)``: ``NanCheck([dY]) -> X_grad`` (Caffe2's GetNanCheckGradient: the
  gradient is checked too); the extra inputs get none.
- ``EnsureDense(X)``: a dense output gradient is passed through (no op); a ``GradientSlice``
  is made dense, ``SparseToDense([indices, values, X]) -> X_grad`` (Caffe2's
  GetEnsureDenseGradient made sparse gradients dense; it used its own op).
- SEGMENT_IDS, INDICES get no gradient; ``Assert``, ``EnforceFinite`` and the gradient ops have none.
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


def segment_grad(grad_type, sparse):
    """The maker of a (Sparse)(Un)SortedSegment{Sum,Mean} op: ``grad_type(dOUT, SEGMENT_IDS)``
    gives DATA's gradient (sparse: the values of a GradientSlice over INDICES)."""
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


def segment_weighted_grad(prefix, sparse):
    """The maker of a (Sparse)<prefix>WeightedSum op (prefix SortedSegment or UnsortedSegment):
    <prefix>WeightedSumGradient, or with grad_on_weights <prefix>WeightedSumWithMainInputGradient."""
    def maker(op, g_output):
        n_in = len(op.input)
        if g_output[0] is None:
            return [], [None] * n_in
        data, scalars, ids = str(op.input[0]), str(op.input[1]), str(op.input[-1])
        out = _values_name(op) if sparse else data + "_grad"
        g_data = core.GradientSlice(str(op.input[2]), out) if sparse else out
        if _grad_on_weights(op):
            ins = [scalars, g_output[0], ids, data] + ([str(op.input[2])] if sparse else [])
            grad_op = core.CreateOperator(prefix + "WeightedSumWithMainInputGradient", ins,
                                          [out, scalars + "_grad"])
            return [grad_op], [g_data, scalars + "_grad"] + [None] * (n_in - 2)
        grad_op = core.CreateOperator(prefix + "WeightedSumGradient", [scalars, g_output[0], ids], [out])
        return [grad_op], [g_data] + [None] * (n_in - 1)
    return maker


def _range_grad(grad_type):
    def maker(op, g_output):
        if g_output[0] is None:
            return [], [None, None]
        g_data = str(op.input[0]) + "_grad"
        grad_op = core.CreateOperator(grad_type, [op.input[0], op.output[0], g_output[0], op.input[1]],
                                      [g_data])
        return [grad_op], [g_data, None]
    return maker


@GradientRegistry.RegisterGradient("NanCheck")
def _nan_check_grad(op, g_output):
    n_in = len(op.input)
    if g_output[0] is None:
        return [], [None] * n_in
    g_x = str(op.input[0]) + "_grad"
    return [core.CreateOperator("NanCheck", [g_output[0]], [g_x])], [g_x] + [None] * (n_in - 1)


@GradientRegistry.RegisterGradient("EnsureDense")
def _ensure_dense_grad(op, g_output):
    g = g_output[0]
    if g is None or not isinstance(g, core.GradientSlice):
        return [], [g]
    g_x = str(op.input[0]) + "_grad"
    return [core.CreateOperator("SparseToDense", [g.indices, g.values, op.input[0]], [g_x])], [g_x]


GradientRegistry.TakesSparse("EnsureDense")
GradientRegistry.RegisterGradient("SortedSegmentSum")(segment_grad("SortedSegmentSumGradient", False))
GradientRegistry.RegisterGradient("SortedSegmentMean")(segment_grad("SortedSegmentMeanGradient", False))
GradientRegistry.RegisterGradient("SparseSortedSegmentSum")(segment_grad("SortedSegmentSumGradient", True))
GradientRegistry.RegisterGradient("SparseSortedSegmentMean")(segment_grad("SortedSegmentMeanGradient", True))
GradientRegistry.RegisterGradient("SortedSegmentWeightedSum")(segment_weighted_grad("SortedSegment", False))
GradientRegistry.RegisterGradient("SparseSortedSegmentWeightedSum")(
    segment_weighted_grad("SortedSegment", True))
GradientRegistry.RegisterGradient("SortedSegmentRangeSum")(_range_grad("SortedSegmentRangeSumGradient"))
GradientRegistry.RegisterGradient("SortedSegmentRangeMean")(_range_grad("SortedSegmentRangeMeanGradient"))
GradientRegistry.RegisterGradient("SortedSegmentRangeLogSumExp")(
    _range_grad("SortedSegmentRangeLogSumExpGradient"))
GradientRegistry.RegisterGradient("SortedSegmentRangeLogMeanExp")(
    _range_grad("SortedSegmentRangeLogMeanExpGradient"))
GradientRegistry.RegisterGradient("SortedSegmentRangeMax")(_range_grad("SortedSegmentRangeMaxGradient"))
GradientRegistry.RegisterNoGradient(
    "Assert", "EnforceFinite", "SortedSegmentSumGradient", "SortedSegmentMeanGradient",
    "SortedSegmentWeightedSumGradient",
    "SortedSegmentWeightedSumWithMainInputGradient", "SortedSegmentRangeSumGradient",
    "SortedSegmentRangeMeanGradient", "SortedSegmentRangeLogSumExpGradient",
    "SortedSegmentRangeLogMeanExpGradient", "SortedSegmentRangeMaxGradient")
