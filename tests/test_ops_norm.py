"""GroupNorm, InstanceNorm, SpatialBN and their gradients (csrc/ops/norm.c), their gradient makers
(recurrent/_grad_norm.py) and brew.spatial_bn / instance_norm / spatial_gn: NumPy float64 references
in both orders, empty tensors, in place, NaN, bad input with exact messages, gradients by finite
differences."""

import numpy as np
import pytest

from recurrent import brew, core, workspace
from recurrent.cnn import CNNModelHelper
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_math import close, f32, feed, op, run  # the same helpers


# ---------------------------------------------------------------- references (float64)
def to_nc(x, order):
    """x as (N, C, S) float64."""
    x = x.astype(np.float64)
    if order == "NHWC":
        x = np.moveaxis(x, -1, 1)
    return x.reshape(x.shape[0], x.shape[1], int(np.prod(x.shape[2:], dtype=np.int64)))


def from_nc(y, shape, order):
    if order == "NHWC":
        nhwc = (shape[0], shape[-1]) + tuple(shape[1:-1])
        return np.moveaxis(y.reshape(nhwc), 1, -1)
    return y.reshape(shape)


def gn_ref(x, gamma, beta, G, eps, order):
    """(Y, mean, inv_std) of GroupNorm; G = C gives InstanceNorm."""
    xs = to_nc(x, order)
    N, C, S = xs.shape
    xg = xs.reshape(N, G, -1)
    mean = xg.mean(axis=2) if xg.shape[2] else np.zeros((N, G))
    var = xg.var(axis=2) if xg.shape[2] else np.zeros((N, G))
    rsig = 1.0 / np.sqrt(var + eps)
    xh = ((xg - mean[:, :, None]) * rsig[:, :, None]).reshape(N, C, S)
    y = xh * gamma.astype(np.float64)[None, :, None] + beta.astype(np.float64)[None, :, None]
    return from_nc(y, x.shape, order), mean, rsig


def gn_grad_ref(dy, x, gamma, mean, rsig, G, order):
    """(dX, dgamma, dbeta) of GroupNorm with the given statistics."""
    xs, ds = to_nc(x, order), to_nc(dy, order)
    N, C, S = xs.shape
    m = np.repeat(mean.astype(np.float64), C // G, axis=1)[:, :, None]
    r = np.repeat(rsig.astype(np.float64), C // G, axis=1)[:, :, None]
    xh = (xs - m) * r
    g = ds * gamma.astype(np.float64)[None, :, None]
    gg, xg = g.reshape(N, G, -1), xh.reshape(N, G, -1)
    mg, mgx = gg.mean(axis=2, keepdims=True), (gg * xg).mean(axis=2, keepdims=True)
    dx = ((gg - mg - xg * mgx).reshape(N, C, S)) * r
    return from_nc(dx, x.shape, order), (ds * xh).sum(axis=(0, 2)), ds.sum(axis=(0, 2))


def bn_ref(x, scale, bias, mean, var, eps, order):
    xs = to_nc(x, order)
    r = 1.0 / np.sqrt(var.astype(np.float64) + eps)
    y = (xs - mean[None, :, None]) * r[None, :, None] * scale[None, :, None] + bias[None, :, None]
    return from_nc(y, x.shape, order)


def shape_of(N, C, spatial, order):
    return (N, C) + tuple(spatial) if order == "NCHW" else (N,) + tuple(spatial) + (C,)


ORDERS = ["NCHW", "NHWC"]


# ---------------------------------------------------------------- GroupNorm
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,G,D,spatial", [(2, 3, 2, (4, 5)), (1, 1, 4, (3,)), (3, 2, 1, (2, 2, 3)),
                                           (2, 4, 3, ()), (1, 6, 1, (7, 1))])
@pytest.mark.parametrize("eps", [1e-5, 0.3])
def test_group_norm(rng, order, N, G, D, spatial, eps):
    C = G * D
    x = f32(rng, *shape_of(N, C, spatial, order), lo=-2, hi=3)
    g, b = f32(rng, C, lo=0.5, hi=2), f32(rng, C)
    feed(x=x, g=g, b=b)
    y, mean, rsig = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=G, epsilon=eps, order=order)
    ry, rm, rr = gn_ref(x, g, b, G, eps, order)
    assert mean.shape == rsig.shape == (N, G)
    close(mean, rm, 1e-6)
    close(rsig, rr, 1e-5)
    close(y, ry, 2e-5)


