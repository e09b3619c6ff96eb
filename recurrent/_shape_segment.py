"""Shape functions of the segment, lengths, ranges and mask ops (csrc/ops/lengths_reduce.c,
sorted_segment.c, segment.c, lengths.c, ranges.c, mask.c).

Most of these ops size an output by the VALUES of an input (a sum of lengths, the last or the
largest segment id, the ones of a mask, the values of Range's inputs); those outputs are not
inferred. What is inferred:

- Lengths{Sum,Mean,WeightedSum,Max} and SparseLengths*: (len(LENGTHS),) + DATA.shape[1:].
- Their gradients where the row count comes from a shape: SCALARS (the WeightedSum ones), DATA
  (LengthsMax's and the dense WithMainInput one) or the extra input of the *IndicesInGradient*
  ops. The plain Lengths{Sum,Mean}Gradient and SparseLengths{Sum,Mean}Gradient have
  sum(LENGTHS) rows: not inferred (the engine's X_grad rule may still name them).
- The SortedSegment* gradients: (len(SEGMENT_IDS),) + the row shape of DATA when the op takes
  DATA, else of dOUT. The SortedSegment* forward ops are not inferred (last id + 1 segments).
- UnsortedSegment* forward ops only with the argument num_segments >= 0 (else max(ids) + 1);
  their gradients always (ids.shape + dOUT.shape[1:]).
- Unique: only REMAPPING (INDICES' shape); UNIQUE depends on the values.
- PackSegments only when T is known: the third input's dim 1, or the argument max_length.
- AddPadding / RemovePadding: data rows +- len(lengths) * (padding_width + end_padding_width)
  (one segment without lengths); RemovePadding and GatherPadding with fewer rows than that are
  refused (ShapeError: no lengths can fit).
- GatherRanges: only LENGTHS (B,); PadEmptySamples: only out_lengths; RemoveDataBlocks only with
  an empty indices input (a copy of data); SegmentIdsToLengths only with data_to_infer_dim.
- NanCheck (Y = X), Assert and EnforceFinite (no outputs) only check X's dtype.
- SegmentIdsToRanges: (K, 2) only with data_to_infer_dim; BooleanUnmask: (M,) the masks' length, the
  values' dtype. FindDuplicateElements is not inferred (one entry per repeated value).

Arguments are read as the C ops read them: the first argument of a name counts (rc_opdef_arg;
``shape_inference.arg``). An argument of a kind or value that the op refuses when it is created
leaves the outputs unknown (the op cannot run); a number of inputs or outputs it refuses is the
engine's (a ShapeError). The checks that refuse (ShapeError) are the C ops' dtype and shape
checks, never their checks of values (lengths summing to the rows, ids in range, sorted ids).
Index outputs are INT32; data outputs keep the data's dtype (UNDEFINED passes through).
"""

import functools
import math

import numpy as np

from .shape_inference import FLOAT, INT32, UNDEFINED, ShapeError, Tensor, arg, not_inferred, register, size

MAX_DIMS = 8  # RC_MAX_DIMS (csrc/core/rc_core.h)
INT32_MAX = 2 ** 31 - 1


class _Unknown(Exception):
    """An argument the op refuses at creation: the outputs stay unknown."""


def _fn(*op_types):
    """register(), with the outputs unknown when the function raises _Unknown (the engine refuses an
    op whose count of inputs or outputs its schema refuses)."""
    def deco(f):
        @functools.wraps(f)
        def g(op, ins):
            try:
                return f(op, ins)
            except _Unknown:
                return [None] * len(op.output)
        return register(*op_types)(g)
    return deco


# ---------------------------------------------------------------- arguments (first one of a name wins)
def _int(op, name, default, lo=None, hi=None):
    a = arg(op, name)
    if a is None:
        v = default
    elif a.kind() == "i":
        v = a.i
    else:
        raise _Unknown()
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _Unknown()
    return v


