/* ops/loss2.c -- more loss and vector ops of Caffe2 (cross_entropy_op,
 * distance_op, normalize_op, normalize_l1_op) and their gradient ops:
 *
 *   CrossEntropy(X (N x D), label (N x D) f32) -> Y (N,)
 *       Y_i = -sum_j label_ij log(max(X_ij, 1e-20))
 *   CrossEntropyGradient(X, label, dY) -> dX = -dY_i label_ij / X_ij (0 where X_ij < 1e-20)
 *   SigmoidCrossEntropyWithLogits(logits, targets) -> xent (logits' dims without the last)
 *       args log_D_trick=0, unjoined_lr_loss=0: xent = -mean over the last dim of f(x, t),
 *       f = x t - softplus(x)                (default; Caffe2's stable form)
 *       f = (2t - 1) (x - softplus(x))       (log_D_trick)
 *       f = x t - (1 - t) softplus(x)        (unjoined_lr_loss)
 *   SigmoidCrossEntropyWithLogitsGradient(dXent, logits, targets) -> dLogits = -dXent / D * f'(x, t)
 *   WeightedSigmoidCrossEntropyWithLogits(logits, targets, weights) -> -mean of w f(x, t)
 *   WeightedSigmoidCrossEntropyWithLogitsGradient(dXent, logits, targets, weights) -> dLogits
 *   MakeTwoClass(X (...)) -> Y (..., 2): [1 - X, X]
 *   MakeTwoClassGradient(dY (..., 2)) -> dX (...) = dY[..., 1] - dY[..., 0]
 *   L1Distance(X, Y) -> (N,) sum |X - Y| per row;  L1DistanceGradient(X, Y, dD) -> dX, dY
 *   DotProduct(X, Y) -> (N,) sum X Y per row;      DotProductGradient(X, Y, dD) -> dX, dY
 *   CosineSimilarity(X, Y) -> (N,) X.Y / sqrt(max(|X|^2, 1e-12) max(|Y|^2, 1e-12))
 *   CosineSimilarityGradient(X, Y, dCos) -> dX, dY
 *   Normalize(X) -> Y, arg axis=-1: X / max(||X||_2, 1e-12) along axis
 *   NormalizeGradient(X, dY) -> dX, arg axis=-1
 *   NormalizeL1(X) -> Y, arg axis=-1: X / sum |X| along axis (no gradient, as Caffe2)
 *
 * "Rows" of the distance ops: N = dims[0] (1 for a 0-d X), D = numel / N.
 * All float32. Sums are accumulated in double in index order, so the bits do
 * not depend on threads or runs. No global state; nothing allocates except
 * the resize of an output and the small argument state of the ops that take
 * arguments (owned by op->state, freed by free()).
 *
 * Where this differs from Caffe2 (all where Caffe2 read out of bounds, left
 * memory unwritten, divided by zero or gave a gradient that is not the
 * derivative of its forward):
 *  - CrossEntropy's label must hold N x D values (shape (N, D) or X's shape;
 *    (N,) only when D == 1): Caffe2 accepted a (N,) label for any D and read
 *    past its end. Label values outside [0, 1] (or NaN) are a ValueError in
 *    the forward AND the gradient op (Caffe2: forward only). The gradient is
 *    0 where X < 1e-20, the derivative of the clamped forward (Caffe2: -dY
 *    label * 1e20). NaN in X propagates (Caffe2's clamp turned it into 1e-20).
 *  - SigmoidCrossEntropyWithLogits(+Gradient) with log_D_trick=1 AND
 *    unjoined_lr_loss=1 is a ValueError (Caffe2 silently ignored
 *    log_D_trick). An empty last dim gives losses 0 (Caffe2 divided by 0).
 *    Targets are not range-checked (as Caffe2): the formula is applied to any
 *    value. log1p is used for log(1 + exp(-|x|)).
 *  - MakeTwoClass refuses values outside [0, 1] (and NaN) with a ValueError
 *    (Caffe2: a debug-build DCHECK only).
 *  - DotProduct of X (N, 0) gives N zeros (Caffe2: an empty output).
 *  - CosineSimilarityGradient and NormalizeGradient are the exact derivatives
 *    of the clamped forward: where the clamp is active (|X|^2 < 1e-12, or
 *    ||X||_2 < 1e-12) the norm is a constant, so its term drops out (Caffe2
 *    kept it, with the clamped norm).
 *  - NormalizeL1 of an all-zero slice gives zeros (Caffe2 left the output
 *    unwritten); Normalize / NormalizeL1 of a size-0 axis give an empty output
 *    (Caffe2 divided by 0).
 * L1DistanceGradient is 0 where |X - Y| <= 1e-12, as Caffe2's.
 */
