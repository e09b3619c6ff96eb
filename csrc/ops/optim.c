/* ops/optim.c -- the ops of Caffe2's optimizers besides Adagrad (ops/embed.c)
 * and WeightedSum (ops/math.c): the iteration counter, the learning-rate
 * schedule, SGD with momentum and Adam.
 *
 *   Iter([COUNTER]) -> COUNTER                          COUNTER += 1 (int32, one element)
 *   LearningRate(ITER) -> LR                            LR (1,) = base_lr * policy(ITER)
 *   MomentumSGDUpdate(GRAD, MOMENT, LR, PARAM) -> (GRAD, MOMENT, PARAM)
 *   MomentumSGD(GRAD, MOMENT, LR) -> (GRAD, MOMENT)     the same step without PARAM
 *   Adam(PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[, EFFECTIVE_GRAD])
 *   SparseMomentumSGDUpdate(GRAD, MOMENT, LR, PARAM, INDICES) -> (GRAD, MOMENT, PARAM)
 *   SparseAdam(PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[,
 *              EFFECTIVE_GRAD])
 *
 * Semantics follow Caffe2 (iter_op, learning_rate_op, momentum_sgd_op,
 * adam_op) with these differences:
 *  - the iteration counter is int32 (Caffe2: int64; we have no int64 blobs).
 *    Iter refuses to increment a counter at INT32_MAX (ValueError; the
 *    counter is left unchanged), a counter of another dtype (TypeError) or
 *    of more or fewer than one element (ValueError). Without an input, a
 *    first run on an output that holds no tensor creates it (int32 (1,), 0)
 *    and increments it, so it reads 1 afterwards, as Caffe2's. With an input
 *    it must be the output's blob (Caffe2 enforced the same);
 *  - LearningRate reads its float arguments and computes the multiplier and
 *    base_lr * multiplier in double, rounding to float once (Caffe2 computed
 *    in float). Policy "poly" gives 0 once ITER >= max_iter (Caffe2 raised a
 *    negative base to `power` there: NaN, or a rate that grows again or
 *    changes sign). ITER must be >= 0. Every argument is checked when the op is created (ValueError or
 *    TypeError naming the argument): base_lr and policy are required, and
 *    what a policy needs (stepsize > 0, max_iter > 0, num_iter >= 0,
 *    stepsizes non-empty, > 0 and strictly increasing, gamma finite and
 *    > 0, power, start_multiplier and multiplier finite, the last two
 *    >= 0); arguments a policy does not use are ignored. The policies are
 *    Caffe2's fixed, step, exp, inv, poly, multistep, linearWarmup,
 *    constantWarmup, alter, hill, slope, gate, cyclical, cosine,
 *    constantThenLinearWarmup, pieceWarmup and composite, with Caffe2's
 *    defaults; where Caffe2 only DCHECKed (or not at all) we check at
 *    creation: alter (active_period, inactive_period required, >= 0, not
 *    both 0; active_first 0/1), hill (num_iter > 0, gamma, power > 0,
 *    start/end_multiplier in [0, 1]), slope (num_iter_1 > 0, num_iter_2 >
 *    num_iter_1), cyclical (stepsize > 0, decay >= 0, base_lr != 0,
 *    |max_lr| >= |base_lr|; Caffe2's `abs` may have rounded to int: ours
 *    is the float fabs), cosine (period > 0, max_lr >= min_lr, t_mult >= 1:
 *    Caffe2 took a log of a negative number past the end of a shrinking
 *    schedule, t_mult < 1; lr_shrink >= 0), the warmups' counts >= 0.
 *    composite: sub_policy_num_iters (ints > 0) and per entry i
 *    sub_policy_<i>_policy (not composite), sub_policy_<i>_lr_scale
 *    (default 1) and sub_policy_<i>_<arg>; sub-policy i covers iterations
 *    [1 + n_0 + ... + n_{i-1}, ... + n_i) (ranges start at 1, as Caffe2's,
 *    whose Iter runs before LearningRate), iteration 0 belongs to the first
 *    (Caffe2 read before its map's start there: undefined) and the last
 *    continues past its range; a sub-policy sees the absolute iteration, as
 *    in Caffe2. compositeCyclical / compositeCosine (Caffe2's functors):
 *    constantThenLinearWarmup (start_warmup_multiplier, constant_warmup_num_iter,
 *    linear_warmup_num_iter; defaults 0.1, 10000000, 10000000) below c + l
 *    iterations, then cyclical (cyclical_max_lr 0.05, cyclical_step_size
 *    1000000, cyclical_decay 1) / cosine (cosine_max_lr 0.5, cosine_min_lr
 *    0.1, cosine_period 50, cosine_t_mult 1, cosine_lr_shrink 0.99) at
 *    iteration it - c - l, checked as the plain policies (Caffe2 only
 *    DCHECKed max >= base / min); c and l at most INT64_MAX / 2 each. They
 *    may be composite sub-policies. Skipped: the old top-level lr_scale
 *    argument;
 *  - MomentumSGDUpdate and MomentumSGD (Caffe2's variant without PARAM: the
 *    adjusted gradient and the moment only, one kernel with the former):
 *    momentum must be finite and >= 0, nesterov 0 or 1;
 *  - Adam and SparseAdam (and RowWiseSparseAdam) may have a fourth output,
 *    the effective gradient c * m / (sqrt(v) + epsilon) (GRAD's shape; for
 *    the sparse ops row k is that of occurrence k), as Caffe2's; with it the
 *    parameter is updated as PARAM + LR * that (Caffe2's rounding for this
 *    form), without it as PARAM + (LR * c) * m / (sqrt(v) + epsilon), so the
 *    two may differ in the last bit, as in Caffe2. It may be a new blob or
 *    replace GRAD (in place). beta1 and beta2 must lie in [0, 1) and epsilon
 *    be finite and >= 0 (checked at creation). The bias correction
 *    sqrt(1 - beta2^t) / (1 - beta1^t), t = ITER + 1, is computed in double
 *    and rounded to float once. The row-wise variants are in ops/optim_rowwise.c;
 *  - SparseAdam's argument enableRAdam (0 or 1, default 0; Caffe2's): the
 *    rectified Adam step. With rho_inf = 2 / (1 - beta2) - 1 and rho_t =
 *    rho_inf - 2 t beta2^t / (1 - beta2^t): when rho_t >= 5 the step is
 *    LR * r_t * c * m / (sqrt(v) + epsilon), r_t = sqrt((rho_t - 4)(rho_t - 2)
 *    / rho_t * rho_inf / ((rho_inf - 4)(rho_inf - 2))); else LR * m / (1 -
 *    beta1^t) (momentum without the second moment; v is still updated). The
 *    factors are computed in double and rounded to float once (Caffe2: in
 *    float); the fourth output holds the step divided by LR. Dense Adam has no
 *    such argument (Caffe2's ignored it too);
 *  - the sparse variants take INDICES (int32, any rank, K = its size) and
 *    GRAD of shape INDICES.shape + PARAM.shape[1:] (Caffe2 compared sizes
 *    only), take the dense op's arguments (checked alike) and apply the dense
 *    op's kernel to row INDICES.flat[k] of the state with row k of GRAD, for
 *    k in order, one occurrence at a time (a repeated index is updated
 *    twice, the second time from the first's result), so a row named once
 *    gets bitwise the dense op's result for that row. Every index is checked
 *    before anything is written (IndexError; Caffe2 checked some only in
 *    debug builds). The moments and PARAM must be updated in place (their
 *    outputs name their inputs' blobs: ValueError at creation otherwise, as
 *    Caffe2 enforced); SparseMomentumSGDUpdate's GRAD output (the step of
 *    each occurrence, GRAD's shape) may be a new blob. Shapes and dtypes are
 *    also checked at net creation (ops/sparse.h has the checks);
 * LR is a float32 tensor of one element: negative for descent in Adam (and
 * Adagrad, WeightedSum), positive in MomentumSGDUpdate, as in Caffe2.
 * Outputs may be the blobs of the inputs they replace (in place: the usual
 * use); the kernels read element i of every input before writing element i.
 * Kernels are plain loops over pointers; none keeps global state, so op
 * instances may run concurrently. Nothing allocates except the resize of an
 * output whose shape changed (and the creation of Iter's counter).
 */
