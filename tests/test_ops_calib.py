"""The calibration ops (csrc/ops/calib.c): Percentile, BisectPercentile, BatchBoxCox and
PiecewiseLinearTransform against NumPy references written from Caffe2's op docs; edge cases
(values on the table entries, out of range, NaN, empty); bad input; no gradients."""

import bisect

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import feed, op, run  # the same helpers

V, T = ValueError, TypeError


def bad(exc, msg):
    return pytest.raises(exc, match=msg)


def f32(x):
    return np.asarray(x, np.float32)


# ---------------------------------------------------------------- Percentile
def percentile_ref(x, vp, lens):
    """float32, as Caffe2's: the listed percentile, linear between the listed values, 0 below, 1 above."""
    x, vp = f32(x), f32(vp)
    y = np.zeros_like(x)
    starts = np.concatenate([[0], np.cumsum(lens)]).astype(int)
    for j in range(x.shape[1]):
        vals, pcts = vp[starts[j]:starts[j + 1], 0], vp[starts[j]:starts[j + 1], 1]
        for i in range(x.shape[0]):
            v = x[i, j]
            k = bisect.bisect_left(list(vals), v)
            if np.isnan(v):
                y[i, j] = v
            elif k == len(vals):
                y[i, j] = 1
            elif v == vals[k]:
                y[i, j] = pcts[k]
            elif k == 0:
                y[i, j] = 0
            else:
                t = (v - vals[k - 1]) / (vals[k] - vals[k - 1])
                y[i, j] = pcts[k - 1] + t * (pcts[k] - pcts[k - 1])
    return y


def test_percentile_caffe2_doc_example():
    feed(x=f32([[3, 5, 3], [5, 1, 6]]), vp=f32([[3, 0.2], [5, 0.5], [1, 0.3], [3, 0.6]]),
         l=np.array([2, 1, 1], np.int32))
    np.testing.assert_array_equal(run("Percentile", ["x", "vp", "l"], ["y"]),
                                  f32([[0.2, 1.0, 0.6], [0.5, 0.3, 1.0]]))


@pytest.mark.parametrize("n,lens", [(5, [3]), (7, [1, 4, 2]), (4, [6, 6]), (0, [2, 3]), (3, [])])
def test_percentile_matches_reference(rng, n, lens):
    vp = []
    for ln in lens:
        vals = np.sort(rng.choice(np.arange(-20, 20), ln, replace=False).astype(np.float32) / 4)
        vp += [[v, p] for v, p in zip(vals, np.sort(rng.uniform(0, 1, ln)))]
    vp = f32(vp).reshape(-1, 2)
    x = f32(rng.randint(-24, 24, (n, len(lens))) / 4)  # on, between and outside the listed values
    x[:, ::2] += f32(rng.uniform(-0.1, 0.1, x[:, ::2].shape))
    feed(x=x, vp=vp, l=np.array(lens, np.int32))
    y = run("Percentile", ["x", "vp", "l"], ["y"])
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, percentile_ref(x, vp, lens), rtol=1e-6, atol=1e-7)


def test_percentile_edges():
    # repeated values: the first listed one; an empty run gives 1 (Caffe2's rule); NaN stays NaN
    feed(x=f32([[2, 0, np.nan], [2.5, 7, 1]]), vp=f32([[1, 0.1], [2, 0.2], [2, 0.3], [3, 0.9], [1, 0.5]]),
         l=np.array([4, 0, 1], np.int32))
    y = run("Percentile", ["x", "vp", "l"], ["y"])
    np.testing.assert_allclose(y[:, :2], [[0.2, 1], [0.6, 1]], rtol=1e-6)
    assert np.isnan(y[0, 2]) and y[1, 2] == np.float32(0.5)


