"""ConvTranspose and ConvTransposeGradient (csrc/ops/conv.c), the gradient maker
(recurrent/_grad_conv.py), brew.conv_transpose and CNNModelHelper.ConvTranspose: NumPy float64
references in both orders over 1-3 spatial dims, strides, pads, adjs, dilations, groups and legacy_pad;
parity with torch's conv_transpose; empty tensors, NaN, determinism, bad input with exact messages,
gradients by finite differences."""

import itertools

import numpy as np
import pytest

from recurrent import brew, core, workspace
from recurrent.cnn import CNNModelHelper
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_conv import _back, _nc, check_gradient_forms
from test_ops_math import G, close, f32, feed, op, run

ORDERS = ["NCHW", "NHWC"]


# ---------------------------------------------------------------- references (float64)
def _full(sp, k, s, d, adj):
    """The uncropped output sizes: (x - 1) s + d (k - 1) + 1 + adj."""
    return [(sp[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + adj[i] for i in range(len(k))]


def _offsets(sp, k, s, d):
    """For each kernel offset a: (a, the strided slice of the uncropped output it reaches)."""
    for a in itertools.product(*[range(kk) for kk in k]):
        yield a, (slice(None), slice(None)) + tuple(
            slice(a[i] * d[i], a[i] * d[i] + (sp[i] - 1) * s[i] + 1, s[i]) for i in range(len(k)))


def _crop(full, ph, pt):
    return (slice(None), slice(None)) + tuple(slice(ph[i], full[i] - pt[i]) for i in range(len(full)))


def convt_ref(x, w, b, k, s, d, ph, pt, adj, group=1, order="NCHW"):
    """Y of ConvTranspose: X scattered through the filter onto the uncropped output, then cropped."""
    x, w = _nc(x, order), _nc(w, order)
    nd = len(k)
    N, Cin, sp = x.shape[0], x.shape[1], x.shape[2:]
    Cout = w.shape[1] * group
    full = _full(sp, k, s, d, adj)
    big = np.zeros([N, Cout] + full)
    Mg, Cg = Cin // group, Cout // group
    for a, sl in _offsets(sp, k, s, d):
        for g in range(group):
            wa = w[(slice(g * Mg, (g + 1) * Mg), slice(None)) + a]
            view = big[sl]
            view[:, g * Cg:(g + 1) * Cg] += np.einsum("nm...,mc->nc...", x[:, g * Mg:(g + 1) * Mg], wa)
    y = big[_crop(full, ph, pt)]
    if b is not None:
        y = y + np.asarray(b, np.float64).reshape((1, Cout) + (1,) * nd)
    return _back(y, order)


def convt_grad_ref(x, w, dy, k, s, d, ph, pt, adj, group=1, order="NCHW"):
    """(dfilter, dbias, dX) of ConvTranspose."""
    xs, ws, dys = _nc(x, order), _nc(w, order), _nc(dy, order)
    nd = len(k)
    N, Cin, sp = xs.shape[0], xs.shape[1], xs.shape[2:]
    Cout = ws.shape[1] * group
    full = _full(sp, k, s, d, adj)
    big = np.zeros([N, Cout] + full)
    big[_crop(full, ph, pt)] = dys
    Mg, Cg = Cin // group, Cout // group
    dx, dw = np.zeros(xs.shape), np.zeros(ws.shape)
    axes = [0] + list(range(2, 2 + nd))
    for a, sl in _offsets(sp, k, s, d):
        for g in range(group):
            ms, cs = slice(g * Mg, (g + 1) * Mg), slice(g * Cg, (g + 1) * Cg)
            bg = big[sl][:, cs]
            dw[(ms, slice(None)) + a] = np.tensordot(xs[:, ms], bg, (axes, axes))
            dx[:, ms] += np.einsum("nc...,mc->nm...", bg, ws[(ms, slice(None)) + a])
    db = dys.sum(axis=(0,) + tuple(range(2, 2 + nd)))
    if order == "NHWC":
        dw = np.moveaxis(dw, 1, -1)
    return dw, db, _back(dx, order)


def shapes(N, Cin, Cout, sp, k, group, order):
    """(X shape, filter shape)."""
    if order == "NCHW":
        return (N, Cin) + tuple(sp), (Cin, Cout // group) + tuple(k)
    return (N,) + tuple(sp) + (Cin,), (Cin,) + tuple(k) + (Cout // group,)


def args_of(k, s, d, ph, pt, adj, group, order):
    a = dict(kernels=list(k), strides=list(s), pads=list(ph) + list(pt), adjs=list(adj), order=order)
    if any(v != 1 for v in d):
        a["dilations"] = list(d)
    if group != 1:
        a["group"] = group
    return a


CASES = [  # N, C_in, C_out, spatial, kernel, stride, dilation, pad head, pad tail, adj, group
    (2, 3, 4, (5,), (3,), (1,), (1,), (0,), (0,), (0,), 1),
    (1, 4, 6, (6,), (2,), (3,), (2,), (1,), (2,), (2,), 2),
    (2, 3, 5, (4, 5), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1), 1),
    (3, 4, 4, (5, 3), (3, 2), (2, 1), (1, 2), (0, 2), (1, 0), (2, 1), 2),   # adj == stride
    (1, 6, 6, (4, 4), (3, 3), (1, 2), (2, 1), (2, 1), (2, 1), (0, 1), 6),   # depthwise, dilated
    (2, 2, 3, (3, 4, 2), (2, 3, 1), (1, 2, 1), (1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 1, 0), 1),
    (1, 4, 2, (3, 3, 2), (3, 2, 2), (2, 1, 2), (1, 2, 1), (1, 1, 0), (1, 0, 1), (1, 0, 1), 2),
    (2, 5, 3, (4, 6), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 1),   # 1x1: writes Y itself
    (2, 4, 6, (4, 3), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), (0, 0), 2),   # 1x1 with groups
    (2, 3, 2, (3, 4), (1, 1), (2, 2), (1, 1), (0, 0), (0, 0), (1, 0), 1),   # 1x1 strided
    (2, 4, 2, (4, 5), (2, 2), (2, 2), (1, 1), (3, 0), (0, 3), (0, 0), 2),   # pads beyond a kernel
]


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_reference(rng, order, case, bias):
    N, Cin, Cout, sp, k, s, d, ph, pt, adj, group = case
    xs, wsh = shapes(N, Cin, Cout, sp, k, group, order)
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, Cout)
    feed(x=x, w=w, b=b)
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    y = run("ConvTranspose", ins, ["y"], **args_of(k, s, d, ph, pt, adj, group, order))
    close(y, convt_ref(x, w, b if bias else None, k, s, d, ph, pt, adj, group, order), 2e-5)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("group", [1, 2])
def test_torch_parity(rng, nd, group):
    torch = pytest.importorskip("torch")
    fn = [None, torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
          torch.nn.functional.conv_transpose3d][nd]
    k, s, d, p, adj = [3, 2, 2][:nd], [2, 3, 1][:nd], [1, 2, 2][:nd], [1, 0, 1][:nd], [1, 2, 0][:nd]
    x, w, b = f32(rng, 2, 4, *[5, 4, 3][:nd]), f32(rng, 4, 6 // group, *k), f32(rng, 6)
    feed(x=x, w=w, b=b)
    y = run("ConvTranspose", ["x", "w", "b"], ["y"], kernels=k, strides=s, dilations=d, pads=p + p, adjs=adj,
            group=group)
    ref = fn(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride=s, padding=p,
             output_padding=adj, groups=group, dilation=d).numpy()
    close(y, ref, 2e-5)


def test_scalar_arguments(rng):
    # kernel / stride / pad / adj as single values apply to both dims; the _h / _w forms
    x, w = f32(rng, 2, 2, 4, 3), f32(rng, 2, 3, 2, 2)
    feed(x=x, w=w)
    y = run("ConvTranspose", ["x", "w"], ["y"], kernel=2, stride=2, pad=1, adj=1)
    close(y, convt_ref(x, w, None, (2, 2), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1)), 2e-5)
    y = run("ConvTranspose", ["x", "w"], ["y"], kernel_h=2, kernel_w=2, stride_h=1, stride_w=3, pad_t=0,
            pad_l=1, pad_b=1, pad_r=0, adj_h=1, adj_w=2)
    close(y, convt_ref(x, w, None, (2, 2), (1, 3), (1, 1), (0, 1), (1, 0), (1, 2)), 2e-5)


@pytest.mark.parametrize("legacy_pad", [1, 2])
def test_legacy_pad(rng, legacy_pad):
    # VALID and SAME alike: no pads, the output (x - 1) stride + kernel + adj (as Caffe2's)
    x, w = f32(rng, 1, 2, 4, 3), f32(rng, 2, 3, 3, 2)
    feed(x=x, w=w)
    y = run("ConvTranspose", ["x", "w"], ["y"], kernel_h=3, kernel_w=2, stride=2, adj=1,
            legacy_pad=legacy_pad)
    assert y.shape == (1, 3, 10, 7)
    close(y, convt_ref(x, w, None, (3, 2), (2, 2), (1, 1), (0, 0), (0, 0), (1, 1)), 2e-5)


def test_exact_small():
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    w = np.ones((1, 1, 2, 2), np.float32)
    feed(x=x, w=w, b=np.array([0.5], np.float32))
    y = run("ConvTranspose", ["x", "w", "b"], ["y"], kernel=2)
    assert y.tolist() == [[[[1.5, 3.5, 2.5], [4.5, 10.5, 6.5], [3.5, 7.5, 4.5]]]]
    y = run("ConvTranspose", ["x", "w"], ["y"], kernel=2, stride=2, pad_t=1, pad_l=0, pad_b=0, pad_r=1, adj=1)
    assert y.tolist() == [[[[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0],
                            [0.0, 0.0, 0.0, 0.0]]]]


def test_same_bits_every_run(rng):
    x, w, b = f32(rng, 4, 8, 9, 7), f32(rng, 8, 4, 3, 3), f32(rng, 8)
    kw = dict(kernel=3, pad=1, stride=2, adj=1, group=2)
    feed(x=x, w=w, b=b)
    a = run("ConvTranspose", ["x", "w", "b"], ["y"], **kw)
    for _ in range(3):
        assert run("ConvTranspose", ["x", "w", "b"], ["y2"], **kw).tobytes() == a.tobytes()
    feed(dy=f32(rng, *a.shape))
    g = run("ConvTransposeGradient", ["x", "w", "dy"], ["dw", "db", "dx"], **kw)
    for _ in range(2):
        h = run("ConvTransposeGradient", ["x", "w", "dy"], ["dw2", "db2", "dx2"], **kw)
        assert [t.tobytes() for t in h] == [t.tobytes() for t in g]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,Cin,Cout", [(0, 3, 4), (2, 0, 4), (2, 3, 0), (0, 0, 0)])
def test_empty(rng, order, N, Cin, Cout):
    xs, wsh = shapes(N, Cin, Cout, (4, 3), (3, 3), 1, order)
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, Cout)
    feed(x=x, w=w, b=b)
    a = args_of((3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1), 1, order)
    y = run("ConvTranspose", ["x", "w", "b"], ["y"], **a)
    close(y, convt_ref(x, w, b, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1), 1, order))
    dy = f32(rng, *y.shape)
    feed(dy=dy)
    dw, db, dx = run("ConvTransposeGradient", ["x", "w", "dy"], ["dw", "db", "dx"], **a)
    rdw, rdb, rdx = convt_grad_ref(x, w, dy, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1), 1, order)
    close(dw, rdw)
    close(db, rdb)
    close(dx, rdx)


