"""TopK, TopKGradient, Tile, TileGradient (csrc/ops/topk_tile.c), Log, Exp (csrc/ops/math.c) and
FlattenToVec (csrc/ops/shape.c) with their gradient makers: NumPy references (shapes, axes, k = 1 and
k = dim, ties, NaN / inf, int32 Tile), the order of TopK's ties and NaNs, finite differences for every
gradient, in-place rules, tiles / axis as inputs, bad input with the messages (at run and at net
creation), and the workspace staying usable."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import check_grads, close, f32, feed, i32, op, run  # the same helpers


V, T = ValueError, TypeError


def bad(exc, msg):
    return pytest.raises(exc, match=msg)


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


# ---------------------------------------------------------------- references
def topk_ref(x, k, axis=-1):
    """The k first along axis in the order: NaN first, then larger values, ties by lower index."""
    x = np.asarray(x, np.float32)
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    rows = xm.reshape(-1, n)
    idx = np.empty((rows.shape[0], k), np.int64)
    for r, row in enumerate(rows):
        # lexsort: the last key is primary. Primary: not NaN (NaN first); then -value; then index.
        order = np.lexsort((np.arange(n), -np.where(np.isnan(row), 0, row), ~np.isnan(row)))
        idx[r] = order[:k]
    idx = idx.reshape(xm.shape[:-1] + (k,))
    vals = np.take_along_axis(xm, idx, -1)
    vals, idx = np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)
    # the flat position in x.ravel() of every selected element
    grid = np.indices(idx.shape)
    ax = axis % x.ndim
    grid[ax] = idx
    flat = np.ravel_multi_index(tuple(grid), x.shape).ravel()
    return vals, idx.astype(np.int32), flat.astype(np.int32)


def tile_ref(x, tiles, axis):
    return np.concatenate([x] * tiles, axis=axis)


def assert_unwritten(name):
    """A failed op wrote nothing to its output blob (absent, or created without a tensor)."""
    if workspace.HasBlob(name):  # FetchBlob describes it, as Caffe2's
        want = b"%s, a C++ native class of type nullptr (uninitialized)." % name.encode()
        assert workspace.FetchBlob(name) == want


def distinct(rng, *shape, gap=0.05):
    """float32 values at least `gap` apart (for finite differences away from ties)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float32) * gap - n * gap / 2).reshape(shape)


# ---------------------------------------------------------------- TopK
@pytest.mark.parametrize("shape,k,axis", [
    ((7,), 3, -1), ((7,), 1, 0), ((7,), 7, -1),                 # k = 1 and k = dim
    ((4, 9), 4, -1), ((4, 9), 9, 1), ((4, 9), 2, 0), ((4, 9), 4, -2),
    ((2, 3, 5), 2, 1), ((2, 3, 5), 5, 2), ((2, 3, 5), 1, 0), ((2, 3, 5), 3, -1),
    ((3, 0, 4), 2, 2), ((0, 5), 5, 1),                           # empty outer / inner parts
])
def test_topk_matches_reference(rng, shape, k, axis):
    x = f32(rng, *shape, lo=-5, hi=5)
    feed(x=x)
    v, i, fl = run("TopK", ["x"], ["v", "i", "f"], k=k, axis=axis)
    rv, ri, rf = topk_ref(x, k, axis)
    assert v.dtype == np.float32 and i.dtype == np.int32 and fl.dtype == np.int32
    assert v.shape == i.shape == rv.shape and fl.shape == (v.size,)
    np.testing.assert_array_equal(i, ri)
    assert v.tobytes() == rv.tobytes()
    np.testing.assert_array_equal(fl, rf)
    if x.size:
        np.testing.assert_array_equal(x.ravel()[fl], v.ravel())
    # sorted descending along the axis; matches np.sort for distinct values
    np.testing.assert_array_equal(v, np.flip(np.sort(x, axis=axis), axis=axis).take(range(k), axis=axis))


def test_topk_default_axis_is_last_and_two_outputs(rng):
    x = f32(rng, 3, 4, 6)
    feed(x=x)
    v, i = run("TopK", ["x"], ["v", "i"], k=2)
    rv, ri, _ = topk_ref(x, 2, -1)
    np.testing.assert_array_equal(v, rv)
    np.testing.assert_array_equal(i, ri)


def test_topk_ties_go_to_the_lower_index():
    x = np.array([[1, 3, 3, 2, 3, 1],
                  [0, -0.0, 0, 5, -0.0, 5],        # -0.0 and 0.0 tie
                  [7, 7, 7, 7, 7, 7]], np.float32)
    feed(x=x)
    v, i = run("TopK", ["x"], ["v", "i"], k=4)
    np.testing.assert_array_equal(i, [[1, 2, 4, 3], [3, 5, 0, 1], [0, 1, 2, 3]])
    np.testing.assert_array_equal(v, [[3, 3, 3, 2], [5, 5, 0, 0], [7, 7, 7, 7]])
    assert np.signbit(v[1, 2]) == 0 and np.signbit(v[1, 3]) == 1   # the values are copied bit for bit
    # the same along axis 0
    v0, i0 = run("TopK", ["x"], ["v0", "i0"], k=2, axis=0)
    np.testing.assert_array_equal(i0, [[2, 2, 2, 2, 2, 2], [0, 0, 0, 1, 0, 1]])


