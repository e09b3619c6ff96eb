/* ops/lrn.c -- Caffe2's local_response_normalization_op: LRN across channels.
 *
 *   LRN(X) -> Y[, scale]        args size (odd, >= 1; required), alpha, beta (default 0), bias
 *                               (default 1), order ("NCHW" default, or "NHWC"). X float32 with
 *                               >= 2 dims: channels are dim 1 (NCHW) or the last dim (NHWC).
 *                               scale_c = bias + alpha / size * sum of x_j^2 over the channels j
 *                               in [c - (size - 1) / 2, c + (size - 1) / 2] inside [0, C);
 *                               Y = X * scale^-beta; scale (output 1) has X's shape.
 *   LRNGradient(X, Y, dY) -> dX dX_c = dY_c scale_c^-beta - 2 alpha beta / size * X_c * the sum
 *                               of dY_j Y_j / scale_j over the same window around c (scale is
 *                               recomputed from X, as Caffe2's).
 *
 * Every sum is in double over the window in channel order (the same bits every run; Caffe2 kept
 * a running float sum, adding the head and subtracting the tail of the window). What differs
 * from Caffe2: it asserted (in debug builds only) size odd and > 0, alpha > 0, beta > 0, and X
 * 4-D; here size must be odd and >= 1 (a ValueError when the op is created), alpha, beta and
 * bias finite (any sign: beta 0 gives Y = X), and X has any number of dims >= 2. A scale of 0
 * or below (bias <= 0) gives Inf or NaN, as the formula. Y is not X, nor dX dY (no in-place:
 * the window reads neighbours). The state is the parsed arguments and a scratch of 2 C doubles
 * (sized on the first run and when C grows), owned by op->state.
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdlib.h>

typedef struct lrn_state {
    int64_t size;
    float alpha, beta, bias;
    int nhwc;
    double *scratch;
    int64_t cap;
} lrn_state;

static void lrn_free(void *p)
{
    lrn_state *s = p;
    if (s) free(s->scratch);
    free(s);
}

static rc_status lrn_setup(rc_op *op, rc_err *err)
{
    lrn_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    if ((st = rc_checks_order(op, &s->nhwc, err)) || (st = rc_arg_i(&op->def, "size", 0, &s->size, err)) ||
        (st = rc_arg_f(&op->def, "alpha", 0.0f, &s->alpha, err)) ||
        (st = rc_arg_f(&op->def, "beta", 0.0f, &s->beta, err)) ||
        (st = rc_arg_f(&op->def, "bias", 1.0f, &s->bias, err)))
        return st;
    if (s->size < 1 || s->size % 2 == 0 || s->size > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument size (the channels of the window) must be odd and >= 1, "
                          "got %lld", (long long)s->size);
    if (!isfinite(s->alpha) || !isfinite(s->beta) || !isfinite(s->bias))
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments alpha, beta and bias must be finite, got %g, %g, %g",
                          (double)s->alpha, (double)s->beta, (double)s->bias);
    return RC_OK;
}

/* The layout of input 0: rows of C channels, element (r, c) at base(r) + c * cs. */
typedef struct lrn_geom {
    int64_t N, C, S; /* batch, channels, spatial size */
} lrn_geom;

static rc_status lrn_shapes(rc_op *op, int n_same, lrn_geom *g, rc_err *err)
{
    const lrn_state *s = op->state;
    rc_status st;
    for (int i = 0; i < n_same; i++)
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
    if ((st = rc_check_ndim(op, 0, 2, RC_MAX_DIMS, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    for (int i = 1; i < n_same; i++)
        if (!rc_tensor_same_shape(rc_in(op, i), x))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' %s must have the shape of input 0 blob '%s' %s", i,
                              rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), rc_in_name(op, 0), RC_SHAPE(x));
    if (g) {
        g->N = x->dims[0];
        g->C = x->dims[s->nhwc ? x->ndim - 1 : 1];
        g->S = s->nhwc ? rc_dims_prod(x, 1, x->ndim - 1) : rc_dims_prod(x, 2, x->ndim);
    }
    return RC_OK;
}

static rc_status lrn_check(rc_op *op, rc_err *err) { return lrn_shapes(op, 1, NULL, err); }
static rc_status lrn_grad_check(rc_op *op, rc_err *err) { return lrn_shapes(op, 3, NULL, err); }

static rc_status lrn_prepare(rc_op *op, int n_same, int n_scratch, lrn_geom *g, rc_err *err)
{
    lrn_state *s = op->state;
    rc_status st = lrn_shapes(op, n_same, g, err);
    if (st) return st;
    for (int o = 0; o < op->n_out; o++)
        if ((st = rc_tensor_resize_like(rc_out(op, o), rc_in(op, 0), err)))
            return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    if (g->C * n_scratch > s->cap) {
        double *p = realloc(s->scratch, (size_t)(g->C * n_scratch) * sizeof *p);
        if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for a scratch of %lld doubles",
                                  (long long)(g->C * n_scratch));
        s->scratch = p, s->cap = g->C * n_scratch;
    }
    return RC_OK;
}