def test_nan_propagates(rng):
    x, w = f32(rng, 1, 1, 4, 4), f32(rng, 1, 2, 3, 3)
    x[0, 0, 0, 0] = np.nan
    feed(x=x, w=w)
    y = run("ConvTranspose", ["x", "w"], ["y"], kernel=3, stride=2)  # X[0, 0] reaches Y[:3, :3]
    assert np.isnan(y[:, :, :3, :3]).all()
    assert not np.isnan(y[:, :, 3:, :]).any() and not np.isnan(y[:, :, :, 3:]).any()


# ---------------------------------------------------------------- gradient
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", CASES)
def test_gradient_op(rng, order, case):
    N, Cin, Cout, sp, k, s, d, ph, pt, adj, group = case
    xs, wsh = shapes(N, Cin, Cout, sp, k, group, order)
    x, w = f32(rng, *xs), f32(rng, *wsh)
    feed(x=x, w=w)
    a = args_of(k, s, d, ph, pt, adj, group, order)
    y = run("ConvTranspose", ["x", "w"], ["y"], **a)
    dy = f32(rng, *y.shape)
    feed(dy=dy)
    rdw, rdb, rdx = convt_grad_ref(x, w, dy, k, s, d, ph, pt, adj, group, order)
    check_gradient_forms("ConvTransposeGradient", a, rdw, rdb, rdx)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[4], CASES[6], CASES[10]])
