"""SumSqrElements, Pow, Max, Div (csrc/ops/loss.c, csrc/ops/math.c) and their
gradient ops: NumPy references, bad input with exact messages, gradients by
finite differences, and the chain Caffe2's optimizers build to clip gradients
by their global norm (SumSqrElements -> Sum -> Pow(0.5) -> Max -> Div -> Mul)."""

import re

import numpy as np
import pytest

from recurrent import core, gradient_checker, workspace
from test_ops_math import close, f32, feed, i32, op, run  # the same helpers


def check_grads(o, inputs, indices=None, stepsize=1e-3, threshold=1e-2):
    checker = gradient_checker.GradientChecker(stepsize, threshold)
    for i in (range(len(inputs)) if indices is None else indices):
        ok, grad, est = checker.CheckSimple(o, inputs, i, [0])
        assert ok, "%s input %d: analytic %s vs numeric %s" % (o.type, i, grad, est)


def away_from_zero(x, margin=0.2):
    x = x.copy()
    x[np.abs(x) < margin] = 0.5
    return x


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


# ---------------------------------------------------------------- SumSqrElements
@pytest.mark.parametrize("shape", [(3, 4), (7,), (), (2, 0, 3), (2, 3, 5)])
@pytest.mark.parametrize("average", [0, 1])
def test_sum_sqr_elements(rng, shape, average):
    x = f32(rng, *shape, lo=-3, hi=3)
    feed(x=x)
    y = run("SumSqrElements", ["x"], ["y"], average=average)
    x64 = x.astype(np.float64)
    ref = (x64 ** 2).sum()
    if average:
        ref = ref / x.size if x.size else 0.0
    close(y, np.float32(ref), 1e-6)
    # the output shape is SumElements's: 0-d
    assert y.shape == run("SumElements", ["x"], ["s"]).shape == ()


def test_sum_sqr_elements_same_bits_every_run(rng):
    x = f32(rng, 100003, lo=-10, hi=10)
    feed(x=x)
    y1 = run("SumSqrElements", ["x"], ["y"])
    y2 = run("SumSqrElements", ["x"], ["y2"])
    assert y1.tobytes() == y2.tobytes()
    # accumulated in double and rounded once: the double sum rounded to float32
    assert y1 == np.float32((x.astype(np.float64) ** 2).sum())


@pytest.mark.parametrize("average", [0, 1])
def test_sum_sqr_elements_gradient_op(rng, average):
    x = f32(rng, 3, 4)
    feed(x=x, dy=np.array(0.7, np.float32))
    dx = run("SumSqrElementsGradient", ["x", "dy"], ["dx"], average=average)
    close(dx, 2 * x * 0.7 / (x.size if average else 1))
    feed(dy1=np.array([0.7], np.float32))    # dY of shape (1,) too
    close(run("SumSqrElementsGradient", ["x", "dy1"], ["x"], average=average), dx, 0)   # in place on X


@pytest.mark.parametrize("average", [0, 1])
@pytest.mark.parametrize("shape", [(3, 4), (5,)])
def test_sum_sqr_elements_gradient(rng, average, shape):
    check_grads(op("SumSqrElements", ["x"], ["y"], average=average), [f32(rng, *shape)])


