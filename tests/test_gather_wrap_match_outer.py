"""Gather's arguments wrap_indices and match_outer (Caffe2's gather_op.h; csrc/ops/bmm_pow.c), their
dense gradient BatchGatherGradient with the same arguments (the gradient maker passes them on):
NumPy references, finite differences, and bad input with exact messages."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import close, feed, op, run


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


def gather_ref(data, idx, axis, wrap, mo):
    a = axis % data.ndim
    idx = idx.astype(np.int64)
    if wrap:
        idx = np.where(idx < 0, idx + data.shape[a], idx)
    if not mo:
        return np.take(data, idx, axis=a)
    outer = data.shape[:a]
    rest = idx.shape[a:]
    d = data.reshape((-1,) + data.shape[a:])
    ix = idx.reshape((d.shape[0],) + rest)
    out = np.stack([np.take(d[o], ix[o], axis=0) for o in range(d.shape[0])])
    return out.reshape(outer + rest + data.shape[a + 1:])


def grad_ref(data, idx, dout, axis, wrap, mo):
    """Scatter-add of dout back, one output position at a time (float64)."""
    a = axis % data.ndim
    idx = idx.astype(np.int64)
    if wrap:
        idx = np.where(idx < 0, idx + data.shape[a], idx)
    d = np.zeros(data.shape, np.float64).reshape(int(np.prod(data.shape[:a])), data.shape[a], -1)
    outer = d.shape[0]
    n = idx.size // outer if mo else idx.size
    flat = idx.reshape(outer, n) if mo else np.broadcast_to(idx.reshape(1, n), (outer, n))
    g = dout.astype(np.float64).reshape(outer, n, -1)
    for o in range(outer):
        for k in range(n):
            d[o, flat[o, k]] += g[o, k]
    return d.reshape(data.shape)


WRAP = [((5, 3), [[0, -1], [-5, 4]], 0), ((2, 5, 3), [-1, 2, -5, 0], 1), ((2, 3, 4), [[-4, 3, -1]], -1),
        ((6,), [-6, -3, 5, 0], 0)]


@pytest.mark.parametrize("shape,idx,axis", WRAP)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_wrap_indices(rng, shape, idx, axis, dtype):
    data = (rng.randn(*shape) * 10).astype(dtype)
    i = np.array(idx, np.int32)
    feed(d=data, i=i)
    got = run("Gather", ["d", "i"], ["o"], axis=axis, wrap_indices=1)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, gather_ref(data, i, axis, 1, 0))
    # the same as Gather with the wrapped indices
    feed(i=np.where(i < 0, i + shape[axis], i).astype(np.int32))
    np.testing.assert_array_equal(got, run("Gather", ["d", "i"], ["o"], axis=axis))


MATCH = [((2, 5, 3), (2, 4), 1), ((2, 5, 3), (2, 2, 3), 1), ((2, 3, 4), (2, 3, 2), 2),
         ((3, 4), (3,), 1), ((2, 3, 4, 2), (2, 3, 5), 2)]


@pytest.mark.parametrize("shape,ishape,axis", MATCH)
@pytest.mark.parametrize("wrap", [0, 1])
def test_match_outer(rng, shape, ishape, axis, wrap):
    data = rng.randn(*shape).astype(np.float32)
    D = shape[axis]
    i = rng.randint(-D if wrap else 0, D, ishape).astype(np.int32)
    feed(d=data, i=i)
    got = run("Gather", ["d", "i"], ["o"], axis=axis, match_outer=1, wrap_indices=wrap)
    want = gather_ref(data, i, axis, wrap, 1)
    assert got.shape == shape[:axis] + ishape[axis:] + shape[axis + 1:]
    np.testing.assert_array_equal(got, want)


def test_match_outer_picks_per_row():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    feed(d=data, i=np.array([[0, 3], [1, 1], [2, 0]], np.int32))
    close(run("Gather", ["d", "i"], ["o"], axis=1, match_outer=1), [[0, 3], [5, 5], [10, 8]])
    # without match_outer every row takes every index row
    assert run("Gather", ["d", "i"], ["o"], axis=1).shape == (3, 3, 2)


GRADS = [((5, 3), (2, 2), 0, 1, 0), ((2, 5, 3), (4,), 1, 1, 0), ((2, 5, 3), (2, 4), 1, 0, 1),
         ((2, 5, 3), (2, 3), 1, 1, 1), ((2, 3, 4), (2, 3, 3), 2, 1, 1)]


@pytest.mark.parametrize("shape,ishape,axis,wrap,mo", GRADS)
def test_gradients(rng, shape, ishape, axis, wrap, mo):
    data = rng.randn(*shape).astype(np.float32)
    D = shape[axis]
    i = rng.randint(-D if wrap else 0, D, ishape).astype(np.int32)
    i.flat[0] = i.flat[-1]  # a repeated index: the gradients add up
    args = dict(axis=axis, wrap_indices=wrap, match_outer=mo)
    o = op("Gather", ["d", "i"], ["o"], **args)
    ops, g = core.GradientRegistry.GetGradientForOp(o, ["o_grad"])
    assert g == ["d_grad", None] and len(ops) == 1 and ops[0].type == "BatchGatherGradient"
    assert {a.name: a.value() for a in ops[0].arg} == args
    feed(d=data, i=i)
    out = run("Gather", ["d", "i"], ["o"], **args)
    dout = rng.randn(*out.shape).astype(np.float32)
    feed(o_grad=dout)
    workspace.RunOperatorOnce(ops[0])
    close(workspace.FetchBlob("d_grad"), grad_ref(data, i, dout, axis, wrap, mo), 1e-6)
    check_grads(o, [data, i], indices=[0])


def test_axis0_without_flags_keeps_the_sparse_gradient():
    ops, g = core.GradientRegistry.GetGradientForOp(op("Gather", ["d", "i"], ["o"], wrap_indices=0),
                                                    ["o_grad"])
    assert ops == [] and isinstance(g[0], core.GradientSlice)


def test_gradient_in_a_net(rng):
    data = rng.randn(4, 3).astype(np.float32)
    feed(d=data, i=np.array([-1, 0, -1], np.int32))
    net = core.Net("gw")
    net.Gather(["d", "i"], "o", wrap_indices=1)
    net.SumElements("o", "loss")
    net.AddGradientOperators(["loss"])
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("d_grad"), [[1, 1, 1], [0, 0, 0], [0, 0, 0], [2, 2, 2]])


BAD = [
    (IndexError, r"op Gather #0: input 1 blob 'i': index -6 at position 2 is out of range \[-5, 5\) "
     r"\(wrap_indices=1; dim 0 of input 0 blob 'd' of shape \(5, 3\) float32\)",
     dict(wrap_indices=1), (5, 3), [0, -5, -6]),
    (IndexError, r"op Gather #0: input 1 blob 'i': index 5 at position 1 is out of range \[0, 5\) \(dim 0 of "
     r"input 0 blob 'd' of shape \(5, 3\) float32\)", dict(wrap_indices=1), (5, 3), [-1, 5]),
    (IndexError, r"op Gather #0: input 1 blob 'i': index -1 at position 0 is out of range \[0, 5\)",
     dict(), (5, 3), [-1]),
    (ValueError, r"op Gather #0: argument match_outer=1 needs axis >= 1, got axis=0 \(input 0 blob 'd' "
     r"\(DATA\) of shape \(5, 3\) float32\)", dict(match_outer=1), (5, 3), [0]),
    (ValueError, r"op Gather #0: input 1 blob 'i' \(INDICES\) of shape \(3,\) int32 must begin with the "
     r"1 dims of input 0 blob 'd' \(DATA\) \(5, 3\) float32 before axis 1 \(match_outer=1\)",
     dict(match_outer=1, axis=1), (5, 3), [0, 1, 2]),
    (ValueError, r"op Gather #0: argument wrap_indices must be 0 or 1, got 2", dict(wrap_indices=2),
     (5, 3), [0]),
    (ValueError, r"op Gather #0: argument match_outer must be 0 or 1, got -1", dict(match_outer=-1),
     (5, 3), [0]),
]


@pytest.mark.parametrize("exc,pattern,args,shape,idx", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input(exc, pattern, args, shape, idx):
    feed(d=np.ones(shape, np.float32), i=np.array(idx, np.int32), o=np.zeros(2, np.float32))
    raises(exc, pattern, op("Gather", ["d", "i"], ["o"], **args))
    np.testing.assert_array_equal(workspace.FetchBlob("o"), np.zeros(2, np.float32))  # nothing written


def test_gradient_op_bad_input():
    feed(d=np.ones((2, 3), np.float32), i=np.array([[0, -4], [1, 2]], np.int32),
         g=np.ones((2, 2), np.float32))
    raises(IndexError, r"op BatchGatherGradient #0: input 1 blob 'i': index -4 at position 1 is out of range "
           r"\[-3, 3\) \(wrap_indices=1",
           op("BatchGatherGradient", ["d", "i", "g"], ["dd"], axis=1, wrap_indices=1, match_outer=1))
    feed(g=np.ones((2, 2, 2), np.float32), i=np.array([[0, -3], [1, 2]], np.int32))
    raises(ValueError, r"op BatchGatherGradient #0: input 2 blob 'g' \(the output gradient\) of shape "
           r"\(2, 2, 2\) float32 must have the gathered shape \(2, 2\) float32",
           op("BatchGatherGradient", ["d", "i", "g"], ["dd"], axis=1, wrap_indices=1, match_outer=1))


def test_match_outer_checked_at_net_creation():
    feed(d=np.ones((2, 3), np.float32), i=np.zeros((3, 2), np.int32))
    net = core.Net("gmo")
    net.Gather(["d", "i"], "o", axis=1, match_outer=1)
    with pytest.raises(ValueError, match=r"op Gather #0: input 1 blob 'i' \(INDICES\) of shape \(3, 2\) "
                       r"int32 must begin with the 1 dims"):
        workspace.CreateNet(net)
