/* ops/batch.c -- batched and sequence ops: BatchMatMul, SequenceMask, ReversePackedSegs.
 *
 * BatchMatMul(A, B) -> Y (Caffe2's batch_matmul_op).
 * Arguments trans_a, trans_b (default 0; nonzero transposes the last two dims
 * of that input), broadcast (default 0; nonzero: numpy.matmul's broadcasting
 * and 1-D operands, in ops/bmm_pow.c; what follows is broadcast=0).
 * A and B are float32 with the same ndim >= 2 and equal leading (batch) dims
 * dims[:-2]; batch = prod(dims[:-2]) (1 for 2-D inputs). Per batch element i
 *   Y[i] (M x N) = op(A[i]) op(B[i]),  op(X) = X^T where its flag is set,
 * A[i] being M x K (K x M with trans_a), B[i] K x N (N x K with trans_b).
 * Y has shape dims[:-2] + [M, N]. Each product goes through rc_sgemm. An
 * empty batch, M = 0 or N = 0 gives an empty Y; K = 0 gives zeros.
 * The gradient is made of BatchMatMul ops (recurrent/_grad_batch.py).
 *
 * SequenceMask(input[, sequence_lengths | window_centers]) -> output
 * (Caffe2's boolean_mask_ops). Arguments mode (default 'sequence'; also
 * 'window', 'upper', 'lower', 'upperdiag', 'lowerdiag'), axis (default 1, in
 * [-ndim, ndim) as Caffe2's canonical axis), fill_val (default -inf), grad
 * (default 0; nonzero: the fill value is 0, as the gradient op uses it),
 * batch (optional, in [-ndim, ndim), canonical batch < axis), radius
 * (window mode, default 10, >= 0), repeat_from_axis (optional, sequence mode
 * without batch only, in [axis, ndim) canonical). The float32 input is viewed
 * as B x rows x cols x D: without batch B = 1, rows = prod(dims[:axis]); with
 * batch B = prod(dims[:batch + 1]), rows = prod(dims[batch + 1:axis]) (every
 * batch element masked alike, as Caffe2); cols = prod(dims[axis:r]),
 * D = prod(dims[r:]) with r = repeat_from_axis (without it cols =
 * prod(dims[axis:]), D = 1). Element (b, i, j, k) becomes the fill value where
 *   'sequence':  j >= sequence_lengths[i]
 *   'window':    j < window_centers[i] - radius or j > window_centers[i] + radius
 *   'upper':     j > i          'upperdiag': j >= i
 *   'lower':     j < i          'lowerdiag': j <= i
 * else is copied. (Caffe2's doc string states the triangles the other way
 * round; its code, which we follow, masks as above.) The second input is
 * int32 of shape (rows,) and given exactly in the two modes that use it (a
 * stray one is refused at creation; Caffe2 ignored it). A length above cols
 * masks nothing; a negative length is refused (Caffe2 masked the whole row);
 * any center is fine. Arguments a mode does not use are refused at creation
 * (radius outside window mode, repeat_from_axis outside sequence mode or with
 * batch: Caffe2 ignored them). The output has the input's shape and may be
 * the input (in place).
 *
 * ReversePackedSegs(data, lengths) -> reversed (Caffe2's
 * reverse_packed_segs_op). data is float32 or int32 of shape (T, N, ...),
 * ndim >= 2 (Caffe2 required exactly 3), viewed as (T, N, block), block =
 * prod(dims[2:]); lengths is int32 of shape (N,) (Caffe2 also took int64),
 * each in [0, T]: a length outside is refused naming its position and value
 * (Caffe2 checked only the upper bound; a negative length silently copied the
 * column). For batch entry b the first lengths[b] steps are reversed,
 *   reversed[t, b] = data[lengths[b] - 1 - t, b]   for t < lengths[b],
 * and the padding steps are copied through, reversed[t, b] = data[t, b], as
 * Caffe2's op does; so the op is its own inverse and its own gradient
 * (recurrent/_grad_batch.py). Values are moved as bits (NaN payloads, -0 kept).
 * The output has data's shape and dtype and may be data (in place: the rows
 * are swapped pairwise, no temporary).
 *
 * Kernels are plain functions of pointers and sizes; the only state is the
 * parsed arguments (op->state). No allocation besides the outputs.
 */
