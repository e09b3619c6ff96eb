"""BatchMatMul with broadcast=1 and BatchMatMulGradient, Pow with an exponent
tensor and PowGradient (dY, X, E, Y), Gather with an axis, BatchGather and
BatchGatherGradient (csrc/ops/bmm_pow.c; makers in recurrent/_grad_batch.py,
_grad_math.py, _grad_embed.py): NumPy float64 references (np.matmul,
np.power, np.take), finite-difference gradients, bad input with exact
messages."""

import re

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import close, f32, feed, op, run


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


# ---------------------------------------------------------------- BatchMatMul, broadcast=1
def t(x, flag):
    return np.swapaxes(x, -1, -2) if flag and x.ndim >= 2 else x


def bmm_ref(a, b, ta=0, tb=0):
    return np.matmul(t(a.astype(np.float64), ta), t(b.astype(np.float64), tb))


BC_SHAPES = [  # A and B shapes as the op sees them with trans_a = trans_b = 0 (transposed below)
    ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((4,), (3, 4, 2)), ((2, 3, 4), (4,)),
    ((4,), (4,)), ((1, 3, 4), (2, 1, 4, 5)), ((2, 3, 4), (2, 4, 5)), ((6, 1, 2, 3), (1, 7, 3, 2)),
    ((0, 3, 4), (1, 4, 2)), ((2, 3, 0), (1, 0, 2)), ((4,), (1, 4, 0))]
TRANS = [(0, 0), (1, 0), (0, 1), (1, 1)]


def bc_inputs(rng, ash, bsh, ta, tb):
    a = f32(rng, *ash)
    b = f32(rng, *bsh)
    # the stored layouts: transposed where the flag is set (1-D operands ignore their flag)
    return np.ascontiguousarray(t(a, ta)), np.ascontiguousarray(t(b, tb))


