"""Beam-search decoding of trained seq2seq models: Caffe2's
``caffe2.python.models.seq2seq.translate`` (``Seq2SeqModelCaffe2EnsembleDecoder``).

The decoder rebuilds each model of the ensemble under the name scope
``model<i>`` (its parameters are ``model<i>/<the training name>``: e.g.
``model0/encoder/layer0/lstm/i2h_w``), runs its encoder once over the input
sentence (batch 1) and its decoder step in one ``BeamSearchForwardOnly``
search over ``beam_size`` hypotheses, averaging the models' log-probabilities
(and attention weights) at every step. ``decode(numberized_input,
max_output_seq_len)`` returns ``(output token ids, attention weights per
output token, score)``.

``load_models`` reads each model's checkpoint (a minidb file, ``Save``'s)
with ``CreateDB`` / ``Load`` as Caffe2's did; ``load_params_from_workspace``
(ours) copies the parameters a training model left in another workspace
instead.

``run_seq2seq_beam_decoder(args, model_params, decoding_params)`` and
``main()`` are Caffe2's command line: the vocabularies are rebuilt from the
training corpora (``--source-corpus``, ``--target-corpus``,
``--unk-threshold``, as train.py built them), the model is loaded from
``--checkpoint`` (a file train.py's ``save`` wrote), and each line of stdin
is decoded (at most 2 * its length + 5 tokens) and printed as target tokens,
the final ``<EOS>`` included, as Caffe2 printed it. Differences: an input
line without tokens prints an empty line (Caffe2 ran the encoder over an
empty sequence); ``--use-bidirectional-encoder`` halves the first encoder
layer only, as our train.py does (see train.py); ``main`` takes an optional
``argv``.
"""

import abc
import argparse
import logging
import sys

import numpy as np

from ... import core, rnn_cell, workspace
from . import seq2seq_util
from .beam_search import BeamSearchForwardOnly
from .seq2seq_model_helper import Seq2SeqModelHelper

logger = logging.getLogger(__name__)


def _weighted_sum(model, values, weight, output_name):
    """WeightedSum of ``values``, each with the one weight blob ``weight``."""
    args = []
    for v in values:
        args.extend([v, weight])
    return model.net.WeightedSum(args, output_name)


class Seq2SeqModelCaffe2EnsembleDecoderBase(metaclass=abc.ABCMeta):
    """The checkpoint side of the decoder: a subclass says where each model's
    checkpoint is and in which db type (abstract, as Caffe2's)."""

    @abc.abstractmethod
    def get_model_file(self, model):
        """The checkpoint file of ensemble entry ``model``."""

    @abc.abstractmethod
    def get_db_type(self):
        """The db type of the checkpoints (``'minidb'``)."""

    def build_word_rewards(self, vocab_size, word_reward, unk_reward):
        """A reward per target word added to each step's score: ``word_reward``
        for every word, 0 for PAD, GO and EOS, ``word_reward + unk_reward``
        for UNK."""
        rewards = np.full([vocab_size], word_reward, dtype=np.float32)
        for special in (seq2seq_util.PAD_ID, seq2seq_util.GO_ID, seq2seq_util.EOS_ID):
            rewards[special] = 0
        rewards[seq2seq_util.UNK_ID] = word_reward + unk_reward
        return rewards

    def load_models(self):
        """Loads each model's parameters from its checkpoint (``get_model_file``,
        a minidb file written by ``Save``, e.g. train.py's), as Caffe2 did:
        ``CreateDB`` then ``Load(load_all=1, add_prefix='model<i>/',
        strip_prefix='gpu_0/')``."""
        reader = 'reader'
        for model, scope_name in zip(self.models, self.decoder_scope_names):
            params = [p for p in self.model.GetAllParams() if str(p).startswith(scope_name + '/')]
            workspace.RunOperatorOnce(core.CreateOperator(
                'CreateDB', [], [reader], db=self.get_model_file(model), db_type=self.get_db_type()))
            workspace.RunOperatorOnce(core.CreateOperator(
                'Load', [reader], params, load_all=1, add_prefix=scope_name + '/', strip_prefix='gpu_0/'))
            logger.info('Model %s is loaded from a checkpoint %s', scope_name, self.get_model_file(model))


