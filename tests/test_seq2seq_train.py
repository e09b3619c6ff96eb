"""recurrent.models.seq2seq.train (Caffe2's train.py: Seq2SeqModelCaffe2,
prepare_batch, gen_batches, run_seq2seq_model, main) and translate.py's
command line (run_seq2seq_beam_decoder, main).

The first tests port Caffe2's seq2seq_beam_search_test.py: a model built by
train.py, saved, loaded into the ensemble beam-search decoder; the score of
each decoded sentence equals the loss the training forward net gives that
sentence, teacher-forced. The rest: prepare_batch / gen_batches against
hand-made batches, training lowers the loss, save / load_from_checkpoint
bitwise, forward_only changes nothing, the RNN executor on / off bitwise,
both command lines end to end on tiny corpora."""

import io
import os
import random
import sys

import numpy as np
import pytest

from recurrent import _C, workspace
from recurrent.models.seq2seq import seq2seq_util, train, translate
from recurrent.models.seq2seq.train import Batch, Seq2SeqModelCaffe2, gen_batches, prepare_batch
from recurrent.models.seq2seq.translate import Seq2SeqModelCaffe2EnsembleDecoder

VOCAB = 20


def model_params(attention='regular', encoder_units=(16,), decoder_units=(32,), bidirectional=True):
    return dict(
        attention=attention,
        decoder_layer_configs=[dict(num_units=u) for u in decoder_units],
        encoder_type=dict(encoder_layer_configs=[dict(num_units=u) for u in encoder_units],
                          use_bidirectional_encoder=bidirectional),
        encoder_embedding_size=8,
        decoder_embedding_size=8,
        decoder_softmax_size=None,
    )


def training_params(params, batch_size=2, learning_rate=0.1, max_gradient_norm=1.0):
    return dict(params, batch_size=batch_size, optimizer_params=dict(learning_rate=learning_rate),
                max_gradient_norm=max_gradient_norm)


def new_model(params, batch_size=2, learning_rate=0.1, vocab=VOCAB):
    m = Seq2SeqModelCaffe2(training_params(params, batch_size, learning_rate), vocab, vocab, num_gpus=0)
    m.initialize_from_scratch()
    return m


def all_params(m):
    return {str(p): workspace.FetchBlob(p).copy() for p in m.model.GetAllParams()}


def random_pairs(rng, n, lo=4, hi=VOCAB, max_len=4):
    return [(rng.randint(lo, hi, rng.randint(1, max_len + 1)).tolist(),
             rng.randint(lo, hi, rng.randint(1, max_len + 1)).tolist()) for _ in range(n)]


# ---------------------------------------------------------------- Caffe2's seq2seq_beam_search_test
def _compare_train_inference(params, tmp_path):
    m = new_model(params)
    checkpoint = m.save(checkpoint_path_prefix=str(tmp_path / 'checkpoint'), current_step=0)
    assert checkpoint == str(tmp_path / 'checkpoint') + '-0'
    decoder = Seq2SeqModelCaffe2EnsembleDecoder(dict(
        ensemble_models=[dict(source_vocab={i: str(i) for i in range(VOCAB)},
                              target_vocab={i: str(i) for i in range(VOCAB)},
                              model_params=params, model_file=checkpoint)],
        decoding_params=dict(beam_size=3, word_reward=0, unk_reward=0)))
    decoder.load_models()
    rng = np.random.RandomState(0)
    for _ in range(3):
        encoder_inputs = rng.randint(3, VOCAB, size=5).tolist()  # after GO (1) and EOS (2)
        targets, _, beam_score = decoder.decode(encoder_inputs, 7)
        targets_2, _, _ = decoder.decode(encoder_inputs, 7)
        assert targets == targets_2
        targets = [int(t) for t in targets]
        # the training model's forward net, teacher-forced on the decoded output
        workspace.FeedBlob('encoder_inputs', np.array([encoder_inputs[::-1]], np.int32).T)
        workspace.FeedBlob('encoder_lengths', np.array([len(encoder_inputs)], np.int32))
        decoder_inputs = [seq2seq_util.GO_ID] + targets[:-1]
        workspace.FeedBlob('decoder_inputs', np.array([decoder_inputs], np.int32).T)
        workspace.FeedBlob('decoder_lengths', np.array([len(decoder_inputs)], np.int32))
        workspace.FeedBlob('targets', np.array([targets], np.int32).T)
        workspace.FeedBlob('target_weights', np.ones([1, len(targets)], np.float32))
        workspace.RunNet(m.forward_net)
        np.testing.assert_almost_equal(beam_score, workspace.FetchBlob('total_loss_scalar'), decimal=4)


