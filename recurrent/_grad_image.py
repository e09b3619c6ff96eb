"""Gradient makers of ChannelShuffle and ResizeNearest (csrc/ops/image.c), as Caffe2's
(channel_shuffle_op.cc, resize_op.cc), the forward op's arguments (group, order; width_scale,
height_scale, order) copied onto the gradient op as Caffe2's makers copy them:

- ``ChannelShuffle(X) -> Y``: ``ChannelShuffleGradient([Y_grad]) -> X_grad``.
- ``ResizeNearest(X[, scales]) -> Y``: ``ResizeNearestGradient([Y_grad, X(, scales)]) -> X_grad``;
  the scales input gets no gradient.

The gradient ops have none (Caffe2 registered none). Gradients are named ``<input>_grad``.
"""

from .core import CreateOperator, GradientRegistry


@GradientRegistry.RegisterGradient("ChannelShuffle", copy_arguments=True)
def _channel_shuffle_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    dx = str(op.input[0]) + "_grad"
    return [CreateOperator("ChannelShuffleGradient", [str(g_output[0])], [dx])], [dx]


@GradientRegistry.RegisterGradient("ResizeNearest", copy_arguments=True)
def _resize_nearest_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    dx = str(op.input[0]) + "_grad"
    ins = [str(g_output[0])] + [str(b) for b in op.input]
    return [CreateOperator("ResizeNearestGradient", ins, [dx])], [dx] + [None] * (len(op.input) - 1)
