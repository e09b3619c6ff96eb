"""ScaleBlobs (csrc/ops/math.c) and SparseLengthsFill (csrc/ops/fill.c), the two ops Caffe2's
scale_op_test.py and filler_ops_test.py need: NumPy references (ScaleBlobs against Scale, blob by
blob, as Caffe2's test does), in-place pairs, the arguments and blob layouts each refuses (the
workspace usable after every error, no output written), SparseLengthsFill's invariants (lengths
summing to the values' count, values in range, seeds), neither having a gradient maker, and their
static shapes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recurrent import core, workspace

from op_helpers import I32_MAX, feed, run, usable


# ---------------------------------------------------------------- ScaleBlobs
SHAPES = [(), (0,), (1,), (7,), (3, 4), (386, 1, 1), (1, 256, 1), (2, 0, 3), (2, 3, 4, 5)]


@pytest.mark.parametrize("scale", [0.0, 1.0, 2.5, -3.0, 1e-3])
def test_scale_blobs_against_numpy(scale):
    rng = np.random.RandomState(0)
    xs = [np.asarray(rng.randn(*s), np.float32) for s in SHAPES]
    feed(**{"x%d" % i: x for i, x in enumerate(xs)})
    names = ["x%d" % i for i in range(len(xs))]
    run("ScaleBlobs", names, ["y%d" % i for i in range(len(xs))], scale=scale)
    for i, x in enumerate(xs):
        y = workspace.FetchBlob("y%d" % i)
        assert y.dtype == np.float32 and y.shape == x.shape
        np.testing.assert_array_equal(y, np.float32(scale) * x)
        np.testing.assert_array_equal(workspace.FetchBlob("x%d" % i), x)  # inputs untouched


def test_scale_blobs_default_scale_is_one_and_matches_scale():
    rng = np.random.RandomState(1)
    feed(a=rng.randn(4, 3).astype(np.float32), b=rng.randn(5).astype(np.float32))
    run("ScaleBlobs", ["a", "b"], ["ya", "yb"])
    np.testing.assert_array_equal(workspace.FetchBlob("ya"), workspace.FetchBlob("a"))
    np.testing.assert_array_equal(workspace.FetchBlob("yb"), workspace.FetchBlob("b"))
    # Caffe2's scale_op_test: each output equals Scale on its input with the same scale
    run("ScaleBlobs", ["a", "b"], ["ya", "yb"], scale=0.37)
    for x, y in (("a", "ya"), ("b", "yb")):
        run("Scale", [x], ["ref"], scale=0.37)
        np.testing.assert_array_equal(workspace.FetchBlob(y), workspace.FetchBlob("ref"))


@settings(max_examples=30, deadline=None)
@given(shapes=st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=3), min_size=1, max_size=6),
       scale=st.floats(-10.0, 10.0, width=32))
def test_scale_blobs_property(shapes, scale):
    rng = np.random.RandomState(len(shapes))
    xs = [np.asarray(rng.randn(*s), np.float32) for s in shapes]
    feed(**{"p%d" % i: x for i, x in enumerate(xs)})
    run("ScaleBlobs", ["p%d" % i for i in range(len(xs))], ["q%d" % i for i in range(len(xs))], scale=scale)
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(workspace.FetchBlob("q%d" % i), np.float32(scale) * x)


def test_scale_blobs_in_place_pairs():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.linspace(-1, 1, 4).astype(np.float32)
    c = np.ones((2, 2), np.float32)
    feed(a=a, b=b, c=c)
    run("ScaleBlobs", ["a", "b", "c"], ["a", "yb", "c"], scale=-2.0)  # 0 and 2 in place, 1 not
    np.testing.assert_array_equal(workspace.FetchBlob("a"), -2 * a)
    np.testing.assert_array_equal(workspace.FetchBlob("yb"), -2 * b)
    np.testing.assert_array_equal(workspace.FetchBlob("b"), b)
    np.testing.assert_array_equal(workspace.FetchBlob("c"), -2 * c)
    # the same input twice into two outputs
    run("ScaleBlobs", ["b", "b"], ["u", "v"], scale=3.0)
    np.testing.assert_array_equal(workspace.FetchBlob("u"), 3 * b)
    np.testing.assert_array_equal(workspace.FetchBlob("v"), 3 * b)


def test_scale_blobs_resizes_outputs_each_run():
    feed(x=np.ones((2, 3), np.float32), y=np.zeros((7, 7), np.int32))
    run("ScaleBlobs", ["x"], ["y"], scale=4.0)
    y = workspace.FetchBlob("y")
    assert y.dtype == np.float32 and y.shape == (2, 3) and (y == 4).all()
    feed(x=np.ones(0, np.float32))
    run("ScaleBlobs", ["x"], ["y"], scale=4.0)
    assert workspace.FetchBlob("y").shape == (0,)


def test_scale_blobs_in_a_net_run_twice():
    feed(a=np.ones(3, np.float32), b=np.full((2, 2), 2.0, np.float32))
    net = core.Net("sb")
    net.ScaleBlobs(["a", "b"], ["a", "b"], scale=0.5)
    workspace.CreateNet(net)
    workspace.RunNet(net.Name())
    workspace.RunNet(net.Name())
    np.testing.assert_array_equal(workspace.FetchBlob("a"), np.full(3, 0.25, np.float32))
    np.testing.assert_array_equal(workspace.FetchBlob("b"), np.full((2, 2), 0.5, np.float32))


def test_scale_blobs_refuses_a_non_float_input_before_writing():
    feed(a=np.ones(3, np.float32), b=np.ones(2, np.int32), ya=np.full(3, 9.0, np.float32))
    with pytest.raises(TypeError, match=r"op ScaleBlobs #0: input 1 blob 'b' must be float32"):
        run("ScaleBlobs", ["a", "b"], ["ya", "yb"], scale=2.0)
    np.testing.assert_array_equal(workspace.FetchBlob("ya"), np.full(3, 9.0, np.float32))  # not written
    with pytest.raises(TypeError, match=r"op ScaleBlobs #0: input 0 blob 'a' must be float32"):
        feed(a=np.ones(3, np.int32))
        run("ScaleBlobs", ["a"], ["a"], scale=2.0)
    np.testing.assert_array_equal(workspace.FetchBlob("a"), np.ones(3, np.int32))
    usable()


@pytest.mark.parametrize("ins,outs,match", [
    (["a", "b"], ["y"], r"takes one output per input \(output i = scale \* input i\): got 2 inputs and 1 outputs"),
    (["a"], ["y", "z"], r"takes one output per input .*: got 1 inputs and 2 outputs"),
    (["a", "b"], ["b", "a"], r"input 0 and output 1 are the same blob 'a', which this op does not allow"),
    (["a", "b"], ["y", "a"], r"input 0 and output 1 are the same blob 'a'"),
    (["a", "a"], ["a", "y"], r"input 1 and output 0 are the same blob 'a'"),
    (["a", "b"], ["y", "y"], r"outputs 0 and 1 are the same blob 'y'"),
])
def test_scale_blobs_refuses_layouts(ins, outs, match):
    a = np.arange(3, dtype=np.float32)
    feed(a=a, b=np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"op ScaleBlobs #0: " + match):
        run("ScaleBlobs", ins, outs, scale=2.0)
    np.testing.assert_array_equal(workspace.FetchBlob("a"), a)
    usable()


def test_scale_blobs_refuses_an_unfed_input():
    feed(a=np.ones(3, np.float32))
    workspace.CreateBlob("empty")
    with pytest.raises((ValueError, TypeError), match=r"op ScaleBlobs #0: input 1 blob 'empty'"):
        run("ScaleBlobs", ["a", "empty"], ["y", "z"])
    usable()


def test_scale_blobs_has_no_gradient_maker():
    """As Caffe2's scale_blobs_op.cc (no gradient registered): a gradient that must flow through the op
    is an error naming it; a gradient that does not reach it is no error."""
    assert not core.GradientRegistry.HasGradient("ScaleBlobs")
    net = core.Net("g")
    net.ScaleBlobs(["x", "w"], ["xs", "ws"], scale=2.0)
    net.SumElements(["xs"], "loss")
    with pytest.raises(Exception, match=r"ScaleBlobs"):
        net.AddGradientOperators(["loss"])
    feed(x=np.ones(3, np.float32), w=np.ones(2, np.float32))
    side = core.Net("side")
    side.ScaleBlobs(["w"], ["ws"], scale=2.0)
    side.SumElements(["x"], "loss")
    side.AddGradientOperators(["loss"])
    workspace.RunNetOnce(side)
    assert workspace.FetchBlob("x_grad").shape == (3,)


def test_scale_blobs_static_shapes():
    feed(a=np.ones((4, 3), np.float32), b=np.ones(0, np.float32), c=np.float32(2))
    net = core.Net("shapes")
    net.ScaleBlobs(["a", "b", "c"], ["ya", "yb", "c"], scale=3.0)
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["ya"] == [4, 3] and shapes["yb"] == [0] and shapes["c"] == []
    assert all(types[k] == core.DataType.FLOAT for k in ("ya", "yb", "c"))
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("c") == 6
    workspace.ResetWorkspace()
    feed(a=np.ones((4, 3), np.float32), b=np.ones(2, np.int32))
    bad = core.Net("bad")
    bad.ScaleBlobs(["a", "b"], ["ya", "yb"])
    with pytest.warns(RuntimeWarning, match="InferShapesAndTypes.*ScaleBlobs"):
        assert workspace.InferShapesAndTypes([bad]) == ({}, {})
    with pytest.raises(TypeError):
        workspace.RunNetOnce(bad)


# ---------------------------------------------------------------- SparseLengthsFill
def slf(batch_size, average_len, max_value, **kw):
    run("SparseLengthsFill", [], ["values", "lengths"], batch_size=batch_size, average_len=average_len,
        max_value=max_value, **kw)
    return workspace.FetchBlob("values"), workspace.FetchBlob("lengths")


@pytest.mark.parametrize("b,l,m", [(20, 50, 10), (1, 7, 3), (5, 0, 4), (0, 9, 2), (0, 0, 1), (300, 3, 1000),
                                   (4, 5, 1), (3, 2, 2 ** 31)])
def test_sparse_lengths_fill_invariants(b, l, m):
    values, lengths = slf(b, l, m)
    assert values.dtype == np.int32 and lengths.dtype == np.int32
    assert lengths.shape == (b,) and values.shape == (b * l,)
    assert lengths.sum() == values.size and (lengths >= 0).all()
    if values.size:
        assert values.min() >= 0 and values.max() <= m - 1
    if m == 1:
        assert (values == 0).all()


def test_sparse_lengths_fill_caffe2_test():
    """filler_ops_test.py's test_sparse_lengths_fill, as it asks."""
    run("SparseLengthsFill", [], ["values", "lengths"], average_len=50, max_value=10, batch_size=20)
    values, lengths = workspace.FetchBlob("values"), workspace.FetchBlob("lengths")
    assert max(values) < 10 and min(values) >= 0
    assert sum(lengths) == len(values) and len(lengths) == 20


