"""What the executor's automatic choice gives: an rnn_cell.LSTM or GRU of one
or more layers (all in one RecurrentNetwork op), trained (or forward only),
side by side in one process:

  executor   the executor always on (min_op_us 0, Caffe2's behaviour)
  no_help    (--compare_help) the same with helping off: executor threads
             with nothing to run do not help split the others' products
  serial     the executor off: the serial loop, which splits every step
             product over the threads
  default    the library's defaults: two timed serial runs, then the
             executor if its step ops take at least min_op_us (4 us) and,
             from the first run of 8 or more timesteps, their parallelism
             reaches min_parallelism (2.5; --min_parallelism); a chain
             (parallelism under 1.1) serially; in between (trial), two
             timed runs each of the executor and the serial loop, and the
             faster

Checks first that the three give the same bits, then alternates them round
by round and prints the median entries/s (timesteps x batch per second),
the ratios against the serial loop, and what the default chose (with the
parallelism it measured).

    python benchmarks/executor_choice.py --cell gru --num_layers 1 --hidden_dim 512 --batch_size 64
"""

import argparse
import json
import sys
import time

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cell", choices=("lstm", "gru"), default="lstm")
    p.add_argument("--num_layers", type=int, default=1)
    p.add_argument("--hidden_dim", type=int, default=256)
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--input_dim", type=int, default=40)
    p.add_argument("--seq_length", type=int, default=50)
    p.add_argument("--forward_only", action="store_true")
    p.add_argument("--threads", type=int, default=0, help="executor threads (default: usable cores)")
    p.add_argument("--iters", type=int, default=5, help="iterations per measurement")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min_parallelism", type=float, default=None,
                   help="rnn_executor.min_parallelism for 'default' (default: the library's, 2.5)")
    p.add_argument("--compare_help", action="store_true",
                   help="also run the executor always on with helping off (variant no_help)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    for k in ("num_layers", "hidden_dim", "batch_size", "input_dim", "seq_length", "iters", "rounds"):
        if getattr(args, k) < 1:
            p.error("--%s must be >= 1" % k)
    if args.threads < 0:
        p.error("--threads must be >= 0")
    if args.min_parallelism is not None and not 0 <= args.min_parallelism <= 1024:
        p.error("--min_parallelism must be in [0, 1024]")
    return args


class Model:
    """One variant in its own workspace, with the same data and (given
    ``weights``, {name: array}) the same weights as another."""

    def __init__(self, args, variant, threads, weights=None):
        from recurrent import model_helper, rnn_cell, workspace
        from recurrent.recurrent import set_rnn_executor_config
        self.ws = workspace
        self.ws_name = "choice_" + variant
        workspace.SwitchWorkspace(self.ws_name, True)
        workspace.ResetWorkspace()
        T, N, D, H, L = args.seq_length, args.batch_size, args.input_dim, args.hidden_dim, args.num_layers
        n_states = 2 if args.cell == "lstm" else 1
        model = model_helper.ModelHelper(name="choice_" + variant)
        x, seq = model.net.AddExternalInputs("x", "seq_lengths")
        inits = [model.net.AddExternalInput("init_%d" % i) for i in range(n_states * L)]
        build = rnn_cell.LSTM if args.cell == "lstm" else rnn_cell.GRU
        out = build(model, x, seq, inits, D, [H] * L, scope="rnn", forward_only=args.forward_only,
                    drop_states=True, return_last_layer_only=True)
        self.output = str(out[0])
        if not args.forward_only:
            model.AddGradientOperators([model.net.SumElements([out[0]], "loss")])
        for op in model.net.Proto().op:
            if op.type.startswith("RecurrentNetwork"):
                for a in op.arg:
                    if a.name == "enable_rnn_executor":  # rnn_cell sets it to 1
                        a.i = 0 if variant == "serial" else 1
                if variant != "serial":
                    set_rnn_executor_config(op, num_threads=threads,
                                            min_op_us=4 if variant == "default" else 0,
                                            min_parallelism=args.min_parallelism if variant == "default" else None)
        self.model = model
        workspace.RunNetOnce(model.param_init_net)
        self.params = [str(p) for p in model.params]
        for k, v in (weights or {}).items():
            workspace.FeedBlob(k, v)
        rng = np.random.RandomState(args.seed)
        workspace.FeedBlob("x", rng.rand(T, N, D).astype(np.float32))
        workspace.FeedBlob("seq_lengths", np.full((N,), T, np.int32))
        for i in range(n_states * L):
            workspace.FeedBlob("init_%d" % i, np.zeros((1, N, H), np.float32))
        workspace.CreateNet(model.net, overwrite=True)
        self.forward_only = args.forward_only
        self.help = 0 if variant == "no_help" else 1

    def weights(self):
        self.ws.SwitchWorkspace(self.ws_name)
        return {p: self.ws.FetchBlob(p) for p in self.params}

    def run(self, iters):
        from recurrent import _C
        self.ws.SwitchWorkspace(self.ws_name)
        prev = _C.get_flag("rnn_executor_help")
        _C.set_flag("rnn_executor_help", self.help)  # a process-wide switch
        try:
            self.ws.RunNet(self.model.net, iters)
        finally:
            _C.set_flag("rnn_executor_help", prev)

    def results(self):
        self.ws.SwitchWorkspace(self.ws_name)
        names = [self.output] + ([] if self.forward_only else [p + "_grad" for p in self.params] + ["x_grad"])
        return {n: self.ws.FetchBlob(n) for n in names}

    def status(self):
        from recurrent import trace
        self.ws.SwitchWorkspace(self.ws_name)
        return trace.executor_status(self.model.net)


def main(argv=None):
    args = parse_args(argv)
    from recurrent import _C, workspace
    workspace.GlobalInit(["executor_choice", "--caffe2_rnn_executor=1"])
    threads = args.threads or _C.get_flag("num_cores")
    models = {"serial": Model(args, "serial", threads)}
    for v in ("executor", "default") + (("no_help",) if args.compare_help else ()):
        models[v] = Model(args, v, threads, weights=models["serial"].weights())
    res = {}
    for v, m in models.items():
        # past the default's two timed serial runs, its four timed tries when they came out under
        # min_op_us (from 8 timesteps on) and its first run after deciding
        m.run(7)
        res[v] = m.results()
    same = all(res[v][k].tobytes() == res["serial"][k].tobytes() for v in res for k in res[v])
    print("validated: %s bitwise equal: %s" % (", ".join(models), same))
    if not same:
        return 1
    times = {v: [] for v in models}
    for r in range(args.rounds):
        order = list(models) if r % 2 == 0 else list(reversed(list(models)))
        for v in order:
            t0 = time.perf_counter()
            models[v].run(args.iters)
            times[v].append(time.perf_counter() - t0)
    entries = args.seq_length * args.batch_size * args.iters
    eps = {v: float(np.median([entries / t for t in ts])) for v, ts in times.items()}
    print("%s, %d layer(s), hidden %d, batch %d, input %d, T = %d, %s, %d threads; entries/s (median of %d "
          "rounds of %d iterations):" % (args.cell.upper(), args.num_layers, args.hidden_dim, args.batch_size,
                                         args.input_dim, args.seq_length,
                                         "forward only" if args.forward_only else "forward + backward", threads,
                                         args.rounds, args.iters))
    for v, e in eps.items():
        print("  %-9s %10.0f   (%.2fx serial)" % (v, e, e / eps["serial"]))
    status = models["default"].status()
    print("default chose: %s" % ", ".join(
        "%s %s (mean_op_us %.1f%s, parallelism %s)" % (
            s["direction"], s["mode"], s["mean_op_us"] or 0.0,
            ", tried: executor %.1f, serial %.1f" % (s["tried_op_us"], s["tried_serial_op_us"])
            if s["tried_runs"] >= 4 else "",
            "%.2f" % s["parallelism"] if s["parallelism"] is not None else "not measured") for s in status))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "threads": threads, "entries_per_sec_median": eps,
                       "ratio_vs_serial": {v: e / eps["serial"] for v, e in eps.items()},
                       "default_status": status}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
