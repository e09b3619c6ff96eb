/* ops/loss3.c -- ranking and divergence losses of Caffe2
 * (margin_ranking_criterion_op, cosine_embedding_criterion_op, rank_loss_op,
 * jsd_op) and their gradient ops:
 *
 *   MarginRankingCriterion(X1, X2, Y int32) -> loss (X1's shape), arg margin=1.0:
 *       loss = max(0, -Y (X1 - X2) + margin)
 *   MarginRankingCriterionGradient(X1, X2, Y, dLoss) -> dX1, dX2:
 *       dX1 = -Y dLoss, dX2 = Y dLoss where -Y (X1 - X2) + margin >= 0, else 0
 *   CosineEmbeddingCriterion(S, Y int32) -> loss (S's shape), arg margin=0.0:
 *       loss = 1 - S where Y = 1, max(0, S - margin) where Y = -1
 *   CosineEmbeddingCriterionGradient(S, Y, dLoss) -> dS:
 *       -dLoss where Y = 1, dLoss where Y = -1 and S >= margin, else 0
 *   PairWiseLoss(X (N,) or (N, 1), label f32 (N,) or (N, 1) [, lengths int32]) -> Y (sessions,):
 *       per session (the whole batch without lengths), the mean over its pairs of items with
 *       different labels of log(1 + exp(X_lo - X_hi)), hi the item with the higher label;
 *       0 for a session without such a pair
 *   PairWiseLossGradient(X, label, dY [, lengths]) -> dX (X's shape)
 *   BernoulliJSD(X, T) -> L (X's shape): L = H((X + T) / 2) - (H(X) + H(T)) / 2,
 *       H(p) = -p log p - (1 - p) log(1 - p), taken as 0 where p < 1e-20 or 1 - p < 1e-20
 *   BernoulliJSDGradient(dL, X, T) -> dX = dL (logit(X) - logit((X + T) / 2)) / 2
 *
 * Labels Y are 1 or -1; the other inputs of the elementwise ops hold as many
 * values as the first (any shapes, as Caffe2). All float32 (labels int32).
 * Sums are accumulated in double in index order, so the bits do not depend on
 * threads or runs. No global state; nothing allocates except the resize of an
 * output and the margin state (op->state, freed by free()).
 *
 * Where this differs from Caffe2:
 *  - a label Y other than 1 or -1 is a ValueError (Caffe2: used in the
 *    formula, or taken as -1 by CosineEmbeddingCriterion); a non-finite
 *    margin is a ValueError; sizes that differ are refused by the gradient
 *    ops too (Caffe2 read past the end).
 *  - PairWiseLoss uses the exact log(1 + exp(x)) (Caffe2 took 0 below
 *    log(FLT_EPSILON) and x above its negation) and its gradient is the
 *    derivative of that. A non-finite label is a ValueError. With lengths,
 *    the output has one value per length also when N = 0 (Caffe2: shape (0,));
 *    without lengths it has 1 value, or none when N = 0 (as Caffe2).
 *  - BernoulliJSD refuses X or T outside [0, 1] (and NaN) with a ValueError,
 *    in the forward and the gradient op (Caffe2 took logs of them); L has X's
 *    shape (Caffe2: flattened to (N,)). Its gradient is the derivative of the
 *    clamped forward: a logit term drops out where H is clamped (Caffe2
 *    clamped the logit's argument in float, which gives inf at 1).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include "loss_math.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>

#define JSD_THRESHOLD 1e-20 /* H(p) = 0 within this of 0 or 1 (Caffe2's kLOG_THRESHOLD) */

/* ================================================================ shared checks */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Output o: float32 of input i's shape. */
static rc_status resize_like(rc_op *op, int o, int i, rc_err *err)
{
    return rc_tensor_resize_like(rc_out(op, o), rc_in(op, i), err) ? out_fail(op, o, err) : RC_OK;
}

