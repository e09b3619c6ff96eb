"""Shape functions of the elementwise family: the op types of csrc/ops/unary.c, unary2.c, math.c, bcast.c,
activation.c and cast.c (without Sum, Max and Mean, which are another family's).

What each op does with shapes (read from the C code):
- the unary ops (Sin, Relu, Clip, ...) give float32 of X's shape; their gradient ops take two (SwishGradient:
  three) float32 inputs of one shape (SeluGradient: of one element count) and give dX of input 0's shape;
- Accumulate gives float32 of X's shape too, whatever Y held (a Y of another shape or dtype is zeroed first);
- Add, Sub, Mul, Div, the comparisons, And / Or / Xor, the Bitwise ops and Pow (X, E) broadcast as Caffe2's:
  broadcast=1 with axis / axis_str (legacy: B a contiguous run of A's dims, the result of A's shape), equal
  shapes, or else numpy-style (the broadcast shape). Arithmetic keeps A's dtype (float32 or int32), the
  comparisons and logical ops give int32. In place (the output named as an input) is refused when the
  result does not have that input's shape, and the inference says so;
- AddGradient, SubGradient, MulGradient, DivGradient, PowGradient (tensor form), MeanGradient and
  ExpandGradient give each input's gradient that input's shape;
- FC, FCTransposed, MatMul, ElementwiseLinear and their gradients flatten at their axis arguments;
- RowMul gives mat's shape (w must hold mat.shape[0] elements);
- ScaleBlobs gives each output its input's shape (float32), and nothing known when the counts of inputs
  and outputs differ.

Not inferred: Expand, whose output shape is the values of its shape input. FCGradient's output 0 under
stash_dy / skip_dw and output 1 under skip_db (RecurrentNetworkGradient's flags) are left unknown: the op
leaves those blobs as they were (or writes into a buffer of the caller's shape).

An input's dtype that is UNDEFINED (shapes given without types) is taken as whatever the op accepts; the
outputs get the dtype the op always gives, or the input's (UNDEFINED) where the op passes it through.
Inputs the op refuses when it runs (a known wrong dtype, shapes that do not fit, an axis out of range)
raise ShapeError. Arguments the op refuses when it is created (an unknown Cast 'to', 'axis' without
broadcast=1, ...) give unknown outputs.
"""

from .shape_inference import (FLOAT, INT32, UNDEFINED, ShapeError, Tensor, args, broadcast, not_inferred,
                              register, size)

_INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------- helpers
def _unknown(op):
    return [None] * len(op.output)


def _dtype(op, ins, k, *allowed):
    """Input k's dtype must be one of ``allowed`` when it is known (rc_check_input)."""
    dt = ins[k].dtype
    if dt != UNDEFINED and dt not in allowed:
        raise ShapeError("%s: input %d '%s' has dtype %d, the op takes %s" % (
            op.type, k, op.input[k], dt, " or ".join(str(a) for a in allowed)))
    return dt


def _floats(op, ins, idx=None):
    for k in (range(len(ins)) if idx is None else idx):
        _dtype(op, ins, k, FLOAT)


def _same_dtype(op, ins, j, k):
    """Inputs j and k of one dtype (when both are known)."""
    a, b = ins[j].dtype, ins[k].dtype
    if a != UNDEFINED and b != UNDEFINED and a != b:
        raise ShapeError("%s: input %d '%s' (dtype %d) and input %d '%s' (dtype %d) must have one dtype" % (
            op.type, j, op.input[j], a, k, op.input[k], b))
    return a if a != UNDEFINED else b


def _same_shape(op, ins, k, ref):
    if ins[k].shape != ins[ref].shape:
        raise ShapeError("%s: input %d '%s' of shape %s must have the shape %s of input %d '%s'" % (
            op.type, k, op.input[k], list(ins[k].shape), list(ins[ref].shape), ref, op.input[ref]))


