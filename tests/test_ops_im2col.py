"""Im2Col and Col2Im (csrc/ops/conv.c, on the column kernel Conv runs) and their gradient makers
(recurrent/_grad_conv.py): NumPy references over both orders and every argument form (kernel,
stride, pad, dilation, asymmetric pads), Caffe2's own layout test (NCHW columns = NHWC columns
transposed), agreement with Conv (Conv = filter x Im2Col), empty batches, the adjoint identity
<Im2Col(x), c> = <x, Col2Im(c)>, finite-difference gradients, and bad input with exact messages."""

import os
import subprocess
import sys

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_clip_math import check_grads
from test_ops_math import G, f32, feed, fails, op, run

ORDERS = ["NCHW", "NHWC"]
INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------- references
def geometry(H, W, kh, kw, sh, sw, dh, dw, pads):
    t, l, b, r = pads
    oh = (H + t + b - (dh * (kh - 1) + 1)) // sh + 1
    ow = (W + l + r - (dw * (kw - 1) + 1)) // sw + 1
    return oh, ow


def im2col_ref(x, k, s=(1, 1), d=(1, 1), pads=(0, 0, 0, 0), order="NCHW"):
    """Caffe2's Im2Col: NCHW (N, C kh kw, oh, ow), rows (c, a_h, a_w); NHWC (N, oh, ow, kh kw C),
    columns (a_h, a_w, c); cells outside X are 0."""
    if order == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (dh, dw) = k, s, d
    t, l, b, r = pads
    oh, ow = geometry(H, W, kh, kw, sh, sw, dh, dw, pads)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    cols = np.zeros((N, C, kh, kw, oh, ow), x.dtype)
    for ah in range(kh):
        for aw in range(kw):
            rows = ah * dh + sh * np.arange(oh)
            colsw = aw * dw + sw * np.arange(ow)
            cols[:, :, ah, aw] = xp[:, :, rows[:, None], colsw[None, :]]
    if order == "NCHW":
        return cols.reshape(N, C * kh * kw, oh, ow)
    return cols.transpose(0, 4, 5, 2, 3, 1).reshape(N, oh, ow, kh * kw * C)


def col2im_ref(c, image_shape, k, s=(1, 1), d=(1, 1), pads=(0, 0, 0, 0), order="NCHW"):
    """The adjoint of im2col_ref: every column cell added (float64) onto the image cell it came from."""
    if order == "NHWC":
        N, H, W, C = image_shape
    else:
        N, C, H, W = image_shape
    (kh, kw), (sh, sw), (dh, dw) = k, s, d
    t, l, b, r = pads
    oh, ow = geometry(H, W, kh, kw, sh, sw, dh, dw, pads)
    if order == "NCHW":
        cols = c.reshape(N, C, kh, kw, oh, ow).astype(np.float64)
    else:
        cols = c.reshape(N, oh, ow, kh, kw, C).transpose(0, 5, 3, 4, 1, 2).astype(np.float64)
    img = np.zeros((N, C, H + t + b, W + l + r))
    for ah in range(kh):
        for aw in range(kw):
            for i in range(oh):
                for j in range(ow):
                    img[:, :, ah * dh + i * sh, aw * dw + j * sw] += cols[:, :, ah, aw, i, j]
    img = img[:, :, t:t + H, l:l + W]
    return img.transpose(0, 2, 3, 1) if order == "NHWC" else img


def xshape(N, C, H, W, order):
    return (N, C, H, W) if order == "NCHW" else (N, H, W, C)


