/* ops/lengths_reduce.c -- segment reductions by lengths and the embedding-bag
 * ops (Caffe2's segment_reduction_op and lengths_reducer_ops), with their
 * gradient ops under Caffe2's names and input orders.
 *
 *   LengthsSum(DATA, LENGTHS) -> OUT
 *   LengthsMean(DATA, LENGTHS) -> OUT
 *   LengthsWeightedSum(DATA, SCALARS, LENGTHS) -> OUT
 *   LengthsMax(DATA, LENGTHS) -> OUT
 *   SparseLengthsSum(DATA, INDICES, LENGTHS) -> OUT
 *   SparseLengthsMean(DATA, INDICES, LENGTHS) -> OUT
 *   SparseLengthsWeightedSum(DATA, SCALARS, INDICES, LENGTHS) -> OUT
 *   SparseLengthsPositionalWeightedSum(DATA, WEIGHT, INDICES, LENGTHS) -> OUT
 *
 *   LengthsSumGradient(dOUT, LENGTHS) -> dDATA
 *   LengthsMeanGradient(dOUT, LENGTHS) -> dDATA
 *   LengthsWeightedSumGradient(SCALARS, dOUT, LENGTHS) -> dDATA
 *   LengthsWeightedSumWithMainInputGradient(SCALARS, dOUT, LENGTHS, DATA) -> (dDATA, dSCALARS)
 *   LengthsMaxWithMainInputAndForwardOutputGradient(OUT, dOUT, LENGTHS, DATA) -> dDATA
 *   SparseLengthsSumGradient(dOUT, LENGTHS) -> dVALUES
 *   SparseLengthsMeanGradient(dOUT, LENGTHS) -> dVALUES
 *   SparseLengthsWeightedSumGradient(SCALARS, dOUT, LENGTHS) -> dVALUES
 *   SparseLengthsWeightedSumWithMainInputGradient(SCALARS, dOUT, LENGTHS, DATA, INDICES) -> (dVALUES, dSCALARS)
 *
 *   Caffe2's gradient makers emit these (its GradientNeedIndices ops):
 *   LengthsIndicesInGradientSumGradient(dOUT, LENGTHS, DATA) -> dDATA
 *   LengthsIndicesInGradientMeanGradient(dOUT, LENGTHS, DATA) -> dDATA
 *   SparseLengthsIndicesInGradientSumGradient(dOUT, LENGTHS, INDICES) -> dVALUES
 *   SparseLengthsIndicesInGradientMeanGradient(dOUT, LENGTHS, INDICES) -> dVALUES
 *   SparseLengthsIndicesInGradientWeightedSumGradient(SCALARS, dOUT, LENGTHS, INDICES) -> dVALUES
 *   SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient(SCALARS, dOUT, LENGTHS, DATA, INDICES)
 *       -> (dVALUES, dSCALARS)
 *
 * DATA float32 with at least 1 dim, viewed as rows of R = prod(DATA.shape[1:])
 * elements. LENGTHS int32 1-D of L segments; INDICES int32 1-D (Caffe2 took
 * int32 or int64 vectors). The rows reduced are DATA[0..N) (Lengths*), or
 * DATA[INDICES[k]] for k < N = len(INDICES) (SparseLengths*: no gathered copy is
 * made); segment s holds rows [off_s, off_s + LENGTHS[s]), off_s = sum of the
 * lengths before s. OUT has shape (L,) + DATA.shape[1:]. SCALARS float32 1-D of
 * N weights, one per row. Every length and index is checked before anything
 * is written: a negative length or lengths not summing to N is a ValueError,
 * an index outside [0, DATA.shape[0]) an IndexError, each naming the op, the
 * blob, the position and the value.
 *
 * Sum, Mean and WeightedSum accumulate each output element in double over the
 * segment's rows in order and round once (deterministic; Caffe2 summed in
 * float). An empty segment gives 0 for every op: Sum, Mean (never 0/0; Caffe2
 * also gave 0) and Max (Caffe2's MaxReducer left the output row unwritten, so
 * an empty segment read whatever memory the output held). Max follows
 * np.maximum: a NaN in a segment gives NaN.
 *
 * Gradients (dOUT of shape (L,) + rest; the gradient rows have shape
 * (N,) + rest with N = sum(LENGTHS)): row k of segment s gets dOUT[s] (Sum),
 * dOUT[s] / LENGTHS[s] (Mean), SCALARS[k] * dOUT[s] (WeightedSum); the
 * WithMainInput variant also gives dSCALARS[k] = <dOUT[s], row k of DATA (or
 * DATA[INDICES[k]])>, in double. Max: dDATA[k][r] = dOUT[s][r] where
 * DATA[k][r] == OUT[s][r], else 0 (every element equal to the maximum gets the
 * gradient, as Caffe2). The SparseLengths* gradient ops give the rows of a
 * sparse gradient (the values of a GradientSlice with INDICES, see
 * recurrent/_grad_lengths_reduce.py); they compute what the Lengths* ones do.
 * The *IndicesInGradient* ops are the same ops with one more input, DATA
 * (dense; float32 or int32) or INDICES (int32 1-D), whose first dim must be
 * the number of rows of the gradient, sum(LENGTHS); nothing else is read from
 * it (Caffe2's CPU ops did not read it; its CUDA ones used INDICES). The
 * WithMainInput one takes exactly the inputs of
 * SparseLengthsWeightedSumWithMainInputGradient and is that op.
 *
 * SparseLengthsPositionalWeightedSum is SparseLengthsWeightedSum with the
 * weight of row k of segment s taken by its position in the segment:
 * WEIGHT[k - off_s]. WEIGHT is float32 1-D of any length W; a segment longer
 * than W is a ValueError naming the position and the length (Caffe2 did not
 * check and read past WEIGHT). It has no gradient, as in Caffe2.
 *
 * No global state; nothing allocates except the resize of the outputs.
 */
