/* ops/optim_more.c -- the ops of Caffe2's DecayAdagrad, GFtrl, Storm, LARS,
 * Adam's learning-rate adaption and YellowFin (caffe2/sgd decay_adagrad_op,
 * gftrl_op, storm_op, lars_op, learning_rate_adaption_op, yellowfin_op; the
 * last in its own section below).
 *
 *   DecayAdagrad(PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2)
 *   GFtrl(VAR, N_Z, GRAD[, ALPHA]) -> (VAR, N_Z)
 *   Storm(PARAM, MOMENT, GRAD_SQ_SUM, GRAD, LR) -> (PARAM, MOMENT, GRAD_SQ_SUM)
 *   SparseStorm(PARAM, MOMENT, GRAD_SQ_SUM, GRAD, INDICES, LR) -> (PARAM, MOMENT, GRAD_SQ_SUM)
 *   Lars(X, DX, WD, TRUST, LR_MAX) -> LR_RESCALED
 *   LearningRateAdaption(LR, GRAD, EFFGRAD) -> LR
 *
 * The arithmetic is Caffe2's, in float unless said otherwise:
 *   DecayAdagrad: m' = beta1 * m + (1 - beta1) * g;  v' = v + g^2;
 *     param' = param + lr * (m' / c / (sqrt(v') + epsilon) + weight_decay * param),
 *     c = 1 - beta1^t, t = ITER + 1 (in double, rounded to float once) when
 *     bias_correction_first (default 1), else c = 1. beta2 is accepted and
 *     unused, as in Caffe2 (v is a plain sum of squares). Defaults: beta1
 *     0.9, beta2 0.999, epsilon 1e-5, weight_decay 0.
 *   GFtrl (group-lasso FTRL): GRAD seen as (O, I) = (shape[0], size / shape[0]);
 *     each column j is one group. Per element, with alpha_inv = 1 / alpha:
 *       n' = n + g^2;  sigma = (sqrt(n') - sqrt(n)) * alpha_inv;  z' = z + g - sigma * w
 *     and with zn = the L2 norm of z' over the column (summed in double),
 *       w' = zn > lambda1 * sqrt(O) ? z' * (lambda1 * sqrt(O) / zn - 1) /
 *            ((beta + sqrt(n')) * alpha_inv + lambda2) : 0.
 *     N_Z is VAR.shape + (2,) (n and z interleaved, as Ftrl's). Defaults: alpha
 *     0.005, beta 1, lambda1 0.001, lambda2 0.001; ALPHA (input 3) replaces the
 *     argument alpha at run time (giving both is a ValueError, as Caffe2's).
 *   Storm: s' = s + sum(g^2) (summed in double, rounded once);
 *     nlr = lr * (beta + s')^(-1/3) (in double, rounded to float);
 *     a = momentum * nlr^2;  m' = g + (1 - a) * (m - g);  param' = param + nlr * m'.
 *     Defaults: momentum 10, beta 0.1. LR is the signed rate (Caffe2's
 *     StormOptimizer passes -lr).
 *   SparseStorm: s' from all of GRAD (each row of each occurrence); then, for
 *     each k in order, row INDICES.flat[k] of MOMENT and PARAM gets Storm's
 *     element step with row k of GRAD (one occurrence at a time, as Caffe2's
 *     loop). Rows not named keep their moment (dense Storm decays every
 *     moment by (1 - a), so the two agree only where the moment was 0).
 *     Note Caffe2's input order: GRAD before INDICES.
 *   Lars: val = X_norm > 0 ? TRUST / (DX_norm / X_norm + WD + offset) : 1;
 *     LR_RESCALED (shape (1,)) = max(min(val, LR_MAX), lr_min), the norms
 *     L2 over all elements (summed in double). Defaults: offset 0.5, lr_min 0.02.
 *   LearningRateAdaption: x = sum(GRAD * EFFGRAD), y = sqrt(sum(GRAD^2)),
 *     z = sqrt(sum(EFFGRAD^2)), each summed in float in element order (as
 *     Caffe2); with normalized_lr_adaption (default 1) y and z are raised to
 *     at least 1e-12 and LR' = LR * (1 - lr_alpha * x / (y * z)), else
 *     LR' = LR - lr_alpha * x. LR' has LR's shape. Default lr_alpha 0.01.
 *
 * Differences from Caffe2:
 *  - shapes are compared, not only sizes: every state of PARAM's shape,
 *    N_Z VAR.shape + (2,), GRAD_SQ_SUM / LR / ALPHA / WD / TRUST / LR_MAX one
 *    float32 each; a mismatch is a ValueError naming the blobs and shapes;
 *  - arguments are checked when the op is created (Caffe2 checked none, or
 *    Lars's at run time): DecayAdagrad beta1 in [0, 1) with
 *    bias_correction_first (c would be 0) and in [0, 1] without, epsilon and
 *    weight_decay finite and >= 0; GFtrl alpha finite > 0, beta, lambda1,
 *    lambda2 finite >= 0 with beta + lambda2 > 0 (else the step divides 0 by 0
 *    where n' = 0); Storm momentum and beta finite and >= 0; Lars offset and
 *    lr_min finite and >= 0; LearningRateAdaption lr_alpha finite and
 *    normalized_lr_adaption 0 or 1 (Caffe2 read any int as a bool);
 *  - LearningRateAdaption: GRAD and EFFGRAD must have one shape (Caffe2
 *    compared sizes), LR one float32 value;
 *  - Storm's beta + GRAD_SQ_SUM' must be > 0 and GRAD_SQ_SUM finite (a
 *    ValueError before anything is written; Caffe2 raised 0 to the power -1/3);
 *  - SparseStorm with no indices leaves everything as it was (as Caffe2),
 *    but still checks every input; every index is checked before anything is
 *    written (IndexError; Caffe2 only in debug builds, and not at all for
 *    rows of one value); indices are int32; outputs must be the inputs'
 *    blobs (ValueError at creation);
 *  - Lars: WD and TRUST must be finite and >= 0, LR_MAX finite and >= lr_min
 *    (ValueError at run time; Caffe2 read whatever they held). When the
 *    denominator is 0 (DX = 0, WD = 0, offset = 0) the result is LR_MAX if
 *    TRUST > 0 and lr_min if TRUST = 0 (Caffe2 divided by zero);
 *  - GFtrl on an empty VAR does nothing (Caffe2 divided by shape[0] = 0);
 *  - sums of squares are accumulated in double (Caffe2: float).
 * Outputs may be the blobs of the inputs they replace (in place: the usual
 * use); the kernels read element i of every input before writing element i
 * (GFtrl reads a whole column before writing it; Storm and Lars read their
 * scalars first). Kernels are plain loops over pointers; none keeps global
 * state, so op instances may run concurrently. op->state (the parsed
 * arguments) is owned by the op and freed with free(). Nothing allocates
 * except the resize of an output whose shape changed.
 */
