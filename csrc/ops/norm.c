/* ops/norm.c -- channel normalization ops: GroupNorm, InstanceNorm, SpatialBN
 * and their gradients, and the statistics they share with LayerNorm
 * (ops/norm.h, ops/layer_norm.c).
 *
 * Caffe2 semantics. X has >= 2 dims: NCHW (N, C, spatial...) or NHWC (N,
 * spatial..., C) by argument order (default "NCHW"); S = the product of the
 * spatial dims. xhat = (X - mean) * inv_std with inv_std = 1 / sqrt(var +
 * epsilon) (population variance, epsilon default 1e-5), Y = xhat * gamma[c] +
 * beta[c], gamma and beta of shape (C,).
 *  - GroupNorm(X, gamma, beta) -> (Y, mean, inv_std), arg group (default 32,
 *    must divide C): statistics per sample and group of C / G channels, shape
 *    (N, G). GroupNormGradient(dY, X, gamma, beta, mean, inv_std) -> (dX,
 *    dgamma, dbeta).
 *  - InstanceNorm(X, scale, bias) -> Y[, mean[, inv_stdev]]: statistics per
 *    sample and channel, shape (N, C). InstanceNormGradient(X, scale, bias,
 *    dY[, mean[, inv_stdev]]) -> (dX, dscale, dbias); the statistics not given
 *    are recomputed from X.
 *  - SpatialBN(X, scale, bias, mean, var), is_test=1 -> Y with the given
 *    (running) mean and var. Training (is_test=0) -> (Y, running_mean,
 *    running_var, saved_mean, saved_inv_std): the batch statistics per channel
 *    over N and S; running_mean = momentum * mean + (1 - momentum) * batch mean,
 *    running_var = momentum * var + (1 - momentum) * unbiased batch var
 *    (momentum default 0.9). Outputs 1, 2 are normally inputs 3, 4 in place
 *    (Caffe2 requires that; here other blobs are written too). A batch of no
 *    values leaves the running statistics as given and saves 0, 0 (as
 *    Caffe2); a batch of one value per channel has no unbiased variance: the
 *    running var is only decayed (momentum * var).
 *    SpatialBNGradient(X, scale, dY, saved_mean, saved_inv_std) -> (dX, dscale,
 *    dbias); with is_test=1 inputs 3, 4 are the running mean and var, taken as
 *    constants: dX = dY * scale * inv_std.
 * Gradients are exact (epsilon included): with g = dY * gamma, per statistic
 *   dX = inv_std * (g - mean(g) - xhat * mean(g * xhat)),
 * dgamma[c] = sum dY * xhat, dbeta[c] = sum dY over the values of channel c.
 *
 * Every sum is in double, in memory order (the same bits every run). Not in
 * Caffe2 (it crashed or asserted): empty tensors give empty outputs; a
 * statistic of no values (S = 0) has mean 0 and var 0; epsilon must be finite
 * and >= 0, momentum finite. NaN and Inf propagate.
 * With num_batches = B > 1 (training) the statistics are those of B batches
 * summed elsewhere (Caffe2's multi-batch mode): SpatialBN takes inputs 5, 6 =
 * the per-channel sums of x and of x^2 over the B batches: mean = sum / (B N S),
 * var = sumsq / (B N S) - mean^2 (outputs 3, 4 may be inputs 5, 6 in place);
 * SpatialBNGradient takes inputs 5, 6 = the sums of dscale and dbias over the B
 * batches: dscale, dbias = those sums / B and dX = scale inv_std (dY -
 * xhat dscale / (N S) - dbias / (N S)) (outputs 1, 2 may be inputs 5, 6). A
 * batch of no values gives 0 statistics (forward) and 0 gradients.
 * Y may be X and dX may be dY (every element is read before the element of
 * the same index is written, and the sums are complete before the writes).
 * The state is the parsed arguments and a double scratch of the statistics
 * (sized on the first run and when it grows).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include "norm.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ kernels */

int64_t rc_norm_nstats(const rc_norm_layout *L) { return L->per_n ? L->N * L->G : L->G; }

