/* ops/decode.c -- decoding ops for sequence models: Caffe2's crf_viterbi_op.cc
 * (ViterbiPath, SwapBestPath, used by its CRF layer) and
 * ctc_greedy_decoder_op.cc (CTCGreedyDecoder).
 *
 *   ViterbiPath(predictions, transitions) -> viterbi_path
 *   SwapBestPath(predictions, bestPath) -> new_predictions     (in place allowed)
 *   CTCGreedyDecoder(INPUTS[, SEQ_LEN]) -> (OUTPUT_LEN, VALUES)  arg merge_repeated=1
 *
 * Every "best" here is Caffe2's: the FIRST maximum of a scan in index order
 * that moves only on a strictly larger value (Eigen's maxCoeff, std::max_element).
 * So ties go to the lowest index, and a NaN is picked only when it stands at
 * index 0 (the scan starts from it and nothing compares larger); elsewhere a NaN
 * is passed over. This is not np.argmax (where the first NaN wins) nor our
 * ArgMax op (ops/reduce.c, NumPy's rule); tests compare with NumPy on NaN-free
 * data and check the NaN rule separately.
 *
 * ViterbiPath: predictions float32 T x C, transitions float32 C x C (Caffe2
 * only compared transitions.dims[0] with C; a non-square matrix is a
 * ValueError here). transitions[i][j] scores a step from class i to class j.
 * score_0 = predictions[0]; for t >= 1, score_t[j] = predictions[t][j] +
 * max_i (score_{t-1}[i] + transitions[i][j]) (float32 sums, as Caffe2), back
 * pointer bp_t[j] = that best i. path[T-1] = best j of score_{T-1}, path[t-1] =
 * bp_t[path[t]]. Output int32 (T,), as Caffe2. T = 0 gives an empty path
 * (Caffe2 raised: it read row 0); C = 0 with T > 0 is a ValueError (no class
 * to choose). The back pointers (T - 1) x C int32 and two score rows live in
 * a scratch buffer owned by op->state, grown when a run needs more.
 *
 * SwapBestPath: predictions float32 T x C, bestPath int32 (T,), each entry in
 * [0, C) (Caffe2 did not check: it wrote out of bounds). new_predictions =
 * predictions with, in each row t, the entries at bestPath[t] and at the
 * row's best class swapped, so bestPath[t] holds the row's maximum. All of
 * bestPath is checked before anything is written.
 *
 * CTCGreedyDecoder: INPUTS float32 (T, N, C) [max_time, batch, classes];
 * SEQ_LEN (optional) int32 (N,), each in [0, T] (Caffe2 did not check the
 * length of SEQ_LEN, read past it for a short one, and took a negative length
 * as 0; both are ValueErrors here); without it every sequence has length T.
 * For sequence n, at each t < len(n) the best class of INPUTS[t, n, :] is
 * emitted unless it is 0 (the blank) or, with merge_repeated (default 1, any
 * nonzero value is true), it equals the previous step's best class. OUTPUT_LEN
 * int32 (N,) counts what sequence n emitted; VALUES int32 (sum of OUTPUT_LEN,)
 * holds the emitted classes, sequence 0 first (both int32 in Caffe2 too).
 * C = 0 with some len(n) > 0 is a ValueError (Caffe2: an enforce failure).
 *
 * None of these ops has a gradient (Caffe2: NO_GRADIENT / SHOULD_NOT_DO_GRADIENT;
 * recurrent/_grad_decode.py). No global state.
 */
#include "../core/rc_core.h"

#include <stdlib.h>
#include <string.h>

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* Index of the first maximum of x[0..n) under Caffe2's scan (n >= 1; see the top). */
static int64_t first_max(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Input i: float32 with exactly 2 dims. */
static rc_status need_matrix(rc_op *op, int i, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    return st ? st : rc_check_ndim(op, i, 2, 2, err);
}

/* ================================================================ ViterbiPath */

typedef struct scratch {
    void *buf;
    size_t cap;
} scratch;

static void scratch_free(void *p)
{
    scratch *s = p;
    if (s) free(s->buf);
    free(s);
}

static rc_status scratch_setup(rc_op *op, rc_err *err)
{
    if (!(op->state = calloc(1, sizeof(scratch)))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    return RC_OK;
}

/* op->state's buffer with at least `bytes` bytes (borrowed: owned by the op's state). NULL and a
 * MemoryError naming `what` when it cannot grow. */
static void *scratch_get(rc_op *op, size_t bytes, const char *what, rc_err *err)
{
    scratch *s = op->state;
    if (bytes > s->cap) {
        void *p = realloc(s->buf, bytes);
        if (!p) {
            rc_op_fail(op, err, RC_ERR_MEMORY, "cannot allocate %zu bytes for %s", bytes, what);
            return NULL;
        }
        s->buf = p;
        s->cap = bytes;
    }
    return s->buf;
}

static rc_status viterbi_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = need_matrix(op, 0, err)) || (st = need_matrix(op, 1, err))) return st;
    const rc_tensor *p = rc_in(op, 0), *tr = rc_in(op, 1);
    if (tr->dims[0] != p->dims[1] || tr->dims[1] != p->dims[1])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (transitions) %s must be C x C for input 0 blob '%s' (predictions) %s",
                          rc_in_name(op, 1), RC_SHAPE(tr), rc_in_name(op, 0), RC_SHAPE(p));
    if (p->dims[0] > 0 && p->dims[1] == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (predictions) %s has no class to choose",
                          rc_in_name(op, 0), RC_SHAPE(p));
    if (p->dims[1] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (predictions) %s has more than %d classes",
                          rc_in_name(op, 0), RC_SHAPE(p), INT32_MAX);
    return RC_OK;
}

