/* ops/ranges.c -- index and range ops for variable-length sequences (Caffe2's
 * lengths_tile_op, filler_op LengthsRangeFill, utility_ops Range /
 * LengthsGather / GatherRanges / ScatterAssign, lengths_pad_op, mod_op,
 * gather_ranges_to_dense_op).
 *
 *   LengthsTile(DATA, LENGTHS) -> OUTPUT
 *   LengthsRangeFill(LENGTHS) -> RANGE_SEQUENCE
 *   Range(start[, stop[, step]]) -> OUTPUT
 *   LengthsGather(ITEMS, LENGTHS, INDICES) -> OUTPUT
 *   GatherRanges(DATA, RANGES) -> (OUTPUT, LENGTHS)
 *   GatherRangesToDense(DATA, RANGES[, KEY]) -> (OUT0, ..., OUTm-1)   args lengths (m entries >= 1),
 *                                                 min_observation (10000), max_mismatched_ratio (0.01),
 *                                                 max_empty_ratio (1)
 *   LengthsPad(DATA, LENGTHS) -> OUTPUT           args padding_value (-1), target_length (required, >= 1)
 *   ScatterAssign(DATA, INDICES, SLICES) -> DATA  in place
 *   Mod(X) -> Y                                   args divisor (required, != 0), sign_follow_divisor (0)
 *   PackRNNSequence(values, lengths) -> output
 *   UnpackRNNSequence(values, lengths) -> output
 *
 * Lengths are int32 1-D and non-negative: a negative one is a ValueError
 * naming the blob, its position and its value (Caffe2 checked it in
 * LengthsTile and LengthsPad only; LengthsRangeFill and LengthsGather then
 * mis-sized their outputs). Indices and ranges (Caffe2: int32 or int64) are
 * int32 here. Data blobs are float32 or int32; rows are moved as bits.
 * Every value is checked before any output is written.
 *
 * LengthsTile: DATA (N, ...), LENGTHS (N,) -> OUTPUT (sum(LENGTHS), ...):
 * row i repeated LENGTHS[i] times. Its gradient is LengthsSum (Python maker).
 * LengthsRangeFill: OUTPUT int32 (sum,), the concatenation of
 * [0, 1, ..., LENGTHS[i] - 1] for each i.
 * Range: one to three inputs of one dtype (float32 or int32), each holding
 * one value: (stop), (start, stop) or (start, stop, step); start 0, step 1 by
 * default. OUTPUT (n,) of the input dtype, n = max(0, ceil((stop - start) /
 * step)), OUTPUT[i] = start + i * step (int32: exact, in 64 bits; float32:
 * n and the values computed in double and rounded once, as numpy.arange).
 * step 0 is a ValueError, as in Caffe2; so are a non-finite float value and
 * n above 2**31 - 1 (Caffe2 overflowed its int length; it also checked only
 * the first input's rank).
 * LengthsGather: ITEMS (sum(LENGTHS), ...) grouped by LENGTHS (L,), INDICES
 * int32 1-D of segment numbers in [0, L) (an IndexError names the position
 * and the value; Caffe2 took negative ones) -> OUTPUT: the chosen segments'
 * rows, in the order of INDICES.
 * GatherRanges: DATA 1-D, RANGES int32 (B, R, 2) with R >= 1, each pair
 * (start, length) -> OUTPUT (sum of the lengths,): the slices
 * DATA[start:start+length] in order; LENGTHS int32 (B,): per example the sum
 * of its R lengths. A negative start or length, or a range past the end of
 * DATA, is an IndexError naming the example, the range and the values
 * (Caffe2 let a negative start read before DATA).
 * GatherRangesToDense: DATA 1-D (f32/i32), RANGES int32 (B, m, 2), m = the
 * number of outputs = len(lengths) -> OUTj (B, lengths[j]) of DATA's dtype:
 * row b is DATA[start:start+length] of range (b, j) when its length is
 * lengths[j]; zeros when it is empty (length 0) or of another length (a
 * "mismatch"). With KEY (int32 1-D of DATA's size; Caffe2: int64) the slice
 * is ordered by KEY[start:start+length] (equal keys keep their order; Caffe2's
 * sort left it unspecified). Every range, read or not, must lie within DATA
 * (an IndexError; Caffe2 did not check). The op counts, over its lifetime (all
 * runs of one op in a net), the batch rows and per output the empty and the
 * mismatched ranges; after a run, when max_mismatched_ratio < 1 and
 * mismatched[j] > max(rows, min_observation) * max_mismatched_ratio (likewise
 * for empty ranges and max_empty_ratio) it is a ValueError naming the output
 * and the counts, as Caffe2's enforce (its outputs are written and the counts
 * kept, as in Caffe2). No gradient.
 * LengthsPad: DATA (sum(LENGTHS), ...), LENGTHS (L,) each <= target_length ->
 * OUTPUT (L * target_length, ...): segment i's rows at rows
 * [i * target_length, i * target_length + LENGTHS[i]), padding_value
 * elsewhere. padding_value is stored as float; for int32 DATA it must be a
 * whole number in the int32 range (Caffe2 truncated it, out of range: UB).
 * ScatterAssign: OUTPUT must be the blob of DATA (a ValueError at creation,
 * as Caffe2 enforced). DATA (N, ...) of row size D = prod(DATA.shape[1:]),
 * INDICES int32 of any shape (K values) in [0, N), SLICES of DATA's dtype
 * with K * D elements (only its size matters, as in Caffe2) -> DATA[INDICES[k]]
 * = slice k, in order of k (a repeated index: the last one wins). An index
 * out of range is an IndexError before anything is written (Caffe2 only
 * DCHECKed it and wrote outside DATA); N = 0 works (Caffe2 divided by zero).
 * Mod: X int32 of any shape -> Y = X % divisor with the sign of X (C's
 * remainder), or with sign_follow_divisor=1 the sign of the divisor (a
 * non-zero result of the other sign gets divisor added). divisor must be a
 * non-zero int32 value (checked at creation; Caffe2 documented >= 1 but let
 * 0 divide by zero). INT32_MIN % -1 is 0 (Caffe2 trapped). Y may be X's blob.
 * PackRNNSequence: values (sum(lengths), ...) with ndim >= 2 (as Caffe2),
 * lengths (N,) -> output (T, N, ...), T = max(lengths) (0 when N = 0):
 * output[r, c] = row offset_c + r of values for r < lengths[c], zero after
 * (offset_c = lengths[0] + ... + lengths[c - 1]). lengths must sum to the rows
 * of values (Caffe2 read past values' end when they summed to more).
 * UnpackRNNSequence, its inverse: values (T, N, ...) with ndim >= 3 (as
 * Caffe2), T >= max(lengths), one length per column (dim 1) -> output
 * (sum(lengths), ...). Caffe2 took any dim 1 and T and read outside values
 * when they did not fit. Each is the other's gradient (Python makers).
 *
 * No global state; nothing allocates except the resize of the outputs,
 * LengthsGather's segment offsets (owned by the op's state, grown when the
 * number of segments grows, freed with the op) and GatherRangesToDense's
 * state (lengths, counters and a sort buffer of max(lengths) entries, sized at
 * setup, owned by the op's state).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* The bytes of one row (dims 1..) of x. */
