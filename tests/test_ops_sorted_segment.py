"""Sorted-segment reductions (SortedSegmentRange{LogSumExp,LogMeanExp,Max} with infinities, NaN, ties
and empty segments too), NanCheck, Assert (csrc/ops/sorted_segment.c) and EnsureDense
(csrc/ops/util.c), with their gradient makers (recurrent/_grad_sorted.py): NumPy references
(gaps, leading empty segments, repeated indices, rank > 2 data, no rows), every gradient op against
NumPy and by finite differences (sparse gradients compared dense), bad input with exact messages
(outputs untouched), and the gradient of EnsureDense on a sparse gradient."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import f32, feed, op, run


def i32(x):
    return np.asarray(x, np.int32)


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def sorted_ref(kind, data, ids, indices=None, weights=None):
    """float32 result: per segment id s, the rows with id s accumulated in float64 in order."""
    rows = data if indices is None else data[np.asarray(indices, np.int64)]
    K = int(ids[-1]) + 1 if len(ids) else 0
    out = np.zeros((K,) + data.shape[1:], np.float32)
    for s in range(K):
        sel = np.nonzero(np.asarray(ids) == s)[0]
        if len(sel) == 0:
            continue
        seg = rows[sel].astype(np.float64)
        if weights is not None:
            seg = seg * np.asarray(weights, np.float64)[sel].reshape((-1,) + (1,) * (data.ndim - 1))
        acc = np.cumsum(seg, axis=0)[-1]
        if kind == "Mean":
            acc = acc / len(sel)
        out[s] = acc.astype(np.float32)
    return out


IDS = [[0, 0, 1, 1, 1, 2], [0, 0, 0, 0, 0, 0], [2, 2, 5, 5, 5, 7], [0, 1, 2, 3, 4, 5]]


@pytest.mark.parametrize("kind", ["Sum", "Mean"])
@pytest.mark.parametrize("ids", IDS)
@pytest.mark.parametrize("rng_op", ["SortedSegment", "SortedSegmentRange"])
def test_sorted_sum_mean(rng, kind, ids, rng_op):
    data = f32(rng, 6, 2, 3)
    feed(d=data, s=i32(ids))
    out = run(rng_op + kind, ["d", "s"], ["o"])
    assert out.shape == (ids[-1] + 1, 2, 3)
    np.testing.assert_array_equal(out, sorted_ref(kind, data, ids))


@pytest.mark.parametrize("ids", IDS)
def test_sorted_weighted_sum(rng, ids):
    data, w = f32(rng, 6, 4), f32(rng, 6)
    feed(d=data, w=w, s=i32(ids))
    np.testing.assert_array_equal(run("SortedSegmentWeightedSum", ["d", "w", "s"], ["o"]),
                                  sorted_ref("Sum", data, ids, weights=w))


@pytest.mark.parametrize("kind", ["Sum", "Mean", "WeightedSum"])
def test_sparse_sorted(rng, kind):
    data, idx, ids, w = f32(rng, 5, 3), i32([4, 0, 4, 2, 1, 4, 3]), i32([0, 0, 1, 3, 3, 3, 4]), f32(rng, 7)
    feed(d=data, i=idx, s=ids, w=w)
    ins = ["d", "w", "i", "s"] if kind == "WeightedSum" else ["d", "i", "s"]
    out = run("SparseSortedSegment" + kind, ins, ["o"])
    ref = sorted_ref("Mean" if kind == "Mean" else "Sum", data, ids, indices=idx,
                     weights=w if kind == "WeightedSum" else None)
    np.testing.assert_array_equal(out, ref)


def test_no_rows_and_zero_width(rng):
    feed(d=np.zeros((0, 3), np.float32), s=i32([]))
    assert run("SortedSegmentSum", ["d", "s"], ["o"]).shape == (0, 3)
    feed(d=np.zeros((3, 0), np.float32), s=i32([0, 1, 1]))
    assert run("SortedSegmentMean", ["d", "s"], ["o"]).shape == (2, 0)


def test_gradient_ops_against_numpy(rng):
    ids = i32([1, 1, 2, 4, 4, 4])
    g, data, w = f32(rng, 5, 3), f32(rng, 6, 3), f32(rng, 6)
    feed(g=g, s=ids, d=data, w=w, o=np.zeros((5, 3), np.float32))
    cnt = np.bincount(ids, minlength=5).astype(np.float64)
    np.testing.assert_array_equal(run("SortedSegmentSumGradient", ["g", "s"], ["x"]), g[ids])
    mean = (g[ids].astype(np.float64) / cnt[ids][:, None]).astype(np.float32)
    np.testing.assert_array_equal(run("SortedSegmentMeanGradient", ["g", "s"], ["x"]), mean)
    np.testing.assert_array_equal(run("SortedSegmentRangeSumGradient", ["d", "o", "g", "s"], ["x"]), g[ids])
    np.testing.assert_array_equal(run("SortedSegmentRangeMeanGradient", ["d", "o", "g", "s"], ["x"]), mean)
    np.testing.assert_array_equal(run("SortedSegmentWeightedSumGradient", ["w", "g", "s"], ["x"]),
                                  w[:, None] * g[ids])
    dx, dw = run("SortedSegmentWeightedSumWithMainInputGradient", ["w", "g", "s", "d"], ["x", "y"])
    np.testing.assert_array_equal(dx, w[:, None] * g[ids])
    np.testing.assert_allclose(dw, (g[ids].astype(np.float64) * data).sum(1), rtol=1e-6)
    feed(v=f32(rng, 3, 3), i=i32([2, 0, 0, 1, 2, 2]))
    v = workspace.FetchBlob("v")
    _, dw = run("SortedSegmentWeightedSumWithMainInputGradient", ["w", "g", "s", "v", "i"], ["x", "y"])
    np.testing.assert_allclose(dw, (g[ids].astype(np.float64) * v[[2, 0, 0, 1, 2, 2]]).sum(1), rtol=1e-6)


@pytest.mark.parametrize("kind", ["Sum", "Mean"])
@pytest.mark.parametrize("prefix", ["SortedSegment", "SortedSegmentRange"])
def test_fd_dense(rng, kind, prefix):
    check_grads(op(prefix + kind, ["d", "s"], ["o"]), [f32(rng, 6, 3), i32([0, 0, 1, 3, 3, 3])], indices=[0])


@pytest.mark.parametrize("gow", [0, 1])
@pytest.mark.parametrize("sparse", [False, True])
def test_fd_weighted(rng, gow, sparse):
    ids, w = i32([0, 1, 1, 1, 2]), f32(rng, 5)
    if sparse:
        o = op("SparseSortedSegmentWeightedSum", ["d", "w", "i", "s"], ["o"], grad_on_weights=gow)
        check_grads(o, [f32(rng, 4, 3), w, i32([3, 0, 3, 1, 2]), ids], indices=[0, 1] if gow else [0])
    else:
        o = op("SortedSegmentWeightedSum", ["d", "w", "s"], ["o"], grad_on_weights=gow)
        check_grads(o, [f32(rng, 5, 3), w, ids], indices=[0, 1] if gow else [0])


@pytest.mark.parametrize("kind", ["Sum", "Mean"])
def test_fd_sparse(rng, kind):
    o = op("SparseSortedSegment" + kind, ["d", "i", "s"], ["o"])
    check_grads(o, [f32(rng, 4, 2), i32([1, 1, 3, 0, 2]), i32([0, 0, 0, 2, 2])], indices=[0])
    grad_ops, g_in = G(o, ["o_grad"])
    assert isinstance(g_in[0], core.GradientSlice) and g_in[0].indices == "i"
    assert grad_ops[0].type == "SortedSegment%sGradient" % kind


def test_bad_ids_messages(rng):
    feed(d=f32(rng, 4, 2), s=i32([0, 2, 1, 3]), o=np.float32([7]))
    with pytest.raises(ValueError, match=r"SortedSegmentSum.*input 1 blob 's' \(segment_ids\) of shape "
                       r"\(4,\) int32 must be sorted: segment id 1 at position 2 is below the id 2 "
                       r"before it"):
        workspace.RunOperatorOnce(op("SortedSegmentSum", ["d", "s"], ["o"]))
    np.testing.assert_array_equal(workspace.FetchBlob("o"), [7])
    feed(s=i32([-1, 0, 0, 0]))
    with pytest.raises(ValueError, match=r"segment id -1 at position 0 is negative"):
        workspace.RunOperatorOnce(op("SortedSegmentMean", ["d", "s"], ["o"]))
    feed(s=i32([0, 0, 1]))
    with pytest.raises(ValueError, match=r"input 0 blob 'd' \(data\) of shape \(4, 2\) float32 must have "
                       r"one row per segment id: first dim 3"):
        workspace.RunOperatorOnce(op("SortedSegmentSum", ["d", "s"], ["o"]))
    feed(g=f32(rng, 2, 2), s=i32([0, 0, 2, 2]))
    with pytest.raises(ValueError, match=r"SortedSegmentSumGradient.*must have one row per segment: 3"):
        workspace.RunOperatorOnce(op("SortedSegmentSumGradient", ["g", "s"], ["x"]))
    feed(g=f32(rng, 4, 2), s=i32([0, 0, 1, 2]))
    with pytest.raises(ValueError, match=r"SortedSegmentMeanGradient.*must have one row per segment: 3"):
        workspace.RunOperatorOnce(op("SortedSegmentMeanGradient", ["g", "s"], ["x"]))
    feed(i=i32([0, 5, 1, 1]), s=i32([0, 0, 1, 1]))
    with pytest.raises(IndexError, match=r"SparseSortedSegmentSum.*'i'"):
        workspace.RunOperatorOnce(op("SparseSortedSegmentSum", ["d", "i", "s"], ["o"]))
    np.testing.assert_array_equal(workspace.FetchBlob("o"), [7])


# ------------------------------------------------------ SortedSegmentRange{LogSumExp,LogMeanExp,Max}
def range_ref(kind, data, ids):
    """float32 result: per segment id s, LogSumExp (m + log(sum(exp(x - m))), m the max, in float64;
    -inf for no rows or only -inf, +inf for a +inf, NaN for a NaN), LogMeanExp (the same less log(n) for
    n rows; -inf for no rows) or Max (NaN propagates, 0 for no rows)."""
    K = int(ids[-1]) + 1 if len(ids) else 0
    out = np.zeros((K,) + data.shape[1:], np.float64)
    for s in range(K):
        seg = data[np.asarray(ids) == s].astype(np.float64)
        if kind == "Max":
            out[s] = seg.max(0) if len(seg) else 0.0
            continue
        m = seg.max(0) if len(seg) else np.full(data.shape[1:], -np.inf)
        fin = np.isfinite(m)
        with np.errstate(invalid="ignore"):
            acc = np.exp(seg - np.where(fin, m, 0)).sum(0)
        if kind == "LogMeanExp" and len(seg):
            acc = acc / len(seg)
        out[s] = np.where(fin, np.where(fin, m, 0) + np.log(np.where(fin, acc, 1)), m)
    return out.astype(np.float32)


def range_grad_ref(kind, data, out, g, ids):
    """The gradient ops' rows: Max dOUT[s] where DATA[k] == OUT[s]; LogSumExp dOUT[s] * exp(DATA[k] - OUT[s])
    in float64 (LogMeanExp: divided by the segment's row count), the m elements equal to an infinite OUT[s]
    getting dOUT[s] / m each."""
    ids = np.asarray(ids)
    o, gs, x = out[ids].astype(np.float64), g[ids].astype(np.float64), data.astype(np.float64)
    if kind == "Max":
        return np.where(data == out[ids], g[ids], 0).astype(np.float32)
    tie = np.isinf(o) & (x == o)
    ties = np.zeros_like(o)
    count = np.ones_like(o)
    for s in np.unique(ids):
        ties[ids == s] = tie[ids == s].sum(0)
        if kind == "LogMeanExp":
            count[ids == s] = (ids == s).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tie, gs / np.maximum(ties, 1), gs / count * np.exp(x - o)).astype(np.float32)


@pytest.mark.parametrize("kind", ["LogSumExp", "LogMeanExp", "Max"])
@pytest.mark.parametrize("ids", IDS + [[0], [3]])
def test_range_lse_max(rng, kind, ids):
    data = f32(rng, len(ids), 2, 3, lo=-5, hi=5)
    feed(d=data, s=i32(ids))
    out = run("SortedSegmentRange" + kind, ["d", "s"], ["o"])
    assert out.shape == (ids[-1] + 1, 2, 3)
    np.testing.assert_allclose(out, range_ref(kind, data, ids), rtol=1e-6, atol=0)
    if kind == "Max":
        np.testing.assert_array_equal(out, range_ref(kind, data, ids))
    empty = np.setdiff1d(np.arange(ids[-1] + 1), ids)   # gaps and ids below the first: no rows
    assert (out[empty] == (0 if kind == "Max" else -np.inf)).all()


@pytest.mark.parametrize("kind", ["LogSumExp", "LogMeanExp", "Max"])
def test_range_lse_max_no_rows_and_zero_width(kind):
    feed(d=np.zeros((0, 3), np.float32), s=i32([]))
    assert run("SortedSegmentRange" + kind, ["d", "s"], ["o"]).shape == (0, 3)
    feed(d=np.zeros((3, 0), np.float32), s=i32([0, 2, 2]))
    assert run("SortedSegmentRange" + kind, ["d", "s"], ["o"]).shape == (3, 0)
    feed(d=np.zeros(3, np.float32), o=np.zeros(3, np.float32), g=np.zeros(3, np.float32))
    assert run("SortedSegmentRange%sGradient" % kind, ["d", "o", "g", "s"], ["x"]).shape == (3,)
    feed(d=np.zeros(0, np.float32), o=np.zeros(0, np.float32), g=np.zeros(0, np.float32), s=i32([]))
    assert run("SortedSegmentRange%sGradient" % kind, ["d", "o", "g", "s"], ["x"]).shape == (0,)


def test_range_lse_stable_and_special_values():
    inf, nan = np.inf, np.nan
    # one column per case: large values (exp overflows in float), tiny ones (exp underflows), only -inf,
    # -inf among finite values, +inf (with -inf), NaN, NaN with +inf
    d = np.array([[1000, -1000, -inf, -inf, inf, nan, nan, 1],
                  [1000, -1000, -inf, 0, -inf, 1, inf, 1],
                  [1000, -1000, -inf, 0, 2, 2, 3, 1]], np.float32)
    feed(d=d, s=i32([0, 0, 0]))
    out = run("SortedSegmentRangeLogSumExp", ["d", "s"], ["o"])[0]
    np.testing.assert_allclose(out[:2], [1000 + np.log(3), -1000 + np.log(3)], rtol=1e-7)
    np.testing.assert_array_equal(out[2:], np.float32([-inf, np.log(2), inf, nan, nan, 1 + np.log(3)]))
    mx = run("SortedSegmentRangeMax", ["d", "s"], ["m"])[0]
    np.testing.assert_array_equal(mx, np.float32([1000, -1000, -inf, 0, inf, nan, nan, 1]))


def test_range_gradient_ops_against_numpy(rng):
    ids = i32([1, 1, 2, 4, 4, 4])
    data, g = f32(rng, 6, 3, lo=-3, hi=3), f32(rng, 5, 3)
    for kind in ["LogSumExp", "LogMeanExp", "Max"]:
        out = range_ref(kind, data, ids)
        feed(d=data, o=out, g=g, s=ids)
        dx = run("SortedSegmentRange%sGradient" % kind, ["d", "o", "g", "s"], ["x"])
        np.testing.assert_allclose(dx, range_grad_ref(kind, data, out, g, ids), rtol=1e-6, atol=0)
    # LogSumExp: the weights exp(x - OUT) of a segment sum to 1, so with dOUT = 1 the rows sum to 1
    feed(o=range_ref("LogSumExp", data, ids), g=np.ones((5, 3), np.float32))
    dx = run("SortedSegmentRangeLogSumExpGradient", ["d", "o", "g", "s"], ["x"])
    np.testing.assert_allclose([dx[:2].sum(0), dx[2], dx[3:].sum(0)], np.ones((3, 3)), rtol=1e-6)


def test_range_max_gradient_ties():
    """Every element equal to the segment's max gets all of dOUT (Caffe2's MaxRangeReducerGradient
    compares each element with OUT); nothing where OUT is NaN; a segment of only -inf ties everywhere."""
    inf, nan = np.inf, np.nan
    d = np.array([[1, 2, nan, -inf], [1, 0, 1, -inf], [0, 2, 0, -inf], [5, 5, 5, 5]], np.float32)
    ids = i32([0, 0, 0, 1])
    feed(d=d, s=ids)
    out = run("SortedSegmentRangeMax", ["d", "s"], ["o"])
    np.testing.assert_array_equal(out, np.float32([[1, 2, nan, -inf], [5, 5, 5, 5]]))
    feed(g=np.float32([[10, 20, 30, 40], [50, 60, 70, 80]]))
    dx = run("SortedSegmentRangeMaxGradient", ["d", "o", "g", "s"], ["x"])
    np.testing.assert_array_equal(dx, np.float32([[10, 20, 0, 40], [10, 0, 0, 40], [0, 20, 0, 40],
                                                  [50, 60, 70, 80]]))


def test_range_lse_gradient_infinities():
    """Where DATA and OUT are the same infinity (inf - inf is NaN) the m such elements share dOUT equally;
    the other elements get dOUT * exp(x - OUT) (0 under a +inf); a NaN gives NaN."""
    inf, nan = np.inf, np.nan
    d = np.array([[inf, -inf, nan, 0, inf], [1, -inf, 0, -inf, -inf], [inf, -inf, 1, 0, inf],
                  [inf, -inf, 2, 0, 3]], np.float32)
    ids = i32([0, 0, 0, 1])
    feed(d=d, s=ids)
    out = run("SortedSegmentRangeLogSumExp", ["d", "s"], ["o"])
    np.testing.assert_array_equal(out, np.float32([[inf, -inf, nan, np.log(2), inf], [inf, -inf, 2, 0, 3]]))
    feed(g=np.float32([[6, 3, 1, 2, 9], [5, 4, 7, 8, 1]]))
    dx = run("SortedSegmentRangeLogSumExpGradient", ["d", "o", "g", "s"], ["x"])
    np.testing.assert_array_equal(dx, np.float32([[3, 1, nan, 1, 4.5], [0, 1, nan, 0, 0], [3, 1, nan, 1, 4.5],
                                                  [5, 4, 7, 8, 1]]))
    np.testing.assert_array_equal(dx, range_grad_ref("LogSumExp", d, out, workspace.FetchBlob("g"), ids))


@pytest.mark.parametrize("ids", [[0, 0, 1, 2, 2, 2], [0, 0, 0, 0, 0, 0], [0, 1, 2, 3, 4, 5]])
def test_fd_range_lse(rng, ids):
    # no empty segment here: its -inf would make the checker's loss infinite
    check_grads(op("SortedSegmentRangeLogSumExp", ["d", "s"], ["o"]),
                [f32(rng, 6, 3, lo=-2, hi=2), i32(ids)], indices=[0])


@pytest.mark.parametrize("ids", [[0, 0, 1, 2, 2, 2], [0, 0, 0, 0, 0, 0], [0, 1, 2, 3, 4, 5]])
def test_fd_range_lme(rng, ids):
    check_grads(op("SortedSegmentRangeLogMeanExp", ["d", "s"], ["o"]),
                [f32(rng, 6, 3, lo=-2, hi=2), i32(ids)], indices=[0])


def test_range_lme_special_values():
    """LogMeanExp = LogSumExp - log(n): stable for large and tiny values; the infinities, NaN and the
    infinite ties of the gradient as LogSumExp's; a gap gives -inf."""
    inf, nan = np.inf, np.nan
    d = np.array([[1000, -1000, -inf, -inf, inf, nan], [1000, -1000, -inf, 0, -inf, 1],
                  [1000, -1000, -inf, 0, 2, 2], [5, 5, 5, 5, 5, 5]], np.float32)
    feed(d=d, s=i32([0, 0, 0, 2]))
    out = run("SortedSegmentRangeLogMeanExp", ["d", "s"], ["o"])
    np.testing.assert_allclose(out[0, :2], [1000, -1000], rtol=1e-7)
    np.testing.assert_array_equal(out[0, 2:], np.float32([-inf, np.log(2 / 3), inf, nan]))
    np.testing.assert_array_equal(out[1], np.full(6, -inf, np.float32))
    np.testing.assert_array_equal(out[2], d[3])
    feed(g=np.ones((3, 6), np.float32))
    dx = run("SortedSegmentRangeLogMeanExpGradient", ["d", "o", "g", "s"], ["x"])
    np.testing.assert_allclose(dx[:3, :2], np.full((3, 2), 1 / 3), rtol=1e-6)
    np.testing.assert_array_equal(dx[:3, 4], np.float32([1, 0, 0]))  # the one +inf takes all of dOUT
    np.testing.assert_array_equal(dx[3], np.ones(6, np.float32))


