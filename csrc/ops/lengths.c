/* ops/lengths.c -- ops on variable-length sequences given by int32 lengths
 * (Caffe2's pack_segments, sequence_ops and the lengths utilities).
 *
 * A "lengths" blob is int32 of shape (N,): segment i holds rows
 * [sum(lengths[:i]), sum(lengths[:i + 1])) of a data blob's dim 0. Every
 * length is checked before anything is written: a negative length, a sum that
 * is not the data's row count and a length above its bound are ValueErrors
 * naming the op, the blob, the index and the value. Data is float32 or int32
 * (moved as bits: NaN payloads and -0 kept) unless said otherwise.
 *
 * PackSegments(lengths, tensor[, packed_like]) -> packed[, presence_mask]. tensor has
 * ndim >= 1 and sum(lengths) rows; packed is (N, T) + tensor.shape[1:],
 * packed[i, t] = row t of segment i for t < lengths[i], else the padding: 0,
 * or -inf with pad_minf=1 (float32 only; refused for int32 data, whose
 * padding Caffe2 left uninitialised). T = max_length when given (>= 0), else
 * max(lengths) (0 for N = 0); with the third input (ours: UnpackSegments's
 * gradient passes its packed input), T = packed_like.dims[1] (packed_like
 * has ndim >= 2 and N rows), and max_length, if given too, must not be below
 * it. Caffe2's gradient of UnpackSegments had max(lengths) steps, the wrong
 * shape where packed had more. A length above T is refused (Caffe2
 * truncated the segment silently -- older versions wrote past the output --
 * and its gradient UnpackSegments then had fewer rows than tensor).
 * With return_presence_mask=1 and a second output, presence_mask is int32 of
 * shape (N, T), 1 where packed holds data, else 0 (Caffe2: bool).
 *
 * UnpackSegments(lengths, packed) -> tensor: the inverse. packed has
 * ndim >= 2 and N rows; each length lies in [0, T], T = packed.dims[1] (and at
 * most max_length when that is given; Caffe2 read past packed for longer
 * ones). tensor is (sum(lengths),) + packed.shape[2:].
 *
 * AddPadding(data[, lengths[, start_padding[, end_padding]]]) -> data_out
 * [, lengths_out]. Arguments padding_width (default 1) and end_padding_width
 * (default -1: padding_width), both >= 0. data has ndim >= 1; lengths
 * (sum = data rows; absent: one segment of all rows) as above. Each segment
 * gets padding_width copies of start_padding before it and end_padding_width
 * copies of end_padding after it; the paddings are zeros when absent, and
 * end_padding is start_padding when only that is given. A padding has data's
 * dtype and block size prod(data.shape[1:]) elements (any shape, as Caffe2).
 * lengths_out[i] = lengths[i] + padding_width + end_padding_width (int32,
 * overflow refused). Caffe2 accepted sum(lengths) < rows and left the tail of
 * data_out uninitialised.
 *
 * RemovePadding(data[, lengths]) -> data_out[, lengths_out]: the inverse, the
 * same arguments; each (padded) length must be at least padding_width +
 * end_padding_width (Caffe2 copied a negative count).
 *
 * GatherPadding(data, lengths) -> padding_sum[, end_padding_sum] (float32):
 * with the same arguments and checks as RemovePadding, the sum over segments
 * of their padding_width start rows (and, with one output, of their end rows
 * too) and of their end rows, each of shape data.shape[1:]. The sums run in
 * segment order, start rows before end rows: deterministic. It is the
 * gradient of AddPadding's paddings.
 *
 * LengthsToSegmentIds(lengths) -> segment_ids: int32 of shape (sum,), segment
 * index i repeated lengths[i] times.
 * LengthsToRanges(lengths) -> ranges: int32 (N, 2), rows (offset, length);
 * the offsets must fit int32 (a sum above 2^31 - 1 is refused).
 * LengthsToOffsets(lengths) -> offsets: int32 (N,), offsets[i] = sum(lengths[:i]);
 * with include_last_offset=1 (N + 1,), the sum appended (Caffe2's utility_ops).
 * Every offset written must fit int32 (refused otherwise); as every op here,
 * a negative length is refused (Caffe2 did not check).
 * SegmentIdsToLengths(segment_ids[, data_to_infer_dim]) -> lengths: ids int32
 * 1-D, non-negative and sorted (non-decreasing; refused otherwise, naming the
 * index); lengths int32 of shape (K,), K = last id + 1 (0 for no ids), or
 * data_to_infer_dim.dims[0] when given (which must be >= last id + 1), counts
 * of each id.
 * SegmentIdsToRanges(segment_ids[, data_to_infer_dim]) -> ranges: the same
 * ids and K; int32 (K, 2) rows (start, length), length the count of the id,
 * start Caffe2's: the index of the first id >= s, 0 for the segments up to
 * the first id and for those past the last one (data_to_infer_dim). Caffe2
 * wrote out of bounds for a negative first id; refused here.
 *
 * No global state; kernels are loops over pointers. The only allocations are
 * the outputs. Outputs never alias inputs (no in-place pairs).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Input i is float32 or int32 (data moved as bits); `what` names it in messages. */
