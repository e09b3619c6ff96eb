"""Gradient maker of PadImage (csrc/ops/pad_image.c).

As Caffe2's GetPadImageGradient: ``PadImageGradient(dY) -> dX``, the forward op's arguments (pads,
mode, order, ...) copied onto it. The gradient is named ``<X>_grad``.
"""

from .core import CreateOperator, GradientRegistry


@GradientRegistry.RegisterGradient("PadImage", copy_arguments=True)
def _pad_image_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    dx = str(op.input[0]) + "_grad"
    return [CreateOperator("PadImageGradient", [str(g_output[0])], [dx])], [dx]
