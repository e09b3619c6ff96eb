"""The recurrent demo: train a character-level LSTM, sample from it, and show
what the RNN executor buys.

    python -m recurrent                # or: recurrent-demo
    python -m recurrent --help

What it does, in order:

1. reads a text (default: docstrings of the Python standard library, bundled
   as recurrent/data/stdlib_docs.txt; ``--text FILE`` for your own);
2. builds a character-level language model with the Caffe2-style API:
   ``Gather`` (embedding lookup) -> ``rnn_cell.LSTM`` with ``--layers`` layers
   in ONE RecurrentNetwork op -> ``FC`` -> ``SoftmaxWithLoss``, plus the
   backward pass (``AddGradientOperators``) and an ``Adagrad`` update per
   parameter (``SparseAdagrad`` for the embedding: its gradient is sparse);
3. trains it for ``--steps`` steps of truncated backpropagation through time
   (``--seq-length`` characters x ``--batch-size`` streams per step, the LSTM
   state carried from one step to the next), with a progress bar (tqdm when
   installed) showing the loss and entries (characters) per second;
4. prints a sample of generated text (a T = 1 copy of the LSTM in its own
   workspace, sampling with the ``WeightedSample`` op);
5. measures the RNN executor's speedup on the spot: the same forward+backward
   net, same weights and data, with the executor on and off (for "off", the
   better of 1 and ``--threads`` BLAS threads), a few iterations each;
6. writes the executor's timeline (PNG, needs matplotlib) and a Chrome trace
   (JSON, for https://ui.perfetto.dev or chrome://tracing) into ``--out-dir``.

Everything is seeded: the same ``--seed`` gives the same losses and sample on
the same machine (the executor's results are bitwise identical to the serial
run for any thread count).
"""

import argparse
import copy
import os
import sys
import time

import numpy as np

from . import _C, core, rnn_cell, trace, workspace
from .model_helper import ModelHelper
from .proto import make_argument
from .recurrent import set_rnn_executor_config

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
DEFAULT_TEXT = os.path.join(DATA_DIR, "stdlib_docs.txt")
SCOPE = "char_lstm"
SPEEDUP_ROUNDS = 3
WS_TRAIN, WS_SAMPLE, WS_ON, WS_OFF = ("recurrent_demo", "recurrent_demo_sample", "recurrent_demo_exec_on",
                                      "recurrent_demo_exec_off")


def _default_threads():
    return max(1, int(_C.get_flag("num_cores")))


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m recurrent",
        description="Train a character-level LSTM (rnn_cell.LSTM, one RecurrentNetwork op for all "
                    "layers) on a bundled text, print a sample, measure the RNN executor's speedup and "
                    "write its timeline.",
        epilog="Outputs in --out-dir: rnn_timeline.png (needs matplotlib) and rnn_trace.json (open in "
               "https://ui.perfetto.dev or chrome://tracing). The same --seed gives the same losses.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, default=500, help="training steps (one batch each)")
    p.add_argument("--layers", type=int, default=2, help="LSTM layers (all in one RecurrentNetwork op)")
    p.add_argument("--hidden", type=int, default=128, help="hidden size of every LSTM layer")
    p.add_argument("--embed", type=int, default=64, help="character embedding size (Gather table width)")
    p.add_argument("--seq-length", type=int, default=32, help="characters per stream per step (timesteps T)")
    p.add_argument("--batch-size", type=int, default=32, help="parallel text streams per step (N)")
    p.add_argument("--lr", type=float, default=0.05, help="Adagrad learning rate")
    p.add_argument("--threads", type=int, default=_default_threads(),
                   help="RNN executor worker threads (and BLAS threads for the serial comparison); "
                        "default: usable cores")
    p.add_argument("--seed", type=int, default=1, help="random seed (weights, sampling)")
    p.add_argument("--text", default=None, metavar="FILE",
                   help="train on this UTF-8 text file instead of the bundled standard-library docstrings")
    p.add_argument("--out-dir", default="recurrent_demo_out", help="where the timeline PNG and trace JSON go")
    p.add_argument("--sample-length", type=int, default=400, help="characters to generate after training")
    p.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (lower: more "
                   "conservative)")
    p.add_argument("--speedup-iters", type=int, default=3,
                   help="timed iterations per round for the executor comparison (3 interleaved rounds; "
                        "the best round counts)")
    p.add_argument("--no-progress", action="store_true", help="plain log lines instead of a progress bar")
    return p