int64_t rc_norm_count(const rc_norm_layout *L)
{
    const int64_t D = L->G > 0 ? L->C / L->G : 0;
    return (L->per_n ? 1 : L->N) * D * L->S;
}

/* Runs the statement(s) for every element of X in memory order with i its
 * index, c its channel and k its statistic. */
#define NM_FOR(L, ...)                                                                                   \
    do {                                                                                                 \
        const int64_t D_ = (L)->G > 0 && (L)->C / (L)->G > 0 ? (L)->C / (L)->G : 1;                      \
        int64_t i_ = 0;                                                                                  \
        for (int64_t n_ = 0; n_ < (L)->N; n_++) {                                                        \
            const int64_t kb_ = (L)->per_n ? n_ * (L)->G : 0;                                            \
            if ((L)->nhwc) {                                                                             \
                for (int64_t s_ = 0; s_ < (L)->S; s_++)                                                  \
                    for (int64_t c = 0; c < (L)->C; c++, i_++) {                                         \
                        const int64_t i = i_, k = kb_ + c / D_;                                          \
                        __VA_ARGS__                                                                      \
                    }                                                                                    \
            } else {                                                                                     \
                for (int64_t c = 0; c < (L)->C; c++)                                                     \
                    for (int64_t s_ = 0; s_ < (L)->S; s_++, i_++) {                                      \
                        const int64_t i = i_, k = kb_ + c / D_;                                          \
                        __VA_ARGS__                                                                      \
                    }                                                                                    \
            }                                                                                            \
        }                                                                                                \
    } while (0)

void rc_norm_moments(const rc_norm_layout *L, const float *x, double *mean, double *var)
{
    const int64_t nst = rc_norm_nstats(L), cnt = rc_norm_count(L);
    for (int64_t k = 0; k < nst; k++) mean[k] = var[k] = 0.0;
    NM_FOR(L, mean[k] += x[i];);
    for (int64_t k = 0; k < nst; k++) mean[k] = cnt > 0 ? mean[k] / (double)cnt : 0.0;
    NM_FOR(L, const double d = (double)x[i] - mean[k]; var[k] += d * d;);
    for (int64_t k = 0; k < nst; k++) var[k] = cnt > 0 ? var[k] / (double)cnt : 0.0;
}

/* var[k] <- 1 / sqrt(var[k] + eps), in place. */
static void nm_inv_std(int64_t nst, double eps, double *var)
{
    for (int64_t k = 0; k < nst; k++) var[k] = 1.0 / sqrt(var[k] + eps);
}

/* y = (x - mu[k]) * rsig[k] * gamma[c] + beta[c]; y may alias x. */
static void nm_apply(const rc_norm_layout *L, const float *x, const double *mu, const double *rsig,
                     const float *gamma, const float *beta, float *y)
{
    NM_FOR(L, y[i] = (float)(((double)x[i] - mu[k]) * rsig[k] * (double)gamma[c] + (double)beta[c]););
}

/* dx of y = xhat * gamma + beta with xhat = (x - mu[k]) * rsig[k]; frozen: mu and
 * rsig are constants (dx = dy * gamma * rsig), else the statistics of x. acc:
 * 2 nstats + 2 C doubles (any contents); dgamma, dbeta left in acc[2 nstats ..].
 * dx may alias dy. */
static void nm_grad(const rc_norm_layout *L, const float *dy, const float *x, const float *gamma, const double *mu,
                    const double *rsig, int frozen, float *dx, double *acc)
{
    const int64_t nst = rc_norm_nstats(L), cnt = rc_norm_count(L);
    double *sg = acc, *sgx = acc + nst, *dg = acc + 2 * nst, *db = dg + L->C;
    memset(acc, 0, (size_t)(2 * nst + 2 * L->C) * sizeof *acc);
    NM_FOR(L, const double xh = ((double)x[i] - mu[k]) * rsig[k]; const double d = dy[i];
           const double g = d * (double)gamma[c]; sg[k] += g; sgx[k] += g * xh; dg[c] += d * xh; db[c] += d;);
    for (int64_t k = 0; k < nst; k++) {
        sg[k] = cnt > 0 ? sg[k] / (double)cnt : 0.0;
        sgx[k] = cnt > 0 ? sgx[k] / (double)cnt : 0.0;
    }
    if (frozen) {
        NM_FOR(L, dx[i] = (float)((double)dy[i] * (double)gamma[c] * rsig[k]););
        return;
    }
    NM_FOR(L, const double xh = ((double)x[i] - mu[k]) * rsig[k]; const double g = (double)dy[i] * (double)gamma[c];
           dx[i] = (float)((g - sg[k] - xh * sgx[k]) * rsig[k]););
}

