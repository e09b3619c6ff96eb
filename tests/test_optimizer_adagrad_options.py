"""AdagradOptimizer's later Caffe2 options (weight_decay, output_effective_lr(_and_update),
counter_halflife, use_dedicated_lr_iteration_counter, the refused ones) and the optimizers' check of
their extra keyword arguments (the LearningRate op's policy arguments only).

Each training run is recomputed in float64 NumPy from the gradients fetched after it (test_optimizer.py's
way), with the weight decay added to the gradient of the 2-D weight and not to the 1-D bias, as Caffe2.
"""
import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, utils, workspace

N, D_IN, D_OUT = 5, 4, 3
V, D = 8, 3


@pytest.fixture(autouse=True)
def fresh_instance_count():
    """Blob names count the optimizers built so far: each test counts from 0 (the workspace is
    reset by conftest.py)."""
    optimizer.reset_optimizer_instance_count()


def dense_model(seed=0):
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name="adagrad_opts_%d" % seed)
    fc = brew.fc(m, "x", "y", dim_in=D_IN, dim_out=D_OUT)
    m.AddGradientOperators([m.net.AveragedLoss(m.net.SquaredL2Distance([fc, "target"], "dist"), "loss")])
    workspace.FeedBlob("x", rng.standard_normal((N, D_IN)).astype(np.float32))
    workspace.FeedBlob("target", rng.standard_normal((N, D_OUT)).astype(np.float32))
    return m


def sparse_model(seed=0):
    """An embedding table (V, D) read with Gather: its gradient is a GradientSlice."""
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name="adagrad_sparse_%d" % seed)
    emb = m.create_param("emb", shape=[V, D], initializer=("GaussianFill", {"std": 1.0}))
    rows = m.net.Gather([emb, "ids"], "rows")
    m.AddGradientOperators([m.net.AveragedLoss(m.net.SquaredL2Distance([rows, "target"], "dist"), "loss")])
    workspace.FeedBlob("ids", np.array([1, 5, 1, 3], np.int32))
    workspace.FeedBlob("target", rng.standard_normal((4, D)).astype(np.float32))
    return m, emb


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=3e-5, atol=1e-6)


def run(m, steps, fetch):
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    for _ in range(steps):
        before = {p: workspace.FetchBlob(p).astype(np.float64) for p in fetch}
        workspace.RunNet(m.net)
        yield before, {p: workspace.FetchBlob(p).astype(np.float64) for p in fetch}


def test_weight_decay_on_weights_not_biases():
    m = dense_model(1)
    optimizer.build_adagrad(m, base_learning_rate=0.2, epsilon=1e-4, weight_decay=0.5)
    adagrads = [op for op in m.net.Proto().op if op.type == "Adagrad"]
    wds = {str(op.input[0]): [a.f for a in op.arg if a.name == "weight_decay"] for op in adagrads}
    assert wds == {"y_w": [0.5], "y_b": []}
    grads = {p: str(m.param_to_grad[p]) for p in ("y_w", "y_b")}
    hist = {"y_w": 0.0, "y_b": 0.0}
    for before, after in run(m, 3, ["y_w", "y_b"]):
        for p, wd in (("y_w", 0.5), ("y_b", 0.0)):
            g = workspace.FetchBlob(grads[p]).astype(np.float64) + wd * before[p]
            hist[p] = hist[p] + g * g
            close(after[p], before[p] - 0.2 * g / (np.sqrt(hist[p]) + 1e-4))
            close(workspace.FetchBlob(p + "_squared_sum"), hist[p])


def test_weight_decay_needs_the_parameter_shape():
    m = model_helper.ModelHelper(name="unknown_shape")
    w = m.create_param("w_fed", shape=[3, 2], initializer=("ConstantFill", {"value": 1.0}))
    m.param_init_net.Proto().op[-1].arg = [a for a in m.param_init_net.Proto().op[-1].arg if a.name != "shape"]
    m.param_init_net.Proto().op[-1].input.append("some_input")  # shape from a blob: unknown to the inference
    m.AddGradientOperators([m.net.AveragedLoss(m.net.FC(["x", w, "b"], "y"), "loss")])
    with pytest.raises(ValueError, match="weight_decay needs the shape of parameter 'w_fed'"):
        optimizer.build_adagrad(m, base_learning_rate=0.1, weight_decay=0.1)


