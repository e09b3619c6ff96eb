"""LpPool and LpPoolGradient (csrc/ops/pool.c), the gradient maker (recurrent/_grad_pool.py): NumPy
float64 references over both orders, 1-3 spatial dims, strides, pads, every legacy_pad mode, global
pooling and p in {1, 2, 3, 0.5, 2.5, inf}; no overflow / underflow of |x|^p; the gradient's
definition at x = 0 and Y = 0; empty tensors, NaN, the same bits every run; gradients by finite
differences; torch parity; Caffe2's documented example; bad input with exact messages."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads, raises
from test_ops_math import close, f32, feed, op, run  # the same helpers
from test_ops_pool import (CAFFE_LEGACY_POOLING, CASES, ORDERS, SAME, VALID, from_nc, geometry, pool_args,
                           shape_of, spatial_of, to_nc, windows)

PS = [1.0, 2.0, 3.0, 0.5, 2.5]


# ---------------------------------------------------------------- references (float64)
def lp_ref(x, g, order, p):
    """(sum over the clipped window of |x|^p)^(1/p); p = inf: max |x|; a window with no cell: 0."""
    xs = np.abs(to_nc(x, order))
    N, C = xs.shape[:2]
    y = np.zeros((N, C) + tuple(out for _, out, _, _, _ in g))
    for idx, sl, _ in windows(g):
        w = xs[(slice(None), slice(None)) + sl].reshape(N, C, -1)
        if w.shape[2] == 0:
            continue
        at = (slice(None), slice(None)) + idx
        y[at] = w.max(axis=2) if p == np.inf else (w ** p).sum(axis=2) ** (1 / p)
    return from_nc(y, order)


def lp_grad_ref(x, y, dy, g, order, p):
    """dX[x] += dY[y] * sign(x) * (|x| / Y[y])^(p-1) over every window y containing x; 0 where x = 0."""
    xs, ys, ds = to_nc(x, order), to_nc(y, order), to_nc(dy, order)
    dx = np.zeros(xs.shape)
    for idx, sl, _ in windows(g):
        at = (slice(None), slice(None)) + idx
        win = (slice(None), slice(None)) + sl
        xw = xs[win]
        yw = ys[at][(...,) + (None,) * len(sl)]
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(xw == 0, 0.0, np.sign(xw) * (np.abs(xw) / yw) ** (p - 1))
        dx[win] += slope * ds[at][(...,) + (None,) * len(sl)]
    return from_nc(dx, order)


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("spatial,kernels,strides,pads", CASES)
def test_lp_pool_forward(rng, order, spatial, kernels, strides, pads, p):
    x = f32(rng, *shape_of(2, 3, spatial, order), lo=-3, hi=3)
    feed(x=x)
    y = run("LpPool", ["x"], ["y"], order=order, p=p, **pool_args(kernels, strides, pads))
    close(y, lp_ref(x, geometry(spatial, kernels, strides, pads), order, p), 1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_lp_pool_old_argument_forms_and_default_p(rng, order):
    """kernel / stride / pad scalars, kernel_h + kernel_w ...; p defaults to 2 (an int p is accepted)."""
    x = f32(rng, *shape_of(2, 3, (7, 8), order), lo=-3, hi=3)
    feed(x=x)
    y = run("LpPool", ["x"], ["y"], order=order, kernel=3, stride=2, pad=1)
    close(y, lp_ref(x, geometry((7, 8), (3, 3), (2, 2), (1, 1, 1, 1)), order, 2.0), 1e-6)
    assert run("LpPool", ["x"], ["y2"], order=order, kernel=3, stride=2, pad=1, p=2).tobytes() == y.tobytes()
    y = run("LpPool", ["x"], ["y"], order=order, kernel_h=3, kernel_w=2, stride_h=1, stride_w=3, pad_t=2,
            pad_l=0, pad_b=1, pad_r=1, p=3.0)
    close(y, lp_ref(x, geometry((7, 8), (3, 2), (1, 3), (2, 0, 1, 1)), order, 3.0), 1e-6)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("legacy", [VALID, SAME, CAFFE_LEGACY_POOLING])
@pytest.mark.parametrize("p", [1.0, 2.5])
@pytest.mark.parametrize("spatial,kernels,strides,pads", [
    ((7, 8), (3, 2), (2, 3), (1, 0)), ((9,), (4,), (3,), (2,)), ((5, 5, 4), (3, 2, 2), (2, 2, 3), (1, 1, 0)),
    ((5,), (2,), (2,), (0,)),
])
def test_lp_pool_legacy_pad(rng, order, legacy, p, spatial, kernels, strides, pads):
    nd = len(spatial)
    x = f32(rng, *shape_of(2, 3, spatial, order), lo=-3, hi=3)
    feed(x=x)
    args = dict(kernels=list(kernels), strides=list(strides))
    full = list(pads) * 2
    if legacy == CAFFE_LEGACY_POOLING:
        args["pads"] = full
    y = run("LpPool", ["x"], ["y"], order=order, legacy_pad=legacy, p=p, **args)
    g = geometry(spatial, kernels, strides, full if legacy == CAFFE_LEGACY_POOLING else [0] * 2 * nd, legacy)
    close(y, lp_ref(x, g, order, p), 1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_lp_pool_window_past_the_image(order):
    """CAFFE_LEGACY_POOLING, head pad 0, stride > kernel: the last window has no cell: 0, no gradient."""
    x = np.arange(1, 11, dtype=np.float32).reshape(shape_of(2, 1, (5,), order))
    feed(x=x)
    args = dict(kernels=[1], strides=[3], pads=[0, 0], legacy_pad=CAFFE_LEGACY_POOLING, order=order, p=3.0)
    y = run("LpPool", ["x"], ["y"], **args)
    assert y.reshape(2, 3).tolist() == [[1, 4, 0], [6, 9, 0]]
    feed(dy=np.full(y.shape, 2.0, np.float32))
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], **args)
    assert dx.reshape(2, 5).tolist() == [[2, 0, 0, 2, 0]] * 2


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("spatial", [(5,), (4, 3), (3, 2, 4), (1, 1)])
@pytest.mark.parametrize("p", [2.0, 0.5])
def test_lp_global_pooling(rng, order, spatial, p):
    x = f32(rng, *shape_of(3, 2, spatial, order), lo=-3, hi=3)
    feed(x=x)
    y = run("LpPool", ["x"], ["y"], order=order, global_pooling=1, p=p)
    close(y, lp_ref(x, geometry(spatial, None, None, None, global_pooling=True), order, p), 1e-6)
    assert spatial_of(y.shape, order) == (1,) * len(spatial)


def test_caffe2_documented_example():
    """The X and Y of Caffe2's LpPool doc (kernel 2, stride 2, p 2 on a 6 x 6 NCHW image)."""
    x = np.array([[-1.1113514, -1.1173418, -0.1504435, 0.1327146, -1.2221841, -0.5654315],
                  [-1.9209646, -0.04675794, 0.8604731, 1.2042469, 0.28154245, 0.38656202],
                  [-0.8772837, -0.03264008, 0.26222762, 0.28526652, 0.321102, -2.5891325],
                  [-0.9248281, 1.440776, -0.56832, -0.6017927, 1.2262512, -2.1443934],
                  [0.5194415, -1.6858683, 0.45221648, 0.65029615, -0.8574544, 0.8121054],
                  [0.25902653, 0.4934758, 0.49870652, -0.48134378, -0.9178449, -0.07626943]], np.float32)
    feed(x=x.reshape(1, 1, 6, 6))
    y = run("LpPool", ["x"], ["y"], kernel=2, stride=2, p=2.0)
    close(y[0, 0], [[2.4851248, 1.49361, 1.4290358], [1.9240153, 0.9139378, 3.5928857],
                    [1.8500228, 1.0525136, 1.4976646]], 1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_lp_pool_p_inf_and_large_p(rng, order):
    """p = inf is the max of |x| (the L-inf norm); a large finite p comes close to it."""
    x = f32(rng, *shape_of(2, 3, (6, 7), order), lo=-3, hi=3)
    feed(x=x)
    g = geometry((6, 7), (3, 2), (2, 2), (1, 0, 1, 1))
    y = run("LpPool", ["x"], ["y"], order=order, p=np.inf, **pool_args((3, 2), (2, 2), (1, 0, 1, 1)))
    close(y, lp_ref(x, g, order, np.inf), 0)
    y100 = run("LpPool", ["x"], ["y"], order=order, p=100.0, **pool_args((3, 2), (2, 2), (1, 0, 1, 1)))
    close(y100, lp_ref(x, g, order, 100.0), 1e-6)
    assert (y100 >= y).all() and (y100 <= y * 1.02).all()


def test_lp_pool_no_overflow_or_underflow():
    """|x|^p is never formed: values whose powers leave the float (and double) range still give the norm."""
    for scale in (1e-30, 1e30, 1e-42):
        x = (np.array([[[3, -4, 0, 12]]], np.float64) * scale).astype(np.float32)
        feed(x=x)
        for p in (2.0, 3.0, 40.0):
            ref = (np.abs(x.astype(np.float64)) / scale) ** p
            ref = np.array([ref[..., :2].sum(), ref[..., 2:].sum()]) ** (1 / p) * scale
            y = run("LpPool", ["x"], ["y"], kernels=[2], strides=[2], p=p)
            close(y.ravel(), ref, 1e-5 if scale > 1e-40 else 0.3)  # 1e-42 is subnormal (few bits)
            assert np.isfinite(y).all() and (y > 0).all()


def test_lp_pool_nan_and_infinities():
    """A NaN in a window gives NaN; an inf (and no NaN) gives inf; a window of zeros gives 0."""
    x = np.array([[[np.nan, 1, 2, np.inf, -np.inf, 1, 0, 0, 0, np.inf, np.nan, 0]]], np.float32)
    feed(x=x)
    for p in (0.5, 1.0, 2.0, np.inf):
        y = run("LpPool", ["x"], ["y"], kernels=[3], strides=[3], p=p)
        assert np.isnan(y[0, 0, 0]) and np.isnan(y[0, 0, 3]) and y[0, 0, 1] == np.inf and y[0, 0, 2] == 0
    x = np.array([[[1, np.nan], [np.nan, 2], [3, 4]]], np.float32)  # NHWC: per channel
    feed(x=x)
    assert np.isnan(run("LpPool", ["x"], ["y"], kernels=[3], order="NHWC")).all()


# ---------------------------------------------------------------- gradient op
@pytest.mark.parametrize("p", PS + [np.inf])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("spatial,kernels,strides,pads", CASES[::2] + CASES[5:7])
def test_lp_pool_gradient_op(rng, order, spatial, kernels, strides, pads, p):
    x = f32(rng, *shape_of(2, 3, spatial, order), lo=-3, hi=3)
    args = dict(order=order, p=p, **pool_args(kernels, strides, pads))
    feed(x=x)
    y = run("LpPool", ["x"], ["y"], **args)
    dy = f32(rng, *y.shape)
    feed(dy=dy)
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], **args)
    close(dx, lp_grad_ref(x, y, dy, geometry(spatial, kernels, strides, pads), order, p), 1e-5)