static rc_status check_data(rc_op *op, int i, const char *what, rc_err *err)
{
    const rc_tensor *x = rc_in(op, i);
    rc_status st;
    if (x->dtype != RC_I32 && (st = rc_check_input(op, i, RC_F32, err)))
        return st == RC_ERR_TYPE ? rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' (%s) must be float32 or "
                                              "int32, got %s", i, rc_in_name(op, i), what, RC_SHAPE(x)) : st;
    return RC_OK;
}

/* Input i is int32 of shape (n,) -- any n when n < 0. */
static rc_status check_lengths_shape(rc_op *op, int i, const char *what, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, i, RC_I32, err))) return st;
    if (rc_in(op, i)->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must be 1-D, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(rc_in(op, i)));
    return RC_OK;
}

/* The lengths in input li: each in [lo, hi] (hi < 0: no upper bound); their sum
 * is `rows` (rows < 0: not checked) rows of input di. *sum gets the sum and *max
 * the largest (0 for none). bound_what says where hi comes from. */
static rc_status check_lengths(rc_op *op, int li, int64_t lo, int64_t hi, const char *bound_what, int di,
                               int64_t rows, int64_t *sum, int64_t *max, rc_err *err)
{
    const rc_tensor *lt = rc_in(op, li);
    const int64_t n = lt->dims[0];
    const int32_t *l = n ? rc_i32(lt) : NULL;
    int64_t s = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (l[i] < lo)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (lengths) holds %d at index %lld, below %lld%s", li,
                              rc_in_name(op, li), (int)l[i], (long long)i, (long long)lo,
                              lo ? " (padding_width + end_padding_width)" : "");
        if (hi >= 0 && l[i] > hi)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (lengths) holds %d at index %lld, above %lld (%s)", li,
                              rc_in_name(op, li), (int)l[i], (long long)i, (long long)hi, bound_what);
        s += l[i];
        if (l[i] > m) m = l[i];
    }
    if (rows >= 0 && s != rows)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (lengths) of shape %s sums to %lld, but input %d blob '%s' of shape %s "
                          "has %lld rows (dim 0)", li, rc_in_name(op, li), RC_SHAPE(lt), (long long)s, di,
                          rc_in_name(op, di), RC_SHAPE(rc_in(op, di)), (long long)rows);
    *sum = s;
    *max = m;
    return RC_OK;
}

/* ================================================================ state */

typedef struct {
    int64_t max_length;     /* PackSegments / UnpackSegments: -1 none */
    int pad_minf, presence; /* PackSegments */
    int64_t pad_start, pad_end; /* AddPadding / RemovePadding / GatherPadding */
    int last_offset;        /* LengthsToOffsets: include_last_offset */
} len_state;

static rc_status state_new(rc_op *op, len_state **out, rc_err *err)
{
    len_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    *out = s;
    return RC_OK;
}

/* ================================================================ PackSegments / UnpackSegments */

static rc_status pack_setup(rc_op *op, rc_err *err)
{
    len_state *s;
    rc_status st;
    int64_t minf = 0, pres = 0;
    if ((st = state_new(op, &s, err))) return st;
    if ((st = rc_arg_i(&op->def, "max_length", -1, &s->max_length, err))) return st;
    if (s->max_length < -1 || s->max_length > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument max_length=%lld must be -1 (the longest length) or in "
                          "[0, %d]", (long long)s->max_length, INT32_MAX);
    if (strcmp(op->def.type, "PackSegments") != 0) return RC_OK;
    if ((st = rc_arg_i(&op->def, "pad_minf", 0, &minf, err))) return st;
    if ((st = rc_arg_i(&op->def, "return_presence_mask", 0, &pres, err))) return st;
    s->pad_minf = minf != 0;
    s->presence = pres != 0;
    if (s->presence != (op->n_out == 2))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument return_presence_mask=%d needs %d output(s) (packed%s), "
                          "got %d", s->presence, s->presence ? 2 : 1, s->presence ? ", presence_mask" : "",
                          op->n_out);
    return RC_OK;
}

