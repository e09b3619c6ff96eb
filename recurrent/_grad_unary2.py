"""Gradient makers of the elementwise ops of csrc/ops/unary2.c, as Caffe2's (sin_op.cc, cos_op.cc,
tan_op.cc, asin_op.cc, acos_op.cc, atan_op.cc, reciprocal_op.cc, rsqrt_op.cc, softplus_op.cc, selu_op.cc,
swish_op.cc, hard_sigmoid_op.cc, cube_op.cc, expand_op.cc, sinh_op.cc, cosh_op.cc, erf_op.cc,
thresholded_relu_op.cc, gelu_op.cc, logit_op.cc, cbrt_op.cc, log1p_op.cc), with Caffe2's input orders:

- ``Sin``, ``Cos``, ``Tan``, ``Asin``, ``Acos``, ``Atan``, ``Erf``, ``Logit``, ``Log1p``:
  ``<Type>Gradient([X, Y_grad]) -> X_grad``.
- ``Sinh``, ``Cosh``, ``Gelu``: ``<Type>Gradient([Y_grad, X]) -> X_grad`` (Gelu's with fast_gelu).
- ``Reciprocal``, ``Softplus``, ``Selu``, ``HardSigmoid``, ``ThresholdedRelu``: ``<Type>Gradient([Y,
  Y_grad]) -> X_grad`` with the forward op's arguments (alpha / scale, alpha / beta, alpha).
- ``RSqrt``: ``RSqrtGradient([Y_grad, Y]) -> X_grad``.
- ``Cube``: ``CubeGradient([Y_grad, X]) -> X_grad``.
- ``Swish``: ``SwishGradient([X, Y, Y_grad]) -> X_grad``.
- ``Expand``: ``ExpandGradient([Y_grad, X]) -> X_grad``; the shape input gets none.

The forward ops whose gradient reads X (Sin, Cos, Tan, Asin, Acos, Atan, Cube, Swish, Expand, Sinh, Cosh,
Erf, Gelu, Log1p) cannot
run in place (the schema refuses it); a forward op whose output is its input blob is refused here too, with a
ValueError naming the op (a net built by hand could not reach it, but the check costs nothing).
``Glu`` has none in Caffe2: asking for it is a ValueError, as for ``Where``.
``Sign``, ``Floor``, ``Ceil``, ``Round`` have no gradient (their derivative is 0 wherever it exists;
Caffe2: Sign none, Floor and Ceil "not implemented"); nor have ``IsNaN`` and ``ReplaceNaN`` (Caffe2's
SHOULD_NOT_DO_GRADIENT). ``Where`` has none in Caffe2 either; asking for the
gradient of its X or Y is a ValueError here instead of a silent zero.
"""

import copy

from .core import CreateOperator, GradientRegistry


def _grad_name(blob):
    return str(blob) + "_grad"


def _op(fwd, type_, inputs, outputs):
    g = CreateOperator(type_, [str(b) for b in inputs], [str(b) for b in outputs])
    g.arg.extend(copy.deepcopy(list(fwd.arg)))
    return g


def _needs_x(op):
    if str(op.input[0]) == str(op.output[0]):
        raise ValueError("%s gradient: the forward op ran in place on '%s', so X is overwritten and its "
                         "gradient cannot be computed; give %s a separate output"
                         % (op.type, op.input[0], op.type))


def _maker(order):
    """A maker for ``<Type>Gradient`` with inputs named by order: 'X' (the forward input), 'Y' (the
    forward output) and 'dY' (its gradient)."""
    def make(op, g_output):
        if g_output[0] is None:
            return [], [None] * len(op.input)
        if "X" in order:
            _needs_x(op)
        names = {"X": op.input[0], "Y": op.output[0], "dY": g_output[0]}
        gx = _grad_name(op.input[0])
        g_input = [gx] + [None] * (len(op.input) - 1)
        return [_op(op, op.type + "Gradient", [names[k] for k in order], [gx])], g_input
    return make


for _t in ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan"):
    GradientRegistry.RegisterGradient(_t)(_maker(("X", "dY")))
for _t in ("Reciprocal", "Softplus", "Selu", "HardSigmoid"):
    GradientRegistry.RegisterGradient(_t)(_maker(("Y", "dY")))
GradientRegistry.RegisterGradient("RSqrt")(_maker(("dY", "Y")))
GradientRegistry.RegisterGradient("Cube")(_maker(("dY", "X")))
for _t in ("Sinh", "Cosh", "Gelu"):
    GradientRegistry.RegisterGradient(_t)(_maker(("dY", "X")))
GradientRegistry.RegisterGradient("Erf")(_maker(("X", "dY")))
GradientRegistry.RegisterGradient("Logit")(_maker(("X", "dY")))
GradientRegistry.RegisterGradient("Log1p")(_maker(("X", "dY")))
GradientRegistry.RegisterGradient("Cbrt")(_maker(("dY", "Y")))
GradientRegistry.RegisterGradient("ThresholdedRelu")(_maker(("Y", "dY")))
GradientRegistry.RegisterGradient("Swish")(_maker(("X", "Y", "dY")))
GradientRegistry.RegisterGradient("Expand")(_maker(("dY", "X")))


def _refused(which, hint):
    """A maker for an op without a gradient op (Caffe2 neither): a ValueError when its output needs a
    gradient, naming the inputs (by position, which) that would get none, instead of a silent zero."""
    def make(op, g_output):
        if g_output[0] is None:
            return [], [None] * len(op.input)
        names = ["'%s'" % op.input[i] for i in which]
        what = ("inputs " if len(names) > 1 else "input ") + " and ".join(names)
        raise ValueError("%s has no gradient op (Caffe2 neither): output '%s' needs a gradient, but %s "
                         "would get none; %s" % (op.type, op.output[0], what, hint))
    return make


GradientRegistry.RegisterGradient("Where")(
    _refused((1, 2), "compute the selection with Mul by a float mask instead"))
GradientRegistry.RegisterGradient("Glu")(_refused((0,), "build it from Split, Sigmoid and Mul instead"))


GradientRegistry.RegisterShouldNotDoGradient("Sign")  # Caffe2: SHOULD_NOT_DO_GRADIENT
GradientRegistry.RegisterNoGradient(
    "Floor", "Ceil", "Round", "IsNaN", "ReplaceNaN", "LogitGradient", "CbrtGradient", "Log1pGradient",
    "SinGradient", "CosGradient", "TanGradient", "AsinGradient", "AcosGradient", "AtanGradient",
    "ReciprocalGradient", "RSqrtGradient", "SoftplusGradient", "SeluGradient",
    "SwishGradient", "HardSigmoidGradient", "CubeGradient", "ExpandGradient",
    "SinhGradient", "CoshGradient", "ErfGradient", "ThresholdedReluGradient", "GeluGradient")