def test_topk_nan_sorts_largest_and_inf():
    x = np.array([[1, np.nan, np.inf, -np.inf, np.nan, 2],
                  [-np.inf, -np.inf, -1, -np.inf, -2, -np.inf]], np.float32)
    x.view(np.uint32)[0, 4] = 0xFFC12345                  # a negative NaN with a payload: still NaN
    feed(x=x)
    v, i, fl = run("TopK", ["x"], ["v", "i", "f"], k=5)
    np.testing.assert_array_equal(i, [[1, 4, 2, 5, 0], [2, 4, 0, 1, 3]])
    assert v.view(np.uint32)[0, 1] == 0xFFC12345 and np.isnan(v[0, 0])
    np.testing.assert_array_equal(v[0, 2:], [np.inf, 2, 1])
    np.testing.assert_array_equal(v[1], [-1, -2, -np.inf, -np.inf, -np.inf])
    np.testing.assert_array_equal(fl, [1, 4, 2, 5, 0, 8, 10, 6, 7, 9])
    rv, ri, rf = topk_ref(x, 5)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(fl, rf)


def test_topk_large_row_random_ties(rng):
    # many ties in long rows (the heap path with replacements), against the reference
    x = rng.randint(0, 20, (6, 3000)).astype(np.float32)
    x[2, ::7] = np.nan
    feed(x=x)
    for k in (1, 5, 64, 3000):
        v, i = run("TopK", ["x"], ["v", "i"], k=k)
        rv, ri, _ = topk_ref(x, k)
        np.testing.assert_array_equal(i, ri)
        assert v.tobytes() == rv.tobytes()


def test_topk_rerun_with_other_shapes(rng):
    o = op("TopK", ["x"], ["v", "i"], k=3)
    for shape in [(2, 5), (4, 3), (1, 40), (3, 8)]:
        x = f32(rng, *shape)
        feed(x=x)
        workspace.RunOperatorOnce(o)
        rv, ri, _ = topk_ref(x, 3)
        np.testing.assert_array_equal(workspace.FetchBlob("i"), ri)
        np.testing.assert_array_equal(workspace.FetchBlob("v"), rv)


def test_topk_bad_inputs(rng):
    feed(x=f32(rng, 2, 5), i=np.zeros((2, 5), np.int32), s=np.float32(3))
    for k in (0, -1):
        with bad(V, r"op TopK #0: argument 'k' must be >= 1, got %d" % k):
            workspace.RunOperatorOnce(op("TopK", ["x"], ["v", "ix"], k=k))
    with bad(V, r"op TopK #0: argument 'k' is required"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["v", "ix"]))
    with bad(T, r"op TopK #0: input 0 blob 'i' must be float32, got \(2, 5\) int32"):
        workspace.RunOperatorOnce(op("TopK", ["i"], ["v", "ix"], k=1))
    with bad(V, r"op TopK #0: axis 2 is out of range for input 0 blob 'x' \(2, 5\)"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["v", "ix"], k=1, axis=2))
    with bad(V, r"op TopK #0: axis -3 is out of range"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["v", "ix"], k=1, axis=-3))
    with bad(V, r"op TopK #0: input 0 blob 's' must have at least 1 dim, got \(\) float32"):
        workspace.RunOperatorOnce(op("TopK", ["s"], ["v", "ix"], k=1))
    with bad(V, r"op TopK #0: .*same blob 'x'"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["x", "ix"], k=1))
    with bad(V, r"op TopK #0: expects 2 to 3 outputs"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["v"], k=1))
    with bad(T, r"op TopK: argument 'k' must be an int, got float"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["v", "ix"], k=1.5))
    with bad(MemoryError, r"op TopK #0: output 0 blob 'v': tensor of .* elements is too large"):
        workspace.RunOperatorOnce(op("TopK", ["x"], ["v", "ix"], k=2 ** 62))   # padded to k: too large
    # the workspace stays usable and nothing was written
    assert_unwritten("v")
    v, ix = run("TopK", ["x"], ["v", "ix"], k=5)
    np.testing.assert_array_equal(ix, topk_ref(workspace.FetchBlob("x"), 5)[1])


def topk_padded_ref(x, k, axis):
    """Caffe2's k > dims[axis]: the n selected, then values 0 and indices (and flat indices) -1."""
    n = x.shape[axis]
    if n:
        v, i, _ = topk_ref(x, n, axis)
    else:
        v, i = np.zeros(x.shape, np.float32), np.zeros(x.shape, np.int32)
    pad = list(x.shape)
    pad[axis] = k - n
    v = np.concatenate([v, np.zeros(pad, np.float32)], axis)
    i = np.concatenate([i, np.full(pad, -1, np.int32)], axis)
    if x.size == 0:
        return v, i, np.full(i.size, -1, np.int32)
    grid = np.indices(i.shape)
    grid[axis % x.ndim] = np.maximum(i, 0)
    f = np.where(i.ravel() < 0, -1, np.ravel_multi_index(tuple(grid), x.shape).ravel()).astype(np.int32)
    return v, i, f


@pytest.mark.parametrize("shape,k,axis", [((5,), 6, 0), ((2, 5), 9, 1), ((2, 5), 3, 0), ((3, 2, 4), 5, 1),
                                          ((2, 0), 3, 1), ((0, 3), 4, 1), ((1, 1), 2, -1)])
def test_topk_k_larger_than_dim_pads_as_caffe2(rng, shape, k, axis):
    # Caffe2's TopK doc: k > dims[axis] pads the values with 0 and the indices with -1
    x = f32(rng, *shape, lo=-5, hi=5)
    feed(x=x)
    v, i, fl = run("TopK", ["x"], ["v", "i", "f"], k=k, axis=axis)
    rv, ri, rf = topk_padded_ref(x, k, axis)
    assert v.shape == i.shape == rv.shape and fl.shape == (v.size,)
    assert v.tobytes() == rv.tobytes()
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(fl, rf)
    # a rerun with a smaller k reuses the outputs: nothing of the padding is left behind
    v2, i2 = run("TopK", ["x"], ["v", "i"], k=max(1, min(k, x.shape[axis])), axis=axis)
    if x.shape[axis]:
        np.testing.assert_array_equal(i2, topk_ref(x, min(k, x.shape[axis]), axis)[1])


