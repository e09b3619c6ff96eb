"""Embedding / sampling / optimizer operators (csrc/ops/embed.c): Gather,
GatherGradient, OneHot, SegmentOneHot, BatchOneHot, BatchBucketOneHot,
WeightedSample, WeightedMultiSampling, Adagrad (with its effective-lr / update outputs and weight_decay;
SparseAdagrad's weight_decay is in test_ops_sparse.py).

Forward and gradient ops against NumPy references; the Gather gradient maker
(recurrent/_grad_embed.py) by finite differences and through a backward pass;
bad input by exception type and message (op, blob, offending value).
"""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.gradient_checker import GradientChecker
from op_helpers import assert_must_not_differentiate


def run(op_type, feeds, outputs, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    workspace.RunOperatorOnce(core.CreateOperator(op_type, list(feeds), outputs, **args))
    return [workspace.FetchBlob(o) for o in outputs]


def raises(exc, match, op_type, feeds, outputs, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(core.CreateOperator(op_type, list(feeds), outputs, **args))


def f32(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


def ref_gather_grad(data_shape, idx, dout):
    ref = np.zeros(data_shape, np.float64)
    np.add.at(ref, idx.reshape(-1), dout.reshape((idx.size,) + tuple(data_shape[1:])).astype(np.float64))
    return ref


# ---------------------------------------------------------------- Gather
@pytest.mark.parametrize("data_shape,idx_shape", [((5, 3), (4,)), ((6, 2, 3), (2, 3)), ((4,), (7,)),
                                                  ((5, 3), ()), ((5, 3), (0,)), ((3, 4), (2, 0))])
def test_gather_matches_numpy(rng, data_shape, idx_shape):
    data = f32(rng, *data_shape)
    idx = rng.randint(0, data_shape[0], size=idx_shape).astype(np.int32)
    (out,) = run("Gather", {"data": data, "idx": idx}, ["out"])
    assert out.shape == idx_shape + data_shape[1:]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, data[idx])


def test_gather_int32_data(rng):
    data = rng.randint(-100, 100, size=(6, 2)).astype(np.int32)
    idx = np.array([5, 0, 0, 3], np.int32)
    (out,) = run("Gather", {"data": data, "idx": idx}, ["out"])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, data[idx])


def test_gather_rerun_with_new_shape(rng):
    data = f32(rng, 5, 3)
    for n in (4, 2, 7):
        idx = rng.randint(0, 5, size=(n,)).astype(np.int32)
        (out,) = run("Gather", {"data": data, "idx": idx}, ["out"])
        np.testing.assert_array_equal(out, data[idx])


@pytest.mark.parametrize("data_shape,idx_shape", [((5, 3), (6,)), ((4, 2, 2), (2, 3)), ((3,), (5,))])
def test_gather_gradient_op_matches_numpy(rng, data_shape, idx_shape):
    data = f32(rng, *data_shape)
    idx = rng.randint(0, data_shape[0], size=idx_shape).astype(np.int32)  # repeats on purpose
    dout = f32(rng, *(idx_shape + data_shape[1:]))
    (g,) = run("GatherGradient", {"data": data, "idx": idx, "dout": dout}, ["g"])
    assert g.shape == data_shape
    np.testing.assert_allclose(g, ref_gather_grad(data_shape, idx, dout), rtol=1e-6, atol=1e-6)


def test_gather_gradient_repeated_indices_accumulate():
    data = np.zeros((3, 2), np.float32)
    idx = np.array([1, 1, 1, 2], np.int32)
    dout = np.arange(8, dtype=np.float32).reshape(4, 2)
    (g,) = run("GatherGradient", {"data": data, "idx": idx, "dout": dout}, ["g"])
    np.testing.assert_array_equal(g, [[0, 0], [0 + 2 + 4, 1 + 3 + 5], [6, 7]])


@pytest.mark.parametrize("data_shape,idx_shape", [((5, 3), (6,)), ((4, 2, 2), (2, 3))])
def test_gather_gradient_finite_differences(rng, data_shape, idx_shape):
    data = f32(rng, *data_shape)
    idx = rng.randint(0, data_shape[0], size=idx_shape).astype(np.int32)
    op = core.CreateOperator("Gather", ["data", "idx"], ["out"])
    checker = GradientChecker(1e-2, 1e-2)
    ok, grad, estimate = checker.CheckSimple(op, [data, idx], 0, [0])
    assert ok, checker.last_message
    assert grad.shape == data_shape


def test_gather_gradient_maker():
    """As in Caffe2: the table's gradient is the sparse slice (idx, out_grad), no op."""
    op = core.CreateOperator("Gather", ["emb", "idx"], ["out"])
    grad_ops, g_input = core.GradientRegistry.GetGradientForOp(op, ["out_grad"])
    assert grad_ops == []
    assert g_input == [core.GradientSlice("idx", "out_grad"), None]
    assert core.GradientRegistry.GetGradientForOp(op, [None]) == ([], [None, None])


def test_gather_in_a_net_with_backward_pass(rng):
    """Embedding -> FC -> loss: the gradient of the table through a whole net."""
    emb, w, b = f32(rng, 6, 4), f32(rng, 3, 4), f32(rng, 3)
    idx = np.array([0, 5, 5, 2], np.int32)
    net = core.Net("embed_net")
    x = net.Gather(["emb", "idx"], "x")
    y = net.FC([x, "w", "b"], "y")
    sq = net.SquaredL2Distance([y, "target"], "sq")
    net.AveragedLoss(sq, "loss")
    grad_map = net.AddGradientOperators(["loss"])
    g = grad_map["emb"]
    assert isinstance(g, core.GradientSlice) and (g.indices, g.values) == ("idx", "x_grad")
    net.SparseToDense([g.indices, g.values, "emb"], "emb_grad")
    target = f32(rng, 4, 3)
    for name, v in dict(emb=emb, idx=idx, w=w, b=b, target=target).items():
        workspace.FeedBlob(name, v)
    workspace.RunNetOnce(net)
    e64, w64 = emb.astype(np.float64), w.astype(np.float64)
    yv = e64[idx] @ w64.T + b
    dy = (yv - target) / 4.0
    np.testing.assert_allclose(workspace.FetchBlob("emb_grad"), ref_gather_grad(emb.shape, idx, dy @ w64),
                               rtol=1e-4, atol=1e-5)


def test_gather_bad_input(rng):
    data = f32(rng, 5, 3)
    raises(IndexError,
           r"op Gather #0: input 1 blob 'idx': index 5 at position 2 is out of range \[0, 5\).*'data'",
           "Gather", {"data": data, "idx": np.array([0, 1, 5], np.int32)}, ["out"])
    raises(IndexError, r"op Gather #0: input 1 blob 'idx': index -1 at position 0",
           "Gather", {"data": data, "idx": np.array([-1], np.int32)}, ["out"])
    raises(TypeError, r"op Gather #0: input 1 blob 'fidx' must be int32",
           "Gather", {"data": data, "fidx": np.array([0.0], np.float32)}, ["out"])
    raises(ValueError, r"op Gather #0: input 0 blob 'scalar' must have at least 1 dim",
           "Gather", {"scalar": np.float32(1.0), "idx": np.array([0], np.int32)}, ["out"])


def test_gather_out_of_range_leaves_output_untouched(rng):
    data = f32(rng, 5, 3)
    (out,) = run("Gather", {"data": data, "idx": np.array([1, 2], np.int32)}, ["out"])
    raises(IndexError, r"index 9", "Gather", {"data": data, "idx": np.array([0, 9], np.int32)}, ["out"])
    np.testing.assert_array_equal(workspace.FetchBlob("out"), out)


def test_gather_gradient_bad_input(rng):
    data = f32(rng, 5, 3)
    idx = np.array([0, 4], np.int32)
    raises(ValueError,
           r"op GatherGradient #0: input 2 blob 'dout' \(the output gradient\) must have shape \(2, 3\)",
           "GatherGradient", {"data": data, "idx": idx, "dout": f32(rng, 2, 4)}, ["g"])
    raises(IndexError, r"op GatherGradient #0: input 1 blob 'bad': index 7 at position 1",
           "GatherGradient", {"data": data, "bad": np.array([0, 7], np.int32), "dout": f32(rng, 2, 3)}, ["g"])


# ---------------------------------------------------------------- OneHot
@pytest.mark.parametrize("shape", [(5,), (2, 3), (0,)])
def test_one_hot_argument(rng, shape):
    idx = rng.randint(0, 7, size=shape).astype(np.int32)
    (out,) = run("OneHot", {"idx": idx}, ["oh"], index_size=7)
    assert out.dtype == np.float32 and out.shape == shape + (7,)
    np.testing.assert_array_equal(out, np.eye(7, dtype=np.float32)[idx])


def test_one_hot_size_input(rng):
    idx = np.array([3, 0, 2], np.int32)
    (out,) = run("OneHot", {"idx": idx, "size": np.array([4], np.int32)}, ["oh"])
    np.testing.assert_array_equal(out, np.eye(4, dtype=np.float32)[idx])


def test_one_hot_has_no_gradient():
    op = core.CreateOperator("OneHot", ["idx"], ["oh"], index_size=3)
    assert core.GradientRegistry.GetGradientForOp(op, ["oh_grad"]) == ([], [None])


def test_one_hot_bad_input():
    idx = np.array([1, 3], np.int32)
    raises(IndexError, r"op OneHot #0: input 0 blob 'idx': index 3 at position 1 is out of range \[0, 3\)",
           "OneHot", {"idx": idx}, ["oh"], index_size=3)
    raises(IndexError, r"op OneHot #0: input 0 blob 'idx': index 3 at position 1",
           "OneHot", {"idx": idx, "size": np.array([2], np.int32)}, ["oh"])
    raises(ValueError, r"op OneHot #0: the index size is missing", "OneHot", {"idx": idx}, ["oh"])
    raises(ValueError, r"op OneHot #0: .*not both", "OneHot", {"idx": idx, "size": np.array([5], np.int32)},
           ["oh"], index_size=5)
    raises(ValueError, r"op OneHot #0: argument index_size must be >= 0", "OneHot", {"idx": idx}, ["oh"],
           index_size=-2)
    raises(TypeError, r"op OneHot #0: input 0 blob 'fidx' must be int32", "OneHot",
           {"fidx": np.array([1.0], np.float32)}, ["oh"], index_size=3)
    raises(ValueError, r"op OneHot #0: input 1 blob 'size2' \(the index size\) must hold one value", "OneHot",
           {"idx": idx, "size2": np.array([4, 4], np.int32)}, ["oh"])


# ---------------------------------------------------------- SegmentOneHot, BatchOneHot, BatchBucketOneHot
def test_segment_one_hot(rng):
    lens = np.array([2, 0, 3, 1], np.int32)
    idx = rng.randint(0, 5, size=6).astype(np.int32)
    (out,) = run("SegmentOneHot", {"lens": lens, "idx": idx, "size": np.array([5], np.int32)}, ["oh"])
    ref = np.zeros((4, 5), np.float32)
    for s, (a, b) in enumerate(zip(np.cumsum(lens) - lens, np.cumsum(lens))):
        ref[s, idx[a:b]] = 1
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, ref)
    (out,) = run("SegmentOneHot", {"lens": np.zeros(3, np.int32), "idx": np.zeros(0, np.int32),
                                   "size": np.array([0], np.int32)}, ["oh"])
    assert out.shape == (3, 0)


