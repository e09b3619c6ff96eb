/* ops/sparse.c -- the ops that consume sparse rows (Caffe2's GradientSlice:
 * INDICES and VALUES, the gradient of Gather), and the checks they share
 * with the sparse optimizer ops (ops/sparse.h; SparseMomentumSGDUpdate and
 * SparseAdam are in ops/optim.c, SparseAdagrad in ops/embed.c, next to the
 * dense ops whose arguments and per-row arithmetic they share).
 *
 *   SparseToDense(INDICES, VALUES[, DATA_TO_INFER_DIM]) -> OUTPUT
 *   SparseToDenseMask(INDICES, VALUES, DEFAULT[, LENGTHS]) -> OUTPUT[, PRESENCE]
 *   SparseToDenseMaskGradient(INDICES, dOUTPUT[, LENGTHS]) -> dVALUES
 *   BatchSparseToDense(LENGTHS, INDICES, VALUES[, SHAPE_LIKE]) -> DENSE
 *   BatchDenseToSparse(LENGTHS, INDICES, DENSE) -> VALUES
 *   ScatterWeightedSum(X, W0, INDICES, X1, W1[, X2, W2 ...]) -> X
 *   CopyRowsToTensor(X, INDICES, ROW) -> X, CopyRowsToTensorGradient(dY, INDICES) -> dX[, dROW]
 *
 * INDICES: int32 of any rank, K = its size, read in flat order; VALUES (and
 * X1, X2, ...) have shape INDICES.shape + X.shape[1:] and row k of them goes
 * to row INDICES.flat[k]. Every index is checked against the row count before
 * anything is written (an IndexError naming the op, the blob, the value, its
 * position and the range), so a failing op leaves its outputs as they were.
 *
 * Semantics follow Caffe2 (sparse_to_dense_op, utility_ops
 * ScatterWeightedSumOp) with these differences:
 *  - SparseToDense: INDICES may have any rank (Caffe2: 1-D) and VALUES must
 *    have shape INDICES.shape + ROW (Caffe2 compared only the first dim);
 *    OUTPUT is (D0,) + ROW, zeros plus the rows of VALUES added at their
 *    index in order (duplicates sum). D0 is the argument output_first_dim
 *    when > 0 (then with two inputs only, as Caffe2), else
 *    DATA_TO_INFER_DIM.shape[0] (a tensor of any dtype with at least one
 *    dim), else max(INDICES) + 1, 0 without indices. VALUES are float32 or
 *    int32 (int32 sums wrap around modulo 2^32; Caffe2 also took int64);
 *  - SparseToDenseMask: INDICES 1-D, VALUES (K,) + ROW, DEFAULT of shape ROW
 *    exactly (Caffe2 compared sizes), LENGTHS summing to K (Caffe2 did not
 *    check); the mask ids are int32 (Caffe2: int64), distinct and >= 0;
 *    negative indices are skipped, at most max_skipped_indices - 1 per run
 *    (Caffe2 counted over the op's lifetime); the presence mask is int32 0/1
 *    (Caffe2: bool) and needs return_presence_mask=1 and two outputs. The
 *    gradient op keeps one flag per mask id in op->state (zeros between
 *    runs), so an op instance is not run by two threads at once;
 *  - BatchSparseToDense / BatchDenseToSparse: LENGTHS and INDICES int32 (Caffe2:
 *    int64), the lengths summing to K, each index in [0, D) and distinct within
 *    its row (Caffe2 required it in its doc only; checked here with flags kept
 *    in op->state), VALUES of INDICES' shape (Caffe2 compared sizes);
 *  - ScatterWeightedSum: X and the weights are float32, each weight one
 *    element; X1, X2, ... must have shape INDICES.shape + X.shape[1:]
 *    (Caffe2 compared only sizes, and checked the indices only when W0 != 1);
 *    X may be empty (Caffe2 refused it). As in Caffe2, the output must be X's
 *    blob (ValueError at creation otherwise), every row INDICES[k] is first
 *    multiplied by W0, once per occurrence (skipped when W0 == 1 exactly),
 *    then X1's rows are added (X[i] += W1 * X1[k], k in order), then X2's,
 *    and so on. An input other than X naming X's blob, or sharing X's memory,
 *    is refused (Caffe2 read rows it had already updated).
 * Kernels are plain loops over pointers; none keeps global state, so op
 * instances may run concurrently. Nothing allocates except the resize of an
 * output whose shape changed.
 */
#include "sparse.h"
#include "checks.h"
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ shared checks (sparse.h) */

rc_status rc_sparse_check_indices(rc_op *op, int i, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", i,
                          rc_in_name(op, i));
    if (t->dtype != RC_I32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' must be int32 indices, got %s", i,
                          rc_in_name(op, i), RC_SHAPE(t));
    return RC_OK;
}

/* The shape INDICES.shape + X.shape[1:] into *want (dtype float32 for the
 * message); 0, or -1 when it would have more than RC_MAX_DIMS dims. */
static int slice_shape(const rc_tensor *x, const rc_tensor *idx, rc_tensor *want)
{
    rc_tensor_init(want);
    want->dtype = RC_F32;
    const int nd = idx->ndim + x->ndim - 1;
    if (nd > RC_MAX_DIMS) return -1;
    want->ndim = nd;
    for (int k = 0; k < idx->ndim; k++) want->dims[k] = idx->dims[k];
    for (int k = 1; k < x->ndim; k++) want->dims[idx->ndim + k - 1] = x->dims[k];
    return 0;
}

