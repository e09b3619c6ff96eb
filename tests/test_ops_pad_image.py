"""PadImage and PadImageGradient (csrc/ops/pad_image.c), the gradient maker (recurrent/_grad_pad.py)
and CNNModelHelper.PadImage: NumPy references (np.pad, then a crop for the negative pads) over both
orders, the three modes and every argument form; empty tensors, NaN, the same bits every run; the
gradient against an index-map reference and by finite differences; bad input with exact messages."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.cnn import CNNModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_math import close, f32, feed, op, run  # the same helpers

ORDERS = ["NCHW", "NHWC"]
MODES = ["constant", "reflect", "edge"]


# ---------------------------------------------------------------- references
def pad_ref(x, pads, mode, order="NCHW", value=0.0):
    """np.pad with the positive pads, then the negative ones cropped (Caffe2's mapping: reflect and
    edge about X's own edges). pads = (t, l, b, r)."""
    t, l, b, r = pads
    if order == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    widths = ((0, 0), (0, 0), (max(t, 0), max(b, 0)), (max(l, 0), max(r, 0)))
    kw = dict(constant_values=value) if mode == "constant" else {}
    p = np.pad(x, widths, mode=mode, **kw)
    H, W = p.shape[2], p.shape[3]
    y = p[:, :, max(-t, 0):H - max(-b, 0), max(-l, 0):W - max(-r, 0)]
    return y.transpose(0, 2, 3, 1) if order == "NHWC" else y


def grad_ref(dy, x_shape, pads, mode, order="NCHW"):
    """dX: every dY cell added (float64) onto the X cell it was copied from, found by padding an
    array of X's cell indices (-1 for the constant cells)."""
    if order == "NHWC":
        dy = dy.transpose(0, 3, 1, 2)
        x_shape = (x_shape[0], x_shape[3], x_shape[1], x_shape[2])
    N, C, H, W = x_shape
    idx = np.arange(H * W, dtype=np.float64).reshape(1, 1, H, W)
    src = pad_ref(idx, pads, mode, value=-1.0).astype(np.int64)[0, 0]
    dx = np.zeros((N, C, H * W))
    for (i, j), s in np.ndenumerate(src):
        if s >= 0:
            dx[:, :, s] += dy[:, :, i, j]
    dx = dx.reshape(N, C, H, W)
    return dx.transpose(0, 2, 3, 1) if order == "NHWC" else dx


def x_shape(N, C, H, W, order):
    return (N, C, H, W) if order == "NCHW" else (N, H, W, C)


PADS = [  # (t, l, b, r): positive, zero, negative (crop), mixed
    (1, 2, 3, 1), (0, 0, 0, 0), (2, 2, 2, 2), (0, 3, 1, 0),
    (-1, -2, -1, 0), (-2, 1, 3, -3), (4, -1, -4, 2), (3, 4, 3, 4),
]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pads", PADS)
def test_pad_image_forward(rng, order, mode, pads):
    x = f32(rng, *x_shape(2, 3, 5, 6, order), lo=-3, hi=3)
    feed(x=x)
    t, l, b, r = pads
    y = run("PadImage", ["x"], ["y"], order=order, mode=mode, value=1.5, pad_t=t, pad_l=l, pad_b=b, pad_r=r)
    close(y, pad_ref(x, pads, mode, order, 1.5), 0)
    y2 = run("PadImage", ["x"], ["y2"], order=order, mode=mode, value=1.5, pads=list(pads))
    assert y2.tobytes() == y.tobytes()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
def test_pad_image_argument_forms(rng, order, mode):
    x = f32(rng, *x_shape(2, 2, 4, 5, order))
    feed(x=x)
    close(run("PadImage", ["x"], ["y"], order=order, mode=mode, pad=2), pad_ref(x, (2,) * 4, mode, order), 0)
    close(run("PadImage", ["x"], ["y"], order=order, mode=mode, pad=-1), pad_ref(x, (-1,) * 4, mode, order), 0)
    # no pads: a copy; the default mode is constant with value 0
    close(run("PadImage", ["x"], ["y"], order=order, mode=mode), x, 0)
    close(run("PadImage", ["x"], ["y"], order=order, pad=1), pad_ref(x, (1,) * 4, "constant", order), 0)
    # kernel arguments are ignored (Caffe2 replaced them by 1s); strides / dilations of 1 are accepted
    close(run("PadImage", ["x"], ["y"], order=order, mode=mode, pad=1, kernel=3, stride=1, dilations=[1, 1]),
          pad_ref(x, (1,) * 4, mode, order), 0)


@pytest.mark.parametrize("mode", MODES)
def test_pad_image_limits(rng, mode):
    """The largest reflect pads (size - 1), a size-1 image, a crop to a single cell."""
    x = f32(rng, 2, 3, 4, 5)
    feed(x=x, x1=f32(rng, 1, 2, 1, 1))
    close(run("PadImage", ["x"], ["y"], mode=mode, pads=[3, 4, 3, 4]), pad_ref(x, (3, 4, 3, 4), mode), 0)
    close(run("PadImage", ["x"], ["y"], mode=mode, pads=[-3, -4, 0, 0]), x[:, :, 3:, 4:], 0)
    close(run("PadImage", ["x"], ["y"], mode=mode, pads=[-1, -2, -2, -2]), x[:, :, 1:2, 2:3], 0)
    if mode != "reflect":
        close(run("PadImage", ["x1"], ["y"], mode=mode, pad=2),
              pad_ref(workspace.FetchBlob("x1"), (2,) * 4, mode), 0)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("N,C", [(0, 3), (2, 0), (0, 0)])
def test_pad_image_empty(order, mode, N, C):
    feed(x=np.zeros(x_shape(N, C, 3, 4, order), np.float32))
    y = run("PadImage", ["x"], ["y"], order=order, mode=mode, pads=[1, 2, 0, -1])
    assert y.shape == x_shape(N, C, 4, 5, order)
    feed(dy=y)
    dx = run("PadImageGradient", ["dy"], ["dx"], order=order, mode=mode, pads=[1, 2, 0, -1])
    assert dx.shape == x_shape(N, C, 3, 4, order)


@pytest.mark.parametrize("order", ORDERS)
def test_pad_image_constant_empty_image(order):
    """Constant mode pads an image of spatial size 0: Y is all `value`, and dX is empty."""
    feed(x=np.zeros(x_shape(2, 3, 0, 2, order), np.float32))
    y = run("PadImage", ["x"], ["y"], order=order, mode="constant", value=-2.5, pads=[1, 0, 2, 1])
    assert y.shape == x_shape(2, 3, 3, 3, order) and (y == -2.5).all()
    feed(dy=np.ones_like(y))
    dx = run("PadImageGradient", ["dy"], ["dx"], order=order, pads=[1, 0, 2, 1])
    assert dx.shape == x_shape(2, 3, 0, 2, order)


def test_pad_image_nan_and_value():
    x = np.array([[[[np.nan, 1.0], [np.inf, -2.0]]]], np.float32)
    feed(x=x)
    for mode in MODES:
        y = run("PadImage", ["x"], ["y"], mode=mode, pad=1, value=np.nan)
        np.testing.assert_array_equal(y, pad_ref(x, (1,) * 4, mode, value=np.nan))
    dy = np.ones((1, 1, 4, 4), np.float32)
    dy[0, 0, 0, 0] = np.nan
    feed(dy=dy)
    dx = run("PadImageGradient", ["dy"], ["dx"], mode="edge", pad=1)
    assert np.isnan(dx[0, 0, 0, 0]) and dx[0, 0, 1, 1] == 4.0


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pads", PADS)
def test_pad_image_gradient_op(rng, order, mode, pads):
    xs = x_shape(2, 3, 5, 6, order)
    y_shape = pad_ref(np.zeros(xs, np.float32), pads, mode, order).shape
    dy = f32(rng, *y_shape, lo=-2, hi=2)
    feed(dy=dy)
    dx = run("PadImageGradient", ["dy"], ["dx"], order=order, mode=mode, pads=list(pads), value=3.0)
    close(dx, grad_ref(dy, xs, pads, mode, order), 1e-6)
    # the same bits every run
    assert run("PadImageGradient", ["dy"], ["dx2"], order=order, mode=mode, pads=list(pads)).tobytes() == \
        dx.tobytes()


@pytest.mark.parametrize("xs", [(1, 1, 1, 1), (2, 3, 4, 2)])
def test_pad_image_gradient_rerun_same_blob(rng, xs):
    """dX is zeroed before every run: running again into the same blob gives the same bits."""
    dy = f32(rng, xs[0], xs[1], xs[2] + 3, xs[3] + 4)
    feed(dy=dy)
    o = op("PadImageGradient", ["dy"], ["dx"], mode="edge", pads=[1, 2, 2, 2])
    workspace.RunOperatorOnce(o)
    first = workspace.FetchBlob("dx")
    workspace.RunOperatorOnce(o)
    assert workspace.FetchBlob("dx").tobytes() == first.tobytes()
    close(first, grad_ref(dy, xs, (1, 2, 2, 2), "edge"), 1e-5)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pads", [(1, 2, 2, 1), (-1, 2, 1, -2), (3, 0, 0, 3)])
def test_pad_image_gradient_fd(rng, order, mode, pads):
    x = f32(rng, *x_shape(2, 2, 4, 5, order))
    o = op("PadImage", ["x"], ["y"], order=order, mode=mode, pads=list(pads))
    check_grads(o, [x])


def test_gradient_maker():
    fwd = op("PadImage", ["x"], ["y"], pad_t=1, pad_l=2, pad_b=0, pad_r=-1, mode="edge", order="NHWC")
    gops, gin = core.GradientRegistry.GetGradientForOp(fwd, ["y_grad"])
    assert len(gops) == 1 and gin == ["x_grad"]
    g = gops[0]
    assert g.type == "PadImageGradient" and list(g.input) == ["y_grad"] and list(g.output) == ["x_grad"]
    assert {a.name: a.value() for a in g.arg} == {"pad_t": 1, "pad_l": 2, "pad_b": 0, "pad_r": -1,
                                                  "mode": "edge", "order": "NHWC"}


def test_net_gradient_through_pad_image(rng):
    """loss = sum(PadImage(x, reflect) * w): x_grad from AddGradientOperators."""
    net = core.Net("padnet")
    net.SumElements(net.Mul([net.PadImage("x", "p", pad=2, mode="reflect"), "w"], "pw"), "loss")
    net.AddGradientOperators(["loss"])
    x, w = f32(rng, 2, 3, 4, 5), f32(rng, 2, 3, 8, 9)
    feed(x=x, w=w)
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("x_grad"), grad_ref(w.astype(np.float64), x.shape, (2,) * 4, "reflect"), 1e-5)


