/* ops/optim_rowwise.c -- FTRL and the row-wise sparse variants of Adagrad
 * and Adam (Caffe2's ftrl_op, adagrad_op RowWiseSparseAdagrad, adam_op
 * RowWiseSparseAdam).
 *
 *   Ftrl(VAR, N_Z, GRAD[, ALPHA]) -> (VAR, N_Z)
 *   SparseFtrl(VAR, N_Z, INDICES, GRAD[, ALPHA]) -> (VAR, N_Z)
 *   RowWiseSparseAdagrad(PARAM, MOMENT, INDICES, GRAD, LR) -> (PARAM, MOMENT)
 *   RowWiseSparseAdam(PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[,
 *                     EFFECTIVE_GRAD])
 *   RowWiseCounter(PREV_ITER, COUNTER, INDICES, ITER) -> (PREV_ITER, COUNTER)   (caffe2/sgd/rowwise_counter.h;
 *                     its own section below)
 *   SparseNormalize(PARAM, INDICES[, GRAD]) -> PARAM   (caffe2/operators/sparse_normalize_op.cc; its own
 *                     section below)
 *
 * Ftrl, per element (w, n, z, g), with alpha_inv = 1 / alpha (in float, as Caffe2):
 *   n' = n + g^2;  sigma = (sqrt(n') - sqrt(n)) * alpha_inv;  z' = z + g - sigma * w
 *   w' = |z'| > lambda1 ? (lambda1 * sgn(z') - z') / ((beta + sqrt(n')) * alpha_inv + lambda2) : 0
 * N_Z holds n and z interleaved: shape VAR.shape + (2,), [..., 0] = n, [..., 1] = z
 * (Caffe2's FtrlOptimizer creates it so, with extra_shape=[2]).
 * Arguments alpha (0.005), beta (1), lambda1 (0.001), lambda2 (0.001): the
 * op's defaults (Caffe2's FtrlOptimizer passes its own). ALPHA, when given,
 * replaces the argument alpha at run time (then the argument must be absent:
 * ValueError at creation, as Caffe2 enforced).
 *
 * RowWiseSparseAdagrad keeps one moment per row (MOMENT: (PARAM.shape[0],)):
 * for each k in order, i = INDICES.flat[k], g = row k of GRAD (R values) plus
 * wd * PARAM[i] (the row as it is then; g itself when wd is 0):
 *   h[i] += sum(g^2) / R;  PARAM[i] += g * (lr / (sqrt(h[i]) + epsilon))
 * (R == 1: PARAM[i] += lr * g / (sqrt(h[i]) + epsilon), Caffe2's rounding);
 * arguments epsilon (1e-5), weight_decay (0, finite) and counter_halflife
 * (-1): with it > 0 and the optional sixth input COUNTER (float32, one value
 * per row: RowWiseCounter's counts), wd = weight_decay * counter_halflife /
 * COUNTER[i] where COUNTER[i] > 0, else weight_decay (Caffe2's frequency
 * scaling of the decay).
 * RowWiseSparseAdam keeps MOMENT_1 of PARAM's shape and MOMENT_2 per row
 * ((PARAM.shape[0],)): for each k in order,
 *   v[i] = beta2 * v[i] + (1 - beta2) * sum(g^2) / R
 *   m[i] = beta1 * m[i] + (1 - beta1) * g;  PARAM[i] += lr * c * m[i] / (sqrt(v[i]) + epsilon)
 * with c = sqrt(1 - beta2^t) / (1 - beta1^t), t = ITER + 1 (in double,
 * rounded to float once, as our Adam); arguments beta1 (0.9), beta2 (0.999),
 * epsilon (1e-5). The optional fourth output EFFECTIVE_GRAD (GRAD's shape,
 * a new blob or GRAD's) gets row k = c * m[i] / (sqrt(v[i]) + epsilon) for
 * occurrence k, and then PARAM[i] += lr * that (Caffe2's rounding for this
 * form; without the output, (lr * c) * m[i] / ..., as Caffe2's).
 *
 * Differences from Caffe2:
 *  - shapes are checked exactly, before anything is written (ValueError
 *    naming the op, the blob and the shapes): N_Z must be VAR.shape + (2,),
 *    the row-wise moments 1-D of PARAM.shape[0] (Caffe2 compared sizes),
 *    GRAD INDICES.shape + PARAM.shape[1:] for the sparse ops, GRAD VAR's
 *    shape for Ftrl; LR and ALPHA float32 of one element;
 *  - every index is checked (IndexError) before anything is written (Caffe2
 *    checked only in debug builds); indices are int32 (Caffe2: int32/int64);
 *  - arguments are checked at creation: alpha finite and > 0, beta,
 *    lambda1, lambda2 finite and >= 0; epsilon finite and >= 0; beta1, beta2
 *    in [0, 1). ALPHA must be finite and > 0 at run time (Caffe2 divided by
 *    whatever it held);
 *  - a repeated index is updated once per occurrence, in order (as
 *    Caffe2's loops did); the sparse ops update in place (outputs must name
 *    the inputs' blobs: ValueError at creation, as Caffe2 enforced); Ftrl
 *    may write new blobs.
 * Kernels are plain loops over pointers; none keeps global state. Nothing
 * allocates except the resize of Ftrl's outputs when their shape changed;
 * op->state (owned by the op) holds the parsed arguments.
 */
