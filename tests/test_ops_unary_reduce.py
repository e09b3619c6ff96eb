"""Elementwise ops and reductions of csrc/ops/unary.c and csrc/ops/reduce.c (Clip, Abs, Sqrt,
LeakyRelu, Elu, Softsign, StopGradient, Min, Mean, Reduce{Sum,Mean,Max,Min},
Reduce{Front,Back}{Sum,Mean}, ArgMax, ArgMin, RowWiseArgMax, Accuracy) and their gradient ops: NumPy
references for every argument form, finite-difference gradients, NaN rules, bad input with exact
messages, and StopGradient cutting the gradient in a Net and in a RecurrentNetwork step net."""

import itertools

import numpy as np
import pytest

from recurrent import core, gradient_checker, workspace
from recurrent import recurrent as rnn
from op_helpers import assert_must_not_differentiate
from test_ops_math import close, f32, feed, op, run  # the same helpers


def check_grads(o, inputs, indices=None, stepsize=1e-3, threshold=1e-2):
    checker = gradient_checker.GradientChecker(stepsize, threshold)
    for i in (range(len(inputs)) if indices is None else indices):
        ok, grad, est = checker.CheckSimple(o, inputs, i, [0])
        assert ok, "%s input %d: analytic %s vs numeric %s" % (o.type, i, grad, est)


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


def away(x, points=(0.0,), margin=0.05):
    """x with the entries within margin of a kink moved off it (finite differences)."""
    x = x.copy()
    for p in points:
        near = np.abs(x - p) < margin
        x[near] = p + np.where(x[near] >= p, 2, -2) * margin
    return x


# ================================================================ elementwise forward
ELEMENTWISE = [
    ("Clip", dict(min=-0.3, max=0.4), lambda x: np.clip(x, -0.3, 0.4)),
    ("Clip", dict(min=-0.3), lambda x: np.maximum(x, -0.3)),
    ("Clip", dict(max=0.2), lambda x: np.minimum(x, 0.2)),
    ("Clip", {}, lambda x: x),
    ("Abs", {}, np.abs),
    ("LeakyRelu", {}, lambda x: np.where(x > 0, x, 0.01 * x)),
    ("LeakyRelu", dict(alpha=0.3), lambda x: np.where(x > 0, x, 0.3 * x)),
    ("LeakyRelu", dict(alpha=-0.5), lambda x: np.where(x > 0, x, -0.5 * x)),
    ("Elu", {}, lambda x: np.where(x > 0, x, np.expm1(x))),
    ("Elu", dict(alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("Softsign", {}, lambda x: x / (1 + np.abs(x))),
]


@pytest.mark.parametrize("type_,args,ref", ELEMENTWISE)
@pytest.mark.parametrize("shape", [(3, 4), (2, 0, 3), ()])
def test_elementwise(rng, type_, args, ref, shape):
    x = f32(rng, *shape, lo=-2, hi=2)
    feed(x=x)
    close(run(type_, ["x"], ["y"], **args), ref(x.astype(np.float64)))
    # in place
    run(type_, ["x"], ["x"], **args)
    close(workspace.FetchBlob("x"), ref(x.astype(np.float64)))


def test_sqrt(rng):
    x = f32(rng, 5, 3, lo=0, hi=4)
    feed(x=x)
    close(run("Sqrt", ["x"], ["y"]), np.sqrt(x))
    feed(x=np.array([-1.0, 0.0, np.inf], np.float32))
    y = run("Sqrt", ["x"], ["y"])
    assert np.isnan(y[0]) and y[1] == 0 and y[2] == np.inf


def test_elementwise_nan():
    x = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0], np.float32)
    feed(x=x)
    y = run("Clip", ["x"], ["y"], min=-1.0, max=1.0)
    assert np.isnan(y[0]) and list(y[1:3]) == [-1, 1]
    y = run("Clip", ["x"], ["y"])  # no bounds: infinities are kept (Caffe2 clipped them to +-FLT_MAX)
    assert list(y[1:3]) == [-np.inf, np.inf]
    for t in ("Abs", "LeakyRelu", "Elu", "Softsign"):
        assert np.isnan(run(t, ["x"], ["y"])[0]), t
    close(run("Softsign", ["x"], ["y"])[1:], [-1, 1, 0, 0])


# ================================================================ elementwise gradients
@pytest.mark.parametrize("type_,args,kinks", [
    ("Clip", dict(min=-0.3, max=0.4), (-0.3, 0.4)),
    ("Clip", {}, ()),
    ("Abs", {}, (0.0,)),
    ("Sqrt", {}, ()),
    ("LeakyRelu", {}, (0.0,)),
    ("LeakyRelu", dict(alpha=0.2), (0.0,)),
    ("Elu", {}, (0.0,)),
    ("Elu", dict(alpha=0.7), (0.0,)),
    ("Softsign", {}, (0.0,)),
])
def test_elementwise_gradient(rng, type_, args, kinks):
    lo = 0.2 if type_ == "Sqrt" else -1.5
    x = away(f32(rng, 3, 4, lo=lo, hi=1.5), kinks)
    check_grads(op(type_, ["x"], ["y"], **args), [x])


