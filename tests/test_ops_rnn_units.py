"""LSTMUnit / GRUUnit and their gradient ops (spec/recurrent-network.md §5).

Forward and gradient ops against NumPy references (float64), gradients by
finite differences, and bad-input messages naming the op and the blob.
"""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.gradient_checker import GradientChecker
from recurrent.proto import OperatorDef, make_argument


# ---------------------------------------------------------------- helpers
def _op(type_, inputs, outputs, **args):
    op = OperatorDef(type_, inputs, outputs)
    for k, v in args.items():
        op.arg.append(make_argument(k, v))
    return op


def _feed(**blobs):
    for k, v in blobs.items():
        workspace.FeedBlob(k, v)


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _valid(n, t, seq):
    return np.ones(n, bool) if seq is None else (t < seq)


def lstm_ref(h_prev, c_prev, gates, seq, t, forget_bias=0.0, drop_states=False):
    """NumPy LSTMUnit in float64. Shapes 1xNxD, 1xNxD, 1xNx4D."""
    h_prev, c_prev, x = (a.astype(np.float64) for a in (h_prev, c_prev, gates))
    D = c_prev.shape[2]
    i = _sig(x[..., :D])
    f = _sig(x[..., D:2 * D] + forget_bias)
    o = _sig(x[..., 2 * D:3 * D])
    g = np.tanh(x[..., 3 * D:])
    c = f * c_prev + i * g
    h = o * np.tanh(c)
    v = _valid(c_prev.shape[1], t, seq)[None, :, None]
    keep_h = np.zeros_like(h_prev) if drop_states else h_prev
    keep_c = np.zeros_like(c_prev) if drop_states else c_prev
    return np.where(v, h, keep_h), np.where(v, c, keep_c)


def lstm_grad_ref(h_prev, c_prev, gates, seq, t, dh, dc, forget_bias=0.0, drop_states=False):
    """Analytic gradient of (h, c) -> (dh_prev, dc_prev, dgates), float64."""
    c_prev, x, dh, dc = (a.astype(np.float64) for a in (c_prev, gates, dh, dc))
    D = c_prev.shape[2]
    i = _sig(x[..., :D])
    f = _sig(x[..., D:2 * D] + forget_bias)
    o = _sig(x[..., 2 * D:3 * D])
    g = np.tanh(x[..., 3 * D:])
    c = f * c_prev + i * g
    tc = np.tanh(c)
    ct = dc + dh * o * (1 - tc ** 2)
    dgates = np.concatenate([ct * g * i * (1 - i), ct * c_prev * f * (1 - f), dh * tc * o * (1 - o),
                             ct * i * (1 - g ** 2)], axis=2)
    v = _valid(c_prev.shape[1], t, seq)[None, :, None]
    pass_h = np.zeros_like(dh) if drop_states else dh
    pass_c = np.zeros_like(dc) if drop_states else dc
    return (np.where(v, 0.0, pass_h), np.where(v, ct * f, pass_c), np.where(v, dgates, 0.0))


def gru_ref(h_prev, gates, seq, t, drop_states=False):
    h_prev, x = (a.astype(np.float64) for a in (h_prev, gates))
    D = h_prev.shape[2]
    u = _sig(x[..., D:2 * D])
    o = np.tanh(x[..., 2 * D:])
    h = u * h_prev + (1 - u) * o
    v = _valid(h_prev.shape[1], t, seq)[None, :, None]
    return np.where(v, h, np.zeros_like(h_prev) if drop_states else h_prev)


def gru_grad_ref(h_prev, gates, seq, t, dh, drop_states=False):
    h_prev, x, dh = (a.astype(np.float64) for a in (h_prev, gates, dh))
    D = h_prev.shape[2]
    u = _sig(x[..., D:2 * D])
    o = np.tanh(x[..., 2 * D:])
    dgates = np.concatenate([np.zeros_like(u), (dh * h_prev - dh * o) * u * (1 - u),
                             dh * (1 - u) * (1 - o ** 2)], axis=2)
    v = _valid(h_prev.shape[1], t, seq)[None, :, None]
    return np.where(v, dh * u, np.zeros_like(dh) if drop_states else dh), np.where(v, dgates, 0.0)


