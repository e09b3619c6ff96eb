/* ops/unary.c -- elementwise ops of Caffe2's clip_op (and ensure_clipped_op, sgd/clip_tensor_op), abs_op, sqrt_op,
 * leaky_relu_op, elu_op, softsign_op, stop_gradient, negate_gradient_op,
 * relu_n_op, minmax_ops (Min) and mean_op, with their gradient ops.
 *
 *   Clip(X) -> Y                  args min=-inf, max=+inf: Y = min(max(X, min), max)
 *   ClipGradient(Y, dY) -> dX     dX = dY where min < Y < max, else 0
 *   EnsureClipped(P[, I, G]) -> P Clip with its arguments; with int32 indices I (G: their gradient rows,
 *                                 for the shape) only the rows P[I] are clipped, in place
 *   ClipTensorByScaling(X, v[, a]) -> Y  Y = X t / v when v > t = threshold * a, else X (no gradient)
 *   Abs(X) -> Y                   Y = |X|
 *   AbsGradient(X, dY) -> dX      dX = dY sign(X) (0 where X is 0 or NaN)
 *   Sqrt(X) -> Y                  Y = sqrt(X) (NaN for X < 0, as NumPy); its gradient is
 *                                 Scale(dY, 0.5) then Div(., Y), as Caffe2's maker
 *   LeakyRelu(X) -> Y             arg alpha=0.01: Y = X > 0 ? X : alpha X
 *   LeakyReluGradient(Y, dY)      dX = Y > 0 ? dY : alpha dY (alpha >= 0: see below)
 *   Elu(X) -> Y                   arg alpha=1: Y = X > 0 ? X : alpha (exp(X) - 1)
 *   EluGradient(Y, dY) -> dX      dX = Y > 0 ? dY : dY (Y + alpha) (alpha >= 0)
 *   Softsign(X) -> Y              Y = X / (1 + |X|) (+-1 at +-inf; Caffe2: NaN)
 *   SoftsignGradient(X, dY)       dX = dY / (1 + |X|)^2
 *   StopGradient(X) -> Y          Y = X (any dtype; in place: nothing to do); no gradient
 *   NegateGradient(X) -> Y        Y = X, as StopGradient; its gradient maker gives Negative(dY)
 *   ReluN(X) -> Y                 arg n=6 (> 0): Y = min(max(X, 0), n): Clip's kernels, lo = 0, hi = n
 *   ReluNGradient(Y, dY) -> dX    dX = dY where 0 < Y < n, else 0 (ClipGradient's kernel)
 *   Min(X0, ...) -> Y             elementwise minimum, one shape, NaN propagates (np.minimum)
 *   MinGradient(Y, dY, X0, ...)   -> (dX0, ...): dXi = dY where Xi == Y, else 0
 *   Mean(X0, ...) -> Y            (X0 + X1 + ...) / n, added in double in input order; the inputs
 *                                 broadcast numpy-style (as newer Caffe2), Y over an input of Y's shape
 *   MeanGradient(dY[, X0, ..])    -> (dX0, ..): dXi = dY / n, n the number of outputs, summed (in double)
 *                                 over the dims where Xi was broadcast when the Xi are given (their
 *                                 shapes only); dX0 may be dY (in place) when X0 has dY's shape
 *
 * All float32 (StopGradient, NegateGradient: any dtype). The forward ops run in place; the
 * gradient ops may write dX over dY. What differs from Caffe2:
 *  - Clip's unset bounds are -inf / +inf (Caffe2: the lowest / largest float,
 *    so Clip without arguments turned -inf into -3.4e38); min > max is a
 *    ValueError (Caffe2 gave max everywhere). NaN stays NaN; ClipGradient
 *    gives 0 where Y is NaN.
 *  - LeakyReluGradient and EluGradient read only Y, as Caffe2's; with alpha < 0
 *    the sign of X cannot be told from Y, and Caffe2 gave a wrong gradient for
 *    every X < 0. Here they fail with a ValueError for alpha < 0 (the forward
 *    ops accept any alpha).
 *  - AbsGradient gives 0 for NaN X (Caffe2: -dY).
 *  - Min with one input copies it; MinGradient gives dY to every input equal
 *    to Y (ties all get it), as our MaxGradient and Caffe2's.
 *
 * No global state; the only allocations are the pointer tables of Min, Mean (with
 * its offset and stride tables) and MinGradient, sized once in setup (owned by op->state).
 */
#include "../core/rc_core.h"
#include "../kernels/math_kernels.h"
#include "sparse.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

