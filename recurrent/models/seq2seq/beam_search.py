"""Beam search over a step model: Caffe2's
``caffe2.python.models.seq2seq.beam_search`` (``BeamSearchForwardOnly``).

The decoder's step (one token for each of ``beam_size`` hypotheses) is a step
net built in ``get_step_model()``; ``apply`` adds to it the beam bookkeeping
and runs it over ``length`` steps in one forward-only ``RecurrentNetwork``
op, whose states are the decoder's states plus four of the search's own:

    scores_t_prev     (1, beam, 1)  the score (sum of log-probabilities) of each hypothesis
    tokens_t_prev     (1, beam, 1)  its last token (a float, as in Caffe2)
    hypo_t_prev       (1, beam, 1)  the hypothesis of the previous step it extends
    attention_t_prev  (1, beam, S)  its attention weights over the S encoder steps

Each step: the ``beam_size`` best tokens of each hypothesis (``TopK`` of the
step's log-probabilities, plus ``word_rewards`` and ``post_eos_penalty`` when
given) are scored; of these beam x beam candidates (on the first step only the
first hypothesis's: all hypotheses start equal) the ``beam_size`` best
(``TopK``) become the new hypotheses; every decoder state is re-ordered to
follow its hypothesis (``Gather``). ``apply`` returns the four states over the
steps (length + 1 rows, row 0 the initial one): tokens and previous-hypothesis
indices as int32, scores and attention weights as float32; following the
indices back from the best final score gives the output (see translate.py's
``decode``).

Blob and argument names are Caffe2's. Differences: Caffe2's int64 blobs
(``TopK``'s indices, the beam size it divided them by) are int32 here, the
only integer type; ``Alias`` of the last two outputs is a ``Copy`` (blobs here
do not share memory; the results are the same).
"""

import collections

from ... import core
from . import seq2seq_util
from .seq2seq_model_helper import Seq2SeqModelHelper


