"""Shape functions of the tensor-manipulation family: the op types of csrc/ops/shape.c, topk_tile.c,
batch.c, bmm_pow.c (BatchMatMulGradient, BatchGather*), embed.c (Gather, OneHot, sampling), sparse.c,
fill.c, util.c, print.c, decode.c and calib.c.

Each function follows the C op's own shape code and argument defaults (read there), and raises
ShapeError only for inputs or arguments the op certainly refuses (its shape, rank and dtype checks,
and the argument checks of its setup); an input of UNDEFINED dtype passes every dtype check.

What is not inferred, and why:
- outputs whose shape comes from input VALUES: Reshape's Y with the new shape as input 1 (its
  old_shape is inferred), Split's outputs with the sizes as input 1, Slice / Tile / TileGradient /
  LengthsSplit / OneHot with their parameters as inputs, SparseToDense without output_first_dim or
  DATA_TO_INFER_DIM (max index + 1), the fills with input_as_shape=1, UniformFill / UniformIntFill
  with MIN / MAX as inputs (MIN > MAX makes the first dim 0), the decoders' VALUES;
- whole op types (NOT_INFERRED): SplitByLengths, NumpyTile, SegmentOneHot, LengthsTopKGradient.
BatchOneHot's and BatchBucketOneHot's width is sum(LENS), which the op requires to equal the length
of VALS / BOUNDARIES: the width is that length (the op refuses anything else).
Print and ZeroGradient have no outputs; Summarize has (4,) float32 or none. The counts of inputs and
outputs are checked by the engine (the op's C schema) before these functions run.
"""

import functools

from .shape_inference import (FLOAT, INT32, UNDEFINED, ShapeError, Tensor, arg, args, not_inferred,
                              register, size)

MAX_DIMS = 8
INT32_MAX = 2 ** 31 - 1


class _Unknown(Exception):
    """An odd argument (a wrong kind, refused when the op is created): every output unknown."""


def _fn(*types):
    """register(*types), with _Unknown turned into all outputs unknown."""
    def deco(f):
        def g(op, ins):
            try:
                return f(op, ins)
            except _Unknown:
                return [None] * len(op.output)
        functools.update_wrapper(g, f)  # the module is f's: the coverage tests count types per module
        register(*types)(g)
        return f
    return deco


# ---------------------------------------------------------------- argument and input helpers
def _has(op, name):
    return any(a.name == name for a in op.arg)


def _int(a, name, dflt):
    v = a.get(name, dflt)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Unknown()
    return v


def _float(a, name, dflt):
    v = a.get(name, dflt)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Unknown()
    return float(v)


def _str(a, name, dflt):
    v = a.get(name, dflt)
    if not isinstance(v, str):
        raise _Unknown()
    return v


def _ints(a, name):
    """A list-of-ints argument ([] when absent or an empty list)."""
    v = a.get(name, [])
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
        raise _Unknown()
    return v


def _floats(a, name):
    v = a.get(name, [])
    if not isinstance(v, list):
        raise _Unknown()
    if v and not all(isinstance(x, float) for x in v):
        raise _Unknown()
    return v


def _need(op, ins, i, *dtypes):
    """Input i's dtype must be one of dtypes (UNDEFINED passes)."""
    t = ins[i].dtype
    if t != UNDEFINED and t not in dtypes:
        raise ShapeError("%s: input %d '%s' has dtype %d, needs %s" % (
            op.type, i, op.input[i], t, " or ".join(str(d) for d in dtypes)))


def _ndim(op, ins, i, lo, hi=None):
    n = len(ins[i].shape)
    if n < lo or (hi is not None and n > hi):
        raise ShapeError("%s: input %d '%s' of shape %s needs %s dims" % (
            op.type, i, op.input[i], list(ins[i].shape), lo if hi == lo else "%s to %s" % (lo, hi)))


def _i32_vector(op, ins, i):
    _need(op, ins, i, INT32)
    _ndim(op, ins, i, 1, 1)
    return ins[i].shape[0]


def _axis(op, axis, ndim):
    """Strict canonical axis in [-ndim, ndim) (a 0-d input has none)."""
    if not -ndim <= axis < ndim:
        raise ShapeError("%s: axis %d out of range for %d dims" % (op.type, axis, ndim))
    return axis + ndim if axis < 0 else axis


def _fail(op, msg, *a):
    raise ShapeError(("%s: " % op.type) + (msg % a if a else msg))


def _dtype_of(*ts):
    """The first defined dtype among ts (UNDEFINED when none)."""
    for t in ts:
        if t.dtype != UNDEFINED:
            return t.dtype
    return UNDEFINED


def _or(dtype, dflt):
    return dflt if dtype == UNDEFINED else dtype


# ================================================================ shape.c
def _read_axis(op, a):
    if _has(op, "axis") and _has(op, "order"):
        _fail(op, "set either argument 'axis' or 'order', not both")
    if _has(op, "order"):
        order = _str(a, "order", "NCHW")
        if order not in ("NCHW", "NHWC"):
            _fail(op, "argument 'order' must be NCHW or NHWC")
        return 1 if order == "NCHW" else 3
    return _int(a, "axis", 1)


@_fn("Concat", "DepthConcat")
def _concat(op, ins):
    a = args(op)
    axis = _read_axis(op, a)
    add = _int(a, "add_axis", 0) != 0
    x0 = ins[0]
    nd = len(x0.shape)
    ax = _axis(op, axis, nd + add)
    for i, x in enumerate(ins[1:], 1):
        if x.dtype != UNDEFINED and x0.dtype != UNDEFINED and x.dtype != x0.dtype:
            _fail(op, "input %d dtype %d differs from input 0's %d", i, x.dtype, x0.dtype)
        bad = len(x.shape) != nd or any(
            x.shape[d] != x0.shape[d] for d in range(nd) if d != ax or add)
        if bad:
            _fail(op, "input %d %s does not match input 0 %s", i, list(x.shape), list(x0.shape))
    dt = _dtype_of(*ins)
    if add:
        out = x0.shape[:ax] + (len(ins),) + x0.shape[ax:]
    else:
        out = x0.shape[:ax] + (sum(x.shape[ax] for x in ins),) + x0.shape[ax + 1:]
    res = [Tensor(out, dt)]
    if len(op.output) > 1:
        res.append(Tensor((len(ins),), INT32))
    return res