def test_gradient_fd(rng, order, case):
    N, Cin, Cout, sp, k, s, d, ph, pt, adj, group = case
    xs, wsh = shapes(N, Cin, Cout, sp, k, group, order)
    x, w, b = f32(rng, *xs), f32(rng, *wsh), f32(rng, Cout)
    a = args_of(k, s, d, ph, pt, adj, group, order)
    check_grads(op("ConvTranspose", ["x", "w", "b"], ["y"], **a), [x, w, b], stepsize=1e-2, threshold=1e-2)
    check_grads(op("ConvTranspose", ["x", "w"], ["y"], **a), [x, w], stepsize=1e-2, threshold=1e-2)


def test_net_gradient(rng):
    from recurrent import gradient_checker
    net = core.Net("convtw")
    y = net.ConvTranspose(["x", "w", "b"], "y", kernel=3, pad=1, stride=2, adj=1, order="NHWC")
    net.SumElements(net.Mul([y, "m"], "ym"), "loss")
    x, w, m = f32(rng, 2, 3, 2, 3), f32(rng, 3, 3, 3, 4), f32(rng, 2, 6, 4, 4)
    for blob in ("x", "w", "b"):
        gradient_checker.NetGradientChecker.Check(
            net, ["loss"], {"x": x, "w": w, "b": f32(rng, 4), "m": m}, blob, step_size=1e-2, threshold=1e-2,
            print_net=False)


