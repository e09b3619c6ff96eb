/* ops/pool.c -- Caffe2's pooling ops on the CPU: MaxPool, AveragePool (also
 * registered as MaxPool1D/2D/3D, AveragePool1D/2D/3D: the same ops, as in
 * Caffe2), LpPool and their gradients MaxPool*Gradient, AveragePool*Gradient,
 * LpPoolGradient.
 *
 * X is float32 NCHW (N, C, d1..dn) or NHWC (N, d1..dn, C) by argument order,
 * n = 1..3 spatial dims. The arguments (kernel(s), stride(s), pad(s),
 * legacy_pad, global_pooling) are ConvPoolOpBase's, parsed and resolved by the
 * shared base (ops/convpool.h). Pooling refuses dilation != 1 and, as Caffe2's
 * PoolOp, a head or tail pad >= its kernel (unless global_pooling).
 * Output position o of spatial dim i covers the window [o s_i - p_i,
 * o s_i - p_i + k_i) of the padded input (p_i the head pad); the window is
 * clipped to the image, [max(start, 0), min(end, in_i)).
 *  - MaxPool: Y = the max of X over the clipped window. A NaN in the window
 *    gives NaN (NaN propagates). A window with no cell of the image (only
 *    reachable with legacy_pad=CAFFE_LEGACY_POOLING, head pad 0 and stride >
 *    kernel: Caffe's ceil-mode output size puts the last window past the
 *    image) gives -FLT_MAX, the value Caffe2 starts its max from (numeric
 *    lowest).
 *  - AveragePool: Y = the sum of X over the clipped window / count, count the
 *    number of cells of the image in it (count_include_pad=0, Caffe2's
 *    default) or the kernel's volume k_1..k_n (count_include_pad=1: padding
 *    counts as zeros; with legacy / ceil output sizes the resolved tail pad
 *    covers the last window, so the count is always the full kernel, as in
 *    Caffe2). The sum is in double in window order (d, h, w): the same bits
 *    every run. A window with no cell gives 0.
 *  - LpPool (argument p, default 2; p > 0, +inf allowed, else ValueError):
 *    Y = (sum over the clipped window of |x|^p)^(1/p) -- padding cells do not
 *    count, as in Caffe2. Computed in double as m (sum (|x| / m)^p)^(1/p), m
 *    the window's max |x| (no overflow / underflow of |x|^p; p = inf gives m,
 *    the L-inf norm); m = 0 (all zeros, or a window with no cell) gives 0, a
 *    NaN in the window NaN, else an inf gives inf.
 *  - MaxPoolGradient(X, Y, dY) -> dX: Caffe2's rule, followed exactly: for
 *    every window y and every cell x in it, dX[x] += (X[x] == Y[y]) * dY[y] --
 *    every cell equal to the max gets the whole gradient (ties all receive
 *    it); a NaN max matches no cell; a non-finite dY[y] reaches every cell of
 *    its window (0 * inf = NaN), as in Caffe2.
 *  - AveragePoolGradient(X, Y, dY) -> dX: dX[x] += dY[y] * (1.0f / count) for
 *    every window y containing x (Y is not read, only its shape checked).
 *  - LpPoolGradient(X, Y, dY) -> dX: dX[x] += dY[y] * x |x|^(p-2) / Y^(p-1)
 *    for every window y containing x, computed in double as dY[y] sign(x)
 *    (|x| / Y[y])^(p-1); a cell with x = 0 gets 0 (Caffe2 gave NaN for p < 2
 *    or Y = 0: 0 * inf, 0 / 0), but a non-finite dY[y] still gives NaN there.
 * Gradients accumulate in float in window order (deterministic). NCHW
 * MaxPool / AveragePool and their gradients run row by row ("row kernels"
 * below) with the same bits as the window-by-window loops. A run of
 * at least PL_SPLIT_MIN window cells outside step loops splits its planes
 * (NCHW: images of one channel; NHWC: samples) over OpenBLAS's thread count
 * (rc_par_run's threads); each output cell is computed as in one thread, so
 * the bits are the same for any thread count. Y and dY must have the output
 * shape the arguments give for X. global_pooling: the window is the whole
 * image (output spatial dims 1).
 * Empty tensors (N = 0, C = 0) give empty outputs.
 * The state is the parsed arguments (no scratch: the kernels work in place).
 */
#include "../core/rc_core.h"
#include "convpool.h"
#include "../kernels/vmath.h" /* RC_TARGET_CLONES */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The geometry padded to 3 spatial dims (leading dims of size 1, kernel 1,
 * stride 1, pad 0). */
typedef struct {
    int nd, nhwc;
    int64_t N, C;
    int64_t in[3], out[3], k[3], s[3], ph[3];
} pl_geom;

enum { PL_MAX, PL_AVG, PL_LP };

/* ================================================================ kernels */

