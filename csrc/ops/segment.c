/* ops/segment.c -- the ops behind Caffe2's deduplication of sparse gradients
 * (Net.DeduplicateGradientSlices), Unique and UnsortedSegment{Sum,Mean}, and
 * the rest of Caffe2's unsorted segment reductions (segment_reduction_op).
 *
 *   Unique(INDICES) -> (UNIQUE[, REMAPPING])
 *   FindDuplicateElements(data) -> indices
 *   UnsortedSegmentSum(DATA, SEGMENT_IDS) -> OUT
 *   UnsortedSegmentMean(DATA, SEGMENT_IDS) -> OUT
 *   UnsortedSegmentWeightedSum(DATA, SCALARS, SEGMENT_IDS) -> OUT
 *   SparseUnsortedSegmentSum(DATA, INDICES, SEGMENT_IDS) -> OUT
 *   SparseUnsortedSegmentMean(DATA, INDICES, SEGMENT_IDS) -> OUT
 *   SparseUnsortedSegmentWeightedSum(DATA, SCALARS, INDICES, SEGMENT_IDS) -> OUT
 *
 *   UnsortedSegmentSumGradient(dOUT, SEGMENT_IDS) -> dDATA
 *   UnsortedSegmentMeanGradient(dOUT, SEGMENT_IDS) -> dDATA
 *   UnsortedSegmentWeightedSumGradient(SCALARS, dOUT, SEGMENT_IDS) -> dDATA
 *   UnsortedSegmentWeightedSumWithMainInputGradient(SCALARS, dOUT, SEGMENT_IDS, DATA[, INDICES])
 *       -> (dDATA, dSCALARS)
 *
 * Unique (Caffe2's unique_ops): INDICES int32 of any shape (Caffe2: 1-D only;
 * we read it flattened). UNIQUE is 1-D int32, the distinct values in the order
 * of their FIRST occurrence in INDICES (Caffe2 promised no order; ours is
 * deterministic). REMAPPING, when asked for, is int32 shaped like INDICES with
 * UNIQUE[REMAPPING[k]] == INDICES[k]. An open-addressing hash table (scratch,
 * malloc'd and freed within the run) makes it O(K) expected for K indices.
 * Inputs of more than 2^31 - 1 elements are refused (the remapping is int32).
 *
 * FindDuplicateElements (Caffe2's find_duplicate_elements_op): data float32 or
 * int32, 1-D (as Caffe2) -> indices int32 (Caffe2: int64), 1-D: the positions
 * holding a value that an earlier position holds (every occurrence but the
 * first), ascending. float32 values compare as numbers (Caffe2's
 * unordered_map<float>): -0.0 equals 0.0, and a NaN equals nothing (never a
 * duplicate). The same hash table as Unique's (scratch, freed in the run).
 *
 * UnsortedSegment{Sum,Mean,WeightedSum} (Caffe2's Sum, Mean and WeightedSum
 * reducers): DATA float32; SEGMENT_IDS int32 whose shape is a prefix of DATA's
 * shape (Caffe2: 1-D over DATA's first dim); viewed as N = numel(ids) rows of
 * R = prod(DATA.shape[ids.ndim:]) elements. SCALARS (WeightedSum) float32
 * shaped like SEGMENT_IDS, one weight per row. OUT has shape
 * (S,) + DATA.shape[ids.ndim:], S = argument num_segments when given (>= 0;
 * -1, the default, as in Caffe2, means max(ids) + 1, and 0 for no ids). OUT is
 * zeroed, then row k of DATA (times SCALARS[k]) is added to OUT[ids[k]] for k
 * in order, in float (so the sum is deterministic); Mean then divides each
 * segment by its row count, and a segment with no rows stays 0 (as Caffe2;
 * never 0/0). The Sparse* ops (Caffe2's fused Gather + UnsortedSegment*):
 * DATA float32 with ndim >= 1, INDICES int32 1-D, SEGMENT_IDS int32 1-D of the
 * same length N (SCALARS too); row k is DATA[INDICES[k]] (no copy is made) and
 * OUT has shape (S,) + DATA.shape[1:]. Every id and index is checked before
 * anything is written: a negative id, or one >= S, is a ValueError naming the
 * op, the blob, the index of the id and its value (Caffe2 enforced the range
 * too, but only after resizing the output); an index outside
 * [0, DATA.shape[0]) an IndexError. The WeightedSum ops take Caffe2's argument
 * grad_on_weights (0 or 1, read by the gradient maker).
 *
 * Gradients (Caffe2's names and inputs): dOUT float32 with ndim >= 1
 * (S = dOUT.dims[0]), SEGMENT_IDS int32 of any shape with ids in [0, S)
 * -> dDATA of shape ids.shape + dOUT.shape[1:], dDATA[k] = dOUT[ids[k]] (Sum),
 * dOUT[ids[k]] / count(ids == ids[k]) (Mean), SCALARS[k] * dOUT[ids[k]]
 * (WeightedSum). The Sparse* ops use the same ops (as Caffe2's maker): their
 * rows are the values of a GradientSlice with INDICES. WithMainInput (not a
 * Caffe2 op: its maker refused grad_on_weights for the segment ops; named as
 * our SortedSegmentWeightedSumWithMainInputGradient) also gives dSCALARS,
 * shaped like the ids: dSCALARS[k] = <dOUT[ids[k]], row k of DATA> in double,
 * rounded once, row k being DATA[INDICES[k]] when INDICES is given.
 *
 * No global state; the kernels are plain loops over pointers. The only
 * allocations besides the outputs are the scratch buffers of Unique and
 * FindDuplicateElements (hash table, unique values / positions) and of the
 * Mean ops (segment counts), owned by the run that allocates them and freed
 * before it returns, also on error.
 */
