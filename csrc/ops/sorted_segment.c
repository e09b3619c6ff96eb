/* ops/sorted_segment.c -- Caffe2's reductions over sorted segment ids
 * (segment_reduction_op: SortedSegment*, SparseSortedSegment*,
 * SortedSegmentRange*) with their gradient ops under Caffe2's names and input
 * orders, and the debugging ops NanCheck (nan_check_op), EnforceFinite
 * (enforce_finite_op) and Assert (assert_op).
 *
 *   SortedSegmentSum(DATA, SEGMENT_IDS) -> OUT
 *   SortedSegmentMean(DATA, SEGMENT_IDS) -> OUT
 *   SortedSegmentWeightedSum(DATA, SCALARS, SEGMENT_IDS) -> OUT
 *   SparseSortedSegmentSum(DATA, INDICES, SEGMENT_IDS) -> OUT
 *   SparseSortedSegmentMean(DATA, INDICES, SEGMENT_IDS) -> OUT
 *   SparseSortedSegmentWeightedSum(DATA, SCALARS, INDICES, SEGMENT_IDS) -> OUT
 *   SortedSegmentRangeSum(DATA, SEGMENT_IDS) -> OUT
 *   SortedSegmentRangeMean(DATA, SEGMENT_IDS) -> OUT
 *   SortedSegmentRangeLogSumExp(DATA, SEGMENT_IDS) -> OUT
 *   SortedSegmentRangeLogMeanExp(DATA, SEGMENT_IDS) -> OUT
 *   SortedSegmentRangeMax(DATA, SEGMENT_IDS) -> OUT
 *
 *   SortedSegmentSumGradient(dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentMeanGradient(dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentWeightedSumGradient(SCALARS, dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentWeightedSumWithMainInputGradient(SCALARS, dOUT, SEGMENT_IDS, DATA[, INDICES])
 *       -> (dDATA, dSCALARS)
 *   SortedSegmentRangeSumGradient(DATA, OUT, dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentRangeMeanGradient(DATA, OUT, dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentRangeLogSumExpGradient(DATA, OUT, dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentRangeLogMeanExpGradient(DATA, OUT, dOUT, SEGMENT_IDS) -> dDATA
 *   SortedSegmentRangeMaxGradient(DATA, OUT, dOUT, SEGMENT_IDS) -> dDATA
 *
 *   NanCheck(X[, ...]) -> Y
 *   EnforceFinite(X) -> ()          a NaN or inf in X (float32) is a ValueError, as NanCheck's
 *   Assert(X) -> ()
 *
 * DATA float32 with at least 1 dim, rows of R = prod(DATA.shape[1:]).
 * SEGMENT_IDS int32 1-D of N ids, one per row reduced: row k is DATA[k]
 * (dense, DATA.shape[0] == N) or DATA[INDICES[k]] (Sparse*, INDICES int32 1-D
 * of N, each in [0, DATA.shape[0])). SCALARS float32 1-D of N weights. The ids
 * must be sorted: every id >= 0 and no id smaller than the one before it; OUT
 * has shape (K,) + DATA.shape[1:], K = last id + 1 (0 for no ids), OUT[s]
 * reduces the rows with id s. Caffe2 also refused a first id other than 0 and
 * a gap (an id more than one above the previous); here those segments are
 * empty and give 0, as a zero length does in LengthsSum. Every id (and index)
 * is checked before anything is written: an unsorted or negative id is a
 * ValueError naming the op, the blob, the position, the id and the one before.
 *
 * The ids are turned into per-segment lengths (scratch, owned by the run) and
 * reduced by the kernels of ops/lengths_reduce.c: Sum, Mean and WeightedSum
 * accumulate in double over each segment's rows in order and round once; an
 * empty segment gives 0. The Range ops are Caffe2's RangeReducer versions of
 * Sum and Mean (dense DATA only): the same values.
 *
 * RangeLogSumExp: OUT[s] = log(sum of exp(row)) over segment s, element-wise,
 * computed stably as m + log(sum exp(x - m)) with m the segment's max, in
 * double, rounded once (Caffe2 the same in float). Infinities give what the
 * math defines: a segment of only -inf gives -inf (log 0; an -inf among finite
 * values adds nothing), any +inf gives +inf (Caffe2: NaN, from inf - inf). An
 * empty segment (a gap) gives -inf, log of an empty sum. A NaN in the segment
 * gives NaN (as Caffe2).
 * RangeLogMeanExp: OUT[s] = log(mean of exp(row)) = m + log(sum exp(x - m) / n)
 * for a segment of n rows, the same way (Caffe2 the same in float); the
 * infinities and NaN as LogSumExp, and an empty segment (a gap) gives -inf as
 * LogSumExp's does (Caffe2 refused gaps).
 * RangeMax: OUT[s] = the element-wise max over segment s, the LengthsMax
 * kernel of ops/lengths_reduce.c: a NaN in the segment gives NaN, a segment of
 * only -inf gives -inf, an empty segment 0 (as LengthsMax here). Caffe2's
 * MaxRangeReducer started from the lowest float and used std::max: it skipped
 * NaNs and gave -FLT_MAX for a segment of only -inf (and for no rows).
 *
 * Gradients: dOUT float32 (K, ...) with K = last id + 1 (a mismatch is a
 * ValueError; Caffe2 enforced K - 1 == last id too); dDATA (N,) + dOUT.shape[1:]
 * with row k of segment s = dOUT[s] (Sum), dOUT[s] / count(s) (Mean),
 * SCALARS[k] * dOUT[s] (WeightedSum); WithMainInput also gives
 * dSCALARS[k] = <dOUT[s], row k of DATA> (DATA[INDICES[k]] when INDICES is
 * given: the sparse op with grad_on_weights). The Sparse* forward ops use these
 * same gradient ops; their rows are the values of a GradientSlice with INDICES
 * (recurrent/_grad_sorted.py). The Range gradient ops take Caffe2's (DATA, OUT,
 * dOUT, SEGMENT_IDS); DATA and OUT are only shape-checked by Sum and Mean, and
 * read by the other two, which take OUT as given (the forward output):
 * LogSumExp: row k of segment s gets dOUT[s] * exp(DATA[k] - OUT[s]) (Caffe2's
 * formula; in double, rounded once), except where DATA[k] and OUT[s] are the
 * same infinity (Caffe2: NaN from inf - inf): the m such elements of the
 * segment share dOUT[s] equally, dOUT[s] / m each (the limit of equal inputs;
 * the weights of a segment still sum to 1). A NaN in DATA or OUT gives NaN.
 * LogMeanExp: the same with dOUT[s] * exp(DATA[k] - OUT[s]) / n for a segment
 * of n rows (Caffe2's formula), the infinite ties shared as LogSumExp's.
 * Max: dOUT[s] goes to every element equal to OUT[s], 0 elsewhere: every tied
 * element gets all of it, as Caffe2's MaxRangeReducerGradient (whose doc
 * string says the first occurrence; its code compares each element with OUT),
 * and nothing where OUT is NaN. An empty segment has no rows: no gradient.
 *
 * NanCheck: X float32 (any shape); extra inputs of any dtype are only named in
 * the message (Caffe2 printed them to stderr). Y = X (in place: nothing is
 * written). A NaN or an infinity is a ValueError naming the op, the blob, its
 * shape, the first bad value and its flat index and row; Y is then not
 * written. Its gradient is NanCheck of the output gradient (Caffe2's maker).
 *
 * Assert: X int32 or float32 (Caffe2: bool, int32, int64), no outputs; an
 * element equal to 0 is a RuntimeError naming the op, the blob, the flat index
 * of the first one and the argument error_msg (default empty). No gradient.
 *
 * No global state. The only allocation besides the outputs is the lengths
 * scratch of the segment ops, freed before the run returns, also on error.
 */
