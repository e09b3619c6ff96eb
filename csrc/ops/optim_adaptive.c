/* ops/optim_adaptive.c -- the ops of Caffe2's RmsProp, Adadelta and Wngrad
 * optimizers (caffe2/sgd rmsprop_op, adadelta_op, wngrad_op).
 *
 *   RmsProp(GRAD, MEAN_SQUARES, MOMENTUM, LR) -> (GRAD_O, MEAN_SQUARES, MOMENTUM)
 *   Adadelta(PARAM, MOMENT, MOMENT_DELTA, GRAD, LR) -> (PARAM, MOMENT, MOMENT_DELTA)
 *   SparseAdadelta(PARAM, MOMENT, MOMENT_DELTA, INDICES, GRAD, LR) -> (PARAM, MOMENT, MOMENT_DELTA)
 *   Wngrad(PARAM, SEQ_B, GRAD, LR) -> (PARAM, SEQ_B[, EFFECTIVE_LR[, UPDATE]])
 *   SparseWngrad(PARAM, SEQ_B, INDICES, GRAD, LR) -> (PARAM, SEQ_B)
 *
 * The arithmetic is Caffe2's, in float, in Caffe2's order of operations:
 *   RmsProp:  ms' = ms + (1 - decay) * (g^2 - ms);
 *             mom' = momentum * mom + lr * g / sqrt(epsilon + ms');  grad_o = mom'
 *   Adadelta: h' = decay * h + (1 - decay) * g^2;
 *             u = sqrt(d + epsilon) / sqrt(h' + epsilon) * g;
 *             param' = param + lr * u;  d' = decay * d + (1 - decay) * u^2
 *   Wngrad:   param' = param + lr * g / (b + epsilon)   (two outputs), or, with
 *             EFFECTIVE_LR = lr / (b + epsilon), param' = param + EFFECTIVE_LR * g
 *             (three or four outputs; UPDATE = EFFECTIVE_LR * g), as Caffe2
 *             computed the two cases;  b' = b + sum(g^2) / (b + epsilon).
 * LR is a float32 tensor of one element (negative for descent in Adadelta and
 * Wngrad, as Caffe2's optimizers pass it; RmsProp only scales the step by it).
 * Defaults as Caffe2's ops: RmsProp decay 0.9, momentum 0, epsilon 1e-5;
 * Adadelta epsilon 1e-5, decay 0.95; Wngrad epsilon 1e-5.
 *
 * Differences from Caffe2:
 *  - shapes are compared, not only sizes (every state tensor must have the
 *    shape of PARAM, or of GRAD for RmsProp); a mismatch is a ValueError
 *    naming the blobs and their shapes;
 *  - arguments are checked when the op is created: RmsProp decay in [0, 1],
 *    momentum and epsilon finite and >= 0 (Caffe2 checked nothing);
 *    Adadelta decay in (0, 1), epsilon finite and >= 0 (as Caffe2 enforced, at
 *    run time); Wngrad epsilon finite and >= 0;
 *  - SEQ_B must hold one value (Caffe2 read element 0 of whatever it was
 *    given, an empty tensor included), finite, with SEQ_B + epsilon > 0 (a
 *    ValueError; otherwise the step divides by zero or flips sign);
 *  - Wngrad's sum of squares of GRAD is accumulated in double and rounded to
 *    float once (Caffe2: a float accumulator, which loses precision on large
 *    tensors);
 *  - SparseWngrad divides the sum of squares by SEQ_B + epsilon, as Wngrad
 *    does (Caffe2's SparseWngrad divided by SEQ_B alone: a division by zero at
 *    SEQ_B = 0, and a sparse update that differs from the dense one);
 *  - the sparse variants take INDICES (int32, any rank, K = its size) and GRAD
 *    of shape INDICES.shape + PARAM.shape[1:] (Caffe2 compared sizes only);
 *    every index is checked before anything is written (IndexError; Caffe2
 *    checked some only in debug builds); the outputs must be the blobs of
 *    their inputs (ValueError at creation, as Caffe2's EnforceOneToOneInplace).
 *    SparseAdadelta applies Adadelta's kernel to row INDICES.flat[k] of the
 *    state with row k of GRAD, k in order, one occurrence at a time (a
 *    repeated index is updated twice, the second time from the first's
 *    result, as Caffe2's), so a row named once gets bitwise Adadelta's result
 *    for that row. SparseWngrad steps every row named by INDICES with the
 *    SEQ_B read before the op (a repeated index gets both steps, i.e. the sum
 *    of its rows), then adds the squares of all of GRAD's rows (each
 *    occurrence counted) to SEQ_B, as Caffe2's: with unique indices the result
 *    is that of Wngrad on the dense gradient (zeros elsewhere).
 * Shapes and dtypes are also checked at net creation (the `check` functions).
 * Outputs may be the blobs of the inputs they replace (in place: the usual
 * use); the kernels read element i of every input before writing element i,
 * and read SEQ_B before writing it. Kernels are plain loops over pointers;
 * none keeps global state, so op instances may run concurrently. op->state
 * (the parsed arguments) is owned by the op and freed with free(). Nothing
 * allocates except the resize of an output whose shape changed.
 */