def _axis(op, name, axis, shape):
    """The C ops' canon_axis: -ndim <= axis < ndim (a 0-d input has no axis)."""
    nd = len(shape)
    if not -nd <= axis < nd:
        raise ShapeError("%s: %s=%d out of range for shape %s" % (op.type, name, axis, list(shape)))
    return axis + nd if axis < 0 else axis


def _flag(a, name):
    v = a.get(name, 0)
    return None if not isinstance(v, int) else int(v != 0)


def _int(a, name, default):
    v = a.get(name, default)
    return v if isinstance(v, int) else None


def _bcast(op, a, b):
    """numpy broadcasting of shapes a and b (rc_bc_numpy)."""
    return broadcast(a, b, op.type)


def _legacy(op, a, b, axis):
    """Caffe2's legacy broadcast (broadcast=1): b a contiguous run of a's dims from axis (-1: a suffix);
    b's leading and trailing 1s are ignored. Raises where the op refuses."""
    if len(b) > len(a):
        raise ShapeError("%s: cannot broadcast shape %s to %s: it has more dims" % (
            op.type, list(b), list(a)))
    ax = len(a) - len(b) if axis == -1 else axis
    if ax < 0 or ax > len(a) - len(b):
        raise ShapeError("%s: axis=%d out of range for broadcasting %s to %s" % (
            op.type, axis, list(b), list(a)))
    bs, be = 0, len(b) - 1
    while bs < len(b) and b[bs] == 1:
        bs += 1
    while be >= bs and b[be] == 1:
        be -= 1
    for i in range(bs, be + 1):
        if a[ax + i] != b[i]:
            raise ShapeError("%s: cannot broadcast shape %s to %s at axis %d" % (
                op.type, list(b), list(a), ax))


def _binary_args(op, a=None):
    """(broadcast, axis) of a binary elementwise op (rc_binary_args), or None where the op refuses its
    arguments when created."""
    a = args(op) if a is None else a
    bc = _flag(a, "broadcast")
    axis = _int(a, "axis", -1)
    if bc is None or axis is None:
        return None
    s = a.get("axis_str", "")
    if not isinstance(s, str):
        return None
    if s:
        order = a.get("order", "NCHW")
        if axis != -1 or len(s) != 1 or not isinstance(order, str) or s not in order:
            return None
        axis = order.index(s)
    if not bc and ("axis" in a or s):
        return None
    return bc, axis


def _binary_shape(op, a, b, bc, axis):
    """The result's shape for inputs of shapes a (A) and b (B) (rc_binary_bc), and whether it is
    numpy-style."""
    if not bc and a != b:
        return _bcast(op, a, b), True
    if bc:
        _legacy(op, a, b, axis)
    return tuple(a), False


def _inplace(op, shape, idx):
    """rc_bc_check_inplace: output 0 may be input k (k in idx) only when the result has its shape."""
    for k, s in idx:
        if op.output[0] == op.input[k] and tuple(s) != tuple(shape):
            raise ShapeError("%s: output '%s' is input %d of shape %s, but the result has shape %s" % (
                op.type, op.output[0], k, list(s), list(shape)))


# ---------------------------------------------------------------- unary ops and their gradients
@register("IsNaN")
def _isnan(op, ins):
    _floats(op, ins, [0])
    return [Tensor(ins[0].shape, INT32)]


@register("Abs", "Acos", "Asin", "Atan", "Ceil", "Clip", "Cos", "Cosh", "Cube", "Elu", "Erf", "Exp", "Floor",
          "Gelu", "HardSigmoid", "LeakyRelu", "Log", "Negative", "RSqrt", "Reciprocal", "Relu", "ReluN",
          "Scale", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqr", "Sqrt", "Swish",
          "Tan", "Tanh", "ThresholdedRelu", "Logit", "Cbrt", "Log1p", "Round", "ReplaceNaN", "Accumulate")
def _unary(op, ins):
    """X float32 -> Y float32 of X's shape (Accumulate: whatever Y held before)."""
    _floats(op, ins, [0])
    return [Tensor(ins[0].shape, FLOAT)]