@pytest.mark.parametrize("p", PS)
def test_lp_pool_gradient_at_zero(p):
    """x = 0 gets gradient 0 (Caffe2: NaN for p < 2, 0 * inf, and for Y = 0, 0 / 0); a window of zeros
    (Y = 0) gives 0 everywhere; a non-finite dY still reaches x = 0 as NaN (0 * inf), as in MaxPool."""
    x = np.array([[[0, 2, 0, 0, -1, 0]]], np.float32)
    feed(x=x)
    args = dict(kernels=[2], strides=[2], p=p)
    y = run("LpPool", ["x"], ["y"], **args)
    assert y[0, 0].tolist()[1] == 0
    feed(dy=np.array([[[3, 5, 7]]], np.float32))
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], **args)
    assert dx.tolist() == [[[0, 3, 0, 0, -7, 0]]]
    feed(dy=np.array([[[np.inf, np.nan, 7]]], np.float32))
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], **args)
    assert np.isnan(dx[0, 0, [0, 2, 3]]).all() and dx[0, 0, 1] == np.inf
    assert dx[0, 0, 4:].tolist() == [-7, 0]


def test_lp_pool_gradient_nan():
    """A NaN in X gives NaN Y, and NaN to every cell of its window; p = inf: ties all get dY."""
    x = np.array([[[np.nan, 1, 2, 3]]], np.float32)
    feed(x=x)
    y = run("LpPool", ["x"], ["y"], kernels=[2], strides=[2])
    feed(dy=np.array([[[5, 7]]], np.float32))
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], kernels=[2], strides=[2])
    assert np.isnan(dx[0, 0, :2]).all() and np.isfinite(dx[0, 0, 2:]).all()
    feed(x=np.array([[[-3, 3, 1, 2]]], np.float32))
    y = run("LpPool", ["x"], ["y"], kernels=[2], strides=[2], p=np.inf)
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], kernels=[2], strides=[2], p=np.inf)
    assert y.tolist() == [[[3, 2]]] and dx.tolist() == [[[-5, 5, 0, 7]]]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,C", [(0, 3), (2, 0), (0, 0)])
