"""Elementwise ops of csrc/ops/unary2.c (Sin, Cos, Tan, Asin, Acos, Atan, Sign, Reciprocal, RSqrt, Floor,
Ceil, Softplus, Selu, Swish, HardSigmoid, Cube, Logit, Cbrt, IsNaN, Log1p, Round, ReplaceNaN, Where, Expand)
and their gradient ops: NumPy references
for every argument, edge values (inf, NaN, 0, overflow), finite-difference gradients away from kinks,
gradient op input orders (Caffe2's), in place, and bad input with exact messages."""

import numpy as np
import pytest

from recurrent import core, gradient_checker, workspace
from op_helpers import assert_must_not_differentiate
from test_ops_math import close, f32, feed, op, run  # the same helpers

SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805


def check_grads(o, inputs, indices=(0,), stepsize=1e-3, threshold=1e-2):
    checker = gradient_checker.GradientChecker(stepsize, threshold)
    for i in indices:
        ok, grad, est = checker.CheckSimple(o, inputs, i, [0])
        assert ok, "%s input %d: analytic %s vs numeric %s" % (o.type, i, grad, est)


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


def softplus(x):
    return np.logaddexp(0, x)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ================================================================ forward, NumPy references
FORWARD = [
    ("Sin", {}, np.sin, False),
    ("Cos", {}, np.cos, False),
    ("Tan", {}, np.tan, False),
    ("Asin", {}, lambda x: np.arcsin(x / 3), False),  # fed x / 3, in [-1, 1], below
    ("Acos", {}, lambda x: np.arccos(x / 3), False),
    ("Atan", {}, np.arctan, False),
    ("Sign", {}, np.sign, True),
    ("Reciprocal", {}, lambda x: 1 / x, True),
    ("RSqrt", {}, lambda x: 1 / np.sqrt(np.abs(x) + 0.1), True),  # fed |x| + 0.1, below
    ("Floor", {}, np.floor, True),
    ("Ceil", {}, np.ceil, True),
    ("Softplus", {}, softplus, True),
    ("Selu", {}, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x)), True),
    ("Selu", dict(alpha=0.5, scale=2.0), lambda x: 2.0 * np.where(x > 0, x, 0.5 * np.expm1(x)), True),
    ("Swish", {}, lambda x: x * sigmoid(x), False),
    ("HardSigmoid", {}, lambda x: np.clip(0.2 * x + 0.5, 0, 1), True),
    ("HardSigmoid", dict(alpha=0.7, beta=-0.1), lambda x: np.clip(0.7 * x - 0.1, 0, 1), True),
    ("Cube", {}, lambda x: x ** 3, False),
    ("Cbrt", {}, np.cbrt, True),
    ("Logit", {}, lambda x: logit_ref(x / 4 + 0.5), True),   # fed x / 4 + 0.5, in (-0.25, 1.25), below
    ("Logit", dict(eps=0.1), lambda x: logit_ref(x / 4 + 0.5, 0.1), True),
    ("Log1p", {}, lambda x: np.log1p(x / 3.5), False),   # fed x / 3.5, in (-1, 1), below
    ("Round", {}, lambda x: round_ref(x), True),
    ("ReplaceNaN", {}, lambda x: x, True),
    ("ReplaceNaN", dict(value=-2.0), lambda x: x, True),
]


def round_ref(x):
    """std::round: halves away from zero (np.round goes to even), the sign of -0 kept."""
    x = np.asarray(x, np.float64)
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def logit_ref(x, eps=1e-6):
    """The clamp and the ratio in float32, as the op (1 - eps rounds in float32), the log in double."""
    f = np.float32
    c = np.clip(np.asarray(x, f), f(eps), f(1) - f(eps))
    return np.log((c / (f(1) - c)).astype(np.float64))


@pytest.mark.parametrize("type_,args,ref,inplace", FORWARD)
@pytest.mark.parametrize("shape", [(3, 4), (2, 0, 3), ()])
def test_forward(rng, type_, args, ref, inplace, shape):
    x = f32(rng, *shape, lo=-3, hi=3)
    if type_ == "RSqrt":
        x = np.abs(x) + np.float32(0.1)
        ref_ = lambda v: 1 / np.sqrt(v)  # noqa: E731
    elif type_ in ("Asin", "Acos"):
        x = (x / np.float32(3)).astype(np.float32)
        ref_ = np.arcsin if type_ == "Asin" else np.arccos
    elif type_ == "Logit":
        x = (x / np.float32(4) + np.float32(0.5)).astype(np.float32)
        ref_ = lambda v: logit_ref(v, args.get("eps", 1e-6))  # noqa: E731
    elif type_ == "Log1p":
        x = (x / np.float32(3.5)).astype(np.float32)
        ref_ = np.log1p
    else:
        ref_ = ref
    if type_ == "Reciprocal":
        x = np.where(np.abs(x) < 0.1, np.float32(0.5), x).astype(np.float32)
    feed(x=x)
    close(run(type_, ["x"], ["y"], **args), ref_(x.astype(np.float64)))
    if inplace:
        run(type_, ["x"], ["x"], **args)
        close(workspace.FetchBlob("x"), ref_(x.astype(np.float64)))
    else:
        with pytest.raises(ValueError, match="in-place"):
            workspace.RunOperatorOnce(op(type_, ["x"], ["x"], **args))
        np.testing.assert_array_equal(workspace.FetchBlob("x"), x)  # untouched, workspace usable