rc_status rc_sparse_check_rows(rc_op *op, int x, int ii, int v, const char *vwhat, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, x, RC_F32, err))) return st;
    if ((st = rc_check_input(op, v, RC_F32, err))) return st;
    const rc_tensor *xt = rc_in(op, x), *it = rc_in(op, ii), *vt = rc_in(op, v);
    if (xt->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have at least 1 dim (its rows), got %s", x,
                          rc_in_name(op, x), RC_SHAPE(xt));
    rc_tensor want;
    if (slice_shape(xt, it, &want))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (%s) would need %d dims (input %d blob '%s' %s + input %d blob "
                          "'%s' %s without its first dim), at most %d are supported", v, rc_in_name(op, v),
                          vwhat, it->ndim + xt->ndim - 1, ii, rc_in_name(op, ii), RC_SHAPE(it), x,
                          rc_in_name(op, x), RC_SHAPE(xt), RC_MAX_DIMS);
    if (!rc_tensor_same_shape(vt, &want))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (%s) must have shape %s (input %d blob '%s' %s + input %d blob '%s' "
                          "%s without its first dim), got %s", v, rc_in_name(op, v), vwhat, RC_SHAPE(&want), ii,
                          rc_in_name(op, ii), RC_SHAPE(it), x, rc_in_name(op, x), RC_SHAPE(xt), RC_SHAPE(vt));
    return RC_OK;
}

/* Flat position k of a tensor of ndim >= 2 dims as "(i0, i1, ...)" into buf. */
static void multi_index(const rc_tensor *t, int64_t k, char *buf, size_t n)
{
    int64_t sub[RC_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        sub[d] = t->dims[d] ? k % t->dims[d] : 0;
        k = t->dims[d] ? k / t->dims[d] : 0;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int d = 0; d < t->ndim && used < n; d++) {
        int w = snprintf(buf + used, n - used, "%s%lld%s", d ? ", " : "(", (long long)sub[d],
                         d == t->ndim - 1 ? ")" : "");
        if (w < 0) break;
        used += (size_t)w;
    }
}

rc_status rc_sparse_check_range(rc_op *op, int ii, int64_t n, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, ii);
    const int64_t K = rc_tensor_numel(t);
    if (!K) return RC_OK;
    const int32_t *idx = rc_i32(t);
    for (int64_t k = 0; k < K; k++) {
        if (idx[k] >= 0 && (int64_t)idx[k] < n) continue;
        char pos[160] = "";
        if (t->ndim >= 2) {
            char sub[120];
            multi_index(t, k, sub, sizeof sub);
            snprintf(pos, sizeof pos, " (element %s of its %s)", sub, RC_SHAPE(t));
        }
        return rc_op_fail(op, err, RC_ERR_INDEX,
                          "input %d blob '%s': index %d at position %lld%s is out of range [0, %lld) (%s)", ii,
                          rc_in_name(op, ii), (int)idx[k], (long long)k, pos, (long long)n, what);
    }
    return RC_OK;
}

rc_status rc_sparse_check_range_of(rc_op *op, int ii, int x, rc_err *err)
{
    const rc_tensor *xt = rc_in(op, x);
    char what[200];
    snprintf(what, sizeof what, "the rows of input %d blob '%s' of shape %s", x, rc_in_name(op, x), RC_SHAPE(xt));
    return rc_sparse_check_range(op, ii, xt->dims[0], what, err);
}

rc_status rc_sparse_require_inplace(rc_op *op, const int *pairs, int n, rc_err *err)
{
    for (int k = 0; k < n; k++) {
        const int i = pairs[2 * k], o = pairs[2 * k + 1];
        if (strcmp(rc_in_name(op, i), rc_out_name(op, o)) != 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "output %d blob '%s' must be input %d blob '%s' (this op updates it in place)", o,
                              rc_out_name(op, o), i, rc_in_name(op, i));
    }
    return RC_OK;
}

rc_status rc_sparse_check_scalar(rc_op *op, int i, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (rc_tensor_numel(t) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must hold one value, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(t));
    return RC_OK;
}

rc_status rc_sparse_read_scalar(rc_op *op, int i, const char *what, float *v, rc_err *err)
{
    rc_status st = rc_sparse_check_scalar(op, i, what, err);
    if (st) return st;
    *v = rc_f32(rc_in(op, i))[0];
    return RC_OK;
}

/* ================================================================ SparseToDense */

typedef struct s2d_state {
    int64_t output_first_dim;  /* > 0: D0; 0: from input 2 or the indices */
} s2d_state;

static rc_status s2d_setup(rc_op *op, rc_err *err)
{
    s2d_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st = rc_arg_i(&op->def, "output_first_dim", 0, &s->output_first_dim, err);
    if (st) return st;
    if (s->output_first_dim < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument output_first_dim must be >= 0, got %lld",
                          (long long)s->output_first_dim);
    if (s->output_first_dim > 0 && op->n_in == 3)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "give the first dim either as argument output_first_dim or as input 2 (blob '%s'), not "
                          "both", rc_in_name(op, 2));
    return RC_OK;
}

/* Dtypes and shapes (no data values): INDICES int32, VALUES float32 or int32
 * of shape INDICES.shape + ROW, DATA_TO_INFER_DIM a tensor of >= 1 dim, and
 * OUTPUT's rank within RC_MAX_DIMS. */
static rc_status s2d_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_sparse_check_indices(op, 0, err);
    if (st) return st;
    const rc_tensor *idx = rc_in(op, 0), *v = rc_in(op, 1);
    if (v->dtype == RC_UNDEF || !v->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' holds no tensor (was it fed or computed?)",
                          rc_in_name(op, 1));
    if (v->dtype != RC_F32 && v->dtype != RC_I32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 1 blob '%s' (the values) must be float32 or int32, got %s",
                          rc_in_name(op, 1), RC_SHAPE(v));
    int ok = v->ndim >= idx->ndim;
    for (int k = 0; ok && k < idx->ndim; k++) ok = v->dims[k] == idx->dims[k];
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (the values) must have shape input 0 blob '%s' %s + the row shape, "
                          "got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(idx), RC_SHAPE(v));
    if (1 + v->ndim - idx->ndim > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "the output would have %d dims (input 1 blob '%s' %s after the dims of input 0 blob '%s' "
                          "%s, plus the first), at most %d are supported", 1 + v->ndim - idx->ndim,
                          rc_in_name(op, 1), RC_SHAPE(v), rc_in_name(op, 0), RC_SHAPE(idx), RC_MAX_DIMS);
    if (op->n_in == 3) {
        const rc_tensor *d = rc_in(op, 2);
        if (d->dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' holds no tensor (was it fed or computed?)",
                              rc_in_name(op, 2));
        if (d->ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 2 blob '%s' (its first dim gives the output's) must have at least 1 dim, got %s",
                              rc_in_name(op, 2), RC_SHAPE(d));
    }
    return RC_OK;
}

