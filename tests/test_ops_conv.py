"""Conv / Conv1D / Conv2D / Conv3D and ConvGradient (csrc/ops/conv.c), the gradient maker
(recurrent/_grad_conv.py) and brew.conv / conv_nd / group_conv with the CNNModelHelper methods: NumPy
float64 references in both orders over 1-3 spatial dims, strides, pads, dilations, groups and
legacy_pad; empty tensors, NaN, determinism, bad input with exact messages, gradients by finite
differences, a small model trained a few SGD steps."""

import itertools

import numpy as np
import pytest

from recurrent import brew, core, workspace
from recurrent.cnn import CNNModelHelper
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_math import G, close, f32, feed, op, run  # the same helpers

ORDERS = ["NCHW", "NHWC"]


# ---------------------------------------------------------------- references (float64)
def _nc(x, order):
    x = np.asarray(x, np.float64)
    return np.moveaxis(x, -1, 1) if order == "NHWC" else x


def _back(y, order):
    return np.moveaxis(y, 1, -1) if order == "NHWC" else y


def out_size(n, k, s, d, ph, pt):
    return max((n + ph + pt - d * (k - 1) - 1) // s + 1, 0)


def _patches(xp, k, s, d, out):
    """For each kernel offset a: (a, the strided view of padded X (N, C, out...))."""
    nd = len(k)
    for a in itertools.product(*[range(kk) for kk in k]):
        sl = tuple(slice(a[i] * d[i], a[i] * d[i] + (out[i] - 1) * s[i] + 1, s[i]) for i in range(nd))
        yield a, (slice(None), slice(None)) + sl


def conv_ref(x, w, b, k, s, d, ph, pt, group=1, order="NCHW"):
    """Y of Conv: every sum in float64."""
    x, w = _nc(x, order), _nc(w, order)
    nd = len(k)
    N, C, M = x.shape[0], x.shape[1], w.shape[0]
    out = [out_size(x.shape[2 + i], k[i], s[i], d[i], ph[i], pt[i]) for i in range(nd)]
    y = np.zeros([N, M] + out)
    Cg, Mg = C // group, M // group
    if min(out + [N, M]) > 0:
        xp = np.pad(x, [(0, 0), (0, 0)] + [(ph[i], pt[i]) for i in range(nd)])
        for a, sl in _patches(xp, k, s, d, out):
            for g in range(group):
                wa = w[(slice(g * Mg, (g + 1) * Mg), slice(None)) + a]
                y[:, g * Mg:(g + 1) * Mg] += np.einsum("nc...,mc->nm...", xp[sl][:, g * Cg:(g + 1) * Cg], wa)
    if b is not None:
        y += np.asarray(b, np.float64).reshape((1, M) + (1,) * nd)
    return _back(y, order)


def conv_grad_ref(x, w, dy, k, s, d, ph, pt, group=1, order="NCHW"):
    """(dfilter, dbias, dX) of Conv."""
    xs, ws, dys = _nc(x, order), _nc(w, order), _nc(dy, order)
    nd = len(k)
    N, C, M = xs.shape[0], xs.shape[1], ws.shape[0]
    out = list(dys.shape[2:])
    Cg, Mg = C // group, M // group
    xp = np.pad(xs, [(0, 0), (0, 0)] + [(ph[i], pt[i]) for i in range(nd)])
    dxp = np.zeros_like(xp)
    dw = np.zeros(ws.shape)
    if min(out + [N, M]) > 0:
        for a, sl in _patches(xp, k, s, d, out):
            for g in range(group):
                dyg, cs = dys[:, g * Mg:(g + 1) * Mg], slice(g * Cg, (g + 1) * Cg)
                axes = [0] + list(range(2, 2 + nd))
                dw[(slice(g * Mg, (g + 1) * Mg), slice(None)) + a] = np.tensordot(dyg, xp[sl][:, cs],
                                                                                  (axes, axes))
                wa = ws[(slice(g * Mg, (g + 1) * Mg), slice(None)) + a]
                view = dxp[sl]
                view[:, cs] += np.einsum("nm...,mc->nc...", dyg, wa)
    crop = (slice(None), slice(None)) + tuple(slice(ph[i], ph[i] + xs.shape[2 + i]) for i in range(nd))
    dx = dxp[crop]
    db = dys.sum(axis=(0,) + tuple(range(2, 2 + nd)))
    if order == "NHWC":
        dw = np.moveaxis(dw, 1, -1)
    return dw, db, _back(dx, order)


def shapes(N, C, M, sp, k, group, order):
    """(X shape, filter shape)."""
    if order == "NCHW":
        return (N, C) + tuple(sp), (M, C // group) + tuple(k)
    return (N,) + tuple(sp) + (C,), (M,) + tuple(k) + (C // group,)


def args_of(k, s, d, ph, pt, group, order):
    a = dict(kernels=list(k), strides=list(s), dilations=list(d), pads=list(ph) + list(pt), order=order)
    if group != 1:
        a["group"] = group
    return a


CASES = [  # N, C, M, spatial, kernel, stride, dilation, pad head, pad tail, group
    (2, 3, 4, (7,), (3,), (1,), (1,), (0,), (0,), 1),
    (1, 4, 6, (9,), (2,), (2,), (3,), (1,), (2,), 2),
    (2, 3, 5, (6, 7), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1),
    (3, 4, 4, (8, 5), (3, 2), (2, 1), (1, 2), (0, 2), (1, 0), 2),
    (1, 6, 6, (5, 5), (3, 3), (1, 2), (2, 1), (2, 1), (2, 1), 6),  # depthwise, dilated
    (2, 2, 3, (4, 5, 3), (2, 3, 1), (1, 2, 1), (1, 1, 1), (1, 0, 0), (0, 1, 1), 1),
    (1, 4, 2, (5, 4, 4), (3, 2, 2), (2, 1, 2), (1, 2, 1), (1, 1, 0), (1, 0, 1), 2),
    (2, 5, 3, (4, 6), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), 1),   # 1x1: reads X itself
    (2, 4, 6, (4, 6), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), 2),   # 1x1 with groups
    (2, 3, 2, (5, 6), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0), 1),   # 1x1 strided
    (2, 4, 2, (4, 5), (1, 1), (1, 1), (2, 1), (1, 0), (0, 2), 2),   # 1x1 padded
]


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_reference(rng, order, case, bias):
    N, C, M, sp, k, s, d, ph, pt, group = case
    xs, wsh = shapes(N, C, M, sp, k, group, order)
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, M)
    feed(x=x, w=w, b=b)
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    y = run("Conv", ins, ["y"], **args_of(k, s, d, ph, pt, group, order))
    close(y, conv_ref(x, w, b if bias else None, k, s, d, ph, pt, group, order), 2e-5)