/* ================================================================ arguments */

enum { NM_GN, NM_IN, NM_BN };

typedef struct {
    int kind, nhwc, is_test;
    int64_t group, num_batches;
    float epsilon, momentum;
    double *buf; /* scratch (owned) */
    int64_t buf_n;
} nm_state;

static void nm_free(void *p)
{
    nm_state *s = p;
    if (!s) return;
    free(s->buf);
    free(s);
}

static rc_status nm_args(rc_op *op, int kind, rc_err *err)
{
    nm_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    s->kind = kind;
    rc_status st;
    int64_t test = 0, nb = 1;
    if ((st = rc_checks_order(op, &s->nhwc, err))) return st;
    if ((st = rc_arg_f(&op->def, "epsilon", 1e-5f, &s->epsilon, err))) return st;
    if (!isfinite(s->epsilon) || s->epsilon < 0.0f)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument epsilon must be finite and >= 0, got %g",
                          (double)s->epsilon);
    if (kind == NM_GN) {
        if ((st = rc_arg_i(&op->def, "group", 32, &s->group, err))) return st;
        if (s->group < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument group must be >= 1, got %lld", (long long)s->group);
    }
    if (kind == NM_BN) {
        if ((st = rc_arg_f(&op->def, "momentum", 0.9f, &s->momentum, err))) return st;
        if (!isfinite(s->momentum))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument momentum must be finite, got %g", (double)s->momentum);
        if ((st = rc_arg_i(&op->def, "is_test", 0, &test, err)) ||
            (st = rc_arg_i(&op->def, "num_batches", 1, &nb, err)))
            return st;
        s->is_test = test != 0;
        if (nb < 1 || (nb > 1 && s->is_test))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument num_batches must be >= 1 (and 1 with is_test=1), got "
                              "%lld", (long long)nb);
        s->num_batches = nb;
        const int want = nb > 1 ? 7 : 5;
        if (op->n_in != want)
            return rc_op_fail(op, err, RC_ERR_VALUE, "with num_batches=%lld takes %d inputs%s, got %d inputs",
                              (long long)nb, want, nb > 1 ? " (the last two the sums over the batches)" : "",
                              op->n_in);
    }
    return RC_OK;
}

static rc_status gn_setup(rc_op *op, rc_err *err) { return nm_args(op, NM_GN, err); }

static rc_status in_setup(rc_op *op, rc_err *err) { return nm_args(op, NM_IN, err); }

/* SpatialBN: 5 inputs; 1 output with is_test=1, else 5. */
static rc_status bn_setup(rc_op *op, rc_err *err)
{
    rc_status st = nm_args(op, NM_BN, err);
    if (st) return st;
    const nm_state *s = op->state;
    if (op->n_out != (s->is_test ? 1 : 5))
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s, got %d outputs",
                          s->is_test ? "with is_test=1 gives 1 output (Y)"
                                     : "in training (is_test=0) gives 5 outputs (Y, running_mean, running_var, "
                                       "saved_mean, saved_inv_std)", op->n_out);
    return RC_OK;
}

static rc_status bn_grad_setup(rc_op *op, rc_err *err) { return nm_args(op, NM_BN, err); }

/* ================================================================ shapes */

/* Input xi: float32 X with >= 2 dims -> the layout (G = 1, per_n = 1). */
static rc_status nm_layout_of(rc_op *op, int xi, rc_norm_layout *L, rc_err *err)
{
    const nm_state *s = op->state;
    rc_status st = rc_checks_image(op, xi, s->nhwc, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, xi);
    memset(L, 0, sizeof *L);
    L->nhwc = s->nhwc;
    L->N = x->dims[0];
    L->C = x->dims[s->nhwc ? x->ndim - 1 : 1];
    L->S = s->nhwc ? rc_dims_prod(x, 1, x->ndim - 1) : rc_dims_prod(x, 2, x->ndim);
    L->G = 1;
    L->per_n = 1;
    return RC_OK;
}

