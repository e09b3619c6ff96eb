"""ChannelShuffle, ResizeNearest and their gradient ops (csrc/ops/image.c) and gradient makers
(recurrent/_grad_image.py): NumPy references over both orders, groups, scales (arguments and the scales
input) and empty tensors; the gradient ops against np.add.at references and by finite differences;
bad input with exact messages (outputs untouched, workspace usable) and the checks at net creation."""

import numpy as np
import pytest

import hypothesis.strategies as st

from recurrent import core, workspace
from recurrent import hypothesis_test_util as hu
from test_ops_clip_math import check_grads
from test_ops_math import G, f32, fails, feed, op, run

ORDERS = ["NCHW", "NHWC"]


# ---------------------------------------------------------------- references
def shuffle_ref(x, group, order="NCHW"):
    """Channel k G + g of Y is channel g K + k of X (Caffe2's channel_shuffle_op)."""
    if order == "NHWC":
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    y = x.reshape((n, group, c // group) + x.shape[2:]).swapaxes(1, 2).reshape(x.shape)
    return np.moveaxis(y, 1, -1) if order == "NHWC" else y


def out_size(n, scale):
    return int(np.float32(n) * np.float32(scale))  # float32 product, truncated, as Caffe2's


def src(o, scale, n):
    return min(int(np.float32(o) / np.float32(scale)), n - 1)  # float32 division, as Caffe2's


def resize_ref(x, hs, ws, order="NCHW"):
    if order == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    H, W = x.shape[2:]
    oh, ow = out_size(H, hs), out_size(W, ws)
    rows = [src(i, hs, H) for i in range(oh)]
    cols = [src(j, ws, W) for j in range(ow)]
    y = x[:, :, rows][:, :, :, cols] if oh and ow else np.zeros(x.shape[:2] + (oh, ow), np.float32)
    return y.transpose(0, 2, 3, 1) if order == "NHWC" else y


def resize_grad_ref(dy, x_shape, hs, ws, order="NCHW"):
    if order == "NHWC":
        dy = dy.transpose(0, 3, 1, 2)
        x_shape = (x_shape[0], x_shape[3], x_shape[1], x_shape[2])
    H, W = x_shape[2:]
    dx = np.zeros(x_shape, np.float32)
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            dx[:, :, src(i, hs, H), src(j, ws, W)] += dy[:, :, i, j]  # float32, in Caffe2's order
    return dx.transpose(0, 2, 3, 1) if order == "NHWC" else dx


def image(n, c, h, w, order):
    return (n, c, h, w) if order == "NCHW" else (n, h, w, c)


# ---------------------------------------------------------------- ChannelShuffle
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape,group", [
    ((2, 6, 3, 4), 2), ((2, 6, 3, 4), 3), ((1, 12, 2, 2), 4), ((2, 6, 3, 4), 1), ((2, 6, 3, 4), 6),
    ((3, 8), 2), ((2, 6, 2, 3, 2), 3), ((2, 4, 5), 2), ((0, 6, 2, 2), 2), ((2, 0, 3, 3), 3),
    ((2, 6, 0, 3), 2)])
def test_channel_shuffle(rng, order, shape, group):
    if order == "NHWC":
        shape = (shape[0],) + shape[2:] + (shape[1],)
    x = f32(rng, *shape, lo=-3, hi=3)
    feed(x=x)
    y = run("ChannelShuffle", ["x"], ["y"], group=group, order=order)
    assert y.shape == x.shape and y.tobytes() == shuffle_ref(x, group, order).tobytes()
    # the gradient op is the inverse permutation
    dx = run("ChannelShuffleGradient", ["y"], ["dx"], group=group, order=order)
    assert dx.tobytes() == x.tobytes()
    g = f32(rng, *shape)
    feed(g=g)
    dx = run("ChannelShuffleGradient", ["g"], ["dx"], group=group, order=order)
    assert shuffle_ref(dx, group, order).tobytes() == g.tobytes()


def test_channel_shuffle_default_group_is_a_copy(rng):
    x = f32(rng, 2, 5, 3)
    feed(x=x)
    assert run("ChannelShuffle", ["x"], ["y"]).tobytes() == x.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("group", [2, 3])
def test_channel_shuffle_gradient_fd(rng, order, group):
    x = f32(rng, *image(2, 6, 2, 3, order))
    check_grads(op("ChannelShuffle", ["x"], ["y"], group=group, order=order), [x])


