/* ops/moments.c -- whole-tensor and per-channel statistics and the sinusoid
 * position encoding of Caffe2's transformer code (lpnorm_op, batch_moments_op,
 * sinusoid_position_encoding_op):
 *
 *   LpNorm(X) -> Z (1,)                         args p=2 (1 or 2), average=0
 *       Z = sum |x| (p=1) or sum x^2 (p=2) over every element, / numel when average
 *   LpNormGradient(X, dZ (1 value)) -> dX       same args
 *       dX = dZ sign(x) (0 where |x| <= 1e-12, as Caffe2) or 2 x dZ, / numel when average
 *   BatchMoments(X) -> mu (C,), var (C,)        arg order="NCHW" or "NHWC"
 *       NCHW: X (N, C, ...); NHWC: X (..., C); per channel c over its count
 *       = numel / C values: mu = mean x, var = mean x^2 (the raw second moment,
 *       as Caffe2: not centred)
 *   BatchMomentsGradient(dmu (C,), dvar (C,), X) -> dX = (dmu_c + 2 x dvar_c) / count
 *   SinusoidPositionEncoding(positions (M, K) int32) -> Y (M, K, E) float32
 *       args embedding_size E=100, alpha=10000, amplitude=1:
 *       Y[m, k, e] = amplitude * sin(p / alpha^(e / E)) for even e, cos(...) for odd e,
 *       p = positions[m, k]
 *
 * All float32 (positions int32; Caffe2 also took int64, which is int32
 * here). Sums are accumulated in double in index order (the same bits every
 * run); the encoding is computed in double and rounded once. No global state;
 * nothing allocates but the outputs and the small argument state (op->state,
 * freed by free()).
 *
 * Where this differs from Caffe2:
 *  - LpNorm with average=1 of an empty X is a ValueError, as Caffe2's
 *    enforce (without average, the sum of nothing is 0). p outside {1, 2} is
 *    a ValueError at creation (Caffe2 wrote nothing into the output).
 *    LpNormGradient wants dZ of exactly 1 value (Caffe2: shape (1,)).
 *  - BatchMoments wants X of at least 2 dims in both orders (Caffe2 divided
 *    by the wrong count for a 1-D NHWC X). A channel of count 0 (an empty
 *    batch) has mu = var = 0 (Caffe2 divided 0 by 0). The gradient's dmu and
 *    dvar must have shape (C,) (Caffe2 did not check and read past them).
 *  - SinusoidPositionEncoding encodes each position on its own. Caffe2
 *    encoded positions[m, 0] and copied that row to every k (the same result
 *    when each row of positions holds one value, as in Caffe2's seq2seq code
 *    and its test); a position <= 0 gave NaN or 0 there (log of the position),
 *    here the formula's value. embedding_size must be >= 1, alpha finite and
 *    > 0, amplitude finite (ValueErrors at creation; Caffe2 did not check).
 *    No gradient (the positions are integers), as Caffe2.
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LP1_GRAD_EPS 1e-12  /* Caffe2's dead zone of the sign in LpNormGradient */

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

static rc_status resize_f32(rc_op *op, int o, int ndim, const int64_t *dims, rc_err *err)
{
    if (rc_tensor_resize(rc_out(op, o), RC_F32, ndim, dims, err)) return out_fail(op, o, err);
    return RC_OK;
}

/* op->state of every op here (owned by the op, freed by free). */
typedef struct {
    int64_t p;          /* LpNorm(+Gradient): 1 or 2 */
    int average;        /* LpNorm(+Gradient) */
    int nhwc;           /* BatchMoments(+Gradient) */
    int64_t emb;        /* SinusoidPositionEncoding */
    double alpha, amplitude;
} mom_state;

