"""Math operators (DESIGN.md §3): FC, MatMul, Sum, SumInt, Accumulate, RowMul, ReduceTailSum,
Add/Sub/Mul (+ legacy broadcast),
SumReduceLike, Sigmoid/Tanh/Relu, ElementwiseLinear, Scale, Sqr, Negative, WeightedSum, Copy and
their gradient ops, against NumPy references; bad input; gradients by finite
differences; a small MLP trained with WeightedSum SGD."""

import numpy as np
import pytest

from recurrent import core, gradient_checker, workspace


def op(type_, inputs, outputs, **args):
    return core.CreateOperator(type_, inputs, outputs, **args)


def feed(**blobs):
    for k, v in blobs.items():
        workspace.FeedBlob(k, np.asarray(v))


def run(type_, inputs, outputs, **args):
    workspace.RunOperatorOnce(op(type_, inputs, outputs, **args))
    res = [workspace.FetchBlob(o) for o in outputs]
    return res[0] if len(res) == 1 else res


def f32(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def i32(x):
    return np.asarray(x, np.int32)


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def fails(exc, message, type_, inputs, outputs=("o",), **args):
    """Running op type_ raises exc with exactly this message."""
    with pytest.raises(exc) as e:
        workspace.RunOperatorOnce(op(type_, inputs, list(outputs), **args))
    assert str(e.value) == message


def close(a, b, tol=1e-5):
    a = np.asarray(a)
    b = np.asarray(b, dtype=np.float32)
    assert a.dtype == np.float32
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---------------------------------------------------------------- FC
@pytest.mark.parametrize("xs,ws,axis,axis_w", [
    ((4, 5), (3, 5), 1, 1),
    ((2, 4, 5), (3, 5), 2, 1),          # FC over the last axis of a 3-D input (rnn_cell's i2h)
    ((2, 4, 5), (3, 20), 1, 1),         # flatten 4 x 5
    ((2, 4, 5), (3, 4, 5), 1, 1),       # W flattened at axis_w=1 to 3 x 20
    ((2, 4, 5), (3, 2, 5), 2, 2),       # W flattened at axis_w=2 to 6 x 5
    ((2, 4, 5), (3, 5), -1, -1),        # negative axes
    ((0, 5), (3, 5), 1, 1),             # M = 0
    ((4, 0), (3, 0), 1, 1),             # K = 0: Y = b
])
def test_fc(rng, xs, ws, axis, axis_w):
    x = f32(rng, *xs)
    w = f32(rng, *ws)
    ax = axis % len(xs)
    axw = axis_w % len(ws)
    N = int(np.prod(ws[:axw]))
    b = f32(rng, N)
    feed(x=x, w=w, b=b)
    y = run("FC", ["x", "w", "b"], ["y"], axis=axis, axis_w=axis_w)
    K = int(np.prod(xs[ax:]))
    x2 = x.reshape(int(np.prod(xs[:ax])), K)
    w2 = w.reshape(N, K)
    close(y, (x2 @ w2.T + b).reshape(xs[:ax] + (N,)))

    dy = f32(rng, *y.shape)
    feed(dy=dy)
    dw, db, dx = run("FCGradient", ["x", "w", "dy"], ["dw", "db", "dx"], axis=axis, axis_w=axis_w)
    dy2 = dy.reshape(x2.shape[0], N)
    close(dw, (dy2.T @ x2).reshape(ws))
    close(db, dy2.sum(0))
    close(dx, (dy2 @ w2).reshape(xs))
    # two outputs: no dX
    dw2, db2 = run("FCGradient", ["x", "w", "dy"], ["dw2", "db2"], axis=axis, axis_w=axis_w)
    close(dw2, dw, 0)
    close(db2, db, 0)


def test_fc_default_args_and_rerun_same_buffer(rng):
    feed(x=f32(rng, 3, 4), w=f32(rng, 2, 4), b=f32(rng, 2))
    y1 = run("FC", ["x", "w", "b"], ["y"])
    y2 = run("FC", ["x", "w", "b"], ["y"])
    np.testing.assert_array_equal(y1, y2)


def test_fc_bad_inputs(rng):
    feed(x=f32(rng, 4, 5), w=f32(rng, 3, 6), b=f32(rng, 3))
    with pytest.raises(ValueError, match=r"op FC #0: .*'w'.*\(3, 6\).*'x'.*\(4, 5\)"):
        workspace.RunOperatorOnce(op("FC", ["x", "w", "b"], ["y"]))
    feed(w1=f32(rng, 5))
    with pytest.raises(ValueError, match=r"op FC #0: input 1 blob 'w1' must have at least 2 dims.*\(5,\) float32"):
        workspace.RunOperatorOnce(op("FC", ["x", "w1", "b"], ["y"]))
    feed(w=f32(rng, 3, 5), b2=f32(rng, 4))
    with pytest.raises(ValueError, match=r"op FC #0: input 2 blob 'b2' must have shape \(3,\)"):
        workspace.RunOperatorOnce(op("FC", ["x", "w", "b2"], ["y"]))
    with pytest.raises(ValueError, match=r"op FC #0: .*'x'.*axis=3"):
        workspace.RunOperatorOnce(op("FC", ["x", "w", "b"], ["y"], axis=3))
    feed(xi=np.ones((4, 5), np.int32))
    with pytest.raises(TypeError, match=r"op FC #0: input 0 blob 'xi' must be float32, got \(4, 5\) int32"):
        workspace.RunOperatorOnce(op("FC", ["xi", "w", "b"], ["y"]))
    feed(dy=f32(rng, 4, 2))
    with pytest.raises(ValueError, match=r"op FCGradient #0: input 2 blob 'dy'"):
        workspace.RunOperatorOnce(op("FCGradient", ["x", "w", "dy"], ["dw", "db", "dx"]))
    with pytest.raises(ValueError, match=r"op FC #0: .*same blob 'x'"):
        workspace.RunOperatorOnce(op("FC", ["x", "w", "b"], ["x"]))


# ---------------------------------------------------------------- FCTransposed
@pytest.mark.parametrize("xs,ws,axis,axis_w", [
    ((4, 5), (5, 3), 1, 1),
    ((2, 4, 5), (5, 3), 2, 1),          # over the last axis of a 3-D input
    ((2, 4, 5), (20, 3), 1, 1),         # X flattened 4 x 5
    ((2, 4, 5), (4, 5, 3), 1, 2),       # W flattened at axis_w=2 to 20 x 3
    ((4, 5), (5, 3, 1, 1), 1, 1),       # Caffe2's multi_dim W (K, N, 1, 1): N = 3
    ((2, 4, 5), (5, 3), -1, -1),        # negative axes
    ((0, 5), (5, 3), 1, 1),             # M = 0
    ((4, 0), (0, 3), 1, 1),             # K = 0: Y = b
])
def test_fc_transposed(rng, xs, ws, axis, axis_w):
    x = f32(rng, *xs)
    w = f32(rng, *ws)
    ax = axis % len(xs)
    axw = axis_w % len(ws)
    N = int(np.prod(ws[axw:]))
    K = int(np.prod(xs[ax:]))
    b = f32(rng, N)
    feed(x=x, w=w, b=b)
    y = run("FCTransposed", ["x", "w", "b"], ["y"], axis=axis, axis_w=axis_w)
    x2 = x.reshape(int(np.prod(xs[:ax])), K)
    w2 = w.reshape(K, N)
    close(y, (x2 @ w2 + b).reshape(xs[:ax] + (N,)))
    # FC with W^T gives the same
    feed(wt=np.ascontiguousarray(w2.T))
    close(run("FC", ["x", "wt", "b"], ["yf"], axis=axis), y)

    dy = f32(rng, *y.shape)
    feed(dy=dy)
    dw, db, dx = run("FCTransposedGradient", ["x", "w", "dy"], ["dw", "db", "dx"], axis=axis, axis_w=axis_w)
    dy2 = dy.reshape(x2.shape[0], N)
    close(dw, (x2.T @ dy2).reshape(ws))
    close(db, dy2.sum(0))
    close(dx, (dy2 @ w2.T).reshape(xs))
    dw2, db2 = run("FCTransposedGradient", ["x", "w", "dy"], ["dw2", "db2"], axis=axis, axis_w=axis_w)
    close(dw2, dw, 0)
    close(db2, db, 0)


@pytest.mark.parametrize("xs,ws,args", [
    ((3, 4), (4, 5), {}),
    ((2, 3, 4), (4, 5), {"axis": 2}),
    ((2, 6), (6, 5, 1), {}),               # W (K, N, 1): N = 5
])
def test_fc_transposed_gradient(rng, xs, ws, args):
    N = int(np.prod(ws[args.get("axis_w", 1):]))
    o = core.CreateOperator("FCTransposed", ["x", "w", "b"], ["y"], **args)
    check_grads(o, [f32(rng, *xs), f32(rng, *ws), f32(rng, N)])
    ops, g = core.GradientRegistry.GetGradientForOp(o, ["y_grad"])
    assert g == ["x_grad", "w_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("FCTransposedGradient", ["x", "w", "y_grad"], ["w_grad", "b_grad", "x_grad"])]
    assert core.GradientRegistry.GetGradientForOp(o, [None]) == ([], [None, None, None])


def test_fc_transposed_bad_inputs(rng):
    feed(x=f32(rng, 4, 5), w=f32(rng, 6, 3), b=f32(rng, 3), w2=f32(rng, 5, 3), b2=f32(rng, 4),
         dy=f32(rng, 4, 2), xi=np.ones((4, 5), np.int32))
    fails(ValueError, "op FCTransposed #0: input 1 blob 'w' of shape (6, 3) float32 does not fit input 0 "
          "blob 'x' of shape (4, 5) float32: K is 5 from 'x' (axis=1) but 6 from 'w' (the dims before "
          "axis_w=1; FCTransposed's W is K x N)", "FCTransposed", ["x", "w", "b"])
    fails(ValueError, "op FCTransposed #0: input 2 blob 'b2' must have shape (3,) (N of input 1 blob 'w2' "
          "(5, 3) float32), got (4,) float32", "FCTransposed", ["x", "w2", "b2"])
    with pytest.raises(TypeError, match=r"op FCTransposed #0: input 0 blob 'xi' must be float32"):
        workspace.RunOperatorOnce(op("FCTransposed", ["xi", "w2", "b"], ["y"]))
    with pytest.raises(ValueError, match=r"op FCTransposedGradient #0: input 2 blob 'dy' of shape \(4, 2\) "
                                         r"float32 must be the output gradient of shape \(M=4\) x \(N=3\)"):
        workspace.RunOperatorOnce(op("FCTransposedGradient", ["x", "w2", "dy"], ["dw", "db", "dx"]))
    with pytest.raises(ValueError, match=r"op FCTransposed #0: .*'x'.*axis=3"):
        workspace.RunOperatorOnce(op("FCTransposed", ["x", "w2", "b"], ["y"], axis=3))
    with pytest.raises(ValueError, match=r"op FCTransposed #0: .*'w2'.*axis_w=2"):
        workspace.RunOperatorOnce(op("FCTransposed", ["x", "w2", "b"], ["y"], axis_w=2))
    # checked at net creation when the inputs hold tensors
    net = core.Net("fct_early")
    net.FCTransposed(["x", "w", "b"], "y")
    with pytest.raises(ValueError, match=r"op FCTransposed #0: input 1 blob 'w' of shape \(6, 3\)"):
        workspace.CreateNet(net)


# ---------------------------------------------------------------- MatMul
@pytest.mark.parametrize("ta", [0, 1])
@pytest.mark.parametrize("tb", [0, 1])
def test_matmul(rng, ta, tb):
    a = f32(rng, *((5, 3) if ta else (3, 5)))
    b = f32(rng, *((4, 5) if tb else (5, 4)))
    feed(a=a, b=b)
    y = run("MatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb)
    close(y, (a.T if ta else a) @ (b.T if tb else b))


def test_matmul_axes_and_shape_input(rng):
    a = f32(rng, 2, 3, 4)
    b = f32(rng, 4, 2, 5)
    feed(a=a, b=b)
    y = run("MatMul", ["a", "b"], ["y"], axis_a=2, axis_b=1)
    close(y, a.reshape(6, 4) @ b.reshape(4, 10))
    b2 = f32(rng, 2, 5)
    feed(b2=b2)
    y = run("MatMul", ["a", "b2"], ["y"], axis_a=1, axis_b=1, trans_a=1)
    close(y, a.reshape(2, 12).T @ b2)
    with pytest.raises(ValueError, match=r"op MatMul #0: inner dimensions differ"):
        workspace.RunOperatorOnce(op("MatMul", ["a", "b"], ["y"], axis_a=1, axis_b=1))
    # a third input gives Y its shape
    feed(s=np.zeros((2, 3, 10), np.float32))
    y = run("MatMul", ["a", "b", "s"], ["y"], axis_a=2, axis_b=1)
    close(y, (a.reshape(6, 4) @ b.reshape(4, 10)).reshape(2, 3, 10))
    feed(s2=np.zeros((7,), np.float32))
    with pytest.raises(ValueError, match=r"op MatMul #0: input 2 blob 's2'"):
        workspace.RunOperatorOnce(op("MatMul", ["a", "b", "s2"], ["y"], axis_a=2, axis_b=1))


def test_matmul_zero_size(rng):
    feed(a=np.zeros((0, 3), np.float32), b=f32(rng, 3, 4))
    close(run("MatMul", ["a", "b"], ["y"]), np.zeros((0, 4)))
    feed(a=np.zeros((2, 0), np.float32), b=np.zeros((0, 4), np.float32))
    close(run("MatMul", ["a", "b"], ["y"]), np.zeros((2, 4)))


def test_matmul_bad_inputs(rng):
    feed(a=f32(rng, 3, 5), b=f32(rng, 4, 6))
    with pytest.raises(ValueError, match=r"op MatMul #0: inner dimensions differ: input 0 blob 'a' of shape "
                                         r"\(3, 5\).*input 1 blob 'b' of shape \(4, 6\)"):
        workspace.RunOperatorOnce(op("MatMul", ["a", "b"], ["y"]))
    feed(v=f32(rng, 5))
    with pytest.raises(ValueError, match=r"op MatMul #0: input 0 blob 'v' must have at least 2 dims"):
        workspace.RunOperatorOnce(op("MatMul", ["v", "b"], ["y"]))


# ---------------------------------------------------------------- Sum, WeightedSum
def test_sum(rng):
    xs = [f32(rng, 3, 4) for _ in range(3)]
    feed(x0=xs[0], x1=xs[1], x2=xs[2])
    close(run("Sum", ["x0"], ["y"]), xs[0], 0)
    close(run("Sum", ["x0", "x1", "x2"], ["y"]), xs[0] + xs[1] + xs[2])
    # in place on any input
    close(run("Sum", ["x0", "x1"], ["x0"]), xs[0] + xs[1])
    close(run("Sum", ["x0", "x1", "x2"], ["x2"]), xs[0] + xs[1] + xs[1] + xs[2])
    close(run("Sum", ["x1", "x1"], ["x1"]), 2 * xs[1])
    # zero-size
    feed(e0=np.zeros((0, 4), np.float32), e1=np.zeros((0, 4), np.float32))
    close(run("Sum", ["e0", "e1"], ["e"]), np.zeros((0, 4)))


def test_sum_large_chunks(rng):
    a, b = f32(rng, 3001), f32(rng, 3001)
    feed(a=a, b=b)
    np.testing.assert_array_equal(run("Sum", ["a", "b"], ["b"]), a + b)


@pytest.mark.parametrize("n", [37, 16 * 256, 3001])
@pytest.mark.parametrize("out", ["y", "a", "b"])
def test_sum_of_two_bitwise(rng, n, out):
    """Two inputs (the recurrent cells' Sums; a one-pass kernel, in place or
    not): exactly the float32 sum a + b, with the NaN and -0.0 bits numpy gives."""
    a, b = f32(rng, n), f32(rng, n)
    a[:4] = [np.nan, -0.0, np.inf, 0.0]
    b[:4] = [1.0, -0.0, -1.0, -0.0]
    feed(a=a, b=b)
    assert run("Sum", ["a", "b"], [out]).tobytes() == (a + b).tobytes()


def test_sum_bad_inputs(rng):
    feed(a=f32(rng, 3, 4), b=f32(rng, 4, 3))
    with pytest.raises(ValueError, match=r"op Sum #0: input 1 blob 'b' of shape \(4, 3\) float32 must have the "
                                         r"shape of input 0 blob 'a' \(3, 4\)"):
        workspace.RunOperatorOnce(op("Sum", ["a", "b"], ["y"]))


def test_sum_int(rng):
    """SumInt (Caffe2's: its Sum on int32 inputs): elementwise, one shape, exact; one input is a copy."""
    xs = [rng.randint(-1000, 1000, (3, 4)).astype(np.int32) for _ in range(3)]
    feed(x0=xs[0], x1=xs[1], x2=xs[2])
    for ins in (["x0"], ["x0", "x1"], ["x0", "x1", "x2", "x1"]):
        y = run("SumInt", ins, ["y"])
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y, sum(xs[int(n[1])].astype(np.int64) for n in ins))
    np.testing.assert_array_equal(run("SumInt", ["x0", "x2"], ["x0"]), xs[0] + xs[2])  # in place on X0
    feed(e0=np.zeros((0, 2), np.int32), s0=np.array(5, np.int32), s1=np.array(-7, np.int32))
    assert run("SumInt", ["e0", "e0"], ["e"]).shape == (0, 2)
    assert run("SumInt", ["s0", "s1"], ["s"]) == -2  # 0-d
    # the exact sum, not the running one: 2^31 - 1 + 1 - 1 fits int32
    big = np.array([2 ** 31 - 1, -2 ** 31], np.int32)
    feed(big=big, one=np.array([1, -1], np.int32), mone=np.array([-1, 1], np.int32))
    np.testing.assert_array_equal(run("SumInt", ["big", "one", "mone"], ["y"]), big)


def test_sum_int_bad_inputs():
    """An int32 overflow is a ValueError naming the position and the value (Caffe2 wrapped); the output
    is not written, also in place."""
    feed(a=np.array([[1, 2], [3, 2 ** 31 - 2]], np.int32), b=np.array([[1, 1], [1, 3]], np.int32),
         c=np.array([-2 ** 31, 0], np.int32), f=np.ones((2, 2), np.float32), d=np.ones((2, 3), np.int32))
    a0 = workspace.FetchBlob("a")
    with pytest.raises(ValueError, match=r"^op SumInt #0: the sum at flat position 3 is 2147483649, which "
                                         r"int32 cannot hold \(2 inputs of shape \(2, 2\) int32, input 0 "
                                         r"blob 'a'\)$"):
        workspace.RunOperatorOnce(op("SumInt", ["a", "b"], ["a"]))
    np.testing.assert_array_equal(workspace.FetchBlob("a"), a0)
    with pytest.raises(ValueError, match=r"op SumInt #0: the sum at flat position 0 is -4294967296"):
        workspace.RunOperatorOnce(op("SumInt", ["c", "c"], ["y"]))
    with pytest.raises(TypeError, match=r"op SumInt #0: input 1 blob 'f' must be int32, got \(2, 2\) "
                                        r"float32"):
        workspace.RunOperatorOnce(op("SumInt", ["a", "f"], ["y"]))
    with pytest.raises(ValueError, match=r"op SumInt #0: input 1 blob 'd' of shape \(2, 3\) int32 must have "
                                         r"the shape of input 0 blob 'a' \(2, 2\) int32"):
        workspace.RunOperatorOnce(op("SumInt", ["a", "d"], ["y"]))
    with pytest.raises(ValueError, match=r"op SumInt #0: input 1 and output 0 are the same blob 'b'"):
        workspace.RunOperatorOnce(op("SumInt", ["a", "b"], ["b"]))  # in place on X0 only, as Caffe2
    ops, g = core.GradientRegistry.GetGradientForOp(op("SumInt", ["a", "b"], ["y"]), ["y_grad"])
    assert ops == [] and g == [None, None]


def test_accumulate(rng):
    """Accumulate (Caffe2's): Y = gamma Y + X; a Y that is not float32 of X's shape starts from zeros."""
    x = f32(rng, 2, 3)
    feed(x=x)
    close(run("Accumulate", ["x"], ["y"]), x)  # a new blob: zeros, then + X
    close(run("Accumulate", ["x"], ["y"]), 2 * x)  # gamma = 1
    close(run("Accumulate", ["x"], ["y"], gamma=0.5), 0.5 * 2 * x + x)
    for old in (np.ones((3, 2), np.float32), np.ones((2, 3), np.int32), np.float32(4)):
        feed(y=old)  # another shape or dtype: reshaped and zeroed first, as Caffe2
        close(run("Accumulate", ["x"], ["y"], gamma=3.0), x)
    feed(y=np.full((2, 3), 2.0, np.float32))
    close(run("Accumulate", ["x"], ["y"], gamma=-1), -2.0 + x)
    # a net accumulates across runs, as Caffe2's moving averages
    net = core.Net("acc")
    net.Accumulate("x", "avg", gamma=0.9)
    workspace.RunNetOnce(net)
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("avg"), 0.9 * x + x)
    feed(e=np.zeros((0, 2), np.float32))
    assert run("Accumulate", ["e"], ["ye"]).shape == (0, 2)
    ops, g = core.GradientRegistry.GetGradientForOp(op("Accumulate", ["x"], ["y"]), ["y_grad"])
    assert ops == [] and g == [None]


def test_accumulate_bad_inputs():
    feed(i=np.ones(3, np.int32), x=np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"op Accumulate #0: input 0 blob 'i' must be float32, got \(3,\) "
                                        r"int32"):
        workspace.RunOperatorOnce(op("Accumulate", ["i"], ["y"]))
    with pytest.raises(ValueError, match=r"op Accumulate #0: input 0 and output 0 are the same blob 'x'"):
        workspace.RunOperatorOnce(op("Accumulate", ["x"], ["x"]))  # Caffe2's schema allowed no in place
    with pytest.raises(TypeError, match=r"op Accumulate: argument 'gamma' must be a float"):
        workspace.RunOperatorOnce(op("Accumulate", ["x"], ["y"], gamma="big"))
    np.testing.assert_array_equal(run("Accumulate", ["x"], ["y"]), np.ones(3))  # usable


# ---------------------------------------------------------------- RowMul, ReduceTailSum
@pytest.mark.parametrize("mshape,wshape", [((4, 3), (4,)), ((3, 2, 5), (3,)), ((5,), (5,)), ((4, 3), (4, 1)),
                                           ((2, 3), (1, 2)), ((0, 3), (0,)), ((3, 0), (3,))])
def test_row_mul(rng, mshape, wshape):
    """Caffe2's test_row_mul reference: Y[i, ...] = mat[i, ...] * w[i] (w of any shape with N elements)."""
    mat, w = f32(rng, *mshape, lo=-2, hi=2), f32(rng, *wshape, lo=-2, hi=2)
    feed(mat=mat, w=w)
    y = run("RowMul", ["mat", "w"], ["y"])
    ref = np.zeros_like(mat)
    for i in range(w.size):
        ref[i] = mat[i] * w.reshape(-1)[i]
    assert y.dtype == np.float32 and y.tobytes() == ref.tobytes()  # one float product per element


@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (5,), (2, 0), (0, 3), (3, 1, 1)])
def test_reduce_tail_sum(rng, shape):
    mat = f32(rng, *shape, lo=-3, hi=3)
    feed(mat=mat)
    y = run("ReduceTailSum", ["mat"], ["y"])
    ref = mat.reshape(shape[0], int(np.prod(shape[1:]))).astype(np.float64).sum(axis=1).astype(np.float32)
    # (added in double, rounded once)
    assert y.shape == (shape[0],) and y.tobytes() == ref.tobytes()