@register("ScaleBlobs")
def _scale_blobs(op, ins):
    """X_0 .. X_N-1 float32 -> Y_i float32 of X_i's shape; unknown unless there is one output per input
    (the op refuses other counts when it is created)."""
    if len(op.output) != len(ins):
        return _unknown(op)
    _floats(op, ins)
    return [Tensor(t.shape, FLOAT) for t in ins]


@register("AbsGradient", "AcosGradient", "AsinGradient", "AtanGradient", "ClipGradient", "CosGradient",
          "CoshGradient", "CubeGradient", "EluGradient", "ErfGradient", "GeluGradient", "HardSigmoidGradient",
          "LeakyReluGradient", "RSqrtGradient", "ReciprocalGradient", "ReluGradient", "ReluNGradient",
          "SigmoidGradient", "SinGradient", "SinhGradient", "SoftplusGradient", "SoftsignGradient",
          "SqrGradient", "SwishGradient", "TanGradient", "TanhGradient", "ThresholdedReluGradient",
          "LogitGradient", "CbrtGradient", "Log1pGradient")
def _unary_grad(op, ins):
    """All inputs float32 of input 0's shape -> dX of that shape."""
    for k in range(len(ins)):
        _dtype(op, ins, k, FLOAT)
        if k:
            _same_shape(op, ins, k, 0)
    return [Tensor(ins[0].shape, FLOAT)]


@register("SeluGradient")
def _selu_grad(op, ins):
    """(Y, dY) float32 of one element count -> dX of Y's shape."""
    _floats(op, ins)
    if size(ins[1].shape) != size(ins[0].shape):
        raise ShapeError("SeluGradient: dY %s must have as many elements as Y %s" % (
            list(ins[1].shape), list(ins[0].shape)))
    return [Tensor(ins[0].shape, FLOAT)]


@register("RowMul")
def _row_mul(op, ins):
    """mat float32 (N, ...), w float32 of N elements (any shape) -> mat's shape."""
    _floats(op, ins)
    mat, w = ins[0].shape, ins[1].shape
    if len(mat) < 1 or size(w) != mat[0]:
        raise ShapeError("RowMul: w %s must hold one element per row of mat %s (at least 1-D)" % (
            list(w), list(mat)))
    return [Tensor(mat, FLOAT)]


@register("Copy", "StopGradient", "NegateGradient")
def _copy(op, ins):
    """Any dtype, passed through."""
    return [ins[0]]


@register("Pow")
def _pow(op, ins):
    if len(ins) == 1:
        _floats(op, ins)
        return [Tensor(ins[0].shape, FLOAT)]
    ba = _binary_args(op)
    if ba is None:
        return _unknown(op)
    _floats(op, ins)
    shape, _ = _binary_shape(op, ins[0].shape, ins[1].shape, *ba)
    _inplace(op, shape, [(0, ins[0].shape), (1, ins[1].shape)])
    return [Tensor(shape, FLOAT)]


@register("PowGradient")
def _pow_grad(op, ins):
    if len(ins) == 2 and len(op.output) == 1:  # (X, dY) -> dX with the argument 'exponent'
        return _unary_grad(op, ins)
    if len(ins) != 4 or len(op.output) != 2:
        return _unknown(op)
    ba = _binary_args(op)  # (dY, X, E, Y) -> (dX, dE)
    if ba is None:
        return _unknown(op)
    _floats(op, ins)
    shape, _ = _binary_shape(op, ins[1].shape, ins[2].shape, *ba)
    for k in (0, 3):
        if ins[k].shape != shape:
            raise ShapeError("PowGradient: input %d '%s' of shape %s must have the forward result's shape %s"
                             % (k, op.input[k], list(ins[k].shape), list(shape)))
    return [Tensor(ins[1].shape, FLOAT), Tensor(ins[2].shape, FLOAT)]


@register("Glu")
def _glu(op, ins):
    dim = _int(args(op), "dim", -1)
    if dim is None:
        return _unknown(op)
    _floats(op, ins)
    shape = list(ins[0].shape)
    d = dim + len(shape) if dim < 0 else dim
    if not 0 <= d < len(shape) or shape[d] % 2:
        raise ShapeError("Glu: dim=%d must name a dim of even size of %s" % (dim, shape))
    shape[d] //= 2
    return [Tensor(tuple(shape), FLOAT)]


