"""Input fillers: Caffe2's ``OpSchema::InputFillers``, used by ``workspace.FillRandomNetworkInputs``.

``fillers(op_type, shapes)`` gives one ``Filler`` per op input (``shapes``: the dims of each input,
a tuple of ints, or None where unknown) that draws random data an op of that type accepts, as the
schema of that type in Caffe2 did (caffe2/core/operator_schema.cc, caffe2/utils/filler.h):

- the default (``SupplyDenseFillers``): every input uniform in [0, 1] (float32: real values in
  [0, 1); int32: the integers 0 and 1);
- ``ValueKeyLengthInputFillers(value, key, length)``: the lengths (1-D) are non-negative integers
  that sum to the number of keys; the keys (1-D) are integers in [0, rows - 1] where rows is the
  values' first dim, so every key indexes a row; the values are uniform in [0, 2 rows] (Caffe2's
  bound, not [0, 1]); every other input dense;
- ``WeightedValueKeyLengthInputFillers(value, key, length, weight)``: the same, and the weights
  uniform in [0, n] where n is their first dim (Caffe2's bound);
- ``DisallowInputFillers()``: the type has no fillers; asking for them is a ValueError
  ("<type> does not have input fillers", Caffe2's ``std::invalid_argument``).

Caffe2's last ``filler.h`` drew each length in [1, total] (so more lengths than keys was an error)
and the keys from a synthetic cache-trace distribution (values 1..6 clamped into the range); this
module follows its earlier ``filler.h``, as written above: lengths from 0 and keys uniform. The
lengths are drawn by putting each key in a segment chosen uniformly (a multinomial draw); Caffe2
drew them one at a time from a normal distribution around the mean and kept the sum exact.

Registering: ``value_key_length(types, value, key, length)``, ``weighted_value_key_length(...)``
and ``disallow(types)``, one call per Caffe2 source file (named on each); every other registered op
type has the dense fillers. ``registered()`` lists the types with a non-default rule.
"""

import numpy as np

_INT32_MAX = np.iinfo(np.int32).max
_INT32_MIN = np.iinfo(np.int32).min

# op type -> ("disallow",) or ("sparse", value, key, length, weight or None)
_RULES = {}


class FillerError(ValueError):
    """Shapes a filler cannot work with (or a type without fillers); the caller names the op."""


class Filler:
    """Draws one input: uniform in [lo, hi] or, with ``fixed_sum``, non-negative integers that
    add up to it (caffe2/utils/filler.h TensorFiller: Min, Max, FixedSum)."""

    def __init__(self, lo=0.0, hi=1.0, fixed_sum=None, what="uniform in [0, 1]"):
        self.lo, self.hi, self.fixed_sum, self.what = lo, hi, fixed_sum, what

    def check(self, shape):
        """FillerError where ``shape`` cannot be filled (before anything is drawn)."""
        n = int(np.prod(shape, dtype=np.int64))
        if self.fixed_sum is not None and n == 0 and self.fixed_sum > 0:
            raise FillerError("%s, but it has no elements" % self.what)
        if self.fixed_sum is None and n > 0 and self.lo > self.hi:
            raise FillerError("%s, an empty range" % self.what)

    def draw(self, rng, shape, dtype):
        """A new array of ``shape`` and ``dtype`` (float32 or int32) the caller owns."""
        shape = tuple(shape)
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:
            return np.zeros(shape, dtype)
        if self.fixed_sum is not None:
            counts = rng.multinomial(self.fixed_sum, np.full(n, 1.0 / n))
            return counts.reshape(shape).astype(dtype)
        if dtype == np.float32:
            out = rng.uniform(self.lo, self.hi, size=shape)
            return np.clip(out, self.lo, self.hi).astype(np.float32)
        lo = max(int(np.ceil(self.lo)), _INT32_MIN)
        hi = min(int(np.floor(self.hi)), _INT32_MAX)
        return rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64).astype(np.int32)