def test_group_norm_defaults_group_32_nchw(rng):
    x = f32(rng, 2, 64, 3)
    g, b = f32(rng, 64), f32(rng, 64)
    feed(x=x, g=g, b=b)
    y, mean, rsig = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"])
    assert mean.shape == (2, 32)
    close(y, gn_ref(x, g, b, 32, 1e-5, "NCHW")[0], 2e-5)


def test_group_norm_exact_small():
    # one group [0, 2] over two channels of one value: mean 1, var 1, inv_std 1 / sqrt(1 + eps)
    feed(x=np.array([[[0.0], [2.0]]], np.float32), g=np.array([1.0, 2.0], np.float32),
         b=np.array([0.0, 0.5], np.float32))
    y, mean, rsig = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=1, epsilon=0.44)
    assert mean.tolist() == [[1.0]] and rsig[0, 0] == np.float32(1 / np.sqrt(1.44))
    close(y.reshape(-1), np.array([-1 / 1.2, 2 / 1.2 + 0.5]), 1e-7)


def test_group_norm_same_bits_every_run_and_in_place(rng):
    x = f32(rng, 3, 8, 50, lo=-5, hi=5)
    g, b = f32(rng, 8), f32(rng, 8)
    feed(x=x, g=g, b=b)
    a = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=4)
    c = run("GroupNorm", ["x", "g", "b"], ["y2", "m2", "r2"], group=4)
    assert all(u.tobytes() == v.tobytes() for u, v in zip(a, c))
    d = run("GroupNorm", ["x", "g", "b"], ["x", "m3", "r3"], group=4)
    assert all(u.tobytes() == v.tobytes() for u, v in zip(a, d))


def test_group_norm_large_offset_two_pass(rng):
    x = (1e4 + f32(rng, 2, 4, 60)).astype(np.float32)
    g, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    feed(x=x, g=g, b=b)
    y, mean, rsig = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=2)
    ry, rm, rr = gn_ref(x, g, b, 2, 1e-5, "NCHW")
    close(rsig, rr, 1e-4)
    close(y, ry, 1e-3)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 4, 0), (2, 0, 3), (0, 4)])
def test_group_norm_empty(order, shape):
    x = np.zeros(shape, np.float32)
    C = shape[1] if order == "NCHW" else shape[-1]
    G = 2 if C and C % 2 == 0 else 1
    feed(x=x, g=np.ones(C, np.float32), b=np.zeros(C, np.float32), dy=x)
    y, mean, rsig = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=G, epsilon=0.25, order=order)
    assert y.shape == shape and mean.shape == rsig.shape == (shape[0], G)
    # groups of no values: mean 0, inv_std 1 / sqrt(epsilon)
    assert (mean == 0).all() and (rsig == 2).all()
    dx, dg, db = run("GroupNormGradient", ["dy", "x", "g", "b", "m", "r"], ["dx", "dg", "db"], group=G,
                     order=order)
    assert dx.shape == shape and dg.shape == db.shape == (C,) and (dg == 0).all() and (db == 0).all()


def test_group_norm_nan_propagates(rng):
    x = f32(rng, 2, 4, 3)
    x[0, 0, 1] = np.nan
    g, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    feed(x=x, g=g, b=b)
    y, mean, rsig = run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=2)
    assert np.isnan(y[0, :2]).all() and np.isnan(mean[0, 0])
    close(y[1], gn_ref(x[1:], g, b, 2, 1e-5, "NCHW")[0][0], 2e-5)
    close(y[0, 2:], gn_ref(x[:1, 2:], g[2:], b[2:], 1, 1e-5, "NCHW")[0][0], 2e-5)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,G,D,spatial", [(2, 3, 2, (4, 5)), (1, 2, 3, (3,)), (3, 1, 1, (2, 3))])
