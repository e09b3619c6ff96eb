/* ops/mask.c -- masks and padding for variable-length batches (Caffe2's
 * boolean_mask_ops, LengthsToWeights of utility_ops, PadEmptySamples of
 * sequence_ops, DotProductWithPadding of distance_op).
 *
 *   BooleanMask(data, mask) -> masked_data[, masked_indices]
 *   BooleanMaskGradient(mask, dmasked_data) -> ddata
 *   BooleanMaskLengths(lengths, mask) -> masked_lengths
 *   LengthsToWeights(lengths) -> weights                      arg power (0.5)
 *   PadEmptySamples(lengths, in_1, ..., in_n) -> (out_lengths, out_1, ..., out_n)
 *   DotProductWithPadding(X, Y) -> Z                          args pad_value (0), replicate (0)
 *   DotProductWithPaddingGradient(X, Y, dZ) -> (dX, dY)      the same args
 *   RemoveDataBlocks(data, indices) -> shrunk_data
 *   BooleanUnmask(mask_0, values_0, mask_1, values_1, ...) -> unmasked_data
 *
 * A mask is int32 1-D holding only 0 and 1 (Caffe2: bool); any other value
 * is a ValueError naming the op, the blob, the position and the value, raised
 * before anything is written. Lengths are int32 1-D and non-negative (a
 * negative one is a ValueError naming its position; Caffe2 did not check).
 *
 * BooleanMask: data float32 or int32 with ndim >= 1 and len(mask) rows;
 * masked_data = data[mask == 1] (rows kept in order, bits moved), of shape
 * (count,) + data.shape[1:]; masked_indices (int32, Caffe2: int64) the kept
 * row numbers. BooleanMaskGradient: dmasked_data float32 of shape (count,) +
 * rest -> ddata float32 (len(mask),) + rest, the rows put back where the mask
 * is 1 and 0 elsewhere (Caffe2 sized ddata (len(mask),) whatever the rank of
 * data, so its gradient was wrong for ndim >= 2). BooleanMaskLengths: lengths
 * summing to len(mask) -> the number of ones in each segment.
 *
 * LengthsToWeights: weights float32 of shape (sum(lengths),), each of segment
 * i's lengths[i] entries equal to 1 / lengths[i] ** power, computed in double
 * and rounded once (an empty segment contributes nothing).
 *
 * PadEmptySamples: the number of outputs must equal the number of inputs.
 * Each in_k is float32 or int32 with ndim >= 1 and sum(lengths) rows; out_k
 * is in_k with one row of zeros inserted at the place of every empty segment
 * (rows moved as bits), out_lengths the lengths with each 0 replaced by 1.
 *
 * DotProductWithPadding: X and Y float32 with the same ndim >= 1 and the same
 * dim 0 (N); each row is flattened (DX = prod(X.shape[1:]), DY likewise).
 * Z (N,): with replicate=0, the dot product of the first min(DX, DY) elements
 * plus pad_value times the sum of the longer row's remaining elements (the
 * shorter row padded with pad_value); with replicate=1, the longer row is cut
 * into chunks of the shorter row's length and Z is the sum of their dot
 * products with the shorter row -- the longer length must then be a multiple
 * of the shorter, which must not be 0 unless both are (a ValueError; Caffe2
 * dropped the remainder silently and divided by zero for an empty row). Sums
 * run in double, in element order, rounded once. The gradient gives dX, dY of
 * the shapes of X and Y: the derivative of Z[n] times dZ[n].
 *
 * RemoveDataBlocks (Caffe2's remove_data_blocks_op): data float32 or int32
 * with ndim >= 1 (N rows); indices int32 1-D (Caffe2: int32 or int64), in any
 * order, repeats allowed, each in [0, N) (a ValueError naming the position and
 * the value otherwise, raised before anything is written). shrunk_data is data
 * without the rows named (each removed once), the others kept in order (moved
 * as bits), of shape (N - distinct indices,) + data.shape[1:]. As in Caffe2, an
 * empty indices of any dtype gives a copy of data. No gradient (Caffe2:
 * SHOULD_NOT_DO_GRADIENT).
 *
 * BooleanUnmask (Caffe2's boolean_unmask_ops): an even number (>= 2) of
 * inputs, pairs (mask_k, values_k). Every mask is a mask as above, all of one
 * length M; every values_k is float32 or int32 1-D, all of values_0's dtype
 * (Caffe2 copied each with values_0's item size: another dtype was
 * reinterpreted). unmasked_data (M,) of that dtype: position p takes the next
 * unused value of the first mask (in input order) holding 1 at p; a later
 * mask's 1 at p takes nothing there (as Caffe2's code; its doc's second
 * example, where it does, fails in Caffe2 too). Each values_k must hold
 * exactly as many values as positions its mask takes, and every position
 * must have a mask holding 1: otherwise a ValueError naming the position or
 * the pair, raised before anything is written (Caffe2 enforced these too,
 * after writing part of the output). No gradient (Caffe2: NO_GRADIENT).
 *
 * No global state; nothing allocates except the resize of the outputs,
 * RemoveDataBlocks' N flags of scratch (freed before it returns) and
 * BooleanUnmask's per-pair counters (op->state, sized when the op is made).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Input i: float32 with ndim >= 1. */
