"""LSTM benchmark with Caffe2's lstm_benchmark flags, plus a side-by-side
comparison against torch.nn.LSTM in the same process (--cell gru: our
rnn_cell.GRU with linear_before_reset against torch.nn.GRU).

    python benchmarks/lstm_benchmark.py --hidden_dim 256 --batch_size 16 --num_layers 4 \
        --seq_length 50 --rnn_executor --rnn_executor_num_threads 2
    python benchmarks/lstm_benchmark.py --implementation torch ...
    python benchmarks/lstm_benchmark.py --compare --json out.json ...   # the ratios we report
    python benchmarks/lstm_benchmark.py --breakdown --rnn_executor ... # where an iteration's time goes

Entries per second = timesteps x batch processed per second (forward and
backward unless --forward_only). --compare interleaves, round by round: our
LSTM with the RNN executor on, our LSTM with it off (every BLAS thread count
from 1 to the budget, the best one counts), the same LSTM built with
rnn_cell.layered_LSTM (one RecurrentNetwork op per layer, serial, every BLAS
thread count), and torch.nn.LSTM (torch.set_num_threads for every count from
1 to the budget, the best one counts), all with the same weights and data,
after checking that executor on/off agree bitwise and that layered_LSTM and
torch match ours; each round also times one large FC of the LSTM's shape
(T*batch x hidden by 4*hidden x hidden, OpenBLAS) and the run ends with the
ceiling that rate puts on an iteration's products (lstm_flops). --breakdown runs each op of our training net on its own
(--rounds times, with the executor trace on) and prints its median time and,
for the RecurrentNetwork ops, how much of it is the step loop.

--cell gru runs the same modes with a GRU stack: rnn_cell.GRU built with
linear_before_reset=True (torch.nn.GRU's equations, so torch's output is
checked against ours with the same weights) and torch.nn.GRU; there is no
layered GRU, so --compare has no layered rows.

Pack reuse: our ops keep the packed copies of the step weights between runs
while the weights are unchanged. Like Caffe2's benchmark this one updates no
weights, but real training does after every iteration, so training
measurements (without --forward_only) turn the reuse off
(RECURRENT_PACK_REUSE=0) unless the environment sets RECURRENT_PACK_REUSE;
--forward_only (inference: the weights stay the same) keeps it on.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden_dim", type=int, default=800)
    p.add_argument("--input_dim", type=int, default=40)
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--seq_length", type=int, default=20)
    p.add_argument("--data_size", type=int, default=None,
                   help="entries to process per measurement (default: 10 iterations)")
    p.add_argument("--iters_to_report", type=int, default=10)
    p.add_argument("--iters", type=int, default=None, help="iterations per measurement (default iters_to_report)")
    p.add_argument("--num_layers", type=int, default=1)
    p.add_argument("--cell", choices=["lstm", "gru"], default="lstm",
                   help="lstm (default) or gru (rnn_cell.GRU with linear_before_reset, against torch.nn.GRU)")
    p.add_argument("--forward_only", action="store_true")
    p.add_argument("--memory_optimization", action="store_true")
    p.add_argument("--rnn_executor", action="store_true")
    p.add_argument("--rnn_executor_num_threads", type=int, default=None)
    p.add_argument("--rnn_executor_min_op_us", type=float, default=0.0,
                   help="below this mean time per step op (measured on the first runs) an executor-enabled op "
                        "runs serially; 0 (this benchmark's default, Caffe2's behaviour): the executor always "
                        "runs; the library's default is 4")
    p.add_argument("--rnn_executor_max_cuda_streams", type=int, default=None)
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--implementation", choices=["own", "torch"], default="own")
    p.add_argument("--compare", action="store_true", help="own executor on / off / torch, side by side")
    p.add_argument("--breakdown", action="store_true",
                   help="time each op of our training net on its own, and the step loops inside the RNN ops")
    p.add_argument("--threads", type=int, default=None, help="thread budget for --compare (default: usable cores)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds in --compare")
    p.add_argument("--json", default=None, help="write results as JSON to this file")
    p.add_argument("--seed", type=int, default=2603)
    args, unknown = p.parse_known_args(argv)
    if args.gpu:
        p.error("--gpu: this build has no GPU executor")
    if args.breakdown and (args.compare or args.implementation != "own"):
        p.error("--breakdown times our own LSTM: it does not combine with --compare or --implementation torch")
    return args, unknown


def blas_report():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [{"note": "threadpoolctl not installed"}]
    keep = ("internal_api", "prefix", "filepath", "version", "architecture", "threading_layer", "num_threads")
    return [{k: d.get(k) for k in keep} for d in threadpool_info()]


def kernels_line(reuse=None):
    """Which kernels ran: our packed step-product kernel (with whether the
    step-weight packs are kept between runs: ``reuse``, or from the
    environment) and every BLAS's architecture (threadpoolctl)."""
    from recurrent import _C
    blas = ["%s %s (%s)" % (d.get("internal_api"), d.get("architecture"), os.path.basename(d.get("filepath") or ""))
            for d in blas_report() if "internal_api" in d]
    if reuse is None:
        import recurrent
        reuse = "on" if recurrent.show_config(mode="dicts")["step_products"]["pack_reuse"] else "off"
    return "kernels: packed step products %s (pack reuse %s, next-panel prefetch from %s KB packs, " \
        "weight-gradient passes of %d rows); %s" % (
            _C.get_flag("packed_gemm_kernel"), reuse, _C.get_flag("packed_prefetch_min_bytes") // 1024,
            _C.get_flag("packed_wgrad_pass_rows"), "; ".join(blas) or "no BLAS info")