#include "../core/rc_core.h"
#include "lengths_reduce.h"
#include "sparse.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { K_SUM, K_MEAN, K_WSUM, K_MAX, K_LSE, K_LME };
enum { G_PLAIN, G_W, G_MAIN, G_RANGE }; /* gradient input layouts, see grad_inputs */

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Input i: dtype dt with exactly 1 dim (ndim 1) or at least 1 dim (ndim < 0). */
static rc_status check_rank(rc_op *op, int i, rc_dtype dt, int ndim, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, dt, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (ndim >= 0 ? t->ndim != ndim : t->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) of shape %s must have %s dim", i,
                          rc_in_name(op, i), what, RC_SHAPE(t), ndim >= 0 ? "exactly 1" : "at least 1");
    return RC_OK;
}

/* Input i (checked, ndim >= 1) must have first dim n: one row per segment id of input ids. */
static rc_status check_first_dim(rc_op *op, int i, int ids, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i), *s = rc_in(op, ids);
    if (t->dims[0] != s->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (%s) of shape %s must have one row per segment id: first dim %lld "
                          "(input %d blob '%s' (segment_ids) of shape %s)", i, rc_in_name(op, i), what, RC_SHAPE(t),
                          (long long)s->dims[0], ids, rc_in_name(op, ids), RC_SHAPE(s));
    return RC_OK;
}

