"""The step FC + Sum fusion (README "The gates' Sum done by the FC") on and
off, side by side in one process: the same LSTM as lstm_benchmark.py (same
flags), created once with RECURRENT_STEP_FUSION=0 and once with it on, the
same weights; checks that both give the same bits, then alternates the two
round by round. Each round times --iters iterations (wall) and traces one
more (recurrent.trace: the forward and backward step loops' wall time and
the workers' time in FC, FCGradient and Sum). Prints medians and the median
of the per-round ratios unfused / fused (> 1: the fusion is faster).

    python benchmarks/fusion_ab.py --rnn_executor --hidden_dim 256 --batch_size 16 --num_layers 4 \\
        --seq_length 50 --input_dim 40 --iters 5 --rounds 30 [--forward_only]
"""

import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lstm_benchmark as lb  # noqa: E402


def main(argv=None):
    args, _ = lb.parse_args(argv)
    if not args.forward_only:
        os.environ.setdefault("RECURRENT_PACK_REUSE", "0")  # as lstm_benchmark.py: training repacks every run
    from recurrent import _C, trace, workspace
    workspace.GlobalInit(["fusion_ab", "--caffe2_rnn_executor=%d" % (1 if args.rnn_executor else 0)])
    threads = args.rnn_executor_num_threads or _C.get_flag("num_cores")
    print(lb.kernels_line())
    nets = {}
    for f in ("0", "1"):
        os.environ["RECURRENT_STEP_FUSION"] = f  # read when the net is created
        nets[f] = lb.OwnLSTM(args, args.rnn_executor, threads, "fusion_ab" + f,
                             weights=nets["0"].weights() if f == "1" else None)
    del os.environ["RECURRENT_STEP_FUSION"]
    for f in ("0", "1"):
        before = _C.get_flag("fused_sums")
        nets[f].run(1)
        print("fusion %s: %d sums done by FCs in one iteration" % (f, _C.get_flag("fused_sums") - before))
    a, b = nets["0"].results(), nets["1"].results()
    same = all(a[k].tobytes() == b[k].tobytes() for k in a)
    print("fused and unfused results bitwise equal (%d blobs): %s" % (len(a), same))
    if not same:
        return 1
    iters = args.iters or 5
    res = {f: collections.defaultdict(list) for f in nets}
    for r in range(args.rounds):
        for f in (("0", "1") if r % 2 == 0 else ("1", "0")):
            t0 = time.perf_counter()
            nets[f].run(iters)
            res[f]["iteration (wall)"].append((time.perf_counter() - t0) / iters * 1e3)
            with trace.tracing():
                nets[f].run(1)
            ev = trace.fetch(nets[f].model.net)
            for d in ("forward", "backward"):
                e = [x for x in ev if x["direction"] == d]
                if not e:
                    continue
                res[f][d + " loop (wall)"].append((max(x["end_us"] for x in e) - min(x["start_us"] for x in e)) / 1e3)
                res[f][d + " FC+Sum (workers)"].append(
                    sum(x["end_us"] - x["start_us"] for x in e if x["type"] in ("FC", "FCGradient", "Sum")) / 1e3)
    print("%-28s %10s %10s %14s %s" % ("ms, median of %d rounds" % args.rounds, "unfused", "fused", "unfused/fused",
                                        "rounds fused faster"))
    for k in res["0"]:
        u, f = np.array(res["0"][k]), np.array(res["1"][k])
        print("%-28s %10.2f %10.2f %13.3fx %d/%d" % (k, np.median(u), np.median(f), np.median(u / f),
                                                     int((f < u).sum()), len(u)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
