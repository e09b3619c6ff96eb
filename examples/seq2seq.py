"""A sequence-to-sequence model trained the way Caffe2's
``caffe2/python/models/seq2seq/train.py`` trains it (CPU path), on a
generated task: output each sequence of random tokens reversed.

The model comes from ``recurrent.models.seq2seq.seq2seq_util`` (an LSTM
encoder, optionally bidirectional in its first layer, an LSTM decoder with
or without attention, an output projection), its parameters from
``Seq2SeqModelHelper.AddParam`` and the embedding tables; the update is
train.py's: the gradients' global norm clipped to ``--max_gradient_norm``,
``WeightedSum`` for the dense parameters and ``ScatterWeightedSum`` for the
rows of the embeddings that the batch used (their gradients are
GradientSlices). Every step trains on a fresh batch. A forward-only net built the same way reports the loss on
held-out batches, with the share of target tokens the model predicts right
(teacher forcing: the decoder reads the true previous token).

Then the parameters are saved as train.py saves them (``Save`` to a minidb
checkpoint, ``--checkpoint``, by default a temporary file) and, as Caffe2's
``translate.py`` decodes, a beam search (``Seq2SeqModelCaffe2EnsembleDecoder``,
``--beam_size``) in a workspace of its own loads them (``load_models``) and
outputs ``--decode`` held-out sequences token by token (no teacher forcing);
the share it gets exactly right (the reversed sequence, then EOS) is printed.

    python examples/seq2seq.py                          # a few seconds: attention, 3000 steps
    python examples/seq2seq.py --attention none --bidirectional --steps 3000
"""
import argparse
import math
import os
import tempfile
import time

import numpy as np

from recurrent import core, workspace
from recurrent.models.seq2seq import seq2seq_util
from recurrent.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper
from recurrent.models.seq2seq.translate import Seq2SeqModelCaffe2EnsembleDecoder
from recurrent.proto import caffe2_pb2

FEEDS = ["encoder_inputs", "encoder_lengths", "decoder_inputs", "decoder_lengths", "targets",
         "target_weights"]
FIRST_TOKEN = 4  # ids 0-3 are PAD, GO, EOS, UNK


def make_batch(pairs):
    """Time-major int32 / float32 arrays of (source, target) id lists, as
    train.py's prepare_batch lays them out: the source reversed and padded,
    the decoder reading GO + target, the targets target + EOS, weight 1 on
    every real target position."""
    pad, go, eos = seq2seq_util.PAD_ID, seq2seq_util.GO_ID, seq2seq_util.EOS_ID
    src_len = max(len(s) for s, _ in pairs)
    tgt_len = max(len(t) for _, t in pairs)
    columns = {name: [] for name in FEEDS}
    for source, target in pairs:
        columns["encoder_inputs"].append(source[::-1] + [pad] * (src_len - len(source)))
        columns["encoder_lengths"].append(len(source))
        columns["decoder_inputs"].append([go] + target + [pad] * (tgt_len - len(target)))
        columns["decoder_lengths"].append(len(target) + 1)
        padded = target + [eos] + [pad] * (tgt_len - len(target))
        columns["targets"].append(padded)
        columns["target_weights"].append([float(tok != pad) for tok in padded])
    batch = {}
    for name, rows in columns.items():
        arr = np.array(rows, np.float32 if name == "target_weights" else np.int32)
        batch[name] = arr if arr.ndim == 1 else np.ascontiguousarray(arr.T)
    return batch


def reversal_task(rng, num_batches, batch_size, vocab_size, max_length):
    batches = []
    for _ in range(num_batches):
        pairs = []
        for _ in range(batch_size):
            source = rng.randint(FIRST_TOKEN, vocab_size, rng.randint(1, max_length + 1)).tolist()
            pairs.append((source, source[::-1]))
        batches.append(make_batch(pairs))
    return batches