def test_group_norm_gradient_op(rng, order, N, G, D, spatial):
    C = G * D
    shape = shape_of(N, C, spatial, order)
    x, dy = f32(rng, *shape, lo=-2, hi=2), f32(rng, *shape)
    g, b = f32(rng, C, lo=0.5, hi=2), f32(rng, C)
    feed(x=x, g=g, b=b, dy=dy)
    run("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=G, epsilon=0.1, order=order)
    ins = ["dy", "x", "g", "b", "m", "r"]
    dx, dg, db = run("GroupNormGradient", ins, ["dx", "dg", "db"], group=G, epsilon=0.1, order=order)
    rdx, rdg, rdb = gn_grad_ref(dy, x, g, workspace.FetchBlob("m"), workspace.FetchBlob("r"), G, order)
    close(dx, rdx, 2e-5)
    close(dg, rdg, 2e-5)
    close(db, rdb, 2e-5)
    same = run("GroupNormGradient", ins, ["dy", "dg2", "db2"], group=G, epsilon=0.1, order=order)
    assert [a.tobytes() for a in same] == [a.tobytes() for a in (dx, dg, db)]   # dX over dY


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("G,D", [(2, 2), (1, 3), (3, 1)])
def test_group_norm_gradient_fd(rng, order, G, D):
    x = f32(rng, *shape_of(2, G * D, (2, 3), order), lo=-2, hi=2)
    g, b = f32(rng, G * D, lo=0.5, hi=2), f32(rng, G * D)
    o = op("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=G, epsilon=1e-3, order=order)
    check_grads(o, [x, g, b])


def test_group_norm_net_gradient(rng):
    # loss = sum(GroupNorm(x) * w): a gradient through every term of dX
    from recurrent import gradient_checker
    net = core.Net("gnw")
    y = net.GroupNorm(["x", "g", "b"], ["y", "m", "r"], group=2, order="NHWC")[0]
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    x, w = f32(rng, 2, 3, 4, lo=-2, hi=2), f32(rng, 2, 3, 4)
    gradient_checker.NetGradientChecker.Check(
        net, ["loss"], {"x": x, "w": w, "g": f32(rng, 4, lo=0.5, hi=2), "b": f32(rng, 4)}, "x",
        step_size=1e-3, threshold=1e-2, print_net=False)


# ---------------------------------------------------------------- InstanceNorm
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,C,spatial", [(2, 3, (4, 5)), (1, 1, (6,)), (3, 4, (2, 2, 2))])
@pytest.mark.parametrize("n_out", [1, 2, 3])
def test_instance_norm(rng, order, N, C, spatial, n_out):
    x = f32(rng, *shape_of(N, C, spatial, order), lo=-2, hi=3)
    s, b = f32(rng, C, lo=0.5, hi=2), f32(rng, C)
    feed(x=x, s=s, b=b)
    outs = ["y", "m", "r"][:n_out]
    res = run("InstanceNorm", ["x", "s", "b"], outs, epsilon=1e-3, order=order)
    res = res if n_out > 1 else [res]
    ref = gn_ref(x, s, b, C, 1e-3, order)
    close(res[0], ref[0], 2e-5)
    for got, want in zip(res[1:], ref[1:]):
        assert got.shape == (N, C)
        close(got, want, 2e-5)


def test_instance_norm_in_place(rng):
    x = f32(rng, 2, 3, 4)
    s, b = f32(rng, 3), f32(rng, 3)
    feed(x=x, s=s, b=b)
    want = run("InstanceNorm", ["x", "s", "b"], ["y"])
    assert run("InstanceNorm", ["x", "s", "b"], ["x"]).tobytes() == want.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("n_stats", [0, 1, 2])
def test_instance_norm_gradient_op(rng, order, n_stats):
    shape = shape_of(2, 3, (4, 2), order)
    x, dy = f32(rng, *shape, lo=-2, hi=2), f32(rng, *shape)
    s, b = f32(rng, 3, lo=0.5, hi=2), f32(rng, 3)
    feed(x=x, s=s, b=b, dy=dy)
    run("InstanceNorm", ["x", "s", "b"], ["y", "m", "r"], epsilon=0.01, order=order)
    ins = ["x", "s", "b", "dy"] + ["m", "r"][:n_stats]
    dx, ds, db = run("InstanceNormGradient", ins, ["dx", "ds", "db"], epsilon=0.01, order=order)
    rdx, rds, rdb = gn_grad_ref(dy, x, s, workspace.FetchBlob("m"), workspace.FetchBlob("r"), 3, order)
    close(dx, rdx, 5e-5)
    close(ds, rds, 2e-5)
    close(db, rdb, 2e-5)
    same = run("InstanceNormGradient", ins, ["dy", "ds2", "db2"], epsilon=0.01, order=order)
    assert same[0].tobytes() == dx.tobytes()


def test_instance_norm_gradient_op_given_mean_is_used(rng):
    # with mean but no inv_stdev, the mean is taken as given and inv_stdev recomputed from X
    x, dy = f32(rng, 2, 3, 4), f32(rng, 2, 3, 4)
    s, b = f32(rng, 3, lo=0.5, hi=2), f32(rng, 3)
    _, mean, rsig = gn_ref(x, s, b, 3, 1e-5, "NCHW")
    m2 = (mean + 0.5).astype(np.float32)
    feed(x=x, s=s, b=b, dy=dy, m2=m2)
    dx, ds, db = run("InstanceNormGradient", ["x", "s", "b", "dy", "m2"], ["dx", "ds", "db"])
    rdx, rds, rdb = gn_grad_ref(dy, x, s, m2, rsig, 3, "NCHW")
    close(dx, rdx, 5e-5)
    close(ds, rds, 5e-5)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("n_out", [1, 3])
def test_instance_norm_gradient_fd(rng, order, n_out):
    x = f32(rng, *shape_of(2, 3, (2, 3), order), lo=-2, hi=2)
    s, b = f32(rng, 3, lo=0.5, hi=2), f32(rng, 3)
    o = op("InstanceNorm", ["x", "s", "b"], ["y", "m", "r"][:n_out], epsilon=1e-3, order=order)
    check_grads(o, [x, s, b])


# ---------------------------------------------------------------- SpatialBN
def bn_inputs(rng, N, C, spatial, order):
    x = f32(rng, *shape_of(N, C, spatial, order), lo=-2, hi=3)
    return x, f32(rng, C, lo=0.5, hi=2), f32(rng, C), f32(rng, C), f32(rng, C, lo=0.5, hi=2)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,C,spatial", [(2, 3, (4, 5)), (1, 1, (6,)), (0, 3, (2,)), (3, 2, ())])
def test_spatial_bn_test_mode(rng, order, N, C, spatial):
    x, s, b, m, v = bn_inputs(rng, N, C, spatial, order)
    feed(x=x, s=s, b=b, m=m, v=v)
    y = run("SpatialBN", ["x", "s", "b", "m", "v"], ["y"], is_test=1, epsilon=1e-3, order=order)
    close(y, bn_ref(x, s, b, m, v, 1e-3, order), 2e-5)
    y2 = run("SpatialBN", ["x", "s", "b", "m", "v"], ["x"], is_test=1, epsilon=1e-3, order=order)
    assert y2.tobytes() == y.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,C,spatial", [(2, 3, (4, 5)), (1, 2, (6,)), (3, 2, ()), (4, 1, (1, 1))])
@pytest.mark.parametrize("momentum", [0.9, 0.25])
def test_spatial_bn_train_mode(rng, order, N, C, spatial, momentum):
    x, s, b, m, v = bn_inputs(rng, N, C, spatial, order)
    feed(x=x, s=s, b=b, m=m, v=v)
    y, rm, rv, sm, sr = run("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m", "v", "sm", "sr"],
                            epsilon=1e-3, momentum=momentum, order=order)
    xs = to_nc(x, order)
    mean, var = xs.mean(axis=(0, 2)), xs.var(axis=(0, 2))
    cnt = xs.shape[0] * xs.shape[2]
    close(sm, mean, 1e-6)
    close(sr, 1 / np.sqrt(var + 1e-3), 2e-5)
    close(rm, momentum * m + (1 - momentum) * mean, 1e-6)
    close(rv, momentum * v + (1 - momentum) * var * cnt / (cnt - 1), 2e-6)
    close(y, bn_ref(x, s, b, mean, var, 1e-3, order), 2e-5)


def test_spatial_bn_train_mode_outputs_elsewhere_and_in_place(rng):
    x, s, b, m, v = bn_inputs(rng, 2, 3, (4,), "NCHW")
    feed(x=x, s=s, b=b, m=m, v=v)
    a = run("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m2", "v2", "sm", "sr"])
    assert workspace.FetchBlob("m").tobytes() == m.tobytes()   # inputs untouched
    c = run("SpatialBN", ["x", "s", "b", "m", "v"], ["x", "m", "v", "sm2", "sr2"])
    assert [u.tobytes() for u in a] == [u.tobytes() for u in c]