def _lstm_data(rng, N, D, scale=1.0):
    f32 = np.float32
    return (rng.randn(1, N, D).astype(f32), rng.randn(1, N, D).astype(f32),
            (scale * rng.randn(1, N, 4 * D)).astype(f32))


def _lstm_inputs(seq_lengths):
    return ["h_prev", "c_prev", "gates"] + (["seq"] if seq_lengths else []) + ["t"]


def run_lstm(h_prev, c_prev, gates, seq, t, **args):
    _feed(h_prev=h_prev, c_prev=c_prev, gates=gates, t=np.array([t], np.int32))
    if seq is not None:
        _feed(seq=seq)
    else:
        args.setdefault("sequence_lengths", 0)
    workspace.RunOperatorOnce(_op("LSTMUnit", _lstm_inputs(seq is not None), ["h", "c"], **args))
    return workspace.FetchBlob("h"), workspace.FetchBlob("c")


def run_lstm_grad(h_prev, c_prev, gates, seq, t, dh, dc, **args):
    if seq is None:
        args.setdefault("sequence_lengths", 0)
    h, c = run_lstm(h_prev, c_prev, gates, seq, t, **args)
    _feed(dh=dh, dc=dc)
    ins = _lstm_inputs(seq is not None) + ["h", "c", "dh", "dc"]
    workspace.RunOperatorOnce(_op("LSTMUnitGradient", ins, ["dh_prev", "dc_prev", "dgates"], **args))
    return [workspace.FetchBlob(b) for b in ("dh_prev", "dc_prev", "dgates")]


def _gru_inputs(seq_lengths):
    return ["h_prev", "gates"] + (["seq"] if seq_lengths else []) + ["t"]


def run_gru(h_prev, gates, seq, t, **args):
    _feed(h_prev=h_prev, gates=gates, t=np.array([t], np.int32))
    if seq is not None:
        _feed(seq=seq)
    else:
        args.setdefault("sequence_lengths", 0)
    workspace.RunOperatorOnce(_op("GRUUnit", _gru_inputs(seq is not None), ["h"], **args))
    return workspace.FetchBlob("h")


def run_gru_grad(h_prev, gates, seq, t, dh, **args):
    if seq is None:
        args.setdefault("sequence_lengths", 0)
    run_gru(h_prev, gates, seq, t, **args)
    _feed(dh=dh)
    ins = _gru_inputs(seq is not None) + ["h", "dh"]
    workspace.RunOperatorOnce(_op("GRUUnitGradient", ins, ["dh_prev", "dgates"], **args))
    return workspace.FetchBlob("dh_prev"), workspace.FetchBlob("dgates")


SEQ = np.array([0, 3, 1, 5, 2, 4], np.int32)   # N = 6; at t = 2 rows 0, 2, 4 are past their length


# ---------------------------------------------------------------- LSTMUnit forward
@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
@pytest.mark.parametrize("forget_bias", [0.0, 1.5])
@pytest.mark.parametrize("D", [5, 300])  # 300: the kernel's blocks of 128 columns, two whole and a part
def test_lstm_unit_forward(rng, use_seq, drop_states, forget_bias, D):
    N, t = 6, 2
    h_prev, c_prev, gates = _lstm_data(rng, N, D, scale=2.0)
    seq = SEQ if use_seq else None
    h, c = run_lstm(h_prev, c_prev, gates, seq, t, forget_bias=forget_bias, drop_states=drop_states)
    rh, rc = lstm_ref(h_prev, c_prev, gates, seq, t, forget_bias, drop_states)
    assert h.shape == c.shape == (1, N, D) and h.dtype == c.dtype == np.float32
    np.testing.assert_allclose(h, rh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, rc, rtol=1e-5, atol=1e-6)
    if use_seq:
        invalid = ~(t < SEQ)
        assert invalid.any() and (~invalid).any()
        if drop_states:
            assert (h[0, invalid] == 0).all() and (c[0, invalid] == 0).all()
        else:  # exact pass-through
            assert (h[0, invalid] == h_prev[0, invalid]).all() and (c[0, invalid] == c_prev[0, invalid]).all()


