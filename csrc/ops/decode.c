/* ops/decode.c -- decoding ops for sequence models: Caffe2's crf_viterbi_op.cc
 * (ViterbiPath, SwapBestPath, used by its CRF layer), ctc_greedy_decoder_op.cc
 * (CTCGreedyDecoder) and ctc_beam_search_decoder_op.cc (CTCBeamSearchDecoder).
 *
 *   ViterbiPath(predictions, transitions) -> viterbi_path
 *   SwapBestPath(predictions, bestPath) -> new_predictions     (in place allowed)
 *   CTCGreedyDecoder(INPUTS[, SEQ_LEN]) -> (OUTPUT_LEN, VALUES)  arg merge_repeated=1
 *   CTCBeamSearchDecoder(INPUTS[, SEQ_LEN]) -> (OUTPUT_LEN, VALUES[, OUTPUT_PROB])
 *                               args beam_width=10, prune_threshold=0.001, num_candidates=1
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
 * CTCBeamSearchDecoder: INPUTS float32 (T, N, A) probabilities (class 0 the
 * blank), SEQ_LEN as CTCGreedyDecoder's (the same checks). Caffe2's prefix beam
 * search: for each sequence, from the empty prefix (Pb = 1, Pnb = 0), at each
 * step t < len the classes with probability > prune_threshold (all when none
 * is) extend every prefix l of the beam: the blank adds ctc[0] (Pb + Pnb)(l) to
 * Pb(l); a class c adds ctc[c] (Pb + Pnb)(l) to Pnb(l + c), or, when c repeats
 * l's last class, ctc[c] Pb(l) to Pnb(l + c) and ctc[c] Pnb(l) to Pnb(l); and
 * when l + c is not in the beam, ctc[0] (Pb + Pnb)(l + c) and ctc[c] Pnb(l + c)
 * of the previous step go to its Pb and Pnb. Every prefix written at the step is
 * ranked by Pb + Pnb (float32, larger first; ties by prefix order, std::vector's,
 * as Caffe2's multimap filled from a std::map; a NaN after every number, where
 * Caffe2 had no order) and the beam_width best are the next beam. The
 * num_candidates best of the last step give OUTPUT_LEN[n K + k], their classes
 * (appended to VALUES) and OUTPUT_PROB[n K + k] (0 and 0 past the ranked ones,
 * e.g. for length 0). beam_width >= 1, 1 <= num_candidates <= beam_width
 * (ValueErrors at creation). Each contribution is one float32 product and each
 * Pb / Pnb gets at most two, so the order of the sums cannot change the bits.
 * Prefixes are trie nodes (parent, label) found through an open-addressing hash
 * table; nodes, table and lists are scratch in op->state, grown when needed.
 *
 * None of these ops has a gradient (Caffe2: NO_GRADIENT / SHOULD_NOT_DO_GRADIENT;
 * recurrent/_grad_decode.py). No global state.
 */
#include "../core/rc_core.h"

#include <math.h>
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

/* Grows *p (elements of esz bytes, *cap of them) to hold at least need; 0, or -1 when it cannot. */
static int grow_buf(void *p, int64_t *cap, int64_t need, size_t esz)
{
    if (need <= *cap) return 0;
    int64_t n = *cap ? *cap : 16;
    while (n < need) n = n > INT64_MAX / 2 ? need : 2 * n;
    if ((uint64_t)n > SIZE_MAX / esz) return -1;
    void *q = realloc(*(void **)p, (size_t)n * esz);
    if (!q) return -1;
    *(void **)p = q;
    *cap = n;
    return 0;
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
    int64_t cap; /* bytes */
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
        /* (T - 1) * C back pointers and 2 * C floats (4 bytes each), overflow-checked */
        const int64_t cells = T + 1;
        scratch *scr = op->state;
        if (cells > INT64_MAX / 4 / C || grow_buf(&scr->buf, &scr->cap, cells * C * 4, 1))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' (predictions) %s: cannot allocate "
                              "the back pointers", rc_in_name(op, 0), RC_SHAPE(p));
        sc = scr->buf;
        bp = (int32_t *)(sc + 2 * C);
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

/* SEQ_LEN (input 1, when given; its dtype and size already checked): every entry in [0, T]; and
 * a class to choose (C >= 1) for every sequence of length > 0. Reads the data: run before writing. */
static rc_status ctc_lengths_check(rc_op *op, rc_err *err)
{
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
    return RC_OK;
}

