"""rnn_cell.LayerNormLSTM / LayerNormMILSTM (spec section 6.2): parameter
names, outputs against NumPy references, gradients against finite
differences, and the RNN executor on vs off bit for bit."""

import numpy as np
import pytest

from recurrent import rnn_cell, workspace
from recurrent.model_helper import ModelHelper
from test_rnn_cell import (_state0, assert_executor_on_off_bitwise, assert_stack_matches, f32, feed_inputs,
                           fd_check, fetch, param_names, randomize_params, report, run_init, sigmoid)

EPS = 1e-4  # brew.layer_norm's default, which the cells use


def layer_norm_ref(g, scale, bias):
    mu = g.mean(axis=-1, keepdims=True)
    var = ((g - mu) ** 2).mean(axis=-1, keepdims=True)
    return (g - mu) / np.sqrt(var + EPS) * scale + bias


def lstm_cell_step(g, h, c, H, forget_bias=0.0):
    i, f, o, gg = (g[:, k * H:(k + 1) * H] for k in range(4))
    cn = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(gg)
    return sigmoid(o) * np.tanh(cn), cn


def ln_lstm_ref(x, h0, c0, w_i, b_i, w_h, b_h, scale, bias, seq=None, forget_bias=0.0):
    T, N, _ = x.shape
    H = w_h.shape[1]
    h, c = _state0(h0, N, H), _state0(c0, N, H)
    hs, cs = np.zeros((T, N, H)), np.zeros((T, N, H))
    for t in range(T):
        g = x[t] @ w_i.T.astype(np.float64) + b_i + h @ w_h.T.astype(np.float64) + b_h
        hn, cn = lstm_cell_step(layer_norm_ref(g, scale, bias), h, c, H, forget_bias)
        valid = (t < seq).reshape(N, 1) if seq is not None else np.ones((N, 1), bool)
        h, c = np.where(valid, hn, h), np.where(valid, cn, c)
        hs[t], cs[t] = h, c
    return hs, h[None], cs, c[None]


def ln_milstm_ref(x, h0, c0, w_i, b_i, w_h, b_h, alpha, beta1, beta2, b, scale, bias, seq):
    T, N, _ = x.shape
    H = w_h.shape[1]
    h, c = _state0(h0, N, H), _state0(c0, N, H)
    hs = np.zeros((T, N, H))
    for t in range(T):
        xi = x[t] @ w_i.T.astype(np.float64) + b_i
        p = h @ w_h.T + b_h
        g = alpha * xi * p + beta1 * p + beta2 * xi + b
        hn, cn = lstm_cell_step(layer_norm_ref(g, scale, bias), h, c, H)
        valid = (t < seq).reshape(N, 1)
        h, c = np.where(valid, hn, h), np.where(valid, cn, c)
        hs[t] = h
    return hs


def ln_lstm_params(scope, num_layers):
    """(i2h_w, i2h_b, gates_t_w, gates_t_b, gates_t_norm_scale, gates_t_norm_bias) per layer."""
    out = []
    for l in range(num_layers):
        rp = scope + "/" if num_layers == 1 else "%s/layer_%d/" % (scope, l)
        ip = scope + "/" if l == 0 else rp
        out.append((ip + "i2h_w", ip + "i2h_b", rp + "gates_t_w", rp + "gates_t_b",
                    rp + "gates_t_norm_scale", rp + "gates_t_norm_bias"))
    return out


def test_layer_norm_lstm_names_and_step_net():
    model = ModelHelper(name="m")
    rnn_cell.LayerNormLSTM(model, "x", "seq", ["h0", "c0"], 3, 4, scope="ln")
    assert param_names(model) == sorted(ln_lstm_params("ln", 1)[0])
    run_init(model)
    np.testing.assert_array_equal(fetch("ln/gates_t_norm_scale"), np.ones(16, np.float32))
    np.testing.assert_array_equal(fetch("ln/gates_t_norm_bias"), np.zeros(16, np.float32))
    op = [o for o in model.net.Proto().op if o.type == "RecurrentNetwork"][0]
    step = [a.n for a in op.arg if a.name == "step_net"][0]
    types = [o.type for o in step.op]
    # the gates are normalized between the FC + Sum and LSTMUnit
    assert types.index("LayerNorm") < types.index("LSTMUnit")
    ln = [o for o in step.op if o.type == "LayerNorm"][0]
    assert str(ln.input[0]) == "ln/gates_t" and {a.name: a.value() for a in ln.arg}["axis"] == -1
    unit = [o for o in step.op if o.type == "LSTMUnit"][0]
    assert str(unit.input[2]) == "ln/gates_t_norm_biased"