def test_sparse_lengths_fill_distribution():
    """Values uniform on [0, M) and each length Binomial(B L, 1 / B): loose bounds at a fixed seed."""
    b, l, m = 50, 400, 8
    values, lengths = slf(b, l, m, seed=123)
    counts = np.bincount(values, minlength=m)
    expected = values.size / m
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 30  # 7 degrees of freedom: p < 1e-4 beyond this
    assert abs(lengths.mean() - l) < 1e-9  # the sum is exact
    sd = np.sqrt(b * l * (1 / b) * (1 - 1 / b))
    assert 0.5 * sd < lengths.std() < 1.5 * sd
    assert len(np.unique(lengths)) > 5  # not all equal


def test_sparse_lengths_fill_seed_and_stream():
    v1, l1 = slf(10, 6, 100, seed=7)
    v2, l2 = slf(10, 6, 100, seed=7)
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(l1, l2)
    v3, _ = slf(10, 6, 100, seed=8)
    assert not np.array_equal(v1, v3)
    # one op run twice continues its stream; two ops without a seed draw different streams
    net = core.Net("slf")
    net.SparseLengthsFill([], ["v", "l"], batch_size=10, average_len=6, max_value=100, seed=7)
    workspace.CreateNet(net)
    workspace.RunNet(net.Name())
    first = workspace.FetchBlob("v").copy()
    np.testing.assert_array_equal(first, v1)
    workspace.RunNet(net.Name())
    assert not np.array_equal(workspace.FetchBlob("v"), first)
    a, _ = slf(10, 6, 1000)
    b, _ = slf(10, 6, 1000)
    assert not np.array_equal(a, b)


