/* ops/loss.c -- loss and training operators and their gradient ops:
 *   SquaredL2Distance, AveragedLoss, SumElements, SumSqrElements, Softmax,
 *   SoftmaxWithLoss, SpatialSoftmaxWithLoss, LabelCrossEntropy (+ the *Gradient op of each).
 *
 * Semantics follow Caffe2 (distance_op, loss_op, reduction_ops, softmax_op,
 * softmax_with_loss_op, cross_entropy_op), with these deliberate differences,
 * all where Caffe2 crashed, read out of bounds or returned NaN:
 *  - every label is range-checked (IndexError naming op, blob, row and value),
 *    in the forward AND the gradient op, before any output is written;
 *  - the mean of an empty tensor (AveragedLoss, SumElements / SumSqrElements
 *    average=1) is 0,
 *    and so is the loss of an empty batch (SoftmaxWithLoss with N = 0, or
 *    with weights summing to 0); the gradient is then 0 as well;
 *  - SoftmaxWithLoss computes log-probabilities as x - logsumexp(x) (no
 *    1e-20 clamp in label_prob mode) and its gradient is the exact gradient
 *    of the loss the forward op computed, including when the weights sum to
 *    0 (gradient 0, where Caffe2 left dX unscaled);
 *  - LabelCrossEntropyGradient is the derivative of the clamped forward: 0
 *    where X[i, label] < 1e-20 (Caffe2 returned -dY * 1e20 there);
 *  - SumSqrElements gives a 0-d output like our SumElements (Caffe2: a scalar
 *    tensor too) and has a C gradient op, SumSqrElementsGradient (X, dY) ->
 *    dX = 2 X dY (/ numel with average=1).
 * Sums are accumulated in double, so results do not depend on threads.
 * Kernels are plain functions of pointers and sizes; none keeps state, so
 * different op instances may run concurrently. Nothing allocates except the
 * resize of an output whose shape changed.
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG_THRESHOLD 1e-20f
/* label_prob rows must sum to 1 within this (Caffe2: 1e-5 in float32 sums,
 * which rejects honest float32 distributions over many classes). */
#define PROB_SUM_TOL 1e-4

/* ================================================================ kernels */

/* x, y: (N, D) -> dist: (N,): dist[i] = 0.5 * sum_j (x[i,j] - y[i,j])^2 */
static void sql2_kernel(int64_t N, int64_t D, const float *x, const float *y, float *dist)
{
    for (int64_t i = 0; i < N; i++) {
        const float *xr = x + i * D, *yr = y + i * D;
        double s = 0.0;
        for (int64_t j = 0; j < D; j++) {
            double d = (double)xr[j] - (double)yr[j];
            s += d * d;
        }
        dist[i] = (float)(0.5 * s);
    }
}

/* x, y: (N, D), g: (N,) -> dx, dy: (N, D): dx = g[i] (x - y), dy = -dx */
static void sql2_grad_kernel(int64_t N, int64_t D, const float *x, const float *y, const float *g, float *dx,
                             float *dy)
{
    for (int64_t i = 0; i < N; i++) {
        const float gi = g[i];
        for (int64_t j = i * D; j < (i + 1) * D; j++) {
            float v = gi * (x[j] - y[j]);
            dx[j] = v;
            dy[j] = -v;
        }
    }
}

/* x: (n,) -> sum of x in double */
static double sum_kernel(int64_t n, const float *x)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}

/* x: (n,) -> sum of x[i]^2, in double, in index order (the same bits every run) */
static double sumsqr_kernel(int64_t n, const float *x)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    return s;
}

/* x: (D,) -> y: (D,) softmax of the row; returns logsumexp(x) in double.
 * y may alias x. */
static double softmax_row(int64_t D, const float *x, float *y)
{
    if (D == 0) return 0.0;
    float mx = x[0];
    for (int64_t j = 1; j < D; j++)
        if (x[j] > mx) mx = x[j];
    double s = 0.0;
    for (int64_t j = 0; j < D; j++) {
        float e = expf(x[j] - mx);
        y[j] = e;
        s += e;
    }
    const float inv = (float)(1.0 / s);
    for (int64_t j = 0; j < D; j++) y[j] *= inv;
    return (double)mx + log(s);
}

/* y, dy: (N, D) -> dx: (N, D): dx = y * (dy - sum_j y*dy) (row-wise).
 * dx may alias y or dy. */
static void softmax_grad_kernel(int64_t N, int64_t D, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < N; i++) {
        const float *yr = y + i * D, *gr = dy + i * D;
        float *dr = dx + i * D;
        double dot = 0.0;
        for (int64_t j = 0; j < D; j++) dot += (double)yr[j] * gr[j];
        const float fd = (float)dot;
        for (int64_t j = 0; j < D; j++) dr[j] = yr[j] * (gr[j] - fd);
    }
}

/* ================================================================ helpers */