def test_gradient_maker():
    def summary(ops):
        return [(p.type, list(p.input), list(p.output), sorted((a.name, a.value()) for a in p.arg))
                for p in ops]

    ops, g = G(op("ConvTranspose", ["x", "w", "b"], ["y"], kernel=3, adj=1, order="NHWC"), ["dy"])
    assert g == ["x_grad", "w_grad", "b_grad"]
    assert summary(ops) == [("ConvTransposeGradient", ["x", "w", "dy"], ["w_grad", "b_grad", "x_grad"],
                             [("adj", 1), ("kernel", 3), ("order", "NHWC")])]
    ops, g = G(op("ConvTranspose", ["x", "w"], ["y"], kernel=3), ["dy"])
    assert g == ["x_grad", "w_grad"]
    assert summary(ops) == [("ConvTransposeGradient", ["x", "w", "dy"], ["w_grad", "x_grad"],
                             [("kernel", 3), ("no_bias", 1)])]
    ops, g = G(op("ConvTranspose", ["x", "w", "b"], ["y"], kernel=1, no_gradient_to_input=1), ["dy"])
    assert g == [None, "w_grad", "b_grad"]
    assert summary(ops)[0][:3] == ("ConvTransposeGradient", ["x", "w", "dy"], ["w_grad", "b_grad"])
    ops, g = G(op("ConvTranspose", ["x", "w"], ["y"], kernel=1, no_gradient_to_input=1), ["dy"])
    assert summary(ops)[0][2:] == (["w_grad"], [("kernel", 1), ("no_bias", 1), ("no_gradient_to_input", 1)])
    assert g == [None, "w_grad"]