@pytest.mark.parametrize("shape", [(0, 3, 2), (2, 3, 0)])
def test_spatial_bn_train_mode_no_values(shape):
    # Caffe2's: the running statistics stay, the saved ones are 0
    x = np.zeros(shape, np.float32)
    m, v = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
    feed(x=x, s=np.ones(3, np.float32), b=np.zeros(3, np.float32), m=m, v=v)
    y, rm, rv, sm, sr = run("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m", "v", "sm", "sr"])
    assert y.shape == shape and rm.tolist() == m.tolist() and rv.tolist() == v.tolist()
    assert sm.tolist() == sr.tolist() == [0, 0, 0]


def test_spatial_bn_train_mode_one_value_per_channel():
    feed(x=np.array([[3.0, -1.0]], np.float32), s=np.ones(2, np.float32), b=np.zeros(2, np.float32),
         m=np.array([1, 1], np.float32), v=np.array([2, 4], np.float32))
    y, rm, rv, sm, sr = run("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m", "v", "sm", "sr"],
                            momentum=0.5, epsilon=0.25)
    assert y.tolist() == [[0, 0]] and rm.tolist() == [2, 0] and sm.tolist() == [3, -1]
    assert rv.tolist() == [1, 2] and sr.tolist() == [2, 2]   # the running var only decays


