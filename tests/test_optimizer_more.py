"""recurrent.optimizer's build_decay_adagrad, build_gftrl, build_storm and the
``lars`` option of SgdOptimizer / AdagradOptimizer / StormOptimizer (Caffe2's).

Each trains a small model (FC -> SquaredL2Distance -> AveragedLoss) a few
iterations; the gradients each run computed are fetched and the whole update is
recomputed in float64 NumPy. A Gather'ed embedding checks the sparse paths
(SparseAdagrad for DecayAdagrad, SparseStorm) row by row.
"""
import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, workspace
from recurrent.model_helper import ParameterTags

N, D_IN, D_OUT = 5, 4, 3
V, D, K = 8, 3, 2


def small_model(name, seed=0):
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name=name)
    fc = brew.fc(m, "x", "y", dim_in=D_IN, dim_out=D_OUT)
    dist = m.net.SquaredL2Distance([fc, "target"], "dist")
    loss = m.net.AveragedLoss(dist, "loss")
    m.AddGradientOperators([loss])
    workspace.FeedBlob("x", rng.standard_normal((N, D_IN)).astype(np.float32))
    workspace.FeedBlob("target", rng.standard_normal((N, D_OUT)).astype(np.float32))
    return m, loss


def run_steps(m, steps):
    """Runs the training net `steps` times; yields (before, grads, after, iteration) per step."""
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    names = [str(p) for p in m.params]
    for _ in range(steps):
        before = {p: workspace.FetchBlob(p).astype(np.float64) for p in names}
        workspace.RunNet(m.net)
        grads = {p: workspace.FetchBlob(str(m.param_to_grad[p])).astype(np.float64) for p in names}
        after = {p: workspace.FetchBlob(p).astype(np.float64) for p in names}
        it = (int(workspace.FetchBlob(optimizer.OPTIMIZER_ITERATION_NAME)[0])
              if workspace.HasBlob(optimizer.OPTIMIZER_ITERATION_NAME) else None)
        yield before, grads, after, it


def emb_model(name):
    """ids -> Gather(emb) -> FC -> squared loss; emb's gradient is a GradientSlice."""
    m = model_helper.ModelHelper(name=name)
    emb = m.create_param("emb", [V, D], ("GaussianFill", {"std": 1.0, "seed": 3}),
                         tags=[ParameterTags.WEIGHT])
    w = m.create_param("w", [K, D], ("GaussianFill", {"std": 1.0, "seed": 4}))
    b = m.create_param("b", [K], ("ConstantFill", {"value": 0.1}))
    x = m.net.Gather([emb, "ids"], "x")
    y = m.net.FC([x, w, b], "y")
    sq = m.net.SquaredL2Distance([y, "target"], "sq")
    loss = m.net.AveragedLoss(sq, "loss")
    m.AddGradientOperators([loss])
    assert isinstance(m.param_to_grad[emb], core.GradientSlice)
    return m, loss


def sparse_steps(m, ids, steps, seed=0):
    rng = np.random.default_rng(seed)
    workspace.FeedBlob("ids", ids)
    workspace.FeedBlob("target", rng.standard_normal((ids.size, K)).astype(np.float32))
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    for _ in range(steps):
        before = workspace.FetchBlob("emb").astype(np.float64)
        workspace.RunNet(m.net)
        g = workspace.FetchBlob(str(m.param_to_grad["emb"].values)).astype(np.float64).reshape(-1, D)
        yield before, g, workspace.FetchBlob("emb").astype(np.float64)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=3e-5, atol=1e-6)