/* Input i: float32 of shape (a) (b < 0) or (a, b). */
static rc_status nm_expect(rc_op *op, int i, int64_t a, int64_t b, const char *what, const char *dims, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    rc_tensor want;
    rc_tensor_init(&want);
    want.dtype = RC_F32;
    want.dims[want.ndim++] = a;
    if (b >= 0) want.dims[want.ndim++] = b;
    if (rc_tensor_same_shape(t, &want)) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have shape %s (%s), got %s", i,
                      rc_in_name(op, i), what, RC_SHAPE(&want), dims, RC_SHAPE(t));
}

/* Input i must have X's (input xi) shape. */
static rc_status nm_like_x(rc_op *op, int i, int xi, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, xi), *t = rc_in(op, i);
    if (rc_tensor_same_shape(t, x)) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have the shape of input %d blob '%s' %s, "
                      "got %s", i, rc_in_name(op, i), what, xi, rc_in_name(op, xi), RC_SHAPE(x), RC_SHAPE(t));
}

/* GroupNorm's X (input xi) with the groups: C must be a multiple of group. */
static rc_status gn_layout(rc_op *op, int xi, rc_norm_layout *L, rc_err *err)
{
    const nm_state *s = op->state;
    rc_status st = nm_layout_of(op, xi, L, err);
    if (st) return st;
    if (L->C % s->group != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument group=%lld must divide the %lld channels of input %d blob "
                          "'%s' %s (order %s)", (long long)s->group, (long long)L->C, xi, rc_in_name(op, xi),
                          RC_SHAPE(rc_in(op, xi)), s->nhwc ? "NHWC" : "NCHW");
    L->G = s->group;
    return RC_OK;
}

/* The channel params, inputs i and i + 1 (i + 1 only if j > 0): shape (C,). */
static rc_status nm_params(rc_op *op, int i, const char *a, int j, const char *b, const rc_norm_layout *L,
                           rc_err *err)
{
    rc_status st = nm_expect(op, i, L->C, -1, a, "C", err);
    if (st || j < 0) return st;
    return nm_expect(op, j, L->C, -1, b, "C", err);
}

static rc_status gn_shapes(rc_op *op, rc_norm_layout *L, rc_err *err)
{
    rc_status st = gn_layout(op, 0, L, err);
    return st ? st : nm_params(op, 1, "gamma", 2, "beta", L, err);
}

/* GroupNormGradient(dY, X, gamma, beta, mean, inv_std). */
static rc_status gn_grad_shapes(rc_op *op, rc_norm_layout *L, rc_err *err)
{
    rc_status st = gn_layout(op, 1, L, err);
    if (st || (st = nm_like_x(op, 0, 1, "dY", err)) || (st = nm_params(op, 2, "gamma", 3, "beta", L, err)))
        return st;
    if ((st = nm_expect(op, 4, L->N, L->G, "mean", "N, group", err))) return st;
    return nm_expect(op, 5, L->N, L->G, "inv_std", "N, group", err);
}

static rc_status in_shapes(rc_op *op, rc_norm_layout *L, rc_err *err)
{
    rc_status st = nm_layout_of(op, 0, L, err);
    if (st) return st;
    L->G = L->C;
    return nm_params(op, 1, "scale", 2, "bias", L, err);
}

/* InstanceNormGradient(X, scale, bias, dY[, mean[, inv_stdev]]). */
static rc_status in_grad_shapes(rc_op *op, rc_norm_layout *L, rc_err *err)
{
    rc_status st = in_shapes(op, L, err);
    if (st || (st = nm_like_x(op, 3, 0, "dY", err))) return st;
    if (op->n_in > 4 && (st = nm_expect(op, 4, L->N, L->C, "mean", "N, C", err))) return st;
    if (op->n_in > 5 && (st = nm_expect(op, 5, L->N, L->C, "inv_stdev", "N, C", err))) return st;
    return RC_OK;
}