def test_attention(tmp_path):
    _compare_train_inference(model_params(), tmp_path)


def test_2layer_attention(tmp_path):
    _compare_train_inference(model_params(encoder_units=(16, 32), decoder_units=(32, 32)), tmp_path)


def test_multi_decoder(tmp_path):
    _compare_train_inference(model_params(encoder_units=(32,), decoder_units=(32, 32, 32),
                                          bidirectional=False), tmp_path)


def test_no_attention(tmp_path):
    # ours: Caffe2's test had no model without attention
    _compare_train_inference(model_params(attention='none', encoder_units=(8, 8), decoder_units=(16,)),
                             tmp_path)


# ---------------------------------------------------------------- prepare_batch / gen_batches
def test_prepare_batch_by_hand():
    b = prepare_batch([([4, 5, 6], [7]), ([8], [9, 10, 11])])
    assert isinstance(b, Batch) and b._fields == ('encoder_inputs', 'encoder_lengths', 'decoder_inputs',
                                                  'decoder_lengths', 'targets', 'target_weights')
    expected = dict(
        encoder_inputs=[[6, 8], [5, 0], [4, 0]],           # reversed, then PAD
        encoder_lengths=[3, 1],
        decoder_inputs=[[1, 1], [7, 9], [0, 10], [0, 11]],  # GO, target, PAD
        decoder_lengths=[2, 4],
        targets=[[7, 9], [2, 10], [0, 11], [0, 2]],         # target, EOS, PAD
        target_weights=[[1, 1], [1, 1], [0, 1], [0, 1]],
    )
    for name, value in expected.items():
        got = getattr(b, name)
        assert got.dtype == (np.float32 if name == 'target_weights' else np.int32), name
        np.testing.assert_array_equal(got, np.array(value), err_msg=name)
        assert got.flags['C_CONTIGUOUS'], name


def test_prepare_batch_empty_pair_and_empty_batch():
    b = prepare_batch([([], []), ([4], [5])])
    np.testing.assert_array_equal(b.target_weights, [[0, 1], [0, 1]])  # the empty pair weighs nothing
    np.testing.assert_array_equal(b.targets, [[2, 5], [0, 2]])
    np.testing.assert_array_equal(b.encoder_lengths, [0, 1])
    # a PAD inside a target gets weight 0 too, as in Caffe2
    np.testing.assert_array_equal(prepare_batch([([4], [0, 5])]).target_weights, [[0], [1], [1]])
    with pytest.raises(ValueError, match='prepare_batch: the batch is empty'):
        prepare_batch([])


def _write(path, lines):
    path.write_text(''.join(line + '\n' for line in lines))
    return str(path)


