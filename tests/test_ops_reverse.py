"""ReversePackedSegs (csrc/ops/batch.c) and its gradient maker
(recurrent/_grad_batch.py): NumPy references (ranks 2-4, float32 and int32,
lengths 0, T and mixed), the op as its own inverse (bitwise), inf/NaN, in
place, empty shapes, bad input with exact messages (at run and at net
creation), gradients by finite differences; then Caffe2's bidirectional
encoder (seq2seq_util.rnn_bidirectional_layer's pattern) built with
rnn_cell.LSTM, against a float64 NumPy LSTM run on each sequence and on each
sequence reversed, and its gradients by finite differences."""

import numpy as np
import pytest

from recurrent import core, rnn_cell, workspace
from recurrent.model_helper import ModelHelper
from test_ops_batch import G, ops_of
from test_ops_clip_math import check_grads
from test_ops_math import f32, feed, op, run  # the same helpers
from test_rnn_cell import fd_check, lstm_layer_ref, lstm_params, randomize_params, report


def rev_ref(x, lengths):
    """out[t, b] = x[L_b - 1 - t, b] for t < L_b, else x[t, b]."""
    out = x.copy()
    for b, L in enumerate(lengths):
        out[:L, b] = x[:L, b][::-1]
    return out


def data(rng, shape, dtype):
    if dtype == np.int32:
        return rng.randint(-1000, 1000, size=shape).astype(np.int32)
    return f32(rng, *shape)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    assert a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- forward