#include "../core/rc_core.h"
#include "loss_math.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG_THRESHOLD 1e-20f
#define COS_EPS 1e-12    /* clamp of the squared norms (Caffe2's kEps) */
#define NORM_EPS 1e-12   /* clamp of the L2 norm (Caffe2's KEPS) */
#define L1_GRAD_EPS 1e-12f

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

static rc_status resize_out(rc_op *op, int o, int ndim, const int64_t *dims, rc_err *err)
{
    if (rc_tensor_resize(rc_out(op, o), RC_F32, ndim, dims, err)) return out_fail(op, o, err);
    return RC_OK;
}

static rc_status resize_out_like(rc_op *op, int o, const rc_tensor *like, rc_err *err)
{
    if (rc_tensor_resize_like(rc_out(op, o), like, err)) return out_fail(op, o, err);
    return RC_OK;
}

static rc_status check_same_shape(rc_op *op, int a, int b, rc_err *err)
{
    const rc_tensor *ta = rc_in(op, a), *tb = rc_in(op, b);
    if (!rc_tensor_same_shape(ta, tb))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s must have the shape of input %d blob '%s' "
                          "%s", b, rc_in_name(op, b), RC_SHAPE(tb), a, rc_in_name(op, a), RC_SHAPE(ta));
    return RC_OK;
}

/* Inputs first..first+n-1 float32 (with data). */
static rc_status check_f32(rc_op *op, int first, int n, rc_err *err)
{
    for (int i = first; i < first + n; i++) {
        rc_status st = rc_check_input(op, i, RC_F32, err);
        if (st) return st;
    }
    return RC_OK;
}

/* op->state of the ops that take arguments (owned by the op, freed by free). */
typedef struct {
    int64_t axis;   /* Normalize, NormalizeL1 (+Gradient) */
    int mode;       /* SigmoidCrossEntropyWithLogits(+Gradient): XENT_* */
} l2_state;

enum { XENT_PLAIN = 0, XENT_LOG_D = 1, XENT_UNJOINED = 2 };

