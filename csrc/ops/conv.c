/* ops/conv.c -- Caffe2's convolution on the CPU: Conv (also registered as
 * Conv1D, Conv2D, Conv3D) and ConvGradient (Conv1DGradient, ...), and
 * Im2Col / Col2Im.
 *
 * Caffe2 semantics. Conv(X, filter[, bias]) -> Y. With order NCHW (default):
 * X (N, C, d1..dn), filter (M, C / group, k1..kn), Y (N, M, o1..on); with
 * NHWC: X (N, d1..dn, C), filter (M, k1..kn, C / group), Y (N, o1..on, M);
 * bias (M,) (2 inputs: no bias). The spatial arguments (kernel, stride, pad,
 * dilation, legacy_pad) are those of ConvPoolOpBase (ops/convpool.h); the
 * kernel must be the filter's spatial dims. group (default 1) must divide C
 * and M: output channels [g M/G, (g+1) M/G) see input channels
 * [g C/G, (g+1) C/G). Caffe2's CPU op accepts group with dilation (only its
 * old cuDNN engine refused it); so do we.
 *   Y[n, m, o] = bias[m] + sum_{c, a} filter[m, c, a] X[n, g C/G + c, o s - p + a d]
 * (positions outside X are 0).
 * ConvGradient(X, filter, dY) -> (dfilter, dbias[, dX]), or with argument
 * no_bias=1 (dfilter[, dX]).
 *
 * Method: im2col (the patches of one image and group into a column buffer)
 * and one rc_sgemm per image and group; the gradient of X is col2im of
 * filter^T dY. A 1x1 kernel with stride 1 and no pad reads X itself. The
 * images run in up to 8 shares over OpenBLAS's thread count (rc_par_run's
 * threads), each product on one OpenBLAS thread (CV_SHARES, cv_threads).
 * Sums: the products in OpenBLAS's fixed order; dfilter accumulates each
 * share's images in order (beta = 1), then adds the shares in order; dbias
 * sums dY in double in memory order per share, then the shares in order;
 * col2im adds in a fixed loop order: the same bits every run, and from two
 * images on for any thread count (outside step loops; one image's products
 * use OpenBLAS's threads).
 * Not in Caffe2 (it crashed or asserted): empty tensors (N = 0, C = 0,
 * M = 0, an empty spatial dim) give empty or zero outputs; NaN and Inf
 * propagate. The engine, exhaustive_search, ws_nbytes_limit, shared_buffer,
 * float16_compute, cudnn_* and similar arguments are accepted and ignored.
 * The state is the parsed arguments and the scratch: a column buffer per
 * thread, the shares' dfilter and dbias sums (sized on the first run and
 * when they grow).
 *
 * Im2Col and Col2Im (Caffe2's im2col_op.h) are here too: they run cv_cols,
 * the column kernel of Conv and ConvGradient (their section below).
 */
#include "../core/rc_core.h"
#include "convpool.h"
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ geometry */

/* The spatial dims of one convolution, padded in front to CV_D dims (size 1,
 * kernel 1, stride 1, dilation 1, pad 0). */
#define CV_D RC_CP_MAX_ND

typedef struct {
    rc_cp_geom cp; /* as the base gives it */
    int nd, nhwc;
    int64_t N, C, M, G, Cg, Mg;
    int64_t in[CV_D], out[CV_D], k[CV_D], s[CV_D], d[CV_D], p[CV_D]; /* p: the head pads */
    int64_t S_in, P, ksize, Kg;                                     /* Kg: a group's filter row (Cg ksize) */
    int identity;                                                    /* 1x1, stride 1, no pad: col = X */
    int S, T; /* the shares of the images, the threads that run them (cv_scratch) */
} cv_geom;

/* ================================================================ kernels */

/* The outputs o in [*lo, *hi) of a dim whose input position o s + off lies in [0, n). */
static void cv_span(int64_t n, int64_t out, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s, b = off >= n ? 0 : (n - off + s - 1) / s;
    *lo = a < out ? a : out;
    *hi = b < *lo ? *lo : b < out ? b : out;
}

/* im2col (back = 0): the patches of one image and group into col; col2im
 * (back = 1): img += col at the same places (img zeroed by the caller).
 * img: the image's first channel of the group; channel stride cs, position
 * stride ps (NCHW: S_in, 1; NHWC: 1, C). NCHW col: (Kg, P), row c ksize + a;
 * NHWC col: (P, Kg), column a Cg + c (a: the kernel offset's flat index). */
