"""recurrent.optimizer (Caffe2's build_sgd / build_adagrad / build_adam), utils, caffe2_pb2.

Each optimizer runs on a small model (FC -> SquaredL2Distance -> AveragedLoss)
for a few iterations; the parameters before and after each run and the
gradients the run computed are fetched, and the update is recomputed in
float64 NumPy with the learning rate the policy gives at the counter's value.
"""
import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, rnn_cell, utils, workspace
from recurrent.proto import caffe2_pb2

N, D_IN, D_OUT = 5, 4, 3


def small_model(seed=0, extra_param=False):
    """FC(x) vs target, averaged squared distance; returns the model and loss."""
    rng = np.random.default_rng(seed)
    m = model_helper.ModelHelper(name="opt_model_%d" % seed)
    fc = brew.fc(m, "x", "y", dim_in=D_IN, dim_out=D_OUT)
    if extra_param:  # a parameter the loss does not use: no gradient
        m.create_param("unused_w", shape=[2], initializer=("ConstantFill", {"value": 1.0}))
    dist = m.net.SquaredL2Distance([fc, "target"], "dist")
    loss = m.net.AveragedLoss(dist, "loss")
    m.AddGradientOperators([loss])
    workspace.FeedBlob("x", rng.standard_normal((N, D_IN)).astype(np.float32))
    workspace.FeedBlob("target", rng.standard_normal((N, D_OUT)).astype(np.float32))
    return m, loss


def params_of(m):
    return [str(p) for p in m.params]


def run_steps(m, steps):
    """Runs the training net `steps` times; yields (before, grads, after, iteration) per step."""
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    names = params_of(m)
    for _ in range(steps):
        before = {p: workspace.FetchBlob(p).astype(np.float64) for p in names}
        workspace.RunNet(m.net)
        grads = {p: workspace.FetchBlob(str(m.param_to_grad[p])).astype(np.float64) for p in names}
        after = {p: workspace.FetchBlob(p).astype(np.float64) for p in names}
        it = int(workspace.FetchBlob(optimizer.OPTIMIZER_ITERATION_NAME)[0])
        yield before, grads, after, it


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


# ---------------------------------------------------------------- SGD
def test_sgd_fixed_rate():
    m, _ = small_model()
    opt = optimizer.build_sgd(m, base_learning_rate=0.1)
    assert isinstance(opt, optimizer.SgdOptimizer)
    lr_name = opt.make_unique_blob_name("lr")
    assert lr_name.startswith("SgdOptimizer_") and lr_name.endswith("_lr_cpu")
    types = [op.type for op in m.net.Proto().op]
    assert types.count("AtomicIter") == 1 and types.count("LearningRate") == 1
    assert types.count("WeightedSum") == 2
    assert "Iter" not in types
    for k, (before, grads, after, it) in enumerate(run_steps(m, 4)):
        assert it == k + 1  # the counter is incremented before the rate is computed (Caffe2's AtomicIter)
        close(workspace.FetchBlob(lr_name), [-0.1])
        for p in before:
            close(after[p], before[p] - 0.1 * grads[p])
            assert np.abs(grads[p]).max() > 0


