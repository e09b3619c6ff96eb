"""A linear-chain CRF loss on top of a RecurrentNetwork, as Caffe2's ``caffe2.python.crf``.

``CRFWithLoss(model, num_classes, transitions_blob=None)`` adds to ``model`` the negative log-likelihood of
a tag sequence under a linear-chain conditional random field:

    loss = log(sum over all tag paths of exp(score(path))) - score(labels)

where score(path) = sum_t predictions[t, path[t]] + sum_t transitions[path[t], path[t + 1]], taken over the
sequence padded with a begin tag (index ``num_classes``) in front and an end tag (``num_classes + 1``)
behind, as Caffe2's layer pads it. The first term (the partition function) is the forward algorithm, run as
a ``RecurrentNetwork`` whose step net adds the previous step's scores, the transitions and the step's
predictions and reduces with ``SortedSegmentRangeLogSumExp``; its gradient is the recurrent net's.

As Caffe2's, the layer takes one sequence at a time: ``predictions`` is (T, num_classes) float32 (batch
size 1), ``labels`` (T,) integer (int32 here; Caffe2's int64 labels are cast to int32, range-checked).
``transitions`` is (num_classes + 2, num_classes + 2) float32, created by ``param_init_net`` (UniformFill
in [-1, 1], blob ``crf_transitions`` in the current name scope) unless given, and appended to
``model.params``. ``seq_lengths`` is accepted and unused, as in Caffe2.

``update_predictions(classes)`` returns ``classes`` (T, num_classes) with, at each step, the score of the
Viterbi path's tag and the step's best-scoring tag swapped, so that an argmax over each row reads the
Viterbi path (``crf_predict.apply_crf``: the ``ViterbiPath`` and ``SwapBestPath`` ops; Caffe2's version
ran the same computation as a Python op).
"""

import numpy as np

from . import brew, core, model_helper, recurrent

# the score that makes the padding tags impossible where they do not belong (Caffe2's value)
LOW_SCORE = -1000.0