/* Input a and b (ndim >= 1) have rows of one size: the product of the dims
 * after the first (the row shapes may differ, as Caffe2's gradient ops took:
 * a RecurrentNetwork link gives a step output's gradient the link's (1, N, D)
 * shape where the op wrote (1, D)). */
static rc_status check_row_size(rc_op *op, int a, int b, rc_err *err)
{
    const rc_tensor *x = rc_in(op, a), *y = rc_in(op, b);
    if (rc_dims_prod(x, 1, x->ndim) != rc_dims_prod(y, 1, y->ndim))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' of shape %s must have rows of the size of input %d blob '%s' of shape "
                          "%s (the product of the dims after the first)", a, rc_in_name(op, a), RC_SHAPE(x), b,
                          rc_in_name(op, b), RC_SHAPE(y));
    return RC_OK;
}

/* Input i (SEGMENT_IDS, int32 1-D, checked): ids[0] >= 0 and ids[k] >= ids[k - 1].
 * Reads the data. *K = last id + 1 (0 for no ids). */
static rc_status check_sorted(rc_op *op, int i, int64_t *K, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    const int64_t N = t->dims[0];
    const int32_t *id = N ? rc_i32(t) : NULL;
    for (int64_t k = 0; k < N; k++) {
        if (k == 0 && id[0] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (segment_ids) of shape %s: segment id %d "
                              "at position 0 is negative", i, rc_in_name(op, i), RC_SHAPE(t), (int)id[0]);
        if (k > 0 && id[k] < id[k - 1])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (segment_ids) of shape %s must be sorted: "
                              "segment id %d at position %lld is below the id %d before it", i, rc_in_name(op, i),
                              RC_SHAPE(t), (int)id[k], (long long)k, (int)id[k - 1]);
    }
    *K = N ? (int64_t)id[N - 1] + 1 : 0;
    return RC_OK;
}

/* ids: (N,) sorted, in [0, K) -> *len: (K,) malloc'd, the count of each id
 * (owned by the caller, who frees it; NULL when K == 0). */
static rc_status ids_to_lengths(rc_op *op, int i, int64_t K, int32_t **len, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    *len = NULL;
    if (K == 0) return RC_OK;
    if (t->dims[0] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (segment_ids) of shape %s has more than %d ids",
                          i, rc_in_name(op, i), RC_SHAPE(t), INT32_MAX);
    int32_t *l = calloc((size_t)K, sizeof *l);
    if (!l) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (lengths of %lld segments)", (long long)K);
    const int32_t *id = rc_i32(t);
    for (int64_t k = 0; k < t->dims[0]; k++) l[id[k]]++;
    *len = l;
    return RC_OK;
}

/* ================================================================ kernels */

/* data: (N, R), len: (K,) summing to N -> out: (K, R), out[s][r] = log of the
 * sum over segment s of exp(data[k][r]): m + log(sum exp(x - m)), m the max, in
 * double, rounded once; with mean, log of the mean: m + log(sum exp(x - m) / n).
 * NaN in the segment: NaN; empty or only -inf: -inf; a +inf (no NaN): +inf. */
static void lse_kernel(int64_t K, int64_t R, const float *data, const int32_t *len, int mean, float *out)
{
    int64_t k0 = 0;
    for (int64_t s = 0; s < K; s++) {
        const int64_t n = len[s];
        for (int64_t r = 0; r < R; r++) {
            double m = -INFINITY;
            int nan = 0;
            for (int64_t k = k0; k < k0 + n; k++) {
                const double x = data[k * R + r];
                if (isnan(x)) nan = 1;
                else if (x > m) m = x;
            }
            double y = nan ? NAN : m; /* an infinite max is the answer */
            if (!nan && isfinite(m)) {
                double acc = 0.0;
                for (int64_t k = k0; k < k0 + n; k++) acc += exp((double)data[k * R + r] - m);
                y = m + log(mean ? acc / (double)n : acc);
            }
            out[s * R + r] = (float)y;
        }
        k0 += n;
    }
}