def test_edge_values():
    x = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 2.5, -2.5, 1e30], np.float32)
    feed(x=x)
    with np.errstate(all="ignore"):
        for t, ref in (("Sign", np.sign), ("Floor", np.floor), ("Ceil", np.ceil),
                       ("Reciprocal", lambda v: 1 / v), ("RSqrt", lambda v: 1 / np.sqrt(v)), ("Sin", np.sin),
                       ("Cos", np.cos), ("Cube", lambda v: v ** 3)):
            y = run(t, ["x"], ["y"])
            np.testing.assert_allclose(y, ref(x).astype(np.float32), rtol=1e-6, atol=0, err_msg=t)
    y = run("Reciprocal", ["x"], ["y"])
    assert y[3] == np.inf and y[4] == -np.inf  # 1 / +-0
    assert run("Cube", ["x"], ["y"])[7] == np.inf  # overflow
    assert np.signbit(run("Sign", ["x"], ["y"])[4])  # -0 stays -0, as np.sign
    # Softplus: no overflow (Caffe2's log(exp(x) + 1) was inf from x ~ 89)
    y = run("Softplus", ["x"], ["y"])
    assert np.isnan(y[0]) and y[1] == 0 and y[2] == np.inf and y[7] == np.float32(1e30)
    close(y[3:7], softplus(x[3:7].astype(np.float64)))
    feed(big=np.array([100.0, 88.5, -100.0, -20.0], np.float32))
    close(run("Softplus", ["big"], ["y"]), softplus(np.array([100.0, 88.5, -100.0, -20.0])), tol=1e-6)
    # Swish: 0 at -inf (Caffe2: NaN)
    y = run("Swish", ["x"], ["y"])
    assert np.isnan(y[0]) and y[1] == 0 and y[2] == np.inf and y[7] == np.float32(1e30)
    # HardSigmoid and Selu keep NaN
    assert np.isnan(run("HardSigmoid", ["x"], ["y"])[0])
    y = run("Selu", ["x"], ["y"])
    assert np.isnan(y[0]) and y[1] == np.float32(-SELU_A * SELU_S) and y[2] == np.inf


# ================================================================ gradients
GRADS = [
    ("Sin", {}, (-2, 2), ()),
    ("Cos", {}, (-2, 2), ()),
    ("Tan", {}, (-1.2, 1.2), ()),
    ("Asin", {}, (-0.9, 0.9), ()),
    ("Acos", {}, (-0.9, 0.9), ()),
    ("Atan", {}, (-5, 5), ()),
    ("Reciprocal", {}, (0.3, 2), ()),
    ("RSqrt", {}, (0.3, 2), ()),
    ("Softplus", {}, (-3, 3), ()),
    ("Selu", {}, (-2, 2), (0.0,)),
    ("Selu", dict(alpha=0.8, scale=1.5), (-2, 2), (0.0,)),
    ("Swish", {}, (-4, 4), ()),
    ("HardSigmoid", {}, (-4, 4), (-2.5, 2.5)),
    ("HardSigmoid", dict(alpha=0.5, beta=0.25), (-3, 3), (-0.5, 1.5)),
    ("Cube", {}, (-2, 2), ()),
    ("Cbrt", {}, (0.3, 2), ()),
    ("Cbrt", {}, (-2, -0.3), ()),
    ("Logit", {}, (0.05, 0.95), ()),
    ("Logit", dict(eps=0.2), (0.0, 1.0), (0.2, 0.8)),   # outside [eps, 1 - eps] the output is flat
    ("Log1p", {}, (-0.8, 3), ()),
]


def away(x, points, margin=0.05):
    x = x.copy()
    for p in points:
        near = np.abs(x - p) < margin
        x[near] = p + np.where(x[near] >= p, 2, -2) * margin
    return x


@pytest.mark.parametrize("type_,args,rng_,kinks", GRADS)
def test_gradient(rng, type_, args, rng_, kinks):
    x = away(f32(rng, 3, 4, lo=rng_[0], hi=rng_[1]), kinks)
    check_grads(op(type_, ["x"], ["y"], **args), [x])