@pytest.mark.parametrize("type_", ["Conv1D", "Conv2D", "Conv3D"])
def test_conv_aliases(rng, type_):
    # in Caffe2 the same op; the name does not fix the number of dims
    x, w, b = f32(rng, 2, 3, 5, 6), f32(rng, 4, 3, 3, 2), f32(rng, 4)
    feed(x=x, w=w, b=b)
    y = run(type_, ["x", "w", "b"], ["y"], kernel_h=3, kernel_w=2, stride=2, pad=1)
    close(y, conv_ref(x, w, b, (3, 2), (2, 2), (1, 1), (1, 1), (1, 1)), 2e-5)


def test_conv_scalar_arguments(rng):
    # kernel / stride / pad / dilation as single values apply to every dim
    x, w = f32(rng, 2, 2, 7, 6), f32(rng, 3, 2, 2, 2)
    feed(x=x, w=w)
    y = run("Conv", ["x", "w"], ["y"], kernel=2, stride=2, pad=1, dilation=2)
    close(y, conv_ref(x, w, None, (2, 2), (2, 2), (2, 2), (1, 1), (1, 1)), 2e-5)
    y = run("Conv", ["x", "w"], ["y"], kernel_h=2, kernel_w=2, stride_h=1, stride_w=2, pad_t=0, pad_l=1,
            pad_b=2, pad_r=0, dilation_h=1, dilation_w=2)
    close(y, conv_ref(x, w, None, (2, 2), (1, 2), (1, 2), (0, 1), (2, 0)), 2e-5)