#include "../core/rc_core.h"
#include "iter.h"
#include "sparse.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status resize_out(rc_op *op, int o, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err)
{
    if (rc_tensor_resize(rc_out(op, o), dt, ndim, dims, err))
        return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* Output o gets the shape of input i (float32); an output that is input i's
 * blob keeps its buffer. */
static rc_status resize_out_like_in(rc_op *op, int o, int i, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, t->dims, sizeof dims);
    return resize_out(op, o, RC_F32, t->ndim, dims, err);
}

/* The iteration counter t (`what` "input"/"output" k, blob `name`): an
 * int32 tensor of exactly one element. Shared with AtomicIter (ops/iter.h). */
rc_status rc_iter_check_counter(rc_op *op, const char *what, int k, const char *name, const rc_tensor *t,
                                rc_err *err)
{
    if (t->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "%s %d blob '%s' (the iteration counter) holds no tensor (was it fed or computed?)", what,
                          k, name);
    if (t->dtype != RC_I32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "%s %d blob '%s' (the iteration counter) must be int32, got %s", what,
                          k, name, RC_SHAPE(t));
    if (rc_tensor_numel(t) != 1 || !rc_tensor_data(t))
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s %d blob '%s' (the iteration counter) must hold one value, got %s",
                          what, k, name, RC_SHAPE(t));
    return RC_OK;
}

/* Input i: the iteration counter, whose value must be >= 0; *it = its value. */
static rc_status read_iter(rc_op *op, int i, int64_t *it, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    rc_status st = rc_iter_check_counter(op, "input", i, rc_in_name(op, i), t, err);
    if (st) return st;
    *it = rc_i32(t)[0];
    if (*it < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the iteration counter) must be >= 0, got %lld", i,
                          rc_in_name(op, i), (long long)*it);
    return RC_OK;
}

/* Input i: the learning rate, float32 with one value. */
static rc_status check_lr(rc_op *op, int i, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (rc_tensor_numel(t) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the learning rate) must hold one value, got %s",
                          i, rc_in_name(op, i), RC_SHAPE(t));
    return RC_OK;
}

/* check_lr; *lr = its value. */
static rc_status read_lr(rc_op *op, int i, float *lr, rc_err *err)
{
    rc_status st = check_lr(op, i, err);
    if (st) return st;
    *lr = rc_f32(rc_in(op, i))[0];
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

/* ================================================================ Iter */

static rc_status iter_setup(rc_op *op, rc_err *err)
{
    if (op->n_in == 1 && strcmp(rc_in_name(op, 0), rc_out_name(op, 0)) != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' and output 0 blob '%s' must be the same blob (Iter increments its "
                          "counter in place)", rc_in_name(op, 0), rc_out_name(op, 0));
    return RC_OK;
}

/* Output 0 (the counter: int32, one element) += 1, refusing INT32_MAX. Shared with AtomicIter (ops/iter.h). */
rc_status rc_iter_increment(rc_op *op, rc_err *err)
{
    rc_tensor *t = rc_out(op, 0);
    rc_status st = rc_iter_check_counter(op, "output", 0, rc_out_name(op, 0), t, err);
    if (st) return st;
    int32_t *v = rc_i32(t);
    if (*v == INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output 0 blob '%s' (the iteration counter) is at %d: incrementing it would overflow int32",
                          rc_out_name(op, 0), (int)*v);
    *v += 1;
    return RC_OK;
}

/* COUNTER: int32, one element (created as (1,) = 0 when there is no input and it holds nothing) -> COUNTER + 1 */
static rc_status iter_run(rc_op *op, rc_err *err)
{
    rc_tensor *t = rc_out(op, 0);
    rc_status st;
    if (op->n_in == 0 && t->dtype == RC_UNDEF) {
        const int64_t one = 1;
        if ((st = resize_out(op, 0, RC_I32, 1, &one, err))) return st;
        rc_i32(t)[0] = 0;
    }
    return rc_iter_increment(op, err);
}

/* ================================================================ LearningRate */

typedef enum {
    LR_FIXED, LR_STEP, LR_EXP, LR_INV, LR_POLY, LR_MULTISTEP, LR_LINEAR_WARMUP, LR_CONSTANT_WARMUP,
    LR_ALTER, LR_HILL, LR_SLOPE, LR_GATE, LR_CYCLICAL, LR_COSINE, LR_CONSTANT_THEN_LINEAR_WARMUP,
    LR_PIECE_WARMUP, LR_COMPOSITE, LR_COMPOSITE_CYCLICAL, LR_COMPOSITE_COSINE, LR_N_POLICIES
} lr_policy;

static const char *const lr_policy_names[LR_N_POLICIES] = {
    "fixed", "step", "exp", "inv", "poly", "multistep", "linearWarmup", "constantWarmup",
    "alter", "hill", "slope", "gate", "cyclical", "cosine", "constantThenLinearWarmup",
    "pieceWarmup", "composite", "compositeCyclical", "compositeCosine",
};
#define LR_PI 3.14159265358979323846

#define LR_POLICY_LIST "fixed, step, exp, inv, poly, multistep, linearWarmup, constantWarmup, alter, hill, " \
    "slope, gate, cyclical, cosine, constantThenLinearWarmup, pieceWarmup, composite, compositeCyclical, " \
    "compositeCosine"

/* One policy and its arguments (a composite's sub-policies are lr_policy_args too). */
typedef struct lr_policy_args {
    lr_policy policy;
    double gamma, power;              /* step, exp, multistep: gamma; inv, hill: both; poly: power */
    double start_multiplier;          /* linearWarmup, hill; constantThenLinearWarmup: start_warmup_multiplier */
    double multiplier;                /* constantWarmup */
    double end_multiplier;            /* hill */
    double multiplier_1, multiplier_2; /* slope, gate */
    double max_lr, min_lr, decay;     /* cyclical: max_lr, decay; cosine: max_lr, min_lr */
    double t_mult, lr_shrink;         /* cosine */
    double m1, m2, m3;                /* pieceWarmup */
    double ratio;                     /* cyclical: |max_lr| / |base_lr| */
    double lr_scale;                  /* a composite's sub-policy: its multiplier's factor */
    int64_t stepsize;                 /* step, cyclical */
    int64_t max_iter;                 /* poly */
    int64_t num_iter;                 /* linearWarmup, constantWarmup, hill, gate */
    int64_t num_iter_1, num_iter_2;   /* slope */
    int64_t active_period, inactive_period, active_first; /* alter */
    int64_t period;                   /* cosine */
    int64_t constant_iters, linear_iters; /* constantThenLinearWarmup */
    int64_t n1, n2;                   /* pieceWarmup */
    const int64_t *stepsizes;         /* multistep: borrowed from op->def (lives as long as the op) */
    int n_stepsizes;
} lr_policy_args;

typedef struct lr_state {
    double base_lr;
    lr_policy_args top;
    int n_sub;                        /* composite: its sub-policies */
    lr_policy_args *sub;              /* owned (n_sub), NULL otherwise */
    int64_t *sub_start;               /* owned (n_sub): the first iteration of each sub-policy */
} lr_state;

static void lr_free(void *p)
{
    lr_state *s = p;
    if (!s) return;
    free(s->sub);
    free(s->sub_start);
    free(s);
}

/* The argument's full name: prefix (a composite's "sub_policy_<i>_", or "") + name. */
static const char *lr_name(char *buf, size_t n, const char *prefix, const char *name)
{
    snprintf(buf, n, "%s%s", prefix, name);
    return buf;
}

/* Float argument `prefix name` at double precision (an int argument is
 * accepted too). Absent: an error when `required` (naming `policy` when
 * given), else *out = dflt. Not finite: an error. */
static rc_status lr_arg_d(rc_op *op, const char *prefix, const char *name, const char *policy, int required,
                          double dflt, double *out, rc_err *err)
{
    char full[128];
    lr_name(full, sizeof full, prefix, name);
    const rc_arg *a = rc_opdef_arg(&op->def, full);
    if (!a) {
        *out = dflt;
        if (!required) return RC_OK;
        if (policy)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required by policy '%s'", full, policy);
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required", full);
    }
    if (a->kind == RC_ARG_F) {
        *out = a->f;
    } else if (a->kind == RC_ARG_I) {
        *out = (double)a->i;
    } else {
        float unused;
        return rc_arg_f(&op->def, full, 0.0f, &unused, err); /* reports the wrong kind */
    }
    if (!isfinite(*out))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be finite, got %g", full, *out);
    return RC_OK;
}

/* As lr_arg_d; the value must also be >= lo (and <= hi when hi >= lo). */
static rc_status lr_arg_range(rc_op *op, const char *prefix, const char *name, const char *policy, int required,
                              double dflt, double lo, double hi, double *out, rc_err *err)
{
    rc_status st = lr_arg_d(op, prefix, name, policy, required, dflt, out, err);
    if (st) return st;
    if (*out < lo || (hi >= lo && *out > hi)) {
        char full[128];
        if (hi >= lo)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be in [%g, %g], got %g",
                              lr_name(full, sizeof full, prefix, name), lo, hi, *out);
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be finite and >= %g, got %g",
                          lr_name(full, sizeof full, prefix, name), lo, *out);
    }
    return RC_OK;
}