#include "../core/rc_core.h"
#include "sparse.h"
#include "lengths_reduce.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { K_SUM, K_MEAN, K_WSUM, K_MAX, K_PWSUM }; /* K_PWSUM: positional weights */

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Input i: float32 with at least 1 dim. */
static rc_status check_f32_rows(rc_op *op, int i, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have at least 1 dim, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(t));
    return RC_OK;
}

/* Input i: a 1-D tensor of dtype dt. */
static rc_status check_vector(rc_op *op, int i, rc_dtype dt, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, dt, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have 1 dim, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(t));
    return RC_OK;
}

/* Input w (SCALARS, 1-D, checked) must hold n weights; `nwhat` says where n comes from. */
static rc_status check_weights_len(rc_op *op, int w, int64_t n, const char *nwhat, rc_err *err)
{
    const rc_tensor *t = rc_in(op, w);
    if (t->dims[0] != n)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (scalars) of shape %s must hold one weight per row: %lld (%s)", w,
                          rc_in_name(op, w), RC_SHAPE(t), (long long)n, nwhat);
    return RC_OK;
}

/* Inputs a and b (ndim >= 1) must agree in dims [1:]. */
static rc_status check_same_rest(rc_op *op, int a, int b, rc_err *err)
{
    const rc_tensor *x = rc_in(op, a), *y = rc_in(op, b);
    int ok = x->ndim == y->ndim;
    for (int d = 1; ok && d < x->ndim; d++) ok = x->dims[d] == y->dims[d];
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' %s and input %d blob '%s' %s must have the same shape after the first "
                          "dim", a, rc_in_name(op, a), RC_SHAPE(x), b, rc_in_name(op, b), RC_SHAPE(y));
    return RC_OK;
}

/* Input li (LENGTHS, int32 1-D, checked): every length >= 0 and the lengths
 * sum to n; `nwhat` says where n comes from. Reads the data. */
static rc_status check_lengths(rc_op *op, int li, int64_t n, const char *nwhat, rc_err *err)
{
    const rc_tensor *t = rc_in(op, li);
    const int64_t L = t->dims[0];
    const int32_t *len = L ? rc_i32(t) : NULL;
    int64_t total = 0;
    for (int64_t s = 0; s < L; s++) {
        if (len[s] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lengths): length %d at position %lld is "
                              "negative", li, rc_in_name(op, li), (int)len[s], (long long)s);
        total += len[s];
    }
    if (total != n)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (lengths) of shape %s sums to %lld, but must sum to %lld (%s)", li,
                          rc_in_name(op, li), RC_SHAPE(t), (long long)total, (long long)n, nwhat);
    return RC_OK;
}

/* Resizes output o to (L,) + t.shape[1:] (t: ndim >= 1). Shared: lengths_reduce.h. */
rc_status rc_lr_resize_rows(rc_op *op, int o, int64_t L, const rc_tensor *t, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    dims[0] = L;
    for (int d = 1; d < t->ndim; d++) dims[d] = t->dims[d];
    if (rc_tensor_resize(rc_out(op, o), RC_F32, t->ndim, dims, err)) return out_fail(op, o, err);
    return RC_OK;
}

