"""Shape operators: Concat, Split (and their legacy names DepthConcat, DepthSplit), Reshape, Flatten,
ResizeLike, Transpose, NCHW2NHWC, NHWC2NCHW, ExpandDims, Squeeze, Size, IsEmpty, HasElements -- against
NumPy, bad inputs, and gradients."""

import itertools

import numpy as np
import pytest

from recurrent import workspace
from recurrent.proto import NetDef, OperatorDef, make_argument


def _op(type_, inputs, outputs, **args):
    op = OperatorDef(type_, inputs, outputs)
    op.arg = [make_argument(k, v) for k, v in args.items()]
    return op


def run(type_, inputs, outputs, **args):
    """Feeds the (name, array) inputs, runs the op once, returns all outputs."""
    names = []
    for item in inputs:
        if isinstance(item, tuple):
            workspace.FeedBlob(item[0], item[1])
            names.append(item[0])
        else:
            names.append(item)
    workspace.RunOperatorOnce(_op(type_, names, outputs, **args))
    return [workspace.FetchBlob(o) for o in outputs]


def randn(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


# ---------------------------------------------------------------- Concat
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_axes(rng, axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    ax = axis % 3
    for k, s in enumerate(shapes):
        s[ax] = k + 1
    xs = [randn(rng, *s) for s in shapes]
    y, info = run("Concat", [("x%d" % k, x) for k, x in enumerate(xs)], ["y", "info"], axis=axis)
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=ax))
    assert info.dtype == np.int32
    np.testing.assert_array_equal(info, [1, 2, 3])


def test_concat_default_axis_is_1(rng):
    xs = [randn(rng, 2, 3), randn(rng, 2, 5)]
    y, info = run("Concat", [("a", xs[0]), ("b", xs[1])], ["y", "info"])
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=1))
    np.testing.assert_array_equal(info, [3, 5])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_add_axis(rng, axis):
    xs = [randn(rng, 3, 4) for _ in range(4)]
    y, info = run("Concat", [("x%d" % k, x) for k, x in enumerate(xs)], ["y", "info"], axis=axis, add_axis=1)
    np.testing.assert_array_equal(y, np.stack(xs, axis=axis))
    np.testing.assert_array_equal(info, [1, 1, 1, 1])


def test_concat_int32_single_input_and_one_output(rng):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    (y,) = run("Concat", [("x", x)], ["y"], axis=0)
    np.testing.assert_array_equal(y, x)
    assert y.dtype == np.int32
    (y,) = run("Concat", [("x", x), "x"], ["y"], axis=1)
    np.testing.assert_array_equal(y, np.concatenate([x, x], axis=1))


def test_concat_zero_size(rng):
    a, b = randn(rng, 2, 0, 3), randn(rng, 2, 4, 3)
    y, info = run("Concat", [("a", a), ("b", b)], ["y", "info"], axis=1)
    np.testing.assert_array_equal(y, np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(info, [0, 4])
    a, b = randn(rng, 0, 2), randn(rng, 0, 3)
    y, _ = run("Concat", [("a", a), ("b", b)], ["y", "info"], axis=1)
    assert y.shape == (0, 5)


def test_concat_order_arg(rng):
    xs = [randn(rng, 1, 2, 2, 3), randn(rng, 1, 2, 2, 1)]
    y, _ = run("Concat", [("a", xs[0]), ("b", xs[1])], ["y", "info"], order="NHWC")
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=3))


def test_concat_bad(rng):
    workspace.FeedBlob("a", randn(rng, 2, 3))
    workspace.FeedBlob("b", randn(rng, 4, 3))
    with pytest.raises(ValueError, match=r"op Concat #0: input 1 blob 'b' \(4, 3\) float32 does not match "
                                         r"input 0 blob 'a' \(2, 3\) float32: only axis 1 may differ"):
        run("Concat", ["a", "b"], ["y", "info"], axis=1)
    workspace.FeedBlob("c", randn(rng, 2, 3, 1))
    with pytest.raises(ValueError, match=r"op Concat #0: input 1 blob 'c' \(2, 3, 1\) float32 does not "
                                         r"match input 0 blob 'a'"):
        run("Concat", ["a", "c"], ["y", "info"], axis=0)
    workspace.FeedBlob("d", randn(rng, 2, 4))
    with pytest.raises(ValueError, match=r"op Concat #0: input 1 blob 'd' \(2, 4\) float32 does not match "
                                         r"input 0 "
                                         r"blob 'a' \(2, 3\) float32: with add_axis=1 all shapes must be "
                                         r"equal"):
        run("Concat", ["a", "d"], ["y", "info"], axis=0, add_axis=1)
    workspace.FeedBlob("i", np.zeros((2, 3), np.int32))
    with pytest.raises(TypeError, match=r"op Concat #0: input 1 blob 'i' \(2, 3\) int32 must have the "
                                        r"dtype of input 0 blob 'a'"):
        run("Concat", ["a", "i"], ["y", "info"], axis=0)
    with pytest.raises(IndexError, match=r"op Concat #0: axis 2 is out of range for input 0 \(2 dims\)"):
        run("Concat", ["a", "a"], ["y", "info"], axis=2)
    with pytest.raises(ValueError, match=r"op Concat #0: input 0 and output 0 are the same blob 'a'"):
        run("Concat", ["a", "b"], ["a", "info"], axis=0)
    with pytest.raises(ValueError, match=r"op Concat #0: expects 1 to 2 outputs, got 3"):
        run("Concat", ["a", "b"], ["y", "info", "z"], axis=0)


# ---------------------------------------------------------------- Split
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_split_arg(rng, axis):
    x = randn(rng, 6, 7, 5)
    ax = axis % 3
    sizes = {0: [1, 2, 3], 1: [3, 0, 4], 2: [2, 2, 1]}[ax]
    ys = run("Split", [("x", x)], ["y0", "y1", "y2"], axis=axis, split=sizes)
    for y, ref in zip(ys, np.split(x, np.cumsum(sizes)[:-1], axis=ax)):
        np.testing.assert_array_equal(y, ref)


def test_split_input_sizes(rng):
    x = randn(rng, 3, 9)
    ys = run("Split", [("x", x), ("s", np.array([4, 5], np.int32))], ["a", "b"], axis=1)
    np.testing.assert_array_equal(ys[0], x[:, :4])
    np.testing.assert_array_equal(ys[1], x[:, 4:])


