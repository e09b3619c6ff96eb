"""MaxPool, AveragePool (and their 1D / 2D / 3D names) and their gradients (csrc/ops/pool.c), the
gradient makers (recurrent/_grad_pool.py), brew.max_pool / average_pool and the CNNModelHelper
methods: NumPy float64 references over both orders, 1-3 spatial dims, strides, pads, every
legacy_pad mode, global pooling, count_include_pad; empty tensors, NaN, ties, the same bits every
run; gradients by finite differences; torch parity; bad input with exact messages."""

import itertools
import math

import numpy as np
import pytest

from recurrent import brew, core, workspace
from recurrent.cnn import CNNModelHelper
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_math import close, f32, feed, op, run  # the same helpers

ORDERS = ["NCHW", "NHWC"]
NOTSET, VALID, SAME, CAFFE_LEGACY_POOLING = 0, 1, 2, 3
FLT_LOWEST = -np.finfo(np.float32).max


# ---------------------------------------------------------------- references (float64)
def resolve(n, k, s, ph, pt, legacy):
    """Caffe2's ConvPoolOpBase::ComputeSizeAndPad for one dim: (out, pad_head, pad_tail)."""
    if legacy == VALID:
        return (n - k) // s + 1, 0, 0
    if legacy == SAME:
        need = ((n + s - 1) // s - 1) * s + k - n
        ph = need // 2
        return (n + need - k) // s + 1, ph, need - ph
    if legacy == CAFFE_LEGACY_POOLING:
        v = np.float32(n + 2 * ph - k) / np.float32(s) + np.float32(1)
        out = int(math.ceil(v))
        if ph > 0 and (out - 1) * s >= n + ph:
            out -= 1
        std = int(v)
        return out, ph, ph + s * (out - std)
    return int(np.float32(n + ph + pt - k) / np.float32(s) + np.float32(1)), ph, pt


def geometry(spatial, kernels, strides, pads, legacy=NOTSET, global_pooling=False):
    """[(in, out, k, s, pad_head)] per spatial dim."""
    nd = len(spatial)
    if global_pooling:
        return [(n, 1, n, 1, 0) for n in spatial]
    g = []
    for i, n in enumerate(spatial):
        out, ph, _ = resolve(n, kernels[i], strides[i], pads[i], pads[nd + i], legacy)
        g.append((n, out, kernels[i], strides[i], ph))
    return g


def windows(g):
    """Yields (output index, clipped window slices, kernel volume) over every output position."""
    ranges = []
    for n, out, k, s, ph in g:
        ranges.append([(max(o * s - ph, 0), min(o * s - ph + k, n)) for o in range(out)])
    kvol = int(np.prod([k for _, _, k, _, _ in g]))
    for idx in itertools.product(*[range(len(r)) for r in ranges]):
        sl = tuple(slice(ranges[i][o][0], max(ranges[i][o][1], ranges[i][o][0])) for i, o in enumerate(idx))
        yield idx, sl, kvol


def to_nc(x, order):
    x = np.asarray(x, np.float64)
    return np.moveaxis(x, -1, 1) if order == "NHWC" else x


def from_nc(y, order):
    return np.moveaxis(y, 1, -1) if order == "NHWC" else y


def pool_ref(x, kind, g, order, cip=False):
    xs = to_nc(x, order)
    N, C = xs.shape[:2]
    y = np.zeros((N, C) + tuple(out for _, out, _, _, _ in g))
    for idx, sl, kvol in windows(g):
        w = xs[(slice(None), slice(None)) + sl].reshape(N, C, -1)
        if kind == "max":
            y[(slice(None), slice(None)) + idx] = w.max(axis=2) if w.shape[2] else FLT_LOWEST
        else:
            cnt = kvol if cip else w.shape[2]
            y[(slice(None), slice(None)) + idx] = w.sum(axis=2) / cnt if cnt else 0.0
    return from_nc(y, order)


def pool_grad_ref(x, y, dy, kind, g, order, cip=False):
    """Caffe2's rule: max: dX[x] += (X[x] == Y[y]) * dY[y] (float32 products); average: dX[x] +=
    dY[y] * (1 / count) in float32."""
    xs, ys, ds = to_nc(x, order), to_nc(y, order), to_nc(dy, order)
    dx = np.zeros(xs.shape)
    for idx, sl, kvol in windows(g):
        at = (slice(None), slice(None)) + idx
        win = (slice(None), slice(None)) + sl
        if kind == "max":
            mask = (xs[win] == ys[at][(...,) + (None,) * len(sl)]).astype(np.float64)
            dx[win] += mask * ds[at][(...,) + (None,) * len(sl)]
        else:
            cnt = kvol if cip else int(np.prod([s.stop - s.start for s in sl]))
            scale = np.float32(1) / np.float32(cnt) if cnt else 0.0
            dx[win] += (ds[at] * np.float64(scale))[(...,) + (None,) * len(sl)]
    return from_nc(dx, order)


def shape_of(N, C, spatial, order):
    return (N, C) + tuple(spatial) if order == "NCHW" else (N,) + tuple(spatial) + (C,)


def spatial_of(shape, order):
    return shape[2:] if order == "NCHW" else shape[1:-1]


TYPES = {"max": "MaxPool", "avg": "AveragePool"}


def pool_args(kernels, strides, pads):
    return dict(kernels=list(kernels), strides=list(strides), pads=list(pads))


# ---------------------------------------------------------------- forward
CASES = [  # spatial, kernels, strides, pads (head..., tail...)
    ((7,), (3,), (1,), (1, 1)),
    ((8,), (2,), (2,), (0, 0)),
    ((9,), (4,), (3,), (3, 2)),
    ((1,), (1,), (1,), (0, 0)),
    ((5, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((6, 5), (3, 2), (1, 2), (1, 0, 2, 1)),
    ((7, 7), (3, 3), (2, 3), (2, 1, 0, 2)),
    ((4, 9), (4, 1), (3, 1), (0, 0, 3, 0)),
    ((3, 4, 5), (2, 2, 3), (1, 2, 2), (1, 0, 1, 0, 1, 2)),
    ((4, 3, 3), (3, 1, 2), (2, 1, 1), (2, 0, 1, 1, 0, 1)),
]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("spatial,kernels,strides,pads", CASES)
@pytest.mark.parametrize("kind,cip", [("max", 0), ("avg", 0), ("avg", 1)])
def test_pool_forward(rng, order, spatial, kernels, strides, pads, kind, cip):
    x = f32(rng, *shape_of(2, 3, spatial, order), lo=-3, hi=3)
    feed(x=x)
    extra = dict(count_include_pad=cip) if kind == "avg" else {}
    y = run(TYPES[kind], ["x"], ["y"], order=order, **pool_args(kernels, strides, pads), **extra)
    g = geometry(spatial, kernels, strides, pads)
    close(y, pool_ref(x, kind, g, order, cip), 1e-6)
    # the 1D / 2D / 3D names are the same op
    y2 = run(TYPES[kind] + "%dD" % len(spatial), ["x"], ["y2"], order=order,
             **pool_args(kernels, strides, pads), **extra)
    assert y2.tobytes() == y.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_old_argument_forms(rng, order, kind):
    """kernel / stride / pad scalars, kernel_h + kernel_w, stride_h + stride_w, pad_t/l/b/r."""
    x = f32(rng, *shape_of(2, 3, (7, 8), order), lo=-3, hi=3)
    feed(x=x)
    y = run(TYPES[kind], ["x"], ["y"], order=order, kernel=3, stride=2, pad=1)
    close(y, pool_ref(x, kind, geometry((7, 8), (3, 3), (2, 2), (1, 1, 1, 1)), order), 1e-6)
    y = run(TYPES[kind], ["x"], ["y"], order=order, kernel_h=3, kernel_w=2, stride_h=1, stride_w=3, pad_t=2,
            pad_l=0, pad_b=1, pad_r=1)
    close(y, pool_ref(x, kind, geometry((7, 8), (3, 2), (1, 3), (2, 0, 1, 1)), order), 1e-6)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind,cip", [("max", 0), ("avg", 0), ("avg", 1)])
@pytest.mark.parametrize("legacy", [VALID, SAME, CAFFE_LEGACY_POOLING])
@pytest.mark.parametrize("spatial,kernels,strides,pads", [
    ((7, 8), (3, 2), (2, 3), (1, 0)), ((6, 5), (2, 3), (2, 2), (1, 1)), ((9,), (4,), (3,), (2,)),
    ((5, 5, 4), (3, 2, 2), (2, 2, 3), (1, 1, 0)), ((6, 7), (3, 3), (1, 1), (0, 0)), ((5,), (2,), (2,), (0,)),
])
def test_pool_legacy_pad(rng, order, kind, cip, legacy, spatial, kernels, strides, pads):
    """legacy_pad VALID and SAME (pads computed; given pads refused) and CAFFE_LEGACY_POOLING (Caffe's
    ceil-mode output size from the head pads; the tail pad covers the last window)."""
    nd = len(spatial)
    x = f32(rng, *shape_of(2, 3, spatial, order), lo=-3, hi=3)
    feed(x=x)
    extra = dict(count_include_pad=cip) if kind == "avg" else {}
    args = dict(kernels=list(kernels), strides=list(strides))
    full = list(pads) * 2
    if legacy == CAFFE_LEGACY_POOLING:
        args["pads"] = full
    y = run(TYPES[kind], ["x"], ["y"], order=order, legacy_pad=legacy, **args, **extra)
    g = geometry(spatial, kernels, strides, full if legacy == CAFFE_LEGACY_POOLING else [0] * 2 * nd, legacy)
    close(y, pool_ref(x, kind, g, order, cip), 1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_pool_caffe_legacy_pooling_window_past_the_image(order):
    """CAFFE_LEGACY_POOLING with head pad 0 and stride > kernel: Caffe's ceil-mode size puts the last
    window past the image (n = 5, k = 1, s = 3: windows at 0, 3, 6). Its max is -FLT_MAX (Caffe2's
    start value), its average 0; it gets no gradient."""
    x = np.arange(1, 11, dtype=np.float32).reshape(shape_of(2, 1, (5,), order))
    feed(x=x)
    args = dict(kernels=[1], strides=[3], pads=[0, 0], legacy_pad=CAFFE_LEGACY_POOLING, order=order)
    y = run("MaxPool", ["x"], ["y"], **args)
    assert y.reshape(2, 3).tolist() == [[1, 4, FLT_LOWEST], [6, 9, FLT_LOWEST]]
    for cip in (0, 1):
        a = run("AveragePool", ["x"], ["a"], count_include_pad=cip, **args)
        assert a.reshape(2, 3).tolist() == [[1, 4, 0], [6, 9, 0]]
    feed(dy=np.full(y.shape, 2.0, np.float32))
    dx = run("MaxPoolGradient", ["x", "y", "dy"], ["dx"], **args)
    assert dx.reshape(2, 5).tolist() == [[2, 0, 0, 2, 0]] * 2
    dx = run("AveragePoolGradient", ["x", "a", "dy"], ["dx"], **args)
    assert dx.reshape(2, 5).tolist() == [[2, 0, 0, 2, 0]] * 2


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("spatial", [(5,), (4, 3), (3, 2, 4), (1, 1)])
def test_global_pooling(rng, order, kind, spatial):
    x = f32(rng, *shape_of(3, 2, spatial, order), lo=-3, hi=3)
    feed(x=x)
    y = run(TYPES[kind], ["x"], ["y"], order=order, global_pooling=1)
    close(y, pool_ref(x, kind, geometry(spatial, None, None, None, global_pooling=True), order), 1e-6)
    assert spatial_of(y.shape, order) == (1,) * len(spatial)
    # a kernel given with global_pooling is ignored (Caffe2's test_global_pooling_3d)
    y2 = run(TYPES[kind], ["x"], ["y2"], order=order, global_pooling=1, kernels=[2] * len(spatial))
    assert y2.tobytes() == y.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("type_", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("N,C", [(0, 3), (2, 0), (0, 0)])
def test_pool_empty(order, type_, N, C):
    x = np.zeros(shape_of(N, C, (6, 5), order), np.float32)
    feed(x=x)
    y = run(type_, ["x"], ["y"], order=order, kernel=2, stride=2)
    assert y.shape == shape_of(N, C, (3, 2), order) and y.dtype == np.float32
    feed(dy=y)
    dx = run(type_ + "Gradient", ["x", "y", "dy"], ["dx"], order=order, kernel=2, stride=2)
    assert dx.shape == x.shape


def test_max_pool_nan_propagates_and_infinities():
    """A NaN anywhere in a window gives NaN (first, middle or last cell); a window of -inf gives -inf
    (the true max, not -FLT_MAX); +inf wins."""
    x = np.array([[[np.nan, 1, 2, 3, 4, np.nan, -np.inf, -np.inf, np.inf, 0, 1, np.nan]]], np.float32)
    feed(x=x)
    y = run("MaxPool", ["x"], ["y"], kernels=[3], strides=[3])
    assert np.isnan(y[0, 0, 0]) and np.isnan(y[0, 0, 1]) and np.isnan(y[0, 0, 3])
    assert y[0, 0, 2] == np.inf
    feed(x=np.array([[[-np.inf, -np.inf, 5]]], np.float32))
    assert run("MaxPool", ["x"], ["y"], kernels=[2], strides=[1]).tolist() == [[[-np.inf, 5]]]
    # NHWC: NaN per channel
    x = np.array([[[1, np.nan], [np.nan, 2], [3, 4]]], np.float32)
    feed(x=x)
    y = run("MaxPool", ["x"], ["y"], kernels=[3], order="NHWC")
    assert np.isnan(y).all()
    y = run("AveragePool", ["x"], ["y"], kernels=[3], order="NHWC")
    assert np.isnan(y).all()


def test_max_pool_gradient_nan():
    """Caffe2's rule X == Y: a NaN max matches no cell (no gradient); a NaN dY reaches every cell of its
    window (0 * NaN)."""
    x = np.array([[[np.nan, 1, 2, 3]]], np.float32)
    feed(x=x)
    y = run("MaxPool", ["x"], ["y"], kernels=[2], strides=[2])
    feed(dy=np.array([[[5, 7]]], np.float32))
    dx = run("MaxPoolGradient", ["x", "y", "dy"], ["dx"], kernels=[2], strides=[2])
    assert dx.tolist() == [[[0, 0, 0, 7]]]
    feed(dy=np.array([[[5, np.nan]]], np.float32))
    dx = run("MaxPoolGradient", ["x", "y", "dy"], ["dx"], kernels=[2], strides=[2])
    assert dx[0, 0, :2].tolist() == [0, 0] and np.isnan(dx[0, 0, 2:]).all()


@pytest.mark.parametrize("order", ORDERS)
def test_pool_same_bits_every_run(rng, order):
    x = f32(rng, *shape_of(3, 5, (11, 13), order), lo=-100, hi=100)
    feed(x=x, dy=f32(rng, *shape_of(3, 5, (6, 7), order)))
    for t in ("MaxPool", "AveragePool"):
        ys = [run(t, ["x"], ["y"], order=order, kernel=3, stride=2, pad=1).tobytes() for _ in range(3)]
        assert len(set(ys)) == 1
        dxs = [run(t + "Gradient", ["x", "y", "dy"], ["dx"], order=order, kernel=3, stride=2, pad=1).tobytes()
               for _ in range(3)]
        assert len(set(dxs)) == 1


# ---------------------------------------------------------------- gradient ops
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("spatial,kernels,strides,pads", CASES[::2] + CASES[5:7])
@pytest.mark.parametrize("kind,cip", [("max", 0), ("avg", 0), ("avg", 1)])
def test_pool_gradient_op(rng, order, spatial, kernels, strides, pads, kind, cip):
    x = f32(rng, *shape_of(2, 3, spatial, order), lo=-3, hi=3)
    extra = dict(count_include_pad=cip) if kind == "avg" else {}
    args = dict(order=order, **pool_args(kernels, strides, pads), **extra)
    feed(x=x)
    y = run(TYPES[kind], ["x"], ["y"], **args)
    dy = f32(rng, *y.shape)
    feed(dy=dy)
    dx = run(TYPES[kind] + "Gradient", ["x", "y", "dy"], ["dx"], **args)
    close(dx, pool_grad_ref(x, y, dy, kind, geometry(spatial, kernels, strides, pads), order, cip), 1e-6)
    dx2 = run(TYPES[kind] + "%dDGradient" % len(spatial), ["x", "y", "dy"], ["dx2"], **args)
    assert dx2.tobytes() == dx.tobytes()


@pytest.mark.parametrize("order", ORDERS)
def test_max_pool_gradient_ties_all_receive(order):
    """Caffe2's CPU rule: every cell equal to the window's max gets the whole dY (not only the first)."""
    x = np.array([[[[1, 3, 0, 0], [3, 2, 0, 0]]]], np.float32)  # (1, 1, 2, 4): ties in both windows
    if order == "NHWC":
        x = np.moveaxis(x, 1, -1)
    feed(x=x)
    y = run("MaxPool", ["x"], ["y"], kernel=2, stride=2, order=order)
    feed(dy=np.full(y.shape, 1.5, np.float32))
    dx = run("MaxPoolGradient", ["x", "y", "dy"], ["dx"], kernel=2, stride=2, order=order)
    dx = np.moveaxis(dx, -1, 1) if order == "NHWC" else dx
    assert dx.tolist() == [[[[0, 1.5, 1.5, 1.5], [1.5, 0, 1.5, 1.5]]]]
    # overlapping windows accumulate
    feed(x=np.array([[[1, 5, 2]]], np.float32))
    y = run("MaxPool", ["x"], ["y"], kernels=[2], strides=[1])
    feed(dy=np.array([[[1, 2]]], np.float32))
    dx = run("MaxPoolGradient", ["x", "y", "dy"], ["dx"], kernels=[2], strides=[1])
    assert dx.tolist() == [[[0, 3, 0]]]


def distinct(rng, shape):
    """Shuffled, well-separated values (no ties: max pooling's finite differences are then exact)."""
    n = int(np.prod(shape))
    v = np.arange(n, dtype=np.float32) / max(n, 1) * 4 - 2
    rng.shuffle(v)
    return v.reshape(shape)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("type_", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("spatial,args", [
    ((7,), dict(kernels=[3], strides=[2], pads=[1, 1])),
    ((5, 6), dict(kernel=3, stride=2, pad=1)),
    ((4, 5), dict(kernel_h=2, kernel_w=3, stride_h=1, stride_w=2, pad_t=1, pad_l=0, pad_b=0, pad_r=2)),
    ((3, 4, 3), dict(kernels=[2, 3, 2], strides=[1, 2, 1], pads=[1, 0, 1, 0, 1, 1])),
    ((5, 4), dict(global_pooling=1)),
    ((7, 6), dict(kernels=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], legacy_pad=CAFFE_LEGACY_POOLING)),
    ((7, 6), dict(kernels=[3, 2], strides=[2, 2], legacy_pad=SAME)),
])
def test_pool_gradient_fd(rng, order, type_, spatial, args):
    x = distinct(rng, shape_of(2, 2, spatial, order))
    o = op(type_, ["x"], ["y"], order=order, **args)
    check_grads(o, [x], stepsize=1e-3 if type_ == "AveragePool" else 5e-3, threshold=1e-2)
    if type_ == "AveragePool":
        o = op(type_, ["x"], ["y"], order=order, count_include_pad=1, **args)
        check_grads(o, [x])


# ---------------------------------------------------------------- torch parity
@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 1, 1), (3, 2, 1), (4, 3, 2)])
def test_torch_parity(rng, k, s, p):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = f32(rng, 2, 3, 9, 10, lo=-3, hi=3)
    feed(x=x)
    t = torch.tensor(x)
    close(run("MaxPool", ["x"], ["y"], kernel=k, stride=s, pad=p), F.max_pool2d(t, k, s, p).numpy(), 0)
    close(run("AveragePool", ["x"], ["y"], kernel=k, stride=s, pad=p),
          F.avg_pool2d(t, k, s, p, count_include_pad=False).numpy(), 1e-6)
    close(run("AveragePool", ["x"], ["y"], kernel=k, stride=s, pad=p, count_include_pad=1),
          F.avg_pool2d(t, k, s, p, count_include_pad=True).numpy(), 1e-6)
    x3 = f32(rng, 1, 2, 5, 6, 7)
    feed(x3=x3)
    close(run("MaxPool", ["x3"], ["y3"], kernels=[k] * 3, strides=[s] * 3, pads=[p] * 6),
          F.max_pool3d(torch.tensor(x3), k, s, p).numpy(), 0)


# ---------------------------------------------------------------- gradient makers, brew, cnn
@pytest.mark.parametrize("type_", ["MaxPool", "AveragePool", "MaxPool1D", "AveragePool2D", "MaxPool3D"])
def test_gradient_maker(type_):
    fwd = op(type_, ["x"], ["y"], kernel=2, stride=2, order="NHWC")
    gops, gin = core.GradientRegistry.GetGradientForOp(fwd, ["y_grad"])
    assert len(gops) == 1 and gin == ["x_grad"]
    g = gops[0]
    assert g.type == type_ + "Gradient"
    assert list(g.input) == ["x", "y", "y_grad"] and list(g.output) == ["x_grad"]
    assert {a.name: a.value() for a in g.arg} == {"kernel": 2, "stride": 2, "order": "NHWC"}


def test_net_gradient_through_pooling(rng):
    """loss = sum(MaxPool(x) * w) + sum(AveragePool(x)): the backward pass through both."""
    from recurrent import gradient_checker
    net = core.Net("poolnet")
    m = net.MaxPool("x", "m", kernel=2, stride=1)
    a = net.AveragePool("x", "a", kernel=3, stride=2, pad=1)
    net.Sum([net.SumElements(net.Mul([m, "w"], "mw"), "l1"), net.SumElements(a, "l2")], "loss")
    x = distinct(rng, (2, 3, 5, 4))
    gradient_checker.NetGradientChecker.Check(net, ["loss"], {"x": x, "w": f32(rng, 2, 3, 4, 3)}, "x",
                                              step_size=5e-3, threshold=1e-2, print_net=False)


@pytest.mark.parametrize("order", ORDERS)
def test_brew_pooling(rng, order):
    model = ModelHelper(name="bp")
    m = brew.max_pool(model, "x", "mp", kernel=2, stride=2, order=order)
    a = brew.average_pool(model, "x", "ap", kernel=3, stride=1, pad=1, order=order, use_cudnn=True)
    g = brew.average_pool(model, "x", "gp", global_pooling=True, order=order, legacy_pad=VALID)
    ops = model.net.Proto().op
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [
        ("MaxPool", ["x"], ["mp"]), ("AveragePool", ["x"], ["ap"]), ("AveragePool", ["x"], ["gp"])]
    assert ops[1].engine == "CUDNN" and ops[0].engine == ""
    assert {a.name: a.value() for a in ops[0].arg} == {"order": order, "kernel": 2, "stride": 2}
    assert model.params == []
    x = f32(rng, *shape_of(2, 3, (4, 6), order))
    feed(x=x)
    workspace.RunNetOnce(model.net)
    close(workspace.FetchBlob(str(m)), pool_ref(x, "max", geometry((4, 6), (2, 2), (2, 2), (0,) * 4), order))
    close(workspace.FetchBlob(str(a)), pool_ref(x, "avg", geometry((4, 6), (3, 3), (1, 1), (1,) * 4), order))
    close(workspace.FetchBlob(str(g)), pool_ref(x, "avg", geometry((4, 6), None, None, None, 0, True), order))


def test_cnn_model_helper_pooling(rng):
    model = CNNModelHelper(order="NHWC", name="cp", use_cudnn=False)
    m = model.MaxPool("x", "mp", kernel=2, stride=2)
    a = model.AveragePool("x", "ap", kernel=2)
    ops = model.net.Proto().op
    assert [o.type for o in ops] == ["MaxPool", "AveragePool"]
    assert all({a.name: a.value() for a in o.arg}["order"] == "NHWC" for o in ops)
    x = f32(rng, 2, 4, 6, 3)
    feed(x=x)
    workspace.RunNetOnce(model.net)
    close(workspace.FetchBlob(str(m)), pool_ref(x, "max", geometry((4, 6), (2, 2), (2, 2), (0,) * 4), "NHWC"))
    close(workspace.FetchBlob(str(a)), pool_ref(x, "avg", geometry((4, 6), (2, 2), (1, 1), (0,) * 4), "NHWC"))
    with pytest.raises(AttributeError, match="CNNModelHelper.MaxPoolWithIndex is not provided"):
        model.MaxPoolWithIndex("x", "y", kernel=2)
    # use_cudnn (the default) gives engine CUDNN, accepted and ignored
    model = CNNModelHelper(name="cp2")
    model.MaxPool("x", "y", kernel=2)
    assert model.net.Proto().op[0].engine == "CUDNN"


# ---------------------------------------------------------------- bad input
def test_bad_arguments():
    feed(x=np.zeros((2, 3, 5, 6), np.float32), y=np.array([7.0], np.float32))
    raises(ValueError, r"op MaxPool #0: argument pads: the head pad of dim 0 is 3, not smaller than the "
                       r"kernel 3 \(pooling needs pad < kernel\)",
           op("MaxPool", ["x"], ["y"], kernel=3, pad=3))
    raises(ValueError, r"argument pads: the tail pad of dim 1 is 2, not smaller than the kernel 2",
           op("AveragePool", ["x"], ["y"], kernels=[3, 2], pads=[0, 0, 2, 2]))
    raises(ValueError, "argument dilations: 2 in dim 0; pooling takes dilation 1 only",
           op("MaxPool", ["x"], ["y"], kernel=2, dilation=2))
    raises(ValueError, "needs the kernel size", op("AveragePool", ["x"], ["y"]))
    raises(ValueError, r"with legacy_pad SAME \(2\) the pads are computed: give no pads",
           op("MaxPool", ["x"], ["y"], kernel=2, legacy_pad=SAME, pad=1))
    raises(ValueError, r"with global_pooling give no strides \(got 2\)",
           op("MaxPool", ["x"], ["y"], global_pooling=1, stride=2))
    raises(TypeError, "argument 'count_include_pad' must be an int",
           op("AveragePool", ["x"], ["y"], kernel=2, count_include_pad="yes"))
    # pad = kernel - 1 is the largest accepted
    assert run("MaxPool", ["x"], ["z"], kernel=3, pad=2).shape == (2, 3, 7, 8)
    assert workspace.FetchBlob("y").tolist() == [7.0]  # nothing was written


def test_bad_shapes():
    feed(x=np.zeros((2, 3, 5, 6), np.float32), xi=np.zeros((2, 3, 5, 6), np.int32),
         x3=np.zeros((2, 3, 5), np.float32), y=np.zeros((2, 3, 2, 3), np.float32),
         yb=np.zeros((2, 3, 2, 2), np.float32), dx=np.array([7.0], np.float32), z=np.array([7.0], np.float32))
    raises(TypeError, r"op MaxPool #0: input 0 blob 'xi' must be float32, got \(2, 3, 5, 6\) int32",
           op("MaxPool", ["xi"], ["z"], kernel=2))
    raises(ValueError, r"input 0 blob 'x3' \(2, 3, 5\) float32 must have 4 dims for a 2-D kernel "
                       r"\(order NCHW: N, C, spatial dims\)", op("MaxPool", ["x3"], ["z"], kernel=2))
    raises(ValueError, r"op AveragePool #0: input 0 blob 'x' \(2, 3, 5, 6\) float32 \(order NCHW\): "
                       r"spatial size 5 in dim h with pads 0 \+ 0 is smaller than the window 7",
           op("AveragePool", ["x"], ["z"], kernel=7))
    raises(ValueError, r"op MaxPoolGradient #0: input 1 blob 'yb' \(Y\) must have the pooled shape "
                       r"\(2, 3, 2, 3\) float32 of input 0 blob 'x' \(2, 3, 5, 6\) float32, "
                       r"got \(2, 3, 2, 2\) float32",
           op("MaxPoolGradient", ["x", "yb", "y"], ["dx"], kernel=2, stride=2))
    raises(ValueError, r"op AveragePool2DGradient #0: input 2 blob 'yb' \(dY\) must have the pooled shape",
           op("AveragePool2DGradient", ["x", "y", "yb"], ["dx"], kernel=2, stride=2))
    raises(TypeError, r"input 2 blob 'xi' must be float32",
           op("MaxPool3DGradient", ["x", "y", "xi"], ["dx"], kernel=2, stride=2))
    raises(ValueError, r"input 0 blob 'x' \(2, 3, 5, 6\) float32 must have 5 dims for a 3-D kernel",
           op("MaxPool3DGradient", ["x", "y", "y"], ["dx"], kernels=[2, 2, 2]))
    for blob in ("z", "dx"):  # nothing was written
        assert workspace.FetchBlob(blob).tolist() == [7.0]


def test_huge_output_is_a_memory_error():
    feed(x=np.zeros((1, 1, 1, 1), np.float32))
    raises(MemoryError, "output 0 blob .y.", op("MaxPool", ["x"], ["y"], kernels=[2 ** 31 - 1] * 2,
                                                 pads=[2 ** 31 - 2] * 4))


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind,extra", [("MaxPool", {}), ("AveragePool", {"count_include_pad": 1}),
                                        ("AveragePool", {}), ("LpPool", {"p": 3.0})])