SHAPES = [(5, 3), (5, 3, 4), (4, 3, 2, 3), (1, 2, 3), (6, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("kind", ["zero", "full", "mixed"])
def test_reverse_packed_segs(rng, shape, dtype, kind):
    T, N = shape[:2]
    x = data(rng, shape, dtype)
    lengths = {"zero": np.zeros(N), "full": np.full(N, T), "mixed": rng.randint(0, T + 1, size=N)}[kind]
    lengths = lengths.astype(np.int32)
    if kind == "mixed" and N > 1:
        lengths[:2] = [T, 0]
    feed(x=x, len=lengths)
    y = run("ReversePackedSegs", ["x", "len"], ["y"])
    same_bits(y, rev_ref(x, lengths))
    if kind == "zero":
        same_bits(y, x)
    if kind == "full" and T > 1:
        assert not np.array_equal(y, x)
        same_bits(y, x[::-1])
    # its own inverse, bit for bit
    same_bits(run("ReversePackedSegs", ["y", "len"], ["z"]), x)


def test_reverse_packed_segs_each_entry_its_own_length():
    # x[t, b, k] = 100 t + 10 b + k: every output value tells where it came from
    T, N, K = 4, 5, 2
    code = lambda t_idx: 100 * t_idx[:, :, None] + 10 * np.arange(N)[None, :, None] + np.arange(K)
    x = code(np.repeat(np.arange(T)[:, None], N, 1)).astype(np.float32)
    lengths = np.array([0, 1, 2, 3, 4], np.int32)
    feed(x=x, len=lengths)
    y = run("ReversePackedSegs", ["x", "len"], ["y"])
    src_t = np.array([[t if t >= L else L - 1 - t for L in lengths] for t in range(T)])
    np.testing.assert_array_equal(y, code(src_t))
    np.testing.assert_array_equal(y[:, 3, 0], [230, 130, 30, 330])   # length 3: reversed, step 3 copied


def test_reverse_packed_segs_special_values_bitwise():
    # inf, NaN (payload and sign), -0 and denormals move as bits
    T, N = 5, 3
    x = np.arange(T * N * 2, dtype=np.float32).reshape(T, N, 2)
    bits = x.view(np.uint32)
    bits[0, 0, 0] = 0x7FC00001      # NaN with a payload
    bits[1, 0, 1] = 0xFFC12345      # negative NaN
    bits[2, 1, 0] = 0x80000000      # -0
    bits[3, 2, 1] = 0x00000001      # the smallest denormal
    x[4, 0, 0], x[0, 1, 1] = np.inf, -np.inf
    lengths = np.array([5, 3, 4], np.int32)
    feed(x=x, len=lengths)
    y = run("ReversePackedSegs", ["x", "len"], ["y"])
    same_bits(y, rev_ref(x, lengths))
    assert y.view(np.uint32)[4, 0, 0] == 0x7FC00001 and y.view(np.uint32)[3, 0, 1] == 0xFFC12345
    assert np.isposinf(y[0, 0, 0]) and np.isneginf(y[2, 1, 1])
    same_bits(run("ReversePackedSegs", ["y", "len"], ["y"]), x)       # back again, in place


@pytest.mark.parametrize("shape", [(5, 3, 4), (6, 4), (7, 2, 1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reverse_packed_segs_in_place(rng, shape, dtype):
    # odd and even lengths (the middle row of an odd length stays), 0 and T
    T, N = shape[:2]
    x = data(rng, shape, dtype)
    lengths = np.array([T, T - 1, 0, 1][:N] + [T] * max(0, N - 4), np.int32)
    feed(x=x, len=lengths)
    ref = rev_ref(x, lengths)
    same_bits(run("ReversePackedSegs", ["x", "len"], ["x"]), ref)
    same_bits(run("ReversePackedSegs", ["x", "len"], ["x"]), x)


@pytest.mark.parametrize("shape,lengths", [((0, 3, 2), [0, 0, 0]), ((4, 0, 2), []), ((4, 2, 0), [4, 1]),
                                           ((0, 0), [])])
def test_reverse_packed_segs_empty(shape, lengths):
    x = np.zeros(shape, np.float32)
    feed(x=x, len=np.array(lengths, np.int32))
    same_bits(run("ReversePackedSegs", ["x", "len"], ["y"]), x)
    same_bits(run("ReversePackedSegs", ["x", "len"], ["x"]), x)


def test_reverse_packed_segs_rerun_other_shapes_and_dtypes(rng):
    # one output blob, resized from run to run (also float32 -> int32 and back)
    o = op("ReversePackedSegs", ["x", "len"], ["y"])
    for shape, dtype in [((5, 3, 4), np.float32), ((2, 3), np.int32), ((7, 2, 3), np.float32)]:
        x = data(rng, shape, dtype)
        lengths = rng.randint(0, shape[0] + 1, size=shape[1]).astype(np.int32)
        feed(x=x, len=lengths)
        workspace.RunOperatorOnce(o)
        same_bits(workspace.FetchBlob("y"), rev_ref(x, lengths))


# ---------------------------------------------------------------- gradient
@pytest.mark.parametrize("shape,lengths", [((4, 3, 2), [4, 2, 0]), ((5, 2), [3, 5]), ((3, 2, 2, 2), [1, 3])])
@pytest.mark.parametrize("in_place", [False, True])
def test_reverse_packed_segs_gradient_fd(rng, shape, lengths, in_place):
    o = op("ReversePackedSegs", ["x", "len"], ["x" if in_place else "y"])
    inputs = [f32(rng, *shape), np.array(lengths, np.int32)]
    check_grads(o, inputs, indices=[0], stepsize=1e-2, threshold=1e-2)


def test_reverse_packed_segs_gradient_maker():
    ops, g = G(op("ReversePackedSegs", ["x", "len"], ["y"]), ["dy"])
    assert g == ["x_grad", None]
    assert ops_of(ops) == [("ReversePackedSegs", ["dy", "len"], ["x_grad"], [])]
    assert G(op("ReversePackedSegs", ["x", "len"], ["y"]), [None]) == ([], [None, None])
    # in place forward: the gradient op runs in place on dY
    ops, g = G(op("ReversePackedSegs", ["x", "len"], ["x"]), ["x_grad"])
    assert ops_of(ops) == [("ReversePackedSegs", ["x_grad", "len"], ["x_grad"], [])]


@pytest.mark.parametrize("in_place", [False, True])
def test_reverse_packed_segs_add_gradient_operators(rng, in_place):
    net = core.Net("rev_bw")
    y = net.ReversePackedSegs(["x", "len"], "x" if in_place else "y")
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    assert gmap.get("len") is None
    x, w = f32(rng, 4, 3, 2), f32(rng, 4, 3, 2)
    lengths = np.array([3, 0, 4], np.int32)
    feed(x=x, w=w, len=lengths)
    workspace.RunNetOnce(net)
    # d/dx sum(rev(x) * w) = rev(w)
    same_bits(workspace.FetchBlob(str(gmap["x"])), rev_ref(w, lengths))


# ---------------------------------------------------------------- bad input
REV_BAD = [
    # (x, lengths, exception, message): refused at run and at net creation
    (np.ones(3, np.float32), np.ones(1, np.int32), ValueError,
     r"op ReversePackedSegs #0: input 0 blob 'x' \(data\) must have at least 2 dims \(T, N, \.\.\.\), got "
     r"\(3,\) float32"),
    (np.ones((3, 2), np.float32), np.ones(2, np.float32), TypeError,
     r"op ReversePackedSegs #0: input 1 blob 'len' must be int32, got \(2,\) float32"),
    (np.ones((3, 2, 4), np.float32), np.ones(3, np.int32), ValueError,
     r"op ReversePackedSegs #0: input 1 blob 'len' \(lengths\) must have shape \(2,\), one length per batch "
     r"entry \(dim 1\) of input 0 blob 'x' of shape \(3, 2, 4\) float32, got \(3,\) int32"),
    (np.ones((3, 2), np.float32), np.ones((2, 1), np.int32), ValueError,
     r"op ReversePackedSegs #0: input 1 blob 'len' \(lengths\) must have shape \(2,\), .* got "
     r"\(2, 1\) int32"),
    (np.ones((3, 2), np.float32), np.ones((), np.int32), ValueError,
     r"op ReversePackedSegs #0: input 1 blob 'len' \(lengths\) must have shape \(2,\), .* got \(\) int32"),
]


@pytest.mark.parametrize("x,lengths,exc,msg", REV_BAD)
def test_reverse_packed_segs_bad_input(x, lengths, exc, msg):
    feed(x=x, len=lengths)
    with pytest.raises(exc, match=msg):
        workspace.RunOperatorOnce(op("ReversePackedSegs", ["x", "len"], ["y"]))
    net = core.Net("rev_bad")
    net.ReversePackedSegs(["x", "len"], "y")
    with pytest.raises(exc, match="net 'rev_bad[^']*': " + msg):
        workspace.CreateNet(net)
    # the workspace stays usable
    feed(x=np.arange(6, dtype=np.float32).reshape(3, 2), len=np.array([3, 2], np.int32))
    np.testing.assert_array_equal(run("ReversePackedSegs", ["x", "len"], ["y"]), [[4, 3], [2, 1], [0, 5]])


@pytest.mark.parametrize("lengths,pos,val", [([2, -1, 0], 1, -1), ([4, 0, 5], 2, 5),
                                             ([-2147483648, 0, 0], 0, -2147483648)])
def test_reverse_packed_segs_length_out_of_range_at_run(lengths, pos, val):
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    feed(x=x, len=np.array(lengths, np.int32))
    msg = (r"op ReversePackedSegs #0: input 1 blob 'len' \(lengths\) holds %d at position %d, "
           r"outside \[0, 4\] \(T = dim 0 of input 0 blob 'x' of shape \(4, 3, 2\) float32\)" % (val, pos))
    with pytest.raises(ValueError, match=msg):
        workspace.RunOperatorOnce(op("ReversePackedSegs", ["x", "len"], ["y"]))
    # a data value: the net is created, the run refuses, the output (and in place, the input) untouched
    feed(y=np.full(2, 9.0, np.float32))
    net = core.Net("rev_range")
    net.ReversePackedSegs(["x", "len"], "y")
    net.ReversePackedSegs(["x", "len"], "x")
    workspace.CreateNet(net)
    with pytest.raises(ValueError, match=msg):
        workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [9.0, 9.0])
    with pytest.raises(ValueError, match=msg):
        workspace.RunOperatorOnce(op("ReversePackedSegs", ["x", "len"], ["x"]))
    same_bits(workspace.FetchBlob("x"), x)
    feed(len=np.array([4, 0, 1], np.int32))
    workspace.RunNet(net)
    same_bits(workspace.FetchBlob("y"), rev_ref(x, [4, 0, 1]))


def test_reverse_packed_segs_missing_input_arity_and_in_place_on_lengths_refused():
    feed(len=np.ones(2, np.int32))
    with pytest.raises(KeyError, match=r"op ReversePackedSegs #0: input 0 blob 'x' does not exist"):
        workspace.RunOperatorOnce(op("ReversePackedSegs", ["x", "len"], ["y"]))
    feed(x=np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"op ReversePackedSegs #0: .*same blob 'len'"):
        workspace.RunOperatorOnce(op("ReversePackedSegs", ["x", "len"], ["len"]))
    with pytest.raises(ValueError, match=r"ReversePackedSegs"):
        workspace.RunOperatorOnce(op("ReversePackedSegs", ["x"], ["y"]))


# ---------------------------------------------------------------- Caffe2's bidirectional encoder
def bidirectional_encoder(model, x, lengths, h0, c0, D, H):
    """seq2seq_util.rnn_bidirectional_layer's pattern: a forward LSTM, an LSTM
    over the reversed inputs whose outputs are reversed back, both concatenated
    on the feature axis."""
    fw, _, _, _ = rnn_cell.LSTM(model, x, lengths, [h0, c0], D, H, scope="fw")
    x_rev = model.net.ReversePackedSegs([x, lengths], "x_rev")
    bw_rev, _, _, _ = rnn_cell.LSTM(model, x_rev, lengths, [h0, c0], D, H, scope="bw")
    bw = model.net.ReversePackedSegs([bw_rev, lengths], "bw")
    outputs, _ = model.net.Concat([fw, bw], ["outputs", "outputs_dim"], axis=2)
    return outputs


def build_encoder(rng, T, N, D, H, lengths):
    model = ModelHelper(name="bidir")
    outputs = bidirectional_encoder(model, "x", "len", "h0", "c0", D, H)
    workspace.RunNetOnce(model.param_init_net)
    params = [n for scope in ("fw", "bw") for n in lstm_params(scope, 1)[0]]
    randomize_params(rng, params, scale=0.8)
    x, h0, c0 = f32(rng, T, N, D), f32(rng, 1, N, H), f32(rng, 1, N, H)
    feed(x=x, len=np.array(lengths, np.int32), h0=h0, c0=c0)
    return model, outputs, params, x, h0, c0


def test_bidirectional_encoder_vs_numpy(rng):
    T, N, D, H = 6, 4, 3, 5
    lengths = [6, 3, 1, 0]
    model, outputs, params, x, h0, c0 = build_encoder(rng, T, N, D, H, lengths)
    workspace.RunNetOnce(model.net)
    out = workspace.FetchBlob(str(outputs))
    assert out.shape == (T, N, 2 * H)
    w = {s: [workspace.FetchBlob(n).astype(np.float64) for n in lstm_params(s, 1)[0]] for s in ("fw", "bw")}
    for b, L in enumerate(lengths):
        s0 = (h0[0, b:b + 1].astype(np.float64), c0[0, b:b + 1].astype(np.float64))
        seq = x[:L, b:b + 1].astype(np.float64)
        fw_ref = lstm_layer_ref(seq, *s0, *w["fw"])[0][:, 0]            # (L, H)
        bw_ref = lstm_layer_ref(seq[::-1], *s0, *w["bw"])[0][::-1, 0]   # run on the reversal, reversed back
        report("bidir_fw_%d" % b, out[:L, b, :H], fw_ref)
        report("bidir_bw_%d" % b, out[:L, b, H:], bw_ref)
        np.testing.assert_allclose(out[:L, b, :H], fw_ref, rtol=1e-4, atol=2e-5)
        np.testing.assert_allclose(out[:L, b, H:], bw_ref, rtol=1e-4, atol=2e-5)
        # past the length both directions hold their last state (h0 for a length of 0)
        last_fw = fw_ref[-1] if L else s0[0][0]
        last_bw = bw_ref[0] if L else s0[0][0]
        for t in range(L, T):
            np.testing.assert_allclose(out[t, b, :H], last_fw, rtol=1e-4, atol=2e-5)
            np.testing.assert_allclose(out[t, b, H:], last_bw, rtol=1e-4, atol=2e-5)
    # the backward direction really saw the steps in reverse: its first output depends on the last step
    x2 = x.copy()
    x2[lengths[0] - 1, 0] += 1.0
    feed(x=x2)
    workspace.RunNetOnce(model.net)
    out2 = workspace.FetchBlob(str(outputs))
    assert np.array_equal(out2[:lengths[0] - 1, 0, :H], out[:lengths[0] - 1, 0, :H])
    assert not np.allclose(out2[0, 0, H:], out[0, 0, H:])


def test_bidirectional_encoder_gradients_fd(rng):
    T, N, D, H = 3, 3, 2, 2
    model, outputs, params, x, h0, c0 = build_encoder(rng, T, N, D, H, [3, 1, 0])
    got = fd_check(rng, model, [outputs], (0,), ["x", "h0", "c0"] + params, "bidir")
    # the padding steps of x have no effect on the outputs
    assert (got["x"][1:, 1] == 0).all() and (got["x"][:, 2] == 0).all() and (got["x"][:, 0] != 0).all()