#include "../core/rc_core.h"
#include "sparse.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

/* Output o gets the shape of input i (float32); an output that is input i's blob keeps its buffer. */
static rc_status resize_out_like_in(rc_op *op, int o, int i, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, t->dims, sizeof dims);
    if (rc_tensor_resize(rc_out(op, o), RC_F32, t->ndim, dims, err))
        return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* Inputs like[k] must be float32 with the shape of input `ref` (float32 too). */
static rc_status check_same_shape(rc_op *op, int ref, const int *like, int n, rc_err *err)
{
    rc_status st = rc_check_input(op, ref, RC_F32, err);
    if (st) return st;
    for (int k = 0; k < n; k++)
        if ((st = rc_check_input(op, like[k], RC_F32, err))) return st;
    const rc_tensor *r = rc_in(op, ref);
    for (int k = 0; k < n; k++)
        if (!rc_tensor_same_shape(rc_in(op, like[k]), r))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have the shape of input %d blob '%s' %s, "
                              "got %s", like[k], rc_in_name(op, like[k]), ref, rc_in_name(op, ref), RC_SHAPE(r),
                              RC_SHAPE(rc_in(op, like[k])));
    return RC_OK;
}

/* Float argument `name` (default dflt) into *out, finite and >= lo (> lo when strict). */
static rc_status arg_at_least(rc_op *op, const char *name, float dflt, float lo, int strict, float *out,
                              rc_err *err)
{
    rc_status st = rc_arg_f(&op->def, name, dflt, out, err);
    if (st) return st;
    if (!isfinite(*out) || (strict ? !(*out > lo) : !(*out >= lo)))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be finite and %s %g, got %g", name,
                          strict ? ">" : ">=", (double)lo, (double)*out);
    return RC_OK;
}

/* Input i: the iteration counter, int32 of one element, >= 0; *it = its value. */
static rc_status read_iter(rc_op *op, int i, int64_t *it, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    const char *name = rc_in_name(op, i);
    if (t->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the iteration counter) holds no tensor (was it "
                          "fed or computed?)", i, name);
    if (t->dtype != RC_I32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' (the iteration counter) must be int32, got %s", i,
                          name, RC_SHAPE(t));
    if (rc_tensor_numel(t) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the iteration counter) must hold one value, "
                          "got %s", i, name, RC_SHAPE(t));
    *it = rc_i32(t)[0];
    if (*it < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the iteration counter) must be >= 0, got %lld",
                          i, name, (long long)*it);
    return RC_OK;
}

/* Sum of squares of n values, in double. */
static double sum_sq(int64_t n, const float *x)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    return s;
}

/* The state of every op here: its arguments (those an op does not take stay 0). */
typedef struct more_state {
    float beta1, epsilon, weight_decay; /* DecayAdagrad */
    int64_t bias_correction_first;      /* DecayAdagrad */
    float alpha_inv, beta, lambda1, lambda2; /* GFtrl (beta also Storm's) */
    float momentum;                     /* Storm */
    float offset, lr_min;               /* Lars */
    float lr_alpha;                     /* LearningRateAdaption */
    int64_t normalized;                 /* LearningRateAdaption */
} more_state;

