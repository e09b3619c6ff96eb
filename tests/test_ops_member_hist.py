"""IsMemberOf and AccumulateHistogram (csrc/ops/member_hist.c; no gradient, recurrent/_grad_loss.py):
NumPy references over several shapes and the edge cases (empty X, duplicates and int32's extremes in
`value`, values on the bucket edges, the bounds themselves, +-inf), the histogram accumulated across
runs of a net (and restarted by RunOperatorOnce), what each op refuses (the workspace usable after
every error, nothing written, the accumulated counts kept), Caffe2's test_is_member_of ported,
AddGradientOperators through them (refused, as through Accuracy: Caffe2's SHOULD_NOT_DO_GRADIENT), their static
shapes."""

import numpy as np
import pytest

from recurrent import core, workspace

from op_helpers import I32_MAX, feed, run, usable  # noqa: F401


# ---------------------------------------------------------------- IsMemberOf
def member_ref(x, values):
    return np.isin(x, np.asarray(values, np.int64)).astype(np.int32)


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 4), (2, 3, 5), (0,), (4, 0, 2)])
@pytest.mark.parametrize("values", [[0, 3, 4, 6, 8], [5], [], [2, 2, 2, 7, 7], [-3, 0, 9, -1]])
def test_is_member_of_against_numpy(shape, values):
    rng = np.random.RandomState(len(shape) * 31 + len(values))
    x = rng.randint(-4, 10, size=shape).astype(np.int32)
    feed(x=x)
    run("IsMemberOf", ["x"], ["y"], value=values)
    y = workspace.FetchBlob("y")
    assert y.dtype == np.int32 and y.shape == x.shape
    np.testing.assert_array_equal(y, member_ref(x, values))


def test_is_member_of_extremes_and_many_values():
    x = np.array([I32_MAX, -I32_MAX - 1, 0, 1, -1, I32_MAX - 1], np.int32)
    feed(x=x)
    run("IsMemberOf", ["x"], ["y"], value=[-2 ** 31, 2 ** 31 - 1, 1])
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [1, 1, 0, 1, 0, 0])
    # many values, unsorted, with repeats (a sorted, deduplicated copy is searched)
    rng = np.random.RandomState(0)
    values = rng.randint(-1000, 1000, 3000).tolist()
    x = rng.randint(-1500, 1500, (40, 50)).astype(np.int32)
    feed(x=x)
    run("IsMemberOf", ["x"], ["y"], value=values)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), member_ref(x, values))


def test_is_member_of_numpy_values_and_dtype_argument():
    x = np.array([[1, 2], [3, 4]], np.int32)
    feed(x=x)
    for dtype in [None, core.DataType.INT32, core.DataType.INT64]:
        extra = {} if dtype is None else {"dtype": dtype}
        run("IsMemberOf", ["x"], ["y"], value=np.array([4, 1], np.int64), **extra)
        np.testing.assert_array_equal(workspace.FetchBlob("y"), [[1, 0], [0, 1]])
    # bools are int32 0 / 1 here; with dtype BOOL the values must be 0 or 1 (Caffe2 cast 4 to true)
    feed(b=np.array([True, False, True]))
    run("IsMemberOf", ["b"], ["y"], value=[1], dtype=core.DataType.BOOL)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [1, 0, 1])
    for values, want in [([0], [0, 1, 0]), ([0, 1, 1], [1, 1, 1]), ([], [0, 0, 0])]:
        run("IsMemberOf", ["b"], ["y"], value=values, dtype=core.DataType.BOOL)
        np.testing.assert_array_equal(workspace.FetchBlob("y"), want)


def test_is_member_of_in_place_and_resized_output():
    feed(x=np.array([5, 6, 7, 5], np.int32), y=np.ones((3, 3), np.float32))
    run("IsMemberOf", ["x"], ["y"], value=[5])
    y = workspace.FetchBlob("y")
    assert y.dtype == np.int32 and y.shape == (4,)
    np.testing.assert_array_equal(y, [1, 0, 0, 1])
    run("IsMemberOf", ["x"], ["x"], value=[7, 6])
    np.testing.assert_array_equal(workspace.FetchBlob("x"), [0, 1, 1, 0])


