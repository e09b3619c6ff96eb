"""LRN and LRNGradient (csrc/ops/lrn.c), their gradient maker (recurrent/_grad_norm.py), brew.lrn and
CNNModelHelper.LRN: a NumPy float64 reference in both orders and for 2 to 5 dims, windows wider than
the channels, the gradient op against the analytic reference and by finite differences, bits the
same every run, empty tensors, NaN, and bad input with exact messages."""

import numpy as np
import pytest

from recurrent import brew, core, workspace
from recurrent.cnn import CNNModelHelper
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_math import close, f32, feed, op, run  # the same helpers


def lrn_ref(x, size, alpha, beta, bias, order):
    """(Y, scale) in float64; the channel axis first for the window sum."""
    cax = x.ndim - 1 if order == "NHWC" else 1
    xs = np.moveaxis(x.astype(np.float64), cax, 0)
    C, half = xs.shape[0], (size - 1) // 2
    sq = xs ** 2
    scale = np.empty_like(xs)
    for c in range(C):
        scale[c] = bias + alpha / size * sq[max(0, c - half):min(C, c + half + 1)].sum(axis=0)
    y = xs * scale ** -beta
    return np.moveaxis(y, 0, cax), np.moveaxis(scale, 0, cax)


def lrn_grad_ref(x, dy, size, alpha, beta, bias, order):
    y, scale = lrn_ref(x, size, alpha, beta, bias, order)
    cax = x.ndim - 1 if order == "NHWC" else 1
    mv = lambda a: np.moveaxis(np.asarray(a, np.float64), cax, 0)  # noqa: E731
    xs, ys, ss, ds = mv(x), mv(y), mv(scale), mv(dy)
    ratio = ds * ys / ss
    C, half = xs.shape[0], (size - 1) // 2
    dx = np.empty_like(xs)
    for c in range(C):
        acc = ratio[max(0, c - half):min(C, c + half + 1)].sum(axis=0)
        dx[c] = ds[c] * ss[c] ** -beta - 2 * alpha * beta / size * xs[c] * acc
    return np.moveaxis(dx, 0, cax)


ORDERS = ["NCHW", "NHWC"]
SHAPES = [(2, 5, 3, 4), (3, 4), (1, 7, 6), (2, 3, 2, 2, 3), (1, 1, 2, 2)]
ARGS = [dict(size=3, alpha=0.5, beta=0.75, bias=2.0), dict(size=1, alpha=1e-3, beta=0.5, bias=1.0),
        dict(size=9, alpha=2.0, beta=1.5, bias=0.5)]  # size 9: wider than every C here


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("args", ARGS)
def test_lrn(rng, order, shape, args):
    x = f32(rng, *shape, lo=-2, hi=2)
    feed(x=x)
    y, s = run("LRN", ["x"], ["y", "s"], order=order, **args)
    ry, rs = lrn_ref(x, order=order, **args)
    close(y, ry, 2e-6)
    close(s, rs, 2e-6)
    np.testing.assert_array_equal(run("LRN", ["x"], ["y1"], order=order, **args), y)  # one output: same Y


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape", [(2, 5, 3, 4), (3, 4), (1, 6, 2)])
@pytest.mark.parametrize("args", ARGS)
def test_lrn_gradient_op(rng, order, shape, args):
    x, dy = f32(rng, *shape, lo=-2, hi=2), f32(rng, *shape)
    feed(x=x, dy=dy)
    run("LRN", ["x"], ["y"], order=order, **args)
    dx = run("LRNGradient", ["x", "y", "dy"], ["dx"], order=order, **args)
    close(dx, lrn_grad_ref(x, dy, order=order, **args), 5e-6)
    np.testing.assert_array_equal(run("LRNGradient", ["x", "y", "dy"], ["dx"], order=order, **args), dx)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("args", ARGS[:2] + [dict(size=5, alpha=0.3, beta=0.75, bias=1.0)])
def test_lrn_gradient_fd(rng, order, args):
    x = f32(rng, *((2, 5, 3) if order == "NCHW" else (2, 3, 5)), lo=-1.5, hi=1.5)
    check_grads(op("LRN", ["x"], ["y"], order=order, **args), [x], stepsize=1e-3, threshold=1e-2)