/* SpatialBN(X, scale, bias, mean, var): one statistic per channel over the batch. */
static rc_status bn_shapes(rc_op *op, rc_norm_layout *L, rc_err *err)
{
    rc_status st = nm_layout_of(op, 0, L, err);
    if (st) return st;
    L->G = L->C;
    L->per_n = 0;
    if ((st = nm_params(op, 1, "scale", 2, "bias", L, err)) || (st = nm_params(op, 3, "mean", 4, "var", L, err)))
        return st;
    if (op->n_in > 5) return nm_params(op, 5, "batch_mean_sum", 6, "batch_var_sum", L, err);
    return RC_OK;
}

/* SpatialBNGradient(X, scale, dY, mean, inv_std or var). */
static rc_status bn_grad_shapes(rc_op *op, rc_norm_layout *L, rc_err *err)
{
    const nm_state *s = op->state;
    rc_status st = nm_layout_of(op, 0, L, err);
    if (st) return st;
    L->G = L->C;
    L->per_n = 0;
    if ((st = nm_params(op, 1, "scale", -1, NULL, L, err)) || (st = nm_like_x(op, 2, 0, "dY", err))) return st;
    if ((st = nm_params(op, 3, s->is_test ? "mean" : "saved_mean", 4, s->is_test ? "var" : "saved_inv_std", L, err)))
        return st;
    if (op->n_in > 5) return nm_params(op, 5, "dscale_sum", 6, "dbias_sum", L, err);
    return RC_OK;
}

#define NM_CHECK(name, shapes)                                                                           \
    static rc_status name(rc_op *op, rc_err *err)                                                        \
    {                                                                                                    \
        rc_norm_layout L = {0};                                                                                \
        return shapes(op, &L, err);                                                                      \
    }
NM_CHECK(gn_check, gn_shapes)
NM_CHECK(gn_grad_check, gn_grad_shapes)
NM_CHECK(in_check, in_shapes)
NM_CHECK(in_grad_check, in_grad_shapes)
NM_CHECK(bn_check, bn_shapes)
NM_CHECK(bn_grad_check, bn_grad_shapes)

/* Output o resized to X's (input xi) shape (b < -1), (a) (b == -1) or (a, b). */
static rc_status nm_out(rc_op *op, int o, int xi, int64_t a, int64_t b, rc_err *err)
{
    const rc_tensor *x = rc_in(op, xi);
    rc_tensor *t = rc_out(op, o);
    if (b < -1 && t == x) return RC_OK;
    int64_t dims[2] = {a, b};
    rc_status st = b < -1 ? rc_tensor_resize_like(t, x, err) : rc_tensor_resize(t, RC_F32, b < 0 ? 1 : 2, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* The scratch: at least n doubles. */
static rc_status nm_scratch(rc_op *op, int64_t n, double **out, rc_err *err)
{
    nm_state *s = op->state;
    if (n > s->buf_n) {
        double *b = n < INT64_MAX / 16 ? realloc(s->buf, (size_t)n * sizeof *b) : NULL;
        if (!b)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "cannot allocate the %lld sums of the statistics",
                              (long long)n);
        s->buf = b;
        s->buf_n = n;
    }
    *out = s->buf;
    return RC_OK;
}

static void to_f32(int64_t n, const double *a, float *y)
{
    for (int64_t k = 0; k < n; k++) y[k] = (float)a[k];
}

static void to_f64(int64_t n, const float *a, double *y)
{
    for (int64_t k = 0; k < n; k++) y[k] = a[k];
}

/* ================================================================ run */

/* Forward of GroupNorm / InstanceNorm: statistics per sample; outputs 1, 2
 * (those present) get mean and inv_std of shape (N, G). */
static rc_status nm_run_per_sample(rc_op *op, const rc_norm_layout *L, rc_err *err)
{
    const nm_state *s = op->state;
    const int64_t nst = rc_norm_nstats(L);
    double *buf = NULL;
    rc_status st = nm_scratch(op, 2 * nst, &buf, err);
    if (st || (st = nm_out(op, 0, 0, 0, -2, err))) return st;
    for (int o = 1; o < op->n_out; o++)
        if ((st = nm_out(op, o, 0, L->N, L->G, err))) return st;
    double *mu = buf, *rsig = buf + nst;
    const rc_tensor *x = rc_in(op, 0);
    rc_norm_moments(L, rc_f32(x), mu, rsig);
    nm_inv_std(nst, (double)s->epsilon, rsig);
    nm_apply(L, rc_f32(x), mu, rsig, rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_out(op, 0)));
    if (op->n_out > 1) to_f32(nst, mu, rc_f32(rc_out(op, 1)));
    if (op->n_out > 2) to_f32(nst, rsig, rc_f32(rc_out(op, 2)));
    return RC_OK;
}