static rc_status flag_arg(rc_op *op, const char *name, int *out, rc_err *err)
{
    int64_t v;
    rc_status st = rc_arg_i(&op->def, name, 0, &v, err);
    if (st) return st;
    if (v != 0 && v != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be 0 or 1, got %lld", name, (long long)v);
    *out = (int)v;
    return RC_OK;
}

static rc_status state_new(rc_op *op, l2_state **s, rc_err *err)
{
    *s = calloc(1, sizeof **s);
    if (!*s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = *s; /* freed by free_state, also when setup fails */
    return RC_OK;
}

/* ================================================================ CrossEntropy */

/* X (N, ...) or (D,) (N = 1), f32; label f32 of N x D values: (N, D), X's shape, or (N,) when D == 1. */
static rc_status xent_dims(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st;
    if ((st = check_f32(op, 0, 2, err)) || (st = rc_check_ndim(op, 0, 1, RC_MAX_DIMS, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (x->ndim > 1) {
        *N = x->dims[0];
        *D = rc_dims_prod(x, 1, x->ndim);
    } else {
        *N = 1;
        *D = x->dims[0];
    }
    int ok = rc_tensor_same_shape(x, l) || (l->ndim == 2 && l->dims[0] == *N && l->dims[1] == *D) ||
             (l->ndim == 1 && *D == 1 && l->dims[0] == *N);
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' %s must hold N x D = %lld x %lld label probabilities for input 0 "
                          "blob '%s' %s: shape (%lld, %lld) or the shape of input 0", rc_in_name(op, 1),
                          RC_SHAPE(l), (long long)*N, (long long)*D, rc_in_name(op, 0), RC_SHAPE(x), (long long)*N,
                          (long long)*D);
    return RC_OK;
}

static rc_status xent_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return xent_dims(op, &N, &D, err);
}

/* xent_dims, and every label value in [0, 1] (NaN refused). */
static rc_status xent_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st = xent_dims(op, N, D, err);
    if (st) return st;
    const float *l = rc_f32(rc_in(op, 1));
    for (int64_t k = 0; k < *N * *D; k++)
        if (!(l[k] >= 0.0f && l[k] <= 1.0f))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' %s: label %g at row %lld, column %lld is not a probability in "
                              "[0, 1] (LabelCrossEntropy takes integer class labels)", rc_in_name(op, 1),
                              RC_SHAPE(rc_in(op, 1)), (double)l[k], (long long)(k / *D), (long long)(k % *D));
    return RC_OK;
}

/* X, label (N x D) -> Y (N,): Y_i = -sum_j label_ij log(max(X_ij, 1e-20)) (NaN X stays NaN) */
static void xent_kernel(int64_t N, int64_t D, const float *x, const float *l, float *y)
{
    for (int64_t i = 0; i < N; i++) {
        double s = 0.0;
        for (int64_t j = i * D; j < (i + 1) * D; j++) {
            float v = x[j] < LOG_THRESHOLD ? LOG_THRESHOLD : x[j];
            s += (double)l[j] * log((double)v);
        }
        y[i] = (float)-s;
    }
}

static rc_status xent_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = xent_shapes(op, &N, &D, err);
    if (st) return st;
    if ((st = resize_out(op, 0, 1, &N, err))) return st;
    xent_kernel(N, D, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* Input gi: the (N,) gradient of a per-row output. */
static rc_status check_row_grad(rc_op *op, int gi, int64_t N, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, gi, RC_F32, err);
    if (st) return st;
    const rc_tensor *g = rc_in(op, gi);
    if (g->ndim != 1 || g->dims[0] != N)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s (%s) must have shape (%lld,) to match "
                          "input 0 blob '%s' %s", gi, rc_in_name(op, gi), RC_SHAPE(g), what, (long long)N,
                          rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    return RC_OK;
}

static rc_status xent_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = xent_dims(op, &N, &D, err);
    return st ? st : check_row_grad(op, 2, N, "the loss gradient", err);
}

/* CrossEntropyGradient: X, label (N x D), dY (N,) -> dX (shape of X):
 * dX_ij = -dY_i label_ij / X_ij, 0 where X_ij < 1e-20 (the clamped forward is constant there). */
static rc_status xent_grad_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = xent_shapes(op, &N, &D, err);
    if (st || (st = check_row_grad(op, 2, N, "the loss gradient", err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    const float *x = rc_f32(rc_in(op, 0)), *l = rc_f32(rc_in(op, 1)), *g = rc_f32(rc_in(op, 2));
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = i * D; j < (i + 1) * D; j++)
            dx[j] = x[j] < LOG_THRESHOLD ? 0.0f : -g[i] * l[j] / x[j];
    return RC_OK;
}

/* ================================================================ SigmoidCrossEntropyWithLogits */

/* f(x, t): the per-element log-likelihood whose negated row mean is the loss */
static double sx_forward(int mode, double x, double t)
{
    switch (mode) {
    case XENT_LOG_D: return (2.0 * t - 1.0) * (x - rc_softplus(x));
    case XENT_UNJOINED: return x * t - (1.0 - t) * rc_softplus(x);
    default: return x * t - rc_softplus(x);
    }
}

/* df/dx */
static double sx_backward(int mode, double x, double t)
{
    switch (mode) {
    case XENT_LOG_D: return (2.0 * t - 1.0) * rc_sigmoid(-x);
    case XENT_UNJOINED: return t - (1.0 - t) * rc_sigmoid(x);
    default: return t - rc_sigmoid(x);
    }
}

static rc_status sx_setup(rc_op *op, rc_err *err)
{
    l2_state *s;
    int logd = 0, unj = 0;
    rc_status st = state_new(op, &s, err);
    if (st || (st = flag_arg(op, "log_D_trick", &logd, err)) || (st = flag_arg(op, "unjoined_lr_loss", &unj, err)))
        return st;
    if (logd && unj)
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments log_D_trick=1 and unjoined_lr_loss=1 cannot be used "
                          "together (Caffe2 silently ignored log_D_trick)");
    s->mode = logd ? XENT_LOG_D : unj ? XENT_UNJOINED : XENT_PLAIN;
    return RC_OK;
}

