/* ops/unary2.c -- more elementwise ops, as Caffe2's sin_op, cos_op, sign_op,
 * tan_op, asin_op, acos_op, atan_op, reciprocal_op, rsqrt_op, floor_op, ceil_op, softplus_op, selu_op, swish_op,
 * logit_op, cbrt_op, isnan_op, log1p_op, replace_nan_op, Round,
 * hard_sigmoid_op, cube_op, sinh_op, cosh_op, erf_op, thresholded_relu_op, gelu_op, glu_op,
 * Where (elementwise_logical_ops) and expand_op, with their gradient ops.
 *
 *   Sin(X) -> Y                      Y = sin(X)
 *   SinGradient(X, dY) -> dX         dX = dY cos(X)
 *   Cos(X) -> Y                      Y = cos(X)
 *   CosGradient(X, dY) -> dX         dX = -dY sin(X)
 *   Tan(X) -> Y                      Y = tan(X)
 *   TanGradient(X, dY) -> dX         dX = dY / cos(X)^2
 *   Asin(X) -> Y, Acos(X) -> Y       Y = asin(X), acos(X) (NaN outside [-1, 1], as NumPy)
 *   AsinGradient(X, dY) -> dX        dX = dY / sqrt(1 - X^2) (inf at |X| = 1)
 *   AcosGradient(X, dY) -> dX        dX = -dY / sqrt(1 - X^2)
 *   Atan(X) -> Y                     Y = atan(X)
 *   AtanGradient(X, dY) -> dX        dX = dY / (1 + X^2)
 *   Sign(X) -> Y                     Y = -1, 0 or 1 (NaN stays NaN, -0 stays -0; as np.sign); no gradient
 *   Reciprocal(X) -> Y               Y = 1 / X (+-inf for +-0, as IEEE and NumPy)
 *   ReciprocalGradient(Y, dY) -> dX  dX = -dY Y^2
 *   RSqrt(X) -> Y                    Y = 1 / sqrt(X) (+inf for 0, NaN for X < 0)
 *   RSqrtGradient(dY, Y) -> dX       dX = -0.5 dY Y^3 (Caffe2's input order: dY first)
 *   Floor(X) -> Y, Ceil(X) -> Y      floor / ceil (inf and NaN stay); no gradient
 *   Softplus(X) -> Y                 Y = log(1 + exp(X)), computed as max(X, 0) + log1p(exp(-|X|))
 *   SoftplusGradient(Y, dY) -> dX    dX = dY (1 - exp(-Y)) (= dY sigmoid(X)), by expm1
 *   Selu(X) -> Y                     args alpha=1.6732632, scale=1.0507010:
 *                                    Y = X > 0 ? scale X : scale alpha (exp(X) - 1)
 *   SeluGradient(Y, dY) -> dX        dX = Y > 0 ? scale dY : dY (Y + scale alpha) (scale > 0, alpha >= 0)
 *   Swish(X) -> Y                    Y = X sigmoid(X) (0 at -inf; Caffe2: NaN)
 *   SwishGradient(X, Y, dY) -> dX    dX = dY (s + Y (1 - s)), s = sigmoid(X) (1 at +inf, 0 at -inf)
 *   HardSigmoid(X) -> Y              args alpha=0.2, beta=0.5: Y = min(max(alpha X + beta, 0), 1)
 *   HardSigmoidGradient(Y, dY) -> dX dX = 0 < Y < 1 ? alpha dY : 0
 *   Cube(X) -> Y                     Y = X^3 (overflow: +-inf, as float arithmetic)
 *   CubeGradient(dY, X) -> dX        dX = 3 dY X^2 (Caffe2's input order: dY first)
 *   Sinh(X), Cosh(X) -> Y            Y = sinh(X), cosh(X)
 *   SinhGradient(dY, X) -> dX        dX = dY cosh(X) (Caffe2's input order: dY first)
 *   CoshGradient(dY, X) -> dX        dX = dY sinh(X)
 *   Logit(X) -> Y                    arg eps=1e-6 (in (0, 0.5)): Y = log(c / (1 - c)), c = X clamped
 *                                    to [eps, 1 - eps]
 *   LogitGradient(X, dY) -> dX       dX = dY / (X (1 - X)) inside [eps, 1 - eps], 0 outside
 *   Cbrt(X) -> Y                     Y = cbrt(X)
 *   CbrtGradient(dY, Y) -> dX        dX = dY / (3 Y^2) (Caffe2's input order: dY first)
 *   IsNaN(X) -> Y                    int32 1 where X is NaN, else 0 (Caffe2: bool); no gradient
 *   Log1p(X) -> Y                    Y = log1p(X) = log(1 + X), accurate for small X (-inf at -1, NaN below)
 *   Log1pGradient(X, dY) -> dX       dX = dY / (1 + X)
 *   Round(X) -> Y                    Y = X rounded to the nearest integer, halves away from zero
 *                                    (std::round: 0.5 -> 1, -2.5 -> -3; -0, inf and NaN stay); no gradient
 *   ReplaceNaN(X) -> Y               arg value=0: Y = X with every NaN replaced by value (Caffe2: float or
 *                                    double; float32 here); no gradient
 *   Erf(X) -> Y                      Y = erf(X)
 *   ErfGradient(X, dY) -> dX         dX = dY 2 / sqrt(pi) exp(-X^2)
 *   ThresholdedRelu(X) -> Y          arg alpha=1: Y = X <= alpha ? 0 : X (NaN stays NaN; Caffe2: 0)
 *   ThresholdedReluGradient(Y, dY)   dX = Y > 0 ? dY : 0 (alpha >= 0: Y does not tell X = 0 from
 *                                    X <= alpha when alpha < 0; Caffe2's dY sign(Y) was wrong there)
 *   Gelu(X) -> Y                     arg fast_gelu=0: Y = X Phi(X), Phi(x) = erfc(-x / sqrt 2) / 2;
 *                                    fast: X (1 + tanh(sqrt(2 / pi) (X + 0.044715 X^3))) / 2; 0 at -inf
 *   GeluGradient(dY, X) -> dX        dX = dY (Phi(X) + X phi(X)), or the fast form's derivative; dY / 0
 *                                    at +inf / -inf (Caffe2: NaN)
 *   Glu(X) -> Y                      arg dim=-1: A, B the halves of X along dim (even), Y = A sigmoid(B);
 *                                    no gradient, as Caffe2
 *   Where(C, X, Y) -> Z              Z = C ? X : Y elementwise; C int32 (nonzero is true), X and Y
 *                                    float32 or int32 of one dtype; numpy-style broadcasting of the
 *                                    three; arg broadcast_on_rows=0: 1 takes C as 1-D, one entry per
 *                                    row (dim 0) of X and Y, which have one shape (Caffe2's form)
 *   Expand(X, shape) -> Y            X float32 or int32, shape a 1-D int32 tensor: Y is X broadcast
 *                                    (numpy-style) to the broadcast of X's shape and shape; a
 *                                    negative entry (-1) keeps X's dim there, as Caffe2's
 *   ExpandGradient(dY, X) -> dX      dX = dY summed over the dims where X was repeated, in double and
 *                                    in dY's element order (deterministic); X is read for its shape
 *
 * All float32 unless said. Sign, Reciprocal, RSqrt, Floor, Ceil, Round, Softplus,
 * Selu, HardSigmoid, ThresholdedRelu and ReplaceNaN may run in place (as Caffe2's schemas; Round as Floor);
 * Sin, Cos, Tan, Asin, Acos, Atan, Swish, Cube, Sinh, Cosh, Erf, Gelu, Log1p (whose
 * gradients read X), Glu, Expand and ExpandGradient may not;
 * Where's Z may be X's or Y's blob when the result has that input's shape. The
 * gradient ops may write dX over dY. What differs from Caffe2:
 *  - Softplus does not overflow: Caffe2's log(exp(X) + 1) was +inf from X
 *    about 89 up; SoftplusGradient uses expm1 (no cancellation for small Y).
 *  - Swish(-inf) is 0 and SwishGradient is dY at X = +inf, 0 at -inf (Caffe2:
 *    NaN); for |X| large the gradient keeps its limit (Caffe2's Y + s (1 - Y)
 *    cancelled to 0 at X = 1e30).
 *  - SeluGradient takes dY of Y's element count in any shape and gives dX
 *    Y's shape, as Caffe2 (which enforced only the counts); the other gradient
 *    ops here want dY of the value's shape.
 *  - Selu uses expm1 (Caffe2: alpha exp(X) - alpha); SeluGradient reads only
 *    Y, so it fails with a ValueError for scale <= 0 or alpha < 0, where the
 *    sign of X cannot be told from Y (Caffe2 gave a wrong gradient).
 *  - HardSigmoid keeps NaN (Caffe2's Eigen min / max did not say).
 *  - Sign keeps NaN, as NumPy (Caffe2: 0).
 *  - Where broadcasts numpy-style (Caffe2 wanted one shape, or its
 *    broadcast_on_rows form, which is also here).
 *  - Expand's shape is int32 (our dtypes; Caffe2: int64); an entry 0 against
 *    a dim of 1 gives 0, as NumPy (Caffe2 took it as 1, as a negative entry;
 *    older Caffe2 took the max, so X dim 0 against 1 read past X's data).
 *
 * No global state; the only allocation is ExpandGradient's double
 * accumulator, grown when X's size grows (owned by op->state).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ state and helpers */