def test_is_member_of_caffe2_test_ported():
    """caffe2/python/operator_test/elementwise_logical_ops_test.py's test_is_member_of: int64 X
    (fed as int32 here), values given as a NumPy array, a bool reference (int32 0 / 1 here)."""
    values = [0, 3, 4, 6, 8]
    for n in range(1, 11):
        x = np.random.RandomState(n).randint(10, size=n).astype(np.int64)
        op = core.CreateOperator("IsMemberOf", ["X"], ["Y"], value=np.array(values))
        workspace.FeedBlob("X", x)
        workspace.RunOperatorOnce(op)
        ref = np.vectorize(lambda v: v in set(values))(x)
        np.testing.assert_array_equal(workspace.FetchBlob("Y"), ref.astype(np.int32))


@pytest.mark.parametrize("args, exc, match", [
    (dict(value=[1, 2 ** 31]), ValueError, r"argument 'value' holds 2147483648 at position 1, outside int32"),
    (dict(value=[-2 ** 31 - 1]), ValueError, r"holds -2147483649 at position 0"),
    (dict(value=[1], dtype=4), ValueError, r"'dtype' is STRING \(4\): there are no string blobs"),
    (dict(value=[1], dtype=1), ValueError, r"'dtype' must be UNDEFINED \(0\), INT32 \(2\), BOOL \(5\) or INT64"),
    (dict(value=[0, 1, 2], dtype=core.DataType.BOOL), ValueError,
     r"argument 'value' holds 2 at position 2, but with 'dtype' BOOL \(5\) the values must be 0 or 1"),
    (dict(value=[-1], dtype=5), ValueError, r"holds -1 at position 0, but with 'dtype' BOOL"),
    (dict(value=[1.5]), TypeError, r"value"),
    (dict(value=[1], dtype="int32"), TypeError, r"dtype"),
])
def test_is_member_of_refuses_arguments(args, exc, match):
    feed(x=np.array([1, 2], np.int32), y=np.array([9, 9], np.int32))
    with pytest.raises(exc, match=match) as e:
        run("IsMemberOf", ["x"], ["y"], **args)
    assert "IsMemberOf" in str(e.value)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [9, 9])
    usable()


def test_is_member_of_refuses_float_and_unfed_input():
    feed(f=np.array([1.0, 2.0], np.float32))
    with pytest.raises(TypeError, match=r"IsMemberOf.*input 0 blob 'f' must be int32, got \(2,\) float32"):
        run("IsMemberOf", ["f"], ["y"], value=[1])
    with pytest.raises(KeyError, match="nothere"):
        run("IsMemberOf", ["nothere"], ["y"], value=[1])
    usable()


def test_is_member_of_arity():
    feed(x=np.array([1], np.int32))
    with pytest.raises(ValueError, match="IsMemberOf"):
        run("IsMemberOf", ["x", "x"], ["y"], value=[1])
    with pytest.raises(ValueError, match="IsMemberOf"):
        run("IsMemberOf", ["x"], ["y", "z"], value=[1])


# ---------------------------------------------------------------- AccumulateHistogram
def hist_ref(x, lower=0.0, upper=1.0, nb=1):
    """Caffe2's loop (utility_ops.h) in float32 arithmetic, the quotient clamped to the last bin."""
    lo, hi = np.float32(lower), np.float32(upper)
    seg = (hi - lo) / np.float32(nb)
    h = np.zeros(nb + 2, np.int64)
    for v in np.asarray(x, np.float32).ravel():
        if v < lo:
            b = 0
        elif v >= hi:
            b = nb + 1
        else:
            q = (v - lo) / seg
            assert q.dtype == np.float32
            b = int(q) + 1 if float(q) < nb else nb + 1
        h[b] += 1
    return h.astype(np.int32)


def hist(x, cur="cur", acc="acc", **args):
    feed(hx=np.asarray(x, np.float32))
    run("AccumulateHistogram", ["hx"], [cur, acc], **args)
    return workspace.FetchBlob(cur), workspace.FetchBlob(acc)


@pytest.mark.parametrize("shape", [(0,), (1,), (17,), (5, 6), (2, 3, 4), (), (3, 0)])
@pytest.mark.parametrize("args", [{}, dict(num_buckets=10),
                                  dict(lower_bound=-2.5, upper_bound=3.0, num_buckets=7),
                                  dict(lower_bound=-1, upper_bound=1, num_buckets=3),
                                  dict(lower_bound=0.1, upper_bound=0.7, num_buckets=1000)])
