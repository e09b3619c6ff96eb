"""Step-by-step generation: a forward-only LSTM run for one timestep per call
(a sampling loop calls it once per token), side by side in one process:

  ours            the library's defaults: executor enabled (min_op_us 4, so a
                  single-timestep run is serial), step-weight packs kept
                  between calls (the weights do not change)
  ours_no_reuse   the same with RECURRENT_PACK_REUSE=0 when the net is created:
                  the step weights are packed again at every call
  ours_executor   min_op_us 0: the executor even for one timestep (Caffe2's
                  behaviour)
  torch_threadsK  torch.nn.LSTM under no_grad, the same weights, with
                  torch.set_num_threads(K) for K from 1 to our thread count
                  (the best one counts)

Every variant is called from a Python loop, one call per token, as a
sampling loop would. Checks first that our three variants give the same bits
and that torch matches them, then alternates the variants round by round and
prints the median microseconds per call and the ratios.

    python benchmarks/step_generation.py --hidden_dim 256 --num_layers 2 --input_dim 64
"""

import copy
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lstm_benchmark as lb  # noqa: E402


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    # one timestep, batch 1, forward only, unless given
    for flag, value in (("--seq_length", "1"), ("--batch_size", "1"), ("--hidden_dim", "256"),
                        ("--num_layers", "2"), ("--input_dim", "64"), ("--rounds", "7"), ("--iters", "200")):
        if flag not in argv:
            argv += [flag, value]
    if "--forward_only" not in argv:
        argv.append("--forward_only")
    args, _ = lb.parse_args(argv)
    import torch
    from recurrent import _C, workspace
    workspace.GlobalInit(["step_generation", "--caffe2_rnn_executor=1"])
    threads = args.rnn_executor_num_threads or _C.get_flag("num_cores")
    torch.set_num_threads(threads)
    variants = {}
    for name, min_op_us, reuse in (("ours", 4.0, "1"), ("ours_no_reuse", 4.0, "0"), ("ours_executor", 0.0, "1")):
        a = copy.copy(args)
        a.rnn_executor_min_op_us = min_op_us
        os.environ["RECURRENT_PACK_REUSE"] = reuse  # read when the net is created
        variants[name] = lb.OwnLSTM(a, True, threads, "gen_" + name,
                                    weights=variants["ours"].weights() if variants else None)
    del os.environ["RECURRENT_PACK_REUSE"]
    torch_lstm = lb.TorchLSTM(args, own=variants["ours"])
    print(lb.kernels_line(reuse="per variant"))

    outs = {}
    for name, v in variants.items():
        v.run(3)
        outs[name] = v.results()["output"]
    same = all(outs[n].tobytes() == outs["ours"].tobytes() for n in outs)
    torch_lstm.run(1)
    diff = float(np.max(np.abs(torch_lstm.out.detach().numpy().reshape(outs["ours"].shape) - outs["ours"])))
    print("validated: our variants bitwise equal: %s; |ours - torch| = %.2e" % (same, diff))
    if not same or diff > 1e-4:
        return 1

    def ours_call(v):
        ws, name = v.workspace, v.model.net.Name()

        def run(calls):
            ws.SwitchWorkspace(v.ws_name)
            for _ in range(calls):
                ws.RunNet(name)
        return run

    def torch_call(k):
        def run(calls):
            torch.set_num_threads(k)
            with torch.no_grad():
                for _ in range(calls):
                    torch_lstm.lstm(torch_lstm.x, (torch_lstm.h0, torch_lstm.c0))
        return run

    calls = args.iters
    fns = {n: ours_call(v) for n, v in variants.items()}
    for k in range(1, threads + 1):
        fns["torch_threads%d" % k] = torch_call(k)
    times = {n: [] for n in fns}
    for f in fns.values():  # warm-up (the executor's timed runs, torch's first calls)
        f(5)
    for r in range(args.rounds):
        order = list(fns) if r % 2 == 0 else list(reversed(list(fns)))
        for n in order:
            t0 = time.perf_counter()
            fns[n](calls)
            times[n].append((time.perf_counter() - t0) / calls * 1e6)
    med = {n: float(np.median(t)) for n, t in times.items()}
    best_torch = min((n for n in med if n.startswith("torch")), key=med.get)
    print("hidden %d, %d layers, batch %d, input %d, one timestep per call, %d threads; us per call "
          "(median of %d rounds of %d calls):" % (args.hidden_dim, args.num_layers, args.batch_size,
                                                  args.input_dim, threads, args.rounds, calls))
    for n, v in med.items():
        print("  %-14s %9.1f   (%.2fx ours)" % (n, v, v / med["ours"]))
    print("best torch (%s) / ours: %.2fx; packed every call / ours: %.2fx" % (
        best_torch, med[best_torch] / med["ours"], med["ours_no_reuse"] / med["ours"]))
    from recurrent import trace
    variants["ours"].workspace.SwitchWorkspace(variants["ours"].ws_name)
    print("ours ran: %s" % ", ".join("%s %s (last run: %s)" % (s["direction"], s["mode"], s["last_run"])
                                      for s in trace.executor_status(variants["ours"].model.net)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
