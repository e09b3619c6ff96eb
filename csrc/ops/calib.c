/* ops/calib.c -- Caffe2's feature calibration ops: percentile_op,
 * bisect_percentile_op, batch_box_cox_op and piecewise_linear_transform_op.
 *
 *   Percentile(X, VAL_PCT, LENS) -> Y  X float32 [N, F]; VAL_PCT float32 [V, 2] (value, percentile)
 *                                      rows, F runs of LENS[j] rows (int32 [F], sum V), each sorted
 *                                      by value: Y[i, j] = the percentile of X[i, j] in run j: its
 *                                      percentile where the value is listed, linear between the two
 *                                      listed values around it, 0 below the run, 1 above it (and for
 *                                      an empty run, as Caffe2)
 *   BisectPercentile(RAW) -> PCT       RAW float32 [N, F]; args percentile_raw / _mapping / _lower /
 *                                      _upper (floats, one length) in F runs of lengths[j] (>= 1)
 *                                      entries, raw sorted within a run: PCT[i, j] = mapping[k]
 *                                      where raw[k] == x, (1 - w) upper[k] + w lower[k+1] with
 *                                      w = (x - raw[k]) / (raw[k+1] - raw[k] + 1e-10) between
 *                                      raw[k] and raw[k+1], 0 below the run, 1 above it
 *   BatchBoxCox(D, L1, L2) -> Y        D float32 [N, ...] (ndim >= 1), L1 and L2 float32 of K
 *                                      entries, K = D's size past dim 0: with t = max(D + L2, 1e-6)
 *                                      per column, Y = log(t) where L1 is 0, else (t^L1 - 1) / L1;
 *                                      args naive / min_block_size accepted (they picked Caffe2's
 *                                      MKL path: one result here)
 *   PiecewiseLinearTransform(X[, bounds, slopes, intercepts]) -> Y
 *                                      the pieces from the args bounds / slopes / intercepts
 *                                      (floats) or from the inputs (float32, any shape, by their
 *                                      elements): G groups of P pieces, G (P + 1) bounds sorted
 *                                      within a group, G P slopes and intercepts. X float32 [N, G]:
 *                                      column j through group j; binary=1: G = 1, X [N] or [N, 1]
 *                                      through it, or [N, 2] with Y[:, 1] = f(X[:, 1]) and
 *                                      Y[:, 0] = 1 - Y[:, 1]. f(x) = s[k] x + c[k] for
 *                                      b[k] < x <= b[k+1], s[0] b[0] + c[0] for x <= b[0],
 *                                      s[P-1] b[P] + c[P-1] for x >= b[P]; arg pieces accepted
 *
 * All float32, none differentiable (Caffe2: NO_GRADIENT, SHOULD_NOT_DO_GRADIENT,
 * BatchBoxCox GRADIENT_NOT_IMPLEMENTED_YET). BatchBoxCox runs in place (Y over D,
 * as Caffe2's schema). Float arithmetic as Caffe2's. What differs from Caffe2:
 *  - the sorted values (VAL_PCT's by run, percentile_raw's by run, the bounds by
 *    group) are checked, NaN refused: a ValueError naming the run and position
 *    (Caffe2 assumed them sorted, checked only the bounds given as args);
 *  - a NaN X gives NaN (Caffe2: 0 for Percentile, a value of some piece or a
 *    read past the table for the others);
 *  - BisectPercentile's lengths must be >= 1 (Caffe2 read before the table for 0);
 *  - BatchBoxCox checks L1 / L2 for empty D too (Caffe2 returned first); float32 only
 *    (Caffe2: double too).
 *
 * No global state; BisectPercentile's and PiecewiseLinearTransform's state holds
 * pointers into the op's arguments and, for BisectPercentile, the run offsets
 * (owned by op->state).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The first i in v[0..n) with v[i] NaN or v[i] < v[i - 1]; -1 when v is sorted. */
static int64_t first_unsorted(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (isnan(v[i]) || (i && v[i] < v[i - 1])) return i;
    return -1;
}

/* Output 0 takes input 0's shape, float32. */
static rc_status resize_as_x(rc_op *op, rc_err *err)
{
    rc_status st = rc_tensor_resize_like(rc_out(op, 0), rc_in(op, 0), err);
    if (st) return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    return RC_OK;
}

