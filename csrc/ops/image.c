/* ops/image.c -- Caffe2's ChannelShuffle and ResizeNearest on the CPU, with
 * their gradient ops (channel_shuffle_op.cc, resize_op.cc).
 *
 * ChannelShuffle(X) -> Y, args group (default 1) and order ("NCHW", the
 * default, or "NHWC"): X float32 with >= 2 dims, (N, C, ...) or (N, ..., C);
 * the C channels are G = group groups of K = C / G. Y has X's shape, channel
 * k G + g of Y being channel g K + k of X: X seen as (N, G, K, S) gives Y
 * (N, K, G, S), S the product of the spatial dims (NHWC: (N S, G, K) to
 * (N S, K, G)). group must be >= 1 (refused when the op is made; Caffe2 took
 * C % 0) and divide C (a ValueError naming the blob, C and group). Caffe2
 * divided X's size by N C to find S, so an empty X with N or C = 0 divided by
 * zero; here it gives an empty Y. Not in place (as Caffe2's schema).
 * ChannelShuffleGradient(dY) -> dX: the inverse permutation, the same args
 * (dX seen as (N, G, K, S) from dY as (N, K, G, S)).
 *
 * ResizeNearest(X[, scales]) -> Y, args width_scale, height_scale (default 1,
 * finite and > 0) and order: X float32 4-D (N, C, H, W) or (N, H, W, C). The
 * optional input scales (float32, 1-D, 2 elements [height_scale, width_scale],
 * Caffe2's ONNX form) replaces the args; its values must be finite and > 0
 * too (Caffe2 did not check them: a zero divided by zero, a negative one gave
 * a negative size). Y has OH = floor(H * height_scale) rows and OW =
 * floor(W * width_scale) columns, each product computed in float as
 * Caffe2's; one that does not fit int32 is a MemoryError (Caffe2's int
 * overflowed). Y[oh, ow] = X[min(floor(oh / height_scale), H - 1),
 * min(floor(ow / width_scale), W - 1)], the division in float as Caffe2's (so
 * the same pixels, its 2x fast path included).
 * ResizeNearestGradient(dY, X[, scales]) -> dX: X only gives the shape (N, C,
 * H, W); dX is zeroed, then every dY[oh, ow] is added onto the X cell
 * ResizeNearest read it from, in float in the order of (oh, ow): the same
 * bits every run. dY must have the shape ResizeNearest gives for X with the
 * same scales (a ValueError otherwise; Caffe2 took N and C from dY and did
 * not check, writing outside dX for a dY larger than X's).
 *
 * No global state; no allocation besides the outputs.
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* ================================================================ ChannelShuffle */

typedef struct {
    int64_t group;
    int nhwc;
} cs_state;