def ref_batch_one_hot(x, lens, vals):
    x2 = x.reshape(len(x), -1)
    cols = np.repeat(np.arange(x2.shape[1]), lens)
    return (x2[:, cols] == vals[None, :]).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_batch_one_hot(rng, dtype):
    x = rng.randint(0, 4, size=(6, 2, 2)).astype(dtype)
    lens = np.array([2, 0, 3, 1], np.int32)
    vals = rng.randint(0, 5, size=6).astype(dtype)
    (out,) = run("BatchOneHot", {"x": x, "lens": lens, "vals": vals}, ["y"])
    assert out.dtype == dtype and out.shape == (6, 6)
    np.testing.assert_array_equal(out, ref_batch_one_hot(x, lens, vals))
    # Caffe2's example; NaN equals nothing; no rows
    (out,) = run("BatchOneHot", {"x": np.array([[2, 3], [4, 1], [2, 5]], np.int32),
                                 "lens": np.array([2, 3], np.int32),
                                 "vals": np.array([2, 4, 1, 3, 5], np.int32)}, ["y"])
    np.testing.assert_array_equal(out, [[1, 0, 0, 1, 0], [0, 1, 1, 0, 0], [1, 0, 0, 0, 1]])
    (out,) = run("BatchOneHot", {"x": np.array([[np.nan]], np.float32), "lens": np.array([1], np.int32),
                                 "vals": np.array([np.nan], np.float32)}, ["y"])
    np.testing.assert_array_equal(out, [[0]])
    (out,) = run("BatchOneHot", {"x": np.zeros((0, 2), np.int32), "lens": np.array([1, 1], np.int32),
                                 "vals": np.array([1, 2], np.int32)}, ["y"])
    assert out.shape == (0, 2)