# ---------------------------------------------------------------- brew / cnn
@pytest.mark.parametrize("order", ORDERS)
def test_brew_conv_transpose(rng, order):
    model = ModelHelper(name="ct")
    y = brew.conv_transpose(model, "x", "up", 3, 4, 2, stride=2, order=order)
    assert str(y) == "up"
    assert [str(p) for p in model.params] == ["up_w", "up_b"]
    init = model.param_init_net.Proto().op
    assert [(o.type, list(o.output)) for o in init] == [("XavierFill", ["up_w"]), ("ConstantFill", ["up_b"])]
    wshape = [3, 4, 2, 2] if order == "NCHW" else [3, 2, 2, 4]
    assert [a.ints for a in init[0].arg if a.name == "shape"][0] == wshape
    ct = model.net.Proto().op[0]
    assert (ct.type, list(ct.input)) == ("ConvTranspose", ["x", "up_w", "up_b"])
    assert sorted((a.name, a.value()) for a in ct.arg) == [("kernel", 2), ("order", order), ("stride", 2)]
    x = f32(rng, *shapes(2, 3, 4, (3, 5), (2, 2), 1, order)[0])
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    w, b = workspace.FetchBlob("up_w"), workspace.FetchBlob("up_b")
    assert list(w.shape) == wshape and (b == 0).all()
    ref = convt_ref(x, w, b, (2, 2), (2, 2), (1, 1), (0, 0), (0, 0), (0, 0), 1, order)
    close(workspace.FetchBlob("up"), ref, 2e-5)


def test_brew_conv_transpose_options():
    model = ModelHelper(name="ct2")
    brew.conv_transpose(model, "x", "a", 2, 3, 3, weight_init=("ConstantFill", {"value": 0.5}),
                        bias_init=("ConstantFill", {"value": 1.0}), use_cudnn=True,
                        cudnn_exhaustive_search=True, ws_nbytes_limit=64, pad=1)
    o = model.net.Proto().op[0]
    assert o.engine == "CUDNN"
    assert {a.name: a.value() for a in o.arg} == {"kernel": 3, "order": "NCHW", "pad": 1,
                                                  "exhaustive_search": 1, "ws_nbytes_limit": 64}
    values = [{a.name: a.value() for a in i.arg}.get("value") for i in model.param_init_net.Proto().op]
    assert values == [0.5, 1.0]
    ext = ModelHelper(name="ct3", init_params=False)
    brew.conv_transpose(ext, "x", "e", 2, 3, 3)
    assert [str(p) for p in ext.params] == ["e_w", "e_b"] and not ext.param_init_net.Proto().op


def test_cnn_model_helper_conv_transpose(rng):
    model = CNNModelHelper(order="NHWC", name="cnnt")
    model.ConvTranspose("x", "up", 3, 2, 2, stride=2)
    o = model.net.Proto().op[0]
    assert o.type == "ConvTranspose" and o.engine == "CUDNN"
    assert {a.name: a.value() for a in o.arg} == {"kernel": 2, "stride": 2, "order": "NHWC",
                                                  "exhaustive_search": 0}
    feed(x=f32(rng, 2, 4, 5, 3))
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    assert workspace.FetchBlob("up").shape == (2, 8, 10, 2)