def test_topk_padded_gradient_skips_minus_one(rng):
    # the gradient of a padded TopK: the padding's -1 indices are skipped, the rest scattered
    x = distinct(rng, 2, 3)
    feed(x=x)
    check_grads(op("TopK", ["x"], ["v", "i"], k=5), [x])
    check_grads(op("TopK", ["x"], ["v", "i", "f"], k=4, axis=0), [x])
    dv = f32(rng, 2, 5)
    feed(dv=dv)
    _, i = run("TopK", ["x"], ["v", "i"], k=5)
    dx = run("TopKGradient", ["dv", "i", "x"], ["dx"])
    ref = np.zeros_like(x)
    np.put_along_axis(ref, i[:, :3].astype(np.int64), dv[:, :3], axis=1)
    assert dx.tobytes() == ref.tobytes()


def test_topk_gradient_op(rng):
    x = distinct(rng, 3, 4, 5)
    dv = f32(rng, 3, 2, 5)
    feed(x=x, dv=dv)
    _, i = run("TopK", ["x"], ["v", "i"], k=2, axis=1)
    dx = run("TopKGradient", ["dv", "i", "x"], ["dx"], axis=1)
    ref = np.zeros_like(x)
    np.put_along_axis(ref, i.astype(np.int64), dv, axis=1)
    assert dx.dtype == np.float32 and dx.tobytes() == ref.tobytes()
    # repeated indices add up; X is read for its shape only (any dtype)
    feed(ii=np.array([[1, 1, 0]], np.int32), d3=np.array([[1.5, 2.25, -1]], np.float32),
         xi=np.zeros((1, 4), np.int32))
    np.testing.assert_array_equal(run("TopKGradient", ["d3", "ii", "xi"], ["dx2"]), [[-1, 3.75, 0, 0]])


def test_topk_gradient_bad_inputs(rng):
    feed(x=f32(rng, 2, 5), dv=f32(rng, 2, 3), i=np.array([[0, 4, 5], [1, 2, 3]], np.int32),
         i2=np.zeros((2, 2), np.int32), fi=np.zeros((2, 3), np.float32), dv6=f32(rng, 2, 6),
         x3=f32(rng, 2, 5, 1))
    with bad(V, r"op TopKGradient #0: input 1 blob 'i' \(2, 3\) int32 \(indices\): index 5 "
                r"at flat position 2 is out of range \[0, 5\) \(dim 1 of input 2 blob 'x'"):
        workspace.RunOperatorOnce(op("TopKGradient", ["dv", "i", "x"], ["dx"]))
    feed(i=np.array([[0, 4, 1], [-2, 2, 3]], np.int32))
    with bad(V, r"index -2 at flat position 3 is out of range \[0, 5\) .*-1, TopK's padding, is skipped"):
        workspace.RunOperatorOnce(op("TopKGradient", ["dv", "i", "x"], ["dx"]))
    assert_unwritten("dx")
    with bad(V, r"op TopKGradient #0: input 1 blob 'i2' \(2, 2\) int32 \(indices\) must "
                r"have the shape of input 0 blob 'dv' \(2, 3\) float32"):
        workspace.RunOperatorOnce(op("TopKGradient", ["dv", "i2", "x"], ["dx"]))
    with bad(T, r"op TopKGradient #0: input 1 blob 'fi' must be int32"):
        workspace.RunOperatorOnce(op("TopKGradient", ["dv", "fi", "x"], ["dx"]))
    feed(i6b=np.zeros((3, 6), np.int32), dv6b=f32(rng, 3, 6))
    with bad(V, r"op TopKGradient #0: input 0 blob 'dv6b' \(3, 6\) float32 \(dValues\) must "
                r"have the shape of input 2 blob 'x' \(2, 5\) float32 \(X\) except at axis 1"):
        workspace.RunOperatorOnce(op("TopKGradient", ["dv6b", "i6b", "x"], ["dx"]))
    feed(i3=np.zeros((2, 3), np.int32))
    with bad(V, r"op TopKGradient #0: input 0 blob 'dv' .* except at axis 2"):
        workspace.RunOperatorOnce(op("TopKGradient", ["dv", "i3", "x3"], ["dx"]))
    feed(i=np.array([[0, 4, 1], [1, 2, 3]], np.int32))
    dx = run("TopKGradient", ["dv", "i", "x"], ["dx"])
    assert dx.shape == (2, 5)


@pytest.mark.parametrize("shape,k,axis", [((3, 6), 2, -1), ((3, 6), 6, 1), ((4, 3, 2), 2, 0),
                                          ((2, 5, 3), 1, 1)])
def test_topk_gradient_finite_differences(rng, shape, k, axis):
    x = distinct(rng, *shape)
    check_grads(op("TopK", ["x"], ["v", "i"], k=k, axis=axis), [x])
    check_grads(op("TopK", ["x"], ["v", "i", "f"], k=k, axis=axis), [x])


def test_topk_gradient_maker():
    ops, g = G(op("TopK", ["x"], ["v", "i", "f"], k=3, axis=0), ["v_g", None, None])
    assert g == ["x_grad"] and len(ops) == 1
    assert ops[0].type == "TopKGradient" and list(ops[0].input) == ["v_g", "i", "x"]
    assert list(ops[0].output) == ["x_grad"] and [(a.name, a.value()) for a in ops[0].arg] == [("axis", 0)]
    assert G(op("TopK", ["x"], ["v", "i"], k=3), [None, "i_g"]) == ([], [None])