/* pred T x C, tr C x C -> path (T,); sc: 2 * C floats, bp: (T - 1) * C int32 (T >= 1, C >= 1). */
static void viterbi_kernel(int64_t T, int64_t C, const float *pred, const float *tr, float *sc, int32_t *bp,
                           int32_t *path)
{
    float *cur = sc, *nxt = sc + C;
    memcpy(cur, pred, (size_t)C * sizeof *cur);
    for (int64_t t = 1; t < T; t++) {
        int32_t *b = bp + (t - 1) * C;
        /* nxt[j] = max over i of cur[i] + tr[i][j] (first maximum), scanning i in order row by row */
        for (int64_t j = 0; j < C; j++) {
            nxt[j] = cur[0] + tr[j];
            b[j] = 0;
        }
        for (int64_t i = 1; i < C; i++) {
            const float *row = tr + i * C;
            for (int64_t j = 0; j < C; j++) {
                const float v = cur[i] + row[j];
                if (v > nxt[j]) {
                    nxt[j] = v;
                    b[j] = (int32_t)i;
                }
            }
        }
        const float *p = pred + t * C;
        for (int64_t j = 0; j < C; j++) nxt[j] = p[j] + nxt[j];
        float *tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    path[T - 1] = (int32_t)first_max(cur, C);
    for (int64_t t = T - 1; t > 0; t--) path[t - 1] = bp[(t - 1) * C + path[t]];
}

static rc_status viterbi_run(rc_op *op, rc_err *err)
{
    rc_status st = viterbi_check(op, err);
    if (st) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t T = p->dims[0], C = p->dims[1];
    int32_t *bp = NULL;
    float *sc = NULL;
    if (T > 0) {
        /* (T - 1) * C back pointers and 2 * C floats, overflow-checked */
        const uint64_t cells = (uint64_t)T - 1 + 2;
        if (cells > SIZE_MAX / 4 / (uint64_t)C)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' (predictions) %s: back pointers too large",
                              rc_in_name(op, 0), RC_SHAPE(p));
        char *buf = scratch_get(op, (size_t)(cells * (uint64_t)C * 4), "the back pointers", err);
        if (!buf) return RC_ERR_MEMORY;
        sc = (float *)buf;
        bp = (int32_t *)(buf + (size_t)C * 2 * sizeof(float));
    }
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, &T, err)) return out_fail(op, 0, err);
    if (T > 0) viterbi_kernel(T, C, rc_f32(p), rc_f32(rc_in(op, 1)), sc, bp, rc_i32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ SwapBestPath */

static rc_status swap_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = need_matrix(op, 0, err)) || (st = rc_check_input(op, 1, RC_I32, err)) ||
        (st = rc_check_ndim(op, 1, 1, 1, err)))
        return st;
    const rc_tensor *p = rc_in(op, 0), *b = rc_in(op, 1);
    if (b->dims[0] != p->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (bestPath) %s must have one entry per row of input 0 blob '%s' "
                          "(predictions) %s", rc_in_name(op, 1), RC_SHAPE(b), rc_in_name(op, 0), RC_SHAPE(p));
    return RC_OK;
}

static rc_status swap_run(rc_op *op, rc_err *err)
{
    rc_status st = swap_check(op, err);
    if (st) return st;
    const rc_tensor *p = rc_in(op, 0), *b = rc_in(op, 1);
    const int64_t T = p->dims[0], C = p->dims[1];
    const int32_t *best = rc_i32(b);
    for (int64_t t = 0; t < T; t++)
        if (best[t] < 0 || best[t] >= C)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' (bestPath) %s: entry %lld is %d, out of range [0, %lld) (the "
                              "columns of input 0 blob '%s' %s)", rc_in_name(op, 1), RC_SHAPE(b), (long long)t,
                              (int)best[t], (long long)C, rc_in_name(op, 0), RC_SHAPE(p));
    rc_tensor *y = rc_out(op, 0);
    if (op->in[0] != op->out[0] && (st = rc_tensor_copy(y, p, err))) return out_fail(op, 0, err);
    float *yv = rc_f32(y);
    for (int64_t t = 0; t < T; t++) {
        float *row = yv + t * C;
        const int64_t old = first_max(row, C), nw = best[t];
        const float v = row[nw];
        row[nw] = row[old];
        row[old] = v;
    }
    return RC_OK;
}

