"""Gradient makers of the normalization operators (csrc/ops/layer_norm.c, csrc/ops/norm.c, csrc/ops/lrn.c).

As Caffe2's GetLayerNormGradient: ``LayerNormGradient(dY, Y, mean, stdev, X)
-> dX`` (with ``elementwise_affine=1`` also gamma as input 5 and ``dgamma``,
``dbeta`` as outputs), the forward op's arguments copied onto it. Gradients
are named ``<input>_grad``.

Only output 0 (Y) carries a gradient. The statistics outputs (mean, stdev) are
by-products, as the softmax output of SoftmaxWithLoss: a gradient arriving on
them is ignored, as in Caffe2 (the gradient checker, like Caffe2's, names a
gradient for every output). A loss that depends on mean or stdev needs them
recomputed with ops that have gradients.
"""

from .core import CreateOperator, GradientRegistry


def _gi(op, i):
    return str(op.input[i]) + "_grad"


def _affine(op):
    for a in op.arg:
        if a.name == "elementwise_affine":
            return bool(a.value())
    return False


@GradientRegistry.RegisterGradient("LayerNorm", copy_arguments=True)
def _layer_norm_grad(op, g_output):
    n_in = len(op.input)
    if g_output[0] is None:
        return [], [None] * n_in
    x, y = str(op.input[0]), str(op.output[0])
    if x == y:
        raise ValueError("LayerNorm gradient: the forward op computes '%s' in place, so its input X is "
                         "lost; the gradient needs it" % y)
    inputs = [g_output[0], op.output[0], op.output[1], op.output[2], op.input[0]]
    outputs = [_gi(op, 0)]
    if _affine(op) and n_in == 3:
        inputs.append(op.input[1])
        outputs += [_gi(op, 1), _gi(op, 2)]
    if len(set(op.input)) != n_in:
        # the same blob as X and gamma (or beta): one gradient name per use, summed by the backward pass
        outputs = [o if str(op.input[i]) not in map(str, op.input[:i]) else "%s_autogen_ln_%d" % (o, i)
                   for i, o in enumerate(outputs)]
    g = CreateOperator("LayerNormGradient", [str(b) for b in inputs], outputs)
    return [g], outputs + [None] * (n_in - len(outputs))


def _arg(op, name, default):
    for a in op.arg:
        if a.name == name:
            return a.value()
    return default


def _x_kept(op, what):
    x, y = str(op.input[0]), str(op.output[0])
    if x == y:
        raise ValueError("%s gradient: the forward op computes '%s' in place, so its input X is lost; the "
                         "gradient needs it" % (what, y))


def _param_grads(op, grad_type, inputs, n_in):
    """(X, gamma, beta) -> dX, dgamma, dbeta named <input>_grad, one name per use of a repeated blob."""
    outputs = [_gi(op, i) for i in range(3)]
    if len(set(map(str, op.input[:3]))) != 3:
        outputs = [o if str(op.input[i]) not in map(str, op.input[:i]) else "%s_autogen_norm_%d" % (o, i)
                   for i, o in enumerate(outputs)]
    g = CreateOperator(grad_type, [str(b) for b in inputs], outputs)
    return [g], outputs + [None] * (n_in - 3)


@GradientRegistry.RegisterGradient("GroupNorm", copy_arguments=True)
def _group_norm_grad(op, g_output):
    """As Caffe2's: GroupNormGradient(dY, X, gamma, beta, mean, inv_std) -> (dX, dgamma, dbeta)."""
    if g_output[0] is None:
        return [], [None] * len(op.input)
    _x_kept(op, "GroupNorm")
    inputs = [g_output[0], op.input[0], op.input[1], op.input[2], op.output[1], op.output[2]]
    return _param_grads(op, "GroupNormGradient", inputs, len(op.input))


@GradientRegistry.RegisterGradient("InstanceNorm", copy_arguments=True)
def _instance_norm_grad(op, g_output):
    """As Caffe2's: InstanceNormGradient(X, scale, bias, dY[, mean[, inv_stdev]]) -> (dX, dscale, dbias),
    with the statistics outputs the forward op has."""
    if g_output[0] is None:
        return [], [None] * len(op.input)
    _x_kept(op, "InstanceNorm")
    inputs = [op.input[0], op.input[1], op.input[2], g_output[0]] + list(op.output[1:3])
    return _param_grads(op, "InstanceNormGradient", inputs, len(op.input))


@GradientRegistry.RegisterGradient("SpatialBN", copy_arguments=True)
def _spatial_bn_grad(op, g_output):
    """As Caffe2's: SpatialBNGradient(X, scale, dY, saved_mean, saved_inv_std) -> (dX, dscale, dbias); with
    is_test=1 the running mean and var (inputs 3, 4) instead, taken as constants. The running statistics
    get no gradient."""
    if g_output[0] is None:
        return [], [None] * len(op.input)
    _x_kept(op, "SpatialBN")
    stats = [op.input[3], op.input[4]] if _arg(op, "is_test", 0) else [op.output[3], op.output[4]]
    inputs = [op.input[0], op.input[1], g_output[0]] + stats
    return _param_grads(op, "SpatialBNGradient", inputs, len(op.input))


@GradientRegistry.RegisterGradient("LRN", copy_arguments=True)
def _lrn_grad(op, g_output):
    """As Caffe2's GetLRNGradient: LRNGradient(X, Y, dY) -> dX (the scale output gets none)."""
    if g_output[0] is None:
        return [], [None]
    _x_kept(op, "LRN")
    g = CreateOperator("LRNGradient", [str(op.input[0]), str(op.output[0]), str(g_output[0])], [_gi(op, 0)])
    return [g], [_gi(op, 0)]
