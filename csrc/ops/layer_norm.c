/* ops/layer_norm.c -- normalization ops: LayerNorm and LayerNormGradient.
 *
 * Caffe2 semantics (layer_norm_op): X is split at `axis` (default 1, negative
 * counts from the end) into left = prod(dims[:axis]) rows of N =
 * prod(dims[axis:]) values. Per row:
 *   mean = sum(x) / N, var = sum((x - mean)^2) / N (population variance, two
 *   passes, in double), stdev = sqrt(var + epsilon), Y = (X - mean) / stdev.
 * Outputs Y (shape of X), mean and stdev (shape dims[:axis] + [1], Caffe2's
 * stats shape). With elementwise_affine=1 the op takes (X, gamma, beta),
 * gamma and beta of shape dims[axis:], and Y = Y * gamma + beta.
 *
 * LayerNormGradient (dY, Y, mean, stdev, X[, gamma]) -> dX[, dgamma, dbeta]
 * is the exact derivative, epsilon included: with xhat = (X - mean) / stdev
 * and g = dY (dY * gamma with affine), per row
 *   dX = (g - mean(g) - xhat * mean(g * xhat)) / stdev,
 * and dgamma = sum over rows of dY * xhat, dbeta = sum over rows of dY.
 * Row means and the row sums of dgamma / dbeta are accumulated in double, in
 * index order (the same bits every run). Y is checked but not read.
 *
 * What differs from Caffe2 (where it had no answer or crashed):
 *  - epsilon must be finite and >= 0 (checked at creation); the number of
 *    inputs (and, for the gradient, outputs) must match elementwise_affine
 *    (checked at creation); gamma, beta and every gradient input are
 *    shape-checked against X, naming the blob;
 *  - empty tensors give empty outputs; a row of N = 0 values (left > 0) has
 *    mean 0 and stdev sqrt(epsilon); dgamma / dbeta over left = 0 rows are 0.
 * NaN and Inf propagate (IEEE); epsilon = 0 on a constant row gives NaN.
 * Y may be computed in place over X, and dX over dY: every element is read
 * before the element of the same index is written, and a row's sums are
 * complete before the row is written.
 * The statistics are rc_norm_moments' (ops/norm.h), shared with GroupNorm,
 * InstanceNorm and SpatialBN.
 * Kernels are plain functions of pointers and sizes. The only state is the
 * parsed arguments and, for the affine gradient, a double scratch of 2 N
 * sums (op->state, sized on the first run and when N grows).
 */
#include "../core/rc_core.h"
#include "norm.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ kernels */

/* x: (left, N), gamma, beta: (N,) or NULL -> y: (left, N), mean, stdev: (left,).
 * y may alias x. */
static void ln_kernel(int64_t left, int64_t N, double eps, const float *x, const float *gamma, const float *beta,
                      float *y, float *mean, float *stdev)
{
    for (int64_t i = 0; i < left; i++) {
        const float *xr = x + i * N;
        float *yr = y + i * N;
        const rc_norm_layout row = {1, 1, N, 1, 0, 1}; /* one statistic over the row's N values */
        double m, v;
        rc_norm_moments(&row, xr, &m, &v);
        const double sd = sqrt(v + eps);
        const double inv = 1.0 / sd;
        if (gamma) {
            for (int64_t j = 0; j < N; j++)
                yr[j] = (float)(((double)xr[j] - m) * inv * (double)gamma[j] + (double)beta[j]);
        } else {
            for (int64_t j = 0; j < N; j++) yr[j] = (float)(((double)xr[j] - m) * inv);
        }
        mean[i] = (float)m;
        stdev[i] = (float)sd;
    }
}

/* dy, x: (left, N), mean, stdev: (left,), gamma: (N,) or NULL -> dx: (left, N);
 * with gamma also acc: (2 N) doubles, acc[j] += sum_i dy * xhat, acc[N + j] += sum_i dy
 * (the caller zeroes acc). dx may alias dy. */