typedef struct u2_state {
    float a, b;        /* Selu: alpha, scale; HardSigmoid: alpha, beta; ThresholdedRelu: a = alpha; Logit: a = eps;
                        * ReplaceNaN: a = value */
    int64_t fast;      /* Gelu: fast_gelu */
    int64_t dim;       /* Glu: dim */
    int64_t rows;      /* Where: broadcast_on_rows */
    double *acc;       /* ExpandGradient: the sums (owned), acc_n entries */
    int64_t acc_n;
} u2_state;

static void u2_state_free(void *p)
{
    u2_state *s = p;
    if (!s) return;
    free(s->acc);
    free(s);
}

/* op->state = a zeroed state, owned by the op. */
static rc_status state_new(rc_op *op, u2_state **out, rc_err *err)
{
    u2_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    *out = s;
    return RC_OK;
}

static rc_status resize_out(rc_op *op, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err)
{
    int64_t d[RC_MAX_DIMS] = {0};
    memcpy(d, dims, (size_t)ndim * sizeof *d);
    rc_status st = rc_tensor_resize(rc_out(op, 0), dt, ndim, d, err);
    if (st) return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    return RC_OK;
}

/* Inputs 0..n_in-1 float32 of input 0's shape. */
static rc_status check_all_f32(rc_op *op, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < op->n_in; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        if (i > 0 && !rc_tensor_same_shape(rc_in(op, i), rc_in(op, 0)))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' of shape %s must have the shape of input 0 blob '%s' %s", i,
                              rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), rc_in_name(op, 0),
                              RC_SHAPE(rc_in(op, 0)));
    }
    return RC_OK;
}

static rc_status check_x_f32(rc_op *op, rc_err *err) { return rc_check_input(op, 0, RC_F32, err); }

static int inplace_dy1(int in, int out) { return in == 1 && out == 0; }   /* (Y or X, dY) -> dX */
static int inplace_dy0(int in, int out) { return in == 0 && out == 0; }   /* (dY, Y or X) -> dX */
static int inplace_dy2(int in, int out) { return in == 2 && out == 0; }   /* (X, Y, dY) -> dX */
static int inplace_where(int in, int out) { return (in == 1 || in == 2) && out == 0; }

/* ================================================================ arguments */

/* op->state = a state with s->a = argument na (default da) and, when nb, s->b = argument nb; NaN refused. */
static rc_status float_args(rc_op *op, const char *na, float da, const char *nb, float db, u2_state **out,
                            rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = state_new(op, &s, err);
    if (!st) st = rc_arg_f(&op->def, na, da, &s->a, err);
    if (!st && nb) st = rc_arg_f(&op->def, nb, db, &s->b, err);
    if (st) return st;
    if (isnan(s->a) || (nb && isnan(s->b)))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' is NaN", isnan(s->a) ? na : nb);
    *out = s;
    return RC_OK;
}

static rc_status selu_setup_common(rc_op *op, int grad, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = float_args(op, "alpha", 1.6732632423543772f, "scale", 1.0507009873554805f, &s, err);
    if (st) return st;
    if (grad && (s->b <= 0 || s->a < 0))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "arguments alpha %g and scale %g: the gradient reads Y only, which tells the sign of X "
                          "only when scale > 0 and alpha >= 0 (Caffe2 gave a wrong gradient otherwise)",
                          (double)s->a, (double)s->b);
    return RC_OK;
}

static rc_status selu_setup(rc_op *op, rc_err *err) { return selu_setup_common(op, 0, err); }
static rc_status selu_grad_setup(rc_op *op, rc_err *err) { return selu_setup_common(op, 1, err); }

static rc_status hard_sigmoid_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    return float_args(op, "alpha", 0.2f, "beta", 0.5f, &s, err);
}

static rc_status thresholded_setup_common(rc_op *op, int grad, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = float_args(op, "alpha", 1.0f, NULL, 0.0f, &s, err);
    if (st) return st;
    if (grad && s->a < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument 'alpha' is %g: the gradient reads Y only, which does not tell X = 0 (passed) "
                          "from X <= alpha (zeroed) when alpha < 0 (Caffe2 gave -dY where Y < 0)", (double)s->a);
    return RC_OK;
}

static rc_status thresholded_setup(rc_op *op, rc_err *err) { return thresholded_setup_common(op, 0, err); }
static rc_status thresholded_grad_setup(rc_op *op, rc_err *err) { return thresholded_setup_common(op, 1, err); }

/* Logit / LogitGradient: eps in (0, 0.5) (Caffe2 took any; eps >= 0.5 left no interval) */
static rc_status logit_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = float_args(op, "eps", 1e-6f, NULL, 0.0f, &s, err);
    if (st) return st;
    if (!(s->a > 0.0f && s->a < 0.5f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'eps' must be in (0, 0.5), got %g", (double)s->a);
    return RC_OK;
}

static rc_status gelu_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = state_new(op, &s, err);
    if (!st) st = rc_arg_i(&op->def, "fast_gelu", 0, &s->fast, err);
    return st;
}

