"""Static unrolling (rnn_cell.UnrolledCell, ``static_rnn_unroll_size``),
parameter sharing (recurrent.parameter_sharing) and the ZeroGradient op: the
unrolled nets give the RecurrentNetwork op's outputs and gradients."""

import numpy as np
import pytest

from recurrent import brew, core, rnn_cell, scope, workspace
from recurrent.model_helper import ModelHelper
from recurrent.parameter_sharing import ParameterSharing


# ---------------------------------------------------------------- ParameterSharing
def test_parameter_sharing_maps_scopes():
    m = ModelHelper(name="ps")
    with scope.NameScope("a"):
        with ParameterSharing({"t0": "", "t1": ""}):
            for t in ("t0", "t1"):
                with scope.NameScope(t):
                    brew.fc(m, "x", "y", 2, 3)
        with scope.NameScope("t2"):  # outside the context: its own parameters
            brew.fc(m, "x", "y", 2, 3)
    assert [str(p) for p in m.params] == ["a/y_w", "a/y_b", "a/t2/y_w", "a/t2/y_b"]
    fcs = [o for o in m.net.Proto().op if o.type == "FC"]
    # the outputs keep their scopes; only the parameters are shared
    assert [str(o.output[0]) for o in fcs] == ["a/t0/y", "a/t1/y", "a/t2/y"]
    assert [str(o.input[1]) for o in fcs] == ["a/y_w", "a/y_w", "a/t2/y_w"]


def test_parameter_sharing_longest_prefix_chain_and_nesting():
    m = ModelHelper(name="ps")
    with ParameterSharing({"a": "b", "b": "c"}):
        with scope.NameScope("a"), scope.NameScope("inner"):
            w = m.create_param("w", [2], ("ConstantFill", {}))
        with ParameterSharing({"a/inner": "d"}):
            with scope.NameScope("a"), scope.NameScope("inner"):
                w2 = m.create_param("w", [2], ("ConstantFill", {}))
        with scope.NameScope("a"), scope.NameScope("inner"):  # the inner override is gone again
            w3 = m.create_param("w", [2], ("ConstantFill", {}))
    assert str(w) == "c/inner/w" and str(w2) == "d/w" and str(w3) == "c/inner/w"
    # a BlobReference name is used as it is
    with ParameterSharing({"x": "y"}), scope.NameScope("x"):
        assert str(m.create_param(core.BlobReference("x/v"), [1], ("ConstantFill", {}))) == "x/v"


def test_parameter_sharing_errors():
    with pytest.raises(ValueError, match="Illegal override for parameter sharing: 'a' is a prefix of 'ab'"):
        with ParameterSharing({"a": "ab"}):
            pass
    with pytest.raises(TypeError, match="takes a dict"):
        with ParameterSharing([("a", "b")]):
            pass
    m = ModelHelper(name="ps")
    with ParameterSharing({"a": "b", "b": "a"}), scope.NameScope("a"):
        with pytest.raises(ValueError, match="form a cycle"):
            m.create_param("w", [1], ("ConstantFill", {}))


# ---------------------------------------------------------------- ZeroGradient
def test_zero_gradient_op_and_its_gradient(rng):
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    workspace.FeedBlob("x", x)
    net = core.Net("zg")
    net.ZeroGradient(["x"], [])
    net.AddGradientOperators([net.Scale("x", "y", scale=3.0)])
    # the gradient of x stays the loss's, not overwritten by the zero fill (which
    # only gives x a gradient where nothing else does)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x)  # the op changes nothing
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), np.full((3, 4), 3.0, np.float32))
    net = core.Net("zg2")
    net.ZeroGradient(["x"], [])
    net.AddGradientOperators([net.Scale("w", "z")])
    workspace.FeedBlob("w", x)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), np.zeros((3, 4), np.float32))


# ---------------------------------------------------------------- UnrolledCell
def run_both(builder, T, N, D, states, seq, owg, grad_blobs):
    """Builds with the RecurrentNetwork op and unrolled, feeds the same values
    and a loss summing the outputs ``owg``; returns (outputs, gradients of
    ``grad_blobs``, model) for both."""
    got = []
    for unroll in (None, T):
        workspace.ResetWorkspace()
        m = ModelHelper(name="u")
        out = builder(m, unroll)
        workspace.RunNetOnce(m.param_init_net)
        r = np.random.RandomState(0)
        for p in sorted(str(p) for p in m.params):
            workspace.FeedBlob(p, r.uniform(-0.6, 0.6, workspace.FetchBlob(p).shape).astype(np.float32))
        workspace.FeedBlob("x", r.randn(T, N, D).astype(np.float32))
        if seq is not None:
            workspace.FeedBlob("seq", np.asarray(seq, np.int32))
        for name, shape in states.items():
            workspace.FeedBlob(name, r.randn(*shape).astype(np.float32))
        # weights make every output element count differently
        terms = []
        for k in owg:
            weighted = m.net.Mul([out[k], m.net.Tanh(out[k], "t%d" % k)], "w%d" % k)
            terms.append(m.net.SumElements(weighted, "s%d" % k))
        g = m.AddGradientOperators([m.net.Sum(terms, "loss")])
        workspace.RunNetOnce(m.net)
        got.append(([workspace.FetchBlob(str(o)).copy() for o in out],
                    [workspace.FetchBlob(str(g[b])).copy() for b in grad_blobs], m))
    return got