static void cv_cols(const cv_geom *g, int back, float *img, float *col)
{
    const int64_t *in = g->in, *out = g->out, *k = g->k, *s = g->s, *d = g->d, *p = g->p;
    if (!g->nhwc) { /* the last dim's row in runs: zeros, the inputs in range, zeros */
        const int64_t cs = g->S_in, s2 = s[2];
        float *dst = col;
        for (int64_t c = 0; c < g->Cg; c++) {
            float *ic = img + c * cs;
            for (int64_t a0 = 0; a0 < k[0]; a0++)
                for (int64_t a1 = 0; a1 < k[1]; a1++)
                    for (int64_t a2 = 0; a2 < k[2]; a2++) {
                        const int64_t off = a2 * d[2] - p[2]; /* i2 = o2 s2 + off */
                        int64_t lo, hi;
                        cv_span(in[2], out[2], s2, off, &lo, &hi);
                        for (int64_t o0 = 0; o0 < out[0]; o0++) {
                            const int64_t i0 = o0 * s[0] - p[0] + a0 * d[0];
                            if (i0 < 0 || i0 >= in[0]) {
                                if (!back) memset(dst, 0, (size_t)(out[1] * out[2]) * sizeof *dst);
                                dst += out[1] * out[2];
                                continue;
                            }
                            for (int64_t o1 = 0; o1 < out[1]; o1++, dst += out[2]) {
                                const int64_t i1 = o1 * s[1] - p[1] + a1 * d[1];
                                if (i1 < 0 || i1 >= in[1] || lo == hi) {
                                    if (!back) memset(dst, 0, (size_t)out[2] * sizeof *dst);
                                    continue;
                                }
                                float *row = ic + (i0 * in[1] + i1) * in[2] + off;
                                if (back) {
                                    for (int64_t o2 = lo; o2 < hi; o2++) row[o2 * s2] += dst[o2];
                                    continue;
                                }
                                /* no calls for empty parts: rows are short on small images
                                 * (training 1.05-1.14x faster on conv_benchmark's suite) */
                                if (lo) memset(dst, 0, (size_t)lo * sizeof *dst);
                                if (s2 == 1)
                                    memcpy(dst + lo, row + lo, (size_t)(hi - lo) * sizeof *dst);
                                else
                                    for (int64_t o2 = lo; o2 < hi; o2++) dst[o2] = row[o2 * s2];
                                if (hi < out[2]) memset(dst + hi, 0, (size_t)(out[2] - hi) * sizeof *dst);
                            }
                        }
                    }
        }
        return;
    }
    const int64_t ps = g->C, Cg = g->Cg;
    /* one group and no dilation along the last dim: a patch row's cells in
     * range are one run of X (and of col), copied or added at once */
    const int runs = Cg == ps && d[2] == 1;
    float *dst = col;
    for (int64_t o0 = 0; o0 < out[0]; o0++)
        for (int64_t o1 = 0; o1 < out[1]; o1++)
            for (int64_t o2 = 0; o2 < out[2]; o2++)
                for (int64_t a0 = 0; a0 < k[0]; a0++) {
                    const int64_t i0 = o0 * s[0] - p[0] + a0 * d[0];
                    for (int64_t a1 = 0; a1 < k[1]; a1++) {
                        const int64_t i1 = o1 * s[1] - p[1] + a1 * d[1];
                        if (runs) {
                            /* i2 = b2 + a2 in [0, in[2]) for a2 in [alo, ahi) */
                            const int64_t b2 = o2 * s[2] - p[2];
                            const int row = i0 >= 0 && i0 < in[0] && i1 >= 0 && i1 < in[1];
                            int64_t alo = b2 < 0 ? -b2 : 0, ahi = in[2] - b2 < k[2] ? in[2] - b2 : k[2];
                            if (alo > k[2]) alo = k[2];
                            if (!row || ahi < alo) ahi = alo;
                            const int64_t n = (ahi - alo) * Cg;
                            float *src = n ? img + ((i0 * in[1] + i1) * in[2] + b2 + alo) * ps : NULL;
                            float *dr = dst + alo * Cg;
                            if (back) {
                                for (int64_t j = 0; j < n; j++) src[j] += dr[j];
                            } else {
                                /* (no calls for empty parts: the runs are short for few channels) */
                                if (alo) memset(dst, 0, (size_t)(alo * Cg) * sizeof *dst);
                                if (n) memcpy(dr, src, (size_t)n * sizeof *dst);
                                if (ahi < k[2]) memset(dr + n, 0, (size_t)((k[2] - ahi) * Cg) * sizeof *dst);
                            }
                            dst += k[2] * Cg;
                            continue;
                        }
                        for (int64_t a2 = 0; a2 < k[2]; a2++, dst += Cg) {
                            const int64_t i2 = o2 * s[2] - p[2] + a2 * d[2];
                            const int ok = i0 >= 0 && i0 < in[0] && i1 >= 0 && i1 < in[1] && i2 >= 0 && i2 < in[2];
                            float *src = ok ? img + ((i0 * in[1] + i1) * in[2] + i2) * ps : NULL;
                            if (back) {
                                if (ok)
                                    for (int64_t c = 0; c < Cg; c++) src[c] += dst[c];
                            } else if (ok) {
                                memcpy(dst, src, (size_t)Cg * sizeof *dst);
                            } else {
                                memset(dst, 0, (size_t)Cg * sizeof *dst);
                            }
                        }
                    }
                }
}

/* The image n, group grp: its first channel in X (or dX). */
static float *cv_img(const cv_geom *g, const float *x, int64_t n, int64_t grp)
{
    return (float *)x + (g->nhwc ? n * g->S_in * g->C + grp * g->Cg : (n * g->C + grp * g->Cg) * g->S_in);
}

/* The columns of image n, group grp: X itself when the convolution is the
 * identity on positions (NCHW, or NHWC with one group), else im2col in buf. */
static const float *cv_col_of(const cv_geom *g, const float *x, int64_t n, int64_t grp, float *buf)
{
    float *img = cv_img(g, x, n, grp);
    if (g->identity && (!g->nhwc || g->G == 1)) return img;
    cv_cols(g, 0, img, buf);
    return buf;
}

/* One image y (ch, pos) / (pos, ch) += the bias b (ch). */
static void cv_add_bias(int nhwc, int64_t ch, int64_t pos, const float *b, float *y)
{
    if (!nhwc) {
        for (int64_t m = 0; m < ch; m++)
            for (int64_t q = 0; q < pos; q++) y[m * pos + q] += b[m];
    } else {
        for (int64_t q = 0; q < pos; q++)
            for (int64_t m = 0; m < ch; m++) y[q * ch + m] += b[m];
    }
}

/* dbuf (ch doubles) = the sums of images [n0, n1) of dy (N, ch, pos) /
 * (N, pos, ch) over all but the channels, in double in memory order. */
static void cv_sum_bias_images(int nhwc, int64_t n0, int64_t n1, int64_t ch, int64_t pos, const float *dy,
                               double *dbuf)
{
    memset(dbuf, 0, (size_t)ch * sizeof *dbuf);
    for (int64_t n = n0; n < n1; n++) {
        const float *dyn = dy + n * ch * pos;
        if (!nhwc) {
            for (int64_t m = 0; m < ch; m++)
                for (int64_t q = 0; q < pos; q++) dbuf[m] += (double)dyn[m * pos + q];
        } else {
            for (int64_t q = 0; q < pos; q++)
                for (int64_t m = 0; m < ch; m++) dbuf[m] += (double)dyn[q * ch + m];
        }
    }
}

/* db (ch) = the sums of all N images (as above; dbuf: ch doubles). */
static void cv_sum_bias(int nhwc, int64_t N, int64_t ch, int64_t pos, const float *dy, float *db, double *dbuf)
{
    cv_sum_bias_images(nhwc, 0, N, ch, pos, dy, dbuf);
    for (int64_t m = 0; m < ch; m++) db[m] = (float)dbuf[m];
}

/* Images [n0, n1) of Y = conv(X, W) + b. buf: Kg P floats; ybuf (NHWC,
 * G > 1): P Mg floats. X (N, C, in) / (N, in, C); W (M, Kg); Y (N, M, P) /
 * (N, P, M). */
static void cv_forward_images(const cv_geom *g, int64_t n0, int64_t n1, const float *x, const float *w,
                              const float *b, float *y, float *buf, float *ybuf)
{
    const int64_t P = g->P, M = g->M, Mg = g->Mg, Kg = g->Kg;
    for (int64_t n = n0; n < n1; n++) {
        float *yn = y + n * M * P;
        for (int64_t grp = 0; grp < g->G; grp++) {
            const float *col = cv_col_of(g, x, n, grp, buf);
            const float *wg = w + grp * Mg * Kg;
            if (!g->nhwc) {
                rc_sgemm(0, 0, Mg, P, Kg, 1.0f, wg, col, 0.0f, yn + grp * Mg * P);
            } else if (g->G == 1) {
                rc_sgemm(0, 1, P, M, Kg, 1.0f, col, wg, 0.0f, yn);
            } else {
                rc_sgemm(0, 1, P, Mg, Kg, 1.0f, col, wg, 0.0f, ybuf);
                for (int64_t q = 0; q < P; q++) memcpy(yn + q * M + grp * Mg, ybuf + q * Mg, (size_t)Mg * sizeof *yn);
            }
        }
        if (b) cv_add_bias(g->nhwc, M, P, b, yn);
    }
}

