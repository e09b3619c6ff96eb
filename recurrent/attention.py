"""Attention mechanisms for decoder cells (Caffe2's ``caffe2.python.attention``).

Each ``apply_*_attention`` adds, to a step model, the ops computing one
decoder step's attention over the encoder outputs and returns
``(attention_weighted_encoder_context, attention_weights_3d, blobs)``, where
``blobs`` lists the intermediates ``attention_memory_optimization`` may
recompute on the backward pass. Shapes (T_enc encoder steps, N the batch):

- ``encoder_outputs_transposed``: [N, encoder_output_dim, T_enc];
- ``weighted_encoder_outputs``: [T_enc, N, encoder_output_dim];
- ``decoder_hidden_state_t``: [1, N, decoder_hidden_state_dim];
- the context returned: [1, N, encoder_output_dim]; the weights [N, T_enc, 1].

``encoder_lengths`` (int32 [N], optional) masks the encoder steps past each
sequence's length before the softmax (SequenceMask, fill -inf: a length of 0
gives NaN weights, as in Caffe2). Blob names are Caffe2's, under ``scope``.
"""

from . import brew


class AttentionType:
    Regular, Recurrent, Dot, SoftCoverage = tuple(range(4))


def s(scope, name):
    """``<scope>/<name>``: attention blobs are scoped by hand, as in Caffe2."""
    return "{}/{}".format(str(scope), str(name))


def _calc_weighted_context(model, encoder_outputs_transposed, encoder_output_dim, attention_weights_3d,
                           scope):
    # [N, D_enc, T_enc] x [N, T_enc, 1] -> [N, D_enc, 1] -> [1, N, D_enc]
    context = brew.batch_mat_mul(model, [encoder_outputs_transposed, attention_weights_3d],
                                 s(scope, "attention_weighted_encoder_context"))
    context, _ = model.net.Reshape(
        context, [context, s(scope, "attention_weighted_encoder_context_old_shape")],
        shape=[1, -1, encoder_output_dim])
    return context


def _calc_attention_weights(model, attention_logits_transposed, scope, encoder_lengths=None):
    if encoder_lengths is not None:
        attention_logits_transposed = model.net.SequenceMask(
            [attention_logits_transposed, encoder_lengths], ["masked_attention_logits"], mode="sequence")
    # softmax over the encoder steps: [N, T_enc, 1]
    return brew.softmax(model, attention_logits_transposed, s(scope, "attention_weights_3d"), axis=1)


def _calc_attention_logits_from_sum_match(model, decoder_hidden_encoder_outputs_sum, encoder_output_dim,
                                          scope):
    # e = v^T tanh(sum): [T_enc, N, D_enc] -> [T_enc, N, 1] -> [N, T_enc, 1]
    summed = model.net.Tanh(decoder_hidden_encoder_outputs_sum, decoder_hidden_encoder_outputs_sum)
    logits = brew.fc(model, summed, s(scope, "attention_logits"), dim_in=encoder_output_dim, dim_out=1,
                     axis=2, freeze_bias=True)
    return brew.transpose(model, logits, s(scope, "attention_logits_transposed"), axes=[1, 0, 2])


def _attend_sum_match(model, summed, encoder_output_dim, encoder_outputs_transposed, scope,
                      encoder_lengths):
    """The context and weights from the additive match ``summed`` [T_enc, N, D_enc]."""
    logits = _calc_attention_logits_from_sum_match(model, summed, encoder_output_dim, scope)
    weights = _calc_attention_weights(model, logits, scope, encoder_lengths)
    context = _calc_weighted_context(model, encoder_outputs_transposed, encoder_output_dim, weights, scope)
    return context, weights


def _apply_fc_weight_for_sum_match(model, input, dim_in, dim_out, scope, name):
    # [1, N, dim_in] -> [N, dim_out]
    output = brew.fc(model, input, s(scope, name), dim_in=dim_in, dim_out=dim_out, axis=2)
    return model.net.Squeeze(output, output, dims=[0])


def apply_recurrent_attention(model, encoder_output_dim, encoder_outputs_transposed, weighted_encoder_outputs,
                              decoder_hidden_state_t, decoder_hidden_state_dim,
                              attention_weighted_encoder_context_t_prev, scope, encoder_lengths=None):
    """Recurrent attention (arXiv 1601.03317, section 4.1): the previous
    context also enters the match."""
    weighted_prev_context = _apply_fc_weight_for_sum_match(
        model, attention_weighted_encoder_context_t_prev, encoder_output_dim, encoder_output_dim, scope,
        "weighted_prev_attention_context")
    weighted_hidden = _apply_fc_weight_for_sum_match(
        model, decoder_hidden_state_t, decoder_hidden_state_dim, encoder_output_dim, scope,
        "weighted_decoder_hidden_state")
    sum_tmp = model.net.Add([weighted_prev_context, weighted_hidden],
                            s(scope, "decoder_hidden_encoder_outputs_sum_tmp"))
    summed = model.net.Add([weighted_encoder_outputs, sum_tmp],
                           s(scope, "decoder_hidden_encoder_outputs_sum"), broadcast=1)
    context, weights = _attend_sum_match(model, summed, encoder_output_dim, encoder_outputs_transposed, scope,
                                         encoder_lengths)
    return context, weights, [summed]