#include "../core/rc_core.h"
#include "lengths_reduce.h"
#include "sparse.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Writes the index of flat position k of tensor t as "i, j, ..." into buf (empty for 0-d). */
static const char *index_str(const rc_tensor *t, int64_t k, char *buf, size_t n)
{
    int64_t idx[RC_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->dims[d] ? k % t->dims[d] : 0;
        k = t->dims[d] ? k / t->dims[d] : 0;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < t->ndim && used < n; d++) {
        int w = snprintf(buf + used, n - used, d ? ", %lld" : "%lld", (long long)idx[d]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

/* Input i holds int32 ids that must all lie in [0, S); `what` says where S comes from. */
static rc_status check_ids(rc_op *op, int i, int64_t S, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    const int64_t n = rc_tensor_numel(t);
    const int32_t *ids = n ? rc_i32(t) : NULL;
    for (int64_t k = 0; k < n; k++)
        if (ids[k] < 0 || (int64_t)ids[k] >= S) {
            char at[160];
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (segment_ids) of shape %s: segment id %d at index [%s] is out "
                              "of range [0, %lld) (%s)", i, rc_in_name(op, i), RC_SHAPE(t), (int)ids[k],
                              index_str(t, k, at, sizeof at), (long long)S, what);
        }
    return RC_OK;
}

/* counts: (S,) zeroed by the caller; counts[ids[k]]++ for k < N. ids in [0, S). */
static void count_kernel(int64_t N, const int32_t *ids, int64_t *counts)
{
    for (int64_t k = 0; k < N; k++) counts[ids[k]]++;
}

/* ================================================================ Unique */

/* Scratch for a hash pass over K > 0 elements, owned by the caller, who frees both (also after a failure,
 * when both are NULL): *table gets 1 << *bits slots, all -1, with 1 << *bits >= 2K and 4 <= *bits <= 32;
 * *list gets K int32. `what` names the elements in the out-of-memory message. */
static rc_status hash_scratch(rc_op *op, int64_t K, const char *what, int32_t **table, int *bits, int32_t **list,
                              rc_err *err)
{
    int b = 4;
    while (((int64_t)1 << b) < 2 * K) b++;
    *table = malloc(sizeof **table << b);
    *list = malloc(sizeof **list * (size_t)K);
    if (!*table || !*list) {
        free(*table);
        free(*list);
        *table = *list = NULL;
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (scratch for %lld %s)", (long long)K, what);
    }
    for (uint64_t s = 0; s < (uint64_t)1 << b; s++) (*table)[s] = -1;
    *bits = b;
    return RC_OK;
}

/* Output 0 := list[0:n] as an (n,) int32 tensor. Frees list (NULL when n == 0), whatever happens. */
static rc_status list_out(rc_op *op, int32_t *list, int64_t n, rc_err *err)
{
    const int64_t dims[1] = {n};
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, dims, err)) {
        free(list);
        return out_fail(op, 0, err);
    }
    if (n) memcpy(rc_i32(rc_out(op, 0)), list, sizeof *list * (size_t)n);
    free(list);
    return RC_OK;
}

