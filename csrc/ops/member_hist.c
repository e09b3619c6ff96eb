/* ops/member_hist.c -- Caffe2's IsMemberOf (elementwise_logical_ops.h) and AccumulateHistogram
 * (utility_ops.h). CPU; neither has a gradient (Caffe2: SHOULD_NOT_DO_GRADIENT; recurrent/_grad_math.py,
 * recurrent/_grad_loss.py).
 *
 *   IsMemberOf(X int32, any shape) -> Y int32 of X's shape, arg `value` (list of ints), `dtype`
 *     Y[i] = 1 where X[i] is one of `value`, else 0 (Caffe2: bool; bools are int32 0 / 1 here).
 *     Caffe2 took int32, int64, bool and string X; here X is int32 (our integer and bool dtype)
 *     and a float32 X is a TypeError naming the blob. Every value must fit int32 (ValueError at
 *     creation naming its position; int64 blobs are int32 here, so a larger value can match
 *     nothing). Duplicates are allowed; no `value` gives all zeros (Caffe2's empty set).
 *     `dtype` (Caffe2's TensorProto DataType of the values) may be left out (0, UNDEFINED) or be
 *     INT32 (2), INT64 (10) or BOOL (5), all int32 here; STRING (4) and any other value are a
 *     ValueError at creation (Caffe2 threw for the others). With BOOL every value must be 0 or 1
 *     (ValueError at creation naming it; Caffe2 cast any nonzero value to true). Y may be X.
 *
 *   AccumulateHistogram(X float32, any shape) -> (CUR_HIST (B + 2,) int32, ACC_HIST (B + 2,) int32),
 *     args lower_bound (float, default 0), upper_bound (float, default 1), num_buckets B (int,
 *     default 1). Caffe2's bins, in float arithmetic as Caffe2: with seg = (upper - lower) / (float)B,
 *     x < lower goes to bin 0, x >= upper to bin B + 1, otherwise to bin (int)((x - lower) / seg) + 1,
 *     which float rounding may make B + 1 for an x just below upper, as in Caffe2 (where a
 *     quotient past B + 1 would have written out of bounds, it is bin B + 1 here). -inf goes to
 *     bin 0, +inf to bin B + 1. CUR_HIST counts this run's X; ACC_HIST the op's X of every run
 *     so far (state of the op instance, as Caffe2's accumulate_hist_: a net keeps it across
 *     RunNet calls, RunOperatorOnce starts afresh).
 *     Differences from Caffe2, each a ValueError: B must be in [1, 2^31 - 3] (Caffe2: > 0), the
 *     bounds finite with lower < upper and seg a positive finite float (Caffe2 did not check;
 *     lower >= upper put everything in bin 0 or B + 1, a NaN bound gave undefined bins) -- at
 *     creation; a NaN in X (Caffe2: a cast of NaN to int, undefined, an out-of-bounds write) names
 *     its position, and a count past 2^31 - 1 (the counts are int32; Caffe2: int64) names the
 *     bin -- at the run, before anything is written (the accumulated counts are kept).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* ================================================================ IsMemberOf */

typedef struct {
    int n;          /* distinct values */
    int32_t *vals;  /* owned, sorted ascending, distinct; NULL when n is 0 */
} member_state;

