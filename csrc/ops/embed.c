/* ops/embed.c -- the ops a character-level language model needs around the
 * LSTM: embedding lookup, one-hot encoding, sampling from a distribution and
 * the Adagrad update.
 *
 *   Gather(DATA, INDICES) -> OUT                  rows of DATA picked by INDICES (argument axis,
 *                                                 default 0; axis != 0, wrap_indices=1 and
 *                                                 match_outer=1 in ops/bmm_pow.c)
 *   GatherGradient(DATA, INDICES, dOUT) -> dDATA  the dense gradient (our op, see below)
 *   OneHot(INDICES[, INDEX_SIZE]) -> ONE_HOTS     float32 one-hot rows
 *   SegmentOneHot(LENGTHS, INDICES, INDEX_SIZE) -> ONE_HOTS   one row per segment
 *   BatchOneHot(X, LENS, VALS) -> Y               each column of X one-hot over its values
 *   BatchBucketOneHot(X, LENS, BOUNDARIES) -> Y   each column of X one-hot over its buckets
 *   WeightedSample(WEIGHTS[, VALUES]) -> (INDICES[, SAMPLED_VALUES])
 *   WeightedMultiSampling(CDF[, SHAPE]) -> INDICES   indices drawn from a cumulative distribution
 *   Adagrad(PARAM, MOMENT, GRAD, LR) -> (PARAM, MOMENT[, EFFECTIVE_LR[, UPDATE]])
 *   SparseAdagrad(PARAM, MOMENT, INDICES, GRAD, LR) -> (PARAM, MOMENT)
 *
 * Semantics follow Caffe2 (gather_op, one_hot_ops, weighted_sample_op,
 * adagrad_op) with these differences:
 *  - every index is range-checked before any output is written; an index out
 *    of range is an IndexError naming the op, the blob, the position and the
 *    value (Caffe2 enforced this for Gather only in some versions);
 *  - Gather's gradient maker gives DATA a *sparse* gradient, as Caffe2 (a
 *    GradientSlice of INDICES and dOUT: no op, see recurrent/_grad_embed.py).
 *    GatherGradient is our op for the dense gradient where one is needed: it
 *    scatter-adds dOUT into a zero tensor shaped like DATA, in index order
 *    (deterministic; repeated indices accumulate);
 *  - indices are int32 (Caffe2 took int32 or int64); OneHot takes its size
 *    from input 1 (as Caffe2) or from the argument `index_size`, and accepts
 *    indices of any shape (OUT = INDICES.shape + (index_size,));
 *  - SegmentOneHot: the lengths must sum to the index count and an index size of 0 is allowed
 *    (Caffe2: > 0); BatchOneHot takes float32 or int32 (Caffe2 also int64); BatchBucketOneHot's
 *    boundaries must be sorted per column without NaN (Caffe2 assumed it) and a NaN X goes to
 *    bucket 0 (Caffe2: the middle one);
 *  - WeightedSample takes an argument `seed`: its generator (xoshiro256**)
 *    lives in op->state, seeded at op creation from `seed` when given, else
 *    from the clock and a process-wide counter. Weights must be finite and
 *    non-negative and each row must have a positive sum (ValueError naming
 *    the row otherwise; weights of no columns, (N, 0), give empty outputs, as Caffe2); WeightedMultiSampling takes `seed` too (its section
 *    below says how it differs from Caffe2's);
 *  - SparseAdagrad applies Adagrad's kernel (epsilon, decay) to row
 *    INDICES.flat[k] of PARAM and MOMENT with row k of GRAD (shape
 *    INDICES.shape + PARAM.shape[1:]; Caffe2 compared sizes only), k in
 *    order, one occurrence at a time, in place (the outputs must be the
 *    blobs of PARAM and MOMENT, as Caffe2 enforced): a row named once gets
 *    bitwise Adagrad's result for that row. Caffe2's SparseAdagrad refused
 *    decay != 1; here decay applies per occurrence, as in Adagrad. Every
 *    index is checked before anything is written (IndexError);
 *  - Adagrad's optional outputs EFFECTIVE_LR = LR / (sqrt(MOMENT) + epsilon)
 *    and UPDATE = EFFECTIVE_LR * GRAD (shape of PARAM; with them PARAM gets
 *    + EFFECTIVE_LR * GRAD, in Caffe2's order of operations) and the argument
 *    weight_decay (Adagrad and SparseAdagrad: GRAD + weight_decay * PARAM is
 *    the gradient used, as Caffe2's later ops; default 0, which leaves the
 *    result bitwise that of the op without it) are Caffe2's; weight_decay must
 *    be finite (Caffe2 checked nothing).
 * Kernels are plain loops over pointers; none keeps global state, so op
 * instances may run concurrently. Nothing allocates except the resize of an
 * output whose shape changed.
 */
#include "../core/rc_core.h"
#include "../kernels/rng.h"
#include "bmm_pow.h"
#include "checks.h"
#include "sparse.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

static rc_status resize_out(rc_op *op, int o, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err)
{
    if (rc_tensor_resize(rc_out(op, o), dt, ndim, dims, err)) return out_fail(op, o, err);
    return RC_OK;
}

/* Input i holds int32 indices that must all lie in [0, n); `what` says what
 * n is (for the message). */