def test_lp_pool_empty(order, N, C):
    x = np.zeros(shape_of(N, C, (6, 5), order), np.float32)
    feed(x=x)
    y = run("LpPool", ["x"], ["y"], order=order, kernel=2, stride=2, p=3.0)
    assert y.shape == shape_of(N, C, (3, 2), order) and y.dtype == np.float32
    feed(dy=y)
    dx = run("LpPoolGradient", ["x", "y", "dy"], ["dx"], order=order, kernel=2, stride=2, p=3.0)
    assert dx.shape == x.shape


@pytest.mark.parametrize("order", ORDERS)
def test_lp_pool_same_bits_every_run(rng, order):
    x = f32(rng, *shape_of(3, 5, (11, 13), order), lo=-100, hi=100)
    feed(x=x, dy=f32(rng, *shape_of(3, 5, (6, 7), order)))
    args = dict(order=order, kernel=3, stride=2, pad=1, p=2.5)
    ys = [run("LpPool", ["x"], ["y"], **args).tobytes() for _ in range(3)]
    dxs = [run("LpPoolGradient", ["x", "y", "dy"], ["dx"], **args).tobytes() for _ in range(3)]
    assert len(set(ys)) == 1 and len(set(dxs)) == 1


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("spatial,args", [
    ((7,), dict(kernels=[3], strides=[2], pads=[1, 1])),
    ((4, 5), dict(kernel_h=2, kernel_w=3, stride_h=1, stride_w=2, pad_t=1, pad_l=0, pad_b=0, pad_r=2)),
    ((3, 4, 3), dict(kernels=[2, 3, 2], strides=[1, 2, 1], pads=[1, 0, 1, 0, 1, 1])),
    ((3, 4), dict(global_pooling=1)),
    ((7, 6), dict(kernels=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], legacy_pad=CAFFE_LEGACY_POOLING)),
])
def test_lp_pool_gradient_fd(rng, order, p, spatial, args):
    """Finite differences, x kept away from 0 (|x| >= 0.5: the norm is not smooth at 0 for p <= 1)."""
    shape = shape_of(2, 2, spatial, order)
    x = (f32(rng, *shape, lo=0.5, hi=2) * rng.choice([-1, 1], shape)).astype(np.float32)
    check_grads(op("LpPool", ["x"], ["y"], order=order, p=p, **args), [x], stepsize=1e-3, threshold=1e-2)


