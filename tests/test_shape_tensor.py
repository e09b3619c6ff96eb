"""Shape inference of the tensor family (recurrent/_shape_tensor.py): the ops of csrc/ops/shape.c,
topk_tile.c, batch.c, bmm_pow.c, embed.c, sparse.c, fill.c, util.c, print.c, decode.c, calib.c.
Each case infers, runs, and compares the inferred shapes and types with what the run gives."""

import warnings

import numpy as np
import pytest

from recurrent import core, shape_inference as si, workspace

F, I = np.float32, np.int32


def f32(*shape, lo=-1.0, hi=1.0):
    return np.random.RandomState(sum(shape) + len(shape)).uniform(lo, hi, size=shape).astype(F)


def i32(values):
    return np.asarray(values, dtype=I)


def _net(op_type, inputs, outputs, kw):
    net = core.Net("shape_tensor")
    net.Proto().op.extend([core.CreateOperator(op_type, list(inputs), list(outputs), **kw)])
    return net


def check(op_type, inputs, outputs, absent=(), **kw):
    """Feeds inputs (name, array), infers the op's outputs, runs it and compares: every output not in
    `absent` must be inferred with the shape and dtype of the run; those in `absent` must be left out."""
    workspace.ResetWorkspace()
    for name, value in inputs:
        workspace.FeedBlob(name, value)
    net = _net(op_type, [n for n, _ in inputs], outputs, kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    for o in outputs:
        if o in absent:
            assert o not in shapes, "%s: '%s' inferred %s but it depends on values" % (op_type, o, shapes[o])
            continue
        got = workspace.FetchBlob(o)
        assert o in shapes, "%s: '%s' not inferred" % (op_type, o)
        want_type = si.FLOAT if got.dtype == F else si.INT32
        assert (shapes[o], types[o]) == (list(got.shape), want_type), \
            "%s: '%s' inferred %s type %d, ran %s %s" % (
                op_type, o, shapes[o], types[o], list(got.shape), got.dtype)
    return shapes, types


def refused(op_type, inputs, outputs, **kw):
    """The inference refuses these inputs: a RuntimeWarning and ({}, {}); and so does the run."""
    workspace.ResetWorkspace()
    for name, value in inputs:
        workspace.FeedBlob(name, value)
    net = _net(op_type, [n for n, _ in inputs], outputs, kw)
    with pytest.warns(RuntimeWarning, match=op_type):
        assert workspace.InferShapesAndTypes([net]) == ({}, {})
    with pytest.raises(Exception):
        workspace.RunNetOnce(net)


# ---------------------------------------------------------------- (op, inputs, outputs, args[, absent])
X23, X234 = f32(2, 3), f32(2, 3, 4)
CASES = [
    # util.c
    ("Alias", [("x", X23)], ["y"], {}),
    ("CopyFromCPUInput", [("x", i32([[1, 2]]))], ["y"], {}),
    ("EnsureCPUOutput", [("x", X234)], ["y"], {}),
    ("EnsureDense", [("x", X23)], ["x"], {}),
    # shape.c
    ("Concat", [("a", X234), ("b", f32(2, 1, 4))], ["y", "info"], {}),
    ("Concat", [("a", X234), ("b", f32(2, 3, 2))], ["y", "info"], {"axis": -1}),
    ("Concat", [("a", X23), ("b", X23), ("c", X23)], ["y"], {"axis": 2, "add_axis": 1}),
    ("Concat", [("a", X23), ("b", X23)], ["y", "info"], {"axis": 0, "add_axis": 1}),
    ("Concat", [("a", f32(1, 2, 2, 3)), ("b", f32(1, 2, 2, 1))], ["y", "info"], {"order": "NHWC"}),
    ("Concat", [("a", i32([1, 2])), ("b", i32([3]))], ["y", "info"], {"axis": 0}),
    ("Split", [("x", f32(2, 6))], ["y0", "y1", "y2"], {}),
    ("Split", [("x", f32(5, 3))], ["y0", "y1"], {"axis": 0, "split": [2, 3]}),
    ("Split", [("x", f32(2, 3, 4))], ["y0", "y1", "y2"], {"axis": 1, "add_axis": 1}),
    ("Split", [("x", f32(5, 3)), ("s", i32([1, 4]))], ["y0", "y1"], {"axis": 0}, ["y0", "y1"]),
    ("SplitByLengths", [("x", f32(5, 2)), ("l", i32([2, 3]))], ["y0", "y1"], {"axis": 0}, ["y0", "y1"]),
    ("DepthConcat", [("a", X234), ("b", f32(2, 1, 4))], ["y", "info"], {}),
    ("DepthConcat", [("a", X23), ("b", X23)], ["y"], {"axis": 0, "add_axis": 1}),
    ("DepthSplit", [("x", f32(2, 6))], ["y0", "y1"], {}),
    ("DepthSplit", [("x", f32(5, 3))], ["y0", "y1"], {"axis": 0, "split": [2, 3]}),
    ("DepthSplit", [("x", f32(5, 3)), ("s", i32([1, 4]))], ["y0", "y1"], {"axis": 0}, ["y0", "y1"]),
    ("Reshape", [("x", X234)], ["y", "old"], {"shape": [0, -1]}),
    ("Reshape", [("x", X234)], ["y", "old"], {"shape": [4, 3, 2]}),
    ("Reshape", [("x", f32(0, 3))], ["y", "old"], {"shape": [0, 5]}),
    ("Reshape", [("x", X234), ("s", i32([6, 4]))], ["y", "old"], {}, ["y"]),
    ("PrependDim", [("x", f32(6, 2))], ["y"], {"dim_size": 3}),
    ("MergeDim", [("x", X234)], ["y"], {}),
    ("LengthsToShape", [("l", i32([3, 3]))], ["y"], {}),
    ("LengthsSplit", [("l", i32([3, 4, 0]))], ["y"], {"n_split": 2}),
    ("LengthsSplit", [("l", i32([3, 4])), ("n", i32([3]))], ["y"], {}, ["y"]),
    ("Flatten", [("x", X234)], ["y"], {}),
    ("Flatten", [("x", X234)], ["y"], {"axis": 0}),
    ("Flatten", [("x", X234)], ["y"], {"axis": 3}),
    ("FlattenToVec", [("x", X234)], ["y"], {}),
    ("ResizeLike", [("x", X234), ("like", f32(4, 6))], ["y"], {}),
    ("Transpose", [("x", X234)], ["y"], {}),
    ("Transpose", [("x", i32(np.zeros((2, 3, 4))))], ["y"], {"axes": [1, 2, 0]}),
    ("NCHW2NHWC", [("x", X234)], ["y"], {}),
    ("NCHW2NHWC", [("x", i32(np.zeros((2, 3, 4, 5, 1))))], ["y"], {}),
    ("NHWC2NCHW", [("x", X234)], ["y"], {}),
    ("NHWC2NCHW", [("x", f32(1, 2, 3, 0))], ["y"], {}),
    ("ExpandDims", [("x", X23)], ["y"], {"dims": [3, 0, 0]}),
    ("Squeeze", [("x", f32(1, 3, 1))], ["y"], {"dims": [0, 2]}),
    ("Shape", [("x", X234)], ["y"], {}),
    ("IsEmpty", [("x", X234)], ["y"], {}),
    ("IsEmpty", [("x", i32(np.zeros((2, 0))))], ["y"], {}),
    ("HasElements", [("x", f32(0, 3))], ["y"], {}),
    ("HasElements", [("x", f32(0, 3)), ("z", i32(7))], ["y"], {}),
    ("Shape", [("x", X234)], ["y"], {"axes": [-1, 0, 0]}),
    ("Slice", [("x", X234)], ["y"], {"starts": [0, 1], "ends": [-1, -2]}),
    ("Slice", [("x", X234)], ["y"], {"starts": [1, 0, 9], "ends": [2, 9, 9]}),
    ("Slice", [("x", X234), ("s", i32([0, 1])), ("e", i32([1, 2]))], ["y"], {}, ["y"]),
    ("SliceGradient", [("x", X234), ("dy", f32(2, 1, 4))], ["dx"], {"starts": [0, 1], "ends": [-1, 2]}),
    ("SliceGradient", [("x", X234), ("s", i32([0, 1])), ("e", i32([1, 2])), ("dy", f32(1, 1, 4))], ["dx"],
     {}),
    # topk_tile.c
    ("TopK", [("x", X234)], ["v", "i", "f"], {"k": 2}),
    ("TopK", [("x", X234)], ["v", "i"], {"k": 5, "axis": 1}),
    ("TopKGradient", [("dv", f32(2, 2, 4)), ("ix", i32(np.zeros((2, 2, 4)))), ("x", X234)], ["dx"],
     {"axis": 1}),
    ("Tile", [("x", X23)], ["y"], {"tiles": 3}),
    ("Tile", [("x", i32([[1, 2]]))], ["y"], {"tiles": 2, "axis": -1}),
    ("Tile", [("x", X23), ("t", i32([2]))], ["y"], {}, ["y"]),
    ("TileGradient", [("dy", f32(6, 3))], ["dx"], {"tiles": 3}),
    ("TileGradient", [("dy", f32(6, 3)), ("t", i32([2])), ("a", i32([0]))], ["dx"], {}, ["dx"]),
    ("NumpyTile", [("x", X23), ("r", i32([2, 1]))], ["y"], {}, ["y"]),
    ("LengthsTopK", [("x", f32(5)), ("l", i32([2, 0, 3]))], ["v", "i"], {"k": 2}),
    ("LengthsTopKGradient", [("l", i32([2, 3])), ("ix", i32([[0, 1], [2, 0]])), ("dv", f32(2, 2))], ["dx"],
     {"k": 2}, ["dx"]),
    # batch.c, bmm_pow.c
    ("BatchMatMul", [("a", X234), ("b", f32(2, 4, 5))], ["y"], {}),
    ("BatchMatMul", [("a", f32(2, 4, 3)), ("b", f32(2, 5, 4))], ["y"], {"trans_a": 1, "trans_b": 1}),
    ("BatchMatMul", [("a", f32(3, 4)), ("b", f32(2, 1, 4, 5))], ["y"], {"broadcast": 1}),
    ("BatchMatMul", [("a", f32(4)), ("b", f32(2, 4, 5))], ["y"], {"broadcast": 1}),
    ("BatchMatMul", [("a", f32(4)), ("b", f32(4))], ["y"], {"broadcast": 1}),
    ("BatchMatMul", [("a", f32(2, 3, 4)), ("b", f32(4))], ["y"], {"broadcast": 1, "trans_b": 1}),
    ("BatchMatMulGradient", [("a", f32(3, 4)), ("b", f32(2, 4, 5)), ("dy", f32(2, 3, 5))], ["da", "db"], {}),
    ("SequenceMask", [("x", X234), ("l", i32([1, 2]))], ["y"], {}),
    ("SequenceMask", [("x", X234)], ["y"], {"mode": "upper", "axis": 2}),
    ("SequenceMask", [("x", X234), ("c", i32([1, 2, 0]))], ["y"], {"mode": "window", "batch": 0, "axis": 2,
                                                                   "radius": 1}),
    ("ReversePackedSegs", [("x", X234), ("l", i32([2, 1, 0]))], ["y"], {}),
    ("BatchGather", [("d", X234), ("ix", i32([[0, 2], [1, 1]]))], ["y"], {}),
    ("BatchGatherGradient", [("d", f32(2, 4)), ("ix", i32([3, 0, 3])), ("g", f32(2, 3))], ["dd"], {}),
    ("BatchGatherGradient", [("d", X234), ("ix", i32([1])), ("g", f32(2, 3, 1))], ["dd"], {"axis": 2}),
    # embed.c
    ("Gather", [("d", f32(5, 2)), ("ix", i32([[0, 4, 1]]))], ["y"], {}),
    ("Gather", [("d", i32(np.zeros((2, 5)))), ("ix", i32([4, 1]))], ["y"], {"axis": 1}),
    ("Gather", [("d", X234), ("ix", i32([[1, 0], [2, 2]]))], ["y"], {"axis": 1, "match_outer": 1}),
    ("Gather", [("d", f32(5, 2)), ("ix", i32([-1, 0]))], ["y"], {"wrap_indices": 1}),
    ("GatherGradient", [("d", f32(5, 2)), ("ix", i32([[0, 4, 0]])), ("g", f32(1, 3, 2))], ["dd"], {}),
    ("OneHot", [("ix", i32([[1, 0], [2, 2]]))], ["y"], {"index_size": 4}),
    ("OneHot", [("ix", i32([1, 0])), ("n", i32([3]))], ["y"], {}, ["y"]),
    ("SegmentOneHot", [("l", i32([1, 2])), ("ix", i32([0, 1, 2])), ("n", i32([3]))], ["y"], {}, ["y"]),
    ("BatchOneHot", [("x", i32([[1, 2], [3, 1]])), ("l", i32([2, 1])), ("v", i32([1, 3, 1]))], ["y"], {}),
    ("BatchOneHot", [("x", f32(3, 2)), ("l", i32([0, 2])), ("v", f32(2))], ["y"], {}),
    ("BatchBucketOneHot", [("x", f32(3, 2)), ("l", i32([2, 1])), ("b", F([0.1, 0.5, 0.3]))], ["y"], {}),
    ("WeightedSample", [("w", f32(3, 4, lo=0.1))], ["ix"], {"seed": 1}),
    ("WeightedSample", [("w", f32(3, 4, lo=0.1)), ("v", f32(3, 4))], ["ix", "sv"], {}),
    ("WeightedMultiSampling", [("cdf", F([0.2, 0.5, 1.0]))], ["ix"], {"num_samples": 4}),
    ("WeightedMultiSampling", [("cdf", F([0.2, 0.5, 1.0])), ("s", X23)], ["ix"], {}),
    ("WeightedMultiSampling", [("cdf", np.zeros(0, F)), ("s", X23)], ["ix"], {}),
    # sparse.c
    ("SparseToDense", [("ix", i32([[0, 3]])), ("v", f32(1, 2, 3))], ["y"], {"output_first_dim": 5}),
    ("SparseToDense", [("ix", i32([0, 3])), ("v", i32([1, 2])), ("like", f32(6))], ["y"], {}),
    ("SparseToDense", [("ix", i32([0, 3])), ("v", f32(2, 2))], ["y"], {}, ["y"]),
    ("SparseToDenseMask", [("ix", i32([3, 1, 7])), ("v", f32(3, 2)), ("d", f32(2))], ["y"], {"mask": [1, 3]}),
    ("SparseToDenseMask", [("ix", i32([3, 1, 7])), ("v", i32([1, 2, 3])), ("d", i32(0)), ("l", i32([1, 2]))],
     ["y", "p"], {"mask": [1, 3, 5], "return_presence_mask": 1}),
    ("SparseToDenseMaskGradient", [("ix", i32([3, 1, 7])), ("g", f32(2, 2, 4)), ("l", i32([1, 2]))], ["dv"],
     {"mask": [1, 3]}),
    ("SparseToDenseMaskGradient", [("ix", i32([3, 1])), ("g", f32(2))], ["dv"], {"mask": [1, 3]}),
    ("BatchSparseToDense", [("l", i32([2, 1])), ("ix", i32([0, 2, 1])), ("v", f32(3))], ["y"],
     {"dense_last_dim": 4}),
    ("BatchSparseToDense", [("l", i32([2, 1])), ("ix", i32([0, 2, 1])), ("v", f32(3)), ("like", f32(2, 5))],
     ["y"], {}),
    ("BatchDenseToSparse", [("l", i32([2, 1])), ("ix", i32([0, 2, 1])), ("d", f32(2, 3))], ["v"], {}),
    ("ScatterWeightedSum", [("x", f32(4, 2)), ("w0", F([2.0])), ("ix", i32([0, 3])), ("x1", f32(2, 2)),
                            ("w1", F([1.0]))], ["x"], {}),
    ("CopyRowsToTensor", [("x", i32(np.zeros((3, 2)))), ("ix", i32([0, 2])), ("r", i32([1, 2]))], ["x"], {}),
    ("CopyRowsToTensorGradient", [("dy", f32(3, 2)), ("ix", i32([1]))], ["dx", "dr"], {}),
    # fill.c
    ("ConstantFill", [], ["y"], {"shape": [2, 3], "value": 2}),
    ("ConstantFill", [], ["y"], {}),
    ("ConstantFill", [("x", X23)], ["y"], {"extra_shape": [4], "value": 1.5}),
    ("ConstantFill", [("x", X23)], ["y"], {"dtype": 5, "value": 1}),
    ("ConstantFill", [("s", i32([2, 4]))], ["y"], {"input_as_shape": 1}, ["y"]),
    ("UniformFill", [], ["y"], {"shape": [3, 2], "min": -1.0, "max": 1.0}),
    ("UniformFill", [("x", X23), ("lo", F([1.0])), ("hi", F([0.0]))], ["y"], {}, ["y"]),
    ("UniformIntFill", [("x", X23)], ["y"], {"min": 0, "max": 9}),
    ("UniformIntFill", [("x", X23), ("lo", i32([0])), ("hi", i32([3]))], ["y"], {}, ["y"]),
    ("UniqueUniformFill", [("x", X23), ("av", i32([1, 2]))], ["y"], {"min": 0, "max": 20}),
    ("GaussianFill", [], ["y"], {"shape": [4]}),
    ("XavierFill", [], ["y"], {"shape": [3, 4]}),
    ("MSRAFill", [("x", X234)], ["y"], {}),
    ("DiagonalFill", [], ["y"], {"shape": [3, 3, 3], "value": 2, "dtype": 2}),
    ("DiagonalFill", [("x", f32(2, 5))], ["y"], {"value": 2}),
    ("GivenTensorFill", [], ["y"], {"shape": [2, 2], "values": [1.0, 2.0, 3.0, 4.0]}),
    ("GivenTensorIntFill", [("x", f32(3))], ["y"], {"values": [1, 2, 3]}),
    ("GivenTensorInt64Fill", [], ["y"], {"shape": [2], "values": [1, -2]}),
    ("RangeFill", [("x", f32(2, 3))], ["y"], {}),
    ("Size", [("x", f32(2, 3))], ["y"], {}),
    ("GivenTensorInt16Fill", [], ["y"], {"shape": [1], "values": [7]}),
    ("GivenTensorBoolFill", [], ["y"], {"shape": [2], "values": [1, 0]}),
    ("GivenTensorDoubleFill", [("x", f32(2))], ["y"], {"values": [0.5, 1.5]}),
    ("SparseLengthsFill", [], ["v", "l"], {"batch_size": 4, "average_len": 3, "max_value": 7}),
    ("SparseLengthsFill", [], ["v", "l"], {"batch_size": 0, "average_len": 3, "max_value": 1}),
    # decode.c
    ("ViterbiPath", [("p", f32(4, 3)), ("t", f32(3, 3))], ["path"], {}),
    ("SwapBestPath", [("p", f32(4, 3)), ("b", i32([0, 1, 2, 0]))], ["y"], {}),
    ("CTCGreedyDecoder", [("x", f32(4, 2, 3)), ("l", i32([4, 2]))], ["len", "vals"], {}, ["vals"]),
    ("CTCBeamSearchDecoder", [("x", f32(4, 2, 3, lo=0.0))], ["len", "vals", "prob"], {"num_candidates": 2},
     ["vals"]),
    # calib.c
    ("Percentile", [("x", f32(3, 2)), ("vp", F([[0.0, 0.1], [1.0, 0.9], [0.5, 0.5]])), ("l", i32([2, 1]))],
     ["y"], {}),
    ("BisectPercentile", [("x", f32(3, 2))], ["y"], {
        "percentile_raw": [0.0, 1.0, 0.5], "percentile_mapping": [0.1, 0.9, 0.5],
        "percentile_lower": [0.1, 0.9, 0.5], "percentile_upper": [0.1, 0.9, 0.5], "lengths": [2, 1]}),
    ("BatchBoxCox", [("d", f32(4, 3, lo=0.5)), ("l1", F([0.0, 0.5, 1.0])), ("l2", F([0.0, 0.1, 0.2]))], ["y"],
     {}),
    ("PiecewiseLinearTransform", [("x", f32(3, 2))], ["y"], {
        "bounds": [0.0, 0.5, 1.0, 0.0, 0.5, 1.0], "slopes": [1.0, 2.0, 1.0, 2.0],
        "intercepts": [0.0, 0.1, 0.0, 0.1]}),
    ("PiecewiseLinearTransform", [("x", f32(4)), ("b", F([0.0, 1.0])), ("s", F([1.0])), ("c", F([0.0]))],
     ["y"], {"binary": 1}),
    ("Summarize", [("x", X234)], ["y"], {}),
    ("Summarize", [("x", f32(1))], [], {}),
]


@pytest.mark.parametrize("case", CASES, ids=["%s-%d" % (c[0], k) for k, c in enumerate(CASES)])
def test_infer_matches_run(case):
    op_type, inputs, outputs, kw = case[:4]
    absent = case[4] if len(case) > 4 else ()
    check(op_type, inputs, outputs, absent, **kw)


def test_every_family_type_has_a_case_or_a_reason():
    from recurrent import shape_inference as si
    si.registered()
    covered = {c[0] for c in CASES} | {"Print", "ZeroGradient"}
    mine = {t for t, f in si._REGISTRY.items() if f.__module__ == "recurrent._shape_tensor"}
    assert len(mine) > 60 and sorted(mine - covered) == []


def test_no_outputs():
    shapes, _ = check("Print", [("x", X23)], [])
    assert "x" in shapes
    shapes, _ = check("ZeroGradient", [("x", X23)], [])
    assert "x" in shapes


def test_not_inferred_types_have_reasons():
    for t in ("SplitByLengths", "NumpyTile", "SegmentOneHot", "LengthsTopKGradient"):
        assert si.NOT_INFERRED[t]


# ---------------------------------------------------------------- blob_dimensions / blob_types
def test_blob_dimensions_and_types():
    workspace.ResetWorkspace()
    net = core.Net("dims")
    net.Concat(["a", "b"], ["c", "info"], axis=0)
    net.TopK(["c"], ["v", "i"], k=2)
    net.Reshape(["v"], ["r", "old"], shape=[-1])
    shapes, types = workspace.InferShapesAndTypes([net], blob_dimensions={"a": [2, 5], "b": [3, 5]},
                                                  blob_types={"a": si.FLOAT, "b": si.FLOAT})
    assert shapes["c"] == [5, 5] and types["c"] == si.FLOAT
    assert shapes["info"] == [2] and types["info"] == si.INT32
    assert (shapes["v"], shapes["i"], types["i"]) == ([5, 2], [5, 2], si.INT32)
    assert (shapes["r"], types["r"], shapes["old"]) == ([10], si.FLOAT, [2])


def test_blob_dimensions_without_types():
    net = core.Net("dims_untyped")
    net.Transpose(["x"], ["y"], axes=[1, 0])
    net.Shape(["y"], ["s"])
    net.Gather(["y", "ix"], ["g"])
    shapes, types = workspace.InferShapesAndTypes([net], blob_dimensions={"x": [2, 3], "ix": [4]})
    assert (shapes["y"], types["y"]) == ([3, 2], si.UNDEFINED)
    assert (shapes["s"], types["s"]) == ([2], si.INT32)
    assert (shapes["g"], types["g"]) == ([4, 2], si.UNDEFINED)


def test_value_dependent_output_drops_an_older_shape():
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", X23)
    workspace.FeedBlob("s", i32([3, 2]))
    workspace.FeedBlob("y", f32(7))
    net = _net("Reshape", ["x", "s"], ["y", "old"], {})
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert "y" not in shapes and shapes["old"] == [2]


# ---------------------------------------------------------------- refusals: one per kind of check
REFUSED = [
    ("Concat", [("a", X23), ("b", f32(3, 3))], ["y"], {}),                       # dims that must match
    ("Split", [("x", f32(3, 4))], ["a", "b", "c"], {"axis": 0, "add_axis": 1, "split": [2, 0, 1]}),  # not 1s
    ("BatchMatMul", [("a", X23), ("b", f32(2, 4))], ["y"], {}),                  # inner dims
    ("BatchMatMul", [("a", f32(2, 3, 4)), ("b", f32(3, 4, 5))], ["y"], {"broadcast": 1}),  # no broadcast
    ("TopK", [("x", i32([1, 2]))], ["v", "i"], {"k": 1}),                         # dtype
    ("Summarize", [("x", i32([1, 2]))], ["y"], {}),                              # dtype
    ("Summarize", [("x", f32(2, 0))], ["y"], {}),                                 # empty
    ("Transpose", [("x", X23)], ["y"], {"axes": [2, 0, 1]}),                      # rank vs argument
    ("Split", [("x", f32(5, 3))], ["y0", "y1"], {"axis": 0}),                     # sizes vs the dim
    ("Reshape", [("x", X23)], ["y", "old"], {"shape": [4, -1]}),                  # element count
    ("Squeeze", [("x", X23)], ["y"], {"dims": [0]}),                              # a dim that must be 1
    ("Gather", [("d", f32(5, 2)), ("ix", i32([0]))], ["y"], {"axis": 2}),       # axis range
    ("Flatten", [("x", X23)], ["y"], {"axis": 3}),                                # argument vs rank
    ("SparseToDenseMask", [("ix", i32([1])), ("v", f32(1, 2)), ("d", f32(3))], ["y"], {"mask": [1]}),
    ("Slice", [("x", X23)], ["y"], {"starts": [1], "ends": [0]}),                 # an empty range
    ("Concat", [("a", X23), ("b", X23)], ["y", "info", "z"], {}),                 # outputs count
    ("GivenTensorFill", [("x", X23)], ["y"], {"values": [1.0, 2.0]}),            # values vs shape
    ("SparseLengthsFill", [], ["v", "l"], {"batch_size": 4, "max_value": 7}),      # average_len required
    ("SparseLengthsFill", [], ["v", "l"], {"batch_size": 4, "average_len": 1, "max_value": 0}),  # max_value
    ("WeightedSample", [("w", f32(3))], ["ix"], {}),                             # rank
]


@pytest.mark.parametrize("case", REFUSED, ids=["%s-%d" % (c[0], k) for k, c in enumerate(REFUSED)])
def test_refused(case):
    op_type, inputs, outputs, kw = case
    refused(op_type, inputs, outputs, **kw)


def test_unknown_input_leaves_outputs_unknown():
    net = core.Net("unknown")
    net.Concat(["a", "b"], ["c", "info"], axis=0)
    shapes, _ = workspace.InferShapesAndTypes([net], blob_dimensions={"a": [2, 5]})
    assert shapes == {"a": [2, 5]}