static rc_status check_indices(rc_op *op, int i, int64_t n, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    const int32_t *idx = rc_i32(t);
    const int64_t m = rc_tensor_numel(t);
    for (int64_t k = 0; k < m; k++)
        if (idx[k] < 0 || (int64_t)idx[k] >= n)
            return rc_op_fail(op, err, RC_ERR_INDEX,
                              "input %d blob '%s': index %d at position %lld is out of range [0, %lld) (%s)", i,
                              rc_in_name(op, i), (int)idx[k], (long long)k, (long long)n, what);
    return RC_OK;
}

/* ================================================================ Gather */

/* DATA (V, ...) and INDICES (any shape): OUT shape = INDICES.shape + DATA.shape[1:].
 * Checks dtypes, ranks and (with values, before anything is written) every index. */
static rc_status gather_shapes(rc_op *op, int values, int *ndim, int64_t *dims, rc_err *err)
{
    const rc_tensor *data = rc_in(op, 0), *idx = rc_in(op, 1);
    if (data->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' holds no tensor (was it fed or computed?)",
                          rc_in_name(op, 0));
    rc_status st = rc_sparse_check_indices(op, 1, err);
    if (st) return st;
    if (data->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' must have at least 1 dim, got %s",
                          rc_in_name(op, 0), RC_SHAPE(data));
    const int nd = idx->ndim + data->ndim - 1;
    if (nd > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output would have %d dims (input 1 blob '%s' %s, input 0 blob '%s' %s), at most %d are "
                          "supported", nd, rc_in_name(op, 1), RC_SHAPE(idx), rc_in_name(op, 0), RC_SHAPE(data),
                          RC_MAX_DIMS);
    for (int k = 0; k < idx->ndim; k++) dims[k] = idx->dims[k];
    for (int k = 1; k < data->ndim; k++) dims[idx->ndim + k - 1] = data->dims[k];
    *ndim = nd;
    if (!values) return RC_OK;
    char what[160];
    snprintf(what, sizeof what, "the first dim of input 0 blob '%s' of shape %s", rc_in_name(op, 0), RC_SHAPE(data));
    return check_indices(op, 1, data->dims[0], what, err);
}

/* data: (V, R) (R = row size in bytes), idx: (M,) -> out: (M, R): out[m] = data[idx[m]] */
static void gather_kernel(int64_t M, size_t R, const char *data, const int32_t *idx, char *out)
{
    for (int64_t m = 0; m < M; m++) memcpy(out + (size_t)m * R, data + (size_t)idx[m] * R, R);
}

/* Gather's arguments axis (default 0), wrap_indices and match_outer (default 0) in op->state. */
typedef struct gather_args {
    int64_t axis, wrap, match_outer;
} gather_args;

static rc_status gather_setup(rc_op *op, rc_err *err)
{
    gather_args *g = calloc(1, sizeof *g);
    if (!g) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = g; /* freed by free_state, also when setup fails */
    rc_status st = rc_arg_i(&op->def, "axis", 0, &g->axis, err);
    if (!st) st = rc_gather_flag_args(op, &g->wrap, &g->match_outer, err);
    return st;
}

/* The general path (ops/bmm_pow.c) for axis != 0 or either flag. */
static int gather_general(const gather_args *g) { return g->axis != 0 || g->wrap || g->match_outer; }

static rc_status gather_check(rc_op *op, rc_err *err)
{
    const gather_args *g = op->state;
    if (gather_general(g)) return rc_gather_axis_check(op, g->axis, (int)g->wrap, (int)g->match_outer, err);
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    return gather_shapes(op, 0, &ndim, dims, err);
}