def test_sgd_step_policy_and_the_loss_falls():
    m, loss = small_model(1)
    opt = optimizer.build_sgd(m, base_learning_rate=0.2, policy="step", stepsize=2, gamma=0.5)
    losses = []
    for before, grads, after, it in run_steps(m, 6):
        rate = 0.2 * 0.5 ** (it // 2)
        close(workspace.FetchBlob(opt.make_unique_blob_name("lr")), [-rate])
        for p in before:
            close(after[p], before[p] - rate * grads[p])
        losses.append(float(workspace.FetchBlob(loss)))
    assert losses[-1] < losses[0]


def plain_gradients(ref):
    """The gradient at the current parameters, from the same model without an optimizer."""
    workspace.RunNetOnce(ref.net)
    return {p: workspace.FetchBlob(str(ref.param_to_grad[p])).astype(np.float64) for p in params_of(ref)}


@pytest.mark.parametrize("nesterov", [0, 1])
def test_sgd_momentum(nesterov):
    m, _ = small_model(2)
    ref, _ = small_model(2)  # same blob names: it computes the gradient the update will see
    lr, mu = 0.05, 0.9
    optimizer.build_sgd(m, base_learning_rate=lr, momentum=mu, nesterov=nesterov)
    assert [op.type for op in m.net.Proto().op].count("MomentumSGDUpdate") == 2
    workspace.RunNetOnce(m.param_init_net)
    mom = {p: 0.0 for p in params_of(m)}
    for _ in range(4):
        before = {p: workspace.FetchBlob(p).astype(np.float64) for p in params_of(m)}
        g = plain_gradients(ref)
        workspace.RunNetOnce(m.net)
        for p in before:
            if nesterov:
                new_m = mu * mom[p] + lr * g[p]
                step = (1 + mu) * new_m - mu * mom[p]
            else:
                new_m = step = lr * g[p] + mu * mom[p]
            close(workspace.FetchBlob(p + "_momentum"), new_m)
            close(workspace.FetchBlob(str(m.param_to_grad[p])), step)  # grad_out: the step taken
            close(workspace.FetchBlob(p), before[p] - step)
            mom[p] = new_m
        assert any(np.abs(v).max() > 0 for v in mom.values())


# ---------------------------------------------------------------- Adagrad / Adam
def test_adagrad():
    m, _ = small_model(4)
    optimizer.build_adagrad(m, base_learning_rate=0.3, epsilon=1e-4)
    hist = {p: 0.0 for p in params_of(m)}
    for before, grads, after, _ in run_steps(m, 4):
        for p in before:
            hist[p] = hist[p] + grads[p] ** 2
            close(workspace.FetchBlob(p + "_squared_sum"), hist[p])
            close(after[p], before[p] - 0.3 * grads[p] / (np.sqrt(hist[p]) + 1e-4))


def test_adam():
    m, _ = small_model(5)
    opt = optimizer.build_adam(m, base_learning_rate=0.01, beta1=0.8, beta2=0.95, epsilon=1e-4)
    aux = opt.get_auxiliary_parameters()
    assert [str(b) for b in aux.shared] == [optimizer.OPTIMIZER_ITERATION_NAME]
    assert len(aux.local) == 2 * len(params_of(m))
    m1 = {p: 0.0 for p in params_of(m)}
    m2 = {p: 0.0 for p in params_of(m)}
    for before, grads, after, it in run_steps(m, 5):
        t = it + 1
        corr = np.sqrt(1 - 0.95 ** t) / (1 - 0.8 ** t)
        for p in before:
            g = grads[p]
            m1[p] = 0.8 * m1[p] + 0.2 * g
            m2[p] = 0.95 * m2[p] + 0.05 * g * g
            close(workspace.FetchBlob(p + "_first_moment"), m1[p])
            close(workspace.FetchBlob(p + "_second_moment"), m2[p])
            close(after[p], before[p] - 0.01 * corr * m1[p] / (np.sqrt(m2[p]) + 1e-4))


# ---------------------------------------------------------------- options
def test_lr_injection_scales_the_rate():
    m, _ = small_model(6)
    optimizer.build_sgd(m, base_learning_rate=0.1, allow_lr_injection=True)
    steps = run_steps(m, 3)
    before, grads, after, _ = next(steps)
    for p in before:
        close(after[p], before[p] - 0.1 * grads[p])
    optimizer.set_lr_injection(0.25)
    close(optimizer.get_lr_injection(), [0.25])
    for before, grads, after, _ in steps:
        for p in before:
            close(after[p], before[p] - 0.025 * grads[p])


@pytest.mark.parametrize("clip", [0.05, 1e6])
def test_max_gradient_norm_clips_the_sgd_step(clip):
    m, _ = small_model(15)
    ref, _ = small_model(15)
    optimizer.build_sgd(m, base_learning_rate=0.1, max_gradient_norm=clip)
    workspace.RunNetOnce(m.param_init_net)
    for _ in range(3):
        before = {p: workspace.FetchBlob(p).astype(np.float64) for p in params_of(m)}
        g = plain_gradients(ref)
        norm = np.sqrt(sum((v ** 2).sum() for v in g.values()))
        assert norm > 0.1  # the small bound clips
        workspace.RunNetOnce(m.net)
        ratio = min(1.0, clip / norm)
        close(workspace.FetchBlob("norm_clipped_grad_update/global_norm"), norm)
        close(workspace.FetchBlob("norm_clipped_grad_update/norm_ratio"), ratio)
        step = {p: before[p] - workspace.FetchBlob(p).astype(np.float64) for p in before}
        for p in before:
            close(step[p], 0.1 * ratio * g[p])
        if clip < 1:  # the step's norm is the rate times the bound
            close(np.sqrt(sum((v ** 2).sum() for v in step.values())), 0.1 * clip)


def test_max_gradient_norm_scales_adams_rate_and_combines_with_injection():
    m, _ = small_model(16)
    ref, _ = small_model(16)
    opt = optimizer.build_adam(m, base_learning_rate=0.01, max_gradient_norm=0.02, allow_lr_injection=True)
    workspace.RunNetOnce(m.param_init_net)
    optimizer.set_lr_injection(0.5)
    g = plain_gradients(ref)
    norm = np.sqrt(sum((v ** 2).sum() for v in g.values()))
    workspace.RunNetOnce(m.net)
    close(workspace.FetchBlob(opt.make_unique_blob_name("scaled_lr")), [-0.01 * 0.5 * min(1.0, 0.02 / norm)])


def test_weight_decay_adds_to_the_weights_gradient_only():
    m, _ = small_model(7)
    ref, _ = small_model(7)
    optimizer.add_weight_decay(m, 0.1)
    optimizer.build_sgd(m, base_learning_rate=0.1)
    weights = {str(w) for w in m.weights}
    assert weights and weights < set(params_of(m))
    workspace.RunNetOnce(m.param_init_net)
    w0 = {p: workspace.FetchBlob(p).astype(np.float64) for p in params_of(m)}
    g = plain_gradients(ref)
    workspace.RunNetOnce(m.net)
    for p in w0:
        gp = g[p] + 0.1 * w0[p] if p in weights else g[p]
        close(workspace.FetchBlob(p), w0[p] - 0.1 * gp)


def test_a_zero_rate_adds_no_update():
    m, _ = small_model(14)
    n = len(m.net.Proto().op)
    for build in (optimizer.build_sgd, optimizer.build_adagrad, optimizer.build_adam):
        build(m, 0.0)
    assert len(m.net.Proto().op) == n


def test_params_without_gradient_are_skipped():
    m, _ = small_model(8, extra_param=True)
    infos = m.GetOptimizationParamInfo()
    assert "unused_w" not in [i.name for i in infos] and len(infos) == 2
    optimizer.build_sgd(m, base_learning_rate=0.1)
    workspace.RunNetOnce(m.param_init_net)
    workspace.RunNetOnce(m.net)
    np.testing.assert_array_equal(workspace.FetchBlob("unused_w"), [1.0, 1.0])


def test_two_optimizers_share_the_counter():
    m, _ = small_model(9)
    p0, p1 = m.GetOptimizationParamInfo()
    a, b = optimizer.SgdOptimizer(0.1), optimizer.AdagradOptimizer(alpha=0.1)
    a(m.net, m.param_init_net, p0)
    b(m.net, m.param_init_net, p1)
    assert [op.type for op in m.net.Proto().op].count("AtomicIter") == 1
    assert [op.type for op in m.param_init_net.Proto().op].count("CreateMutex") == 1
    assert a.make_unique_blob_name("lr") != b.make_unique_blob_name("lr")
    for *_, it in run_steps(m, 3):
        pass
    assert it == 3


def test_iter_val_starts_the_counter():
    m, _ = small_model(10)
    optimizer.build_sgd(m, base_learning_rate=0.1, policy="step", stepsize=10, gamma=0.1, iter_val=19)
    _, _, _, it = next(run_steps(m, 1))
    assert it == 20
    close(workspace.FetchBlob("SgdOptimizer_%d_lr_cpu" % (optimizer._instance_count["SgdOptimizer"] - 1)),
          [-0.1 * 0.1 ** 2])


# ---------------------------------------------------------------- errors
def test_errors():
    m = model_helper.ModelHelper(name="no_grads")
    brew.fc(m, "x", "y", dim_in=2, dim_out=2)
    with pytest.raises(RuntimeError, match="AddGradientOperators"):
        optimizer.build_sgd(m, 0.1)
    m, _ = small_model(11)
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="max_gradient_norm"):
            optimizer.build_sgd(m, 0.1, max_gradient_norm=bad)
    with pytest.raises(ValueError, match="base_learning_rate"):
        optimizer.build_sgd(m, -0.1)
    with pytest.raises(ValueError, match="alpha"):
        optimizer.build_adagrad(m, -0.1)
    with pytest.raises(ValueError, match="alpha"):
        optimizer.build_adam(m, float("nan"))
    with pytest.raises(ValueError, match="iter_val"):
        optimizer.build_sgd(m, 0.1, iter_val=-1)
    with pytest.raises(ValueError, match="lr_alpha must be finite"):
        optimizer.build_adam(m, 0.1, use_lr_adaption=True, lr_alpha=float("inf"))
    with pytest.raises(TypeError, match="ParameterInfo"):
        optimizer.SgdOptimizer(0.1)(m.net, m.param_init_net, "fc_w")


