"""workspace.Predictor and predictor.mobile_exporter (Caffe2's), with a port of Caffe2's
mobile_exporter_test (LeNet: the model's output, the exported nets run by hand, and a Predictor over
the serialized nets, all equal)."""

import numpy as np
import pytest

from recurrent import brew, core, errors, workspace
from recurrent.model_helper import ModelHelper
from recurrent.predictor import mobile_exporter
from recurrent.proto import caffe2_pb2


def _lenet():
    model = ModelHelper(name="mobile_exporter_test_model")
    brew.conv(model, "data", "conv1", dim_in=1, dim_out=20, kernel=5)
    brew.max_pool(model, "conv1", "pool1", kernel=2, stride=2)
    brew.conv(model, "pool1", "conv2", dim_in=20, dim_out=50, kernel=5)
    brew.max_pool(model, "conv2", "pool2", kernel=2, stride=2)
    brew.fc(model, "pool2", "fc3", dim_in=50 * 4 * 4, dim_out=500)
    brew.relu(model, "fc3", "fc3")
    brew.fc(model, "fc3", "pred", 500, 10)
    brew.softmax(model, "pred", "out")
    return model


def test_mobile_exporter_lenet():
    model = _lenet()
    workspace.RunNetOnce(model.param_init_net)
    init_net, predict_net = mobile_exporter.Export(workspace, model.net, model.params)
    np_data = np.random.RandomState(0).rand(1, 1, 28, 28).astype(np.float32)
    workspace.FeedBlob("data", np_data)
    workspace.CreateNet(model.net)
    workspace.RunNet(model.net)
    ref_out = workspace.FetchBlob("out")

    workspace.ResetWorkspace()
    workspace.RunNetOnce(init_net)
    workspace.FeedBlob("data", np_data)  # init_net filled a [1, 1] placeholder
    workspace.CreateNet(predict_net, True)
    workspace.RunNet(predict_net.name)
    np.testing.assert_array_equal(workspace.FetchBlob("out"), ref_out)

    workspace.ResetWorkspace()
    predictor = workspace.Predictor(init_net.SerializeToString(), predict_net.SerializeToString())
    out = predictor.run([np_data])
    assert len(out) == 1
    np.testing.assert_array_equal(out[0], ref_out)
    np.testing.assert_array_equal(predictor.run({"data": np_data})[0], ref_out)
    other = np.random.RandomState(1).rand(1, 1, 28, 28).astype(np.float32)
    assert not np.array_equal(predictor.run([other])[0], ref_out)
    assert workspace.Blobs() == []  # the predictor has a workspace of its own


def test_export_nets():
    net = core.Net("e")
    net.FC(["x", "w", "b"], "h")
    net.Relu("h", "h")
    net.Add(["h", "k"], "y")
    workspace.FeedBlob("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    workspace.FeedBlob("b", np.array([0.5, -0.5], np.float32))
    workspace.FeedBlob("k", np.array([[1, 2]], np.int32))
    init_net, predict_net = mobile_exporter.Export(workspace, net, [core.BlobReference("w"), "b", "k"])
    assert [(op.type, list(op.output)) for op in init_net.op] == [
        ("GivenTensorFill", ["w"]), ("GivenTensorFill", ["b"]), ("GivenTensorIntFill", ["k"]),
        ("GivenTensorFill", ["x"])]
    args = {a.name: a for a in init_net.op[0].arg}
    assert list(args["shape"].ints) == [2, 3] and list(args["values"].floats) == [0, 1, 2, 3, 4, 5]
    assert list(predict_net.external_input) == ["x", "w", "b", "k"]
    assert list(predict_net.external_output) == ["y"]
    assert [op.type for op in predict_net.op] == ["FC", "Relu", "Add"]
    assert list(net.Proto().external_output) == []  # the net itself is not changed
    net.Proto().external_input = ["k", "b", "w", "x"]
    _, reordered = mobile_exporter.Export(workspace, net, ["w", "b", "k"])
    assert list(reordered.external_input) == ["x", "k", "b", "w"]  # inputs first, then the net's order
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init_net)
    np.testing.assert_array_equal(workspace.FetchBlob("k"), np.array([[1, 2]], np.int32))
    assert workspace.FetchBlob("x").shape == (1, 1)


