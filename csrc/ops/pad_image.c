/* ops/pad_image.c -- Caffe2's PadImage and PadImageGradient on the CPU, and
 * SpaceToBatch / BatchToSpace (their section below).
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
#include "checks.h"
#include "convpool.h"
#include <stdint.h>
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

/* ================================================================ SpaceToBatch / BatchToSpace */

/* Caffe2's SpaceToBatch and BatchToSpace (space_batch_op.h), NCHW float32:
 *   SpaceToBatch(X) -> Y: X (N, C, H, W) zero-padded to (H + pad_t + pad_b,
 *     W + pad_l + pad_r), each divisible by b = block_size; Y (N b b, C,
 *     Hp / b, Wp / b), Y[(oh_off b + ow_off) N + n, c, i, j] = the padded
 *     X[n, c, i b + oh_off, j b + ow_off].
 *   BatchToSpace(X) -> Y: the inverse: X (B, C, H, W) with B divisible by
 *     b b; Y (B / (b b), C, H b - pad_t - pad_b, W b - pad_l - pad_r), the
 *     rearranged image with the pads cropped off.
 * Each is the other's gradient (Caffe2's gradient makers), with the same
 * arguments. Arguments: block_size (default 2, >= 1), pad (default 0) and
 * pad_t, pad_l, pad_b, pad_r (each default pad), each in [0, 2^31 - 1];
 * order NCHW only (as Caffe2).
 * Where Caffe2 differs: it read pad_l, pad_b and pad_r from `pad` (only
 * pad_t was honoured); it did not check block_size (0 divided by zero),
 * negative pads, a batch that b b does not divide (BatchToSpace truncated
 * it) or pads larger than BatchToSpace's image (negative dims). */
typedef struct {
    int64_t block, pad[4]; /* pad: t, l, b, r */
} sb_state;

static rc_status sb_setup(rc_op *op, rc_err *err)
{
    static const char *const names[] = {"pad_t", "pad_l", "pad_b", "pad_r"};
    sb_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    int nhwc = 0;
    int64_t pad = 0;
    rc_status st;
    if ((st = rc_checks_order(op, &nhwc, err))) return st;
    if (nhwc) return rc_op_fail(op, err, RC_ERR_VALUE, "supports order NCHW only (as Caffe2's), got NHWC");
    if ((st = rc_arg_i(&op->def, "block_size", 2, &s->block, err))) return st;
    if (s->block < 1 || s->block > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument block_size must lie in [1, 2^31 - 1], got %lld",
                          (long long)s->block);
    if ((st = rc_arg_i(&op->def, "pad", 0, &pad, err))) return st;
    for (int i = -1; i < 4; i++) {
        int64_t v = pad;
        if (i >= 0 && (st = rc_arg_i(&op->def, names[i], pad, &v, err))) return st;
        if (v < 0 || v > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s must lie in [0, 2^31 - 1], got %lld",
                              i < 0 ? "pad" : names[i], (long long)v);
        if (i >= 0) s->pad[i] = v;
    }
    return RC_OK;
}

/* X (input 0, float32 4-D) checked; Y's dims into out. to_batch: SpaceToBatch. */
static rc_status sb_shapes(rc_op *op, int to_batch, int64_t *out, rc_err *err)
{
    const sb_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim != 4)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s must have 4 dims (N, C, H, W)",
                          rc_in_name(op, 0), RC_SHAPE(x));
    const int64_t b = s->block, bb = b * b; /* < 2^62 */
    out[1] = x->dims[1];
    if (to_batch) {
        for (int d = 0; d < 2; d++) {
            const int64_t n = x->dims[2 + d] + s->pad[d] + s->pad[2 + d]; /* < 2^47 */
            if (n % b)
                return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s: the padded %s, %lld + pads %lld + "
                                  "%lld = %lld, is not a multiple of block_size %lld", rc_in_name(op, 0), RC_SHAPE(x),
                                  d ? "width" : "height", (long long)x->dims[2 + d], (long long)s->pad[d],
                                  (long long)s->pad[2 + d], (long long)n, (long long)b);
            out[2 + d] = n / b;
        }
        if (__builtin_mul_overflow(x->dims[0], bb, &out[0]))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s: the output batch, %lld x block_size^2 "
                              "%lld, is beyond 2^63", rc_in_name(op, 0), RC_SHAPE(x), (long long)x->dims[0],
                              (long long)bb);
        return RC_OK;
    }
    if (x->dims[0] % bb)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s: the batch %lld is not a multiple of "
                          "block_size^2 = %lld", rc_in_name(op, 0), RC_SHAPE(x), (long long)x->dims[0], (long long)bb);
    out[0] = x->dims[0] / bb;
    for (int d = 0; d < 2; d++) {
        int64_t n;
        if (__builtin_mul_overflow(x->dims[2 + d], b, &n))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s: the %s x block_size %lld is beyond 2^63",
                              rc_in_name(op, 0), RC_SHAPE(x), d ? "width" : "height", (long long)b);
        out[2 + d] = n - s->pad[d] - s->pad[2 + d];
        if (out[2 + d] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s: the pads %lld + %lld crop more than the "
                              "%s %lld x block_size %lld = %lld", rc_in_name(op, 0), RC_SHAPE(x), (long long)s->pad[d],
                              (long long)s->pad[2 + d], d ? "width" : "height", (long long)x->dims[2 + d],
                              (long long)b, (long long)n);
    }
    return RC_OK;
}