/* data: (N, R), fo, g: (K, R), len: (K,) summing to N -> dx: (N, R),
 * dx[k][r] = g[s][r] * exp(data[k][r] - fo[s][r]) in double, rounded once (k in
 * segment s), divided by n (the segment's rows) with mean (LogMeanExp); where
 * data[k][r] and fo[s][r] are the same infinity, the m such elements of the
 * segment column get g[s][r] / m each. */
static void lse_grad_kernel(int64_t K, int64_t R, const float *data, const float *fo, const float *g,
                            const int32_t *len, int mean, float *dx)
{
    int64_t k0 = 0;
    for (int64_t s = 0; s < K; s++) {
        const int64_t n = len[s];
        for (int64_t r = 0; r < R; r++) {
            const double o = fo[s * R + r], go = mean && n ? g[s * R + r] / (double)n : g[s * R + r];
            int64_t ties = 0;
            if (isinf(o))
                for (int64_t k = k0; k < k0 + n; k++) ties += data[k * R + r] == o;
            for (int64_t k = k0; k < k0 + n; k++) {
                const double x = data[k * R + r];
                dx[k * R + r] = (float)(isinf(o) && x == o ? (double)g[s * R + r] / (double)ties : go * exp(x - o));
            }
        }
        k0 += n;
    }
}

/* ================================================================ forward */

/* Dtypes and shapes: DATA float32 ndim >= 1, SEGMENT_IDS int32 1-D, one per
 * row (DATA.shape[0], or len(INDICES) when sparse), SCALARS float32 1-D of one
 * weight per id. */
static rc_status fwd_shapes(rc_op *op, int kind, int sparse, rc_err *err)
{
    const rc_seg_layout l = rc_seg_inputs(kind == K_WSUM, sparse);
    rc_status st;
    if ((st = check_rank(op, l.data, RC_F32, -1, "data", err))) return st;
    if ((st = check_rank(op, l.ids, RC_I32, 1, "segment_ids", err))) return st;
    if (sparse) {
        if ((st = check_rank(op, l.idx, RC_I32, 1, "indices", err))) return st;
        if ((st = check_first_dim(op, l.idx, l.ids, "indices", err))) return st;
    } else if ((st = check_first_dim(op, l.data, l.ids, "data", err))) {
        return st;
    }
    if (l.w >= 0) {
        if ((st = check_rank(op, l.w, RC_F32, 1, "scalars", err))) return st;
        if ((st = check_first_dim(op, l.w, l.ids, "scalars", err))) return st;
    }
    return RC_OK;
}

static rc_status fwd_run(rc_op *op, int kind, int sparse, rc_err *err)
{
    rc_status st = fwd_shapes(op, kind, sparse, err);
    if (st) return st;
    const rc_seg_layout l = rc_seg_inputs(kind == K_WSUM, sparse);
    const rc_tensor *data = rc_in(op, l.data);
    int64_t K = 0;
    if ((st = check_sorted(op, l.ids, &K, err))) return st;
    if (sparse && (st = rc_sparse_check_range_of(op, l.idx, l.data, err))) return st;
    int32_t *len = NULL; /* scratch, owned here, freed below */
    if ((st = ids_to_lengths(op, l.ids, K, &len, err))) return st;
    if ((st = rc_lr_resize_rows(op, 0, K, data, err))) {
        free(len);
        return st;
    }
    const int64_t R = rc_dims_prod(data, 1, data->ndim);
    if (K > 0 && R > 0) {
        const float *x = rc_f32(data); /* K > 0: there are ids, so rows */
        float *out = rc_f32(rc_out(op, 0));
        if (kind == K_MAX) {
            rc_lr_max_kernel(K, R, x, len, out);
        } else if (kind == K_LSE || kind == K_LME) {
            lse_kernel(K, R, x, len, kind == K_LME, out);
        } else {
            const int32_t *idx = sparse ? rc_i32(rc_in(op, l.idx)) : NULL;
            const float *w = l.w >= 0 ? rc_f32(rc_in(op, l.w)) : NULL;
            rc_lr_sum_kernel(K, R, x, idx, len, w, 0, kind == K_MEAN, out);
        }
    }
    free(len);
    return RC_OK;
}

#define FWD(name, kind, sparse)                                                                           \
    static rc_status name##_check(rc_op *op, rc_err *err) { return fwd_shapes(op, kind, sparse, err); } \
    static rc_status name##_run(rc_op *op, rc_err *err) { return fwd_run(op, kind, sparse, err); }