/* ================================================================ forward */

/* The forward inputs of an op of kind `kind`, sparse or not. */
typedef struct {
    int data, w, idx, len; /* input positions; -1: absent */
} fwd_layout;

static fwd_layout fwd_inputs(int kind, int sparse)
{
    fwd_layout l = {0, -1, -1, 1};
    int next = 1;
    if (kind == K_WSUM || kind == K_PWSUM) l.w = next++;
    if (sparse) l.idx = next++;
    l.len = next;
    return l;
}

/* Dtypes and shapes (no data values): DATA float32 ndim >= 1, LENGTHS int32
 * 1-D, INDICES int32 1-D, SCALARS float32 1-D with one weight per row. */
static rc_status fwd_shapes(rc_op *op, int kind, int sparse, rc_err *err)
{
    const fwd_layout l = fwd_inputs(kind, sparse);
    rc_status st;
    if ((st = check_f32_rows(op, l.data, "data", err))) return st;
    if (sparse && (st = check_vector(op, l.idx, RC_I32, "indices", err))) return st;
    if ((st = check_vector(op, l.len, RC_I32, "lengths", err))) return st;
    if (kind == K_PWSUM) return check_vector(op, l.w, RC_F32, "positional weights", err);
    if (l.w >= 0) {
        if ((st = check_vector(op, l.w, RC_F32, "scalars", err))) return st;
        char what[160];
        const int rows = sparse ? l.idx : l.data;
        snprintf(what, sizeof what, "the first dim of input %d blob '%s' of shape %s", rows, rc_in_name(op, rows),
                 RC_SHAPE(rc_in(op, rows)));
        if ((st = check_weights_len(op, l.w, rc_in(op, rows)->dims[0], what, err))) return st;
    }
    return RC_OK;
}

/* data: (V, R), rows: (N,) indices into data or NULL for row k = k, len: (L,)
 * summing to N, w: (N,) or NULL -> out: (L, R). out[s][r] = sum over the rows
 * k of segment s, in order, of w[k] * data[row k][r] (w = 1 without weights;
 * w[k - off_s] when pos, off_s the first row of segment s), in double, divided
 * by len[s] when mean and len[s] > 0; 0 for an empty segment. */
void rc_lr_sum_kernel(int64_t L, int64_t R, const float *data, const int32_t *rows, const int32_t *len,
                      const float *w, int pos, int mean, float *out)
{
    int64_t k0 = 0;
    for (int64_t s = 0; s < L; s++) {
        const int64_t n = len[s];
        for (int64_t r = 0; r < R; r++) {
            double acc = 0.0;
            for (int64_t k = k0; k < k0 + n; k++) {
                const double x = data[(rows ? (int64_t)rows[k] : k) * R + r];
                acc += w ? (double)w[pos ? k - k0 : k] * x : x;
            }
            if (mean && n > 0) acc /= (double)n;
            out[s * R + r] = (float)acc;
        }
        k0 += n;
    }
}

/* Shared: lengths_reduce.h. */
void rc_lr_max_kernel(int64_t L, int64_t R, const float *data, const int32_t *len, float *out)
{
    int64_t k0 = 0;
    for (int64_t s = 0; s < L; s++) {
        const int64_t n = len[s];
        for (int64_t r = 0; r < R; r++) {
            float m = n > 0 ? data[k0 * R + r] : 0.0f;
            for (int64_t k = k0 + 1; k < k0 + n; k++) {
                const float x = data[k * R + r];
                if (x > m || isnan(x)) m = isnan(m) ? m : x;
            }
            out[s * R + r] = m;
        }
        k0 += n;
    }
}

/* K_PWSUM: every length of input li (checked non-negative) is at most the
 * length of input wi (the positional weights, 1-D, checked). */
static rc_status check_positional(rc_op *op, int li, int wi, rc_err *err)
{
    const rc_tensor *lt = rc_in(op, li), *wt = rc_in(op, wi);
    const int32_t *len = lt->dims[0] ? rc_i32(lt) : NULL;
    for (int64_t s = 0; s < lt->dims[0]; s++)
        if (len[s] > wt->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lengths): length %d at position %lld "
                              "exceeds the %lld positional weights of input %d blob '%s' of shape %s", li,
                              rc_in_name(op, li), (int)len[s], (long long)s, (long long)wt->dims[0], wi,
                              rc_in_name(op, wi), RC_SHAPE(wt));
    return RC_OK;
}