/* Int argument `prefix name`: as lr_arg_d; must be >= lo. */
static rc_status lr_arg_i(rc_op *op, const char *prefix, const char *name, const char *policy, int required,
                          int64_t dflt, int64_t lo, int64_t *out, rc_err *err)
{
    char full[128];
    lr_name(full, sizeof full, prefix, name);
    if (required && !rc_opdef_arg(&op->def, full))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required by policy '%s'", full, policy);
    rc_status st = rc_arg_i(&op->def, full, dflt, out, err);
    if (st) return st;
    if (*out < lo)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be >= %lld, got %lld", full, (long long)lo,
                          (long long)*out);
    return RC_OK;
}

/* gamma or power (`name`): required, finite and > 0 */
static rc_status lr_positive(rc_op *op, const char *prefix, const char *name, const char *policy, double *out,
                             rc_err *err)
{
    rc_status st = lr_arg_d(op, prefix, name, policy, 1, 0.0, out, err);
    if (st) return st;
    if (!(*out > 0.0)) {
        char full[128];
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be finite and > 0, got %g",
                          lr_name(full, sizeof full, prefix, name), *out);
    }
    return RC_OK;
}

static int lr_find_policy(const char *name)
{
    int p = 0;
    while (p < LR_N_POLICIES && strcmp(name, lr_policy_names[p]) != 0) p++;
    return p;
}

/* constantThenLinearWarmup's arguments (also the warmup of compositeCyclical / compositeCosine):
 * start_warmup_multiplier (default 0.1, >= 0), constant_warmup_num_iter and linear_warmup_num_iter (default
 * 10000000 each, >= 0; their sum must fit an int64). */
static rc_status lr_parse_ctlw(rc_op *op, const char *pf, const char *name, lr_policy_args *a, rc_err *err)
{
    rc_status st;
    if ((st = lr_arg_range(op, pf, "start_warmup_multiplier", name, 0, 0.1, 0.0, -1.0, &a->start_multiplier, err)))
        return st;
    if ((st = lr_arg_i(op, pf, "constant_warmup_num_iter", name, 0, 10000000, 0, &a->constant_iters, err)))
        return st;
    if ((st = lr_arg_i(op, pf, "linear_warmup_num_iter", name, 0, 10000000, 0, &a->linear_iters, err))) return st;
    if (a->linear_iters > INT64_MAX / 2 || a->constant_iters > INT64_MAX / 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments %sconstant_warmup_num_iter (%lld) and "
                          "%slinear_warmup_num_iter (%lld) must each be at most %lld", pf, (long long)a->constant_iters,
                          pf, (long long)a->linear_iters, (long long)(INT64_MAX / 2));
    return RC_OK;
}

/* cyclical's arguments under the names given (cyclical: max_lr, stepsize (required), decay; compositeCyclical:
 * cyclical_max_lr, cyclical_step_size (default 1000000), cyclical_decay): stepsize > 0, decay >= 0,
 * base_lr != 0, |max_lr| >= |base_lr|. */
static rc_status lr_parse_cyclical(rc_op *op, const lr_state *s, const char *pf, const char *name,
                                   const char *max_name, double max_dflt, const char *step_name, int step_required,
                                   int64_t step_dflt, const char *decay_name, lr_policy_args *a, rc_err *err)
{
    rc_status st;
    if ((st = lr_arg_d(op, pf, max_name, name, 0, max_dflt, &a->max_lr, err))) return st;
    if ((st = lr_arg_i(op, pf, step_name, name, step_required, step_dflt, 1, &a->stepsize, err))) return st;
    if ((st = lr_arg_range(op, pf, decay_name, name, 0, 1.0, 0.0, -1.0, &a->decay, err))) return st;
    if (s->base_lr == 0.0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "policy '%s' needs base_lr != 0 (it scales by |max_lr| / |base_lr|)",
                          name);
    if (fabs(a->max_lr) < fabs(s->base_lr))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s%s must satisfy |%s| >= |base_lr| (%g), got %g", pf,
                          max_name, max_name, s->base_lr, a->max_lr);
    a->ratio = fabs(a->max_lr) / fabs(s->base_lr);
    return RC_OK;
}

/* cosine's arguments, named `cp` + max_lr, min_lr, period, t_mult, lr_shrink (cp: "" for cosine, "cosine_"
 * for compositeCosine), with Caffe2's defaults 0.5, 0.1, 50, 1, 0.99: period > 0, max_lr >= min_lr,
 * t_mult >= 1, lr_shrink >= 0. */