# ---------------------------------------------------------------- torch parity
@pytest.mark.parametrize("k,s", [(2, 2), (3, 1), (3, 2)])
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 2.5])
def test_torch_parity(rng, k, s, p):
    """torch's lp_pool2d (no pads; it does not take |x|: positive x), forward and backward."""
    torch = pytest.importorskip("torch")
    x = f32(rng, 2, 3, 9, 10, lo=0.1, hi=3)
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = torch.nn.functional.lp_pool2d(t, p, k, s)
    dy = f32(rng, *ty.shape)
    ty.backward(torch.tensor(dy, dtype=torch.float64))
    feed(x=x, dy=dy)
    y = run("LpPool", ["x"], ["y"], kernel=k, stride=s, p=p)
    close(y, ty.detach().numpy(), 1e-5)
    close(run("LpPoolGradient", ["x", "y", "dy"], ["dx"], kernel=k, stride=s, p=p), t.grad.numpy(), 1e-4)


# ---------------------------------------------------------------- gradient maker
def test_gradient_maker():
    fwd = op("LpPool", ["x"], ["y"], kernel=2, stride=2, order="NHWC", p=3.0)
    gops, gin = core.GradientRegistry.GetGradientForOp(fwd, ["y_grad"])
    assert len(gops) == 1 and gin == ["x_grad"]
    g = gops[0]
    assert g.type == "LpPoolGradient"
    assert list(g.input) == ["x", "y", "y_grad"] and list(g.output) == ["x_grad"]
    assert {a.name: a.value() for a in g.arg} == {"kernel": 2, "stride": 2, "order": "NHWC", "p": 3.0}


