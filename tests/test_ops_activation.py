"""Activation and elementwise ops added beside csrc/ops/unary.c / unary2.c and in csrc/ops/activation.c:
Sinh, Cosh, Erf, ThresholdedRelu, Gelu, ReluN, NegateGradient, Glu, PRelu, SquareRootDivide, with their
gradient ops and makers: NumPy references, edge values (inf, NaN, empty, 0-d), finite-difference gradients
away from kinks, Caffe2's gradient input orders, in place, and bad input with exact messages."""

import math

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import close, f32, feed, op, run  # the same helpers
from test_ops_unary2 import away, check_grads, raises

erf = np.vectorize(math.erf, otypes=[np.float64])


def phi_cdf(x):
    return 0.5 * (1 + erf(x / math.sqrt(2)))


def gelu_fast(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def thresholded(x, alpha=1.0):
    return np.where(x <= alpha, 0, x)


# ================================================================ forward, NumPy references
FORWARD = [
    ("Sinh", {}, np.sinh, False),
    ("Cosh", {}, np.cosh, False),
    ("Erf", {}, erf, False),
    ("ThresholdedRelu", {}, thresholded, True),
    ("ThresholdedRelu", dict(alpha=-0.5), lambda x: thresholded(x, -0.5), True),
    ("Gelu", {}, lambda x: x * phi_cdf(x), False),
    ("Gelu", dict(fast_gelu=1), gelu_fast, False),
    ("ReluN", {}, lambda x: np.clip(x, 0, 6), True),
    ("ReluN", dict(n=1.5), lambda x: np.clip(x, 0, 1.5), True),
    ("NegateGradient", {}, lambda x: x, True),
]


@pytest.mark.parametrize("type_,args,ref,inplace", FORWARD)
@pytest.mark.parametrize("shape", [(3, 4), (2, 0, 3), ()])
def test_forward(rng, type_, args, ref, inplace, shape):
    x = f32(rng, *shape, lo=-8, hi=8)
    feed(x=x)
    close(run(type_, ["x"], ["y"], **args), ref(x.astype(np.float64)))
    if inplace:
        run(type_, ["x"], ["x"], **args)
        close(workspace.FetchBlob("x"), ref(x.astype(np.float64)))
    else:
        with pytest.raises(ValueError, match="op %s #0: input 0 and output 0 are the same blob 'x'" % type_):
            workspace.RunOperatorOnce(op(type_, ["x"], ["x"], **args))
        np.testing.assert_array_equal(workspace.FetchBlob("x"), x)  # untouched


def test_edge_values():
    x = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 1.0, -30.0, 30.0, 100.0], np.float32)
    feed(x=x)
    with np.errstate(all="ignore"):
        for t, ref in (("Sinh", np.sinh), ("Cosh", np.cosh), ("Erf", erf)):
            np.testing.assert_allclose(run(t, ["x"], ["y"]), ref(x).astype(np.float32), rtol=1e-6, atol=0,
                                       err_msg=t)
    y = run("ThresholdedRelu", ["x"], ["y"])
    np.testing.assert_array_equal(y, [np.nan, 0, np.inf, 0, 0, 0, 0, 30, 100])  # NaN stays, X = alpha is 0
    for fast in (0, 1):
        y = run("Gelu", ["x"], ["y"], fast_gelu=fast)
        assert np.isnan(y[0]) and y[1] == 0 and y[2] == np.inf and y[3] == 0, fast  # 0 at -inf (not NaN)
        assert y[6] == 0 and y[7] == 30 and y[8] == 100, fast  # no x^3 overflow in the fast form
    y = run("ReluN", ["x"], ["y"], n=2.0)
    np.testing.assert_array_equal(y, [np.nan, 0, 2, 0, 0, 1, 0, 2, 2])
    # NegateGradient copies any dtype
    feed(i=np.arange(5, dtype=np.int32))
    y = run("NegateGradient", ["i"], ["y"])
    assert y.dtype == np.int32 and list(y) == [0, 1, 2, 3, 4]


# ================================================================ gradients
GRADS = [
    ("Sinh", {}, (-3, 3), ()),
    ("Cosh", {}, (-3, 3), ()),
    ("Erf", {}, (-2, 2), ()),
    ("ThresholdedRelu", {}, (-3, 3), (1.0,)),
    ("ThresholdedRelu", dict(alpha=0.4), (-2, 2), (0.4,)),
    ("Gelu", {}, (-4, 4), ()),
    ("Gelu", dict(fast_gelu=1), (-4, 4), ()),
    ("ReluN", dict(n=1.5), (-1, 3), (0.0, 1.5)),
]