#include "../core/rc_core.h"
#include "bmm_pow.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ kernels */

/* a: (batch, M x K, or K x M with trans_a), b: (batch, K x N, or N x K with
 * trans_b) -> y: (batch, M, N), all contiguous; M, N, K > 0. */
static void bmm_kernel(int trans_a, int trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, const float *a,
                       const float *b, float *y)
{
    const int64_t sa = M * K, sb = K * N, sy = M * N;
    for (int64_t i = 0; i < batch; i++)
        rc_sgemm(trans_a, trans_b, M, N, K, 1.f, a + i * sa, b + i * sb, 0.f, y + i * sy);
}

enum { MASK_SEQUENCE, MASK_WINDOW, MASK_UPPER, MASK_LOWER, MASK_UPPERDIAG, MASK_LOWERDIAG };

/* x: (B, rows, cols, D), v: (rows,) lengths or centers (NULL for the triangular modes)
 * -> y: the same shape, y[b, i, j, :] = fill where the mode masks (i, j), else x[b, i, j, :].
 * y may alias x. */
static void seq_mask_kernel(int mode, int64_t B, int64_t rows, int64_t cols, int64_t D, const float *x,
                            const int32_t *v, int64_t radius, float fill, float *y)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < rows; i++) {
            const int64_t base = (b * rows + i) * cols * D;
            for (int64_t j = 0; j < cols; j++) {
                int masked;
                switch (mode) {
                case MASK_SEQUENCE: masked = j >= v[i]; break;
                case MASK_WINDOW: masked = j < (int64_t)v[i] - radius || j > (int64_t)v[i] + radius; break;
                case MASK_UPPER: masked = j > i; break;
                case MASK_LOWER: masked = j < i; break;
                case MASK_UPPERDIAG: masked = j >= i; break;
                default: masked = j <= i; break;
                }
                const float *xr = x + base + j * D;
                float *yr = y + base + j * D;
                if (masked)
                    for (int64_t k = 0; k < D; k++) yr[k] = fill;
                else if (yr != xr)
                    for (int64_t k = 0; k < D; k++) yr[k] = xr[k];
            }
        }
}

/* x: (T, N, row bytes) of one 4-byte dtype, len: (N,), each in [0, T] -> y: (T, N, row bytes),
 * y[t, b] = x[len[b] - 1 - t, b] for t < len[b], else x[t, b]. y may be x (then, per b, rows t and
 * len[b] - 1 - t are swapped for t < len[b] / 2); no other overlap. Bytes are moved, not values. */
static void rev_segs_kernel(int64_t T, int64_t N, size_t row, const unsigned char *x, const int32_t *len,
                            unsigned char *y)
{
    if (y == x) {
        for (int64_t b = 0; b < N; b++)
            for (int64_t t = 0, L = len[b]; t < L / 2; t++) {
                unsigned char *p = y + (size_t)(t * N + b) * row, *q = y + (size_t)((L - 1 - t) * N + b) * row;
                for (size_t k = 0; k < row; k++) {
                    const unsigned char v = p[k];
                    p[k] = q[k];
                    q[k] = v;
                }
            }
        return;
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < N; b++) {
            const int64_t src = t < len[b] ? len[b] - 1 - t : t;
            memcpy(y + (size_t)(t * N + b) * row, x + (size_t)(src * N + b) * row, row);
        }
}

/* ================================================================ BatchMatMul */

typedef struct {
    int trans_a, trans_b;
    int broadcast; /* rc_bmm_bc_run (ops/bmm_pow.c) */
} bmm_state;