def ref_bucket_one_hot(x, lens, b):
    out, off, p = [], 0, 0
    x2 = x.reshape(len(x), -1).astype(np.float64)
    for j, n in enumerate(lens):
        bj = b[p:p + n].astype(np.float64)
        k = (np.searchsorted(bj, x2[:, j], "left") + np.searchsorted(bj, x2[:, j], "right")) // 2
        out.append(np.eye(n + 1, dtype=np.float32)[k])
        p += n
    return np.concatenate(out, axis=1)


def test_batch_bucket_one_hot(rng):
    x = rng.randint(-4, 5, size=(7, 3)).astype(np.float32)
    x[0] = [2, 0, 0]
    lens = np.array([2, 0, 5], np.int32)
    b = np.array([-1, 2, -3, 0, 0, 0, 3.5], np.float32)  # a run of equal boundaries splits its ties
    (out,) = run("BatchBucketOneHot", {"x": x, "lens": lens, "b": b}, ["y"])
    assert out.dtype == np.float32 and out.shape == (7, 10)
    np.testing.assert_array_equal(out, ref_bucket_one_hot(x, lens, b))
    np.testing.assert_array_equal(out[0], [0, 1, 0, 1, 0, 0, 1, 0, 0, 0])  # 0 in the middle of [0, 0, 0]
    np.testing.assert_array_equal(out.sum(axis=1), 3)
    # Caffe2's example: right-inclusive buckets
    (out,) = run("BatchBucketOneHot", {"x": np.array([[2, 3], [4, 1], [2, 5]], np.float32),
                                       "lens": np.array([2, 3], np.int32),
                                       "b": np.array([0.1, 2.5, 1, 3.1, 4.5], np.float32)}, ["y"])
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 1, 0, 0], [0, 0, 1, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0, 1]])
    (out,) = run("BatchBucketOneHot", {"x": np.array([[np.nan, np.inf]], np.float32),
                                       "lens": np.array([1, 1], np.int32),
                                       "b": np.array([0, 1], np.float32)}, ["y"])
    np.testing.assert_array_equal(out, [[1, 0, 0, 1]])


