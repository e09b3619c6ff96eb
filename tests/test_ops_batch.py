"""BatchMatMul and SequenceMask (csrc/ops/batch.c) and their gradient makers
(recurrent/_grad_batch.py): NumPy float64 references, empty shapes, in place,
bad input with exact messages (at run and at net creation), gradients by
finite differences, the backward pass through core.Net."""

import numpy as np
import pytest

from recurrent import core, gradient_checker, workspace
from test_ops_clip_math import check_grads
from test_ops_math import close, f32, feed, op, run  # the same helpers


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def ops_of(ops):
    return [(p.type, list(p.input), list(p.output), sorted((a.name, a.value()) for a in p.arg)) for p in ops]


# ---------------------------------------------------------------- BatchMatMul: references (float64)
def t(x, flag):
    return np.swapaxes(x, -1, -2) if flag else x


def bmm_ref(a, b, ta=0, tb=0):
    return np.matmul(t(a.astype(np.float64), ta), t(b.astype(np.float64), tb))


def bmm_inputs(rng, batch, M, N, K, ta, tb):
    ash = tuple(batch) + ((K, M) if ta else (M, K))
    bsh = tuple(batch) + ((N, K) if tb else (K, N))
    return f32(rng, *ash), f32(rng, *bsh)


BMM_SHAPES = [  # (batch dims, M, N, K)
    ((3,), 4, 5, 6), ((2, 3), 2, 4, 3), ((1,), 3, 2, 5), ((), 3, 4, 2), ((4,), 1, 1, 7), ((2,), 5, 3, 1),
    ((2, 1, 2), 3, 2, 4)]
TRANS = [(0, 0), (1, 0), (0, 1), (1, 1)]


# ---------------------------------------------------------------- BatchMatMul: forward
@pytest.mark.parametrize("batch,M,N,K", BMM_SHAPES)
@pytest.mark.parametrize("ta,tb", TRANS)
def test_batch_matmul(rng, batch, M, N, K, ta, tb):
    a, b = bmm_inputs(rng, batch, M, N, K, ta, tb)
    feed(a=a, b=b)
    y = run("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb)
    assert y.shape == tuple(batch) + (M, N)
    close(y, bmm_ref(a, b, ta, tb), 2e-6)


def test_batch_matmul_each_batch_element_its_own(rng):
    # distinct batch elements: a wrong batch stride would mix them up
    a = np.stack([np.eye(3, dtype=np.float32) * (i + 1) for i in range(4)])
    b = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)
    feed(a=a, b=b)
    y = run("BatchMatMul", ["a", "b"], ["y"])
    np.testing.assert_array_equal(y, b * np.arange(1, 5, dtype=np.float32)[:, None, None])


def test_batch_matmul_defaults_and_no_broadcast(rng):
    a, b = bmm_inputs(rng, (2,), 3, 4, 5, 0, 0)
    feed(a=a, b=b)
    close(run("BatchMatMul", ["a", "b"], ["y"], broadcast=0), bmm_ref(a, b), 2e-6)
    close(run("BatchMatMul", ["a", "b"], ["y"]), bmm_ref(a, b), 2e-6)