static rc_status gather_run(rc_op *op, rc_err *err)
{
    const gather_args *g = op->state;
    if (gather_general(g)) return rc_gather_axis_run(op, g->axis, (int)g->wrap, (int)g->match_outer, err);
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = gather_shapes(op, 1, &ndim, dims, err);
    if (st) return st;
    const rc_tensor *data = rc_in(op, 0), *idx = rc_in(op, 1);
    if ((st = resize_out(op, 0, data->dtype, ndim, dims, err))) return st;
    const int64_t M = rc_tensor_numel(idx);
    const size_t R = (size_t)rc_dims_prod(data, 1, data->ndim) * rc_dtype_size(data->dtype);
    if (M && R) gather_kernel(M, R, rc_tensor_data(data), rc_i32(idx), rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ GatherGradient */

/* dout: (M, R), idx: (M,) -> ddata: (V, R) = 0; ddata[idx[m]] += dout[m], m in order */
static void gather_grad_kernel(int64_t V, int64_t M, int64_t R, const int32_t *idx, const float *dout,
                               float *ddata)
{
    memset(ddata, 0, (size_t)(V * R) * sizeof *ddata);
    for (int64_t m = 0; m < M; m++) {
        float *dr = ddata + (int64_t)idx[m] * R;
        const float *gr = dout + m * R;
        for (int64_t r = 0; r < R; r++) dr[r] += gr[r];
    }
}

/* GatherGradient: DATA (V, ...) float32 (for its shape), INDICES, dOUT (INDICES.shape + DATA.shape[1:])
 * -> dDATA (shape of DATA). */
static rc_status gather_grad_shapes(rc_op *op, int values, rc_err *err)
{
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if ((st = gather_shapes(op, values, &ndim, dims, err))) return st;
    if ((st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *data = rc_in(op, 0), *idx = rc_in(op, 1), *g = rc_in(op, 2);
    int ok = g->ndim == ndim;
    for (int k = 0; ok && k < ndim; k++) ok = g->dims[k] == dims[k];
    if (!ok) {
        rc_tensor want;
        rc_tensor_init(&want);
        want.dtype = RC_F32;
        want.ndim = ndim;
        memcpy(want.dims, dims, sizeof dims);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 2 blob '%s' (the output gradient) must have shape %s (input 1 blob '%s' %s + "
                          "input 0 blob '%s' %s without its first dim), got %s", rc_in_name(op, 2), RC_SHAPE(&want),
                          rc_in_name(op, 1), RC_SHAPE(idx), rc_in_name(op, 0), RC_SHAPE(data), RC_SHAPE(g));
    }
    return RC_OK;
}

static rc_status gather_grad_check(rc_op *op, rc_err *err) { return gather_grad_shapes(op, 0, err); }

static rc_status gather_grad_run(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = gather_grad_shapes(op, 1, err))) return st;
    const rc_tensor *data = rc_in(op, 0), *idx = rc_in(op, 1), *g = rc_in(op, 2);
    int64_t ddims[RC_MAX_DIMS];
    memcpy(ddims, data->dims, sizeof ddims);
    if ((st = resize_out(op, 0, RC_F32, data->ndim, ddims, err))) return st;
    const int64_t V = data->dims[0], R = rc_dims_prod(data, 1, data->ndim), M = rc_tensor_numel(idx);
    if (V > 0 && R > 0) gather_grad_kernel(V, M, R, rc_i32(idx), rc_f32(g), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ OneHot */

typedef struct onehot_state {
    int64_t index_size;  /* from the argument; -1 when it comes from input 1 */
} onehot_state;

static rc_status onehot_setup(rc_op *op, rc_err *err)
{
    onehot_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->index_size = -1;
    const int has_arg = rc_opdef_arg(&op->def, "index_size") != NULL;
    if (op->n_in == 2 && has_arg)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "give the index size either as input 1 (blob '%s') or as argument 'index_size', not both",
                          rc_in_name(op, 1));
    if (op->n_in == 1) {
        if (!has_arg)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "the index size is missing: give argument 'index_size' or input 1 (a one-element "
                              "int32 blob)");
        rc_status st = rc_arg_i(&op->def, "index_size", 0, &s->index_size, err);
        if (st) return st;
        if (s->index_size < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument index_size must be >= 0, got %lld",
                              (long long)s->index_size);
    }
    return RC_OK;
}

/* idx: (M,), len: (L,) >= 0 summing to M, or NULL (L = M: one index per row) -> out: (L, V): out[s, j] = 1 where
 * j is one of row s's indices (the next len[s] of idx, in order), else 0 */
static void onehot_kernel(int64_t L, int64_t V, const int32_t *idx, const int32_t *len, float *out)
{
    memset(out, 0, (size_t)(L * V) * sizeof *out);
    int64_t m = 0;
    for (int64_t s = 0; s < L; s++)
        for (int64_t n = len ? len[s] : 1; n > 0; n--) out[s * V + idx[m++]] = 1.0f;
}

/* Input i: int32 holding one value, the index size; with values, *pV = it (a ValueError when negative). */
static rc_status index_size_input(rc_op *op, int i, int values, int64_t *pV, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_I32, err);
    if (st) return st;
    const rc_tensor *vs = rc_in(op, i);
    if (rc_tensor_numel(vs) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the index size) must hold one value, got %s",
                          i, rc_in_name(op, i), RC_SHAPE(vs));
    if (!values) return RC_OK;
    *pV = rc_i32(vs)[0];
    if (*pV < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the index size) must be >= 0, got %lld", i,
                          rc_in_name(op, i), (long long)*pV);
    return RC_OK;
}

/* The inputs and the index size (*pV); values=0 (the check) reads no index size from input 1 and
 * checks no index. */
static rc_status onehot_inputs(rc_op *op, int values, int64_t *pV, rc_err *err)
{
    const onehot_state *s = op->state;
    rc_status st = rc_sparse_check_indices(op, 0, err);
    if (st) return st;
    int64_t V = s->index_size;
    if (V < 0 && (st = index_size_input(op, 1, values, &V, err))) return st;
    const rc_tensor *idx = rc_in(op, 0);
    if (idx->ndim + 1 > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' has too many dims for a one-hot output: %s",
                          rc_in_name(op, 0), RC_SHAPE(idx));
    *pV = V;
    return values ? check_indices(op, 0, V, "the index size", err) : RC_OK;
}

static rc_status onehot_check(rc_op *op, rc_err *err)
{
    int64_t V;
    return onehot_inputs(op, 0, &V, err);
}

static rc_status onehot_run(rc_op *op, rc_err *err)
{
    int64_t V = 0;
    rc_status st = onehot_inputs(op, 1, &V, err);
    if (st) return st;
    const rc_tensor *idx = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, idx->dims, sizeof dims);
    dims[idx->ndim] = V;
    if ((st = resize_out(op, 0, RC_F32, idx->ndim + 1, dims, err))) return st;
    const int64_t M = rc_tensor_numel(idx);
    if (M > 0 && V > 0) onehot_kernel(M, V, rc_i32(idx), NULL, rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ SegmentOneHot */

/* LENGTHS int32 (L,), INDICES int32 (M,), INDEX_SIZE int32 of one value. With values (run): every length
 * >= 0, their sum M, every index in [0, index size) (*pV), checked before anything is written. */
static rc_status seg_onehot_inputs(rc_op *op, int values, int64_t *pV, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_i32_vector(op, 0, "lengths", err))) return st;
    if ((st = rc_checks_i32_vector(op, 1, "indices", err))) return st;
    if ((st = index_size_input(op, 2, values, pV, err))) return st;
    if (!values) return RC_OK;
    if ((st = rc_checks_lengths_sum(op, 0, 1, err))) return st;
    return check_indices(op, 1, *pV, "the index size", err);
}