static size_t row_bytes(const rc_tensor *x)
{
    return (size_t)rc_dims_prod(x, 1, x->ndim) * rc_dtype_size(x->dtype);
}

/* Resizes output o to x's dtype and shape with dim 0 = rows. */
static rc_status resize_rows(rc_op *op, int o, const rc_tensor *x, int64_t rows, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) dims[d] = x->dims[d];
    dims[0] = rows;
    if (rc_tensor_resize(rc_out(op, o), x->dtype, x->ndim, dims, err)) return out_fail(op, o, err);
    return RC_OK;
}

/* ================================================================ LengthsTile */

/* DATA (N, ...) f32/i32, LENGTHS int32 (N,). */
static rc_status ltile_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "DATA", 0, err)) || (st = rc_checks_i32_vector(op, 1, "LENGTHS", err)))
        return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (l->dims[0] != x->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (LENGTHS) of shape %s must hold one length per "
                          "row of input 0 blob '%s' of shape %s", rc_in_name(op, 1), RC_SHAPE(l), rc_in_name(op, 0),
                          RC_SHAPE(x));
    return RC_OK;
}

/* x (N, row bytes), len (N,) -> y (sum(len), row bytes): row i len[i] times. */
static void ltile_kernel(int64_t N, const int32_t *len, size_t row, const unsigned char *x, unsigned char *y)
{
    for (int64_t i = 0; i < N; i++, x += row)
        for (int32_t k = 0; k < len[i]; k++, y += row) memcpy(y, x, row);
}

static rc_status ltile_run(rc_op *op, rc_err *err)
{
    rc_status st = ltile_check(op, err);
    if (st) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 1, &sum, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if ((st = resize_rows(op, 0, x, sum, err))) return st;
    const size_t row = row_bytes(x);
    if (sum == 0 || row == 0) return RC_OK;
    ltile_kernel(x->dims[0], rc_i32(rc_in(op, 1)), row, rc_tensor_data(x), rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ LengthsRangeFill */

static rc_status lrf_check(rc_op *op, rc_err *err)
{
    return rc_checks_i32_vector(op, 0, "lengths", err);
}

/* len (L,) non-negative -> y (sum(len),): 0 .. len[i] - 1 for each i. */
static void lrf_kernel(int64_t L, const int32_t *len, int32_t *y)
{
    for (int64_t i = 0; i < L; i++)
        for (int32_t k = 0; k < len[i]; k++) *y++ = k;
}

static rc_status lrf_run(rc_op *op, rc_err *err)
{
    rc_status st = lrf_check(op, err);
    if (st) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 0, &sum, err))) return st;
    const int64_t dims[1] = {sum};
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, dims, err)) return out_fail(op, 0, err);
    if (sum == 0) return RC_OK;
    lrf_kernel(rc_in(op, 0)->dims[0], rc_i32(rc_in(op, 0)), rc_i32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ Range */

/* The role of input i: (stop) or (start, stop[, step]). */
static const char *range_role(const rc_op *op, int i)
{
    static const char *const roles[] = {"start", "stop", "step"};
    return op->n_in == 1 ? "stop" : roles[i];
}

/* Every input: one value, all of input 0's dtype (float32 or int32). */
static rc_status range_check(rc_op *op, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < op->n_in; i++) {
        const rc_tensor *x = rc_in(op, i);
        const rc_dtype want = i ? rc_in(op, 0)->dtype : (x->dtype == RC_I32 ? RC_I32 : RC_F32);
        if ((st = rc_check_input(op, i, want, err))) return st;
        if (rc_tensor_numel(x) != 1 || x->ndim > 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must hold one value (a scalar), "
                              "got %s", i, rc_in_name(op, i), range_role(op, i), RC_SHAPE(x));
    }
    return RC_OK;
}

