/* ops/shape.c -- shape operators: Concat, Split (also under Caffe2's legacy names DepthConcat, DepthSplit),
 * SplitByLengths, Reshape, PrependDim, MergeDim, Flatten, FlattenToVec, ResizeLike, Transpose, NCHW2NHWC,
 * NHWC2NCHW, ExpandDims, Squeeze, Shape, Size, IsEmpty, HasElements, Slice, SliceGradient, and the int32
 * lengths ops LengthsToShape and LengthsSplit. All but SliceGradient and the lengths ops work on any
 * dtype (float32, int32): they move 4-byte elements without looking at them.
 *
 * Semantics follow Caffe2 (concat_split_op.h, reshape_op.h, prepend_dim_op.h, transpose_op.h,
 * expand_squeeze_dims_op.h, flatten_op.h, utility_ops.h, shape_op.h, slice_op.h, length_split_op.h).
 * Reshape: a 0 copies the input's dim unless the input is empty (then it stays 0, as Caffe2).
 * LengthsToShape / LengthsSplit refuse negative lengths (Caffe2 did not check). Arguments are parsed
 * once in setup into op->state; run only resizes outputs and copies.
 *
 * FlattenToVec(X) -> Y = X.ravel(): any rank (Caffe2 refused a 0-d X; here it
 * gives shape (1,), as np.ravel), not in place (as Caffe2: its gradient,
 * ResizeLike(dY, X), needs X's shape).
 *
 * NCHW2NHWC(X) -> Y: X (N, C, H_1..H_k), k >= 1 (3 to 8 dims, as Caffe2 wanted >= 3), to
 * (N, H_1..H_k, C); NHWC2NCHW the inverse (order_switch_ops.h; Caffe2: float only, here int32 too).
 * Not in place, as Caffe2's schemas.
 *
 * IsEmpty(X) -> Y, HasElements(X0, X1, ...) -> Y: an int32 0-d tensor (Caffe2: bool), 1 when X has
 * no element / when any input has one; the inputs may hold tensors of any dtype and shape.
 *
 * Shape(X) -> Y: Y is 1-D int32 holding X's dims (a 0-d X gives an empty Y);
 * with argument `axes` only those dims, in that order (negative axes count
 * from the end; each must be in [-ndim, ndim)).
 *
 * Slice(data[, starts, ends]) -> output, starts/ends given either as the int
 * list arguments `starts` and `ends` or as inputs 1 and 2 (1-D int32), not
 * both. As Caffe2: starts and ends have one entry per leading dim of data (as
 * many entries or fewer: the dims after them are kept whole); a negative
 * value v means size + 1 + v (an end of -1 is the end of the dim, a start of
 * -1 is empty at the end); values above the size are clamped to it; then
 * 0 <= start <= end is required, else a ValueError naming the dim and the
 * values. A dim of size 0 gives 0 whatever the values (as Caffe2). Any
 * number of dims may be sliced (Caffe2 allowed only one). Output: data's
 * dtype, shape end - start per dim.
 *
 * SliceGradient(data[, starts, ends], dY) -> dX: float32 dX of data's shape,
 * zero outside the slice and dY inside it; dY (float32) must have the
 * slice's shape. data is read for its shape only (any dtype).
 */
#include "../core/rc_core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */
static void dims_str(char *buf, size_t len, int ndim, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (k < len) snprintf(buf + k, len - k, ndim == 1 ? ",)" : ")");
}

/* Input i must hold a tensor (any dtype). */
static rc_status need_tensor(rc_op *op, int i, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->dtype == RC_UNDEF || !t->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", i,
                          rc_in_name(op, i));
    return RC_OK;
}

/* Wraps a resize failure of output o with the op, the blob and the shape. */
static rc_status resize_out(rc_op *op, int o, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err)
{
    rc_status st = rc_tensor_resize(rc_out(op, o), dt, ndim, dims, err);
    if (st) {
        char buf[160], msg[RC_ERR_LEN];
        dims_str(buf, sizeof buf, ndim, dims);
        memcpy(msg, err->msg, sizeof msg);
        return rc_op_fail(op, err, st, "output %d blob '%s' of shape %s: %s", o, rc_out_name(op, o), buf, msg);
    }
    return RC_OK;
}

/* Output o = input i's bytes with shape dims (same element count, checked by
 * the caller). In place (output o is input i) only the dims change. */
static rc_status copy_with_shape(rc_op *op, int i, int o, int ndim, const int64_t *dims, rc_err *err)
{
    rc_tensor *x = rc_in(op, i), *y = rc_out(op, o);
    if (x == y) return resize_out(op, o, x->dtype, ndim, dims, err); /* same byte size: buffer kept */
    rc_status st = resize_out(op, o, x->dtype, ndim, dims, err);
    if (st) return st;
    size_t nb = rc_tensor_nbytes(x);
    void *src = rc_tensor_data(x), *dst = rc_tensor_data(y);
    if (nb && src != dst) memmove(dst, src, nb);
    return RC_OK;
}

/* Writes dims[0..n) into output o as a 1-D int32 tensor (split_info, old_shape). */
static rc_status write_i32_dims(rc_op *op, int o, int n, const int64_t *vals, rc_err *err)
{
    for (int k = 0; k < n; k++)
        if (vals[k] > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "output %d blob '%s': value %lld does not fit int32", o,
                              rc_out_name(op, o), (long long)vals[k]);
    int64_t len = n;
    rc_status st = resize_out(op, o, RC_I32, 1, &len, err);
    if (st) return st;
    int32_t *d = rc_i32(rc_out(op, o));
    for (int k = 0; k < n; k++) d[k] = (int32_t)vals[k];
    return RC_OK;
}

/* Caffe2's 'axis' or legacy 'order' (NCHW -> 1, NHWC -> 3); default 1. */
static rc_status read_axis(rc_op *op, int64_t *axis, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(&op->def, "axis");
    const rc_arg *o = rc_opdef_arg(&op->def, "order");
    if (a && o) return rc_op_fail(op, err, RC_ERR_VALUE, "set either argument 'axis' or 'order', not both");
    if (o) {
        const char *s;
        rc_status st = rc_arg_s(&op->def, "order", "NCHW", &s, err);
        if (st) return st;
        if (!strcmp(s, "NCHW")) *axis = 1;
        else if (!strcmp(s, "NHWC")) *axis = 3;
        else return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'order' must be NCHW or NHWC, got '%s'", s);
        return RC_OK;
    }
    return rc_arg_i(&op->def, "axis", 1, axis, err);
}

/* ---------------------------------------------------------------- Concat / Split */
typedef struct axis_state {
    int64_t axis;
    int add_axis;
    int nsplit;             /* Split: sizes from argument 'split' (0: none) */
    int scaling;            /* SplitByLengths: use_scaling_lengths */
    int64_t *split;         /* owned */
    int64_t *sizes;         /* per-input / per-output sizes along the axis (scratch, owned) */
} axis_state;

static void axis_state_free(void *p)
{
    axis_state *s = p;
    if (!s) return;
    free(s->split);
    free(s->sizes);
    free(s);
}

static rc_status axis_setup(rc_op *op, int nsizes, rc_err *err)
{
    axis_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->sizes = calloc((size_t)nsizes + 1, sizeof *s->sizes);
    if (!s->sizes) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    rc_status st = read_axis(op, &s->axis, err);
    if (st) return st;
    int64_t add;
    if ((st = rc_arg_i(&op->def, "add_axis", 0, &add, err))) return st;
    s->add_axis = add != 0;
    return RC_OK;
}

static rc_status canonical_axis(rc_op *op, int64_t axis, int ndim, const char *what, int *out, rc_err *err)
{
    if (axis < -ndim || axis >= ndim)
        return rc_op_fail(op, err, RC_ERR_INDEX, "axis %lld is out of range for %s (%d dims)", (long long)axis, what,
                          ndim);
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return RC_OK;
}

