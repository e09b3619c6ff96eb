"""Shape functions of the reductions, losses and normalizations: the op types of csrc/ops/reduce.c,
metric.c, member_hist.c, loss.c, loss2.c, loss3.c, moments.c, layer_norm.c, norm.c, lrn.c, dropout.c,
the n-ary Sum / Max / SumInt and ReduceTailSum (csrc/ops/math.c) and Mean (csrc/ops/unary.c).

Each function mirrors its op's C shape checks (the ``*_check`` / ``*_shapes`` functions there):
inputs the op certainly refuses (a known wrong dtype, shapes that do not fit, an axis out of
range) raise ShapeError; what only the values decide (labels in range, lengths in range,
probabilities summing to 1) is left to the run.

Worth knowing:
- Scalar outputs: the losses and whole-tensor sums (AveragedLoss, SumElements, SumSqrElements,
  SoftmaxWithLoss's and SpatialSoftmaxWithLoss's loss, Accuracy, Perplexity) are 0-d ``()``; LpNorm's is
  ``(1,)``. The row distances (SquaredL2Distance, L1Distance, DotProduct, CosineSimilarity,
  CrossEntropy, LabelCrossEntropy) are ``(N,)`` with N = dims[0] (1 for a 0-d / 1-D X where the C
  code says so).
- ``Reduce{Front,Back}{Sum,Mean}Gradient`` may take X's *shape* (an int32 1-D tensor) as input 1
  instead of X: dX's shape is then that tensor's values, so it is not inferred (nor when input 1's
  dtype is UNDEFINED, as it could be either).
- ArgMax / ArgMin / RowWiseArgMax give INT32 and Dropout's mask INT32 (bools are int32 here),
  whatever the input dtype, SumInt INT32, MultiClassAccuracy's counts, IsMemberOf's 0 / 1 and
  AccumulateHistogram's two histograms INT32; every other output
  here is FLOAT (these ops only write float32).
- What the op refuses at creation (an argument of the wrong kind or out of its range, a number of
  inputs or outputs its schema or arguments do not allow) leaves the outputs unknown rather than
  guessed; the run fails anyway.
- Every op type here has a function; none is in ``not_inferred``.
"""

import math

import numpy as np

from .shape_inference import (FLOAT, INT32, UNDEFINED, ShapeError, Tensor, args, broadcast, register,
                              size)

MAX_DIMS = 8  # RC_MAX_DIMS (csrc/core/rc_core.h)
_DT_NAME = {FLOAT: "float32", INT32: "int32"}


class _Odd(Exception):
    """An argument of the wrong kind: the op fails at creation; the outputs are left unknown."""


def _shape_fn(*op_types):
    """register(), with _Odd turned into unknown outputs (the engine refuses an op whose count of
    inputs or outputs its schema refuses)."""
    def deco(f):
        def g(op, ins):
            try:
                return f(op, ins)
            except _Odd:
                return [None] * len(op.output)
        g.__name__ = f.__name__
        g.__doc__ = f.__doc__
        return register(*op_types)(g)
    return deco


def _int(a, name, default):
    v = a.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Odd()
    return v