@pytest.mark.parametrize("legacy_pad,want_out,ph,pt", [
    (1, (3, 3), (0, 0), (0, 0)),          # VALID
    (2, (4, 3), (1, 0), (1, 0)),          # SAME: out = ceil(in / stride), an odd pad's extra at the tail
])
def test_conv_legacy_pad(rng, legacy_pad, want_out, ph, pt):
    x, w = f32(rng, 1, 2, 7, 6), f32(rng, 3, 2, 3, 2)
    feed(x=x, w=w)
    y = run("Conv", ["x", "w"], ["y"], kernel_h=3, kernel_w=2, stride=2, legacy_pad=legacy_pad)
    assert y.shape[2:] == want_out
    close(y, conv_ref(x, w, None, (3, 2), (2, 2), (1, 1), ph, pt), 2e-5)


def test_conv_exact_small():
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.float32)
    feed(x=x, w=w, b=np.array([0.5], np.float32))
    y = run("Conv", ["x", "w", "b"], ["y"], kernel=2)
    assert y.tolist() == [[[[12.5, 16.5], [24.5, 28.5]]]]
    y = run("Conv", ["x", "w"], ["y"], kernel=2, pad=1, stride=2)
    assert y.tolist() == [[[[1.0, 5.0], [11.0, 28.0]]]]


def test_conv_same_bits_every_run(rng):
    x, w, b = f32(rng, 4, 8, 17, 13), f32(rng, 16, 4, 3, 3), f32(rng, 16)
    feed(x=x, w=w, b=b)
    a = run("Conv", ["x", "w", "b"], ["y"], kernel=3, pad=1, group=2)
    for _ in range(3):
        assert run("Conv", ["x", "w", "b"], ["y2"], kernel=3, pad=1, group=2).tobytes() == a.tobytes()
    dy = f32(rng, *a.shape)
    feed(dy=dy)
    g = run("ConvGradient", ["x", "w", "dy"], ["dw", "db", "dx"], kernel=3, pad=1, group=2)
    for _ in range(2):
        h = run("ConvGradient", ["x", "w", "dy"], ["dw2", "db2", "dx2"], kernel=3, pad=1, group=2)
        assert [t.tobytes() for t in h] == [t.tobytes() for t in g]



@pytest.mark.parametrize("type_", ["Conv", "ConvTranspose"])
@pytest.mark.parametrize("order,group", [("NCHW", 1), ("NHWC", 1), ("NCHW", 2), ("NHWC", 2)])
@pytest.mark.parametrize("N", [1, 2, 5, 17])
def test_same_bits_for_any_thread_count(rng, type_, order, group, N):
    """The images run in shares over OpenBLAS's thread count (csrc/ops/conv.c, CV_SHARES): Y, dX,
    dbias and the filter gradient (the shares' sums added in share order) have the same bits with
    1, 2 or 3 threads, and match the reference."""
    from recurrent import _C
    tr = type_ == "ConvTranspose"
    xs, wsh = shapes(N, 4, 6, (7, 6), (3, 3), group, order)
    if tr:
        wsh = (4,) + ((6 // group, 3, 3) if order == "NCHW" else (3, 3, 6 // group))
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, 6)
    a = dict(kernel=3, pad=1, stride=1 + tr, group=group, order=order)
    feed(x=x, w=w, b=b)
    default = _C.get_flag("blas_num_threads")
    got = {}
    try:
        for t in (1, 2, 3):
            _C.set_flag("blas_num_threads", t)
            y = run(type_, ["x", "w", "b"], ["y"], **a)
            feed(dy=np.cos(y))
            got[t] = [y] + list(run(type_ + "Gradient", ["x", "w", "dy"], ["dw", "db", "dx"], **a))
    finally:
        _C.set_flag("blas_num_threads", default)
    for t in (2, 3):
        assert [v.tobytes() for v in got[t]] == [v.tobytes() for v in got[1]], t
    if not tr:
        close(got[1][0], conv_ref(x, w, b, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), group, order), 2e-5)
        for g_, r in zip(got[1][1:], conv_grad_ref(x, w, np.cos(got[1][0]), (3, 3), (1, 1), (1, 1), (1, 1),
                                                   (1, 1), group, order)):
            close(g_, r, 2e-5)

