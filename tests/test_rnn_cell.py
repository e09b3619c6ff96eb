"""recurrent.rnn_cell (spec section 6, DESIGN.md 2): parameter names and graph
structure of LSTM / MILSTM / GRU / BasicRNN / MultiRNNCell / layered_LSTM,
then their outputs against NumPy references and their gradients against
finite differences.

Max abs differences are printed as ``MAXDIFF <what> <value>`` (pytest -s)."""

import numpy as np
import pytest

from recurrent import core, rnn_cell, workspace
from recurrent.model_helper import ModelHelper


def f32(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def report(what, a, b):
    d = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))) if np.size(a) else 0.0
    print("MAXDIFF %s %.3g" % (what, d))
    return d


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def rnn_ops(model):
    return [op for op in model.net.Proto().op if op.type == "RecurrentNetwork"]


def args_of(op):
    return {a.name: a.value() for a in op.arg}


def param_names(model):
    return sorted(str(p) for p in model.params)


def run_init(model):
    workspace.RunNetOnce(model.param_init_net)


def fetch(name):
    return workspace.FetchBlob(str(name))


def assert_stack_matches(res, x, L, layer_ref, tag, atol):
    """The 4 outputs (hidden all / last, cell all / last) of each of the L
    layers of ``res`` against ``layer_ref(l, layer input)`` (a NumPy
    reference), each layer reading the reference's output of the one below."""
    inp = x
    for l in range(L):
        ref = layer_ref(l, inp)
        for k in range(4):
            got = fetch(res[4 * l + k])
            report("%s_L%d_layer%d_out%d" % (tag, L, l, k), got, ref[k])
            np.testing.assert_allclose(got, ref[k], rtol=1e-4, atol=atol)
        inp = ref[0]


# ---------------------------------------------------------------- NumPy references
def _state0(s, N, H):
    s = np.asarray(s, np.float64)
    return np.broadcast_to(s.reshape(-1, H)[-N:] if s.ndim > 1 else s, (N, H)).copy()


def lstm_layer_ref(x, h0, c0, w_i, b_i, w_h, b_h, seq=None, forget_bias=0.0, drop_states=False):
    """LSTMUnit semantics ([i, f, o, g] gates); returns h_all, h_last, c_all, c_last."""
    T, N, _ = x.shape
    H = w_h.shape[1]
    h, c = _state0(h0, N, H), _state0(c0, N, H)
    hs, cs = np.zeros((T, N, H)), np.zeros((T, N, H))
    for t in range(T):
        g = x[t] @ w_i.T.astype(np.float64) + b_i + h @ w_h.T.astype(np.float64) + b_h
        i, f, o, gg = (g[:, k * H:(k + 1) * H] for k in range(4))
        cn = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(gg)
        hn = sigmoid(o) * np.tanh(cn)
        valid = (t < seq).reshape(N, 1) if seq is not None else np.ones((N, 1), bool)
        keep_h, keep_c = (np.zeros_like(h), np.zeros_like(c)) if drop_states else (h, c)
        h, c = np.where(valid, hn, keep_h), np.where(valid, cn, keep_c)
        hs[t], cs[t] = h, c
    return hs, h[None], cs, c[None]


def gru_layer_ref(x, h0, w_i, b_i, w_r, b_r, w_u, b_u, w_o, b_o, seq=None, linear_before_reset=False,
                  drop_states=False):
    """GRUCell + GRUUnit semantics; returns h_all, h_last."""
    T, N, _ = x.shape
    H = w_r.shape[1]
    h = _state0(h0, N, H)
    hs = np.zeros((T, N, H))
    for t in range(T):
        xi = x[t] @ w_i.T.astype(np.float64) + b_i
        xr, xu, xo = xi[:, :H], xi[:, H:2 * H], xi[:, 2 * H:]
        r = h @ w_r.T + b_r + xr
        u = h @ w_u.T + b_u + xu
        if linear_before_reset:
            o = sigmoid(r) * (h @ w_o.T + b_o) + xo
        else:
            o = (sigmoid(r) * h) @ w_o.T + b_o + xo
        us = sigmoid(u)
        hn = us * h + (1 - us) * np.tanh(o)
        valid = (t < seq).reshape(N, 1) if seq is not None else np.ones((N, 1), bool)
        h = np.where(valid, hn, np.zeros_like(h) if drop_states else h)
        hs[t] = h
    return hs, h[None]


def lstm_params(scope, num_layers):
    """(i2h_w, i2h_b, gates_w, gates_b) blob names per layer."""
    out = []
    for l in range(num_layers):
        if num_layers == 1:
            ip = rp = scope + "/"
        else:
            rp = "%s/layer_%d/" % (scope, l)
            ip = scope + "/" if l == 0 else rp
        out.append((ip + "i2h_w", ip + "i2h_b", rp + "gates_t_w", rp + "gates_t_b"))
    return out


def gru_params(scope, num_layers):
    out = []
    for l in range(num_layers):
        if num_layers == 1:
            ip = rp = scope + "/"
        else:
            rp = "%s/layer_%d/" % (scope, l)
            ip = scope + "/" if l == 0 else rp
        gates = ("reset_gate_t", "update_gate_t", "output_gate_t")
        out.append([ip + "i2h_w", ip + "i2h_b"] + [rp + g + s for g in gates for s in ("_w", "_b")])
    return out


