/* ops/pad_image.c -- Caffe2's PadImage and PadImageGradient on the CPU.
 *
 * PadImage(X) -> Y: X is float32 4-D, NCHW (N, C, H, W) or NHWC (N, H, W, C)
 * by argument order. The pads are ConvPoolOpBase's (`pads` = [t, l, b, r],
 * `pad`, or `pad_t` + `pad_l` + `pad_b` + `pad_r`; default 0), parsed by the
 * shared base as kind RC_CP_PAD (ops/convpool.h): no kernel, strides and
 * dilations 1, legacy_pad 0, and a pad may be negative: it crops that side.
 * Y has H + pad_t + pad_b rows and W + pad_l + pad_r columns (each must be
 * >= 1, as in Caffe2). Y[.., oh, ow, ..] = X[.., src(oh - pad_t, H),
 * src(ow - pad_l, W), ..] with, for an index h into a dim of size n:
 *  - mode "constant" (default): h if 0 <= h < n, else the argument `value`
 *    (float, default 0);
 *  - mode "reflect": reflection without repeating the edge (np.pad's
 *    "reflect"): -h if h < 0, 2 (n - 1) - h if h >= n. Each pad must be
 *    <= n - 1 (one reflection: Caffe2 read outside X beyond that; np.pad
 *    reflects again);
 *  - mode "edge": h clamped to [0, n - 1].
 * With negative pads the mapping is the same (Caffe2's): a crop on one side
 * and a pad on the other reflect or clamp about the edges of X, not of the
 * cropped image. A spatial size of 0 is refused, except in constant mode
 * (Y is all `value`). N = 0 or C = 0 gives an empty Y (Caffe2 refused an
 * empty X).
 * PadImageGradient(dY) -> dX: dX has dY's N and C and spatial sizes
 * dY's - pads (so the same arguments as the forward op); dX[x] is the sum of
 * dY[y] over every y whose source is x (in constant mode the padding cells
 * reach no x), accumulated in float in the order of y (row-major over the
 * spatial dims): the same bits every run. `value` is not read.
 * The state is the parsed arguments and two index maps (rows, columns) that
 * grow with the output.
 */
#include "../core/rc_core.h"
#include "convpool.h"
#include <stdlib.h>
#include <string.h>

enum { PI_CONSTANT, PI_REFLECT, PI_EDGE };
static const char *const pi_mode_names[] = {"constant", "reflect", "edge"};

typedef struct {
    rc_cp_args a;
    int mode;
    float value;
    int64_t *map;  /* rows then columns: the source index, -1 for a constant cell */
    int64_t map_n; /* capacity of map */
} pi_state;

/* The geometry: N, C and (in, out) per spatial dim. */
typedef struct {
    int64_t N, C, in[2], out[2];
} pi_geom;

static void pi_free(void *p)
{
    pi_state *s = p;
    if (s) free(s->map);
    free(s);
}

static rc_status pi_setup(rc_op *op, rc_err *err)
{
    pi_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    const char *mode = NULL;
    if ((st = rc_cp_parse(op, RC_CP_PAD, &s->a, err))) return st;
    if ((st = rc_arg_s(&op->def, "mode", "constant", &mode, err))) return st;
    if ((st = rc_arg_f(&op->def, "value", 0.0f, &s->value, err))) return st;
    for (s->mode = 0; s->mode < 3 && strcmp(mode, pi_mode_names[s->mode]) != 0; s->mode++) {}
    if (s->mode == 3)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument mode must be \"constant\", \"reflect\" or \"edge\", got "
                          "\"%s\"", mode);
    return RC_OK;
}

/* Checks one spatial dim: input size `in`, output size `out` with pads ph,
 * pt. t is input i's tensor (named in the messages). */
