/* ops/optim.c -- the ops of Caffe2's optimizers besides Adagrad (ops/embed.c)
 * and WeightedSum (ops/math.c): the iteration counter, the learning-rate
 * schedule, SGD with momentum and Adam.
 *
 *   Iter([COUNTER]) -> COUNTER                          COUNTER += 1 (int32, one element)
 *   LearningRate(ITER) -> LR                            LR (1,) = base_lr * policy(ITER)
 *   MomentumSGDUpdate(GRAD, MOMENT, LR, PARAM) -> (GRAD, MOMENT, PARAM)
 *   Adam(PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2)
 *   SparseMomentumSGDUpdate(GRAD, MOMENT, LR, PARAM, INDICES) -> (GRAD, MOMENT, PARAM)
 *   SparseAdam(PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2)
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
 *    >= 0); arguments a policy does not use are ignored. Only the policies
 *    fixed, step, exp, inv, poly, multistep, linearWarmup and
 *    constantWarmup exist (Caffe2 had more, e.g. hill and composite);
 *  - MomentumSGDUpdate: momentum must be finite and >= 0, nesterov 0 or 1.
 *    Caffe2's MomentumSGD (no PARAM) is absent;
 *  - Adam has exactly three outputs (later Caffe2 versions could output the
 *    effective gradient too); beta1 and beta2 must lie in [0, 1) and epsilon
 *    be finite and >= 0 (checked at creation). The bias correction
 *    sqrt(1 - beta2^t) / (1 - beta1^t), t = ITER + 1, is computed in double
 *    and rounded to float once. The row-wise variants are absent;
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
 * int32 tensor of exactly one element. */
static rc_status check_counter(rc_op *op, const char *what, int k, const char *name, const rc_tensor *t,
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
    rc_status st = check_counter(op, "input", i, rc_in_name(op, i), t, err);
    if (st) return st;
    *it = rc_i32(t)[0];
    if (*it < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the iteration counter) must be >= 0, got %lld", i,
                          rc_in_name(op, i), (long long)*it);
    return RC_OK;
}

/* Input i: the learning rate, float32 with one value; *lr = that value. */
static rc_status read_lr(rc_op *op, int i, float *lr, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (rc_tensor_numel(t) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (the learning rate) must hold one value, got %s",
                          i, rc_in_name(op, i), RC_SHAPE(t));
    *lr = rc_f32(t)[0];
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
    if ((st = check_counter(op, "output", 0, rc_out_name(op, 0), t, err))) return st;
    int32_t *v = rc_i32(t);
    if (*v == INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output 0 blob '%s' (the iteration counter) is at %d: incrementing it would overflow int32",
                          rc_out_name(op, 0), (int)*v);
    *v += 1;
    return RC_OK;
}

/* ================================================================ LearningRate */

typedef enum {
    LR_FIXED, LR_STEP, LR_EXP, LR_INV, LR_POLY, LR_MULTISTEP, LR_LINEAR_WARMUP, LR_CONSTANT_WARMUP, LR_N_POLICIES
} lr_policy;

static const char *const lr_policy_names[LR_N_POLICIES] = {
    "fixed", "step", "exp", "inv", "poly", "multistep", "linearWarmup", "constantWarmup",
};
#define LR_POLICY_LIST "fixed, step, exp, inv, poly, multistep, linearWarmup, constantWarmup"

typedef struct lr_state {
    lr_policy policy;
    double base_lr;
    double gamma, power;              /* step, exp, multistep: gamma; inv: both; poly: power */
    double start_multiplier;          /* linearWarmup */
    double multiplier;                /* constantWarmup */
    int64_t stepsize;                 /* step */
    int64_t max_iter;                 /* poly */
    int64_t num_iter;                 /* linearWarmup, constantWarmup */
    const int64_t *stepsizes;         /* multistep: borrowed from op->def (lives as long as the op) */
    int n_stepsizes;
} lr_state;

/* Float argument `name` at double precision (an int argument is accepted
 * too). Absent: an error when `required` (naming `policy` when given), else
 * *out = dflt. Not finite: an error. */