static rc_status concat_setup(rc_op *op, rc_err *err) { return axis_setup(op, op->n_in, err); }

/* The inputs: one dtype, equal shapes but along the axis (*pax, canonical). */
static rc_status concat_shapes(rc_op *op, int *pax, rc_err *err)
{
    const axis_state *s = op->state;
    rc_status st;
    for (int i = 0; i < op->n_in; i++)
        if ((st = need_tensor(op, i, err))) return st;
    const rc_tensor *x0 = rc_in(op, 0);
    int adj = x0->ndim + s->add_axis, ax = 0;
    if ((st = canonical_axis(op, s->axis, adj, s->add_axis ? "the output" : "input 0", &ax, err))) return st;
    for (int i = 1; i < op->n_in; i++) {
        const rc_tensor *xi = rc_in(op, i);
        if (xi->dtype != x0->dtype)
            return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' %s must have the dtype of input 0 blob '%s' %s",
                              i, rc_in_name(op, i), RC_SHAPE(xi), rc_in_name(op, 0), RC_SHAPE(x0));
        int bad = xi->ndim != x0->ndim;
        for (int d = 0; d < x0->ndim && !bad; d++)
            if ((d != ax || s->add_axis) && xi->dims[d] != x0->dims[d]) bad = 1;
        if (bad && s->add_axis)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' %s does not match input 0 blob '%s' %s: with add_axis=1 all "
                              "shapes must be equal", i, rc_in_name(op, i), RC_SHAPE(xi), rc_in_name(op, 0),
                              RC_SHAPE(x0));
        if (bad)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' %s does not match input 0 blob '%s' %s: only axis %d may differ", i,
                              rc_in_name(op, i), RC_SHAPE(xi), rc_in_name(op, 0), RC_SHAPE(x0), ax);
    }
    *pax = ax;
    return RC_OK;
}

static rc_status concat_check(rc_op *op, rc_err *err)
{
    int ax;
    return concat_shapes(op, &ax, err);
}

static rc_status concat_run(rc_op *op, rc_err *err)
{
    axis_state *s = op->state;
    rc_status st;
    int ax = 0;
    if ((st = concat_shapes(op, &ax, err))) return st;
    const rc_tensor *x0 = rc_in(op, 0);
    /* Y[before, sum_i n_i, after] = concat_i X_i[before, n_i, after] (add_axis: n_i = 1, a new dim) */
    int64_t before = 1, after = 1, total = 0, odims[RC_MAX_DIMS + 1];
    for (int d = 0; d < ax; d++) before *= x0->dims[d];
    for (int d = s->add_axis ? ax : ax + 1; d < x0->ndim; d++) after *= x0->dims[d];
    for (int i = 0; i < op->n_in; i++) {
        s->sizes[i] = s->add_axis ? 1 : rc_in(op, i)->dims[ax];
        total += s->sizes[i];
    }
    int ond = 0;
    for (int d = 0; d < x0->ndim; d++) {
        if (d == ax && s->add_axis) odims[ond++] = total;
        odims[ond++] = (d == ax && !s->add_axis) ? total : x0->dims[d];
    }
    if (s->add_axis && ax == x0->ndim) odims[ond++] = total;
    if (op->n_out > 1 && (st = write_i32_dims(op, 1, op->n_in, s->sizes, err))) return st;
    rc_dtype dt = x0->dtype;
    if ((st = resize_out(op, 0, dt, ond, odims, err))) return st;
    size_t esz = rc_dtype_size(dt);
    char *y = rc_tensor_data(rc_out(op, 0));
    size_t orow = (size_t)(total * after) * esz, off = 0;
    for (int i = 0; i < op->n_in; i++) {
        size_t irow = (size_t)(s->sizes[i] * after) * esz;
        const char *x = rc_tensor_data(rc_in(op, i));
        if (irow)
            for (int64_t b = 0; b < before; b++) memcpy(y + (size_t)b * orow + off, x + (size_t)b * irow, irow);
        off += irow;
    }
    return RC_OK;
}

static rc_status split_setup(rc_op *op, rc_err *err)
{
    rc_status st = axis_setup(op, op->n_out, err);
    if (st) return st;
    axis_state *s = op->state;
    const int64_t *v;
    int n;
    if ((st = rc_arg_ints(&op->def, "split", &v, &n, err))) return st;
    if (n && op->n_in == 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "the split sizes are given by input 1 blob '%s': do not also pass argument 'split'",
                          rc_in_name(op, 1));
    if (n && n != op->n_out)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'split' has %d sizes for %d outputs", n, op->n_out);
    if (n) {
        s->split = malloc(sizeof(int64_t) * (size_t)n);
        if (!s->split) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        for (int k = 0; k < n; k++) {
            if (v[k] < 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'split' has a negative size %lld for output %d blob '%s'",
                                  (long long)v[k], k, rc_out_name(op, k));
            s->split[k] = v[k];
        }
        s->nsplit = n;
    }
    return RC_OK;
}

/* The input, the axis (*pax) and the split sizes (into s->sizes, the op's scratch), which must
 * sum to the axis' size; with sizes in input 1, values=0 stops before reading them (the check). */
static rc_status split_shapes(rc_op *op, int values, int *pax, rc_err *err)
{
    axis_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int ax = 0;
    if ((st = canonical_axis(op, s->axis, x->ndim, "input 0", &ax, err))) return st;
    *pax = ax;
    int64_t channels = x->dims[ax];
    int nout = op->n_out;
    const char *src_desc;
    if (op->n_in == 2) {
        if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
        const rc_tensor *sp = rc_in(op, 1);
        if (rc_tensor_numel(sp) != nout)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s must hold %d split sizes, one per output",
                              rc_in_name(op, 1), RC_SHAPE(sp), nout);
        if (!values) return RC_OK;
        const int32_t *v = rc_i32(sp);
        for (int k = 0; k < nout; k++) {
            if (v[k] < 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' has a negative split size %d for output %d",
                                  rc_in_name(op, 1), (int)v[k], k);
            s->sizes[k] = v[k];
        }
        src_desc = "input 1";
    } else if (s->nsplit) {
        memcpy(s->sizes, s->split, sizeof(int64_t) * (size_t)nout);
        src_desc = "argument 'split'";
    } else {
        if (!s->add_axis && channels % nout)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 0 blob '%s' %s: axis %d of size %lld cannot be split equally into %d outputs "
                              "(pass 'split')", rc_in_name(op, 0), RC_SHAPE(x), ax, (long long)channels, nout);
        for (int k = 0; k < nout; k++) s->sizes[k] = s->add_axis ? 1 : channels / nout;
        src_desc = "equal split";
    }
    int64_t sum = 0;
    for (int k = 0; k < nout; k++) sum += s->sizes[k];
    for (int k = 0; s->add_axis && k < nout; k++)
        if (s->sizes[k] != 1) {
            char buf[160];
            dims_str(buf, sizeof buf, nout, s->sizes);
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "with add_axis=1 each output is one slice of axis %d, so every split size must be 1; "
                              "got %s (%s) for input 0 blob '%s' %s", ax, buf, src_desc, rc_in_name(op, 0),
                              RC_SHAPE(x));
        }
    if (s->add_axis ? channels != nout : sum != channels) {
        char buf[160];
        dims_str(buf, sizeof buf, nout, s->sizes);
        if (s->add_axis)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "with add_axis=1, axis %d of input 0 blob '%s' %s must equal the number of outputs %d",
                              ax, rc_in_name(op, 0), RC_SHAPE(x), nout);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "split sizes %s (%s) sum to %lld but axis %d of input 0 blob '%s' %s has size %lld", buf,
                          src_desc, (long long)sum, ax, rc_in_name(op, 0), RC_SHAPE(x), (long long)channels);
    }
    return RC_OK;
}

static rc_status split_check(rc_op *op, rc_err *err)
{
    int ax;
    return split_shapes(op, 0, &ax, err);
}