@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,C,M", [(0, 3, 4), (2, 0, 4), (2, 3, 0), (0, 0, 0)])
def test_conv_empty(rng, order, N, C, M):
    xs, wsh = shapes(N, C, M, (5, 4), (3, 3), 1, order)
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, M)
    feed(x=x, w=w, b=b)
    y = run("Conv", ["x", "w", "b"], ["y"], kernel=3, order=order, pad=1)
    close(y, conv_ref(x, w, b, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, order))
    dy = f32(rng, *y.shape)
    feed(dy=dy)
    dw, db, dx = run("ConvGradient", ["x", "w", "dy"], ["dw", "db", "dx"], kernel=3, order=order, pad=1)
    rdw, rdb, rdx = conv_grad_ref(x, w, dy, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, order)
    close(dw, rdw)
    close(db, rdb)
    close(dx, rdx)


def test_conv_nan_propagates(rng):
    x, w = f32(rng, 1, 1, 5, 5), f32(rng, 2, 1, 3, 3)
    x[0, 0, 0, 0] = np.nan
    feed(x=x, w=w)
    y = run("Conv", ["x", "w"], ["y"], kernel=3, pad=1)
    assert np.isnan(y[:, :, :2, :2]).all()
    assert not np.isnan(y[:, :, 2:, :]).any() and not np.isnan(y[:, :, :, 2:]).any()


# ---------------------------------------------------------------- gradient
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", CASES)
def test_conv_gradient_op(rng, order, case):
    N, C, M, sp, k, s, d, ph, pt, group = case
    xs, wsh = shapes(N, C, M, sp, k, group, order)
    x, w = f32(rng, *xs), f32(rng, *wsh)
    feed(x=x, w=w)
    a = args_of(k, s, d, ph, pt, group, order)
    y = run("Conv", ["x", "w"], ["y"], **a)
    dy = f32(rng, *y.shape)
    feed(dy=dy)
    rdw, rdb, rdx = conv_grad_ref(x, w, dy, k, s, d, ph, pt, group, order)
    check_gradient_forms("ConvGradient", a, rdw, rdb, rdx)


def check_gradient_forms(type_, a, rdw, rdb, rdx):
    """type_(x, w, dy) against the references, then its shorter output lists: the same bits."""
    dw, db, dx = run(type_, ["x", "w", "dy"], ["dw", "db", "dx"], **a)
    close(dw, rdw, 2e-5)
    close(db, rdb, 2e-5)
    close(dx, rdx, 2e-5)
    dw2, db2 = run(type_, ["x", "w", "dy"], ["dw2", "db2"], **a)   # no dX
    assert dw2.tobytes() == dw.tobytes() and db2.tobytes() == db.tobytes()
    dw3, dx3 = run(type_, ["x", "w", "dy"], ["dw3", "dx3"], no_bias=1, **a)
    assert dw3.tobytes() == dw.tobytes() and dx3.tobytes() == dx.tobytes()
    dw4 = run(type_, ["x", "w", "dy"], ["dw4"], no_bias=1, **a)
    assert dw4.tobytes() == dw.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[4], CASES[6], CASES[8]])
def test_conv_gradient_fd(rng, order, case):
    N, C, M, sp, k, s, d, ph, pt, group = case
    xs, wsh = shapes(N, C, M, sp, k, group, order)
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, M)
    o = op("Conv", ["x", "w", "b"], ["y"], **args_of(k, s, d, ph, pt, group, order))
    check_grads(o, [x, w, b], stepsize=1e-2, threshold=1e-2)
    o = op("Conv", ["x", "w"], ["y"], **args_of(k, s, d, ph, pt, group, order))
    check_grads(o, [x, w], stepsize=1e-2, threshold=1e-2)


