"""SpaceToBatch and BatchToSpace (csrc/ops/pad_image.c) and their gradient makers
(recurrent/_grad_pad.py): NumPy references (np.pad then a reshape / transpose) checked against a
line-by-line reading of Caffe2's loops, every pad argument (pad_l, pad_b and pad_r are honoured:
Caffe2 read them from `pad`), the round trip, empty tensors, finite-difference gradients, and bad
input with exact messages."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import G, f32, feed, fails, op, run

INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------- references
def space_to_batch_ref(x, b, pads):
    """Zero-pad (t, l, b, r), then the (b x b) offsets into the batch: (oh_off, ow_off, n) order."""
    t, l, bo, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, bo), (l, r)))
    N, C, H, W = xp.shape
    y = xp.reshape(N, C, H // b, b, W // b, b).transpose(3, 5, 0, 1, 2, 4)
    return y.reshape(b * b * N, C, H // b, W // b)


def batch_to_space_ref(x, b, pads):
    t, l, bo, r = pads
    B, C, h, w = x.shape
    N = B // (b * b)
    y = x.reshape(b, b, N, C, h, w).transpose(2, 3, 4, 0, 5, 1).reshape(N, C, h * b, w * b)
    return y[:, :, t:h * b - bo, l:w * b - r]


def caffe2_space_to_batch(x, b, pad_t, pad_l, out_shape):
    """Caffe2's spaceToBatch loop, as written (space_batch_op.h)."""
    ob, od, oh_, ow_ = out_shape
    N, C, H, W = x.shape
    y = np.empty(out_shape, np.float32)
    for out_b in range(ob):
        in_b = out_b % N
        off_w = (out_b // N) % b
        off_h = (out_b // N) // b
        for d in range(C):
            for oh in range(oh_):
                ih = oh * b + off_h - pad_t
                for ow in range(ow_):
                    iw = ow * b + off_w - pad_l
                    y[out_b, d, oh, ow] = x[in_b, d, ih, iw] if 0 <= ih < H and 0 <= iw < W else 0.0
    return y


def caffe2_batch_to_space(x, b, pad_t, pad_l, out_shape):
    """Caffe2's batchToSpace loop, as written."""
    ob, od, oh_, ow_ = out_shape
    B, C, H, W = x.shape
    y = np.full(out_shape, np.nan, np.float32)
    for in_b in range(B):
        out_b = in_b % ob
        off_w = (in_b // ob) % b
        off_h = (in_b // ob) // b
        for d in range(C):
            for ih in range(H):
                oh = ih * b + off_h - pad_t
                for iw in range(W):
                    ow = iw * b + off_w - pad_l
                    if 0 <= oh < oh_ and 0 <= ow < ow_:
                        y[out_b, d, oh, ow] = x[in_b, d, ih, iw]
    return y


# (arguments, block, (t, l, b, r), X's H, W)
FORMS = [
    (dict(), 2, (0, 0, 0, 0), 4, 6),
    (dict(block_size=3, pad=1), 3, (1, 1, 1, 1), 4, 7),
    (dict(block_size=2, pad_t=1, pad_l=0, pad_b=1, pad_r=2), 2, (1, 0, 1, 2), 4, 2),
    (dict(block_size=2, pad=1, pad_t=0), 2, (0, 1, 1, 1), 5, 4),     # pad_t overrides pad, the others take it
    (dict(block_size=1, pad=2), 1, (2, 2, 2, 2), 3, 1),
    (dict(block_size=4, pad_r=3, pad_b=1), 4, (0, 0, 1, 3), 7, 5),
    (dict(block_size=5, pad=2), 5, (2, 2, 2, 2), 1, 6),              # a pad larger than the image
]


@pytest.mark.parametrize("form", FORMS, ids=[str(i) for i in range(len(FORMS))])
def test_space_to_batch_and_back_against_numpy(rng, form):
    kw, b, pads, H, W = form
    x = f32(rng, 2, 3, H, W, lo=-2, hi=2)
    feed(x=x)
    y = run("SpaceToBatch", ["x"], ["y"], **kw)
    want = space_to_batch_ref(x, b, pads)
    assert y.dtype == np.float32 and y.shape == want.shape
    assert y.tobytes() == want.tobytes()
    assert y.tobytes() == caffe2_space_to_batch(x, b, pads[0], pads[1], y.shape).tobytes()
    # the inverse gives X back
    feed(y=y)
    z = run("BatchToSpace", ["y"], ["z"], **kw)
    assert z.tobytes() == x.tobytes()
    # BatchToSpace of any batch tensor, against NumPy and Caffe2's loop (every cell written)
    v = f32(rng, *y.shape)
    feed(v=v)
    u = run("BatchToSpace", ["v"], ["u"], **kw)
    want = batch_to_space_ref(v, b, pads)
    assert u.shape == want.shape and u.tobytes() == want.tobytes()
    assert u.tobytes() == caffe2_batch_to_space(v, b, pads[0], pads[1], u.shape).tobytes()


def test_caffe2_doc_examples(rng):
    feed(x=f32(rng, 1, 3, 5, 5))
    assert run("SpaceToBatch", ["x"], ["y"], pad=2, block_size=3).shape == (9, 3, 3, 3)
    feed(x=f32(rng, 10, 3, 32, 32))
    with pytest.raises(ValueError, match=r"the batch 10 is not a multiple of block_size\^2 = 4"):
        run("BatchToSpace", ["x"], ["y"], pad=3)   # Caffe2's doc example: batch 10, block 2 (truncated to 2)
    feed(x=f32(rng, 8, 3, 32, 32))
    assert run("BatchToSpace", ["x"], ["y"], pad=3).shape == (2, 3, 58, 58)


@pytest.mark.parametrize("shape,kw", [((0, 3, 4, 4), {}), ((2, 0, 4, 4), {}),
                                      ((2, 3, 0, 0), dict(block_size=5)),
                                      ((2, 3, 0, 2), dict(pad_t=1, pad_b=1))])
def test_space_to_batch_empty(shape, kw):
    feed(x=np.zeros(shape, np.float32))
    y = run("SpaceToBatch", ["x"], ["y"], **kw)
    b = kw.get("block_size", 2)
    assert y.shape[0] == shape[0] * b * b and y.shape[1] == shape[1]
    feed(y=y)
    assert run("BatchToSpace", ["y"], ["z"], **kw).shape == shape


def test_batch_to_space_crops_to_nothing():
    feed(x=np.ones((4, 2, 1, 3), np.float32))
    y = run("BatchToSpace", ["x"], ["y"], pad_t=1, pad_b=1, pad_l=2)
    assert y.shape == (1, 2, 0, 4)


def test_space_to_batch_writes_zeros_over_old_output(rng):
    """The padding cells are written (zeros) on every run, whatever the output blob held."""
    x = f32(rng, 1, 1, 2, 2)
    feed(x=x, y=np.full((4, 1, 2, 2), 7.0, np.float32))
    y = run("SpaceToBatch", ["x"], ["y"], pad=1)
    assert y.tobytes() == space_to_batch_ref(x, 2, (1, 1, 1, 1)).tobytes()


# ---------------------------------------------------------------- gradients
def test_gradient_makers_as_caffe2():
    ops, g_in = G(op("SpaceToBatch", ["x"], ["y"], block_size=3, pad_t=1), ["y_grad"])
    assert [o.type for o in ops] == ["BatchToSpace"] and list(ops[0].input) == ["y_grad"]
    assert list(ops[0].output) == ["x_grad"] and g_in == ["x_grad"]
    assert {(a.name, a.i) for a in ops[0].arg} == {("block_size", 3), ("pad_t", 1)}
    ops, g_in = G(op("BatchToSpace", ["x"], ["y"], pad=1), ["y_grad"])
    assert [o.type for o in ops] == ["SpaceToBatch"] and g_in == ["x_grad"]
    assert {(a.name, a.i) for a in ops[0].arg} == {("pad", 1)}


@pytest.mark.parametrize("kw,shape", [(dict(), (2, 2, 4, 2)), (dict(block_size=3, pad=1), (1, 2, 4, 1)),
                                      (dict(pad_t=1, pad_l=0, pad_b=1, pad_r=2), (2, 1, 2, 4))])
def test_gradients_by_finite_differences(rng, kw, shape):
    x = f32(rng, *shape)
    check_grads(op("SpaceToBatch", ["x"], ["y"], **kw), [x])
    feed(x=x)
    y = run("SpaceToBatch", ["x"], ["y"], **kw)
    check_grads(op("BatchToSpace", ["y"], ["z"], **kw), [f32(rng, *y.shape)])


def test_gradient_through_a_net(rng):
    x = f32(rng, 2, 1, 3, 3)
    feed(x=x)
    net = core.Net("sb")
    net.SpaceToBatch(["x"], "y", pad_t=1, pad_r=1, pad_b=0, pad_l=0)
    net.Mul(["y", "y"], "y2")
    net.AddGradientOperators(["y2"])
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("x_grad"), 2 * x, rtol=1e-6)


# ---------------------------------------------------------------- bad input
X = np.zeros((2, 3, 4, 6), np.float32)
BAD = [
    ("SpaceToBatch", X[0], {}, ValueError,
     "op SpaceToBatch #0: input 0 blob 'x' (3, 4, 6) float32 must have 4 dims (N, C, H, W)"),
    ("SpaceToBatch", X.astype(np.int32), {}, TypeError,
     "op SpaceToBatch #0: input 0 blob 'x' must be float32, got (2, 3, 4, 6) int32"),
    ("SpaceToBatch", X, dict(block_size=3), ValueError,
     "op SpaceToBatch #0: input 0 blob 'x' (2, 3, 4, 6) float32: the padded height, 4 + pads 0 + 0 = 4, is "
     "not a multiple of block_size 3"),
    ("SpaceToBatch", X, dict(pad_l=1), ValueError,
     "op SpaceToBatch #0: input 0 blob 'x' (2, 3, 4, 6) float32: the padded width, 6 + pads 1 + 0 = 7, is "
     "not a multiple of block_size 2"),
    ("SpaceToBatch", X, dict(block_size=0), ValueError,
     "op SpaceToBatch #0: argument block_size must lie in [1, 2^31 - 1], got 0"),
    ("SpaceToBatch", X, dict(pad=-1), ValueError,
     "op SpaceToBatch #0: argument pad must lie in [0, 2^31 - 1], got -1"),
    ("SpaceToBatch", X, dict(pad_b=-2), ValueError,
     "op SpaceToBatch #0: argument pad_b must lie in [0, 2^31 - 1], got -2"),
    ("SpaceToBatch", X, dict(pad=2 ** 31), ValueError,
     "op SpaceToBatch #0: argument pad must lie in [0, 2^31 - 1], got 2147483648"),
    ("SpaceToBatch", X, dict(order="NHWC"), ValueError,
     "op SpaceToBatch #0: supports order NCHW only (as Caffe2's), got NHWC"),
    # N b^2 overflows int64
    ("SpaceToBatch", np.zeros((3, 1, 0, 0), np.float32), dict(block_size=INT32_MAX), MemoryError,
     "op SpaceToBatch #0: input 0 blob 'x' (3, 1, 0, 0) float32: the output batch, 3 x block_size^2 "
     "4611686014132420609, is beyond 2^63"),
    # fits int64, not a tensor
    ("SpaceToBatch", np.zeros((1, 1, 0, 0), np.float32), dict(block_size=INT32_MAX), ValueError,
     "op SpaceToBatch #0: output 0 blob 'y': tensor dims multiply to over 2^46 elements (not counting the "
     "zero dims): refused even though the tensor is empty"),
    ("BatchToSpace", np.zeros((6, 3, 2, 2), np.float32), {}, ValueError,
     "op BatchToSpace #0: input 0 blob 'x' (6, 3, 2, 2) float32: the batch 6 is not a multiple of "
     "block_size^2 = 4"),
    ("BatchToSpace", np.zeros((4, 3, 2, 2), np.float32), dict(pad_t=3, pad_b=2), ValueError,
     "op BatchToSpace #0: input 0 blob 'x' (4, 3, 2, 2) float32: the pads 3 + 2 crop more than the height "
     "2 x block_size 2 = 4"),
    ("BatchToSpace", np.zeros((4, 3, 2), np.float32), {}, ValueError,
     "op BatchToSpace #0: input 0 blob 'x' (4, 3, 2) float32 must have 4 dims (N, C, H, W)"),
    ("BatchToSpace", np.zeros((4, 3, 2, 2), np.int32), {}, TypeError,
     "op BatchToSpace #0: input 0 blob 'x' must be float32, got (4, 3, 2, 2) int32"),
    ("BatchToSpace", np.zeros((4, 3, 2, 2), np.float32), dict(pad_r=-1), ValueError,
     "op BatchToSpace #0: argument pad_r must lie in [0, 2^31 - 1], got -1"),
    # H b overflows int64 (an empty tensor may have a huge dim)
    ("BatchToSpace", np.zeros((0, 1, 2 ** 40, 0), np.float32), dict(block_size=INT32_MAX), MemoryError,
     "op BatchToSpace #0: input 0 blob 'x' (0, 1, 1099511627776, 0) float32: the height x block_size "
     "2147483647 is beyond 2^63"),
]


@pytest.mark.parametrize("case", BAD, ids=["%s-%d" % (c[0], i) for i, c in enumerate(BAD)])
def test_bad_input(case):
    type_, x, kw, exc, msg = case
    workspace.ResetWorkspace()
    feed(x=x)
    fails(exc, msg, type_, ["x"], ["y"], **kw)
    feed(ok=np.ones((1, 1, 2, 2), np.float32))
    assert run("SpaceToBatch", ["ok"], ["ok_y"]).shape == (4, 1, 1, 1)


def test_not_in_place():
    feed(x=np.zeros((1, 1, 2, 2), np.float32))
    with pytest.raises(ValueError, match="op SpaceToBatch #0"):
        workspace.RunOperatorOnce(op("SpaceToBatch", ["x"], ["x"]))


# ---------------------------------------------------------------- Caffe2's hypothesis_test.py
import hypothesis.strategies as st  # noqa: E402
from hypothesis import HealthCheck, assume, given  # noqa: E402

from recurrent import hypothesis_test_util as hu  # noqa: E402


class TestSpaceBatchHypothesis(hu.HypothesisTestCase):
    """As Caffe2's test_space_to_batch / test_batch_to_space: device and gradient checks over random
    sizes, pads and blocks (derandomized, few examples), plus the NumPy reference."""

    @hu.settings(derandomize=True, max_examples=12, deadline=None,
                 suppress_health_check=[HealthCheck.filter_too_much])
    @given(n=st.integers(1, 5), c=st.integers(1, 5), h=st.integers(1, 5), w=st.integers(1, 5),
           pad=st.integers(0, 2), block_size=st.integers(2, 3), **hu.gcs_cpu_only)
    def test_space_to_batch(self, n, c, h, w, pad, block_size, gc, dc):
        assume((h + 2 * pad) % block_size == 0 and (w + 2 * pad) % block_size == 0)
        X = np.random.RandomState(n * 7 + h).randn(n, c, h, w).astype(np.float32)
        o = core.CreateOperator("SpaceToBatch", ["X"], ["Y"], pad=pad, block_size=block_size)
        self.assertReferenceChecks(gc, o, [X], lambda x: (space_to_batch_ref(x, block_size, (pad,) * 4),))
        self.assertDeviceChecks(dc, o, [X], [0])
        self.assertGradientChecks(gc, o, [X], 0, [0])

    @hu.settings(derandomize=True, max_examples=12, deadline=None,
                 suppress_health_check=[HealthCheck.filter_too_much])
    @given(n=st.integers(1, 5), c=st.integers(1, 5), h=st.integers(1, 5), w=st.integers(1, 5),
           pad=st.integers(0, 2), block_size=st.integers(2, 3), **hu.gcs_cpu_only)
    def test_batch_to_space(self, n, c, h, w, pad, block_size, gc, dc):
        assume((h + 2 * pad) % block_size == 0 and (w + 2 * pad) % block_size == 0)
        b = block_size
        X = np.random.RandomState(n * 7 + w).randn(n * b * b, c, (h + 2 * pad) // b, (w + 2 * pad) // b)
        X = X.astype(np.float32)
        o = core.CreateOperator("BatchToSpace", ["X"], ["Y"], pad=pad, block_size=block_size)
        self.assertReferenceChecks(gc, o, [X], lambda x: (batch_to_space_ref(x, block_size, (pad,) * 4),))
        self.assertDeviceChecks(dc, o, [X], [0])
        self.assertGradientChecks(gc, o, [X], 0, [0])