typedef struct unary_state {
    float lo, hi;       /* Clip: min, max; ReluN: 0, n; LeakyRelu / Elu: lo = alpha */
    const float **x;    /* Min, Mean, MinGradient: the inputs' data (owned table) */
    float **dx;         /* MinGradient, MeanGradient: the outputs' data (owned table) */
    int64_t *off;       /* Mean: each input's element offset while walking a broadcast (owned table) */
    int64_t (*str)[RC_MAX_DIMS]; /* Mean: each input's strides over the broadcast shape (owned table) */
} unary_state;

static void unary_state_free(void *p)
{
    unary_state *s = p;
    if (!s) return;
    free(s->x);
    free(s->dx);
    free(s->off);
    free(s->str);
    free(s);
}

/* op->state = a zeroed state (owned by the op) with tables of nx / ndx entries. */
static rc_status state_new(rc_op *op, int nx, int ndx, unary_state **out, rc_err *err)
{
    unary_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    if (nx) s->x = calloc((size_t)nx, sizeof *s->x);
    if (ndx) s->dx = calloc((size_t)ndx, sizeof *s->dx);
    if ((nx && !s->x) || (ndx && !s->dx)) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    *out = s;
    return RC_OK;
}

static rc_status resize_like(rc_op *op, int o, const rc_tensor *like, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, like->dims, sizeof dims);
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_F32, like->ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* Inputs first..n_in-1 float32, each of input first's shape. */
static rc_status check_f32_same(rc_op *op, int first, rc_err *err)
{
    rc_status st;
    for (int i = first; i < op->n_in; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        if (i > first && !rc_tensor_same_shape(rc_in(op, i), rc_in(op, first)))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' of shape %s must have the shape of input %d blob '%s' %s", i,
                              rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), first, rc_in_name(op, first),
                              RC_SHAPE(rc_in(op, first)));
    }
    return RC_OK;
}

static rc_status check_all_f32(rc_op *op, rc_err *err) { return check_f32_same(op, 0, err); }

static int inplace_dy(int in, int out) { return in == 1 && out == 0; }
static int inplace_00(int in, int out) { return in == 0 && out == 0; }

/* ================================================================ arguments */

static rc_status clip_setup(rc_op *op, rc_err *err)
{
    unary_state *s = NULL;
    rc_status st = state_new(op, 0, 0, &s, err);
    if (!st) st = rc_arg_f(&op->def, "min", -INFINITY, &s->lo, err);
    if (!st) st = rc_arg_f(&op->def, "max", INFINITY, &s->hi, err);
    if (st) return st;
    if (isnan(s->lo) || isnan(s->hi) || s->lo > s->hi)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'min' (%g) must be <= argument 'max' (%g)", (double)s->lo,
                          (double)s->hi);
    return RC_OK;
}

/* A state with lo = 0 and hi = float argument `name` (dflt when absent), which must be > 0. */
static rc_status positive_hi_setup(rc_op *op, const char *name, float dflt, rc_err *err)
{
    unary_state *s = NULL;
    rc_status st = state_new(op, 0, 0, &s, err);
    if (!st) st = rc_arg_f(&op->def, name, dflt, &s->hi, err);
    if (st) return st;
    if (!(s->hi > 0)) return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' (%g) must be > 0", name, (double)s->hi);
    s->lo = 0.0f;
    return RC_OK;
}

/* ReluN is Clip to [0, n]: Clip's kernels with lo = 0, hi = n (n > 0, as Caffe2's). */
static rc_status relu_n_setup(rc_op *op, rc_err *err) { return positive_hi_setup(op, "n", 6.0f, err); }

static rc_status alpha_setup_common(rc_op *op, float dflt, int grad, rc_err *err)
{
    unary_state *s = NULL;
    rc_status st = state_new(op, 0, 0, &s, err);
    if (!st) st = rc_arg_f(&op->def, "alpha", dflt, &s->lo, err);
    if (st) return st;
    if (isnan(s->lo))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'alpha' is NaN");
    if (grad && s->lo < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument 'alpha' is %g: the gradient reads Y only, which does not tell the sign of X "
                          "when alpha < 0 (Caffe2 gave a wrong gradient there)", (double)s->lo);
    return RC_OK;
}