/* The clipped window of output o along dim i: [*a, *b) (a >= b: empty). */
static inline void pl_win(const pl_geom *g, int i, int64_t o, int64_t *a, int64_t *b)
{
    const int64_t st = o * g->s[i] - g->ph[i], en = st + g->k[i];
    *a = st > 0 ? st : 0;
    *b = en < g->in[i] ? en : g->in[i];
    if (*b < *a) *b = *a;
}

/* The kernel's volume (count_include_pad). */
static double pl_kvol(const pl_geom *g) { return (double)g->k[0] * (double)g->k[1] * (double)g->k[2]; }

/* Runs the statement(s) once per output row (od, oh) with its clipped rows
 * [d0, d1) x [h0, h1). */
#define PL_FOR_OUT_ROWS(g, ...)                                                                         \
    for (int64_t od = 0; od < (g)->out[0]; od++) {                                                      \
        int64_t d0, d1;                                                                                 \
        pl_win((g), 0, od, &d0, &d1);                                                                   \
        for (int64_t oh = 0; oh < (g)->out[1]; oh++) {                                                  \
            int64_t h0, h1;                                                                             \
            pl_win((g), 1, oh, &h0, &h1);                                                               \
            __VA_ARGS__                                                                                 \
        }                                                                                               \
    }

/* Runs the statement(s) once per output position (od, oh, ow), y its spatial
 * index, with the clipped window [d0, d1) x [h0, h1) x [w0, w1). */
#define PL_FOR_WINDOWS(g, ...)                                                                          \
    do {                                                                                                \
        int64_t y = 0;                                                                                  \
        PL_FOR_OUT_ROWS(g, for (int64_t ow = 0; ow < (g)->out[2]; ow++, y++) {                          \
            int64_t w0, w1;                                                                             \
            pl_win((g), 2, ow, &w0, &w1);                                                               \
            __VA_ARGS__                                                                                 \
        })                                                                                              \
    } while (0)

/* Runs the statement(s) for every cell x (spatial index) of the window. */
#define PL_FOR_CELLS(g, ...)                                                                            \
    for (int64_t d = d0; d < d1; d++)                                                                   \
        for (int64_t h = h0; h < h1; h++)                                                               \
            for (int64_t w = w0; w < w1; w++) {                                                         \
                const int64_t x = (d * (g)->in[1] + h) * (g)->in[2] + w;                                \
                __VA_ARGS__                                                                             \
            }

static inline float pl_max1(float m, float v) { return (v > m || v != v) ? v : m; }

/* The Lp norm of the window's cells xp[x * nc] (double, window order). p = 1
 * and p = 2 (the default) make no pow() calls: r^1 = r exactly, r^2 = r r
 * and sum^(1/2) = sqrt(sum) (both correctly rounded). */
static float lp_norm(const pl_geom *g, const float *xp, int64_t nc, int64_t d0, int64_t d1, int64_t h0, int64_t h1,
                     int64_t w0, int64_t w1, double p)
{
    float m = 0.0f;
    PL_FOR_CELLS(g, m = pl_max1(m, fabsf(xp[x * nc]));)
    if (m == 0.0f || m != m || isinf(m)) return m;
    double sum = 0.0;
    if (p == 2.0) {
        PL_FOR_CELLS(g, {
            const double r = fabs((double)xp[x * nc]) / m;
            sum += r * r;
        })
        return (float)((double)m * sqrt(sum));
    }
    if (p == 1.0) {
        PL_FOR_CELLS(g, sum += fabs((double)xp[x * nc]) / m;)
        return (float)((double)m * sum);
    }
    PL_FOR_CELLS(g, sum += pow(fabs((double)xp[x * nc]) / m, p);)
    return (float)((double)m * pow(sum, 1.0 / p));
}

/* d||window||_p / dx = sign(x) (|x| / y)^(p-1); 0 at x = 0. p = 2 and p = 1
 * skip pow(): r^1 = r and r^0 = 1 exactly (the bits pow() gives). */
static inline double lp_slope(float xv, float yv, double p)
{
    if (xv == 0.0f) return 0.0;
    const double q = fabs((double)xv) / (double)yv;
    const double r = p == 2.0 ? q : p == 1.0 ? 1.0 : pow(q, p - 1.0);
    return xv < 0.0f ? -r : r;
}

/* y[i] = acc[i] / cnt as float for i < n (0 when cnt is 0). A power-of-two
 * count multiplies by its reciprocal instead: exact, so the same bits as the
 * division, and a multiplication is several times cheaper than a division
 * (2 x 2 windows: the count is 4). */
static inline void pl_mean(const double *acc, int64_t n, double cnt, float *y)
{
    const int64_t c = (int64_t)cnt; /* a cell count: an integer below 2^53 */
    if (!(cnt > 0)) {
        for (int64_t i = 0; i < n; i++) y[i] = 0.0f;
    } else if ((c & (c - 1)) == 0) {
        const double inv = 1.0 / cnt;
        for (int64_t i = 0; i < n; i++) y[i] = (float)(acc[i] * inv);
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = (float)(acc[i] / cnt);
    }
}