_ENV_REPORTED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "RECURRENT_PACKED_GEMM", "RECURRENT_PACK_REUSE",
                 "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def layered_name(name):
    """rnn_cell.LSTM parameter name (all layers in one op, scope lstm1) ->
    the same parameter of rnn_cell.layered_LSTM (one op per layer)."""
    if name.startswith("lstm1/layer_0/"):
        return "lstm1/" + name[len("lstm1/layer_0/"):]
    if name.startswith("lstm1/layer_"):
        layer, rest = name[len("lstm1/layer_"):].split("/", 1)
        return "lstm1_layer_%s/%s" % (layer, rest)
    return name


class OwnLSTM:
    """Our rnn_cell.LSTM in its own workspace, with a sum loss. ``layered``:
    rnn_cell.layered_LSTM instead, one RecurrentNetwork op per layer (every
    layer's input projection is then one large GEMM outside the loop, as in
    torch; the executor has nothing to overlap); ``weights`` are then given
    under rnn_cell.LSTM's names."""

    def __init__(self, args, executor, num_threads, ws_name, weights=None, layered=False):
        from recurrent import core, model_helper, rnn_cell, workspace
        self.workspace = workspace
        self.ws_name = ws_name
        self.args = args
        workspace.SwitchWorkspace(ws_name, True)
        workspace.ResetWorkspace()
        T, N, D, H, L = args.seq_length, args.batch_size, args.input_dim, args.hidden_dim, args.num_layers
        model = model_helper.ModelHelper(name="lstm_bench_%s" % ws_name)
        x = model.net.AddExternalInput("input")
        seq_lengths = model.net.AddExternalInput("seq_lengths")
        inits = []
        for l in range(L):
            inits.append(model.net.AddExternalInput("hidden_init_%d" % l))
            if args.cell == "lstm":
                inits.append(model.net.AddExternalInput("cell_init_%d" % l))
        if args.cell == "gru":
            out = rnn_cell.GRU(model, x, seq_lengths, inits, D, [H] * L, scope="gru1",
                               memory_optimization=args.memory_optimization, forward_only=args.forward_only,
                               drop_states=True, return_last_layer_only=True, linear_before_reset=True)
        elif layered:
            out = rnn_cell.layered_LSTM(model, x, seq_lengths, inits, D, [H] * L, scope="lstm1",
                                        memory_optimization=args.memory_optimization,
                                        forward_only=args.forward_only, drop_states=True)
        else:
            out = rnn_cell.LSTM(model, x, seq_lengths, inits, D, [H] * L, scope="lstm1",
                                memory_optimization=args.memory_optimization, forward_only=args.forward_only,
                                drop_states=True, return_last_layer_only=True)
        self.output = out[0]
        if not args.forward_only:
            loss = model.net.SumElements([self.output], "loss")
            model.AddGradientOperators([loss])
        from recurrent.recurrent import set_rnn_executor_config
        for op in model.net.Proto().op:
            if op.type.startswith("RecurrentNetwork"):
                for a in op.arg:
                    if a.name == "enable_rnn_executor":
                        a.i = 1 if executor else 0
                if executor:
                    set_rnn_executor_config(op, num_threads=num_threads, min_op_us=args.rnn_executor_min_op_us)
        self.model = model
        rng = np.random.RandomState(args.seed)
        workspace.RunNetOnce(model.param_init_net)
        if weights is not None:
            for k, v in weights.items():
                workspace.FeedBlob(layered_name(k) if layered else k, v)
        workspace.FeedBlob("input", rng.rand(T, N, D).astype(np.float32))
        workspace.FeedBlob("seq_lengths", np.full((N,), T, np.int32))
        for l in range(L):
            workspace.FeedBlob("hidden_init_%d" % l, np.zeros((1, N, H), np.float32))
            if args.cell == "lstm":
                workspace.FeedBlob("cell_init_%d" % l, np.zeros((1, N, H), np.float32))
        workspace.CreateNet(model.net, overwrite=True)
        self.params = [str(p) for p in model.params]

    def weights(self):
        self.workspace.SwitchWorkspace(self.ws_name)
        return {p: self.workspace.FetchBlob(p) for p in self.params}

    def run(self, iters):
        self.workspace.SwitchWorkspace(self.ws_name)
        self.workspace.RunNet(self.model.net, iters)

    def results(self):
        self.workspace.SwitchWorkspace(self.ws_name)
        res = {"output": self.workspace.FetchBlob(self.output)}
        if not self.args.forward_only:
            for p in self.params:
                res[p + "_grad"] = self.workspace.FetchBlob(p + "_grad")
            res["input_grad"] = self.workspace.FetchBlob("input_grad")
        return res