static rc_status new_state(rc_op *op, more_state **s, rc_err *err)
{
    *s = calloc(1, sizeof **s);
    if (!*s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = *s; /* owned by the op, released by the schema's free_state (free) */
    return RC_OK;
}

/* ================================================================ DecayAdagrad */

static rc_status decay_adagrad_setup(rc_op *op, rc_err *err)
{
    more_state *s;
    rc_status st;
    float beta2;
    if ((st = new_state(op, &s, err))) return st;
    if ((st = rc_arg_f(&op->def, "beta1", 0.9f, &s->beta1, err))) return st;
    if ((st = rc_arg_f(&op->def, "beta2", 0.999f, &beta2, err))) return st; /* accepted, unused (as Caffe2) */
    if ((st = arg_at_least(op, "epsilon", 1e-5f, 0.0f, 0, &s->epsilon, err))) return st;
    if ((st = arg_at_least(op, "weight_decay", 0.0f, 0.0f, 0, &s->weight_decay, err))) return st;
    if ((st = rc_arg_i(&op->def, "bias_correction_first", 1, &s->bias_correction_first, err))) return st;
    if (s->bias_correction_first && !(s->beta1 >= 0.0f && s->beta1 < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta1 must be in [0, 1) with bias_correction_first, "
                          "got %g", (double)s->beta1);
    if (!(s->beta1 >= 0.0f && s->beta1 <= 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta1 must be in [0, 1], got %g", (double)s->beta1);
    return RC_OK;
}

/* (PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER): the first four float32 of one shape, LR one float32 (no data
 * values; ITER is checked when read). */
static rc_status decay_adagrad_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 2, 3};
    rc_status st = check_same_shape(op, 0, like, 3, err);
    if (st) return st;
    return rc_sparse_check_scalar(op, 4, "the learning rate", err);
}

/* w, m, v, g: (n,) -> nw, nm, nv: (n,) (see the top of the file); each may alias its input. */
static void decay_adagrad_kernel(int64_t n, const float *w, const float *m, const float *v, const float *g,
                                 float lr, float beta1, float eps, float wd, float c, float *nw, float *nm,
                                 float *nv)
{
    const float c1 = 1.0f - beta1;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], wi = w[i];
        const float mi = m[i] * beta1 + gi * c1;
        const float vi = v[i] + gi * gi;
        nm[i] = mi;
        nv[i] = vi;
        nw[i] = wi + lr * (mi / c / (sqrtf(vi) + eps) + wd * wi);
    }
}

static rc_status decay_adagrad_run(rc_op *op, rc_err *err)
{
    const more_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    int64_t it = 0;
    if ((st = decay_adagrad_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 4, "the learning rate", &lr, err))) return st;
    if ((st = read_iter(op, 5, &it, err))) return st;
    const float c = s->bias_correction_first ? (float)(1.0 - pow((double)s->beta1, (double)it + 1.0)) : 1.0f;
    for (int o = 0; o < 3; o++)
        if ((st = resize_out_like_in(op, o, o, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n)
        decay_adagrad_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)),
                             rc_f32(rc_in(op, 3)), lr, s->beta1, s->epsilon, s->weight_decay, c,
                             rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)), rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* ================================================================ GFtrl */

static rc_status gftrl_setup(rc_op *op, rc_err *err)
{
    more_state *s;
    rc_status st;
    float alpha;
    if ((st = new_state(op, &s, err))) return st;
    if (op->n_in > 3 && rc_opdef_arg(&op->def, "alpha"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "alpha is given both as input 3 blob '%s' and as an argument "
                          "(give one)", rc_in_name(op, 3));
    if ((st = arg_at_least(op, "alpha", 0.005f, 0.0f, 1, &alpha, err))) return st;
    if ((st = arg_at_least(op, "beta", 1.0f, 0.0f, 0, &s->beta, err))) return st;
    if ((st = arg_at_least(op, "lambda1", 0.001f, 0.0f, 0, &s->lambda1, err))) return st;
    if ((st = arg_at_least(op, "lambda2", 0.001f, 0.0f, 0, &s->lambda2, err))) return st;
    if (!(s->beta + s->lambda2 > 0.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments beta and lambda2 must not both be 0 (the step would "
                          "divide by 0 where n is 0)");
    s->alpha_inv = (float)(1.0 / (double)alpha);
    return RC_OK;
}

/* (VAR, N_Z, GRAD[, ALPHA]): VAR float32 with >= 1 dim, N_Z VAR.shape + (2,), GRAD VAR's shape, ALPHA one
 * float32 (no data values). */
static rc_status gftrl_check(rc_op *op, rc_err *err)
{
    static const int like[] = {2};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 1, err))) return st;
    if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *w = rc_in(op, 0), *nz = rc_in(op, 1);
    if (w->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (the variable) must have at least one dim (its "
                          "rows), got %s", rc_in_name(op, 0), RC_SHAPE(w));
    int ok = nz->ndim == w->ndim + 1 && nz->dims[w->ndim] == 2;
    for (int d = 0; ok && d < w->ndim; d++) ok = nz->dims[d] == w->dims[d];
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (n and z) must have the shape of input 0 blob "
                          "'%s' %s plus a last dim of 2, got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(w),
                          RC_SHAPE(nz));
    if (op->n_in > 3) return rc_sparse_check_scalar(op, 3, "alpha", err);
    return RC_OK;
}

/* w, g: (O, I), nz: (O, I, 2) -> nw, nnz; column j is one group (see the top). nw may alias w and nnz nz:
 * a column is read (first loop) before it is written (second loop), and each element is read before it
 * is written. */