class CRFWithLoss:
    """Caffe2's ``crf.CRFWithLoss``: see the module docstring."""

    def __init__(self, model, num_classes, transitions_blob=None):
        self.model = model
        self.num_classes = num_classes
        self.num_classes_padded = num_classes + 2  # the begin and end tags
        if not transitions_blob:
            n = self.num_classes_padded
            transitions_blob = model.param_init_net.UniformFill(
                [], [core.ScopedBlobReference("crf_transitions")], shape=[n, n], min=-1.0, max=1.0)
        self.transitions = transitions_blob
        model.params.append(self.transitions)

    # ---------------------------------------------------------------- the loss
    def crf_loss(self, predictions, labels, seq_lengths=None):
        """The scalar loss blob: log partition function minus the labelled path's score."""
        net, init_net = self.model.net, self.model.param_init_net
        # one copy of the transitions for the whole loss: an optimizer may update the parameter blob
        # while ops of this net still read it
        transitions = net.Copy(self.transitions, core.ScopedBlobReference("transitions_snapshot"))
        unary = self._labelled_unary_score(predictions, labels)
        padded = CRFWithLoss.pad_predictions(predictions, init_net, net, self.num_classes)
        padded_labels = CRFWithLoss.pad_labels(labels, init_net, net, self.num_classes)
        binary = self._path_binary_scores(padded_labels, transitions, seq_lengths)
        path_score = net.Add([binary, unary], core.ScopedBlobReference("path_total"))

        first = init_net.ConstantFill([], shape=[1], value=0)
        initial_state = net.Gather([padded, first], core.ScopedBlobReference("rnn_initial"),
                                   dense_gradient=True)
        steps, _ = net.RemovePadding([padded], padding_width=1, end_padding_width=0, outputs=2)
        steps = net.ExpandDims([steps], core.ScopedBlobReference("rnn_input_data"), dims=[1])
        # the recurrent net gets a transitions blob of its own (Caffe2 did this for its gradient op)
        transitions_rnn = net.Copy(transitions, core.ScopedBlobReference("transitions_copy"))
        log_partition = self._crf_forward(steps, initial_state, transitions_rnn)
        return net.Sub([log_partition, path_score], core.ScopedBlobReference("crf_loss"))

    def _labelled_unary_score(self, predictions, labels):
        """sum_t predictions[t, labels[t]] (a 0-d blob), as a one-hot mask dotted with the scores."""
        net = self.model.net
        labels = net.Cast([labels], to="int64")
        size = self.model.param_init_net.ConstantFill([], shape=[1], value=self.num_classes)
        mask = net.FlattenToVec(net.OneHot([labels, size]))
        picked = net.DotProduct([mask, net.FlattenToVec(predictions)])
        return net.ReduceFrontSum([picked])

    def _path_binary_scores(self, labels, transitions, seq_lengths=None):
        """sum_t transitions[labels[t], labels[t + 1]] over the padded labels (a 0-d blob): the flat
        indices labels[t] * (num_classes + 2) + labels[t + 1] gathered from the flattened matrix."""
        net = self.model.net
        to, _ = net.RemovePadding([labels], outputs=2, padding_width=1, end_padding_width=0)
        frm, _ = net.RemovePadding([labels], outputs=2, padding_width=0, end_padding_width=1)
        width = net.ConstantFill([frm], value=self.num_classes_padded)
        flat = net.Add([net.Mul([frm, width]), to])
        entries = net.Gather([net.FlattenToVec([transitions]), flat], dense_gradient=True)
        return self.model.ReduceFrontSum(entries)

    def _crf_forward(self, input_blob, initial_state, transitions, seq_lengths=None):
        """log sum_tags exp(the forward algorithm's last state): the log partition function (0-d)."""
        net, n = self.model.net, self.num_classes_padded
        last = self.build_crf_net(input_blob, initial_state, transitions)
        last, _ = net.Reshape([last], outputs=2, shape=(n,))
        one_segment = self.model.param_init_net.ConstantFill([], value=0, shape=[n],
                                                              dtype=core.DataType.INT32)
        total = net.SortedSegmentRangeLogSumExp([last, one_segment])
        total, _ = net.Reshape(total, outputs=2, shape=())
        return total

    def build_crf_net(self, input_blob, initial_state, transitions):
        """Adds the forward algorithm as a RecurrentNetwork op to ``self.model.net`` and returns its last
        state, (1, 1, num_classes + 2).

        ``input_blob``: (T, 1, num_classes + 2) scores, one step each (batch size 1);
        ``initial_state``: (1, num_classes + 2); ``transitions``: (num_classes + 2, num_classes + 2).
        Step: cell_t[j] = log sum_i exp(cell_t_prev[i] + transitions[i, j] + input_t[j]).
        """
        scope = "crf_net"
        n = self.num_classes_padded

        def s(name):
            return "%s/%s" % (scope, name)

        step = model_helper.ModelHelper(name="crf_step", param_model=self.model)
        input_t, cell_t_prev, _ = step.net.AddExternalInputs(
            core.ScopedBlobReference("input_t"), core.ScopedBlobReference("cell_t_prev"), transitions)
        one_segment = step.param_init_net.ConstantFill([], [s("zero_segment_id")], value=0, shape=[n],
                                                       dtype=core.DataType.INT32)
        step.param_init_net.AddExternalOutput(one_segment)
        # scores[i, j] = cell_t_prev[i] + input_t[j] (both tiled to n x n), + transitions[i, j]
        prev_col = brew.transpose(step, cell_t_prev, [s("prev_transpose")], axes=(0, 2, 1))
        prev_tiled = step.net.Tile(prev_col, [s("prev_tiled")], tiles=n, axis=2)
        input_tiled = step.net.Tile(input_t, [s("input_t_tiled")], tiles=n, axis=1)
        scores = step.net.Add([prev_tiled, input_tiled], [s("input_with_prev")])
        scores = step.net.Add([scores, transitions], [s("prev_with_transitions")], broadcast=1,
                              use_grad_hack=1)
        scores, _ = step.net.Reshape(scores, [s("all_with_transitions_reshaped"),
                                              s("all_with_transitions_orig")], shape=(n, n))
        # one segment holding all n rows: log-sum-exp over i for each j
        cell_t = step.net.SortedSegmentRangeLogSumExp([scores, one_segment], [s("cell_t")])
        step.net.AddExternalOutputs(cell_t)
        _, last = recurrent.recurrent_net(
            net=self.model.net, cell_net=step.net, inputs=[(input_t, input_blob)],
            initial_cell_inputs=[(cell_t_prev, initial_state)], links={cell_t_prev: cell_t},
            scope=scope, outputs_with_grads=(1,))
        return last

    # ---------------------------------------------------------------- prediction
    def update_predictions(self, classes):
        """``classes`` (T, num_classes) with each step's Viterbi tag given the step's best score
        (``crf_predict.apply_crf`` on this layer's transitions)."""
        from .crf_predict import apply_crf
        return apply_crf(self.model.param_init_net, self.model.net, self.transitions, classes,
                         self.num_classes)

    # ---------------------------------------------------------------- padding
    @staticmethod
    def pad_labels(labels, init_net, net, num_classes):
        """[begin tag] + labels + [end tag] (int32, T + 2)."""
        begin = init_net.ConstantFill([], shape=[1], value=num_classes)
        end = init_net.ConstantFill([], shape=[1], value=num_classes + 1)
        labels = net.Cast([labels], to="int64")
        padded, _ = net.Concat([begin, labels, end], axis=0, outputs=2)
        return padded

    @staticmethod
    def pad_predictions(predictions, init_net, net, num_classes):
        """predictions (T, num_classes) -> (T + 2, num_classes + 2): two columns of LOW_SCORE for the
        begin and end tags, a first row where only the begin tag scores (0) and a last row where only
        the end tag does."""
        n = num_classes + 2
        begin_row = np.full((1, n), LOW_SCORE, np.float32)
        begin_row[0, num_classes] = 0.0
        end_row = np.full((1, n), LOW_SCORE, np.float32)
        end_row[0, num_classes + 1] = 0.0
        begin_row = init_net.GivenTensorFill([], "b_scores", shape=[1, n], values=begin_row)
        end_row = init_net.GivenTensorFill([], "e_scores", shape=[1, n], values=end_row)
        first = net.ConstantFill([], shape=[1], value=0)
        steps = net.Cast(net.Gather([net.Shape([predictions]), first]), to="int32")
        column = net.ExpandDims(net.ConstantFill([net.LengthsRangeFill(steps)], value=LOW_SCORE), dims=[1])
        wide, _ = net.Concat([predictions, column, column], outputs=2, axis=1)
        padded, _ = net.Concat([begin_row, wide, end_row], outputs=2, axis=0)
        return padded