def test_one_hot_family_has_no_gradient():
    for t in ("SegmentOneHot", "BatchOneHot", "BatchBucketOneHot"):
        op = core.CreateOperator(t, ["a", "b", "c"], ["y"])
        assert core.GradientRegistry.GetGradientForOp(op, ["y_grad"]) == ([], [None, None, None])


def test_one_hot_family_bad_input():
    size, i32 = np.array([3], np.int32), (lambda *v: np.array(v, np.int32))
    raises(ValueError, r"op SegmentOneHot #0: input 0 blob 'lens' \(lengths\) of shape \(2,\) int32 sums to "
           r"3, but input 1 blob 'idx' of shape \(2,\) int32 has 2 rows", "SegmentOneHot",
           {"lens": i32(1, 2), "idx": i32(0, 1), "size": size},
           ["y"])
    raises(IndexError, r"op SegmentOneHot #0: input 1 blob 'idx': index 3 at position 1 is out of range "
           r"\[0, 3\)", "SegmentOneHot", {"lens": i32(2), "idx": i32(0, 3), "size": size}, ["y"])
    raises(ValueError, r"op SegmentOneHot #0: input 0 blob 'lens' \(lengths\) holds -1 at position 0",
           "SegmentOneHot", {"lens": i32(-1, 1), "idx": i32(), "size": size}, ["y"])
    raises(ValueError, r"op SegmentOneHot #0: input 2 blob 'neg' \(the index size\) must be >= 0, got -2",
           "SegmentOneHot", {"lens": np.array([0], np.int32), "idx": np.zeros(0, np.int32),
                             "neg": np.array([-2], np.int32)}, ["y"])
    x = np.zeros((2, 2), np.int32)
    raises(ValueError, r"op BatchOneHot #0: input 1 blob 'lens' \(lengths\) must hold one length per column "
           r"of input 0 blob 'x' \(2, 2\) int32 \(2\), got \(3,\) int32", "BatchOneHot",
           {"x": x, "lens": np.ones(3, np.int32), "vals": np.zeros(3, np.int32)}, ["y"])
    raises(ValueError, r"op BatchOneHot #0: input 2 blob 'vals' \(the values, of input 0's dtype\) must hold "
           r"sum\(lengths\) = 2 elements, got \(3,\) int32", "BatchOneHot",
           {"x": x, "lens": np.ones(2, np.int32), "vals": np.zeros(3, np.int32)}, ["y"])
    raises(TypeError, r"op BatchOneHot #0: input 2 blob 'fv' must be int32", "BatchOneHot",
           {"x": x, "lens": np.ones(2, np.int32), "fv": np.zeros(2, np.float32)}, ["y"])
    raises(ValueError, r"op BatchOneHot #0: input 0 blob 's' \(the data\) must have at least 1 dim, got "
           r"\(\) int32", "BatchOneHot",
           {"s": np.int32(1), "lens": np.ones(2, np.int32), "vals": np.zeros(2, np.int32)}, ["y"])
    raises(ValueError, r"op BatchBucketOneHot #0: input 2 blob 'b' \(the boundaries\): column 1's must be "
           r"sorted, without NaN, but position 2 holds 0 after a larger one", "BatchBucketOneHot",
           {"xf": np.zeros((1, 2), np.float32), "lens": np.array([1, 2], np.int32),
            "b": np.array([5, 1, 0], np.float32)}, ["y"])
    raises(ValueError, r"op BatchBucketOneHot #0: input 2 blob 'b' \(the boundaries\): column 0's must be "
           r"sorted, without NaN, but position 0 holds nan", "BatchBucketOneHot",
           {"xf": np.zeros((1, 1), np.float32), "lens": np.array([1], np.int32),
            "b": np.array([np.nan], np.float32)}, ["y"])
    raises(TypeError, r"op BatchBucketOneHot #0: input 0 blob 'xi' must be float32", "BatchBucketOneHot",
           {"xi": x, "lens": np.ones(2, np.int32), "b": np.zeros(2, np.float32)}, ["y"])