def test_row_mul_gradient_is_caffe2s(rng):
    o = op("RowMul", ["mat", "w"], ["y"])
    ops, g = G(o, ["y_grad"])
    assert g == ["mat_grad", "w_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("RowMul", ["y_grad", "w"], ["mat_grad"]), ("Mul", ["y_grad", "mat"], ["w_gradbefore_aggregate"]),
        ("ReduceTailSum", ["w_gradbefore_aggregate"], ["w_grad"])]
    assert G(o, [None]) == ([], [None, None])
    # ReduceTailSum has no gradient maker, as in Caffe2
    with pytest.raises(Exception, match="ReduceTailSum"):
        G(op("ReduceTailSum", ["x"], ["y"]), ["y_grad"])


@pytest.mark.parametrize("mshape", [(4, 3), (3, 2, 2), (5,)])
def test_row_mul_gradient_fd(rng, mshape):
    mat, w = f32(rng, *mshape, lo=-1, hi=1), f32(rng, mshape[0], lo=0.5, hi=1.5)
    check_grads(op("RowMul", ["mat", "w"], ["y"]), [mat, w])


def test_row_mul_backward_through_net(rng):
    """AddGradientOperators through RowMul: mat_grad = dY * w, w_grad = the row sums of dY * mat."""
    mat, w = f32(rng, 3, 4), f32(rng, 3)
    feed(mat=mat, w=w)
    net = core.Net("rowmul")
    net.RowMul(["mat", "w"], "y")
    net.SumElements("y", "loss")
    net.AddGradientOperators(["loss"])
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("mat_grad"), np.ones_like(mat) * w[:, None])
    close(workspace.FetchBlob("w_grad"), mat.astype(np.float64).sum(axis=1))