/* The row r (n, spatial s) of C channels: its first element and the channel stride. */
static void lrn_row(const lrn_state *s, const lrn_geom *g, int64_t r, int64_t *base, int64_t *cs)
{
    if (s->nhwc) {
        *base = r * g->C, *cs = 1;
    } else {
        const int64_t n = r / g->S, k = r % g->S;
        *base = n * g->C * g->S + k, *cs = g->S;
    }
}

/* sc[c] = bias + alpha / size * the window's sum of x^2, for the row. */
static void lrn_scale_row(const lrn_state *s, int64_t C, const float *x, int64_t cs, double *sc)
{
    const int64_t half = (s->size - 1) / 2;
    const double a = (double)s->alpha / (double)s->size;
    for (int64_t c = 0; c < C; c++) {
        const int64_t lo = c - half > 0 ? c - half : 0, hi = c + half < C - 1 ? c + half : C - 1;
        double acc = 0.0;
        for (int64_t j = lo; j <= hi; j++) acc += (double)x[j * cs] * (double)x[j * cs];
        sc[c] = (double)s->bias + a * acc;
    }
}

/* LRN (grad 0): Y[, scale] from X; LRNGradient (grad 1): dX from X, Y, dY. Row by row: the
 * row's scale, then (gradient) its ratios dY Y / scale, then the outputs. */
static rc_status lrn_compute(rc_op *op, int grad, rc_err *err)
{
    lrn_state *s = op->state;
    lrn_geom g;
    rc_status st = lrn_prepare(op, grad ? 3 : 1, grad ? 2 : 1, &g, err);
    if (st || !rc_tensor_numel(rc_in(op, 0))) return st;
    const float *x = rc_f32(rc_in(op, 0));
    const float *y = grad ? rc_f32(rc_in(op, 1)) : NULL, *dy = grad ? rc_f32(rc_in(op, 2)) : NULL;
    float *out = rc_f32(rc_out(op, 0)), *scale = !grad && op->n_out > 1 ? rc_f32(rc_out(op, 1)) : NULL;
    double *sc = s->scratch, *ratio = s->scratch + g.C;
    const int64_t half = (s->size - 1) / 2;
    const double cache = 2.0 * (double)s->alpha * (double)s->beta / (double)s->size;
    for (int64_t r = 0; r < g.N * g.S; r++) {
        int64_t base, cs;
        lrn_row(s, &g, r, &base, &cs);
        lrn_scale_row(s, g.C, x + base, cs, sc);
        if (grad)
            for (int64_t c = 0; c < g.C; c++) ratio[c] = (double)dy[base + c * cs] * (double)y[base + c * cs] / sc[c];
        for (int64_t c = 0; c < g.C; c++) {
            const int64_t i = base + c * cs;
            const double p = pow(sc[c], -(double)s->beta);
            if (!grad) {
                out[i] = (float)((double)x[i] * p);
                if (scale) scale[i] = (float)sc[c];
                continue;
            }
            const int64_t lo = c - half > 0 ? c - half : 0, hi = c + half < g.C - 1 ? c + half : g.C - 1;
            double acc = 0.0;
            for (int64_t j = lo; j <= hi; j++) acc += ratio[j];
            out[i] = (float)((double)dy[i] * p - cache * (double)x[i] * acc);
        }
    }
    return RC_OK;
}

static rc_status lrn_run(rc_op *op, rc_err *err) { return lrn_compute(op, 0, err); }
static rc_status lrn_grad_run(rc_op *op, rc_err *err) { return lrn_compute(op, 1, err); }

const rc_op_schema rc_ops_lrn[] = {
    {"LRN", 1, 1, 1, 2, NULL, lrn_setup, lrn_run, lrn_free,
     "X -> Y[, scale]: local response normalization across channels (args size, alpha, beta, bias, order)",
     lrn_check},
    {"LRNGradient", 3, 3, 1, 1, NULL, lrn_setup, lrn_grad_run, lrn_free,
     "(X, Y, dY) -> dX (args as LRN's)", lrn_grad_check},
    {0},
};