/* Writes the outputs of Split / SplitByLengths: input 0 cut along axis ax by s->sizes (checked). */
static rc_status split_copy(rc_op *op, int ax, rc_err *err)
{
    axis_state *s = op->state;
    rc_status st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t channels = x->dims[ax];
    int nout = op->n_out;
    /* Y_k[before, n_k, after] = X[before, offset_k : offset_k + n_k, after] (add_axis: n_k = 1, dim dropped) */
    int64_t before = 1, after = 1;
    for (int d = 0; d < ax; d++) before *= x->dims[d];
    for (int d = ax + 1; d < x->ndim; d++) after *= x->dims[d];
    size_t esz = rc_dtype_size(x->dtype);
    size_t irow = (size_t)(channels * after) * esz, off = 0;
    const char *xd = rc_tensor_data(x);
    for (int k = 0; k < nout; k++) {
        int64_t od[RC_MAX_DIMS];
        int ond = 0;
        for (int d = 0; d < x->ndim; d++) {
            if (d == ax && s->add_axis) continue;
            od[ond++] = d == ax ? s->sizes[k] : x->dims[d];
        }
        if ((st = resize_out(op, k, x->dtype, ond, od, err))) return st;
        size_t orow = (size_t)(s->sizes[k] * after) * esz;
        char *y = rc_tensor_data(rc_out(op, k));
        if (orow)
            for (int64_t b = 0; b < before; b++) memcpy(y + (size_t)b * orow, xd + (size_t)b * irow + off, orow);
        off += orow;
    }
    return RC_OK;
}

static rc_status split_run(rc_op *op, rc_err *err)
{
    int ax = 0;
    rc_status st = split_shapes(op, 1, &ax, err);
    return st ? st : split_copy(op, ax, err);
}

/* ---------------------------------------------------------------- SplitByLengths */
/* SplitByLengths(input, lengths) -> Y_0..Y_{n-1} (Caffe2's): lengths (L,) int32 with L a multiple of n;
 * output k gets the rows along axis of the k-th run of L / n lengths. axis as Split's (default 1, or
 * 'order'); use_scaling_lengths=1: each length counts input.shape[axis] / sum(lengths) rows. */
static rc_status sbl_setup(rc_op *op, rc_err *err)
{
    rc_status st = axis_setup(op, op->n_out, err);
    if (st) return st;
    axis_state *s = op->state;
    if (s->add_axis)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'add_axis' is not one of SplitByLengths' (Split's only)");
    int64_t sc;
    if ((st = rc_arg_i(&op->def, "use_scaling_lengths", 0, &sc, err))) return st;
    s->scaling = sc != 0;
    return RC_OK;
}

/* The input, the axis (*pax) and the output sizes (into s->sizes); values=0 stops before reading
 * the lengths (the check at creation). */
static rc_status sbl_shapes(rc_op *op, int values, int *pax, rc_err *err)
{
    axis_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (!st) st = rc_check_input(op, 1, RC_I32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (l->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (lengths) must be 1-D, got %s", rc_in_name(op, 1),
                          RC_SHAPE(l));
    if ((st = canonical_axis(op, s->axis, x->ndim, "input 0", pax, err))) return st;
    const int64_t L = l->dims[0], n = op->n_out, per = L / n;
    if (L % n)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (lengths) of shape %s: %lld lengths cannot be "
                          "shared by %lld outputs (the count must be a multiple of the outputs)", rc_in_name(op, 1),
                          RC_SHAPE(l), (long long)L, (long long)n);
    if (!values) return RC_OK;
    const int32_t *v = L ? rc_i32(l) : NULL;
    int64_t sum = 0;
    for (int64_t i = 0; i < L; i++) {
        if (v[i] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (lengths) holds %d at position %lld; a length "
                              "must not be negative", rc_in_name(op, 1), (int)v[i], (long long)i);
        sum += v[i];
    }
    const int64_t channels = x->dims[*pax];
    int64_t mult = 1;
    if (s->scaling ? (sum ? channels % sum != 0 : channels != 0) : sum != channels)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (lengths) sums to %lld, but axis %d of input 0 "
                          "blob '%s' %s has size %lld (%s)", rc_in_name(op, 1), (long long)sum, *pax, rc_in_name(op, 0),
                          RC_SHAPE(x), (long long)channels,
                          s->scaling ? "use_scaling_lengths=1: it must be a multiple of the sum, 0 for a sum of 0"
                                     : "they must be equal");
    if (s->scaling && sum) mult = channels / sum;
    for (int64_t k = 0; k < n; k++) {
        int64_t t = 0;
        for (int64_t i = k * per; i < (k + 1) * per; i++) t += v[i];
        s->sizes[k] = t * mult;
    }
    return RC_OK;
}

static rc_status sbl_check(rc_op *op, rc_err *err)
{
    int ax;
    return sbl_shapes(op, 0, &ax, err);
}

static rc_status sbl_run(rc_op *op, rc_err *err)
{
    int ax = 0;
    rc_status st = sbl_shapes(op, 1, &ax, err);
    return st ? st : split_copy(op, ax, err);
}

/* ---------------------------------------------------------------- Reshape */
typedef struct reshape_state {
    int has_shape;                 /* argument 'shape' given (possibly empty: a scalar) */
    int ndim;
    int64_t shape[RC_MAX_DIMS];
} reshape_state;

static rc_status check_new_shape(rc_op *op, int n, const int64_t *v, const char *src, rc_err *err)
{
    if (n > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s has %d dims, at most %d are supported", src, n, RC_MAX_DIMS);
    int unknown = -1;
    for (int k = 0; k < n; k++) {
        if (v[k] < -1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "%s has an invalid dimension %lld at position %d", src,
                              (long long)v[k], k);
        if (v[k] == -1) {
            if (unknown >= 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "%s has more than one -1 (positions %d and %d)", src, unknown,
                                  k);
            unknown = k;
        }
    }
    return RC_OK;
}

static rc_status reshape_setup(rc_op *op, rc_err *err)
{
    reshape_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->has_shape = rc_opdef_arg(&op->def, "shape") != NULL;
    if (op->n_in == 2 && s->has_shape)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "the new shape is given by input 1 blob '%s': do not also pass argument 'shape'",
                          rc_in_name(op, 1));
    if (op->n_in == 1 && !s->has_shape)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'shape' is missing (or pass the new shape as input 1)");
    if (s->has_shape) {
        const int64_t *v;
        int n;
        rc_status st = rc_arg_ints(&op->def, "shape", &v, &n, err);
        if (st) return st;
        if ((st = check_new_shape(op, n, v, "argument 'shape'", err))) return st;
        s->ndim = n;
        if (n) memcpy(s->shape, v, sizeof(int64_t) * (size_t)n);
    }
    return RC_OK;
}

/* The input and the new shape (*pn dims into nd, 0s and -1 resolved); with the shape in input 1,
 * values=0 stops before reading it (the check). */
