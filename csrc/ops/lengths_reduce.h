/* ops/lengths_reduce.h -- the reduction kernels of ops/lengths_reduce.c and a
 * few op helpers, shared with ops/sorted_segment.c (SortedSegment*, which turns
 * its sorted segment ids into lengths and reduces with these). The kernels are
 * plain loops over pointers: no allocation, no state; the caller has checked
 * every length and index. The helpers fail through rc_op_fail (the message
 * names the op and the blob) and allocate nothing besides the outputs' resize.
 */
#ifndef RC_OPS_LENGTHS_REDUCE_H
#define RC_OPS_LENGTHS_REDUCE_H

#include "../core/rc_core.h"

/* data: (V, R), rows: (N,) indices into data or NULL for row k = k, len: (L,)
 * non-negative, summing to N, w: (N,) or NULL -> out: (L, R). out[s][r] = sum
 * over the rows k of segment s, in order, of w[k] * data[row k][r] (w = 1
 * without weights; w[k - off_s] when pos), in double, divided by len[s] when
 * mean and len[s] > 0; 0 for an empty segment. */
RC_INTERNAL void rc_lr_sum_kernel(int64_t L, int64_t R, const float *data, const int32_t *rows, const int32_t *len,
                                  const float *w, int pos, int mean, float *out);

/* data: (N, R), len: (L,) summing to N -> out: (L, R), out[s][r] = max over
 * segment s of data[k][r] (NaN if any is NaN), 0 for an empty segment. */
RC_INTERNAL void rc_lr_max_kernel(int64_t L, int64_t R, const float *data, const int32_t *len, float *out);

/* fo, g: (L, R), len: (L,) summing to N, data: (N, R) -> dx: (N, R),
 * dx[k][r] = g[s][r] if data[k][r] == fo[s][r] else 0 (k in segment s). */
RC_INTERNAL void rc_lr_grad_max_kernel(int64_t L, int64_t R, const float *fo, const float *g,
                                       const int32_t *len, const float *data, float *dx);

/* g: (L, R), len: (L,) summing to N, w: (N,) or NULL -> dx: (N, R); row k of
 * segment s: w[k] * g[s] (g[s] without weights), g[s] / len[s] when mean. */
RC_INTERNAL void rc_lr_grad_rows_kernel(int64_t L, int64_t R, const float *g, const int32_t *len, const float *w,
                                        int mean, float *dx);

/* g: (L, R), len: (L,) summing to N, data: (V, R), rows: (N,) or NULL (row k = k)
 * -> dw: (N,), dw[k] = sum_r g[s][r] * data[row k][r] in double (k in segment s). */
RC_INTERNAL void rc_lr_grad_weights_kernel(int64_t L, int64_t R, const float *g, const int32_t *len,
                                           const float *data, const int32_t *rows, float *dw);

/* Setup of the WeightedSum ops: argument grad_on_weights (read by the gradient
 * maker) must be an int 0 or 1. */
RC_INTERNAL rc_status rc_lr_wsum_setup(rc_op *op, rc_err *err);

/* Resizes output o to float32 (L,) + t.shape[1:] (t: ndim >= 1); a failure
 * names output o. */
RC_INTERNAL rc_status rc_lr_resize_rows(rc_op *op, int o, int64_t L, const rc_tensor *t, rc_err *err);

/* Writes the outputs of a Sum, Mean or WeightedSum gradient op, resized by the
 * caller: output 0 (N, R) the rows (rc_lr_grad_rows_kernel, divided by the
 * lengths when mean), and with dw output 1 (N,) the weights' gradient
 * (rc_lr_grad_weights_kernel; zeros when R == 0). g, w, data, idx: the input
 * positions of dOUT (L, ...), SCALARS (-1: none), DATA and INDICES (-1: rows
 * k = k); DATA is read only with dw. len: (L,) summing to N > 0, checked. */
RC_INTERNAL void rc_lr_grad_write(rc_op *op, int64_t L, int64_t N, const int32_t *len, int g, int w, int data,
                                  int idx, int mean, int dw);

/* Where the inputs of a segment reduction are, as Caffe2 orders them:
 * (DATA, [SCALARS,] [INDICES,] SEGMENT_IDS), SCALARS when weighted, INDICES
 * when sparse; -1 marks an absent input (ops/segment.c, ops/sorted_segment.c). */
typedef struct rc_seg_layout {
    int data, w, idx, ids;
} rc_seg_layout;

static inline rc_seg_layout rc_seg_inputs(int weighted, int sparse)
{
    rc_seg_layout l = {0, -1, -1, 1};
    int next = 1;
    if (weighted) l.w = next++;
    if (sparse) l.idx = next++;
    l.ids = next;
    return l;
}

#endif