static double range_value(rc_op *op, int i)
{
    const rc_tensor *x = rc_in(op, i);
    return x->dtype == RC_I32 ? (double)rc_i32(x)[0] : (double)rc_f32(x)[0];
}

static rc_status range_run(rc_op *op, rc_err *err)
{
    rc_status st = range_check(op, err);
    if (st) return st;
    const rc_dtype dt = rc_in(op, 0)->dtype;
    double v[3] = {0.0, 0.0, 1.0}; /* start, stop, step */
    if (op->n_in == 1) v[1] = range_value(op, 0);
    else
        for (int i = 0; i < op->n_in; i++) v[i] = range_value(op, i);
    for (int i = 0; i < op->n_in; i++)
        if (!isfinite(range_value(op, i)))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must be finite, got %g", i,
                              rc_in_name(op, i), range_role(op, i), range_value(op, i));
    if (v[2] == 0.0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (step) must not be 0", rc_in_name(op, 2));
    int64_t n;
    if (dt == RC_I32) { /* exact: ceil((stop - start) / step) in 64 bits */
        const int64_t a = (int64_t)v[0], b = (int64_t)v[1], s = (int64_t)v[2], diff = b - a;
        n = diff / s;
        if (n * s != diff && (diff > 0) == (s > 0)) n++;
    } else {
        const double q = ceil((v[1] - v[0]) / v[2]);
        if (q > (double)INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "(stop - start) / step = (%g - %g) / %g asks for more than "
                              "2**31 - 1 values", v[1], v[0], v[2]);
        n = q > 0.0 ? (int64_t)q : 0;
    }
    if (n < 0) n = 0;
    if (n > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "(stop - start) / step = (%g - %g) / %g asks for more than "
                          "2**31 - 1 values", v[1], v[0], v[2]);
    const int64_t dims[1] = {n};
    if (rc_tensor_resize(rc_out(op, 0), dt, 1, dims, err)) return out_fail(op, 0, err);
    if (n == 0) return RC_OK;
    if (dt == RC_I32) {
        int32_t *y = rc_i32(rc_out(op, 0));
        const int64_t a = (int64_t)v[0], s = (int64_t)v[2];
        for (int64_t i = 0; i < n; i++) y[i] = (int32_t)(a + i * s);
    } else {
        float *y = rc_f32(rc_out(op, 0));
        for (int64_t i = 0; i < n; i++) y[i] = (float)(v[0] + (double)i * v[2]);
    }
    return RC_OK;
}

/* ================================================================ LengthsGather */

/* The segment offsets of LengthsGather: scratch of cap entries (owned),
 * grown when the number of segments grows past it. */
typedef struct lgather_state {
    int64_t *off;
    int64_t cap;
} lgather_state;

static void lgather_state_free(void *p)
{
    lgather_state *s = p;
    if (!s) return;
    free(s->off);
    free(s);
}

static rc_status lgather_setup(rc_op *op, rc_err *err)
{
    lgather_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    return RC_OK;
}

/* ITEMS f32/i32 ndim >= 1, LENGTHS int32 1-D, INDICES int32 1-D. */
static rc_status lgather_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "ITEMS", 0, err)) || (st = rc_checks_i32_vector(op, 1, "LENGTHS", err)) ||
        (st = rc_checks_i32_vector(op, 2, "INDICES", err)))
        return st;
    return RC_OK;
}

/* items (rows, row bytes) in segments len (L,) starting at off (L,), idx (K,)
 * in [0, L) -> y: the segments idx[0], idx[1], ... concatenated. */
static void lgather_kernel(int64_t K, const int32_t *idx, const int32_t *len, const int64_t *off, size_t row,
                           const unsigned char *x, unsigned char *y)
{
    for (int64_t k = 0; k < K; k++) {
        const size_t n = (size_t)len[idx[k]] * row;
        if (n) memcpy(y, x + (size_t)off[idx[k]] * row, n);
        y += n;
    }
}