static rc_status check_f32_rows(rc_op *op, int i, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    if (rc_in(op, i)->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have at least 1 dim, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(rc_in(op, i)));
    return RC_OK;
}

/* Input mi (mask, int32 1-D, checked): every value 0 or 1; *ones = the count
 * of ones. Reads the data. */
static rc_status check_mask_values(rc_op *op, int mi, int64_t *ones, rc_err *err)
{
    const rc_tensor *t = rc_in(op, mi);
    const int64_t n = t->dims[0];
    const int32_t *m = n ? rc_i32(t) : NULL;
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        if (m[i] != 0 && m[i] != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (mask) holds %d at position %lld; a mask "
                              "holds only 0 and 1", mi, rc_in_name(op, mi), (int)m[i], (long long)i);
        c += m[i];
    }
    *ones = c;
    return RC_OK;
}

/* ================================================================ BooleanMask */

/* data (ndim >= 1, f32 or i32), mask int32 1-D of data.dims[0] values. */
static rc_status bmask_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "data", 0, err)) || (st = rc_checks_i32_vector(op, 1, "mask", err))) return st;
    const rc_tensor *x = rc_in(op, 0), *m = rc_in(op, 1);
    if (m->dims[0] != x->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (mask) of shape %s must hold one value per row "
                          "of input 0 blob '%s' of shape %s", rc_in_name(op, 1), RC_SHAPE(m), rc_in_name(op, 0),
                          RC_SHAPE(x));
    return RC_OK;
}

/* data (N, R) as bytes, mask (N,) of 0/1 -> out (count, R): the rows where
 * mask is 1, in order; idx (count,) their row numbers, or NULL. */
static void bmask_kernel(int64_t N, size_t row, const unsigned char *x, const int32_t *mask, unsigned char *y,
                         int32_t *idx)
{
    for (int64_t i = 0; i < N; i++) {
        if (!mask[i]) continue;
        if (row) memcpy(y, x + (size_t)i * row, row);
        y += row;
        if (idx) *idx++ = (int32_t)i;
    }
}

static rc_status bmask_run(rc_op *op, rc_err *err)
{
    rc_status st = bmask_check(op, err);
    if (st) return st;
    int64_t count = 0;
    if ((st = check_mask_values(op, 1, &count, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    dims[0] = count;
    for (int d = 1; d < x->ndim; d++) dims[d] = x->dims[d];
    if (rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim, dims, err)) return out_fail(op, 0, err);
    if (op->n_out > 1 && rc_tensor_resize(rc_out(op, 1), RC_I32, 1, dims, err)) return out_fail(op, 1, err);
    if (count == 0) return RC_OK;
    const size_t row = (size_t)rc_dims_prod(x, 1, x->ndim) * rc_dtype_size(x->dtype);
    bmask_kernel(x->dims[0], row, rc_tensor_data(x), rc_i32(rc_in(op, 1)), rc_tensor_data(rc_out(op, 0)),
                 op->n_out > 1 ? rc_i32(rc_out(op, 1)) : NULL);
    return RC_OK;
}

/* mask int32 1-D, dY float32 ndim >= 1. */
static rc_status bmask_g_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_i32_vector(op, 0, "mask", err))) return st;
    return check_f32_rows(op, 1, "the gradient of masked_data", err);
}