def test_pool_threads_give_the_same_bits(rng, order, kind, extra):
    """Runs of at least 2^16 window cells split their planes over OpenBLAS's thread count
    (csrc/ops/pool.c, pl_run_parts): Y and dX have the same bits with 1, 2 and 3 threads, on a
    batch big enough to split and on one too small to."""
    from recurrent import _C
    default = _C.get_flag("blas_num_threads")
    for shape in [(5, 7, 40, 30), (1, 2, 5, 4)]:
        x = f32(rng, *(shape if order == "NCHW" else (shape[0], shape[2], shape[3], shape[1])))
        a = dict(kernel=3, stride=2, pad=1, order=order, **extra)
        feed(x=x)
        got = {}
        try:
            for t in (1, 2, 3):
                _C.set_flag("blas_num_threads", t)
                y = run(kind, ["x"], ["y"], **a)
                feed(dy=np.cos(y))
                got[t] = [y, run(kind + "Gradient", ["x", "y", "dy"], ["dx"], **a)]
        finally:
            _C.set_flag("blas_num_threads", default)
        for t in (2, 3):
            assert [v.tobytes() for v in got[t]] == [v.tobytes() for v in got[1]], (shape, t)


def _row_path_cases():
    """(spatial, kernels, strides, pads or None for legacy CAFFE_LEGACY_POOLING, kind, cip) drawn
    with a fixed seed: 1-3 dims, widths 2-40, kernels up to 33 wide (past the row kernels' 32),
    strides 1-3, head / tail pads."""
    r = np.random.default_rng(2026)
    out = []
    for i in range(48):
        nd = 1 + i % 3
        k = [int(r.integers(1, 5)) for _ in range(nd)]
        if i % 12 == 5:
            k[-1] = 33
        s = [int(r.integers(1, 4)) for _ in range(nd)]
        spatial = [int(r.integers(kk, kk + (40 if j == nd - 1 else 6))) for j, kk in enumerate(k)]
        pads = None if i % 8 == 3 else [int(r.integers(0, kk)) for kk in k * 2]
        kind, cip = [("max", 0), ("avg", 0), ("avg", 1)][i % 3]
        out.append((spatial, k, s, pads, kind, cip))
    # Caffe's ceil-mode sizes with stride > kernel: the last window of a row holds no cell
    out += [([5], [1], [3], None, "max", 0), ([4, 8], [1, 2], [1, 3], None, "max", 0),
            ([4, 8], [1, 2], [1, 3], None, "avg", 0), ([4, 8], [2, 2], [3, 3], None, "avg", 1),
            ([5, 8], [1, 2], [3, 2], None, "max", 0), ([5, 8], [1, 2], [3, 2], None, "avg", 0)]
    return out