static rc_status lgather_run(rc_op *op, rc_err *err)
{
    rc_status st = lgather_check(op, err);
    if (st) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 1, &sum, err)) || (st = rc_checks_lengths_match(op, 1, sum, 0, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *lt = rc_in(op, 1), *it = rc_in(op, 2);
    const int64_t L = lt->dims[0], K = it->dims[0];
    const int32_t *len = L ? rc_i32(lt) : NULL, *idx = K ? rc_i32(it) : NULL;
    int64_t total = 0;
    for (int64_t k = 0; k < K; k++) {
        if (idx[k] < 0 || idx[k] >= L)
            return rc_op_fail(op, err, RC_ERR_INDEX, "input 2 blob '%s' (INDICES): index %d at position %lld is out "
                              "of range [0, %lld) (the segments of input 1 blob '%s')", rc_in_name(op, 2),
                              (int)idx[k], (long long)k, (long long)L, rc_in_name(op, 1));
        total += len[idx[k]];
    }
    const size_t row = row_bytes(x);
    lgather_state *sc = op->state;
    if (total && row && sc->cap < L) { /* grown when L grows past it, before any output is touched */
        int64_t *p = realloc(sc->off, sizeof *p * (size_t)L);
        if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for %lld segment offsets", (long long)L);
        sc->off = p;
        sc->cap = L;
    }
    if ((st = resize_rows(op, 0, x, total, err))) return st;
    if (total == 0 || row == 0) return RC_OK;
    int64_t o = 0;
    for (int64_t s = 0; s < L; s++) sc->off[s] = o, o += len[s];
    lgather_kernel(K, idx, len, sc->off, row, rc_tensor_data(x), rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ GatherRanges */

/* DATA f32/i32 1-D, RANGES int32 (B, R, 2) with R >= 1. */
static rc_status granges_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "DATA", 1, err)) || (st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *r = rc_in(op, 1);
    if (r->ndim != 3 || r->dims[1] < 1 || r->dims[2] != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (RANGES) must be (batch, ranges >= 1, 2) "
                          "of (start, length) pairs, got %s", rc_in_name(op, 1), RC_SHAPE(r));
    return RC_OK;
}

/* x (n,) elements of `item` bytes, rg (P, 2) pairs within x -> y: the slices in order. */
static void granges_kernel(int64_t P, const int32_t *rg, size_t item, const unsigned char *x, unsigned char *y)
{
    for (int64_t p = 0; p < P; p++) {
        const size_t n = (size_t)rg[2 * p + 1] * item;
        if (n) memcpy(y, x + (size_t)rg[2 * p] * item, n);
        y += n;
    }
}

static rc_status granges_run(rc_op *op, rc_err *err)
{
    rc_status st = granges_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *r = rc_in(op, 1);
    const int64_t n = x->dims[0], B = r->dims[0], R = r->dims[1];
    const int32_t *rg = B ? rc_i32(r) : NULL;
    int64_t total = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t ex = 0;
        for (int64_t j = 0; j < R; j++) {
            const int64_t s = rg[2 * (b * R + j)], l = rg[2 * (b * R + j) + 1];
            if (s < 0 || l < 0 || s + l > n)
                return rc_op_fail(op, err, RC_ERR_INDEX, "input 1 blob '%s' (RANGES): range %lld of example %lld "
                                  "(start %lld, length %lld) is not within input 0 blob '%s' of shape %s",
                                  rc_in_name(op, 1), (long long)j, (long long)b, (long long)s, (long long)l,
                                  rc_in_name(op, 0), RC_SHAPE(x));
            ex += l;
        }
        if (ex > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (RANGES): the lengths of example %lld sum "
                              "to %lld, above the int32 range of LENGTHS", rc_in_name(op, 1), (long long)b,
                              (long long)ex);
        total += ex;
    }
    const int64_t dims[1] = {total};
    if (rc_tensor_resize(rc_out(op, 0), x->dtype, 1, dims, err)) return out_fail(op, 0, err);
    if (rc_tensor_resize(rc_out(op, 1), RC_I32, 1, r->dims, err)) return out_fail(op, 1, err);
    int32_t *ol = B ? rc_i32(rc_out(op, 1)) : NULL;
    for (int64_t b = 0; b < B; b++) {
        int64_t ex = 0;
        for (int64_t j = 0; j < R; j++) ex += rg[2 * (b * R + j) + 1];
        ol[b] = (int32_t)ex;
    }
    if (total == 0) return RC_OK;
    granges_kernel(B * R, rg, rc_dtype_size(x->dtype), rc_tensor_data(x), rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ GatherRangesToDense */

typedef struct gr_key {
    int32_t key;
    int64_t pos;
} gr_key;

typedef struct grd_state {
    int m;                  /* number of outputs = len(lengths) */
    int64_t *len;           /* lengths (owned, m) */
    int64_t *empty, *mism;  /* lifetime counts per output (owned, m each) */
    int64_t rows;           /* lifetime batch rows */
    int64_t min_obs;
    float max_mism, max_empty;
    gr_key *buf;            /* KEY sort scratch, max(lengths) entries (owned) */
} grd_state;

static void grd_state_free(void *p)
{
    grd_state *s = p;
    if (!s) return;
    free(s->len);
    free(s->empty);
    free(s->mism);
    free(s->buf);
    free(s);
}

static rc_status grd_setup(rc_op *op, rc_err *err)
{
    grd_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    const int64_t *len = NULL;
    int n = 0;
    rc_status st = rc_arg_ints(&op->def, "lengths", &len, &n, err);
    if (!st) st = rc_arg_i(&op->def, "min_observation", 10000, &s->min_obs, err);
    if (!st) st = rc_arg_f(&op->def, "max_mismatched_ratio", 0.01f, &s->max_mism, err);
    if (!st) st = rc_arg_f(&op->def, "max_empty_ratio", 1.0f, &s->max_empty, err);
    if (st) return st;
    if (n < 1 || n != op->n_out)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'lengths' must have one entry per output (%d), got %d",
                          op->n_out, n);
    if (s->min_obs < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'min_observation' must be >= 1, got %lld",
                          (long long)s->min_obs);
    if (isnan(s->max_mism) || isnan(s->max_empty))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' is NaN",
                          isnan(s->max_mism) ? "max_mismatched_ratio" : "max_empty_ratio");
    int64_t mx = 0;
    for (int j = 0; j < n; j++) {
        if (len[j] < 1 || len[j] > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'lengths': entry %d is %lld, must be in [1, %d]", j,
                              (long long)len[j], INT32_MAX);
        if (len[j] > mx) mx = len[j];
    }
    s->m = n;
    s->len = malloc(sizeof *s->len * (size_t)n);
    s->empty = calloc((size_t)n, sizeof *s->empty);
    s->mism = calloc((size_t)n, sizeof *s->mism);
    s->buf = op->n_in > 2 ? malloc(sizeof *s->buf * (size_t)mx) : NULL;
    if (!s->len || !s->empty || !s->mism || (op->n_in > 2 && !s->buf))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for %d lengths", n);
    memcpy(s->len, len, sizeof *s->len * (size_t)n);
    return RC_OK;
}