/* ReplaceNaN: value (default 0; any float) */
static rc_status replace_nan_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = state_new(op, &s, err);
    return st ? st : rc_arg_f(&op->def, "value", 0.0f, &s->a, err);
}

/* ================================================================ elementwise kernels */

typedef void (*fwd_kernel)(const u2_state *s, int64_t n, const float *x, float *y);
typedef void (*bwd_kernel)(const u2_state *s, int64_t n, const float *a, const float *dy, float *dx);

/* sigmoid(x) without overflow: 1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below. */
static inline float sigmoidf_(float x)
{
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}

/* x [n] -> y [n]; y may be x where the schema allows in place. */
static void k_sin(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = sinf(x[i]);
}

static void k_cos(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = cosf(x[i]);
}

static void k_tan(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = tanf(x[i]);
}

static void k_asin(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = asinf(x[i]);
}

static void k_acos(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = acosf(x[i]);
}

static void k_atan(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = atanf(x[i]);
}

static void k_sign(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? 1.0f : x[i] < 0 ? -1.0f : x[i]; /* +-0, NaN kept */
}

static void k_reciprocal(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
}

static void k_rsqrt(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]);
}

static void k_floor(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = floorf(x[i]);
}

static void k_ceil(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = ceilf(x[i]);
}

static void k_softplus(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v)); /* NaN: the second, NaN */
    }
}

static void k_selu(const u2_state *s, int64_t n, const float *x, float *y)
{
    const float alpha = s->a, scale = s->b;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? scale * x[i] : scale * alpha * expm1f(x[i]);
}

static void k_swish(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] == -INFINITY ? 0.0f : x[i] * sigmoidf_(x[i]);
}

static void k_hard_sigmoid(const u2_state *s, int64_t n, const float *x, float *y)
{
    const float alpha = s->a, beta = s->b;
    for (int64_t i = 0; i < n; i++) {
        const float v = alpha * x[i] + beta;
        y[i] = v < 0 ? 0.0f : v > 1 ? 1.0f : v; /* NaN: both false, stays NaN */
    }
}

static void k_cube(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i] * x[i];
}

/* X <= alpha ? 0 : X (NaN stays NaN) */
static void k_thresholded_relu(const u2_state *s, int64_t n, const float *x, float *y)
{
    const float alpha = s->a;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] <= alpha ? 0.0f : x[i];
}

#define GELU_K 0.7978845608028654f   /* sqrt(2 / pi) */
#define GELU_C 0.044715f

/* The fast form's tanh(sqrt(2 / pi) (x + 0.044715 x^3)); +-1 from |x| = 10 on, where float's tanh is
 * already +-1 (no overflow of x^3). */
static inline float gelu_tanh(float x)
{
    return fabsf(x) > 10 ? copysignf(1.0f, x) : tanhf(GELU_K * (x + GELU_C * x * x * x));
}

/* Y = X Phi(X), Phi(x) = erfc(-x / sqrt 2) / 2 (no cancellation for x < 0), or the fast form
 * X (1 + tanh(...)) / 2; 0 at -inf (not -inf * 0). */
static void k_gelu(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        const float p = s->fast ? 0.5f * (1.0f + gelu_tanh(v)) : 0.5f * erfcf(-v * 0.70710678118654752f);
        y[i] = v == -INFINITY ? 0.0f : v * p;
    }
}

/* (dY, X) -> dX = dY (Phi(X) + X phi(X)), or the fast form's derivative; dY 1 / 0 at +inf / -inf. */
static void k_gelu_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        float g;
        if (isinf(v) || (s->fast && fabsf(v) > 10)) { /* the fast form's tanh is +-1 from |v| = 10 on */
            g = v > 0 ? 1.0f : 0.0f;
        } else if (s->fast) {
            const float t = gelu_tanh(v);
            g = 0.5f * (1.0f + t + v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * v * v));
        } else {
            g = 0.5f * erfcf(-v * 0.70710678118654752f) + v * 0.3989422804014327f * expf(-0.5f * v * v);
        }
        dx[i] = dy[i] * g;
    }
}

/* a [n] (X or Y), dy [n] -> dx [n]; dx may be dy. */
static void k_sin_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * cosf(x[i]);
}

static void k_cos_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = -dy[i] * sinf(x[i]);
}

static void k_tan_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) {
        const float c = cosf(x[i]);
        dx[i] = dy[i] / (c * c);
    }
}

/* 1 - X^2 as (1 - X)(1 + X): no cancellation near |X| = 1. */
static void k_asin_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] / sqrtf((1.0f - x[i]) * (1.0f + x[i]));
}

static void k_acos_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = -dy[i] / sqrtf((1.0f - x[i]) * (1.0f + x[i]));
}

static void k_atan_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] / (1.0f + x[i] * x[i]);
}

static void k_reciprocal_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = -dy[i] * y[i] * y[i];
}

static void k_rsqrt_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = -0.5f * dy[i] * y[i] * y[i] * y[i];
}

static void k_softplus_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = -dy[i] * expm1f(-y[i]);
}

static void k_selu_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    const float scale = s->b, sa = s->a * s->b;
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? scale * dy[i] : dy[i] * (y[i] + sa);
}

static void k_hard_sigmoid_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    const float alpha = s->a;
    for (int64_t i = 0; i < n; i++) dx[i] = (y[i] > 0 && y[i] < 1) ? alpha * dy[i] : 0.0f;
}

static void k_thresholded_relu_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0 ? dy[i] : 0.0f;
}

/* log(c / (1 - c)), c = X clamped to [eps, 1 - eps] (NaN stays NaN) */
static void k_logit(const u2_state *s, int64_t n, const float *x, float *y)
{
    const float lo = s->a, hi = 1.0f - s->a;
    for (int64_t i = 0; i < n; i++) {
        const float c = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
        y[i] = logf(c / (1.0f - c));
    }
}

/* dY / (X (1 - X)) inside [eps, 1 - eps], 0 outside (where the clamp held Y still) */
static void k_logit_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    const float lo = s->a, hi = 1.0f - s->a;
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] < lo || x[i] > hi ? 0.0f : dy[i] / ((1.0f - x[i]) * x[i]);
}

static void k_cbrt(const u2_state *s, int64_t n, const float *x, float *y)
{
    (void)s;
    for (int64_t i = 0; i < n; i++) y[i] = cbrtf(x[i]);
}

/* dY / (3 Y^2) (+-inf at Y = 0, as the derivative) */
static void k_cbrt_grad(const u2_state *s, int64_t n, const float *y, const float *dy, float *dx)
{
    (void)s;
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] / (3.0f * y[i] * y[i]);
}

/* dY / (1 + X) (+-inf at X = -1, as the derivative) */
static void k_log1p_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    (void)s;
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] / (1.0f + x[i]);
}

/* NaN -> value; every other element kept as it is (-0 and the infinities too) */
static void k_replace_nan(const u2_state *s, int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] != x[i] ? s->a : x[i];
}

static void k_cube_grad(const u2_state *s, int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = 3.0f * dy[i] * x[i] * x[i];
}