@pytest.mark.parametrize("ta,tb", TRANS)
def test_batch_matmul_k_zero_gives_zeros(ta, tb):
    a = np.zeros((2, 0, 3) if ta else (2, 3, 0), np.float32)
    b = np.zeros((2, 4, 0) if tb else (2, 0, 4), np.float32)
    feed(a=a, b=b)
    # a stale output of another shape and nonzero values is replaced
    feed(y=np.full((5, 5), 7.0, np.float32))
    y = run("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb)
    assert y.shape == (2, 3, 4) and (y == 0).all() and not np.signbit(y).any()


@pytest.mark.parametrize("ash,bsh,yshape", [
    ((0, 3, 4), (0, 4, 5), (0, 3, 5)), ((2, 0, 4), (2, 4, 5), (2, 0, 5)), ((2, 3, 4), (2, 4, 0), (2, 3, 0)),
    ((3, 0, 2, 4), (3, 0, 4, 1), (3, 0, 2, 1)), ((0, 0), (0, 3), (0, 3))])
def test_batch_matmul_empty(ash, bsh, yshape):
    feed(a=np.ones(ash, np.float32), b=np.ones(bsh, np.float32))
    y = run("BatchMatMul", ["a", "b"], ["y"])
    assert y.shape == yshape and y.dtype == np.float32


def test_batch_matmul_rerun_other_shapes(rng):
    net = core.Net("bmm_grow")
    net.BatchMatMul(["a", "b"], "y", trans_b=1)
    for i, (batch, M, N, K) in enumerate([((2,), 3, 4, 5), ((5,), 7, 2, 3), ((1,), 1, 1, 1)]):
        a, b = bmm_inputs(rng, batch, M, N, K, 0, 1)
        feed(a=a, b=b)
        if i == 0:
            workspace.CreateNet(net)
        workspace.RunNet("bmm_grow")
        close(workspace.FetchBlob("y"), bmm_ref(a, b, 0, 1), 2e-6)


def test_batch_matmul_nan_propagates(rng):
    a, b = bmm_inputs(rng, (2,), 2, 2, 2, 0, 0)
    a[1, 0, 0] = np.nan
    feed(a=a, b=b)
    y = run("BatchMatMul", ["a", "b"], ["y"])
    assert np.isnan(y[1, 0]).all() and np.isfinite(y[0]).all() and np.isfinite(y[1, 1]).all()


# ---------------------------------------------------------------- BatchMatMul: gradients
@pytest.mark.parametrize("ta,tb", TRANS)
@pytest.mark.parametrize("batch,M,N,K", [((3,), 2, 4, 3), ((2, 2), 3, 2, 2)])
def test_batch_matmul_gradient_fd(rng, batch, M, N, K, ta, tb):
    a, b = bmm_inputs(rng, batch, M, N, K, ta, tb)
    check_grads(op("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb), [a, b], stepsize=1e-2,
                threshold=1e-2)


# what Caffe2's maker builds: (inputs of dA, flags), (inputs of dB, flags)
BMM_GRAD_OPS = {
    (0, 0): ((["dy", "b"], [("trans_b", 1)]), (["a", "dy"], [("trans_a", 1)])),
    (1, 0): ((["b", "dy"], [("trans_b", 1)]), (["a", "dy"], [])),
    (0, 1): ((["dy", "b"], []), (["dy", "a"], [("trans_a", 1)])),
    (1, 1): ((["b", "dy"], [("trans_a", 1), ("trans_b", 1)]),
             (["dy", "a"], [("trans_a", 1), ("trans_b", 1)])),
}


@pytest.mark.parametrize("ta,tb", TRANS)
def test_batch_matmul_gradient_maker(rng, ta, tb):
    ops, g = G(op("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb), ["dy"])
    assert g == ["a_grad", "b_grad"]
    (ia, fa), (ib, fb) = BMM_GRAD_OPS[(ta, tb)]
    assert ops_of(ops) == [("BatchMatMul", ia, ["a_grad"], fa), ("BatchMatMul", ib, ["b_grad"], fb)]
    # the maker's ops against NumPy: Y = op(A) op(B), dA = dY op(B)^T (transposed back when trans_a), ...
    a, b = bmm_inputs(rng, (2, 3), 3, 4, 5, ta, tb)
    dy = f32(rng, 2, 3, 3, 4)
    feed(a=a, b=b, dy=dy)
    for o in ops:
        workspace.RunOperatorOnce(o)
    d64 = dy.astype(np.float64)
    ra = np.matmul(d64, np.swapaxes(t(b.astype(np.float64), tb), -1, -2))
    rb = np.matmul(np.swapaxes(t(a.astype(np.float64), ta), -1, -2), d64)
    close(workspace.FetchBlob("a_grad"), t(ra, ta), 2e-6)
    close(workspace.FetchBlob("b_grad"), t(rb, tb), 2e-6)


def test_batch_matmul_gradient_maker_no_output_gradient():
    assert G(op("BatchMatMul", ["a", "b"], ["y"]), [None]) == ([], [None, None])


@pytest.mark.parametrize("ta,tb", [(0, 1), (1, 0)])
def test_batch_matmul_gradient_same_blob_twice(rng, ta, tb):
    # attention scores Q Q^T: the two contributions to q's gradient are summed by the backward pass
    ops, g = G(op("BatchMatMul", ["q", "q"], ["y"], trans_a=ta, trans_b=tb), ["dy"])
    assert g == ["q_grad", "q_grad_autogen_bmm_1"]
    net = core.Net("bmm_same")
    net.SumElements(net.Mul([net.BatchMatMul(["q", "q"], "s", trans_a=ta, trans_b=tb), "w"], "sw"), "loss")
    q = f32(rng, 2, 3, 3)
    gradient_checker.NetGradientChecker.Check(net, ["loss"], {"q": q, "w": f32(rng, 2, 3, 3)}, "q",
                                              step_size=1e-2, threshold=1e-2, print_net=False)


def test_batch_matmul_add_gradient_operators(rng):
    net = core.Net("bmm_bw")
    y = net.BatchMatMul(["a", "b"], "y", trans_a=1)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    assert [o.type for o in net.Proto().op][-2:] == ["BatchMatMul", "BatchMatMul"]
    a, b = bmm_inputs(rng, (3,), 2, 4, 5, 1, 0)
    w = f32(rng, 3, 2, 4)
    feed(a=a, b=b, w=w)
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("y"), bmm_ref(a, b, 1, 0), 2e-6)
    w64 = w.astype(np.float64)
    close(workspace.FetchBlob(str(gmap["a"])), np.matmul(b.astype(np.float64), np.swapaxes(w64, 1, 2)), 2e-6)
    close(workspace.FetchBlob(str(gmap["b"])), np.matmul(a.astype(np.float64), w64), 2e-6)


# ---------------------------------------------------------------- BatchMatMul: bad input
BMM_BAD = [
    # (a shape, a dtype, b shape, b dtype, args, exception, message)
    ((2, 3, 4), np.int32, (2, 4, 5), np.float32, {}, TypeError,
     r"op BatchMatMul #0: input 0 blob 'a' must be float32, got \(2, 3, 4\) int32"),
    ((2, 3, 4), np.float32, (2, 4, 5), np.int32, {}, TypeError,
     r"op BatchMatMul #0: input 1 blob 'b' must be float32, got \(2, 4, 5\) int32"),
    ((4,), np.float32, (4, 5), np.float32, {}, ValueError,
     r"op BatchMatMul #0: input 0 blob 'a' must have at least 2 dims \(batch dims, then a matrix\), got "
     r"\(4,\) float32"),
    ((2, 3, 4), np.float32, (4, 5), np.float32, {}, ValueError,
     r"op BatchMatMul #0: input 0 blob 'a' of shape \(2, 3, 4\) float32 and input 1 blob 'b' of shape "
     r"\(4, 5\) float32 must have the same number of dims \(or give broadcast=1\)"),
    ((2, 3, 4), np.float32, (3, 4, 5), np.float32, {}, ValueError,
     r"op BatchMatMul #0: batch dims differ: input 0 blob 'a' of shape \(2, 3, 4\) float32 and input 1 "
     r"blob 'b' of shape \(3, 4, 5\) float32 must agree on all dims but the last two \(dim 0: 2 vs 3; "
     r"or give broadcast=1\)"),
    ((2, 3, 4), np.float32, (2, 5, 6), np.float32, {}, ValueError,
     r"op BatchMatMul #0: inner dimensions differ: input 0 blob 'a' of shape \(2, 3, 4\) float32 gives 3 x 4 "
     r"matrices \(trans_a=0\) but input 1 blob 'b' of shape \(2, 5, 6\) float32 gives 5 x 6 \(trans_b=0\)"),
    ((2, 3, 4), np.float32, (2, 4, 3), np.float32, {"trans_b": 1}, ValueError,
     r"op BatchMatMul #0: inner dimensions differ: .* gives 3 x 4 matrices \(trans_a=0\) but .* gives "
     r"3 x 4 \(trans_b=1\)"),
    ((2, 4, 3), np.float32, (2, 3, 5), np.float32, {"trans_a": 1}, ValueError,
     r"op BatchMatMul #0: inner dimensions differ: .* gives 3 x 4 matrices \(trans_a=1\) but .* gives "
     r"3 x 5 \(trans_b=0\)"),
    ((2, 3, 4), np.float32, (3, 4, 5), np.float32, {"broadcast": 1}, ValueError,
     r"op BatchMatMul #0: batch dims do not broadcast: input 0 blob 'a' of shape \(2, 3, 4\) float32 "
     r"and input 1 blob 'b' of shape \(3, 4, 5\) float32 \(batch dim 1 from the right: 2 vs 3; "
     r"each must be equal or 1\)"),
]


@pytest.mark.parametrize("ash,adt,bsh,bdt,args,exc,msg", BMM_BAD)
def test_batch_matmul_bad_input(ash, adt, bsh, bdt, args, exc, msg):
    feed(a=np.ones(ash, adt), b=np.ones(bsh, bdt))
    with pytest.raises(exc, match=msg):
        workspace.RunOperatorOnce(op("BatchMatMul", ["a", "b"], ["y"], **args))
    # refused already when a net is created (the inputs hold tensors)
    net = core.Net("bmm_bad")
    net.BatchMatMul(["a", "b"], "y", **args)
    with pytest.raises(exc, match="net 'bmm_bad[^']*': " + msg):
        workspace.CreateNet(net)
    # the workspace stays usable
    feed(a=np.ones((2, 3, 4), np.float32), b=np.ones((2, 4, 5), np.float32))
    np.testing.assert_array_equal(run("BatchMatMul", ["a", "b"], ["y"]), np.full((2, 3, 5), 4.0, np.float32))


def test_batch_matmul_unfed_input_and_in_place_refused():
    feed(a=np.ones((2, 3, 4), np.float32))
    with pytest.raises(KeyError, match=r"op BatchMatMul #0: input 1 blob 'nothing' does not exist"):
        workspace.RunOperatorOnce(op("BatchMatMul", ["a", "nothing"], ["y"]))
    with pytest.raises(ValueError, match=r"op BatchMatMul #0: .*same blob 'a'"):
        workspace.RunOperatorOnce(op("BatchMatMul", ["a", "a"], ["a"]))


# ---------------------------------------------------------------- SequenceMask: references
def mask_ref(x, lengths, axis=1, fill=-np.inf):
    ax = axis + x.ndim if axis < 0 else axis
    left, right = int(np.prod(x.shape[:ax])), int(np.prod(x.shape[ax:]))
    y = x.astype(np.float64).reshape(left, right).copy()
    y[np.arange(right)[None, :] >= np.asarray(lengths)[:, None]] = fill
    return y.reshape(x.shape)


def lengths_for(rng, left, right):
    return rng.randint(0, right + 3, size=left).astype(np.int32)


MASK_CASES = [((4, 5), 1), ((4, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), -1), ((3, 4), 0),
              ((2, 3, 4), 0), ((6,), 0)]


def split(shape, axis):
    ax = axis + len(shape) if axis < 0 else axis
    return int(np.prod(shape[:ax], dtype=np.int64)), int(np.prod(shape[ax:], dtype=np.int64))


# ---------------------------------------------------------------- SequenceMask: forward
@pytest.mark.parametrize("shape,axis", MASK_CASES)
@pytest.mark.parametrize("fill", [None, -5.0, 3.5])
def test_sequence_mask(rng, shape, axis, fill):
    x = f32(rng, *shape)
    left, right = split(shape, axis)
    lengths = lengths_for(rng, left, right)
    lengths[0] = 0                       # a row masked entirely
    lengths[-1] = right + 2              # a row not masked at all (a length above right)
    feed(x=x, len=lengths)
    args = {} if fill is None else {"fill_val": fill}
    y = run("SequenceMask", ["x", "len"], ["y"], axis=axis, mode="sequence", **args)
    ref = mask_ref(x, lengths, axis, -np.inf if fill is None else fill)
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_array_equal(y, ref.astype(np.float32))


def test_sequence_mask_defaults_axis_1_fill_minus_inf():
    x = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    feed(x=x, len=np.array([1, 5], np.int32))
    y = run("SequenceMask", ["x", "len"], ["y"])    # mode defaults to 'sequence', axis to 1
    exp = x.reshape(2, 6).copy()
    exp[0, 1:] = -np.inf
    exp[1, 5:] = -np.inf
    np.testing.assert_array_equal(y, exp.reshape(2, 3, 2))


def test_sequence_mask_boundary_exact():
    # position j is masked iff j >= length: the element at index length - 1 is kept, at length masked
    x = np.ones((3, 4), np.float32)
    feed(x=x, len=np.array([1, 3, 4], np.int32))
    y = run("SequenceMask", ["x", "len"], ["y"], fill_val=0.0)
    np.testing.assert_array_equal(y, [[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize("fill", [None, -5.0])
def test_sequence_mask_grad_fills_zero(rng, fill):
    x = f32(rng, 3, 4, 2)
    lengths = np.array([0, 3, 9], np.int32)
    feed(x=x, len=lengths)
    args = {} if fill is None else {"fill_val": fill}
    y = run("SequenceMask", ["x", "len"], ["y"], grad=1, **args)
    np.testing.assert_array_equal(y, mask_ref(x, lengths, 1, 0.0).astype(np.float32))
    assert not np.signbit(y[0]).any()    # +0, not -0


@pytest.mark.parametrize("axis", [1, 2])
def test_sequence_mask_in_place(rng, axis):
    x = f32(rng, 2, 3, 4)
    left, right = split(x.shape, axis)
    lengths = lengths_for(rng, left, right)
    feed(x=x, len=lengths)
    ref = run("SequenceMask", ["x", "len"], ["y"], axis=axis, fill_val=-2.0)
    got = run("SequenceMask", ["x", "len"], ["x"], axis=axis, fill_val=-2.0)
    assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((3, 0), 1), ((2, 0, 3), 2), ((0,), 0), ((2, 3, 0), 1)])
def test_sequence_mask_empty(shape, axis):
    left, _ = split(shape, axis)
    feed(x=np.zeros(shape, np.float32), len=np.ones(left, np.int32))
    y = run("SequenceMask", ["x", "len"], ["y"], axis=axis)
    assert y.shape == shape and y.dtype == np.float32


def test_sequence_mask_nan_kept_where_not_masked():
    x = np.array([[np.nan, 1.0], [np.nan, np.nan]], np.float32)
    feed(x=x, len=np.array([1, 0], np.int32))
    y = run("SequenceMask", ["x", "len"], ["y"], fill_val=2.0)
    assert np.isnan(y[0, 0]) and y[0, 1] == 2.0 and (y[1] == 2.0).all()


# ---------------------------------------------------------------- SequenceMask: gradients
@pytest.mark.parametrize("shape,axis", [((3, 5), 1), ((2, 3, 4), 2), ((2, 3, 4), 1), ((3, 4), -1)])
def test_sequence_mask_gradient_fd(rng, shape, axis):
    x = f32(rng, *shape)
    left, right = split(shape, axis)
    lengths = lengths_for(rng, left, right)
    lengths[0] = 1
    # a finite fill (-inf breaks finite differences); the masked positions have gradient 0
    o = op("SequenceMask", ["x", "len"], ["y"], axis=axis, fill_val=-5.0)
    check_grads(o, [x, lengths], indices=[0], stepsize=1e-2, threshold=1e-2)
    ok, grad, est = gradient_checker.GradientChecker(1e-2, 1e-2).CheckSimple(o, [x, lengths], 0, [0])
    masked = mask_ref(np.ones(shape), lengths, axis, 0.0) == 0
    assert ok and masked.any() and (grad[masked] == 0).all() and (grad[~masked] != 0).any()


def test_sequence_mask_gradient_maker():
    o = op("SequenceMask", ["x", "len"], ["y"], mode="sequence", axis=2, fill_val=-5.0)
    ops, g = G(o, ["dy"])
    assert g == ["x_grad", None]
    assert ops_of(ops) == [("SequenceMask", ["dy", "len"], ["x_grad"],
                            [("axis", 2), ("fill_val", -5.0), ("grad", 1), ("mode", "sequence")])]
    assert G(o, [None]) == ([], [None, None])
    # a forward op that has grad set itself: one grad argument, 1
    ops, _ = G(op("SequenceMask", ["x", "len"], ["y"], grad=0), ["dy"])
    assert ops_of(ops) == [("SequenceMask", ["dy", "len"], ["x_grad"], [("grad", 1)])]


def test_sequence_mask_add_gradient_operators(rng):
    # masked softmax-style use: the default -inf fill in the forward, zeros in the gradient
    net = core.Net("mask_bw")
    y = net.SequenceMask(["x", "len"], "y", axis=2, fill_val=-3.0)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    assert "len" not in gmap or gmap["len"] is None
    x, w = f32(rng, 2, 3, 4), f32(rng, 2, 3, 4)
    lengths = np.array([0, 2, 4, 9, 1, 3], np.int32)
    feed(x=x, w=w, len=lengths)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), mask_ref(x, lengths, 2, -3.0).astype(np.float32))
    np.testing.assert_array_equal(workspace.FetchBlob(str(gmap["x"])),
                                  mask_ref(w, lengths, 2, 0.0).astype(np.float32))


def test_sequence_mask_in_place_forward_gradient(rng):
    # the gradient needs only the lengths, so a forward op in place has one too
    net = core.Net("mask_ip")
    y = net.SequenceMask(["x", "len"], "x", fill_val=0.0)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    x, w = f32(rng, 3, 4), f32(rng, 3, 4)
    lengths = np.array([1, 0, 4], np.int32)
    feed(x=x, w=w, len=lengths)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(gmap["x"])),
                                  mask_ref(w, lengths, 1, 0.0).astype(np.float32))