def test_topk_through_a_net(rng):
    # TopK's values summed: the gradient is 1 at the selected positions
    x = distinct(rng, 4, 7)
    feed(x=x)
    net = core.Net("topk")
    v, i = net.TopK(["x"], ["v", "i"], k=3)
    loss = net.SumElements([v], "loss")
    net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    ref = np.zeros_like(x)
    np.put_along_axis(ref, topk_ref(x, 3)[1].astype(np.int64), 1.0, axis=1)
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), ref)


# ---------------------------------------------------------------- Tile
@pytest.mark.parametrize("shape,tiles,axis", [
    ((3,), 4, 0), ((2, 3), 1, 0), ((2, 3), 3, 0), ((2, 3), 2, 1), ((2, 3), 2, -1), ((2, 3), 5, -2),
    ((2, 3, 4), 3, 1), ((2, 3, 4), 2, 2), ((2, 0, 4), 3, 1), ((2, 0, 4), 3, 0),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_tile_matches_numpy(rng, shape, tiles, axis, dtype):
    x = (f32(rng, *shape, lo=-100, hi=100)).astype(dtype)
    feed(x=x)
    y = run("Tile", ["x"], ["y"], tiles=tiles, axis=axis)
    ref = tile_ref(x, tiles, axis)
    assert y.dtype == dtype and y.shape == ref.shape and y.tobytes() == ref.tobytes()
    # the same through inputs 1 and 2 (override the arguments)
    feed(t=np.array([tiles], np.int32), a=np.array([axis], np.int32))
    y2 = run("Tile", ["x", "t", "a"], ["y2"], tiles=7, axis=0)
    assert y2.tobytes() == ref.tobytes() and y2.shape == ref.shape
    if axis in (0, -len(shape)):       # input 1 alone: the axis from the argument (default 0)
        y3 = run("Tile", ["x", "t"], ["y3"])
        assert y3.tobytes() == ref.tobytes() and y3.shape == ref.shape


def test_tile_special_values_bitwise():
    x = np.array([[np.nan, -0.0, np.inf], [1e-45, -np.inf, 3]], np.float32)
    x.view(np.uint32)[0, 0] = 0x7FC00ABC
    feed(x=x)
    y = run("Tile", ["x"], ["y"], tiles=3, axis=1)
    assert y.tobytes() == np.tile(x, (1, 3)).tobytes()


def test_tile_gradient_op(rng):
    dy = f32(rng, 2, 12, 3, lo=-3, hi=3)
    feed(dy=dy)
    dx = run("TileGradient", ["dy"], ["dx"], tiles=4, axis=1)
    parts = np.split(dy, 4, axis=1)
    ref = parts[0].copy()
    for p in parts[1:]:
        ref = ref + p                   # float32, tile 0 first: the op's order, bit for bit
    assert dx.shape == (2, 3, 3) and dx.tobytes() == ref.tobytes()
    feed(t=np.array([4], np.int32), a=np.array([-2], np.int32))
    assert run("TileGradient", ["dy", "t", "a"], ["dx2"]).tobytes() == ref.tobytes()
    np.testing.assert_array_equal(run("TileGradient", ["dy"], ["dx3"], tiles=1, axis=2), dy)


@pytest.mark.parametrize("shape,tiles,axis", [((3,), 3, 0), ((2, 3), 2, 1), ((2, 3, 2), 3, -2),
                                              ((2, 3), 2, 0)])
def test_tile_gradient_finite_differences(rng, shape, tiles, axis):
    check_grads(op("Tile", ["x"], ["y"], tiles=tiles, axis=axis), [f32(rng, *shape)])
    # tiles and axis as inputs (they get no gradient)
    o = op("Tile", ["x", "t", "a"], ["y"])
    check_grads(o, [f32(rng, *shape), np.array([tiles], np.int32), np.array([axis], np.int32)], indices=[0])


def test_tile_gradient_maker():
    ops, g = G(op("Tile", ["x"], ["y"], tiles=3, axis=1), ["y_g"])
    assert g == ["x_grad"] and ops[0].type == "TileGradient" and list(ops[0].input) == ["y_g"]
    assert sorted((a.name, a.value()) for a in ops[0].arg) == [("axis", 1), ("tiles", 3)]
    ops, g = G(op("Tile", ["x", "t", "a"], ["y"]), ["y_g"])
    assert g == ["x_grad", None, None] and list(ops[0].input) == ["y_g", "t", "a"]
    assert G(op("Tile", ["x", "t"], ["y"]), [None]) == ([], [None, None])


def test_tile_bad_inputs(rng):
    feed(x=f32(rng, 2, 3), s=np.float32(1), t2=np.array([2, 3], np.int32), tf=np.array([2.0], np.float32),
         t0=np.array([0], np.int32), a5=np.array([5], np.int32), dy=f32(rng, 2, 7))
    with bad(V, r"op Tile #0: argument 'tiles' is required \(or give it as input 1\)"):
        workspace.RunOperatorOnce(op("Tile", ["x"], ["y"], axis=0))
    for t in (0, -2, 2 ** 31):
        with bad(V, r"op Tile #0: argument 'tiles' must be in \[1, 2147483647\], got %d" % t):
            workspace.RunOperatorOnce(op("Tile", ["x"], ["y"], tiles=t))
    with bad(V, r"op Tile #0: axis 2 is out of range for input 0 blob 'x' \(2, 3\) float32"):
        workspace.RunOperatorOnce(op("Tile", ["x"], ["y"], tiles=2, axis=2))
    with bad(V, r"op Tile #0: axis -3 is out of range"):
        workspace.RunOperatorOnce(op("Tile", ["x"], ["y"], tiles=2, axis=-3))
    with bad(V, r"op Tile #0: input 0 blob 's' must have at least 1 dim, got \(\) float32"):
        workspace.RunOperatorOnce(op("Tile", ["s"], ["y"], tiles=2))
    with bad(V, r"op Tile #0: input 1 blob 't2' \(tiles\) must have shape \(1,\), got \(2,\)"):
        workspace.RunOperatorOnce(op("Tile", ["x", "t2"], ["y"]))
    with bad(T, r"op Tile #0: input 1 blob 'tf' must be int32, got \(1,\) float32"):
        workspace.RunOperatorOnce(op("Tile", ["x", "tf"], ["y"]))
    with bad(V, r"op Tile #0: input 1 blob 't0' \(tiles\) must be >= 1, got 0"):
        workspace.RunOperatorOnce(op("Tile", ["x", "t0"], ["y"]))
    with bad(V, r"op Tile #0: axis 5 is out of range for input 0 blob 'x'"):
        workspace.RunOperatorOnce(op("Tile", ["x"], ["y"], tiles=1, axis=5))
    feed(t1=np.array([2], np.int32))
    with bad(V, r"op Tile #0: axis 5 is out of range for input 0 blob 'x'"):
        workspace.RunOperatorOnce(op("Tile", ["x", "t1", "a5"], ["y"]))
    with bad(V, r"op Tile #0: .*same blob 'x'"):
        workspace.RunOperatorOnce(op("Tile", ["x"], ["x"], tiles=2))
    with bad(T, r"op TileGradient #0: input 0 blob 'i' must be float32, got \(2,\) int32"):
        feed(i=np.zeros(2, np.int32))
        workspace.RunOperatorOnce(op("TileGradient", ["i"], ["dx"], tiles=2))
    with bad(V, r"op TileGradient #0: dim 1 of input 0 blob 'dy' \(2, 7\) float32 is not a "
                r"multiple of tiles=2"):
        workspace.RunOperatorOnce(op("TileGradient", ["dy"], ["dx"], tiles=2, axis=1))
    with bad(V, r"op TileGradient #0: argument 'tiles' is required"):
        workspace.RunOperatorOnce(op("TileGradient", ["dy"], ["dx"]))
    # the workspace stays usable
    y = run("Tile", ["x", "t1"], ["y"], axis=1)
    np.testing.assert_array_equal(y, np.tile(workspace.FetchBlob("x"), (1, 2)))


def test_tile_through_a_net_like_beam_search(rng):
    # the beam search tiles the encoder outputs over the beam: (T, 1, D) -> (T, beam, D); gradient summed back
    x = f32(rng, 5, 1, 4)
    feed(x=x)
    net = core.Net("tile")
    y = net.Tile(["x"], "y", tiles=3, axis=1)
    loss = net.SumElements([net.Sqr(y, "y2")], "loss")
    net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.tile(x, (1, 3, 1)))
    close(workspace.FetchBlob("x_grad"), 3 * 2 * x)


# ---------------------------------------------------------------- Log, Exp
def special(rng):
    x = f32(rng, 3, 6, lo=-3, hi=3)
    x[0] = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan]
    x[1, :4] = [1e-45, 3e38, 100.0, -104.0]          # a denormal; exp overflows / underflows
    return x