/* Logits at input li, targets (and weights when weighted) after it, all of one shape; outer x inner split
 * at the last dim (a 0-d logits: 1 x 1). */
static rc_status sx_dims(rc_op *op, int li, int weighted, int64_t *outer, int64_t *inner, rc_err *err)
{
    rc_status st;
    if ((st = check_f32(op, li, weighted ? 3 : 2, err))) return st;
    if ((st = check_same_shape(op, li, li + 1, err))) return st;
    if (weighted && (st = check_same_shape(op, li, li + 2, err))) return st;
    const rc_tensor *x = rc_in(op, li);
    *inner = x->ndim > 0 ? x->dims[x->ndim - 1] : 1;
    *outer = x->ndim > 0 ? rc_dims_prod(x, 0, x->ndim - 1) : 1;
    return RC_OK;
}

static rc_status sx_check(rc_op *op, rc_err *err)
{
    int64_t o, n;
    return sx_dims(op, 0, op->n_in == 3, &o, &n, err);
}

/* logits, targets [, weights] (..., D) -> xent (...): -mean_j (w) f(x, t); 0 for D == 0 */
static rc_status sx_run(rc_op *op, rc_err *err)
{
    const int weighted = op->n_in == 3;
    const int mode = weighted ? XENT_PLAIN : ((const l2_state *)op->state)->mode;
    int64_t outer, inner;
    rc_status st = sx_dims(op, 0, weighted, &outer, &inner, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = resize_out(op, 0, x->ndim > 0 ? x->ndim - 1 : 0, x->dims, err))) return st;
    const float *xd = rc_f32(x), *td = rc_f32(rc_in(op, 1));
    const float *wd = weighted ? rc_f32(rc_in(op, 2)) : NULL;
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < outer; i++) {
        double s = 0.0;
        for (int64_t j = i * inner; j < (i + 1) * inner; j++) {
            double f = sx_forward(mode, xd[j], td[j]);
            s += wd ? (double)wd[j] * f : f;
        }
        y[i] = inner > 0 ? (float)(-s / (double)inner) : 0.0f;
    }
    return RC_OK;
}

/* dXent (one value per row: outer values), logits, targets [, weights] */
static rc_status sx_grad_dims(rc_op *op, int64_t *outer, int64_t *inner, rc_err *err)
{
    const int weighted = op->n_in == 4;
    rc_status st = sx_dims(op, 1, weighted, outer, inner, err);
    if (st || (st = rc_check_input(op, 0, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 0), *x = rc_in(op, 1);
    if (rc_tensor_numel(g) != *outer)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (the loss gradient) must hold %lld values, "
                          "one per row of input 1 blob '%s' %s (its dims without the last)", rc_in_name(op, 0),
                          RC_SHAPE(g), (long long)*outer, rc_in_name(op, 1), RC_SHAPE(x));
    return RC_OK;
}

static rc_status sx_grad_check(rc_op *op, rc_err *err)
{
    int64_t o, n;
    return sx_grad_dims(op, &o, &n, err);
}

/* (dXent, logits, targets [, weights]) -> dLogits (shape of logits) = -dXent_i / D (w) f'(x, t) */
static rc_status sx_grad_run(rc_op *op, rc_err *err)
{
    const int weighted = op->n_in == 4;
    const int mode = weighted ? XENT_PLAIN : ((const l2_state *)op->state)->mode;
    int64_t outer, inner;
    rc_status st = sx_grad_dims(op, &outer, &inner, err);
    if (st || (st = resize_out_like(op, 0, rc_in(op, 1), err))) return st;
    const float *g = rc_f32(rc_in(op, 0)), *xd = rc_f32(rc_in(op, 1)), *td = rc_f32(rc_in(op, 2));
    const float *wd = weighted ? rc_f32(rc_in(op, 3)) : NULL;
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < outer; i++) {
        const double c = -(double)g[i] / (double)inner; /* inner > 0 whenever the row has elements */
        for (int64_t j = i * inner; j < (i + 1) * inner; j++) {
            double d = c * sx_backward(mode, xd[j], td[j]);
            dx[j] = (float)(wd ? d * (double)wd[j] : d);
        }
    }
    return RC_OK;
}

