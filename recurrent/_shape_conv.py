"""Shape functions of the convolution ops (csrc/ops/conv.c): ``Conv`` / ``Conv1D`` / ``Conv2D`` /
``Conv3D`` and their gradients, over the geometry shared with pooling (recurrent/_convpool.py).
Each mirrors the C shape checks (``cv_shapes`` / ``cv_grad_shapes``): float32 X, filter and bias;
``group`` >= 1 dividing C; the filter (M, C / group, kernel...) in NCHW or (M, kernel..., C /
group) in NHWC with M a multiple of group; the bias (M,); dY the forward output's shape. The
gradient's outputs are (dfilter, dbias[, dX]), or with ``no_bias`` (dfilter[, dX]); a count the op
refuses at creation leaves them unknown. ``ConvTranspose`` and its gradient mirror ``ct_shapes`` /
``ct_grad_shapes``: the filter (C_in, C_out / group, kernel...) in NCHW or (C_in, kernel..., C_out /
group) in NHWC, Y's spatial sizes ``(x - 1) stride + dilation (kernel - 1) + 1 + adj - pads``.
``Im2Col`` (float32 X, a 2-D kernel) gives ``(N, C kh kw, oh, ow)`` / NHWC ``(N, oh, ow, kh kw C)``;
``Col2Im(X, Z)`` Z's shape (Z of any dtype), X having Im2Col's shape for Z."""

from . import _convpool
from .shape_inference import FLOAT, UNDEFINED, ShapeError, Tensor, args, register

_TYPES = ("Conv", "Conv1D", "Conv2D", "Conv3D")
_INT_MAX = 2 ** 31 - 1


def _f32(op, ins, i, what):
    if ins[i].dtype not in (FLOAT, UNDEFINED):  # UNDEFINED: shapes given without types
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


def _grad(op, ins, forward):
    """(dfilter, dbias[, dX]) / (dfilter[, dX]); forward(op, ins, None) gives (Y's shape, its channels)."""
    no_bias = _int_arg(args(op), "no_bias", 0)
    n_out = len(op.output)
    if no_bias is None or (n_out > 2 if no_bias else n_out < 2):
        return [None] * n_out
    r = forward(op, ins, None)
    if r is None:
        return [None] * n_out
    y, M = r
    _f32(op, ins, 2, "dY")
    if tuple(ins[2].shape) != y:
        raise ShapeError("%s: dY %s must have the forward output's shape %s" % (op.type, list(ins[2].shape),
                                                                             list(y)))
    outs = [Tensor(tuple(ins[1].shape), FLOAT)]
    if not no_bias:
        outs.append(Tensor((M,), FLOAT))
    if len(outs) < n_out:
        outs.append(Tensor(tuple(ins[0].shape), FLOAT))
    return outs


def _conv_y(op, ins, bias_i):
    r = _conv(op, ins, bias_i)
    return None if r is None else (_convpool.out_shape(r[0], r[1]), r[1])


@register(*(t + "Gradient" for t in _TYPES))
def _conv_grad(op, ins):
    return _grad(op, ins, _conv_y)


def _adjs(op, a, nd, stride):
    """ConvTranspose's adjs (default 0, each in [0, stride]); None where the op refuses them."""
    try:
        adj = _convpool._family(op, a, "adjs", "adj", 2, ("adj_h", "adj_w"))
    except ShapeError:
        return None
    adj = adj or [0] * nd
    if len(adj) != nd or any(v < 0 or v > s for v, s in zip(adj, stride)):
        return None
    return adj