static rc_status leaky_setup(rc_op *op, rc_err *err) { return alpha_setup_common(op, 0.01f, 0, err); }
static rc_status leaky_grad_setup(rc_op *op, rc_err *err) { return alpha_setup_common(op, 0.01f, 1, err); }
static rc_status elu_setup(rc_op *op, rc_err *err) { return alpha_setup_common(op, 1.0f, 0, err); }
static rc_status elu_grad_setup(rc_op *op, rc_err *err) { return alpha_setup_common(op, 1.0f, 1, err); }

/* ================================================================ forward elementwise */

typedef void (*fwd_kernel)(const unary_state *s, int64_t n, const float *x, float *y);
typedef void (*bwd_kernel)(const unary_state *s, int64_t n, const float *a, const float *dy, float *dx);

/* x [n] -> y [n]; y may be x. */
static void k_clip(const unary_state *s, int64_t n, const float *x, float *y)
{
    const float lo = s->lo, hi = s->hi;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = v < lo ? lo : v > hi ? hi : v; /* NaN: both false, stays NaN */
    }
}

static void k_abs(const unary_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = fabsf(x[i]);
}

static void k_sqrt(const unary_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
}

static void k_leaky(const unary_state *s, int64_t n, const float *x, float *y)
{
    const float a = s->lo;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : a * x[i];
}

static void k_elu(const unary_state *s, int64_t n, const float *x, float *y)
{
    const float a = s->lo;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : a * expm1f(x[i]);
}

static void k_softsign(const unary_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = isinf(x[i]) ? copysignf(1.0f, x[i]) : x[i] / (1.0f + fabsf(x[i]));
}

/* a [n] (Y or X), dy [n] -> dx [n]; dx may be dy. */
static void k_clip_grad(const unary_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    const float lo = s->lo, hi = s->hi;
    for (int64_t i = 0; i < n; i++) dx[i] = (y[i] > lo && y[i] < hi) ? dy[i] : 0.f;
}

static void k_abs_grad(const unary_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0 ? dy[i] : x[i] < 0 ? -dy[i] : 0.f;
}

static void k_leaky_grad(const unary_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    const float a = s->lo;
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : a * dy[i];
}

static void k_elu_grad(const unary_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    const float a = s->lo;
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : dy[i] * (y[i] + a);
}

static void k_softsign_grad(const unary_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) {
        const float d = 1.0f + fabsf(x[i]);
        dx[i] = dy[i] / (d * d);
    }
}

/* X float32 -> Y of X's shape. */
static rc_status fwd_run(rc_op *op, fwd_kernel k, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = resize_like(op, 0, rc_in(op, 0), err);
    if (st) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n) k(op->state, n, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* (Y or X, dY) float32 of one shape -> dX of that shape. */
static rc_status bwd_run(rc_op *op, bwd_kernel k, rc_err *err)
{
    rc_status st = check_all_f32(op, err);
    if (!st) st = resize_like(op, 0, rc_in(op, 1), err);
    if (st) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n) k(op->state, n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status clip_run(rc_op *op, rc_err *err) { return fwd_run(op, k_clip, err); }
static rc_status abs_run(rc_op *op, rc_err *err) { return fwd_run(op, k_abs, err); }
static rc_status sqrt_run(rc_op *op, rc_err *err) { return fwd_run(op, k_sqrt, err); }
static rc_status leaky_run(rc_op *op, rc_err *err) { return fwd_run(op, k_leaky, err); }
static rc_status elu_run(rc_op *op, rc_err *err) { return fwd_run(op, k_elu, err); }
static rc_status softsign_run(rc_op *op, rc_err *err) { return fwd_run(op, k_softsign, err); }
static rc_status clip_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_clip_grad, err); }
static rc_status abs_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_abs_grad, err); }
static rc_status leaky_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_leaky_grad, err); }
static rc_status elu_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_elu_grad, err); }
static rc_status softsign_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_softsign_grad, err); }

static rc_status check_x_f32(rc_op *op, rc_err *err) { return rc_check_input(op, 0, RC_F32, err); }

/* ================================================================ EnsureClipped, ClipTensorByScaling */

/* EnsureClipped(param[, indices, grad]): Clip's arguments and kernel. With indices (sparse: the rows
 * to clip; grad has shape indices.shape + param.shape[1:]) the output must be param, in place. */
static rc_status ensure_clipped_setup(rc_op *op, rc_err *err)
{
    rc_status st = clip_setup(op, err);
    if (st) return st;
    if (op->n_in == 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes param alone or (param, indices, grad), got 2 inputs");
    static const int pairs[2] = {0, 0};
    return op->n_in == 3 ? rc_sparse_require_inplace(op, pairs, 1, err) : RC_OK;
}

static rc_status ensure_clipped_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st || op->n_in == 1) return st;
    if ((st = rc_sparse_check_indices(op, 1, err))) return st;
    return rc_sparse_check_rows(op, 0, 1, 2, "the gradient", err);
}