static rc_status bmm_setup(rc_op *op, rc_err *err)
{
    bmm_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    int64_t ta = 0, tb = 0, bc = 0;
    if ((st = rc_arg_i(&op->def, "trans_a", 0, &ta, err))) return st;
    if ((st = rc_arg_i(&op->def, "trans_b", 0, &tb, err))) return st;
    if ((st = rc_arg_i(&op->def, "broadcast", 0, &bc, err))) return st;
    s->broadcast = bc != 0;
    s->trans_a = ta != 0;
    s->trans_b = tb != 0;
    return RC_OK;
}

/* A, B float32 of one ndim >= 2 and equal dims[:-2]; the inner dims agree.
 * Gives the batch size and M, N, K. */
static rc_status bmm_shapes(rc_op *op, int64_t *batch, int64_t *pM, int64_t *pN, int64_t *pK, rc_err *err)
{
    const bmm_state *s = op->state;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    for (int i = 0; i < 2; i++) {
        const rc_tensor *t = rc_in(op, i);
        if (t->ndim < 2)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' must have at least 2 dims (batch dims, then a matrix), got %s", i,
                              rc_in_name(op, i), RC_SHAPE(t));
    }
    if (A->ndim != B->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' of shape %s and input 1 blob '%s' of shape %s must have the same "
                          "number of dims (or give broadcast=1)", rc_in_name(op, 0), RC_SHAPE(A),
                          rc_in_name(op, 1), RC_SHAPE(B));
    const int nd = A->ndim;
    for (int k = 0; k < nd - 2; k++)
        if (A->dims[k] != B->dims[k])
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "batch dims differ: input 0 blob '%s' of shape %s and input 1 blob '%s' of shape %s "
                              "must agree on all dims but the last two (dim %d: %lld vs %lld; or give "
                              "broadcast=1)", rc_in_name(op, 0), RC_SHAPE(A), rc_in_name(op, 1), RC_SHAPE(B), k,
                              (long long)A->dims[k], (long long)B->dims[k]);
    const int64_t a0 = A->dims[nd - 2], a1 = A->dims[nd - 1], b0 = B->dims[nd - 2], b1 = B->dims[nd - 1];
    const int64_t M = s->trans_a ? a1 : a0, Ka = s->trans_a ? a0 : a1;
    const int64_t N = s->trans_b ? b0 : b1, Kb = s->trans_b ? b1 : b0;
    if (Ka != Kb)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "inner dimensions differ: input 0 blob '%s' of shape %s gives %lld x %lld matrices "
                          "(trans_a=%d) but input 1 blob '%s' of shape %s gives %lld x %lld (trans_b=%d)",
                          rc_in_name(op, 0), RC_SHAPE(A), (long long)M, (long long)Ka, s->trans_a, rc_in_name(op, 1),
                          RC_SHAPE(B), (long long)Kb, (long long)N, s->trans_b);
    if (M > INT32_MAX || N > INT32_MAX || Ka > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "matrix sizes M=%lld, N=%lld, K=%lld exceed the BLAS limit of %d per dimension",
                          (long long)M, (long long)N, (long long)Ka, INT32_MAX);
    *batch = rc_dims_prod(A, 0, nd - 2);
    *pM = M;
    *pN = N;
    *pK = Ka;
    return RC_OK;
}

static rc_status bmm_check(rc_op *op, rc_err *err)
{
    const bmm_state *s = op->state;
    if (s->broadcast) return rc_bmm_bc_check(op, s->trans_a, s->trans_b, err);
    int64_t batch, M, N, K;
    return bmm_shapes(op, &batch, &M, &N, &K, err);
}

/* BatchMatMul: A (batch dims, M x K), B (batch dims, K x N) (per the trans flags)
 * -> Y (batch dims, M, N). */