static rc_status pi_check_dim(rc_op *op, int i, const rc_tensor *t, int d, int64_t in, int64_t out, rc_err *err)
{
    const pi_state *s = op->state;
    const char *dn = d ? "w" : "h";
    const int64_t ph = s->a.pads[d], pt = s->a.pads[2 + d];
    if (out < 1 || in < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s: in dim %s the image has size %lld and the "
                          "padded image %lld (pads %lld + %lld); need image >= 0 and padded >= 1", i, rc_in_name(op, i),
                          RC_SHAPE(t), dn, (long long)in, (long long)out, (long long)ph, (long long)pt);
    if (s->mode != PI_CONSTANT && in == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s: dim %s of the image has size 0: mode \"%s\" "
                          "has no cell to copy", i, rc_in_name(op, i), RC_SHAPE(t), dn, pi_mode_names[s->mode]);
    if (s->mode == PI_REFLECT && (ph > in - 1 || pt > in - 1))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s: mode \"reflect\" needs pads <= size - 1 in "
                          "dim %s (size %lld, pads %lld, %lld)", i, rc_in_name(op, i), RC_SHAPE(t), dn, (long long)in,
                          (long long)ph, (long long)pt);
    return RC_OK;
}

/* Input 0 (X of PadImage, dY of the gradient: grad != 0) checked, *g filled. */
static rc_status pi_geometry(rc_op *op, int grad, pi_geom *g, rc_err *err)
{
    const pi_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, 0);
    if (t->ndim != 4)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s must have 4 dims (order %s: %s)",
                          rc_in_name(op, 0), RC_SHAPE(t), s->a.nhwc ? "NHWC" : "NCHW",
                          s->a.nhwc ? "N, H, W, C" : "N, C, H, W");
    g->N = t->dims[0];
    g->C = t->dims[s->a.nhwc ? 3 : 1];
    for (int d = 0; d < 2; d++) {
        const int64_t n = t->dims[(s->a.nhwc ? 1 : 2) + d], p = s->a.pads[d] + s->a.pads[2 + d];
        g->in[d] = n, g->out[d] = n;
        if (grad ? __builtin_sub_overflow(n, p, &g->in[d]) : __builtin_add_overflow(n, p, &g->out[d]))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s: the padded size overflows",
                              rc_in_name(op, 0), RC_SHAPE(t));
        if ((st = pi_check_dim(op, 0, t, d, g->in[d], g->out[d], err))) return st;
    }
    return RC_OK;
}

/* The index maps for g (rows then columns) in s->map, grown as needed. */
static rc_status pi_maps(rc_op *op, const pi_geom *g, rc_err *err)
{
    pi_state *s = op->state;
    const int64_t need = g->out[0] + g->out[1];
    if (need > s->map_n) {
        int64_t *m = (uint64_t)need <= SIZE_MAX / sizeof *m ? realloc(s->map, (size_t)need * sizeof *m) : NULL;
        if (!m) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the index maps (%lld entries)",
                                  (long long)need);
        s->map = m;
        s->map_n = need;
    }
    int64_t *m = s->map;
    for (int d = 0; d < 2; d++) {
        const int64_t n = g->in[d], ph = s->a.pads[d];
        for (int64_t o = 0; o < g->out[d]; o++) {
            int64_t h = o - ph;
            switch (s->mode) {
            case PI_REFLECT:
                if (h < 0) h = -h;
                if (h >= n) h = 2 * (n - 1) - h;
                break;
            case PI_EDGE:
                h = h < 0 ? 0 : h >= n ? n - 1 : h;
                break;
            default:
                if (h < 0 || h >= n) h = -1;
            }
            *m++ = h;
        }
    }
    return RC_OK;
}