/* lengths int32 1-D; tensor float32/int32 with ndim in [1, RC_MAX_DIMS - 1]; packed_like
 * (when given) with ndim >= 2 and N rows. */
static rc_status pack_check(rc_op *op, rc_err *err)
{
    const len_state *s = op->state;
    rc_status st;
    if ((st = check_lengths_shape(op, 0, "lengths", err)) || (st = check_data(op, 1, "tensor", err))) return st;
    const rc_tensor *x = rc_in(op, 1);
    if (x->ndim < 1 || x->ndim > RC_MAX_DIMS - 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (tensor) must have 1 to %d dims, got %s",
                          rc_in_name(op, 1), RC_MAX_DIMS - 1, RC_SHAPE(x));
    if (s->pad_minf && x->dtype != RC_F32)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument pad_minf=1 needs float32 data, input 1 blob '%s' "
                          "(tensor) is %s", rc_in_name(op, 1), RC_SHAPE(x));
    if (op->n_in > 2) {
        const rc_tensor *p = rc_in(op, 2), *lt = rc_in(op, 0);
        if (p->dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' holds no tensor (was it fed or computed?)",
                              rc_in_name(op, 2));
        if (p->ndim < 2 || p->dims[0] != lt->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (packed_like) must have at least 2 dims and "
                              "%lld rows, one per length of input 0 blob '%s' of shape %s, got %s", rc_in_name(op, 2),
                              (long long)lt->dims[0], rc_in_name(op, 0), RC_SHAPE(lt), RC_SHAPE(p));
        if (s->max_length >= 0 && s->max_length < p->dims[1])
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument max_length=%lld is below dim 1 of input 2 blob '%s' "
                              "(packed_like) of shape %s", (long long)s->max_length, rc_in_name(op, 2),
                              RC_SHAPE(p));
    }
    return RC_OK;
}

/* PackSegments: lengths (N,), tensor (sum, ...) -> packed (N, T, ...)[, presence_mask (N, T)]. */
static rc_status pack_run(rc_op *op, rc_err *err)
{
    const len_state *s = op->state;
    rc_status st = pack_check(op, err);
    if (st) return st;
    const rc_tensor *lt = rc_in(op, 0), *x = rc_in(op, 1);
    int64_t sum, mx;
    const int like = op->n_in > 2;
    if ((st = check_lengths(op, 0, 0, like ? rc_in(op, 2)->dims[1] : s->max_length,
                            like ? "T = dim 1 of input 2 (packed_like)" : "argument max_length", 1, x->dims[0], &sum,
                            &mx, err)))
        return st;
    const int64_t N = lt->dims[0], T = like ? rc_in(op, 2)->dims[1] : s->max_length >= 0 ? s->max_length : mx;
    int64_t dims[RC_MAX_DIMS];
    dims[0] = N;
    dims[1] = T;
    for (int k = 1; k < x->ndim; k++) dims[k + 1] = x->dims[k];
    if ((st = rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim + 1, dims, err))) return out_fail(op, 0, err);
    if (s->presence && (st = rc_tensor_resize(rc_out(op, 1), RC_I32, 2, dims, err))) return out_fail(op, 1, err);
    const int64_t block = rc_dims_prod(x, 1, x->ndim);
    const size_t es = rc_dtype_size(x->dtype), row = (size_t)block * es;
    if (N * T > 0 && block > 0) {
        unsigned char *y = rc_tensor_data(rc_out(op, 0));
        const unsigned char *xd = rc_tensor_data(x);
        const int32_t *l = rc_i32(lt);
        if (s->pad_minf) {
            float *yf = (float *)y;
            for (int64_t k = 0; k < N * T * block; k++) yf[k] = -INFINITY;
        } else {
            memset(y, 0, (size_t)(N * T) * row); /* +0.0f and int32 0 */
        }
        for (int64_t i = 0, start = 0; i < N; start += l[i], i++)
            if (l[i]) memcpy(y + (size_t)(i * T) * row, xd + (size_t)start * row, (size_t)l[i] * row);
    }
    if (s->presence && N * T > 0) {
        int32_t *p = rc_i32(rc_out(op, 1));
        const int32_t *l = rc_i32(lt);
        for (int64_t i = 0; i < N; i++)
            for (int64_t t = 0; t < T; t++) p[i * T + t] = t < l[i];
    }
    return RC_OK;
}