def test_split_equal_default_axis(rng):
    x = randn(rng, 2, 6, 3)
    ys = run("Split", [("x", x)], ["a", "b", "c"])
    for y, ref in zip(ys, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_split_add_axis_inverts_concat_add_axis(rng, axis):
    xs = [randn(rng, 2, 5) for _ in range(3)]
    stacked = np.stack(xs, axis=axis)
    ys = run("Split", [("x", stacked)], ["a", "b", "c"], axis=axis, add_axis=1)
    for y, ref in zip(ys, xs):
        np.testing.assert_array_equal(y, ref)
    ys = run("Split", ["x", ("info", np.ones(3, np.int32))], ["a", "b", "c"], axis=axis, add_axis=1)
    for y, ref in zip(ys, xs):
        np.testing.assert_array_equal(y, ref)


def test_split_zero_size_and_int32(rng):
    x = np.arange(0, dtype=np.int32).reshape(0, 4)
    ys = run("Split", [("x", x)], ["a", "b"], axis=1, split=[1, 3])
    assert ys[0].shape == (0, 1) and ys[1].shape == (0, 3) and ys[0].dtype == np.int32
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    ys = run("Split", [("x", x)], ["a", "b"], axis=1)
    np.testing.assert_array_equal(ys[0], x[:, :2])


def test_split_concat_roundtrip(rng):
    x = randn(rng, 4, 10)
    y, info = run("Concat", [("a", x[:, :3]), ("b", x[:, 3:])], ["y", "info"], axis=1)
    ys = run("Split", ["y", "info"], ["c", "d"], axis=1)
    np.testing.assert_array_equal(ys[0], x[:, :3])
    np.testing.assert_array_equal(ys[1], x[:, 3:])


def test_split_bad(rng):
    workspace.FeedBlob("x", randn(rng, 2, 5))
    with pytest.raises(ValueError, match=r"op Split #0: split sizes \(2, 2\) \(argument 'split'\) sum to "
                                         r"4 but axis 1 of input 0 blob 'x' \(2, 5\) float32 has size 5"):
        run("Split", ["x"], ["a", "b"], axis=1, split=[2, 2])
    workspace.FeedBlob("s", np.array([1, 1], np.int32))
    with pytest.raises(ValueError, match=r"op Split #0: split sizes \(1, 1\) \(input 1\) sum to 2 but "
                                         r"axis 1 of input 0 blob 'x'"):
        run("Split", ["x", "s"], ["a", "b"], axis=1)
    with pytest.raises(ValueError, match=r"op Split #0: input 0 blob 'x' \(2, 5\) float32: axis 1 of size "
                                         r"5 cannot be split equally into 2 outputs"):
        run("Split", ["x"], ["a", "b"], axis=1)
    with pytest.raises(ValueError, match=r"op Split #0: argument 'split' has 3 sizes for 2 outputs"):
        run("Split", ["x"], ["a", "b"], axis=1, split=[1, 2, 2])
    with pytest.raises(ValueError, match=r"op Split #0: the split sizes are given by input 1 blob 's': do "
                                         r"not also"):
        run("Split", ["x", "s"], ["a", "b"], axis=1, split=[2, 3])
    with pytest.raises(ValueError, match=r"op Split #0: argument 'split' has a negative size -1 for "
                                         r"output 0 blob 'a'"):
        run("Split", ["x"], ["a", "b"], axis=1, split=[-1, 6])
    with pytest.raises(ValueError, match=r"op Split #0: input 1 blob 's' \(2,\) int32 must hold 3 split "
                                         r"sizes"):
        run("Split", ["x", "s"], ["a", "b", "c"], axis=1)
    workspace.FeedBlob("sf", np.array([2.0, 3.0], np.float32))
    with pytest.raises(TypeError, match=r"op Split #0: input 1 blob 'sf' must be int32"):
        run("Split", ["x", "sf"], ["a", "b"], axis=1)
    with pytest.raises(IndexError, match=r"op Split #0: axis 2 is out of range for input 0 \(2 dims\)"):
        run("Split", ["x"], ["a", "b"], axis=2)
    with pytest.raises(ValueError, match=r"op Split #0: with add_axis=1, axis 1 of input 0 blob 'x' \(2, "
                                         r"5\) float32 must equal the number of outputs 2"):
        run("Split", ["x"], ["a", "b"], axis=1, add_axis=1)


# ---------------------------------------------------------------- Reshape
@pytest.mark.parametrize("shape_in,new,expect", [
    ((2, 3, 4), [6, 4], (6, 4)),
    ((2, 3, 4), [-1, 4], (6, 4)),
    ((2, 3, 4), [0, -1], (2, 12)),
    ((2, 3, 4), [0, 0, 2, 2], (2, 3, 2, 2)),
    ((2, 3, 4), [24], (24,)),
    ((2, 3, 4), [-1], (24,)),
    ((1,), [], ()),
    ((), [1, 1], (1, 1)),
    ((0, 4), [-1, 2], (0, 2)),
    ((0, 4), [0, 4, 1], (0, 4, 1)),
    ((3, 0, 2), [6, 0, 0], (6, 0, 0)),  # an empty input keeps a 0 as 0 (Caffe2)
])
def test_reshape(rng, shape_in, new, expect):
    x = np.asarray(rng.randn(*shape_in), np.float32)
    y, old = run("Reshape", [("x", x)], ["y", "old"], shape=new)
    assert y.shape == expect
    np.testing.assert_array_equal(y, x.reshape(expect))
    assert old.dtype == np.int32
    np.testing.assert_array_equal(old, np.array(shape_in, np.int64))


def test_reshape_shape_input_and_inplace(rng):
    x = randn(rng, 4, 6)
    y, old = run("Reshape", [("x", x), ("s", np.array([3, -1, 2], np.int32))], ["y", "old"])
    np.testing.assert_array_equal(y, x.reshape(3, 4, 2))
    np.testing.assert_array_equal(old, [4, 6])
    y, old = run("Reshape", ["x"], ["x", "old"], shape=[2, 12])
    np.testing.assert_array_equal(y, x.reshape(2, 12))
    np.testing.assert_array_equal(old, [4, 6])
    # and back, in place, from old_shape
    y, _ = run("Reshape", ["x", "old"], ["x", "old2"])
    np.testing.assert_array_equal(y, x)


def test_reshape_int32(rng):
    x = np.arange(6, dtype=np.int32)
    y, _ = run("Reshape", [("x", x)], ["y", "old"], shape=[3, 2])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, x.reshape(3, 2))


def test_reshape_bad(rng):
    workspace.FeedBlob("x", randn(rng, 2, 3))
    with pytest.raises(ValueError, match=r"op Reshape #0: cannot reshape input 0 blob 'x' \(2, 3\) "
                                         r"float32 \(6 elements\) to \(4, 2\)"):
        run("Reshape", ["x"], ["y", "old"], shape=[4, 2])
    with pytest.raises(ValueError, match=r"op Reshape #0: cannot reshape input 0 blob 'x' \(2, 3\) "
                                         r"float32 \(6 elements\) to \(4, -1\): no size for the -1 fits"):
        run("Reshape", ["x"], ["y", "old"], shape=[4, -1])
    with pytest.raises(ValueError, match=r"op Reshape #0: argument 'shape' has more than one -1 "
                                         r"\(positions 0 and 2\)"):
        run("Reshape", ["x"], ["y", "old"], shape=[-1, 2, -1])
    with pytest.raises(ValueError, match=r"op Reshape #0: argument 'shape' has an invalid dimension -2"):
        run("Reshape", ["x"], ["y", "old"], shape=[-2, 3])
    with pytest.raises(ValueError, match=r"op Reshape #0: argument 'shape' has 0 \(copy the input dim\) "
                                         r"at position 2 but input 0 blob 'x' is \(2, 3\) float32"):
        run("Reshape", ["x"], ["y", "old"], shape=[1, 6, 0])
    with pytest.raises(ValueError, match=r"op Reshape #0: argument 'shape' is missing"):
        run("Reshape", ["x"], ["y", "old"])
    workspace.FeedBlob("s", np.array([3, 2], np.int32))
    with pytest.raises(ValueError, match=r"op Reshape #0: the new shape is given by input 1 blob 's': do "
                                         r"not also"):
        run("Reshape", ["x", "s"], ["y", "old"], shape=[3, 2])
    workspace.FeedBlob("s", np.array([-1, -1], np.int32))
    with pytest.raises(ValueError, match=r"op Reshape #0: the new shape in input 1 blob 's' has more than "
                                         r"one -1"):
        run("Reshape", ["x", "s"], ["y", "old"])
    workspace.FeedBlob("s", np.array([[3, 2]], np.int32))
    with pytest.raises(ValueError, match=r"op Reshape #0: input 1 blob 's' \(the new shape\) must be 1-D"):
        run("Reshape", ["x", "s"], ["y", "old"])
    with pytest.raises(ValueError, match=r"op Reshape #0: expects 2 outputs, got 1"):
        run("Reshape", ["x"], ["y"], shape=[6])
    with pytest.raises(ValueError, match=r"op Reshape #0: cannot reshape input 0 blob 'x' .* to "
                                         r"\(4611686018427387904, 4\)"):
        run("Reshape", ["x"], ["y", "old"], shape=[1 << 62, 4])