/* DATA f32/i32 1-D, RANGES int32 (B, m, 2), KEY int32 1-D of DATA's size. */
static rc_status grd_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "DATA", 1, err)) || (st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *r = rc_in(op, 1);
    if (r->ndim != 3 || r->dims[1] != op->n_out || r->dims[2] != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (RANGES) must be (batch, %d, 2) of (start, "
                          "length) pairs, one range per output, got %s", rc_in_name(op, 1), op->n_out, RC_SHAPE(r));
    if (op->n_in > 2) {
        if ((st = rc_checks_i32_vector(op, 2, "KEY", err))) return st;
        if (rc_in(op, 2)->dims[0] != x->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (KEY) %s must have one key per element of "
                              "input 0 blob '%s' %s", rc_in_name(op, 2), RC_SHAPE(rc_in(op, 2)), rc_in_name(op, 0),
                              RC_SHAPE(x));
    }
    return RC_OK;
}

static int gr_key_cmp(const void *a, const void *b)
{
    const gr_key *p = a, *q = b;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return p->pos < q->pos ? -1 : p->pos > q->pos;
}

/* The limit of count against max(rows, min_obs) * ratio, as Caffe2's CAFFE_ENFORCE_GE (ratio < 1 only). */
static rc_status grd_ratio(rc_op *op, int j, const char *what, int64_t count, float ratio, const char *arg,
                           rc_err *err)
{
    const grd_state *s = op->state;
    if (ratio >= 1.0f) return RC_OK;
    const int64_t base = s->rows > s->min_obs ? s->rows : s->min_obs;
    if ((double)base * (double)ratio >= (double)count) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "output %d blob '%s': %lld of the %lld ranges seen by this op are "
                      "%s, a ratio of %g, which exceeds %s=%g (with min_observation=%lld)", j, rc_out_name(op, j),
                      (long long)count, (long long)s->rows, what, s->rows ? (double)count / (double)s->rows : 0.0,
                      arg, (double)ratio, (long long)s->min_obs);
}

static rc_status grd_run(rc_op *op, rc_err *err)
{
    rc_status st = grd_check(op, err);
    if (st) return st;
    grd_state *s = op->state;
    const rc_tensor *x = rc_in(op, 0), *r = rc_in(op, 1);
    const int64_t n = x->dims[0], B = r->dims[0], m = s->m;
    const int32_t *rg = B ? rc_i32(r) : NULL;
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < m; j++) {
            const int64_t st0 = rg[2 * (b * m + j)], l = rg[2 * (b * m + j) + 1];
            if (st0 < 0 || l < 0 || st0 + l > n)
                return rc_op_fail(op, err, RC_ERR_INDEX, "input 1 blob '%s' (RANGES): range %lld of example %lld "
                                  "(start %lld, length %lld) is not within input 0 blob '%s' of shape %s",
                                  rc_in_name(op, 1), (long long)j, (long long)b, (long long)st0, (long long)l,
                                  rc_in_name(op, 0), RC_SHAPE(x));
        }
    const size_t item = rc_dtype_size(x->dtype);
    for (int j = 0; j < m; j++) {
        const int64_t dims[2] = {B, s->len[j]};
        if (rc_tensor_resize(rc_out(op, j), x->dtype, 2, dims, err)) return out_fail(op, j, err);
        if (B) memset(rc_tensor_data(rc_out(op, j)), 0, (size_t)B * (size_t)s->len[j] * item);
    }
    const unsigned char *xd = n ? rc_tensor_data(x) : NULL;
    const int32_t *key = op->n_in > 2 && n ? rc_i32(rc_in(op, 2)) : NULL;
    for (int64_t b = 0; b < B; b++)
        for (int j = 0; j < m; j++) {
            const int64_t st0 = rg[2 * (b * m + j)], l = rg[2 * (b * m + j) + 1];
            if (l == 0) {
                s->empty[j]++;
                continue;
            }
            if (l != s->len[j]) {
                s->mism[j]++;
                continue;
            }
            unsigned char *dst = (unsigned char *)rc_tensor_data(rc_out(op, j)) + (size_t)(b * l) * item;
            if (!key) {
                memcpy(dst, xd + (size_t)st0 * item, (size_t)l * item);
                continue;
            }
            for (int64_t k = 0; k < l; k++) s->buf[k] = (gr_key){key[st0 + k], st0 + k};
            qsort(s->buf, (size_t)l, sizeof *s->buf, gr_key_cmp);
            for (int64_t k = 0; k < l; k++) memcpy(dst + (size_t)k * item, xd + (size_t)s->buf[k].pos * item, item);
        }
    s->rows += B;
    for (int j = 0; j < m; j++) {
        if ((st = grd_ratio(op, j, "of another length than lengths[j]", s->mism[j], s->max_mism,
                            "max_mismatched_ratio", err)) ||
            (st = grd_ratio(op, j, "empty", s->empty[j], s->max_empty, "max_empty_ratio", err)))
            return st;
    }
    return RC_OK;
}

/* ================================================================ LengthsPad */