/* lengths int32 (N,); packed float32/int32 with ndim >= 2 and N rows. */
static rc_status unpack_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = check_lengths_shape(op, 0, "lengths", err)) || (st = check_data(op, 1, "packed", err))) return st;
    const rc_tensor *lt = rc_in(op, 0), *x = rc_in(op, 1);
    if (x->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (packed) must have at least 2 dims (N, T, ...), "
                          "got %s", rc_in_name(op, 1), RC_SHAPE(x));
    if (x->dims[0] != lt->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (lengths) must have shape (%lld,), one length "
                          "per row (dim 0) of input 1 blob '%s' of shape %s, got %s", rc_in_name(op, 0),
                          (long long)x->dims[0], rc_in_name(op, 1), RC_SHAPE(x), RC_SHAPE(lt));
    return RC_OK;
}

/* UnpackSegments: lengths (N,), packed (N, T, ...) -> tensor (sum, ...). */
static rc_status unpack_run(rc_op *op, rc_err *err)
{
    const len_state *s = op->state;
    rc_status st = unpack_check(op, err);
    if (st) return st;
    const rc_tensor *lt = rc_in(op, 0), *x = rc_in(op, 1);
    const int64_t N = x->dims[0], T = x->dims[1];
    const int by_arg = s->max_length >= 0 && s->max_length < T;
    int64_t sum, mx;
    if ((st = check_lengths(op, 0, 0, by_arg ? s->max_length : T,
                            by_arg ? "argument max_length" : "T = dim 1 of input 1 (packed)", 1, -1, &sum, &mx, err)))
        return st;
    int64_t dims[RC_MAX_DIMS];
    dims[0] = sum;
    for (int k = 2; k < x->ndim; k++) dims[k - 1] = x->dims[k];
    if ((st = rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim - 1, dims, err))) return out_fail(op, 0, err);
    const size_t row = (size_t)rc_dims_prod(x, 2, x->ndim) * rc_dtype_size(x->dtype);
    if (sum == 0 || row == 0) return RC_OK;
    const int32_t *l = rc_i32(lt);
    const unsigned char *xd = rc_tensor_data(x);
    unsigned char *y = rc_tensor_data(rc_out(op, 0));
    for (int64_t i = 0, start = 0; i < N; start += l[i], i++)
        if (l[i]) memcpy(y + (size_t)start * row, xd + (size_t)(i * T) * row, (size_t)l[i] * row);
    return RC_OK;
}

/* ================================================================ AddPadding / RemovePadding / GatherPadding */

static rc_status padding_setup(rc_op *op, rc_err *err)
{
    len_state *s;
    rc_status st;
    if ((st = state_new(op, &s, err))) return st;
    if ((st = rc_arg_i(&op->def, "padding_width", 1, &s->pad_start, err))) return st;
    if ((st = rc_arg_i(&op->def, "end_padding_width", -1, &s->pad_end, err))) return st;
    if (s->pad_start < 0 || s->pad_start > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument padding_width=%lld must be in [0, %d]",
                          (long long)s->pad_start, INT32_MAX);
    if (s->pad_end < -1 || s->pad_end > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument end_padding_width=%lld must be -1 (padding_width) or "
                          "in [0, %d]", (long long)s->pad_end, INT32_MAX);
    if (s->pad_end < 0) s->pad_end = s->pad_start;
    return RC_OK;
}

/* data (float32/int32, or float32 only for GatherPadding) with ndim >= 1;
 * lengths int32 1-D when given; AddPadding's paddings: data's dtype and block size. */