static void ln_grad_kernel(int64_t left, int64_t N, const float *dy, const float *x, const float *mean,
                           const float *stdev, const float *gamma, float *dx, double *acc)
{
    for (int64_t i = 0; i < left; i++) {
        const float *gr = dy + i * N, *xr = x + i * N;
        float *dr = dx + i * N;
        const double m = mean[i], inv = 1.0 / (double)stdev[i];
        double sg = 0.0, sgx = 0.0;
        for (int64_t j = 0; j < N; j++) {
            const double xh = ((double)xr[j] - m) * inv;
            double g = gr[j];
            if (gamma) {
                acc[j] += g * xh;
                acc[N + j] += g;
                g *= (double)gamma[j];
            }
            sg += g;
            sgx += g * xh;
        }
        const double mg = N > 0 ? sg / (double)N : 0.0, mgx = N > 0 ? sgx / (double)N : 0.0;
        for (int64_t j = 0; j < N; j++) {
            const double xh = ((double)xr[j] - m) * inv;
            const double g = gamma ? (double)gr[j] * (double)gamma[j] : (double)gr[j];
            dr[j] = (float)((g - mg - xh * mgx) * inv);
        }
    }
}

/* ================================================================ arguments */

/* op->state of both ops: the parsed arguments, and the gradient's scratch. */
typedef struct {
    int64_t axis;
    float epsilon;
    int affine;
    double *acc;     /* LayerNormGradient with affine: 2 * acc_n sums (owned) */
    int64_t acc_n;
} ln_state;

static void ln_free(void *p)
{
    ln_state *s = p;
    if (!s) return;
    free(s->acc);
    free(s);
}

static rc_status ln_args(rc_op *op, rc_err *err)
{
    ln_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    int64_t aff = 0;
    if ((st = rc_arg_i(&op->def, "axis", 1, &s->axis, err))) return st;
    if ((st = rc_arg_f(&op->def, "epsilon", 1e-5f, &s->epsilon, err))) return st;
    if ((st = rc_arg_i(&op->def, "elementwise_affine", 0, &aff, err))) return st;
    if (!isfinite(s->epsilon) || s->epsilon < 0.0f)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument epsilon must be finite and >= 0, got %g",
                          (double)s->epsilon);
    if (aff != 0 && aff != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument elementwise_affine must be 0 or 1, got %lld",
                          (long long)aff);
    s->affine = (int)aff;
    return RC_OK;
}

/* LayerNorm: 1 input (X), or 3 (X, gamma, beta) with elementwise_affine=1. */
static rc_status ln_setup(rc_op *op, rc_err *err)
{
    rc_status st = ln_args(op, err);
    if (st) return st;
    const ln_state *s = op->state;
    if (op->n_in != (s->affine ? 3 : 1))
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s, got %d inputs",
                          s->affine ? "with elementwise_affine=1 takes 3 inputs (X, gamma, beta)"
                                    : "without elementwise_affine takes 1 input (X); pass elementwise_affine=1 "
                                      "for (X, gamma, beta)", op->n_in);
    return RC_OK;
}

/* LayerNormGradient: (dY, Y, mean, stdev, X) -> dX, or with elementwise_affine=1
 * (dY, Y, mean, stdev, X, gamma) -> (dX, dgamma, dbeta). */
static rc_status ln_grad_setup(rc_op *op, rc_err *err)
{
    rc_status st = ln_args(op, err);
    if (st) return st;
    const ln_state *s = op->state;
    if (s->affine && (op->n_in != 6 || op->n_out != 3))
        return rc_op_fail(op, err, RC_ERR_VALUE, "with elementwise_affine=1 takes 6 inputs (dY, Y, mean, stdev, X, "
                          "gamma) and gives 3 outputs (dX, dgamma, dbeta), got %d inputs and %d outputs", op->n_in,
                          op->n_out);
    if (!s->affine && (op->n_in != 5 || op->n_out != 1))
        return rc_op_fail(op, err, RC_ERR_VALUE, "without elementwise_affine takes 5 inputs (dY, Y, mean, stdev, X) "
                          "and gives 1 output (dX), got %d inputs and %d outputs", op->n_in, op->n_out);
    return RC_OK;
}

/* ================================================================ shapes */

