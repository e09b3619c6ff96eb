"""Shape, Slice and SliceGradient (csrc/ops/shape.c) and Slice's gradient maker
(recurrent/_grad_shape.py): NumPy references with Caffe2's index rules, both
forms of starts/ends (arguments, int32 inputs), empty and full slices, bad
input with exact messages (at run and at net creation), gradients by finite
differences, the backward pass through core.Net, and the soft-coverage
pattern ConstantFill(Slice(Shape(x)), input_as_shape=1)."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import close, f32, feed, op, run  # the same helpers


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def ops_of(ops):
    return [(p.type, list(p.input), list(p.output), sorted((a.name, a.value()) for a in p.arg)) for p in ops]


def i32(rng, *shape):
    return rng.randint(-1000, 1000, size=shape).astype(np.int32)


def data(rng, shape, dtype):
    return f32(rng, *shape) if dtype == np.float32 else i32(rng, *shape)


# ---------------------------------------------------------------- references (Caffe2's rules)
def c2_range(size, start, end):
    """[start, end) of one dim as Caffe2's Slice: a negative v is size + 1 + v, values above the
    size are clamped, a dim of size 0 stays empty."""
    if size == 0:
        return 0, 0
    b = size + 1 + start if start < 0 else start
    e = size + 1 + end if end < 0 else end
    b, e = min(b, size), min(e, size)
    assert 0 <= b <= e, (size, start, end)
    return b, e


def slice_ref(x, starts, ends):
    return x[tuple(slice(*c2_range(x.shape[d], s, e)) for d, (s, e) in enumerate(zip(starts, ends)))]


def random_bounds(rng, shape, n=None):
    """Valid starts/ends for the first n dims (all by default), negatives included."""
    starts, ends = [], []
    for size in shape[:len(shape) if n is None else n]:
        b = rng.randint(0, size + 1)
        e = rng.randint(b, size + 1)
        # write each bound in one of its spellings: v, or v - size - 1 (negative)
        starts.append(b - size - 1 if rng.rand() < 0.4 else b)
        ends.append(e - size - 1 if rng.rand() < 0.4 else e)
    return starts, ends


def run_slice(x, starts, ends, tensors):
    """Slice of x by the argument form or the input form; the output array."""
    feed(x=x)
    if tensors:
        feed(s=np.array(starts, np.int32), e=np.array(ends, np.int32))
        return run("Slice", ["x", "s", "e"], ["y"])
    return run("Slice", ["x"], ["y"], starts=list(starts), ends=list(ends))


# ---------------------------------------------------------------- Shape
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4, 5), (1, 1, 1, 1, 1, 1, 1, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_shape(rng, shape, dtype):
    feed(x=data(rng, shape, dtype))
    y = run("Shape", ["x"], ["y"])
    assert y.dtype == np.int32 and y.ndim == 1
    np.testing.assert_array_equal(y, np.array(shape, np.int32))


@pytest.mark.parametrize("axes,want", [([0], [2]), ([2, 0], [4, 2]), ([-1], [5]), ([-4, 3, 1], [2, 5, 3]),
                                       ([1, 1, -3], [3, 3, 3]), ([], [2, 3, 4, 5])])
def test_shape_axes(rng, axes, want):
    feed(x=f32(rng, 2, 3, 4, 5))
    y = run("Shape", ["x"], ["y"], axes=axes)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, np.array(want, np.int32))


def test_shape_many_repeated_axes(rng):
    # more entries than any tensor has dims: each one names a dim
    feed(x=f32(rng, 2, 3))
    axes = [0, 1, -1, -2] * 5
    np.testing.assert_array_equal(run("Shape", ["x"], ["y"], axes=axes), np.array([2, 3, 3, 2] * 5, np.int32))


def test_shape_rerun_follows_input(rng):
    net = core.Net("shape_rerun")
    net.Shape("x", "y")
    for i, shape in enumerate([(2, 3), (7,), (), (1, 2, 3, 4)]):
        feed(x=f32(rng, *shape))
        if i == 0:
            workspace.CreateNet(net)
        workspace.RunNet("shape_rerun")
        np.testing.assert_array_equal(workspace.FetchBlob("y"), np.array(shape, np.int32))


def test_shape_has_no_gradient():
    assert G(op("Shape", ["x"], ["y"]), ["y_grad"]) == ([], [None])
    # in a backward pass the shape branch contributes nothing, the data branch its gradient
    net = core.Net("shape_bw")
    net.ConstantFill(net.Shape("x", "shp"), "z", value=1.0, input_as_shape=1)
    net.SumElements(net.Mul(["x", "z"], "xz"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    assert [o.type for o in net.Proto().op].count("Shape") == 1
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    feed(x=x)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(gmap["x"])), np.ones((2, 3), np.float32))


@pytest.mark.parametrize("axes,bad,k", [([2], 2, 0), ([0, -3], -3, 1), ([5], 5, 0)])
def test_shape_axes_out_of_range(rng, axes, bad, k):
    feed(x=f32(rng, 3, 4))
    msg = (r"op Shape #0: argument 'axes' entry %d \(%d\) is out of range for input 0 blob 'x' of shape "
           r"\(3, 4\) float32 \(must be in \[-2, 2\)\)" % (k, bad))
    with pytest.raises(ValueError, match=msg):
        workspace.RunOperatorOnce(op("Shape", ["x"], ["y"], axes=axes))
    net = core.Net("shape_bad")
    net.Shape("x", "y", axes=axes)
    with pytest.raises(ValueError, match="net 'shape_bad[^']*': " + msg):
        workspace.CreateNet(net)
    np.testing.assert_array_equal(run("Shape", ["x"], ["y"], axes=[-1]), [4])  # still usable


def test_shape_unfed_input():
    workspace.RunOperatorOnce(op("ConstantFill", [], ["z"], shape=[0], value=0.0))
    with pytest.raises(KeyError, match=r"op Shape #0: input 0 blob 'nothing' does not exist"):
        workspace.RunOperatorOnce(op("Shape", ["nothing"], ["y"]))


# ---------------------------------------------------------------- Slice: forward
SHAPES = [(7,), (5, 6), (3, 4, 5), (2, 3, 4, 5)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("tensors", [False, True])
def test_slice_random(rng, shape, dtype, tensors):
    x = data(rng, shape, dtype)
    for _ in range(8):
        starts, ends = random_bounds(rng, shape)
        y = run_slice(x, starts, ends, tensors)
        want = slice_ref(x, starts, ends)
        assert y.dtype == dtype and y.shape == want.shape, (starts, ends, y.shape, want.shape)
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("tensors", [False, True])
@pytest.mark.parametrize("starts,ends,idx", [
    # one dim at a time, outer to inner: a wrong stride of any dim shows
    ([1, 0, 0, 0], [2, -1, -1, -1], np.s_[1:2]),
    ([0, 1, 0, 0], [-1, 3, -1, -1], np.s_[:, 1:3]),
    ([0, 0, 2, 0], [-1, -1, 4, -1], np.s_[:, :, 2:4]),
    ([0, 0, 0, 1], [-1, -1, -1, 4], np.s_[:, :, :, 1:4]),
    # inner dims together, outer whole
    ([0, 1, 1, 2], [-1, -2, 3, 5], np.s_[:, 1:2, 1:3, 2:5]),
    ([1, 2, 1, 1], [2, 3, 2, 2], np.s_[1:2, 2:3, 1:2, 1:2]),
    # the -1 end is the end of the dim; a negative start v is size + 1 + v
    ([-2, -3, -4, -5], [-1, -1, -1, -1], np.s_[1:, 1:, 1:, 1:]),
    ([0, 0, 0, 0], [-2, -2, -2, -2], np.s_[:-1, :-1, :-1, :-1]),
    # full and empty
    ([0, 0, 0, 0], [-1, -1, -1, -1], np.s_[:]),
    ([0, 0, 0, 0], [2, 3, 4, 5], np.s_[:]),
    ([1, 0, 0, 0], [1, -1, -1, -1], np.s_[1:1]),
    ([0, 0, 0, 5], [-1, -1, -1, -1], np.s_[:, :, :, 5:]),
    ([0, 0, 0, -1], [-1, -1, -1, -1], np.s_[:, :, :, 5:]),
    ([0, 2, 0, 0], [-1, 2, -1, -1], np.s_[:, 2:2]),
    # values above the size are clamped to it
    ([0, 1, 0, 0], [100, 100, -1, -1], np.s_[:, 1:]),
    ([7, 0, 0, 0], [9, -1, -1, -1], np.s_[2:2]),
])
def test_slice_cases(starts, ends, idx, tensors):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    y = run_slice(x, starts, ends, tensors)
    np.testing.assert_array_equal(y, x[idx])
    assert y.shape == x[idx].shape


@pytest.mark.parametrize("tensors", [False, True])
def test_slice_fewer_entries_than_dims_keeps_the_rest(rng, tensors):
    # Caffe2: dims after the given entries are taken whole
    x = i32(rng, 3, 4, 5)
    np.testing.assert_array_equal(run_slice(x, [1], [-1], tensors), x[1:])
    np.testing.assert_array_equal(run_slice(x, [0, 2], [2, 3], tensors), x[:2, 2:3])
    np.testing.assert_array_equal(run_slice(x, [], [], tensors), x)


@pytest.mark.parametrize("tensors", [False, True])
def test_slice_zero_size_dims(tensors):
    x = np.zeros((3, 0, 4), np.float32)
    # a dim of size 0 stays 0 whatever its values (as Caffe2)
    for starts, ends, want in [([1, 0, 1], [2, 0, 3], (1, 0, 2)), ([0, 5, 0], [-1, -7, -1], (3, 0, 4)),
                               ([0, -1, 2], [-1, 3, -1], (3, 0, 2))]:
        y = run_slice(x, starts, ends, tensors)
        assert y.shape == slice_ref(x, starts, ends).shape == want and y.dtype == np.float32


def test_slice_scalar(rng):
    feed(x=np.array(2.5, np.float32))
    y = run("Slice", ["x"], ["y"], starts=[], ends=[])
    assert y.shape == () and y == 2.5


def test_slice_rerun_other_shapes_and_bounds(rng):
    # one net, inputs refed: the output is resized every run
    net = core.Net("slice_rerun")
    net.Slice(["x", "s", "e"], "y")
    for i, shape in enumerate([(4, 5), (2, 7), (6, 1), (3, 3)]):
        x = f32(rng, *shape)
        starts, ends = random_bounds(rng, shape)
        feed(x=x, s=np.array(starts, np.int32), e=np.array(ends, np.int32))
        if i == 0:
            workspace.CreateNet(net)
        workspace.RunNet("slice_rerun")
        np.testing.assert_array_equal(workspace.FetchBlob("y"), slice_ref(x, starts, ends))


def test_slice_output_over_a_stale_blob(rng):
    x = f32(rng, 4, 6)
    feed(x=x, y=np.full((2, 3), 9.0, np.float32))  # same element count as the slice: the buffer is reused
    np.testing.assert_array_equal(run("Slice", ["x"], ["y"], starts=[1, 2], ends=[3, 5]), x[1:3, 2:5])


# ---------------------------------------------------------------- SliceGradient and the maker
@pytest.mark.parametrize("shape", SHAPES)
def test_slice_gradient_fd(rng, shape):
    x = f32(rng, *shape)
    for _ in range(2):
        starts, ends = random_bounds(rng, shape)
        check_grads(op("Slice", ["x"], ["y"], starts=starts, ends=ends), [x], stepsize=1e-2, threshold=1e-2)
        check_grads(op("Slice", ["x", "s", "e"], ["y"]),
                    [x, np.array(starts, np.int32), np.array(ends, np.int32)], indices=[0], stepsize=1e-2,
                    threshold=1e-2)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("tensors", [False, True])
def test_slice_gradient_op(rng, shape, tensors):
    for dtype in (np.float32, np.int32):
        x = data(rng, shape, dtype)  # data is read for its shape only
        starts, ends = random_bounds(rng, shape)
        want_y = slice_ref(x, starts, ends)
        dy = f32(rng, *want_y.shape)
        # a stale dX of the right size but nonzero everywhere: the op must zero what is outside the slice
        feed(x=x, dy=dy, dx=np.full(shape, 7.0, np.float32))
        if tensors:
            feed(s=np.array(starts, np.int32), e=np.array(ends, np.int32))
            dx = run("SliceGradient", ["x", "s", "e", "dy"], ["dx"])
        else:
            dx = run("SliceGradient", ["x", "dy"], ["dx"], starts=starts, ends=ends)
        want = np.zeros(shape, np.float32)
        want[tuple(slice(*c2_range(shape[d], s, e)) for d, (s, e) in enumerate(zip(starts, ends)))] = dy
        assert dx.dtype == np.float32
        np.testing.assert_array_equal(dx, want)


def test_slice_gradient_reused_output_is_zeroed(rng):
    # the same op run twice with different slices: the first run's values must not survive
    net = core.Net("slice_grad_twice")
    net.SliceGradient(["x", "s", "e", "dy"], "dx")
    x = f32(rng, 3, 4)
    for i, (starts, ends) in enumerate([([0, 0], [2, 3]), ([1, 2], [-1, -1])]):
        want_y = slice_ref(x, starts, ends)
        dy = np.full(want_y.shape, i + 1.0, np.float32)
        feed(x=x, dy=dy, s=np.array(starts, np.int32), e=np.array(ends, np.int32))
        if i == 0:
            workspace.CreateNet(net)
        workspace.RunNet("slice_grad_twice")
        want = np.zeros((3, 4), np.float32)
        want[tuple(slice(*c2_range(x.shape[d], s, e)) for d, (s, e) in enumerate(zip(starts, ends)))] = dy
        np.testing.assert_array_equal(workspace.FetchBlob("dx"), want)


def test_slice_gradient_maker():
    ops, g = G(op("Slice", ["x"], ["y"], starts=[0, 1], ends=[-1, 3]), ["dy"])
    assert g == ["x_grad"]
    assert ops_of(ops) == [("SliceGradient", ["x", "dy"], ["x_grad"],
                            [("ends", [-1, 3]), ("starts", [0, 1])])]
    ops, g = G(op("Slice", ["x", "s", "e"], ["y"]), ["dy"])
    assert g == ["x_grad", None, None]
    assert ops_of(ops) == [("SliceGradient", ["x", "s", "e", "dy"], ["x_grad"], [])]
    assert G(op("Slice", ["x", "s", "e"], ["y"]), [None]) == ([], [None, None, None])
    assert G(op("Slice", ["x"], ["y"], starts=[0], ends=[1]), [None]) == ([], [None])


@pytest.mark.parametrize("tensors", [False, True])
def test_slice_add_gradient_operators(rng, tensors):
    net = core.Net("slice_bw")
    starts, ends = [1, 0, -3], [-1, 2, -2]
    if tensors:
        y = net.Slice(["x", "s", "e"], "y")
    else:
        y = net.Slice("x", "y", starts=starts, ends=ends)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    assert net.Proto().op[-1].type == "SliceGradient"
    assert set(map(str, gmap)) >= {"x"} and "s" not in map(str, gmap) and "e" not in map(str, gmap)
    x = f32(rng, 3, 4, 5)
    ref = slice_ref(x, starts, ends)
    w = f32(rng, *ref.shape)
    feed(x=x, w=w, s=np.array(starts, np.int32), e=np.array(ends, np.int32))
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), ref)
    want = np.zeros_like(x)
    want[1:, 0:2, 3:4] = w
    close(workspace.FetchBlob(str(gmap["x"])), want, 0)


# ---------------------------------------------------------------- soft-coverage attention's zeros
@pytest.mark.parametrize("shape", [(7, 2, 3), (1, 4), (5,), (0, 3)])
def test_soft_coverage_zeros_pattern(rng, shape):
    # ConstantFill(Slice(Shape(encoder_outputs), starts=[0], ends=[1]), value=0.0, input_as_shape=1)
    net = core.Net("coverage")
    length = net.Slice(net.Shape("enc", "enc_shape"), "enc_len", starts=[0], ends=[1])
    net.ConstantFill(length, "coverage0", value=0.0, input_as_shape=1)
    feed(enc=f32(rng, *shape), coverage0=np.ones((9, 9), np.float32))
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("enc_len"), np.array([shape[0]], np.int32))
    z = workspace.FetchBlob("coverage0")
    assert z.dtype == np.float32 and z.shape == (shape[0],) and not z.any()


# ---------------------------------------------------------------- bad input
SLICE_BAD = [
    # (inputs: name -> array, op inputs, args, exception, message)
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [0, 1], "ends": [1]}, ValueError,
     r"op Slice #0: argument 'starts' has 2 entries but argument 'ends' has 1"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [0, 0, 0], "ends": [1, 1, 1]}, ValueError,
     r"op Slice #0: arguments 'starts' and 'ends' have 3 entries but input 0 blob 'x' of shape \(3, 4\) "
     r"float32 has 2 dims"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [0, 3], "ends": [1, 2]}, ValueError,
     r"op Slice #0: dim 1 \(size 4\) of input 0 blob 'x' of shape \(3, 4\) float32: start 3 and end 2 give "
     r"\[3, 2\), which is not a range 0 <= start <= end \(a negative value v counts from the end as "
     r"size \+ 1 \+ v; values above the size are clamped\)"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [-5, 0], "ends": [-1, -1]}, ValueError,
     r"op Slice #0: dim 0 \(size 3\) of input 0 blob 'x' of shape \(3, 4\) float32: start -5 and end -1 give "
     r"\[-1, 3\)"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [0, 0], "ends": [1, -6]}, ValueError,
     r"op Slice #0: dim 1 \(size 4\) of input 0 blob 'x' of shape \(3, 4\) float32: start 0 and end -6 give "
     r"\[0, -1\)"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [0]}, ValueError,
     r"op Slice #0: argument 'ends' is missing \(give both 'starts' and 'ends', or pass them as inputs 1 "
     r"and 2\)"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {}, ValueError, r"op Slice #0: argument 'starts' is missing"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(2, np.int32), "e": np.ones(2, np.int32)},
     ["x", "s", "e"], {"starts": [0, 0]}, ValueError,
     r"op Slice #0: starts and ends are given by input 1 blob 's' and input 2 blob 'e': do not also pass "
     r"argument 'starts'"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(2, np.int32), "e": np.ones(2, np.int32)},
     ["x", "s", "e"], {"ends": [1, 1]}, ValueError,
     r"op Slice #0: starts and ends are given by .* do not also pass argument 'ends'"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(2, np.int32)}, ["x", "s"], {}, ValueError,
     r"op Slice #0: takes data, or data, starts, ends \(starts and ends as inputs go together\), "
     r"got 2 inputs"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(2, np.float32), "e": np.ones(2, np.int32)},
     ["x", "s", "e"], {}, TypeError, r"op Slice #0: input 1 blob 's' must be int32, got \(2,\) float32"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(2, np.int32), "e": np.ones(2, np.float32)},
     ["x", "s", "e"], {}, TypeError, r"op Slice #0: input 2 blob 'e' must be int32, got \(2,\) float32"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(2, np.int32), "e": np.ones(3, np.int32)},
     ["x", "s", "e"], {}, ValueError,
     r"op Slice #0: input 1 blob 's' \(starts\) of shape \(2,\) int32 and input 2 blob 'e' \(ends\) of shape "
     r"\(3,\) int32 must be 1-D of the same length"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros((1, 2), np.int32), "e": np.ones((1, 2), np.int32)},
     ["x", "s", "e"], {}, ValueError, r"op Slice #0: input 1 blob 's' \(starts\) of shape \(1, 2\) int32 .* "
                                      r"must be 1-D"),
    ({"x": np.ones((3, 4), np.float32), "s": np.zeros(3, np.int32), "e": np.ones(3, np.int32)},
     ["x", "s", "e"], {}, ValueError,
     r"op Slice #0: input 1 blob 's' \(starts\) and input 2 blob 'e' \(ends\) have 3 entries but input 0 "
     r"blob 'x' of shape \(3, 4\) float32 has 2 dims"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": [0] * 9, "ends": [1] * 9}, ValueError,
     r"op Slice #0: arguments 'starts' and 'ends' have 9 entries, one per dim: at most 8 are supported"),
    ({"x": np.ones((3, 4), np.float32)}, ["x"], {"starts": 0, "ends": [1]}, TypeError,
     r"op Slice: argument 'starts' must be a list of ints, got int"),
]


@pytest.mark.parametrize("k", range(len(SLICE_BAD)))
def test_slice_bad_input(k):
    blobs, ins, args, exc, msg = SLICE_BAD[k]
    feed(**blobs)
    with pytest.raises(exc, match=msg):
        workspace.RunOperatorOnce(op("Slice", ins, ["y"], **args))
    net = core.Net("slice_bad")
    net.Slice(ins, "y", **args)
    with pytest.raises(exc, match="net 'slice_bad[^']*': " + msg):
        workspace.CreateNet(net)
    # the workspace stays usable
    feed(x=np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(run("Slice", ["x"], ["y"], starts=[1, 1], ends=[2, -1]), [[5, 6, 7]])


def test_slice_bad_values_in_inputs_found_at_run():
    # the values of starts/ends inputs may change after CreateNet: they are checked when the op runs
    feed(x=np.ones((3, 4), np.float32), s=np.array([2, 0], np.int32), e=np.array([1, -1], np.int32))
    net = core.Net("slice_run_bad")
    net.Slice(["x", "s", "e"], "y")
    workspace.CreateNet(net)
    msg = (r"op Slice #0: dim 0 \(size 3\) of input 0 blob 'x' of shape \(3, 4\) float32: start 2 and end 1 "
           r"give \[2, 1\)")
    with pytest.raises(ValueError, match=msg):
        workspace.RunNet("slice_run_bad")
    feed(e=np.array([3, -1], np.int32))
    workspace.RunNet("slice_run_bad")
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.ones((1, 4), np.float32))


def test_slice_unfed_inputs():
    with pytest.raises(KeyError, match=r"op Slice #0: input 0 blob 'nothing' does not exist"):
        workspace.RunOperatorOnce(op("Slice", ["nothing"], ["y"], starts=[0], ends=[1]))
    with pytest.raises(ValueError, match=r"op Slice #0: .*same blob 'x'"):
        feed(x=np.ones(3, np.float32))
        workspace.RunOperatorOnce(op("Slice", ["x"], ["x"], starts=[0], ends=[1]))


SLICE_GRAD_BAD = [
    # (op inputs, args, exception, message)
    (["x", "dy"], {"starts": [0, 1], "ends": [2, 3]}, ValueError,
     r"op SliceGradient #0: input 1 blob 'dy' \(dY\) of shape \(2, 3\) float32 must have the shape "
     r"\(2, 2\) of the slice of input 0 blob 'x' of shape \(3, 4\) float32"),
    (["x", "dy_int"], {"starts": [0, 0], "ends": [2, 3]}, TypeError,
     r"op SliceGradient #0: input 1 blob 'dy_int' must be float32, got \(2, 3\) int32"),
    (["x", "s", "dy"], {}, ValueError,
     r"op SliceGradient #0: takes data, dY, or data, starts, ends, dY \(starts and ends as inputs go "
     r"together\), got 3 inputs"),
    (["x", "s", "e", "dy"], {"starts": [0, 0]}, ValueError,
     r"op SliceGradient #0: starts and ends are given by input 1 blob 's' and input 2 blob 'e'"),
]


@pytest.mark.parametrize("k", range(len(SLICE_GRAD_BAD)))
def test_slice_gradient_bad_input(rng, k):
    ins, args, exc, msg = SLICE_GRAD_BAD[k]
    feed(x=f32(rng, 3, 4), dy=f32(rng, 2, 3), dy_int=np.ones((2, 3), np.int32), s=np.zeros(2, np.int32),
         e=np.array([2, 3], np.int32))
    with pytest.raises(exc, match=msg):
        workspace.RunOperatorOnce(op("SliceGradient", ins, ["dx"], **args))
    net = core.Net("slice_grad_bad")
    net.SliceGradient(ins, "dx", **args)
    with pytest.raises(exc, match="net 'slice_grad_bad[^']*': " + msg):
        workspace.CreateNet(net)
    dx = run("SliceGradient", ["x", "s", "e", "dy"], ["dx"])
    np.testing.assert_array_equal(dx[:2, :3], workspace.FetchBlob("dy"))
    assert not dx[2:].any() and not dx[:, 3:].any()


def test_slice_gradient_dy_shape_with_inputs_found_at_run(rng):
    feed(x=f32(rng, 3, 4), dy=f32(rng, 2, 3), s=np.zeros(2, np.int32), e=np.array([1, 3], np.int32))
    with pytest.raises(ValueError, match=r"op SliceGradient #0: input 3 blob 'dy' \(dY\) of shape \(2, 3\) "
                                         r"float32 must have the shape \(1, 3\) of the slice"):
        workspace.RunOperatorOnce(op("SliceGradient", ["x", "s", "e", "dy"], ["dx"]))