def _dense():
    return Filler()


def disallow(*op_types):
    """Caffe2's ``DisallowInputFillers()`` for these types."""
    for t in op_types:
        _RULES[t] = ("disallow",)


def value_key_length(op_types, value, key, length):
    """Caffe2's ``ValueKeyLengthInputFillers(value, key, length)`` (input positions)."""
    for t in op_types:
        _RULES[t] = ("sparse", value, key, length, None)


def weighted_value_key_length(op_types, value, key, length, weight):
    """Caffe2's ``WeightedValueKeyLengthInputFillers(value, key, length, weight)``."""
    for t in op_types:
        _RULES[t] = ("sparse", value, key, length, weight)


def registered():
    """The op types with a rule other than the dense default (sorted)."""
    return sorted(_RULES)


def rule(op_type):
    """"dense", "disallow", "value_key_length" or "weighted_value_key_length"."""
    r = _RULES.get(op_type)
    if r is None:
        return "dense"
    if r[0] == "disallow":
        return "disallow"
    return "value_key_length" if r[4] is None else "weighted_value_key_length"


def _shape(op_type, shapes, index, role, input_names):
    if index >= len(shapes):
        raise FillerError("%s's fillers need input %d (%s), but the op has %d inputs"
                          % (op_type, index, role, len(shapes)))
    s = shapes[index]
    if s is None:
        raise FillerError("the filler needs the shape of input %d '%s' (%s), which an op of the net "
                          "writes and whose shape cannot be inferred" % (index, input_names[index], role))
    return s


def fillers(op_type, shapes, input_names):
    """One Filler per input of an op of ``op_type`` whose inputs have ``shapes`` (a tuple each, or
    None where unknown); ``input_names`` name them in errors. FillerError for a type with
    ``DisallowInputFillers`` or shapes its fillers cannot work with."""
    r = _RULES.get(op_type)
    out = [_dense() for _ in shapes]
    if r is None:
        return out
    if r[0] == "disallow":
        raise FillerError("%s does not have input fillers" % op_type)
    _, value, key, length, weight = r
    vs = _shape(op_type, shapes, value, "the values", input_names)
    ks = _shape(op_type, shapes, key, "the keys", input_names)
    ls = _shape(op_type, shapes, length, "the lengths", input_names)
    if len(ls) != 1:
        raise FillerError("the lengths, input %d '%s', must be 1-D for the filler, got dims %s"
                          % (length, input_names[length], list(ls)))
    if len(ks) != 1:
        raise FillerError("the keys, input %d '%s', must be 1-D for the filler, got dims %s"
                          % (key, input_names[key], list(ks)))
    if len(vs) == 0:
        raise FillerError("the values, input %d '%s', must have a first dim for the filler, got a "
                          "0-d shape" % (value, input_names[value]))
    rows, nkeys = vs[0], ks[0]
    # caffe2/core/operator_schema.cc SparseLengthsFillerHelper: lengths sum to the keys' count
    out[length] = Filler(fixed_sum=nkeys, what="the lengths '%s' must add up to %d (the keys '%s')"
                         % (input_names[length], nkeys, input_names[key]))
    # SparseSegmentsFillerHelper: values in [0, 2 rows], keys in [0, rows - 1]
    out[value] = Filler(0, 2 * rows, what="the values '%s' are drawn in [0, %d]"
                        % (input_names[value], 2 * rows))
    out[key] = Filler(0, rows - 1, what="the keys '%s' index the %d rows of '%s'"
                      % (input_names[key], rows, input_names[value]))
    if weight is not None:
        ws = _shape(op_type, shapes, weight, "the weights", input_names)
        if len(ws) == 0:
            raise FillerError("the weights, input %d '%s', must have a first dim for the filler, got "
                              "a 0-d shape" % (weight, input_names[weight]))
        # SparseWeightsFillerHelper: weights in [0, their first dim]
        out[weight] = Filler(0, ws[0], what="the weights '%s' are drawn in [0, %d]"
                             % (input_names[weight], ws[0]))
    return out


