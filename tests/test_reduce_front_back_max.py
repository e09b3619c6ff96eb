"""ReduceFrontMax / ReduceBackMax (with and without LENGTHS) and their gradient ops (dY, X, Y[, LENGTHS]),
and Reduce{Front,Back}{Sum,Mean}Gradient given X's shape instead of X (csrc/ops/reduce.c): NumPy
references, finite-difference gradients, the gradient makers, ties and NaN, and bad input with exact
messages."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import close, feed, op, run
from test_ops_unary_reduce import check_grads, raises

MAX_TYPES = [("ReduceFrontMax", True), ("ReduceBackMax", False)]


def as_rows(x, front, k):
    """X as (outputs, reduced) and the output shape."""
    shape = x.shape
    n_red = int(np.prod(shape[:k] if front else shape[len(shape) - k:]))
    out_shape = shape[k:] if front else shape[:len(shape) - k]
    m = x.reshape(n_red, -1).T if front else x.reshape(-1, n_red)
    return m, out_shape


def max_ref(x, front, k, lengths=None):
    m, out_shape = as_rows(x, front, k)
    if lengths is None:
        return m.max(axis=1).reshape(out_shape)
    return np.array([m[i, :n].max() for i, n in enumerate(lengths)], np.float32).reshape(out_shape)


def max_grad_ref(x, y, dy, front, k, lengths=None):
    m, _ = as_rows(x, front, k)
    y, dy = y.reshape(-1), dy.reshape(-1)
    want = np.zeros(m.shape, np.float32)
    for i in range(m.shape[0]):
        n = m.shape[1] if lengths is None else lengths[i]
        want[i, :n] = np.where(m[i, :n] == y[i], dy[i], 0)
    return want.T.reshape(x.shape) if front else want.reshape(x.shape)


@pytest.mark.parametrize("type_,front", MAX_TYPES)
@pytest.mark.parametrize("shape,k", [((5, 3), 1), ((4, 2, 3), 1), ((2, 3, 4), 2), ((6,), 1), ((2, 3), 0),
                                     ((2, 3), 2), ((0, 3), 0)])
def test_max_forward_and_gradient_op(rng, type_, front, shape, k):
    x = rng.randn(*shape).astype(np.float32)
    feed(x=x)
    y = run(type_, ["x"], ["y"], num_reduce_dim=k)
    want = np.max(x, axis=tuple(range(k)) if front else tuple(range(len(shape) - k, len(shape))))
    assert y.shape == want.shape
    np.testing.assert_array_equal(y, want)
    dy = np.asarray(rng.randn(*y.shape), np.float32)
    feed(dy=dy)
    dx = run(type_ + "Gradient", ["dy", "x", "y"], ["dx"], num_reduce_dim=k)
    np.testing.assert_array_equal(dx, max_grad_ref(x, y, dy, front, k))


@pytest.mark.parametrize("type_,front", MAX_TYPES)
@pytest.mark.parametrize("shape,k", [((5, 3), 1), ((4, 2, 3), 1), ((2, 3, 4), 2)])
def test_max_lengths_forward_and_gradient_op(rng, type_, front, shape, k):
    x = rng.randn(*shape).astype(np.float32)
    n_red = int(np.prod(shape[:k] if front else shape[len(shape) - k:]))
    n_out = x.size // n_red
    lengths = rng.randint(1, n_red + 1, n_out).astype(np.int32)
    lengths[-1] = 1
    feed(x=x, l=lengths)
    y = run(type_, ["x", "l"], ["y"], num_reduce_dim=k)
    np.testing.assert_array_equal(y, max_ref(x, front, k, lengths))
    dy = rng.randn(*y.shape).astype(np.float32)
    feed(dy=dy)
    dx = run(type_ + "Gradient", ["dy", "x", "y", "l"], ["dx"], num_reduce_dim=k)
    np.testing.assert_array_equal(dx, max_grad_ref(x, y, dy, front, k, lengths))
    # the entries past a length get nothing, even where they equal the max
    m, _ = as_rows(dx, front, k)
    assert all(not m[i, n:].any() for i, n in enumerate(lengths))


def test_max_caffe2_doc_example_and_ties_nan():
    x = np.array([[1, 5, 2, 9], [4, 1, 8, 2], [2, 7, 0, 3]], np.float32)
    feed(x=x, lf=np.array([2, 3, 1, 2], np.int32), lb=np.array([2, 3, 1], np.int32))
    close(run("ReduceFrontMax", ["x", "lf"], ["y"]), [4, 7, 2, 9])
    close(run("ReduceBackMax", ["x", "lb"], ["y"]), [5, 8, 2])
    # ties: every tied entry gets dY; NaN propagates and then nobody gets it
    t = np.array([[3, 3, 1], [np.nan, 2, 2]], np.float32)
    feed(t=t, dy=np.array([1.5, 2.5], np.float32))
    y = run("ReduceBackMax", ["t"], ["y"])
    assert y[0] == 3 and np.isnan(y[1])
    close(run("ReduceBackMaxGradient", ["dy", "t", "y"], ["dx"]), [[1.5, 1.5, 0], [0, 0, 0]])


@pytest.mark.parametrize("type_,front", MAX_TYPES)
@pytest.mark.parametrize("with_lengths", [False, True])
def test_max_finite_difference_gradient(rng, type_, front, with_lengths):
    # distinct values well apart, so the max does not switch under the step
    x = (rng.permutation(24).astype(np.float32) * 0.1).reshape(4, 2, 3)
    ins = [x]
    if with_lengths:
        n_out = 6 if front else 8
        n_red = 4 if front else 3
        ins.append(rng.randint(1, n_red + 1, n_out).astype(np.int32))
    check_grads(op(type_, ["x", "l"][:len(ins)], ["y"], num_reduce_dim=1), ins, indices=[0])


@pytest.mark.parametrize("type_", ["ReduceFrontMax", "ReduceBackMax"])
@pytest.mark.parametrize("with_lengths", [False, True])
def test_max_gradient_maker_and_net(rng, type_, with_lengths):
    ins = ["x", "l"] if with_lengths else ["x"]
    ops, g = core.GradientRegistry.GetGradientForOp(op(type_, ins, ["y"], num_reduce_dim=1), ["y_grad"])
    assert ops[0].type == type_ + "Gradient"
    assert list(ops[0].input) == ["y_grad", "x", "y"] + ins[1:]
    assert g == ["x_grad"] + [None] * (len(ins) - 1)
    assert [a.name for a in ops[0].arg] == ["num_reduce_dim"]
    x = rng.randn(3, 4).astype(np.float32)
    feed(x=x, l=np.array([1, 2, 3, 3] if type_ == "ReduceFrontMax" else [1, 4, 2], np.int32))
    net = core.Net("rfbm")
    getattr(net, type_)(ins, "y", num_reduce_dim=1)
    net.AddGradientOperators(["y"])
    workspace.RunNetOnce(net)
    front = type_ == "ReduceFrontMax"
    lengths = workspace.FetchBlob("l") if with_lengths else None
    y = workspace.FetchBlob("y")
    np.testing.assert_array_equal(y, max_ref(x, front, 1, lengths))
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"),
                                  max_grad_ref(x, y, np.ones_like(y), front, 1, lengths))


@pytest.mark.parametrize("type_,red", [("ReduceFrontSum", lambda x: x.sum(0)),
                                       ("ReduceFrontMean", lambda x: x.mean(0)),
                                       ("ReduceBackSum", lambda x: x.sum(-1)),
                                       ("ReduceBackMean", lambda x: x.mean(-1))])
def test_sum_mean_gradient_given_shape(rng, type_, red):
    # Caffe2's older gradient signature: input 1 is X's shape (int64 there; int32 here), same result
    x = rng.randn(4, 3, 5).astype(np.float32)
    dy = rng.randn(*red(x).shape).astype(np.float32)
    feed(x=x, dy=dy, shape=np.array(x.shape, np.int32))
    dx = run(type_ + "Gradient", ["dy", "x"], ["dx"])
    dx1 = run(type_ + "Gradient", ["dy", "shape"], ["dx1"])
    np.testing.assert_array_equal(dx, dx1)
    assert dx1.shape == x.shape
    scale = 1.0 / (x.shape[0] if "Front" in type_ else x.shape[-1]) if "Mean" in type_ else 1.0
    full = np.expand_dims(dy, 0 if "Front" in type_ else -1) * np.float32(scale)
    close(dx1, np.broadcast_to(full, x.shape))
    # with lengths too
    lengths = np.array([1, 2, 3] * 5, np.int32) if "Front" in type_ else np.array([1, 5, 2] * 4, np.int32)
    feed(l=lengths)
    np.testing.assert_array_equal(run(type_ + "Gradient", ["dy", "x", "l"], ["dx"]),
                                  run(type_ + "Gradient", ["dy", "shape", "l"], ["dx1"]))


def test_bad_input():
    feed(x=np.ones((4, 3), np.float32), dy=np.ones(3, np.float32), y=np.ones(3, np.float32),
         l=np.array([1, 0, 2], np.int32), s2=np.ones((2, 2), np.int32), sneg=np.array([4, -3], np.int32),
         sbad=np.array([4, 2], np.int32), y2=np.ones(2, np.float32), z=np.ones((0, 3), np.float32),
         l9=np.array([9, 1, 1], np.int32))
    raises(ValueError, r"^op ReduceFrontMax #0: input 1 blob 'l' \(3,\) int32 \(lengths\): length 0 at "
                       r"position 1: "
                       r"the maximum of 0 elements is undefined$", op("ReduceFrontMax", ["x", "l"], ["o"]))
    raises(ValueError, r"^op ReduceFrontMax #0: input 0 blob 'z' \(0, 3\) float32: the maximum of 0 elements",
           op("ReduceFrontMax", ["z"], ["o"]))
    raises(ValueError, r"^op ReduceFrontMaxGradient #0: input 2 blob 'y2' \(2,\) float32 \(Y\) must have "
                       r"the shape "
                       r"of input 0 blob 'dy' \(3,\) float32 \(dY\)$",
           op("ReduceFrontMaxGradient", ["dy", "x", "y2"], ["dx"]))
    raises(ValueError, r"^op ReduceFrontMaxGradient #0: input 3 blob 'l9' \(3,\) int32 \(lengths\): length "
                       r"9 at "
                       r"position 0 is out of range \[0, 4\]",
           op("ReduceFrontMaxGradient", ["dy", "x", "y", "l9"], ["dx"]))
    raises(TypeError, r"^op ReduceFrontMaxGradient #0: input 1 blob 's2' must be float32",
           op("ReduceFrontMaxGradient", ["dy", "s2", "y"], ["dx"]))
    raises(ValueError, r"^op ReduceFrontSumGradient #0: input 1 blob 's2' \(2, 2\) int32 is int32, so it "
                       r"is X's "
                       r"shape: it must be 1-D with at most \d+ entries$",
           op("ReduceFrontSumGradient", ["dy", "s2"], ["dx"]))
    raises(ValueError, r"^op ReduceBackMeanGradient #0: input 1 blob 'sneg' \(2,\) int32 \(X's shape\): "
                       r"entry 1 "
                       r"is -3, a size must be >= 0$", op("ReduceBackMeanGradient", ["dy", "sneg"], ["dx"]))
    raises(ValueError, r"^op ReduceFrontSumGradient #0: input 0 blob 'dy' \(3,\) float32 \(dY\) must have "
                       r"the "
                       r"shape \(2,\) float32 of the forward output for input 1 blob 'sbad'",
           op("ReduceFrontSumGradient", ["dy", "sbad"], ["dx"]))
    # Reduce{Sum,...}Gradient (axes) takes no shape input
    raises(TypeError, r"^op ReduceSumGradient #0: input 1 blob 'sbad' must be float32",
           op("ReduceSumGradient", ["dy", "sbad", "y"], ["dx"]))
    assert workspace.FetchBlob("x").shape == (4, 3)


def test_max_lengths_count_checked_at_net_creation():
    feed(x=np.ones((4, 3), np.float32), l=np.ones(5, np.int32))
    net = core.Net("rbm_bad")
    net.ReduceBackMax(["x", "l"], "y")
    with pytest.raises(ValueError, match=r"op ReduceBackMax #0: input 1 blob 'l' \(5,\) int32 \(lengths\) "
                       r"must be 1-D with 4 entries"):
        workspace.CreateNet(net)