@pytest.mark.parametrize("type_,args,rng_,kinks", GRADS)
def test_gradient(rng, type_, args, rng_, kinks):
    x = away(f32(rng, 3, 4, lo=rng_[0], hi=rng_[1]), kinks)
    check_grads(op(type_, ["x"], ["y"], **args), [x])


def test_gradient_ops_direct(rng):
    """Each gradient op on its own, with Caffe2's input order, against the closed form."""
    x = f32(rng, 2, 5, lo=-3, hi=3)
    dy = f32(rng, 2, 5)
    xd = x.astype(np.float64)
    feed(x=x, dy=dy)
    close(run("SinhGradient", ["dy", "x"], ["dx"]), dy * np.cosh(xd))  # (dY, X)
    close(run("CoshGradient", ["dy", "x"], ["dx"]), dy * np.sinh(xd))
    close(run("ErfGradient", ["x", "dy"], ["dx"]), dy * 2 / np.sqrt(np.pi) * np.exp(-xd ** 2))  # (X, dY)
    close(run("ThresholdedReluGradient", ["x", "dy"], ["dx"]), np.where(xd > 0, dy, 0))  # (Y, dY)
    pdf = np.exp(-xd ** 2 / 2) / np.sqrt(2 * np.pi)
    close(run("GeluGradient", ["dy", "x"], ["dx"]), dy * (phi_cdf(xd) + xd * pdf))  # (dY, X)
    k = math.sqrt(2 / math.pi)
    t = np.tanh(k * (xd + 0.044715 * xd ** 3))
    want = 0.5 * dy * (1 + t + xd * (1 - t ** 2) * k * (1 + 3 * 0.044715 * xd ** 2))
    close(run("GeluGradient", ["dy", "x"], ["dx"], fast_gelu=1), want)
    close(run("ReluNGradient", ["x", "dy"], ["dx"], n=1.0), np.where((xd > 0) & (xd < 1), dy, 0))
    # dX over dY
    run("SinhGradient", ["dy", "x"], ["dy"])
    close(workspace.FetchBlob("dy"), dy * np.cosh(xd))


def test_gradient_edge_values():
    x = np.array([np.inf, -np.inf, 1e30, -1e30, 0.0, np.nan], np.float32)
    feed(x=x, dy=np.full(6, 2.0, np.float32))
    for fast in (0, 1):
        dx = run("GeluGradient", ["dy", "x"], ["dx"], fast_gelu=fast)
        np.testing.assert_array_equal(dx[:5], [2, 0, 2, 0, 1])
        assert np.isnan(dx[5])
    dx = run("ErfGradient", ["x", "dy"], ["dx"])
    np.testing.assert_array_equal(dx[:4], 0)


def test_makers_input_orders():
    cases = [("Sinh", ["y_grad", "x"]), ("Cosh", ["y_grad", "x"]), ("Erf", ["x", "y_grad"]),
             ("ThresholdedRelu", ["y", "y_grad"]), ("Gelu", ["y_grad", "x"]), ("ReluN", ["y", "y_grad"])]
    for t, ins in cases:
        ops, g = core.GradientRegistry.GetGradientForOp(op(t, ["x"], ["y"], alpha=0.3), ["y_grad"])
        assert [o.type for o in ops] == [t + "Gradient"] and g == ["x_grad"], t
        assert list(ops[0].input) == ins and list(ops[0].output) == ["x_grad"], t
        assert [a.name for a in ops[0].arg] == ["alpha"], t  # the forward op's arguments
    ops, g = core.GradientRegistry.GetGradientForOp(op("NegateGradient", ["x"], ["y"]), ["y_grad"])
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [("Negative", ["y_grad"], ["x_grad"])]
    ops, g = core.GradientRegistry.GetGradientForOp(op("PRelu", ["x", "w"], ["y"], order="NHWC"), ["y_grad"])
    assert [o.type for o in ops] == ["PReluGradient"] and g == ["x_grad", "w_grad"]
    assert list(ops[0].input) == ["y", "y_grad", "x", "w"] and list(ops[0].output) == ["x_grad", "w_grad"]
    assert [(a.name, a.s) for a in ops[0].arg] == [("order", "NHWC")]
    ops, g = core.GradientRegistry.GetGradientForOp(op("SquareRootDivide", ["d", "s"], ["y"]), ["y_grad"])
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [("SquareRootDivide", ["y_grad", "s"],
                                                                        ["d_grad"])]
    assert g == ["d_grad", None]
    with pytest.raises(ValueError, match=r"Sinh gradient: the forward op ran in place on 'x'"):
        core.GradientRegistry.GetGradientForOp(op("Sinh", ["x"], ["x"]), ["x_grad"])
    with pytest.raises(ValueError, match=r"PRelu gradient: the forward op ran in place on 'x'"):
        core.GradientRegistry.GetGradientForOp(op("PRelu", ["x", "w"], ["x"]), ["x_grad"])
    with pytest.raises(ValueError, match=r"Glu has no gradient op \(Caffe2 neither\): output 'y' needs a "
                       r"gradient, but input 'x' would get none"):
        core.GradientRegistry.GetGradientForOp(op("Glu", ["x"], ["y"]), ["y_grad"])
    assert core.GradientRegistry.GetGradientForOp(op("Glu", ["x"], ["y"]), [None]) == ([], [None])