class Seq2SeqModelCaffe2EnsembleDecoder(Seq2SeqModelCaffe2EnsembleDecoderBase):
    """``Seq2SeqModelCaffe2EnsembleDecoder(translate_params)`` with
    ``translate_params = {'ensemble_models': [{'source_vocab', 'target_vocab',
    'model_params', 'model_file'}, ...], 'decoding_params': {'beam_size',
    'word_reward', 'unk_reward'}}`` as in Caffe2; ``model_params`` are
    train.py's (attention ``'none'`` or ``'regular'``, ``encoder_type``,
    ``decoder_layer_configs``, embedding sizes, ``decoder_softmax_size``).
    Builds and creates the decoding net in the current workspace and runs
    its param_init_net (random parameters until the trained ones are fed)."""

    def get_model_file(self, model):
        return model['model_file']

    def get_db_type(self):
        return 'minidb'

    def scope(self, scope_name, blob_name):
        return scope_name + '/' + blob_name if scope_name is not None else blob_name

    def _tile(self, model, blob, name, axis):
        return model.net.Tile(blob, name, tiles=self.beam_size, axis=axis)

    def _build_decoder(self, model, step_model, model_params, scope, previous_tokens, timestep,
                       fake_seq_lengths):
        attention_type = model_params['attention']
        if attention_type not in ('none', 'regular'):
            raise ValueError("Seq2SeqModelCaffe2EnsembleDecoder: attention must be 'none' or 'regular' "
                             "(as in Caffe2), got %r" % (attention_type,))
        use_attention = attention_type != 'none'
        with core.NameScope(scope):
            encoder_embeddings = seq2seq_util.build_embeddings(
                model=model, vocab_size=self.source_vocab_size,
                embedding_size=model_params['encoder_embedding_size'], name='encoder_embeddings',
                freeze_embeddings=False)
        (encoder_outputs, weighted_encoder_outputs, final_hidden, final_cell,
         encoder_units_per_layer) = seq2seq_util.build_embedding_encoder(
            model=model, encoder_params=model_params['encoder_type'],
            num_decoder_layers=len(model_params['decoder_layer_configs']), inputs=self.encoder_inputs,
            input_lengths=self.encoder_lengths, vocab_size=self.source_vocab_size,
            embeddings=encoder_embeddings, embedding_size=model_params['encoder_embedding_size'],
            use_attention=use_attention, num_gpus=0, forward_only=True, scope=scope)
        with core.NameScope(scope):
            # one copy of the (batch 1) encoder results per hypothesis
            if use_attention:
                encoder_outputs = self._tile(model, encoder_outputs, 'encoder_outputs_tiled', 1)
            if weighted_encoder_outputs is not None:
                weighted_encoder_outputs = self._tile(model, weighted_encoder_outputs,
                                                      'weighted_encoder_outputs_tiled', 1)
            decoder_embeddings = seq2seq_util.build_embeddings(
                model=model, vocab_size=self.target_vocab_size,
                embedding_size=model_params['decoder_embedding_size'], name='decoder_embeddings',
                freeze_embeddings=False)
            embedded_tokens_t_prev = step_model.net.Gather([decoder_embeddings, previous_tokens],
                                                           'embedded_tokens_t_prev')
        cells, units = [], []
        for i, config in enumerate(model_params['decoder_layer_configs']):
            units.append(config['num_units'])
            cells.append(rnn_cell.LSTMCell(
                forward_only=True,
                input_size=(model_params['decoder_embedding_size'] if i == 0
                            else model_params['decoder_layer_configs'][i - 1]['num_units']),
                hidden_size=config['num_units'], forget_bias=0.0, memory_optimization=False))
        with core.NameScope(scope):
            for states, kind in ((final_hidden, 'hidden'), (final_cell, 'cell')):
                for i, s in enumerate(states or []):
                    if s is not None:
                        states[i] = self._tile(model, s, 'final_encoder_%s_tiled_%d' % (kind, i), 1)
            initial_states = seq2seq_util.build_initial_rnn_decoder_states(
                model=model, encoder_units_per_layer=encoder_units_per_layer,
                decoder_units_per_layer=units, final_encoder_hidden_states=final_hidden,
                final_encoder_cell_states=final_cell, use_attention=use_attention)
        decoder = seq2seq_util.LSTMWithAttentionDecoder(
            encoder_outputs=encoder_outputs, encoder_output_dim=encoder_units_per_layer[-1],
            encoder_lengths=None, vocab_size=self.target_vocab_size, attention_type=attention_type,
            embedding_size=model_params['decoder_embedding_size'], decoder_num_units=units[-1],
            decoder_cells=cells, weighted_encoder_outputs=weighted_encoder_outputs, name=scope)
        states_prev = step_model.net.AddExternalInputs(
            *['{}/{}_prev'.format(scope, s) for s in decoder.get_state_names()])
        decoder_outputs, states = decoder.apply(model=step_model, input_t=embedded_tokens_t_prev,
                                                seq_lengths=fake_seq_lengths, states=states_prev,
                                                timestep=timestep)
        link = BeamSearchForwardOnly.LinkConfig
        state_configs = [
            BeamSearchForwardOnly.StateConfig(initial_value=initial, state_prev_link=link(prev, 0, 1),
                                              state_link=link(new, 1, 1))
            for initial, prev, new in zip(initial_states, states_prev, states)]
        with core.NameScope(scope):
            flattened, _ = step_model.net.Reshape(
                [decoder_outputs],
                ['decoder_outputs_flattened', 'decoder_outputs_and_contexts_combination_old_shape'],
                shape=[-1, decoder.get_output_dim()])
            logits = seq2seq_util.output_projection(
                model=step_model, decoder_outputs=flattened, decoder_output_size=decoder.get_output_dim(),
                target_vocab_size=self.target_vocab_size,
                decoder_softmax_size=model_params['decoder_softmax_size'])
            log_probs = step_model.net.Log(step_model.net.Softmax(logits, 'output_probs'), 'output_log_probs')
            if use_attention:
                attention_weights = decoder.get_attention_weights()
            else:
                # no attention: zeros shaped (beam, S, 1) like an attention's weights
                zeros = step_model.net.ConstantFill([self.encoder_inputs], 'zero_attention_weights_tmp_1',
                                                    value=0.0)
                zeros = step_model.net.Transpose(zeros, 'zero_attention_weights_tmp_2')
                attention_weights = step_model.net.Tile(zeros, 'zero_attention_weights_tmp',
                                                        tiles=self.beam_size, axis=0)
        return state_configs, log_probs, attention_weights

    def __init__(self, translate_params):
        self.models = translate_params['ensemble_models']
        decoding_params = translate_params['decoding_params']
        self.beam_size = decoding_params['beam_size']
        if not self.models:
            raise ValueError("Seq2SeqModelCaffe2EnsembleDecoder: ensemble_models is empty")
        source_vocab = self.models[0]['source_vocab']
        target_vocab = self.models[0]['target_vocab']
        for m in self.models:
            if m['source_vocab'] != source_vocab or m['target_vocab'] != target_vocab:
                raise ValueError("Seq2SeqModelCaffe2EnsembleDecoder: the models of an ensemble must share "
                                 "their source and target vocabularies")
        self.source_vocab_size = len(source_vocab)
        self.target_vocab_size = len(target_vocab)
        self.decoder_scope_names = ['model{}'.format(i) for i in range(len(self.models))]

        self.model = Seq2SeqModelHelper(init_params=True)
        self.encoder_inputs = self.model.net.AddExternalInput('encoder_inputs')
        self.encoder_lengths = self.model.net.AddExternalInput('encoder_lengths')
        self.max_output_seq_len = self.model.net.AddExternalInput('max_output_seq_len')
        # every hypothesis is "shorter" than this: the decoder never masks a step
        fake_seq_lengths = self.model.param_init_net.ConstantFill(
            [], 'fake_seq_lengths', shape=[self.beam_size], value=100000, dtype=core.DataType.INT32)

        beam_decoder = BeamSearchForwardOnly(beam_size=self.beam_size, model=self.model,
                                             go_token_id=seq2seq_util.GO_ID, eos_token_id=seq2seq_util.EOS_ID)
        step_model = beam_decoder.get_step_model()
        state_configs, log_probs, attentions = [], [], []
        for m, scope_name in zip(self.models, self.decoder_scope_names):
            configs, lp, att = self._build_decoder(
                model=self.model, step_model=step_model, model_params=m['model_params'], scope=scope_name,
                previous_tokens=beam_decoder.get_previous_tokens(), timestep=beam_decoder.get_timestep(),
                fake_seq_lengths=fake_seq_lengths)
            state_configs.extend(configs)
            log_probs.append(lp)
            attentions.append(att)
        init = self.model.param_init_net
        attention_weight = init.ConstantFill([], 'num_decoders_with_attention_blob',
                                             value=1 / float(len(attentions)), shape=[1])
        attention_average = _weighted_sum(step_model, attentions, attention_weight,
                                          'attention_weights_average')
        log_prob_weight = init.ConstantFill([], 'num_decoders_blob', value=1 / float(len(log_probs)),
                                            shape=[1])
        log_probs_average = _weighted_sum(step_model, log_probs, log_prob_weight, 'output_log_probs_average')
        word_rewards = init.ConstantFill([], 'word_rewards', shape=[self.target_vocab_size], value=0.0,
                                         dtype=core.DataType.FLOAT)
        (self.output_token_beam_list, self.output_prev_index_beam_list, self.output_score_beam_list,
         self.output_attention_weights_beam_list) = beam_decoder.apply(
            inputs=self.encoder_inputs, length=self.max_output_seq_len, log_probs=log_probs_average,
            attentions=attention_average, state_configs=state_configs, data_dependencies=[],
            word_rewards=word_rewards)

        workspace.RunNetOnce(self.model.param_init_net)
        workspace.FeedBlob('word_rewards', self.build_word_rewards(
            vocab_size=self.target_vocab_size, word_reward=decoding_params['word_reward'],
            unk_reward=decoding_params['unk_reward']))
        workspace.CreateNet(self.model.net, input_blobs=[str(self.encoder_inputs), str(self.encoder_lengths),
                                                         str(self.max_output_seq_len)])
        logger.info('Params created: %s', [str(p) for p in self.model.params])

    def load_params_from_workspace(self, source_workspace, model_index=0):
        """Copies the trained parameters of ensemble model ``model_index`` from
        the workspace ``source_workspace`` (where train.py's model ran: the
        names without the ``model<i>/`` prefix) into this decoder's
        parameters (what Caffe2's Load with ``add_prefix`` did from a file)."""
        prefix = self.decoder_scope_names[model_index] + '/'
        mine = [str(p) for p in self.model.GetAllParams() if str(p).startswith(prefix)]
        here = workspace.CurrentWorkspace()
        values = {}
        workspace.SwitchWorkspace(source_workspace)
        try:
            for name in mine:
                source = name[len(prefix):]
                if not workspace.HasBlob(source):
                    raise KeyError("load_params_from_workspace: workspace '%s' has no blob '%s' (for '%s')"
                                   % (source_workspace, source, name))
                values[name] = workspace.FetchBlob(source)
        finally:
            workspace.SwitchWorkspace(here)
        for name, value in values.items():
            old = workspace.FetchBlob(name)
            if old.shape != value.shape:
                raise ValueError("load_params_from_workspace: '%s' has shape %s here but the trained '%s' "
                                 "has %s (different model_params?)" % (name, old.shape, name[len(prefix):],
                                                                      value.shape))
            workspace.FeedBlob(name, value)
        return sorted(values)

    def decode(self, numberized_input, max_output_seq_len):
        """Decodes one sentence (token ids). Returns ``(output token ids, the
        attention weights of each output token over the input tokens, the
        score)`` of the best hypothesis ending in EOS or at the last step."""
        workspace.FeedBlob(self.encoder_inputs,
                           np.array([[t] for t in reversed(numberized_input)], dtype=np.int32))
        workspace.FeedBlob(self.encoder_lengths, np.array([len(numberized_input)], dtype=np.int32))
        workspace.FeedBlob(self.max_output_seq_len, np.array([max_output_seq_len], dtype=np.int32))
        workspace.RunNet(self.model.net)

        steps = max_output_seq_len
        scores = workspace.FetchBlob(self.output_score_beam_list)
        tokens = workspace.FetchBlob(self.output_token_beam_list)
        prev = workspace.FetchBlob(self.output_prev_index_beam_list)
        attention = workspace.FetchBlob(self.output_attention_weights_beam_list)
        # the best-scoring hypothesis that ends (EOS, or the last step); on equal
        # scores the earlier one (Caffe2 started from the last step's first
        # hypothesis, so one that went on emitting EOS at log-probability 0 was
        # output with all its trailing EOS tokens)
        best = None
        for i in range(steps + 1):
            for h in range(self.beam_size):
                ended = tokens[i][h][0] == seq2seq_util.EOS_ID or i == steps
                if ended and (best is None or scores[i][h][0] > scores[best[0]][best[1]][0]):
                    best = (i, h)
        i, h = best
        output, weights = [], []
        best_score = -scores[i][h][0]
        while i > 0:
            output.append(tokens[i][h][0])
            weights.append(attention[i][h])
            h = prev[i][h][0]
            i -= 1
        # the encoder read the input reversed
        weights = [list(reversed(w))[:len(numberized_input)] for w in reversed(weights)]
        return list(reversed(output)), weights, best_score