def test_row_mul_reduce_tail_sum_bad_inputs(rng):
    keep = np.full(2, 7.0, np.float32)
    feed(y=keep, mat=f32(rng, 3, 2), w2=f32(rng, 2), w=f32(rng, 3), s=np.float32(1), one=f32(rng, 1),
         mi=np.ones((3, 2), np.int32), wi=np.ones(3, np.int32))
    fails(ValueError, "op RowMul #0: input 1 blob 'w2' (w) of shape (2,) float32 must hold one element per "
          "row (dim 0) of input 0 blob 'mat' (mat) of shape (3, 2) float32", "RowMul", ["mat", "w2"], ["y"])
    fails(ValueError, "op RowMul #0: input 0 blob 's' (mat) must have at least 1 dim, got () float32",
          "RowMul", ["s", "one"], ["y"])
    fails(TypeError, "op RowMul #0: input 0 blob 'mi' must be float32, got (3, 2) int32",
          "RowMul", ["mi", "w"], ["y"])
    fails(TypeError, "op RowMul #0: input 1 blob 'wi' must be float32, got (3,) int32",
          "RowMul", ["mat", "wi"], ["y"])
    fails(ValueError, "op ReduceTailSum #0: input 0 blob 's' (mat) must have at least 1 dim, got () float32",
          "ReduceTailSum", ["s"], ["y"])
    fails(TypeError, "op ReduceTailSum #0: input 0 blob 'mi' must be float32, got (3, 2) int32",
          "ReduceTailSum", ["mi"], ["y"])
    assert workspace.FetchBlob("y").tobytes() == keep.tobytes()  # nothing written
    with pytest.raises(ValueError, match="op RowMul #0: input 0 and output 0 are the same blob 'mat'"):
        workspace.RunOperatorOnce(op("RowMul", ["mat", "w"], ["mat"]))  # Caffe2's schema: no in place
    close(run("RowMul", ["mat", "w"], ["y"]), workspace.FetchBlob("mat") * workspace.FetchBlob("w")[:, None])