static rc_status reshape_shapes(rc_op *op, int values, int *pn, int64_t *nd, rc_err *err)
{
    const reshape_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int n;
    char src[96];
    if (op->n_in == 2) {
        if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
        const rc_tensor *sh = rc_in(op, 1);
        if (sh->ndim != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the new shape) must be 1-D, got %s",
                              rc_in_name(op, 1), RC_SHAPE(sh));
        snprintf(src, sizeof src, "the new shape in input 1 blob '%s'", rc_in_name(op, 1));
        if (sh->dims[0] > RC_MAX_DIMS)
            return rc_op_fail(op, err, RC_ERR_VALUE, "%s has %lld dims, at most %d are supported", src,
                              (long long)sh->dims[0], RC_MAX_DIMS);
        if (!values) return RC_OK;
        n = (int)sh->dims[0];
        for (int k = 0; k < n; k++) nd[k] = rc_i32(sh)[k];
        if ((st = check_new_shape(op, n, nd, src, err))) return st;
    } else {
        snprintf(src, sizeof src, "argument 'shape'");
        n = s->ndim;
        memcpy(nd, s->shape, sizeof s->shape);
    }
    int64_t total = rc_tensor_numel(x), known = 1;
    /* 0 copies the input's dim (an empty input keeps it 0, as Caffe2); -1 takes what is left */
    for (int k = 0; k < n && total; k++)
        if (nd[k] == 0) {
            if (k >= x->ndim)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "%s has 0 (copy the input dim) at position %d but input 0 blob '%s' is %s", src, k,
                                  rc_in_name(op, 0), RC_SHAPE(x));
            nd[k] = x->dims[k];
        }
    int unknown = -1, overflow = 0;
    for (int k = 0; k < n; k++) {
        if (nd[k] == -1) { unknown = k; continue; }
        if (nd[k] && known > INT64_MAX / nd[k]) overflow = 1;
        else known *= nd[k];
    }
    char want[160];
    dims_str(want, sizeof want, n, nd);
    if (unknown >= 0) {
        if (overflow || known == 0 || total % known)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "cannot reshape input 0 blob '%s' %s (%lld elements) to %s: no size for the -1 fits%s",
                              rc_in_name(op, 0), RC_SHAPE(x), (long long)total, want,
                              known == 0 ? " (the other dims' size is zero)" : "");
        nd[unknown] = total / known;
    } else if (overflow || known != total) {
        return rc_op_fail(op, err, RC_ERR_VALUE, "cannot reshape input 0 blob '%s' %s (%lld elements) to %s", rc_in_name(op, 0),
                          RC_SHAPE(x), (long long)total, want);
    }
    *pn = n;
    return RC_OK;
}

static rc_status reshape_check(rc_op *op, rc_err *err)
{
    int n;
    int64_t nd[RC_MAX_DIMS];
    return reshape_shapes(op, 0, &n, nd, err);
}

static rc_status reshape_run(rc_op *op, rc_err *err)
{
    int n = 0;
    int64_t nd[RC_MAX_DIMS];
    rc_status st = reshape_shapes(op, 1, &n, nd, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    /* old_shape first: in place, output 0 is input 0 */
    if (op->n_out > 1 && (st = write_i32_dims(op, 1, x->ndim, x->dims, err))) return st;
    return copy_with_shape(op, 0, 0, n, nd, err);
}

/* ---------------------------------------------------------------- PrependDim / MergeDim */
typedef struct int_state {
    int64_t v;
} int_state;

static void free_plain(void *p) { free(p); }

/* op->state = an int_state holding integer argument `name` (dflt when absent); *out = it. */
static rc_status int_state_setup(rc_op *op, const char *name, int64_t dflt, int_state **out, rc_err *err)
{
    int_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    *out = s;
    return rc_arg_i(&op->def, name, dflt, &s->v, err);
}

static rc_status prepend_dim_setup(rc_op *op, rc_err *err)
{
    int_state *s = NULL;
    rc_status st = int_state_setup(op, "dim_size", 0, &s, err);
    if (st) return st;
    if (s->v <= 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dim_size' must be > 0, got %lld", (long long)s->v);
    return RC_OK;
}

static rc_status prepend_dim_check(rc_op *op, rc_err *err)
{
    const int_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim < 1 || x->ndim >= RC_MAX_DIMS || x->dims[0] % s->v)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' %s needs 1 to %d dims, the first a multiple of dim_size %lld",
                          rc_in_name(op, 0), RC_SHAPE(x), RC_MAX_DIMS - 1, (long long)s->v);
    return RC_OK;
}

static rc_status prepend_dim_run(rc_op *op, rc_err *err)
{
    const int_state *s = op->state;
    rc_status st = prepend_dim_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    /* Y[dim_size, d0 / dim_size, d1, ...] = X */
    int64_t od[RC_MAX_DIMS];
    od[0] = s->v;
    od[1] = x->dims[0] / s->v;
    for (int k = 1; k < x->ndim; k++) od[k + 1] = x->dims[k];
    return copy_with_shape(op, 0, 0, x->ndim + 1, od, err);
}

static rc_status merge_dim_check(rc_op *op, rc_err *err)
{
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s must have at least 2 dims", rc_in_name(op, 0),
                          RC_SHAPE(x));
    return RC_OK;
}

static rc_status merge_dim_run(rc_op *op, rc_err *err)
{
    rc_status st = merge_dim_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    /* Y[d0 * d1, d2, ...] = X */
    int64_t od[RC_MAX_DIMS];
    od[0] = rc_dims_prod(x, 0, 2);
    for (int k = 2; k < x->ndim; k++) od[k - 1] = x->dims[k];
    return copy_with_shape(op, 0, 0, x->ndim - 1, od, err);
}

/* ---------------------------------------------------------------- LengthsToShape / LengthsSplit */
/* Input 0 must be 1-D int32 lengths, each >= 0 (with values=1). */
static rc_status lengths_vec(rc_op *op, int values, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_I32, err);
    if (st) return st;
    const rc_tensor *l = rc_in(op, 0);
    if (l->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (the lengths) must be 1-D, got %s",
                          rc_in_name(op, 0), RC_SHAPE(l));
    for (int64_t i = 0; values && i < l->dims[0]; i++)
        if (rc_i32(l)[i] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' has a negative length %d at %lld",
                              rc_in_name(op, 0), rc_i32(l)[i], (long long)i);
    return RC_OK;
}

static rc_status lengths_vec_check(rc_op *op, rc_err *err) { return lengths_vec(op, 0, err); }

static rc_status lengths_to_shape_run(rc_op *op, rc_err *err)
{
    rc_status st = lengths_vec(op, 1, err);
    if (st) return st;
    const rc_tensor *l = rc_in(op, 0);
    const int32_t *v = rc_i32(l);
    int64_t n = l->dims[0];
    for (int64_t i = 1; i < n; i++)
        if (v[i] != v[0])
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 0 blob '%s': all lengths must be equal, got %d at 0 and %d at %lld",
                              rc_in_name(op, 0), v[0], v[i], (long long)i);
    /* Y = [n, lengths[0]] (n = 0: [0, 0]) */
    int64_t d[2] = {n, n ? v[0] : 0};
    return write_i32_dims(op, 0, 2, d, err);
}

static rc_status lengths_split_setup(rc_op *op, rc_err *err)
{
    int_state *s = NULL;
    int has = rc_opdef_arg(&op->def, "n_split") != NULL;
    rc_status st = int_state_setup(op, "n_split", 0, &s, err);
    if (st) return st;
    if (op->n_in == 1 && !has)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'n_split' is missing (or pass it as input 1)");
    if (op->n_in == 1 && (s->v <= 0 || s->v > INT32_MAX))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'n_split' must be in [1, 2^31), got %lld",
                          (long long)s->v);
    return RC_OK;
}

/* The number of splits: argument 'n_split', or input 1 (a 1-element int32 vector) when given. */
static rc_status lengths_split_n(rc_op *op, int values, int64_t *n, rc_err *err)
{
    const int_state *s = op->state;
    rc_status st = lengths_vec(op, values, err);
    if (st) return st;
    *n = s->v;
    if (op->n_in == 2) {
        if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
        const rc_tensor *t = rc_in(op, 1);
        if (t->ndim != 1 || t->dims[0] != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (n_split) must be a vector of size 1, got %s",
                              rc_in_name(op, 1), RC_SHAPE(t));
        if (!values) return RC_OK;
        *n = rc_i32(t)[0];
        if (*n <= 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (n_split) must be > 0, got %lld",
                              rc_in_name(op, 1), (long long)*n);
    }
    return RC_OK;
}

static rc_status lengths_split_check(rc_op *op, rc_err *err)
{
    int64_t n;
    return lengths_split_n(op, 0, &n, err);
}