def randomize_params(rng, names, scale=0.5):
    for n in names:
        workspace.FeedBlob(n, f32(rng, *fetch(n).shape, lo=-scale, hi=scale))


# ================================================================ structure and names
def test_lstm_single_layer_names_and_step_net():
    model = ModelHelper(name="m")
    out = rnn_cell.LSTM(model, "x", "seq_lengths", ("h0", "c0"), dim_in=5, dim_out=3, scope="lstm",
                        return_params=True)
    h_all, h_last, c_all, c_last, params = out
    assert param_names(model) == sorted(["lstm/i2h_w", "lstm/i2h_b", "lstm/gates_t_w", "lstm/gates_t_b"])
    assert params == {"input": {"weights": "lstm/i2h_w", "biases": "lstm/i2h_b"},
                      "recurrent": {"weights": "lstm/gates_t_w", "biases": "lstm/gates_t_b"}}
    (op,) = rnn_ops(model)
    a = args_of(op)
    assert [o.type for o in a["step_net"].op] == ["FC", "Sum", "LSTMUnit"]
    assert list(op.input)[:3] == ["lstm/i2h", "h0", "c0"]
    assert set(op.input[3:]) == {"lstm/gates_t_w", "lstm/gates_t_b", "seq_lengths"}
    assert a["outputs_with_grads"] == [0]
    assert a["recompute_blobs_on_backward"] == []
    ps = [op.input[i] for i in a["param"]]
    assert sorted(ps) == ["lstm/gates_t_b", "lstm/gates_t_w"]
    assert [str(b) for b in (h_all, h_last, c_all, c_last)] == [
        "lstm/hidden_state_all", "lstm/hidden_state_last", "lstm/cell_state_all", "lstm/cell_state_last"]
    unit = a["step_net"].op[2]
    assert list(unit.input) == ["lstm/hidden_t_prev", "lstm/cell_t_prev", "lstm/gates_t", "seq_lengths",
                                "timestep"]


def test_lstm_memory_optimization_and_forward_only_arguments():
    model = ModelHelper(name="m")
    rnn_cell.LSTM(model, "x", None, ("h0", "c0"), 4, 3, scope="a", memory_optimization=True)
    rnn_cell.LSTM(model, "x", None, ("h0", "c0"), 4, 3, scope="b", forward_only=True)
    a, b = (args_of(op) for op in rnn_ops(model))
    assert a["recompute_blobs_on_backward"] == ["a/gates_t"]
    assert [o.type for o in a["backward_step_net"].op[:2]] == ["FC", "Sum"]
    unit = a["step_net"].op[2]
    assert list(unit.input) == ["a/hidden_t_prev", "a/cell_t_prev", "a/gates_t", "timestep"]
    assert "backward_step_net" not in b and "param" not in b


def test_lstm_under_name_scope():
    model = ModelHelper(name="m")
    with core.NameScope("ns"):
        rnn_cell.LSTM(model, "x", "seq", ("h0", "c0"), 4, 3, scope="enc")
    assert "ns/enc/i2h_w" in param_names(model) and "ns/enc/gates_t_w" in param_names(model)
    (op,) = rnn_ops(model)
    assert list(op.input)[:3] == ["ns/enc/i2h", "ns/h0", "ns/c0"]
    assert "ns/seq" in op.input


def test_multi_layer_lstm_is_one_op_with_layer_names():
    model = ModelHelper(name="m")
    res = rnn_cell.LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1", "h2", "c2"], dim_in=4, dim_out=[3, 5, 2],
                        scope="deep", outputs_with_grads=(0, 1), return_last_layer_only=False,
                        return_params=True)
    assert len(rnn_ops(model)) == 1
    assert len(res) == 13
    names = param_names(model)
    for l, (iw, ib, gw, gb) in enumerate(lstm_params("deep", 3)):
        for n in (iw, ib, gw, gb):
            assert n in names
    assert len(names) == 12
    a = args_of(rnn_ops(model)[0])
    assert a["outputs_with_grads"] == [8, 9]
    # shapes of the created parameters
    run_init(model)
    assert fetch("deep/i2h_w").shape == (12, 4)
    assert fetch("deep/layer_0/gates_t_w").shape == (12, 3)
    assert fetch("deep/layer_1/i2h_w").shape == (20, 3)
    assert fetch("deep/layer_2/gates_t_w").shape == (8, 2)
    params = res[-1]
    assert params["input"][1]["weights"] == "deep/layer_1/i2h_w"
    assert params["recurrent"][0]["weights"] == "deep/layer_0/gates_t_w"


