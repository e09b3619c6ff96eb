"""Gradient makers of csrc/ops/activation.c, as Caffe2's (prelu_op.cc, square_root_divide_op.cc):

- ``PRelu``: ``PReluGradient([Y, Y_grad, X, W]) -> (X_grad, W_grad)`` with the forward op's order
  argument. X is read, so a PRelu that ran in place has no gradient (a ValueError).
- ``SquareRootDivide``: ``SquareRootDivide([Y_grad, scale]) -> data_grad``; scale gets none.
"""

from .core import CreateOperator, GradientRegistry


def _grad_name(blob):
    return str(blob) + "_grad"


@GradientRegistry.RegisterGradient("PRelu")
def _prelu_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    x, w = str(op.input[0]), str(op.input[1])
    if x == str(op.output[0]):
        raise ValueError("PRelu gradient: the forward op ran in place on '%s', so X is overwritten and its "
                         "gradient cannot be computed; give PRelu a separate output" % x)
    gx, gw = _grad_name(x), _grad_name(w)
    g = CreateOperator("PReluGradient", [str(op.output[0]), str(g_output[0]), x, w], [gx, gw])
    g.arg.extend(list(op.arg))
    return [g], [gx, gw]


@GradientRegistry.RegisterGradient("SquareRootDivide")
def _square_root_divide_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx = _grad_name(op.input[0])
    return [CreateOperator("SquareRootDivide", [str(g_output[0]), str(op.input[1])], [gx])], [gx, None]


GradientRegistry.RegisterNoGradient("PReluGradient")