static rc_status ctc_greedy_run(rc_op *op, rc_err *err)
{
    rc_status st = ctc_check(op, err);
    if (!st) st = ctc_lengths_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t T = x->dims[0], N = x->dims[1], C = x->dims[2];
    const int32_t *lens = op->n_in > 1 ? rc_i32(rc_in(op, 1)) : NULL;
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

/* ================================================================ CTCBeamSearchDecoder */

/* A prefix is a node of a trie (the root is the empty prefix); its Pb / Pnb for step t sit in slot
 * t & 1, valid when at[t & 1] == t (else both are 0: the prefix was not reached at step t). */
typedef struct bs_node {
    int32_t parent, label, len;
    int32_t beam_at; /* the step at which it is in the beam (A_prev) */
    int32_t at[2];
    float pb[2], pnb[2];
} bs_node;

typedef struct bs_state {
    int64_t beam_width, num_candidates;
    float prune;
    bs_node *nodes;
    int64_t n_nodes, cap_nodes;
    int32_t *table; /* open addressing: node ids by (parent, label), -1 empty; table_cap a power of 2 */
    int64_t table_cap;
    int32_t *touched, *beam, *alpha, *vals;
    int64_t cap_touched, cap_beam, cap_alpha, cap_vals;
    struct bs_entry *sorted;
    int64_t cap_sorted;
    int32_t *cand_len;
    float *cand_prob;
    int64_t cap_cand_len, cap_cand_prob, table_alloc;
} bs_state;

typedef struct bs_entry {
    float total;
    int32_t node;
    const bs_node *nodes;
} bs_entry;

static void bs_free(void *p)
{
    bs_state *s = p;
    if (!s) return;
    free(s->nodes);
    free(s->table);
    free(s->touched);
    free(s->beam);
    free(s->alpha);
    free(s->vals);
    free(s->sorted);
    free(s->cand_len);
    free(s->cand_prob);
    free(s);
}

static rc_status bs_setup(rc_op *op, rc_err *err)
{
    bs_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st = rc_arg_i(&op->def, "beam_width", 10, &s->beam_width, err);
    if (!st) st = rc_arg_i(&op->def, "num_candidates", 1, &s->num_candidates, err);
    if (!st) st = rc_arg_f(&op->def, "prune_threshold", 0.001f, &s->prune, err);
    if (st) return st;
    if (s->beam_width < 1 || s->beam_width > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'beam_width' must be in [1, %d], got %lld", INT32_MAX,
                          (long long)s->beam_width);
    if (s->num_candidates < 1 || s->num_candidates > s->beam_width)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'num_candidates' must be in [1, beam_width = %lld], got %lld",
                          (long long)s->beam_width, (long long)s->num_candidates);
    return RC_OK;
}

