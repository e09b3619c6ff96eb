"""Gradient makers of the ops in csrc/ops/loss2.c: CrossEntropy,
SigmoidCrossEntropyWithLogits, WeightedSigmoidCrossEntropyWithLogits,
MakeTwoClass, L1Distance, DotProduct, CosineSimilarity and Normalize.

Each follows the Caffe2 gradient maker of the same op: the same inputs in the
same order, the forward op's arguments copied onto the gradient op
(copy_arguments=True, as Caffe2's C++ makers did), input gradients named
``<input>_grad``. Labels, targets and weights get no gradient. NormalizeL1
has no gradient, as in Caffe2.
"""

from . import core
from .core import GradientRegistry


def _gi(op, i):
    return str(op.input[i]) + "_grad"


def _single(op, g_output, grad_type, inputs, n_grads):
    """One gradient op ``grad_type(inputs) -> gradients of the first n_grads inputs``."""
    no_grad = [None] * len(op.input)
    if g_output[0] is None:
        return [], no_grad
    grads = [_gi(op, i) for i in range(n_grads)]
    return [core.CreateOperator(grad_type, inputs, grads)], grads + no_grad[n_grads:]


@GradientRegistry.RegisterGradient("CrossEntropy", copy_arguments=True)
def _cross_entropy_grad(op, g_output):
    return _single(op, g_output, "CrossEntropyGradient", [op.input[0], op.input[1], g_output[0]], 1)


@GradientRegistry.RegisterGradient("SigmoidCrossEntropyWithLogits", copy_arguments=True)
def _sigmoid_xent_grad(op, g_output):
    return _single(op, g_output, "SigmoidCrossEntropyWithLogitsGradient",
                   [g_output[0], op.input[0], op.input[1]], 1)


@GradientRegistry.RegisterGradient("WeightedSigmoidCrossEntropyWithLogits", copy_arguments=True)
def _weighted_sigmoid_xent_grad(op, g_output):
    return _single(op, g_output, "WeightedSigmoidCrossEntropyWithLogitsGradient",
                   [g_output[0], op.input[0], op.input[1], op.input[2]], 1)


@GradientRegistry.RegisterGradient("MakeTwoClass", copy_arguments=True)
def _make_two_class_grad(op, g_output):
    return _single(op, g_output, "MakeTwoClassGradient", [g_output[0]], 1)


def _pair_maker(grad_type):
    def maker(op, g_output):
        return _single(op, g_output, grad_type, [op.input[0], op.input[1], g_output[0]], 2)
    return maker


for _t in ("L1Distance", "DotProduct", "CosineSimilarity"):
    GradientRegistry.RegisterGradient(_t, copy_arguments=True)(_pair_maker(_t + "Gradient"))


@GradientRegistry.RegisterGradient("Normalize", copy_arguments=True)
def _normalize_grad(op, g_output):
    return _single(op, g_output, "NormalizeGradient", [op.input[0], g_output[0]], 1)


GradientRegistry.RegisterNoGradient("NormalizeL1")