class Seq2Seq:
    """train.py's Seq2SeqModelCaffe2 with num_gpus=0."""

    def __init__(self, params, source_vocab_size, target_vocab_size):
        self.params = params
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size

    def _shared(self, model):
        with core.DeviceScope(core.DeviceOption(caffe2_pb2.CPU)):
            self.learning_rate = model.AddParam(
                name="learning_rate", init_value=float(self.params["learning_rate"]), trainable=False)
            self.global_step = model.AddParam(name="global_step", init_value=0, trainable=False)

    def _embeddings(self, model):
        bound = math.sqrt(3)
        width = self.params["embedding_size"]
        tables = []
        for name, rows in (("encoder_embeddings", self.source_vocab_size),
                           ("decoder_embeddings", self.target_vocab_size)):
            table = model.param_init_net.UniformFill([], name, shape=[rows, width], min=-bound, max=bound)
            model.params.append(table)
            tables.append(table)
        self.encoder_embeddings, self.decoder_embeddings = tables

    def _loss(self, model):
        feeds = [model.net.AddExternalInput(workspace.GetNameScope() + name) for name in FEEDS]
        encoder_inputs, encoder_lengths, decoder_inputs, decoder_lengths, targets, weights = feeds
        p = self.params
        decoder_configs = [dict(num_units=p["units"])] * p["decoder_layers"]
        encoder = seq2seq_util.build_embedding_encoder(
            model=model,
            encoder_params=dict(encoder_layer_configs=[dict(num_units=p["units"])] * p["encoder_layers"],
                                use_bidirectional_encoder=p["bidirectional"]),
            num_decoder_layers=len(decoder_configs), inputs=encoder_inputs, input_lengths=encoder_lengths,
            vocab_size=self.source_vocab_size, embeddings=self.encoder_embeddings,
            embedding_size=p["embedding_size"], use_attention=(p["attention"] != "none"))
        outputs, weighted_outputs, final_hidden, final_cell, units_per_layer = encoder
        decoder_outputs, decoder_output_size = seq2seq_util.build_embedding_decoder(
            model, decoder_layer_configs=decoder_configs, inputs=decoder_inputs,
            input_lengths=decoder_lengths, encoder_lengths=encoder_lengths, encoder_outputs=outputs,
            weighted_encoder_outputs=weighted_outputs, final_encoder_hidden_states=final_hidden,
            final_encoder_cell_states=final_cell, encoder_units_per_layer=units_per_layer,
            vocab_size=self.target_vocab_size, embeddings=self.decoder_embeddings,
            embedding_size=p["embedding_size"], attention_type=p["attention"], forward_only=False)
        logits = seq2seq_util.output_projection(
            model=model, decoder_outputs=decoder_outputs, decoder_output_size=decoder_output_size,
            target_vocab_size=self.target_vocab_size, decoder_softmax_size=None)
        targets, _ = model.net.Reshape([targets], ["targets", "targets_old_shape"], shape=[-1])
        weights, _ = model.net.Reshape([weights], ["target_weights", "target_weights_old_shape"], shape=[-1])
        _, per_word = model.net.SoftmaxWithLoss([logits, targets, weights],
                                                ["OutputProbs_INVALID", "loss_per_word"], only_loss=True)
        num_words = model.net.SumElements([weights], "num_words")
        total = model.net.Mul([per_word, num_words], "total_loss_scalar")
        return [model.net.Scale([total], "total_loss_scalar_weighted", scale=1.0 / p["batch_size"])]

    def _clipped_update(self, model, sparse, scope):
        """param -= learning_rate * min(1, max_norm / global_norm) * grad over
        the dense (sparse=False) or the sliced (sparse=True) gradients."""
        params = [param for param in model.GetParams(top_scope=True) if param in model.param_to_grad
                  and isinstance(model.param_to_grad[param], core.GradientSlice) == sparse]
        if not params:
            return
        one = model.param_init_net.ConstantFill([], "ONE", shape=[1], value=1.0)
        with core.NameScope(scope):
            squared_sums = []
            for i, param in enumerate(params):
                grad = model.param_to_grad[param]
                values = grad.values if sparse else grad
                squared = model.net.Sqr([values], "grad_{}_squared".format(i))
                squared_sums.append(model.net.SumElements(squared, "grad_{}_squared_sum".format(i)))
            total = model.net.Sum(squared_sums, "grad_squared_full_sum")
            norm = model.net.Pow(total, "global_norm", exponent=0.5)
            clip = model.param_init_net.ConstantFill([], "clip_norm", shape=[],
                                                     value=float(self.params["max_gradient_norm"]))
            ratio = model.net.Div([clip, model.net.Max([norm, clip], "max_norm")], "norm_ratio")
        for param in params:
            grad = model.param_to_grad[param]
            negative_lr = model.net.Negative([self.learning_rate], "negative_learning_rate")
            with core.NameScope(scope):
                coeff = model.net.Mul([negative_lr, ratio], "update_coeff", broadcast=1)
            if sparse:
                model.net.ScatterWeightedSum([param, one, grad.indices, grad.values, coeff], param)
            else:
                model.net.WeightedSum([param, one, grad, coeff], param)

    def build(self):
        model = Seq2SeqModelHelper(init_params=True)
        self._shared(model)
        self._embeddings(model)
        forward = Seq2SeqModelHelper(init_params=True)
        self._shared(forward)
        self._embeddings(forward)
        model.AddGradientOperators(self._loss(model))
        self._clipped_update(model, sparse=False, scope="norm_clipped_grad_update")
        self._loss(forward)
        self._clipped_update(model, sparse=True, scope="norm_clipped_sparse_grad_update")
        self.model, self.forward_net = model, forward.net
        workspace.RunNetOnce(model.param_init_net)
        for net in (model.net, forward.net):
            workspace.CreateNet(net, input_blobs=[str(b) for b in net.external_inputs])

    def step(self, batch, forward_only):
        """Runs one batch; returns the summed loss over its target tokens."""
        for name, value in batch.items():
            workspace.FeedBlob(name, value)
        workspace.RunNet(self.forward_net if forward_only else self.model.net)
        if not forward_only:
            workspace.FeedBlob(self.global_step, workspace.FetchBlob(self.global_step) + 1)
        return float(workspace.FetchBlob("total_loss_scalar"))