class TorchLSTM:
    """torch.nn.LSTM (--cell gru: torch.nn.GRU) with ``own``'s weights."""

    def __init__(self, args, own=None):
        import torch
        self.torch = torch
        self.args = args
        T, N, D, H, L = args.seq_length, args.batch_size, args.input_dim, args.hidden_dim, args.num_layers
        torch.manual_seed(args.seed)
        gru = args.cell == "gru"
        self.lstm = (torch.nn.GRU if gru else torch.nn.LSTM)(D, H, num_layers=L)
        if own is not None:
            from recurrent import torch_interop
            own.workspace.SwitchWorkspace(own.ws_name)
            if gru:
                torch_interop.gru_to_torch("gru1", num_layers=L, module=self.lstm)
            else:
                torch_interop.lstm_to_torch("lstm1", num_layers=L, module=self.lstm)
        rng = np.random.RandomState(args.seed)
        self.x = torch.from_numpy(rng.rand(T, N, D).astype(np.float32))
        self.h0 = torch.zeros(L, N, H)
        self.c0 = torch.zeros(L, N, H)
        self.state = self.h0 if gru else (self.h0, self.c0)

    def run(self, iters):
        torch = self.torch
        for _ in range(iters):
            if self.args.forward_only:
                with torch.no_grad():
                    self.out, _ = self.lstm(self.x, self.state)
            else:
                self.lstm.zero_grad(set_to_none=True)
                self.out, _ = self.lstm(self.x, self.state)
                self.out.sum().backward()


def eps(args, seconds, iters):
    return args.seq_length * args.batch_size * iters / seconds


def timed(fn, iters):
    t0 = time.perf_counter()
    fn(iters)
    return time.perf_counter() - t0


def lstm_flops(args):
    """Floating-point operations of one iteration, counting the products only
    (2 per multiply-add): per layer and step the gate products of the input
    and of the hidden state, batch x 4H x (input + H) multiply-adds (GRU:
    3H); training adds their input gradients and their weight gradients, the
    same count twice more. The elementwise ops (gates, sums) are left out:
    under 1%."""
    T, N, D, H, L = args.seq_length, args.batch_size, args.input_dim, args.hidden_dim, args.num_layers
    G = 3 if getattr(args, "cell", "lstm") == "gru" else 4
    fwd = sum(2 * T * N * G * H * ((D if l == 0 else H) + H) for l in range(L))
    return fwd if args.forward_only else 3 * fwd


