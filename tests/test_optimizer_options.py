"""The optimizer options built on Caffe2's extra ops: AdamOptimizer's ``use_lr_adaption`` (Adam's
effective-gradient output and LearningRateAdaption) and WngradOptimizer's ``lars``; DecayAdagrad's
``ema_options`` stays refused.

Adam with use_lr_adaption is checked bitwise against a float32 NumPy reference written from the formulas
(one rounding per operation, sums accumulated one element at a time): each run of the training net is
replayed op by op in the net's order (the rate blob is shared, so a parameter's adaption changes the rate of
the parameters updated after it in the same iteration; LearningRate recomputes it at the next). The
gradients, and a sparse gradient's indices and values, are fetched from the workspace after each run.
"""
import math

import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, workspace
from recurrent.model_helper import ParameterTags

F = np.float32
N, D_IN, D_OUT = 5, 4, 3
V, D, K = 8, 3, 2
ADAMS = ("Adam", "SparseAdam", "RowWiseSparseAdam")


def dense_model(name, seed=0):
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name=name)
    fc = brew.fc(m, "x", "y", dim_in=D_IN, dim_out=D_OUT)
    dist = m.net.SquaredL2Distance([fc, "target"], "dist")
    m.AddGradientOperators([m.net.AveragedLoss(dist, "loss")])
    workspace.FeedBlob("x", rng.standard_normal((N, D_IN)).astype(F))
    workspace.FeedBlob("target", rng.standard_normal((N, D_OUT)).astype(F))
    return m


def emb_model(name, ids=(5, 1, 5, 2), seed=1):
    """ids -> Gather(emb) -> FC -> squared loss; emb's gradient is a GradientSlice."""
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name=name)
    emb = m.create_param("emb", [V, D], ("GaussianFill", {"std": 1.0, "seed": 3}),
                         tags=[ParameterTags.WEIGHT])
    w = m.create_param("w", [K, D], ("GaussianFill", {"std": 1.0, "seed": 4}))
    b = m.create_param("b", [K], ("ConstantFill", {"value": 0.1}))
    y = m.net.FC([m.net.Gather([emb, "ids"], "xe"), w, b], "y")
    m.AddGradientOperators([m.net.AveragedLoss(m.net.SquaredL2Distance([y, "target"], "sq"), "loss")])
    assert isinstance(m.param_to_grad[emb], core.GradientSlice)
    workspace.FeedBlob("ids", np.array(ids, np.int32))
    workspace.FeedBlob("target", rng.standard_normal((len(ids), K)).astype(F))
    return m


# ---------------------------------------------------------------- float32 references
def bias_correction(it, b1, b2):
    t = it + 1.0
    return F(math.sqrt(1.0 - float(F(b2)) ** t) / (1.0 - float(F(b1)) ** t))


def adam_elem(p, m1, m2, g, lr, c, b1, b2, eps):
    """Adam with the effective gradient e = c * m / (sqrt(v) + eps); p + lr * e."""
    b1, b2, eps = F(b1), F(b2), F(eps)
    m = m1 * b1 + g * (F(1) - b1)
    v = m2 * b2 + g * g * (F(1) - b2)
    e = c * m / (np.sqrt(v) + eps)
    return p + lr * e, m, v, e


def adam_row(p, m1, v, g, lr, c, b1, b2, eps):
    """Row-wise Adam for one row: v (a float32) averages g^2 over the row."""
    b1, b2, eps = F(b1), F(b2), F(eps)
    s = F(0)
    for gj in g.ravel():
        s = F(s + gj * gj)
    v = F(v * b2 + (s / F(g.size)) * (F(1) - b2))
    m = m1 * b1 + g * (F(1) - b1)
    e = c * m / F(np.sqrt(v) + eps)
    return p + lr * e, m, v, e