static rc_status lengths_split_run(rc_op *op, rc_err *err)
{
    int64_t n;
    rc_status st = lengths_split_n(op, 1, &n, err);
    if (st) return st;
    const rc_tensor *l = rc_in(op, 0);
    int64_t m = l->dims[0], len = 0;
    if (m && n > INT64_MAX / m)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "output 0 blob '%s': %lld lengths times n_split %lld is too large",
                          rc_out_name(op, 0), (long long)m, (long long)n);
    len = m * n;
    if ((st = resize_out(op, 0, RC_I32, 1, &len, err))) return st;
    const int32_t *lv = rc_i32(l); /* read before writing: an in-place output is refused (no pair) */
    int32_t *y = rc_i32(rc_out(op, 0));
    /* each length L becomes n parts L / n, the first L % n of them one larger */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) y[i * n + j] = (int32_t)(lv[i] / n + (j < lv[i] % n));
    return RC_OK;
}

/* ---------------------------------------------------------------- Flatten / ResizeLike */
static rc_status flatten_setup(rc_op *op, rc_err *err)
{
    int_state *s = NULL;
    rc_status st = int_state_setup(op, "axis", 1, &s, err);
    if (st) return st;
    if (s->v < 0) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'axis' must be >= 0, got %lld", (long long)s->v);
    return RC_OK;
}

static rc_status flatten_check(rc_op *op, rc_err *err)
{
    const int_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (s->v > x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "axis %lld is out of range for input 0 blob '%s' %s (needs >= %lld dims)",
                          (long long)s->v, rc_in_name(op, 0), RC_SHAPE(x), (long long)s->v);
    return RC_OK;
}

static rc_status flatten_run(rc_op *op, rc_err *err)
{
    const int_state *s = op->state;
    rc_status st = flatten_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    /* Y[prod(dims[:axis]), prod(dims[axis:])] = X */
    int64_t d[2] = {rc_dims_prod(x, 0, (int)s->v), rc_dims_prod(x, (int)s->v, x->ndim)};
    return copy_with_shape(op, 0, 0, 2, d, err);
}

static rc_status flatten_to_vec_run(rc_op *op, rc_err *err)
{
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    /* Y[numel] = X */
    int64_t n = rc_tensor_numel(rc_in(op, 0));
    return copy_with_shape(op, 0, 0, 1, &n, err);
}

static rc_status resize_like_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = need_tensor(op, 0, err)) || (st = need_tensor(op, 1, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *like = rc_in(op, 1);
    if (rc_tensor_numel(x) != rc_tensor_numel(like))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s and input 1 blob '%s' %s differ in element count",
                          rc_in_name(op, 0), RC_SHAPE(x), rc_in_name(op, 1), RC_SHAPE(like));
    return RC_OK;
}

static rc_status resize_like_run(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = resize_like_check(op, err))) return st;
    const rc_tensor *like = rc_in(op, 1);
    /* Y[like.shape] = X */
    int64_t d[RC_MAX_DIMS];
    memcpy(d, like->dims, sizeof d);
    return copy_with_shape(op, 0, 0, like->ndim, d, err);
}

/* ---------------------------------------------------------------- Transpose */
typedef struct transpose_state {
    int naxes;                     /* 0: reverse */
    int axes[RC_MAX_DIMS];
} transpose_state;

static rc_status transpose_setup(rc_op *op, rc_err *err)
{
    transpose_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    const int64_t *v;
    int n;
    rc_status st = rc_arg_ints(&op->def, "axes", &v, &n, err);
    if (st) return st;
    if (n > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'axes' has %d entries, at most %d are supported", n,
                          RC_MAX_DIMS);
    int seen[RC_MAX_DIMS] = {0};
    for (int k = 0; k < n; k++) {
        if (v[k] < 0 || v[k] >= n || seen[v[k]]) {
            char buf[160];
            dims_str(buf, sizeof buf, n, v);
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'axes' %s is not a permutation of 0..%d", buf, n - 1);
        }
        seen[v[k]] = 1;
        s->axes[k] = (int)v[k];
    }
    s->naxes = n;
    return RC_OK;
}

static rc_status transpose_check(rc_op *op, rc_err *err)
{
    const transpose_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (s->naxes && s->naxes != x->ndim) {
        int64_t a[RC_MAX_DIMS];
        for (int k = 0; k < s->naxes; k++) a[k] = s->axes[k];
        char buf[160];
        dims_str(buf, sizeof buf, s->naxes, a);
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'axes' %s has %d entries but input 0 blob '%s' is %s", buf,
                          s->naxes, rc_in_name(op, 0), RC_SHAPE(x));
    }
    return RC_OK;
}

/* Y = X with its dims permuted: Y.dims[k] = X.dims[axes[k]] (X's checks done by the caller). */
static rc_status permute_dims(rc_op *op, const int *axes, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    const int nd = x->ndim;
    /* Y[d_axes[0], ..., d_axes[n-1]] with Y[i_0..i_{n-1}] = X[j] where j_axes[k] = i_k */
    int64_t od[RC_MAX_DIMS], xstride[RC_MAX_DIMS], ostride_in[RC_MAX_DIMS];
    int64_t acc = 1;
    rc_status st;
    for (int k = nd - 1; k >= 0; k--) { xstride[k] = acc; acc *= x->dims[k]; }
    for (int k = 0; k < nd; k++) { od[k] = x->dims[axes[k]]; ostride_in[k] = xstride[axes[k]]; }
    if ((st = resize_out(op, 0, x->dtype, nd, od, err))) return st;
    int64_t n = rc_tensor_numel(x);
    if (n == 0) return RC_OK;
    const uint32_t *xd = rc_tensor_data(x);
    uint32_t *yd = rc_tensor_data(rc_out(op, 0));
    if (nd == 0) { yd[0] = xd[0]; return RC_OK; }
    /* walk Y in order; the innermost output dim is a strided loop over X */
    int64_t idx[RC_MAX_DIMS] = {0}, inner = od[nd - 1], istride = ostride_in[nd - 1], xoff = 0;
    for (int64_t o = 0; o < n; o += inner) {
        const uint32_t *xp = xd + xoff;
        uint32_t *yp = yd + o;
        for (int64_t i = 0; i < inner; i++) yp[i] = xp[i * istride];
        for (int k = nd - 2; k >= 0; k--) { /* odometer over the outer output dims */
            xoff += ostride_in[k];
            if (++idx[k] < od[k]) break;
            xoff -= ostride_in[k] * od[k];
            idx[k] = 0;
        }
    }
    return RC_OK;
}

static rc_status transpose_run(rc_op *op, rc_err *err)
{
    transpose_state *s = op->state;
    rc_status st = transpose_check(op, err);
    if (st) return st;
    int nd = rc_in(op, 0)->ndim, axes[RC_MAX_DIMS];
    if (s->naxes) {
        memcpy(axes, s->axes, sizeof axes);
    } else {
        for (int k = 0; k < nd; k++) axes[k] = nd - 1 - k;
    }
    return permute_dims(op, axes, err);
}

/* ---------------------------------------------------------------- NCHW2NHWC / NHWC2NCHW */
/* X: a tensor with at least 3 dims (N, C, H_1..H_k or N, H_1..H_k, C), as Caffe2's (order_switch_ops.h). */
static rc_status order_switch_check(rc_op *op, rc_err *err)
{
    rc_status st = need_tensor(op, 0, err);
    return st ? st : rc_check_ndim(op, 0, 3, RC_MAX_DIMS, err);
}

/* NCHW2NHWC: (N, C, H_1..H_k) -> (N, H_1..H_k, C); NHWC2NCHW the inverse. */
static rc_status order_switch_run(rc_op *op, int to_nhwc, rc_err *err)
{
    rc_status st = order_switch_check(op, err);
    if (st) return st;
    const int nd = rc_in(op, 0)->ndim;
    int axes[RC_MAX_DIMS];
    axes[0] = 0;
    for (int k = 1; k < nd; k++) axes[k] = to_nhwc ? (k == nd - 1 ? 1 : k + 1) : (k == 1 ? nd - 1 : k - 1);
    return permute_dims(op, axes, err);
}

static rc_status nchw2nhwc_run(rc_op *op, rc_err *err) { return order_switch_run(op, 1, err); }
static rc_status nhwc2nchw_run(rc_op *op, rc_err *err) { return order_switch_run(op, 0, err); }