static rc_status lr_arg_d(rc_op *op, const char *name, const char *policy, int required, double dflt, double *out,
                          rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(&op->def, name);
    if (!a) {
        *out = dflt;
        if (!required) return RC_OK;
        if (policy)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required by policy '%s'", name, policy);
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required", name);
    }
    if (a->kind == RC_ARG_F) {
        *out = a->f;
    } else if (a->kind == RC_ARG_I) {
        *out = (double)a->i;
    } else {
        float unused;
        return rc_arg_f(&op->def, name, 0.0f, &unused, err); /* reports the wrong kind */
    }
    if (!isfinite(*out))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be finite, got %g", name, *out);
    return RC_OK;
}

/* Int argument `name`: as lr_arg_d; must be >= lo. */
static rc_status lr_arg_i(rc_op *op, const char *name, const char *policy, int required, int64_t dflt, int64_t lo,
                          int64_t *out, rc_err *err)
{
    if (required && !rc_opdef_arg(&op->def, name))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is required by policy '%s'", name, policy);
    rc_status st = rc_arg_i(&op->def, name, dflt, out, err);
    if (st) return st;
    if (*out < lo)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be >= %lld, got %lld", name, (long long)lo,
                          (long long)*out);
    return RC_OK;
}

static rc_status lr_gamma(rc_op *op, lr_state *s, const char *policy, rc_err *err)
{
    rc_status st = lr_arg_d(op, "gamma", policy, 1, 0.0, &s->gamma, err);
    if (st) return st;
    if (!(s->gamma > 0.0))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument gamma must be finite and > 0, got %g", s->gamma);
    return RC_OK;
}

static rc_status lr_setup(rc_op *op, rc_err *err)
{
    lr_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    if ((st = lr_arg_d(op, "base_lr", NULL, 1, 0.0, &s->base_lr, err))) return st;
    if (!rc_opdef_arg(&op->def, "policy"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument policy is required (one of: " LR_POLICY_LIST ")");
    const char *name;
    if ((st = rc_arg_s(&op->def, "policy", NULL, &name, err))) return st;
    int p = 0;
    while (p < LR_N_POLICIES && strcmp(name, lr_policy_names[p]) != 0) p++;
    if (p == LR_N_POLICIES)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument policy: unknown policy '%.100s' (supported: " LR_POLICY_LIST
                          ")", name);
    s->policy = (lr_policy)p;
    switch (s->policy) {
    case LR_FIXED:
        break;
    case LR_STEP:
        if ((st = lr_arg_i(op, "stepsize", name, 1, 0, 1, &s->stepsize, err))) return st;
        if ((st = lr_gamma(op, s, name, err))) return st;
        break;
    case LR_EXP:
        if ((st = lr_gamma(op, s, name, err))) return st;
        break;
    case LR_INV:
        if ((st = lr_gamma(op, s, name, err))) return st;
        if ((st = lr_arg_d(op, "power", name, 1, 0.0, &s->power, err))) return st;
        break;
    case LR_POLY:
        if ((st = lr_arg_i(op, "max_iter", name, 1, 0, 1, &s->max_iter, err))) return st;
        if ((st = lr_arg_d(op, "power", name, 1, 0.0, &s->power, err))) return st;
        break;
    case LR_MULTISTEP:
        if ((st = rc_arg_ints(&op->def, "stepsizes", &s->stepsizes, &s->n_stepsizes, err))) return st;
        if (s->n_stepsizes == 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "argument stepsizes (a non-empty list of ints) is required by policy '%s'", name);
        for (int k = 0; k < s->n_stepsizes; k++) {
            if (s->stepsizes[k] <= 0)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "argument stepsizes must hold ints > 0, got %lld at position %d",
                                  (long long)s->stepsizes[k], k);
            if (k > 0 && s->stepsizes[k] <= s->stepsizes[k - 1])
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "argument stepsizes must be strictly increasing, got %lld after %lld at position %d",
                                  (long long)s->stepsizes[k], (long long)s->stepsizes[k - 1], k);
        }
        if ((st = lr_gamma(op, s, name, err))) return st;
        break;
    case LR_LINEAR_WARMUP:
        if ((st = lr_arg_d(op, "start_multiplier", name, 0, 0.0, &s->start_multiplier, err))) return st;
        if (!(s->start_multiplier >= 0.0))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument start_multiplier must be finite and >= 0, got %g",
                              s->start_multiplier);
        if ((st = lr_arg_i(op, "num_iter", name, 0, 0, 0, &s->num_iter, err))) return st;
        break;
    case LR_CONSTANT_WARMUP:
        if ((st = lr_arg_d(op, "multiplier", name, 0, 0.5, &s->multiplier, err))) return st;
        if (!(s->multiplier >= 0.0))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument multiplier must be finite and >= 0, got %g",
                              s->multiplier);
        if ((st = lr_arg_i(op, "num_iter", name, 0, 0, 0, &s->num_iter, err))) return st;
        break;
    case LR_N_POLICIES:
        break;
    }
    return RC_OK;
}