/* Input i float32 with ndim 2. */
static rc_status check_f32_2d(rc_op *op, int i, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    return st ? st : rc_check_ndim(op, i, 2, 2, err);
}

/* The first r in lo..hi-1 with v[r * stride] >= x (hi when none); v sorted there. */
static int64_t lower_bound(const float *v, int64_t stride, int64_t lo, int64_t hi, float x)
{
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (v[mid * stride] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ================================================================ Percentile */

static rc_status pct_check(rc_op *op, rc_err *err)
{
    rc_status st = check_f32_2d(op, 0, err);
    if (!st) st = check_f32_2d(op, 1, err);
    if (!st) st = rc_checks_i32_vector(op, 2, "lengths", err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *vp = rc_in(op, 1), *l = rc_in(op, 2);
    if (vp->dims[1] != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (value_to_pct) of shape %s must have 2 columns "
                          "(value, percentile)", rc_in_name(op, 1), RC_SHAPE(vp));
    if (l->dims[0] != x->dims[1])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (lengths) of shape %s must have one entry per "
                          "column of input 0 blob '%s' of shape %s", rc_in_name(op, 2), RC_SHAPE(l),
                          rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

/* Checks the lengths (>= 0, sum V) and that each run of values is sorted. */
static rc_status pct_check_values(rc_op *op, rc_err *err)
{
    rc_status st = rc_checks_lengths_sum(op, 2, 1, err);
    if (st) return st;
    const rc_tensor *vp = rc_in(op, 1), *l = rc_in(op, 2);
    const float *v = vp->dims[0] ? rc_f32(vp) : NULL;
    const int32_t *len = l->dims[0] ? rc_i32(l) : NULL;
    int64_t start = 0;
    for (int64_t j = 0; j < l->dims[0]; j++) {
        for (int64_t r = start; r < start + len[j]; r++) {
            if (!isnan(v[2 * r]) && (r == start || v[2 * r] >= v[2 * r - 2])) continue;
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (value_to_pct): run %lld (rows %lld..%lld) "
                              "must be sorted by value, but row %lld holds %g after %g", rc_in_name(op, 1),
                              (long long)j, (long long)start, (long long)(start + len[j] - 1), (long long)r,
                              (double)v[2 * r], r == start ? NAN : (double)v[2 * r - 2]);
        }
        start += len[j];
    }
    return RC_OK;
}

static rc_status pct_run(rc_op *op, rc_err *err)
{
    rc_status st = pct_check(op, err);
    if (!st) st = pct_check_values(op, err);
    if (!st) st = resize_as_x(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 2);
    const int64_t n = x->dims[0], f = x->dims[1];
    if (!n || !f) return RC_OK;
    const float *xd = rc_f32(x), *vp = rc_in(op, 1)->dims[0] ? rc_f32(rc_in(op, 1)) : NULL;
    const int32_t *len = rc_i32(l);
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        int64_t start = 0;
        for (int64_t j = 0; j < f; j++) {
            const float v = xd[i * f + j];
            const int64_t end = start + len[j];
            const int64_t lo = isnan(v) ? end : lower_bound(vp, 2, start, end, v); /* by value, in the run */
            float out;
            if (isnan(v)) out = v;
            else if (lo == end) out = 1.0f;
            else if (v == vp[2 * lo]) out = vp[2 * lo + 1];
            else if (lo == start) out = 0.0f;
            else {
                const float p0 = vp[2 * lo - 1], p1 = vp[2 * lo + 1];
                const float t = (v - vp[2 * lo - 2]) / (vp[2 * lo] - vp[2 * lo - 2]);
                out = p0 + t * (p1 - p0);
            }
            y[i * f + j] = out;
            start = end;
        }
    }
    return RC_OK;
}

/* ================================================================ BisectPercentile */

typedef struct bisect_state {
    const float *raw, *mapping, *lower, *upper; /* in the op's arguments */
    int nf;                                     /* runs (features) */
    int64_t *start;                             /* nf + 1 run offsets (owned) */
} bisect_state;

static void bisect_free(void *p)
{
    bisect_state *s = p;
    if (!s) return;
    free(s->start);
    free(s);
}

static rc_status bisect_setup(rc_op *op, rc_err *err)
{
    bisect_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    static const char *const names[4] = {"percentile_raw", "percentile_mapping", "percentile_lower",
                                         "percentile_upper"};
    const float **dst[4] = {&s->raw, &s->mapping, &s->lower, &s->upper};
    int n[4];
    const int64_t *len = NULL;
    rc_status st = RC_OK;
    for (int a = 0; a < 4 && !st; a++) st = rc_arg_floats(&op->def, names[a], dst[a], &n[a], err);
    if (!st) st = rc_arg_ints(&op->def, "lengths", &len, &s->nf, err);
    if (st) return st;
    for (int a = 1; a < 4; a++)
        if (n[a] != n[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' has %d entries but 'percentile_raw' has %d "
                              "(one each)", names[a], n[a], n[0]);
    s->start = calloc((size_t)s->nf + 1, sizeof *s->start);
    if (!s->start) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    for (int j = 0; j < s->nf; j++) {
        if (len[j] < 1 || len[j] > n[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'lengths' holds %lld at position %d; each run needs "
                              "1 to %d entries of 'percentile_raw'", (long long)len[j], j, n[0]);
        s->start[j + 1] = s->start[j] + len[j];
        if (s->start[j + 1] > n[0]) break;
    }
    if (s->start[s->nf] != n[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'lengths' must sum to the %d entries of 'percentile_raw'",
                          n[0]);
    for (int j = 0; j < s->nf; j++) {
        const int64_t k = first_unsorted(s->raw + s->start[j], s->start[j + 1] - s->start[j]);
        if (k >= 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'percentile_raw': run %d (entries %lld..%lld) must be "
                              "sorted, but entry %lld is %g", j, (long long)s->start[j],
                              (long long)(s->start[j + 1] - 1), (long long)(s->start[j] + k),
                              (double)s->raw[s->start[j] + k]);
    }
    return RC_OK;
}

static rc_status bisect_check(rc_op *op, rc_err *err)
{
    const bisect_state *s = op->state;
    rc_status st = check_f32_2d(op, 0, err);
    if (st) return st;
    if (rc_in(op, 0)->dims[1] != s->nf)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s must have one column per entry of "
                          "argument 'lengths' (%d)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), s->nf);
    return RC_OK;
}

static float bisect_one(const bisect_state *s, int j, float x)
{
    const float *raw = s->raw + s->start[j];
    const int64_t n = s->start[j + 1] - s->start[j], o = s->start[j];
    if (isnan(x)) return x;
    if (x < raw[0]) return 0.0f;
    if (x > raw[n - 1]) return 1.0f;
    /* k: the last entry <= x (raw[0] <= x <= raw[n-1], so 0 <= k < n) */
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (raw[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    const int64_t k = lo - 1;
    if (raw[k] == x) return s->mapping[o + k];
    const float w = (x - raw[k]) / (raw[k + 1] - raw[k] + 1e-10f);
    return (1 - w) * s->upper[o + k] + w * s->lower[o + k + 1];
}

static rc_status bisect_run(rc_op *op, rc_err *err)
{
    const bisect_state *s = op->state;
    rc_status st = bisect_check(op, err);
    if (!st) st = resize_as_x(op, err);
    if (st) return st;
    const int64_t n = rc_in(op, 0)->dims[0], f = s->nf;
    if (!n || !f) return RC_OK;
    const float *x = rc_f32(rc_in(op, 0));
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < f; j++) y[i * f + j] = bisect_one(s, (int)j, x[i * f + j]);
    return RC_OK;
}

/* ================================================================ BatchBoxCox */

static int inplace_00(int in, int out) { return in == 0 && out == 0; }

static rc_status boxcox_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = rc_check_ndim(op, 0, 1, RC_MAX_DIMS, err);
    if (st) return st;
    const rc_tensor *d = rc_in(op, 0);
    int64_t k = 1;
    for (int i = 1; i < d->ndim; i++) k *= d->dims[i];
    for (int i = 1; i < 3; i++) {
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
        if (rc_tensor_numel(rc_in(op, i)) != k)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lambda%d) of shape %s must have %lld "
                              "entries, one per column of input 0 blob '%s' of shape %s", i, rc_in_name(op, i), i,
                              RC_SHAPE(rc_in(op, i)), (long long)k, rc_in_name(op, 0), RC_SHAPE(d));
    }
    return RC_OK;
}

static rc_status boxcox_run(rc_op *op, rc_err *err)
{
    rc_status st = boxcox_check(op, err);
    if (!st) st = resize_as_x(op, err);
    if (st) return st;
    const int64_t m = rc_tensor_numel(rc_in(op, 0)), k = rc_tensor_numel(rc_in(op, 1));
    if (!m) return RC_OK;
    const float *d = rc_f32(rc_in(op, 0)), *l1 = rc_f32(rc_in(op, 1)), *l2 = rc_f32(rc_in(op, 2));
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < m; i += k)
        for (int64_t j = 0; j < k; j++) {
            float t = d[i + j] + l2[j];
            t = t < 1e-6f ? 1e-6f : t; /* NaN stays NaN */
            y[i + j] = l1[j] == 0 ? logf(t) : (powf(t, l1[j]) - 1) / l1[j];
        }
    return RC_OK;
}

/* ================================================================ PiecewiseLinearTransform */

typedef struct pwl_state {
    int binary;
    int from_args;
    const float *b, *s, *c; /* from the args (in the op's arguments) */
    int64_t nb, ns, nc;
} pwl_state;

/* The pieces' counts: G groups of P pieces from nb bounds, ns slopes, nc intercepts. `src` names where
 * they come from in messages. */
static rc_status pwl_groups(rc_op *op, const pwl_state *s, int64_t nb, int64_t ns, int64_t nc, const char *src,
                            int64_t *g, int64_t *p, rc_err *err)
{
    if (ns != nc)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s: %lld slopes but %lld intercepts (one each)", src, (long long)ns,
                          (long long)nc);
    *g = nb - ns;
    if (*g < 1 || ns % *g || ns / *g < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s: %lld bounds and %lld slopes do not make G groups of P >= 1 "
                          "pieces (G (P + 1) bounds, G P slopes)", src, (long long)nb, (long long)ns);
    if (s->binary && *g != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s: binary=1 takes one group of pieces, got %lld (%lld bounds, "
                          "%lld slopes)", src, (long long)*g, (long long)nb, (long long)ns);
    *p = ns / *g;
    return RC_OK;
}

static rc_status pwl_sorted(rc_op *op, const float *b, int64_t g, int64_t p, const char *src, rc_err *err)
{
    for (int64_t j = 0; j < g; j++) {
        const int64_t k = first_unsorted(b + j * (p + 1), p + 1);
        if (k >= 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "%s: the bounds of group %lld (entries %lld..%lld) must be "
                              "sorted, but entry %lld is %g", src, (long long)j, (long long)(j * (p + 1)),
                              (long long)(j * (p + 1) + p), (long long)(j * (p + 1) + k), (double)b[j * (p + 1) + k]);
    }
    return RC_OK;
}

static rc_status pwl_setup(rc_op *op, rc_err *err)
{
    pwl_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    int64_t binary, pieces;
    int nb, ns, nc;
    rc_status st = rc_arg_i(&op->def, "binary", 0, &binary, err);
    if (!st) st = rc_arg_i(&op->def, "pieces", 0, &pieces, err); /* accepted, as Caffe2's (unused) */
    if (!st) st = rc_arg_floats(&op->def, "bounds", &s->b, &nb, err);
    if (!st) st = rc_arg_floats(&op->def, "slopes", &s->s, &ns, err);
    if (!st) st = rc_arg_floats(&op->def, "intercepts", &s->c, &nc, err);
    if (st) return st;
    s->binary = binary != 0;
    s->nb = nb, s->ns = ns, s->nc = nc;
    const int set = (nb > 0) + (ns > 0) + (nc > 0);
    if (set != 0 && set != 3)
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments 'bounds', 'slopes' and 'intercepts' must be all set or "
                          "all unset (got %d, %d and %d entries)", nb, ns, nc);
    s->from_args = set == 3;
    if (op->n_in != (s->from_args ? 1 : 4))
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes the pieces from the arguments (then X only) or from inputs "
                          "(X, bounds, slopes, intercepts): got %d inputs with%s the arguments", op->n_in,
                          s->from_args ? "" : "out");
    if (!s->from_args) return RC_OK;
    int64_t g, p;
    st = pwl_groups(op, s, nb, ns, nc, "the arguments", &g, &p, err);
    return st ? st : pwl_sorted(op, s->b, g, p, "argument 'bounds'", err);
}

