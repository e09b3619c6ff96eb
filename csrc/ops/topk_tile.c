/* ops/topk_tile.c -- TopK, TopKGradient, Tile, TileGradient (Caffe2's top_k.cc
 * and tile_op.h), the selection and replication ops of Caffe2's seq2seq beam
 * search, and NumpyTile (numpy_tile_op.h).
 *
 *   TopK(X) -> (values, indices[, flatten_indices])        args k, axis=-1
 *   TopKGradient(dValues, indices, X) -> dX                 arg axis=-1
 *   Tile(X[, tiles[, axis]]) -> Y                           args tiles, axis=0
 *   TileGradient(dY[, tiles[, axis]]) -> dX                 args tiles, axis=0
 *   NumpyTile(X, repeats) -> Y                              Y = np.tile(X, repeats)
 *   LengthsTopK(X, lengths) -> (values, indices)            arg k
 *   LengthsTopKGradient(lengths, indices, dValues) -> dX    arg k
 *
 * TopK: X float32 of rank >= 1; along `axis` (negative counts from the end)
 * the k largest values, sorted descending, and their positions along the axis
 * (int32; Caffe2: int64). values and indices have X's shape with k at `axis`;
 * flatten_indices (optional, int32, 1-D of values' element count) holds each
 * selected element's position in X.ravel(). The order is total, so the result
 * does not depend on the algorithm: a before b when a > b, or a == b and a's
 * index is lower (Caffe2's comparator: ties go to the lower index; -0.0 and
 * 0.0 are equal, so they tie). NaN (Caffe2: unspecified, its heap compares
 * with <) sorts as larger than every number, +inf included, NaNs among
 * themselves by index, as torch.topk. `k` is required, k >= 1; when k exceeds
 * X.dims[axis] = n, as in Caffe2, the outputs still have k at the axis and
 * the positions n..k-1 of every row hold value 0 and index -1 (flatten_indices
 * -1 too). A bounded heap of min(k, n) entries (scratch in op->state, grown
 * when it grows past it) makes a row O(n log k); the survivors are then
 * sorted.
 *
 * TopKGradient (Caffe2's inputs: dValues, indices = TopK's output 1, X = TopK's
 * input, read for its shape only, any dtype): dX float32 of X's shape, zero
 * except dX[.., indices[.., j, ..], ..] += dValues[.., j, ..] along the axis.
 * dValues float32 and indices int32 of one shape, which is X's except at the
 * axis, where it is any k. An index of -1 (TopK's padding when k > X.dims[axis])
 * is skipped, as Caffe2 skipped it; every other index is checked to lie in
 * [0, X.dims[axis]) before anything is written (Caffe2 skipped every negative
 * index, without advancing its read position, and wrote out of bounds for a
 * large one). Repeated indices in one row add up (Caffe2 kept the last; TopK's
 * own indices never repeat, so its gradient is the same either way).
 *
 * Tile: X float32 or int32 of rank >= 1 -> Y = np.concatenate([X] * tiles,
 * axis). tiles and axis come from the arguments or, as in Caffe2, from inputs
 * 1 and 2 (int32 tensors of shape (1,); an input overrides its argument; with
 * input 1 alone the axis is the argument). `tiles` is required when input 1 is
 * absent (as Caffe2); `axis` defaults to 0 (Caffe2 required it too). tiles >= 1
 * and <= 2^31 - 1 (Caffe2 did not check: a negative count gave a negative dim,
 * and TileGradient of a 0 count divided by zero); -ndim <= axis < ndim.
 *
 * TileGradient: dY float32, its axis dim a multiple of tiles -> dX with that dim
 * divided by tiles, dX = sum over t = 0, 1, ..., tiles - 1 of the t-th tile of dY,
 * added in float32 in that order (so the bits are fixed).
 *
 * NumpyTile: X float32 or int32, repeats int32 1-D (Caffe2: int64) with one
 * entry per dim of X (as Caffe2, which enforced it; np.tile would also take
 * other lengths), each >= 0 (0 gives an empty dim, as NumPy; a negative one is
 * a ValueError, where Caffe2 did not check). Y has dims X.dims[i] * repeats[i].
 * No gradient, as Caffe2 (use Tile, whose gradient exists, for one axis).
 *
 * LengthsTopK (lengths_top_k_op): X float32 1-D cut into segments by lengths
 * (int32 1-D, each >= 0, summing to X's length: a ValueError otherwise, where
 * Caffe2 read past X); per segment the k largest values in TopK's order
 * (descending, NaN first, ties by lower position) and their positions inside
 * the segment: values (N, k) float32, indices (N, k) int32, a segment shorter
 * than k padded with 0 / -1, as Caffe2.
 * LengthsTopKGradient(lengths, indices (N, k), dValues (N, k)) -> dX (sum of
 * lengths,): zeros with dValues[i, j] added at segment i's position
 * indices[i, j] for j < min(k, length_i) (the rest is padding and skipped,
 * as Caffe2). Such an index outside [0, length_i) is a ValueError (Caffe2
 * checked only the upper end of the whole X); repeated indices add up
 * (Caffe2 kept the last).
 *
 * No global state; kernels are plain loops; the only allocation besides the
 * outputs is TopK's and LengthsTopK's heap (owned by the op's state, freed with
 * it).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Input i must hold a tensor (any dtype). */
