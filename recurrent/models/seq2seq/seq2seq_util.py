"""Builders for sequence-to-sequence models: Caffe2's
``caffe2.python.models.seq2seq.seq2seq_util`` (CPU only).

Same functions, signatures, defaults, return values and blob / parameter
names as Caffe2's, so checkpoints and scripts carry over. With ``scope``
None (what train.py uses) the main blobs are::

    embedded_encoder_inputs, embedded_decoder_inputs    Gather of the embeddings
    encoder/layer<i>/initial_hidden_state, .../initial_cell_state   zeros (init net)
    encoder/layer<i>/lstm/i2h_{w,b}, .../lstm/gates_t_{w,b}          encoder LSTM layer i
    encoder/layer0/fw/..., encoder/layer0/bw/...        the bidirectional first layer
    encoder/layer0/reversed_inputs, .../outputs_bw      ReversePackedSegs
    encoder/layer0/outputs, .../final_hidden_state, .../final_cell_state   Concat (axis 2)
    decoder_initial_{hidden,cell}_state_<i>             FC or zero parameter (when needed)
    initial_attention_weighted_encoder_context          zero parameter (attention only)
    decoder/i2h_{w,b}, decoder/layer_<i>/gates_t_{w,b}  the decoder (a MultiRNNCell 'decoder')
    attention_decoder/...                               the attention cell
    decoder_outputs_flattened                           [T * N, decoder output dim]
    decoder_outputs_scaled_{w,b}                        FC when decoder_softmax_size is set
    output_projection_w, output_projection_b, output_logits

Differences from Caffe2 (each where Caffe2 failed):

- ``num_gpus`` other than 0 raises ValueError: this build has no GPUs
  (Caffe2 copied the embedded inputs to the GPU).
- the decoder's attention type may be ``'regular'``, ``'recurrent'`` or
  ``'dot'``; Caffe2's train.py allowed ``'dot'`` but seq2seq_util rejected
  it with an AssertionError. Any other type raises ValueError.
- a decoder layer config with ``dropout_keep_prob`` works (Caffe2 read it as
  an attribute of the dict and raised AttributeError).
- input blobs given as str names are not prefixed by the scopes the
  builders enter (Caffe2 made, e.g., ``encoder/layer0/lengths`` of
  ``'lengths'`` in the bidirectional layer).
"""

import collections

from ... import attention, brew, core, rnn_cell

PAD_ID = 0
PAD = '<PAD>'
GO_ID = 1
GO = '<GO>'
EOS_ID = 2
EOS = '<EOS>'
UNK_ID = 3
UNK = '<UNK>'

_ATTENTION_TYPES = {
    'regular': attention.AttentionType.Regular,
    'recurrent': attention.AttentionType.Recurrent,
    'dot': attention.AttentionType.Dot,
}


def _cpu_only(where, num_gpus):
    if num_gpus != 0:
        raise ValueError("%s: num_gpus=%r, but this build is CPU-only (no CopyCPUToGPU, no GPU "
                         "DeviceScope); use num_gpus=0" % (where, num_gpus))


def _blob(x):
    """A str blob name as a BlobReference, so that a name scope entered
    later does not prefix it (Caffe2 prefixed such names)."""
    return core.BlobReference(x) if isinstance(x, str) else x


def _join(scope, name):
    """``scope/name``, or ``name`` when scope is None or ''."""
    return scope + '/' + name if scope else name


def gen_vocab(corpus, unk_threshold):
    """The vocabulary of the text file ``corpus`` (whitespace-separated
    tokens): a defaultdict token -> id with PAD, GO, EOS, UNK first (ids
    0-3), then every token seen more than ``unk_threshold`` times, in order
    of first appearance. Looking up a missing token adds it, as in Caffe2."""
    vocab = collections.defaultdict(lambda: len(vocab))
    for special in (PAD, GO, EOS, UNK):
        vocab[special]
    counts = collections.Counter()
    with open(corpus) as f:
        for line in f:
            counts.update(line.split())
    for token, count in counts.items():
        if count > unk_threshold:
            vocab[token]
    return vocab


def get_numberized_sentence(sentence, vocab):
    """The ids of ``sentence``'s tokens; unknown tokens get ``vocab[UNK]``."""
    return [vocab[token] if token in vocab else vocab[UNK] for token in sentence.split()]


