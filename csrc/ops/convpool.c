/* ops/convpool.c -- the arguments and output geometry shared by the
 * convolution and pooling ops (ops/convpool.h says what they mean). */
#include "convpool.h"
#include "checks.h"
#include <stdint.h>
#include <string.h>

static int cp_has(const rc_op *op, const char *name) { return rc_opdef_arg(&op->def, name) != NULL; }

static const char *cp_dim_name(int nd, int i)
{
    static const char *const two[] = {"h", "w"}, *const three[] = {"d", "h", "w"};
    return nd == 2 ? two[i] : nd == 3 ? three[i] : "l";
}

/* One argument family: list `list` (n values), or `one` (2-D: its value
 * `reps` times), or the named singles `parts` (all of them); at most one way.
 * *n = 0 when none is given. */
static rc_status cp_family(rc_op *op, const char *list, const char *one, int reps, const char *const *parts,
                           int nparts, int64_t *vals, int maxn, int *n, rc_err *err)
{
    const int64_t *lv = NULL;
    int ln = 0, nparts_given = 0;
    rc_status st = rc_arg_ints(&op->def, list, &lv, &ln, err);
    if (st) return st;
    for (int i = 0; i < nparts; i++) nparts_given += cp_has(op, parts[i]);
    const int ways = (ln > 0) + cp_has(op, one) + (nparts_given > 0);
    if (ways > 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "give argument %s, %s or %s%s... one way only", list, one,
                          parts[0], nparts > 1 ? " + " : "");
    *n = 0;
    if (ln > 0) {
        if (ln > maxn)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s has %d values; at most %d (%d spatial dims)", list,
                              ln, maxn, maxn / (maxn > RC_CP_MAX_ND ? 2 : 1));
        memcpy(vals, lv, (size_t)ln * sizeof *vals);
        *n = ln;
    } else if (cp_has(op, one)) {
        int64_t v;
        if ((st = rc_arg_i(&op->def, one, 0, &v, err))) return st;
        for (int i = 0; i < reps; i++) vals[i] = v;
        *n = reps;
    } else if (nparts_given > 0) {
        for (int i = 0; i < nparts; i++) {
            if (!cp_has(op, parts[i]))
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s is given without %s (give all of them)",
                                  parts[i == 0 ? 1 : 0], parts[i]);
            if ((st = rc_arg_i(&op->def, parts[i], 0, &vals[i], err))) return st;
        }
        *n = nparts;
    }
    return RC_OK;
}

rc_status rc_cp_family(rc_op *op, const char *list, const char *one, int reps, const char *const *parts, int nparts,
                       int64_t *vals, int maxn, int *n, rc_err *err)
{
    return cp_family(op, list, one, reps, parts, nparts, vals, maxn, n, err);
}

static rc_status cp_range(rc_op *op, const char *what, const int64_t *v, int n, int64_t lo, rc_err *err)
{
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s: value %d is %lld, must lie in [%lld, 2^31 - 1]",
                              what, i, (long long)v[i], (long long)lo);
    return RC_OK;
}

/* RC_CP_PAD (order, legacy_pad and global_pooling already parsed): the pads
 * only, 2-D, negative allowed; strides and dilations 1; no kernel. */
static rc_status cp_parse_pad(rc_op *op, rc_cp_args *a, rc_err *err)
{
    static const char *const sparts[] = {"stride_h", "stride_w"}, *const dparts[] = {"dilation_h", "dilation_w"},
                             *const pparts[] = {"pad_t", "pad_l", "pad_b", "pad_r"};
    int ns, ndl, np;
    rc_status st;
    if (a->legacy_pad != RC_CP_NOTSET)
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes explicit pads only: argument legacy_pad must be 0 (NOTSET), "
                          "got %d", a->legacy_pad);
    if ((st = cp_family(op, "strides", "stride", 2, sparts, 2, a->stride, RC_CP_MAX_ND, &ns, err)) ||
        (st = cp_family(op, "dilations", "dilation", 2, dparts, 2, a->dilation, RC_CP_MAX_ND, &ndl, err)) ||
        (st = cp_family(op, "pads", "pad", 4, pparts, 4, a->pads, 2 * RC_CP_MAX_ND, &np, err)) ||
        (st = cp_range(op, "pads", a->pads, np, -(int64_t)INT32_MAX, err)))
        return st;
    for (int i = 0; i < ns + ndl; i++) {
        const int64_t v = i < ns ? a->stride[i] : a->dilation[i - ns];
        if (v != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument %s: value %d is %lld; padding takes 1 only", i < ns ?
                              "strides" : "dilations", i < ns ? i : i - ns, (long long)v);
    }
    if (np != 0 && np != 4)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument pads has %d values; padding is 2-D: give 4 (pad_t, pad_l, "
                          "pad_b, pad_r)", np);
    a->nd = 2;
    if (np == 0) memset(a->pads, 0, sizeof a->pads);
    for (int i = 0; i < 2; i++) a->kernel[i] = a->stride[i] = a->dilation[i] = 1;
    return RC_OK;
}