FWD(ssum, K_SUM, 0)
FWD(smean, K_MEAN, 0)
FWD(swsum, K_WSUM, 0)
FWD(spsum, K_SUM, 1)
FWD(spmean, K_MEAN, 1)
FWD(spwsum, K_WSUM, 1)
FWD(rlse, K_LSE, 0)
FWD(rlme, K_LME, 0)
FWD(rmax, K_MAX, 0)

/* ================================================================ gradients */

typedef struct {
    int w, g, ids, data, idx, out; /* input positions; -1: absent */
} grad_layout;

static grad_layout grad_inputs(rc_op *op, int variant)
{
    grad_layout l = {-1, 0, 1, -1, -1, -1};
    if (variant == G_W || variant == G_MAIN) l.w = 0, l.g = 1, l.ids = 2;
    if (variant == G_MAIN) {
        l.data = 3;
        if (op->n_in > 4) l.idx = 4;
    }
    if (variant == G_RANGE) l.data = 0, l.out = 1, l.g = 2, l.ids = 3;
    return l;
}

/* Dtypes and shapes: dOUT float32 ndim >= 1, SEGMENT_IDS int32 1-D of N,
 * SCALARS float32 (N,), DATA float32 (N or any rows with INDICES (N,)) with
 * rows of dOUT's size, OUT (Range) with dOUT's rows (check_row_size). The
 * data gradient takes DATA's row shape. */
static rc_status grad_shapes(rc_op *op, int variant, rc_err *err)
{
    const grad_layout l = grad_inputs(op, variant);
    rc_status st;
    if ((st = check_rank(op, l.g, RC_F32, -1, "the output gradient", err))) return st;
    if ((st = check_rank(op, l.ids, RC_I32, 1, "segment_ids", err))) return st;
    if (l.w >= 0) {
        if ((st = check_rank(op, l.w, RC_F32, 1, "scalars", err))) return st;
        if ((st = check_first_dim(op, l.w, l.ids, "scalars", err))) return st;
    }
    if (l.data >= 0) {
        if ((st = check_rank(op, l.data, RC_F32, -1, "data", err))) return st;
        if ((st = check_row_size(op, l.data, l.g, err))) return st;
        if (l.idx < 0 && (st = check_first_dim(op, l.data, l.ids, "data", err))) return st;
    }
    if (l.idx >= 0) {
        if ((st = check_rank(op, l.idx, RC_I32, 1, "indices", err))) return st;
        if ((st = check_first_dim(op, l.idx, l.ids, "indices", err))) return st;
    }
    if (l.out >= 0) {
        if ((st = rc_check_input(op, l.out, RC_F32, err))) return st;
        const rc_tensor *o = rc_in(op, l.out), *g = rc_in(op, l.g);
        if (o->ndim < 1 || o->dims[0] != g->dims[0] || rc_tensor_numel(o) != rc_tensor_numel(g))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (the forward output) of shape %s must have the rows of input %d "
                              "blob '%s' (the output gradient) %s", l.out, rc_in_name(op, l.out), RC_SHAPE(o), l.g,
                              rc_in_name(op, l.g), RC_SHAPE(g));
    }
    return RC_OK;
}

/* kind: K_SUM, K_MEAN, K_WSUM (Sum, Mean, WeightedSum gradients) or K_MAX,
 * K_LSE, K_LME (G_RANGE only: they read DATA and OUT). */