# ---------------------------------------------------------------- Flatten / ResizeLike
@pytest.mark.parametrize("shape,axis", [((2, 3, 4), 1), ((2, 3, 4), 0), ((2, 3, 4), 2), ((2, 3, 4), 3),
                                        ((5,), 1), ((0, 3), 1), ((3, 0, 2), 2)])
def test_flatten(rng, shape, axis):
    x = rng.randn(*shape).astype(np.float32)
    (y,) = run("Flatten", [("x", x)], ["y"], axis=axis)
    expect = (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))
    np.testing.assert_array_equal(y, x.reshape(expect))


def test_flatten_bad(rng):
    workspace.FeedBlob("x", randn(rng, 2, 3))
    with pytest.raises(ValueError, match=r"op Flatten #0: axis 3 is out of range for input 0 blob 'x' "
                                         r"\(2, 3\) float32"):
        run("Flatten", ["x"], ["y"], axis=3)
    with pytest.raises(ValueError, match=r"op Flatten #0: argument 'axis' must be >= 0"):
        run("Flatten", ["x"], ["y"], axis=-1)


def test_resize_like(rng):
    x, like = randn(rng, 6), randn(rng, 2, 3)
    (y,) = run("ResizeLike", [("x", x), ("l", like)], ["y"])
    np.testing.assert_array_equal(y, x.reshape(2, 3))
    (y,) = run("ResizeLike", ["x", "l"], ["x"])
    np.testing.assert_array_equal(y, x.reshape(2, 3))
    workspace.FeedBlob("l2", randn(rng, 4))
    with pytest.raises(ValueError, match=r"op ResizeLike #0: input 0 blob 'x' \(2, 3\) float32 and input "
                                         r"1 blob 'l2' \(4,\) float32 differ in element count"):
        run("ResizeLike", ["x", "l2"], ["y"])


# ---------------------------------------------------------------- Transpose
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (2, 1, 3, 4), (2, 3, 1, 2, 3), (0, 3, 2)])
def test_transpose_all_permutations(rng, shape):
    x = rng.randn(*shape).astype(np.float32)
    (y,) = run("Transpose", [("x", x)], ["y"])
    np.testing.assert_array_equal(y, x.transpose())
    for perm in itertools.permutations(range(len(shape))):
        (y,) = run("Transpose", ["x"], ["y"], axes=list(perm))
        np.testing.assert_array_equal(y, x.transpose(perm))


def test_transpose_scalar_and_int32():
    (y,) = run("Transpose", [("x", np.array(3.0, np.float32))], ["y"])
    assert y.shape == () and y == 3.0
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    (y,) = run("Transpose", [("x", x)], ["y"], axes=[1, 2, 0])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, x.transpose(1, 2, 0))


def test_transpose_bad(rng):
    workspace.FeedBlob("x", randn(rng, 2, 3, 4))
    with pytest.raises(ValueError, match=r"op Transpose #0: argument 'axes' \(0, 1\) has 2 entries but "
                                         r"input 0 blob 'x' is \(2, 3, 4\) float32"):
        run("Transpose", ["x"], ["y"], axes=[0, 1])
    with pytest.raises(ValueError, match=r"op Transpose #0: argument 'axes' \(0, 0, 1\) is not a "
                                         r"permutation of 0..2"):
        run("Transpose", ["x"], ["y"], axes=[0, 0, 1])
    with pytest.raises(ValueError, match=r"op Transpose #0: argument 'axes' \(0, 1, 3\) is not a "
                                         r"permutation"):
        run("Transpose", ["x"], ["y"], axes=[0, 1, 3])
    with pytest.raises(ValueError, match=r"op Transpose #0: argument 'axes' \(-1, 0, 1\) is not a "
                                         r"permutation"):
        run("Transpose", ["x"], ["y"], axes=[-1, 0, 1])
    with pytest.raises(ValueError, match=r"op Transpose #0: input 0 and output 0 are the same blob 'x'"):
        run("Transpose", ["x"], ["x"])


# ---------------------------------------------------------------- ExpandDims / Squeeze
@pytest.mark.parametrize("shape,dims,expect", [
    ((2, 3), [0], (1, 2, 3)),
    ((2, 3), [2], (2, 3, 1)),
    ((2, 3), [0, 3], (1, 2, 3, 1)),
    ((2, 3), [3, 1, 1], (2, 1, 3, 1)),
    ((), [0], (1,)),
    ((0, 3), [1], (0, 1, 3)),
])
def test_expand_dims(rng, shape, dims, expect):
    x = np.asarray(rng.randn(*shape), np.float32)
    (y,) = run("ExpandDims", [("x", x)], ["y"], dims=dims)
    assert y.shape == expect
    np.testing.assert_array_equal(y, x.reshape(expect))
    # Squeeze with the same dims is its inverse
    (z,) = run("Squeeze", ["y"], ["z"], dims=dims)
    np.testing.assert_array_equal(z, x)


def test_expand_squeeze_inplace(rng):
    x = randn(rng, 3, 4)
    (y,) = run("ExpandDims", [("x", x)], ["x"], dims=[0, 2])
    np.testing.assert_array_equal(y, x.reshape(1, 3, 1, 4))
    (y,) = run("Squeeze", ["x"], ["x"], dims=[2, 0])
    np.testing.assert_array_equal(y, x)


def test_squeeze_numpy(rng):
    x = randn(rng, 1, 3, 1, 1, 2)
    (y,) = run("Squeeze", [("x", x)], ["y"], dims=[0, 3])
    np.testing.assert_array_equal(y, np.squeeze(x, axis=(0, 3)))