# ---------------------------------------------------------------- DecayAdagrad
@pytest.mark.parametrize("bias", [True, False])
def test_decay_adagrad(bias):
    m, _ = small_model("decay_adagrad_%d" % bias, 1)
    opt = optimizer.build_decay_adagrad(m, 0.1, beta1=0.6, epsilon=0.01, weight_decay=0.05,
                                        bias_correction_first=bias, policy="step", stepsize=2, gamma=0.5)
    assert isinstance(opt, optimizer.DecayAdagradOptimizer)
    aux = opt.get_auxiliary_parameters()
    assert sorted(str(b) for b in aux.local) == sorted(
        p + s for p in ("y_w", "y_b") for s in ("_first_mo1ment", "_second_moment"))
    assert [str(b) for b in aux.shared] == [optimizer.OPTIMIZER_ITERATION_NAME]
    names = [str(p) for p in m.params]
    m1 = {p: 0.0 for p in names}
    m2 = {p: 0.0 for p in names}
    for before, grads, after, it in run_steps(m, 4):
        lr = -0.1 * 0.5 ** (it // 2)
        c = 1 - 0.6 ** (it + 1) if bias else 1.0
        for p in names:
            g, w = grads[p], before[p]
            m1[p] = 0.6 * m1[p] + 0.4 * g
            m2[p] = m2[p] + g * g
            close(after[p], w + lr * (m1[p] / c / (np.sqrt(m2[p]) + 0.01) + 0.05 * w))
            close(workspace.FetchBlob(p + "_first_mo1ment"), m1[p])


def test_decay_adagrad_sparse_uses_sparse_adagrad():
    ids = np.array([5, 1, 5], np.int32)
    m, _ = emb_model("decay_adagrad_sparse")
    optimizer.build_decay_adagrad(m, 0.3, epsilon=0.05)
    types = [op.type for op in m.net.Proto().op]
    assert "SparseAdagrad" in types and types.count("DecayAdagrad") == 2
    h = np.zeros((V, D))
    for before, g, after in sparse_steps(m, ids, 3):
        w = before.copy()
        for k, i in enumerate(ids):
            h[i] += g[k] * g[k]
            w[i] += -0.3 * g[k] / (np.sqrt(h[i]) + 0.05)
        close(after, w)


def test_decay_adagrad_refuses_ema():
    with pytest.raises(NotImplementedError,
                       match=r"DecayAdagradOptimizer: ema_options \(ema_alpha / ema_teacher_alpha\) is not "
                             r"supported"):
        optimizer.DecayAdagradOptimizer(ema_options={"ema_alpha": 0.5})


# ---------------------------------------------------------------- GFtrl
def test_gftrl():
    m, _ = small_model("gftrl", 2)
    opt = optimizer.build_gftrl(m, alpha=0.2, beta=0.5, lambda1=0.01, lambda2=0.1)
    assert isinstance(opt, optimizer.GFtrlOptimizer)
    assert sorted(str(b) for b in opt.get_auxiliary_parameters().local) == ["y_b_gftrl_nz", "y_w_gftrl_nz"]
    names = [str(p) for p in m.params]
    nz = {p: None for p in names}
    for before, grads, after, _ in run_steps(m, 4):
        for p in names:
            w, g = before[p], grads[p]
            if nz[p] is None:
                nz[p] = np.zeros(w.shape + (2,))
            O = w.shape[0]
            w2, g2 = w.reshape(O, -1), g.reshape(O, -1)
            n, z = nz[p][..., 0].reshape(O, -1), nz[p][..., 1].reshape(O, -1)
            n1 = n + g2 * g2
            z1 = z + g2 - (np.sqrt(n1) - np.sqrt(n)) / 0.2 * w2
            zn = np.sqrt((z1 * z1).sum(axis=0))
            thr = 0.01 * np.sqrt(O)
            nw = np.where(zn > thr, z1 * (thr / zn - 1) / ((0.5 + np.sqrt(n1)) / 0.2 + 0.1), 0.0)
            close(after[p], nw.reshape(w.shape))
            nz[p] = np.stack([n1.reshape(w.shape), z1.reshape(w.shape)], axis=-1)
            close(workspace.FetchBlob(p + "_gftrl_nz"), nz[p])


def test_gftrl_refuses_sparse_gradients():
    m, _ = emb_model("gftrl_sparse")
    with pytest.raises(ValueError, match=r"GFtrlOptimizer: parameter 'emb' has a sparse gradient"):
        optimizer.build_gftrl(m)
    with pytest.raises(ValueError, match=r"beta and lambda2 must not both be 0"):
        optimizer.GFtrlOptimizer(beta=0.0)


# ---------------------------------------------------------------- Storm
def storm_ref(w, m, s, g, lr, momentum, beta):
    s = s + (g * g).sum()
    nlr = lr * (beta + s) ** (-1.0 / 3)
    a = momentum * nlr * nlr
    m = g + (1 - a) * (m - g)
    return w + nlr * m, m, s


def test_storm():
    m, _ = small_model("storm", 3)
    opt = optimizer.build_storm(m, 0.2, momentum=5.0, beta=0.3, grad_sq_init=0.5)
    assert isinstance(opt, optimizer.StormOptimizer)
    assert sorted(str(b) for b in opt.get_auxiliary_parameters().local) == sorted(
        p + s for p in ("y_w", "y_b") for s in ("_moment", "_grad_sq_sum"))
    names = [str(p) for p in m.params]
    mom = {p: 0.0 for p in names}
    s = {p: 0.5 for p in names}
    for before, grads, after, _ in run_steps(m, 4):
        for p in names:
            w, mom[p], s[p] = storm_ref(before[p], mom[p], s[p], grads[p], -0.2, 5.0, 0.3)
            close(after[p], w)
            close(workspace.FetchBlob(p + "_moment"), mom[p])
            close(workspace.FetchBlob(p + "_grad_sq_sum"), [s[p]])


@pytest.mark.parametrize("ids", [[6, 1, 3], [2, 5, 2]], ids=["unique", "repeated"])
def test_sparse_storm(ids):
    ids = np.array(ids, np.int32)
    m, _ = emb_model("storm_sparse")
    optimizer.build_storm(m, 0.4, momentum=2.0)
    assert "SparseStorm" in [op.type for op in m.net.Proto().op]
    mom, s = np.zeros((V, D)), 0.01
    for before, g, after in sparse_steps(m, ids, 4):
        s = s + (g * g).sum()
        nlr = -0.4 * (0.1 + s) ** (-1.0 / 3)
        a = 2.0 * nlr * nlr
        w = before.copy()
        for k, i in enumerate(ids):  # one occurrence at a time, in order
            mom[i] = g[k] + (1 - a) * (mom[i] - g[k])
            w[i] = w[i] + nlr * mom[i]
        close(after, w)
        close(workspace.FetchBlob("emb_grad_sq_sum"), [s])


# ---------------------------------------------------------------- LARS
def lars_factor(w, g, offset):
    wn = np.sqrt((w * w).sum())
    if wn == 0:
        return 1.0
    return 1.0 / (np.sqrt((g * g).sum()) / wn + offset)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_lars(momentum):
    m, _ = small_model("sgd_lars_%s" % momentum, 4)
    optimizer.build_sgd(m, 0.3, momentum=momentum, lars=0.2)
    types = [op.type for op in m.net.Proto().op]
    assert types.count("Lars") == 2
    names = [str(p) for p in m.params]
    mom = {p: 0.0 for p in names}
    x, t = (workspace.FetchBlob(b).astype(np.float64) for b in ("x", "target"))
    for before, grads, after, _ in run_steps(m, 3):
        # MomentumSGDUpdate overwrites the gradient blob: recompute it (squared loss / 2, averaged)
        dy = (x @ before["y_w"].T + before["y_b"] - t) / N
        grads = {"y_w": dy.T @ x, "y_b": dy.sum(axis=0)}
        for p in names:
            rate = 0.3 * lars_factor(before[p], grads[p], 0.2)
            if momentum:
                # Caffe2's MomentumSGDUpdate (Nesterov): m' = mu*m + lr*g; step = (1+mu)*m' - mu*m
                new = momentum * mom[p] + rate * grads[p]
                close(after[p], before[p] - ((1 + momentum) * new - momentum * mom[p]))
                mom[p] = new
            else:
                close(after[p], before[p] - rate * grads[p])


def test_adagrad_and_storm_lars():
    m, _ = small_model("adagrad_lars", 5)
    optimizer.build_adagrad(m, 0.2, epsilon=1e-3, lars=0.5)
    names = [str(p) for p in m.params]
    h = {p: 0.0 for p in names}
    for before, grads, after, _ in run_steps(m, 3):
        for p in names:
            rate = -0.2 * lars_factor(before[p], grads[p], 0.5)
            h[p] = h[p] + grads[p] ** 2
            close(after[p], before[p] + rate * grads[p] / (np.sqrt(h[p]) + 1e-3))
    m, _ = small_model("storm_lars", 6)
    optimizer.build_storm(m, 0.2, lars=0.1)
    mom = {p: 0.0 for p in names}
    s = {p: 0.01 for p in names}
    for before, grads, after, _ in run_steps(m, 3):
        for p in names:
            lr = -0.2 * lars_factor(before[p], grads[p], 0.1)
            w, mom[p], s[p] = storm_ref(before[p], mom[p], s[p], grads[p], lr, 10.0, 0.1)
            close(after[p], w)


def test_lars_is_skipped_for_sparse_gradients_and_checked():
    m, _ = emb_model("lars_sparse")
    optimizer.build_sgd(m, 0.1, lars=0.3)
    lars_inputs = [op.input[0] for op in m.net.Proto().op if op.type == "Lars"]
    assert sorted(lars_inputs) == ["b", "w"]  # not emb (a GradientSlice), as in Caffe2
    with pytest.raises(ValueError,
                       match=r"SgdOptimizer: lars \(the LARS offset\) must be a finite number >= 0"):
        optimizer.SgdOptimizer(lars=-1.0)