/* Images [n0, n1) of the backward pass: dW (M, Kg) = their sum and their
 * dX (both written, not added to); either may be NULL. buf and ybuf as
 * cv_forward_images'. */
static void cv_backward_images(const cv_geom *g, int64_t n0, int64_t n1, const float *x, const float *w,
                               const float *dy, float *dw, float *dx, float *buf, float *ybuf)
{
    const int64_t P = g->P, M = g->M, Mg = g->Mg, Kg = g->Kg, G = g->G, img = g->C * g->S_in;
    if (dx) memset(dx + n0 * img, 0, (size_t)((n1 - n0) * img) * sizeof *dx);
    for (int64_t n = n0; n < n1; n++) {
        const float *dyn = dy + n * M * P;
        for (int64_t grp = 0; grp < G; grp++) {
            const float *wg = w + grp * Mg * Kg;
            const float *dyg = dyn + grp * Mg * P; /* NCHW: (Mg, P) */
            if (g->nhwc) {
                dyg = dyn;
                if (G > 1) {
                    for (int64_t q = 0; q < P; q++) memcpy(ybuf + q * Mg, dyn + q * M + grp * Mg, (size_t)Mg * 4);
                    dyg = ybuf;
                } /* (P, Mg) */
            }
            if (dw) {
                const float *col = cv_col_of(g, x, n, grp, buf);
                float *dwg = dw + grp * Mg * Kg;
                const float beta = n == n0 ? 0.0f : 1.0f;
                if (g->nhwc)
                    rc_sgemm(1, 0, Mg, Kg, P, 1.0f, dyg, col, beta, dwg);
                else
                    rc_sgemm(0, 1, Mg, Kg, P, 1.0f, dyg, col, beta, dwg);
            }
            if (!dx) continue;
            float *img = cv_img(g, dx, n, grp);
            const int direct = g->identity && (!g->nhwc || G == 1);
            float *dcol = direct ? img : buf;
            if (g->nhwc)
                rc_sgemm(0, 0, P, Kg, Mg, 1.0f, dyg, wg, 0.0f, dcol);
            else
                rc_sgemm(1, 0, Kg, P, Mg, 1.0f, wg, dyg, 0.0f, dcol);
            if (!direct) cv_cols(g, 1, img, dcol);
        }
    }
}

/* The images are cut into S = min(N, CV_SHARES) shares of consecutive
 * images, share k images [N k / S, N (k + 1) / S); the filter gradient is
 * each share's sum (one chain of products over its images), then the
 * shares' sums added in share order (dbias alike, in double). The shares
 * depend on N only, so dW and db have the same bits whatever OpenBLAS's
 * thread count (every product runs on one OpenBLAS thread from two images
 * on); Y and dX do not depend on the split at all. */
#define CV_SHARES 8

/* The threads that run the shares: rc_op_split_threads (OpenBLAS's thread
 * count; 1 inside a step loop, where rc_sgemm splits each product over the
 * loop's threads itself), at most S; 1 for fewer than 2 images or
 * positions. Each thread
 * runs its products on one OpenBLAS thread: one image's products are too
 * small for OpenBLAS's threads to pay (benchmarks/conv_benchmark.py). */
static int cv_threads(const cv_geom *g)
{
    if (g->S < 2 || g->P < 1) return 1;
    const int t = rc_op_split_threads();
    return t < g->S ? t : g->S;
}

/* A run over the shares. Thread p's scratch: a column buffer and a group
 * buffer, slices p of buf and ybuf; dwp: the dW sums of shares 1 .. S - 1;
 * dbuf: every share's bias sums (cv_scratch sizes them). */
typedef struct {
    const cv_geom *g;
    int backward;
    const float *x, *w, *b, *dy;
    float *y, *dw, *dx;
    float *buf, *ybuf, *dwp;
    double *dbuf; /* backward with db: share k's bias sums at k M */
    int64_t buf_each, ybuf_each;
} cv_job;

/* Thread p of T: shares p, p + T, ...; share k's dW sum into dw (k = 0) or
 * dwp's slice k - 1. */
static void cv_part(const void *ctx, int p, int parts)
{
    const cv_job *j = ctx;
    const cv_geom *g = j->g;
    float *buf = j->buf + p * j->buf_each, *ybuf = j->ybuf ? j->ybuf + p * j->ybuf_each : NULL;
    for (int k = p; k < g->S; k += parts) {
        const int64_t n0 = g->N * k / g->S, n1 = g->N * (k + 1) / g->S;
        if (!j->backward) {
            cv_forward_images(g, n0, n1, j->x, j->w, j->b, j->y, buf, ybuf);
            continue;
        }
        float *dw = !j->dw ? NULL : k == 0 ? j->dw : j->dwp + (k - 1) * g->M * g->Kg;
        cv_backward_images(g, n0, n1, j->x, j->w, j->dy, dw, j->dx, buf, ybuf);
        if (j->dbuf) cv_sum_bias_images(g->nhwc, n0, n1, g->M, g->P, j->dy, j->dbuf + k * g->M);
    }
}

/* Runs j's images over g->T threads: rc_par_run's, each product on one
 * OpenBLAS thread (rc_blas_executor_enter, as the RNN executor's workers). */
static void cv_parts(const cv_job *j)
{
    if (j->g->T < 2) {
        cv_part(j, 0, 1);
        return;
    }
    rc_blas_executor_enter();
    rc_par_run(j->g->T, j->g->T, cv_part, j);
    rc_blas_executor_leave();
}

/* ================================================================ state */

typedef struct {
    rc_cp_args cp;
    int64_t group;
    int no_bias, grad, transposed;
    int64_t adj[RC_CP_MAX_ND]; /* ConvTranspose: the extra output positions at each dim's tail */
    float *buf, *ybuf, *dwp; /* owned scratch: g->T slices, dwp g->S - 1 (cv_scratch) */
    double *dbuf;
    int64_t buf_n, ybuf_n, dwp_n, dbuf_n;
} cv_state;

static void cv_free(void *p)
{
    cv_state *s = p;
    if (!s) return;
    free(s->buf);
    free(s->ybuf);
    free(s->dwp);
    free(s->dbuf);
    free(s);
}

/* ConvTranspose's own arguments: adjs / adj / adj_h + adj_w (default 0, each
 * in [0, stride]); legacy_pad CAFFE_LEGACY_POOLING refused (Caffe2 aborted). */
