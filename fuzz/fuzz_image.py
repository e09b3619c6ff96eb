"""Fuzz target: the convolution, pooling, padding and LRN ops (csrc/ops/conv.c, pool.c,
pad_image.c, lrn.c, convpool.c) with mostly valid geometries, which fuzz_ops.py's random arguments
almost never reach: 1-3 spatial dims of size 0-7 in either order, batch and channels 0-4, kernels,
strides, dilations, pads (now and then out of range, negative or huge), legacy_pad, global_pooling,
group, adj, count_include_pad, PadImage's modes; filters and biases of the right shape or off by
one; NaN / Inf in the data. The forward op runs, then its gradient op on the forward's output and a
random output gradient. Before each op its outputs are inferred statically; the checks are
fuzz_ops.py's: no crash, only documented exceptions, an op that runs gives what was inferred, the
workspace stays usable.

    python fuzz/fuzz_image.py [libFuzzer flags]      (needs atheris)
    python fuzz/fuzz_image.py --replay FILE...       (no atheris needed)
"""

import sys

import numpy as np

from common import API_ERRORS, Provider, check_usable, expected, main

from recurrent import core, workspace  # noqa: E402
from fuzz_ops import check_inferred, infer  # noqa: E402

CONV = ("Conv", "Conv1D", "Conv2D", "Conv3D")
POOL = ("MaxPool", "AveragePool", "MaxPool1D", "MaxPool2D", "AveragePool3D", "LpPool")
KINDS = ("conv", "conv_transpose", "pool", "pad", "lrn")


def small(p, lo=0, hi=4):
    """Mostly in [lo, hi]; sometimes a boundary value."""
    if p.bool(0.93):
        return p.int(lo, hi)
    return p.pick([-1, 0, 8, 2**31 - 1, 2**31, 2**40])


def spatial_args(p, nd, args):
    """kernels / strides / dilations / pads in one of Caffe2's spellings."""
    k = [small(p, 1, 4) for _ in range(nd)]
    if nd == 2 and p.bool(0.2):
        args["kernel"] = k[0]
    elif nd == 2 and p.bool(0.1):
        args["kernel_h"], args["kernel_w"] = k
    elif p.bool(0.95):
        args["kernels"] = k
    if p.bool(0.5):
        args["strides"] = [small(p, 1, 3) for _ in range(nd + (1 if p.bool(0.03) else 0))]
    if p.bool(0.3):
        args["dilations"] = [small(p, 1, 2) for _ in range(nd)]
    if p.bool(0.5):
        if nd == 2 and p.bool(0.3):
            args["pad"] = small(p, 0, 2)
        else:
            args["pads"] = [small(p, 0, 2) * (-1 if p.bool(0.05) else 1) for _ in range(2 * nd)]
    if p.bool(0.2):
        args["legacy_pad"] = p.int(0, 4)
    return k


def array(p, shape):
    a = np.asarray(np.random.RandomState(p.int(0, 2**16)).uniform(-2, 2, shape), np.float32)
    if a.size and p.bool(0.05):
        a.flat[p.int(0, a.size - 1)] = p.pick([np.nan, np.inf, -np.inf])
    return a


def off_by_one(p, shape):
    """The shape, or now and then one dim off by one (or a dim dropped)."""
    shape = list(shape)
    if shape and p.bool(0.05):
        i = p.int(0, len(shape) - 1)
        shape[i] = max(0, shape[i] + p.pick([-1, 1]))
    if shape and p.bool(0.02):
        shape.pop()
    return tuple(shape)