def test_weighted_sum(rng):
    x0, x1, x2 = f32(rng, 5, 2), f32(rng, 5, 2), f32(rng, 5, 2)
    feed(x0=x0, x1=x1, x2=x2, w0=np.array([0.5], np.float32), w1=np.array([-2.0], np.float32),
         w2=np.array(3.0, np.float32))
    close(run("WeightedSum", ["x0", "w0", "x1", "w1", "x2", "w2"], ["y"]), 0.5 * x0 - 2 * x1 + 3 * x2)
    close(run("WeightedSum", ["x0", "w0"], ["y"]), 0.5 * x0)
    # SGD update in place: w = 1 * w + lr * g
    feed(ONE=np.array([1.0], np.float32), LR=np.array([-0.1], np.float32))
    close(run("WeightedSum", ["x0", "ONE", "x1", "LR"], ["x0"]), x0 - 0.1 * x1)


def test_weighted_sum_bad_inputs(rng):
    feed(x0=f32(rng, 2), w0=np.ones(1, np.float32), x1=f32(rng, 2), w1=np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"op WeightedSum #0: input 2 blob 'x1' has no weight"):
        workspace.RunOperatorOnce(op("WeightedSum", ["x0", "w0", "x1"], ["y"]))
    with pytest.raises(ValueError, match=r"op WeightedSum #0: input 3 blob 'w1' \(weight of 'x1'\) must have 1 "
                                         r"element"):
        workspace.RunOperatorOnce(op("WeightedSum", ["x0", "w0", "x1", "w1"], ["y"]))
    with pytest.raises(ValueError, match=r"op WeightedSum #0: .*same blob 'x1'"):
        workspace.RunOperatorOnce(op("WeightedSum", ["x0", "w0", "x1", "w0"], ["x1"]))


# ---------------------------------------------------------------- Add, Sub, Mul
NP_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}

# (A shape, B shape, axis or None) -> numpy-broadcastable reshape of B
BROADCAST_CASES = [
    ((2, 3, 4), (3, 4), None, (1, 3, 4)),
    ((2, 3, 4), (4,), None, (1, 1, 4)),
    ((2, 3, 4), (3,), 1, (1, 3, 1)),
    ((2, 3, 4), (2,), 0, (2, 1, 1)),
    ((2, 3, 4), (2, 3), 0, (2, 3, 1)),
    ((2, 3, 4), (1, 3, 1), 0, (1, 3, 1)),      # leading/trailing 1s of B are ignored
    ((2, 3, 4), (1,), None, (1, 1, 1)),        # scalar-like B
    ((2, 3, 4), (2, 3, 4), None, (2, 3, 4)),   # same shape with broadcast=1
    ((0, 3, 4), (3, 4), None, (1, 3, 4)),      # zero-size A
]


@pytest.mark.parametrize("kind", sorted(NP_BINARY))
def test_binary_same_shape(rng, kind):
    a, b = f32(rng, 3, 4), f32(rng, 3, 4)
    feed(a=a, b=b)
    close(run(kind, ["a", "b"], ["c"]), NP_BINARY[kind](a, b))
    close(run(kind, ["a", "b"], ["b"]), NP_BINARY[kind](a, b))     # in place on input 1
    close(run(kind, ["a", "b"], ["a"]), NP_BINARY[kind](a, NP_BINARY[kind](a, b)))  # in place on input 0
    feed(z=np.zeros((0,), np.float32))
    close(run(kind, ["z", "z"], ["zz"]), np.zeros((0,)))


@pytest.mark.parametrize("kind", sorted(NP_BINARY))
@pytest.mark.parametrize("ash,bsh,axis,bview", BROADCAST_CASES)
def test_binary_broadcast(rng, kind, ash, bsh, axis, bview):
    a, b = f32(rng, *ash), f32(rng, *bsh)
    feed(a=a, b=b)
    args = {"broadcast": 1}
    if axis is not None:
        args["axis"] = axis
    expect = NP_BINARY[kind](a, b.reshape(bview))
    close(run(kind, ["a", "b"], ["c"], **args), expect)
    close(run(kind, ["a", "b"], ["a"], **args), expect)  # in place on input 0

    # SumReduceLike undoes the broadcast: sums over the repeated dims
    dc = f32(rng, *ash)
    feed(dc=dc)
    red_axes = tuple(i for i, n in enumerate(bview) if n == 1 and ash[i] != 1) if bsh != (1,) else None
    expect_red = dc.sum(axis=red_axes) if red_axes is not None else dc.sum()
    sargs = {"axis": axis} if axis is not None else {}
    close(run("SumReduceLike", ["dc", "b"], ["db"], **sargs), np.asarray(expect_red).reshape(bsh), 1e-4)


def test_sum_reduce_like_scalar_and_same(rng):
    a = f32(rng, 3, 4)
    feed(a=a, s=np.zeros((1, 1), np.float32), same=np.zeros((3, 4), np.float32))
    close(run("SumReduceLike", ["a", "s"], ["r"]), a.sum().reshape(1, 1), 1e-4)
    close(run("SumReduceLike", ["a", "same"], ["r2"]), a, 0)