/* target_length >= 1 (required), padding_value finite (checked at creation). */
static rc_status lpad_args(rc_op *op, float *pad, int64_t *target, rc_err *err)
{
    rc_status st;
    if ((st = rc_arg_f(&op->def, "padding_value", -1.0f, pad, err)) ||
        (st = rc_arg_i(&op->def, "target_length", -1, target, err)))
        return st;
    if (*target < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument target_length must be >= 1, got %lld",
                          (long long)*target);
    if (!isfinite(*pad))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument padding_value must be finite, got %g", (double)*pad);
    return RC_OK;
}

static rc_status lpad_setup(rc_op *op, rc_err *err)
{
    float pad;
    int64_t target;
    return lpad_args(op, &pad, &target, err);
}

/* DATA f32/i32 ndim >= 1; LENGTHS int32 1-D; an int32 DATA needs a whole
 * padding_value in the int32 range. */
static rc_status lpad_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "DATA", 0, err)) || (st = rc_checks_i32_vector(op, 1, "LENGTHS", err)))
        return st;
    float pad;
    int64_t target;
    if ((st = lpad_args(op, &pad, &target, err))) return st;
    if (rc_in(op, 0)->dtype == RC_I32 && (pad != floorf(pad) || pad < -2147483648.0f || pad >= 2147483648.0f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument padding_value %g must be a whole number in the int32 "
                          "range to pad input 0 blob '%s' of shape %s", (double)pad, rc_in_name(op, 0),
                          RC_SHAPE(rc_in(op, 0)));
    return RC_OK;
}

/* x (sum(len), D) of `item` bytes, len (L,) each <= T, padv: one element of
 * padding -> y (L * T, D): segment i at rows i * T, padding after it. */
static void lpad_kernel(int64_t L, const int32_t *len, int64_t T, int64_t D, size_t item, const void *padv,
                        const unsigned char *x, unsigned char *y)
{
    for (int64_t i = 0; i < L; i++) {
        const size_t n = (size_t)len[i] * (size_t)D * item;
        if (n) memcpy(y, x, n);
        x += n;
        for (int64_t e = (int64_t)len[i] * D; e < T * D; e++) memcpy(y + (size_t)e * item, padv, item);
        y += (size_t)(T * D) * item;
    }
}

static rc_status lpad_run(rc_op *op, rc_err *err)
{
    rc_status st = lpad_check(op, err);
    if (st) return st;
    float pad;
    int64_t T;
    if ((st = lpad_args(op, &pad, &T, err))) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 1, &sum, err)) || (st = rc_checks_lengths_match(op, 1, sum, 0, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *lt = rc_in(op, 1);
    const int64_t L = lt->dims[0];
    const int32_t *len = L ? rc_i32(lt) : NULL;
    for (int64_t i = 0; i < L; i++)
        if (len[i] > T)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (LENGTHS) holds %d at position %lld, above "
                              "target_length %lld", rc_in_name(op, 1), (int)len[i], (long long)i, (long long)T);
    if (L > INT64_MAX / T)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "output 0 blob '%s': %lld segments of target_length %lld "
                          "overflow", rc_out_name(op, 0), (long long)L, (long long)T);
    if ((st = resize_rows(op, 0, x, L * T, err))) return st;
    const int64_t D = rc_dims_prod(x, 1, x->ndim);
    if (L == 0 || D == 0) return RC_OK;
    const int32_t padi = x->dtype == RC_I32 ? (int32_t)pad : 0;
    lpad_kernel(L, len, T, D, rc_dtype_size(x->dtype), x->dtype == RC_I32 ? (const void *)&padi : (const void *)&pad,
                sum ? rc_tensor_data(x) : NULL, rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ ScatterAssign */

/* Output 0 must be the blob of input 0 (in place, as Caffe2 enforced). */
static rc_status sassign_setup(rc_op *op, rc_err *err)
{
    if (strcmp(rc_in_name(op, 0), rc_out_name(op, 0)) != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' and output 0 blob '%s' must be the same blob "
                          "(ScatterAssign writes DATA in place)", rc_in_name(op, 0), rc_out_name(op, 0));
    return RC_OK;
}

/* DATA f32/i32 ndim >= 1; INDICES int32; SLICES of DATA's dtype with
 * numel(INDICES) * prod(DATA.shape[1:]) elements. */
static rc_status sassign_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "DATA", 0, err)) || (st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *s = rc_in(op, 2);
    if ((st = rc_check_input(op, 2, x->dtype, err))) return st;
    const int64_t K = rc_tensor_numel(rc_in(op, 1)), D = rc_dims_prod(x, 1, x->ndim);
    if (rc_tensor_numel(s) != K * D)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (SLICES) of shape %s must hold %lld elements: "
                          "one row of input 0 blob '%s' of shape %s per index of input 1 blob '%s' of shape %s",
                          rc_in_name(op, 2), RC_SHAPE(s), (long long)(K * D), rc_in_name(op, 0), RC_SHAPE(x),
                          rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)));
    return RC_OK;
}

/* x (N, row bytes), idx (K,) in [0, N), s (K, row bytes) -> x[idx[k]] = s[k], k in order. */
static void sassign_kernel(int64_t K, const int32_t *idx, size_t row, const unsigned char *s, unsigned char *x)
{
    for (int64_t k = 0; k < K; k++, s += row) memcpy(x + (size_t)idx[k] * row, s, row);
}

