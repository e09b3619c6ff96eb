"""Gradient makers of the loss / training operators (csrc/ops/loss.c).

Each follows the Caffe2 gradient maker of the same op: the same inputs, the
forward op's arguments copied onto the gradient op (copy_arguments=True, as
Caffe2's C++ makers did), input gradients named ``<input>_grad``. Labels and
weights get no gradient.
"""

from . import core
from .core import GradientRegistry


def _grad_op(op_type, inputs, outputs):
    return core.CreateOperator(op_type, inputs, outputs)


def _gi(op, i):
    return str(op.input[i]) + "_grad"


@GradientRegistry.RegisterGradient("SquaredL2Distance", copy_arguments=True)
def _squared_l2_distance_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx, gy = _gi(op, 0), _gi(op, 1)
    return ([_grad_op("SquaredL2DistanceGradient", [op.input[0], op.input[1], g_output[0]], [gx, gy])],
            [gx, gy])


@GradientRegistry.RegisterGradient("AveragedLoss", copy_arguments=True)
def _averaged_loss_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op("AveragedLossGradient", [op.input[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("SumElements", copy_arguments=True)
def _sum_elements_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op("SumElementsGradient", [op.input[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("SumSqrElements", copy_arguments=True)
def _sum_sqr_elements_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op("SumSqrElementsGradient", [op.input[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("Softmax", copy_arguments=True)
def _softmax_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [_grad_op("SoftmaxGradient", [op.output[0], g_output[0]], [gx])], [gx]


def _softmax_loss_maker(grad_type):
    """d loss / d logits, from the forward's softmax output: grad_type(X, T[, W], P, d_loss) -> dX.
    As in Caffe2, the softmax output is a by-product: a gradient arriving on it (output 0) is
    ignored -- backpropagate through probabilities with a separate Softmax op instead."""
    def maker(op, g_output):
        n_in = len(op.input)
        no_grad = [None] * n_in
        if len(g_output) < 2 or g_output[1] is None:
            return [], no_grad
        gx = _gi(op, 0)
        inputs = [op.input[0], op.input[1]] + ([op.input[2]] if n_in > 2 else [])
        inputs += [op.output[0], g_output[1]]
        return [_grad_op(grad_type, inputs, [gx])], [gx] + no_grad[1:]
    return maker


GradientRegistry.RegisterGradient("SoftmaxWithLoss", copy_arguments=True)(
    _softmax_loss_maker("SoftmaxWithLossGradient"))
GradientRegistry.RegisterGradient("SpatialSoftmaxWithLoss", copy_arguments=True)(
    _softmax_loss_maker("SpatialSoftmaxWithLossGradient"))


@GradientRegistry.RegisterGradient("LabelCrossEntropy", copy_arguments=True)
def _label_cross_entropy_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx = _gi(op, 0)
    return ([_grad_op("LabelCrossEntropyGradient", [op.input[0], op.input[1], g_output[0]], [gx])],
            [gx, None])


# csrc/ops/metric.c: evaluation metrics (Caffe2: SHOULD_NOT_DO_GRADIENT), as Accuracy: a gradient reaching
# their outputs is an error, their inputs get none.
GradientRegistry.RegisterShouldNotDoGradient("Perplexity", "MultiClassAccuracy")
# csrc/ops/member_hist.c: IsMemberOf and AccumulateHistogram (Caffe2: SHOULD_NOT_DO_GRADIENT), as Accuracy.
GradientRegistry.RegisterShouldNotDoGradient("IsMemberOf", "AccumulateHistogram")