static rc_status fwd_run(rc_op *op, int kind, int sparse, rc_err *err)
{
    rc_status st = fwd_shapes(op, kind, sparse, err);
    if (st) return st;
    const fwd_layout l = fwd_inputs(kind, sparse);
    const rc_tensor *data = rc_in(op, l.data), *lens = rc_in(op, l.len);
    const int rows = sparse ? l.idx : l.data;
    const int64_t N = rc_in(op, rows)->dims[0], L = lens->dims[0], R = rc_dims_prod(data, 1, data->ndim);
    char what[160];
    snprintf(what, sizeof what, "the first dim of input %d blob '%s' of shape %s", rows, rc_in_name(op, rows),
             RC_SHAPE(rc_in(op, rows)));
    if ((st = check_lengths(op, l.len, N, what, err))) return st;
    if (sparse && (st = rc_sparse_check_range_of(op, l.idx, l.data, err))) return st;
    if (kind == K_PWSUM && (st = check_positional(op, l.len, l.w, err))) return st;
    if ((st = rc_lr_resize_rows(op, 0, L, data, err))) return st;
    if (L == 0 || R == 0) return RC_OK;
    float *out = rc_f32(rc_out(op, 0));
    const int32_t *len = rc_i32(lens);
    const float *x = N ? rc_f32(data) : NULL;
    if (kind == K_MAX) {
        rc_lr_max_kernel(L, R, x, len, out);
    } else {
        const int32_t *idx = sparse && N ? rc_i32(rc_in(op, l.idx)) : NULL;
        const float *w = l.w >= 0 && N ? rc_f32(rc_in(op, l.w)) : NULL;
        rc_lr_sum_kernel(L, R, x, idx, len, w, kind == K_PWSUM, kind == K_MEAN, out);
    }
    return RC_OK;
}

#define FWD(name, kind, sparse)                                                                           \
    static rc_status name##_check(rc_op *op, rc_err *err) { return fwd_shapes(op, kind, sparse, err); } \
    static rc_status name##_run(rc_op *op, rc_err *err) { return fwd_run(op, kind, sparse, err); }

FWD(lsum, K_SUM, 0)
FWD(lmean, K_MEAN, 0)
FWD(lwsum, K_WSUM, 0)
FWD(lmax, K_MAX, 0)
FWD(slsum, K_SUM, 1)
FWD(slmean, K_MEAN, 1)
FWD(slwsum, K_WSUM, 1)
FWD(slpwsum, K_PWSUM, 1)

/* grad_on_weights (Caffe2's argument of the WeightedSum ops): read by the
 * gradient maker; checked here to be an int 0 or 1. Shared: lengths_reduce.h. */
