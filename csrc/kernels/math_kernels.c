/* kernels/math_kernels.c -- CPU float32 kernels for the math ops. See math_kernels.h. */
#include "math_kernels.h"
#include "vmath.h"
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- binary, legacy broadcast */
/* a, y [pre, n, post], b [n]: y = a (op) b broadcast over pre and post. */
#define RC_BINARY_KERNEL(name, OP)                                                                  \
    void name(int64_t pre, int64_t n, int64_t post, const float *a, const float *b, float *y)     \
    {                                                                                               \
        if (post == 1) {                                                                            \
            for (int64_t p = 0; p < pre; p++) {                                                     \
                const float *ap = a + p * n;                                                        \
                float *yp = y + p * n;                                                              \
                for (int64_t j = 0; j < n; j++) yp[j] = ap[j] OP b[j];                              \
            }                                                                                       \
            return;                                                                                 \
        }                                                                                           \
        for (int64_t p = 0; p < pre; p++)                                                           \
            for (int64_t j = 0; j < n; j++) {                                                       \
                const float bj = b[j];                                                              \
                const float *ap = a + (p * n + j) * post;                                           \
                float *yp = y + (p * n + j) * post;                                                 \
                for (int64_t k = 0; k < post; k++) yp[k] = ap[k] OP bj;                             \
            }                                                                                       \
    }

RC_BINARY_KERNEL(rc_k_add, +)
RC_BINARY_KERNEL(rc_k_sub, -)
RC_BINARY_KERNEL(rc_k_mul, *)
RC_BINARY_KERNEL(rc_k_div, /)

/* b [n], c, dc [pre, n, post] -> db [n] = -(sum_{p,k} dc c) / b, da [pre, n, post] = dc / b. */
void rc_k_div_grad(int64_t pre, int64_t n, int64_t post, const float *b, const float *c, const float *dc,
                   float *da, float *db)
{
    for (int64_t j = 0; j < n; j++) { /* db first: da may overwrite dc */
        double s = 0.0;
        for (int64_t p = 0; p < pre; p++) {
            const int64_t o = (p * n + j) * post;
            for (int64_t k = 0; k < post; k++) s += (double)dc[o + k] * (double)c[o + k];
        }
        db[j] = (float)(-s / (double)b[j]);
    }
    rc_k_div(pre, n, post, dc, b, da);
}

/* a [pre, n, post] -> c [n]: c[j] = sum_{p,k} a[p, j, k]. */
void rc_k_sum_reduce(int64_t pre, int64_t n, int64_t post, const float *a, float *c)
{
    for (int64_t j = 0; j < n; j++) c[j] = 0.f;
    if (post == 1) {
        for (int64_t p = 0; p < pre; p++) {
            const float *ap = a + p * n;
            for (int64_t j = 0; j < n; j++) c[j] += ap[j];
        }
        return;
    }
    for (int64_t p = 0; p < pre; p++)
        for (int64_t j = 0; j < n; j++) {
            const float *ap = a + (p * n + j) * post;
            float s = 0.f;
            for (int64_t k = 0; k < post; k++) s += ap[k];
            c[j] += s;
        }
}

/* ---------------------------------------------------------------- (weighted) sums */
#define RC_SUM_CHUNK 1024

/* ---------------------------------------------------------------- Max, Pow */
/* np.maximum's rule: a when a > b or a is NaN, else b (a NaN b gives b; on
 * ties b, which only shows for max(+0, -0) = -0, as NumPy 2.4's np.maximum). */
static inline float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

/* x[j] [n] for j < nx -> y [n] = max_j x[j], block by block through a stack buffer. */
void rc_k_max(int nx, const float *const *x, int64_t n, float *y)
{
    float buf[RC_SUM_CHUNK];
    for (int64_t c0 = 0; c0 < n; c0 += RC_SUM_CHUNK) {
        const int64_t len = n - c0 < RC_SUM_CHUNK ? n - c0 : RC_SUM_CHUNK;
        memcpy(buf, x[0] + c0, (size_t)len * sizeof *buf);
        for (int j = 1; j < nx; j++) {
            const float *xj = x[j] + c0;
            for (int64_t i = 0; i < len; i++) buf[i] = max_nan(buf[i], xj[i]);
        }
        memcpy(y + c0, buf, (size_t)len * sizeof *buf);
    }
}