def rnn_unidirectional_layer(
    model,
    inputs,
    input_lengths,
    input_size,
    num_units,
    dropout_keep_prob,
    forward_only,
    return_sequence_output,
    return_final_state,
    scope=None,
):
    """One LSTM layer (forget bias 0) named ``<scope>/lstm`` over ``inputs``
    [T, N, input_size] with lengths ``input_lengths`` (int32 [N]), from zero
    states ``<scope>/initial_hidden_state`` / ``initial_cell_state``
    (not parameters). With ``dropout_keep_prob`` the outputs go through a
    DropoutCell ``<scope>/dropout``. ``return_sequence_output`` and
    ``return_final_state`` choose which outputs get gradients.
    Returns ``(outputs [T, N, num_units], final_hidden_state [1, N, num_units],
    final_cell_state)``."""
    with core.NameScope(scope):
        zero_states = [
            model.param_init_net.ConstantFill([], name, shape=[num_units], value=0.0)
            for name in ('initial_cell_state', 'initial_hidden_state')
        ]
    initial_cell_state, initial_hidden_state = zero_states

    cell = rnn_cell.LSTMCell(
        input_size=input_size,
        hidden_size=num_units,
        forget_bias=0.0,
        memory_optimization=False,
        name=_join(scope, 'lstm'),
        forward_only=forward_only,
    )
    if dropout_keep_prob is not None:
        cell = rnn_cell.DropoutCell(
            internal_cell=cell,
            dropout_ratio=1.0 - dropout_keep_prob,
            name=_join(scope, 'dropout'),
            forward_only=forward_only,
            is_test=False,
        )

    with_grads = ([0] if return_sequence_output else []) + ([1, 3] if return_final_state else [])
    outputs, all_states = cell.apply_over_sequence(
        model=model,
        inputs=inputs,
        seq_lengths=input_lengths,
        initial_states=(initial_hidden_state, initial_cell_state),
        outputs_with_grads=with_grads,
    )
    # all_states: (hidden_all, hidden_last, cell_all, cell_last)
    return outputs, all_states[1], all_states[3]


def rnn_bidirectional_layer(
    model,
    inputs,
    input_lengths,
    input_size,
    num_units,
    dropout_keep_prob,
    forward_only,
    return_sequence_output,
    return_final_state,
    scope=None,
):
    """Two LSTM layers, ``<scope>/fw`` over ``inputs`` and ``<scope>/bw`` over
    each sequence reversed within its length (ReversePackedSegs), whose
    outputs (reversed back) and final states are concatenated on the last
    axis: ``(outputs [T, N, 2 * num_units] or None, final_hidden_state
    [1, N, 2 * num_units] or None, final_cell_state or None)``; None for what
    ``return_sequence_output`` / ``return_final_state`` leave out."""
    inputs, input_lengths = _blob(inputs), _blob(input_lengths)
    layer_args = dict(
        model=model,
        input_lengths=input_lengths,
        input_size=input_size,
        num_units=num_units,
        dropout_keep_prob=dropout_keep_prob,
        forward_only=forward_only,
        return_sequence_output=return_sequence_output,
        return_final_state=return_final_state,
    )
    outputs_fw, hidden_fw, cell_fw = rnn_unidirectional_layer(
        inputs=inputs, scope=_join(scope, 'fw'), **layer_args)
    with core.NameScope(scope):
        reversed_inputs = model.net.ReversePackedSegs([inputs, input_lengths], ['reversed_inputs'])
    outputs_bw, hidden_bw, cell_bw = rnn_unidirectional_layer(
        inputs=reversed_inputs, scope=_join(scope, 'bw'), **layer_args)

    with core.NameScope(scope):
        outputs_bw = model.net.ReversePackedSegs([outputs_bw, input_lengths], ['outputs_bw'])
        outputs = final_hidden_state = final_cell_state = None
        if return_sequence_output:
            outputs, _ = model.net.Concat([outputs_fw, outputs_bw], ['outputs', 'outputs_dim'], axis=2)
        if return_final_state:
            final_hidden_state, _ = model.net.Concat(
                [hidden_fw, hidden_bw], ['final_hidden_state', 'final_hidden_state_dim'], axis=2)
            final_cell_state, _ = model.net.Concat(
                [cell_fw, cell_bw], ['final_cell_state', 'final_cell_state_dim'], axis=2)
    return outputs, final_hidden_state, final_cell_state


