"""brew helpers, ModelHelper (GetCompleteNet, ConstructInitTrainNetfromNet, get_name, GetDevices),
model_helper.ExtractPredictorNet and the utils additions, against what Caffe2's versions do."""

import numpy as np
import pytest

from recurrent import brew, core, model_helper, rnn_cell, utils, workspace
from recurrent.model_helper import ModelHelper


def f32(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def test_elementwise_linear(rng):
    m = ModelHelper(name="el")
    y = brew.elementwise_linear(m, "x", "y", 3)
    assert [str(p) for p in m.params] == ["y_w", "y_b"]
    assert [str(w) for w in m.weights] == ["y_w"] and [str(b) for b in m.biases] == ["y_b"]
    x = f32(rng, 2, 3)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(m.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob("y_w"), np.ones(3, np.float32))
    workspace.FeedBlob("y_w", np.array([1, 2, 3], np.float32))
    workspace.FeedBlob("y_b", np.array([0.5, 0, -1], np.float32))
    workspace.RunNetOnce(m.net)
    np.testing.assert_allclose(workspace.FetchBlob(str(y)), x * [1, 2, 3] + [0.5, 0, -1], rtol=1e-6)


def test_reduce_sum_arg_min_arg_max(rng):
    m = ModelHelper(name="r")
    brew.reduce_sum(m, "x", "s", axes=[1], keepdims=0)
    brew.arg_min(m, "x", "amin", axis=1, keepdims=0)
    brew.arg_max(m, "x", "amax", axis=1, keepdims=0)
    x = f32(rng, 3, 4)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(m.net)
    np.testing.assert_allclose(workspace.FetchBlob("s"), x.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(workspace.FetchBlob("amin"), x.argmin(1))
    np.testing.assert_array_equal(workspace.FetchBlob("amax"), x.argmax(1))


def test_iter_and_accuracy(rng):
    m = ModelHelper(name="it")
    it = brew.iter(m, "it", device_option=core.DeviceOption(core.DeviceType.CPU))
    assert str(it) == "it"
    acc = brew.accuracy(m, ["pred", "label"], "acc")
    acc2 = brew.accuracy(m, ["pred", "label"], "acc2", top_k=2)
    workspace.RunNetOnce(m.param_init_net)
    pred = np.array([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3], [0.1, 0.3, 0.6]], np.float32)
    workspace.FeedBlob("pred", pred)
    workspace.FeedBlob("label", np.array([1, 2, 0], np.int32))
    workspace.CreateNet(m.net)
    for k in range(3):
        workspace.RunNet(m.net)
        assert workspace.FetchBlob("it").tolist() == [k + 1]
    np.testing.assert_allclose(workspace.FetchBlob(str(acc)), 1.0 / 3, rtol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob(str(acc2)), 2.0 / 3, rtol=1e-6)


def test_depth_concat(rng):
    m = ModelHelper(name="dc")
    y = brew.depth_concat(m, ["a", "b"], "y", axis=1)
    a, b = f32(rng, 2, 3), f32(rng, 2, 1)
    workspace.FeedBlob("a", a)
    workspace.FeedBlob("b", b)
    workspace.RunNetOnce(m.net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(y)), np.concatenate([a, b], 1))


def test_add_weight_decay(rng):
    """grad += wd * w for the weights (not the biases), as Caffe2's WeightedSum."""
    m = ModelHelper(name="wd")
    y = brew.fc(m, "x", "y", 3, 2)
    loss = m.net.SumElements(y, "loss")
    m.AddGradientOperators([loss])
    brew.add_weight_decay(m, 0.0)
    n_ops = len(m.net.Proto().op)
    brew.add_weight_decay(m, 0.25)
    assert [o.type for o in m.net.Proto().op[n_ops:]] == ["WeightedSum"]
    x = f32(rng, 4, 3)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(m.param_init_net)
    w = workspace.FetchBlob("y_w")
    workspace.RunNetOnce(m.net)
    np.testing.assert_allclose(workspace.FetchBlob(str(m.param_to_grad["y_w"])),
                               np.ones((4, 2), np.float32).T @ x + 0.25 * w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob(str(m.param_to_grad["y_b"])), [4, 4], rtol=1e-6)
    m2 = ModelHelper(name="wd2")
    brew.fc(m2, "x", "y2", 3, 2)
    with pytest.raises(ValueError, match="weight 'y2_w' has no gradient"):
        brew.add_weight_decay(m2, 0.1)