/* Every input float32 except input lab (int32; -1: none), each holding as many values as input ref. */
static rc_status elem_check(rc_op *op, int ref, int lab, rc_err *err)
{
    for (int i = 0; i < op->n_in; i++) {
        rc_status st = rc_check_input(op, i, i == lab ? RC_I32 : RC_F32, err);
        if (st) return st;
    }
    const rc_tensor *r = rc_in(op, ref);
    for (int i = 0; i < op->n_in; i++)
        if (rc_tensor_numel(rc_in(op, i)) != rc_tensor_numel(r))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s must hold as many values as input %d "
                              "blob '%s' %s (%lld)", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), ref,
                              rc_in_name(op, ref), RC_SHAPE(r), (long long)rc_tensor_numel(r));
    return RC_OK;
}

/* elem_check, and every value of the int32 labels at input lab 1 or -1. */
static rc_status elem_check_labels(rc_op *op, int ref, int lab, rc_err *err)
{
    rc_status st = elem_check(op, ref, lab, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, lab);
    const int64_t n = rc_tensor_numel(t);
    const int32_t *y = n ? rc_i32(t) : NULL;
    for (int64_t i = 0; i < n; i++)
        if (y[i] != 1 && y[i] != -1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s: label %d at element %lld must be 1 "
                              "or -1", lab, rc_in_name(op, lab), RC_SHAPE(t), (int)y[i], (long long)i);
    return RC_OK;
}

/* ================================================================ margin criteria */

typedef struct {
    float margin;
} margin_state;

static rc_status margin_setup(rc_op *op, float dflt, rc_err *err)
{
    margin_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st = rc_arg_f(&op->def, "margin", dflt, &s->margin, err);
    if (st) return st;
    if (!isfinite(s->margin))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument margin must be finite, got %g", (double)s->margin);
    return RC_OK;
}

static rc_status mrc_setup(rc_op *op, rc_err *err) { return margin_setup(op, 1.0f, err); }
static rc_status cec_setup(rc_op *op, rc_err *err) { return margin_setup(op, 0.0f, err); }

static float op_margin(const rc_op *op) { return ((const margin_state *)op->state)->margin; }

/* -Y (X1 - X2) + margin */
static double mrc_dist(float x1, float x2, int32_t y, float margin)
{
    return -(double)y * ((double)x1 - (double)x2) + (double)margin;
}

static rc_status mrc_check(rc_op *op, rc_err *err) { return elem_check(op, 0, 2, err); }