class BeamSearchForwardOnly(object):
    """Beam search for a decoder step model. ``LinkConfig(blob, offset,
    window)`` ties a step-net blob to a recurrent state (its row ``offset``,
    ``window`` rows); ``StateConfig(initial_value, state_prev_link,
    state_link)`` describes one decoder state: its initial value, the blob
    the step reads it from and the blob the step writes it to."""

    LinkConfig = collections.namedtuple('LinkConfig', ['blob', 'offset', 'window'])
    StateConfig = collections.namedtuple('StateConfig', ['initial_value', 'state_prev_link', 'state_link'])

    def __init__(self, beam_size, model, eos_token_id, go_token_id=seq2seq_util.GO_ID,
                 post_eos_penalty=None):
        beam_size = int(beam_size)
        if beam_size < 1:
            raise ValueError("BeamSearchForwardOnly: beam_size must be >= 1, got %r" % (beam_size,))
        self.beam_size = beam_size
        self.model = model
        self.step_model = Seq2SeqModelHelper(name='step_model', param_model=self.model)
        self.go_token_id = go_token_id
        self.eos_token_id = eos_token_id
        self.post_eos_penalty = post_eos_penalty
        net = self.step_model.net
        (self.timestep, self.scores_t_prev, self.tokens_t_prev, self.hypo_t_prev,
         self.attention_t_prev) = net.AddExternalInputs(
            'timestep', 'scores_t_prev', 'tokens_t_prev', 'hypo_t_prev', 'attention_t_prev')
        # the previous tokens as int32 ids, (1, beam): what the decoder's embedding Gather reads
        tokens_int32 = net.Cast(self.tokens_t_prev, 'tokens_t_prev_int32', to=core.DataType.INT32)
        self.tokens_t_prev_int32_flattened, _ = net.Reshape(
            [tokens_int32], [tokens_int32, 'input_t_int32_old_shape'], shape=[1, -1])

    def get_step_model(self):
        return self.step_model

    def get_previous_tokens(self):
        return self.tokens_t_prev_int32_flattened

    def get_timestep(self):
        return self.timestep

    # ---------------------------------------------------------------- apply
    def _int32_constant(self, name, value, shape):
        return self.model.param_init_net.ConstantFill([], name, shape=shape, value=value,
                                                      dtype=core.DataType.INT32)

    def _float_constant(self, name, value, shape):
        return self.model.param_init_net.ConstantFill([], name, shape=shape, value=float(value),
                                                      dtype=core.DataType.FLOAT)

    def _penalize_after_eos(self, log_probs, on_initial_step):
        """log_probs + post_eos_penalty on the rows of hypotheses whose last
        token is EOS (not on the first step: there the tokens are GO)."""
        net = self.step_model.net
        eos = self._int32_constant('eos_token', self.eos_token_id, [self.beam_size])
        penalty = self._float_constant('finished_penalty', self.post_eos_penalty, [1])
        zero = self._float_constant('ZERO_FLOAT', 0.0, [1])
        penalty = net.Conditional([on_initial_step, zero, penalty], 'possible_finished_penalty')
        last = net.Cast(net.FlattenToVec(self.tokens_t_prev, 'tokens_t_flat'), 'tokens_t_flat_int',
                        to=core.DataType.INT32)
        after_eos = net.Cast(net.EQ([last, eos], 'predecessor_is_eos'), 'predecessor_is_eos_float',
                             to=core.DataType.FLOAT)
        row_penalty = net.Mul([after_eos, penalty], 'predecessor_is_eos_penalty', broadcast=1)
        return net.Add([log_probs, row_penalty], 'log_probs_penalized', broadcast=1, axis=0)

    def _follow_hypotheses(self, state_config, hypo):
        """The state written by the step, re-ordered so that row i is that of
        the hypothesis new hypothesis i extends."""
        net = self.step_model.net
        blob = state_config.state_link.blob
        flat, _ = net.Reshape(blob, [blob, str(blob) + '_old_shape'], shape=[self.beam_size, -1])
        chosen = net.Gather([flat, hypo], str(blob) + '_chosen_per_hypo')
        link = state_config.state_link
        return self.StateConfig(initial_value=state_config.initial_value,
                                state_prev_link=state_config.state_prev_link,
                                state_link=self.LinkConfig(chosen, link.offset, link.window))

    def apply(self, inputs, length, log_probs, attentions, state_configs, data_dependencies,
              word_rewards=None, possible_translation_tokens=None, go_token_id=None):
        """Adds the search to ``self.model.net``. ``inputs``: the encoder
        inputs (for the attention's length); ``length``: a 1-element int blob,
        the number of steps; ``log_probs``: the step's (beam, vocab)
        log-probabilities; ``attentions``: its (beam, S, 1) attention weights;
        ``state_configs``: the decoder's states; ``data_dependencies``: more
        blobs the op takes as inputs. Returns (output_token_beam_list,
        output_prev_index_beam_list, output_score_beam_list,
        output_attention_weights_beam_list)."""
        beam = self.beam_size
        net = self.step_model.net
        zero = self._int32_constant('ZERO', 0, [1])
        on_initial_step = net.EQ([zero, self.timestep], 'on_initial_step')
        if self.post_eos_penalty is not None:
            log_probs = self._penalize_after_eos(log_probs, on_initial_step)

        # the beam best tokens of each hypothesis, (beam, beam)
        best_scores_per_hypo, best_tokens_per_hypo = net.TopK(
            log_probs, ['best_scores_per_hypo', 'best_tokens_per_hypo_indices'], k=beam)
        if possible_translation_tokens:
            best_tokens_per_hypo = net.Gather([possible_translation_tokens, best_tokens_per_hypo],
                                              ['best_tokens_per_hypo'])
        scores_prev, _ = net.Reshape(self.scores_t_prev,
                                     ['scores_t_prev_squeezed', 'scores_t_prev_old_shape'], shape=[beam])
        output_scores = net.Add([best_scores_per_hypo, scores_prev], 'output_scores', broadcast=1, axis=0)
        if word_rewards is not None:
            rewards = net.Gather([word_rewards, best_tokens_per_hypo],
                                 'word_rewards_for_best_tokens_per_hypo')
            output_scores = net.Add([output_scores, rewards], 'output_scores')
        flat_scores, _ = net.Reshape([output_scores], [output_scores, 'output_scores_old_shape'], shape=[-1])

        # the candidates: on the first step the first hypothesis's beam tokens, then all beam x beam
        minus_one = self._int32_constant('MINUS_ONE_INT32', -1, [1])
        beam_blob = self._int32_constant('beam_size', beam, [1])
        slice_end = net.Conditional([on_initial_step, beam_blob, minus_one], ['slice_end'])
        candidates = net.Slice([flat_scores, zero, slice_end], 'output_scores_flattened_slice')
        candidates, _ = net.Reshape(candidates, [candidates, 'output_scores_flattened_slice_old_shape'],
                                    shape=[1, -1])
        scores_t, best_indices = net.TopK(candidates, ['scores_t', 'best_indices'], k=beam)

        # which hypothesis each winner extends, and with which token
        hypo_int32 = net.Div([best_indices, beam_blob], 'hypo_t_int32', broadcast=1)
        hypo_t = net.Cast(hypo_int32, 'hypo_t', to=core.DataType.FLOAT)
        attention_t = net.Gather([attentions, hypo_int32], 'attention_t')
        attention_t, _ = net.Reshape(attention_t, [attention_t, 'attention_t_old_shape'], shape=[1, beam, -1])
        tokens_flat, _ = net.Reshape(best_tokens_per_hypo,
                                     ['best_tokens_per_hypo_flatten', 'best_tokens_per_hypo_old_shape'],
                                     shape=[-1])
        tokens_int32 = net.Gather([tokens_flat, best_indices], 'tokens_t_int32')
        tokens_t = net.Cast(tokens_int32, 'tokens_t', to=core.DataType.FLOAT)

        state_configs = [self._follow_hypotheses(c, hypo_int32) for c in state_configs]
        initial_scores = self._float_constant('initial_scores', 0.0, [1])
        if go_token_id:
            initial_tokens = self.model.net.Copy([go_token_id], 'initial_tokens')
        else:
            initial_tokens = self._float_constant('initial_tokens', self.go_token_id, [1])
        initial_hypo = self._float_constant('initial_hypo', 0.0, [1])
        encoder_inputs_flat, _ = self.model.net.Reshape(
            inputs, ['encoder_inputs_flattened', 'encoder_inputs_old_shape'], shape=[-1])
        init_attention = self.model.net.ConstantFill(encoder_inputs_flat, 'init_attention', value=0.0,
                                                     dtype=core.DataType.FLOAT)
        search_states = [(initial_scores, self.scores_t_prev, scores_t),
                         (initial_tokens, self.tokens_t_prev, tokens_t),
                         (initial_hypo, self.hypo_t_prev, hypo_t),
                         (init_attention, self.attention_t_prev, attention_t)]
        state_configs = state_configs + [
            self.StateConfig(initial_value=i, state_prev_link=self.LinkConfig(prev, 0, 1),
                             state_link=self.LinkConfig(new, 1, 1))
            for i, prev, new in search_states]

        # the steps: input 0 only gives their number (length, beam, 1)
        fake_input = self.model.net.ConstantFill(length, 'beam_search_fake_input', input_as_shape=True,
                                                 extra_shape=[beam, 1], value=0.0, dtype=core.DataType.FLOAT)
        params = list(self.step_model.params)
        all_inputs = ([fake_input] + params + [c.initial_value for c in state_configs]
                      + list(data_dependencies))
        names = [str(b) for b in all_inputs]
        link_internal, link_external, link_offset, link_window, recurrent_states = [], [], [], [], []
        for c in state_configs:
            state = str(c.state_prev_link.blob) + '_states'
            recurrent_states.append(state)
            for link in (c.state_prev_link, c.state_link):
                link_internal.append(str(link.blob))
                link_external.append(state)
                link_offset.append(int(link.offset))
                link_window.append(int(link.window))
        outputs = [str(s) + '_all' for s in (scores_t, tokens_t, hypo_t, attention_t)]
        first_state = len(names) - len(data_dependencies) - len(state_configs)
        results = self.model.net.RecurrentNetwork(
            all_inputs, outputs + ['step_workspaces'],
            param=[names.index(str(p)) for p in params],
            alias_src=[str(p) + '_states' for p in (self.scores_t_prev, self.tokens_t_prev, self.hypo_t_prev,
                                                    self.attention_t_prev)],
            alias_dst=outputs, alias_offset=[0] * 4,
            recurrent_states=recurrent_states,
            # positions, not names.index(): two states may start from one blob
            initial_recurrent_state_ids=[first_state + i for i in range(len(state_configs))],
            link_internal=link_internal, link_external=link_external, link_offset=link_offset,
            link_window=link_window,
            backward_link_internal=[], backward_link_external=[], backward_link_offset=[],
            step_net=net.Proto(), timestep=str(self.timestep), outputs_with_grads=[],
            enable_rnn_executor=1, rnn_executor_debug=0)
        scores_all, tokens_all, hypo_all, attention_all = results[:4]
        out = self.model.net
        return (out.Cast(tokens_all, 'output_token_beam_list', to=core.DataType.INT32),
                out.Cast(hypo_all, 'output_prev_index_beam_list', to=core.DataType.INT32),
                out.Copy(scores_all, 'output_score_beam_list'),
                out.Copy(attention_all, 'output_attention_weights_beam_list'))