def test_small_decoder_trains(rng):
    # brew.conv_transpose learns to upsample: a few SGD steps lower the squared error
    model = ModelHelper(name="dec")
    brew.conv_transpose(model, "data", "up", 2, 1, 2, stride=2, weight_init=("GaussianFill", {"std": 0.1}))
    dist = model.net.SquaredL2Distance(["up", "target"], "dist")
    loss = model.net.AveragedLoss(dist, "loss")
    model.AddGradientOperators([loss])
    for p in model.params:
        model.net.WeightedSum([p, "one", model.param_to_grad[p], "lr"], p)
    data = f32(rng, 8, 2, 3, 3)
    target = np.repeat(np.repeat(data[:, :1] - data[:, 1:], 2, axis=2), 2, axis=3)
    feed(data=data, target=target.astype(np.float32),
         one=np.ones(1, np.float32), lr=np.array([-0.02], np.float32))
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net, overwrite=True)
    losses = []
    for _ in range(30):
        workspace.RunNet(model.net.Proto().name)
        losses.append(float(workspace.FetchBlob("loss")))
    assert losses[-1] < 0.5 * losses[0], losses


# ---------------------------------------------------------------- bad input
def test_bad_arguments():
    feed(x=np.zeros((2, 4, 5, 5), np.float32), w=np.zeros((4, 2, 3, 3), np.float32))
    raises(ValueError, r"argument group must be >= 1, got 0",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, group=0))
    raises(ValueError, r"argument adjs: value 1 is 3, must lie in \[0, stride 2\]",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, stride=2, adj_h=0, adj_w=3))
    raises(ValueError, r"argument adjs: value 0 is -1, must lie in \[0, stride 1\]",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, adj=-1))
    raises(ValueError, r"argument adjs has 3 values for a 2-D kernel",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, adjs=[0, 0, 0]))
    raises(ValueError, r"give argument adjs, adj or adj_h \+ ... one way only",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, adjs=[0, 0], adj=0))
    raises(ValueError, r"argument adj_w is given without adj_h",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, adj_w=0))
    raises(ValueError, r"argument legacy_pad 3 \(CAFFE_LEGACY_POOLING\) is not supported by the transposed "
                       r"convolution", op("ConvTranspose", ["x", "w"], ["y"], kernel=3, legacy_pad=3))
    raises(ValueError, r"with legacy_pad SAME \(2\) the pads are computed: give no pads",
           op("ConvTranspose", ["x", "w"], ["y"], kernel=3, legacy_pad=2, pad=1))
    raises(ValueError, r"needs the kernel size", op("ConvTranspose", ["x", "w"], ["y"]))
    raises(ValueError, r"gives 2 or 3 outputs \(dfilter, dbias\[, dX\]\); with no_bias=1 "
                       r"\(dfilter\[, dX\]\), got 1 outputs",
           op("ConvTransposeGradient", ["x", "w", "x"], ["dw"], kernel=3))
    raises(ValueError, r"with no_bias=1 gives 1 or 2 outputs \(dfilter\[, dX\]\), got 3 outputs",
           op("ConvTransposeGradient", ["x", "w", "x"], ["dw", "db", "dx"], kernel=3, no_bias=1))