/* The inputs checked by check (input 0 float32, or all float32 of one shape) -> output 0 resized to
 * input 0's shape; *n its element count. */
static rc_status prep_out(rc_op *op, rc_status (*check)(rc_op *, rc_err *), int64_t *n, rc_err *err)
{
    rc_status st = check(op, err);
    if (!st) st = resize_out(op, RC_F32, rc_in(op, 0)->ndim, rc_in(op, 0)->dims, err);
    *n = st ? 0 : rc_tensor_numel(rc_in(op, 0));
    return st;
}

/* X float32 -> Y of X's shape. */
static rc_status fwd_run(rc_op *op, fwd_kernel k, rc_err *err)
{
    int64_t n;
    rc_status st = prep_out(op, check_x_f32, &n, err);
    if (!st && n) k(op->state, n, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return st;
}

/* Two float32 inputs of one shape, ia the value (X or Y) and idy dY -> dX of that shape. */
static rc_status bwd_run(rc_op *op, bwd_kernel k, int ia, int idy, rc_err *err)
{
    int64_t n;
    rc_status st = prep_out(op, check_all_f32, &n, err);
    if (!st && n) k(op->state, n, rc_f32(rc_in(op, ia)), rc_f32(rc_in(op, idy)), rc_f32(rc_out(op, 0)));
    return st;
}

/* X float32 -> Y = f(X) of X's shape (the ops that are one libm function). */
static rc_status map_run(rc_op *op, float (*f)(float), rc_err *err)
{
    int64_t n;
    rc_status st = prep_out(op, check_x_f32, &n, err);
    if (st || !n) return st;
    const float *x = rc_f32(rc_in(op, 0));
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) y[i] = f(x[i]);
    return RC_OK;
}

/* (X, dY) at ix, idy, float32 of one shape -> dX = dY f'(X), f' given as slope. */
static rc_status map_grad_run(rc_op *op, float (*slope)(float), int ix, int idy, rc_err *err)
{
    int64_t n;
    rc_status st = prep_out(op, check_all_f32, &n, err);
    if (st || !n) return st;
    const float *x = rc_f32(rc_in(op, ix)), *dy = rc_f32(rc_in(op, idy));
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * slope(x[i]);
    return RC_OK;
}

/* d/dx erf(x) = 2 / sqrt(pi) exp(-x^2) */
static float erf_slope(float x) { return 1.1283791670955126f * expf(-x * x); }

static rc_status sinh_run(rc_op *op, rc_err *err) { return map_run(op, sinhf, err); }
static rc_status cosh_run(rc_op *op, rc_err *err) { return map_run(op, coshf, err); }
static rc_status erf_run(rc_op *op, rc_err *err) { return map_run(op, erff, err); }
static rc_status sinh_grad_run(rc_op *op, rc_err *err) { return map_grad_run(op, coshf, 1, 0, err); }
static rc_status cosh_grad_run(rc_op *op, rc_err *err) { return map_grad_run(op, sinhf, 1, 0, err); }
static rc_status erf_grad_run(rc_op *op, rc_err *err) { return map_grad_run(op, erf_slope, 0, 1, err); }
static rc_status log1p_run(rc_op *op, rc_err *err) { return map_run(op, log1pf, err); }
static rc_status log1p_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_log1p_grad, 0, 1, err); }
static rc_status round_run(rc_op *op, rc_err *err) { return map_run(op, roundf, err); }
static rc_status replace_nan_run(rc_op *op, rc_err *err) { return fwd_run(op, k_replace_nan, err); }

static rc_status sin_run(rc_op *op, rc_err *err) { return fwd_run(op, k_sin, err); }
static rc_status cos_run(rc_op *op, rc_err *err) { return fwd_run(op, k_cos, err); }
static rc_status sign_run(rc_op *op, rc_err *err) { return fwd_run(op, k_sign, err); }
static rc_status logit_run(rc_op *op, rc_err *err) { return fwd_run(op, k_logit, err); }
static rc_status logit_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_logit_grad, 0, 1, err); }
static rc_status cbrt_run(rc_op *op, rc_err *err) { return fwd_run(op, k_cbrt, err); }
static rc_status cbrt_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_cbrt_grad, 1, 0, err); }

/* IsNaN(X) -> Y: int32 1 where X is NaN, else 0 (Caffe2: bool) */
static rc_status isnan_run(rc_op *op, rc_err *err)
{
    rc_status st = check_x_f32(op, err);
    if (!st) st = resize_out(op, RC_I32, rc_in(op, 0)->ndim, rc_in(op, 0)->dims, err);
    if (st) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *x = n ? rc_f32(rc_in(op, 0)) : NULL;
    int32_t *y = n ? rc_i32(rc_out(op, 0)) : NULL;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] != x[i];
    return RC_OK;
}
static rc_status tan_run(rc_op *op, rc_err *err) { return fwd_run(op, k_tan, err); }
static rc_status asin_run(rc_op *op, rc_err *err) { return fwd_run(op, k_asin, err); }
static rc_status acos_run(rc_op *op, rc_err *err) { return fwd_run(op, k_acos, err); }
static rc_status atan_run(rc_op *op, rc_err *err) { return fwd_run(op, k_atan, err); }
static rc_status reciprocal_run(rc_op *op, rc_err *err) { return fwd_run(op, k_reciprocal, err); }
static rc_status rsqrt_run(rc_op *op, rc_err *err) { return fwd_run(op, k_rsqrt, err); }
static rc_status floor_run(rc_op *op, rc_err *err) { return fwd_run(op, k_floor, err); }
static rc_status ceil_run(rc_op *op, rc_err *err) { return fwd_run(op, k_ceil, err); }
static rc_status softplus_run(rc_op *op, rc_err *err) { return fwd_run(op, k_softplus, err); }
static rc_status selu_run(rc_op *op, rc_err *err) { return fwd_run(op, k_selu, err); }
static rc_status swish_run(rc_op *op, rc_err *err) { return fwd_run(op, k_swish, err); }
static rc_status hard_sigmoid_run(rc_op *op, rc_err *err) { return fwd_run(op, k_hard_sigmoid, err); }
static rc_status cube_run(rc_op *op, rc_err *err) { return fwd_run(op, k_cube, err); }
static rc_status sin_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_sin_grad, 0, 1, err); }
static rc_status cos_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_cos_grad, 0, 1, err); }
static rc_status tan_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_tan_grad, 0, 1, err); }
static rc_status asin_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_asin_grad, 0, 1, err); }
static rc_status acos_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_acos_grad, 0, 1, err); }
static rc_status atan_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_atan_grad, 0, 1, err); }
static rc_status reciprocal_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_reciprocal_grad, 0, 1, err); }
static rc_status rsqrt_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_rsqrt_grad, 1, 0, err); }
static rc_status softplus_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_softplus_grad, 0, 1, err); }

/* SeluGradient's check: (Y, dY) float32 with as many elements (Caffe2 enforced only that). */
static rc_status check_selu_grad(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = rc_check_input(op, 1, RC_F32, err);
    if (st) return st;
    if (rc_tensor_numel(rc_in(op, 1)) != rc_tensor_numel(rc_in(op, 0)))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' of shape %s must have as many elements as input 0 blob '%s' %s",
                          rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    return RC_OK;
}