def test_channel_shuffle_gradient_maker():
    ops, g = G(op("ChannelShuffle", ["x"], ["y"], group=3, order="NHWC"), ["y_grad"])
    assert g == ["x_grad"] and len(ops) == 1
    assert (ops[0].type, list(ops[0].input), list(ops[0].output)) == ("ChannelShuffleGradient", ["y_grad"],
                                                                      ["x_grad"])
    assert sorted((a.name, a.value()) for a in ops[0].arg) == [("group", 3), ("order", "NHWC")]
    assert G(op("ChannelShuffle", ["x"], ["y"]), [None]) == ([], [None])


def test_channel_shuffle_bad_input(rng):
    keep = np.full(2, 7.0, np.float32)
    feed(y=keep, x=f32(rng, 2, 6, 3, 3), x1=f32(rng, 6), xi=np.ones((2, 6), np.int32))
    fails(ValueError, "op ChannelShuffle #0: input 0 blob 'x' (2, 6, 3, 3) float32 has 6 channels (order "
                      "NCHW), "
          "not a multiple of argument group=4", "ChannelShuffle", ["x"], ["y"], group=4)
    fails(ValueError, "op ChannelShuffle #0: input 0 blob 'x' (2, 6, 3, 3) float32 has 3 channels (order "
                      "NHWC), "
          "not a multiple of argument group=2", "ChannelShuffle", ["x"], ["y"], group=2, order="NHWC")
    fails(ValueError, "op ChannelShuffleGradient #0: input 0 blob 'x' (2, 6, 3, 3) float32 has 6 channels "
                      "(order "
          "NCHW), not a multiple of argument group=5", "ChannelShuffleGradient", ["x"], ["y"], group=5)
    fails(ValueError, "op ChannelShuffle #0: input 0 blob 'x1' (X) must have at least 2 dims (N, C, ...), "
                      "got (6,) "
          "float32", "ChannelShuffle", ["x1"], ["y"], group=2)
    fails(TypeError, "op ChannelShuffle #0: input 0 blob 'xi' must be float32, got (2, 6) int32",
          "ChannelShuffle", ["xi"], ["y"], group=2)
    for group in (0, -2):  # Caffe2 took C % 0
        fails(ValueError, "op ChannelShuffle #0: argument group=%d must be >= 1" % group, "ChannelShuffle",
              ["x"], ["y"], group=group)
    fails(ValueError, "op ChannelShuffle #0: argument order must be \"NCHW\" or \"NHWC\", got \"CHW\"",
          "ChannelShuffle", ["x"], ["y"], order="CHW")
    with pytest.raises(ValueError, match="input 0 and output 0 are the same blob 'x'"):
        workspace.RunOperatorOnce(op("ChannelShuffle", ["x"], ["x"], group=2))  # not in place, as Caffe2
    assert workspace.FetchBlob("y").tobytes() == keep.tobytes()
    x = workspace.FetchBlob("x")
    np.testing.assert_array_equal(run("ChannelShuffle", ["x"], ["y"], group=3), shuffle_ref(x, 3))


# ---------------------------------------------------------------- ResizeNearest
SCALES = [(2.0, 2.0), (1.0, 1.0), (1.5, 0.5), (0.5, 1.5), (3.0, 1.7), (0.3, 0.9), (2.0, 3.0), (1.01, 0.99)]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("hs,ws", SCALES)
def test_resize_nearest(rng, order, hs, ws):
    x = f32(rng, *image(2, 3, 5, 7, order), lo=-3, hi=3)
    feed(x=x)
    y = run("ResizeNearest", ["x"], ["y"], height_scale=hs, width_scale=ws, order=order)
    ref = resize_ref(x, hs, ws, order)
    assert y.shape == ref.shape and y.tobytes() == ref.tobytes()
    # the scales input [height_scale, width_scale] (Caffe2's ONNX form) replaces the arguments
    feed(s=np.array([hs, ws], np.float32))
    y2 = run("ResizeNearest", ["x", "s"], ["y2"], height_scale=9.0, order=order)
    assert y2.tobytes() == y.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("hs,ws", SCALES)
def test_resize_nearest_gradient_op(rng, order, hs, ws):
    xs = image(2, 3, 5, 7, order)
    x = f32(rng, *xs)
    feed(x=x)
    ys = run("ResizeNearest", ["x"], ["y"], height_scale=hs, width_scale=ws, order=order).shape
    dy = f32(rng, *ys, lo=-2, hi=2)
    feed(dy=dy, s=np.array([hs, ws], np.float32))
    dx = run("ResizeNearestGradient", ["dy", "x"], ["dx"], height_scale=hs, width_scale=ws, order=order)
    ref = resize_grad_ref(dy, xs, hs, ws, order)
    assert dx.shape == xs and dx.tobytes() == ref.tobytes()  # float sums in Caffe2's order: the same bits
    dx2 = run("ResizeNearestGradient", ["dy", "x", "s"], ["dx2"], order=order)
    assert dx2.tobytes() == dx.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("hs,ws", [(2.0, 2.0), (1.5, 0.5), (0.6, 1.3)])