static void member_free(void *p)
{
    member_state *s = p;
    if (!s) return;
    free(s->vals);
    free(s);
}

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static rc_status member_setup(rc_op *op, rc_err *err)
{
    member_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    int64_t dtype = 0;
    if ((st = rc_arg_i(&op->def, "dtype", 0, &dtype, err))) return st;
    if (dtype == 4)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dtype' is STRING (4): there are no string blobs here "
                          "(X must be int32)");
    if (dtype != 0 && dtype != 2 && dtype != 5 && dtype != 10)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dtype' must be UNDEFINED (0), INT32 (2), BOOL (5) or "
                          "INT64 (10) (all int32 here), got %lld", (long long)dtype);
    const int64_t *v;
    int n;
    if ((st = rc_arg_ints(&op->def, "value", &v, &n, err))) return st;
    for (int i = 0; i < n; i++)
        if (v[i] < INT32_MIN || v[i] > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'value' holds %lld at position %d, outside int32's "
                              "range (X is int32)", (long long)v[i], i);
    /* Caffe2 cast each value to bool (any nonzero one became true); a value other than 0 / 1 given
     * for bools is refused here rather than silently matching 1 or, compared as an int32, nothing. */
    if (dtype == 5)
        for (int i = 0; i < n; i++)
            if (v[i] != 0 && v[i] != 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'value' holds %lld at position %d, but with "
                                  "'dtype' BOOL (5) the values must be 0 or 1 (bools are int32 0 / 1 here)",
                                  (long long)v[i], i);
    if (!n) return RC_OK;
    s->vals = malloc((size_t)n * sizeof *s->vals);
    if (!s->vals) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory holding %d values", n);
    for (int i = 0; i < n; i++) s->vals[i] = (int32_t)v[i];
    qsort(s->vals, (size_t)n, sizeof *s->vals, cmp_i32);
    int m = 1;
    for (int i = 1; i < n; i++)
        if (s->vals[i] != s->vals[m - 1]) s->vals[m++] = s->vals[i];
    s->n = m;
    return RC_OK;
}

static rc_status member_check(rc_op *op, rc_err *err)
{
    return rc_check_input(op, 0, RC_I32, err);
}

/* X (any shape) int32 -> Y (X's shape) int32 0/1; Y may be X (element i is read before it is written). */
static rc_status member_run(rc_op *op, rc_err *err)
{
    const member_state *s = op->state;
    rc_status st = member_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    rc_tensor *y = rc_out(op, 0);
    if (y != x && (st = rc_tensor_resize(y, RC_I32, x->ndim, x->dims, err))) return out_fail(op, 0, err);
    const int64_t n = rc_tensor_numel(x);
    if (!n) return RC_OK;
    const int32_t *xd = rc_i32(x);
    int32_t *yd = rc_i32(y);
    for (int64_t i = 0; i < n; i++) {
        const int32_t key = xd[i];
        yd[i] = s->n && bsearch(&key, s->vals, (size_t)s->n, sizeof *s->vals, cmp_i32) != NULL;
    }
    return RC_OK;
}

static int inplace_00(int in, int out) { return in == 0 && out == 0; }

/* ================================================================ AccumulateHistogram */

typedef struct {
    float lower, upper, seg;
    int32_t nb;       /* num_buckets; the histograms have nb + 2 bins */
    int32_t *acc;     /* owned, nb + 2: the counts of every run so far */
    int32_t *cur;     /* owned, nb + 2: this run's counts, before they are checked and written */
} hist_state;

static void hist_free(void *p)
{
    hist_state *s = p;
    if (!s) return;
    free(s->acc);
    free(s->cur);
    free(s);
}

static rc_status hist_setup(rc_op *op, rc_err *err)
{
    hist_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    float lo, hi;
    int64_t nb;
    if ((st = rc_arg_f(&op->def, "lower_bound", 0.0f, &lo, err))) return st;
    if ((st = rc_arg_f(&op->def, "upper_bound", 1.0f, &hi, err))) return st;
    if ((st = rc_arg_i(&op->def, "num_buckets", 1, &nb, err))) return st;
    if (nb < 1 || nb > INT32_MAX - 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'num_buckets' must be in [1, %d], got %lld",
                          INT32_MAX - 2, (long long)nb);
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments 'lower_bound' (%g) and 'upper_bound' (%g) must be "
                          "finite float32 values with lower_bound < upper_bound", (double)lo, (double)hi);
    const float seg = (hi - lo) / (float)nb; /* Caffe2's float bucket width */
    if (!isfinite(seg) || !(seg > 0.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "the bucket width (upper_bound - lower_bound) / num_buckets = "
                          "(%g - %g) / %lld is %g in float32; it must be positive and finite", (double)hi,
                          (double)lo, (long long)nb, (double)seg);
    s->lower = lo;
    s->upper = hi;
    s->seg = seg;
    s->nb = (int32_t)nb;
    const size_t bins = (size_t)nb + 2;
    s->acc = calloc(bins, sizeof *s->acc);
    s->cur = calloc(bins, sizeof *s->cur);
    if (!s->acc || !s->cur)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for %lld histogram bins", (long long)bins);
    return RC_OK;
}