#include "../core/rc_core.h"
#include "iter.h"
#include "sparse.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

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

/* Input i must be float32 of exactly the shape of input ref with one more
 * trailing dim of `last` (last < 0: no extra dim). */
static rc_status check_shape_plus(rc_op *op, int i, int ref, int64_t last, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *r = rc_in(op, ref), *t = rc_in(op, i);
    int ok = t->ndim == r->ndim + (last >= 0);
    for (int d = 0; ok && d < r->ndim; d++) ok = t->dims[d] == r->dims[d];
    if (ok && last >= 0) ok = t->dims[r->ndim] == last;
    if (!ok) {
        if (last >= 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have the shape of input %d blob "
                              "'%s' %s plus a last dim of %lld, got %s", i, rc_in_name(op, i), what, ref,
                              rc_in_name(op, ref), RC_SHAPE(r), (long long)last, RC_SHAPE(t));
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have the shape of input %d blob '%s' "
                          "%s, got %s", i, rc_in_name(op, i), what, ref, rc_in_name(op, ref), RC_SHAPE(r),
                          RC_SHAPE(t));
    }
    return RC_OK;
}

/* Input i (a row-wise moment) must be float32 of shape (X.shape[0],), X being input x (>= 1 dim, checked). */
static rc_status check_rowwise(rc_op *op, int i, int x, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *xt = rc_in(op, x), *t = rc_in(op, i);
    if (t->ndim != 1 || t->dims[0] != xt->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have shape (%lld,) "
                          "(one value per row of input %d blob '%s' %s), got %s", i, rc_in_name(op, i), what,
                          (long long)xt->dims[0], x, rc_in_name(op, x), RC_SHAPE(xt), RC_SHAPE(t));
    return RC_OK;
}

/* Input i: the iteration counter, int32 of one element, >= 0; *it = its value. */
static rc_status read_iter(rc_op *op, int i, int64_t *it, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    const char *name = rc_in_name(op, i);
    if (t->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (the iteration counter) holds no tensor (was it fed or computed?)", i,
                          name);
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

/* ================================================================ Ftrl */

typedef struct ftrl_state {
    float alpha_inv, beta, lambda1, lambda2;
} ftrl_state;

/* alpha_slot: the index of the optional ALPHA input (3 for Ftrl, 4 for SparseFtrl). */
static rc_status ftrl_parse(rc_op *op, int alpha_slot, rc_err *err)
{
    ftrl_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    float alpha;
    if (op->n_in > alpha_slot && rc_opdef_arg(&op->def, "alpha"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "alpha is given both as input %d blob '%s' and as an argument "
                          "(give one)", alpha_slot, rc_in_name(op, alpha_slot));
    if ((st = arg_at_least(op, "alpha", 0.005f, 0.0f, 1, &alpha, err))) return st;
    if ((st = arg_at_least(op, "beta", 1.0f, 0.0f, 0, &s->beta, err))) return st;
    if ((st = arg_at_least(op, "lambda1", 0.001f, 0.0f, 0, &s->lambda1, err))) return st;
    if ((st = arg_at_least(op, "lambda2", 0.001f, 0.0f, 0, &s->lambda2, err))) return st;
    s->alpha_inv = (float)(1.0 / (double)alpha);
    return RC_OK;
}

static rc_status ftrl_setup(rc_op *op, rc_err *err) { return ftrl_parse(op, 3, err); }

static rc_status sparse_ftrl_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1};
    rc_status st = ftrl_parse(op, 4, err);
    if (st) return st;
    return rc_sparse_require_inplace(op, pairs, 2, err);
}