def test_negate_gradient_in_a_net(rng):
    x = f32(rng, 3, 2)
    feed(x=x)
    net = core.Net("neg")
    y = net.NegateGradient(["x"], ["y"])
    loss = net.SumSqrElements(y, "loss")
    grads = net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), x)
    close(workspace.FetchBlob(grads["x"]), -workspace.FetchBlob(grads["y"]))
    close(workspace.FetchBlob(grads["x"]), -2 * x)


def test_thresholded_relu_in_place_then_gradient(rng):
    """ThresholdedRelu may run in place: its gradient reads Y."""
    x = away(f32(rng, 2, 3, lo=-3, hi=3), (1.0,))
    grads = []
    for name, out in (("ip", "h"), ("sep", "y2")):
        net = core.Net(name)
        h = net.Copy("x", "h")
        y = net.ThresholdedRelu(h, out)
        net.AddGradientOperators([net.SumElements(y, "loss_" + name)])
        feed(x=x)
        workspace.RunNetOnce(net)
        grads.append(workspace.FetchBlob("x_grad"))
    close(grads[0], grads[1])
    close(grads[0], (x > 1).astype(np.float32))


# ================================================================ Glu
@pytest.mark.parametrize("shape,dim", [((4,), -1), ((2, 6), 1), ((2, 6), -1), ((4, 3), 0), ((3, 2, 5), 1),
                                       ((0, 4), 1), ((2, 0, 2), 2)])
def test_glu(rng, shape, dim):
    x = f32(rng, *shape, lo=-4, hi=4)
    feed(x=x)
    a, b = np.split(x.astype(np.float64), 2, axis=dim)
    close(run("Glu", ["x"], ["y"], dim=dim), a / (1 + np.exp(-b)))


def test_glu_default_dim_and_edges():
    x = np.array([[1.0, -2.0, 100.0, -200.0], [np.nan, 1.0, 0.0, np.inf]], np.float32)
    feed(x=x)
    y = run("Glu", ["x"], ["y"])  # dim -1: A = x[:, :2], B = x[:, 2:]
    np.testing.assert_array_equal(y[0], [1.0, -0.0])  # sigmoid(100) = 1, sigmoid(-200) = 0 (no overflow)
    assert np.isnan(y[1, 0]) and y[1, 1] == 1.0


# ================================================================ PRelu
@pytest.mark.parametrize("shape,order,shared", [((2, 3, 4, 5), "NCHW", False), ((2, 3, 4, 5), "NHWC", False),
                                                ((2, 3, 4, 5), "NCHW", True), ((4, 3), "NCHW", False),
                                                ((5,), "NHWC", False), ((), "NCHW", True),
                                                ((0, 3, 2), "NCHW", False)])
