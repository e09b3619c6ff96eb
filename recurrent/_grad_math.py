"""Gradient makers for the math operators (csrc/ops/math.c), as Caffe2's.

Each maker takes the forward OperatorDef and the names of its output gradients
(None where an output has none) and returns ``(grad_ops, g_input)``: the
gradient OperatorDefs and, aligned with ``op.input``, the name of each input's
gradient (None where an input has none). Gradient blobs are named
``<input>_grad``, as Caffe2's ``GradientName``. Copy's maker lives in core.

RowMul's is Caffe2's three ops (RowMul, Mul, ReduceTailSum); ReduceTailSum has no maker, as in
Caffe2 (a gradient that must flow through it is an error naming the op).
"""

import copy

from .core import CreateOperator, GradientRegistry


def _grad_name(blob):
    return str(blob) + "_grad"


def _arg(op, name, default=None):
    for a in op.arg:
        if a.name == name:
            return a.value()
    return default


def _make(fwd, type_, inputs, outputs, args=None, **kwargs):
    """A gradient op of ``fwd``; ``args`` (Arguments of fwd) are copied in, as
    Caffe2's makers copy the forward op's arguments. (core gives gradient ops
    the forward op's device option.)"""
    g = CreateOperator(type_, [str(b) for b in inputs], [str(b) for b in outputs], **kwargs)
    if args:
        g.arg.extend(copy.deepcopy(list(args)))
    return g


def _no_grad(op):
    return [], [None] * len(op.input)


def _broadcast_args(op):
    """The arguments a broadcast gradient passes on: axis, or axis_str with order."""
    return [a for a in op.arg if a.name in ("axis", "axis_str", "order")]


# ---------------------------------------------------------------- FC, MatMul
def _fc_grad_maker(grad_type):
    """FC's and FCTransposed's (Caffe2's GetFCGradient): grad_type(X, W, dY) -> (dW, db, dX)."""
    def maker(op, g_output):
        dy = g_output[0]
        if dy is None:
            return _no_grad(op)
        x, w, b = op.input
        gx, gw, gb = _grad_name(x), _grad_name(w), _grad_name(b)
        return [_make(op, grad_type, [x, w, dy], [gw, gb, gx], args=op.arg)], [gx, gw, gb]
    return maker


GradientRegistry.RegisterGradient("FC")(_fc_grad_maker("FCGradient"))
GradientRegistry.RegisterGradient("FCTransposed")(_fc_grad_maker("FCTransposedGradient"))


@GradientRegistry.RegisterGradient("MatMul")
def _matmul_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    if len(op.input) != 2:
        raise ValueError("MatMul gradient: the forward op %s has a third (output shape) input; its gradient is "
                         "not defined (the output gradient cannot be flattened to M x N)" % list(op.input))
    a, b = op.input
    ga, gb = _grad_name(a), _grad_name(b)
    ta = bool(_arg(op, "trans_a", 0))
    tb = bool(_arg(op, "trans_b", 0))
    axis_a = int(_arg(op, "axis_a", 1))
    axis_b = int(_arg(op, "axis_b", 1))
    # dY is 2-D (M x N); each product's third input gives it the shape of A or B.
    if ta and tb:      # Y = A'B':  dA = B'dY', dB = dY'A'
        ops = [_make(op, "MatMul", [b, dy, a], [ga], trans_a=1, trans_b=1, axis_a=axis_b),
               _make(op, "MatMul", [dy, a, b], [gb], trans_a=1, trans_b=1, axis_b=axis_a)]
    elif ta:           # Y = A'B:   dA = B dY', dB = A dY
        ops = [_make(op, "MatMul", [b, dy, a], [ga], trans_b=1, axis_a=axis_b),
               _make(op, "MatMul", [a, dy, b], [gb], axis_a=axis_a)]
    elif tb:           # Y = A B':  dA = dY B, dB = dY'A
        ops = [_make(op, "MatMul", [dy, b, a], [ga], axis_b=axis_b),
               _make(op, "MatMul", [dy, a, b], [gb], trans_a=1, axis_b=axis_a)]
    else:              # Y = A B:   dA = dY B', dB = A'dY
        ops = [_make(op, "MatMul", [dy, b, a], [ga], trans_b=1, axis_b=axis_b),
               _make(op, "MatMul", [a, dy, b], [gb], trans_a=1, axis_a=axis_a)]
    return ops, [ga, gb]