static rc_status ct_parse(rc_op *op, cv_state *s, rc_err *err)
{
    static const char *const aparts[] = {"adj_h", "adj_w"};
    const int nd = s->cp.nd;
    int na = 0;
    rc_status st = rc_cp_family(op, "adjs", "adj", 2, aparts, 2, s->adj, RC_CP_MAX_ND, &na, err);
    if (st) return st;
    if (s->cp.legacy_pad == RC_CP_CAFFE_LEGACY_POOLING)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument legacy_pad 3 (CAFFE_LEGACY_POOLING) is not supported by "
                          "the transposed convolution (give 0 NOTSET, 1 VALID or 2 SAME)");
    if (na != 0 && na != nd)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument adjs has %d values for a %d-D kernel", na, nd);
    for (int i = 0; i < nd; i++) {
        if (na == 0) s->adj[i] = 0;
        if (s->adj[i] < 0 || s->adj[i] > s->cp.stride[i])
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument adjs: value %d is %lld, must lie in [0, stride %lld]",
                              i, (long long)s->adj[i], (long long)s->cp.stride[i]);
    }
    return RC_OK;
}

static rc_status cv_setup_common(rc_op *op, int grad, int transposed, rc_err *err)
{
    cv_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    s->grad = grad;
    s->transposed = transposed;
    rc_status st = rc_cp_parse(op, RC_CP_CONV, &s->cp, err);
    if (st || (transposed && (st = ct_parse(op, s, err)))) return st;
    if ((st = rc_arg_i(&op->def, "group", 1, &s->group, err))) return st;
    if (s->group < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument group must be >= 1, got %lld", (long long)s->group);
    if (!grad) return RC_OK;
    int64_t nb = 0;
    if ((st = rc_arg_i(&op->def, "no_bias", 0, &nb, err))) return st;
    s->no_bias = nb != 0;
    if (s->no_bias ? op->n_out > 2 : op->n_out < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s, got %d outputs",
                          s->no_bias ? "with no_bias=1 gives 1 or 2 outputs (dfilter[, dX])"
                                     : "gives 2 or 3 outputs (dfilter, dbias[, dX]); with no_bias=1 (dfilter[, dX])",
                          op->n_out);
    return RC_OK;
}

static rc_status cv_setup(rc_op *op, rc_err *err) { return cv_setup_common(op, 0, 0, err); }

static rc_status cv_grad_setup(rc_op *op, rc_err *err) { return cv_setup_common(op, 1, 0, err); }

static rc_status ct_setup(rc_op *op, rc_err *err) { return cv_setup_common(op, 0, 1, err); }

static rc_status ct_grad_setup(rc_op *op, rc_err *err) { return cv_setup_common(op, 1, 1, err); }

/* ================================================================ shapes */

/* The identity flag of a checked g; each product's dims go to the BLAS as
 * int (a MemoryError beyond). */
static rc_status cv_finish(rc_op *op, cv_geom *g, rc_err *err)
{
    g->identity = 1;
    for (int i = 0; i < CV_D; i++)
        g->identity &= g->k[i] == 1 && g->s[i] == 1 && g->p[i] == 0 && g->out[i] == g->in[i];
    const int64_t dims[] = {g->P, g->Kg, g->M};
    for (int i = 0; i < 3; i++)
        if (dims[i] > INT_MAX)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s with filter %s: a product dimension "
                              "of %lld is beyond the BLAS's int range", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)),
                              RC_SHAPE(rc_in(op, 1)), (long long)dims[i]);
    return RC_OK;
}

/* g's positions from the base's geometry cg (padded in front to CV_D dims),
 * with G groups; the channels per group, the filter and the identity flag are
 * the caller's. */
static void cv_geom_from(cv_geom *g, const rc_cp_geom *cg, int nhwc, int64_t G)
{
    memset(g, 0, sizeof *g);
    g->cp = *cg;
    g->nd = cg->nd;
    g->nhwc = nhwc;
    g->N = cg->N;
    g->C = cg->C;
    g->G = G;
    const int lead = CV_D - g->nd;
    g->S_in = g->P = g->ksize = 1;
    for (int i = 0; i < CV_D; i++) {
        const int j = i - lead;
        g->in[i] = j < 0 ? 1 : cg->in[j];
        g->out[i] = j < 0 ? 1 : cg->out[j];
        g->k[i] = j < 0 ? 1 : cg->kernel[j];
        g->s[i] = j < 0 ? 1 : cg->stride[j];
        g->d[i] = j < 0 ? 1 : cg->dilation[j];
        g->p[i] = j < 0 ? 0 : cg->pad_head[j];
        g->S_in *= g->in[i];
        g->P *= g->out[i];
        g->ksize *= g->k[i];
    }
}

/* X (input 0), the filter (input 1) and, when bias_i >= 0, the bias -> g. */
static rc_status cv_shapes(rc_op *op, int bias_i, cv_geom *g, rc_err *err)
{
    const cv_state *s = op->state;
    rc_cp_geom cg;
    rc_status st = rc_cp_geometry(op, &s->cp, 0, &cg, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    cv_geom_from(g, &cg, s->cp.nhwc, s->group);
    if (g->C % g->G != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument group=%lld must divide the %lld channels of input 0 blob "
                          "'%s' %s (order %s)", (long long)g->G, (long long)g->C, rc_in_name(op, 0), RC_SHAPE(x),
                          g->nhwc ? "NHWC" : "NCHW");
    g->Cg = g->C / g->G;
    if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *w = rc_in(op, 1);
    int ok = w->ndim == x->ndim && w->dims[0] % g->G == 0 && w->dims[g->nhwc ? w->ndim - 1 : 1] == g->Cg;
    for (int j = 0; ok && j < g->nd; j++) ok = w->dims[g->nhwc ? 1 + j : 2 + j] == cg.kernel[j];
    if (!ok) {
        char want[160];
        int n = snprintf(want, sizeof want, "(M%s", g->nhwc ? "" : ", ");
        if (!g->nhwc) n += snprintf(want + n, sizeof want - (size_t)n, "%lld", (long long)g->Cg);
        for (int j = 0; j < g->nd && n < (int)sizeof want; j++)
            n += snprintf(want + n, sizeof want - (size_t)n, ", %lld", (long long)cg.kernel[j]);
        if (g->nhwc && n < (int)sizeof want)
            n += snprintf(want + n, sizeof want - (size_t)n, ", %lld", (long long)g->Cg);
        if (n < (int)sizeof want) snprintf(want + n, sizeof want - (size_t)n, ")");
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (filter) must have shape %s with M a multiple of "
                          "group=%lld (X %s, order %s, kernel from the arguments), got %s", rc_in_name(op, 1), want,
                          (long long)g->G, RC_SHAPE(x), g->nhwc ? "NHWC" : "NCHW", RC_SHAPE(w));
    }
    g->M = w->dims[0];
    g->Mg = g->M / g->G;
    g->Kg = g->Cg * g->ksize;
    if (bias_i >= 0 && bias_i < op->n_in) {
        if ((st = rc_check_input(op, bias_i, RC_F32, err))) return st;
        const rc_tensor *b = rc_in(op, bias_i);
        if (b->ndim != 1 || b->dims[0] != g->M)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (bias) must have shape (%lld) (M, the "
                              "filter's first dim), got %s", bias_i, rc_in_name(op, bias_i), (long long)g->M,
                              RC_SHAPE(b));
    }
    return cv_finish(op, g, err);
}