def test_gradient_ops_direct(rng):
    """Each gradient op on its own, with Caffe2's input order, against the closed form."""
    x = f32(rng, 2, 5, lo=-2, hi=2)
    dy = f32(rng, 2, 5)
    xd = x.astype(np.float64)
    feed(x=x, dy=dy)
    close(run("SinGradient", ["x", "dy"], ["dx"]), dy * np.cos(xd))
    close(run("CosGradient", ["x", "dy"], ["dx"]), -dy * np.sin(xd))
    close(run("TanGradient", ["x", "dy"], ["dx"]), dy / np.cos(xd) ** 2)
    close(run("AtanGradient", ["x", "dy"], ["dx"]), dy / (1 + xd ** 2))
    h = (x / np.float32(2.5)).astype(np.float32)  # in (-1, 1)
    feed(h=h)
    hd = h.astype(np.float64)
    close(run("AsinGradient", ["h", "dy"], ["dx"]), dy / np.sqrt(1 - hd ** 2))
    close(run("AcosGradient", ["h", "dy"], ["dx"]), -dy / np.sqrt(1 - hd ** 2))
    close(run("ReciprocalGradient", ["x", "dy"], ["dx"]), -dy * xd ** 2)  # x taken as Y
    close(run("RSqrtGradient", ["dy", "x"], ["dx"]), -0.5 * dy * xd ** 3)  # (dY, Y)
    close(run("SoftplusGradient", ["x", "dy"], ["dx"]), dy * (1 - np.exp(-xd)))
    close(run("SeluGradient", ["x", "dy"], ["dx"]),
          np.where(xd > 0, SELU_S * dy, dy * (xd + SELU_A * SELU_S)))
    close(run("HardSigmoidGradient", ["x", "dy"], ["dx"], alpha=0.3),
          np.where((xd > 0) & (xd < 1), 0.3 * dy, 0))
    close(run("CubeGradient", ["dy", "x"], ["dx"]), 3 * dy * xd ** 2)  # (dY, X)
    y = x * sigmoid(xd)
    feed(y=y.astype(np.float32))
    s = sigmoid(xd)
    close(run("SwishGradient", ["x", "y", "dy"], ["dx"]), dy * (s + y * (1 - s)))
    # dX over dY
    run("CubeGradient", ["dy", "x"], ["dy"])
    close(workspace.FetchBlob("dy"), 3 * dy * xd ** 2)


def test_gradient_edge_values():
    feed(x=np.array([np.inf, -np.inf, 1e30, -1e30, 0.0], np.float32), dy=np.full(5, 2.0, np.float32))
    run("Swish", ["x"], ["y"])
    dx = run("SwishGradient", ["x", "y", "dy"], ["dx"])
    np.testing.assert_array_equal(dx, [2, 0, 2, 0, 1])  # Caffe2: NaN, NaN, 0, 0, 1
    feed(y=np.array([np.inf, 0.0, 1e-8, 20.0], np.float32), dy1=np.ones(4, np.float32))
    dx = run("SoftplusGradient", ["y", "dy1"], ["dx"])
    close(dx, [1.0, 0.0, 1e-8, 1 - np.exp(-20.0)], tol=1e-12)  # expm1: 1e-8 not lost
    feed(z=np.array([0.0], np.float32), g=np.ones(1, np.float32))
    run("Reciprocal", ["z"], ["rz"])
    assert run("ReciprocalGradient", ["rz", "g"], ["dz"])[0] == -np.inf  # Y = inf at X = 0


def test_makers_input_orders():
    cases = [("Sin", ["x", "y_grad"]), ("Cos", ["x", "y_grad"]), ("Tan", ["x", "y_grad"]),
             ("Asin", ["x", "y_grad"]), ("Acos", ["x", "y_grad"]), ("Atan", ["x", "y_grad"]),
             ("Reciprocal", ["y", "y_grad"]),
             ("RSqrt", ["y_grad", "y"]), ("Softplus", ["y", "y_grad"]), ("Selu", ["y", "y_grad"]),
             ("HardSigmoid", ["y", "y_grad"]), ("Cube", ["y_grad", "x"]), ("Swish", ["x", "y", "y_grad"]),
             ("Logit", ["x", "y_grad"]), ("Cbrt", ["y_grad", "y"]), ("Log1p", ["x", "y_grad"])]
    for t, ins in cases:
        ops, g = core.GradientRegistry.GetGradientForOp(op(t, ["x"], ["y"], alpha=0.3), ["y_grad"])
        assert [o.type for o in ops] == [t + "Gradient"] and g == ["x_grad"], t
        assert list(ops[0].input) == ins and list(ops[0].output) == ["x_grad"], t
        assert [a.name for a in ops[0].arg] == ["alpha"], t  # the forward op's arguments
    ops, g = core.GradientRegistry.GetGradientForOp(op("Expand", ["x", "s"], ["y"]), ["y_grad"])
    assert ops[0].type == "ExpandGradient" and list(ops[0].input) == ["y_grad", "x"] and g == ["x_grad", None]
    for t in ("Floor", "Ceil", "IsNaN", "Round", "ReplaceNaN"):
        ops, g = core.GradientRegistry.GetGradientForOp(op(t, ["x"], ["y"]), ["y_grad"])
        assert ops == [] and g == [None]
    assert_must_not_differentiate(op("Sign", ["x"], ["y"]), 1)
    with pytest.raises(ValueError, match=r"Where has no gradient op \(Caffe2 neither\): output 'z' needs a "
                       r"gradient, but inputs 'x' and 'y' would get none"):
        core.GradientRegistry.GetGradientForOp(op("Where", ["c", "x", "y"], ["z"]), ["z_grad"])
    ops, g = core.GradientRegistry.GetGradientForOp(op("Where", ["c", "x", "y"], ["z"]), [None])
    assert ops == [] and g == [None, None, None]