def test_gen_batches_by_hand(tmp_path):
    src = _write(tmp_path / 'src', ['a b c', 'a', '', 'b b', 'c a b a c', 'x y', 'a c'])
    tgt = _write(tmp_path / 'tgt', ['p', 'q r', 'p', 'q', 'p q', '', 'r r r'])
    vocab_s = {'<PAD>': 0, '<GO>': 1, '<EOS>': 2, '<UNK>': 3, 'a': 4, 'b': 5, 'c': 6}
    vocab_t = {'<PAD>': 0, '<GO>': 1, '<EOS>': 2, '<UNK>': 3, 'p': 4, 'q': 5}
    random.seed(5)
    batches = gen_batches(src, tgt, vocab_s, vocab_t, batch_size=3, max_length=3)
    # dropped: the empty source (line 3), the empty target (line 6), 5 > 3 source tokens (line 5);
    # sorted by (source length, target length); the last batch filled up with its last pair
    expected = [
        [([4], [5, 3]), ([5, 5], [5]), ([4, 6], [3, 3, 3])],
        [([4, 5, 6], [4])] * 3,
    ]
    assert sorted(batches) == sorted(expected)
    random.seed(5)
    shuffled = list(expected)
    random.shuffle(shuffled)
    assert batches == shuffled  # shuffled with Python's random, as Caffe2
    # no length limit: the 5-token pair comes last
    random.seed(0)
    everything = gen_batches(src, tgt, vocab_s, vocab_t, batch_size=10, max_length=None)
    assert everything == [[([4], [5, 3]), ([5, 5], [5]), ([4, 6], [3, 3, 3]), ([4, 5, 6], [4]),
                           ([6, 4, 5, 4, 6], [4, 5])] + [([6, 4, 5, 4, 6], [4, 5])] * 5]
    assert len(gen_batches(src, tgt, vocab_s, vocab_t, batch_size=2, max_length=3)) == 2  # 4 pairs: no fill
    assert gen_batches(src, tgt, vocab_s, vocab_t, batch_size=2, max_length=0) == []
    with pytest.raises(ValueError, match='gen_batches: batch_size must be at least 1'):
        gen_batches(src, tgt, vocab_s, vocab_t, batch_size=0, max_length=None)


# ---------------------------------------------------------------- the model
def test_constructor_cpu_only_and_exit_resets():
    params = training_params(model_params())
    with pytest.raises(ValueError, match='Seq2SeqModelCaffe2: num_gpus=1.*CPU-only'):
        Seq2SeqModelCaffe2(params, VOCAB, VOCAB, num_gpus=1)
    with Seq2SeqModelCaffe2(params, VOCAB, VOCAB) as m:  # num_gpus defaults to 0 here
        m.initialize_from_scratch()
        assert m.get_current_step() == 0
        assert workspace.HasBlob('encoder_embeddings')
        assert [str(p) for p in m.model.GetNonTrainableParams()] == ['learning_rate', 'global_step',
                                                                      'start_time']
        assert workspace.FetchBlob('global_step').dtype == np.int32
    assert workspace.Blobs() == []  # __exit__ resets the workspace, as Caffe2's


def test_training_lowers_the_loss():
    rng = np.random.RandomState(1)
    params = model_params(attention='regular', encoder_units=(8,), decoder_units=(8,), bidirectional=False)
    m = new_model(params, batch_size=4, learning_rate=0.5, vocab=8)
    batches = [random_pairs(rng, 4, hi=8, max_len=3) for _ in range(3)]
    first = sum(float(m.step(b, forward_only=True)) for b in batches)
    for _ in range(25):
        for b in batches:
            m.step(b, forward_only=False)
    last = sum(float(m.step(b, forward_only=True)) for b in batches)
    assert m.get_current_step() == 75
    print('LOSS first %.3f last %.3f' % (first, last))
    assert last < 0.6 * first, (first, last)


def test_forward_only_step_changes_no_parameter_and_equals_the_training_loss():
    rng = np.random.RandomState(2)
    m = new_model(model_params(encoder_units=(8, 8), decoder_units=(8, 8)))
    batch = random_pairs(rng, 2)
    before = all_params(m)
    loss = m.step(batch, forward_only=True)
    after = all_params(m)
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)
    # the training step computes the same loss (at the same parameters), then updates
    assert m.step(batch, forward_only=False).tobytes() == loss.tobytes()
    changed = [n for n in before if not np.array_equal(before[n], workspace.FetchBlob(n))]
    assert 'encoder_embeddings' in changed and 'output_projection_w' in changed and 'global_step' in changed
    assert 'learning_rate' not in changed
    assert m.get_current_step() == 1