rc_status rc_lr_wsum_setup(rc_op *op, rc_err *err)
{
    int64_t g = 0;
    rc_status st = rc_arg_i(&op->def, "grad_on_weights", 0, &g, err);
    if (st) return st;
    if (g != 0 && g != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument grad_on_weights must be 0 or 1, got %lld", (long long)g);
    return RC_OK;
}

/* ================================================================ gradients */

/* G_MAIN: WithMainInput (weights' gradient too); G_IND: Caffe2's *IndicesInGradient* ops, G_PLAIN's inputs
 * and one more, INDICES (sparse) or DATA (dense), which only gives the row count (Caffe2's CPU ops never
 * read it; its CUDA ones read INDICES). */
enum { G_PLAIN, G_MAIN, G_MAX, G_IND };

typedef struct {
    int out, w, g, len, data, idx, ind; /* input positions; -1: absent */
} grad_layout;

static grad_layout grad_inputs(int kind, int variant, int sparse)
{
    grad_layout l = {-1, -1, 0, 1, -1, -1, -1};
    if (variant == G_MAX) {
        l.out = 0, l.g = 1, l.len = 2, l.data = 3;
    } else if (kind == K_WSUM) {
        l.w = 0, l.g = 1, l.len = 2;
        if (variant == G_MAIN) {
            l.data = 3;
            if (sparse) l.idx = 4;
        }
    }
    if (variant == G_IND) l.ind = l.len + 1;
    return l;
}

/* The role of input l.ind (G_IND) in messages. */
static const char *ind_what(int sparse) { return sparse ? "indices" : "data"; }

/* Dtypes and shapes: dOUT float32 (L, ...) with L = len(LENGTHS); SCALARS
 * float32 1-D; DATA float32 with DATA.shape[1:] == dOUT.shape[1:]; INDICES
 * int32 1-D, one per weight; OUT (Max) shaped like dOUT. */
static rc_status grad_shapes(rc_op *op, int kind, int variant, int sparse, rc_err *err)
{
    const grad_layout l = grad_inputs(kind, variant, sparse);
    rc_status st;
    if ((st = check_f32_rows(op, l.g, "the output gradient", err))) return st;
    if ((st = check_vector(op, l.len, RC_I32, "lengths", err))) return st;
    const rc_tensor *g = rc_in(op, l.g), *lens = rc_in(op, l.len);
    if (g->dims[0] != lens->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (the output gradient) of shape %s must have one row per segment: %lld "
                          "(input %d blob '%s' (lengths) of shape %s)", l.g, rc_in_name(op, l.g), RC_SHAPE(g),
                          (long long)lens->dims[0], l.len, rc_in_name(op, l.len), RC_SHAPE(lens));
    if (l.w >= 0 && (st = check_vector(op, l.w, RC_F32, "scalars", err))) return st;
    if (l.data >= 0) {
        if ((st = check_f32_rows(op, l.data, "data", err))) return st;
        if ((st = check_same_rest(op, l.data, l.g, err))) return st;
    }
    if (l.idx >= 0) {
        if ((st = check_vector(op, l.idx, RC_I32, "indices", err))) return st;
        char what[160];
        snprintf(what, sizeof what, "the first dim of input %d blob '%s' of shape %s", l.idx, rc_in_name(op, l.idx),
                 RC_SHAPE(rc_in(op, l.idx)));
        if ((st = check_weights_len(op, l.w, rc_in(op, l.idx)->dims[0], what, err))) return st;
    }
    if (l.ind >= 0 && sparse && (st = check_vector(op, l.ind, RC_I32, ind_what(sparse), err))) return st;
    if (l.ind >= 0 && !sparse) { /* DATA: float32 (or int32 indices, as Caffe2's CUDA op), ndim >= 1 */
        const rc_tensor *t = rc_in(op, l.ind);
        if (t->dtype != RC_I32 && (st = check_f32_rows(op, l.ind, ind_what(sparse), err))) return st;
        if (t->ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have at least 1 dim, got %s",
                              l.ind, rc_in_name(op, l.ind), ind_what(sparse), RC_SHAPE(t));
    }
    if (l.out >= 0) {
        if ((st = rc_check_input(op, l.out, RC_F32, err))) return st;
        if (!rc_tensor_same_shape(rc_in(op, l.out), g))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (the forward output) %s must have the shape of input %d blob '%s' "
                              "(the output gradient) %s", l.out, rc_in_name(op, l.out), RC_SHAPE(rc_in(op, l.out)),
                              l.g, rc_in_name(op, l.g), RC_SHAPE(g));
    }
    return RC_OK;
}

/* g: (L, R), len: (L,) summing to N, w: (N,) or NULL -> dx: (N, R);
 * row k of segment s: w[k] * g[s] (g[s] without weights), g[s] / len[s] when mean. */
void rc_lr_grad_rows_kernel(int64_t L, int64_t R, const float *g, const int32_t *len, const float *w, int mean,
                            float *dx)
{
    int64_t k = 0;
    for (int64_t s = 0; s < L; s++) {
        const int64_t n = len[s];
        const float *gs = g + s * R;
        for (int64_t e = 0; e < n; e++, k++) {
            float *d = dx + k * R;
            if (w)
                for (int64_t r = 0; r < R; r++) d[r] = w[k] * gs[r];
            else if (mean)
                for (int64_t r = 0; r < R; r++) d[r] = (float)((double)gs[r] / (double)n);
            else
                memcpy(d, gs, sizeof *d * (size_t)R);
        }
    }
}

/* g: (L, R), len: (L,) summing to N, data: (V, R), rows: (N,) or NULL (row k = k)
 * -> dw: (N,), dw[k] = sum_r g[s][r] * data[row k][r] in double (k in segment s). */
