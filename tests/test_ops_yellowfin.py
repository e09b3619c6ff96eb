"""YellowFin (csrc/ops/optim_more.c; recurrent/optimizer.py YellowFinOptimizer / build_yellowfin):
the op against a NumPy float32 transcription of Caffe2's yellowfin_op over several iterations (the
curvature window wrapping around), nesterov and zero_debias, in place and into new blobs; its
errors; the optimizer's state blobs and a small model it trains. No finite-difference test: an
optimizer step has no gradient (Caffe2: SHOULD_NOT_DO_GRADIENT)."""

import numpy as np
import pytest

from recurrent import brew, core, optimizer, workspace
from recurrent.model_helper import ModelHelper
from test_ops_math import feed, op

F = np.float32
NAMES = ["param", "moment", "lr", "mu", "curv_win", "g_avg", "g2_avg", "scalars"]


def ma(b, avg, x):
    return F(b * avg + (F(1) - b) * x)


def yellowfin_ref(state, g, it, beta=0.999, eps=1e-6, nesterov=False, zero_debias=True):
    """Caffe2's YellowFinOp in float32, step by step (sums of squares in double, as ours)."""
    w, m, lr, mu, win, ga, g2a, S = (np.array(x, np.float32).copy() for x in state)
    b, eps = F(beta), F(eps)
    deb = F(1.0 / (1.0 - float(b) ** it)) if zero_debias else F(1)
    lr_in, mu_in = F(lr.ravel()[0]), F(mu.ravel()[0])
    mo = (mu_in * m + lr_in * g).astype(F)
    w2 = (w - (F(1) + mu_in) * mo + mu_in * m) if nesterov else (w - mo)
    ga2 = (b * ga + (F(1) - b) * g).astype(F)
    g2a2 = (b * g2a + (F(1) - b) * (g * g)).astype(F)
    gd = (deb * ga2).astype(F)
    n2 = max(eps, F(np.sum(g.astype(np.float64) ** 2)))
    S = S.ravel().copy()
    S[1] = ma(b, S[1], n2)
    n2_deb = F(deb * S[1])
    S[0] = ma(b, S[0], np.sqrt(n2))
    win = win.ravel().copy()
    win[(it - 1) % win.size] = np.log(n2)
    valid = win[:min(win.size, it)]
    S[2] = ma(b, S[2], valid.min())
    S[3] = ma(b, S[3], valid.max())
    hmin = max(eps, F(np.exp(F(deb * S[2]))))
    hmax = max(eps, F(np.exp(F(deb * S[3]))))
    var = max(eps, F(n2_deb - F(np.sum(gd.astype(np.float64) ** 2))))
    S[4] = ma(b, S[4], F(S[0] / S[1]))
    dist = F(deb * S[4])
    lr2, mu2 = lr_in, mu_in
    if it > 1:
        ratio = F(np.sqrt(F(hmax / hmin)))
        r = F((ratio - F(1)) / (ratio + F(1)))
        pre = F(dist * hmin)
        p = F(pre * pre / (F(2) * var))
        w3 = F((-np.sqrt(F(p * p + F(4.0 / 27.0) * p * p * p)) - p) / F(2))
        wc = F(np.sign(w3) if w3 != 0 else -1) * F(np.abs(w3) ** F(1.0 / 3.0))
        y = F(wc - p / F(3) / wc)
        root = F(y + F(1))
        mu_new = max(F(root * root), F(r * r))
        lr_new = F(F(1) - np.sqrt(mu_new)) ** 2 / hmin
        mu2, lr2 = ma(b, mu_in, mu_new), ma(b, lr_in, F(lr_new))
    return [w2.astype(F), mo, np.array([lr2], F), np.array([mu2], F), win, ga2, g2a2, S]


def fresh_state(rng, shape, width, alpha=0.1, mu=0.0):
    return [rng.randn(*shape).astype(F), np.zeros(shape, F), np.array([alpha], F), np.array([mu], F),
            np.zeros(width, F), np.zeros(shape, F), np.zeros(shape, F), np.zeros(5, F)]


@pytest.mark.parametrize("nesterov,zero_debias", [(0, 1), (1, 1), (0, 0), (1, 0)])
def test_against_numpy_over_iterations(rng, nesterov, zero_debias):
    """Twelve in-place steps with a window of 5 (it wraps around) against the reference."""
    args = dict(beta=0.9, epsilon=1e-6, curv_win_width=5, nesterov=nesterov, zero_debias=zero_debias)
    ref = fresh_state(rng, (3, 4), 5)
    feed(**dict(zip(NAMES, ref)))
    yf = op("YellowFin", NAMES + ["grad", "iter"], NAMES, **args)
    for it in range(1, 13):
        g = rng.randn(3, 4).astype(F) * F(0.5 + it % 3)
        feed(grad=g, iter=np.array([it], np.int32))
        workspace.RunOperatorOnce(yf)
        ref = yellowfin_ref(ref, g, it, beta=0.9, nesterov=nesterov, zero_debias=zero_debias)
        for name, want in zip(NAMES, ref):
            got = workspace.FetchBlob(name)
            assert np.isfinite(want).all(), (name, it)
            np.testing.assert_allclose(got.ravel(), want.ravel(), rtol=2e-5, atol=1e-6, err_msg="%s at iteration "
                                       "%d" % (name, it))
            feed(**{name: want.reshape(got.shape)})  # go on from the reference: errors do not compound
    assert float(workspace.FetchBlob("mu")[0]) != 0.0  # the tuner ran (from iteration 2 on)