/* The shape checks; *g / *p the groups and pieces (from the inputs' sizes when they hold them). */
static rc_status pwl_shapes(rc_op *op, int64_t *g, int64_t *p, rc_err *err)
{
    const pwl_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = rc_check_ndim(op, 0, s->binary ? 1 : 2, 2, err);
    if (st) return st;
    if (s->from_args) st = pwl_groups(op, s, s->nb, s->ns, s->nc, "the arguments", g, p, err);
    else {
        for (int i = 1; i < 4 && !st; i++) st = rc_check_input(op, i, RC_F32, err);
        if (!st)
            st = pwl_groups(op, s, rc_tensor_numel(rc_in(op, 1)), rc_tensor_numel(rc_in(op, 2)),
                            rc_tensor_numel(rc_in(op, 3)), "inputs 1..3 (bounds, slopes, intercepts)", g, p, err);
    }
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t m = x->ndim == 2 ? x->dims[1] : 1;
    if (s->binary && m > 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s: binary=1 takes [N], [N, 1] or "
                          "[N, 2]", rc_in_name(op, 0), RC_SHAPE(x));
    if (!s->binary && m != *g)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s must have one column per group of "
                          "pieces (%lld)", rc_in_name(op, 0), RC_SHAPE(x), (long long)*g);
    return RC_OK;
}