def _float(op, name, default):
    """rc_arg_f: a float or an int argument, stored as float32."""
    a = arg(op, name)
    if a is None:
        v = default
    elif a.kind() == "f":
        v = a.f
    elif a.kind() == "i":
        v = a.i
    else:
        raise _Unknown()
    return float(np.float32(v))


# ---------------------------------------------------------------- input checks (skipped for UNDEFINED)
def _dtype(op, ins, i, dt, what):
    t = ins[i]
    if t.dtype != UNDEFINED and t.dtype != dt:
        raise ShapeError("%s: input %d '%s' (%s) must be %s, got dtype %d" % (
            op.type, i, op.input[i], what, "float32" if dt == FLOAT else "int32", t.dtype))


def _ndim(op, ins, i, what, lo, hi=None):
    n = len(ins[i].shape)
    if n < lo or (hi is not None and n > hi):
        want = ("%d" % lo if hi == lo else "%d to %d" % (lo, hi)) if hi is not None else "at least %d" % lo
        raise ShapeError("%s: input %d '%s' (%s) must have %s dims, got %s" % (
            op.type, i, op.input[i], what, want, list(ins[i].shape)))


def _f32_rows(op, ins, i, what):
    _dtype(op, ins, i, FLOAT, what)
    _ndim(op, ins, i, what, 1)


def _i32_vec(op, ins, i, what):
    _dtype(op, ins, i, INT32, what)
    _ndim(op, ins, i, what, 1, 1)


def _f32_vec(op, ins, i, what):
    _dtype(op, ins, i, FLOAT, what)
    _ndim(op, ins, i, what, 1, 1)


def _fail(op, msg, *a):
    raise ShapeError("%s: %s" % (op.type, msg % a))


# ================================================================ lengths_reduce.c
# forward: type -> (weighted, sparse, positional)
_LR_FWD = {
    "LengthsSum": (0, 0, 0), "LengthsMean": (0, 0, 0), "LengthsMax": (0, 0, 0),
    "LengthsWeightedSum": (1, 0, 0),
    "SparseLengthsSum": (0, 1, 0), "SparseLengthsMean": (0, 1, 0),
    "SparseLengthsWeightedSum": (1, 1, 0), "SparseLengthsPositionalWeightedSum": (1, 1, 1),
}


@_fn(*_LR_FWD)
def _lengths_reduce(op, ins):
    weighted, sparse, positional = _LR_FWD[op.type]
    if weighted and not positional:
        _int(op, "grad_on_weights", 0, lo=0, hi=1)
    nxt = 1
    w = idx = -1
    if weighted:
        w, nxt = nxt, nxt + 1
    if sparse:
        idx, nxt = nxt, nxt + 1
    ln = nxt
    _f32_rows(op, ins, 0, "data")
    if sparse:
        _i32_vec(op, ins, idx, "indices")
    _i32_vec(op, ins, ln, "lengths")
    if w >= 0:
        _f32_vec(op, ins, w, "positional weights" if positional else "scalars")
        rows = idx if sparse else 0
        if not positional and ins[w].shape[0] != ins[rows].shape[0]:
            _fail(op, "scalars %s must hold one weight per row: %d", list(ins[w].shape), ins[rows].shape[0])
    return [Tensor((ins[ln].shape[0],) + ins[0].shape[1:], FLOAT)]


# gradients: type -> (weighted, variant, sparse); variants as the C code's
_PLAIN, _MAIN, _MAX, _IND = range(4)
_LR_GRAD = {
    "LengthsWeightedSumGradient": (1, _PLAIN, 0),
    "LengthsWeightedSumWithMainInputGradient": (1, _MAIN, 0),
    "LengthsMaxWithMainInputAndForwardOutputGradient": (0, _MAX, 0),
    "SparseLengthsWeightedSumGradient": (1, _PLAIN, 1),
    "SparseLengthsWeightedSumWithMainInputGradient": (1, _MAIN, 1),
    "SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient": (1, _MAIN, 1),
    "LengthsIndicesInGradientSumGradient": (0, _IND, 0),
    "LengthsIndicesInGradientMeanGradient": (0, _IND, 0),
    "SparseLengthsIndicesInGradientSumGradient": (0, _IND, 1),
    "SparseLengthsIndicesInGradientMeanGradient": (0, _IND, 1),
    "SparseLengthsIndicesInGradientWeightedSumGradient": (1, _IND, 1),
}