static rc_status grad_run(rc_op *op, int variant, int kind, rc_err *err)
{
    rc_status st = grad_shapes(op, variant, err);
    if (st) return st;
    const grad_layout l = grad_inputs(op, variant);
    const rc_tensor *g = rc_in(op, l.g), *ids = rc_in(op, l.ids);
    const int64_t N = ids->dims[0];
    int64_t K = 0;
    if ((st = check_sorted(op, l.ids, &K, err))) return st;
    if (K != g->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (the output gradient) of shape %s must have one row per segment: %lld "
                          "(the last id of input %d blob '%s' (segment_ids) of shape %s, plus 1)", l.g,
                          rc_in_name(op, l.g), RC_SHAPE(g), (long long)K, l.ids, rc_in_name(op, l.ids), RC_SHAPE(ids));
    if (l.idx >= 0 && (st = rc_sparse_check_range_of(op, l.idx, l.data, err))) return st;
    int32_t *len = NULL; /* scratch, owned here, freed below */
    if ((st = ids_to_lengths(op, l.ids, K, &len, err))) return st;
    if ((st = rc_lr_resize_rows(op, 0, N, l.data >= 0 ? rc_in(op, l.data) : g, err))) {
        free(len);
        return st;
    }
    const int64_t wd[1] = {N};
    if (variant == G_MAIN && rc_tensor_resize(rc_out(op, 1), RC_F32, 1, wd, err)) {
        free(len);
        return out_fail(op, 1, err);
    }
    const int64_t R = rc_dims_prod(g, 1, g->ndim);
    if (N > 0 && (kind == K_MAX || kind == K_LSE || kind == K_LME)) {
        const float *x = rc_f32(rc_in(op, l.data)), *fo = rc_f32(rc_in(op, l.out)), *go = rc_f32(g);
        float *dx = rc_f32(rc_out(op, 0));
        if (R > 0 && kind == K_MAX) rc_lr_grad_max_kernel(K, R, fo, go, len, x, dx);
        if (R > 0 && kind != K_MAX) lse_grad_kernel(K, R, x, fo, go, len, kind == K_LME, dx);
    } else if (N > 0) {
        rc_lr_grad_write(op, K, N, len, l.g, l.w, l.data, l.idx, kind == K_MEAN, variant == G_MAIN);
    }
    free(len);
    return RC_OK;
}

#define GRAD(name, variant, kind)                                                                         \
    static rc_status name##_check(rc_op *op, rc_err *err) { return grad_shapes(op, variant, err); }     \
    static rc_status name##_run(rc_op *op, rc_err *err) { return grad_run(op, variant, kind, err); }

GRAD(ssum_g, G_PLAIN, K_SUM)
GRAD(smean_g, G_PLAIN, K_MEAN)
GRAD(swsum_g, G_W, K_WSUM)
GRAD(swsum_mg, G_MAIN, K_WSUM)
GRAD(rsum_g, G_RANGE, K_SUM)
GRAD(rmean_g, G_RANGE, K_MEAN)
GRAD(rlse_g, G_RANGE, K_LSE)
GRAD(rlme_g, G_RANGE, K_LME)
GRAD(rmax_g, G_RANGE, K_MAX)

/* ================================================================ NanCheck */

static rc_status nan_check_check(rc_op *op, rc_err *err)
{
    for (int i = 1; i < op->n_in; i++) {
        const rc_tensor *t = rc_in(op, i);
        if (t->dtype == RC_UNDEF || !t->storage)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)",
                              i, rc_in_name(op, i));
    }
    return rc_check_input(op, 0, RC_F32, err);
}

/* x: (n,) -> the flat index of the first NaN or infinity, or -1. */
static int64_t first_nonfinite(int64_t n, const float *x)
{
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(x[k])) return k;
    return -1;
}

/* RC_OK when input 0 (float32) is all finite; else a ValueError naming it, the first bad value and its
 * position, and (for NanCheck) the other inputs. */
static rc_status check_finite(rc_op *op, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x);
    const int64_t bad = n ? first_nonfinite(n, rc_f32(x)) : -1;
    if (bad >= 0) {
        char others[512] = "";
        size_t used = 0;
        for (int i = 1; i < op->n_in && used < sizeof others; i++) {
            int w = snprintf(others + used, sizeof others - used, "%s input %d blob '%s' of shape %s",
                             i == 1 ? "; other inputs:" : ",", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)));
            if (w < 0) break;
            used += (size_t)w;
        }
        const int64_t row = x->ndim && x->dims[0] ? bad / (n / x->dims[0]) : 0;
        const float v = rc_f32(x)[bad];
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s contains %s: first at flat index "
                          "%lld (row %lld)%s", rc_in_name(op, 0), RC_SHAPE(x), isnan(v) ? "NaN" : v > 0 ? "inf" :
                          "-inf", (long long)bad, (long long)row, others);
    }
    return RC_OK;
}