/* ================================================================ MakeTwoClass */

static rc_status two_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim >= RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s has %d dims: the output would have more "
                          "than %d", rc_in_name(op, 0), RC_SHAPE(x), x->ndim, RC_MAX_DIMS);
    return RC_OK;
}

/* MakeTwoClass: X (...) probabilities in [0, 1] -> Y (..., 2) = [1 - X, X] */
static rc_status two_run(rc_op *op, rc_err *err)
{
    rc_status st = two_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x);
    const float *xd = rc_f32(x);
    for (int64_t i = 0; i < n; i++)
        if (!(xd[i] >= 0.0f && xd[i] <= 1.0f))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s: value %g at element %lld is not a "
                              "probability in [0, 1]", rc_in_name(op, 0), RC_SHAPE(x), (double)xd[i], (long long)i);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x->dims, (size_t)x->ndim * sizeof *dims);
    dims[x->ndim] = 2;
    if ((st = resize_out(op, 0, x->ndim + 1, dims, err))) return st;
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        y[2 * i] = 1.0f - xd[i];
        y[2 * i + 1] = xd[i];
    }
    return RC_OK;
}

static rc_status two_grad_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *g = rc_in(op, 0);
    if (g->ndim < 1 || g->dims[g->ndim - 1] != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (the gradient of MakeTwoClass's output) "
                          "must have a last dim of size 2", rc_in_name(op, 0), RC_SHAPE(g));
    return RC_OK;
}

/* MakeTwoClassGradient: dY (..., 2) -> dX (...) = dY[..., 1] - dY[..., 0] */
static rc_status two_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = two_grad_check(op, err);
    if (st) return st;
    const rc_tensor *g = rc_in(op, 0);
    if ((st = resize_out(op, 0, g->ndim - 1, g->dims, err))) return st;
    const int64_t n = rc_tensor_numel(g) / 2;
    const float *gd = rc_f32(g);
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) dx[i] = gd[2 * i + 1] - gd[2 * i];
    return RC_OK;
}

/* ================================================================ L1Distance, DotProduct, CosineSimilarity */

/* X, Y f32 of one shape: N = dims[0] (1 for 0-d), D = numel / N (0 when N == 0). */
static rc_status pair_rows(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st;
    if ((st = check_f32(op, 0, 2, err)) || (st = check_same_shape(op, 0, 1, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    *N = x->ndim > 0 ? x->dims[0] : 1;
    *D = *N > 0 ? rc_tensor_numel(x) / *N : 0;
    return RC_OK;
}

static rc_status pair_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return pair_rows(op, &N, &D, err);
}

static rc_status pair_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = pair_rows(op, &N, &D, err);
    return st ? st : check_row_grad(op, 2, N, "the output gradient", err);
}

typedef void (*pair_kernel)(int64_t D, const float *x, const float *y, float *out);

/* x, y: (D,) -> sum |x - y| */
static void l1_row(int64_t D, const float *x, const float *y, float *out)
{
    double s = 0.0;
    for (int64_t j = 0; j < D; j++) s += fabs((double)x[j] - (double)y[j]);
    *out = (float)s;
}

/* x, y: (D,) -> sum x y */
static void dot_row(int64_t D, const float *x, const float *y, float *out)
{
    double s = 0.0;
    for (int64_t j = 0; j < D; j++) s += (double)x[j] * (double)y[j];
    *out = (float)s;
}

/* x, y: (D,) -> |x|^2, |y|^2, x.y in double */
static void cos_sums(int64_t D, const float *x, const float *y, double *xx, double *yy, double *xy)
{
    double a = 0.0, b = 0.0, c = 0.0;
    for (int64_t j = 0; j < D; j++) {
        a += (double)x[j] * x[j];
        b += (double)y[j] * y[j];
        c += (double)x[j] * y[j];
    }
    *xx = a, *yy = b, *xy = c;
}

/* x, y: (D,) -> x.y / sqrt(max(|x|^2, eps) max(|y|^2, eps)) */
static void cos_row(int64_t D, const float *x, const float *y, float *out)
{
    double xx, yy, xy;
    cos_sums(D, x, y, &xx, &yy, &xy);
    *out = (float)(xy / sqrt(fmax(xx, COS_EPS) * fmax(yy, COS_EPS)));
}

/* X, Y (N, ...) -> out (N,), one kernel call per row */
static rc_status pair_run(rc_op *op, pair_kernel k, rc_err *err)
{
    int64_t N, D;
    rc_status st = pair_rows(op, &N, &D, err);
    if (st || (st = resize_out(op, 0, 1, &N, err))) return st;
    const float *x = rc_f32(rc_in(op, 0)), *y = rc_f32(rc_in(op, 1));
    float *o = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++) k(D, x + i * D, y + i * D, o + i);
    return RC_OK;
}