class DenseRate:
    """The machine's dense-product rate right now, in GFLOP/s: one large FC
    through this library (OpenBLAS at the thread budget) of the LSTM's own
    shape: the T*batch x hidden inputs of all steps by the 4*hidden x
    hidden weight (GRU: 3*hidden), as a layer's input projection or weight gradient is. An
    iteration's products at that rate give a ceiling no schedule of them on
    these cores reaches without a faster product kernel."""

    def __init__(self, args):
        from recurrent import core, workspace
        self.workspace = workspace
        workspace.SwitchWorkspace("dense_rate", True)
        workspace.ResetWorkspace()
        rng = np.random.RandomState(args.seed)
        H, rows = args.hidden_dim, args.seq_length * args.batch_size
        workspace.FeedBlob("x", rng.rand(rows, H).astype(np.float32))
        G = 3 if args.cell == "gru" else 4
        workspace.FeedBlob("w", rng.rand(G * H, H).astype(np.float32))
        workspace.FeedBlob("b", np.zeros(G * H, np.float32))
        self.net = core.Net("dense_rate")
        self.net.FC(["x", "w", "b"], "y")
        workspace.CreateNet(self.net, overwrite=True)
        self.flops = 2.0 * rows * G * H * H

    def measure(self, reps=5):
        self.workspace.SwitchWorkspace("dense_rate")
        self.workspace.RunNet(self.net)
        best = min(timed(lambda n: self.workspace.RunNet(self.net, n), 1) for _ in range(reps))
        return self.flops / best / 1e9