/* idx: (K,) -> uniq: (U,) in first-occurrence order, remap: (K,) (may be NULL);
 * table: from hash_scratch, for K. Returns U. */
static int64_t unique_kernel(int64_t K, const int32_t *idx, int32_t *table, int bits, int32_t *uniq, int32_t *remap)
{
    const uint32_t mask = (uint32_t)(((uint64_t)1 << bits) - 1u);
    int64_t U = 0;
    for (int64_t k = 0; k < K; k++) {
        const int32_t v = idx[k];
        /* Fibonacci hashing: the top `bits` bits of v * 2^32 / phi */
        uint32_t s = ((uint32_t)v * 2654435769u) >> (32 - bits);
        while (table[s] >= 0 && uniq[table[s]] != v) s = (s + 1) & mask;
        if (table[s] < 0) {
            table[s] = (int32_t)U;
            uniq[U++] = v;
        }
        if (remap) remap[k] = table[s];
    }
    return U;
}

static rc_status unique_check(rc_op *op, rc_err *err)
{
    return rc_check_input(op, 0, RC_I32, err);
}

/* Unique: INDICES int32 (any shape) -> UNIQUE (U,) int32 [, REMAPPING int32 shaped like INDICES]. */
static rc_status unique_run(rc_op *op, rc_err *err)
{
    rc_status st = unique_check(op, err);
    if (st) return st;
    const rc_tensor *in = rc_in(op, 0);
    const int64_t K = rc_tensor_numel(in);
    if (K > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' of shape %s has more than %d elements",
                          rc_in_name(op, 0), RC_SHAPE(in), INT32_MAX);
    if (op->n_out == 2) {
        int64_t dims[RC_MAX_DIMS];
        memcpy(dims, in->dims, sizeof dims);
        if (rc_tensor_resize(rc_out(op, 1), RC_I32, in->ndim, dims, err)) return out_fail(op, 1, err);
    }
    int64_t U = 0;
    int32_t *uniq = NULL, *table = NULL; /* scratch, owned here, freed below */
    if (K > 0) {
        int bits;
        if ((st = hash_scratch(op, K, "indices", &table, &bits, &uniq, err))) return st;
        U = unique_kernel(K, rc_i32(in), table, bits, uniq, op->n_out == 2 ? rc_i32(rc_out(op, 1)) : NULL);
    }
    free(table);
    return list_out(op, uniq, U, err);
}

/* ================================================================ FindDuplicateElements */

/* The key of element k of data (4-byte elements): its bits (read with memcpy: float32 data too), with
 * -0.0f as +0.0f (float32 data: equal values, equal keys). */
static inline uint32_t dup_key(const unsigned char *data, int is_float, int64_t k)
{
    uint32_t b;
    memcpy(&b, data + 4 * k, sizeof b);
    return is_float && b == 0x80000000u ? 0u : b;
}

/* data: (K,) 4-byte elements -> dups: the positions whose value an earlier position holds, ascending;
 * returns their count. A float32 NaN (is_float) equals nothing. table: (cap,) slots, 1 << bits == cap
 * >= 2K, 4 <= bits <= 32, from hash_scratch; each slot becomes -1 or a position holding a value first. */
static int64_t dup_kernel(int64_t K, const unsigned char *data, int is_float, int32_t *table, int bits,
                          int32_t *dups)
{
    const uint32_t mask = (uint32_t)(((uint64_t)1 << bits) - 1u);
    int64_t D = 0;
    for (int64_t k = 0; k < K; k++) {
        const uint32_t v = dup_key(data, is_float, k);
        if (is_float && (v & 0x7fffffffu) > 0x7f800000u) continue; /* NaN */
        uint32_t s = (v * 2654435769u) >> (32 - bits);
        while (table[s] >= 0 && dup_key(data, is_float, table[s]) != v) s = (s + 1) & mask;
        if (table[s] < 0)
            table[s] = (int32_t)k;
        else
            dups[D++] = (int32_t)k;
    }
    return D;
}

static rc_status find_dup_check(rc_op *op, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    rc_status st;
    if (x->dtype != RC_I32 && (st = rc_check_input(op, 0, RC_F32, err)))
        return st == RC_ERR_TYPE ? rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' (data) must be float32 or "
                                              "int32, got %s", rc_in_name(op, 0), RC_SHAPE(x)) : st;
    if (x->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (data) must be 1-D, got %s", rc_in_name(op, 0),
                          RC_SHAPE(x));
    if (x->dims[0] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (data) of shape %s has more than %d elements (the "
                          "indices are int32)", rc_in_name(op, 0), RC_SHAPE(x), INT32_MAX);
    return RC_OK;
}