static uint64_t bs_hash(int32_t parent, int32_t label)
{
    uint64_t h = ((uint64_t)(uint32_t)parent << 32 | (uint32_t)label) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

/* Rebuilds the table for the nodes 1.. with capacity cap (a power of 2 > 2 * nodes). */
static int bs_rehash(bs_state *s, int64_t cap)
{
    if (grow_buf(&s->table, &s->table_alloc, cap, sizeof *s->table)) return -1;
    s->table_cap = cap;
    for (int64_t i = 0; i < cap; i++) s->table[i] = -1;
    for (int64_t n = 1; n < s->n_nodes; n++) {
        uint64_t h = bs_hash(s->nodes[n].parent, s->nodes[n].label) & (uint64_t)(cap - 1);
        while (s->table[h] >= 0) h = (h + 1) & (uint64_t)(cap - 1);
        s->table[h] = (int32_t)n;
    }
    return 0;
}

/* The node of prefix parent + (label,), made when missing; -1 when memory runs out. */
static int32_t bs_child(bs_state *s, int32_t parent, int32_t label)
{
    const uint64_t mask = (uint64_t)(s->table_cap - 1);
    uint64_t h = bs_hash(parent, label) & mask;
    for (int32_t id; (id = s->table[h]) >= 0; h = (h + 1) & mask)
        if (s->nodes[id].parent == parent && s->nodes[id].label == label) return id;
    if (s->n_nodes >= INT32_MAX || grow_buf(&s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes)) return -1;
    const int32_t id = (int32_t)s->n_nodes++;
    s->nodes[id] = (bs_node){parent, label, s->nodes[parent].len + 1, -1, {-1, -1}, {0, 0}, {0, 0}};
    if (2 * s->n_nodes > s->table_cap) return bs_rehash(s, 2 * s->table_cap) ? -1 : id;
    s->table[h] = id;
    return id;
}

/* Adds b and nb to node n's values of step t (first touch: from 0, and n joins the touched list). */
static int bs_add(bs_state *s, int64_t *n_touched, int32_t n, int64_t t, float b, float nb)
{
    bs_node *d = &s->nodes[n];
    const int p = (int)(t & 1);
    if (d->at[p] != t) {
        if (grow_buf(&s->touched, &s->cap_touched, *n_touched + 1, sizeof *s->touched)) return -1;
        s->touched[(*n_touched)++] = n;
        d = &s->nodes[n];
        d->at[p] = (int32_t)t;
        d->pb[p] = d->pnb[p] = 0;
    }
    d->pb[p] += b;
    d->pnb[p] += nb;
    return 0;
}

/* -1 when prefix a comes before prefix b in std::vector's order (lexicographic, a prefix first). */
static int bs_lex(const bs_node *nodes, int32_t a, int32_t b)
{
    int32_t la = a, lb = b;
    while (nodes[la].len > nodes[lb].len) la = nodes[la].parent;
    while (nodes[lb].len > nodes[la].len) lb = nodes[lb].parent;
    if (la == lb) return nodes[a].len < nodes[b].len ? -1 : 1; /* one extends the other */
    while (nodes[la].parent != nodes[lb].parent) {
        la = nodes[la].parent;
        lb = nodes[lb].parent;
    }
    return nodes[la].label < nodes[lb].label ? -1 : 1;
}

/* Caffe2's order (a multimap by probability, std::greater, filled in prefix order): the larger
 * probability first, ties by prefix order; a NaN after every number. */
static int bs_cmp(const void *pa, const void *pb)
{
    const bs_entry *a = pa, *b = pb;
    const int na = isnan(a->total), nb = isnan(b->total);
    if (na != nb) return na - nb;
    if (!na && a->total != b->total) return a->total > b->total ? -1 : 1;
    return a->node == b->node ? 0 : bs_lex(a->nodes, a->node, b->node);
}

/* Decodes sequence i of x (T, N, A) over len steps; appends its best num_candidates prefixes to
 * s->vals (at *n_vals) and their lengths and probabilities at cand_len / cand_prob + i * K. */
static rc_status bs_decode(rc_op *op, bs_state *s, const float *x, int64_t N, int64_t A, int64_t i, int64_t len,
                           int64_t *n_vals, rc_err *err)
{
    s->n_nodes = 1;
    s->nodes[0] = (bs_node){-1, -1, 0, 0, {0, -1}, {1, 0}, {0, 0}};
    if (bs_rehash(s, 64)) goto oom;
    int64_t n_beam = 1, n_sorted = 0;
    s->beam[0] = 0;
    for (int64_t t = 0; t < len; t++) {
        const float *ctc = x + (t * N + i) * A;
        int64_t n_alpha = 0, n_touched = 0;
        for (int64_t c = 0; c < A; c++)
            if (ctc[c] > s->prune) s->alpha[n_alpha++] = (int32_t)c;
        if (!n_alpha)
            for (int64_t c = 0; c < A; c++) s->alpha[n_alpha++] = (int32_t)c;
        for (int64_t k = 0; k < n_beam; k++) {
            const int32_t l = s->beam[k];
            const bs_node *d = &s->nodes[l];
            const float b = d->at[t & 1] == t ? d->pb[t & 1] : 0, nb = d->at[t & 1] == t ? d->pnb[t & 1] : 0;
            for (int64_t a = 0; a < n_alpha; a++) {
                const int32_t c = s->alpha[a];
                if (c == 0) {
                    if (bs_add(s, &n_touched, l, t + 1, ctc[0] * (b + nb), 0)) goto oom;
                    continue;
                }
                const int32_t lp = bs_child(s, l, c);
                if (lp < 0) goto oom;
                if (s->nodes[l].len > 0 && c == s->nodes[l].label) {
                    if (bs_add(s, &n_touched, lp, t + 1, 0, ctc[c] * b) ||
                        bs_add(s, &n_touched, l, t + 1, 0, ctc[c] * nb))
                        goto oom;
                } else if (bs_add(s, &n_touched, lp, t + 1, 0, ctc[c] * (b + nb))) {
                    goto oom;
                }
                const bs_node *e = &s->nodes[lp];
                if (e->beam_at != t) {
                    const int q = (int)(t & 1);
                    const float eb = e->at[q] == t ? e->pb[q] : 0, enb = e->at[q] == t ? e->pnb[q] : 0;
                    if (bs_add(s, &n_touched, lp, t + 1, ctc[0] * (eb + enb), ctc[c] * enb)) goto oom;
                }
            }
        }
        if (grow_buf(&s->sorted, &s->cap_sorted, n_touched, sizeof *s->sorted)) goto oom;
        const int p = (int)((t + 1) & 1);
        for (int64_t k = 0; k < n_touched; k++) {
            const bs_node *d = &s->nodes[s->touched[k]];
            s->sorted[k] = (bs_entry){d->pb[p] + d->pnb[p], s->touched[k], s->nodes};
        }
        qsort(s->sorted, (size_t)n_touched, sizeof *s->sorted, bs_cmp);
        n_sorted = n_touched;
        n_beam = n_touched < s->beam_width ? n_touched : s->beam_width;
        for (int64_t k = 0; k < n_beam; k++) {
            s->beam[k] = s->sorted[k].node;
            s->nodes[s->beam[k]].beam_at = (int32_t)(t + 1);
        }
    }
    const int64_t K = s->num_candidates;
    for (int64_t k = 0; k < K; k++) {
        int32_t *ol = s->cand_len + i * K;
        float *pr = s->cand_prob + i * K;
        if (k >= n_sorted) {
            ol[k] = 0;
            pr[k] = 0;
            continue;
        }
        const int32_t n = s->sorted[k].node, m = s->nodes[n].len;
        if (grow_buf(&s->vals, &s->cap_vals, *n_vals + m, sizeof *s->vals)) goto oom;
        for (int32_t j = m - 1, v = n; j >= 0; j--, v = s->nodes[v].parent) s->vals[*n_vals + j] = s->nodes[v].label;
        *n_vals += m;
        ol[k] = m;
        pr[k] = s->sorted[k].total;
    }
    return RC_OK;
oom:
    return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the prefixes of sequence %lld (%lld prefixes)",
                      (long long)i, (long long)s->n_nodes);
}