/* ---------------------------------------------------------------- ExpandDims / Squeeze */
typedef struct dims_state {
    int n;                         /* sorted, unique, non-negative */
    int64_t dims[RC_MAX_DIMS];
} dims_state;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static rc_status dims_setup(rc_op *op, rc_err *err)
{
    dims_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    const int64_t *v;
    int n;
    rc_status st = rc_arg_ints(&op->def, "dims", &v, &n, err);
    if (st) return st;
    if (!n) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dims' must be given (a non-empty list of ints)");
    int64_t tmp[64];
    if (n > 64) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dims' has %d entries, too many", n);
    memcpy(tmp, v, sizeof(int64_t) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_i64);
    if (tmp[0] < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dims' must be non-negative, got %lld", (long long)tmp[0]);
    int u = 0;
    for (int k = 0; k < n; k++)
        if (!u || tmp[k] != tmp[u - 1]) tmp[u++] = tmp[k]; /* repeated dims count once, as Caffe2 */
    if (u > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dims' has %d distinct entries, at most %d are supported",
                          u, RC_MAX_DIMS);
    memcpy(s->dims, tmp, sizeof(int64_t) * (size_t)u);
    s->n = u;
    return RC_OK;
}

static rc_status expand_dims_check(rc_op *op, rc_err *err)
{
    const dims_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int out_nd = x->ndim + s->n;
    if (s->dims[s->n - 1] >= out_nd || out_nd > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dims' (largest %lld) does not fit input 0 blob '%s' %s",
                          (long long)s->dims[s->n - 1], rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

static rc_status expand_dims_run(rc_op *op, rc_err *err)
{
    const dims_state *s = op->state;
    rc_status st = expand_dims_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int out_nd = x->ndim + s->n;
    /* Y = X with a 1 inserted at every position in dims (positions of the output) */
    int64_t od[RC_MAX_DIMS];
    for (int d = 0, j = 0, k = 0; d < out_nd; d++) {
        if (j < s->n && s->dims[j] == d) { od[d] = 1; j++; }
        else od[d] = x->dims[k++];
    }
    return copy_with_shape(op, 0, 0, out_nd, od, err);
}

/* The input and its shape without the squeezed dims (*pnd dims into od). */
static rc_status squeeze_shapes(rc_op *op, int *pnd, int64_t *od, rc_err *err)
{
    const dims_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (s->dims[s->n - 1] >= x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dims' (largest %lld) needs input 0 blob '%s' to have at least "
                          "%lld dims, got %s", (long long)s->dims[s->n - 1], rc_in_name(op, 0),
                          (long long)s->dims[s->n - 1] + 1, RC_SHAPE(x));
    /* Y = X without the size-1 dims listed in dims */
    int ond = 0;
    for (int d = 0, j = 0; d < x->ndim; d++) {
        if (j < s->n && s->dims[j] == d) {
            if (x->dims[d] != 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "dim %d of input 0 blob '%s' %s must be 1 to be squeezed", d,
                                  rc_in_name(op, 0), RC_SHAPE(x));
            j++;
            continue;
        }
        od[ond++] = x->dims[d];
    }
    *pnd = ond;
    return RC_OK;
}

static rc_status squeeze_check(rc_op *op, rc_err *err)
{
    int ond;
    int64_t od[RC_MAX_DIMS];
    return squeeze_shapes(op, &ond, od, err);
}

static rc_status squeeze_run(rc_op *op, rc_err *err)
{
    int ond = 0;
    int64_t od[RC_MAX_DIMS];
    rc_status st = squeeze_shapes(op, &ond, od, err);
    return st ? st : copy_with_shape(op, 0, 0, ond, od, err);
}

/* ---------------------------------------------------------------- Shape */
typedef struct shape_state {
    int n;                         /* entries of 'axes' (0: every dim) */
    const int64_t *axes;           /* borrowed from op->def (lives as long as the op) */
} shape_state;

static rc_status shape_setup(rc_op *op, rc_err *err)
{
    shape_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    return rc_arg_ints(&op->def, "axes", &s->axes, &s->n, err);
}

/* Y's values: X's dims, or those named by 'axes' (canonical); n of them.
 * vals may be NULL (the check at creation): only validates. */
static rc_status shape_values(rc_op *op, int64_t *vals, int *n, rc_err *err)
{
    const shape_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (!s->n) {
        for (int d = 0; d < x->ndim && vals; d++) vals[d] = x->dims[d];
        *n = x->ndim;
        return RC_OK;
    }
    for (int k = 0; k < s->n; k++) {
        const int64_t a = s->axes[k];
        if (a < -x->ndim || a >= x->ndim)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "argument 'axes' entry %d (%lld) is out of range for input 0 blob '%s' of shape %s "
                              "(must be in [-%d, %d))", k, (long long)a, rc_in_name(op, 0), RC_SHAPE(x), x->ndim,
                              x->ndim);
        if (vals) vals[k] = x->dims[a < 0 ? a + x->ndim : a];
    }
    *n = s->n;
    return RC_OK;
}

static rc_status shape_check(rc_op *op, rc_err *err)
{
    int n;
    return shape_values(op, NULL, &n, err);
}

/* Shape: X (any dims, any dtype) -> Y (n,) int32. */
static rc_status shape_run(rc_op *op, rc_err *err)
{
    const shape_state *s = op->state;
    int n = 0;
    int64_t stack[RC_MAX_DIMS], *vals = stack;
    if (s->n > RC_MAX_DIMS) {           /* repeated axes may outnumber the dims */
        vals = malloc(sizeof *vals * (size_t)s->n);
        if (!vals) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    rc_status st = shape_values(op, vals, &n, err);
    if (!st) st = write_i32_dims(op, 0, n, vals, err);
    if (vals != stack) free(vals);
    return st;
}

/* ---------------------------------------------------------------- Size, IsEmpty, HasElements */
/* Size: Y = the number of X's elements, a 0-d tensor (Caffe2's int64, int32 here: a count beyond it is a
 * ValueError). Any dtype; X must hold a tensor. */

/* Every input holds a tensor (any dtype, any shape, empty too): Size, IsEmpty, HasElements. */
static rc_status size_check(rc_op *op, rc_err *err)
{
    for (int i = 0; i < op->n_in; i++) {
        const rc_blob *b = op->in[i];
        if (b->obj || b->t.dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)",
                              i, rc_in_name(op, i));
    }
    return RC_OK;
}

static rc_status size_run(rc_op *op, rc_err *err)
{
    rc_status st = size_check(op, err);
    if (st) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s has %lld elements: more than int32 holds "
                          "(Caffe2's int64 count is int32 here)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)),
                          (long long)n);
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, 0, NULL, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    rc_i32(rc_out(op, 0))[0] = (int32_t)n;
    return RC_OK;
}

/* IsEmpty(X) -> Y: 1 when X has no element, else 0; HasElements(X0, ...) -> Y: 1 when any input has an
 * element, else 0 (Caffe2's newer schema takes several inputs). Y an int32 0-d tensor (Caffe2: bool). */
static rc_status count_flag_run(rc_op *op, int any_elements, rc_err *err)
{
    rc_status st = size_check(op, err);
    if (st) return st;
    int32_t v = 0;
    for (int i = 0; i < op->n_in; i++) v |= rc_tensor_numel(rc_in(op, i)) > 0;
    if ((st = resize_out(op, 0, RC_I32, 0, NULL, err))) return st;
    rc_i32(rc_out(op, 0))[0] = any_elements ? v : !v;
    return RC_OK;
}

static rc_status is_empty_run(rc_op *op, rc_err *err) { return count_flag_run(op, 0, err); }
static rc_status has_elements_run(rc_op *op, rc_err *err) { return count_flag_run(op, 1, err); }

/* ---------------------------------------------------------------- Slice / SliceGradient */
typedef struct slice_state {
    int grad;                      /* SliceGradient: dY is the last input */
    int tensors;                   /* starts / ends are inputs 1 and 2 */
    int n;                         /* arguments: their length */
    int64_t starts[RC_MAX_DIMS], ends[RC_MAX_DIMS];
} slice_state;

static rc_status slice_setup_common(rc_op *op, int grad, rc_err *err)
{
    slice_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->grad = grad;
    const int n_idx = op->n_in - grad; /* data and, in tensor form, starts and ends */
    const int has_s = rc_opdef_arg(&op->def, "starts") != NULL, has_e = rc_opdef_arg(&op->def, "ends") != NULL;
    if (n_idx == 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "takes data%s, or data, starts, ends%s (starts and ends as inputs go together), got %d "
                          "inputs", grad ? ", dY" : "", grad ? ", dY" : "", op->n_in);
    if (n_idx == 3) {
        if (has_s || has_e)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "starts and ends are given by input 1 blob '%s' and input 2 blob '%s': do not also "
                              "pass argument '%s'", rc_in_name(op, 1), rc_in_name(op, 2), has_s ? "starts" : "ends");
        s->tensors = 1;
        return RC_OK;
    }
    if (!has_s || !has_e)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument '%s' is missing (give both 'starts' and 'ends', or pass them as inputs 1 and 2)",
                          has_s ? "ends" : "starts");
    const int64_t *vs, *ve;
    int ns, ne;
    rc_status st;
    if ((st = rc_arg_ints(&op->def, "starts", &vs, &ns, err)) || (st = rc_arg_ints(&op->def, "ends", &ve, &ne, err)))
        return st;
    if (ns != ne)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'starts' has %d entries but argument 'ends' has %d", ns,
                          ne);
    if (ns > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "arguments 'starts' and 'ends' have %d entries, one per dim: at most %d are supported", ns,
                          RC_MAX_DIMS);
    s->n = ns;
    if (ns) {
        memcpy(s->starts, vs, sizeof(int64_t) * (size_t)ns);
        memcpy(s->ends, ve, sizeof(int64_t) * (size_t)ns);
    }
    return RC_OK;
}