def test_gru_names_and_outputs_shift():
    model = ModelHelper(name="m")
    res = rnn_cell.GRU(model, "x", None, ["h0", "h1"], 4, [3, 3], scope="g", outputs_with_grads=(0, 1),
                       linear_before_reset=True)
    assert len(res) == 2
    assert len(rnn_ops(model)) == 1
    assert args_of(rnn_ops(model)[0])["outputs_with_grads"] == [2, 3]
    assert param_names(model) == sorted(n for layer in gru_params("g", 2) for n in layer)
    model = ModelHelper(name="m1")
    rnn_cell.GRU(model, "x", None, ["h0"], 4, 3, scope="g1")
    assert param_names(model) == sorted(gru_params("g1", 1)[0])


def test_initializers_create_broadcast_states():
    model = ModelHelper(name="m")
    rnn_cell.LSTM(model, "x", None, None, 4, [3, 2], scope="s")
    rnn_cell.GRU(model, "x", None, None, 4, 3, scope="g")
    names = param_names(model)
    for n in ("s/layer_0/initial_hidden_state", "s/layer_0/initial_cell_state",
              "s/layer_1/initial_hidden_state", "s/layer_1/initial_cell_state", "g/initial_hidden_state"):
        assert n in names
    run_init(model)
    assert fetch("s/layer_1/initial_cell_state").shape == (2,)
    np.testing.assert_array_equal(fetch("g/initial_hidden_state"), np.zeros(3, np.float32))


def test_layered_lstm_layers_have_own_initial_states():
    model = ModelHelper(name="m")
    out = rnn_cell.layered_LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], 4, [3, 3], scope="lay",
                                outputs_with_grads=(1,))
    assert len(out) == 4
    ops = rnn_ops(model)
    assert len(ops) == 2
    assert list(ops[0].input)[1:3] == ["h0", "c0"]
    assert list(ops[1].input)[1:3] == ["h1", "c1"]
    assert args_of(ops[0])["outputs_with_grads"] == [0]
    assert args_of(ops[1])["outputs_with_grads"] == [1]
    assert "lay_layer_1/i2h_w" in param_names(model)
    model = ModelHelper(name="m2")
    rnn_cell.layered_LSTM(model, "x", "seq", ["h0", "c0"], 4, [3, 3], scope="lay")
    assert [list(op.input)[1:3] for op in rnn_ops(model)] == [["h0", "c0"], ["h0", "c0"]]
    with pytest.raises(ValueError, match="initial_states"):
        rnn_cell.layered_LSTM(ModelHelper(name="m3"), "x", "seq", ["h0", "c0", "h1"], 4, [3, 3], scope="l")
    with pytest.raises(ValueError, match="return_params"):
        rnn_cell.layered_LSTM(ModelHelper(name="m4"), "x", "seq", None, 4, [3, 3], scope="l",
                              return_params=True)


def test_bad_cell_arguments():
    with pytest.raises(RuntimeError, match="activation"):
        rnn_cell.BasicRNNCell(3, 3, 0.0, False, activation="sigmoid")
    with pytest.raises(ValueError, match="Number of initial state"):
        rnn_cell.LSTM(ModelHelper(name="m"), "x", None, ["h0"], 4, 3, scope="s")
    with pytest.raises(ValueError, match="layer 0"):
        rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(3, 3, 0.0, False), rnn_cell.LSTMCell(3, 3, 0.0, False)],
                              residual_output_layers=[0])


# ================================================================ numerics
def feed_inputs(rng, T, N, D, states, seq=True):
    x = f32(rng, T, N, D)
    workspace.FeedBlob("x", x)
    s = rng.randint(1, T + 1, size=N).astype(np.int32)
    s[0] = T
    if seq:
        workspace.FeedBlob("seq", s)
    vals = {}
    for name, shape in states.items():
        vals[name] = f32(rng, *shape)
        workspace.FeedBlob(name, vals[name])
    return x, (s if seq else None), vals


@pytest.mark.parametrize("dims", [[3], [3, 4], [2, 3, 2]])
@pytest.mark.parametrize("with_seq,drop_states", [(True, False), (True, True), (False, False)])
def test_multi_layer_lstm_vs_numpy(rng, dims, with_seq, drop_states):
    T, N, D = 5, 3, 4
    L = len(dims)
    model = ModelHelper(name="m")
    init_names = [n for l in range(L) for n in ("h%d" % l, "c%d" % l)]
    res = rnn_cell.LSTM(model, "x", "seq" if with_seq else None, init_names, D, dims if L > 1 else dims[0],
                        scope="lstm", forget_bias=0.7, drop_states=drop_states, return_last_layer_only=False)
    run_init(model)
    shapes = {}
    for l, H in enumerate(dims):
        shapes["h%d" % l] = (1, N, H) if l % 2 == 0 else (N, H)
        shapes["c%d" % l] = (1, N, H) if l % 2 == 0 else (H,)
    x, seq, vals = feed_inputs(rng, T, N, D, shapes, with_seq)
    names = lstm_params("lstm", L)
    randomize_params(rng, [n for layer in names for n in layer])
    workspace.RunNetOnce(model.net)
    assert_stack_matches(res, x, L, lambda l, inp: lstm_layer_ref(
        inp, vals["h%d" % l], vals["c%d" % l], *(fetch(n) for n in names[l]), seq, 0.7, drop_states),
        "lstm", atol=2e-5)