def test_sparse_lengths_fill_overwrites_outputs_of_another_shape():
    feed(values=np.ones((3, 3), np.float32), lengths=np.ones(100, np.int32))
    values, lengths = slf(4, 2, 5)
    assert values.shape == (8,) and lengths.shape == (4,) and lengths.sum() == 8


@pytest.mark.parametrize("args,match", [
    (dict(average_len=5, max_value=10), r"argument 'batch_size' is required"),
    (dict(batch_size=5, max_value=10), r"argument 'average_len' is required"),
    (dict(batch_size=5, average_len=10), r"argument 'max_value' is required"),
    (dict(batch_size=-1, average_len=5, max_value=10), r"argument 'batch_size' must be in \[0, 2147483647\], got -1"),
    (dict(batch_size=2 ** 31, average_len=0, max_value=10), r"argument 'batch_size' must be in \[0, 2147483647\]"),
    (dict(batch_size=5, average_len=-2, max_value=10), r"argument 'average_len' must be >= 0 with batch_size \* "
                                                       r"average_len at most 2147483647 .*average_len -2"),
    (dict(batch_size=2 ** 16, average_len=2 ** 15, max_value=10), r"argument 'average_len' must be >= 0 with batch_size "
                                                                     r"\* average_len at most 2147483647 .*got "
                                                                     r"batch_size 65536, average_len 32768"),
    (dict(batch_size=5, average_len=2, max_value=0), r"argument 'max_value' must be in \[1, 2\^31\] .*got 0"),
    (dict(batch_size=5, average_len=2, max_value=2 ** 31 + 1), r"argument 'max_value' must be in \[1, 2\^31\]"),
])
def test_sparse_lengths_fill_refuses_arguments(args, match):
    feed(values=np.full(2, 5, np.int32))
    with pytest.raises(ValueError, match=r"op SparseLengthsFill #0: " + match):
        run("SparseLengthsFill", [], ["values", "lengths"], **args)
    np.testing.assert_array_equal(workspace.FetchBlob("values"), np.full(2, 5, np.int32))
    usable()