/* The policy's multiplier at iteration it >= 0, in double. */
static double lr_multiplier(const lr_state *s, int64_t it)
{
    const double x = (double)it;
    switch (s->policy) {
    case LR_FIXED:
        return 1.0;
    case LR_STEP:
        return pow(s->gamma, (double)(it / s->stepsize));
    case LR_EXP:
        return pow(s->gamma, x);
    case LR_INV:
        return pow(1.0 + s->gamma * x, -s->power);
    case LR_POLY:
        return it >= s->max_iter ? 0.0 : pow(1.0 - x / (double)s->max_iter, s->power);
    case LR_MULTISTEP: {
        int passed = 0;
        for (int k = 0; k < s->n_stepsizes; k++) passed += it >= s->stepsizes[k];
        return pow(s->gamma, (double)passed);
    }
    case LR_LINEAR_WARMUP:
        return it < s->num_iter ? s->start_multiplier + (1.0 - s->start_multiplier) * x / (double)s->num_iter : 1.0;
    case LR_CONSTANT_WARMUP:
        return it < s->num_iter ? s->multiplier : 1.0;
    case LR_N_POLICIES:
        break;
    }
    return 1.0;
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
 * ng may alias g, nm m, np p. */
static void momentum_kernel(int64_t n, const float *g, const float *m, const float *p, float lr, float mu, float *ng,
                            float *nm, float *np)
{
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i], pi = p[i];
        const float a = lr * gi + mu * mi;
        nm[i] = a;
        ng[i] = a;
        np[i] = pi - a;
    }
}

/* As momentum_kernel, Nesterov's variant:
 *   mn = mu * m + lr * g;  nm = mn;  ng = (1 + mu) * mn - mu * m;  np = p - ng */
static void nesterov_kernel(int64_t n, const float *g, const float *m, const float *p, float lr, float mu, float *ng,
                            float *nm, float *np)
{
    const float mu1 = 1.0f + mu;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], mi = m[i], pi = p[i];
        const float mn = mu * mi + lr * gi;
        const float gn = mu1 * mn - mu * mi;
        nm[i] = mn;
        ng[i] = gn;
        np[i] = pi - gn;
    }
}