def test_accumulate_histogram_against_numpy(shape, args):
    rng = np.random.RandomState(len(shape) + 7 * len(args))
    x = rng.uniform(-4, 4, shape).astype(np.float32)
    cur, acc = hist(x, **args)
    want = hist_ref(x, args.get("lower_bound", 0.0), args.get("upper_bound", 1.0), args.get("num_buckets", 1))
    assert cur.dtype == np.int32 and acc.dtype == np.int32 and cur.shape == want.shape
    np.testing.assert_array_equal(cur, want)
    np.testing.assert_array_equal(acc, want)  # a fresh op each RunOperatorOnce: nothing accumulated before
    assert cur.sum() == x.size


def test_accumulate_histogram_bucket_edges_bounds_and_infinities():
    # bins of width 0.25 on [0, 1): edges exact in float32
    below0 = np.nextafter(np.float32(0), np.float32(-1))
    below1 = np.nextafter(np.float32(1), np.float32(0))
    x = np.array([0.0, 0.25, 0.5, 0.75, 1.0, -0.0, below0, below1, np.inf, -np.inf, 0.2499999, 3e38, -3e38],
                 np.float32)
    cur, acc = hist(x, num_buckets=4)
    #                              under  [0,.25) [.25,.5) [.5,.75) [.75,1)  over
    np.testing.assert_array_equal(cur, [3, 3, 1, 1, 2, 3])
    np.testing.assert_array_equal(cur, hist_ref(x, 0, 1, 4))
    # edges that are not exact: whatever Caffe2's float arithmetic gives, reproduced
    lo, hi, nb = -1.0, 0.7, 17
    seg = (np.float32(hi) - np.float32(lo)) / np.float32(nb)
    edges = np.float32(lo) + np.arange(nb + 1, dtype=np.float32) * seg
    x = np.concatenate([edges, np.nextafter(edges, np.float32(-9)), np.nextafter(edges, np.float32(9))])
    cur, _ = hist(x, lower_bound=lo, upper_bound=hi, num_buckets=nb)
    np.testing.assert_array_equal(cur, hist_ref(x, lo, hi, nb))


def test_accumulate_histogram_rounding_into_the_overflow_bin():
    """A value just below upper_bound whose float32 quotient reaches num_buckets lands in the overflow
    bin, as in Caffe2's arithmetic (num_buckets = 25 on [0, 1): the quotient is 25.0)."""
    v = np.nextafter(np.float32(1), np.float32(0))
    cur, _ = hist(np.array([v], np.float32), num_buckets=25)
    assert cur[26] == 1 and cur.sum() == 1
    cur, _ = hist(np.array([v], np.float32), num_buckets=24)  # quotient below 24: the last bucket
    assert cur[24] == 1 and cur.sum() == 1
    for nb in (3, 7, 10, 25, 31, 49, 100, 1000, 12345):
        x = np.nextafter(np.float32(1), np.float32(0)) - np.arange(5, dtype=np.float32) * np.float32(1e-7)
        cur, _ = hist(x, num_buckets=nb)
        np.testing.assert_array_equal(cur, hist_ref(x, 0, 1, nb))


def test_accumulate_histogram_accumulates_across_runs_of_a_net():
    rng = np.random.RandomState(3)
    net = core.Net("hist_net")
    net.AccumulateHistogram(["hx"], ["cur", "acc"], lower_bound=-1.0, upper_bound=1.0, num_buckets=5)
    net.AccumulateHistogram(["hx"], ["cur2", "acc2"], lower_bound=-1.0, upper_bound=1.0, num_buckets=5)
    feed(hx=np.zeros(1, np.float32))
    workspace.CreateNet(net)
    total = np.zeros(7, np.int64)
    for i, n in enumerate([10, 0, 33, 1, 200]):
        x = rng.normal(0, 1, n).astype(np.float32)
        feed(hx=x)
        workspace.RunNet("hist_net")
        want = hist_ref(x, -1, 1, 5)
        total += want
        np.testing.assert_array_equal(workspace.FetchBlob("cur"), want)
        np.testing.assert_array_equal(workspace.FetchBlob("acc"), total)
        # each op instance has its own accumulation
        np.testing.assert_array_equal(workspace.FetchBlob("acc2"), total)
    # a NaN: refused, nothing written, the accumulated counts kept
    feed(hx=np.array([0.5, np.nan, 2.0], np.float32))
    with pytest.raises(ValueError,
                       match=r"AccumulateHistogram.*input 0 blob 'hx' \(3,\) float32 holds NaN at flat position 1"):
        workspace.RunNet("hist_net")
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), total)
    feed(hx=np.array([0.5], np.float32))
    workspace.RunNet("hist_net")
    total[4] += 1
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), total)
    # RunNetOnce / RunOperatorOnce make new ops: they start from zero
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), hist_ref([0.5], -1, 1, 5))
    usable()