/* FindDuplicateElements: data (K,) float32 / int32 -> indices (D,) int32. */
static rc_status find_dup_run(rc_op *op, rc_err *err)
{
    rc_status st = find_dup_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t K = x->dims[0];
    int64_t D = 0;
    int32_t *dups = NULL, *table = NULL; /* scratch, owned here, freed below */
    if (K > 0) {
        int bits;
        if ((st = hash_scratch(op, K, "elements", &table, &bits, &dups, err))) return st;
        D = dup_kernel(K, rc_tensor_data(x), x->dtype == RC_F32, table, bits, dups);
    }
    free(table);
    return list_out(op, dups, D, err);
}

/* ================================================================ UnsortedSegment* / SparseUnsortedSegment* */

enum { K_SUM, K_MEAN, K_WSUM };

typedef struct {
    int64_t num_segments; /* -1: max(ids) + 1 */
} segment_state;

static rc_status segment_setup(rc_op *op, rc_err *err)
{
    segment_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st = rc_arg_i(&op->def, "num_segments", -1, &s->num_segments, err);
    if (st) return st;
    if (s->num_segments < -1)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument num_segments=%lld must be >= 0 (or -1, the default: max(segment_ids) + 1)",
                          (long long)s->num_segments);
    return RC_OK;
}

/* The WeightedSum ops: num_segments and grad_on_weights (0 or 1, read by the gradient maker). */
static rc_status segment_wsum_setup(rc_op *op, rc_err *err)
{
    rc_status st = segment_setup(op, err);
    return st ? st : rc_lr_wsum_setup(op, err);
}

/* Input i (checked) has the shape of input ids; `what` names its role. */
static rc_status check_like_ids(rc_op *op, int i, int ids, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i), *s = rc_in(op, ids);
    if (!rc_tensor_same_shape(t, s))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (%s) of shape %s must have the shape of input %d blob '%s' "
                          "(segment_ids) %s", i, rc_in_name(op, i), what, RC_SHAPE(t), ids, rc_in_name(op, ids),
                          RC_SHAPE(s));
    return RC_OK;
}

/* Input i (checked) has exactly 1 dim; `what` names its role. */
static rc_status check_1d(rc_op *op, int i, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have 1 dim, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(t));
    return RC_OK;
}

/* DATA float32; SEGMENT_IDS int32. Dense: the ids' shape is a prefix of DATA's;
 * sparse: DATA has at least 1 dim, INDICES and SEGMENT_IDS are int32 1-D of one
 * length. SCALARS (WeightedSum) float32 shaped like SEGMENT_IDS. Gives N (rows
 * reduced: numel of the ids), R (elements per row) and *rest, the first dim of
 * DATA that belongs to a row (ids.ndim, or 1 when sparse). */
static rc_status segment_shapes(rc_op *op, int kind, int sparse, int64_t *N, int64_t *R, int *rest, rc_err *err)
{
    const rc_seg_layout l = rc_seg_inputs(kind == K_WSUM, sparse);
    rc_status st;
    if ((st = rc_check_input(op, l.data, RC_F32, err)) || (st = rc_check_input(op, l.ids, RC_I32, err))) return st;
    const rc_tensor *data = rc_in(op, l.data), *ids = rc_in(op, l.ids);
    if (sparse) {
        if (data->ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (data) must have at least 1 dim, got %s",
                              l.data, rc_in_name(op, l.data), RC_SHAPE(data));
        if ((st = rc_check_input(op, l.idx, RC_I32, err)) || (st = check_1d(op, l.idx, "indices", err)) ||
            (st = check_1d(op, l.ids, "segment_ids", err)))
            return st;
        const rc_tensor *idx = rc_in(op, l.idx);
        if (idx->dims[0] != ids->dims[0])
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (segment_ids) of shape %s must hold one id per index: %lld (input "
                              "%d blob '%s' (indices) of shape %s)", l.ids, rc_in_name(op, l.ids), RC_SHAPE(ids),
                              (long long)idx->dims[0], l.idx, rc_in_name(op, l.idx), RC_SHAPE(idx));
        *rest = 1;
    } else {
        int ok = ids->ndim <= data->ndim;
        for (int d = 0; ok && d < ids->ndim; d++) ok = ids->dims[d] == data->dims[d];
        if (!ok)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "the shape of input %d blob '%s' (segment_ids) %s must be a prefix of the shape of input "
                              "%d blob '%s' %s", l.ids, rc_in_name(op, l.ids), RC_SHAPE(ids), l.data,
                              rc_in_name(op, l.data), RC_SHAPE(data));
        if (1 + data->ndim - ids->ndim > RC_MAX_DIMS)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "output would have %d dims (input %d blob '%s' %s with 0-d segment_ids), at most %d "
                              "are supported", 1 + data->ndim, l.data, rc_in_name(op, l.data), RC_SHAPE(data),
                              RC_MAX_DIMS);
        *rest = ids->ndim;
    }
    if (l.w >= 0 && ((st = rc_check_input(op, l.w, RC_F32, err)) || (st = check_like_ids(op, l.w, l.ids, "scalars",
                                                                                           err))))
        return st;
    *N = rc_tensor_numel(ids);
    *R = rc_dims_prod(data, *rest, data->ndim);
    return RC_OK;
}