static rc_status l1_run(rc_op *op, rc_err *err) { return pair_run(op, l1_row, err); }
static rc_status dot_run(rc_op *op, rc_err *err) { return pair_run(op, dot_row, err); }
static rc_status cos_run(rc_op *op, rc_err *err) { return pair_run(op, cos_row, err); }

typedef void (*pair_grad_kernel)(int64_t D, const float *x, const float *y, float g, float *dx, float *dy);

/* dx = g sign(x - y) (0 where |x - y| <= 1e-12, as Caffe2), dy = -dx */
static void l1_grad_row(int64_t D, const float *x, const float *y, float g, float *dx, float *dy)
{
    for (int64_t j = 0; j < D; j++) {
        const float d = x[j] - y[j];
        const float v = d > L1_GRAD_EPS ? g : d < -L1_GRAD_EPS ? -g : 0.0f;
        dx[j] = v;
        dy[j] = -v;
    }
}

/* dx = g y, dy = g x */
static void dot_grad_row(int64_t D, const float *x, const float *y, float g, float *dx, float *dy)
{
    for (int64_t j = 0; j < D; j++) {
        dx[j] = g * y[j];
        dy[j] = g * x[j];
    }
}

/* with nx2 = max(|x|^2, eps), ny2 likewise, c = x.y / sqrt(nx2 ny2):
 *   dx = g (y / sqrt(nx2 ny2) - [|x|^2 >= eps] c x / nx2), dy symmetric */
static void cos_grad_row(int64_t D, const float *x, const float *y, float g, float *dx, float *dy)
{
    double xx, yy, xy;
    cos_sums(D, x, y, &xx, &yy, &xy);
    const double nx2 = fmax(xx, COS_EPS), ny2 = fmax(yy, COS_EPS);
    const double inv = 1.0 / sqrt(nx2 * ny2), c = xy * inv;
    const double ax = (double)g * inv, bx = xx >= COS_EPS ? (double)g * c / nx2 : 0.0;
    const double by = yy >= COS_EPS ? (double)g * c / ny2 : 0.0;
    for (int64_t j = 0; j < D; j++) {
        dx[j] = (float)(ax * y[j] - bx * x[j]);
        dy[j] = (float)(ax * x[j] - by * y[j]);
    }
}

/* X, Y (N, ...), dOut (N,) -> dX, dY (shape of X) */
static rc_status pair_grad_run(rc_op *op, pair_grad_kernel k, rc_err *err)
{
    int64_t N, D;
    rc_status st = pair_rows(op, &N, &D, err);
    if (st || (st = check_row_grad(op, 2, N, "the output gradient", err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err)) || (st = resize_out_like(op, 1, rc_in(op, 0), err)))
        return st;
    const float *x = rc_f32(rc_in(op, 0)), *y = rc_f32(rc_in(op, 1)), *g = rc_f32(rc_in(op, 2));
    float *dx = rc_f32(rc_out(op, 0)), *dy = rc_f32(rc_out(op, 1));
    for (int64_t i = 0; i < N; i++) k(D, x + i * D, y + i * D, g[i], dx + i * D, dy + i * D);
    return RC_OK;
}

static rc_status l1_grad_run(rc_op *op, rc_err *err) { return pair_grad_run(op, l1_grad_row, err); }
static rc_status dot_grad_run(rc_op *op, rc_err *err) { return pair_grad_run(op, dot_grad_row, err); }
static rc_status cos_grad_run(rc_op *op, rc_err *err) { return pair_grad_run(op, cos_grad_row, err); }