/* ================================================================ row kernels */

/* NCHW MaxPool / AveragePool and their gradients, one output row (od, oh) at
 * a time: for each cell row (d, h) of the row's windows and each kernel
 * column kw, one pass over the outputs ow whose window holds column
 * ow s - pad + kw inside the image. Each output folds (forward) and each dX
 * cell receives (backward: kw descending, so ow ascending) the same terms
 * in the same order as the window-by-window loops above, so the bits are
 * theirs; the passes have unit or constant strides and vectorise. Used for
 * kernels at most PL_ROW_KMAX wide and rows of at least 2 outputs. */
#define PL_ROW_KMAX 32
#define PL_ROW_CHUNK 128 /* outputs per pass of AveragePool's double sums and scales */

typedef struct {
    int64_t lo[PL_ROW_KMAX], hi[PL_ROW_KMAX]; /* per kw: the outputs [lo, hi) its column serves */
    int64_t off[PL_ROW_KMAX];                 /* per kw: x column = ow s + off */
    int64_t i0, i1;                           /* the outputs whose w window is whole (k[2] cells) */
} pl_rows;

static int pl_rows_ok(const pl_geom *g, int kind)
{
    return !g->nhwc && kind != PL_LP && g->k[2] <= PL_ROW_KMAX && g->out[2] >= 2;
}

static void pl_rows_init(const pl_geom *g, pl_rows *r)
{
    const int64_t s = g->s[2], n = g->out[2];
    for (int64_t kw = 0; kw < g->k[2]; kw++) {
        /* 0 <= ow s + off < in: ow >= ceil(-off / s), ow <= floor((in - 1 - off) / s) */
        const int64_t off = kw - g->ph[2], a = -off, b = g->in[2] - 1 - off;
        int64_t lo = a <= 0 ? 0 : (a + s - 1) / s, hi = b < 0 ? 0 : b / s + 1;
        if (hi > n) hi = n;
        if (lo > hi) lo = hi;
        r->lo[kw] = lo;
        r->hi[kw] = hi;
        r->off[kw] = off;
    }
    /* whole windows are consecutive: those of kw = 0 and kw = k - 1 both in the image */
    r->i0 = r->lo[0] > r->lo[g->k[2] - 1] ? r->lo[0] : r->lo[g->k[2] - 1];
    r->i1 = r->hi[0] < r->hi[g->k[2] - 1] ? r->hi[0] : r->hi[g->k[2] - 1];
    if (r->i1 < r->i0) r->i1 = r->i0;
}

/* The passes, inlined with a constant stride for strides 1 and 2. */
static inline void pl_pass_max(float *restrict y, const float *restrict x, int64_t lo, int64_t hi, int64_t s,
                               int64_t off)
{
    for (int64_t o = lo; o < hi; o++) y[o] = pl_max1(y[o], x[o * s + off]);
}

static inline void pl_pass_sum(double *restrict acc, const float *restrict x, int64_t lo, int64_t hi, int64_t s,
                               int64_t off)
{
    for (int64_t o = lo; o < hi; o++) acc[o] += (double)x[o * s + off];
}

static inline void pl_pass_dmax(float *restrict dx, const float *restrict x, const float *restrict y,
                                const float *restrict dy, int64_t lo, int64_t hi, int64_t s, int64_t off)
{
    for (int64_t o = lo; o < hi; o++) dx[o * s + off] += (float)(x[o * s + off] == y[o]) * dy[o];
}

static inline void pl_pass_add(float *restrict dx, const float *restrict t, int64_t lo, int64_t hi, int64_t s,
                               int64_t off)
{
    for (int64_t o = lo; o < hi; o++) dx[o * s + off] += t[o];
}

#define PL_BY_STRIDE(s, call_with)                                                                      \
    do {                                                                                                \
        if ((s) == 1) call_with(1);                                                                     \
        else if ((s) == 2) call_with(2);                                                                \
        else call_with(s);                                                                              \
    } while (0)

/* The number of cells of output ow's window, whose rows span nd x nh cells
 * (the divisor of AveragePool without count_include_pad). */
static inline double pl_count(const pl_geom *g, const pl_rows *r, int64_t nd, int64_t nh, int64_t ow)
{
    int64_t w0 = 0, w1 = g->k[2];
    if (ow < r->i0 || ow >= r->i1) pl_win(g, 2, ow, &w0, &w1);
    return (double)(nd * nh * (w1 - w0));
}

/* Output chunk [c0, c1) of kernel column kw: its outputs [*lo, *hi) relative
 * to c0 (empty: *lo >= *hi), and the x column of relative output 0. */
static inline int64_t pl_chunk_cols(const pl_rows *r, int64_t s, int64_t kw, int64_t c0, int64_t c1, int64_t *lo,
                                    int64_t *hi)
{
    *lo = (r->lo[kw] > c0 ? r->lo[kw] : c0) - c0;
    *hi = (r->hi[kw] < c1 ? r->hi[kw] : c1) - c0;
    return r->off[kw] + c0 * s;
}

