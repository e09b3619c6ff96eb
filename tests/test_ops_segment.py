"""Unique, FindDuplicateElements, UnsortedSegment{Sum,Mean,WeightedSum},
SparseUnsortedSegment{Sum,Mean,WeightedSum} and their gradient ops (csrc/ops/segment.c) and gradient
makers (recurrent/_grad_segment.py): NumPy references (ids of rank 0, 1 and 2, duplicates, empty,
num_segments), first-occurrence order, bitwise order of summation, gradients by finite
differences and through core.Net, bad input with exact messages (at run and
at net creation), and the identity the deduplication of sparse gradients
relies on: Unique + UnsortedSegmentSum scattered into a table == np.add.at."""


import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import close, f32, feed, op, run  # the same helpers

I32 = np.iinfo(np.int32)


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def i32(x):
    return np.asarray(x, np.int32)


# ---------------------------------------------------------------- references
def unique_ref(x):
    """Distinct values of x (flattened) in order of first occurrence, and the remapping."""
    flat = np.asarray(x, np.int64).ravel()
    vals, first = np.unique(flat, return_index=True)
    order = np.argsort(first, kind="stable")
    uniq = vals[order]
    pos = {int(v): i for i, v in enumerate(uniq)}
    remap = np.array([pos[int(v)] for v in flat], np.int64).reshape(np.shape(x))
    return uniq.astype(np.int32), remap.astype(np.int32)


def segment_ref(data, ids, num_segments=None, mean=False):
    """float64 reference: OUT (S,) + data.shape[ids.ndim:]."""
    ids = np.asarray(ids)
    rest = data.shape[ids.ndim:]
    S = num_segments if num_segments is not None else (int(ids.max()) + 1 if ids.size else 0)
    rows = data.reshape((ids.size,) + rest).astype(np.float64)
    out = np.zeros((S,) + rest)
    np.add.at(out, ids.ravel(), rows)
    if mean:
        counts = np.bincount(ids.ravel(), minlength=S).reshape((S,) + (1,) * len(rest))
        out = np.where(counts > 0, out / np.maximum(counts, 1), 0.0)
    return out


def segment_sum_in_order_f32(data, ids, S):
    """float32, rows added one by one in order: what the op promises bitwise."""
    rest = data.shape[ids.ndim:]
    rows = data.reshape((ids.size,) + rest)
    out = np.zeros((S,) + rest, np.float32)
    for k, s in enumerate(ids.ravel()):
        out[s] = out[s] + rows[k]
    return out


# ---------------------------------------------------------------- Unique
@pytest.mark.parametrize("shape,hi", [((10,), 4), ((3, 5), 6), ((2, 3, 4), 3), ((), 9), ((0,), 5),
                                      ((2, 0), 5), ((50,), 1000), ((1,), 1), ((7, 1), 2)])
def test_unique(rng, shape, hi):
    x = rng.randint(-hi, hi, shape).astype(np.int32)
    feed(x=x)
    u, r = run("Unique", ["x"], ["u", "r"])
    uref, rref = unique_ref(x)
    assert u.dtype == np.int32 and r.dtype == np.int32
    assert u.shape == uref.shape and r.shape == x.shape
    np.testing.assert_array_equal(u, uref)
    np.testing.assert_array_equal(r, rref)
    np.testing.assert_array_equal(u[r], x)
    # one output: the same unique values
    np.testing.assert_array_equal(run("Unique", ["x"], ["u1"]), uref)


def test_unique_first_occurrence_order_and_extremes():
    x = np.array([7, I32.min, 7, 0, I32.max, -1, 0, I32.min, 3, I32.max], np.int32)
    feed(x=x)
    u, r = run("Unique", ["x"], ["u", "r"])
    np.testing.assert_array_equal(u, [7, I32.min, 0, I32.max, -1, 3])
    np.testing.assert_array_equal(r, [0, 1, 0, 2, 3, 4, 2, 1, 5, 3])


def test_unique_many_values_and_colliding_patterns(rng):
    # multiples of large powers of two (what a poor hash would put in one slot), many repeats
    base = np.concatenate([np.arange(3000) * 65536, np.arange(3000) * 1024, -np.arange(3000) * 4096])
    x = rng.permutation(np.concatenate([base, base[::3], base[::7]]) % (2 ** 31)).astype(np.int32)
    feed(x=x)
    u, r = run("Unique", ["x"], ["u", "r"])
    uref, rref = unique_ref(x)
    np.testing.assert_array_equal(u, uref)
    np.testing.assert_array_equal(r, rref)


def test_unique_large(rng):
    # 600k indices with about 300k distinct values (the hash table grows several times). Its speed is not
    # asserted here (no timed unit tests): an O(K^2) scan would make this test take about a minute.
    x = np.concatenate([rng.permutation(300000), rng.randint(0, 300000, 300000)]).astype(np.int32)
    feed(x=x)
    u, r = run("Unique", ["x"], ["u", "r"])
    assert len(u) == len(np.unique(x))
    np.testing.assert_array_equal(u[r], x)
    _, first = np.unique(x, return_index=True)
    np.testing.assert_array_equal(u, x[np.sort(first)])