/* data: (V, R), rows: (N,) indices into data or NULL (row k = k), w: (N,) or NULL,
 * ids: (N,) in [0, S) -> out: (S, R) = 0; out[ids[k]] += w[k] * data[row k] (w = 1
 * without weights), k in order, in float */
static void segment_sum_kernel(int64_t S, int64_t N, int64_t R, const float *data, const int32_t *rows,
                               const float *w, const int32_t *ids, float *out)
{
    memset(out, 0, sizeof *out * (size_t)(S * R));
    for (int64_t k = 0; k < N; k++) {
        float *o = out + (int64_t)ids[k] * R;
        const float *x = data + (rows ? (int64_t)rows[k] : k) * R;
        if (w)
            for (int64_t r = 0; r < R; r++) o[r] += w[k] * x[r];
        else
            for (int64_t r = 0; r < R; r++) o[r] += x[r];
    }
}

/* out: (S, R) sums, counts: (S,) -> out[s] /= counts[s] where counts[s] > 0 (else stays 0) */
static void segment_div_kernel(int64_t S, int64_t R, const int64_t *counts, float *out)
{
    for (int64_t s = 0; s < S; s++) {
        if (counts[s] == 0) continue;
        const float c = (float)counts[s];
        float *o = out + s * R;
        for (int64_t r = 0; r < R; r++) o[r] /= c;
    }
}

static rc_status segment_run(rc_op *op, int kind, int sparse, rc_err *err)
{
    const segment_state *s = op->state;
    const rc_seg_layout l = rc_seg_inputs(kind == K_WSUM, sparse);
    int64_t N, R;
    int rest;
    rc_status st = segment_shapes(op, kind, sparse, &N, &R, &rest, err);
    if (st) return st;
    const rc_tensor *data = rc_in(op, l.data), *ids = rc_in(op, l.ids);
    const int32_t *id = N ? rc_i32(ids) : NULL;
    int64_t S = s->num_segments;
    char what[96];
    if (S < 0) {
        S = 0;
        for (int64_t k = 0; k < N; k++)
            if ((int64_t)id[k] + 1 > S) S = (int64_t)id[k] + 1;
        snprintf(what, sizeof what, "the number of segments: max(segment_ids) + 1");
    } else {
        snprintf(what, sizeof what, "argument num_segments=%lld", (long long)S);
    }
    if ((st = check_ids(op, l.ids, S, what, err))) return st;
    if (sparse && (st = rc_sparse_check_range_of(op, l.idx, l.data, err))) return st;
    int64_t *counts = NULL; /* scratch of the Mean ops, owned here, freed below */
    if (kind == K_MEAN && S > 0) {
        counts = calloc((size_t)S, sizeof *counts);
        if (!counts)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (counts of %lld segments)", (long long)S);
    }
    int64_t dims[RC_MAX_DIMS];
    dims[0] = S;
    for (int d = rest; d < data->ndim; d++) dims[1 + d - rest] = data->dims[d];
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1 + data->ndim - rest, dims, err)) {
        free(counts);
        return out_fail(op, 0, err);
    }
    if (S > 0 && R > 0) {
        float *out = rc_f32(rc_out(op, 0));
        const int32_t *rows = sparse && N ? rc_i32(rc_in(op, l.idx)) : NULL;
        const float *w = l.w >= 0 && N ? rc_f32(rc_in(op, l.w)) : NULL;
        segment_sum_kernel(S, N, R, N ? rc_f32(data) : NULL, rows, w, id, out);
        if (counts) {
            count_kernel(N, id, counts);
            segment_div_kernel(S, R, counts, out);
        }
    }
    free(counts);
    return RC_OK;
}