def test_cnn_model_helper_pad_image(rng):
    model = CNNModelHelper(order="NHWC", name="pi", use_cudnn=False)
    y = model.PadImage("x", "y", pads=[1, 0, 2, 1], mode="edge", order="NHWC")
    model.PadImage("x", "z", pad=1)  # the model's order is not passed on (as Caffe2's): NCHW
    ops = model.net.Proto().op
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [("PadImage", ["x"], ["y"]),
                                                                      ("PadImage", ["x"], ["z"])]
    assert {a.name: a.value() for a in ops[1].arg} == {"pad": 1}
    x = f32(rng, 2, 4, 5, 3)
    feed(x=x)
    workspace.RunNetOnce(model.net)
    close(workspace.FetchBlob(str(y)), pad_ref(x, (1, 0, 2, 1), "edge", "NHWC"), 0)
    close(workspace.FetchBlob("z"), pad_ref(x, (1,) * 4, "constant"), 0)


# ---------------------------------------------------------------- bad input
def test_bad_arguments():
    feed(x=np.zeros((2, 3, 5, 6), np.float32), y=np.array([7.0], np.float32))
    raises(ValueError, r"op PadImage #0: argument mode must be \"constant\", \"reflect\" or \"edge\", got "
                       r"\"wrap\"", op("PadImage", ["x"], ["y"], pad=1, mode="wrap"))
    raises(ValueError, r"op PadImage #0: takes explicit pads only: argument legacy_pad must be 0 \(NOTSET\), "
                       r"got 2", op("PadImage", ["x"], ["y"], legacy_pad=2))
    raises(ValueError, "op PadImage #0: argument strides: value 1 is 2; padding takes 1 only",
           op("PadImage", ["x"], ["y"], pad=1, stride_h=1, stride_w=2))
    raises(ValueError, "op PadImageGradient #0: argument dilations: value 0 is 2; padding takes 1 only",
           op("PadImageGradient", ["x"], ["y"], pad=1, dilation=2))
    raises(ValueError, r"op PadImage #0: argument pads has 6 values; padding is 2-D: give 4 \(pad_t, pad_l, "
                       r"pad_b, pad_r\)", op("PadImage", ["x"], ["y"], pads=[1] * 6))
    raises(ValueError, "argument pads: value 0 is -2147483648, must lie in",
           op("PadImage", ["x"], ["y"], pad=-2 ** 31))
    raises(ValueError, "argument global_pooling is for the pooling ops only",
           op("PadImage", ["x"], ["y"], global_pooling=1))
    raises(ValueError, "argument pad_t is given without pad_b",
           op("PadImage", ["x"], ["y"], pad_t=1, pad_l=1))
    raises(TypeError, "argument 'value' must be a float",
           op("PadImage", ["x"], ["y"], value="zero"))
    assert workspace.FetchBlob("y").tolist() == [7.0]  # nothing was written


