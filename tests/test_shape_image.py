"""Shape inference of ChannelShuffle, ResizeNearest and their gradients (recurrent/_shape_image.py):
inferred shapes against runs over orders, groups and scales; the scales input (not inferred);
refused inputs refused by both."""

import numpy as np
import pytest

from recurrent import shape_inference as si
from test_shape_tensor import check, f32, refused


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("group", [1, 2, 3, 6])
def test_channel_shuffle(order, group):
    x = f32(2, 6, 3, 2) if order == "NCHW" else f32(2, 3, 2, 6)
    check("ChannelShuffle", [("x", x)], ["y"], group=group, order=order)
    check("ChannelShuffleGradient", [("dy", x)], ["dx"], group=group, order=order)
    check("ChannelShuffle", [("x", f32(4, 6))], ["y"], group=group, order=order)
    check("ChannelShuffle", [("x", f32(0, 6, 2, 2, 2) if order == "NCHW" else f32(0, 2, 2, 2, 6))], ["y"],
          group=group, order=order)


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("hs,ws", [(1.0, 1.0), (2.0, 2.0), (1.5, 0.5), (0.3, 3.7), (0.1, 0.1)])
def test_resize_nearest_and_gradient(order, hs, ws):
    x = f32(2, 3, 5, 7) if order == "NCHW" else f32(2, 5, 7, 3)
    shapes, _ = check("ResizeNearest", [("x", x)], ["y"], order=order, height_scale=hs, width_scale=ws)
    check("ResizeNearestGradient", [("dy", f32(*shapes["y"])), ("x", x)], ["dx"], order=order,
          height_scale=hs, width_scale=ws)


def test_resize_nearest_scales_input_not_inferred():
    x = f32(2, 3, 4, 4)
    s = np.array([2.0, 0.5], np.float32)
    check("ResizeNearest", [("x", x), ("s", s)], ["y"], absent=["y"])
    check("ResizeNearestGradient", [("dy", f32(2, 3, 8, 2)), ("x", x), ("s", s)], ["dx"])


def test_refused():
    x = f32(2, 6, 3, 3)
    refused("ChannelShuffle", [("x", x)], ["y"], group=4)
    refused("ChannelShuffle", [("x", x)], ["y"], group=4, order="NHWC")
    refused("ChannelShuffle", [("x", f32(6))], ["y"])
    refused("ChannelShuffle", [("x", np.zeros((2, 6), np.int32))], ["y"])
    refused("ChannelShuffleGradient", [("x", x)], ["y"], group=5)
    refused("ResizeNearest", [("x", f32(2, 3, 4))], ["y"])
    refused("ResizeNearest", [("x", x), ("s", f32(3))], ["y"])
    refused("ResizeNearest", [("x", x)], ["y"], width_scale=1e9)
    refused("ResizeNearestGradient", [("dy", f32(2, 6, 6, 7)), ("x", x)], ["dx"], height_scale=2.0,
            width_scale=2.0)
    refused("ResizeNearestGradient", [("dy", f32(2, 6, 6)), ("x", x)], ["dx"])


def test_every_type_is_covered():
    si.registered()
    mine = {t for t, f in si._REGISTRY.items() if f.__module__ == "recurrent._shape_image"}
    assert mine == {"ChannelShuffle", "ChannelShuffleGradient", "ResizeNearest", "ResizeNearestGradient"}