@_fn(*_LR_GRAD)
def _lengths_reduce_grad(op, ins):
    weighted, variant, sparse = _LR_GRAD[op.type]
    out = w = data = idx = ind = -1
    g, ln = 0, 1
    if variant == _MAX:
        out, g, ln, data = 0, 1, 2, 3
    elif weighted:
        w, g, ln = 0, 1, 2
        if variant == _MAIN:
            data = 3
            if sparse:
                idx = 4
    if variant == _IND:
        ind = ln + 1
    _f32_rows(op, ins, g, "the output gradient")
    _i32_vec(op, ins, ln, "lengths")
    G = ins[g]
    if G.shape[0] != ins[ln].shape[0]:
        _fail(op, "the output gradient %s must have one row per segment: %d", list(G.shape), ins[ln].shape[0])
    if w >= 0:
        _f32_vec(op, ins, w, "scalars")
    if data >= 0:
        _f32_rows(op, ins, data, "data")
        if ins[data].shape[1:] != G.shape[1:]:
            _fail(op, "data %s and the output gradient %s must have the same shape after the first dim",
                  list(ins[data].shape), list(G.shape))
    if idx >= 0:
        _i32_vec(op, ins, idx, "indices")
        if ins[idx].shape[0] != ins[w].shape[0]:
            _fail(op, "scalars %s must hold one weight per index: %d", list(ins[w].shape), ins[idx].shape[0])
    if ind >= 0 and sparse:
        _i32_vec(op, ins, ind, "indices")
    if ind >= 0 and not sparse:
        if ins[ind].dtype != INT32:
            _dtype(op, ins, ind, FLOAT, "data")
        _ndim(op, ins, ind, "data", 1)
    if out >= 0:
        _dtype(op, ins, out, FLOAT, "the forward output")
        if ins[out].shape != G.shape:
            _fail(op, "the forward output %s must have the shape of the output gradient %s",
                  list(ins[out].shape), list(G.shape))
    nsrc = w if w >= 0 else (data if data >= 0 and not sparse else ind)
    N = ins[nsrc].shape[0]
    if w >= 0 and data >= 0 and not sparse and ins[w].shape[0] != ins[data].shape[0]:
        _fail(op, "scalars %s must hold one weight per row of data %s", list(ins[w].shape),
              list(ins[data].shape))
    if ind >= 0 and ind != nsrc and ins[ind].shape[0] != N:
        _fail(op, "input %d %s must have one row per row of the gradient: %d", ind, list(ins[ind].shape), N)
    res = [Tensor((N,) + G.shape[1:], FLOAT)]
    if variant == _MAIN:
        res.append(Tensor((N,), FLOAT))
    return res


not_inferred("the gradient has sum(LENGTHS) rows (a value)", "LengthsSumGradient", "LengthsMeanGradient",
             "SparseLengthsSumGradient", "SparseLengthsMeanGradient")


# ================================================================ sorted_segment.c
not_inferred("the output has (last segment id + 1) rows (a value)",
             "SortedSegmentSum", "SortedSegmentMean", "SortedSegmentWeightedSum", "SparseSortedSegmentSum",
             "SparseSortedSegmentMean", "SparseSortedSegmentWeightedSum", "SortedSegmentRangeSum",
             "SortedSegmentRangeMean", "SortedSegmentRangeLogSumExp", "SortedSegmentRangeLogMeanExp",
             "SortedSegmentRangeMax")