/* vals: (K, R) of esz-byte elements, idx: (K,) in [0, D0) -> out: (D0, R) = 0; out[idx[k]] += vals[k], k in
 * order (float32 adds, or int32 adds modulo 2^32). */
static void s2d_kernel_f32(int64_t D0, int64_t K, int64_t R, const int32_t *idx, const float *vals, float *out)
{
    memset(out, 0, (size_t)(D0 * R) * sizeof *out);
    for (int64_t k = 0; k < K; k++) {
        float *o = out + (int64_t)idx[k] * R;
        const float *v = vals + k * R;
        for (int64_t r = 0; r < R; r++) o[r] += v[r];
    }
}

static void s2d_kernel_i32(int64_t D0, int64_t K, int64_t R, const int32_t *idx, const int32_t *vals, int32_t *out)
{
    memset(out, 0, (size_t)(D0 * R) * sizeof *out);
    for (int64_t k = 0; k < K; k++) {
        int32_t *o = out + (int64_t)idx[k] * R;
        const int32_t *v = vals + k * R;
        for (int64_t r = 0; r < R; r++) o[r] = (int32_t)((uint32_t)o[r] + (uint32_t)v[r]);
    }
}

static rc_status s2d_run(rc_op *op, rc_err *err)
{
    const s2d_state *s = op->state;
    rc_status st = s2d_check(op, err);
    if (st) return st;
    const rc_tensor *idx = rc_in(op, 0), *v = rc_in(op, 1);
    const int64_t K = rc_tensor_numel(idx);
    int64_t D0;
    char what[200];
    if (s->output_first_dim > 0) {
        D0 = s->output_first_dim;
        snprintf(what, sizeof what, "argument output_first_dim");
    } else if (op->n_in == 3) {
        D0 = rc_in(op, 2)->dims[0];
        snprintf(what, sizeof what, "the first dim of input 2 blob '%s' of shape %s", rc_in_name(op, 2),
                 RC_SHAPE(rc_in(op, 2)));
    } else {
        D0 = 0;
        const int32_t *id = K ? rc_i32(idx) : NULL;
        for (int64_t k = 0; k < K; k++)
            if ((int64_t)id[k] + 1 > D0) D0 = (int64_t)id[k] + 1;
        snprintf(what, sizeof what, "max index + 1");
    }
    if ((st = rc_sparse_check_range(op, 0, D0, what, err))) return st;
    int64_t dims[RC_MAX_DIMS];
    const int nd = 1 + v->ndim - idx->ndim;
    dims[0] = D0;
    for (int k = idx->ndim; k < v->ndim; k++) dims[1 + k - idx->ndim] = v->dims[k];
    if (rc_tensor_resize(rc_out(op, 0), v->dtype, nd, dims, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    const int64_t R = rc_dims_prod(v, idx->ndim, v->ndim);
    if (D0 == 0 || R == 0) return RC_OK;
    if (v->dtype == RC_F32)
        s2d_kernel_f32(D0, K, R, K ? rc_i32(idx) : NULL, K ? rc_f32(v) : NULL, rc_f32(rc_out(op, 0)));
    else
        s2d_kernel_i32(D0, K, R, K ? rc_i32(idx) : NULL, K ? rc_i32(v) : NULL, rc_i32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ SparseToDenseMask(Gradient) */

typedef struct s2dm_id {
    int32_t id, col;
} s2dm_id;

/* op->state of both ops: the mask (argument mask: M distinct ids >= 0, id mask[c] -> column c) sorted by id,
 * and the gradient's scratch (one flag per column). */
typedef struct s2dm_state {
    int64_t M;
    s2dm_id *ids;          /* (M,) sorted by id */
    unsigned char *used;   /* (M,) zeros between runs (gradient) */
    int64_t max_skipped;   /* forward: a run with this many negative ids fails */
    int presence;          /* forward: return_presence_mask (output 1) */
} s2dm_state;

static void s2dm_free(void *p)
{
    s2dm_state *s = p;
    if (!s) return;
    free(s->ids);
    free(s->used);
    free(s);
}

static int s2dm_cmp(const void *a, const void *b)
{
    const int32_t x = ((const s2dm_id *)a)->id, y = ((const s2dm_id *)b)->id;
    return (x > y) - (x < y);
}

/* The column of id, or -1 when the mask does not hold it (negative ids included). */
static int64_t s2dm_col(const s2dm_state *s, int32_t id)
{
    int64_t lo = 0, hi = s->M;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (s->ids[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->M && s->ids[lo].id == id ? s->ids[lo].col : -1;
}

static rc_status s2dm_setup_common(rc_op *op, rc_err *err)
{
    s2dm_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    const int64_t *mask;
    int n;
    rc_status st = rc_arg_ints(&op->def, "mask", &mask, &n, err);
    if (st) return st;
    if (n == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument mask (the ids of the output's columns) is missing or "
                          "empty");
    s->M = n;
    s->ids = malloc((size_t)n * sizeof *s->ids);
    s->used = calloc((size_t)n, 1);
    if (!s->ids || !s->used) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (a mask of %d ids)", n);
    for (int c = 0; c < n; c++) {
        if (mask[c] < 0 || mask[c] > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument mask: id %lld at position %d is outside [0, 2**31 - 1] "
                              "(ids are int32 here)", (long long)mask[c], c);
        s->ids[c].id = (int32_t)mask[c];
        s->ids[c].col = c;
    }
    qsort(s->ids, (size_t)n, sizeof *s->ids, s2dm_cmp);
    for (int k = 1; k < n; k++)
        if (s->ids[k].id == s->ids[k - 1].id)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument mask holds id %d twice (positions %d and %d)",
                              (int)s->ids[k].id, (int)s->ids[k - 1].col, (int)s->ids[k].col);
    return RC_OK;
}

static rc_status s2dm_setup(rc_op *op, rc_err *err)
{
    rc_status st = s2dm_setup_common(op, err);
    if (st) return st;
    s2dm_state *s = op->state;
    int64_t presence;
    if ((st = rc_arg_i(&op->def, "return_presence_mask", 0, &presence, err))) return st;
    if ((st = rc_arg_i(&op->def, "max_skipped_indices", 5, &s->max_skipped, err))) return st;
    if (presence != 0 && presence != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument return_presence_mask must be 0 or 1, got %lld",
                          (long long)presence);
    s->presence = (int)presence;
    if (op->n_out != 1 + s->presence)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s", s->presence ? "return_presence_mask=1 needs output 1 (the "
                          "presence mask)" : "output 1 (the presence mask) needs return_presence_mask=1");
    return RC_OK;
}

/* INDICES int32 (K,) at input ii and the optional LENGTHS int32 1-D at input li (absent when li >= n_in;
 * *pL = -1 then). */
static rc_status lengths_and_indices(rc_op *op, int ii, int li, int64_t *pL, rc_err *err)
{
    rc_status st = rc_checks_i32_vector(op, ii, "indices", err);
    if (st) return st;
    *pL = -1;
    if (li >= op->n_in) return RC_OK;
    if ((st = rc_checks_i32_vector(op, li, "lengths", err))) return st;
    *pL = rc_in(op, li)->dims[0];
    return RC_OK;
}

/* (INDICES (K,), VALUES (K,) + ROW float32 or int32, DEFAULT ROW of VALUES' dtype[, LENGTHS]); *pL as
 * s2dm_lengths; with values (run), the lengths' sum last. */
static rc_status s2dm_inputs(rc_op *op, int values, int64_t *pL, rc_err *err)
{
    rc_status st = lengths_and_indices(op, 0, 3, pL, err);
    if (st) return st;
    if ((st = rc_checks_rows_any(op, 1, "the values", 0, err))) return st;
    const rc_tensor *idx = rc_in(op, 0), *v = rc_in(op, 1), *d = rc_in(op, 2);
    if ((st = rc_check_input(op, 2, v->dtype, err))) return st;
    if (v->dims[0] != idx->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the values) must have one row per index of "
                          "input 0 blob '%s' %s, got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(idx),
                          RC_SHAPE(v));
    int ok = d->ndim == v->ndim - 1;
    for (int k = 0; ok && k < d->ndim; k++) ok = d->dims[k] == v->dims[k + 1];
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the default) must have the shape of a row of "
                          "input 1 blob '%s' %s, got %s", rc_in_name(op, 2), rc_in_name(op, 1), RC_SHAPE(v),
                          RC_SHAPE(d));
    if (op->n_in == 4 && v->ndim + 1 > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "the output would have %d dims (input 1 blob '%s' %s with "
                          "lengths), at most %d are supported", v->ndim + 1, rc_in_name(op, 1), RC_SHAPE(v),
                          RC_MAX_DIMS);
    return values && op->n_in == 4 ? rc_checks_lengths_sum(op, 3, 0, err) : RC_OK;
}

static rc_status s2dm_check(rc_op *op, rc_err *err)
{
    int64_t L;
    return s2dm_inputs(op, 0, &L, err);
}

/* idx: (K,), len: (L,) summing to K, vals: (K, R) and dflt: (R,) of esz-byte elements -> out: (L, M, R) and
 * pres: (L, M) or NULL (out, vals and dflt are not read when R == 0): every row of out dflt, then for each
 * row l, each k of its indices in order whose id idx[k] is mask[c]: out[l, c] = vals[k], pres[l, c] = 1 (a
 * repeated id: the last wins) */
static void s2dm_kernel(const s2dm_state *s, int64_t L, int64_t R, size_t esz, const int32_t *idx,
                        const int32_t *len, const char *vals, const char *dflt, char *out, int32_t *pres)
{
    const int64_t M = s->M;
    const size_t row = (size_t)R * esz;
    if (row)
        for (int64_t r = 0; r < L * M; r++) memcpy(out + (size_t)r * row, dflt, row);
    if (pres) memset(pres, 0, (size_t)(L * M) * sizeof *pres);
    for (int64_t l = 0, k = 0; l < L; l++)
        for (int64_t n = 0; n < len[l]; n++, k++) {
            const int64_t c = s2dm_col(s, idx[k]);
            if (c < 0) continue;
            if (row) memcpy(out + (size_t)(l * M + c) * row, vals + (size_t)k * row, row);
            if (pres) pres[l * M + c] = 1;
        }
}

static rc_status s2dm_run(rc_op *op, rc_err *err)
{
    const s2dm_state *s = op->state;
    int64_t L;
    rc_status st = s2dm_inputs(op, 1, &L, err);
    if (st) return st;
    const rc_tensor *idx = rc_in(op, 0), *v = rc_in(op, 1), *d = rc_in(op, 2);
    const int64_t K = idx->dims[0];
    const int32_t *id = K ? rc_i32(idx) : NULL;
    int64_t skipped = 0;
    for (int64_t k = 0; k < K; k++)
        if (id[k] < 0 && ++skipped >= s->max_skipped)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' holds %lld negative ids (the last %d at "
                              "position %lld); at most max_skipped_indices - 1 = %lld are skipped",
                              rc_in_name(op, 0), (long long)skipped, (int)id[k], (long long)k,
                              (long long)s->max_skipped - 1);
    int64_t dims[RC_MAX_DIMS];
    int nd = 0;
    if (L >= 0) dims[nd++] = L;
    dims[nd++] = s->M;
    for (int k = 0; k < d->ndim; k++) dims[nd++] = d->dims[k];
    if (rc_tensor_resize(rc_out(op, 0), v->dtype, nd, dims, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (s->presence && rc_tensor_resize(rc_out(op, 1), RC_I32, nd - d->ndim, dims, err))
        return rc_op_fail(op, err, err->code, "output 1 blob '%s': %s", rc_out_name(op, 1), err->msg);
    const int32_t one = (int32_t)K;
    const int64_t R = rc_tensor_numel(d), rows = L >= 0 ? L : 1;
    if (rows == 0) return RC_OK;
    s2dm_kernel(s, rows, R, rc_dtype_size(v->dtype), id, L >= 0 ? rc_i32(rc_in(op, 3)) : &one,
                R && K ? rc_tensor_data(v) : NULL, R ? rc_tensor_data(d) : NULL,
                R ? rc_tensor_data(rc_out(op, 0)) : NULL, s->presence ? rc_i32(rc_out(op, 1)) : NULL);
    return RC_OK;
}

static rc_status s2dm_grad_setup(rc_op *op, rc_err *err) { return s2dm_setup_common(op, err); }

/* (INDICES (K,), dOUTPUT ([L,] M) + ROW float32[, LENGTHS (L,)]) */
static rc_status s2dm_grad_inputs(rc_op *op, int values, int64_t *pL, rc_err *err)
{
    const s2dm_state *s = op->state;
    rc_status st = lengths_and_indices(op, 0, 2, pL, err);
    if (st) return st;
    if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 1);
    const int lead = *pL >= 0 ? 2 : 1;
    if (g->ndim < lead || (lead == 2 && g->dims[0] != *pL) || g->dims[lead - 1] != s->M)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the output gradient) must have shape %s(%lld, "
                          "...) (%s%lld mask ids), got %s", rc_in_name(op, 1), lead == 2 ? "(len(lengths)) + " : "",
                          (long long)s->M, lead == 2 ? "a row per length, " : "", (long long)s->M, RC_SHAPE(g));
    return values && op->n_in == 3 ? rc_checks_lengths_sum(op, 2, 0, err) : RC_OK;
}

static rc_status s2dm_grad_check(rc_op *op, rc_err *err)
{
    int64_t L;
    return s2dm_grad_inputs(op, 0, &L, err);
}

/* idx: (K,), len: (L,) summing to K, g: (L, M, R) -> dv: (K, R): zeros, and for each row l and each column c,
 * the last k of row l whose id is mask[c] gets g[l, c] (the one whose value SparseToDenseMask kept);
 * used: (M,) zeros, left zeros */
static void s2dm_grad_kernel(const s2dm_state *s, int64_t L, int64_t K, int64_t R, const int32_t *idx,
                             const int32_t *len, const float *g, float *dv, unsigned char *used)
{
    const int64_t M = s->M;
    memset(dv, 0, (size_t)(K * R) * sizeof *dv);
    for (int64_t l = 0, k0 = 0; l < L; k0 += len[l], l++) {
        for (int64_t k = k0 + len[l] - 1; k >= k0; k--) {
            const int64_t c = s2dm_col(s, idx[k]);
            if (c < 0 || used[c]) continue;
            used[c] = 1;
            memcpy(dv + k * R, g + (l * M + c) * R, (size_t)R * sizeof *dv);
        }
        for (int64_t k = k0; k < k0 + len[l]; k++) {
            const int64_t c = s2dm_col(s, idx[k]);
            if (c >= 0) used[c] = 0;
        }
    }
}

static rc_status s2dm_grad_run(rc_op *op, rc_err *err)
{
    const s2dm_state *s = op->state;
    int64_t L;
    rc_status st = s2dm_grad_inputs(op, 1, &L, err);
    if (st) return st;
    const rc_tensor *idx = rc_in(op, 0), *g = rc_in(op, 1);
    const int lead = L >= 0 ? 2 : 1;
    int64_t dims[RC_MAX_DIMS];
    dims[0] = idx->dims[0];
    for (int k = lead; k < g->ndim; k++) dims[1 + k - lead] = g->dims[k];
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1 + g->ndim - lead, dims, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    const int64_t K = idx->dims[0], R = rc_dims_prod(g, lead, g->ndim);
    if (K == 0 || R == 0) return RC_OK;
    const int32_t one = (int32_t)K;
    s2dm_grad_kernel(s, L >= 0 ? L : 1, K, R, rc_i32(idx), L >= 0 ? rc_i32(rc_in(op, 2)) : &one, rc_f32(g),
                     rc_f32(rc_out(op, 0)), s->used);
    return RC_OK;
}

/* ================================================================ BatchSparseToDense, BatchDenseToSparse */

/* op->state of both: BatchSparseToDense's arguments, and the flags of the duplicate check. */
typedef struct bsd_state {
    int64_t dense_last_dim;  /* -1: from input 3 */
    float default_value;
    unsigned char *seen;     /* (cap,) zeros between runs */
    int64_t cap;
} bsd_state;

static void bsd_free(void *p)
{
    bsd_state *s = p;
    if (!s) return;
    free(s->seen);
    free(s);
}

static rc_status bsd_state_new(rc_op *op, rc_err *err)
{
    bsd_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->dense_last_dim = -1;
    return RC_OK;
}

static rc_status bs2d_setup(rc_op *op, rc_err *err)
{
    rc_status st = bsd_state_new(op, err);
    if (st) return st;
    bsd_state *s = op->state;
    if ((st = rc_arg_f(&op->def, "default_value", 0.0f, &s->default_value, err))) return st;
    if (!rc_opdef_arg(&op->def, "dense_last_dim")) {
        if (op->n_in == 3)
            return rc_op_fail(op, err, RC_ERR_VALUE, "the output's last dim is missing: give argument "
                              "dense_last_dim or input 3 (a 2-D tensor whose dim 1 it is)");
        return RC_OK;
    }
    if ((st = rc_arg_i(&op->def, "dense_last_dim", -1, &s->dense_last_dim, err))) return st;
    if (s->dense_last_dim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument dense_last_dim must be >= 1, got %lld",
                          (long long)s->dense_last_dim);
    return RC_OK;
}

static rc_status bd2s_setup(rc_op *op, rc_err *err) { return bsd_state_new(op, err); }

/* The lengths (input 0) are >= 0 and sum to K, the size of INDICES (input 1), and the indices of each row are
 * distinct and in [0, D): checked with the flags s->seen (grown to D when needed, left zeros). Reads the data:
 * run it before anything is written. */
static rc_status bsd_check_rows(rc_op *op, int64_t D, rc_err *err)
{
    bsd_state *s = op->state;
    rc_status st = rc_checks_lengths_sum(op, 0, 1, err);
    if (st) return st;
    const int64_t B = rc_in(op, 0)->dims[0], K = rc_in(op, 1)->dims[0];
    if (K == 0) return RC_OK;
    if ((st = rc_sparse_check_range(op, 1, D, "the dense tensor's last dim", err))) return st;
    if (D > s->cap) {
        unsigned char *p = calloc((size_t)D, 1);
        if (!p)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (%lld bytes of flags for the duplicate check, "
                              "one per column)", (long long)D);
        free(s->seen);
        s->seen = p;
        s->cap = D;
    }
    const int32_t *len = rc_i32(rc_in(op, 0)), *idx = rc_i32(rc_in(op, 1));
    int64_t dup = -1, first = -1, row = -1;
    for (int64_t b = 0, k0 = 0; b < B; k0 += len[b], b++) {
        for (int64_t k = k0; dup < 0 && k < k0 + len[b]; k++) {
            if (s->seen[idx[k]]) dup = k, row = b;
            s->seen[idx[k]] = 1;
        }
        for (int64_t k = k0; k < k0 + len[b]; k++) s->seen[idx[k]] = 0;
        if (dup >= 0) break;
    }
    if (dup < 0) return RC_OK;
    for (first = dup - 1; idx[first] != idx[dup]; first--) {}
    return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (indices): index %d appears twice in row %lld "
                      "(positions %lld and %lld); the indices of a row must be distinct", rc_in_name(op, 1),
                      (int)idx[dup], (long long)row, (long long)first, (long long)dup);
}

/* (LENGTHS (B,), INDICES (K,), VALUES float32 (K,)[, SHAPE_LIKE 2-D]): *pD, the last dim (with values) */
static rc_status bs2d_inputs(rc_op *op, int values, int64_t *pD, rc_err *err)
{
    const bsd_state *s = op->state;
    int64_t B;
    rc_status st = lengths_and_indices(op, 1, 0, &B, err);
    if (st) return st;
    if ((st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *idx = rc_in(op, 1), *v = rc_in(op, 2);
    if (!rc_tensor_same_shape(v, idx))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the values) must have the shape of input 1 "
                          "blob '%s' %s, got %s", rc_in_name(op, 2), rc_in_name(op, 1), RC_SHAPE(idx), RC_SHAPE(v));
    int64_t D = s->dense_last_dim;
    if (op->n_in == 4) {
        const rc_tensor *t = rc_in(op, 3);
        if (t->dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 3 blob '%s' holds no tensor (was it fed or computed?)",
                              rc_in_name(op, 3));
        if (t->ndim != 2)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 3 blob '%s' (its dim 1 gives the output's last dim) "
                              "must be 2-D, got %s", rc_in_name(op, 3), RC_SHAPE(t));
        if (D >= 0 && D != t->dims[1])
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument dense_last_dim = %lld differs from dim 1 of input "
                              "3 blob '%s' %s", (long long)D, rc_in_name(op, 3), RC_SHAPE(t));
        D = t->dims[1];
    }
    *pD = D;
    return values ? bsd_check_rows(op, D, err) : RC_OK;
}