void rc_lr_grad_weights_kernel(int64_t L, int64_t R, const float *g, const int32_t *len, const float *data,
                               const int32_t *rows, float *dw)
{
    int64_t k = 0;
    for (int64_t s = 0; s < L; s++) {
        const float *gs = g + s * R;
        for (int64_t e = 0; e < len[s]; e++, k++) {
            const float *x = data + (rows ? (int64_t)rows[k] : k) * R;
            double acc = 0.0;
            for (int64_t r = 0; r < R; r++) acc += (double)gs[r] * (double)x[r];
            dw[k] = (float)acc;
        }
    }
}

/* Shared: lengths_reduce.h. */
void rc_lr_grad_max_kernel(int64_t L, int64_t R, const float *fo, const float *g, const int32_t *len,
                           const float *data, float *dx)
{
    int64_t k = 0;
    for (int64_t s = 0; s < L; s++)
        for (int64_t e = 0; e < len[s]; e++, k++)
            for (int64_t r = 0; r < R; r++)
                dx[k * R + r] = data[k * R + r] == fo[s * R + r] ? g[s * R + r] : 0.0f;
}

/* Shared: lengths_reduce.h. */
void rc_lr_grad_write(rc_op *op, int64_t L, int64_t N, const int32_t *len, int g, int w, int data, int idx,
                      int mean, int dw)
{
    const rc_tensor *gt = rc_in(op, g);
    const int64_t R = rc_dims_prod(gt, 1, gt->ndim);
    const float *wp = w >= 0 ? rc_f32(rc_in(op, w)) : NULL;
    if (R) rc_lr_grad_rows_kernel(L, R, rc_f32(gt), len, wp, mean, rc_f32(rc_out(op, 0)));
    if (dw) {
        float *d = rc_f32(rc_out(op, 1));
        if (R)
            rc_lr_grad_weights_kernel(L, R, rc_f32(gt), len, rc_f32(rc_in(op, data)),
                                      idx >= 0 ? rc_i32(rc_in(op, idx)) : NULL, d);
        else
            memset(d, 0, sizeof *d * (size_t)N);
    }
}

static rc_status grad_run(rc_op *op, int kind, int variant, int sparse, rc_err *err)
{
    rc_status st = grad_shapes(op, kind, variant, sparse, err);
    if (st) return st;
    const grad_layout l = grad_inputs(kind, variant, sparse);
    const rc_tensor *g = rc_in(op, l.g), *lens = rc_in(op, l.len);
    const int64_t L = lens->dims[0], R = rc_dims_prod(g, 1, g->ndim);
    /* N: the rows of the gradient, given by SCALARS, DATA (dense) or the last input (G_IND) when present */
    int64_t N = 0;
    int nsrc = l.w >= 0 ? l.w : (l.data >= 0 && !sparse ? l.data : l.ind);
    if (nsrc < 0) {
        const int32_t *len = L ? rc_i32(lens) : NULL;
        for (int64_t s = 0; s < L; s++) N += len[s] > 0 ? len[s] : 0;
    } else {
        N = rc_in(op, nsrc)->dims[0];
    }
    char what[160];
    if (nsrc >= 0)
        snprintf(what, sizeof what, "the first dim of input %d blob '%s' of shape %s", nsrc, rc_in_name(op, nsrc),
                 RC_SHAPE(rc_in(op, nsrc)));
    else
        snprintf(what, sizeof what, "the sum of its non-negative lengths");
    if ((st = check_lengths(op, l.len, N, what, err))) return st;
    if (l.w >= 0 && l.data >= 0 && !sparse) {
        snprintf(what, sizeof what, "the first dim of input %d blob '%s' of shape %s", l.data,
                 rc_in_name(op, l.data), RC_SHAPE(rc_in(op, l.data)));
        if ((st = check_weights_len(op, l.w, rc_in(op, l.data)->dims[0], what, err))) return st;
    }
    if (l.ind >= 0 && l.ind != nsrc && rc_in(op, l.ind)->dims[0] != N)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (%s) of shape %s must have one row per row of the gradient: %lld (%s)",
                          l.ind, rc_in_name(op, l.ind), ind_what(sparse), RC_SHAPE(rc_in(op, l.ind)), (long long)N,
                          what);
    if (l.idx >= 0 && (st = rc_sparse_check_range_of(op, l.idx, l.data, err))) return st;
    if ((st = rc_lr_resize_rows(op, 0, N, g, err))) return st;
    if (variant == G_MAIN) {
        int64_t wd[1] = {N};
        if (rc_tensor_resize(rc_out(op, 1), RC_F32, 1, wd, err)) return out_fail(op, 1, err);
    }
    if (N == 0) return RC_OK;
    const int32_t *len = rc_i32(lens);
    if (variant == G_MAX) {
        if (R)
            rc_lr_grad_max_kernel(L, R, rc_f32(rc_in(op, l.out)), rc_f32(g), len, rc_f32(rc_in(op, l.data)),
                                  rc_f32(rc_out(op, 0)));
        return RC_OK;
    }
    rc_lr_grad_write(op, L, N, len, l.g, l.w, l.data, l.idx, kind == K_MEAN, variant == G_MAIN);
    return RC_OK;
}