def test_percentile_bad_inputs(rng):
    feed(x=f32(np.ones((2, 2))), vp=f32([[1, 0.1], [2, 0.2], [1, 0.5]]), l=np.array([2, 1], np.int32),
         v=f32([1, 2]), vp3=f32(np.ones((3, 3))), l3=np.array([1, 1, 1], np.int32),
         lneg=np.array([4, -1], np.int32), lsum=np.array([1, 1], np.int32), li=f32([2, 1]),
         un=f32([[2, 0.1], [1, 0.2], [1, 0.5]]), nan=f32([[1, 0.1], [np.nan, 0.2], [1, 0.5]]))
    with bad(V, r"op Percentile #0: input 0 blob 'v' must have 2 dims"):
        run("Percentile", ["v", "vp", "l"], ["y"])
    with bad(V, r"op Percentile #0: input 1 blob 'vp3' \(value_to_pct\) of shape \(3, 3\) float32 must "
                r"have 2 columns"):
        run("Percentile", ["x", "vp3", "l"], ["y"])
    with bad(V, r"op Percentile #0: input 2 blob 'l3' \(lengths\) of shape \(3,\) int32 must have one "
                r"entry per column of input 0 blob 'x' of shape \(2, 2\) float32"):
        run("Percentile", ["x", "vp", "l3"], ["y"])
    with bad(V, r"op Percentile #0: input 2 blob 'lneg' \(lengths\) holds -1 at position 1"):
        run("Percentile", ["x", "vp", "lneg"], ["y"])
    with bad(V, r"op Percentile #0: input 2 blob 'lsum' \(lengths\) of shape \(2,\) int32 sums to 2, but "
                r"input 1 blob 'vp' of shape \(3, 2\) float32 has 3 rows"):
        run("Percentile", ["x", "vp", "lsum"], ["y"])
    with bad(T, r"op Percentile #0: input 2 blob 'li' must be int32"):
        run("Percentile", ["x", "vp", "li"], ["y"])
    with bad(V, r"op Percentile #0: input 1 blob 'un' \(value_to_pct\): run 0 \(rows 0..1\) must be sorted "
                r"by value, but row 1 holds 1 after 2"):
        run("Percentile", ["x", "un", "l"], ["y"])
    with bad(V, r"op Percentile #0: input 1 blob 'nan' \(value_to_pct\): run 0 \(rows 0..1\) must be "
                r"sorted by value, but row 1 holds nan"):
        run("Percentile", ["x", "nan", "l"], ["y"])
    assert not isinstance(workspace.FetchBlob("y"), np.ndarray)  # created with the op, never written
    np.testing.assert_allclose(run("Percentile", ["x", "vp", "l"], ["y"]), [[0.1, 0.5], [0.1, 0.5]])


# ---------------------------------------------------------------- BisectPercentile
def bisect_ref(x, raw, mapping, lower, upper, lens):
    """Caffe2's formula in float32: mapping where listed, (1 - w) upper[k] + w lower[k + 1] between."""
    x = f32(x)
    y = np.zeros_like(x)
    starts = np.concatenate([[0], np.cumsum(lens)]).astype(int)
    for j in range(x.shape[1]):
        s, e = starts[j], starts[j + 1]
        r = list(raw[s:e])
        for i in range(x.shape[0]):
            v = x[i, j]
            if np.isnan(v):
                y[i, j] = v
            elif v < r[0]:
                y[i, j] = 0
            elif v > r[-1]:
                y[i, j] = 1
            else:
                k = bisect.bisect_right(r, v) - 1
                if r[k] == v:
                    y[i, j] = mapping[s + k]
                else:
                    w = (v - raw[s + k]) / (raw[s + k + 1] - raw[s + k] + np.float32(1e-10))
                    y[i, j] = (1 - w) * upper[s + k] + w * lower[s + k + 1]
    return y


def bisect_args(raw, mapping, lower, upper, lens):
    return dict(percentile_raw=f32(raw), percentile_mapping=f32(mapping), percentile_lower=f32(lower),
                percentile_upper=f32(upper), lengths=np.array(lens, np.int32))


@pytest.mark.parametrize("n,lens", [(6, [1]), (9, [3, 2]), (5, [4, 1, 6]), (0, [2])])
def test_bisect_percentile_matches_reference(rng, n, lens):
    raw = np.concatenate([np.sort(rng.choice(np.arange(-40, 40), ln, replace=False)) / 4 for ln in lens])
    raw = f32(raw)
    lower = f32(rng.uniform(0, 1, len(raw)))
    upper = f32(lower + rng.uniform(0, 0.1, len(raw)))
    mapping = (lower + upper) / 2
    x = f32(rng.randint(-44, 44, (n, len(lens))) / 4)
    x[1::2] += f32(rng.uniform(-0.2, 0.2, x[1::2].shape))
    x[0:1, 0:1] = np.nan if n else x[0:1, 0:1]
    feed(x=x)
    y = run("BisectPercentile", ["x"], ["y"], **bisect_args(raw, mapping, lower, upper, lens))
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, bisect_ref(x, raw, mapping, lower, upper, lens), rtol=1e-6, atol=1e-7)


def test_bisect_percentile_repeated_raw_takes_the_last():
    feed(x=f32([[1], [2], [2.5]]))
    y = run("BisectPercentile", ["x"], ["y"], **bisect_args([1, 2, 2, 3], [.1, .2, .3, .4], [.1, .2, .3, .4],
                                                            [.1, .2, .3, .4], [4]))
    np.testing.assert_allclose(y[:, 0], [0.1, 0.3, 0.5 * 0.3 + 0.5 * 0.4], rtol=1e-6)