/* mask (N,) of 0/1 with count ones, g (count, R) -> dx (N, R): row i is the
 * next row of g where mask[i] is 1, else zeros. */
static void bmask_g_kernel(int64_t N, int64_t R, const int32_t *mask, const float *g, float *dx)
{
    for (int64_t i = 0; i < N; i++, dx += R) {
        if (mask[i]) {
            memcpy(dx, g, sizeof *dx * (size_t)R);
            g += R;
        } else {
            memset(dx, 0, sizeof *dx * (size_t)R);
        }
    }
}

static rc_status bmask_g_run(rc_op *op, rc_err *err)
{
    rc_status st = bmask_g_check(op, err);
    if (st) return st;
    int64_t count = 0;
    if ((st = check_mask_values(op, 0, &count, err))) return st;
    const rc_tensor *m = rc_in(op, 0), *g = rc_in(op, 1);
    if (g->dims[0] != count)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the gradient of masked_data) of shape %s must "
                          "have one row per 1 of input 0 blob '%s' (mask) of shape %s: %lld", rc_in_name(op, 1),
                          RC_SHAPE(g), rc_in_name(op, 0), RC_SHAPE(m), (long long)count);
    int64_t dims[RC_MAX_DIMS];
    dims[0] = m->dims[0];
    for (int d = 1; d < g->ndim; d++) dims[d] = g->dims[d];
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, g->ndim, dims, err)) return out_fail(op, 0, err);
    const int64_t R = rc_dims_prod(g, 1, g->ndim);
    if (m->dims[0] == 0 || R == 0) return RC_OK;
    bmask_g_kernel(m->dims[0], R, rc_i32(m), count ? rc_f32(g) : NULL, rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status bmask_len_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_i32_vector(op, 0, "lengths", err))) return st;
    return rc_checks_i32_vector(op, 1, "mask", err);
}

/* lengths (L,) summing to N, mask (N,) of 0/1 -> out (L,): the ones per segment. */
static void bmask_len_kernel(int64_t L, const int32_t *len, const int32_t *mask, int32_t *out)
{
    for (int64_t s = 0; s < L; s++) {
        int32_t c = 0;
        for (int32_t k = 0; k < len[s]; k++) c += *mask++;
        out[s] = c;
    }
}

static rc_status bmask_len_run(rc_op *op, rc_err *err)
{
    rc_status st = bmask_len_check(op, err);
    if (st) return st;
    int64_t sum = 0, count = 0;
    if ((st = rc_checks_lengths_values(op, 0, &sum, err)) || (st = check_mask_values(op, 1, &count, err))) return st;
    const rc_tensor *l = rc_in(op, 0), *m = rc_in(op, 1);
    if (sum != m->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (lengths) of shape %s sums to %lld, but input 1 "
                          "blob '%s' (mask) of shape %s holds %lld values", rc_in_name(op, 0), RC_SHAPE(l),
                          (long long)sum, rc_in_name(op, 1), RC_SHAPE(m), (long long)m->dims[0]);
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, l->dims, err)) return out_fail(op, 0, err);
    if (l->dims[0] == 0) return RC_OK;
    bmask_len_kernel(l->dims[0], rc_i32(l), sum ? rc_i32(m) : NULL, rc_i32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ LengthsToWeights */

/* power: any finite float (checked at creation). */
static rc_status l2w_setup(rc_op *op, rc_err *err)
{
    float p;
    rc_status st = rc_arg_f(&op->def, "power", 0.5f, &p, err);
    if (st) return st;
    if (!isfinite(p)) return rc_op_fail(op, err, RC_ERR_VALUE, "argument power must be finite, got %g", (double)p);
    return RC_OK;
}

static rc_status l2w_check(rc_op *op, rc_err *err)
{
    return rc_checks_i32_vector(op, 0, "lengths", err);
}

/* len (L,) non-negative -> w (sum(len),): segment s's entries 1 / len[s] ** power. */
static void l2w_kernel(int64_t L, const int32_t *len, double power, float *w)
{
    for (int64_t s = 0; s < L; s++) {
        if (!len[s]) continue;
        const float v = (float)(1.0 / pow((double)len[s], power));
        for (int32_t k = 0; k < len[s]; k++) *w++ = v;
    }
}

static rc_status l2w_run(rc_op *op, rc_err *err)
{
    rc_status st = l2w_check(op, err);
    if (st) return st;
    float p;
    if ((st = rc_arg_f(&op->def, "power", 0.5f, &p, err))) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 0, &sum, err))) return st;
    const int64_t dims[1] = {sum};
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1, dims, err)) return out_fail(op, 0, err);
    if (sum == 0) return RC_OK;
    l2w_kernel(rc_in(op, 0)->dims[0], rc_i32(rc_in(op, 0)), (double)p, rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ PadEmptySamples */

static rc_status pes_setup(rc_op *op, rc_err *err)
{
    if (op->n_out != op->n_in)
        return rc_op_fail(op, err, RC_ERR_VALUE, "has %d inputs (lengths and %d features) but %d outputs; it needs "
                          "one output per input", op->n_in, op->n_in - 1, op->n_out);
    return RC_OK;
}

static rc_status pes_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_i32_vector(op, 0, "lengths", err))) return st;
    for (int k = 1; k < op->n_in; k++)
        if ((st = rc_checks_rows_any(op, k, "features", 0, err))) return st;
    return RC_OK;
}