def test_lstm_unit_default_args_and_timesteps(rng):
    # defaults: sequence_lengths=1, forget_bias=0, drop_states=0; sweep t across the lengths
    h_prev, c_prev, gates = _lstm_data(rng, 6, 3)
    for t in range(7):
        h, c = run_lstm(h_prev, c_prev, gates, SEQ, t)
        rh, rc = lstm_ref(h_prev, c_prev, gates, SEQ, t)
        np.testing.assert_allclose(h, rh, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c, rc, rtol=1e-5, atol=1e-6)


def test_lstm_unit_extreme_gates_are_finite():
    N, D = 2, 3
    gates = np.full((1, N, 4 * D), 200.0, np.float32)
    gates[0, 1] = -200.0
    h, c = run_lstm(np.ones((1, N, D), np.float32), np.ones((1, N, D), np.float32), gates, None, 0)
    assert np.isfinite(h).all() and np.isfinite(c).all()
    np.testing.assert_allclose(c[0, 0], 2.0, rtol=1e-6)        # f*c_prev + i*g = 1 + 1
    np.testing.assert_allclose(c[0, 1], 0.0, atol=1e-6)


def test_lstm_unit_zero_batch():
    f32 = np.float32
    h, c = run_lstm(np.zeros((1, 0, 4), f32), np.zeros((1, 0, 4), f32), np.zeros((1, 0, 16), f32),
                    np.zeros((0,), np.int32), 0)
    assert h.shape == c.shape == (1, 0, 4)
    g = run_lstm_grad(np.zeros((1, 0, 4), f32), np.zeros((1, 0, 4), f32), np.zeros((1, 0, 16), f32),
                      np.zeros((0,), np.int32), 0, np.zeros((1, 0, 4), f32), np.zeros((1, 0, 4), f32))
    assert [a.shape for a in g] == [(1, 0, 4), (1, 0, 4), (1, 0, 16)]


def test_lstm_unit_rerun_with_new_shape(rng):
    for N, D in [(3, 4), (5, 2), (3, 4)]:
        h_prev, c_prev, gates = _lstm_data(rng, N, D)
        seq = np.full(N, 9, np.int32)
        h, c = run_lstm(h_prev, c_prev, gates, seq, 0)
        rh, rc = lstm_ref(h_prev, c_prev, gates, seq, 0)
        np.testing.assert_allclose(h, rh, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c, rc, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- LSTMUnitGradient
@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
@pytest.mark.parametrize("forget_bias", [0.0, 1.0])
def test_lstm_unit_gradient_op(rng, use_seq, drop_states, forget_bias):
    N, D, t = 6, 4, 2
    h_prev, c_prev, gates = _lstm_data(rng, N, D)
    dh, dc = rng.randn(1, N, D).astype(np.float32), rng.randn(1, N, D).astype(np.float32)
    seq = SEQ if use_seq else None
    got = run_lstm_grad(h_prev, c_prev, gates, seq, t, dh, dc, forget_bias=forget_bias,
                        drop_states=drop_states)
    want = lstm_grad_ref(h_prev, c_prev, gates, seq, t, dh, dc, forget_bias, drop_states)
    for g, w, name in zip(got, want, ("dh_prev", "dc_prev", "dgates")):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=name)
    if use_seq and not drop_states:
        invalid = ~(t < SEQ)
        assert (got[0][0, invalid] == dh[0, invalid]).all() and (got[1][0, invalid] == dc[0, invalid]).all()