def build_embeddings(
    model,
    vocab_size,
    embedding_size,
    name,
    freeze_embeddings,
):
    """An embedding table ``name`` [vocab_size, embedding_size] filled with
    N(0, 0.1^2), a parameter unless ``freeze_embeddings``."""
    table = model.param_init_net.GaussianFill([], name, shape=[vocab_size, embedding_size], std=0.1)
    if not freeze_embeddings:
        model.params.append(table)
    return table


def get_layer_scope(scope, layer_type, i):
    """``'<scope>/<layer_type>/layer<i>'`` (no leading scope when None)."""
    return '{}/layer{}'.format(_join(scope, layer_type), i)


def _embed(model, embeddings, inputs, name, num_gpus, where, scope):
    _cpu_only(where, num_gpus)
    with core.NameScope(scope or ''):
        return model.net.Gather([_blob(embeddings), _blob(inputs)], [name])


def build_embedding_encoder(
    model,
    encoder_params,
    num_decoder_layers,
    inputs,
    input_lengths,
    vocab_size,
    embeddings,
    embedding_size,
    use_attention,
    num_gpus=0,
    forward_only=False,
    scope=None,
):
    """The encoder: the embedded ``inputs`` (int32 [T, N]) through the LSTM
    layers of ``encoder_params['encoder_layer_configs']`` (dicts with
    ``num_units`` and optionally ``dropout_keep_prob``), the first one
    bidirectional when ``encoder_params['use_bidirectional_encoder']``.
    Layer i is scoped ``get_layer_scope(scope, 'encoder', i)``; the last
    ``num_decoder_layers`` layers return their final states.

    Returns ``(encoder_outputs, weighted_encoder_outputs (None),
    final_encoder_hidden_states, final_encoder_cell_states,
    encoder_units_per_layer)``: the state lists have one entry per layer
    (None for layers whose final state is not used)."""
    embedded_inputs = _embed(model, embeddings, inputs, 'embedded_encoder_inputs', num_gpus,
                             'build_embedding_encoder', scope)
    layer_configs = encoder_params['encoder_layer_configs']
    bidirectional = encoder_params.get('use_bidirectional_encoder', False)
    num_layers = len(layer_configs)

    layer_inputs = embedded_inputs
    layer_input_size = embedding_size
    units_per_layer = []
    final_hidden_states = []
    final_cell_states = []
    for i, config in enumerate(layer_configs):
        num_units = config['num_units']
        first_bidirectional = bidirectional and i == 0
        build_layer = rnn_bidirectional_layer if first_bidirectional else rnn_unidirectional_layer
        output_dim = 2 * num_units if first_bidirectional else num_units
        units_per_layer.append(output_dim)
        last = i == num_layers - 1
        layer_outputs, final_hidden, final_cell = build_layer(
            model=model,
            inputs=layer_inputs,
            input_lengths=input_lengths,
            input_size=layer_input_size,
            num_units=num_units,
            dropout_keep_prob=config.get('dropout_keep_prob', None),
            forward_only=forward_only,
            return_sequence_output=use_attention or not last,
            return_final_state=i >= num_layers - num_decoder_layers,
            scope=get_layer_scope(scope, 'encoder', i),
        )
        final_hidden_states.append(final_hidden)
        final_cell_states.append(final_cell)
        layer_inputs, layer_input_size = layer_outputs, output_dim

    return (
        layer_inputs,
        None,
        final_hidden_states,
        final_cell_states,
        units_per_layer,
    )