@pytest.mark.parametrize("order", ORDERS)
def test_spatial_bn_gradient_op(rng, order):
    x, s, b, m, v = bn_inputs(rng, 3, 2, (4, 2), order)
    dy = f32(rng, *x.shape)
    feed(x=x, s=s, b=b, m=m, v=v, dy=dy)
    run("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m", "v", "sm", "sr"], epsilon=0.01, order=order)
    sm, sr = workspace.FetchBlob("sm"), workspace.FetchBlob("sr")
    dx, ds, db = run("SpatialBNGradient", ["x", "s", "dy", "sm", "sr"], ["dx", "ds", "db"], order=order)
    # batch norm is group norm of one group per channel over the whole batch
    xs, ds_ = to_nc(x, order), to_nc(dy, order)
    xt = from_nc(np.moveaxis(xs, 0, 1).reshape(1, 2, -1), (1, 2, xs.shape[0] * xs.shape[2]), "NCHW")
    dt = from_nc(np.moveaxis(ds_, 0, 1).reshape(1, 2, -1), xt.shape, "NCHW")
    rdx, rds, rdb = gn_grad_ref(dt, xt, s, sm[None], sr[None], 2, "NCHW")
    rdx = np.moveaxis(rdx.reshape(2, xs.shape[0], -1), 0, 1)
    close(to_nc(dx, order).astype(np.float32), rdx, 2e-5)
    close(ds, rds, 2e-5)
    close(db, rdb, 2e-5)
    same = run("SpatialBNGradient", ["x", "s", "dy", "sm", "sr"], ["dy", "ds2", "db2"], order=order)
    assert same[0].tobytes() == dx.tobytes()


def test_spatial_bn_gradient_op_test_mode(rng):
    # with is_test=1 the statistics are constants: dX = dY * scale / sqrt(var + eps)
    x, s, b, m, v = bn_inputs(rng, 2, 3, (4,), "NCHW")
    dy = f32(rng, *x.shape)
    feed(x=x, s=s, m=m, v=v, dy=dy)
    dx, ds, db = run("SpatialBNGradient", ["x", "s", "dy", "m", "v"], ["dx", "ds", "db"], is_test=1,
                     epsilon=0.5)
    r = 1 / np.sqrt(v.astype(np.float64) + 0.5)
    close(dx, dy * (s * r)[None, :, None], 2e-6)
    close(ds, (dy * (x - m[None, :, None]) * r[None, :, None]).sum(axis=(0, 2)), 2e-5)
    close(db, dy.astype(np.float64).sum(axis=(0, 2)), 2e-6)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("is_test", [0, 1])
