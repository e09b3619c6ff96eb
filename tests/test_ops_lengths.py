"""The lengths ops (csrc/ops/lengths.c): PackSegments, UnpackSegments, AddPadding, RemovePadding,
GatherPadding, LengthsToSegmentIds, LengthsToRanges, LengthsToOffsets, SegmentIdsToLengths, and SequenceMask's
modes
(csrc/ops/batch.c); their gradient makers (recurrent/_grad_lengths.py, _grad_batch.py). NumPy references,
finite-difference gradients, bad input with exact messages, and ragged sequences packed for an LSTM."""

import numpy as np
import pytest

from recurrent import core, rnn_cell, workspace
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads
from test_ops_math import f32, feed, op, run


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def ops_of(ops):
    return [(p.type, list(p.input), list(p.output), sorted((a.name, a.value()) for a in p.arg)) for p in ops]


def raises(exc, msg, o):
    with pytest.raises(exc, match=msg):
        workspace.RunOperatorOnce(o)


# ================================================================ references
def offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def pack_ref(lengths, x, T=None, pad=0.0):
    T = (max(lengths) if len(lengths) else 0) if T is None else T
    out = np.full((len(lengths), T) + x.shape[1:], pad, dtype=x.dtype)
    mask = np.zeros((len(lengths), T), np.int32)
    for i, (a, n) in enumerate(zip(offsets(lengths)[:-1], lengths)):
        out[i, :n] = x[a:a + n]
        mask[i, :n] = 1
    return out, mask


def unpack_ref(lengths, packed):
    parts = [packed[i, :n] for i, n in enumerate(lengths)]
    return np.concatenate(parts) if parts else np.zeros((0,) + packed.shape[2:], packed.dtype)


def add_padding_ref(x, lengths, ps, pe, start, end):
    lengths = [x.shape[0]] if lengths is None else lengths
    block = x.shape[1:]
    sp = np.zeros(block, x.dtype) if start is None else np.asarray(start).reshape(block)
    ep = sp if end is None else np.asarray(end).reshape(block)
    rows = []
    for a, n in zip(offsets(lengths)[:-1], lengths):
        rows += [sp] * ps + list(x[a:a + n]) + [ep] * pe
    out = np.array(rows, x.dtype).reshape((-1,) + block)
    return out, np.asarray(lengths, np.int32) + ps + pe


def remove_padding_ref(x, lengths, ps, pe):
    lengths = [x.shape[0]] if lengths is None else lengths
    rows = []
    for a, n in zip(offsets(lengths)[:-1], lengths):
        rows += list(x[a + ps:a + n - pe])
    out = np.array(rows, x.dtype).reshape((-1,) + x.shape[1:])
    return out, np.asarray(lengths, np.int32) - ps - pe


def gather_padding_ref(x, lengths, ps, pe):
    s = np.zeros(x.shape[1:])
    e = np.zeros(x.shape[1:])
    for a, n in zip(offsets(lengths)[:-1], lengths):
        s += x[a:a + ps].astype(np.float64).sum(0)
        e += x[a + n - pe:a + n].astype(np.float64).sum(0)
    return s, e


def mask_ref(x, mode, v=None, axis=1, batch=None, repeat=None, radius=10, fill=-np.inf):
    nd = x.ndim
    a = axis % nd
    b = None if batch is None else batch % nd
    r = nd if repeat is None else repeat % nd
    B = int(np.prod(x.shape[:b + 1])) if b is not None else 1
    rows = int(np.prod(x.shape[(b + 1 if b is not None else 0):a]))
    cols, D = int(np.prod(x.shape[a:r])), int(np.prod(x.shape[r:]))
    y = x.astype(np.float64).reshape(B, rows, cols, D).copy()
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    if mode == "sequence":
        m = j >= np.asarray(v)[:, None]
    elif mode == "window":
        c = np.asarray(v, np.int64)[:, None]
        m = (j < c - radius) | (j > c + radius)
    else:
        m = {"upper": j > i, "lower": j < i, "upperdiag": j >= i, "lowerdiag": j <= i}[mode]
    y[:, np.broadcast_to(m, (rows, cols))] = fill
    return y.reshape(x.shape)


# ================================================================ PackSegments / UnpackSegments
PACK_CASES = [([2, 0, 3, 1], (6, 3)), ([4], (4,)), ([1, 2], (3, 2, 2)), ([0, 0], (0, 2)), ([], (0, 3)),
              ([3, 3, 1], (7,))]