static rc_status need_tensor(rc_op *op, int i, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->dtype == RC_UNDEF || !t->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", i,
                          rc_in_name(op, i));
    return RC_OK;
}

/* axis of input i (rank >= 1 checked here) -> [0, ndim). */
static rc_status input_axis(rc_op *op, int i, int64_t axis, int *out, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have at least 1 dim, got %s", i,
                          rc_in_name(op, i), RC_SHAPE(t));
    if (axis < -(int64_t)t->ndim || axis >= t->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "axis %lld is out of range for input %d blob '%s' %s",
                          (long long)axis, i, rc_in_name(op, i), RC_SHAPE(t));
    *out = (int)(axis < 0 ? axis + t->ndim : axis);
    return RC_OK;
}

/* ================================================================ TopK */

typedef struct topk_entry {
    float v;
    int32_t i;
} topk_entry;

typedef struct topk_state {
    int64_t k;              /* TopK only */
    int64_t axis;
    topk_entry *heap;       /* TopK: scratch of cap entries (owned) */
    int64_t cap;
} topk_state;

static void topk_state_free(void *p)
{
    topk_state *s = p;
    if (!s) return;
    free(s->heap);
    free(s);
}

static rc_status topk_state_new(rc_op *op, topk_state **out, rc_err *err)
{
    topk_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    *out = s;
    return rc_arg_i(&op->def, "axis", -1, &s->axis, err);
}

static rc_status topk_setup(rc_op *op, rc_err *err)
{
    topk_state *s = NULL;
    rc_status st = topk_state_new(op, &s, err);
    if (st) return st;
    if (!rc_opdef_arg(&op->def, "k")) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'k' is required");
    if ((st = rc_arg_i(&op->def, "k", 0, &s->k, err))) return st;
    if (s->k < 1) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'k' must be >= 1, got %lld", (long long)s->k);
    return RC_OK;
}

static rc_status topk_grad_setup(rc_op *op, rc_err *err)
{
    topk_state *s = NULL;
    return topk_state_new(op, &s, err);
}

/* 1 when a comes before b: larger value first, NaN above everything, ties by lower index. */
static inline int topk_before(topk_entry a, topk_entry b)
{
    const int an = isnan(a.v), bn = isnan(b.v);
    if (an != bn) return an;
    if (!an && a.v != b.v) return a.v > b.v;
    return a.i < b.i;
}