def test_weight_decay_sparse_and_rowwise_with_counter():
    m, emb = sparse_model(2)
    optimizer.build_adagrad(m, base_learning_rate=0.3, weight_decay=0.25, rowWise=True, counter_halflife=2)
    ops = [op.type for op in m.net.Proto().op]
    assert ops.index("RowWiseSparseAdagrad") < ops.index("RowWiseCounter")
    rw = next(op for op in m.net.Proto().op if op.type == "RowWiseSparseAdagrad")
    assert list(rw.input)[5] == "emb_update_counter"
    assert {a.name: (a.f if a.name == "weight_decay" else a.i) for a in rw.arg
            if a.name in ("weight_decay", "counter_halflife")} == {"weight_decay": 0.25, "counter_halflife": 2}
    grad = m.param_to_grad[str(emb)]
    h = np.zeros(V)
    count = np.zeros(V)
    prev = np.zeros(V)
    for step, (before, after) in enumerate(run(m, 3, [str(emb)])):
        ids = workspace.FetchBlob(str(grad.indices))
        vals = workspace.FetchBlob(str(grad.values)).astype(np.float64)
        it = int(workspace.FetchBlob(utils.OPTIMIZER_ITERATION_NAME)[0])
        w = before[str(emb)].copy()
        for k, i in enumerate(ids):
            wd = 0.25 * (2 / count[i] if count[i] > 0 else 1.0)
            g = vals[k] + wd * w[i]
            h[i] += np.mean(g * g)
            w[i] = w[i] - 0.3 * g / (np.sqrt(h[i]) + 1e-4)
        close(after[str(emb)], w)
        close(workspace.FetchBlob("emb_avg_squared_sum"), h)
        for i in ids:  # RowWiseCounter, after the update
            count[i] = 1 + np.exp(-max(0, it - prev[i]) * np.log(2) / 2) * count[i]
            prev[i] = max(it, prev[i])
        close(workspace.FetchBlob("emb_update_counter"), count)
        assert workspace.FetchBlob("emb_prev_update_iter").dtype == np.int32


def test_weight_decay_sparse_adagrad():
    m, emb = sparse_model(3)
    optimizer.build_adagrad(m, base_learning_rate=0.1, weight_decay=0.5)
    op = next(op for op in m.net.Proto().op if op.type == "SparseAdagrad")
    assert [a.f for a in op.arg if a.name == "weight_decay"] == [0.5]
    grad = m.param_to_grad[str(emb)]
    h = np.zeros((V, D))
    for before, after in run(m, 2, [str(emb)]):
        ids = workspace.FetchBlob(str(grad.indices))
        vals = workspace.FetchBlob(str(grad.values)).astype(np.float64)
        w = before[str(emb)].copy()
        for k, i in enumerate(ids):
            g = vals[k] + 0.5 * w[i]
            h[i] += g * g
            w[i] = w[i] - 0.1 * g / (np.sqrt(h[i]) + 1e-4)
        close(after[str(emb)], w)


@pytest.mark.parametrize("both", [False, True])
def test_output_effective_lr(both):
    m = dense_model(4)
    kw = {"output_effective_lr_and_update": True} if both else {"output_effective_lr": True}
    optimizer.build_adagrad(m, base_learning_rate=0.2, **kw)
    for before, after in run(m, 2, ["y_w"]):
        eff = workspace.FetchBlob("y_w_effective_lr").astype(np.float64)
        h = workspace.FetchBlob("y_w_squared_sum").astype(np.float64)
        close(eff, -0.2 / (np.sqrt(h) + 1e-4))
        if both:
            close(after["y_w"], before["y_w"] + workspace.FetchBlob("y_w_update"))
        else:
            assert not workspace.HasBlob("y_w_update")