def test_sum_sqr_elements_gradient_maker():
    ops, g = core.GradientRegistry.GetGradientForOp(op("SumSqrElements", ["x"], ["y"], average=1), ["y_grad"])
    assert g == ["x_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("SumSqrElementsGradient", ["x", "y_grad"], ["x_grad"])]
    assert [(a.name, a.i) for a in ops[0].arg] == [("average", 1)]


def test_sum_sqr_elements_bad_inputs(rng):
    feed(xi=np.ones((2, 3), np.int32), x=f32(rng, 2, 3), dy=f32(rng, 2))
    raises(TypeError, r"^op SumSqrElements #0: input 0 blob 'xi' must be float32, got \(2, 3\) int32$",
           op("SumSqrElements", ["xi"], ["y"]))
    raises(ValueError, r"^op SumSqrElements #0: argument average must be 0 or 1, got 2$",
           op("SumSqrElements", ["x"], ["y"], average=2))
    raises(ValueError, r"^op SumSqrElementsGradient #0: input 1 blob 'dy' must hold one value \(shape \(\) or "
                       r"\(1,\)\), got \(2,\) float32$", op("SumSqrElementsGradient", ["x", "dy"], ["dx"]))


# ---------------------------------------------------------------- Pow
EXPONENTS = [0.0, 1.0, 2.0, 0.5, -1.0, 3.0, 1.5, -2.5, 0.25]


@pytest.mark.parametrize("e", EXPONENTS)
def test_pow(rng, e):
    x = f32(rng, 3, 5, lo=-2, hi=2)
    x[0, :3] = [0.0, -0.0, 1.0]
    feed(x=x)
    y = run("Pow", ["x"], ["y"], exponent=e)
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), e).astype(np.float32)
    assert np.array_equal(np.isnan(y), np.isnan(ref)), (y, ref)   # NaN for x < 0 and a non-integer e
    ok = np.isfinite(ref)
    close(y[ok], ref[ok], 2e-6)
    assert np.array_equal(y[~ok & ~np.isnan(ref)], ref[~ok & ~np.isnan(ref)])   # +-inf at 0 for e < 0
    close(run("Pow", ["x"], ["x"], exponent=e), y, 0)                           # in place


def test_pow_exact_special_cases(rng):
    x = f32(rng, 1000, lo=0, hi=100)
    feed(x=x)
    assert run("Pow", ["x"], ["y"], exponent=2).tobytes() == (x * x).tobytes()
    assert run("Pow", ["x"], ["y"], exponent=0.5).tobytes() == np.sqrt(x).tobytes()
    assert run("Pow", ["x"], ["y"], exponent=1).tobytes() == x.tobytes()          # int argument accepted
    assert run("Pow", ["x"], ["y"], exponent=-1.0).tobytes() == (np.float32(1) / x).tobytes()
    feed(n=np.array([np.nan, 0.0, -np.inf], np.float32))
    assert run("Pow", ["n"], ["y"], exponent=0.0).tolist() == [1.0, 1.0, 1.0]     # as NumPy: x ** 0 == 1


@pytest.mark.parametrize("e", EXPONENTS)
def test_pow_gradient_op(rng, e):
    x = f32(rng, 4, 3, lo=0.2, hi=2)
    dy = f32(rng, 4, 3)
    feed(x=x, dy=dy)
    dx = run("PowGradient", ["x", "dy"], ["dx"], exponent=e)
    close(dx, e * np.power(x.astype(np.float64), e - 1) * dy, 2e-5)


@pytest.mark.parametrize("e", [2.0, 0.5, 3.0, -1.0, 1.5, -2.5, 1.0, 0.0])
def test_pow_gradient(rng, e):
    check_grads(op("Pow", ["x"], ["y"], exponent=e), [f32(rng, 3, 4, lo=0.5, hi=2)])