def test_conv_net_gradient(rng):
    from recurrent import gradient_checker
    net = core.Net("convw")
    y = net.Conv(["x", "w", "b"], "y", kernel=3, pad=1, stride=2, order="NHWC")
    net.SumElements(net.Mul([y, "m"], "ym"), "loss")
    x, w, m = f32(rng, 2, 5, 4, 3), f32(rng, 4, 3, 3, 3), f32(rng, 2, 3, 2, 4)
    for blob in ("x", "w", "b"):
        gradient_checker.NetGradientChecker.Check(
            net, ["loss"], {"x": x, "w": w, "b": f32(rng, 4), "m": m}, blob, step_size=1e-2, threshold=1e-2,
            print_net=False)


def test_gradient_maker():
    def summary(ops):
        return [(p.type, list(p.input), list(p.output), sorted((a.name, a.value()) for a in p.arg))
                for p in ops]

    ops, g = G(op("Conv", ["x", "w", "b"], ["y"], kernel=3, order="NHWC"), ["dy"])
    assert g == ["x_grad", "w_grad", "b_grad"]
    assert summary(ops) == [("ConvGradient", ["x", "w", "dy"], ["w_grad", "b_grad", "x_grad"],
                             [("kernel", 3), ("order", "NHWC")])]
    ops, g = G(op("Conv2D", ["x", "w"], ["y"], kernel=3), ["dy"])
    assert g == ["x_grad", "w_grad"]
    assert summary(ops) == [("Conv2DGradient", ["x", "w", "dy"], ["w_grad", "x_grad"],
                             [("kernel", 3), ("no_bias", 1)])]
    ops, g = G(op("Conv3D", ["x", "w", "b"], ["y"], kernel=1, no_gradient_to_input=1), ["dy"])
    assert g == [None, "w_grad", "b_grad"]
    assert summary(ops)[0][:3] == ("Conv3DGradient", ["x", "w", "dy"], ["w_grad", "b_grad"])
    ops, g = G(op("Conv1D", ["x", "w"], ["y"], kernel=1, no_gradient_to_input=1), ["dy"])
    assert summary(ops)[0][2:] == (["w_grad"], [("kernel", 1), ("no_bias", 1), ("no_gradient_to_input", 1)])
    assert g == [None, "w_grad"]
    assert G(op("Conv", ["x", "w"], ["y"], kernel=1), [None]) == ([], [None, None])


def test_gradient_maker_same_blob_twice(rng):
    # X as its own filter (1 x 1 x 1 x 1): two gradient names, summed by the backward pass
    ops, g = G(op("Conv", ["p", "p"], ["y"], kernel=1), ["dy"])
    assert g[0] == "p_grad" and g[1] not in (None, "p_grad")
    net = core.Net("twice")
    net.Conv(["p", "p"], "y", kernel=1)
    net.SumElements(net.Mul(["y", "y"], "yy"), "loss")
    grads = net.AddGradientOperators(["loss"])
    feed(p=np.array([[[[1.5]]]], np.float32))
    workspace.RunNetOnce(net)
    # loss = p^4: d/dp = 4 p^3
    close(workspace.FetchBlob(str(grads["p"])), np.array([[[[4 * 1.5 ** 3]]]]), 1e-6)


# ---------------------------------------------------------------- brew / cnn
@pytest.mark.parametrize("order", ORDERS)
def test_brew_conv(rng, order):
    model = ModelHelper(name="c")
    y = brew.conv(model, "x", "c1", 3, 4, 3, pad=1, order=order)
    assert str(y) == "c1"
    assert [str(p) for p in model.params] == ["c1_w", "c1_b"]
    init = model.param_init_net.Proto().op
    assert [(o.type, list(o.output)) for o in init] == [("XavierFill", ["c1_w"]), ("ConstantFill", ["c1_b"])]
    wshape = [4, 3, 3, 3]
    assert [a.ints for a in init[0].arg if a.name == "shape"][0] == wshape
    conv = model.net.Proto().op[0]
    assert (conv.type, list(conv.input)) == ("Conv", ["x", "c1_w", "c1_b"])
    assert sorted((a.name, a.value()) for a in conv.arg) == [("kernel", 3), ("order", order), ("pad", 1)]
    x = f32(rng, *shapes(2, 3, 4, (5, 6), (3, 3), 1, order)[0])
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    w, b = workspace.FetchBlob("c1_w"), workspace.FetchBlob("c1_b")
    assert w.shape == shapes(2, 3, 4, (5, 6), (3, 3), 1, order)[1] and (b == 0).all()
    ref = conv_ref(x, w, b, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, order)
    close(workspace.FetchBlob("c1"), ref, 2e-5)