static rc_status seg_onehot_check(rc_op *op, rc_err *err)
{
    int64_t V;
    return seg_onehot_inputs(op, 0, &V, err);
}

static rc_status seg_onehot_run(rc_op *op, rc_err *err)
{
    int64_t V = 0;
    rc_status st = seg_onehot_inputs(op, 1, &V, err);
    if (st) return st;
    const rc_tensor *len = rc_in(op, 0);
    const int64_t dims[2] = {len->dims[0], V};
    if ((st = resize_out(op, 0, RC_F32, 2, dims, err))) return st;
    if (dims[0] > 0 && V > 0)
        onehot_kernel(dims[0], V, rc_in(op, 1)->dims[0] ? rc_i32(rc_in(op, 1)) : NULL, rc_i32(len),
                      rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ BatchOneHot, BatchBucketOneHot */

/* Both take (X, LENS, ...): X has N = X.shape[0] rows of D = X.size / N columns and LENS int32 (D,) gives a
 * count per column. Dtypes and shapes of X and LENS; with values (run), every count >= 0 and *psum their
 * sum. *pN, *pD: N and D. */
static rc_status batch_cols(rc_op *op, int values, int64_t *pN, int64_t *pD, int64_t *psum, rc_err *err)
{
    rc_status st = rc_checks_i32_vector(op, 1, "lengths", err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *lens = rc_in(op, 1);
    if (x->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' must have at least 1 dim (its rows), got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    *pN = x->dims[0];
    *pD = rc_dims_prod(x, 1, x->ndim);
    if (lens->dims[0] != *pD)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (lengths) must hold one length per column of input 0 blob '%s' %s "
                          "(%lld), got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(x), (long long)*pD,
                          RC_SHAPE(lens));
    return values ? rc_checks_lengths_values(op, 1, psum, err) : RC_OK;
}

/* Input 2 (the values or boundaries) must be 1-D of dtype dt; with values, of sum elements. */
static rc_status batch_dict(rc_op *op, rc_dtype dt, const char *what, int values, int64_t sum, rc_err *err)
{
    rc_status st = rc_check_input(op, 2, dt, err);
    if (st) return st;
    const rc_tensor *v = rc_in(op, 2);
    if (v->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (%s) must be 1-D, got %s", rc_in_name(op, 2),
                          what, RC_SHAPE(v));
    if (values && v->dims[0] != sum)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (%s) must hold sum(lengths) = %lld elements, "
                          "got %s", rc_in_name(op, 2), what, (long long)sum, RC_SHAPE(v));
    return RC_OK;
}

/* x: (N, D), len: (D,) >= 0, vals: (T,), T = sum(len) -> out: (N, T) of x's dtype: out[n, p] = 1 if
 * x[n, j] == vals[p] else 0, p running over the len[j] entries of column j (columns in order) */
#define BATCH_ONEHOT_KERNEL(name, T)                                                                   \
    static void name(int64_t N, int64_t D, int64_t Tn, const T *x, const int32_t *len, const T *vals, \
                     T *out)                                                                           \
    {                                                                                                  \
        for (int64_t n = 0; n < N; n++) {                                                              \
            int64_t p = 0;                                                                             \
            for (int64_t j = 0; j < D; j++)                                                            \
                for (int64_t k = 0; k < len[j]; k++, p++) out[n * Tn + p] = (T)(x[n * D + j] == vals[p]); \
        }                                                                                              \
    }
BATCH_ONEHOT_KERNEL(batch_onehot_f32, float)
BATCH_ONEHOT_KERNEL(batch_onehot_i32, int32_t)

static rc_status batch_onehot_inputs(rc_op *op, int values, int64_t *pN, int64_t *pD, int64_t *pT, rc_err *err)
{
    rc_status st = rc_checks_rows_any(op, 0, "the data", 0, err);
    if (st) return st;
    if ((st = batch_cols(op, values, pN, pD, pT, err))) return st;
    return batch_dict(op, rc_in(op, 0)->dtype, "the values, of input 0's dtype", values, *pT, err);
}

static rc_status batch_onehot_check(rc_op *op, rc_err *err)
{
    int64_t N, D, T = 0;
    return batch_onehot_inputs(op, 0, &N, &D, &T, err);
}

static rc_status batch_onehot_run(rc_op *op, rc_err *err)
{
    int64_t N, D, T = 0;
    rc_status st = batch_onehot_inputs(op, 1, &N, &D, &T, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t dims[2] = {N, T};
    if ((st = resize_out(op, 0, x->dtype, 2, dims, err))) return st;
    if (N == 0 || T == 0) return RC_OK;
    const int32_t *len = rc_i32(rc_in(op, 1));
    if (x->dtype == RC_F32)
        batch_onehot_f32(N, D, T, rc_f32(x), len, rc_f32(rc_in(op, 2)), rc_f32(rc_out(op, 0)));
    else
        batch_onehot_i32(N, D, T, rc_i32(x), len, rc_i32(rc_in(op, 2)), rc_i32(rc_out(op, 0)));
    return RC_OK;
}

/* Every column's boundaries (the next len[j] of input 2) are sorted: non-decreasing, no NaN. */
static rc_status check_boundaries(rc_op *op, int64_t D, const int32_t *len, rc_err *err)
{
    const float *b = rc_f32(rc_in(op, 2));
    for (int64_t j = 0, p = 0; j < D; p += len[j], j++)
        for (int64_t k = 0; k < len[j]; k++)
            if (isnan(b[p + k]) || (k > 0 && b[p + k] < b[p + k - 1]))
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "input 2 blob '%s' (the boundaries): column %lld's must be sorted, without NaN, "
                                  "but position %lld holds %g%s", rc_in_name(op, 2), (long long)j,
                                  (long long)(p + k), (double)b[p + k], isnan(b[p + k]) ? "" : " after a larger one");
    return RC_OK;
}

/* Number of the n sorted values b that are < v (or <= v with le); 0 for a NaN v. */
static int64_t count_below(const float *b, int64_t n, float v, int le)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (le ? b[mid] <= v : b[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* x: (N, D), len: (D,) >= 0, b: (sum len,) sorted per column -> out: (N, sum(len) + D): zeros, and for each
 * (n, j) a 1 at off_j + (#{b_j < x[n, j]} + #{b_j <= x[n, j]}) / 2, off_j = sum_{i < j} (len[i] + 1), b_j being
 * column j's boundaries: bucket k of column j is (b_j[k-1], b_j[k]], a run of equal boundaries splits its
 * value's ties in the middle */
static void bucket_onehot_kernel(int64_t N, int64_t D, int64_t W, const float *x, const int32_t *len,
                                 const float *b, float *out)
{
    memset(out, 0, (size_t)(N * W) * sizeof *out);
    for (int64_t n = 0; n < N; n++) {
        int64_t p = 0, off = 0;
        for (int64_t j = 0; j < D; j++) {
            const float v = x[n * D + j];
            const int64_t k = (count_below(b + p, len[j], v, 0) + count_below(b + p, len[j], v, 1)) / 2;
            out[n * W + off + k] = 1.0f;
            p += len[j];
            off += len[j] + 1;
        }
    }
}

static rc_status bucket_onehot_inputs(rc_op *op, int values, int64_t *pN, int64_t *pD, int64_t *pT, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    if ((st = batch_cols(op, values, pN, pD, pT, err))) return st;
    if ((st = batch_dict(op, RC_F32, "the boundaries", values, *pT, err))) return st;
    return values && *pT ? check_boundaries(op, *pD, rc_i32(rc_in(op, 1)), err) : RC_OK;
}

static rc_status bucket_onehot_check(rc_op *op, rc_err *err)
{
    int64_t N, D, T = 0;
    return bucket_onehot_inputs(op, 0, &N, &D, &T, err);
}

static rc_status bucket_onehot_run(rc_op *op, rc_err *err)
{
    int64_t N, D, T = 0;
    rc_status st = bucket_onehot_inputs(op, 1, &N, &D, &T, err);
    if (st) return st;
    const int64_t dims[2] = {N, T + D};
    if ((st = resize_out(op, 0, RC_F32, 2, dims, err))) return st;
    if (N == 0 || T + D == 0) return RC_OK;
    bucket_onehot_kernel(N, D, T + D, rc_f32(rc_in(op, 0)), rc_i32(rc_in(op, 1)), T ? rc_f32(rc_in(op, 2)) : NULL,
                         rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ WeightedSample */

typedef struct sample_state {
    uint64_t rng[4];     /* xoshiro256** */
    int64_t num_samples; /* WeightedMultiSampling's argument */
} sample_state;

/* op->state: a new sample_state (owned by the op) whose stream is seeded from argument `seed`, or freshly. */
static rc_status sample_state_new(rc_op *op, rc_err *err)
{
    sample_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    uint64_t x;
    if (rc_opdef_arg(&op->def, "seed")) {
        int64_t seed;
        rc_status st = rc_arg_i(&op->def, "seed", 0, &seed, err);
        if (st) return st;
        x = (uint64_t)seed;
    } else {
        x = rc_rng_fresh_seed();
    }
    rc_rng_seed(s->rng, x);
    return RC_OK;
}

static rc_status sample_setup(rc_op *op, rc_err *err)
{
    rc_status st = sample_state_new(op, err);
    if (st) return st;
    if (op->n_out == 2 && op->n_in != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output 1 blob '%s' (the sampled values) needs input 1 (the values to sample from)",
                          rc_out_name(op, 1));
    return RC_OK;
}

/* w: (N, D) non-negative rows with positive sums, u: one uniform [0, 1) per
 * row -> idx: (N,): the first j with cumsum(w[i])[j] > u_i * sum(w[i]).
 * Zero weights are never picked. Sums in double. */
static int32_t sample_row(int64_t D, const float *w, double u)
{
    double total = 0.0;
    for (int64_t j = 0; j < D; j++) total += w[j];
    const double r = u * total;
    double c = 0.0;
    int64_t last = 0;
    for (int64_t j = 0; j < D; j++) {
        if (w[j] <= 0.0f) continue;
        c += w[j];
        last = j;
        if (c > r) return (int32_t)j;
    }
    return (int32_t)last; /* rounding: r was within an ulp of the total */
}

/* WeightedSample: WEIGHTS (N, D) float32 [, VALUES (N, D) float32] -> INDICES (N,) int32
 * [, SAMPLED_VALUES (N,) float32 = VALUES[i, INDICES[i]]]. D == 0 gives outputs of shape (0,) whatever
 * N is, as Caffe2 (its op drew only when N > 0 and D > 0). */
static rc_status sample_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if ((st = rc_check_ndim(op, 0, 2, 2, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    if (w->dims[1] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s has more than %d columns",
                          rc_in_name(op, 0), RC_SHAPE(w), INT32_MAX);
    if (op->n_in == 2) {
        if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
        if (!rc_tensor_same_shape(rc_in(op, 1), w))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' must have the shape of input 0 blob '%s' %s, "
                              "got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(w), RC_SHAPE(rc_in(op, 1)));
    }
    return RC_OK;
}

static rc_status sample_run(rc_op *op, rc_err *err)
{
    sample_state *s = op->state;
    rc_status st;
    if ((st = sample_check(op, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t D = w->dims[1];
    /* no columns: nothing to draw from, outputs of shape (0,) whatever N is (Caffe2's else branch) */
    const int64_t N = D == 0 ? 0 : w->dims[0];
    const float *wd = rc_f32(w);
    for (int64_t i = 0; i < N; i++) {
        double total = 0.0;
        for (int64_t j = 0; j < D; j++) {
            const float v = wd[i * D + j];
            if (!(v >= 0.0f) || isinf(v))
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "input 0 blob '%s' of shape %s: weight %g at row %lld, column %lld must be finite "
                                  "and >= 0", rc_in_name(op, 0), RC_SHAPE(w), (double)v, (long long)i, (long long)j);
            total += v;
        }
        if (!(total > 0.0))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s: the weights of row %lld sum to 0",
                              rc_in_name(op, 0), RC_SHAPE(w), (long long)i);
    }
    int64_t dims[1] = {N};
    if ((st = resize_out(op, 0, RC_I32, 1, dims, err))) return st;
    if (op->n_out == 2 && (st = resize_out(op, 1, RC_F32, 1, dims, err))) return st;
    int32_t *out = rc_i32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++) {
        const double u = rc_rng_unit(s->rng); /* [0, 1) */
        out[i] = sample_row(D, wd + i * D, u);
    }
    if (op->n_out == 2) {
        const float *vals = rc_f32(rc_in(op, 1));
        float *sv = rc_f32(rc_out(op, 1));
        for (int64_t i = 0; i < N; i++) sv[i] = vals[i * D + out[i]];
    }
    return RC_OK;
}

/* ================================================================ WeightedMultiSampling
 *
 * WeightedMultiSampling(CDF[, SHAPE]) -> INDICES (caffe2/operators/weighted_multi_sampling_op.cc): CDF float32
 * (N,), a cumulative distribution (non-decreasing, its last value the total, not necessarily 1); each index i
 * is drawn with probability (CDF[i] - CDF[i-1]) / CDF[N-1]: with u uniform on [0, 1), the first i with
 * CDF[i] > u * CDF[N-1]. INDICES int32 of shape SHAPE.shape (SHAPE any tensor; its values are not read) or
 * (num_samples,) (argument, default 0; with SHAPE given it is a ValueError at creation, as Caffe2); N == 0
 * gives INDICES of shape (0,) whatever was asked (as Caffe2). Argument seed: as WeightedSample's.
 * Differences from Caffe2: CDF must be finite, >= 0 and non-decreasing, and, when anything is drawn, its last
 * value > 0 (ValueError naming the position; Caffe2 assumed it); an index whose probability is 0 is never
 * drawn (Caffe2 took the first i with CDF[i] >= r, so a draw of r = 0 could give a leading zero-weight
 * index); u has 53 random bits (Caffe2: a float). No gradient. */

static rc_status multi_sample_setup(rc_op *op, rc_err *err)
{
    rc_status st = sample_state_new(op, err);
    if (st) return st;
    if (op->n_in == 2 && rc_opdef_arg(&op->def, "num_samples"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "the output's shape is given by input 1 blob '%s': do not pass "
                          "the argument num_samples too", rc_in_name(op, 1));
    int64_t n = 0;
    if ((st = rc_arg_i(&op->def, "num_samples", 0, &n, err))) return st;
    if (n < 0 || n > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument num_samples must be in [0, %d], got %lld", INT32_MAX,
                          (long long)n);
    ((sample_state *)op->state)->num_samples = n;
    return RC_OK;
}

/* CDF float32 1-D; SHAPE (input 1) any tensor. */
static rc_status multi_sample_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if ((st = rc_check_ndim(op, 0, 1, 1, err))) return st;
    if (op->n_in == 2 && rc_in(op, 1)->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the shape of the output) holds no tensor",
                          rc_in_name(op, 1));
    return RC_OK;
}

/* The first i in [0, n) with cdf[i] > r, or n when none is. */
static int64_t first_above(const float *cdf, int64_t n, double r)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if ((double)cdf[mid] > r) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static rc_status multi_sample_run(rc_op *op, rc_err *err)
{
    sample_state *s = op->state;
    rc_status st;
    if ((st = multi_sample_check(op, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t N = w->dims[0];
    const float *cdf = rc_f32(w);
    int ndim = 1;
    int64_t dims[RC_MAX_DIMS] = {N ? s->num_samples : 0};
    if (N && op->n_in == 2) {
        ndim = rc_in(op, 1)->ndim;
        memcpy(dims, rc_in(op, 1)->dims, sizeof(int64_t) * (size_t)ndim);
    }
    int64_t K = 1;
    for (int d = 0; d < ndim; d++) K *= dims[d];
    for (int64_t i = 0; i < N; i++) {
        const float v = cdf[i], before = i ? cdf[i - 1] : 0.0f;
        if (!(v >= before) || isinf(v))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s (the cumulative distribution): "
                              "value %g at position %lld must be finite and >= %s (%g)", rc_in_name(op, 0),
                              RC_SHAPE(w), (double)v, (long long)i, i ? "the one before it" : "0", (double)before);
    }
    if (K && N && !(cdf[N - 1] > 0.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s (the cumulative distribution) ends "
                          "at 0: there is nothing to draw", rc_in_name(op, 0), RC_SHAPE(w));
    if ((st = resize_out(op, 0, RC_I32, ndim, dims, err))) return st;
    int32_t *out = rc_i32(rc_out(op, 0));
    if (!N) return RC_OK;
    const double total = cdf[N - 1];
    for (int64_t k = 0; k < K; k++) {
        int64_t i = first_above(cdf, N, rc_rng_unit(s->rng) * total);
        /* u * total rounded up to total: the first i reaching it (cdf[i] > the double below total) */
        if (i == N) i = first_above(cdf, N, nextafter(total, 0.0));
        out[k] = (int32_t)i;
    }
    return RC_OK;
}

/* ================================================================ Adagrad */

typedef struct adagrad_state {
    float epsilon, decay, weight_decay;
} adagrad_state;

static rc_status adagrad_setup(rc_op *op, rc_err *err)
{
    adagrad_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    if ((st = rc_arg_f(&op->def, "epsilon", 1e-5f, &s->epsilon, err))) return st;
    if ((st = rc_arg_f(&op->def, "decay", 1.0f, &s->decay, err))) return st;
    if ((st = rc_arg_f(&op->def, "weight_decay", 0.0f, &s->weight_decay, err))) return st;
    if (!isfinite(s->weight_decay))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument weight_decay must be finite, got %g",
                          (double)s->weight_decay);
    if (!(s->epsilon >= 0.0f) || isinf(s->epsilon))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument epsilon must be finite and >= 0, got %g", (double)s->epsilon);
    if (!(s->decay >= 0.0f) || isinf(s->decay))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument decay must be finite and >= 0, got %g", (double)s->decay);
    return RC_OK;
}

/* w, h, g: (n,), lr: scalar -> nw, nh: (n,):
 *   g' = g + wd * w (g itself when wd is 0);  nh = decay * h + g'^2;  nw = w + lr * g' / (sqrt(nh) + epsilon)
 * (Caffe2's convention: lr is negative for descent). nw may alias w, nh may alias h. */
static void adagrad_kernel(int64_t n, const float *w, const float *h, const float *g, float lr, float eps, float decay,
                           float wd, float *nw, float *nh)
{
    for (int64_t i = 0; i < n; i++) {
        const float gi = wd != 0.0f ? fmaf(wd, w[i], g[i]) : g[i];
        const float hi = decay * h[i] + gi * gi;
        nh[i] = hi;
        nw[i] = w[i] + lr * gi / (sqrtf(hi) + eps);
    }
}

/* As adagrad_kernel, also writing elr: (n,) = lr / (sqrt(nh) + epsilon) and, when upd is not NULL,
 * upd: (n,) = elr * g'; then nw = w + elr * g' (Caffe2's effective-lr kernels). elr and upd alias nothing. */
static void adagrad_elr_kernel(int64_t n, const float *w, const float *h, const float *g, float lr, float eps,
                               float decay, float wd, float *nw, float *nh, float *elr, float *upd)
{
    for (int64_t i = 0; i < n; i++) {
        const float gi = wd != 0.0f ? fmaf(wd, w[i], g[i]) : g[i];
        const float hi = decay * h[i] + gi * gi;
        nh[i] = hi;
        const float e = lr / (sqrtf(hi) + eps);
        elr[i] = e;
        const float u = e * gi;
        if (upd) upd[i] = u;
        nw[i] = w[i] + u;
    }
}

/* param, moment, grad float32 of one shape; lr one float32 value. */
static rc_status adagrad_check(rc_op *op, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 4; i++)
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    for (int i = 1; i <= 2; i++)
        if (!rc_tensor_same_shape(rc_in(op, i), w))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have the shape of input 0 blob '%s' %s, "
                              "got %s", i, rc_in_name(op, i), rc_in_name(op, 0), RC_SHAPE(w), RC_SHAPE(rc_in(op, i)));
    if (rc_tensor_numel(rc_in(op, 3)) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 3 blob '%s' (the learning rate) must hold one value, got %s",
                          rc_in_name(op, 3), RC_SHAPE(rc_in(op, 3)));
    return RC_OK;
}

static rc_status adagrad_run(rc_op *op, rc_err *err)
{
    const adagrad_state *s = op->state;
    rc_status st;
    if ((st = adagrad_check(op, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const float lr = rc_f32(rc_in(op, 3))[0];
    /* outputs may alias their inputs (in place); resize to an unchanged shape keeps the buffer */
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, w->dims, sizeof dims);
    const int ndim = w->ndim;
    if ((st = resize_out(op, 0, RC_F32, ndim, dims, err))) return st;
    if ((st = resize_out(op, 1, RC_F32, ndim, dims, err))) return st;
    for (int o = 2; o < op->n_out; o++)
        if ((st = resize_out(op, o, RC_F32, ndim, dims, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (!n) return RC_OK;
    if (op->n_out == 2)
        adagrad_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), lr, s->epsilon, s->decay,
                       s->weight_decay, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)));
    else
        adagrad_elr_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), lr, s->epsilon,
                           s->decay, s->weight_decay, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)),
                           rc_f32(rc_out(op, 2)), op->n_out == 4 ? rc_f32(rc_out(op, 3)) : NULL);
    return RC_OK;
}


/* ---------------------------------------------------------------- SparseAdagrad */

/* Dtypes and shapes (no data values): (PARAM, MOMENT, INDICES, GRAD, LR); MOMENT float32 of PARAM's shape,
 * GRAD INDICES.shape + PARAM.shape[1:], LR one float32. */
static rc_status sparse_adagrad_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    if (!rc_tensor_same_shape(rc_in(op, 1), w))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' must have the shape of input 0 blob '%s' %s, "
                          "got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(w), RC_SHAPE(rc_in(op, 1)));
    if ((st = rc_sparse_check_indices(op, 2, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 2, 3, "the gradient", err))) return st;
    return rc_sparse_check_scalar(op, 4, "the learning rate", err);
}

static rc_status sparse_adagrad_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1};
    rc_status st = adagrad_setup(op, err);
    if (st) return st;
    return rc_sparse_require_inplace(op, pairs, 2, err);
}

/* (PARAM, MOMENT, INDICES, GRAD, LR) -> (PARAM, MOMENT) in place: for each k in order, rows i = INDICES[k]
 * get Adagrad's step (the same kernel) with row k of GRAD. */
static rc_status sparse_adagrad_run(rc_op *op, rc_err *err)
{
    const adagrad_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    if ((st = sparse_adagrad_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 4, "the learning rate", &lr, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 2, 0, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 2)), R = rc_dims_prod(w, 1, w->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 2));
    const float *g = rc_f32(rc_in(op, 3));
    float *wd = rc_f32(rc_out(op, 0)), *h = rc_f32(rc_out(op, 1));
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        adagrad_kernel(R, wd + i, h + i, g + k * R, lr, s->epsilon, s->decay, s->weight_decay, wd + i, h + i);
    }
    return RC_OK;
}