def test_dedicated_lr_iteration_counter():
    m = dense_model(5)
    optimizer.build_adagrad(m, base_learning_rate=0.2, use_dedicated_lr_iteration_counter=True,
                            policy="step", stepsize=1, gamma=0.5)
    lrs = [op for op in m.net.Proto().op if op.type == "LearningRate"]
    # the rate counts its own iterations; Caffe2's placement hint reads the usual counter
    assert [(list(op.input), str(op.output[0])) for op in lrs] == [
        ([utils.OPTIMIZER_ITERATION_LR_NAME], "AdagradOptimizer_0_lr_cpu"),
        ([utils.OPTIMIZER_ITERATION_NAME], "AdagradOptimizer_0_iter_placement_hint_cpu")]
    for _ in run(m, 2, []):
        pass
    assert workspace.FetchBlob(utils.OPTIMIZER_ITERATION_LR_NAME)[0] == 2
    opt = optimizer.SgdOptimizer()
    with pytest.raises(ValueError, match="use_dedicated_lr_iteration_counter"):
        opt.build_non_lr_iter(m.net, m.param_init_net)
    opt.use_dedicated_lr_iteration_counter = True
    it = opt.build_non_lr_iter(m.net, m.param_init_net)
    assert str(it) == utils.OPTIMIZER_ITERATION_NAME


@pytest.mark.parametrize("option,value,needs", [
    ("pruning_options", {"prune_delays": [1], "prune_ratios": [0.5]}, "Masked"),
    ("swa_options", {"swa_avg_start_it": 1}, "SWA"),
    ("ema_options", {"ema_alpha": 0.5}, "EMA"),
    ("weight_scale", object(), "WeightScale"),
])
def test_refused_options(option, value, needs):
    with pytest.raises(NotImplementedError, match="AdagradOptimizer: %s is not provided: it needs .*%s"
                                                  % (option, needs)):
        optimizer.AdagradOptimizer(**{option: value})
    optimizer.AdagradOptimizer(**{option: None})  # absent: fine
    optimizer.AdagradOptimizer(ema_options={"ema_start": 1})  # no EMA asked for


def test_adam_smart_decay_is_refused():
    with pytest.raises(NotImplementedError, match="AdamOptimizer: use_smart_decay is not provided: it needs the "
                                                  "SmartDecaySparseAdam op"):
        optimizer.AdamOptimizer(use_smart_decay=True)
    optimizer.AdamOptimizer(use_smart_decay=False)


def test_weight_decay_with_lars_is_refused_and_bad_values():
    m = dense_model(6)
    with pytest.raises(ValueError, match="weight_decay with lars is not implemented"):
        optimizer.build_adagrad(m, base_learning_rate=0.1, weight_decay=0.1, lars=0.5)
    with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
        optimizer.AdagradOptimizer(weight_decay=-1.0)


@pytest.mark.parametrize("make", [
    lambda: optimizer.SgdOptimizer(weight_decay=0.1),
    lambda: optimizer.AdamOptimizer(alpha=0.1, foo=1, bar=2),
    lambda: optimizer.AdagradOptimizer(lr_scale=0.5),  # the old top-level argument: not read
    lambda: optimizer.build_sgd(dense_model(7), 0.1, stepsizee=3),
])
def test_unknown_keyword_arguments_are_refused(make):
    with pytest.raises(TypeError, match="got unexpected keyword argument.*LearningRate op"):
        make()


def test_policy_arguments_are_accepted():
    optimizer.SgdOptimizer(policy="step", stepsize=2, gamma=0.5)
    optimizer.AdagradOptimizer(policy="composite", sub_policy_num_iters=[2, 3], sub_policy_0_policy="fixed",
                               sub_policy_1_policy="step", sub_policy_1_stepsize=1, sub_policy_1_gamma=0.9,
                               sub_policy_1_lr_scale=0.5)
    opt = optimizer.AdamOptimizer(policy="cosine", cosine_max_lr=1.0, max_lr=0.5, iter_val=3)
    assert opt.init_kwargs == {"cosine_max_lr": 1.0, "max_lr": 0.5, "iter_val": 3}
    attrs = opt.attributes
    assert "_instance_num" not in attrs and attrs["alpha"] == 0.001
    assert opt.get_cpu_blob_name("lr") == "AdamOptimizer_0_lr_cpu"
    assert opt.get_gpu_blob_name("lr", 1, "n") == "AdamOptimizer_0_lrn_gpu1"
    optimizer.reset_optimizer_instance_count()
    assert optimizer.AdamOptimizer().make_unique_blob_name("lr") == "AdamOptimizer_0_lr_cpu"