static rc_status mrc_run(rc_op *op, rc_err *err)
{
    rc_status st = elem_check_labels(op, 0, 2, err);
    if (st || (st = resize_like(op, 0, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *x1 = rc_f32(rc_in(op, 0)), *x2 = rc_f32(rc_in(op, 1)), m = op_margin(op);
    const int32_t *y = rc_i32(rc_in(op, 2));
    float *out = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        double d = mrc_dist(x1[i], x2[i], y[i], m);
        out[i] = (float)(d < 0.0 ? 0.0 : d); /* NaN stays NaN */
    }
    return RC_OK;
}

/* (X1, X2, Y, dLoss) -> dX1 = -Y dLoss, dX2 = Y dLoss where the hinge is active (dist >= 0), else 0 */
static rc_status mrc_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = elem_check_labels(op, 0, 2, err);
    if (st || (st = resize_like(op, 0, 0, err)) || (st = resize_like(op, 1, 1, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *x1 = rc_f32(rc_in(op, 0)), *x2 = rc_f32(rc_in(op, 1)), *g = rc_f32(rc_in(op, 3));
    const float m = op_margin(op);
    const int32_t *y = rc_i32(rc_in(op, 2));
    float *dx1 = rc_f32(rc_out(op, 0)), *dx2 = rc_f32(rc_out(op, 1));
    for (int64_t i = 0; i < n; i++) {
        const int active = !(mrc_dist(x1[i], x2[i], y[i], m) < 0.0);
        dx1[i] = active ? (float)-y[i] * g[i] : 0.0f;
        dx2[i] = active ? (float)y[i] * g[i] : 0.0f;
    }
    return RC_OK;
}

static rc_status cec_check(rc_op *op, rc_err *err) { return elem_check(op, 0, 1, err); }

static rc_status cec_run(rc_op *op, rc_err *err)
{
    rc_status st = elem_check_labels(op, 0, 1, err);
    if (st || (st = resize_like(op, 0, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *s = rc_f32(rc_in(op, 0)), m = op_margin(op);
    const int32_t *y = rc_i32(rc_in(op, 1));
    float *out = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        double d = y[i] == 1 ? 1.0 - (double)s[i] : (double)s[i] - (double)m;
        out[i] = (float)(y[i] != 1 && d < 0.0 ? 0.0 : d);
    }
    return RC_OK;
}

/* (S, Y, dLoss) -> dS = -dLoss (Y = 1), dLoss [S >= margin] (Y = -1) */
static rc_status cec_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = elem_check_labels(op, 0, 1, err);
    if (st || (st = resize_like(op, 0, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *s = rc_f32(rc_in(op, 0)), *g = rc_f32(rc_in(op, 2)), m = op_margin(op);
    const int32_t *y = rc_i32(rc_in(op, 1));
    float *ds = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++)
        ds[i] = y[i] == 1 ? -g[i] : (s[i] >= m ? g[i] : 0.0f);
    return RC_OK;
}

/* ================================================================ PairWiseLoss */

/* X (input 0): ndim >= 1, one value per row; label (input 1): f32 (N,) or (N, 1); lengths (input li, -1:
 * none): int32 1-D. *N = X's rows, *S = the sessions: lengths' size, or 1 without (0 when N = 0). */
static rc_status pwl_dims(rc_op *op, int li, int64_t *N, int64_t *S, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    if (li >= 0 && (st = rc_checks_i32_vector(op, li, "lengths", err))) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (x->ndim < 1 || rc_tensor_numel(x) != x->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s must hold one score per row: shape (N,) or "
                          "(N, 1)", rc_in_name(op, 0), RC_SHAPE(x));
    *N = x->dims[0];
    if (!((l->ndim == 1 || (l->ndim == 2 && l->dims[1] == 1)) && l->dims[0] == *N))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s (label) must have shape (%lld,) or (%lld, 1) "
                          "to match input 0 blob '%s' %s", rc_in_name(op, 1), RC_SHAPE(l), (long long)*N,
                          (long long)*N, rc_in_name(op, 0), RC_SHAPE(x));
    *S = li >= 0 ? rc_in(op, li)->dims[0] : (*N > 0);
    return RC_OK;
}

/* The values, after pwl_dims: lengths >= 0 summing to N, finite labels. */
static rc_status pwl_values(rc_op *op, int li, int64_t N, rc_err *err)
{
    if (li >= 0) {
        int64_t sum;
        rc_status st = rc_checks_lengths_values(op, li, &sum, err);
        if (st) return st;
        if (sum != N)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lengths) sums to %lld, but input 0 blob "
                              "'%s' %s has %lld rows", li, rc_in_name(op, li), (long long)sum, rc_in_name(op, 0),
                              RC_SHAPE(rc_in(op, 0)), (long long)N);
    }
    const float *l = rc_f32(rc_in(op, 1));
    for (int64_t i = 0; i < N; i++)
        if (!isfinite(l[i]))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s: label %g at row %lld is not finite",
                              rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), (double)l[i], (long long)i);
    return RC_OK;
}

/* Labels closer than FLT_EPSILON are tied (as Caffe2): their pair does not count. */
static int pwl_tied(float a, float b) { return fabsf(a - b) < FLT_EPSILON; }

/* Length of session k: lengths[k], or N without lengths. */
static int64_t pwl_len(rc_op *op, int li, int64_t k, int64_t N) { return li >= 0 ? rc_i32(rc_in(op, li))[k] : N; }

static rc_status pwl_check(rc_op *op, rc_err *err)
{
    int64_t N, S;
    return pwl_dims(op, op->n_in == 3 ? 2 : -1, &N, &S, err);
}

/* Y_k = mean over the untied pairs of session k of softplus(x_lo - x_hi); 0 without pairs */
static rc_status pwl_run(rc_op *op, rc_err *err)
{
    const int li = op->n_in == 3 ? 2 : -1;
    int64_t N, S;
    rc_status st = pwl_dims(op, li, &N, &S, err);
    if (st || (st = pwl_values(op, li, N, err))) return st;
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1, &S, err)) return out_fail(op, 0, err);
    const float *x = rc_f32(rc_in(op, 0)), *l = rc_f32(rc_in(op, 1));
    float *y = rc_f32(rc_out(op, 0));
    int64_t off = 0;
    for (int64_t k = 0; k < S; k++) {
        const int64_t end = off + pwl_len(op, li, k, N);
        double sum = 0.0;
        int64_t pairs = 0;
        for (int64_t i = off; i < end; i++)
            for (int64_t j = off; j < i; j++) {
                if (pwl_tied(l[i], l[j])) continue;
                pairs++;
                sum += l[i] > l[j] ? rc_softplus((double)x[j] - x[i]) : rc_softplus((double)x[i] - x[j]);
            }
        y[k] = pairs ? (float)(sum / (double)pairs) : 0.0f;
        off = end;
    }
    return RC_OK;
}