static rc_status cs_setup(rc_op *op, rc_err *err)
{
    cs_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    if ((st = rc_arg_i(&op->def, "group", 1, &s->group, err)) || (st = rc_checks_order(op, &s->nhwc, err)))
        return st;
    if (s->group < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument group=%lld must be >= 1", (long long)s->group);
    return RC_OK;
}

/* X (or dY): float32, >= 2 dims, its channel count a multiple of group. */
static rc_status cs_check(rc_op *op, rc_err *err)
{
    const cs_state *s = op->state;
    rc_status st = rc_checks_image(op, 0, s->nhwc, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t C = x->dims[s->nhwc ? x->ndim - 1 : 1];
    if (C % s->group)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s has %lld channels (order %s), not a multiple "
                          "of argument group=%lld", rc_in_name(op, 0), RC_SHAPE(x), (long long)C,
                          s->nhwc ? "NHWC" : "NCHW", (long long)s->group);
    return RC_OK;
}

/* x (outer, G, K, inner) -> y (outer, K, G, inner). */
static void cs_kernel(int64_t outer, int64_t G, int64_t K, int64_t inner, const float *x, float *y)
{
    const size_t row = (size_t)inner * sizeof *x;
    for (int64_t o = 0; o < outer; o++, x += G * K * inner, y += G * K * inner)
        for (int64_t g = 0; g < G; g++)
            for (int64_t k = 0; k < K; k++) memcpy(y + (k * G + g) * inner, x + (g * K + k) * inner, row);
}

/* ChannelShuffle (grad = 0) and its gradient (grad = 1, the inverse permutation). */
static rc_status cs_run_dir(rc_op *op, int grad, rc_err *err)
{
    const cs_state *s = op->state;
    rc_status st = cs_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = rc_tensor_resize_like(rc_out(op, 0), x, err))) return out_fail(op, 0, err);
    const int64_t n = rc_tensor_numel(x);
    if (n == 0) return RC_OK;
    const int cd = s->nhwc ? x->ndim - 1 : 1;
    const int64_t C = x->dims[cd], G = s->group, K = C / G;
    const int64_t inner = s->nhwc ? 1 : rc_dims_prod(x, 2, x->ndim), outer = n / (C * inner);
    cs_kernel(outer, grad ? K : G, grad ? G : K, inner, rc_f32(x), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status cs_run(rc_op *op, rc_err *err) { return cs_run_dir(op, 0, err); }
static rc_status cs_grad_run(rc_op *op, rc_err *err) { return cs_run_dir(op, 1, err); }

/* ================================================================ ResizeNearest */

typedef struct {
    float scale[2]; /* height, width: the args */
    int nhwc;
} rn_state;

/* Checks one scale; `what` (and, for an input, its index i >= 0 and blob) name it. */
static rc_status rn_scale_ok(rc_op *op, float v, const char *what, int i, rc_err *err)
{
    if (v > 0.0f && isfinite(v)) return RC_OK;
    if (i < 0) return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s=%g must be a finite number > 0", what, (double)v);
    return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (scales) holds %s %g; it must be a finite number > 0",
                      i, rc_in_name(op, i), what, (double)v);
}

static rc_status rn_setup(rc_op *op, rc_err *err)
{
    rn_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    if ((st = rc_arg_f(&op->def, "height_scale", 1.0f, &s->scale[0], err)) ||
        (st = rc_arg_f(&op->def, "width_scale", 1.0f, &s->scale[1], err)) ||
        (st = rc_checks_order(op, &s->nhwc, err)))
        return st;
    if ((st = rn_scale_ok(op, s->scale[0], "height_scale", -1, err)) ||
        (st = rn_scale_ok(op, s->scale[1], "width_scale", -1, err)))
        return st;
    return RC_OK;
}

/* Input i: float32 4-D; `what` names it. */
static rc_status rn_check_4d(rc_op *op, int i, const char *what, rc_err *err)
{
    const rn_state *s = op->state;
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    if (rc_in(op, i)->ndim != 4)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) %s must have 4 dims (order %s: %s)", i,
                          rc_in_name(op, i), what, RC_SHAPE(rc_in(op, i)), s->nhwc ? "NHWC" : "NCHW",
                          s->nhwc ? "N, H, W, C" : "N, C, H, W");
    return RC_OK;
}

/* Input i (scales): float32, 1-D, 2 elements. */
static rc_status rn_check_scales(rc_op *op, int i, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim != 1 || t->dims[0] != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (scales) must be 1-D with 2 elements "
                          "[height_scale, width_scale], got %s", i, rc_in_name(op, i), RC_SHAPE(t));
    return RC_OK;
}

/* The scales of this run: input si's values (checked) when the op has it, else the args. */
static rc_status rn_scales(rc_op *op, int si, float sc[2], rc_err *err)
{
    const rn_state *s = op->state;
    sc[0] = s->scale[0];
    sc[1] = s->scale[1];
    if (op->n_in <= si) return RC_OK;
    const float *v = rc_f32(rc_in(op, si));
    rc_status st;
    if ((st = rn_scale_ok(op, v[0], "height_scale", si, err)) || (st = rn_scale_ok(op, v[1], "width_scale", si, err)))
        return st;
    sc[0] = v[0];
    sc[1] = v[1];
    return RC_OK;
}

/* The geometry of an image tensor t: N, C, H, W by the order. */
static void rn_dims(const rn_state *s, const rc_tensor *t, int64_t g[4])
{
    g[0] = t->dims[0];
    g[1] = t->dims[s->nhwc ? 3 : 1];
    g[2] = t->dims[s->nhwc ? 1 : 2];
    g[3] = t->dims[s->nhwc ? 2 : 3];
}

