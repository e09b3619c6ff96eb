"""Gradient makers of the shape operators (csrc/ops/shape.c).

Each follows Caffe2's gradient maker of the same op (concat_split_op.cc (also for DepthConcat and
DepthSplit, Caffe2's legacy names: their gradients are Split and Concat too),
reshape_op.cc, prepend_dim_op.cc (PrependDim: MergeDim), flatten_op.cc, utility_ops.cc (FlattenToVec),
transpose_op.cc, order_switch_ops.cc (NCHW2NHWC and NHWC2NCHW: each the other), expand_squeeze_dims_op.cc,
slice_op.cc), except that Split and SplitByLengths fill missing output gradients with zeros instead of
dropping them (Caffe2 would then concatenate too few pieces). Shape inputs
(Split's sizes, Reshape's new shape, Slice's starts and ends) get no gradient.
The fill operators, Shape, Size, IsEmpty and HasElements have no gradient.

Slice: ``SliceGradient(data[, starts, ends], dY) -> dX`` with the forward op's
arguments (starts, ends) copied, as Caffe2's GetSliceGradient.
"""

from . import core
from .core import GradientRegistry


def _gi(op, i):
    return str(op.input[i]) + "_grad"


_AXIS_ARGS = ("axis", "order", "add_axis")


def _args(op, *names):
    """The forward op's arguments of the given names, as keyword arguments."""
    out = {}
    for a in op.arg:
        if a.name in names:
            out[a.name] = a.value()
    return out


@GradientRegistry.RegisterGradient("DepthConcat")
@GradientRegistry.RegisterGradient("Concat")
def _concat_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    if len(op.output) < 2:
        raise ValueError("gradient of %s op (inputs %s): the op must have its second output (split_info) "
                         "to be differentiated" % (op.type, list(op.input)))
    gis = [_gi(op, i) for i in range(len(op.input))]
    split = core.CreateOperator("Split", [g_output[0], op.output[1]], gis, **_args(op, *_AXIS_ARGS))
    return [split], gis


@GradientRegistry.RegisterGradient("SplitByLengths")
@GradientRegistry.RegisterGradient("DepthSplit")
@GradientRegistry.RegisterGradient("Split")
def _split_grad(op, g_output):
    if all(g is None for g in g_output):
        return [], [None] * len(op.input)
    ops, pieces = [], []
    for k, g in enumerate(g_output):
        if g is None:
            # a missing output gradient is zero, shaped like that output
            g = "_%s_zero_grad" % op.output[k]
            ops.append(core.CreateOperator("ConstantFill", [op.output[k]], [g], value=0.0))
        pieces.append(g)
    gx = _gi(op, 0)
    ops.append(core.CreateOperator("Concat", pieces, [gx, "_%s_dims" % gx], **_args(op, *_AXIS_ARGS)))
    return ops, [gx] + [None] * (len(op.input) - 1)


@GradientRegistry.RegisterGradient("Reshape")
def _reshape_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = _gi(op, 0)
    g = core.CreateOperator("Reshape", [g_output[0], op.output[1]], [gx, "_%s_dims" % gx])
    return [g], [gx] + [None] * (len(op.input) - 1)


@GradientRegistry.RegisterGradient("Flatten")
def _flatten_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [core.CreateOperator("ResizeLike", [g_output[0], op.input[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("FlattenToVec")
def _flatten_to_vec_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [core.CreateOperator("ResizeLike", [g_output[0], op.input[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("ResizeLike")
def _resize_like_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx = _gi(op, 0)
    return [core.CreateOperator("ResizeLike", [g_output[0], op.input[0]], [gx])], [gx, None]


@GradientRegistry.RegisterGradient("PrependDim")
def _prepend_dim_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [core.CreateOperator("MergeDim", [g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("Transpose")
def _transpose_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    axes = _args(op, "axes").get("axes")
    if axes:
        inverse = [0] * len(axes)
        for k, a in enumerate(axes):
            inverse[a] = k
        g = core.CreateOperator("Transpose", [g_output[0]], [gx], axes=inverse)
    else:
        g = core.CreateOperator("Transpose", [g_output[0]], [gx])  # reversing is its own inverse
    return [g], [gx]


def _order_switch_maker(inverse):
    """NCHW2NHWC's gradient is NHWC2NCHW(dY) and the other way round, as Caffe2's."""
    def make(op, g_output):
        if g_output[0] is None:
            return [], [None]
        gx = _gi(op, 0)
        return [core.CreateOperator(inverse, [g_output[0]], [gx])], [gx]
    return make


GradientRegistry.RegisterGradient("NCHW2NHWC")(_order_switch_maker("NHWC2NCHW"))
GradientRegistry.RegisterGradient("NHWC2NCHW")(_order_switch_maker("NCHW2NHWC"))


@GradientRegistry.RegisterGradient("ExpandDims")
def _expand_dims_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [core.CreateOperator("Squeeze", [g_output[0]], [gx], **_args(op, "dims"))], [gx]


@GradientRegistry.RegisterGradient("Squeeze")
def _squeeze_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [core.CreateOperator("ExpandDims", [g_output[0]], [gx], **_args(op, "dims"))], [gx]


@GradientRegistry.RegisterGradient("Slice", copy_arguments=True)
def _slice_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = _gi(op, 0)
    # data (for its shape), starts and ends when they are inputs, then dY
    g = core.CreateOperator("SliceGradient", [str(b) for b in op.input] + [g_output[0]], [gx])
    return [g], [gx] + [None] * (len(op.input) - 1)


GradientRegistry.RegisterNoGradient("Shape", "Size")
# Caffe2's SHOULD_NOT_DO_GRADIENT (utility_ops.cc, is_empty_op.cc)
GradientRegistry.RegisterNoGradient("IsEmpty", "HasElements")
# no gradient in Caffe2: MergeDim (prepend_dim_op.cc), LengthsSplit (length_split_op.cc), LengthsToShape
GradientRegistry.RegisterNoGradient("MergeDim")
GradientRegistry.RegisterNoGradient("LengthsSplit")
GradientRegistry.RegisterNoGradient("LengthsToShape")