def test_unique_replaces_stale_outputs_and_reruns(rng):
    feed(u=np.full((4, 4), 9.0, np.float32), r=np.zeros(3, np.float32))
    for n in (12, 3, 0, 12):
        x = rng.randint(0, 5, n).astype(np.int32)
        feed(x=x)
        u, r = run("Unique", ["x"], ["u", "r"])
        uref, rref = unique_ref(x)
        np.testing.assert_array_equal(u, uref)
        np.testing.assert_array_equal(r, rref)
        assert u.dtype == np.int32 and r.dtype == np.int32


def test_unique_has_no_gradient():
    o = op("Unique", ["x"], ["u", "r"])
    ops, g = G(o, ["u_grad", "r_grad"])
    assert ops == [] and g == [None]


def test_unique_bad_inputs(rng):
    feed(x=f32(rng, 4))
    with pytest.raises(TypeError, match=r"op Unique #0: input 0 blob 'x' must be int32, got \(4,\) float32"):
        run("Unique", ["x"], ["u", "r"])
    with pytest.raises(KeyError, match=r"op Unique #0: input 0 blob 'nothing' does not exist"):
        workspace.RunOperatorOnce(op("Unique", ["nothing"], ["u"]))
    with pytest.raises(ValueError, match=r"op Unique #0: outputs 0 and 1 are the same blob 'u'"):
        workspace.RunOperatorOnce(op("Unique", ["x"], ["u", "u"]))
    with pytest.raises(ValueError, match=r"op Unique #0: input 0 and output 1 are the same blob 'x'"):
        workspace.RunOperatorOnce(op("Unique", ["x"], ["u", "x"]))
    # the workspace is still usable
    feed(x=np.array([2, 2, 1], np.int32))
    np.testing.assert_array_equal(run("Unique", ["x"], ["u"]), [2, 1])


# ---------------------------------------------------------------- FindDuplicateElements
def find_dup_ref(x):
    """Caffe2's: the positions whose value an earlier position holds (an unordered_map keyed by value:
    -0.0 == 0.0, a NaN equals nothing)."""
    seen, out = set(), []
    for j, v in enumerate(x.tolist()):
        if v != v:
            continue
        if v in seen:
            out.append(j)
        seen.add(v)
    return np.array(out, np.int32)