/* len (L,) summing to the rows of x, x (rows, row bytes) -> y (rows + empties,
 * row bytes): each segment's rows, or one row of zeros for an empty segment. */
static void pes_kernel(int64_t L, const int32_t *len, size_t row, const unsigned char *x, unsigned char *y)
{
    for (int64_t s = 0; s < L; s++) {
        if (!row) continue;
        if (len[s] == 0) {
            memset(y, 0, row);
            y += row;
        } else {
            memcpy(y, x, (size_t)len[s] * row);
            x += (size_t)len[s] * row;
            y += (size_t)len[s] * row;
        }
    }
}

static rc_status pes_run(rc_op *op, rc_err *err)
{
    rc_status st = pes_check(op, err);
    if (st) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 0, &sum, err))) return st;
    const rc_tensor *lt = rc_in(op, 0);
    const int64_t L = lt->dims[0];
    const int32_t *len = L ? rc_i32(lt) : NULL;
    int64_t empties = 0;
    for (int64_t s = 0; s < L; s++) empties += len[s] == 0;
    for (int k = 1; k < op->n_in; k++) /* every feature is checked before anything is written */
        if (rc_in(op, k)->dims[0] != sum)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (features) of shape %s must have "
                              "sum(lengths) = %lld rows (input 0 blob '%s' of shape %s)", k, rc_in_name(op, k),
                              RC_SHAPE(rc_in(op, k)), (long long)sum, rc_in_name(op, 0), RC_SHAPE(lt));
    for (int k = 1; k < op->n_in; k++) { /* inputs aliasing outputs are refused at creation */
        const rc_tensor *x = rc_in(op, k);
        int64_t dims[RC_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) dims[d] = x->dims[d];
        dims[0] += empties;
        if (rc_tensor_resize(rc_out(op, k), x->dtype, x->ndim, dims, err)) return out_fail(op, k, err);
        if (dims[0] == 0) continue;
        const size_t row = (size_t)rc_dims_prod(x, 1, x->ndim) * rc_dtype_size(x->dtype);
        pes_kernel(L, len, row, sum ? rc_tensor_data(x) : NULL, rc_tensor_data(rc_out(op, k)));
    }
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, lt->dims, err)) return out_fail(op, 0, err);
    int32_t *ol = L ? rc_i32(rc_out(op, 0)) : NULL;
    for (int64_t s = 0; s < L; s++) ol[s] = len[s] ? len[s] : 1;
    return RC_OK;
}

/* ================================================================ DotProductWithPadding */