# ---------------------------------------------------------------- Sum, Add, Sub, Mul, Div
@GradientRegistry.RegisterGradient("Sum")
def _sum_grad(op, g_output):
    # every input gets the output gradient itself; no ops (as Caffe2)
    return [], [g_output[0]] * len(op.input)


@GradientRegistry.RegisterGradient("WeightedSum")
def _weighted_sum_grad(op, g_output):
    # Caffe2's WeightedSumGradient (dY, X0, w0, X1, w1, ...) -> (dX0, ...[, dw0, ...]) with
    # grad_on_w; without it the weights get no gradient. A blob used twice (X0 == X1, a shared weight)
    # gets a distinct name per use, summed by the backward pass; a name that would be dY's gets one too.
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    grad_on_w = bool(_arg(op, "grad_on_w", 0))
    if grad_on_w:
        _no_in_place(op, "WeightedSum (grad_on_w=1)", [op.input[0]])
    ins = [str(b) for b in op.input]
    idx = list(range(0, len(ins), 2)) + (list(range(1, len(ins), 2)) if grad_on_w else [])
    used, outs = {str(dy)}, []
    g_input = [None] * len(ins)
    for i in idx:
        name = _grad_name(ins[i])
        if name in used:
            name += "_autogen_weighted_sum_%d" % i
        used.add(name)
        g_input[i] = name
        outs.append(name)
    args = [a for a in op.arg if a.name == "grad_on_w"]
    return [_make(op, "WeightedSumGradient", [dy] + ins, outs, args=args)], g_input


def _is_broadcast(op):
    return bool(_arg(op, "broadcast", 0))


def _b_grad_name(b, dy):
    """B's gradient name for Add/Sub. When the op ran in place on B, "<b>_grad"
    is dY itself, which A's gradient passes through unchanged: B's (negated or
    reduced) gradient then needs a blob of its own."""
    gb = _grad_name(b)
    return gb + "_autogen_b" if gb == dy else gb


def _numpy_grad(op, dy, grad_type, with_output=False):
    """Without broadcast=1 (equal shapes or numpy-style broadcasting): Caffe2's
    ``<Op>Gradient (dC, A, B[, C]) -> (dA, dB)``, each summed to its input's
    shape. dA may be written over dC (the forward op ran in place on A, so A's
    gradient name is dC's); B's gets a name of its own when it would be dC's
    or A's (in place on B, or A and B one blob: the backward pass sums the two).
    An input the op overwrote (in place) is needed for its shape only, which is
    then C's: dC stands for it (its blob may be written again later; Mul, whose
    gradient needs the values, refuses in place before this)."""
    a, b = op.input
    out = op.output[0]
    ga = _grad_name(a)
    gb = _b_grad_name(b, dy)
    if gb == ga:
        gb = _grad_name(b) + "_autogen_%s_1" % op.type.lower()
    shape_a = dy if a == out else a
    shape_b = dy if b == out else b
    inputs = [dy, shape_a, shape_b] + ([out] if with_output else [])
    return [_make(op, grad_type, inputs, [ga, gb])], [ga, gb]


@GradientRegistry.RegisterGradient("Add")
def _add_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    if not _is_broadcast(op):
        return _numpy_grad(op, dy, "AddGradient")
    b = op.input[1]
    gb = _b_grad_name(b, dy)
    return [_make(op, "SumReduceLike", [dy, b], [gb], args=_broadcast_args(op))], [dy, gb]


@GradientRegistry.RegisterGradient("Sub")
def _sub_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    if not _is_broadcast(op):
        return _numpy_grad(op, dy, "SubGradient")
    b = op.input[1]
    gb = _b_grad_name(b, dy)
    # reduce first, then negate the (smaller) result in place
    return [_make(op, "SumReduceLike", [dy, b], [gb], args=_broadcast_args(op)),
            _make(op, "Scale", [gb], [gb], scale=-1.0)], [dy, gb]


@GradientRegistry.RegisterGradient("Mul")
def _mul_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    a, b = op.input
    out = op.output[0]
    if out in (a, b):
        raise ValueError("Mul gradient: the forward op computes '%s' in place (inputs %s), so the input it "
                         "overwrote is lost; the gradient needs it" % (out, [a, b]))
    if not _is_broadcast(op):
        # y = x * x: the two contributions to x's gradient get distinct names;
        # the backward pass sums them like any other multiple use.
        return _numpy_grad(op, dy, "MulGradient")
    ga, gb = _grad_name(a), _grad_name(b)
    if a == b:
        gb = _grad_name(b) + "_autogen_mul_1"
    pre = gb + "_autogen_pre_red"
    bargs = _broadcast_args(op)
    return [_make(op, "Mul", [dy, b], [ga], args=bargs, broadcast=1),
            _make(op, "Mul", [dy, a], [pre]),
            _make(op, "SumReduceLike", [pre, b], [gb], args=bargs)], [ga, gb]