static rc_status lr_parse_cosine(rc_op *op, const char *pf, const char *name, const char *cp, lr_policy_args *a,
                                 rc_err *err)
{
    rc_status st;
    char n_max[48], n_min[48], n_period[48], n_tm[48], n_sh[48];
    snprintf(n_max, sizeof n_max, "%smax_lr", cp);
    snprintf(n_min, sizeof n_min, "%smin_lr", cp);
    snprintf(n_period, sizeof n_period, "%speriod", cp);
    snprintf(n_tm, sizeof n_tm, "%st_mult", cp);
    snprintf(n_sh, sizeof n_sh, "%slr_shrink", cp);
    if ((st = lr_arg_d(op, pf, n_max, name, 0, 0.5, &a->max_lr, err))) return st;
    if ((st = lr_arg_d(op, pf, n_min, name, 0, 0.1, &a->min_lr, err))) return st;
    if ((st = lr_arg_i(op, pf, n_period, name, 0, 50, 1, &a->period, err))) return st;
    if ((st = lr_arg_range(op, pf, n_tm, name, 0, 1.0, 1.0, -1.0, &a->t_mult, err))) return st;
    if ((st = lr_arg_range(op, pf, n_sh, name, 0, 0.99, 0.0, -1.0, &a->lr_shrink, err))) return st;
    if (a->max_lr < a->min_lr)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s%s must be >= %s%s (%g), got %g", pf, n_max, pf, n_min,
                          a->min_lr, a->max_lr);
    return RC_OK;
}

/* Parses policy `name` (known, not composite) with the arguments `prefix`<arg> into *a. */
static rc_status lr_parse_policy(rc_op *op, const lr_state *s, const char *prefix, const char *name, lr_policy_args *a,
                                 rc_err *err)
{
    rc_status st;
    const char *pf = prefix;
    a->policy = (lr_policy)lr_find_policy(name);
    switch (a->policy) {
    case LR_FIXED:
        break;
    case LR_STEP:
        if ((st = lr_arg_i(op, pf, "stepsize", name, 1, 0, 1, &a->stepsize, err))) return st;
        if ((st = lr_positive(op, pf, "gamma", name, &a->gamma, err))) return st;
        break;
    case LR_EXP:
        if ((st = lr_positive(op, pf, "gamma", name, &a->gamma, err))) return st;
        break;
    case LR_INV:
        if ((st = lr_positive(op, pf, "gamma", name, &a->gamma, err))) return st;
        if ((st = lr_arg_d(op, pf, "power", name, 1, 0.0, &a->power, err))) return st;
        break;
    case LR_POLY:
        if ((st = lr_arg_i(op, pf, "max_iter", name, 1, 0, 1, &a->max_iter, err))) return st;
        if ((st = lr_arg_d(op, pf, "power", name, 1, 0.0, &a->power, err))) return st;
        break;
    case LR_MULTISTEP: {
        char full[128];
        lr_name(full, sizeof full, pf, "stepsizes");
        if ((st = rc_arg_ints(&op->def, full, &a->stepsizes, &a->n_stepsizes, err))) return st;
        if (a->n_stepsizes == 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "argument %s (a non-empty list of ints) is required by policy '%s'", full, name);
        for (int k = 0; k < a->n_stepsizes; k++) {
            if (a->stepsizes[k] <= 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must hold ints > 0, got %lld at position %d",
                                  full, (long long)a->stepsizes[k], k);
            if (k > 0 && a->stepsizes[k] <= a->stepsizes[k - 1])
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "argument %s must be strictly increasing, got %lld after %lld at position %d", full,
                                  (long long)a->stepsizes[k], (long long)a->stepsizes[k - 1], k);
        }
        if ((st = lr_positive(op, pf, "gamma", name, &a->gamma, err))) return st;
        break;
    }
    case LR_LINEAR_WARMUP:
        if ((st = lr_arg_range(op, pf, "start_multiplier", name, 0, 0.0, 0.0, -1.0, &a->start_multiplier, err)))
            return st;
        if ((st = lr_arg_i(op, pf, "num_iter", name, 0, 0, 0, &a->num_iter, err))) return st;
        break;
    case LR_CONSTANT_WARMUP:
        if ((st = lr_arg_range(op, pf, "multiplier", name, 0, 0.5, 0.0, -1.0, &a->multiplier, err))) return st;
        if ((st = lr_arg_i(op, pf, "num_iter", name, 0, 0, 0, &a->num_iter, err))) return st;
        break;
    case LR_ALTER: {
        if ((st = lr_arg_i(op, pf, "active_period", name, 1, 0, 0, &a->active_period, err))) return st;
        if ((st = lr_arg_i(op, pf, "inactive_period", name, 1, 0, 0, &a->inactive_period, err))) return st;
        if ((st = lr_arg_i(op, pf, "active_first", name, 0, 1, 0, &a->active_first, err))) return st;
        char full[128];
        if (a->active_first > 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be 0 or 1, got %lld",
                              lr_name(full, sizeof full, pf, "active_first"), (long long)a->active_first);
        if (a->active_period + a->inactive_period == 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "arguments %sactive_period and %sinactive_period must not both "
                              "be 0 (policy 'alter' repeats with their sum as period)", pf, pf);
        break;
    }
    case LR_HILL:
        if ((st = lr_arg_i(op, pf, "num_iter", name, 1, 0, 1, &a->num_iter, err))) return st;
        if ((st = lr_arg_range(op, pf, "start_multiplier", name, 0, 0.0, 0.0, 1.0, &a->start_multiplier, err)))
            return st;
        if ((st = lr_positive(op, pf, "gamma", name, &a->gamma, err))) return st;
        if ((st = lr_positive(op, pf, "power", name, &a->power, err))) return st;
        if ((st = lr_arg_range(op, pf, "end_multiplier", name, 0, 0.0, 0.0, 1.0, &a->end_multiplier, err)))
            return st;
        break;
    case LR_SLOPE: {
        if ((st = lr_arg_i(op, pf, "num_iter_1", name, 1, 0, 1, &a->num_iter_1, err))) return st;
        if ((st = lr_arg_d(op, pf, "multiplier_1", name, 0, 0.0, &a->multiplier_1, err))) return st;
        if ((st = lr_arg_i(op, pf, "num_iter_2", name, 1, 0, 1, &a->num_iter_2, err))) return st;
        if ((st = lr_arg_d(op, pf, "multiplier_2", name, 0, 0.0, &a->multiplier_2, err))) return st;
        if (a->num_iter_2 <= a->num_iter_1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %snum_iter_2 must be > %snum_iter_1 (%lld), got %lld",
                              pf, pf, (long long)a->num_iter_1, (long long)a->num_iter_2);
        break;
    }
    case LR_GATE:
        if ((st = lr_arg_d(op, pf, "multiplier_1", name, 0, 1.0, &a->multiplier_1, err))) return st;
        if ((st = lr_arg_d(op, pf, "multiplier_2", name, 0, 1.0, &a->multiplier_2, err))) return st;
        if ((st = lr_arg_i(op, pf, "num_iter", name, 0, 0, 0, &a->num_iter, err))) return st;
        break;
    case LR_CYCLICAL:
        if ((st = lr_parse_cyclical(op, s, pf, name, "max_lr", 0.005, "stepsize", 1, 0, "decay", a, err))) return st;
        break;
    case LR_COSINE:
        if ((st = lr_parse_cosine(op, pf, name, "", a, err))) return st;
        break;
    case LR_CONSTANT_THEN_LINEAR_WARMUP:
        if ((st = lr_parse_ctlw(op, pf, name, a, err))) return st;
        break;
    case LR_COMPOSITE_CYCLICAL:
        if ((st = lr_parse_ctlw(op, pf, name, a, err))) return st;
        if ((st = lr_parse_cyclical(op, s, pf, name, "cyclical_max_lr", 0.05, "cyclical_step_size", 0, 1000000,
                                    "cyclical_decay", a, err)))
            return st;
        break;
    case LR_COMPOSITE_COSINE:
        if ((st = lr_parse_ctlw(op, pf, name, a, err))) return st;
        if ((st = lr_parse_cosine(op, pf, name, "cosine_", a, err))) return st;
        break;
    case LR_PIECE_WARMUP:
        if ((st = lr_arg_d(op, pf, "m1", name, 0, 0.5, &a->m1, err))) return st;
        if ((st = lr_arg_i(op, pf, "n1", name, 0, 0, 0, &a->n1, err))) return st;
        if ((st = lr_arg_d(op, pf, "m2", name, 0, 0.5, &a->m2, err))) return st;
        if ((st = lr_arg_i(op, pf, "n2", name, 0, 0, 0, &a->n2, err))) return st;
        if ((st = lr_arg_d(op, pf, "m3", name, 0, 0.5, &a->m3, err))) return st;
        break;
    case LR_COMPOSITE:
    case LR_N_POLICIES:
        break;
    }
    return RC_OK;
}