static rc_status ensure_clipped_run(rc_op *op, rc_err *err)
{
    if (op->n_in == 1) return clip_run(op, err);
    rc_status st = ensure_clipped_check(op, err);
    if (!st) st = rc_sparse_check_range_of(op, 1, 0, err);
    if (st) return st;
    /* param[idx] = clip(param[idx]) for each index (in place; a repeated index clips twice: the same) */
    rc_tensor *x = rc_in(op, 0);
    const int64_t row = rc_dims_prod(x, 1, x->ndim), k = rc_tensor_numel(rc_in(op, 1));
    const int32_t *idx = rc_i32(rc_in(op, 1));
    float *p = rc_f32(x);
    for (int64_t i = 0; i < k && row; i++) {
        float *r = p + (int64_t)idx[i] * row;
        k_clip(op->state, row, r, r);
    }
    return RC_OK;
}

/* ClipTensorByScaling(X, val[, additional_threshold]) -> Y: the threshold (> 0) in unary_state.hi. */
static rc_status clip_scaling_setup(rc_op *op, rc_err *err) { return positive_hi_setup(op, "threshold", 0.0f, err); }

static rc_status clip_scaling_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = rc_sparse_check_scalar(op, 1, "the value", err);
    if (!st && op->n_in == 3) st = rc_sparse_check_scalar(op, 2, "additional_threshold", err);
    return st;
}

static rc_status clip_scaling_run(rc_op *op, rc_err *err)
{
    const unary_state *s = op->state;
    float val, add = 1.0f;
    rc_status st = clip_scaling_check(op, err);
    if (!st) st = rc_sparse_read_scalar(op, 1, "the value", &val, err);
    if (!st && op->n_in == 3) st = rc_sparse_read_scalar(op, 2, "additional_threshold", &add, err);
    if (st) return st;
    if (!(add > 0))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (additional_threshold) must be > 0, got %g",
                          rc_in_name(op, 2), (double)add);
    const rc_tensor *x = rc_in(op, 0);
    if ((st = resize_like(op, 0, x, err))) return st;
    const int64_t n = rc_tensor_numel(x);
    const float thr = s->hi * add, *xd = rc_f32(x);
    float *y = rc_f32(rc_out(op, 0));
    /* Y = X * (thr / val) when val > thr (NaN val: not greater, as Caffe2), else X */
    const float ratio = val > thr ? thr / val : 1.0f;
    for (int64_t i = 0; i < n; i++) y[i] = val > thr ? xd[i] * ratio : xd[i];
    return RC_OK;
}

/* ================================================================ StopGradient */

/* X (any dtype) -> Y = X; in place nothing is written. */
static rc_status need_tensor(rc_op *op, int i, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->dtype == RC_UNDEF || !t->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", i,
                          rc_in_name(op, i));
    return RC_OK;
}

static rc_status stop_gradient_check(rc_op *op, rc_err *err) { return need_tensor(op, 0, err); }