static rc_status bs2d_check(rc_op *op, rc_err *err)
{
    int64_t D;
    return bs2d_inputs(op, 0, &D, err);
}

/* len: (B,) summing to K, idx: (K,) in [0, D) and distinct per row, v: (K,) -> out: (B, D): dflt, and
 * out[b, idx[k]] = v[k] for the k of row b */
static void bs2d_kernel(int64_t B, int64_t D, const int32_t *len, const int32_t *idx, const float *v, float dflt,
                        float *out)
{
    for (int64_t j = 0; j < B * D; j++) out[j] = dflt;
    for (int64_t b = 0, k = 0; b < B; b++)
        for (int64_t n = 0; n < len[b]; n++, k++) out[b * D + idx[k]] = v[k];
}

static rc_status bs2d_run(rc_op *op, rc_err *err)
{
    const bsd_state *s = op->state;
    int64_t D;
    rc_status st = bs2d_inputs(op, 1, &D, err);
    if (st) return st;
    const int64_t dims[2] = {rc_in(op, 0)->dims[0], D}, K = rc_in(op, 1)->dims[0];
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 2, dims, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (dims[0] == 0 || D == 0) return RC_OK;
    bs2d_kernel(dims[0], D, rc_i32(rc_in(op, 0)), K ? rc_i32(rc_in(op, 1)) : NULL, K ? rc_f32(rc_in(op, 2)) : NULL,
                s->default_value, rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* (LENGTHS (B,), INDICES (K,), DENSE float32 (B, D)) */
static rc_status bd2s_inputs(rc_op *op, int values, rc_err *err)
{
    int64_t B;
    rc_status st = lengths_and_indices(op, 1, 0, &B, err);
    if (st) return st;
    if ((st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *d = rc_in(op, 2);
    if (d->ndim != 2 || d->dims[0] != B)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the dense tensor) must be 2-D with a row per "
                          "length of input 0 blob '%s' %s, got %s", rc_in_name(op, 2), rc_in_name(op, 0),
                          RC_SHAPE(rc_in(op, 0)), RC_SHAPE(d));
    return values ? bsd_check_rows(op, d->dims[1], err) : RC_OK;
}

static rc_status bd2s_check(rc_op *op, rc_err *err) { return bd2s_inputs(op, 0, err); }

/* len: (B,) summing to K, idx: (K,) in [0, D), dense: (B, D) -> v: (K,), v[k] = dense[b, idx[k]] for the k of
 * row b */
static void bd2s_kernel(int64_t B, int64_t D, const int32_t *len, const int32_t *idx, const float *dense, float *v)
{
    for (int64_t b = 0, k = 0; b < B; b++)
        for (int64_t n = 0; n < len[b]; n++, k++) v[k] = dense[b * D + idx[k]];
}

static rc_status bd2s_run(rc_op *op, rc_err *err)
{
    rc_status st = bd2s_inputs(op, 1, err);
    if (st) return st;
    const rc_tensor *idx = rc_in(op, 1), *d = rc_in(op, 2);
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1, idx->dims, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (idx->dims[0] == 0) return RC_OK;
    bd2s_kernel(d->dims[0], d->dims[1], rc_i32(rc_in(op, 0)), rc_i32(idx), rc_f32(d), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ ScatterWeightedSum */

static rc_status sws_setup(rc_op *op, rc_err *err)
{
    if (op->n_in % 2 == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "expects X, W0, INDICES and then (X_j, W_j) pairs: an odd number of inputs (5, 7, ...), "
                          "got %d", op->n_in);
    const int pair[2] = {0, 0};
    /* another input naming X's blob is refused by rc_op_create (only input 0 may be output 0) */
    return rc_sparse_require_inplace(op, pair, 1, err);
}

/* "weight j" for input 1 (j = 0) and inputs 4, 6, ... (j = 1, 2, ...). */
static const char *weight_what(int i, char *buf, size_t n)
{
    snprintf(buf, n, "weight %d", i == 1 ? 0 : (i - 2) / 2);
    return buf;
}

static rc_status sws_check(rc_op *op, rc_err *err)
{
    rc_status st;
    char w[32];
    if ((st = rc_sparse_check_indices(op, 2, err))) return st;
    if ((st = rc_sparse_check_scalar(op, 1, weight_what(1, w, sizeof w), err))) return st;
    for (int i = 3; i + 1 < op->n_in; i += 2) {
        if ((st = rc_sparse_check_rows(op, 0, 2, i, "the rows to add", err))) return st;
        if ((st = rc_sparse_check_scalar(op, i + 1, weight_what(i + 1, w, sizeof w), err))) return st;
    }
    return RC_OK;
}

/* x: (N, R), idx: (K,) in [0, N): x[idx[k]] *= w0 for each k in order (w0 != 1) */
static void sws_scale(int64_t K, int64_t R, const int32_t *idx, float w0, float *x)
{
    for (int64_t k = 0; k < K; k++) {
        float *xr = x + (int64_t)idx[k] * R;
        for (int64_t r = 0; r < R; r++) xr[r] = w0 * xr[r];
    }
}

/* x: (N, R), idx: (K,), v: (K, R): x[idx[k]] += w * v[k] for each k in order; v must not overlap x */
static void sws_axpy(int64_t K, int64_t R, const int32_t *idx, float w, const float *v, float *x)
{
    for (int64_t k = 0; k < K; k++) {
        float *xr = x + (int64_t)idx[k] * R;
        const float *vr = v + k * R;
        for (int64_t r = 0; r < R; r++) xr[r] = xr[r] + w * vr[r];
    }
}

static rc_status sws_run(rc_op *op, rc_err *err)
{
    rc_status st = sws_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    for (int i = 3; i < op->n_in; i += 2)
        if (x->storage && rc_in(op, i)->storage == x->storage && rc_tensor_numel(rc_in(op, i)) > 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' shares its memory with input 0 blob '%s', which this op updates",
                              i, rc_in_name(op, i), rc_in_name(op, 0));
    if ((st = rc_sparse_check_range_of(op, 2, 0, err))) return st;
    float w0;
    if ((st = rc_sparse_read_scalar(op, 1, "weight 0", &w0, err))) return st;
    const int64_t K = rc_tensor_numel(rc_in(op, 2)), R = rc_dims_prod(x, 1, x->ndim);
    if (K == 0 || R == 0) return RC_OK;
    /* the output is input 0's blob (sws_setup): x's data is written in place */
    float *xd = rc_f32(rc_out(op, 0));
    const int32_t *idx = rc_i32(rc_in(op, 2));
    if (w0 != 1.0f) sws_scale(K, R, idx, w0, xd);
    for (int i = 3; i < op->n_in; i += 2) {
        const float w = rc_f32(rc_in(op, i + 1))[0];
        sws_axpy(K, R, idx, w, rc_f32(rc_in(op, i)), xd);
    }
    return RC_OK;
}

/* ================================================================ CopyRowsToTensor */

static rc_status crt_setup(rc_op *op, rc_err *err)
{
    const int pair[2] = {0, 0};
    return rc_sparse_require_inplace(op, pair, 1, err);
}

/* (X 2-D, INDICES 1-D int32, ROW (X.shape[1],) of X's dtype); with grad=1: (dY 2-D float32, INDICES). */
static rc_status crt_check_common(rc_op *op, int grad, rc_err *err)
{
    rc_status st = rc_sparse_check_indices(op, 1, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *it = rc_in(op, 1);
    /* the forward op takes int32 too */
    if ((st = rc_check_input(op, 0, !grad && x->dtype == RC_I32 ? RC_I32 : RC_F32, err))) return st;
    if (x->ndim != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' must be 2-D, got %s", rc_in_name(op, 0),
                          RC_SHAPE(x));
    if (it->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the indices) must be 1-D, got %s",
                          rc_in_name(op, 1), RC_SHAPE(it));
    if (grad) return RC_OK;
    if ((st = rc_check_input(op, 2, x->dtype, err))) return st;
    const rc_tensor *r = rc_in(op, 2);
    if (r->ndim != 1 || r->dims[0] != x->dims[1])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "width of input tensor should match lengths of row: input 0 blob '%s' is %s, input 2 "
                          "blob '%s' must be 1-D of %lld values, got %s", rc_in_name(op, 0), RC_SHAPE(x),
                          rc_in_name(op, 2), (long long)x->dims[1], RC_SHAPE(r));
    return RC_OK;
}

static rc_status crt_check(rc_op *op, rc_err *err) { return crt_check_common(op, 0, err); }
static rc_status crt_grad_check(rc_op *op, rc_err *err) { return crt_check_common(op, 1, err); }

static rc_status crt_run(rc_op *op, rc_err *err)
{
    rc_status st = crt_check(op, err);
    if (!st) st = rc_sparse_check_range_of(op, 1, 0, err);
    if (st) return st;
    rc_tensor *x = rc_in(op, 0);
    const rc_tensor *r = rc_in(op, 2);
    const int64_t K = x->dims[1] ? rc_tensor_numel(rc_in(op, 1)) : 0;
    const size_t nb = (size_t)x->dims[1] * 4; /* float32 or int32: 4 bytes */
    const int32_t *idx = rc_i32(rc_in(op, 1));
    char *xd = rc_tensor_data(x); /* the output is input 0's blob (crt_setup) */
    /* X[INDICES[k]] = ROW for each k */
    for (int64_t k = 0; k < K; k++) memcpy(xd + (size_t)idx[k] * nb, rc_tensor_data(r), nb);
    return RC_OK;
}

/* (dY (N, W), INDICES) -> dX = dY with the rows at INDICES zeroed[, dROW (W,) = the sum of those rows of dY,
 * each distinct index once]. dX may be dY (in place). */
static rc_status crt_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = crt_grad_check(op, err);
    if (!st) st = rc_sparse_check_range_of(op, 1, 0, err);
    if (st) return st;
    const rc_tensor *dy = rc_in(op, 0);
    const int64_t N = dy->dims[0], W = dy->dims[1], K = rc_tensor_numel(rc_in(op, 1));
    if (op->n_out == 2 && (st = rc_tensor_resize(rc_out(op, 1), RC_F32, 1, &W, err)))
        return rc_op_fail(op, err, st, "output 1 blob '%s': %s", rc_out_name(op, 1), err->msg);
    int64_t d[2] = {N, W};
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, 2, d, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    float *dx = rc_f32(rc_out(op, 0)), *dr = op->n_out == 2 ? rc_f32(rc_out(op, 1)) : NULL;
    if (dx != rc_f32(dy) && N * W != 0) memcpy(dx, rc_f32(dy), sizeof(float) * (size_t)(N * W));
    if (dr && W) memset(dr, 0, sizeof(float) * (size_t)W);
    const int32_t *idx = rc_i32(rc_in(op, 1));
    /* a row is added to dROW, then zeroed: a repeated index adds zeros */
    for (int64_t k = 0; k < K && W; k++) {
        float *row = dx + (int64_t)idx[k] * W;
        for (int64_t c = 0; dr && c < W; c++) dr[c] += row[c];
        memset(row, 0, sizeof(float) * (size_t)W);
    }
    return RC_OK;
}

static int crt_grad_inplace(int in, int out) { return in == 0 && out == 0; }

/* ================================================================ table */

/* SparseToDense: OUTPUT is never an input (it is zeroed first). ScatterWeightedSum: X in place. */
const rc_op_schema rc_ops_sparse[] = {
    {"SparseToDense", 2, 3, 1, 1, NULL, s2d_setup, s2d_run, free,
     "(INDICES int32, VALUES (INDICES.shape + ROW)[, DATA_TO_INFER_DIM]) -> OUTPUT (D0,) + ROW: zeros, then "
     "OUTPUT[INDICES[k]] += VALUES[k] in order; D0 = output_first_dim, DATA_TO_INFER_DIM.shape[0] or "
     "max(INDICES) + 1", s2d_check},
    {"SparseToDenseMask", 3, 4, 1, 2, NULL, s2dm_setup, s2dm_run, s2dm_free,
     "(INDICES int32 (K,), VALUES (K,) + ROW, DEFAULT ROW[, LENGTHS (L,)]) -> OUTPUT ([L,] len(mask)) + ROW[, "
     "PRESENCE int32 ([L,] len(mask))]: DEFAULT, then OUTPUT[l, c] = VALUES[k] where INDICES[k] == mask[c] (last "
     "wins); arguments mask, return_presence_mask, max_skipped_indices", s2dm_check},
    {"SparseToDenseMaskGradient", 2, 3, 1, 1, NULL, s2dm_grad_setup, s2dm_grad_run, s2dm_free,
     "(INDICES (K,), dOUTPUT ([L,] len(mask)) + ROW[, LENGTHS]) -> dVALUES (K,) + ROW: the row of dOUTPUT for "
     "the occurrence whose value was kept, zeros elsewhere; argument mask", s2dm_grad_check},
    {"BatchSparseToDense", 3, 4, 1, 1, NULL, bs2d_setup, bs2d_run, bsd_free,
     "(LENGTHS (B,), INDICES (K,), VALUES float32 (K,)[, SHAPE_LIKE 2-D]) -> DENSE (B, D): default_value, and "
     "DENSE[b, INDICES[k]] = VALUES[k] for the k of row b (distinct per row); D = dense_last_dim or "
     "SHAPE_LIKE.shape[1]", bs2d_check},
    {"BatchDenseToSparse", 3, 3, 1, 1, NULL, bd2s_setup, bd2s_run, bsd_free,
     "(LENGTHS (B,), INDICES (K,), DENSE float32 (B, D)) -> VALUES (K,): VALUES[k] = DENSE[b, INDICES[k]] for "
     "the k of row b (distinct per row)", bd2s_check},
    {"ScatterWeightedSum", 5, -1, 1, 1, rc_inplace_first, sws_setup, sws_run, NULL,
     "(X, W0, INDICES, X1, W1[, X2, W2 ...]) -> X in place: X[INDICES[k]] *= W0 per occurrence, then "
     "X[INDICES[k]] += Wj * Xj[k] for each pair j, k in order", sws_check},
    {"CopyRowsToTensor", 3, 3, 1, 1, rc_inplace_first, crt_setup, crt_run, NULL,
     "(X 2-D float32 / int32, INDICES (K,), ROW (X.shape[1],)) -> X in place: X[INDICES[k]] = ROW", crt_check},
    {"CopyRowsToTensorGradient", 2, 2, 1, 2, crt_grad_inplace, NULL, crt_grad_run, NULL,
     "(dY 2-D, INDICES (K,)) -> dX = dY with the rows at INDICES zeroed[, dROW = the sum of those rows of dY]",
     crt_grad_check},
    {0},
};