_G_PLAIN, _G_W, _G_MAIN, _G_RANGE = range(4)
_SS_GRAD = {
    "SortedSegmentSumGradient": _G_PLAIN, "SortedSegmentMeanGradient": _G_PLAIN,
    "SortedSegmentWeightedSumGradient": _G_W, "SortedSegmentWeightedSumWithMainInputGradient": _G_MAIN,
    "SortedSegmentRangeSumGradient": _G_RANGE, "SortedSegmentRangeMeanGradient": _G_RANGE,
    "SortedSegmentRangeLogSumExpGradient": _G_RANGE, "SortedSegmentRangeLogMeanExpGradient": _G_RANGE,
    "SortedSegmentRangeMaxGradient": _G_RANGE,
}


@_fn(*_SS_GRAD)
def _sorted_segment_grad(op, ins):
    variant = _SS_GRAD[op.type]
    w = data = idx = out = -1
    g, ids = 0, 1
    if variant in (_G_W, _G_MAIN):
        w, g, ids = 0, 1, 2
    if variant == _G_MAIN:
        data = 3
        if len(ins) > 4:
            idx = 4
    if variant == _G_RANGE:
        data, out, g, ids = 0, 1, 2, 3
    _f32_rows(op, ins, g, "the output gradient")
    _i32_vec(op, ins, ids, "segment_ids")
    G, N = ins[g], ins[ids].shape[0]
    if w >= 0:
        _f32_vec(op, ins, w, "scalars")
        if ins[w].shape[0] != N:
            _fail(op, "scalars %s must have one row per segment id: %d", list(ins[w].shape), N)
    if data >= 0:
        _f32_rows(op, ins, data, "data")
        if size(ins[data].shape[1:]) != size(G.shape[1:]):
            _fail(op, "data %s must have rows of the size of the output gradient %s", list(ins[data].shape),
                  list(G.shape))
        if idx < 0 and ins[data].shape[0] != N:
            _fail(op, "data %s must have one row per segment id: %d", list(ins[data].shape), N)
    if idx >= 0:
        _i32_vec(op, ins, idx, "indices")
        if ins[idx].shape[0] != N:
            _fail(op, "indices %s must have one row per segment id: %d", list(ins[idx].shape), N)
    if out >= 0:
        _dtype(op, ins, out, FLOAT, "the forward output")
        o = ins[out].shape
        if len(o) < 1 or o[0] != G.shape[0] or size(o) != size(G.shape):
            _fail(op, "the forward output %s must have the rows of the output gradient %s", list(o),
                  list(G.shape))
    rest = (ins[data] if data >= 0 else G).shape[1:]
    res = [Tensor((N,) + rest, FLOAT)]
    if variant == _G_MAIN:
        res.append(Tensor((N,), FLOAT))
    return res


@_fn("NanCheck")
def _nan_check(op, ins):
    _dtype(op, ins, 0, FLOAT, "X")
    return [Tensor(ins[0].shape, FLOAT)]


@_fn("EnforceFinite")
def _enforce_finite(op, ins):
    _dtype(op, ins, 0, FLOAT, "X")
    return []


@_fn("Assert")
def _assert(op, ins):
    return []  # float32 or int32, both accepted


# ================================================================ segment.c
not_inferred("the output has one entry per repeated value (values)", "FindDuplicateElements")


@_fn("Unique")
def _unique(op, ins):
    _dtype(op, ins, 0, INT32, "indices")
    return [None] + [Tensor(ins[0].shape, INT32)] * (len(op.output) - 1)


# type -> (weighted, sparse)
_US_FWD = {
    "UnsortedSegmentSum": (0, 0), "UnsortedSegmentMean": (0, 0), "UnsortedSegmentWeightedSum": (1, 0),
    "SparseUnsortedSegmentSum": (0, 1), "SparseUnsortedSegmentMean": (0, 1),
    "SparseUnsortedSegmentWeightedSum": (1, 1),
}