def run_seq2seq_beam_decoder(args, model_params, decoding_params, input_lines=None, output=None):
    """Decodes every line of ``input_lines`` (default: stdin) with the model
    in ``args.checkpoint`` and writes the translations to ``output``
    (default: stdout), one line each, as Caffe2's. ``args`` carries
    ``source_corpus``, ``target_corpus``, ``unk_threshold`` and
    ``checkpoint``; ``input_lines`` and ``output`` are ours."""
    source_vocab = seq2seq_util.gen_vocab(args.source_corpus, args.unk_threshold)
    logger.info('Source vocab size %d', len(source_vocab))
    target_vocab = seq2seq_util.gen_vocab(args.target_corpus, args.unk_threshold)
    logger.info('Target vocab size %d', len(target_vocab))
    target_words = {i: word for word, i in target_vocab.items()}
    decoder = Seq2SeqModelCaffe2EnsembleDecoder(translate_params=dict(
        ensemble_models=[dict(source_vocab=source_vocab, target_vocab=target_vocab,
                              model_params=model_params, model_file=args.checkpoint)],
        decoding_params=decoding_params))
    decoder.load_models()
    input_lines = sys.stdin if input_lines is None else input_lines
    output = sys.stdout if output is None else output
    for line in input_lines:
        source = seq2seq_util.get_numberized_sentence(line, source_vocab)
        translation = []
        if source:
            translation, _, _ = decoder.decode(source, 2 * len(source) + 5)
        output.write(' '.join(target_words[int(t)] for t in translation) + '\n')


