"""A sequence-to-sequence model trained with Caffe2's train.py
(``recurrent.models.seq2seq.train.Seq2SeqModelCaffe2``, CPU) on a generated
task: output each sequence of random tokens reversed.

train.py builds the model (an LSTM encoder, optionally bidirectional in its
first layer, an LSTM decoder with or without attention, an output
projection) and its update (the gradients' global norm clipped to
``--max_gradient_norm``, ``WeightedSum`` for the dense parameters and
``ScatterWeightedSum`` for the embedding rows a batch used). Every step
trains on a fresh batch (``step(pairs, forward_only=False)``); the
forward-only net reports the loss on held-out batches, with the share of
target tokens the model predicts right (teacher forcing: the decoder reads
the true previous token).

Then ``save`` writes the parameters (``--checkpoint`` prefix, by default in
a temporary directory) and, as Caffe2's ``translate.py`` decodes, a beam
search (``Seq2SeqModelCaffe2EnsembleDecoder``, ``--beam_size``) in a
workspace of its own loads them (``load_models``) and outputs ``--decode``
held-out sequences token by token (no teacher forcing); the share it gets
exactly right (the reversed sequence, then EOS) is printed.

    python examples/seq2seq.py                          # a few seconds: attention, 3000 steps
    python examples/seq2seq.py --attention none --bidirectional --steps 3000
"""
import argparse
import os
import tempfile
import time

import numpy as np

from recurrent import workspace
from recurrent.models.seq2seq import seq2seq_util, train
from recurrent.models.seq2seq.translate import Seq2SeqModelCaffe2EnsembleDecoder

FIRST_TOKEN = 4  # ids 0-3 are PAD, GO, EOS, UNK


def reversal_task(rng, num_batches, batch_size, vocab_size, max_length):
    """Batches of (source, target) id lists, train.py's step() input: the
    target is the source reversed."""
    batches = []
    for _ in range(num_batches):
        pairs = []
        for _ in range(batch_size):
            source = rng.randint(FIRST_TOKEN, vocab_size, rng.randint(1, max_length + 1)).tolist()
            pairs.append((source, source[::-1]))
        batches.append(pairs)
    return batches


def model_params(args):
    """train.py's model_params (Caffe2's keys) from the example's flags."""
    return dict(
        attention=args.attention,
        encoder_type=dict(encoder_layer_configs=[dict(num_units=args.units)] * args.encoder_layers,
                          use_bidirectional_encoder=args.bidirectional),
        decoder_layer_configs=[dict(num_units=args.units)] * args.decoder_layers,
        encoder_embedding_size=args.embedding_size, decoder_embedding_size=args.embedding_size,
        decoder_softmax_size=None)


def evaluate(s2s, batches):
    """(loss per target token, share of target tokens predicted right)."""
    loss = words = right = 0.0
    for pairs in batches:
        loss += float(s2s.step(pairs, forward_only=True))
        predicted = workspace.FetchBlob("output_logits").argmax(axis=1)
        batch = train.prepare_batch(pairs)
        weights = batch.target_weights.reshape(-1)
        right += float(np.sum((predicted == batch.targets.reshape(-1)) * weights))
        words += float(weights.sum())
    return loss / words, right / words


def decode(args, sequences, checkpoint):
    """Beam-search outputs of ``sequences`` with the parameters saved in
    ``checkpoint``; returns (share exactly right, one example)."""
    vocab = {str(i): i for i in range(args.vocab_size)}  # the decoder only needs the sizes
    model_params_ = model_params(args)
    trained = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace("seq2seq_decode", True)
    try:
        decoder = Seq2SeqModelCaffe2EnsembleDecoder(dict(
            ensemble_models=[dict(source_vocab=vocab, target_vocab=vocab, model_params=model_params_,
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
                        help="train.py's checkpoint prefix: the trained parameters go to <prefix>-<steps> "
                        "(default: in a temporary directory)")
    args = parser.parse_args(argv)
    if args.vocab_size <= FIRST_TOKEN:
        parser.error("--vocab_size must exceed %d (the special tokens)" % FIRST_TOKEN)

    rng = np.random.RandomState(args.seed)
    held_out = reversal_task(rng, 8, args.batch_size, args.vocab_size, args.max_length)
    params = dict(model_params(args), batch_size=args.batch_size,
                  optimizer_params=dict(learning_rate=args.learning_rate),
                  max_gradient_norm=args.max_gradient_norm)
    s2s = train.Seq2SeqModelCaffe2(params, args.vocab_size, args.vocab_size, num_gpus=0)
    s2s.initialize_from_scratch()
    print("parameters: %s" % ", ".join(str(p) for p in s2s.model.GetParams()))
    history = []
    start = time.time()
    loss = words = 0.0
    for step in range(1, args.steps + 1):
        batch = reversal_task(rng, 1, args.batch_size, args.vocab_size, args.max_length)[0]
        loss += float(s2s.step(batch, forward_only=False))
        words += float(sum(len(target) + 1 for _, target in batch))  # the target tokens and EOS
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
            # every parameter, the non-trainable ones too, to <prefix>-<step>
            checkpoint = s2s.save(args.checkpoint or os.path.join(tmp, "seq2seq"), s2s.get_current_step())
            exact, (source, output) = decode(args, sequences, checkpoint)
        print("beam search (beam %d): %.1f%% of %d held-out sequences output exactly reversed; e.g. %s -> %s"
              % (args.beam_size, 100 * exact, len(sequences), source, output))
        history.append(("decode", exact))
    return history


if __name__ == "__main__":
    main()