def test_in_place_forward_then_gradient():
    """In place where the gradient reads Y (Reciprocal, Selu, ...) works in a net; the ops whose
    gradient reads X are refused in place by the schema."""
    x = np.array([[0.5, -1.5, 2.0]], np.float32)
    for t in ("Reciprocal", "Softplus", "Selu", "HardSigmoid", "RSqrt"):
        xin = np.abs(x) if t == "RSqrt" else x
        net = core.Net("ip_" + t)
        h = net.Copy("x", "h")
        getattr(net, t)(h, h)
        loss = net.SumElements(h, "loss")
        net.AddGradientOperators([loss])
        feed(x=xin)
        workspace.RunNetOnce(net)
        dx = workspace.FetchBlob("h_grad")
        net2 = core.Net("sep_" + t)
        y2 = getattr(net2, t)("x", "y2")
        net2.AddGradientOperators([net2.SumElements(y2, "loss2")])
        workspace.RunNetOnce(net2)
        close(dx, workspace.FetchBlob("x_grad"))
    with pytest.raises(ValueError, match=r"Sin gradient: the forward op ran in place on 'x'"):
        core.GradientRegistry.GetGradientForOp(op("Sin", ["x"], ["x"]), ["x_grad"])


# ================================================================ Where
def test_where_same_shape(rng):
    c = (rng.uniform(size=(3, 4)) > 0.5).astype(np.int32) * rng.randint(1, 5, (3, 4)).astype(np.int32)
    x, y = f32(rng, 3, 4), f32(rng, 3, 4)
    feed(c=c, x=x, y=y)
    np.testing.assert_array_equal(run("Where", ["c", "x", "y"], ["z"]), np.where(c != 0, x, y))
    xi, yi = rng.randint(-9, 9, (3, 4)).astype(np.int32), rng.randint(-9, 9, (3, 4)).astype(np.int32)
    feed(xi=xi, yi=yi)
    z = run("Where", ["c", "xi", "yi"], ["zi"])
    assert z.dtype == np.int32
    np.testing.assert_array_equal(z, np.where(c != 0, xi, yi))
    # in place over X or Y
    run("Where", ["c", "x", "y"], ["x"])
    np.testing.assert_array_equal(workspace.FetchBlob("x"), np.where(c != 0, x, y))
    run("Where", ["c", "xi", "yi"], ["yi"])
    np.testing.assert_array_equal(workspace.FetchBlob("yi"), np.where(c != 0, xi, yi))


@pytest.mark.parametrize("sc,sx,sy", [((3, 1), (1, 4), (4,)), ((4,), (2, 3, 4), ()), ((), (2, 3), (2, 3)),
                                      ((2, 1, 3), (1, 5, 1), (5, 3)), ((0, 3), (1, 3), (3,)),
                                      ((1,), (0,), (1,))])
def test_where_broadcast(rng, sc, sx, sy):
    c = (rng.uniform(size=sc) > 0.5).astype(np.int32)
    x, y = f32(rng, *sx), f32(rng, *sy)
    feed(c=c, x=x, y=y)
    z = run("Where", ["c", "x", "y"], ["z"])
    ref = np.where(c != 0, x, y)
    assert z.shape == ref.shape
    np.testing.assert_array_equal(z, ref)


def test_where_broadcast_on_rows(rng):
    c = np.array([1, 0, 1], np.int32)
    x, y = f32(rng, 3, 2, 2), f32(rng, 3, 2, 2)
    feed(c=c, x=x, y=y)
    np.testing.assert_array_equal(run("Where", ["c", "x", "y"], ["z"], broadcast_on_rows=1),
                                  np.where(c[:, None, None] != 0, x, y))
    feed(x1=x[:, 0, 0].copy(), y1=y[:, 0, 0].copy())
    np.testing.assert_array_equal(run("Where", ["c", "x1", "y1"], ["z"], broadcast_on_rows=1),
                                  np.where(c != 0, x[:, 0, 0], y[:, 0, 0]))


def test_where_in_place_needs_result_shape(rng):
    feed(c=np.ones((2, 3), np.int32), x=f32(rng, 3), y=f32(rng, 2, 3))
    x0 = workspace.FetchBlob("x")
    raises(ValueError, r"op Where #0: output blob 'x' is input 1 of shape \(3,\) float32, but the result has "
           r"the broadcast shape \(2, 3\) float32 \(in place needs the result to have that input's shape\)",
           op("Where", ["c", "x", "y"], ["x"]))
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x0)
    run("Where", ["c", "x", "y"], ["y"])  # Y has the result's shape
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.broadcast_to(x0, (2, 3)))