@pytest.mark.parametrize("spatial,kernels,strides,pads,kind,cip", _row_path_cases())
def test_nchw_row_kernels_give_the_nhwc_bits(rng, spatial, kernels, strides, pads, kind, cip):
    """NCHW MaxPool / AveragePool and their gradients run row by row (csrc/ops/pool.c, the row
    kernels: kernels up to 32 wide, rows of 2 or more outputs); NHWC runs window by window. Both
    fold every output and every dX cell over the same terms in the same order, so the two orders
    give the same bits, also with ties, signed zeros, NaN, infinities and an infinite dY."""
    N, C = 2, 3
    x = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0], np.float32), size=[N, C] + spatial)
    x[0] = f32(rng, C, *spatial)  # one sample of distinct values, one of ties
    x.flat[5] = np.nan
    x.flat[-3] = -np.inf
    to_nhwc = (0,) + tuple(range(2, 2 + len(spatial))) + (1,)
    if pads is None:
        args = dict(kernels=kernels, strides=strides, legacy_pad=CAFFE_LEGACY_POOLING)
    else:
        args = pool_args(kernels, strides, pads)
    if kind == "avg":
        args["count_include_pad"] = cip
    got = {}
    for order in ORDERS:
        xo = x if order == "NCHW" else np.ascontiguousarray(x.transpose(to_nhwc))
        feed(x=xo)
        y = run(TYPES[kind], ["x"], ["y"], order=order, **args)
        if order == "NCHW":
            dy = f32(rng, *y.shape)
        else:
            dy = np.ascontiguousarray(got["NCHW"][1].transpose(to_nhwc))
        if order == "NCHW":
            dy.flat[1] = np.inf
        feed(dy=dy)
        dx = run(TYPES[kind] + "Gradient", ["x", "y", "dy"], ["dx"], order=order, **args)
        if order == "NHWC":
            back = (0, len(spatial) + 1) + tuple(range(1, len(spatial) + 1))
            y, dy, dx = (np.ascontiguousarray(a.transpose(back)) for a in (y, dy, dx))
        got[order] = (y, dy, dx)
    assert got["NCHW"][0].tobytes() == got["NHWC"][0].tobytes()
    assert got["NCHW"][2].tobytes() == got["NHWC"][2].tobytes()