rc_status rc_cp_parse(rc_op *op, int kind, rc_cp_args *a, rc_err *err)
{
    static const char *const kparts[] = {"kernel_h", "kernel_w"}, *const sparts[] = {"stride_h", "stride_w"},
                             *const dparts[] = {"dilation_h", "dilation_w"},
                             *const pparts[] = {"pad_t", "pad_l", "pad_b", "pad_r"};
    memset(a, 0, sizeof *a);
    a->kind = kind;
    rc_status st;
    int64_t legacy = 0, global = 0;
    if ((st = rc_checks_order(op, &a->nhwc, err))) return st;
    if ((st = rc_arg_i(&op->def, "legacy_pad", 0, &legacy, err))) return st;
    if (legacy < 0 || legacy > 3)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument legacy_pad must be 0 (NOTSET), 1 (VALID), 2 (SAME) or 3 "
                          "(CAFFE_LEGACY_POOLING), got %lld", (long long)legacy);
    a->legacy_pad = (int)legacy;
    if ((st = rc_arg_i(&op->def, "global_pooling", 0, &global, err))) return st;
    if (global && kind != RC_CP_POOL)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument global_pooling is for the pooling ops only");
    a->global = global != 0;

    if (kind == RC_CP_PAD) return cp_parse_pad(op, a, err);
    int nk, ns, ndl, np;
    if ((st = cp_family(op, "kernels", "kernel", 2, kparts, 2, a->kernel, RC_CP_MAX_ND, &nk, err)) ||
        (st = cp_family(op, "strides", "stride", 2, sparts, 2, a->stride, RC_CP_MAX_ND, &ns, err)) ||
        (st = cp_family(op, "dilations", "dilation", 2, dparts, 2, a->dilation, RC_CP_MAX_ND, &ndl, err)) ||
        (st = cp_family(op, "pads", "pad", 4, pparts, 4, a->pads, 2 * RC_CP_MAX_ND, &np, err)))
        return st;
    if ((st = cp_range(op, "kernels", a->kernel, nk, 1, err)) ||
        (st = cp_range(op, "strides", a->stride, ns, 1, err)) ||
        (st = cp_range(op, "dilations", a->dilation, ndl, 1, err)) || (st = cp_range(op, "pads", a->pads, np, 0, err)))
        return st;
    if (np > 0 && (legacy == RC_CP_VALID || legacy == RC_CP_SAME))
        return rc_op_fail(op, err, RC_ERR_VALUE, "with legacy_pad %s (%lld) the pads are computed: give no pads",
                          legacy == RC_CP_VALID ? "VALID" : "SAME", (long long)legacy);
    if (a->global) {
        for (int i = 0; i < ns; i++)
            if (a->stride[i] != 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "with global_pooling give no strides (got %lld)",
                                  (long long)a->stride[i]);
        for (int i = 0; i < ndl; i++)
            if (a->dilation[i] != 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "with global_pooling give no dilations (got %lld)",
                                  (long long)a->dilation[i]);
        for (int i = 0; i < np; i++)
            if (a->pads[i] != 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "with global_pooling give no pads (got %lld)",
                                  (long long)a->pads[i]);
        a->nd = 0; /* from X */
        return RC_OK;
    }
    if (nk == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "needs the kernel size: argument kernels (a list), kernel (2-D) or "
                          "kernel_h + kernel_w");
    a->nd = nk;
    if (ns != 0 && ns != nk)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument strides has %d values for a %d-D kernel", ns, nk);
    if (ndl != 0 && ndl != nk)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument dilations has %d values for a %d-D kernel", ndl, nk);
    if (np != 0 && np != 2 * nk)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument pads has %d values for a %d-D kernel (%d heads, then %d "
                          "tails)", np, nk, nk, nk);
    for (int i = 0; i < nk; i++) {
        if (ns == 0) a->stride[i] = 1;
        if (ndl == 0) a->dilation[i] = 1;
    }
    if (np == 0)
        for (int i = 0; i < 2 * nk; i++) a->pads[i] = 0;
    for (int i = 0; i < nk; i++)
        if (a->dilation[i] != 1 && (kind == RC_CP_POOL || legacy == RC_CP_SAME || legacy == RC_CP_CAFFE_LEGACY_POOLING))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument dilations: %lld in dim %d; %s takes dilation 1 only",
                              (long long)a->dilation[i], i,
                              kind == RC_CP_POOL      ? "pooling"
                              : legacy == RC_CP_SAME ? "legacy_pad SAME"
                                                     : "legacy_pad CAFFE_LEGACY_POOLING");
    return RC_OK;
}