def test_log(rng):
    x = special(rng)
    feed(x=x)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(x)
    y = run("Log", ["x"], ["y"])
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=2e-7, atol=0)         # NaN where NaN, inf where inf
    np.testing.assert_array_equal(y[0, :5], [-np.inf, -np.inf, np.nan, np.inf, np.nan])
    assert np.isnan(y[0, 5])
    x64 = np.abs(x[2]).astype(np.float64) + 0.5
    feed(p=x64.astype(np.float32))
    close(run("Log", ["p"], ["lp"]), np.log(x64.astype(np.float32).astype(np.float64)), 1e-6)
    assert run("Log", ["x"], ["x"]).tobytes() == y.tobytes()          # in place
    feed(z=np.zeros((2, 0), np.float32))
    assert run("Log", ["z"], ["zy"]).shape == (2, 0)


def test_exp(rng):
    x = special(rng)
    feed(x=x)
    with np.errstate(over="ignore", under="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    y = run("Exp", ["x"], ["y"])
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=2e-7, atol=0)
    # libm's expf is correctly rounded here (NumPy's float32 exp is 1 ulp off at -1)
    np.testing.assert_array_equal(y[0, :5], [1, 1, np.float32(np.exp(-1.0)), np.inf, 0])
    assert np.isnan(y[0, 5]) and y[1, 1] == np.inf and y[1, 2] == np.inf and y[1, 3] == 0 and y[1, 0] == 1
    assert run("Exp", ["x"], ["x"]).tobytes() == y.tobytes()          # in place