@_fn(*_US_FWD)
def _unsorted_segment(op, ins):
    weighted, sparse = _US_FWD[op.type]
    S = _int(op, "num_segments", -1, lo=-1)
    if weighted:
        _int(op, "grad_on_weights", 0, lo=0, hi=1)
    nxt = 1
    w = idx = -1
    if weighted:
        w, nxt = nxt, nxt + 1
    if sparse:
        idx, nxt = nxt, nxt + 1
    ids = nxt
    _dtype(op, ins, 0, FLOAT, "data")
    _dtype(op, ins, ids, INT32, "segment_ids")
    data, I = ins[0].shape, ins[ids].shape
    if sparse:
        _ndim(op, ins, 0, "data", 1)
        _i32_vec(op, ins, idx, "indices")
        _ndim(op, ins, ids, "segment_ids", 1, 1)
        if ins[idx].shape[0] != I[0]:
            _fail(op, "segment_ids %s must hold one id per index: %d", list(I), ins[idx].shape[0])
        rest = data[1:]
    else:
        if data[:len(I)] != I or len(I) > len(data):
            _fail(op, "the shape of segment_ids %s must be a prefix of the shape of data %s", list(I),
                  list(data))
        if 1 + len(data) - len(I) > MAX_DIMS:
            _fail(op, "the output would have %d dims, at most %d", 1 + len(data) - len(I), MAX_DIMS)
        rest = data[len(I):]
    if w >= 0:
        _dtype(op, ins, w, FLOAT, "scalars")
        if ins[w].shape != I:
            _fail(op, "scalars %s must have the shape of segment_ids %s", list(ins[w].shape), list(I))
    if S < 0:
        return [None]  # max(segment_ids) + 1
    return [Tensor((S,) + rest, FLOAT)]


_US_GRAD = {
    "UnsortedSegmentSumGradient": _G_PLAIN, "UnsortedSegmentMeanGradient": _G_PLAIN,
    "UnsortedSegmentWeightedSumGradient": _G_W, "UnsortedSegmentWeightedSumWithMainInputGradient": _G_MAIN,
}


@_fn(*_US_GRAD)
def _unsorted_segment_grad(op, ins):
    variant = _US_GRAD[op.type]
    w = data = idx = -1
    g, ids = 0, 1
    if variant in (_G_W, _G_MAIN):
        w, g, ids = 0, 1, 2
    if variant == _G_MAIN:
        data = 3
        if len(ins) > 4:
            idx = 4
    _dtype(op, ins, g, FLOAT, "the output gradient")
    _dtype(op, ins, ids, INT32, "segment_ids")
    G, I = ins[g].shape, ins[ids].shape
    _ndim(op, ins, g, "the output gradient", 1)
    if len(I) + len(G) - 1 > MAX_DIMS:
        _fail(op, "the output would have %d dims, at most %d", len(I) + len(G) - 1, MAX_DIMS)
    if w >= 0:
        _dtype(op, ins, w, FLOAT, "scalars")
        if ins[w].shape != I:
            _fail(op, "scalars %s must have the shape of segment_ids %s", list(ins[w].shape), list(I))
    if data >= 0:
        _dtype(op, ins, data, FLOAT, "data")
        D = ins[data].shape
        if idx >= 0:
            _dtype(op, ins, idx, INT32, "indices")
            if ins[idx].shape != I:
                _fail(op, "indices %s must have the shape of segment_ids %s", list(ins[idx].shape), list(I))
            ok = len(D) == len(G) and D[1:] == G[1:]
        else:
            ok = D == I + G[1:]
        if not ok:
            _fail(op, "data %s does not fit segment_ids %s and the output gradient %s", list(D), list(I),
                  list(G))
    res = [Tensor(I + G[1:], FLOAT)]
    if variant == _G_MAIN:
        res.append(Tensor(I, FLOAT))
    return res


# ================================================================ lengths.c
not_inferred("the output has sum(lengths) rows (a value)", "UnpackSegments", "LengthsToSegmentIds")