/* out[d] = floor(in[d] * sc[d]) in float, as Caffe2's; one that does not fit int32 is refused. Input i
 * (an image tensor) is named in the message. */
static rc_status rn_out_sizes(rc_op *op, int i, const int64_t in[2], const float sc[2], int64_t out[2], rc_err *err)
{
    for (int d = 0; d < 2; d++) {
        const float f = (float)in[d] * sc[d];
        if (!(f < 2147483648.0f))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input %d blob '%s' %s: the output %s %lld x %s %g = %g "
                              "overflows int32", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), d ? "width" : "height",
                              (long long)in[d], d ? "width_scale" : "height_scale", (double)sc[d], (double)f);
        out[d] = (int64_t)f;
    }
    return RC_OK;
}

/* The source index of output index o along a dim of n input cells: min(floor(o / scale), n - 1), the
 * division in float as Caffe2's (no overflow for a tiny scale). n >= 1. */
static inline int64_t rn_src(int64_t o, float scale, int64_t n)
{
    const float q = (float)o / scale;
    return (double)q >= (double)(n - 1) ? n - 1 : (int64_t)q;
}

static rc_status rn_check(rc_op *op, rc_err *err)
{
    rc_status st = rn_check_4d(op, 0, "X", err);
    if (st) return st;
    return op->n_in > 1 ? rn_check_scales(op, 1, err) : RC_OK;
}

/* Y (N, C, OH, OW) / (N, OH, OW, C) resized. */
static rc_status rn_resize(rc_op *op, const int64_t g[4], rc_err *err)
{
    const rn_state *s = op->state;
    int64_t dims[4] = {g[0], g[1], g[2], g[3]};
    if (s->nhwc) dims[1] = g[2], dims[2] = g[3], dims[3] = g[1];
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 4, dims, err)) return out_fail(op, 0, err);
    return RC_OK;
}

/* x (N, C, H, W) -> y (N, C, OH, OW) (nhwc: channels innermost); every size > 0. */
static void rn_forward(const int64_t xg[4], const int64_t o[2], const float sc[2], int nhwc, const float *x, float *y)
{
    const int64_t N = xg[0], C = xg[1], H = xg[2], W = xg[3], OH = o[0], OW = o[1];
    const int64_t planes = nhwc ? N : N * C, cell = nhwc ? C : 1;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * H * W * cell;
        float *yp = y + p * OH * OW * cell;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t h = rn_src(oh, sc[0], H);
            for (int64_t ow = 0; ow < OW; ow++, yp += cell)
                memcpy(yp, xp + (h * W + rn_src(ow, sc[1], W)) * cell, (size_t)cell * sizeof *yp);
        }
    }
}

/* dy (N, C, OH, OW) -> dx (N, C, H, W), dx zeroed by the caller; every size > 0. */
static void rn_backward(const int64_t xg[4], const int64_t o[2], const float sc[2], int nhwc, const float *dy,
                        float *dx)
{
    const int64_t N = xg[0], C = xg[1], H = xg[2], W = xg[3], OH = o[0], OW = o[1];
    const int64_t planes = nhwc ? N : N * C, cell = nhwc ? C : 1;
    for (int64_t p = 0; p < planes; p++) {
        float *xp = dx + p * H * W * cell;
        const float *yp = dy + p * OH * OW * cell;
        for (int64_t oh = 0; oh < OH; oh++) {
            const int64_t h = rn_src(oh, sc[0], H);
            for (int64_t ow = 0; ow < OW; ow++, yp += cell) {
                float *xc = xp + (h * W + rn_src(ow, sc[1], W)) * cell;
                for (int64_t c = 0; c < cell; c++) xc[c] += yp[c];
            }
        }
    }
}