#include "../core/rc_core.h"
#include "sparse.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status resize_out(rc_op *op, int o, int ndim, const int64_t *dims, rc_err *err)
{
    if (rc_tensor_resize(rc_out(op, o), RC_F32, ndim, dims, err))
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
    return resize_out(op, o, t->ndim, dims, err);
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

/* Float argument `name` (default dflt) into *v: finite and >= 0. */
static rc_status arg_nonneg(rc_op *op, const char *name, float dflt, float *v, rc_err *err)
{
    rc_status st = rc_arg_f(&op->def, name, dflt, v, err);
    if (st) return st;
    if (!(*v >= 0.0f) || isinf(*v))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must be finite and >= 0, got %g", name, (double)*v);
    return RC_OK;
}

/* The state of every op here: its arguments (those an op does not take stay 0). */
typedef struct adaptive_state {
    float decay, momentum, epsilon;
} adaptive_state;

static rc_status new_state(rc_op *op, adaptive_state **s, rc_err *err)
{
    *s = calloc(1, sizeof **s);
    if (!*s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = *s; /* owned by the op, released by the schema's free_state (free) */
    return RC_OK;
}

/* ================================================================ RmsProp */

static rc_status rmsprop_setup(rc_op *op, rc_err *err)
{
    adaptive_state *s;
    rc_status st;
    if ((st = new_state(op, &s, err))) return st;
    if ((st = rc_arg_f(&op->def, "decay", 0.9f, &s->decay, err))) return st;
    if (!(s->decay >= 0.0f && s->decay <= 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument decay must be in [0, 1], got %g", (double)s->decay);
    if ((st = arg_nonneg(op, "momentum", 0.0f, &s->momentum, err))) return st;
    return arg_nonneg(op, "epsilon", 1e-5f, &s->epsilon, err);
}

/* (GRAD, MEAN_SQUARES, MOMENTUM, LR): the first three float32 of one shape, LR one float32. */
static rc_status rmsprop_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 2};
    rc_status st = check_same_shape(op, 0, like, 2, err);
    if (st) return st;
    return rc_sparse_check_scalar(op, 3, "the learning rate", err);
}

/* g, ms, mom: (n,) -> ng, nms, nmom: (n,) (see the top of the file); each may alias its input. */
static void rmsprop_kernel(int64_t n, const float *g, const float *ms, const float *mom, float lr, float decay,
                           float mu, float eps, float *ng, float *nms, float *nmom)
{
    const float c = 1.0f - decay;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], msi = ms[i], mi = mom[i];
        const float s = msi + c * (gi * gi - msi);
        const float m = mi * mu + lr * gi / sqrtf(eps + s);
        nms[i] = s;
        nmom[i] = m;
        ng[i] = m;
    }
}