def test_net_gradient_through_lp_pool(rng):
    from recurrent import gradient_checker
    net = core.Net("lpnet")
    y = net.LpPool("x", "y", kernel=2, stride=1, p=3.0)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    x = f32(rng, 2, 3, 5, 4, lo=0.5, hi=2)
    gradient_checker.NetGradientChecker.Check(net, ["loss"], {"x": x, "w": f32(rng, 2, 3, 4, 3)}, "x",
                                              step_size=1e-3, threshold=1e-2, print_net=False)


# ---------------------------------------------------------------- bad input
def test_bad_arguments():
    feed(x=np.zeros((2, 3, 5, 6), np.float32), y=np.array([7.0], np.float32))
    for p, shown in ((0.0, "0"), (-1.0, "-1"), (np.nan, "nan"), (-np.inf, "-inf"), (1e-50, "0")):
        raises(ValueError, r"op LpPool #0: argument p must be > 0 \(the norm's exponent, inf allowed\), "
                           r"got %s$" % shown, op("LpPool", ["x"], ["y"], kernel=2, p=p))
    raises(ValueError, r"op LpPoolGradient #0: argument p must be > 0",
           op("LpPoolGradient", ["x", "x", "x"], ["y"], kernel=1, p=-2.0))
    raises(TypeError, "op LpPool: argument 'p' must be a float, got string",
           op("LpPool", ["x"], ["y"], kernel=2, p="two"))
    raises(ValueError, r"op LpPool #0: argument pads: the head pad of dim 0 is 3, not smaller than the "
                       r"kernel 3 \(pooling needs pad < kernel\)",
           op("LpPool", ["x"], ["y"], kernel=3, pad=3))
    raises(ValueError, "argument dilations: 2 in dim 0; pooling takes dilation 1 only",
           op("LpPool", ["x"], ["y"], kernel=2, dilation=2))
    raises(ValueError, "needs the kernel size", op("LpPool", ["x"], ["y"]))
    assert workspace.FetchBlob("y").tolist() == [7.0]  # nothing was written


def test_bad_shapes():
    feed(x=np.zeros((2, 3, 5, 6), np.float32), xi=np.zeros((2, 3, 5, 6), np.int32),
         y=np.zeros((2, 3, 2, 3), np.float32), yb=np.zeros((2, 3, 2, 2), np.float32),
         dx=np.array([7.0], np.float32), z=np.array([7.0], np.float32))
    raises(TypeError, r"op LpPool #0: input 0 blob 'xi' must be float32, got \(2, 3, 5, 6\) int32",
           op("LpPool", ["xi"], ["z"], kernel=2))
    raises(ValueError, r"op LpPool #0: input 0 blob 'x' \(2, 3, 5, 6\) float32 \(order NCHW\): "
                       r"spatial size 5 in dim h with pads 0 \+ 0 is smaller than the window 7",
           op("LpPool", ["x"], ["z"], kernel=7))
    raises(ValueError, r"op LpPoolGradient #0: input 1 blob 'yb' \(Y\) must have the pooled shape "
                       r"\(2, 3, 2, 3\) float32 of input 0 blob 'x' \(2, 3, 5, 6\) float32, "
                       r"got \(2, 3, 2, 2\) float32",
           op("LpPoolGradient", ["x", "yb", "y"], ["dx"], kernel=2, stride=2))
    raises(ValueError, r"op LpPoolGradient #0: input 2 blob 'yb' \(dY\) must have the pooled shape",
           op("LpPoolGradient", ["x", "y", "yb"], ["dx"], kernel=2, stride=2))
    raises(TypeError, r"op LpPoolGradient #0: input 1 blob 'xi' must be float32",
           op("LpPoolGradient", ["x", "xi", "y"], ["dx"], kernel=2, stride=2))
    for blob in ("z", "dx"):  # nothing was written
        assert workspace.FetchBlob(blob).tolist() == [7.0]


def test_huge_output_is_a_memory_error():
    feed(x=np.zeros((1, 1, 1, 1), np.float32))
    raises(MemoryError, "output 0 blob .y.", op("LpPool", ["x"], ["y"], kernels=[2 ** 31 - 1] * 2,
                                                 pads=[2 ** 31 - 2] * 4))