def test_binary_bad_inputs(rng):
    feed(a=f32(rng, 2, 3, 4), b=f32(rng, 3, 5), c=f32(rng, 3, 4))
    with pytest.raises(ValueError, match=r"op Add #0: cannot broadcast input 1 blob 'b' of shape \(3, 5\) float32 "
                                         r"to input 0 blob 'a' of shape \(2, 3, 4\)"):
        workspace.RunOperatorOnce(op("Add", ["a", "b"], ["y"], broadcast=1))
    # without broadcast=1 shapes broadcast numpy-style: (2, 3, 4) with (3, 4) is fine, with (3, 5) is not
    with pytest.raises(ValueError, match=r"^op Mul #0: input 0 blob 'a' of shape \(2, 3, 4\) float32 "
                                         r"and input 1 blob 'b' of shape \(3, 5\) float32 do not "
                                         r"broadcast \(numpy-style, dims aligned from the last\): "
                                         r"dim 2 of 'a' is 4 but dim 1 of 'b' is 5$"):
        workspace.RunOperatorOnce(op("Mul", ["a", "b"], ["y"]))
    assert run("Mul", ["a", "c"], ["y"]).shape == (2, 3, 4)
    with pytest.raises(ValueError, match=r"op Sub #0: axis=2 is out of range \[0, 1\].*'c'.*'a'"):
        workspace.RunOperatorOnce(op("Sub", ["a", "c"], ["y"], broadcast=1, axis=2))
    with pytest.raises(ValueError, match=r"op Add #0: cannot broadcast input 1 blob 'a'.*more dims"):
        workspace.RunOperatorOnce(op("Add", ["c", "a"], ["y"], broadcast=1))
    with pytest.raises(ValueError, match=r"op Add #0: output blob 'c' is input 1"):
        workspace.RunOperatorOnce(op("Add", ["a", "c"], ["c"], broadcast=1))
    with pytest.raises(ValueError, match=r"op Add #0: argument 'axis' needs broadcast=1"):
        workspace.RunOperatorOnce(op("Add", ["a", "c"], ["y"], axis=1))
    with pytest.raises(ValueError, match=r"op SumReduceLike #0: cannot broadcast input 1 blob 'b'"):
        workspace.RunOperatorOnce(op("SumReduceLike", ["a", "b"], ["y"]))
    feed(i=np.ones((3, 4), np.int32))
    with pytest.raises(TypeError, match=r"op Add #0: input 1 blob 'i' \(3, 4\) int32 must have the dtype of input 0"):
        workspace.RunOperatorOnce(op("Add", ["c", "i"], ["y"]))


# ---------------------------------------------------------------- unary
def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)


UNARY = {
    "Sigmoid": (np_sigmoid, lambda y, dy: dy * y * (1 - y)),
    "Tanh": (np.tanh, lambda y, dy: dy * (1 - y * y)),
    "Relu": (lambda x: np.maximum(x, 0), lambda y, dy: np.where(y > 0, dy, 0)),
}


@pytest.mark.parametrize("kind", sorted(UNARY))
def test_unary(rng, kind):
    fwd, bwd = UNARY[kind]
    x = f32(rng, 4, 7, lo=-3, hi=3)
    x[0, :4] = [-100, 100, -1e30, 1e30]
    feed(x=x)
    y = run(kind, ["x"], ["y"])
    close(y, fwd(x))
    assert np.all(np.isfinite(y))
    dy = f32(rng, 4, 7)
    feed(dy=dy)
    close(run(kind + "Gradient", ["y", "dy"], ["dx"]), bwd(y, dy))
    close(run(kind + "Gradient", ["y", "dy"], ["dy"]), bwd(y, dy))  # in place dY -> dX
    close(run(kind, ["x"], ["x"]), fwd(x))                           # in place X -> Y
    feed(z=np.zeros((2, 0), np.float32))
    close(run(kind, ["z"], ["zy"]), np.zeros((2, 0)))