/* *alpha_inv: the state's, or 1 / ALPHA when input `slot` is there (float32, one value, finite, > 0). */
static rc_status ftrl_alpha_inv(rc_op *op, int slot, float *alpha_inv, rc_err *err)
{
    *alpha_inv = ((const ftrl_state *)op->state)->alpha_inv;
    if (op->n_in <= slot) return RC_OK;
    float a;
    rc_status st = rc_sparse_read_scalar(op, slot, "alpha", &a, err);
    if (st) return st;
    if (!isfinite(a) || !(a > 0.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (alpha) must be finite and > 0, got %g", slot,
                          rc_in_name(op, slot), (double)a);
    *alpha_inv = (float)(1.0 / (double)a);
    return RC_OK;
}

/* w, g: (n,), nz: (n, 2) -> nw: (n,), nnz: (n, 2); FTRL-proximal per element (see the top).
 * nw may alias w and nnz nz: element i is read before it is written. */
static void ftrl_kernel(int64_t n, const float *w, const float *nz, const float *g, const ftrl_state *s,
                        float alpha_inv, float *nw, float *nnz)
{
    for (int64_t i = 0; i < n; i++) {
        const float wi = w[i], ni = nz[2 * i], zi = nz[2 * i + 1], gi = g[i];
        const float n1 = ni + gi * gi;
        const float sigma = (sqrtf(n1) - sqrtf(ni)) * alpha_inv;
        const float z1 = zi + gi - sigma * wi;
        nnz[2 * i] = n1;
        nnz[2 * i + 1] = z1;
        if (fabsf(z1) > s->lambda1) {
            const float sgn = z1 < 0.0f ? -1.0f : 1.0f;
            nw[i] = (s->lambda1 * sgn - z1) / ((s->beta + sqrtf(n1)) * alpha_inv + s->lambda2);
        } else {
            nw[i] = 0.0f;
        }
    }
}

/* Dtypes and shapes: (VAR, N_Z, GRAD[, ALPHA]); N_Z VAR.shape + (2,), GRAD VAR's shape, ALPHA one float32. */
static rc_status ftrl_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    if ((st = check_shape_plus(op, 1, 0, 2, "n and z", err))) return st;
    if ((st = check_shape_plus(op, 2, 0, -1, "the gradient", err))) return st;
    if (op->n_in > 3) return rc_sparse_check_scalar(op, 3, "alpha", err);
    return RC_OK;
}

static rc_status ftrl_run(rc_op *op, rc_err *err)
{
    rc_status st;
    float alpha_inv;
    if ((st = ftrl_check(op, err))) return st;
    if ((st = ftrl_alpha_inv(op, 3, &alpha_inv, err))) return st;
    const rc_tensor *w = rc_in(op, 0), *nz = rc_in(op, 1);
    int64_t dw[RC_MAX_DIMS], dnz[RC_MAX_DIMS];
    const int ndw = w->ndim, ndnz = nz->ndim;
    memcpy(dw, w->dims, sizeof dw);
    memcpy(dnz, nz->dims, sizeof dnz);
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, ndw, dw, err))
        return rc_op_fail(op, err, err->code, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (rc_tensor_resize(rc_out(op, 1), RC_F32, ndnz, dnz, err))
        return rc_op_fail(op, err, err->code, "output 1 blob '%s': %s", rc_out_name(op, 1), err->msg);
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n)
        ftrl_kernel(n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), op->state, alpha_inv,
                    rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)));
    return RC_OK;
}

