"""Mask and padding ops (csrc/ops/mask.c: BooleanMask(+Gradient), BooleanMaskLengths, LengthsToWeights,
PadEmptySamples, DotProductWithPadding(+Gradient), RemoveDataBlocks, BooleanUnmask),
SparseLengthsPositionalWeightedSum (csrc/ops/lengths_reduce.c) and the gradient makers
(recurrent/_grad_mask.py): NumPy references, finite-difference gradients, bad input with exact messages
(outputs untouched, workspace usable) and the checks at net creation."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import G, f32, fails, feed, i32, op, run


# ---------------------------------------------------------------- BooleanMask
@pytest.mark.parametrize("shape", [(6,), (6, 3), (6, 2, 0), (6, 2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_boolean_mask_forward(rng, shape, dtype):
    data = (rng.uniform(-5, 5, shape) * 10).astype(dtype)
    mask = i32([1, 0, 0, 1, 1, 0])
    feed(d=data, m=mask)
    out, idx = run("BooleanMask", ["d", "m"], ["o", "oi"])
    assert out.dtype == dtype and out.shape == (3,) + shape[1:]
    np.testing.assert_array_equal(out, data[mask.astype(bool)])
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(idx, [0, 3, 4])
    # one output: the data only
    np.testing.assert_array_equal(run("BooleanMask", ["d", "m"], ["o1"]), data[mask.astype(bool)])


def test_boolean_mask_all_and_none(rng):
    data = f32(rng, 4, 2)
    feed(d=data, m=i32([0, 0, 0, 0]))
    out, idx = run("BooleanMask", ["d", "m"], ["o", "oi"])
    assert out.shape == (0, 2) and idx.shape == (0,)
    feed(m=i32([1, 1, 1, 1]))
    assert run("BooleanMask", ["d", "m"], ["o"]).tobytes() == data.tobytes()
    feed(e=np.zeros((0, 3), np.float32), me=i32([]))
    assert run("BooleanMask", ["e", "me"], ["o"]).shape == (0, 3)


@pytest.mark.parametrize("shape", [(5,), (5, 3), (5, 2, 2)])
def test_boolean_mask_gradient_op(rng, shape):
    mask = i32([0, 1, 1, 0, 1])
    g = f32(rng, 3, *shape[1:])
    feed(m=mask, g=g)
    dx = run("BooleanMaskGradient", ["m", "g"], ["dx"])
    ref = np.zeros(shape, np.float32)
    ref[mask.astype(bool)] = g
    assert dx.shape == shape
    np.testing.assert_array_equal(dx, ref)


def test_boolean_mask_gradient_by_finite_differences(rng):
    o = op("BooleanMask", ["d", "m"], ["o"])
    check_grads(o, [f32(rng, 5, 3, lo=-2, hi=2), i32([1, 0, 1, 1, 0])], indices=[0])
    ops, g_in = G(o, ["o_grad"])
    assert [x.type for x in ops] == ["BooleanMaskGradient"]
    assert list(ops[0].input) == ["m", "o_grad"] and list(ops[0].output) == ["d_grad"]
    assert g_in == ["d_grad", None]


def test_boolean_mask_lengths(rng):
    lengths = i32([1, 3, 0, 2])
    mask = i32([0, 1, 1, 0, 1, 1])
    feed(l=lengths, m=mask)
    out = run("BooleanMaskLengths", ["l", "m"], ["o"])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, 2, 0, 2])
    # agrees with BooleanMask applied to segmented data
    for _ in range(3):
        lengths = rng.randint(0, 4, 5).astype(np.int32)
        mask = rng.randint(0, 2, int(lengths.sum())).astype(np.int32)
        feed(l=lengths, m=mask)
        seg = np.repeat(np.arange(5), lengths)
        ref = np.bincount(seg[mask.astype(bool)], minlength=5)
        np.testing.assert_array_equal(run("BooleanMaskLengths", ["l", "m"], ["o"]), ref)


def test_boolean_mask_bad_input(rng):
    keep = np.full((2,), 7.0, np.float32)
    feed(o=keep, d=f32(rng, 4, 2), m=i32([1, 0, 2, 1]), m3=i32([1, 0, 1]), mf=np.ones(4, np.float32),
         m2=i32([[1, 0], [1, 1]]), s=np.float32(3))
    fails(ValueError, "op BooleanMask #0: input 1 blob 'm' (mask) holds 2 at position 2; a mask holds only 0 "
          "and 1", "BooleanMask", ["d", "m"])
    fails(ValueError, "op BooleanMask #0: input 1 blob 'm3' (mask) of shape (3,) int32 must hold "
          "one value per "
          "row of input 0 blob 'd' of shape (4, 2) float32", "BooleanMask", ["d", "m3"])
    fails(TypeError, "op BooleanMask #0: input 1 blob 'mf' must be int32, got (4,) float32", "BooleanMask",
          ["d", "mf"])
    fails(ValueError, "op BooleanMask #0: input 1 blob 'm2' (mask) must be 1-D, got (2, 2) int32",
          "BooleanMask", ["d", "m2"])
    fails(ValueError, "op BooleanMask #0: input 0 blob 's' (data) must have at least 1 dim, got () float32",
          "BooleanMask", ["s", "m"])
    feed(g=f32(rng, 3, 2), m=i32([1, 0, 1, 0]))
    fails(ValueError, "op BooleanMaskGradient #0: input 1 blob 'g' (the gradient of masked_data) of shape "
          "(3, 2) float32 must have one row per 1 of input 0 blob 'm' (mask) of shape (4,) int32: 2",
          "BooleanMaskGradient", ["m", "g"])
    feed(l=i32([2, 1]), m=i32([1, 0, 1, 1]))
    fails(ValueError, "op BooleanMaskLengths #0: input 0 blob 'l' (lengths) of shape (2,) int32 sums to 3, "
          "but input 1 blob 'm' (mask) of shape (4,) int32 holds 4 values", "BooleanMaskLengths", ["l", "m"])
    feed(l=i32([5, -1]))
    fails(ValueError, "op BooleanMaskLengths #0: input 0 blob 'l' (lengths) holds -1 at position 1; a length "
          "must not be negative", "BooleanMaskLengths", ["l", "m"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    feed(m=i32([1, 1, 0, 0]))
    assert run("BooleanMask", ["d", "m"], ["o"]).shape == (2, 2)


# ---------------------------------------------------------------- LengthsToWeights
@pytest.mark.parametrize("power", [None, 0.5, 1.0, 2.0, -1.5, 0.0, 0.3])
def test_lengths_to_weights(power):
    lengths = i32([3, 0, 1, 4, 2])
    feed(l=lengths)
    args = {} if power is None else {"power": power}
    w = run("LengthsToWeights", ["l"], ["w"], **args)
    p = np.float64(np.float32(0.5 if power is None else power))
    ref = np.concatenate([np.full(n, 1.0 / np.power(np.float64(n), p)) for n in lengths if n])
    ref = ref.astype(np.float32)
    assert w.dtype == np.float32 and w.shape == (10,)
    assert w.tobytes() == ref.tobytes()


def test_lengths_to_weights_empty_and_bad():
    feed(l=i32([]), z=i32([0, 0]))
    assert run("LengthsToWeights", ["l"], ["w"]).shape == (0,)
    assert run("LengthsToWeights", ["z"], ["w"]).shape == (0,)
    feed(w=np.full(2, 3.0, np.float32), l=i32([1, -2]), l2=i32([[1]]))
    fails(ValueError, "op LengthsToWeights #0: input 0 blob 'l' (lengths) holds -2 at position 1; a "
          "length must "
          "not be negative", "LengthsToWeights", ["l"], ["w"])
    fails(ValueError, "op LengthsToWeights #0: input 0 blob 'l2' (lengths) must be 1-D, got (1, 1) int32",
          "LengthsToWeights", ["l2"], ["w"])
    np.testing.assert_array_equal(workspace.FetchBlob("w"), [3.0, 3.0])
    with pytest.raises(ValueError, match="LengthsToWeights.*argument power must be finite, got inf"):
        workspace.RunOperatorOnce(op("LengthsToWeights", ["z"], ["w"], power=float("inf")))
    assert G(op("LengthsToWeights", ["l"], ["w"]), ["w_grad"]) == ([], [None])


# ---------------------------------------------------------------- PadEmptySamples
def pad_empty_ref(lengths, x):
    off = np.concatenate([[0], np.cumsum(lengths)])
    parts = []
    for s, n in enumerate(lengths):
        parts.append(x[off[s]:off[s + 1]] if n else np.zeros((1,) + x.shape[1:], x.dtype))
    return np.concatenate(parts) if parts else x[:0]


def test_pad_empty_samples(rng):
    lengths = i32([0, 2, 0, 0, 1, 3])
    a = f32(rng, 6, 3)
    b = rng.randint(-9, 9, (6,)).astype(np.int32)
    c = f32(rng, 6, 2, 2)
    feed(l=lengths, a=a, b=b, c=c)
    ol, oa, ob, oc = run("PadEmptySamples", ["l", "a", "b", "c"], ["ol", "oa", "ob", "oc"])
    np.testing.assert_array_equal(ol, [1, 2, 1, 1, 1, 3])
    assert ol.dtype == np.int32 and ob.dtype == np.int32
    for out, x in ((oa, a), (ob, b), (oc, c)):
        assert out.shape == (9,) + x.shape[1:]
        assert out.tobytes() == pad_empty_ref(lengths, x).tobytes()
    # the zero rows are written, not left from what the output held (same shape: the buffer is reused)
    feed(oa=np.full((9, 3), np.nan, np.float32), ob=np.full(9, 77, np.int32))
    oa2, ob2 = run("PadEmptySamples", ["l", "a", "b"], ["ol", "oa", "ob"])[1:]
    assert oa2.tobytes() == oa.tobytes() and ob2.tobytes() == ob.tobytes()
    # lengths only; no empty segment; no segments
    np.testing.assert_array_equal(run("PadEmptySamples", ["l"], ["ol"]), [1, 2, 1, 1, 1, 3])
    feed(l=i32([2, 4]))
    assert run("PadEmptySamples", ["l", "a"], ["ol", "oa"])[1].tobytes() == a.tobytes()
    feed(l=i32([]), e=np.zeros((0, 3), np.float32))
    ol, oe = run("PadEmptySamples", ["l", "e"], ["ol", "oe"])
    assert ol.shape == (0,) and oe.shape == (0, 3)


def test_pad_empty_samples_bad_input(rng):
    keep = np.full((3,), 5, np.int32)
    feed(ol=keep, l=i32([0, 2, 1]), a=f32(rng, 3, 2), b=f32(rng, 4, 2), s=np.float32(1))
    fails(ValueError, "op PadEmptySamples #0: input 2 blob 'b' (features) of shape (4, 2) float32 must have "
          "sum(lengths) = 3 rows (input 0 blob 'l' of shape (3,) int32)", "PadEmptySamples", ["l", "a", "b"],
          ["ol", "oa", "ob"])
    fails(ValueError, "op PadEmptySamples #0: input 1 blob 's' (features) must have at least 1 dim, got () "
          "float32", "PadEmptySamples", ["l", "s"], ["ol", "os"])
    fails(ValueError, "op PadEmptySamples #0: has 2 inputs (lengths and 1 features) but 1 outputs; "
          "it needs one "
          "output per input", "PadEmptySamples", ["l", "a"], ["ol"])
    feed(l=i32([4, -1]))
    fails(ValueError, "op PadEmptySamples #0: input 0 blob 'l' (lengths) holds -1 at position 1; a "
          "length must "
          "not be negative", "PadEmptySamples", ["l", "a"], ["ol", "oa"])
    assert workspace.FetchBlob("ol").tobytes() == keep.tobytes()
    # no gradient maker, as in Caffe2
    with pytest.raises(Exception, match="PadEmptySamples"):
        G(op("PadEmptySamples", ["l", "a"], ["ol", "oa"]), [None, "oa_grad"])


# ---------------------------------------------------------------- DotProductWithPadding
def dpp_ref(x, y, pad=0.0, replicate=False):
    n = x.shape[0]
    x = x.reshape(n, -1).astype(np.float64)
    y = y.reshape(n, -1).astype(np.float64)
    lo, sh = (x, y) if x.shape[1] >= y.shape[1] else (y, x)
    ds = sh.shape[1]
    if replicate:
        if ds == 0:
            return np.zeros(n, np.float32)
        return (lo.reshape(n, -1, ds) * sh[:, None, :]).sum(axis=(1, 2)).astype(np.float32)
    return ((lo[:, :ds] * sh).sum(1) + np.float64(np.float32(pad)) * lo[:, ds:].sum(1)).astype(np.float32)


@pytest.mark.parametrize("dx,dy", [(4, 4), (6, 2), (2, 6), (3, 0), (0, 0), (5, 3)])
@pytest.mark.parametrize("pad", [0.0, 1.5])
def test_dot_product_with_padding(rng, dx, dy, pad):
    x, y = f32(rng, 3, dx), f32(rng, 3, dy)
    feed(x=x, y=y)
    z = run("DotProductWithPadding", ["x", "y"], ["z"], pad_value=pad)
    assert z.shape == (3,)
    np.testing.assert_allclose(z, dpp_ref(x, y, pad), rtol=1e-6, atol=1e-6)
    if dx == dy or (min(dx, dy) and max(dx, dy) % min(dx, dy) == 0):
        z = run("DotProductWithPadding", ["x", "y"], ["z"], pad_value=pad, replicate=1)
        np.testing.assert_allclose(z, dpp_ref(x, y, replicate=True), rtol=1e-6, atol=1e-6)


def test_dot_product_with_padding_rank3_and_1d(rng):
    x, y = f32(rng, 2, 2, 3), f32(rng, 2, 3, 1)
    feed(x=x, y=y)
    np.testing.assert_allclose(run("DotProductWithPadding", ["x", "y"], ["z"], replicate=1),
                               dpp_ref(x, y, replicate=True), rtol=1e-6)
    x1, y1 = f32(rng, 5), f32(rng, 5)
    feed(x=x1, y=y1)
    np.testing.assert_allclose(run("DotProductWithPadding", ["x", "y"], ["z"]), x1 * y1, rtol=1e-6)


@pytest.mark.parametrize("dx,dy,replicate",
                         [(5, 3, 0), (3, 5, 0), (4, 4, 0), (6, 2, 1), (2, 6, 1), (3, 3, 1)])
def test_dot_product_with_padding_gradient_by_finite_differences(rng, dx, dy, replicate):
    o = op("DotProductWithPadding", ["x", "y"], ["z"], pad_value=0.7, replicate=replicate)
    check_grads(o, [f32(rng, 3, dx, lo=-2, hi=2), f32(rng, 3, dy, lo=-2, hi=2)])
    ops, g_in = G(o, ["z_grad"])
    assert [x.type for x in ops] == ["DotProductWithPaddingGradient"]
    assert list(ops[0].input) == ["x", "y", "z_grad"] and g_in == ["x_grad", "y_grad"]
    args = {a.name: a.value() for a in ops[0].arg}
    assert args == pytest.approx({"pad_value": 0.7, "replicate": replicate})


def test_dot_product_with_padding_gradient_op(rng):
    x, y, g = f32(rng, 2, 6), f32(rng, 2, 2), f32(rng, 2)
    feed(x=x, y=y, g=g)
    dx, dy = run("DotProductWithPaddingGradient", ["x", "y", "g"], ["dx", "dy"], replicate=1)
    np.testing.assert_allclose(dx, g[:, None] * np.tile(y, 3), rtol=1e-6)
    np.testing.assert_allclose(dy, g[:, None] * x.reshape(2, 3, 2).sum(1), rtol=1e-5)
    dx, dy = run("DotProductWithPaddingGradient", ["x", "y", "g"], ["dx", "dy"], pad_value=2.0)
    np.testing.assert_allclose(dx, g[:, None] * np.concatenate([y, np.full((2, 4), 2.0)], 1), rtol=1e-6)
    np.testing.assert_allclose(dy, g[:, None] * x[:, :2], rtol=1e-6)


def test_dot_product_with_padding_bad_input(rng):
    keep = np.full((2,), 4.0, np.float32)
    feed(z=keep, x=f32(rng, 2, 5), y=f32(rng, 2, 3), y3=f32(rng, 3, 3), y1=f32(rng, 2), e=f32(rng, 2, 0),
         xi=i32([[1], [2]]), g=f32(rng, 3))
    fails(ValueError, "op DotProductWithPadding #0: with replicate=1 the longer row (5 elements) must be a "
          "multiple of the shorter (3), a non-empty one: input 0 blob 'x' (2, 5) float32, input 1 blob 'y' "
          "(2, 3) float32", "DotProductWithPadding", ["x", "y"], ["z"], replicate=1)
    fails(ValueError, "op DotProductWithPadding #0: with replicate=1 the longer row (5 elements) must be a "
          "multiple of the shorter (0), a non-empty one: input 0 blob 'x' (2, 5) float32, input 1 blob 'e' "
          "(2, 0) float32", "DotProductWithPadding", ["x", "e"], ["z"], replicate=1)
    fails(ValueError, "op DotProductWithPadding #0: input 0 blob 'x' (2, 5) float32 and input 1 blob 'y3' "
          "(3, 3) float32 must have the same number of dims and the same dim 0", "DotProductWithPadding",
          ["x", "y3"], ["z"])
    fails(ValueError, "op DotProductWithPadding #0: input 0 blob 'x' (2, 5) float32 and input 1 blob 'y1' "
          "(2,) float32 must have the same number of dims and the same dim 0", "DotProductWithPadding",
          ["x", "y1"], ["z"])
    fails(TypeError, "op DotProductWithPadding #0: input 0 blob 'xi' must be float32, got (2, 1) int32",
          "DotProductWithPadding", ["xi", "y"], ["z"])
    fails(ValueError, "op DotProductWithPadding #0: argument replicate must be 0 or 1, got 3",
          "DotProductWithPadding", ["x", "y"], ["z"], replicate=3)
    fails(ValueError, "op DotProductWithPaddingGradient #0: input 2 blob 'g' (dZ) of shape (3,) "
          "float32 must be "
          "(2,), one value per row of input 0 blob 'x' (2, 5) float32", "DotProductWithPaddingGradient",
          ["x", "y", "g"], ["dx", "dy"])
    assert workspace.FetchBlob("z").tobytes() == keep.tobytes()
    assert run("DotProductWithPadding", ["x", "y"], ["z"]).shape == (2,)


# ---------------------------------------------------------------- SparseLengthsPositionalWeightedSum
def slpws_ref(data, w, idx, lengths):
    off = np.concatenate([[0], np.cumsum(lengths)])
    out = np.zeros((len(lengths),) + data.shape[1:], np.float32)
    for s, n in enumerate(lengths):
        if n:
            rows = data[idx[off[s]:off[s + 1]]].astype(np.float64)
            wk = w[:n].astype(np.float64).reshape((n,) + (1,) * (data.ndim - 1))
            out[s] = np.cumsum(rows * wk, axis=0)[-1].astype(np.float32)
    return out


@pytest.mark.parametrize("rest", [(), (3,), (2, 2)])
def test_sparse_lengths_positional_weighted_sum(rng, rest):
    data = f32(rng, 5, *rest)
    w = f32(rng, 4)
    idx = i32([4, 0, 0, 2, 1, 3, 4])
    lengths = i32([3, 0, 4])
    feed(d=data, w=w, i=idx, l=lengths)
    out = run("SparseLengthsPositionalWeightedSum", ["d", "w", "i", "l"], ["o"])
    assert out.shape == (3,) + rest
    assert out.tobytes() == slpws_ref(data, w, idx, lengths).tobytes()
    # the same as SparseLengthsWeightedSum with the weights gathered by position
    pos_w = np.concatenate([w[:n] for n in lengths])
    feed(pw=pos_w)
    assert run("SparseLengthsWeightedSum", ["d", "pw", "i", "l"], ["o2"]).tobytes() == out.tobytes()


def test_sparse_lengths_positional_weighted_sum_bad_input(rng):
    keep = np.full((2, 2), 1.0, np.float32)
    feed(o=keep, d=f32(rng, 3, 2), w=f32(rng, 2), w2=f32(rng, 2, 1), i=i32([0, 2, 1, 1]), l=i32([1, 3]))
    fails(ValueError, "op SparseLengthsPositionalWeightedSum #0: input 3 blob 'l' (lengths): length 3 at "
          "position 1 exceeds the 2 positional weights of input 1 blob 'w' of shape (2,) float32",
          "SparseLengthsPositionalWeightedSum", ["d", "w", "i", "l"])
    feed(l=i32([2, 2]), i=i32([0, 2, 1, 5]))
    fails(IndexError, "op SparseLengthsPositionalWeightedSum #0: input 2 blob 'i': index 5 at "
          "position 3 is out "
          "of range [0, 3) (the rows of input 0 blob 'd' of shape (3, 2) float32)",
          "SparseLengthsPositionalWeightedSum", ["d", "w", "i", "l"])
    fails(ValueError, "op SparseLengthsPositionalWeightedSum #0: input 1 blob 'w2' (positional weights) must "
          "have 1 dim, got (2, 1) float32", "SparseLengthsPositionalWeightedSum", ["d", "w2", "i", "l"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    with pytest.raises(Exception, match="SparseLengthsPositionalWeightedSum"):
        G(op("SparseLengthsPositionalWeightedSum", ["d", "w", "i", "l"], ["o"]), ["o_grad"])


# ---------------------------------------------------------------- RemoveDataBlocks
def rdb_ref(data, idx):
    keep = np.ones(data.shape[0], bool)
    keep[np.asarray(idx, np.int64)] = False
    return data[keep]


@pytest.mark.parametrize("shape", [(7,), (7, 3), (7, 2, 2), (7, 0), (1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_remove_data_blocks(rng, shape, dtype):
    data = (rng.uniform(-5, 5, shape) * 10).astype(dtype)
    n = shape[0]
    for idx in ([0], [n - 1], list(range(n)), [n - 1, 0, n - 1, 0], rng.randint(0, n, 5).tolist()):
        feed(d=data, i=i32(idx))
        out = run("RemoveDataBlocks", ["d", "i"], ["o"])
        ref = rdb_ref(data, idx)
        assert out.dtype == dtype and out.shape == ref.shape
        assert out.tobytes() == ref.tobytes()
    # no indices: a copy (an empty float array is accepted, as in Caffe2)
    for empty in (i32([]), np.zeros(0, np.float32)):
        feed(i=empty)
        assert run("RemoveDataBlocks", ["d", "i"], ["o"]).tobytes() == data.tobytes()


def test_remove_data_blocks_empty_data():
    feed(d=np.zeros((0, 3), np.float32), i=i32([]))
    assert run("RemoveDataBlocks", ["d", "i"], ["o"]).shape == (0, 3)


def test_remove_data_blocks_bad_input(rng):
    keep = np.full((2,), 7.0, np.float32)
    feed(o=keep, d=f32(rng, 4, 2), i=i32([1, 4]), ineg=i32([0, -1]), if32=np.ones(2, np.float32),
         i2=i32([[1], [2]]), s=np.float32(3))
    fails(ValueError, "op RemoveDataBlocks #0: input 1 blob 'i' (indices) holds 4 at position 1; an index "
          "must be in [0, 4) (the rows of input 0 blob 'd' of shape (4, 2) float32)",
          "RemoveDataBlocks", ["d", "i"])
    fails(ValueError, "op RemoveDataBlocks #0: input 1 blob 'ineg' (indices) holds -1 at position 1; an "
          "index must be in [0, 4) (the rows of input 0 blob 'd' of shape (4, 2) float32)",
          "RemoveDataBlocks", ["d", "ineg"])
    fails(TypeError, "op RemoveDataBlocks #0: input 1 blob 'if32' must be int32, got (2,) float32",
          "RemoveDataBlocks", ["d", "if32"])
    fails(ValueError, "op RemoveDataBlocks #0: input 1 blob 'i2' (indices) must be 1-D, got (2, 1) int32",
          "RemoveDataBlocks", ["d", "i2"])
    fails(ValueError, "op RemoveDataBlocks #0: input 0 blob 's' (data) must have at least 1 dim, got () "
          "float32", "RemoveDataBlocks", ["s", "i"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    # in place is refused (the output would be resized under the input)
    with pytest.raises(ValueError):
        workspace.RunOperatorOnce(op("RemoveDataBlocks", ["d", "i"], ["d"]))
    # no gradient, as in Caffe2 (SHOULD_NOT_DO_GRADIENT)
    with pytest.raises(Exception, match="RemoveDataBlocks"):
        G(op("RemoveDataBlocks", ["d", "i"], ["o"]), ["o_grad"])
    feed(i=i32([3]))
    np.testing.assert_array_equal(run("RemoveDataBlocks", ["d", "i"], ["o"]), workspace.FetchBlob("d")[:3])


# ---------------------------------------------------------------- BooleanUnmask
def unmask_ref(*pairs):
    """Caffe2's code: position p takes the next value of the first mask holding 1 at p."""
    masks, values = pairs[0::2], pairs[1::2]
    out = np.zeros(len(masks[0]), values[0].dtype)
    nxt = [0] * len(masks)
    for p in range(len(out)):
        k = next(k for k, m in enumerate(masks) if m[p])
        out[p] = values[k][nxt[k]]
        nxt[k] += 1
    assert nxt == [len(v) for v in values]
    return out