/* pwl_dims, and dY (input 2): f32 (S,) */
static rc_status pwl_grad_dims(rc_op *op, int64_t *N, int64_t *S, rc_err *err)
{
    rc_status st = pwl_dims(op, op->n_in == 4 ? 3 : -1, N, S, err);
    if (st || (st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *g = rc_in(op, 2);
    if (g->ndim != 1 || g->dims[0] != *S)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' %s (the loss gradient) must have shape (%lld,): "
                          "one value per session", rc_in_name(op, 2), RC_SHAPE(g), (long long)*S);
    return RC_OK;
}

static rc_status pwl_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, S;
    return pwl_grad_dims(op, &N, &S, err);
}

/* dX_i = dY_k / pairs_k * sum over the items j of i's session not tied with it of
 *        sigmoid(x_i - x_j) where i is the lower-labelled, -sigmoid(x_j - x_i) where it is the higher */
static rc_status pwl_grad_run(rc_op *op, rc_err *err)
{
    const int li = op->n_in == 4 ? 3 : -1;
    int64_t N, S;
    rc_status st = pwl_grad_dims(op, &N, &S, err);
    if (st || (st = pwl_values(op, li, N, err)) || (st = resize_like(op, 0, 0, err))) return st;
    const float *x = rc_f32(rc_in(op, 0)), *l = rc_f32(rc_in(op, 1)), *g = rc_f32(rc_in(op, 2));
    float *dx = rc_f32(rc_out(op, 0));
    int64_t off = 0;
    for (int64_t k = 0; k < S; k++) {
        const int64_t end = off + pwl_len(op, li, k, N);
        int64_t pairs = 0;
        for (int64_t i = off; i < end; i++)
            for (int64_t j = off; j < i; j++) pairs += !pwl_tied(l[i], l[j]);
        for (int64_t i = off; i < end; i++) {
            double d = 0.0;
            for (int64_t j = off; j < end; j++) {
                if (j == i || pwl_tied(l[i], l[j])) continue;
                d += l[i] < l[j] ? rc_sigmoid((double)x[i] - x[j]) : -rc_sigmoid((double)x[j] - x[i]);
            }
            dx[i] = pairs ? (float)((double)g[k] * d / (double)pairs) : 0.0f;
        }
        off = end;
    }
    return RC_OK;
}

/* ================================================================ BernoulliJSD */

/* Inputs from first on: probabilities in [0, 1] (NaN refused). */
static rc_status jsd_probs(rc_op *op, int first, rc_err *err)
{
    for (int k = first; k < op->n_in; k++) {
        const rc_tensor *t = rc_in(op, k);
        const float *p = rc_f32(t);
        for (int64_t i = 0; i < rc_tensor_numel(t); i++)
            if (!(p[i] >= 0.0f && p[i] <= 1.0f))
                return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s: value %g at element %lld is not a "
                                  "probability in [0, 1]", k, rc_in_name(op, k), RC_SHAPE(t), (double)p[i],
                                  (long long)i);
    }
    return RC_OK;
}

static int jsd_clamped(double p) { return p < JSD_THRESHOLD || 1.0 - p < JSD_THRESHOLD; }

