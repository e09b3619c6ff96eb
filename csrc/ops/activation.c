/* ops/activation.c -- Caffe2's prelu_op (PRelu with one slope per channel) and
 * square_root_divide_op (rows scaled by 1 / sqrt of a per-row value).
 *
 *   PRelu(X, W) -> Y                 arg order="NCHW": Y = X > 0 ? X : W[c] X, c the channel of
 *                                    the element: dim 1 of X (NCHW) or its last dim (NHWC); W 1-D
 *                                    float32 of C entries, or of 1 (shared by every channel, any X)
 *   PReluGradient(Y, dY, X, W)       -> (dX, dW): dX = X > 0 ? dY : W[c] dY; dW[c] = the sum over
 *                                    the elements of channel c with X <= 0 of dY X, in double
 *                                    (Caffe2's input order; Y is checked, not read)
 *   SquareRootDivide(data, scale)    -> Y: data float32 of N rows (dim 0, ndim >= 1), scale 1-D
 *                                    float32 or int32 of N entries: row i of Y is row i of data
 *                                    times 1 / sqrt(scale[i]), or itself where scale[i] is 0
 *
 * PRelu and SquareRootDivide run in place (Y over X / data, as Caffe2's
 * schemas); PReluGradient may write dX over dY. Its gradient maker is in
 * recurrent/_grad_activation.py (SquareRootDivide's gradient is
 * SquareRootDivide(dY, scale), scale gets none). What differs from Caffe2:
 *  - the order argument is checked (NCHW or NHWC; Caffe2 took anything other
 *    than NCHW as NHWC) and W must be 1-D;
 *  - SquareRootDivide's scale is int32 where Caffe2 took int64 too (int32
 *    here, range-checked by FeedBlob); a negative scale gives NaN rows, as
 *    Caffe2's and NumPy's sqrt (no error).
 *
 * No global state; PRelu's and PReluGradient's state is their order flag (owned by op->state).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int inplace_00(int in, int out) { return in == 0 && out == 0; }
static int inplace_dy(int in, int out) { return in == 1 && out == 0; }

/* Output o takes the shape (and float32 dtype) of the input tensor like. */
static rc_status resize_as(rc_op *op, int o, const rc_tensor *like, rc_err *err)
{
    rc_status st = rc_tensor_resize_like(rc_out(op, o), like, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* ================================================================ PRelu */

/* X as outer blocks of C channels of inner elements each: element (o, c, k) at (o C + c) inner + k. */
typedef struct prelu_geom {
    int64_t outer, c, inner;
} prelu_geom;

static rc_status prelu_setup(rc_op *op, rc_err *err)
{
    const char *order = NULL;
    rc_status st = rc_arg_s(&op->def, "order", "NCHW", &order, err);
    if (st) return st;
    if (strcmp(order, "NCHW") && strcmp(order, "NHWC"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument order='%s' must be 'NCHW' or 'NHWC'", order);
    int *nhwc = malloc(sizeof *nhwc);
    if (!nhwc) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    *nhwc = strcmp(order, "NHWC") == 0;
    op->state = nhwc;
    return RC_OK;
}

/* X at input ix, W at iw, both float32; W 1-D of 1 or C entries -> the geometry (g may be NULL). */
static rc_status prelu_shapes(rc_op *op, int ix, int iw, prelu_geom *g, rc_err *err)
{
    prelu_geom unused;
    if (!g) g = &unused;
    rc_status st = rc_check_input(op, ix, RC_F32, err);
    if (!st) st = rc_check_input(op, iw, RC_F32, err);
    if (!st) st = rc_check_ndim(op, iw, 1, 1, err);
    if (st) return st;
    const rc_tensor *X = rc_in(op, ix), *W = rc_in(op, iw);
    const int nhwc = *(const int *)op->state;
    const int64_t n = rc_tensor_numel(X), nw = W->dims[0];
    if (nw == 1) {
        *g = (prelu_geom){1, 1, n};
        return RC_OK;
    }
    const int cd = nhwc ? X->ndim - 1 : 1;
    if (X->ndim < (nhwc ? 1 : 2) || X->dims[cd] != nw)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' %s must have 1 entry (shared) or one per channel of input %d blob "
                          "'%s' of shape %s (order %s: channels are its %s dim)", iw, rc_in_name(op, iw),
                          RC_SHAPE(W), ix, rc_in_name(op, ix), RC_SHAPE(X), nhwc ? "NHWC" : "NCHW",
                          nhwc ? "last" : "second");
    g->c = nw;
    g->inner = 1;
    for (int d = cd + 1; d < X->ndim; d++) g->inner *= X->dims[d];
    g->outer = nw && g->inner ? n / (nw * g->inner) : 0;
    return RC_OK;
}

static rc_status prelu_check(rc_op *op, rc_err *err) { return prelu_shapes(op, 0, 1, NULL, err); }

static rc_status prelu_run(rc_op *op, rc_err *err)
{
    prelu_geom g;
    rc_status st = prelu_shapes(op, 0, 1, &g, err);
    if (!st) st = resize_as(op, 0, rc_in(op, 0), err);
    if (st || !rc_tensor_numel(rc_in(op, 0))) return st;
    const float *x = rc_f32(rc_in(op, 0)), *w = rc_f32(rc_in(op, 1));
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t o = 0; o < g.outer; o++)
        for (int64_t c = 0; c < g.c; c++) {
            const int64_t base = (o * g.c + c) * g.inner;
            for (int64_t k = 0; k < g.inner; k++) {
                const float v = x[base + k];
                y[base + k] = v > 0 ? v : w[c] * v;
            }
        }
    return RC_OK;
}

/* (Y, dY, X, W): Y, dY, X float32 of one shape; W as PRelu's. */
static rc_status prelu_grad_shapes(rc_op *op, prelu_geom *g, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 3; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        if (i < 2 && !rc_tensor_same_shape(rc_in(op, i), rc_in(op, 2)))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' of shape %s must have the shape of input 2 blob '%s' (X) %s", i,
                              rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), rc_in_name(op, 2), RC_SHAPE(rc_in(op, 2)));
    }
    return prelu_shapes(op, 2, 3, g, err);
}