/* pad_value float, replicate 0 or 1 (checked at creation). */
static rc_status dpp_args(rc_op *op, float *pad, int *rep, rc_err *err)
{
    int64_t r;
    rc_status st;
    if ((st = rc_arg_f(&op->def, "pad_value", 0.0f, pad, err)) || (st = rc_arg_i(&op->def, "replicate", 0, &r, err)))
        return st;
    if (r != 0 && r != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument replicate must be 0 or 1, got %lld", (long long)r);
    *rep = (int)r;
    return RC_OK;
}

static rc_status dpp_setup(rc_op *op, rc_err *err)
{
    float pad = 0.0f;
    int rep = 0;
    return dpp_args(op, &pad, &rep, err);
}

/* X, Y float32 of one ndim >= 1 and one dim 0; with replicate, the longer row
 * length a multiple of the shorter. *dx, *dy: the row lengths. */
static rc_status dpp_shapes(rc_op *op, int64_t *dx, int64_t *dy, rc_err *err)
{
    rc_status st;
    if ((st = check_f32_rows(op, 0, "X", err)) || (st = check_f32_rows(op, 1, "Y", err))) return st;
    const rc_tensor *x = rc_in(op, 0), *y = rc_in(op, 1);
    if (x->ndim != y->ndim || x->dims[0] != y->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s and input 1 blob '%s' %s must have the same "
                          "number of dims and the same dim 0", rc_in_name(op, 0), RC_SHAPE(x), rc_in_name(op, 1),
                          RC_SHAPE(y));
    float pad = 0.0f;
    int rep = 0;
    if ((st = dpp_args(op, &pad, &rep, err))) return st;
    *dx = rc_dims_prod(x, 1, x->ndim);
    *dy = rc_dims_prod(y, 1, y->ndim);
    const int64_t ds = *dx < *dy ? *dx : *dy, dl = *dx < *dy ? *dy : *dx;
    if (rep && dl != ds && (ds == 0 || dl % ds != 0))
        return rc_op_fail(op, err, RC_ERR_VALUE, "with replicate=1 the longer row (%lld elements) must be a "
                          "multiple of the shorter (%lld), a non-empty one: input 0 blob '%s' %s, input 1 blob '%s' %s",
                          (long long)dl, (long long)ds, rc_in_name(op, 0), RC_SHAPE(x), rc_in_name(op, 1),
                          RC_SHAPE(y));
    return RC_OK;
}

static rc_status dpp_check(rc_op *op, rc_err *err)
{
    int64_t dx, dy;
    return dpp_shapes(op, &dx, &dy, err);
}

/* x (N, DX), y (N, DY) -> z (N,). With L the longer row (DL), S the shorter
 * (DS, DS = DL when equal): replicate: z = sum_j sum_k L[j DS + k] S[k];
 * else z = sum_{k < DS} L[k] S[k] + pad * sum_{k >= DS} L[k]. In double. */
static void dpp_kernel(int64_t N, int64_t DX, int64_t DY, const float *x, const float *y, float pad, int rep,
                       float *z)
{
    const int xl = DX >= DY;
    const int64_t DL = xl ? DX : DY, DS = xl ? DY : DX;
    const float *lb = xl ? x : y, *sb = xl ? y : x; /* NULL for an empty row */
    for (int64_t n = 0; n < N; n++) {
        const float *l = lb ? lb + n * DL : NULL, *s = sb ? sb + n * DS : NULL;
        double acc = 0.0;
        if (rep) {
            for (int64_t k = 0; k < DL; k++) acc += (double)l[k] * (double)s[k % DS];
        } else {
            for (int64_t k = 0; k < DS; k++) acc += (double)l[k] * (double)s[k];
            double rest = 0.0;
            for (int64_t k = DS; k < DL; k++) rest += (double)l[k];
            acc += (double)pad * rest;
        }
        z[n] = (float)acc;
    }
}

static rc_status dpp_run(rc_op *op, rc_err *err)
{
    int64_t DX, DY;
    rc_status st = dpp_shapes(op, &DX, &DY, err);
    if (st) return st;
    float pad = 0.0f;
    int rep = 0;
    if ((st = dpp_args(op, &pad, &rep, err))) return st;
    const int64_t N = rc_in(op, 0)->dims[0], dims[1] = {N};
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1, dims, err)) return out_fail(op, 0, err);
    if (N == 0) return RC_OK;
    dpp_kernel(N, DX, DY, DX ? rc_f32(rc_in(op, 0)) : NULL, DY ? rc_f32(rc_in(op, 1)) : NULL, pad, rep,
               rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* X, Y as the forward; dZ float32 of shape (N,). */
static rc_status dpp_g_shapes(rc_op *op, int64_t *dx, int64_t *dy, rc_err *err)
{
    rc_status st = dpp_shapes(op, dx, dy, err);
    if (st || (st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 2);
    if (g->ndim != 1 || g->dims[0] != rc_in(op, 0)->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (dZ) of shape %s must be (%lld,), one value per "
                          "row of input 0 blob '%s' %s", rc_in_name(op, 2), RC_SHAPE(g),
                          (long long)rc_in(op, 0)->dims[0], rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    return RC_OK;
}

static rc_status dpp_g_check(rc_op *op, rc_err *err)
{
    int64_t dx, dy;
    return dpp_g_shapes(op, &dx, &dy, err);
}

/* x (N, DX), y (N, DY), g (N,) -> dx (N, DX), dy (N, DY); L, S as in
 * dpp_kernel. replicate: dL[k] = g S[k % DS], dS[k] = g sum_j L[j DS + k]
 * (in double); else dL[k] = g S[k] (k < DS), g pad (k >= DS); dS[k] = g L[k]. */
static void dpp_g_kernel(int64_t N, int64_t DX, int64_t DY, const float *x, const float *y, const float *g,
                         float pad, int rep, float *dx, float *dy)
{
    const int xl = DX >= DY;
    const int64_t DL = xl ? DX : DY, DS = xl ? DY : DX;
    const float *lb = xl ? x : y, *sb = xl ? y : x; /* NULL for an empty row */
    float *dlb = xl ? dx : dy, *dsb = xl ? dy : dx;
    for (int64_t n = 0; n < N; n++) {
        const float *l = lb ? lb + n * DL : NULL, *s = sb ? sb + n * DS : NULL;
        float *dl = dlb ? dlb + n * DL : NULL, *ds = dsb ? dsb + n * DS : NULL;
        const double gn = g[n];
        if (rep) {
            for (int64_t k = 0; k < DL; k++) dl[k] = (float)(gn * (double)s[k % DS]);
            for (int64_t k = 0; k < DS; k++) {
                double acc = 0.0;
                for (int64_t j = k; j < DL; j += DS) acc += (double)l[j];
                ds[k] = (float)(gn * acc);
            }
        } else {
            for (int64_t k = 0; k < DS; k++) {
                dl[k] = (float)(gn * (double)s[k]);
                ds[k] = (float)(gn * (double)l[k]);
            }
            for (int64_t k = DS; k < DL; k++) dl[k] = (float)(gn * (double)pad);
        }
    }
}

static rc_status dpp_g_run(rc_op *op, rc_err *err)
{
    int64_t DX, DY;
    rc_status st = dpp_g_shapes(op, &DX, &DY, err);
    if (st) return st;
    float pad = 0.0f;
    int rep = 0;
    if ((st = dpp_args(op, &pad, &rep, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *y = rc_in(op, 1);
    if (rc_tensor_resize_like(rc_out(op, 0), x, err)) return out_fail(op, 0, err);
    if (rc_tensor_resize_like(rc_out(op, 1), y, err)) return out_fail(op, 1, err);
    const int64_t N = x->dims[0];
    if (N == 0 || (DX == 0 && DY == 0)) return RC_OK;
    dpp_g_kernel(N, DX, DY, DX ? rc_f32(x) : NULL, DY ? rc_f32(y) : NULL, rc_f32(rc_in(op, 2)), pad, rep,
                 DX ? rc_f32(rc_out(op, 0)) : NULL, DY ? rc_f32(rc_out(op, 1)) : NULL);
    return RC_OK;
}

/* ================================================================ RemoveDataBlocks */

/* data (ndim >= 1, f32 or i32); indices 1-D, int32 unless empty. */
static rc_status rdb_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_checks_rows_any(op, 0, "data", 0, err);
    if (st) return st;
    const rc_tensor *ix = rc_in(op, 1);
    if (ix->ndim == 1 && ix->dims[0] == 0) return RC_OK; /* Caffe2: any dtype when empty */
    return rc_checks_i32_vector(op, 1, "indices", err);
}

static rc_status rdb_run(rc_op *op, rc_err *err)
{
    rc_status st = rdb_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *ix = rc_in(op, 1);
    const int64_t n = x->dims[0], k = ix->dims[0];
    const int32_t *idx = k ? rc_i32(ix) : NULL;
    for (int64_t i = 0; i < k; i++)
        if (idx[i] < 0 || idx[i] >= n)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (indices) holds %d at position %lld; an "
                              "index must be in [0, %lld) (the rows of input 0 blob '%s' of shape %s)",
                              rc_in_name(op, 1), (int)idx[i], (long long)i, (long long)n, rc_in_name(op, 0),
                              RC_SHAPE(x));
    /* gone[r] = 1 when row r is removed; owned here, freed on every path. */
    unsigned char *gone = k ? calloc((size_t)n, 1) : NULL;
    if (k && !gone) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (%lld flags of scratch)", (long long)n);
    int64_t removed = 0;
    for (int64_t i = 0; i < k; i++)
        if (!gone[idx[i]]) { gone[idx[i]] = 1; removed++; }
    int64_t dims[RC_MAX_DIMS];
    dims[0] = n - removed;
    for (int d = 1; d < x->ndim; d++) dims[d] = x->dims[d];
    if (rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim, dims, err)) {
        free(gone);
        return out_fail(op, 0, err);
    }
    const size_t row = (size_t)rc_dims_prod(x, 1, x->ndim) * rc_dtype_size(x->dtype);
    if (dims[0] > 0 && row > 0) {
        const unsigned char *src = rc_tensor_data(x);
        unsigned char *dst = rc_tensor_data(rc_out(op, 0));
        for (int64_t r = 0; r < n; r++) {
            if (gone && gone[r]) continue;
            memcpy(dst, src + (size_t)r * row, row);
            dst += row;
        }
    }
    free(gone);
    return RC_OK;
}

/* ================================================================ BooleanUnmask */

/* op->state: the count of positions each pair takes, n_in / 2 entries. */
static rc_status bunmask_setup(rc_op *op, rc_err *err)
{
    if (op->n_in % 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes (mask, values) pairs: an even number of inputs, got %d",
                          op->n_in);
    int64_t *counts = calloc((size_t)(op->n_in / 2), sizeof *counts);
    if (!counts) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = counts; /* freed by free_state */
    return RC_OK;
}

/* Masks int32 1-D of mask_0's length; values float32 / int32 1-D of values_0's dtype. */
static rc_status bunmask_check(rc_op *op, rc_err *err)
{
    rc_status st;
    const rc_tensor *m0 = rc_in(op, 0), *v0 = rc_in(op, 1);
    for (int i = 0; i + 1 < op->n_in; i += 2) {
        if ((st = rc_checks_i32_vector(op, i, "mask", err)) || (st = rc_checks_rows_any(op, i + 1, "values", 1, err)))
            return st;
        const rc_tensor *m = rc_in(op, i), *v = rc_in(op, i + 1);
        if (m->dims[0] != m0->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (mask) of shape %s must have the length "
                              "of input 0 blob '%s' (mask) of shape %s", i, rc_in_name(op, i), RC_SHAPE(m),
                              rc_in_name(op, 0), RC_SHAPE(m0));
        if (v->dtype != v0->dtype)
            return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' (values) of shape %s must have the dtype of "
                              "input 1 blob '%s' (values) of shape %s", i + 1, rc_in_name(op, i + 1), RC_SHAPE(v),
                              rc_in_name(op, 1), RC_SHAPE(v0));
    }
    return RC_OK;
}

/* The pair whose mask is the first holding 1 at position p; -1 when none. */
static int bunmask_pair_at(rc_op *op, int64_t p)
{
    for (int k = 0; 2 * k < op->n_in; k++)
        if (rc_i32(rc_in(op, 2 * k))[p]) return k;
    return -1;
}

static rc_status bunmask_run(rc_op *op, rc_err *err)
{
    int64_t *counts = op->state;
    rc_status st = bunmask_check(op, err);
    if (st) return st;
    const int pairs = op->n_in / 2;
    const int64_t M = rc_in(op, 0)->dims[0];
    int64_t ones;
    for (int k = 0; k < pairs; k++) {
        if ((st = check_mask_values(op, 2 * k, &ones, err))) return st;
        counts[k] = 0;
    }
    for (int64_t p = 0; p < M; p++) {
        const int k = bunmask_pair_at(op, p);
        if (k < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "no mask holds 1 at position %lld, so it has no value (%d masks "
                              "of length %lld, the first input 0 blob '%s')", (long long)p, pairs, (long long)M,
                              rc_in_name(op, 0));
        counts[k]++;
    }
    for (int k = 0; k < pairs; k++) {
        const rc_tensor *v = rc_in(op, 2 * k + 1);
        if (v->dims[0] != counts[k])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (values) of shape %s must hold one value "
                              "per position where input %d blob '%s' (mask) is the first mask holding 1: %lld",
                              2 * k + 1, rc_in_name(op, 2 * k + 1), RC_SHAPE(v), 2 * k, rc_in_name(op, 2 * k),
                              (long long)counts[k]);
    }
    const rc_dtype dt = rc_in(op, 1)->dtype;
    const int64_t dims[1] = {M};
    if (rc_tensor_resize(rc_out(op, 0), dt, 1, dims, err)) return out_fail(op, 0, err);
    if (M == 0) return RC_OK;
    unsigned char *y = rc_tensor_data(rc_out(op, 0)); /* 4-byte elements moved as bits */
    for (int k = 0; k < pairs; k++) counts[k] = 0;
    for (int64_t p = 0; p < M; p++) {
        const int k = bunmask_pair_at(op, p);
        const unsigned char *v = rc_tensor_data(rc_in(op, 2 * k + 1));
        memcpy(y + 4 * p, v + 4 * counts[k]++, 4);
    }
    return RC_OK;
}

/* ================================================================ table */

const rc_op_schema rc_ops_mask[] = {
    {"BooleanMask", 2, 2, 1, 2, NULL, NULL, bmask_run, NULL,
     "(data (N, ...) f32/i32, mask (N,) int32 0/1) -> masked_data (count, ...)[, masked_indices (count,) int32]",
     bmask_check},
    {"BooleanMaskGradient", 2, 2, 1, 1, NULL, NULL, bmask_g_run, NULL,
     "(mask (N,) int32 0/1, dmasked_data (count, ...)) -> ddata (N, ...): rows back where mask is 1, else 0",
     bmask_g_check},
    {"BooleanMaskLengths", 2, 2, 1, 1, NULL, NULL, bmask_len_run, NULL,
     "(lengths (L,) int32, mask (sum(lengths),) int32 0/1) -> masked_lengths (L,): the ones per segment",
     bmask_len_check},
    {"LengthsToWeights", 1, 1, 1, 1, NULL, l2w_setup, l2w_run, NULL,
     "(lengths (L,) int32) -> weights (sum,) float32: 1 / lengths[i] ** power per entry; arg power (0.5)",
     l2w_check},
    {"PadEmptySamples", 1, -1, 1, -1, NULL, pes_setup, pes_run, NULL,
     "(lengths (L,), in_1..in_n) -> (out_lengths, out_1..out_n): a zero row for each empty segment, its length 1",
     pes_check},
    {"DotProductWithPadding", 2, 2, 1, 1, NULL, dpp_setup, dpp_run, NULL,
     "(X (N, ...), Y (N, ...)) -> Z (N,): row dot products, the shorter row padded (pad_value) or replicated",
     dpp_check},
    {"DotProductWithPaddingGradient", 3, 3, 2, 2, NULL, dpp_setup, dpp_g_run, NULL,
     "(X, Y, dZ (N,)) -> (dX, dY): the gradient of DotProductWithPadding, the same args", dpp_g_check},
    {"RemoveDataBlocks", 2, 2, 1, 1, NULL, NULL, rdb_run, NULL,
     "(data (N, ...) f32/i32, indices (K,) int32 in [0, N)) -> data without those rows (repeats removed once)",
     rdb_check},
    {"BooleanUnmask", 2, -1, 1, 1, NULL, bunmask_setup, bunmask_run, free,
     "(mask_0, values_0, mask_1, values_1, ...) -> unmasked_data (M,): position p takes the next value of the first "
     "mask holding 1 at p", bunmask_check},
    {0},
};
