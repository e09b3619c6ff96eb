"""recurrent.models.seq2seq (Caffe2's caffe2.python.models.seq2seq library
modules): Seq2SeqModelHelper, the vocabulary helpers, the parameter and blob
names of the builders (Caffe2's), the encoder against a float64 NumPy LSTM,
whole models built as Caffe2's train.py builds them (finite-difference
gradients, executor on/off bitwise), and train.py's norm-clipped SGD update
on a toy task.

Max abs differences are printed as ``MAXDIFF <what> <value>`` (pytest -s)."""

import math

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.models.seq2seq import seq2seq_util
from recurrent.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper
from test_rnn_cell import assert_executor_on_off_bitwise, fetch, lstm_layer_ref, report

BIDI = [False, True]

INPUT_NAMES = ["encoder_inputs", "encoder_lengths", "decoder_inputs", "decoder_lengths", "targets",
               "target_weights"]


# ---------------------------------------------------------------- Seq2SeqModelHelper
def test_model_helper_constructor_and_add_param():
    m = Seq2SeqModelHelper(name="TestModel")
    assert m.name == "TestModel" and m.init_params is True
    assert m.arg_scope == {"use_cudnn": True, "cudnn_exhaustive_search": False, "order": "NHWC"}
    m2 = Seq2SeqModelHelper(use_cudnn=False, ws_nbytes_limit=64)
    assert m2.arg_scope == {"use_cudnn": False, "cudnn_exhaustive_search": False, "order": "NHWC",
                            "ws_nbytes_limit": 64}

    lr = m.AddParam("learning_rate", init_value=0.5, trainable=False)
    step = m.AddParam("global_step", init_value=0, trainable=False)
    w = m.AddParam("w", init=("ConstantFill", {"shape": [2, 3], "value": 1.5}))
    assert (str(lr), str(step), str(w)) == ("learning_rate", "global_step", "w")
    assert m.params == [w] and m.non_trainable_params == [lr, step]
    workspace.RunNetOnce(m.param_init_net)
    assert fetch(lr).dtype == np.float32 and fetch(lr).tolist() == [0.5]
    assert fetch(step).dtype == np.int32 and fetch(step).tolist() == [0]
    np.testing.assert_array_equal(fetch(w), np.full((2, 3), 1.5, np.float32))

    with pytest.raises(ValueError, match="AddParam\\('s'\\): string values"):
        m.AddParam("s", init_value="x")
    with pytest.raises(ValueError, match="not both"):
        m.AddParam("b", init=("ConstantFill", {"shape": [1]}), init_value=1.0)
    with pytest.raises(ValueError, match="init or init_value is required"):
        m.AddParam("c")


def test_model_helper_scopes_and_get_all_params():
    m = Seq2SeqModelHelper()
    p1 = m.AddParam("test_param1", init_value=1, trainable=True)
    p2 = m.AddParam("test_param2", init_value=2, trainable=False)
    assert m.GetNonTrainableParams() == [p2]
    assert m.GetAllParams() == [p1, p2]
    with core.NameScope("A", reset=True):
        p3 = m.AddParam("test_param3", init_value=3, trainable=False)
        assert str(p3) == "A/test_param3"
        assert m.GetNonTrainableParams() == [p3]
        assert m.GetAllParams() == [p3]
    with core.NameScope("A"), core.NameScope("B"):
        p4 = m.AddParam("test_param4", init_value=4.0, trainable=False)
    assert m.GetNonTrainableParams() == [p2, p3, p4]
    # exactly that scope (Caffe2), unlike GetParams' prefix match
    assert m.GetNonTrainableParams("A") == [p3]
    assert m.GetNonTrainableParams("A/B") == [p4]
    assert m.GetAllParams("A/B/") == [p4]
    assert m.GetParams(top_scope=True) == [p1]


def test_model_helper_without_init_params():
    m = Seq2SeqModelHelper(init_params=False)
    lr = m.AddParam("learning_rate", init_value=0.1, trainable=False)
    assert str(lr) == "learning_rate"
    assert not m.param_init_net.Proto().op
    assert "learning_rate" in [str(b) for b in m.net.Proto().external_input]


