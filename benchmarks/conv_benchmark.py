"""Conv (and, with --pool, MaxPool / AveragePool) against torch's, side by side in one process.

For each shape (a suite of small-image CNN layers by default, or the one given
with --batch_size --channels --image --filters --kernel): our Conv (forward)
and ConvGradient (dfilter, dbias, dX), run as one net, against
torch.nn.functional.conv2d with its autograd (the same three gradients), with
the same data. First the outputs are checked against each other (Y and, when
training, the three gradients), then the two are timed alternately, round by
round, with every thread count from 1 to the budget (OpenBLAS threads for
ours, torch.set_num_threads for torch); the best count of each counts. Prints
images per second and the ratio ours / torch per shape, and the kernels that
ran (threadpoolctl).

    python benchmarks/conv_benchmark.py                      # the suite, forward + backward
    python benchmarks/conv_benchmark.py --forward_only --json out.json
    python benchmarks/conv_benchmark.py --batch_size 32 --channels 16 --image 32 --filters 32 --kernel 3
    python benchmarks/conv_benchmark.py --pool               # MaxPool / AveragePool (+ gradients)
    python benchmarks/conv_benchmark.py --pool --order NHWC  # channels last: ours NHWC, torch channels_last

--pool runs a suite of pooling layers instead: our MaxPool / AveragePool and
their gradients (dX) against torch's max_pool2d / avg_pool2d with autograd,
validated and timed the same way (the thread counts are those our pooling
splits its planes over).

--order NHWC runs ours on NHWC blobs (the filter M x k x k x C, Caffe2's NHWC
layout) and torch on channels_last tensors; the results are compared in NCHW.

Our Conv is im2col + one OpenBLAS product per image and group (README,
"Conv"); torch runs oneDNN's direct convolution kernels on x86 CPUs.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# N, C, image, M, kernel: a first layer on RGB images, middle layers, MNIST's first layer
SUITE = [(32, 3, 32, 16, 3), (32, 16, 32, 32, 3), (8, 64, 28, 64, 3), (64, 32, 16, 64, 3),
         (16, 64, 14, 128, 3), (128, 1, 28, 20, 5)]
# N, C, image, kind, kernel, stride (no pads)
POOL_SUITE = [(32, 16, 32, "max", 2, 2), (32, 16, 32, "avg", 2, 2), (32, 64, 28, "max", 3, 2),
              (32, 64, 28, "avg", 3, 2), (8, 64, 56, "max", 3, 1), (64, 32, 16, "avg", 2, 2)]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch_size", type=int, default=None,
                   help="N (with the four below: one shape, no suite)")
    p.add_argument("--channels", type=int, default=None, help="C")
    p.add_argument("--image", type=int, default=None, help="the square image's side")
    p.add_argument("--filters", type=int, default=None, help="M, the output channels")
    p.add_argument("--kernel", type=int, default=None,
                   help="the square kernel's side (pad kernel // 2, stride 1)")
    p.add_argument("--forward_only", action="store_true")
    p.add_argument("--pool", action="store_true", help="the pooling suite instead of the convolutions")
    p.add_argument("--order", choices=["NCHW", "NHWC"], default="NCHW",
                   help="storage order: ours' order argument, torch's memory format (channels_last)")
    p.add_argument("--iters", type=int, default=5, help="runs per measurement")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median counts)")
    p.add_argument("--threads", type=int, default=None, help="thread budget (default: usable cores)")
    p.add_argument("--seed", type=int, default=2612)
    p.add_argument("--json", default=None, help="write the results as JSON to this file")
    args = p.parse_args(argv)
    one = [args.batch_size, args.channels, args.image, args.filters, args.kernel]
    if any(v is not None for v in one) and any(v is None for v in one):
        p.error("one shape needs all of --batch_size --channels --image --filters --kernel")
    if args.pool and one[0] is not None:
        p.error("--pool runs its own suite (no shape flags)")
    args.shapes = POOL_SUITE if args.pool else [tuple(one)] if one[0] is not None else SUITE
    return args


def to_order(v, order):
    """A 4-D NCHW array (or an M x C x k x k filter) in `order`'s layout; 1-D arrays as they are."""
    return np.ascontiguousarray(v.transpose(0, 2, 3, 1)) if order == "NHWC" and v.ndim == 4 else v


def from_order(v, order):
    """The inverse of to_order: back to the NCHW layout."""
    return np.ascontiguousarray(v.transpose(0, 3, 1, 2)) if order == "NHWC" and v.ndim == 4 else v