@pytest.mark.parametrize("n,hi", [(10, 4), (0, 5), (1, 1), (7, 1), (50, 1000), (2000, 300)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_find_duplicate_elements(rng, n, hi, dtype):
    x = (rng.randint(-hi, hi, n) / (2.0 if dtype == np.float32 else 1)).astype(dtype)
    feed(x=x)
    y = run("FindDuplicateElements", ["x"], ["y"])
    assert y.dtype == np.int32 and y.ndim == 1
    np.testing.assert_array_equal(y, find_dup_ref(x))


def test_find_duplicate_elements_caffe2_example_and_float_rules():
    feed(x=np.array([8, 2, 1, 1, 7, 8, 1], np.float32))  # Caffe2's doc example
    np.testing.assert_array_equal(run("FindDuplicateElements", ["x"], ["y"]), [3, 5, 6])
    feed(x=np.array([0.0, -0.0, np.nan, np.nan, np.inf, -np.inf, np.inf, 1e-45, -1e-45], np.float32))
    np.testing.assert_array_equal(run("FindDuplicateElements", ["x"], ["y"]), [1, 6])  # -0 == 0; NaNs unique
    x = np.array([I32.min, I32.max, 0, I32.min, -1, I32.max, -1], np.int32)
    feed(x=x)
    np.testing.assert_array_equal(run("FindDuplicateElements", ["x"], ["y"]), [3, 5, 6])
    feed(x=np.arange(1000, dtype=np.int32) * 65536)  # all unique, values a poor hash would collide
    assert run("FindDuplicateElements", ["x"], ["y"]).shape == (0,)


def test_find_duplicate_elements_bad_input():
    keep = np.full(2, 7.0, np.float32)
    feed(y=keep, x2=np.ones((2, 2), np.int32), s=np.int32(3))
    for x, msg in (("x2", "op FindDuplicateElements #0: input 0 blob 'x2' (data) must be 1-D, got (2, 2) "
                          "int32"),
                   ("s", "op FindDuplicateElements #0: input 0 blob 's' (data) must be 1-D, got () int32")):
        with pytest.raises(ValueError) as info:
            workspace.RunOperatorOnce(op("FindDuplicateElements", [x], ["y"]))
        assert str(info.value) == msg
    assert workspace.FetchBlob("y").tobytes() == keep.tobytes()
    ops, g = G(op("FindDuplicateElements", ["x"], ["y"]), ["y_grad"])
    assert ops == [] and g == [None]  # Caffe2: SHOULD_NOT_DO_GRADIENT


# ---------------------------------------------------------------- UnsortedSegmentSum / Mean: forward
SEG_CASES = [  # (ids shape, rest of the data shape, id range, num_segments or None)
    ((6,), (3,), 4, None), ((6,), (), 3, None), ((5,), (2, 3), 5, None), ((3, 4), (2,), 5, None),
    ((3, 4), (), 2, None), ((2, 3), (2, 2), 3, 7), ((8,), (4,), 3, 3), ((), (3,), 4, None), ((), (), 2, 5),
    ((1,), (5,), 1, None), ((4,), (0,), 3, None), ((0,), (3,), 1, None), ((0,), (3,), 1, 4),
    ((2, 0), (3,), 1, None),
]


@pytest.mark.parametrize("ids_shape,rest,hi,nseg", SEG_CASES)
@pytest.mark.parametrize("kind", ["UnsortedSegmentSum", "UnsortedSegmentMean"])
def test_segment_forward(rng, kind, ids_shape, rest, hi, nseg):
    ids = rng.randint(0, hi, ids_shape).astype(np.int32)
    data = f32(rng, *(ids_shape + rest), lo=-2, hi=2)
    feed(d=data, i=ids)
    args = {} if nseg is None else {"num_segments": nseg}
    y = run(kind, ["d", "i"], ["y"], **args)
    ref = segment_ref(data, ids, nseg, mean=kind.endswith("Mean"))
    assert y.dtype == np.float32 and not np.isnan(y).any()
    close(y, ref, 2e-6)


@pytest.mark.parametrize("kind", ["UnsortedSegmentSum", "UnsortedSegmentMean"])
def test_segment_num_segments_default_minus_one_and_empty_segments_zero(rng, kind):
    data = f32(rng, 4, 3)
    ids = np.array([5, 1, 5, 1], np.int32)
    feed(d=data, i=ids)
    y = run(kind, ["d", "i"], ["y"])
    assert y.shape == (6, 3)
    np.testing.assert_array_equal(run(kind, ["d", "i"], ["y2"], num_segments=-1), y)
    for s in (0, 2, 3, 4):  # segments without rows: exact zeros, no NaN from 0/0
        assert (y[s] == 0).all() and not np.signbit(y[s]).any()
    y9 = run(kind, ["d", "i"], ["y9"], num_segments=9)
    assert y9.shape == (9, 3)
    np.testing.assert_array_equal(y9[:6], y)
    assert (y9[6:] == 0).all()
    # empty ids and num_segments=0
    feed(d0=np.zeros((0, 3), np.float32), i0=np.zeros(0, np.int32))
    assert run(kind, ["d0", "i0"], ["e"]).shape == (0, 3)
    assert run(kind, ["d0", "i0"], ["e"], num_segments=0).shape == (0, 3)


def test_segment_sum_bitwise_in_order(rng):
    # many rows per segment with mixed magnitudes: another summation order gives other bits
    ids = rng.randint(0, 5, (40, 3)).astype(np.int32)
    data = (rng.standard_normal((40, 3, 7)) * 10.0 ** rng.randint(-3, 4, (40, 3, 1))).astype(np.float32)
    feed(d=data, i=ids)
    y = run("UnsortedSegmentSum", ["d", "i"], ["y"])
    np.testing.assert_array_equal(y, segment_sum_in_order_f32(data, ids, 5))
    # Mean: the same sums divided by the counts
    m = run("UnsortedSegmentMean", ["d", "i"], ["m"])
    counts = np.bincount(ids.ravel(), minlength=5).astype(np.float32)
    np.testing.assert_array_equal(m, y / counts[:, None])


def test_segment_mean_exact_values():
    data = np.array([[1, 2], [3, 4], [5, 6], [10, 20]], np.float32)
    feed(d=data, i=np.array([2, 0, 2, 2], np.int32))
    m = run("UnsortedSegmentMean", ["d", "i"], ["m"], num_segments=4)
    third = [np.float32(16) / np.float32(3), np.float32(28) / np.float32(3)]
    np.testing.assert_array_equal(m, np.array([[3, 4], [0, 0], third, [0, 0]], np.float32))


@pytest.mark.parametrize("kind", ["UnsortedSegmentSum", "UnsortedSegmentMean"])
def test_segment_replaces_stale_output_and_reruns(rng, kind):
    feed(y=np.full((2, 9), 7.0, np.float32))
    o = op(kind, ["d", "i"], ["y"])
    for n, hi in ((5, 3), (2, 6), (7, 1)):
        ids = rng.randint(0, hi, n).astype(np.int32)
        data = f32(rng, n, 4)
        feed(d=data, i=ids)
        workspace.RunOperatorOnce(o)
        close(workspace.FetchBlob("y"), segment_ref(data, ids, mean=kind.endswith("Mean")), 2e-6)


# ---------------------------------------------------------------- gradients
GRAD_CASES = [((6,), (3,), 3, None), ((3, 4), (2,), 4, None), ((2, 3), (), 2, 5), ((5,), (2, 2), 2, None)]


@pytest.mark.parametrize("ids_shape,rest,hi,nseg", GRAD_CASES)
@pytest.mark.parametrize("kind", ["UnsortedSegmentSum", "UnsortedSegmentMean"])
def test_segment_gradient_finite_differences(rng, kind, ids_shape, rest, hi, nseg):
    ids = rng.randint(0, hi, ids_shape).astype(np.int32)
    data = f32(rng, *(ids_shape + rest))
    args = {} if nseg is None else {"num_segments": nseg}
    check_grads(op(kind, ["d", "i"], ["y"], **args), [data, ids], indices=[0])


def test_segment_gradient_makers():
    o = op("UnsortedSegmentSum", ["d", "i"], ["y"], num_segments=4)
    ops, g = G(o, ["y_grad"])
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == \
        [("UnsortedSegmentSumGradient", ["y_grad", "i"], ["d_grad"])]
    assert g == ["d_grad", None]
    o = op("UnsortedSegmentMean", ["d", "i"], ["y"])
    ops, g = G(o, ["y_grad"])
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == \
        [("UnsortedSegmentMeanGradient", ["y_grad", "i"], ["d_grad"])]
    assert g == ["d_grad", None]
    assert G(o, [None]) == ([], [None, None])
    # a sparse output gradient is made dense (shaped like the output) before the maker sees it
    ops, g = G(o, [core.GradientSlice("gi", "gv")])
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == \
        [("SparseToDense", ["gi", "gv", "y"], ["y_grad_dense"]),
         ("UnsortedSegmentMeanGradient", ["y_grad_dense", "i"], ["d_grad"])]
    assert G(op("UnsortedSegmentMeanGradient", ["g", "i"], ["dd"]), ["dd_grad"]) == ([], [None, None])


@pytest.mark.parametrize("ids_shape,rest", [((7,), (3,)), ((2, 3), (2, 2)), ((4,), ()), ((), (2,)),
                                            ((0,), (3,))])
def test_segment_mean_gradient_op(rng, ids_shape, rest):
    S = 4
    ids = rng.randint(0, S, ids_shape).astype(np.int32)
    g = f32(rng, S, *rest)
    feed(g=g, i=ids)
    dd = run("UnsortedSegmentMeanGradient", ["g", "i"], ["dd"])
    counts = np.bincount(ids.ravel(), minlength=S)
    ref = g.astype(np.float64)[ids] / counts[ids].reshape(ids.shape + (1,) * len(rest))
    close(dd, ref, 1e-6)


def test_segment_backward_through_net(rng):
    # loss = sum(UnsortedSegmentSum(x, ids) * w) + sum(UnsortedSegmentMean(x, ids) * w):
    # dx[k] = w[ids[k]] * (1 + 1/c), c the count of ids[k]
    ids = np.array([[0, 2, 2], [3, 0, 2]], np.int32)
    x = f32(rng, 2, 3, 4)
    w = f32(rng, 5, 4)
    net = core.Net("seg_bwd")
    s = net.UnsortedSegmentSum(["x", "ids"], "s", num_segments=5)
    m = net.UnsortedSegmentMean(["x", "ids"], "m", num_segments=5)
    l1 = net.SumElements(net.Mul([s, "w"], "sw"), "l1")
    loss = net.Sum([l1, net.SumElements(net.Mul([m, "w"], "mw"), "l2")], "loss")
    gmap = net.AddGradientOperators([loss])
    feed(x=x, ids=ids, w=w)
    workspace.RunNetOnce(net)
    counts = np.bincount(ids.ravel(), minlength=5)
    ref = w[ids] * (1.0 + 1.0 / counts[ids])[..., None]
    close(workspace.FetchBlob(str(gmap["x"])), ref, 1e-6)
    assert "ids" not in map(str, gmap)  # the ids get no gradient
    assert {"UnsortedSegmentSumGradient", "UnsortedSegmentMeanGradient"} <= \
        {p.type for p in net.Proto().op if p.is_gradient_op}


# ---------------------------------------------------------------- the deduplication identity
@pytest.mark.parametrize("ids_shape", [(12,), (3, 5), (1,), (0,), (2, 0), ()])
@pytest.mark.parametrize("zero_table", [True, False])
def test_unique_then_segment_sum_equals_add_at(rng, ids_shape, zero_table):
    V, D = 6, 3
    indices = rng.randint(0, V, ids_shape).astype(np.int32)
    values = f32(rng, *(ids_shape + (D,)))
    table = np.zeros((V, D), np.float32) if zero_table else f32(rng, V, D)
    feed(indices=indices, values=values)
    u, r = run("Unique", ["indices"], ["u", "r"])
    summed = run("UnsortedSegmentSum", ["values", "r"], ["summed"])
    assert summed.shape == (len(u), D)
    dedup = table.copy()
    dedup[u] += summed  # u has no repeats: a plain fancy-index add is exact here
    ref = table.copy()
    np.add.at(ref, indices, values)
    if zero_table:  # 0 + (v1 + v2 + ...) and ((0 + v1) + v2) + ... are the same sums, in the same order
        np.testing.assert_array_equal(dedup, ref)
    else:
        close(dedup, ref, 1e-6)
    # the mean aggregator: the same slices divided by their multiplicity
    mean = run("UnsortedSegmentMean", ["values", "r"], ["mean"])
    counts = np.bincount(r.ravel(), minlength=len(u)).astype(np.float32)
    np.testing.assert_array_equal(mean, summed / np.maximum(counts, 1)[:, None])


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("kind", ["UnsortedSegmentSum", "UnsortedSegmentMean"])
def test_segment_bad_inputs(rng, kind):
    feed(d=f32(rng, 3, 4), i=np.array([0, 1, 1], np.int32), fi=np.zeros(3, np.float32),
         di=np.ones((3, 4), np.int32),
         i2=np.zeros((3, 2), np.int32), neg=np.array([[0, 1], [-2, 0], [1, 1]], np.int32),
         y=np.full(5, 7.0, np.float32))
    pre = "op %s #0: " % kind
    with pytest.raises(TypeError, match=pre + r"input 1 blob 'fi' must be int32, got \(3,\) float32"):
        run(kind, ["d", "fi"], ["y"])
    with pytest.raises(TypeError, match=pre + r"input 0 blob 'di' must be float32, got \(3, 4\) int32"):
        run(kind, ["di", "i"], ["y"])
    with pytest.raises(ValueError, match=pre + r"the shape of input 1 blob 'i2' \(segment_ids\) \(3, 2\) "
                       r"int32 must be a prefix of the shape of input 0 blob 'd' \(3, 4\) float32"):
        run(kind, ["d", "i2"], ["y"])
    feed(d32=f32(rng, 3, 2))
    with pytest.raises(ValueError, match=pre + r"input 1 blob 'neg' \(segment_ids\) of shape \(3, 2\) int32: "
                       r"segment id -2 at index \[1, 0\] is out of range \[0, 2\) \(the number of segments: "
                       r"max\(segment_ids\) \+ 1\)"):
        run(kind, ["d32", "neg"], ["y"])
    with pytest.raises(ValueError, match=pre + r"input 1 blob 'i' \(segment_ids\) of shape \(3,\) int32: "
                       r"segment id 1 at index \[1\] is out of range \[0, 1\) \(argument num_segments=1\)"):
        run(kind, ["d", "i"], ["y"], num_segments=1)
    with pytest.raises(ValueError, match=pre + r"argument num_segments=-2 must be >= 0 \(or -1, the default: "
                       r"max\(segment_ids\) \+ 1\)"):
        run(kind, ["d", "i"], ["y"], num_segments=-2)
    # nothing was written by the failed runs; the workspace is still usable
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.full(5, 7.0, np.float32))
    close(run(kind, ["d", "i"], ["y"]), segment_ref(workspace.FetchBlob("d"), workspace.FetchBlob("i"),
                                                     mean=kind.endswith("Mean")), 2e-6)


def test_segment_mean_gradient_bad_inputs(rng):
    feed(g=f32(rng, 3, 2), g0=np.float32(1.0), i=np.array([0, 3], np.int32))
    with pytest.raises(ValueError, match=r"op UnsortedSegmentMeanGradient #0: input 1 blob 'i' "
                       r"\(segment_ids\) of shape \(2,\) int32: segment id 3 at index \[1\] is out of range "
                       r"\[0, 3\) \(the first dim of input 0 blob 'g' of shape \(3, 2\) float32\)"):
        run("UnsortedSegmentMeanGradient", ["g", "i"], ["dd"])
    with pytest.raises(ValueError, match=r"op UnsortedSegmentMeanGradient #0: input 0 blob 'g0' \(the output "
                       r"gradient\) must have at least 1 dim \(the segments\), got \(\) float32"):
        run("UnsortedSegmentMeanGradient", ["g0", "i"], ["dd"])
    with pytest.raises(TypeError, match=r"op UnsortedSegmentMeanGradient #0: input 1 blob 'g' must be int32"):
        run("UnsortedSegmentMeanGradient", ["g", "g"], ["dd"])


def test_segment_shapes_checked_at_net_creation(rng):
    feed(d=f32(rng, 3, 4), i2=np.zeros((3, 2), np.int32), x=f32(rng, 3))
    net = core.Net("seg_create")
    net.UnsortedSegmentSum(["d", "i2"], "y")
    with pytest.raises(ValueError, match=r"net 'seg_create': op UnsortedSegmentSum #0: the shape of input 1 "
                       r"blob 'i2' \(segment_ids\) \(3, 2\) int32 must be a prefix"):
        workspace.CreateNet(net)
    net = core.Net("uniq_create")
    net.Unique(["x"], ["u"])
    with pytest.raises(TypeError, match=r"net 'uniq_create': op Unique #0: input 0 blob 'x' must be int32"):
        workspace.CreateNet(net)
    # ids computed inside the net: checked when it runs, and values (not shapes) only then
    net = core.Net("seg_later")
    net.Unique(["i_bad"], ["u", "r"])
    net.UnsortedSegmentSum(["d", "r"], "y", num_segments=1)
    feed(i_bad=np.array([4, 5, 4], np.int32))
    workspace.CreateNet(net)
    with pytest.raises(ValueError, match=r"op UnsortedSegmentSum #1: input 1 blob 'r' \(segment_ids\) of "
                       r"shape \(3,\) int32: segment id 1 at index \[1\] is out of range \[0, 1\)"):
        workspace.RunNet(net)


# ---------------------------------------------------------------- WeightedSum and the Sparse* ops
def weighted_in_order_f32(rows, ids, w, S):
    """float32: out[ids[k]] += w[k] * rows[k], k in order (what the op promises bitwise)."""
    rest = rows.shape[ids.ndim:]
    rows = rows.reshape((ids.size,) + rest)
    out = np.zeros((S,) + rest, np.float32)
    for k, (s, wk) in enumerate(zip(ids.ravel(), np.asarray(w, np.float32).ravel())):
        out[s] = out[s] + wk * rows[k]
    return out


@pytest.mark.parametrize("ids_shape,rest,hi,nseg", SEG_CASES)
def test_weighted_sum_forward(rng, ids_shape, rest, hi, nseg):
    ids = rng.randint(0, hi, ids_shape).astype(np.int32)
    data, w = f32(rng, *(ids_shape + rest), lo=-2, hi=2), f32(rng, *ids_shape, lo=-2, hi=2)
    feed(d=data, w=w, i=ids)
    args = {} if nseg is None else {"num_segments": nseg}
    y = run("UnsortedSegmentWeightedSum", ["d", "w", "i"], ["y"], **args)
    S = nseg if nseg is not None else (int(ids.max()) + 1 if ids.size else 0)
    np.testing.assert_array_equal(y, weighted_in_order_f32(data, ids, w, S))
    close(y, segment_ref(data * w.reshape(ids_shape + (1,) * len(rest)), ids, nseg), 2e-5)


SPARSE_CASES = [  # (V rows of DATA, indices, segment ids, num_segments or None)
    (5, [4, 0, 4, 2, 1, 4, 3], [2, 0, 2, 5, 0, 2, 1], None), (3, [1, 1, 1], [0, 0, 0], None),
    (4, [3, 0, 2], [1, 1, 1], 3), (2, [], [], None), (2, [], [], 4), (6, [5, 0], [0, 1], None),
]


@pytest.mark.parametrize("V,idx,ids,nseg", SPARSE_CASES)
@pytest.mark.parametrize("rest", [(), (3,), (2, 3)])
@pytest.mark.parametrize("kind", ["Sum", "Mean", "WeightedSum"])
def test_sparse_forward_equals_gather_then_dense(rng, kind, V, idx, ids, nseg, rest):
    data, idx, ids = f32(rng, V, *rest, lo=-2, hi=2), i32(idx), i32(ids)
    w = f32(rng, len(ids), lo=-2, hi=2)
    feed(d=data, i=idx, s=ids, w=w, rows=data[idx])
    args = {} if nseg is None else {"num_segments": nseg}
    weighted = kind == "WeightedSum"
    ins = ["d", "w", "i", "s"] if weighted else ["d", "i", "s"]
    y = run("SparseUnsortedSegment" + kind, ins, ["y"], **args)
    dense = run("UnsortedSegment" + kind, ["rows", "w", "s"] if weighted else ["rows", "s"], ["y2"], **args)
    assert y.shape == dense.shape == ((nseg if nseg is not None else (int(ids.max()) + 1 if len(ids) else 0),)
                                      + rest)
    np.testing.assert_array_equal(y, dense)
    rows = data[idx] * (w.reshape((-1,) + (1,) * len(rest)) if weighted else 1)
    close(y, segment_ref(rows, ids, nseg, mean=kind == "Mean"), 2e-5)


def test_unsorted_gradient_ops_against_numpy(rng):
    ids = i32([[3, 1, 3], [0, 3, 1]])
    g, w, data = f32(rng, 5, 4), f32(rng, 2, 3), f32(rng, 2, 3, 4)
    feed(g=g, i=ids, w=w, d=data, v=f32(rng, 6, 4), vi=i32([[5, 0, 5], [2, 2, 1]]))
    np.testing.assert_array_equal(run("UnsortedSegmentSumGradient", ["g", "i"], ["x"]), g[ids])
    wg = w[..., None] * g[ids]
    np.testing.assert_array_equal(run("UnsortedSegmentWeightedSumGradient", ["w", "g", "i"], ["x"]), wg)
    dx, dw = run("UnsortedSegmentWeightedSumWithMainInputGradient", ["w", "g", "i", "d"], ["x", "y"])
    np.testing.assert_array_equal(dx, wg)
    assert dw.shape == ids.shape and dw.dtype == np.float32
    np.testing.assert_array_equal(dw, (g[ids].astype(np.float64) * data).sum(-1).astype(np.float32))
    v, vi = workspace.FetchBlob("v"), workspace.FetchBlob("vi")
    dx, dw = run("UnsortedSegmentWeightedSumWithMainInputGradient", ["w", "g", "i", "v", "vi"], ["x", "y"])
    np.testing.assert_array_equal(dx, wg)
    np.testing.assert_array_equal(dw, (g[ids].astype(np.float64) * v[vi]).sum(-1).astype(np.float32))
    # no ids, zero-width rows
    feed(e=np.zeros(0, np.int32), we=np.zeros(0, np.float32), z=np.zeros((3, 0), np.float32),
         wz=f32(rng, 2), iz=i32([2, 0]), dz=np.zeros((2, 0), np.float32))
    assert run("UnsortedSegmentSumGradient", ["g", "e"], ["x"]).shape == (0, 4)
    dx, dw = run("UnsortedSegmentWeightedSumWithMainInputGradient", ["wz", "z", "iz", "dz"], ["x", "y"])
    assert dx.shape == (2, 0) and dw.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("gow", [0, 1])
@pytest.mark.parametrize("ids_shape,rest,hi,nseg", GRAD_CASES)
def test_weighted_sum_gradient_finite_differences(rng, gow, ids_shape, rest, hi, nseg):
    ids = rng.randint(0, hi, ids_shape).astype(np.int32)
    args = {} if nseg is None else {"num_segments": nseg}
    o = op("UnsortedSegmentWeightedSum", ["d", "w", "i"], ["y"], grad_on_weights=gow, **args)
    check_grads(o, [f32(rng, *(ids_shape + rest)), f32(rng, *ids_shape), ids], indices=[0, 1] if gow else [0])


@pytest.mark.parametrize("kind", ["Sum", "Mean", "WeightedSum0", "WeightedSum1"])
def test_sparse_gradient_finite_differences(rng, kind):
    idx, ids = i32([3, 1, 1, 0, 3, 2]), i32([2, 0, 2, 2, 1, 0])  # repeated indices: the slice adds them up
    if kind.startswith("WeightedSum"):
        gow = int(kind[-1])
        o = op("SparseUnsortedSegmentWeightedSum", ["d", "w", "i", "s"], ["y"], grad_on_weights=gow,
               num_segments=4)
        check_grads(o, [f32(rng, 4, 2, 3), f32(rng, 6), idx, ids], indices=[0, 1] if gow else [0])
    else:
        o = op("SparseUnsortedSegment" + kind, ["d", "i", "s"], ["y"])
        check_grads(o, [f32(rng, 4, 2, 3), idx, ids], indices=[0])


def test_weighted_and_sparse_gradient_makers():
    def wired(o):
        ops, g = G(o, ["y_grad"])
        return [(p.type, list(p.input), list(p.output)) for p in ops], g

    ops, g = wired(op("UnsortedSegmentWeightedSum", ["d", "w", "i"], ["y"]))
    assert ops == [("UnsortedSegmentWeightedSumGradient", ["w", "y_grad", "i"], ["d_grad"])]
    assert g == ["d_grad", None, None]
    ops, g = wired(op("UnsortedSegmentWeightedSum", ["d", "w", "i"], ["y"], grad_on_weights=1))
    assert ops == [("UnsortedSegmentWeightedSumWithMainInputGradient", ["w", "y_grad", "i", "d"],
                    ["d_grad", "w_grad"])]
    assert g == ["d_grad", "w_grad", None]
    for kind in ["Sum", "Mean"]:
        ops, g = wired(op("SparseUnsortedSegment" + kind, ["d", "i", "s"], ["y"]))
        assert ops == [("UnsortedSegment%sGradient" % kind, ["y_grad", "s"], ["y_d_grad_values"])]
        assert isinstance(g[0], core.GradientSlice)
        assert (g[0].indices, g[0].values) == ("i", "y_d_grad_values")
        assert g[1:] == [None, None]
    ops, g = wired(op("SparseUnsortedSegmentWeightedSum", ["d", "w", "i", "s"], ["y"]))
    assert ops == [("UnsortedSegmentWeightedSumGradient", ["w", "y_grad", "s"], ["y_d_grad_values"])]
    assert isinstance(g[0], core.GradientSlice) and g[1:] == [None, None, None]
    ops, g = wired(op("SparseUnsortedSegmentWeightedSum", ["d", "w", "i", "s"], ["y"], grad_on_weights=1))
    assert ops == [("UnsortedSegmentWeightedSumWithMainInputGradient", ["w", "y_grad", "s", "d", "i"],
                    ["y_d_grad_values", "w_grad"])]
    assert isinstance(g[0], core.GradientSlice) and g[1:] == ["w_grad", None, None]
    for t in ["UnsortedSegmentSumGradient", "UnsortedSegmentWeightedSumGradient",
              "UnsortedSegmentWeightedSumWithMainInputGradient"]:
        n = 4 if "Main" in t else 3 if "Weighted" in t else 2
        assert G(op(t, ["x%d" % k for k in range(n)], ["o"]), ["o_grad"]) == ([], [None] * n)
    assert G(op("SparseUnsortedSegmentSum", ["d", "i", "s"], ["y"]), [None]) == ([], [None] * 3)


def test_sparse_embedding_bag_trained_through_a_net(rng):
    """Two bags of one table (Sparse and dense-weighted): the backward pass sums the two slices."""
    table, w = f32(rng, 5, 3), f32(rng, 4)
    feed(t=table, i1=i32([0, 4, 4, 1]), s1=i32([1, 0, 1, 1]), w=w, i2=i32([4, 2]), s2=i32([0, 0]))
    net = core.Net("sus_bags")
    a = net.SparseUnsortedSegmentWeightedSum(["t", "w", "i1", "s1"], "a")
    b = net.SparseUnsortedSegmentMean(["t", "i2", "s2"], "b")
    loss = net.Add([net.SumElements([a], "sa"), net.SumElements([b], "sb")], "loss")
    grads = net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    ref = np.zeros((5, 3), np.float32)
    np.add.at(ref, [0, 4, 4, 1], w[:, None] * np.ones((4, 3), np.float32))
    np.add.at(ref, [4, 2], 0.5)
    close(workspace.FetchBlob(str(grads["t"])), ref, 1e-6)


# ---------------------------------------------------------------- bad input of the new ops
def fails(exc, pattern, type_, inputs, outputs=("y",), **args):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(op(type_, inputs, list(outputs), **args))


def test_weighted_and_sparse_bad_inputs(rng):
    keep = np.full(3, 7.0, np.float32)
    feed(d=f32(rng, 4, 2), w=f32(rng, 4), w3=f32(rng, 3), i=i32([0, 3, 1, 1]), s=i32([0, 1, 1, 2]),
         s3=i32([0, 1, 1]), s2d=i32([[0, 1], [1, 2]]), i2d=i32([[0, 1], [1, 2]]), fi=f32(rng, 4),
         bad_i=i32([0, 4, 1, 1]), neg_s=i32([0, -1, 1, 1]), y=keep, s0=np.float32(1))
    W = "op UnsortedSegmentWeightedSum #0: "
    fails(ValueError, W + r"input 1 blob 'w3' \(scalars\) of shape \(3,\) float32 must have the shape of "
          r"input 2 blob 's' \(segment_ids\) \(4,\) int32", "UnsortedSegmentWeightedSum", ["d", "w3", "s"])
    fails(TypeError, W + r"input 1 blob 'i' must be float32, got \(4,\) int32", "UnsortedSegmentWeightedSum",
          ["d", "i", "s"])
    fails(ValueError, W + r"argument grad_on_weights must be 0 or 1, got 3", "UnsortedSegmentWeightedSum",
          ["d", "w", "s"], grad_on_weights=3)
    fails(ValueError, W + r"input 2 blob 'neg_s' \(segment_ids\) of shape \(4,\) int32: segment id -1 at "
          r"index \[1\] is out of range \[0, 2\)", "UnsortedSegmentWeightedSum", ["d", "w", "neg_s"])
    P = "op SparseUnsortedSegmentSum #0: "
    fails(ValueError, P + r"input 2 blob 's3' \(segment_ids\) of shape \(3,\) int32 must hold one id per "
          r"index: 4 \(input 1 blob 'i' \(indices\) of shape \(4,\) int32\)", "SparseUnsortedSegmentSum",
          ["d", "i", "s3"])
    fails(ValueError, P + r"input 1 blob 'i2d' \(indices\) must have 1 dim, got \(2, 2\) int32",
          "SparseUnsortedSegmentSum", ["d", "i2d", "s2d"])
    fails(ValueError, P + r"input 0 blob 's0' \(data\) must have at least 1 dim, got \(\) float32",
          "SparseUnsortedSegmentSum", ["s0", "i", "s"])
    fails(TypeError, P + r"input 1 blob 'fi' must be int32, got \(4,\) float32", "SparseUnsortedSegmentSum",
          ["d", "fi", "s"])
    fails(IndexError, r"op SparseUnsortedSegmentMean #0: input 1 blob 'bad_i': index 4 at position 1 is out "
          r"of range \[0, 4\) \(the rows of input 0 blob 'd' of shape \(4, 2\) float32\)",
          "SparseUnsortedSegmentMean", ["d", "bad_i", "s"])
    fails(ValueError, r"op SparseUnsortedSegmentWeightedSum #0: input 3 blob 's' \(segment_ids\) of shape "
          r"\(4,\) int32: segment id 2 at index \[3\] is out of range \[0, 2\) \(argument num_segments=2\)",
          "SparseUnsortedSegmentWeightedSum", ["d", "w", "i", "s"], num_segments=2)
    fails(ValueError, r"op SparseUnsortedSegmentWeightedSum #0: expects 4 inputs, got 3",
          "SparseUnsortedSegmentWeightedSum", ["d", "i", "s"])
    # nothing was written by the failed runs; the workspace is still usable
    np.testing.assert_array_equal(workspace.FetchBlob("y"), keep)
    assert run("SparseUnsortedSegmentWeightedSum", ["d", "w", "i", "s"], ["y"]).shape == (3, 2)


def test_unsorted_gradient_ops_bad_inputs(rng):
    feed(g=f32(rng, 3, 2), w=f32(rng, 4), w3=f32(rng, 3), s=i32([0, 2, 1, 2]), s9=i32([0, 9, 1, 2]),
         d=f32(rng, 4, 2), d3=f32(rng, 4, 3), v=f32(rng, 5, 2), vi=i32([0, 5, 1, 1]), vi3=i32([0, 1, 1]))
    main = "UnsortedSegmentWeightedSumWithMainInputGradient"
    M = "op %s #0: " % main
    fails(ValueError, M + r"input 3 blob 'd3' \(data\) of shape \(4, 3\) float32 must have the shape of the "
          r"segment ids followed by the output gradient's row shape", main, ["w", "g", "s", "d3"], ["x", "z"])
    fails(IndexError, M + r"input 4 blob 'vi': index 5 at position 1 is out of range \[0, 5\)", main,
          ["w", "g", "s", "v", "vi"], ["x", "z"])
    fails(ValueError, M + r"input 4 blob 'vi3' \(indices\) of shape \(3,\) int32 must have the shape of "
          r"input 2", main, ["w", "g", "s", "v", "vi3"], ["x", "z"])
    fails(ValueError, r"op UnsortedSegmentWeightedSumGradient #0: input 0 blob 'w3' \(scalars\) of shape "
          r"\(3,\) float32 must have the shape of input 2 blob 's'", "UnsortedSegmentWeightedSumGradient",
          ["w3", "g", "s"], ["x"])
    fails(ValueError, r"op UnsortedSegmentSumGradient #0: input 1 blob 's9' \(segment_ids\) of shape \(4,\) "
          r"int32: segment id 9 at index \[1\] is out of range \[0, 3\) \(the first dim of input 0 blob 'g'",
          "UnsortedSegmentSumGradient", ["g", "s9"], ["x"])
    fails(TypeError, r"op UnsortedSegmentSumGradient #0: input 0 blob 's' must be float32",
          "UnsortedSegmentSumGradient", ["s", "s"], ["x"])


def test_new_ops_checked_at_net_creation(rng):
    feed(d=f32(rng, 4, 2), w3=f32(rng, 3), s=i32([0, 1, 1, 2]), i=i32([0, 1, 2]))
    net = core.Net("wsum_create")
    net.UnsortedSegmentWeightedSum(["d", "w3", "s"], "y")
    with pytest.raises(ValueError, match=r"net 'wsum_create': op UnsortedSegmentWeightedSum #0: input 1 blob "
                       r"'w3' \(scalars\) of shape \(3,\) float32 must have the shape of input 2"):
        workspace.CreateNet(net)
    net = core.Net("sus_create")
    net.SparseUnsortedSegmentSum(["d", "i", "s"], "y")
    with pytest.raises(ValueError, match=r"net 'sus_create': op SparseUnsortedSegmentSum #0: input 2 blob "
                       r"'s' \(segment_ids\) of shape \(4,\) int32 must hold one id per index: 3"):
        workspace.CreateNet(net)
