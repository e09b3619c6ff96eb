"""Gradient makers of the loss / training operators (csrc/ops/loss.c).

Each follows the Caffe2 gradient maker of the same op (names of the inputs it
reads, arguments copied from the forward op). Labels and weights get no
gradient.
"""

import copy

from . import core
from .core import GradientRegistry


def _grad_op(op, op_type, inputs, outputs):
    """A gradient op carrying the forward op's arguments and device option,
    as Caffe2's GradientMakerBase does (CopyArguments / CopyDeviceOption)."""
    g = core.CreateOperator(op_type, inputs, outputs)
    g.arg.extend(copy.deepcopy(a) for a in op.arg)
    if op.device_option is not None:
        g.device_option = copy.deepcopy(op.device_option)
    return g


def _gi(op, i):
    return str(op.input[i]) + "_grad"


@GradientRegistry.RegisterGradient("SquaredL2Distance")
def _squared_l2_distance_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx, gy = _gi(op, 0), _gi(op, 1)
    return ([_grad_op(op, "SquaredL2DistanceGradient", [op.input[0], op.input[1], g_output[0]], [gx, gy])],
            [gx, gy])


@GradientRegistry.RegisterGradient("AveragedLoss")
def _averaged_loss_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op(op, "AveragedLossGradient", [op.input[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("SumElements")
def _sum_elements_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op(op, "SumElementsGradient", [op.input[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("Softmax")
def _softmax_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op(op, "SoftmaxGradient", [op.output[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("SoftmaxWithLoss")
def _softmax_with_loss_grad(op, g_output):
    """d loss / d logits; reads the forward's softmax output. A gradient on the
    softmax output itself (output 0) is not supported (Caffe2 silently
    dropped it): that raises ValueError naming the blob."""
    n_in = len(op.input)
    no_grad = [None] * n_in
    if len(g_output) > 0 and g_output[0] is not None:
        raise ValueError(
            "SoftmaxWithLoss: a gradient for its softmax output '%s' is not supported; take the gradient of "
            "the loss output '%s' only, or compute the probabilities with a separate Softmax op"
            % (op.output[0], op.output[1]))
    if len(g_output) < 2 or g_output[1] is None:
        return [], no_grad
    gx = _gi(op, 0)
    inputs = [op.input[0], op.input[1]] + ([op.input[2]] if n_in > 2 else []) + [op.output[0], g_output[1]]
    return [_grad_op(op, "SoftmaxWithLossGradient", inputs, [gx])], [gx] + no_grad[1:]


@GradientRegistry.RegisterGradient("LabelCrossEntropy")
def _label_cross_entropy_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx = _gi(op, 0)
    return ([_grad_op(op, "LabelCrossEntropyGradient", [op.input[0], op.input[1], g_output[0]], [gx])],
            [gx, None])