static rc_status rmsprop_run(rc_op *op, rc_err *err)
{
    const adaptive_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    if ((st = rmsprop_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 3, "the learning rate", &lr, err))) return st;
    for (int o = 0; o < 3; o++)
        if ((st = resize_out_like_in(op, o, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n)
        rmsprop_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), lr, s->decay,
                       s->momentum, s->epsilon, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)), rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* ================================================================ Adadelta */

static rc_status adadelta_setup(rc_op *op, rc_err *err)
{
    adaptive_state *s;
    rc_status st;
    if ((st = new_state(op, &s, err))) return st;
    if ((st = arg_nonneg(op, "epsilon", 1e-5f, &s->epsilon, err))) return st;
    if ((st = rc_arg_f(&op->def, "decay", 0.95f, &s->decay, err))) return st;
    if (!(s->decay > 0.0f && s->decay < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument decay must be in (0, 1), got %g", (double)s->decay);
    return RC_OK;
}

/* (PARAM, MOMENT, MOMENT_DELTA, GRAD, LR): the first four float32 of one shape, LR one float32. */
static rc_status adadelta_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 2, 3};
    rc_status st = check_same_shape(op, 0, like, 3, err);
    if (st) return st;
    return rc_sparse_check_scalar(op, 4, "the learning rate", err);
}

/* w, h, d, g: (n,) -> nw, nh, nd: (n,) (see the top of the file); nw may alias w, nh h, nd d. */
static void adadelta_kernel(int64_t n, const float *w, const float *h, const float *d, const float *g, float lr,
                            float eps, float decay, float *nw, float *nh, float *nd)
{
    const float c = 1.0f - decay;
    for (int64_t i = 0; i < n; i++) {
        const float gi = g[i], di = d[i], wi = w[i];
        const float hi = decay * h[i] + c * gi * gi;
        const float u = (sqrtf(di + eps) / sqrtf(hi + eps)) * gi;
        nh[i] = hi;
        nw[i] = wi + lr * u;
        nd[i] = decay * di + c * u * u;
    }
}

static rc_status adadelta_run(rc_op *op, rc_err *err)
{
    const adaptive_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    if ((st = adadelta_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 4, "the learning rate", &lr, err))) return st;
    for (int o = 0; o < 3; o++)
        if ((st = resize_out_like_in(op, o, 0, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n)
        adadelta_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_in(op, 3)),
                        lr, s->epsilon, s->decay, rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)),
                        rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* ---------------------------------------------------------------- SparseAdadelta */

/* (PARAM, MOMENT, MOMENT_DELTA, INDICES, GRAD, LR): the moments float32 of PARAM's shape, GRAD
 * INDICES.shape + PARAM.shape[1:], LR one float32 (no data values). */
static rc_status sparse_adadelta_check(rc_op *op, rc_err *err)
{
    static const int like[] = {1, 2};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 2, err))) return st;
    if ((st = rc_sparse_check_indices(op, 3, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 3, 4, "the gradient", err))) return st;
    return rc_sparse_check_scalar(op, 5, "the learning rate", err);
}

static rc_status sparse_adadelta_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1, 2, 2};
    rc_status st = adadelta_setup(op, err);
    if (st) return st;
    return rc_sparse_require_inplace(op, pairs, 3, err);
}

/* For each k in order, rows i = INDICES[k] of PARAM and the moments get Adadelta's step (the same kernel)
 * with row k of GRAD; all in place. */
static rc_status sparse_adadelta_run(rc_op *op, rc_err *err)
{
    const adaptive_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    if ((st = sparse_adadelta_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 5, "the learning rate", &lr, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 3, 0, err))) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 3)), R = rc_dims_prod(p, 1, p->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 3));
    const float *g = rc_f32(rc_in(op, 4));
    float *w = rc_f32(rc_out(op, 0)), *h = rc_f32(rc_out(op, 1)), *d = rc_f32(rc_out(op, 2));
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        adadelta_kernel(R, w + i, h + i, d + i, g + k * R, lr, s->epsilon, s->decay, w + i, h + i, d + i);
    }
    return RC_OK;
}