/* Min-heap on the order above: h[0] is the entry that comes last. */
static void heap_sift_down(topk_entry *h, int64_t n, int64_t p)
{
    for (;;) {
        int64_t c = 2 * p + 1;
        if (c >= n) return;
        if (c + 1 < n && topk_before(h[c], h[c + 1])) c++;
        if (!topk_before(h[p], h[c])) return;
        topk_entry t = h[p];
        h[p] = h[c];
        h[c] = t;
        p = c;
    }
}

/* One row of n elements at stride `stride` from x (n >= k >= 1): the k first
 * in the order, sorted, written at stride into vals / idx (and, when flat is
 * not NULL, base + i * stride into flat). h: scratch of k entries. */
static void topk_row(const float *x, int64_t n, int64_t stride, int64_t k, topk_entry *h, float *vals, int32_t *idx,
                     int32_t *flat, int64_t base)
{
    for (int64_t i = 0; i < k; i++) h[i] = (topk_entry){x[i * stride], (int32_t)i};
    for (int64_t p = k / 2 - 1; p >= 0; p--) heap_sift_down(h, k, p);
    for (int64_t i = k; i < n; i++) {
        topk_entry e = {x[i * stride], (int32_t)i};
        if (topk_before(e, h[0])) {
            h[0] = e;
            heap_sift_down(h, k, 0);
        }
    }
    /* pop the last entry each time: out positions k-1 down to 0 */
    for (int64_t m = k; m > 0; m--) {
        const topk_entry e = h[0];
        vals[(m - 1) * stride] = e.v;
        idx[(m - 1) * stride] = e.i;
        if (flat) flat[(m - 1) * stride] = (int32_t)(base + (int64_t)e.i * stride);
        h[0] = h[m - 1];
        heap_sift_down(h, m - 1, 0);
    }
}

/* Grows s->heap to at least n entries (sized on the first run and when n grows). */
static rc_status topk_heap_reserve(rc_op *op, topk_state *s, int64_t n, rc_err *err)
{
    if (s->cap >= n) return RC_OK;
    topk_entry *h = malloc((size_t)n * sizeof *h);
    if (!h) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (scratch of %lld entries)", (long long)n);
    free(s->heap);
    s->heap = h;
    s->cap = n;
    return RC_OK;
}

/* X float32, rank >= 1, axis in range, sizes fit int32 (k > dims[axis] pads). */
static rc_status topk_check_x(rc_op *op, int *ax, rc_err *err)
{
    const topk_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = input_axis(op, 0, s->axis, ax, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->dims[*ax] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "dim %d of input 0 blob '%s' %s is larger than %d (indices are int32)",
                          *ax, rc_in_name(op, 0), RC_SHAPE(x), INT32_MAX);
    if (op->n_out > 2 && rc_tensor_numel(x) - 1 > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' %s has more than 2^31 elements: flatten_indices would not fit int32",
                          rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

static rc_status topk_check(rc_op *op, rc_err *err)
{
    int ax;
    return topk_check_x(op, &ax, err);
}

static rc_status topk_run(rc_op *op, rc_err *err)
{
    topk_state *s = op->state;
    int ax;
    rc_status st = topk_check_x(op, &ax, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = x->dims[ax], k = s->k, kk = k < n ? k : n;  /* kk: the selected; k - kk padded */
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[ax] = k;
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, x->ndim, dims, err)) return out_fail(op, 0, err);
    if (rc_tensor_resize(rc_out(op, 1), RC_I32, x->ndim, dims, err)) return out_fail(op, 1, err);
    const int64_t outer = rc_dims_prod(x, 0, ax), inner = rc_dims_prod(x, ax + 1, x->ndim);
    if (op->n_out > 2) {
        int64_t nf = outer * k * inner;
        if (rc_tensor_resize(rc_out(op, 2), RC_I32, 1, &nf, err)) return out_fail(op, 2, err);
    }
    if (outer == 0 || inner == 0) return RC_OK;
    if ((st = topk_heap_reserve(op, s, kk, err))) return st;
    const float *xd = kk ? rc_f32(x) : NULL;
    float *vals = rc_f32(rc_out(op, 0));
    int32_t *idx = rc_i32(rc_out(op, 1));
    int32_t *flat = op->n_out > 2 ? rc_i32(rc_out(op, 2)) : NULL;
    if (kk < k) {   /* Caffe2's padding: every output position first 0 / -1 / -1 */
        const int64_t total = outer * k * inner;
        memset(vals, 0, (size_t)total * sizeof *vals);
        for (int64_t q = 0; q < total; q++) idx[q] = -1;
        if (flat) memcpy(flat, idx, (size_t)total * sizeof *flat);
    }
    if (kk == 0) return RC_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const int64_t src = o * n * inner + j, dst = o * k * inner + j;
            topk_row(xd + src, n, inner, kk, s->heap, vals + dst, idx + dst, flat ? flat + dst : NULL, src);
        }
    return RC_OK;
}