def test_spatial_bn_gradient_fd(rng, order, is_test):
    x, s, b, m, v = bn_inputs(rng, 2, 3, (2, 3), order)
    outs = ["y"] if is_test else ["y", "m", "v", "sm", "sr"]
    o = op("SpatialBN", ["x", "s", "b", "m", "v"], outs, epsilon=1e-3, is_test=is_test, order=order)
    check_grads(o, [x, s, b, m, v], indices=[0, 1, 2])


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("in_place", [False, True])
def test_spatial_bn_multi_batch(rng, order, in_place):
    # B batches summed elsewhere: B copies of X give the statistics of X (the running var unbiased over B N S)
    B = 3
    x, s, b, m, v = bn_inputs(rng, 2, 3, (4,), order)
    xs = to_nc(x, order)
    sx = (B * xs.sum(axis=(0, 2))).astype(np.float32)
    sxx = (B * (xs ** 2).sum(axis=(0, 2))).astype(np.float32)
    feed(x=x, s=s, b=b, m=m, v=v, sx=sx, sxx=sxx)
    outs = ["y", "m", "v"] + (["sx", "sxx"] if in_place else ["sm", "sr"])
    y, rm, rv, sm, sr = run("SpatialBN", ["x", "s", "b", "m", "v", "sx", "sxx"], outs, epsilon=1e-3,
                            num_batches=B, order=order)
    mean, var = xs.mean(axis=(0, 2)), xs.var(axis=(0, 2))
    size = B * xs.shape[0] * xs.shape[2]
    close(sm, mean, 1e-5)
    close(sr, 1 / np.sqrt(var + 1e-3), 1e-4)
    close(rm, 0.9 * m + 0.1 * mean, 1e-5)
    close(rv, 0.9 * v + 0.1 * var * size / (size - 1), 1e-4)
    close(y, bn_ref(x, s, b, mean, var, 1e-3, order), 1e-4)


@pytest.mark.parametrize("order", ORDERS)
def test_spatial_bn_multi_batch_gradient(rng, order):
    # the sums of B equal batches' dscale / dbias give the one batch's dX
    B = 4
    x, s, b, m, v = bn_inputs(rng, 2, 3, (4,), order)
    dy = f32(rng, *x.shape)
    feed(x=x, s=s, b=b, m=m, v=v, dy=dy)
    run("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m", "v", "sm", "sr"], order=order)
    dx, ds, db = run("SpatialBNGradient", ["x", "s", "dy", "sm", "sr"], ["dx", "ds", "db"], order=order)
    feed(dss=B * ds, dbs=B * db)
    ins = ["x", "s", "dy", "sm", "sr", "dss", "dbs"]
    dx2, ds2, db2 = run("SpatialBNGradient", ins, ["dx2", "ds2", "db2"], num_batches=B, order=order)
    close(dx2, dx, 1e-5)
    close(ds2, ds, 1e-6)
    close(db2, db, 1e-6)
    same = run("SpatialBNGradient", ins, ["dy", "dss", "dbs"], num_batches=B, order=order)
    assert [a.tobytes() for a in same] == [a.tobytes() for a in (dx2, ds2, db2)]


def test_spatial_bn_multi_batch_no_values():
    x = np.zeros((0, 2, 3), np.float32)
    one = np.ones(2, np.float32)
    feed(x=x, s=one, b=one, m=one, v=one, dy=x, p=one * 5)
    y, rm, rv, sm, sr = run("SpatialBN", ["x", "s", "b", "m", "v", "p", "p"], ["y", "m", "v", "sm", "sr"],
                            num_batches=2)
    assert rm.tolist() == rv.tolist() == [1, 1] and sm.tolist() == sr.tolist() == [0, 0]
    dx, ds, db = run("SpatialBNGradient", ["x", "s", "dy", "m", "v", "p", "p"], ["dx", "ds", "db"],
                     num_batches=2)
    assert dx.shape == x.shape and ds.tolist() == db.tolist() == [0, 0]


# ---------------------------------------------------------------- the gradient makers
def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def summary(ops):
    return [(p.type, list(p.input), list(p.output)) for p in ops]