static rc_status bmm_run(rc_op *op, rc_err *err)
{
    const bmm_state *s = op->state;
    if (s->broadcast) return rc_bmm_bc_run(op, s->trans_a, s->trans_b, err);
    int64_t batch, M, N, K;
    rc_status st = bmm_shapes(op, &batch, &M, &N, &K, err);
    if (st) return st;
    const rc_tensor *A = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    for (int k = 0; k < A->ndim - 2; k++) dims[k] = A->dims[k];
    dims[A->ndim - 2] = M;
    dims[A->ndim - 1] = N;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, A->ndim, dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (batch == 0 || M == 0 || N == 0) return RC_OK; /* an empty Y */
    float *y = rc_f32(rc_out(op, 0));
    if (K == 0) {
        memset(y, 0, (size_t)(batch * M * N) * sizeof *y); /* sums of no products */
        return RC_OK;
    }
    bmm_kernel(s->trans_a, s->trans_b, batch, M, N, K, rc_f32(A), rc_f32(rc_in(op, 1)), y);
    return RC_OK;
}

/* ================================================================ SequenceMask */

static const char *const mask_modes[] = {"sequence", "window", "upper", "lower", "upperdiag", "lowerdiag"};

typedef struct {
    int mode;
    int has_batch, has_repeat;
    int64_t axis, batch, repeat, radius;
    float fill; /* fill_val, or 0 with grad */
} seq_mask_state;

static rc_status seq_mask_setup(rc_op *op, rc_err *err)
{
    seq_mask_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    const char *mode = NULL;
    int64_t grad = 0;
    float fill = 0.f;
    if ((st = rc_arg_s(&op->def, "mode", "sequence", &mode, err))) return st;
    s->mode = -1;
    for (int m = 0; m < (int)(sizeof mask_modes / sizeof *mask_modes); m++)
        if (strcmp(mode, mask_modes[m]) == 0) s->mode = m;
    if (s->mode < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument mode='%s' is not supported: one of 'sequence', 'window', "
                          "'upper', 'lower', 'upperdiag', 'lowerdiag'", mode);
    const int wants = s->mode == MASK_SEQUENCE || s->mode == MASK_WINDOW ? 2 : 1;
    if (op->n_in != wants)
        return rc_op_fail(op, err, RC_ERR_VALUE, "mode '%s' takes %d input(s) (input%s), got %d", mode, wants,
                          s->mode == MASK_SEQUENCE ? ", sequence_lengths" : s->mode == MASK_WINDOW ?
                          ", window_centers" : "", op->n_in);
    if ((st = rc_arg_i(&op->def, "axis", 1, &s->axis, err))) return st;
    if ((st = rc_arg_f(&op->def, "fill_val", -INFINITY, &fill, err))) return st;
    if ((st = rc_arg_i(&op->def, "grad", 0, &grad, err))) return st;
    if ((st = rc_arg_i(&op->def, "radius", 10, &s->radius, err))) return st;
    if (rc_opdef_arg(&op->def, "radius") && s->mode != MASK_WINDOW)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument radius is for mode 'window' only, mode is '%s'", mode);
    if (s->radius < 0 || s->radius > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument radius=%lld must be in [0, %d]", (long long)s->radius,
                          INT32_MAX);
    s->has_batch = rc_opdef_arg(&op->def, "batch") != NULL;
    if (s->has_batch && (st = rc_arg_i(&op->def, "batch", -1, &s->batch, err))) return st;
    s->has_repeat = rc_opdef_arg(&op->def, "repeat_from_axis") != NULL;
    if (s->has_repeat && (st = rc_arg_i(&op->def, "repeat_from_axis", 1, &s->repeat, err))) return st;
    if (s->has_repeat && (s->mode != MASK_SEQUENCE || s->has_batch))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument repeat_from_axis is for mode 'sequence' without "
                          "argument batch only (mode '%s'%s)", mode, s->has_batch ? ", batch given" : "");
    s->fill = grad ? 0.f : fill;
    return RC_OK;
}