# (op arguments, (k, s, d, pads) for the references)
FORMS = [
    (dict(kernel=3), ((3, 3), (1, 1), (1, 1), (0, 0, 0, 0))),
    (dict(kernel=3, pad=1, stride=2), ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1))),
    (dict(kernel=2, dilation=2, pad=2), ((2, 2), (1, 1), (2, 2), (2, 2, 2, 2))),
    (dict(kernel_h=3, kernel_w=1, stride_h=2, stride_w=1, dilation_h=1, dilation_w=3),
     ((3, 1), (2, 1), (1, 3), (0, 0, 0, 0))),
    (dict(kernels=[2, 3], strides=[1, 2], pads=[1, 0, 2, 1]), ((2, 3), (1, 2), (1, 1), (1, 0, 2, 1))),
    (dict(kernel=1), ((1, 1), (1, 1), (1, 1), (0, 0, 0, 0))),
    (dict(kernel=5, pad_t=0, pad_l=2, pad_b=3, pad_r=1),
     ((5, 5), (1, 1), (1, 1), (0, 2, 3, 1))),
    (dict(kernel=4, pad=1), ((4, 4), (1, 1), (1, 1), (1, 1, 1, 1))),   # the kernel fits the padded image only
]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("form", FORMS, ids=[str(i) for i in range(len(FORMS))])
def test_im2col_and_col2im_against_numpy(rng, order, form):
    kw, (k, s, d, pads) = form
    x = f32(rng, *xshape(2, 3, 3, 5, order), lo=-2, hi=2)
    feed(x=x)
    y = run("Im2Col", ["x"], ["y"], order=order, **kw)
    want = im2col_ref(x, k, s, d, pads, order)
    assert y.shape == want.shape and y.dtype == np.float32
    assert y.tobytes() == want.tobytes()   # a copy: bit for bit
    c = f32(rng, *y.shape, lo=-2, hi=2)
    feed(c=c)
    z = run("Col2Im", ["c", "x"], ["z"], order=order, **kw)
    assert z.shape == x.shape and z.dtype == np.float32
    np.testing.assert_allclose(z, col2im_ref(c, x.shape, k, s, d, pads, order), rtol=1e-5, atol=1e-5)
    # the adjoint identity
    np.testing.assert_allclose(np.vdot(y.astype(np.float64), c), np.vdot(x.astype(np.float64), z), rtol=1e-4)


@pytest.mark.parametrize("stride,pad,kernel,dilation",
                         [(1, 0, 1, 1), (2, 3, 5, 1), (3, 1, 2, 3), (1, 2, 3, 2)])
def test_caffe2_layout_test(rng, stride, pad, kernel, dilation):
    """Caffe2's im2col_col2im_test.py: the NCHW columns are the NHWC columns transposed, and Col2Im of
    both gives the same image."""
    N, C, H = 2, 3, 8
    im = f32(rng, N, C, H, H, lo=-0.5, hi=0.5)
    feed(im_nchw=im, im_nhwc=im.transpose(0, 2, 3, 1))
    kw = dict(stride=stride, kernel=kernel, dilation=dilation, pad=pad)
    cn = run("Im2Col", ["im_nchw"], ["col_nchw"], order="NCHW", **kw)
    ch = run("Im2Col", ["im_nhwc"], ["col_nhwc"], order="NHWC", **kw)
    oh = (H + 2 * pad - (dilation * (kernel - 1) + 1)) // stride + 1
    a = cn.reshape(N, C, kernel, kernel, oh, oh)
    b = ch.reshape(N, oh, oh, kernel, kernel, C).transpose(0, 5, 3, 4, 1, 2)
    np.testing.assert_array_equal(a, b)
    on = run("Col2Im", ["col_nchw", "im_nchw"], ["out_nchw"], order="NCHW", **kw)
    oh_ = run("Col2Im", ["col_nhwc", "im_nhwc"], ["out_nhwc"], order="NHWC", **kw)
    np.testing.assert_allclose(on, oh_.transpose(0, 3, 1, 2), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_conv_is_filter_times_im2col(rng, order):
    """Conv(X, W) = W (M, C kh kw) x the columns of each image: the op shares Conv's column kernel."""
    x = f32(rng, *xshape(2, 3, 6, 5, order))
    kw = dict(kernel_h=3, kernel_w=2, stride=2, pads=[1, 0, 1, 1], dilation_h=2, dilation_w=1, order=order)
    M = 4
    w = f32(rng, *((M, 3, 3, 2) if order == "NCHW" else (M, 3, 2, 3)))
    feed(x=x, w=w)
    y = run("Conv", ["x", "w"], ["y"], **kw)
    cols = run("Im2Col", ["x"], ["c"], **kw).astype(np.float64)
    w2 = w.reshape(M, -1).astype(np.float64)
    if order == "NCHW":
        ref = np.einsum("mk,nkhw->nmhw", w2, cols)
    else:
        ref = np.einsum("mk,nhwk->nhwm", w2, cols)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("N,C", [(0, 3), (2, 0), (0, 0)])
def test_empty_batch_or_channels(order, N, C):
    """Caffe2 divided by N (a crash for N = 0); here the outputs are empty."""
    x = np.zeros(xshape(N, C, 4, 5, order), np.float32)
    feed(x=x)
    y = run("Im2Col", ["x"], ["y"], order=order, kernel=2, pad=1)
    assert y.shape == ((N, C * 4, 5, 6) if order == "NCHW" else (N, 5, 6, C * 4))
    feed(y=y)
    z = run("Col2Im", ["y", "x"], ["z"], order=order, kernel=2, pad=1)
    assert z.shape == x.shape and z.dtype == np.float32


_EMPTY_COLUMNS = """
import sys
import numpy as np
from recurrent import core, workspace
order, xs, args = sys.argv[1], eval(sys.argv[2]), eval(sys.argv[3])
workspace.FeedBlob("x", np.zeros(xs, np.float32))
workspace.RunOperatorOnce(core.CreateOperator("Im2Col", ["x"], ["c"], order=order, **args))
c = workspace.FetchBlob("c")
workspace.FeedBlob("c", c)
workspace.RunOperatorOnce(core.CreateOperator("Col2Im", ["c", "x"], ["z"], order=order, **args))
z = workspace.FetchBlob("z")
assert c.size == 0 and z.shape == xs and z.dtype == np.float32, (c.shape, z.shape)
print(c.shape)
"""


@pytest.mark.parametrize("order,xs,args,cols", [
    # NHWC, C = 0, pad_t near 2^31: 2^31 - 2 output rows of no column
    ("NHWC", (1, 1, 2, 0), dict(kernel=3, pads=[INT32_MAX, 3, 0, 3]), (1, INT32_MAX - 1, 6, 0)),
    # a huge batch of empty images, either order
    ("NCHW", (2 ** 40, 0, 1, 1), dict(kernel=1), (2 ** 40, 0, 1, 1)),
    ("NHWC", (2 ** 40, 1, 1, 0), dict(kernel=1), (2 ** 40, 1, 1, 0)),
])
def test_empty_columns_of_a_huge_extent_return_at_once(order, xs, args, cols):
    """Found by a directed stress run (helper-89), not by the fuzz targets: with an empty column
    tensor, Im2Col's and Col2Im's NHWC walk still visited every output position and kernel cell (C = 0
    and pad_t near 2^31: ~1e11 steps), and both orders walked each of the N empty images (N = 2^40),
    so these empty outputs took minutes to hours (a hang; the fuzzers' limit is 30 s). Now an empty
    column tensor returns at once (Col2Im's Y zeroed). Run in a child process, so that a regression
    times out instead of hanging pytest."""
    import recurrent
    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-c", _EMPTY_COLUMNS, order, repr(xs), repr(args)],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == repr(cols)


def test_col2im_shape_input_of_any_dtype(rng):
    """Col2Im reads only Z's shape (as Caffe2): an int32 Z gives a float32 Y of its shape."""
    x = f32(rng, 1, 2, 4, 4)
    feed(x=x, xi=np.zeros((1, 2, 4, 4), np.int32))
    c = run("Im2Col", ["x"], ["c"], kernel=2)
    z = run("Col2Im", ["c", "xi"], ["z"], kernel=2)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z, col2im_ref(c, x.shape, (2, 2)), rtol=1e-6, atol=1e-6)


