"""Gradient maker of ZeroGradient (csrc/ops/fill.c), as Caffe2's: the input's
gradient is a ConstantFill of zeros shaped like the input. (The fill ops
themselves have no gradient; SparseLengthsFill, whose outputs are int32, is registered here.)"""

from . import core
from .core import GradientRegistry


@GradientRegistry.RegisterGradient("ZeroGradient")
def _zero_gradient_grad(op, g_output):
    gx = str(op.input[0]) + "_grad"
    return [core.CreateOperator("ConstantFill", [str(op.input[0])], [gx], value=0.0)], [gx]


GradientRegistry.RegisterNoGradient("SparseLengthsFill")