@pytest.mark.parametrize("kind", ["Log", "Exp"])
def test_log_exp_bad_inputs(rng, kind):
    feed(i=np.arange(6, dtype=np.int32).reshape(2, 3), x=f32(rng, 2, 3, lo=0.5, hi=2))
    with bad(T, r"op %s #0: input 0 blob 'i' must be float32, got \(2, 3\) int32" % kind):
        workspace.RunOperatorOnce(op(kind, ["i"], ["y"]))
    with pytest.raises(KeyError, match=r"op %s #0: input 0 blob 'nope' does not exist" % kind):
        workspace.RunOperatorOnce(op(kind, ["nope"], ["y"]))
    with bad(V, r"op %s #0: .*(inputs|outputs)" % kind):
        workspace.RunOperatorOnce(op(kind, ["x", "x"], ["y"]))
    x = workspace.FetchBlob("x")
    close(run(kind, ["x"], ["y"]), np.log(x) if kind == "Log" else np.exp(x), 1e-6)


def test_log_exp_gradients(rng):
    check_grads(op("Log", ["x"], ["y"]), [f32(rng, 3, 4, lo=0.3, hi=3)])
    check_grads(op("Exp", ["x"], ["y"]), [f32(rng, 3, 4, lo=-2, hi=2)])
    ops, g = G(op("Log", ["x"], ["y"]), ["y_g"])
    assert g == ["x_grad"] and ops[0].type == "Div" and list(ops[0].input) == ["y_g", "x"]
    ops, g = G(op("Exp", ["x"], ["y"]), ["y_g"])
    assert g == ["x_grad"] and ops[0].type == "Mul" and list(ops[0].input) == ["y", "y_g"]
    # the values: dY / X and Y dY exactly
    x, dy = f32(rng, 7, lo=0.2, hi=4), f32(rng, 7)
    feed(x=x, y_g=dy)
    for o in G(op("Log", ["x"], ["y"]), ["y_g"])[0]:
        workspace.RunOperatorOnce(o)
    assert workspace.FetchBlob("x_grad").tobytes() == (dy / x).tobytes()
    workspace.RunOperatorOnce(op("Exp", ["x"], ["y"]))
    for o in G(op("Exp", ["x"], ["y"]), ["y_g"])[0]:
        workspace.RunOperatorOnce(o)
    assert workspace.FetchBlob("x_grad").tobytes() == (workspace.FetchBlob("y") * dy).tobytes()
    assert G(op("Log", ["x"], ["y"]), [None]) == ([], [None])


def test_log_exp_in_place_gradients():
    with bad(V, r"Log gradient: the forward op computes 'x' in place"):
        G(op("Log", ["x"], ["x"]), ["x_g"])
    # Exp's gradient needs only its output: in place is fine
    x = np.array([0.5, -1.0, 2.0], np.float32)
    feed(x=x)
    net = core.Net("exp_in_place")
    net.Exp(["x"], ["x"])
    net.AddGradientOperators([net.SumElements(["x"], "loss")])
    workspace.RunNetOnce(net)
    ref = np.exp(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), ref)


# ---------------------------------------------------------------- FlattenToVec
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_flatten_to_vec(rng, shape, dtype):
    x = f32(rng, *shape, lo=-50, hi=50).astype(dtype)
    feed(x=x)
    y = run("FlattenToVec", ["x"], ["y"])
    assert y.dtype == dtype and y.shape == (x.size,) and y.tobytes() == x.ravel().tobytes()


def test_flatten_to_vec_gradient(rng):
    check_grads(op("FlattenToVec", ["x"], ["y"]), [f32(rng, 2, 3, 2)])
    ops, g = G(op("FlattenToVec", ["x"], ["y"]), ["y_g"])
    assert g == ["x_grad"] and ops[0].type == "ResizeLike" and list(ops[0].input) == ["y_g", "x"]
    assert G(op("FlattenToVec", ["x"], ["y"]), [None]) == ([], [None])


def test_flatten_to_vec_bad_inputs(rng):
    feed(x=f32(rng, 2, 3))
    with bad(V, r"op FlattenToVec #0: input 0 and output 0 are the same blob 'x'"):
        workspace.RunOperatorOnce(op("FlattenToVec", ["x"], ["x"]))
    with pytest.raises(KeyError, match=r"op FlattenToVec #0: input 0 blob 'nope' does not exist"):
        workspace.RunOperatorOnce(op("FlattenToVec", ["nope"], ["y"]))
    with bad(V, r"op FlattenToVec #0: expects 1 input"):
        workspace.RunOperatorOnce(op("FlattenToVec", ["x", "x"], ["y"]))
    np.testing.assert_array_equal(run("FlattenToVec", ["x"], ["y"]), workspace.FetchBlob("x").ravel())


# ---------------------------------------------------------------- net-creation checks
CREATION = [
    ("TopK", ["x"], ["v", "i"], dict(k=2, axis=2), V, r"op TopK #0: axis 2 is out of range"),
    ("TopK", ["xi"], ["v", "i"], dict(k=1), T, r"op TopK #0: input 0 blob 'xi' must be float32"),
    ("TopKGradient", ["dv", "ii", "x"], ["dx"], {}, V,
     r"op TopKGradient #0: input 1 blob 'ii' .* must have the shape"),
    ("Tile", ["x"], ["y"], dict(tiles=2, axis=3), V, r"op Tile #0: axis 3 is out of range"),
    ("Tile", ["x", "tf"], ["y"], dict(axis=0), T, r"op Tile #0: input 1 blob 'tf' must be int32"),
    ("TileGradient", ["xi"], ["y"], dict(tiles=2), T,
     r"op TileGradient #0: input 0 blob 'xi' must be float32"),
    ("NumpyTile", ["x", "tf"], ["y"], {}, T, r"op NumpyTile #0: input 1 blob 'tf' must be int32"),
    ("NumpyTile", ["x", "ii"], ["y"], {}, V, r"op NumpyTile #0: input 1 blob 'ii' must have 1 dims"),
]