#define FWD(name, kind, sparse)                                                                          \
    static rc_status name##_check(rc_op *op, rc_err *err)                                               \
    {                                                                                                    \
        int64_t N, R;                                                                                    \
        int rest;                                                                                        \
        return segment_shapes(op, kind, sparse, &N, &R, &rest, err);                                     \
    }                                                                                                    \
    static rc_status name##_run(rc_op *op, rc_err *err) { return segment_run(op, kind, sparse, err); }

FWD(usum, K_SUM, 0)
FWD(umean, K_MEAN, 0)
FWD(uwsum, K_WSUM, 0)
FWD(susum, K_SUM, 1)
FWD(sumean, K_MEAN, 1)
FWD(suwsum, K_WSUM, 1)

/* ================================================================ UnsortedSegment*Gradient */

enum { G_SUM, G_MEAN, G_W, G_MAIN }; /* G_MAIN: WeightedSum with the weights' gradient */

typedef struct {
    int w, g, ids, data, idx; /* input positions; -1: absent */
} grad_layout;

static grad_layout grad_inputs(rc_op *op, int variant)
{
    grad_layout l = {-1, 0, 1, -1, -1};
    if (variant == G_W || variant == G_MAIN) l.w = 0, l.g = 1, l.ids = 2;
    if (variant == G_MAIN) {
        l.data = 3;
        if (op->n_in > 4) l.idx = 4;
    }
    return l;
}

/* dOUT float32 of ndim >= 1 (S = dOUT.dims[0]), SEGMENT_IDS int32 (any shape);
 * dDATA has ndim ids.ndim + dOUT.ndim - 1. SCALARS float32 shaped like the ids.
 * G_MAIN: DATA float32 shaped like dDATA, or with INDICES (int32 shaped like
 * the ids) any rows of dOUT's row shape. */
static rc_status segment_grad_check_v(rc_op *op, int variant, rc_err *err)
{
    const grad_layout l = grad_inputs(op, variant);
    rc_status st;
    if ((st = rc_check_input(op, l.g, RC_F32, err)) || (st = rc_check_input(op, l.ids, RC_I32, err))) return st;
    const rc_tensor *g = rc_in(op, l.g), *ids = rc_in(op, l.ids);
    if (g->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (the output gradient) must have at least 1 dim (the segments), got %s",
                          l.g, rc_in_name(op, l.g), RC_SHAPE(g));
    if (ids->ndim + g->ndim - 1 > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output would have %d dims (input %d blob '%s' %s + input %d blob '%s' %s without its first "
                          "dim), at most %d are supported", ids->ndim + g->ndim - 1, l.ids, rc_in_name(op, l.ids),
                          RC_SHAPE(ids), l.g, rc_in_name(op, l.g), RC_SHAPE(g), RC_MAX_DIMS);
    if (l.w >= 0 && ((st = rc_check_input(op, l.w, RC_F32, err)) || (st = check_like_ids(op, l.w, l.ids, "scalars",
                                                                                           err))))
        return st;
    if (l.data < 0) return RC_OK;
    if ((st = rc_check_input(op, l.data, RC_F32, err))) return st;
    const rc_tensor *data = rc_in(op, l.data);
    int ok;
    if (l.idx >= 0) {
        if ((st = rc_check_input(op, l.idx, RC_I32, err)) || (st = check_like_ids(op, l.idx, l.ids, "indices", err)))
            return st;
        ok = data->ndim == g->ndim;
        for (int d = 1; ok && d < g->ndim; d++) ok = data->dims[d] == g->dims[d];
    } else {
        ok = data->ndim == ids->ndim + g->ndim - 1;
        for (int d = 0; ok && d < ids->ndim; d++) ok = data->dims[d] == ids->dims[d];
        for (int d = 1; ok && d < g->ndim; d++) ok = data->dims[ids->ndim + d - 1] == g->dims[d];
    }
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (data) of shape %s must have %s: input %d blob '%s' (segment_ids) %s, "
                          "input %d blob '%s' (the output gradient) %s", l.data, rc_in_name(op, l.data),
                          RC_SHAPE(data), l.idx >= 0 ? "rows of the output gradient's row shape" :
                          "the shape of the segment ids followed by the output gradient's row shape", l.ids,
                          rc_in_name(op, l.ids), RC_SHAPE(ids), l.g, rc_in_name(op, l.g), RC_SHAPE(g));
    return RC_OK;
}

