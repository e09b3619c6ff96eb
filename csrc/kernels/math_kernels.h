/* kernels/math_kernels.h -- CPU float32 kernels for the math ops (ops/math.c).
 *
 * Raw pointers and dimensions only. Every kernel is a plain loop the compiler
 * vectorises at -O3; none allocates, none keeps state, all are thread-safe.
 * Where a kernel may run in place it says which pointers may be equal; any
 * other overlap is not allowed.
 */
#ifndef RC_MATH_KERNELS_H
#define RC_MATH_KERNELS_H

#include "../core/rc_core.h"
#include <stdint.h>

/* 1 when the n floats at a and those at b do not overlap (always for n = 0). */
static inline int rc_k_apart(const float *a, const float *b, int64_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b, bytes = sizeof(float) * (uintptr_t)n;
    return x + bytes <= y || y + bytes <= x;
}

/* Binary elementwise with Caffe2's legacy broadcast, A viewed as [pre, n, post]
 * and B as [n]: y[p, j, k] = a[p, j, k] (op) b[j]. Same-shape operation is
 * pre = post = 1, n = numel. y may equal a; y may equal b only when
 * pre == post == 1. */
RC_INTERNAL void rc_k_add(int64_t pre, int64_t n, int64_t post, const float *a, const float *b, float *y);
RC_INTERNAL void rc_k_sub(int64_t pre, int64_t n, int64_t post, const float *a, const float *b, float *y);
RC_INTERNAL void rc_k_mul(int64_t pre, int64_t n, int64_t post, const float *a, const float *b, float *y);
/* IEEE division: x / 0 is +-inf, 0 / 0 is NaN (no error). */
RC_INTERNAL void rc_k_div(int64_t pre, int64_t n, int64_t post, const float *a, const float *b, float *y);
/* Div's gradient, b [n], c and dc [pre, n, post] (c = a / b, the forward output):
 * db [n] = -(sum_{p,k} dc c) / b (double sums, order p then k), then da = dc / b
 * [pre, n, post]. da may equal dc; db may alias nothing. */
RC_INTERNAL void rc_k_div_grad(int64_t pre, int64_t n, int64_t post, const float *b, const float *c,
                               const float *dc, float *da, float *db);

/* c[n] = sum over p, k of a[pre, n, post] (fixed order: p, then k). */
RC_INTERNAL void rc_k_sum_reduce(int64_t pre, int64_t n, int64_t post, const float *a, float *c);

/* y[i] = sum_j w[j] * x[j][i] over nx inputs of n elements each (w == NULL:
 * all weights 1). Accumulates in the order x[0], x[1], ... in a stack buffer,
 * so y may equal any x[j]. */
RC_INTERNAL void rc_k_weighted_sum(int nx, const float *const *x, const float *w, int64_t n, float *y);

/* y [n] = elementwise maximum of nx inputs x[j] [n], as NumPy's np.maximum
 * folded left: NaN if any input is NaN; on ties the later input's value
 * (which only matters for -0 vs +0, as NumPy). Reads every input of a block before it
 * writes y, so y may equal any x[j]. */
RC_INTERNAL void rc_k_max(int nx, const float *const *x, int64_t n, float *y);
/* dx[j] [n] = dy where x[j] == y, else 0 (every tied input gets dy; where y is
 * NaN no input does). dx[j] may equal x[j]; no other overlap. */
RC_INTERNAL void rc_k_max_grad(int nx, const float *y, const float *dy, const float *const *x, int64_t n,
                               float *const *dx);

/* y [n] = x ^ e: exact special cases e = 0 (1, also for NaN and 0, as NumPy),
 * 1 (x), 2 (x * x), 0.5 (sqrtf), -1 (1 / x); powf otherwise (NaN for x < 0
 * and a non-integer e). y may equal x. */
RC_INTERNAL void rc_k_pow(int64_t n, float e, const float *x, float *y);
/* dx [n] = e x^(e - 1) dy, with the same special cases (e = 0: dx = 0;
 * e = 1: dx = dy; e = 2: 2 x dy; e = 0.5: 0.5 dy / sqrtf(x); e = -1: -dy / (x x)).
 * dx may equal x or dy. */
RC_INTERNAL void rc_k_pow_grad(int64_t n, float e, const float *x, const float *dy, float *dx);

/* Unary [n] -> [n]; y may equal x. */
/* yt [n, m] -> y [m, n] = yt^T + b (b [n] added to every row) */
RC_INTERNAL void rc_k_transpose_add_bias(int64_t n, int64_t m, const float *yt, const float *b, float *y);
RC_INTERNAL void rc_k_sigmoid(int64_t n, const float *x, float *y);
RC_INTERNAL void rc_k_tanh(int64_t n, const float *x, float *y);
RC_INTERNAL void rc_k_relu(int64_t n, const float *x, float *y);
RC_INTERNAL void rc_k_scale(int64_t n, float s, const float *x, float *y);
RC_INTERNAL void rc_k_sqr(int64_t n, const float *x, float *y); /* y = x * x */
RC_INTERNAL void rc_k_neg(int64_t n, const float *x, float *y); /* y = -x (sign flip) */
/* y = logf(x) (libm: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf) and y = expf(x) (libm: overflow to inf,
 * underflow to 0); correctly rounded or within 1 ulp, unlike the polynomial rc_expf of vmath.h. */
RC_INTERNAL void rc_k_log(int64_t n, const float *x, float *y);
RC_INTERNAL void rc_k_exp(int64_t n, const float *x, float *y);
/* dx [n] = 2 x dy (one rounding: 2 x is exact); dx may equal x or dy. */
RC_INTERNAL void rc_k_sqr_grad(int64_t n, const float *x, const float *dy, float *dx);

/* Gradients from the forward output y [n]: dx = dy * f'(x); dx may equal dy. */
RC_INTERNAL void rc_k_sigmoid_grad(int64_t n, const float *y, const float *dy, float *dx);
RC_INTERNAL void rc_k_tanh_grad(int64_t n, const float *y, const float *dy, float *dx);
RC_INTERNAL void rc_k_relu_grad(int64_t n, const float *y, const float *dy, float *dx);

/* x [N, D], a [D], b [D] -> y [N, D] = x * a + b (row-broadcast a, b). */
RC_INTERNAL void rc_k_elementwise_linear(int64_t N, int64_t D, const float *x, const float *a, const float *b,
                                         float *y);
/* dy, x [N, D], a [D] -> dx [N, D] = dy * a, da [D] = sum_n dy * x, db [D] = sum_n dy. */
RC_INTERNAL void rc_k_elementwise_linear_grad(int64_t N, int64_t D, const float *dy, const float *x,
                                              const float *a, float *restrict dx, float *restrict da,
                                              float *restrict db);

/* y [M, N] = rows of b [N] (the bias before an FC's gemm accumulates). */
RC_INTERNAL void rc_k_fill_rows(int64_t M, int64_t N, const float *b, float *y);
/* db [N] = sum over rows of dy [M, N]. */
RC_INTERNAL void rc_k_col_sum(int64_t M, int64_t N, const float *dy, float *db);
RC_INTERNAL void rc_k_col_sum_add(int64_t M, int64_t N, const float *dy, float *db); /* db += column sums */

#endif