# ================================================================ Expand
@pytest.mark.parametrize("sx,shape,want", [((1, 3, 1), [3, -1, 3], (3, 3, 3)),
                                           ((4, 1, 2), [4, -1, 2, 2], (4, 4, 2, 2)),
                                           ((2, 3), [-1, -1], (2, 3)), ((3,), [-1, 2, -1], (1, 2, 3)),
                                           ((2, 1), [-5, 4], (2, 4))])
def test_expand_negative_keeps_dim(rng, sx, shape, want):
    """As Caffe2's (PyTorch's expand): a negative entry keeps X's dim (1 where X has none)."""
    x = f32(rng, *sx)
    feed(x=x, s=np.array(shape, np.int32))
    y = run("Expand", ["x", "s"], ["y"])
    assert y.shape == want
    np.testing.assert_array_equal(y, np.broadcast_to(x, want))
    check_grads(op("Expand", ["x", "s"], ["y"]), [x, np.array(shape, np.int32)])


@pytest.mark.parametrize("sx,shape", [((3, 1), [3, 4]), ((3, 1), [2, 1, 6]), ((4,), [2, 3, 1]),
                                      ((), [2, 2]), ((2, 3), []), ((1, 3), [0, 3]), ((2, 1), [1, 1]),
                                      ((1,), [1])])
def test_expand(rng, sx, shape):
    x = f32(rng, *sx)
    feed(x=x, s=np.array(shape, np.int32))
    y = run("Expand", ["x", "s"], ["y"])
    ref = x * np.ones(shape, np.float32)  # numpy's broadcast of the two shapes
    assert y.shape == ref.shape
    np.testing.assert_array_equal(y, ref)
    xi = rng.randint(-5, 5, sx).astype(np.int32)
    feed(xi=xi)
    yi = run("Expand", ["xi", "s"], ["yi"])
    assert yi.dtype == np.int32
    np.testing.assert_array_equal(yi, xi * np.ones(shape, np.int32))


@pytest.mark.parametrize("sx,shape", [((3, 1), [3, 4]), ((4,), [2, 3, 4]), ((1, 3, 1), [2, 3, 2]),
                                      ((2, 3), [2, 3])])
def test_expand_gradient(rng, sx, shape):
    x = f32(rng, *sx)
    s = np.array(shape, np.int32)
    checker = gradient_checker.GradientChecker(1e-3, 1e-2)
    ok, grad, est = checker.CheckSimple(op("Expand", ["x", "s"], ["y"]), [x, s], 0, [0])
    assert ok, (grad, est)
    dy = f32(rng, *np.broadcast_shapes(sx, tuple(shape)))
    feed(dy=dy, x=x)
    dx = run("ExpandGradient", ["dy", "x"], ["dx"])
    axes = tuple(range(dy.ndim - x.ndim)) + tuple(dy.ndim - x.ndim + i for i, d in enumerate(sx) if d == 1)
    close(dx, dy.astype(np.float64).sum(axis=axes).reshape(sx))


def test_expand_gradient_is_in_double_and_ordered():
    dy = np.array([[1e8], [1.0], [-1e8], [1.0]], np.float32) * np.ones((4, 3), np.float32)
    feed(dy=dy, x=np.zeros((1, 3), np.float32))
    dx = run("ExpandGradient", ["dy", "x"], ["dx"])
    np.testing.assert_array_equal(dx, [[2.0, 2.0, 2.0]])  # in float32: 0 (1e8 + 1 == 1e8)
    feed(dy=np.zeros((2, 0), np.float32), x=np.zeros((1, 0), np.float32))
    assert run("ExpandGradient", ["dy", "x"], ["dx"]).shape == (1, 0)
    feed(dy=np.zeros((0, 3), np.float32), x=np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(run("ExpandGradient", ["dy", "x"], ["dx"]), np.zeros((1, 3)))


def test_expand_in_a_net(rng):
    net = core.Net("ex")
    y = net.Expand(["w", "s"], "y")
    net.AddGradientOperators([net.SumElements(net.Mul([y, "m"], "p"), "loss")])
    w, m = f32(rng, 3, 1), f32(rng, 2, 3, 4)
    feed(w=w, s=np.array([2, 1, 4], np.int32), m=m)
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("w_grad"), m.astype(np.float64).sum(axis=(0, 2)).reshape(3, 1))