/* (Y, dY) -> dX of Y's shape; dX may be dY's blob (same element count, so its buffer is kept). */
static rc_status selu_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = check_selu_grad(op, err);
    if (!st) st = resize_out(op, RC_F32, rc_in(op, 0)->ndim, rc_in(op, 0)->dims, err);
    if (st) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    if (n) k_selu_grad(op->state, n, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}
static rc_status hard_sigmoid_grad_run(rc_op *op, rc_err *err)
{
    return bwd_run(op, k_hard_sigmoid_grad, 0, 1, err);
}
static rc_status cube_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_cube_grad, 1, 0, err); }
static rc_status thresholded_relu_run(rc_op *op, rc_err *err) { return fwd_run(op, k_thresholded_relu, err); }
static rc_status thresholded_relu_grad_run(rc_op *op, rc_err *err)
{
    return bwd_run(op, k_thresholded_relu_grad, 0, 1, err);
}
static rc_status gelu_run(rc_op *op, rc_err *err) { return fwd_run(op, k_gelu, err); }
static rc_status gelu_grad_run(rc_op *op, rc_err *err) { return bwd_run(op, k_gelu_grad, 1, 0, err); }

/* (X, Y, dY) float32 of one shape -> dX = dY (s + Y (1 - s)), s = sigmoid(X), 1 - s = sigmoid(-X). */
static rc_status swish_grad_run(rc_op *op, rc_err *err)
{
    rc_status st = check_all_f32(op, err);
    if (!st) st = resize_out(op, RC_F32, rc_in(op, 0)->ndim, rc_in(op, 0)->dims, err);
    if (st) return st;
    const int64_t n = rc_tensor_numel(rc_in(op, 0));
    const float *x = rc_f32(rc_in(op, 0)), *y = rc_f32(rc_in(op, 1)), *dy = rc_f32(rc_in(op, 2));
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        float g;
        if (v == INFINITY) g = 1.0f;
        else if (v == -INFINITY) g = 0.0f;
        else g = sigmoidf_(v) + y[i] * sigmoidf_(-v);
        dx[i] = dy[i] * g;
    }
    return RC_OK;
}

/* ================================================================ Glu */

static rc_status glu_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = state_new(op, &s, err);
    if (!st) st = rc_arg_i(&op->def, "dim", -1, &s->dim, err);
    return st;
}

/* X float32 split in halves A, B along dim (even): *outer blocks of 2 *half elements -> Y's dims. */
static rc_status glu_shape(rc_op *op, int64_t *dims, int64_t *outer, int64_t *half, rc_err *err)
{
    const u2_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *X = rc_in(op, 0);
    const int64_t d = s->dim < 0 ? s->dim + X->ndim : s->dim;
    if (d < 0 || d >= X->ndim || X->dims[d] % 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument dim=%lld must name a dim of input 0 blob '%s' of shape %s (in [-%d, %d)) "
                          "of even size", (long long)s->dim, rc_in_name(op, 0), RC_SHAPE(X), X->ndim, X->ndim);
    memcpy(dims, X->dims, (size_t)X->ndim * sizeof *dims);
    dims[d] /= 2;
    *outer = 1;
    *half = 1;
    for (int k = 0; k < X->ndim; k++) *(k < d ? outer : half) *= dims[k];
    return RC_OK;
}

static rc_status glu_check(rc_op *op, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS], outer, half;
    return glu_shape(op, dims, &outer, &half, err);
}

/* Y[o, j] = A[o, j] sigmoid(B[o, j]), A = X[o, 0:half], B = X[o, half:2 half] (flat within a block). */
static rc_status glu_run(rc_op *op, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS], outer, half;
    rc_status st = glu_shape(op, dims, &outer, &half, err);
    if (!st) st = resize_out(op, RC_F32, rc_in(op, 0)->ndim, dims, err);
    if (st || !outer || !half) return st;
    const float *x = rc_f32(rc_in(op, 0));
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t o = 0; o < outer; o++) {
        const float *a = x + o * 2 * half, *b = a + half;
        for (int64_t j = 0; j < half; j++) y[o * half + j] = a[j] * sigmoidf_(b[j]);
    }
    return RC_OK;
}

/* ================================================================ broadcast walking (Where, Expand) */

/* The walk of an output of shape dims[ndim] over k inputs, each with its element
 * stride per output dim (0 where the input is repeated or missing). */
typedef struct walk {
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    int64_t st[3][RC_MAX_DIMS];
    int k;
} walk;

/* Strides of t seen at the output shape (t's dims aligned from the last; t broadcasts to it). */
static void walk_strides(walk *w, int j, const rc_tensor *t)
{
    int64_t stride = 1;
    for (int d = w->ndim - 1; d >= 0; d--) {
        const int kd = d - (w->ndim - t->ndim);
        if (kd < 0 || t->dims[kd] == 1) {
            w->st[j][d] = 0;
        } else {
            w->st[j][d] = stride;
        }
        if (kd >= 0) stride *= t->dims[kd];
    }
}

/* row(ctx, o, len, off, inner strides): the elements o .. o+len-1 of the output (C order), whose
 * inputs start at off[j] and step by st[j]. */
typedef void (*walk_row)(void *ctx, int64_t o, int64_t len, const int64_t *off, const int64_t *st);

static void walk_run(const walk *w, void *ctx, walk_row row)
{
    int64_t n = 1;
    for (int d = 0; d < w->ndim; d++) n *= w->dims[d];
    if (n == 0) return;
    if (w->ndim == 0) {
        const int64_t off[3] = {0, 0, 0}, st[3] = {0, 0, 0};
        row(ctx, 0, 1, off, st);
        return;
    }
    const int last = w->ndim - 1;
    const int64_t len = w->dims[last];
    int64_t idx[RC_MAX_DIMS] = {0}, off[3] = {0, 0, 0};
    const int64_t inner[3] = {w->st[0][last], w->st[1][last], w->st[2][last]};
    for (int64_t o = 0; o < n; o += len) {
        row(ctx, o, len, off, inner);
        for (int d = last - 1; d >= 0; d--) {
            idx[d]++;
            for (int j = 0; j < w->k; j++) off[j] += w->st[j][d];
            if (idx[d] < w->dims[d]) break;
            for (int j = 0; j < w->k; j++) off[j] -= w->st[j][d] * w->dims[d];
            idx[d] = 0;
        }
    }
}

/* ================================================================ Where */

static rc_status where_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    rc_status st = state_new(op, &s, err);
    if (!st) st = rc_arg_i(&op->def, "broadcast_on_rows", 0, &s->rows, err);
    return st;
}