# ---------------------------------------------------------------- the rules, by Caffe2 source file
# caffe2/operators/lengths_reducer_ops.cc: SparseLengthsSum and SparseLengthsMean (DATA 0, INDICES 1,
# LENGTHS 2); SparseLengthsWeightedSum (DATA 0, WEIGHT 1, INDICES 2, LENGTHS 3); their gradients
# disallow. (SparseLengthsPositionalWeightedSum has no rule: dense.)
value_key_length(("SparseLengthsSum", "SparseLengthsMean"), value=0, key=1, length=2)
weighted_value_key_length(("SparseLengthsWeightedSum",), value=0, key=2, length=3, weight=1)
disallow("SparseLengthsSumGradient", "SparseLengthsMeanGradient", "SparseLengthsWeightedSumGradient")

# caffe2/operators/one_hot_ops.cc: BatchOneHot ValueKeyLengthInputFillers(X, VALS, LENS) with
# INPUT_TAGS(X, LENS, VALS) (one_hot_ops.h); OneHot, SegmentOneHot, BatchBucketOneHot disallow.
value_key_length(("BatchOneHot",), value=0, key=2, length=1)
disallow("OneHot", "SegmentOneHot", "BatchBucketOneHot")

# caffe2/operators/segment_reduction_op.cc REGISTER_SEGMENT_DEF: the op and its gradient disallow.
# (LengthsMax, registered by another macro, and the *WithMainInput* gradients have no rule: dense.)
_SEGMENT_DEF = (
    "SortedSegmentRangeSum", "SortedSegmentRangeLogSumExp", "SortedSegmentRangeLogMeanExp",
    "SortedSegmentRangeMean", "SortedSegmentRangeMax",
    "SortedSegmentSum", "SortedSegmentMean", "SortedSegmentWeightedSum",
    "SparseSortedSegmentSum", "SparseSortedSegmentMean", "SparseSortedSegmentWeightedSum",
    "UnsortedSegmentSum", "UnsortedSegmentMean", "UnsortedSegmentWeightedSum",
    "SparseUnsortedSegmentSum", "SparseUnsortedSegmentMean", "SparseUnsortedSegmentWeightedSum",
    "LengthsSum", "LengthsMean", "LengthsWeightedSum",
)
_SEGMENT_DEF_GRADIENTS = (  # the gradients of _SEGMENT_DEF this package registers
    "SortedSegmentRangeSumGradient", "SortedSegmentRangeLogSumExpGradient",
    "SortedSegmentRangeLogMeanExpGradient", "SortedSegmentRangeMeanGradient",
    "SortedSegmentRangeMaxGradient",
    "SortedSegmentSumGradient", "SortedSegmentMeanGradient", "SortedSegmentWeightedSumGradient",
    "UnsortedSegmentSumGradient", "UnsortedSegmentMeanGradient", "UnsortedSegmentWeightedSumGradient",
    "LengthsSumGradient", "LengthsMeanGradient", "LengthsWeightedSumGradient",
)
disallow(*_SEGMENT_DEF)
disallow(*_SEGMENT_DEF_GRADIENTS)

# caffe2/operators/utility_ops.cc: GatherRanges, LengthsToSegmentIds, SegmentIdsToLengths,
# SegmentIdsToRanges disallow.
disallow("GatherRanges", "LengthsToSegmentIds", "SegmentIdsToLengths", "SegmentIdsToRanges")

# caffe2/operators/batch_sparse_to_dense_op.cc: BatchSparseToDense disallows.
disallow("BatchSparseToDense")

# caffe2/operators/sparse_to_dense_mask_op.cc: SparseToDenseMask and its gradient disallow.
disallow("SparseToDenseMask", "SparseToDenseMaskGradient")