def test_pow_gradient_maker():
    G = core.GradientRegistry.GetGradientForOp
    ops, g = G(op("Pow", ["x"], ["y"], exponent=0.5), ["y_grad"])
    assert g == ["x_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [("PowGradient", ["x", "y_grad"], ["x_grad"])]
    assert [(a.name, a.f) for a in ops[0].arg] == [("exponent", 0.5)]
    with pytest.raises(ValueError, match=r"^Pow gradient: the forward op computes 'x' in place"):
        G(op("Pow", ["x"], ["x"], exponent=2.0), ["x_grad"])


def test_pow_bad_inputs(rng):
    feed(x=f32(rng, 3), e=f32(rng, 3), xi=np.ones(3, np.int32), dy=f32(rng, 4))
    raises(ValueError, r"^op Pow #0: argument 'exponent' is required$", op("Pow", ["x"], ["y"]))
    raises(ValueError, r"^op Pow #0: argument 'exponent' must be finite, got nan$",
           op("Pow", ["x"], ["y"], exponent=float("nan")))
    raises(ValueError, r"^op Pow #0: argument 'exponent' must be finite, got inf$",
           op("Pow", ["x"], ["y"], exponent=float("inf")))
    raises(ValueError, r"^op Pow #0: input 1 blob 'e' is the exponent tensor: the argument 'exponent' "
                       r"must not be given too$", op("Pow", ["x", "e"], ["y"], exponent=2.0))
    raises(TypeError, r"^op Pow: argument 'exponent' must be a float", op("Pow", ["x"], ["y"], exponent="a"))
    raises(TypeError, r"^op Pow #0: input 0 blob 'xi' must be float32, got \(3,\) int32$",
           op("Pow", ["xi"], ["y"], exponent=2.0))
    raises(ValueError, r"^op PowGradient #0: input 1 blob 'dy' of shape \(4,\) float32 must have the shape of "
                       r"input 0 blob 'x' \(3,\) float32$", op("PowGradient", ["x", "dy"], ["dx"], exponent=2.0))
    # arguments are checked when the net is created
    n = core.Net("pow_net")
    n.Pow("x", "y")
    with pytest.raises(ValueError) as info:
        workspace.CreateNet(n)
    assert re.search(r"^net 'pow_net[^']*': op Pow #0: argument 'exponent' is required$", str(info.value))


# ---------------------------------------------------------------- Max
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_max(rng, k):
    xs = [f32(rng, 3, 5) for _ in range(k)]
    names = ["x%d" % i for i in range(k)]
    feed(**dict(zip(names, xs)))
    ref = np.maximum.reduce(xs) if k > 1 else xs[0]
    close(run("Max", names, ["y"]), ref, 0)
    close(run("Max", names, [names[-1]]), ref, 0)      # in place on the last input
    feed(**dict(zip(names, xs)))
    close(run("Max", names, [names[0]]), ref, 0)       # in place on the first


def test_max_large_and_empty(rng):
    a, b, c = f32(rng, 3000), f32(rng, 3000), f32(rng, 3000)   # more than one 1024-element block
    feed(a=a, b=b, c=c, z=np.zeros((0, 3), np.float32))
    close(run("Max", ["a", "b", "c"], ["b"]), np.maximum(np.maximum(a, b), c), 0)
    assert run("Max", ["z", "z"], ["zz"]).shape == (0, 3)
    feed(s=np.array(2.0, np.float32), t=np.array(3.0, np.float32))
    assert run("Max", ["s", "t"], ["st"]).shape == ()


def test_max_nan_as_numpy():
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 0.0, -0.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, -1.0, -0.0, 0.0], np.float32)
    feed(a=a, b=b)
    y = run("Max", ["a", "b"], ["y"])
    ref = np.maximum(a, b)
    np.testing.assert_array_equal(y, ref)      # NaN where either input is NaN
    assert list(np.signbit(y[4:])) == [True, False]   # ties give the later input: max(+0, -0) = -0


def test_max_gradient_op_ties(rng):
    a = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
    b = np.array([1.0, 4.0, 0.0, 5.0], np.float32)
    c = np.array([1.0, 0.0, 3.0, np.nan], np.float32)
    dy = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    feed(a=a, b=b, c=c, dy=dy)
    y = run("Max", ["a", "b", "c"], ["y"])
    assert np.array_equal(y, np.maximum(np.maximum(a, b), c), equal_nan=True)
    da, db, dc = run("MaxGradient", ["y", "dy", "a", "b", "c"], ["da", "db", "dc"])
    # every input equal to Y gets dY (ties: all of them); where Y is NaN, none
    close(da, [0.1, 0.0, 0.3, 0.0], 0)
    close(db, [0.1, 0.2, 0.0, 0.0], 0)
    close(dc, [0.1, 0.0, 0.3, 0.0], 0)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_gradient(rng, k):
    # inputs far from ties: input i is shifted by a different multiple of 0.5 per element
    base = f32(rng, 3, 4, lo=-0.1, hi=0.1)
    xs = [base + np.float32(0.5) * rng.permutation(12).reshape(3, 4).astype(np.float32) for _ in range(k)]
    for i in range(k):
        xs[i] = xs[i] + np.float32(0.05 * i)   # no exact ties between inputs
    check_grads(op("Max", ["x%d" % i for i in range(k)], ["y"]), xs)