def test_col2im_overwrites_its_output(rng):
    """Y is zeroed before the columns are added (a second run gives the same, not twice)."""
    x = f32(rng, 1, 1, 3, 3)
    feed(x=x)
    c = run("Im2Col", ["x"], ["c"], kernel=2)
    net = core.Net("twice")
    net.Col2Im(["c", "x"], "z", kernel=2)
    workspace.RunNetOnce(net)
    first = workspace.FetchBlob("z")
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("z").tobytes() == first.tobytes()
    np.testing.assert_allclose(first, col2im_ref(c, x.shape, (2, 2)), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- gradients
def test_gradient_makers_as_caffe2():
    o = op("Im2Col", ["x"], ["y"], kernel=3, pad=1, order="NHWC")
    ops, g_in = G(o, ["y_grad"])
    assert len(ops) == 1 and ops[0].type == "Col2Im"
    assert list(ops[0].input) == ["y_grad", "x"] and list(ops[0].output) == ["x_grad"] and g_in == ["x_grad"]
    assert {a.name for a in ops[0].arg} == {"kernel", "pad", "order"}
    o = op("Col2Im", ["c", "z"], ["y"], kernel=3, stride=2)
    ops, g_in = G(o, ["y_grad"])
    assert len(ops) == 1 and ops[0].type == "Im2Col"
    assert list(ops[0].input) == ["y_grad"] and list(ops[0].output) == ["c_grad"] and g_in == ["c_grad", None]
    assert {a.name for a in ops[0].arg} == {"kernel", "stride"}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kw", [dict(kernel=2), dict(kernel=3, pad=1, stride=2),
                                dict(kernel_h=2, kernel_w=3, dilation=2, pads=[0, 2, 1, 0])])