def test_elementwise_gradient_ops_direct(rng):
    y = np.array([-0.3, -0.1, 0.0, 0.2, 0.4, np.nan], np.float32)
    dy = np.arange(1, 7, dtype=np.float32)
    feed(y=y, dy=dy)
    close(run("ClipGradient", ["y", "dy"], ["dx"], min=-0.3, max=0.4), [0, 2, 3, 4, 0, 0])
    close(run("AbsGradient", ["y", "dy"], ["dx"]), [-1, -2, 0, 4, 5, 0])
    close(run("LeakyReluGradient", ["y", "dy"], ["dx"], alpha=0.5), [0.5, 1, 1.5, 4, 5, 3])
    close(run("EluGradient", ["y", "dy"], ["dx"], alpha=1.0), [0.7, 1.8, 3, 4, 5, np.nan])
    close(run("SoftsignGradient", ["y", "dy"], ["dx"])[:5], dy[:5] / (1 + np.abs(y[:5])) ** 2)
    # dX over dY
    run("ClipGradient", ["y", "dy"], ["dy"], min=-0.3, max=0.4)
    close(workspace.FetchBlob("dy"), [0, 2, 3, 4, 0, 0])


def test_sqrt_gradient_is_scale_then_div():
    o = op("Sqrt", ["x"], ["y"])
    ops, g = core.GradientRegistry.GetGradientForOp(o, ["y_grad"])
    assert [p.type for p in ops] == ["Scale", "Div"] and g == ["x_grad"]
    assert list(ops[1].input) == ["x_grad", "y"]


def test_gradient_of_in_place_abs_and_softsign_refused():
    for t in ("Abs", "Softsign"):
        with pytest.raises(ValueError, match="%s gradient: the forward op ran in place on 'x'" % t):
            core.GradientRegistry.GetGradientForOp(op(t, ["x"], ["x"]), ["x_grad"])
    # the ones reading Y are fine in place
    ops, _ = core.GradientRegistry.GetGradientForOp(op("Elu", ["x"], ["x"]), ["x_grad"])
    assert ops[0].type == "EluGradient"


# ================================================================ StopGradient
def test_stop_gradient_forward(rng):
    x = f32(rng, 2, 3)
    feed(x=x, i=np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(run("StopGradient", ["x"], ["y"]), x)
    np.testing.assert_array_equal(run("StopGradient", ["i"], ["j"]), np.arange(4))
    run("StopGradient", ["x"], ["x"])
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x)


@pytest.mark.parametrize("inplace", [False, True])
def test_stop_gradient_in_net(rng, inplace):
    """loss = sum(a * StopGradient(a * b)) + sum(b): a gets the gradient of the first
    factor only; b only its direct one (1), nothing through the stopped product."""
    net = core.Net("sg")
    p = net.Mul(["a", "b"], "p")
    s = net.StopGradient(p, p if inplace else "s")
    q = net.Mul(["a", s], "q")
    l1 = net.SumElements(q, "l1")
    l2 = net.SumElements("b", "l2")
    loss = net.Sum([l1, l2], "loss")
    gmap = net.AddGradientOperators([loss])
    types = [o.type for o in net.Proto().op]
    assert "StopGradient" in types
    a, b = f32(rng, 3, 2), f32(rng, 3, 2)
    feed(a=a, b=b)
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob(str(gmap["a"])), a * b)
    close(workspace.FetchBlob(str(gmap["b"])), np.ones_like(b))
    assert gmap.get("p") is None or inplace


def test_stop_gradient_only_path_gives_no_gradient(rng):
    net = core.Net("sg2")
    s = net.StopGradient("a", "s")
    loss = net.SumElements(s, "loss")
    gmap = net.AddGradientOperators([loss])
    assert gmap.get("a") is None


def test_stop_gradient_in_step_net(rng):
    """o_t = x_t * StopGradient(o_{t-1}): the input gets G_t * o_{t-1}, with no recurrent term."""
    net = core.Net("outer")
    cell = core.Net("cell_sg")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    s = cell.StopGradient(prev, "prev_stopped")
    out = cell.Mul([input_t, s], "output_t")
    cell.AddExternalOutput(out)
    outs = rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="r")
    g = net.Clone("g")
    gmap = g.AddGradientOperators({str(outs[0]): str(outs[0]) + "_grad"})
    T, N, D = 4, 2, 3
    x = f32(rng, T, N, D, lo=0.5, hi=1.5)
    init = f32(rng, 1, N, D, lo=0.5, hi=1.5)
    G = f32(rng, T, N, D)
    feed(input=x, init=init)
    workspace.FeedBlob(str(outs[0]) + "_grad", G)
    workspace.RunNetOnce(g)
    o = np.zeros((T + 1, N, D))
    o[0] = init[0]
    for t in range(T):
        o[t + 1] = x[t] * o[t]
    close(workspace.FetchBlob(str(outs[0])), o[1:], tol=1e-4)
    close(workspace.FetchBlob(str(gmap["input"])), G * o[:-1], tol=1e-4)
    ig = gmap.get("init")
    if ig is not None and workspace.HasBlob(str(ig)):
        np.testing.assert_array_equal(workspace.FetchBlob(str(ig)), 0)