def evaluate(s2s, batches):
    """(loss per target token, share of target tokens predicted right)."""
    loss = words = right = 0.0
    for batch in batches:
        loss += s2s.step(batch, forward_only=True)
        predicted = workspace.FetchBlob("output_logits").argmax(axis=1)
        weights = batch["target_weights"].reshape(-1)
        right += float(np.sum((predicted == batch["targets"].reshape(-1)) * weights))
        words += float(weights.sum())
    return loss / words, right / words


def decode(args, sequences, checkpoint):
    """Beam-search outputs of ``sequences`` with the parameters saved in
    ``checkpoint``; returns (share exactly right, one example)."""
    vocab = {str(i): i for i in range(args.vocab_size)}  # the decoder only needs the sizes
    model_params = dict(
        attention=args.attention,
        encoder_type=dict(encoder_layer_configs=[dict(num_units=args.units)] * args.encoder_layers,
                          use_bidirectional_encoder=args.bidirectional),
        decoder_layer_configs=[dict(num_units=args.units)] * args.decoder_layers,
        encoder_embedding_size=args.embedding_size, decoder_embedding_size=args.embedding_size,
        decoder_softmax_size=None)
    trained = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace("seq2seq_decode", True)
    try:
        decoder = Seq2SeqModelCaffe2EnsembleDecoder(dict(
            ensemble_models=[dict(source_vocab=vocab, target_vocab=vocab, model_params=model_params,
                                  model_file=checkpoint)],
            decoding_params=dict(beam_size=args.beam_size, word_reward=0.0, unk_reward=0.0)))
        decoder.load_models()
        right, example = 0, None
        for source in sequences:
            output, _, _ = decoder.decode(source, 2 * len(source) + 5)
            right += int(output == source[::-1] + [seq2seq_util.EOS_ID])
            example = example or (source, [int(t) for t in output])
    finally:
        workspace.SwitchWorkspace(trained)
    return right / float(len(sequences)), example