static rc_status stop_gradient_run(rc_op *op, rc_err *err)
{
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    if (op->in[0] == op->out[0]) return RC_OK;
    if ((st = rc_tensor_copy(rc_out(op, 0), rc_in(op, 0), err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    return RC_OK;
}

/* ================================================================ Min, Mean */

static rc_status min_setup(rc_op *op, rc_err *err)
{
    unary_state *s = NULL;
    return state_new(op, op->n_in, 0, &s, err);
}

static rc_status mean_setup(rc_op *op, rc_err *err)
{
    unary_state *s = NULL;
    rc_status st = state_new(op, op->n_in, 0, &s, err);
    if (st) return st;
    s->off = calloc((size_t)op->n_in, sizeof *s->off);
    s->str = calloc((size_t)op->n_in, sizeof *s->str);
    if (!s->off || !s->str) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    return RC_OK;
}

#define CHUNK 256

/* X0..Xn-1 [m] -> Y [m] = elementwise minimum; Y may be any Xi (block by block through a buffer).
 * np.minimum's rule: a when a < b or a is NaN, else b. */
static rc_status min_run(rc_op *op, rc_err *err)
{
    unary_state *s = op->state;
    rc_status st = check_all_f32(op, err);
    if (!st) st = resize_like(op, 0, rc_in(op, 0), err);
    if (st) return st;
    const int64_t m = rc_tensor_numel(rc_in(op, 0));
    if (!m) return RC_OK;
    for (int i = 0; i < op->n_in; i++) s->x[i] = rc_f32(rc_in(op, i));
    float *y = rc_f32(rc_out(op, 0));
    float buf[CHUNK];
    for (int64_t c0 = 0; c0 < m; c0 += CHUNK) {
        const int64_t len = m - c0 < CHUNK ? m - c0 : CHUNK;
        memcpy(buf, s->x[0] + c0, (size_t)len * sizeof *buf);
        for (int j = 1; j < op->n_in; j++) {
            const float *xj = s->x[j] + c0;
            for (int64_t i = 0; i < len; i++) buf[i] = (buf[i] < xj[i] || buf[i] != buf[i]) ? buf[i] : xj[i];
        }
        memcpy(y + c0, buf, (size_t)len * sizeof *buf);
    }
    return RC_OK;
}

/* Whether inputs first..n_in-1 all have input first's shape. */
static int same_shapes(rc_op *op, int first)
{
    for (int i = first + 1; i < op->n_in; i++)
        if (!rc_tensor_same_shape(rc_in(op, i), rc_in(op, first))) return 0;
    return 1;
}

/* Inputs float32 whose shapes broadcast numpy-style (dims aligned from the last; a dim of 1, or a missing
 * leading one, stretches): *ndim / dims = the broadcast shape; ValueError naming the first clash. */
static rc_status mean_shape(rc_op *op, int *ndim, int64_t *dims, rc_err *err)
{
    rc_status st;
    int nd = 0;
    for (int i = 0; i < op->n_in; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        if (rc_in(op, i)->ndim > nd) nd = rc_in(op, i)->ndim;
    }
    for (int d = 0; d < nd; d++) dims[d] = 1;
    for (int i = 0; i < op->n_in; i++) {
        const rc_tensor *t = rc_in(op, i);
        for (int k = 0; k < t->ndim; k++) {
            int64_t *o = &dims[nd - t->ndim + k];
            if (t->dims[k] == *o || t->dims[k] == 1) continue;
            if (*o != 1)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "input %d blob '%s' of shape %s does not broadcast with the inputs before it "
                                  "(numpy-style, dims aligned from the last): its dim %d is %lld where they give "
                                  "%lld", i, rc_in_name(op, i), RC_SHAPE(t), k, (long long)t->dims[k], (long long)*o);
            *o = t->dims[k];
        }
    }
    *ndim = nd;
    return RC_OK;
}

/* t's element strides over the broadcast shape (nd, dims): 0 along the dims it repeats. */
static void bc_strides(const rc_tensor *t, int nd, const int64_t *dims, int64_t *str)
{
    int64_t run = 1;
    for (int d = nd - 1; d >= 0; d--) {
        const int k = d - (nd - t->ndim);
        const int64_t td = k >= 0 ? t->dims[k] : 1;
        str[d] = td == dims[d] && td != 1 ? run : 0;
        run *= td;
    }
}

/* The broadcast forward: Y [dims] element by element in order, each Xi read at its broadcast position;
 * Y may be an input's blob of Y's shape (that input is read at Y's element before it is written). */
static void mean_bcast(rc_op *op, unary_state *s, int nd, const int64_t *dims, int64_t m, float *y)
{
    int64_t idx[RC_MAX_DIMS] = {0};
    for (int i = 0; i < op->n_in; i++) {
        bc_strides(rc_in(op, i), nd, dims, s->str[i]);
        s->off[i] = 0;
    }
    const double n = op->n_in;
    for (int64_t e = 0; e < m; e++) {
        double acc = s->x[0][s->off[0]];
        for (int j = 1; j < op->n_in; j++) acc += s->x[j][s->off[j]];
        y[e] = (float)(acc / n);
        for (int d = nd - 1; d >= 0; d--) {
            for (int j = 0; j < op->n_in; j++) s->off[j] += s->str[j][d];
            if (++idx[d] < dims[d]) break;
            for (int j = 0; j < op->n_in; j++) s->off[j] -= s->str[j][d] * dims[d];
            idx[d] = 0;
        }
    }
}

static rc_status mean_check(rc_op *op, rc_err *err)
{
    int nd;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = mean_shape(op, &nd, dims, err);
    if (st) return st;
    for (int i = 0; i < op->n_in; i++) {
        const rc_tensor *t = rc_in(op, i);
        if (op->out[0] != op->in[i] || (t->ndim == nd && !memcmp(t->dims, dims, sizeof(int64_t) * (size_t)nd)))
            continue;
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output blob '%s' is input %d of shape %s, but the inputs broadcast to another shape "
                          "(in place needs the result to have that input's shape)", rc_out_name(op, 0), i,
                          RC_SHAPE(t));
    }
    return RC_OK;
}

/* X0..Xn-1 -> Y = (X0 + ... + Xn-1) / n, added in double in input order; one shape: Y may be any Xi;
 * shapes that broadcast: Y has the broadcast shape (and may be only an input of that shape). */
static rc_status mean_run(rc_op *op, rc_err *err)
{
    unary_state *s = op->state;
    if (!same_shapes(op, 0)) {
        int nd;
        int64_t dims[RC_MAX_DIMS];
        rc_status st = mean_check(op, err);
        if (!st) st = mean_shape(op, &nd, dims, err);
        if (st) return st;
        if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, nd, dims, err)))
            return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
        const int64_t m = rc_tensor_numel(rc_out(op, 0));
        if (!m) return RC_OK;
        for (int i = 0; i < op->n_in; i++) s->x[i] = rc_f32(rc_in(op, i));
        mean_bcast(op, s, nd, dims, m, rc_f32(rc_out(op, 0)));
        return RC_OK;
    }
    rc_status st = check_all_f32(op, err);
    if (!st) st = resize_like(op, 0, rc_in(op, 0), err);
    if (st) return st;
    const int64_t m = rc_tensor_numel(rc_in(op, 0));
    if (!m) return RC_OK;
    for (int i = 0; i < op->n_in; i++) s->x[i] = rc_f32(rc_in(op, i));
    float *y = rc_f32(rc_out(op, 0));
    double buf[CHUNK];
    const double n = op->n_in;
    for (int64_t c0 = 0; c0 < m; c0 += CHUNK) {
        const int64_t len = m - c0 < CHUNK ? m - c0 : CHUNK;
        for (int64_t i = 0; i < len; i++) buf[i] = s->x[0][c0 + i];
        for (int j = 1; j < op->n_in; j++) {
            const float *xj = s->x[j] + c0;
            for (int64_t i = 0; i < len; i++) buf[i] += xj[i];
        }
        for (int64_t i = 0; i < len; i++) y[c0 + i] = (float)(buf[i] / n);
    }
    return RC_OK;
}