def _conv_t(op, ins, bias_i):
    """(Y's shape, C_out) after the checks of the C op; None where its arguments make creation fail."""
    a = args(op)
    group = _int_arg(a, "group", 1)
    try:
        p = _convpool.parse(op, _convpool.CONV)
    except ShapeError:
        return None
    nd = len(p["kernel"])
    adj = _adjs(op, a, nd, p["stride"])
    if group is None or group < 1 or adj is None or p["legacy"] == _convpool.CAFFE_LEGACY_POOLING:
        return None
    _f32(op, ins, 0, "X")
    x = tuple(ins[0].shape)
    if len(x) != nd + 2:
        raise ShapeError("%s: X %s must have %d dims for a %d-D kernel" % (op.type, list(x), nd + 2, nd))
    nhwc = p["nhwc"]
    spatial, cin = (x[1:-1], x[-1]) if nhwc else (x[2:], x[1])
    out = []
    for i, n in enumerate(spatial):
        ph, pt = p["pads"][i], p["pads"][nd + i]  # 0 with legacy_pad VALID / SAME (no pads given)
        y = (n - 1) * p["stride"][i] + p["dilation"][i] * (p["kernel"][i] - 1) + 1 + adj[i] - ph - pt
        if n < 1 or y < 1:
            raise ShapeError("%s: X %s gives an output size %d in dim %d" % (op.type, list(x), y, i))
        out.append(y)
    if cin % group:
        raise ShapeError("%s: group=%d must divide the %d channels of X %s" % (op.type, group, cin, list(x)))
    _f32(op, ins, 1, "filter")
    w = tuple(ins[1].shape)
    k = tuple(p["kernel"])
    if len(w) != nd + 2 or w[0] != cin or (w[1:-1] if nhwc else w[2:]) != k:
        raise ShapeError("%s: the filter %s must be (%d, %s) for X %s" % (
            op.type, list(w), cin, "kernel..., C/group" if nhwc else "C/group, kernel...", list(x)))
    cout = (w[-1] if nhwc else w[1]) * group
    if bias_i is not None and bias_i < len(ins):
        _f32(op, ins, bias_i, "bias")
        if tuple(ins[bias_i].shape) != (cout,):
            raise ShapeError("%s: the bias %s must be (%d,)" % (op.type, list(ins[bias_i].shape), cout))
    kg = cout // group if group else 0
    for kk in k:
        kg *= kk
    size = 1
    for n in spatial:
        size *= n
    if max(size, kg, cin) > _INT_MAX:
        raise ShapeError("%s: a product dimension is beyond the BLAS's int range" % op.type)
    y_shape = (x[0],) + tuple(out) + (cout,) if nhwc else (x[0], cout) + tuple(out)
    return y_shape, cout


@register("ConvTranspose")
def _conv_t_fwd(op, ins):
    r = _conv_t(op, ins, 2)
    return [None] if r is None else [Tensor(r[0], FLOAT)]


@register("ConvTransposeGradient")
def _conv_t_grad(op, ins):
    return _grad(op, ins, _conv_t)


def _im2col(op, ins, xi):
    """Im2Col's column shape for the image input ``xi`` (X, or Col2Im's Z of any dtype); None where the
    arguments make creation fail (ops/conv.c im_setup: a 2-D kernel, legacy_pad 0)."""
    try:
        p = _convpool.parse(op, _convpool.CONV)
    except ShapeError:
        return None
    if len(p["kernel"]) != 2 or p["legacy"] != _convpool.NOTSET:
        return None
    if xi == 0:
        _f32(op, ins, 0, "X")
    g = _convpool.geometry(op, ins[xi].shape, _convpool.CONV)
    kg = g.C * g.kernel[0] * g.kernel[1]
    if kg * g.out[0] * g.out[1] * g.N >= 2 ** 63:
        raise ShapeError("%s: the columns of %s have more than 2^63 elements"
                         % (op.type, list(ins[xi].shape)))
    return (g.N,) + g.out + (kg,) if g.nhwc else (g.N, kg) + g.out


@register("Im2Col")
def _im2col_fwd(op, ins):
    cols = _im2col(op, ins, 0)
    return [None if cols is None else Tensor(cols, FLOAT)]


@register("Col2Im")
def _col2im(op, ins):
    cols = _im2col(op, ins, 1)
    if cols is None:
        return [None]
    _f32(op, ins, 0, "columns")
    if tuple(ins[0].shape) != cols:
        raise ShapeError("%s: the columns %s must have Im2Col's shape %s" % (op.type, list(ins[0].shape),
                                                                           list(cols)))
    return [Tensor(tuple(ins[1].shape), FLOAT)]