@pytest.mark.parametrize("type_,ins,outs,args,exc,msg", CREATION,
                         ids=[c[0] + str(i) for i, c in enumerate(CREATION)])
def test_checked_at_net_creation(rng, type_, ins, outs, args, exc, msg):
    feed(x=f32(rng, 2, 5), xi=np.zeros((2, 5), np.int32), dv=f32(rng, 2, 3), ii=np.zeros((2, 2), np.int32),
         tf=np.ones(1, np.float32))
    net = core.Net("creation")
    net.Proto().op.extend([op(type_, ins, outs, **args)])
    with pytest.raises(exc, match="net 'creation[^']*': " + msg):
        workspace.CreateNet(net)
    feed(ok=f32(rng, 2))
    np.testing.assert_array_equal(run("Exp", ["ok"], ["ok2"]), np.exp(workspace.FetchBlob("ok")))


# ---------------------------------------------------------------- NumpyTile
NUMPY_TILE = [((3,), [2]), ((2, 3), [1, 1]), ((2, 3), [3, 2]), ((1, 3, 2), [2, 1, 3]),
              ((2, 1, 2, 3), [1, 3, 2, 2]), ((2, 3), [0, 2]), ((0, 3), [2, 2]), ((2, 0, 1), [1, 4, 0]),
              ((), [])]


@pytest.mark.parametrize("shape,reps", NUMPY_TILE)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_numpy_tile_matches_numpy(rng, shape, reps, dtype):
    x = np.asarray(rng.randn(*shape) * 10).astype(dtype)
    feed(x=x, r=np.array(reps, np.int32).reshape(len(reps)))
    y = run("NumpyTile", ["x", "r"], ["y"])
    want = np.tile(x, reps)
    assert y.dtype == dtype and y.shape == want.shape
    np.testing.assert_array_equal(y, want)


def test_numpy_tile_bad_inputs_and_no_gradient(rng):
    feed(x=f32(rng, 2, 3), r1=np.array([2], np.int32), rn=np.array([2, -1], np.int32),
         big=np.array([2 ** 31 - 1, 2 ** 31 - 1], np.int32))
    with bad(V, r"op NumpyTile #0: input 1 blob 'r1' \(repeats\) \(1,\) int32 must have one entry per dim of "
                r"input 0 blob 'x' \(2, 3\) float32"):
        workspace.RunOperatorOnce(op("NumpyTile", ["x", "r1"], ["y"]))
    with bad(V, r"op NumpyTile #0: input 1 blob 'rn' \(repeats\) \(2,\) int32: entry 1 is -1, must be >= 0"):
        workspace.RunOperatorOnce(op("NumpyTile", ["x", "rn"], ["y"]))
    with bad(MemoryError, r"op NumpyTile #0: output 0 blob 'y': tensor of .* elements is too large"):
        workspace.RunOperatorOnce(op("NumpyTile", ["x", "big"], ["y"]))
    with bad(V, r"op NumpyTile #0: .*same blob 'x'"):
        workspace.RunOperatorOnce(op("NumpyTile", ["x", "r1"], ["x"]))
    # no gradient, as Caffe2 (NumpyTile has none registered there)
    with pytest.raises(RuntimeError, match=r"no gradient is registered for operator type 'NumpyTile'"):
        core.GradientRegistry.GetGradientForOp(op("NumpyTile", ["x", "r"], ["y"]), ["y_grad"])
    feed(r=np.array([1, 2], np.int32))  # the workspace stays usable
    np.testing.assert_array_equal(run("NumpyTile", ["x", "r"], ["y"]),
                                  np.tile(workspace.FetchBlob("x"), [1, 2]))


# ---------------------------------------------------------------- LengthsTopK
def lengths_topk_ref(x, lengths, k):
    vals = np.zeros((len(lengths), k), np.float32)
    idx = -np.ones((len(lengths), k), np.int32)
    off = 0
    for i, n in enumerate(lengths):
        v, ix, _ = topk_ref(x[off:off + n], min(k, n)) if n else (np.zeros(0), np.zeros(0), None)
        vals[i, :len(v)], idx[i, :len(ix)] = v, ix
        off += n
    return vals, idx


@pytest.mark.parametrize("lengths,k", [([3, 1, 4], 2), ([3, 1, 4], 1), ([3, 1, 4], 4), ([3, 1, 4], 6),
                                       ([0, 2, 0], 3), ([], 2), ([0, 0], 1), ([7], 7)])
def test_lengths_topk(rng, lengths, k):
    x = f32(rng, sum(lengths))
    feed(x=x, l=i32(lengths))
    v, ix = run("LengthsTopK", ["x", "l"], ["v", "i"], k=k)
    want_v, want_i = lengths_topk_ref(x, lengths, k)
    assert v.dtype == np.float32 and ix.dtype == np.int32
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(ix, want_i)
    g = f32(rng, len(lengths), k)
    feed(g=g)
    dx = run("LengthsTopKGradient", ["l", "i", "g"], ["dx"], k=k)
    want = np.zeros(sum(lengths), np.float32)
    off = 0
    for r, n in enumerate(lengths):
        for j in range(min(k, n)):
            want[off + want_i[r, j]] += g[r, j]
        off += n
    np.testing.assert_array_equal(dx, want)