# ================================================================ Min, Mean
@pytest.mark.parametrize("n", [1, 2, 3])
def test_min_mean(rng, n):
    xs = [f32(rng, 3, 4) for _ in range(n)]
    names = ["x%d" % i for i in range(n)]
    feed(**dict(zip(names, xs)))
    close(run("Min", names, ["y"]), np.minimum.reduce(xs))
    close(run("Mean", names, ["m"]), np.mean(np.array(xs, np.float64), axis=0))
    run("Mean", names, [names[-1]])  # in place
    close(workspace.FetchBlob(names[-1]), np.mean(np.array(xs, np.float64), axis=0))


def test_min_nan_and_ties():
    feed(a=np.array([np.nan, 1, 2, 3], np.float32), b=np.array([0, np.nan, 2, -1], np.float32))
    y = run("Min", ["a", "b"], ["y"])
    assert np.isnan(y[0]) and np.isnan(y[1]) and list(y[2:]) == [2, -1]
    feed(y=y, dy=np.array([1, 2, 3, 4], np.float32))
    da, db = run("MinGradient", ["y", "dy", "a", "b"], ["da", "db"])
    close(da, [0, 0, 3, 0])
    close(db, [0, 0, 3, 4])  # ties: both get dY


def test_min_mean_gradients(rng):
    xs = [f32(rng, 2, 3) for _ in range(3)]
    check_grads(op("Min", ["a", "b", "c"], ["y"]), xs)
    check_grads(op("Mean", ["a", "b", "c"], ["y"]), xs)
    feed(dy=np.array([3.0, 6.0], np.float32))
    dx = run("MeanGradient", ["dy"], ["d0", "d1", "d2"])
    for d in dx:
        close(d, [1, 2])
    # dX0 over dY, as Caffe2's schema (AllowInplace {0, 0}): the other outputs still read dY whole
    run("MeanGradient", ["dy"], ["dy", "d1", "d2"])
    for name in ("dy", "d1", "d2"):
        close(workspace.FetchBlob(name), [1, 2])
    with pytest.raises(ValueError, match=r"op MeanGradient #0: input 0 and output 1 are the same blob 'dy'"):
        workspace.RunOperatorOnce(op("MeanGradient", ["dy"], ["d0", "dy"]))


def test_mean_in_place_gradient_in_a_net(rng):
    """Mean(X0, X1) -> X0, as Caffe2's mean_op_test with in_place: its gradient is MeanGradient(X0_grad) ->
    (X0_grad, X1_grad), in place."""
    xs = [f32(rng, 3, 4) for _ in range(2)]
    check_grads(op("Mean", ["x0", "x1"], ["x0"]), xs, indices=(0, 1))


def test_mean_is_in_double():
    big = np.full(4, 1e8, np.float32)
    feed(a=big, b=np.ones(4, np.float32), c=-big)
    close(run("Mean", ["a", "b", "c"], ["y"]), np.full(4, 1 / 3))


def mean_bcast_ref(*xs):
    return np.sum(np.broadcast_arrays(*[x.astype(np.float64) for x in xs]), axis=0) / len(xs)


@pytest.mark.parametrize("shapes", [[(2, 3, 4, 5), (1, 4, 5), (2, 3, 1, 1), (5,)], [(3, 1), (1, 4)],
                                    [(4,), ()], [(2, 1, 3), (2, 3), (1, 1, 1)], [(1, 1), (0,)]])
def test_mean_broadcast(rng, shapes):
    """numpy-style broadcasting (newer Caffe2's Mean): the same double sum in input order, exactly."""
    xs = [np.asarray(rng.standard_normal(s), np.float32) for s in shapes]
    names = ["x%d" % i for i in range(len(xs))]
    feed(**dict(zip(names, xs)))
    y = run("Mean", names, ["y"])
    ref = mean_bcast_ref(*xs).astype(np.float32)
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, ref)


def test_mean_broadcast_in_place(rng):
    xs = [f32(rng, 2, 3, 4), f32(rng, 3, 1), f32(rng, 4)]
    feed(a=xs[0], b=xs[1], c=xs[2])
    run("Mean", ["b", "a", "c"], ["a"])  # output over the input of the result's shape, not the first
    np.testing.assert_array_equal(workspace.FetchBlob("a"), mean_bcast_ref(*xs).astype(np.float32))
    raises(ValueError, r"op Mean #0: output blob 'b' is input 0 of shape \(3, 1\) float32, but the inputs "
           r"broadcast to another shape", op("Mean", ["b", "a", "c"], ["b"]))
    np.testing.assert_array_equal(workspace.FetchBlob("b"), xs[1])  # untouched


