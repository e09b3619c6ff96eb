"""Gradient makers of the elementwise ops and reductions of csrc/ops/unary.c and csrc/ops/reduce.c,
as Caffe2's (clip_op.cc, abs_op.cc, sqrt_op.cc, leaky_relu_op.cc, elu_op.cc, softsign_op.cc,
minmax_ops.cc, mean_op.cc, relu_n_op.cc, negate_gradient_op.cc, reduce_ops.cc, reduction_front_back_ops.cc).

- ``Clip``, ``LeakyRelu``, ``Elu``, ``ReluN``: ``<Type>Gradient([Y, Y_grad]) -> X_grad`` with the
  forward op's arguments (min / max, alpha, n).
- ``NegateGradient``: ``Negative([Y_grad]) -> X_grad``, as Caffe2's.
- ``Abs``, ``Softsign``: ``<Type>Gradient([X, Y_grad]) -> X_grad``. They read X, so a forward op
  that ran in place (X overwritten by Y) has no gradient: a ValueError, as Caffe2's Softsign maker
  (Caffe2's Abs maker did not check and gave a wrong gradient).
- ``Sqrt``: ``Scale(Y_grad, scale=0.5) -> X_grad`` then ``Div([X_grad, Y]) -> X_grad``, Caffe2's
  two ops.
- ``Min``: ``MinGradient([Y, Y_grad, X0, ...]) -> (X0_grad, ...)``; ``Mean``:
  ``MeanGradient([Y_grad]) -> (X0_grad, ...)``.
- ``ReduceSum`` / ``Mean`` / ``Max`` / ``Min``: ``<Type>Gradient([Y_grad, X, Y]) -> X_grad``;
  ``ReduceFront*`` / ``ReduceBack*``: ``<Type>Gradient([Y_grad, X]) -> X_grad`` (with a LENGTHS
  input: ``[Y_grad, X, LENGTHS]``, which gets no gradient); ``ReduceFrontMax`` / ``ReduceBackMax``:
  ``<Type>Gradient([Y_grad, X, Y(, LENGTHS)]) -> X_grad``; the forward op's arguments copied.
- ``StopGradient``, ``ArgMax``, ``ArgMin``, ``Accuracy`` and every gradient op here: no gradient.
"""

import copy

from .core import CreateOperator, GradientRegistry


def _grad_name(blob):
    return str(blob) + "_grad"


def _op(fwd, type_, inputs, outputs, **kwargs):
    g = CreateOperator(type_, [str(b) for b in inputs], [str(b) for b in outputs], **kwargs)
    g.arg.extend(copy.deepcopy(list(fwd.arg)))
    return g


def _from_y(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _grad_name(op.input[0])
    return [_op(op, op.type + "Gradient", [op.output[0], g_output[0]], [gx])], [gx]


def _from_x(op, g_output):
    if g_output[0] is None:
        return [], [None]
    if str(op.input[0]) == str(op.output[0]):
        raise ValueError("%s gradient: the forward op ran in place on '%s', so X is overwritten and its "
                         "gradient cannot be computed; give %s a separate output"
                         % (op.type, op.input[0], op.type))
    gx = _grad_name(op.input[0])
    return [_op(op, op.type + "Gradient", [op.input[0], g_output[0]], [gx])], [gx]


for _t in ("Clip", "LeakyRelu", "Elu", "ReluN"):
    GradientRegistry.RegisterGradient(_t)(_from_y)
for _t in ("Abs", "Softsign"):
    GradientRegistry.RegisterGradient(_t)(_from_x)


@GradientRegistry.RegisterGradient("Sqrt")
def _sqrt_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _grad_name(op.input[0])
    return [CreateOperator("Scale", [str(g_output[0])], [gx], scale=0.5),
            CreateOperator("Div", [gx, str(op.output[0])], [gx])], [gx]


@GradientRegistry.RegisterGradient("NegateGradient")
def _negate_gradient_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _grad_name(op.input[0])
    return [CreateOperator("Negative", [str(g_output[0])], [gx])], [gx]


@GradientRegistry.RegisterGradient("Min")
def _min_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = [_grad_name(x) for x in op.input]
    return [_op(op, "MinGradient", [op.output[0], g_output[0]] + list(op.input), gx)], gx


@GradientRegistry.RegisterGradient("Mean")
def _mean_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = [_grad_name(x) for x in op.input]
    # the inputs give their shapes, for the sums over the dims where they were broadcast
    return [_op(op, "MeanGradient", [g_output[0]] + list(op.input), gx)], gx


def _reduce_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _grad_name(op.input[0])
    return [_op(op, op.type + "Gradient", [g_output[0], op.input[0], op.output[0]], [gx])], [gx]


def _reduce_fb_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = _grad_name(op.input[0])
    # with LENGTHS (input 1, int32): the gradient op takes it as its third input (as Caffe2's); no gradient
    ins = [g_output[0], op.input[0]] + list(op.input[1:2])
    return [_op(op, op.type + "Gradient", ins, [gx])], [gx] + [None] * (len(op.input) - 1)


for _t in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2"):
    GradientRegistry.RegisterGradient(_t)(_reduce_grad)
def _reduce_fb_max_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = _grad_name(op.input[0])
    # (dY, X, Y[, LENGTHS]) as Caffe2's reduce_front_back_max_ops; LENGTHS gets no gradient
    ins = [g_output[0], op.input[0], op.output[0]] + list(op.input[1:2])
    return [_op(op, op.type + "Gradient", ins, [gx])], [gx] + [None] * (len(op.input) - 1)


for _t in ("ReduceFrontSum", "ReduceFrontMean", "ReduceBackSum", "ReduceBackMean"):
    GradientRegistry.RegisterGradient(_t)(_reduce_fb_grad)
for _t in ("ReduceFrontMax", "ReduceBackMax"):
    GradientRegistry.RegisterGradient(_t)(_reduce_fb_max_grad)

# Caffe2: SHOULD_NOT_DO_GRADIENT (a gradient reaching their outputs is an error)
GradientRegistry.RegisterShouldNotDoGradient("ArgMax", "ArgMin", "Accuracy")
GradientRegistry.RegisterNoGradient(
    "StopGradient", "RowWiseArgMax",
    "EnsureClipped", "ClipTensorByScaling",  # Caffe2: SHOULD_NOT_DO_GRADIENT (updates of parameters / grads)
    "ClipGradient", "ReluNGradient", "AbsGradient", "LeakyReluGradient", "EluGradient", "SoftsignGradient", "MinGradient",
    "MeanGradient", "ReduceSumGradient", "ReduceMeanGradient", "ReduceMaxGradient", "ReduceMinGradient",
    "ReduceL1Gradient", "ReduceL2Gradient",
    "ReduceFrontSumGradient", "ReduceFrontMeanGradient", "ReduceBackSumGradient", "ReduceBackMeanGradient",
    "ReduceFrontMaxGradient", "ReduceBackMaxGradient")