def test_lstm_with_initializer_states_vs_numpy(rng):
    T, N, D, H = 4, 2, 3, 5
    model = ModelHelper(name="m")
    h_all, h_last, c_all, c_last = rnn_cell.LSTM(model, "x", None, None, D, H, scope="z")
    run_init(model)
    x = f32(rng, T, N, D)
    workspace.FeedBlob("x", x)
    randomize_params(rng, lstm_params("z", 1)[0])
    h0, c0 = f32(rng, H), f32(rng, H)
    workspace.FeedBlob("z/initial_hidden_state", h0)
    workspace.FeedBlob("z/initial_cell_state", c0)
    workspace.RunNetOnce(model.net)
    ref = lstm_layer_ref(x, h0, c0, *(fetch(n) for n in lstm_params("z", 1)[0]))
    np.testing.assert_allclose(fetch(h_all), ref[0], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(fetch(c_last), ref[3], rtol=1e-4, atol=2e-5)


def test_init_from_lstm_params_vs_numpy(rng):
    """Caffe2's GetLSTMParamNames / InitFromLSTMParams: per-gate values (gate order i, f, o, g) set the
    parameters of LSTM(..., return_params=True); the LSTM then computes the NumPy LSTM with those
    gates; values of the wrong size are a ValueError naming the blob; a multi-layer dict a TypeError."""
    T, N, D, H = 4, 2, 3, 5
    model = ModelHelper(name="m")
    h_all, _, _, c_last, params = rnn_cell.LSTM(model, "x", None, ("h0", "c0"), D, H, scope="g",
                                                return_params=True)
    run_init(model)
    names = rnn_cell.GetLSTMParamNames()
    assert names == {"weights": ["input_gate_w", "forget_gate_w", "output_gate_w", "cell_w"],
                     "biases": ["input_gate_b", "forget_gate_b", "output_gate_b", "cell_b"]}
    vals = {kind: {w: f32(rng, H, D if kind == "input" else H) for w in names["weights"]}
            for kind in ("input", "recurrent")}
    for kind in vals:
        vals[kind].update({b: f32(rng, H) for b in names["biases"]})
    rnn_cell.InitFromLSTMParams(params, vals)
    for kind in ("input", "recurrent"):
        w = np.concatenate([vals[kind][n] for n in names["weights"]])
        np.testing.assert_array_equal(fetch(params[kind]["weights"]), w)
    x, h0, c0 = f32(rng, T, N, D), f32(rng, 1, N, H), f32(rng, 1, N, H)
    for n, v in (("x", x), ("h0", h0), ("c0", c0)):
        workspace.FeedBlob(n, v)
    workspace.RunNetOnce(model.net)
    gate = lambda kind, kk: np.concatenate([vals[kind][n] for n in names[kk]])  # noqa: E731
    ref = lstm_layer_ref(x, h0, c0, gate("input", "weights"), gate("input", "biases"),
                         gate("recurrent", "weights"), gate("recurrent", "biases"))
    np.testing.assert_allclose(fetch(h_all), ref[0], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(fetch(c_last), ref[3], rtol=1e-4, atol=2e-5)
    vals["input"]["cell_w"] = f32(rng, H, D + 1)
    with pytest.raises(ValueError, match=r"InitFromLSTMParams: the input gate weights of 'input_gate_w', "
                                         r"'forget_gate_w', 'output_gate_w', 'cell_w' hold 65 values together, "
                                         r"but blob 'g/i2h_w' has 60 \[20, 3\]"):
        rnn_cell.InitFromLSTMParams(params, {"input": vals["input"]})
    with pytest.raises(TypeError, match=r"lstm_pblobs\['input'\] must be one layer's"):
        rnn_cell.InitFromLSTMParams({"input": [params["input"]]}, {"input": vals["input"]})


def milstm_ref(x, h0, c0, w_i, b_i, w_h, b_h, alpha, beta1, beta2, b, seq):
    T, N, _ = x.shape
    H = w_h.shape[1]
    h, c = _state0(h0, N, H), _state0(c0, N, H)
    hs = np.zeros((T, N, H))
    for t in range(T):
        xi = x[t] @ w_i.T.astype(np.float64) + b_i
        p = h @ w_h.T + b_h
        g = alpha * xi * p + beta1 * p + beta2 * xi + b
        i, f, o, gg = (g[:, k * H:(k + 1) * H] for k in range(4))
        cn = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        hn = sigmoid(o) * np.tanh(cn)
        valid = (t < seq).reshape(N, 1)
        h, c = np.where(valid, hn, h), np.where(valid, cn, c)
        hs[t] = h
    return hs


def test_milstm_vs_numpy(rng):
    T, N, D, H = 4, 3, 3, 2
    model = ModelHelper(name="m")
    res = rnn_cell.MILSTM(model, "x", "seq", ["h0", "c0"], D, H, scope="mi")
    run_init(model)
    names = ["mi/i2h_w", "mi/i2h_b", "mi/prev_t_w", "mi/prev_t_b", "mi/alpha", "mi/beta1", "mi/beta2", "mi/b"]
    assert sorted(names) == param_names(model)
    np.testing.assert_array_equal(fetch("mi/alpha"), np.ones(4 * H, np.float32))
    x, seq, vals = feed_inputs(rng, T, N, D, {"h0": (1, N, H), "c0": (1, N, H)})
    randomize_params(rng, names)
    workspace.RunNetOnce(model.net)
    ref = milstm_ref(x, vals["h0"], vals["c0"], *(fetch(n) for n in names), seq)
    report("milstm_out", fetch(res[0]), ref)
    np.testing.assert_allclose(fetch(res[0]), ref, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("linear_before_reset", [False, True])
@pytest.mark.parametrize("dims", [[3], [3, 2]])
@pytest.mark.parametrize("with_seq,drop_states", [(True, False), (True, True), (False, False)])
def test_gru_vs_numpy(rng, linear_before_reset, dims, with_seq, drop_states):
    T, N, D = 5, 3, 4
    L = len(dims)
    model = ModelHelper(name="m")
    res = rnn_cell.GRU(model, "x", "seq" if with_seq else None, ["h%d" % l for l in range(L)], D,
                       dims if L > 1 else dims[0], scope="gru", drop_states=drop_states,
                       linear_before_reset=linear_before_reset, return_last_layer_only=False)
    assert len(res) == 2 * L
    run_init(model)
    x, seq, vals = feed_inputs(rng, T, N, D, {"h%d" % l: (1, N, H) for l, H in enumerate(dims)}, with_seq)
    names = gru_params("gru", L)
    randomize_params(rng, [n for layer in names for n in layer])
    workspace.RunNetOnce(model.net)
    inp = x
    for l in range(L):
        ref = gru_layer_ref(inp, vals["h%d" % l], *(fetch(n) for n in names[l]), seq=seq,
                            linear_before_reset=linear_before_reset, drop_states=drop_states)
        for k in range(2):
            got = fetch(res[2 * l + k])
            report("gru_L%d_layer%d_out%d" % (L, l, k), got, ref[k])
            np.testing.assert_allclose(got, ref[k], rtol=1e-4, atol=2e-5)
        inp = ref[0]


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_basic_rnn_vs_numpy(rng, activation):
    T, N, D, H = 4, 2, 3, 3
    model = ModelHelper(name="m")
    h_all, h_last = rnn_cell.BasicRNN(model, "x", None, ["h0"], D, H, scope="b", activation=activation)
    run_init(model)
    x, _, vals = feed_inputs(rng, T, N, D, {"h0": (1, N, H)}, seq=False)
    names = ["b/i2h_w", "b/i2h_b", "b/gates_t_w", "b/gates_t_b"]
    randomize_params(rng, names)
    workspace.RunNetOnce(model.net)
    iw, ib, gw, gb = (fetch(n).astype(np.float64) for n in names)
    h = vals["h0"][0].astype(np.float64)
    ref = []
    for t in range(T):
        a = x[t] @ iw.T + ib + h @ gw.T + gb
        h = np.tanh(a) if activation == "tanh" else np.maximum(a, 0)
        ref.append(h)
    np.testing.assert_allclose(fetch(h_all), np.array(ref), rtol=1e-4, atol=2e-5)


def basic_rnn_ref(x, h0, iw, ib, gw, gb, activation, seq=None, drop_states=False):
    """BasicRNNCell: h_t = act(x_t W_i^T + b_i + h W_h^T + b_h); with seq, rows
    with t >= seq[n] keep h (or get 0 with drop_states). Returns h_all, h_last."""
    T, N, _ = x.shape
    h = _state0(h0, N, gw.shape[0])
    out = []
    for t in range(T):
        a = x[t] @ iw.T + ib + h @ gw.T + gb
        hn = np.tanh(a) if activation == "tanh" else np.maximum(a, 0)
        if seq is not None:
            valid = (t < seq)[:, None]
            hn = np.where(valid, hn, 0.0 if drop_states else h)
        h = hn
        out.append(h)
    return np.array(out), h[None]


@pytest.mark.parametrize("activation,drop_states", [("tanh", False), ("relu", False), ("tanh", True)])
def test_basic_rnn_seq_lengths_vs_numpy(rng, activation, drop_states):
    T, N, D, H = 5, 4, 3, 3
    model = ModelHelper(name="m")
    h_all, h_last = rnn_cell.BasicRNN(model, "x", "seq", ["h0"], D, H, scope="b", activation=activation,
                                      drop_states=drop_states)
    run_init(model)
    x, _, vals = feed_inputs(rng, T, N, D, {"h0": (1, N, H)}, seq=False)
    seq = np.array([T, 2, 1, 4], np.int32)
    workspace.FeedBlob("seq", seq)
    names = ["b/i2h_w", "b/i2h_b", "b/gates_t_w", "b/gates_t_b"]
    randomize_params(rng, names)
    workspace.RunNetOnce(model.net)
    p = [fetch(n).astype(np.float64) for n in names]
    ref_all, ref_last = basic_rnn_ref(x.astype(np.float64), vals["h0"], *p, activation, seq=seq,
                                      drop_states=drop_states)
    got_all = fetch(h_all)
    report("basic_rnn_seq_%s_%d" % (activation, drop_states), got_all, ref_all)
    np.testing.assert_allclose(got_all, ref_all, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(fetch(h_last), ref_last, rtol=1e-4, atol=2e-5)
    # past its length a row stops changing (or is 0 with drop_states)
    for n in range(N):
        for t in range(seq[n], T):
            want = np.zeros(H) if drop_states else (got_all[seq[n] - 1, n] if seq[n] else vals["h0"][0, n])
            np.testing.assert_array_equal(got_all[t, n], want.astype(np.float32))
    # without seq_lengths the ended rows would differ: the mask matters
    ref_free, _ = basic_rnn_ref(x.astype(np.float64), vals["h0"], *p, activation)
    assert np.max(np.abs(ref_free - ref_all)) > 1e-3


@pytest.mark.parametrize("drop_states", [False, True])
def test_basic_rnn_seq_lengths_gradients(rng, drop_states):
    T, N, D, H = 4, 3, 2, 2
    model = ModelHelper(name="m")
    res = rnn_cell.BasicRNN(model, "x", "seq", ["h0"], D, H, scope="b", activation="tanh",
                            outputs_with_grads=(0, 1), drop_states=drop_states)
    run_init(model)
    feed_inputs(rng, T, N, D, {"h0": (1, N, H)}, seq=False)
    workspace.FeedBlob("seq", np.array([T, 1, 3], np.int32))
    names = ["b/i2h_w", "b/i2h_b", "b/gates_t_w", "b/gates_t_b"]
    randomize_params(rng, names, scale=0.8)
    got = fd_check(rng, model, res, (0, 1), ["x", "h0"] + names, "basic_rnn_seq%d" % drop_states)
    # x of row 1 past its length (t >= 1) does not reach any output
    np.testing.assert_array_equal(got["x"][1:, 1], 0.0)


def test_layered_lstm_vs_numpy(rng):
    T, N, D, H = 4, 2, 3, 3
    model = ModelHelper(name="m")
    out = rnn_cell.layered_LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="lay")
    run_init(model)
    x, seq, vals = feed_inputs(rng, T, N, D, {k: (1, N, H) for k in ("h0", "c0", "h1", "c1")})
    n0 = lstm_params("lay", 1)[0]
    n1 = lstm_params("lay_layer_1", 1)[0]
    randomize_params(rng, list(n0) + list(n1))
    workspace.RunNetOnce(model.net)
    r0 = lstm_layer_ref(x, vals["h0"], vals["c0"], *(fetch(n) for n in n0), seq)
    r1 = lstm_layer_ref(r0[0], vals["h1"], vals["c1"], *(fetch(n) for n in n1), seq)
    for k in range(4):
        np.testing.assert_allclose(fetch(out[k]), r1[k], rtol=1e-4, atol=2e-5)


# ================================================================ gradients
def fd_check(rng, model, outs, owg, blobs, what, step=5e-3, rtol=3e-2, atol=3e-3, max_entries=None):
    """Analytic gradients of sum_k <G_k, out_k> (k in owg) vs central finite
    differences, for every entry of each blob (or ``max_entries`` random
    ones)."""
    workspace.RunNetOnce(model.net)
    G = {k: f32(rng, *fetch(outs[k]).shape) for k in owg}
    g = model.net.Clone(model.net.Name() + "_g")
    gmap = {str(k): str(v) for k, v in g.AddGradientOperators({str(outs[k]): str(outs[k]) + "_grad"
                                                               for k in owg}).items()}
    for k in owg:
        workspace.FeedBlob(str(outs[k]) + "_grad", G[k])
    workspace.RunNetOnce(g)
    got = {b: fetch(gmap[b]).copy() for b in blobs}

    def loss():
        workspace.RunNetOnce(model.net)
        return sum(float(np.sum(G[k].astype(np.float64) * fetch(outs[k]))) for k in owg)

    for b in blobs:
        x0 = fetch(b).copy()
        flat = x0.reshape(-1)
        idx = np.arange(flat.size)
        if max_entries is not None and flat.size > max_entries:
            idx = rng.choice(flat.size, max_entries, replace=False)
        est = np.zeros(len(idx))
        for j, i in enumerate(idx):
            for sign in (1, -1):
                x = flat.copy()
                x[i] += sign * step
                workspace.FeedBlob(b, x.reshape(x0.shape))
                est[j] += sign * loss()
        workspace.FeedBlob(b, x0)
        est /= 2 * step
        a = got[b].reshape(-1)[idx]
        report("%s_grad_%s" % (what, b), a, est)
        np.testing.assert_allclose(a, est, rtol=rtol, atol=atol, err_msg=b)
    workspace.RunNetOnce(model.net)
    return got


@pytest.mark.parametrize("owg", [(0,), (1, 3), (0, 1, 2, 3)])
def test_two_layer_lstm_gradients(rng, owg):
    T, N, D, H = 3, 2, 2, 2
    model = ModelHelper(name="m")
    res = rnn_cell.LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="l2",
                        outputs_with_grads=owg, forget_bias=0.3)
    run_init(model)
    feed_inputs(rng, T, N, D, {"h0": (1, N, H), "c0": (N, H), "h1": (H,), "c1": (1, N, H)})
    params = [n for layer in lstm_params("l2", 2) for n in layer]
    randomize_params(rng, params, scale=0.8)
    workspace.RunNetOnce(model.net)
    fd_check(rng, model, res, owg, ["x", "h0", "c0", "h1", "c1"] + params, "lstm2")


@pytest.mark.parametrize("linear_before_reset", [False, True])
def test_two_layer_gru_gradients(rng, linear_before_reset):
    T, N, D, H = 3, 2, 2, 2
    model = ModelHelper(name="m")
    res = rnn_cell.GRU(model, "x", "seq", ["h0", "h1"], D, [H, H], scope="g2", outputs_with_grads=(0, 1),
                       linear_before_reset=linear_before_reset)
    run_init(model)
    feed_inputs(rng, T, N, D, {"h0": (1, N, H), "h1": (N, H)})
    params = [n for layer in gru_params("g2", 2) for n in layer]
    randomize_params(rng, params, scale=0.8)
    workspace.RunNetOnce(model.net)
    fd_check(rng, model, res, (0, 1), ["x", "h0", "h1"] + params, "gru2")


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_stack_under_name_scope_gradients(rng, cell):
    """A stack built inside a NameScope: its backward step net (where a layer's state output
    also feeds the layer above, so its gradient is summed) names every blob once, and its
    gradients equal those of the same stack built outside any scope."""
    T, N, D, H = 3, 2, 2, 2
    build = rnn_cell.LSTM if cell == "lstm" else rnn_cell.GRU
    states = ["h0", "c0", "h1", "c1"] if cell == "lstm" else ["h0", "h1"]
    x, seq, vals = feed_inputs(rng, T, N, D, {s: (1, N, H) for s in states})
    names = lstm_params("st", 2) if cell == "lstm" else gru_params("st", 2)
    params = [n for layer in names for n in layer]
    grads = []
    for ns in ("", "ns"):
        p = ns + "/" if ns else ""
        model = ModelHelper(name="m" + ns)
        with core.NameScope(ns):
            res = build(model, "x", "seq", states, D, [H, H], scope="st", outputs_with_grads=(0,))
        run_init(model)
        for b in ["x", "seq"] + states:
            workspace.FeedBlob(p + b, fetch(b))
        if not ns:
            randomize_params(rng, params, scale=0.8)
        else:
            for n in params:
                workspace.FeedBlob(p + n, fetch(n))
        gmap = model.net.AddGradientOperators([res[0]])
        (op,) = rnn_ops(model)
        bwd = args_of(op)["backward_step_net"]
        blobs = [str(b) for o in bwd.op for b in list(o.input) + list(o.output)]
        assert blobs and not [b for b in blobs if "ns/ns/" in b]
        workspace.RunNetOnce(model.net)
        grads.append([fetch(gmap[p + b]) for b in ["x"] + states + params])
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def test_milstm_and_basic_rnn_gradients(rng):
    T, N, D, H = 3, 2, 2, 2
    model = ModelHelper(name="m")
    res = rnn_cell.MILSTM(model, "x", "seq", ["h0", "c0"], D, H, scope="mi", outputs_with_grads=(0,))
    run_init(model)
    feed_inputs(rng, T, N, D, {"h0": (1, N, H), "c0": (1, N, H)})
    names = ["mi/i2h_w", "mi/prev_t_w", "mi/alpha", "mi/beta1", "mi/beta2", "mi/b"]
    randomize_params(rng, names, scale=0.8)
    fd_check(rng, model, res, (0,), ["x", "h0"] + names, "milstm")
    model = ModelHelper(name="m2")
    res = rnn_cell.BasicRNN(model, "x", None, ["h0"], D, H, scope="b", activation="tanh",
                            outputs_with_grads=(0, 1))
    run_init(model)
    randomize_params(rng, ["b/i2h_w", "b/gates_t_w"], scale=0.8)
    fd_check(rng, model, res, (0, 1), ["x", "h0", "b/i2h_w", "b/gates_t_w", "b/gates_t_b"], "basic_rnn")


def test_memory_optimization_gives_identical_gradients(rng):
    T, N, D, H = 5, 3, 3, 4
    grads = []
    for mo in (False, True):
        workspace.ResetWorkspace()
        model = ModelHelper(name="m%d" % mo)
        res = rnn_cell.LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="mo",
                            outputs_with_grads=(0, 1), memory_optimization=mo)
        run_init(model)
        r = np.random.RandomState(5)
        feed_inputs(r, T, N, D, {k: (1, N, H) for k in ("h0", "c0", "h1", "c1")})
        params = [n for layer in lstm_params("mo", 2) for n in layer]
        randomize_params(r, params)
        gmap = model.net.AddGradientOperators({str(res[0]): "g0", str(res[1]): "g1"})
        workspace.FeedBlob("g0", f32(r, T, N, H))
        workspace.FeedBlob("g1", f32(r, 1, N, H))
        workspace.RunNetOnce(model.net)
        grads.append({b: fetch(gmap[b]) for b in ["x", "h0", "c0", "h1", "c1"] + params})
        if mo:
            op = rnn_ops(model)[0]
            assert args_of(op)["recompute_blobs_on_backward"] == ["mo/layer_0/gates_t", "mo/layer_1/gates_t"]
    for k in grads[0]:
        np.testing.assert_array_equal(grads[0][k], grads[1][k], err_msg=k)


def test_forward_only_lstm_equals_training(rng):
    T, N, D, H = 6, 2, 3, 3
    outs = []
    for fo in (False, True):
        model = ModelHelper(name="f%d" % fo)
        res = rnn_cell.LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="fo%d" % fo,
                            forward_only=fo)
        run_init(model)
        r = np.random.RandomState(3)
        feed_inputs(r, T, N, D, {k: (1, N, H) for k in ("h0", "c0", "h1", "c1")})
        randomize_params(r, [n for layer in lstm_params("fo%d" % fo, 2) for n in layer])
        workspace.RunNetOnce(model.net)
        outs.append([fetch(o) for o in res])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def assert_executor_on_off_bitwise(net, blobs, threads):
    """Runs ``net`` (a copy) with the RNN executor off, then on with
    ``threads`` workers, and asserts that every blob of ``blobs`` is the same
    bit for bit."""
    from recurrent import recurrent as rnn
    from recurrent.proto import make_argument
    results = []
    for enable in (0, 1):
        copy = core.Net(net.Proto())
        for op in copy.Proto().op:
            if op.type.startswith("RecurrentNetwork"):
                op.arg[:] = [a for a in op.arg if a.name != "enable_rnn_executor"]
                op.arg.append(make_argument("enable_rnn_executor", enable))
                rnn.set_rnn_executor_config(op, num_threads=threads)
        workspace.RunNetOnce(copy)
        results.append({b: fetch(b).copy() for b in blobs})
    for b in blobs:
        np.testing.assert_array_equal(results[0][b], results[1][b], err_msg=b)