@register("Cast")
def _cast(op, ins):
    to = args(op).get("to", 1)  # FLOAT when absent (Caffe2's last release)
    floats = {1: "FLOAT", 12: "FLOAT16", 13: "DOUBLE"}
    ints = {2: "INT32", 3: "BYTE", 5: "BOOL", 6: "UINT8", 7: "INT8", 8: "UINT16", 9: "INT16", 10: "INT64"}
    if isinstance(to, int) and not isinstance(to, bool):
        dt = FLOAT if to in floats else INT32 if to in ints else None
    elif isinstance(to, str):
        up = to.upper()
        dt = FLOAT if up in floats.values() else INT32 if up in ints.values() else None
    else:
        dt = None
    if dt is None:
        return _unknown(op)
    return [Tensor(ins[0].shape, dt)]


@register("Conditional")
def _conditional(op, ins):
    """(condition (N,) int32, X_true, X_false of one shape (N, ...) and dtype) -> X_true's shape and dtype."""
    c, t, f = ins
    _dtype(op, ins, 0, INT32)
    _dtype(op, ins, 1, FLOAT, INT32)
    dt = _same_dtype(op, ins, 1, 2)
    if len(c.shape) != 1:
        raise ShapeError("Conditional: condition %s must be 1-D" % list(c.shape))
    if len(t.shape) < 1 or t.shape[0] != c.shape[0]:
        raise ShapeError("Conditional: X_true %s must have first dim %d" % (list(t.shape), c.shape[0]))
    _same_shape(op, ins, 2, 1)
    return [Tensor(t.shape, dt)]


# ---------------------------------------------------------------- Clip's relatives, PRelu, SquareRootDivide
@register("EnsureClipped")
def _ensure_clipped(op, ins):
    if len(ins) == 2:  # refused when created
        return _unknown(op)
    _dtype(op, ins, 0, FLOAT)
    if len(ins) == 3:  # (param, indices, grad): param clipped in place at the rows of indices
        p, i, g = ins
        _dtype(op, ins, 1, INT32)
        _dtype(op, ins, 2, FLOAT)
        if len(p.shape) < 1:
            raise ShapeError("EnsureClipped: param %s must have at least 1 dim" % list(p.shape))
        if g.shape != tuple(i.shape) + tuple(p.shape[1:]):
            raise ShapeError("EnsureClipped: grad %s must have shape indices %s + param %s without its "
                             "first dim" % (list(g.shape), list(i.shape), list(p.shape)))
    return [Tensor(ins[0].shape, FLOAT)]


@register("ClipTensorByScaling")
def _clip_by_scaling(op, ins):
    _floats(op, ins)
    for k in range(1, len(ins)):
        if size(ins[k].shape) != 1:
            raise ShapeError("ClipTensorByScaling: input %d '%s' %s must hold one value" % (
                k, op.input[k], list(ins[k].shape)))
    return [Tensor(ins[0].shape, FLOAT)]


def _prelu_check(op, x, w):
    order = args(op).get("order", "NCHW")
    if order not in ("NCHW", "NHWC"):
        return False
    if len(w) != 1:
        raise ShapeError("%s: W %s must be 1-D" % (op.type, list(w)))
    if w[0] == 1:
        return True
    cd = len(x) - 1 if order == "NHWC" else 1
    if len(x) < (1 if order == "NHWC" else 2) or x[cd] != w[0]:
        raise ShapeError("%s: W %s must have 1 entry or one per channel of X %s (order %s)" % (
            op.type, list(w), list(x), order))
    return True


@register("PRelu")
def _prelu(op, ins):
    _floats(op, ins)
    if not _prelu_check(op, ins[0].shape, ins[1].shape):
        return _unknown(op)
    return [Tensor(ins[0].shape, FLOAT)]


