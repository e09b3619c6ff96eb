"""Index and range ops for variable-length sequences (csrc/ops/ranges.c: LengthsTile, LengthsRangeFill,
Range, LengthsGather, GatherRanges, LengthsPad, ScatterAssign, Mod) and their gradient makers
(recurrent/_grad_ranges.py): NumPy references, the finite-difference gradient of LengthsTile, bad input
with exact messages (outputs untouched, workspace usable) and the checks at net creation."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import G, f32, fails, feed, i32, op, run


def data_of(rng, dtype, *shape):
    return (rng.uniform(-50, 50, shape)).astype(dtype)


# ---------------------------------------------------------------- LengthsTile
@pytest.mark.parametrize("shape", [(4,), (4, 3), (4, 2, 3), (4, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_lengths_tile_forward(rng, shape, dtype):
    data = data_of(rng, dtype, *shape)
    lengths = i32([2, 0, 3, 1])
    feed(d=data, l=lengths)
    out = run("LengthsTile", ["d", "l"], ["o"])
    assert out.dtype == dtype and out.shape == (6,) + shape[1:]
    np.testing.assert_array_equal(out, np.repeat(data, lengths, axis=0))


def test_lengths_tile_empty(rng):
    feed(d=np.zeros((0, 3), np.float32), l=i32([]))
    assert run("LengthsTile", ["d", "l"], ["o"]).shape == (0, 3)
    feed(d=f32(rng, 2, 3), l=i32([0, 0]))
    assert run("LengthsTile", ["d", "l"], ["o"]).shape == (0, 3)


def test_lengths_tile_gradient(rng):
    o = op("LengthsTile", ["d", "l"], ["o"])
    check_grads(o, [f32(rng, 4, 3, lo=-2, hi=2), i32([1, 3, 0, 2])], indices=[0])
    check_grads(o, [f32(rng, 3, lo=-2, hi=2), i32([2, 1, 4])], indices=[0])
    ops, g_in = G(o, ["o_grad"])
    assert [x.type for x in ops] == ["LengthsSum"]
    assert list(ops[0].input) == ["o_grad", "l"] and list(ops[0].output) == ["d_grad"]
    assert g_in == ["d_grad", None]
    assert G(o, [None]) == ([], [None, None])
    # the gradient op sums each row's copies: a NumPy reference too
    g = f32(rng, 6, 2)
    feed(o_grad=g, l=i32([1, 3, 0, 2]))
    workspace.RunOperatorOnce(ops[0])
    ref = np.stack([g[0], g[1:4].sum(0), np.zeros(2, np.float32), g[4:6].sum(0)])
    np.testing.assert_allclose(workspace.FetchBlob("d_grad"), ref, rtol=1e-6)


def test_lengths_tile_bad_input(rng):
    keep = f32(rng, 2)
    feed(d=f32(rng, 3, 2), o=keep, l=i32([1, -1, 2]), l2=i32([1, 2]), l3=i32([[1, 2, 3]]))
    fails(ValueError, "op LengthsTile #0: input 1 blob 'l' (lengths) holds -1 at position 1; a length "
                      "must not "
          "be negative", "LengthsTile", ["d", "l"])
    fails(ValueError, "op LengthsTile #0: input 1 blob 'l2' (LENGTHS) of shape (2,) int32 must hold one "
                      "length "
          "per row of input 0 blob 'd' of shape (3, 2) float32", "LengthsTile", ["d", "l2"])
    fails(ValueError, "op LengthsTile #0: input 1 blob 'l3' (LENGTHS) must be 1-D, got (1, 3) int32",
          "LengthsTile", ["d", "l3"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()


# ---------------------------------------------------------------- LengthsRangeFill
def test_lengths_range_fill():
    for lengths in ([2, 0, 3, 1], [], [0, 0], [5]):
        feed(l=i32(lengths))
        out = run("LengthsRangeFill", ["l"], ["o"])
        ref = np.concatenate([np.arange(n) for n in lengths]) if lengths else np.zeros(0)
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, ref)
    feed(l=i32([3, -2]))
    fails(ValueError, "op LengthsRangeFill #0: input 0 blob 'l' (lengths) holds -2 at position 1; a "
                      "length must "
          "not be negative", "LengthsRangeFill", ["l"])
    feed(f=np.float32([1, 2]))
    with pytest.raises(TypeError, match="op LengthsRangeFill #0: input 0 blob 'f'"):
        workspace.RunOperatorOnce(op("LengthsRangeFill", ["f"], ["o"]))
    assert G(op("LengthsRangeFill", ["l"], ["o"]), ["o_grad"]) == ([], [None])


# ---------------------------------------------------------------- Range
@pytest.mark.parametrize("args", [(5,), (0,), (-3,), (2, 9), (9, 2), (2, 9, 3), (2, 10, 4), (10, 2, -3),
                                  (10, 2, 3), (-7, 8, 5), (-2147483648, 2147483647, 1 << 30)])
def test_range_int32(args):
    names = ["a", "b", "c"][:len(args)]
    feed(**{n: np.int32(v) for n, v in zip(names, args)})
    out = run("Range", names, ["o"])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.arange(*[np.int64(v) for v in args]))


@pytest.mark.parametrize("args", [(5.5,), (0.5, 3.0), (0.0, 1.0, 0.1), (3.0, -1.0, -0.7), (1.0, 1.0, 0.5),
                                  (2.0, 1.0, 0.5), (-1.25, 2.5, 0.25)])
def test_range_float32(args):
    names = ["a", "b", "c"][:len(args)]
    feed(**{n: np.float32(v) for n, v in zip(names, args)})
    out = run("Range", names, ["o"])
    f = [float(np.float32(v)) for v in args]
    ref = np.arange(*f)
    assert out.dtype == np.float32 and out.shape == ref.shape
    np.testing.assert_allclose(out, ref.astype(np.float32), rtol=1e-6, atol=1e-7)


def test_range_one_element_vectors():
    feed(a=i32([2]), b=i32([7]))
    np.testing.assert_array_equal(run("Range", ["a", "b"], ["o"]), np.arange(2, 7))


def test_range_bad_input():
    keep = i32([9, 9])
    feed(o=keep, a=np.int32(1), b=np.int32(5), z=np.int32(0), f=np.float32(2), v=i32([1, 2]),
         nan=np.float32(np.nan), big=np.float32(1e30), fs=np.float32(1e-30), f0=np.float32(0))
    fails(ValueError, "op Range #0: input 2 blob 'z' (step) must not be 0", "Range", ["a", "b", "z"])
    with pytest.raises(TypeError, match="op Range #0: input 1 blob 'f'"):
        workspace.RunOperatorOnce(op("Range", ["a", "f"], ["o"]))
    fails(ValueError, "op Range #0: input 1 blob 'v' (stop) must hold one value (a scalar), got (2,) int32",
          "Range", ["a", "v"])
    fails(ValueError, "op Range #0: input 0 blob 'v' (stop) must hold one value (a scalar), got (2,) int32",
          "Range", ["v"])
    fails(ValueError, "op Range #0: input 0 blob 'nan' (stop) must be finite, got nan", "Range", ["nan"])
    fails(ValueError, "op Range #0: (stop - start) / step = (1e+30 - 0) / 1e-30 asks for more than 2**31 - 1 "
          "values", "Range", ["f0", "big", "fs"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    assert G(op("Range", ["a", "b"], ["o"]), ["o_grad"]) == ([], [None, None])


# ---------------------------------------------------------------- LengthsGather
@pytest.mark.parametrize("shape", [(6,), (6, 2), (6, 2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_lengths_gather(rng, shape, dtype):
    items = data_of(rng, dtype, *shape)
    lengths = i32([2, 0, 3, 1])
    indices = i32([2, 0, 1, 2, 3])
    feed(it=items, l=lengths, i=indices)
    out = run("LengthsGather", ["it", "l", "i"], ["o"])
    segs = np.split(items, np.cumsum(lengths)[:-1])
    ref = np.concatenate([segs[k] for k in indices])
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, ref)
    feed(i=i32([]))
    assert run("LengthsGather", ["it", "l", "i"], ["o"]).shape == (0,) + shape[1:]


def test_lengths_gather_many_segments_reuses_scratch(rng):
    # the segment offsets live in the op's scratch, grown when the number of segments grows
    net = core.Net("lg")
    net.LengthsGather(["it", "l", "i"], ["o"])
    for L in (3, 700, 5, 1200):
        lengths = rng.randint(0, 3, L).astype(np.int32)
        items = f32(rng, int(lengths.sum()), 2)
        indices = rng.randint(0, L, 40).astype(np.int32)
        feed(it=items, l=lengths, i=indices)
        if L == 3:
            workspace.CreateNet(net)
        workspace.RunNet(net.Proto().name)
        segs = np.split(items, np.cumsum(lengths)[:-1])
        np.testing.assert_array_equal(workspace.FetchBlob("o"), np.concatenate([segs[k] for k in indices]))


def test_lengths_gather_bad_input(rng):
    keep = f32(rng, 2)
    feed(o=keep, it=f32(rng, 4, 2), l=i32([1, 3]), i=i32([1, 2]), neg=i32([-1]), l2=i32([1, 2]),
         ln=i32([5, -1]), i2=i32([[0]]))
    fails(IndexError, "op LengthsGather #0: input 2 blob 'i' (INDICES): index 2 at position 1 is out of "
                      "range "
          "[0, 2) (the segments of input 1 blob 'l')", "LengthsGather", ["it", "l", "i"])
    fails(IndexError, "op LengthsGather #0: input 2 blob 'neg' (INDICES): index -1 at position 0 is out "
                      "of range "
          "[0, 2) (the segments of input 1 blob 'l')", "LengthsGather", ["it", "l", "neg"])
    fails(ValueError, "op LengthsGather #0: input 1 blob 'l2' (lengths) of shape (2,) int32 sums to 3, "
                      "but input "
          "0 blob 'it' of shape (4, 2) float32 has 4 rows", "LengthsGather", ["it", "l2", "neg"])
    fails(ValueError, "op LengthsGather #0: input 1 blob 'ln' (lengths) holds -1 at position 1; a length "
                      "must "
          "not be negative", "LengthsGather", ["it", "ln", "neg"])
    fails(ValueError, "op LengthsGather #0: input 2 blob 'i2' (INDICES) must be 1-D, got (1, 1) int32",
          "LengthsGather", ["it", "l", "i2"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    assert G(op("LengthsGather", ["it", "l", "i"], ["o"]), ["o_grad"]) == ([], [None, None, None])


# ---------------------------------------------------------------- GatherRanges
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_gather_ranges(rng, dtype):
    data = data_of(rng, dtype, 10)
    ranges = i32([[[0, 2], [5, 0], [3, 4]], [[9, 1], [0, 0], [1, 3]]])
    feed(d=data, r=ranges)
    out, lengths = run("GatherRanges", ["d", "r"], ["o", "ol"])
    ref = np.concatenate([data[s:s + n] for s, n in ranges.reshape(-1, 2)])
    assert out.dtype == dtype and lengths.dtype == np.int32
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(lengths, [6, 4])
    feed(r=np.zeros((0, 2, 2), np.int32))
    out, lengths = run("GatherRanges", ["d", "r"], ["o", "ol"])
    assert out.shape == (0,) and lengths.shape == (0,)
    feed(e=np.zeros(0, dtype), r=i32([[[0, 0]]]))
    out, lengths = run("GatherRanges", ["e", "r"], ["o", "ol"])
    assert out.shape == (0,) and list(lengths) == [0]


def test_gather_ranges_bad_input(rng):
    keep = f32(rng, 2)
    feed(o=keep, d=f32(rng, 5), r=i32([[[0, 2]], [[3, 3]]]), rn=i32([[[-1, 1]]]), rl=i32([[[1, -1]]]),
         r2=i32([[0, 2]]), r0=np.zeros((2, 0, 2), np.int32), d2=f32(rng, 5, 1))
    fails(IndexError, "op GatherRanges #0: input 1 blob 'r' (RANGES): range 0 of example 1 (start 3, "
                      "length 3) is "
          "not within input 0 blob 'd' of shape (5,) float32", "GatherRanges", ["d", "r"], ["o", "ol"])
    fails(IndexError, "op GatherRanges #0: input 1 blob 'rn' (RANGES): range 0 of example 0 (start -1, "
                      "length 1) "
          "is not within input 0 blob 'd' of shape (5,) float32", "GatherRanges", ["d", "rn"], ["o", "ol"])
    fails(IndexError, "op GatherRanges #0: input 1 blob 'rl' (RANGES): range 0 of example 0 (start 1, "
                      "length -1) "
          "is not within input 0 blob 'd' of shape (5,) float32", "GatherRanges", ["d", "rl"], ["o", "ol"])
    fails(ValueError, "op GatherRanges #0: input 1 blob 'r2' (RANGES) must be (batch, ranges >= 1, 2) of "
          "(start, length) pairs, got (1, 2) int32", "GatherRanges", ["d", "r2"], ["o", "ol"])
    fails(ValueError, "op GatherRanges #0: input 1 blob 'r0' (RANGES) must be (batch, ranges >= 1, 2) of "
          "(start, length) pairs, got (2, 0, 2) int32", "GatherRanges", ["d", "r0"], ["o", "ol"])
    fails(ValueError, "op GatherRanges #0: input 0 blob 'd2' (DATA) must be 1-D, got (5, 1) float32",
          "GatherRanges", ["d2", "r"], ["o", "ol"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    assert G(op("GatherRanges", ["d", "r"], ["o", "ol"]), ["o_grad", None]) == ([], [None, None])


# ---------------------------------------------------------------- GatherRangesToDense
def grd_ref(data, ranges, lengths, key=None):
    """NumPy reference: per output j, rows of DATA[start:start+length] (KEY-sorted, stably) where the
    length is lengths[j], zeros elsewhere."""
    outs = []
    for j, L in enumerate(lengths):
        out = np.zeros((ranges.shape[0], L), data.dtype)
        for b in range(ranges.shape[0]):
            s0, n = ranges[b, j]
            if n == L:
                sl = np.arange(s0, s0 + n)
                if key is not None:
                    sl = sl[np.argsort(key[sl], kind="stable")]
                out[b] = data[sl]
        outs.append(out)
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("with_key", [False, True])
def test_gather_ranges_to_dense(rng, dtype, with_key):
    data = data_of(rng, dtype, 12)
    # example 0: both features; example 1: feature 0 empty, feature 1 of another length (zeros, counted)
    ranges = i32([[[2, 4], [0, 2]], [[0, 0], [6, 3]], [[8, 4], [10, 2]]])
    key = i32([5, 3, 9, 1, 1, 0, 7, 2, 4, 4, 8, 6])  # ties (1, 1) and (4, 4) keep their order
    feed(d=data, r=ranges, k=key)
    ins = ["d", "r", "k"] if with_key else ["d", "r"]
    outs = run("GatherRangesToDense", ins, ["o0", "o1"], lengths=[4, 2], max_mismatched_ratio=1.0)
    for got, want in zip(outs, grd_ref(data, ranges, [4, 2], key if with_key else None)):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    if with_key:  # the documented example of Caffe2's schema
        feed(d8=np.arange(1, 9, dtype=np.float32), r8=i32([[[2, 4], [0, 2]], [[0, 0], [6, 2]]]),
             k8=i32([0, 1, 3, 2, 1, 0, 1, 0]))
        o0, o1 = run("GatherRangesToDense", ["d8", "r8", "k8"], ["o0", "o1"], lengths=[4, 2])
        np.testing.assert_array_equal(o0, [[6, 5, 4, 3], [0, 0, 0, 0]])
        np.testing.assert_array_equal(o1, [[1, 2], [8, 7]])
    feed(r0=np.zeros((0, 2, 2), np.int32))
    o0, o1 = run("GatherRangesToDense", ["d", "r0"], ["o0", "o1"], lengths=[4, 2])
    assert o0.shape == (0, 4) and o1.shape == (0, 2)
    grads = G(op("GatherRangesToDense", ins, ["o0", "o1"], lengths=[4, 2]), ["g0", "g1"])
    assert grads == ([], [None] * len(ins))


def test_gather_ranges_to_dense_ratios_over_the_op_lifetime(rng):
    """Caffe2's counters: mismatched (and empty) ranges per output over all runs of one op; the ratio
    check uses max(rows seen, min_observation)."""
    feed(d=f32(rng, 10), good=i32([[[0, 2]], [[2, 2]]]), bad=i32([[[0, 1]], [[2, 2]]]),
         empty=i32([[[0, 0]], [[2, 2]]]))
    # 1 mismatch in 2 rows, min_observation 4: 4 * 0.25 = 1 >= 1 passes
    run("GatherRangesToDense", ["d", "bad"], ["o"], lengths=[2], min_observation=4, max_mismatched_ratio=0.25)
    with pytest.raises(ValueError, match=r"op GatherRangesToDense #0: output 0 blob 'o': 1 of the 2 ranges "
                       r"seen by this op are of another length than lengths\[j\], a ratio of 0.5, which "
                       r"exceeds max_mismatched_ratio=0.25 \(with min_observation=2\)"):
        run("GatherRangesToDense", ["d", "bad"], ["o"], lengths=[2], min_observation=2,
            max_mismatched_ratio=0.25)
    # in a net the op lives on: the second run sees 2 mismatches in 4 rows (4 * 0.4 = 1.6 < 2)
    net = core.Net("grd")
    net.GatherRangesToDense(["d", "bad"], ["o"], lengths=[2], min_observation=1, max_mismatched_ratio=0.6)
    workspace.CreateNet(net)
    workspace.RunNet(net)  # 1 of 2: 2 * 0.6 = 1.2 >= 1
    np.testing.assert_array_equal(workspace.FetchBlob("o")[0], [0, 0])
    net2 = core.Net("grd2")
    net2.GatherRangesToDense(["d", "bad"], ["o"], lengths=[2], min_observation=1, max_mismatched_ratio=0.4)
    workspace.CreateNet(net2)
    with pytest.raises(ValueError, match=r"1 of the 2 ranges .* exceeds max_mismatched_ratio=0.4"):
        workspace.RunNet(net2)
    with pytest.raises(ValueError, match=r"2 of the 4 ranges .* exceeds max_mismatched_ratio=0.4"):
        workspace.RunNet(net2)  # the counts are kept
    # empty ranges: only checked when max_empty_ratio < 1 (default 1: never)
    run("GatherRangesToDense", ["d", "empty"], ["o"], lengths=[2], min_observation=1)
    with pytest.raises(ValueError, match=r"output 0 blob 'o': 1 of the 2 ranges seen by this op are empty, a "
                       r"ratio of 0.5, which exceeds max_empty_ratio=0.2"):
        run("GatherRangesToDense", ["d", "empty"], ["o"], lengths=[2], min_observation=1, max_empty_ratio=0.2)
    # a mismatch ratio of 1 turns the check off
    run("GatherRangesToDense", ["d", "bad"], ["o"], lengths=[2], min_observation=1, max_mismatched_ratio=1.0)


def test_gather_ranges_to_dense_bad_input(rng):
    feed(d=f32(rng, 5), r=i32([[[0, 2], [3, 2]]]), ro=i32([[[0, 2], [4, 2]]]), rn=i32([[[-1, 2], [3, 2]]]),
         r1=i32([[[0, 2]]]), k4=i32([1, 2, 3, 4]), d2=f32(rng, 5, 1))
    pre = "op GatherRangesToDense #0: "
    fails(IndexError, pre + "input 1 blob 'ro' (RANGES): range 1 of example 0 (start 4, length 2) is not "
          "within input 0 blob 'd' of shape (5,) float32", "GatherRangesToDense", ["d", "ro"],
          ["o0", "o1"], lengths=[2, 2])
    fails(IndexError, pre + "input 1 blob 'rn' (RANGES): range 0 of example 0 (start -1, length 2) is not "
          "within input 0 blob 'd' of shape (5,) float32", "GatherRangesToDense", ["d", "rn"],
          ["o0", "o1"], lengths=[2, 2])
    fails(ValueError, pre + "input 1 blob 'r1' (RANGES) must be (batch, 2, 2) of (start, "
          "length) pairs, one range per output, got (1, 1, 2) int32", "GatherRangesToDense", ["d", "r1"],
          ["o0", "o1"], lengths=[2, 2])
    fails(ValueError, "op GatherRangesToDense #0: input 2 blob 'k4' (KEY) (4,) int32 must have one key per "
          "element of input 0 blob 'd' (5,) float32", "GatherRangesToDense", ["d", "r", "k4"], ["o0", "o1"],
          lengths=[2, 2])
    fails(ValueError, "op GatherRangesToDense #0: input 0 blob 'd2' (DATA) must be 1-D, got (5, 1) float32",
          "GatherRangesToDense", ["d2", "r"], ["o0", "o1"], lengths=[2, 2])
    fails(ValueError, pre + "argument 'lengths' must have one entry per output (2), got 1",
          "GatherRangesToDense", ["d", "r"], ["o0", "o1"], lengths=[2])
    fails(ValueError, pre + "argument 'lengths' must have one entry per output (2), got 0",
          "GatherRangesToDense", ["d", "r"], ["o0", "o1"])
    fails(ValueError, pre + "argument 'lengths': entry 1 is 0, must be in [1, 2147483647]",
          "GatherRangesToDense", ["d", "r"], ["o0", "o1"], lengths=[2, 0])
    fails(ValueError, "op GatherRangesToDense #0: argument 'min_observation' must be >= 1, got 0",
          "GatherRangesToDense", ["d", "r"], ["o0", "o1"], lengths=[2, 2], min_observation=0)


# ---------------------------------------------------------------- LengthsPad
@pytest.mark.parametrize("shape", [(6,), (6, 2), (6, 2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_lengths_pad(rng, shape, dtype):
    data = data_of(rng, dtype, *shape)
    lengths = i32([2, 0, 3, 1])
    feed(d=data, l=lengths)
    for pad, target in ((-1.0, 3), (7.0, 5)):
        out = run("LengthsPad", ["d", "l"], ["o"], padding_value=pad, target_length=target)
        ref = np.full((4 * target,) + shape[1:], pad, dtype)
        segs = np.split(data, np.cumsum(lengths)[:-1])
        for i, s in enumerate(segs):
            ref[i * target:i * target + len(s)] = s
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, ref)
    out = run("LengthsPad", ["d", "l"], ["o"], target_length=3)  # padding_value defaults to -1
    assert (out[3:6] == -1).all()


def test_lengths_pad_bad_input(rng):
    keep = f32(rng, 2)
    feed(o=keep, d=f32(rng, 5, 2), l=i32([2, 3]), l4=i32([1, 3]), di=i32(np.zeros((5,))))
    fails(ValueError, "op LengthsPad #0: input 1 blob 'l' (LENGTHS) holds 3 at position 1, above "
                      "target_length 2",
          "LengthsPad", ["d", "l"], target_length=2)
    fails(ValueError, "op LengthsPad #0: input 1 blob 'l4' (lengths) of shape (2,) int32 sums to 4, but "
                      "input 0 "
          "blob 'd' of shape (5, 2) float32 has 5 rows", "LengthsPad", ["d", "l4"], target_length=3)
    fails(ValueError, "op LengthsPad #0: argument target_length must be >= 1, got -1", "LengthsPad",
          ["d", "l"])
    fails(ValueError, "op LengthsPad #0: argument padding_value 0.5 must be a whole number in the int32 "
                      "range to "
          "pad input 0 blob 'di' of shape (5,) int32", "LengthsPad", ["di", "l"], target_length=3,
          padding_value=0.5)
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    assert G(op("LengthsPad", ["d", "l"], ["o"], target_length=3), ["o_grad"]) == ([], [None, None])


# ---------------------------------------------------------------- ScatterAssign
@pytest.mark.parametrize("shape", [(5,), (5, 3), (5, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_assign(rng, shape, dtype):
    data = data_of(rng, dtype, *shape)
    indices = i32([3, 0, 3, 1])  # 3 twice: the last one wins
    slices = data_of(rng, dtype, 4, *shape[1:])
    feed(d=data, i=indices, s=slices)
    out = run("ScatterAssign", ["d", "i", "s"], ["d"])
    ref = data.copy()
    for k, j in enumerate(indices):
        ref[j] = slices[k]
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, ref)
    # only the size of SLICES matters (as in Caffe2), and INDICES may have any shape
    feed(d=data, i=indices.reshape(2, 2), s=slices.reshape(-1))
    np.testing.assert_array_equal(run("ScatterAssign", ["d", "i", "s"], ["d"]), ref)


def test_scatter_assign_empty(rng):
    feed(d=np.zeros((0, 3), np.float32), i=i32([]), s=np.zeros((0, 3), np.float32))
    assert run("ScatterAssign", ["d", "i", "s"], ["d"]).shape == (0, 3)
    data = f32(rng, 3, 2)
    feed(d=data, i=i32([]), s=np.zeros((0, 2), np.float32))
    assert run("ScatterAssign", ["d", "i", "s"], ["d"]).tobytes() == data.tobytes()


def test_scatter_assign_bad_input(rng):
    data = f32(rng, 4, 2)
    feed(d=data, i=i32([1, 4]), neg=i32([2, -1]), s=f32(rng, 2, 2), s3=f32(rng, 3, 2),
         si=i32(np.zeros((2, 2))))
    fails(IndexError, "op ScatterAssign #0: input 1 blob 'i' (INDICES): index 4 at position 1 is out of "
                      "range "
          "[0, 4) (the rows of input 0 blob 'd' of shape (4, 2) float32)", "ScatterAssign", ["d", "i", "s"],
          ["d"])
    fails(IndexError, "op ScatterAssign #0: input 1 blob 'neg' (INDICES): index -1 at position 1 is out "
                      "of range "
          "[0, 4) (the rows of input 0 blob 'd' of shape (4, 2) float32)", "ScatterAssign",
          ["d", "neg", "s"], ["d"])
    # nothing written before the bad index was found
    assert workspace.FetchBlob("d").tobytes() == data.tobytes()
    feed(i=i32([1, 2]))
    fails(ValueError, "op ScatterAssign #0: input 2 blob 's3' (SLICES) of shape (3, 2) float32 must hold 4 "
          "elements: one row of input 0 blob 'd' of shape (4, 2) float32 per index of input 1 blob 'i' of "
          "shape "
          "(2,) int32", "ScatterAssign", ["d", "i", "s3"], ["d"])
    with pytest.raises(TypeError, match="op ScatterAssign #0: input 2 blob 'si'"):
        workspace.RunOperatorOnce(op("ScatterAssign", ["d", "i", "si"], ["d"]))
    fails(ValueError, "op ScatterAssign #0: input 0 blob 'd' and output 0 blob 'o' must be the same blob "
          "(ScatterAssign writes DATA in place)", "ScatterAssign", ["d", "i", "s"], ["o"])
    assert workspace.FetchBlob("d").tobytes() == data.tobytes()
    assert G(op("ScatterAssign", ["d", "i", "s"], ["d"]), ["d_grad"]) == ([], [None, None, None])


# ---------------------------------------------------------------- Mod
@pytest.mark.parametrize("divisor", [7, -7, 1, -1, 3])
@pytest.mark.parametrize("follow", [0, 1])
def test_mod(rng, divisor, follow):
    x = rng.randint(-100, 100, (4, 5)).astype(np.int32)
    x[0, :3] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0]
    feed(x=x)
    y = run("Mod", ["x"], ["y"], divisor=divisor, sign_follow_divisor=follow)
    x64 = x.astype(np.int64)
    ref = np.mod(x64, divisor) if follow else np.fmod(x64, divisor)
    assert y.dtype == np.int32 and y.shape == x.shape
    np.testing.assert_array_equal(y, ref)
    # in place
    y2 = run("Mod", ["x"], ["x"], divisor=divisor, sign_follow_divisor=follow)
    np.testing.assert_array_equal(y2, ref)


def test_mod_bad_input():
    feed(x=i32([1, 2]), f=np.float32([1]))
    fails(ValueError, "op Mod #0: argument divisor must be a non-zero int32 value, got 0", "Mod", ["x"],
          divisor=0)
    fails(ValueError, "op Mod #0: argument 'divisor' is required (a non-zero integer)", "Mod", ["x"])
    fails(ValueError, "op Mod #0: argument divisor must be a non-zero int32 value, got 4294967296", "Mod",
          ["x"], divisor=1 << 32)
    fails(ValueError, "op Mod #0: argument sign_follow_divisor must be 0 or 1, got 2", "Mod", ["x"],
          divisor=3, sign_follow_divisor=2)
    with pytest.raises(TypeError, match="op Mod #0: input 0 blob 'f'"):
        workspace.RunOperatorOnce(op("Mod", ["f"], ["o"], divisor=3))
    assert G(op("Mod", ["x"], ["y"], divisor=3), ["y_grad"]) == ([], [None])


# ---------------------------------------------------------------- net creation
@pytest.mark.parametrize("type_,inputs,outputs,args,exc,pattern", [
    ("LengthsTile", ["d", "l3"], ["o"], {}, ValueError,
     r"\(LENGTHS\) of shape \(3,\) int32 must hold one length"),
    ("LengthsRangeFill", ["d"], ["o"], {}, TypeError, r"input 0 blob 'd' must be int32"),
    ("Range", ["a", "d"], ["o"], {}, ValueError, r"input 1 blob 'd' \(stop\) must hold one value"),
    ("LengthsGather", ["d", "l3", "m"], ["o"], {}, ValueError, r"input 2 blob 'm' \(INDICES\) must be 1-D"),
    ("GatherRanges", ["v", "l3"], ["o", "ol"], {}, ValueError,
     r"\(RANGES\) must be \(batch, ranges >= 1, 2\)"),
    ("GatherRangesToDense", ["v", "l3"], ["o"], dict(lengths=[2]), ValueError,
     r"\(RANGES\) must be \(batch, 1, 2\)"),
    ("LengthsPad", ["m", "l3"], ["o"], dict(target_length=2, padding_value=0.5), ValueError,
     r"padding_value 0.5 must be a whole number"),
    ("ScatterAssign", ["d", "l3", "l3"], ["d"], {}, TypeError, r"input 2 blob 'l3'"),
    ("Mod", ["d"], ["o"], dict(divisor=2), TypeError, r"input 0 blob 'd' must be int32"),
    ("PackRNNSequence", ["v", "l3"], ["o"], {}, ValueError, r"\(values\) must have at least 2 dims"),
    ("UnpackRNNSequence", ["d", "l3"], ["o"], {}, ValueError, r"\(values\) must have at least 3 dims"),
])
def test_shapes_checked_at_net_creation(rng, type_, inputs, outputs, args, exc, pattern):
    feed(d=f32(rng, 4, 2), v=f32(rng, 5), l3=i32([1, 0, 1]), a=np.float32(0), m=i32(np.zeros((2, 2))))
    net = core.Net("early")
    getattr(net, type_)(inputs, outputs, **args)
    with pytest.raises(exc, match="op %s #0: .*%s" % (type_, pattern)):
        workspace.CreateNet(net)
    # the workspace stays usable
    feed(l=i32([1, 2]))
    np.testing.assert_array_equal(run("LengthsRangeFill", ["l"], ["r"]), [0, 0, 1])


# ---------------------------------------------------------------- PackRNNSequence / UnpackRNNSequence
def pack_ref(values, lengths):
    T, N = (int(lengths.max()) if lengths.size else 0), lengths.size
    out = np.zeros((T, N) + values.shape[1:], values.dtype)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    for c in range(N):
        out[:lengths[c], c] = values[offsets[c]:offsets[c + 1]]
    return out


def unpack_ref(packed, lengths):
    return np.concatenate([packed[:lengths[c], c] for c in range(lengths.size)]
                          + [np.zeros((0,) + packed.shape[2:], packed.dtype)])


@pytest.mark.parametrize("feature", [(3,), (2, 3), (0,)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pack_unpack_rnn_sequence_forward(rng, feature, dtype):
    lengths = i32([2, 3, 0, 1, 2])
    values = data_of(rng, dtype, 8, *feature)
    feed(v=values, l=lengths)
    packed = run("PackRNNSequence", ["v", "l"], ["p"])
    assert packed.dtype == dtype and packed.shape == (3, 5) + feature
    np.testing.assert_array_equal(packed, pack_ref(values, lengths))
    # Caffe2's doc example: [v1..v8], lengths [2, 3, 1, 2] -> columns [v1 v2], [v3 v4 v5], [v6], [v7 v8]
    feed(v=np.arange(1, 9, dtype=np.float32).reshape(8, 1), l=i32([2, 3, 1, 2]))
    np.testing.assert_array_equal(run("PackRNNSequence", ["v", "l"], ["p"])[..., 0],
                                  [[1, 3, 6, 7], [2, 4, 0, 8], [0, 5, 0, 0]])
    # Unpack inverts Pack, and reads only rows r < lengths[c] (a packed blob with more rows works)
    feed(p=packed, l=lengths)
    np.testing.assert_array_equal(run("UnpackRNNSequence", ["p", "l"], ["u"]), values)
    tall = data_of(rng, dtype, 6, 5, *feature)
    feed(p=tall)
    out = run("UnpackRNNSequence", ["p", "l"], ["u"])
    assert out.shape == (8,) + feature
    np.testing.assert_array_equal(out, unpack_ref(tall, lengths))


def test_pack_unpack_rnn_sequence_empty(rng):
    feed(v=np.zeros((0, 3), np.float32), l=i32([]))
    assert run("PackRNNSequence", ["v", "l"], ["p"]).shape == (0, 0, 3)
    assert run("UnpackRNNSequence", ["p", "l"], ["u"]).shape == (0, 3)
    feed(v=np.zeros((0, 3), np.float32), l=i32([0, 0]))
    assert run("PackRNNSequence", ["v", "l"], ["p"]).shape == (0, 2, 3)
    assert run("UnpackRNNSequence", ["p", "l"], ["u"]).shape == (0, 3)


def test_pack_unpack_rnn_sequence_gradient(rng):
    lengths = i32([2, 3, 0, 1])
    p = op("PackRNNSequence", ["v", "l"], ["p"])
    check_grads(p, [f32(rng, 6, 2, lo=-2, hi=2), lengths], indices=[0])
    u = op("UnpackRNNSequence", ["q", "l"], ["u"])
    check_grads(u, [f32(rng, 3, 4, 2, lo=-2, hi=2), lengths], indices=[0])
    ops, g_in = G(p, ["p_grad"])
    assert [(x.type, list(x.input), list(x.output)) for x in ops] == [
        ("UnpackRNNSequence", ["p_grad", "l"], ["v_grad"])]
    assert g_in == ["v_grad", None]
    ops, g_in = G(u, ["u_grad"])
    assert [(x.type, list(x.input), list(x.output)) for x in ops] == [
        ("PackRNNSequence", ["u_grad", "l"], ["q_grad"])]
    assert g_in == ["q_grad", None]
    assert G(p, [None]) == ([], [None, None])


def test_pack_unpack_rnn_sequence_bad_input(rng):
    keep = f32(rng, 2)
    feed(v=f32(rng, 5, 2), v1=f32(rng, 5), p=f32(rng, 3, 2, 2), o=keep, l=i32([2, 3]), ln=i32([2, -1, 4]),
         l3=i32([1, 1, 3]), lw=i32([2, 4]), l2d=i32([[2, 3]]), lf=np.float32([2, 3]))
    fails(ValueError, "op PackRNNSequence #0: input 0 blob 'v1' (values) must have at least 2 dims "
          "((rows, feature...)), got (5,) float32", "PackRNNSequence", ["v1", "l"])
    fails(ValueError, "op PackRNNSequence #0: input 1 blob 'lw' (lengths) of shape (2,) int32 sums to 6, "
          "but input 0 blob 'v' of shape (5, 2) float32 has 5 rows", "PackRNNSequence", ["v", "lw"])
    fails(ValueError, "op PackRNNSequence #0: input 1 blob 'ln' (lengths) holds -1 at position 1; a length "
          "must not be negative", "PackRNNSequence", ["v", "ln"])
    fails(ValueError, "op PackRNNSequence #0: input 1 blob 'l2d' (lengths) must be 1-D, got (1, 2) int32",
          "PackRNNSequence", ["v", "l2d"])
    with pytest.raises(TypeError, match="op PackRNNSequence #0: input 1 blob 'lf'"):
        workspace.RunOperatorOnce(op("PackRNNSequence", ["v", "lf"], ["o"]))
    feed(v8=np.zeros((1,) * 8, np.float32), l1=i32([1]))
    fails(ValueError, "op PackRNNSequence #0: input 0 blob 'v8' (values) of shape (1, 1, 1, 1, 1, 1, 1, 1) "
          "float32: the output would have 9 dims, more than the 8 a tensor may have", "PackRNNSequence",
          ["v8", "l1"])
    fails(ValueError, "op UnpackRNNSequence #0: input 0 blob 'v' (values) must have at least 3 dims "
          "((T, N, feature...)), got (5, 2) float32", "UnpackRNNSequence", ["v", "l"])
    fails(ValueError, "op UnpackRNNSequence #0: input 1 blob 'l3' (lengths) of shape (3,) int32 must hold "
          "one length per column (dim 1) of input 0 blob 'p' of shape (3, 2, 2) float32", "UnpackRNNSequence",
          ["p", "l3"])
    fails(ValueError, "op UnpackRNNSequence #0: input 1 blob 'lw' (lengths) holds 4, more than the 3 rows "
          "(dim 0) of input 0 blob 'p' of shape (3, 2, 2) float32", "UnpackRNNSequence", ["p", "lw"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