class LSTMWithAttentionDecoder(object):
    """The decoder cell: a MultiRNNCell ``<name>/decoder`` of
    ``decoder_cells``, wrapped (unless ``attention_type`` is ``'none'``) in an
    AttentionCell ``<name>/attention_decoder`` over ``encoder_outputs``.
    ``attention_type``: ``'none'``, ``'regular'``, ``'recurrent'`` or
    ``'dot'``. ``vocab_size`` and ``embedding_size`` are accepted as in Caffe2
    and unused."""

    def scope(self, name):
        return _join(self.name, name) if self.name is not None else name

    def _get_attention_type(self, attention_type_as_string):
        if attention_type_as_string not in _ATTENTION_TYPES:
            raise ValueError("LSTMWithAttentionDecoder: unknown attention type %r (expected 'none', %s)"
                             % (attention_type_as_string,
                                ", ".join(repr(k) for k in _ATTENTION_TYPES)))
        return _ATTENTION_TYPES[attention_type_as_string]

    def __init__(
        self,
        encoder_outputs,
        encoder_output_dim,
        encoder_lengths,
        vocab_size,
        attention_type,
        embedding_size,
        decoder_num_units,
        decoder_cells,
        residual_output_layers=None,
        name=None,
        weighted_encoder_outputs=None,
    ):
        self.name = name
        self.num_layers = len(decoder_cells)
        stack = rnn_cell.MultiRNNCell(
            decoder_cells,
            name=self.scope('decoder'),
            residual_output_layers=residual_output_layers,
        )
        self.use_attention = attention_type != 'none'
        # the states whose sequence outputs feed the loss
        self.output_indices = list(stack.output_indices)
        if not self.use_attention:
            self.cell = stack
            self.decoder_output_dim = decoder_num_units
            return
        self.cell = rnn_cell.AttentionCell(
            encoder_output_dim=encoder_output_dim,
            encoder_outputs=encoder_outputs,
            encoder_lengths=encoder_lengths,
            decoder_cell=stack,
            decoder_state_dim=decoder_num_units,
            name=self.scope('attention_decoder'),
            attention_type=self._get_attention_type(attention_type),
            weighted_encoder_outputs=weighted_encoder_outputs,
            attention_memory_optimization=True,
        )
        self.decoder_output_dim = decoder_num_units + encoder_output_dim
        # the attention context: the state after the layers' (hidden, cell) pairs
        self.output_indices.append(2 * self.num_layers)

    def get_state_names(self):
        return self.cell.get_state_names()

    def get_outputs_with_grads(self):
        # recurrent_net lists (all, last) per state: a state's sequence is at 2 * index
        return [2 * i for i in self.output_indices]

    def get_output_dim(self):
        return self.decoder_output_dim

    def get_attention_weights(self):
        """The step's attention weights [N, T_enc, 1] (attention decoders only)."""
        if not self.use_attention:
            raise ValueError("LSTMWithAttentionDecoder.get_attention_weights: this decoder has no "
                             "attention (attention_type 'none')")
        return self.cell.get_attention_weights()

    def apply(
        self,
        model,
        input_t,
        seq_lengths,
        states,
        timestep,
    ):
        return self.cell.apply(model=model, input_t=input_t, seq_lengths=seq_lengths, states=states,
                               timestep=timestep)

    def apply_over_sequence(
        self,
        model,
        inputs,
        seq_lengths,
        initial_states,
    ):
        return self.cell.apply_over_sequence(
            model=model,
            inputs=inputs,
            seq_lengths=seq_lengths,
            initial_states=initial_states,
            outputs_with_grads=self.get_outputs_with_grads(),
        )


def _initial_decoder_state(model, encoder_states, k, encoder_dim, decoder_dim, name):
    """Decoder layer's initial state from the encoder's final state
    ``encoder_states[k]``: that blob when the sizes agree, an FC of it when
    they differ, a zero parameter ``name`` when there is none."""
    source = encoder_states[k] if encoder_states and k < len(encoder_states) else None
    if source is None:
        state = model.param_init_net.ConstantFill([], name, shape=[decoder_dim], value=0.0)
        model.params.append(state)
        return state
    if decoder_dim != encoder_dim:
        return brew.fc(model, source, name, encoder_dim, decoder_dim, axis=2)
    return source


def build_initial_rnn_decoder_states(
    model,
    encoder_units_per_layer,
    decoder_units_per_layer,
    final_encoder_hidden_states,
    final_encoder_cell_states,
    use_attention,
):
    """The decoder's initial states, ``[h_0, c_0, h_1, c_1, ...]`` plus, with
    attention, the zero parameter ``initial_attention_weighted_encoder_context``
    [encoder_units_per_layer[-1]]. Decoder layer i starts from the final
    states of encoder layer ``i + max(0, #encoder - #decoder layers)``
    (see ``_initial_decoder_state``); its blobs are named
    ``decoder_initial_hidden_state_<i>`` / ``decoder_initial_cell_state_<i>``."""
    offset = max(0, len(encoder_units_per_layer) - len(decoder_units_per_layer))
    states = []
    for i, decoder_dim in enumerate(decoder_units_per_layer):
        k = i + offset
        encoder_dim = encoder_units_per_layer[k] if k < len(encoder_units_per_layer) else None
        for kind, encoder_states in (('hidden', final_encoder_hidden_states),
                                     ('cell', final_encoder_cell_states)):
            states.append(_initial_decoder_state(
                model, encoder_states, k, encoder_dim, decoder_dim,
                'decoder_initial_{}_state_{}'.format(kind, i)))
    if use_attention:
        context = model.param_init_net.ConstantFill(
            [], 'initial_attention_weighted_encoder_context', shape=[encoder_units_per_layer[-1]],
            value=0.0)
        model.params.append(context)
        states.append(context)
    return states