/* composite: sub_policy_num_iters (ints > 0) and, for each i, sub_policy_<i>_policy (required, not
 * composite), sub_policy_<i>_lr_scale (default 1) and the sub-policy's arguments sub_policy_<i>_<arg>. */
static rc_status lr_parse_composite(rc_op *op, lr_state *s, rc_err *err)
{
    const int64_t *iters;
    int n;
    rc_status st;
    if ((st = rc_arg_ints(&op->def, "sub_policy_num_iters", &iters, &n, err))) return st;
    if (n == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument sub_policy_num_iters (a non-empty list of ints) is "
                          "required by policy 'composite'");
    s->sub = calloc((size_t)n, sizeof *s->sub);
    s->sub_start = calloc((size_t)n, sizeof *s->sub_start);
    if (!s->sub || !s->sub_start) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    s->n_sub = n;
    int64_t start = 1; /* Caffe2's first sub-policy starts at iteration 1 (Iter runs before LearningRate) */
    for (int i = 0; i < n; i++) {
        if (iters[i] <= 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument sub_policy_num_iters must hold ints > 0, got %lld "
                              "at position %d", (long long)iters[i], i);
        if (iters[i] > INT64_MAX / 2 - start)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument sub_policy_num_iters: the total is too large");
        s->sub_start[i] = start;
        start += iters[i];
        char prefix[48], full[128];
        snprintf(prefix, sizeof prefix, "sub_policy_%d_", i);
        lr_name(full, sizeof full, prefix, "policy");
        if (!rc_opdef_arg(&op->def, full))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required by policy 'composite' (one per entry "
                              "of sub_policy_num_iters)", full);
        const char *name;
        if ((st = rc_arg_s(&op->def, full, NULL, &name, err))) return st;
        const int p = lr_find_policy(name);
        if (p == LR_COMPOSITE)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s: a composite policy cannot be a sub-policy of "
                              "policy 'composite'", full);
        if (p == LR_N_POLICIES)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s: unknown policy '%.100s' (supported: "
                              LR_POLICY_LIST ")", full, name);
        if ((st = lr_parse_policy(op, s, prefix, name, &s->sub[i], err))) return st;
        if ((st = lr_arg_d(op, prefix, "lr_scale", NULL, 0, 1.0, &s->sub[i].lr_scale, err))) return st;
    }
    return RC_OK;
}