/* Y from X (nhwc: channels innermost). */
static void pi_forward(const pi_geom *g, int nhwc, const int64_t *rows, const int64_t *cols, float value,
                       const float *x, float *y)
{
    const int64_t H = g->in[0], W = g->in[1], OH = g->out[0], OW = g->out[1], C = g->C;
    const int64_t planes = nhwc ? g->N : g->N * g->C, cell = nhwc ? C : 1;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * H * W * cell;
        float *yp = y + p * OH * OW * cell;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++, yp += cell) {
                const int64_t h = rows[oh], w = cols[ow];
                if (h < 0 || w < 0) {
                    for (int64_t c = 0; c < cell; c++) yp[c] = value;
                } else {
                    memcpy(yp, xp + (h * W + w) * cell, (size_t)cell * sizeof *yp);
                }
            }
    }
}

/* dX from dY: dX zeroed, then every dY cell added onto its source. */
static void pi_backward(const pi_geom *g, int nhwc, const int64_t *rows, const int64_t *cols, const float *dy,
                        float *dx)
{
    const int64_t H = g->in[0], W = g->in[1], OH = g->out[0], OW = g->out[1], C = g->C;
    const int64_t planes = nhwc ? g->N : g->N * g->C, cell = nhwc ? C : 1;
    if (planes * H * W * cell > 0) memset(dx, 0, (size_t)(planes * H * W * cell) * sizeof *dx);
    for (int64_t p = 0; p < planes; p++) {
        float *xp = dx + p * H * W * cell;
        const float *yp = dy + p * OH * OW * cell;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++, yp += cell) {
                const int64_t h = rows[oh], w = cols[ow];
                if (h < 0 || w < 0) continue;
                float *xc = xp + (h * W + w) * cell;
                for (int64_t c = 0; c < cell; c++) xc[c] += yp[c];
            }
    }
}

static rc_status pi_check(rc_op *op, rc_err *err)
{
    pi_geom g;
    return pi_geometry(op, 0, &g, err);
}

static rc_status pi_grad_check(rc_op *op, rc_err *err)
{
    pi_geom g;
    return pi_geometry(op, 1, &g, err);
}

/* Resizes output 0 to (N, C, h, w) / (N, h, w, C) for the spatial sizes sp. */
static rc_status pi_resize(rc_op *op, const pi_geom *g, const int64_t *sp, rc_err *err)
{
    const pi_state *s = op->state;
    int64_t dims[4] = {g->N, g->C, sp[0], sp[1]};
    if (s->a.nhwc) dims[1] = sp[0], dims[2] = sp[1], dims[3] = g->C;
    rc_status st = rc_tensor_resize(rc_out(op, 0), RC_F32, 4, dims, err);
    if (st) return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    return RC_OK;
}

static rc_status pi_run(rc_op *op, rc_err *err)
{
    const pi_state *s = op->state;
    pi_geom g;
    rc_status st;
    if ((st = pi_geometry(op, 0, &g, err)) || (st = pi_resize(op, &g, g.out, err))) return st;
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK;
    if ((st = pi_maps(op, &g, err))) return st;
    pi_forward(&g, s->a.nhwc, s->map, s->map + g.out[0], s->value, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status pi_grad_run(rc_op *op, rc_err *err)
{
    const pi_state *s = op->state;
    pi_geom g;
    rc_status st;
    if ((st = pi_geometry(op, 1, &g, err)) || (st = pi_resize(op, &g, g.in, err))) return st;
    if (rc_tensor_numel(rc_in(op, 0)) == 0) return RC_OK; /* N or C is 0: dX is empty too */
    if ((st = pi_maps(op, &g, err))) return st;
    pi_backward(&g, s->a.nhwc, s->map, s->map + g.out[0], rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

const rc_op_schema rc_ops_pad_image[] = {
    {"PadImage", 1, 1, 1, 1, NULL, pi_setup, pi_run, pi_free,
     "X -> Y: X (4-D) padded or cropped in H and W (args pads / pad / pad_t..pad_r, mode constant|reflect|edge, "
     "value, order)", pi_check},
    {"PadImageGradient", 1, 1, 1, 1, NULL, pi_setup, pi_grad_run, pi_free,
     "dY -> dX: the sum of dY onto the X cells PadImage copied (args as PadImage's)", pi_grad_check},
    {0},
};