def test_bisect_percentile_bad_inputs():
    feed(x=f32(np.zeros((2, 2))), v=f32([1, 2]))
    good = bisect_args([1, 2, 3], [.1, .2, .3], [.1, .2, .3], [.1, .2, .3], [2, 1])
    with bad(V, r"op BisectPercentile #0: argument 'percentile_lower' has 2 entries but 'percentile_raw' "
                r"has 3"):
        run("BisectPercentile", ["x"], ["y"], **dict(good, percentile_lower=f32([1, 2])))
    with bad(V, r"op BisectPercentile #0: argument 'lengths' holds 0 at position 1; each run needs 1 to 3 "
                r"entries"):
        run("BisectPercentile", ["x"], ["y"], **dict(good, lengths=[3, 0]))
    with bad(V, r"op BisectPercentile #0: argument 'lengths' must sum to the 3 entries of 'percentile_raw'"):
        run("BisectPercentile", ["x"], ["y"], **dict(good, lengths=[1, 1]))
    with bad(V, r"op BisectPercentile #0: argument 'lengths' holds 5 at position 0"):
        run("BisectPercentile", ["x"], ["y"], **dict(good, lengths=[5, 1]))
    with bad(V, r"op BisectPercentile #0: argument 'percentile_raw': run 0 \(entries 0..1\) must be "
                r"sorted, but entry 1 is 0"):
        run("BisectPercentile", ["x"], ["y"], **dict(good, percentile_raw=f32([1, 0, 3])))
    with bad(V, r"entry 2 is nan"):
        run("BisectPercentile", ["x"], ["y"], **dict(good, percentile_raw=f32([1, 2, np.nan])))
    with bad(V, r"op BisectPercentile #0: input 0 blob 'v' must have 2 dims"):
        run("BisectPercentile", ["v"], ["y"], **good)
    feed(x3=f32(np.zeros((2, 3))))
    with bad(V, r"op BisectPercentile #0: input 0 blob 'x3' of shape \(2, 3\) float32 must have one column "
                r"per entry of argument 'lengths' \(2\)"):
        run("BisectPercentile", ["x3"], ["y"], **good)
    assert not isinstance(workspace.FetchBlob("y"), np.ndarray)  # created with the op, never written
    np.testing.assert_allclose(run("BisectPercentile", ["x"], ["y"], **good), 0)


# ---------------------------------------------------------------- BatchBoxCox
def boxcox_ref(d, l1, l2):
    d = f32(d)
    k = int(np.prod(d.shape[1:]))
    flat = d.reshape(-1, k) if d.size else d.reshape(0, k)
    t = np.maximum(flat + f32(l2).ravel(), np.float32(1e-6))
    l1 = f32(l1).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(l1 == 0, np.log(t), (np.power(t, l1) - 1) / np.where(l1 == 0, 1, l1))
    return f32(y).reshape(d.shape)


@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 3), (6,), (0, 4)])
def test_batch_box_cox_matches_reference(rng, shape):
    k = int(np.prod(shape[1:]))
    d = f32(rng.uniform(-3, 5, shape))
    l1 = f32(rng.uniform(-2, 2, k))
    l1[::2] = 0
    l2 = f32(rng.uniform(-1, 2, shape[1:]))  # any shape of k entries
    feed(d=d, l1=l1, l2=l2)
    y = run("BatchBoxCox", ["d", "l1", "l2"], ["y"], naive=1, min_block_size=4)
    assert y.shape == d.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, boxcox_ref(d, l1, l2), rtol=2e-6, atol=1e-6)


def test_batch_box_cox_in_place_clamp_and_nan():
    d = f32([[-5, 1, np.nan], [2, 0, 3]])
    l1, l2 = f32([0, 0.5, 1]), f32([0, 0, 0])
    feed(d=d, l1=l1, l2=l2)
    run("BatchBoxCox", ["d", "l1", "l2"], ["d"])
    y = workspace.FetchBlob("d")
    assert y[0, 0] == np.float32(np.log(np.float32(1e-6)))  # clamped to 1e-6
    assert np.isnan(y[0, 2])
    np.testing.assert_allclose(y[1], [np.log(2), (np.sqrt(np.float32(1e-6)) - 1) / 0.5, 2], rtol=1e-6)