def check_args(p, args):
    for name in ("steps", "layers", "hidden", "embed", "seq_length", "batch_size", "threads",
                 "speedup_iters"):
        if getattr(args, name) < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    if args.sample_length < 0:
        p.error("--sample-length must be >= 0")
    if not args.temperature > 0:
        p.error("--temperature must be > 0")
    if not args.lr > 0:
        p.error("--lr must be > 0")


# ---------------------------------------------------------------- data
class CharData:
    """The text as int32 character ids, cut into ``batch_size`` parallel
    streams read ``seq_length`` characters at a time (truncated BPTT)."""

    def __init__(self, text, seq_length, batch_size):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        self.ids = np.fromiter((self.index[c] for c in text), dtype=np.int32, count=len(text))
        self.T, self.N = seq_length, batch_size
        self.stream_len = len(text) // batch_size
        if self.stream_len < seq_length + 1:
            raise ValueError("the text has %d characters: too short for --batch-size %d x --seq-length %d "
                             "(needs at least %d)" % (len(text), batch_size, seq_length,
                                                      batch_size * (seq_length + 1)))
        self.streams = self.ids[:self.stream_len * batch_size].reshape(batch_size, self.stream_len)
        self.pos = 0

    @property
    def vocab_size(self):
        return len(self.chars)

    def next_batch(self):
        """(inputs, targets, wrapped): inputs (T, N) int32, targets (T*N,) int32
        (the next character of each input, time-major); wrapped is True when
        the streams restarted (the caller resets the LSTM state)."""
        wrapped = False
        if self.pos + self.T + 1 > self.stream_len:
            self.pos, wrapped = 0, True
        chunk = self.streams[:, self.pos:self.pos + self.T + 1]   # (N, T+1)
        self.pos += self.T
        x = np.ascontiguousarray(chunk[:, :-1].T)
        y = np.ascontiguousarray(chunk[:, 1:].T).reshape(-1)
        return x, y, wrapped

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def load_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not text:
        raise ValueError("%s is empty" % path)
    return text


# ---------------------------------------------------------------- the model
def state_names(layers):
    """Blobs holding each layer's initial hidden and cell state (1, N, H)."""
    names = []
    for i in range(layers):
        names += ["hidden_init_%d" % i, "cell_init_%d" % i]
    return names


def build_lm(model, V, E, H, layers, forward_only=False):
    """Adds the language model to ``model``: input ids (T, N) int32 blob
    ``input_ids`` -> logits. Returns (logits blob (T, N, V), list of the LSTM's
    final (hidden, cell) blobs per layer)."""
    net = model.net
    ids = net.AddExternalInput("input_ids")
    seq_lengths = net.AddExternalInput("seq_lengths")
    inits = [net.AddExternalInput(n) for n in state_names(layers)]
    embed = model.create_param("embed", [V, E], ("GaussianFill", {"std": 0.1}))
    x = net.Gather([embed, ids], "embedded")                      # (T, N, E)
    outs = rnn_cell.LSTM(model, x, seq_lengths, inits, E, [H] * layers, scope=SCOPE,
                         forward_only=forward_only, return_last_layer_only=False)
    finals = [(outs[4 * i + 1], outs[4 * i + 3]) for i in range(layers)]
    w = model.create_param("out_w", [V, H], ("XavierFill", {}))
    b = model.create_param("out_b", [V], ("ConstantFill", {"value": 0.0}))
    logits = net.FC([outs[4 * (layers - 1)], w, b], "logits", axis=2)  # (T, N, V)
    return logits, finals