static rc_status sassign_run(rc_op *op, rc_err *err)
{
    rc_status st = sassign_check(op, err);
    if (st) return st;
    rc_tensor *x = rc_out(op, 0); /* the blob of input 0 */
    const rc_tensor *it = rc_in(op, 1);
    const int64_t N = x->dims[0], K = rc_tensor_numel(it);
    const int32_t *idx = K ? rc_i32(it) : NULL;
    for (int64_t k = 0; k < K; k++)
        if (idx[k] < 0 || idx[k] >= N)
            return rc_op_fail(op, err, RC_ERR_INDEX, "input 1 blob '%s' (INDICES): index %d at position %lld is out "
                              "of range [0, %lld) (the rows of input 0 blob '%s' of shape %s)", rc_in_name(op, 1),
                              (int)idx[k], (long long)k, (long long)N, rc_in_name(op, 0), RC_SHAPE(x));
    const size_t row = row_bytes(x);
    if (K == 0 || row == 0) return RC_OK;
    sassign_kernel(K, idx, row, rc_tensor_data(rc_in(op, 2)), rc_tensor_data(x));
    return RC_OK;
}

/* ================================================================ Mod */

/* divisor: a non-zero int32 (required); sign_follow_divisor 0 or 1. */
static rc_status mod_args(rc_op *op, int32_t *div, int *follow, rc_err *err)
{
    int64_t d, f;
    rc_status st;
    if (!rc_opdef_arg(&op->def, "divisor"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'divisor' is required (a non-zero integer)");
    if ((st = rc_arg_i(&op->def, "divisor", 0, &d, err)) ||
        (st = rc_arg_i(&op->def, "sign_follow_divisor", 0, &f, err)))
        return st;
    if (d == 0 || d < INT32_MIN || d > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument divisor must be a non-zero int32 value, got %lld",
                          (long long)d);
    if (f != 0 && f != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument sign_follow_divisor must be 0 or 1, got %lld",
                          (long long)f);
    *div = (int32_t)d;
    *follow = (int)f;
    return RC_OK;
}

static rc_status mod_setup(rc_op *op, rc_err *err)
{
    int32_t d;
    int f;
    return mod_args(op, &d, &f, err);
}

static rc_status mod_check(rc_op *op, rc_err *err)
{
    return rc_check_input(op, 0, RC_I32, err);
}

/* x (n,) -> y (n,): x % d (sign of x), or with follow the sign of d. In 64 bits
 * (INT32_MIN % -1 is 0); |result| < |d| so it fits int32. y may be x. */
static void mod_kernel(int64_t n, const int32_t *x, int32_t d, int follow, int32_t *y)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t r = (int64_t)x[i] % (int64_t)d;
        if (follow && r != 0 && ((r > 0) != (d > 0))) r += d;
        y[i] = (int32_t)r;
    }
}