def test_unknown_policy_fails_when_the_net_is_created():
    m, _ = small_model(12)
    optimizer.build_sgd(m, 0.1, policy="no_such_policy")
    workspace.RunNetOnce(m.param_init_net)
    with pytest.raises(ValueError, match="LearningRate.*no_such_policy"):
        workspace.CreateNet(m.net)
    # the workspace stays usable
    workspace.FeedBlob("z", np.ones(2, np.float32))
    np.testing.assert_array_equal(workspace.FetchBlob("z"), [1, 1])


# ---------------------------------------------------------------- a ported char-RNN-style training
def test_char_rnn_style_training_ports():
    """The calls of Caffe2's char_rnn example: rnn_cell.LSTM, brew.fc(axis=2),
    Softmax(axis=2), Reshape, LabelCrossEntropy, AveragedLoss,
    AddGradientOperators, build_sgd(policy="step"), a forward-only copy of the
    net from its Proto, and state carried over with Copy."""
    rng = np.random.default_rng(0)
    T, B, V, H = 6, 2, 5, 8
    m = model_helper.ModelHelper(name="char_rnn_port")
    inp, seq, h0, c0, target = m.net.AddExternalInputs("input_blob", "seq_lengths", "hidden_init",
                                                      "cell_init", "target")
    h_all, h_last, _, c_last = rnn_cell.LSTM(m, inp, seq, (h0, c0), V, H, scope="LSTM")
    out = brew.fc(m, h_all, None, dim_in=H, dim_out=V, axis=2)
    softmax = m.net.Softmax(out, "softmax", axis=2)
    reshaped, _ = m.net.Reshape(softmax, ["softmax_reshaped", "_"], shape=[-1, V])
    forward_net = core.Net(m.net.Proto())
    xent = m.net.LabelCrossEntropy([reshaped, target], "xent")
    loss = m.net.AveragedLoss(xent, "loss")
    m.AddGradientOperators([loss])
    optimizer.build_sgd(m, base_learning_rate=0.1 * T, policy="step", stepsize=1, gamma=0.9999)
    prepare = core.Net("prepare_state")
    prepare.Copy(h_last, h0)
    prepare.Copy(c_last, c0)

    # a repeating sequence the LSTM can learn: next symbol = (symbol + 1) % V
    seqs = (np.arange(T * B).reshape(T, B) + rng.integers(0, V, B)) % V
    x = np.zeros((T, B, V), np.float32)
    x[np.arange(T)[:, None], np.arange(B)[None, :], seqs] = 1
    workspace.RunNetOnce(m.param_init_net)
    workspace.FeedBlob(str(h_last), np.zeros((1, B, H), np.float32))
    workspace.FeedBlob(str(c_last), np.zeros((1, B, H), np.float32))
    workspace.FeedBlob("seq_lengths", np.full(B, T, np.int32))
    workspace.FeedBlob("input_blob", x)
    workspace.FeedBlob("target", ((seqs + 1) % V).reshape(-1).astype(np.int32))
    workspace.CreateNet(prepare)
    losses = []
    for i in range(60):
        workspace.RunNet(prepare.Name())
        if i == 0:
            workspace.CreateNet(m.net)
        workspace.RunNet(m.net.Name())
        losses.append(float(workspace.FetchBlob(loss)))
    assert losses[-1] < 0.5 * losses[0], losses[::10]
    workspace.FeedBlob("seq_lengths", np.full(B, 1, np.int32))
    workspace.FeedBlob("input_blob", x[:1])
    workspace.RunNetOnce(forward_net)
    p = workspace.FetchBlob("softmax")
    assert p.shape == (1, B, V)
    np.testing.assert_allclose(p.sum(axis=2), 1.0, rtol=1e-5)