static rc_status min_grad_setup(rc_op *op, rc_err *err)
{
    if (op->n_in != op->n_out + 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "takes (Y, dY, X0, ..., Xk-1) and gives (dX0, ..., dXk-1): %d inputs need %d outputs, got "
                          "%d", op->n_in, op->n_in - 2, op->n_out);
    unary_state *s = NULL;
    return state_new(op, op->n_out, op->n_out, &s, err);
}

/* Y, dY, X0..Xk-1 float32 of Y's shape -> dXi = dY where Xi == Y, else 0. */
static rc_status min_grad_run(rc_op *op, rc_err *err)
{
    unary_state *s = op->state;
    rc_status st = check_all_f32(op, err);
    if (st) return st;
    for (int o = 0; o < op->n_out; o++) {
        if ((st = resize_like(op, o, rc_in(op, 0), err))) return st;
        s->dx[o] = rc_f32(rc_out(op, o));
        s->x[o] = rc_f32(rc_in(op, o + 2));
    }
    const int64_t m = rc_tensor_numel(rc_in(op, 0));
    if (m) rc_k_max_grad(op->n_out, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), s->x, m, s->dx);
    return RC_OK;
}

static rc_status mean_grad_setup(rc_op *op, rc_err *err)
{
    if (op->n_in != 1 && op->n_in != op->n_out + 1)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "takes dY, or (dY, X0, ..., Xk-1), and gives (dX0, ..., dXk-1): %d inputs need %d "
                          "outputs, got %d", op->n_in, op->n_in - 1, op->n_out);
    return RC_OK;
}

/* dY float32; with the forward inputs X0..Xk-1 (float32, only their shapes are read) each must broadcast to
 * dY's shape, and dX0 may be dY's blob only when X0 has dY's shape. */