# ---------------------------------------------------------------- SequenceMask: bad input
MASK_BAD = [
    # (x, lengths, args, exception, message)
    (np.ones((2, 3), np.int32), np.ones(2, np.int32), {}, TypeError,
     r"op SequenceMask #0: input 0 blob 'x' must be float32, got \(2, 3\) int32"),
    (np.ones((2, 3), np.float32), np.ones(2, np.float32), {}, TypeError,
     r"op SequenceMask #0: input 1 blob 'len' must be int32, got \(2,\) float32"),
    (np.ones((2, 3), np.float32), np.ones(3, np.int32), {}, ValueError,
     r"op SequenceMask #0: input 1 blob 'len' \(sequence_lengths\) must have shape \(2,\), one length per "
     r"row of input 0 blob 'x' of shape \(2, 3\) float32 viewed as 2 x 3 at axis 1, got \(3,\) int32"),
    (np.ones((2, 3, 4), np.float32), np.ones(2, np.int32), {"axis": 2}, ValueError,
     r"op SequenceMask #0: input 1 blob 'len' \(sequence_lengths\) must have shape \(6,\), one length per "
     r"row of input 0 blob 'x' of shape \(2, 3, 4\) float32 viewed as 6 x 4 at axis 2, got \(2,\) int32"),
    (np.ones((2, 3), np.float32), np.ones((2, 1), np.int32), {}, ValueError,
     r"op SequenceMask #0: input 1 blob 'len' \(sequence_lengths\) must have shape \(2,\), .* got "
     r"\(2, 1\) int32"),
    (np.ones((2, 3), np.float32), np.ones(2, np.int32), {"axis": 2}, ValueError,
     r"op SequenceMask #0: argument axis=2 is out of range for input 0 blob 'x' of shape \(2, 3\) float32 "
     r"\(must be in \[-2, 2\)\)"),
    (np.ones((2, 3), np.float32), np.ones(2, np.int32), {"mode": "diagonal"}, ValueError,
     r"op SequenceMask #0: argument mode='diagonal' is not supported: one of 'sequence', 'window', 'upper', "
     r"'lower', 'upperdiag', 'lowerdiag'"),
    (np.ones((2, 3), np.float32), np.ones(2, np.int32), {"mode": "upper"}, ValueError,
     r"op SequenceMask #0: mode 'upper' takes 1 input\(s\) \(input\), got 2"),
    (np.ones((2, 3), np.float32), np.ones(2, np.int32), {"batch": 1}, ValueError,
     r"op SequenceMask #0: argument batch=1 must name a dim before axis=1 of input 0 blob 'x' of shape "
     r"\(2, 3\) float32 \(canonical batch in \[0, 1\)\)"),
]


