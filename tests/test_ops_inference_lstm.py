"""InferenceLSTM (csrc/ops/inference_lstm.c): torch.nn.LSTM's forward over a whole sequence with torch's
weights, as Caffe2's InferenceLSTM. Checked against a float64 NumPy loop over layers, directions,
batch_first, has_biases and empty sizes; against torch.nn.LSTM where torch is installed; bad inputs;
scratch reuse across shapes; no gradient."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.errors import ValueError as RcValueError

from op_helpers import feed, usable


def run(op):
    workspace.RunOperatorOnce(op)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(x, hx, cx, weights, L, bidir, bf, bias):
    """float64 loop; weights a flat list as the op takes them. Returns (output, hy, cy)."""
    dirs, per = (2 if bidir else 1), (4 if bias else 2)
    x = x.astype(np.float64)
    if bf:
        x = x.transpose(1, 0, 2)
    T, N = x.shape[:2]
    H = hx.shape[2]
    hy, cy = hx.astype(np.float64).copy(), cx.astype(np.float64).copy()
    inp = x
    for layer in range(L):
        out = np.zeros((T, N, dirs * H))
        for d in range(dirs):
            e = layer * dirs + d
            w = [np.asarray(a, np.float64) for a in weights[e * per:(e + 1) * per]]
            b = w[2] + w[3] if bias else np.zeros(4 * H)
            h, c = hy[e], cy[e]
            for t in (range(T - 1, -1, -1) if d else range(T)):
                g = inp[t] @ w[0].T + h @ w[1].T + b
                i, f, gg, o = sigmoid(g[:, :H]), sigmoid(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), sigmoid(g[:, 3 * H:])
                c = f * c + i * gg
                h = o * np.tanh(c)
                out[t, :, d * H:(d + 1) * H] = h
            hy[e], cy[e] = h, c
        inp = out
    if bf:
        inp = inp.transpose(1, 0, 2)
    return inp, hy, cy


def make(rng, T, N, D, H, L, bidir=False, bf=False, bias=True, scale=0.5):
    dirs = 2 if bidir else 1
    x = rng.uniform(-1, 1, (N, T, D) if bf else (T, N, D)).astype(np.float32)
    hx = rng.uniform(-1, 1, (L * dirs, N, H)).astype(np.float32)
    cx = rng.uniform(-1, 1, (L * dirs, N, H)).astype(np.float32)
    weights = []
    for layer in range(L):
        for _ in range(dirs):
            din = D if layer == 0 else dirs * H
            weights += [rng.uniform(-scale, scale, (4 * H, din)).astype(np.float32),
                        rng.uniform(-scale, scale, (4 * H, H)).astype(np.float32)]
            if bias:
                weights += [rng.uniform(-scale, scale, 4 * H).astype(np.float32) for _ in range(2)]
    return x, hx, cx, weights


def op_for(n_w, L, bidir, bf, bias, outs=("y", "hy", "cy"), **extra):
    kw = dict(num_layers=L, bidirectional=int(bidir), batch_first=int(bf), has_biases=int(bias))
    kw.update(extra)
    return core.CreateOperator("InferenceLSTM", ["x", "hx", "cx"] + ["w%d" % i for i in range(n_w)], list(outs),
                               **kw)


def run_lstm(x, hx, cx, weights, L, bidir, bf, bias):
    feed(x=x, hx=hx, cx=cx, **{"w%d" % i: w for i, w in enumerate(weights)})
    run(op_for(len(weights), L, bidir, bf, bias))
    return [workspace.FetchBlob(b) for b in ("y", "hy", "cy")]


CONFIGS = [  # T, N, D, H, L, bidir, batch_first, has_biases
    (5, 3, 4, 6, 1, False, False, True),
    (6, 2, 3, 5, 2, True, False, True),
    (4, 3, 5, 4, 3, False, True, False),
    (7, 2, 3, 4, 2, True, True, True),
    (1, 1, 1, 1, 1, True, False, False),
    (0, 3, 4, 5, 2, True, False, True),   # T = 0: empty output, hy = hx, cy = cx
    (4, 0, 3, 5, 2, False, True, True),   # N = 0
    (3, 2, 0, 4, 2, True, False, True),   # D = 0: the first layer sees only its states
    (3, 2, 4, 0, 2, True, True, True),    # H = 0
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_inference_lstm_vs_numpy(rng, cfg):
    T, N, D, H, L, bidir, bf, bias = cfg
    x, hx, cx, w = make(rng, T, N, D, H, L, bidir, bf, bias)
    got = run_lstm(x, hx, cx, w, L, bidir, bf, bias)
    want = reference(x, hx, cx, w, L, bidir, bf, bias)
    for g, r in zip(got, want):
        assert g.dtype == np.float32 and g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=2e-6)
    if T == 0:
        np.testing.assert_array_equal(got[1], hx)
        np.testing.assert_array_equal(got[2], cx)


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if min(c[0], c[2], c[3]) > 0])  # torch refuses T, D or H = 0
def test_inference_lstm_vs_torch(rng, cfg):
    """torch.nn.LSTM's parameters in named_parameters() order are the op's weights in input order."""
    torch = pytest.importorskip("torch")
    T, N, D, H, L, bidir, bf, bias = cfg
    lstm = torch.nn.LSTM(D, H, num_layers=L, bidirectional=bidir, batch_first=bf, bias=bias)
    x, hx, cx, _ = make(rng, T, N, D, H, L, bidir, bf, bias)
    w = [p.detach().numpy().copy() for _, p in lstm.named_parameters()]
    got = run_lstm(x, hx, cx, w, L, bidir, bf, bias)
    with torch.no_grad():
        y, (hy, cy) = lstm(torch.from_numpy(x), (torch.from_numpy(hx), torch.from_numpy(cx)))
    for g, r in zip(got, (y, hy, cy)):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-5, atol=1e-6)


def test_inference_lstm_same_bits_each_run_and_across_shapes(rng):
    """The scratch grows and is reused: a large run, a small one, the large one again give the same bits
    as the first (and the small one its reference)."""
    big = make(rng, 9, 5, 6, 7, 2, True, False, True)
    small = make(rng, 2, 1, 6, 3, 2, True, False, True)
    first = run_lstm(*big, 2, True, False, True)
    got_small = run_lstm(*small, 2, True, False, True)
    again = run_lstm(*big, 2, True, False, True)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    for g, r in zip(got_small, reference(*small, 2, True, False, True)):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=2e-6)


def test_inference_lstm_states_fed_back(rng):
    """Two runs over halves of a sequence, the second starting from the first's hy, cy (blobs the first
    wrote), equal one run over the whole sequence."""
    x, hx, cx, w = make(rng, 6, 2, 3, 4, 2, False, False, True)
    whole = run_lstm(x, hx, cx, w, 2, False, False, True)
    feed(x=x[:3], hx=hx, cx=cx, **{"w%d" % i: a for i, a in enumerate(w)})
    run(op_for(len(w), 2, False, False, True, outs=("y1", "h1", "c1")))
    feed(x2=x[3:])
    run(core.CreateOperator("InferenceLSTM", ["x2", "h1", "c1"] + ["w%d" % i for i in range(len(w))],
                            ["y2", "h2", "c2"], num_layers=2))
    y = np.concatenate([workspace.FetchBlob("y1"), workspace.FetchBlob("y2")])
    np.testing.assert_allclose(y, whole[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(workspace.FetchBlob("h2"), whole[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(workspace.FetchBlob("c2"), whole[2], rtol=1e-6, atol=1e-7)


def test_inference_lstm_has_no_gradient(rng):
    x, hx, cx, w = make(rng, 3, 2, 3, 4, 1)
    feed(x=x, hx=hx, cx=cx, **{"w%d" % i: a for i, a in enumerate(w)})
    net = core.Net("ilstm_grad")
    net.Proto().op.append(op_for(len(w), 1, False, False, True))
    y = net.Sum(["y"], "y_sum")
    gmap = net.AddGradientOperators([y])
    assert all(gmap.get(b) is None for b in ["x", "hx", "cx"] + ["w%d" % i for i in range(len(w))])


@pytest.mark.parametrize("change, err, pattern", [
    (dict(n_w=3), RcValueError, r"op InferenceLSTM #\d+: 6 inputs, expected 7: input, hx, cx, then 4 weights "
                                r"\(w_ih, w_hh, b_ih, b_hh\) for each of num_layers=1 x 1 direction"),
    (dict(bidirectional=2), RcValueError, r"argument 'bidirectional' must be 0 or 1, got 2"),
    (dict(has_biases=-1), RcValueError, r"argument 'has_biases' must be 0 or 1, got -1"),
    (dict(num_layers=0), RcValueError, r"argument 'num_layers' must be in \[1, 2147483647\], got 0"),
])
def test_inference_lstm_bad_arguments(rng, change, err, pattern):
    x, hx, cx, w = make(rng, 3, 2, 3, 4, 1)
    feed(x=x, hx=hx, cx=cx, **{"w%d" % i: a for i, a in enumerate(w)})
    n_w = change.pop("n_w", len(w))
    kw = dict(num_layers=1, bidirectional=0, batch_first=0, has_biases=1)
    kw.update(change)
    op = core.CreateOperator("InferenceLSTM", ["x", "hx", "cx"] + ["w%d" % i for i in range(n_w)], ["y", "hy", "cy"],
                             **kw)
    with pytest.raises(err, match=pattern):
        workspace.RunOperatorOnce(op)
    usable()


@pytest.mark.parametrize("what, pattern", [
    ("x2d", r"input 0 blob 'x' must be 3-D \(T, N, D\), got \(3, 2\) float32"),
    ("hx", r"input 1 blob 'hx' \(hx\) must be \(num_layers \* directions, N, H\) = \(2, 2, H\) for input 'x' "
           r"\(3, 2, 3\) float32, got \(1, 2, 4\) float32"),
    ("cx", r"input 2 blob 'cx' \(cx\) has shape \(2, 2, 5\) float32, expected hx's \(2, 2, 4\) float32"),
    ("w_ih1", r"input 7 blob 'w4' \(w_ih of layer 1\) has shape \(16, 3\) float32, expected \(16, 4\)"),
    ("b_hh0", r"input 6 blob 'w3' \(b_hh of layer 0\) has shape \(15,\) float32, expected \(16,\)"),
    ("int", r"input 8 blob 'w5'.*float32"),
])
def test_inference_lstm_bad_inputs(rng, what, pattern):
    """Each refused with the blob, its role and both shapes, before anything is written; the workspace runs
    the op again once the input is fixed."""
    x, hx, cx, w = make(rng, 3, 2, 3, 4, 2)
    feed(x=x, hx=hx, cx=cx, **{"w%d" % i: a for i, a in enumerate(w)})
    feed(y=np.full(2, 7.0, np.float32))
    bad = {"x2d": ("x", x[:, :, 0]), "hx": ("hx", hx[:1]), "cx": ("cx", np.zeros((2, 2, 5), np.float32)),
           "w_ih1": ("w4", w[4][:, :3].copy()), "b_hh0": ("w3", w[3][:15].copy()),
           "int": ("w5", w[5].astype(np.int32))}[what]
    feed(**{bad[0]: bad[1]})
    op = op_for(len(w), 2, False, False, True)
    with pytest.raises(Exception, match=pattern) as e:
        workspace.RunOperatorOnce(op)
    assert isinstance(e.value, (ValueError, TypeError))
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.full(2, 7.0, np.float32))
    feed(x=x, hx=hx, cx=cx, **{"w%d" % i: a for i, a in enumerate(w)})
    workspace.RunOperatorOnce(op)
    np.testing.assert_allclose(workspace.FetchBlob("y"), reference(x, hx, cx, w, 2, False, False, True)[0],
                               rtol=1e-5, atol=2e-6)
    usable()


def test_inference_lstm_shape_inference(rng):
    x, hx, cx, w = make(rng, 4, 3, 5, 2, 2, True, True, False)
    feed(x=x, hx=hx, cx=cx, **{"w%d" % i: a for i, a in enumerate(w)})
    net = core.Net("ilstm_shapes")
    net.Proto().op.append(op_for(len(w), 2, True, True, False))
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["y"] == [3, 4, 4] and shapes["hy"] == [4, 3, 2] and shapes["cy"] == [4, 3, 2]
    workspace.RunNetOnce(net)
    assert list(workspace.FetchBlob("y").shape) == shapes["y"]


def test_inference_lstm_recurrent_products_on_the_packed_kernel(rng):
    """Where the packed kernel runs (an x86 CPU with AVX2 / AVX-512), each step's h W_hh^T goes to it:
    T products per layer and direction."""
    from recurrent import _C
    if _C.get_flag("packed_gemm_kernel") not in ("avx512", "avx2"):
        pytest.skip("no packed kernel on this CPU")
    cfg = make(rng, 6, 3, 4, 5, 2, True, False, True)
    before = _C.get_flag("packed_gemm_calls")
    got = run_lstm(*cfg, 2, True, False, True)
    assert _C.get_flag("packed_gemm_calls") - before == 6 * 2 * 2
    for g, r in zip(got, reference(*cfg, 2, True, False, True)):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=2e-6)


def test_inference_lstm_on_openblas_alone(rng):
    """RECURRENT_PACKED_GEMM=0 (read once per process): every product on OpenBLAS, the same values."""
    import os
    import subprocess
    import sys
    code = """