/* input float32 viewed as B x rows x cols x D (see the top of the file); the
 * second input, where the mode takes one, int32 of shape (rows,). Data values
 * are checked by run. */
static rc_status seq_mask_shapes(rc_op *op, int64_t *B, int64_t *rows, int64_t *cols, int64_t *D, rc_err *err)
{
    const seq_mask_state *s = op->state;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if (op->n_in > 1 && (st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t a = s->axis < 0 ? s->axis + x->ndim : s->axis;
    if (a < 0 || a >= x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument axis=%lld is out of range for input 0 blob '%s' of shape %s (must be in "
                          "[-%d, %d))", (long long)s->axis, rc_in_name(op, 0), RC_SHAPE(x), x->ndim, x->ndim);
    int64_t bt = -1, r = x->ndim;
    if (s->has_batch) {
        bt = s->batch < 0 ? s->batch + x->ndim : s->batch;
        if (bt < 0 || bt >= a)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument batch=%lld must name a dim before axis=%lld of input "
                              "0 blob '%s' of shape %s (canonical batch in [0, %lld))", (long long)s->batch,
                              (long long)s->axis, rc_in_name(op, 0), RC_SHAPE(x), (long long)a);
    }
    if (s->has_repeat) {
        r = s->repeat < 0 ? s->repeat + x->ndim : s->repeat;
        if (r < a || r >= x->ndim)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument repeat_from_axis=%lld must name a dim from axis=%lld "
                              "on of input 0 blob '%s' of shape %s (canonical in [%lld, %d))", (long long)s->repeat,
                              (long long)s->axis, rc_in_name(op, 0), RC_SHAPE(x), (long long)a, x->ndim);
    }
    *B = bt >= 0 ? rc_dims_prod(x, 0, (int)bt + 1) : 1;
    *rows = rc_dims_prod(x, (int)(bt + 1), (int)a);
    *cols = rc_dims_prod(x, (int)a, (int)r);
    *D = rc_dims_prod(x, (int)r, x->ndim);
    if (op->n_in < 2) return RC_OK;
    const rc_tensor *len = rc_in(op, 1);
    const char *what = s->mode == MASK_SEQUENCE ? "sequence_lengths" : "window_centers";
    if (len->ndim == 1 && len->dims[0] == *rows) return RC_OK;
    if (s->has_batch)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (%s) must have shape (%lld,), one entry per row of input 0 blob '%s' "
                          "of shape %s viewed as %lld x %lld x %lld at batch %d and axis %d, got %s",
                          rc_in_name(op, 1), what, (long long)*rows, rc_in_name(op, 0), RC_SHAPE(x), (long long)*B,
                          (long long)*rows, (long long)(*cols * *D), (int)bt, (int)a, RC_SHAPE(len));
    return rc_op_fail(op, err, RC_ERR_VALUE,
                      "input 1 blob '%s' (%s) must have shape (%lld,), one %s per row of input 0 blob '%s' of shape %s "
                      "viewed as %lld x %lld at axis %d, got %s", rc_in_name(op, 1), what, (long long)*rows,
                      s->mode == MASK_SEQUENCE ? "length" : "center", rc_in_name(op, 0), RC_SHAPE(x),
                      (long long)*rows, (long long)(*cols * *D), (int)a, RC_SHAPE(len));
}

static rc_status seq_mask_check(rc_op *op, rc_err *err)
{
    int64_t B, rows, cols, D;
    return seq_mask_shapes(op, &B, &rows, &cols, &D, err);
}

/* SequenceMask: input (B x rows x cols x D), sequence_lengths or window_centers (rows,) int32, or
 * nothing -> output (shape of input). output may be input. */