def single(args):
    iters = args.iters or args.iters_to_report
    if args.implementation == "torch":
        import torch
        if args.rnn_executor_num_threads:
            torch.set_num_threads(args.rnn_executor_num_threads)
        m = TorchLSTM(args)
    else:
        from recurrent import workspace
        workspace.GlobalInit(["lstm_benchmark", "--caffe2_rnn_executor=%d" % int(args.rnn_executor)])
        m = OwnLSTM(args, args.rnn_executor, args.rnn_executor_num_threads, "bench")
    m.run(1)  # warm-up
    total_iters = 3 if args.data_size is None else max(1, args.data_size // (args.seq_length * args.batch_size * iters))
    rates = []
    for i in range(total_iters):
        dt = timed(m.run, iters)
        rates.append(eps(args, dt, iters))
        print("Iter: %d / %d. Entries Per Second: %.1fk." % ((i + 1) * iters, total_iters * iters, rates[-1] / 1000))
    suffix = " (with RNN executor)" if args.implementation == "own" and args.rnn_executor else ""
    print("Done. Total EPS: %.1fk%s" % (np.median(rates) / 1000, suffix))
    if args.implementation == "own":
        print(kernels_line())
    return {"implementation": args.implementation, "eps": float(np.median(rates)), "rates": rates}


def breakdown(args):
    """Each op of the training net run on its own (same workspace, same
    order), --rounds times with the executor trace on; the RNN ops' step
    loops from the trace. Medians in milliseconds."""
    from recurrent import core, trace, workspace
    workspace.GlobalInit(["lstm_benchmark", "--caffe2_rnn_executor=%d" % int(args.rnn_executor)])
    m = OwnLSTM(args, args.rnn_executor, args.rnn_executor_num_threads, "bench")
    m.run(1)
    nets = []
    for i, op in enumerate(m.model.net.Proto().op):
        n = core.Net("breakdown_%d" % i)
        n.Proto().op.extend([op])
        workspace.CreateNet(n, overwrite=True)
        nets.append((i, op.type, n))
    for _, _, n in nets:  # warm-up; with min_op_us > 0 also the executor's two timed serial runs
        workspace.RunNet(n, 2)
    times, loops = {}, {}
    for _ in range(args.rounds):
        with trace.tracing():
            for i, _, n in nets:
                t0 = time.perf_counter()
                workspace.RunNet(n)
                times.setdefault(i, []).append(1e3 * (time.perf_counter() - t0))
            for (idx, _), v in trace.summary(trace.fetch(m.model.net)).items():
                loops.setdefault(idx, []).append(v["wall_us"] / 1e3)
    total = sum(np.median(v) for v in times.values())
    rows = []
    print("op                             total ms   step loop ms   outside the loop ms   share")
    for i, ty, _ in nets:
        t = float(np.median(times[i]))
        lp = float(np.median(loops[i])) if i in loops else None
        rows.append({"index": i, "type": ty, "ms": t, "loop_ms": lp})
        print("%2d %-27s %8.2f   %12s   %19s   %4.1f%%" % (
            i, ty, t, "-" if lp is None else "%.2f" % lp, "-" if lp is None else "%.2f" % (t - lp), 100 * t / total))
    in_loops = sum(r["loop_ms"] for r in rows if r["loop_ms"] is not None)
    print("sum of ops %.2f ms; step loops %.2f ms (%.0f%%), outside them %.2f ms (%.0f%%)" % (
        total, in_loops, 100 * in_loops / total, total - in_loops, 100 * (total - in_loops) / total))
    status = trace.executor_status(m.model.net)
    print("ran: %s" % (", ".join("%s %s" % (s["direction"], s["mode"]) for s in status) if status else
                       "serial (executor off: add --rnn_executor)"))
    return {"breakdown": rows, "total_ms": total, "loops_ms": in_loops}


def compare(args):
    import torch
    from recurrent import _C, workspace
    budget = args.threads or _C.get_flag("num_cores")
    iters = args.iters or args.iters_to_report
    workspace.GlobalInit(["lstm_benchmark", "--caffe2_rnn_executor=1"])
    on = OwnLSTM(args, True, budget, "exec_on")
    w = on.weights()
    off = OwnLSTM(args, False, None, "exec_off", weights=w)
    gru = args.cell == "gru"
    lay = None if gru else OwnLSTM(args, False, None, "layered", weights=w, layered=True)
    tl = TorchLSTM(args, own=on)
    dense = DenseRate(args)

    # --- validate before timing
    on.run(1)
    off.run(1)
    ro, rf = on.results(), off.results()
    for k in ro:
        if not np.array_equal(ro[k], rf[k]):
            raise SystemExit("validation failed: executor on/off differ in %s (max %g)"
                             % (k, np.abs(ro[k] - rf[k]).max()))
    ldiff = None
    if lay is not None:
        lay.run(1)
        rl = lay.results()
        ldiff = max(float(np.abs(rl[k] - ro[k]).max()) if rl[k].size else 0.0
                    for k in ("output", "input_grad") if k in ro)
        if ldiff > 1e-4:
            raise SystemExit("validation failed: layered_LSTM vs LSTM differ by %g" % ldiff)
    tl.run(1)
    tdiff = float(np.abs(tl.out.detach().numpy() - ro["output"]).max())
    if tdiff > 1e-4:
        raise SystemExit("validation failed: ours vs torch.nn.%s output differ by %g"
                         % ("GRU" if gru else "LSTM", tdiff))
    print("validated: executor on == off bitwise (%d blobs)%s; |layered - ours| = %s; |ours - torch| = %.2e"
          % (len(ro), "" if args.rnn_executor_min_op_us == 0 else
             " (with min_op_us > 0 the first runs of 'executor on' are serial and timed)",
             "- (no layered GRU)" if lay is None else "%.2e" % ldiff, tdiff))

    configs = [("own_executor", None)]
    configs += [("own_serial_blas%d" % n, n) for n in range(1, budget + 1)]
    if lay is not None:
        configs += [("own_layered_serial_blas%d" % n, n) for n in range(1, budget + 1)]
    configs += [("torch_threads%d" % n, n) for n in range(1, budget + 1)]
    samples = {c: [] for c, _ in configs}
    blas_default = _C.get_flag("blas_num_threads")
    rates = []
    for r in range(args.rounds):
        _C.set_flag("blas_num_threads", budget)
        rates.append(dense.measure())
        for name, n in configs:
            if name == "own_executor":
                _C.set_flag("blas_num_threads", blas_default)
                on.run(1)
                dt = timed(on.run, iters)
            elif name.startswith("own_serial") or name.startswith("own_layered"):
                m = off if name.startswith("own_serial") else lay
                _C.set_flag("blas_num_threads", n)
                m.run(1)
                dt = timed(m.run, iters)
            else:
                torch.set_num_threads(n)
                tl.run(1)
                dt = timed(tl.run, iters)
            samples[name].append(eps(args, dt, iters))
    _C.set_flag("blas_num_threads", blas_default)
    med = {k: float(np.median(v)) for k, v in samples.items()}
    best_serial = max((k for k in med if k.startswith("own_serial")), key=med.get)
    best_torch = max((k for k in med if k.startswith("torch")), key=med.get)
    best_layered = max((k for k in med if k.startswith("own_layered")), key=med.get) if lay else None
    res = {
        "shape": {k: getattr(args, k) for k in ("hidden_dim", "input_dim", "batch_size", "seq_length", "num_layers",
                                                  "forward_only", "cell")},
        "thread_budget": budget,
        "entries_per_sec_median": med,
        "best_serial": best_serial,
        "best_torch": best_torch,
        "ratio_executor_vs_best_serial": med["own_executor"] / med[best_serial],
        "ratio_executor_vs_best_torch": med["own_executor"] / med[best_torch],
        "best_layered_serial": best_layered,
        "ratio_executor_vs_best_layered_serial": med["own_executor"] / med[best_layered] if lay else None,
        "flops_per_iteration": lstm_flops(args),
        "dense_gflops_best": max(rates),
        "torch_version": torch.__version__,
        "blas": blas_report(),
        "env": {k: os.environ.get(k) for k in _ENV_REPORTED},
    }
    from recurrent import _C
    res["packed_gemm_kernel"] = _C.get_flag("packed_gemm_kernel")
    print(kernels_line())
    print("entries/s (median of %d rounds):" % args.rounds)
    for k, v in med.items():
        print("  %-26s %10.0f" % (k, v))
    from recurrent import trace
    workspace.SwitchWorkspace(on.ws_name)
    res["executor_status"] = trace.executor_status(on.model.net)
    print("own_executor ran: %s (rnn_executor_min_op_us %g)" % (
        ", ".join("%s %s" % (s["direction"], s["mode"]) for s in res["executor_status"]),
        args.rnn_executor_min_op_us))
    print("executor vs best serial (%s): %.2fx" % (best_serial, res["ratio_executor_vs_best_serial"]))
    print("executor vs best torch  (%s): %.2fx" % (best_torch, res["ratio_executor_vs_best_torch"]))
    if lay is not None:
        print("executor vs best serial layered_LSTM, one op per layer (%s): %.2fx"
              % (best_layered, res["ratio_executor_vs_best_layered_serial"]))
    # the ceiling: all of an iteration's products at the best dense rate seen
    ceiling = eps(args, res["flops_per_iteration"] / (res["dense_gflops_best"] * 1e9), 1)
    res["ceiling_entries_per_sec"] = ceiling
    res["ceiling_vs_best_torch"] = ceiling / med[best_torch]
    print("products per iteration: %.2f GFLOP; one large FC of this shape ran at up to %.0f GFLOP/s (OpenBLAS, "
          "%d threads): at that rate an iteration's products allow at most %.0f entries/s = %.2fx best torch; "
          "executor at %.0f%% of it, torch at %.0f%%"
          % (res["flops_per_iteration"] / 1e9, res["dense_gflops_best"], budget, ceiling,
             res["ceiling_vs_best_torch"], 100 * med["own_executor"] / ceiling, 100 * med[best_torch] / ceiling))
    return res


def main(argv=None):
    args, unknown = parse_args(argv)
    if not args.forward_only and "RECURRENT_PACK_REUSE" not in os.environ:
        # training updates the weights every iteration: no pack survives (see the docstring)
        os.environ["RECURRENT_PACK_REUSE"] = "0"
    if unknown:
        from recurrent import workspace
        workspace.GlobalInit(["lstm_benchmark"] + unknown)
    res = compare(args) if args.compare else breakdown(args) if args.breakdown else single(args)
    if isinstance(res, dict):
        import recurrent
        res["config"] = recurrent.show_config(mode="dicts")  # what ran: kernels, BLAS, settings
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    return res


if __name__ == "__main__":
    main()