def test_lengths_topk_ties_nan_and_caffe2_test_case():
    x = np.array([1, 3, 3, np.nan, 2, 5, 5, 5], np.float32)
    feed(x=x, l=i32([4, 4]))
    v, ix = run("LengthsTopK", ["x", "l"], ["v", "i"], k=3)
    np.testing.assert_array_equal(ix, [[3, 1, 2], [1, 2, 3]])  # NaN first, ties by lower position
    assert np.isnan(v[0, 0]) and (v[0, 1:] == 3).all() and (v[1] == 5).all()
    # Caffe2's test: segments of 0, 0.06, 0.12, ... (ascending), the top k reversed
    feed(x=np.array([0, 0.06, 0.12, 0, 0.06], np.float32), l=i32([3, 2]))
    v, ix = run("LengthsTopK", ["x", "l"], ["v", "i"], k=3)
    np.testing.assert_array_equal(ix, [[2, 1, 0], [1, 0, -1]])
    np.testing.assert_array_equal(v, np.array([[0.12, 0.06, 0], [0.06, 0, 0]], np.float32))


def test_lengths_topk_gradient_repeated_indices_add_up():
    feed(l=i32([3, 1]), ix=i32([[2, 2], [0, -1]]), g=np.array([[1.5, 2.0], [4.0, 9.0]], np.float32))
    dx = run("LengthsTopKGradient", ["l", "ix", "g"], ["dx"], k=2)
    np.testing.assert_array_equal(dx, [0, 0, 3.5, 4.0])  # Caffe2 kept the last (2.0); the padding is skipped


@pytest.mark.parametrize("lengths,k", [([3, 1, 4], 2), ([2, 0, 5], 3)])
def test_lengths_topk_fd_gradient(rng, lengths, k):
    x = distinct(rng, sum(lengths))
    check_grads(op("LengthsTopK", ["x", "l"], ["v", "i"], k=k), [x, i32(lengths)], indices=[0])


def test_lengths_topk_gradient_maker():
    (g,), grads = G(op("LengthsTopK", ["x", "l"], ["v", "i"], k=3), ["v_grad", None])
    assert g.type == "LengthsTopKGradient" and list(g.input) == ["l", "i", "v_grad"]
    assert list(g.output) == ["x_grad"] and {a.name: a.value() for a in g.arg} == {"k": 3}
    assert grads == ["x_grad", None]
    assert G(op("LengthsTopK", ["x", "l"], ["v", "i"], k=3), [None, None]) == ([], [None, None])


def test_lengths_topk_bad_inputs(rng):
    feed(x=f32(rng, 5), x2=f32(rng, 5, 1), l=i32([2, 3]), lbad=i32([2, 2]), lneg=i32([6, -1]),
         lf=np.ones(2, np.float32), ix=i32([[1, 0], [2, 0]]), g=f32(rng, 2, 2), ixbad=i32([[1, 2], [0, 1]]),
         g3=f32(rng, 2, 3))
    with bad(V, r"op LengthsTopK #0: argument 'k' is required"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x", "l"], ["v", "i"]))
    with bad(V, r"op LengthsTopK #0: argument 'k' must be >= 1, got 0"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x", "l"], ["v", "i"], k=0))
    with bad(V, r"op LengthsTopK #0: input 0 blob 'x2' \(X\) must be 1-D, got \(5, 1\) float32"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x2", "l"], ["v", "i"], k=2))
    with bad(V, r"op LengthsTopK #0: input 1 blob 'lbad' \(lengths\) sums to 4, but input 0 blob 'x' \(X\) has 5 "
                r"elements"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x", "lbad"], ["v", "i"], k=2))
    assert_unwritten("v")
    with bad(V, r"op LengthsTopK #0: input 1 blob 'lneg' \(lengths\) holds -1 at position 1"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x", "lneg"], ["v", "i"], k=2))
    with bad(T, r"op LengthsTopK #0: input 1 blob 'lf'"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x", "lf"], ["v", "i"], k=2))
    with bad(V, r"op LengthsTopKGradient #0: input 1 blob 'ixbad' \(indices\) \(2, 2\) int32: index 2 at \[0, 1\] "
                r"is out of range \[0, 2\) \(the length of segment 0\)"):
        workspace.RunOperatorOnce(op("LengthsTopKGradient", ["l", "ixbad", "g"], ["dx"], k=2))
    assert_unwritten("dx")
    feed(ixneg=i32([[1, -1], [0, 1]]))  # -1 inside segment 0's length (2) is not padding
    with bad(V, r"op LengthsTopKGradient #0: input 1 blob 'ixneg' \(indices\) \(2, 2\) int32: index -1 at \[0, 1\] "
                r"is out of range \[0, 2\)"):
        workspace.RunOperatorOnce(op("LengthsTopKGradient", ["l", "ixneg", "g"], ["dx"], k=2))
    with bad(V, r"op LengthsTopKGradient #0: input 2 blob 'g3' \(dValues\) \(2, 3\) float32 must have shape "
                r"\(2, 2\): one row of k=2 per length of input 0 blob 'l' \(2,\) int32"):
        workspace.RunOperatorOnce(op("LengthsTopKGradient", ["l", "ix", "g3"], ["dx"], k=2))
    with bad(V, r"op LengthsTopKGradient #0: input 1 blob 'ix' \(indices\) \(2, 2\) int32 must have shape \(2, 3\)"):
        workspace.RunOperatorOnce(op("LengthsTopKGradient", ["l", "ix", "g3"], ["dx"], k=3))
    with bad(MemoryError, r"op LengthsTopK #0: output 0 blob 'v': tensor of .* elements is too large"):
        workspace.RunOperatorOnce(op("LengthsTopK", ["x", "l"], ["v", "i"], k=2 ** 62))
    v, ix = run("LengthsTopK", ["x", "l"], ["v", "i"], k=2)  # the workspace stays usable
    np.testing.assert_array_equal(ix, lengths_topk_ref(workspace.FetchBlob("x"), [2, 3], 2)[1])