/* y, dy [n], x[j] [n] -> dx[j] [n] = x[j] == y ? dy : 0. */
void rc_k_max_grad(int nx, const float *y, const float *dy, const float *const *x, int64_t n, float *const *dx)
{
    for (int j = 0; j < nx; j++) {
        const float *xj = x[j];
        float *dj = dx[j];
        for (int64_t i = 0; i < n; i++) dj[i] = xj[i] == y[i] ? dy[i] : 0.f;
    }
}

/* x [n] -> y [n] = x ^ e */
void rc_k_pow(int64_t n, float e, const float *x, float *y)
{
    if (e == 0.f) {
        for (int64_t i = 0; i < n; i++) y[i] = 1.f;
    } else if (e == 1.f) {
        if (y != x) memmove(y, x, (size_t)n * sizeof *y);
    } else if (e == 2.f) {
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i];
    } else if (e == 0.5f) {
        for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
    } else if (e == -1.f) {
        for (int64_t i = 0; i < n; i++) y[i] = 1.f / x[i];
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = powf(x[i], e);
    }
}

/* x, dy [n] -> dx [n] = e x^(e - 1) dy */
void rc_k_pow_grad(int64_t n, float e, const float *x, const float *dy, float *dx)
{
    if (e == 0.f) {
        for (int64_t i = 0; i < n; i++) dx[i] = 0.f;
    } else if (e == 1.f) {
        if (dx != dy) memmove(dx, dy, (size_t)n * sizeof *dx);
    } else if (e == 2.f) {
        for (int64_t i = 0; i < n; i++) dx[i] = 2.f * x[i] * dy[i];
    } else if (e == 0.5f) {
        for (int64_t i = 0; i < n; i++) dx[i] = 0.5f * dy[i] / sqrtf(x[i]);
    } else if (e == -1.f) {
        for (int64_t i = 0; i < n; i++) dx[i] = -dy[i] / (x[i] * x[i]);
    } else {
        const float em1 = e - 1.f;
        for (int64_t i = 0; i < n; i++) dx[i] = e * powf(x[i], em1) * dy[i];
    }
}

/* x[j] [n] for j < nx, w [nx] or NULL -> y [n] = sum_j w[j] x[j]. */
RC_TARGET_CLONES void rc_k_weighted_sum(int nx, const float *const *x, const float *w, int64_t n, float *y)
{
    if (nx == 2 && !w && (y == x[0] || rc_k_apart(y, x[0], n)) && (y == x[1] || rc_k_apart(y, x[1], n))) {
        /* a Sum of two, often in place: one pass (each element is read before it is written; the
         * buffered path below measured 3x slower on 16 x 256, in cache); the same bits */
        const float *x0 = x[0], *x1 = x[1];
#pragma GCC ivdep
        for (int64_t i = 0; i < n; i++) y[i] = x0[i] + x1[i];
        return;
    }
    float buf[RC_SUM_CHUNK];
    for (int64_t c0 = 0; c0 < n; c0 += RC_SUM_CHUNK) {
        const int64_t len = n - c0 < RC_SUM_CHUNK ? n - c0 : RC_SUM_CHUNK;
        const float *x0 = x[0] + c0;
        if (w) {
            const float w0 = w[0];
            for (int64_t i = 0; i < len; i++) buf[i] = w0 * x0[i];
        } else {
            for (int64_t i = 0; i < len; i++) buf[i] = x0[i];
        }
        for (int j = 1; j < nx; j++) {
            const float *xj = x[j] + c0;
            if (w) {
                const float wj = w[j];
                for (int64_t i = 0; i < len; i++) buf[i] += wj * xj[i];
            } else {
                for (int64_t i = 0; i < len; i++) buf[i] += xj[i];
            }
        }
        memcpy(y + c0, buf, (size_t)len * sizeof *buf);
    }
}