/* Runs the statement(s) once per chunk [c0, c1) of PL_ROW_CHUNK outputs of
 * each output row (od, oh), its cell rows [d0, d1) x [h0, h1), yo the
 * chunk's first output. */
#define PL_FOR_ROW_CHUNKS(g, ...)                                                                       \
    PL_FOR_OUT_ROWS(g, for (int64_t c0 = 0; c0 < (g)->out[2]; c0 += PL_ROW_CHUNK) {                     \
        const int64_t c1 = c0 + PL_ROW_CHUNK < (g)->out[2] ? c0 + PL_ROW_CHUNK : (g)->out[2];           \
        const int64_t yo = (od * (g)->out[1] + oh) * (g)->out[2] + c0;                                  \
        __VA_ARGS__                                                                                     \
    })

/* One pass of the forward / backward row kernels (their locals by name). */
#define PL_FWD_PASS(S)                                                                                  \
    (kind == PL_MAX ? pl_pass_max(yc, xr, lo, hi, (S), off) : pl_pass_sum(acc, xr, lo, hi, (S), off))
#define PL_BWD_PASS(S)                                                                                  \
    (kind == PL_MAX ? pl_pass_dmax(dp + xo, xp + xo, yp + yo, gp + yo, lo, hi, (S), off)                \
                    : pl_pass_add(dp + xo, sc, lo, hi, (S), off))

/* MaxPool / AveragePool of one NCHW plane xp -> yp. */
static void pl_rows_forward(const pl_geom *g, const pl_rows *r, int kind, int cip, const float *xp, float *yp)
{
    const int64_t s = g->s[2];
    double acc[PL_ROW_CHUNK];
    PL_FOR_ROW_CHUNKS(g, {
        float *yc = yp + yo;
        for (int64_t i = 0; i < c1 - c0; i++) {
            yc[i] = -INFINITY;
            acc[i] = 0.0;
        }
        for (int64_t d = d0; d < d1; d++)
            for (int64_t h = h0; h < h1; h++) {
                const float *xr = xp + (d * g->in[1] + h) * g->in[2];
                for (int64_t kw = 0; kw < g->k[2]; kw++) {
                    int64_t lo, hi;
                    const int64_t off = pl_chunk_cols(r, s, kw, c0, c1, &lo, &hi);
                    PL_BY_STRIDE(s, PL_FWD_PASS);
                }
            }
        /* the chunk's whole windows [a, b) share one count (with count_include_pad:
         * every window); the others, at the row's ends, are counted one by one */
        const int rows_empty = d0 == d1 || h0 == h1;
        int64_t a = c0 > r->i0 ? c0 : r->i0, b = c1 < r->i1 ? c1 : r->i1;
        if (kind == PL_AVG && cip) a = c0, b = c1;
        if (b < a || rows_empty) b = a;
        for (int64_t o = c0 == a ? b : c0; o < c1; o = o + 1 == a ? b : o + 1) {
            const double cnt = pl_count(g, r, d1 - d0, h1 - h0, o);
            if (kind == PL_AVG)
                pl_mean(acc + (o - c0), 1, cnt, yc + (o - c0));
            else if (cnt == 0.0)
                yc[o - c0] = -FLT_MAX; /* a window with no cell */
        }
        if (kind == PL_AVG)
            pl_mean(acc + (a - c0), b - a, cip ? pl_kvol(g) : pl_count(g, r, d1 - d0, h1 - h0, a), yc + (a - c0));
    });
}

/* MaxPoolGradient / AveragePoolGradient of one NCHW plane into dp (zeroed). */
static void pl_rows_backward(const pl_geom *g, const pl_rows *r, int kind, int cip, const float *xp,
                             const float *yp, const float *gp, float *dp)
{
    const int64_t s = g->s[2];
    float sc[PL_ROW_CHUNK];
    PL_FOR_ROW_CHUNKS(g, {
        /* AveragePool: each output's term dY (1 / count), computed once */
        for (int64_t i = 0; i < c1 - c0 && kind == PL_AVG; i++) {
            const double cnt = cip ? pl_kvol(g) : pl_count(g, r, d1 - d0, h1 - h0, c0 + i);
            sc[i] = gp[yo + i] * (cnt > 0 ? 1.0f / (float)cnt : 0.0f);
        }
        for (int64_t d = d0; d < d1; d++)
            for (int64_t h = h0; h < h1; h++) {
                const int64_t xo = (d * g->in[1] + h) * g->in[2];
                for (int64_t kw = g->k[2] - 1; kw >= 0; kw--) {
                    int64_t lo, hi;
                    const int64_t off = pl_chunk_cols(r, s, kw, c0, c1, &lo, &hi);
                    PL_BY_STRIDE(s, PL_BWD_PASS);
                }
            }
    });
}