def test_batch_box_cox_bad_inputs_and_gradient():
    feed(d=f32(np.ones((2, 3))), l=f32([1, 1, 1]), l2=f32([1, 1]), s=np.float32(1), i=np.ones(3, np.int32),
         e=f32(np.ones((0, 3))))
    with bad(V, r"op BatchBoxCox #0: input 2 blob 'l2' \(lambda2\) of shape \(2,\) float32 must have 3 "
                r"entries, one per column of input 0 blob 'd' of shape \(2, 3\) float32"):
        run("BatchBoxCox", ["d", "l", "l2"], ["y"])
    with bad(V, r"op BatchBoxCox #0: input 1 blob 'l2' \(lambda1\) of shape \(2,\) float32 must have 3 "
                r"entries"):
        run("BatchBoxCox", ["e", "l2", "l"], ["y"])  # empty D too
    with bad(V, r"op BatchBoxCox #0: input 0 blob 's' must have 1 to"):
        run("BatchBoxCox", ["s", "l", "l"], ["y"])
    with bad(T, r"op BatchBoxCox #0: input 1 blob 'i' must be float32"):
        run("BatchBoxCox", ["d", "i", "l"], ["y"])
    n = core.Net("bc")
    y = n.BatchBoxCox(["d", "l", "l"], "y")
    with bad(RuntimeError, r"no gradient is registered for operator type 'BatchBoxCox'"):
        n.AddGradientOperators([n.SumElements(y, "sum")])


# ---------------------------------------------------------------- PiecewiseLinearTransform
def pwl_ref(x, b, s, c):
    """One group: clamp to [b0, bP], piece k for b[k] < x <= b[k+1] (the first piece at b0)."""
    x = f32(x)
    p = len(s)
    xc = np.clip(x, b[0], b[-1])
    k = np.clip(np.searchsorted(b, xc, side="left") - 1, 0, p - 1)
    y = s[k] * xc + c[k]
    return np.where(np.isnan(x), x, y).astype(np.float32)


def pwl_params(rng, g, p):
    b = f32([np.sort(rng.choice(41, p + 1, replace=False)) / 40 for _ in range(g)])  # no repeats
    return b, f32(rng.uniform(-1, 1, (g, p))), f32(rng.uniform(-1, 1, (g, p)))


@pytest.mark.parametrize("from_args", [True, False])
@pytest.mark.parametrize("n,g,p", [(7, 2, 1), (10, 3, 4), (0, 2, 3)])
def test_pwl_general_matches_reference(rng, from_args, n, g, p):
    b, s, c = pwl_params(rng, g, p)
    x = f32(rng.randint(-5, 45, (n, g)) / 40)  # on the bounds, between them and outside
    feed(x=x, b=b, s=s, c=c)
    if from_args:
        y = run("PiecewiseLinearTransform", ["x"], ["y"], bounds=b.ravel().tolist(),
                slopes=s.ravel().tolist(), intercepts=c.ravel().tolist())
    else:
        y = run("PiecewiseLinearTransform", ["x", "b", "s", "c"], ["y"])
    ref = np.stack([pwl_ref(x[:, j], b[j], s[j], c[j]) for j in range(g)], axis=1).reshape(n, g)
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("shape", [(6,), (6, 1), (6, 2)])
def test_pwl_binary(rng, shape):
    b, s, c = pwl_params(rng, 1, 3)
    x = f32(rng.randint(-5, 45, shape) / 40)
    x[0] = np.nan
    feed(x=x, b=b, s=s, c=c)
    y = run("PiecewiseLinearTransform", ["x", "b", "s", "c"], ["y"], binary=1)
    if len(shape) == 2 and shape[1] == 2:
        pos = pwl_ref(x[:, 1], b[0], s[0], c[0])
        ref = np.stack([1 - pos, pos], axis=1)
    else:
        ref = pwl_ref(x.ravel(), b[0], s[0], c[0]).reshape(shape)
    np.testing.assert_array_equal(y, f32(ref))
    assert np.isnan(y[0]).all()


def test_pwl_piece_at_an_inner_bound_is_the_lower_one():
    feed(x=f32([0.5, 0.25, 1.5]))
    y = run("PiecewiseLinearTransform", ["x"], ["y"], binary=1, bounds=[0.0, 0.5, 1.0], slopes=[1.0, 3.0],
            intercepts=[0.0, 10.0])
    np.testing.assert_array_equal(y, f32([0.5, 0.25, 13.0]))