/* C int32; X, Y float32 or int32 of one dtype; the output shape into w (numpy rule, or Caffe2's rows form). */
static rc_status where_shapes(rc_op *op, walk *w, rc_err *err)
{
    const u2_state *s = op->state;
    const rc_tensor *C = rc_in(op, 0), *X = rc_in(op, 1), *Y = rc_in(op, 2);
    rc_status st;
    if (C->dtype == RC_F32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' %s must be int32 (bool as 0 / 1; nonzero is true)",
                          rc_in_name(op, 0), RC_SHAPE(C));
    if ((st = rc_check_input(op, 0, RC_I32, err))) return st;
    if ((st = rc_check_input(op, 1, X->dtype == RC_I32 ? RC_I32 : RC_F32, err))) return st;
    if (Y->dtype != X->dtype)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 2 blob '%s' must have the dtype of input 1 blob '%s' %s, got %s",
                          rc_in_name(op, 2), rc_in_name(op, 1), RC_SHAPE(X), RC_SHAPE(Y));
    if (s->rows) {
        if (C->ndim != 1 || X->ndim < 1 || C->dims[0] != X->dims[0] || !rc_tensor_same_shape(X, Y))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "with broadcast_on_rows, input 0 blob '%s' must be 1-D with one entry per row of "
                              "input 1 blob '%s' and input 2 blob '%s' of one shape; got %s, %s and %s",
                              rc_in_name(op, 0), rc_in_name(op, 1), rc_in_name(op, 2), RC_SHAPE(C), RC_SHAPE(X),
                              RC_SHAPE(Y));
        w->ndim = X->ndim;
        memcpy(w->dims, X->dims, sizeof w->dims);
        w->k = 3;
        walk_strides(w, 1, X);
        walk_strides(w, 2, Y);
        for (int d = 0; d < w->ndim; d++) w->st[0][d] = d == 0 ? 1 : 0;
        if (X->dims[0] == 1) w->st[0][0] = 0;
        return RC_OK;
    }
    const rc_tensor *t[3] = {C, X, Y};
    int ndim = 0;
    for (int j = 0; j < 3; j++)
        if (t[j]->ndim > ndim) ndim = t[j]->ndim;
    w->ndim = ndim;
    w->k = 3;
    for (int d = 0; d < ndim; d++) {
        int64_t v = 1;
        for (int j = 0; j < 3; j++) {
            const int kd = d - (ndim - t[j]->ndim);
            if (kd < 0 || t[j]->dims[kd] == 1) continue;
            if (v != 1 && t[j]->dims[kd] != v)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "input 0 blob '%s' of shape %s, input 1 blob '%s' of shape %s and input 2 blob "
                                  "'%s' of shape %s do not broadcast (numpy-style, dims aligned from the last)",
                                  rc_in_name(op, 0), RC_SHAPE(C), rc_in_name(op, 1), RC_SHAPE(X),
                                  rc_in_name(op, 2), RC_SHAPE(Y));
            v = t[j]->dims[kd];
        }
        w->dims[d] = v;
    }
    for (int j = 0; j < 3; j++) walk_strides(w, j, t[j]);
    return RC_OK;
}

static rc_status where_check(rc_op *op, rc_err *err)
{
    walk w = {0};
    return where_shapes(op, &w, err);
}

typedef struct where_ctx {
    const int32_t *c;
    const char *x, *y;
    char *z;
} where_ctx;

/* z[o + i] = c[oc + i sc] ? x[ox + i sx] : y[oy + i sy], 4-byte elements of either dtype. */
static void where_row(void *p, int64_t o, int64_t len, const int64_t *off, const int64_t *st)
{
    where_ctx *c = p;
    for (int64_t i = 0; i < len; i++) {
        const char *src = c->c[off[0] + i * st[0]] ? c->x + 4 * (off[1] + i * st[1]) : c->y + 4 * (off[2] + i * st[2]);
        memcpy(c->z + 4 * (o + i), src, 4);
    }
}

static rc_status where_run(rc_op *op, rc_err *err)
{
    walk w = {0};
    rc_status st = where_shapes(op, &w, err);
    if (st) return st;
    for (int j = 1; j <= 2; j++) {
        if (op->out[0] != op->in[j]) continue;
        const rc_tensor *t = rc_in(op, j);
        int same = t->ndim == w.ndim;
        for (int d = 0; same && d < w.ndim; d++) same = t->dims[d] == w.dims[d];
        if (!same) {
            rc_tensor shape_of = *t;
            shape_of.ndim = w.ndim;
            memcpy(shape_of.dims, w.dims, sizeof w.dims);
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "output blob '%s' is input %d of shape %s, but the result has the broadcast shape %s "
                              "(in place needs the result to have that input's shape)", rc_out_name(op, 0), j,
                              RC_SHAPE(t), RC_SHAPE(&shape_of));
        }
    }
    if ((st = resize_out(op, rc_in(op, 1)->dtype, w.ndim, w.dims, err))) return st;
    where_ctx c = {rc_i32(rc_in(op, 0)), rc_tensor_data(rc_in(op, 1)), rc_tensor_data(rc_in(op, 2)),
                   rc_tensor_data(rc_out(op, 0))};
    walk_run(&w, &c, where_row);
    return RC_OK;
}

/* ================================================================ Expand, ExpandGradient */

static rc_status expand_inputs(rc_op *op, rc_err *err)
{
    const rc_tensor *X = rc_in(op, 0);
    rc_status st = rc_check_input(op, 0, X->dtype == RC_I32 ? RC_I32 : RC_F32, err);
    if (!st) st = rc_check_input(op, 1, RC_I32, err);
    if (!st) st = rc_check_ndim(op, 1, 1, 1, err);
    return st;
}

/* The output shape: X's shape broadcast with the entries of shape (numpy rule). */
static rc_status expand_shape(rc_op *op, walk *w, rc_err *err)
{
    rc_status st = expand_inputs(op, err);
    if (st) return st;
    const rc_tensor *X = rc_in(op, 0), *S = rc_in(op, 1);
    const int64_t m = S->dims[0];
    const int32_t *s = rc_i32(S);
    const int ndim = m > X->ndim ? (int)(m > RC_MAX_DIMS ? RC_MAX_DIMS + 1 : m) : X->ndim;
    if (ndim > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s: a shape of %lld dims is over the %d allowed",
                          rc_in_name(op, 1), RC_SHAPE(S), (long long)m, RC_MAX_DIMS);
    w->ndim = ndim;
    w->k = 1;
    for (int d = 0; d < ndim; d++) {
        const int kx = d - (ndim - X->ndim), ks = d - (ndim - (int)m);
        /* a negative entry keeps X's dim (taken as 1), as Caffe2's (PyTorch's -1) */
        const int64_t dx = kx >= 0 ? X->dims[kx] : 1, ds = ks >= 0 && s[ks] >= 0 ? s[ks] : 1;
        if (dx != ds && dx != 1 && ds != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 0 blob '%s' of shape %s does not broadcast to the shape in input 1 blob '%s' "
                              "(numpy-style, dims aligned from the last): dim %d of '%s' is %lld but entry %d of "
                              "the shape is %lld", rc_in_name(op, 0), RC_SHAPE(X), rc_in_name(op, 1), kx,
                              rc_in_name(op, 0), (long long)dx, ks, (long long)ds);
        w->dims[d] = dx == 1 ? ds : dx;
    }
    walk_strides(w, 0, X);
    return RC_OK;
}

typedef struct copy_ctx {
    const char *x;
    char *y;
} copy_ctx;