/* g: (S, R), ids: (N,) in [0, S), w: (N,) or NULL, counts: (S,) counts of the ids
 * or NULL -> dx: (N, R), dx[k] = w[k] * g[ids[k]] (with w), g[ids[k]] /
 * counts[ids[k]] (with counts), else g[ids[k]] */
static void segment_grad_kernel(int64_t N, int64_t R, const float *g, const int32_t *ids, const float *w,
                                const int64_t *counts, float *dx)
{
    for (int64_t k = 0; k < N; k++) {
        const float *gr = g + (int64_t)ids[k] * R;
        float *d = dx + k * R;
        if (w) {
            for (int64_t r = 0; r < R; r++) d[r] = w[k] * gr[r];
        } else if (counts) {
            const float c = (float)counts[ids[k]];
            for (int64_t r = 0; r < R; r++) d[r] = gr[r] / c;
        } else {
            memcpy(d, gr, sizeof *d * (size_t)R);
        }
    }
}

/* g: (S, R), ids: (N,) in [0, S), data: (V, R), rows: (N,) or NULL (row k = k)
 * -> dw: (N,), dw[k] = sum_r g[ids[k]][r] * data[row k][r], in double, rounded once */
static void segment_grad_weights_kernel(int64_t N, int64_t R, const float *g, const int32_t *ids, const float *data,
                                        const int32_t *rows, float *dw)
{
    for (int64_t k = 0; k < N; k++) {
        const float *gr = g + (int64_t)ids[k] * R, *x = data + (rows ? (int64_t)rows[k] : k) * R;
        double acc = 0.0;
        for (int64_t r = 0; r < R; r++) acc += (double)gr[r] * (double)x[r];
        dw[k] = (float)acc;
    }
}

static rc_status segment_grad_run(rc_op *op, int variant, rc_err *err)
{
    rc_status st = segment_grad_check_v(op, variant, err);
    if (st) return st;
    const grad_layout l = grad_inputs(op, variant);
    const rc_tensor *g = rc_in(op, l.g), *ids = rc_in(op, l.ids);
    const int64_t S = g->dims[0], N = rc_tensor_numel(ids), R = rc_dims_prod(g, 1, g->ndim);
    char what[160];
    snprintf(what, sizeof what, "the first dim of input %d blob '%s' of shape %s", l.g, rc_in_name(op, l.g),
             RC_SHAPE(g));
    if ((st = check_ids(op, l.ids, S, what, err))) return st;
    if (l.idx >= 0 && (st = rc_sparse_check_range_of(op, l.idx, l.data, err))) return st;
    int64_t *counts = NULL; /* scratch of the Mean gradient, owned here, freed below */
    if (variant == G_MEAN && N > 0 && R > 0) {
        counts = calloc((size_t)S, sizeof *counts); /* S > 0: N ids lie in [0, S) */
        if (!counts)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (counts of %lld segments)", (long long)S);
    }
    int64_t dims[RC_MAX_DIMS];
    for (int d = 0; d < ids->ndim; d++) dims[d] = ids->dims[d];
    for (int d = 1; d < g->ndim; d++) dims[ids->ndim + d - 1] = g->dims[d];
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, ids->ndim + g->ndim - 1, dims, err)) {
        free(counts);
        return out_fail(op, 0, err);
    }
    if (variant == G_MAIN && rc_tensor_resize(rc_out(op, 1), RC_F32, ids->ndim, ids->dims, err)) {
        free(counts);
        return out_fail(op, 1, err);
    }
    if (N > 0) {
        const int32_t *id = rc_i32(ids);
        const float *w = l.w >= 0 ? rc_f32(rc_in(op, l.w)) : NULL;
        if (counts) count_kernel(N, id, counts);
        if (R > 0) segment_grad_kernel(N, R, rc_f32(g), id, w, counts, rc_f32(rc_out(op, 0)));
        if (variant == G_MAIN && R > 0)
            segment_grad_weights_kernel(N, R, rc_f32(g), id, rc_f32(rc_in(op, l.data)),
                                        l.idx >= 0 ? rc_i32(rc_in(op, l.idx)) : NULL, rc_f32(rc_out(op, 1)));
        else if (variant == G_MAIN)
            memset(rc_f32(rc_out(op, 1)), 0, sizeof(float) * (size_t)N);
    }
    free(counts);
    return RC_OK;
}

