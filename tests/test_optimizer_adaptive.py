"""recurrent.optimizer's build_rms_prop, build_adadelta and build_wngrad (Caffe2's).

Each trains a small model (FC -> SquaredL2Distance -> AveragedLoss) a few
iterations; the gradients each run computed are fetched and the whole update
(learning-rate policy, state buffers, parameters) is recomputed in float64
NumPy. Adadelta and Wngrad also train a Gather'ed embedding through its sparse
gradient (SparseAdadelta, SparseWngrad), checked against the same
reimplementation row by row; RmsProp refuses a sparse gradient, as Caffe2's.
"""
import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, workspace
from recurrent.model_helper import ParameterTags

N, D_IN, D_OUT = 5, 4, 3


def small_model(seed=0):
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name="adaptive_model_%d" % seed)
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
        it = int(workspace.FetchBlob(optimizer.OPTIMIZER_ITERATION_NAME)[0])
        yield before, grads, after, it


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=3e-5, atol=1e-6)


# ---------------------------------------------------------------- RmsProp
@pytest.mark.parametrize("momentum", [0.0, 0.7])
def test_rms_prop(momentum):
    m, loss = small_model(1)
    opt = optimizer.build_rms_prop(m, base_learning_rate=0.05, decay=0.8, momentum=momentum, epsilon=1e-4,
                                   policy="step", stepsize=2, gamma=0.5)
    assert isinstance(opt, optimizer.RmsPropOptimizer)
    types = [op.type for op in m.net.Proto().op]
    assert types.count("RmsProp") == 2 and types.count("WeightedSum") == 2
    aux = opt.get_auxiliary_parameters()
    assert sorted(str(b) for b in aux.local) == sorted(
        p + s for p in ("y_w", "y_b") for s in ("_mean_squares", "_momentum"))
    names = [str(p) for p in m.params]
    ms = {p: 0.0 for p in names}
    mom = {p: 0.0 for p in names}
    losses = []
    for before, grads, after, it in run_steps(m, 5):
        rate = 0.05 * 0.5 ** (it // 2)
        for p in names:
            g = grads[p]
            ms[p] = ms[p] + 0.2 * (g * g - ms[p])
            mom[p] = momentum * mom[p] + g / np.sqrt(1e-4 + ms[p])
            close(workspace.FetchBlob(p + "_mean_squares"), ms[p])
            close(workspace.FetchBlob(p + "_momentum"), mom[p])
            close(workspace.FetchBlob(p + "_grad_o"), mom[p])
            close(after[p], before[p] - rate * mom[p])
        losses.append(float(workspace.FetchBlob(loss)))
    assert losses[-1] < losses[0]


def test_rms_prop_clipping_and_injection_scale_the_step():
    m, _ = small_model(2)
    optimizer.build_rms_prop(m, base_learning_rate=0.1, max_gradient_norm=1e-3, allow_lr_injection=True)
    workspace.RunNetOnce(m.param_init_net)
    optimizer.set_lr_injection(0.5)
    names = [str(p) for p in m.params]
    before = {p: workspace.FetchBlob(p).astype(np.float64) for p in names}
    workspace.RunNetOnce(m.net)
    grads = {p: workspace.FetchBlob(str(m.param_to_grad[p])).astype(np.float64) for p in names}
    norm = np.sqrt(sum((g ** 2).sum() for g in grads.values()))
    assert norm > 1e-3
    for p in names:
        g = grads[p]
        step = g / np.sqrt(1e-5 + 0.1 * g * g)  # decay 0.9, epsilon 1e-5
        close(workspace.FetchBlob(p), before[p] - 0.1 * 0.5 * (1e-3 / norm) * step)


def test_rms_prop_refuses_sparse_gradients_and_a_zero_rate():
    m, _ = emb_model("rms_sparse")
    with pytest.raises(ValueError, match=r"RmsPropOptimizer doesn't support sparse gradients "
                                         r"\(as in Caffe2\): parameter 'emb' has a GradientSlice"):
        optimizer.build_rms_prop(m, 0.1)
    with pytest.raises(ValueError, match=r"alpha \(the base learning rate\) must be > 0"):
        optimizer.RmsPropOptimizer(alpha=0.0)
    with pytest.raises(ValueError, match=r"alpha \(the base learning rate\) must be a finite number >= 0"):
        optimizer.RmsPropOptimizer(alpha=-0.1)


# ---------------------------------------------------------------- Adadelta
def adadelta_ref(w, h, d, g, lr, eps, decay):
    h = decay * h + (1 - decay) * g * g
    u = np.sqrt(d + eps) / np.sqrt(h + eps) * g
    return w - lr * u, h, decay * d + (1 - decay) * u * u


def test_adadelta():
    m, loss = small_model(3)
    opt = optimizer.build_adadelta(m, base_learning_rate=0.5, epsilon=1e-3, decay=0.9)
    aux = opt.get_auxiliary_parameters()
    assert sorted(str(b) for b in aux.local) == sorted(
        p + s for p in ("y_w", "y_b") for s in ("_squared_moment", "_squared_moment_update"))
    names = [str(p) for p in m.params]
    h = {p: 0.0 for p in names}
    d = {p: 0.0 for p in names}
    losses = []
    for before, grads, after, _ in run_steps(m, 5):
        for p in names:
            w, h[p], d[p] = adadelta_ref(before[p], h[p], d[p], grads[p], 0.5, 1e-3, 0.9)
            close(workspace.FetchBlob(p + "_squared_moment"), h[p])
            close(workspace.FetchBlob(p + "_squared_moment_update"), d[p])
            close(after[p], w)
        losses.append(float(workspace.FetchBlob(loss)))
    assert losses[-1] < losses[0]


def test_adadelta_defaults():
    m, _ = small_model(4)
    opt = optimizer.build_adadelta(m, 0.01)
    assert (opt.alpha, opt.epsilon, opt.decay, opt.policy) == (0.01, 1e-4, 0.95, "fixed")
    op = next(op for op in m.net.Proto().op if op.type == "Adadelta")
    args = {a.name: a.f for a in op.arg}
    assert np.float32(args["epsilon"]) == np.float32(1e-4) and np.float32(args["decay"]) == np.float32(0.95)


# ---------------------------------------------------------------- Wngrad
@pytest.mark.parametrize("outputs", ["", "effective_lr", "effective_lr_and_update"])
def test_wngrad(outputs):
    m, loss = small_model(5)
    kw = {"output_" + outputs: True} if outputs else {}
    opt = optimizer.build_wngrad(m, base_learning_rate=0.8, epsilon=1e-6, moment_init=2.0, **kw)
    assert sorted(str(b) for b in opt.get_auxiliary_parameters().local) == ["y_b_moment", "y_w_moment"]
    names = [str(p) for p in m.params]
    b = {p: 2.0 for p in names}
    losses = []
    for before, grads, after, _ in run_steps(m, 5):
        for p in names:
            g = grads[p]
            eff = -0.8 / (b[p] + 1e-6)
            close(after[p], before[p] + eff * g)
            if outputs:
                close(workspace.FetchBlob(p + "_effective_lr"), [eff])
            if outputs == "effective_lr_and_update":
                close(workspace.FetchBlob(p + "_update"), eff * g)
            b[p] = b[p] + (g * g).sum() / (b[p] + 1e-6)
            close(workspace.FetchBlob(p + "_moment"), [b[p]])
        losses.append(float(workspace.FetchBlob(loss)))
    assert losses[-1] < losses[0]
    if not outputs:
        assert not workspace.HasBlob("y_w_effective_lr")


def test_wngrad_defaults_and_refusals():
    m, _ = small_model(6)
    opt = optimizer.build_wngrad(m, 1.0)
    assert (opt.alpha, opt.epsilon, opt.moment_init) == (1.0, 1e-9, 100.0)
    workspace.RunNetOnce(m.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob("y_w_moment"), np.array([100.0], np.float32))
    assert optimizer.WngradOptimizer(lars=0.5).lars == 0.5  # see tests/test_optimizer_options.py
    with pytest.raises(ValueError, match=r"WngradOptimizer: moment_init must be finite with moment_init \+ "
                                         r"epsilon > 0, got -1.0"):
        optimizer.WngradOptimizer(moment_init=-1.0)


def test_zero_rate_adds_no_update():
    m, _ = small_model(7)
    optimizer.build_adadelta(m, 0.0)
    optimizer.build_wngrad(m, 0.0)
    types = [op.type for op in m.net.Proto().op]
    assert "Adadelta" not in types and "Wngrad" not in types


# ---------------------------------------------------------------- sparse: a Gather'ed embedding
V, D, K = 8, 3, 2


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


@pytest.mark.parametrize("ids", [[6, 1, 3], [2, 5, 2, 2]], ids=["unique", "repeated"])
def test_sparse_adadelta(ids):
    ids = np.array(ids, np.int32)
    m, _ = emb_model("adadelta_sparse")
    optimizer.build_adadelta(m, 0.7, epsilon=1e-3, decay=0.8)
    assert "SparseAdadelta" in [op.type for op in m.net.Proto().op]
    h, d = np.zeros((V, D)), np.zeros((V, D))
    for before, g, after in sparse_steps(m, ids, 4):
        w = before.copy()
        for k, i in enumerate(ids):  # one occurrence at a time, in order
            w[i], h[i], d[i] = adadelta_ref(w[i], h[i], d[i], g[k], 0.7, 1e-3, 0.8)
        close(after, w)
        close(workspace.FetchBlob("emb_squared_moment"), h)
        untouched = np.setdiff1d(np.arange(V), ids)
        np.testing.assert_array_equal(after[untouched], before[untouched])


@pytest.mark.parametrize("ids", [[6, 1, 3], [2, 5, 2, 2]], ids=["unique", "repeated"])
def test_sparse_wngrad(ids):
    ids = np.array(ids, np.int32)
    m, _ = emb_model("wngrad_sparse")
    optimizer.build_wngrad(m, 0.9, moment_init=1.0)
    assert "SparseWngrad" in [op.type for op in m.net.Proto().op]
    b = 1.0
    for before, g, after in sparse_steps(m, ids, 4):
        w = before.copy()
        for k, i in enumerate(ids):  # every occurrence steps from the seq_b read before the op
            w[i] += -0.9 * g[k] / (b + 1e-9)
        close(after, w)
        b = b + (g * g).sum() / (b + 1e-9)
        close(workspace.FetchBlob("emb_moment"), [b])


def test_sparse_wngrad_with_dedup_sums_repeated_rows():
    ids = np.array([4, 0, 4], np.int32)
    m, _ = emb_model("wngrad_dedup")
    optimizer.build_wngrad(m, 0.9, sparse_dedup_aggregator="sum", moment_init=1.0)
    types = [op.type for op in m.net.Proto().op]
    assert "Unique" in types and "SparseWngrad" in types
    for before, g, after in sparse_steps(m, ids, 1):
        merged = {4: g[0] + g[2], 0: g[1]}
        w = before.copy()
        for i, gi in merged.items():
            w[i] += -0.9 * gi / (1.0 + 1e-9)
        close(after, w)
        ss = sum((v * v).sum() for v in merged.values())
        close(workspace.FetchBlob("emb_moment"), [1.0 + ss / (1 + 1e-9)])