@pytest.mark.parametrize("threads", [1, 3])
def test_stacked_lstm_executor_on_off_bitwise(rng, threads):
    """The wavefront case: a 3-layer LSTM (one step net) with the RNN
    executor on, with ``threads`` workers, equals the serial run bit for bit,
    outputs and gradients."""
    T, N, D, H = 7, 3, 4, 5
    model = ModelHelper(name="ex")
    res = rnn_cell.LSTM(model, "x", "seq", None, D, [H, H, H], scope="ex", outputs_with_grads=(0, 1, 3))
    run_init(model)
    feed_inputs(rng, T, N, D, {})
    randomize_params(rng, [n for layer in lstm_params("ex", 3) for n in layer])
    gmap = model.AddGradientOperators({str(res[k]): str(res[k]) + "_grad" for k in (0, 1, 3)})
    for k in (0, 1, 3):
        workspace.FeedBlob(str(res[k]) + "_grad", f32(rng, *((T, N, H) if k == 0 else (1, N, H))))
    blobs = [str(r) for r in res] + [str(v) for v in gmap.values()]
    assert_executor_on_off_bitwise(model.net, blobs, threads)


def test_stacked_lstm_changing_T_including_zero(rng):
    N, D, H = 2, 3, 4
    model = ModelHelper(name="tz")
    res = rnn_cell.LSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="tz",
                        outputs_with_grads=(0, 1))
    run_init(model)
    names = lstm_params("tz", 2)
    randomize_params(rng, [n for layer in names for n in layer])
    gmap = model.AddGradientOperators({str(res[0]): "g_all", str(res[1]): "g_last"})
    created = False
    for T in (5, 0, 3):
        x, seq, vals = feed_inputs(rng, max(T, 1), N, D, {k: (1, N, H) for k in ("h0", "c0", "h1", "c1")})
        x = x[:T]
        workspace.FeedBlob("x", x)
        seq = np.full(N, T, np.int32)
        workspace.FeedBlob("seq", seq)
        g_all, g_last = f32(rng, T, N, H), f32(rng, 1, N, H)
        workspace.FeedBlob("g_all", g_all)
        workspace.FeedBlob("g_last", g_last)
        if not created:
            workspace.CreateNet(model.net)
            created = True
        workspace.RunNet(model.net)
        r0 = lstm_layer_ref(x, vals["h0"], vals["c0"], *(fetch(n) for n in names[0]), seq)
        r1 = lstm_layer_ref(r0[0], vals["h1"], vals["c1"], *(fetch(n) for n in names[1]), seq)
        assert fetch(res[0]).shape == (T, N, H)
        np.testing.assert_allclose(fetch(res[0]), r1[0], rtol=1e-4, atol=2e-5)
        np.testing.assert_allclose(fetch(res[1]), r1[1], rtol=1e-4, atol=2e-5)
        assert fetch(gmap["x"]).shape == (T, N, D)
        if T == 0:
            np.testing.assert_array_equal(fetch(res[1]), vals["h1"])
            np.testing.assert_array_equal(fetch(gmap["h1"]), g_last)
            np.testing.assert_array_equal(fetch(gmap["h0"]), np.zeros((1, N, H), np.float32))
            np.testing.assert_array_equal(fetch(gmap["tz/layer_1/gates_t_w"]),
                                          np.zeros((4 * H, H), np.float32))