static void expand_row(void *p, int64_t o, int64_t len, const int64_t *off, const int64_t *st)
{
    copy_ctx *c = p;
    for (int64_t i = 0; i < len; i++) memcpy(c->y + 4 * (o + i), c->x + 4 * (off[0] + i * st[0]), 4);
}

static rc_status expand_run(rc_op *op, rc_err *err)
{
    walk w = {0};
    rc_status st = expand_shape(op, &w, err);
    if (!st) st = resize_out(op, rc_in(op, 0)->dtype, w.ndim, w.dims, err);
    if (st) return st;
    copy_ctx c = {rc_tensor_data(rc_in(op, 0)), rc_tensor_data(rc_out(op, 0))};
    walk_run(&w, &c, expand_row);
    return RC_OK;
}

/* dY float32; X a tensor (its shape only) that broadcasts to dY's shape: each X dim (aligned from the
 * last) is dY's or 1, and X has at most dY's dims. */
static rc_status expand_grad_inputs(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *dY = rc_in(op, 0), *X = rc_in(op, 1);
    if (X->dtype == RC_UNDEF || !X->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' holds no tensor (was it fed or computed?)",
                          rc_in_name(op, 1));
    int ok = X->ndim <= dY->ndim;
    for (int d = 0; ok && d < X->ndim; d++) {
        const int64_t dx = X->dims[d], dy = dY->dims[d + dY->ndim - X->ndim];
        ok = dx == dy || dx == 1;
    }
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' of shape %s is not an expansion of input 1 blob '%s' of shape %s "
                          "(each dim of X, aligned from the last, must be dY's or 1)", rc_in_name(op, 0),
                          RC_SHAPE(dY), rc_in_name(op, 1), RC_SHAPE(X));
    return RC_OK;
}

static rc_status expand_grad_setup(rc_op *op, rc_err *err)
{
    u2_state *s = NULL;
    return state_new(op, &s, err);
}

typedef struct sum_ctx {
    const float *dy;
    double *acc;
} sum_ctx;

static void expand_grad_row(void *p, int64_t o, int64_t len, const int64_t *off, const int64_t *st)
{
    sum_ctx *c = p;
    for (int64_t i = 0; i < len; i++) c->acc[off[0] + i * st[0]] += c->dy[o + i];
}

/* dY [dY's shape], X -> dX [X's shape]: dX[j] = the sum, in double in dY's element order, of the dY
 * entries that X's entry j was copied to. */
static rc_status expand_grad_run(rc_op *op, rc_err *err)
{
    u2_state *s = op->state;
    rc_status st = expand_grad_inputs(op, err);
    if (st) return st;
    const rc_tensor *dY = rc_in(op, 0), *X = rc_in(op, 1);
    int64_t xdims[RC_MAX_DIMS];
    const int xnd = X->ndim;
    memcpy(xdims, X->dims, sizeof xdims);
    const int64_t nx = rc_tensor_numel(X);
    if (nx > s->acc_n) {
        double *a = realloc(s->acc, (size_t)nx * sizeof *a);
        if (!a)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "cannot allocate %lld doubles for the sums of input 0 blob '%s'",
                              (long long)nx, rc_in_name(op, 0));
        s->acc = a;
        s->acc_n = nx;
    }
    if (nx) memset(s->acc, 0, (size_t)nx * sizeof *s->acc);
    walk w = {0};
    w.ndim = dY->ndim;
    w.k = 1;
    memcpy(w.dims, dY->dims, sizeof w.dims);
    walk_strides(&w, 0, X);
    sum_ctx c = {rc_f32(dY), s->acc};
    walk_run(&w, &c, expand_grad_row);
    if ((st = resize_out(op, RC_F32, xnd, xdims, err))) return st;
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t j = 0; j < nx; j++) dx[j] = (float)s->acc[j];
    return RC_OK;
}

static rc_status expand_grad_check(rc_op *op, rc_err *err) { return expand_grad_inputs(op, err); }