static rc_status gn_run(rc_op *op, rc_err *err)
{
    rc_norm_layout L = {0};
    rc_status st = gn_shapes(op, &L, err);
    return st ? st : nm_run_per_sample(op, &L, err);
}

static rc_status in_run(rc_op *op, rc_err *err)
{
    rc_norm_layout L = {0};
    rc_status st = in_shapes(op, &L, err);
    return st ? st : nm_run_per_sample(op, &L, err);
}

/* The backward pass once the statistics are in buf[0 .. 2 nst): outputs dX
 * (shape of input xi), dgamma, dbeta (C,). dX may be dY (input dyi). */
static rc_status nm_grad_out(rc_op *op, const rc_norm_layout *L, int xi, int dyi, int gi, int frozen, rc_err *err)
{
    const int64_t nst = rc_norm_nstats(L);
    double *buf = NULL;
    rc_status st = nm_scratch(op, 4 * nst + 2 * L->C, &buf, err);
    if (st) return st;
    if (rc_out(op, 0) != rc_in(op, dyi) && (st = nm_out(op, 0, xi, 0, -2, err))) return st;
    if ((st = nm_out(op, 1, xi, L->C, -1, err)) || (st = nm_out(op, 2, xi, L->C, -1, err))) return st;
    nm_grad(L, rc_f32(rc_in(op, dyi)), rc_f32(rc_in(op, xi)), rc_f32(rc_in(op, gi)), buf, buf + nst, frozen,
            rc_f32(rc_out(op, 0)), buf + 2 * nst);
    to_f32(L->C, buf + 4 * nst, rc_f32(rc_out(op, 1)));
    to_f32(L->C, buf + 4 * nst + L->C, rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* Reads the float statistics inputs mi, ri into the scratch's first 2 nst
 * doubles (ri as var -> inv_std when var is set). */
static rc_status nm_load_stats(rc_op *op, const rc_norm_layout *L, int mi, int ri, int var, rc_err *err)
{
    const nm_state *s = op->state;
    const int64_t nst = rc_norm_nstats(L);
    double *buf = NULL;
    rc_status st = nm_scratch(op, 4 * nst + 2 * L->C, &buf, err);
    if (st) return st;
    to_f64(nst, rc_f32(rc_in(op, mi)), buf);
    to_f64(nst, rc_f32(rc_in(op, ri)), buf + nst);
    if (var) nm_inv_std(nst, (double)s->epsilon, buf + nst);
    return RC_OK;
}

static rc_status gn_grad_run(rc_op *op, rc_err *err)
{
    rc_norm_layout L = {0};
    rc_status st = gn_grad_shapes(op, &L, err);
    if (st || (st = nm_load_stats(op, &L, 4, 5, 0, err))) return st;
    return nm_grad_out(op, &L, 1, 0, 2, 0, err);
}

static rc_status in_grad_run(rc_op *op, rc_err *err)
{
    const nm_state *s = op->state;
    rc_norm_layout L = {0};
    rc_status st = in_grad_shapes(op, &L, err);
    if (st) return st;
    if (op->n_in == 6) {
        if ((st = nm_load_stats(op, &L, 4, 5, 0, err))) return st;
    } else {
        const int64_t nst = rc_norm_nstats(&L);
        double *buf = NULL;
        if ((st = nm_scratch(op, 4 * nst + 2 * L.C, &buf, err))) return st;
        rc_norm_moments(&L, rc_f32(rc_in(op, 0)), buf, buf + nst);
        nm_inv_std(nst, (double)s->epsilon, buf + nst);
        if (op->n_in == 5) to_f64(nst, rc_f32(rc_in(op, 4)), buf); /* the given mean */
    }
    return nm_grad_out(op, &L, 0, 3, 1, 0, err);
}

static rc_status bn_run(rc_op *op, rc_err *err)
{
    const nm_state *s = op->state;
    rc_norm_layout L = {0};
    rc_status st = bn_shapes(op, &L, err);
    if (st) return st;
    const int64_t C = L.C, cnt = rc_norm_count(&L);
    double *buf = NULL;
    if ((st = nm_scratch(op, 2 * C, &buf, err))) return st;
    double *mu = buf, *rsig = buf + C;
    const float *x = rc_f32(rc_in(op, 0));
    if (s->is_test) {
        if ((st = nm_out(op, 0, 0, 0, -2, err))) return st;
        to_f64(C, rc_f32(rc_in(op, 3)), mu);
        to_f64(C, rc_f32(rc_in(op, 4)), rsig);
        nm_inv_std(C, (double)s->epsilon, rsig);
        nm_apply(&L, x, mu, rsig, rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_out(op, 0)));
        return RC_OK;
    }
    if ((st = nm_out(op, 0, 0, 0, -2, err))) return st;
    for (int o = 1; o < 5; o++)
        if ((o > 2 && op->n_in == 5) || rc_out(op, o) != rc_in(op, o + 2))
            if ((st = nm_out(op, o, 0, C, -1, err))) return st;
    const float *rm = rc_f32(rc_in(op, 3)), *rv = rc_f32(rc_in(op, 4));
    float *orm = rc_f32(rc_out(op, 1)), *orv = rc_f32(rc_out(op, 2));
    float *sm = rc_f32(rc_out(op, 3)), *sr = rc_f32(rc_out(op, 4));
    if (cnt == 0) {
        for (int64_t c = 0; c < C; c++) {
            orm[c] = rm[c];
            orv[c] = rv[c];
            sm[c] = sr[c] = 0.0f;
        }
        return RC_OK;
    }
    const int64_t size = cnt * s->num_batches;
    if (s->num_batches > 1) {
        const float *sx = rc_f32(rc_in(op, 5)), *sxx = rc_f32(rc_in(op, 6));
        for (int64_t c = 0; c < C; c++) {
            mu[c] = (double)sx[c] / (double)size;
            rsig[c] = (double)sxx[c] / (double)size - mu[c] * mu[c];
        }
    } else {
        rc_norm_moments(&L, x, mu, rsig);
    }
    const double m = (double)s->momentum, unbias = size > 1 ? (double)size / (double)(size - 1) : 0.0;
    for (int64_t c = 0; c < C; c++) {
        orm[c] = (float)(m * (double)rm[c] + (1.0 - m) * mu[c]);
        orv[c] = (float)(m * (double)rv[c] + (1.0 - m) * unbias * rsig[c]);
    }
    nm_inv_std(C, (double)s->epsilon, rsig);
    nm_apply(&L, x, mu, rsig, rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_out(op, 0)));
    to_f32(C, mu, sm);
    to_f32(C, rsig, sr);
    return RC_OK;
}