@pytest.mark.parametrize("ids", [[0, 0, 1, 3, 3, 3], [2, 2, 2, 2, 2, 2], [0, 1, 2, 3, 4, 5]])
def test_fd_range_max(rng, ids):
    # no ties, and values 0.1 apart so that a finite-difference step never changes the argmax
    data = (rng.permutation(18).reshape(6, 3) * 0.1 - 0.9).astype(np.float32)
    check_grads(op("SortedSegmentRangeMax", ["d", "s"], ["o"]), [data, i32(ids)], indices=[0])


@pytest.mark.parametrize("kind", ["LogSumExp", "LogMeanExp", "Max"])
def test_range_lse_max_gradient_maker(rng, kind):
    o = op("SortedSegmentRange" + kind, ["d", "s"], ["o"])
    grad_ops, g_in = G(o, ["o_grad"])
    assert ([(g.type, list(g.input), list(g.output)) for g in grad_ops]
            == [("SortedSegmentRange%sGradient" % kind, ["d", "o", "o_grad", "s"], ["d_grad"])])
    assert g_in == ["d_grad", None]
    assert G(o, [None]) == ([], [None, None])
    # in a net: loss = sum(OUT ** 2) over segments with a gap (the empty segment gets no gradient rows)
    net = core.Net("rng_" + kind)
    net.SumElements([net.Mul(["o", "o"], "sq")], "loss")
    net.Proto().op.insert(0, o)
    net.AddGradientOperators(["loss"])
    data, ids = f32(rng, 5, 2), i32([0, 0, 2, 2, 2])
    feed(d=data, s=ids)
    workspace.RunNetOnce(net)
    out = workspace.FetchBlob("o")
    ref = range_grad_ref(kind, data, out, 2 * np.nan_to_num(out, neginf=0), ids)
    np.testing.assert_allclose(workspace.FetchBlob("d_grad"), ref, rtol=1e-6)


