"""rnn_cell.LSTMWithAttention / AttentionCell and recurrent.attention (spec
section 6.2): parameter names, outputs against a NumPy reference for the
Regular, Recurrent and Dot attention types (with and without encoder
lengths), gradients against finite differences (encoder outputs included:
every step reads them), memory optimization and the RNN executor on vs off
bit for bit."""

import numpy as np
import pytest

from recurrent import attention, rnn_cell, workspace
from recurrent.model_helper import ModelHelper
from test_rnn_cell import (assert_executor_on_off_bitwise, f32, fd_check, fetch, param_names,
                           randomize_params, report, run_init, sigmoid)

A = attention.AttentionType
TYPES = [A.Regular, A.Recurrent, A.Dot, A.SoftCoverage]


def build(attention_type, T_enc=4, N=3, D_enc=5, D_in=2, H=3, with_lengths=True, scope="att", **kw):
    model = ModelHelper(name="m")
    res = rnn_cell.LSTMWithAttention(
        model, "x", None, "h0", "c0", "ctx0", encoder_output_dim=D_enc, encoder_outputs="enc",
        encoder_lengths="enc_len" if with_lengths else None, decoder_input_dim=D_in, decoder_state_dim=H,
        scope=scope, attention_type=attention_type, **kw)
    run_init(model)
    return model, res


def feed_all(rng, T, T_enc, N, D_enc, D_in, H, lengths=None):
    vals = dict(x=f32(rng, T, N, D_in), h0=f32(rng, 1, N, H), c0=f32(rng, 1, N, H),
                ctx0=f32(rng, 1, N, D_enc),
                enc=f32(rng, T_enc, N, D_enc))
    for k, v in vals.items():
        workspace.FeedBlob(k, v)
    if lengths is not None:
        vals["enc_len"] = np.asarray(lengths, np.int32)
        workspace.FeedBlob("enc_len", vals["enc_len"])
    return vals


def params_of(scope, attention_type, H, D_enc):
    names = [scope + "/decoder/i2h_w", scope + "/decoder/i2h_b", scope + "/decoder/gates_t_w",
             scope + "/decoder/gates_t_b"]
    if attention_type != A.Dot:
        names += [scope + "/weighted_encoder_outputs_w", scope + "/weighted_encoder_outputs_b",
                  scope + "/attention_logits_w", scope + "/attention_logits_b"]
    if attention_type != A.Dot or H != D_enc:
        names += [scope + "/weighted_decoder_hidden_state_w", scope + "/weighted_decoder_hidden_state_b"]
    if attention_type == A.Recurrent:
        names += [scope + "/weighted_prev_attention_context_w", scope + "/weighted_prev_attention_context_b"]
    if attention_type == A.SoftCoverage:
        names += [scope + "/coverage_weights_w", scope + "/coverage_weights_b"]
    return names