# ---------------------------------------------------------------- WeightedSample
def test_weighted_sample_distribution():
    """With many rows the empirical frequencies follow the weights (chi-square
    style bound), zero weights are never drawn, rows are independent."""
    w = np.array([1.0, 0.0, 3.0, 6.0], np.float32)
    n = 20000
    (idx,) = run("WeightedSample", {"w": np.tile(w, (n, 1))}, ["idx"], seed=7)
    assert idx.dtype == np.int32 and idx.shape == (n,)
    counts = np.bincount(idx, minlength=4)
    assert counts[1] == 0
    p = w / w.sum()
    expected = n * p
    for j in (0, 2, 3):
        assert abs(counts[j] - expected[j]) < 5 * np.sqrt(expected[j] * (1 - p[j]))


def test_weighted_sample_unnormalised_rows_and_values(rng):
    w = np.array([[0.0, 0.0, 2.5], [7.0, 0.0, 0.0], [0.0, 1e-3, 0.0]], np.float32)
    vals = f32(rng, 3, 3)
    idx, sv = run("WeightedSample", {"w": w, "vals": vals}, ["idx", "sv"], seed=1)
    np.testing.assert_array_equal(idx, [2, 0, 1])
    np.testing.assert_array_equal(sv, vals[np.arange(3), idx])


@pytest.mark.parametrize("n", [0, 1, 3])
def test_weighted_sample_no_columns_gives_empty_outputs(n):
    # Caffe2's op drew only when N > 0 and D > 0 and otherwise gave outputs of shape (0,) (its
    # weighted_sample_test.py feeds (batch, 0) weights and expects that); (n, 0) rows are not
    # "rows summing to 0"
    w = np.zeros((n, 0), np.float32)
    idx, sv = run("WeightedSample", {"w": w, "vals": w.copy()}, ["idx", "sv"], seed=3)
    assert idx.shape == (0,) and idx.dtype == np.int32
    assert sv.shape == (0,) and sv.dtype == np.float32
    (idx2,) = run("WeightedSample", {"w": w}, ["idx2"], seed=3)
    assert idx2.shape == (0,)
    net = core.Net("ws_shapes")
    net.WeightedSample(["w", "vals"], ["idx", "sv"])
    shapes, _ = workspace.InferShapesAndTypes([net], {"w": [n, 0], "vals": [n, 0]},
                                              blob_types={"w": core.DataType.FLOAT, "vals": core.DataType.FLOAT})
    assert list(shapes["idx"]) == [0] and list(shapes["sv"]) == [0]


def test_weighted_sample_seeded_is_deterministic(rng):
    w = rng.rand(50, 10).astype(np.float32)
    (a,) = run("WeightedSample", {"w": w}, ["a"], seed=123)
    (b,) = run("WeightedSample", {"w": w}, ["b"], seed=123)
    (c,) = run("WeightedSample", {"w": w}, ["c"], seed=124)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_weighted_sample_state_advances_across_runs(rng):
    """The generator lives in the op: a net run twice draws new numbers."""
    w = np.ones((40, 10), np.float32)
    workspace.FeedBlob("w", w)
    net = core.Net("sampler")
    net.WeightedSample(["w"], ["idx"], seed=5)
    workspace.CreateNet(net)
    workspace.RunNet(net)
    first = workspace.FetchBlob("idx")
    workspace.RunNet(net)
    second = workspace.FetchBlob("idx")
    assert not np.array_equal(first, second)


def test_weighted_sample_bad_input():
    raises(ValueError, r"op WeightedSample #0: input 0 blob 'w' .*weight -1 at row 1, column 0",
           "WeightedSample", {"w": np.array([[1, 1], [-1, 2]], np.float32)}, ["idx"], seed=0)
    raises(ValueError, r"op WeightedSample #0: input 0 blob 'w' .*weight nan at row 0",
           "WeightedSample", {"w": np.array([[np.nan, 1]], np.float32)}, ["idx"], seed=0)
    raises(ValueError, r"op WeightedSample #0: input 0 blob 'w' .*row 0 sum to 0",
           "WeightedSample", {"w": np.zeros((1, 3), np.float32)}, ["idx"], seed=0)
    raises(ValueError, r"op WeightedSample #0: input 0 blob 'w1' must have 2 dims",
           "WeightedSample", {"w1": np.ones(3, np.float32)}, ["idx"], seed=0)
    raises(ValueError, r"op WeightedSample #0: input 1 blob 'v' must have the shape of input 0 blob 'w'",
           "WeightedSample", {"w": np.ones((2, 3), np.float32), "v": np.ones((2, 2), np.float32)}, ["i", "s"])
    raises(ValueError, r"op WeightedSample #0: output 1 blob 's' .*needs input 1",
           "WeightedSample", {"w": np.ones((2, 3), np.float32)}, ["i", "s"])