def test_prelu(rng, shape, order, shared):
    x = away(f32(rng, *shape, lo=-2, hi=2), (0.0,))
    c = 1 if shared else shape[1 if order == "NCHW" else -1]
    w = f32(rng, c, lo=-1, hi=2)
    feed(x=x, w=w)
    xd = x.astype(np.float64)
    wb = w.reshape((1, -1) + (1,) * (len(shape) - 2)) if order == "NCHW" and not shared else w
    if shape == ():
        wb = w[0]
    want = np.where(xd > 0, xd, wb * xd)
    close(run("PRelu", ["x", "w"], ["y"], order=order), want)
    # the gradient op against the closed form: dX = X > 0 ? dY : W dY, dW[c] = sum of dY X where X <= 0
    dy = f32(rng, *shape)
    feed(y=want.astype(np.float32), dy=dy)
    dx, dw = run("PReluGradient", ["y", "dy", "x", "w"], ["dx", "dw"], order=order)
    close(dx, np.where(xd > 0, dy, wb * dy))
    contrib = np.where(xd > 0, 0, dy * xd)
    if shared:
        want_dw = [contrib.sum()]
    elif order == "NHWC":
        want_dw = contrib.reshape(-1, c).sum(0)
    else:
        want_dw = np.moveaxis(contrib, 1, 0).reshape(c, -1).sum(1)
    close(dw, want_dw)
    assert dw.shape == w.shape
    if x.size and len(shape) >= 2:
        check_grads(op("PRelu", ["x", "w"], ["y"], order=order), [x, w], indices=(0, 1))
    run("PRelu", ["x", "w"], ["x"], order=order)  # in place
    close(workspace.FetchBlob("x"), want)


def test_prelu_gradient_over_dy(rng):
    x, w, dy = f32(rng, 2, 3), f32(rng, 3), f32(rng, 2, 3)
    feed(x=x, w=w, dy=dy)
    run("PReluGradient", ["x", "dy", "x", "w"], ["dy", "dw"])
    close(workspace.FetchBlob("dy"), np.where(x > 0, dy, w * dy))


# ================================================================ SquareRootDivide
@pytest.mark.parametrize("sdtype", [np.float32, np.int32, np.int64])
def test_square_root_divide(rng, sdtype):
    d = f32(rng, 4, 3, 2)
    s = np.array([4, 0, 9, 2], sdtype) if sdtype != np.float32 else np.array([4, 0, 0.25, 2], np.float32)
    feed(d=d, s=s)
    f = np.where(s == 0, 1, 1 / np.sqrt(np.where(s == 0, 1, s.astype(np.float64))))
    want = d * f[:, None, None]
    close(run("SquareRootDivide", ["d", "s"], ["y"]), want)
    net = core.Net("srd_%s" % np.dtype(sdtype).name)
    y = net.SquareRootDivide(["d", "s"], "y")
    grads = net.AddGradientOperators([net.SumElements(y, "loss")])
    workspace.RunNetOnce(net)
    assert "s" not in grads
    close(workspace.FetchBlob(grads["d"]), np.broadcast_to(f[:, None, None], d.shape))
    run("SquareRootDivide", ["d", "s"], ["d"])  # in place
    close(workspace.FetchBlob("d"), want)


def test_square_root_divide_edges():
    feed(d=np.ones((3, 2), np.float32), s=np.array([-4, 0, 1], np.float32), e=np.zeros((0, 2), np.float32),
         se=np.zeros(0, np.int32), v=np.array([1.0, 2.0], np.float32), sv=np.array([4, 16], np.int32))
    y = run("SquareRootDivide", ["d", "s"], ["y"])
    assert np.isnan(y[0]).all() and (y[1:] == 1).all()  # a negative scale gives NaN rows, as Caffe2's sqrt
    assert run("SquareRootDivide", ["e", "se"], ["y"]).shape == (0, 2)
    close(run("SquareRootDivide", ["v", "sv"], ["y"]), [0.5, 0.5])  # 1-D data: one element a row