/* dValues float32, indices int32 of dValues' shape, X (any dtype) of that
 * shape except at the axis, where dValues has any k (TopK pads k > X.dims[axis]). */
static rc_status topk_grad_check(rc_op *op, int *ax, rc_err *err)
{
    const topk_state *s = op->state;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_I32, err)) ||
        (st = need_tensor(op, 2, err)) || (st = input_axis(op, 2, s->axis, ax, err)))
        return st;
    const rc_tensor *dv = rc_in(op, 0), *ix = rc_in(op, 1), *x = rc_in(op, 2);
    if (!rc_tensor_same_shape(dv, ix) || dv->ndim != ix->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s (indices) must have the shape of input 0 "
                          "blob '%s' %s (dValues)", rc_in_name(op, 1), RC_SHAPE(ix), rc_in_name(op, 0), RC_SHAPE(dv));
    int ok = dv->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++) ok = d == *ax || dv->dims[d] == x->dims[d];
    if (!ok)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' %s (dValues) must have the shape of input 2 blob '%s' %s (X) except "
                          "at axis %d", rc_in_name(op, 0), RC_SHAPE(dv), rc_in_name(op, 2), RC_SHAPE(x), *ax);
    return RC_OK;
}

static rc_status topk_grad_check_only(rc_op *op, rc_err *err)
{
    int ax;
    return topk_grad_check(op, &ax, err);
}

static rc_status topk_grad_run(rc_op *op, rc_err *err)
{
    int ax;
    rc_status st = topk_grad_check(op, &ax, err);
    if (st) return st;
    const rc_tensor *dv = rc_in(op, 0), *ix = rc_in(op, 1), *x = rc_in(op, 2);
    const int64_t n = x->dims[ax], k = dv->dims[ax];
    const int64_t outer = rc_dims_prod(x, 0, ax), inner = rc_dims_prod(x, ax + 1, x->ndim);
    const int64_t m = rc_tensor_numel(ix);
    const int32_t *id = m ? rc_i32(ix) : NULL;
    for (int64_t q = 0; q < m; q++)
        if (id[q] < -1 || id[q] >= n)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' %s (indices): index %d at flat position %lld is out of range [0, "
                              "%lld) (dim %d of input 2 blob '%s' %s; -1, TopK's padding, is skipped)",
                              rc_in_name(op, 1), RC_SHAPE(ix), (int)id[q], (long long)q, (long long)n, ax,
                              rc_in_name(op, 2), RC_SHAPE(x));
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, x->ndim, dims, err)) return out_fail(op, 0, err);
    const int64_t total = rc_tensor_numel(rc_out(op, 0));
    if (total == 0) return RC_OK;
    float *dx = rc_f32(rc_out(op, 0));
    memset(dx, 0, (size_t)total * sizeof *dx);
    if (m == 0) return RC_OK;
    const float *g = rc_f32(dv);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < k; j++) {
            const int64_t s = (o * k + j) * inner;
            float *row = dx + o * n * inner;
            for (int64_t c = 0; c < inner; c++)
                if (id[s + c] >= 0) row[(int64_t)id[s + c] * inner + c] += g[s + c];
        }
    return RC_OK;
}