static rc_status mean_grad_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *dy = rc_in(op, 0);
    for (int i = 1; i < op->n_in; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        const rc_tensor *t = rc_in(op, i);
        int ok = t->ndim <= dy->ndim;
        for (int k = 0; ok && k < t->ndim; k++) {
            const int64_t d = dy->dims[dy->ndim - t->ndim + k];
            ok = t->dims[k] == d || t->dims[k] == 1;
        }
        if (!ok)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (X%d) of shape %s does not broadcast to dY '%s' of shape %s "
                              "(numpy-style, dims aligned from the last)", i, rc_in_name(op, i), i - 1, RC_SHAPE(t),
                              rc_in_name(op, 0), RC_SHAPE(dy));
    }
    if (op->n_in > 1 && op->out[0] == op->in[0] && !rc_tensor_same_shape(rc_in(op, 1), dy))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output 0 blob '%s' is dY, but X0 '%s' of shape %s is not of dY's shape %s (in place "
                          "needs it)", rc_out_name(op, 0), rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), RC_SHAPE(dy));
    return RC_OK;
}

/* dX [t's shape] = the sum of dY [dy's shape] over the dims where t repeats, times inv: added in double,
 * each dX element's terms in dY's element order. */
static void mean_grad_reduce(const rc_tensor *t, const rc_tensor *dy, float inv, float *dx)
{
    const int nd = dy->ndim;
    int64_t str[RC_MAX_DIMS], idx[RC_MAX_DIMS] = {0}, dstr[RC_MAX_DIMS];
    bc_strides(t, nd, dy->dims, str);
    int64_t run = 1;
    for (int d = nd - 1; d >= 0; d--) {
        dstr[d] = run;
        run *= dy->dims[d];
    }
    const int64_t nx = rc_tensor_numel(t);
    if (!nx) return;
    if (!rc_tensor_numel(dy)) { /* a dim of 1 against dY's 0: nothing to sum */
        memset(dx, 0, (size_t)nx * sizeof *dx);
        return;
    }
    const float *g = rc_f32(dy);
    /* kept dims (str != 0, or a dim of 1) are walked outside, the repeated ones (str == 0, dim > 1) inside */
    int kept[RC_MAX_DIMS], rep[RC_MAX_DIMS], nk = 0, nr = 0;
    for (int d = 0; d < nd; d++) {
        if (str[d] == 0 && dy->dims[d] > 1) rep[nr++] = d;
        else kept[nk++] = d;
    }
    int64_t base = 0;
    for (int64_t e = 0; e < nx; e++) {
        double acc = 0;
        int64_t off = base;
        for (int r = 0; r < nr; r++) idx[rep[r]] = 0;
        for (;;) {
            acc += g[off];
            int r = nr - 1;
            for (; r >= 0; r--) {
                const int d = rep[r];
                off += dstr[d];
                if (++idx[d] < dy->dims[d]) break;
                off -= dstr[d] * dy->dims[d];
                idx[d] = 0;
            }
            if (r < 0) break;
        }
        dx[e] = (float)(acc * inv);
        for (int k = nk - 1; k >= 0; k--) {
            const int d = kept[k];
            base += dstr[d];
            if (++idx[d] < dy->dims[d]) break;
            base -= dstr[d] * dy->dims[d];
            idx[d] = 0;
        }
    }
}

/* dY float32 -> dX0..dXk-1 = dY / k. Alone: each of dY's shape. With X0..Xk-1: dXi of Xi's shape, dY / k
 * summed over the dims where Xi was broadcast (where Xi has dY's shape, dY / k as alone). dX0 may be dY's
 * blob: the outputs are written last to first, so dY is read whole before dX0 overwrites it. */
static rc_status mean_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = mean_grad_check(op, err);
    if (st) return st;
    const rc_tensor *dy = rc_in(op, 0);
    const int64_t m = rc_tensor_numel(dy);
    const float inv = 1.0f / (float)op->n_out;
    for (int o = op->n_out - 1; o >= 0; o--) {
        const rc_tensor *like = op->n_in > 1 ? rc_in(op, o + 1) : dy;
        if ((st = resize_like(op, o, like, err))) return st;
        float *dx = rc_f32(rc_out(op, o));
        if (!rc_tensor_same_shape(like, dy)) {
            mean_grad_reduce(like, dy, inv, dx);
            continue;
        }
        if (!m) continue;
        const float *g = rc_f32(dy);
        for (int64_t i = 0; i < m; i++) dx[i] = g[i] * inv;
    }
    return RC_OK;
}