def apply_regular_attention(model, encoder_output_dim, encoder_outputs_transposed, weighted_encoder_outputs,
                            decoder_hidden_state_t, decoder_hidden_state_dim, scope, encoder_lengths=None):
    """Additive attention (arXiv 1409.0473): e_j = v^T tanh(W s_j + U h)."""
    weighted_hidden = _apply_fc_weight_for_sum_match(
        model, decoder_hidden_state_t, decoder_hidden_state_dim, encoder_output_dim, scope,
        "weighted_decoder_hidden_state")
    summed = model.net.Add([weighted_encoder_outputs, weighted_hidden],
                           s(scope, "decoder_hidden_encoder_outputs_sum"), broadcast=1)
    context, weights = _attend_sum_match(model, summed, encoder_output_dim, encoder_outputs_transposed, scope,
                                         encoder_lengths)
    return context, weights, [summed]


def apply_dot_attention(model, encoder_output_dim, encoder_outputs_transposed, decoder_hidden_state_t,
                        decoder_hidden_state_dim, scope, encoder_lengths=None):
    """Dot-product attention (arXiv 1508.04025): e_j = s_j . h, with h first
    projected to encoder_output_dim when the dimensions differ."""
    if decoder_hidden_state_dim != encoder_output_dim:
        weighted_hidden = brew.fc(model, decoder_hidden_state_t, s(scope, "weighted_decoder_hidden_state"),
                                  dim_in=decoder_hidden_state_dim, dim_out=encoder_output_dim, axis=2)
    else:
        weighted_hidden = decoder_hidden_state_t
    # [1, N, D_enc] -> [N, D_enc] -> [N, D_enc, 1]
    squeezed = model.net.Squeeze(weighted_hidden, s(scope, "squeezed_weighted_decoder_hidden_state"),
                                 dims=[0])
    expanded = model.net.ExpandDims(squeezed, squeezed, dims=[2])
    # [N, D_enc, T_enc]^T x [N, D_enc, 1] -> [N, T_enc, 1]
    logits = model.net.BatchMatMul([encoder_outputs_transposed, expanded], s(scope, "attention_logits"),
                                   trans_a=1)
    weights = _calc_attention_weights(model, logits, scope, encoder_lengths)
    context = _calc_weighted_context(model, encoder_outputs_transposed, encoder_output_dim, weights, scope)
    return context, weights, []


def apply_soft_coverage_attention(model, encoder_output_dim, encoder_outputs_transposed,
                                  weighted_encoder_outputs, decoder_hidden_state_t, decoder_hidden_state_dim,
                                  scope, encoder_lengths, coverage_t_prev, coverage_weights):
    """Additive attention with soft coverage: the attention weights summed
    over the previous steps (``coverage_t_prev``, [1, N, T_enc]) scale a
    second projection of the encoder outputs (``coverage_weights``,
    [T_enc, N, D_enc]) that enters the match. Also returns the new coverage."""
    weighted_hidden = _apply_fc_weight_for_sum_match(
        model, decoder_hidden_state_t, decoder_hidden_state_dim, encoder_output_dim, scope,
        "weighted_decoder_hidden_state")
    summed = model.net.Add([weighted_encoder_outputs, weighted_hidden],
                           s(scope, "decoder_hidden_encoder_outputs_sum"), broadcast=1)
    # [1, N, T_enc] -> [N, T_enc] -> [T_enc, N]
    coverage_2d = model.net.Squeeze(coverage_t_prev, s(scope, "coverage_t_prev_2d"), dims=[0])
    coverage_transposed = brew.transpose(model, coverage_2d, s(scope, "coverage_t_prev_transposed"))
    scaled = model.net.Mul([coverage_weights, coverage_transposed], s(scope, "scaled_coverage_weights"),
                           broadcast=1, axis=0)
    summed = model.net.Add([summed, scaled], summed)
    context, weights = _attend_sum_match(model, summed, encoder_output_dim, encoder_outputs_transposed, scope,
                                         encoder_lengths)
    weights_2d = model.net.Squeeze(weights, s(scope, "attention_weights_2d"), dims=[2])
    coverage_t = model.net.Add([coverage_t_prev, weights_2d], s(scope, "coverage_t"), broadcast=1)
    return context, weights, [summed], coverage_t


__all__ = ["AttentionType", "apply_recurrent_attention", "apply_regular_attention", "apply_dot_attention",
           "apply_soft_coverage_attention", "s"]