def test_accumulate_histogram_default_arguments():
    # lower 0, upper 1, one bucket: [under, [0, 1), over]
    cur, acc = hist([-0.5, 0.0, 0.5, 0.999, 1.0, 7.0])
    np.testing.assert_array_equal(cur, [1, 3, 2])
    np.testing.assert_array_equal(acc, [1, 3, 2])


@pytest.mark.parametrize("args, match", [
    (dict(num_buckets=0), r"'num_buckets' must be in \[1, 2147483645\], got 0"),
    (dict(num_buckets=-3), r"got -3"),
    (dict(num_buckets=2 ** 31), r"got 2147483648"),
    (dict(lower_bound=1.0, upper_bound=1.0), r"'lower_bound' \(1\) and 'upper_bound' \(1\) must be finite"),
    (dict(lower_bound=2.0, upper_bound=1.0), r"lower_bound < upper_bound"),
    (dict(lower_bound=float("nan")), r"'lower_bound' \(nan\)"),
    (dict(upper_bound=float("inf")), r"'upper_bound' \(inf\)"),
    (dict(lower_bound=-1e39), r"'lower_bound' \(-inf\)"),  # not a float32
    (dict(lower_bound=-3e38, upper_bound=3e38), r"bucket width .* is inf in float32"),
    (dict(lower_bound=0.0, upper_bound=1e-45, num_buckets=3), r"bucket width .* is 0 in float32"),
])
def test_accumulate_histogram_refuses_arguments(args, match):
    feed(hx=np.array([0.5], np.float32), cur=np.array([9], np.int32), acc=np.array([7], np.int32))
    with pytest.raises(ValueError, match=match) as e:
        run("AccumulateHistogram", ["hx"], ["cur", "acc"], **args)
    assert "AccumulateHistogram" in str(e.value)
    np.testing.assert_array_equal(workspace.FetchBlob("cur"), [9])
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [7])
    usable()


def test_accumulate_histogram_refuses_inputs():
    feed(i=np.array([1, 2], np.int32), cur=np.array([9], np.int32))
    with pytest.raises(TypeError, match=r"AccumulateHistogram.*input 0 blob 'i' must be float32, got \(2,\) int32"):
        run("AccumulateHistogram", ["i"], ["cur", "acc"])
    with pytest.raises(TypeError, match="num_buckets"):
        run("AccumulateHistogram", ["i"], ["cur", "acc"], num_buckets=2.5)
    for nan_at in [0, 5, 11]:
        x = np.linspace(-1, 2, 12).astype(np.float32).reshape(3, 4)
        x.flat[nan_at] = np.nan
        feed(hx=x)
        with pytest.raises(ValueError,
                           match=r"'hx' \(3, 4\) float32 holds NaN at flat position %d; NaN has no bin" % nan_at):
            run("AccumulateHistogram", ["hx"], ["cur", "acc"])
        np.testing.assert_array_equal(workspace.FetchBlob("cur"), [9])
    with pytest.raises(ValueError, match="AccumulateHistogram"):
        run("AccumulateHistogram", ["hx"], ["cur"])
    with pytest.raises(ValueError, match="AccumulateHistogram"):
        run("AccumulateHistogram", ["hx"], ["cur", "cur"])
    usable()