/* Caffe2's canonical_axis_index: axis in [-ndim, ndim) -> [0, ndim). */
static rc_status canonical_axis(rc_op *op, int in, int64_t axis, int *out, rc_err *err)
{
    const rc_tensor *t = rc_in(op, in);
    int64_t a = axis < 0 ? axis + t->ndim : axis;
    if (a < 0 || a >= t->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument axis=%lld is out of range for input %d blob '%s' of shape %s "
                          "(must be in [-%d, %d))", (long long)axis, in, rc_in_name(op, in), RC_SHAPE(t),
                          t->ndim, t->ndim);
    *out = (int)a;
    return RC_OK;
}

/* Input i must be float32 holding exactly one element (a loss gradient). */
static rc_status check_one(rc_op *op, int i, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (rc_tensor_numel(t) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must hold one value (shape () or (1,)), got %s",
                          i, rc_in_name(op, i), RC_SHAPE(t));
    return RC_OK;
}

/* check_one, and its value. */
static rc_status check_scalar(rc_op *op, int i, float *value, rc_err *err)
{
    rc_status st = check_one(op, i, err);
    if (st) return st;
    *value = rc_f32(rc_in(op, i))[0];
    return RC_OK;
}

static rc_status check_same_shape(rc_op *op, int a, int b, rc_err *err)
{
    const rc_tensor *ta = rc_in(op, a), *tb = rc_in(op, b);
    if (!rc_tensor_same_shape(ta, tb))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' and input %d blob '%s' must have the same "
                          "shape, got %s and %s", a, rc_in_name(op, a), b, rc_in_name(op, b), RC_SHAPE(ta),
                          RC_SHAPE(tb));
    return RC_OK;
}

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
    /* like may be the output tensor itself (in-place): resize_like is then a no-op */
    if (rc_tensor_resize_like(rc_out(op, o), like, err)) return out_fail(op, o, err);
    return RC_OK;
}

/* A 0/1 argument parsed at op creation. */
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

/* Integer labels: input li (int32) must hold N labels in [0, D). */
static rc_status check_labels(rc_op *op, int li, int64_t N, int64_t D, rc_err *err)
{
    const int32_t *lab = rc_i32(rc_in(op, li));
    for (int64_t i = 0; i < N; i++)
        if (lab[i] < 0 || (int64_t)lab[i] >= D)
            return rc_op_fail(op, err, RC_ERR_INDEX,
                              "input %d blob '%s': label %d at row %lld is out of range [0, %lld) "
                              "(the number of classes)", li, rc_in_name(op, li), (int)lab[i], (long long)i,
                              (long long)D);
    return RC_OK;
}

/* ================================================================ SquaredL2Distance */

/* X, Y: same shape, N = dims[0] (1 for a 0-d X), D = numel / N. */
static rc_status sql2_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    if ((st = check_same_shape(op, 0, 1, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    *N = x->ndim > 0 ? x->dims[0] : 1;
    *D = *N > 0 ? rc_tensor_numel(x) / *N : 0;
    return RC_OK;
}

/* SquaredL2Distance: X, Y (N, ...) -> dist (N,) = 0.5 * ||x_i - y_i||^2 */
static rc_status sql2_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return sql2_shapes(op, &N, &D, err);
}

static rc_status sql2_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = sql2_shapes(op, &N, &D, err);
    if (st) return st;
    if ((st = resize_out(op, 0, 1, &N, err))) return st;
    sql2_kernel(N, D, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status sql2_grad_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st = sql2_shapes(op, N, D, err);
    if (st) return st;
    if ((st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 2);
    if (g->ndim != 1 || g->dims[0] != *N)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the distance gradient) must have shape (%lld,) "
                          "to match input 0 blob '%s' %s, got %s", rc_in_name(op, 2), (long long)*N,
                          rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), RC_SHAPE(g));
    return RC_OK;
}

static rc_status sql2_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return sql2_grad_shapes(op, &N, &D, err);
}

/* SquaredL2DistanceGradient: X, Y (N, ...), dDist (N,) -> dX, dY (shape of X) */
static rc_status sql2_grad_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = sql2_grad_shapes(op, &N, &D, err);
    if (st) return st;
    const rc_tensor *g = rc_in(op, 2);
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err)) || (st = resize_out_like(op, 1, rc_in(op, 0), err)))
        return st;
    sql2_grad_kernel(N, D, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(g), rc_f32(rc_out(op, 0)),
                     rc_f32(rc_out(op, 1)));
    return RC_OK;
}

/* ================================================================ SumElements / AveragedLoss */

/* op->state of SumElements(+Gradient): the average flag, stored in the pointer
 * value itself (NULL: sum, non-NULL: average) so nothing is allocated. */
#define AVG_ON ((void *)1)

static rc_status sum_setup(rc_op *op, rc_err *err)
{
    int avg = 0;
    rc_status st = flag_arg(op, "average", &avg, err);
    if (st) return st;
    op->state = avg ? AVG_ON : NULL;
    return RC_OK;
}