# ================================================================ bad input
BAD = [
    (TypeError, r"op Sinh #0: input 0 blob 'i' must be float32, got \(4,\) int32",
     ("Sinh", ["i"], ["y"], {})),
    (ValueError, r"op ErfGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape of "
     r"input 0 blob 'x' \(2, 3\) float32", ("ErfGradient", ["x", "z"], ["y"], {})),
    (ValueError, r"op CoshGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape of "
     r"input 0 blob 'x' \(2, 3\) float32", ("CoshGradient", ["x", "z"], ["y"], {})),
    (ValueError, r"op ThresholdedRelu #0: argument 'alpha' is NaN",
     ("ThresholdedRelu", ["x"], ["y"], dict(alpha=float("nan")))),
    (ValueError, r"op ThresholdedReluGradient #0: argument 'alpha' is -1: the gradient reads Y only, which "
     r"does not tell X = 0 \(passed\) from X <= alpha \(zeroed\) when alpha < 0",
     ("ThresholdedReluGradient", ["x", "x"], ["y"], dict(alpha=-1.0))),
    (ValueError, r"op ReluN #0: argument 'n' \(0\) must be > 0", ("ReluN", ["x"], ["y"], dict(n=0.0))),
    (ValueError, r"op ReluNGradient #0: argument 'n' \(nan\) must be > 0",
     ("ReluNGradient", ["x", "x"], ["y"], dict(n=float("nan")))),
    (TypeError, r"op Gelu #0: input 0 blob 'i' must be float32, got \(4,\) int32",
     ("Gelu", ["i"], ["y"], {})),
    (ValueError, r"op NegateGradient #0: input 0 blob 'u' holds no tensor",
     ("NegateGradient", ["u"], ["y"], {})),
    (ValueError, r"op Glu #0: argument dim=1 must name a dim of input 0 blob 'x' of shape \(2, 3\) float32 "
     r"\(in \[-2, 2\)\) of even size", ("Glu", ["x"], ["y"], dict(dim=1))),
    (ValueError, r"op Glu #0: argument dim=2 must name a dim", ("Glu", ["x"], ["y"], dict(dim=2))),
    (ValueError, r"op Glu #0: argument dim=-1 must name a dim of input 0 blob 's' of shape \(\) float32 "
     r"\(in \[-0, 0\)\)", ("Glu", ["s"], ["y"], {})),
    (ValueError, r"op PRelu #0: argument order='NCWH' must be 'NCHW' or 'NHWC'",
     ("PRelu", ["x", "w3"], ["y"], dict(order="NCWH"))),
    (ValueError, r"op PRelu #0: input 1 blob 'w2' \(2,\) float32 must have 1 entry \(shared\) or one per "
     r"channel of input 0 blob 'x' of shape \(2, 3\) float32 \(order NCHW: channels are its second dim\)",
     ("PRelu", ["x", "w2"], ["y"], {})),
    (ValueError, r"op PRelu #0: input 1 blob 'w2' \(2,\) float32 must have 1 entry \(shared\) or one per "
     r"channel of input 0 blob 'x' of shape \(2, 3\) float32 \(order NHWC: channels are its last dim\)",
     ("PRelu", ["x", "w2"], ["y"], dict(order="NHWC"))),
    (ValueError, r"op PRelu #0: input 1 blob 'x' must have 1 dims, got \(2, 3\) float32",
     ("PRelu", ["x", "x"], ["y"], {})),
    (TypeError, r"op PRelu #0: input 1 blob 'i' must be float32, got \(4,\) int32",
     ("PRelu", ["x", "i"], ["y"], {})),
    (ValueError, r"op PReluGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape of "
     r"input 2 blob 'x' \(X\) \(2, 3\) float32", ("PReluGradient", ["x", "z", "x", "w3"], ["dx", "dw"], {})),
    (ValueError, r"op PReluGradient #0: input 3 blob 'w2' \(2,\) float32 must have 1 entry \(shared\) or one "
     r"per channel", ("PReluGradient", ["x", "x", "x", "w2"], ["dx", "dw"], {})),
    (ValueError, r"op SquareRootDivide #0: input 1 blob 'w2' \(scale\) \(2,\) float32 must have one entry "
     r"per row of input 0 blob 'w3' \(data\) \(3,\) float32", ("SquareRootDivide", ["w3", "w2"], ["y"], {})),
    (ValueError, r"op SquareRootDivide #0: input 0 blob 's' must have 1 to 8 dims, got \(\) float32",
     ("SquareRootDivide", ["s", "w2"], ["y"], {})),
    (ValueError, r"op SquareRootDivide #0: input 1 blob 'x' must have 1 dims, got \(2, 3\) float32",
     ("SquareRootDivide", ["x", "x"], ["y"], {})),
]


@pytest.mark.parametrize("exc,pattern,spec", BAD)
def test_bad_input(exc, pattern, spec):
    feed(x=np.ones((2, 3), np.float32), z=np.ones((2, 2), np.float32), i=np.arange(4, dtype=np.int32),
         w3=np.ones(3, np.float32), w2=np.ones(2, np.float32), s=np.float32(1))
    workspace.CreateBlob("u")
    t, ins, outs, args = spec
    raises(exc, pattern, op(t, ins, outs, **args))
    close(run("Sinh", ["x"], ["ok"]), np.sinh(np.ones((2, 3))))  # the workspace stays usable