@pytest.mark.slow
def test_accumulate_histogram_count_overflow():
    """The counts are int32: the run that would take a bin past 2^31 - 1 is refused, nothing written,
    the accumulated counts kept (Caffe2's were int64). 2^29 zeros (2 GiB), four runs."""
    n = 2 ** 29
    feed(hx=np.zeros(n, np.float32))
    net = core.Net("hist_overflow")
    net.AccumulateHistogram(["hx"], ["cur", "acc"], num_buckets=2)
    workspace.CreateNet(net)
    for k in range(1, 4):
        workspace.RunNet("hist_overflow")
        assert workspace.FetchBlob("acc")[1] == k * n
    with pytest.raises(ValueError, match=r"bin 1's accumulated count 1610612736 \+ 536870912 .* exceeds 2\^31 - 1"):
        workspace.RunNet("hist_overflow")
    assert workspace.FetchBlob("acc")[1] == 3 * n and workspace.FetchBlob("cur")[1] == n
    feed(hx=np.full(3, 5.0, np.float32))  # another bin still counts
    workspace.RunNet("hist_overflow")
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [0, 3 * n, 0, 3])
    workspace.ResetWorkspace()
    usable()


# ---------------------------------------------------------------- gradients, shapes
@pytest.mark.parametrize("op_type", ["IsMemberOf", "AccumulateHistogram"])
def test_no_gradient_through_them(op_type):
    """Registered as Caffe2's SHOULD_NOT_DO_GRADIENT, as Accuracy: a gradient reaching an output is a
    ValueError naming the op, its index and the output (Caffe2 raised too); beside a loss they are
    silent and their inputs get none from them."""
    assert core.GradientRegistry.HasGradient(op_type) and core.GradientRegistry.ShouldNotDoGradient(op_type)
    feed(x=np.full((3, 2), 0.5, np.float32), i=np.array([1, 2, 3], np.int32))
    net = core.Net("g")
    net.Sigmoid(["x"], "s")
    if op_type == "IsMemberOf":
        out = net.IsMemberOf(["i"], "m", value=[2])
    else:
        out = net.AccumulateHistogram(["s"], ["m", "acc"], num_buckets=4)[0]
    with pytest.raises(ValueError, match=r"^op %s #1: the gradient of its output 0 'm' reaches it" % op_type):
        net.AddGradientOperators([out])
    net.SumElements(["s"], "loss")
    grad_map = net.AddGradientOperators(["loss"])
    assert "x" in grad_map and "i" not in grad_map
    workspace.RunNetOnce(net)


def test_static_shapes():
    feed(i=np.ones((2, 3), np.int32), f=np.ones((4, 5), np.float32))
    net = core.Net("shapes")
    net.IsMemberOf(["i"], "m", value=[1])
    net.AccumulateHistogram(["f"], ["cur", "acc"], num_buckets=6, lower_bound=-1, upper_bound=2.5)
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["m"] == [2, 3] and types["m"] == core.DataType.INT32
    for b in ("cur", "acc"):
        assert shapes[b] == [8] and types[b] == core.DataType.INT32
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("m").shape == (2, 3) and workspace.FetchBlob("acc").shape == (8,)
    # refused inputs: a warning and empty results, and the run refuses them too
    for op_type, ins, outs, args in [("IsMemberOf", dict(x=np.ones(2, np.float32)), ["o"], dict(value=[1])),
                                     ("AccumulateHistogram", dict(x=np.ones(2, np.int32)), ["o", "p"], {})]:
        workspace.ResetWorkspace()
        feed(**ins)
        bad = core.Net("bad")
        getattr(bad, op_type)(list(ins), outs, **args)
        with pytest.warns(RuntimeWarning, match="InferShapesAndTypes.*%s" % op_type):
            assert workspace.InferShapesAndTypes([bad]) == ({}, {})
        with pytest.raises(TypeError):
            workspace.RunNetOnce(bad)
    # refused arguments: outputs unknown (the op fails when created)
    workspace.ResetWorkspace()
    feed(i=np.ones(2, np.int32), f=np.ones(2, np.float32))
    for op_type, ins, outs, args in [("IsMemberOf", ["i"], ["o"], dict(value=[2 ** 31])),
                                     ("IsMemberOf", ["i"], ["o"], dict(dtype=4)),
                                     ("AccumulateHistogram", ["f"], ["o", "p"], dict(num_buckets=0)),
                                     ("AccumulateHistogram", ["f"], ["o", "p"], dict(lower_bound=1.0)),
                                     ("AccumulateHistogram", ["f"], ["o", "p"], dict(lower_bound=-3e38,
                                                                                      upper_bound=3e38))]:
        bad = core.Net("bad_args")
        getattr(bad, op_type)(ins, outs, **args)
        shapes, _ = workspace.InferShapesAndTypes([bad])
        assert not set(outs) & set(shapes)
