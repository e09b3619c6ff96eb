"""Gradient makers of the convolution operators (csrc/ops/conv.c).

As Caffe2's GetConvGradient, for ``Conv`` and its aliases ``Conv1D``, ``Conv2D``,
``Conv3D``: ``<type>Gradient(X, filter, dY) -> (dfilter, dbias, dX)`` when the
forward op has a bias, else ``-> (dfilter, dX)`` with the argument
``no_bias=1``; with the forward argument ``no_gradient_to_input`` true, dX is
left out (X gets no gradient). ``ConvTranspose`` gets ``ConvTransposeGradient`` the same
way (as Caffe2's GetConvTransposeGradient). The forward op's arguments are copied onto the
gradient op. Gradients are named ``<input>_grad``; a blob used twice (X as
its own filter) gets one name per use, summed by the backward pass.

``Im2Col`` and ``Col2Im`` (also csrc/ops/conv.c) are each other's adjoint, as Caffe2's
GetIm2ColGradient / GetCol2ImGradient: Im2Col's gradient is ``Col2Im(dY, X) -> dX`` (X gives the
image shape), Col2Im's ``Im2Col(dY) -> dX`` for its columns; its shape input Z gets none. The
forward op's arguments are copied onto them.
"""

from .core import CreateOperator, GradientRegistry
from .shape_inference import args


def _conv_grad(op, g_output):
    n_in = len(op.input)
    if g_output[0] is None:
        return [], [None] * n_in
    if n_in not in (2, 3):
        raise ValueError("%s gradient: the forward op has %d inputs; %s takes (X, filter[, bias])"
                         % (op.type, n_in, op.type))
    x = str(op.input[0])
    with_dx = not args(op).get("no_gradient_to_input", 0)
    grads = {0: x + "_grad", 1: str(op.input[1]) + "_grad"}
    if n_in == 3:
        grads[2] = str(op.input[2]) + "_grad"
    for i in sorted(grads):
        # one name per use of a repeated blob
        if str(op.input[i]) in map(str, op.input[:i]):
            grads[i] = "%s_autogen_conv_%d" % (grads[i], i)
    outputs = [grads[1]] + ([grads[2]] if n_in == 3 else []) + ([grads[0]] if with_dx else [])
    extra = {} if n_in == 3 else {"no_bias": 1}
    g = CreateOperator(op.type + "Gradient", [x, str(op.input[1]), str(g_output[0])], outputs, **extra)
    return [g], [grads[0] if with_dx else None] + [grads[i] for i in range(1, n_in)]


for _t in ("Conv", "Conv1D", "Conv2D", "Conv3D", "ConvTranspose"):
    GradientRegistry.RegisterGradient(_t, copy_arguments=True)(_conv_grad)


@GradientRegistry.RegisterGradient("Im2Col", copy_arguments=True)
def _im2col_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    dx = str(op.input[0]) + "_grad"
    return [CreateOperator("Col2Im", [str(g_output[0]), str(op.input[0])], [dx])], [dx]


@GradientRegistry.RegisterGradient("Col2Im", copy_arguments=True)
def _col2im_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    dx = str(op.input[0]) + "_grad"
    return [CreateOperator("Im2Col", [str(g_output[0])], [dx])], [dx, None]