def test_gradient_maker_and_training_net(rng):
    model = ModelHelper(name="lrn")
    y = brew.lrn(model, "x", "n", size=3, alpha=0.1, beta=0.75, bias=1.0)
    assert str(y) == "n"
    loss = model.net.SumSqrElements(y, "loss")
    model.AddGradientOperators([loss])
    ops = model.net.Proto().op
    assert [o.type for o in ops][:2] == ["LRN", "SumSqrElements"]
    assert list(ops[0].output) == ["n", "_n_scale"]
    g = [o for o in ops if o.type == "LRNGradient"]
    assert len(g) == 1 and list(g[0].input) == ["x", "n", "n_grad"] and list(g[0].output) == ["x_grad"]
    assert {a.name: a.value() for a in g[0].arg}["size"] == 3  # arguments copied
    x = f32(rng, 2, 4, 3)
    feed(x=x)
    workspace.RunNetOnce(model.net)
    ry, _ = lrn_ref(x, 3, 0.1, 0.75, 1.0, "NCHW")
    close(workspace.FetchBlob("x_grad"), lrn_grad_ref(x, 2 * ry, 3, 0.1, 0.75, 1.0, "NCHW"), 5e-6)


def test_cnn_model_helper_lrn_uses_the_model_order(rng):
    model = CNNModelHelper(order="NHWC")
    model.LRN("x", "n", size=3, alpha=0.2, beta=0.5)
    o = model.net.Proto().op[0]
    assert o.type == "LRN" and {a.name: a.value() for a in o.arg}["order"] == "NHWC"
    x = f32(rng, 2, 3, 4)
    feed(x=x)
    workspace.RunNetOnce(model.net)
    close(workspace.FetchBlob("n"), lrn_ref(x, 3, 0.2, 0.5, 1.0, "NHWC")[0], 2e-6)


@pytest.mark.parametrize("shape", [(0, 3, 2), (2, 0, 2), (2, 3, 0)])
def test_empty(shape):
    feed(x=np.zeros(shape, np.float32), dy=np.zeros(shape, np.float32))
    y, s = run("LRN", ["x"], ["y", "s"], size=3)
    assert y.shape == shape and s.shape == shape
    assert run("LRNGradient", ["x", "y", "dy"], ["dx"], size=3).shape == shape


def test_nan_propagates_through_its_window():
    x = np.ones((1, 5, 1), np.float32)
    x[0, 2, 0] = np.nan
    feed(x=x)
    y = run("LRN", ["x"], ["y"], size=3, alpha=1.0, beta=0.5)
    assert list(np.isnan(y[0, :, 0])) == [False, True, True, True, False]


def test_bad_input():
    feed(x=np.zeros((2, 3, 4), np.float32), x1=np.zeros(3, np.float32), i=np.zeros((2, 3), np.int32),
         y=np.zeros((2, 3, 4), np.float32), dy=np.zeros((2, 3, 5), np.float32))
    for size in (0, 2, -1):
        raises(ValueError, r"op LRN #0: argument size \(the channels of the window\) must be odd and >= 1, "
                           r"got %d" % size, op("LRN", ["x"], ["y"], size=size))
    raises(ValueError, r"op LRN #0: argument size \(the channels of the window\) must be odd and >= 1, got 0",
           op("LRN", ["x"], ["y"]))  # size is required (Caffe2's default 0 asserted)
    raises(ValueError, r"op LRN #0: arguments alpha, beta and bias must be finite, got inf, 0.5, 1",
           op("LRN", ["x"], ["y"], size=3, alpha=float("inf"), beta=0.5))
    raises(ValueError, r"op LRN #0: argument order must be \"NCHW\" or \"NHWC\", got \"CHW\"",
           op("LRN", ["x"], ["y"], size=3, order="CHW"))
    raises(ValueError, r"op LRN #0: input 0 blob 'x1' must have 2 to 8 dims, got \(3,\) float32",
           op("LRN", ["x1"], ["y"], size=3))
    raises(TypeError, r"op LRN #0: input 0 blob 'i' must be float32, got \(2, 3\) int32",
           op("LRN", ["i"], ["y"], size=3))
    raises(ValueError, r"op LRN #0: input 0 and output 0 are the same blob 'x'",
           op("LRN", ["x"], ["x"], size=3))
    raises(ValueError, r"op LRNGradient #0: input 2 blob 'dy' \(2, 3, 5\) float32 must have the shape of input 0 "
                       r"blob 'x' \(2, 3, 4\) float32", op("LRNGradient", ["x", "y", "dy"], ["dx"], size=3))
    assert run("LRN", ["x"], ["y"], size=3).shape == (2, 3, 4)  # the workspace still works
