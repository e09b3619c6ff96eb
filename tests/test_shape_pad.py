"""Shape inference of PadImage and PadImageGradient (recurrent/_shape_pad.py): inferred shapes against
runs over orders, modes and pads (negative ones crop), and refused inputs refused by both."""

import numpy as np
import pytest

from test_shape_tensor import check, f32, refused


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("kw", [dict(pad=2), dict(pads=[1, -2, 3, 0]), dict(pad_t=-1, pad_l=2, pad_b=0, pad_r=4),
                                {}, dict(pads=[-4, -5, 0, 0])])
def test_pad_image_and_gradient(order, mode, kw):
    x = f32(2, 3, 5, 6) if order == "NCHW" else f32(2, 5, 6, 3)
    shapes, _ = check("PadImage", [("x", x)], ["y"], order=order, mode=mode, **kw)
    check("PadImageGradient", [("dy", f32(*shapes["y"]))], ["dx"], order=order, mode=mode, **kw)


def test_empty():
    check("PadImage", [("x", f32(0, 3, 4, 4))], ["y"], pad=1, mode="edge")
    check("PadImage", [("x", f32(2, 3, 0, 4))], ["y"], pad=1)
    check("PadImageGradient", [("dy", f32(2, 3, 2, 4))], ["dx"], pad=1)


def test_refused():
    x = f32(2, 3, 5, 6)
    refused("PadImage", [("x", np.zeros((2, 3, 5, 6), np.int32))], ["y"], pad=1)
    refused("PadImage", [("x", f32(2, 3, 5))], ["y"], pad=1)
    refused("PadImage", [("x", x)], ["y"], pad=1, mode="wrap")
    refused("PadImage", [("x", x)], ["y"], pads=[1, 1, 1])
    refused("PadImage", [("x", x)], ["y"], pad=1, stride=2)
    refused("PadImage", [("x", x)], ["y"], legacy_pad=1)
    refused("PadImage", [("x", x)], ["y"], pads=[5, 0, 0, 0], mode="reflect")
    refused("PadImage", [("x", x)], ["y"], pads=[-3, 0, -2, 0])
    refused("PadImage", [("x", f32(2, 3, 0, 4))], ["y"], pad=1, mode="edge")
    refused("PadImageGradient", [("dy", x)], ["dx"], pads=[3, 0, 3, 0])
    refused("PadImageGradient", [("dy", x)], ["dx"], pads=[2, 0, 2, 0], mode="reflect")


@pytest.mark.parametrize("kw", [dict(), dict(block_size=3, pad=1),
                                dict(block_size=2, pad_t=1, pad_b=1, pad_l=0, pad_r=2),
                                dict(block_size=1, pad=2), dict(block_size=4, pad_t=3)])
def test_space_to_batch_and_back(kw):
    b = kw.get("block_size", 2)
    p = kw.get("pad", 0)
    t, bo, l, r = (kw.get(n, p) for n in ("pad_t", "pad_b", "pad_l", "pad_r"))
    h, w = 4 * b - t - bo, 5 * b - l - r
    shapes, _ = check("SpaceToBatch", [("x", f32(2, 3, h, w))], ["y"], **kw)
    assert shapes["y"] == [2 * b * b, 3, 4, 5]
    shapes, _ = check("BatchToSpace", [("y", f32(2 * b * b, 3, 4, 5))], ["x"], **kw)
    assert shapes["x"] == [2, 3, h, w]


def test_space_batch_empty():
    check("SpaceToBatch", [("x", f32(0, 3, 4, 4))], ["y"])
    check("SpaceToBatch", [("x", f32(2, 3, 0, 0))], ["y"], block_size=5)
    check("BatchToSpace", [("x", f32(0, 3, 2, 2))], ["y"], pad=2)
    check("BatchToSpace", [("x", f32(4, 0, 2, 2))], ["y"], pad_t=1, pad_b=3)


def test_space_batch_refused():
    x = f32(2, 3, 4, 6)
    refused("SpaceToBatch", [("x", np.zeros((2, 3, 4, 6), np.int32))], ["y"])
    refused("SpaceToBatch", [("x", f32(2, 3, 4))], ["y"])
    refused("SpaceToBatch", [("x", x)], ["y"], block_size=3)           # 4 is not a multiple of 3
    refused("SpaceToBatch", [("x", x)], ["y"], pad_t=1)                # 5 rows
    refused("SpaceToBatch", [("x", x)], ["y"], block_size=0)
    refused("SpaceToBatch", [("x", x)], ["y"], pad=-1)
    refused("SpaceToBatch", [("x", x)], ["y"], order="NHWC")
    refused("BatchToSpace", [("x", f32(6, 3, 2, 2))], ["y"])           # 6 is not a multiple of 4
    refused("BatchToSpace", [("x", f32(4, 3, 2, 2))], ["y"], pad_t=3, pad_b=2)   # 4 rows less 5
    refused("BatchToSpace", [("x", f32(4, 3, 2, 2))], ["y"], pad_r=-1)