static rc_status bn_grad_run(rc_op *op, rc_err *err)
{
    const nm_state *s = op->state;
    rc_norm_layout L = {0};
    rc_status st = bn_grad_shapes(op, &L, err);
    if (st || (st = nm_load_stats(op, &L, 3, 4, s->is_test, err))) return st;
    if (s->num_batches == 1) return nm_grad_out(op, &L, 0, 2, 1, s->is_test, err);
    /* the sums of dscale and dbias over the batches are given: dX in closed form */
    const int64_t C = L.C, cnt = rc_norm_count(&L);
    double *buf = NULL;
    if ((st = nm_scratch(op, 4 * C, &buf, err))) return st;
    const double *mu = buf, *rsig = buf + C;
    double *al = buf + 2 * C, *be = buf + 3 * C;
    const float *dsv = rc_f32(rc_in(op, 5)), *dbv = rc_f32(rc_in(op, 6));
    if (rc_out(op, 0) != rc_in(op, 2) && (st = nm_out(op, 0, 0, 0, -2, err))) return st;
    for (int o = 1; o < 3; o++)
        if (rc_out(op, o) != rc_in(op, o + 4) && (st = nm_out(op, o, 0, C, -1, err))) return st;
    float *dsc = rc_f32(rc_out(op, 1)), *dbi = rc_f32(rc_out(op, 2));
    const float *scale = rc_f32(rc_in(op, 1));
    for (int64_t c = 0; c < C; c++) {
        const double ds = cnt > 0 ? (double)dsv[c] / (double)s->num_batches : 0.0;
        const double db = cnt > 0 ? (double)dbv[c] / (double)s->num_batches : 0.0;
        al[c] = (double)scale[c] * rsig[c];
        be[c] = cnt > 0 ? (mu[c] * ds * rsig[c] - db) / (double)cnt : 0.0; /* dX = al (dY + X (-ds rsig / cnt) + be) */
        buf[c] = cnt > 0 ? -ds * rsig[c] / (double)cnt : 0.0;               /* mu no longer needed: the X factor */
        dsc[c] = (float)ds;
        dbi[c] = (float)db;
    }
    const float *dy = rc_f32(rc_in(op, 2)), *x = rc_f32(rc_in(op, 0));
    float *dx = rc_f32(rc_out(op, 0));
    NM_FOR(&L, (void)k; dx[i] = (float)(al[c] * ((double)dy[i] + buf[c] * (double)x[i] + be[c])););
    return RC_OK;
}