static rc_status pwl_check(rc_op *op, rc_err *err)
{
    int64_t g, p;
    return pwl_shapes(op, &g, &p, err);
}

static float pwl_one(float x, const float *b, const float *sl, const float *c, int64_t p)
{
    if (isnan(x)) return x;
    if (x <= b[0]) return sl[0] * b[0] + c[0];
    if (x >= b[p]) return sl[p - 1] * b[p] + c[p - 1];
    const int64_t k = lower_bound(b, 1, 0, p + 1, x) - 1; /* b[k] < x <= b[k+1], 0 <= k < p */
    return sl[k] * x + c[k];
}

static rc_status pwl_run(rc_op *op, rc_err *err)
{
    const pwl_state *s = op->state;
    int64_t g, p;
    rc_status st = pwl_shapes(op, &g, &p, err);
    if (st) return st;
    const float *b = s->b, *sl = s->s, *c = s->c;
    if (!s->from_args) {
        b = rc_f32(rc_in(op, 1)), sl = rc_f32(rc_in(op, 2)), c = rc_f32(rc_in(op, 3));
        if ((st = pwl_sorted(op, b, g, p, "input 1 (bounds)", err))) return st;
    }
    if ((st = resize_as_x(op, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = x->dims[0], m = x->ndim == 2 ? x->dims[1] : 1;
    if (!n || !m) return RC_OK;
    const float *xd = rc_f32(x);
    float *y = rc_f32(rc_out(op, 0));
    if (s->binary && m == 2) {
        for (int64_t i = 0; i < n; i++) {
            y[2 * i + 1] = pwl_one(xd[2 * i + 1], b, sl, c, p);
            y[2 * i] = 1.0f - y[2 * i + 1];
        }
        return RC_OK;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            const int64_t gj = s->binary ? 0 : j;
            y[i * m + j] = pwl_one(xd[i * m + j], b + gj * (p + 1), sl + gj * p, c + gj * p, p);
        }
    return RC_OK;
}

/* ================================================================ the family table */
const rc_op_schema rc_ops_calib[] = {
    {"Percentile", 3, 3, 1, 1, NULL, NULL, pct_run, NULL,
     "(X [N, F], VAL_PCT [V, 2], LENS [F]) -> the percentile of each X in its column's run", pct_check},
    {"BisectPercentile", 1, 1, 1, 1, NULL, bisect_setup, bisect_run, bisect_free,
     "RAW [N, F] -> its percentiles by the runs of the percentile_* arguments", bisect_check},
    {"BatchBoxCox", 3, 3, 1, 1, inplace_00, NULL, boxcox_run, NULL,
     "(D, L1, L2) -> log(max(D + L2, 1e-6)) where L1 is 0, else (max(D + L2, 1e-6)^L1 - 1) / L1",
     boxcox_check},
    {"PiecewiseLinearTransform", 1, 4, 1, 1, NULL, pwl_setup, pwl_run, free,
     "X[, bounds, slopes, intercepts] -> each column through its piecewise linear function (arg binary)",
     pwl_check},
    {0},
};