/* ================================================================ Tile / TileGradient */

typedef struct tile_state {
    int64_t tiles;      /* from the argument; -1: not given */
    int64_t axis;
} tile_state;

static void tile_state_free(void *p) { free(p); }

static rc_status tile_setup(rc_op *op, rc_err *err)
{
    tile_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st = rc_arg_i(&op->def, "axis", 0, &s->axis, err);
    if (!st) st = rc_arg_i(&op->def, "tiles", -1, &s->tiles, err);
    if (st) return st;
    if (!rc_opdef_arg(&op->def, "tiles")) {
        if (op->n_in < 2)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'tiles' is required (or give it as input 1)");
    } else if (s->tiles < 1 || s->tiles > INT32_MAX) {
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'tiles' must be in [1, %d], got %lld", INT32_MAX,
                          (long long)s->tiles);
    }
    return RC_OK;
}

/* Input i (1: tiles, 2: axis) must be int32 of shape (1,). */
static rc_status tile_param_input(rc_op *op, int i, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_I32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim != 1 || t->dims[0] != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must have shape (1,), got %s", i,
                          rc_in_name(op, i), i == 1 ? "tiles" : "axis", RC_SHAPE(t));
    return RC_OK;
}

/* Checks what does not depend on the values of inputs 1 and 2: input 0's dtype
 * (float32, or int32 when ints), inputs 1 and 2, and the axis when it is the argument. */
static rc_status tile_check_common(rc_op *op, int ints, rc_err *err)
{
    const tile_state *s = op->state;
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->dtype != RC_F32 && !(ints && x->dtype == RC_I32))
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' must be float32%s, got %s", rc_in_name(op, 0),
                          ints ? " or int32" : "", RC_SHAPE(x));
    for (int i = 1; i < op->n_in; i++)
        if ((st = tile_param_input(op, i, err))) return st;
    int ax;
    if (op->n_in < 3) return input_axis(op, 0, s->axis, &ax, err);
    return RC_OK;
}

static rc_status tile_check(rc_op *op, rc_err *err) { return tile_check_common(op, 1, err); }
static rc_status tile_grad_check(rc_op *op, rc_err *err) { return tile_check_common(op, 0, err); }

/* tiles and canonical axis for this run (inputs override the arguments). */
static rc_status tile_params(rc_op *op, int ints, int64_t *tiles, int *ax, rc_err *err)
{
    const tile_state *s = op->state;
    rc_status st = tile_check_common(op, ints, err);
    if (st) return st;
    int64_t t = s->tiles, a = s->axis;
    if (op->n_in > 1) {
        t = rc_i32(rc_in(op, 1))[0];
        if (t < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (tiles) must be >= 1, got %lld",
                              rc_in_name(op, 1), (long long)t);
    }
    if (op->n_in > 2) a = rc_i32(rc_in(op, 2))[0];
    *tiles = t;
    return input_axis(op, 0, a, ax, err);
}

static rc_status tile_run(rc_op *op, rc_err *err)
{
    int64_t tiles;
    int ax;
    rc_status st = tile_params(op, 1, &tiles, &ax, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    if (dims[ax] > INT64_MAX / tiles)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s tiled %lld times along axis %d overflows",
                          rc_in_name(op, 0), RC_SHAPE(x), (long long)tiles, ax);
    dims[ax] *= tiles;
    if (rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim, dims, err)) return out_fail(op, 0, err);
    const int64_t outer = rc_dims_prod(x, 0, ax);
    const size_t block = (size_t)rc_dims_prod(x, ax, x->ndim) * rc_dtype_size(x->dtype);
    if (outer == 0 || block == 0) return RC_OK;
    const char *src = rc_tensor_data(x);
    char *dst = rc_tensor_data(rc_out(op, 0));
    for (int64_t o = 0; o < outer; o++, src += block)
        for (int64_t t = 0; t < tiles; t++, dst += block) memcpy(dst, src, block);
    return RC_OK;
}