def main(argv=None):
    parser = argparse.ArgumentParser(description="recurrent: Caffe2's seq2seq training on a reversal task")
    parser.add_argument("--attention", default="regular", choices=["none", "regular", "recurrent", "dot"])
    parser.add_argument("--bidirectional", action="store_true", help="first encoder layer bidirectional")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--report_every", type=int, default=500)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--vocab_size", type=int, default=20, help="including the 4 special tokens")
    parser.add_argument("--max_length", type=int, default=10)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--embedding_size", type=int, default=16)
    parser.add_argument("--encoder_layers", type=int, default=1)
    parser.add_argument("--decoder_layers", type=int, default=1)
    parser.add_argument("--learning_rate", type=float, default=0.5)
    parser.add_argument("--max_gradient_norm", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--beam_size", type=int, default=3)
    parser.add_argument("--decode", type=int, default=50,
                        help="held-out sequences to decode by beam search after training (0: none; needs "
                        "--attention none or regular, as Caffe2's translate.py)")
    parser.add_argument("--checkpoint", default=None,
                        help="minidb file to save the trained parameters to (default: a temporary file)")
    args = parser.parse_args(argv)
    if args.vocab_size <= FIRST_TOKEN:
        parser.error("--vocab_size must exceed %d (the special tokens)" % FIRST_TOKEN)

    rng = np.random.RandomState(args.seed)
    held_out = reversal_task(rng, 8, args.batch_size, args.vocab_size, args.max_length)
    params = dict(vars(args))
    s2s = Seq2Seq(params, args.vocab_size, args.vocab_size)
    s2s.build()
    print("parameters: %s" % ", ".join(str(p) for p in s2s.model.GetParams()))
    history = []
    start = time.time()
    loss = words = 0.0
    for step in range(1, args.steps + 1):
        batch = reversal_task(rng, 1, args.batch_size, args.vocab_size, args.max_length)[0]
        loss += s2s.step(batch, forward_only=False)
        words += float(batch["target_weights"].sum())
        if step % args.report_every == 0 or step == args.steps:
            eval_loss, accuracy = evaluate(s2s, held_out)
            history.append((step, loss / words, eval_loss, accuracy))
            print("step %5d  train loss/word %.3f  held-out loss/word %.3f  token accuracy %.1f%%  (%.1f s)"
                  % (step, loss / words, eval_loss, 100 * accuracy, time.time() - start))
            loss = words = 0.0
    if args.decode > 0 and args.attention in ("none", "regular"):
        sequences = [rng.randint(FIRST_TOKEN, args.vocab_size, rng.randint(1, args.max_length + 1)).tolist()
                     for _ in range(args.decode)]
        with tempfile.TemporaryDirectory() as tmp:
            checkpoint = args.checkpoint or os.path.join(tmp, "seq2seq-%d" % args.steps)
            # train.py's save: every parameter, the non-trainable ones too
            workspace.RunOperatorOnce(core.CreateOperator(
                "Save", s2s.model.GetAllParams(), [], absolute_path=True, db=checkpoint, db_type="minidb"))
            exact, (source, output) = decode(args, sequences, checkpoint)
        print("beam search (beam %d): %.1f%% of %d held-out sequences output exactly reversed; e.g. %s -> %s"
              % (args.beam_size, 100 * exact, len(sequences), source, output))
        history.append(("decode", exact))
    return history


if __name__ == "__main__":
    main()