def test_mean_equal_shapes_match_broadcast_walk(rng):
    """The equal-shape path (blocked) and the broadcast walk give the same bits for the same sums."""
    xs = [f32(rng, 3, 700) for _ in range(3)]
    feed(a=xs[0], b=xs[1], c=xs[2], c1=xs[2][None])
    same = run("Mean", ["a", "b", "c"], ["y"])
    walked = run("Mean", ["a", "b", "c1"], ["y1"])
    np.testing.assert_array_equal(same, walked[0])
    np.testing.assert_array_equal(same, mean_bcast_ref(*xs).astype(np.float32))


@pytest.mark.parametrize("shapes", [[(2, 3, 4), (3, 1), (4,)], [(1, 4), (3, 1)], [(3,), ()]])
def test_mean_broadcast_gradient(rng, shapes):
    xs = [np.asarray(rng.standard_normal(s), np.float32) for s in shapes]
    names = ["x%d" % i for i in range(len(xs))]
    check_grads(op("Mean", names, ["y"]), xs)
    ops, g = core.GradientRegistry.GetGradientForOp(op("Mean", names, ["y"]), ["y_grad"])
    assert ops[0].type == "MeanGradient" and list(ops[0].input) == ["y_grad"] + names
    # direct: dXi = dY / k summed over the dims where Xi was repeated (in double)
    dy = np.asarray(rng.standard_normal(mean_bcast_ref(*xs).shape), np.float32)
    feed(dy=dy, **dict(zip(names, xs)))
    dxs = run("MeanGradient", ["dy"] + names, ["d%d" % i for i in range(len(xs))])
    for x, dx in zip(xs, dxs):
        lead = dy.ndim - x.ndim
        axes = tuple(range(lead)) + tuple(lead + k for k in range(x.ndim)
                                          if x.shape[k] == 1 and dy.shape[lead + k] != 1)
        ref = dy.astype(np.float64).sum(axis=axes).reshape(x.shape) * np.float32(1.0 / len(xs))
        assert dx.shape == x.shape
        close(dx, ref, tol=1e-6)


def test_mean_gradient_with_inputs_of_dy_shape_is_legacy(rng):
    """MeanGradient(dY, X0, X1) with the X of dY's shape gives the bits of MeanGradient(dY); dX0 over dY."""
    dy = f32(rng, 3, 4)
    feed(dy=dy, a=f32(rng, 3, 4), b=f32(rng, 3, 4), e=np.zeros((1, 1), np.float32))
    legacy = run("MeanGradient", ["dy"], ["l0", "l1"])
    new = run("MeanGradient", ["dy", "a", "b"], ["n0", "n1"])
    for l, n in zip(legacy, new):
        np.testing.assert_array_equal(l, n)
    run("MeanGradient", ["dy", "a", "e"], ["dy", "n1"])
    np.testing.assert_array_equal(workspace.FetchBlob("dy"), legacy[0])
    close(workspace.FetchBlob("n1"), [[dy.astype(np.float64).sum() / 2]], tol=1e-6)


def test_mean_broadcast_empty():
    """(1, 1) with (0,): the result is (1, 0) and dX of the (1, 1) input is 0."""
    feed(a=np.ones((1, 1), np.float32), b=np.ones(0, np.float32))
    assert run("Mean", ["a", "b"], ["c"]).shape == (1, 0)
    feed(dc=np.zeros((1, 0), np.float32))
    da, db = run("MeanGradient", ["dc", "a", "b"], ["da", "db"])
    assert da.shape == (1, 1) and db.shape == (0,)
    np.testing.assert_array_equal(da, 0)
    check_grads(op("Mean", ["a", "b"], ["c"]), [np.ones((1, 1), np.float32), np.ones(0, np.float32)], (0,))


def test_mean_broadcast_size_overflow():
    huge = [np.zeros((1 << 20, 1), np.float32), np.zeros((1 << 20,), np.float32)]
    feed(h0=huge[0], h1=huge[1])  # 2^40 floats: 4 TiB
    raises(MemoryError, r"op Mean #0: output 0 blob 'y'", op("Mean", ["h0", "h1"], ["y"]))


# ================================================================ Reduce*
AXES = [None, [], [0], [1], [-1], [0, 2], [2, 0], [-3, -1], [0, 1, 2]]
REFS = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min,
        "ReduceL1": lambda x, axis, keepdims: np.abs(x).sum(axis=axis, keepdims=keepdims),
        "ReduceL2": lambda x, axis, keepdims: np.sqrt((x * x).sum(axis=axis, keepdims=keepdims))}