static rc_status state_new(rc_op *op, mom_state **s, rc_err *err)
{
    *s = calloc(1, sizeof **s);
    if (!*s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = *s; /* freed by free_state, also when setup fails */
    return RC_OK;
}

/* ================================================================ LpNorm */

static rc_status lp_setup(rc_op *op, rc_err *err)
{
    mom_state *s;
    int64_t avg;
    rc_status st = state_new(op, &s, err);
    if (st || (st = rc_arg_i(&op->def, "p", 2, &s->p, err)) ||
        (st = rc_arg_i(&op->def, "average", 0, &avg, err)))
        return st;
    if (s->p != 1 && s->p != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument p must be 1 or 2, got %lld", (long long)s->p);
    if (avg != 0 && avg != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument average must be 0 or 1, got %lld", (long long)avg);
    s->average = (int)avg;
    return RC_OK;
}

/* X float32 (any shape); with average, at least one element. *div: numel (average) or 1. */
static rc_status lp_x(rc_op *op, double *div, rc_err *err)
{
    const mom_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x);
    if (s->average && n == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "average=1 of input 0 blob '%s' %s: the average of no element "
                          "(divides by 0)", rc_in_name(op, 0), RC_SHAPE(x));
    *div = s->average ? (double)n : 1.0;
    return RC_OK;
}

static rc_status lp_check(rc_op *op, rc_err *err)
{
    double div = 1.0;
    return lp_x(op, &div, err);
}

static rc_status lp_run(rc_op *op, rc_err *err)
{
    const mom_state *s = op->state;
    double div = 1.0;
    const int64_t one = 1;
    rc_status st = lp_x(op, &div, err);
    if (st || (st = resize_f32(op, 0, 1, &one, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x);
    const float *xd = n ? rc_f32(x) : NULL;
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) acc += s->p == 1 ? fabs((double)xd[i]) : (double)xd[i] * xd[i];
    rc_f32(rc_out(op, 0))[0] = (float)(acc / div);
    return RC_OK;
}

/* lp_x, and input 1 (dZ) float32 of exactly one value */
static rc_status lp_grad_x(rc_op *op, double *div, rc_err *err)
{
    rc_status st = lp_x(op, div, err);
    if (st || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 1);
    if (rc_tensor_numel(g) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (dZ) %s must hold exactly 1 value (LpNorm's "
                          "output has shape (1,))", rc_in_name(op, 1), RC_SHAPE(g));
    return RC_OK;
}

static rc_status lp_grad_check(rc_op *op, rc_err *err)
{
    double div = 1.0;
    return lp_grad_x(op, &div, err);
}

static rc_status lp_grad_run(rc_op *op, rc_err *err)
{
    const mom_state *s = op->state;
    double div = 1.0;
    rc_status st = lp_grad_x(op, &div, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const double g = (double)rc_f32(rc_in(op, 1))[0] / div;
    if (rc_tensor_resize_like(rc_out(op, 0), x, err)) return out_fail(op, 0, err);
    const int64_t n = rc_tensor_numel(x);
    if (n == 0) return RC_OK;
    const float *xd = rc_f32(x);
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        const double v = xd[i];
        if (s->p == 2) dx[i] = (float)(2.0 * v * g);
        else dx[i] = v > LP1_GRAD_EPS ? (float)g : v < -LP1_GRAD_EPS ? (float)-g : isnan(v) ? (float)v : 0.0f;
    }
    return RC_OK;
}

/* ================================================================ BatchMoments */

static rc_status bm_setup(rc_op *op, rc_err *err)
{
    mom_state *s;
    rc_status st = state_new(op, &s, err);
    return st ? st : rc_checks_order(op, &s->nhwc, err);
}

/* Input xi: float32 with >= 2 dims, seen as (outer, C, inner): NCHW (N, C, rest), NHWC (rest, C, 1). */
static rc_status bm_dims(rc_op *op, int xi, int64_t *outer, int64_t *C, int64_t *inner, rc_err *err)
{
    const mom_state *s = op->state;
    rc_status st = rc_checks_image(op, xi, s->nhwc, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, xi);
    const int c = s->nhwc ? x->ndim - 1 : 1;
    *outer = rc_dims_prod(x, 0, c);
    *C = x->dims[c];
    *inner = rc_dims_prod(x, c + 1, x->ndim);
    return RC_OK;
}

static rc_status bm_check(rc_op *op, rc_err *err)
{
    int64_t o, c, i;
    return bm_dims(op, 0, &o, &c, &i, err);
}

/* x (outer, C, inner) -> mu, var (C,): mean of x and of x^2 per channel (0 for no element). */
static void bm_kernel(int64_t outer, int64_t C, int64_t inner, const float *x, float *mu, float *var)
{
    const int64_t count = outer * inner;
    for (int64_t c = 0; c < C; c++) {
        double s1 = 0.0, s2 = 0.0;
        for (int64_t o = 0; o < outer; o++) {
            const float *p = x + (o * C + c) * inner;
            for (int64_t i = 0; i < inner; i++) {
                s1 += p[i];
                s2 += (double)p[i] * p[i];
            }
        }
        mu[c] = count ? (float)(s1 / (double)count) : 0.0f;
        var[c] = count ? (float)(s2 / (double)count) : 0.0f;
    }
}

static rc_status bm_run(rc_op *op, rc_err *err)
{
    int64_t outer, C, inner;
    rc_status st = bm_dims(op, 0, &outer, &C, &inner, err);
    if (st || (st = resize_f32(op, 0, 1, &C, err)) || (st = resize_f32(op, 1, 1, &C, err))) return st;
    if (C == 0) return RC_OK;
    const rc_tensor *x = rc_in(op, 0);
    bm_kernel(outer, C, inner, rc_tensor_numel(x) ? rc_f32(x) : NULL, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)));
    return RC_OK;
}

/* dmu, dvar float32 of shape (C,), X as bm_dims (input 2) */
static rc_status bm_grad_dims(rc_op *op, int64_t *outer, int64_t *C, int64_t *inner, rc_err *err)
{
    rc_status st = bm_dims(op, 2, outer, C, inner, err);
    if (st) return st;
    static const char *const what[2] = {"dmu", "dvar"};
    for (int i = 0; i < 2; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        const rc_tensor *g = rc_in(op, i);
        if (g->ndim != 1 || g->dims[0] != *C)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) %s must have shape (%lld,): the "
                              "channels of input 2 blob '%s' %s", i, rc_in_name(op, i), what[i], RC_SHAPE(g),
                              (long long)*C, rc_in_name(op, 2), RC_SHAPE(rc_in(op, 2)));
    }
    return RC_OK;
}