def test_max_same_blob_twice_gradient(rng):
    # Max([x, x]): both uses tie, each gets dY (Caffe2's rule), so x gets 2 dY
    x, dy = f32(rng, 2, 3), f32(rng, 2, 3)
    feed(x=x, dy=dy)
    fwd = op("Max", ["x", "x"], ["y"])
    grad_ops, grad_map = core.GradientRegistry.GetBackwardPass([fwd], {"y": "dy"})
    workspace.RunOperatorOnce(fwd)
    workspace.RunOperatorsOnce(grad_ops)
    close(workspace.FetchBlob(str(grad_map["x"])), 2 * dy)


def test_max_gradient_maker():
    G = core.GradientRegistry.GetGradientForOp
    ops, g = G(op("Max", ["a", "b"], ["y"]), ["y_grad"])
    assert g == ["a_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("MaxGradient", ["y", "y_grad", "a", "b"], ["a_grad", "b_grad"])]
    with pytest.raises(ValueError, match=r"^Max gradient: the forward op computes 'b' in place"):
        G(op("Max", ["a", "b"], ["b"]), ["b_grad"])


def test_max_bad_inputs(rng):
    feed(a=f32(rng, 3, 4), b=f32(rng, 4, 3), i=np.ones((3, 4), np.int32), y=f32(rng, 3, 4))
    raises(ValueError, r"^op Max #0: input 1 blob 'b' of shape \(4, 3\) float32 must have the shape of input 0 "
                       r"blob 'a' \(3, 4\) float32$", op("Max", ["a", "b"], ["m"]))
    raises(TypeError, r"^op Max #0: input 2 blob 'i' must be float32, got \(3, 4\) int32$",
           op("Max", ["a", "a", "i"], ["m"]))
    raises(ValueError, r"^op Max #0: expects at least 1 inputs, got 0$", op("Max", [], ["m"]))
    raises(ValueError, r"^op MaxGradient #0: takes \(Y, dY, X0, \.\.\., Xk-1\) and gives \(dX0, \.\.\., dXk-1\): "
                       r"4 inputs need 2 outputs, got 1$", op("MaxGradient", ["y", "y", "a", "a"], ["da"]))
    raises(ValueError, r"^op MaxGradient #0: input 3 blob 'b' of shape \(4, 3\) float32 must have the shape of "
                       r"input 0 blob 'y' \(3, 4\) float32$",
           op("MaxGradient", ["y", "y", "a", "b"], ["da", "db"]))
    # shapes are checked when the net is created, as Sum's
    n = core.Net("max_net")
    n.Max(["a", "b"], "m")
    with pytest.raises(ValueError, match=r"^net 'max_net': op Max #0: input 1 blob 'b' of shape \(4, 3\)"):
        workspace.CreateNet(n)


# ---------------------------------------------------------------- Div
BROADCAST_CASES = [
    ((2, 3, 4), (4,), None, (1, 1, 4)),
    ((2, 3, 4), (3, 4), None, (1, 3, 4)),
    ((2, 3, 4), (3,), 1, (1, 3, 1)),
    ((2, 3, 4), (2, 3), 0, (2, 3, 1)),
    ((2, 3, 4), (1, 3, 1), 0, (1, 3, 1)),
    ((2, 3, 4), (1,), None, (1, 1, 1)),
    ((2, 3, 4), (), None, (1, 1, 1)),
    ((1,), (), None, (1,)),
    ((0, 3, 4), (3, 4), None, (1, 3, 4)),
]


def test_div_same_shape(rng):
    a, b = f32(rng, 3, 4), away_from_zero(f32(rng, 3, 4))
    feed(a=a, b=b)
    close(run("Div", ["a", "b"], ["c"]), a / b, 0)
    close(run("Div", ["a", "b"], ["b"]), a / b, 0)                   # in place on B
    feed(b=b)
    close(run("Div", ["a", "b"], ["a"]), a / b, 0)                   # in place on A


@pytest.mark.parametrize("ash,bsh,axis,bview", BROADCAST_CASES)
def test_div_broadcast(rng, ash, bsh, axis, bview):
    a, b = f32(rng, *ash), away_from_zero(f32(rng, *bsh))
    feed(a=a, b=b)
    args = {"broadcast": 1}
    if axis is not None:
        args["axis"] = axis
    ref = a / b.reshape(bview)
    close(run("Div", ["a", "b"], ["c"], **args), ref, 0)
    close(run("Div", ["a", "b"], ["a"], **args), ref, 0)

    # the gradient op against NumPy
    c = ref
    dc = f32(rng, *ash)
    feed(b=b, c=c, dc=dc)
    da, db = run("DivGradient", ["b", "c", "dc"], ["da", "db"], **args)
    close(da, dc / b.reshape(bview), 1e-6)
    red = tuple(i for i in range(len(ash)) if bview[i] == 1)
    ref_db = -(dc.astype(np.float64) * c / b.reshape(bview)).sum(axis=red, keepdims=True)
    close(db, ref_db.reshape(bsh), 1e-5)


def test_div_by_zero_is_ieee():
    feed(a=np.array([1.0, -1.0, 0.0, 1.0], np.float32), b=np.array([0.0, 0.0, 0.0, -0.0], np.float32))
    c = run("Div", ["a", "b"], ["c"])
    assert c[0] == np.inf and c[1] == -np.inf and np.isnan(c[2]) and c[3] == -np.inf


def test_one_element_shapes_for_mul_and_div():
    """The clipping chain multiplies the (1,) learning rate by a 0-d or (1,) ratio."""
    lr, r0, r1 = np.array([0.1], np.float32), np.array(0.5, np.float32), np.array([0.5], np.float32)
    feed(lr=lr, r0=r0, r1=r1)
    for kind, f in (("Mul", np.multiply), ("Div", np.divide)):
        for r in ("r0", "r1"):
            close(run(kind, ["lr", r], ["o"], broadcast=1), f(lr, workspace.FetchBlob(r)).reshape(1), 0)
        close(run(kind, ["lr", "r1"], ["o"]), f(lr, r1), 0)                 # same shape: no broadcast needed
        close(run(kind, ["r0", "r0"], ["o"]), f(r0, r0), 0)
        # a 0-d A cannot take a (1,) B: B would have more dims
        raises(ValueError, r"^op %s #0: cannot broadcast input 1 blob 'r1' of shape \(1,\) float32 to input 0 "
                           r"blob 'r0' of shape \(\) float32: it has more dims$" % kind,
               op(kind, ["r0", "r1"], ["o"], broadcast=1))
        # without broadcast=1 both forms broadcast numpy-style: (1,) with () and () with (1,) give (1,)
        close(run(kind, ["lr", "r0"], ["o"]), f(lr, r0).reshape(1), 0)
        close(run(kind, ["r0", "r1"], ["o"]), f(r0, r1).reshape(1), 0)


DIV_GRAD_CASES = [
    ((2, 3), (2, 3), {}),
    ((2, 3, 4), (3, 4), {"broadcast": 1}),
    ((2, 3, 4), (3,), {"broadcast": 1, "axis": 1}),
    ((2, 3, 4), (2, 1), {"broadcast": 1, "axis": 0}),
    ((2, 3, 4), (1,), {"broadcast": 1}),
    ((1,), (), {"broadcast": 1}),
    ((), (), {}),
]


@pytest.mark.parametrize("ash,bsh,args", DIV_GRAD_CASES)
def test_div_gradient(rng, ash, bsh, args):
    a = f32(rng, *ash)
    b = f32(rng, *bsh, lo=0.5, hi=1.5) * np.where(rng.uniform(size=bsh) < 0.5, -1, 1).astype(np.float32)
    check_grads(op("Div", ["a", "b"], ["y"], **args), [a, b])


@pytest.mark.parametrize("args", [{}, {"broadcast": 1}])
def test_div_gradient_in_place_on_a(rng, args):
    a = f32(rng, 2, 3)
    b = f32(rng, *((2, 3) if not args else (3,)), lo=0.5, hi=1.5)
    check_grads(op("Div", ["a", "b"], ["a"], **args), [a, b])


def test_div_same_blob_twice_gradient(rng):
    x, dy = f32(rng, 2, 3, lo=0.5, hi=1.5), f32(rng, 2, 3)
    feed(x=x, dy=dy)
    fwd = op("Div", ["x", "x"], ["y"])
    grad_ops, grad_map = core.GradientRegistry.GetBackwardPass([fwd], {"y": "dy"})
    workspace.RunOperatorOnce(fwd)
    workspace.RunOperatorsOnce(grad_ops)
    close(workspace.FetchBlob(str(grad_map["x"])), np.zeros((2, 3)), 1e-6)   # d(x / x) = 0


def test_div_gradient_maker():
    G = core.GradientRegistry.GetGradientForOp
    ops, g = G(op("Div", ["a", "b"], ["y"], broadcast=1, axis=1), ["y_grad"])
    assert g == ["a_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("DivGradient", ["b", "y", "y_grad"], ["a_grad", "b_grad"])]
    assert sorted((a.name, a.i) for a in ops[0].arg) == [("axis", 1), ("broadcast", 1)]
    with pytest.raises(ValueError, match=r"^Div gradient: the forward op computes 'b' in place"):
        G(op("Div", ["a", "b"], ["b"]), ["b_grad"])


def test_div_bad_inputs(rng):
    feed(a=f32(rng, 2, 3, 4), b=f32(rng, 3, 5), c=f32(rng, 3, 4), i=np.ones((3, 4), np.int32))
    raises(ValueError, r"^op Div #0: cannot broadcast input 1 blob 'b' of shape \(3, 5\) float32 to input 0 "
                       r"blob 'a' of shape \(2, 3, 4\) float32 at axis 1", op("Div", ["a", "b"], ["y"], broadcast=1))
    raises(ValueError, r"^op Div #0: input 0 blob 'a' of shape \(2, 3, 4\) float32 and input 1 blob 'b' of "
                       r"shape \(3, 5\) float32 do not broadcast \(numpy-style, dims aligned from the "
                       r"last\): dim 2 of 'a' is 4 but dim 1 of 'b' is 5$", op("Div", ["a", "b"], ["y"]))
    # Div takes float32 or int32 (one dtype for both): a mix names input 0's dtype
    raises(TypeError, r"^op Div #0: input 1 blob 'i' \(3, 4\) int32 must have the dtype of input 0 blob 'c' "
                      r"\(3, 4\) float32$",
           op("Div", ["c", "i"], ["y"]))
    raises(ValueError, r"^op Div #0: argument 'axis' needs broadcast=1$", op("Div", ["a", "c"], ["y"], axis=1))
    raises(ValueError, r"^op Div #0: output blob 'c' is input 1 of shape \(3, 4\) float32",
           op("Div", ["a", "c"], ["c"], broadcast=1))
    feed(dc=f32(rng, 2, 3, 4), cc=f32(rng, 2, 3, 4), dc5=f32(rng, 5))
    raises(ValueError, r"^op DivGradient #0: input 2 blob 'dc5' of shape \(5,\) float32 must have the shape of "
                       r"input 1 blob 'cc' \(2, 3, 4\) float32$",
           op("DivGradient", ["c", "cc", "dc5"], ["da", "db"], broadcast=1))
    raises(ValueError, r"^op DivGradient #0: cannot broadcast input 0 blob 'b'",
           op("DivGradient", ["b", "cc", "dc"], ["da", "db"], broadcast=1))
    # shapes are checked when the net is created, as Mul's
    n = core.Net("div_net")
    n.Div(["a", "b"], "y")
    with pytest.raises(ValueError, match=r"^net 'div_net': op Div #0: input 0 blob 'a' of shape \(2, 3, 4\) "
                                         r"float32 and input 1 blob 'b' of shape \(3, 5\) float32 "
                                         r"do not broadcast"):
        workspace.CreateNet(n)


# ---------------------------------------------------------------- gradient clipping by the global norm
@pytest.mark.parametrize("clip_norm", [0.1, 100.0])
@pytest.mark.parametrize("ratio_shape", [(), (1,)])
def test_clip_by_global_norm_chain(rng, clip_norm, ratio_shape):
    """Caffe2's recipe: SumSqrElements per gradient -> Sum -> Pow(0.5) -> Max([norm, clip]) ->
    Div([clip, max]) -> Mul([lr, ratio], broadcast=1); the (1,) learning rate times a 0-d or (1,) ratio."""
    grads = [f32(rng, 3, 4), f32(rng, 5), f32(rng, 2, 2, 2)]
    feed(g0=grads[0], g1=grads[1], g2=grads[2], lr=np.array([-0.1], np.float32),
         clip=np.full(ratio_shape, clip_norm, np.float32))
    n = core.Net("clip")
    sq = [n.SumSqrElements("g%d" % i, "sq%d" % i) for i in range(3)]
    total = n.Sum(sq, "total")
    if ratio_shape == (1,):
        total = n.Reshape(total, ["total1", "total_old"], shape=[1])[0]
    norm = n.Pow(total, "norm", exponent=0.5)
    mx = n.Max([norm, "clip"], "mx")
    ratio = n.Div(["clip", mx], "ratio")
    n.Mul(["lr", ratio], "lr_clipped", broadcast=1)
    workspace.RunNetOnce(n)
    g_norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    ref = -0.1 * clip_norm / max(g_norm, clip_norm)
    out = workspace.FetchBlob("lr_clipped")
    assert out.shape == (1,)
    close(out, [ref], 1e-6)
    assert workspace.FetchBlob("norm").shape == ratio_shape


# ---------------------------------------------------------------- EnsureClipped
@pytest.mark.parametrize("args,lo,hi", [(dict(min=0.0), 0.0, np.inf), (dict(max=0.25), -np.inf, 0.25),
                                        (dict(min=-0.5, max=0.5), -0.5, 0.5), ({}, -np.inf, np.inf)])
def test_ensure_clipped_dense(rng, args, lo, hi):
    x = f32(rng, 5, 4)
    x[0, 0] = np.nan
    feed(x=x)
    y = run("EnsureClipped", ["x"], ["y"], **args)
    np.testing.assert_array_equal(y, np.clip(x, lo, hi))  # NaN stays NaN, as Clip
    y = run("EnsureClipped", ["x"], ["x"], **args)  # in place
    np.testing.assert_array_equal(y, np.clip(x, lo, hi))


@pytest.mark.parametrize("idx", [[0, 3], [4, 4, 1], [], [[1, 2]]])
def test_ensure_clipped_sparse_rows_in_place(rng, idx):
    x = f32(rng, 5, 2, 3)
    idx = i32(idx)
    grad = f32(rng, *(idx.shape + (2, 3)))
    feed(p=x, i=idx, g=grad)
    y = run("EnsureClipped", ["p", "i", "g"], ["p"], min=-0.2, max=0.3)
    ref = x.copy()
    rows = np.unique(idx.ravel())
    ref[rows] = np.clip(x[rows], -0.2, 0.3)
    np.testing.assert_array_equal(y, ref)


def test_ensure_clipped_bad_input(rng):
    feed(p=f32(rng, 5, 3), i=i32([0, 5]), g=f32(rng, 2, 3), g4=f32(rng, 2, 4), fi=np.zeros(2, np.float32))
    raises(IndexError, r"^op EnsureClipped #0: input 1 blob 'i': index 5 at position 1 is out of range "
                       r"\[0, 5\)",
           op("EnsureClipped", ["p", "i", "g"], ["p"], min=0.0))
    raises(ValueError, r"^op EnsureClipped #0: input 2 blob 'g4' \(the gradient\) must have shape \(2, 3\)",
           op("EnsureClipped", ["p", "i", "g4"], ["p"], min=0.0))
    raises(TypeError, r"^op EnsureClipped #0: input 1 blob 'fi' must be int32 indices",
           op("EnsureClipped", ["p", "fi", "g"], ["p"], min=0.0))
    raises(ValueError, r"^op EnsureClipped #0: output 0 blob 'q' must be input 0 blob 'p' \(this op updates "
                       r"it in place\)$", op("EnsureClipped", ["p", "i", "g"], ["q"], min=0.0))
    raises(ValueError, r"^op EnsureClipped #0: takes param alone or \(param, indices, grad\), got 2 inputs$",
           op("EnsureClipped", ["p", "i"], ["p"]))
    raises(ValueError, r"^op EnsureClipped #0: argument 'min' \(1\) must be <= argument 'max' \(0\)$",
           op("EnsureClipped", ["p"], ["q"], min=1.0, max=0.0))
    feed(n=i32([1, 2]))
    raises(TypeError, r"^op EnsureClipped #0: input 0 blob 'n' must be float32",
           op("EnsureClipped", ["n"], ["q"]))
    # nothing was written
    assert not np.isnan(workspace.FetchBlob("p")).any()
    assert core.GradientRegistry.GetGradientForOp(op("EnsureClipped", ["p"], ["q"]), ["gq"]) == ([], [None])


# ---------------------------------------------------------------- ClipTensorByScaling
@pytest.mark.parametrize("val,thr,add", [(3.0, 1.5, None), (1.0, 1.5, None), (1.5, 1.5, None),
                                         (4.0, 1.0, 2.0), (4.0, 2.0, 0.5), (np.inf, 1.0, None),
                                         (np.nan, 1.0, None)])
def test_clip_tensor_by_scaling(rng, val, thr, add):
    x = f32(rng, 4, 3)
    feed(x=x, v=np.float32(val), a=np.array([add or 1.0], np.float32))
    ins = ["x", "v"] + (["a"] if add is not None else [])
    final = np.float32(thr) * np.float32(add or 1.0)
    ref = x * (final / np.float32(val)) if val > final else x
    y = run("ClipTensorByScaling", ins, ["y"], threshold=thr)
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    y = run("ClipTensorByScaling", ins, ["x"], threshold=thr)  # in place
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    feed(e=np.zeros((0, 3), np.float32))
    assert run("ClipTensorByScaling", ["e", "v"], ["ey"], threshold=thr).shape == (0, 3)


def test_clip_tensor_by_scaling_bad_input(rng):
    feed(x=f32(rng, 4, 3), v=np.float32(2.0), v2=f32(rng, 2), a0=np.array([0.0], np.float32),
         an=np.array([np.nan], np.float32), vi=i32([2]))
    raises(ValueError, r"^op ClipTensorByScaling #0: argument 'threshold' \(0\) must be > 0$",
           op("ClipTensorByScaling", ["x", "v"], ["y"]))
    raises(ValueError, r"^op ClipTensorByScaling #0: argument 'threshold' \(nan\) must be > 0$",
           op("ClipTensorByScaling", ["x", "v"], ["y"], threshold=float("nan")))
    raises(ValueError, r"^op ClipTensorByScaling #0: input 1 blob 'v2' \(the value\) must hold one value, "
                       r"got \(2,\) float32$", op("ClipTensorByScaling", ["x", "v2"], ["y"], threshold=1.0))
    raises(TypeError, r"^op ClipTensorByScaling #0: input 1 blob 'vi' must be float32",
           op("ClipTensorByScaling", ["x", "vi"], ["y"], threshold=1.0))
    for a, shown in (("a0", "0"), ("an", "nan")):
        raises(ValueError, r"^op ClipTensorByScaling #0: input 2 blob '%s' \(additional_threshold\) must be "
                           r"> 0, got %s$" % (a, shown),
               op("ClipTensorByScaling", ["x", "v", a], ["y"], threshold=1.0))
    assert isinstance(workspace.FetchBlob("y"), bytes)  # nothing was written
    o = op("ClipTensorByScaling", ["x", "v"], ["y"], threshold=1.0)
    assert core.GradientRegistry.GetGradientForOp(o, ["gy"]) == ([], [None, None])


def test_ensure_clipped_checked_at_net_creation(rng):
    p = f32(rng, 5, 3)
    feed(p=p, i=i32([0, 1]), g=f32(rng, 2, 4))
    net = core.Net("ec_early")
    net.EnsureClipped(["p", "i", "g"], ["p"], min=0.0)
    with pytest.raises(ValueError, match=r"^net 'ec_early': op EnsureClipped #0: input 2 blob 'g' \(the "
                                         r"gradient\) must have shape \(2, 3\)"):
        workspace.CreateNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("p"), p)