static rc_status padding_check(rc_op *op, rc_err *err)
{
    rc_status st;
    const int gather = strcmp(op->def.type, "GatherPadding") == 0;
    if ((st = gather ? rc_check_input(op, 0, RC_F32, err) : check_data(op, 0, "data", err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (data) must have at least 1 dim, got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    if (op->n_in > 1 && (st = check_lengths_shape(op, 1, "lengths", err))) return st;
    const int64_t block = rc_dims_prod(x, 1, x->ndim);
    for (int i = 2; i < op->n_in; i++) {
        const rc_tensor *p = rc_in(op, i);
        if ((st = rc_check_input(op, i, x->dtype, err))) return st;
        if (rc_tensor_numel(p) != block)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must hold %lld elements, one row of "
                              "input 0 blob '%s' of shape %s, got %s", i, rc_in_name(op, i),
                              i == 2 ? "start_padding" : "end_padding", (long long)block, rc_in_name(op, 0),
                              RC_SHAPE(x), RC_SHAPE(p));
    }
    return RC_OK;
}

/* The segment lengths of a padding op: the lengths input, or one segment of all
 * rows (*one gets the row count then, which must fit int32). Checks each length
 * is at least lo and that they sum to data's rows. */
static rc_status padding_lengths(rc_op *op, int64_t lo, const int32_t **l, int64_t *n, int32_t *one, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    const int64_t rows = x->dims[0];
    rc_status st;
    if (op->n_in > 1) {
        int64_t sum, mx;
        if ((st = check_lengths(op, 1, lo, -1, "", 0, rows, &sum, &mx, err))) return st;
        *n = rc_in(op, 1)->dims[0];
        *l = *n ? rc_i32(rc_in(op, 1)) : NULL;
        return RC_OK;
    }
    if (rows < lo || rows > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (data) of shape %s, one segment without a "
                          "lengths input, must have %lld to %d rows", rc_in_name(op, 0), RC_SHAPE(x), (long long)lo,
                          INT32_MAX);
    *one = (int32_t)rows;
    *l = one;
    *n = 1;
    return RC_OK;
}

/* lengths_out (output 1, when asked for): l[i] + delta, each checked to fit int32 by the caller. */
static rc_status padding_lengths_out(rc_op *op, const int32_t *l, int64_t n, int64_t delta, rc_err *err)
{
    if (op->n_out < 2) return RC_OK;
    const int64_t dims[1] = {n};
    if (rc_tensor_resize(rc_out(op, 1), RC_I32, 1, dims, err)) return out_fail(op, 1, err);
    int32_t *o = n ? rc_i32(rc_out(op, 1)) : NULL;
    for (int64_t i = 0; i < n; i++) o[i] = (int32_t)(l[i] + delta);
    return RC_OK;
}

/* AddPadding: data (rows, ...), lengths (n,) -> data_out (rows + n * (ps + pe), ...)[, lengths_out]. */
static rc_status add_padding_run(rc_op *op, rc_err *err)
{
    const len_state *s = op->state;
    rc_status st = padding_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int32_t *l;
    int64_t n;
    int32_t one;
    if ((st = padding_lengths(op, 0, &l, &n, &one, err))) return st;
    const int64_t pad = s->pad_start + s->pad_end;
    for (int64_t i = 0; i < n; i++)
        if (l[i] + pad > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "length %d at index %lld plus padding_width + end_padding_width "
                              "= %lld exceeds %d (lengths_out is int32)", (int)l[i], (long long)i, (long long)pad,
                              INT32_MAX);
    int64_t dims[RC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) dims[k] = x->dims[k];
    dims[0] += n * pad;
    if ((st = rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim, dims, err))) return out_fail(op, 0, err);
    if ((st = padding_lengths_out(op, l, n, pad, err))) return st;
    const size_t row = (size_t)rc_dims_prod(x, 1, x->ndim) * rc_dtype_size(x->dtype);
    if (dims[0] == 0 || row == 0) return RC_OK;
    const unsigned char *xd = rc_tensor_data(x);
    const unsigned char *ps = op->n_in > 2 ? rc_tensor_data(rc_in(op, 2)) : NULL;
    const unsigned char *pe = op->n_in > 3 ? rc_tensor_data(rc_in(op, 3)) : ps;
    unsigned char *y = rc_tensor_data(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < s->pad_start; j++, y += row)
            if (ps) memcpy(y, ps, row); else memset(y, 0, row);
        if (l[i]) memcpy(y, xd, (size_t)l[i] * row);
        y += (size_t)l[i] * row;
        xd += (size_t)l[i] * row;
        for (int64_t j = 0; j < s->pad_end; j++, y += row)
            if (pe) memcpy(y, pe, row); else memset(y, 0, row);
    }
    return RC_OK;
}

/* RemovePadding: data (rows, ...), lengths (n,) each >= ps + pe -> data_out (rows - n * (ps + pe), ...)
 * [, lengths_out]. */