def _float(a, name, default):
    v = a.get(name, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Odd()
    return float(v)


def _str(a, name, default):
    v = a.get(name, default)
    if isinstance(v, bytes):
        v = v.decode()
    if not isinstance(v, str):
        raise _Odd()
    return v


def _ints(a, name):
    v = a.get(name)
    if v is None:
        return []
    if not isinstance(v, (list, tuple)) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
        raise _Odd()
    return list(v)


def F(shape):
    return Tensor(tuple(shape), FLOAT)


def _dt(op, ins, i, want):
    """Input i must be of dtype ``want`` (an UNDEFINED dtype may be anything)."""
    d = ins[i].dtype
    if d != UNDEFINED and d != want:
        raise ShapeError("%s: input %d '%s' must be %s, got dtype %d" % (
            op.type, i, op.input[i], _DT_NAME[want], d))


def _f32(op, ins, *idx):
    for i in idx:
        _dt(op, ins, i, FLOAT)


def _axis(op, axis, ndim, what="axis"):
    """The C code's canonical axis: in [-ndim, ndim), so a 0-d input has none."""
    if not -ndim <= axis < ndim:
        raise ShapeError("%s: %s %d is out of range for %d dims" % (op.type, what, axis, ndim))
    return axis + ndim if axis < 0 else axis


def _same(op, ins, a, b):
    if ins[a].shape != ins[b].shape:
        raise ShapeError("%s: input %d %s and input %d %s must have the same shape" % (
            op.type, a, list(ins[a].shape), b, list(ins[b].shape)))


def _want(op, ins, i, shape, what):
    if ins[i].shape != tuple(shape):
        raise ShapeError("%s: input %d '%s' (%s) must have shape %s, got %s" % (
            op.type, i, op.input[i], what, list(shape), list(ins[i].shape)))


def _one_value(op, ins, i):
    _f32(op, ins, i)
    if size(ins[i].shape) != 1:
        raise ShapeError("%s: input %d '%s' must hold one value, got %s" % (
            op.type, i, op.input[i], list(ins[i].shape)))


def _rows(shape):
    """N (dims[0], 1 for a 0-d tensor) of the row ops of loss.c / loss2.c."""
    return shape[0] if shape else 1


# ================================================================ reduce.c

def _reduce_plan(op, shape):
    """(output shape, reduced size, output size) of the Reduce* / ReduceFront* / ReduceBack* op for
    an X of ``shape``."""
    a = args(op)
    t = op.type
    nd = len(shape)
    red = [False] * nd
    if t.startswith("ReduceFront") or t.startswith("ReduceBack"):
        k = _int(a, "num_reduce_dim", 1)
        if k < 0:
            raise _Odd()
        if k > nd:
            raise ShapeError("%s: num_reduce_dim %d is larger than the rank of %s" % (t, k, list(shape)))
        for d in range(k):
            red[d if t.startswith("ReduceFront") else nd - 1 - d] = True
        keep = False
    else:
        axes = _ints(a, "axes")
        keep = _int(a, "keepdims", 1) != 0
        if len(axes) > MAX_DIMS:
            raise _Odd()
        if not axes:
            red = [True] * nd
        for ax in axes:
            if not -nd <= ax < nd:
                raise ShapeError("%s: axis %d in 'axes' is out of range for %s" % (t, ax, list(shape)))
            c = ax + nd if ax < 0 else ax
            if red[c]:
                raise ShapeError("%s: axis %d in 'axes' repeats dim %d" % (t, ax, c))
            red[c] = True
    out, n_red, n_out = [], 1, 1
    for d in range(nd):
        if red[d]:
            n_red *= shape[d]
            if keep:
                out.append(1)
        else:
            n_out *= shape[d]
            out.append(shape[d])
    return tuple(out), n_red, n_out


def _lengths(op, ins, li, n_out):
    _dt(op, ins, li, INT32)
    if ins[li].shape != (n_out,):
        raise ShapeError("%s: input %d '%s' (lengths) must have shape (%d,), got %s" % (
            op.type, li, op.input[li], n_out, list(ins[li].shape)))


@_shape_fn("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceFrontSum",
           "ReduceFrontMean",
           "ReduceBackSum", "ReduceBackMean", "ReduceFrontMax", "ReduceBackMax")
def _reduce(op, ins):
    _f32(op, ins, 0)
    out, n_red, n_out = _reduce_plan(op, ins[0].shape)
    if len(ins) > 1:
        _lengths(op, ins, 1, n_out)
    if ("Max" in op.type or "Min" in op.type) and n_red == 0 and n_out > 0:
        raise ShapeError("%s: the max / min of 0 elements (a reduced dim of %s has size 0)" % (
            op.type, list(ins[0].shape)))
    return [F(out)]


@_shape_fn("ReduceSumGradient", "ReduceMeanGradient", "ReduceMaxGradient", "ReduceMinGradient",
           "ReduceL1Gradient", "ReduceL2Gradient",
           "ReduceFrontSumGradient", "ReduceFrontMeanGradient", "ReduceBackSumGradient",
           "ReduceBackMeanGradient", "ReduceFrontMaxGradient", "ReduceBackMaxGradient")
def _reduce_grad(op, ins):
    t = op.type
    fb = t.startswith("ReduceFront") or t.startswith("ReduceBack")
    has_y = not fb or "Max" in t
    li = 3 if has_y else 2
    _f32(op, ins, 0)
    if has_y:
        _f32(op, ins, 2)
    x = ins[1]
    if not has_y and x.dtype != FLOAT:
        # X given as its shape (int32) or maybe (UNDEFINED): dX's shape is in the values
        if x.dtype == INT32:
            if len(x.shape) != 1 or x.shape[0] > MAX_DIMS:
                raise ShapeError("%s: input 1 '%s' %s is int32, so X's shape: it must be 1-D with at most %d "
                                 "entries" % (t, op.input[1], list(x.shape), MAX_DIMS))
            if len(ins) > li:
                _dt(op, ins, li, INT32)
        return [None]
    _f32(op, ins, 1)
    out, n_red, n_out = _reduce_plan(op, x.shape)
    if ins[0].shape != out:
        raise ShapeError("%s: dY %s must have the forward output's shape %s for X %s" % (
            t, list(ins[0].shape), list(out), list(x.shape)))
    if has_y:
        _same(op, ins, 2, 0)
    if fb and len(ins) > li:
        _lengths(op, ins, li, n_out)
    return [F(x.shape)]


@_shape_fn("ArgMax", "ArgMin")
def _argmax(op, ins):
    a = args(op)
    axis, keep = _int(a, "axis", -1), _int(a, "keepdims", 1) != 0
    _f32(op, ins, 0)
    shape = ins[0].shape
    if not shape:
        raise ShapeError("%s: input 0 must have at least 1 dim, got ()" % op.type)
    ax = _axis(op, axis, len(shape))
    if shape[ax] == 0 and size(shape[:ax]) * size(shape[ax + 1:]) > 0:
        raise ShapeError("%s: dim %d of %s has size 0: no position to give" % (op.type, ax, list(shape)))
    if shape[ax] > 2 ** 31 - 1:
        raise ShapeError("%s: dim %d of %s is larger than int32" % (op.type, ax, list(shape)))
    out = shape[:ax] + ((1,) if keep else ()) + shape[ax + 1:]
    return [Tensor(out, INT32)]


@_shape_fn("RowWiseArgMax")
def _rowwise_argmax(op, ins):
    """X float32 (N, D) -> (N, 1) int32; D = 0 with N > 0 refused, as ArgMax's empty axis."""
    _f32(op, ins, 0)
    shape = ins[0].shape
    if len(shape) != 2:
        raise ShapeError("RowWiseArgMax: input 0 must be 2-D, got %s" % list(shape))
    if shape[1] == 0 and shape[0] > 0:
        raise ShapeError("RowWiseArgMax: %s has rows of 0 elements: no position to give" % list(shape))
    if shape[1] > 2 ** 31 - 1:
        raise ShapeError("RowWiseArgMax: dim 1 of %s is larger than int32" % list(shape))
    return [Tensor((shape[0], 1), INT32)]


@_shape_fn("ReduceTailSum")
def _reduce_tail_sum(op, ins):
    """mat float32 (N, ...) -> (N,)."""
    _f32(op, ins, 0)
    if not ins[0].shape:
        raise ShapeError("ReduceTailSum: input 0 must have at least 1 dim, got ()")
    return [F(ins[0].shape[:1])]


@_shape_fn("Accuracy")
def _accuracy(op, ins):
    if _int(args(op), "top_k", 1) < 1:
        raise _Odd()
    _f32(op, ins, 0)
    _dt(op, ins, 1, INT32)
    x, l = ins[0].shape, ins[1].shape
    if len(x) != 2 or len(l) != 1:
        raise ShapeError("Accuracy: prediction must be 2-D and label 1-D, got %s and %s" % (list(x), list(l)))
    if l[0] != x[0]:
        raise ShapeError("Accuracy: label %s must have one entry per row of prediction %s" % (
            list(l), list(x)))
    if x[0] == 0:
        raise ShapeError("Accuracy: prediction %s has no rows" % list(x))
    return [F(())]


@_shape_fn("Perplexity")
def _perplexity(op, ins):
    """P float32 (N,) -> () (csrc/ops/metric.c)."""
    _f32(op, ins, 0)
    if len(ins[0].shape) != 1:
        raise ShapeError("Perplexity: input 0 must be 1-D, got %s" % list(ins[0].shape))
    return [F(())]


@_shape_fn("MultiClassAccuracy")
def _multi_class_accuracy(op, ins):
    """X float32 (N, D), LABEL int32 (N,) -> ACC float32 (D,), COUNT int32 (D,) (csrc/ops/metric.c)."""
    _f32(op, ins, 0)
    _dt(op, ins, 1, INT32)
    x, l = ins[0].shape, ins[1].shape
    if len(x) != 2 or len(l) != 1 or l[0] != x[0]:
        raise ShapeError("MultiClassAccuracy: prediction must be 2-D (N, D) and label (N,), got %s and %s" % (
            list(x), list(l)))
    if x[0] > 2 ** 31 - 1:
        raise ShapeError("MultiClassAccuracy: prediction %s has more rows than int32 counts hold" % list(x))
    return [F((x[1],)), Tensor((x[1],), INT32)]


@_shape_fn("IsMemberOf")
def _is_member_of(op, ins):
    """X int32 -> Y int32 0 / 1 of X's shape (csrc/ops/member_hist.c); unknown for the arguments
    the op refuses at creation (a 'dtype' it does not take, a value outside int32)."""
    a = args(op)
    if _int(a, "dtype", 0) not in (0, 2, 5, 10):
        raise _Odd()
    if any(not -2 ** 31 <= v < 2 ** 31 for v in _ints(a, "value")):
        raise _Odd()
    _dt(op, ins, 0, INT32)
    return [Tensor(tuple(ins[0].shape), INT32)]


@_shape_fn("AccumulateHistogram")
def _accumulate_histogram(op, ins):
    """X float32 -> CUR_HIST, ACC_HIST int32 (num_buckets + 2,) (csrc/ops/member_hist.c); unknown
    for the arguments the op refuses at creation (its bounds and bucket width checked in float32)."""
    a = args(op)
    nb = _int(a, "num_buckets", 1)
    lo, hi = np.float32(_float(a, "lower_bound", 0.0)), np.float32(_float(a, "upper_bound", 1.0))
    if not 1 <= nb <= 2 ** 31 - 3 or not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise _Odd()
    with np.errstate(over="ignore", under="ignore"):
        seg = (hi - lo) / np.float32(nb)
    if not (np.isfinite(seg) and seg > 0):
        raise _Odd()
    _f32(op, ins, 0)
    if size(ins[0].shape) > 2 ** 31 - 1:
        raise ShapeError("AccumulateHistogram: input 0 %s has more elements than int32 counts hold" % (
            list(ins[0].shape),))
    return [Tensor((nb + 2,), INT32), Tensor((nb + 2,), INT32)]


# ================================================================ loss.c

@_shape_fn("SquaredL2Distance", "L1Distance", "DotProduct", "CosineSimilarity")
def _row_distance(op, ins):
    _f32(op, ins, 0, 1)
    _same(op, ins, 0, 1)
    return [F((_rows(ins[0].shape),))]


@_shape_fn("SquaredL2DistanceGradient", "L1DistanceGradient", "DotProductGradient",
           "CosineSimilarityGradient")
def _row_distance_grad(op, ins):
    _f32(op, ins, 0, 1, 2)
    _same(op, ins, 0, 1)
    _want(op, ins, 2, (_rows(ins[0].shape),), "the output gradient")
    return [F(ins[0].shape), F(ins[0].shape)]


def _flag(a, name):
    v = _int(a, name, 0)
    if v not in (0, 1):
        raise _Odd()
    return v


@_shape_fn("AveragedLoss", "SumElements", "SumSqrElements")
def _sum_elements(op, ins):
    if op.type != "AveragedLoss":
        _flag(args(op), "average")
    _f32(op, ins, 0)
    return [F(())]


@_shape_fn("AveragedLossGradient", "SumElementsGradient", "SumSqrElementsGradient")
def _sum_elements_grad(op, ins):
    if op.type != "AveragedLossGradient":
        _flag(args(op), "average")
    _f32(op, ins, 0)
    _one_value(op, ins, 1)
    return [F(ins[0].shape)]


@_shape_fn("Softmax")
def _softmax(op, ins):
    axis = _int(args(op), "axis", 1)
    _f32(op, ins, 0)
    _axis(op, axis, len(ins[0].shape))
    return [F(ins[0].shape)]


@_shape_fn("SoftmaxGradient")
def _softmax_grad(op, ins):
    axis = _int(args(op), "axis", 1)
    _f32(op, ins, 0, 1)
    _same(op, ins, 0, 1)
    _axis(op, axis, len(ins[0].shape))
    return [F(ins[0].shape)]


def _swl_args(op):
    a = args(op)
    axis = _int(a, "axis", 1)
    label_prob = _flag(a, "label_prob")
    _float(a, "scale", 1.0)
    sp = a.get("spatial", 0)
    if isinstance(sp, bool) or not isinstance(sp, int) or sp != 0:
        raise _Odd()
    return axis, label_prob


def _swl_inputs(op, ins, wi):
    """SoftmaxWithLoss(+Gradient)'s logits, labels and weights (input wi, None: none)."""
    axis, label_prob = _swl_args(op)
    _f32(op, ins, 0)
    x = ins[0].shape
    ax = _axis(op, axis, len(x))
    N, D = size(x[:ax]), size(x[ax:])
    t = ins[1].shape
    if label_prob:
        _dt(op, ins, 1, FLOAT)
        if len(t) <= ax or size(t[:ax]) != N or size(t[ax:]) != D:
            raise ShapeError("%s: labels %s (label_prob=1) must split at axis %d into %d x %d like "
                             "logits %s" % (op.type, list(t), ax, N, D, list(x)))
    else:
        _dt(op, ins, 1, INT32)
        if size(t) != N or (len(t) > ax and size(t[:ax]) != N):
            raise ShapeError("%s: labels %s must hold one label per row (N=%d) of logits %s split at "
                             "axis %d" % (op.type, list(t), N, list(x), ax))
    if wi is not None:
        _dt(op, ins, wi, FLOAT)
        w = ins[wi].shape
        if len(w) < 1 or size(w) != N:
            raise ShapeError("%s: weights %s must hold one weight per row (%d)" % (op.type, list(w), N))


@_shape_fn("SoftmaxWithLoss")
def _softmax_with_loss(op, ins):
    _swl_inputs(op, ins, 2 if len(ins) > 2 else None)
    return [F(ins[0].shape), F(())]


@_shape_fn("SoftmaxWithLossGradient")
def _softmax_with_loss_grad(op, ins):
    n = len(ins)
    _swl_inputs(op, ins, 2 if n == 5 else None)
    _f32(op, ins, n - 2)
    _same(op, ins, 0, n - 2)
    _one_value(op, ins, n - 1)
    return [F(ins[0].shape)]


def _sswl_inputs(op, ins, wi):
    a = args(op)
    _float(a, "scale", 1.0)
    if _str(a, "order", "NCHW") != "NCHW":
        raise _Odd()
    _f32(op, ins, 0)
    _dt(op, ins, 1, INT32)
    x = ins[0].shape
    if len(x) != 4:
        raise ShapeError("%s: logits must be 4-D (N, D, H, W), got %s" % (op.type, list(x)))
    for i in (1, wi):
        if i is None:
            continue
        if i != 1:
            _dt(op, ins, i, FLOAT)
        _want(op, ins, i, (x[0], x[2], x[3]), "labels" if i == 1 else "weights")


@_shape_fn("SpatialSoftmaxWithLoss")
def _spatial_softmax_with_loss(op, ins):
    _sswl_inputs(op, ins, 2 if len(ins) > 2 else None)
    return [F(ins[0].shape), F(())]


@_shape_fn("SpatialSoftmaxWithLossGradient")
def _spatial_softmax_with_loss_grad(op, ins):
    n = len(ins)
    _sswl_inputs(op, ins, 2 if n == 5 else None)
    _f32(op, ins, n - 2)
    _same(op, ins, 0, n - 2)
    _one_value(op, ins, n - 1)
    return [F(ins[0].shape)]


def _n_d(op, ins):
    """N, D of LabelCrossEntropy / CrossEntropy's X: (N, ...) or (D,) (N = 1)."""
    x = ins[0].shape
    if len(x) < 1:
        raise ShapeError("%s: input 0 must have at least 1 dim, got ()" % op.type)
    return (x[0], size(x[1:])) if len(x) > 1 else (1, x[0])


@_shape_fn("LabelCrossEntropy", "LabelCrossEntropyGradient")
def _label_cross_entropy(op, ins):
    _f32(op, ins, 0)
    N, _ = _n_d(op, ins)
    _dt(op, ins, 1, INT32)
    l = ins[1].shape
    if not ((len(l) == 1 or (len(l) == 2 and l[1] == 1)) and l[0] == N):
        raise ShapeError("%s: label %s must be (%d,) or (%d, 1) for X %s" % (
            op.type, list(l), N, N, list(ins[0].shape)))
    if op.type == "LabelCrossEntropy":
        return [F((N,))]
    _f32(op, ins, 2)
    _want(op, ins, 2, (N,), "the loss gradient")
    return [F(ins[0].shape)]


# ================================================================ loss2.c

@_shape_fn("CrossEntropy", "CrossEntropyGradient")
def _cross_entropy(op, ins):
    _f32(op, ins, 0, 1)
    N, D = _n_d(op, ins)
    x, l = ins[0].shape, ins[1].shape
    if not (l == x or l == (N, D) or (len(l) == 1 and D == 1 and l[0] == N)):
        raise ShapeError("%s: label %s must hold N x D = %d x %d values for X %s" % (
            op.type, list(l), N, D, list(x)))
    if op.type == "CrossEntropy":
        return [F((N,))]
    _f32(op, ins, 2)
    _want(op, ins, 2, (N,), "the loss gradient")
    return [F(x)]


def _sx_mode(op):
    if op.type.startswith("Weighted"):
        return
    a = args(op)
    if _flag(a, "log_D_trick") and _flag(a, "unjoined_lr_loss"):
        raise _Odd()


def _sx_inputs(op, ins, li, weighted):
    _sx_mode(op)
    _f32(op, ins, *range(li, li + (3 if weighted else 2)))
    _same(op, ins, li, li + 1)
    if weighted:
        _same(op, ins, li, li + 2)
    return ins[li].shape


@_shape_fn("SigmoidCrossEntropyWithLogits", "WeightedSigmoidCrossEntropyWithLogits")
def _sigmoid_xent(op, ins):
    x = _sx_inputs(op, ins, 0, len(ins) == 3)
    return [F(x[:-1])]


@_shape_fn("SigmoidCrossEntropyWithLogitsGradient", "WeightedSigmoidCrossEntropyWithLogitsGradient")
def _sigmoid_xent_grad(op, ins):
    x = _sx_inputs(op, ins, 1, len(ins) == 4)
    _f32(op, ins, 0)
    outer = size(x[:-1]) if x else 1
    if size(ins[0].shape) != outer:
        raise ShapeError("%s: the loss gradient %s must hold %d values (the rows of %s)" % (
            op.type, list(ins[0].shape), outer, list(x)))
    return [F(x)]


@_shape_fn("MakeTwoClass")
def _make_two_class(op, ins):
    _f32(op, ins, 0)
    x = ins[0].shape
    if len(x) >= MAX_DIMS:
        raise ShapeError("MakeTwoClass: input %s has %d dims: the output would have more than %d" % (
            list(x), len(x), MAX_DIMS))
    return [F(x + (2,))]


@_shape_fn("MakeTwoClassGradient")
def _make_two_class_grad(op, ins):
    _f32(op, ins, 0)
    g = ins[0].shape
    if len(g) < 1 or g[-1] != 2:
        raise ShapeError("MakeTwoClassGradient: dY %s must have a last dim of size 2" % list(g))
    return [F(g[:-1])]


@_shape_fn("Normalize", "NormalizeL1", "NormalizeGradient")
def _normalize(op, ins):
    axis = _int(args(op), "axis", -1)
    _f32(op, ins, 0)
    _axis(op, axis, len(ins[0].shape))
    if op.type == "NormalizeGradient":
        _f32(op, ins, 1)
        _same(op, ins, 0, 1)
    return [F(ins[0].shape)]


# ================================================================ loss3.c

def _margin(op):
    _float(args(op), "margin", 0.0)


def _elem(op, ins, ref, lab):
    """Every input float32 but input lab (int32), each as many values as input ref."""
    for i in range(len(ins)):
        _dt(op, ins, i, INT32 if i == lab else FLOAT)
    n = size(ins[ref].shape)
    for i, t in enumerate(ins):
        if size(t.shape) != n:
            raise ShapeError("%s: input %d %s must hold as many values as input %d %s (%d)" % (
                op.type, i, list(t.shape), ref, list(ins[ref].shape), n))


@_shape_fn("MarginRankingCriterion")
def _margin_ranking(op, ins):
    _margin(op)
    _elem(op, ins, 0, 2)
    return [F(ins[0].shape)]


@_shape_fn("MarginRankingCriterionGradient")
def _margin_ranking_grad(op, ins):
    _margin(op)
    _elem(op, ins, 0, 2)
    return [F(ins[0].shape), F(ins[1].shape)]


@_shape_fn("CosineEmbeddingCriterion", "CosineEmbeddingCriterionGradient")
def _cosine_embedding(op, ins):
    _margin(op)
    _elem(op, ins, 0, 1)
    return [F(ins[0].shape)]


@_shape_fn("BernoulliJSD")
def _jsd(op, ins):
    _elem(op, ins, 0, -1)
    return [F(ins[0].shape)]


@_shape_fn("BernoulliJSDGradient")
def _jsd_grad(op, ins):
    _elem(op, ins, 1, -1)
    return [F(ins[1].shape)]


def _pwl(op, ins, li):
    """PairWiseLoss's X, label and lengths (input li, None: none) -> the number of sessions."""
    _f32(op, ins, 0, 1)
    if li is not None:
        _dt(op, ins, li, INT32)
        if len(ins[li].shape) != 1:
            raise ShapeError("%s: lengths %s must be 1-D" % (op.type, list(ins[li].shape)))
    x, l = ins[0].shape, ins[1].shape
    if len(x) < 1 or size(x) != x[0]:
        raise ShapeError("%s: X %s must hold one score per row: (N,) or (N, 1)" % (op.type, list(x)))
    N = x[0]
    if not ((len(l) == 1 or (len(l) == 2 and l[1] == 1)) and l[0] == N):
        raise ShapeError("%s: label %s must have shape (%d,) or (%d, 1)" % (op.type, list(l), N, N))
    return ins[li].shape[0] if li is not None else int(N > 0)


@_shape_fn("PairWiseLoss")
def _pair_wise_loss(op, ins):
    return [F((_pwl(op, ins, 2 if len(ins) == 3 else None),))]


@_shape_fn("PairWiseLossGradient")
def _pair_wise_loss_grad(op, ins):
    S = _pwl(op, ins, 3 if len(ins) == 4 else None)
    _f32(op, ins, 2)
    _want(op, ins, 2, (S,), "the loss gradient")
    return [F(ins[0].shape)]


# ================================================================ moments.c

def _lp_args(op):
    a = args(op)
    if _int(a, "p", 2) not in (1, 2):
        raise _Odd()
    avg = _int(a, "average", 0)
    if avg not in (0, 1):
        raise _Odd()
    return avg


def _lp_x(op, ins):
    _f32(op, ins, 0)
    if _lp_args(op) and size(ins[0].shape) == 0:
        raise ShapeError("%s: average=1 of an empty X %s" % (op.type, list(ins[0].shape)))


@_shape_fn("LpNorm")
def _lp_norm(op, ins):
    _lp_x(op, ins)
    return [F((1,))]


@_shape_fn("LpNormGradient")
def _lp_norm_grad(op, ins):
    _lp_x(op, ins)
    _one_value(op, ins, 1)
    return [F(ins[0].shape)]


def _nhwc(op):
    order = _str(args(op), "order", "NCHW")
    if order not in ("NCHW", "NHWC"):
        raise _Odd()
    return order == "NHWC"


def _image(op, ins, xi, nhwc):
    """X (input xi) float32 with >= 2 dims -> (N, C, X's shape)."""
    _f32(op, ins, xi)
    x = ins[xi].shape
    if len(x) < 2:
        raise ShapeError("%s: input %d (X) must have at least 2 dims, got %s" % (op.type, xi, list(x)))
    return x[0], x[-1] if nhwc else x[1], x


@_shape_fn("BatchMoments")
def _batch_moments(op, ins):
    _, C, _ = _image(op, ins, 0, _nhwc(op))
    return [F((C,)), F((C,))]


@_shape_fn("BatchMomentsGradient")
def _batch_moments_grad(op, ins):
    _, C, x = _image(op, ins, 2, _nhwc(op))
    for i, what in ((0, "dmu"), (1, "dvar")):
        _f32(op, ins, i)
        _want(op, ins, i, (C,), what)
    return [F(x)]


@_shape_fn("SinusoidPositionEncoding")
def _sinusoid(op, ins):
    a = args(op)
    E = _int(a, "embedding_size", 100)
    alpha, amp = _float(a, "alpha", 10000.0), _float(a, "amplitude", 1.0)
    inf = float("inf")
    if not 1 <= E <= 2 ** 31 - 1 or not 0 < alpha < inf or not -inf < amp < inf:
        raise _Odd()
    _dt(op, ins, 0, INT32)
    p = ins[0].shape
    if len(p) != 2:
        raise ShapeError("SinusoidPositionEncoding: positions must be 2-D, got %s" % list(p))
    return [F(p + (E,))]


# ================================================================ layer_norm.c

def _ln_args(op):
    a = args(op)
    axis = _int(a, "axis", 1)
    eps = _float(a, "epsilon", 1e-5)
    if not 0 <= eps < float("inf"):
        raise _Odd()
    aff = _int(a, "elementwise_affine", 0)
    if aff not in (0, 1):
        raise _Odd()
    return axis, aff


@_shape_fn("LayerNorm")
def _layer_norm(op, ins):
    axis, aff = _ln_args(op)
    if len(ins) != (3 if aff else 1):
        raise _Odd()
    _f32(op, ins, 0)
    x = ins[0].shape
    ax = _axis(op, axis, len(x))
    if aff:
        for i, what in ((1, "gamma"), (2, "beta")):
            _f32(op, ins, i)
            _want(op, ins, i, x[ax:], what)
    stats = F(x[:ax] + (1,))
    return [F(x), stats, stats]


@_shape_fn("LayerNormGradient")
def _layer_norm_grad(op, ins):
    axis, aff = _ln_args(op)
    if (len(ins), len(op.output)) != ((6, 3) if aff else (5, 1)):
        raise _Odd()
    _f32(op, ins, 4)
    x = ins[4].shape
    ax = _axis(op, axis, len(x))
    wants = [(0, x, "dY"), (1, x, "Y"), (2, x[:ax] + (1,), "mean"), (3, x[:ax] + (1,), "stdev")]
    if aff:
        wants.append((5, x[ax:], "gamma"))
    for i, shape, what in wants:
        _f32(op, ins, i)
        _want(op, ins, i, shape, what)
    return [F(x), F(x[ax:]), F(x[ax:])][:len(op.output)]


# ================================================================ norm.c

def _nm_args(op):
    a = args(op)
    nhwc = _nhwc(op)
    eps = _float(a, "epsilon", 1e-5)
    if not 0 <= eps < float("inf"):
        raise _Odd()
    return a, nhwc


def _group(op, a, C):
    G = _int(a, "group", 32)
    if G < 1:
        raise _Odd()
    if C % G != 0:
        raise ShapeError("%s: group=%d must divide the %d channels" % (op.type, G, C))
    return G


def _params(op, ins, C, *named):
    for i, what in named:
        _f32(op, ins, i)
        _want(op, ins, i, (C,), what)


@_shape_fn("GroupNorm")
def _group_norm(op, ins):
    a, nhwc = _nm_args(op)
    N, C, x = _image(op, ins, 0, nhwc)
    G = _group(op, a, C)
    _params(op, ins, C, (1, "gamma"), (2, "beta"))
    return [F(x), F((N, G)), F((N, G))]


@_shape_fn("GroupNormGradient")
def _group_norm_grad(op, ins):
    a, nhwc = _nm_args(op)
    N, C, x = _image(op, ins, 1, nhwc)
    G = _group(op, a, C)
    _f32(op, ins, 0)
    _want(op, ins, 0, x, "dY")
    _params(op, ins, C, (2, "gamma"), (3, "beta"))
    for i, what in ((4, "mean"), (5, "inv_std")):
        _f32(op, ins, i)
        _want(op, ins, i, (N, G), what)
    return [F(x), F((C,)), F((C,))]


@_shape_fn("InstanceNorm")
def _instance_norm(op, ins):
    _, nhwc = _nm_args(op)
    N, C, x = _image(op, ins, 0, nhwc)
    _params(op, ins, C, (1, "scale"), (2, "bias"))
    return [F(x)] + [F((N, C))] * (len(op.output) - 1)


@_shape_fn("InstanceNormGradient")
def _instance_norm_grad(op, ins):
    _, nhwc = _nm_args(op)
    N, C, x = _image(op, ins, 0, nhwc)
    _params(op, ins, C, (1, "scale"), (2, "bias"))
    _f32(op, ins, 3)
    _want(op, ins, 3, x, "dY")
    for i, what in ((4, "mean"), (5, "inv_stdev")):
        if len(ins) > i:
            _f32(op, ins, i)
            _want(op, ins, i, (N, C), what)
    return [F(x), F((C,)), F((C,))]


def _lrn_image(op, ins, n_same):
    """LRN's arguments (size odd >= 1; alpha, beta, bias finite: else the op refuses creation) and its
    inputs: n_same float32 tensors of X's shape, X with >= 2 dims."""
    a = args(op)
    _nhwc(op)
    n = _int(a, "size", 0)
    if n < 1 or n % 2 == 0 or n > 2 ** 31 - 1:
        raise _Odd()
    if not all(math.isfinite(_float(a, k, d)) for k, d in (("alpha", 0.0), ("beta", 0.0), ("bias", 1.0))):
        raise _Odd()
    _f32(op, ins, *range(n_same))
    x = ins[0].shape
    if len(x) < 2:
        raise ShapeError("%s: input 0 '%s' must have 2 to %d dims, got %s" % (op.type, op.input[0], MAX_DIMS,
                                                                              list(x)))
    for i in range(1, n_same):
        _same(op, ins, i, 0)
    return x


@_shape_fn("LRN")
def _lrn(op, ins):
    return [F(_lrn_image(op, ins, 1))] * len(op.output)


@_shape_fn("LRNGradient")
def _lrn_grad(op, ins):
    return [F(_lrn_image(op, ins, 3))]


def _bn_args(op):
    a, nhwc = _nm_args(op)
    m = _float(a, "momentum", 0.9)
    if m != m or abs(m) == float("inf"):
        raise _Odd()
    test = _int(a, "is_test", 0) != 0
    nb = _int(a, "num_batches", 1)
    if nb < 1 or (nb > 1 and test) or len(op.input) != (7 if nb > 1 else 5):
        raise _Odd()
    return nhwc, test


@_shape_fn("SpatialBN")
def _spatial_bn(op, ins):
    nhwc, test = _bn_args(op)
    if len(op.output) != (1 if test else 5):
        raise _Odd()
    _, C, x = _image(op, ins, 0, nhwc)
    names = [(1, "scale"), (2, "bias"), (3, "mean"), (4, "var")]
    if len(ins) > 5:
        names += [(5, "batch_mean_sum"), (6, "batch_var_sum")]
    _params(op, ins, C, *names)
    return [F(x)] + [F((C,))] * (len(op.output) - 1)


@_shape_fn("SpatialBNGradient")
def _spatial_bn_grad(op, ins):
    nhwc, _ = _bn_args(op)
    _, C, x = _image(op, ins, 0, nhwc)
    _params(op, ins, C, (1, "scale"))
    _f32(op, ins, 2)
    _want(op, ins, 2, x, "dY")
    names = [(3, "mean"), (4, "inv_std or var")]
    if len(ins) > 5:
        names += [(5, "dscale_sum"), (6, "dbias_sum")]
    _params(op, ins, C, *names)
    return [F(x), F((C,)), F((C,))]


# ================================================================ dropout.c

def _dropout_args(op):
    a = args(op)
    r = _float(a, "ratio", 0.5)
    if not 0 <= r < 1:
        raise _Odd()
    return _int(a, "is_test", 0) != 0


@_shape_fn("Dropout")
def _dropout(op, ins):
    test = _dropout_args(op)
    if not test and len(op.output) != 2:
        raise _Odd()
    _f32(op, ins, 0)
    x = ins[0].shape
    return [F(x), Tensor(x, INT32)][:len(op.output)]


@_shape_fn("DropoutGrad")
def _dropout_grad(op, ins):
    test = _dropout_args(op)
    if len(ins) != (1 if test else 2):
        raise _Odd()
    _f32(op, ins, 0)
    if len(ins) > 1:
        _dt(op, ins, 1, INT32)
        _same(op, ins, 1, 0)
    return [F(ins[0].shape)]


# ================================================================ Sum, Max, SumInt (math.c), Mean (unary.c)

def _n_ary(op, ins, dt):
    """Every input of dtype dt and of input 0's shape -> that shape and dtype."""
    for i in range(len(ins)):
        _dt(op, ins, i, dt)
        if i:
            _same(op, ins, i, 0)
    return [Tensor(ins[0].shape, dt)]


@_shape_fn("Sum", "Max")
def _sum(op, ins):
    return _n_ary(op, ins, FLOAT)


@_shape_fn("SumInt")
def _sum_int(op, ins):
    return _n_ary(op, ins, INT32)  # an int32 overflow (a value) is refused when the op runs


@_shape_fn("Mean")
def _mean(op, ins):
    _f32(op, ins, *range(len(ins)))
    shape = ins[0].shape
    for t in ins[1:]:
        shape = broadcast(shape, t.shape, op.type)
    for i, t in enumerate(ins):
        if op.input[i] == op.output[0] and t.shape != shape:
            raise ShapeError("Mean: the output is input %d %s in place, but the inputs broadcast to %s" % (
                i, list(t.shape), list(shape)))
    return [F(shape)]