def test_brew_conv_options(rng):
    model = ModelHelper(name="c")
    brew.conv(model, "x", "a", 4, 6, 3, no_bias=True, group=2, weight_init=("ConstantFill", {"value": 0.5}),
              use_cudnn=True, cudnn_exhaustive_search=True, ws_nbytes_limit=1024)
    brew.conv_nd(model, "x3", "b", 2, 3, [3, 2, 1], bias_init=("ConstantFill", {"value": 1.0}))
    brew.group_conv(model, "x", "c", 4, 8, 1, group=4)
    assert [str(p) for p in model.params] == ["a_w", "b_w", "b_b", "c_w", "c_b"]
    shapes_ = {o.output[0]: [a.ints for a in o.arg if a.name == "shape"][0]
               for o in model.param_init_net.Proto().op}
    assert shapes_ == {"a_w": [6, 2, 3, 3], "b_w": [3, 2, 3, 2, 1], "b_b": [3], "c_w": [8, 1, 1, 1],
                       "c_b": [8]}
    ops = model.net.Proto().op
    args = [{a.name: a.value() for a in o.arg} for o in ops]
    assert list(ops[0].input) == ["x", "a_w"]
    assert args[0] == {"kernel": 3, "group": 2, "order": "NCHW", "exhaustive_search": 1,
                       "ws_nbytes_limit": 1024}
    assert [o.engine for o in ops] == ["CUDNN", "", ""]
    assert args[1] == {"kernels": [3, 2, 1], "order": "NCHW"}
    assert args[2] == {"kernel": 1, "group": 4, "order": "NCHW"}
    feed(x=f32(rng, 2, 4, 5, 5), x3=f32(rng, 1, 2, 4, 3, 2))
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)  # the CUDNN engine and its arguments are accepted and ignored
    assert workspace.FetchBlob("a").shape == (2, 6, 3, 3)
    assert workspace.FetchBlob("b").shape == (1, 3, 2, 2, 2)
    with pytest.raises(AssertionError, match="ConvNd only supported for NCHW"):
        brew.conv_nd(model, "x3", "d", 2, 3, [3, 2, 1], order="NHWC")
    nhwc = ModelHelper(name="n")
    brew.conv(nhwc, "x", "e", 4, 6, 3, order="NHWC", group=2)
    assert [a.ints for a in nhwc.param_init_net.Proto().op[0].arg if a.name == "shape"][0] == [6, 3, 3, 2]


def test_cnn_model_helper_conv(rng):
    model = CNNModelHelper(order="NHWC", name="cnn")
    model.Conv("x", "c1", 3, 4, 3, pad=1)
    model.GroupConv("c1", "c2", 4, 4, 1, group=2)
    assert [o.type for o in model.net.Proto().op] == ["Conv", "Conv"]
    args = [{a.name: a.value() for a in o.arg} for o in model.net.Proto().op]
    assert args[0] == {"kernel": 3, "pad": 1, "order": "NHWC", "exhaustive_search": 0}
    assert args[1] == {"kernel": 1, "group": 2, "order": "NHWC", "exhaustive_search": 0}
    assert [o.engine for o in model.net.Proto().op] == ["CUDNN", "CUDNN"]
    nchw = CNNModelHelper(name="cnn3", use_cudnn=False)
    nchw.ConvNd("x", "c3", 3, 2, [3, 3, 1])
    assert [{a.name: a.value() for a in o.arg} for o in nchw.net.Proto().op] == [{"kernels": [3, 3, 1],
                                                                                  "order": "NCHW"}]
    feed(x=f32(rng, 2, 5, 5, 3))
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunOperatorOnce(model.net.Proto().op[0])
    assert workspace.FetchBlob("c1").shape == (2, 5, 5, 4)
    with pytest.raises(AttributeError, match="not provided"):
        model.GroupConv_Deprecated