@pytest.mark.parametrize("type_", sorted(REFS))
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdims", [None, 0, 1])
def test_reduce(rng, type_, axes, keepdims):
    x = f32(rng, 2, 3, 4)
    feed(x=x)
    args = {}
    if axes is not None:
        args["axes"] = axes
    if keepdims is not None:
        args["keepdims"] = keepdims
    y = run(type_, ["x"], ["y"], **args)
    ax = tuple(range(3)) if not axes else tuple(a % 3 for a in axes)
    ref = REFS[type_](x.astype(np.float64), axis=ax, keepdims=keepdims in (None, 1))
    close(y, ref)


@pytest.mark.parametrize("type_", sorted(REFS))
def test_reduce_gradient(rng, type_):
    x = f32(rng, 2, 3, 4)
    for axes, keep in [([1], 1), ([0, 2], 0), ([], 1), ([-1], 0)]:
        check_grads(op(type_, ["x"], ["y"], axes=axes, keepdims=keep), [x])


def test_reduce_l1_l2_gradient_at_zero():
    """L1's gradient is dY sign(X) (0 at 0), L2's dY X / Y, 0 where the norm Y is 0 (a subgradient;
    Caffe2 gave dY there)."""
    x = np.array([[0.0, 0.0], [3.0, -4.0], [0.0, -2.0]], np.float32)
    feed(x=x, dy=np.array([[2.0], [5.0], [1.0]], np.float32))
    feed(y1=run("ReduceL1", ["x"], ["y1"], axes=[1]), y2=run("ReduceL2", ["x"], ["y2"], axes=[1]))
    close(run("ReduceL1Gradient", ["dy", "x", "y1"], ["dx"], axes=[1]), [[0, 0], [5, -5], [0, -1]])
    close(run("ReduceL2Gradient", ["dy", "x", "y2"], ["dx"], axes=[1]), [[0, 0], [3, -4], [0, -1]])
    assert workspace.FetchBlob("y2").ravel().tolist() == [0, 5, 2]