/* ================================================================ Wngrad */

static rc_status wngrad_setup(rc_op *op, rc_err *err)
{
    adaptive_state *s;
    rc_status st = new_state(op, &s, err);
    if (st) return st;
    return arg_nonneg(op, "epsilon", 1e-5f, &s->epsilon, err);
}

/* Input i: SEQ_B, one float32 value, finite, with SEQ_B + eps > 0; *b = it. */
static rc_status read_seq_b(rc_op *op, int i, float eps, float *b, rc_err *err)
{
    rc_status st = rc_sparse_read_scalar(op, i, "seq_b", b, err);
    if (st) return st;
    if (!isfinite(*b) || !(*b + eps > 0.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (seq_b) must be finite with seq_b + epsilon > 0, got %g (epsilon %g)",
                          i, rc_in_name(op, i), (double)*b, (double)eps);
    return RC_OK;
}

/* b' = b + sum(g^2) / (b + eps); the sum over n values in double, rounded to float once. */
static float wngrad_seq_b(int64_t n, const float *g, float b, float eps)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)g[i] * (double)g[i];
    return b + (float)ss / (b + eps);
}

/* (PARAM, SEQ_B, GRAD, LR): PARAM and GRAD float32 of one shape, SEQ_B and LR one float32 each. */
static rc_status wngrad_check(rc_op *op, rc_err *err)
{
    static const int like[] = {2};
    rc_status st;
    if ((st = check_same_shape(op, 0, like, 1, err))) return st;
    if ((st = rc_sparse_check_scalar(op, 1, "seq_b", err))) return st;
    return rc_sparse_check_scalar(op, 3, "the learning rate", err);
}

/* Outputs: PARAM, SEQ_B (its input's shape), optionally EFFECTIVE_LR (SEQ_B's shape) and UPDATE (GRAD's). */
static rc_status wngrad_run(rc_op *op, rc_err *err)
{
    const adaptive_state *s = op->state;
    rc_status st;
    float lr = 0.0f, b = 0.0f;
    if ((st = wngrad_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 3, "the learning rate", &lr, err))) return st;
    if ((st = read_seq_b(op, 1, s->epsilon, &b, err))) return st;
    static const int like_in[] = {0, 1, 1, 2};
    for (int o = 0; o < op->n_out; o++)
        if ((st = resize_out_like_in(op, o, like_in[o], err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *w = rc_f32(rc_in(op, 0)), *g = rc_f32(rc_in(op, 2));
    float *nw = rc_f32(rc_out(op, 0));
    const float den = b + s->epsilon;
    const float nb = wngrad_seq_b(n, g, b, s->epsilon);
    if (op->n_out == 2) {
        for (int64_t i = 0; i < n; i++) nw[i] = w[i] + lr * g[i] / den;
    } else {
        const float eff = lr / den;
        float *upd = op->n_out == 4 ? rc_f32(rc_out(op, 3)) : NULL;
        for (int64_t i = 0; i < n; i++) {
            const float u = eff * g[i];
            if (upd) upd[i] = u;
            nw[i] = w[i] + u;
        }
        rc_f32(rc_out(op, 2))[0] = eff;
    }
    rc_f32(rc_out(op, 1))[0] = nb;
    return RC_OK;
}

/* ---------------------------------------------------------------- SparseWngrad */

/* (PARAM, SEQ_B, INDICES, GRAD, LR): PARAM float32, SEQ_B one float32, GRAD INDICES.shape + PARAM.shape[1:],
 * LR one float32 (no data values). */
static rc_status sparse_wngrad_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if ((st = rc_sparse_check_scalar(op, 1, "seq_b", err))) return st;
    if ((st = rc_sparse_check_indices(op, 2, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 2, 3, "the gradient", err))) return st;
    return rc_sparse_check_scalar(op, 4, "the learning rate", err);
}

static rc_status sparse_wngrad_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1};
    rc_status st = wngrad_setup(op, err);
    if (st) return st;
    return rc_sparse_require_inplace(op, pairs, 2, err);
}