/* ================================================================ CTCGreedyDecoder */

static rc_status ctc_setup(rc_op *op, rc_err *err)
{
    int64_t merge = 1;
    rc_status st = rc_arg_i(&op->def, "merge_repeated", 1, &merge, err);
    if (st) return st;
    if (!(op->state = malloc(sizeof(int)))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    *(int *)op->state = merge != 0;
    return RC_OK;
}

static rc_status ctc_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_ndim(op, 0, 3, 3, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->dims[2] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (INPUTS) %s has more than %d classes",
                          rc_in_name(op, 0), RC_SHAPE(x), INT32_MAX);
    if (op->n_in < 2) return RC_OK;
    if ((st = rc_check_input(op, 1, RC_I32, err)) || (st = rc_check_ndim(op, 1, 1, 1, err))) return st;
    const rc_tensor *l = rc_in(op, 1);
    if (l->dims[0] != x->dims[1])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (SEQ_LEN) %s must have one entry per sequence (dim 1) of input 0 "
                          "blob '%s' (INPUTS) %s", rc_in_name(op, 1), RC_SHAPE(l), rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

/* Decodes sequence n of x (T, N, C) over its first len steps; returns the count emitted and, when
 * vals is not NULL, writes the classes there. */
static int64_t ctc_greedy_seq(const float *x, int64_t N, int64_t C, int64_t n, int64_t len, int merge,
                              int32_t *vals)
{
    int64_t k = 0, prev = 0;
    for (int64_t t = 0; t < len; t++) {
        const int64_t c = first_max(x + (t * N + n) * C, C);
        if (c != 0 && !(merge && c == prev)) {
            if (vals) vals[k] = (int32_t)c;
            k++;
        }
        prev = c;
    }
    return k;
}

static rc_status ctc_greedy_run(rc_op *op, rc_err *err)
{
    rc_status st = ctc_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t T = x->dims[0], N = x->dims[1], C = x->dims[2];
    const int32_t *lens = op->n_in > 1 ? rc_i32(rc_in(op, 1)) : NULL;
    for (int64_t n = 0; n < N; n++) {
        const int64_t len = lens ? lens[n] : T;
        if (len < 0 || len > T)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 1 blob '%s' (SEQ_LEN) %s: entry %lld is %lld, out of range [0, %lld] (dim 0 "
                              "of input 0 blob '%s' %s)", rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), (long long)n,
                              (long long)len, (long long)T, rc_in_name(op, 0), RC_SHAPE(x));
        if (len > 0 && C == 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 0 blob '%s' (INPUTS) %s has no class to choose for sequence %lld of length %lld",
                              rc_in_name(op, 0), RC_SHAPE(x), (long long)n, (long long)len);
    }
    const int merge = *(const int *)op->state;
    const float *xv = rc_f32(x);
    int64_t total = 0;
    for (int64_t n = 0; n < N; n++) total += ctc_greedy_seq(xv, N, C, n, lens ? lens[n] : T, merge, NULL);
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, &N, err)) return out_fail(op, 0, err);
    if (rc_tensor_resize(rc_out(op, 1), RC_I32, 1, &total, err)) return out_fail(op, 1, err);
    int32_t *olen = rc_i32(rc_out(op, 0)), *vals = rc_i32(rc_out(op, 1));
    int64_t k = 0;
    for (int64_t n = 0; n < N; n++) {
        const int64_t m = ctc_greedy_seq(xv, N, C, n, lens ? lens[n] : T, merge, vals ? vals + k : NULL);
        olen[n] = (int32_t)m;
        k += m;
    }
    return RC_OK;
}

/* ================================================================ the family table */
const rc_op_schema rc_ops_decode[] = {
    {"ViterbiPath", 2, 2, 1, 1, NULL, scratch_setup, viterbi_run, scratch_free,
     "(predictions float32 T x C, transitions float32 C x C) -> viterbi_path int32 (T,): the best-scoring "
     "class sequence (ties: lowest index)", viterbi_check},
    {"SwapBestPath", 2, 2, 1, 1, rc_inplace_first, NULL, swap_run, NULL,
     "(predictions float32 T x C, bestPath int32 (T,) in [0, C)) -> predictions with each row's maximum "
     "swapped to bestPath[t]", swap_check},
    {"CTCGreedyDecoder", 1, 2, 2, 2, NULL, ctc_setup, ctc_greedy_run, free,
     "(INPUTS float32 (T, N, C)[, SEQ_LEN int32 (N,)]) -> (OUTPUT_LEN int32 (N,), VALUES int32): best class per "
     "step, blanks (0) dropped, repeats merged when merge_repeated", ctc_check},
    {0},
};