/* ================================================================ table */

/* Adagrad: param and moment may be updated in place (input 0 -> output 0, input 1 -> output 1). */
static int inplace_adagrad(int in, int out) { return (in == 0 && out == 0) || (in == 1 && out == 1); }

const rc_op_schema rc_ops_embed[] = {
    {"Gather", 2, 2, 1, 1, NULL, gather_setup, gather_run, free,
     "(DATA (V, ...), INDICES int32) -> OUT = DATA[INDICES], shape INDICES.shape + DATA.shape[1:]; arg axis: "
     "DATA.shape[:axis] + INDICES.shape + DATA.shape[axis+1:]", gather_check},
    {"GatherGradient", 3, 3, 1, 1, NULL, NULL, gather_grad_run, NULL,
     "(DATA, INDICES, dOUT) -> dDATA (dense, shape of DATA): zeros, then dDATA[INDICES[m]] += dOUT[m] in order",
     gather_grad_check},
    {"OneHot", 1, 2, 1, 1, NULL, onehot_setup, onehot_run, free,
     "(INDICES int32[, INDEX_SIZE int32]) -> float32 one-hot rows, shape INDICES.shape + (index_size,)",
     onehot_check},
    {"SegmentOneHot", 3, 3, 1, 1, NULL, NULL, seg_onehot_run, NULL,
     "(LENGTHS int32 (L,), INDICES int32 (sum LENGTHS,), INDEX_SIZE int32) -> float32 (L, index_size): row s has "
     "1 at each of segment s's indices", seg_onehot_check},
    {"BatchOneHot", 3, 3, 1, 1, NULL, NULL, batch_onehot_run, NULL,
     "(X (N, D...) float32 or int32, LENS int32 (D,), VALS (sum LENS,) of X's dtype) -> (N, sum LENS) of X's "
     "dtype: column j expands to LENS[j] columns, 1 where X[:, j] equals the value", batch_onehot_check},
    {"BatchBucketOneHot", 3, 3, 1, 1, NULL, NULL, bucket_onehot_run, NULL,
     "(X (N, D...) float32, LENS int32 (D,), BOUNDARIES float32 (sum LENS,) sorted per column) -> float32 (N, "
     "sum LENS + D): column j expands to LENS[j] + 1 buckets (b[k-1], b[k]], one-hot", bucket_onehot_check},
    {"WeightedSample", 1, 2, 1, 2, NULL, sample_setup, sample_run, free,
     "(WEIGHTS (N, D)[, VALUES (N, D)]) -> (INDICES (N,) int32 drawn with probability w / rowsum(w)[, VALUES[i, "
     "INDICES[i]]]); argument seed", sample_check},
    {"WeightedMultiSampling", 1, 2, 1, 1, NULL, multi_sample_setup, multi_sample_run, free,
     "(CDF (N,) float32 cumulative[, SHAPE]) -> INDICES int32 of SHAPE's shape or (num_samples,): i drawn "
     "with probability (CDF[i] - CDF[i-1]) / CDF[N-1]; N == 0 gives (0,); argument seed", multi_sample_check},
    {"Adagrad", 4, 4, 2, 4, inplace_adagrad, adagrad_setup, adagrad_run, free,
     "(param, moment, grad, lr) -> (param, moment[, effective_lr[, update]]): g = grad + weight_decay*param; "
     "moment = decay*moment + g^2; param += lr*g/(sqrt(moment)+eps); effective_lr = lr/(sqrt(moment)+eps), "
     "update = effective_lr*g", adagrad_check},
    {"SparseAdagrad", 5, 5, 2, 2, inplace_adagrad, sparse_adagrad_setup, sparse_adagrad_run, free,
     "(param, moment, indices, grad, lr) -> (param, moment) in place: Adagrad's step on rows indices[k] with row k "
     "of grad (shape indices.shape + param.shape[1:]), k in order; arguments epsilon, decay, weight_decay",
     sparse_adagrad_check},
    {0},
};
