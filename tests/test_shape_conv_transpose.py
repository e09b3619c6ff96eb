"""Shape inference of ConvTranspose and ConvTransposeGradient (recurrent/_shape_conv.py): inferred shapes
against runs, and refused inputs refused by both."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_shape_tensor import check, f32, refused


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_conv_transpose_and_gradient(order):
    x = f32(2, 4, 5, 3) if order == "NCHW" else f32(2, 5, 3, 4)
    w = f32(4, 3, 3, 2) if order == "NCHW" else f32(4, 3, 2, 3)
    kw = dict(kernel_h=3, kernel_w=2, stride=2, pad_t=1, pad_b=0, pad_l=0, pad_r=1, adj_h=1, adj_w=2,
              group=2, order=order)
    shapes, _ = check("ConvTranspose", [("x", x), ("w", w), ("b", f32(6))], ["y"], **kw)
    assert tuple(shapes["y"]) == ((2, 6, 11, 7) if order == "NCHW" else (2, 11, 7, 6))
    check("ConvTranspose", [("x", x), ("w", w)], ["y"], **kw)
    dy = f32(*shapes["y"])
    g = "ConvTransposeGradient"
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw", "db", "dx"], **kw)
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw", "db"], **kw)
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw", "dx"], no_bias=1, **kw)
    check(g, [("x", x), ("w", w), ("dy", dy)], ["dw"], no_bias=1, **kw)


@pytest.mark.parametrize("kw,want", [(dict(kernels=[3], strides=[2], adjs=[1]), (1, 3, 16)),
                                     (dict(kernels=[2, 1, 3], pads=[1, 0, 1, 0, 2, 1], dilations=[2, 1, 1]),
                                      (1, 3, 8, 5, 7)),
                                     (dict(kernel=3, legacy_pad=2, stride=2, adj=2), (1, 3, 17, 17))])
def test_conv_transpose_dims(kw, want):
    nd = len(want) - 2
    x = f32(*((1, 2) + (7,) * nd))
    w = f32(*((2, 3) + tuple(kw.get("kernels", [kw.get("kernel")] * nd))))
    shapes, _ = check("ConvTranspose", [("x", x), ("w", w)], ["y"], **kw)
    assert tuple(shapes["y"]) == want


def test_refused():
    x, w = f32(2, 4, 5, 5), f32(4, 3, 3, 3)
    refused("ConvTranspose", [("x", x), ("w", f32(6, 3, 3, 3))], ["y"], kernel=3)
    refused("ConvTranspose", [("x", x), ("w", w)], ["y"], kernel=3, group=3)
    refused("ConvTranspose", [("x", x), ("w", w), ("b", f32(5))], ["y"], kernel=3)
    refused("ConvTranspose", [("x", x), ("w", w), ("b", np.zeros(3, np.int32))], ["y"], kernel=3)
    refused("ConvTranspose", [("x", f32(1, 4, 1, 1)), ("w", w)], ["y"], kernel=3, pad=2)
    refused("ConvTranspose", [("x", f32(2, 4, 5)), ("w", w)], ["y"], kernel=3)
    refused("ConvTransposeGradient", [("x", x), ("w", w), ("dy", f32(2, 3, 7, 8))], ["dw", "db"], kernel=3)


def test_creation_refused_leaves_unknown():
    workspace.ResetWorkspace()
    x, w = f32(2, 4, 5, 5), f32(4, 3, 3, 3)
    for name, v in (("x", x), ("w", w), ("dy", f32(2, 3, 7, 7))):
        workspace.FeedBlob(name, v)
    net = core.Net("bad")
    net.ConvTranspose(["x", "w"], "y", kernel=3, adj=2)
    net.ConvTranspose(["x", "w"], "y2", kernel=3, legacy_pad=3)
    net.ConvTransposeGradient(["x", "w", "dy"], ["dw"], kernel=3)
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert "y" not in shapes and "y2" not in shapes and "dw" not in shapes
