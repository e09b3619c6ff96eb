"""Static shape inference of the segment, lengths, ranges and mask ops (recurrent/_shape_segment.py):
every op type of csrc/ops/{lengths_reduce,sorted_segment,segment,lengths,ranges,mask}.c inferred,
then run, and the inferred shapes and types compared with the fetched outputs; the outputs that
depend on values left out; the blob_dimensions= / blob_types= path; inputs the ops refuse."""

import warnings

import numpy as np
import pytest

from recurrent import core, shape_inference as si, workspace
from recurrent.proto import make_argument

F, I = core.DataType.FLOAT, core.DataType.INT32
_rng = np.random.RandomState(7)


def f(*shape):
    return np.asarray(_rng.rand(*shape) + 0.5, dtype=np.float32)  # no zeros (Assert), finite (NanCheck)


def i(*values):
    return np.array(values, dtype=np.int32)


def case(op_type, inputs, outputs, known=None, **args):
    """inputs: [(name, array)]; outputs: names; known: the outputs that must be inferred (all by
    default); the others must be absent from the result."""
    return pytest.param(op_type, inputs, outputs, list(outputs) if known is None else known, args,
                        id="%s-%s" % (op_type, "-".join(outputs) or "none"))


def _net(op_type, in_names, outputs, args):
    net = core.Net("shape_segment")
    net.Proto().op.extend([core.CreateOperator(op_type, in_names, outputs, **args)])
    return net