#define GRAD(name, kind, variant, sparse)                                                                         \
    static rc_status name##_check(rc_op *op, rc_err *err) { return grad_shapes(op, kind, variant, sparse, err); } \
    static rc_status name##_run(rc_op *op, rc_err *err) { return grad_run(op, kind, variant, sparse, err); }

GRAD(lsum_g, K_SUM, G_PLAIN, 0)
GRAD(lmean_g, K_MEAN, G_PLAIN, 0)
GRAD(lwsum_g, K_WSUM, G_PLAIN, 0)
GRAD(lwsum_mg, K_WSUM, G_MAIN, 0)
GRAD(lmax_g, K_MAX, G_MAX, 0)
GRAD(slsum_g, K_SUM, G_PLAIN, 1)
GRAD(slmean_g, K_MEAN, G_PLAIN, 1)
GRAD(slwsum_g, K_WSUM, G_PLAIN, 1)
GRAD(slwsum_mg, K_WSUM, G_MAIN, 1)
GRAD(lsum_ig, K_SUM, G_IND, 0)
GRAD(lmean_ig, K_MEAN, G_IND, 0)
GRAD(slsum_ig, K_SUM, G_IND, 1)
GRAD(slmean_ig, K_MEAN, G_IND, 1)
GRAD(slwsum_ig, K_WSUM, G_IND, 1)

/* ================================================================ table */