def test_resize_nearest_gradient_fd(rng, order, hs, ws):
    x = f32(rng, *image(1, 2, 3, 4, order))
    check_grads(op("ResizeNearest", ["x"], ["y"], height_scale=hs, width_scale=ws, order=order), [x])
    check_grads(op("ResizeNearest", ["x", "s"], ["y"], order=order), [x, np.array([hs, ws], np.float32)],
                indices=[0])


def test_resize_nearest_defaults_and_empty(rng):
    x = f32(rng, 2, 3, 4, 5)
    feed(x=x)
    assert run("ResizeNearest", ["x"], ["y"]).tobytes() == x.tobytes()  # scales 1: a copy
    # sizes rounding down to 0, N = 0 and C = 0: empty outputs; their gradients are zeros
    for shape, hs, ws in (((2, 3, 1, 5), 0.5, 1.0), ((0, 3, 4, 5), 2.0, 2.0), ((2, 0, 4, 5), 2.0, 2.0),
                          ((2, 3, 0, 5), 3.0, 1.0)):
        feed(e=np.ones(shape, np.float32))
        y = run("ResizeNearest", ["e"], ["ye"], height_scale=hs, width_scale=ws)
        assert y.shape == resize_ref(np.ones(shape, np.float32), hs, ws).shape
        dx = run("ResizeNearestGradient", ["ye", "e"], ["dxe"], height_scale=hs, width_scale=ws)
        assert dx.shape == shape and not dx.any()


def test_resize_nearest_tiny_scale_maps_to_the_last_cell(rng):
    """A scale far below 1 sends every output cell to the last input cell (Caffe2's min(., H - 1)); the
    quotient overflowing int is clamped, not cast (undefined in C)."""
    x = f32(rng, 1, 1, 3, 300000)
    feed(x=x)
    y = run("ResizeNearest", ["x"], ["y"], height_scale=1.0, width_scale=1e-5)
    assert y.shape == (1, 1, 3, 3)
    np.testing.assert_array_equal(y, resize_ref(x, 1.0, 1e-5))


def test_resize_nearest_gradient_maker():
    ops, g = G(op("ResizeNearest", ["x"], ["y"], width_scale=2.0, order="NHWC"), ["y_grad"])
    assert g == ["x_grad"] and len(ops) == 1
    assert (ops[0].type, list(ops[0].input), list(ops[0].output)) == ("ResizeNearestGradient", ["y_grad", "x"],
                                                                      ["x_grad"])
    assert sorted((a.name, a.value()) for a in ops[0].arg) == [("order", "NHWC"), ("width_scale", 2.0)]
    ops, g = G(op("ResizeNearest", ["x", "s"], ["y"]), ["y_grad"])
    assert g == ["x_grad", None] and list(ops[0].input) == ["y_grad", "x", "s"]
    assert G(op("ResizeNearest", ["x"], ["y"]), [None]) == ([], [None])


def test_resize_nearest_backward_through_net(rng):
    x = f32(rng, 1, 2, 3, 3)
    feed(x=x)
    net = core.Net("resize")
    net.ResizeNearest("x", "y", height_scale=2.0, width_scale=1.5)
    net.SumElements("y", "loss")
    net.AddGradientOperators(["loss"])
    workspace.RunNetOnce(net)
    ones = np.ones(workspace.FetchBlob("y").shape, np.float32)
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), resize_grad_ref(ones, x.shape, 2.0, 1.5))