# ---------------------------------------------------------------- utils, caffe2_pb2, GPU flags
def test_utils_debug_reraises_outside_a_terminal():
    @utils.debug
    def main(x):
        if x:
            raise KeyError("boom")
        return 7

    assert main(0) == 7
    assert main.__name__ == "main"
    with pytest.raises(KeyError, match="boom"):
        main(1)


def test_caffe2_pb2_and_device_flags():
    assert caffe2_pb2.CPU == core.DeviceType.CPU and caffe2_pb2.CUDA == core.DeviceType.CUDA
    # Caffe2's DeviceTypeProto values (caffe2/python/__init__.py's aliases)
    assert [caffe2_pb2.MKLDNN, caffe2_pb2.OPENGL, caffe2_pb2.OPENCL, caffe2_pb2.IDEEP, caffe2_pb2.HIP] == \
        [2, 3, 4, 5, 6] == [core.DeviceType.MKLDNN, core.DeviceType.OPENGL, core.DeviceType.OPENCL,
                            core.DeviceType.IDEEP, core.DeviceType.HIP]
    assert core.IsGPUDeviceType(caffe2_pb2.HIP) and not core.IsGPUDeviceType(caffe2_pb2.IDEEP)
    hip = core.CreateOperator("Relu", ["x"], ["y"], device_option=core.DeviceOption(caffe2_pb2.HIP, 0))
    workspace.FeedBlob("x", np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"asks for device HIP \(device_type 6"):
        workspace.RunOperatorOnce(hip)
    d = core.DeviceOption(caffe2_pb2.CPU, 0)
    assert isinstance(d, caffe2_pb2.DeviceOption)
    assert workspace.GpuDeviceType == caffe2_pb2.CUDA and not workspace.has_gpu_support
    assert workspace.NumGpuDevices() == 0 and core.IsGPUDeviceType(workspace.GpuDeviceType)
    a = utils.MakeArgument("k", [1, 2])
    assert a.name == "k" and list(a.ints) == [1, 2]
    m, _ = small_model(13)
    it = utils.BuildUniqueMutexIter(m.param_init_net, m.net)
    assert str(it) == optimizer.OPTIMIZER_ITERATION_NAME
    assert str(utils.BuildUniqueMutexIter(m.param_init_net, m.net)) == str(it)
    assert [op.type for op in m.net.Proto().op].count("AtomicIter") == 1


def test_examples_char_rnn_trains():
    """examples/char_rnn.py (Caffe2's char-RNN example with the imports changed) runs and learns."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "char_rnn.py")
    if not os.path.exists(path):
        pytest.skip("examples/ not beside tests/")
    spec = importlib.util.spec_from_file_location("char_rnn_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    losses = mod.main(["--iters", "200", "--iters_to_report", "100", "--hidden_size", "32", "--batch_size", "4",
                       "--seq_length", "10"])
    assert len(losses) == 200
    # six runs from fresh random weights: 41-42 over the first 10 iterations, 31-32 over the last 20
    assert np.mean(losses[-20:]) < 0.85 * np.mean(losses[:10]), (losses[:10], losses[-20:])