static rc_status seq_mask_run(rc_op *op, rc_err *err)
{
    const seq_mask_state *s = op->state;
    int64_t B, rows, cols, D;
    rc_status st = seq_mask_shapes(op, &B, &rows, &cols, &D, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int32_t *len = op->n_in > 1 && rows > 0 ? rc_i32(rc_in(op, 1)) : NULL;
    if (s->mode == MASK_SEQUENCE)
        for (int64_t i = 0; i < rows; i++)
            if (len[i] < 0)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "input 1 blob '%s' (sequence_lengths) holds a negative length %d at index %lld",
                                  rc_in_name(op, 1), (int)len[i], (long long)i);
    if (rc_out(op, 0) != x && (st = rc_tensor_resize_like(rc_out(op, 0), x, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (rc_tensor_numel(x) == 0) return RC_OK;
    seq_mask_kernel(s->mode, B, rows, cols, D, rc_f32(x), len, s->radius, s->fill, rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ ReversePackedSegs */

/* data float32 or int32 with ndim >= 2; lengths int32 of shape (data.dims[1],).
 * Length values are checked by run. */
static rc_status rev_segs_check(rc_op *op, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0), *len = rc_in(op, 1);
    rc_status st;
    if (x->dtype != RC_I32 && (st = rc_check_input(op, 0, RC_F32, err)))
        return st == RC_ERR_TYPE ? rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' (data) must be float32 or "
                                              "int32, got %s", rc_in_name(op, 0), RC_SHAPE(x)) : st;
    if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
    if (x->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' (data) must have at least 2 dims (T, N, ...), got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    if (len->ndim != 1 || len->dims[0] != x->dims[1])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (lengths) must have shape (%lld,), one length per batch entry (dim 1) "
                          "of input 0 blob '%s' of shape %s, got %s", rc_in_name(op, 1), (long long)x->dims[1],
                          rc_in_name(op, 0), RC_SHAPE(x), RC_SHAPE(len));
    return RC_OK;
}

/* ReversePackedSegs: data (T, N, ...), lengths (N,) int32 in [0, T] -> reversed
 * (shape and dtype of data). reversed may be data. */
static rc_status rev_segs_run(rc_op *op, rc_err *err)
{
    rc_status st = rev_segs_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *len = rc_in(op, 1);
    const int64_t T = x->dims[0], N = x->dims[1];
    const int32_t *l = N > 0 ? rc_i32(len) : NULL;
    for (int64_t b = 0; b < N; b++)
        if (l[b] < 0 || l[b] > T)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' (lengths) holds %d at position %lld, outside [0, %lld] (T = dim 0 "
                              "of input 0 blob '%s' of shape %s)", rc_in_name(op, 1), (int)l[b], (long long)b,
                              (long long)T, rc_in_name(op, 0), RC_SHAPE(x));
    if (rc_out(op, 0) != x && (st = rc_tensor_resize_like(rc_out(op, 0), x, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (rc_tensor_numel(x) == 0) return RC_OK;
    const size_t row = (size_t)rc_dims_prod(x, 2, x->ndim) * rc_dtype_size(x->dtype);
    rev_segs_kernel(T, N, row, rc_tensor_data(x), l, rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ table */

const rc_op_schema rc_ops_batch[] = {
    {"BatchMatMul", 2, 2, 1, 1, NULL, bmm_setup, bmm_run, free,
     "Y[i] = op(A[i]) op(B[i]) over the batch dims (args trans_a, trans_b, broadcast: numpy.matmul's rules)", bmm_check},
    {"SequenceMask", 1, 2, 1, 1, rc_inplace_first, seq_mask_setup, seq_mask_run, free,
     "(input[, sequence_lengths | window_centers]) -> output: input filled with fill_val where the mask of mode "
     "(sequence, window, upper, lower, upperdiag, lowerdiag) says (args axis, batch, radius, repeat_from_axis, "
     "fill_val, grad)", seq_mask_check},
    {"ReversePackedSegs", 2, 2, 1, 1, rc_inplace_first, NULL, rev_segs_run, NULL,
     "(data (T, N, ...), lengths (N,)) -> reversed: the first lengths[b] steps of entry b reversed, the rest "
     "copied", rev_segs_check},
    {0},
};