static int64_t cp_ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* The geometry of input xi, which holds a tensor (its dtype checked by the caller). */
static rc_status cp_geometry(rc_op *op, const rc_cp_args *a, int xi, rc_cp_geom *g, rc_err *err)
{
    const rc_tensor *x = rc_in(op, xi);
    const char *order = a->nhwc ? "NHWC" : "NCHW";
    int nd = a->nd;
    if (nd == 0) { /* global pooling: nd from X */
        if (x->ndim < 3 || x->ndim > RC_CP_MAX_ND + 2)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s must have 3 to %d dims (%s: N, C and 1 to "
                              "%d spatial dims)", xi, rc_in_name(op, xi), RC_SHAPE(x), RC_CP_MAX_ND + 2,
                              a->nhwc ? "N, spatial dims, C" : "N, C, spatial dims", RC_CP_MAX_ND);
        nd = x->ndim - 2;
    } else if (x->ndim != nd + 2) {
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s must have %d dims for a %d-D kernel (order %s: "
                          "%s)", xi, rc_in_name(op, xi), RC_SHAPE(x), nd + 2, nd, order,
                          a->nhwc ? "N, spatial dims, C" : "N, C, spatial dims");
    }
    memset(g, 0, sizeof *g);
    g->nd = nd;
    g->N = x->dims[0];
    g->C = a->nhwc ? x->dims[x->ndim - 1] : x->dims[1];
    g->in_size = g->out_size = g->kernel_size = 1;
    for (int i = 0; i < nd; i++) {
        const int64_t in = x->dims[a->nhwc ? 1 + i : 2 + i];
        int64_t k, s, d, ph, pt, out;
        if (in < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' %s (order %s) has spatial size 0 in dim %s: no window fits", xi,
                              rc_in_name(op, xi), RC_SHAPE(x), order, cp_dim_name(nd, i));
        if (a->global) {
            k = in, s = 1, d = 1, ph = pt = 0, out = 1;
        } else {
            k = a->kernel[i], s = a->stride[i], d = a->dilation[i];
            const int64_t dk = d * (k - 1) + 1;
            ph = a->pads[i], pt = a->pads[nd + i];
            int64_t span;
            switch (a->legacy_pad) {
            case RC_CP_VALID:
                ph = pt = 0;
                span = in;
                break;
            case RC_CP_SAME: {
                const int64_t target = (in + s - 1) / s;
                int64_t need = (target - 1) * s + k - in;
                if (need < 0) need = 0;
                ph = need / 2, pt = need - ph;
                span = in + need;
                break;
            }
            case RC_CP_CAFFE_LEGACY_POOLING:
                span = in + 2 * ph;
                break;
            default:
                span = in + ph + pt;
            }
            if (span < dk)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "input %d blob '%s' %s (order %s): spatial size %lld in dim %s with pads %lld + "
                                  "%lld is smaller than the window %lld (kernel %lld, dilation %lld)",
                                  xi, rc_in_name(op, xi), RC_SHAPE(x), order, (long long)in, cp_dim_name(nd, i),
                                  (long long)ph, (long long)(a->legacy_pad == RC_CP_CAFFE_LEGACY_POOLING ? ph : pt),
                                  (long long)dk, (long long)k, (long long)d);
            if (a->legacy_pad == RC_CP_CAFFE_LEGACY_POOLING) {
                const int64_t standard = (span - k) / s + 1;
                out = cp_ceil_div(span - k, s) + 1;
                if (ph > 0 && (out - 1) * s >= in + ph) out--;
                pt = ph + s * (out - standard);
            } else {
                out = (span - dk) / s + 1;
            }
        }
        g->in[i] = in, g->out[i] = out, g->kernel[i] = k, g->stride[i] = s, g->dilation[i] = d;
        g->pad_head[i] = ph, g->pad_tail[i] = pt;
        g->in_size *= in; /* the product of dims of an existing tensor */
        if (__builtin_mul_overflow(g->out_size, out, &g->out_size) ||
            __builtin_mul_overflow(g->kernel_size, k, &g->kernel_size))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input %d blob '%s' %s: the output or window has more than 2^63 "
                              "elements", xi, rc_in_name(op, xi), RC_SHAPE(x));
    }
    return RC_OK;
}

rc_status rc_cp_geometry(rc_op *op, const rc_cp_args *a, int xi, rc_cp_geom *g, rc_err *err)
{
    rc_status st = rc_check_input(op, xi, RC_F32, err);
    return st ? st : cp_geometry(op, a, xi, g, err);
}

rc_status rc_cp_geometry_shape(rc_op *op, const rc_cp_args *a, int xi, rc_cp_geom *g, rc_err *err)
{
    const rc_blob *b = op->in[xi];
    if (b->obj || b->t.dtype == RC_UNDEF || !b->t.storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", xi,
                          rc_in_name(op, xi));
    return cp_geometry(op, a, xi, g, err);
}

void rc_cp_out_dims(const rc_cp_args *a, const rc_cp_geom *g, int64_t out_channels, int64_t *dims)
{
    dims[0] = g->N;
    for (int i = 0; i < g->nd; i++) dims[(a->nhwc ? 1 : 2) + i] = g->out[i];
    dims[a->nhwc ? g->nd + 1 : 1] = out_channels;
}