static rc_status remove_padding_run(rc_op *op, rc_err *err)
{
    const len_state *s = op->state;
    rc_status st = padding_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t pad = s->pad_start + s->pad_end;
    const int32_t *l;
    int64_t n;
    int32_t one;
    if ((st = padding_lengths(op, pad, &l, &n, &one, err))) return st;
    int64_t dims[RC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) dims[k] = x->dims[k];
    dims[0] -= n * pad;
    if ((st = rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim, dims, err))) return out_fail(op, 0, err);
    if ((st = padding_lengths_out(op, l, n, -pad, err))) return st;
    const size_t row = (size_t)rc_dims_prod(x, 1, x->ndim) * rc_dtype_size(x->dtype);
    if (dims[0] == 0 || row == 0) return RC_OK;
    const unsigned char *xd = rc_tensor_data(x);
    unsigned char *y = rc_tensor_data(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) {
        const size_t keep = (size_t)(l[i] - pad) * row;
        if (keep) memcpy(y, xd + (size_t)s->pad_start * row, keep);
        y += keep;
        xd += (size_t)l[i] * row;
    }
    return RC_OK;
}

/* GatherPadding: data (rows, ...) float32, lengths (n,) each >= ps + pe -> padding_sum (...)
 * [, end_padding_sum (...)]. */
static rc_status gather_padding_run(rc_op *op, rc_err *err)
{
    const len_state *s = op->state;
    rc_status st = padding_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t pad = s->pad_start + s->pad_end;
    const int32_t *l;
    int64_t n;
    int32_t one;
    if ((st = padding_lengths(op, pad, &l, &n, &one, err))) return st;
    for (int o = 0; o < op->n_out; o++)
        if ((st = rc_tensor_resize(rc_out(op, o), RC_F32, x->ndim - 1, x->dims + 1, err))) return out_fail(op, o, err);
    const int64_t block = rc_dims_prod(x, 1, x->ndim);
    if (block == 0) return RC_OK;
    float *ps = rc_f32(rc_out(op, 0)), *pe = op->n_out > 1 ? rc_f32(rc_out(op, 1)) : ps;
    memset(ps, 0, (size_t)block * sizeof *ps);
    if (pe != ps) memset(pe, 0, (size_t)block * sizeof *pe);
    const float *xd = rc_tensor_numel(x) ? rc_f32(x) : NULL;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < s->pad_start; j++, xd += block)
            for (int64_t k = 0; k < block; k++) ps[k] += xd[k];
        xd += (l[i] - pad) * block;
        for (int64_t j = 0; j < s->pad_end; j++, xd += block)
            for (int64_t k = 0; k < block; k++) pe[k] += xd[k];
    }
    return RC_OK;
}

/* ================================================================ lengths utilities */

static rc_status lengths_in_check(rc_op *op, rc_err *err)
{
    return check_lengths_shape(op, 0, strncmp(op->def.type, "SegmentIdsTo", 12) ? "lengths" : "segment_ids", err);
}

/* LengthsToSegmentIds: lengths (N,) -> segment_ids (sum,). */
static rc_status lengths_to_ids_run(rc_op *op, rc_err *err)
{
    rc_status st = lengths_in_check(op, err);
    if (st) return st;
    int64_t sum, mx;
    if ((st = check_lengths(op, 0, 0, -1, "", 0, -1, &sum, &mx, err))) return st;
    const int64_t N = rc_in(op, 0)->dims[0], dims[1] = {sum};
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, 1, dims, err))) return out_fail(op, 0, err);
    if (sum == 0) return RC_OK;
    const int32_t *l = rc_i32(rc_in(op, 0));
    int32_t *y = rc_i32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++)
        for (int32_t j = 0; j < l[i]; j++) *y++ = (int32_t)i;
    return RC_OK;
}

static rc_status offsets_setup(rc_op *op, rc_err *err)
{
    len_state *s = NULL;
    int64_t last = 0;
    rc_status st = state_new(op, &s, err);
    if (!st) st = rc_arg_i(&op->def, "include_last_offset", 0, &last, err);
    if (!st) s->last_offset = last != 0;
    return st;
}

/* LengthsToRanges (ranges = 1): lengths (N,) -> ranges (N, 2) of (offset, length). LengthsToOffsets:
 * lengths (N,) -> offsets (N,), or (N + 1,) ending with the sum when include_last_offset. Every value
 * written must fit int32: a range's end (the sum), or the largest offset. */