# ---------------------------------------------------------------- vocabulary
def test_gen_vocab_and_numberize(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("b a b c\n  a b d \nb\n")
    vocab = seq2seq_util.gen_vocab(str(corpus), 1)
    # specials first, then tokens seen more than once in order of first appearance
    assert dict(vocab) == {"<PAD>": 0, "<GO>": 1, "<EOS>": 2, "<UNK>": 3, "b": 4, "a": 5}
    assert (seq2seq_util.PAD_ID, seq2seq_util.GO_ID, seq2seq_util.EOS_ID, seq2seq_util.UNK_ID) == (0, 1, 2, 3)
    assert seq2seq_util.get_numberized_sentence(" a c b zz\n", vocab) == [5, 3, 4, 3]
    assert len(vocab) == 6  # numberizing adds nothing
    assert len(seq2seq_util.gen_vocab(str(corpus), 0)) == 8


# ---------------------------------------------------------------- building models as train.py does
def model_params(attention="regular", encoder_units=(4,), decoder_units=(4,), bidirectional=False,
                 softmax_size=None, batch_size=2, max_gradient_norm=1.0, learning_rate=0.5,
                 encoder_embedding_size=3, decoder_embedding_size=3):
    return dict(
        attention=attention,
        decoder_layer_configs=[dict(num_units=u) for u in decoder_units],
        encoder_type=dict(encoder_layer_configs=[dict(num_units=u) for u in encoder_units],
                          use_bidirectional_encoder=bidirectional),
        batch_size=batch_size,
        optimizer_params=dict(learning_rate=learning_rate),
        encoder_embedding_size=encoder_embedding_size,
        decoder_embedding_size=decoder_embedding_size,
        decoder_softmax_size=softmax_size,
        max_gradient_norm=max_gradient_norm,
    )


def add_embeddings(model, params, source_vocab_size, target_vocab_size):
    """train.py's _build_embeddings: two UniformFill(+-sqrt 3) parameter tables."""
    r = math.sqrt(3)
    tables = []
    for name, vocab, size in (("encoder_embeddings", source_vocab_size, params["encoder_embedding_size"]),
                              ("decoder_embeddings", target_vocab_size, params["decoder_embedding_size"])):
        t = model.param_init_net.UniformFill([], name, shape=[vocab, size], min=-r, max=r)
        model.params.append(t)
        tables.append(t)
    return tables


def build_loss(model, params, source_vocab_size, target_vocab_size, scope=None):
    """train.py's model_build_fun (CPU path): returns [total_loss_scalar_weighted]."""
    enc_emb, dec_emb = add_embeddings(model, params, source_vocab_size, target_vocab_size)
    inputs = [model.net.AddExternalInput(workspace.GetNameScope() + n) for n in INPUT_NAMES]
    enc_in, enc_len, dec_in, dec_len, targets, weights = inputs
    attention = params["attention"]
    (enc_out, weighted_enc_out, final_h, final_c, enc_units) = seq2seq_util.build_embedding_encoder(
        model=model, encoder_params=params["encoder_type"],
        num_decoder_layers=len(params["decoder_layer_configs"]), inputs=enc_in, input_lengths=enc_len,
        vocab_size=source_vocab_size, embeddings=enc_emb, embedding_size=params["encoder_embedding_size"],
        use_attention=(attention != "none"), num_gpus=0, scope=scope)
    dec_out, dec_out_size = seq2seq_util.build_embedding_decoder(
        model, decoder_layer_configs=params["decoder_layer_configs"], inputs=dec_in, input_lengths=dec_len,
        encoder_lengths=enc_len, encoder_outputs=enc_out, weighted_encoder_outputs=weighted_enc_out,
        final_encoder_hidden_states=final_h, final_encoder_cell_states=final_c,
        encoder_units_per_layer=enc_units, vocab_size=target_vocab_size, embeddings=dec_emb,
        embedding_size=params["decoder_embedding_size"], attention_type=attention, forward_only=False,
        num_gpus=0, scope=scope)
    logits = seq2seq_util.output_projection(
        model=model, decoder_outputs=dec_out, decoder_output_size=dec_out_size,
        target_vocab_size=target_vocab_size, decoder_softmax_size=params["decoder_softmax_size"])
    targets, _ = model.net.Reshape([targets], ["targets", "targets_old_shape"], shape=[-1])
    weights, _ = model.net.Reshape([weights], ["target_weights", "target_weights_old_shape"], shape=[-1])
    _, loss_per_word = model.net.SoftmaxWithLoss([logits, targets, weights],
                                                 ["OutputProbs_INVALID", "loss_per_word"], only_loss=True)
    num_words = model.net.SumElements([weights], "num_words")
    total = model.net.Mul([loss_per_word, num_words], "total_loss_scalar")
    return [model.net.Scale([total], "total_loss_scalar_weighted", scale=1.0 / params["batch_size"])]


def prepare_batch(batch):
    """train.py's prepare_batch: [(source ids, target ids)] -> the six input arrays (time-major)."""
    pad, go, eos = seq2seq_util.PAD_ID, seq2seq_util.GO_ID, seq2seq_util.EOS_ID
    t_enc = max(len(s) for s, _ in batch)
    t_dec = max(len(t) for _, t in batch)
    enc, dec, tgt, wts = [], [], [], []
    for s, t in batch:
        enc.append(list(reversed(s)) + [pad] * (t_enc - len(s)))
        dec.append([go] + t + [pad] * (t_dec - len(t)))
        row = t + [eos] + [pad] * (t_dec - len(t))
        tgt.append(row)
        wts.append([0 if not (s or t) else int(x != pad) for x in row])
    return dict(
        encoder_inputs=np.array(enc, np.int32).T.copy(),
        encoder_lengths=np.array([len(s) for s, _ in batch], np.int32),
        decoder_inputs=np.array(dec, np.int32).T.copy(),
        decoder_lengths=np.array([len(t) + 1 for _, t in batch], np.int32),
        targets=np.array(tgt, np.int32).T.copy(),
        target_weights=np.array(wts, np.float32).T.copy(),
    )


def feed(arrays):
    for name, value in arrays.items():
        workspace.FeedBlob(name, value)


def random_batch(rng, n, vocab_lo, vocab_hi, min_len=1, max_len=4):
    out = []
    for _ in range(n):
        s = rng.randint(vocab_lo, vocab_hi, rng.randint(min_len, max_len + 1)).tolist()
        t = rng.randint(vocab_lo, vocab_hi, rng.randint(min_len, max_len + 1)).tolist()
        out.append((s, t))
    return out


# ---------------------------------------------------------------- names (Caffe2's)
def lstm_names(prefix):
    return [prefix + "/i2h_w", prefix + "/i2h_b", prefix + "/gates_t_w", prefix + "/gates_t_b"]


def built(params, scope=None, src=9, tgt=8):
    model = Seq2SeqModelHelper()
    build_loss(model, params, src, tgt, scope=scope)
    params_ = sorted(str(p) for p in model.params)
    outs = {str(o) for op in model.net.Proto().op for o in op.output}
    init_outs = {str(o) for op in model.param_init_net.Proto().op for o in op.output}
    return model, params_, outs, init_outs


def test_names_attention_two_encoder_layers():
    """Caffe2: encoder layers scoped encoder/layer<i>/lstm; the decoder's
    initial states are the encoder's last-layer final states (same size, no
    FC); attention adds the trainable initial context."""
    _, params, outs, init_outs = built(model_params("regular", encoder_units=(4, 4), decoder_units=(4,)))
    expected = (["encoder_embeddings", "decoder_embeddings"]
                + lstm_names("encoder/layer0/lstm") + lstm_names("encoder/layer1/lstm")
                + ["initial_attention_weighted_encoder_context",
                   "decoder/i2h_w", "decoder/i2h_b", "decoder/layer_0/gates_t_w", "decoder/layer_0/gates_t_b",
                   "attention_decoder/weighted_encoder_outputs_w",
                   "attention_decoder/weighted_encoder_outputs_b",
                   "attention_decoder/weighted_decoder_hidden_state_w",
                   "attention_decoder/weighted_decoder_hidden_state_b",
                   "attention_decoder/attention_logits_w",
                   "output_projection_w", "output_projection_b"])
    assert params == sorted(expected)
    for b in ["embedded_encoder_inputs", "embedded_decoder_inputs", "decoder_outputs_flattened",
              "decoder_outputs_and_contexts_combination_old_shape", "output_logits", "loss_per_word",
              "total_loss_scalar", "total_loss_scalar_weighted", "num_words"]:
        assert b in outs, b
    for b in ["encoder/layer0/initial_cell_state", "encoder/layer0/initial_hidden_state",
              "encoder/layer1/initial_cell_state", "encoder/layer1/initial_hidden_state"]:
        assert b in init_outs, b
    assert not any(n.startswith("decoder_initial_") for n in outs | init_outs)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_names_no_attention_fc_initial_states(bidirectional):
    """Decoder layers whose size differs from the encoder layer they start
    from get FC initial states decoder_initial_{hidden,cell}_state_<i>; the
    bidirectional first layer is encoder/layer0/{fw,bw} plus the
    ReversePackedSegs / Concat blobs; decoder_softmax_size adds
    decoder_outputs_scaled."""
    model, params, outs, init_outs = built(model_params("none", encoder_units=(4, 6), decoder_units=(6, 3),
                                                        bidirectional=bidirectional, softmax_size=7))
    first = (lstm_names("encoder/layer0/fw/lstm") + lstm_names("encoder/layer0/bw/lstm") if bidirectional
             else lstm_names("encoder/layer0/lstm"))
    # layer 0's output is 8 wide bidirectional, 4 otherwise: 6 units either way needs an FC
    initial = ["decoder_initial_%s_state_%d_%s" % (k, i, wb) for k in ("hidden", "cell") for i in (0, 1)
               for wb in ("w", "b")]
    expected = (["encoder_embeddings", "decoder_embeddings"] + first + lstm_names("encoder/layer1/lstm")
                + initial + ["decoder/i2h_w", "decoder/i2h_b", "decoder/layer_0/gates_t_w",
                             "decoder/layer_0/gates_t_b"] + lstm_names("decoder/layer_1")
                + ["decoder_outputs_scaled_w", "decoder_outputs_scaled_b",
                   "output_projection_w", "output_projection_b"])
    assert params == sorted(expected)
    assert {"decoder_initial_hidden_state_0", "decoder_initial_cell_state_1", "decoder_outputs_scaled",
            "output_logits"} <= outs
    bidi_blobs = {"encoder/layer0/reversed_inputs", "encoder/layer0/outputs_bw", "encoder/layer0/outputs",
                  "encoder/layer0/final_hidden_state", "encoder/layer0/final_cell_state"}
    assert (bidi_blobs <= outs) == bidirectional and (bool(bidi_blobs & outs) == bidirectional)
    rev = [op for op in _ops(model) if op.type == "ReversePackedSegs"]
    if bidirectional:
        assert {"encoder/layer0/fw/initial_hidden_state", "encoder/layer0/bw/initial_cell_state"} <= init_outs
        # the inputs, then the backward layer's outputs, reversed within the lengths
        assert [list(op.input) for op in rev] == [["embedded_encoder_inputs", "encoder_lengths"],
                                                  [rev[1].input[0], "encoder_lengths"]]
        assert rev[1].input[0].startswith("encoder/layer0/bw/lstm/")
    else:
        assert not rev


def _ops(model):
    return list(model.net.Proto().op)


def test_names_more_decoder_layers_than_encoder_layers():
    """Decoder layers past the encoder's get zero initial states that are
    parameters (Caffe2 appends them to model.params)."""
    _, params, _, init_outs = built(model_params("dot", encoder_units=(4,), decoder_units=(4, 4)))
    assert {"decoder_initial_hidden_state_1", "decoder_initial_cell_state_1",
            "initial_attention_weighted_encoder_context"} <= set(params)
    assert "decoder_initial_hidden_state_0" not in params
    assert {"decoder_initial_hidden_state_1", "decoder_initial_cell_state_1"} <= init_outs
    # dot attention with equal sizes: no projection parameters
    assert not [p for p in params if p.startswith("attention_decoder/")]


def _outputs_with_grads(model):
    """outputs_with_grads of each RecurrentNetwork op, in net order."""
    return [[a.value() for a in op.arg if a.name == "outputs_with_grads"][0]
            for op in _ops(model) if op.type == "RecurrentNetwork"]


def test_names_more_encoder_layers_than_decoder_layers():
    """With 2 encoder and 1 decoder layer, the decoder starts from encoder
    layer 1's final states (6 units: no FC), and only that layer's final
    states get gradients: layer 0 returns its sequence ([0]), layer 1 its
    final states ([1, 3]; no attention, so not its sequence)."""
    model, params, outs, _ = built(model_params("none", encoder_units=(4, 6), decoder_units=(6,)))
    assert not [p for p in params if p.startswith("decoder_initial_")]
    assert not [b for b in outs if b.startswith("decoder_initial_")]
    assert [list(w) for w in _outputs_with_grads(model)] == [[0], [1, 3], [0]]
    rnn = [op for op in _ops(model) if op.type == "RecurrentNetwork"]
    assert "encoder/layer1/lstm/hidden_state_last" in list(rnn[1].output)
    assert "encoder/layer1/lstm/hidden_state_last" in list(rnn[2].input)
    model, _, _, _ = built(model_params("regular", encoder_units=(4, 6), decoder_units=(5,)))
    # attention: the last layer's sequence too; the decoder's sequence and context get gradients
    assert [list(w) for w in _outputs_with_grads(model)] == [[0], [0, 1, 3], [0, 4]]


def test_names_under_a_scope():
    """With scope='s2s': the encoder layers, the embedded inputs and the
    decoder cells are scoped; the initial states and the output projection
    are not (as in Caffe2)."""
    _, params, outs, _ = built(model_params("regular", encoder_units=(4,), decoder_units=(5,)), scope="s2s")
    assert "s2s/encoder/layer0/lstm/i2h_w" in params
    assert "s2s/decoder/layer_0/gates_t_w" in params and "s2s/decoder/i2h_w" in params
    assert "s2s/attention_decoder/weighted_encoder_outputs_w" in params
    assert {"decoder_initial_hidden_state_0_w", "output_projection_w"} <= set(params)
    assert {"s2s/embedded_encoder_inputs", "s2s/embedded_decoder_inputs"} <= outs


def test_gpu_and_unknown_attention_errors():
    model = Seq2SeqModelHelper()
    params = model_params()
    with pytest.raises(ValueError, match="build_embedding_encoder: num_gpus=1.*CPU-only"):
        seq2seq_util.build_embedding_encoder(
            model, params["encoder_type"], 1, "ei", "el", 9, "emb", 3, True, num_gpus=1)
    with pytest.raises(ValueError, match="build_embedding_decoder: num_gpus=2.*CPU-only"):
        seq2seq_util.build_embedding_decoder(
            model, params["decoder_layer_configs"], "di", "dl", "el", "eo", None, [None], [None], [4], 8,
            "emb", 3, "regular", False, num_gpus=2)
    with pytest.raises(ValueError, match="unknown attention type 'soft_coverage'"):
        built(model_params("soft_coverage"))


def test_dropout_keep_prob_in_configs():
    """Encoder and decoder layer configs may carry dropout_keep_prob (Caffe2's
    decoder raised AttributeError on it): Dropout ops scoped
    encoder/layer0/dropout and decoder_dropout/layer0."""
    params = model_params("regular")
    params["encoder_type"]["encoder_layer_configs"][0]["dropout_keep_prob"] = 0.8
    params["decoder_layer_configs"][0]["dropout_keep_prob"] = 0.7
    model, _, _, _ = built(params)
    drop = [op for op in _ops(model) if op.type == "Dropout"]
    ratios = sorted(round(a.value(), 6) for op in drop for a in op.arg if a.name == "ratio")
    assert ratios == [0.2, 0.3] or ratios == [0.2, 0.3, 0.3], ratios
    assert any(str(o).startswith("encoder/layer0/dropout/") for op in drop for o in op.output)


# ---------------------------------------------------------------- the encoder against NumPy
def reverse_within(x, lengths):
    """Each sequence (axis 1) reversed over its first lengths[n] steps; the rest kept."""
    y = x.copy()
    for n, L in enumerate(lengths):
        y[:L, n] = x[:L, n][::-1]
    return y


def lstm_ref(x, prefix, lengths):
    g = lambda n: fetch(prefix + "/" + n).astype(np.float64)  # noqa: E731
    H = g("gates_t_w").shape[1]
    zeros = np.zeros(H)
    return lstm_layer_ref(x, zeros, zeros, g("i2h_w"), g("i2h_b"), g("gates_t_w"), g("gates_t_b"),
                          seq=np.asarray(lengths))


@pytest.mark.parametrize("bidirectional", BIDI)
@pytest.mark.parametrize("two_layers", [False, True])
def test_encoder_vs_numpy(rng, bidirectional, two_layers):
    T, N, V, E, H = 5, 3, 7, 3, 4
    lengths = [5, 2, 3]
    model = Seq2SeqModelHelper()
    emb = seq2seq_util.build_embeddings(model, V, E, "emb", freeze_embeddings=False)
    units = (H, H + 1) if two_layers else (H,)
    enc = seq2seq_util.build_embedding_encoder(
        model, dict(encoder_layer_configs=[dict(num_units=u) for u in units],
                    use_bidirectional_encoder=bidirectional),
        len(units), "ids", "lengths", V, emb, E, use_attention=True)
    outputs, weighted, final_h, final_c, units_per_layer = enc
    assert weighted is None
    assert units_per_layer == [2 * H if bidirectional else H] + ([H + 1] if two_layers else [])
    workspace.RunNetOnce(model.param_init_net)
    for p in model.params:
        if p != emb:
            workspace.FeedBlob(str(p), rng.uniform(-0.6, 0.6, fetch(p).shape).astype(np.float32))
    ids = rng.randint(0, V, (T, N)).astype(np.int32)
    workspace.FeedBlob("ids", ids)
    workspace.FeedBlob("lengths", np.array(lengths, np.int32))
    workspace.RunNetOnce(model.net)

    x = fetch(emb).astype(np.float64)[ids]
    if bidirectional:
        fw = lstm_ref(x, "encoder/layer0/fw/lstm", lengths)
        bw = lstm_ref(reverse_within(x, lengths), "encoder/layer0/bw/lstm", lengths)
        layer = (np.concatenate([fw[0], reverse_within(bw[0], lengths)], axis=2),
                 np.concatenate([fw[1], bw[1]], axis=2), None, np.concatenate([fw[3], bw[3]], axis=2))
    else:
        layer = lstm_ref(x, "encoder/layer0/lstm", lengths)
    refs = [layer]
    if two_layers:
        refs.append(lstm_ref(layer[0], "encoder/layer1/lstm", lengths))
    for i, r in enumerate(refs):
        report("encoder_final_h_%d" % i, fetch(final_h[i]), r[1])
        np.testing.assert_allclose(fetch(final_h[i]), r[1], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(fetch(final_c[i]), r[3], rtol=1e-5, atol=1e-5)
    report("encoder_outputs", fetch(outputs), refs[-1][0])
    np.testing.assert_allclose(fetch(outputs), refs[-1][0], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- whole models: gradients, executor
def dense_grad(model, param):
    """The gradient of ``param`` as a dense array (a GradientSlice is scattered)."""
    g = model.param_to_grad[param]
    if isinstance(g, core.GradientSlice):
        out = np.zeros(fetch(param).shape, np.float64)
        np.add.at(out, fetch(g.indices).reshape(-1), fetch(g.values).reshape(-1, out.shape[1]))
        return out
    return fetch(g).astype(np.float64)


def make_model(params, src=9, tgt=8):
    model = Seq2SeqModelHelper()
    loss = build_loss(model, params, src, tgt)
    forward = model.net.Clone("forward")
    model.AddGradientOperators(loss)
    return model, forward, loss[0]


CONFIGS = [
    ("none", (4,), (4,)),
    ("regular", (4,), (4,)),
    ("dot", (4,), (4,)),
    ("none", (4, 3), (3, 5)),
    ("regular", (3, 4), (4, 2)),
    ("dot", (4,), (5, 3)),
    ("recurrent", (4,), (4,)),
    ("regular", (4, 3, 5), (5,)),
]


@pytest.mark.parametrize("bidirectional", BIDI)
@pytest.mark.parametrize("attention,enc_units,dec_units", CONFIGS)
def test_model_gradients_finite_differences(attention, enc_units, dec_units, bidirectional):
    """train.py's loss (total_loss_scalar_weighted): the analytic gradient of
    each parameter against central differences on 3 coordinates (float64
    loss sums, float32 nets)."""
    rng = np.random.RandomState(7)
    params = model_params(attention, enc_units, dec_units, bidirectional, batch_size=3,
                          softmax_size=3 if attention == "dot" else None)
    model, forward, loss = make_model(params)
    workspace.RunNetOnce(model.param_init_net)
    batch = prepare_batch(random_batch(rng, 3, 4, 8))
    feed(batch)
    workspace.RunNetOnce(model.net)
    assert np.isfinite(fetch(loss)).all()
    step, checked = 2e-3, 0
    for p in model.GetParams():
        if p not in model.param_to_grad:
            continue
        grad = dense_grad(model, p)
        x0 = fetch(p).copy()
        nz = np.flatnonzero(grad)
        pool = nz if nz.size else np.arange(x0.size)
        coords = rng.choice(pool, min(3, pool.size), replace=False)
        est = []
        for i in coords:
            vals = []
            for sign in (1, -1):
                x = x0.copy().reshape(-1)
                x[i] += sign * step
                workspace.FeedBlob(str(p), x.reshape(x0.shape))
                workspace.RunNetOnce(forward)
                vals.append(float(fetch(loss).astype(np.float64).sum()))
            est.append((vals[0] - vals[1]) / (2 * step))
        workspace.FeedBlob(str(p), x0)
        got = grad.reshape(-1)[coords]
        report("s2s_%s_%s" % (attention, p), got, est)
        np.testing.assert_allclose(got, est, rtol=3e-2, atol=2e-3, err_msg=str(p))
        checked += 1
    assert checked == len(model.GetParams())  # every parameter has a gradient


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("bidirectional", BIDI)
@pytest.mark.parametrize("attention,enc_units,dec_units",
                         [("none", (4, 3), (3, 5)), ("regular", (3, 4), (4, 2)), ("dot", (4,), (4,))])
def test_model_executor_on_off_bitwise(attention, enc_units, dec_units, bidirectional, threads):
    rng = np.random.RandomState(3)
    model, _, loss = make_model(model_params(attention, enc_units, dec_units, bidirectional, batch_size=4))
    workspace.RunNetOnce(model.param_init_net)
    feed(prepare_batch(random_batch(rng, 4, 4, 8, max_len=6)))
    grads = []
    for g in model.param_to_grad.values():
        grads += [str(g.indices), str(g.values)] if isinstance(g, core.GradientSlice) else [str(g)]
    assert_executor_on_off_bitwise(model.net, [str(loss), "output_logits"] + grads, threads)


# ---------------------------------------------------------------- training with train.py's update
def _norm_ratio(model, params, scope, max_norm):
    """train.py's _calc_norm_ratio: clip_norm / max(global gradient norm, clip_norm)."""
    with core.NameScope(scope):
        sums = []
        for i, p in enumerate(params):
            g = model.param_to_grad[p]
            g = g.values if isinstance(g, core.GradientSlice) else g
            sq = model.net.Sqr([g], "grad_{}_squared".format(i))
            sums.append(model.net.SumElements(sq, "grad_{}_squared_sum".format(i)))
        full = model.net.Sum(sums, "grad_squared_full_sum")
        norm = model.net.Pow(full, "global_norm", exponent=0.5)
        clip = model.param_init_net.ConstantFill([], "clip_norm", shape=[], value=float(max_norm))
        biggest = model.net.Max([norm, clip], "max_norm")
        return model.net.Div([clip, biggest], "norm_ratio")


def _apply_ratio(model, ratio, params, lr, scope, one):
    """train.py's _apply_norm_ratio: param += -lr * ratio * grad (ScatterWeightedSum for slices)."""
    for p in params:
        g = model.param_to_grad[p]
        nlr = model.net.Negative([lr], "negative_learning_rate")
        with core.NameScope(scope):
            coeff = model.net.Mul([nlr, ratio], "update_coeff", broadcast=1)
        if isinstance(g, core.GradientSlice):
            model.net.ScatterWeightedSum([p, one, g.indices, g.values, coeff], p)
        else:
            model.net.WeightedSum([p, one, g, coeff], p)


def add_clipped_updates(model, lr, max_norm):
    """train.py's norm_clipped_grad_update then norm_clipped_sparse_grad_update."""
    for sparse, scope in ((False, "norm_clipped_grad_update"), (True, "norm_clipped_sparse_grad_update")):
        params = [p for p in model.GetParams(top_scope=True) if p in model.param_to_grad
                  and isinstance(model.param_to_grad[p], core.GradientSlice) == sparse]
        one = model.param_init_net.ConstantFill([], "ONE", shape=[1], value=1.0)
        if params:
            ratio = _norm_ratio(model, params, scope, max_norm)
            _apply_ratio(model, ratio, params, lr, scope, one)


def reverse_task_batches(rng, n_batches, batch_size, vocab, max_len):
    out = []
    for _ in range(n_batches):
        batch = []
        for _ in range(batch_size):
            s = rng.randint(4, vocab, rng.randint(1, max_len + 1)).tolist()
            batch.append((s, s[::-1]))
        out.append(prepare_batch(batch))
    return out


@pytest.mark.parametrize("attention", ["none", "regular"])
def test_training_reverse_task_loss_falls(attention):
    """train.py's model and update (norm-clipped SGD, sparse embedding
    updates) on reversing random token sequences: the per-word loss of the
    last 20 steps is well under that of the first 5 (a broken gradient or
    update keeps it near log(vocab))."""
    rng = np.random.RandomState(11)
    workspace.ResetWorkspace()
    vocab = 10
    params = model_params(attention, (16,), (16,), batch_size=8, learning_rate=0.5, max_gradient_norm=1.0,
                          encoder_embedding_size=8, decoder_embedding_size=8)
    model = Seq2SeqModelHelper()
    lr = model.AddParam(name="learning_rate", init_value=0.5, trainable=False)
    loss = build_loss(model, params, vocab, vocab)
    model.AddGradientOperators(loss)
    # the embeddings' gradients are GradientSlices (Gather's, as in Caffe2): ScatterWeightedSum updates
    # their rows
    assert all(isinstance(model.param_to_grad[p], core.GradientSlice)
               for p in ("encoder_embeddings", "decoder_embeddings"))
    add_clipped_updates(model, lr, params["max_gradient_norm"])
    scatter = [op for op in model.net.Proto().op if op.type == "ScatterWeightedSum"]
    assert [op.output[0] for op in scatter] == ["encoder_embeddings", "decoder_embeddings"]
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net, input_blobs=INPUT_NAMES)
    batches = reverse_task_batches(rng, 8, 8, vocab, 4)
    per_word = []
    for it in range(250):
        b = batches[it % len(batches)]
        feed(b)
        workspace.RunNet(model.net.Name())
        per_word.append(float(fetch("total_loss_scalar")) / float(b["target_weights"].sum()))
    first, last = np.mean(per_word[:5]), np.mean(per_word[-20:])
    print("LOSS %s first %.3f last %.3f" % (attention, first, last))
    assert first > 1.8 and last < 0.5 * first, (first, last)


def test_examples_seq2seq_trains():
    """examples/seq2seq.py (train.py's model and update on the reversal task) runs and learns."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "seq2seq.py")
    if not os.path.exists(path):
        pytest.skip("examples/ not beside tests/")
    spec = importlib.util.spec_from_file_location("seq2seq_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    history = mod.main(["--steps", "400", "--report_every", "100", "--units", "24", "--vocab_size", "12",
                        "--max_length", "5", "--bidirectional"])
    assert [h[0] for h in history] == [100, 200, 300, 400, "decode"]
    first_train, last_eval, accuracy = history[0][1], history[-2][2], history[-2][3]
    # log(12) = 2.5 per word at the start; a broken gradient or update stays near it
    assert last_eval < 0.5 * first_train and accuracy > 0.6, history
    # the beam search (translate.py's decoder on the trained parameters) outputs some sequences right
    assert history[-1][1] > 0.2, history