def _num_grad(f, x, eps=1e-3):
    """Central differences of scalar f (float64) w.r.t. x (modified in place)."""
    g = np.zeros(x.shape, np.float64)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = x[idx]
        x[idx] = old + eps
        fp = f()
        x[idx] = old - eps
        fm = f()
        x[idx] = old
        g[idx] = (fp - fm) / (2 * eps)
    return g


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
def test_lstm_unit_gradient_op_vs_numpy_finite_differences(rng, use_seq, drop_states):
    # The C gradient against central differences of the float64 NumPy forward (independent of the
    # analytic reference above), including the rows past their length.
    N, D, t = 6, 3, 2
    h_prev, c_prev, gates = (a.astype(np.float64) for a in _lstm_data(rng, N, D))
    wh, wc = rng.randn(1, N, D), rng.randn(1, N, D)
    seq = SEQ if use_seq else None

    def loss():
        h, c = lstm_ref(h_prev, c_prev, gates, seq, t, 0.5, drop_states)
        return (wh * h).sum() + (wc * c).sum()

    f32 = np.float32
    got = run_lstm_grad(h_prev.astype(f32), c_prev.astype(f32), gates.astype(f32), seq, t, wh.astype(f32),
                        wc.astype(f32), forget_bias=0.5, drop_states=drop_states)
    for g, x in zip(got, (h_prev, c_prev, gates)):
        np.testing.assert_allclose(g, _num_grad(loss, x), rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------- GRUUnit
@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
def test_gru_unit_forward(rng, use_seq, drop_states):
    N, D, t = 6, 5, 2
    h_prev = rng.randn(1, N, D).astype(np.float32)
    gates = (2 * rng.randn(1, N, 3 * D)).astype(np.float32)
    seq = SEQ if use_seq else None
    # forget_bias is passed by the Python GRU cell and must be accepted and ignored
    h = run_gru(h_prev, gates, seq, t, drop_states=drop_states, forget_bias=3.0)
    assert h.shape == (1, N, D) and h.dtype == np.float32
    np.testing.assert_allclose(h, gru_ref(h_prev, gates, seq, t, drop_states), rtol=1e-5, atol=1e-6)
    # the reset gate is unused inside the unit
    gates2 = gates.copy()
    gates2[..., :D] = 100.0
    np.testing.assert_array_equal(run_gru(h_prev, gates2, seq, t, drop_states=drop_states), h)
    if use_seq:
        invalid = ~(t < SEQ)
        want = 0 if drop_states else h_prev[0, invalid]
        assert (h[0, invalid] == want).all()


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
def test_gru_unit_gradient_op(rng, use_seq, drop_states):
    N, D, t = 6, 4, 2
    h_prev = rng.randn(1, N, D).astype(np.float32)
    gates = rng.randn(1, N, 3 * D).astype(np.float32)
    dh = rng.randn(1, N, D).astype(np.float32)
    seq = SEQ if use_seq else None
    got = run_gru_grad(h_prev, gates, seq, t, dh, drop_states=drop_states)
    want = gru_grad_ref(h_prev, gates, seq, t, dh, drop_states)
    for g, w, name in zip(got, want, ("dh_prev", "dgates")):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=name)

    # and against central differences of the float64 NumPy forward
    h64, g64, w = h_prev.astype(np.float64), gates.astype(np.float64), dh.astype(np.float64)

    def loss():
        return (w * gru_ref(h64, g64, seq, t, drop_states)).sum()

    np.testing.assert_allclose(got[0], _num_grad(loss, h64), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(got[1], _num_grad(loss, g64), rtol=1e-3, atol=1e-4)


def test_gru_unit_zero_batch():
    f32 = np.float32
    h = run_gru(np.zeros((1, 0, 3), f32), np.zeros((1, 0, 9), f32), np.zeros((0,), np.int32), 0)
    assert h.shape == (1, 0, 3)
    dh_prev, dg = run_gru_grad(np.zeros((1, 0, 3), f32), np.zeros((1, 0, 9), f32), None, 0,
                               np.zeros((1, 0, 3), f32))
    assert dh_prev.shape == (1, 0, 3) and dg.shape == (1, 0, 9)


# ---------------------------------------------------------------- bad input
def _lstm_feed_ok(N=3, D=2):
    f32 = np.float32
    _feed(h_prev=np.zeros((1, N, D), f32), c_prev=np.zeros((1, N, D), f32),
          gates=np.zeros((1, N, 4 * D), f32), seq=np.ones(N, np.int32), t=np.array([0], np.int32))


def _raises(op, exc, match):
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(op)


LSTM_IN = ["h_prev", "c_prev", "gates", "seq", "t"]


def _lstm_raises(exc, match):
    _raises(_op("LSTMUnit", LSTM_IN, ["h", "c"]), exc, match)


def test_lstm_unit_bad_gates_width():
    _lstm_feed_ok()
    workspace.FeedBlob("gates", np.zeros((1, 3, 7), np.float32))
    _lstm_raises(ValueError, r"op LSTMUnit #0: input 2 blob 'gates'.*\(1, 3, 7\)")


def test_lstm_unit_bad_seq_lengths():
    _lstm_feed_ok()
    workspace.FeedBlob("seq", np.ones(4, np.int32))
    _lstm_raises(ValueError, r"op LSTMUnit #0: input 3 blob 'seq'.*N=3.*\(4,\)")
    workspace.FeedBlob("seq", np.ones(3, np.float32))
    _lstm_raises(TypeError, r"op LSTMUnit #0: input 3 blob 'seq' must be int32")


def test_lstm_unit_bad_timestep():
    _lstm_feed_ok()
    # missing: only 4 inputs while sequence_lengths=1
    with pytest.raises(ValueError, match=r"op LSTMUnit #0: expects 5 inputs.*timestep"):
        workspace.RunOperatorOnce(_op("LSTMUnit", LSTM_IN[:4], ["h", "c"]))
    workspace.FeedBlob("t", np.array([0.0], np.float32))
    _lstm_raises(TypeError, r"op LSTMUnit #0: input 4 blob 't' must be int32")
    workspace.FeedBlob("t", np.array([0, 1], np.int32))
    _lstm_raises(ValueError, r"op LSTMUnit #0: input 4 blob 't' \(timestep\)")
    # sequence_lengths=0 with a seq_lengths input still given: 5 inputs for 4 slots
    with pytest.raises(ValueError, match=r"op LSTMUnit #0: expects 4 inputs.*sequence_lengths=0, got 5"):
        workspace.RunOperatorOnce(_op("LSTMUnit", LSTM_IN, ["h", "c"], sequence_lengths=0))


def test_lstm_unit_bad_state_shapes():
    _lstm_feed_ok()
    workspace.FeedBlob("h_prev", np.zeros((1, 3, 3), np.float32))
    _lstm_raises(ValueError,
            r"op LSTMUnit #0: input 0 blob 'h_prev' .*shape of input 1 'c_prev' \(1, 3, 2\).*\(1, 3, 3\)")
    _lstm_feed_ok()
    workspace.FeedBlob("c_prev", np.zeros((3, 2), np.float32))
    _lstm_raises(ValueError, r"op LSTMUnit #0: input 1 blob 'c_prev'.*1xNxD.*\(3, 2\)")
    _lstm_feed_ok()
    workspace.FeedBlob("c_prev", np.zeros((1, 3, 2), np.int32))
    _lstm_raises(TypeError, r"op LSTMUnit #0: input 1 blob 'c_prev' must be float32")


def test_lstm_unit_gradient_bad_inputs():
    _lstm_feed_ok()
    workspace.RunOperatorOnce(_op("LSTMUnit", LSTM_IN, ["h", "c"]))
    _feed(dh=np.zeros((1, 3, 2), np.float32), dc=np.zeros((1, 3, 5), np.float32))
    ins = LSTM_IN + ["h", "c", "dh", "dc"]
    _raises(_op("LSTMUnitGradient", ins, ["a", "b", "d"]), ValueError,
            r"op LSTMUnitGradient #0: input 8 blob 'dc' \(cell_t_grad\)")
    with pytest.raises(ValueError, match=r"op LSTMUnitGradient #0: expects 9 inputs"):
        workspace.RunOperatorOnce(_op("LSTMUnitGradient", ins[:8], ["a", "b", "d"]))


def test_gru_unit_bad_inputs():
    f32 = np.float32
    _feed(h_prev=np.zeros((1, 3, 2), f32), gates=np.zeros((1, 3, 8), f32), seq=np.ones(3, np.int32),
          t=np.array([0], np.int32))
    ins = ["h_prev", "gates", "seq", "t"]
    _raises(_op("GRUUnit", ins, ["h"]), ValueError,
            r"op GRUUnit #0: input 1 blob 'gates'.*3\*D=6.*\(1, 3, 8\)")
    workspace.FeedBlob("gates", np.zeros((1, 3, 6), f32))
    workspace.FeedBlob("seq", np.ones(2, np.int32))
    _raises(_op("GRUUnit", ins, ["h"]), ValueError, r"op GRUUnit #0: input 2 blob 'seq'")
    workspace.FeedBlob("seq", np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"op GRUUnit #0: expects 4 inputs.*timestep"):
        workspace.RunOperatorOnce(_op("GRUUnit", ins[:3], ["h"]))
    workspace.FeedBlob("t", np.array([0.0], f32))
    _raises(_op("GRUUnit", ins, ["h"]), TypeError, r"op GRUUnit #0: input 3 blob 't' must be int32")


# ---------------------------------------------------------------- gradient makers + finite differences
def _check(op, inputs, idx, outs, grad_ops=None):
    ok, grad, est = GradientChecker(5e-3, 1e-2).CheckSimple(op, inputs, idx, outs, grad_ops=grad_ops)
    assert ok, "input %d: grad\n%s\nestimate\n%s" % (idx, grad, est)
    return grad


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
def test_lstm_unit_gradient_checker(rng, use_seq, drop_states):
    # Rows past their length are exact copies (or zeros) whatever the float inputs are, so finite
    # differences are exact there too: keep some invalid rows in.
    N, D, t = 6, 3, 2
    h_prev, c_prev, gates = _lstm_data(rng, N, D)
    args = dict(forget_bias=0.7, drop_states=drop_states)
    if use_seq:
        inputs = [h_prev, c_prev, gates, SEQ, np.array([t], np.int32)]
    else:
        inputs = [h_prev, c_prev, gates, np.array([t], np.int32)]
        args["sequence_lengths"] = 0
    op = core.CreateOperator("LSTMUnit", _lstm_inputs(use_seq), ["h", "c"], **args)
    for idx in range(3):
        grad = _check(op, inputs, idx, [0, 1])
        if idx == 0 and not use_seq:
            assert (grad == 0).all()   # dh_prev is 0 for valid rows: h_prev reaches h only via the gates


def test_lstm_unit_gradient_maker_structure():
    op = core.CreateOperator("LSTMUnit", ["hp", "cp", "g", "s", "t"], ["h", "c"], forget_bias=1.0,
                             drop_states=True)
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["h_g", "c_g"])
    assert len(ops) == 1 and ops[0].type == "LSTMUnitGradient"
    assert ops[0].input == ["hp", "cp", "g", "s", "t", "h", "c", "h_g", "c_g"]
    assert ops[0].output == ["hp_grad", "cp_grad", "g_grad"]
    assert g_in == ["hp_grad", "cp_grad", "g_grad", None, None]
    assert {a.name: a.value() for a in ops[0].arg} == {"forget_bias": 1.0, "drop_states": 1}

    op = core.CreateOperator("LSTMUnit", ["hp", "cp", "g", "t"], ["h", "c"], sequence_lengths=0)
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["h_g", "c_g"])
    assert ops[0].input == ["hp", "cp", "g", "t", "h", "c", "h_g", "c_g"]
    assert g_in == ["hp_grad", "cp_grad", "g_grad", None]
    assert [a.name for a in ops[0].arg] == ["sequence_lengths"]

    # a missing output gradient becomes zeros shaped like the output
    ops, g_in = core.GradientRegistry.GetGradientForOp(
        core.CreateOperator("LSTMUnit", ["hp", "cp", "g", "s", "t"], ["h", "c"]), ["h_g", None])
    assert [o.type for o in ops] == ["ConstantFill", "LSTMUnitGradient"]
    assert ops[0].input == ["c"] and ops[1].input[-2:] == ["h_g", ops[0].output[0]]