static rc_status s2b_check(rc_op *op, rc_err *err)
{
    int64_t out[4];
    return sb_shapes(op, 1, out, err);
}

static rc_status b2s_check(rc_op *op, rc_err *err)
{
    int64_t out[4];
    return sb_shapes(op, 0, out, err);
}

/* Both directions as one walk over the batch tensor (N b b, C, h, w) and the
 * padded image tensor (N, C, h b, w b), whose cells outside the unpadded image
 * (H, W at offsets pad_t, pad_l) are zeros in SpaceToBatch and dropped in
 * BatchToSpace. bat: the batch tensor's data; img: the image's (N, C, H, W). */
static void sb_move(const sb_state *s, int to_batch, int64_t N, int64_t C, int64_t h, int64_t w, int64_t H,
                    int64_t W, float *bat, float *img)
{
    const int64_t b = s->block, pt = s->pad[0], pl = s->pad[1];
    for (int64_t oh = 0; oh < b; oh++)
        for (int64_t ow = 0; ow < b; ow++)
            for (int64_t n = 0; n < N; n++)
                for (int64_t c = 0; c < C; c++) {
                    float *bp = bat + ((((oh * b + ow) * N + n) * C + c) * h) * w;
                    float *ip = img + (n * C + c) * H * W;
                    for (int64_t i = 0; i < h; i++) {
                        const int64_t ih = i * b + oh - pt;
                        float *brow = bp + i * w;
                        if (ih < 0 || ih >= H) {
                            if (to_batch) memset(brow, 0, (size_t)w * sizeof *brow);
                            continue;
                        }
                        for (int64_t j = 0; j < w; j++) {
                            const int64_t iw = j * b + ow - pl;
                            const int in = iw >= 0 && iw < W;
                            if (to_batch)
                                brow[j] = in ? ip[ih * W + iw] : 0.0f;
                            else if (in)
                                ip[ih * W + iw] = brow[j];
                        }
                    }
                }
}

static rc_status sb_run(rc_op *op, int to_batch, rc_err *err)
{
    int64_t out[4];
    rc_status st = sb_shapes(op, to_batch, out, err);
    if (st) return st;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, 4, out, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    const rc_tensor *x = rc_in(op, 0), *y = rc_out(op, 0);
    if (rc_tensor_numel(x) == 0 || rc_tensor_numel(y) == 0) return RC_OK;
    const rc_tensor *bat = to_batch ? y : x, *img = to_batch ? x : y;
    sb_move(op->state, to_batch, img->dims[0], img->dims[1], bat->dims[2], bat->dims[3], img->dims[2], img->dims[3],
            rc_f32(bat), rc_f32(img));
    return RC_OK;
}

static rc_status s2b_run(rc_op *op, rc_err *err) { return sb_run(op, 1, err); }
static rc_status b2s_run(rc_op *op, rc_err *err) { return sb_run(op, 0, err); }

const rc_op_schema rc_ops_pad_image[] = {
    {"PadImage", 1, 1, 1, 1, NULL, pi_setup, pi_run, pi_free,
     "X -> Y: X (4-D) padded or cropped in H and W (args pads / pad / pad_t..pad_r, mode constant|reflect|edge, "
     "value, order)", pi_check},
    {"PadImageGradient", 1, 1, 1, 1, NULL, pi_setup, pi_grad_run, pi_free,
     "dY -> dX: the sum of dY onto the X cells PadImage copied (args as PadImage's)", pi_grad_check},
    {"SpaceToBatch", 1, 1, 1, 1, NULL, sb_setup, s2b_run, free,
     "X -> Y: X (N, C, H, W) zero-padded, its block_size x block_size blocks moved into the batch: Y (N b b, C, "
     "Hp / b, Wp / b) (args block_size, pad / pad_t..pad_r, order NCHW)", s2b_check},
    {"BatchToSpace", 1, 1, 1, 1, NULL, sb_setup, b2s_run, free,
     "X -> Y: SpaceToBatch's inverse: X (B, C, H, W) to (B / b^2, C, H b - pads, W b - pads) (args as "
     "SpaceToBatch's)", b2s_check},
    {0},
};
