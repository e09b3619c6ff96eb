"""recurrent.functional (Caffe2's caffe2.python.functional): one op on NumPy arrays in a workspace of
its own, checked against NumPy and against the same op in a net."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.functional import Functional, namedtupledict


def test_ops_against_numpy(rng):
    x = rng.randn(3, 4).astype(np.float32)
    y = Functional.Relu(x)
    np.testing.assert_array_equal(y[0], np.maximum(x, 0))
    assert y.output_0 is y[0] and y["output_0"] is y[0] and len(y) == 1
    a, b = Functional.Split(x, num_output=2, axis=1, split=[1, 3])
    np.testing.assert_array_equal(a, x[:, :1])
    np.testing.assert_array_equal(b, x[:, 1:])
    out, info = Functional.Concat(x, x, axis=0)        # the op's maximum: 2 outputs
    np.testing.assert_array_equal(out, np.concatenate([x, x]))
    assert info.tolist() == [3, 3]
    dx = Functional.ReluGradient(np.maximum(x, 0), np.ones_like(x)).output_0
    np.testing.assert_array_equal(dx, (x > 0).astype(np.float32))


def test_lstm_unit_as_in_a_net(rng):
    """LSTMUnit(h_prev, c_prev, gates, seq_lengths, timestep) gives the bits it gives in a net."""
    N, H = 2, 3
    ins = [rng.randn(1, N, H).astype(np.float32), rng.randn(1, N, H).astype(np.float32),
           rng.randn(1, N, 4 * H).astype(np.float32), np.array([1, 2], np.int32), np.array([1], np.int32)]
    h, c = Functional.LSTMUnit(*ins, forget_bias=0.5)
    names = ["h_prev", "c_prev", "gates", "seq", "t"]
    for n, v in zip(names, ins):
        workspace.FeedBlob(n, v)
    workspace.RunOperatorOnce(core.CreateOperator("LSTMUnit", names, ["h", "c"], forget_bias=0.5))
    np.testing.assert_array_equal(h, workspace.FetchBlob("h"))
    np.testing.assert_array_equal(c, workspace.FetchBlob("c"))


def test_the_current_workspace_is_left_alone():
    workspace.FeedBlob("input_0", np.ones(2, np.float32))
    Functional.Relu(np.full(2, -1.0, np.float32))
    assert workspace.FetchBlob("input_0").tolist() == [1, 1] and not workspace.HasBlob("output_0")


def test_errors():
    with pytest.raises(AttributeError, match=r"Functional: 'NoSuchOp' is not a registered operator"):
        Functional.NoSuchOp
    with pytest.raises(ValueError, match=r"Functional Add: 1 inputs, the op takes 2$"):
        Functional.Add(np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"Functional Split: the op gives any number of outputs \(at least 1\): "
                                         r"pass num_output"):
        Functional.Split(np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"Functional TopK: num_output=4, the op gives 2 to 3 outputs"):
        Functional.TopK(np.ones(2, np.float32), num_output=4, k=1)
    with pytest.raises(ValueError, match=r"op Add #0: .*shape"):   # the op's own error
        Functional.Add(np.ones(2, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"only CPU blobs are supported"):
        Functional.Relu(np.ones(2, np.float32), device_option=core.DeviceOption(core.DeviceType.CUDA))


def test_namedtupledict():
    T = namedtupledict("T", ["a", "0"])      # "0" is not an identifier: renamed as namedtuple does
    t = T(1, 2)
    assert t["a"] == 1 and t["0"] == 2 and t[1] == 2 and t._fields == ("a", "_1")