# ================================================================ bad input
BAD = [
    (TypeError, r"op Sin #0: input 0 blob 'i' must be float32, got \(4,\) int32", ("Sin", ["i"], ["y"], {})),
    (TypeError, r"op Cube #0: input 0 blob 'i' must be float32, got \(4,\) int32",
     ("Cube", ["i"], ["y"], {})),
    (ValueError, r"op SinGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape "
     r"of input 0 blob 'x' \(2, 3\) float32", ("SinGradient", ["x", "z"], ["y"], {})),
    (ValueError, r"op SwishGradient #0: input 2 blob 'z' of shape \(2, 2\) float32 must have the shape "
     r"of input 0 blob 'x' \(2, 3\) float32", ("SwishGradient", ["x", "x", "z"], ["y"], {})),
    (ValueError, r"op SeluGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have as many "
     r"elements as input 0 blob 'x' \(2, 3\) float32", ("SeluGradient", ["x", "z"], ["y"], {})),
    (TypeError, r"op Atan #0: input 0 blob 'i' must be float32, got \(4,\) int32",
     ("Atan", ["i"], ["y"], {})),
    (TypeError, r"op Round #0: input 0 blob 'i' must be float32, got \(4,\) int32",
     ("Round", ["i"], ["y"], {})),
    (TypeError, r"op ReplaceNaN #0: input 0 blob 'i' must be float32, got \(4,\) int32",
     ("ReplaceNaN", ["i"], ["y"], {})),
    (TypeError, r"op ReplaceNaN: argument 'value' must be a float, got string",
     ("ReplaceNaN", ["x"], ["y"], dict(value="zero"))),
    (KeyError, r"op Log1p #0: input 0 blob 'missing' does not exist", ("Log1p", ["missing"], ["y"], {})),
    (ValueError, r"op Log1pGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape "
     r"of input 0 blob 'x' \(2, 3\) float32", ("Log1pGradient", ["x", "z"], ["y"], {})),
    (TypeError, r"op Log1pGradient #0: input 1 blob 'i' must be float32, got \(4,\) int32",
     ("Log1pGradient", ["x", "i"], ["y"], {})),
    (ValueError, r"op AsinGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape "
     r"of input 0 blob 'x' \(2, 3\) float32", ("AsinGradient", ["x", "z"], ["y"], {})),
    (ValueError, r"op Selu #0: argument 'scale' is NaN", ("Selu", ["x"], ["y"], dict(scale=float("nan")))),
    (ValueError, r"op HardSigmoid #0: argument 'beta' is NaN",
     ("HardSigmoid", ["x"], ["y"], dict(beta=float("nan")))),
    (ValueError, r"op SeluGradient #0: arguments alpha -1 and scale 1.0507: the gradient reads Y only, which "
     r"tells the sign of X only when scale > 0 and alpha >= 0", ("SeluGradient", ["x", "x"], ["y"],
                                                                 dict(alpha=-1.0))),
    (ValueError, r"op SeluGradient #0: arguments alpha 1.67326 and scale -1: the gradient reads Y only",
     ("SeluGradient", ["x", "x"], ["y"], dict(scale=-1.0))),
    (TypeError, r"op Where #0: input 0 blob 'x' \(2, 3\) float32 must be int32 \(bool as 0 / 1; nonzero is "
     r"true\)", ("Where", ["x", "x", "x"], ["z"], {})),
    (TypeError, r"op Where #0: input 2 blob 'i' must have the dtype of input 1 blob 'x' \(2, 3\) float32, "
     r"got \(4,\) int32", ("Where", ["c", "x", "i"], ["z"], {})),
    (ValueError, r"op Where #0: input 0 blob 'c' of shape \(2, 3\) int32, input 1 blob 'x' of shape \(2, 3\) "
     r"float32 and input 2 blob 'z' of shape \(2, 2\) float32 do not broadcast \(numpy-style, dims aligned "
     r"from the last\)", ("Where", ["c", "x", "z"], ["o"], {})),
    (ValueError, r"op Where #0: with broadcast_on_rows, input 0 blob 'c' must be 1-D with one entry per row "
     r"of input 1 blob 'x' and input 2 blob 'x' of one shape; got \(2, 3\) int32, \(2, 3\) float32 and "
     r"\(2, 3\) float32", ("Where", ["c", "x", "x"], ["o"], dict(broadcast_on_rows=1))),
    (TypeError, r"op Expand #0: input 1 blob 'x' must be int32, got \(2, 3\) float32",
     ("Expand", ["x", "x"], ["y"], {})),
    (ValueError, r"op Expand #0: input 1 blob 'c' must have 1 dims, got \(2, 3\) int32",
     ("Expand", ["x", "c"], ["y"], {})),
    (ValueError, r"op Expand #0: input 0 blob 'x' of shape \(2, 3\) float32 does not broadcast to the shape "
     r"in input 1 blob 'neg' \(numpy-style, dims aligned from the last\): dim 0 of 'x' is 2 but entry 0 of "
     r"the shape is 4", ("Expand", ["x", "neg"], ["y"], {})),
    (ValueError, r"op Expand #0: input 0 blob 'x' of shape \(2, 3\) float32 does not broadcast to the shape "
     r"in input 1 blob 's4' \(numpy-style, dims aligned from the last\): dim 1 of 'x' is 3 but entry 0 of "
     r"the shape is 4", ("Expand", ["x", "s4"], ["y"], {})),
    (ValueError, r"op Expand #0: input 1 blob 'long' \(9,\) int32: a shape of 9 dims is over the 8 allowed",
     ("Expand", ["x", "long"], ["y"], {})),
    (ValueError, r"op ExpandGradient #0: input 0 blob 'x' of shape \(2, 3\) float32 is not an expansion of "
     r"input 1 blob 'z' of shape \(2, 2\) float32 \(each dim of X, aligned from the last, must be dY's "
     r"or 1\)",
     ("ExpandGradient", ["x", "z"], ["y"], {})),
    (ValueError, r"op ExpandGradient #0: input 0 blob 'x' of shape \(2, 3\) float32 is not an expansion of "
     r"input 1 blob 'big' of shape \(1, 2, 3\) float32", ("ExpandGradient", ["x", "big"], ["y"], {})),
]