def test_gradients_by_finite_differences(rng, order, kw):
    x = f32(rng, *xshape(2, 2, 5, 6, order))
    check_grads(op("Im2Col", ["x"], ["y"], order=order, **kw), [x])
    feed(x=x)
    c = run("Im2Col", ["x"], ["c"], order=order, **kw)
    c = f32(rng, *c.shape)
    check_grads(op("Col2Im", ["c", "z"], ["y"], order=order, **kw), [c, x], [0])


def test_gradient_through_a_net(rng):
    """AddGradientOperators over Im2Col then Col2Im: dX = Col2Im(Im2Col(dY))."""
    x = f32(rng, 1, 2, 4, 4)
    feed(x=x)
    net = core.Net("g")
    net.Im2Col(["x"], "c", kernel=2, pad=1)
    net.Col2Im(["c", "x"], "y", kernel=2, pad=1)
    net.AddGradientOperators(["y"])
    workspace.RunNetOnce(net)
    ones = np.ones_like(x)
    want = col2im_ref(im2col_ref(ones, (2, 2), pads=(1, 1, 1, 1)), x.shape, (2, 2), pads=(1, 1, 1, 1))
    np.testing.assert_allclose(workspace.FetchBlob("x_grad"), want, rtol=1e-6)


# ---------------------------------------------------------------- bad input
BAD = [
    ("Im2Col", dict(x=np.zeros((2, 3, 5), np.float32)), ["x"], dict(kernel=3), ValueError,
     "op Im2Col #0: input 0 blob 'x' (2, 3, 5) float32 must have 4 dims for a 2-D kernel (order NCHW: N, C, "
     "spatial dims)"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.int32)), ["x"], dict(kernel=3), TypeError,
     "op Im2Col #0: input 0 blob 'x' must be float32, got (2, 3, 5, 5) int32"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], dict(kernel=3, pad=1, dilation=4),
     ValueError, "op Im2Col #0: input 0 blob 'x' (2, 3, 5, 5) float32 (order NCHW): spatial size 5 in dim h "
                 "with pads 1 + 1 is smaller than the window 9 (kernel 3, dilation 4)"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], dict(kernel=3, pad=-1), ValueError,
     "op Im2Col #0: argument pads: value 0 is -1, must lie in [0, 2^31 - 1]"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], dict(kernels=[3]), ValueError,
     "op Im2Col #0: takes a 2-D kernel (kernel, kernel_h + kernel_w, or kernels with 2 values), got 1-D"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], {}, ValueError,
     "op Im2Col #0: needs the kernel size: argument kernels (a list), kernel (2-D) or kernel_h + kernel_w"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], dict(kernel=3, legacy_pad=2), ValueError,
     "op Im2Col #0: takes explicit pads only: argument legacy_pad must be 0 (NOTSET), got 2"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], dict(kernel=3, stride=0), ValueError,
     "op Im2Col #0: argument strides: value 0 is 0, must lie in [1, 2^31 - 1]"),
    ("Im2Col", dict(x=np.zeros((2, 3, 5, 5), np.float32)), ["x"], dict(kernel=3, order="NCWH"), ValueError,
     None),
    ("Col2Im", dict(c=np.zeros((2, 27, 3, 4), np.float32), x=np.zeros((2, 3, 5, 5), np.float32)), ["c", "x"],
     dict(kernel=3), ValueError,
     "op Col2Im #0: input 0 blob 'c' (columns) (2, 27, 3, 4) float32 must have Im2Col's output shape "
     "(2, 27, 3, 3) float32 for input 1 blob 'x' (2, 3, 5, 5) float32 (order NCHW, kernel 3 x 3)"),
    # the same element count in NHWC's layout: Caffe2 compared the counts only and read it in the wrong order
    ("Col2Im", dict(c=np.zeros((2, 3, 3, 27), np.float32), x=np.zeros((2, 3, 5, 5), np.float32)), ["c", "x"],
     dict(kernel=3), ValueError,
     "op Col2Im #0: input 0 blob 'c' (columns) (2, 3, 3, 27) float32 must have Im2Col's output shape "
     "(2, 27, 3, 3) float32 for input 1 blob 'x' (2, 3, 5, 5) float32 (order NCHW, kernel 3 x 3)"),
    ("Col2Im", dict(c=np.zeros((2, 27, 3, 3), np.int32), x=np.zeros((2, 3, 5, 5), np.float32)), ["c", "x"],
     dict(kernel=3), TypeError, "op Col2Im #0: input 0 blob 'c' must be float32, got (2, 27, 3, 3) int32"),
    ("Col2Im", dict(c=np.zeros((2, 27, 3, 3), np.float32), x=np.zeros((3, 5, 5), np.float32)), ["c", "x"],
     dict(kernel=3), ValueError,
     "op Col2Im #0: input 1 blob 'x' (3, 5, 5) float32 must have 4 dims for a 2-D kernel (order NCHW: N, C, "
     "spatial dims)"),
    ("Col2Im", dict(c=np.zeros((2, 27, 3, 3), np.float32), x=np.zeros((2, 3, 2, 5), np.float32)), ["c", "x"],
     dict(kernel=3), ValueError,
     "op Col2Im #0: input 1 blob 'x' (2, 3, 2, 5) float32 (order NCHW): spatial size 2 in dim h with pads "
     "0 + 0 is smaller than the window 3 (kernel 3, dilation 1)"),
    # the columns of C x kernel cells overflow int64
    ("Im2Col", dict(x=np.zeros((1, 3, 1, 1), np.float32)), ["x"], dict(kernel=INT32_MAX, pad=INT32_MAX),
     MemoryError,
     "op Im2Col #0: input 0 blob 'x' (1, 3, 1, 1) float32: the columns (3 channels x 4611686014132420609 "
     "kernel cells x 4611686022722355201 positions per image) have more than 2^63 elements"),
    # the output positions overflow int64
    ("Im2Col", dict(x=np.zeros((1, 1, 1, 1), np.float32)), ["x"], dict(kernel=1, pad=INT32_MAX), MemoryError,
     "op Im2Col #0: input 0 blob 'x' (1, 1, 1, 1) float32: the output or window has more than 2^63 elements"),
    # fits int64, not memory
    ("Im2Col", dict(x=np.zeros((1, 1, 1, 1), np.float32)), ["x"], dict(kernel=1, pad=2 ** 22 - 1),
     MemoryError,
     "op Im2Col #0: output 0 blob 'y': tensor of too many elements is too large to allocate"),
]


