"""The ops of Caffe2's DecayAdagrad, GFtrl, Storm and LARS (csrc/ops/optim_more.c):
DecayAdagrad, GFtrl, Storm, SparseStorm, Lars.

Every op against a float64 NumPy reference over several steps in place, in place
equal to out of place bit for bit, SparseStorm against Storm on the named rows
(and repeated rows one occurrence at a time), and bad input by exception type
and message.
"""

import numpy as np
import pytest

from recurrent import core, workspace


def run(op_type, feeds, outputs, inputs=None, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    inputs = list(feeds) if inputs is None else inputs
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))
    return [workspace.FetchBlob(o) for o in outputs]


def raises(exc, match, op_type, feeds, outputs, inputs=None, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    inputs = list(feeds) if inputs is None else inputs
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))


def f32(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


def one(v):
    return np.array([v], np.float32)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


# ---------------------------------------------------------------- references (float64)
def ref_decay_adagrad(w, m, v, g, lr, it, beta1=0.9, eps=1e-5, wd=0.0, bias=True):
    w, m, v, g = (np.asarray(a, np.float64) for a in (w, m, v, g))
    c = 1 - beta1 ** (it + 1) if bias else 1.0
    m = beta1 * m + (1 - beta1) * g
    v = v + g * g
    return w + lr * (m / c / (np.sqrt(v) + eps) + wd * w), m, v


def ref_gftrl(w, nz, g, alpha=0.005, beta=1.0, l1=0.001, l2=0.001):
    w, nz, g = (np.asarray(a, np.float64) for a in (w, nz, g))
    O = w.shape[0]
    w2, g2 = w.reshape(O, -1), g.reshape(O, -1)
    n, z = nz[..., 0].reshape(O, -1), nz[..., 1].reshape(O, -1)
    n1 = n + g2 * g2
    sigma = (np.sqrt(n1) - np.sqrt(n)) / alpha
    z1 = z + g2 - sigma * w2
    zn = np.sqrt((z1 * z1).sum(axis=0))          # one norm per column (group)
    thr = l1 * np.sqrt(O)
    with np.errstate(divide="ignore", invalid="ignore"):
        nw = np.where(zn > thr, z1 * (thr / zn - 1) / ((beta + np.sqrt(n1)) / alpha + l2), 0.0)
    return nw.reshape(w.shape), np.stack([n1.reshape(w.shape), z1.reshape(w.shape)], axis=-1)


def ref_storm(w, m, s, g, lr, momentum=10.0, beta=0.1):
    w, m, g = (np.asarray(a, np.float64) for a in (w, m, g))
    s = float(np.asarray(s).reshape(-1)[0]) + (g * g).sum()
    nlr = lr * (beta + s) ** (-1.0 / 3)
    a = momentum * nlr * nlr
    m = g + (1 - a) * (m - g)
    return w + nlr * m, m, s


def ref_lars(x, dx, wd, trust, lr_max, offset=0.5, lr_min=0.02):
    x, dx = np.asarray(x, np.float64), np.asarray(dx, np.float64)
    xn = np.sqrt((x * x).sum())
    val = trust / (np.sqrt((dx * dx).sum()) / xn + wd + offset) if xn > 0 else 1.0
    return max(min(val, lr_max), lr_min)


# ---------------------------------------------------------------- DecayAdagrad
@pytest.mark.parametrize("args", [{}, dict(beta1=0.0, epsilon=0.1, weight_decay=0.01),
                                  dict(beta1=0.5, bias_correction_first=0, epsilon=1e-3),
                                  dict(beta1=0.99, weight_decay=0.1)])
def test_decay_adagrad_steps_in_place_match_numpy(rng, args):
    shape = (3, 4)
    w, m, v = f32(rng, *shape), f32(rng, *shape), np.abs(f32(rng, *shape))
    ref = [a.astype(np.float64) for a in (w, m, v)]
    for b, a in zip(("w", "m", "v"), (w, m, v)):
        workspace.FeedBlob(b, a)
    kw = dict(beta1=args.get("beta1", 0.9), eps=args.get("epsilon", 1e-5), wd=args.get("weight_decay", 0.0),
              bias=bool(args.get("bias_correction_first", 1)))
    for step in range(4):
        g, lr, it = f32(rng, *shape), -0.05 * (step + 1), step + 2
        out = run("DecayAdagrad", {"g": g, "lr": one(lr), "it": np.array([it], np.int32)}, ["w", "m", "v"],
                  inputs=["w", "m", "v", "g", "lr", "it"], **args)
        ref = ref_decay_adagrad(*ref, g, lr, it, **kw)
        for o, r in zip(out, ref):
            close(o, r)


def test_decay_adagrad_out_of_place_equals_in_place(rng):
    w, m, v, g = f32(rng, 5), f32(rng, 5), np.abs(f32(rng, 5)), f32(rng, 5)
    feeds = {"w": w, "m": m, "v": v, "g": g, "lr": one(-0.1), "it": np.array([3], np.int32)}
    out = run("DecayAdagrad", feeds, ["w2", "m2", "v2"], weight_decay=0.2)
    inplace = run("DecayAdagrad", feeds, ["w", "m", "v"], weight_decay=0.2)
    for a, b in zip(out, inplace):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(workspace.FetchBlob("g"), g)


def test_decay_adagrad_bad_input(rng):
    feeds = {"w": f32(rng, 2, 3), "m": f32(rng, 2, 3), "v": f32(rng, 3, 2), "g": f32(rng, 2, 3),
                      "lr": one(-0.1),
             "it": np.array([0], np.int32)}
    raises(ValueError,
           r"DecayAdagrad.*input 2 blob 'v' must have the shape of input 0 blob 'w' \(2, 3\) float32, "
           r"got \(3, 2\) float32", "DecayAdagrad", feeds, ["w", "m", "v"])
    feeds["v"] = f32(rng, 2, 3)
    feeds["it"] = np.array([0.0], np.float32)
    raises(TypeError, r"DecayAdagrad.*input 5 blob 'it' \(the iteration counter\) must be int32",
           "DecayAdagrad", feeds, ["w", "m", "v"])
    feeds["it"] = np.array([-1], np.int32)
    raises(ValueError, r"input 5 blob 'it' \(the iteration counter\) must be >= 0, got -1", "DecayAdagrad",
           feeds,
           ["w", "m", "v"])
    feeds["it"] = np.array([1], np.int32)
    feeds["lr"] = np.zeros(2, np.float32)
    raises(ValueError, r"DecayAdagrad.*input 4 blob 'lr'", "DecayAdagrad", feeds, ["w", "m", "v"])
    feeds["lr"] = one(-0.1)
    raises(ValueError, r"DecayAdagrad.*argument beta1 must be in \[0, 1\) with bias_correction_first, got 1",
           "DecayAdagrad", feeds, ["w", "m", "v"], beta1=1.0)
    raises(ValueError, r"argument epsilon must be finite and >= 0, got -1", "DecayAdagrad", feeds, ["w",
           "m", "v"],
           epsilon=-1.0)
    raises(ValueError, r"argument weight_decay must be finite and >= 0", "DecayAdagrad", feeds, ["w", "m",
           "v"],
           weight_decay=float("nan"))
    # the workspace stays usable and untouched by the failed runs
    np.testing.assert_array_equal(workspace.FetchBlob("w"), feeds["w"])
    run("DecayAdagrad", feeds, ["w", "m", "v"], beta1=1.0, bias_correction_first=0)


# ---------------------------------------------------------------- GFtrl
@pytest.mark.parametrize("shape,args", [((3, 4), {}), ((4, 2, 3), dict(alpha=0.1, beta=0.5, lambda1=0.2,
                                                                      lambda2=0.0)),
                                        ((5,), dict(alpha=0.05, lambda1=100.0))])
def test_gftrl_steps_in_place_match_numpy(rng, shape, args):
    w = f32(rng, *shape)
    nz = np.zeros(shape + (2,), np.float32)
    workspace.FeedBlob("w", w)
    workspace.FeedBlob("nz", nz)
    ref = (w.astype(np.float64), nz.astype(np.float64))
    kw = dict(alpha=args.get("alpha", 0.005), beta=args.get("beta", 1.0), l1=args.get("lambda1", 0.001),
              l2=args.get("lambda2", 0.001))
    zeros = 0
    for step in range(4):
        g = f32(rng, *shape)
        out = run("GFtrl", {"g": g}, ["w", "nz"], inputs=["w", "nz", "g"], **args)
        ref = ref_gftrl(*ref, g, **kw)
        close(out[0], ref[0])
        close(out[1], ref[1])
        zeros += int((out[0] == 0).sum())
    if args.get("lambda1", 0) >= 5:
        assert zeros > 0  # the group lasso zeroes whole columns


def test_gftrl_zeroes_whole_groups():
    # column 0 has a tiny gradient, column 1 a large one: only column 0 is zeroed
    w = np.zeros((2, 2), np.float32)
    g = np.array([[1e-4, 1.0], [1e-4, -2.0]], np.float32)
    out = run("GFtrl", {"w": w, "nz": np.zeros((2, 2, 2), np.float32), "g": g}, ["w", "nz"], lambda1=0.1)
    assert (out[0][:, 0] == 0).all() and (out[0][:, 1] != 0).all()


def test_gftrl_alpha_input_replaces_argument(rng):
    w, g = f32(rng, 3, 2), f32(rng, 3, 2)
    nz = np.abs(f32(rng, 3, 2, 2))
    a = run("GFtrl", {"w": w, "nz": nz, "g": g, "al": one(0.3)}, ["w2", "nz2"])
    b = run("GFtrl", {"w": w, "nz": nz, "g": g}, ["w3", "nz3"], alpha=0.3)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    close(a[0], ref_gftrl(w, nz, g, alpha=0.3)[0])


def test_gftrl_bad_input(rng):
    feeds = {"w": f32(rng, 2, 3), "nz": np.zeros((2, 3), np.float32), "g": f32(rng, 2, 3)}
    raises(ValueError,
           r"GFtrl.*input 1 blob 'nz' \(n and z\) must have the shape of input 0 blob 'w' \(2, 3\) "
           r"float32 plus a last dim of 2, got \(2, 3\) float32", "GFtrl", feeds, ["w", "nz"])
    feeds["nz"] = np.zeros((2, 3, 2), np.float32)
    feeds["g"] = f32(rng, 3, 2)
    raises(ValueError,
           r"GFtrl.*input 2 blob 'g' must have the shape of input 0 blob 'w' \(2, 3\) float32, "
           r"got \(3, 2\) float32",
           "GFtrl", feeds, ["w", "nz"])
    feeds["g"] = f32(rng, 2, 3)
    raises(ValueError, r"GFtrl.*alpha is given both as input 3 blob 'al' and as an argument", "GFtrl",
           dict(feeds, al=one(0.1)), ["w", "nz"], alpha=0.1)
    raises(ValueError, r"GFtrl.*input 3 blob 'al' \(alpha\) must be finite and > 0, got 0", "GFtrl",
           dict(feeds, al=one(0.0)), ["w", "nz"])
    raises(ValueError, r"argument alpha must be finite and > 0, got 0", "GFtrl", feeds, ["w", "nz"],
           alpha=0.0)
    raises(ValueError, r"arguments beta and lambda2 must not both be 0", "GFtrl", feeds, ["w", "nz"],
           beta=0.0,
           lambda2=0.0)
    raises(ValueError, r"argument lambda1 must be finite and >= 0", "GFtrl", feeds, ["w", "nz"], lambda1=-1.0)
    raises(ValueError, r"GFtrl.*input 0 blob 's' \(the variable\) must have at least one dim", "GFtrl",
           {"s": np.array(1.0, np.float32), "nz1": np.zeros((2,), np.float32), "gs": np.array(1.0,
                          np.float32)},
           ["s", "nz1"])
    np.testing.assert_array_equal(workspace.FetchBlob("w"), feeds["w"])


def test_gftrl_empty_variable_does_nothing():
    out = run("GFtrl", {"w": np.zeros((0, 3), np.float32), "nz": np.zeros((0, 3, 2), np.float32),
                        "g": np.zeros((0, 3), np.float32)}, ["w", "nz"])
    assert out[0].shape == (0, 3) and out[1].shape == (0, 3, 2)


# ---------------------------------------------------------------- Storm
@pytest.mark.parametrize("args", [{}, dict(momentum=2.0, beta=1.0), dict(momentum=0.0, beta=0.5)])
def test_storm_steps_in_place_match_numpy(rng, args):
    shape = (3, 4)
    w, m = f32(rng, *shape), np.zeros(shape, np.float32)
    workspace.FeedBlob("w", w)
    workspace.FeedBlob("m", m)
    workspace.FeedBlob("s", one(0.01))
    ref = (w.astype(np.float64), m.astype(np.float64), 0.01)
    kw = dict(momentum=args.get("momentum", 10.0), beta=args.get("beta", 0.1))
    for step in range(4):
        g, lr = f32(rng, *shape), -0.1 * (step + 1)
        out = run("Storm", {"g": g, "lr": one(lr)}, ["w", "m", "s"], inputs=["w", "m", "s", "g", "lr"],
                  **args)
        ref = ref_storm(*ref, g, lr, **kw)
        close(out[0], ref[0])
        close(out[1], ref[1])
        close(out[2], [ref[2]])


def test_storm_out_of_place_equals_in_place(rng):
    feeds = {"w": f32(rng, 4), "m": f32(rng, 4), "s": one(2.0), "g": f32(rng, 4), "lr": one(-0.3)}
    a = run("Storm", feeds, ["w2", "m2", "s2"], momentum=3.0)
    b = run("Storm", feeds, ["w", "m", "s"], momentum=3.0)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_sparse_storm_matches_storm_on_named_rows(rng):
    w, m = f32(rng, 5, 3), np.zeros((5, 3), np.float32)
    idx = np.array([3, 0], np.int32)
    gs = f32(rng, 2, 3)
    dense = np.zeros((5, 3), np.float32)
    dense[idx] = gs
    d = run("Storm", {"w": w, "m": m, "s": one(0.5), "g": dense, "lr": one(-0.2)}, ["wd", "md", "sd"])
    s = run("SparseStorm", {"ws": w, "ms": m, "ss": one(0.5), "gs": gs, "i": idx, "lr": one(-0.2)},
            ["ws", "ms", "ss"])
    # the moment was 0, so rows not named stay as they were in both
    for a, b in zip(d, s):
        np.testing.assert_array_equal(a, b)


def test_sparse_storm_repeated_rows_one_occurrence_at_a_time(rng):
    w, m = f32(rng, 3, 2), f32(rng, 3, 2)
    idx = np.array([[1, 1], [2, 1]], np.int32)
    g = f32(rng, 2, 2, 2)
    out = run("SparseStorm", {"w": w, "m": m, "s": one(0.1), "g": g, "i": idx, "lr": one(-0.5)}, ["w", "m",
              "s"],
              momentum=1.0, beta=0.2)
    s = 0.1 + (g.astype(np.float64) ** 2).sum()
    nlr = -0.5 * (0.2 + s) ** (-1 / 3)
    a = nlr * nlr
    rw, rm = w.astype(np.float64), m.astype(np.float64)
    for k, i in enumerate(idx.reshape(-1)):
        gk = g.reshape(4, 2)[k]
        rm[i] = gk + (1 - a) * (rm[i] - gk)
        rw[i] = rw[i] + nlr * rm[i]
    close(out[0], rw)
    close(out[1], rm)
    close(out[2], [s])


def test_sparse_storm_no_indices_changes_nothing(rng):
    w = f32(rng, 3, 2)
    out = run("SparseStorm", {"w": w, "m": w, "s": one(0.1), "g": np.zeros((0, 2), np.float32),
                              "i": np.zeros(0, np.int32), "lr": one(-0.5)}, ["w", "m", "s"])
    np.testing.assert_array_equal(out[0], w)
    np.testing.assert_array_equal(out[2], one(0.1))


def test_storm_bad_input(rng):
    feeds = {"w": f32(rng, 2, 3), "m": f32(rng, 2, 3), "s": np.zeros(2, np.float32), "g": f32(rng, 2, 3),
             "lr": one(-0.1)}
    raises(ValueError, r"Storm.*input 2 blob 's' \(the sum of squared gradients\)", "Storm", feeds, ["w",
           "m", "s"])
    feeds["s"] = one(-5.0)
    raises(ValueError,
           r"Storm.*input 2 blob 's' \(the sum of squared gradients\) must be finite with beta \+ sum "
           r"> 0 after adding this gradient's squares, got -5", "Storm", dict(feeds, g=np.zeros((2, 3),
                                                                              np.float32)),
           ["w", "m", "s"])
    feeds["s"] = one(0.0)
    feeds["m"] = f32(rng, 3, 2)
    raises(ValueError,
           r"Storm.*input 1 blob 'm' must have the shape of input 0 blob 'w' \(2, 3\) float32, "
           r"got \(3, 2\) float32",
           "Storm", feeds, ["w", "m", "s"])
    feeds["m"] = f32(rng, 2, 3)
    raises(ValueError, r"argument momentum must be finite and >= 0, got -1", "Storm", feeds, ["w", "m", "s"],
           momentum=-1.0)
    raises(ValueError, r"argument beta must be finite and >= 0", "Storm", feeds, ["w", "m", "s"],
           beta=float("inf"))
    np.testing.assert_array_equal(workspace.FetchBlob("w"), feeds["w"])


def test_sparse_storm_bad_input(rng):
    w = f32(rng, 4, 2)
    feeds = {"w": w, "m": w.copy(), "s": one(0.1), "g": f32(rng, 2, 2), "i": np.array([0, 4], np.int32),
             "lr": one(-0.1)}
    raises(IndexError, r"SparseStorm.*input 4 blob 'i'.*4", "SparseStorm", feeds, ["w", "m", "s"])
    np.testing.assert_array_equal(workspace.FetchBlob("w"), w)
    np.testing.assert_array_equal(workspace.FetchBlob("s"), one(0.1))
    feeds["i"] = np.array([0, 1], np.float32)
    raises(TypeError, r"SparseStorm.*input 4 blob 'i'.*int32", "SparseStorm", feeds, ["w", "m", "s"])
    feeds["i"] = np.array([0, 1], np.int32)
    feeds["g"] = f32(rng, 2, 3)
    raises(ValueError, r"SparseStorm.*input 3 blob 'g' \(the gradient\)", "SparseStorm", feeds, ["w", "m",
           "s"])
    feeds["g"] = f32(rng, 2, 2)
    raises(ValueError, r"SparseStorm.*output 0.*must be.*'w'", "SparseStorm", feeds, ["w2", "m", "s"])


# ---------------------------------------------------------------- Lars
@pytest.mark.parametrize("args,wd,trust,lr_max", [({}, 0.0, 1.0, 1e30), (dict(offset=0.1, lr_min=0.0), 0.01,
                         0.5, 2.0),
                                                  (dict(offset=2.0, lr_min=0.3), 0.0, 1.0, 10.0)])
def test_lars_matches_numpy(rng, args, wd, trust, lr_max):
    for _ in range(3):
        x, dx = f32(rng, 3, 4), f32(rng, 3, 4) * rng.rand()
        out = run("Lars", {"x": x, "dx": dx, "wd": one(wd), "t": one(trust), "mx": one(lr_max)}, ["r"],
                  **args)
        assert out[0].shape == (1,)
        close(out[0], [ref_lars(x, dx, wd, trust, lr_max, args.get("offset", 0.5), args.get("lr_min", 0.02))])


def test_lars_clips_and_zero_cases(rng):
    x = np.array([3.0, 4.0], np.float32)
    feeds = {"x": x, "dx": np.zeros(2, np.float32), "wd": one(0.0), "t": one(1.0), "mx": one(1.5)}
    assert run("Lars", feeds, ["r"], offset=0.5)[0][0] == np.float32(1.5)     # 1 / 0.5 = 2, clipped to 1.5
    assert run("Lars", feeds, ["r"], offset=0.0)[0][0] == np.float32(1.5)     # 1 / 0 -> lr_max
    feeds["t"] = one(0.0)
    assert run("Lars", feeds, ["r"], offset=0.0, lr_min=0.25)[0][0] == np.float32(0.25)
    feeds["dx"] = np.array([1.0, 0.0], np.float32)
    feeds["t"] = one(0.001)
    assert run("Lars", feeds, ["r"])[0][0] == np.float32(0.02)                # 0.001 / 0.7, raised to lr_min
    feeds["x"] = np.zeros(2, np.float32)
    feeds["t"] = one(1.0)
    feeds["mx"] = one(0.75)
    assert run("Lars", feeds, ["r"])[0][0] == np.float32(0.75)                # |x| = 0: 1, clipped


def test_lars_bad_input(rng):
    feeds = {"x": f32(rng, 2, 3), "dx": f32(rng, 3, 2), "wd": one(0.0), "t": one(1.0), "mx": one(1.0)}
    raises(ValueError,
           r"Lars.*input 1 blob 'dx' must have the shape of input 0 blob 'x' \(2, 3\) float32, "
           r"got \(3, 2\) float32",
           "Lars", feeds, ["r"])
    feeds["dx"] = f32(rng, 2, 3)
    raises(ValueError, r"Lars.*input 2 blob 'wd' \(the weight decay\) must be finite and >= 0, got -1",
           "Lars",
           dict(feeds, wd=one(-1.0)), ["r"])
    raises(ValueError, r"Lars.*input 3 blob 't' \(the trust\)", "Lars", dict(feeds, t=np.ones(2, np.float32)),
           ["r"])
    raises(ValueError, r"Lars.*input 4 blob 'mx' \(the maximum rate\) must be finite and >= 0.5, got 0.1",
           "Lars",
           dict(feeds, mx=one(0.1)), ["r"], lr_min=0.5)
    raises(ValueError, r"Lars.*argument offset must be finite and >= 0, got -1", "Lars", feeds, ["r"],
           offset=-1.0)
    raises(ValueError, r"Lars.*argument lr_min must be finite and >= 0", "Lars", feeds, ["r"], lr_min=-0.1)


def test_ops_have_no_gradient():
    for op_type in ("DecayAdagrad", "GFtrl", "Storm", "SparseStorm", "Lars"):
        assert core.IsOperator(op_type)


def test_shapes_checked_at_net_creation(rng):
    for name, value in {"w": f32(rng, 2, 3), "m": f32(rng, 3, 2), "s": one(0.0), "g": f32(rng, 2, 3),
                        "lr": one(-0.1), "nz": np.zeros((2, 3), np.float32)}.items():
        workspace.FeedBlob(name, value)
    net = core.Net("storm_check")
    net.Storm(["w", "m", "s", "g", "lr"], ["w", "m", "s"])
    with pytest.raises(ValueError, match=r"net 'storm_check(_\d+)?': op Storm #0: input 1 blob 'm' must have "
                                         r"the shape of input 0 blob 'w'"):
        workspace.CreateNet(net)
    net = core.Net("gftrl_check")
    net.GFtrl(["w", "nz", "g"], ["w", "nz"])
    with pytest.raises(ValueError, match=r"op GFtrl #0: input 1 blob 'nz' \(n and z\)"):
        workspace.CreateNet(net)
