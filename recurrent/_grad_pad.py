"""Gradient maker of PadImage (csrc/ops/pad_image.c).

As Caffe2's GetPadImageGradient: ``PadImageGradient(dY) -> dX``, the forward op's arguments (pads,
mode, order, ...) copied onto it. The gradient is named ``<X>_grad``.

SpaceToBatch and BatchToSpace (the same file) are each other's gradient, as Caffe2's
GetSpaceToBatchGradient / GetBatchToSpaceGradient: ``BatchToSpace(dY) -> dX`` and
``SpaceToBatch(dY) -> dX``, with the forward op's arguments (block_size, pads) copied.
"""

from .core import CreateOperator, GradientRegistry


@GradientRegistry.RegisterGradient("PadImage", copy_arguments=True)
def _pad_image_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    dx = str(op.input[0]) + "_grad"
    return [CreateOperator("PadImageGradient", [str(g_output[0])], [dx])], [dx]


def _space_batch_maker(inverse):
    def make(op, g_output):
        if g_output[0] is None:
            return [], [None]
        dx = str(op.input[0]) + "_grad"
        return [CreateOperator(inverse, [str(g_output[0])], [dx])], [dx]
    return make


GradientRegistry.RegisterGradient("SpaceToBatch", copy_arguments=True)(_space_batch_maker("BatchToSpace"))
GradientRegistry.RegisterGradient("BatchToSpace", copy_arguments=True)(_space_batch_maker("SpaceToBatch"))