static rc_status slice_setup(rc_op *op, rc_err *err) { return slice_setup_common(op, 0, err); }
static rc_status slice_grad_setup(rc_op *op, rc_err *err) { return slice_setup_common(op, 1, err); }

/* The box of data (input 0) to slice: lo[d] and len[d] for every dim d.
 * values = 0 (the check at creation): the starts / ends inputs are checked for
 * dtype and shape but their values are not read; *known says whether lo / len
 * were computed. */
static rc_status slice_box(rc_op *op, int values, int64_t *lo, int64_t *len, int *known, rc_err *err)
{
    const slice_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int n = s->n;
    const int64_t *vs = s->starts, *ve = s->ends;
    const int32_t *ts = NULL, *te = NULL;
    if (s->tensors) {
        if ((st = rc_check_input(op, 1, RC_I32, err)) || (st = rc_check_input(op, 2, RC_I32, err))) return st;
        const rc_tensor *a = rc_in(op, 1), *b = rc_in(op, 2);
        if (a->ndim != 1 || b->ndim != 1 || a->dims[0] != b->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' (starts) of shape %s and input 2 blob '%s' (ends) of shape %s must "
                              "be 1-D of the same length", rc_in_name(op, 1), RC_SHAPE(a), rc_in_name(op, 2),
                              RC_SHAPE(b));
        if (a->dims[0] > x->ndim)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' (starts) and input 2 blob '%s' (ends) have %lld entries but input 0 "
                              "blob '%s' of shape %s has %d dims", rc_in_name(op, 1), rc_in_name(op, 2),
                              (long long)a->dims[0], rc_in_name(op, 0), RC_SHAPE(x), x->ndim);
        n = (int)a->dims[0];
        ts = rc_i32(a);
        te = rc_i32(b);
    } else if (n > x->ndim) {
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "arguments 'starts' and 'ends' have %d entries but input 0 blob '%s' of shape %s has %d dims",
                          n, rc_in_name(op, 0), RC_SHAPE(x), x->ndim);
    }
    *known = values || !s->tensors;
    if (!*known) return RC_OK;
    for (int d = 0; d < x->ndim; d++) {
        const int64_t size = x->dims[d];
        if (d >= n || size == 0) { /* kept whole; a dim of size 0 stays 0 whatever the values (as Caffe2) */
            lo[d] = 0;
            len[d] = size;
            continue;
        }
        const int64_t s0 = ts ? ts[d] : vs[d], e0 = te ? te[d] : ve[d];
        int64_t b = s0 < 0 ? size + 1 + s0 : s0, e = e0 < 0 ? size + 1 + e0 : e0;
        if (b > size) b = size;
        if (e > size) e = size;
        if (b < 0 || e < b)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "dim %d (size %lld) of input 0 blob '%s' of shape %s: start %lld and end %lld give "
                              "[%lld, %lld), which is not a range 0 <= start <= end (a negative value v counts from "
                              "the end as size + 1 + v; values above the size are clamped)", d, (long long)size,
                              rc_in_name(op, 0), RC_SHAPE(x), (long long)s0, (long long)e0, (long long)b,
                              (long long)e);
        lo[d] = b;
        len[d] = e - b;
    }
    return RC_OK;
}

/* SliceGradient's dY (the last input): float32, and of the slice's shape when it is known. */
static rc_status slice_check_dy(rc_op *op, int known, const int64_t *len, rc_err *err)
{
    const int g = op->n_in - 1;
    rc_status st = rc_check_input(op, g, RC_F32, err);
    if (st || !known) return st;
    const rc_tensor *x = rc_in(op, 0), *dy = rc_in(op, g);
    int same = dy->ndim == x->ndim;
    for (int d = 0; d < x->ndim && same; d++) same = dy->dims[d] == len[d];
    if (!same) {
        char buf[160];
        dims_str(buf, sizeof buf, x->ndim, len);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (dY) of shape %s must have the shape %s of the slice of input 0 blob "
                          "'%s' of shape %s", g, rc_in_name(op, g), RC_SHAPE(dy), buf, rc_in_name(op, 0),
                          RC_SHAPE(x));
    }
    return RC_OK;
}

static rc_status slice_check(rc_op *op, rc_err *err)
{
    const slice_state *s = op->state;
    int64_t lo[RC_MAX_DIMS], len[RC_MAX_DIMS];
    int known;
    rc_status st = slice_box(op, 0, lo, len, &known, err);
    if (st || !s->grad) return st;
    return slice_check_dy(op, known, len, err);
}

/* x: dims[0..nd) -> y: len[0..nd) (contiguous), y = x[lo[0]:lo[0]+len[0], ...]
 * for to_x = 0; for to_x = 1 the same box of x is written from y instead.
 * Elements are esz bytes; nd >= 1 and every len > 0. Trailing dims taken
 * whole merge into one contiguous block per copy. */
static void slice_copy(int nd, const int64_t *dims, const int64_t *lo, const int64_t *len, size_t esz, char *x,
                       char *y, int to_x)
{
    int j = nd - 1;
    int64_t after = 1; /* elements of x per step of dim j: prod(dims[j+1:]) */
    while (j > 0 && len[j] == dims[j]) after *= dims[j--];
    const size_t blk = (size_t)(len[j] * after) * esz;
    int64_t xs[RC_MAX_DIMS], idx[RC_MAX_DIMS] = {0}, xoff = lo[j] * after, outer = 1;
    xs[j] = after;
    for (int k = j - 1; k >= 0; k--) xs[k] = xs[k + 1] * dims[k + 1];
    for (int k = 0; k < j; k++) {
        xoff += lo[k] * xs[k];
        outer *= len[k];
    }
    char *yp = y;
    for (int64_t o = 0; o < outer; o++, yp += blk) {
        char *xp = x + (size_t)xoff * esz;
        if (to_x) memcpy(xp, yp, blk);
        else memcpy(yp, xp, blk);
        for (int k = j - 1; k >= 0; k--) { /* odometer over the outer dims of the box */
            xoff += xs[k];
            if (++idx[k] < len[k]) break;
            xoff -= xs[k] * len[k];
            idx[k] = 0;
        }
    }
}