def test_export_errors():
    net = core.Net("e")
    net.Relu("x", "y")
    workspace.CreateBlob("p")
    with pytest.raises(TypeError, match="parameter 'p' holds no tensor"):
        mobile_exporter.Export(workspace, net, ["p"])
    with pytest.raises(TypeError, match="float64"):
        mobile_exporter.add_tensor(caffe2_pb2.NetDef(), "d", np.zeros(2, np.float64))


def _iter_predictor():
    init = core.Net("init")
    init.ConstantFill([], "scale", shape=[1], value=2.0)
    pred = core.Net("pred")
    pred.Mul(["x", "scale"], "y", broadcast=1)
    pred.Iter([], "count")
    pred.Proto().external_input = ["x", "scale"]
    pred.Proto().external_output = ["y", "count"]
    return init, pred


def test_predictor_runs_keep_state_and_take_nets():
    init, pred = _iter_predictor()
    workspace.FeedBlob("x", np.full(3, 7, np.float32))  # the current workspace's: not seen, not changed
    p = workspace.Predictor(init, pred)  # core.Nets
    y, count = p.run([np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(y, [0, 2, 4])
    assert count[0] == 1
    y, count = p.run({"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(y, [2, 2])
    assert count[0] == 2
    y, count = p.run([])  # x keeps its last value
    np.testing.assert_array_equal(y, [2, 2])
    assert count[0] == 3
    np.testing.assert_array_equal(workspace.FetchBlob("x"), np.full(3, 7, np.float32))
    y, count = workspace.Predictor(init.Proto(), pred.Proto()).run([np.ones(1, np.float32)])  # NetDefs
    assert count[0] == 1
    pred.Proto().external_output.append("x")
    y, count, x = workspace.Predictor(init, pred).run([np.ones(1, np.float32)])
    assert x.tolist() == [1.0]


def test_predictor_errors_leave_it_usable():
    init, pred = _iter_predictor()
    p = workspace.Predictor(init, pred)
    with pytest.raises(ValueError, match="3 inputs for a net with 2 external inputs"):
        p.run([np.ones(1, np.float32)] * 3)
    with pytest.raises(KeyError, match="input 'nope' is not a blob"):
        p.run({"nope": np.ones(1, np.float32)})
    with pytest.raises(TypeError, match="input 'x' must be a NumPy array, got list"):
        p.run([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="Mul"):
        p.run([np.ones(1, np.int32)])  # int32 x float32: refused when the net is created
    y, count = p.run([np.ones(2, np.float32)])
    np.testing.assert_array_equal(y, [2, 2])
    assert count[0] == 1


def test_predictor_construction_errors():
    bad_init = core.Net("bad_init")
    bad_init.Relu("missing", "r")
    _, pred = _iter_predictor()
    with pytest.raises(KeyError, match="missing"):
        workspace.Predictor(bad_init, pred)
    init, pred = _iter_predictor()
    pred.Proto().external_input.append("unfed")
    pred.Proto().external_output.append("unfed")
    p = workspace.Predictor(init, pred)
    with pytest.raises(errors.TypeError, match="output 'unfed' holds no tensor"):
        p.run([np.ones(1, np.float32)])
    pred.Proto().external_output.append("never_written")
    with pytest.raises(KeyError, match="never_written"):
        workspace.Predictor(init, pred).run([np.ones(1, np.float32), np.ones(1, np.float32),
                                             np.ones(1, np.float32)])
    gpu = core.Net("gpu")
    gpu.Relu("x", "y")
    gpu.RunAllOnGPU()
    with pytest.raises(ValueError, match="CPU only"):
        workspace.Predictor(core.Net("empty_init"), gpu)