@_fn("PackSegments")
def _pack_segments(op, ins):
    max_length = _int(op, "max_length", -1, lo=-1, hi=INT32_MAX)
    pad_minf = _int(op, "pad_minf", 0) != 0
    presence = _int(op, "return_presence_mask", 0) != 0
    if presence != (len(op.output) == 2):
        raise _Unknown()
    _i32_vec(op, ins, 0, "lengths")
    x = ins[1]
    _ndim(op, ins, 1, "tensor", 1, MAX_DIMS - 1)
    if pad_minf and x.dtype == INT32:
        _fail(op, "pad_minf=1 needs float32 data")
    N = ins[0].shape[0]
    T = max_length if max_length >= 0 else None
    if len(ins) > 2:
        p = ins[2].shape
        if len(p) < 2 or p[0] != N:
            _fail(op, "packed_like %s must have at least 2 dims and %d rows", list(p), N)
        if max_length >= 0 and max_length < p[1]:
            _fail(op, "max_length=%d is below dim 1 of packed_like %s", max_length, list(p))
        T = p[1]
    if T is None:
        return [None] * len(op.output)  # max(lengths)
    res = [Tensor((N, T) + x.shape[1:], x.dtype)]
    if presence:
        res.append(Tensor((N, T), INT32))
    return res


def _paddings(op):
    start = _int(op, "padding_width", 1, lo=0, hi=INT32_MAX)
    end = _int(op, "end_padding_width", -1, lo=-1, hi=INT32_MAX)
    return start + (start if end < 0 else end)


def _padding_check(op, ins, gather):
    if gather:
        _dtype(op, ins, 0, FLOAT, "data")
    _ndim(op, ins, 0, "data", 1)
    if len(ins) > 1:
        _i32_vec(op, ins, 1, "lengths")
    x = ins[0]
    block = size(x.shape[1:])
    for i in range(2, len(ins)):
        if UNDEFINED not in (x.dtype, ins[i].dtype) and ins[i].dtype != x.dtype:
            _fail(op, "input %d (padding) must have the dtype of data", i)
        if size(ins[i].shape) != block:
            _fail(op, "input %d (padding) %s must hold %d elements, one row of data %s", i,
                  list(ins[i].shape), block, list(x.shape))
    n = ins[1].shape[0] if len(ins) > 1 else 1
    return x, n


def _removed_rows(op, x, n, pad):
    rows = x.shape[0] - n * pad
    if rows < 0:
        _fail(op, "data %s has fewer rows than %d segments of %d padding rows", list(x.shape), n, pad)
    return rows


@_fn("AddPadding")
def _add_padding(op, ins):
    pad = _paddings(op)
    x, n = _padding_check(op, ins, False)
    res = [Tensor((x.shape[0] + n * pad,) + x.shape[1:], x.dtype)]
    return res + [Tensor((n,), INT32)] * (len(op.output) - 1)


@_fn("RemovePadding")
def _remove_padding(op, ins):
    pad = _paddings(op)
    x, n = _padding_check(op, ins, False)
    res = [Tensor((_removed_rows(op, x, n, pad),) + x.shape[1:], x.dtype)]
    return res + [Tensor((n,), INT32)] * (len(op.output) - 1)


@_fn("GatherPadding")
def _gather_padding(op, ins):
    pad = _paddings(op)
    x, n = _padding_check(op, ins, True)
    _removed_rows(op, x, n, pad)
    return [Tensor(x.shape[1:], FLOAT)] * len(op.output)


@_fn("LengthsToRanges")
def _lengths_to_ranges(op, ins):
    _i32_vec(op, ins, 0, "lengths")
    return [Tensor((ins[0].shape[0], 2), INT32)]


@_fn("LengthsToOffsets")
def _lengths_to_offsets(op, ins):
    _i32_vec(op, ins, 0, "lengths")
    last = _int(op, "include_last_offset", 0) != 0
    return [Tensor((ins[0].shape[0] + last,), INT32)]


@_fn("SegmentIdsToLengths")
def _segment_ids_to_lengths(op, ins):
    _i32_vec(op, ins, 0, "segment_ids")
    if len(ins) < 2:
        return [None]  # last id + 1
    _ndim(op, ins, 1, "data_to_infer_dim", 1)
    return [Tensor((ins[1].shape[0],), INT32)]


@_fn("SegmentIdsToRanges")
def _segment_ids_to_ranges(op, ins):
    _i32_vec(op, ins, 0, "segment_ids")
    if len(ins) < 2:
        return [None]  # last id + 1 rows
    _ndim(op, ins, 1, "data_to_infer_dim", 1)
    return [Tensor((ins[1].shape[0], 2), INT32)]