def test_small_model_trains(rng):
    # brew.conv + relu + fc + softmax loss, a few SGD steps: the loss goes down
    model = ModelHelper(name="train")
    brew.conv(model, "data", "conv", 2, 4, 3, pad=1)
    brew.relu(model, "conv", "relu")
    brew.fc(model, "relu", "fc", 4 * 6 * 6, 3)
    _, loss = model.net.SoftmaxWithLoss(["fc", "label"], ["softmax", "loss"])
    model.AddGradientOperators([loss])
    for p in model.params:
        model.net.WeightedSum([p, "one", model.param_to_grad[p], "lr"], p)
    data = f32(rng, 8, 2, 6, 6)
    label = (data[:, 0, :3].sum(axis=(1, 2)) > 0).astype(np.int32) + (data[:, 1].sum(axis=(1, 2)) > 0)
    feed(data=data, label=label.astype(np.int32), one=np.ones(1, np.float32),
         lr=np.array([-0.05], np.float32))
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net, overwrite=True)
    losses = []
    for _ in range(20):
        workspace.RunNet(model.net.Proto().name)
        losses.append(float(workspace.FetchBlob("loss")))
    assert losses[-1] < 0.7 * losses[0], losses


# ---------------------------------------------------------------- bad input
def test_bad_arguments():
    feed(x=np.zeros((2, 4, 5, 5), np.float32), w=np.zeros((6, 2, 3, 3), np.float32),
         w4=np.zeros((6, 4, 3, 3), np.float32))
    raises(ValueError, r"argument group must be >= 1, got 0",
           op("Conv", ["x", "w4"], ["y"], kernel=3, group=0))
    raises(ValueError, r"argument group=3 must divide the 4 channels of input 0 blob 'x' \(2, 4, 5, 5\) "
                       r"float32 \(order NCHW\)", op("Conv", ["x", "w"], ["y"], kernel=3, group=3))
    raises(ValueError, r"gives 2 or 3 outputs \(dfilter, dbias\[, dX\]\); with no_bias=1 "
                       r"\(dfilter\[, dX\]\), got 1 outputs",
           op("ConvGradient", ["x", "w4", "x"], ["dw"], kernel=3))
    raises(ValueError, r"with no_bias=1 gives 1 or 2 outputs \(dfilter\[, dX\]\), got 3 outputs",
           op("ConvGradient", ["x", "w4", "x"], ["dw", "db", "dx"], kernel=3, no_bias=1))


def test_bad_shapes():
    feed(x=np.zeros((2, 4, 5, 5), np.float32), w=np.zeros((6, 2, 3, 3), np.float32),
         w4=np.zeros((6, 4, 3, 3), np.float32), b=np.zeros(5, np.float32), bi=np.zeros(6, np.int32),
         dy=np.zeros((2, 6, 3, 4), np.float32), y=np.array([7.0], np.float32), dw=np.array([7.0], np.float32),
         xh=np.zeros((2, 5, 5, 4), np.float32), w5=np.zeros((6, 4, 3, 3), np.float32))
    raises(ValueError, r"input 1 blob 'w' \(filter\) must have shape \(M, 4, 3, 3\) with M a multiple of "
                       r"group=1 \(X \(2, 4, 5, 5\) float32, order NCHW, kernel from the arguments\), got "
                       r"\(6, 2, 3, 3\) float32", op("Conv", ["x", "w"], ["y"], kernel=3))
    raises(ValueError, r"input 1 blob 'w4' \(filter\) must have shape \(M, 2, 3, 3\) with M a multiple of "
                       r"group=2", op("Conv", ["x", "w4"], ["y"], kernel=3, group=2))
    raises(ValueError, r"input 1 blob 'w' \(filter\) must have shape \(M, 3, 3, 2\) with M a multiple of "
                       r"group=2 \(X \(2, 5, 5, 4\) float32, order NHWC",
           op("Conv", ["xh", "w"], ["y"], kernel=3, group=2, order="NHWC"))
    raises(ValueError, r"input 1 blob 'w4' \(filter\) must have shape \(M, 4, 2, 3\)",
           op("Conv", ["x", "w4"], ["y"], kernel_h=2, kernel_w=3))
    raises(ValueError, r"input 2 blob 'b' \(bias\) must have shape \(6\) \(M, the filter's first dim\), got "
                       r"\(5,\) float32", op("Conv", ["x", "w4", "b"], ["y"], kernel=3))
    raises(TypeError, r"input 2 blob 'bi'", op("Conv", ["x", "w4", "bi"], ["y"], kernel=3))
    raises(TypeError, r"input 1 blob 'bi'", op("Conv", ["x", "bi"], ["y"], kernel=3))
    raises(ValueError, r"input 2 blob 'dy' \(dY\) must have the shape of Conv's output \(2, 6, 3, 3\) "
                       r"float32 \(X \(2, 4, 5, 5\) float32, filter \(6, 4, 3, 3\) float32\), got "
                       r"\(2, 6, 3, 4\) float32",
           op("ConvGradient", ["x", "w4", "dy"], ["dw", "db", "dx"], kernel=3))
    # nothing was written
    for blob in ("y", "dw"):
        assert workspace.FetchBlob(blob).tolist() == [7.0]