def test_gradient_clipping_bounds_the_update():
    """A large gradient: the dense update's global norm is learning_rate *
    max_gradient_norm; the embeddings' rows move by -learning_rate *
    max_gradient_norm / (global norm of their gradient slices' values) times
    those values, added up per row (Caffe2's clipping of the sparse part)."""
    rng = np.random.RandomState(3)
    params = model_params(encoder_units=(8,), decoder_units=(8,), bidirectional=False)
    lr, max_norm = 0.1, 1e-3
    m = Seq2SeqModelCaffe2(training_params(params, 2, lr, max_norm), VOCAB, VOCAB)
    m.initialize_from_scratch()
    before = all_params(m)
    m.step(random_pairs(rng, 2), forward_only=False)
    sparse = ['encoder_embeddings', 'decoder_embeddings']
    dense = [str(p) for p in m.model.GetParams() if str(p) not in sparse]
    moved = [workspace.FetchBlob(n).astype(np.float64) - before[n] for n in dense]
    # (float32 parameters: their differences carry rounding of about 1e-4 relative here)
    np.testing.assert_allclose(np.sqrt(sum(np.sum(d ** 2) for d in moved)), lr * max_norm, rtol=2e-3)
    slices = [m.model.param_to_grad[p] for p in sparse]
    values = [workspace.FetchBlob(g.values).astype(np.float64) for g in slices]
    global_norm = np.sqrt(sum(np.sum(v ** 2) for v in values))
    assert global_norm > max_norm
    for name, grad, v in zip(sparse, slices, values):
        expected = before[name].astype(np.float64)
        np.add.at(expected, workspace.FetchBlob(grad.indices), -lr * max_norm / global_norm * v)
        np.testing.assert_allclose(workspace.FetchBlob(name), expected, rtol=0, atol=1e-6, err_msg=name)
        assert not np.array_equal(workspace.FetchBlob(name), before[name])


def test_save_then_load_from_checkpoint_bitwise(tmp_path):
    rng = np.random.RandomState(4)
    params = model_params(encoder_units=(8,), decoder_units=(16,))
    tp = training_params(params, learning_rate=0.3)
    m = new_model(params, learning_rate=0.3)
    for _ in range(3):
        m.step(random_pairs(rng, 2), forward_only=False)
    probe = random_pairs(rng, 2)
    loss = m.step(probe, forward_only=True)
    saved = all_params(m)
    path = m.save(str(tmp_path / 'ckpt'), m.get_current_step())
    assert path.endswith('ckpt-3')
    assert (tmp_path / 'checkpoint').read_text() == (
        'model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n' % (path, path))
    for where in (path, str(tmp_path)):  # the file, or the directory of its 'checkpoint' file
        workspace.SwitchWorkspace('fresh', True)
        workspace.ResetWorkspace()
        try:
            m2 = Seq2SeqModelCaffe2(tp, VOCAB, VOCAB)
            m2.load_from_checkpoint(where)
            assert m2.get_current_step() == 3
            for name, value in saved.items():
                assert workspace.FetchBlob(name).tobytes() == value.tobytes(), name
            assert m2.step(probe, forward_only=True).tobytes() == loss.tobytes()
            m2.step(probe, forward_only=False)
            assert m2.get_current_step() == 4
        finally:
            workspace.SwitchWorkspace('default')


def test_load_from_checkpoint_errors(tmp_path):
    params = model_params(encoder_units=(8,), decoder_units=(16,))
    m = new_model(params)
    path = m.save(str(tmp_path / 'ckpt'), 0)
    workspace.ResetWorkspace()
    other = Seq2SeqModelCaffe2(training_params(params), VOCAB + 1, VOCAB)  # another source vocabulary
    with pytest.raises(ValueError, match=r"load_from_checkpoint: 'encoder_embeddings' in .*ckpt-0' is "
                                         r"float32 \[20, 8\], but this model's is float32 \[21, 8\]"):
        other.load_from_checkpoint(path)
    assert workspace.FetchBlob('encoder_embeddings').shape == (VOCAB + 1, 8)  # put back
    with pytest.raises(OSError, match="op Load #0: cannot open '.*nothing-here' for reading"):
        other.load_from_checkpoint(str(tmp_path / 'nothing-here'))
    (tmp_path / 'empty').mkdir()
    with pytest.raises(FileNotFoundError):
        other.load_from_checkpoint(str(tmp_path / 'empty'))
    # the workspace stays usable: a model of the right size loads
    workspace.ResetWorkspace()
    Seq2SeqModelCaffe2(training_params(params), VOCAB, VOCAB).load_from_checkpoint(path)