/* ================================================================ the family table */
const rc_op_schema rc_ops_unary2[] = {
    {"Sin", 1, 1, 1, 1, NULL, NULL, sin_run, NULL, "Y = sin(X)", check_x_f32},
    {"SinGradient", 2, 2, 1, 1, inplace_dy1, NULL, sin_grad_run, NULL, "(X, dY) -> dX = dY cos(X)", check_all_f32},
    {"Cos", 1, 1, 1, 1, NULL, NULL, cos_run, NULL, "Y = cos(X)", check_x_f32},
    {"CosGradient", 2, 2, 1, 1, inplace_dy1, NULL, cos_grad_run, NULL, "(X, dY) -> dX = -dY sin(X)",
     check_all_f32},
    {"Tan", 1, 1, 1, 1, NULL, NULL, tan_run, NULL, "Y = tan(X)", check_x_f32},
    {"TanGradient", 2, 2, 1, 1, inplace_dy1, NULL, tan_grad_run, NULL, "(X, dY) -> dX = dY / cos(X)^2",
     check_all_f32},
    {"Asin", 1, 1, 1, 1, NULL, NULL, asin_run, NULL, "Y = asin(X)", check_x_f32},
    {"AsinGradient", 2, 2, 1, 1, inplace_dy1, NULL, asin_grad_run, NULL, "(X, dY) -> dX = dY / sqrt(1 - X^2)",
     check_all_f32},
    {"Acos", 1, 1, 1, 1, NULL, NULL, acos_run, NULL, "Y = acos(X)", check_x_f32},
    {"AcosGradient", 2, 2, 1, 1, inplace_dy1, NULL, acos_grad_run, NULL, "(X, dY) -> dX = -dY / sqrt(1 - X^2)",
     check_all_f32},
    {"Atan", 1, 1, 1, 1, NULL, NULL, atan_run, NULL, "Y = atan(X)", check_x_f32},
    {"AtanGradient", 2, 2, 1, 1, inplace_dy1, NULL, atan_grad_run, NULL, "(X, dY) -> dX = dY / (1 + X^2)",
     check_all_f32},
    {"Sign", 1, 1, 1, 1, rc_inplace_any, NULL, sign_run, NULL, "Y = sign(X) (-1, 0, 1; NaN stays NaN)",
     check_x_f32},
    {"Reciprocal", 1, 1, 1, 1, rc_inplace_any, NULL, reciprocal_run, NULL, "Y = 1 / X (+-inf at +-0)", check_x_f32},
    {"ReciprocalGradient", 2, 2, 1, 1, inplace_dy1, NULL, reciprocal_grad_run, NULL, "(Y, dY) -> dX = -dY Y^2",
     check_all_f32},
    {"RSqrt", 1, 1, 1, 1, rc_inplace_any, NULL, rsqrt_run, NULL, "Y = 1 / sqrt(X) (inf at 0, NaN below)",
     check_x_f32},
    {"RSqrtGradient", 2, 2, 1, 1, inplace_dy0, NULL, rsqrt_grad_run, NULL, "(dY, Y) -> dX = -0.5 dY Y^3",
     check_all_f32},
    {"Floor", 1, 1, 1, 1, rc_inplace_any, NULL, floor_run, NULL, "Y = floor(X)", check_x_f32},
    {"Ceil", 1, 1, 1, 1, rc_inplace_any, NULL, ceil_run, NULL, "Y = ceil(X)", check_x_f32},
    {"Softplus", 1, 1, 1, 1, rc_inplace_any, NULL, softplus_run, NULL, "Y = log(1 + exp(X)) (no overflow)",
     check_x_f32},
    {"SoftplusGradient", 2, 2, 1, 1, inplace_dy1, NULL, softplus_grad_run, NULL,
     "(Y, dY) -> dX = dY (1 - exp(-Y))", check_all_f32},
    {"Selu", 1, 1, 1, 1, rc_inplace_any, selu_setup, selu_run, u2_state_free,
     "Y = X > 0 ? scale X : scale alpha (exp(X) - 1) (args alpha=1.6733, scale=1.0507)", check_x_f32},
    {"SeluGradient", 2, 2, 1, 1, inplace_dy1, selu_grad_setup, selu_grad_run, u2_state_free,
     "(Y, dY) -> dX = Y > 0 ? scale dY : dY (Y + scale alpha) (scale > 0, alpha >= 0; dY of Y's size)",
     check_selu_grad},
    {"Swish", 1, 1, 1, 1, NULL, NULL, swish_run, NULL, "Y = X sigmoid(X)", check_x_f32},
    {"SwishGradient", 3, 3, 1, 1, inplace_dy2, NULL, swish_grad_run, NULL,
     "(X, Y, dY) -> dX = dY (sigmoid(X) + Y (1 - sigmoid(X)))", check_all_f32},
    {"HardSigmoid", 1, 1, 1, 1, rc_inplace_any, hard_sigmoid_setup, hard_sigmoid_run, u2_state_free,
     "Y = min(max(alpha X + beta, 0), 1) (args alpha=0.2, beta=0.5)", check_x_f32},
    {"HardSigmoidGradient", 2, 2, 1, 1, inplace_dy1, hard_sigmoid_setup, hard_sigmoid_grad_run, u2_state_free,
     "(Y, dY) -> dX = 0 < Y < 1 ? alpha dY : 0", check_all_f32},
    {"Cube", 1, 1, 1, 1, NULL, NULL, cube_run, NULL, "Y = X^3", check_x_f32},
    {"CubeGradient", 2, 2, 1, 1, inplace_dy0, NULL, cube_grad_run, NULL, "(dY, X) -> dX = 3 dY X^2", check_all_f32},
    {"Sinh", 1, 1, 1, 1, NULL, NULL, sinh_run, NULL, "Y = sinh(X)", check_x_f32},
    {"SinhGradient", 2, 2, 1, 1, inplace_dy0, NULL, sinh_grad_run, NULL, "(dY, X) -> dX = dY cosh(X)",
     check_all_f32},
    {"Cosh", 1, 1, 1, 1, NULL, NULL, cosh_run, NULL, "Y = cosh(X)", check_x_f32},
    {"CoshGradient", 2, 2, 1, 1, inplace_dy0, NULL, cosh_grad_run, NULL, "(dY, X) -> dX = dY sinh(X)",
     check_all_f32},
    {"Logit", 1, 1, 1, 1, rc_inplace_any, logit_setup, logit_run, u2_state_free,
     "Y = log(c / (1 - c)), c = X clamped to [eps, 1 - eps] (arg eps=1e-6)", check_x_f32},
    {"LogitGradient", 2, 2, 1, 1, inplace_dy1, logit_setup, logit_grad_run, u2_state_free,
     "(X, dY) -> dX = dY / (X (1 - X)) inside [eps, 1 - eps], 0 outside", check_all_f32},
    {"Cbrt", 1, 1, 1, 1, rc_inplace_any, NULL, cbrt_run, NULL, "Y = cbrt(X)", check_x_f32},
    {"CbrtGradient", 2, 2, 1, 1, inplace_dy0, NULL, cbrt_grad_run, NULL, "(dY, Y) -> dX = dY / (3 Y^2)",
     check_all_f32},
    {"IsNaN", 1, 1, 1, 1, NULL, NULL, isnan_run, NULL, "Y = int32 1 where X is NaN, else 0 (Caffe2: bool)",
     check_x_f32},
    {"Log1p", 1, 1, 1, 1, NULL, NULL, log1p_run, NULL, "Y = log1p(X) = log(1 + X)", check_x_f32},
    {"Log1pGradient", 2, 2, 1, 1, inplace_dy1, NULL, log1p_grad_run, NULL, "(X, dY) -> dX = dY / (1 + X)",
     check_all_f32},
    {"Round", 1, 1, 1, 1, rc_inplace_any, NULL, round_run, NULL, "Y = round(X), halves away from zero",
     check_x_f32},
    {"ReplaceNaN", 1, 1, 1, 1, rc_inplace_any, replace_nan_setup, replace_nan_run, u2_state_free,
     "Y = X with every NaN replaced by 'value' (default 0)", check_x_f32},
    {"Erf", 1, 1, 1, 1, NULL, NULL, erf_run, NULL, "Y = erf(X)", check_x_f32},
    {"ErfGradient", 2, 2, 1, 1, inplace_dy1, NULL, erf_grad_run, NULL,
     "(X, dY) -> dX = dY 2 / sqrt(pi) exp(-X^2)", check_all_f32},
    {"ThresholdedRelu", 1, 1, 1, 1, rc_inplace_any, thresholded_setup, thresholded_relu_run, u2_state_free,
     "Y = X <= alpha ? 0 : X (arg alpha=1; NaN stays NaN)", check_x_f32},
    {"ThresholdedReluGradient", 2, 2, 1, 1, inplace_dy1, thresholded_grad_setup, thresholded_relu_grad_run,
     u2_state_free, "(Y, dY) -> dX = Y > 0 ? dY : 0 (alpha >= 0)", check_all_f32},
    {"Gelu", 1, 1, 1, 1, NULL, gelu_setup, gelu_run, u2_state_free,
     "Y = X Phi(X), Phi the standard normal CDF (arg fast_gelu=0: 1 takes the tanh form)", check_x_f32},
    {"GeluGradient", 2, 2, 1, 1, inplace_dy0, gelu_setup, gelu_grad_run, u2_state_free,
     "(dY, X) -> dX = dY (Phi(X) + X phi(X)) (arg fast_gelu: the tanh form's derivative)", check_all_f32},
    {"Glu", 1, 1, 1, 1, NULL, glu_setup, glu_run, u2_state_free,
     "Y = A sigmoid(B), A and B the halves of X along dim (arg dim=-1; no gradient, as Caffe2)", glu_check},
    {"Where", 3, 3, 1, 1, inplace_where, where_setup, where_run, u2_state_free,
     "Z = C ? X : Y (C int32; X, Y float32 or int32; numpy broadcasting, or arg broadcast_on_rows)", where_check},
    {"Expand", 2, 2, 1, 1, NULL, NULL, expand_run, NULL,
     "Y = X broadcast to the shape in the int32 1-D input shape (numpy rule)", expand_inputs},
    {"ExpandGradient", 2, 2, 1, 1, NULL, expand_grad_setup, expand_grad_run, u2_state_free,
     "(dY, X) -> dX = dY summed over the dims where X was repeated (in double)", expand_grad_check},
    {0},
};