def test_huge_column_buffer_is_memory_error():
    # a 2048 x 2048 image with a 128 x 128 kernel: the columns would take 256 GiB
    feed(xb=np.zeros((1, 1, 2048, 2048), np.float32), wb=np.zeros((1, 1, 128, 128), np.float32),
         yb=np.array([7.0], np.float32))
    with pytest.raises(MemoryError, match="cannot allocate the column buffer"):
        workspace.RunOperatorOnce(op("Conv", ["xb", "wb"], ["yb"], kernel=128, pad=64))
    assert workspace.FetchBlob("yb").tolist() == [7.0]


def test_brew_conv_engine_and_list_kernel():
    model = ModelHelper(name="e")
    with pytest.raises(ValueError, match='When use_cudnn=False, the only engine you can specify is ""'):
        brew.conv(model, "x", "a", 2, 2, 3, engine="CUDNN")
    with pytest.raises(ValueError, match='When use_cudnn=True, the only engine you can specify is "CUDNN"'):
        brew.conv(model, "x", "a", 2, 2, 3, engine="", use_cudnn=True)
    brew.conv(model, "x", "b", 2, 3, [3, 1], engine="CUDNN", use_cudnn=True, float16_compute=True)
    o = model.net.Proto().op[-1]
    assert o.engine == "CUDNN"
    assert {a.name: a.value() for a in o.arg} == {"kernel_h": 3, "kernel_w": 1, "order": "NCHW",
                                                  "exhaustive_search": 0, "float16_compute": 1}
    assert [a.ints for a in model.param_init_net.Proto().op[-2].arg if a.name == "shape"][0] == [3, 2, 3, 1]
    with pytest.raises(AssertionError, match="only a 2D kernel"):
        brew.conv(model, "x", "c", 2, 3, [3, 1, 1])


@pytest.mark.parametrize("order", ORDERS)
def test_conv_legacy_pad_caffe_pooling_rule(rng, order):
    # legacy_pad=3 (Caffe's pooling rule) on a convolution: the effective pads are the shared geometry's
    from recurrent import _convpool
    xs, wsh = shapes(2, 3, 4, (6, 8), (3, 2), 1, order)
    x, w = f32(rng, *xs), f32(rng, *wsh)
    feed(x=x, w=w)
    kw = dict(kernel_h=3, kernel_w=2, stride=2, pad=1, legacy_pad=3, order=order)
    y = run("Conv", ["x", "w"], ["y"], **kw)
    g = _convpool.geometry(op("Conv", ["x", "w"], ["y"], **kw), x.shape, _convpool.CONV)
    assert g.pad_tail != g.pad_head  # the rule grew a tail pad
    close(y, conv_ref(x, w, None, (3, 2), (2, 2), (1, 1), g.pad_head, g.pad_tail, 1, order), 2e-5)