/* Slice: data (any dims, float32 / int32) -> output (len per dim, data's dtype). */
static rc_status slice_run(rc_op *op, rc_err *err)
{
    int64_t lo[RC_MAX_DIMS], len[RC_MAX_DIMS];
    int known;
    rc_status st = slice_box(op, 1, lo, len, &known, err);
    if (st) return st;
    rc_tensor *x = rc_in(op, 0);
    if ((st = resize_out(op, 0, x->dtype, x->ndim, len, err))) return st;
    rc_tensor *y = rc_out(op, 0);
    const size_t esz = rc_dtype_size(x->dtype);
    if (x->ndim == 0) { /* a scalar: nothing to slice */
        memcpy(rc_tensor_data(y), rc_tensor_data(x), esz);
        return RC_OK;
    }
    if (rc_tensor_numel(y) == 0) return RC_OK;
    slice_copy(x->ndim, x->dims, lo, len, esz, rc_tensor_data(x), rc_tensor_data(y), 0);
    return RC_OK;
}

/* SliceGradient: data (shape only), dY (len per dim) float32 -> dX (data's shape) float32,
 * zero outside the box. */
static rc_status slice_grad_run(rc_op *op, rc_err *err)
{
    int64_t lo[RC_MAX_DIMS], len[RC_MAX_DIMS];
    int known;
    rc_status st = slice_box(op, 1, lo, len, &known, err);
    if (st || (st = slice_check_dy(op, 1, len, err))) return st;
    rc_tensor *x = rc_in(op, 0), *dy = rc_in(op, op->n_in - 1);
    if ((st = resize_out(op, 0, RC_F32, x->ndim, x->dims, err))) return st;
    rc_tensor *dx = rc_out(op, 0);
    const size_t nb = rc_tensor_nbytes(dx);
    if (nb) memset(rc_tensor_data(dx), 0, nb);
    if (x->ndim == 0) {
        memcpy(rc_tensor_data(dx), rc_tensor_data(dy), sizeof(float));
        return RC_OK;
    }
    if (rc_tensor_numel(dy) == 0) return RC_OK;
    slice_copy(x->ndim, x->dims, lo, len, sizeof(float), rc_tensor_data(dx), rc_tensor_data(dy), 1);
    return RC_OK;
}

const rc_op_schema rc_ops_shape[] = {
    {"Concat", 1, -1, 1, 2, NULL, concat_setup, concat_run, axis_state_free,
     "(Y, split_info) = inputs joined along 'axis' (default 1); add_axis=1 stacks them on a new axis", concat_check},
    {"Split", 1, 2, 1, -1, NULL, split_setup, split_run, axis_state_free,
     "Y_0..Y_n = X cut along 'axis' by 'split' / input 1 / equally; add_axis=1 drops the axis", split_check},
    /* Caffe2's legacy names of Concat and Split (concat_split_op.cc): the same ops */
    {"DepthConcat", 1, -1, 1, 2, NULL, concat_setup, concat_run, axis_state_free,
     "Concat under Caffe2's legacy name: (Y, split_info) = inputs joined along 'axis'", concat_check},
    {"DepthSplit", 1, 2, 1, -1, NULL, split_setup, split_run, axis_state_free,
     "Split under Caffe2's legacy name: Y_0..Y_n = X cut along 'axis'", split_check},
    {"SplitByLengths", 2, 2, 1, -1, NULL, sbl_setup, sbl_run, axis_state_free,
     "Y_0..Y_n = X cut along 'axis' (default 1) by runs of len(lengths) / n lengths (use_scaling_lengths)", sbl_check},
    {"Reshape", 1, 2, 2, 2, rc_inplace_first, reshape_setup, reshape_run, free_plain,
     "(Y, old_shape) = X with shape 'shape' or input 1 (0 copies a dim, one -1 is inferred)", reshape_check},
    {"PrependDim", 1, 1, 1, 1, rc_inplace_first, prepend_dim_setup, prepend_dim_run, free_plain,
     "Y = X with dims (dim_size, d0 / dim_size, d1, ...)", prepend_dim_check},
    {"MergeDim", 1, 1, 1, 1, rc_inplace_first, NULL, merge_dim_run, NULL, "Y = X with dims (d0 * d1, d2, ...)",
     merge_dim_check},
    {"LengthsToShape", 1, 1, 1, 1, NULL, NULL, lengths_to_shape_run, NULL,
     "Y = [len(L), L[0]] (int32) for 1-D int32 lengths L, all equal", lengths_vec_check},
    {"LengthsSplit", 1, 2, 1, 1, NULL, lengths_split_setup, lengths_split_run, free_plain,
     "Y = each length of L cut into n_split parts (arg or input 1), larger parts first (int32)",
     lengths_split_check},
    {"Flatten", 1, 1, 1, 1, NULL, flatten_setup, flatten_run, free_plain,
     "Y = X as 2-D (prod(dims[:axis]), prod(dims[axis:])), axis default 1", flatten_check},
    {"FlattenToVec", 1, 1, 1, 1, NULL, NULL, flatten_to_vec_run, NULL, "Y = X as 1-D (X.ravel())"},
    {"ResizeLike", 2, 2, 1, 1, rc_inplace_first, NULL, resize_like_run, NULL, "Y = X0 with the shape of X1",
     resize_like_check},
    {"Transpose", 1, 1, 1, 1, NULL, transpose_setup, transpose_run, free_plain,
     "Y = X with dims permuted by 'axes' (default: reversed)", transpose_check},
    {"NCHW2NHWC", 1, 1, 1, 1, NULL, NULL, nchw2nhwc_run, NULL,
     "Y = X (N, C, H_1..H_k) as (N, H_1..H_k, C), k >= 1", order_switch_check},
    {"NHWC2NCHW", 1, 1, 1, 1, NULL, NULL, nhwc2nchw_run, NULL,
     "Y = X (N, H_1..H_k, C) as (N, C, H_1..H_k), k >= 1", order_switch_check},
    {"ExpandDims", 1, 1, 1, 1, rc_inplace_first, dims_setup, expand_dims_run, free_plain,
     "Y = X with size-1 dims inserted at 'dims'", expand_dims_check},
    {"Squeeze", 1, 1, 1, 1, rc_inplace_first, dims_setup, squeeze_run, free_plain,
     "Y = X with the size-1 dims 'dims' removed", squeeze_check},
    {"Shape", 1, 1, 1, 1, NULL, shape_setup, shape_run, free_plain,
     "Y = X's dims as a 1-D int32 tensor (only the dims named by 'axes' when given)", shape_check},
    {"Size", 1, 1, 1, 1, NULL, NULL, size_run, NULL,
     "Y = the number of X's elements, an int32 0-d tensor (Caffe2: int64)", size_check},
    {"IsEmpty", 1, 1, 1, 1, NULL, NULL, is_empty_run, NULL,
     "Y = 1 when X has no element, else 0 (an int32 0-d tensor; Caffe2: bool); X of any dtype", size_check},
    {"HasElements", 1, -1, 1, 1, NULL, NULL, has_elements_run, NULL,
     "Y = 1 when any input has an element, else 0 (an int32 0-d tensor; Caffe2: bool)", size_check},
    {"Slice", 1, 3, 1, 1, NULL, slice_setup, slice_run, free_plain,
     "(data[, starts, ends]) -> data[starts:ends] per dim (args or 1-D int32 inputs; negative v is size + 1 + v)",
     slice_check},
    {"SliceGradient", 2, 4, 1, 1, NULL, slice_grad_setup, slice_grad_run, free_plain,
     "(data[, starts, ends], dY) -> dX: data's shape, dY inside the slice and 0 outside (float32)", slice_check},
    {0},
};