# ================================================================ ranges.c
not_inferred("the output has sum(LENGTHS) rows (a value)", "LengthsTile", "LengthsRangeFill",
             "UnpackRNNSequence")
not_inferred("the output length is given by the values of the inputs", "Range")
not_inferred("the output has the rows of the segments INDICES names (values)", "LengthsGather")
not_inferred("the output has max(lengths) steps (a value)", "PackRNNSequence")


@_fn("GatherRanges")
def _gather_ranges(op, ins):
    _ndim(op, ins, 0, "DATA", 1, 1)
    _dtype(op, ins, 1, INT32, "RANGES")
    r = ins[1].shape
    if len(r) != 3 or r[1] < 1 or r[2] != 2:
        _fail(op, "RANGES must be (batch, ranges >= 1, 2), got %s", list(r))
    return [None, Tensor((r[0],), INT32)]  # OUTPUT: the sum of the range lengths


@_fn("GatherRangesToDense")
def _gather_ranges_to_dense(op, ins):
    a = arg(op, "lengths")
    if a is None or a.kind() != "ints":
        raise _Unknown()
    lengths = list(a.ints)
    if len(lengths) != len(op.output) or any(not 1 <= v <= INT32_MAX for v in lengths):
        raise _Unknown()
    _ndim(op, ins, 0, "DATA", 1, 1)
    _dtype(op, ins, 1, INT32, "RANGES")
    r = ins[1].shape
    if len(r) != 3 or r[1] != len(op.output) or r[2] != 2:
        _fail(op, "RANGES must be (batch, %d, 2), got %s", len(op.output), list(r))
    if len(ins) > 2:
        _i32_vec(op, ins, 2, "KEY")
        if ins[2].shape[0] != ins[0].shape[0]:
            _fail(op, "KEY %s must have one key per element of DATA %s", list(ins[2].shape),
                  list(ins[0].shape))
    return [Tensor((r[0], n), ins[0].dtype) for n in lengths]


@_fn("LengthsPad")
def _lengths_pad(op, ins):
    pad = _float(op, "padding_value", -1.0)
    T = _int(op, "target_length", -1, lo=1)
    if not math.isfinite(pad):
        raise _Unknown()
    _ndim(op, ins, 0, "DATA", 1)
    _i32_vec(op, ins, 1, "LENGTHS")
    x = ins[0]
    if x.dtype == INT32 and (pad != math.floor(pad) or not -2.0 ** 31 <= pad < 2.0 ** 31):
        _fail(op, "padding_value %g must be a whole number in the int32 range for int32 DATA", pad)
    return [Tensor((ins[1].shape[0] * T,) + x.shape[1:], x.dtype)]


@_fn("ScatterAssign")
def _scatter_assign(op, ins):
    if str(op.output[0]) != str(op.input[0]):
        raise _Unknown()  # refused when created: ScatterAssign writes DATA in place
    _ndim(op, ins, 0, "DATA", 1)
    _dtype(op, ins, 1, INT32, "INDICES")
    x, s = ins[0], ins[2]
    if UNDEFINED not in (x.dtype, s.dtype) and s.dtype != x.dtype:
        _fail(op, "SLICES must have the dtype of DATA")
    if size(s.shape) != size(ins[1].shape) * size(x.shape[1:]):
        _fail(op, "SLICES %s must hold one row of DATA %s per index of INDICES %s", list(s.shape),
              list(x.shape), list(ins[1].shape))
    return [x]


@_fn("Mod")
def _mod(op, ins):
    if arg(op, "divisor") is None:
        raise _Unknown()
    d = _int(op, "divisor", 0, lo=-2 ** 31, hi=INT32_MAX)
    _int(op, "sign_follow_divisor", 0, lo=0, hi=1)
    if d == 0:
        raise _Unknown()
    _dtype(op, ins, 0, INT32, "X")
    return [Tensor(ins[0].shape, INT32)]