def test_executor_on_off_bitwise_after_training(tmp_path):
    """A few training steps with the RNN executor off, then on (3 threads),
    from the same checkpoint: the same losses and parameters bit for bit."""
    from recurrent import trace
    rng = np.random.RandomState(5)
    params = model_params(encoder_units=(8, 8), decoder_units=(8, 8))
    tp = training_params(params)
    path = new_model(params).save(str(tmp_path / 'ckpt'), 0)
    batches = [random_pairs(rng, 2, max_len=6) for _ in range(3)]
    old_on, old_n = workspace.rnn_executor_enabled(), _C.get_flag('rnn_executor_num_threads')
    results = []
    try:
        for on in (0, 1):
            workspace.GlobalInit(['prog', '--caffe2_rnn_executor=%d' % on,
                                  '--caffe2_rnn_executor_num_threads=3'])
            workspace.SwitchWorkspace('executor%d' % on, True)
            workspace.ResetWorkspace()
            m = Seq2SeqModelCaffe2(tp, VOCAB, VOCAB)
            m.load_from_checkpoint(path)
            losses = [m.step(b, forward_only=False).tobytes() for b in batches]
            losses.append(m.step(batches[0], forward_only=True).tobytes())
            runs = {s['last_run'] for s in trace.executor_status(m.model.net)}
            assert runs == ({'executor'} if on else set()), runs
            results.append((losses, {k: v.tobytes() for k, v in all_params(m).items()}))
            workspace.SwitchWorkspace('default')
    finally:
        workspace.GlobalInit(['prog', '--caffe2_rnn_executor=%d' % old_on,
                              '--caffe2_rnn_executor_num_threads=%d' % old_n])
        workspace.SwitchWorkspace('default')
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1]


def test_decoder_decodes_a_model_trained_by_train_py(tmp_path):
    """train.py's model learns to copy 1-2 tokens; saved by save(), the
    ensemble decoder (load_models) outputs the copies."""
    rng = np.random.RandomState(6)
    params = model_params(attention='regular', encoder_units=(16,), decoder_units=(16,), bidirectional=False)
    m = new_model(params, batch_size=8, learning_rate=1.0, vocab=8)
    for _ in range(200):
        sources = [rng.randint(4, 8, rng.randint(1, 3)).tolist() for _ in range(8)]
        m.step([(s, s) for s in sources], forward_only=False)
    path = m.save(str(tmp_path / 'ckpt'), m.get_current_step())
    workspace.SwitchWorkspace('decode', True)
    try:
        vocab = {i: str(i) for i in range(8)}
        decoder = Seq2SeqModelCaffe2EnsembleDecoder(dict(
            ensemble_models=[dict(source_vocab=vocab, target_vocab=vocab, model_params=params,
                                  model_file=path)],
            decoding_params=dict(beam_size=2, word_reward=0, unk_reward=0)))
        decoder.load_models()
        tests = [[a] for a in range(4, 8)] + [[a, b] for a in range(4, 8) for b in range(4, 8)]
        right = sum([int(t) for t in decoder.decode(s, 5)[0]] == s + [seq2seq_util.EOS_ID] for s in tests)
    finally:
        workspace.SwitchWorkspace('default')
    print('DECODED %d of %d right' % (right, len(tests)))
    assert right >= 0.8 * len(tests), right


# ---------------------------------------------------------------- the command lines
def test_main_model_params_bidirectional_halves_the_first_layer_only():
    import argparse
    parser = argparse.ArgumentParser()
    train.add_model_arguments(parser)
    args = parser.parse_args(['--source-corpus', 's', '--target-corpus', 't', '--use-bidirectional-encoder',
                              '--encoder-cell-num-units', '6', '--encoder-num-layers', '3'])
    params = train.model_params_from_args(parser, args)
    assert params['encoder_type']['encoder_layer_configs'] == [dict(num_units=3), dict(num_units=6),
                                                               dict(num_units=6)]
    assert params['attention'] == 'none' and len(params['decoder_layer_configs']) == 2
    args.encoder_cell_num_units = 7
    with pytest.raises(SystemExit):
        train.model_params_from_args(parser, args)


