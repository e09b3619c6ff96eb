"""Beam search (recurrent.models.seq2seq.beam_search, Caffe2's
BeamSearchForwardOnly) against a NumPy beam search over a small step model
whose log-probabilities depend on the previous token and on a recurrent state
(so the re-ordering of states per hypothesis matters); and the ensemble
decoder (translate.py) on a trained toy model.
"""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.models.seq2seq import seq2seq_util
from recurrent.models.seq2seq.beam_search import BeamSearchForwardOnly
from recurrent.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper


def build_bigram_search(beam, V, S, post_eos_penalty=None, word_rewards=False, eos=2, go=1):
    """log_probs[h] = table[token_prev[h]] + path_prev[h], where the state
    path_t = path_prev + 0.25 * token_prev (its own hypothesis's history);
    attentions: the fed (beam, S, 1) blob ``att``."""
    model = Seq2SeqModelHelper(name="bigram")
    search = BeamSearchForwardOnly(beam, model, eos_token_id=eos, go_token_id=go,
                                   post_eos_penalty=post_eos_penalty)
    step = search.get_step_model().net
    prev = search.get_previous_tokens()                                   # (1, beam) int32
    rows = step.Gather(["table", prev], "bigram_rows")                    # (1, beam, V)
    rows, _ = step.Reshape(rows, ["bigram_rows_2d", "bigram_rows_old_shape"], shape=[beam, V])
    path_prev = step.AddExternalInput("path_prev")                       # (1, beam, 1)
    path_col, _ = step.Reshape(path_prev, ["path_col", "path_col_old"], shape=[beam])
    log_probs = step.Add([rows, path_col], "log_probs", broadcast=1, axis=0)
    tok = step.Cast(prev, "prev_float", to=core.DataType.FLOAT)          # (1, beam)
    tok3, _ = step.Reshape(tok, ["prev_float_3d", "prev_float_old"], shape=[1, beam, 1])
    path_t = step.Add([path_prev, step.Scale(tok3, "tok_scaled", scale=0.25)], "path_t")
    path0 = model.param_init_net.ConstantFill([], "path0", shape=[1], value=0.0)
    configs = [BeamSearchForwardOnly.StateConfig(
        initial_value=path0, state_prev_link=BeamSearchForwardOnly.LinkConfig(path_prev, 0, 1),
        state_link=BeamSearchForwardOnly.LinkConfig(path_t, 1, 1))]
    outs = search.apply(inputs="encoder_inputs", length="max_len", log_probs=log_probs, attentions="att",
                        state_configs=configs, data_dependencies=[],
                        word_rewards="word_rewards" if word_rewards else None)
    return model, outs


def numpy_beam_search(table, beam, steps, att, go, eos, post_eos_penalty=None, rewards=None):
    V = table.shape[0]
    scores = np.zeros(beam, np.float32)
    tokens = np.full(beam, go, np.int64)
    hypo = np.zeros(beam, np.int64)
    path = np.zeros(beam, np.float32)
    attn = np.zeros((beam, att.shape[1]), np.float32)
    out = {"scores": [scores.copy()], "tokens": [tokens.copy()], "hypo": [hypo.copy()],
           "attention": [attn.copy()]}
    for t in range(steps):
        lp = table[tokens] + path[:, None]
        if post_eos_penalty is not None and t > 0:
            lp = lp + np.float32(post_eos_penalty) * (tokens == eos).astype(np.float32)[:, None]
        order = np.argsort(-lp, axis=1, kind="stable")[:, :beam]          # no ties in random data
        best = np.take_along_axis(lp, order, axis=1)
        cand = best + scores[:, None]
        if rewards is not None:
            cand = cand + rewards[order]
        flat = cand.reshape(-1)
        if t == 0:
            flat = flat[:beam]
        win = np.argsort(-flat, kind="stable")[:beam]
        new_hypo = win // beam
        new_tokens = order.reshape(-1)[win]
        path = (path + np.float32(0.25) * tokens.astype(np.float32))[new_hypo]
        scores, tokens, hypo = flat[win].astype(np.float32), new_tokens, new_hypo
        attn = att[new_hypo, :, 0]
        for k, v in (("scores", scores), ("tokens", tokens), ("hypo", hypo), ("attention", attn)):
            out[k].append(v.copy())
    assert V > 0
    return {k: np.stack(v) for k, v in out.items()}