def adapt(lr, g, e, lr_alpha, normalized):
    x = y = z = F(0)
    for gi, ei in zip(g.ravel(), e.ravel()):
        x, y, z = F(x + gi * ei), F(y + gi * gi), F(z + ei * ei)
    if normalized:
        y, z = max(F(np.sqrt(y)), F(1e-12)), max(F(np.sqrt(z)), F(1e-12))
        return F(lr * (F(1) - F(lr_alpha) * x / (y * z)))
    return F(lr - F(lr_alpha) * x)


def replay(m, steps, alpha, b1, b2, eps, lr_alpha, normalized, ratio_blob=None):
    """Runs the training net ``steps`` times and checks every Adam-family op's outputs, the effective
    gradients and the adapted rate bitwise against the reference."""
    ops = [op for op in m.net.Proto().op if op.type in ADAMS]
    assert ops
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    state = {}
    for op in ops:
        p = op.input[0]
        shape = workspace.FetchBlob(p).shape
        state[p] = [np.zeros(shape, F), np.zeros(shape[:1] if op.type == "RowWiseSparseAdam" else shape, F)]
    for _ in range(steps):
        before = {op.input[0]: workspace.FetchBlob(op.input[0]) for op in ops}
        workspace.RunNet(m.net)
        it = int(workspace.FetchBlob(optimizer.OPTIMIZER_ITERATION_NAME)[0])
        c = bias_correction(it, b1, b2)
        base = F(-alpha)
        ratio = workspace.FetchBlob(ratio_blob).reshape(()) if ratio_blob else None
        lr = base
        for op in ops:
            p = op.input[0]
            if ratio is not None:  # the scaled rate is recomputed for each parameter (Caffe2's)
                lr = F(base * ratio)
            w, (m1, m2) = before[p].copy(), state[p]
            if op.type == "Adam":
                g = workspace.FetchBlob(op.input[3])
                w, m1, m2, e = adam_elem(w, m1, m2, g, lr, c, b1, b2, eps)
            else:
                idx, g = workspace.FetchBlob(op.input[3]), workspace.FetchBlob(op.input[4])
                e = np.zeros_like(g)
                for k, i in enumerate(idx.ravel()):  # one occurrence at a time, in order
                    step = adam_row if op.type == "RowWiseSparseAdam" else adam_elem
                    w[i], m1[i], m2[i], e[k] = step(w[i], m1[i], m2[i], g[k], lr, c, b1, b2, eps)
            state[p] = [m1, m2]
            np.testing.assert_array_equal(workspace.FetchBlob(p), w)
            np.testing.assert_array_equal(workspace.FetchBlob(op.output[1]), m1)
            np.testing.assert_array_equal(workspace.FetchBlob(op.output[2]), m2)
            np.testing.assert_array_equal(workspace.FetchBlob(p + "_effective_grad"), e)
            lr = adapt(lr, g, e, lr_alpha, normalized)
        np.testing.assert_array_equal(workspace.FetchBlob(ops[-1].input[-2]).reshape(()), lr)


def adaption_ops(m):
    return [op for op in m.net.Proto().op if op.type == "LearningRateAdaption"]


# ---------------------------------------------------------------- Adam use_lr_adaption
@pytest.mark.parametrize("normalized", [True, False])
def test_adam_lr_adaption_dense(normalized):
    m = dense_model("adam_adapt_%d" % normalized)
    opt = optimizer.build_adam(m, 0.05, beta1=0.8, beta2=0.9, epsilon=1e-3, use_lr_adaption=True,
                               lr_alpha=0.3, normalized_lr_adaption=normalized)
    assert (opt.use_lr_adaption, opt.lr_alpha, opt.normalized_lr_adaption) == (True, 0.3, normalized)
    lr = opt.make_unique_blob_name("lr")
    types = [op.type for op in m.net.Proto().op]
    assert [t for t in types if t in ("Adam", "LearningRateAdaption")] == ["Adam", "LearningRateAdaption"] * 2
    for op in m.net.Proto().op:
        if op.type == "Adam":
            p = op.input[0]
            assert list(op.output) == [p, p + "_first_moment", p + "_second_moment", p + "_effective_grad"]
    for op, p in zip(adaption_ops(m), ["y_w", "y_b"]):
        assert list(op.input) == [lr, p + "_grad", p + "_effective_grad"] and list(op.output) == [lr]
        args = {a.name: a for a in op.arg}
        assert args["lr_alpha"].f == pytest.approx(0.3)
        assert args["normalized_lr_adaption"].i == int(normalized)
    replay(m, 4, 0.05, 0.8, 0.9, 1e-3, 0.3, normalized)