@pytest.mark.parametrize("dims", [[3], [3, 4]])
@pytest.mark.parametrize("with_seq", [True, False])
def test_layer_norm_lstm_vs_numpy(rng, dims, with_seq):
    T, N, D = 5, 3, 4
    L = len(dims)
    model = ModelHelper(name="m")
    init_names = [n for l in range(L) for n in ("h%d" % l, "c%d" % l)]
    res = rnn_cell.LayerNormLSTM(model, "x", "seq" if with_seq else None, init_names, D,
                                 dims if L > 1 else dims[0], scope="ln", forget_bias=0.5,
                                 return_last_layer_only=False)
    run_init(model)
    shapes = {n: (1, N, dims[int(n[1:])]) for n in init_names}
    x, seq, vals = feed_inputs(rng, T, N, D, shapes, with_seq)
    names = ln_lstm_params("ln", L)
    randomize_params(rng, [n for layer in names for n in layer], scale=0.8)
    workspace.RunNetOnce(model.net)
    assert_stack_matches(res, x, L, lambda l, inp: ln_lstm_ref(
        inp, vals["h%d" % l], vals["c%d" % l], *(fetch(n) for n in names[l]), seq=seq, forget_bias=0.5),
        "ln_lstm", atol=3e-5)


def test_layer_norm_milstm_vs_numpy(rng):
    T, N, D, H = 4, 3, 3, 2
    model = ModelHelper(name="m")
    res = rnn_cell.LayerNormMILSTM(model, "x", "seq", ["h0", "c0"], D, H, scope="mi")
    run_init(model)
    names = ["mi/i2h_w", "mi/i2h_b", "mi/prev_t_w", "mi/prev_t_b", "mi/alpha", "mi/beta1", "mi/beta2", "mi/b",
             "mi/gates_t_norm_scale", "mi/gates_t_norm_bias"]
    assert sorted(names) == param_names(model)
    x, seq, vals = feed_inputs(rng, T, N, D, {"h0": (1, N, H), "c0": (1, N, H)})
    randomize_params(rng, names)
    workspace.RunNetOnce(model.net)
    ref = ln_milstm_ref(x, vals["h0"], vals["c0"], *(fetch(n) for n in names), seq)
    report("ln_milstm_out", fetch(res[0]), ref)
    np.testing.assert_allclose(fetch(res[0]), ref, rtol=1e-4, atol=3e-5)


def test_layer_norm_lstm_gradients(rng):
    T, N, D, H = 3, 2, 2, 2
    model = ModelHelper(name="m")
    res = rnn_cell.LayerNormLSTM(model, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="g",
                                 outputs_with_grads=(0, 3))
    run_init(model)
    feed_inputs(rng, T, N, D, {"h0": (1, N, H), "c0": (N, H), "h1": (H,), "c1": (1, N, H)})
    params = [n for layer in ln_lstm_params("g", 2) for n in layer]
    randomize_params(rng, params, scale=0.8)
    workspace.RunNetOnce(model.net)
    fd_check(rng, model, res, (0, 3), ["x", "h0", "c0", "h1", "c1"] + params, "ln_lstm2")


def test_layer_norm_milstm_gradients(rng):
    T, N, D, H = 3, 2, 2, 2
    model = ModelHelper(name="m")
    res = rnn_cell.LayerNormMILSTM(model, "x", "seq", ["h0", "c0"], D, H, scope="gm")
    run_init(model)
    feed_inputs(rng, T, N, D, {"h0": (1, N, H), "c0": (1, N, H)})
    params = sorted(str(p) for p in model.params)
    randomize_params(rng, params, scale=0.8)
    workspace.RunNetOnce(model.net)
    fd_check(rng, model, res, (0,), ["x", "h0", "c0"] + params, "ln_milstm")


def test_layer_norm_lstm_memory_optimization_same_gradients(rng):
    T, N, D, H = 4, 2, 3, 3
    got = []
    for mo in (False, True):
        workspace.ResetWorkspace()
        model = ModelHelper(name="mo")
        res = rnn_cell.LayerNormLSTM(model, "x", None, ["h0", "c0"], D, H, scope="mo", memory_optimization=mo)
        run_init(model)
        r = np.random.RandomState(5)
        feed_inputs(r, T, N, D, {"h0": (1, N, H), "c0": (1, N, H)}, seq=False)
        randomize_params(r, ln_lstm_params("mo", 1)[0])
        gmap = model.AddGradientOperators([model.net.SumElements(res[0], "loss")])
        workspace.RunNetOnce(model.net)
        got.append([fetch(gmap[b]).copy() for b in ("x", "mo/gates_t_w", "mo/gates_t_norm_scale")])
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("T", [0, 1, 2, 7])
def test_layer_norm_lstm_executor_bitwise(rng, threads, T):
    N, D, H = 3, 4, 5
    model = ModelHelper(name="ex")
    res = rnn_cell.LayerNormLSTM(model, "x", "seq", None, D, [H, H, H], scope="ex",
                                 outputs_with_grads=(0, 1, 3))
    run_init(model)
    x = f32(rng, T, N, D)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("seq", np.full(N, T, np.int32))
    randomize_params(rng, [n for layer in ln_lstm_params("ex", 3) for n in layer])
    gmap = model.AddGradientOperators({str(res[k]): str(res[k]) + "_grad" for k in (0, 1, 3)})
    for k in (0, 1, 3):
        workspace.FeedBlob(str(res[k]) + "_grad", f32(rng, *((T, N, H) if k == 0 else (1, N, H))))
    blobs = [str(r) for r in res] + [str(v) for v in gmap.values()]
    assert_executor_on_off_bitwise(model.net, blobs, threads)