# ================================================================ mask.c
not_inferred("the output has one row per 1 of the mask (values)", "BooleanMask")
not_inferred("the output has sum(lengths) entries (a value)", "LengthsToWeights")


@_fn("BooleanUnmask")
def _boolean_unmask(op, ins):
    """(mask_k int32 1-D of one length M, values_k float32 / int32 1-D of values_0's dtype) pairs ->
    (M,) of that dtype; whether each values_k holds the right count is a matter of the masks' values."""
    if len(ins) % 2:
        raise _Unknown()
    for k in range(0, len(ins), 2):
        _i32_vec(op, ins, k, "mask")
        _ndim(op, ins, k + 1, "values", 1, 1)
        if ins[k].shape[0] != ins[0].shape[0]:
            _fail(op, "mask %d %s must have the length of mask 0 %s", k // 2, list(ins[k].shape),
                  list(ins[0].shape))
    dts = {t.dtype for t in ins[1::2]} - {UNDEFINED}
    if len(dts) > 1:
        _fail(op, "the values must have one dtype, got dtypes %s", sorted(dts))
    return [Tensor((ins[0].shape[0],), dts.pop() if dts else UNDEFINED)]


@_fn("BooleanMaskGradient")
def _boolean_mask_grad(op, ins):
    _i32_vec(op, ins, 0, "mask")
    _f32_rows(op, ins, 1, "the gradient of masked_data")
    return [Tensor((ins[0].shape[0],) + ins[1].shape[1:], FLOAT)]


@_fn("BooleanMaskLengths")
def _boolean_mask_lengths(op, ins):
    _i32_vec(op, ins, 0, "lengths")
    _i32_vec(op, ins, 1, "mask")
    return [Tensor((ins[0].shape[0],), INT32)]


@_fn("PadEmptySamples")
def _pad_empty_samples(op, ins):
    if len(op.output) != len(op.input):
        raise _Unknown()
    _i32_vec(op, ins, 0, "lengths")
    for k in range(1, len(ins)):
        _ndim(op, ins, k, "features", 1)
    # the features get one row per empty segment (values)
    return [Tensor((ins[0].shape[0],), INT32)] + [None] * (len(ins) - 1)


def _dot_padding_check(op, ins):
    _float(op, "pad_value", 0.0)
    rep = _int(op, "replicate", 0, lo=0, hi=1)
    _f32_rows(op, ins, 0, "X")
    _f32_rows(op, ins, 1, "Y")
    x, y = ins[0].shape, ins[1].shape
    if len(x) != len(y) or x[0] != y[0]:
        _fail(op, "X %s and Y %s must have the same number of dims and the same dim 0", list(x), list(y))
    dx, dy = size(x[1:]), size(y[1:])
    ds, dl = min(dx, dy), max(dx, dy)
    if rep and dl != ds and (ds == 0 or dl % ds != 0):
        _fail(op, "with replicate=1 the longer row (%d) must be a multiple of the shorter (%d)", dl, ds)


@_fn("DotProductWithPadding")
def _dot_padding(op, ins):
    _dot_padding_check(op, ins)
    return [Tensor(ins[0].shape[:1], FLOAT)]


@_fn("DotProductWithPaddingGradient")
def _dot_padding_grad(op, ins):
    _dot_padding_check(op, ins)
    _dtype(op, ins, 2, FLOAT, "dZ")
    if ins[2].shape != ins[0].shape[:1]:
        _fail(op, "dZ %s must be (%d,)", list(ins[2].shape), ins[0].shape[0])
    return [Tensor(ins[0].shape, FLOAT), Tensor(ins[1].shape, FLOAT)]


@_fn("RemoveDataBlocks")
def _remove_data_blocks(op, ins):
    _ndim(op, ins, 0, "data", 1)
    if ins[1].shape == (0,):
        return [ins[0]]  # nothing removed (any dtype of indices, as Caffe2)
    _i32_vec(op, ins, 1, "indices")
    return [None]  # N - the distinct indices (values)