/* X float32 of at most 2^31 - 1 elements (the counts are int32). */
static rc_status hist_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (rc_tensor_numel(x) > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s has more elements than the int32 counts "
                          "can hold", rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

/* The bin of x (not NaN) in [0, nb + 1]: Caffe2's float arithmetic, the quotient clamped to nb + 1. */
static int64_t hist_bin(const hist_state *s, float x)
{
    if (x < s->lower) return 0;
    if (x >= s->upper) return (int64_t)s->nb + 1;
    const float q = (x - s->lower) / s->seg; /* >= 0, finite: x - lower <= upper - lower */
    return (double)q < (double)s->nb ? (int64_t)q + 1 : (int64_t)s->nb + 1;
}

/* X (any shape) -> CUR_HIST (nb + 2,), ACC_HIST (nb + 2,) int32; the counts checked before anything is written. */
static rc_status hist_run(rc_op *op, rc_err *err)
{
    hist_state *s = op->state;
    rc_status st = hist_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x), bins = (int64_t)s->nb + 2;
    const float *xd = n ? rc_f32(x) : NULL;
    for (int64_t i = 0; i < n; i++)
        if (isnan(xd[i]))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s holds NaN at flat position %lld; NaN "
                              "has no bin", rc_in_name(op, 0), RC_SHAPE(x), (long long)i);
    memset(s->cur, 0, (size_t)bins * sizeof *s->cur);
    for (int64_t i = 0; i < n; i++) s->cur[hist_bin(s, xd[i])]++; /* <= n <= INT32_MAX */
    for (int64_t b = 0; b < bins; b++)
        if (s->cur[b] > INT32_MAX - s->acc[b])
            return rc_op_fail(op, err, RC_ERR_VALUE, "bin %lld's accumulated count %d + %d from input 0 blob '%s' "
                              "%s exceeds 2^31 - 1 (output 1 blob '%s' is int32); the accumulated counts are kept",
                              (long long)b, (int)s->acc[b], (int)s->cur[b], rc_in_name(op, 0), RC_SHAPE(x),
                              rc_out_name(op, 1));
    const int64_t dims[1] = {bins};
    for (int o = 0; o < 2; o++)
        if ((st = rc_tensor_resize(rc_out(op, o), RC_I32, 1, dims, err))) return out_fail(op, o, err);
    for (int64_t b = 0; b < bins; b++) s->acc[b] += s->cur[b];
    memcpy(rc_i32(rc_out(op, 0)), s->cur, (size_t)bins * sizeof *s->cur);
    memcpy(rc_i32(rc_out(op, 1)), s->acc, (size_t)bins * sizeof *s->acc);
    return RC_OK;
}

const rc_op_schema rc_ops_member_hist[] = {
    {"IsMemberOf", 1, 1, 1, 1, inplace_00, member_setup, member_run, member_free,
     "(X int32) -> Y int32 0/1 of X's shape: X[i] in the argument 'value'", member_check},
    {"AccumulateHistogram", 1, 1, 2, 2, NULL, hist_setup, hist_run, hist_free,
     "(X float32) -> (CUR_HIST, ACC_HIST) (num_buckets + 2,) int32: X's counts in [lower_bound, upper_bound) cut "
     "into num_buckets bins, below and above; ACC_HIST over every run", hist_check},
    {0},
};
