"""workspace.C.Workspace(): Caffe2's workspace object API (test_util.TestCase.ws), separate from the
named workspaces of SwitchWorkspace."""

import numpy as np
import pytest

from recurrent import core, test_util, workspace
from recurrent.proto import DeviceOption


def test_blob_feed_fetch_and_run_an_op():
    ws = workspace.C.Workspace()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    assert ws.create_blob("X").feed(x)
    ws.run(core.CreateOperator("Relu", ["X"], ["Y"]))
    np.testing.assert_array_equal(ws.blobs["Y"].fetch(), np.maximum(x, 0))
    np.testing.assert_array_equal(ws.fetch_blob("Y"), np.maximum(x, 0))
    assert sorted(ws.blobs) == ["X", "Y"] and ws.blobs["X"].is_tensor()
    assert ws.has_blob("Y") and not ws.has_blob("Z")
    # the object is not the current workspace
    assert not workspace.HasBlob("X") and not workspace.HasBlob("Y")
    # an empty blob, and float64 / int64 feeds are converted as FeedBlob's
    assert not ws.create_blob("E").is_tensor()
    assert ws.fetch_blob("E") == b"E, a C++ native class of type nullptr (uninitialized)."
    ws.feed_blob("d", np.ones(2))
    assert ws.fetch_blob("d").dtype == np.float32


def test_nets_create_run_and_run_once():
    ws = workspace.C.Workspace()
    ws.feed_blob("it", np.zeros(1, np.int32))
    net = core.Net("count")
    net.Iter("it", "it")
    handle = ws.create_net(net)
    name = net.Proto().name  # "count", or made unique if another net of this process has that name
    assert handle.name == name and list(ws.nets) == [name]
    handle.run()
    ws.nets[name].run()
    assert ws.fetch_blob("it")[0] == 2
    ws.run(net)  # RunNetOnce: does not need the created net
    ws.run(net.Proto())
    assert ws.fetch_blob("it")[0] == 4
    with pytest.raises(RuntimeError, match="exists"):
        ws.create_net(net)
    ws.create_net(net, overwrite=True).run()
    assert ws.fetch_blob("it")[0] == 5
    # input_blobs are created holding no tensor, as CreateNet's
    n2 = core.Net("n2")
    n2.Copy("later", "y")
    ws.create_net(n2, input_blobs=["later"])
    assert ws.has_blob("later")


def test_errors_and_refusals():
    ws = workspace.C.Workspace()
    with pytest.raises(KeyError, match="nope"):
        ws.fetch_blob("nope")
    with pytest.raises(RuntimeError, match="op Relu #0: input 0 blob 'nope' does not exist"):
        ws.run(core.CreateOperator("Relu", ["nope"], ["y"]))
    gpu = core.CreateOperator("Relu", ["x"], ["y"], device_option=DeviceOption(1, 0))
    with pytest.raises(ValueError, match="CPU only"):
        ws.run(gpu)
    with pytest.raises(ValueError, match="only CPU blobs"):
        ws.create_blob("x").feed(np.ones(2, np.float32), device_option=DeviceOption(1, 0))
    with pytest.raises(TypeError, match="Workspace.run expects a core.Net, NetDef, OperatorDef, core.Plan"):
        ws.run("a string")
    ws.feed_blob("x", np.ones(2, np.float32))
    ws.run(core.CreateOperator("Relu", ["x"], ["y"]))  # still usable
    assert ws.reset() and ws.blobs == {}


def test_test_util_testcase_ws():
    class T(test_util.TestCase):
        def runTest(self):
            self.ws.create_blob("a").feed(np.ones(3, np.float32))
            self.ws.run(core.CreateOperator("Scale", ["a"], ["b"], scale=2.0))
            np.testing.assert_array_equal(self.ws.blobs["b"].fetch(), [2, 2, 2])

    result = T().run()
    assert result.wasSuccessful(), result.errors + result.failures


def test_other_binding_names_still_reachable():
    # workspace.C forwards everything else to the binding
    assert "Relu" in workspace.C.op_types()


def test_import_c_extension_is_the_binding_without_cudnn_names():
    """recurrent._import_c_extension (Caffe2's caffe2.python._import_c_extension, imported as C by its
    tests): workspace.C's names; no cuDNN names (a CPU package, as Caffe2's CPU build); no HIP."""
    import pytest
    from recurrent import _import_c_extension as C
    assert C.Workspace is workspace.C.Workspace
    ws = C.Workspace()
    assert ws is not None
    with pytest.raises(AttributeError):
        C.cudnn_convolution_fwd_algo_count
    assert workspace.has_hip_support is False and workspace.has_gpu_support is False