def seed_fills(init_net, seed):
    """Gives every random fill of ``init_net`` its own fixed seed."""
    for i, op in enumerate(init_net.Proto().op):
        if op.type in ("UniformFill", "GaussianFill", "XavierFill"):
            op.arg[:] = [a for a in op.arg if a.name != "seed"]
            op.arg.append(make_argument("seed", seed * 1000003 + i))


def configure_executor(proto, enabled, threads):
    """Sets the RNN executor on/off and its thread count on every
    RecurrentNetwork(Gradient) op of ``proto`` (takes effect at CreateNet).
    "On" means the executor always runs (min_op_us 0), also where it would not
    pay: this is what the speedup measurement measures."""
    for op in proto.op:
        if op.type in ("RecurrentNetwork", "RecurrentNetworkGradient"):
            op.arg[:] = [a for a in op.arg if a.name != "enable_rnn_executor"]
            op.arg.append(make_argument("enable_rnn_executor", 1 if enabled else 0))
            set_rnn_executor_config(op, num_threads=threads, min_op_us=0 if enabled else None)
    return proto


class Trainer:
    """The training model in workspace ``recurrent_demo``."""

    def __init__(self, data, args):
        self.data, self.args = data, args
        V, E, H, L, T, N = data.vocab_size, args.embed, args.hidden, args.layers, data.T, data.N
        workspace.SwitchWorkspace(WS_TRAIN, True)
        workspace.ResetWorkspace()
        model = ModelHelper(name="char_lstm_train")
        logits, finals = build_lm(model, V, E, H, L)
        flat = model.net.Reshape([logits], ["logits_2d", "logits_old_shape"], shape=[T * N, V])[0]
        targets = model.net.AddExternalInput("targets")
        _, loss = model.net.SoftmaxWithLoss([flat, targets], ["probs", "loss"])
        model.AddGradientOperators([loss])
        self.loss = str(loss)
        self.params = [str(p) for p in model.params]
        # the gradient blobs (a sparse one, the embedding's: its rows)
        self.grads = [str(g.values if isinstance(g, core.GradientSlice) else g)
                      for g in (model.param_to_grad[p] for p in model.params)]
        seed_fills(model.param_init_net, args.seed)
        configure_executor(model.net.Proto(), True, args.threads)

        # the update: Adagrad per parameter, then carry the LSTM state over
        update = core.Net("char_lstm_update")
        lr = "neg_lr"
        for p in self.params:
            g = model.param_to_grad[p]
            if isinstance(g, core.GradientSlice):  # the embedding: only the rows read this step
                update.SparseAdagrad([p, p + "_moment", g.indices, g.values, lr], [p, p + "_moment"],
                                     epsilon=1e-6)
            else:
                update.Adagrad([p, p + "_moment", g, lr], [p, p + "_moment"], epsilon=1e-6)
        for (h, c), (h0, c0) in zip(finals, zip(state_names(L)[::2], state_names(L)[1::2])):
            update.Copy([h], [h0])
            update.Copy([c], [c0])

        workspace.RunNetOnce(model.param_init_net)
        for p in self.params:
            workspace.FeedBlob(p + "_moment", np.zeros_like(workspace.FetchBlob(p)))
        workspace.FeedBlob(lr, np.array([-args.lr], np.float32))
        workspace.FeedBlob("seq_lengths", np.full((N,), T, np.int32))
        self.reset_state()
        x, y, _ = data.next_batch()
        data.pos = 0
        workspace.FeedBlob("input_ids", x)
        workspace.FeedBlob("targets", y)
        workspace.CreateNet(model.net, overwrite=True)
        workspace.CreateNet(update, overwrite=True)
        self.model, self.update = model, update
        self.num_params = sum(workspace.FetchBlob(p).size for p in self.params)

    def reset_state(self):
        H, N = self.args.hidden, self.data.N
        for name in state_names(self.args.layers):
            workspace.FeedBlob(name, np.zeros((1, N, H), np.float32))

    def step(self):
        workspace.SwitchWorkspace(WS_TRAIN)
        x, y, wrapped = self.data.next_batch()
        if wrapped:
            self.reset_state()
        workspace.FeedBlob("input_ids", x)
        workspace.FeedBlob("targets", y)
        workspace.RunNet(self.model.net)
        workspace.RunNet(self.update)
        return float(workspace.FetchBlob(self.loss))

    def weights(self):
        workspace.SwitchWorkspace(WS_TRAIN)
        return {p: workspace.FetchBlob(p) for p in self.params}