static void gftrl_kernel(int64_t O, int64_t I, const float *w, const float *nz, const float *g,
                         const more_state *s, float alpha_inv, float *nw, float *nnz)
{
    const double thr = (double)s->lambda1 * sqrt((double)O);
    for (int64_t j = 0; j < I; j++) {
        double zn2 = 0.0;
        for (int64_t i = 0; i < O; i++) {
            const int64_t x = i * I + j;
            const float n0 = nz[2 * x], n1 = n0 + g[x] * g[x];
            const float sigma = (sqrtf(n1) - sqrtf(n0)) * alpha_inv;
            const float z1 = nz[2 * x + 1] + g[x] - sigma * w[x];
            zn2 += (double)z1 * (double)z1;
        }
        const double zn = sqrt(zn2);
        for (int64_t i = 0; i < O; i++) {
            const int64_t x = i * I + j;
            const float wi = w[x], gi = g[x], n0 = nz[2 * x], z0 = nz[2 * x + 1];
            const float n1 = n0 + gi * gi;
            const float sigma = (sqrtf(n1) - sqrtf(n0)) * alpha_inv;
            const float z1 = z0 + gi - sigma * wi;
            nnz[2 * x] = n1;
            nnz[2 * x + 1] = z1;
            if (zn > thr) {
                const float den = (s->beta + sqrtf(n1)) * alpha_inv + s->lambda2;
                nw[x] = (float)((double)z1 * (thr / zn - 1.0) / (double)den);
            } else {
                nw[x] = 0.0f;
            }
        }
    }
}

static rc_status gftrl_run(rc_op *op, rc_err *err)
{
    const more_state *s = op->state;
    rc_status st;
    float alpha_inv = s->alpha_inv;
    if ((st = gftrl_check(op, err))) return st;
    if (op->n_in > 3) {
        float a;
        if ((st = rc_sparse_read_scalar(op, 3, "alpha", &a, err))) return st;
        if (!isfinite(a) || !(a > 0.0f))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 3 blob '%s' (alpha) must be finite and > 0, got %g",
                              rc_in_name(op, 3), (double)a);
        alpha_inv = (float)(1.0 / (double)a);
    }
    for (int o = 0; o < 2; o++)
        if ((st = resize_out_like_in(op, o, o, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(w);
    if (n)
        gftrl_kernel(w->dims[0], n / w->dims[0], rc_f32(w), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), s,
                     alpha_inv, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)));
    return RC_OK;
}

/* ================================================================ Storm */

static rc_status storm_setup(rc_op *op, rc_err *err)
{
    more_state *s;
    rc_status st;
    if ((st = new_state(op, &s, err))) return st;
    if ((st = arg_at_least(op, "momentum", 10.0f, 0.0f, 0, &s->momentum, err))) return st;
    return arg_at_least(op, "beta", 0.1f, 0.0f, 0, &s->beta, err);
}

/* (PARAM, MOMENT, GRAD_SQ_SUM, GRAD, LR): PARAM, MOMENT, GRAD float32 of one shape; GRAD_SQ_SUM and LR one
 * float32 each (no data values). */
static rc_status storm_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 3};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 2, err))) return st;
    if ((st = rc_sparse_check_scalar(op, 2, "the sum of squared gradients", err))) return st;
    return rc_sparse_check_scalar(op, 4, "the learning rate", err);
}

/* Reads GRAD_SQ_SUM (input 2) and LR (input lr_in), adds ss (the squares of the gradient) to the sum into
 * *ns and computes the step's scalars *nlr and *a; a ValueError (nothing written) when the sum is not
 * finite or beta + the new sum is not > 0. */
static rc_status storm_scalars(rc_op *op, int lr_in, double ss, float *ns, float *nlr, float *a, rc_err *err)
{
    const more_state *s = op->state;
    float s0 = 0.0f, lr = 0.0f;
    rc_status st;
    if ((st = rc_sparse_read_scalar(op, 2, "the sum of squared gradients", &s0, err))) return st;
    if ((st = rc_sparse_read_scalar(op, lr_in, "the learning rate", &lr, err))) return st;
    *ns = s0 + (float)ss;
    if (!isfinite(s0) || !isfinite(*ns) || !(s->beta + *ns > 0.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the sum of squared gradients) must be finite "
                          "with beta + sum > 0 after adding this gradient's squares, got %g (new sum %g, beta %g)",
                          rc_in_name(op, 2), (double)s0, (double)*ns, (double)s->beta);
    *nlr = (float)((double)lr * pow((double)s->beta + (double)*ns, -1.0 / 3.0));
    *a = s->momentum * *nlr * *nlr;
    return RC_OK;
}

/* w, m, g: (n,) -> nw, nm: (n,); m' = g + (1 - a) * (m - g) (in double, as Caffe2's mixed expression),
 * w' = w + nlr * m'. nw may alias w, nm m. */
static void storm_kernel(int64_t n, const float *w, const float *m, const float *g, float nlr, float a, float *nw,
                         float *nm)
{
    const double c = 1.0 - (double)a;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i], wi = w[i];
        const float m1 = (float)((double)gi + c * (double)(mi - gi));
        nm[i] = m1;
        nw[i] = wi + nlr * m1;
    }
}

static rc_status storm_run(rc_op *op, rc_err *err)
{
    rc_status st;
    float ns, nlr, a;
    if ((st = storm_check(op, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const double ss = n ? sum_sq(n, rc_f32(rc_in(op, 3))) : 0.0;
    if ((st = storm_scalars(op, 4, ss, &ns, &nlr, &a, err))) return st;
    static const int like_in[] = {0, 1, 2};
    for (int o = 0; o < 3; o++)
        if ((st = resize_out_like_in(op, o, like_in[o], err))) return st;
    if (n)
        storm_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 3)), nlr, a,
                     rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)));
    rc_f32(rc_out(op, 2))[0] = ns;
    return RC_OK;
}