@pytest.mark.parametrize("kind", ["Sum", "Mean", "LogSumExp", "LogMeanExp", "Max"])
def test_range_gradient_takes_rows_of_another_shape(rng, kind):
    """dOUT (and OUT) with DATA's row size in another row shape (a RecurrentNetwork link gives a step
    output's gradient (1, N, D) where the op wrote (1, D)): the same gradient, in DATA's shape."""
    fwd, grad = "SortedSegmentRange" + kind, "SortedSegmentRange%sGradient" % kind
    feed(d=f32(rng, 4, 6), s=i32([0, 0, 1, 1]))
    out = run(fwd, ["d", "s"], ["o"])
    g = f32(rng, 2, 6)
    feed(g=g)
    want = run(grad, ["d", "o", "g", "s"], ["y"])
    feed(g=g.reshape(2, 2, 3), o=out.reshape(2, 1, 6))
    got = run(grad, ["d", "o", "g", "s"], ["y"])
    assert got.shape == (4, 6)
    np.testing.assert_array_equal(got, want)
    feed(d=f32(rng, 4, 2, 3), o=out.reshape(2, 6))
    np.testing.assert_array_equal(run(grad, ["d", "o", "g", "s"], ["y"]).shape, (4, 2, 3))


@pytest.mark.parametrize("kind", ["LogSumExp", "LogMeanExp", "Max"])
def test_range_lse_max_bad_input(rng, kind):
    fwd, grad = "SortedSegmentRange" + kind, "SortedSegmentRange%sGradient" % kind
    feed(d=f32(rng, 4, 2), s=i32([0, 2, 1, 3]), x=np.float32([7]), y=np.float32([8]))
    with pytest.raises(ValueError, match=r"%s #0: input 1 blob 's' \(segment_ids\) of shape \(4,\) int32 "
                       r"must be sorted: segment id 1 at position 2 is below the id 2 before it" % fwd):
        workspace.RunOperatorOnce(op(fwd, ["d", "s"], ["x"]))
    feed(o=f32(rng, 4, 2), g=f32(rng, 4, 2))
    with pytest.raises(ValueError, match=r"%s #0: input 3 blob 's' \(segment_ids\).*must be sorted" % grad):
        workspace.RunOperatorOnce(op(grad, ["d", "o", "g", "s"], ["y"]))
    feed(s=i32([-1, 0, 0, 0]))
    with pytest.raises(ValueError, match=r"%s #0: .*segment id -1 at position 0 is negative" % fwd):
        workspace.RunOperatorOnce(op(fwd, ["d", "s"], ["x"]))
    feed(s=i32([0, 0, 1, 2]), o=f32(rng, 2, 2), g=f32(rng, 2, 2))
    with pytest.raises(ValueError, match=r"%s #0: input 2 blob 'g' \(the output gradient\) of shape "
                       r"\(2, 2\) float32 must have one row per segment: 3 \(the last id of input 3 blob 's'"
                       % grad):
        workspace.RunOperatorOnce(op(grad, ["d", "o", "g", "s"], ["y"]))
    feed(o=f32(rng, 3, 3), g=f32(rng, 3, 2))
    with pytest.raises(ValueError, match=r"%s #0: input 1 blob 'o' \(the forward output\) of shape "
                       r"\(3, 3\) float32 must have the rows of input 2 blob 'g' \(the output gradient\) "
                       r"\(3, 2\)" % grad):
        workspace.RunOperatorOnce(op(grad, ["d", "o", "g", "s"], ["y"]))
    feed(d=f32(rng, 3, 2), o=f32(rng, 3, 2))
    with pytest.raises(ValueError, match=r"%s #0: input 0 blob 'd' \(data\) of shape \(3, 2\) float32 "
                       r"must have one row per segment id: first dim 4" % grad):
        workspace.RunOperatorOnce(op(grad, ["d", "o", "g", "s"], ["y"]))
    feed(d=f32(rng, 4, 3))
    with pytest.raises(ValueError, match=r"%s #0: input 0 blob 'd' of shape \(4, 3\) float32 must have rows "
                       r"of the size of input 2 blob 'g' of shape \(3, 2\) float32 \(the product of the dims "
                       r"after the first\)" % grad):
        workspace.RunOperatorOnce(op(grad, ["d", "o", "g", "s"], ["y"]))
    feed(d=np.zeros((4, 2), np.int32))
    with pytest.raises(TypeError, match=r"%s #0: input 0 blob 'd' must be float32, got \(4, 2\) int32" % fwd):
        workspace.RunOperatorOnce(op(fwd, ["d", "s"], ["x"]))
    np.testing.assert_array_equal(workspace.FetchBlob("x"), [7])
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [8])
    # the dtype is checked at net creation already
    net = core.Net("bad_" + kind)
    net.Proto().op.extend([op(fwd, ["d", "s"], ["x"])])
    with pytest.raises(TypeError, match=r"%s #0: input 0 blob 'd' must be float32" % fwd):
        workspace.CreateNet(net)