@pytest.mark.parametrize("N", [2, 3, 7, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("seed", range(3))
def test_boolean_unmask_random_splits(N, dtype, seed):
    """Caffe2's test: a random split of the positions into disjoint masks gives back every value."""
    r = np.random.RandomState(seed * 100 + N)
    all_value = (r.rand(N) * N).astype(dtype)
    M = r.randint(1, N)
    pieces = np.split(r.permutation(N), sorted(r.randint(1, N, size=M)))
    blobs, names = {}, []
    for k, piece in enumerate(pieces):
        mask = np.zeros(N, np.int32)
        mask[piece] = 1
        blobs["m%d" % k], blobs["v%d" % k] = mask, all_value[np.sort(piece)]
        names += ["m%d" % k, "v%d" % k]
    feed(**blobs)
    out = run("BooleanUnmask", names, ["o"])
    assert out.dtype == dtype
    assert out.tobytes() == all_value.tobytes()
    assert out.tobytes() == unmask_ref(*[blobs[n] for n in names]).tobytes()


def test_boolean_unmask_caffe2_doc_example_and_overlaps():
    feed(m1=i32([1, 0, 1, 0, 0]), v1=np.array([1.0, 3.0], np.float32), m2=i32([0, 1, 0, 0, 0]),
         v2=np.array([2.0], np.float32), m3=i32([0, 0, 0, 1, 1]), v3=np.array([4.0, 5.0], np.float32))
    np.testing.assert_array_equal(run("BooleanUnmask", ["m1", "v1", "m2", "v2", "m3", "v3"], ["o"]),
                                  [1, 2, 3, 4, 5])
    # overlapping masks: the first mask holding 1 takes the position; a later one takes nothing there
    feed(a=i32([1, 0, 1]), va=np.array([10, 30], np.int32), b=i32([1, 1, 1]), vb=np.array([20], np.int32))
    np.testing.assert_array_equal(run("BooleanUnmask", ["a", "va", "b", "vb"], ["o"]), [10, 20, 30])
    # Caffe2's doc example 2 (values2 = [2, 2] for mask2 = [1, 1] behind mask1 = [1, 0]) fails in Caffe2's
    # code too: mask2 takes one position, so it must hold one value
    feed(m1=i32([1, 0]), v1=np.array([1.0], np.float32), m2=i32([1, 1]), v2=np.array([2.0, 2.0], np.float32))
    fails(ValueError, "op BooleanUnmask #0: input 3 blob 'v2' (values) of shape (2,) float32 must hold one "
                      "value "
          "per position where input 2 blob 'm2' (mask) is the first mask holding 1: 1",
          "BooleanUnmask", ["m1", "v1", "m2", "v2"])
    feed(v2=np.array([2.0], np.float32))
    np.testing.assert_array_equal(run("BooleanUnmask", ["m1", "v1", "m2", "v2"], ["o"]), [1, 2])
    # one pair; empty masks and values; NaN payloads and -0.0 moved as bits
    bits = np.array([0x7fc01234, 0x80000000], np.uint32).view(np.float32)
    feed(m=i32([1, 1]), v=bits, e=i32([]), ev=np.zeros(0, np.float32))
    assert run("BooleanUnmask", ["m", "v"], ["o"]).tobytes() == bits.tobytes()
    assert run("BooleanUnmask", ["e", "ev", "e", "ev"], ["o"]).shape == (0,)


def test_boolean_unmask_bad_input(rng):
    keep = np.full((2,), 7.0, np.float32)
    feed(o=keep, m=i32([1, 0, 1]), v=f32(rng, 2), n=i32([0, 1, 0]), w=f32(rng, 1), m2=i32([1, 2, 0]),
         short=i32([1, 0]), z=i32([0, 0, 0]), vi=i32([5]), v2=f32(rng, 2, 1), mf=np.ones(3, np.float32),
         vs=f32(rng, 3))
    fails(ValueError, "op BooleanUnmask #0: no mask holds 1 at position 1, so it has no value (2 masks of "
                      "length 3, "
          "the first input 0 blob 'm')", "BooleanUnmask", ["m", "v", "z", "w"])
    fails(ValueError, "op BooleanUnmask #0: input 1 blob 'vs' (values) of shape (3,) float32 must hold one "
                      "value "
          "per position where input 0 blob 'm' (mask) is the first mask holding 1: 2",
          "BooleanUnmask", ["m", "vs", "n", "w"])
    fails(ValueError, "op BooleanUnmask #0: input 2 blob 'm2' (mask) holds 2 at position 1; a mask holds "
                      "only 0 "
          "and 1", "BooleanUnmask", ["m", "v", "m2", "w"])
    fails(ValueError, "op BooleanUnmask #0: input 2 blob 'short' (mask) of shape (2,) int32 must have the "
                      "length "
          "of input 0 blob 'm' (mask) of shape (3,) int32", "BooleanUnmask", ["m", "v", "short", "w"])
    fails(TypeError, "op BooleanUnmask #0: input 3 blob 'vi' (values) of shape (1,) int32 must have the "
                     "dtype of "
          "input 1 blob 'v' (values) of shape (2,) float32", "BooleanUnmask", ["m", "v", "n", "vi"])
    fails(ValueError, "op BooleanUnmask #0: input 1 blob 'v2' (values) must be 1-D, got (2, 1) float32",
          "BooleanUnmask", ["m", "v2"])
    fails(TypeError, "op BooleanUnmask #0: input 0 blob 'mf' must be int32, got (3,) float32",
          "BooleanUnmask", ["mf", "v"])
    fails(ValueError, "op BooleanUnmask #0: takes (mask, values) pairs: an even number of inputs, got 3",
          "BooleanUnmask", ["m", "v", "n"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()  # nothing written
    # no gradient (Caffe2: NO_GRADIENT)
    ops, g = G(op("BooleanUnmask", ["m", "v", "n", "w"], ["o"]), ["o_grad"])
    assert ops == [] and g == [None] * 4
    np.testing.assert_array_equal(run("BooleanUnmask", ["m", "v", "n", "w"], ["o"]),
                                  unmask_ref(*[workspace.FetchBlob(b) for b in ["m", "v", "n", "w"]]))


# ---------------------------------------------------------------- net creation
@pytest.mark.parametrize("type_,inputs,pattern", [
    ("BooleanMask", ["d", "m3"], r"input 1 blob 'm3' \(mask\) of shape \(3,\) int32 must hold one "
        "value per row"),
    ("DotProductWithPadding", ["d", "y"], r"must have the same number of dims and the same dim 0"),
    ("LengthsToWeights", ["d"], r"input 0 blob 'd' must be int32"),
    ("PadEmptySamples", ["l", "s"], r"input 1 blob 's' \(features\) must have at least 1 dim"),
    ("SparseLengthsPositionalWeightedSum", ["d", "w2", "i", "l"], r"\(positional weights\) must have 1 dim"),
    ("RemoveDataBlocks", ["s", "i"], r"input 0 blob 's' \(data\) must have at least 1 dim"),
    ("BooleanUnmask", ["m3", "y"], r"input 1 blob 'y' \(values\) must be 1-D, got \(3, 2\) float32"),
])
def test_shapes_checked_at_net_creation(rng, type_, inputs, pattern):
    feed(d=f32(rng, 4, 2), m3=i32([1, 0, 1]), y=f32(rng, 3, 2), l=i32([4]), s=np.float32(1),
         w2=f32(rng, 2, 1), i=i32([0, 1, 2, 3]))
    net = core.Net("early")
    outs = ["o%d" % k for k in range(len(inputs))] if type_ == "PadEmptySamples" else ["o"]
    getattr(net, type_)(inputs, outs)
    with pytest.raises(ValueError if type_ != "LengthsToWeights" else TypeError, match=pattern):
        workspace.CreateNet(net)