def test_bad_shapes():
    feed(x=np.zeros((2, 4, 5, 5), np.float32), w=np.zeros((4, 2, 3, 3), np.float32),
         w6=np.zeros((6, 2, 3, 3), np.float32), b=np.zeros(5, np.float32), bi=np.zeros(2, np.int32),
         dy=np.zeros((2, 2, 7, 8), np.float32), y=np.array([7.0], np.float32), dw=np.array([7.0], np.float32),
         xh=np.zeros((2, 5, 5, 4), np.float32), x3=np.zeros((2, 4, 5), np.float32),
         x0=np.zeros((2, 4, 0, 5), np.float32), x1=np.zeros((1, 4, 1, 1), np.float32))
    raises(ValueError, r"input 1 blob 'w6' \(filter\) must have shape \(4, C/group, 3, 3\) "
                       r"\(X \(2, 4, 5, 5\) float32: its channels first; order NCHW, kernel from the "
                       r"arguments\), got \(6, 2, 3, 3\) float32",
           op("ConvTranspose", ["x", "w6"], ["y"], kernel=3))
    raises(ValueError, r"input 1 blob 'w' \(filter\) must have shape \(4, 3, 2, C/group\) \(X \(2, 5, 5, 4\) "
                       r"float32: its channels first; order NHWC",
           op("ConvTranspose", ["xh", "w"], ["y"], kernel_h=3, kernel_w=2, order="NHWC"))
    raises(ValueError, r"input 2 blob 'b' \(bias\) must have shape \(4\) \(the output channels: filter "
                       r"\(4, 2, 3, 3\) float32, group=2\), got \(5,\) float32",
           op("ConvTranspose", ["x", "w", "b"], ["y"], kernel=3, group=2))
    raises(ValueError, r"argument group=3 must divide the 4 channels of input 0 blob 'x' \(2, 4, 5, 5\) "
                       r"float32 \(order NCHW\)", op("ConvTranspose", ["x", "w"], ["y"], kernel=3, group=3))
    raises(ValueError, r"input 0 blob 'x3' \(2, 4, 5\) float32 must have 4 dims for a 2-D kernel",
           op("ConvTranspose", ["x3", "w"], ["y"], kernel=3))
    raises(ValueError, r"input 0 blob 'x0' \(2, 4, 0, 5\) float32 \(order NCHW\) has spatial size 0 in dim 0",
           op("ConvTranspose", ["x0", "w"], ["y"], kernel=3))
    raises(ValueError, r"input 0 blob 'x1' \(1, 4, 1, 1\) float32 \(order NCHW\): the output size in dim 0, "
                       r"\(1 - 1\) \* stride 1 \+ dilation 1 \* \(kernel 3 - 1\) \+ 1 \+ adj 0 - pads "
                       r"2 - 1 = 0, must be >= 1",
           op("ConvTranspose", ["x1", "w"], ["y"], kernel=3, pads=[2, 0, 1, 0]))
    raises(TypeError, r"input 2 blob 'bi'", op("ConvTranspose", ["x", "w", "bi"], ["y"], kernel=3))
    raises(TypeError, r"input 1 blob 'bi'", op("ConvTranspose", ["x", "bi"], ["y"], kernel=3))
    raises(ValueError, r"input 2 blob 'dy' \(dY\) must have the shape of ConvTranspose's output "
                       r"\(2, 2, 7, 7\) float32 \(X \(2, 4, 5, 5\) float32, filter \(4, 2, 3, 3\) "
                       r"float32\), got \(2, 2, 7, 8\) float32",
           op("ConvTransposeGradient", ["x", "w", "dy"], ["dw", "db", "dx"], kernel=3))
    for blob in ("y", "dw"):  # nothing was written
        assert workspace.FetchBlob(blob).tolist() == [7.0]


def test_huge_column_buffer_is_memory_error():
    # a 2048 x 2048 input with a 128 x 128 kernel: the columns would take 256 GiB
    feed(xb=np.zeros((1, 1, 2048, 2048), np.float32), wb=np.zeros((1, 1, 128, 128), np.float32),
         yb=np.array([7.0], np.float32))
    with pytest.raises(MemoryError, match="cannot allocate the column buffer"):
        workspace.RunOperatorOnce(op("ConvTranspose", ["xb", "wb"], ["yb"], kernel=128))
    assert workspace.FetchBlob("yb").tolist() == [7.0]


def test_output_size_overflow_is_memory_error():
    feed(xo=np.zeros((0, 1, 2 ** 40, 1), np.float32), wo=np.zeros((1, 1, 1, 1), np.float32))
    with pytest.raises(MemoryError, match="the output size in dim 0 is beyond 2\\^63"):
        workspace.RunOperatorOnce(op("ConvTranspose", ["xo", "wo"], ["yo"], kernel=1, stride_h=2 ** 30,
                                     stride_w=1))