static rc_status mod_run(rc_op *op, rc_err *err)
{
    rc_status st = mod_check(op, err);
    if (st) return st;
    int32_t d = 1; /* set by mod_args on success; initialised for -Wmaybe-uninitialized */
    int f = 0;
    if ((st = mod_args(op, &d, &f, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (rc_tensor_resize_like(rc_out(op, 0), x, err)) return out_fail(op, 0, err);
    const int64_t n = rc_tensor_numel(x);
    if (n == 0) return RC_OK;
    mod_kernel(n, rc_i32(x), d, f, rc_i32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ PackRNNSequence / UnpackRNNSequence */

/* values f32/i32 with ndim >= 2 (Pack) or >= 3 (Unpack), lengths int32 (N,);
 * Unpack: one length per column of values (dim 1). */
static rc_status pack_check_common(rc_op *op, int unpack, rc_err *err)
{
    rc_status st;
    if ((st = rc_checks_rows_any(op, 0, "values", 0, err)) || (st = rc_checks_i32_vector(op, 1, "lengths", err)))
        return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    const int want = unpack ? 3 : 2;
    if (x->ndim < want)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (values) must have at least %d dims (%s), "
                          "got %s", rc_in_name(op, 0), want, unpack ? "(T, N, feature...)" : "(rows, feature...)",
                          RC_SHAPE(x));
    if (!unpack && x->ndim >= RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (values) of shape %s: the output would have "
                          "%d dims, more than the %d a tensor may have", rc_in_name(op, 0), RC_SHAPE(x),
                          x->ndim + 1, RC_MAX_DIMS);
    if (unpack && x->dims[1] != l->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (lengths) of shape %s must hold one length per "
                          "column (dim 1) of input 0 blob '%s' of shape %s", rc_in_name(op, 1), RC_SHAPE(l),
                          rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

static rc_status pack_check(rc_op *op, rc_err *err) { return pack_check_common(op, 0, err); }
static rc_status unpack_check(rc_op *op, rc_err *err) { return pack_check_common(op, 1, err); }

/* len (N,) non-negative, row = bytes of one feature block. unpack = 0:
 * seq (sum(len), row) -> packed (T, N, row), zeroed first; unpack = 1:
 * packed (T, N, row) -> seq (sum(len), row). Rows r >= len[c] of packed are
 * neither read nor written (they are zero after a pack). */
static void pack_kernel(int unpack, int64_t N, const int32_t *len, size_t row, const unsigned char *in,
                        unsigned char *out)
{
    int64_t offset = 0;
    for (int64_t c = 0; c < N; c++) {
        for (int32_t r = 0; r < len[c]; r++) {
            const int64_t seq = offset + r, packed = (int64_t)r * N + c;
            memcpy(out + (size_t)(unpack ? seq : packed) * row, in + (size_t)(unpack ? packed : seq) * row, row);
        }
        offset += len[c];
    }
}

static rc_status pack_run_common(rc_op *op, int unpack, rc_err *err)
{
    rc_status st = pack_check_common(op, unpack, err);
    if (st) return st;
    int64_t sum = 0;
    if ((st = rc_checks_lengths_values(op, 1, &sum, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    const int64_t N = l->dims[0];
    const int32_t *len = N ? rc_i32(l) : NULL;
    int32_t T = 0;
    for (int64_t c = 0; c < N; c++)
        if (len[c] > T) T = len[c];
    int64_t dims[RC_MAX_DIMS];
    int ndim;
    if (unpack) {
        if (x->dims[0] < T)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (lengths) holds %d, more than the %lld "
                              "rows (dim 0) of input 0 blob '%s' of shape %s", rc_in_name(op, 1), (int)T,
                              (long long)x->dims[0], rc_in_name(op, 0), RC_SHAPE(x));
        ndim = x->ndim - 1;
        dims[0] = sum;
        for (int d = 2; d < x->ndim; d++) dims[d - 1] = x->dims[d];
    } else {
        if ((st = rc_checks_lengths_match(op, 1, sum, 0, err))) return st;
        ndim = x->ndim + 1;
        dims[0] = T;
        dims[1] = N;
        for (int d = 1; d < x->ndim; d++) dims[d + 1] = x->dims[d];
    }
    rc_tensor *y = rc_out(op, 0);
    if (rc_tensor_resize(y, x->dtype, ndim, dims, err)) return out_fail(op, 0, err);
    const size_t row = (size_t)rc_dims_prod(x, unpack ? 2 : 1, x->ndim) * rc_dtype_size(x->dtype);
    const int64_t ny = rc_tensor_numel(y);
    if (ny == 0) return RC_OK;
    if (!unpack) memset(rc_tensor_data(y), 0, (size_t)ny * rc_dtype_size(y->dtype));
    if (sum == 0 || row == 0) return RC_OK;
    pack_kernel(unpack, N, len, row, rc_tensor_data(x), rc_tensor_data(y));
    return RC_OK;
}

static rc_status pack_run(rc_op *op, rc_err *err) { return pack_run_common(op, 0, err); }
static rc_status unpack_run(rc_op *op, rc_err *err) { return pack_run_common(op, 1, err); }

/* ================================================================ table */

const rc_op_schema rc_ops_ranges[] = {
    {"LengthsTile", 2, 2, 1, 1, NULL, NULL, ltile_run, NULL,
     "(DATA (N, ...) f32/i32, LENGTHS (N,) int32) -> OUTPUT (sum, ...): row i repeated LENGTHS[i] times",
     ltile_check},
    {"LengthsRangeFill", 1, 1, 1, 1, NULL, NULL, lrf_run, NULL,
     "(lengths (L,) int32) -> range_sequence (sum,) int32: 0 .. lengths[i] - 1 for each i", lrf_check},
    {"Range", 1, 3, 1, 1, NULL, NULL, range_run, NULL,
     "(stop) | (start, stop[, step]) scalars, float32 or int32 -> (n,): start + i * step below stop", range_check},
    {"LengthsGather", 3, 3, 1, 1, NULL, lgather_setup, lgather_run, lgather_state_free,
     "(ITEMS (sum, ...), LENGTHS (L,), INDICES (K,) int32) -> OUTPUT: the segments INDICES, concatenated",
     lgather_check},
    {"GatherRanges", 2, 2, 2, 2, NULL, NULL, granges_run, NULL,
     "(DATA (n,), RANGES (B, R, 2) int32 (start, length)) -> (OUTPUT (sum,), LENGTHS (B,) int32)", granges_check},
    {"GatherRangesToDense", 2, 3, 1, -1, NULL, grd_setup, grd_run, grd_state_free,
     "(DATA (n,), RANGES (B, m, 2) int32[, KEY (n,) int32]) -> m outputs (B, lengths[j]): the ranges of "
     "length lengths[j], KEY-sorted; zeros for empty or mismatched ones (counted; args max_*_ratio)", grd_check},
    {"LengthsPad", 2, 2, 1, 1, NULL, lpad_setup, lpad_run, NULL,
     "(DATA (sum, ...), LENGTHS (L,)) -> OUTPUT (L * target_length, ...); args padding_value (-1), target_length",
     lpad_check},
    {"ScatterAssign", 3, 3, 1, 1, rc_inplace_first, sassign_setup, sassign_run, NULL,
     "(DATA (N, ...), INDICES int32, SLICES) -> DATA in place: DATA[INDICES[k]] = SLICES[k]", sassign_check},
    {"Mod", 1, 1, 1, 1, rc_inplace_first, mod_setup, mod_run, NULL,
     "(X int32) -> Y: X % divisor, sign of X or (sign_follow_divisor=1) of divisor", mod_check},
    {"PackRNNSequence", 2, 2, 1, 1, NULL, NULL, pack_run, NULL,
     "(values (sum, ...), lengths (N,) int32) -> output (max(lengths), N, ...): sequences as columns, zero-padded",
     pack_check},
    {"UnpackRNNSequence", 2, 2, 1, 1, NULL, NULL, unpack_run, NULL,
     "(values (T, N, ...), lengths (N,) int32) -> output (sum, ...): the inverse of PackRNNSequence",
     unpack_check},
    {0},
};