def test_into_new_blobs_and_iteration_1(rng):
    """Outputs that are not the inputs' blobs: the same values, the inputs left as they were; on
    iteration 1 lr and mu are the inputs' (Caffe2 left such outputs uninitialised)."""
    state = fresh_state(rng, (6,), 3, alpha=0.05, mu=0.2)
    outs = [n + "_out" for n in NAMES]
    for it in range(1, 7):
        g = rng.randn(6).astype(F)
        feed(**dict(zip(NAMES, state)), grad=g, iter=np.array([it], np.int32))
        feed(**{o: np.full_like(v, 7.0) for o, v in zip(outs, state)})  # stale values the op must not keep
        workspace.RunOperatorOnce(op("YellowFin", NAMES + ["grad", "iter"], outs, curv_win_width=3))
        want = yellowfin_ref(state, g, it)
        for name, w in zip(outs, want):
            assert np.isfinite(w).all()
            np.testing.assert_allclose(workspace.FetchBlob(name).ravel(), w.ravel(), rtol=2e-5, atol=1e-6,
                                       err_msg="%s at iteration %d" % (name, it))
        for name, s in zip(NAMES, state):
            np.testing.assert_array_equal(workspace.FetchBlob(name), s)
        if it == 1:
            assert workspace.FetchBlob("lr_out").tolist() == [np.float32(0.05)]
            assert workspace.FetchBlob("mu_out").tolist() == [np.float32(0.2)]
        state = want
    assert workspace.FetchBlob("mu_out")[0] != np.float32(0.2)


def test_errors(rng):
    state = fresh_state(rng, (2, 3), 4)
    feed(**dict(zip(NAMES, state)), grad=np.ones((2, 3), F), iter=np.array([1], np.int32))
    ins = NAMES + ["grad", "iter"]

    def raises(exc, match, **args):
        with pytest.raises(exc, match=match):
            workspace.RunOperatorOnce(op("YellowFin", ins, NAMES, **args))
    raises(ValueError, r"op YellowFin #0: input 4 blob 'curv_win' \(the curvature window of curv_win_width "
           r"values\) must hold 20 values, got \(4,\) float32")
    feed(scalars=np.zeros(4, F))
    raises(ValueError, r"input 7 blob 'scalars' \(the 5 scalars of the moving averages\) must hold 5 values",
           curv_win_width=4)
    feed(scalars=np.zeros(5, F), g_avg=np.zeros((3, 2), F))
    raises(ValueError, r"input 5 blob 'g_avg' must have the shape of input 0 blob 'param' \(2, 3\) float32",
           curv_win_width=4)
    feed(g_avg=np.zeros((2, 3), F), iter=np.array([0], np.int32))
    raises(ValueError, r"input 9 blob 'iter' \(the iteration counter\) must be >= 1", curv_win_width=4)
    feed(iter=np.array([1], np.int32))
    raises(ValueError, r"argument beta must be in \[0, 1\), got 1", curv_win_width=4, beta=1.0)
    raises(ValueError, r"argument epsilon must be finite and > 0, got 0", curv_win_width=4, epsilon=0.0)
    raises(ValueError, r"argument curv_win_width must be in \[1, 2147483647\], got 0", curv_win_width=0)
    raises(ValueError, r"arguments nesterov and zero_debias must be 0 or 1, got 2 and 1", curv_win_width=4,
           nesterov=2)
    for name, s in zip(NAMES, state):  # nothing was written
        if name not in ("scalars",):
            np.testing.assert_array_equal(workspace.FetchBlob(name), s)
    workspace.RunOperatorOnce(op("YellowFin", ins, NAMES, curv_win_width=4))  # usable