@pytest.mark.parametrize("dedup", [None, "sum"])
def test_adam_lr_adaption_sparse(dedup):
    m = emb_model("adam_adapt_sparse_%s" % dedup)
    optimizer.build_adam(m, 0.1, beta1=0.7, beta2=0.95, epsilon=1e-4, use_lr_adaption=True, lr_alpha=0.05,
                         sparse_dedup_aggregator=dedup)
    sparse = [op for op in m.net.Proto().op if op.type == "SparseAdam"]
    assert len(sparse) == 1 and list(sparse[0].output)[3] == "emb_effective_grad"
    emb_adapt = [op for op in adaption_ops(m) if op.input[2] == "emb_effective_grad"]
    assert list(emb_adapt[0].input)[1] == sparse[0].input[4]  # the (deduplicated) values, as Caffe2
    replay(m, 4, 0.1, 0.7, 0.95, 1e-4, 0.05, True)


def test_adam_lr_adaption_rowwise():
    m = emb_model("adam_adapt_rowwise")
    opt = optimizer.AdamOptimizer(alpha=0.2, beta1=0.6, beta2=0.8, epsilon=1e-2, rowWise=True,
                                  use_lr_adaption=True, lr_alpha=0.1)
    info = [i for i in m.GetOptimizationParamInfo() if str(i.blob) == "emb"][0]
    opt(m.net, m.param_init_net, info)
    op, = [op for op in m.net.Proto().op if op.type == "RowWiseSparseAdam"]
    assert list(op.output) == ["emb", "emb_first_moment", "emb_avg_second_moment", "emb_effective_grad"]
    replay(m, 3, 0.2, 0.6, 0.8, 1e-2, 0.1, True)


def test_adam_lr_adaption_with_max_gradient_norm_rescales_per_parameter():
    m = dense_model("adam_adapt_clip", seed=3)
    opt = optimizer.build_adam(m, 0.5, beta1=0.8, beta2=0.9, epsilon=1e-3, use_lr_adaption=True, lr_alpha=0.2,
                               max_gradient_norm=0.1)
    scaled = opt.make_unique_blob_name("scaled_lr")
    muls = [op for op in m.net.Proto().op if op.type == "Mul" and list(op.output) == [scaled]]
    assert len(muls) == 2  # once per parameter: the adaption of one does not reach the next (as Caffe2)
    replay(m, 3, 0.5, 0.8, 0.9, 1e-3, 0.2, True, ratio_blob="norm_clipped_grad_update/norm_ratio")


def test_adam_without_lr_adaption_is_unchanged():
    m = dense_model("adam_plain")
    optimizer.build_adam(m, 0.05)
    assert not adaption_ops(m)
    assert all(len(op.output) == 3 for op in m.net.Proto().op if op.type == "Adam")


def test_adam_lr_adaption_refusals():
    with pytest.raises(ValueError, match=r"AdamOptimizer: lr_alpha must be finite, got nan"):
        optimizer.AdamOptimizer(use_lr_adaption=True, lr_alpha=float("nan"))
    m = dense_model("adam_adapt_rowwise_dense")
    with pytest.raises(ValueError, match=r"AdamOptimizer: rowWise=True works on sparse gradients"):
        optimizer.build_adam(m, 0.1, rowWise=True, use_lr_adaption=True)


# ---------------------------------------------------------------- Wngrad lars
def lars_factor(w, g, offset):
    wn = np.sqrt((w * w).sum())
    return 1.0 if wn == 0 else 1.0 / (np.sqrt((g * g).sum()) / wn + offset)