static rc_status tile_grad_run(rc_op *op, rc_err *err)
{
    int64_t tiles;
    int ax;
    rc_status st = tile_params(op, 0, &tiles, &ax, err);
    if (st) return st;
    const rc_tensor *dy = rc_in(op, 0);
    if (dy->dims[ax] % tiles)
        return rc_op_fail(op, err, RC_ERR_VALUE, "dim %d of input 0 blob '%s' %s is not a multiple of tiles=%lld", ax,
                          rc_in_name(op, 0), RC_SHAPE(dy), (long long)tiles);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, dy->dims, sizeof dims);
    dims[ax] /= tiles;
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, dy->ndim, dims, err)) return out_fail(op, 0, err);
    const int64_t outer = rc_dims_prod(dy, 0, ax);
    const int64_t block = rc_dims_prod(dy, ax, dy->ndim) / tiles;
    if (outer == 0 || block == 0) return RC_OK;
    const float *g = rc_f32(dy);
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t o = 0; o < outer; o++, dx += block) {
        memcpy(dx, g, (size_t)block * sizeof *dx);
        g += block;
        for (int64_t t = 1; t < tiles; t++, g += block)
            for (int64_t c = 0; c < block; c++) dx[c] += g[c];
    }
    return RC_OK;
}

/* ================================================================ NumpyTile */