/* The output shape (N, M, out) / (N, out, M) into dims; returns its ndim. */
static int cv_out_dims(rc_op *op, const cv_geom *g, int64_t *dims)
{
    const cv_state *s = op->state;
    rc_cp_out_dims(&s->cp, &g->cp, g->M, dims);
    return g->nd + 2;
}

static rc_status ct_shapes(rc_op *op, int bias_i, cv_geom *g, rc_err *err);
static int ct_out_dims(const cv_geom *g, int64_t *dims);

/* ConvGradient / ConvTransposeGradient: dY (input 2) must have the forward
 * op's output shape. */
static rc_status cv_grad_shapes(rc_op *op, cv_geom *g, rc_err *err)
{
    const int tr = ((const cv_state *)op->state)->transposed;
    rc_status st = tr ? ct_shapes(op, -1, g, err) : cv_shapes(op, -1, g, err);
    if (st || (st = rc_check_input(op, 2, RC_F32, err))) return st;
    rc_tensor want;
    rc_tensor_init(&want);
    want.dtype = RC_F32;
    want.ndim = tr ? ct_out_dims(g, want.dims) : cv_out_dims(op, g, want.dims);
    const rc_tensor *dy = rc_in(op, 2);
    if (rc_tensor_same_shape(dy, &want)) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (dY) must have the shape of %s's output %s "
                      "(X %s, filter %s), got %s", rc_in_name(op, 2), tr ? "ConvTranspose" : "Conv",
                      RC_SHAPE(&want), RC_SHAPE(rc_in(op, 0)), RC_SHAPE(rc_in(op, 1)), RC_SHAPE(dy));
}

static rc_status cv_check(rc_op *op, rc_err *err)
{
    cv_geom g;
    return ((const cv_state *)op->state)->transposed ? ct_shapes(op, 2, &g, err) : cv_shapes(op, 2, &g, err);
}

static rc_status cv_grad_check(rc_op *op, rc_err *err)
{
    cv_geom g;
    return cv_grad_shapes(op, &g, err);
}

/* ================================================================ ConvTranspose shapes */

/* ConvTranspose is the gradient of a convolution with respect to its input:
 * its Y is that convolution's X, its X the convolution's output. g gets that
 * convolution's geometry: C = the output channels of ConvTranspose (filter
 * dim 1 (NHWC: its last) times group), M = its input channels, in = Y's
 * spatial sizes ((x - 1) stride + dilation (kernel - 1) + 1 + adj - pads),
 * out = X's. X (input 0), the filter (input 1) and, when bias_i >= 0, the
 * bias are checked. */
static rc_status ct_shapes(rc_op *op, int bias_i, cv_geom *g, rc_err *err)
{
    const cv_state *s = op->state;
    const rc_cp_args *a = &s->cp;
    const char *order = a->nhwc ? "NHWC" : "NCHW";
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int nd = a->nd, lead = CV_D - nd;
    if (x->ndim != nd + 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s must have %d dims for a %d-D kernel (order %s: "
                          "%s)", rc_in_name(op, 0), RC_SHAPE(x), nd + 2, nd, order,
                          a->nhwc ? "N, spatial dims, C" : "N, C, spatial dims");
    memset(g, 0, sizeof *g);
    g->nd = nd;
    g->nhwc = a->nhwc;
    g->N = x->dims[0];
    g->M = a->nhwc ? x->dims[x->ndim - 1] : x->dims[1];
    g->G = s->group;
    g->S_in = g->P = g->ksize = 1;
    for (int i = 0; i < CV_D; i++) {
        const int j = i - lead;
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
        if (j >= 0) {
            const int64_t xin = x->dims[a->nhwc ? 1 + j : 2 + j], k = a->kernel[j], st_ = a->stride[j];
            const int64_t d = a->dilation[j];
            const int64_t ph = a->pads[j], pt = a->pads[nd + j]; /* 0 with legacy_pad VALID / SAME */
            int64_t y;
            if (xin < 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (order %s) has spatial size 0 in dim %d",
                                  rc_in_name(op, 0), RC_SHAPE(x), order, j);
            if (__builtin_mul_overflow(xin - 1, st_, &y) ||
                __builtin_add_overflow(y, d * (k - 1) + 1 + s->adj[j], &y))
                return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s: the output size in dim %d is beyond "
                                  "2^63", rc_in_name(op, 0), RC_SHAPE(x), j);
            y -= ph + pt;
            if (y < 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (order %s): the output size in dim %d, "
                                  "(%lld - 1) * stride %lld + dilation %lld * (kernel %lld - 1) + 1 + adj %lld - pads "
                                  "%lld - %lld = %lld, must be >= 1", rc_in_name(op, 0), RC_SHAPE(x), order, j,
                                  (long long)xin, (long long)st_, (long long)d, (long long)k, (long long)s->adj[j],
                                  (long long)ph, (long long)pt, (long long)y);
            g->in[i] = y, g->out[i] = xin, g->k[i] = k, g->s[i] = st_, g->d[i] = d, g->p[i] = ph;
        }
        if (__builtin_mul_overflow(g->S_in, g->in[i], &g->S_in))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s: the output has more than 2^63 positions",
                              rc_in_name(op, 0), RC_SHAPE(x));
        g->P *= g->out[i];
        g->ksize *= g->k[i];
    }
    if (g->M % g->G != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument group=%lld must divide the %lld channels of input 0 blob "
                          "'%s' %s (order %s)", (long long)g->G, (long long)g->M, rc_in_name(op, 0), RC_SHAPE(x),
                          order);
    g->Mg = g->M / g->G;
    if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *w = rc_in(op, 1);
    int ok = w->ndim == x->ndim && w->dims[0] == g->M;
    for (int j = 0; ok && j < nd; j++) ok = w->dims[a->nhwc ? 1 + j : 2 + j] == a->kernel[j];
    if (!ok) {
        char want[160];
        int n = snprintf(want, sizeof want, "(%lld%s", (long long)g->M, a->nhwc ? "" : ", C/group");
        for (int j = 0; j < nd && n < (int)sizeof want; j++)
            n += snprintf(want + n, sizeof want - (size_t)n, ", %lld", (long long)a->kernel[j]);
        if (n < (int)sizeof want) snprintf(want + n, sizeof want - (size_t)n, "%s)", a->nhwc ? ", C/group" : "");
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (filter) must have shape %s (X %s: its channels "
                          "first; order %s, kernel from the arguments), got %s", rc_in_name(op, 1), want, RC_SHAPE(x),
                          order, RC_SHAPE(w));
    }
    g->Cg = w->dims[a->nhwc ? w->ndim - 1 : 1];
    if (__builtin_mul_overflow(g->Cg, g->G, &g->C) || __builtin_mul_overflow(g->Cg, g->ksize, &g->Kg))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "input 1 blob '%s' (filter) %s with group=%lld: too many output "
                          "channels", rc_in_name(op, 1), RC_SHAPE(w), (long long)g->G);
    if (bias_i >= 0 && bias_i < op->n_in) {
        if ((st = rc_check_input(op, bias_i, RC_F32, err))) return st;
        const rc_tensor *b = rc_in(op, bias_i);
        if (b->ndim != 1 || b->dims[0] != g->C)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (bias) must have shape (%lld) (the output "
                              "channels: filter %s, group=%lld), got %s", bias_i, rc_in_name(op, bias_i),
                              (long long)g->C, RC_SHAPE(w), (long long)g->G, RC_SHAPE(b));
    }
    return cv_finish(op, g, err);
}

