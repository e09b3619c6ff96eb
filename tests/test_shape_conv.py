"""Shape inference of the convolution ops (recurrent/_shape_conv.py): inferred shapes against runs, and
refused inputs refused by both."""

import numpy as np
import pytest

from recurrent import workspace
from test_shape_tensor import check, f32, refused


@pytest.mark.parametrize("type_", ["Conv", "Conv1D", "Conv2D", "Conv3D"])
@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_conv_and_gradient(type_, order):
    x = f32(2, 4, 7, 6) if order == "NCHW" else f32(2, 7, 6, 4)
    w = f32(6, 2, 3, 2) if order == "NCHW" else f32(6, 3, 2, 2)
    kw = dict(kernel_h=3, kernel_w=2, stride=2, pad_t=1, pad_b=0, pad_l=0, pad_r=1, group=2, order=order)
    shapes, _ = check(type_, [("x", x), ("w", w), ("b", f32(6))], ["y"], **kw)
    check(type_, [("x", x), ("w", w)], ["y"], **kw)
    dy = f32(*shapes["y"])
    g = type_ + "Gradient"
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw", "db", "dx"], **kw)
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw", "db"], **kw)
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw", "dx"], no_bias=1, **kw)
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw"], no_bias=1, **kw)


@pytest.mark.parametrize("kw,want", [(dict(kernels=[3], strides=[2]), (1, 3, 3)),
                                     (dict(kernels=[2, 1, 3], pads=[1, 0, 1, 0, 2, 1], dilations=[2, 1, 1]),
                                      (1, 3, 6, 9, 7)),
                                     (dict(kernel=3, legacy_pad=2, stride=2), (1, 3, 4, 4))])
def test_conv_dims(kw, want):
    nd = len(want) - 2
    x = f32(*((1, 2) + (7,) * nd))
    w = f32(*((3, 2) + tuple(kw.get("kernels", [kw.get("kernel")] * nd))))
    shapes, _ = check("Conv", [("x", x), ("w", w)], ["y"], **kw)
    assert tuple(shapes["y"]) == want


def test_refused():
    x, w = f32(2, 4, 5, 5), f32(6, 4, 3, 3)
    refused("Conv", [("x", x), ("w", f32(6, 2, 3, 3))], ["y"], kernel=3)
    refused("Conv", [("x", x), ("w", w)], ["y"], kernel=3, group=3)
    refused("Conv", [("x", x), ("w", w), ("b", f32(5))], ["y"], kernel=3)
    refused("Conv", [("x", x), ("w", w), ("b", np.zeros(6, np.int32))], ["y"], kernel=3)
    refused("Conv", [("x", x), ("w", w)], ["y"], kernel=6)
    refused("ConvGradient", [("x", x), ("w", w), ("dy", f32(2, 6, 3, 4))], ["dw", "db"], kernel=3)


def test_creation_refused_leaves_unknown():
    workspace.ResetWorkspace()
    x, w = f32(2, 4, 5, 5), f32(6, 4, 3, 3)
    for name, v in (("x", x), ("w", w), ("dy", f32(2, 6, 3, 3))):
        workspace.FeedBlob(name, v)
    from recurrent import core
    net = core.Net("bad")
    net.Conv(["x", "w"], "y", kernel=3, group=0)
    net.ConvGradient(["x", "w", "dy"], ["dw"], kernel=3)
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert "y" not in shapes and "dw" not in shapes


def test_shapes_given_without_types():
    """blob_dimensions without blob_types (UNDEFINED dtypes): the outputs are still inferred, as FLOAT."""
    import warnings
    from recurrent import core, workspace
    net = core.Net("conv_untyped")
    net.Conv(["x", "w", "b"], "y", kernel=3, pad=1)
    net.ConvTranspose(["y", "wt"], "z", kernel=2, stride=2)
    net.MaxPool("z", "p", kernel=2, stride=2)
    net.PadImage("p", "q", pad=1)
    net.LRN("q", "r", size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shapes, types = workspace.InferShapesAndTypes(
            [net], blob_dimensions={"x": [2, 3, 5, 5], "w": [4, 3, 3, 3], "b": [4], "wt": [4, 2, 2, 2]})
    assert shapes["y"] == [2, 4, 5, 5] and shapes["z"] == [2, 2, 10, 10] and shapes["p"] == [2, 2, 5, 5]
    assert shapes["q"] == [2, 2, 7, 7] and shapes["r"] == [2, 2, 7, 7]
    assert types["y"] == types["r"] == core.DataType.FLOAT


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kw", [dict(kernel=3), dict(kernel=2, stride=2, pad=1, dilation=2),
                                dict(kernel_h=3, kernel_w=1, pads=[0, 1, 2, 0], strides=[2, 1]),
                                dict(kernels=[1, 1])])
def test_im2col_col2im(order, kw):
    x = f32(2, 3, 5, 6) if order == "NCHW" else f32(2, 5, 6, 3)
    shapes, _ = check("Im2Col", [("x", x)], ["y"], order=order, **kw)
    check("Col2Im", [("y", f32(*shapes["y"])), ("x", x)], ["z"], order=order, **kw)
    check("Col2Im", [("y", f32(*shapes["y"])), ("x", x.astype(np.int32))], ["z"], order=order, **kw)


def test_im2col_refused():
    x = f32(2, 3, 5, 5)
    refused("Im2Col", [("x", x)], ["y"], kernel=7)
    refused("Im2Col", [("x", f32(3, 5, 5))], ["y"], kernel=3)
    refused("Im2Col", [("x", x.astype(np.int32))], ["y"], kernel=3)
    refused("Col2Im", [("c", f32(2, 27, 3, 4)), ("x", x)], ["z"], kernel=3)
    refused("Col2Im", [("c", f32(2, 3, 3, 27)), ("x", x)], ["z"], kernel=3)   # NHWC's layout, NCHW's count
    refused("Col2Im", [("c", np.zeros((2, 27, 3, 3), np.int32)), ("x", x)], ["z"], kernel=3)


def test_im2col_creation_refused_leaves_unknown():
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", f32(2, 3, 5, 5))
    from recurrent import core
    net = core.Net("bad_im2col")
    net.Im2Col(["x"], "y", kernels=[3])
    net.Im2Col(["x"], "y2", kernel=3, legacy_pad=2)
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert "y" not in shapes and "y2" not in shapes