/* ---------------------------------------------------------------- unary */
/* yt [n, m] -> y [m, n] = yt^T + b, in 32x32 blocks */
void rc_k_transpose_add_bias(int64_t n, int64_t m, const float *yt, const float *b, float *y)
{
    for (int64_t i0 = 0; i0 < m; i0 += 32)
        for (int64_t j0 = 0; j0 < n; j0 += 32) {
            int64_t i1 = i0 + 32 < m ? i0 + 32 : m, j1 = j0 + 32 < n ? j0 + 32 : n;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) y[i * n + j] = yt[j * m + i] + b[j];
        }
}

/* x, y [n] (may be the same array). rc_sigmoidf clamps its argument: no overflow. */
RC_TARGET_CLONES void rc_k_sigmoid(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = rc_sigmoidf(x[i]);
}

/* x, y [n] (may be the same array) */
RC_TARGET_CLONES void rc_k_tanh(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = rc_tanhf(x[i]);
}

/* x, y [n] */
void rc_k_relu(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

/* x, y [n] */
void rc_k_scale(int64_t n, float s, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = s * x[i];
}

/* x, y [n] (may be the same array): y = x * x, as NumPy's np.square */
void rc_k_sqr(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i];
}

/* x, y [n] (may be the same array): y = -x, a sign flip (also of NaN and 0) */
void rc_k_neg(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = -x[i];
}

/* x, y [n] (may be the same array): y = logf(x), libm's (IEEE: -inf at +-0, NaN below 0) */
void rc_k_log(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = logf(x[i]);
}

/* x, y [n] (may be the same array): y = expf(x), libm's (inf above ~88.72, 0 far below -87) */
void rc_k_exp(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = expf(x[i]);
}

/* x, dy, dx [n] (dx may be x or dy): dx = (2 x) dy; 2 x is exact, so one rounding */
void rc_k_sqr_grad(int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = 2.f * x[i] * dy[i];
}

/* y, dy, dx [n]: dx = dy * y * (1 - y) */
void rc_k_sigmoid_grad(int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * y[i] * (1.f - y[i]);
}

/* y, dy, dx [n]: dx = dy * (1 - y^2) */
void rc_k_tanh_grad(int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * (1.f - y[i] * y[i]);
}

/* y, dy, dx [n]: dx = y > 0 ? dy : 0 */
void rc_k_relu_grad(int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

/* ---------------------------------------------------------------- ElementwiseLinear */
/* x, y [N, D]; a, b [D] */
void rc_k_elementwise_linear(int64_t N, int64_t D, const float *x, const float *a, const float *b, float *y)
{
    for (int64_t r = 0; r < N; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        for (int64_t j = 0; j < D; j++) yr[j] = xr[j] * a[j] + b[j];
    }
}

/* dy, x, dx [N, D]; a, da, db [D]; dx, da, db distinct from each other and the inputs */
void rc_k_elementwise_linear_grad(int64_t N, int64_t D, const float *dy, const float *x, const float *a,
                                  float *restrict dx, float *restrict da, float *restrict db)
{
    for (int64_t j = 0; j < D; j++) da[j] = db[j] = 0.f;
    for (int64_t r = 0; r < N; r++) {
        const float *dyr = dy + r * D, *xr = x + r * D;
        float *dxr = dx + r * D;
        for (int64_t j = 0; j < D; j++) {
            da[j] += dyr[j] * xr[j];
            db[j] += dyr[j];
            dxr[j] = dyr[j] * a[j];
        }
    }
}

/* ---------------------------------------------------------------- FC helpers */
/* b [N] -> y [M, N] */
void rc_k_fill_rows(int64_t M, int64_t N, const float *b, float *y)
{
    for (int64_t m = 0; m < M; m++) memcpy(y + m * N, b, (size_t)N * sizeof *b);
}

/* dy [M, N] -> db [N] += the column sums, adding row after row */
RC_TARGET_CLONES void rc_k_col_sum_add(int64_t M, int64_t N, const float *dy, float *db)
{
    for (int64_t m = 0; m < M; m++) {
        const float *r = dy + m * N;
        for (int64_t j = 0; j < N; j++) db[j] += r[j];
    }
}

/* dy [M, N] -> db [N] */
void rc_k_col_sum(int64_t M, int64_t N, const float *dy, float *db)
{
    for (int64_t j = 0; j < N; j++) db[j] = 0.f;
    rc_k_col_sum_add(M, N, dy, db);
}