def build_embedding_decoder(
    model,
    decoder_layer_configs,
    inputs,
    input_lengths,
    encoder_lengths,
    encoder_outputs,
    weighted_encoder_outputs,
    final_encoder_hidden_states,
    final_encoder_cell_states,
    encoder_units_per_layer,
    vocab_size,
    embeddings,
    embedding_size,
    attention_type,
    forward_only,
    num_gpus=0,
    scope=None,
):
    """The decoder over the embedded ``inputs`` (int32 [T, N]): LSTM layers
    of ``decoder_layer_configs`` (``num_units``, optional
    ``dropout_keep_prob``) in an LSTMWithAttentionDecoder named ``scope``,
    started by ``build_initial_rnn_decoder_states``. Returns
    ``(decoder_outputs_flattened [T * N, output dim], output dim)``; the
    output dim is the last layer's units, plus the encoder output dim with
    attention."""
    embedded_inputs = _embed(model, embeddings, inputs, 'embedded_decoder_inputs', num_gpus,
                             'build_embedding_decoder', scope)
    cells = []
    units_per_layer = []
    for i, config in enumerate(decoder_layer_configs):
        units_per_layer.append(config['num_units'])
        cell = rnn_cell.LSTMCell(
            forward_only=forward_only,
            input_size=embedding_size if i == 0 else cells[-1].get_output_dim(),
            hidden_size=config['num_units'],
            forget_bias=0.0,
            memory_optimization=False,
        )
        keep_prob = config.get('dropout_keep_prob', None)
        if keep_prob is not None:
            cell = rnn_cell.DropoutCell(
                internal_cell=cell,
                dropout_ratio=1.0 - keep_prob,
                forward_only=forward_only,
                is_test=False,
                name=get_layer_scope(scope, 'decoder_dropout', i),
            )
        cells.append(cell)

    initial_states = build_initial_rnn_decoder_states(
        model=model,
        encoder_units_per_layer=encoder_units_per_layer,
        decoder_units_per_layer=units_per_layer,
        final_encoder_hidden_states=final_encoder_hidden_states,
        final_encoder_cell_states=final_encoder_cell_states,
        use_attention=(attention_type != 'none'),
    )
    decoder = LSTMWithAttentionDecoder(
        encoder_outputs=encoder_outputs,
        encoder_output_dim=encoder_units_per_layer[-1],
        encoder_lengths=encoder_lengths,
        vocab_size=vocab_size,
        attention_type=attention_type,
        embedding_size=embedding_size,
        decoder_num_units=units_per_layer[-1],
        decoder_cells=cells,
        weighted_encoder_outputs=weighted_encoder_outputs,
        name=scope,
    )
    outputs, _ = decoder.apply_over_sequence(
        model=model,
        inputs=embedded_inputs,
        seq_lengths=input_lengths,
        initial_states=initial_states,
    )
    # one softmax row per (step, sequence)
    output_dim = decoder.get_output_dim()
    flattened, _ = model.net.Reshape(
        [outputs],
        ['decoder_outputs_flattened', 'decoder_outputs_and_contexts_combination_old_shape'],
        shape=[-1, output_dim],
    )
    return (flattened, output_dim)


def output_projection(
    model,
    decoder_outputs,
    decoder_output_size,
    target_vocab_size,
    decoder_softmax_size,
):
    """The logits ``output_logits`` [rows, target_vocab_size] of
    ``decoder_outputs`` [rows, decoder_output_size], through an FC
    ``decoder_outputs_scaled`` to ``decoder_softmax_size`` first when that
    is not None. ``output_projection_w`` / ``_b`` are Xavier-filled (the
    bias too, as in Caffe2) parameters."""
    if decoder_softmax_size is not None:
        decoder_outputs = brew.fc(model, decoder_outputs, 'decoder_outputs_scaled',
                                  dim_in=decoder_output_size, dim_out=decoder_softmax_size)
        decoder_output_size = decoder_softmax_size
    weight = model.param_init_net.XavierFill(
        [], 'output_projection_w', shape=[target_vocab_size, decoder_output_size])
    bias = model.param_init_net.XavierFill([], 'output_projection_b', shape=[target_vocab_size])
    model.params.extend([weight, bias])
    return model.net.FC([decoder_outputs, weight, bias], ['output_logits'])
