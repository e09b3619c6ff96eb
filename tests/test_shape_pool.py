"""Static shape inference of the pooling ops (recurrent/_shape_pool.py): for every op type of
csrc/ops/pool.c, the shapes inferred before a run against the run's, over orders, 1-3 spatial dims,
legacy_pad modes and global pooling; the inputs the ops refuse (a RuntimeWarning and no results,
and the run refuses them too)."""

import warnings

import numpy as np
import pytest

from recurrent import core, shape_inference as si, workspace
from recurrent._grad_pool import POOL_TYPES

F = si.FLOAT


def infer_and_run(type_, inputs, outputs, **kw):
    net = core.Net("si_pool")
    net.Proto().op.append(core.CreateOperator(type_, list(inputs), outputs, **kw))
    for k, v in inputs.items():
        workspace.FeedBlob(k, v)
    shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    for o in outputs:
        got = workspace.FetchBlob(o)
        assert tuple(shapes[o]) == got.shape and types[o] == F, (o, shapes[o], got.shape)
    return shapes


def x_of(shape):
    return np.random.RandomState(3).uniform(-1, 1, shape).astype(np.float32)


ARGS = [  # (X's spatial dims, arguments)
    ((7,), dict(kernels=[3], strides=[2], pads=[1, 2])),
    ((6, 5), dict(kernel=2, stride=2)),
    ((7, 8), dict(kernel_h=3, kernel_w=2, stride_h=2, stride_w=3, pad_t=1, pad_l=0, pad_b=2, pad_r=1)),
    ((4, 5, 6), dict(kernels=[2, 3, 2], strides=[1, 2, 3], pads=[1, 0, 1, 1, 2, 0])),
    ((7, 6), dict(kernels=[3, 2], strides=[2, 2], legacy_pad=2)),
    ((7, 6), dict(kernels=[3, 2], strides=[2, 3], legacy_pad=1)),
    ((7, 6), dict(kernels=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], legacy_pad=3)),
    ((5,), dict(kernels=[1], strides=[3], legacy_pad=3)),
    ((3, 4, 2), dict(global_pooling=1)),
]


# the nD names are the same ops: each with the argument sets of its dim count
COMBOS = [(t, sp, a) for t in POOL_TYPES for sp, a in ARGS if t[-1] != "D" or int(t[-2]) == len(sp)]


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("type_,spatial,args", COMBOS)
def test_pool_and_gradient_inferred(type_, order, spatial, args):
    shape = (2, 3) + spatial if order == "NCHW" else (2,) + spatial + (3,)
    s = infer_and_run(type_, {"x": x_of(shape)}, ["y"], order=order, **args)
    y = workspace.FetchBlob("y")
    s = infer_and_run(type_ + "Gradient", {"x": x_of(shape), "y": y, "dy": x_of(y.shape)}, ["dx"],
                      order=order, **args)
    assert tuple(s["dx"]) == shape


def refused(type_, inputs, outputs, **kw):
    net = core.Net("si_pool_bad")
    net.Proto().op.append(core.CreateOperator(type_, list(inputs), outputs, **kw))
    for k, v in inputs.items():
        workspace.FeedBlob(k, v)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shapes, _ = workspace.InferShapesAndTypes([net])
    assert any("InferShapesAndTypes" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert all(o not in shapes for o in outputs)
    with pytest.raises((ValueError, TypeError)):
        workspace.RunNetOnce(net)


def test_refused_inputs():
    x = x_of((2, 3, 5, 6))
    refused("MaxPool", {"x": x}, ["y"], kernel=3, pad=3)                  # pad not < kernel
    refused("AveragePool", {"x": x}, ["y"], kernel=7)                     # window larger than X
    refused("MaxPool", {"x": x}, ["y"], kernels=[2])                      # 1-D kernel, 2-D X
    refused("MaxPool", {"x": x.astype(np.int32)}, ["y"], kernel=2)        # dtype
    refused("MaxPool", {"x": x}, ["y"], kernel=2, dilation=2)             # dilation
    refused("MaxPoolGradient", {"x": x, "y": x_of((2, 3, 2, 2)), "dy": x_of((2, 3, 2, 3))}, ["dx"],
            kernel=2, stride=2)                                           # Y's shape
    refused("AveragePoolGradient", {"x": x, "y": x_of((2, 3, 2, 3)), "dy": x_of((2, 3, 3, 3))}, ["dx"],
            kernel=2, stride=2)                                           # dY's shape
    refused("LpPool", {"x": x}, ["y"], kernel=2, p=0.0)                   # p not > 0
    refused("LpPool", {"x": x}, ["y"], kernel=2, p=-1)
    refused("LpPool", {"x": x}, ["y"], kernel=2, p=float("nan"))
    refused("LpPool", {"x": x}, ["y"], kernel=2, p="two")                  # p's kind
    refused("LpPoolGradient", {"x": x, "y": x_of((2, 3, 2, 3)), "dy": x_of((2, 3, 2, 3))}, ["dx"],
            kernel=2, stride=2, p=-2.0)