static rc_status avg_setup(rc_op *op, rc_err *err)
{
    op->state = AVG_ON;
    return RC_OK;
}

/* The reductions: X float32 (any shape). */
static rc_status reduce_check(rc_op *op, rc_err *err) { return rc_check_input(op, 0, RC_F32, err); }

/* Their gradients: X float32, the output gradient one float32 value. */
static rc_status reduce_grad_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    return st ? st : check_one(op, 1, err);
}

/* X (any shape) -> () kernel(X) (or that / numel with average; 0 for an empty X) */
static rc_status reduce_run(rc_op *op, double (*kernel)(int64_t, const float *), rc_err *err)
{
    rc_status st = reduce_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t n = rc_tensor_numel(x);
    double s = kernel(n, rc_f32(x));
    if (op->state == AVG_ON) s = n > 0 ? s / (double)n : 0.0;
    if ((st = resize_out(op, 0, 0, NULL, err))) return st;
    rc_f32(rc_out(op, 0))[0] = (float)s;
    return RC_OK;
}

/* SumElements / AveragedLoss: X (any shape) -> () sum (or mean; 0 for an empty X) */
static rc_status sum_run(rc_op *op, rc_err *err) { return reduce_run(op, sum_kernel, err); }

/* SumElementsGradient / AveragedLossGradient: X (any), dSum (one value) -> dX (shape of X),
 * every element dSum (or dSum / numel). dX may alias X. */
static rc_status sum_grad_run(rc_op *op, rc_err *err)
{
    rc_status st;
    float g = 0.0f;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = check_scalar(op, 1, &g, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t n = rc_tensor_numel(x);
    if (op->state == AVG_ON && n > 0) g = (float)((double)g / (double)n);
    if ((st = resize_out_like(op, 0, x, err))) return st;
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) dx[i] = g;
    return RC_OK;
}

/* SumSqrElements: X (any shape) -> () sum of X^2 (or its mean; 0 for an empty X) */
static rc_status sumsqr_run(rc_op *op, rc_err *err) { return reduce_run(op, sumsqr_kernel, err); }

/* SumSqrElementsGradient: X (any), dY (one value) -> dX (shape of X) = 2 X dY
 * (2 X dY / numel(X) with average=1). dX may alias X. */
static rc_status sumsqr_grad_run(rc_op *op, rc_err *err)
{
    rc_status st;
    float g = 0.0f;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = check_scalar(op, 1, &g, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t n = rc_tensor_numel(x);
    double f = 2.0 * (double)g;
    if (op->state == AVG_ON && n > 0) f /= (double)n;
    const float ff = (float)f;
    if ((st = resize_out_like(op, 0, x, err))) return st;
    const float *xs = rc_f32(x);
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) dx[i] = ff * xs[i];
    return RC_OK;
}

/* ================================================================ Softmax */

/* op->state of the axis ops: the parsed arguments. */
typedef struct {
    int64_t axis;
    int label_prob;
    float scale;
} axis_state;

static rc_status axis_setup(rc_op *op, rc_err *err)
{
    axis_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    s->scale = 1.0f;
    return rc_arg_i(&op->def, "axis", 1, &s->axis, err);
}

/* SoftmaxWithLoss(+Gradient) arguments: axis, label_prob (0/1), scale (finite); spatial=1 is refused. */
static rc_status swl_setup(rc_op *op, rc_err *err)
{
    rc_status st = axis_setup(op, err);
    if (st) return st;
    axis_state *s = op->state;
    if ((st = flag_arg(op, "label_prob", &s->label_prob, err))) return st;
    if ((st = rc_arg_f(&op->def, "scale", 1.0f, &s->scale, err))) return st;
    if (!isfinite(s->scale))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument scale must be finite, got %g", (double)s->scale);
    const rc_arg *sp = rc_opdef_arg(&op->def, "spatial");
    if (sp && !(sp->kind == RC_ARG_I && sp->i == 0))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument spatial (NCHW spatial mode) is not supported; "
                          "flatten the logits to N x D instead");
    return RC_OK;
}

/* N x D split of input i at the op's axis. */
static rc_status split_at_axis(rc_op *op, int i, int *ax, int64_t *N, int64_t *D, rc_err *err)
{
    const axis_state *s = op->state;
    rc_status st = canonical_axis(op, i, s->axis, ax, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    *N = rc_dims_prod(t, 0, *ax);
    *D = rc_dims_prod(t, *ax, t->ndim);
    return RC_OK;
}

static rc_status softmax_check(rc_op *op, rc_err *err)
{
    int ax = 0;
    int64_t N, D;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    return st ? st : split_at_axis(op, 0, &ax, &N, &D, err);
}

/* Softmax: X (..., split at axis into N x D) -> Y (shape of X), row-wise softmax. Y may alias X. */
static rc_status softmax_run(rc_op *op, rc_err *err)
{
    int ax;
    int64_t N, D;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = split_at_axis(op, 0, &ax, &N, &D, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = resize_out_like(op, 0, x, err))) return st;
    if (N * D == 0) return RC_OK; /* the loop would walk every empty row */
    const float *xd = rc_f32(x);
    float *yd = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++) softmax_row(D, xd + i * D, yd + i * D);
    return RC_OK;
}