def test_resize_nearest_bad_input(rng):
    keep = np.full(2, 7.0, np.float32)
    feed(y=keep, x=f32(rng, 2, 3, 4, 4), x3=f32(rng, 2, 3, 4), xi=np.ones((2, 3, 4, 4), np.int32),
         s3=np.array([1.0, 2.0, 3.0], np.float32), si=np.array([1, 2], np.int32),
         s0=np.array([0.0, 2.0], np.float32), sneg=np.array([2.0, -1.0], np.float32),
         snan=np.array([np.nan, 1.0], np.float32), sinf=np.array([1.0, np.inf], np.float32),
         dy=f32(rng, 2, 3, 8, 8), dy_bad=f32(rng, 2, 3, 8, 9), dy_n=f32(rng, 1, 3, 8, 8))
    fails(ValueError, "op ResizeNearest #0: input 0 blob 'x3' (X) (2, 3, 4) float32 must have 4 dims (order "
                      "NCHW: "
          "N, C, H, W)", "ResizeNearest", ["x3"], ["y"])
    fails(TypeError, "op ResizeNearest #0: input 0 blob 'xi' must be float32, got (2, 3, 4, 4) int32",
          "ResizeNearest", ["xi"], ["y"])
    for name, v in (("width_scale", 0.0), ("height_scale", -2.0), ("width_scale", float("nan")),
                    ("height_scale", float("inf"))):  # Caffe2 refused <= 0 only
        fails(ValueError, "op ResizeNearest #0: argument %s=%g must be a finite number > 0" % (name, v),
              "ResizeNearest", ["x"], ["y"], **{name: v})
    fails(ValueError, "op ResizeNearest #0: input 1 blob 's3' (scales) must be 1-D with 2 elements "
          "[height_scale, width_scale], got (3,) float32", "ResizeNearest", ["x", "s3"], ["y"])
    fails(TypeError, "op ResizeNearest #0: input 1 blob 'si' must be float32, got (2,) int32",
          "ResizeNearest", ["x", "si"], ["y"])
    # the scales input's values: Caffe2 did not check them
    for s, what, v in (("s0", "height_scale", "0"), ("sneg", "width_scale", "-1"),
                       ("snan", "height_scale", "nan"), ("sinf", "width_scale", "inf")):
        fails(ValueError, "op ResizeNearest #0: input 1 blob '%s' (scales) holds %s %s; it must be a finite "
                          "number "
              "> 0" % (s, what, v), "ResizeNearest", ["x", s], ["y"])
    # sizes beyond int32 (Caffe2's int overflowed)
    fails(MemoryError, "op ResizeNearest #0: input 0 blob 'x' (2, 3, 4, 4) float32: the output width 4 x "
          "width_scale 1e+09 = 4e+09 overflows int32", "ResizeNearest", ["x"], ["y"], width_scale=1e9)
    # a size that fits int32 but not memory: refused by the allocation, nothing written
    with pytest.raises(MemoryError, match="op ResizeNearest #0: output 0 blob 'y'"):
        workspace.RunOperatorOnce(op("ResizeNearest", ["x"], ["y"], width_scale=5e8, height_scale=5e8))
    # the gradient: dY must be ResizeNearest's output for X (Caffe2 did not check and wrote outside dX)
    fails(ValueError, "op ResizeNearestGradient #0: input 0 blob 'dy_bad' (dY) (2, 3, 8, 9) float32 must have "
          "the shape ResizeNearest gives for input 1 blob 'x' (X) (2, 3, 4, 4) float32 with height_scale 2, "
          "width_scale 2: N 2, C 3, H 8, W 8 (order NCHW)", "ResizeNearestGradient", ["dy_bad", "x"], ["y"],
          height_scale=2.0, width_scale=2.0)
    fails(ValueError, "op ResizeNearestGradient #0: input 0 blob 'dy_n' (dY) (1, 3, 8, 8) float32 must have "
          "the shape ResizeNearest gives for input 1 blob 'x' (X) (2, 3, 4, 4) float32 with height_scale 2, "
          "width_scale 2: N 2, C 3, H 8, W 8 (order NCHW)", "ResizeNearestGradient", ["dy_n", "x"], ["y"],
          height_scale=2.0, width_scale=2.0)
    feed(s2=np.array([2.0, 2.25], np.float32))
    fails(ValueError, "op ResizeNearestGradient #0: input 0 blob 'dy' (dY) (2, 3, 8, 8) float32 must have the "
          "shape ResizeNearest gives for input 1 blob 'x' (X) (2, 3, 4, 4) float32 with height_scale 2, "
          "width_scale 2.25: N 2, C 3, H 8, W 9 (order NCHW)", "ResizeNearestGradient", ["dy", "x", "s2"],
          ["y"])
    fails(ValueError, "op ResizeNearestGradient #0: input 2 blob 's0' (scales) holds height_scale 0; it must "
                      "be a "
          "finite number > 0", "ResizeNearestGradient", ["dy", "x", "s0"], ["y"])
    fails(ValueError, "op ResizeNearestGradient #0: input 1 blob 'x3' (X) (2, 3, 4) float32 must have 4 dims "
          "(order NCHW: N, C, H, W)", "ResizeNearestGradient", ["dy", "x3"], ["y"])
    assert workspace.FetchBlob("y").tobytes() == keep.tobytes()  # nothing written
    x = workspace.FetchBlob("x")
    np.testing.assert_array_equal(run("ResizeNearest", ["x"], ["y"], width_scale=2.0), resize_ref(x, 1.0, 2.0))