static rc_status prelu_grad_check(rc_op *op, rc_err *err) { return prelu_grad_shapes(op, NULL, err); }

/* Channel by channel: dX and dW[c] in one pass (dW summed in double, in element order within a channel). */
static rc_status prelu_grad_run(rc_op *op, rc_err *err)
{
    prelu_geom g;
    rc_status st = prelu_grad_shapes(op, &g, err);
    if (!st) st = resize_as(op, 0, rc_in(op, 2), err);
    if (!st) st = resize_as(op, 1, rc_in(op, 3), err);
    if (st) return st;
    const float *dy = rc_f32(rc_in(op, 1)), *x = rc_f32(rc_in(op, 2)), *w = rc_f32(rc_in(op, 3));
    float *dx = rc_f32(rc_out(op, 0)), *dw = rc_f32(rc_out(op, 1));
    for (int64_t c = 0; c < g.c; c++) {
        double acc = 0;
        for (int64_t o = 0; o < g.outer; o++) {
            const int64_t base = (o * g.c + c) * g.inner;
            for (int64_t k = 0; k < g.inner; k++) {
                const float v = x[base + k], d = dy[base + k];
                if (v > 0) {
                    dx[base + k] = d;
                } else {
                    acc += (double)d * v;
                    dx[base + k] = w[c] * d;
                }
            }
        }
        dw[c] = (float)acc;
    }
    return RC_OK;
}

/* ================================================================ SquareRootDivide */

static rc_status srd_check(rc_op *op, rc_err *err)
{
    const rc_tensor *D = rc_in(op, 0), *S = rc_in(op, 1);
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = rc_check_ndim(op, 0, 1, RC_MAX_DIMS, err);
    if (!st) st = rc_check_input(op, 1, S->dtype == RC_I32 ? RC_I32 : RC_F32, err);
    if (!st) st = rc_check_ndim(op, 1, 1, 1, err);
    if (st) return st;
    if (S->dims[0] != D->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (scale) %s must have one entry per row of input 0 blob '%s' (data) %s",
                          rc_in_name(op, 1), RC_SHAPE(S), rc_in_name(op, 0), RC_SHAPE(D));
    return RC_OK;
}

static rc_status srd_run(rc_op *op, rc_err *err)
{
    rc_status st = srd_check(op, err);
    if (!st) st = resize_as(op, 0, rc_in(op, 0), err);
    if (st) return st;
    const rc_tensor *D = rc_in(op, 0), *S = rc_in(op, 1);
    const int64_t rows = D->dims[0], total = rc_tensor_numel(D);
    if (!total) return RC_OK;
    const int64_t len = total / rows;
    const float *d = rc_f32(D);
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t r = 0; r < rows; r++) {
        const double s = S->dtype == RC_I32 ? (double)rc_i32(S)[r] : (double)rc_f32(S)[r];
        const float f = s == 0 ? 1.0f : (float)(1.0 / sqrt(s));
        for (int64_t k = 0; k < len; k++) y[r * len + k] = d[r * len + k] * f;
    }
    return RC_OK;
}

/* ================================================================ the family table */
const rc_op_schema rc_ops_activation[] = {
    {"PRelu", 2, 2, 1, 1, inplace_00, prelu_setup, prelu_run, free,
     "Y = X > 0 ? X : W[c] X, W one slope per channel (arg order=NCHW / NHWC) or one shared", prelu_check},
    {"PReluGradient", 4, 4, 2, 2, inplace_dy, prelu_setup, prelu_grad_run, free,
     "(Y, dY, X, W) -> (dX, dW): dX = X > 0 ? dY : W[c] dY, dW[c] = sum of dY X where X <= 0",
     prelu_grad_check},
    {"SquareRootDivide", 2, 2, 1, 1, inplace_00, NULL, srd_run, NULL,
     "(data, scale) -> row i of data times 1 / sqrt(scale[i]) (1 where scale[i] is 0)", srd_check},
    {0},
};