static rc_status bm_grad_check(rc_op *op, rc_err *err)
{
    int64_t o, c, i;
    return bm_grad_dims(op, &o, &c, &i, err);
}

/* dX[o, c, i] = (dmu_c + 2 x[o, c, i] dvar_c) / (outer * inner) */
static rc_status bm_grad_run(rc_op *op, rc_err *err)
{
    int64_t outer, C, inner;
    rc_status st = bm_grad_dims(op, &outer, &C, &inner, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 2);
    if (rc_tensor_resize_like(rc_out(op, 0), x, err)) return out_fail(op, 0, err);
    if (rc_tensor_numel(x) == 0) return RC_OK;
    const float *xd = rc_f32(x), *dmu = rc_f32(rc_in(op, 0)), *dvar = rc_f32(rc_in(op, 1));
    float *dx = rc_f32(rc_out(op, 0));
    const double scale = 1.0 / (double)(outer * inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t base = (o * C + c) * inner;
            for (int64_t i = 0; i < inner; i++)
                dx[base + i] = (float)(((double)dmu[c] + 2.0 * (double)xd[base + i] * dvar[c]) * scale);
        }
    return RC_OK;
}

/* ================================================================ SinusoidPositionEncoding */

static rc_status spe_setup(rc_op *op, rc_err *err)
{
    mom_state *s;
    float alpha, amp;
    rc_status st = state_new(op, &s, err);
    if (st || (st = rc_arg_i(&op->def, "embedding_size", 100, &s->emb, err)) ||
        (st = rc_arg_f(&op->def, "alpha", 10000.0f, &alpha, err)) ||
        (st = rc_arg_f(&op->def, "amplitude", 1.0f, &amp, err)))
        return st;
    if (s->emb < 1 || s->emb > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument embedding_size must be in [1, %d], got %lld", INT32_MAX,
                          (long long)s->emb);
    if (!isfinite(alpha) || alpha <= 0.0f)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument alpha must be finite and > 0, got %g", (double)alpha);
    if (!isfinite(amp))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument amplitude must be finite, got %g", (double)amp);
    s->alpha = alpha;
    s->amplitude = amp;
    return RC_OK;
}

static rc_status spe_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_I32, err);
    if (st) return st;
    const rc_tensor *p = rc_in(op, 0);
    if (p->ndim != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (positions) must be 2-D, got %s",
                          rc_in_name(op, 0), RC_SHAPE(p));
    return RC_OK;
}

/* positions (M, K) -> y (M, K, E): y[m, k, e] = amp * sin / cos(pos / alpha^(e / E)) (sin for even e) */
static rc_status spe_run(rc_op *op, rc_err *err)
{
    const mom_state *s = op->state;
    rc_status st = spe_check(op, err);
    if (st) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t E = s->emb, dims[3] = {p->dims[0], p->dims[1], E};
    if ((st = resize_f32(op, 0, 3, dims, err))) return st;
    const int64_t n = rc_tensor_numel(p);
    if (n == 0) return RC_OK;
    const int32_t *pos = rc_i32(p);
    float *y = rc_f32(rc_out(op, 0));
    const double log_alpha = log(s->alpha);
    for (int64_t q = 0; q < n; q++) {
        float *row = y + q * E;
        const double v = pos[q];
        for (int64_t e = 0; e < E; e++) {
            const double x = v * exp(-log_alpha * (double)e / (double)E);
            row[e] = (float)(s->amplitude * ((e & 1) ? cos(x) : sin(x)));
        }
    }
    return RC_OK;
}

/* ================================================================ table */

const rc_op_schema rc_ops_moments[] = {
    {"LpNorm", 1, 1, 1, 1, NULL, lp_setup, lp_run, free,
     "Z (1,) = sum |X| (p=1) or sum X^2 (p=2, default), / numel with average=1", lp_check},
    {"LpNormGradient", 2, 2, 1, 1, NULL, lp_setup, lp_grad_run, free,
     "(X, dZ (1 value)) -> dX = dZ sign(X) (p=1) or 2 X dZ (p=2), / numel with average=1", lp_grad_check},
    {"BatchMoments", 1, 1, 2, 2, NULL, bm_setup, bm_run, free,
     "X (N, C, ...) or (..., C) with order -> mu, var (C,): per-channel mean of X and of X^2", bm_check},
    {"BatchMomentsGradient", 3, 3, 1, 1, NULL, bm_setup, bm_grad_run, free,
     "(dmu, dvar (C,), X) -> dX = (dmu + 2 X dvar) / count per channel", bm_grad_check},
    {"SinusoidPositionEncoding", 1, 1, 1, 1, NULL, spe_setup, spe_run, free,
     "positions (M, K) int32 -> (M, K, embedding_size) amplitude sin / cos(pos / alpha^(e / E))", spe_check},
    {0},
};