@pytest.mark.parametrize("beam,steps", [(1, 4), (3, 5), (4, 1), (2, 0)])
@pytest.mark.parametrize("penalty", [None, -3.0])
def test_bigram_beam_search_matches_numpy(rng, beam, steps, penalty):
    V, S, go, eos = 7, 5, 1, 2
    table = np.log(rng.dirichlet(np.ones(V), size=V)).astype(np.float32)
    att = rng.rand(beam, S, 1).astype(np.float32)
    model, outs = build_bigram_search(beam, V, S, post_eos_penalty=penalty, go=go, eos=eos)
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob("table", table)
    workspace.FeedBlob("att", att)
    workspace.FeedBlob("encoder_inputs", np.arange(S, dtype=np.int32).reshape(S, 1))
    workspace.FeedBlob("max_len", np.array([steps], np.int32))
    workspace.RunNetOnce(model.net)
    tokens, prev, scores, attention = (workspace.FetchBlob(str(b)) for b in outs)
    ref = numpy_beam_search(table, beam, steps, att, go, eos, post_eos_penalty=penalty)
    assert tokens.dtype == np.int32 and prev.dtype == np.int32
    assert tokens.shape == (steps + 1, beam, 1) and attention.shape == (steps + 1, beam, S)
    np.testing.assert_array_equal(tokens[:, :, 0], ref["tokens"])
    np.testing.assert_array_equal(prev[:, :, 0], ref["hypo"])
    np.testing.assert_allclose(scores[:, :, 0], ref["scores"], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(attention, ref["attention"])


def test_bigram_beam_search_word_rewards(rng):
    beam, steps, V, S = 3, 4, 6, 2
    table = np.log(rng.dirichlet(np.ones(V), size=V)).astype(np.float32)
    rewards = rng.randn(V).astype(np.float32)
    att = rng.rand(beam, S, 1).astype(np.float32)
    model, outs = build_bigram_search(beam, V, S, word_rewards=True)
    workspace.RunNetOnce(model.param_init_net)
    for name, value in (("table", table), ("att", att), ("word_rewards", rewards),
                        ("encoder_inputs", np.zeros((S, 1), np.int32)),
                        ("max_len", np.array([steps], np.int32))):
        workspace.FeedBlob(name, value)
    workspace.RunNetOnce(model.net)
    tokens, prev, scores, _ = (workspace.FetchBlob(str(b)) for b in outs)
    ref = numpy_beam_search(table, beam, steps, att, 1, 2, rewards=rewards)
    np.testing.assert_array_equal(tokens[:, :, 0], ref["tokens"])
    np.testing.assert_array_equal(prev[:, :, 0], ref["hypo"])
    np.testing.assert_allclose(scores[:, :, 0], ref["scores"], rtol=1e-6, atol=1e-6)


def test_beam_search_bad_arguments():
    with pytest.raises(ValueError, match=r"beam_size must be >= 1, got 0"):
        BeamSearchForwardOnly(0, Seq2SeqModelHelper(name="b0"), eos_token_id=seq2seq_util.EOS_ID)


# ---------------------------------------------------------------- the ensemble decoder (translate.py)

def _decoder(model_params, vocab_size, beam, n_models=1, model_file=None):
    from recurrent.models.seq2seq.translate import Seq2SeqModelCaffe2EnsembleDecoder
    vocab = {str(i): i for i in range(vocab_size)}
    return Seq2SeqModelCaffe2EnsembleDecoder(dict(
        ensemble_models=[dict(source_vocab=vocab, target_vocab=vocab, model_params=model_params,
                              model_file=model_file)] * n_models,
        decoding_params=dict(beam_size=beam, word_reward=0.0, unk_reward=0.0)))


@pytest.mark.parametrize("attention", ["regular", "none"])
@pytest.mark.parametrize("bidirectional,decoder_units", [(False, (5,)), (True, (6, 5))])
def test_decoded_score_is_the_models_log_probability(rng, attention, bidirectional, decoder_units):
    """The best hypothesis's score equals the log-probability the training net
    (teacher-forced on that output, with the same parameters) gives it: the
    decoder step, the state re-ordering and the scoring all agree with
    train.py's model."""
    from test_seq2seq import build_loss, model_params
    V, beam = 9, 3
    params = model_params(attention=attention, encoder_units=(3,) if bidirectional else (5,),
                          decoder_units=decoder_units, bidirectional=bidirectional, batch_size=1,
                          encoder_embedding_size=4, decoder_embedding_size=4)
    workspace.SwitchWorkspace("bs_train", True)
    model = Seq2SeqModelHelper()
    loss = build_loss(model, params, V, V)[0]
    workspace.RunNetOnce(model.param_init_net)
    workspace.SwitchWorkspace("bs_decode", True)
    decoder = _decoder(params, V, beam)
    loaded = decoder.load_params_from_workspace("bs_train")
    assert loaded and all(n.startswith("model0/") for n in loaded)
    for trial in range(3):
        source = rng.randint(4, V, rng.randint(1, 6)).tolist()
        output, weights, score = decoder.decode(source, 7)
        assert 1 <= len(output) <= 7 and len(weights) == len(output)
        assert all(len(w) == len(source) for w in weights)
        if attention == "regular":
            np.testing.assert_allclose([sum(w) for w in weights], 1.0, rtol=1e-5)
        workspace.SwitchWorkspace("bs_train")
        n = len(output)
        for name, value in (("encoder_inputs", np.array(source[::-1], np.int32).reshape(-1, 1)),
                            ("encoder_lengths", np.array([len(source)], np.int32)),
                            ("decoder_inputs",
                             np.array([seq2seq_util.GO_ID] + output[:-1], np.int32).reshape(-1, 1)),
                            ("decoder_lengths", np.array([n], np.int32)),
                            ("targets", np.array(output, np.int32).reshape(-1, 1)),
                            ("target_weights", np.ones((n, 1), np.float32))):
            workspace.FeedBlob(name, value)
        workspace.RunNetOnce(model.net)
        np.testing.assert_allclose(score, workspace.FetchBlob(str(loss)), rtol=2e-5, atol=1e-5)
        workspace.SwitchWorkspace("bs_decode")


def test_decoder_ensemble_and_checkpoint_errors(rng):
    from test_seq2seq import model_params
    params = model_params(attention="regular", encoder_units=(4,), decoder_units=(4,))
    workspace.SwitchWorkspace("bs_ensemble", True)
    decoder = _decoder(params, 8, 2, n_models=2)
    names = [str(p) for p in decoder.model.GetAllParams()]
    assert "model0/encoder_embeddings" in names and "model1/encoder_embeddings" in names
    output, _, _ = decoder.decode([5, 6, 7], 4)
    assert all(0 <= t < 8 for t in output)
    workspace.SwitchWorkspace("bs_empty", True)
    workspace.SwitchWorkspace("bs_ensemble")
    with pytest.raises(KeyError, match=r"workspace 'bs_empty' has no blob"):
        decoder.load_params_from_workspace("bs_empty")
    with pytest.raises(ValueError, match="attention must be 'none' or 'regular'"):
        _decoder(model_params(attention="dot"), 8, 2)


def test_decoder_loads_a_train_py_checkpoint(rng, tmp_path):
    """train.py's save (Save of GetAllParams to a minidb file) and translate.py's
    load_models (CreateDB + Load with add_prefix) give the decoder the trained
    parameters: the same outputs as copying them from the training workspace."""
    from test_seq2seq import build_loss, model_params
    V = 9
    params = model_params(attention="regular", encoder_units=(4,), decoder_units=(4,), batch_size=1)
    workspace.SwitchWorkspace("ck_train", True)
    model = Seq2SeqModelHelper()
    model.AddParam(name="global_step", init_value=0, trainable=False)
    build_loss(model, params, V, V)
    workspace.RunNetOnce(model.param_init_net)
    path = str(tmp_path / "model-0")
    workspace.RunOperatorOnce(core.CreateOperator("Save", model.GetAllParams(), [], absolute_path=True,
                                                  db=path, db_type="minidb"))
    sources = [rng.randint(4, V, rng.randint(1, 6)).tolist() for _ in range(4)]
    decoded = {}
    for how in ("checkpoint", "workspace"):
        workspace.SwitchWorkspace("ck_decode_" + how, True)
        decoder = _decoder(params, V, 3, model_file=path)
        if how == "checkpoint":
            decoder.load_models()
        else:
            decoder.load_params_from_workspace("ck_train")
        w = workspace.FetchBlob("model0/encoder_embeddings")
        decoded[how] = [decoder.decode(src, 6) for src in sources], w
    workspace.SwitchWorkspace("ck_train")
    np.testing.assert_array_equal(decoded["checkpoint"][1], workspace.FetchBlob("encoder_embeddings"))
    np.testing.assert_array_equal(decoded["checkpoint"][1], decoded["workspace"][1])
    for (out_a, att_a, score_a), (out_b, att_b, score_b) in zip(decoded["checkpoint"][0],
                                                                decoded["workspace"][0]):
        assert out_a == out_b and score_a == score_b