static rc_status lr_setup(rc_op *op, rc_err *err)
{
    lr_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    if ((st = lr_arg_d(op, "", "base_lr", NULL, 1, 0.0, &s->base_lr, err))) return st;
    if (!rc_opdef_arg(&op->def, "policy"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument policy is required (one of: " LR_POLICY_LIST ")");
    const char *name;
    if ((st = rc_arg_s(&op->def, "policy", NULL, &name, err))) return st;
    const int p = lr_find_policy(name);
    if (p == LR_N_POLICIES)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument policy: unknown policy '%.100s' (supported: " LR_POLICY_LIST
                          ")", name);
    s->top.lr_scale = 1.0;
    if (p == LR_COMPOSITE) {
        s->top.policy = LR_COMPOSITE;
        return lr_parse_composite(op, s, err);
    }
    return lr_parse_policy(op, s, "", name, &s->top, err);
}

/* Policy a's multiplier at iteration it >= 0, in double (a not composite). */
static double lr_policy_multiplier(const lr_policy_args *a, int64_t it)
{
    const double x = (double)it;
    switch (a->policy) {
    case LR_FIXED:
        return 1.0;
    case LR_STEP:
        return pow(a->gamma, (double)(it / a->stepsize));
    case LR_EXP:
        return pow(a->gamma, x);
    case LR_INV:
        return pow(1.0 + a->gamma * x, -a->power);
    case LR_POLY:
        return it >= a->max_iter ? 0.0 : pow(1.0 - x / (double)a->max_iter, a->power);
    case LR_MULTISTEP: {
        int passed = 0;
        for (int k = 0; k < a->n_stepsizes; k++) passed += it >= a->stepsizes[k];
        return pow(a->gamma, (double)passed);
    }
    case LR_LINEAR_WARMUP:
        return it < a->num_iter ? a->start_multiplier + (1.0 - a->start_multiplier) * x / (double)a->num_iter : 1.0;
    case LR_CONSTANT_WARMUP:
        return it < a->num_iter ? a->multiplier : 1.0;
    case LR_ALTER: {
        const int64_t phase = it % (a->active_period + a->inactive_period);
        if (a->active_first) return phase < a->active_period ? 1.0 : 0.0;
        return phase < a->inactive_period ? 0.0 : 1.0;
    }
    case LR_HILL:
        if (it < a->num_iter)
            return a->start_multiplier + (1.0 - a->start_multiplier) * x / (double)a->num_iter;
        return fmax(a->end_multiplier, pow(1.0 + a->gamma * (double)(it - a->num_iter), -a->power));
    case LR_SLOPE:
        if (it < a->num_iter_1) return a->multiplier_1;
        return fmax(a->multiplier_2, a->multiplier_1 + (double)(it - a->num_iter_1) *
                    (a->multiplier_2 - a->multiplier_1) / (double)(a->num_iter_2 - a->num_iter_1));
    case LR_GATE:
        return it < a->num_iter ? a->multiplier_1 : a->multiplier_2;
    case LR_CYCLICAL: {
        const int64_t k = it / (2 * a->stepsize);
        const double t = fabs(x / (double)a->stepsize - 2.0 * (double)(k + 1) + 1.0);
        return 1.0 + (a->ratio - 1.0) * fmax(0.0, 1.0 - t) * pow(a->decay, (double)k);
    }
    case LR_COSINE: {
        const double period = (double)a->period;
        double i, t_i, t_curr;
        if (a->t_mult != 1.0) {
            i = floor(log(1.0 - x / period * (1.0 - a->t_mult)) / log(a->t_mult));
            t_i = pow(a->t_mult, i) * period;
            t_curr = x - (1.0 - pow(a->t_mult, i)) / (1.0 - a->t_mult) * period;
        } else {
            i = floor(x / period);
            t_i = period;
            t_curr = x - t_i * i;
        }
        const double shrink = pow(a->lr_shrink, i);
        const double lo = a->min_lr * shrink, hi = a->max_lr * shrink;
        return lo + 0.5 * (hi - lo) * (1.0 + cos(LR_PI * t_curr / t_i));
    }
    case LR_CONSTANT_THEN_LINEAR_WARMUP:
        if (it < a->constant_iters) return a->start_multiplier;
        if (it - a->constant_iters < a->linear_iters)
            return a->start_multiplier +
                   (1.0 - a->start_multiplier) * (double)(it - a->constant_iters) / (double)a->linear_iters;
        return 1.0;
    case LR_PIECE_WARMUP:
        return it < a->n1 ? a->m1 : it < a->n2 ? a->m2 : a->m3;
    case LR_COMPOSITE_CYCLICAL:
    case LR_COMPOSITE_COSINE: {
        /* constantThenLinearWarmup below constant + linear iterations, then the cyclical / cosine
         * schedule restarted at 0 there (as Caffe2's functors) */
        lr_policy_args b = *a;
        const int64_t warm = a->constant_iters + a->linear_iters;
        if (it < warm) {
            b.policy = LR_CONSTANT_THEN_LINEAR_WARMUP;
            return lr_policy_multiplier(&b, it);
        }
        b.policy = a->policy == LR_COMPOSITE_CYCLICAL ? LR_CYCLICAL : LR_COSINE;
        return lr_policy_multiplier(&b, it - warm);
    }
    case LR_COMPOSITE:
    case LR_N_POLICIES:
        break;
    }
    return 1.0;
}

/* The schedule's multiplier at iteration it >= 0. composite: the sub-policy whose range holds it (ranges
 * start at iteration 1; it = 0 belongs to the first, iterations past the last range to the last), evaluated
 * at it itself (not relative to its range, as in Caffe2), times its lr_scale. */
static double lr_multiplier(const lr_state *s, int64_t it)
{
    if (s->top.policy != LR_COMPOSITE) return lr_policy_multiplier(&s->top, it);
    int k = 0;
    while (k + 1 < s->n_sub && it >= s->sub_start[k + 1]) k++;
    return lr_policy_multiplier(&s->sub[k], it) * s->sub[k].lr_scale;
}

/* ITER int32 with one element (its value, >= 0, is checked when the op runs). */
static rc_status lr_check(rc_op *op, rc_err *err)
{
    return rc_iter_check_counter(op, "input", 0, rc_in_name(op, 0), rc_in(op, 0), err);
}

/* ITER: int32 one element >= 0 -> LR: float32 (1,) = (float)(base_lr * multiplier(ITER)) */
static rc_status lr_run(rc_op *op, rc_err *err)
{
    const lr_state *s = op->state;
    int64_t it = 0;
    rc_status st = read_iter(op, 0, &it, err);
    if (st) return st;
    const int64_t one = 1;
    if ((st = resize_out(op, 0, RC_F32, 1, &one, err))) return st;
    rc_f32(rc_out(op, 0))[0] = (float)(s->base_lr * lr_multiplier(s, it));
    return RC_OK;
}

/* ================================================================ MomentumSGDUpdate */

typedef struct momentum_state {
    float momentum;
    int nesterov;
} momentum_state;

static rc_status momentum_setup(rc_op *op, rc_err *err)
{
    momentum_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    int64_t nesterov;
    if ((st = rc_arg_f(&op->def, "momentum", 0.0f, &s->momentum, err))) return st;
    if ((st = rc_arg_i(&op->def, "nesterov", 0, &nesterov, err))) return st;
    if (!(s->momentum >= 0.0f) || isinf(s->momentum))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument momentum must be finite and >= 0, got %g",
                          (double)s->momentum);
    if (nesterov != 0 && nesterov != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument nesterov must be 0 or 1, got %lld", (long long)nesterov);
    s->nesterov = (int)nesterov;
    return RC_OK;
}

/* g, m, p: (n,), lr, mu: scalars -> ng, nm, np: (n,):
 *   a = lr * g + mu * m;  nm = a;  ng = a;  np = p - a
 * ng may alias g, nm m, np p. p and np are both NULL for MomentumSGD (no PARAM). */
static void momentum_kernel(int64_t n, const float *g, const float *m, const float *p, float lr, float mu, float *ng,
                            float *nm, float *np)
{
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i];
        const float a = lr * gi + mu * mi;
        if (np) np[i] = p[i] - a;
        nm[i] = a;
        ng[i] = a;
    }
}

/* As momentum_kernel, Nesterov's variant (p, np NULL alike):
 *   mn = mu * m + lr * g;  nm = mn;  ng = (1 + mu) * mn - mu * m;  np = p - ng */
static void nesterov_kernel(int64_t n, const float *g, const float *m, const float *p, float lr, float mu, float *ng,
                            float *nm, float *np)
{
    const float mu1 = 1.0f + mu;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i];
        const float mn = mu * mi + lr * gi;
        const float gn = mu1 * mn - mu * mi;
        if (np) np[i] = p[i] - gn;
        nm[i] = mn;
        ng[i] = gn;
    }
}

/* MomentumSGDUpdate has PARAM (input 3, output 2); MomentumSGD has not. */
static rc_status momentum_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 3};
    rc_status st = check_same_shape(op, 0, like, op->n_in == 4 ? 2 : 1, err);
    return st ? st : check_lr(op, 2, err);
}

/* (GRAD, MOMENT, LR[, PARAM]) -> (GRAD, MOMENT[, PARAM]); GRAD, MOMENT, PARAM float32 of one shape, LR one
 * value. */
static rc_status momentum_run(rc_op *op, rc_err *err)
{
    const momentum_state *s = op->state;
    const int has_param = op->n_in == 4;
    rc_status st;
    float lr = 0.0f;
    if ((st = momentum_check(op, err))) return st;
    if ((st = read_lr(op, 2, &lr, err))) return st;
    if ((st = resize_out_like_in(op, 0, 0, err))) return st;
    if ((st = resize_out_like_in(op, 1, 0, err))) return st;
    if (has_param && (st = resize_out_like_in(op, 2, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (!n) return RC_OK;
    const float *g = rc_f32(rc_in(op, 0)), *m = rc_f32(rc_in(op, 1)), *p = has_param ? rc_f32(rc_in(op, 3)) : NULL;
    float *ng = rc_f32(rc_out(op, 0)), *nm = rc_f32(rc_out(op, 1)), *np = has_param ? rc_f32(rc_out(op, 2)) : NULL;
    if (s->nesterov)
        nesterov_kernel(n, g, m, p, lr, s->momentum, ng, nm, np);
    else
        momentum_kernel(n, g, m, p, lr, s->momentum, ng, nm, np);
    return RC_OK;
}


/* ---------------------------------------------------------------- SparseMomentumSGDUpdate */

/* Dtypes and shapes (no data values): (GRAD, MOMENT, LR, PARAM, INDICES); MOMENT float32 of PARAM's shape,
 * GRAD INDICES.shape + PARAM.shape[1:], LR one float32. */
static rc_status sparse_momentum_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1};
    rc_status st;
    if ((st = check_same_shape(op, 3, like, 1, err))) return st;
    if ((st = rc_sparse_check_indices(op, 4, err))) return st;
    if ((st = rc_sparse_check_rows(op, 3, 4, 0, "the gradient", err))) return st;
    return rc_sparse_check_scalar(op, 2, "the learning rate", err);
}

static rc_status sparse_momentum_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {1, 1, 3, 2};
    rc_status st = momentum_setup(op, err);
    if (st) return st;
    return rc_sparse_require_inplace(op, pairs, 2, err);
}