static rc_status nan_check_run(rc_op *op, rc_err *err)
{
    rc_status st = nan_check_check(op, err);
    if (!st) st = check_finite(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (op->in[0] == op->out[0]) return RC_OK;
    if ((st = rc_tensor_copy(rc_out(op, 0), x, err))) return out_fail(op, 0, err);
    return RC_OK;
}

/* ================================================================ EnforceFinite */

static rc_status enforce_finite_check(rc_op *op, rc_err *err) { return rc_check_input(op, 0, RC_F32, err); }

static rc_status enforce_finite_run(rc_op *op, rc_err *err)
{
    rc_status st = enforce_finite_check(op, err);
    return st ? st : check_finite(op, err);
}

/* ================================================================ Assert */

static rc_status assert_setup(rc_op *op, rc_err *err)
{
    const char *msg = NULL;
    return rc_arg_s(&op->def, "error_msg", "", &msg, err);
}

static rc_status assert_check(rc_op *op, rc_err *err)
{
    const rc_tensor *t = rc_in(op, 0);
    if (t->dtype == RC_F32) return RC_OK;
    return rc_check_input(op, 0, RC_I32, err);
}

static rc_status assert_run(rc_op *op, rc_err *err)
{
    rc_status st = assert_check(op, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(t);
    int64_t bad = -1;
    if (t->dtype == RC_F32) {
        const float *x = n ? rc_f32(t) : NULL;
        for (int64_t k = 0; k < n && bad < 0; k++)
            if (x[k] == 0.0f) bad = k;
    } else {
        const int32_t *x = n ? rc_i32(t) : NULL;
        for (int64_t k = 0; k < n && bad < 0; k++)
            if (x[k] == 0) bad = k;
    }
    if (bad < 0) return RC_OK;
    const char *msg = "";
    if ((st = rc_arg_s(&op->def, "error_msg", "", &msg, err))) return st;
    return rc_op_fail(op, err, RC_ERR_RUNTIME, "assertion failed: input 0 blob '%s' of shape %s has 0 at flat index "
                      "%lld; error_msg: '%s'", rc_in_name(op, 0), RC_SHAPE(t), (long long)bad, msg);
}

/* ================================================================ table */

const rc_op_schema rc_ops_sorted_segment[] = {
    {"SortedSegmentSum", 2, 2, 1, 1, NULL, NULL, ssum_run, NULL,
     "(DATA (N, ...), SEGMENT_IDS (N,) int32 sorted) -> OUT (last id + 1, ...): each segment's rows summed "
     "(double; empty segment 0)", ssum_check},
    {"SortedSegmentMean", 2, 2, 1, 1, NULL, NULL, smean_run, NULL,
     "(DATA, SEGMENT_IDS sorted) -> OUT: SortedSegmentSum divided by the segment's row count (empty: 0)",
     smean_check},
    {"SortedSegmentWeightedSum", 3, 3, 1, 1, NULL, rc_lr_wsum_setup, swsum_run, NULL,
     "(DATA (N, ...), SCALARS (N,), SEGMENT_IDS sorted) -> OUT: sum of SCALARS[k] * DATA[k] per segment; "
     "arg grad_on_weights", swsum_check},
    {"SparseSortedSegmentSum", 3, 3, 1, 1, NULL, NULL, spsum_run, NULL,
     "(DATA (V, ...), INDICES (N,) int32, SEGMENT_IDS (N,) sorted) -> OUT: SortedSegmentSum of DATA[INDICES]",
     spsum_check},
    {"SparseSortedSegmentMean", 3, 3, 1, 1, NULL, NULL, spmean_run, NULL,
     "(DATA, INDICES, SEGMENT_IDS sorted) -> OUT: SortedSegmentMean of DATA[INDICES]", spmean_check},
    {"SparseSortedSegmentWeightedSum", 4, 4, 1, 1, NULL, rc_lr_wsum_setup, spwsum_run, NULL,
     "(DATA, SCALARS (N,), INDICES (N,), SEGMENT_IDS sorted) -> OUT: SortedSegmentWeightedSum of DATA[INDICES]",
     spwsum_check},
    {"SortedSegmentRangeSum", 2, 2, 1, 1, NULL, NULL, ssum_run, NULL,
     "(DATA (N, ...), SEGMENT_IDS sorted) -> OUT: as SortedSegmentSum (Caffe2's range reducer)", ssum_check},
    {"SortedSegmentRangeMean", 2, 2, 1, 1, NULL, NULL, smean_run, NULL,
     "(DATA (N, ...), SEGMENT_IDS sorted) -> OUT: as SortedSegmentMean (Caffe2's range reducer)", smean_check},
    {"SortedSegmentRangeLogSumExp", 2, 2, 1, 1, NULL, NULL, rlse_run, NULL,
     "(DATA (N, ...), SEGMENT_IDS sorted) -> OUT: log(sum(exp(rows))) per segment, stable (max subtracted; "
     "empty or all -inf: -inf; a +inf: +inf; NaN propagates)", rlse_check},
    {"SortedSegmentRangeLogMeanExp", 2, 2, 1, 1, NULL, NULL, rlme_run, NULL,
     "(DATA (N, ...), SEGMENT_IDS sorted) -> OUT: log(mean(exp(rows))) per segment, stable, the special "
     "values as SortedSegmentRangeLogSumExp", rlme_check},
    {"SortedSegmentRangeMax", 2, 2, 1, 1, NULL, NULL, rmax_run, NULL,
     "(DATA (N, ...), SEGMENT_IDS sorted) -> OUT: element-wise max per segment (NaN propagates; empty segment: 0)",
     rmax_check},
    {"SortedSegmentSumGradient", 2, 2, 1, 1, NULL, NULL, ssum_g_run, NULL,
     "(dOUT (K, ...), SEGMENT_IDS (N,) sorted, last id K - 1) -> dDATA (N, ...): row k = dOUT[ids[k]]",
     ssum_g_check},
    {"SortedSegmentMeanGradient", 2, 2, 1, 1, NULL, NULL, smean_g_run, NULL,
     "(dOUT (K, ...), SEGMENT_IDS sorted) -> dDATA: row k = dOUT[ids[k]] / count(ids[k])", smean_g_check},
    {"SortedSegmentWeightedSumGradient", 3, 3, 1, 1, NULL, NULL, swsum_g_run, NULL,
     "(SCALARS (N,), dOUT, SEGMENT_IDS sorted) -> dDATA: row k = SCALARS[k] * dOUT[ids[k]]", swsum_g_check},
    {"SortedSegmentWeightedSumWithMainInputGradient", 4, 5, 2, 2, NULL, NULL, swsum_mg_run, NULL,
     "(SCALARS, dOUT, SEGMENT_IDS, DATA[, INDICES]) -> (dDATA, dSCALARS (N,): <dOUT[ids[k]], row k of DATA "
     "(DATA[INDICES[k]])>)", swsum_mg_check},
    {"SortedSegmentRangeSumGradient", 4, 4, 1, 1, NULL, NULL, rsum_g_run, NULL,
     "(DATA, OUT, dOUT (K, ...), SEGMENT_IDS sorted) -> dDATA (N, ...): row k = dOUT[ids[k]]", rsum_g_check},
    {"SortedSegmentRangeMeanGradient", 4, 4, 1, 1, NULL, NULL, rmean_g_run, NULL,
     "(DATA, OUT, dOUT, SEGMENT_IDS sorted) -> dDATA: row k = dOUT[ids[k]] / count(ids[k])", rmean_g_check},
    {"SortedSegmentRangeLogSumExpGradient", 4, 4, 1, 1, NULL, NULL, rlse_g_run, NULL,
     "(DATA, OUT, dOUT, SEGMENT_IDS sorted) -> dDATA: row k = dOUT[s] * exp(DATA[k] - OUT[s]), s = ids[k] "
     "(the same infinity in DATA[k] and OUT[s]: dOUT[s] shared equally by those)", rlse_g_check},
    {"SortedSegmentRangeLogMeanExpGradient", 4, 4, 1, 1, NULL, NULL, rlme_g_run, NULL,
     "(DATA, OUT, dOUT, SEGMENT_IDS sorted) -> dDATA: row k = dOUT[s] * exp(DATA[k] - OUT[s]) / count(s) "
     "(infinite ties as SortedSegmentRangeLogSumExpGradient)", rlme_g_check},
    {"SortedSegmentRangeMaxGradient", 4, 4, 1, 1, NULL, NULL, rmax_g_run, NULL,
     "(DATA, OUT, dOUT, SEGMENT_IDS sorted) -> dDATA: dOUT[s] where DATA[k] == OUT[s] (every tie), else 0",
     rmax_g_check},
    {"NanCheck", 1, -1, 1, 1, rc_inplace_first, NULL, nan_check_run, NULL,
     "(X float32[, more inputs named in the message]) -> Y = X; a NaN or inf in X is a ValueError (first position)",
     nan_check_check},
    {"EnforceFinite", 1, 1, 0, 0, NULL, NULL, enforce_finite_run, NULL,
     "(X float32) -> (): a NaN or inf in X is a ValueError (first position)", enforce_finite_check},
    {"Assert", 1, 1, 0, 0, NULL, assert_setup, assert_run, NULL,
     "(X int32 or float32) -> (): a RuntimeError with arg error_msg when any element is 0", assert_check},
    {0},
};