@pytest.mark.parametrize("dims,seq,owg", [([5], [4, 2], (0,)), ([5, 4], [4, 3], (0, 1, 3)),
                                           ([3, 3], None, (0, 2))])
def test_unrolled_lstm_equals_recurrent_network(dims, seq, owg):
    T, N, D = 4, 2, 3
    L = len(dims)
    states = {}
    for l, H in enumerate(dims):
        states["h%d" % l] = states["c%d" % l] = (1, N, H)
    names = [n for l in range(L) for n in ("h%d" % l, "c%d" % l)]

    def builder(m, unroll):
        return rnn_cell.LSTM(m, "x", "seq" if seq else None, names, D, dims if L > 1 else dims[0],
                             scope="l", static_rnn_unroll_size=unroll, outputs_with_grads=owg)

    params = ["l/i2h_w", "l/i2h_b"]
    params += ["l/gates_t_w"] if L == 1 else ["l/layer_0/gates_t_w", "l/layer_1/i2h_w"]
    (o_rnn, g_rnn, m_rnn), (o_un, g_un, m_un) = run_both(builder, T, N, D, states, seq, owg,
                                                         ["x"] + names + params)
    assert sorted(str(p) for p in m_rnn.params) == sorted(str(p) for p in m_un.params)
    assert "RecurrentNetwork" not in [o.type for o in m_un.net.Proto().op]
    for a, b in zip(o_rnn, o_un):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for a, b in zip(g_rnn, g_un):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_unrolled_gru_equals_recurrent_network():
    T, N, D, H = 3, 2, 4, 3

    def builder(m, unroll):
        return rnn_cell.GRU(m, "x", "seq", ["h0"], D, H, scope="g", static_rnn_unroll_size=unroll)

    (o_rnn, g_rnn, _), (o_un, g_un, m_un) = run_both(builder, T, N, D, {"h0": (1, N, H)}, [3, 1], (0,),
                                                     ["x", "h0", "g/i2h_w", "g/update_gate_t_w"])
    for a, b in zip(o_rnn + g_rnn, o_un + g_un):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_unrolled_names_zero_gradients_and_errors():
    m = ModelHelper(name="n")
    out = rnn_cell.LSTM(m, "x", None, ["h", "c"], 2, 3, scope="l", static_rnn_unroll_size=2)
    assert [str(o) for o in out] == ["l/hidden_state_concat", "timestep_1/l/hidden_state",
                                     "l/cell_state_concat", "timestep_1/l/cell_state"]
    zero = [str(o.input[0]) for o in m.net.Proto().op if o.type == "ZeroGradient"]
    assert zero == [str(out[k]) for k in (1, 2, 3)]
    init = [o for o in m.param_init_net.Proto().op if str(o.output[0]).endswith("timestep")]
    assert [str(o.output[0]) for o in init] == ["timestep_0/timestep", "timestep_1/timestep"]
    with pytest.raises(ValueError, match="needs the initial states"):
        rnn_cell.LSTM(ModelHelper(name="e"), "x", None, None, 2, 3, scope="l", static_rnn_unroll_size=2)
    with pytest.raises(ValueError, match="T must be >= 1"):
        rnn_cell.UnrolledCell(rnn_cell.LSTMCell(2, 3, 0.0, False), 0)
    # the input must have exactly T steps
    m = ModelHelper(name="t")
    rnn_cell.LSTM(m, "x", None, ["h", "c"], 2, 3, scope="l", static_rnn_unroll_size=3)
    workspace.RunNetOnce(m.param_init_net)
    workspace.FeedBlob("x", np.zeros((2, 1, 2), np.float32))
    for b in ("h", "c"):
        workspace.FeedBlob(b, np.zeros((1, 1, 3), np.float32))
    with pytest.raises(ValueError, match="op Split"):
        workspace.RunNetOnce(m.net)