def test_gradient_makers():
    ops, g = G(op("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=2, order="NHWC"), ["dy", None, None])
    assert g == ["x_grad", "g_grad", "b_grad"]
    assert summary(ops) == [("GroupNormGradient", ["dy", "x", "g", "b", "m", "r"], g)]
    assert sorted((a.name, a.value()) for a in ops[0].arg) == [("group", 2), ("order", "NHWC")]
    for outs, stats in ((["y"], []), (["y", "m"], ["m"]), (["y", "m", "r"], ["m", "r"])):
        ops, g = G(op("InstanceNorm", ["x", "s", "b"], outs), ["dy"] + [None] * (len(outs) - 1))
        assert summary(ops) == [("InstanceNormGradient", ["x", "s", "b", "dy"] + stats,
                                 ["x_grad", "s_grad", "b_grad"])]
    ops, g = G(op("SpatialBN", ["x", "s", "b", "m", "v"], ["y", "m", "v", "sm", "sr"]), ["dy"] + [None] * 4)
    assert g == ["x_grad", "s_grad", "b_grad", None, None]
    assert summary(ops) == [("SpatialBNGradient", ["x", "s", "dy", "sm", "sr"], g[:3])]
    ops, g = G(op("SpatialBN", ["x", "s", "b", "m", "v"], ["y"], is_test=1), ["dy"])
    assert summary(ops) == [("SpatialBNGradient", ["x", "s", "dy", "m", "v"], g[:3])]
    assert G(op("GroupNorm", ["x", "g", "b"], ["y", "m", "r"]), [None, "m_grad", None]) == ([], [None] * 3)


@pytest.mark.parametrize("o", [op("GroupNorm", ["x", "g", "b"], ["x", "m", "r"]),
                               op("InstanceNorm", ["x", "s", "b"], ["x"]),
                               op("SpatialBN", ["x", "s", "b", "m", "v"], ["x", "m", "v", "sm", "sr"])])
def test_gradient_makers_refuse_in_place(o):
    with pytest.raises(ValueError, match="computes 'x' in place, so its input X is lost"):
        G(o, ["x_grad"] + [None] * (len(o.output) - 1))


def test_gradient_maker_same_blob_twice(rng):
    # scale and bias the same blob: two gradient names, summed by the backward pass
    ops, g = G(op("InstanceNorm", ["x", "p", "p"], ["y"]), ["dy"])
    assert g[:2] == ["x_grad", "p_grad"] and g[2] != "p_grad"


# ---------------------------------------------------------------- brew helpers
@pytest.mark.parametrize("order", ORDERS)
def test_brew_spatial_bn_train_and_test(rng, order):
    model = ModelHelper(name="bn")
    y = brew.spatial_bn(model, "x", "bn", 3, epsilon=1e-3, order=order)
    assert str(y) == "bn"
    assert [str(p) for p in model.params] == ["bn_s", "bn_b"]
    assert [str(p) for p in model.GetComputedParams()] == ["bn_rm", "bn_riv"]
    x = f32(rng, *shape_of(2, 3, (4,), order))
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    xs = to_nc(x, order)
    close(workspace.FetchBlob("bn_rm"), 0.1 * xs.mean(axis=(0, 2)), 1e-6)
    test = ModelHelper(name="bn_test", init_params=False)
    brew.spatial_bn(test, "x", "bn", 3, epsilon=1e-3, order=order, is_test=True)
    assert [o.type for o in test.net.Proto().op] == ["SpatialBN"] and len(test.net.Proto().op[0].output) == 1
    workspace.RunNetOnce(test.net)
    rm, riv = workspace.FetchBlob("bn_rm"), workspace.FetchBlob("bn_riv")
    close(workspace.FetchBlob("bn"), bn_ref(x, np.ones(3), np.zeros(3), rm, riv, 1e-3, order), 2e-5)


def test_brew_instance_norm_and_spatial_gn(rng):
    model = CNNModelHelper(order="NHWC")
    model.InstanceNorm("x", "in", 4, epsilon=1e-3)
    brew.spatial_gn(model, "x", "gn", 4, group=2, epsilon=1e-3, order="NHWC")
    assert [str(p) for p in model.params] == ["in_s", "in_b", "gn_s", "gn_b"]
    assert [list(o.output) for o in model.net.Proto().op] == [["in", "in_sm", "in_siv"],
                                                              ["gn", "gn_mean", "gn_std"]]
    x = f32(rng, 2, 3, 4)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    close(workspace.FetchBlob("in"), gn_ref(x, np.ones(4), np.zeros(4), 4, 1e-3, "NHWC")[0], 2e-5)
    close(workspace.FetchBlob("gn"), gn_ref(x, np.ones(4), np.zeros(4), 2, 1e-3, "NHWC")[0], 2e-5)


# ---------------------------------------------------------------- bad input
def test_bad_arguments():
    feed(x=np.zeros((2, 4, 3), np.float32), g=np.zeros(4, np.float32), b=np.zeros(4, np.float32),
         m=np.zeros(4, np.float32), v=np.zeros(4, np.float32))
    raises(ValueError, r"argument group=3 must divide the 4 channels of input 0 blob 'x' \(2, 4, "
                       r"3\) float32 \(order "
           r"NCHW\)",
           op("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=3))
    raises(ValueError, "argument group must be >= 1, got 0",
           op("GroupNorm", ["x", "g", "b"], ["y", "m", "r"], group=0))
    raises(ValueError, 'argument order must be "NCHW" or "NHWC", got "CHW"',
           op("InstanceNorm", ["x", "g", "b"], ["y"], order="CHW"))
    raises(ValueError, "argument epsilon must be finite and >= 0, got -1",
           op("InstanceNorm", ["x", "g", "b"], ["y"], epsilon=-1.0))
    raises(ValueError, "argument momentum must be finite, got nan",
           op("SpatialBN", ["x", "g", "b", "m", "v"], ["y", "m", "v", "c", "d"], momentum=float("nan")))
    raises(ValueError, r"with num_batches=2 takes 7 inputs \(the last two the sums over the "
                       r"batches\), got 5 inputs",
           op("SpatialBN", ["x", "g", "b", "m", "v"], ["y", "m", "v", "c", "d"], num_batches=2))
    raises(ValueError, r"with num_batches=1 takes 5 inputs, got 7 inputs",
           op("SpatialBNGradient", ["x", "g", "x", "m", "v", "m", "v"], ["dx", "c", "d"]))
    raises(ValueError, r"argument num_batches must be >= 1 \(and 1 with is_test=1\), got 2",
           op("SpatialBN", ["x", "g", "b", "m", "v", "m", "v"], ["y"], num_batches=2, is_test=1))
    raises(ValueError, r"with is_test=1 gives 1 output \(Y\), got 5 outputs",
           op("SpatialBN", ["x", "g", "b", "m", "v"], ["y", "m", "v", "c", "d"], is_test=1))
    raises(ValueError, r"in training \(is_test=0\) gives 5 outputs",
           op("SpatialBN", ["x", "g", "b", "m", "v"], ["y"]))


def test_bad_shapes():
    feed(x=np.zeros((2, 4, 3), np.float32), g=np.zeros(4, np.float32), b3=np.zeros(3, np.float32),
         v=np.zeros(5, np.float32), i=np.zeros((2, 4, 3), np.int32), m=np.zeros((2, 2), np.float32),
         y=np.array([7.0], np.float32), dx=np.array([7.0], np.float32))
    raises(ValueError, r"input 2 blob 'b3' \(beta\) must have shape \(4,\) float32 \(C\), got \(3,\) float32",
           op("GroupNorm", ["x", "g", "b3"], ["y", "m", "r"], group=2))
    raises(ValueError, r"input 0 blob 'v' \(X\) must have at least 2 dims \(N, \.\.\., C\), got "
                       r"\(5,\) float32",
           op("InstanceNorm", ["v", "g", "g"], ["y"], order="NHWC"))
    raises(TypeError, "input 0 blob 'i'", op("InstanceNorm", ["i", "g", "g"], ["y"]))
    raises(ValueError, r"input 3 blob 'v' \(dY\) must have the shape of input 0 blob 'x' \(2, 4, "
                       r"3\) float32, got \(5,\) float32",
           op("InstanceNormGradient", ["x", "g", "g", "v"], ["dx", "ds", "db"]))
    raises(ValueError, r"input 4 blob 'm' \(mean\) must have shape \(2, 4\) float32 \(N, C\), got "
                       r"\(2, 2\) float32",
           op("InstanceNormGradient", ["x", "g", "g", "x", "m"], ["dx", "ds", "db"]))
    raises(ValueError, r"input 5 blob 'g' \(inv_std\) must have shape \(2, 2\) float32 \(N, "
                       r"group\), got \(4,\) float32",
           op("GroupNormGradient", ["x", "x", "g", "g", "m", "g"], ["dx", "dg", "db"], group=2))
    raises(ValueError, r"input 4 blob 'v' \(var\) must have shape \(4,\) float32 \(C\), got \(5,\) float32",
           op("SpatialBN", ["x", "g", "g", "g", "v"], ["y"], is_test=1))
    raises(ValueError, r"input 3 blob 'v' \(saved_mean\) must have shape \(4,\) float32 \(C\), got "
                       r"\(5,\) float32",
           op("SpatialBNGradient", ["x", "g", "x", "v", "g"], ["dx", "ds", "db"]))
    raises(ValueError, r"input 4 blob 'm' \(var\) must have shape \(4,\) float32 \(C\), got \(2, 2\) float32",
           op("SpatialBNGradient", ["x", "g", "x", "g", "m"], ["dx", "ds", "db"], is_test=1))
    # nothing was written
    for blob in ("y", "dx"):
        assert workspace.FetchBlob(blob).tolist() == [7.0]