def test_build_yellowfin_trains_a_model(rng):
    """build_yellowfin adds Caffe2's state blobs and one YellowFin op per parameter; a least-squares
    fit by an FC layer gets its loss down."""
    x = rng.randn(64, 3).astype(F)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], F) + F(0.3)).astype(F)
    m = ModelHelper(name="yf_fit")
    pred = brew.fc(m, "x", "pred", 3, 1)
    dist = m.net.SquaredL2Distance([pred, "y"], "dist")
    loss = m.net.AveragedLoss(dist, "loss")
    m.AddGradientOperators([loss])
    opt = optimizer.build_yellowfin(m, base_learning_rate=0.1, curv_win_width=10)
    assert isinstance(opt, optimizer.YellowFinOptimizer)
    assert [o.type for o in m.net.Proto().op].count("YellowFin") == 2
    feed(x=x, y=y)
    workspace.RunNetOnce(m.param_init_net)
    for suffix, shape in (("_moment", (1, 3)), ("_curv_win", (10,)), ("_lr_avg", (1,)), ("_mu_avg", (1,)),
                          ("_g_avg", (1, 3)), ("_g2_avg", (1, 3)), ("_scalars_memory", (5,))):
        assert workspace.FetchBlob("pred_w" + suffix).shape == shape
    workspace.CreateNet(m.net)
    workspace.RunNet(m.net)
    first = float(workspace.FetchBlob("loss"))
    workspace.RunNet(m.net, 200)
    assert float(workspace.FetchBlob("loss")) < 0.1 * first
    assert workspace.FetchBlob("optimizer_iteration").tolist() == [201]
    with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
        optimizer.YellowFinOptimizer(alpha=0)
    with pytest.raises(ValueError, match="beta must be in"):
        optimizer.YellowFinOptimizer(beta=1.0)


def test_shape_inference_and_no_gradient(rng):
    net = core.Net("yf_shapes")
    net.YellowFin(NAMES + ["grad", "iter"], NAMES, curv_win_width=4)
    dims = {n: s.shape for n, s in zip(NAMES, fresh_state(rng, (2, 3), 4))}
    dims.update(grad=(2, 3), iter=(1,))
    shapes, _ = workspace.InferShapesAndTypes([net], blob_dimensions=dims,
                                              blob_types={k: core.DataType.FLOAT for k in dims})
    assert shapes["curv_win"] == [4] and shapes["param"] == [2, 3] and shapes["scalars"] == [5]
    assert core.GradientRegistry.GetGradientForOp(net.Proto().op[0], [None] * 8)[0] == []


@pytest.mark.parametrize("zero_debias,coef", [(False, 1.0), (False, 0.01), (True, 1.0)])
def test_against_an_independent_float64_model(zero_debias, coef):
    """The scenario of Caffe2's optimizer_test (TestYellowFin, run by hand there): gradient coef * t at
    iteration t for every one of n weights, whose statistics have closed forms; lr and mu tracked in
    float64 agree with the op's within 1%."""
    n, iters, b = 100, 30, 0.999
    net, init = core.Net("yf_model"), core.Net("yf_model_init")
    w = init.ConstantFill([], "w", shape=[n], value=0.0)
    it = optimizer.build_iteration(init, net)
    grad = net.Mul([init.ConstantFill([], "coef", shape=[n], value=coef), net.Cast([it], "it_f")], "g",
                   broadcast=1)
    info = type("Info", (), {"blob": w, "grad": grad, "name": "w"})()
    optimizer.YellowFinOptimizer(alpha=1.0, mu=0.0, beta=b, curv_win_width=20, zero_debias=zero_debias)._run(
        net, init, info)
    workspace.RunNetOnce(init)
    workspace.CreateNet(net)
    sq = nrm = g = hmax = hmin = dist = 0.0
    lr, mu = 1.0, 0.0
    for i in range(1, iters + 1):
        workspace.RunNet(net)
        gv = coef * i
        sq, nrm, g = b * sq + (1 - b) * gv * gv * n, b * nrm + (1 - b) * abs(gv) * np.sqrt(n), b * g + (1 - b) * gv
        hmax = b * hmax + (1 - b) * np.log(gv * gv * n)                       # the window holds 1..i
        hmin = b * hmin + (1 - b) * np.log((max(1, i - 19) * coef) ** 2 * n)  # its oldest entry
        dist = b * dist + (1 - b) * nrm / sq
        d = 1 - b ** i if zero_debias else 1.0
        if i > 1:
            var = sq / d - g * g * n / d ** 2
            h_lo, h_hi = np.exp(hmin / d), np.exp(hmax / d)
            p = (dist / d) ** 2 * h_lo ** 2 / 2 / var
            w3 = (-np.sqrt(p * p + 4 / 27 * p ** 3) - p) / 2
            y = np.sign(w3) * abs(w3) ** (1 / 3) - p / 3 / (np.sign(w3) * abs(w3) ** (1 / 3))
            m = max((y + 1) ** 2, ((np.sqrt(h_hi / h_lo) - 1) / (np.sqrt(h_hi / h_lo) + 1)) ** 2)
            lr, mu = b * lr + (1 - b) * (1 - np.sqrt(m)) ** 2 / h_lo, b * mu + (1 - b) * m
            np.testing.assert_allclose(workspace.FetchBlob("w_lr_avg")[0], lr, rtol=1e-2, err_msg="lr at %d" % i)
            np.testing.assert_allclose(workspace.FetchBlob("w_mu_avg")[0], mu, rtol=1e-2, err_msg="mu at %d" % i)