/* ---------------------------------------------------------------- SparseFtrl */

/* Dtypes and shapes: (VAR, N_Z, INDICES, GRAD[, ALPHA]); GRAD INDICES.shape + VAR.shape[1:]. */
static rc_status sparse_ftrl_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_sparse_check_indices(op, 2, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 2, 3, "the gradient", err))) return st;
    if ((st = check_shape_plus(op, 1, 0, 2, "n and z", err))) return st;
    if (op->n_in > 4) return rc_sparse_check_scalar(op, 4, "alpha", err);
    return RC_OK;
}

/* In place: for each k in order, row INDICES[k] of VAR and N_Z gets Ftrl's step with row k of GRAD. */
static rc_status sparse_ftrl_run(rc_op *op, rc_err *err)
{
    rc_status st;
    float alpha_inv;
    if ((st = sparse_ftrl_check(op, err))) return st;
    if ((st = ftrl_alpha_inv(op, 4, &alpha_inv, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 2, 0, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 2)), R = rc_dims_prod(w, 1, w->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 2));
    const float *g = rc_f32(rc_in(op, 3));
    float *wd = rc_f32(rc_out(op, 0)), *nz = rc_f32(rc_out(op, 1));
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        ftrl_kernel(R, wd + i, nz + 2 * i, g + k * R, op->state, alpha_inv, wd + i, nz + 2 * i);
    }
    return RC_OK;
}

/* ================================================================ RowWiseSparseAdagrad */

typedef struct rowwise_adagrad_state {
    float epsilon, weight_decay;
    int64_t counter_halflife;
} rowwise_adagrad_state;

static rc_status rowwise_adagrad_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1};
    rowwise_adagrad_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st = arg_at_least(op, "epsilon", 1e-5f, 0.0f, 0, &s->epsilon, err);
    if (st) return st;
    if ((st = rc_arg_f(&op->def, "weight_decay", 0.0f, &s->weight_decay, err))) return st;
    if (!isfinite(s->weight_decay))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument weight_decay must be finite, got %g",
                          (double)s->weight_decay);
    if ((st = rc_arg_i(&op->def, "counter_halflife", -1, &s->counter_halflife, err))) return st;
    return rc_sparse_require_inplace(op, pairs, 2, err);
}

/* Dtypes and shapes: (PARAM, MOMENT, INDICES, GRAD, LR[, COUNTER]); MOMENT and COUNTER (PARAM.shape[0],). */
static rc_status rowwise_adagrad_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_sparse_check_indices(op, 2, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 2, 3, "the gradient", err))) return st;
    if ((st = check_rowwise(op, 1, 0, "the row-wise moment", err))) return st;
    if (op->n_in > 5 && (st = check_rowwise(op, 5, 0, "the row-wise update counts", err))) return st;
    return rc_sparse_check_scalar(op, 4, "the learning rate", err);
}

/* w, g: (R,), *h: the row's moment, wd: the row's weight decay -> in place (see the top). */
static void rowwise_adagrad_row(int64_t R, float *w, float *h, const float *g, float lr, float eps, float wd)
{
    if (R == 1) {
        const float gi = wd != 0.0f ? fmaf(wd, w[0], g[0]) : g[0];
        const float hi = *h + gi * gi;
        *h = hi;
        w[0] = w[0] + lr * gi / (sqrtf(hi) + eps);
        return;
    }
    float hs = 0.0f;
    for (int64_t j = 0; j < R; j++) {
        const float gj = wd != 0.0f ? fmaf(wd, w[j], g[j]) : g[j];
        hs += gj * gj;
    }
    const float hi = *h + hs / (float)R;
    *h = hi;
    const float step = lr / (sqrtf(hi) + eps);
    for (int64_t j = 0; j < R; j++) {
        const float gj = wd != 0.0f ? fmaf(wd, w[j], g[j]) : g[j];
        w[j] = w[j] + gj * step;
    }
}