class Ours:
    def __init__(self, shape, x, w, b, dy, forward_only, order="NCHW"):
        from recurrent import core, workspace
        self.workspace = workspace
        self.order = order
        N, C, H, M, k = shape
        self.ws = "conv_bench_%d_%d_%d_%d_%d_%s" % (shape + (order,))
        workspace.SwitchWorkspace(self.ws, True)
        for name, v in (("x", x), ("w", w), ("b", b), ("dy", dy)):
            workspace.FeedBlob(name, to_order(v, order))
        self.net = core.Net("conv_bench")
        self.net.Conv(["x", "w", "b"], "y", kernel=k, pad=k // 2, order=order)
        if not forward_only:
            self.net.ConvGradient(["x", "w", "dy"], ["dw", "db", "dx"], kernel=k, pad=k // 2, order=order)
        workspace.CreateNet(self.net, overwrite=True)
        self.outputs = ["y"] + ([] if forward_only else ["dw", "db", "dx"])

    def run(self, iters):
        self.workspace.SwitchWorkspace(self.ws)
        self.workspace.RunNet(self.net, iters)

    def results(self):
        self.workspace.SwitchWorkspace(self.ws)
        return [from_order(self.workspace.FetchBlob(n), self.order) for n in self.outputs]


def torch_tensor(torch, v, order, grad=False):
    """v as a torch tensor, channels_last for NHWC (4-D only), requiring grad when asked."""
    t = torch.from_numpy(v.copy())
    if order == "NHWC" and v.ndim == 4:
        t = t.contiguous(memory_format=torch.channels_last)
    return t.requires_grad_(grad)


class Torch:
    def __init__(self, shape, x, w, b, dy, forward_only, order="NCHW"):
        import torch
        self.torch = torch
        self.k = shape[4]
        self.forward_only = forward_only
        grad = not forward_only
        self.x, self.w, self.b = (torch_tensor(torch, v, order, grad) for v in (x, w, b))
        self.dy = torch_tensor(torch, dy, order)

    def run(self, iters):
        torch, F = self.torch, self.torch.nn.functional
        for _ in range(iters):
            if self.forward_only:
                with torch.no_grad():
                    self.y = F.conv2d(self.x, self.w, self.b, padding=self.k // 2)
            else:
                self.y = F.conv2d(self.x, self.w, self.b, padding=self.k // 2)
                self.grads = torch.autograd.grad(self.y, [self.w, self.b, self.x], self.dy)

    def results(self):
        out = [self.y.detach().numpy()]
        if not self.forward_only:
            out += [g.numpy() for g in self.grads]
        return out


class OursPool:
    def __init__(self, shape, x, dy, forward_only, order="NCHW"):
        from recurrent import core, workspace
        self.workspace = workspace
        self.order = order
        N, C, H, kind, k, st = shape
        self.ws = "pool_bench_%d_%d_%d_%s_%d_%d_%s" % (shape + (order,))
        workspace.SwitchWorkspace(self.ws, True)
        workspace.FeedBlob("x", to_order(x, order))
        workspace.FeedBlob("dy", to_order(dy, order))
        op = "MaxPool" if kind == "max" else "AveragePool"
        self.net = core.Net("pool_bench")
        getattr(self.net, op)("x", "y", kernel=k, stride=st, order=order)
        if not forward_only:
            getattr(self.net, op + "Gradient")(["x", "y", "dy"], "dx", kernel=k, stride=st, order=order)
        workspace.CreateNet(self.net, overwrite=True)
        self.outputs = ["y"] + ([] if forward_only else ["dx"])

    run = Ours.run
    results = Ours.results


class TorchPool:
    def __init__(self, shape, x, dy, forward_only, order="NCHW"):
        import torch
        self.torch = torch
        N, C, H, kind, self.k, self.st = shape
        F = torch.nn.functional
        self.f = F.max_pool2d if kind == "max" else F.avg_pool2d
        self.forward_only = forward_only
        self.x = torch_tensor(torch, x, order, not forward_only)
        self.dy = torch_tensor(torch, dy, order)

    def run(self, iters):
        for _ in range(iters):
            if self.forward_only:
                with self.torch.no_grad():
                    self.y = self.f(self.x, self.k, self.st)
            else:
                self.y = self.f(self.x, self.k, self.st)
                self.grads = self.torch.autograd.grad(self.y, [self.x], self.dy)

    results = Torch.results


def timed(fn, iters):
    t0 = time.perf_counter()
    fn(iters)
    return time.perf_counter() - t0


def flops(shape, forward_only):
    """Multiply-adds x 2 of the products: Y, and in training dW and dX (the same count each)."""
    N, C, H, M, k = shape
    fwd = 2.0 * N * M * H * H * C * k * k
    return fwd if forward_only else 3 * fwd


def pair(args, shape):
    """(ours, torch's, the names of their results) for one shape, with the same data."""
    rng = np.random.default_rng(args.seed)
    if args.pool:
        N, C, H, kind, k, st = shape
        x = rng.standard_normal((N, C, H, H), dtype=np.float32)
        dy = rng.standard_normal((N, C, (H - k) // st + 1, (H - k) // st + 1), dtype=np.float32)
        fo, order = args.forward_only, args.order
        return OursPool(shape, x, dy, fo, order), TorchPool(shape, x, dy, fo, order), ["Y", "dX"]
    N, C, H, M, k = shape
    x = rng.standard_normal((N, C, H, H), dtype=np.float32)
    w = (rng.standard_normal((M, C, k, k), dtype=np.float32) / np.sqrt(C * k * k)).astype(np.float32)
    b = rng.standard_normal(M, dtype=np.float32)
    dy = rng.standard_normal((N, M, H, H), dtype=np.float32)
    fo, order = args.forward_only, args.order
    return (Ours(shape, x, w, b, dy, fo, order), Torch(shape, x, w, b, dy, fo, order),
            ["Y", "dfilter", "dbias", "dX"])


def bench_shape(args, shape, budget):
    import torch
    from recurrent import _C
    N = shape[0]
    ours, theirs, names = pair(args, shape)
    ours.run(1)
    theirs.run(1)
    worst = 0.0
    for name, a, t in zip(names, ours.results(), theirs.results()):
        scale = max(1.0, float(np.abs(t).max()))
        err = float(np.abs(a - t).max()) / scale
        if a.shape != t.shape or not err < 1e-4:
            raise SystemExit("validation failed at shape %s: %s differs from torch's by %g (relative to "
                             "its max)" % (shape, name, err))
        worst = max(worst, err)
    samples = {}
    blas_default = _C.get_flag("blas_num_threads")
    for _ in range(args.rounds):
        for n in range(1, budget + 1):
            _C.set_flag("blas_num_threads", n)
            ours.run(1)
            samples.setdefault("ours_blas%d" % n, []).append(N * args.iters / timed(ours.run, args.iters))
            torch.set_num_threads(n)
            theirs.run(1)
            rate = N * args.iters / timed(theirs.run, args.iters)
            samples.setdefault("torch_threads%d" % n, []).append(rate)
    _C.set_flag("blas_num_threads", blas_default)
    med = {k_: float(np.median(v)) for k_, v in samples.items()}
    best_ours = max((k_ for k_ in med if k_.startswith("ours")), key=med.get)
    best_torch = max((k_ for k_ in med if k_.startswith("torch")), key=med.get)
    keys = ["N", "C", "image"] + (["kind", "kernel", "stride"] if args.pool else ["M", "kernel"])
    return {"shape": dict(zip(keys, shape)), "images_per_sec_median": med,
            "best_ours": best_ours, "best_torch": best_torch,
            "ratio_ours_vs_torch": med[best_ours] / med[best_torch],
            "gflops_ours": None if args.pool else flops(shape, args.forward_only) * med[best_ours] / N / 1e9,
            "max_relative_difference": worst}


def main(argv=None):
    args = parse_args(argv)
    import torch
    from recurrent import _C
    sys.path.insert(0, HERE)
    from lstm_benchmark import blas_report, kernels_line
    budget = args.threads or _C.get_flag("num_cores")
    what = "forward only" if args.forward_only else "forward + backward (dX)" if args.pool else \
        "forward + backward (dfilter, dbias, dX)"
    print("%s%s, %s, %d rounds of %d runs, thread budget %d; ratio > 1: ours faster"
          % ("pooling, " if args.pool else "", what, args.order, args.rounds, args.iters, budget))
    head = "N, C, image, kind, k, stride" if args.pool else "N, C, image, M, kernel"
    print("%-26s %12s %12s %8s %10s" % (head, "ours img/s", "torch img/s", "ratio", "ours GF/s"))
    rows = []
    for shape in args.shapes:
        r = bench_shape(args, shape, budget)
        rows.append(r)
        med = r["images_per_sec_median"]
        gf = "-" if r["gflops_ours"] is None else "%.1f" % r["gflops_ours"]
        print("%-26s %12.0f %12.0f %7.2fx %10s" % (", ".join(map(str, shape)), med[r["best_ours"]],
                                                   med[r["best_torch"]], r["ratio_ours_vs_torch"], gf))
    ratios = [r["ratio_ours_vs_torch"] for r in rows]
    print("ours / torch: %.2fx to %.2fx (geometric mean %.2fx)"
          % (min(ratios), max(ratios), float(np.exp(np.mean(np.log(ratios))))))
    print(kernels_line())
    import recurrent
    res = {"forward_only": args.forward_only, "pool": args.pool, "order": args.order, "thread_budget": budget,
           "rows": rows,
           "torch_version": torch.__version__, "blas": blas_report(),
           "config": recurrent.show_config(mode="dicts")}  # what ran
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    return res


if __name__ == "__main__":
    main()