static rc_status offsets_run(rc_op *op, int ranges, rc_err *err)
{
    rc_status st = lengths_in_check(op, err);
    if (st) return st;
    int64_t sum, mx;
    if ((st = check_lengths(op, 0, 0, -1, "", 0, -1, &sum, &mx, err))) return st;
    const int64_t N = rc_in(op, 0)->dims[0];
    const int32_t *l = N ? rc_i32(rc_in(op, 0)) : NULL;
    const int last = !ranges && ((const len_state *)op->state)->last_offset;
    const int64_t top = ranges || last || !N ? sum : sum - l[N - 1];
    if (top > INT32_MAX && top == sum)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (lengths) of shape %s sums to %lld, above %d "
                          "(the offsets are int32)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), (long long)sum,
                          INT32_MAX);
    if (top > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (lengths) of shape %s gives the last offset "
                          "%lld, above %d (the offsets are int32)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)),
                          (long long)top, INT32_MAX);
    const int64_t dims[2] = {ranges ? N : N + last, 2};
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, ranges ? 2 : 1, dims, err))) return out_fail(op, 0, err);
    int32_t *y = rc_i32(rc_out(op, 0));
    int64_t off = 0;
    for (int64_t i = 0; i < N; off += l[i], i++) {
        if (ranges) {
            y[2 * i] = (int32_t)off;
            y[2 * i + 1] = l[i];
        } else {
            y[i] = (int32_t)off;
        }
    }
    if (last) y[N] = (int32_t)off;
    return RC_OK;
}

static rc_status lengths_to_ranges_run(rc_op *op, rc_err *err) { return offsets_run(op, 1, err); }
static rc_status lengths_to_offsets_run(rc_op *op, rc_err *err) { return offsets_run(op, 0, err); }

/* segment_ids int32 1-D; data_to_infer_dim (when given) a tensor with ndim >= 1. */
static rc_status ids_to_lengths_check(rc_op *op, rc_err *err)
{
    rc_status st = lengths_in_check(op, err);
    if (st) return st;
    if (op->n_in > 1) {
        const rc_tensor *d = rc_in(op, 1);
        if (d->dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' holds no tensor (was it fed or computed?)",
                              rc_in_name(op, 1));
        if (d->ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (data_to_infer_dim) must have at least 1 "
                              "dim, got %s", rc_in_name(op, 1), RC_SHAPE(d));
    }
    return RC_OK;
}

/* segment_ids (M,) sorted, >= 0 [, data (K, ...)]: checked (each id, then K against data); *K = the
 * number of segments (last id + 1, 0 for no ids, or data's dim 0). Reads the ids: run before writing. */
static rc_status ids_segments(rc_op *op, int64_t *K, rc_err *err)
{
    rc_status st = ids_to_lengths_check(op, err);
    if (st) return st;
    const rc_tensor *it = rc_in(op, 0);
    const int64_t M = it->dims[0];
    const int32_t *ids = M ? rc_i32(it) : NULL;
    for (int64_t i = 0; i < M; i++) {
        if (ids[i] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (segment_ids) holds a negative id %d at "
                              "index %lld", rc_in_name(op, 0), (int)ids[i], (long long)i);
        if (i && ids[i] < ids[i - 1])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (segment_ids) must be sorted: %d at index "
                              "%lld follows %d", rc_in_name(op, 0), (int)ids[i], (long long)i, (int)ids[i - 1]);
    }
    *K = M ? (int64_t)ids[M - 1] + 1 : 0;
    if (op->n_in > 1) {
        const rc_tensor *d = rc_in(op, 1);
        if (*K > d->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (segment_ids) has %lld segments (last id "
                              "%d), more than dim 0 of input 1 blob '%s' of shape %s", rc_in_name(op, 0),
                              (long long)*K, (int)ids[M - 1], rc_in_name(op, 1), RC_SHAPE(d));
        *K = d->dims[0];
    }
    return RC_OK;
}

/* SegmentIdsToLengths: segment_ids (M,) sorted, >= 0 [, data (K, ...)] -> lengths (K,). */
static rc_status ids_to_lengths_run(rc_op *op, rc_err *err)
{
    int64_t K;
    rc_status st = ids_segments(op, &K, err);
    if (st) return st;
    const int64_t M = rc_in(op, 0)->dims[0], dims[1] = {K};
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, 1, dims, err))) return out_fail(op, 0, err);
    if (K == 0) return RC_OK;
    const int32_t *ids = rc_i32(rc_in(op, 0));
    int32_t *y = rc_i32(rc_out(op, 0));
    memset(y, 0, (size_t)K * sizeof *y);
    for (int64_t i = 0; i < M; i++) y[ids[i]]++;
    return RC_OK;
}