# ---------------------------------------------------------------- WeightedMultiSampling
def test_weighted_multi_sampling_distribution_and_zero_weights():
    """Frequencies follow the CDF's increments; an index of probability 0 (a flat step, or a leading 0) is
    never drawn."""
    cdf = np.array([0.0, 1.0, 1.0, 4.0, 10.0], np.float32)  # p = [0, .1, 0, .3, .6]
    n = 30000
    (idx,) = run("WeightedMultiSampling", {"cdf": cdf}, ["idx"], num_samples=n, seed=3)
    assert idx.dtype == np.int32 and idx.shape == (n,)
    counts = np.bincount(idx, minlength=5)
    assert counts[0] == 0 and counts[2] == 0
    p = np.diff(np.concatenate([[0.0], cdf])) / cdf[-1]
    for j in (1, 3, 4):
        assert abs(counts[j] - n * p[j]) < 5 * np.sqrt(n * p[j] * (1 - p[j]))


def test_weighted_multi_sampling_against_numpy_with_the_same_uniforms():
    """The draw is the first i with CDF[i] > u * CDF[-1]: with one nonzero step the result is exact."""
    for n_len, last in [(1, 1.5), (7, 0.25), (300, 1e30)]:
        cdf = np.zeros(n_len, np.float32)
        cdf[-1] = last
        (idx,) = run("WeightedMultiSampling", {"cdf": cdf}, ["idx"], num_samples=9, seed=1)
        np.testing.assert_array_equal(idx, np.full(9, n_len - 1, np.int32))
    cdf = np.array([2.0, 2.0, 2.0], np.float32)  # all the mass on index 0
    (idx,) = run("WeightedMultiSampling", {"cdf": cdf}, ["idx"], num_samples=50, seed=2)
    assert (idx == 0).all()


def test_weighted_multi_sampling_shapes():
    cdf = np.array([0.5, 1.0], np.float32)
    (a,) = run("WeightedMultiSampling", {"cdf": cdf}, ["a"])  # num_samples 0
    assert a.shape == (0,) and a.dtype == np.int32
    (b,) = run("WeightedMultiSampling", {"cdf": cdf, "shape": np.zeros((2, 3, 4))}, ["b"], seed=0)
    assert b.shape == (2, 3, 4) and set(np.unique(b)) <= {0, 1}
    (c,) = run("WeightedMultiSampling", {"cdf": cdf, "shape0": np.array(3, np.int32)}, ["c"], seed=0)
    assert c.shape == () and c in (0, 1)
    # an empty CDF gives (0,) whatever was asked, as Caffe2
    e = np.zeros(0, np.float32)
    assert run("WeightedMultiSampling", {"e": e}, ["d"], num_samples=5)[0].shape == (0,)
    assert run("WeightedMultiSampling", {"e": e, "shape": np.zeros((2, 3))}, ["d"])[0].shape == (0,)
    # nothing drawn: a CDF ending at 0 is fine
    assert run("WeightedMultiSampling", {"z": np.zeros(3, np.float32)}, ["d"])[0].shape == (0,)


def test_weighted_multi_sampling_seeded_and_advancing():
    cdf = np.cumsum(np.ones(20, np.float32))
    (a,) = run("WeightedMultiSampling", {"cdf": cdf}, ["a"], num_samples=40, seed=11)
    (b,) = run("WeightedMultiSampling", {"cdf": cdf}, ["b"], num_samples=40, seed=11)
    np.testing.assert_array_equal(a, b)
    net = core.Net("multi_sampler")
    net.WeightedMultiSampling(["cdf"], ["idx"], num_samples=40, seed=11)
    workspace.CreateNet(net)
    workspace.RunNet(net)
    first = workspace.FetchBlob("idx")
    np.testing.assert_array_equal(first, a)
    workspace.RunNet(net)
    assert not np.array_equal(first, workspace.FetchBlob("idx"))
    assert core.GradientRegistry.GetGradientForOp(
        core.CreateOperator("WeightedMultiSampling", ["cdf"], ["idx"]), ["idx_grad"]) == ([], [None])