@register("PReluGradient")
def _prelu_grad(op, ins):
    """(Y, dY, X, W) -> (dX of X's shape, dW of W's)."""
    _floats(op, ins)
    _same_shape(op, ins, 0, 2)
    _same_shape(op, ins, 1, 2)
    if not _prelu_check(op, ins[2].shape, ins[3].shape):
        return _unknown(op)
    return [Tensor(ins[2].shape, FLOAT), Tensor(ins[3].shape, FLOAT)]


@register("SquareRootDivide")
def _square_root_divide(op, ins):
    d, s = ins
    _dtype(op, ins, 0, FLOAT)
    _dtype(op, ins, 1, FLOAT, INT32)
    if len(d.shape) < 1 or len(s.shape) != 1 or s.shape[0] != d.shape[0]:
        raise ShapeError("SquareRootDivide: scale %s must be 1-D with one entry per row of data %s" % (
            list(s.shape), list(d.shape)))
    return [Tensor(d.shape, FLOAT)]


# ---------------------------------------------------------------- binary elementwise ops
@register("Add", "Sub", "Mul", "Div")
def _arith(op, ins):
    """float32 or int32 (one dtype) -> A's dtype."""
    ba = _binary_args(op)
    if ba is None:
        return _unknown(op)
    _dtype(op, ins, 0, FLOAT, INT32)
    dt = _same_dtype(op, ins, 0, 1)
    a, b = ins[0].shape, ins[1].shape
    shape, numpy = _binary_shape(op, a, b, *ba)
    if numpy:
        _inplace(op, shape, [(0, a), (1, b)])
    elif op.output[0] == op.input[1] and op.input[0] != op.input[1] and a != b:
        raise ShapeError("%s: output '%s' is input 1 of shape %s but the result has shape %s" % (
            op.type, op.output[0], list(b), list(a)))
    return [Tensor(shape, dt)]


@register("EQ", "NE", "LT", "LE", "GT", "GE")
def _compare(op, ins):
    """float32 or int32 (one dtype) -> int32 0 / 1 (no in place: refused when created)."""
    ba = _binary_args(op)
    if ba is None:
        return _unknown(op)
    _dtype(op, ins, 0, FLOAT, INT32)
    _same_dtype(op, ins, 0, 1)
    shape, _ = _binary_shape(op, ins[0].shape, ins[1].shape, *ba)
    return [Tensor(shape, INT32)]


