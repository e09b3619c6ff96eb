/* ops/lengths_reduce.h -- the reduction kernels of ops/lengths_reduce.c, shared
 * with ops/sorted_segment.c (SortedSegment*, which turns its sorted segment ids
 * into lengths and reduces with these). Plain loops over pointers: no
 * allocation, no state; the caller has checked every length and index.
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

/* g: (L, R), len: (L,) summing to N, w: (N,) or NULL -> dx: (N, R); row k of
 * segment s: w[k] * g[s] (g[s] without weights), g[s] / len[s] when mean. */
RC_INTERNAL void rc_lr_grad_rows_kernel(int64_t L, int64_t R, const float *g, const int32_t *len, const float *w,
                                        int mean, float *dx);

/* g: (L, R), len: (L,) summing to N, data: (V, R), rows: (N,) or NULL (row k = k)
 * -> dw: (N,), dw[k] = sum_r g[s][r] * data[row k][r] in double (k in segment s). */
RC_INTERNAL void rc_lr_grad_weights_kernel(int64_t L, int64_t R, const float *g, const int32_t *len,
                                           const float *data, const int32_t *rows, float *dw);

#endif