# ---------------------------------------------------------------- NanCheck / Assert / EnsureDense
def test_nan_check(rng):
    x = f32(rng, 3, 4)
    feed(x=x, z=i32([1]))
    np.testing.assert_array_equal(run("NanCheck", ["x", "z"], ["y"]), x)
    workspace.RunOperatorOnce(op("NanCheck", ["x"], ["x"]))
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x)
    for bad, word in [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")]:
        xb = x.copy()
        xb[2, 1] = bad
        xb[2, 3] = np.nan
        feed(x=xb, y=np.float32([5]))
        with pytest.raises(ValueError, match=r"NanCheck.*input 0 blob 'x' of shape \(3, 4\) float32 "
                           r"contains %s: first at flat index 9 \(row 2\); other inputs: "
                           r"input 1 blob 'z' of shape \(1,\) int32" % word):
            workspace.RunOperatorOnce(op("NanCheck", ["x", "z"], ["y"]))
        np.testing.assert_array_equal(workspace.FetchBlob("y"), [5])
    grad_ops, g_in = G(op("NanCheck", ["x", "z"], ["y"]), ["y_grad"])
    assert ([(g.type, list(g.input), list(g.output)) for g in grad_ops]
            == [("NanCheck", ["y_grad"], ["x_grad"])])
    assert g_in == ["x_grad", None]


def test_enforce_finite(rng):
    """As Caffe2's EnforceFinite: no outputs; a NaN or an infinity anywhere fails (a ValueError, which is a
    RuntimeError too), an empty X passes; no gradient."""
    x = f32(rng, 3, 4)
    feed(x=x, e=np.zeros((0, 2), np.float32))
    workspace.RunOperatorOnce(op("EnforceFinite", ["x"], []))
    workspace.RunOperatorOnce(op("EnforceFinite", ["e"], []))
    for pos, bad, word in [((0, 0), np.nan, "NaN"), ((2, 3), np.inf, "inf"), ((1, 2), -np.inf, "-inf")]:
        xb = x.copy()
        xb[pos] = bad
        feed(x=xb)
        flat = pos[0] * 4 + pos[1]
        with pytest.raises(RuntimeError, match=r"op EnforceFinite #0: input 0 blob 'x' of shape \(3, 4\) "
                           r"float32 contains %s: first at flat index %d \(row %d\)$" % (word, flat, pos[0])):
            workspace.RunOperatorOnce(op("EnforceFinite", ["x"], []))
    assert G(op("EnforceFinite", ["x"], []), []) == ([], [None])
    net = core.Net("ef")
    net.EnforceFinite(["x"], [])
    with pytest.raises(ValueError, match=r"EnforceFinite #0: input 0 blob 'x' of shape \(3, 4\) float32 "
                       r"contains"):
        workspace.RunNetOnce(net)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_assert(dtype):
    feed(x=np.array([[1, 2], [3, -1]], dtype))
    workspace.RunOperatorOnce(op("Assert", ["x"], [], error_msg="fine"))
    feed(x=np.array([[1, 2], [0, 0]], dtype))
    with pytest.raises(RuntimeError, match=r"Assert.*input 0 blob 'x' of shape \(2, 2\) \w+ has 0 at flat "
                       r"index 2; error_msg: 'ids must be positive'"):
        workspace.RunOperatorOnce(op("Assert", ["x"], [], error_msg="ids must be positive"))
    feed(x=np.zeros(0, dtype))
    workspace.RunOperatorOnce(op("Assert", ["x"], []))


def test_ensure_dense(rng):
    x = f32(rng, 4, 3)
    feed(x=x)
    np.testing.assert_array_equal(run("EnsureDense", ["x"], ["y"]), x)
    o = op("EnsureDense", ["x"], ["y"])
    assert G(o, ["y_grad"]) == ([], ["y_grad"])
    grad_ops, g_in = G(o, [core.GradientSlice("idx", "vals")])
    assert [(g.type, list(g.input), list(g.output)) for g in grad_ops] == [
        ("SparseToDense", ["idx", "vals", "x"], ["x_grad"])]
    feed(idx=i32([2, 0, 2]), vals=f32(rng, 3, 3))
    for g in grad_ops:
        workspace.RunOperatorOnce(g)
    v = workspace.FetchBlob("vals")
    ref = np.zeros((4, 3), np.float32)
    np.add.at(ref, [2, 0, 2], v)
    np.testing.assert_allclose(workspace.FetchBlob("x_grad"), ref, rtol=1e-6)


def test_ensure_dense_in_a_net_with_gather(rng):
    """Gather after EnsureDense gives a sparse gradient; the backward pass makes it dense."""
    net = core.Net("ed")
    net.EnsureDense(["emb"], ["emb_d"])
    net.Gather(["emb_d", "ids"], ["rows"])
    net.SumElements(["rows"], ["loss"])
    net.AddGradientOperators(["loss"])
    emb = f32(rng, 5, 2)
    feed(emb=emb, ids=i32([1, 1, 4]))
    workspace.RunNetOnce(net)
    ref = np.zeros((5, 2), np.float32)
    ref[1] = 2
    ref[4] = 1
    np.testing.assert_array_equal(workspace.FetchBlob("emb_grad"), ref)