@register("And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
def _logical(op, ins):
    """int32 inputs -> int32."""
    ba = _binary_args(op)
    if ba is None:
        return _unknown(op)
    _dtype(op, ins, 0, INT32)
    _dtype(op, ins, 1, INT32)
    a, b = ins[0].shape, ins[1].shape
    shape, _ = _binary_shape(op, a, b, *ba)
    _inplace(op, shape, [(0, a), (1, b)])
    return [Tensor(shape, INT32)]


@register("Not")
def _not(op, ins):
    _dtype(op, ins, 0, INT32)
    return [Tensor(ins[0].shape, INT32)]


def _bc_grad(op, ins, n_in):
    """(dC, A, B[, C]) -> (dA, dB) of A's and B's shapes; dC (and C) of the broadcast result's shape."""
    ba = _binary_args(op)
    if ba is None:
        return _unknown(op)
    _floats(op, ins)
    shape, _ = _binary_shape(op, ins[1].shape, ins[2].shape, *ba)
    for k in range(0, n_in, 3):
        if ins[k].shape != shape:
            raise ShapeError("%s: input %d '%s' of shape %s must have the forward result's shape %s" % (
                op.type, k, op.input[k], list(ins[k].shape), list(shape)))
    return [Tensor(ins[1].shape, FLOAT), Tensor(ins[2].shape, FLOAT)]


@register("AddGradient", "SubGradient", "MulGradient")
def _add_grad(op, ins):
    return _bc_grad(op, ins, 3)


@register("DivGradient")
def _div_grad(op, ins):
    """(dC, A, B, C) as AddGradient's, or the legacy (B, C, dC) -> (dA of C's shape, dB of B's)."""
    if len(ins) == 4:
        return _bc_grad(op, ins, 4)
    ba = _binary_args(op)
    if ba is None:
        return _unknown(op)
    b, c, dc = ins
    _floats(op, ins)
    _same_shape(op, ins, 2, 1)
    bc, axis = ba
    if bc:
        _legacy(op, c.shape, b.shape, axis)
    elif b.shape != c.shape and _bcast(op, c.shape, b.shape) != c.shape:
        raise ShapeError("DivGradient: B %s must broadcast to C's shape %s" % (list(b.shape), list(c.shape)))
    return [Tensor(c.shape, FLOAT), Tensor(b.shape, FLOAT)]


@register("SumReduceLike")
def _sum_reduce_like(op, ins):
    """A float32 summed to B's shape (B any tensor)."""
    a = args(op)
    axis = _int(a, "axis", -1)
    s = a.get("axis_str", "")
    if axis is None or _flag(a, "broadcast") is None or not isinstance(s, str):
        return _unknown(op)
    if s:
        order = a.get("order", "NCHW")
        if axis != -1 or len(s) != 1 or not isinstance(order, str) or s not in order:
            return _unknown(op)
        axis = order.index(s)
    _dtype(op, ins, 0, FLOAT)
    if size(ins[1].shape) != 1:
        _legacy(op, ins[0].shape, ins[1].shape, axis)
    return [Tensor(ins[1].shape, FLOAT)]


@register("Where")
def _where(op, ins):
    """(C int32, X, Y of one dtype) -> X's dtype, the broadcast of the three (or X's shape by rows)."""
    rows = _int(args(op), "broadcast_on_rows", 0)
    if rows is None:
        return _unknown(op)
    c, x, y = ins
    if c.dtype == FLOAT:
        raise ShapeError("Where: condition '%s' must be int32" % op.input[0])
    _dtype(op, ins, 1, FLOAT, INT32)
    dt = _same_dtype(op, ins, 1, 2)
    if rows:
        if len(c.shape) != 1 or len(x.shape) < 1 or c.shape[0] != x.shape[0] or x.shape != y.shape:
            raise ShapeError("Where: with broadcast_on_rows, condition %s must be 1-D with one entry per row "
                             "of X %s and Y %s of one shape" % (list(c.shape), list(x.shape), list(y.shape)))
        shape = x.shape
    else:
        shape = _bcast(op, _bcast(op, c.shape, x.shape), y.shape)
    _inplace(op, shape, [(1, x.shape), (2, y.shape)])
    return [Tensor(shape, dt)]


@register("ExpandGradient")
def _expand_grad(op, ins):
    """(dY float32, X any tensor broadcasting to dY) -> dX of X's shape."""
    dy, x = ins
    _dtype(op, ins, 0, FLOAT)
    ok = len(x.shape) <= len(dy.shape) and all(
        d == e or d == 1 for d, e in zip(x.shape, dy.shape[len(dy.shape) - len(x.shape):]))
    if not ok:
        raise ShapeError("ExpandGradient: dY %s is not an expansion of X %s" % (
            list(dy.shape), list(x.shape)))
    return [Tensor(x.shape, FLOAT)]


not_inferred("the output's shape is the values of the shape input", "Expand")


# ---------------------------------------------------------------- ops of many inputs
@register("Min")
def _min(op, ins):
    return _unary_grad(op, ins)


@register("MinGradient", "MaxGradient")
def _minmax_grad(op, ins):
    """(Y, dY, X0, ...) float32 of Y's shape -> (dX0, ...) of Y's shape."""
    if len(ins) != len(op.output) + 2:
        return _unknown(op)
    _unary_grad(op, ins)
    return [Tensor(ins[0].shape, FLOAT)] * len(op.output)


@register("MeanGradient")
def _mean_grad(op, ins):
    """dY alone -> each output dY's shape; (dY, X0, ...) -> dXi of Xi's shape (Xi broadcasts to dY)."""
    dy = ins[0].shape
    if len(ins) == 1:
        _floats(op, ins)
        return [Tensor(dy, FLOAT)] * len(op.output)
    if len(ins) != len(op.output) + 1:
        return _unknown(op)
    _floats(op, ins)
    for k in range(1, len(ins)):
        x = ins[k].shape
        if len(x) > len(dy) or any(d != e and d != 1 for d, e in zip(x, dy[len(dy) - len(x):])):
            raise ShapeError("MeanGradient: X%d %s does not broadcast to dY %s" % (k - 1, list(x), list(dy)))
    if op.output[0] == op.input[0] and ins[1].shape != dy:
        raise ShapeError("MeanGradient: dX0 '%s' is dY, but X0 %s is not of dY's shape %s" % (
            op.output[0], list(ins[1].shape), list(dy)))
    return [Tensor(t.shape, FLOAT) for t in ins[1:]]


@register("WeightedSum")
def _weighted_sum(op, ins):
    """(X0, w0, X1, w1, ...) float32, the Xi of one shape, the wi of one element -> X0's shape."""
    if len(ins) % 2:
        return _unknown(op)
    _floats(op, ins)
    for k in range(len(ins)):
        if k % 2 == 0 and k:
            _same_shape(op, ins, k, 0)
        if k % 2 == 1 and size(ins[k].shape) != 1:
            raise ShapeError("WeightedSum: weight '%s' %s must have 1 element" % (
                op.input[k], list(ins[k].shape)))
    return [Tensor(ins[0].shape, FLOAT)]


@register("WeightedSumGradient")
def _weighted_sum_grad(op, ins):
    """(dY, X0, w0, ...) -> (dX0, ...) of dY's shape [, (dw0, ...) of shape (1,) with grad_on_w]."""
    on_w = _flag(args(op), "grad_on_w")
    k = len(ins) // 2
    if on_w is None or len(ins) % 2 == 0 or len(op.output) != (2 * k if on_w else k):
        return _unknown(op)
    _dtype(op, ins, 0, FLOAT)
    for i in range(1, len(ins), 2):
        _dtype(op, ins, i + 1, FLOAT)
        if size(ins[i + 1].shape) != 1:
            raise ShapeError("WeightedSumGradient: weight '%s' %s must have 1 element" % (
                op.input[i + 1], list(ins[i + 1].shape)))
        if on_w:
            _dtype(op, ins, i, FLOAT)
            _same_shape(op, ins, i, 0)
    return [Tensor(ins[0].shape, FLOAT)] * k + [Tensor((1,), FLOAT)] * (k if on_w else 0)


# ---------------------------------------------------------------- FC, FCTransposed, MatMul, ElementwiseLinear
def _blas(op, *sizes):
    if any(s > _INT32_MAX for s in sizes):
        raise ShapeError("%s: matrix sizes %s exceed the BLAS limit" % (op.type, list(sizes)))


def _fc_dims(op, ins, transposed):
    """(axis, M, N) of FC / FCTransposed (and their gradients) from X (input 0) and W (input 1)."""
    a = args(op)
    axis, axis_w = _int(a, "axis", 1), _int(a, "axis_w", 1)
    if axis is None or axis_w is None:
        return None
    x, w = ins[0].shape, ins[1].shape
    ax = _axis(op, "axis", axis, x)
    axw = _axis(op, "axis_w", axis_w, w)
    m, k = size(x[:ax]), size(x[ax:])
    if transposed:  # W is K x N
        kw, n = size(w[:axw]), size(w[axw:])
    else:
        n, kw = size(w[:axw]), size(w[axw:])
    if kw != k:
        raise ShapeError("%s: W %s does not fit X %s (K %d vs %d)" % (op.type, list(w), list(x), k, kw))
    _blas(op, m, n, k)
    return ax, m, n


@register("FC", "FCTransposed")
def _fc(op, ins):
    _floats(op, ins, range(3))
    dims = _fc_dims(op, ins, op.type == "FCTransposed")
    if dims is None:
        return _unknown(op)
    ax, m, n = dims
    if ins[2].shape != (n,):
        raise ShapeError("%s: b %s must have shape (%d,)" % (op.type, list(ins[2].shape), n))
    return [Tensor(tuple(ins[0].shape[:ax]) + (n,), FLOAT)]


@register("FCGradient", "FCTransposedGradient")
def _fc_grad(op, ins):
    """(X, W, dY) -> (dW of W's shape, db (N,)[, dX of X's shape])."""
    a = args(op)
    flags = {}
    if op.type == "FCGradient":
        for name in ("accumulate_dw", "accumulate_db", "stash_dy", "skip_db", "stash_dy_t", "skip_dw"):
            flags[name] = _flag(a, name)
            if flags[name] is None:
                return _unknown(op)
    _floats(op, ins, range(3))
    dims = _fc_dims(op, ins, op.type == "FCTransposedGradient")
    if dims is None:
        return _unknown(op)
    _, m, n = dims
    dy = ins[2].shape
    if size(dy) != m * n or (len(dy) > 0 and dy[-1] != n and m * n != 0):
        raise ShapeError("%s: dY %s must be the output gradient of shape (M=%d) x (N=%d)" % (
            op.type, list(dy), m, n))
    out = [Tensor(ins[1].shape, FLOAT), Tensor((n,), FLOAT), Tensor(ins[0].shape, FLOAT)][:len(op.output)]
    if flags.get("stash_dy") or flags.get("skip_dw"):
        out[0] = None  # a dY buffer of the caller's shape, or left as it was
    if flags.get("skip_db"):
        out[1] = None
    return out


@register("MatMul")
def _matmul(op, ins):
    a = args(op)
    axa, axb = _int(a, "axis_a", 1), _int(a, "axis_b", 1)
    ta, tb = _flag(a, "trans_a"), _flag(a, "trans_b")
    if None in (axa, axb, ta, tb):
        return _unknown(op)
    _floats(op, ins, range(2))
    A, B = ins[0].shape, ins[1].shape
    axa, axb = _axis(op, "axis_a", axa, A), _axis(op, "axis_b", axb, B)
    a0, a1, b0, b1 = size(A[:axa]), size(A[axa:]), size(B[:axb]), size(B[axb:])
    m, ka = (a1, a0) if ta else (a0, a1)
    n, kb = (b0, b1) if tb else (b1, b0)
    if ka != kb:
        raise ShapeError("MatMul: inner dimensions differ: %s and %s" % (list(A), list(B)))
    _blas(op, m, n, ka)
    if len(ins) == 3:
        if size(ins[2].shape) != m * n:
            raise ShapeError("MatMul: input 2 %s must have M x N = %d x %d elements" % (
                list(ins[2].shape), m, n))
        return [Tensor(ins[2].shape, FLOAT)]
    return [Tensor((m, n), FLOAT)]


def _ewl_d(op, x, vecs):
    axis = _int(args(op), "axis", 1)
    if axis is None:
        return None
    ax = _axis(op, "axis", axis, x)
    d = size(x[ax:])
    for v in vecs:
        if v != (d,):
            raise ShapeError("%s: %s must have shape (%d,) (D of %s at axis=%d)" % (
                op.type, list(v), d, list(x), ax))
    return d


@register("ElementwiseLinear")
def _ewl(op, ins):
    _floats(op, ins)
    if _ewl_d(op, ins[0].shape, [ins[1].shape, ins[2].shape]) is None:
        return _unknown(op)
    return [Tensor(ins[0].shape, FLOAT)]


@register("ElementwiseLinearGradient")
def _ewl_grad(op, ins):
    """(dY, X, a) -> (dX of X's shape, da (D,), db (D,))."""
    _floats(op, ins)
    _same_shape(op, ins, 0, 1)
    d = _ewl_d(op, ins[1].shape, [ins[2].shape])
    if d is None:
        return _unknown(op)
    return [Tensor(ins[1].shape, FLOAT), Tensor((d,), FLOAT), Tensor((d,), FLOAT)]