def test_weighted_multi_sampling_bad_input():
    op = "op WeightedMultiSampling #0: "
    raises(ValueError, op + r"input 0 blob 'w' of shape \(3,\) float32 \(the cumulative distribution\): "
           r"value 1 at position 2 must be finite and >= the one before it \(2\)", "WeightedMultiSampling",
           {"w": np.array([1, 2, 1], np.float32)}, ["idx"], num_samples=1)
    raises(ValueError, op + r"input 0 blob 'w' .*value -1 at position 0 must be finite and >= 0 \(0\)",
           "WeightedMultiSampling", {"w": np.array([-1, 2], np.float32)}, ["idx"], num_samples=1)
    raises(ValueError, op + r"input 0 blob 'w' .*value nan at position 1",
           "WeightedMultiSampling", {"w": np.array([1, np.nan], np.float32)}, ["idx"], num_samples=1)
    raises(ValueError, op + r"input 0 blob 'w' .*value inf at position 1",
           "WeightedMultiSampling", {"w": np.array([1, np.inf], np.float32)}, ["idx"])
    raises(ValueError, op + r"input 0 blob 'w' of shape \(2,\) float32 \(the cumulative distribution\) ends "
           r"at 0: there is nothing to draw", "WeightedMultiSampling", {"w": np.zeros(2, np.float32)},
           ["idx"], num_samples=1)
    raises(ValueError, op + r"input 0 blob 'w' must have 1 dims?",
           "WeightedMultiSampling", {"w": np.ones((2, 2), np.float32)}, ["idx"])
    raises(TypeError, op + r"input 0 blob 'w' must be float32",
           "WeightedMultiSampling", {"w": np.ones(2, np.int32)}, ["idx"])
    raises(ValueError, op + r"the output's shape is given by input 1 blob 's': do not pass the argument "
           r"num_samples too", "WeightedMultiSampling", {"w": np.ones(2, np.float32), "s": np.ones(2)},
           ["idx"], num_samples=2)
    raises(ValueError, op + r"argument num_samples must be in \[0, 2147483647\], got -1",
           "WeightedMultiSampling", {"w": np.ones(2, np.float32)}, ["idx"], num_samples=-1)
    workspace.FeedBlob("idx", np.array([7], np.int32))
    raises(ValueError, op, "WeightedMultiSampling", {"w": np.array([2, 1], np.float32)}, ["idx"],
           num_samples=3)
    assert workspace.FetchBlob("idx").tolist() == [7]  # a refused run leaves the output as it was


# ---------------------------------------------------------------- Adagrad
def ref_adagrad(w, h, g, lr, eps=1e-5, decay=1.0, weight_decay=0.0):
    w, h, g = (a.astype(np.float64) for a in (w, h, g))
    g = g + weight_decay * w
    nh = decay * h + g * g
    return w + lr * g / (np.sqrt(nh) + eps), nh


@pytest.mark.parametrize("eps,decay", [(1e-5, 1.0), (1e-2, 0.9)])
def test_adagrad_matches_numpy(rng, eps, decay):
    w, g = f32(rng, 4, 3), f32(rng, 4, 3)
    h = np.abs(f32(rng, 4, 3))
    lr = np.array([-0.1], np.float32)
    nw, nh = run("Adagrad", {"w": w, "h": h, "g": g, "lr": lr}, ["nw", "nh"], epsilon=eps, decay=decay)
    rw, rh = ref_adagrad(w, h, g, -0.1, eps, decay)
    np.testing.assert_allclose(nw, rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nh, rh, rtol=1e-5, atol=1e-6)


def test_adagrad_in_place_and_repeated(rng):
    w, h = f32(rng, 10), np.zeros(10, np.float32)
    rw, rh = w.astype(np.float64), h.astype(np.float64)
    workspace.FeedBlob("w", w)
    workspace.FeedBlob("h", h)
    workspace.FeedBlob("lr", np.array([-0.05], np.float32))
    net = core.Net("adagrad_steps")
    net.Adagrad(["w", "h", "g", "lr"], ["w", "h"])
    for step in range(3):
        g = f32(rng, 10)
        workspace.FeedBlob("g", g)
        workspace.RunNetOnce(net)
        rw, rh = ref_adagrad(rw, rh, g, -0.05)
    np.testing.assert_allclose(workspace.FetchBlob("w"), rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("h"), rh, rtol=1e-5, atol=1e-6)


def test_adagrad_has_no_gradient():
    op = core.CreateOperator("Adagrad", ["w", "h", "g", "lr"], ["w", "h"])
    assert_must_not_differentiate(op, 4)


def test_adagrad_bad_input(rng):
    w = f32(rng, 3)
    raises(ValueError,
           r"op Adagrad #0: input 2 blob 'g' must have the shape of input 0 blob 'w' \(3,\) float32",
           "Adagrad", {"w": w, "h": w, "g": f32(rng, 4), "lr": np.array([-1], np.float32)}, ["w", "h"])
    raises(ValueError, r"op Adagrad #0: input 3 blob 'lr2' \(the learning rate\) must hold one value",
           "Adagrad", {"w": w, "h": w, "g": w, "lr2": np.array([-1, 1], np.float32)}, ["w", "h"])
    raises(TypeError, r"op Adagrad #0: input 1 blob 'hi' must be float32",
           "Adagrad", {"w": w, "hi": np.zeros(3, np.int32), "g": w, "lr": np.array([-1], np.float32)},
           ["w", "h"])
    raises(ValueError, r"op Adagrad #0: argument epsilon must be finite and >= 0",
           "Adagrad", {"w": w, "h": w, "g": w, "lr": np.array([-1], np.float32)}, ["w", "h"], epsilon=-1.0)