def test_reduce_max_min_ties_and_nan():
    x = np.array([[1, 3, 3], [np.nan, 0, 5]], np.float32)
    feed(x=x)
    y = run("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)
    assert y[0] == 3 and np.isnan(y[1])
    close(run("ReduceMin", ["x"], ["m"], axes=[0], keepdims=0)[1:], [0, 3])
    assert np.isnan(workspace.FetchBlob("m")[0])
    feed(dy=np.array([10, 20], np.float32))
    dx = run("ReduceMaxGradient", ["dy", "x", "y"], ["dx"], axes=[1], keepdims=0)
    close(dx, [[0, 10, 10], [0, 0, 0]])  # both tied maxima get dY; a NaN row gets nothing


def test_reduce_empty():
    feed(x=np.zeros((2, 0, 3), np.float32))
    close(run("ReduceSum", ["x"], ["y"], axes=[1]), np.zeros((2, 1, 3)))
    assert np.isnan(run("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)).all()
    assert run("ReduceMax", ["x"], ["y"], axes=[0], keepdims=0).shape == (0, 3)
    raises(ValueError, r"op ReduceMax #0: input 0 blob 'x' \(2, 0, 3\) float32: the maximum of 0 elements is "
           r"undefined \(a reduced dim has size 0\)", op("ReduceMax", ["x"], ["y"], axes=[1]))


def test_reduce_sum_is_in_double_and_ordered():
    x = np.array([1e8, 1, -1e8, 1], np.float32)
    feed(x=x)
    close(run("ReduceSum", ["x"], ["y"], keepdims=0), 2.0)
    assert run("ReduceSum", ["x"], ["y"], keepdims=0).shape == ()


@pytest.mark.parametrize("type_,front,mean", [
    ("ReduceFrontSum", True, False), ("ReduceFrontMean", True, True),
    ("ReduceBackSum", False, False), ("ReduceBackMean", False, True)])
@pytest.mark.parametrize("nrd", [None, 0, 1, 2, 3])
def test_reduce_front_back(rng, type_, front, mean, nrd):
    x = f32(rng, 2, 3, 4)
    feed(x=x)
    args = {} if nrd is None else dict(num_reduce_dim=nrd)
    k = 1 if nrd is None else nrd
    ax = tuple(range(k)) if front else tuple(range(3 - k, 3))
    ref = (np.mean if mean else np.sum)(x.astype(np.float64), axis=ax)
    close(run(type_, ["x"], ["y"], **args), ref)
    check_grads(op(type_, ["x"], ["y"], **args), [x])


def test_reduce_gradient_op_inputs():
    ops, g = core.GradientRegistry.GetGradientForOp(op("ReduceMax", ["x"], ["y"], axes=[1]), ["y_grad"])
    assert ops[0].type == "ReduceMaxGradient" and g == ["x_grad"]
    assert list(ops[0].input) == ["y_grad", "x", "y"]
    ops, g = core.GradientRegistry.GetGradientForOp(op("ReduceBackMean", ["x"], ["y"]), ["y_grad"])
    assert ops[0].type == "ReduceBackMeanGradient" and list(ops[0].input) == ["y_grad", "x"]


# ================================================================ ArgMax / ArgMin
@pytest.mark.parametrize("type_,ref", [("ArgMax", np.argmax), ("ArgMin", np.argmin)])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -3])
@pytest.mark.parametrize("keepdims", [None, 0, 1])
def test_arg(rng, type_, ref, axis, keepdims):
    x = rng.randint(0, 3, (3, 4, 5)).astype(np.float32)  # many ties: the first position wins
    feed(x=x)
    args = {}
    if axis is not None:
        args["axis"] = axis
    if keepdims is not None:
        args["keepdims"] = keepdims
    y = run(type_, ["x"], ["y"], **args)
    assert y.dtype == np.int32
    want = ref(x, axis=-1 if axis is None else axis, keepdims=keepdims in (None, 1))
    np.testing.assert_array_equal(y, want)


def test_arg_nan():
    x = np.array([[1, np.nan, 5, np.nan], [np.nan, 2, 0, 1], [3, 3, -1, -1]], np.float32)
    feed(x=x)
    np.testing.assert_array_equal(run("ArgMax", ["x"], ["y"], keepdims=0), np.argmax(x, axis=-1))
    np.testing.assert_array_equal(run("ArgMin", ["x"], ["y"], keepdims=0), np.argmin(x, axis=-1))


# ================================================================ RowWiseArgMax
@pytest.mark.parametrize("shape", [(4, 5), (1, 1), (6, 1), (1, 7), (0, 3), (0, 0), (30, 200)])
def test_rowwise_argmax(rng, shape):
    x = rng.randint(0, 3, shape).astype(np.float32)  # many ties: the first position wins, as Caffe2's doc
    feed(x=x)
    y = run("RowWiseArgMax", ["x"], ["y"])
    assert y.dtype == np.int32 and y.shape == (shape[0], 1)
    if shape[0]:
        np.testing.assert_array_equal(y, np.argmax(x, axis=1)[:, None])
    # the same as ArgMax over axis 1 with keepdims
    if x.size:
        np.testing.assert_array_equal(y, run("ArgMax", ["x"], ["a"], axis=1))


def test_rowwise_argmax_one_column_and_nan():
    """D = 1 gives 0 (Caffe2 never wrote the index then); NaN ranks above every number, the first NaN wins
    (np.argmax and this library's ArgMax; Caffe2 compared with > only)."""
    feed(x=np.array([[5.0], [-1.0], [np.nan]], np.float32))
    np.testing.assert_array_equal(run("RowWiseArgMax", ["x"], ["y"]), [[0], [0], [0]])
    x = np.array([[1, np.nan, 5, np.nan], [np.nan, 2, 0, 1], [3, 3, -1, -1], [-np.inf, -np.inf, -np.inf, 0]],
                 np.float32)
    feed(x=x)
    np.testing.assert_array_equal(run("RowWiseArgMax", ["x"], ["y"]), np.argmax(x, axis=1)[:, None])


def test_rowwise_argmax_bad_input():
    keep = np.full(2, 7.0, np.float32)
    feed(y=keep, x3=np.ones((2, 3, 4), np.float32), x1=np.ones(3, np.float32), e=np.ones((3, 0), np.float32),
         xi=np.ones((2, 3), np.int32))
    for x, exc, msg in (
            ("x3", ValueError, "op RowWiseArgMax #0: input 0 blob 'x3' must be 2-D (N, D), got (2, 3, 4) "
                               "float32"),
            ("x1", ValueError, "op RowWiseArgMax #0: input 0 blob 'x1' must be 2-D (N, D), got (3,) float32"),
            ("e", ValueError, "op RowWiseArgMax #0: input 0 blob 'e' (3, 0) float32 has rows of 0 elements: "
                              "no position to give"),
            ("xi", TypeError, "op RowWiseArgMax #0: input 0 blob 'xi' must be float32, got (2, 3) int32")):
        with pytest.raises(exc) as info:
            workspace.RunOperatorOnce(op("RowWiseArgMax", [x], ["y"]))
        assert str(info.value) == msg
    assert workspace.FetchBlob("y").tobytes() == keep.tobytes()
    ops, g = core.GradientRegistry.GetGradientForOp(op("RowWiseArgMax", ["x"], ["y"]), ["y_grad"])
    assert ops == [] and g == [None]  # Caffe2: NO_GRADIENT


# ================================================================ Accuracy
def accuracy_ref(pred, label, k):
    correct = 0
    for row, lab in zip(pred, label):
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        correct += lab in order[:k]
    return correct / len(label)


@pytest.mark.parametrize("top_k", [None, 1, 2, 3, 7])
def test_accuracy(rng, top_k):
    pred = rng.randint(0, 4, (20, 5)).astype(np.float32)  # ties: the lower index ranks first
    label = rng.randint(0, 5, 20).astype(np.int32)
    feed(p=pred, l=label)
    args = {} if top_k is None else dict(top_k=top_k)
    a = run("Accuracy", ["p", "l"], ["a"], **args)
    assert a.shape == () and a.dtype == np.float32
    close(a, accuracy_ref(pred, label, top_k or 1))


def test_accuracy_nan_ranks_first():
    feed(p=np.array([[0.5, np.nan, 0.9], [0.5, np.nan, 0.9]], np.float32), l=np.array([1, 2], np.int32))
    close(run("Accuracy", ["p", "l"], ["a"]), 0.5)
    close(run("Accuracy", ["p", "l"], ["a"], top_k=2), 1.0)


def test_no_gradient_ops():
    ops, g = core.GradientRegistry.GetGradientForOp(op("StopGradient", ["x"], ["y"]), ["y_grad"])
    assert ops == [] and g == [None]
    for t in ("ArgMax", "ArgMin", "Accuracy"):
        assert_must_not_differentiate(op(t, ["x"], ["y"]), 1)


# ================================================================ bad input
BAD = [
    (ValueError, r"op Clip #0: argument 'min' \(1\) must be <= argument 'max' \(0\)",
     ("Clip", ["x"], ["y"], dict(min=1.0, max=0.0))),
    (TypeError, r"op Abs #0: input 0 blob 'i' must be float32, got \(4,\) int32", ("Abs", ["i"], ["y"], {})),
    (ValueError, r"op LeakyReluGradient #0: argument 'alpha' is -0.5: the gradient reads Y only",
     ("LeakyReluGradient", ["x", "x"], ["y"], dict(alpha=-0.5))),
    (ValueError, r"op EluGradient #0: argument 'alpha' is -1: the gradient reads Y only",
     ("EluGradient", ["x", "x"], ["y"], dict(alpha=-1.0))),
    (ValueError,
     r"op ClipGradient #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape of input 0 "
     r"blob 'x' \(2, 3\) float32", ("ClipGradient", ["x", "z"], ["y"], {})),
    (ValueError,
     r"op Min #0: input 1 blob 'z' of shape \(2, 2\) float32 must have the shape of input 0 blob 'x' "
     r"\(2, 3\) float32", ("Min", ["x", "z"], ["y"], {})),
    (TypeError,
     r"op Mean #0: input 1 blob 'i' must be float32, got \(4,\) int32", ("Mean", ["x", "i"], ["y"], {})),
    (ValueError,
     r"op Mean #0: input 1 blob 'z' of shape \(2, 2\) float32 does not broadcast with the inputs before it "
     r"\(numpy-style, dims aligned from the last\): its dim 1 is 2 where they give 3",
     ("Mean", ["x", "z"], ["y"], {})),
    (ValueError,
     r"op Mean #0: output blob 'c' is input 0 of shape \(2, 1\) float32, but the inputs broadcast to another "
     r"shape \(in place needs the result to have that input's shape\)", ("Mean", ["c", "x"], ["c"], {})),
    (ValueError,
     r"op MeanGradient #0: input 1 blob 'z' \(X0\) of shape \(2, 2\) float32 does not broadcast to dY 'x' of "
     r"shape \(2, 3\) float32", ("MeanGradient", ["x", "z"], ["y"], {})),
    (ValueError,
     r"op MeanGradient #0: output 0 blob 'x' is dY, but X0 'c' of shape \(2, 1\) float32 is not of dY's "
     r"shape",
     ("MeanGradient", ["x", "c", "c"], ["x", "y"], {})),
    (ValueError,
     r"op MeanGradient #0: takes dY, or \(dY, X0, ..., Xk-1\), and gives \(dX0, ..., dXk-1\): 2 inputs "
     r"need 1 outputs, got 2", ("MeanGradient", ["x", "x"], ["y", "y2"], {})),
    (ValueError,
     r"op MinGradient #0: takes \(Y, dY, X0, ..., Xk-1\) and gives \(dX0, ..., dXk-1\): 4 inputs need "
     r"2 outputs, got 1", ("MinGradient", ["x", "x", "x", "x"], ["y"], {})),
    (ValueError, r"op ReduceSum #0: axis 3 in argument 'axes' is out of range for input 0 blob 'x' \(2, 3\) "
     r"float32", ("ReduceSum", ["x"], ["y"], dict(axes=[3]))),
    (ValueError,
     r"op ReduceMean #0: axis -2 in argument 'axes' repeats dim 0 of input 0 blob 'x' \(2, 3\) float32",
     ("ReduceMean", ["x"], ["y"], dict(axes=[0, -2]))),
    (ValueError,
     r"op ReduceFrontSum #0: argument 'num_reduce_dim' \(3\) is larger than the rank of input 0 blob "
     r"'x' \(2, 3\) float32", ("ReduceFrontSum", ["x"], ["y"], dict(num_reduce_dim=3))),
    (ValueError, r"op ReduceBackMean #0: argument 'num_reduce_dim' must be >= 0, got -1",
     ("ReduceBackMean", ["x"], ["y"], dict(num_reduce_dim=-1))),
    (ValueError,
     r"op ReduceSumGradient #0: input 0 blob 'z' \(2, 2\) float32 \(dY\) must have the shape \(2, 1\) "
     r"float32 of the forward output for input 1 blob 'x' \(2, 3\) float32 \(X\)",
     ("ReduceSumGradient", ["z", "x", "z"], ["y"], dict(axes=[1]))),
    (ValueError,
     r"op ReduceMaxGradient #0: input 2 blob 'x' \(2, 3\) float32 \(Y\) must have the shape of input 0 "
     r"blob 'c' \(2, 1\) float32 \(dY\)", ("ReduceMaxGradient", ["c", "x", "x"], ["y"], dict(axes=[1]))),
    (ValueError, r"op ArgMax #0: axis 2 is out of range for input 0 blob 'x' \(2, 3\) float32",
     ("ArgMax", ["x"], ["y"], dict(axis=2))),
    (ValueError, r"op ArgMin #0: input 0 blob 's' must have at least 1 dim, got \(\) float32",
     ("ArgMin", ["s"], ["y"], {})),
    (ValueError, r"op ArgMax #0: dim 1 of input 0 blob 'e' \(2, 0\) float32 has size 0: no position to give",
     ("ArgMax", ["e"], ["y"], {})),
    (IndexError,
     r"op Accuracy #0: input 1 blob 'lab' \(2,\) int32 \(label\): label 3 at row 1 is out of range "
     r"\[0, 3\) \(input 0 blob 'x' \(2, 3\) float32\)", ("Accuracy", ["x", "lab"], ["y"], {})),
    (ValueError,
     r"op Accuracy #0: input 1 blob 'i' \(4,\) int32 \(label\) must have one entry per row of input 0 "
     r"blob 'x' \(2, 3\) float32 \(prediction\)", ("Accuracy", ["x", "i"], ["y"], {})),
    (ValueError, r"op Accuracy #0: input 0 blob 'e0' \(0, 3\) float32 \(prediction\) has no rows",
     ("Accuracy", ["e0", "i0"], ["y"], {})),
    (ValueError, r"op Accuracy #0: argument 'top_k' must be >= 1, got 0",
     ("Accuracy", ["x", "lab"], ["y"], dict(top_k=0))),
    (TypeError, r"op Accuracy #0: input 1 blob 'x' must be int32, got \(2, 3\) float32",
     ("Accuracy", ["x", "x"], ["y"], {})),
    (ValueError,
     r"op StopGradient #0: input 0 blob 'nothing' holds no tensor",
     ("StopGradient", ["nothing"], ["y"], {})),
]


@pytest.mark.parametrize("exc,pattern,spec", BAD, ids=[b[2][0] + str(i) for i, b in enumerate(BAD)])
def test_bad_input(exc, pattern, spec):
    feed(x=np.zeros((2, 3), np.float32), z=np.zeros((2, 2), np.float32), c=np.zeros((2, 1), np.float32),
         i=np.arange(4, dtype=np.int32), s=np.float32(1), e=np.zeros((2, 0), np.float32),
         lab=np.array([0, 3], np.int32), e0=np.zeros((0, 3), np.float32), i0=np.zeros(0, np.int32))
    made = core.Net("made")  # creating a net creates its outputs: 'nothing' exists, never written
    made.Abs("x", "nothing")
    workspace.CreateNet(made)
    type_, ins, outs, args = spec
    raises(exc, pattern, op(type_, ins, outs, **args))
    # the workspace stays usable
    close(run("Abs", ["x"], ["ok"]), np.zeros((2, 3)))


def test_bad_input_caught_at_net_creation():
    feed(x=np.zeros((2, 3), np.float32), i=np.arange(4, dtype=np.int32), w=np.zeros((2, 2), np.float32))
    for o in [op("ReduceSum", ["x"], ["y"], axes=[5]), op("Accuracy", ["x", "i"], ["y"]),
              op("Softsign", ["i"], ["y"]), op("Mean", ["x", "w"], ["y"])]:
        net = core.Net("n")
        net.Proto().op.extend([o])
        with pytest.raises((ValueError, TypeError), match="op %s #0" % o.type):
            workspace.CreateNet(net)


def test_all_ops_cover_caffe2_list():
    from recurrent import _C
    names = {"Clip", "ClipGradient", "Abs", "AbsGradient", "Sqrt", "LeakyRelu", "LeakyReluGradient", "Elu",
             "EluGradient", "Softsign", "SoftsignGradient", "StopGradient", "Min", "MinGradient", "Mean",
             "MeanGradient", "ArgMax", "ArgMin", "Accuracy"}
    for a, b in itertools.product(["Sum", "Mean", "Max", "Min"], ["", "Gradient"]):
        names.add("Reduce" + a + b)
    for a, b, c in itertools.product(["Front", "Back"], ["Sum", "Mean"], ["", "Gradient"]):
        names.add("Reduce" + a + b + c)
    assert names <= set(_C.op_types())