@pytest.mark.parametrize("case", BAD, ids=["%s-%d" % (c[0], i) for i, c in enumerate(BAD)])
def test_bad_input(case):
    type_, blobs, inputs, kw, exc, msg = case
    workspace.ResetWorkspace()
    feed(**blobs)
    if msg is None:
        with pytest.raises(exc, match="op %s #0: " % type_):
            workspace.RunOperatorOnce(op(type_, inputs, ["y"], **kw))
    else:
        fails(exc, msg, type_, inputs, ["y"], **kw)
    # the workspace stays usable
    feed(ok=np.ones((1, 1, 2, 2), np.float32))
    assert run("Im2Col", ["ok"], ["ok_c"], kernel=1).shape == (1, 1, 2, 2)


def test_not_in_place():
    feed(x=np.zeros((1, 1, 3, 3), np.float32))
    with pytest.raises(ValueError, match="op Im2Col #0"):
        workspace.RunOperatorOnce(op("Im2Col", ["x"], ["x"], kernel=1))


# ---------------------------------------------------------------- Caffe2's im2col_col2im_test.py
import hypothesis.strategies as st  # noqa: E402
from hypothesis import assume, given  # noqa: E402

from recurrent import hypothesis_test_util as hu  # noqa: E402


class TestIm2ColHypothesis(hu.HypothesisTestCase):
    """As Caffe2's test_col2im_gradients (NCHW), and here NHWC too, with the NumPy reference."""

    @hu.settings(derandomize=True, max_examples=10, deadline=None)
    @given(batch_size=st.integers(1, 3), stride=st.integers(1, 3), pad=st.integers(0, 3),
           kernel=st.integers(1, 5), dilation=st.integers(1, 3), size=st.integers(7, 10),
           channels=st.integers(1, 4), order=st.sampled_from(["NCHW", "NHWC"]), **hu.gcs_cpu_only)
    def test_im2col_gradients(self, batch_size, stride, pad, kernel, dilation, size, channels, order, gc, dc):
        assume(size >= dilation * (kernel - 1) + 1)
        o = core.CreateOperator("Im2Col", ["X"], ["Y"], stride=stride, kernel=kernel, dilation=dilation,
                                pad=pad, order=order)
        X = np.random.RandomState(size + kernel).rand(*xshape(batch_size, channels, size, size, order))
        X = X.astype(np.float32)

        def ref(x):
            k, s, d = (kernel, kernel), (stride, stride), (dilation, dilation)
            return (im2col_ref(x, k, s, d, (pad,) * 4, order),)

        self.assertReferenceChecks(gc, o, [X], ref)
        self.assertDeviceChecks(dc, o, [X], [0])
        self.assertGradientChecks(gc, o, [X], 0, [0])
