"""InferenceLSTM against torch.nn.LSTM on the same weights and data, side by side in one process.

Checks first that the op's output, hy and cy match torch's (to 1e-4), then alternates the two round by
round (each round: --iters runs of each) and prints the median milliseconds per run, the entries/s
(timesteps x batch per second) and the ratio (ours over torch: above 1 means faster). torch runs on
--threads threads (torch.set_num_threads); ours on OpenBLAS's thread count (the library's budget, the
same --threads by default). Also prints the OpenBLAS kernel (threadpoolctl, when installed).

    python benchmarks/inference_lstm_benchmark.py --hidden_dim 256 --batch_size 16 --num_layers 4
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num_layers", type=int, default=4)
    p.add_argument("--hidden_dim", type=int, default=256)
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--input_dim", type=int, default=40)
    p.add_argument("--seq_length", type=int, default=50)
    p.add_argument("--bidirectional", action="store_true")
    p.add_argument("--batch_first", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", help="write the results here")
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    import torch
    from recurrent import core, workspace
    import recurrent
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    L, H, N, T, D = a.num_layers, a.hidden_dim, a.batch_size, a.seq_length, a.input_dim
    dirs = 2 if a.bidirectional else 1
    lstm = torch.nn.LSTM(D, H, num_layers=L, bidirectional=a.bidirectional, batch_first=a.batch_first)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (N, T, D) if a.batch_first else (T, N, D)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (L * dirs, N, H)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (L * dirs, N, H)).astype(np.float32)
    names = ["x", "h0", "c0"]
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("h0", h0)
    workspace.FeedBlob("c0", c0)
    for name, prm in lstm.named_parameters():
        workspace.FeedBlob(name, prm.detach().numpy().copy())
        names.append(name)
    net = core.Net("inference_lstm_bench")
    net.Proto().op.append(core.CreateOperator("InferenceLSTM", names, ["y", "hy", "cy"], num_layers=L,
                                              bidirectional=int(a.bidirectional), batch_first=int(a.batch_first)))
    workspace.CreateNet(net)
    xt, h0t, c0t = torch.from_numpy(x), torch.from_numpy(h0), torch.from_numpy(c0)

    # validate before timing
    workspace.RunNet(net.Proto().name)
    with torch.no_grad():
        y, (hy, cy) = lstm(xt, (h0t, c0t))
    diff = max(float(np.max(np.abs(workspace.FetchBlob(b) - r.numpy())))
               for b, r in (("y", y), ("hy", hy), ("cy", cy)))
    if not diff < 1e-4:
        sys.exit("InferenceLSTM differs from torch.nn.LSTM by %g" % diff)

    def ours():
        workspace.RunNet(net.Proto().name, a.iters)

    def theirs():
        with torch.no_grad():
            for _ in range(a.iters):
                lstm(xt, (h0t, c0t))

    times = {"ours": [], "torch": []}
    ours()
    theirs()  # warm-up
    for _ in range(a.rounds):
        for key, fn in (("ours", ours), ("torch", theirs)):
            t0 = time.perf_counter()
            fn()
            times[key].append((time.perf_counter() - t0) / a.iters)
    med = {k: statistics.median(v) for k, v in times.items()}
    res = {
        "shape": {"num_layers": L, "hidden_dim": H, "batch_size": N, "seq_length": T, "input_dim": D,
                  "bidirectional": a.bidirectional, "batch_first": a.batch_first, "threads": a.threads},
        "max_abs_diff_vs_torch": diff,
        "ms": {k: v * 1e3 for k, v in med.items()},
        "entries_per_s": {k: T * N / v for k, v in med.items()},
        "ours_over_torch": med["torch"] / med["ours"],
        "blas_threads": recurrent._C.get_flag("blas_num_threads"),
        "packed_kernel": recurrent._C.get_flag("packed_gemm_kernel"),
    }
    try:
        from threadpoolctl import threadpool_info
        res["blas"] = [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
                       for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        res["blas"] = "threadpoolctl not installed"
    print("InferenceLSTM vs torch.nn.LSTM: %d layers%s, hidden %d, batch %d, T %d, input %d, %d threads"
          % (L, " bidirectional" if a.bidirectional else "", H, N, T, D, a.threads))
    print("  outputs match torch to %.2g" % diff)
    for k in ("ours", "torch"):
        print("  %-6s %8.2f ms/run  %10.0f entries/s" % (k, res["ms"][k], res["entries_per_s"][k]))
    print("  ours / torch: %.2fx (median of %d rounds of %d runs)" % (res["ours_over_torch"], a.rounds, a.iters))
    print("  OpenBLAS threads %s, packed kernel %s; %s" % (res["blas_threads"], res["packed_kernel"], res["blas"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
