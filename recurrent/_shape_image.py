"""Shape functions of ChannelShuffle, ResizeNearest and their gradient ops (csrc/ops/image.c).

- ChannelShuffle / ChannelShuffleGradient: X float32 with >= 2 dims whose channel count (dim 1, or the
  last dim with order NHWC) is a multiple of ``group``; the output has X's shape.
- ResizeNearest: X float32 4-D; Y (N, C, floor(H * height_scale), floor(W * width_scale)) (NHWC: N, OH,
  OW, C), each product in float32 as the C op computes it (one above int32 is refused). With the scales
  input the sizes are its values: not inferred (its dtype and shape are still checked).
- ResizeNearestGradient: dX has X's (input 1) shape; without the scales input dY must have the shape
  ResizeNearest gives for X (the C op refuses it otherwise), with it only the ranks are checked.

Arguments the op refuses when it is created (group < 1, an order other than NCHW / NHWC, a scale that is
not finite and > 0, an argument of the wrong kind) leave the outputs unknown. All outputs are FLOAT.
"""

import math

import numpy as np

from ._shape_tensor import _fn, _Unknown
from .shape_inference import FLOAT, UNDEFINED, ShapeError, Tensor, arg

_INT32_LIMIT = 2.0 ** 31


def _order(op):
    a = arg(op, "order")
    if a is None:
        return False
    v = a.s if a.kind() == "s" else None
    if isinstance(v, bytes):
        v = v.decode()
    if v not in ("NCHW", "NHWC"):
        raise _Unknown()
    return v == "NHWC"


def _scale(op, name):
    """rc_arg_f as float32; refused (unknown) unless finite and > 0."""
    a = arg(op, name)
    if a is None:
        return np.float32(1.0)
    if a.kind() == "f":
        v = np.float32(a.f)
    elif a.kind() == "i":
        v = np.float32(a.i)
    else:
        raise _Unknown()
    if not (v > 0 and math.isfinite(v)):
        raise _Unknown()
    return v


def _f32(op, ins, i, what):
    if ins[i].dtype not in (FLOAT, UNDEFINED):
        raise ShapeError("%s: input %d '%s' (%s) must be float32" % (op.type, i, op.input[i], what))


def _four(op, ins, i, what):
    _f32(op, ins, i, what)
    if len(ins[i].shape) != 4:
        raise ShapeError("%s: input %d '%s' (%s) %s must have 4 dims" % (op.type, i, op.input[i], what,
                                                                         list(ins[i].shape)))


@_fn("ChannelShuffle", "ChannelShuffleGradient")
def _channel_shuffle(op, ins):
    a = arg(op, "group")
    if a is not None and a.kind() != "i":
        raise _Unknown()
    group = 1 if a is None else a.i
    nhwc = _order(op)
    if group < 1:
        raise _Unknown()
    _f32(op, ins, 0, "X")
    shape = ins[0].shape
    if len(shape) < 2:
        raise ShapeError("%s: input 0 '%s' %s must have at least 2 dims" % (op.type, op.input[0], list(shape)))
    c = shape[-1] if nhwc else shape[1]
    if c % group:
        raise ShapeError("%s: %d channels are not a multiple of group=%d" % (op.type, c, group))
    return [Tensor(shape, FLOAT)]


def _geometry(nhwc, shape):
    n, c, h, w = (shape[0], shape[3], shape[1], shape[2]) if nhwc else shape
    return n, c, h, w


def _out_sizes(op, h, w, hs, ws):
    out = []
    for n, s in ((h, hs), (w, ws)):
        f = np.float32(np.float32(n) * s)
        if not f < _INT32_LIMIT:
            raise ShapeError("%s: the output size %d x %g overflows int32" % (op.type, n, float(s)))
        out.append(int(f))
    return out


def _image(nhwc, n, c, h, w):
    return (n, h, w, c) if nhwc else (n, c, h, w)


def _scales_input(op, ins, i):
    _f32(op, ins, i, "scales")
    if ins[i].shape != (2,):
        raise ShapeError("%s: input %d '%s' (scales) must be 1-D with 2 elements, got %s" % (
            op.type, i, op.input[i], list(ins[i].shape)))


@_fn("ResizeNearest")
def _resize_nearest(op, ins):
    hs, ws = _scale(op, "height_scale"), _scale(op, "width_scale")
    nhwc = _order(op)
    _four(op, ins, 0, "X")
    if len(ins) > 1:
        _scales_input(op, ins, 1)
        return [None]  # the sizes are the scales' values
    n, c, h, w = _geometry(nhwc, ins[0].shape)
    oh, ow = _out_sizes(op, h, w, hs, ws)
    return [Tensor(_image(nhwc, n, c, oh, ow), FLOAT)]


@_fn("ResizeNearestGradient")
def _resize_nearest_grad(op, ins):
    hs, ws = _scale(op, "height_scale"), _scale(op, "width_scale")
    nhwc = _order(op)
    _four(op, ins, 0, "dY")
    _four(op, ins, 1, "X")
    if len(ins) > 2:
        _scales_input(op, ins, 2)
    else:
        n, c, h, w = _geometry(nhwc, ins[1].shape)
        oh, ow = _out_sizes(op, h, w, hs, ws)
        if ins[0].shape != _image(nhwc, n, c, oh, ow):
            raise ShapeError("%s: dY %s is not ResizeNearest's output for X %s" % (
                op.type, list(ins[0].shape), list(ins[1].shape)))
    return [Tensor(ins[1].shape, FLOAT)]