/* ---------------------------------------------------------------- SparseStorm */

/* (PARAM, MOMENT, GRAD_SQ_SUM, GRAD, INDICES, LR): MOMENT PARAM's shape, GRAD INDICES.shape +
 * PARAM.shape[1:], GRAD_SQ_SUM and LR one float32 each (no data values). */
static rc_status sparse_storm_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 1, err))) return st;
    if ((st = rc_sparse_check_scalar(op, 2, "the sum of squared gradients", err))) return st;
    if ((st = rc_sparse_check_indices(op, 4, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 4, 3, "the gradient", err))) return st;
    return rc_sparse_check_scalar(op, 5, "the learning rate", err);
}

static rc_status sparse_storm_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1, 2, 2};
    rc_status st = storm_setup(op, err);
    if (st) return st;
    return rc_sparse_require_inplace(op, pairs, 3, err);
}

/* In place: GRAD_SQ_SUM += the squares of all of GRAD; then rows INDICES[k] of MOMENT and PARAM get Storm's
 * step with row k of GRAD, k in order. No indices: nothing changes (as Caffe2). */
static rc_status sparse_storm_run(rc_op *op, rc_err *err)
{
    rc_status st;
    float ns, nlr, a;
    if ((st = sparse_storm_check(op, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 4, 0, err))) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 4)), R = rc_dims_prod(p, 1, p->ndim);
    const float *g = K && R ? rc_f32(rc_in(op, 3)) : NULL;
    if ((st = storm_scalars(op, 5, g ? sum_sq(K * R, g) : 0.0, &ns, &nlr, &a, err))) return st;
    if (!K) return RC_OK;
    if (g) {
        const int32_t *idx = rc_i32(rc_in(op, 4));
        float *w = rc_f32(rc_out(op, 0)), *m = rc_f32(rc_out(op, 1));
        for (int64_t k = 0; k < K; k++) {
            const int64_t i = (int64_t)idx[k] * R;
            storm_kernel(R, w + i, m + i, g + k * R, nlr, a, w + i, m + i);
        }
    }
    rc_f32(rc_out(op, 2))[0] = ns;
    return RC_OK;
}

/* ================================================================ Lars */

static rc_status lars_setup(rc_op *op, rc_err *err)
{
    more_state *s;
    rc_status st;
    if ((st = new_state(op, &s, err))) return st;
    if ((st = arg_at_least(op, "offset", 0.5f, 0.0f, 0, &s->offset, err))) return st;
    return arg_at_least(op, "lr_min", 0.02f, 0.0f, 0, &s->lr_min, err);
}

/* (X, DX, WD, TRUST, LR_MAX): X and DX float32 of one shape, the others one float32 each. */
static rc_status lars_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 1, err))) return st;
    if ((st = rc_sparse_check_scalar(op, 2, "the weight decay", err))) return st;
    if ((st = rc_sparse_check_scalar(op, 3, "the trust", err))) return st;
    return rc_sparse_check_scalar(op, 4, "the maximum rate", err);
}

/* Input i: one float32, finite and >= lo; *v = it. */
static rc_status read_at_least(rc_op *op, int i, const char *what, float lo, float *v, rc_err *err)
{
    rc_status st = rc_sparse_read_scalar(op, i, what, v, err);
    if (st) return st;
    if (!isfinite(*v) || !(*v >= lo))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must be finite and >= %g, got %g", i,
                          rc_in_name(op, i), what, (double)lo, (double)*v);
    return RC_OK;
}