def test_pwl_bad_inputs():
    feed(x=f32(np.zeros((3, 2))), x3=f32(np.zeros((3, 3))), v=f32(np.zeros(3)), b=f32([0, 1, 2]),
         s=f32([1, 1]), c=f32([0, 0]), c1=f32([0]), bu=f32([0, 2, 1]), b4=f32([0, 1, 2, 3]))
    args = dict(bounds=[0.0, 1.0, 0.0, 1.0], slopes=[1.0, 1.0], intercepts=[0.0, 0.0])
    pw = "PiecewiseLinearTransform"
    with bad(V, r"op PiecewiseLinearTransform #0: arguments 'bounds', 'slopes' and 'intercepts' must be "
                r"all set or all unset \(got 4, 2 and 0 entries\)"):
        run(pw, ["x"], ["y"], bounds=args["bounds"], slopes=args["slopes"])
    with bad(V, r"op PiecewiseLinearTransform #0: takes the pieces from the arguments \(then X only\) or "
                r"from inputs \(X, bounds, slopes, intercepts\): got 4 inputs with the arguments"):
        run(pw, ["x", "b", "s", "c"], ["y"], **args)
    with bad(V, r"got 1 inputs without the arguments"):
        run(pw, ["x"], ["y"])
    with bad(V, r"got 2 inputs without the arguments"):
        run(pw, ["x", "b"], ["y"])
    with bad(V, r"op PiecewiseLinearTransform #0: argument 'bounds': the bounds of group 0 \(entries "
                r"0..1\) must be sorted, but entry 1 is -1"):
        run(pw, ["x"], ["y"], **dict(args, bounds=[0.0, -1.0, 0.0, 1.0]))
    with bad(V, r"op PiecewiseLinearTransform #0: the arguments: binary=1 takes one group of pieces, got 2"):
        run(pw, ["x"], ["y"], binary=1, **args)
    with bad(V, r"op PiecewiseLinearTransform #0: inputs 1..3 \(bounds, slopes, intercepts\): 2 slopes but 1 "
                r"intercepts"):
        run(pw, ["x", "b", "s", "c1"], ["y"])
    with bad(V, r"op PiecewiseLinearTransform #0: inputs 1..3 \(bounds, slopes, intercepts\): 2 bounds and 2 "
                r"slopes do not make G groups of P >= 1 pieces"):
        run(pw, ["x", "s", "s", "c"], ["y"])
    with bad(V, r"op PiecewiseLinearTransform #0: input 1 \(bounds\): the bounds of group 0 \(entries "
                r"0..2\) must be sorted, but entry 2 is 1"):
        run(pw, ["v", "bu", "s", "c"], ["y"], binary=1)
    with bad(V, r"op PiecewiseLinearTransform #0: input 0 blob 'x' of shape \(3, 2\) float32 must have one "
                r"column per group of pieces \(1\)"):
        run(pw, ["x", "b", "s", "c"], ["y"])
    with bad(V, r"op PiecewiseLinearTransform #0: input 0 blob 'x3' of shape \(3, 3\) float32: binary=1 "
                r"takes \[N\], \[N, 1\] or \[N, 2\]"):
        run(pw, ["x3", "b", "s", "c"], ["y"], binary=1)
    with bad(V, r"op PiecewiseLinearTransform #0: input 0 blob 'v' must have 2 dims"):
        run(pw, ["v", "b", "s", "c"], ["y"])
    assert not isinstance(workspace.FetchBlob("y"), np.ndarray)  # created with the op, never written
    np.testing.assert_array_equal(run(pw, ["x"], ["y"], **args), 0)


# ---------------------------------------------------------------- no gradients, net-creation checks
@pytest.mark.parametrize("type_,ins", [("Percentile", ["x", "vp", "l"]), ("BisectPercentile", ["x"]),
                                       ("PiecewiseLinearTransform", ["x", "b", "s", "c"])])
def test_no_gradient(type_, ins):
    ops, g_in = core.GradientRegistry.GetGradientForOp(op(type_, ins, ["y"]), ["y_grad"])
    assert ops == [] and g_in == [None] * len(ins)


def test_bad_shapes_caught_at_net_creation():
    feed(x=f32(np.zeros((2, 3))), vp=f32(np.zeros((3, 2))), l=np.array([1, 2], np.int32), l1=f32([1, 1]))
    for o in [op("Percentile", ["x", "vp", "l"], ["y"]), op("BatchBoxCox", ["x", "l1", "l1"], ["y"]),
              op("BisectPercentile", ["x"], ["y"], percentile_raw=[1.0], percentile_mapping=[1.0],
                 percentile_lower=[1.0], percentile_upper=[1.0], lengths=[1]),
              op("PiecewiseLinearTransform", ["x"], ["y"], bounds=[0.0, 1.0], slopes=[1.0],
                 intercepts=[0.0])]:
        net = core.Net("n")
        net.Proto().op.extend([o])
        with pytest.raises(ValueError, match="op %s #0" % o.type):
            workspace.CreateNet(net)