static rc_status bs_run(rc_op *op, rc_err *err)
{
    rc_status st = ctc_check(op, err);
    if (!st) st = ctc_lengths_check(op, err);
    if (st) return st;
    bs_state *s = op->state;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t T = x->dims[0], N = x->dims[1], A = x->dims[2], K = s->num_candidates;
    const int32_t *lens = op->n_in > 1 ? rc_i32(rc_in(op, 1)) : NULL;
    if (N > INT64_MAX / K)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' (INPUTS) %s: too many candidates",
                          rc_in_name(op, 0), RC_SHAPE(x));
    const int64_t NK = N * K;
    if (grow_buf(&s->nodes, &s->cap_nodes, 1, sizeof *s->nodes) ||
        grow_buf(&s->beam, &s->cap_beam, s->beam_width, sizeof *s->beam) ||
        grow_buf(&s->alpha, &s->cap_alpha, A, sizeof *s->alpha) ||
        grow_buf(&s->cand_len, &s->cap_cand_len, NK, sizeof *s->cand_len) ||
        grow_buf(&s->cand_prob, &s->cap_cand_prob, NK, sizeof *s->cand_prob))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the beams of input 0 blob '%s' %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    int64_t n_vals = 0;
    for (int64_t i = 0; i < N; i++)
        if ((st = bs_decode(op, s, rc_f32(x), N, A, i, lens ? lens[i] : T, &n_vals, err))) return st;
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 1, &NK, err)) return out_fail(op, 0, err);
    if (rc_tensor_resize(rc_out(op, 1), RC_I32, 1, &n_vals, err)) return out_fail(op, 1, err);
    if (op->n_out > 2 && rc_tensor_resize(rc_out(op, 2), RC_F32, 1, &NK, err)) return out_fail(op, 2, err);
    if (NK) memcpy(rc_tensor_data(rc_out(op, 0)), s->cand_len, (size_t)NK * sizeof(int32_t));
    if (n_vals) memcpy(rc_tensor_data(rc_out(op, 1)), s->vals, (size_t)n_vals * sizeof(int32_t));
    if (NK && op->n_out > 2) memcpy(rc_tensor_data(rc_out(op, 2)), s->cand_prob, (size_t)NK * sizeof(float));
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
    {"CTCBeamSearchDecoder", 1, 2, 2, 3, NULL, bs_setup, bs_run, bs_free,
     "(INPUTS float32 (T, N, A) probabilities[, SEQ_LEN int32 (N,)]) -> (OUTPUT_LEN int32 (N * K,), VALUES int32"
     "[, OUTPUT_PROB float32 (N * K,)]): CTC prefix beam search, the K = num_candidates best prefixes", ctc_check},
    {0},
};