/* MaxPool / AveragePool, NHWC: window by window, the channels innermost. */
RC_TARGET_CLONES static void pl_nhwc_forward(const pl_geom *g, int kind, int cip, const float *X, float *Y)
{
    const int64_t Sx = g->in[0] * g->in[1] * g->in[2], Sy = g->out[0] * g->out[1] * g->out[2];
    const double kv = pl_kvol(g);
    const int64_t C = g->C;
    for (int64_t n = 0; n < g->N; n++) {
        const float *xn = X + n * Sx * C;
        float *yn = Y + n * Sy * C;
        if (kind == PL_MAX) {
            PL_FOR_WINDOWS(g, {
                float *yv = yn + y * C;
                const int empty = d0 == d1 || h0 == h1 || w0 == w1;
                for (int64_t c = 0; c < C; c++) yv[c] = empty ? -FLT_MAX : -INFINITY;
                PL_FOR_CELLS(g, {
                    const float *xv = xn + x * C;
                    for (int64_t c = 0; c < C; c++) yv[c] = pl_max1(yv[c], xv[c]);
                })
            });
        } else {
            /* PL_ROW_CHUNK channels at a time: each sum in double, in window order */
            PL_FOR_WINDOWS(g, {
                float *yv = yn + y * C;
                const double cnt = cip ? kv : (double)((d1 - d0) * (h1 - h0) * (w1 - w0));
                for (int64_t c0 = 0; c0 < C; c0 += PL_ROW_CHUNK) {
                    const int64_t nc = C - c0 < PL_ROW_CHUNK ? C - c0 : PL_ROW_CHUNK;
                    double acc[PL_ROW_CHUNK];
                    for (int64_t c = 0; c < nc; c++) acc[c] = 0.0;
                    PL_FOR_CELLS(g, pl_pass_sum(acc, xn + x * C + c0, 0, nc, 1, 0);)
                    pl_mean(acc, nc, cnt, yv + c0);
                }
            });
        }
    }
}

/* NCHW: planes xp (in spatial cells) -> yp (out cells), one per (n, c).
 * NHWC: per sample, C channels innermost. */
static void pl_forward(const pl_geom *g, int kind, int cip, double lp, const float *X, float *Y)
{
    const int64_t Sx = g->in[0] * g->in[1] * g->in[2], Sy = g->out[0] * g->out[1] * g->out[2];
    const double kv = pl_kvol(g);
    if (kind == PL_LP) {
        /* element (cell s, channel c) of sample / plane q, as in pl_backward */
        const int64_t planes = g->nhwc ? g->N : g->N * g->C, nc = g->nhwc ? g->C : 1;
        for (int64_t q = 0; q < planes; q++)
            PL_FOR_WINDOWS(g, {
                for (int64_t c = 0; c < nc; c++)
                    Y[(q * Sy + y) * nc + c] = lp_norm(g, X + q * Sx * nc + c, nc, d0, d1, h0, h1, w0, w1, lp);
            });
        return;
    }
    if (pl_rows_ok(g, kind)) {
        pl_rows r;
        pl_rows_init(g, &r);
        for (int64_t p = 0; p < g->N * g->C; p++) pl_rows_forward(g, &r, kind, cip, X + p * Sx, Y + p * Sy);
        return;
    }
    if (!g->nhwc) {
        for (int64_t p = 0; p < g->N * g->C; p++) {
            const float *xp = X + p * Sx;
            float *yp = Y + p * Sy;
            if (kind == PL_MAX) {
                PL_FOR_WINDOWS(g, {
                    float m = -INFINITY;
                    int any = 0;
                    PL_FOR_CELLS(g, m = pl_max1(m, xp[x]); any = 1;)
                    yp[y] = any ? m : -FLT_MAX;
                });
            } else {
                PL_FOR_WINDOWS(g, {
                    double sum = 0.0;
                    PL_FOR_CELLS(g, sum += xp[x];)
                    pl_mean(&sum, 1, cip ? kv : (double)((d1 - d0) * (h1 - h0) * (w1 - w0)), yp + y);
                });
            }
        }
        return;
    }
    pl_nhwc_forward(g, kind, cip, X, Y);
}

/* MaxPoolGradient / AveragePoolGradient window by window (NHWC, and the NCHW
 * shapes the row kernels do not take) into dX (zeroed). AveragePoolGradient's
 * terms dY (1 / count) are formed apart from the adds, PL_ROW_CHUNK channels
 * at a time, so a clone with FMAs cannot fuse them: the bits are the
 * baseline code's on every CPU. */