/* ConvTranspose's output shape (N, C, in...) / (N, in..., C) into dims; returns its ndim. */
static int ct_out_dims(const cv_geom *g, int64_t *dims)
{
    const int lead = CV_D - g->nd;
    dims[0] = g->N;
    for (int j = 0; j < g->nd; j++) dims[(g->nhwc ? 1 : 2) + j] = g->in[lead + j];
    dims[g->nhwc ? g->nd + 1 : 1] = g->C;
    return g->nd + 2;
}

/* ================================================================ run */

/* *p has room for n elements of size sz (grown with realloc). */
static rc_status cv_grow(rc_op *op, void **p, int64_t *have, int64_t n, size_t sz, const char *what, rc_err *err)
{
    if (n <= *have) return RC_OK;
    void *b = n < (int64_t)(SIZE_MAX / 2 / sz) ? realloc(*p, (size_t)n * sz) : NULL;
    if (!b)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "cannot allocate the %s (%lld elements) for input 0 blob '%s' %s",
                          what, (long long)n, rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    *p = b;
    *have = n;
    return RC_OK;
}

/* g->S and g->T (CV_SHARES, cv_threads) and the scratch for T threads: T
 * column buffers (Kg P floats each), T group buffers (Mg P, for NHWC
 * groups) and, for the gradients, the dW sums of shares 1 .. S - 1 (M Kg
 * each). */
static rc_status cv_scratch(rc_op *op, cv_geom *g, rc_err *err)
{
    cv_state *s = op->state;
    g->S = g->N < 1 ? 1 : g->N < CV_SHARES ? (int)g->N : CV_SHARES;
    g->T = cv_threads(g);
    int64_t n = 0;
    if (__builtin_mul_overflow(g->Kg, g->P, &n) || __builtin_mul_overflow(n > 0 ? n : 1, (int64_t)g->T, &n))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "the column buffer of input 0 blob '%s' %s (%lld x %lld) overflows",
                          rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), (long long)g->Kg, (long long)g->P);
    rc_status st = cv_grow(op, (void **)&s->buf, &s->buf_n, n, sizeof(float), "column buffer", err);
    if (st) return st;
    if (g->nhwc && g->G > 1) {
        if (__builtin_mul_overflow(g->Mg, g->P, &n) || __builtin_mul_overflow(n > 0 ? n : 1, (int64_t)g->T, &n))
            n = INT64_MAX;
        if ((st = cv_grow(op, (void **)&s->ybuf, &s->ybuf_n, n, sizeof(float), "group buffer", err))) return st;
    }
    if (s->grad && g->S > 1) {
        if (__builtin_mul_overflow(g->M, g->Kg, &n) || __builtin_mul_overflow(n, (int64_t)(g->S - 1), &n))
            n = INT64_MAX;
        if ((st = cv_grow(op, (void **)&s->dwp, &s->dwp_n, n > 0 ? n : 1, sizeof(float), "filter gradient shares",
                          err)))
            return st;
    }
    const int64_t nb = s->transposed ? g->C : g->M; /* the bias's channels */
    if (s->grad) /* the bias sums of every share */
        return cv_grow(op, (void **)&s->dbuf, &s->dbuf_n, nb > 0 ? nb * g->S : 1, sizeof(double), "bias sums", err);
    return RC_OK;
}