/* X (input xi) float32 split at the canonical axis into left x N. */
static rc_status ln_split(rc_op *op, int xi, int *ax, int64_t *left, int64_t *N, rc_err *err)
{
    const ln_state *s = op->state;
    rc_status st = rc_check_input(op, xi, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, xi);
    int64_t a = s->axis < 0 ? s->axis + x->ndim : s->axis;
    if (a < 0 || a >= x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument axis=%lld is out of range for input %d blob '%s' of shape %s (must be in "
                          "[-%d, %d))", (long long)s->axis, xi, rc_in_name(op, xi), RC_SHAPE(x), x->ndim, x->ndim);
    *ax = (int)a;
    *left = rc_dims_prod(x, 0, *ax);
    *N = rc_dims_prod(x, *ax, x->ndim);
    return RC_OK;
}

/* What input i must match in X (input xi) split at axis ax. */
enum { LN_LIKE_X, LN_STATS, LN_PARAM };

/* Input i must be float32 of shape: X's (LN_LIKE_X), dims[:ax] + [1] (LN_STATS)
 * or dims[ax:] (LN_PARAM) of X = input xi; `what` names its role. */
static rc_status ln_expect(rc_op *op, int i, int xi, int ax, int kind, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, xi), *t = rc_in(op, i);
    rc_tensor want;
    rc_tensor_init(&want);
    want.dtype = RC_F32;
    const int from = kind == LN_PARAM ? ax : 0, to = kind == LN_STATS ? ax : x->ndim;
    for (int k = from; k < to; k++) want.dims[want.ndim++] = x->dims[k];
    if (kind == LN_STATS) want.dims[want.ndim++] = 1;
    if (rc_tensor_same_shape(t, &want)) return RC_OK;
    if (kind == LN_LIKE_X)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have the shape of input %d blob '%s' "
                          "%s, got %s", i, rc_in_name(op, i), what, xi, rc_in_name(op, xi), RC_SHAPE(x), RC_SHAPE(t));
    return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have shape %s (the dims of input %d blob "
                      "'%s' %s %s axis %d%s), got %s", i, rc_in_name(op, i), what, RC_SHAPE(&want), xi,
                      rc_in_name(op, xi), RC_SHAPE(x), kind == LN_STATS ? "before" : "from", ax,
                      kind == LN_STATS ? ", then 1" : " on", RC_SHAPE(t));
}

/* LayerNorm's inputs: X, and gamma, beta of shape dims[axis:] with affine. */
static rc_status ln_shapes(rc_op *op, int *ax, int64_t *left, int64_t *N, rc_err *err)
{
    const ln_state *s = op->state;
    rc_status st = ln_split(op, 0, ax, left, N, err);
    if (st || !s->affine) return st;
    if ((st = ln_expect(op, 1, 0, *ax, LN_PARAM, "gamma", err))) return st;
    return ln_expect(op, 2, 0, *ax, LN_PARAM, "beta", err);
}

static rc_status ln_check(rc_op *op, rc_err *err)
{
    int ax = 0;
    int64_t left = 0, N = 0;
    return ln_shapes(op, &ax, &left, &N, err);
}

/* LayerNormGradient's inputs against X (input 4): dY and Y its shape, mean and
 * stdev dims[:axis] + [1], gamma dims[axis:]. */
static rc_status ln_grad_shapes(rc_op *op, int *ax, int64_t *left, int64_t *N, rc_err *err)
{
    const ln_state *s = op->state;
    rc_status st = ln_split(op, 4, ax, left, N, err);
    if (st) return st;
    if ((st = ln_expect(op, 0, 4, *ax, LN_LIKE_X, "dY", err)) || (st = ln_expect(op, 1, 4, *ax, LN_LIKE_X, "Y", err)))
        return st;
    if ((st = ln_expect(op, 2, 4, *ax, LN_STATS, "mean", err)) || (st = ln_expect(op, 3, 4, *ax, LN_STATS, "stdev", err)))
        return st;
    if (s->affine && (st = ln_expect(op, 5, 4, *ax, LN_PARAM, "gamma", err))) return st;
    return RC_OK;
}