@_fn("Split", "DepthSplit")
def _split(op, ins):
    a = args(op)
    axis = _read_axis(op, a)
    add = _int(a, "add_axis", 0) != 0
    split = _ints(a, "split")
    nout = len(op.output)
    if split and len(ins) == 2:
        _fail(op, "split sizes given both as input 1 and as argument 'split'")
    if split and len(split) != nout:
        _fail(op, "argument 'split' has %d sizes for %d outputs", len(split), nout)
    if any(v < 0 for v in split):
        _fail(op, "argument 'split' has a negative size")
    x = ins[0]
    ax = _axis(op, axis, len(x.shape))
    channels = x.shape[ax]
    if len(ins) == 2:
        _need(op, ins, 1, INT32)
        if size(ins[1].shape) != nout:
            _fail(op, "input 1 %s must hold %d split sizes", list(ins[1].shape), nout)
        return [None] * nout
    if split:
        sizes = list(split)
    else:
        if not add and channels % nout:
            _fail(op, "axis %d of size %d cannot be split equally into %d outputs", ax, channels, nout)
        sizes = [1 if add else channels // nout] * nout
    if add:
        if channels != nout:
            _fail(op, "with add_axis=1, axis %d of %s must equal the number of outputs %d", ax, list(x.shape),
                  nout)
        if any(s != 1 for s in sizes):
            _fail(op, "with add_axis=1 every split size must be 1, got %s", sizes)
        return [Tensor(x.shape[:ax] + x.shape[ax + 1:], x.dtype)] * nout
    if sum(sizes) != channels:
        _fail(op, "split sizes %s do not sum to axis %d of %s", sizes, ax, list(x.shape))
    return [Tensor(x.shape[:ax] + (s,) + x.shape[ax + 1:], x.dtype) for s in sizes]


def _check_new_shape(op, v):
    if len(v) > MAX_DIMS:
        _fail(op, "the new shape has %d dims, at most %d", len(v), MAX_DIMS)
    if any(d < -1 for d in v):
        _fail(op, "the new shape %s has an invalid dimension", v)
    if sum(1 for d in v if d == -1) > 1:
        _fail(op, "the new shape %s has more than one -1", v)


@_fn("Reshape")
def _reshape(op, ins):
    a = args(op)
    has_shape = _has(op, "shape")
    if len(ins) == 2 and has_shape:
        _fail(op, "new shape given both as input 1 and as argument 'shape'")
    if len(ins) == 1 and not has_shape:
        _fail(op, "argument 'shape' is missing")
    x = ins[0]
    old = Tensor((len(x.shape),), INT32)
    if len(ins) == 2:
        _need(op, ins, 1, INT32)
        _ndim(op, ins, 1, 1, 1)
        if ins[1].shape[0] > MAX_DIMS:
            _fail(op, "the new shape in input 1 has %d dims", ins[1].shape[0])
        return [None, old]
    nd = _ints(a, "shape")
    _check_new_shape(op, nd)
    nd = list(nd)
    total = size(x.shape)
    if total:
        for k, d in enumerate(nd):
            if d == 0:
                if k >= len(x.shape):
                    _fail(op, "0 at position %d of the new shape but the input is %s", k, list(x.shape))
                nd[k] = x.shape[k]
    known = 1
    unknown = -1
    for k, d in enumerate(nd):
        if d == -1:
            unknown = k
        else:
            known *= d
    if unknown >= 0:
        if known == 0 or total % known:
            _fail(op, "cannot reshape %s to %s", list(x.shape), nd)
        nd[unknown] = total // known
    elif known != total:
        _fail(op, "cannot reshape %s to %s", list(x.shape), nd)
    return [Tensor(tuple(nd), x.dtype), old]


@_fn("PrependDim")
def _prepend_dim(op, ins):
    n = _int(args(op), "dim_size", 0)
    if n <= 0:
        _fail(op, "argument 'dim_size' must be > 0")
    x = ins[0]
    if not 1 <= len(x.shape) < MAX_DIMS or x.shape[0] % n:
        _fail(op, "input %s needs 1 to %d dims, the first a multiple of %d", list(x.shape), MAX_DIMS - 1, n)
    return [Tensor((n, x.shape[0] // n) + x.shape[1:], x.dtype)]


@_fn("MergeDim")
def _merge_dim(op, ins):
    _ndim(op, ins, 0, 2)
    x = ins[0]
    return [Tensor((x.shape[0] * x.shape[1],) + x.shape[2:], x.dtype)]


@_fn("LengthsToShape")
def _lengths_to_shape(op, ins):
    _i32_vector(op, ins, 0)
    return [Tensor((2,), INT32)]


@_fn("LengthsSplit")
def _lengths_split(op, ins):
    a = args(op)
    m = _i32_vector(op, ins, 0)
    if len(ins) == 2:
        _need(op, ins, 1, INT32)
        if ins[1].shape != (1,):
            _fail(op, "input 1 (n_split) must be a vector of size 1, got %s", list(ins[1].shape))
        return [None]
    if not _has(op, "n_split"):
        _fail(op, "argument 'n_split' is missing")
    n = _int(a, "n_split", 0)
    if not 1 <= n <= INT32_MAX:
        _fail(op, "argument 'n_split' must be in [1, 2^31)")
    return [Tensor((m * n,), INT32)]


@_fn("Flatten")
def _flatten(op, ins):
    axis = _int(args(op), "axis", 1)
    if axis < 0:
        _fail(op, "argument 'axis' must be >= 0")
    x = ins[0]
    if axis > len(x.shape):
        _fail(op, "axis %d out of range for %s", axis, list(x.shape))
    return [Tensor((size(x.shape[:axis]), size(x.shape[axis:])), x.dtype)]


@_fn("FlattenToVec")
def _flatten_to_vec(op, ins):
    return [Tensor((size(ins[0].shape),), ins[0].dtype)]


@_fn("ResizeLike")
def _resize_like(op, ins):
    x, like = ins
    if size(x.shape) != size(like.shape):
        _fail(op, "%s and %s differ in element count", list(x.shape), list(like.shape))
    return [Tensor(like.shape, x.dtype)]


@_fn("Transpose")
def _transpose(op, ins):
    axes = _ints(args(op), "axes")
    n = len(axes)
    if n > MAX_DIMS or sorted(axes) != list(range(n)):
        _fail(op, "argument 'axes' %s is not a permutation", axes)
    x = ins[0]
    if n and n != len(x.shape):
        _fail(op, "argument 'axes' %s has %d entries but the input is %s", axes, n, list(x.shape))
    if not n:
        axes = list(reversed(range(len(x.shape))))
    return [Tensor(tuple(x.shape[k] for k in axes), x.dtype)]


@_fn("NCHW2NHWC", "NHWC2NCHW")
def _order_switch(op, ins):
    _ndim(op, ins, 0, 3, MAX_DIMS)
    s = ins[0].shape
    out = s[:1] + s[2:] + s[1:2] if op.type == "NCHW2NHWC" else s[:1] + s[-1:] + s[1:-1]
    return [Tensor(out, ins[0].dtype)]


def _dims_arg(op):
    dims = _ints(args(op), "dims")
    if not dims:
        _fail(op, "argument 'dims' must be given")
    if len(dims) > 64:
        _fail(op, "argument 'dims' has too many entries")
    dims = sorted(set(dims))
    if dims[0] < 0:
        _fail(op, "argument 'dims' must be non-negative")
    if len(dims) > MAX_DIMS:
        _fail(op, "argument 'dims' has too many distinct entries")
    return dims


@_fn("ExpandDims")
def _expand_dims(op, ins):
    dims = _dims_arg(op)
    x = ins[0]
    out_nd = len(x.shape) + len(dims)
    if dims[-1] >= out_nd or out_nd > MAX_DIMS:
        _fail(op, "argument 'dims' %s does not fit %s", dims, list(x.shape))
    rest = iter(x.shape)
    return [Tensor(tuple(1 if d in dims else next(rest) for d in range(out_nd)), x.dtype)]


@_fn("Squeeze")
def _squeeze(op, ins):
    dims = _dims_arg(op)
    x = ins[0]
    if dims[-1] >= len(x.shape):
        _fail(op, "argument 'dims' %s needs more dims than %s", dims, list(x.shape))
    for d in dims:
        if x.shape[d] != 1:
            _fail(op, "dim %d of %s must be 1 to be squeezed", d, list(x.shape))
    return [Tensor(tuple(n for d, n in enumerate(x.shape) if d not in dims), x.dtype)]


@_fn("Size", "IsEmpty", "HasElements")
def _size(op, ins):
    return [Tensor((), INT32)]  # Size: a count beyond int32 is refused when the op runs


@_fn("Shape")
def _shape(op, ins):
    axes = _ints(args(op), "axes")
    nd = len(ins[0].shape)
    for ax in axes:
        if not -nd <= ax < nd:
            _fail(op, "argument 'axes' entry %d out of range for %d dims", ax, nd)
    return [Tensor((len(axes) if axes else nd,), INT32)]


def _slice_box(op, ins, grad):
    """The slice's shape (a tuple), or None when starts / ends are inputs."""
    a = args(op)
    n_idx = len(ins) - grad
    has_s, has_e = _has(op, "starts"), _has(op, "ends")
    x = ins[0]
    nd = len(x.shape)
    if n_idx == 2:
        _fail(op, "starts and ends as inputs go together")
    if n_idx == 3:
        if has_s or has_e:
            _fail(op, "starts and ends given both as inputs and as arguments")
        _need(op, ins, 1, INT32)
        _need(op, ins, 2, INT32)
        s, e = ins[1].shape, ins[2].shape
        if len(s) != 1 or len(e) != 1 or s != e:
            _fail(op, "starts %s and ends %s must be 1-D of the same length", list(s), list(e))
        if s[0] > nd:
            _fail(op, "starts and ends have %d entries for %d dims", s[0], nd)
        return None
    if not has_s or not has_e:
        _fail(op, "argument 'starts' or 'ends' is missing")
    starts, ends = _ints(a, "starts"), _ints(a, "ends")
    if len(starts) != len(ends):
        _fail(op, "arguments 'starts' and 'ends' differ in length")
    if len(starts) > MAX_DIMS:
        _fail(op, "arguments 'starts' and 'ends' have too many entries")
    if len(starts) > nd:
        _fail(op, "arguments 'starts' and 'ends' have %d entries for %d dims", len(starts), nd)
    out = []
    for d, n in enumerate(x.shape):
        if d >= len(starts) or n == 0:
            out.append(n)
            continue
        b = starts[d] + n + 1 if starts[d] < 0 else starts[d]
        e = ends[d] + n + 1 if ends[d] < 0 else ends[d]
        b, e = min(b, n), min(e, n)
        if b < 0 or e < b:
            _fail(op, "dim %d (size %d): start %d and end %d give no range", d, n, starts[d], ends[d])
        out.append(e - b)
    return tuple(out)


@_fn("Slice")
def _slice(op, ins):
    box = _slice_box(op, ins, 0)
    return [None if box is None else Tensor(box, ins[0].dtype)]


@_fn("SliceGradient")
def _slice_grad(op, ins):
    box = _slice_box(op, ins, 1)
    g = len(ins) - 1
    _need(op, ins, g, FLOAT)
    if box is not None and ins[g].shape != box:
        _fail(op, "dY %s must have the slice's shape %s", list(ins[g].shape), list(box))
    return [Tensor(ins[0].shape, FLOAT)]


not_inferred("the output sizes are sums of the lengths' values", "SplitByLengths")


# ================================================================ topk_tile.c
def _input_axis(op, ins, i, axis):
    _ndim(op, ins, i, 1)
    return _axis(op, axis, len(ins[i].shape))


def _topk_k(op, a):
    if not _has(op, "k"):
        _fail(op, "argument 'k' is required")
    k = _int(a, "k", 0)
    if k < 1:
        _fail(op, "argument 'k' must be >= 1")
    return k


@_fn("TopK")
def _topk(op, ins):
    a = args(op)
    k = _topk_k(op, a)
    axis = _int(a, "axis", -1)
    _need(op, ins, 0, FLOAT)
    ax = _input_axis(op, ins, 0, axis)
    x = ins[0]
    shape = x.shape[:ax] + (k,) + x.shape[ax + 1:]
    res = [Tensor(shape, FLOAT), Tensor(shape, INT32)]
    if len(op.output) > 2:
        res.append(Tensor((size(shape),), INT32))
    return res


@_fn("TopKGradient")
def _topk_grad(op, ins):
    axis = _int(args(op), "axis", -1)
    _need(op, ins, 0, FLOAT)
    _need(op, ins, 1, INT32)
    ax = _input_axis(op, ins, 2, axis)
    dv, ix, x = ins
    if dv.shape != ix.shape:
        _fail(op, "indices %s must have the shape of dValues %s", list(ix.shape), list(dv.shape))
    if len(dv.shape) != len(x.shape) or any(
            dv.shape[d] != x.shape[d] for d in range(len(x.shape)) if d != ax):
        _fail(op, "dValues %s must have the shape of X %s except at axis %d", list(dv.shape), list(x.shape),
              ax)
    return [Tensor(x.shape, FLOAT)]


def _tile_common(op, ins, ints):
    """Setup and input checks of Tile / TileGradient; (tiles, axis) when both come from arguments."""
    a = args(op)
    axis = _int(a, "axis", 0)
    tiles = _int(a, "tiles", -1)
    if not _has(op, "tiles"):
        if len(ins) < 2:
            _fail(op, "argument 'tiles' is required")
    elif not 1 <= tiles <= INT32_MAX:
        _fail(op, "argument 'tiles' must be in [1, 2^31 - 1]")
    if ints:
        _need(op, ins, 0, FLOAT, INT32)
    else:
        _need(op, ins, 0, FLOAT)
    for i in range(1, len(ins)):
        _need(op, ins, i, INT32)
        if ins[i].shape != (1,):
            _fail(op, "input %d must have shape (1,), got %s", i, list(ins[i].shape))
    if len(ins) < 3:
        ax = _input_axis(op, ins, 0, axis)
    if len(ins) > 1:
        return None
    return tiles, ax


@_fn("Tile")
def _tile(op, ins):
    p = _tile_common(op, ins, True)
    if p is None:
        return [None]
    tiles, ax = p
    x = ins[0]
    return [Tensor(x.shape[:ax] + (x.shape[ax] * tiles,) + x.shape[ax + 1:], x.dtype)]


@_fn("TileGradient")
def _tile_grad(op, ins):
    p = _tile_common(op, ins, False)
    if p is None:
        return [None]
    tiles, ax = p
    dy = ins[0]
    if dy.shape[ax] % tiles:
        _fail(op, "dim %d of %s is not a multiple of tiles=%d", ax, list(dy.shape), tiles)
    return [Tensor(dy.shape[:ax] + (dy.shape[ax] // tiles,) + dy.shape[ax + 1:], FLOAT)]


@_fn("LengthsTopK")
def _lengths_topk(op, ins):
    k = _topk_k(op, args(op))
    _need(op, ins, 0, FLOAT)
    n = _i32_vector(op, ins, 1)
    _ndim(op, ins, 0, 1, 1)
    return [Tensor((n, k), FLOAT), Tensor((n, k), INT32)]


not_inferred("the output's dims are the repeats' values", "NumpyTile")
not_inferred("dX has sum(lengths) elements: the lengths' values", "LengthsTopKGradient")


# ================================================================ batch.c, bmm_pow.c
def _bmm_plain(op, ins, ta, tb):
    _need(op, ins, 0, FLOAT)
    _need(op, ins, 1, FLOAT)
    A, B = ins[0].shape, ins[1].shape
    _ndim(op, ins, 0, 2)
    _ndim(op, ins, 1, 2)
    if len(A) != len(B):
        _fail(op, "%s and %s must have the same number of dims (or broadcast=1)", list(A), list(B))
    if A[:-2] != B[:-2]:
        _fail(op, "batch dims of %s and %s differ (or broadcast=1)", list(A), list(B))
    M, Ka = (A[-1], A[-2]) if ta else (A[-2], A[-1])
    N, Kb = (B[-2], B[-1]) if tb else (B[-1], B[-2])
    if Ka != Kb:
        _fail(op, "inner dimensions of %s and %s differ", list(A), list(B))
    if max(M, N, Ka) > INT32_MAX:
        _fail(op, "matrix sizes exceed the BLAS limit")
    return A[:-2] + (M, N)


def _bmm_bc(op, ins, ta, tb):
    _need(op, ins, 0, FLOAT)
    _need(op, ins, 1, FLOAT)
    _ndim(op, ins, 0, 1)
    _ndim(op, ins, 1, 1)
    A, B = ins[0].shape, ins[1].shape
    a1d, b1d = len(A) == 1, len(B) == 1
    ta = 0 if a1d else ta
    tb = 0 if b1d else tb
    a0, a1 = (1 if a1d else A[-2]), A[-1]
    b0, b1 = B[0 if b1d else -2], (1 if b1d else B[-1])
    M, Ka = (a1, a0) if ta else (a0, a1)
    N, Kb = (b0, b1) if tb else (b1, b0)
    if Ka != Kb:
        _fail(op, "inner dimensions of %s and %s differ", list(A), list(B))
    if max(M, N, Ka) > INT32_MAX:
        _fail(op, "matrix sizes exceed the BLAS limit")
    ba = () if a1d else A[:-2]
    bb = () if b1d else B[:-2]
    nb = max(len(ba), len(bb))
    ba = (1,) * (nb - len(ba)) + ba
    bb = (1,) * (nb - len(bb)) + bb
    out = []
    for da, db in zip(ba, bb):
        if da != db and da != 1 and db != 1:
            _fail(op, "batch dims of %s and %s do not broadcast", list(A), list(B))
        out.append(db if da == 1 else da)
    if not a1d:
        out.append(M)
    if not b1d:
        out.append(N)
    if a1d and b1d:
        out.append(1)
    return tuple(out)


@_fn("BatchMatMul")
def _bmm(op, ins):
    a = args(op)
    ta, tb = _int(a, "trans_a", 0) != 0, _int(a, "trans_b", 0) != 0
    bc = _int(a, "broadcast", 0) != 0
    return [Tensor((_bmm_bc if bc else _bmm_plain)(op, ins, ta, tb), FLOAT)]


@_fn("BatchMatMulGradient")
def _bmm_grad(op, ins):
    a = args(op)
    ta, tb = _int(a, "trans_a", 0) != 0, _int(a, "trans_b", 0) != 0
    if _int(a, "broadcast", 1) == 0:
        _fail(op, "argument broadcast=0 is not this op's")
    out = _bmm_bc(op, ins, ta, tb)
    _need(op, ins, 2, FLOAT)
    if ins[2].shape != out:
        _fail(op, "dY %s must have the forward result's shape %s", list(ins[2].shape), list(out))
    return [Tensor(ins[0].shape, FLOAT), Tensor(ins[1].shape, FLOAT)]


@_fn("SequenceMask")
def _sequence_mask(op, ins):
    a = args(op)
    mode = _str(a, "mode", "sequence")
    modes = ("sequence", "window", "upper", "lower", "upperdiag", "lowerdiag")
    if mode not in modes:
        _fail(op, "argument mode='%s' is not supported", mode)
    if len(ins) != (2 if mode in ("sequence", "window") else 1):
        _fail(op, "mode '%s' takes another number of inputs", mode)
    axis = _int(a, "axis", 1)
    radius = _int(a, "radius", 10)
    if _has(op, "radius") and mode != "window":
        _fail(op, "argument radius is for mode 'window' only")
    if not 0 <= radius <= INT32_MAX:
        _fail(op, "argument radius out of range")
    has_batch, has_rep = _has(op, "batch"), _has(op, "repeat_from_axis")
    batch = _int(a, "batch", -1)
    rep = _int(a, "repeat_from_axis", 1)
    if has_rep and (mode != "sequence" or has_batch):
        _fail(op, "argument repeat_from_axis is for mode 'sequence' without batch only")
    _need(op, ins, 0, FLOAT)
    if len(ins) > 1:
        _need(op, ins, 1, INT32)
    x = ins[0]
    nd = len(x.shape)
    ax = axis + nd if axis < 0 else axis
    if not 0 <= ax < nd:
        _fail(op, "argument axis=%d out of range for %s", axis, list(x.shape))
    bt = -1
    if has_batch:
        bt = batch + nd if batch < 0 else batch
        if not 0 <= bt < ax:
            _fail(op, "argument batch=%d must name a dim before the axis", batch)
    if has_rep:
        r = rep + nd if rep < 0 else rep
        if not ax <= r < nd:
            _fail(op, "argument repeat_from_axis=%d out of range", rep)
    if len(ins) > 1:
        rows = size(x.shape[bt + 1:ax])
        if ins[1].shape != (rows,):
            _fail(op, "input 1 %s must have shape (%d,)", list(ins[1].shape), rows)
    return [Tensor(x.shape, FLOAT)]


@_fn("ReversePackedSegs")
def _reverse_packed_segs(op, ins):
    _need(op, ins, 0, FLOAT, INT32)
    _need(op, ins, 1, INT32)
    _ndim(op, ins, 0, 2)
    x = ins[0]
    if ins[1].shape != (x.shape[1],):
        _fail(op, "lengths %s must have shape (%d,)", list(ins[1].shape), x.shape[1])
    return [x]


def _gather_geometry(op, ins, axis, f32_only, mo):
    """Gather's general path (bmm_pow.c gather_geometry): the output shape."""
    if f32_only:
        _need(op, ins, 0, FLOAT)
    else:
        _need(op, ins, 0, FLOAT, INT32)
    _need(op, ins, 1, INT32)
    data, idx = ins[0].shape, ins[1].shape
    ax = _axis(op, axis, len(data))
    if mo:
        if ax < 1:
            _fail(op, "match_outer=1 needs axis >= 1")
        if len(idx) < ax or idx[:ax] != data[:ax]:
            _fail(op, "INDICES %s must begin with DATA %s's dims before axis %d", list(idx), list(data), ax)
    out = data[:ax] + idx[ax if mo else 0:] + data[ax + 1:]
    if len(out) > MAX_DIMS:
        _fail(op, "the output would have %d dims", len(out))
    return out


def _gather_flags(op, a):
    wrap, mo = _int(a, "wrap_indices", 0), _int(a, "match_outer", 0)
    if wrap not in (0, 1) or mo not in (0, 1):
        _fail(op, "arguments wrap_indices and match_outer must be 0 or 1")
    return wrap, mo


@_fn("BatchGather")
def _batch_gather(op, ins):
    _ndim(op, ins, 0, 2)
    return [Tensor(_gather_geometry(op, ins, 1, False, 0), ins[0].dtype)]


@_fn("BatchGatherGradient")
def _batch_gather_grad(op, ins):
    a = args(op)
    axis = _int(a, "axis", 1)
    _, mo = _gather_flags(op, a)
    out = _gather_geometry(op, ins, axis, True, mo)
    _need(op, ins, 2, FLOAT)
    if ins[2].shape != out:
        _fail(op, "the output gradient %s must have the gathered shape %s", list(ins[2].shape), list(out))
    return [Tensor(ins[0].shape, FLOAT)]


# ================================================================ embed.c
def _gather0(op, ins):
    """Gather at axis 0 (embed.c gather_shapes): INDICES.shape + DATA.shape[1:]."""
    _need(op, ins, 1, INT32)
    _ndim(op, ins, 0, 1)
    out = ins[1].shape + ins[0].shape[1:]
    if len(out) > MAX_DIMS:
        _fail(op, "the output would have %d dims", len(out))
    return out


@_fn("Gather")
def _gather(op, ins):
    a = args(op)
    axis = _int(a, "axis", 0)
    wrap, mo = _gather_flags(op, a)
    if axis != 0 or wrap or mo:
        return [Tensor(_gather_geometry(op, ins, axis, False, mo), ins[0].dtype)]
    return [Tensor(_gather0(op, ins), ins[0].dtype)]


@_fn("GatherGradient")
def _gather_grad(op, ins):
    _need(op, ins, 0, FLOAT)
    out = _gather0(op, ins)
    _need(op, ins, 2, FLOAT)
    if ins[2].shape != out:
        _fail(op, "the output gradient %s must have shape %s", list(ins[2].shape), list(out))
    return [Tensor(ins[0].shape, FLOAT)]


@_fn("OneHot")
def _one_hot(op, ins):
    a = args(op)
    has = _has(op, "index_size")
    if len(ins) == 2 and has:
        _fail(op, "index size given both as input 1 and as argument 'index_size'")
    if len(ins) == 1 and not has:
        _fail(op, "the index size is missing")
    _need(op, ins, 0, INT32)
    idx = ins[0].shape
    if len(ins) == 2:
        _need(op, ins, 1, INT32)
        if size(ins[1].shape) != 1:
            _fail(op, "input 1 (the index size) must hold one value, got %s", list(ins[1].shape))
    if len(idx) + 1 > MAX_DIMS:
        _fail(op, "input 0 %s has too many dims", list(idx))
    if len(ins) == 2:
        return [None]
    v = _int(a, "index_size", 0)
    if v < 0:
        _fail(op, "argument index_size must be >= 0")
    return [Tensor(idx + (v,), FLOAT)]


def _batch_cols(op, ins):
    _i32_vector(op, ins, 1)
    _ndim(op, ins, 0, 1)
    x = ins[0].shape
    d = size(x[1:])
    if ins[1].shape[0] != d:
        _fail(op, "lengths %s must hold one length per column of %s", list(ins[1].shape), list(x))
    return x[0], d


@_fn("BatchOneHot")
def _batch_one_hot(op, ins):
    _need(op, ins, 0, FLOAT, INT32)
    n, _ = _batch_cols(op, ins)
    x = ins[0]
    if x.dtype != UNDEFINED:
        _need(op, ins, 2, x.dtype)
    _ndim(op, ins, 2, 1, 1)
    return [Tensor((n, ins[2].shape[0]), _dtype_of(x, ins[2]))]


@_fn("BatchBucketOneHot")
def _batch_bucket_one_hot(op, ins):
    _need(op, ins, 0, FLOAT)
    n, d = _batch_cols(op, ins)
    _need(op, ins, 2, FLOAT)
    _ndim(op, ins, 2, 1, 1)
    return [Tensor((n, ins[2].shape[0] + d), FLOAT)]


@_fn("WeightedSample")
def _weighted_sample(op, ins):
    _int(args(op), "seed", 0)
    if len(op.output) == 2 and len(ins) != 2:
        _fail(op, "output 1 (the sampled values) needs input 1")
    _need(op, ins, 0, FLOAT)
    _ndim(op, ins, 0, 2, 2)
    w = ins[0].shape
    if w[1] > INT32_MAX:
        _fail(op, "too many columns")
    if len(ins) == 2:
        _need(op, ins, 1, FLOAT)
        if ins[1].shape != w:
            _fail(op, "input 1 %s must have the shape of input 0 %s", list(ins[1].shape), list(w))
    n = 0 if w[1] == 0 else w[0]   # no columns: empty outputs, as Caffe2
    res = [Tensor((n,), INT32)]
    if len(op.output) == 2:
        res.append(Tensor((n,), FLOAT))
    return res


@_fn("WeightedMultiSampling")
def _weighted_multi_sampling(op, ins):
    a = args(op)
    _int(a, "seed", 0)
    if len(ins) == 2 and _has(op, "num_samples"):
        _fail(op, "the output's shape is given by input 1: do not pass num_samples too")
    n = _int(a, "num_samples", 0)
    if not 0 <= n <= INT32_MAX:
        _fail(op, "argument num_samples out of range")
    _need(op, ins, 0, FLOAT)
    _ndim(op, ins, 0, 1, 1)
    if ins[0].shape[0] == 0:
        return [Tensor((0,), INT32)]
    if len(ins) == 2:
        return [Tensor(ins[1].shape, INT32)]
    return [Tensor((n,), INT32)]


not_inferred("the output's width is the INDEX_SIZE input's value", "SegmentOneHot")


# ================================================================ sparse.c
@_fn("SparseToDense")
def _sparse_to_dense(op, ins):
    ofd = _int(args(op), "output_first_dim", 0)
    if ofd < 0:
        _fail(op, "argument output_first_dim must be >= 0")
    if ofd > 0 and len(ins) == 3:
        _fail(op, "first dim given both as argument and as input 2")
    _need(op, ins, 0, INT32)
    _need(op, ins, 1, FLOAT, INT32)
    idx, v = ins[0].shape, ins[1].shape
    if len(v) < len(idx) or v[:len(idx)] != idx:
        _fail(op, "the values %s must have shape %s + the row shape", list(v), list(idx))
    row = v[len(idx):]
    if 1 + len(row) > MAX_DIMS:
        _fail(op, "the output would have too many dims")
    if len(ins) == 3:
        _ndim(op, ins, 2, 1)
        return [Tensor((ins[2].shape[0],) + row, ins[1].dtype)]
    if ofd > 0:
        return [Tensor((ofd,) + row, ins[1].dtype)]
    return [None]


def _mask_arg(op):
    mask = _ints(args(op), "mask")
    if not mask:
        _fail(op, "argument mask is missing or empty")
    if any(not 0 <= m <= INT32_MAX for m in mask) or len(set(mask)) != len(mask):
        _fail(op, "argument mask must hold distinct ids in [0, 2^31 - 1]")
    return len(mask)


def _lengths_and_indices(op, ins, ii, li):
    _i32_vector(op, ins, ii)
    if li >= len(ins):
        return -1
    return _i32_vector(op, ins, li)


@_fn("SparseToDenseMask")
def _sparse_to_dense_mask(op, ins):
    a = args(op)
    m = _mask_arg(op)
    presence = _int(a, "return_presence_mask", 0)
    _int(a, "max_skipped_indices", 5)
    if presence not in (0, 1):
        _fail(op, "argument return_presence_mask must be 0 or 1")
    if len(op.output) != 1 + presence:
        _fail(op, "output 1 (the presence mask) goes with return_presence_mask=1")
    L = _lengths_and_indices(op, ins, 0, 3)
    _need(op, ins, 1, FLOAT, INT32)
    _ndim(op, ins, 1, 1)
    v, d = ins[1], ins[2]
    if v.dtype != UNDEFINED:
        _need(op, ins, 2, v.dtype)
    if v.shape[0] != ins[0].shape[0]:
        _fail(op, "the values %s must have one row per index", list(v.shape))
    if d.shape != v.shape[1:]:
        _fail(op, "the default %s must have the shape of a row of %s", list(d.shape), list(v.shape))
    if len(ins) == 4 and len(v.shape) + 1 > MAX_DIMS:
        _fail(op, "the output would have too many dims")
    lead = (m,) if L < 0 else (L, m)
    res = [Tensor(lead + d.shape, _dtype_of(v, d))]
    if presence:
        res.append(Tensor(lead, INT32))
    return res


@_fn("SparseToDenseMaskGradient")
def _sparse_to_dense_mask_grad(op, ins):
    m = _mask_arg(op)
    L = _lengths_and_indices(op, ins, 0, 2)
    _need(op, ins, 1, FLOAT)
    g = ins[1].shape
    lead = 2 if L >= 0 else 1
    if len(g) < lead or (lead == 2 and g[0] != L) or g[lead - 1] != m:
        _fail(op, "the output gradient %s does not fit the mask of %d ids", list(g), m)
    return [Tensor((ins[0].shape[0],) + g[lead:], FLOAT)]


@_fn("BatchSparseToDense")
def _batch_sparse_to_dense(op, ins):
    a = args(op)
    _float(a, "default_value", 0.0)
    has = _has(op, "dense_last_dim")
    if not has and len(ins) == 3:
        _fail(op, "the output's last dim is missing")
    d = _int(a, "dense_last_dim", -1)
    if has and d < 1:
        _fail(op, "argument dense_last_dim must be >= 1")
    b = _lengths_and_indices(op, ins, 1, 0)
    _need(op, ins, 2, FLOAT)
    if ins[2].shape != ins[1].shape:
        _fail(op, "the values %s must have the shape of the indices %s", list(ins[2].shape),
              list(ins[1].shape))
    if len(ins) == 4:
        _ndim(op, ins, 3, 2, 2)
        if has and d != ins[3].shape[1]:
            _fail(op, "argument dense_last_dim differs from dim 1 of input 3")
        d = ins[3].shape[1]
    return [Tensor((b, d), FLOAT)]


@_fn("BatchDenseToSparse")
def _batch_dense_to_sparse(op, ins):
    b = _lengths_and_indices(op, ins, 1, 0)
    _need(op, ins, 2, FLOAT)
    if len(ins[2].shape) != 2 or ins[2].shape[0] != b:
        _fail(op, "the dense tensor %s must be 2-D with %d rows", list(ins[2].shape), b)
    return [Tensor(ins[1].shape, FLOAT)]


def _require_inplace(op):
    if op.output[0] != op.input[0]:
        _fail(op, "output 0 must be input 0 (updated in place)")


def _scalar_f32(op, ins, i):
    _need(op, ins, i, FLOAT)
    if size(ins[i].shape) != 1:
        _fail(op, "input %d must hold one value, got %s", i, list(ins[i].shape))


@_fn("ScatterWeightedSum")
def _scatter_weighted_sum(op, ins):
    if len(ins) % 2 == 0:
        _fail(op, "expects an odd number of inputs")
    _require_inplace(op)
    _need(op, ins, 2, INT32)
    _scalar_f32(op, ins, 1)
    x, idx = ins[0].shape, ins[2].shape
    for i in range(3, len(ins) - 1, 2):
        _need(op, ins, 0, FLOAT)
        _need(op, ins, i, FLOAT)
        _ndim(op, ins, 0, 1)
        want = idx + x[1:]
        if len(want) > MAX_DIMS or ins[i].shape != want:
            _fail(op, "input %d %s must have shape %s", i, list(ins[i].shape), list(want))
        _scalar_f32(op, ins, i + 1)
    return [ins[0]]


@_fn("CopyRowsToTensor")
def _copy_rows_to_tensor(op, ins):
    _require_inplace(op)
    _need(op, ins, 1, INT32)
    _need(op, ins, 0, FLOAT, INT32)
    x = ins[0]
    _ndim(op, ins, 0, 2, 2)
    _ndim(op, ins, 1, 1, 1)
    if x.dtype != UNDEFINED:
        _need(op, ins, 2, x.dtype)
    if ins[2].shape != (x.shape[1],):
        _fail(op, "the row %s must have shape (%d,)", list(ins[2].shape), x.shape[1])
    return [Tensor(x.shape, _dtype_of(x, ins[2]))]


@_fn("CopyRowsToTensorGradient")
def _copy_rows_to_tensor_grad(op, ins):
    _need(op, ins, 1, INT32)
    _need(op, ins, 0, FLOAT)
    _ndim(op, ins, 0, 2, 2)
    _ndim(op, ins, 1, 1, 1)
    n, w = ins[0].shape
    res = [Tensor((n, w), FLOAT)]
    if len(op.output) == 2:
        res.append(Tensor((w,), FLOAT))
    return res


# ================================================================ fill.c
def _fill_common(op, ins, unique=False):
    """The fills' setup and shape rules: the output shape, or None (input_as_shape=1)."""
    a = args(op)
    ias = _int(a, "input_as_shape", 0) != 0
    sa = arg(op, "shape")
    if sa is not None and sa.kind() == "i":
        _fail(op, "argument 'shape' was a scalar, a list of ints is expected")
    shape, extra = _ints(a, "shape"), _ints(a, "extra_shape")
    for name, v in (("shape", shape), ("extra_shape", extra)):
        if len(v) > MAX_DIMS or any(d < 0 for d in v):
            _fail(op, "argument '%s' %s is not a shape", name, v)
    if len(ins) == 2 and not unique:
        _fail(op, "takes no input, one or three, got two")
    if ins:
        if shape:
            _fail(op, "argument 'shape' together with an input")
    else:
        if extra:
            _fail(op, "argument 'extra_shape' without an input")
        if ias:
            _fail(op, "input_as_shape without an input")
    if _has(op, "seed"):
        _int(a, "seed", 0)
    if not ins:
        return tuple(shape)
    x = ins[0]
    if ias:
        _need(op, ins, 0, INT32)
        _ndim(op, ins, 0, 1, 1)
        if x.shape[0] + len(extra) > MAX_DIMS:
            _fail(op, "the shape from input 0 has too many dims")
        return None
    if len(x.shape) + len(extra) > MAX_DIMS:
        _fail(op, "input 0 %s plus extra_shape has too many dims", list(x.shape))
    return x.shape + tuple(extra)


def _value_dtype(op, infer_int):
    """ConstantFill's / DiagonalFill's output dtype from 'dtype' and 'value'."""
    a = args(op)
    value = arg(op, "value")
    if value is not None and value.kind() not in ("f", "i"):
        _fail(op, "argument 'value' must be a float or an int")
    if _has(op, "dtype"):
        dtype = _int(a, "dtype", 1)
    elif infer_int and value is not None and value.kind() == "i":
        dtype = 2
    else:
        dtype = 1
    ranges = {2: (-2 ** 31, INT32_MAX), 10: (-2 ** 31, INT32_MAX), 9: (-2 ** 15, 2 ** 15 - 1), 7: (-128, 127),
              6: (0, 255), 3: (0, 255), 8: (0, 65535)}  # the integer types, stored as int32 (fill.c)
    if dtype not in (1, 13, 12, 5) and dtype not in ranges:
        _fail(op, "argument 'dtype' %d is not supported", dtype)
    if dtype in ranges and value is not None:
        v = value.value()
        lo, hi = ranges[dtype]
        if not lo <= v <= hi or v != int(v):
            _fail(op, "argument 'value' does not fit dtype %d", dtype)
    return FLOAT if dtype in (1, 13, 12) else INT32


def _fill_out(shape, dtype):
    return [None if shape is None else Tensor(shape, dtype)]


@_fn("ConstantFill")
def _constant_fill(op, ins):
    dtype = _value_dtype(op, True)
    return _fill_out(_fill_common(op, ins), dtype)


@_fn("DiagonalFill")
def _diagonal_fill(op, ins):
    dtype = _value_dtype(op, False)
    shape = _fill_common(op, ins)
    if shape is not None:
        if len(shape) < 2:
            _fail(op, "the output must have at least 2 dims, got %s", list(shape))
        if len(shape) > 2 and len(set(shape)) != 1:
            _fail(op, "with more than 2 dims all must be equal, got %s", list(shape))
    return _fill_out(shape, dtype)


def _uniform(op, ins, dtype):
    a = args(op)
    shape = _fill_common(op, ins)
    if len(ins) == 3 and (_has(op, "min") or _has(op, "max")):
        _fail(op, "min / max given both as arguments and as inputs")
    if dtype == FLOAT:
        lo, hi = _float(a, "min", 0.0), _float(a, "max", 1.0)
        if not lo <= hi or abs(lo) == float("inf") or abs(hi) == float("inf"):
            _fail(op, "argument 'min' must be <= 'max', both finite")
    else:
        lo, hi = _int(a, "min", 0), _int(a, "max", 1)
        if lo < -2 ** 31 or hi > INT32_MAX or lo > hi:
            _fail(op, "argument 'min' must be <= 'max', both int32")
    if len(ins) == 3:
        for i in (1, 2):
            _need(op, ins, i, dtype)
            if size(ins[i].shape) != 1:
                _fail(op, "input %d must hold one element, got %s", i, list(ins[i].shape))
        return [None]   # MIN > MAX (values) gives a first dim of 0
    return _fill_out(shape, dtype)


@_fn("UniformFill")
def _uniform_fill(op, ins):
    return _uniform(op, ins, FLOAT)


@_fn("UniformIntFill")
def _uniform_int_fill(op, ins):
    return _uniform(op, ins, INT32)


@_fn("UniqueUniformFill")
def _unique_uniform_fill(op, ins):
    a = args(op)
    shape = _fill_common(op, ins, unique=True)
    if _int(a, "dtype", 2) not in (2, 10):
        _fail(op, "argument 'dtype' must be 2 or 10")
    if not _has(op, "min") or not _has(op, "max"):
        _fail(op, "arguments 'min' and 'max' are required")
    lo, hi = _int(a, "min", 0), _int(a, "max", 0)
    if lo < -2 ** 31 or hi > INT32_MAX or lo >= hi:
        _fail(op, "argument 'min' must be < 'max', both int32")
    if len(ins) == 2:
        _need(op, ins, 1, INT32)
    if shape is not None and size(shape) > hi - lo + 1:
        _fail(op, "%d distinct values asked from [%d, %d]", size(shape), lo, hi)
    return _fill_out(shape, INT32)


@_fn("GaussianFill")
def _gaussian_fill(op, ins):
    a = args(op)
    shape = _fill_common(op, ins)
    mean, std = _float(a, "mean", 0.0), _float(a, "std", 1.0)
    if not std >= 0 or abs(std) == float("inf") or abs(mean) == float("inf") or mean != mean:
        _fail(op, "argument 'std' must be >= 0 and 'mean' finite")
    return _fill_out(shape, FLOAT)


def _fan_fill(op, ins, dim):
    shape = _fill_common(op, ins)
    if shape is not None and len(shape) <= dim:
        _fail(op, "the output must have at least %d dims, got %s", dim + 1, list(shape))
    return _fill_out(shape, FLOAT)


@_fn("RangeFill")
def _range_fill(op, ins):
    return _fill_out(_fill_common(op, ins), FLOAT)


@_fn("SparseLengthsFill")
def _sparse_lengths_fill(op, ins):
    """() -> VALUES (batch_size * average_len,) int32, LENGTHS (batch_size,) int32 (the arguments
    required and in range, as the op's setup says)."""
    a = args(op)
    for name in ("batch_size", "average_len", "max_value"):
        if not _has(op, name):
            _fail(op, "argument '%s' is required", name)
    b, l, m = _int(a, "batch_size", 0), _int(a, "average_len", 0), _int(a, "max_value", 1)
    if not 0 <= b <= INT32_MAX:
        _fail(op, "argument 'batch_size' must be in [0, %d], got %d", INT32_MAX, b)
    if l < 0 or b * l > INT32_MAX:
        _fail(op, "argument 'average_len' must be >= 0 with batch_size * average_len <= %d", INT32_MAX)
    if not 1 <= m <= 2 ** 31:
        _fail(op, "argument 'max_value' must be in [1, 2^31], got %d", m)
    return [Tensor((b * l,), INT32), Tensor((b,), INT32)]


@_fn("MSRAFill")
def _msra_fill(op, ins):
    return _fan_fill(op, ins, 1)


@_fn("XavierFill")
def _xavier_fill(op, ins):
    return _fan_fill(op, ins, 0)


def _given(op, ins, dtype):
    shape = _fill_common(op, ins)
    v = arg(op, "values")
    n = 0
    if v is not None:
        kind = v.kind()
        if kind not in ("floats", "ints", "strings", "nets"):
            _fail(op, "argument 'values' must be a list")
        vals = v.value()
        if vals and kind != "ints" and not (dtype == FLOAT and kind == "floats"):
            _fail(op, "argument 'values' has the wrong kind")
        lo, hi = {"GivenTensorInt16Fill": (-2 ** 15, 2 ** 15 - 1),
                  "GivenTensorBoolFill": (0, 1)}.get(op.type, (-2 ** 31, INT32_MAX))
        if dtype == INT32 and any(not lo <= x <= hi for x in vals):
            _fail(op, "argument 'values' does not fit %s", op.type)
        n = len(vals)
    if shape is not None and size(shape) != n:
        _fail(op, "argument 'values' has %d elements but shape %s needs %d", n, list(shape), size(shape))
    return _fill_out(shape, dtype)


@_fn("GivenTensorFill", "GivenTensorDoubleFill")
def _given_tensor_fill(op, ins):
    return _given(op, ins, FLOAT)


@_fn("GivenTensorIntFill", "GivenTensorInt64Fill", "GivenTensorInt16Fill", "GivenTensorBoolFill")
def _given_tensor_int_fill(op, ins):
    return _given(op, ins, INT32)


@_fn("ZeroGradient", "Print")
def _no_outputs(op, ins):
    return []


@_fn("Summarize")
def _summarize(op, ins):
    if _int(args(op), "to_file", 0) not in (0, 1):
        raise _Unknown()
    _need(op, ins, 0, FLOAT)
    if size(ins[0].shape) == 0:
        raise ShapeError("Summarize: input 0 '%s' %s is empty" % (op.input[0], list(ins[0].shape)))
    return [Tensor((4,), FLOAT)] if op.output else []


# ================================================================ util.c
@_fn("Alias", "CopyFromCPUInput", "EnsureCPUOutput", "EnsureDense")
def _copy(op, ins):
    return [ins[0]]


# ================================================================ decode.c
def _matrix(op, ins, i):
    _need(op, ins, i, FLOAT)
    _ndim(op, ins, i, 2, 2)
    return ins[i].shape


@_fn("ViterbiPath")
def _viterbi_path(op, ins):
    t, c = _matrix(op, ins, 0)
    tr = _matrix(op, ins, 1)
    if tr != (c, c):
        _fail(op, "transitions %s must be %d x %d", list(tr), c, c)
    if t > 0 and c == 0:
        _fail(op, "no class to choose")
    return [Tensor((t,), INT32)]


@_fn("SwapBestPath")
def _swap_best_path(op, ins):
    t, c = _matrix(op, ins, 0)
    if _i32_vector(op, ins, 1) != t:
        _fail(op, "bestPath %s must have one entry per row of %s", list(ins[1].shape), [t, c])
    return [Tensor((t, c), FLOAT)]


def _ctc_inputs(op, ins):
    _need(op, ins, 0, FLOAT)
    _ndim(op, ins, 0, 3, 3)
    t, n, c = ins[0].shape
    if len(ins) > 1:
        if _i32_vector(op, ins, 1) != n:
            _fail(op, "SEQ_LEN %s must have %d entries", list(ins[1].shape), n)
    elif t > 0 and n > 0 and c == 0:
        _fail(op, "INPUTS %s has no class to choose", list(ins[0].shape))
    return n


@_fn("CTCGreedyDecoder")
def _ctc_greedy(op, ins):
    _int(args(op), "merge_repeated", 1)
    n = _ctc_inputs(op, ins)
    return [Tensor((n,), INT32), None]


@_fn("CTCBeamSearchDecoder")
def _ctc_beam(op, ins):
    a = args(op)
    width, k = _int(a, "beam_width", 10), _int(a, "num_candidates", 1)
    _float(a, "prune_threshold", 0.001)
    if not 1 <= width <= INT32_MAX or not 1 <= k <= width:
        _fail(op, "arguments beam_width / num_candidates out of range")
    n = _ctc_inputs(op, ins)
    res = [Tensor((n * k,), INT32), None]
    if len(op.output) > 2:
        res.append(Tensor((n * k,), FLOAT))
    return res


# ================================================================ calib.c
@_fn("Percentile")
def _percentile(op, ins):
    x = _matrix(op, ins, 0)
    vp = _matrix(op, ins, 1)
    f = _i32_vector(op, ins, 2)
    if vp[1] != 2:
        _fail(op, "value_to_pct %s must have 2 columns", list(vp))
    if f != x[1]:
        _fail(op, "lengths %s must have one entry per column of %s", list(ins[2].shape), list(x))
    return [Tensor(x, FLOAT)]


@_fn("BisectPercentile")
def _bisect_percentile(op, ins):
    a = args(op)
    names = ("percentile_raw", "percentile_mapping", "percentile_lower", "percentile_upper")
    ns = [len(_floats(a, nm)) for nm in names]
    lengths = _ints(a, "lengths")
    if len(set(ns)) != 1 or any(v < 1 for v in lengths) or sum(lengths) != ns[0]:
        _fail(op, "the percentile_* arguments and 'lengths' do not fit")
    x = _matrix(op, ins, 0)
    if x[1] != len(lengths):
        _fail(op, "input %s must have one column per entry of 'lengths' (%d)", list(x), len(lengths))
    return [Tensor(x, FLOAT)]


@_fn("BatchBoxCox")
def _batch_box_cox(op, ins):
    _need(op, ins, 0, FLOAT)
    _ndim(op, ins, 0, 1, MAX_DIMS)
    d = ins[0].shape
    k = size(d[1:])
    for i in (1, 2):
        _need(op, ins, i, FLOAT)
        if size(ins[i].shape) != k:
            _fail(op, "lambda%d %s must have %d entries", i, list(ins[i].shape), k)
    return [Tensor(d, FLOAT)]


@_fn("PiecewiseLinearTransform")
def _piecewise_linear_transform(op, ins):
    a = args(op)
    binary = _int(a, "binary", 0) != 0
    _int(a, "pieces", 0)
    nb, ns, nc = (len(_floats(a, nm)) for nm in ("bounds", "slopes", "intercepts"))
    n_set = (nb > 0) + (ns > 0) + (nc > 0)
    if n_set not in (0, 3):
        _fail(op, "arguments 'bounds', 'slopes' and 'intercepts' must be all set or all unset")
    if len(ins) != (1 if n_set == 3 else 4):
        _fail(op, "takes the pieces from the arguments or from inputs 1..3")
    _need(op, ins, 0, FLOAT)
    _ndim(op, ins, 0, 1 if binary else 2, 2)
    for i in range(1, len(ins)):
        _need(op, ins, i, FLOAT)
    if n_set != 3:
        nb, ns, nc = (size(t.shape) for t in ins[1:])
    g = nb - ns
    if ns != nc or g < 1 or ns % g or ns // g < 1 or (binary and g != 1):
        _fail(op, "%d bounds, %d slopes and %d intercepts do not make groups of pieces", nb, ns, nc)
    x = ins[0].shape
    m = x[1] if len(x) == 2 else 1
    if not binary and m != g:
        _fail(op, "input 0 %s must have one column per group of pieces (%d)", list(x), g)
    if binary and m > 2:
        _fail(op, "binary=1 takes [N], [N, 1] or [N, 2], got %s", list(x))
    return [Tensor(x, FLOAT)]