@pytest.mark.parametrize("missing", [0, 1])
def test_lstm_unit_gradient_with_one_output_gradient(rng, missing):
    # loss on h only (or c only): the maker zero-fills the other output gradient
    N, D, t = 6, 3, 2
    h_prev, c_prev, gates = _lstm_data(rng, N, D)
    inputs = [h_prev, c_prev, gates, SEQ, np.array([t], np.int32)]
    op = core.CreateOperator("LSTMUnit", _lstm_inputs(True), ["h", "c"])
    g_out = ["h_grad", "c_grad"]
    g_out[missing] = None
    grad_ops, _ = core.GradientRegistry.GetGradientForOp(op, g_out)
    assert grad_ops[0].type == "ConstantFill"
    kept = 1 - missing
    for idx in range(3):
        _check(op, inputs, idx, [kept], grad_ops=grad_ops)


def test_lstm_unit_backward_pass_loss_on_hidden_only(rng):
    # GetBackwardPass with ys=[h]: h is seeded with ones, c has no gradient at all
    N, D, t = 6, 3, 2
    h_prev, c_prev, gates = _lstm_data(rng, N, D)
    _feed(h_prev=h_prev, c_prev=c_prev, gates=gates, seq=SEQ, t=np.array([t], np.int32))
    fwd = core.CreateOperator("LSTMUnit", _lstm_inputs(True), ["h", "c"], forget_bias=0.3)
    grad_ops, grad_map = core.GradientRegistry.GetBackwardPass([fwd], ["h"])
    assert str(grad_map["gates"]) == "gates_grad"
    workspace.RunOperatorOnce(fwd)
    workspace.RunOperatorsOnce(grad_ops)
    want = lstm_grad_ref(h_prev, c_prev, gates, SEQ, t, np.ones((1, N, D)), np.zeros((1, N, D)), 0.3)
    for name, w in zip(("h_prev_grad", "c_prev_grad", "gates_grad"), want):
        np.testing.assert_allclose(workspace.FetchBlob(name), w, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("drop_states", [False, True])
def test_gru_unit_gradient_checker(rng, use_seq, drop_states):
    N, D, t = 6, 3, 2
    h_prev = rng.randn(1, N, D).astype(np.float32)
    gates = rng.randn(1, N, 3 * D).astype(np.float32)
    args = dict(drop_states=drop_states, forget_bias=0.0)
    if use_seq:
        inputs = [h_prev, gates, SEQ, np.array([t], np.int32)]
    else:
        inputs = [h_prev, gates, np.array([t], np.int32)]
        args["sequence_lengths"] = 0
    op = core.CreateOperator("GRUUnit", _gru_inputs(use_seq), ["h"], **args)
    for idx in range(2):
        _check(op, inputs, idx, [0])


def test_gru_unit_gradient_maker_structure():
    op = core.CreateOperator("GRUUnit", ["hp", "g", "s", "t"], ["h"], drop_states=True, forget_bias=0.5)
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["h_g"])
    assert len(ops) == 1 and ops[0].type == "GRUUnitGradient"
    assert ops[0].input == ["hp", "g", "s", "t", "h", "h_g"]
    assert ops[0].output == ["hp_grad", "g_grad"]
    assert g_in == ["hp_grad", "g_grad", None, None]
    op = core.CreateOperator("GRUUnit", ["hp", "g", "t"], ["h"], sequence_lengths=False)
    ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["h_g"])
    assert ops[0].input == ["hp", "g", "t", "h", "h_g"] and g_in == ["hp_grad", "g_grad", None]