# ---------------------------------------------------------------- training loop
def _progress(total, disabled):
    if disabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=" entries", unit_scale=True, desc="training", dynamic_ncols=True,
                file=sys.stderr, mininterval=0.5)


def train(trainer, args, log):
    T, N = trainer.data.T, trainer.data.N
    entries = T * N
    bar = _progress(args.steps * entries, args.no_progress)
    report_every = max(1, args.steps // 10)
    write = bar.write if bar is not None else log
    losses = []
    t0 = last_t = time.perf_counter()
    last_step = 0
    try:
        for step in range(1, args.steps + 1):
            loss = trainer.step()
            losses.append(loss)
            if not np.isfinite(loss):
                write("step %d: the loss is %r; stopping (try a smaller --lr)" % (step, loss))
                break
            if bar is not None:
                bar.update(entries)
                bar.set_postfix(loss="%.3f" % loss, step="%d/%d" % (step, args.steps), refresh=False)
            if step % report_every == 0 or step == args.steps or step == 1:
                now = time.perf_counter()
                rate = (step - last_step) * entries / max(now - last_t, 1e-9)
                line = "step %5d/%d  loss %.4f" % (step, args.steps, loss)
                if bar is None:
                    line += "  (%.1fk entries/s)" % (rate / 1000)
                write(line)
                last_t, last_step = now, step
    except KeyboardInterrupt:
        write("interrupted after %d steps; continuing with the model as it is" % len(losses))
    finally:
        if bar is not None:
            bar.close()
    dt = time.perf_counter() - t0
    return losses, dt


# ---------------------------------------------------------------- sampling
def sample(data, weights, args, prime="\n"):
    """Generates ``args.sample_length`` characters with a T = 1, N = 1 copy of
    the model in its own workspace: each RunNet feeds one character through
    the LSTM (state carried by Copy ops), samples the next with
    WeightedSample, and writes it back as the next input."""
    V, E, H, L = data.vocab_size, args.embed, args.hidden, args.layers
    start_ws = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace(WS_SAMPLE, True)
    workspace.ResetWorkspace()
    model = ModelHelper(name="char_lstm_sample", init_params=False)
    logits, finals = build_lm(model, V, E, H, L, forward_only=True)
    net = model.net
    flat = net.Reshape([logits], ["logits_2d", "logits_old_shape"], shape=[1, V])[0]
    scaled = net.Scale([flat], "logits_scaled", scale=1.0 / args.temperature)
    probs = net.Softmax([scaled], "probs")
    nxt = net.WeightedSample([probs], "next_id", seed=args.seed)
    net.Reshape([nxt], ["input_ids", "next_id_old_shape"], shape=[1, 1])
    for (h, c), (h0, c0) in zip(finals, zip(state_names(L)[::2], state_names(L)[1::2])):
        net.Copy([h], [h0])
        net.Copy([c], [c0])
    for name, value in weights.items():
        workspace.FeedBlob(name, value)
    for name in state_names(L):
        workspace.FeedBlob(name, np.zeros((1, 1, H), np.float32))
    workspace.FeedBlob("seq_lengths", np.ones((1,), np.int32))
    workspace.FeedBlob("input_ids", np.zeros((1, 1), np.int32))
    workspace.CreateNet(net, overwrite=True)
    prime_ids = [data.index[c] for c in prime if c in data.index] or [0]
    for i in prime_ids:  # warm the state up on the prime text; the net's own sample is overwritten
        workspace.FeedBlob("input_ids", np.array([[i]], np.int32))
        workspace.RunNet(net)
    out = []
    for _ in range(args.sample_length):
        out.append(int(workspace.FetchBlob("next_id")[0]))
        workspace.RunNet(net)
    workspace.SwitchWorkspace(start_ws, True)
    return data.decode(out)


# ---------------------------------------------------------------- executor speedup and timeline
def _timing_workspace(name, proto, weights, feeds):
    workspace.SwitchWorkspace(name, True)
    workspace.ResetWorkspace()
    for k, v in list(weights.items()) + list(feeds.items()):
        workspace.FeedBlob(k, v)
    workspace.CreateNet(proto, overwrite=True)
    workspace.RunNet(proto.name)  # warm-up: sizes every buffer, starts the worker pool


def _time(ws, net_name, iters):
    workspace.SwitchWorkspace(ws)
    t0 = time.perf_counter()
    workspace.RunNet(net_name, iters)
    return (time.perf_counter() - t0) / iters


def measure_speedup(trainer, args):
    """Times the training net (forward + backward, no update) with the RNN
    executor on (``--threads`` workers) and off (serial; best of 1 and
    ``--threads`` BLAS threads), same weights and batch, in interleaved
    rounds (the best round counts), each configuration in its own workspace.
    The global executor switch is turned on for the measurement. Returns a
    dict of seconds per iteration and the trace events of one executor run."""
    weights = trainer.weights()
    workspace.SwitchWorkspace(WS_TRAIN)
    feeds = {n: workspace.FetchBlob(n) for n in ["input_ids", "targets", "seq_lengths"]
             + state_names(args.layers)}
    on = configure_executor(copy.deepcopy(trainer.model.net.Proto()), True, args.threads)
    on.name = "char_lstm_exec_on"
    off = configure_executor(copy.deepcopy(trainer.model.net.Proto()), False, args.threads)
    off.name = "char_lstm_exec_off"
    old_blas = _C.get_flag("blas_num_threads")
    old_flag = _C.get_flag("rnn_executor")
    _C.set_flag("rnn_executor", 1)
    try:
        _timing_workspace(WS_ON, on, weights, feeds)
        _timing_workspace(WS_OFF, off, weights, feeds)
        # the executor's result must be the serial result, bit for bit
        workspace.SwitchWorkspace(WS_ON)
        g_on = [workspace.FetchBlob(g) for g in trainer.grads]
        workspace.SwitchWorkspace(WS_OFF)
        g_off = [workspace.FetchBlob(g) for g in trainer.grads]
        identical = all(np.array_equal(a, b) for a, b in zip(g_on, g_off))
        # BLAS threads matter for the ops outside the recurrent loop (and for
        # every op when the executor is off): try 1 and --threads for both
        blas_options = sorted({1, args.threads})
        t_on, t_off = ({b: [] for b in blas_options} for _ in range(2))
        rounds, iters = SPEEDUP_ROUNDS, args.speedup_iters
        for _ in range(rounds):
            for b in blas_options:
                _C.set_flag("blas_num_threads", b)
                t_on[b].append(_time(WS_ON, on.name, iters))
                t_off[b].append(_time(WS_OFF, off.name, iters))
        best_on = {b: min(v) for b, v in t_on.items()}
        _C.set_flag("blas_num_threads", min(best_on, key=best_on.get))
        # the timeline: the quickest of a few traced runs (the others are
        # more likely to show the OS preempting a worker than the executor)
        workspace.SwitchWorkspace(WS_ON)
        events, best_wall = None, None
        for _ in range(3):
            with trace.tracing():
                workspace.RunNet(on.name)
            evs = trace.fetch(on)
            wall = sum(v["wall_us"] for v in trace.summary(evs).values())
            if best_wall is None or wall < best_wall:
                events, best_wall = evs, wall
    finally:
        _C.set_flag("blas_num_threads", old_blas)
        _C.set_flag("rnn_executor", old_flag)
        workspace.SwitchWorkspace(WS_TRAIN)
    best_off = {b: min(v) for b, v in t_off.items()}
    return dict(on=min(best_on.values()), off=min(best_off.values()), on_all=best_on, off_all=best_off,
                identical=identical, events=events, iters=iters, rounds=rounds)


def write_timeline(events, out_dir, title):
    os.makedirs(out_dir, exist_ok=True)
    json_path = trace.save_chrome_trace(events, os.path.join(out_dir, "rnn_trace.json"))
    png_path = os.path.join(out_dir, "rnn_timeline.png")
    try:
        import matplotlib
        matplotlib.use("Agg")
        fig = trace.plot_timeline(events, png_path, title=title)
        import matplotlib.pyplot as plt
        plt.close(fig)
    except ImportError:
        png_path = None
    return png_path, json_path


# ---------------------------------------------------------------- main
def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)

    def log(msg=""):
        print(msg, flush=True)

    text_path = args.text or DEFAULT_TEXT
    try:
        text = load_text(text_path)
        data = CharData(text, args.seq_length, args.batch_size)
    except (OSError, ValueError) as e:
        parser.error(str(e))
    start_ws = workspace.CurrentWorkspace()
    trainer = Trainer(data, args)
    executor = "on, %d threads" % args.threads if workspace.rnn_executor_enabled() else \
        "off (--caffe2_rnn_executor=0 / RECURRENT_RNN_EXECUTOR=0)"
    T, N = data.T, data.N
    log("recurrent demo: character-level LSTM")
    source = text_path if args.text else "bundled stdlib docstrings (recurrent/data/stdlib_docs.txt)"
    log("  text      %s (%d characters, %d distinct)" % (source, len(text), data.vocab_size))
    log("  model     Gather(embed %d) -> LSTM %d x %d (one RecurrentNetwork op) -> FC -> SoftmaxWithLoss; "
        "%d parameters" % (args.embed, args.layers, args.hidden, trainer.num_params))
    log("  training  %d steps x %d streams x %d characters, Adagrad lr %g, RNN executor %s, seed %d"
        % (args.steps, N, T, args.lr, executor, args.seed))

    losses, dt = train(trainer, args, log)
    if losses:
        log("trained %d steps in %.1f s (%.1fk entries/s); loss %.4f -> %.4f (uniform guess: %.4f)"
            % (len(losses), dt, len(losses) * T * N / dt / 1000, losses[0], losses[-1],
               np.log(data.vocab_size)))

    weights = trainer.weights()
    if args.sample_length:
        text_out = sample(data, weights, args)
        log()
        log("sample (%d characters, temperature %g):" % (args.sample_length, args.temperature))
        log("-" * 72)
        log(text_out)
        log("-" * 72)

    res = measure_speedup(trainer, args)
    log()
    def desc(times):
        return ", ".join("%d BLAS thread%s %.2f" % (b, "" if b == 1 else "s", t * 1000)
                         for b, t in sorted(times.items()))

    log("executor speedup, measured now (forward+backward of the training net, T=%d, N=%d, %d x %d LSTM; "
        "ms per iteration, best of %d rounds x %d iterations):"
        % (T, N, args.layers, args.hidden, res["rounds"], res["iters"]))
    log("  executor on (%d threads): %s" % (args.threads, desc(res["on_all"])))
    log("  executor off (serial):    %s" % desc(res["off_all"]))
    log("  speedup %.2fx (best on %.2f ms/iter vs best off %.2f ms/iter)"
        % (res["off"] / res["on"], res["on"] * 1000, res["off"] * 1000))
    log("  executor results identical to serial: %s" % ("yes (bitwise)" if res["identical"] else "NO"))
    png, js = write_timeline(res["events"], args.out_dir,
                             "RNN executor, %d threads: %d-layer LSTM, T=%d (colour = timestep)"
                             % (args.threads, args.layers, T))
    log("timeline: %s" % (png if png else "(matplotlib not installed: no PNG)"))
    log("chrome trace: %s (open in https://ui.perfetto.dev or chrome://tracing)" % js)
    workspace.SwitchWorkspace(start_ws, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