/* SegmentIdsToRanges: segment_ids (M,) sorted, >= 0 [, data (K, ...)] -> ranges (K, 2) int32 of (start,
 * length), Caffe2's values: segment s has length count(ids == s); its start is the index of the first id
 * >= s when some id at or after the first one is >= s, and 0 for s <= ids[0] and for the segments past the
 * last id (which only data_to_infer_dim adds). The starts (< M) must fit int32. */
static rc_status ids_to_ranges_run(rc_op *op, rc_err *err)
{
    int64_t K;
    rc_status st = ids_segments(op, &K, err);
    if (st) return st;
    const rc_tensor *it = rc_in(op, 0);
    const int64_t M = it->dims[0], dims[2] = {K, 2};
    if (M - 1 > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (segment_ids) of shape %s has more than %lld "
                          "ids: the starts are int32", rc_in_name(op, 0), RC_SHAPE(it), (long long)INT32_MAX + 1);
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, 2, dims, err))) return out_fail(op, 0, err);
    if (K == 0) return RC_OK;
    int32_t *y = rc_i32(rc_out(op, 0));
    memset(y, 0, (size_t)K * 2 * sizeof *y);
    if (M == 0) return RC_OK;
    const int32_t *ids = rc_i32(it);
    int64_t prev = ids[0];
    for (int64_t i = 0; i < M; i++) {
        while (prev < ids[i]) y[2 * ++prev] = (int32_t)i;
        y[2 * (int64_t)ids[i] + 1]++;
    }
    return RC_OK;
}

/* ================================================================ table */

const rc_op_schema rc_ops_lengths[] = {
    {"PackSegments", 2, 3, 1, 2, NULL, pack_setup, pack_run, free,
     "(lengths, tensor[, packed_like]) -> packed (N, T, ...)[, presence_mask]: segments padded to T (args "
     "max_length, pad_minf, return_presence_mask)", pack_check},
    {"UnpackSegments", 2, 2, 1, 1, NULL, pack_setup, unpack_run, free,
     "(lengths, packed (N, T, ...)) -> tensor: the first lengths[i] rows of each packed[i] (arg max_length)",
     unpack_check},
    {"AddPadding", 1, 4, 1, 2, NULL, padding_setup, add_padding_run, free,
     "(data[, lengths[, start_padding[, end_padding]]]) -> data_out[, lengths_out]: padding rows around each "
     "segment (args padding_width, end_padding_width)", padding_check},
    {"RemovePadding", 1, 2, 1, 2, NULL, padding_setup, remove_padding_run, free,
     "(data[, lengths]) -> data_out[, lengths_out]: the padding rows of each segment removed (args "
     "padding_width, end_padding_width)", padding_check},
    {"GatherPadding", 2, 2, 1, 2, NULL, padding_setup, gather_padding_run, free,
     "(data, lengths) -> padding_sum[, end_padding_sum]: sums of the padding rows over segments (args "
     "padding_width, end_padding_width)", padding_check},
    {"LengthsToSegmentIds", 1, 1, 1, 1, NULL, NULL, lengths_to_ids_run, NULL,
     "(lengths) -> segment_ids: index i repeated lengths[i] times", lengths_in_check},
    {"LengthsToRanges", 1, 1, 1, 1, NULL, NULL, lengths_to_ranges_run, NULL,
     "(lengths) -> ranges (N, 2): (offset, length) of each segment", lengths_in_check},
    {"LengthsToOffsets", 1, 1, 1, 1, NULL, offsets_setup, lengths_to_offsets_run, free,
     "(lengths) -> offsets: the start of each segment (arg include_last_offset=0: 1 appends the sum)",
     lengths_in_check},
    {"SegmentIdsToLengths", 1, 2, 1, 1, NULL, NULL, ids_to_lengths_run, NULL,
     "(segment_ids sorted[, data_to_infer_dim]) -> lengths: the count of each id", ids_to_lengths_check},
    {"SegmentIdsToRanges", 1, 2, 1, 1, NULL, NULL, ids_to_ranges_run, NULL,
     "(segment_ids sorted[, data_to_infer_dim]) -> ranges (K, 2): (start, length) of each segment",
     ids_to_lengths_check},
    {0},
};