def _no_in_place(op, kind, lost):
    out = op.output[0]
    if out in lost:
        raise ValueError("%s gradient: the forward op computes '%s' in place (inputs %s), so the input it "
                         "overwrote is lost; the gradient needs it" % (kind, out, list(op.input)))


@GradientRegistry.RegisterGradient("Div")
def _div_grad(op, g_output):
    # Without broadcast=1: Caffe2's DivGradient (dC, A, B, C) -> (dA, dB) (A for its shape only).
    # broadcast=1: the legacy DivGradient (B, C, dC) -> (dA, dB). Both need B and the output C, not
    # A's values, so Div in place on A is fine (dA is then written over dC).
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    a, b = op.input
    _no_in_place(op, "Div", [b])
    if not _is_broadcast(op):
        return _numpy_grad(op, dy, "DivGradient", with_output=True)
    ga, gb = _grad_name(a), _grad_name(b)
    if a == b:
        gb = _grad_name(b) + "_autogen_div_1"   # y = x / x: two contributions, summed by the backward pass
    args = [x for x in op.arg if x.name in ("broadcast", "axis", "axis_str", "order")]
    return [_make(op, "DivGradient", [b, op.output[0], dy], [ga, gb], args=args)], [ga, gb]


# ---------------------------------------------------------------- Max
@GradientRegistry.RegisterGradient("Max")
def _max_grad(op, g_output):
    # dXi = dY where Xi == Y (every tied input), from Y and the inputs
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    _no_in_place(op, "Max", list(op.input))
    g, seen = [], set()
    for i, x in enumerate(op.input):
        name = _grad_name(x)
        if x in seen:   # the same blob twice: a name of its own per use, summed by the backward pass
            name = "%s_autogen_max_%d" % (name, i)
        seen.add(x)
        g.append(name)
    return [_make(op, "MaxGradient", [op.output[0], dy] + list(op.input), g)], g


# ---------------------------------------------------------------- unary
def _unary_from_output(grad_type):
    def maker(op, g_output):
        dy = g_output[0]
        if dy is None:
            return _no_grad(op)
        gx = _grad_name(op.input[0])
        return [_make(op, grad_type, [op.output[0], dy], [gx])], [gx]
    maker.__name__ = "_%s_maker" % grad_type.lower()
    return maker


for _t in ("Sigmoid", "Tanh", "Relu"):
    GradientRegistry.RegisterGradient(_t)(_unary_from_output(_t + "Gradient"))


@GradientRegistry.RegisterGradient("Scale")
def _scale_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    gx = _grad_name(op.input[0])
    return [_make(op, "Scale", [dy], [gx], scale=float(_arg(op, "scale", 1.0)))], [gx]


def _grad_from_x(op, g_output, grad_type, x_first=True, args=None):
    """One gradient op ``grad_type`` reading the forward input X and dY
    (``[X, dY]``, or ``[dY, X]`` with ``x_first=False``) into dX; refused
    when the forward op ran in place (X is gone)."""
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    x = op.input[0]
    _no_in_place(op, op.type, [x])
    gx = _grad_name(x)
    return [_make(op, grad_type, [x, dy] if x_first else [dy, x], [gx], args=args)], [gx]


@GradientRegistry.RegisterGradient("Pow")
def _pow_grad(op, g_output):
    if len(op.input) == 2:
        # exponent tensor E: PowGradient (dY, X, E, Y) -> (dX, dE), as Caffe2's newer maker; the op sums
        # over the broadcast dims. It needs X, E and Y, so Pow in place (on X or E) is refused, as Caffe2.
        dy = g_output[0]
        if dy is None:
            return _no_grad(op)
        x, e = op.input
        _no_in_place(op, "Pow", [x, e])
        gx = _grad_name(x)
        ge = _grad_name(e) if e != x else _grad_name(x) + "_autogen_pow_1"
        args = [a for a in op.arg if a.name in ("broadcast", "axis", "axis_str", "order")]
        return [_make(op, "PowGradient", [dy, x, e, op.output[0]], [gx, ge], args=args)], [gx, ge]
    # PowGradient (X, dY) -> dX = exponent X^(exponent - 1) dY
    return _grad_from_x(op, g_output, "PowGradient", args=[a for a in op.arg if a.name == "exponent"])