@pytest.mark.parametrize("ash,bsh", BC_SHAPES)
@pytest.mark.parametrize("ta,tb", TRANS)
def test_batch_matmul_broadcast(rng, ash, bsh, ta, tb):
    a, b = bc_inputs(rng, ash, bsh, ta, tb)
    feed(a=a, b=b)
    y = run("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb, broadcast=1)
    ref = bmm_ref(a, b, ta, tb)
    if ref.ndim == 0:
        ref = ref.reshape(1)  # vector . vector: shape (1,), as Caffe2
    close(y, ref, 3e-6)


def test_batch_matmul_broadcast_equal_shapes_bitwise_the_plain_path(rng):
    a, b = f32(rng, 3, 2, 4, 5), f32(rng, 3, 2, 5, 6)
    feed(a=a, b=b)
    y0 = run("BatchMatMul", ["a", "b"], ["y"])
    y1 = run("BatchMatMul", ["a", "b"], ["y"], broadcast=1)
    assert y0.tobytes() == y1.tobytes()


def test_batch_matmul_broadcast_repeats_the_right_blocks():
    # A's batch element i is (i + 1) I, B (1, 3, 2) is shared: Y[i] = (i + 1) B[0]
    a = np.stack([np.eye(3, dtype=np.float32) * (i + 1) for i in range(4)]).reshape(2, 2, 3, 3)
    b = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    feed(a=a, b=b)
    y = run("BatchMatMul", ["a", "b"], ["y"], broadcast=1)
    np.testing.assert_array_equal(y, (np.arange(1, 5, dtype=np.float32).reshape(2, 2, 1, 1) * b[0]))


def reduce_to(g, shape):
    """Sums g (the broadcast shape) down to shape, numpy's broadcasting backwards."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, (s, gs) in enumerate(zip(shape, g.shape)) if s == 1 and gs != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def bmm_grad_ref(a, b, dy, ta, tb):
    """dA, dB of Y = op(A) op(B) (numpy.matmul), in float64."""
    a64, b64, dy64 = (x.astype(np.float64) for x in (a, b, dy))
    A = a64[None, :] if a.ndim == 1 else t(a64, ta)
    B = b64[:, None] if b.ndim == 1 else t(b64, tb)
    D = dy64.reshape(np.matmul(A, B).shape)
    dA = np.matmul(D, np.swapaxes(B, -1, -2))
    dB = np.matmul(np.swapaxes(A, -1, -2), D)
    dA = reduce_to(dA, A.shape).reshape(A.shape)
    dB = reduce_to(dB, B.shape).reshape(B.shape)
    dA = dA.reshape(a.shape) if a.ndim == 1 else t(dA, ta)
    dB = dB.reshape(b.shape) if b.ndim == 1 else t(dB, tb)
    return dA, dB


@pytest.mark.parametrize("ash,bsh", BC_SHAPES)
@pytest.mark.parametrize("ta,tb", TRANS)
def test_batch_matmul_gradient_reference(rng, ash, bsh, ta, tb):
    a, b = bc_inputs(rng, ash, bsh, ta, tb)
    y = bmm_ref(a, b, ta, tb)
    dy = f32(rng, *(y.shape or (1,)))
    feed(a=a, b=b, dy=dy)
    fwd = op("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb, broadcast=1)
    ops, g_in = G(fwd, ["dy"])
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [
        ("BatchMatMulGradient", ["a", "b", "dy"], ["a_grad", "b_grad"])]
    assert g_in == ["a_grad", "b_grad"]
    workspace.RunOperatorOnce(ops[0])
    da, db = bmm_grad_ref(a, b, dy, ta, tb)
    close(workspace.FetchBlob("a_grad"), da, 1e-5)
    close(workspace.FetchBlob("b_grad"), db, 1e-5)


@pytest.mark.parametrize("ash,bsh,ta,tb", [
    ((2, 1, 3, 4), (5, 4, 6), 0, 0), ((4,), (3, 4, 2), 0, 1), ((2, 3, 4), (4,), 1, 0), ((4,), (4,), 0, 0),
    ((1, 3, 4), (2, 1, 4, 5), 1, 1), ((3, 4), (2, 4, 5), 0, 0)])
def test_batch_matmul_broadcast_gradient_finite_differences(rng, ash, bsh, ta, tb):
    a, b = bc_inputs(rng, ash, bsh, ta, tb)
    check_grads(op("BatchMatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb, broadcast=1), [a, b])


def test_batch_matmul_broadcast_gradient_same_blob(rng):
    a = f32(rng, 2, 3, 3)
    ops, g_in = G(op("BatchMatMul", ["a", "a"], ["y"], broadcast=1), ["dy"])
    assert g_in == ["a_grad", "a_grad_autogen_bmm_1"]
    feed(a=a, dy=f32(rng, 2, 3, 3))
    workspace.RunOperatorOnce(ops[0])
    da, db = bmm_grad_ref(a, a, workspace.FetchBlob("dy"), 0, 0)
    close(workspace.FetchBlob("a_grad"), da, 1e-5)
    close(workspace.FetchBlob("a_grad_autogen_bmm_1"), db, 1e-5)


def test_batch_matmul_broadcast_backward_through_net(rng):
    a, b = f32(rng, 4, 3), f32(rng, 2, 3, 5)
    feed(a=a, b=b)
    net = core.Net("bmm_bc_bwd")
    y = net.BatchMatMul(["a", "b"], "y", broadcast=1)
    loss = net.SumElements([y], "loss")
    net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    dy = np.ones((2, 4, 5))
    da, db = bmm_grad_ref(a, b, dy, 0, 0)
    close(workspace.FetchBlob("a_grad"), da, 1e-5)
    close(workspace.FetchBlob("b_grad"), db, 1e-5)


BC_BAD = [
    ((2, 3, 4), (3, 4, 5), {}, ValueError,
     r"^op BatchMatMul #0: batch dims do not broadcast: input 0 blob 'a' of shape \(2, 3, 4\) float32 and "
     r"input 1 "
     r"blob 'b' of shape \(3, 4, 5\) float32 \(batch dim 1 from the right: 2 vs 3; each must be equal or "
     r"1\)$"),
    ((2, 3, 3, 4), (3, 1, 4, 5), {}, ValueError,
     r"^op BatchMatMul #0: batch dims do not broadcast: .* \(batch dim 2 from the right: 2 vs 3; each "
     r"must be equal or 1\)$"),
    ((3, 4), (5,), {}, ValueError,
     r"^op BatchMatMul #0: inner dimensions differ: input 0 blob 'a' of shape \(3, 4\) float32 gives 3 x 4 "
     r"matrices \(trans_a=0\) but input 1 blob 'b' of shape \(5,\) float32 gives 5 x 1 \(trans_b=0\)$"),
    ((4,), (5,), {"trans_a": 1}, ValueError,
     r"^op BatchMatMul #0: inner dimensions differ: input 0 blob 'a' of shape \(4,\) float32 gives 1 x 4 "
     r"matrices \(trans_a=1\) but input 1 blob 'b' of shape \(5,\) float32 gives 5 x 1 \(trans_b=0\)$"),
    ((), (4,), {}, ValueError, r"^op BatchMatMul #0: input 0 blob 'a' must have at least 1 dim, got \(\) "
                               r"float32$"),
]


@pytest.mark.parametrize("ash,bsh,args,exc,msg", BC_BAD)
def test_batch_matmul_broadcast_bad_input(ash, bsh, args, exc, msg):
    feed(a=np.ones(ash, np.float32), b=np.ones(bsh, np.float32))
    raises(exc, msg, op("BatchMatMul", ["a", "b"], ["y"], broadcast=1, **args))
    net = core.Net("bmm_bc_bad")
    net.BatchMatMul(["a", "b"], "y", broadcast=1, **args)
    with pytest.raises(exc) as info:
        workspace.CreateNet(net)
    assert re.search("net 'bmm_bc_bad[^']*': " + msg[1:], str(info.value))  # the message, not the note
    feed(a=np.ones((3, 4), np.float32), b=np.ones((2, 4, 5), np.float32))
    np.testing.assert_array_equal(run("BatchMatMul", ["a", "b"], ["y"], broadcast=1),
                                  np.full((2, 3, 5), 4.0, np.float32))


def test_batch_matmul_gradient_op_bad_input(rng):
    feed(a=f32(rng, 2, 3, 4), b=f32(rng, 4, 5), dy=f32(rng, 2, 3, 6), ai=np.ones((2, 3, 4), np.int32))
    raises(ValueError, r"^op BatchMatMulGradient #0: input 2 blob 'dy' \(dY\) of shape \(2, 3, 6\) "
                       r"float32 must "
                       r"have the forward result's shape \(2, 3, 5\) float32 \(input 0 blob 'a' \(2, 3, "
                       r"4\) float32 times input 1 blob 'b' \(4, 5\) float32\)$",
           op("BatchMatMulGradient", ["a", "b", "dy"], ["da", "db"]))
    raises(ValueError, r"^op BatchMatMulGradient #0: argument broadcast=0: this op is the gradient of "
                       r"BatchMatMul with broadcast=1",
           op("BatchMatMulGradient", ["a", "b", "dy"], ["da", "db"], broadcast=0))
    raises(TypeError, r"^op BatchMatMulGradient #0: input 0 blob 'ai' must be float32, got \(2, 3, 4\) "
                      r"int32$",
           op("BatchMatMulGradient", ["ai", "b", "dy"], ["da", "db"]))


# ---------------------------------------------------------------- Pow(X, E)
POW_SHAPES = [  # (X shape, E shape, args)
    ((3, 4), (3, 4), {}), ((3, 4), (4,), {}), ((2, 1, 4), (3, 1), {}), ((4,), (2, 3, 4), {}),
    ((2, 3, 4), (3,), {"broadcast": 1, "axis": 1}), ((2, 3, 4), (3, 4), {"broadcast": 1}),
    ((2, 3), (1,), {}), ((0, 3), (3,), {})]


def pow_out_shape(xs, es, args):
    return xs if args.get("broadcast") else np.broadcast_shapes(xs, es)


def legacy_e(e, xs, args):
    """E reshaped so that numpy broadcasts it as Caffe2's legacy form does."""
    if not args.get("broadcast"):
        return e
    axis = args.get("axis", len(xs) - e.ndim)
    return e.reshape(e.shape + (1,) * (len(xs) - axis - e.ndim))


@pytest.mark.parametrize("xs,es,args", POW_SHAPES)
def test_pow_tensor(rng, xs, es, args):
    x = f32(rng, *xs, lo=0.2, hi=2.0)
    e = f32(rng, *es, lo=-2.0, hi=3.0)
    feed(x=x, e=e)
    y = run("Pow", ["x", "e"], ["y"], **args)
    close(y, np.power(x.astype(np.float64), legacy_e(e, xs, args).astype(np.float64)), 2e-6)
    assert y.shape == pow_out_shape(xs, es, args)


@pytest.mark.parametrize("ev", [0.0, 1.0, 2.0, 0.5, -1.0, 3.0, -2.5])
def test_pow_tensor_bitwise_the_argument_path(rng, ev):
    x = f32(rng, 5, 4, lo=-2.0, hi=2.0)
    x[0, :3] = [0.0, -0.0, np.inf]
    feed(x=x, e=np.full((5, 4), ev, np.float32), e1=np.full((1,), ev, np.float32))
    ya = run("Pow", ["x"], ["y"], exponent=ev)
    assert run("Pow", ["x", "e"], ["y"]).tobytes() == ya.tobytes()
    assert run("Pow", ["x", "e1"], ["y"]).tobytes() == ya.tobytes()


def test_pow_tensor_in_place(rng):
    x, e = f32(rng, 3, 4, lo=0.5, hi=2), f32(rng, 4)
    feed(x=x, e=e)
    workspace.RunOperatorOnce(op("Pow", ["x", "e"], ["x"]))
    close(workspace.FetchBlob("x"), np.power(x.astype(np.float64), e), 2e-6)
    feed(x=x, e=e)
    raises(ValueError, r"^op Pow #0: ", op("Pow", ["x", "e"], ["e"]))  # the result does not have E's shape


def pow_grad_ref(x, e, dy, xs, es, args):
    x64 = x.astype(np.float64)
    e64 = legacy_e(e, xs, args).astype(np.float64)
    y = np.power(x64, e64)
    dx = dy * e64 * np.power(x64, e64 - 1)
    de = dy * y * np.log(x64)
    dx = reduce_to(dx, x.shape).reshape(x.shape)
    de = reduce_to(de, e64.shape).reshape(e.shape)
    return dx, de


@pytest.mark.parametrize("xs,es,args", POW_SHAPES)
def test_pow_tensor_gradient_reference(rng, xs, es, args):
    x = f32(rng, *xs, lo=0.2, hi=2.0)
    e = f32(rng, *es, lo=-2.0, hi=3.0)
    feed(x=x, e=e)
    fwd = op("Pow", ["x", "e"], ["y"], **args)
    workspace.RunOperatorOnce(fwd)
    dy = f32(rng, *pow_out_shape(xs, es, args))
    feed(dy=dy)
    ops, g_in = G(fwd, ["dy"])
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [
        ("PowGradient", ["dy", "x", "e", "y"], ["x_grad", "e_grad"])]
    assert g_in == ["x_grad", "e_grad"]
    workspace.RunOperatorOnce(ops[0])
    dx, de = pow_grad_ref(x, e, dy.astype(np.float64), xs, es, args)
    close(workspace.FetchBlob("x_grad"), dx, 2e-5)
    close(workspace.FetchBlob("e_grad"), de, 2e-5)


@pytest.mark.parametrize("xs,es,args", [((3, 4), (3, 4), {}), ((2, 3), (3,), {}), ((2, 1, 3), (4, 1), {}),
                                        ((2, 3, 4), (3,), {"broadcast": 1, "axis": 1})])
def test_pow_tensor_gradient_finite_differences(rng, xs, es, args):
    x = f32(rng, *xs, lo=0.5, hi=1.5)
    e = f32(rng, *es, lo=-1.5, hi=2.5)
    check_grads(op("Pow", ["x", "e"], ["y"], **args), [x, e], stepsize=1e-3, threshold=2e-2)


def test_pow_tensor_gradient_at_zero_and_negative():
    # x == 0, e >= 0: dE = 0 (Caffe2's formula gave NaN); e == 0: dX = 0; x < 0: dE is NaN
    x = np.array([0.0, 0.0, 0.0, -2.0, 3.0], np.float32)
    e = np.array([2.0, 0.0, 1.0, 2.0, 0.0], np.float32)
    feed(x=x, e=e, dy=np.ones(5, np.float32))
    run("Pow", ["x", "e"], ["y"])
    dx, de = run("PowGradient", ["dy", "x", "e", "y"], ["dx", "de"])
    np.testing.assert_array_equal(dx, [0.0, 0.0, 1.0, -4.0, 0.0])
    np.testing.assert_array_equal(de[:3], [0.0, 0.0, 0.0])
    assert np.isnan(de[3])
    close(de[4:], [np.log(3.0)], 1e-6)


def test_pow_tensor_gradient_in_place_refused_and_same_blob():
    with pytest.raises(ValueError, match=r"^Pow gradient: the forward op computes 'x' in place"):
        G(op("Pow", ["x", "e"], ["x"]), ["x_grad"])
    with pytest.raises(ValueError, match=r"^Pow gradient: the forward op computes 'e' in place"):
        G(op("Pow", ["x", "e"], ["e"]), ["e_grad"])
    ops, g_in = G(op("Pow", ["x", "x"], ["y"]), ["dy"])
    assert g_in == ["x_grad", "x_grad_autogen_pow_1"]
    feed(x=np.array([0.5, 2.0], np.float32), dy=np.ones(2, np.float32))
    workspace.RunOperatorOnce(op("Pow", ["x", "x"], ["y"]))
    workspace.RunOperatorOnce(ops[0])
    x = np.array([0.5, 2.0])
    close(workspace.FetchBlob("x_grad") + workspace.FetchBlob("x_grad_autogen_pow_1"),
          x ** x * (np.log(x) + 1), 1e-6)


def test_pow_tensor_bad_input(rng):
    feed(x=f32(rng, 2, 3, lo=0.1, hi=1.0), e=f32(rng, 4), ei=np.ones(3, np.int32), e3=f32(rng, 3),
         dy=f32(rng, 2, 4),
         y=f32(rng, 2, 3))
    raises(ValueError, r"^op Pow #0: input 1 blob 'e' is the exponent tensor: the argument 'exponent' "
                       r"must not be given too$", op("Pow", ["x", "e"], ["y"], exponent=2.0))
    raises(TypeError, r"^op Pow #0: input 1 blob 'ei' must be float32, got \(3,\) int32$",
           op("Pow", ["x", "ei"], ["y"]))
    raises(ValueError, r"^op Pow #0: .*'x'.*\(2, 3\).*'e'.*\(4,\)", op("Pow", ["x", "e"], ["y"]))
    raises(ValueError, r"^op Pow #0: argument 'axis' needs broadcast=1$",
        op("Pow", ["x", "e3"], ["y"], axis=1))
    raises(ValueError, r"^op PowGradient #0: input 0 blob 'dy' of shape \(2, 4\) float32 must have the shape "
                       r"\(2, 3\) float32 of the forward result \(input 1 blob 'x' \(2, 3\) float32 with "
                       r"input 2 blob 'e3' \(3,\) float32\)$",
           op("PowGradient", ["dy", "x", "e3", "y"], ["dx", "de"]))
    raises(ValueError, r"^op PowGradient #0: takes \(X, dY\) -> dX with the argument 'exponent', or \(dY, "
                       r"X, E, Y\) -> \(dX, dE\), got 3 inputs and 1 outputs$",
           op("PowGradient", ["dy", "x", "e3"], ["dx"]))
    # the workspace stays usable
    close(run("Pow", ["x", "e3"], ["y"]), np.power(workspace.FetchBlob("x").astype(np.float64),
                                                   workspace.FetchBlob("e3")), 2e-6)


# ---------------------------------------------------------------- Gather(axis), BatchGather
GATHER_CASES = [  # (DATA shape, INDICES, axis)
    ((2, 5, 3), [[0, 2], [4, 4]], 1), ((2, 5, 3), [2, 0, 2, 1], 2), ((2, 5, 3), [1, 1, 0], -1),
    ((4, 3), [2, 0], 1), ((3, 4, 2, 2), [3], 1), ((2, 5, 3), [], 1), ((2, 5, 3), [[1], [3]], -2),
    ((2, 5, 3), [1, 0, 1], 0), ((2, 5, 3), [1, 0, 1], -3)]


@pytest.mark.parametrize("shape,idx,axis", GATHER_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_gather_axis(rng, shape, idx, axis, dtype):
    data = (rng.uniform(-100, 100, shape)).astype(dtype)
    i = np.array(idx, np.int32)
    feed(d=data, i=i)
    out = run("Gather", ["d", "i"], ["o"], axis=axis)
    ref = np.take(data, i, axis=axis)
    assert out.dtype == dtype and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("shape,idx", [((2, 5, 3), [[0, 2], [4, 4]]), ((3, 4), [3, 3, 0]), ((2, 3), [])])
def test_batch_gather(rng, shape, idx):
    data = f32(rng, *shape)
    i = np.array(idx, np.int32)
    feed(d=data, i=i)
    np.testing.assert_array_equal(run("BatchGather", ["d", "i"], ["o"]), np.take(data, i, axis=1))


def gather_grad_ref(data, i, dout, axis):
    axis = axis % data.ndim
    g = np.zeros(data.shape, np.float64)
    moved = np.moveaxis(g, axis, 0)
    dmoved = dout.astype(np.float64).reshape(data.shape[:axis] + (i.size,) + data.shape[axis + 1:])
    np.add.at(moved, i.reshape(-1), np.moveaxis(dmoved, axis, 0))
    return g


@pytest.mark.parametrize("shape,idx,axis", [c for c in GATHER_CASES if c[2] % len(c[0]) != 0])
def test_gather_axis_gradient(rng, shape, idx, axis):
    data = f32(rng, *shape)
    i = np.array(idx, np.int32)
    fwd = op("Gather", ["d", "i"], ["o"], axis=axis)
    ops, g_in = G(fwd, ["do"])
    assert [(o.type, list(o.input), list(o.output), [(a.name, a.i) for a in o.arg]) for o in ops] == [
        ("BatchGatherGradient", ["d", "i", "do"], ["d_grad"], [("axis", axis)])]
    assert g_in == ["d_grad", None]
    dout = f32(rng, *np.take(data, i, axis=axis).shape)
    feed(d=data, i=i, do=dout)
    workspace.RunOperatorOnce(ops[0])
    close(workspace.FetchBlob("d_grad"), gather_grad_ref(data, i, dout, axis), 1e-6)


def test_gather_axis0_keeps_the_sparse_gradient():
    ops, g_in = G(op("Gather", ["d", "i"], ["o"]), ["do"])
    assert ops == [] and isinstance(g_in[0], core.GradientSlice) and g_in[1] is None
    ops, g_in = G(op("Gather", ["d", "i"], ["o"], axis=0), ["do"])
    assert ops == [] and isinstance(g_in[0], core.GradientSlice)


@pytest.mark.parametrize("shape,idx,axis", [((2, 5, 3), [[0, 2], [4, 4]], 1), ((2, 3, 4), [3, 0, 3], -1)])
def test_gather_axis_gradient_finite_differences(rng, shape, idx, axis):
    check_grads(op("Gather", ["d", "i"], ["o"], axis=axis), [f32(rng, *shape), np.array(idx, np.int32)], [0])


def test_batch_gather_gradient(rng):
    data, i = f32(rng, 3, 4, 2), np.array([1, 3, 1], np.int32)
    ops, g_in = G(op("BatchGather", ["d", "i"], ["o"]), ["do"])
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [
        ("BatchGatherGradient", ["d", "i", "do"], ["d_grad"])]
    dout = f32(rng, 3, 3, 2)
    feed(d=data, i=i, do=dout)
    workspace.RunOperatorOnce(ops[0])
    close(workspace.FetchBlob("d_grad"), gather_grad_ref(data, i, dout, 1), 1e-6)
    check_grads(op("BatchGather", ["d", "i"], ["o"]), [data, i], [0])


def test_gather_axis_bad_input(rng):
    feed(d=f32(rng, 2, 5, 3), i=np.array([[0, 5]], np.int32), ok=np.array([1, 0], np.int32),
         neg=np.array([-1], np.int32), fi=np.ones(2, np.float32), d1=f32(rng, 4), do=f32(rng, 2, 3, 3))
    raises(IndexError, r"^op Gather #0: input 1 blob 'i': index 5 at position 1 is out of range \[0, 5\) "
                       r"\(dim 1 of input 0 blob 'd' of shape \(2, 5, 3\) float32\)$",
           op("Gather", ["d", "i"], ["o"], axis=1))
    raises(IndexError, r"^op Gather #0: input 1 blob 'neg': index -1 at position 0 is out of range \[0, "
                       r"3\) \(dim 2 of", op("Gather", ["d", "neg"], ["o"], axis=-1))
    raises(ValueError, r"^op Gather #0: argument axis=3 is out of range for input 0 blob 'd' \(DATA\) of "
                       r"shape \(2, 5, 3\) float32 \(must be in \[-3, 3\)\)$",
           op("Gather", ["d", "ok"], ["o"], axis=3))
    raises(ValueError, r"^op Gather #0: argument axis=-4 is out of range",
        op("Gather", ["d", "ok"], ["o"], axis=-4))
    raises(TypeError, r"^op Gather #0: input 1 blob 'fi' must be int32, got \(2,\) float32$",
           op("Gather", ["d", "fi"], ["o"], axis=1))
    raises(ValueError, r"^op BatchGather #0: input 0 blob 'd1' \(DATA\) must have at least 2 dims, got "
                       r"\(4,\) float32$", op("BatchGather", ["d1", "ok"], ["o"]))
    raises(IndexError, r"^op BatchGather #0: input 1 blob 'i': index 5 at position 1 is out of range \[0, "
                       r"5\)",
           op("BatchGather", ["d", "i"], ["o"]))
    raises(ValueError, r"^op BatchGatherGradient #0: input 2 blob 'do' \(the output gradient\) of shape "
                       r"\(2, 3, "
                       r"3\) float32 must have the gathered shape \(2, 2, 3\) float32 \(input 0 blob 'd' "
                       r"\(2, 5, 3\) float32 at axis 1, input 1 blob 'ok' \(2,\) int32\)$",
           op("BatchGatherGradient", ["d", "ok", "do"], ["dd"]))
    # nothing was written by the failed runs; the workspace stays usable
    np.testing.assert_array_equal(run("Gather", ["d", "ok"], ["o"], axis=1),
                                  np.take(workspace.FetchBlob("d"), [1, 0], axis=1))