static rc_status softmax_grad_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    int ax = 0;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    if ((st = check_same_shape(op, 0, 1, err)) || (st = split_at_axis(op, 0, &ax, N, D, err))) return st;
    return RC_OK;
}

static rc_status softmax_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return softmax_grad_shapes(op, &N, &D, err);
}

/* SoftmaxGradient: Y, dY (same shape, N x D at axis) -> dX (shape of Y). dX may alias Y or dY. */
static rc_status softmax_grad_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st;
    if ((st = softmax_grad_shapes(op, &N, &D, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    if (N * D == 0) return RC_OK; /* the kernel would walk every empty row */
    softmax_grad_kernel(N, D, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ SoftmaxWithLoss */

/* Checks labels (input 1), optional weights (input wi, -1: none) against the
 * logits (input 0) split at ax into N x D. With values (not in the net-creation
 * check), integer labels are range-checked and probability labels (check_probs)
 * non-negative and summing to 1 per row. */
static rc_status swl_check_inputs(rc_op *op, int ax, int64_t N, int64_t D, int wi, int values, int check_probs,
                                  rc_err *err)
{
    const axis_state *s = op->state;
    const rc_tensor *t = rc_in(op, 1);
    rc_status st;
    if (s->label_prob) {
        if ((st = rc_check_input(op, 1, RC_F32, err))) return st;
        if (t->ndim <= ax || rc_dims_prod(t, 0, ax) != N || rc_dims_prod(t, ax, t->ndim) != D)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' (label_prob=1) must split at axis %d into N=%lld rows of D=%lld "
                              "class probabilities like input 0 blob '%s' %s, got %s", rc_in_name(op, 1), ax,
                              (long long)N, (long long)D, rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), RC_SHAPE(t));
        if (values && check_probs) {
            const float *p = rc_f32(t);
            for (int64_t i = 0; i < N; i++) {
                double tot = 0.0;
                for (int64_t j = 0; j < D; j++) {
                    float v = p[i * D + j];
                    if (!(v >= 0.0f))
                        return rc_op_fail(op, err, RC_ERR_VALUE,
                                          "input 1 blob '%s': label probability %g at row %lld, class %lld is "
                                          "negative or NaN", rc_in_name(op, 1), (double)v, (long long)i, (long long)j);
                    tot += v;
                }
                if (fabs(tot - 1.0) > PROB_SUM_TOL)
                    return rc_op_fail(op, err, RC_ERR_VALUE,
                                      "input 1 blob '%s': label probabilities of row %lld sum to %.7g, not 1 "
                                      "(+/- %g)", rc_in_name(op, 1), (long long)i, tot, PROB_SUM_TOL);
            }
        }
    } else {
        if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
        /* Caffe2: labels of rank == axis with N elements, or dims[:axis] == N and dims[axis:] == 1 */
        if (rc_tensor_numel(t) != N || (t->ndim > ax && rc_dims_prod(t, 0, ax) != N))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' must hold one int32 label per row: N=%lld labels, shape (%lld,) "
                              "or (%lld, 1), for input 0 blob '%s' %s split at axis %d; got %s", rc_in_name(op, 1),
                              (long long)N, (long long)N, (long long)N, rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)),
                              ax, RC_SHAPE(t));
        if (values && (st = check_labels(op, 1, N, D, err))) return st;
    }
    if (wi >= 0) {
        if ((st = rc_check_input(op, wi, RC_F32, err))) return st;
        const rc_tensor *w = rc_in(op, wi);
        if (w->ndim < 1 || rc_tensor_numel(w) != N)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (weights) must hold one weight per row, shape (%lld,), got %s",
                              wi, rc_in_name(op, wi), (long long)N, RC_SHAPE(w));
    }
    return RC_OK;
}

/* SoftmaxWithLoss: logits X (N x D at axis), labels T (N,) int32 or (N x D) float32 with
 * label_prob, [weights W (N,)] -> P (shape of X) softmax, loss () =
 *   scale * sum_i w_i * CE_i / sum_i w_i   (0 when sum_i w_i == 0, e.g. N == 0),
 *   CE_i = -log P[i, T_i]  or  -sum_j T_ij log P_ij. */
static rc_status swl_check(rc_op *op, rc_err *err)
{
    int ax = 0;
    int64_t N, D;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = split_at_axis(op, 0, &ax, &N, &D, err))) return st;
    return swl_check_inputs(op, ax, N, D, op->n_in > 2 ? 2 : -1, 0, 0, err);
}