static rc_status cv_resize(rc_op *op, int o, int ndim, const int64_t *dims, rc_err *err)
{
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_F32, ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* Y = conv(X, W) + b over g->T threads (the op's scratch). */
static void cv_forward(const cv_geom *g, const cv_state *s, const float *x, const float *w, const float *b,
                       float *y)
{
    const cv_job j = {g, 0, x, w, b, NULL, y, NULL, NULL, s->buf, s->ybuf, NULL, NULL, g->Kg * g->P, g->Mg * g->P};
    cv_parts(&j);
}

/* dW (M, Kg), db (M) and dX (each may be NULL) from X, W, dY over g->T
 * threads: dW the shares' sums added in share order after them (CV_SHARES),
 * db dY's sums in double in memory order (s->dbuf). (ConvTranspose runs
 * this for its output: dY its X, dX its Y, no dW.) */
static void cv_backward(const cv_geom *g, const cv_state *s, const float *x, const float *w, const float *dy,
                        float *dw, float *db, float *dx)
{
    const int64_t M = g->M, Kg = g->Kg;
    if (dw && (g->N == 0 || g->P == 0)) memset(dw, 0, (size_t)(M * Kg) * sizeof *dw);
    const cv_job j = {g, 1, x, w, NULL, dy, NULL, dw, dx, s->buf, s->ybuf, s->dwp, db ? s->dbuf : NULL,
                      Kg * g->P, g->Mg * g->P};
    cv_parts(&j);
    for (int k = 1; dw && k < g->S; k++) {
        const float *share = s->dwp + (k - 1) * M * Kg;
        for (int64_t i = 0; i < M * Kg; i++) dw[i] += share[i];
    }
    for (int64_t m = 0; db && m < M; m++) {
        double sum = s->dbuf[m];
        for (int k = 1; k < g->S; k++) sum += s->dbuf[k * M + m];
        db[m] = (float)sum;
    }
}

/* Conv, and ConvTranspose: Y = col2im(W^T X) + bias (Conv's dX pass, X as
 * its dY). */
static rc_status cv_run(rc_op *op, rc_err *err)
{
    const cv_state *s = op->state;
    const int tr = s->transposed;
    cv_geom g;
    rc_status st = tr ? ct_shapes(op, 2, &g, err) : cv_shapes(op, 2, &g, err);
    if (st || (st = cv_scratch(op, &g, err))) return st;
    int64_t dims[RC_MAX_DIMS];
    const int nd = tr ? ct_out_dims(&g, dims) : cv_out_dims(op, &g, dims);
    if ((st = cv_resize(op, 0, nd, dims, err))) return st;
    /* an empty Y: nothing to compute (the image loops below would still walk every one of N images,
     * minutes for an empty X of N = 2^40) */
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK;
    const float *x = rc_f32(rc_in(op, 0)), *w = rc_f32(rc_in(op, 1));
    const float *b = op->n_in > 2 ? rc_f32(rc_in(op, 2)) : NULL;
    float *y = rc_f32(rc_out(op, 0));
    if (!tr) {
        cv_forward(&g, s, x, w, b, y);
        return RC_OK;
    }
    cv_backward(&g, s, NULL, w, x, NULL, NULL, y);
    if (b)
        for (int64_t n = 0; n < g.N; n++) cv_add_bias(g.nhwc, g.C, g.S_in, b, y + n * g.C * g.S_in);
    return RC_OK;
}

/* ConvGradient, and ConvTransposeGradient: its dfilter from im2col(dY) and X
 * (Conv's dW pass), dX = conv(dY, W) (Conv's forward), dbias the sums of dY. */
static rc_status cv_grad_run(rc_op *op, rc_err *err)
{
    const cv_state *s = op->state;
    cv_geom g;
    rc_status st = cv_grad_shapes(op, &g, err);
    if (st || (st = cv_scratch(op, &g, err))) return st;
    const int dbi = s->no_bias ? -1 : 1, dxi = s->no_bias ? 1 : 2;
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1);
    if ((st = cv_resize(op, 0, w->ndim, w->dims, err))) return st;
    if (dbi > 0 && (st = cv_resize(op, dbi, 1, s->transposed ? &g.C : &g.M, err))) return st;
    if (dxi < op->n_out && (st = cv_resize(op, dxi, x->ndim, x->dims, err))) return st;
    if (rc_tensor_numel(rc_in(op, 2)) == 0) {
        /* an empty dY: every output is a sum of products with dY's elements, so 0 (and the image loops
         * would walk every one of N images: minutes for N = 2^40) */
        for (int o = 0; o < op->n_out; o++) {
            const int64_t n = rc_tensor_numel(rc_out(op, o));
            if (n) memset(rc_f32(rc_out(op, o)), 0, (size_t)n * sizeof(float));
        }
        return RC_OK;
    }
    const float *xd = rc_f32(x), *wd = rc_f32(w), *dy = rc_f32(rc_in(op, 2));
    float *dw = rc_f32(rc_out(op, 0)), *db = dbi > 0 ? rc_f32(rc_out(op, dbi)) : NULL;
    float *dx = dxi < op->n_out ? rc_f32(rc_out(op, dxi)) : NULL;
    if (!s->transposed) {
        cv_backward(&g, s, xd, wd, dy, dw, db, dx);
        return RC_OK;
    }
    cv_backward(&g, s, dy, wd, xd, dw, NULL, NULL);
    if (dx) cv_forward(&g, s, dy, wd, NULL, dx);
    if (db) cv_sum_bias(g.nhwc, g.N, g.C, g.S_in, dy, db, s->dbuf);
    return RC_OK;
}

/* ================================================================ Im2Col / Col2Im */

/* Caffe2's Im2Col and Col2Im (im2col_op.h), 2-D, float32, on cv_cols (the
 * kernel Conv runs, with one group):
 *   Im2Col(X) -> Y: X (N, C, H, W) / NHWC (N, H, W, C); Y (N, C kh kw, oh, ow)
 *     / NHWC (N, oh, ow, kh kw C): row (c, a_h, a_w) / column (a_h, a_w, c) of
 *     image n holds X[n, c, o_h s_h - p_t + a_h d_h, o_w s_w - p_l + a_w d_w]
 *     (0 outside X), oh = (H + p_t + p_b - d_h (kh - 1) - 1) / s_h + 1.
 *   Col2Im(X, Z) -> Y: Y has Z's shape (Z of any dtype: only its shape is
 *     read); X has Im2Col's output shape for Z; Y = the adjoint of Im2Col:
 *     every column cell added onto the image cell it came from (float, in
 *     cv_cols' fixed order). Im2Col's gradient is Col2Im(dY, X), Col2Im's
 *     Im2Col(dY), as Caffe2 registered them.
 * Arguments: ConvPoolOpBase's as Conv's (ops/convpool.h), a 2-D kernel,
 * legacy_pad 0; Caffe2 read kernel / kernel_h + kernel_w, stride(_h, _w),
 * dilation(_h, _w) and one `pad` for all four sides: those forms mean the
 * same here, and `pads` / pad_t.. give other pads per side.
 * Where Caffe2 differs: it required H >= the dilated kernel even when the
 * pads made the window fit (here the padded size must fit it, as Conv's); it
 * divided by N (a crash for N = 0: here an empty Y); Col2Im compared element
 * counts only (here X must have Im2Col's shape: a column tensor of another
 * layout with the same count would be read in the wrong order). */

static rc_status im_setup(rc_op *op, rc_err *err)
{
    cv_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    s->group = 1;
    rc_status st = rc_cp_parse(op, RC_CP_CONV, &s->cp, err);
    if (st) return st;
    if (s->cp.nd != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes a 2-D kernel (kernel, kernel_h + kernel_w, or kernels with "
                          "2 values), got %d-D", s->cp.nd);
    if (s->cp.legacy_pad != RC_CP_NOTSET)
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes explicit pads only: argument legacy_pad must be 0 (NOTSET), "
                          "got %d", s->cp.legacy_pad);
    return RC_OK;
}

/* The geometry of the image: X for Im2Col (float32), Z (input 1, any dtype)
 * for Col2Im; *cols gets the column tensor's shape (4 dims). */
static rc_status im_shapes(rc_op *op, int col2im, cv_geom *g, int64_t *cols, rc_err *err)
{
    const cv_state *s = op->state;
    const int xi = col2im ? 1 : 0;
    rc_cp_geom cg;
    rc_status st = col2im ? rc_cp_geometry_shape(op, &s->cp, xi, &cg, err) : rc_cp_geometry(op, &s->cp, xi, &cg, err);
    if (st) return st;
    cv_geom_from(g, &cg, s->cp.nhwc, 1);
    g->Cg = g->C;
    g->Mg = g->M = 1;
    int64_t n;
    if (__builtin_mul_overflow(g->C, g->ksize, &g->Kg) || __builtin_mul_overflow(g->Kg, g->P, &n) ||
        __builtin_mul_overflow(n, g->N, &n))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "input %d blob '%s' %s: the columns (%lld channels x %lld kernel "
                          "cells x %lld positions per image) have more than 2^63 elements", xi, rc_in_name(op, xi),
                          RC_SHAPE(rc_in(op, xi)), (long long)g->C, (long long)g->ksize, (long long)g->P);
    cols[0] = g->N;
    if (g->nhwc)
        cols[1] = g->out[1], cols[2] = g->out[2], cols[3] = g->Kg;
    else
        cols[1] = g->Kg, cols[2] = g->out[1], cols[3] = g->out[2];
    if (!col2im) return RC_OK;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    rc_tensor want;
    rc_tensor_init(&want);
    want.dtype = RC_F32;
    want.ndim = 4;
    memcpy(want.dims, cols, 4 * sizeof *cols);
    const rc_tensor *x = rc_in(op, 0);
    if (rc_tensor_same_shape(x, &want)) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (columns) %s must have Im2Col's output shape %s for "
                      "input 1 blob '%s' %s (order %s, kernel %lld x %lld)", rc_in_name(op, 0), RC_SHAPE(x),
                      RC_SHAPE(&want), rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), g->nhwc ? "NHWC" : "NCHW",
                      (long long)g->k[1], (long long)g->k[2]);
}