@pytest.mark.parametrize("type_,inputs,args,exc,pattern", [
    ("ChannelShuffle", ["x"], dict(group=4), ValueError, r"has 6 channels \(order NCHW\), not a multiple"),
    ("ChannelShuffleGradient", ["v"], {}, ValueError, r"must have at least 2 dims"),
    ("ResizeNearest", ["v"], {}, ValueError, r"input 0 blob 'v' \(X\) \(6,\) float32 must have 4 dims"),
    ("ResizeNearest", ["x", "v"], {}, ValueError, r"\(scales\) must be 1-D with 2 elements"),
    ("ResizeNearestGradient", ["x", "x"], dict(width_scale=2.0), ValueError,
     r"must have the shape ResizeNearest"),
    ("ResizeNearestGradient", ["x", "i"], {}, TypeError, r"input 1 blob 'i' must be float32"),
])
def test_shapes_checked_at_net_creation(rng, type_, inputs, args, exc, pattern):
    feed(x=f32(rng, 2, 6, 3, 3), v=f32(rng, 6), i=np.ones((2, 6, 3, 3), np.int32))
    net = core.Net("early")
    getattr(net, type_)(inputs, ["o"], **args)
    with pytest.raises(exc, match=pattern):
        workspace.CreateNet(net)


# ---------------------------------------------------------------- Caffe2's hypothesis tests, ported
QUICK = hu.settings(derandomize=True, max_examples=12, deadline=None)


class TestCaffe2Ports(hu.HypothesisTestCase):
    """channel_shuffle_test.py and resize_op_test.py with this library's hypothesis helpers (derandomized,
    short). Caffe2's resize references divide in double; the op divides in float32, as Caffe2's C++ op,
    so the references here do too (resize_ref)."""

    @hu.given(N=st.integers(1, 5), G=st.integers(1, 5), K=st.integers(1, 5), H=st.integers(1, 5),
              W=st.integers(1, 5), order=st.sampled_from(ORDERS), **hu.gcs)
    @QUICK
    def test_channel_shuffle(self, N, G, K, H, W, order, gc, dc):
        X = np.random.RandomState(N * 100 + G * 10 + K).randn(*image(N, G * K, H, W, order)).astype(np.float32)
        o = op("ChannelShuffle", ["X"], ["Y"], group=G, order=order)
        self.assertReferenceChecks(gc, o, [X], lambda X: (shuffle_ref(X, G, order),))
        self.assertGradientChecks(gc, o, [X], 0, [0])
        self.assertDeviceChecks(dc, o, [X], [0])

    @hu.given(height_scale=st.floats(0.25, 4.0) | st.just(2.0),
              width_scale=st.floats(0.25, 4.0) | st.just(2.0), height=st.integers(4, 32),
              width=st.integers(4, 32), num_channels=st.integers(1, 4), batch_size=st.integers(1, 4),
              seed=st.integers(0, 65535), onnx=st.booleans(), **hu.gcs)
    @QUICK
    def test_nearest_and_grad(self, height_scale, width_scale, height, width, num_channels, batch_size, seed,
                              onnx, gc, dc):
        r = np.random.RandomState(seed)
        X = r.rand(batch_size, num_channels, height, width).astype(np.float32)
        scales = np.array([height_scale, width_scale], np.float32)
        hs, ws = scales
        args = {} if onnx else dict(height_scale=float(hs), width_scale=float(ws))
        ins, vals = (["X", "scales"], [X, scales]) if onnx else (["X"], [X])
        o = op("ResizeNearest", ins, ["Y"], **args)
        self.assertReferenceChecks(gc, o, vals, lambda X, *s: (resize_ref(X, hs, ws),))
        self.assertDeviceChecks(dc, o, vals, [0])
        if height * width <= 64:
            self.assertGradientChecks(gc, o, vals, 0, [0], stepsize=0.1, threshold=1e-2)
        dY = r.rand(*resize_ref(X, hs, ws).shape).astype(np.float32)
        g = op("ResizeNearestGradient", ["dY"] + ins, ["dX"], **args)
        self.assertReferenceChecks(gc, g, [dY] + vals,
                                   lambda dY, X, *s: (resize_grad_ref(dY, X.shape, hs, ws),))