static rc_status lars_run(rc_op *op, rc_err *err)
{
    const more_state *s = op->state;
    rc_status st;
    float wd, trust, lr_max;
    if ((st = lars_check(op, err))) return st;
    if ((st = read_at_least(op, 2, "the weight decay", 0.0f, &wd, err))) return st;
    if ((st = read_at_least(op, 3, "the trust", 0.0f, &trust, err))) return st;
    if ((st = read_at_least(op, 4, "the maximum rate", s->lr_min, &lr_max, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    float val = 1.0f;
    const float xn = n ? (float)sqrt(sum_sq(n, rc_f32(rc_in(op, 0)))) : 0.0f;
    if (xn > 0.0f) {
        const float dxn = (float)sqrt(sum_sq(n, rc_f32(rc_in(op, 1))));
        const float den = dxn / xn + wd + s->offset;
        val = den > 0.0f ? trust / den : (trust > 0.0f ? lr_max : s->lr_min);
    }
    const int64_t one = 1;
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1, &one, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    rc_f32(rc_out(op, 0))[0] = fmaxf(fminf(val, lr_max), s->lr_min);
    return RC_OK;
}

/* ================================================================ LearningRateAdaption */

static rc_status lr_adaption_setup(rc_op *op, rc_err *err)
{
    more_state *s;
    rc_status st;
    if ((st = new_state(op, &s, err))) return st;
    if ((st = rc_arg_f(&op->def, "lr_alpha", 0.01f, &s->lr_alpha, err))) return st;
    if (!isfinite(s->lr_alpha))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument lr_alpha must be finite, got %g", (double)s->lr_alpha);
    if ((st = rc_arg_i(&op->def, "normalized_lr_adaption", 1, &s->normalized, err))) return st;
    if (s->normalized != 0 && s->normalized != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument normalized_lr_adaption must be 0 or 1, got %lld",
                          (long long)s->normalized);
    return RC_OK;
}

/* (LR, GRAD, EFFGRAD): LR one float32, GRAD and EFFGRAD float32 of one shape (no data values). */
static rc_status lr_adaption_check(rc_op *op, rc_err *err)
{
    static const int like[] = {2};
    rc_status st = rc_sparse_check_scalar(op, 0, "the learning rate", err);
    return st ? st : check_same_shape(op, 1, like, 1, err);
}

/* OUTPUT_LR (LR's shape) = lr * (1 - lr_alpha * x / (y * z)) normalized, lr - lr_alpha * x otherwise, with
 * x = <GRAD, EFFGRAD>, y = max(|GRAD|, 1e-12), z = max(|EFFGRAD|, 1e-12), summed in float in order (as
 * Caffe2). LR is read before the output is written (in place allowed). */
static rc_status lr_adaption_run(rc_op *op, rc_err *err)
{
    const more_state *s = op->state;
    rc_status st;
    if ((st = lr_adaption_check(op, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 1));
    const float *g = n ? rc_f32(rc_in(op, 1)) : NULL, *e = n ? rc_f32(rc_in(op, 2)) : NULL;
    const float lr = rc_f32(rc_in(op, 0))[0];
    float x = 0.0f, y = 0.0f, z = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x += g[i] * e[i];
        y += g[i] * g[i];
        z += e[i] * e[i];
    }
    float nlr;
    if (s->normalized) {
        y = fmaxf(sqrtf(y), 1e-12f);
        z = fmaxf(sqrtf(z), 1e-12f);
        nlr = lr * (1.0f - s->lr_alpha * x / (y * z));
    } else {
        nlr = lr - s->lr_alpha * x;
    }
    if ((st = resize_out_like_in(op, 0, 0, err))) return st;
    rc_f32(rc_out(op, 0))[0] = nlr;
    return RC_OK;
}

/* ================================================================ YellowFin
 *
 * YellowFin(PARAM, MOMENT, LR, MU, CURV_WIN, G_AVG, G2_AVG, SCALARS, GRAD, ITER)
 *   -> (PARAM, MOMENT, LR, MU, CURV_WIN, G_AVG, G2_AVG, SCALARS)
 *
 * Caffe2's caffe2/sgd/yellowfin_op (https://arxiv.org/abs/1706.03471): a
 * momentum SGD step with the learning rate LR and momentum MU (moving
 * averages, one float32 each), then the statistics that tune them, in float
 * in Caffe2's order. With b = beta, MA(a, x) = b a + (1 - b) x and
 * deb = 1 / (1 - b^ITER) (in double, rounded once; 1 without zero_debias):
 *   step: m' = MU m + LR g; param' = param - m' (nesterov: param - (1 + MU) m'
 *     + MU m), with LR and MU as they came in;
 *   G_AVG' = MA(G_AVG, g), G2_AVG' = MA(G2_AVG, g^2), g_deb = deb G_AVG';
 *   n2 = max(eps, sum g^2); S0' = MA(S0, sqrt(n2)), S1' = MA(S1, n2);
 *   CURV_WIN' = CURV_WIN with entry (ITER - 1) % curv_win_width set to log(n2);
 *   lo, hi = min, max of its first min(width, ITER) entries;
 *   S2' = MA(S2, lo), S3' = MA(S3, hi); hmin = max(eps, exp(deb S2')),
 *   hmax = max(eps, exp(deb S3'));
 *   var = max(eps, deb S1' - sum g_deb^2); S4' = MA(S4, S0' / S1'), d = deb S4';
 *   from ITER 2 on: p = (d hmin)^2 / (2 var), w3 = (-sqrt(p^2 + 4/27 p^3) - p) / 2,
 *     w = cbrt(w3), y = w - p / 3 / w, r = (sqrt(hmax / hmin) - 1) / (sqrt(hmax / hmin) + 1),
 *     mu = max((y + 1)^2, r^2), lr = (1 - sqrt(mu))^2 / hmin; MU' = MA(MU, mu),
 *     LR' = MA(LR, lr); on ITER 1 they stay.
 * SCALARS holds S0..S4 (Caffe2's g_norm_avg, g_norm2_avg, g_norm2_min_avg,
 * g_norm2_max_avg, distance_avg). Arguments (as Caffe2): beta 0.999,
 * curv_win_width 20, epsilon 1e-6, nesterov 0, zero_debias 1.
 *
 * Differences from Caffe2: sums of squares in double (Caffe2: float dot);
 * CURV_WIN must hold curv_win_width values and SCALARS 5 (Caffe2 read and
 * wrote that many whatever their size); ITER >= 1 (Caffe2 divided by zero at
 * 0 and wrote before CURV_WIN); outputs that are not the inputs' blobs
 * receive LR and MU as they came in on ITER 1 (Caffe2 left them
 * uninitialised) and the step reads LR and MU from the inputs (Caffe2 from
 * the outputs: the same in place, garbage otherwise); beta must be in
 * [0, 1), epsilon finite and > 0, curv_win_width >= 1, nesterov and
 * zero_debias 0 or 1. */

#define YF_SCALARS 5

typedef struct yf_state {
    float beta, epsilon;
    int64_t width, nesterov, zero_debias;
} yf_state;

static rc_status yf_setup(rc_op *op, rc_err *err)
{
    yf_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* owned by the op, freed with free() */
    rc_status st;
    if ((st = rc_arg_f(&op->def, "beta", 0.999f, &s->beta, err))) return st;
    if (!(s->beta >= 0.0f && s->beta < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta must be in [0, 1), got %g", (double)s->beta);
    if ((st = arg_at_least(op, "epsilon", 1e-6f, 0.0f, 1, &s->epsilon, err))) return st;
    if ((st = rc_arg_i(&op->def, "curv_win_width", 20, &s->width, err))) return st;
    if (s->width < 1 || s->width > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument curv_win_width must be in [1, %d], got %lld", INT32_MAX,
                          (long long)s->width);
    if ((st = rc_arg_i(&op->def, "nesterov", 0, &s->nesterov, err))) return st;
    if ((st = rc_arg_i(&op->def, "zero_debias", 1, &s->zero_debias, err))) return st;
    if ((s->nesterov != 0 && s->nesterov != 1) || (s->zero_debias != 0 && s->zero_debias != 1))
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments nesterov and zero_debias must be 0 or 1, got %lld and "
                          "%lld", (long long)s->nesterov, (long long)s->zero_debias);
    return RC_OK;
}

/* Input i: float32 of exactly n values (any shape). */
static rc_status yf_check_len(rc_op *op, int i, int64_t n, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    if (rc_tensor_numel(rc_in(op, i)) != n)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must hold %lld values, got %s", i,
                          rc_in_name(op, i), what, (long long)n, RC_SHAPE(rc_in(op, i)));
    return RC_OK;
}

static rc_status yf_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 5, 6, 8};
    const yf_state *s = op->state;
    rc_status st = check_same_shape(op, 0, like, 4, err);
    if (!st) st = yf_check_len(op, 2, 1, "the learning rate", err);
    if (!st) st = yf_check_len(op, 3, 1, "the momentum", err);
    if (!st) st = yf_check_len(op, 4, s->width, "the curvature window of curv_win_width values", err);
    if (!st) st = yf_check_len(op, 7, YF_SCALARS, "the 5 scalars of the moving averages", err);
    return st;
}

static float yf_ma(float beta, float avg, float x) { return beta * avg + (1.0f - beta) * x; }

static rc_status yf_run(rc_op *op, rc_err *err)
{
    const yf_state *s = op->state;
    rc_status st;
    int64_t it = 0;
    if ((st = yf_check(op, err)) || (st = read_iter(op, 9, &it, err))) return st;
    if (it < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 9 blob '%s' (the iteration counter) must be >= 1 (the "
                          "optimizer's Iter runs before the step), got %lld", rc_in_name(op, 9), (long long)it);
    const int64_t n = rc_tensor_numel(rc_in(op, 0)), W = s->width;
    const float b = s->beta, eps = s->epsilon;
    const float deb = s->zero_debias ? (float)(1.0 / (1.0 - pow((double)b, (double)it))) : 1.0f;
    /* the inputs' scalars first: the outputs may be their blobs */
    const float lr_in = rc_f32(rc_in(op, 2))[0], mu_in = rc_f32(rc_in(op, 3))[0];
    float S[YF_SCALARS];
    memcpy(S, rc_f32(rc_in(op, 7)), sizeof S);
    for (int o = 0; o < 8 && !st; o++) st = resize_out_like_in(op, o, o, err);
    if (st) return st;
    /* the window is updated in its output (a resized output that is input 4's blob keeps its values) */
    float *win = rc_f32(rc_out(op, 4));
    if (win != rc_f32(rc_in(op, 4))) memcpy(win, rc_f32(rc_in(op, 4)), (size_t)W * sizeof *win);
    const float *w = rc_f32(rc_in(op, 0)), *m = rc_f32(rc_in(op, 1)), *ga = rc_f32(rc_in(op, 5));
    const float *g2a = rc_f32(rc_in(op, 6)), *g = rc_f32(rc_in(op, 8));
    float *nw = rc_f32(rc_out(op, 0)), *nm = rc_f32(rc_out(op, 1)), *nga = rc_f32(rc_out(op, 5));
    float *ng2a = rc_f32(rc_out(op, 6));
    double gsq = 0.0, dsq = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i];
        const float mo = mu_in * mi + lr_in * gi;
        nw[i] = s->nesterov ? w[i] - (1.0f + mu_in) * mo + mu_in * mi : w[i] - mo;
        nm[i] = mo;
        const float a = yf_ma(b, ga[i], gi), gd = deb * a;
        nga[i] = a;
        ng2a[i] = yf_ma(b, g2a[i], gi * gi);
        gsq += (double)gi * (double)gi;
        dsq += (double)gd * (double)gd;
    }
    float n2 = (float)gsq;
    n2 = n2 < eps ? eps : n2; /* max(eps, .) here and below as Caffe2's: NaN stays NaN */
    S[1] = yf_ma(b, S[1], n2);
    const float n2_deb = deb * S[1];
    S[0] = yf_ma(b, S[0], sqrtf(n2));
    win[(it - 1) % W] = logf(n2);
    const int64_t valid = it < W ? it : W;
    float lo = win[0], hi = win[0];
    for (int64_t k = 1; k < valid; k++) {
        lo = win[k] < lo ? win[k] : lo;
        hi = win[k] > hi ? win[k] : hi;
    }
    S[2] = yf_ma(b, S[2], lo);
    S[3] = yf_ma(b, S[3], hi);
    float hmin = expf(deb * S[2]), hmax = expf(deb * S[3]);
    hmin = hmin < eps ? eps : hmin;
    hmax = hmax < eps ? eps : hmax;
    float var = n2_deb - (float)dsq;
    var = var < eps ? eps : var;
    S[4] = yf_ma(b, S[4], S[0] / S[1]);
    const float dist = deb * S[4];
    float lr_out = lr_in, mu_out = mu_in;
    if (it > 1) {
        const float ratio = sqrtf(hmax / hmin), r = (ratio - 1.0f) / (ratio + 1.0f);
        const float pre = dist * hmin, p = pre * pre / (2.0f * var);
        const float w3 = (-sqrtf(p * p + 4.0f / 27.0f * p * p * p) - p) / 2.0f;
        const float wc = (w3 > 0.0f ? 1.0f : -1.0f) * powf(fabsf(w3), 1.0f / 3.0f);
        const float y = wc - p / 3.0f / wc, root = y + 1.0f;
        const float mu = root * root > r * r ? root * root : r * r;
        const float one_m = 1.0f - sqrtf(mu);
        mu_out = yf_ma(b, mu_in, mu);
        lr_out = yf_ma(b, lr_in, one_m * one_m / hmin);
    }
    rc_f32(rc_out(op, 2))[0] = lr_out;
    rc_f32(rc_out(op, 3))[0] = mu_out;
    memcpy(rc_f32(rc_out(op, 7)), S, sizeof S);
    return RC_OK;
}