@pytest.mark.parametrize("x,lengths,args,exc,msg", MASK_BAD)
def test_sequence_mask_bad_input(x, lengths, args, exc, msg):
    feed(x=x, len=lengths)
    with pytest.raises(exc, match=msg):
        workspace.RunOperatorOnce(op("SequenceMask", ["x", "len"], ["y"], **args))
    net = core.Net("mask_bad")
    net.SequenceMask(["x", "len"], "y", **args)
    with pytest.raises(exc, match="net 'mask_bad[^']*': " + msg):
        workspace.CreateNet(net)
    # the workspace stays usable
    feed(x=np.ones((2, 3), np.float32), len=np.array([1, 2], np.int32))
    y = run("SequenceMask", ["x", "len"], ["y"], fill_val=0.0)
    np.testing.assert_array_equal(y, [[1, 0, 0], [1, 1, 0]])


def test_sequence_mask_negative_length_at_run():
    feed(x=np.ones((3, 4), np.float32), len=np.array([2, 0, -1], np.int32))
    msg = r"op SequenceMask #0: input 1 blob 'len' \(sequence_lengths\) holds a negative length -1 at index 2"
    with pytest.raises(ValueError, match=msg):
        workspace.RunOperatorOnce(op("SequenceMask", ["x", "len"], ["y"]))
    # a data value: the net is created, the run refuses, the output is untouched
    feed(y=np.full(2, 9.0, np.float32))
    net = core.Net("mask_neg")
    net.SequenceMask(["x", "len"], "y")
    workspace.CreateNet(net)
    with pytest.raises(ValueError, match=msg):
        workspace.RunNet("mask_neg")
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [9.0, 9.0])
    feed(len=np.array([2, 0, 1], np.int32))
    workspace.RunNet("mask_neg")
    np.testing.assert_array_equal(workspace.FetchBlob("y")[2], [1, -np.inf, -np.inf, -np.inf])


def test_sequence_mask_mode_must_be_a_string():
    feed(x=np.ones((2, 3), np.float32), len=np.ones(2, np.int32))
    with pytest.raises(TypeError, match=r"SequenceMask.*mode"):
        workspace.RunOperatorOnce(op("SequenceMask", ["x", "len"], ["y"], mode=1))