RC_TARGET_CLONES static void pl_win_backward(const pl_geom *g, int kind, int cip, const float *X, const float *Y,
                                             const float *dY, float *dX)
{
    const int64_t Sx = g->in[0] * g->in[1] * g->in[2], Sy = g->out[0] * g->out[1] * g->out[2];
    const double kv = pl_kvol(g);
    /* element (cell s, channel c) of sample / plane p: NCHW planes have stride
     * 1 and one channel each; NHWC samples have C channels innermost */
    const int64_t planes = g->nhwc ? g->N : g->N * g->C, nc = g->nhwc ? g->C : 1;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = X + p * Sx * nc, *yp = Y + p * Sy * nc, *gp = dY + p * Sy * nc;
        float *dp = dX + p * Sx * nc;
        if (kind == PL_MAX) {
            PL_FOR_WINDOWS(g, {
                PL_FOR_CELLS(g, {
                    for (int64_t c = 0; c < nc; c++)
                        dp[x * nc + c] += (float)(xp[x * nc + c] == yp[y * nc + c]) * gp[y * nc + c];
                })
            });
        } else {
            PL_FOR_WINDOWS(g, {
                const double cnt = cip ? kv : (double)((d1 - d0) * (h1 - h0) * (w1 - w0));
                const float scale = cnt > 0 ? 1.0f / (float)cnt : 0.0f;
                for (int64_t c0 = 0; c0 < nc; c0 += PL_ROW_CHUNK) {
                    const int64_t m = nc - c0 < PL_ROW_CHUNK ? nc - c0 : PL_ROW_CHUNK;
                    float t[PL_ROW_CHUNK];
                    for (int64_t c = 0; c < m; c++) t[c] = gp[y * nc + c0 + c] * scale;
                    PL_FOR_CELLS(g, pl_pass_add(dp + x * nc + c0, t, 0, m, 1, 0);)
                }
            });
        }
    }
}

/* dX (zeroed here) from dY; X, Y not read by AveragePoolGradient. */
static void pl_backward(const pl_geom *g, int kind, int cip, double lp, const float *X, const float *Y,
                        const float *dY, float *dX)
{
    const int64_t Sx = g->in[0] * g->in[1] * g->in[2], Sy = g->out[0] * g->out[1] * g->out[2];
    const int64_t C = g->C;
    memset(dX, 0, (size_t)(g->N * C * Sx) * sizeof *dX);
    if (pl_rows_ok(g, kind)) {
        pl_rows r;
        pl_rows_init(g, &r);
        for (int64_t p = 0; p < g->N * C; p++)
            pl_rows_backward(g, &r, kind, cip, X + p * Sx, Y + p * Sy, dY + p * Sy, dX + p * Sx);
        return;
    }
    if (kind != PL_LP) {
        pl_win_backward(g, kind, cip, X, Y, dY, dX);
        return;
    }
    /* element (cell s, channel c) of sample / plane p: NCHW planes have stride
     * 1 and one channel each; NHWC samples have C channels innermost */
    const int64_t planes = g->nhwc ? g->N : g->N * C, nc = g->nhwc ? C : 1;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = X + p * Sx * nc, *yp = Y + p * Sy * nc, *gp = dY + p * Sy * nc;
        float *dp = dX + p * Sx * nc;
        PL_FOR_WINDOWS(g, {
            for (int64_t c = 0; c < nc; c++) {
                const float yv = yp[y * nc + c], gv = gp[y * nc + c];
                PL_FOR_CELLS(g, dp[x * nc + c] += (float)(gv * lp_slope(xp[x * nc + c], yv, lp));)
            }
        });
    }
}

/* ================================================================ threads */

/* A run's planes (NCHW: the N C images of one channel; NHWC: the N samples)
 * split in contiguous ranges over threads: each output cell is computed as
 * in one thread, so the bits do not depend on the split. */
typedef struct {
    const pl_geom *g;
    int kind, cip, backward;
    double lp;
    const float *X, *Y, *dY;
    float *out; /* Y, or dX */
} pl_job;

static void pl_part(const void *ctx, int p, int parts)
{
    const pl_job *j = ctx;
    pl_geom g = *j->g;
    const int64_t planes = g.nhwc ? g.N : g.N * g.C, q0 = planes * p / parts, q1 = planes * (p + 1) / parts;
    const int64_t nc = g.nhwc ? g.C : 1; /* a plane's channels */
    const int64_t Sx = g.in[0] * g.in[1] * g.in[2] * nc, Sy = g.out[0] * g.out[1] * g.out[2] * nc;
    g.N = q1 - q0; /* the range as a batch of its own: NCHW planes as images of one channel */
    if (!g.nhwc) g.C = 1;
    if (!j->backward)
        pl_forward(&g, j->kind, j->cip, j->lp, j->X + q0 * Sx, j->out + q0 * Sy);
    else
        pl_backward(&g, j->kind, j->cip, j->lp, j->X + q0 * Sx, j->Y + q0 * Sy, j->dY + q0 * Sy, j->out + q0 * Sx);
}

/* Window cells (output cells times the kernel's volume) below which a run
 * stays on one thread: waking a helper costs microseconds. */
#define PL_SPLIT_MIN ((double)(1 << 16))

/* Runs j over rc_op_split_threads (OpenBLAS's thread count; one inside a
 * step loop) of rc_par_run's threads, at most one thread a plane; one
 * thread for a small run. */