def build(p):
    """(forward op, gradient op builder, feeds)."""
    kind = p.pick(KINDS)
    nd = p.int(1, 3) if kind != "pad" else 2
    nhwc = p.bool(0.4)
    N, C = small(p, 0, 3), small(p, 0, 4)
    sp = [small(p, 0, 7) for _ in range(nd if p.bool(0.97) else nd + 1)]
    if any(v < 0 or v > 64 for v in [N, C] + sp):
        N, C, sp = 1, 2, [3] * nd  # keep the data small; huge sizes come through the arguments
    x_shape = (N,) + tuple(sp) + (C,) if nhwc else (N, C) + tuple(sp)
    args = {"order": "NHWC" if nhwc else "NCHW"} if (nhwc or p.bool(0.5)) else {}
    feeds = {"x": array(p, x_shape)}
    if kind in ("conv", "conv_transpose"):
        k = spatial_args(p, nd, args)
        G = p.pick([1, 1, 1, 2, 3])
        if G != 1:
            args["group"] = G
        M = p.int(0, 4) * G
        kk = [v if 0 < v < 8 else 1 for v in k]
        if kind == "conv":
            cg = C // G if G and C % G == 0 else C
            w = (M,) + tuple(kk) + (cg,) if nhwc else (M, cg) + tuple(kk)
            t = p.pick(CONV)
        else:
            mg = M // G if G else M
            w = (C,) + tuple(kk) + (mg,) if nhwc else (C, mg) + tuple(kk)
            if p.bool(0.4):
                args["adjs"] = [small(p, 0, 2) for _ in range(nd)]
            t = "ConvTranspose"
            M = mg * G
        feeds["w"] = array(p, off_by_one(p, w))
        ins = ["x", "w"]
        if p.bool(0.6):
            feeds["b"] = array(p, off_by_one(p, (M,)))
            ins.append("b")
        op = core.CreateOperator(t, ins, ["y"], **args)
        gargs = dict(args, no_bias=1) if len(ins) == 2 else dict(args)
        gouts = ["dw", "dx"] if len(ins) == 2 else ["dw", "db", "dx"]
        if p.bool(0.2):
            gouts = gouts[:-1]  # no dX
        return op, lambda: core.CreateOperator(t + "Gradient", ["x", "w", "dy"], gouts, **gargs), feeds
    if kind == "pool":
        t = p.pick(POOL)
        if p.bool(0.15):
            args["global_pooling"] = 1
        else:
            spatial_args(p, nd, args)
        if "Average" in t and p.bool(0.3):
            args["count_include_pad"] = 1
        if t == "LpPool" and p.bool(0.7):
            args["p"] = p.pick([2.0, 1.0, 0.5, 3.0, 2.5, float("inf"), 0.0, -1.0, float("nan")])
        op = core.CreateOperator(t, ["x"], ["y"], **args)
        return op, lambda: core.CreateOperator(t + "Gradient", ["x", "y", "dy"], ["dx"], **args), feeds
    if kind == "pad":
        args["mode"] = p.pick(["constant", "reflect", "edge", "wrap"])
        if p.bool(0.7):
            args["pads"] = [small(p, 0, 3) * (-1 if p.bool(0.2) else 1) for _ in range(4)]
        elif p.bool(0.5):
            args["pad"] = small(p, 0, 3)
        if p.bool(0.3):
            args["value"] = p.pick([0.5, -1.0, float("nan")])
        op = core.CreateOperator("PadImage", ["x"], ["y"], **args)
        return op, lambda: core.CreateOperator("PadImageGradient", ["dy"], ["dx"], **args), feeds
    args.update(size=p.pick([1, 3, 5, 2, 0, 7]), alpha=p.pick([0.0, 1e-3, 0.5, 2.0]),
                beta=p.pick([0.0, 0.75, 1.5]), bias=p.pick([1.0, 2.0, 0.0, -1.0]))
    outs = ["y", "scale"] if p.bool(0.5) else ["y"]
    op = core.CreateOperator("LRN", ["x"], outs, **args)
    return op, lambda: core.CreateOperator("LRNGradient", ["x", "y", "dy"], ["dx"], **args), feeds


class _TooBig(Exception):
    """A valid op whose output has 2^22 to 2^30 elements (LpPool and its gradient: 2^16, since each
    window cell costs a pow() and a window may cover the whole image): the allocation may succeed and
    filling it takes seconds (libFuzzer's slow units; CI's fuzz run saved an LpPool one of over 10 s).
    Larger outputs still run: their allocation must fail fast with MemoryError (the plain run caps the
    address space at 4 GB)."""


def run_checked(op):
    inferred = infer(op)
    low = 2**16 if op.type.startswith("LpPool") else 2**22
    if not isinstance(inferred, Exception):
        for t in inferred:
            if t is not None and low < int(np.prod(t.shape, dtype=object)) < 2**30:
                raise _TooBig()
    workspace.RunOperatorOnce(op)
    check_inferred(op, inferred)


def test_one_input(data):
    p = Provider(data)
    workspace.ResetWorkspace()
    op, grad, feeds = build(p)
    for k, v in feeds.items():
        workspace.FeedBlob(k, v)
    try:
        run_checked(op)
        y = workspace.FetchBlob("y")
        workspace.FeedBlob("dy", array(p, off_by_one(p, y.shape)))
        run_checked(grad())
    except API_ERRORS as e:
        expected(e)
    except _TooBig:
        pass
    check_usable(workspace, core)


if __name__ == "__main__":
    main(test_one_input, sys.argv)