def test_expand_squeeze_bad(rng):
    workspace.FeedBlob("x", randn(rng, 2, 3))
    with pytest.raises(ValueError, match=r"op ExpandDims #0: argument 'dims' \(largest 3\) does not fit "
                                         r"input 0 blob 'x' \(2, 3\) float32"):
        run("ExpandDims", ["x"], ["y"], dims=[3])
    with pytest.raises(ValueError, match=r"op ExpandDims #0: argument 'dims' must be given"):
        run("ExpandDims", ["x"], ["y"])
    with pytest.raises(ValueError, match=r"op Squeeze #0: argument 'dims' must be non-negative, got -1"):
        run("Squeeze", ["x"], ["y"], dims=[-1])
    with pytest.raises(ValueError, match=r"op Squeeze #0: dim 1 of input 0 blob 'x' \(2, 3\) float32 must "
                                         r"be 1"):
        run("Squeeze", ["x"], ["y"], dims=[1])
    with pytest.raises(ValueError, match=r"op Squeeze #0: argument 'dims' \(largest 2\) needs input 0 "
                                         r"blob 'x' to have at least 3 dims, got \(2, 3\) float32"):
        run("Squeeze", ["x"], ["y"], dims=[2])
    with pytest.raises(ValueError, match=r"op ExpandDims #0: argument 'dims' has 9 distinct entries"):
        run("ExpandDims", ["x"], ["y"], dims=list(range(9)))


def test_unfed_input_named():
    with pytest.raises(ValueError):
        run("ConstantFill", [], ["empty"], shape=[-1])
    for op_type, extra in [("Transpose", {}), ("Flatten", {}), ("Squeeze", {"dims": [0]}),
                           ("Reshape", {"shape": [1]}), ("Split", {})]:
        outs = ["y", "old"] if op_type == "Reshape" else ["y"]
        with pytest.raises(ValueError, match=r"op %s #0: input 0 blob 'empty' holds no tensor" % op_type):
            run(op_type, ["empty"], outs, **extra)


def test_shape_ops_in_a_net_rerun(rng):
    """Ops instantiated once and run repeatedly with changing input shapes."""
    net = NetDef("shape_net")
    net.op.append(_op("Concat", ["a", "b"], ["c", "info"], axis=0))
    net.op.append(_op("Transpose", ["c"], ["t"]))
    net.op.append(_op("Reshape", ["t"], ["r", "old"], shape=[-1]))
    net.op.append(_op("Split", ["r"], ["s0", "s1"], axis=0))
    for n in (2, 4, 2):
        a, b = randn(rng, n, 3), randn(rng, n, 3)
        workspace.FeedBlob("a", a)
        workspace.FeedBlob("b", b)
        if not workspace.HasBlob("s0"):
            workspace.CreateNet(net)
        workspace.RunNet("shape_net")
        flat = np.concatenate([a, b]).T.ravel()
        np.testing.assert_array_equal(workspace.FetchBlob("s0"), flat[:flat.size // 2])
        np.testing.assert_array_equal(workspace.FetchBlob("s1"), flat[flat.size // 2:])


# ---------------------------------------------------------------- gradients
def _checker():
    gradient_checker = pytest.importorskip("recurrent.gradient_checker")
    return gradient_checker.GradientChecker(stepsize=1e-2, threshold=1e-2)


def _create(type_, inputs, outputs, **args):
    core = pytest.importorskip("recurrent.core")
    return core.CreateOperator(type_, inputs, outputs, **args)


def _check_all(op, inputs, input_indices, outputs_with_grads=(0,)):
    checker = _checker()
    for i in input_indices:
        ok, grad, est = checker.CheckSimple(op, inputs, i, list(outputs_with_grads))
        assert ok, (op.type, i, grad, est)


@pytest.mark.parametrize("axis,add_axis", [(0, 0), (1, 0), (-1, 0), (0, 1), (1, 1), (2, 1)])
def test_concat_gradient(rng, axis, add_axis):
    if add_axis:
        xs = [randn(rng, 2, 3) for _ in range(3)]
    else:
        shapes = [[2, 3], [2, 3], [2, 3]]
        for k, s in enumerate(shapes):
            s[axis % 2] = k + 1
        xs = [randn(rng, *s) for s in shapes]
    op = _create("Concat", ["x0", "x1", "x2"], ["y", "info"], axis=axis, add_axis=add_axis)
    _check_all(op, xs, range(3))


@pytest.mark.parametrize("args,extra_input", [(dict(axis=1, split=[1, 3, 2]), None),
                                              (dict(axis=0), None),
                                              (dict(axis=1), np.array([2, 2, 2], np.int32)),
                                              (dict(axis=1, add_axis=1), None)])
def test_split_gradient(rng, args, extra_input):
    x = randn(rng, 3, 6) if not args.get("add_axis") else randn(rng, 2, 3, 4)
    inputs = [x] + ([extra_input] if extra_input is not None else [])
    names = ["x", "s"][:len(inputs)]
    op = _create("Split", names, ["a", "b", "c"], **args)
    _check_all(op, inputs, [0], outputs_with_grads=(0, 1, 2))


def test_split_gradient_missing_output_grads(rng):
    """Outputs without a gradient contribute zeros (the maker fills them)."""
    core = pytest.importorskip("recurrent.core")
    x = randn(rng, 4, 6)
    op = _create("Split", ["x"], ["a", "b", "c"], axis=1, split=[1, 2, 3])
    workspace.FeedBlob("x", x)
    workspace.RunOperatorOnce(op)
    ga, gc = randn(rng, 4, 1), randn(rng, 4, 3)
    workspace.FeedBlob("ga", ga)
    workspace.FeedBlob("gc", gc)
    grad_ops, g_input = core.GradientRegistry.GetGradientForOp(op, ["ga", None, "gc"])
    assert g_input[0] is not None
    for g in grad_ops:
        workspace.RunOperatorOnce(g)
    expect = np.concatenate([ga, np.zeros((4, 2), np.float32), gc], axis=1)
    np.testing.assert_array_equal(workspace.FetchBlob(g_input[0]), expect)
    # no output gradient at all: no gradient ops, no input gradient
    grad_ops, g_input = core.GradientRegistry.GetGradientForOp(op, [None, None, None])
    assert grad_ops == [] and g_input == [None]


@pytest.mark.parametrize("shape,new", [((2, 3, 4), [-1, 4]), ((2, 3, 4), [0, 12]), ((6,), [3, 2]),
                                        ((1,), [])])
def test_reshape_gradient(rng, shape, new):
    x = np.asarray(rng.randn(*shape), np.float32)
    op = _create("Reshape", ["x"], ["y", "old"], shape=new)
    _check_all(op, [x], [0])


def test_reshape_gradient_shape_input(rng):
    op = _create("Reshape", ["x", "s"], ["y", "old"])
    _check_all(op, [randn(rng, 4, 3), np.array([2, -1], np.int32)], [0])


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_flatten_gradient(rng, axis):
    op = _create("Flatten", ["x"], ["y"], axis=axis)
    _check_all(op, [randn(rng, 2, 3, 2)], [0])


def test_resize_like_gradient(rng):
    op = _create("ResizeLike", ["x", "like"], ["y"])
    _check_all(op, [randn(rng, 6), randn(rng, 2, 3)], [0])


@pytest.mark.parametrize("axes", [None, [1, 0, 2], [2, 0, 1], [1, 2, 0]])
def test_transpose_gradient(rng, axes):
    args = {} if axes is None else {"axes": axes}
    op = _create("Transpose", ["x"], ["y"], **args)
    _check_all(op, [randn(rng, 2, 3, 4)], [0])


@pytest.mark.parametrize("dims", [[0], [1, 3], [2]])
def test_expand_dims_gradient(rng, dims):
    op = _create("ExpandDims", ["x"], ["y"], dims=dims)
    _check_all(op, [randn(rng, 2, 3)], [0])


@pytest.mark.parametrize("dims", [[0], [0, 2]])
def test_squeeze_gradient(rng, dims):
    op = _create("Squeeze", ["x"], ["y"], dims=dims)
    _check_all(op, [randn(rng, 1, 3, 1, 2)], [0])


def test_gradient_makers_shapes_and_names():
    """The makers emit Caffe2's gradient ops and leave shape inputs without gradient."""
    core = pytest.importorskip("recurrent.core")
    op = _create("Concat", ["a", "b"], ["y", "info"], axis=2, add_axis=1)
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["y_grad", None])
    assert [o.type for o in ops] == ["Split"] and g_in == ["a_grad", "b_grad"]
    assert list(ops[0].input) == ["y_grad", "info"]
    assert {a.name: a.value() for a in ops[0].arg} == {"axis": 2, "add_axis": 1}
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, [None, None])
    assert ops == [] and g_in == [None, None]
    op = _create("Reshape", ["x", "s"], ["y", "old"])
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["y_grad", None])
    assert [o.type for o in ops] == ["Reshape"] and g_in == ["x_grad", None]
    assert list(ops[0].input) == ["y_grad", "old"]
    op = _create("Transpose", ["x"], ["y"], axes=[2, 0, 1])
    ops, _ = core.GradientRegistry.GetGradientForOp(op, ["y_grad"])
    assert [a.value() for a in ops[0].arg] == [[1, 2, 0]]


def test_backward_pass_through_a_chain_of_shape_ops(rng):
    """AddGradientOperators over Concat, Transpose, Reshape, ExpandDims, Flatten,
    Squeeze and a Split whose second output gets no gradient (zero-filled)."""
    core = pytest.importorskip("recurrent.core")
    x, w = randn(rng, 2, 3), randn(rng, 2, 4)
    net = core.Net("chain")
    c, _ = net.Concat(["x", "w"], ["c", "c_info"], axis=1)
    t = net.Transpose([c], ["t"])
    r, _ = net.Reshape([t], ["r", "r_old"], shape=[-1])
    e = net.ExpandDims([r], ["e"], dims=[0])
    f = net.Flatten([e], ["f"], axis=1)
    q = net.Squeeze([f], ["q"], dims=[0])
    s0, s1 = net.Split([q], ["s0", "s1"], axis=0, split=[5, 9])
    grad_map = net.AddGradientOperators([s0])
    zero_fills = [op for op in net.Proto().op if op.type == "ConstantFill" and list(op.input) == ["s1"]]
    assert len(zero_fills) == 1  # s1 has no gradient: the Split maker fills zeros shaped like it
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("w", w)
    workspace.RunNetOnce(net)
    flat = np.concatenate([x, w], axis=1).T.ravel()
    np.testing.assert_array_equal(workspace.FetchBlob("s0"), flat[:5])
    # d sum(s0) / d c: ones where c's element lands in the first 5 of c.T.ravel()
    mask = np.zeros(14, np.float32)
    mask[:5] = 1
    dc = mask.reshape(7, 2).T
    np.testing.assert_array_equal(workspace.FetchBlob(grad_map["x"]), dc[:, :3])
    np.testing.assert_array_equal(workspace.FetchBlob(grad_map["w"]), dc[:, 3:])


def test_backward_pass_concat_of_the_same_blob(rng):
    core = pytest.importorskip("recurrent.core")
    x = randn(rng, 2, 3)
    net = core.Net("dup")
    y, _ = net.Concat(["x", "x", "x"], ["y", "info"], axis=0)
    grad_map = net.AddGradientOperators([y])
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(grad_map["x"]), np.full((2, 3), 3.0, np.float32))


