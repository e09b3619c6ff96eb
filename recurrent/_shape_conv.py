"""Shape functions of the convolution ops (csrc/ops/conv.c): ``Conv`` / ``Conv1D`` / ``Conv2D`` /
``Conv3D`` and their gradients, over the geometry shared with pooling (recurrent/_convpool.py).
Each mirrors the C shape checks (``cv_shapes`` / ``cv_grad_shapes``): float32 X, filter and bias;
``group`` >= 1 dividing C; the filter (M, C / group, kernel...) in NCHW or (M, kernel..., C /
group) in NHWC with M a multiple of group; the bias (M,); dY the forward output's shape. The
gradient's outputs are (dfilter, dbias[, dX]), or with ``no_bias`` (dfilter[, dX]); a count the op
refuses at creation leaves them unknown."""

from . import _convpool
from .shape_inference import FLOAT, ShapeError, Tensor, args, register

_TYPES = ("Conv", "Conv1D", "Conv2D", "Conv3D")
_INT_MAX = 2 ** 31 - 1


def _f32(op, ins, i, what):
    if ins[i].dtype != FLOAT:
        raise ShapeError("%s: input %d '%s' (%s) must be float32" % (op.type, i, op.input[i], what))


def _int_arg(a, name, default):
    v = a.get(name, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _conv(op, ins, bias_i):
    """(geometry, M) after the checks of the C op; None where its arguments make creation fail."""
    group = _int_arg(args(op), "group", 1)
    if group is None or group < 1:
        return None
    _f32(op, ins, 0, "X")
    g = _convpool.geometry(op, ins[0].shape, _convpool.CONV)
    if g.C % group:
        raise ShapeError("%s: group=%d must divide the %d channels of X %s" % (op.type, group, g.C,
                                                                             list(ins[0].shape)))
    _f32(op, ins, 1, "filter")
    w = ins[1].shape
    cg = g.C // group
    want = (cg,) + g.kernel if not g.nhwc else g.kernel + (cg,)
    if len(w) != g.nd + 2 or tuple(w[1:]) != want or w[0] % group:
        raise ShapeError("%s: the filter %s must be (M, %s) with M a multiple of group=%d" % (
            op.type, list(w), ", ".join(map(str, want)), group))
    M = w[0]
    if bias_i is not None and bias_i < len(ins):
        _f32(op, ins, bias_i, "bias")
        if tuple(ins[bias_i].shape) != (M,):
            raise ShapeError("%s: the bias %s must be (%d,)" % (op.type, list(ins[bias_i].shape), M))
    kg = cg
    for k in g.kernel:
        kg *= k
    size = 1
    for o in g.out:
        size *= o
    if max(size, kg, M) > _INT_MAX:
        raise ShapeError("%s: a product dimension is beyond the BLAS's int range" % op.type)
    return g, M


@register(*_TYPES)
def _conv_fwd(op, ins):
    r = _conv(op, ins, 2)
    if r is None:
        return [None]
    g, M = r
    return [Tensor(_convpool.out_shape(g, M), FLOAT)]


@register(*(t + "Gradient" for t in _TYPES))
def _conv_grad(op, ins):
    a = args(op)
    no_bias = _int_arg(a, "no_bias", 0)
    n_out = len(op.output)
    if no_bias is None or (n_out > 2 if no_bias else n_out < 2):
        return [None] * n_out
    r = _conv(op, ins, None)
    if r is None:
        return [None] * n_out
    g, M = r
    _f32(op, ins, 2, "dY")
    y = _convpool.out_shape(g, M)
    if tuple(ins[2].shape) != y:
        raise ShapeError("%s: dY %s must have the forward output's shape %s" % (op.type, list(ins[2].shape),
                                                                             list(y)))
    outs = [Tensor(tuple(ins[1].shape), FLOAT)]
    if not no_bias:
        outs.append(Tensor((M,), FLOAT))
    if len(outs) < n_out:
        outs.append(Tensor(tuple(ins[0].shape), FLOAT))
    return outs