/* Rows INDICES[k] of PARAM += lr * (row k of GRAD) / (SEQ_B + eps), k in order, then SEQ_B as Wngrad's from
 * all of GRAD; in place. */
static rc_status sparse_wngrad_run(rc_op *op, rc_err *err)
{
    const adaptive_state *s = op->state;
    rc_status st;
    float lr = 0.0f, b = 0.0f;
    if ((st = sparse_wngrad_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 4, "the learning rate", &lr, err))) return st;
    if ((st = read_seq_b(op, 1, s->epsilon, &b, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 2, 0, err))) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 2)), R = rc_dims_prod(p, 1, p->ndim);
    const float *g = K && R ? rc_f32(rc_in(op, 3)) : NULL;
    const float den = b + s->epsilon;
    if (g) {
        const int32_t *idx = rc_i32(rc_in(op, 2));
        float *w = rc_f32(rc_out(op, 0));
        for (int64_t k = 0; k < K; k++) {
            float *wr = w + (int64_t)idx[k] * R;
            const float *gr = g + k * R;
            for (int64_t j = 0; j < R; j++) wr[j] = wr[j] + lr * gr[j] / den;
        }
    }
    rc_f32(rc_out(op, 1))[0] = wngrad_seq_b(g ? K * R : 0, g, b, s->epsilon);
    return RC_OK;
}

/* ================================================================ table */

/* Wngrad, SparseWngrad: PARAM and SEQ_B may be updated in place (inputs 0, 1 -> outputs 0, 1). */
static int inplace_param_seq_b(int in, int out) { return in == out && in < 2; }

const rc_op_schema rc_ops_optim_adaptive[] = {
    {"RmsProp", 4, 4, 3, 3, rc_inplace_same_index, rmsprop_setup, rmsprop_run, free,
     "(grad, mean_squares, mom, lr) -> (grad_o, mean_squares, mom): ms += (1-decay)*(grad^2 - ms); "
     "mom = momentum*mom + lr*grad/sqrt(epsilon + ms); grad_o = mom; arguments decay, momentum, epsilon",
     rmsprop_check},
    {"Adadelta", 5, 5, 3, 3, rc_inplace_same_index, adadelta_setup, adadelta_run, free,
     "(param, moment, moment_delta, grad, lr) -> (param, moment, moment_delta): the AdaDelta step; "
     "arguments epsilon, decay", adadelta_check},
    {"SparseAdadelta", 6, 6, 3, 3, rc_inplace_same_index, sparse_adadelta_setup, sparse_adadelta_run, free,
     "(param, moment, moment_delta, indices, grad, lr) -> (param, moment, moment_delta) in place: Adadelta's "
     "step on rows indices[k] with row k of grad (shape indices.shape + param.shape[1:]), k in order; "
     "arguments epsilon, decay", sparse_adadelta_check},
    {"Wngrad", 4, 4, 2, 4, inplace_param_seq_b, wngrad_setup, wngrad_run, free,
     "(param, seq_b, grad, lr) -> (param, seq_b[, effective_lr[, update]]): param += lr*grad/(seq_b + epsilon); "
     "seq_b += sum(grad^2)/(seq_b + epsilon); argument epsilon", wngrad_check},
    {"SparseWngrad", 5, 5, 2, 2, inplace_param_seq_b, sparse_wngrad_setup, sparse_wngrad_run, free,
     "(param, seq_b, indices, grad, lr) -> (param, seq_b) in place: Wngrad's step on rows indices[k] with row k "
     "of grad (shape indices.shape + param.shape[1:]); seq_b from all of grad; argument epsilon",
     sparse_wngrad_check},
    {0},
};