def test_bad_shapes():
    feed(x=np.zeros((2, 3, 5, 6), np.float32), xi=np.zeros((2, 3, 5, 6), np.int32),
         x3=np.zeros((2, 3, 5), np.float32), x0=np.zeros((2, 3, 0, 6), np.float32),
         z=np.array([7.0], np.float32))
    raises(TypeError, r"op PadImage #0: input 0 blob 'xi' must be float32, got \(2, 3, 5, 6\) int32",
           op("PadImage", ["xi"], ["z"], pad=1))
    raises(ValueError, r"op PadImage #0: input 0 blob 'x3' \(2, 3, 5\) float32 must have 4 dims \(order NHWC: "
                       r"N, H, W, C\)", op("PadImage", ["x3"], ["z"], pad=1, order="NHWC"))
    raises(ValueError, r"op PadImage #0: input 0 blob 'x' \(2, 3, 5, 6\) float32: mode \"reflect\" needs pads "
                       r"<= size - 1 in dim w \(size 6, pads 0, 6\)",
           op("PadImage", ["x"], ["z"], mode="reflect", pads=[4, 0, 4, 6]))
    raises(ValueError, r"op PadImage #0: input 0 blob 'x' \(2, 3, 5, 6\) float32: in dim h the image has size 5 "
                       r"and the padded image 0 \(pads -3 \+ -2\); need image >= 0 and padded >= 1",
           op("PadImage", ["x"], ["z"], pads=[-3, 0, -2, 0]))
    raises(ValueError, r"op PadImage #0: input 0 blob 'x0' \(2, 3, 0, 6\) float32: dim h of the image has size "
                       r"0: mode \"edge\" has no cell to copy", op("PadImage", ["x0"], ["z"], mode="edge", pad=1))
    raises(ValueError, r"op PadImageGradient #0: input 0 blob 'x' \(2, 3, 5, 6\) float32: in dim w the image "
                       r"has size -2 and the padded image 6 \(pads 4 \+ 4\); need image >= 0 and padded >= 1",
           op("PadImageGradient", ["x"], ["z"], pads=[0, 4, 0, 4]))
    raises(ValueError, r"op PadImageGradient #0: input 0 blob 'x' \(2, 3, 5, 6\) float32: mode \"reflect\" "
                       r"needs pads <= size - 1 in dim h \(size 1, pads 2, 2\)",
           op("PadImageGradient", ["x"], ["z"], mode="reflect", pads=[2, 0, 2, 0]))
    assert workspace.FetchBlob("z").tolist() == [7.0]  # nothing was written


def test_huge_output_is_a_memory_error():
    feed(x=np.zeros((1, 1, 1, 1), np.float32))
    raises(MemoryError, "output 0 blob .y.", op("PadImage", ["x"], ["y"], pad=2 ** 31 - 1))