def test_unary_bad_inputs(rng):
    feed(i=np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(TypeError, match=r"op Tanh #0: input 0 blob 'i' must be float32, got \(2, 3\) int32"):
        workspace.RunOperatorOnce(op("Tanh", ["i"], ["y"]))
    feed(y=f32(rng, 2, 3), dy=f32(rng, 3, 2))
    with pytest.raises(ValueError, match=r"op SigmoidGradient #0: input 1 blob 'dy' of shape \(3, 2\)"):
        workspace.RunOperatorOnce(op("SigmoidGradient", ["y", "dy"], ["dx"]))
    with pytest.raises(ValueError, match=r"op ReluGradient #0: .*same blob 'y'"):
        workspace.RunOperatorOnce(op("ReluGradient", ["y", "dy"], ["y"]))
    with pytest.raises(KeyError, match=r"op Relu #0: input 0 blob 'nope' does not exist"):
        workspace.RunOperatorOnce(op("Relu", ["nope"], ["y"]))


def test_scale(rng):
    x = f32(rng, 3, 5)
    feed(x=x)
    close(run("Scale", ["x"], ["y"], scale=2.5), 2.5 * x)
    close(run("Scale", ["x"], ["y"]), x, 0)
    close(run("Scale", ["x"], ["x"], scale=-1.0), -x)
    close(run("Scale", ["x"], ["x"], scale=3), -3 * x)  # an int scale is accepted


# ---------------------------------------------------------------- Sqr, Negative
def special_values(rng):
    x = f32(rng, 3, 5, lo=-3, hi=3)
    x[0] = [np.inf, -np.inf, np.nan, -0.0, 3e38]           # 3e38 squared overflows to inf
    x.view(np.uint32)[1, 0] = 0xFFC12345                    # a negative NaN with a payload
    x.view(np.uint32)[1, 1] = 0x00000001                    # the smallest denormal
    return x


def test_sqr(rng):
    x = special_values(rng)
    feed(x=x)
    with np.errstate(over="ignore", under="ignore"):
        ref = np.square(x)
    y = run("Sqr", ["x"], ["y"])
    assert y.dtype == np.float32 and y.tobytes() == ref.tobytes()
    assert np.isposinf(y[0, :2]).all() and np.isnan(y[0, 2]) and np.isposinf(y[0, 4]) and y[1, 1] == 0
    assert run("Sqr", ["x"], ["x"]).tobytes() == ref.tobytes()            # in place
    feed(z=np.zeros((2, 0), np.float32))
    close(run("Sqr", ["z"], ["zy"]), np.zeros((2, 0)))


def test_sqr_gradient_op(rng):
    x, dy = special_values(rng), f32(rng, 3, 5, lo=-2, hi=2)
    feed(x=x, dy=dy)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = 2 * x * dy
    assert run("SqrGradient", ["x", "dy"], ["dx"]).tobytes() == ref.tobytes()
    assert run("SqrGradient", ["x", "dy"], ["dy"]).tobytes() == ref.tobytes()   # in place on dY
    feed(dy=dy)
    assert run("SqrGradient", ["x", "dy"], ["x"]).tobytes() == ref.tobytes()    # in place on X


def test_negative(rng):
    x = special_values(rng)
    feed(x=x)
    y = run("Negative", ["x"], ["y"])
    assert y.dtype == np.float32 and y.tobytes() == np.negative(x).tobytes()
    # a sign flip: NaN and 0 change sign too, and twice gives the input bit for bit
    assert y.view(np.uint32)[1, 0] == 0x7FC12345 and np.signbit(y[0, 3]) == 0
    assert (y.view(np.uint32) ^ x.view(np.uint32) == 0x80000000).all()
    assert run("Negative", ["y"], ["y"]).tobytes() == x.tobytes()         # in place


@pytest.mark.parametrize("kind", ["Sqr", "Negative", "SqrGradient"])
def test_sqr_negative_bad_inputs(rng, kind):
    feed(i=np.arange(6, dtype=np.int32).reshape(2, 3), x=f32(rng, 2, 3), dy=f32(rng, 3, 2))
    ins = ["i"] if kind != "SqrGradient" else ["i", "dy"]
    msg = r"op %s #0: input 0 blob 'i' must be float32, got \(2, 3\) int32" % kind
    with pytest.raises(TypeError, match=msg):
        workspace.RunOperatorOnce(op(kind, ins, ["y"]))
    if kind == "SqrGradient":
        msg = (r"op SqrGradient #0: input 1 blob 'dy' of shape \(3, 2\) float32 must have the shape of "
               r"input 0 blob 'x' \(2, 3\) float32")
        with pytest.raises(ValueError, match=msg):
            workspace.RunOperatorOnce(op(kind, ["x", "dy"], ["dx"]))
    with pytest.raises(KeyError, match=r"op %s #0: input 0 blob 'nope' does not exist" % kind):
        workspace.RunOperatorOnce(op(kind, ["nope"] + ins[1:], ["y"]))
    with pytest.raises(ValueError, match=r"op %s #0: .*(inputs|outputs)" % kind):
        workspace.RunOperatorOnce(op(kind, ["x", "x", "x"], ["y"]))
    # the workspace stays usable
    ref = {"Sqr": lambda v: v * v, "Negative": lambda v: -v, "SqrGradient": lambda v: 2 * v * v}[kind]
    close(run(kind, ["x"] * len(ins), ["y"]), ref(workspace.FetchBlob("x")))


# ---------------------------------------------------------------- ElementwiseLinear
@pytest.mark.parametrize("shape,axis", [((4, 6), 1), ((2, 3, 5), 2), ((2, 3, 5), 1), ((0, 6), 1)])
def test_elementwise_linear(rng, shape, axis):
    x = f32(rng, *shape)
    D = int(np.prod(shape[axis:]))
    a, b = f32(rng, D), f32(rng, D)
    feed(x=x, a=a, b=b)
    y = run("ElementwiseLinear", ["x", "a", "b"], ["y"], axis=axis)
    x2 = x.reshape(int(np.prod(shape[:axis])), D)
    close(y, (x2 * a + b).reshape(shape))
    dy = f32(rng, *shape)
    feed(dy=dy)
    dx, da, db = run("ElementwiseLinearGradient", ["dy", "x", "a"], ["dx", "da", "db"], axis=axis)
    dy2 = dy.reshape(x2.shape)
    close(dx, (dy2 * a).reshape(shape))
    close(da, (dy2 * x2).sum(0))
    close(db, dy2.sum(0))


def test_elementwise_linear_bad_inputs(rng):
    feed(x=f32(rng, 4, 6), a=f32(rng, 5), b=f32(rng, 6))
    with pytest.raises(ValueError, match=r"op ElementwiseLinear #0: input 1 blob 'a' must have shape \(6,\)"):
        workspace.RunOperatorOnce(op("ElementwiseLinear", ["x", "a", "b"], ["y"]))


def test_copy_still_works(rng):
    x = f32(rng, 2, 2)
    feed(x=x)
    np.testing.assert_array_equal(run("Copy", ["x"], ["y"]), x)


# ---------------------------------------------------------------- gradients (finite differences)
def check_grads(o, inputs, indices=None, stepsize=5e-3, threshold=2e-2, outputs_with_grads=(0,)):
    checker = gradient_checker.GradientChecker(stepsize, threshold)
    for i in (range(len(inputs)) if indices is None else indices):
        ok, grad, est = checker.CheckSimple(o, inputs, i, list(outputs_with_grads))
        assert ok, "%s input %d: analytic %s vs numeric %s" % (o.type, i, grad, est)


def away_from_zero(x, margin=0.1):
    x = x.copy()
    x[np.abs(x) < margin] = 0.5
    return x


@pytest.mark.parametrize("xs,ws,args", [
    ((3, 4), (2, 4), {}),
    ((2, 3, 4), (5, 4), {"axis": 2}),          # FC over the last axis of a 3-D input
    ((2, 3, 4), (5, 12), {}),                  # flatten at axis 1
    ((2, 3), (5, 2, 3), {"axis_w": 2}),        # W flattened at axis_w=2
    ((2, 3, 6), (33, 6), {"axis": 2}),         # 6 rows, 33 outputs: the FC packs its own weight (where
                                               # the packed kernel runs; test_packed_gemm.py)
])
def test_fc_gradient(rng, xs, ws, args):
    axw = args.get("axis_w", 1)
    N = int(np.prod(ws[:axw]))
    check_grads(core.CreateOperator("FC", ["x", "w", "b"], ["y"], **args), [f32(rng, *xs), f32(rng, *ws), f32(rng, N)])


def test_fc_gradient_maker():
    o = core.CreateOperator("FC", ["x", "w", "b"], ["y"], axis=2)
    ops, g = core.GradientRegistry.GetGradientForOp(o, ["y_grad"])
    assert g == ["x_grad", "w_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("FCGradient", ["x", "w", "y_grad"], ["w_grad", "b_grad", "x_grad"])]
    assert [(a.name, a.i) for a in ops[0].arg] == [("axis", 2)]


@pytest.mark.parametrize("ta", [0, 1])
@pytest.mark.parametrize("tb", [0, 1])
def test_matmul_gradient(rng, ta, tb):
    a = f32(rng, *((4, 3) if ta else (3, 4)))
    b = f32(rng, *((5, 4) if tb else (4, 5)))
    check_grads(core.CreateOperator("MatMul", ["a", "b"], ["y"], trans_a=ta, trans_b=tb), [a, b])


@pytest.mark.parametrize("ash,bsh,args", [
    ((2, 3, 4), (4, 5), {"axis_a": 2}),
    ((2, 3, 4), (5, 1, 4), {"axis_a": 2, "axis_b": 2, "trans_b": 1}),
    ((4, 2, 3), (5, 1, 4), {"axis_a": 1, "axis_b": 2, "trans_a": 1, "trans_b": 1}),
    ((4, 2, 3), (4, 5), {"axis_a": 1, "trans_a": 1}),
])
def test_matmul_gradient_axes(rng, ash, bsh, args):
    check_grads(core.CreateOperator("MatMul", ["a", "b"], ["y"], **args), [f32(rng, *ash), f32(rng, *bsh)])


def test_sum_gradient(rng):
    xs = [f32(rng, 2, 3) for _ in range(3)]
    check_grads(core.CreateOperator("Sum", ["a", "b", "c"], ["y"]), xs)
    ops, g = core.GradientRegistry.GetGradientForOp(core.CreateOperator("Sum", ["a", "b"], ["y"]), ["y_grad"])
    assert ops == [] and g == ["y_grad", "y_grad"]
    # in place: Sum([a, b], a)
    check_grads(core.CreateOperator("Sum", ["a", "b"], ["a"]), xs[:2])


BINARY_GRAD_CASES = [
    ((2, 3), (2, 3), {}),
    ((2, 3, 4), (3, 4), {"broadcast": 1}),
    ((2, 3, 4), (3,), {"broadcast": 1, "axis": 1}),
    ((2, 3, 4), (2, 1), {"broadcast": 1, "axis": 0}),
    ((2, 3, 4), (1,), {"broadcast": 1}),
]


@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("ash,bsh,args", BINARY_GRAD_CASES)
def test_binary_gradient(rng, kind, ash, bsh, args):
    check_grads(core.CreateOperator(kind, ["a", "b"], ["y"], **args), [f32(rng, *ash), f32(rng, *bsh)])


@pytest.mark.parametrize("kind", ["Add", "Sub"])
def test_binary_gradient_in_place(rng, kind):
    a, b = f32(rng, 2, 3, 4), f32(rng, 3, 4)
    check_grads(core.CreateOperator(kind, ["a", "b"], ["a"], broadcast=1), [a, b])
    check_grads(core.CreateOperator(kind, ["a", "c"], ["c"]), [a, f32(rng, 2, 3, 4)])
    check_grads(core.CreateOperator(kind, ["a", "c"], ["c"], broadcast=1), [a, f32(rng, 2, 3, 4)])


def test_binary_gradient_makers():
    G = core.GradientRegistry.GetGradientForOp
    # without broadcast=1 (equal shapes or numpy-style): Caffe2's AddGradient (dC, A, B) -> (dA, dB)
    ops, g = G(core.CreateOperator("Add", ["a", "b"], ["y"]), ["dy"])
    assert g == ["a_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [("AddGradient", ["dy", "a", "b"],
                                                                      ["a_grad", "b_grad"])]
    ops, g = G(core.CreateOperator("Add", ["a", "b"], ["y"], broadcast=1, axis=1), ["dy"])
    assert g == ["dy", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [("SumReduceLike", ["dy", "b"], ["b_grad"])]
    assert [(a.name, a.i) for a in ops[0].arg] == [("axis", 1)]
    ops, g = G(core.CreateOperator("Sub", ["a", "b"], ["y"]), ["dy"])
    assert g == ["a_grad", "b_grad"] and [p.type for p in ops] == ["SubGradient"]
    ops, g = G(core.CreateOperator("Mul", ["a", "b"], ["y"]), ["dy"])
    assert (g == ["a_grad", "b_grad"]
            and [(p.type, list(p.input)) for p in ops] == [("MulGradient", ["dy", "a", "b"])])
    ops, g = G(core.CreateOperator("Div", ["a", "b"], ["y"]), ["dy"])
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [("DivGradient", ["dy", "a", "b", "y"],
                                                                      ["a_grad", "b_grad"])]
    ops, g = G(core.CreateOperator("Mul", ["a", "b"], ["y"], broadcast=1), ["dy"])
    assert g == ["a_grad", "b_grad"] and [p.type for p in ops] == ["Mul", "Mul", "SumReduceLike"]
    with pytest.raises(ValueError, match=r"Mul gradient: .*'a' in place"):
        G(core.CreateOperator("Mul", ["a", "b"], ["a"]), ["a_grad"])


@pytest.mark.parametrize("kind,expect", [("Mul", lambda x, dy: 2 * x * dy), ("Add", lambda x, dy: 2 * dy),
                                         ("Sub", lambda x, dy: 0 * dy)])
def test_same_blob_twice_gradient(rng, kind, expect):
    # y = x (op) x: both contributions reach x (CheckSimple feeds inputs by name, so use the backward pass)
    x, dy = f32(rng, 2, 3), f32(rng, 2, 3)
    feed(x=x, dy=dy)
    fwd = core.CreateOperator(kind, ["x", "x"], ["y"])
    grad_ops, grad_map = core.GradientRegistry.GetBackwardPass([fwd], {"y": "dy"})
    workspace.RunOperatorOnce(fwd)
    workspace.RunOperatorsOnce(grad_ops)
    close(workspace.FetchBlob(str(grad_map["x"])), expect(x, dy))


@pytest.mark.parametrize("kind", ["Add", "Sub"])
@pytest.mark.parametrize("args", [{}, {"broadcast": 1}])
def test_binary_gradient_in_place_on_b_names(kind, args):
    ops, g = core.GradientRegistry.GetGradientForOp(core.CreateOperator(kind, ["a", "b"], ["b"], **args),
                                                    ["b_grad"])
    if not args:   # <Op>Gradient reads dC = b_grad (also for B's shape: B was overwritten); B's own
        assert g == ["a_grad", "b_grad_autogen_b"]   # gradient needs another name
        assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
            (kind + "Gradient", ["b_grad", "a", "b_grad"], ["a_grad", "b_grad_autogen_b"])]
    else:
        assert g[0] == "b_grad" and g[1] != "b_grad"
        assert all("b_grad" not in p.output for p in ops)


@pytest.mark.parametrize("kind", ["Sigmoid", "Tanh", "Relu"])
@pytest.mark.parametrize("in_place", [False, True])
def test_unary_gradient(rng, kind, in_place):
    x = away_from_zero(f32(rng, 3, 4, lo=-2, hi=2))
    check_grads(core.CreateOperator(kind, ["x"], ["x" if in_place else "y"]), [x])


def test_unary_gradient_maker():
    ops, g = core.GradientRegistry.GetGradientForOp(core.CreateOperator("Relu", ["x"], ["x"]), ["x_grad"])
    assert g == ["x_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [("ReluGradient", ["x", "x_grad"], ["x_grad"])]


@pytest.mark.parametrize("in_place", [False, True])
def test_scale_gradient(rng, in_place):
    check_grads(core.CreateOperator("Scale", ["x"], ["x" if in_place else "y"], scale=-2.5), [f32(rng, 3, 4)])


def test_sqr_gradient(rng):
    check_grads(core.CreateOperator("Sqr", ["x"], ["y"]), [f32(rng, 3, 4, lo=-2, hi=2)])


@pytest.mark.parametrize("in_place", [False, True])
def test_negative_gradient(rng, in_place):
    check_grads(core.CreateOperator("Negative", ["x"], ["x" if in_place else "y"]), [f32(rng, 3, 4)])


def test_sqr_negative_gradient_makers():
    G = core.GradientRegistry.GetGradientForOp
    as_tuples = lambda ops: [(p.type, list(p.input), list(p.output), len(p.arg)) for p in ops]
    ops, g = G(core.CreateOperator("Sqr", ["x"], ["y"]), ["dy"])
    assert g == ["x_grad"] and as_tuples(ops) == [("SqrGradient", ["x", "dy"], ["x_grad"], 0)]
    ops, g = G(core.CreateOperator("Negative", ["x"], ["y"]), ["dy"])
    assert g == ["x_grad"] and as_tuples(ops) == [("Negative", ["dy"], ["x_grad"], 0)]
    ops, g = G(core.CreateOperator("Negative", ["x"], ["x"]), ["x_grad"])
    assert as_tuples(ops) == [("Negative", ["x_grad"], ["x_grad"], 0)]
    for kind in ("Sqr", "Negative"):
        assert G(core.CreateOperator(kind, ["x"], ["y"]), [None]) == ([], [None])
    # Sqr in place loses X, which its gradient needs
    with pytest.raises(ValueError, match=r"Sqr gradient: the forward op computes 'x' in place"):
        G(core.CreateOperator("Sqr", ["x"], ["x"]), ["x_grad"])


def test_sqr_negative_backward_pass(rng):
    # loss = sum(w * Sqr(Negative(x))): dx = -2 (-x) w = 2 x w, the gradient ops' exact float32 values
    net = core.Net("sqr_neg")
    n = net.Negative(["x"], "n")
    net.SumElements(net.Mul([net.Sqr([n], "s"), "w"], "sw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    x, w = f32(rng, 4, 3), f32(rng, 4, 3)
    feed(x=x, w=w)
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob(str(gmap["x"])).tobytes() == (-(2 * -x * w)).tobytes()


@pytest.mark.parametrize("shape,axis", [((3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), 1)])
def test_elementwise_linear_gradient(rng, shape, axis):
    D = int(np.prod(shape[axis:]))
    check_grads(core.CreateOperator("ElementwiseLinear", ["x", "a", "b"], ["y"], axis=axis),
                [f32(rng, *shape), f32(rng, D), f32(rng, D)])


# ---------------------------------------------------------------- WeightedSumGradient
@pytest.mark.parametrize("grad_on_w", [0, 1])
@pytest.mark.parametrize("shape", [(3, 4), (5,), (), (2, 0, 3)])
def test_weighted_sum_gradient_op_vs_numpy(rng, grad_on_w, shape):
    k = 3
    dy = f32(rng, *shape)
    xs = [f32(rng, *shape) for _ in range(k)]
    ws = [f32(rng, 1) for _ in range(k)]
    feed(dy=dy, **{"x%d" % i: xs[i] for i in range(k)}, **{"w%d" % i: ws[i] for i in range(k)})
    ins = ["dy"] + [b for i in range(k) for b in ("x%d" % i, "w%d" % i)]
    outs = ["dx%d" % i for i in range(k)] + (["dw%d" % i for i in range(k)] if grad_on_w else [])
    res = run("WeightedSumGradient", ins, outs, grad_on_w=grad_on_w)
    for i in range(k):
        assert res[i].shape == shape and res[i].dtype == np.float32
        np.testing.assert_array_equal(res[i], ws[i][0] * dy)
        if grad_on_w:
            ref = np.sum(dy.astype(np.float64) * xs[i].astype(np.float64))
            assert res[k + i].shape == (1,)
            np.testing.assert_allclose(res[k + i], [ref], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("grad_on_w", [0, 1])
@pytest.mark.parametrize("m", [1, 3])
def test_weighted_sum_gradient_finite_differences(rng, grad_on_w, m):
    ins, vals = [], []
    for i in range(m):
        ins += ["x%d" % i, "w%d" % i]
        vals += [f32(rng, 3, 2), f32(rng, 1)]
    o = core.CreateOperator("WeightedSum", ins, ["y"], grad_on_w=grad_on_w)
    check_grads(o, vals, indices=range(2 * m) if grad_on_w else range(0, 2 * m, 2))
    if not grad_on_w:  # the weights get no gradient, as Caffe2's
        _, g = core.GradientRegistry.GetGradientForOp(o, ["y_grad"])
        assert g[1::2] == [None] * m


def test_weighted_sum_gradient_maker():
    o = core.CreateOperator("WeightedSum", ["a", "wa", "b", "wb"], ["y"], grad_on_w=1)
    ops, g = G(o, ["y_grad"])
    assert [(x.type, list(x.input), list(x.output)) for x in ops] == [
        ("WeightedSumGradient", ["y_grad", "a", "wa", "b", "wb"], ["a_grad", "b_grad", "wa_grad", "wb_grad"])]
    assert g == ["a_grad", "wa_grad", "b_grad", "wb_grad"]
    assert ops[0].arg[0].name == "grad_on_w" and ops[0].arg[0].i == 1
    # in place on X0 (the SGD form): dX0's name would be dY's, so it gets its own
    o = core.CreateOperator("WeightedSum", ["w", "ONE", "g", "LR"], ["w"])
    ops, g = G(o, ["w_grad"])
    assert list(ops[0].output) == ["w_grad_autogen_weighted_sum_0", "g_grad"] and g[1::2] == [None, None]
    # ... but with grad_on_w X0's value is lost, which dw0 needs
    o = core.CreateOperator("WeightedSum", ["w", "ONE", "g", "LR"], ["w"], grad_on_w=1)
    with pytest.raises(ValueError, match=r"WeightedSum \(grad_on_w=1\) gradient: the forward op computes 'w' "
                                         r"in place"):
        G(o, ["w_grad"])
    assert G(o, [None]) == ([], [None] * 4)


def test_weighted_sum_gradient_repeated_blobs_backward_pass(rng):
    # y = w x + w x + v z with one weight blob twice: dx = 2 w dy, dw = 2 sum(dy x), dz = v dy
    net = core.Net("ws_rep")
    net.WeightedSum(["x", "w", "x", "w", "z", "v"], "y", grad_on_w=1)
    net.SumElements(net.Sqr("y", "y2"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    x, z = f32(rng, 4, 3), f32(rng, 4, 3)
    w, v = np.array([0.7], np.float32), np.array([-1.3], np.float32)
    feed(x=x, z=z, w=w, v=v)
    workspace.RunNetOnce(net)
    y = 2 * w[0] * x.astype(np.float64) + v[0] * z
    dy = 2 * y
    close(workspace.FetchBlob(str(gmap["x"])), 2 * w[0] * dy, 1e-4)
    close(workspace.FetchBlob(str(gmap["z"])), v[0] * dy, 1e-4)
    close(workspace.FetchBlob(str(gmap["w"])), [2 * np.sum(dy * x)], 1e-4)
    close(workspace.FetchBlob(str(gmap["v"])), [np.sum(dy * z)], 1e-4)


def test_weighted_sum_gradient_bad_inputs(rng):
    feed(dy=f32(rng, 2, 3), x0=f32(rng, 2, 3), w0=np.ones(1, np.float32), x1=f32(rng, 3, 2),
         w1=np.ones(2, np.float32), i=np.ones(1, np.int32))
    bad = [
        (["dy", "x0", "w0", "x1"], ["a", "b"], {},
         r"op WeightedSumGradient #0: takes \(dY, X0, w0, X1, w1, ...\): input 3 blob 'x1' has no weight, "
         r"got 4 inputs$"),
        (["dy", "x0", "w0"], ["a", "b"], {},
         r"op WeightedSumGradient #0: 3 inputs \(1 pairs\) with grad_on_w=0 need 1 outputs "
         r"\(dX0..dX0\), got 2$"),
        (["dy", "x0", "w0"], ["a"], {"grad_on_w": 1},
         r"op WeightedSumGradient #0: 3 inputs \(1 pairs\) with grad_on_w=1 need 2 outputs \(dX0..dX0, then "
         r"dw0..\), got 1$"),
        (["dy", "x0", "w0", "x0", "w1"], ["a", "b"], {},
         r"op WeightedSumGradient #0: input 4 blob 'w1' \(weight of 'x0'\) must have 1 element, got \(2,\)"),
        (["dy", "x0", "w0", "x1", "w0"], ["a", "b", "c", "d"], {"grad_on_w": 1},
         r"op WeightedSumGradient #0: input 3 blob 'x1' of shape \(3, 2\) float32 must have the shape of "
         r"input 0 blob 'dy'"),
    ]
    for ins, outs, args, msg in bad:
        with pytest.raises(ValueError, match=msg):
            workspace.RunOperatorOnce(op("WeightedSumGradient", ins, outs, **args))
    with pytest.raises(TypeError, match=r"op WeightedSumGradient #0: input 2 blob 'i' must be float32"):
        workspace.RunOperatorOnce(op("WeightedSumGradient", ["dy", "x0", "i"], ["a"]))
    with pytest.raises(ValueError, match=r"op WeightedSumGradient #0: .*same blob 'dy'"):
        workspace.RunOperatorOnce(op("WeightedSumGradient", ["dy", "x0", "w0"], ["dy"]))
    # without grad_on_w the Xi are not read (as Caffe2): a mismatched X is accepted
    np.testing.assert_array_equal(run("WeightedSumGradient", ["dy", "x1", "w0"], ["a"]),
                                  workspace.FetchBlob("dy"))


# ---------------------------------------------------------------- training: FC-Relu-FC with WeightedSum SGD
def test_train_mlp_with_weighted_sum_sgd(rng):
    N, D, H, lr = 64, 3, 16, 0.2
    x = rng.uniform(-1, 1, (N, D)).astype(np.float32)
    target = (np.sin(2 * x[:, :1]) + 0.5 * x[:, 1:2] * x[:, 2:3]).astype(np.float32)
    params = {"w1": (rng.randn(H, D) / np.sqrt(D)).astype(np.float32), "b1": np.full(H, 0.1, np.float32),
              "w2": (rng.randn(1, H) / np.sqrt(H)).astype(np.float32), "b2": np.zeros(1, np.float32)}
    feed(x=x, target=target, ONE=np.ones(1, np.float32), LR=np.full(1, -lr, np.float32), **params)

    net = core.Net("mlp")
    h = net.FC(["x", "w1", "b1"], "h")
    h = net.Relu(h, h)                                   # in place
    pred = net.FC([h, "w2", "b2"], "pred")
    n_forward = len(net.Proto().op)
    # loss = 1/(2N) sum (pred - target)^2, so d loss / d pred = (pred - target) / N
    diff = net.Sub([pred, "target"], "diff")
    net.Scale(diff, "pred_grad", scale=1.0 / N)
    grad_ops, grad_map = core.GradientRegistry.GetBackwardPass(net.Proto().op[:n_forward], {"pred": "pred_grad"})
    net.Proto().op.extend(grad_ops)
    grads = {p: str(grad_map[p]) for p in params}
    for p in params:
        net.WeightedSum([p, "ONE", grads[p], "LR"], p)
    workspace.CreateNet(net)

    # one step against a NumPy forward/backward/update
    workspace.RunNet(net.Name())
    hh = np.maximum(x @ params["w1"].T + params["b1"], 0)
    dp = (hh @ params["w2"].T + params["b2"] - target) / N
    dh = (dp @ params["w2"]) * (hh > 0)
    expect = {"w2": dp.T @ hh, "b2": dp.sum(0), "w1": dh.T @ x, "b1": dh.sum(0)}
    for p in params:
        close(workspace.FetchBlob(p), params[p] - lr * expect[p], 1e-5)

    losses = []
    for _ in range(300):
        workspace.RunNet(net.Name())
        losses.append(0.5 * float(np.mean(workspace.FetchBlob("diff") ** 2)))
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.2 * losses[0], (losses[0], losses[-1])
    print("MLP loss %.5f -> %.5f" % (losses[0], losses[-1]))
