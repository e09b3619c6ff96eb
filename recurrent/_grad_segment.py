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
  ``Unique`` (integer outputs), ``FindDuplicateElements`` (Caffe2's SHOULD_NOT_DO_GRADIENT) and the
  gradient ops have none.
"""

from . import core
from ._grad_sorted import segment_grad, segment_weighted_grad
from .core import GradientRegistry


GradientRegistry.RegisterGradient("UnsortedSegmentSum")(segment_grad("UnsortedSegmentSumGradient", False))
GradientRegistry.RegisterGradient("UnsortedSegmentMean")(segment_grad("UnsortedSegmentMeanGradient", False))
GradientRegistry.RegisterGradient("SparseUnsortedSegmentSum")(
    segment_grad("UnsortedSegmentSumGradient", True))
GradientRegistry.RegisterGradient("SparseUnsortedSegmentMean")(
    segment_grad("UnsortedSegmentMeanGradient", True))
GradientRegistry.RegisterGradient("UnsortedSegmentWeightedSum")(
    segment_weighted_grad("UnsortedSegment", False))
GradientRegistry.RegisterGradient("SparseUnsortedSegmentWeightedSum")(
    segment_weighted_grad("UnsortedSegment", True))
GradientRegistry.RegisterNoGradient(
    "Unique", "FindDuplicateElements", "UnsortedSegmentSumGradient", "UnsortedSegmentMeanGradient",
    "UnsortedSegmentWeightedSumGradient", "UnsortedSegmentWeightedSumWithMainInputGradient")
