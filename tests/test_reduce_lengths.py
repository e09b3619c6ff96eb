"""ReduceFront{Sum,Mean} / ReduceBack{Sum,Mean} with Caffe2's optional second input LENGTHS
(csrc/ops/reduce.c) and their gradient ops (dY, X, LENGTHS): NumPy references, finite-difference
gradients, the gradient maker, length 0, and bad lengths (count, dtype, values) with exact messages."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import close, feed, op, run
from test_ops_unary_reduce import check_grads, raises

TYPES = [("ReduceFrontSum", True, False), ("ReduceFrontMean", True, True),
         ("ReduceBackSum", False, False), ("ReduceBackMean", False, True)]


def ref(x, lengths, front, mean, k):
    """X as (rows, cols); Front reduces the first lengths[j] rows of column j, Back the first lengths[i]
    columns of row i (float64; a mean of nothing is NaN)."""
    x = x.astype(np.float64)
    shape = x.shape
    red = shape[:k] if front else shape[len(shape) - k:]
    out_shape = shape[k:] if front else shape[:len(shape) - k]
    n_red = int(np.prod(red))
    m = x.reshape(n_red, -1).T if front else x.reshape(-1, n_red)  # (outputs, reduced)
    out = np.empty(m.shape[0])
    for i, n in enumerate(lengths):
        s = m[i, :n].sum()
        out[i] = (s / n if n else np.nan) if mean else s
    return out.reshape(out_shape)


@pytest.mark.parametrize("type_,front,mean", TYPES)
@pytest.mark.parametrize("shape,k", [((5, 3), 1), ((4, 2, 3), 1), ((2, 3, 4), 2), ((6,), 1)])
def test_lengths_forward(rng, type_, front, mean, shape, k):
    x = rng.randn(*shape).astype(np.float32)
    n_red = int(np.prod(shape[:k] if front else shape[len(shape) - k:]))
    n_out = x.size // n_red
    lengths = rng.randint(1, n_red + 1, n_out).astype(np.int32)
    lengths[0] = n_red
    feed(x=x, l=lengths)
    got = run(type_, ["x", "l"], ["y"], num_reduce_dim=k)
    close(got, ref(x, lengths, front, mean, k))
    # full lengths are the op without lengths
    feed(l=np.full(n_out, n_red, np.int32))
    close(run(type_, ["x", "l"], ["y"], num_reduce_dim=k), run(type_, ["x"], ["y"], num_reduce_dim=k))


def test_lengths_example_from_caffe2_doc():
    x = np.array([[1, 5, 2, 9], [4, 1, 8, 2], [2, 7, 0, 3]], np.float32)
    feed(x=x, lf=np.array([2, 3, 1, 2], np.int32), lb=np.array([2, 3, 1], np.int32))
    close(run("ReduceFrontSum", ["x", "lf"], ["y"]), [5, 13, 2, 11])
    close(run("ReduceFrontMean", ["x", "lf"], ["y"]), [2.5, 13 / 3, 2, 5.5])
    close(run("ReduceBackSum", ["x", "lb"], ["y"]), [6, 13, 2])
    close(run("ReduceBackMean", ["x", "lb"], ["y"]), [3, 13 / 3, 2])


@pytest.mark.parametrize("type_,front,mean", TYPES)
def test_length_zero(type_, front, mean):
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    n = 3 if front else 2
    lengths = np.zeros(n, np.int32)
    lengths[1] = 1
    feed(x=x, l=lengths)
    y = run(type_, ["x", "l"], ["y"])
    if mean:
        assert np.isnan(y[0]) and not np.isnan(y[1])   # Caffe2: x[0] / 0
    else:
        assert y[0] == 0.0                             # Caffe2: x's first entry of the run
    close(y[1], x[0, 1] if front else x[1, 0])
    feed(dy=np.ones(n, np.float32))
    dx = run(type_ + "Gradient", ["dy", "x", "l"], ["dx"])
    want = np.zeros_like(x)
    if front:
        want[0, 1] = 1
    else:
        want[1, 0] = 1
    close(dx, want)


@pytest.mark.parametrize("type_,front,mean", TYPES)
@pytest.mark.parametrize("shape,k", [((4, 3), 1), ((3, 2, 4), 2)])
def test_lengths_gradient(rng, type_, front, mean, shape, k):
    x = rng.randn(*shape).astype(np.float32)
    n_red = int(np.prod(shape[:k] if front else shape[len(shape) - k:]))
    n_out = x.size // n_red
    # a mean over length 0 is NaN (the loss too): lengths >= 1 there, 0 allowed for the sums
    lengths = rng.randint(1 if mean else 0, n_red + 1, n_out).astype(np.int32)
    lengths[0], lengths[-1] = n_red, 1
    if not mean:
        lengths[1] = 0
    check_grads(op(type_, ["x", "l"], ["y"], num_reduce_dim=k), [x, lengths], indices=[0])
    # the gradient op against NumPy: dY (or dY / length) on the counted entries, 0 elsewhere
    dy = rng.randn(n_out).astype(np.float32)
    feed(x=x, l=lengths, dy=dy.reshape(ref(x, lengths, front, mean, k).shape))
    got = run(type_ + "Gradient", ["dy", "x", "l"], ["dx"], num_reduce_dim=k)
    want = np.zeros((n_out, n_red), np.float32)
    for i, n in enumerate(lengths):
        want[i, :n] = dy[i] / n if mean else dy[i]
    want = want.T.reshape(shape) if front else want.reshape(shape)
    close(got, want)


def test_gradient_maker_passes_lengths():
    ops, g = core.GradientRegistry.GetGradientForOp(op("ReduceFrontMean", ["x", "l"], ["y"],
                                                       num_reduce_dim=2), ["y_grad"])
    assert ops[0].type == "ReduceFrontMeanGradient" and list(ops[0].input) == ["y_grad", "x", "l"]
    assert g == ["x_grad", None]
    assert [a.name for a in ops[0].arg] == ["num_reduce_dim"]


def test_lengths_in_a_net_with_gradients(rng):
    x = rng.randn(3, 4).astype(np.float32)
    feed(x=x, l=np.array([4, 0, 2], np.int32))
    net = core.Net("rbl")
    net.ReduceBackSum(["x", "l"], "y")
    net.AddGradientOperators(["y"])
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("y"), [x[0].sum(), 0.0, x[2, :2].sum()])
    close(workspace.FetchBlob("x_grad"), [[1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]])


BAD = [
    (ValueError, r"op ReduceFrontSum #0: input 1 blob 'l' \(2,\) int32 \(lengths\) must be 1-D with "
     r"3 entries, one per column of input 0 blob 'x' \(4, 3\) float32 seen as \(4, 3\) \(num_reduce_dim=1\)",
     ("ReduceFrontSum", ["x", "l"], dict()), "l2"),
    (ValueError, r"op ReduceBackMean #0: input 1 blob 'l' \(3, 1\) int32 \(lengths\) must be 1-D with "
     r"4 entries, one per row of input 0 blob 'x' \(4, 3\) float32 seen as \(4, 3\)",
     ("ReduceBackMean", ["x", "l"], dict()), "l31"),
    (TypeError, r"op ReduceBackSum #0: input 1 blob 'l'.*int32",
     ("ReduceBackSum", ["x", "l"], dict()), "lf"),
    (ValueError, r"op ReduceFrontMean #0: input 1 blob 'l' \(3,\) int32 \(lengths\): length -1 at "
     r"position 1 is out of range \[0, 4\] \(the size of the reduced dims of input 0 blob 'x' "
     r"\(4, 3\) float32\)",
     ("ReduceFrontMean", ["x", "l"], dict()), "lneg"),
    (ValueError, r"op ReduceBackSum #0: input 1 blob 'l' \(4,\) int32 \(lengths\): length 4 at position 3 is "
     r"out of range \[0, 3\]", ("ReduceBackSum", ["x", "l"], dict()), "lbig"),
]
LENGTHS = {"l2": np.array([1, 1], np.int32), "l31": np.ones((3, 1), np.int32),
           "lf": np.ones(4, np.float32), "lneg": np.array([1, -1, 2], np.int32),
           "lbig": np.array([1, 2, 3, 4], np.int32)}


@pytest.mark.parametrize("exc,pattern,spec,which", BAD, ids=[b[3] for b in BAD])
def test_bad_lengths(exc, pattern, spec, which):
    t, ins, args = spec
    feed(x=np.ones((4, 3), np.float32), l=LENGTHS[which])
    raises(exc, pattern, op(t, ins, ["y"], **args))
    assert workspace.FetchBlob("x").shape == (4, 3)  # the workspace stays usable


def test_bad_lengths_in_gradient_op():
    feed(x=np.ones((4, 3), np.float32), dy=np.ones(3, np.float32), l=np.array([5, 1, 1], np.int32))
    raises(ValueError, r"op ReduceFrontSumGradient #0: input 2 blob 'l' \(3,\) int32 \(lengths\): "
           r"length 5 at position 0 is out of range \[0, 4\] \(the size of the reduced dims of input 1 "
           r"blob 'x'",
           op("ReduceFrontSumGradient", ["dy", "x", "l"], ["dx"]))
    # an empty X with lengths that claim entries: still refused
    feed(x=np.ones((0, 3), np.float32), l=np.array([0, 1, 0], np.int32))
    raises(ValueError, r"length 1 at position 1 is out of range \[0, 0\]",
           op("ReduceFrontSumGradient", ["dy", "x", "l"], ["dx"]))


def test_lengths_count_checked_at_net_creation():
    feed(x=np.ones((4, 3), np.float32), l=np.ones(5, np.int32))
    net = core.Net("rl_bad")
    net.ReduceBackSum(["x", "l"], "y")
    with pytest.raises(ValueError, match=r"op ReduceBackSum #0: input 1 blob 'l' \(5,\) int32 \(lengths\) "
                       r"must be 1-D with 4 entries"):
        workspace.CreateNet(net)