static rc_status swl_run(rc_op *op, rc_err *err)
{
    const axis_state *s = op->state;
    int ax;
    int64_t N, D;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = split_at_axis(op, 0, &ax, &N, &D, err))) return st;
    const int wi = op->n_in > 2 ? 2 : -1;
    if ((st = swl_check_inputs(op, ax, N, D, wi, 1, 1, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = resize_out_like(op, 0, x, err)) || (st = resize_out(op, 1, 0, NULL, err))) return st;

    const float *xd = rc_f32(x);
    float *pd = rc_f32(rc_out(op, 0));
    const float *w = wi >= 0 ? rc_f32(rc_in(op, wi)) : NULL;
    double loss_sum = 0.0, wsum = 0.0;
    for (int64_t i = 0; i < N; i++) {
        const float *xr = xd + i * D;
        double lse = softmax_row(D, xr, pd + i * D);
        double ce = 0.0;
        if (s->label_prob) {
            const float *tr = rc_f32(rc_in(op, 1)) + i * D;
            for (int64_t j = 0; j < D; j++)
                if (tr[j] != 0.0f) ce -= (double)tr[j] * ((double)xr[j] - lse);
        } else {
            ce = lse - (double)xr[rc_i32(rc_in(op, 1))[i]];
        }
        double wt = w ? (double)w[i] : 1.0;
        loss_sum += wt * ce;
        wsum += wt;
    }
    rc_f32(rc_out(op, 1))[0] = wsum != 0.0 ? (float)((double)s->scale * loss_sum / wsum) : 0.0f;
    return RC_OK;
}

/* SoftmaxWithLossGradient: X, T, [W], P (shape of X), dLoss (one value) -> dX (shape of X):
 *   dX_ij = c * w_i * (P_ij - [j == T_i])          (integer labels)
 *   dX_ij = c * w_i * (P_ij * sum_k T_ik - T_ij)   (label_prob)
 * with c = scale * dLoss / sum_i w_i, or 0 when sum_i w_i == 0. */
/* The gradient's inputs; values=0 (the check) skips the label values. */
static rc_status swl_grad_shapes(rc_op *op, int values, int64_t *N, int64_t *D, rc_err *err)
{
    int ax = 0;
    rc_status st;
    const int pi = op->n_in - 2, gi = op->n_in - 1, wi = op->n_in == 5 ? 2 : -1;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = split_at_axis(op, 0, &ax, N, D, err))) return st;
    if ((st = swl_check_inputs(op, ax, *N, *D, wi, values, 0, err))) return st;
    if ((st = rc_check_input(op, pi, RC_F32, err)) || (st = check_same_shape(op, 0, pi, err))) return st;
    return check_one(op, gi, err);
}

static rc_status swl_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return swl_grad_shapes(op, 0, &N, &D, err);
}

static rc_status swl_grad_run(rc_op *op, rc_err *err)
{
    const axis_state *s = op->state;
    int64_t N, D;
    rc_status st;
    const int pi = op->n_in - 2, gi = op->n_in - 1, wi = op->n_in == 5 ? 2 : -1;
    if ((st = swl_grad_shapes(op, 1, &N, &D, err))) return st;
    const float g = rc_f32(rc_in(op, gi))[0];
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;

    const float *pd = rc_f32(rc_in(op, pi));
    const float *w = wi >= 0 ? rc_f32(rc_in(op, wi)) : NULL;
    float *dx = rc_f32(rc_out(op, 0));
    double wsum = 0.0;
    if (w)
        for (int64_t i = 0; i < N; i++) wsum += w[i];
    else
        wsum = (double)N;
    const double c = wsum != 0.0 ? (double)s->scale * (double)g / wsum : 0.0;
    for (int64_t i = 0; i < N; i++) {
        const float ci = (float)(c * (w ? (double)w[i] : 1.0));
        const float *pr = pd + i * D;
        float *dr = dx + i * D;
        if (s->label_prob) {
            const float *tr = rc_f32(rc_in(op, 1)) + i * D;
            double tsum = 0.0;
            for (int64_t j = 0; j < D; j++) tsum += tr[j];
            const float ft = (float)tsum;
            for (int64_t j = 0; j < D; j++) dr[j] = ci * (pr[j] * ft - tr[j]);
        } else {
            const int32_t lab = rc_i32(rc_in(op, 1))[i];
            for (int64_t j = 0; j < D; j++) dr[j] = ci * pr[j];
            dr[lab] = ci * (pr[lab] - 1.0f);
        }
    }
    return RC_OK;
}

/* ================================================================ SpatialSoftmaxWithLoss */

/* SpatialSoftmaxWithLoss(+Gradient) arguments: scale (finite, default 1). Caffe2 also took 'order'
 * (NCHW only); NHWC is refused. */