/* ================================================================ Normalize, NormalizeL1 */

static rc_status norm_setup(rc_op *op, rc_err *err)
{
    l2_state *s;
    rc_status st = state_new(op, &s, err);
    return st ? st : rc_arg_i(&op->def, "axis", -1, &s->axis, err);
}

/* Input 0 split at the axis: outer x m x sf (m: the normalized dim). */
static rc_status norm_dims(rc_op *op, int64_t *outer, int64_t *m, int64_t *sf, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t axis = ((const l2_state *)op->state)->axis;
    const int64_t a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument axis=%lld is out of range for input 0 blob '%s' %s "
                          "(must be in [-%d, %d))", (long long)axis, rc_in_name(op, 0), RC_SHAPE(x), x->ndim,
                          x->ndim);
    *outer = rc_dims_prod(x, 0, (int)a);
    *m = x->dims[a];
    *sf = rc_dims_prod(x, (int)a + 1, x->ndim);
    return RC_OK;
}

static rc_status norm_check(rc_op *op, rc_err *err)
{
    int64_t o, m, sf;
    return norm_dims(op, &o, &m, &sf, err);
}

/* norm_dims, and input 1 (dY) f32 of X's shape */
static rc_status norm_grad_dims(rc_op *op, int64_t *outer, int64_t *m, int64_t *sf, rc_err *err)
{
    rc_status st = norm_dims(op, outer, m, sf, err);
    if (st || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    return check_same_shape(op, 0, 1, err);
}

static rc_status norm_grad_check(rc_op *op, rc_err *err)
{
    int64_t o, m, sf;
    return norm_grad_dims(op, &o, &m, &sf, err);
}

/* X (outer, m, sf) -> Y: each of the outer * sf vectors of m elements (stride sf) divided by
 * max(||x||_2, 1e-12) (l1 = 0), or by ||x||_1 when that is not 0 (l1 = 1; a zero vector stays 0) */
static void norm_kernel(int l1, int64_t outer, int64_t m, int64_t sf, const float *x, float *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < sf; k++) {
            const int64_t base = o * m * sf + k;
            double s = 0.0;
            for (int64_t j = 0; j < m; j++) {
                const double v = x[base + j * sf];
                s += l1 ? fabs(v) : v * v;
            }
            const double n = l1 ? (s != 0.0 ? s : 1.0) : fmax(sqrt(s), NORM_EPS);
            for (int64_t j = 0; j < m; j++) y[base + j * sf] = (float)(x[base + j * sf] / n);
        }
}