/* H(p), 0 where clamped */
static double jsd_entropy(double p)
{
    return jsd_clamped(p) ? 0.0 : -p * log(p) - (1.0 - p) * log1p(-p);
}

/* -H'(p) = log(p / (1 - p)), 0 where H is clamped (a constant there) */
static double jsd_logit(double p) { return jsd_clamped(p) ? 0.0 : log(p) - log1p(-p); }

static rc_status jsd_check(rc_op *op, rc_err *err) { return elem_check(op, 0, -1, err); }

static rc_status jsd_run(rc_op *op, rc_err *err)
{
    rc_status st = elem_check(op, 0, -1, err);
    if (st || (st = jsd_probs(op, 0, err)) || (st = resize_like(op, 0, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *p = rc_f32(rc_in(op, 0)), *q = rc_f32(rc_in(op, 1));
    float *out = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        const double m = ((double)p[i] + q[i]) / 2.0;
        out[i] = (float)(jsd_entropy(m) - (jsd_entropy(p[i]) + jsd_entropy(q[i])) / 2.0);
    }
    return RC_OK;
}

static rc_status jsd_grad_check(rc_op *op, rc_err *err) { return elem_check(op, 1, -1, err); }

/* (dL, X, T) -> dX = dL (logit(X) - logit((X + T) / 2)) / 2 */
static rc_status jsd_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = elem_check(op, 1, -1, err);
    if (st || (st = jsd_probs(op, 1, err)) || (st = resize_like(op, 0, 1, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 1));
    const float *g = rc_f32(rc_in(op, 0)), *p = rc_f32(rc_in(op, 1)), *q = rc_f32(rc_in(op, 2));
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        const double m = ((double)p[i] + q[i]) / 2.0;
        dx[i] = (float)((double)g[i] * (jsd_logit(p[i]) - jsd_logit(m)) / 2.0);
    }
    return RC_OK;
}

const rc_op_schema rc_ops_loss3[] = {
    {"MarginRankingCriterion", 3, 3, 1, 1, NULL, mrc_setup, mrc_run, free,
     "(X1, X2, Y int32 +-1) -> loss = max(0, -Y (X1 - X2) + margin), arg margin=1.0", mrc_check},
    {"MarginRankingCriterionGradient", 4, 4, 2, 2, NULL, mrc_setup, mrc_grad_run, free,
     "(X1, X2, Y, dLoss) -> dX1 = -Y dLoss, dX2 = Y dLoss where the hinge is active, else 0", mrc_check},
    {"CosineEmbeddingCriterion", 2, 2, 1, 1, NULL, cec_setup, cec_run, free,
     "(S, Y int32 +-1) -> loss = 1 - S (Y = 1), max(0, S - margin) (Y = -1), arg margin=0.0", cec_check},
    {"CosineEmbeddingCriterionGradient", 3, 3, 1, 1, NULL, cec_setup, cec_grad_run, free,
     "(S, Y, dLoss) -> dS = -dLoss (Y = 1), dLoss [S >= margin] (Y = -1)", cec_check},
    {"PairWiseLoss", 2, 3, 1, 1, NULL, NULL, pwl_run, NULL,
     "(X (N, 1), label (N,) [, lengths]) -> per session mean of log(1 + exp(X_lo - X_hi)) over its pairs",
     pwl_check},
    {"PairWiseLossGradient", 3, 4, 1, 1, NULL, NULL, pwl_grad_run, NULL,
     "(X, label, dY [, lengths]) -> dX of PairWiseLoss", pwl_grad_check},
    {"BernoulliJSD", 2, 2, 1, 1, NULL, NULL, jsd_run, NULL,
     "(X, T) probabilities -> L = H((X + T) / 2) - (H(X) + H(T)) / 2, H the Bernoulli entropy", jsd_check},
    {"BernoulliJSDGradient", 3, 3, 1, 1, NULL, NULL, jsd_grad_run, NULL,
     "(dL, X, T) -> dX = dL (logit(X) - logit((X + T) / 2)) / 2", jsd_grad_check},
    {0},
};