/* X float32 or int32; repeats int32 1-D with X's rank of entries (checked at net creation). */
static rc_status numpy_tile_check(rc_op *op, rc_err *err)
{
    rc_status st = need_tensor(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *r = rc_in(op, 1);
    if (x->dtype != RC_F32 && x->dtype != RC_I32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' must be float32 or int32, got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    if ((st = rc_check_input(op, 1, RC_I32, err)) || (st = rc_check_ndim(op, 1, 1, 1, err))) return st;
    if (r->dims[0] != x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (repeats) %s must have one entry per dim of input 0 blob '%s' %s",
                          rc_in_name(op, 1), RC_SHAPE(r), rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

typedef struct np_tile {
    int nd;
    size_t esz;
    const int64_t *xdims, *rep;
    size_t xs[RC_MAX_DIMS + 1], ys[RC_MAX_DIMS + 1]; /* bytes of the X / Y blocks from dim k on */
} np_tile;

/* Writes the Y block of dims d.. (t->ys[d] bytes at dst) from the X block at src: each X sub-block in
 * turn, then that chunk repeated rep[d] - 1 more times. Every dim of Y is >= 1 here. */
static void np_tile_fill(const np_tile *t, int d, const char *src, char *dst)
{
    if (d == t->nd) {
        memcpy(dst, src, t->esz);
        return;
    }
    for (int64_t i = 0; i < t->xdims[d]; i++) np_tile_fill(t, d + 1, src + i * t->xs[d + 1], dst + i * t->ys[d + 1]);
    const size_t chunk = (size_t)t->xdims[d] * t->ys[d + 1];
    for (int64_t k = 1; k < t->rep[d]; k++) memcpy(dst + k * chunk, dst, chunk);
}

static rc_status numpy_tile_run(rc_op *op, rc_err *err)
{
    rc_status st = numpy_tile_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *r = rc_in(op, 1);
    const int32_t *rv = rc_i32(r);
    int64_t dims[RC_MAX_DIMS] = {0}, rep[RC_MAX_DIMS] = {0};
    for (int d = 0; d < x->ndim; d++) {
        rep[d] = rv[d];
        if (rep[d] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (repeats) %s: entry %d is %lld, must be >= 0",
                              rc_in_name(op, 1), RC_SHAPE(r), d, (long long)rep[d]);
        if (rep[d] && x->dims[d] > INT64_MAX / rep[d])
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s tiled %lld times along dim %d overflows",
                              rc_in_name(op, 0), RC_SHAPE(x), (long long)rep[d], d);
        dims[d] = x->dims[d] * rep[d];
    }
    if (rc_tensor_resize(rc_out(op, 0), x->dtype, x->ndim, dims, err)) return out_fail(op, 0, err);
    if (rc_tensor_numel(rc_out(op, 0)) == 0) return RC_OK;
    np_tile t = {x->ndim, rc_dtype_size(x->dtype), x->dims, rep, {0}, {0}};
    t.xs[x->ndim] = t.ys[x->ndim] = t.esz;
    for (int d = x->ndim - 1; d >= 0; d--) {
        t.xs[d] = t.xs[d + 1] * (size_t)x->dims[d];
        t.ys[d] = t.ys[d + 1] * (size_t)dims[d];
    }
    np_tile_fill(&t, 0, rc_tensor_data(x), rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ LengthsTopK / LengthsTopKGradient */

/* X float32 1-D, lengths int32 1-D (values checked at run). */
static rc_status ltk_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st || (st = rc_checks_i32_vector(op, 1, "lengths", err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (X) must be 1-D, got %s", rc_in_name(op, 0),
                          RC_SHAPE(x));
    return RC_OK;
}

/* Input li (lengths, checked 1-D int32): every length >= 0 and their sum == n (the segmented length). */
static rc_status ltk_lengths(rc_op *op, int li, int64_t n, const char *what, rc_err *err)
{
    int64_t sum;
    rc_status st = rc_checks_lengths_values(op, li, &sum, err);
    if (st) return st;
    if (sum != n)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lengths) sums to %lld, but %s has %lld "
                          "elements", li, rc_in_name(op, li), (long long)sum, what, (long long)n);
    return RC_OK;
}

static rc_status ltk_run(rc_op *op, rc_err *err)
{
    topk_state *s = op->state;
    rc_status st = ltk_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *len = rc_in(op, 1);
    char what[160];
    snprintf(what, sizeof what, "input 0 blob '%s' (X)", rc_in_name(op, 0));
    if ((st = ltk_lengths(op, 1, x->dims[0], what, err))) return st;
    const int64_t N = len->dims[0], k = s->k, dims[2] = {N, k};
    const int32_t *l = N ? rc_i32(len) : NULL;
    int64_t need = 0;   /* the largest min(k, length) */
    for (int64_t i = 0; i < N; i++)
        if (l[i] > need) need = l[i] < k ? l[i] : k;
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 2, dims, err)) return out_fail(op, 0, err);
    if (rc_tensor_resize(rc_out(op, 1), RC_I32, 2, dims, err)) return out_fail(op, 1, err);
    if (N == 0) return RC_OK;
    if ((st = topk_heap_reserve(op, s, need, err))) return st;
    const float *xd = x->dims[0] ? rc_f32(x) : NULL;
    float *vals = rc_f32(rc_out(op, 0));
    int32_t *idx = rc_i32(rc_out(op, 1));
    int64_t off = 0;
    for (int64_t i = 0; i < N; i++) {
        const int64_t n = l[i], kk = n < k ? n : k;
        float *v = vals + i * k;
        int32_t *ix = idx + i * k;
        if (kk) topk_row(xd + off, n, 1, kk, s->heap, v, ix, NULL, 0);
        for (int64_t j = kk; j < k; j++) {
            v[j] = 0.0f;
            ix[j] = -1;
        }
        off += n;
    }
    return RC_OK;
}

/* lengths int32 1-D (N,), indices int32 (N, k), dValues float32 (N, k); k from the argument. */
static rc_status ltk_grad_check(rc_op *op, rc_err *err)
{
    const topk_state *s = op->state;
    rc_status st = rc_checks_i32_vector(op, 0, "lengths", err);
    if (st || (st = rc_check_input(op, 1, RC_I32, err)) || (st = rc_check_input(op, 2, RC_F32, err))) return st;
    const int64_t N = rc_in(op, 0)->dims[0];
    static const char *const what[3] = {NULL, "indices", "dValues"};
    for (int i = 1; i < 3; i++) {
        const rc_tensor *t = rc_in(op, i);
        if (t->ndim != 2 || t->dims[0] != N || t->dims[1] != s->k)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) %s must have shape (%lld, %lld): one "
                              "row of k=%lld per length of input 0 blob '%s' %s", i, rc_in_name(op, i), what[i],
                              RC_SHAPE(t), (long long)N, (long long)s->k, (long long)s->k, rc_in_name(op, 0),
                              RC_SHAPE(rc_in(op, 0)));
    }
    return RC_OK;
}