#define GRAD(name, variant)                                                                              \
    static rc_status name##_check(rc_op *op, rc_err *err) { return segment_grad_check_v(op, variant, err); } \
    static rc_status name##_run(rc_op *op, rc_err *err) { return segment_grad_run(op, variant, err); }

GRAD(usum_g, G_SUM)
GRAD(umean_g, G_MEAN)
GRAD(uwsum_g, G_W)
GRAD(uwsum_mg, G_MAIN)

/* ================================================================ table */

const rc_op_schema rc_ops_segment[] = {
    {"FindDuplicateElements", 1, 1, 1, 1, NULL, NULL, find_dup_run, NULL,
     "(data (K,) f32/i32) -> indices (D,) int32: the positions holding a value an earlier position holds",
     find_dup_check},
    {"Unique", 1, 1, 1, 2, NULL, NULL, unique_run, NULL,
     "(INDICES int32, any shape) -> (UNIQUE (U,) int32 in order of first occurrence[, REMAPPING shaped like "
     "INDICES: UNIQUE[REMAPPING] == INDICES])", unique_check},
    {"UnsortedSegmentSum", 2, 2, 1, 1, NULL, segment_setup, usum_run, free,
     "(DATA, SEGMENT_IDS int32, a prefix of DATA's shape) -> OUT (S,) + DATA.shape[ids.ndim:]: zeros, then "
     "OUT[ids[k]] += DATA[k] in order; S = arg num_segments, else max(ids) + 1", usum_check},
    {"UnsortedSegmentMean", 2, 2, 1, 1, NULL, segment_setup, umean_run, free,
     "(DATA, SEGMENT_IDS) -> OUT: as UnsortedSegmentSum, each segment divided by its row count (empty: 0)",
     umean_check},
    {"UnsortedSegmentWeightedSum", 3, 3, 1, 1, NULL, segment_wsum_setup, uwsum_run, free,
     "(DATA, SCALARS shaped like SEGMENT_IDS, SEGMENT_IDS) -> OUT: as UnsortedSegmentSum of SCALARS[k] * DATA[k]; "
     "arg grad_on_weights", uwsum_check},
    {"SparseUnsortedSegmentSum", 3, 3, 1, 1, NULL, segment_setup, susum_run, free,
     "(DATA (V, ...), INDICES (N,) int32, SEGMENT_IDS (N,)) -> OUT (S, ...): UnsortedSegmentSum of DATA[INDICES]",
     susum_check},
    {"SparseUnsortedSegmentMean", 3, 3, 1, 1, NULL, segment_setup, sumean_run, free,
     "(DATA, INDICES (N,), SEGMENT_IDS (N,)) -> OUT: UnsortedSegmentMean of DATA[INDICES]", sumean_check},
    {"SparseUnsortedSegmentWeightedSum", 4, 4, 1, 1, NULL, segment_wsum_setup, suwsum_run, free,
     "(DATA, SCALARS (N,), INDICES (N,), SEGMENT_IDS (N,)) -> OUT: UnsortedSegmentWeightedSum of DATA[INDICES]",
     suwsum_check},
    {"UnsortedSegmentSumGradient", 2, 2, 1, 1, NULL, NULL, usum_g_run, NULL,
     "(dOUT (S, ...), SEGMENT_IDS int32) -> dDATA ids.shape + dOUT.shape[1:]: dOUT[ids[k]]", usum_g_check},
    {"UnsortedSegmentMeanGradient", 2, 2, 1, 1, NULL, NULL, umean_g_run, NULL,
     "(dOUT (S, ...), SEGMENT_IDS int32) -> dDATA ids.shape + dOUT.shape[1:]: dOUT[ids[k]] / count(ids == ids[k])",
     umean_g_check},
    {"UnsortedSegmentWeightedSumGradient", 3, 3, 1, 1, NULL, NULL, uwsum_g_run, NULL,
     "(SCALARS, dOUT (S, ...), SEGMENT_IDS) -> dDATA ids.shape + dOUT.shape[1:]: SCALARS[k] * dOUT[ids[k]]",
     uwsum_g_check},
    {"UnsortedSegmentWeightedSumWithMainInputGradient", 4, 5, 2, 2, NULL, NULL, uwsum_mg_run, NULL,
     "(SCALARS, dOUT, SEGMENT_IDS, DATA[, INDICES]) -> (dDATA, dSCALARS shaped like the ids: <dOUT[ids[k]], row k "
     "of DATA (DATA[INDICES[k]])>)", uwsum_mg_check},
    {0},
};