def test_train_and_translate_main(tmp_path, monkeypatch, capsys):
    rng = np.random.RandomState(7)
    words = ['w%d' % i for i in range(5)]
    lines = [' '.join(rng.choice(words, rng.randint(1, 4))) for _ in range(24)]
    src = _write(tmp_path / 'train.src', lines)
    tgt = _write(tmp_path / 'train.tgt', [' '.join(reversed(l.split())) for l in lines])
    model_flags = ['--source-corpus', src, '--target-corpus', tgt, '--unk-threshold', '0',
                   '--use-attention', '--use-bidirectional-encoder', '--encoder-cell-num-units', '8',
                   '--encoder-num-layers', '1', '--decoder-cell-num-units', '8', '--decoder-num-layers', '1',
                   '--encoder-embedding-size', '4', '--decoder-embedding-size', '4']
    prefix = str(tmp_path / 'model')
    history = train.main(model_flags + ['--source-corpus-eval', src, '--target-corpus-eval', tgt,
                                        '--batch-size', '8', '--epochs', '3', '--checkpoint', prefix])
    assert len(history) == 3 and all(np.isfinite(h).all() for h in history)
    assert history[-1][1] < history[0][1]  # the eval loss fell
    assert sorted(os.listdir(tmp_path)) == sorted(['train.src', 'train.tgt', 'checkpoint', 'model-0',
                                                   'model-1', 'model-2'])
    assert workspace.Blobs() == []  # the with block reset the workspace
    with pytest.raises(SystemExit):
        train.main(model_flags + ['--source-corpus-eval', src, '--target-corpus-eval', tgt,
                                  '--num-gpus', '1'])
    capsys.readouterr()

    monkeypatch.setattr(sys, 'stdin', io.StringIO('w0 w1\n\nw2 w3 w4\nunknown w1\n'))
    translate.main(model_flags + ['--checkpoint', prefix + '-2', '--beam-size', '2'])
    out = capsys.readouterr().out.split('\n')
    assert len(out) == 5 and out[-1] == '' and out[1] == ''  # one line per input line; empty stays empty
    known = set(words) | {'<PAD>', '<GO>', '<EOS>', '<UNK>'}
    for line, source in zip(out, ['w0 w1', '', 'w2 w3 w4', 'unknown w1']):
        tokens = line.split()
        assert set(tokens) <= known, line
        assert len(tokens) <= 2 * len(source.split()) + 5
        if tokens and len(tokens) < 2 * len(source.split()) + 5:
            assert tokens[-1] == '<EOS>'  # printed, as Caffe2's


def test_run_seq2seq_beam_decoder_matches_the_decoder(tmp_path):
    """run_seq2seq_beam_decoder prints the target words of decode()'s output."""
    import argparse
    src = _write(tmp_path / 's', ['a b', 'b c a'])
    tgt = _write(tmp_path / 't', ['x y z', 'z'])
    params = model_params(attention='none', encoder_units=(8,), decoder_units=(8,), bidirectional=False)
    m = Seq2SeqModelCaffe2(training_params(params), 7, 7)
    m.initialize_from_scratch()
    path = m.save(str(tmp_path / 'ckpt'), 0)
    workspace.ResetWorkspace()
    args = argparse.Namespace(source_corpus=src, target_corpus=tgt, unk_threshold=0, checkpoint=path)
    out = io.StringIO()
    translate.run_seq2seq_beam_decoder(args, params, dict(beam_size=3, word_reward=0.0, unk_reward=0.0),
                                       input_lines=['b a c\n', 'q\n'], output=out)
    workspace.ResetWorkspace()
    decoder = Seq2SeqModelCaffe2EnsembleDecoder(dict(
        ensemble_models=[dict(source_vocab=seq2seq_util.gen_vocab(src, 0),
                              target_vocab=seq2seq_util.gen_vocab(tgt, 0), model_params=params,
                              model_file=path)],
        decoding_params=dict(beam_size=3, word_reward=0.0, unk_reward=0.0)))
    decoder.load_models()
    words = ['<PAD>', '<GO>', '<EOS>', '<UNK>', 'x', 'y', 'z']
    expected = [' '.join(words[t] for t in decoder.decode(ids, 2 * len(ids) + 5)[0])
                for ids in ([5, 4, 6], [3])]
    assert out.getvalue() == expected[0] + '\n' + expected[1] + '\n'