static rc_status im2col_check(rc_op *op, rc_err *err)
{
    cv_geom g;
    int64_t cols[4];
    return im_shapes(op, 0, &g, cols, err);
}

static rc_status col2im_check(rc_op *op, rc_err *err)
{
    cv_geom g;
    int64_t cols[4];
    return im_shapes(op, 1, &g, cols, err);
}

static rc_status im2col_run(rc_op *op, rc_err *err)
{
    cv_geom g;
    int64_t cols[4];
    rc_status st = im_shapes(op, 0, &g, cols, err);
    if (st || (st = cv_resize(op, 0, 4, cols, err))) return st;
    /* no columns (N, C or the positions 0): nothing to walk. cv_cols' NHWC loop runs over the positions
     * and kernel cells even for C = 0, and both orders over the N images: an empty X (N, 0, H, W) of a
     * huge N, or an NHWC X with C = 0 and pads near 2^31, spun for minutes writing nothing */
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK;
    const float *x = rc_f32(rc_in(op, 0));
    float *y = rc_f32(rc_out(op, 0));
    const int64_t img = g.C * g.S_in, col = g.Kg * g.P;
    for (int64_t n = 0; n < g.N; n++) cv_cols(&g, 0, (float *)x + n * img, y + n * col);
    return RC_OK;
}

static rc_status col2im_run(rc_op *op, rc_err *err)
{
    cv_geom g;
    int64_t cols[4];
    rc_status st = im_shapes(op, 1, &g, cols, err);
    if (st) return st;
    const rc_tensor *z = rc_in(op, 1);
    if ((st = cv_resize(op, 0, z->ndim, z->dims, err))) return st;
    const float *x = rc_f32(rc_in(op, 0));
    float *y = rc_f32(rc_out(op, 0));
    const int64_t img = g.C * g.S_in, col = g.Kg * g.P;
    if (g.N * img > 0) memset(y, 0, (size_t)(g.N * img) * sizeof *y);
    if (rc_tensor_numel(rc_in(op, 0)) == 0) return RC_OK; /* no columns: Y stays 0 (see im2col_run) */
    for (int64_t n = 0; n < g.N; n++) cv_cols(&g, 1, y + n * img, (float *)x + n * col);
    return RC_OK;
}

/* ================================================================ table */

#define CV_DOC                                                                                           \
    "(X, filter[, bias]) -> Y: convolution, NCHW X (N, C, d...), filter (M, C/group, k...) or NHWC X (N, d..., " \
    "C), filter (M, k..., C/group) (args kernel(s), stride(s), pad(s), dilation(s), legacy_pad, group, order)"
#define CV_GRAD_DOC                                                                                      \
    "(X, filter, dY) -> (dfilter, dbias[, dX]), with no_bias=1 (dfilter[, dX]) (args as Conv's)"

#define CT_DOC                                                                                           \
    "(X, filter[, bias]) -> Y: transposed convolution, NCHW X (N, C_in, d...), filter (C_in, C_out/group, k...) " \
    "or NHWC X (N, d..., C_in), filter (C_in, k..., C_out/group); Y's sizes (d - 1) stride + kernel + adj - pads " \
    "(args kernel(s), stride(s), pad(s), adj(s), dilation(s), legacy_pad, group, order)"
#define CT_GRAD_DOC                                                                                      \
    "(X, filter, dY) -> (dfilter, dbias[, dX]), with no_bias=1 (dfilter[, dX]) (args as ConvTranspose's)"

const rc_op_schema rc_ops_conv[] = {
    {"Conv", 2, 3, 1, 1, NULL, cv_setup, cv_run, cv_free, CV_DOC, cv_check},
    {"Conv1D", 2, 3, 1, 1, NULL, cv_setup, cv_run, cv_free, CV_DOC, cv_check},
    {"Conv2D", 2, 3, 1, 1, NULL, cv_setup, cv_run, cv_free, CV_DOC, cv_check},
    {"Conv3D", 2, 3, 1, 1, NULL, cv_setup, cv_run, cv_free, CV_DOC, cv_check},
    {"ConvGradient", 3, 3, 1, 3, NULL, cv_grad_setup, cv_grad_run, cv_free, CV_GRAD_DOC, cv_grad_check},
    {"Conv1DGradient", 3, 3, 1, 3, NULL, cv_grad_setup, cv_grad_run, cv_free, CV_GRAD_DOC, cv_grad_check},
    {"Conv2DGradient", 3, 3, 1, 3, NULL, cv_grad_setup, cv_grad_run, cv_free, CV_GRAD_DOC, cv_grad_check},
    {"Conv3DGradient", 3, 3, 1, 3, NULL, cv_grad_setup, cv_grad_run, cv_free, CV_GRAD_DOC, cv_grad_check},
    {"ConvTranspose", 2, 3, 1, 1, NULL, ct_setup, cv_run, cv_free, CT_DOC, cv_check},
    {"ConvTransposeGradient", 3, 3, 1, 3, NULL, ct_grad_setup, cv_grad_run, cv_free, CT_GRAD_DOC, cv_grad_check},
    {"Im2Col", 1, 1, 1, 1, NULL, im_setup, im2col_run, cv_free,
     "(X) -> Y: the patches of a 2-D kernel as columns, NCHW Y (N, C kh kw, oh, ow) or NHWC (N, oh, ow, kh kw C) "
     "(args kernel(s), stride(s), pad(s), dilation(s), order)", im2col_check},
    {"Col2Im", 2, 2, 1, 1, NULL, im_setup, col2im_run, cv_free,
     "(X, Z) -> Y: Im2Col's adjoint: Y of Z's shape, every column cell of X added onto its image cell (args as "
     "Im2Col's)", col2im_check},
    {0},
};