def test_get_name_and_devices():
    m = ModelHelper(name="nm")
    assert m.get_name() == "nm"
    with pytest.raises(RuntimeError, match="model 'nm': GetDevices"):
        m.GetDevices()


def test_complete_net_round_trip(rng):
    m = ModelHelper(name="cn")
    y = brew.fc(m, "x", "y", 3, 2)
    m.net.Relu(y, "r")
    complete = m.GetCompleteNet()
    ops = complete.Proto().op
    assert [o.type for o in ops] == ["XavierFill", "ConstantFill", "FC", "Relu"]
    assert [o.debug_info for o in ops] == ["/param_init_net"] * 2 + [""] * 2
    assert complete.Name().startswith("cn_complete_net")
    m2 = ModelHelper(name="cn2")
    m2.ConstructInitTrainNetfromNet(complete)
    assert [o.type for o in m2.param_init_net.Proto().op] == ["XavierFill", "ConstantFill"]
    assert [o.type for o in m2.net.Proto().op] == ["FC", "Relu"]
    assert m2.param_init_net.Proto().external_input == []
    assert m2.param_init_net.Proto().external_output == ["y_w", "y_b"]
    assert m2.net.Proto().external_input == ["x", "y_w", "y_b"]
    assert m2.net.Proto().external_output == ["r"]
    assert m2.net.Name().endswith("/generated_net")
    workspace.FeedBlob("x", f32(rng, 4, 3))
    workspace.RunNetOnce(m2.param_init_net)
    workspace.RunNetOnce(m2.net)
    w, b = workspace.FetchBlob("y_w"), workspace.FetchBlob("y_b")
    np.testing.assert_allclose(workspace.FetchBlob("r"), np.maximum(workspace.FetchBlob("x") @ w.T + b, 0),
                               rtol=1e-5, atol=1e-6)


def _lstm_model():
    m = ModelHelper(name="lstm_train")
    T, N, D, H = 5, 3, 4, 6
    out = rnn_cell.LSTM(m, "x", "seq", ["h0", "c0"], D, H, scope="enc")
    y = brew.fc(m, out[0], "logits", H, 2, axis=2)
    loss = m.net.SumElements(m.net.Sqr(y, "sq"), "loss")
    m.AddGradientOperators([loss])
    return m, y, (T, N, D, H)


def test_extract_predictor_net_lstm_bitwise(rng):
    m, y, (T, N, D, H) = _lstm_model()
    before = str(m.net.Proto())
    pred, params = model_helper.ExtractPredictorNet(m.net.Proto(), ["x", "seq", "h0", "c0"], [y])
    assert str(m.net.Proto()) == before            # the training net is untouched
    types = [o.type for o in pred.Proto().op]
    assert "RecurrentNetwork" in types and "FC" in types
    assert not any(t.endswith("Gradient") for t in types) and "SumElements" not in types
    rn = [o for o in pred.Proto().op if o.type == "RecurrentNetwork"][0]
    assert {a.name for a in rn.arg} >= {"step_net"} and "backward_step_net" not in {a.name for a in rn.arg}
    assert params == sorted(str(p) for p in m.params)
    assert set(pred.Proto().external_input) == {"x", "seq", "h0", "c0"} | set(params)
    assert str(y) in pred.Proto().external_output
    feeds = {"x": f32(rng, T, N, D), "seq": np.array([5, 3, 1], np.int32),
             "h0": f32(rng, 1, N, H), "c0": f32(rng, 1, N, H)}
    for k, v in feeds.items():
        workspace.FeedBlob(k, v)
    workspace.RunNetOnce(m.param_init_net)
    trained = {p: workspace.FetchBlob(p) for p in params}
    workspace.RunNetOnce(m.net)
    want = workspace.FetchBlob(str(y))
    workspace.SwitchWorkspace("fresh_predict", True)
    try:
        for k, v in list(feeds.items()) + list(trained.items()):
            workspace.FeedBlob(k, v)
        workspace.RunNetOnce(pred)
        got = workspace.FetchBlob(str(y))
    finally:
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace("default")
    assert got.tobytes() == want.tobytes()