/* (GRAD, MOMENT, LR, PARAM, INDICES) -> (GRAD, MOMENT, PARAM): for each k in order, rows i = INDICES[k] of
 * MOMENT and PARAM and row k of GRAD get MomentumSGDUpdate's step (the same kernel); MOMENT and PARAM in
 * place, GRAD in place or into a new blob. */
static rc_status sparse_momentum_run(rc_op *op, rc_err *err)
{
    const momentum_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    if ((st = sparse_momentum_check(op, err))) return st;
    if ((st = read_lr(op, 2, &lr, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 4, 3, err))) return st;
    if ((st = resize_out_like_in(op, 0, 0, err))) return st;
    const rc_tensor *p = rc_in(op, 3);
    const int64_t K = rc_tensor_numel(rc_in(op, 4)), R = rc_dims_prod(p, 1, p->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 4));
    const float *g = rc_f32(rc_in(op, 0));
    float *ng = rc_f32(rc_out(op, 0)), *m = rc_f32(rc_out(op, 1)), *pd = rc_f32(rc_out(op, 2));
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        if (s->nesterov)
            nesterov_kernel(R, g + k * R, m + i, pd + i, lr, s->momentum, ng + k * R, m + i, pd + i);
        else
            momentum_kernel(R, g + k * R, m + i, pd + i, lr, s->momentum, ng + k * R, m + i, pd + i);
    }
    return RC_OK;
}

/* ================================================================ Adam */

typedef struct adam_state {
    float beta1, beta2, epsilon;
    int radam;  /* SparseAdam's enableRAdam */
} adam_state;

static rc_status adam_setup(rc_op *op, rc_err *err)
{
    adam_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    if ((st = rc_arg_f(&op->def, "beta1", 0.9f, &s->beta1, err))) return st;
    if ((st = rc_arg_f(&op->def, "beta2", 0.999f, &s->beta2, err))) return st;
    if ((st = rc_arg_f(&op->def, "epsilon", 1e-5f, &s->epsilon, err))) return st;
    if (!(s->beta1 >= 0.0f && s->beta1 < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta1 must be in [0, 1), got %g", (double)s->beta1);
    if (!(s->beta2 >= 0.0f && s->beta2 < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta2 must be in [0, 1), got %g", (double)s->beta2);
    if (!(s->epsilon >= 0.0f) || isinf(s->epsilon))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument epsilon must be finite and >= 0, got %g",
                          (double)s->epsilon);
    return RC_OK;
}

/* sqrt(1 - beta2^t) / (1 - beta1^t), t = it + 1, in double, rounded to float once */
static float adam_correction(const adam_state *s, int64_t it)
{
    const double t = (double)it + 1.0;
    return (float)(sqrt(1.0 - pow((double)s->beta2, t)) / (1.0 - pow((double)s->beta1, t)));
}

/* p, m1, m2, g: (n,), step = lr * correction, b1, b2, eps: scalars -> np, nm1, nm2: (n,):
 *   m = b1 * m1 + (1 - b1) * g;  v = b2 * m2 + (1 - b2) * g^2;  np = p + step * m / (sqrt(v) + eps)
 * np may alias p, nm1 m1, nm2 m2. */
static void adam_kernel(int64_t n, const float *p, const float *m1, const float *m2, const float *g, float step,
                        float b1, float b2, float eps, float *np, float *nm1, float *nm2)
{
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    for (int64_t i = 0; i < n; i++) {
        const float pi = p[i], gi = g[i];
        const float m = m1[i] * b1 + gi * c1;
        const float v = m2[i] * b2 + gi * gi * c2;
        nm1[i] = m;
        nm2[i] = v;
        np[i] = pi + step * m / (sqrtf(v) + eps);
    }
}

/* Adam's kernel with the effective gradient (the optional output): as adam_kernel, then
 *   ng = correction * m / (sqrt(v) + eps);  np = p + lr * ng
 * (Caffe2's rounding for this form: the rate multiplies ng, not m). ng may alias g, np p, nm1 m1, nm2 m2. */
static void adam_kernel_eg(int64_t n, const float *p, const float *m1, const float *m2, const float *g, float lr,
                           float correction, float b1, float b2, float eps, float *np, float *nm1, float *nm2,
                           float *ng)
{
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    for (int64_t i = 0; i < n; i++) {
        const float pi = p[i], gi = g[i];
        const float m = m1[i] * b1 + gi * c1;
        const float v = m2[i] * b2 + gi * gi * c2;
        nm1[i] = m;
        nm2[i] = v;
        const float e = correction * m / (sqrtf(v) + eps);
        ng[i] = e;
        np[i] = pi + lr * e;
    }
}

static rc_status adam_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 2, 3};
    rc_status st = check_same_shape(op, 0, like, 3, err);
    if (!st) st = check_lr(op, 4, err);
    return st ? st : rc_iter_check_counter(op, "input", 5, rc_in_name(op, 5), rc_in(op, 5), err);
}

/* (PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[, EFFECTIVE_GRAD]); the first four
 * float32 of one shape, LR float32 one value, ITER int32 one value >= 0. EFFECTIVE_GRAD gets GRAD's shape. */
static rc_status adam_run(rc_op *op, rc_err *err)
{
    const adam_state *s = op->state;
    static const int like[] = {1, 2, 3};
    rc_status st;
    float lr = 0.0f;
    int64_t it = 0;
    if ((st = check_same_shape(op, 0, like, 3, err))) return st;
    if ((st = read_lr(op, 4, &lr, err))) return st;
    if ((st = read_iter(op, 5, &it, err))) return st;
    const float correction = adam_correction(s, it);
    for (int o = 0; o < op->n_out; o++)
        if ((st = resize_out_like_in(op, o, o == 3 ? 3 : 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (!n) return RC_OK;
    if (op->n_out == 4)
        adam_kernel_eg(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_in(op, 3)),
                       lr, correction, s->beta1, s->beta2, s->epsilon, rc_f32(rc_out(op, 0)),
                       rc_f32(rc_out(op, 1)), rc_f32(rc_out(op, 2)), rc_f32(rc_out(op, 3)));
    else
        adam_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_in(op, 3)),
                    lr * correction, s->beta1, s->beta2, s->epsilon, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)),
                    rc_f32(rc_out(op, 2)));
    return RC_OK;
}


/* ---------------------------------------------------------------- SparseAdam */

/* Dtypes and shapes (no data values): (PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER); the moments
 * float32 of PARAM's shape, GRAD INDICES.shape + PARAM.shape[1:], LR one float32. */
static rc_status sparse_adam_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 2};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 2, err))) return st;
    if ((st = rc_sparse_check_indices(op, 3, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 3, 4, "the gradient", err))) return st;
    return rc_sparse_check_scalar(op, 5, "the learning rate", err);
}

static rc_status sparse_adam_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1, 2, 2};
    rc_status st = adam_setup(op, err);
    if (st) return st;
    int64_t radam = 0;
    if ((st = rc_arg_i(&op->def, "enableRAdam", 0, &radam, err))) return st;
    if (radam != 0 && radam != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument enableRAdam must be 0 or 1, got %lld", (long long)radam);
    ((adam_state *)op->state)->radam = (int)radam;
    return rc_sparse_require_inplace(op, pairs, 3, err);
}

/* RAdam's factors at t = it + 1 (see the header), in double, rounded once: *rect = 1 when rho_t >= 5 (then
 * *coef = r_t * sqrt(1 - beta2^t) / (1 - beta1^t), multiplying m / (sqrt(v) + eps)), else 0 (then *coef =
 * 1 / (1 - beta1^t), multiplying m alone). */