def check_case(op_type, inputs, outputs, known, args):
    for name, a in inputs:
        workspace.FeedBlob(name, a)
    net = _net(op_type, [n for n, _ in inputs], outputs, args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    for o in outputs:
        if o in known:
            got = workspace.FetchBlob(o)
            assert o in shapes, "%s: output '%s' %s not inferred" % (op_type, o, got.shape)
            want = F if got.dtype == np.float32 else I
            assert (shapes[o], types[o]) == (list(got.shape), want), (op_type, o)
        else:
            assert o not in shapes, "%s: output '%s' should be unknown, inferred %s" % (op_type, o, shapes[o])
    return shapes, types


D53, L23 = f(5, 3), i(2, 3)
IDX5 = i(0, 3, 1, 1, 2)
SIDS = i(0, 0, 1, 3, 3)  # sorted ids: 4 segments (a gap at 2)
S22 = i(0, 1, 2, 2).reshape(2, 2)

CASES = [
    # ---------------------------------------------------------------- lengths_reduce.c
    case("LengthsSum", [("d", f(5, 2, 3)), ("l", i(2, 0, 3))], ["o"]),
    case("LengthsMean", [("d", D53), ("l", L23)], ["o"]),
    case("LengthsMax", [("d", f(5)), ("l", i(5))], ["o"]),
    case("LengthsWeightedSum", [("d", D53), ("w", f(5)), ("l", L23)], ["o"], grad_on_weights=1),
    case("SparseLengthsSum", [("d", f(4, 3)), ("x", IDX5), ("l", L23)], ["o"]),
    case("SparseLengthsMean", [("d", f(4, 2, 2)), ("x", IDX5), ("l", i(5, 0))], ["o"]),
    case("SparseLengthsWeightedSum", [("d", f(4, 3)), ("w", f(5)), ("x", IDX5), ("l", L23)], ["o"]),
    case("SparseLengthsPositionalWeightedSum", [("d", f(4, 3)), ("w", f(7)), ("x", IDX5), ("l", L23)], ["o"]),
    case("LengthsSumGradient", [("g", f(2, 3)), ("l", L23)], ["dx"], known=[]),
    case("LengthsMeanGradient", [("g", f(2, 3)), ("l", L23)], ["dx"], known=[]),
    case("LengthsWeightedSumGradient", [("w", f(5)), ("g", f(2, 2, 3)), ("l", L23)], ["dx"]),
    case("LengthsWeightedSumWithMainInputGradient",
         [("w", f(5)), ("g", f(2, 3)), ("l", L23), ("d", D53)], ["dx", "dw"]),
    case("LengthsMaxWithMainInputAndForwardOutputGradient",
         [("out", f(2, 3)), ("g", f(2, 3)), ("l", L23), ("d", D53)], ["dx"]),
    case("SparseLengthsSumGradient", [("g", f(2, 3)), ("l", L23)], ["dx"], known=[]),
    case("SparseLengthsMeanGradient", [("g", f(2, 3)), ("l", L23)], ["dx"], known=[]),
    case("SparseLengthsWeightedSumGradient", [("w", f(5)), ("g", f(2, 3)), ("l", L23)], ["dx"]),
    case("SparseLengthsWeightedSumWithMainInputGradient",
         [("w", f(5)), ("g", f(2, 3)), ("l", L23), ("d", f(4, 3)), ("x", IDX5)], ["dx", "dw"]),
    case("LengthsIndicesInGradientSumGradient", [("g", f(2, 3)), ("l", L23), ("d", D53)], ["dx"]),
    case("LengthsIndicesInGradientSumGradient", [("g", f(2, 3)), ("l", L23), ("d", i(1, 2, 3, 4, 5))],
         ["dy"]),
    case("LengthsIndicesInGradientMeanGradient", [("g", f(2, 4)), ("l", L23), ("d", f(5, 4))], ["dx"]),
    case("SparseLengthsIndicesInGradientSumGradient", [("g", f(2, 3)), ("l", L23), ("x", IDX5)], ["dx"]),
    case("SparseLengthsIndicesInGradientMeanGradient", [("g", f(2, 1, 3)), ("l", L23), ("x", IDX5)], ["dx"]),
    case("SparseLengthsIndicesInGradientWeightedSumGradient",
         [("w", f(5)), ("g", f(2, 3)), ("l", L23), ("x", IDX5)], ["dx"]),
    case("SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient",
         [("w", f(5)), ("g", f(2, 3)), ("l", L23), ("d", f(4, 3)), ("x", IDX5)], ["dx", "dw"]),
    # ---------------------------------------------------------------- sorted_segment.c
    case("SortedSegmentSum", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentMean", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentWeightedSum", [("d", D53), ("w", f(5)), ("s", SIDS)], ["o"], known=[]),
    case("SparseSortedSegmentSum", [("d", f(4, 3)), ("x", IDX5), ("s", SIDS)], ["o"], known=[]),
    case("SparseSortedSegmentMean", [("d", f(4, 3)), ("x", IDX5), ("s", SIDS)], ["o"], known=[]),
    case("SparseSortedSegmentWeightedSum", [("d", f(4, 3)), ("w", f(5)), ("x", IDX5), ("s", SIDS)], ["o"],
         known=[]),
    case("SortedSegmentRangeSum", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentRangeMean", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentRangeLogSumExp", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentRangeLogMeanExp", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentRangeMax", [("d", D53), ("s", SIDS)], ["o"], known=[]),
    case("SortedSegmentSumGradient", [("g", f(4, 2, 3)), ("s", SIDS)], ["dx"]),
    case("SortedSegmentMeanGradient", [("g", f(4, 3)), ("s", SIDS)], ["dx"]),
    case("SortedSegmentWeightedSumGradient", [("w", f(5)), ("g", f(4, 3)), ("s", SIDS)], ["dx"]),
    case("SortedSegmentWeightedSumWithMainInputGradient",
         [("w", f(5)), ("g", f(4, 3)), ("s", SIDS), ("d", f(5, 1, 3))], ["dx", "dw"]),
    case("SortedSegmentWeightedSumWithMainInputGradient",
         [("w", f(5)), ("g", f(4, 3)), ("s", SIDS), ("d", f(6, 3)), ("x", IDX5)], ["dy", "dv"]),
    case("SortedSegmentRangeSumGradient", [("d", D53), ("out", f(4, 3)), ("g", f(4, 3)), ("s", SIDS)],
         ["dx"]),
    case("SortedSegmentRangeMeanGradient", [("d", f(5, 3, 1)), ("out", f(4, 3)), ("g", f(4, 3)), ("s", SIDS)],
         ["dx"]),
    case("SortedSegmentRangeLogSumExpGradient", [("d", D53), ("out", f(4, 3)), ("g", f(4, 3)), ("s", SIDS)],
         ["dx"]),
    case("SortedSegmentRangeLogMeanExpGradient", [("d", D53), ("out", f(4, 3)), ("g", f(4, 3)), ("s", SIDS)],
         ["dx"]),
    case("SortedSegmentRangeMaxGradient", [("d", D53), ("out", f(4, 3)), ("g", f(4, 3)), ("s", SIDS)],
         ["dx"]),
    case("NanCheck", [("x", f(2, 3))], ["y"]),
    case("NanCheck", [("x", f(2, 3)), ("z", i(1, 2))], ["x"]),
    case("EnforceFinite", [("x", f(2, 3))], []),
    case("Assert", [("x", i(1, 2))], [], error_msg="never"),
    case("Assert", [("x", f(3))], []),
    # ---------------------------------------------------------------- segment.c
    case("Unique", [("x", i(3, 1, 3, 2))], ["u", "r"], known=["r"]),
    case("Unique", [("x", np.array([[3, 1], [3, 3]], np.int32))], ["u", "r"], known=["r"]),
    case("Unique", [("x", i(3, 1))], ["u"], known=[]),
    case("FindDuplicateElements", [("x", f(4))], ["o"], known=[]),
    case("FindDuplicateElements", [("x", i(3, 1, 3))], ["o"], known=[]),
    case("UnsortedSegmentSum", [("d", D53), ("s", i(0, 2, 0, 1, 2))], ["o"], known=[]),
    case("UnsortedSegmentSum", [("d", D53), ("s", i(0, 2, 0, 1, 2))], ["o"], num_segments=4),
    case("UnsortedSegmentSum", [("d", f(2, 3, 4)), ("s", np.array([[0, 1, 4], [4, 1, 0]], np.int32))], ["o"],
         num_segments=5),
    case("UnsortedSegmentMean", [("d", f(2, 3, 4)), ("s", np.array([[0, 1, 1], [2, 1, 0]], np.int32))], ["o"],
         num_segments=3),
    case("UnsortedSegmentMean", [("d", D53), ("s", i(0, 2, 0, 1, 2))], ["o"], known=[]),
    case("UnsortedSegmentWeightedSum", [("d", f(2, 3)), ("w", f(2)), ("s", i(1, 1))], ["o"], num_segments=2),
    case("UnsortedSegmentWeightedSum", [("d", f(2, 3)), ("w", f(2)), ("s", i(1, 1))], ["o"], known=[]),
    case("SparseUnsortedSegmentSum", [("d", f(4, 3)), ("x", IDX5), ("s", i(0, 0, 1, 0, 1))], ["o"],
         num_segments=3),
    case("SparseUnsortedSegmentSum", [("d", f(4, 3)), ("x", IDX5), ("s", i(0, 0, 1, 0, 1))], ["o"], known=[]),
    case("SparseUnsortedSegmentMean", [("d", f(4, 2, 3)), ("x", IDX5), ("s", i(0, 0, 1, 0, 1))], ["o"],
         num_segments=2),
    case("SparseUnsortedSegmentWeightedSum",
         [("d", f(4, 3)), ("w", f(5)), ("x", IDX5), ("s", i(0, 0, 1, 0, 1))], ["o"], num_segments=2),
    case("UnsortedSegmentSumGradient", [("g", f(3, 4)), ("s", np.array([[0, 1, 2], [2, 1, 0]], np.int32))],
         ["dx"]),
    case("UnsortedSegmentMeanGradient", [("g", f(3, 2, 2)), ("s", i(0, 2, 2, 1))], ["dx"]),
    case("UnsortedSegmentWeightedSumGradient", [("w", f(2, 2)), ("g", f(3, 4)), ("s", S22)], ["dx"]),
    case("UnsortedSegmentWeightedSumWithMainInputGradient",
         [("w", f(2, 2)), ("g", f(3, 4)), ("s", S22), ("d", f(2, 2, 4))], ["dx", "dw"]),
    case("UnsortedSegmentWeightedSumWithMainInputGradient",
         [("w", f(4)), ("g", f(3, 4)), ("s", i(0, 1, 2, 2)), ("d", f(6, 4)), ("x", i(5, 0, 0, 3))],
         ["dx", "dw"]),
    # ---------------------------------------------------------------- lengths.c
    case("PackSegments", [("l", i(2, 0, 3)), ("t", D53)], ["p"], known=[]),
    case("PackSegments", [("l", i(2, 0, 3)), ("t", D53)], ["p"], max_length=4),
    case("PackSegments", [("l", i(2, 0, 3)), ("t", D53)], ["p", "m"], max_length=3, return_presence_mask=1,
         pad_minf=1),
    case("PackSegments", [("l", i(2, 0, 3)), ("t", D53)], ["p", "m"], known=[], return_presence_mask=1),
    case("PackSegments", [("l", i(2, 0, 3)), ("t", i(1, 2, 3, 4, 5)), ("like", f(3, 6, 7))], ["p"]),
    case("PackSegments", [("l", i(2, 0, 3)), ("t", D53), ("like", f(3, 4))], ["p", "m"], max_length=5,
         return_presence_mask=1),
    case("UnpackSegments", [("l", i(2, 0, 3)), ("p", f(3, 4, 2))], ["t"], known=[]),
    case("AddPadding", [("d", D53)], ["o"]),
    case("AddPadding", [("d", D53), ("l", i(2, 0, 3))], ["o", "lo"]),
    case("AddPadding", [("d", i(1, 2, 3)), ("l", i(2, 1)), ("s", i(9))], ["o", "lo"], padding_width=2,
         end_padding_width=0),
    case("AddPadding", [("d", f(5, 2, 2)), ("l", L23), ("s", f(4)), ("e", f(2, 2))], ["o", "lo"],
         end_padding_width=3),
    case("RemovePadding", [("d", f(9, 3)), ("l", i(4, 5))], ["o", "lo"]),
    case("RemovePadding", [("d", i(1, 2, 3, 4))], ["o", "lo"], padding_width=0, end_padding_width=2),
    case("GatherPadding", [("d", f(9, 3)), ("l", i(4, 5))], ["s"]),
    case("GatherPadding", [("d", f(9, 2, 3)), ("l", i(4, 5))], ["s", "e"], padding_width=2),
    case("LengthsToSegmentIds", [("l", i(2, 0, 3))], ["s"], known=[]),
    case("LengthsToRanges", [("l", i(2, 0, 3))], ["r"]),
    case("LengthsToRanges", [("l", i())], ["r"]),
    case("LengthsToOffsets", [("l", i(2, 0, 3))], ["o"]),
    case("LengthsToOffsets", [("l", i(2, 0, 3))], ["o"], include_last_offset=1),
    case("LengthsToOffsets", [("l", i())], ["o"], include_last_offset=1),
    case("SegmentIdsToLengths", [("s", i(0, 0, 2))], ["l"], known=[]),
    case("SegmentIdsToLengths", [("s", i(0, 0, 2)), ("d", f(4, 2))], ["l"]),
    case("SegmentIdsToRanges", [("s", i(0, 0, 2))], ["r"], known=[]),
    case("SegmentIdsToRanges", [("s", i(0, 0, 2)), ("d", f(4, 2))], ["r"]),
    case("SegmentIdsToRanges", [("s", i()), ("d", i(7, 8))], ["r"]),
    # ---------------------------------------------------------------- ranges.c
    case("LengthsTile", [("d", f(3, 2)), ("l", i(1, 0, 2))], ["o"], known=[]),
    case("LengthsRangeFill", [("l", L23)], ["o"], known=[]),
    case("Range", [("stop", i(4))], ["o"], known=[]),
    case("LengthsGather", [("d", f(5, 2)), ("l", L23), ("x", i(1, 0))], ["o"], known=[]),
    case("GatherRanges", [("d", f(6)), ("r", np.array([[[0, 2], [2, 1]], [[3, 3], [0, 0]]], np.int32))],
         ["o", "l"], known=["l"]),
    case("GatherRangesToDense", [("d", i(1, 2, 3, 4, 5, 6)),
                                 ("r", np.array([[[0, 2], [2, 1]], [[3, 2], [0, 0]]], np.int32))],
         ["a", "b"], lengths=[2, 1]),
    case("GatherRangesToDense", [("d", f(6)), ("r", np.array([[[0, 3]], [[3, 3]]], np.int32)),
                                 ("k", i(3, 2, 1, 1, 2, 3))], ["a"], lengths=[3]),
    case("LengthsPad", [("d", D53), ("l", L23)], ["o"], target_length=4),
    case("LengthsPad", [("d", i(1, 2, 3)), ("l", i(1, 0, 2))], ["o"], target_length=2, padding_value=7),
    case("ScatterAssign", [("d", f(4, 3)), ("x", i(1, 3)), ("s", f(2, 3))], ["d"]),
    case("ScatterAssign", [("d", i(1, 2, 3)), ("x", i(2)), ("s", i(9))], ["d"]),
    case("Mod", [("x", np.arange(-3, 3, dtype=np.int32).reshape(2, 3))], ["y"], divisor=4),
    case("Mod", [("x", i(5, -7))], ["x"], divisor=-3, sign_follow_divisor=1),
    case("PackRNNSequence", [("v", f(5, 2)), ("l", L23)], ["o"], known=[]),
    case("UnpackRNNSequence", [("v", f(3, 2, 2)), ("l", L23)], ["o"], known=[]),
    # ---------------------------------------------------------------- mask.c
    case("BooleanMask", [("d", f(4, 2)), ("m", i(1, 0, 1, 1))], ["o", "x"], known=[]),
    case("BooleanMaskGradient", [("m", i(1, 0, 1, 1)), ("g", f(3, 2))], ["dx"]),
    case("BooleanMaskLengths", [("l", i(2, 2)), ("m", i(1, 0, 1, 1))], ["o"]),
    case("LengthsToWeights", [("l", L23)], ["w"], known=[]),
    case("PadEmptySamples", [("l", i(2, 0, 1)), ("a", f(3, 2)), ("b", i(4, 5, 6))], ["lo", "ao", "bo"],
         known=["lo"]),
    case("DotProductWithPadding", [("x", f(3, 4)), ("y", f(3, 2))], ["z"]),
    case("DotProductWithPadding", [("x", f(3, 2, 1)), ("y", f(3, 2, 3))], ["z"], replicate=1, pad_value=2.0),
    case("DotProductWithPaddingGradient", [("x", f(3, 4)), ("y", f(3, 2)), ("g", f(3))], ["dx", "dy"]),
    case("DotProductWithPaddingGradient", [("x", f(3, 2)), ("y", f(3, 6)), ("g", f(3))], ["dx", "dy"],
         replicate=1),
    case("RemoveDataBlocks", [("d", f(4, 3)), ("x", i(1, 1))], ["o"], known=[]),
    case("RemoveDataBlocks", [("d", f(4, 3)), ("x", np.zeros(0, np.float32))], ["o"]),
    case("RemoveDataBlocks", [("d", i(4, 3)), ("x", i())], ["o"]),
    case("BooleanUnmask", [("m", i(1, 0, 1)), ("v", f(2)), ("n", i(0, 1, 0)), ("w", f(1))], ["o"]),
    case("BooleanUnmask", [("m", i(1, 1)), ("v", i(5, 6))], ["o"]),
    case("BooleanUnmask", [("m", i()), ("v", f(0))], ["o"]),
]


@pytest.mark.parametrize("op_type,inputs,outputs,known,args", CASES)
def test_infer_then_run(op_type, inputs, outputs, known, args):
    check_case(op_type, inputs, outputs, known, args)


FAMILY = """AddPadding Assert BooleanMask BooleanMaskGradient BooleanMaskLengths BooleanUnmask
DotProductWithPadding DotProductWithPaddingGradient EnforceFinite FindDuplicateElements
GatherPadding GatherRanges GatherRangesToDense LengthsGather LengthsIndicesInGradientMeanGradient
LengthsIndicesInGradientSumGradient LengthsMax LengthsMaxWithMainInputAndForwardOutputGradient
LengthsMean LengthsMeanGradient LengthsPad LengthsRangeFill LengthsSum LengthsSumGradient
LengthsTile LengthsToOffsets LengthsToRanges LengthsToSegmentIds LengthsToWeights LengthsWeightedSum
LengthsWeightedSumGradient LengthsWeightedSumWithMainInputGradient Mod NanCheck PackRNNSequence
PackSegments PadEmptySamples Range RemoveDataBlocks RemovePadding ScatterAssign SegmentIdsToLengths
SegmentIdsToRanges SortedSegmentMean SortedSegmentMeanGradient SortedSegmentRangeLogMeanExp
SortedSegmentRangeLogMeanExpGradient SortedSegmentRangeLogSumExp SortedSegmentRangeLogSumExpGradient
SortedSegmentRangeMax SortedSegmentRangeMaxGradient SortedSegmentRangeMean
SortedSegmentRangeMeanGradient SortedSegmentRangeSum SortedSegmentRangeSumGradient SortedSegmentSum
SortedSegmentSumGradient SortedSegmentWeightedSum SortedSegmentWeightedSumGradient
SortedSegmentWeightedSumWithMainInputGradient SparseLengthsIndicesInGradientMeanGradient
SparseLengthsIndicesInGradientSumGradient SparseLengthsIndicesInGradientWeightedSumGradient
SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient SparseLengthsMean
SparseLengthsMeanGradient SparseLengthsPositionalWeightedSum SparseLengthsSum
SparseLengthsSumGradient SparseLengthsWeightedSum SparseLengthsWeightedSumGradient
SparseLengthsWeightedSumWithMainInputGradient SparseSortedSegmentMean SparseSortedSegmentSum
SparseSortedSegmentWeightedSum SparseUnsortedSegmentMean SparseUnsortedSegmentSum
SparseUnsortedSegmentWeightedSum Unique UnpackRNNSequence UnpackSegments UnsortedSegmentMean
UnsortedSegmentMeanGradient UnsortedSegmentSum UnsortedSegmentSumGradient UnsortedSegmentWeightedSum
UnsortedSegmentWeightedSumGradient UnsortedSegmentWeightedSumWithMainInputGradient""".split()


def test_every_op_type_of_the_family_has_a_function_or_a_reason_and_a_case():
    si.registered()
    assert len(set(FAMILY)) == 88
    assert {p.values[0] for p in CASES} == set(FAMILY)
    assert not [t for t in FAMILY if t not in si._REGISTRY and t not in si.NOT_INFERRED]
    mine = {t for t, fn in si._REGISTRY.items() if fn.__module__ == "recurrent._shape_segment"}
    assert mine <= set(FAMILY)


# ---------------------------------------------------------------- blob_dimensions= / blob_types=
def test_blob_dimensions_and_types():
    net = core.Net("dims")
    net.AddPadding(["d", "l"], ["p", "pl"], padding_width=2, end_padding_width=1)
    net.LengthsSum(["p", "pl"], ["s"])
    net.PackSegments(["pl", "p"], ["packed", "mask"], max_length=9, return_presence_mask=1)
    net.LengthsToRanges(["pl"], ["r"])
    net.LengthsToSegmentIds(["pl"], ["ids"])
    shapes, types = workspace.InferShapesAndTypes([net], blob_dimensions={"d": [6, 2], "l": [4]},
                                                  blob_types={"d": F, "l": I})
    assert shapes["p"] == [18, 2] and types["p"] == F
    assert shapes["pl"] == [4] and types["pl"] == I
    assert shapes["s"] == [4, 2] and types["s"] == F
    assert shapes["packed"] == [4, 9, 2] and types["packed"] == F
    assert shapes["mask"] == [4, 9] and types["mask"] == I
    assert shapes["r"] == [4, 2] and types["r"] == I
    assert "ids" not in shapes


def test_blob_dimensions_without_types():
    """UNDEFINED data types pass through; what the op always makes keeps its type."""
    net = core.Net("dims")
    net.RemovePadding(["d", "l"], ["o", "lo"])
    net.GatherRangesToDense(["v", "r"], ["a", "b"], lengths=[3, 1])
    net.UnsortedSegmentSum(["d", "s"], ["u"], num_segments=7)
    shapes, types = workspace.InferShapesAndTypes([net], blob_dimensions={
        "d": [10, 3], "l": [2], "v": [8], "r": [5, 2, 2], "s": [10]})
    assert (shapes["o"], types["o"]) == ([6, 3], core.DataType.UNDEFINED)
    assert (shapes["lo"], types["lo"]) == ([2], I)
    assert (shapes["a"], shapes["b"]) == ([5, 3], [5, 1]) and types["a"] == core.DataType.UNDEFINED
    assert (shapes["u"], types["u"]) == ([7, 3], F)


def test_first_argument_of_a_name_counts():
    """The C ops read the first argument of a name; the inference does too."""
    workspace.FeedBlob("d", D53)
    workspace.FeedBlob("l", L23)
    o = core.CreateOperator("LengthsPad", ["d", "l"], ["o"], target_length=4)
    o.arg.append(make_argument("target_length", 6))
    net = core.Net("dup")
    net.Proto().op.extend([o])
    shapes, _ = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    assert shapes["o"] == list(workspace.FetchBlob("o").shape) == [8, 3]


def test_refused_at_creation_is_unknown():
    """Arguments the op refuses when it is created: the outputs are left unknown (a wrong count of
    inputs is refused by the inference: tests/test_shape_inference.py)."""
    for op_type, ins, outs, args in [
        ("Mod", ["x"], ["y"], {}),
        ("LengthsPad", ["d", "l"], ["o"], {}),
        ("GatherRangesToDense", ["v", "r"], ["a"], {"lengths": [2, 2]}),
        ("PackSegments", ["l", "d"], ["p"], {"max_length": 3, "return_presence_mask": 1}),
        ("ScatterAssign", ["d", "l", "d"], ["other"], {}),
        ("UnsortedSegmentSum", ["d", "l"], ["u"], {"num_segments": -2}),
    ]:
        net = core.Net("bad")
        net.Proto().op.extend([core.CreateOperator(op_type, ins, outs, **args)])
        shapes, _ = workspace.InferShapesAndTypes([net], blob_dimensions={
            "x": [3], "d": [5], "l": [2], "v": [4], "r": [2, 1, 2]}, blob_types={"x": I, "l": I, "r": I})
        assert not set(outs) & set(shapes), (op_type, shapes)


# ---------------------------------------------------------------- inputs the ops refuse
REFUSED = [
    # (op type, inputs, outputs, args): each kind of check
    ("LengthsSum", [("d", i(1, 2)), ("l", i(2))], ["o"], {}),  # dtype
    ("LengthsSum", [("d", D53), ("l", np.array([[2, 3]], np.int32))], ["o"], {}),  # ndim
    ("LengthsWeightedSum", [("d", D53), ("w", f(4)), ("l", L23)], ["o"], {}),  # one weight per row
    ("LengthsWeightedSumWithMainInputGradient",
     [("w", f(5)), ("g", f(2, 3)), ("l", L23), ("d", f(5, 4))], ["dx", "dw"], {}),  # row shapes
    ("LengthsWeightedSumWithMainInputGradient",
     [("w", f(4)), ("g", f(2, 3)), ("l", L23), ("d", f(5, 3))], ["dx", "dw"], {}),  # weights vs data rows
    ("LengthsWeightedSumGradient", [("w", f(5)), ("g", f(3, 3)), ("l", L23)], ["dx"], {}),  # rows per segment
    ("SparseLengthsIndicesInGradientWeightedSumGradient",
     [("w", f(5)), ("g", f(2, 3)), ("l", L23), ("x", i(1, 2))], ["dx"], {}),  # indices vs weights
    ("SortedSegmentRangeMaxGradient", [("d", f(5, 2)), ("out", f(4, 3)), ("g", f(4, 3)), ("s", SIDS)],
     ["dx"], {}),  # row sizes
    ("SortedSegmentSumGradient", [("g", f(4, 3)), ("s", i(0, 0, 1, 3, 3).reshape(5, 1))], ["dx"], {}),
    ("UnsortedSegmentSum", [("d", f(4, 3)), ("s", i(0, 1, 0))], ["o"], {"num_segments": 2}),  # prefix
    ("UnsortedSegmentWeightedSumWithMainInputGradient",
     [("w", f(4)), ("g", f(3, 4)), ("s", i(0, 1, 2, 2)), ("d", f(4, 5))], ["dx", "dw"], {}),
    ("Unique", [("x", f(3))], ["u"], {}),
    ("NanCheck", [("x", i(1))], ["y"], {}),
    ("EnforceFinite", [("x", i(1))], [], {}),
    ("PackSegments", [("l", L23), ("t", i(1, 2, 3, 4, 5))], ["p"], {"pad_minf": 1, "max_length": 3}),
    ("PackSegments", [("l", L23), ("t", D53), ("like", f(3, 4))], ["p"], {}),  # packed_like rows
    ("PackSegments", [("l", L23), ("t", D53), ("like", f(2, 4))], ["p"], {"max_length": 3}),
    ("AddPadding", [("d", D53), ("l", L23), ("s", f(2))], ["o"], {}),  # padding size
    ("AddPadding", [("d", D53), ("l", L23), ("s", i(1, 2, 3))], ["o"], {}),  # padding dtype
    ("RemovePadding", [("d", f(3, 3)), ("l", L23)], ["o"], {}),  # fewer rows than the paddings
    ("GatherPadding", [("d", i(4, 5)), ("l", i(2))], ["s"], {}),
    ("GatherRanges", [("d", f(6)), ("r", i(0, 2, 2, 1).reshape(2, 2))], ["o", "l"], {}),
    ("GatherRangesToDense", [("d", f(6)), ("r", i(0, 2, 2, 1).reshape(1, 2, 2))], ["a"], {"lengths": [2]}),
    ("GatherRangesToDense", [("d", f(6)), ("r", i(0, 2).reshape(1, 1, 2)), ("k", i(1, 2))], ["a"],
     {"lengths": [2]}),
    ("LengthsPad", [("d", i(1, 2, 3, 4, 5)), ("l", L23)], ["o"], {"target_length": 3, "padding_value": 0.5}),
    ("ScatterAssign", [("d", f(4, 3)), ("x", i(1, 3)), ("s", f(2, 2))], ["d"], {}),
    ("Mod", [("x", f(3))], ["y"], {"divisor": 2}),
    ("BooleanMaskGradient", [("m", i(1, 0)), ("g", f())], ["dx"], {}),
    ("DotProductWithPadding", [("x", f(3, 4)), ("y", f(3, 3))], ["z"], {"replicate": 1}),
    ("DotProductWithPadding", [("x", f(3, 4)), ("y", f(3))], ["z"], {}),
    ("DotProductWithPaddingGradient", [("x", f(3, 4)), ("y", f(3, 2)), ("g", f(2))], ["dx", "dy"], {}),
    ("RemoveDataBlocks", [("d", f(4, 3)), ("x", f(1))], ["o"], {}),
    ("SegmentIdsToRanges", [("s", i(0, 1).reshape(2, 1))], ["r"], {}),  # ids not 1-D
    ("BooleanUnmask", [("m", i(1, 0)), ("v", f(1)), ("n", i(0, 1, 0)), ("w", f(1))], ["o"], {}),  # lengths
    ("BooleanUnmask", [("m", i(1, 0)), ("v", f(1)), ("n", i(0, 1)), ("w", i(1))], ["o"], {}),  # dtypes
    ("BooleanUnmask", [("m", i(1, 0)), ("v", f(1, 1))], ["o"], {}),  # values not 1-D
]


@pytest.mark.parametrize("op_type,inputs,outputs,args", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_inputs(op_type, inputs, outputs, args):
    """The inference refuses (a RuntimeWarning and ({}, {})) exactly where the run fails."""
    for name, a in inputs:
        workspace.FeedBlob(name, a)
    net = _net(op_type, [n for n, _ in inputs], outputs, args)
    with pytest.warns(RuntimeWarning, match=op_type):
        assert workspace.InferShapesAndTypes([net]) == ({}, {})
    with pytest.raises(Exception):
        workspace.RunNetOnce(net)