static rc_status rowwise_adagrad_run(rc_op *op, rc_err *err)
{
    const rowwise_adagrad_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    if ((st = rowwise_adagrad_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 4, "the learning rate", &lr, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 2, 0, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 2)), R = rc_dims_prod(w, 1, w->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 2));
    const float *g = rc_f32(rc_in(op, 3));
    const float *count = op->n_in > 5 && s->counter_halflife > 0 ? rc_f32(rc_in(op, 5)) : NULL;
    float *wo = rc_f32(rc_out(op, 0)), *h = rc_f32(rc_out(op, 1));
    for (int64_t k = 0; k < K; k++) {
        float wd = s->weight_decay;
        if (count && count[idx[k]] > 0.0f)
            wd = (float)((double)wd * (double)s->counter_halflife / (double)count[idx[k]]);
        rowwise_adagrad_row(R, wo + (int64_t)idx[k] * R, h + idx[k], g + k * R, lr, s->epsilon, wd);
    }
    return RC_OK;
}

/* ================================================================ RowWiseSparseAdam */

typedef struct rowwise_adam_state {
    float beta1, beta2, epsilon;
} rowwise_adam_state;

static rc_status rowwise_adam_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1, 2, 2};
    rowwise_adam_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    if ((st = rc_arg_f(&op->def, "beta1", 0.9f, &s->beta1, err))) return st;
    if ((st = rc_arg_f(&op->def, "beta2", 0.999f, &s->beta2, err))) return st;
    if (!(s->beta1 >= 0.0f && s->beta1 < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta1 must be in [0, 1), got %g", (double)s->beta1);
    if (!(s->beta2 >= 0.0f && s->beta2 < 1.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument beta2 must be in [0, 1), got %g", (double)s->beta2);
    if ((st = arg_at_least(op, "epsilon", 1e-5f, 0.0f, 0, &s->epsilon, err))) return st;
    return rc_sparse_require_inplace(op, pairs, 3, err);
}

/* Dtypes and shapes: (PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER); MOMENT_1 PARAM's shape,
 * MOMENT_2 (PARAM.shape[0],). ITER is checked at run time. */
static rc_status rowwise_adam_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_sparse_check_indices(op, 3, err))) return st;
    if ((st = rc_sparse_check_rows(op, 0, 3, 4, "the gradient", err))) return st;
    if ((st = check_shape_plus(op, 1, 0, -1, "the first moment", err))) return st;
    if ((st = check_rowwise(op, 2, 0, "the row-wise moment", err))) return st;
    return rc_sparse_check_scalar(op, 5, "the learning rate", err);
}

/* As rowwise_adam_row, with the effective gradient: e = correction * m / (sqrt(v) + epsilon) into ng (R
 * values; may alias g, read first) and w += lr * e (Caffe2's rounding for this form). */
static void rowwise_adam_row_eg(int64_t R, float *w, float *m, float *v, const float *g, float lr,
                                float correction, const rowwise_adam_state *s, float *ng)
{
    float sum = 0.0f;
    for (int64_t j = 0; j < R; j++) sum += g[j] * g[j];
    const float vi = *v * s->beta2 + (sum / (float)R) * (1.0f - s->beta2);
    *v = vi;
    const float denom = sqrtf(vi) + s->epsilon;
    for (int64_t j = 0; j < R; j++) {
        const float mi = m[j] * s->beta1 + g[j] * (1.0f - s->beta1);
        m[j] = mi;
        const float e = correction * mi / denom;
        ng[j] = e;
        w[j] = w[j] + lr * e;
    }
}