/* ================================================================ the family table */
const rc_op_schema rc_ops_unary[] = {
    {"Clip", 1, 1, 1, 1, rc_inplace_any, clip_setup, clip_run, unary_state_free,
     "Y = min(max(X, min), max) (args min=-inf, max=+inf; NaN stays NaN)", check_x_f32},
    {"ClipGradient", 2, 2, 1, 1, inplace_dy, clip_setup, clip_grad_run, unary_state_free,
     "(Y, dY) -> dX = dY where min < Y < max, else 0", check_all_f32},
    {"EnsureClipped", 1, 3, 1, 1, inplace_00, ensure_clipped_setup, ensure_clipped_run, unary_state_free,
     "param -> clip(param, min, max); with (indices, grad) only the rows at indices, in place", ensure_clipped_check},
    {"ClipTensorByScaling", 2, 3, 1, 1, inplace_00, clip_scaling_setup, clip_scaling_run, unary_state_free,
     "(X, val[, additional]) -> X * thr / val where val > thr = threshold * additional, else X", clip_scaling_check},
    {"Abs", 1, 1, 1, 1, rc_inplace_any, NULL, abs_run, NULL, "Y = |X|", check_x_f32},
    {"AbsGradient", 2, 2, 1, 1, inplace_dy, NULL, abs_grad_run, NULL,
     "(X, dY) -> dX = dY sign(X) (0 where X is 0 or NaN)", check_all_f32},
    {"Sqrt", 1, 1, 1, 1, rc_inplace_any, NULL, sqrt_run, NULL, "Y = sqrt(X) (NaN for X < 0)", check_x_f32},
    {"LeakyRelu", 1, 1, 1, 1, rc_inplace_any, leaky_setup, leaky_run, unary_state_free,
     "Y = X > 0 ? X : alpha X (arg alpha=0.01)", check_x_f32},
    {"LeakyReluGradient", 2, 2, 1, 1, inplace_dy, leaky_grad_setup, leaky_grad_run, unary_state_free,
     "(Y, dY) -> dX = Y > 0 ? dY : alpha dY (alpha >= 0)", check_all_f32},
    {"Elu", 1, 1, 1, 1, rc_inplace_any, elu_setup, elu_run, unary_state_free,
     "Y = X > 0 ? X : alpha (exp(X) - 1) (arg alpha=1)", check_x_f32},
    {"EluGradient", 2, 2, 1, 1, inplace_dy, elu_grad_setup, elu_grad_run, unary_state_free,
     "(Y, dY) -> dX = Y > 0 ? dY : dY (Y + alpha) (alpha >= 0)", check_all_f32},
    {"Softsign", 1, 1, 1, 1, rc_inplace_any, NULL, softsign_run, NULL, "Y = X / (1 + |X|)", check_x_f32},
    {"SoftsignGradient", 2, 2, 1, 1, inplace_dy, NULL, softsign_grad_run, NULL,
     "(X, dY) -> dX = dY / (1 + |X|)^2", check_all_f32},
    {"StopGradient", 1, 1, 1, 1, rc_inplace_any, NULL, stop_gradient_run, NULL,
     "Y = X (any dtype); the gradient stops here", stop_gradient_check},
    {"NegateGradient", 1, 1, 1, 1, rc_inplace_any, NULL, stop_gradient_run, NULL,
     "Y = X (any dtype); its gradient is -dY", stop_gradient_check},
    {"ReluN", 1, 1, 1, 1, rc_inplace_any, relu_n_setup, clip_run, unary_state_free,
     "Y = min(max(X, 0), n) (arg n=6, > 0; NaN stays NaN)", check_x_f32},
    {"ReluNGradient", 2, 2, 1, 1, inplace_dy, relu_n_setup, clip_grad_run, unary_state_free,
     "(Y, dY) -> dX = dY where 0 < Y < n, else 0", check_all_f32},
    {"Min", 1, -1, 1, 1, rc_inplace_any, min_setup, min_run, unary_state_free,
     "Y = elementwise min of X0, X1, ... (one shape; NaN propagates)", check_all_f32},
    {"MinGradient", 3, -1, 1, -1, NULL, min_grad_setup, min_grad_run, unary_state_free,
     "(Y, dY, X0, ...) -> (dX0, ...): dXi = dY where Xi == Y, else 0", check_all_f32},
    {"Mean", 1, -1, 1, 1, rc_inplace_any, mean_setup, mean_run, unary_state_free,
     "Y = (X0 + X1 + ...) / n (numpy-style broadcast; added in double in input order)", mean_check},
    {"MeanGradient", 1, -1, 1, -1, inplace_00, mean_grad_setup, mean_grad_run, NULL,
     "dY[, X0, ...] -> (dX0, ...): dXi = dY / (number of outputs), summed to Xi's shape; dX0 may be dY",
     mean_grad_check},
    {0},
};