static rc_status sswl_setup(rc_op *op, rc_err *err)
{
    rc_status st = axis_setup(op, err);
    if (st) return st;
    axis_state *s = op->state;
    if ((st = rc_arg_f(&op->def, "scale", 1.0f, &s->scale, err))) return st;
    if (!isfinite(s->scale))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument scale must be finite, got %g", (double)s->scale);
    const char *order;
    if ((st = rc_arg_s(&op->def, "order", "NCHW", &order, err))) return st;
    if (strcmp(order, "NCHW") != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument order must be NCHW (as Caffe2's CPU op), got '%s'", order);
    return RC_OK;
}

/* X float32 (N, D, H, W); T int32 (N, H, W); [W float32 (N, H, W)] at input wi (-1: none); with
 * values, every label -1 (ignored) or in [0, D). */
static rc_status sswl_check_inputs(rc_op *op, int wi, int values, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *t = rc_in(op, 1);
    if (x->ndim != 4)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (logits) must be 4-D (N, D, H, W), got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    const int ins[2] = {1, wi};
    for (int k = 0; k < 2; k++) {
        const int i = ins[k];
        if (i < 0) continue;
        if (k && (st = rc_check_input(op, i, RC_F32, err))) return st;
        const rc_tensor *u = rc_in(op, i);
        if (u->ndim != 3 || u->dims[0] != x->dims[0] || u->dims[1] != x->dims[2] || u->dims[2] != x->dims[3])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have shape (N, H, W) = (%lld, %lld, "
                              "%lld), one per pixel of input 0 blob '%s' %s, got %s", i, rc_in_name(op, i),
                              k ? "weights" : "labels", (long long)x->dims[0], (long long)x->dims[2],
                              (long long)x->dims[3], rc_in_name(op, 0), RC_SHAPE(x), RC_SHAPE(u));
    }
    if (!values) return RC_OK;
    const int64_t n = rc_tensor_numel(t), D = x->dims[1];
    const int32_t *lab = n ? rc_i32(t) : NULL;
    for (int64_t i = 0; i < n; i++)
        if (lab[i] != -1 && (lab[i] < 0 || (int64_t)lab[i] >= D))
            return rc_op_fail(op, err, RC_ERR_INDEX, "input 1 blob '%s': label %d at pixel %lld (flat) is out of range "
                              "[0, %lld) (the number of classes; -1 is ignored)", rc_in_name(op, 1), (int)lab[i],
                              (long long)i, (long long)D);
    return RC_OK;
}

static rc_status sswl_check(rc_op *op, rc_err *err) { return sswl_check_inputs(op, op->n_in > 2 ? 2 : -1, 0, err); }

/* The sum of the weights of the pixels whose label is not -1 (weights NULL: their count). */
static double sswl_total_weight(int64_t n, const int32_t *lab, const float *w)
{
    double tw = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (lab[i] != -1) tw += w ? (double)w[i] : 1.0;
    return tw;
}

/* SpatialSoftmaxWithLoss: X (N, D, H, W), T (N, H, W) int32 (-1: ignored), [W (N, H, W)] ->
 * P (shape of X), softmax over D at every pixel; loss () = scale * sum w * (lse - x[label]) / sum w
 * over the pixels not ignored (0 when that weight is 0). */
static rc_status sswl_run(rc_op *op, rc_err *err)
{
    const axis_state *s = op->state;
    const int wi = op->n_in > 2 ? 2 : -1;
    rc_status st = sswl_check_inputs(op, wi, 1, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = resize_out_like(op, 0, x, err)) || (st = resize_out(op, 1, 0, NULL, err))) return st;
    const int64_t N = x->dims[0], D = x->dims[1], HW = x->dims[2] * x->dims[3];
    const float *xd = rc_f32(x), *w = wi >= 0 ? rc_f32(rc_in(op, wi)) : NULL;
    const int32_t *lab = N * HW ? rc_i32(rc_in(op, 1)) : NULL;
    float *pd = rc_f32(rc_out(op, 0));
    double loss = 0.0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t p = 0; p < HW; p++) {
            const float *xr = xd + i * D * HW + p;
            float *pr = pd + i * D * HW + p;
            if (D == 0) continue;
            float mx = xr[0];
            for (int64_t c = 1; c < D; c++)
                if (xr[c * HW] > mx) mx = xr[c * HW];
            double sum = 0.0;
            for (int64_t c = 0; c < D; c++) {
                const float e = expf(xr[c * HW] - mx);
                pr[c * HW] = e;
                sum += e;
            }
            const float inv = (float)(1.0 / sum);
            for (int64_t c = 0; c < D; c++) pr[c * HW] *= inv;
            const int32_t l = lab[i * HW + p];
            if (l != -1) loss += (w ? (double)w[i * HW + p] : 1.0) * ((double)mx + log(sum) - (double)xr[l * HW]);
        }
    const double tw = N * HW ? sswl_total_weight(N * HW, lab, w) : 0.0;
    rc_f32(rc_out(op, 1))[0] = tw != 0.0 ? (float)((double)s->scale * loss / tw) : 0.0f;
    return RC_OK;
}