@pytest.mark.parametrize("outputs", ["", "effective_lr"])
def test_wngrad_lars(outputs):
    m = dense_model("wngrad_lars_%s" % outputs, seed=2)
    kw = {"output_" + outputs: True} if outputs else {}
    opt = optimizer.build_wngrad(m, 0.8, epsilon=1e-6, moment_init=2.0, lars=0.3, **kw)
    assert opt.lars == 0.3
    ops = m.net.Proto().op
    lars = [op for op in ops if op.type == "Lars"]
    assert [op.input[0] for op in lars] == ["y_w", "y_b"]
    for op in lars:
        args = {a.name: a.f for a in op.arg}
        assert list(op.input)[2:] == ["weight_decay", "trust", "lr_max"]
        assert args["offset"] == pytest.approx(0.3) and args["lr_min"] == 0.0
        assert list(op.output) == [opt.make_unique_blob_name(op.input[0] + "_lars")]
    wngrad_lrs = [op.input[3] for op in ops if op.type == "Wngrad"]
    assert wngrad_lrs == [opt.make_unique_blob_name(p + "_lars") + "_local_scaled_lr" for p in ("y_w", "y_b")]
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    b = {p: 2.0 for p in ("y_w", "y_b")}
    for _ in range(4):
        before = {p: workspace.FetchBlob(p).astype(np.float64) for p in b}
        workspace.RunNet(m.net)
        for p in b:
            g = workspace.FetchBlob(p + "_grad").astype(np.float64)
            eff = -0.8 * lars_factor(before[p], g, 0.3) / (b[p] + 1e-6)
            # float32 arithmetic (the Lars norms summed in double, rounded to float32; Wngrad's sum of
            # squares): a few float32 roundings of values of order 1, far below 2e-5
            np.testing.assert_allclose(workspace.FetchBlob(p), before[p] + eff * g, rtol=2e-5, atol=1e-6)
            if outputs:
                np.testing.assert_allclose(workspace.FetchBlob(p + "_effective_lr"), [eff], rtol=2e-5)
            b[p] = b[p] + (g * g).sum() / (b[p] + 1e-6)


def test_wngrad_lars_is_skipped_for_sparse_gradients_and_checked():
    m = emb_model("wngrad_lars_sparse")
    opt = optimizer.build_wngrad(m, 0.9, moment_init=1.0, lars=0.5)
    ops = m.net.Proto().op
    assert sorted(op.input[0] for op in ops if op.type == "Lars") == ["b", "w"]  # not emb (as in Caffe2)
    sparse, = [op for op in ops if op.type == "SparseWngrad"]
    assert sparse.input[4] == opt.make_unique_blob_name("lr")  # the plain rate
    workspace.RunNetOnce(m.param_init_net)
    workspace.RunNetOnce(m.net)
    with pytest.raises(ValueError, match=r"WngradOptimizer: lars \(the LARS offset\) must be a finite "
                                         r"number >= 0, got -1.0"):
        optimizer.WngradOptimizer(lars=-1.0)


def test_wngrad_zero_rate_adds_no_lars():
    m = dense_model("wngrad_lars_zero")
    optimizer.build_wngrad(m, 0.0, lars=0.5)
    assert not [op for op in m.net.Proto().op if op.type in ("Lars", "Wngrad")]


# ---------------------------------------------------------------- DecayAdagrad ema_options
@pytest.mark.parametrize("opts", [{"ema_alpha": 0.5}, {"ema_teacher_alpha": 0.5, "ema_start": 1}])
def test_decay_adagrad_ema_options_stay_refused(opts):
    with pytest.raises(NotImplementedError, match=r"DecayAdagradOptimizer: ema_options \(ema_alpha / "
                                                  r"ema_teacher_alpha\) is not supported: Caffe2's EMA op "
                                                  r"was never published"):
        optimizer.DecayAdagradOptimizer(ema_options=opts)
    optimizer.DecayAdagradOptimizer(ema_options={"ema_start": 1})  # no EMA asked for: nothing to refuse