static rc_status ltk_grad_run(rc_op *op, rc_err *err)
{
    const topk_state *s = op->state;
    rc_status st = ltk_grad_check(op, err);
    if (st) return st;
    const rc_tensor *len = rc_in(op, 0), *ixt = rc_in(op, 1);
    int64_t total;
    if ((st = rc_checks_lengths_values(op, 0, &total, err))) return st;
    const int64_t N = len->dims[0], k = s->k;
    const int32_t *l = N ? rc_i32(len) : NULL, *ix = N ? rc_i32(ixt) : NULL;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < k && j < l[i]; j++)
            if (ix[i * k + j] < 0 || ix[i * k + j] >= l[i])
                return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (indices) %s: index %d at [%lld, %lld] "
                                  "is out of range [0, %d) (the length of segment %lld)", rc_in_name(op, 1),
                                  RC_SHAPE(ixt), (int)ix[i * k + j], (long long)i, (long long)j, (int)l[i],
                                  (long long)i);
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 1, &total, err)) return out_fail(op, 0, err);
    if (total == 0) return RC_OK;
    float *dx = rc_f32(rc_out(op, 0));
    memset(dx, 0, (size_t)total * sizeof *dx);
    const float *g = rc_f32(rc_in(op, 2));
    int64_t off = 0;
    for (int64_t i = 0; i < N; i++) {
        for (int64_t j = 0; j < k && j < l[i]; j++) dx[off + ix[i * k + j]] += g[i * k + j];
        off += l[i];
    }
    return RC_OK;
}

/* ================================================================ the family table */
const rc_op_schema rc_ops_topk_tile[] = {
    {"TopK", 1, 1, 2, 3, NULL, topk_setup, topk_run, topk_state_free,
     "X -> (values, indices[, flatten_indices]): the k largest along 'axis' (default -1), descending; ties to the "
     "lower index; NaN largest", topk_check},
    {"TopKGradient", 3, 3, 1, 1, NULL, topk_grad_setup, topk_grad_run, topk_state_free,
     "(dValues, indices, X) -> dX: zeros of X's shape, dValues added at the indices along 'axis'",
     topk_grad_check_only},
    {"Tile", 1, 3, 1, 1, NULL, tile_setup, tile_run, tile_state_free,
     "Y = X repeated 'tiles' times along 'axis' (default 0); tiles / axis may be int32 inputs 1 / 2",
     tile_check},
    {"TileGradient", 1, 3, 1, 1, NULL, tile_setup, tile_grad_run, tile_state_free,
     "dX = dY's tiles along 'axis' summed in order (args or inputs as Tile)", tile_grad_check},
    {"NumpyTile", 2, 2, 1, 1, NULL, NULL, numpy_tile_run, NULL,
     "(X float32 or int32, repeats int32 1-D, one entry >= 0 per dim of X) -> Y = np.tile(X, repeats)",
     numpy_tile_check},
    {"LengthsTopK", 2, 2, 2, 2, NULL, topk_setup, ltk_run, topk_state_free,
     "(X float32 1-D, lengths int32) -> values (N, k), indices (N, k): each segment's top k, padded 0 / -1",
     ltk_check},
    {"LengthsTopKGradient", 3, 3, 1, 1, NULL, topk_setup, ltk_grad_run, topk_state_free,
     "(lengths, indices (N, k), dValues (N, k)) -> dX: dValues scattered to the segments' positions",
     ltk_grad_check},
    {0},
};