/* SpatialSoftmaxWithLossGradient: X, T, [W], P (shape of X), dLoss (one value) -> dX (shape of X):
 * dX[i, c, p] = k * w[i, p] * (P[i, c, p] - [c == T[i, p]]), k = scale * dLoss / sum w over the pixels
 * not ignored (0 when that is 0); 0 at the ignored pixels. */
static rc_status sswl_grad_shapes(rc_op *op, int values, rc_err *err)
{
    rc_status st;
    const int pi = op->n_in - 2, gi = op->n_in - 1, wi = op->n_in == 5 ? 2 : -1;
    if ((st = sswl_check_inputs(op, wi, values, err))) return st;
    if ((st = rc_check_input(op, pi, RC_F32, err)) || (st = check_same_shape(op, 0, pi, err))) return st;
    return check_one(op, gi, err);
}

static rc_status sswl_grad_check(rc_op *op, rc_err *err) { return sswl_grad_shapes(op, 0, err); }

static rc_status sswl_grad_run(rc_op *op, rc_err *err)
{
    const axis_state *s = op->state;
    const int pi = op->n_in - 2, gi = op->n_in - 1, wi = op->n_in == 5 ? 2 : -1;
    rc_status st = sswl_grad_shapes(op, 1, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const float g = rc_f32(rc_in(op, gi))[0];
    if ((st = resize_out_like(op, 0, x, err))) return st;
    const int64_t N = x->dims[0], D = x->dims[1], HW = x->dims[2] * x->dims[3];
    const float *pd = rc_f32(rc_in(op, pi)), *w = wi >= 0 ? rc_f32(rc_in(op, wi)) : NULL;
    const int32_t *lab = N * HW ? rc_i32(rc_in(op, 1)) : NULL;
    float *dx = rc_f32(rc_out(op, 0));
    const double tw = N * HW ? sswl_total_weight(N * HW, lab, w) : 0.0;
    const double k = tw != 0.0 ? (double)s->scale * (double)g / tw : 0.0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t p = 0; p < HW; p++) {
            const int32_t l = lab[i * HW + p];
            const float kp = l == -1 ? 0.0f : (float)(k * (w ? (double)w[i * HW + p] : 1.0));
            const float *pr = pd + i * D * HW + p;
            float *dr = dx + i * D * HW + p;
            for (int64_t c = 0; c < D; c++) dr[c * HW] = kp * (pr[c * HW] - (c == l ? 1.0f : 0.0f));
        }
    return RC_OK;
}

/* ================================================================ LabelCrossEntropy */

/* X: (N, ...) or (D,) (N = 1); label: (N,) or (N, 1) int32 (values not checked). */
static rc_status lce_dims(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_ndim(op, 0, 1, RC_MAX_DIMS, err))) return st;
    if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (x->ndim > 1) {
        *N = x->dims[0];
        *D = rc_dims_prod(x, 1, x->ndim);
    } else {
        *N = 1;
        *D = x->dims[0];
    }
    if (!((l->ndim == 1 || (l->ndim == 2 && l->dims[1] == 1)) && l->dims[0] == *N))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' must hold one int32 label per row of input 0 blob '%s' %s: shape "
                          "(%lld,) or (%lld, 1), got %s", rc_in_name(op, 1), rc_in_name(op, 0), RC_SHAPE(x),
                          (long long)*N, (long long)*N, RC_SHAPE(l));
    return RC_OK;
}

static rc_status lce_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return lce_dims(op, &N, &D, err);
}

/* lce_dims, and the labels in [0, D). */
static rc_status lce_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st = lce_dims(op, N, D, err);
    return st ? st : check_labels(op, 1, *N, *D, err);
}

/* LabelCrossEntropy: X (N x D), label (N,) -> Y (N,) = -log(max(X[i, label_i], 1e-20)) */
static rc_status lce_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = lce_shapes(op, &N, &D, err);
    if (st) return st;
    if ((st = resize_out(op, 0, 1, &N, err))) return st;
    const float *x = rc_f32(rc_in(op, 0));
    const int32_t *lab = rc_i32(rc_in(op, 1));
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++) {
        float v = x[i * D + lab[i]];
        y[i] = -logf(v > LOG_THRESHOLD ? v : LOG_THRESHOLD);
    }
    return RC_OK;
}

/* LabelCrossEntropyGradient: X (N x D), label (N,), dY (N,) -> dX (shape of X):
 * dX[i, label_i] = -dY_i / X[i, label_i] (0 where X[i, label_i] < 1e-20), 0 elsewhere. */
/* The gradient's inputs; values=0 (the check) skips the label values. */
static rc_status lce_grad_shapes(rc_op *op, int values, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st = values ? lce_shapes(op, N, D, err) : lce_dims(op, N, D, err);
    if (st) return st;
    if ((st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 2);
    if (g->ndim != 1 || g->dims[0] != *N)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the loss gradient) must have shape (%lld,), "
                          "got %s", rc_in_name(op, 2), (long long)*N, RC_SHAPE(g));
    return RC_OK;
}