@pytest.mark.parametrize("lengths,shape", PACK_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pack_unpack(rng, lengths, shape, dtype):
    x = (rng.uniform(-5, 5, shape) * (1 if dtype == np.float32 else 100)).astype(dtype)
    lengths = np.array(lengths, np.int32)
    feed(x=x, len=lengths)
    packed = run("PackSegments", ["len", "x"], ["p"])
    ref, _ = pack_ref(lengths, x)
    assert packed.dtype == dtype and packed.shape == ref.shape
    np.testing.assert_array_equal(packed, ref)
    back = run("UnpackSegments", ["len", "p"], ["u"])
    assert back.dtype == dtype and back.shape == x.shape
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("max_length", [4, 7])
def test_pack_max_length_presence_mask_pad_minf(rng, max_length):
    x = f32(rng, 6, 2)
    lengths = np.array([2, 0, 4], np.int32)
    feed(x=x, len=lengths)
    p, m = run("PackSegments", ["len", "x"], ["p", "m"], max_length=max_length, pad_minf=1,
               return_presence_mask=1)
    ref, mref = pack_ref(lengths, x, max_length, -np.inf)
    assert p.shape == (3, max_length, 2) and m.dtype == np.int32
    np.testing.assert_array_equal(p, ref)
    np.testing.assert_array_equal(m, mref)
    # without pad_minf the padding is +0.0
    p = run("PackSegments", ["len", "x"], ["p"], max_length=max_length)
    np.testing.assert_array_equal(p, pack_ref(lengths, x, max_length)[0])
    assert not np.signbit(p[1]).any()
    # Unpack with the same max_length gives x back
    np.testing.assert_array_equal(run("UnpackSegments", ["len", "p"], ["u"], max_length=max_length), x)


def test_pack_overwrites_a_reused_output(rng):
    # the padding is written every run, not left from an earlier, larger output
    feed(x=np.ones((3, 2), np.float32), len=np.array([3, 0], np.int32))
    run("PackSegments", ["len", "x"], ["p"])
    feed(x=np.full((2, 2), 2.0, np.float32), len=np.array([1, 1], np.int32))
    p = run("PackSegments", ["len", "x"], ["p"], max_length=3)
    np.testing.assert_array_equal(p, [[[2, 2], [0, 0], [0, 0]], [[2, 2], [0, 0], [0, 0]]])


def test_pack_packed_like_and_unpack_shorter_lengths(rng):
    x = f32(rng, 3, 2)
    feed(x=x, len=np.array([1, 2], np.int32), like=np.zeros((2, 5, 2), np.float32))
    p = run("PackSegments", ["len", "x", "like"], ["p"])
    np.testing.assert_array_equal(p, pack_ref([1, 2], x, 5)[0])
    # Unpack reads only the first lengths[i] steps of a longer packed
    np.testing.assert_array_equal(run("UnpackSegments", ["len", "p"], ["u"]), x)


def test_pack_unpack_gradient_makers():
    ops, g = G(op("PackSegments", ["len", "x"], ["p", "m"], max_length=5, pad_minf=1, return_presence_mask=1),
               ["dp", None])
    assert g == [None, "x_grad"]
    assert ops_of(ops) == [("UnpackSegments", ["len", "dp"], ["x_grad"], [("max_length", 5)])]
    ops, g = G(op("UnpackSegments", ["len", "p"], ["u"], max_length=5), ["du"])
    assert g == [None, "p_grad"]
    assert ops_of(ops) == [("PackSegments", ["len", "du", "p"], ["p_grad"], [])]
    assert G(op("PackSegments", ["len", "x"], ["p"]), [None]) == ([], [None, None])


@pytest.mark.parametrize("max_length", [None, 5])
def test_pack_gradient_fd(rng, max_length):
    x = f32(rng, 6, 2)
    lengths = np.array([2, 0, 4], np.int32)
    args = {} if max_length is None else {"max_length": max_length}
    check_grads(op("PackSegments", ["len", "x"], ["p"], **args), [lengths, x], indices=[1])


def test_unpack_gradient_fd(rng):
    lengths = np.array([2, 0, 3], np.int32)
    packed = f32(rng, 3, 5, 2)                  # T = 5 > max(lengths): the gradient keeps packed's shape
    check_grads(op("UnpackSegments", ["len", "p"], ["u"]), [lengths, packed], indices=[1])


def test_unpack_backward_through_net(rng):
    net = core.Net("unpack_bw")
    u = net.UnpackSegments(["len", "p"], "u")
    net.SumElements(net.Mul([u, "w"], "uw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    lengths = np.array([1, 3], np.int32)
    p, w = f32(rng, 2, 4, 3), f32(rng, 4, 3)
    feed(len=lengths, p=p, w=w)
    workspace.RunNetOnce(net)
    gp = workspace.FetchBlob(str(gmap["p"]))
    assert gp.shape == p.shape
    np.testing.assert_array_equal(gp, pack_ref(lengths, w, 4)[0])


# ================================================================ AddPadding / RemovePadding / GatherPadding
PAD_CASES = [  # (lengths or None, data shape)
    ([2, 0, 3], (5, 2)), (None, (4, 3)), ([1, 1], (2,)), ([3], (3, 2, 2)), ([], (0, 2)), (None, (0, 2))]


@pytest.mark.parametrize("lengths,shape", PAD_CASES)
@pytest.mark.parametrize("ps,pe", [(1, None), (2, 0), (0, 3), (0, 0)])
@pytest.mark.parametrize("paddings", [0, 1, 2])
def test_add_remove_padding(rng, lengths, shape, ps, pe, paddings):
    if paddings and lengths is None:
        return                                  # the paddings come after the lengths input
    x = f32(rng, *shape)
    block = shape[1:]
    start, end = f32(rng, *block), f32(rng, *block)
    args = {"padding_width": ps}
    if pe is not None:
        args["end_padding_width"] = pe
    pe_ = ps if pe is None else pe
    ins = ["x"] + ([] if lengths is None else ["len"]) + ["start", "end"][:paddings]
    feed(x=x, start=start, end=end)
    if lengths is not None:
        feed(len=np.array(lengths, np.int32))
    y, ly = run("AddPadding", ins, ["y", "ly"], **args)
    ref, lref = add_padding_ref(x, lengths, ps, pe_, start if paddings else None,
                                end if paddings == 2 else None)
    assert y.shape == ref.shape
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(ly, lref)
    feed(ly=ly)
    z, lz = run("RemovePadding", ["y"] + ([] if lengths is None else ["ly"]), ["z", "lz"], **args)
    np.testing.assert_array_equal(z, x)
    np.testing.assert_array_equal(lz, [shape[0]] if lengths is None else lengths)


def test_add_padding_int32_and_defaults():
    x = np.arange(6, dtype=np.int32).reshape(3, 2)
    feed(x=x, len=np.array([1, 2], np.int32), s=np.array([7, 8], np.int32))
    y = run("AddPadding", ["x", "len", "s"], ["y"])    # padding_width 1, end_padding_width = padding_width
    np.testing.assert_array_equal(y, [[7, 8], [0, 1], [7, 8], [7, 8], [2, 3], [4, 5], [7, 8]])
    assert y.dtype == np.int32


@pytest.mark.parametrize("ps,pe", [(1, 1), (2, 1), (0, 2)])
@pytest.mark.parametrize("two", [True, False])
def test_gather_padding(rng, ps, pe, two):
    lengths = np.array([3, 0, 1], np.int32) + ps + pe
    x = f32(rng, int(lengths.sum()), 2, 3)
    feed(x=x, len=lengths)
    outs = ["s", "e"] if two else ["s"]
    got = run("GatherPadding", ["x", "len"], outs, padding_width=ps, end_padding_width=pe)
    s, e = gather_padding_ref(x, lengths, ps, pe)
    if two:
        np.testing.assert_allclose(got[0], s, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[1], e, rtol=1e-6, atol=1e-6)
    else:
        assert got.shape == (2, 3)
        np.testing.assert_allclose(got, s + e, rtol=1e-6, atol=1e-6)


def test_padding_gradient_makers():
    o = op("AddPadding", ["x", "len", "s", "e"], ["y", "ly"], padding_width=2, end_padding_width=1)
    ops, g = G(o, ["dy", None])
    assert g == ["x_grad", None, "s_grad", "e_grad"]
    assert ops_of(ops) == [
        ("RemovePadding", ["dy", "ly"], ["x_grad"], [("end_padding_width", 1), ("padding_width", 2)]),
        ("GatherPadding", ["dy", "ly"], ["s_grad", "e_grad"],
         [("end_padding_width", 1), ("padding_width", 2)])]
    ops, g = G(op("AddPadding", ["x", "len", "s"], ["y", "ly"]), ["dy", None])
    assert g == ["x_grad", None, "s_grad"]
    assert ops_of(ops)[1] == ("GatherPadding", ["dy", "ly"], ["s_grad"], [])
    ops, g = G(op("AddPadding", ["x"], ["y"], padding_width=3), ["dy"])
    assert g == ["x_grad"] and ops_of(ops) == [("RemovePadding", ["dy"], ["x_grad"], [("padding_width", 3)])]
    ops, g = G(op("RemovePadding", ["x", "len"], ["y", "ly"], end_padding_width=0), ["dy", None])
    assert g == ["x_grad", None]
    assert ops_of(ops) == [("AddPadding", ["dy", "ly"], ["x_grad"], [("end_padding_width", 0)])]
    with pytest.raises(ValueError, match=r"AddPadding gradient: op \['x', 'len'\] -> \['y'\] has a lengths "
                                         r"input but no lengths_out output, which the gradient needs"):
        G(op("AddPadding", ["x", "len"], ["y"]), ["dy"])


@pytest.mark.parametrize("ps,pe,nin", [(1, 1, 2), (2, 1, 3), (1, 2, 4), (0, 2, 4), (2, 2, 1)])
def test_add_padding_gradient_fd(rng, ps, pe, nin):
    lengths = np.array([2, 0, 3], np.int32)
    x, s, e = f32(rng, 5, 2), f32(rng, 2), f32(rng, 2)
    ins = [x, lengths, s, e][:nin]
    o = op("AddPadding", ["x", "len", "s", "e"][:nin], ["y", "ly"][:max(1, min(nin, 2))],
           padding_width=ps, end_padding_width=pe)
    check_grads(o, ins, indices=[i for i in range(nin) if i != 1])


@pytest.mark.parametrize("with_len", [True, False])
def test_remove_padding_gradient_fd(rng, with_len):
    lengths = np.array([3, 2, 4], np.int32)
    x = f32(rng, 9, 2)
    o = op("RemovePadding", ["x", "len"] if with_len else ["x"], ["y", "ly"] if with_len else ["y"],
           padding_width=1, end_padding_width=1)
    check_grads(o, [x, lengths] if with_len else [x], indices=[0])


def test_add_padding_backward_through_net(rng):
    net = core.Net("pad_bw")
    y, _ = net.AddPadding(["x", "len", "s"], ["y", "ly"], padding_width=1)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    lengths = np.array([1, 2], np.int32)
    x, s, w = f32(rng, 3, 2), f32(rng, 2), f32(rng, 7, 2)
    feed(x=x, len=lengths, s=s, w=w)
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob(str(gmap["x"])), w[[1, 4, 5]], rtol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob(str(gmap["s"])), w[[0, 2, 3, 6]].sum(0), rtol=1e-6)


# ================================================================ lengths utilities
@pytest.mark.parametrize("lengths", [[2, 0, 3, 1], [], [0, 0], [5]])
def test_lengths_to_segment_ids_and_ranges_and_back(lengths):
    lengths = np.array(lengths, np.int32)
    feed(len=lengths)
    ids = run("LengthsToSegmentIds", ["len"], ["ids"])
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, np.repeat(np.arange(len(lengths)), lengths))
    ranges = run("LengthsToRanges", ["len"], ["r"])
    assert ranges.shape == (len(lengths), 2) and ranges.dtype == np.int32
    np.testing.assert_array_equal(ranges, np.stack([offsets(lengths)[:-1], lengths], 1).reshape(-1, 2))
    # back: trailing empty segments need data_to_infer_dim
    feed(d=np.zeros((len(lengths), 3), np.float32))
    np.testing.assert_array_equal(run("SegmentIdsToLengths", ["ids", "d"], ["l2"]), lengths)
    k = int(ids[-1]) + 1 if ids.size else 0
    np.testing.assert_array_equal(run("SegmentIdsToLengths", ["ids"], ["l3"]), lengths[:k])


@pytest.mark.parametrize("lengths", [[1, 3, 0, 2], [], [0, 0], [5], [2147483646, 1]])
def test_lengths_to_offsets(lengths):
    """Caffe2's LengthsToOffsets: the start of each segment; include_last_offset=1 appends the sum
    ([1, 3, 0, 2] -> [0, 1, 4, 4] and [0, 1, 4, 4, 6])."""
    lengths = np.array(lengths, np.int32)
    feed(len=lengths)
    for last in (None, 0, 1):
        args = {} if last is None else {"include_last_offset": last}
        y = run("LengthsToOffsets", ["len"], ["o"], **args)
        want = offsets(lengths)[:len(lengths) + bool(last)]
        assert y.dtype == np.int32 and y.shape == want.shape
        np.testing.assert_array_equal(y, want)
    ops, g = G(op("LengthsToOffsets", ["len"], ["o"]), ["o_grad"])
    assert ops == [] and g == [None]


def test_lengths_to_offsets_overflow():
    """Every offset written must fit int32: without include_last_offset the last length does not count."""
    feed(len=i32([2147483647, 1]), big=i32([1, 2147483647]))
    np.testing.assert_array_equal(run("LengthsToOffsets", ["len"], ["o"]), [0, 2147483647])
    raises(ValueError, r"^op LengthsToOffsets #0: input 0 blob 'len' \(lengths\) of shape \(2,\) int32 "
           r"sums to 2147483648, above 2147483647 \(the offsets are int32\)$",
           op("LengthsToOffsets", ["len"], ["o"], include_last_offset=1))
    feed(len3=i32([2147483647, 1, 0]))
    raises(ValueError, r"^op LengthsToOffsets #0: input 0 blob 'len3' \(lengths\) of shape \(3,\) int32 "
           r"sums to 2147483648", op("LengthsToOffsets", ["len3"], ["o"]))
    feed(len3=i32([2147483647, 1, 5]))
    raises(ValueError, r"^op LengthsToOffsets #0: input 0 blob 'len3' \(lengths\) of shape \(3,\) int32 "
           r"gives the last offset 2147483648, above 2147483647 \(the offsets are int32\)$",
           op("LengthsToOffsets", ["len3"], ["o"]))
    np.testing.assert_array_equal(workspace.FetchBlob("o"), [0, 2147483647])  # untouched


def test_segment_ids_to_lengths_counts():
    feed(ids=np.array([0, 0, 2, 2, 2, 5], np.int32))
    np.testing.assert_array_equal(run("SegmentIdsToLengths", ["ids"], ["l"]), [2, 0, 3, 0, 0, 1])


def segment_ids_to_ranges_ref(ids, K=None):
    """Caffe2's reference (segment_ops_test's op_ref), extended with its C++ op's rules for the data input:
    segments past the last id are (0, 0), and segments up to the first id start at 0."""
    prev = ids[0] if len(ids) else 0
    ranges = [[0, 0] for _ in range(prev + 1)] if len(ids) else []
    for i, sid in enumerate(ids):
        while sid != prev:
            prev += 1
            ranges.append([i, 0])
        ranges[-1][1] += 1
    if K is not None:
        ranges += [[0, 0]] * (K - len(ranges))
    return np.array(ranges, np.int32).reshape(-1, 2)


@pytest.mark.parametrize("ids", [[0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 5, 5, 5, 5],  # Caffe2's test
                                 [0, 0, 1, 1, 1, 3], [2, 2, 4], [0], [7], [], [0, 1, 2, 3],
                                 [1, 1, 1, 1, 4, 4, 9]])
def test_segment_ids_to_ranges(ids):
    feed(ids=np.array(ids, np.int32))
    r = run("SegmentIdsToRanges", ["ids"], ["r"])
    assert r.dtype == np.int32 and r.shape == ((ids[-1] + 1 if ids else 0), 2)
    np.testing.assert_array_equal(r, segment_ids_to_ranges_ref(ids))
    # the lengths column is SegmentIdsToLengths's; each segment with rows starts where its ids start
    np.testing.assert_array_equal(r[:, 1], run("SegmentIdsToLengths", ["ids"], ["l"]))
    for s, (start, n) in enumerate(r):
        if n:
            assert list(ids[start:start + n]) == [s] * n
    # data_to_infer_dim gives the segment count; the extra segments are (0, 0), as Caffe2's
    K = (ids[-1] + 1 if ids else 0) + 3
    feed(d=np.zeros((K, 2, 0), np.float32))
    r2 = run("SegmentIdsToRanges", ["ids", "d"], ["r2"])
    np.testing.assert_array_equal(r2, segment_ids_to_ranges_ref(ids, K))


def test_segment_ids_to_ranges_caffe2_example():
    """Caffe2's test: lengths [4, 6, 3, 2, 0, 4] as ids, back to (start, length) rows."""
    lengths = [4, 6, 3, 2, 0, 4]
    ids = np.repeat(np.arange(len(lengths)), lengths).astype(np.int32)
    feed(ids=ids)
    r = run("SegmentIdsToRanges", ["ids"], ["r"])
    np.testing.assert_array_equal(r, [[0, 4], [4, 6], [10, 3], [13, 2], [15, 0], [15, 4]])
    feed(lengths=np.array(lengths, np.int32))
    np.testing.assert_array_equal(r, run("LengthsToRanges", ["lengths"], ["lr"]))


def test_segment_ids_to_ranges_bad_input():
    for ids, msg in (([1, 0], r"must be sorted: 0 at index 1 follows 1"),
                     ([-1, 0], r"holds a negative id -1 at index 0"),
                     ([-3, -3], r"holds a negative id -3 at index 0")):  # Caffe2 wrote out of bounds here
        feed(ids=np.array(ids, np.int32))
        workspace.FeedBlob("r", np.full(3, 9.0, np.float32))
        raises(ValueError, r"^op SegmentIdsToRanges #0: input 0 blob 'ids' \(segment_ids\) " + msg,
               op("SegmentIdsToRanges", ["ids"], ["r"]))
        np.testing.assert_array_equal(workspace.FetchBlob("r"), np.full(3, 9.0, np.float32))  # untouched
    feed(ids=np.array([0, 3], np.int32), d=np.zeros((3, 1), np.float32))
    raises(ValueError, r"^op SegmentIdsToRanges #0: input 0 blob 'ids' \(segment_ids\) has 4 segments \(last "
                       r"id 3\), more than dim 0 of input 1 blob 'd' of shape \(3, 1\) float32$",
           op("SegmentIdsToRanges", ["ids", "d"], ["r"]))
    feed(ids=np.array([[0, 1]], np.int32))
    raises(ValueError, r"^op SegmentIdsToRanges #0: input 0 blob 'ids' \(segment_ids\) must be 1-D, got "
                       r"\(1, 2\) int32$", op("SegmentIdsToRanges", ["ids"], ["r"]))
    feed(ids=np.array([0, 1], np.float32))
    raises(TypeError, r"^op SegmentIdsToRanges #0: input 0 blob 'ids' must be int32, got \(2,\) float32$",
           op("SegmentIdsToRanges", ["ids"], ["r"]))
    feed(ids=np.array([0, 1], np.int32), d=np.float32(1))
    raises(ValueError, r"^op SegmentIdsToRanges #0: input 1 blob 'd' \(data_to_infer_dim\) must have at "
                       r"least 1 "
                       r"dim, got \(\) float32$", op("SegmentIdsToRanges", ["ids", "d"], ["r"]))


def test_lengths_utilities_have_no_gradient():
    for t, ins in (("LengthsToSegmentIds", ["a"]), ("LengthsToRanges", ["a"]), ("LengthsToOffsets", ["a"]),
                   ("SegmentIdsToLengths", ["a", "b"]), ("SegmentIdsToRanges", ["a", "b"]),
                   ("GatherPadding", ["a", "b"])):
        ops, g = G(op(t, ins, ["y"]), ["dy"])
        assert ops == [] and all(x is None for x in g), t


# ================================================================ SequenceMask modes
@pytest.mark.parametrize("mode", ["upper", "lower", "upperdiag", "lowerdiag"])
@pytest.mark.parametrize("shape,axis,batch", [((4, 5), 1, None), ((3, 3), -1, None), ((2, 3, 4), 2, None),
                                              ((2, 3, 4), 2, 0), ((2, 2, 3, 3), 3, 1), ((2, 3, 4, 2), 2, 0)])
def test_sequence_mask_triangular(rng, mode, shape, axis, batch):
    x = f32(rng, *shape)
    feed(x=x)
    args = {} if batch is None else {"batch": batch}
    y = run("SequenceMask", ["x"], ["y"], mode=mode, axis=axis, fill_val=-7.0, **args)
    np.testing.assert_array_equal(y, mask_ref(x, mode, axis=axis, batch=batch, fill=-7.0).astype(np.float32))


def test_sequence_mask_upper_is_strict_upper_triangle():
    feed(x=np.ones((3, 3), np.float32))
    y = run("SequenceMask", ["x"], ["y"], mode="upper", fill_val=0.0)
    np.testing.assert_array_equal(y, np.tril(np.ones((3, 3))))
    y = run("SequenceMask", ["x"], ["y"], mode="lowerdiag", fill_val=0.0)
    np.testing.assert_array_equal(y, np.triu(np.ones((3, 3)), 1))


@pytest.mark.parametrize("radius", [None, 0, 1, 3])
@pytest.mark.parametrize("shape,axis,batch", [((4, 9), 1, None), ((2, 3, 6), 2, 0), ((2, 3, 6), 1, None)])
def test_sequence_mask_window(rng, radius, shape, axis, batch):
    x = f32(rng, *shape)
    rows = int(np.prod(shape[(0 if batch is None else batch + 1):axis]))
    centers = rng.randint(-2, 12, size=rows).astype(np.int32)
    feed(x=x, c=centers)
    args = {} if batch is None else {"batch": batch}
    if radius is not None:
        args["radius"] = radius
    y = run("SequenceMask", ["x", "c"], ["y"], mode="window", axis=axis, **args)
    ref = mask_ref(x, "window", centers, axis, batch, radius=10 if radius is None else radius)
    np.testing.assert_array_equal(y, ref.astype(np.float32))


@pytest.mark.parametrize("shape,axis,batch,repeat", [((2, 3, 4), 2, 0, None), ((2, 3, 4, 5), 3, 1, None),
                                                     ((3, 4, 2), 1, None, 2), ((2, 4, 3, 2), 1, None, 2),
                                                     ((3, 4, 2), 1, None, 1), ((3, 4, 2), 1, None, -1)])
def test_sequence_mask_batch_and_repeat(rng, shape, axis, batch, repeat):
    x = f32(rng, *shape)
    rows = int(np.prod(shape[(0 if batch is None else batch + 1):axis]))
    cols = int(np.prod(shape[axis:]))
    lengths = rng.randint(0, cols + 2, size=rows).astype(np.int32)
    feed(x=x, len=lengths)
    args = {}
    if batch is not None:
        args["batch"] = batch
    if repeat is not None:
        args["repeat_from_axis"] = repeat
    y = run("SequenceMask", ["x", "len"], ["y"], axis=axis, fill_val=-1.5, **args)
    np.testing.assert_array_equal(y, mask_ref(x, "sequence", lengths, axis, batch, repeat,
                                              fill=-1.5).astype(np.float32))
    got = run("SequenceMask", ["x", "len"], ["x"], axis=axis, fill_val=-1.5, **args)   # in place
    assert got.tobytes() == y.tobytes()


@pytest.mark.parametrize("mode,extra", [("upper", {}), ("lowerdiag", {"batch": 0}), ("window", {"radius": 1}),
                                        ("sequence", {"repeat_from_axis": 2}), ("sequence", {"batch": 0})])
def test_sequence_mask_modes_gradient_fd(rng, mode, extra):
    x = f32(rng, 2, 3, 4)
    ins, names = [x], ["x"]
    if mode in ("window", "sequence"):
        rows = {"window": 6, "sequence": 2 if "repeat_from_axis" in extra else 3}[mode]
        ins.append(np.array([1, 3, 0, 2, 5, 4][:rows], np.int32))
        names.append("v")
    axis = 1 if "repeat_from_axis" in extra else 2
    o = op("SequenceMask", names, ["y"], mode=mode, axis=axis, fill_val=-5.0, **extra)
    check_grads(o, ins, indices=[0], stepsize=1e-2, threshold=1e-2)
    ops, g = G(o, ["dy"])
    assert g == ["x_grad"] + [None] * (len(names) - 1)
    assert list(ops[0].input) == ["dy"] + names[1:]


# ================================================================ bad input
def ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def i32(v):
    return np.array(v, np.int32)


BAD = [  # (op type, inputs {name: array}, input names, outputs, args, exception, message)
    ("PackSegments", {"len": i32([2, -1]), "x": ones(1, 2)}, ["len", "x"], ["p"], {}, ValueError,
     r"op PackSegments #0: input 0 blob 'len' \(lengths\) holds -1 at index 1, below 0$"),
    ("PackSegments", {"len": i32([2, 2]), "x": ones(3, 2)}, ["len", "x"], ["p"], {}, ValueError,
     r"op PackSegments #0: input 0 blob 'len' \(lengths\) of shape \(2,\) int32 sums to 4, but input 1 blob "
     r"'x' "
     r"of shape \(3, 2\) float32 has 3 rows \(dim 0\)"),
    ("PackSegments", {"len": i32([1, 3]), "x": ones(4)}, ["len", "x"], ["p"], {"max_length": 2},
     ValueError, r"op PackSegments #0: input 0 blob 'len' \(lengths\) holds 3 at index 1, above 2 \(argument "
     r"max_length\)"),
    ("PackSegments", {"len": i32([1]), "x": ones(1, dtype=np.int32)}, ["len", "x"], ["p"],
     {"pad_minf": 1}, ValueError, r"op PackSegments #0: argument pad_minf=1 needs float32 data, input 1 "
                                  r"blob 'x' "
     r"\(tensor\) is \(1,\) int32"),
    ("PackSegments", {"len": i32([1]), "x": ones(1)}, ["len", "x"], ["p"],
     {"return_presence_mask": 1}, ValueError, r"op PackSegments #0: argument return_presence_mask=1 needs 2 "
     r"output\(s\) \(packed, presence_mask\), got 1"),
    ("PackSegments", {"len": i32([1]), "x": ones(1)}, ["len", "x"], ["p"], {"max_length": -2},
     ValueError, r"op PackSegments #0: argument max_length=-2 must be -1 \(the longest length\) or in "
                 r"\[0, 2147483647\]"),
    ("PackSegments", {"len": np.array([1.0], np.float32), "x": ones(1)}, ["len", "x"], ["p"], {}, TypeError,
     r"op PackSegments #0: input 0 blob 'len' must be int32, got \(1,\) float32"),
    ("PackSegments", {"len": np.array([[1]], np.int32), "x": ones(1)}, ["len", "x"], ["p"], {}, ValueError,
     r"op PackSegments #0: input 0 blob 'len' \(lengths\) must be 1-D, got \(1, 1\) int32"),
    ("PackSegments", {"len": i32([1]), "x": np.float32(1)}, ["len", "x"], ["p"], {}, ValueError,
     r"op PackSegments #0: input 1 blob 'x' \(tensor\) must have 1 to 7 dims, got \(\) float32"),
    ("PackSegments", {"len": i32([1, 2]), "x": ones(3), "like": ones(2, 1)}, ["len", "x", "like"],
     ["p"], {}, ValueError, r"op PackSegments #0: input 0 blob 'len' \(lengths\) holds 2 at index 1, above 1 "
                            r"\(T = dim 1 of input 2 \(packed_like\)\)"),
    ("PackSegments", {"len": i32([1, 2]), "x": ones(3), "like": ones(3, 2)}, ["len", "x", "like"],
     ["p"], {}, ValueError, r"op PackSegments #0: input 2 blob 'like' \(packed_like\) must have at least 2 "
                            r"dims "
                            r"and 2 rows, one per length of input 0 blob 'len' of shape \(2,\) int32, got "
                            r"\(3, 2\) "
                            r"float32"),
    ("UnpackSegments", {"len": i32([1, 4]), "p": ones(2, 3, 2)}, ["len", "p"], ["u"], {},
     ValueError, r"op UnpackSegments #0: input 0 blob 'len' \(lengths\) holds 4 at index 1, above 3 \(T = "
                 r"dim 1 of "
                 r"input 1 \(packed\)\)"),
    ("UnpackSegments", {"len": i32([1, 3]), "p": ones(2, 3, 2)}, ["len", "p"], ["u"],
     {"max_length": 2}, ValueError, r"op UnpackSegments #0: input 0 blob 'len' \(lengths\) holds 3 at index "
                                    r"1, "
                                    r"above 2 \(argument max_length\)"),
    ("UnpackSegments", {"len": i32([1, -3]), "p": ones(2, 3)}, ["len", "p"], ["u"], {},
     ValueError, r"op UnpackSegments #0: input 0 blob 'len' \(lengths\) holds -3 at index 1, below 0$"),
    ("UnpackSegments", {"len": i32([1]), "p": ones(2, 3)}, ["len", "p"], ["u"], {}, ValueError,
     r"op UnpackSegments #0: input 0 blob 'len' \(lengths\) must have shape \(2,\), one length per row "
     r"\(dim 0\) "
     r"of input 1 blob 'p' of shape \(2, 3\) float32, got \(1,\) int32"),
    ("UnpackSegments", {"len": i32([1]), "p": ones(1)}, ["len", "p"], ["u"], {}, ValueError,
     r"op UnpackSegments #0: input 1 blob 'p' \(packed\) must have at least 2 dims \(N, T, ...\), got \(1,\) "
     r"float32"),
    ("AddPadding", {"x": ones(3, 2), "len": i32([1, 1])}, ["x", "len"], ["y"], {}, ValueError,
     r"op AddPadding #0: input 1 blob 'len' \(lengths\) of shape \(2,\) int32 sums to 2, but input 0 blob "
     r"'x' of "
     r"shape \(3, 2\) float32 has 3 rows \(dim 0\)"),
    ("AddPadding", {"x": ones(3, 2), "len": i32([4, -1])}, ["x", "len"], ["y"], {}, ValueError,
     r"op AddPadding #0: input 1 blob 'len' \(lengths\) holds -1 at index 1, below 0$"),
    ("AddPadding", {"x": ones(3, 2), "len": i32([3]), "s": ones(3)}, ["x", "len", "s"], ["y"], {},
     ValueError, r"op AddPadding #0: input 2 blob 's' \(start_padding\) must hold 2 elements, one row of "
                 r"input 0 "
                 r"blob 'x' of shape \(3, 2\) float32, got \(3,\) float32"),
    ("AddPadding", {"x": ones(3, 2), "len": i32([3]), "s": ones(2), "e": ones(2, dtype=np.int32)},
     ["x", "len", "s", "e"], ["y"], {}, TypeError,
     r"op AddPadding #0: input 3 blob 'e' must be float32, got \(2,\) int32"),
    ("AddPadding", {"x": ones(3, 2)}, ["x"], ["y"], {"padding_width": -1}, ValueError,
     r"op AddPadding #0: argument padding_width=-1 must be in \[0, 2147483647\]"),
    ("AddPadding", {"x": ones(3, 2)}, ["x"], ["y"], {"end_padding_width": -3}, ValueError,
     r"op AddPadding #0: argument end_padding_width=-3 must be -1 \(padding_width\) or in \[0, 2147483647\]"),
    ("AddPadding", {"x": np.float32(1)}, ["x"], ["y"], {}, ValueError,
     r"op AddPadding #0: input 0 blob 'x' \(data\) must have at least 1 dim, got \(\) float32"),
    ("AddPadding", {"x": ones(1), "len": i32([1])}, ["x", "len"], ["y", "ly"],
     {"padding_width": 2147483647}, ValueError,
     r"op AddPadding #0: length 1 at index 0 plus padding_width \+ end_padding_width = 4294967294 exceeds "
     r"2147483647 \(lengths_out is int32\)"),
    ("RemovePadding", {"x": ones(5, 2), "len": i32([3, 2])}, ["x", "len"], ["y"],
     {"padding_width": 1, "end_padding_width": 2}, ValueError,
     r"op RemovePadding #0: input 1 blob 'len' \(lengths\) holds 2 at index 1, below 3 \(padding_width \+ "
     r"end_padding_width\)"),
    ("RemovePadding", {"x": ones(1, 2)}, ["x"], ["y"], {}, ValueError,
     r"op RemovePadding #0: input 0 blob 'x' \(data\) of shape \(1, 2\) float32, one segment without a "
     r"lengths "
     r"input, must have 2 to 2147483647 rows"),
    ("GatherPadding", {"x": ones(4, 2, dtype=np.int32), "len": i32([4])}, ["x", "len"], ["s"], {},
     TypeError, r"op GatherPadding #0: input 0 blob 'x' must be float32, got \(4, 2\) int32"),
    ("GatherPadding", {"x": ones(4, 2), "len": i32([4, 1])}, ["x", "len"], ["s"], {},
     ValueError, r"op GatherPadding #0: input 1 blob 'len' \(lengths\) holds 1 at index 1, below 2 "
                 r"\(padding_width \+ end_padding_width\)"),
    ("LengthsToSegmentIds", {"len": i32([1, -2])}, ["len"], ["y"], {}, ValueError,
     r"op LengthsToSegmentIds #0: input 0 blob 'len' \(lengths\) holds -2 at index 1, below 0$"),
    ("LengthsToSegmentIds", {"len": np.ones((2, 2), np.int32)}, ["len"], ["y"], {}, ValueError,
     r"op LengthsToSegmentIds #0: input 0 blob 'len' \(lengths\) must be 1-D, got \(2, 2\) int32"),
    ("LengthsToRanges", {"len": i32([2147483647, 1])}, ["len"], ["y"], {}, ValueError,
     r"op LengthsToRanges #0: input 0 blob 'len' \(lengths\) of shape \(2,\) int32 sums to 2147483648, above "
     r"2147483647 \(the offsets are int32\)"),
    ("LengthsToRanges", {"len": i32([-1])}, ["len"], ["y"], {}, ValueError,
     r"op LengthsToRanges #0: input 0 blob 'len' \(lengths\) holds -1 at index 0, below 0$"),
    ("LengthsToOffsets", {"len": i32([2, -1])}, ["len"], ["y"], {}, ValueError,
     r"op LengthsToOffsets #0: input 0 blob 'len' \(lengths\) holds -1 at index 1, below 0$"),
    ("LengthsToOffsets", {"len": np.ones(2, np.float32)}, ["len"], ["y"], {}, TypeError,
     r"op LengthsToOffsets #0: input 0 blob 'len' must be int32, got \(2,\) float32"),
    ("LengthsToOffsets", {"len": np.ones((2, 1), np.int32)}, ["len"], ["y"], {}, ValueError,
     r"op LengthsToOffsets #0: input 0 blob 'len' \(lengths\) must be 1-D, got \(2, 1\) int32"),
    ("LengthsToOffsets", {"len": i32([1])}, ["len"], ["y"], {"include_last_offset": "yes"}, TypeError,
     r"op LengthsToOffsets: argument 'include_last_offset' must be an int"),
    ("SegmentIdsToLengths", {"ids": i32([0, 2, 1])}, ["ids"], ["y"], {}, ValueError,
     r"op SegmentIdsToLengths #0: input 0 blob 'ids' \(segment_ids\) must be sorted: 1 at index 2 follows 2"),
    ("SegmentIdsToLengths", {"ids": i32([-1, 0])}, ["ids"], ["y"], {}, ValueError,
     r"op SegmentIdsToLengths #0: input 0 blob 'ids' \(segment_ids\) holds a negative id -1 at index 0"),
    ("SegmentIdsToLengths", {"ids": i32([0, 3]), "d": ones(3)}, ["ids", "d"], ["y"], {},
     ValueError, r"op SegmentIdsToLengths #0: input 0 blob 'ids' \(segment_ids\) has 4 segments \(last id "
                 r"3\), "
                 r"more than dim 0 of input 1 blob 'd' of shape \(3,\) float32"),
    ("SegmentIdsToLengths", {"ids": i32([0]), "d": np.float32(1)}, ["ids", "d"], ["y"], {},
     ValueError, r"op SegmentIdsToLengths #0: input 1 blob 'd' \(data_to_infer_dim\) must have at least 1 "
                 r"dim, "
                 r"got \(\) float32"),
    ("SequenceMask", {"x": ones(2, 3)}, ["x"], ["y"], {"mode": "window"}, ValueError,
     r"op SequenceMask #0: mode 'window' takes 2 input\(s\) \(input, window_centers\), got 1"),
    ("SequenceMask", {"x": ones(2, 3)}, ["x"], ["y"], {}, ValueError,
     r"op SequenceMask #0: mode 'sequence' takes 2 input\(s\) \(input, sequence_lengths\), got 1"),
    ("SequenceMask", {"x": ones(2, 3), "c": i32([1, 1])}, ["x", "c"], ["y"],
     {"mode": "window", "radius": -1}, ValueError,
     r"op SequenceMask #0: argument radius=-1 must be in \[0, 2147483647\]"),
    ("SequenceMask", {"x": ones(2, 3), "c": i32([1, 1])}, ["x", "c"], ["y"], {"radius": 2}, ValueError,
     r"op SequenceMask #0: argument radius is for mode 'window' only, mode is 'sequence'"),
    ("SequenceMask", {"x": ones(2, 3)}, ["x"], ["y"], {"mode": "upper", "repeat_from_axis": 1}, ValueError,
     r"op SequenceMask #0: argument repeat_from_axis is for mode 'sequence' without argument batch only "
     r"\(mode "
     r"'upper'\)"),
    ("SequenceMask", {"x": ones(2, 3, 4), "len": i32([1, 1])}, ["x", "len"], ["y"],
     {"axis": 2, "batch": 0, "repeat_from_axis": 2}, ValueError,
     r"op SequenceMask #0: argument repeat_from_axis is for mode 'sequence' without argument batch only "
     r"\(mode "
     r"'sequence', batch given\)"),
    ("SequenceMask", {"x": ones(2, 3, 4), "len": i32([1, 1])}, ["x", "len"], ["y"],
     {"axis": 2, "repeat_from_axis": 1}, ValueError,
     r"op SequenceMask #0: argument repeat_from_axis=1 must name a dim from axis=2 on of input 0 blob 'x' of "
     r"shape \(2, 3, 4\) float32 \(canonical in \[2, 3\)\)"),
    ("SequenceMask", {"x": ones(2, 3, 4), "len": i32([1, 1])}, ["x", "len"], ["y"],
     {"axis": 2, "batch": 0}, ValueError,
     r"op SequenceMask #0: input 1 blob 'len' \(sequence_lengths\) must have shape \(3,\), one entry per "
     r"row of "
     r"input 0 blob 'x' of shape \(2, 3, 4\) float32 viewed as 2 x 3 x 4 at batch 0 and axis 2, got \(2,\) "
     r"int32"),
    ("SequenceMask", {"x": ones(2, 3), "c": i32([1, 1, 1])}, ["x", "c"], ["y"], {"mode": "window"},
     ValueError, r"op SequenceMask #0: input 1 blob 'c' \(window_centers\) must have shape \(2,\), one "
                 r"center per "
                 r"row of input 0 blob 'x' of shape \(2, 3\) float32 viewed as 2 x 3 at axis 1, got \(3,\) "
                 r"int32"),
]


@pytest.mark.parametrize("type_,blobs,ins,outs,args,exc,msg", BAD,
                         ids=[b[0] + str(i) for i, b in enumerate(BAD)])
def test_bad_input(type_, blobs, ins, outs, args, exc, msg):
    workspace.ResetWorkspace()
    feed(**blobs)
    for o in outs:
        workspace.FeedBlob(o, np.full(3, 9.0, np.float32))     # an output holding something beforehand
    raises(exc, msg, op(type_, ins, outs, **args))
    for o in outs:                                             # nothing written
        np.testing.assert_array_equal(workspace.FetchBlob(o), np.full(3, 9.0, np.float32))
    # the workspace stays usable
    feed(ok_len=np.array([1, 2], np.int32), ok_x=ones(3, 2))
    assert run("PackSegments", ["ok_len", "ok_x"], ["ok_p"]).shape == (2, 2, 2)


# ================================================================ end to end: ragged sequences, an LSTM
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_ragged_sequences_packed_through_lstm(rng):
    lengths = np.array([3, 1, 4, 2], np.int32)
    N, Din, H = len(lengths), 3, 5
    x = f32(rng, int(lengths.sum()), Din)
    model = ModelHelper(name="ragged")
    packed = model.net.PackSegments(["lengths", "x"], "packed")                 # (N, T, Din)
    tnd = model.net.Transpose(packed, "packed_tnd", axes=[1, 0, 2])             # (T, N, Din)
    h_all, _, _, _ = rnn_cell.LSTM(model, tnd, "lengths", ("h0", "c0"), dim_in=Din, dim_out=H, scope="lstm")
    nth = model.net.Transpose(h_all, "h_ntd", axes=[1, 0, 2])                   # (N, T, H)
    model.net.UnpackSegments(["lengths", nth], "h_rows")                        # (sum, H)
    feed(lengths=lengths, x=x, h0=np.zeros((1, N, H), np.float32), c0=np.zeros((1, N, H), np.float32))
    workspace.RunNetOnce(model.param_init_net)
    for n in ("lstm/i2h_w", "lstm/i2h_b", "lstm/gates_t_w", "lstm/gates_t_b"):
        workspace.FeedBlob(n, f32(rng, *workspace.FetchBlob(n).shape, lo=-0.5, hi=0.5))
    workspace.RunNetOnce(model.net)
    got = workspace.FetchBlob("h_rows")
    wi, bi, wh, bh = (workspace.FetchBlob(n).astype(np.float64) for n in
                      ("lstm/i2h_w", "lstm/i2h_b", "lstm/gates_t_w", "lstm/gates_t_b"))
    # reference: each sequence on its own, no padding at all
    ref = []
    for a, n in zip(offsets(lengths)[:-1], lengths):
        h, c = np.zeros(H), np.zeros(H)
        for t in range(n):
            g = x[a + t].astype(np.float64) @ wi.T + bi + h @ wh.T + bh
            i, f, o, gg = (g[k * H:(k + 1) * H] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
            h = sigmoid(o) * np.tanh(c)
            ref.append(h)
    assert got.shape == (int(lengths.sum()), H)
    np.testing.assert_allclose(got, np.array(ref), rtol=1e-4, atol=1e-5)