def attention_ref(attention_type, vals, p, scope="att"):
    """float64 NumPy: the LSTM decoder, then the attention of its new hidden
    state; returns h_all, c_all, ctx_all, weights (T, N, T_enc) and
    coverage_all (T, N, T_enc; SoftCoverage's state)."""
    g = lambda n: p[scope + "/" + n].astype(np.float64)  # noqa: E731
    x, enc = vals["x"].astype(np.float64), vals["enc"].astype(np.float64)
    T, N, _ = x.shape
    T_enc = enc.shape[0]
    H = vals["h0"].shape[2]
    h, c, ctx = vals["h0"][0].astype(np.float64), vals["c0"][0].astype(np.float64), vals["ctx0"][0]
    ctx = ctx.astype(np.float64)
    lengths = vals.get("enc_len")
    hs, cs, ctxs, ws, covs = [], [], [], [], []
    cov = np.zeros((N, T_enc))
    for t in range(T):
        gates = (x[t] @ g("decoder/i2h_w").T + g("decoder/i2h_b")
                 + np.concatenate([h, ctx], axis=1) @ g("decoder/gates_t_w").T + g("decoder/gates_t_b"))
        i, f, o, gg = (gates[:, k * H:(k + 1) * H] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
        if attention_type == A.Dot:
            q = h @ g("weighted_decoder_hidden_state_w").T + g("weighted_decoder_hidden_state_b") \
                if scope + "/weighted_decoder_hidden_state_w" in p else h
            logits = np.einsum("jnd,nd->nj", enc, q)
        else:
            we = enc @ g("weighted_encoder_outputs_w").T + g("weighted_encoder_outputs_b")
            q = h @ g("weighted_decoder_hidden_state_w").T + g("weighted_decoder_hidden_state_b")
            if attention_type == A.Recurrent:
                q = q + (ctx @ g("weighted_prev_attention_context_w").T
                         + g("weighted_prev_attention_context_b"))
            summed = we + q[None]
            if attention_type == A.SoftCoverage:
                cw = enc @ g("coverage_weights_w").T + g("coverage_weights_b")
                summed = summed + cw * cov.T[:, :, None]
            logits = (np.tanh(summed) @ g("attention_logits_w").T)[:, :, 0].T + g("attention_logits_b")
        if lengths is not None:
            logits = np.where(np.arange(T_enc)[None, :] < lengths[:, None], logits, -np.inf)
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        ctx = np.einsum("nj,jnd->nd", w, enc)
        cov = cov + w
        covs.append(cov)
        hs.append(h)
        cs.append(c)
        ctxs.append(ctx)
        ws.append(w)
    return np.stack(hs), np.stack(cs), np.stack(ctxs), np.stack(ws), np.stack(covs)


def test_names_outputs_and_step_net():
    model, res = build(A.Regular)
    assert len(res) == 6
    # the logits' bias is frozen (freeze_bias): a computed parameter, not among the trained ones
    assert param_names(model) == sorted(set(params_of("att", A.Regular, 3, 5)) - {"att/attention_logits_b"})
    assert "att/attention_logits_b" in [str(p) for p in model.GetComputedParams()]
    op = [o for o in model.net.Proto().op if o.type == "RecurrentNetwork"][0]
    step = [a.n for a in op.arg if a.name == "step_net"][0]
    types = [o.type for o in step.op]
    for t in ("SequenceMask", "Softmax", "BatchMatMul", "LSTMUnit"):
        assert t in types, types
    # the encoder blobs the steps read are references of the op (their gradients are summed over steps)
    ins = set(str(i) for i in op.input)
    assert {"att/encoder_outputs_transposed", "att/weighted_encoder_outputs", "enc_len"} <= ins
    # outputs_with_grads default (0, 4): h_all and context_all
    assert [a.value() for a in op.arg if a.name == "outputs_with_grads"][0] == [0, 4]


@pytest.mark.parametrize("attention_type", TYPES)
@pytest.mark.parametrize("lengths", [None, [4, 2, 1]])
def test_lstm_with_attention_vs_numpy(rng, attention_type, lengths):
    T, T_enc, N, D_enc, D_in, H = 5, 4, 3, 5, 2, 3
    model, res = build(attention_type, T_enc, N, D_enc, D_in, H, with_lengths=lengths is not None)
    vals = feed_all(rng, T, T_enc, N, D_enc, D_in, H, lengths)
    names = params_of("att", attention_type, H, D_enc)
    randomize_params(rng, names, scale=0.8)
    workspace.RunNetOnce(model.net)
    h_all, c_all, ctx_all, _, cov_all = attention_ref(attention_type, vals, {n: fetch(n) for n in names})
    if attention_type == A.SoftCoverage:
        assert len(res) == 8
        np.testing.assert_allclose(fetch(res[6]), cov_all, rtol=1e-4, atol=2e-5)
        np.testing.assert_allclose(fetch(res[7])[0], cov_all[-1], rtol=1e-4, atol=2e-5)
    for got, want, k in ((res[0], h_all, "h"), (res[2], c_all, "c"), (res[4], ctx_all, "ctx")):
        report("attention_%d_%s" % (attention_type, k), fetch(got), want)
        np.testing.assert_allclose(fetch(got), want, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(fetch(res[1])[0], h_all[-1], rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(fetch(res[5])[0], ctx_all[-1], rtol=1e-4, atol=2e-5)


def test_dot_attention_same_dims_has_no_projection(rng):
    T, T_enc, N, D = 3, 4, 2, 3
    model, res = build(A.Dot, T_enc, N, D, 2, D, with_lengths=False)
    assert param_names(model) == sorted(params_of("att", A.Dot, D, D))
    vals = feed_all(rng, T, T_enc, N, D, 2, D)
    names = params_of("att", A.Dot, D, D)
    randomize_params(rng, names)
    workspace.RunNetOnce(model.net)
    ref = attention_ref(A.Dot, vals, {n: fetch(n) for n in names})
    np.testing.assert_allclose(fetch(res[4]), ref[2], rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("attention_type", TYPES)
def test_lstm_with_attention_gradients(rng, attention_type):
    T, T_enc, N, D_enc, D_in, H = 3, 3, 2, 2, 2, 2
    model, res = build(attention_type, T_enc, N, D_enc, D_in, H)
    feed_all(rng, T, T_enc, N, D_enc, D_in, H, [3, 2])
    names = params_of("att", attention_type, H, D_enc)
    randomize_params(rng, names, scale=0.8)
    workspace.RunNetOnce(model.net)
    trained = [n for n in names if n != "att/attention_logits_b"]  # freeze_bias: no gradient, as Caffe2
    fd_check(rng, model, res, (0, 4), ["x", "h0", "c0", "ctx0", "enc"] + trained,
             "attention_%d" % attention_type)


def test_memory_optimization_same_gradients(rng):
    T, T_enc, N, D_enc, D_in, H = 4, 3, 2, 3, 2, 3
    got = []
    for mo in (False, True):
        workspace.ResetWorkspace()
        model, res = build(A.Regular, T_enc, N, D_enc, D_in, H, lstm_memory_optimization=mo,
                           attention_memory_optimization=mo, outputs_with_grads=(0,))
        r = np.random.RandomState(2)
        feed_all(r, T, T_enc, N, D_enc, D_in, H, [3, 1])
        names = params_of("att", A.Regular, H, D_enc)
        randomize_params(r, names)
        op = [o for o in model.net.Proto().op if o.type == "RecurrentNetwork"][0]
        recompute = [a.value() for a in op.arg if a.name == "recompute_blobs_on_backward"][0]
        assert ("att/decoder_hidden_encoder_outputs_sum" in recompute) == mo, recompute
        gmap = model.AddGradientOperators([model.net.SumElements(res[0], "loss")])
        workspace.RunNetOnce(model.net)
        got.append([fetch(gmap[b]).copy() for b in ["enc", "x"] + names[:-4]])
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("T", [0, 1, 2, 7])
@pytest.mark.parametrize("attention_type", [A.Recurrent, A.SoftCoverage])
def test_executor_bitwise(rng, threads, T, attention_type):
    T_enc, N, D_enc, D_in, H = 4, 3, 5, 2, 3
    model, res = build(attention_type, T_enc, N, D_enc, D_in, H)
    feed_all(rng, T, T_enc, N, D_enc, D_in, H, [4, 2, 3])
    randomize_params(rng, params_of("att", attention_type, H, D_enc))
    gmap = model.AddGradientOperators({str(res[k]): str(res[k]) + "_grad" for k in (0, 4)})
    workspace.FeedBlob(str(res[0]) + "_grad", f32(rng, T, N, H))
    workspace.FeedBlob(str(res[4]) + "_grad", f32(rng, T, N, D_enc))
    blobs = [str(r) for r in res] + [str(v) for v in gmap.values()]
    assert_executor_on_off_bitwise(model.net, blobs, threads)


def test_attention_cell_errors():
    with pytest.raises(ValueError, match="unknown attention_type 7"):
        build(7)
