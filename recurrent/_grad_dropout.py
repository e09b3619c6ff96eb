"""Gradient maker of Dropout (csrc/ops/dropout.c), as Caffe2's: DropoutGrad
reads the output gradient and, in training (is_test=0), the mask the forward
op wrote; with is_test=1 the gradient passes through. The forward op's
arguments are copied onto DropoutGrad (ratio, is_test)."""

from . import core
from .core import GradientRegistry


def _arg(op, name, default=None):
    for a in op.arg:
        if a.name == name:
            return a.value()
    return default


@GradientRegistry.RegisterGradient("Dropout", copy_arguments=True)
def _dropout_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = str(op.input[0]) + "_grad"
    if _arg(op, "is_test", 0):
        inputs = [g_output[0]]
    else:
        if len(op.output) < 2:
            raise ValueError("Dropout with is_test=0 needs its mask output for the gradient: op %r has "
                             "outputs %r" % (op.type, list(op.output)))
        inputs = [g_output[0], op.output[1]]
    return [core.CreateOperator("DropoutGrad", [str(b) for b in inputs], [gx])], [gx]