static void radam_factors(const adam_state *s, int64_t it, int *rect, float *coef)
{
    const double t = (double)it + 1.0, b1 = s->beta1, b2 = s->beta2;
    const double b2t = pow(b2, t), b1c = 1.0 / (1.0 - pow(b1, t));
    const double rho_inf = 2.0 / (1.0 - b2) - 1.0;
    const double rho_t = rho_inf - 2.0 * t * b2t / (1.0 - b2t);
    if (rho_t >= 5.0) {  /* then rho_inf > rho_t >= 5: the square roots are real */
        const double r_t = sqrt((rho_t - 4.0) * (rho_t - 2.0) / rho_t * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0)));
        *rect = 1;
        *coef = (float)(r_t * sqrt(1.0 - b2t) * b1c);
    } else {
        *rect = 0;
        *coef = (float)b1c;
    }
}

/* RAdam's step without rectification: p, m1, m2, g: (n,) -> np, nm1, nm2 (and ng when not NULL): (n,):
 *   m = b1 * m1 + (1 - b1) * g;  v = b2 * m2 + (1 - b2) * g^2;  e = coef * m;  np = p + lr * e (ng = e)
 * np may alias p, nm1 m1, nm2 m2, ng g. */
static void radam_plain_kernel(int64_t n, const float *p, const float *m1, const float *m2, const float *g, float lr,
                               float coef, float b1, float b2, float *np, float *nm1, float *nm2, float *ng)
{
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    for (int64_t i = 0; i < n; i++) {
        const float pi = p[i], gi = g[i];
        const float m = m1[i] * b1 + gi * c1;
        const float v = m2[i] * b2 + gi * gi * c2;
        nm1[i] = m;
        nm2[i] = v;
        const float e = coef * m;
        if (ng) ng[i] = e;
        np[i] = pi + lr * e;
    }
}

/* (PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[, EFFECTIVE_GRAD]), the
 * first three in place: for each k in order, rows i = INDICES[k] get Adam's step (the same kernel and
 * correction) with row k of GRAD; row k of EFFECTIVE_GRAD (GRAD's shape) gets that occurrence's effective
 * gradient. */
static rc_status sparse_adam_run(rc_op *op, rc_err *err)
{
    const adam_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    int64_t it = 0;
    if ((st = sparse_adam_check(op, err))) return st;
    if ((st = read_lr(op, 5, &lr, err))) return st;
    if ((st = read_iter(op, 6, &it, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 3, 0, err))) return st;
    float correction = adam_correction(s, it);
    int rect = 1;
    if (s->radam) radam_factors(s, it, &rect, &correction);  /* RAdam: its own factor replaces c */
    const float step = lr * correction;
    if (op->n_out == 4 && (st = resize_out_like_in(op, 3, 4, err))) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 3)), R = rc_dims_prod(p, 1, p->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 3));
    const float *g = rc_f32(rc_in(op, 4));
    float *pd = rc_f32(rc_out(op, 0)), *m1 = rc_f32(rc_out(op, 1)), *m2 = rc_f32(rc_out(op, 2));
    float *ng = op->n_out == 4 ? rc_f32(rc_out(op, 3)) : NULL;
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        if (!rect)
            radam_plain_kernel(R, pd + i, m1 + i, m2 + i, g + k * R, lr, correction, s->beta1, s->beta2, pd + i,
                               m1 + i, m2 + i, ng ? ng + k * R : NULL);
        else if (ng)
            adam_kernel_eg(R, pd + i, m1 + i, m2 + i, g + k * R, lr, correction, s->beta1, s->beta2, s->epsilon,
                           pd + i, m1 + i, m2 + i, ng + k * R);
        else
            adam_kernel(R, pd + i, m1 + i, m2 + i, g + k * R, step, s->beta1, s->beta2, s->epsilon, pd + i,
                        m1 + i, m2 + i);
    }
    return RC_OK;
}

/* ================================================================ table */

/* SparseAdam: param and the moments in place (input i -> output i, i < 3); the effective gradient may replace
 * GRAD (input 4 -> output 3: row k is read before it is written). */
static int inplace_sparse_adam(int in, int out) { return (in == out && in < 3) || (in == 4 && out == 3); }

/* MomentumSGDUpdate: grad, moment and param may be updated in place (inputs 0, 1, 3 -> outputs 0, 1, 2). */
static int inplace_momentum(int in, int out)
{
    return (in == 0 && out == 0) || (in == 1 && out == 1) || (in == 3 && out == 2);
}

const rc_op_schema rc_ops_optim[] = {
    {"Iter", 0, 1, 1, 1, rc_inplace_first, iter_setup, iter_run, NULL,
     "([COUNTER]) -> COUNTER: int32 one-element counter += 1 (created as 0 first when there is no input and it "
     "holds nothing); the input, if any, must be the output's blob"},
    {"LearningRate", 1, 1, 1, 1, NULL, lr_setup, lr_run, lr_free,
     "(ITER int32) -> LR float32 (1,) = base_lr * policy(ITER); arguments base_lr, policy (" LR_POLICY_LIST
     ") and the policy's (e.g. stepsize, gamma, power, max_iter, stepsizes, start_multiplier, multiplier, "
     "num_iter; composite: sub_policy_num_iters, sub_policy_<i>_policy, sub_policy_<i>_<arg>)", lr_check},
    {"MomentumSGDUpdate", 4, 4, 3, 3, inplace_momentum, momentum_setup, momentum_run, free,
     "(grad, moment, lr, param) -> (grad, moment, param): moment = lr*grad + momentum*moment; param -= moment "
     "(nesterov=1: the Nesterov step); arguments momentum, nesterov", momentum_check},
    {"MomentumSGD", 3, 3, 2, 2, inplace_momentum, momentum_setup, momentum_run, free,
     "(grad, moment, lr) -> (grad, moment): MomentumSGDUpdate's step without a param: grad and moment = "
     "lr*grad + momentum*moment (nesterov=1: the Nesterov step); arguments momentum, nesterov", momentum_check},
    {"Adam", 6, 6, 3, 4, rc_inplace_same_index, adam_setup, adam_run, free,
     "(param, moment_1, moment_2, grad, lr, iter) -> (param, moment_1, moment_2[, effective_grad]): Adam step "
     "with bias correction (t = iter + 1); arguments beta1, beta2, epsilon", adam_check},
    {"SparseMomentumSGDUpdate", 5, 5, 3, 3, inplace_momentum, sparse_momentum_setup, sparse_momentum_run,
     free,
     "(grad, moment, lr, param, indices) -> (grad, moment, param): MomentumSGDUpdate's step on rows indices[k] "
     "of moment and param with row k of grad (shape indices.shape + param.shape[1:]), k in order; moment and "
     "param in place; arguments momentum, nesterov", sparse_momentum_check},
    {"SparseAdam", 7, 7, 3, 4, inplace_sparse_adam, sparse_adam_setup, sparse_adam_run, free,
     "(param, moment_1, moment_2, indices, grad, lr, iter) -> (param, moment_1, moment_2[, effective_grad]) in "
     "place: Adam's step on rows indices[k] with row k of grad (shape indices.shape + param.shape[1:]), k in "
     "order; arguments beta1, beta2, epsilon, enableRAdam (rectified Adam)", sparse_adam_check},
    {0},
};