@GradientRegistry.RegisterGradient("Sqr")
def _sqr_grad(op, g_output):
    # SqrGradient (X, dY) -> dX = 2 X dY: one op where Caffe2 used Scale(dY, 2) in place (which
    # overwrote the output gradient) and Mul; the same value: 2 X is exact.
    return _grad_from_x(op, g_output, "SqrGradient")


@GradientRegistry.RegisterGradient("Negative")
def _negative_grad(op, g_output):
    # dX = -dY (in place on dY when the forward op ran in place), as Caffe2
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    gx = _grad_name(op.input[0])
    return [_make(op, "Negative", [dy], [gx])], [gx]


@GradientRegistry.RegisterGradient("Log")
def _log_grad(op, g_output):
    # dX = dY / X with Div, as Caffe2 (exact: one IEEE division)
    return _grad_from_x(op, g_output, "Div", x_first=False)


@GradientRegistry.RegisterGradient("Exp")
def _exp_grad(op, g_output):
    # dX = Y * dY with Mul of the output, as Caffe2 (so Exp in place is fine)
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    gx = _grad_name(op.input[0])
    return [_make(op, "Mul", [op.output[0], dy], [gx])], [gx]


@GradientRegistry.RegisterGradient("ElementwiseLinear")
def _elementwise_linear_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    x, a, b = op.input
    g = [_grad_name(x), _grad_name(a), _grad_name(b)]
    return [_make(op, "ElementwiseLinearGradient", [dy, x, a], g, args=op.arg)], g


# ---------------------------------------------------------------- Cast, comparisons, Conditional
_FLOAT_TYPES = {1: "FLOAT", 12: "FLOAT16", 13: "DOUBLE"}


def _is_float_type(v):
    """Whether a Cast 'to' / 'from_type' value (enum int or name) is a floating type."""
    if isinstance(v, bytes):
        v = v.decode()
    if isinstance(v, str):
        return v.upper() in _FLOAT_TYPES.values()
    return int(v) in _FLOAT_TYPES


@GradientRegistry.RegisterGradient("Cast")
def _cast_grad(op, g_output):
    # Caffe2's maker cast dY back to the input type (given as 'from_type'). Our
    # blobs are float32 or int32: a cast to a floating type passes dY through
    # (Cast to FLOAT: a copy); a cast to an integer or bool type, or from one
    # named by 'from_type', has no meaningful gradient (None).
    dy = g_output[0]
    to = _arg(op, "to")
    to = 1 if to is None else to  # FLOAT when absent (Caffe2's last release)
    if dy is None or not _is_float_type(to):
        return _no_grad(op)
    src = _arg(op, "from_type")
    if src is not None and not _is_float_type(src):
        return _no_grad(op)
    gx = _grad_name(op.input[0])
    return [_make(op, "Cast", [dy], [gx], to=1)], [gx]


@GradientRegistry.RegisterGradient("RowMul")
def _row_mul_grad(op, g_output):
    """Caffe2's GetRowMulGradient: RowMul(dY, w) -> mat_grad; Mul(dY, mat) -> <w_grad>before_aggregate,
    then ReduceTailSum of it -> w_grad (shape (N,), whatever w's shape)."""
    dy = g_output[0]
    if dy is None:
        return _no_grad(op)
    mat, w = op.input
    gm, gw = _grad_name(mat), _grad_name(w)
    tmp = gw + "before_aggregate"
    return [_make(op, "RowMul", [dy, w], [gm]), _make(op, "Mul", [dy, mat], [tmp]),
            _make(op, "ReduceTailSum", [tmp], [gw])], [gm, gw]


# Caffe2: comparison ops, Conditional and the logical ops have no gradient (NO_GRADIENT /
# SHOULD_NOT_DO_GRADIENT).
GradientRegistry.RegisterShouldNotDoGradient("EQ", "NE", "LT", "LE", "GT", "GE")
GradientRegistry.RegisterNoGradient("Conditional")
# SumInt: int32 (Caffe2 registered no maker); Accumulate: Caffe2's SHOULD_NOT_DO_GRADIENT
GradientRegistry.RegisterNoGradient("SumInt", "Accumulate")
# ScaleBlobs (csrc/ops/math.c) has no gradient maker, as in Caffe2 (scale_blobs_op.cc registers none): a
# gradient that must flow through it is an error naming the op (Scale, one blob at a time, has one).
GradientRegistry.RegisterShouldNotDoGradient("And", "Or", "Xor", "Not", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