/* (GRAD, MOMENT, LR, PARAM) -> (GRAD, MOMENT, PARAM); GRAD, MOMENT, PARAM float32 of one shape, LR one value. */
static rc_status momentum_run(rc_op *op, rc_err *err)
{
    const momentum_state *s = op->state;
    static const int like[] = {1, 3};
    rc_status st;
    float lr = 0.0f;
    if ((st = check_same_shape(op, 0, like, 2, err))) return st;
    if ((st = read_lr(op, 2, &lr, err))) return st;
    if ((st = resize_out_like_in(op, 0, 0, err))) return st;
    if ((st = resize_out_like_in(op, 1, 0, err))) return st;
    if ((st = resize_out_like_in(op, 2, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (!n) return RC_OK;
    const float *g = rc_f32(rc_in(op, 0)), *m = rc_f32(rc_in(op, 1)), *p = rc_f32(rc_in(op, 3));
    float *ng = rc_f32(rc_out(op, 0)), *nm = rc_f32(rc_out(op, 1)), *np = rc_f32(rc_out(op, 2));
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

/* (PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2); the first four float32 of one
 * shape, LR float32 one value, ITER int32 one value >= 0. */
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
    for (int o = 0; o < 3; o++)
        if ((st = resize_out_like_in(op, o, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n)
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
    return rc_sparse_require_inplace(op, pairs, 3, err);
}

/* (PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2), all in place: for each
 * k in order, rows i = INDICES[k] get Adam's step (the same kernel and correction) with row k of GRAD. */
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
    const float step = lr * adam_correction(s, it);
    const rc_tensor *p = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 3)), R = rc_dims_prod(p, 1, p->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 3));
    const float *g = rc_f32(rc_in(op, 4));
    float *pd = rc_f32(rc_out(op, 0)), *m1 = rc_f32(rc_out(op, 1)), *m2 = rc_f32(rc_out(op, 2));
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        adam_kernel(R, pd + i, m1 + i, m2 + i, g + k * R, step, s->beta1, s->beta2, s->epsilon, pd + i, m1 + i,
                    m2 + i);
    }
    return RC_OK;
}

/* ================================================================ table */

/* MomentumSGDUpdate: grad, moment and param may be updated in place (inputs 0, 1, 3 -> outputs 0, 1, 2). */
static int inplace_momentum(int in, int out)
{
    return (in == 0 && out == 0) || (in == 1 && out == 1) || (in == 3 && out == 2);
}

const rc_op_schema rc_ops_optim[] = {
    {"Iter", 0, 1, 1, 1, rc_inplace_first, iter_setup, iter_run, NULL,
     "([COUNTER]) -> COUNTER: int32 one-element counter += 1 (created as 0 first when there is no input and it "
     "holds nothing); the input, if any, must be the output's blob"},
    {"LearningRate", 1, 1, 1, 1, NULL, lr_setup, lr_run, free,
     "(ITER int32) -> LR float32 (1,) = base_lr * policy(ITER); arguments base_lr, policy (" LR_POLICY_LIST
     ") and the policy's: stepsize, gamma, power, max_iter, stepsizes, start_multiplier, multiplier, num_iter"},
    {"MomentumSGDUpdate", 4, 4, 3, 3, inplace_momentum, momentum_setup, momentum_run, free,
     "(grad, moment, lr, param) -> (grad, moment, param): moment = lr*grad + momentum*moment; param -= moment "
     "(nesterov=1: the Nesterov step); arguments momentum, nesterov"},
    {"Adam", 6, 6, 3, 3, rc_inplace_same_index, adam_setup, adam_run, free,
     "(param, moment_1, moment_2, grad, lr, iter) -> (param, moment_1, moment_2): Adam step with bias correction "
     "(t = iter + 1); arguments beta1, beta2, epsilon"},
    {"SparseMomentumSGDUpdate", 5, 5, 3, 3, inplace_momentum, sparse_momentum_setup, sparse_momentum_run,
     free,
     "(grad, moment, lr, param, indices) -> (grad, moment, param): MomentumSGDUpdate's step on rows indices[k] "
     "of moment and param with row k of grad (shape indices.shape + param.shape[1:]), k in order; moment and "
     "param in place; arguments momentum, nesterov", sparse_momentum_check},
    {"SparseAdam", 7, 7, 3, 3, rc_inplace_same_index, sparse_adam_setup, sparse_adam_run, free,
     "(param, moment_1, moment_2, indices, grad, lr, iter) -> (param, moment_1, moment_2) in place: Adam's step "
     "on rows indices[k] with row k of grad (shape indices.shape + param.shape[1:]), k in order; arguments "
     "beta1, beta2, epsilon", sparse_adam_check},
    {0},
};