const rc_op_schema rc_ops_lengths_reduce[] = {
    {"LengthsSum", 2, 2, 1, 1, NULL, NULL, lsum_run, NULL,
     "(DATA (N, ...), LENGTHS (L,) int32 summing to N) -> OUT (L, ...): each segment's rows summed (double)",
     lsum_check},
    {"LengthsMean", 2, 2, 1, 1, NULL, NULL, lmean_run, NULL,
     "(DATA, LENGTHS) -> OUT: as LengthsSum divided by the segment's length (empty segment: 0)", lmean_check},
    {"LengthsWeightedSum", 3, 3, 1, 1, NULL, rc_lr_wsum_setup, lwsum_run, NULL,
     "(DATA (N, ...), SCALARS (N,), LENGTHS) -> OUT: sum of SCALARS[k] * DATA[k] per segment; arg grad_on_weights",
     lwsum_check},
    {"LengthsMax", 2, 2, 1, 1, NULL, NULL, lmax_run, NULL,
     "(DATA, LENGTHS) -> OUT: element-wise max per segment (NaN propagates; empty segment: 0)", lmax_check},
    {"SparseLengthsSum", 3, 3, 1, 1, NULL, NULL, slsum_run, NULL,
     "(DATA (V, ...), INDICES (N,) int32, LENGTHS (L,)) -> OUT (L, ...): LengthsSum of DATA[INDICES], no copy",
     slsum_check},
    {"SparseLengthsMean", 3, 3, 1, 1, NULL, NULL, slmean_run, NULL,
     "(DATA, INDICES, LENGTHS) -> OUT: LengthsMean of DATA[INDICES]", slmean_check},
    {"SparseLengthsWeightedSum", 4, 4, 1, 1, NULL, rc_lr_wsum_setup, slwsum_run, NULL,
     "(DATA, SCALARS (N,), INDICES (N,), LENGTHS) -> OUT: LengthsWeightedSum of DATA[INDICES]; arg grad_on_weights",
     slwsum_check},
    {"SparseLengthsPositionalWeightedSum", 4, 4, 1, 1, NULL, NULL, slpwsum_run, NULL,
     "(DATA, WEIGHT (W,), INDICES (N,), LENGTHS) -> OUT: row j of a segment weighted by WEIGHT[j] (j < W); no grad",
     slpwsum_check},
    {"LengthsSumGradient", 2, 2, 1, 1, NULL, NULL, lsum_g_run, NULL,
     "(dOUT (L, ...), LENGTHS) -> dDATA (sum(LENGTHS), ...): row k of segment s = dOUT[s]", lsum_g_check},
    {"LengthsMeanGradient", 2, 2, 1, 1, NULL, NULL, lmean_g_run, NULL,
     "(dOUT, LENGTHS) -> dDATA: row k of segment s = dOUT[s] / LENGTHS[s]", lmean_g_check},
    {"LengthsWeightedSumGradient", 3, 3, 1, 1, NULL, NULL, lwsum_g_run, NULL,
     "(SCALARS (N,), dOUT, LENGTHS) -> dDATA: row k of segment s = SCALARS[k] * dOUT[s]", lwsum_g_check},
    {"LengthsWeightedSumWithMainInputGradient", 4, 4, 2, 2, NULL, NULL, lwsum_mg_run, NULL,
     "(SCALARS, dOUT, LENGTHS, DATA) -> (dDATA, dSCALARS (N,): <dOUT[s], DATA[k]>)", lwsum_mg_check},
    {"LengthsMaxWithMainInputAndForwardOutputGradient", 4, 4, 1, 1, NULL, NULL, lmax_g_run, NULL,
     "(OUT, dOUT, LENGTHS, DATA) -> dDATA: dOUT[s] where DATA[k] == OUT[s], else 0", lmax_g_check},
    {"SparseLengthsSumGradient", 2, 2, 1, 1, NULL, NULL, slsum_g_run, NULL,
     "(dOUT (L, ...), LENGTHS) -> the rows of the sparse gradient (sum(LENGTHS), ...): dOUT[s]", slsum_g_check},
    {"SparseLengthsMeanGradient", 2, 2, 1, 1, NULL, NULL, slmean_g_run, NULL,
     "(dOUT, LENGTHS) -> the rows of the sparse gradient: dOUT[s] / LENGTHS[s]", slmean_g_check},
    {"SparseLengthsWeightedSumGradient", 3, 3, 1, 1, NULL, NULL, slwsum_g_run, NULL,
     "(SCALARS (N,), dOUT, LENGTHS) -> the rows of the sparse gradient: SCALARS[k] * dOUT[s]", slwsum_g_check},
    {"SparseLengthsWeightedSumWithMainInputGradient", 5, 5, 2, 2, NULL, NULL, slwsum_mg_run, NULL,
     "(SCALARS, dOUT, LENGTHS, DATA, INDICES) -> (rows, dSCALARS: <dOUT[s], DATA[INDICES[k]]>)", slwsum_mg_check},
    /* Caffe2's gradient makers' names (GradientNeedIndices): the ops above with one more input */
    {"LengthsIndicesInGradientSumGradient", 3, 3, 1, 1, NULL, NULL, lsum_ig_run, NULL,
     "(dOUT (L, ...), LENGTHS, DATA (sum(LENGTHS), ...): row count only) -> dDATA: as LengthsSumGradient",
     lsum_ig_check},
    {"LengthsIndicesInGradientMeanGradient", 3, 3, 1, 1, NULL, NULL, lmean_ig_run, NULL,
     "(dOUT, LENGTHS, DATA: row count only) -> dDATA: as LengthsMeanGradient", lmean_ig_check},
    {"SparseLengthsIndicesInGradientSumGradient", 3, 3, 1, 1, NULL, NULL, slsum_ig_run, NULL,
     "(dOUT (L, ...), LENGTHS, INDICES (sum(LENGTHS),): row count only) -> rows: as SparseLengthsSumGradient",
     slsum_ig_check},
    {"SparseLengthsIndicesInGradientMeanGradient", 3, 3, 1, 1, NULL, NULL, slmean_ig_run, NULL,
     "(dOUT, LENGTHS, INDICES: row count only) -> rows: as SparseLengthsMeanGradient", slmean_ig_check},
    {"SparseLengthsIndicesInGradientWeightedSumGradient", 4, 4, 1, 1, NULL, NULL, slwsum_ig_run, NULL,
     "(SCALARS (N,), dOUT, LENGTHS, INDICES (N,): row count only) -> rows: as SparseLengthsWeightedSumGradient",
     slwsum_ig_check},
    {"SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient", 5, 5, 2, 2, NULL, NULL, slwsum_mg_run, NULL,
     "(SCALARS, dOUT, LENGTHS, DATA, INDICES) -> (rows, dSCALARS): as SparseLengthsWeightedSumWithMainInputGradient",
     slwsum_mg_check},
    {0},
};