def main(argv=None):
    """``python -m recurrent.models.seq2seq.translate --source-corpus ... --target-corpus ...
    --checkpoint ... < input`` (Caffe2's flags; ``argv`` defaults to
    ``sys.argv[1:]``)."""
    from .train import add_model_arguments, model_params_from_args
    parser = argparse.ArgumentParser(description='recurrent (Caffe2): Seq2Seq Translation')
    add_model_arguments(parser)
    parser.add_argument('--beam-size', type=int, default=6, help='Size of beam for the decoder')
    parser.add_argument('--word-reward', type=float, default=0.0, help='Reward per each word generated.')
    parser.add_argument('--unk-reward', type=float, default=0.0,
                        help='Reward per each UNK token generated. Typically should be negative.')
    parser.add_argument('--checkpoint', type=str, default=None, required=True, help='Path to checkpoint')
    args = parser.parse_args(argv)
    if args.beam_size < 1:
        parser.error('--beam-size must be at least 1')
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler(sys.stderr))
    logger.setLevel(logging.INFO)
    run_seq2seq_beam_decoder(
        args, model_params=model_params_from_args(parser, args),
        decoding_params=dict(beam_size=args.beam_size, word_reward=args.word_reward,
                             unk_reward=args.unk_reward))


if __name__ == '__main__':
    main()