static void pl_run_parts(const pl_job *j)
{
    const pl_geom *g = j->g;
    const int64_t planes = g->nhwc ? g->N : g->N * g->C;
    const double work = (double)g->N * (double)g->C * (double)(g->out[0] * g->out[1] * g->out[2]) * pl_kvol(g);
    int t = work < PL_SPLIT_MIN ? 1 : rc_op_split_threads();
    if ((int64_t)t > planes) t = (int)planes;
    if (t < 2) {
        pl_part(j, 0, 1);
        return;
    }
    rc_par_run(t, t, pl_part, j);
}

/* ================================================================ arguments */

typedef struct {
    int kind, cip;
    double p; /* LpPool */
    rc_cp_args a;
} pl_state;

static void pl_free(void *p) { free(p); }

/* The base's arguments, count_include_pad, and Caffe2's PoolOp rule: every
 * pad (head and tail, as given) smaller than its kernel, unless
 * global_pooling. */
static rc_status pl_setup_kind(rc_op *op, int kind, rc_err *err)
{
    pl_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    s->kind = kind;
    rc_status st;
    int64_t v = 0;
    if ((st = rc_cp_parse(op, RC_CP_POOL, &s->a, err))) return st;
    if (kind == PL_AVG) {
        if ((st = rc_arg_i(&op->def, "count_include_pad", 0, &v, err))) return st;
        s->cip = v != 0;
    }
    if (kind == PL_LP) {
        float p = 2.0f;
        if ((st = rc_arg_f(&op->def, "p", 2.0f, &p, err))) return st;
        if (!(p > 0.0f))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument p must be > 0 (the norm's exponent, inf "
                              "allowed), got %g", (double)p);
        s->p = p;
    }
    const rc_cp_args *a = &s->a;
    for (int i = 0; i < a->nd && !a->global; i++)
        for (int t = 0; t < 2; t++)
            if (a->pads[t * a->nd + i] >= a->kernel[i])
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument pads: the %s pad of dim %d is %lld, not smaller "
                                  "than the kernel %lld (pooling needs pad < kernel)", t ? "tail" : "head", i,
                                  (long long)a->pads[t * a->nd + i], (long long)a->kernel[i]);
    return RC_OK;
}

/* Input xi checked by the base; *g its geometry padded to 3 dims. */
static rc_status pl_geometry(rc_op *op, int xi, pl_geom *g, rc_cp_geom *cg, rc_err *err)
{
    const pl_state *s = op->state;
    rc_status st = rc_cp_geometry(op, &s->a, xi, cg, err);
    if (st) return st;
    memset(g, 0, sizeof *g);
    g->nd = cg->nd;
    g->nhwc = s->a.nhwc;
    g->N = cg->N;
    g->C = cg->C;
    for (int j = 0; j < 3; j++) {
        const int i = j - (3 - cg->nd);
        g->in[j] = i >= 0 ? cg->in[i] : 1;
        g->out[j] = i >= 0 ? cg->out[i] : 1;
        g->k[j] = i >= 0 ? cg->kernel[i] : 1;
        g->s[j] = i >= 0 ? cg->stride[i] : 1;
        g->ph[j] = i >= 0 ? cg->pad_head[i] : 0;
    }
    return RC_OK;
}

/* ================================================================ ops */

static rc_status max_setup(rc_op *op, rc_err *err) { return pl_setup_kind(op, PL_MAX, err); }
static rc_status avg_setup(rc_op *op, rc_err *err) { return pl_setup_kind(op, PL_AVG, err); }
static rc_status lp_setup(rc_op *op, rc_err *err) { return pl_setup_kind(op, PL_LP, err); }

static rc_status pl_check(rc_op *op, rc_err *err)
{
    pl_geom g;
    rc_cp_geom cg;
    return pl_geometry(op, 0, &g, &cg, err);
}

/* Input i (Y or dY of a gradient op) must be float32 with the output shape. */
static rc_status pl_expect_out(rc_op *op, int i, const char *what, const rc_cp_geom *cg, rc_err *err)
{
    const pl_state *s = op->state;
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *t = rc_in(op, i);
    rc_tensor want;
    rc_tensor_init(&want);
    want.dtype = RC_F32;
    want.ndim = x->ndim;
    rc_cp_out_dims(&s->a, cg, cg->C, want.dims);
    if (rc_tensor_same_shape(t, &want)) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have the pooled shape %s of input 0 blob "
                      "'%s' %s, got %s", i, rc_in_name(op, i), what, RC_SHAPE(&want), rc_in_name(op, 0),
                      RC_SHAPE(x), RC_SHAPE(t));
}

/* MaxPool*Gradient / AveragePool*Gradient / LpPoolGradient(X, Y, dY). */
static rc_status pl_grad_shapes(rc_op *op, pl_geom *g, rc_err *err)
{
    rc_cp_geom cg;
    rc_status st = pl_geometry(op, 0, g, &cg, err);
    if (st || (st = pl_expect_out(op, 1, "Y", &cg, err))) return st;
    return pl_expect_out(op, 2, "dY", &cg, err);
}