static rc_status rn_run(rc_op *op, rc_err *err)
{
    const rn_state *s = op->state;
    rc_status st;
    float sc[2];
    int64_t g[4], o[2];
    if ((st = rn_check(op, err)) || (st = rn_scales(op, 1, sc, err))) return st;
    rn_dims(s, rc_in(op, 0), g);
    if ((st = rn_out_sizes(op, 0, g + 2, sc, o, err))) return st;
    const int64_t yg[4] = {g[0], g[1], o[0], o[1]};
    if ((st = rn_resize(op, yg, err))) return st;
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK; /* then H, W >= 1 where OH, OW >= 1 */
    rn_forward(g, o, sc, s->nhwc, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* dY (input 0) has the shape ResizeNearest gives for X (input 1) with scales sc: N, C equal, OH, OW. */
static rc_status rn_grad_match(rc_op *op, const float sc[2], int64_t xg[4], int64_t o[2], rc_err *err)
{
    const rn_state *s = op->state;
    int64_t yg[4];
    rn_dims(s, rc_in(op, 1), xg);
    rn_dims(s, rc_in(op, 0), yg);
    rc_status st = rn_out_sizes(op, 1, xg + 2, sc, o, err);
    if (st) return st;
    if (yg[0] != xg[0] || yg[1] != xg[1] || yg[2] != o[0] || yg[3] != o[1])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (dY) %s must have the shape ResizeNearest gives "
                          "for input 1 blob '%s' (X) %s with height_scale %g, width_scale %g: N %lld, C %lld, H %lld, "
                          "W %lld (order %s)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), rc_in_name(op, 1),
                          RC_SHAPE(rc_in(op, 1)), (double)sc[0], (double)sc[1], (long long)xg[0], (long long)xg[1],
                          (long long)o[0], (long long)o[1], s->nhwc ? "NHWC" : "NCHW");
    return RC_OK;
}

/* dY, X float32 4-D [, scales]. */
static rc_status rn_grad_inputs(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rn_check_4d(op, 0, "dY", err)) || (st = rn_check_4d(op, 1, "X", err))) return st;
    return op->n_in > 2 ? rn_check_scales(op, 2, err) : RC_OK;
}

/* The inputs; without the scales input (whose values are read when the op runs) dY's shape against X's
 * too. */
static rc_status rn_grad_check(rc_op *op, rc_err *err)
{
    rc_status st = rn_grad_inputs(op, err);
    if (st || op->n_in > 2) return st;
    const rn_state *s = op->state;
    int64_t xg[4], o[2];
    return rn_grad_match(op, s->scale, xg, o, err);
}

static rc_status rn_grad_run(rc_op *op, rc_err *err)
{
    const rn_state *s = op->state;
    rc_status st;
    float sc[2];
    int64_t xg[4], o[2];
    if ((st = rn_grad_inputs(op, err)) || (st = rn_scales(op, 2, sc, err)) || (st = rn_grad_match(op, sc, xg, o, err)))
        return st;
    if ((st = rn_resize(op, xg, err))) return st;
    const int64_t n = rc_tensor_numel(rc_out(op, 0));
    if (n == 0) return RC_OK;
    float *dx = rc_f32(rc_out(op, 0));
    memset(dx, 0, (size_t)n * sizeof *dx);
    if (rc_tensor_numel(rc_in(op, 0)) == 0) return RC_OK;
    rn_backward(xg, o, sc, s->nhwc, rc_f32(rc_in(op, 0)), dx);
    return RC_OK;
}

const rc_op_schema rc_ops_image[] = {
    {"ChannelShuffle", 1, 1, 1, 1, NULL, cs_setup, cs_run, free,
     "X (N, C, ...) -> Y: the C = G K channels as (G, K) transposed to (K, G) (args group=1, order)", cs_check},
    {"ChannelShuffleGradient", 1, 1, 1, 1, NULL, cs_setup, cs_grad_run, free,
     "dY -> dX: ChannelShuffle's inverse permutation (args as ChannelShuffle's)", cs_check},
    {"ResizeNearest", 1, 2, 1, 1, NULL, rn_setup, rn_run, free,
     "(X (4-D)[, scales]) -> Y: nearest-neighbour resize of H, W by height_scale, width_scale (args or input "
     "[height_scale, width_scale]; order)", rn_check},
    {"ResizeNearestGradient", 2, 3, 1, 1, NULL, rn_setup, rn_grad_run, free,
     "(dY, X[, scales]) -> dX: dY summed onto the X cells ResizeNearest read (args as ResizeNearest's)",
     rn_grad_check},
    {0},
};