import numpy as np, sys
sys.path.insert(0, %r)
import test_ops_inference_lstm as t
from recurrent import _C
rng = np.random.default_rng(5)
cfg = t.make(rng, 5, 3, 4, 6, 2, True, True, True)
got = t.run_lstm(*cfg, 2, True, True, True)
assert _C.get_flag("packed_gemm_calls") == 0
print(max(float(np.max(np.abs(g - r))) for g, r in zip(got, t.reference(*cfg, 2, True, True, True))))
""" % os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, RECURRENT_PACKED_GEMM="0")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert float(p.stdout.strip()) < 2e-5


def test_inference_lstm_random_shapes_vs_numpy():
    """Random small shapes and flags (empty sizes included) against the NumPy loop; twice each, so the
    scratch and pack of the first run are reused by the second."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
    @hypothesis.given(T=st.integers(0, 4), N=st.integers(0, 3), D=st.integers(0, 3), H=st.integers(0, 3),
                      L=st.integers(1, 3), bidir=st.booleans(), bf=st.booleans(), bias=st.booleans(),
                      seed=st.integers(0, 2 ** 16))
    def check(T, N, D, H, L, bidir, bf, bias, seed):
        cfg = make(np.random.default_rng(seed), T, N, D, H, L, bidir, bf, bias, scale=1.0)
        want = reference(*cfg, L, bidir, bf, bias)
        for _ in range(2):
            got = run_lstm(*cfg, L, bidir, bf, bias)
            for g, r in zip(got, want):
                assert g.shape == r.shape
                np.testing.assert_allclose(g, r, rtol=1e-5, atol=3e-6)

    check()