@pytest.mark.parametrize("exc,pattern,spec", BAD)
def test_bad_input(exc, pattern, spec):
    feed(x=np.ones((2, 3), np.float32), z=np.ones((2, 2), np.float32), i=np.arange(4, dtype=np.int32),
         c=np.ones((2, 3), np.int32), neg=np.array([4, -1], np.int32), s4=np.array([4], np.int32),
         long=np.ones(9, np.int32), big=np.ones((1, 2, 3), np.float32))
    t, ins, outs, args = spec
    raises(exc, pattern, op(t, ins, outs, **args))
    # the workspace stays usable
    close(run("Sin", ["x"], ["ok"]), np.sin(np.ones((2, 3))))


def test_refused_in_place_schemas():
    feed(x=np.ones((2, 3), np.float32), s=np.array([2, 3], np.int32))
    for t, ins in (("Sin", ["x"]), ("Cos", ["x"]), ("Tan", ["x"]), ("Asin", ["x"]), ("Acos", ["x"]),
                   ("Atan", ["x"]), ("Swish", ["x"]), ("Cube", ["x"]), ("Log1p", ["x"]),
                   ("Expand", ["x", "s"]),
                   ("ExpandGradient", ["x", "x"])):
        with pytest.raises(ValueError, match=r"op %s #0: input 0 and output 0 are the same blob 'x'" % t):
            workspace.RunOperatorOnce(op(t, ins, ["x"]))


def test_net_creation_shape_check():
    """The schema's check runs at CreateNet for inputs that are fed, not computed."""
    feed(x=np.ones((2, 3), np.float32), z=np.ones((2, 2), np.float32), c=np.ones((2, 3), np.int32))
    for spec, pattern in ((("Where", ["c", "x", "z"]), r"op Where #0: input 0 blob 'c' of shape \(2, 3\)"),
                          (("CubeGradient", ["x", "z"]), r"op CubeGradient #0: input 1 blob 'z' of shape"),
                          (("Expand", ["x", "x"]), r"op Expand #0: input 1 blob 'x' must be int32")):
        net = core.Net("early")
        net.Proto().op.extend([op(spec[0], spec[1], ["out"])])
        with pytest.raises((ValueError, TypeError), match=pattern):
            workspace.CreateNet(net)


def test_trig_edge_values():
    """Asin / Acos outside [-1, 1] are NaN and their gradients inf at +-1, as NumPy; Tan / Atan at inf."""
    x = np.array([-1.0, 1.0, 1.5, np.nan, 0.0], np.float32)
    feed(x=x, dy=np.ones(5, np.float32), big=np.array([np.inf, -np.inf, 1e30], np.float32))
    with np.errstate(all="ignore"):
        for t, ref in (("Asin", np.arcsin), ("Acos", np.arccos), ("Atan", np.arctan), ("Tan", np.tan)):
            np.testing.assert_allclose(run(t, ["x"], ["y"]), ref(x), rtol=1e-6, atol=0, err_msg=t)
        dx = run("AsinGradient", ["x", "dy"], ["dx"])
        np.testing.assert_array_equal(dx[[0, 1, 4]], [np.inf, np.inf, 1])
        dx = run("AcosGradient", ["x", "dy"], ["dx"])
        np.testing.assert_array_equal(dx[[0, 1, 4]], [-np.inf, -np.inf, -1])
        assert np.isnan(run("AsinGradient", ["x", "dy"], ["dx"])[2])
        close(run("Atan", ["big"], ["y"]), [np.pi / 2, -np.pi / 2, np.pi / 2], tol=1e-6)
        np.testing.assert_array_equal(run("AtanGradient", ["big", "big"], ["dx"])[2], 0)  # 1e30 / (1 + 1e60)


def test_selu_gradient_takes_dy_of_y_size_in_any_shape(rng):
    """As Caffe2 (CAFFE_ENFORCE_EQ(dY.numel(), Y.numel())): dX gets Y's shape, also written over dY."""
    y = f32(rng, 2, 3, lo=-1, hi=2)
    dy = f32(rng, 6)
    feed(y=y, dy=dy)
    yd = y.astype(np.float64)
    want = np.where(yd > 0, SELU_S * dy.reshape(2, 3), dy.reshape(2, 3) * (yd + SELU_A * SELU_S))
    dx = run("SeluGradient", ["y", "dy"], ["dx"])
    assert dx.shape == (2, 3)
    close(dx, want)
    run("SeluGradient", ["y", "dy"], ["dy"])  # in place over dY of another shape
    assert workspace.FetchBlob("dy").shape == (2, 3)
    close(workspace.FetchBlob("dy"), want)