static rc_status norm_any_run(rc_op *op, int l1, rc_err *err)
{
    int64_t outer, m, sf;
    rc_status st = norm_dims(op, &outer, &m, &sf, err);
    if (st || (st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK; /* the loops would walk every empty vector */
    norm_kernel(l1, outer, m, sf, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status norm_run(rc_op *op, rc_err *err) { return norm_any_run(op, 0, err); }
static rc_status norml1_run(rc_op *op, rc_err *err) { return norm_any_run(op, 1, err); }

/* NormalizeGradient: X, dY (shape of X) -> dX. Per vector x (stride sf) with n = ||x||_2:
 *   n >= 1e-12: dx = dy / n - x (x.dy) / n^3;  n < 1e-12 (Y = X / 1e-12): dx = dy / 1e-12 */
static rc_status norm_grad_run(rc_op *op, rc_err *err)
{
    int64_t outer, m, sf;
    rc_status st = norm_grad_dims(op, &outer, &m, &sf, err);
    if (st || (st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK; /* the loops would walk every empty vector */
    const float *x = rc_f32(rc_in(op, 0)), *g = rc_f32(rc_in(op, 1));
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < sf; k++) {
            const int64_t base = o * m * sf + k;
            double ss = 0.0, xg = 0.0;
            for (int64_t j = 0; j < m; j++) {
                const double v = x[base + j * sf];
                ss += v * v;
                xg += v * g[base + j * sf];
            }
            const double n = sqrt(ss);
            const double a = n >= NORM_EPS ? 1.0 / n : 1.0 / NORM_EPS;
            const double b = n >= NORM_EPS ? xg / (n * n * n) : 0.0;
            for (int64_t j = 0; j < m; j++) {
                const int64_t p = base + j * sf;
                dx[p] = (float)(a * g[p] - b * x[p]);
            }
        }
    return RC_OK;
}

/* ================================================================ table */

const rc_op_schema rc_ops_loss2[] = {
    {"CrossEntropy", 2, 2, 1, 1, NULL, NULL, xent_run, NULL,
     "Y (N,) = -sum_j label_ij log(max(X_ij, 1e-20)), label: N x D probabilities", xent_check},
    {"CrossEntropyGradient", 3, 3, 1, 1, NULL, NULL, xent_grad_run, NULL,
     "(X, label, dY) -> dX = -dY_i label_ij / X_ij (0 where X_ij < 1e-20)", xent_grad_check},
    {"SigmoidCrossEntropyWithLogits", 2, 2, 1, 1, NULL, sx_setup, sx_run, free,
     "(logits, targets) -> -mean over the last dim of x t - softplus(x) (log_D_trick, unjoined_lr_loss)",
     sx_check},
    {"SigmoidCrossEntropyWithLogitsGradient", 3, 3, 1, 1, NULL, sx_setup, sx_grad_run, free,
     "(dXent, logits, targets) -> dLogits = -dXent / D (t - sigmoid(x))", sx_grad_check},
    {"WeightedSigmoidCrossEntropyWithLogits", 3, 3, 1, 1, NULL, NULL, sx_run, NULL,
     "(logits, targets, weights) -> -mean over the last dim of w (x t - softplus(x))", sx_check},
    {"WeightedSigmoidCrossEntropyWithLogitsGradient", 4, 4, 1, 1, NULL, NULL, sx_grad_run, NULL,
     "(dXent, logits, targets, weights) -> dLogits = -dXent / D w (t - sigmoid(x))", sx_grad_check},
    {"MakeTwoClass", 1, 1, 1, 1, NULL, NULL, two_run, NULL,
     "Y (..., 2) = [1 - X, X] for probabilities X in [0, 1]", two_check},
    {"MakeTwoClassGradient", 1, 1, 1, 1, NULL, NULL, two_grad_run, NULL,
     "dY (..., 2) -> dX = dY[..., 1] - dY[..., 0]", two_grad_check},
    {"L1Distance", 2, 2, 1, 1, NULL, NULL, l1_run, NULL, "dist (N,) = sum |X - Y| over each row", pair_check},
    {"L1DistanceGradient", 3, 3, 2, 2, NULL, NULL, l1_grad_run, NULL,
     "(X, Y, dDist) -> dX = dDist_i sign(X - Y) (0 where |X - Y| <= 1e-12), dY = -dX", pair_grad_check},
    {"DotProduct", 2, 2, 1, 1, NULL, NULL, dot_run, NULL, "dot (N,) = sum X Y over each row", pair_check},
    {"DotProductGradient", 3, 3, 2, 2, NULL, NULL, dot_grad_run, NULL,
     "(X, Y, dDot) -> dX = dDot_i Y, dY = dDot_i X", pair_grad_check},
    {"CosineSimilarity", 2, 2, 1, 1, NULL, NULL, cos_run, NULL,
     "cos (N,) = X.Y / sqrt(max(|X|^2, 1e-12) max(|Y|^2, 1e-12)) over each row", pair_check},
    {"CosineSimilarityGradient", 3, 3, 2, 2, NULL, NULL, cos_grad_run, NULL,
     "(X, Y, dCos) -> dX, dY", pair_grad_check},
    {"Normalize", 1, 1, 1, 1, NULL, norm_setup, norm_run, free,
     "Y = X / max(||X||_2, 1e-12) along axis (default -1)", norm_check},
    {"NormalizeGradient", 2, 2, 1, 1, NULL, norm_setup, norm_grad_run, free,
     "(X, dY) -> dX of Normalize along axis (default -1)", norm_grad_check},
    {"NormalizeL1", 1, 1, 1, 1, NULL, norm_setup, norml1_run, free,
     "Y = X / sum |X| along axis (default -1); an all-zero slice stays 0", norm_check},
    {0},
};