@pytest.mark.parametrize("shape", [(4, 3), (1,), (0, 5), (7,)])
@pytest.mark.parametrize("decay,weight_decay", [(1.0, 0.0), (0.9, 0.25)])
def test_adagrad_effective_lr_and_update_outputs(rng, shape, decay, weight_decay):
    # the optional outputs: the per-element rate lr / (sqrt(h') + eps) and the step it gives
    w, g, h = f32(rng, *shape), f32(rng, *shape), np.abs(f32(rng, *shape))
    lr, eps = np.array([-0.2], np.float32), 1e-3
    feeds = {"w": w, "h": h, "g": g, "lr": lr}
    rw, rh = ref_adagrad(w, h, g, -0.2, eps, decay, weight_decay)
    g_used = g.astype(np.float64) + weight_decay * w
    r_elr = -0.2 / (np.sqrt(rh) + eps)
    nw, nh, elr = run("Adagrad", feeds, ["nw", "nh", "elr"], epsilon=eps, decay=decay,
                      weight_decay=weight_decay)
    for got, ref in ((nw, rw), (nh, rh), (elr, r_elr)):
        assert got.shape == shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    nw4, nh4, elr4, upd = run("Adagrad", feeds, ["nw4", "nh4", "elr4", "upd"], epsilon=eps, decay=decay,
                              weight_decay=weight_decay)
    np.testing.assert_allclose(upd, r_elr * g_used, rtol=1e-5, atol=1e-6)
    # the same kernel: the three- and four-output forms agree bitwise, and PARAM is param + update
    for a, b in ((nw, nw4), (nh, nh4), (elr, elr4)):
        assert np.array_equal(a, b)
    assert np.array_equal(nw4, w + upd)


def test_adagrad_weight_decay_zero_is_bitwise_the_plain_op(rng):
    w, g, h = f32(rng, 5, 2), f32(rng, 5, 2), np.abs(f32(rng, 5, 2))
    feeds = {"w": w, "h": h, "g": g, "lr": np.array([-0.1], np.float32)}
    plain = run("Adagrad", feeds, ["a", "b"])
    zero = run("Adagrad", feeds, ["c", "d"], weight_decay=0.0)
    assert all(np.array_equal(x, y) for x, y in zip(plain, zero))
    decayed = run("Adagrad", feeds, ["e", "f"], weight_decay=0.5)
    rw, rh = ref_adagrad(w, h, g, -0.1, weight_decay=0.5)
    np.testing.assert_allclose(decayed[0], rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(decayed[1], rh, rtol=1e-5, atol=1e-6)


def test_adagrad_extra_outputs_in_place_on_param_and_moment(rng):
    w, g = f32(rng, 6), f32(rng, 6)
    h = np.abs(f32(rng, 6))
    rw, rh = ref_adagrad(w, h, g, -0.3)
    nw, nh, elr = run("Adagrad", {"w": w, "h": h, "g": g, "lr": np.array([-0.3], np.float32)},
                      ["w", "h", "elr"])
    np.testing.assert_allclose(nw, rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nh, rh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(elr, -0.3 / (np.sqrt(rh) + 1e-5), rtol=1e-5)


def test_adagrad_extra_outputs_bad_input(rng):
    w = f32(rng, 3)
    feeds = {"w": w, "h": w, "g": w, "lr": np.array([-1], np.float32)}
    raises(ValueError, r"op Adagrad #0: argument weight_decay must be finite, got nan",
           "Adagrad", feeds, ["w", "h", "e"], weight_decay=float("nan"))
    raises(ValueError, r"op Adagrad #0: input 2 and output 2 are the same blob 'g'",
           "Adagrad", feeds, ["w", "h", "g"])
    raises(ValueError, r"op Adagrad #0: outputs 2 and 3 are the same blob 'e'",
           "Adagrad", feeds, ["w", "h", "e", "e"])
    raises(ValueError, r"op Adagrad #0: input 2 blob 'g' must have the shape of input 0 blob 'w'",
           "Adagrad", {"w": w, "h": w, "g": f32(rng, 2), "lr": np.array([-1], np.float32)},
           ["w", "h", "e", "u"])
    # a failing op leaves the workspace usable
    assert run("Adagrad", feeds, ["p", "q", "e", "u"])[2].shape == (3,)