def test_isnan_and_edge_values():
    """IsNaN: int32 1 at NaN only (Caffe2: bool); Cbrt keeps signs, infinities and NaN; Logit clamps
    0, 1 and the infinities to +-logit(1 - eps) and keeps NaN; eps outside (0, 0.5) is refused."""
    x = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 8.0, -27.0, 1.0], np.float32)
    feed(x=x)
    y = run("IsNaN", ["x"], ["y"])
    assert y.dtype == np.int32 and y.tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
    y = run("Cbrt", ["x"], ["y"])
    assert np.isnan(y[0]) and y[1] == -np.inf and y[2] == np.inf and y[5] == 2 and y[6] == -3
    y = run("Logit", ["x"], ["y"])
    assert np.isnan(y[0]) and y[2] == y[7] and y[1] == y[3] == y[4]
    close(y[1:], logit_ref(x[1:]))
    with pytest.raises(ValueError, match=r"op Logit #0: argument 'eps' must be in \(0, 0.5\), got 0.5"):
        run("Logit", ["x"], ["y"], eps=0.5)
    feed(dy=np.ones(8, np.float32))
    g = run("LogitGradient", ["x", "dy"], ["dx"])
    assert g[3] == 0 and g[7] == 0 and g[1] == 0 and np.isnan(g[0])  # flat outside [eps, 1 - eps]


def test_log1p_round_replace_nan_edge_values():
    """Log1p: exact for tiny X (log(1 + X) would give 0), -inf at -1, NaN below; its gradient dY / (1 + X).
    Round: halves away from zero (std::round; NumPy rounds them to even), -0 / inf / NaN kept, and
    0.49999997 (1 ulp below 0.5) to 0. ReplaceNaN: only NaN changes, to value (any float, an int too)."""
    x = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, -1.0, -2.0, 1e-10, 0.5, 1.5, 2.5, -0.5, -2.5,
                  0.49999997, 1e30], np.float32)
    feed(x=x)
    with np.errstate(all="ignore"):
        y = run("Log1p", ["x"], ["y"])
        np.testing.assert_allclose(y, np.log1p(x), rtol=1e-6, atol=0)  # libm's log1pf vs NumPy's: 1 ulp
    assert y[7] == np.float32(1e-10) and y[5] == -np.inf and np.isnan(y[6]) and np.signbit(y[4])
    y = run("Round", ["x"], ["y"])
    np.testing.assert_array_equal(y[1:], round_ref(x[1:]).astype(np.float32))
    assert np.isnan(y[0]) and np.signbit(y[4]) and list(y[8:14]) == [1, 2, 3, -1, -3, 0]
    y = run("ReplaceNaN", ["x"], ["y"])
    assert y[0] == 0 and not np.signbit(y[0])
    np.testing.assert_array_equal(y[1:], x[1:])
    assert np.signbit(y[4])  # -0 stays -0
    assert run("ReplaceNaN", ["x"], ["y"], value=3)[0] == 3  # an int argument
    assert np.isnan(run("ReplaceNaN", ["x"], ["y"], value=float("nan"))[0])
    run("ReplaceNaN", ["x"], ["x"], value=-1.5)  # in place, as Caffe2's schema
    np.testing.assert_array_equal(workspace.FetchBlob("x"), np.where(np.isnan(x), np.float32(-1.5), x))
    g = np.array([0.5, -0.25, 3.0, -1.0, 1e30], np.float32)
    feed(g=g, dy=np.full(5, 2.0, np.float32))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(run("Log1pGradient", ["g", "dy"], ["dx"]), 2.0 / (1.0 + g), rtol=1e-6)
    assert run("Log1pGradient", ["g", "dy"], ["dx"])[3] == np.inf
    run("Log1pGradient", ["g", "dy"], ["dy"])  # dX over dY
    close(workspace.FetchBlob("dy")[:3], 2.0 / (1.0 + g[:3].astype(np.float64)))


def test_log1p_gradient_in_a_net():
    """AddGradientOperators builds Log1pGradient(X, dY) (Caffe2's order) and the result is 1 / (1 + X)."""
    x = np.array([[0.5, -0.5, 3.0]], np.float32)
    feed(x=x)
    net = core.Net("log1p")
    y = net.Log1p("x", "y")
    net.AddGradientOperators([net.SumElements(y, "loss")])
    assert [o.type for o in net.Proto().op][-1] == "Log1pGradient"
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("x_grad"), 1.0 / (1.0 + x.astype(np.float64)))
    net2 = core.Net("round")  # no gradient through Round / ReplaceNaN: x gets none
    r = net2.ReplaceNaN(net2.Round("x", "r"), "rn")
    net2.AddGradientOperators([net2.SumElements(r, "loss2")])
    assert "x_grad" not in [o for op_ in net2.Proto().op for o in op_.output]