static rc_status lce_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return lce_grad_shapes(op, 0, &N, &D, err);
}

static rc_status lce_grad_run(rc_op *op, rc_err *err)
{
    int64_t N, D;
    rc_status st = lce_grad_shapes(op, 1, &N, &D, err);
    if (st) return st;
    const rc_tensor *g = rc_in(op, 2);
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    const float *x = rc_f32(rc_in(op, 0)), *gd = rc_f32(g);
    const int32_t *lab = rc_i32(rc_in(op, 1));
    float *dx = rc_f32(rc_out(op, 0));
    memset(dx, 0, (size_t)(N * D) * sizeof *dx);
    for (int64_t i = 0; i < N; i++) {
        float v = x[i * D + lab[i]];
        dx[i * D + lab[i]] = v >= LOG_THRESHOLD ? -gd[i] / v : 0.0f;
    }
    return RC_OK;
}

/* ================================================================ table */

static int inplace_grad_x(int in, int out) { return in == 0 && out == 0; }

const rc_op_schema rc_ops_loss[] = {
    {"SquaredL2Distance", 2, 2, 1, 1, NULL, NULL, sql2_run, NULL,
     "dist (N,) = 0.5 * sum((X - Y)^2) over each row (first dim) of X, Y", sql2_check},
    {"SquaredL2DistanceGradient", 3, 3, 2, 2, NULL, NULL, sql2_grad_run, NULL,
     "(X, Y, dDist) -> dX = dDist_i (X - Y), dY = -dX", sql2_grad_check},
    {"AveragedLoss", 1, 1, 1, 1, NULL, avg_setup, sum_run, NULL,
     "loss () = mean of all elements of X (0 for an empty X)", reduce_check},
    {"AveragedLossGradient", 2, 2, 1, 1, inplace_grad_x, avg_setup, sum_grad_run, NULL,
     "(X, dLoss) -> dX = dLoss / numel(X)", reduce_grad_check},
    {"SumElements", 1, 1, 1, 1, NULL, sum_setup, sum_run, NULL,
     "sum () = sum of all elements of X; average=1: the mean (0 for an empty X)", reduce_check},
    {"SumElementsGradient", 2, 2, 1, 1, inplace_grad_x, sum_setup, sum_grad_run, NULL,
     "(X, dSum) -> dX = dSum (or dSum / numel(X) with average=1)", reduce_grad_check},
    {"SumSqrElements", 1, 1, 1, 1, NULL, sum_setup, sumsqr_run, NULL,
     "Y () = sum of X^2 over all elements; average=1: the mean (0 for an empty X)", reduce_check},
    {"SumSqrElementsGradient", 2, 2, 1, 1, inplace_grad_x, sum_setup, sumsqr_grad_run, NULL,
     "(X, dY) -> dX = 2 X dY (or 2 X dY / numel(X) with average=1)", reduce_grad_check},
    {"Softmax", 1, 1, 1, 1, rc_inplace_first, axis_setup, softmax_run, free,
     "Y = softmax of X flattened to N x D at axis (default 1)", softmax_check},
    {"SoftmaxGradient", 2, 2, 1, 1, rc_inplace_any, axis_setup, softmax_grad_run, free,
     "(Y, dY) -> dX = Y * (dY - rowsum(Y * dY))", softmax_grad_check},
    {"SoftmaxWithLoss", 2, 3, 2, 2, NULL, swl_setup, swl_run, free,
     "(logits, labels[, weights]) -> (softmax, loss): weighted mean cross-entropy * scale", swl_check},
    {"SoftmaxWithLossGradient", 4, 5, 1, 1, NULL, swl_setup, swl_grad_run, free,
     "(logits, labels[, weights], softmax, dLoss) -> dLogits", swl_grad_check},
    {"SpatialSoftmaxWithLoss", 2, 3, 2, 2, NULL, sswl_setup, sswl_run, free,
     "(X (N, D, H, W), labels (N, H, W) int32, -1 ignored[, weights]) -> (softmax over D, loss)", sswl_check},
    {"SpatialSoftmaxWithLossGradient", 4, 5, 1, 1, NULL, sswl_setup, sswl_grad_run, free,
     "(X, labels[, weights], softmax, dLoss) -> dX", sswl_grad_check},
    {"LabelCrossEntropy", 2, 2, 1, 1, NULL, NULL, lce_run, NULL,
     "Y (N,) = -log(max(X[i, label_i], 1e-20))", lce_check},
    {"LabelCrossEntropyGradient", 3, 3, 1, 1, NULL, NULL, lce_grad_run, NULL,
     "(X, label, dY) -> dX: -dY_i / X[i, label_i] at the label, 0 elsewhere", lce_grad_check},
    {0},
};