def test_sparse_lengths_fill_arity():
    feed(x=np.ones(2, np.float32))
    kw = dict(batch_size=2, average_len=2, max_value=3)
    with pytest.raises(ValueError, match=r"op SparseLengthsFill #0: expects 0 inputs, got 1"):
        run("SparseLengthsFill", ["x"], ["v", "l"], **kw)
    with pytest.raises(ValueError, match=r"op SparseLengthsFill #0: expects 2 outputs, got 1"):
        run("SparseLengthsFill", [], ["v"], **kw)
    with pytest.raises(ValueError, match=r"outputs 0 and 1 are the same blob 'v'"):
        run("SparseLengthsFill", [], ["v", "v"], **kw)
    usable()


def test_sparse_lengths_fill_no_gradient_and_static_shapes():
    assert core.GradientRegistry.HasGradient("SparseLengthsFill")  # registered with none
    net = core.Net("shapes")
    net.SparseLengthsFill([], ["v", "l"], batch_size=6, average_len=4, max_value=9)
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["v"] == [24] and shapes["l"] == [6]
    assert types["v"] == core.DataType.INT32 and types["l"] == core.DataType.INT32
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("v").shape == (24,)
    bad = core.Net("bad")
    bad.SparseLengthsFill([], ["v", "l"], batch_size=6, max_value=9)
    with pytest.warns(RuntimeWarning, match="InferShapesAndTypes.*SparseLengthsFill"):
        assert workspace.InferShapesAndTypes([bad]) == ({}, {})
    # the gradient stops at the fill (its outputs are int32 indices)
    feed(data=np.ones((9, 2), np.float32))
    g = core.Net("g")
    g.SparseLengthsFill([], ["idx", "len"], batch_size=3, average_len=2, max_value=9, seed=1)
    g.SparseLengthsSum(["data", "idx", "len"], "s")
    g.SumElements(["s"], "loss")
    g.AddGradientOperators(["loss"])
    workspace.RunNetOnce(g)
    np.testing.assert_allclose(workspace.FetchBlob("loss"), 12.0)
