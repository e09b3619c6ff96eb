"""Gradient makers of the mask and padding ops (csrc/ops/mask.c), as Caffe2's
(boolean_mask_ops.cc, distance_op.cc).

- ``BooleanMask(data, mask) -> (masked_data[, masked_indices])``:
  ``BooleanMaskGradient([mask, masked_data_grad]) -> data_grad`` (zeros where the mask is 0).
  The mask and masked_indices get no gradient.
- ``DotProductWithPadding(X, Y) -> Z``: ``DotProductWithPaddingGradient([X, Y, Z_grad])
  -> (X_grad, Y_grad)`` with the forward op's ``pad_value`` and ``replicate``.
- ``BooleanMaskLengths``, ``LengthsToWeights``, ``BooleanUnmask`` and the two gradient ops have no
  gradient (Caffe2: NO_GRADIENT or none needed). ``PadEmptySamples`` and
  ``SparseLengthsPositionalWeightedSum`` have no gradient maker, as in Caffe2: a gradient that must
  flow through them is an error naming the op.
"""

from . import core
from .core import GradientRegistry


def _args(op, *names):
    return {a.name: a.value() for a in op.arg if a.name in names}


@GradientRegistry.RegisterGradient("BooleanMask")
def _boolean_mask_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    g_data = str(op.input[0]) + "_grad"
    grad_op = core.CreateOperator("BooleanMaskGradient", [op.input[1], g_output[0]], [g_data])
    return [grad_op], [g_data, None]


@GradientRegistry.RegisterGradient("DotProductWithPadding")
def _dot_product_with_padding_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx, gy = str(op.input[0]) + "_grad", str(op.input[1]) + "_grad"
    grad_op = core.CreateOperator("DotProductWithPaddingGradient", [op.input[0], op.input[1], g_output[0]],
                                  [gx, gy], **_args(op, "pad_value", "replicate"))
    return [grad_op], [gx, gy]


GradientRegistry.RegisterNoGradient("BooleanMaskLengths", "LengthsToWeights", "BooleanMaskGradient",
                                    "DotProductWithPaddingGradient")
# Caffe2's NO_GRADIENT (boolean_unmask_ops.cc)
GradientRegistry.RegisterNoGradient("BooleanUnmask")