/* ================================================================ table */

/* Lars's output is a new blob (a rate), never one of its inputs. */
static int inplace_none(int in, int out) { (void)in; (void)out; return 0; }

/* LearningRateAdaption updates the rate in place (input 0 -> output 0). */
static int inplace_lr(int in, int out) { return in == 0 && out == 0; }

const rc_op_schema rc_ops_optim_more[] = {
    {"DecayAdagrad", 6, 6, 3, 3, rc_inplace_same_index, decay_adagrad_setup, decay_adagrad_run, free,
     "(param, moment_1, moment_2, grad, lr, iter) -> (param, moment_1, moment_2): m = beta1*m + (1-beta1)*g; "
     "v += g^2; param += lr*(m/(1-beta1^(iter+1))/(sqrt(v)+epsilon) + weight_decay*param); arguments beta1, "
     "beta2 (unused), epsilon, weight_decay, bias_correction_first", decay_adagrad_check},
    {"GFtrl", 3, 4, 2, 2, rc_inplace_same_index, gftrl_setup, gftrl_run, free,
     "(var, n_z (var.shape + (2,)), grad[, alpha]) -> (var, n_z): group-lasso FTRL, one group per column of "
     "var seen as (shape[0], size/shape[0]); arguments alpha, beta, lambda1, lambda2", gftrl_check},
    {"Storm", 5, 5, 3, 3, rc_inplace_same_index, storm_setup, storm_run, free,
     "(param, moment, grad_sq_sum, grad, lr) -> (param, moment, grad_sq_sum): s += sum(g^2); "
     "nlr = lr*(beta+s)^(-1/3); m = g + (1-momentum*nlr^2)*(m-g); param += nlr*m; arguments momentum, beta",
     storm_check},
    {"SparseStorm", 6, 6, 3, 3, rc_inplace_same_index, sparse_storm_setup, sparse_storm_run, free,
     "(param, moment, grad_sq_sum, grad, indices, lr) -> (param, moment, grad_sq_sum) in place: Storm's step "
     "on rows indices[k] with row k of grad (shape indices.shape + param.shape[1:]), k in order; "
     "arguments momentum, beta", sparse_storm_check},
    {"Lars", 5, 5, 1, 1, inplace_none, lars_setup, lars_run, free,
     "(x, dx, wd, trust, lr_max) -> lr_rescaled (1,): clip(trust/(|dx|/|x| + wd + offset), lr_min, lr_max), "
     "1 clipped when |x| = 0; arguments offset, lr_min", lars_check},
    {"LearningRateAdaption", 3, 3, 1, 1, inplace_lr, lr_adaption_setup, lr_adaption_run, free,
     "(lr, grad, effgrad) -> lr: lr*(1 - lr_alpha*<grad,effgrad>/(|grad|*|effgrad|)) (each norm at least "
     "1e-12), or lr - lr_alpha*<grad,effgrad> with normalized_lr_adaption=0; arguments lr_alpha, "
     "normalized_lr_adaption", lr_adaption_check},
    {"YellowFin", 10, 10, 8, 8, rc_inplace_same_index, yf_setup, yf_run, free,
     "(param, moment, lr, mu, curv_win, g_avg, g2_avg, scalars_memory, grad, iter) -> the first eight: a momentum "
     "SGD step with the tuned lr and mu, then YellowFin's moving averages; arguments beta, curv_win_width, "
     "epsilon, nesterov, zero_debias", yf_check},
    {0},
};