/* w, m, g: (R,), *v: the row's second moment -> in place; step = lr * correction (see the top). */
static void rowwise_adam_row(int64_t R, float *w, float *m, float *v, const float *g, float step,
                             const rowwise_adam_state *s)
{
    float sum = 0.0f;
    for (int64_t j = 0; j < R; j++) sum += g[j] * g[j];
    const float vi = *v * s->beta2 + (sum / (float)R) * (1.0f - s->beta2);
    *v = vi;
    const float denom = sqrtf(vi) + s->epsilon;
    for (int64_t j = 0; j < R; j++) {
        const float mi = m[j] * s->beta1 + g[j] * (1.0f - s->beta1);
        m[j] = mi;
        w[j] = w[j] + step * mi / denom;
    }
}

static rc_status rowwise_adam_run(rc_op *op, rc_err *err)
{
    const rowwise_adam_state *s = op->state;
    rc_status st;
    float lr = 0.0f;
    int64_t it = 0;
    if ((st = rowwise_adam_check(op, err))) return st;
    if ((st = rc_sparse_read_scalar(op, 5, "the learning rate", &lr, err))) return st;
    if ((st = read_iter(op, 6, &it, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 3, 0, err))) return st;
    const double t = (double)it + 1.0;
    const float correction =
        (float)(sqrt(1.0 - pow((double)s->beta2, t)) / (1.0 - pow((double)s->beta1, t)));
    const float step = lr * correction;
    if (op->n_out == 4) {
        const rc_tensor *gt = rc_in(op, 4);
        int64_t dims[RC_MAX_DIMS];
        memcpy(dims, gt->dims, sizeof dims);
        if (rc_tensor_resize(rc_out(op, 3), RC_F32, gt->ndim, dims, err))
            return rc_op_fail(op, err, err->code, "output 3 blob '%s': %s", rc_out_name(op, 3), err->msg);
    }
    const rc_tensor *w = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 3)), R = rc_dims_prod(w, 1, w->ndim);
    if (!K || !R) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 3));
    const float *g = rc_f32(rc_in(op, 4));
    float *wd = rc_f32(rc_out(op, 0)), *m1 = rc_f32(rc_out(op, 1)), *m2 = rc_f32(rc_out(op, 2));
    float *ng = op->n_out == 4 ? rc_f32(rc_out(op, 3)) : NULL;
    for (int64_t k = 0; k < K; k++) {
        const int64_t i = (int64_t)idx[k] * R;
        if (ng)
            rowwise_adam_row_eg(R, wd + i, m1 + i, m2 + idx[k], g + k * R, lr, correction, s, ng + k * R);
        else
            rowwise_adam_row(R, wd + i, m1 + i, m2 + idx[k], g + k * R, step, s);
    }
    return RC_OK;
}

/* ================================================================ table */

/* var/param and the state may be updated in place (input i -> output i, i < 2). */
/* ================================================================ RowWiseCounter
 *
 * RowWiseCounter(PREV_ITER, COUNTER, INDICES, ITER) -> (PREV_ITER, COUNTER), in place: a decayed count of
 * the updates of each row. With t = ITER's value and rho = ln(2) / counter_halflife, for each k in order,
 * i = INDICES.flat[k]:
 *   COUNTER[i] = 1 + exp(-max(0, t - PREV_ITER[i]) * rho) * COUNTER[i];  PREV_ITER[i] = max(t, PREV_ITER[i])
 * (in double, COUNTER rounded to float32 once per update). PREV_ITER int32 (Caffe2: int64), COUNTER float32
 * (Caffe2: double), of any shapes with the same number of elements N (as Caffe2); INDICES int32 of any
 * shape, each in [0, N) (IndexError before anything is written; Caffe2 let an index equal to N through);
 * ITER int32 of one element (Caffe2: int64). counter_halflife (int, default -1): <= 0 turns the op off
 * (nothing is written, as Caffe2; the inputs are still checked). Outputs must be the inputs' blobs
 * (ValueError at creation; Caffe2's EnforceOneToOneInplace). No gradient. */

typedef struct rowwise_counter_state {
    double neg_log_rho; /* ln(2) / counter_halflife; 0 when the op is off */
    int on;
} rowwise_counter_state;