static rc_status pl_grad_check(rc_op *op, rc_err *err)
{
    pl_geom g;
    return pl_grad_shapes(op, &g, err);
}

static rc_status pl_run(rc_op *op, rc_err *err)
{
    const pl_state *s = op->state;
    pl_geom g;
    rc_cp_geom cg;
    rc_status st = pl_geometry(op, 0, &g, &cg, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    rc_cp_out_dims(&s->a, &cg, cg.C, dims);
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, x->ndim, dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    /* an empty Y: nothing to compute (the window loops would still walk every position of N images,
     * minutes for an NHWC X of C = 0 and N = 2^40) */
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK;
    const pl_job j = {&g, s->kind, s->cip, 0, s->p, rc_f32(x), NULL, NULL, rc_f32(rc_out(op, 0))};
    pl_run_parts(&j);
    return RC_OK;
}

static rc_status pl_grad_run(rc_op *op, rc_err *err)
{
    const pl_state *s = op->state;
    pl_geom g;
    rc_status st = pl_grad_shapes(op, &g, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = rc_tensor_resize_like(rc_out(op, 0), x, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (rc_tensor_numel(rc_in(op, 2)) == 0) { /* an empty dY: dX is 0 (and the loops would walk it all) */
        const int64_t n = rc_tensor_numel(rc_out(op, 0));
        if (n) memset(rc_f32(rc_out(op, 0)), 0, (size_t)n * sizeof(float));
        return RC_OK;
    }
    const pl_job j = {&g, s->kind, s->cip, 1, s->p, rc_f32(x), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)),
                      rc_f32(rc_out(op, 0))};
    pl_run_parts(&j);
    return RC_OK;
}

/* ================================================================ table */

#define PL_DOC_ARGS "(args kernel(s), stride(s), pad(s), legacy_pad, global_pooling, order"
#define PL_MAX_ROW(name)                                                                                \
    {name, 1, 1, 1, 1, NULL, max_setup, pl_run, pl_free,                                                \
     "X -> Y: the max of X over each window " PL_DOC_ARGS ")", pl_check}
#define PL_AVG_ROW(name)                                                                                \
    {name, 1, 1, 1, 1, NULL, avg_setup, pl_run, pl_free,                                                \
     "X -> Y: the mean of X over each window " PL_DOC_ARGS ", count_include_pad)", pl_check}
#define PL_MAX_GRAD_ROW(name)                                                                           \
    {name, 3, 3, 1, 1, NULL, max_setup, pl_grad_run, pl_free,                                           \
     "(X, Y, dY) -> dX: dY to every cell of a window equal to its max (args as MaxPool's)", pl_grad_check}
#define PL_AVG_GRAD_ROW(name)                                                                           \
    {name, 3, 3, 1, 1, NULL, avg_setup, pl_grad_run, pl_free,                                           \
     "(X, Y, dY) -> dX: dY / count to every cell of a window (args as AveragePool's)", pl_grad_check}
#define PL_LP_ROW                                                                                       \
    {"LpPool", 1, 1, 1, 1, NULL, lp_setup, pl_run, pl_free,                                             \
     "X -> Y: the Lp norm (sum |x|^p)^(1/p) of X over each window " PL_DOC_ARGS ", p)", pl_check}
#define PL_LP_GRAD_ROW                                                                                  \
    {"LpPoolGradient", 3, 3, 1, 1, NULL, lp_setup, pl_grad_run, pl_free,                                \
     "(X, Y, dY) -> dX: dY sign(x) (|x| / Y)^(p-1) to every cell of a window (args as LpPool's)",      \
     pl_grad_check}

const rc_op_schema rc_ops_pool[] = {
    PL_MAX_ROW("MaxPool"), PL_MAX_ROW("MaxPool1D"), PL_MAX_ROW("MaxPool2D"), PL_MAX_ROW("MaxPool3D"),
    PL_AVG_ROW("AveragePool"), PL_AVG_ROW("AveragePool1D"), PL_AVG_ROW("AveragePool2D"),
    PL_AVG_ROW("AveragePool3D"),
    PL_MAX_GRAD_ROW("MaxPoolGradient"), PL_MAX_GRAD_ROW("MaxPool1DGradient"),
    PL_MAX_GRAD_ROW("MaxPool2DGradient"), PL_MAX_GRAD_ROW("MaxPool3DGradient"),
    PL_AVG_GRAD_ROW("AveragePoolGradient"), PL_AVG_GRAD_ROW("AveragePool1DGradient"),
    PL_AVG_GRAD_ROW("AveragePool2DGradient"), PL_AVG_GRAD_ROW("AveragePool3DGradient"),
    PL_LP_ROW, PL_LP_GRAD_ROW,
    {0},
};