# ---------------------------------------------------------------- SplitByLengths
def _sbl_ref(x, lengths, n, axis, scale=1):
    per = len(lengths) // n
    sizes = [scale * int(np.sum(lengths[k * per:(k + 1) * per])) for k in range(n)]
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


@pytest.mark.parametrize("shape,axis,lengths,n", [
    ((7, 3), 0, [2, 0, 3, 2], 2),        # two lengths per output
    ((7, 3), 0, [2, 0, 3, 2], 4),
    ((2, 6, 2), 1, [1, 2, 3], 3),
    ((2, 6, 2), -2, [1, 2, 3], 1),
    ((2, 5), 1, [5], 1),
    ((0, 3), 0, [], 2),                  # no lengths: every output empty
    ((0, 3), 0, [0, 0], 2),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_split_by_lengths(rng, shape, axis, lengths, n, dtype):
    x = (rng.randn(*shape) * 50).astype(dtype)
    lengths = np.array(lengths, np.int32)
    outs = run("SplitByLengths", [("x", x), ("l", lengths)], ["y%d" % k for k in range(n)], axis=axis)
    ref = _sbl_ref(x, lengths, n, axis)
    assert len(outs) == n
    for o, r in zip(outs, ref):
        assert o.dtype == dtype and o.shape == r.shape
        np.testing.assert_array_equal(o, r)


def test_split_by_lengths_default_axis_and_scaling(rng):
    # as Caffe2: without 'axis' the axis is 1 (order NCHW)
    x = randn(rng, 2, 6, 3)
    outs = run("SplitByLengths", [("x", x), ("l", np.array([1, 2, 1, 2], np.int32))], ["a", "b"])
    for o, r in zip(outs, _sbl_ref(x, np.array([1, 2, 1, 2]), 2, 1)):
        np.testing.assert_array_equal(o, r)
    # use_scaling_lengths: lengths [1, 2] over 9 rows count 3 rows each
    x = randn(rng, 9, 2)
    outs = run("SplitByLengths", [("x", x), ("l", np.array([1, 2], np.int32))], ["a", "b"], axis=0,
               use_scaling_lengths=1)
    np.testing.assert_array_equal(outs[0], x[:3])
    np.testing.assert_array_equal(outs[1], x[3:])


def test_split_by_lengths_gradient(rng):
    core = pytest.importorskip("recurrent.core")
    op = _create("SplitByLengths", ["x", "l"], ["a", "b", "c"], axis=0)
    _check_all(op, [randn(rng, 6, 2), np.array([1, 3, 2], np.int32)], [0], outputs_with_grads=(0, 1, 2))
    op2 = _create("SplitByLengths", ["x", "l"], ["a", "b"], axis=1, use_scaling_lengths=1)
    _check_all(op2, [randn(rng, 2, 6), np.array([1, 0, 1, 1], np.int32)], [0], outputs_with_grads=(0, 1))
    grad_ops, g_input = core.GradientRegistry.GetGradientForOp(op, ["ga", None, "gc"])
    assert g_input == ["x_grad", None]
    assert [g.type for g in grad_ops] == ["ConstantFill", "Concat"]
    assert list(grad_ops[-1].input) == ["ga", "_b_zero_grad", "gc"]


def test_split_by_lengths_bad(rng):
    workspace.FeedBlob("x", randn(rng, 5, 2))
    for name, v in [("l3", [1, 2, 2]), ("ln", [3, -1, 3, 0]), ("ls", [1, 1, 1, 1]), ("l2", [[2, 3]])]:
        workspace.FeedBlob(name, np.array(v, np.int32))
    workspace.FeedBlob("lf", np.array([2.0, 3.0], np.float32))
    with pytest.raises(ValueError, match=r"^op SplitByLengths #0: input 1 blob 'l3' \(lengths\) of shape "
                                         r"\(3,\) int32: 3 lengths cannot be shared by 2 outputs"):
        run("SplitByLengths", ["x", "l3"], ["a", "b"], axis=0)
    with pytest.raises(ValueError, match=r"^op SplitByLengths #0: input 1 blob 'ln' \(lengths\) holds -1 at "
                                         r"position 1; a length must not be negative$"):
        run("SplitByLengths", ["x", "ln"], ["a", "b"], axis=0)
    with pytest.raises(ValueError, match=r"^op SplitByLengths #0: input 1 blob 'ls' \(lengths\) sums to 4, "
                                         r"but axis 0 of input 0 blob 'x' \(5, 2\) float32 has size 5 "
                                         r"\(they must be equal\)$"):
        run("SplitByLengths", ["x", "ls"], ["a", "b"], axis=0)
    with pytest.raises(ValueError, match=r"use_scaling_lengths=1: it must be a multiple of the sum"):
        run("SplitByLengths", ["x", "ls"], ["a", "b"], axis=0, use_scaling_lengths=1)
    with pytest.raises(ValueError, match=r"input 1 blob 'l2' \(lengths\) must be 1-D, got \(1, 2\) int32"):
        run("SplitByLengths", ["x", "l2"], ["a", "b"], axis=0)
    with pytest.raises(TypeError, match=r"op SplitByLengths #0: input 1 blob 'lf'"):
        run("SplitByLengths", ["x", "lf"], ["a", "b"], axis=0)
    with pytest.raises(IndexError, match=r"op SplitByLengths #0: axis 2 is out of range for input 0"):
        run("SplitByLengths", ["x", "l3"], ["a"], axis=2)
    with pytest.raises(ValueError, match=r"argument 'add_axis' is not one of SplitByLengths'"):
        run("SplitByLengths", ["x", "l3"], ["a"], axis=0, add_axis=1)
    # checked at net creation when the inputs hold tensors
    core = pytest.importorskip("recurrent.core")
    net = core.Net("sbl_early")
    net.SplitByLengths(["x", "l3"], ["a", "b"], axis=0)
    with pytest.raises(ValueError, match=r"op SplitByLengths #0: input 1 blob 'l3' \(lengths\) "
                                         r"of shape \(3,\)"):
        workspace.CreateNet(net)


# ---------------------------------------------------------------- Reshape of empty tensors (Caffe2's rules)
def test_reshape_empty_keeps_zero_dims():
    x = np.zeros((0, 0), np.float32)
    y, old = run("Reshape", [("x", x), ("s", np.array([0, 0, 0], np.int32))], ["y", "old"])
    assert y.shape == (0, 0, 0)
    np.testing.assert_array_equal(old, [0, 0])
    y, _ = run("Reshape", [("x", np.zeros((2, 0), np.float32))], ["y", "old"], shape=[0, 5])
    assert y.shape == (0, 5)
    with pytest.raises(ValueError, match=r"op Reshape #0: cannot reshape input 0 blob 'x' \(2, 0\) float32 "
                                         r"\(0 elements\) to \(-1, 0\): no size for the -1 fits \(the other "
                                         r"dims' size is zero\)$"):
        run("Reshape", [("x", np.zeros((2, 0), np.float32))], ["y", "old"], shape=[-1, 0])


# ---------------------------------------------------------------- PrependDim / MergeDim
@pytest.mark.parametrize("shape,n", [((6, 2), 3), ((8,), 8), ((4, 2, 3), 1), ((0, 3), 2), ((6,), 6)])
def test_prepend_dim_and_merge_dim(rng, shape, n):
    x = randn(rng, *shape)
    (y,) = run("PrependDim", [("x", x)], ["y"], dim_size=n)
    np.testing.assert_array_equal(y, x.reshape((n, shape[0] // n) + shape[1:]))
    (z,) = run("MergeDim", ["y"], ["z"])
    np.testing.assert_array_equal(z, x)
    # in place, and int32
    xi = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    (y,) = run("PrependDim", [("xi", xi)], ["xi"], dim_size=n)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, xi.reshape((n, shape[0] // n) + shape[1:]))
    (z,) = run("MergeDim", ["xi"], ["xi"])
    np.testing.assert_array_equal(z, xi)


def test_prepend_dim_merge_dim_bad(rng):
    workspace.FeedBlob("x", randn(rng, 6, 2))
    workspace.FeedBlob("s", np.float32(1.0))
    with pytest.raises(ValueError, match=r"^op PrependDim #0: input 0 blob 'x' \(6, 2\) float32 needs 1 to 7 "
                                         r"dims, the first a multiple of dim_size 4$"):
        run("PrependDim", ["x"], ["y"], dim_size=4)
    with pytest.raises(ValueError, match=r"^op PrependDim #0: input 0 blob 's' \(\) float32 needs 1 to"):
        run("PrependDim", ["s"], ["y"], dim_size=1)
    workspace.FeedBlob("big", np.zeros((1,) * 8, np.float32))
    with pytest.raises(ValueError, match=r"^op PrependDim #0: input 0 blob 'big' .* needs 1 to 7 dims"):
        run("PrependDim", ["big"], ["y"], dim_size=1)
    for bad in (0, -2):
        with pytest.raises(ValueError, match=r"^op PrependDim #0: argument 'dim_size' must be > 0, got %d$"
                                             % bad):
            run("PrependDim", ["x"], ["y"], dim_size=bad)
    with pytest.raises(ValueError, match=r"^op PrependDim #0: argument 'dim_size' must be > 0, got 0$"):
        run("PrependDim", ["x"], ["y"])
    workspace.FeedBlob("v", randn(rng, 3))
    with pytest.raises(ValueError, match=r"^op MergeDim #0: input 0 blob 'v' \(3,\) float32 must have at "
                                         r"least 2 dims$"):
        run("MergeDim", ["v"], ["y"])
    assert isinstance(workspace.FetchBlob("y"), bytes)  # nothing was written


def test_prepend_dim_gradient(rng):
    op = _create("PrependDim", ["x"], ["y"], dim_size=2)
    _check_all(op, [randn(rng, 4, 3)], [0])
    core = pytest.importorskip("recurrent.core")
    grad_ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["gy"])
    assert [g.type for g in grad_ops] == ["MergeDim"] and g_in == ["x_grad"]
    for t in ("MergeDim", "LengthsSplit", "LengthsToShape"):
        grad_ops, g_in = core.GradientRegistry.GetGradientForOp(_create(t, ["x"], ["y"]), ["gy"])
        assert grad_ops == [] and g_in == [None]


# ---------------------------------------------------------------- LengthsToShape / LengthsSplit
def test_lengths_to_shape():
    (y,) = run("LengthsToShape", [("l", np.array([5, 5, 5], np.int32))], ["y"])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [3, 5])
    (y,) = run("LengthsToShape", [("l", np.zeros(0, np.int32))], ["y"])
    np.testing.assert_array_equal(y, [0, 0])
    workspace.FeedBlob("d", np.array([2, 3], np.int32))
    with pytest.raises(ValueError, match=r"^op LengthsToShape #0: input 0 blob 'd': all lengths must be "
                                         r"equal, got 2 at 0 and 3 at 1$"):
        run("LengthsToShape", ["d"], ["y"])
    workspace.FeedBlob("n", np.array([-1, -1], np.int32))
    with pytest.raises(ValueError, match=r"^op LengthsToShape #0: input 0 blob 'n' has a negative length -1 "
                                         r"at 0$"):
        run("LengthsToShape", ["n"], ["y"])
    workspace.FeedBlob("m", np.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match=r"^op LengthsToShape #0: input 0 blob 'm' \(the lengths\) must be "
                                         r"1-D, got \(2, 2\) int32$"):
        run("LengthsToShape", ["m"], ["y"])
    workspace.FeedBlob("f", np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"^op LengthsToShape #0: input 0 blob 'f'"):
        run("LengthsToShape", ["f"], ["y"])


def _lengths_split_ref(lengths, n):
    out = []
    for x in lengths:
        out += [x // n + (j < x % n) for j in range(n)]
    return np.array(out, np.int32)


@pytest.mark.parametrize("lengths,n", [([9, 4, 5], 3), ([2, 1, 2], 3), ([0, 7], 1), ([], 4), ([5], 7)])
def test_lengths_split(lengths, n):
    lv = np.array(lengths, np.int32)
    (y,) = run("LengthsSplit", [("l", lv)], ["y"], n_split=n)
    assert y.dtype == np.int32 and y.shape == (len(lengths) * n,)
    np.testing.assert_array_equal(y, _lengths_split_ref(lengths, n))
    np.testing.assert_array_equal(y.reshape(-1, n).sum(axis=1) if lengths else y, lv if lengths else y)
    # input 1 overrides the argument
    (y2,) = run("LengthsSplit", ["l", ("k", np.array([n], np.int32))], ["y2"], n_split=n + 1)
    np.testing.assert_array_equal(y2, y)
    assert _lengths_split_ref([9, 4, 5], 3).tolist() == [3, 3, 3, 2, 1, 1, 2, 2, 1]  # Caffe2's doc


def test_lengths_split_bad():
    workspace.FeedBlob("l", np.array([3, 4], np.int32))
    with pytest.raises(ValueError, match=r"^op LengthsSplit #0: argument 'n_split' is missing \(or pass it "
                                         r"as input 1\)$"):
        run("LengthsSplit", ["l"], ["y"])
    with pytest.raises(ValueError, match=r"^op LengthsSplit #0: argument 'n_split' must be in \[1, 2\^31\), "
                                         r"got 0$"):
        run("LengthsSplit", ["l"], ["y"], n_split=0)
    for name, v, msg in [("k0", [0], r"input 1 blob 'k0' \(n_split\) must be > 0, got 0$"),
                         ("k2", [1, 2], r"input 1 blob 'k2' \(n_split\) must be a vector of size 1, "
                                        r"got \(2,\)")]:
        workspace.FeedBlob(name, np.array(v, np.int32))
        with pytest.raises(ValueError, match=r"^op LengthsSplit #0: " + msg):
            run("LengthsSplit", ["l", name], ["y"])
    workspace.FeedBlob("kf", np.array([2.0], np.float32))
    with pytest.raises(TypeError, match=r"^op LengthsSplit #0: input 1 blob 'kf'"):
        run("LengthsSplit", ["l", "kf"], ["y"])
    workspace.FeedBlob("neg", np.array([3, -4], np.int32))
    with pytest.raises(ValueError, match=r"^op LengthsSplit #0: input 0 blob 'neg' has a negative length -4 "
                                         r"at 1$"):
        run("LengthsSplit", ["neg"], ["y"], n_split=2)
    assert isinstance(workspace.FetchBlob("y"), bytes)  # nothing was written


# ---------------------------------------------------------------- Size
@pytest.mark.parametrize("shape,dtype", [((2, 3), np.float32), ((0, 4), np.int32), ((), np.float32),
                                         ((5,), np.int32)])
def test_size_against_numpy(shape, dtype):
    """Size: the element count as an int32 0-d tensor (Caffe2: int64), any dtype; no gradient."""
    (y,) = run("Size", [("x", np.zeros(shape, dtype))], ["y"])
    assert y.dtype == np.int32 and y.shape == () and int(y) == int(np.prod(shape, dtype=np.int64))
    from recurrent import core
    assert not core.GradientRegistry.GetGradientForOp(_op("Size", ["x"], ["y"]), [None])[0]


def test_size_of_an_empty_blob():
    workspace.CreateBlob("e")
    with pytest.raises(ValueError, match=r"op Size #0: input 0 blob 'e' holds no tensor"):
        run("Size", ["e"], ["y"])


# ---------------------------------------------------------------- NCHW2NHWC / NHWC2NCHW
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5), (1, 2, 3, 2, 2), (2, 0, 3), (0, 3, 1, 1),
                                   (1, 2, 1, 1, 1, 1, 1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_order_switch_against_numpy(rng, shape, dtype):
    """NCHW2NHWC moves dim 1 to the end, NHWC2NCHW the last dim to 1 (Caffe2's order_switch_ops, for
    N, C and 1 to 6 spatial dims; Caffe2 registered float only, int32 is moved as bits here too)."""
    x = (rng.randn(*shape) * 100).astype(dtype)
    (y,) = run("NCHW2NHWC", [("x", x)], ["y"])
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, np.moveaxis(x, 1, -1))
    (z,) = run("NHWC2NCHW", ["y"], ["z"])
    np.testing.assert_array_equal(z, x)
    (w,) = run("NHWC2NCHW", ["x"], ["w"])
    np.testing.assert_array_equal(w, np.moveaxis(x, -1, 1))


@pytest.mark.parametrize("type_", ["NCHW2NHWC", "NHWC2NCHW"])
def test_order_switch_gradient(rng, type_):
    _check_all(_create(type_, ["x"], ["y"]), [randn(rng, 2, 3, 2, 4)], [0])
    core = pytest.importorskip("recurrent.core")
    ops, g_in = core.GradientRegistry.GetGradientForOp(_create(type_, ["x"], ["y"]), ["y_grad"])
    other = "NHWC2NCHW" if type_ == "NCHW2NHWC" else "NCHW2NHWC"
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [(other, ["y_grad"], ["x_grad"])]
    assert g_in == ["x_grad"]
    assert core.GradientRegistry.GetGradientForOp(_create(type_, ["x"], ["y"]), [None]) == ([], [None])


def test_order_switch_bad(rng):
    workspace.FeedBlob("x", randn(rng, 2, 3))
    with pytest.raises(ValueError, match=r"^op NCHW2NHWC #0: input 0 blob 'x' must have 3 to 8 dims, got "
                                         r"\(2, 3\) float32$"):
        run("NCHW2NHWC", ["x"], ["y"])
    with pytest.raises(ValueError, match=r"op NHWC2NCHW #0: input 0 blob 's' must have 3 to 8 dims, got "
                                         r"\(\) float32"):
        run("NHWC2NCHW", [("s", np.float32(1))], ["y"])
    workspace.FeedBlob("x3", randn(rng, 2, 3, 4))
    with pytest.raises(ValueError, match=r"op NHWC2NCHW #0: input 0 and output 0 are the same blob 'x3'"):
        run("NHWC2NCHW", ["x3"], ["x3"])  # not in place, as Caffe2's schema
    workspace.CreateBlob("e")
    with pytest.raises(ValueError, match=r"op NCHW2NHWC #0: input 0 blob 'e' holds no tensor"):
        run("NCHW2NHWC", ["e"], ["y"])
    assert run("NCHW2NHWC", ["x3"], ["y"])[0].shape == (2, 4, 3)  # usable


# ---------------------------------------------------------------- DepthConcat / DepthSplit (legacy names)
def test_depth_concat_and_split_are_concat_and_split(rng):
    """Caffe2's backward-compatible names: the same arguments, outputs and checks as Concat / Split."""
    a = randn(rng, 2, 3, 4)
    for args, b in (({}, randn(rng, 2, 1, 4)), (dict(axis=-1), randn(rng, 2, 3, 2)),
                    (dict(axis=0, add_axis=1), a)):
        want = run("Concat", [("a", a), ("b", b)], ["y", "info"], **args)
        got = run("DepthConcat", ["a", "b"], ["y2", "info2"], **args)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype
            np.testing.assert_array_equal(w, g)
    (y,) = run("DepthConcat", [("n", randn(rng, 1, 2, 2, 3)), ("m", randn(rng, 1, 2, 2, 1))], ["y"],
               order="NHWC")
    assert y.shape == (1, 2, 2, 4)
    x = randn(rng, 5, 6)
    for args, n in ((dict(axis=0, split=[2, 3]), 2), (dict(), 3), (dict(axis=1, add_axis=0), 2)):
        outs = ["o%d" % k for k in range(n)]
        want = run("Split", [("x", x)], outs, **args)
        got = run("DepthSplit", ["x"], [o + "d" for o in outs], **args)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g)
    sizes = np.array([1, 4], np.int32)
    want = run("Split", ["x", ("s", sizes)], ["p", "q"], axis=0)
    got = run("DepthSplit", ["x", "s"], ["p2", "q2"], axis=0)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)
    (y, info) = run("DepthConcat", [("i", np.arange(3, dtype=np.int32)), ("j", np.arange(2, dtype=np.int32))],
                    ["y", "info"], axis=0)
    np.testing.assert_array_equal(y, [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(info, [3, 2])


def test_depth_concat_and_split_bad(rng):
    workspace.FeedBlob("a", randn(rng, 2, 3))
    workspace.FeedBlob("c", randn(rng, 3, 3))
    for t in ("Concat", "DepthConcat"):
        with pytest.raises(ValueError, match=r"^op %s #0: " % t) as info:
            run(t, ["a", "c"], ["y", "i"], axis=1)
        assert "'c'" in str(info.value) and "(3, 3)" in str(info.value)
    msgs = []
    for t in ("Split", "DepthSplit"):
        with pytest.raises(ValueError, match=r"^op %s #0: " % t) as info:
            run(t, ["a"], ["p", "q"], axis=1)
        msgs.append(str(info.value).split(": ", 1)[1])
    assert msgs[0] == msgs[1]  # the same check and message


@pytest.mark.parametrize("axis,add_axis", [(0, 0), (1, 0), (1, 1)])
def test_depth_concat_gradient(rng, axis, add_axis):
    """Caffe2 registered Concat's maker for DepthConcat: its gradient is Split(dY, split_info)."""
    xs = [randn(rng, 2, 3) for _ in range(2)] if add_axis else [randn(rng, 2, 3), randn(rng, 2, 3)]
    op = _create("DepthConcat", ["x0", "x1"], ["y", "info"], axis=axis, add_axis=add_axis)
    _check_all(op, xs, range(2))
    core = pytest.importorskip("recurrent.core")
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["y_grad", None])
    assert [o.type for o in ops] == ["Split"] and list(ops[0].input) == ["y_grad", "info"]
    assert g_in == ["x0_grad", "x1_grad"]
    with pytest.raises(ValueError, match=r"gradient of DepthConcat op \(inputs \['x0', 'x1'\]\): the op must "
                                         r"have its second output"):
        core.GradientRegistry.GetGradientForOp(_create("DepthConcat", ["x0", "x1"], ["y"]), ["y_grad"])


@pytest.mark.parametrize("args", [dict(axis=1, split=[1, 3, 2]), dict(axis=0)])
def test_depth_split_gradient(rng, args):
    """Caffe2 registered Split's maker for DepthSplit: its gradient is Concat of the output gradients."""
    x = randn(rng, 3, 6)
    op = _create("DepthSplit", ["x"], ["a", "b", "c"], **args)
    _check_all(op, [x], [0], outputs_with_grads=(0, 1, 2))
    core = pytest.importorskip("recurrent.core")
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["ga", "gb", "gc"])
    assert [o.type for o in ops] == ["Concat"] and list(ops[0].input) == ["ga", "gb", "gc"]
    assert list(ops[0].output) == ["x_grad", "_x_grad_dims"] and g_in == ["x_grad"]


# ---------------------------------------------------------------- IsEmpty / HasElements
@pytest.mark.parametrize("shape,dtype", [((2, 3), np.float32), ((0, 4), np.int32), ((), np.float32),
                                         ((0,), np.float32), ((3, 0, 2), np.int32)])
def test_is_empty_has_elements_against_numpy(shape, dtype):
    """An int32 0-d tensor (Caffe2: a bool scalar): IsEmpty is 1 when X has no element, HasElements 1 when
    any of its inputs has one (Caffe2's newer schema takes several inputs); any dtype; no gradient."""
    x = np.zeros(shape, dtype)
    (e,) = run("IsEmpty", [("x", x)], ["e"])
    (h,) = run("HasElements", ["x"], ["h"])
    assert e.dtype == h.dtype == np.int32 and e.shape == h.shape == ()
    assert int(e) == (x.size == 0) and int(h) == (x.size > 0)
    from recurrent import core
    for t in ("IsEmpty", "HasElements"):
        assert core.GradientRegistry.GetGradientForOp(_op(t, ["x"], ["y"]), ["y_grad"]) == ([], [None])


def test_has_elements_of_several_inputs():
    workspace.FeedBlob("e0", np.zeros((0, 2), np.float32))
    workspace.FeedBlob("e1", np.zeros(0, np.int32))
    workspace.FeedBlob("one", np.float32(5))
    assert int(run("HasElements", ["e0", "e1"], ["h"])[0]) == 0
    assert int(run("HasElements", ["e0", "e1", "one"], ["h"])[0]) == 1
    assert int(run("HasElements", ["one", "e0"], ["h"])[0]) == 1
    with pytest.raises(ValueError, match=r"op IsEmpty #0: expects 1 inputs, got 2"):
        run("IsEmpty", ["e0", "e1"], ["y"])  # IsEmpty takes one, as Caffe2's schema


def test_is_empty_has_elements_bad():
    workspace.CreateBlob("e")
    workspace.FeedBlob("x", np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"^op IsEmpty #0: input 0 blob 'e' holds no tensor \(was it fed or "
                                         r"computed\?\)$"):
        run("IsEmpty", ["e"], ["y"])
    with pytest.raises(ValueError, match=r"^op HasElements #0: input 1 blob 'e' holds no tensor"):
        run("HasElements", ["x", "e"], ["y"])
    with pytest.raises(ValueError, match=r"op IsEmpty #0: input 0 and output 0 are the same blob 'x'"):
        run("IsEmpty", ["x"], ["x"])
    assert int(run("IsEmpty", ["x"], ["y"])[0]) == 0  # usable
