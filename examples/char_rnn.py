"""A character-level LSTM trained with SGD, written the way Caffe2's examples
wrote it (``caffe2/python/examples/char_rnn.py``), to show what porting such a
script takes: only the imports change,

    from caffe2.python import core, workspace, model_helper, utils, brew
    from caffe2.python.rnn_cell import LSTM
    from caffe2.proto import caffe2_pb2
    from caffe2.python.optimizer import build_sgd

become the four lines below. The rest uses Caffe2's calls: ``LSTM``,
``brew.fc(axis=2)``, ``Softmax(axis=2)``, ``Reshape``, ``LabelCrossEntropy``,
``AveragedLoss``, ``AddGradientOperators``, ``build_sgd(policy="step")``, a
forward-only copy of the net from its ``Proto()``, a ``prepare_state`` net that
carries the LSTM's last states over with ``Copy``, ``DeviceScope``,
``@utils.debug``.

    python examples/char_rnn.py                      # the bundled text, 500 iterations
    python examples/char_rnn.py --train_data FILE --iters 0   # until Ctrl-C, as Caffe2's
"""
import argparse
import logging
import os
from datetime import datetime

import numpy as np

from recurrent import core, workspace, model_helper, utils, brew
from recurrent.rnn_cell import LSTM
from recurrent.proto import caffe2_pb2
from recurrent.optimizer import build_sgd

logging.basicConfig()
log = logging.getLogger("char_rnn")
log.setLevel(logging.INFO)

BUNDLED = os.path.join(os.path.dirname(os.path.abspath(core.__file__)), "data", "stdlib_docs.txt")


class CharRNN:
    def __init__(self, args):
        self.seq_length = args.seq_length
        self.batch_size = args.batch_size
        self.hidden_size = args.hidden_size
        self.iters_to_report = args.iters_to_report
        with open(args.train_data, encoding="utf-8") as f:
            self.text = f.read()
        self.vocab = sorted(set(self.text))
        self.char_to_idx = {ch: i for i, ch in enumerate(self.vocab)}
        self.D = len(self.vocab)
        log.info("%d characters, %d distinct", len(self.text), self.D)

    def create_model(self):
        model = model_helper.ModelHelper(name="char_rnn")
        input_blob, seq_lengths, hidden_init, cell_init, target = model.net.AddExternalInputs(
            "input_blob", "seq_lengths", "hidden_init", "cell_init", "target")
        hidden_all, self.hidden_output, _, self.cell_state = LSTM(
            model, input_blob, seq_lengths, (hidden_init, cell_init), self.D, self.hidden_size, scope="LSTM")
        output = brew.fc(model, hidden_all, None, dim_in=self.hidden_size, dim_out=self.D, axis=2)
        softmax = model.net.Softmax(output, "softmax", axis=2)  # over the characters, per (t, sequence)
        softmax_2d, _ = model.net.Reshape(softmax, ["softmax_reshaped", "_"], shape=[-1, self.D])
        self.forward_net = core.Net(model.net.Proto())  # generation needs no loss and no backward pass
        xent = model.net.LabelCrossEntropy([softmax_2d, target], "xent")
        self.loss = model.net.AveragedLoss(xent, "loss")  # the mean over time and batch
        model.AddGradientOperators([self.loss])
        build_sgd(model, base_learning_rate=0.1 * self.seq_length, policy="step", stepsize=1, gamma=0.9999)
        self.model = model
        self.predictions = softmax
        self.prepare_state = core.Net("prepare_state")  # the last states become the next initial ones
        self.prepare_state.Copy(self.hidden_output, hidden_init)
        self.prepare_state.Copy(self.cell_state, cell_init)

    def train(self, iters):
        """Runs `iters` iterations (0: until Ctrl-C); returns the loss of each (summed over time)."""
        workspace.RunNetOnce(self.model.param_init_net)
        zeros = np.zeros([1, self.batch_size, self.hidden_size], dtype=np.float32)
        workspace.FeedBlob(self.hidden_output, zeros)
        workspace.FeedBlob(self.cell_state, zeros)
        workspace.CreateNet(self.prepare_state)
        n = len(self.text)
        # sequence e reads its own block of the text, in order
        block = n // self.batch_size
        pos = np.zeros(self.batch_size, dtype=np.int64)
        smooth = -np.log(1.0 / self.D) * self.seq_length
        created, it, chars, last, losses = False, 0, 0, datetime.now(), []
        while iters <= 0 or it < iters:
            workspace.FeedBlob("seq_lengths", np.full(self.batch_size, self.seq_length, dtype=np.int32))
            workspace.RunNet(self.prepare_state.Name())
            x = np.zeros([self.seq_length, self.batch_size, self.D], dtype=np.float32)
            y = np.zeros([self.seq_length * self.batch_size], dtype=np.int32)
            for e in range(self.batch_size):
                for t in range(self.seq_length):
                    p = e * block + pos[e]
                    x[t, e, self.char_to_idx[self.text[p % n]]] = 1
                    y[t * self.batch_size + e] = self.char_to_idx[self.text[(p + 1) % n]]
                    pos[e] = (pos[e] + 1) % block
            workspace.FeedBlob("input_blob", x)
            workspace.FeedBlob("target", y)
            if not created:
                workspace.CreateNet(self.model.net)
                created = True
            workspace.RunNet(self.model.net.Name())
            it += 1
            chars += self.seq_length * self.batch_size
            loss = float(workspace.FetchBlob(self.loss)) * self.seq_length
            losses.append(loss)
            smooth = 0.999 * smooth + 0.001 * loss
            if it % self.iters_to_report == 0:
                now = datetime.now()
                log.info("iteration %d: loss %.3f (smoothed %.3f), %d characters/s", it, loss, smooth,
                         chars / max((now - last).total_seconds(), 1e-9))
                chars, last = 0, now
                print(self.generate(200, self.text[0]))
        return losses

    def generate(self, num_characters, ch):
        """Feeds one character at a time through the forward-only net, sampling the next."""
        workspace.CreateNet(self.forward_net, overwrite=True)
        text = ch
        for _ in range(num_characters):
            workspace.FeedBlob("seq_lengths", np.ones(self.batch_size, dtype=np.int32))
            workspace.RunNet(self.prepare_state.Name())
            x = np.zeros([1, self.batch_size, self.D], dtype=np.float32)
            x[0, 0, self.char_to_idx[ch]] = 1
            workspace.FeedBlob("input_blob", x)
            workspace.RunNet(self.forward_net.Name())
            p = workspace.FetchBlob(self.predictions)[0, 0].astype(np.float64)
            ch = self.vocab[np.random.choice(self.D, p=p / p.sum())]
            text += ch
        return text


@utils.debug
def main(argv=None):
    parser = argparse.ArgumentParser(description="recurrent: char-RNN training (Caffe2's example, ported)")
    parser.add_argument("--train_data", default=BUNDLED, help="a text file (default: the bundled corpus)")
    parser.add_argument("--seq_length", type=int, default=25)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--iters_to_report", type=int, default=100)
    parser.add_argument("--hidden_size", type=int, default=100)
    parser.add_argument("--iters", type=int, default=500, help="iterations (0: until Ctrl-C, as Caffe2's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    np.random.seed(args.seed)
    with core.DeviceScope(core.DeviceOption(caffe2_pb2.CPU, 0)):
        model = CharRNN(args)
        model.create_model()
        return model.train(args.iters)


if __name__ == "__main__":
    workspace.GlobalInit(["recurrent", "--caffe2_log_level=2"])
    main()