static rc_status rowwise_counter_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0, 1, 1};
    rowwise_counter_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    int64_t h = -1;
    rc_status st = rc_arg_i(&op->def, "counter_halflife", -1, &h, err);
    if (st) return st;
    if (h > 0) {
        s->on = 1;
        s->neg_log_rho = log(2.0) / (double)h;
    }
    return rc_sparse_require_inplace(op, pairs, 2, err);
}

/* Dtypes and sizes: PREV_ITER int32, COUNTER float32 with as many elements, INDICES int32, ITER one int32. */
static rc_status rowwise_counter_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_I32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    if ((st = rc_sparse_check_indices(op, 2, err))) return st;
    if ((st = rc_iter_check_counter(op, "input", 3, rc_in_name(op, 3), rc_in(op, 3), err))) return st;
    if (rc_tensor_numel(rc_in(op, 0)) != rc_tensor_numel(rc_in(op, 1)))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (the last update iterations) %s and input 1 "
                          "blob '%s' (the counters) %s must have the same number of elements", rc_in_name(op, 0),
                          RC_SHAPE(rc_in(op, 0)), rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)));
    return RC_OK;
}

static rc_status rowwise_counter_run(rc_op *op, rc_err *err)
{
    const rowwise_counter_state *s = op->state;
    rc_status st;
    if ((st = rowwise_counter_check(op, err))) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if ((st = rc_sparse_check_range(op, 2, n, "the number of counters", err))) return st;
    const int64_t K = rc_tensor_numel(rc_in(op, 2));
    if (!s->on || !K) return RC_OK;
    const int32_t *idx = rc_i32(rc_in(op, 2));
    const int64_t t = rc_i32(rc_in(op, 3))[0];
    int32_t *prev = rc_i32(rc_out(op, 0));
    float *cnt = rc_f32(rc_out(op, 1));
    for (int64_t k = 0; k < K; k++) {
        const int32_t i = idx[k];
        const int64_t delta = t > prev[i] ? t - prev[i] : 0;
        cnt[i] = (float)(1.0 + exp(-(double)delta * s->neg_log_rho) * (double)cnt[i]);
        if (t > prev[i]) prev[i] = (int32_t)t;
    }
    return RC_OK;
}

/* ================================================================ SparseNormalize
 *
 * SparseNormalize(PARAM, INDICES[, GRAD]) -> PARAM, in place: for each k in order, row i = INDICES.flat[k] of
 * PARAM (float32, ndim >= 1; a row is PARAM.shape[1:]) with L2 norm n (in double) is scaled by
 * norm / (n + 1e-12) (in double, rounded to float32 once), unless use_max_norm (default 1) and n <= norm: then
 * it is left as it is. Arguments norm (default 1; finite and >= 0, ValueError at creation; Caffe2 checked
 * nothing) and use_max_norm. INDICES int32 of any shape, each in [0, PARAM.shape[0]) (IndexError before
 * anything is written; Caffe2 did not check). GRAD is accepted and not read, as in Caffe2's later versions
 * (the oldest took the row size from it). A repeated index normalizes its row again. The output must be
 * PARAM's blob (ValueError at creation; Caffe2's EnforceOneToOneInplace). No gradient. */

typedef struct sparse_normalize_state {
    double norm;
    int use_max_norm;
} sparse_normalize_state;

static rc_status sparse_normalize_setup(rc_op *op, rc_err *err)
{
    static const int pairs[] = {0, 0};
    sparse_normalize_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    float norm = 1.0f;
    int64_t use_max = 1;
    rc_status st = arg_at_least(op, "norm", 1.0f, 0.0f, 0, &norm, err);
    if (st || (st = rc_arg_i(&op->def, "use_max_norm", 1, &use_max, err))) return st;
    s->norm = norm;
    s->use_max_norm = use_max != 0;
    return rc_sparse_require_inplace(op, pairs, 1, err);
}

/* PARAM float32 with ndim >= 1, INDICES int32. */
static rc_status sparse_normalize_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_ndim(op, 0, 1, RC_MAX_DIMS, err))) return st;
    return rc_sparse_check_indices(op, 1, err);
}