def test_extract_predictor_net_renames_device_and_errors(rng):
    m, y, _ = _lstm_model()
    dev = core.DeviceOption(core.DeviceType.CPU, 0)
    pred, params = model_helper.ExtractPredictorNet(m.net.Proto(), ["x", "seq", "h0", "c0"], [y], device=dev,
                                                    renames={"x": "data", str(y): "out"})
    p = pred.Proto()
    assert "data" in p.external_input and "x" not in p.external_input and "out" in p.external_output
    assert "data" not in params
    assert "data" in p.op[0].input and all(o.HasField("device_option") for o in p.op)
    rn = [o for o in p.op if o.type == "RecurrentNetwork"][0]
    step = [a.n for a in rn.arg if a.name == "step_net"][0]
    assert all(o.HasField("device_option") for o in step.op)
    with pytest.raises(ValueError, match="no op reading the inputs"):
        model_helper.ExtractPredictorNet(m.net.Proto(), ["nothing"], [y])
    with pytest.raises(ValueError, match="no op writing the outputs"):
        model_helper.ExtractPredictorNet(m.net.Proto(), ["x"], ["nothing"])
    # disabled inputs: the branch that reads them is dropped
    pred2, _ = model_helper.ExtractPredictorNet(m.net.Proto(), ["x", "seq", "h0", "c0"], [y],
                                                disabled_inputs=["h0"])
    assert "RecurrentNetwork" not in [o.type for o in pred2.Proto().op]
    d = ModelHelper(name="drop")
    d.net.Dropout("x", ["z", "mask"], ratio=0.5, is_test=0)
    with pytest.raises(ValueError, match="is_test=0"):
        model_helper.ExtractPredictorNet(d.net.Proto(), ["x"], ["z"])


def test_utils():
    utils.raiseIfNotEqual(3, 3, "ok")
    with pytest.raises(ValueError, match=r"^sizes\. 3 != 4$"):
        utils.raiseIfNotEqual(3, 4, "sizes")
    a = core.CreateOperator("Relu", ["x"], ["y"], name="a")
    b = core.CreateOperator("Relu", ["x"], ["y"], name="b")
    assert not utils.OpAlmostEqual(a, b)
    assert utils.OpAlmostEqual(a, b, "name") and utils.OpAlmostEqual(a, b, ["name", "engine"])
    assert a.name == "a"
    with pytest.raises(ValueError, match="no field 'nme'"):
        utils.OpAlmostEqual(a, b, "nme")
    op = core.CreateOperator("X", [], [], f=1.5, i=2, s="t", ints=[1, 2], floats=[0.5], strings=["a"])
    assert utils.ArgsToDict(op.arg) == {"f": 1.5, "i": 2, "s": "t", "ints": [1, 2], "floats": [0.5],
                                        "strings": ["a"]}

    class E:
        A = "a"
        B = "b"
        lower = "x"
        N = 3
    assert utils.EnumClassKeyVals(E) == {"A": "a", "B": "b"}

    class Dup:
        A = "a"
        B = "a"
    with pytest.raises(ValueError, match="share the value"):
        utils.EnumClassKeyVals(Dup)
    x = np.arange(24).reshape(1, 2, 3, 4)
    assert utils.NHWC2NCHW(x).shape == (1, 4, 2, 3)
    np.testing.assert_array_equal(utils.NCHW2NHWC(utils.NHWC2NCHW(x)), x)
    with pytest.raises(ValueError, match="at least 2 dims"):
        utils.NCHW2NHWC(np.zeros(3))
    assert utils.DebugMode.run(lambda: 7) == 7
    assert utils.OPTIMIZER_ITERATION_NAME == "optimizer_iteration"
    assert utils.ITERATION_MUTEX_NAME == "iteration_mutex"