/* ================================================================ table */

static int inplace_bn(int in, int out)
{
    return (in == 0 && out == 0) || (in == 3 && out == 1) || (in == 4 && out == 2) || (in == 5 && out == 3) ||
           (in == 6 && out == 4);
}

static int inplace_in_grad(int in, int out) { return in == 3 && out == 0; }

static int inplace_bn_grad(int in, int out)
{
    return (in == 2 && out == 0) || (in == 5 && out == 1) || (in == 6 && out == 2);
}

const rc_op_schema rc_ops_norm2[] = {
    {"GroupNorm", 3, 3, 3, 3, rc_inplace_first, gn_setup, gn_run, nm_free,
     "(X, gamma, beta) -> (Y, mean, inv_std): X normalized per sample over groups of channels (args group, "
     "epsilon, order)", gn_check},
    {"GroupNormGradient", 6, 6, 3, 3, rc_inplace_first, gn_setup, gn_grad_run, nm_free,
     "(dY, X, gamma, beta, mean, inv_std) -> (dX, dgamma, dbeta) (args as GroupNorm's)", gn_grad_check},
    {"InstanceNorm", 3, 3, 1, 3, rc_inplace_first, in_setup, in_run, nm_free,
     "(X, scale, bias) -> Y[, mean[, inv_stdev]]: X normalized per sample and channel (args epsilon, order)",
     in_check},
    {"InstanceNormGradient", 4, 6, 3, 3, inplace_in_grad, in_setup, in_grad_run, nm_free,
     "(X, scale, bias, dY[, mean[, inv_stdev]]) -> (dX, dscale, dbias) (args as InstanceNorm's)", in_grad_check},
    {"SpatialBN", 5, 7, 1, 5, inplace_bn, bn_setup, bn_run, nm_free,
     "(X, scale, bias, mean, var) -> Y (is_test=1) or (Y, running_mean, running_var, saved_mean, saved_inv_std): "
     "batch normalization per channel (args is_test, epsilon, momentum, order; num_batches > 1: inputs 5, 6 the sums "
     "of x, x^2 over the batches)", bn_check},
    {"SpatialBNGradient", 5, 7, 3, 3, inplace_bn_grad, bn_grad_setup, bn_grad_run, nm_free,
     "(X, scale, dY, saved_mean, saved_inv_std) -> (dX, dscale, dbias); with is_test=1 inputs 3, 4 are the "
     "running mean and var; num_batches > 1: inputs 5, 6 the sums of dscale, dbias (args as SpatialBN's)",
     bn_grad_check},
    {0},
};