static rc_status sparse_normalize_run(rc_op *op, rc_err *err)
{
    const sparse_normalize_state *s = op->state;
    rc_status st;
    if ((st = sparse_normalize_check(op, err))) return st;
    if ((st = rc_sparse_check_range_of(op, 1, 0, err))) return st;
    const rc_tensor *w = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(rc_in(op, 1)), R = rc_dims_prod(w, 1, w->ndim);
    const int32_t *idx = rc_i32(rc_in(op, 1));
    float *wd = rc_f32(rc_out(op, 0));
    for (int64_t k = 0; k < K && R; k++) {
        float *row = wd + (int64_t)idx[k] * R;
        double ss = 0.0;
        for (int64_t j = 0; j < R; j++) ss += (double)row[j] * row[j];
        const double n = sqrt(ss);
        if (s->use_max_norm && n <= s->norm) continue;
        const float scale = (float)(s->norm / (n + 1e-12));
        for (int64_t j = 0; j < R; j++) row[j] *= scale;
    }
    return RC_OK;
}

static int inplace_two(int in, int out) { return in == out && in < 2; }

/* RowWiseSparseAdam: param and the moments in place (input i -> output i, i < 3); the effective gradient may
 * replace GRAD (input 4 -> output 3). */
static int inplace_rowwise_adam(int in, int out) { return (in == out && in < 3) || (in == 4 && out == 3); }

const rc_op_schema rc_ops_optim_rowwise[] = {
    {"Ftrl", 3, 4, 2, 2, inplace_two, ftrl_setup, ftrl_run, free,
     "(var, n_z (var.shape + (2,)), grad[, alpha]) -> (var, n_z): FTRL-proximal step per element; arguments "
     "alpha, beta, lambda1, lambda2", ftrl_check},
    {"SparseFtrl", 4, 5, 2, 2, inplace_two, sparse_ftrl_setup, sparse_ftrl_run, free,
     "(var, n_z, indices, grad[, alpha]) -> (var, n_z) in place: Ftrl's step on rows indices[k] with row k of "
     "grad (shape indices.shape + var.shape[1:]), k in order; arguments alpha, beta, lambda1, lambda2",
     sparse_ftrl_check},
    {"RowWiseSparseAdagrad", 5, 6, 2, 2, inplace_two, rowwise_adagrad_setup, rowwise_adagrad_run, free,
     "(param, moment (rows,), indices, grad, lr[, counter (rows,)]) -> (param, moment) in place: moment[i] += "
     "mean(g^2); param[i] += lr*g/(sqrt(moment[i])+epsilon) for i = indices[k], g = grad row k + wd*param[i]; "
     "arguments epsilon, weight_decay, counter_halflife (wd = weight_decay*counter_halflife/counter[i])",
     rowwise_adagrad_check},
    {"RowWiseSparseAdam", 7, 7, 3, 4, inplace_rowwise_adam, rowwise_adam_setup, rowwise_adam_run, free,
     "(param, moment_1, moment_2 (rows,), indices, grad, lr, iter) -> (param, moment_1, moment_2[, "
     "effective_grad]) in place: Adam's step on rows indices[k] with one second moment per row (mean of g^2); "
     "arguments beta1, beta2, epsilon", rowwise_adam_check},
    {"RowWiseCounter", 4, 4, 2, 2, inplace_two, rowwise_counter_setup, rowwise_counter_run, free,
     "(prev_iter int32, counter, indices, iter (int32, one)) -> (prev_iter, counter) in place: counter[i] = "
     "1 + exp(-max(0, iter - prev_iter[i]) * ln2 / counter_halflife) * counter[i], prev_iter[i] = max(iter, "
     "prev_iter[i]) for i = indices[k]; counter_halflife <= 0: off", rowwise_counter_check},
    {"SparseNormalize", 2, 3, 1, 1, rc_inplace_first, sparse_normalize_setup, sparse_normalize_run, free,
     "(param, indices[, grad (not read)]) -> param in place: row i = indices[k] scaled to L2 norm `norm` "
     "(use_max_norm, default 1: only rows whose norm exceeds it)", sparse_normalize_check},
    {0},
};
