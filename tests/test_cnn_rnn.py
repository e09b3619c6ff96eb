"""A convolutional front end feeding a recurrent net, as image-to-sequence models built them in
Caffe2 (a CNN over a line image, its columns read as timesteps by an LSTM): brew.conv, relu,
max_pool, lrn, Transpose / Reshape into (T, N, D), rnn_cell.LSTM, FC, SoftmaxWithLoss and
build_sgd, trained a few steps. The loss falls; every blob is bitwise the same with the RNN executor
on (any thread count) as off; the trained net's inference (ExtractPredictorNet) gives the training
net's outputs."""

import re

import numpy as np
import pytest

from recurrent import brew, model_helper, optimizer, rnn_cell, workspace
from test_executor import assert_bitwise, configure

N, H, W, C1, HID, K = 4, 6, 10, 3, 8, 5  # batch, image height / width, conv channels, hidden, classes


def build(seed=0):
    """The training model: image (N, 1, H, W) -> conv 3x3 pad 1 -> relu -> lrn -> max_pool 2x1 ->
    (T = W, N, C1 * H / 2) -> 2-layer LSTM -> FC per timestep -> softmax loss against labels (T * N)."""
    model = model_helper.ModelHelper(name="cnn_rnn_%d" % seed)
    c = brew.conv(model, "image", "conv", 1, C1, 3, pad=1)
    r = brew.relu(model, c, "relu")
    n = brew.lrn(model, r, "lrn", size=3, alpha=0.1, beta=0.75, bias=1.0)
    p = brew.max_pool(model, n, "pool", kernel_h=2, kernel_w=1, stride_h=2, stride_w=1)  # (N, C1, H/2, W)
    seq = model.net.Transpose(p, "seq_nchw", axes=[3, 0, 1, 2])                          # (W, N, C1, H/2)
    x, _ = model.net.Reshape(seq, ["seq", "seq_old_shape"], shape=[W, N, C1 * H // 2])
    outs = rnn_cell.LSTM(model, x, None, None, C1 * H // 2, [HID, HID], scope="lstm", outputs_with_grads=(0,))
    h2d, _ = model.net.Reshape(outs[0], ["h2d", "h_old_shape"], shape=[W * N, HID])
    logits = brew.fc(model, h2d, "logits", HID, K)
    _, loss = model.net.SoftmaxWithLoss([logits, "label"], ["prob", "loss"])
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=0.5)
    return model


def feed(rng):
    img = rng.uniform(-1, 1, (N, 1, H, W)).astype(np.float32)
    # the label of column t: which fifth of the rows holds its largest value (learnable from the image)
    label = np.minimum(img[:, 0].argmax(axis=1) * K // H, K - 1).T.reshape(-1).astype(np.int32)
    workspace.FeedBlob("image", img)
    workspace.FeedBlob("label", label)


def train(enable, threads=None, steps=6, values=None):
    """Runs the training net ``steps`` times (parameters from the init net, or ``values``); returns the
    model, the losses and every tensor blob."""
    workspace.ResetWorkspace()
    model = build()
    configure(model.net, enable, threads=threads)
    workspace.RunNetOnce(model.param_init_net)
    if values is None:  # the init net's fills are random: the same parameters for every run
        r = np.random.RandomState(11)
        values = {str(p): r.uniform(-0.4, 0.4, workspace.FetchBlob(str(p)).shape).astype(np.float32)
                  for p in sorted(model.params, key=str)}
    for k, v in values.items():
        workspace.FeedBlob(k, v)
    feed(np.random.RandomState(5))
    workspace.CreateNet(model.net)
    losses = []
    for _ in range(steps):
        workspace.RunNet(model.net.Proto().name)
        losses.append(float(workspace.FetchBlob("loss")))
    blobs = {}
    for b in workspace.Blobs():
        v = workspace.FetchBlob(b)
        if isinstance(v, np.ndarray):
            blobs[re.sub(r"^SgdOptimizer_\d+_", "SgdOptimizer_", b)] = v  # numbered per optimizer built
    return model, losses, blobs


def test_conv_lstm_trains_and_the_executor_gives_the_same_bits():
    _, losses, ref = train(enable=0)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses  # one batch, small steps: falls every step
    assert {"conv_w", "conv_b", "conv_w_grad", "conv_b_grad", "logits_w"} <= set(ref)
    assert np.abs(ref["conv_w_grad"]).sum() > 0  # the gradient reaches the convolution through the LSTM
    for threads in (1, 2, 3):
        _, _, got = train(enable=1, threads=threads)
        assert_bitwise(ref, got, "executor threads=%d" % threads)


def test_predictor_gives_the_training_nets_outputs():
    """ExtractPredictorNet's net, run in a fresh workspace with only the trained parameters and the
    image fed, gives bitwise the probabilities the training net computes from the same parameters."""
    model, _, trained = train(enable=1, threads=2, steps=3)
    predict, params = model_helper.ExtractPredictorNet(model.net.Proto(), ["image"], ["prob"])
    values = {str(p): trained[str(p)] for p in params}
    assert {"conv_w", "conv_b", "logits_w"} <= set(values)
    _, _, again = train(enable=1, threads=2, steps=1, values=values)  # prob from these parameters
    workspace.ResetWorkspace()
    for k, v in values.items():
        workspace.FeedBlob(k, v)
    feed(np.random.RandomState(5))
    workspace.RunNetOnce(predict)
    got = workspace.FetchBlob("prob")
    assert got.shape == (W * N, K)
    np.testing.assert_array_equal(got, again["prob"])


if __name__ == "__main__":
    pytest.main([__file__, "-q"])


def test_conv_in_a_step_net_is_the_same_with_the_executor_on_and_off_and_outside_the_loop(rng):
    """A step net that convolves each timestep's images (N = 3, so outside a step loop the images
    would run in shares over the threads) and adds the previous state: trained with the executor on
    (1-3 threads) and off, every blob has the same bits, and the step outputs match the same Conv
    run outside the loop on every timestep's images."""
    from recurrent import core, trace
    from recurrent import recurrent as rnn
    T, N, C, H, M = 4, 3, 2, 5, 3
    x = rng.standard_normal((T, N, C, H, H)).astype(np.float32)
    w = (rng.standard_normal((M, C, 3, 3)) / 4).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    results = {}
    for enable, threads in [(0, None), (1, 1), (1, 2), (1, 3)]:
        workspace.ResetWorkspace()
        cell = core.Net("conv_cell")
        x_t, s_prev = cell.AddExternalInputs("x_t", "s_prev")  # (N, C H H) and (N, M H H): flat images
        img, _ = cell.Reshape([x_t], ["img_t", "img_old_shape"], shape=[N, C, H, H])
        y = cell.Conv([img, "w", "b"], "y_t", kernel=3, pad=1)
        y_flat, _ = cell.Reshape([y], ["y_flat_t", "y_old_shape"], shape=[N, M * H * H])
        s = cell.Add([y_flat, s_prev], "s_t")
        cell.AddExternalOutput(s)
        net = core.Net("conv_rnn")
        s_all, _ = rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(s_prev, "s0")],
                                     links={s_prev: s}, scope="cr")
        loss = net.SumElements(net.Mul([s_all, s_all], "sq"), "loss")
        net.AddGradientOperators([loss])
        configure(net, enable, threads)
        for op in net.Proto().op:  # the executor always (these ops are too small for its default rule)
            if op.type.startswith("RecurrentNetwork") and enable:
                rnn.set_rnn_executor_config(op, min_op_us=0)
        s0 = np.zeros((1, N, M * H * H), np.float32)
        for k, v in {"x": x.reshape(T, N, -1), "w": w, "b": b, "s0": s0}.items():
            workspace.FeedBlob(k, v)
        workspace.RunNetOnce(net)
        if enable:
            assert [st["last_run"] for st in trace.executor_status(net)] == ["executor", "executor"]
        results[(enable, threads)] = {k: workspace.FetchBlob(k) for k in workspace.Blobs()
                                      if isinstance(workspace.FetchBlob(k), np.ndarray)}
    ref = results[(0, None)]
    for key, got in results.items():
        assert_bitwise(ref, got, str(key))
    workspace.ResetWorkspace()
    outside = []
    for t in range(T):
        workspace.FeedBlob("xt", x[t])
        workspace.FeedBlob("w", w)
        workspace.FeedBlob("b", b)
        workspace.RunOperatorOnce(core.CreateOperator("Conv", ["xt", "w", "b"], ["yt"], kernel=3, pad=1))
        outside.append(workspace.FetchBlob("yt"))
    np.testing.assert_allclose(ref[str(s_all)], np.cumsum(np.stack(outside), axis=0).reshape(T, N, -1),
                               rtol=1e-5, atol=1e-5)
    assert ref["w_grad"].shape == w.shape and np.abs(ref["w_grad"]).max() > 0