static rc_status ln_grad_check(rc_op *op, rc_err *err)
{
    int ax = 0;
    int64_t left = 0, N = 0;
    return ln_grad_shapes(op, &ax, &left, &N, err);
}

static rc_status resize_out(rc_op *op, int o, const rc_tensor *x, int from, int to, int ones, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    int nd = 0;
    for (int k = from; k < to; k++) dims[nd++] = x->dims[k];
    for (int k = 0; k < ones; k++) dims[nd++] = 1;
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_F32, nd, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* ================================================================ run */

/* LayerNorm: X (left x N at axis)[, gamma, beta (dims[axis:])] -> Y (shape of X),
 * mean, stdev (dims[:axis] + [1]). Y may be X. */
static rc_status ln_run(rc_op *op, rc_err *err)
{
    const ln_state *s = op->state;
    int ax = 0;
    int64_t left = 0, N = 0;
    rc_status st = ln_shapes(op, &ax, &left, &N, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (rc_out(op, 0) != x && (st = resize_out(op, 0, x, 0, x->ndim, 0, err))) return st;
    if ((st = resize_out(op, 1, x, 0, ax, 1, err)) || (st = resize_out(op, 2, x, 0, ax, 1, err))) return st;
    ln_kernel(left, N, (double)s->epsilon, rc_f32(x), s->affine ? rc_f32(rc_in(op, 1)) : NULL,
              s->affine ? rc_f32(rc_in(op, 2)) : NULL, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)),
              rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* LayerNormGradient: dY, Y (shape of X), mean, stdev (dims[:axis] + [1]), X[, gamma
 * (dims[axis:])] -> dX (shape of X)[, dgamma, dbeta (dims[axis:])]. dX may be dY. */
static rc_status ln_grad_run(rc_op *op, rc_err *err)
{
    ln_state *s = op->state;
    int ax = 0;
    int64_t left = 0, N = 0;
    rc_status st = ln_grad_shapes(op, &ax, &left, &N, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 4);
    if (s->affine && N > s->acc_n) {
        double *acc = realloc(s->acc, (size_t)N * 2 * sizeof *acc);
        if (!acc)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "cannot allocate the %lld sums of dgamma and dbeta",
                              (long long)(2 * N));
        s->acc = acc;
        s->acc_n = N;
    }
    if (rc_out(op, 0) != rc_in(op, 0) && (st = resize_out(op, 0, x, 0, x->ndim, 0, err))) return st;
    if (s->affine) {
        if ((st = resize_out(op, 1, x, ax, x->ndim, 0, err)) || (st = resize_out(op, 2, x, ax, x->ndim, 0, err)))
            return st;
        if (N > 0) memset(s->acc, 0, (size_t)N * 2 * sizeof *s->acc);
    }
    ln_grad_kernel(left, N, rc_f32(rc_in(op, 0)), rc_f32(x), rc_f32(rc_in(op, 2)), rc_f32(rc_in(op, 3)),
                   s->affine ? rc_f32(rc_in(op, 5)) : NULL, rc_f32(rc_out(op, 0)), s->acc);
    if (s->affine) {
        float *dg = rc_f32(rc_out(op, 1)), *db = rc_f32(rc_out(op, 2));
        for (int64_t j = 0; j < N; j++) {
            dg[j] = (float)s->acc[j];
            db[j] = (float)s->acc[N + j];
        }
    }
    return RC_OK;
}

/* ================================================================ table */

static int inplace_first(int in, int out) { return in == 0 && out == 0; }

const rc_op_schema rc_ops_norm[] = {
    {"LayerNorm", 1, 3, 3, 3, inplace_first, ln_setup, ln_run, ln_free,
     "(X[, gamma, beta]) -> (Y, mean, stdev): X normalized over dims[axis:] (args axis, epsilon, "
     "elementwise_affine)", ln_check},
    {"LayerNormGradient", 5, 6, 1, 3, inplace_first, ln_grad_setup, ln_grad_run, ln_free,
     "(dY, Y, mean, stdev, X[, gamma]) -> dX[, dgamma, dbeta] (args as LayerNorm's)", ln_grad_check},
    {0},
};
