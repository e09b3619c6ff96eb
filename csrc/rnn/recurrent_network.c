/* RecurrentNetwork, RecurrentNetworkGradient, RecurrentNetworkBlobFetcher,
 * rnn_internal_apply_link, rnn_internal_accumulate_gradient_input.
 *
 * Semantics: shared/spec/recurrent-network.md §1, §2, §4, without the bugs of §9:
 * links and aliases are bounds-checked, every gradient buffer is zeroed before
 * use, state rows the cell does not write are zero, a failing step leaves the
 * op (and its executor) usable for the next run.
 *
 * Layout of workspaces: op workspace (states, outputs, references)
 *   └─ shared-blobs workspace (recompute blobs, backward intermediates)
 *        └─ step workspace t (one per timestep with a backward pass; rotating
 *           `num_workspaces` in forward-only mode), each with its own int32
 *           timestep blob, so timesteps never share a timestep blob. */
#include "rnn_internal.h"
#include "../kernels/packed_gemm.h"
#include "../kernels/rng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_op_id(void)
{
    static uint64_t counter = 0;
    return __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
}

/* ================================================================ scratch */
void rnn_scratch_free(void *p)
{
    rnn_scratch *s = p;
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        rc_net_free(s->fwd[i]);
        rc_net_free(s->bwd[i]);
    }
    for (int i = 0; i < s->n; i++) rc_ws_free(s->ws[i]);
    rc_ws_free(s->shared);
    free(s->ws);
    free(s->fwd);
    free(s->bwd);
    free(s);
}

/* The scratch object of blob b, created if b is empty. Borrowed (owned by b). */
static rnn_scratch *scratch_get(rc_op *op, rc_blob *b, int create, rc_err *err)
{
    if (b->obj) {
        if (b->obj_kind != (const char *)RNN_SCRATCH_KIND) {
            rc_op_fail(op, err, RC_ERR_TYPE, "blob '%s' holds a %s, not RecurrentNetwork step workspaces", b->name,
                       b->obj_kind ? b->obj_kind : "?");
            return NULL;
        }
        return b->obj;
    }
    if (!create) {
        rc_op_fail(op, err, RC_ERR_VALUE,
                   "blob '%s' holds no step workspaces: run the forward RecurrentNetwork op first", b->name);
        return NULL;
    }
    rnn_scratch *s = calloc(1, sizeof *s);
    if (!s || !(s->shared = rc_ws_new(op->ws))) {
        free(s);
        rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating step workspaces");
        return NULL;
    }
    s->fwd_T = -1;
    rc_tensor_release(&b->t);
    b->obj = s;
    b->obj_free = rnn_scratch_free;
    b->obj_kind = RNN_SCRATCH_KIND;
    return s;
}

static rc_status scratch_grow(rc_op *op, rnn_scratch *s, int n, rc_err *err)
{
    if (n <= s->n) return RC_OK;
    if (n > s->cap) {
        int nc = s->cap ? s->cap : 4;
        while (nc < n) nc *= 2;
        rc_workspace **w = realloc(s->ws, sizeof *w * (size_t)nc);
        if (w) s->ws = w;
        rc_net **f = realloc(s->fwd, sizeof *f * (size_t)nc);
        if (f) s->fwd = f;
        rc_net **g = realloc(s->bwd, sizeof *g * (size_t)nc);
        if (g) s->bwd = g;
        if (!w || !f || !g) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory growing step workspaces");
        s->cap = nc;
    }
    while (s->n < n) {
        rc_workspace *w = rc_ws_new(s->shared);
        if (!w) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating a step workspace");
        s->ws[s->n] = w;
        s->fwd[s->n] = NULL;
        s->bwd[s->n] = NULL;
        s->n++;
    }
    return RC_OK;
}

/* ================================================================ op state */
/* An FCGradient of the backward step net whose dW (and maybe db) is a parameter
 * gradient and whose X is a forward link (X_t = rows [t + off] of a forward
 * external, so X of all steps is one contiguous (T*M) x K matrix): each step
 * copies its dY into row t of a (T, M, N) stash (FCGradient stash_dy, through a
 * link), and after the loop dW += stash^T X_all is one large GEMM instead of T
 * rank-M updates (BLAS is far more efficient at K = T*M than at K = M, and the
 * steps lose their dW write-after-write chain). Its db stays per step
 * (accumulate_db, below): the column sums are cheap while dY is in cache, and
 * summing the 4 MB stash afterwards was memory-bound (1.4 ms per weight at
 * hidden 256 / batch 16, T = 50).
 * Where rc_wgrad_packed_available() (AVX-512, the packed path on) the stash
 * holds each step's dY transposed, (T, N, M) (FCGradient stash_dy_t), and the
 * sum is rc_gemm_wgrad, our kernel: 2x OpenBLAS's AVX2 kernels and as fast
 * as its AVX-512 ones on these shapes, with bits that do not depend on the
 * thread count or on which kernels OpenBLAS picked. */
struct deferred_fc {
    char *stash;   /* blob in the shared workspace, (T, M, N) or, blocked, (T, N, M); owned */
    int blocked;   /* the stash holds dY^T per step; summed by rc_gemm_wgrad */
    int share;     /* an earlier entry whose op stashes the same dY (this op, skip_dw, stashes nothing:
                    * its stash is a (T, 1) placeholder its output 0 links to), or -1 */
    int op_idx;    /* the FCGradient's index in the step net */
    int x_link;    /* index into link_* of X's forward link */
    int w_in;      /* forward-input index of W (the param) */
    int dw_out;    /* op output index of dW */
    int dw_unset;  /* blocked, T > 0: dW was not zeroed before the loop (the sum writes it, from_zero);
                    * set while a run has not written it yet */
};

typedef struct {
    int is_grad;
    uint64_t id;
    rc_netdef *step;          /* the step net as run: link (+accumulate, +param Sum) ops added; owned */
    const char *timestep;
    int n_states;
    char *const *states;
    const int64_t *init_ids;
    int n_links;              /* forward links (+ backward links for the gradient op) */
    char **link_int, **link_ext;
    int64_t *link_off, *link_win;
    int n_alias;
    char *const *alias_src, *const *alias_dst;
    const int64_t *alias_off;
    int *out_alias;           /* forward: per output but the last, its alias, or -1 - s for recurrent state s
                               * (the whole state); owned */
    int n_recompute;
    char *const *recompute;
    int has_bwd;
    int64_t num_ws;           /* rotating workspaces (forward-only) */
    uint64_t runs;            /* forward: run_steps_in calls so far (the step ops' run_seq) */
    int use_executor;         /* the executor is enabled (op argument and global switch) */
    int64_t num_threads;
    int debug;
    int64_t min_op_ns;        /* rnn_executor.min_op_us in ns (0: always the executor) */
    int exec_mode;            /* EXEC_* below */
    int probe_runs;           /* serial runs timed so far (EXEC_MEASURING) */
    int last_ran_exec;        /* the last run used the executor (status blob) */
    int64_t probe_best_ns;    /* their lowest mean time per step-op instance */
    double *probe_op_ns;      /* per op of the step nets: its lowest mean time per timestep in those runs; owned */
    int probe_n_ops;          /* entries of probe_op_ns */
    double parallelism;       /* the step graph's average parallelism (exec_parallel_check); 0: not measured */
    double min_parallelism;   /* rnn_executor.min_parallelism (0: no check) */
    int trial;                /* rnn_executor.trial: where a rule is in doubt, time both (EXEC_TRYING) */
    int try_runs[2];          /* EXEC_TRYING: runs timed so far, [0] serial, [1] the executor */
    int64_t try_best_ns[2];   /* their lowest mean time per task */
    rc_rnn_exec *exec;        /* owned, created lazily */
    /* gradient op only */
    int n_owg;                /* len(outputs_with_grads) */
    int n_params;
    const int64_t *params;    /* indices into the forward inputs */
    int n_fwd_in;
    char **state_grad;        /* per state: name of its gradient buffer (owned strings) */
    const int64_t *owg;       /* outputs_with_grads: alias indices (borrowed from the op's arguments) */
    int *owg_state;           /* per outputs_with_grads entry k: the recurrent state its alias views; owned.
                               * Gradient-op input k holds that alias's gradient. */
    char **acc_src;           /* per entry k: the shared workspace's name for gradient-op input k, which its
                               * accumulate op reads (NULL: none); owned. Not the input's own name: a blob of
                               * the step workspaces (the state's gradient buffer) may have that name. */
    int64_t *state_rows0;     /* per state: L, its steps' first written row (step t writes row t + L, L the
                               * initial rows): the largest offset of a forward link of window 1 on it, 1 if
                               * none; a run whose state has another number of initial rows takes no gradient
                               * through its aliases other than offset -1; owned */
    int *link_writer;         /* per link: the first step op (not a link op) writing its internal, or -1 */
    int *link_op;             /* per link: the step-net index of its rnn_internal_apply_link op */
    int *state_wlink;         /* forward op, per state: the link whose writer writes all its rows, or -1
                               * (find_state_writers); owned */
    int n_defer;              /* FC parameter gradients summed after the loop in one GEMM (see defer_fc_grads) */
    struct deferred_fc *defer; /* owned */
    float *wg_work;           /* rc_gemm_wgrad's pack of X, 64-byte aligned in wg_raw (owned), grown on demand */
    void *wg_raw;
    int64_t wg_cap;           /* floats allocated */
    int n_pk;                 /* step ops multiplying by a weight packed once per run (find_packable) */
    int *pk_op;               /* their step-net indices; owned */
    rc_packed_w *packs;       /* n_pk slots: one pack per distinct weight and orientation; owned, with data */
    rc_stamp *pk_stamp;       /* n_pk slots: the weight's write stamp when the slot's pack was made; owned */
    unsigned char *pk_valid;  /* n_pk slots: the pack holds the weight as it was at pk_stamp; owned */
    int *pk_todo;             /* the slots packs_prepare fills in this run; owned */
    int reuse_packs;          /* keep a pack while its weight's stamp is unchanged (RECURRENT_PACK_REUSE) */
    int packs_handed;         /* packs_prepare gave ops a pack in this run (packs_clear has work) */
    rc_net **nets_tmp;        /* per timestep of the current run: its net (borrowed pointers, owned array) */
    rc_workspace **ws_tmp;    /* per timestep: its step workspace */
    int nets_tmp_cap;
} rnn_state;

/* Whether a run uses the executor. With the executor enabled and
 * min_op_ns > 0, the first EXEC_PROBE_RUNS successful runs are serial and
 * timed; the lowest mean time per executor task (see exec_probe) then
 * decides, once: at least min_op_ns, the executor. Below it the executor
 * may still win (the serial loop does not split small products, so it
 * leaves a core idle): with rnn_executor.trial (the default) the op then
 * measures (EXEC_TRYING), else it runs serially. If it chose the executor
 * (or is trying it), the first run of at least EXEC_PAR_MIN_T timesteps
 * also weighs the dependency graph with the timed runs' op times
 * (exec_parallel_check): below an average parallelism of
 * EXEC_CHAIN_PARALLELISM (a chain of ops, as in a one-layer LSTM, where the
 * serial loop splits every product over the cores and the executor can
 * only run one op at a time) the op runs serially from then on; below
 * min_parallelism too without trial, and with trial it measures.
 * Measuring (exec_try): the op's next successful runs of at least
 * EXEC_PAR_MIN_T timesteps alternate between the executor and the serial
 * loop, both timed as a whole (the probe's serial runs also timed each op,
 * which costs a tiny op a good part of its time), EXEC_PROBE_RUNS of each,
 * and it keeps the faster; shorter runs meanwhile are serial. Both compute
 * the same bits, so the choice only changes the speed. */
enum { EXEC_OFF = 0, EXEC_MEASURING = 1, EXEC_ON = 2, EXEC_AUTO_SERIAL = 3, EXEC_TRYING = 4 };
#define EXEC_PROBE_RUNS 2
#define EXEC_PAR_MIN_T 8
#define EXEC_MIN_PARALLELISM 2.5 /* default of rnn_executor.min_parallelism */
#define EXEC_CHAIN_PARALLELISM 1.1 /* below: a chain, serial without trial (one LSTM layer: 1.00-1.03) */
/* While trying, the executor's best time must be at most this fraction of the serial loop's: a tie
 * goes to the serial loop, which loses less when the machine gets loaded. */
#define EXEC_TRY_MARGIN 0.95

static void free_strv(char **v, int n)
{
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void rnn_state_free(void *p)
{
    rnn_state *st = p;
    if (!st) return;
    rc_rnn_exec_free(st->exec);
    free(st->probe_op_ns);
    rc_netdef_free(st->step);
    free_strv(st->link_int, st->n_links);
    free_strv(st->link_ext, st->n_links);
    free(st->link_off);
    free(st->link_win);
    free_strv(st->state_grad, st->n_states);
    free(st->owg_state);
    free(st->state_rows0);
    for (int k = 0; st->acc_src && k < st->n_owg; k++) free(st->acc_src[k]);
    free(st->acc_src);
    free(st->nets_tmp);
    free(st->ws_tmp);
    free(st->link_writer);
    free(st->out_alias);
    free(st->link_op);
    free(st->state_wlink);
    for (int i = 0; i < st->n_defer; i++) free(st->defer[i].stash);
    free(st->defer);
    free(st->wg_raw);
    for (int i = 0; st->packs && i < st->n_pk; i++) free(st->packs[i].raw);
    free(st->packs);
    free(st->pk_stamp);
    free(st->pk_valid);
    free(st->pk_todo);
    free(st->pk_op);
    free(st);
}

/* "<name>.rename" argument (memonger remapping), else name. Borrowed. */
static const char *remap(const rc_opdef *def, const char *name)
{
    char key[512];
    snprintf(key, sizeof key, "%s.rename", name);
    const rc_arg *a = rc_opdef_arg(def, key);
    return (a && a->kind == RC_ARG_S) ? a->s : name;
}

static int op_writes(const rc_opdef *od, const char *blob)
{
    for (int j = 0; j < od->n_out; j++)
        if (strcmp(od->outputs[j], blob) == 0) return 1;
    return 0;
}

static int op_reads(const rc_opdef *od, const char *blob)
{
    for (int j = 0; j < od->n_in; j++)
        if (strcmp(od->inputs[j], blob) == 0) return 1;
    return 0;
}

static void rename_in_op(rc_opdef *od, const char *from, const char *to, int *oom)
{
    for (int j = 0; j < od->n_in; j++)
        if (strcmp(od->inputs[j], from) == 0) {
            char *d = strdup(to);
            if (!d) { *oom = 1; return; }
            free(od->inputs[j]);
            od->inputs[j] = d;
        }
    for (int j = 0; j < od->n_out; j++)
        if (strcmp(od->outputs[j], from) == 0) {
            char *d = strdup(to);
            if (!d) { *oom = 1; return; }
            free(od->outputs[j]);
            od->outputs[j] = d;
        }
}

/* Prepends one rnn_internal_apply_link op per link (in link order) at
 * position `at`, and gives the first op that writes a link's internal blob
 * without reading it a control input on that blob (spec §1.5). */
static rc_status add_link_ops(rc_op *op, rnn_state *st, int at, rc_err *err)
{
    rc_netdef *nd = st->step;
    for (int l = 0; l < st->n_links; l++) {
        rc_opdef *lo = rc_netdef_insert_op(nd, at + l, "rnn_internal_apply_link");
        if (!lo || rc_opdef_add_input(lo, st->timestep) || rc_opdef_add_input(lo, st->link_ext[l]) ||
            rc_opdef_add_output(lo, st->link_int[l]) || rc_opdef_add_output(lo, st->link_ext[l]) ||
            rc_opdef_set_arg_i(lo, "offset", st->link_off[l]) || rc_opdef_set_arg_i(lo, "window", st->link_win[l]) ||
            rc_netdef_add_ext_in(nd, st->link_int[l]) || rc_netdef_add_ext_in(nd, st->link_ext[l]))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory building the step net");
        lo->device_type = op->def.device_type;
    }
    for (int l = 0; l < st->n_links; l++) {
        for (int i = at + st->n_links; i < nd->n_op; i++) {
            rc_opdef *od = &nd->ops[i];
            if (op_reads(od, st->link_int[l])) continue;
            if (op_writes(od, st->link_int[l])) {
                if (rc_opdef_add_control_input(od, st->link_int[l]))
                    return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory building the step net");
                break;
            }
        }
    }
    return RC_OK;
}

/* Grows the link arrays to hold n links (n_links unchanged). */
static rc_status links_reserve(rc_op *op, rnn_state *st, int n, rc_err *err)
{
    char **li = realloc(st->link_int, sizeof(char *) * (size_t)(n + 1));
    if (li) st->link_int = li;
    char **le = realloc(st->link_ext, sizeof(char *) * (size_t)(n + 1));
    if (le) st->link_ext = le;
    int64_t *lo = realloc(st->link_off, sizeof(int64_t) * (size_t)(n + 1));
    if (lo) st->link_off = lo;
    int64_t *lw = realloc(st->link_win, sizeof(int64_t) * (size_t)(n + 1));
    if (lw) st->link_win = lw;
    if (!li || !le || !lo || !lw) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    return RC_OK;
}

static rc_status parse_links(rc_op *op, rnn_state *st, const char *pint, const char *pext, const char *poff,
                             const char *pwin, rc_err *err)
{
    char *const *li, *const *le;
    const int64_t *lo, *lw;
    int ni, ne, no, nw;
    rc_status s;
    if ((s = rc_arg_strings(&op->def, pint, &li, &ni, err)) || (s = rc_arg_strings(&op->def, pext, &le, &ne, err)) ||
        (s = rc_arg_ints(&op->def, poff, &lo, &no, err)))
        return s;
    nw = 0;
    lw = NULL;
    if (pwin && (s = rc_arg_ints(&op->def, pwin, &lw, &nw, err))) return s;
    if (ni != no) return rc_op_fail(op, err, RC_ERR_VALUE, "%s has %d entries but %s has %d", pint, ni, poff, no);
    if (ne != no) return rc_op_fail(op, err, RC_ERR_VALUE, "%s has %d entries but %s has %d", pext, ne, poff, no);
    if (pwin && nw && nw != no)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s has %d entries but %s has %d", pwin, nw, poff, no);
    int base = st->n_links;
    if ((s = links_reserve(op, st, base + no, err))) return s;
    for (int l = 0; l < no; l++) {
        if (lo[l] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "link %d ('%s' -> '%s') has negative offset %lld", base + l,
                              le[l], li[l], (long long)lo[l]);
        int64_t w = nw ? lw[l] : 1;
        if (w < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "link %d ('%s' -> '%s') has negative window %lld", base + l,
                              le[l], li[l], (long long)w);
        st->link_int[base + l] = strdup(remap(&op->def, li[l]));
        st->link_ext[base + l] = strdup(remap(&op->def, le[l]));
        st->link_off[base + l] = lo[l];
        st->link_win[base + l] = w;
        st->n_links = base + l + 1;
        if (!st->link_int[base + l] || !st->link_ext[base + l])
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    return RC_OK;
}

static rc_status parse_common(rc_op *op, rnn_state *st, rc_err *err)
{
    rc_status s;
    const rc_opdef *d = &op->def;
    int n_ids = 0, n_dst = 0, n_aoff = 0;
    if ((s = rc_arg_s(d, "timestep", "timestep", &st->timestep, err)) ||
        (s = rc_arg_strings(d, "recurrent_states", &st->states, &st->n_states, err)) ||
        (s = rc_arg_ints(d, "initial_recurrent_state_ids", &st->init_ids, &n_ids, err)) ||
        (s = rc_arg_strings(d, "alias_src", &st->alias_src, &st->n_alias, err)) ||
        (s = rc_arg_strings(d, "alias_dst", &st->alias_dst, &n_dst, err)) ||
        (s = rc_arg_ints(d, "alias_offset", &st->alias_off, &n_aoff, err)) ||
        (s = rc_arg_strings(d, "recompute_blobs_on_backward", &st->recompute, &st->n_recompute, err)))
        return s;
    if (n_ids != st->n_states)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "recurrent_states has %d entries but initial_recurrent_state_ids has %d (states/inputs "
                          "mismatch)", st->n_states, n_ids);
    if (n_dst != n_aoff || st->n_alias != n_aoff)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "alias_src (%d), alias_dst (%d) and alias_offset (%d) must have the same length",
                          st->n_alias, n_dst, n_aoff);
    int64_t v;
    if ((s = rc_arg_i(d, "enable_rnn_executor", 0, &v, err))) return s;
    st->use_executor = v != 0 && rc_flag_rnn_executor();
    if ((s = rc_arg_i(d, "rnn_executor.num_threads", 0, &st->num_threads, err))) return s;
    if (st->num_threads < 0 || st->num_threads > 1024)
        return rc_op_fail(op, err, RC_ERR_VALUE, "rnn_executor.num_threads must be in [0, 1024], got %lld",
                          (long long)st->num_threads);
    if (st->num_threads == 0) st->num_threads = rc_flag_rnn_executor_threads();
    if ((s = rc_arg_i(d, "rnn_executor_debug", 0, &v, err))) return s;
    st->debug = (int)v;
    st->min_op_ns = rc_flag_rnn_executor_min_op_ns();
    if (rc_opdef_arg(d, "rnn_executor.min_op_us")) {
        float us;
        if ((s = rc_arg_f(d, "rnn_executor.min_op_us", 0.f, &us, err))) return s;
        if (!(us >= 0.f && us <= 1e6f))
            return rc_op_fail(op, err, RC_ERR_VALUE, "rnn_executor.min_op_us must be in [0, 1e6], got %g", (double)us);
        st->min_op_ns = (int64_t)((double)us * 1000.0 + 0.5);
    }
    st->min_parallelism = EXEC_MIN_PARALLELISM;
    if (rc_opdef_arg(d, "rnn_executor.min_parallelism")) {
        float mp;
        if ((s = rc_arg_f(d, "rnn_executor.min_parallelism", 0.f, &mp, err))) return s;
        if (!(mp >= 0.f && mp <= 1024.f))
            return rc_op_fail(op, err, RC_ERR_VALUE, "rnn_executor.min_parallelism must be in [0, 1024], got %g",
                              (double)mp);
        st->min_parallelism = mp;
    }
    if ((s = rc_arg_i(d, "rnn_executor.trial", 1, &v, err))) return s;
    if (v != 0 && v != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "rnn_executor.trial must be 0 or 1, got %lld", (long long)v);
    st->trial = (int)v;
    st->exec_mode = !st->use_executor ? EXEC_OFF : st->min_op_ns > 0 ? EXEC_MEASURING : EXEC_ON;
    const rc_arg *bw = rc_opdef_arg(d, "backward_step_net");
    st->has_bwd = bw && ((bw->kind == RC_ARG_NET && bw->net) || (bw->kind == RC_ARG_S && bw->s && bw->s[0]));
    if (bw && bw->kind == RC_ARG_S && bw->s && bw->s[0])
        return rc_op_fail(op, err, RC_ERR_TYPE,
                          "backward_step_net must be a NetDef (text-format strings are not supported)");
    if ((s = rc_arg_i(d, "num_workspaces", 2, &st->num_ws, err))) return s;
    if (st->num_ws < 1 || st->num_ws > 1 << 20)
        return rc_op_fail(op, err, RC_ERR_VALUE, "num_workspaces must be >= 1, got %lld", (long long)st->num_ws);
    return RC_OK;
}

/* Dropout in a step net: every timestep's instance must share one seed, so
 * that its masks depend only on (seed, run, timestep) (ops/dropout.c). The
 * forward op gives a Dropout without argument `seed` a fresh one at its
 * creation. In the backward step net a Dropout is a forward op recomputed
 * (recompute_blobs_on_backward): it must carry the forward's seed, which
 * recurrent_net sets for such ops; without one it would draw other masks
 * than the forward did, so it is an error. */
static rc_status seed_dropouts(rc_op *op, rnn_state *st, rc_err *err)
{
    for (int i = 0; i < st->step->n_op; i++) {
        rc_opdef *od = &st->step->ops[i];
        if (strcmp(od->type, "Dropout") != 0 || rc_opdef_arg(od, "seed")) continue;
        const rc_arg *it = rc_opdef_arg(od, "is_test");
        if (it && it->kind == RC_ARG_I && it->i) continue;
        if (st->is_grad)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "step op Dropout #%d of the backward step net recomputes a forward Dropout and needs "
                              "that op's argument 'seed' (recurrent_net sets it); without it the masks would differ",
                              i);
        if (rc_opdef_set_arg_i(od, "seed", (int64_t)(rc_rng_fresh_seed() >> 1)))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    return RC_OK;
}

/* Op types whose schema says RC_OP_NOT_IN_STEP_NET (the blob queue ops) are
 * refused in step nets: the executor would run them from worker threads in an
 * order their inputs and outputs do not constrain. Unknown types are left to
 * the step net's creation, which names them. */
static rc_status check_step_op_types(rc_op *op, const rnn_state *st, rc_err *err)
{
    for (int i = 0; i < st->step->n_op; i++) {
        const rc_op_schema *sc = rc_op_lookup(st->step->ops[i].type);
        if (sc && (sc->flags & RC_OP_NOT_IN_STEP_NET))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "step op %s #%d of the %s step net cannot run inside a recurrent net: its timesteps "
                              "run on the RNN executor's worker threads, %s (run it in the outer net)",
                              st->step->ops[i].type, i, st->is_grad ? "backward" : "forward",
                              strncmp(st->step->ops[i].type, "Python", 6) == 0
                                  ? "which never call Python"
                                  : "which would race on the state it changes");
        /* Print and Summarize with to_file=1: every timestep's op instance
         * would open and truncate the same "<input>.log" / ".summary" (Caffe2
         * did, and the steps overwrote each other); refused here, at creation,
         * rather than at the first run (ops/print.c refuses it too, for step
         * nets built another way) */
        const char *type = st->step->ops[i].type;
        const int print = strcmp(type, "Print") == 0;
        const rc_arg *tf = print || strcmp(type, "Summarize") == 0 ? rc_opdef_arg(&st->step->ops[i], "to_file")
                                                                   : NULL;
        if (tf && tf->kind == RC_ARG_I && tf->i != 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "step op %s #%d of the %s step net has to_file=1: each timestep's op would open "
                              "and truncate '%s%s' (%s the recurrent op's outputs in the outer net)", type, i,
                              st->is_grad ? "backward" : "forward",
                              st->step->ops[i].n_in ? st->step->ops[i].inputs[0] : "", print ? ".log" : ".summary",
                              print ? "print to the log, or Print" : "Summarize");
    }
    return RC_OK;
}

/* The step net's type must be one Caffe2 accepted (its step nets were created
 * with Workspace::CreateNet, which refused others); checked here, at the op's
 * creation, rather than at the first timestep. */
static rc_status check_step_net_type(rc_op *op, const rnn_state *st, rc_err *err)
{
    if (!rc_net_check_type(st->step, st->is_grad ? "the backward step net" : "the forward step net", err))
        return RC_OK;
    return rc_op_fail(op, err, RC_ERR_VALUE, "%s", err->msg);
}

static rc_status check_timestep_not_written(rc_op *op, const rnn_state *st, rc_err *err)
{
    for (int i = 0; i < st->step->n_op; i++)
        if (op_writes(&st->step->ops[i], st->timestep))
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "step op %s #%d writes the timestep blob '%s': the timestep cannot be the output "
                              "of an op", st->step->ops[i].type, i, st->timestep);
    return RC_OK;
}

/* Which step op writes each link's internal blob (after all ops are in place). */
static rc_status find_link_writers(rc_op *op, rnn_state *st, rc_err *err)
{
    free(st->link_writer);
    free(st->link_op);
    st->link_writer = malloc(sizeof(int) * (size_t)(st->n_links + 1));
    st->link_op = malloc(sizeof(int) * (size_t)(st->n_links + 1));
    if (!st->link_writer || !st->link_op) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    int next = 0; /* add_link_ops inserted link l's op as the l-th link op of the step net */
    for (int l = 0; l < st->n_links; l++) {
        st->link_writer[l] = st->link_op[l] = -1;
        for (int i = 0; i < st->step->n_op && st->link_writer[l] < 0; i++) {
            const rc_opdef *od = &st->step->ops[i];
            if (strcmp(od->type, "rnn_internal_apply_link") != 0 && op_writes(od, st->link_int[l]))
                st->link_writer[l] = i;
        }
        for (; next < st->step->n_op; next++) {
            const rc_opdef *od = &st->step->ops[next];
            if (strcmp(od->type, "rnn_internal_apply_link") != 0) continue;
            if (od->n_out >= 1 && od->n_in >= 2 && strcmp(od->outputs[0], st->link_int[l]) == 0 &&
                strcmp(od->inputs[1], st->link_ext[l]) == 0)
                st->link_op[l] = next++;
            break;
        }
        if (st->link_op[l] < 0)
            return rc_op_fail(op, err, RC_ERR_RUNTIME, "internal error: no link op for link %d ('%s' -> '%s')", l,
                              st->link_ext[l], st->link_int[l]);
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- state rows left to their writer */
/* init_state zeroes the T rows of a state after its initial value, unless the
 * step ops certainly write every element of every one of them before anything
 * reads it: then the zeroing only costs memory bandwidth, serially before the
 * loop (3-3.6% of an inference run of a 4-layer LSTM at hidden 256 / batch 16
 * and 512 / 64, the two alternating in one process). That holds for state i
 * when one link l on it (found here; its offset is checked at each run, in
 * state_rows_written) has
 * - window 1 and offset L, the number of initial rows: step t's view is row
 *   t + L, so the T steps view exactly the T rows;
 * - a writer (the first step op writing its internal) of a type in
 *   full_writers (it writes every element of each output whatever the
 *   values), which does not read the internal, with no step op before it
 *   reading the internal (the link ops before it only point it at the row);
 * and when no other link has l's internal, every other link on the state
 * reads only rows before the written one (offset + window <= L: step t reads
 * rows below t + L, the initial ones or rows earlier steps wrote, which the
 * executor orders like any other dependency), and no step op names the state
 * or a blob aliased to it. A step op that writes the internal with another
 * shape fails the run (check_link_views). A run that fails or is interrupted
 * leaves the rows it did not reach as the last run left them. */
static int full_writer(const char *type)
{
    static const char *const full_writers[] = {"FC", "MatMul", "Sum", "WeightedSum", "Add", "Sub", "Mul",
                                               "Sigmoid", "Tanh", "Relu", "Scale", "Copy", "ElementwiseLinear",
                                               "LSTMUnit", "GRUUnit", "Softmax"};
    for (size_t k = 0; k < sizeof full_writers / sizeof *full_writers; k++)
        if (strcmp(type, full_writers[k]) == 0) return 1;
    return 0;
}

static int step_names(const rnn_state *st, const char *blob)
{
    for (int i = 0; i < st->step->n_op; i++) {
        const rc_opdef *od = &st->step->ops[i];
        if (strcmp(od->type, "rnn_internal_apply_link") != 0 && (op_reads(od, blob) || op_writes(od, blob))) return 1;
    }
    return 0;
}

static int state_writer_link(const rnn_state *st, const char *state)
{
    int w = -1;
    for (int l = 0; l < st->n_links; l++) {
        if (strcmp(st->link_ext[l], state) != 0) continue;
        int wr = st->link_writer[l];
        if (wr < 0 || st->link_win[l] != 1) continue;
        if (w >= 0) return -1; /* two written links on one state */
        w = l;
    }
    if (w < 0 || step_names(st, state)) return -1;
    for (int a = 0; a < st->n_alias; a++)
        if (strcmp(st->alias_src[a], state) == 0 && step_names(st, st->alias_dst[a])) return -1;
    const char *in = st->link_int[w];
    for (int l = 0; l < st->n_links; l++)
        if (l != w && strcmp(st->link_int[l], in) == 0) return -1;
    const rc_opdef *wd = &st->step->ops[st->link_writer[w]];
    if (!full_writer(wd->type)) return -1;
    for (int i = 0; i <= st->link_writer[w]; i++)
        if (op_reads(&st->step->ops[i], in)) return -1;
    return w;
}

static rc_status find_state_writers(rc_op *op, rnn_state *st, rc_err *err)
{
    if (!(st->state_wlink = malloc(sizeof(int) * (size_t)(st->n_states + 1))))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    for (int i = 0; i < st->n_states; i++) st->state_wlink[i] = state_writer_link(st, st->states[i]);
    return RC_OK;
}

/* Whether this run's steps write all T rows of state i, which has L initial rows (above). */
static int state_rows_written(const rnn_state *st, int i, int64_t L)
{
    int w = st->state_wlink ? st->state_wlink[i] : -1;
    if (w < 0 || st->link_off[w] != L) return 0;
    for (int l = 0; l < st->n_links; l++)
        if (l != w && strcmp(st->link_ext[l], st->states[i]) == 0 && st->link_win[l] > L - st->link_off[l])
            return 0; /* offset + window > L, without overflow (both >= 0) */
    return 1;
}

static int64_t n_states_unzeroed;
int64_t rc_rnn_states_unzeroed(void) { return __atomic_load_n(&n_states_unzeroed, __ATOMIC_RELAXED); }

/* ---------------------------------------------------------------- FC + Sum fusion */
/* A step FC(X, W, b) -> Y followed by Sum(Y, Z) -> Y (the LSTM, GRU and
 * BasicRNN cells: gate = FC(h_prev) + the input's projection), with no op in
 * between that reads or writes Y or writes Z, becomes FC(X, W, b, Z) -> Y
 * with the argument rnn_internal_fused_sum = the distance to the Sum, and the
 * Sum stays where it was. Z as an input orders the FC after Z's writer in the
 * executor's dependency analysis. ensure_net binds each instance's pair
 * (rc_fc_bind_sum): the FC then stores X W^T + b + Z, the same bits as the
 * FC and then the Sum, and the Sum does nothing (forward loop at hidden 256 /
 * batch 16: the Sums were 4.8% of the workers' time). The Sum stays so that
 * op indices in messages and traces are those of the step net as given, and
 * when the FC cannot do the sum (Z of another shape or dtype, or overlapping
 * Y) the Sum runs as usual and reports what is wrong.
 * RECURRENT_STEP_FUSION=0 (read when the op is created) leaves the pairs
 * apart. Only the forward step net: the backward net's Sums add into a blob
 * that the FCGradient before them does not write. */
static rc_status fuse_fc_sum(rc_op *op, rnn_state *st, rc_err *err)
{
    if (rc_env_off("RECURRENT_STEP_FUSION")) return RC_OK;
    rc_netdef *nd = st->step;
    for (int j = 1; j < nd->n_op; j++) {
        const rc_opdef *sum = &nd->ops[j];
        if (strcmp(sum->type, "Sum") != 0 || sum->n_in != 2 || sum->n_out != 1 || sum->n_ctrl != 0) continue;
        const char *y = sum->outputs[0], *z = sum->inputs[1];
        if (strcmp(sum->inputs[0], y) != 0 || strcmp(z, y) == 0) continue;
        int i = j - 1;
        while (i >= 0 && !op_writes(&nd->ops[i], y) && !op_reads(&nd->ops[i], y) && !op_writes(&nd->ops[i], z)) i--;
        if (i < 0) continue;
        rc_opdef *fc = &nd->ops[i];
        if (strcmp(fc->type, "FC") != 0 || fc->n_in != 3 || fc->n_out != 1 || strcmp(fc->outputs[0], y) != 0 ||
            op_reads(fc, y))
            continue;
        if (rc_opdef_add_input(fc, z) || rc_opdef_set_arg_i(fc, "rnn_internal_fused_sum", j - i))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory building the step net");
    }
    return RC_OK;
}

/* Binds the fused FC + Sum pairs (fuse_fc_sum) of a new step-net instance. */
static void bind_fused(rc_net *net)
{
    int n = rc_net_num_ops(net);
    for (int i = 0; i < n; i++) {
        rc_op *o = rc_net_op(net, i);
        if (o->n_in != 4 || strcmp(o->def.type, "FC") != 0) continue;
        const rc_arg *a = rc_opdef_arg(&o->def, "rnn_internal_fused_sum");
        if (a && a->kind == RC_ARG_I && a->i > 0 && a->i < n - i) rc_fc_bind_sum(o, rc_net_op(net, i + (int)a->i));
    }
}

/* ---------------------------------------------------------------- packed step weights */
/* The step ops whose matrix product can use a weight packed once per run
 * (kernels/packed_gemm.h): FC (Y = X W^T + b) and FCGradient computing dX =
 * dY W, with axis_w = 1, whose W no step op writes and that is not a link
 * blob (so W is the same tensor, unchanged, at every timestep). */
static rc_status find_packable(rc_op *op, rnn_state *st, rc_err *err)
{
    free(st->pk_op);
    st->pk_op = malloc(sizeof(int) * (size_t)(st->step->n_op + 1));
    if (!st->pk_op) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    st->n_pk = 0;
    for (int i = 0; i < st->step->n_op; i++) {
        const rc_opdef *od = &st->step->ops[i];
        int fc = strcmp(od->type, "FC") == 0 && (od->n_in == 3 || od->n_in == 4) && od->n_out == 1;
        int grad = strcmp(od->type, "FCGradient") == 0 && od->n_in == 3 && od->n_out >= 3;
        if (!fc && !grad) continue;
        const rc_arg *aw = rc_opdef_arg(od, "axis_w");
        if (aw && !(aw->kind == RC_ARG_I && aw->i == 1)) continue;
        const char *w = od->inputs[1];
        int ok = 1;
        for (int j = 0; j < st->step->n_op && ok; j++) ok = !op_writes(&st->step->ops[j], w);
        for (int l = 0; l < st->n_links && ok; l++) ok = strcmp(st->link_int[l], w) && strcmp(st->link_ext[l], w);
        if (ok) st->pk_op[st->n_pk++] = i;
    }
    free(st->packs);
    free(st->pk_stamp);
    free(st->pk_valid);
    free(st->pk_todo);
    st->packs = calloc((size_t)st->n_pk + 1, sizeof *st->packs);
    st->pk_stamp = calloc((size_t)st->n_pk + 1, sizeof *st->pk_stamp);
    st->pk_valid = calloc((size_t)st->n_pk + 1, 1);
    st->pk_todo = calloc((size_t)st->n_pk + 1, sizeof *st->pk_todo);
    if (!st->packs || !st->pk_stamp || !st->pk_valid || !st->pk_todo)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    st->reuse_packs = !rc_env_off("RECURRENT_PACK_REUSE");
    return RC_OK;
}

static void packs_clear(rnn_state *st, int T)
{
    if (!st->packs_handed) return;
    st->packs_handed = 0;
    for (int t = 0; t < T; t++)
        for (int q = 0; q < st->n_pk; q++) rc_fc_set_packed(rc_net_op(st->nets_tmp[t], st->pk_op[q]), NULL);
}

/* Part p of rc_par_run: fills the pack of slot todo[p] (one weight per part:
 * the packs are independent copies, and a weight streams from memory at the
 * speed of one core's copy, so the weights go to the threads whole). */
typedef struct {
    rc_packed_w *packs;
    const int *todo;
} pack_job;

static void pack_into(const rc_packed_w *pk, float *dst)
{
    if (pk->trans) rc_pack_b(pk->inner, pk->out, pk->src, 1, pk->inner, dst);
    else rc_pack_b(pk->inner, pk->out, pk->src, pk->out, 1, dst);
}

static void pack_part(const void *ctx, int p, int parts)
{
    (void)parts;
    const pack_job *j = ctx;
    rc_packed_w *pk = &j->packs[j->todo[p]];
    pack_into(pk, pk->data);
}

static int64_t n_packs_reused;
int64_t rc_rnn_packs_reused(void) { return __atomic_load_n(&n_packs_reused, __ATOMIC_RELAXED); }

/* The verify_packs flag (tests, fuzzing): a pack about to be reused must
 * equal a fresh pack of its weight, bit for bit; otherwise a write to the
 * weight was not recorded (rc_tensor_touch) and the op fails loudly. */
static rc_status verify_kept_pack(rc_op *op, rc_op *user, const rc_packed_w *pk, rc_err *err)
{
    size_t n = (size_t)rc_pack_floats(pk->inner, pk->out);
    float *fresh = malloc(sizeof(float) * n);
    if (!fresh) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (verify_packs)");
    pack_into(pk, fresh);
    int same = memcmp(fresh, pk->data, sizeof(float) * n) == 0;
    free(fresh);
    if (same) return RC_OK;
    return rc_op_fail(op, err, RC_ERR_RUNTIME,
                      "internal error: the packed copy of weight '%s' kept from an earlier run no longer matches "
                      "the weight, which was changed by a write that was not recorded (please report this; "
                      "RECURRENT_PACK_REUSE=0 avoids it)",
                      rc_in_name(user, 1));
}

/* Before a run: gives each packable op the pack of its weight, one per
 * distinct weight and orientation, in every timestep's net; packs_clear
 * after the run. A slot's pack is kept from an earlier run while the
 * weight's write stamp (rc_tensor_stamp), data pointer and shape are
 * unchanged (weights change every training iteration, but not in inference
 * or evaluation); otherwise the weight is packed again, on OpenBLAS's
 * thread count (one weight per thread at a time). Left to OpenBLAS: a
 * weight sharing memory with a state, an input sequence or another link
 * external (which the steps write), products less than 16 wide, and any
 * weight whose pack cannot be allocated. */
static rc_status packs_prepare(rc_op *op, rnn_state *st, int T, rc_err *err)
{
    if (!st->n_pk || T <= 0 || !rc_packed_available()) return RC_OK;
    rc_net *net0 = st->nets_tmp[0];
    int used = 0;   /* st->packs[0, used): this run's packs */
    int n_todo = 0; /* of which the ones to fill, st->pk_todo[0, n_todo) */
    int64_t reused = 0;
    for (int q = 0; q < st->n_pk; q++) {
        int i = st->pk_op[q];
        rc_op *o0 = rc_net_op(net0, i);
        const rc_tensor *W = rc_in(o0, 1);
        int trans = strcmp(o0->def.type, "FC") == 0;
        if (W->dtype != RC_F32 || W->ndim < 1 || W->dims[0] <= 0 || rc_tensor_numel(W) == 0 || !W->storage) continue;
        int shared = 0;
        for (int j = 0; j < rc_net_num_ops(net0) && !shared; j++) {
            rc_op *lo = rc_net_op(net0, j);
            if (strcmp(lo->def.type, "rnn_internal_apply_link") == 0) shared = rc_in(lo, 1)->storage == W->storage;
        }
        if (shared) continue;
        int64_t N = W->dims[0], K = rc_tensor_numel(W) / N;
        int64_t inner = trans ? K : N, out = trans ? N : K;
        if (out < 16) continue; /* narrow products gain nothing; the padded pack would be large */
        const float *src = rc_f32(W);
        rc_packed_w *pk = NULL;
        for (int j = 0; j < used && !pk; j++)
            if (st->packs[j].src == src && st->packs[j].trans == trans && st->packs[j].inner == inner &&
                st->packs[j].out == out)
                pk = &st->packs[j];
        if (!pk) {
            int j = used++;
            pk = &st->packs[j];
            rc_stamp now = rc_tensor_stamp(W);
            if (st->reuse_packs && st->pk_valid[j] && pk->src == src && pk->trans == trans && pk->inner == inner &&
                pk->out == out && rc_stamp_eq(st->pk_stamp[j], now)) {
                reused++;
                rc_status s;
                if (rc_flag_verify_packs() && (s = verify_kept_pack(op, o0, pk, err))) {
                    st->pk_valid[j] = 0;
                    return s;
                }
            } else {
                st->pk_valid[j] = 0;
                int64_t need = rc_pack_floats(inner, out);
                if (need > pk->cap) {
                    free(pk->raw);
                    pk->cap = 0;
                    if (!(pk->data = rc_pack_alloc(need, &pk->raw))) { /* OpenBLAS needs no extra memory */
                        used--;
                        continue;
                    }
                    pk->cap = need;
                }
                pk->src = src;
                pk->trans = trans;
                pk->inner = inner;
                pk->out = out;
                st->pk_stamp[j] = now;
                st->pk_todo[n_todo++] = j;
            }
        }
        st->packs_handed = 1;
        for (int t = 0; t < T; t++) {
            rc_op *o = rc_net_op(st->nets_tmp[t], i);
            if (rc_in(o, 1) == W) rc_fc_set_packed(o, pk);
        }
    }
    pack_job job = {st->packs, st->pk_todo};
    rc_par_run(rc_blas_num_threads(), n_todo, pack_part, &job);
    for (int k = 0; k < n_todo; k++) st->pk_valid[st->pk_todo[k]] = 1;
    if (reused) __atomic_add_fetch(&n_packs_reused, reused, __ATOMIC_RELAXED);
    return RC_OK;
}

/* ---------------------------------------------------------------- forward setup */
/* The forward op's outputs but the last (the step-workspaces blob): each alias destination once, in any
 * order, and, as Caffe2 allowed (its aliases went by name, its outputs were only declared), the name of a
 * recurrent state, which then holds the whole state (all T + L rows, as alias offset 0 would). */
static rc_status map_outputs(rc_op *op, rnn_state *st, rc_err *err)
{
    int n = op->n_out - 1;
    if (n < st->n_alias)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "has %d outputs but %d aliases: outputs are the alias destinations (and, if wanted, "
                          "recurrent states) followed by the step-workspaces blob", op->n_out, st->n_alias);
    if (!(st->out_alias = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1))))
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *name = op->def.outputs[i];
        int k = 0, found = 0;
        for (int a = 0; a < st->n_alias && !found; a++)
            if (strcmp(st->alias_dst[a], name) == 0) k = a, found = 1;
        for (int r = 0; r < st->n_states && !found; r++)
            if (strcmp(st->states[r], name) == 0) k = -1 - r, found = 1;
        if (!found)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "output %d '%s' is neither an alias destination (alias_dst) nor a recurrent state "
                              "(recurrent_states); the last output is the step-workspaces blob", i, name);
        st->out_alias[i] = k; /* a repeated output: refused when any op is created ("outputs i and j are
                               * the same blob") */
    }
    for (int a = 0; a < st->n_alias; a++) {
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = st->out_alias[i] == a;
        if (!found)
            return rc_op_fail(op, err, RC_ERR_VALUE, "alias_dst[%d] '%s' is not among the outputs (each alias "
                              "destination is an output)", a, st->alias_dst[a]);
    }
    return RC_OK;
}

static rc_status rnn_setup(rc_op *op, rc_err *err)
{
    rnn_state *st = calloc(1, sizeof *st);
    if (!st) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = st;
    st->id = next_op_id();
    rc_status s;
    if ((s = parse_common(op, st, err))) return s;
    for (int i = 0; i < st->n_states; i++)
        if (st->init_ids[i] < 0 || st->init_ids[i] >= op->n_in)
            return rc_op_fail(op, err, RC_ERR_INDEX,
                              "initial_recurrent_state_ids[%d] = %lld is not an input index (op has %d inputs)", i,
                              (long long)st->init_ids[i], op->n_in);
    if ((s = map_outputs(op, st, err))) return s;
    const rc_netdef *step;
    if ((s = rc_arg_net(&op->def, "step_net", &step, err))) return s;
    if (!step) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'step_net' (a NetDef) is required");
    if ((s = parse_links(op, st, "link_internal", "link_external", "link_offset", "link_window", err))) return s;
    if (!(st->step = rc_netdef_clone(step))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    if ((s = check_timestep_not_written(op, st, err))) return s;
    if ((s = check_step_op_types(op, st, err))) return s;
    if ((s = check_step_net_type(op, st, err))) return s;
    if ((s = seed_dropouts(op, st, err))) return s;
    if (rc_netdef_add_ext_in(st->step, st->timestep)) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    if ((s = fuse_fc_sum(op, st, err))) return s;
    if ((s = add_link_ops(op, st, 0, err))) return s;
    if ((s = find_link_writers(op, st, err))) return s;
    if ((s = find_state_writers(op, st, err))) return s;
    if ((s = find_packable(op, st, err))) return s;
    if (!st->has_bwd) {
        int64_t nws;
        if ((s = rc_arg_i(&op->def, "num_workspaces", st->use_executor ? 4 : 2, &nws, err))) return s;
        st->num_ws = nws;
    }
    return RC_OK;
}

/* Instantiates (once) the step net `def` in step workspace w, with its own
 * timestep blob. Borrowed result (owned by the scratch). */
static rc_net *ensure_net(rc_op *op, rnn_state *st, rnn_scratch *sc, rc_workspace *w, rc_net **slot, int t,
                          rc_err *err)
{
    if (*slot) return *slot;
    if (st->is_grad) sc->bwd_gen++;
    else sc->fwd_gen++;
    rc_blob *tb = rc_ws_create_local(w, st->timestep, err);
    if (!tb) return NULL;
    int64_t one = 1;
    if (rc_tensor_resize(&tb->t, RC_I32, 1, &one, err)) return NULL;
    rc_i32(&tb->t)[0] = t;
    rc_tensor_touch(&tb->t);
    /* a link's internal blob is the step's own (a view of rows of the external),
     * even where the op's workspace has a blob of that name: created here, so the
     * step net binds to it and never writes the outer blob (an internal named
     * like one of the op's inputs turned that input into a view of the rows) */
    for (int l = 0; l < st->n_links; l++)
        if (!rc_ws_create_local(w, st->link_int[l], err)) return NULL;
    rc_net *net = rc_net_create(w, st->step, err);
    if (!net) {
        rc_err_prefix(err, "op %s #%d: creating the %s step net: ", op->def.type, op->index,
                      st->is_grad ? "backward" : "forward");
        return NULL;
    }
    bind_fused(net);
    *slot = net;
    return net;
}

/* Drops cached step nets that were instantiated for another op (e.g. the net
 * was re-created): the scratch blob outlives ops. */
static void scratch_claim(rnn_scratch *sc, rnn_state *st)
{
    uint64_t *owner = st->is_grad ? &sc->bwd_owner : &sc->fwd_owner;
    rc_net **nets = st->is_grad ? sc->bwd : sc->fwd;
    if (*owner == st->id) return;
    if (st->is_grad) sc->bwd_gen++;
    else sc->fwd_gen++;
    for (int i = 0; i < sc->n; i++) {
        rc_net_free(nets[i]);
        nets[i] = NULL;
    }
    *owner = st->id;
}

static void set_timestep(rc_net *net, rc_workspace *w, const char *name, int t)
{
    rc_blob *tb = rc_ws_get_local(w, name);
    rc_i32(&tb->t)[0] = t;
    rc_tensor_touch(&tb->t);
    int n = rc_net_num_ops(net);
    for (int i = 0; i < n; i++) rc_net_op(net, i)->timestep = t;
}

static rc_status nets_tmp_reserve(rc_op *op, rnn_state *st, int T, rc_err *err)
{
    if (T <= st->nets_tmp_cap) return RC_OK;
    rc_net **n = realloc(st->nets_tmp, sizeof *n * (size_t)T);
    if (n) st->nets_tmp = n;
    rc_workspace **w = realloc(st->ws_tmp, sizeof *w * (size_t)T);
    if (w) st->ws_tmp = w;
    if (!n || !w) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    st->nets_tmp_cap = T;
    return RC_OK;
}

/* A step op that resizes a linked output to another size gets a fresh buffer
 * and the state row is silently never written. After a run, every linked
 * output written by a step op must still view its rows of the external. */
static rc_status check_link_views(rc_op *op, rnn_state *st, int T, int forward, rc_err *err)
{
    int last = forward ? T - 1 : 0; /* the step that ran last in serial order */
    for (int k = 0; k < T; k++) {
        rc_workspace *w = st->ws_tmp[k];
        if (k > 0 && w == st->ws_tmp[k - 1]) continue;
        for (int l = 0; l < st->n_links; l++) {
            if (st->link_writer[l] < 0) continue;
            /* the blobs the step's link op (and so the step ops) resolved */
            rc_op *lo = rc_net_op(st->nets_tmp[k], st->link_op[l]);
            rc_blob *in = lo->out[0], *ex = lo->in[1], *tb = lo->in[0];
            if (ex->t.ndim < 1) continue;
            /* an internal shared by all steps (backward intermediates) only
             * still shows the view of the step that ran last */
            if (in->ws != w && k != last) continue;
            int t = rc_i32(&tb->t)[0];
            size_t row = (size_t)rc_dims_prod(&ex->t, 1, ex->t.ndim) * rc_dtype_size(ex->t.dtype);
            size_t want = ex->t.offset + (size_t)(t + st->link_off[l]) * row;
            if (in->t.storage == ex->t.storage && in->t.offset == want &&
                rc_tensor_nbytes(&in->t) == (size_t)st->link_win[l] * row)
                continue;
            const rc_opdef *wd = &st->step->ops[st->link_writer[l]];
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "step op %s #%d at timestep %d wrote '%s' as %s, which does not fit %lld row(s) of "
                              "'%s' %s: an output linked to a state must keep the state's row shape (it would "
                              "not be written into the state)", wd->type, st->link_writer[l], t, st->link_int[l],
                              RC_SHAPE(&in->t), (long long)st->link_win[l], st->link_ext[l], RC_SHAPE(&ex->t));
        }
    }
    return RC_OK;
}

/* Writes one k x 5 int32 record blob (see store_trace). */
static rc_status store_records(rc_op *op, const char *name, const int32_t *rec, int64_t k, rc_err *err)
{
    rc_blob *b = rc_ws_create_local(op->ws, name, err);
    if (!b) return err->code;
    int64_t dims[2] = {k, 5};
    rc_status s;
    if ((s = rc_tensor_resize_private(&b->t, RC_I32, 2, dims, err))) return s;
    if (k) memcpy(rc_i32(&b->t), rec, sizeof(int32_t) * (size_t)(k * 5));
    rc_tensor_touch(&b->t);
    return RC_OK;
}

/* Writes the trace of the last run into "<scratch>_trace" ("<scratch>_backward_trace"
 * for the gradient op): int32 k x 5 rows of (timestep, op index (-1: set
 * timestep), start_us, end_us, worker) of the tasks; into "<...>_parts" the
 * same n_parts rows of the product parts that idle executor threads ran for
 * them (the task's timestep and op, the helper's worker; none from the
 * serial loop); and the step net's op types into "<...>_ops" (UTF-8 bytes,
 * 0-terminated names). */
static rc_status store_trace(rc_op *op, rnn_state *st, rc_blob *scratch_blob, const int32_t *rec, int64_t k,
                             const int32_t *parts, int64_t n_parts, rc_err *err)
{
    char nm[600];
    const char *kind = st->is_grad ? "backward_trace" : "trace";
    rc_status s;
    snprintf(nm, sizeof nm, "%s_%s", scratch_blob->name, kind);
    if ((s = store_records(op, nm, rec, k, err))) return s;
    snprintf(nm, sizeof nm, "%s_%s_parts", scratch_blob->name, kind);
    if ((s = store_records(op, nm, parts, n_parts, err))) return s;
    snprintf(nm, sizeof nm, "%s_%s_ops", scratch_blob->name, kind);
    rc_blob *ob = rc_ws_create_local(op->ws, nm, err);
    if (!ob) return err->code;
    int64_t len = 0;
    for (int i = 0; i < st->step->n_op; i++) len += (int64_t)strlen(st->step->ops[i].type) + 1;
    if ((s = rc_tensor_resize_private(&ob->t, RC_I32, 1, &len, err))) return s;
    int32_t *o = rc_i32(&ob->t);
    for (int i = 0; i < st->step->n_op; i++)
        for (const char *c = st->step->ops[i].type;; c++) {
            *o++ = (unsigned char)*c;
            if (!*c) break;
        }
    rc_tensor_touch(&ob->t);
    return RC_OK;
}

/* Keeps the executor's status in the step workspaces object (not a blob: a
 * net's blobs stay the same with the executor on or off, as in Caffe2), read
 * by rc_rnn_exec_status (recurrent.trace.executor_status): float [mode
 * (EXEC_*), mean us per executor task of the timed serial runs (0 before the
 * first), number of timed runs, min_op_us, whether the last run used the
 * executor, the step graph's average parallelism (0: not measured), then of
 * the runs timed while trying (EXEC_TRYING): mean us per task of the
 * executor's best, of the serial loop's best (each 0 before the first), the
 * number of those runs]. */
static void store_exec_status(rnn_state *st, rc_blob *scratch_blob)
{
    rnn_scratch *sc = scratch_blob->obj;
    float *v = sc->exec_status[st->is_grad ? 1 : 0];
    v[0] = (float)st->exec_mode;
    v[1] = st->probe_runs ? (float)((double)st->probe_best_ns / 1000.0) : 0.f;
    v[2] = (float)st->probe_runs;
    v[3] = (float)((double)st->min_op_ns / 1000.0);
    v[4] = (float)st->last_ran_exec;
    v[5] = (float)st->parallelism;
    v[6] = st->try_runs[1] ? (float)((double)st->try_best_ns[1] / 1000.0) : 0.f;
    v[7] = st->try_runs[0] ? (float)((double)st->try_best_ns[0] / 1000.0) : 0.f;
    v[8] = (float)(st->try_runs[0] + st->try_runs[1]);
    sc->has_status[st->is_grad ? 1 : 0] = 1;
}

int rc_rnn_exec_status(const rc_blob *b, int backward, float out[RC_RNN_EXEC_STATUS_N])
{
    if (!b->obj || b->obj_kind != (const char *)RNN_SCRATCH_KIND) return -1;
    const rnn_scratch *sc = b->obj;
    int d = backward ? 1 : 0;
    if (!sc->has_status[d]) return 0;
    memcpy(out, sc->exec_status[d], sizeof sc->exec_status[d]);
    return 1;
}

/* The executor's tasks per timestep: one for the prologue and one per step
 * op that is not a link op (the link ops that start a step net run inside
 * the step's first task). */
static int exec_tasks(rc_net *net)
{
    int n_ops = rc_net_num_ops(net), tasks = 1;
    for (int i = 0; i < n_ops; i++) tasks += strcmp(rc_net_op(net, i)->def.type, "rnn_internal_apply_link") != 0;
    return tasks;
}

/* After a successful timed serial run: records it and, after the last probe
 * run, decides between the executor and the serial loop. The time is per
 * executor task: per step, one for the prologue and one per op that is not a
 * link op (the executor runs the link ops that start a step net inside the
 * step's first task, and their time counts there). */
static void exec_probe(rc_op *op, rnn_state *st, rc_net *net, int T, int64_t elapsed_ns)
{
    int64_t per = elapsed_ns / ((int64_t)T * exec_tasks(net));
    if (!st->probe_runs || per < st->probe_best_ns) st->probe_best_ns = per;
    if (++st->probe_runs < EXEC_PROBE_RUNS) return;
    st->exec_mode = st->probe_best_ns >= st->min_op_ns ? EXEC_ON : st->trial ? EXEC_TRYING : EXEC_AUTO_SERIAL;
    if (st->debug)
        fprintf(stderr, "RNN executor, op %s #%d (step net '%s'): step ops take %.2f us per task (serial, best of "
                "%d runs) %s rnn_executor.min_op_us = %.2f: %s\n", op->def.type, op->index, st->step->name,
                (double)st->probe_best_ns / 1000.0, st->probe_runs, st->exec_mode == EXEC_ON ? ">=" : "<",
                (double)st->min_op_ns / 1000.0,
                st->exec_mode == EXEC_ON       ? "using the executor"
                : st->exec_mode == EXEC_TRYING ? "trying the executor against the serial loop"
                                               : "running serially");
}

/* After a successful run of at least EXEC_PAR_MIN_T timesteps in
 * EXEC_TRYING (exec: whether it used the executor): records its mean time
 * per task (as exec_probe's) and, once both have EXEC_PROBE_RUNS runs,
 * keeps the executor if its best beat the serial loop's by
 * EXEC_TRY_MARGIN, else runs serially from then on. */
static void exec_try(rc_op *op, rnn_state *st, rc_net *net, int T, int exec, int64_t elapsed_ns)
{
    int64_t per = elapsed_ns / ((int64_t)T * exec_tasks(net));
    if (!st->try_runs[exec] || per < st->try_best_ns[exec]) st->try_best_ns[exec] = per;
    st->try_runs[exec]++;
    if (st->try_runs[0] < EXEC_PROBE_RUNS || st->try_runs[1] < EXEC_PROBE_RUNS) return;
    int keep = (double)st->try_best_ns[1] <= EXEC_TRY_MARGIN * (double)st->try_best_ns[0];
    st->exec_mode = keep ? EXEC_ON : EXEC_AUTO_SERIAL;
    if (!keep) {
        rc_rnn_exec_free(st->exec);
        st->exec = NULL;
    }
    if (st->debug)
        fprintf(stderr, "RNN executor, op %s #%d (step net '%s'): tried, the executor took %.2f us per task and the "
                "serial loop %.2f (best of %d runs each): %s\n", op->def.type, op->index, st->step->name,
                (double)st->try_best_ns[1] / 1000.0, (double)st->try_best_ns[0] / 1000.0, EXEC_PROBE_RUNS,
                keep ? "using the executor" : "running serially");
}

/* Records a timed serial run's op times (op_ns[i]: step op i over all T
 * timesteps): per op the lowest mean over the timed runs, as the time rule
 * keeps the best run (a run the OS interrupted in one op would otherwise
 * make that op look long). On running out of memory the probe goes without
 * op times, and exec_parallel_check without its check. */
static void probe_add_op_times(rnn_state *st, const int64_t *op_ns, int n, int T)
{
    int first = st->probe_n_ops != n;
    if (first) {
        free(st->probe_op_ns);
        st->probe_op_ns = calloc((size_t)n + 1, sizeof *st->probe_op_ns);
        st->probe_n_ops = st->probe_op_ns ? n : 0;
    }
    for (int i = 0; i < st->probe_n_ops; i++) {
        double v = (double)op_ns[i] / T;
        if (first || v < st->probe_op_ns[i]) st->probe_op_ns[i] = v;
    }
}

/* At the first executor run of at least EXEC_PAR_MIN_T timesteps after the
 * timed serial runs chose the executor: the step graph's average
 * parallelism at this T, from the ops' times in those runs. Below
 * min_parallelism the op runs serially from now on (and this run too),
 * and the graph is freed. */
static rc_status exec_parallel_check(rc_op *op, rnn_state *st, rc_blob *scratch_blob, int T, rc_err *err)
{
    rnn_scratch *sc = scratch_blob->obj;
    double p;
    rc_status s = rc_rnn_exec_parallelism(st->exec, st->nets_tmp, st->ws_tmp, st->timestep, T,
                                          st->is_grad ? sc->bwd_gen : sc->fwd_gen, st->probe_op_ns, st->probe_n_ops,
                                          &p, err);
    if (s) return s;
    if (p <= 0) { /* the timed runs' nets had another op count: keep the executor, unchecked */
        st->probe_n_ops = 0;
        return RC_OK;
    }
    st->parallelism = p;
    int low = p < st->min_parallelism;
    int serial = low && (!st->trial || p < EXEC_CHAIN_PARALLELISM);
    if (serial) {
        st->exec_mode = EXEC_AUTO_SERIAL;
        rc_rnn_exec_free(st->exec);
        st->exec = NULL;
    } else if (low) {
        st->exec_mode = EXEC_TRYING;
    }
    if (st->debug)
        fprintf(stderr, "RNN executor, op %s #%d (step net '%s'): at T=%d the step ops' average parallelism (their "
                "time over the longest dependency chain's, from the timed runs) is %.2f %s %.2f: %s\n",
                op->def.type, op->index, st->step->name, T, p, low ? "<" : ">=", st->min_parallelism,
                serial                         ? "running serially"
                : st->exec_mode == EXEC_TRYING ? "trying the executor against the serial loop"
                                               : "using the executor");
    return RC_OK;
}

/* Runs the prepared per-timestep nets: serially, or with the executor. */
static rc_status run_steps_in(rc_op *op, rnn_state *st, rc_blob *scratch_blob, int T, int forward, int max_parallel,
                              rc_err *err)
{
    rnn_scratch *sc = scratch_blob->obj;
    rc_status s = RC_OK;
    int trace = rc_flag_rnn_trace();
    int32_t *rec = NULL;
    int64_t nrec = 0;
    if (T == 0) return RC_OK;
    /* The run the step ops belong to (Dropout keys its masks by it and the
     * timestep): the forward op's run count since its creation; the backward,
     * which may recompute forward ops, takes the forward's. */
    uint64_t seq = st->is_grad ? sc->fwd_run : (sc->fwd_run = ++st->runs);
    for (int t = 0; t < T; t++)
        for (int i = 0, n = rc_net_num_ops(st->nets_tmp[t]); i < n; i++)
            rc_net_op(st->nets_tmp[t], i)->run_seq = seq;
    /* One timestep leaves the executor only the overlap of independent ops
     * within the step, while the serial loop splits every product over the
     * cores: with the automatic choice (min_op_us > 0) such a run is serial.
     * min_op_us 0 (Caffe2's behaviour: always the executor) keeps it. The
     * bits are the same either way. */
    int trying = st->exec_mode == EXEC_TRYING && T >= EXEC_PAR_MIN_T; /* a run that counts (exec_try) */
    st->last_ran_exec = (st->exec_mode == EXEC_ON || trying) && !(T == 1 && st->min_op_ns > 0);
    if (st->last_ran_exec) {
        if (!st->exec) {
            st->exec = rc_rnn_exec_new(st->step, st->n_links, st->link_int, st->link_ext, st->link_off, forward,
                                       (int)st->num_threads, st->debug, err);
            if (!st->exec) return err->code ? err->code : RC_ERR_RUNTIME;
        }
        if (st->probe_n_ops && !st->parallelism && st->min_parallelism > 0 && T >= EXEC_PAR_MIN_T) {
            if ((s = exec_parallel_check(op, st, scratch_blob, T, err))) goto out;
            trying = st->exec_mode == EXEC_TRYING;
            st->last_ran_exec = st->exec_mode == EXEC_ON || trying;
        }
        /* trying: the executor and the serial loop take turns, the executor first */
        if (trying && st->try_runs[1] > st->try_runs[0]) st->last_ran_exec = 0;
    }
    if (st->last_ran_exec) {
        rc_rnn_exec_set_trace(st->exec, trace);
        int64_t start_ns = rc_rnn_now_ns();
        s = rc_rnn_exec_run(st->exec, st->nets_tmp, st->ws_tmp, st->timestep, T, max_parallel, st->is_grad ? sc->bwd_gen : sc->fwd_gen, err);
        int64_t elapsed_ns = rc_rnn_now_ns() - start_ns;
        if (!s && trace) {
            int k, np;
            const int32_t *r = rc_rnn_exec_trace(st->exec, &k), *parts = rc_rnn_exec_trace_parts(st->exec, &np);
            s = store_trace(op, st, scratch_blob, r, k, parts, np, err);
        }
        /* after the trace: deciding for the serial loop frees the executor */
        if (!s && trying) exec_try(op, st, st->nets_tmp[0], T, 1, elapsed_ns);
    } else {
        int n = T ? rc_net_num_ops(st->nets_tmp[0]) : 0;
        if (trace && !(rec = calloc((size_t)T * (size_t)(n + 1) * 5, sizeof(int32_t))))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the trace");
        /* the timed runs also time each op (exec_parallel_check); NULL: without */
        int64_t *op_ns = st->exec_mode == EXEC_MEASURING ? calloc((size_t)n + 1, sizeof *op_ns) : NULL;
        int64_t start_ns = rc_rnn_now_ns(), t0 = start_ns / 1000;
        for (int k = 0; k < T && !s; k++) {
            int t = forward ? k : T - 1 - k;
            if (rc_interrupt_pending()) {
                free(rec);
                free(op_ns);
                return rc_err_set(err, RC_ERR_INTERRUPT, "op %s #%d interrupted at timestep %d", op->def.type,
                                  op->index, t);
            }
            rc_net *net = st->nets_tmp[t];
            set_timestep(net, st->ws_tmp[t], st->timestep, t);
            if (!trace && !op_ns) {
                s = rc_net_run(net, err);
                continue;
            }
            for (int i = 0; i < n && !s; i++) {
                int64_t a = rc_rnn_now_ns();
                s = rc_op_run(rc_net_op(net, i), err);
                int64_t b = rc_rnn_now_ns();
                if (op_ns) op_ns[i] += b - a;
                if (trace) {
                    int32_t *r = rec + 5 * nrec++;
                    r[0] = t;
                    r[1] = i;
                    r[2] = (int32_t)(a / 1000 - t0);
                    r[3] = (int32_t)(b / 1000 - t0);
                    r[4] = 0;
                }
            }
        }
        if (!s && st->exec_mode == EXEC_MEASURING) {
            if (op_ns) probe_add_op_times(st, op_ns, n, T);
            exec_probe(op, st, st->nets_tmp[0], T, rc_rnn_now_ns() - start_ns);
        } else if (!s && trying) {
            exec_try(op, st, st->nets_tmp[0], T, 0, rc_rnn_now_ns() - start_ns);
        }
        if (!s && trace) s = store_trace(op, st, scratch_blob, rec, nrec, NULL, 0, err);
        free(rec);
        free(op_ns);
    }
    if (!s && st->exec_mode != EXEC_OFF) store_exec_status(st, scratch_blob);
out:
    if (s && s != RC_ERR_INTERRUPT)
        rc_err_prefix(err, "op %s #%d (step net '%s'): ", op->def.type, op->index, st->step->name);
    return s;
}

/* run_steps_in inside a step loop's BLAS setting (rc_core.h, "Step loops"):
 * OpenBLAS single-threaded, products in fixed chunks, so that executor on
 * and off give the same bits. */
static rc_status run_steps(rc_op *op, rnn_state *st, rc_blob *scratch_blob, int T, int forward, int max_parallel,
                           rc_err *err)
{
    if (T == 0) return RC_OK;
    int prev = rc_step_blas_enter();
    rc_status s = run_steps_in(op, st, scratch_blob, T, forward, max_parallel, err);
    rc_step_blas_leave(prev);
    return s;
}

/* run_steps with the step weights packed for the run (and unpacked after it,
 * whatever happened). */
static rc_status run_loop(rc_op *op, rnn_state *st, rc_blob *scratch_blob, int T, int forward, int max_parallel,
                          rc_err *err)
{
    rc_status s = packs_prepare(op, st, T, err);
    if (!s) s = run_steps(op, st, scratch_blob, T, forward, max_parallel, err);
    packs_clear(st, T);
    return s;
}

static rc_status init_state(rc_op *op, rnn_state *st, int i, int64_t T, int64_t N, rc_err *err)
{
    int id = (int)st->init_ids[i];
    const rc_tensor *x = rc_in(op, id);
    rc_status s;
    if ((s = rc_check_input(op, id, RC_F32, err))) return s;
    if (x->ndim < 1 || x->ndim > 3)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "initial state '%s' (input %d) must be 1-D (S), 2-D (N, S) or 3-D (L, N, S), got %s",
                          rc_in_name(op, id), id, RC_SHAPE(x));
    int64_t S = x->dims[x->ndim - 1];
    int64_t L = x->ndim == 3 ? x->dims[0] : 1;
    if (x->ndim >= 2 && x->dims[x->ndim - 2] != N)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "initial state '%s' has batch size %lld (shape %s) but the input sequence '%s' has batch "
                          "size %lld", rc_in_name(op, id), (long long)x->dims[x->ndim - 2], RC_SHAPE(x),
                          rc_in_name(op, 0), (long long)N);
    rc_blob *sb = rc_ws_create(op->ws, st->states[i], err);
    if (!sb) return err->code;
    if (sb->obj) return rc_op_fail(op, err, RC_ERR_TYPE, "state blob '%s' holds a non-tensor", st->states[i]);
    if (&sb->t == x)
        return rc_op_fail(op, err, RC_ERR_VALUE, "state '%s' is also its own initial value", st->states[i]);
    int64_t dims[3] = {T + L, N, S};
    if ((s = rc_tensor_resize(&sb->t, RC_F32, 3, dims, err)))
        return rc_op_fail(op, err, s, "state '%s' %lldx%lldx%lld: %s", st->states[i], (long long)dims[0],
                          (long long)N, (long long)S, err->msg);
    float *d = rc_f32(&sb->t);
    const float *xs = rc_f32(x);
    int64_t row = N * S;
    if (x->ndim >= 2) memcpy(d, xs, sizeof(float) * (size_t)(L * row));
    else
        for (int64_t n = 0; n < N; n++) memcpy(d + n * S, xs, sizeof(float) * (size_t)S);
    if (T > 0 && state_rows_written(st, i, L)) __atomic_add_fetch(&n_states_unzeroed, 1, __ATOMIC_RELAXED);
    else memset(d + L * row, 0, sizeof(float) * (size_t)(T * row));
    rc_tensor_touch(&sb->t);
    return RC_OK;
}

static rc_status apply_aliases(rc_op *op, rnn_state *st, rnn_scratch *sc, rc_err *err)
{
    for (int i = 0; i < op->n_out - 1; i++) {
        int a = st->out_alias[i];
        if (a < 0) { /* a recurrent state named as an output: all its rows */
            const char *name = st->states[-1 - a];
            rc_blob *sb = rc_ws_get(sc->shared, name);
            if (!sb || sb->t.dtype == RC_UNDEF || sb->t.ndim < 1)
                return rc_op_fail(op, err, RC_ERR_KEY, "output %d: recurrent state '%s' does not exist", i, name);
            rc_tensor *dst = rc_out(op, i);
            if (dst != &sb->t) rc_tensor_view_rows(dst, &sb->t, 0, sb->t.dims[0]);
            continue;
        }
        rc_blob *src = rc_ws_get(sc->shared, st->alias_src[a]);
        if (!src || src->t.dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_KEY, "alias %d: source blob '%s' does not exist", a, st->alias_src[a]);
        const rc_tensor *t = &src->t;
        if (t->ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "alias %d: source '%s' is a scalar %s", a, st->alias_src[a],
                              RC_SHAPE(t));
        int64_t off = st->alias_off[a];
        /* compared without overflow: off may be anything in int64 */
        int bad = off >= 0 ? off > t->dims[0] : off < -t->dims[0];
        int64_t start = bad ? 0 : (off >= 0 ? off : t->dims[0] + off);
        int64_t count = t->dims[0] - start;
        if (bad)
            return rc_op_fail(op, err, RC_ERR_INDEX,
                              "alias %d ('%s' -> '%s'): offset %lld is outside the %lld rows of %s", a,
                              st->alias_src[a], st->alias_dst[a], (long long)off, (long long)t->dims[0], RC_SHAPE(t));
        rc_tensor *dst = rc_out(op, i);
        if (dst == t) continue;
        rc_tensor_view_rows(dst, t, start, count);
    }
    return RC_OK;
}

static rc_status rnn_run(rc_op *op, rc_err *err)
{
    rnn_state *st = op->state;
    rc_status s;
    if ((s = rc_check_input(op, 0, RC_F32, err))) return s;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input sequence '%s' must be at least 2-D (T, N, ...), got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    int64_t T = x->dims[0], N = x->dims[1];
    if (T > INT32_MAX / 2) return rc_op_fail(op, err, RC_ERR_VALUE, "sequence length %lld too large", (long long)T);
    for (int i = 0; i < st->n_states; i++)
        if ((s = init_state(op, st, i, T, N, err))) return s;
    rnn_scratch *sc = scratch_get(op, op->out[op->n_out - 1], 1, err);
    if (!sc) return err->code;
    for (int r = 0; r < st->n_recompute; r++)
        if (!rc_ws_create_local(sc->shared, st->recompute[r], err)) return err->code;
    int nws = st->has_bwd ? (int)T : (int)(T < st->num_ws ? T : st->num_ws);
    if ((s = scratch_grow(op, sc, nws, err))) return s;
    scratch_claim(sc, st);
    if ((s = nets_tmp_reserve(op, st, (int)T, err))) return s;
    for (int t = 0; t < T; t++) {
        int wi = st->has_bwd ? t : (int)(t % st->num_ws);
        rc_net *net = ensure_net(op, st, sc, sc->ws[wi], &sc->fwd[wi], t, err);
        if (!net) return err->code;
        st->nets_tmp[t] = net;
        st->ws_tmp[t] = sc->ws[wi];
    }
    sc->fwd_T = -1; /* until this run succeeds */
    if ((s = run_loop(op, st, op->out[op->n_out - 1], (int)T, 1, st->has_bwd ? 0 : (int)st->num_ws, err))) return s;
    if ((s = check_link_views(op, st, (int)T, 1, err))) return s;
    sc->fwd_T = T;
    sc->fwd_has_bwd = st->has_bwd;
    return apply_aliases(op, st, sc, err);
}

/* ================================================================ gradient */
/* Appends a link (internal <- external rows [t + off, t + off + win)). */
static rc_status append_link(rc_op *op, rnn_state *st, const char *internal, const char *external, int64_t off,
                             int64_t win, rc_err *err)
{
    rc_status s;
    if ((s = links_reserve(op, st, st->n_links + 1, err))) return s;
    char *a = strdup(internal), *b = strdup(external);
    if (!a || !b) {
        free(a);
        free(b);
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    st->link_int[st->n_links] = a;
    st->link_ext[st->n_links] = b;
    st->link_off[st->n_links] = off;
    st->link_win[st->n_links] = win;
    st->n_links++;
    return RC_OK;
}

static int64_t n_shared_stashes;
int64_t rc_rnn_shared_stashes(void) { return __atomic_load_n(&n_shared_stashes, __ATOMIC_RELAXED); }

/* Finds the FCGradients whose weight gradient can be summed after the loop
 * (struct deferred_fc) and rewrites them: output 0 becomes the stash row link,
 * argument stash_dy = 1 (or, when an earlier one stashes the same dY, skip_dw
 * = 1 and output 0 a row of a placeholder: the two sums read one stash).
 * Conditions: the dW output is param i's per-step
 * gradient, written by this op only and read by no step op; W is param i
 * itself with axis_w = 1; X is the internal of exactly one forward link, of
 * window 1, that no step op writes (so X of step t is row t + offset of the
 * forward external, unchanged by the backward pass). */
static rc_status defer_fc_grads(rc_op *op, rnn_state *st, int n_fwd_links, char *const *param_grads, rc_err *err)
{
    const rc_opdef *d = &op->def;
    int fin0 = st->n_owg;
    for (int i = 0; i < st->n_params; i++) {
        const char *pgrad = d->outputs[1 + i];
        const char *gb = remap(d, param_grads ? param_grads[i] : pgrad);
        int writer = -1, n_writers = 0, n_readers = 0;
        for (int j = 0; j < st->step->n_op; j++) {
            const rc_opdef *od = &st->step->ops[j];
            if (op_reads(od, gb)) n_readers++;
            if (op_writes(od, gb)) {
                n_writers++;
                writer = j;
            }
        }
        if (n_writers != 1 || n_readers != 0) continue;
        rc_opdef *w = &st->step->ops[writer];
        if (strcmp(w->type, "FCGradient") != 0 || w->n_in != 3 || w->n_out < 2 || strcmp(w->outputs[0], gb) != 0 ||
            op_writes(w, w->inputs[0]) || rc_opdef_arg(w, "accumulate_dw") || rc_opdef_arg(w, "stash_dy") ||
            rc_opdef_arg(w, "accumulate_db") || rc_opdef_arg(w, "skip_db"))
            continue;
        const rc_arg *aw = rc_opdef_arg(w, "axis_w");
        if (aw && !(aw->kind == RC_ARG_I && aw->i == 1)) continue;
        int pin = fin0 + (int)st->params[i];
        if (pin >= op->n_in || strcmp(w->inputs[1], d->inputs[pin]) != 0) continue;
        const char *xname = w->inputs[0];
        if (strcmp(xname, w->inputs[2]) == 0 || strcmp(xname, w->inputs[1]) == 0) continue;
        int xl = -1, n_xl = 0;
        for (int l = 0; l < st->n_links; l++)
            if (strcmp(st->link_int[l], xname) == 0) {
                n_xl++;
                xl = l;
            }
        if (n_xl != 1 || xl >= n_fwd_links || st->link_win[xl] != 1) continue;
        int x_written = 0;
        for (int j = 0; j < st->step->n_op; j++) x_written |= op_writes(&st->step->ops[j], xname);
        if (x_written) continue;

        /* the same dY as an earlier entry's op, unchanged between the two (rnn_cell: the input FC
         * and the recurrent FC of a layer): one stash serves both */
        const char *dy = w->inputs[2];
        int share = -1;
        for (int k = 0; k < st->n_defer && share < 0; k++) {
            const struct deferred_fc *o = &st->defer[k];
            const rc_opdef *ow = &st->step->ops[o->op_idx];
            if (o->share >= 0 || strcmp(ow->inputs[2], dy) != 0 || op_writes(ow, dy) || op_writes(w, dy)) continue;
            int lo = o->op_idx < writer ? o->op_idx : writer, hi = o->op_idx < writer ? writer : o->op_idx, clash = 0;
            for (int j = lo + 1; j < hi && !clash; j++) clash = op_writes(&st->step->ops[j], dy);
            if (!clash) share = k;
        }
        struct deferred_fc *nd = realloc(st->defer, sizeof *nd * (size_t)(st->n_defer + 1));
        if (!nd) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        st->defer = nd;
        struct deferred_fc *e = &st->defer[st->n_defer];
        memset(e, 0, sizeof *e);
        char name[600], row[620];
        snprintf(name, sizeof name, "%s_dy_stash", pgrad);
        snprintf(row, sizeof row, "%s_t", name);
        if (!(e->stash = strdup(name))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        st->n_defer++;
        e->x_link = xl;
        e->w_in = (int)st->params[i];
        e->dw_out = 1 + i;
        e->share = share;
        if (share >= 0) __atomic_add_fetch(&n_shared_stashes, 1, __ATOMIC_RELAXED);
        e->op_idx = writer;
        char *r = strdup(row);
        if (!r) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        free(w->outputs[0]);
        w->outputs[0] = r;
        rc_status s;
        e->blocked = rc_wgrad_packed_available();
        if (rc_opdef_set_arg_i(w, share >= 0 ? "skip_dw" : "stash_dy", 1) ||
            (share < 0 && e->blocked && rc_opdef_set_arg_i(w, "stash_dy_t", 1)))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        if ((s = append_link(op, st, row, name, 0, 1, err))) return s;
    }
    return RC_OK;
}

/* Drops the step workspaces' link views of blob b, the external of the
 * op's links named ext (views made by the last run's link ops; every link op
 * re-points its view before any step op reads it). Without them the op holds
 * b's only reference, and rc_tensor_resize_private keeps b's buffer instead
 * of allocating (and faulting in) a new one at every run. */
static void drop_link_views(const rnn_state *st, const rnn_scratch *sc, const char *ext, const rc_blob *b)
{
    if (!b->t.storage) return;
    for (int l = 0; l < st->n_links; l++) {
        if (strcmp(st->link_ext[l], ext) != 0) continue;
        for (int t = 0; t < sc->n; t++) {
            rc_blob *v = rc_ws_get_local(sc->ws[t], st->link_int[l]);
            if (v && !v->obj && v->t.storage == b->t.storage) rc_tensor_release(&v->t);
        }
    }
}

/* Before the loop: each stash shaped (T, M, N) (blocked: (T, N, M)), M from
 * X's forward external (rows of M x K elements, K and N from W). */
static rc_status deferred_prepare(rc_op *op, rnn_state *st, rnn_scratch *sc, int64_t T, rc_err *err)
{
    rc_status s;
    for (int k = 0; k < st->n_defer; k++) {
        const struct deferred_fc *e = &st->defer[k];
        const rc_tensor *W = rc_in(op, st->n_owg + e->w_in);
        const char *xn = st->link_ext[e->x_link];
        rc_blob *xb = rc_ws_get(sc->shared, xn);
        if (!xb || xb->t.dtype != RC_F32 || xb->t.ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "link external '%s' (input of an FCGradient step op) must be "
                              "a float32 tensor of at least 1 dim, got %s", xn, xb ? RC_SHAPE(&xb->t) : "no blob");
        if (W->ndim < 1 || W->dims[0] == 0 || rc_tensor_numel(W) == 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "FC weight '%s' has shape %s: an FC of a recurrent step needs "
                              "a non-empty 2-D weight", rc_in_name(op, st->n_owg + e->w_in), RC_SHAPE(W));
        int64_t N = W->dims[0], K = rc_tensor_numel(W) / N;
        int64_t rows = xb->t.dims[0], rowx = rows ? rc_tensor_numel(&xb->t) / rows : 0;
        if (rowx % K)
            return rc_op_fail(op, err, RC_ERR_VALUE, "FC input: rows of link external '%s' %s have %lld elements, "
                              "not a multiple of K = %lld (weight '%s' %s)", xn, RC_SHAPE(&xb->t), (long long)rowx,
                              (long long)K, rc_in_name(op, st->n_owg + e->w_in), RC_SHAPE(W));
        rc_blob *sb = rc_ws_create(sc->shared, e->stash, err);
        if (!sb) return err->code;
        drop_link_views(st, sc, e->stash, sb);
        int64_t dims[3] = {T, e->blocked ? N : rowx / K, e->blocked ? rowx / K : N}, one[2] = {T, 1};
        if (e->share >= 0) s = rc_tensor_resize_private(&sb->t, RC_F32, 2, one, err); /* the placeholder */
        else s = rc_tensor_resize_private(&sb->t, RC_F32, 3, dims, err);
        if (s) return s;
    }
    return RC_OK;
}

/* After the loop: dW += stash^T X_all, in a fixed order. */
static rc_status deferred_finish(rc_op *op, rnn_state *st, rnn_scratch *sc, int64_t T, rc_err *err)
{
    for (int k = 0; k < st->n_defer && T > 0; k++) {
        const struct deferred_fc *e = &st->defer[k];
        const char *sname = st->defer[e->share >= 0 ? e->share : k].stash;
        rc_blob *sb = rc_ws_get_local(sc->shared, sname);
        rc_blob *xb = rc_ws_get(sc->shared, st->link_ext[e->x_link]);
        rc_tensor *dw = rc_out(op, e->dw_out);
        if (!sb || !xb || sb->t.ndim != 3 || sb->t.dims[0] != T)
            return rc_op_fail(op, err, RC_ERR_VALUE, "the stash '%s' or link external '%s' changed during the run",
                              sname, st->link_ext[e->x_link]);
        int64_t M = sb->t.dims[e->blocked ? 2 : 1], N = sb->t.dims[e->blocked ? 1 : 2];
        int64_t K = N ? rc_tensor_numel(dw) / N : 0;
        int64_t rows = xb->t.dims[0], rowx = rows ? rc_tensor_numel(&xb->t) / rows : 0, off = st->link_off[e->x_link];
        if (rowx != M * K || off > rows || T > rows - off || rc_tensor_numel(dw) != N * K)
            return rc_op_fail(op, err, RC_ERR_VALUE, "link external '%s' %s changed during the run: rows [%lld, %lld) "
                              "of %lld x %lld elements expected", st->link_ext[e->x_link], RC_SHAPE(&xb->t),
                              (long long)off, (long long)(off + T), (long long)M, (long long)K);
        const float *S = rc_f32(&sb->t), *X = rc_f32(&xb->t) + off * rowx;
        if (!e->blocked) {
            rc_sgemm(1, 0, N, K, T * M, 1.f, S, X, 1.f, rc_f32(dw));
            continue;
        }
        int64_t need = rc_pack_floats(T * M, K);
        if (need > st->wg_cap) { /* a fresh buffer: rc_gemm_wgrad writes the whole pack */
            free(st->wg_raw);
            st->wg_cap = 0;
            if (!(st->wg_work = rc_pack_alloc(need, &st->wg_raw)))
                return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the weight gradient '%s' (%lld x %lld "
                                  "over %lld rows)", rc_out_name(op, e->dw_out), (long long)N, (long long)K,
                                  (long long)(T * M));
            st->wg_cap = need;
        }
        rc_gemm_wgrad(N, K, T, M, S, X, K, rc_f32(dw), K, st->wg_work, st->defer[k].dw_unset);
        st->defer[k].dw_unset = 0;
    }
    return RC_OK;
}

/* The deferred entry that sums into output out with rc_gemm_wgrad, or NULL. */
static struct deferred_fc *summed_dw(rnn_state *st, int out)
{
    for (int k = 0; k < st->n_defer; k++)
        if (st->defer[k].dw_out == out && st->defer[k].blocked) return &st->defer[k];
    return NULL;
}

/* Whether an initial state fits the state (T + L, N, S) the forward run made
 * from it: (S) or (N, S) when L = 1, (L, N, S). */
static int init_fits(const rc_tensor *init, const rc_tensor *state, int64_t T)
{
    int64_t L = state->dims[0] - T, N = state->dims[1], S = state->dims[2];
    switch (init->ndim) {
    case 1: return L == 1 && init->dims[0] == S;
    case 2: return L == 1 && init->dims[0] == N && init->dims[1] == S;
    case 3: return init->dims[0] == L && init->dims[1] == N && init->dims[2] == S;
    default: return 0;
    }
}

static rc_status init_mismatch(rc_op *op, const rnn_state *st, int i, int id, const rc_tensor *state, int64_t T,
                               const char *when, rc_err *err)
{
    int64_t L = state->dims[0] - T, N = state->dims[1], S = state->dims[2];
    char want[160];
    if (L == 1)
        snprintf(want, sizeof want, "(%lld,), (%lld, %lld) or (1, %lld, %lld)", (long long)S, (long long)N,
                 (long long)S, (long long)N, (long long)S);
    else
        snprintf(want, sizeof want, "(%lld, %lld, %lld)", (long long)L, (long long)N, (long long)S);
    return rc_op_fail(op, err, RC_ERR_VALUE,
                      "initial state '%s' (forward input %lld) has shape %s%s, but the forward run made state '%s' "
                      "%s over %lld steps from it: the gradient needs it as in the forward run, %s",
                      rc_in_name(op, id), (long long)st->init_ids[i], RC_SHAPE(rc_in(op, id)), when, st->states[i],
                      RC_SHAPE(state), (long long)T, want);
}

/* Gradient-op inputs: GO(j) for j in outputs_with_grads, forward inputs,
 * forward outputs (last: step workspaces). Outputs: GI(0), GI(param...),
 * GI(initial state...). */
static rc_status rnn_grad_setup(rc_op *op, rc_err *err)
{
    rnn_state *st = calloc(1, sizeof *st);
    if (!st) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = st;
    st->is_grad = 1;
    st->id = next_op_id();
    rc_status s;
    const rc_opdef *d = &op->def;
    if ((s = parse_common(op, st, err))) return s;
    const int64_t *owg;
    if ((s = rc_arg_ints(d, "outputs_with_grads", &owg, &st->n_owg, err))) return s;
    if ((s = rc_arg_ints(d, "param", &st->params, &st->n_params, err))) return s;
    char *const *param_grads;
    int n_pg;
    if ((s = rc_arg_strings(d, "param_grads", &param_grads, &n_pg, err))) return s;
    if (st->n_owg == 0) return rc_op_fail(op, err, RC_ERR_VALUE, "outputs_with_grads must not be empty");
    if (n_pg && n_pg != st->n_params)
        return rc_op_fail(op, err, RC_ERR_VALUE, "param (%d) and param_grads (%d) differ in length", st->n_params,
                          n_pg);
    int n_fwd_out = st->n_alias + 1;
    st->n_fwd_in = op->n_in - st->n_owg - n_fwd_out;
    if (st->n_fwd_in < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "has %d inputs; expected %d output gradients + the forward inputs + %d forward outputs",
                          op->n_in, st->n_owg, n_fwd_out);
    if (op->n_out != 1 + st->n_params + st->n_states)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "has %d outputs; expected 1 (input gradient) + %d (params) + %d (initial states)",
                          op->n_out, st->n_params, st->n_states);
    for (int i = 0; i < st->n_params; i++)
        if (st->params[i] < 0 || st->params[i] >= st->n_fwd_in)
            return rc_op_fail(op, err, RC_ERR_INDEX, "param[%d] = %lld is not a forward input index", i,
                              (long long)st->params[i]);
    for (int i = 0; i < st->n_states; i++)
        if (st->init_ids[i] < 0 || st->init_ids[i] >= st->n_fwd_in)
            return rc_op_fail(op, err, RC_ERR_INDEX, "initial_recurrent_state_ids[%d] = %lld is not an input index",
                              i, (long long)st->init_ids[i]);
    for (int k = 0; k < st->n_owg; k++)
        if (owg[k] < 0 || owg[k] >= st->n_alias)
            return rc_op_fail(op, err, RC_ERR_INDEX, "outputs_with_grads[%d] = %lld is not an output index", k,
                              (long long)owg[k]);
    const rc_netdef *bstep;
    if ((s = rc_arg_net(d, "backward_step_net", &bstep, err))) return s;
    if ((s = parse_links(op, st, "link_internal", "link_external", "link_offset", "link_window", err))) return s;
    int n_fwd_links = st->n_links;
    if ((s = parse_links(op, st, "backward_link_internal", "backward_link_external", "backward_link_offset", NULL,
                         err)))
        return s;
    st->step = bstep ? rc_netdef_clone(bstep) : rc_netdef_new("backward_step_net");
    if (!st->step) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    if ((s = check_timestep_not_written(op, st, err))) return s;
    if ((s = check_step_op_types(op, st, err))) return s;
    if ((s = check_step_net_type(op, st, err))) return s;
    if ((s = seed_dropouts(op, st, err))) return s;
    if (rc_netdef_add_ext_in(st->step, st->timestep)) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");

    /* param gradient accumulation: FC weight gradients deferred to one GEMM after
     * the loop where possible (defer_fc_grads); otherwise the cell's per-step
     * gradient is added into the op's output by FCGradient itself, or renamed to
     * <grad>_tmpstep and summed into the op's output at the end of each step. */
    if ((s = defer_fc_grads(op, st, n_fwd_links, n_pg ? param_grads : NULL, err))) return s;
    for (int i = 0; i < st->n_params; i++) {
        const char *pgrad = op->def.outputs[1 + i];
        const char *gb = remap(d, n_pg ? param_grads[i] : pgrad);
        int deferred = 0;
        for (int k = 0; k < st->n_defer; k++) deferred |= st->defer[k].dw_out == 1 + i;
        if (deferred) continue;
        /* Fast path: the per-step gradient is an FCGradient output (dW or db)
         * that nothing else reads: let FCGradient add it into the op's
         * output directly (GEMM with beta = 1) instead of a Sum per step. */
        int writer = -1, n_writers = 0, n_readers = 0, slot = -1;
        for (int j = 0; j < st->step->n_op; j++) {
            const rc_opdef *od = &st->step->ops[j];
            if (op_reads(od, gb)) n_readers++;
            for (int k = 0; k < od->n_out; k++)
                if (strcmp(od->outputs[k], gb) == 0) {
                    n_writers++;
                    writer = j;
                    slot = k;
                }
        }
        if (n_writers == 1 && n_readers == 0 && strcmp(st->step->ops[writer].type, "FCGradient") == 0 &&
            (slot == 0 || slot == 1) && !rc_opdef_arg(&st->step->ops[writer], slot ? "accumulate_db" : "accumulate_dw")) {
            rc_opdef *w = &st->step->ops[writer];
            int oom = 0;
            rename_in_op(w, gb, pgrad, &oom);
            if (oom || rc_opdef_set_arg_i(w, slot ? "accumulate_db" : "accumulate_dw", 1) ||
                rc_netdef_add_ext_in(st->step, pgrad))
                return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
            continue;
        }
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s_tmpstep", gb);
        int oom = 0;
        for (int j = 0; j < st->step->n_op; j++) rename_in_op(&st->step->ops[j], gb, tmp, &oom);
        rc_opdef *sum = rc_netdef_add_op(st->step, "Sum");
        if (oom || !sum || rc_opdef_add_input(sum, pgrad) || rc_opdef_add_input(sum, tmp) ||
            rc_opdef_add_output(sum, pgrad) || rc_netdef_add_ext_in(st->step, pgrad))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    /* link ops, then accumulate ops before them */
    if ((s = add_link_ops(op, st, 0, err))) return s;
    st->state_grad = calloc((size_t)st->n_states + 1, sizeof(char *));
    st->owg_state = calloc((size_t)st->n_owg + 1, sizeof(int));
    st->acc_src = calloc((size_t)st->n_owg + 1, sizeof(char *));
    st->state_rows0 = calloc((size_t)st->n_states + 1, sizeof(int64_t));
    if (!st->state_grad || !st->owg_state || !st->acc_src || !st->state_rows0)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    for (int i = 0; i < st->n_states; i++) {
        int64_t L = 0;
        for (int l = 0; l < n_fwd_links; l++)
            if (st->link_win[l] == 1 && st->link_off[l] > L && strcmp(st->link_ext[l], st->states[i]) == 0)
                L = st->link_off[l];
        st->state_rows0[i] = L ? L : 1;
    }
    st->owg = owg;
    /* every alias with a gradient views a recurrent state (any offset; several per state add up) */
    for (int k = 0; k < st->n_owg; k++) {
        int a = (int)owg[k], i = 0;
        while (i < st->n_states && strcmp(st->alias_src[a], st->states[i]) != 0) i++;
        if (i == st->n_states)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "alias %d ('%s' -> '%s') has a gradient (outputs_with_grads[%d]) but '%s' is not a "
                              "recurrent state: gradients flow back only through aliases of recurrent_states",
                              a, st->alias_src[a], st->alias_dst[a], k, st->alias_src[a]);
        st->owg_state[k] = i;
    }
    int n_acc = 0;
    for (int i = 0; i < st->n_states; i++) {
        char nm[600];
        snprintf(nm, sizeof nm, "%s_grad", st->states[i]);
        if (!(st->state_grad[i] = strdup(remap(d, nm)))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        /* an alias's gradient rows go into the state's gradient: the last row (offset -1) before the loop,
         * the row step t wrote (t + L) at step t (an accumulate op), the initial rows (below L) after the
         * loop */
        int64_t L = st->state_rows0[i];
        for (int k = 0; k < st->n_owg; k++) {
            int64_t ao = st->alias_off[owg[k]];
            if (st->owg_state[k] != i || ao == -1) continue;
            size_t len = strlen(st->state_grad[i]) + 40;
            if (!(st->acc_src[k] = malloc(len))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
            snprintf(st->acc_src[k], len, "%s_alias_gradient_input_%d", st->state_grad[i], k);
            rc_opdef *acc = rc_netdef_insert_op(st->step, n_acc++, "rnn_internal_accumulate_gradient_input");
            if (!acc || rc_opdef_add_input(acc, st->timestep) || rc_opdef_add_input(acc, st->acc_src[k]) ||
                rc_opdef_add_input(acc, st->state_grad[i]) || rc_opdef_add_output(acc, st->state_grad[i]) ||
                rc_opdef_set_arg_i(acc, "offset", L) || (ao != L && rc_opdef_set_arg_i(acc, "alias_offset", ao)) ||
                rc_netdef_add_ext_in(st->step, st->acc_src[k]))
                return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
            for (int l = 0; l < st->n_links; l++)
                if (strcmp(st->link_ext[l], st->state_grad[i]) == 0) {
                    char key[600];
                    snprintf(key, sizeof key, "rnn_dependency.%s", st->link_int[l]);
                    if (rc_opdef_set_arg_s(acc, key, st->link_int[l]))
                        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
                }
        }
    }
    if ((s = find_link_writers(op, st, err))) return s;
    return find_packable(op, st, err);
}

static rc_status grad_run(rc_op *op, rc_err *err)
{
    rnn_state *st = op->state;
    rc_status s;
    int fin0 = st->n_owg; /* gradient-op input index of forward input 0 */
    if ((s = rc_check_input(op, fin0, RC_F32, err))) return s;
    const rc_tensor *x = rc_in(op, fin0);
    if (x->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "forward input '%s' must be at least 2-D, got %s",
                          rc_in_name(op, fin0), RC_SHAPE(x));
    int64_t T = x->dims[0], N = x->dims[1];
    rnn_scratch *sc = scratch_get(op, op->in[op->n_in - 1], 0, err);
    if (!sc) return err->code;
    if (sc->fwd_T != T || !sc->fwd_has_bwd || sc->n < T)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "the step workspaces hold %s, but the gradient needs a successful forward run with a "
                          "backward pass over the same %lld steps: run the forward op on this input first",
                          sc->fwd_T < 0 ? "no successful forward run" : (sc->fwd_has_bwd ? "a forward run of another length" : "a forward-only run"),
                          (long long)T);
    /* parameter gradients: zeroed, shaped like the params */
    for (int i = 0; i < st->n_params; i++) {
        int pin = fin0 + (int)st->params[i];
        if ((s = rc_check_input(op, pin, RC_F32, err))) return s;
        rc_tensor *g = rc_out(op, 1 + i);
        if (g == rc_in(op, pin))
            return rc_op_fail(op, err, RC_ERR_VALUE, "param gradient '%s' is the param itself", rc_out_name(op, 1 + i));
        if ((s = rc_tensor_resize_like(g, rc_in(op, pin), err))) return s;
        /* a weight gradient our kernel sums after the loop is written by that sum, not zeroed
         * first (no other output or input is the same blob: op creation refuses that) */
        struct deferred_fc *e = T > 0 ? summed_dw(st, 1 + i) : NULL;
        if (e) e->dw_unset = 1;
        else memset(rc_f32(g), 0, rc_tensor_nbytes(g));
    }
    /* state gradients: shaped like the states, all zero, plus d(_last) into the last row */
    for (int i = 0; i < st->n_states; i++) {
        rc_blob *sb = rc_ws_get(op->ws, st->states[i]);
        if (!sb || sb->t.ndim != 3)
            return rc_op_fail(op, err, RC_ERR_VALUE, "state '%s' is missing or not 3-D: run the forward op first",
                              st->states[i]);
        if (sb->t.dims[1] != N)
            return rc_op_fail(op, err, RC_ERR_VALUE, "state '%s' %s does not match the input batch size %lld",
                              st->states[i], RC_SHAPE(&sb->t), (long long)N);
        /* the initial state's gradient is cut from this state's gradient
         * after the loop: the initial state must still have a shape the
         * forward run accepts for this state */
        int id = fin0 + (int)st->init_ids[i];
        if ((s = rc_check_input(op, id, RC_F32, err))) return s;
        if (!init_fits(rc_in(op, id), &sb->t, T)) return init_mismatch(op, st, i, id, &sb->t, T, "", err);
        /* the step workspaces' own buffer: an outer blob of that name (the gradient of an output that
         * names the state, say) is not it */
        rc_blob *gb = rc_ws_create_local(sc->shared, st->state_grad[i], err);
        if (!gb) return err->code;
        drop_link_views(st, sc, st->state_grad[i], gb);
        if ((s = rc_tensor_resize_private(&gb->t, RC_F32, 3, sb->t.dims, err))) return s;
        memset(rc_f32(&gb->t), 0, rc_tensor_nbytes(&gb->t));
        int64_t R = sb->t.dims[0], row = sb->t.dims[1] * sb->t.dims[2];
        for (int k = 0; k < st->n_owg; k++) {
            if (st->owg_state[k] != i) continue;
            int a = (int)st->owg[k];
            int64_t ao = st->alias_off[a];
            if ((s = rc_check_input(op, k, RC_F32, err))) return s;
            const rc_tensor *g = rc_in(op, k);
            if (ao == -1) { /* the last row, here (no step writes it) */
                if (rc_tensor_numel(g) != row)
                    return rc_op_fail(op, err, RC_ERR_VALUE,
                                      "gradient '%s' of the last state of '%s' has shape %s, expected (1, %lld, %lld)",
                                      rc_in_name(op, k), st->states[i], RC_SHAPE(g), (long long)sb->t.dims[1],
                                      (long long)sb->t.dims[2]);
                float *dst = rc_f32(&gb->t) + (R - 1) * row;
                const float *src = rc_f32(g);
                for (int64_t j = 0; j < row; j++) dst[j] += src[j];
                continue;
            }
            if (R - T != st->state_rows0[i])
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "alias %d ('%s' -> '%s', offset %lld) has a gradient, but state '%s' %s has %lld "
                                  "initial rows and its steps write rows from %lld on (its links' largest offset "
                                  "of window 1): a gradient flows through an alias other than offset -1 only when "
                                  "step t writes row t + (the initial rows)", a, st->alias_src[a], st->alias_dst[a],
                                  (long long)ao, st->states[i], RC_SHAPE(&sb->t), (long long)(R - T),
                                  (long long)st->state_rows0[i]);
            if (ao >= 0 ? ao > R : ao < -R)
                return rc_op_fail(op, err, RC_ERR_INDEX,
                                  "alias %d ('%s' -> '%s'): offset %lld is outside the %lld rows of state %s", a,
                                  st->alias_src[a], st->alias_dst[a], (long long)ao, (long long)R, RC_SHAPE(&sb->t));
            int64_t start = ao >= 0 ? ao : R + ao;
            if (g->ndim != 3 || g->dims[0] != R - start || g->dims[1] != N || g->dims[2] != sb->t.dims[2])
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "gradient '%s' of alias '%s' (offset %lld: rows [%lld, %lld) of state '%s' %s) has "
                                  "shape %s, expected (%lld, %lld, %lld)",
                                  rc_in_name(op, k), st->alias_dst[a], (long long)ao, (long long)start,
                                  (long long)R, st->states[i], RC_SHAPE(&sb->t), RC_SHAPE(g), (long long)(R - start),
                                  (long long)N, (long long)sb->t.dims[2]);
            rc_blob *src = rc_ws_create_local(sc->shared, st->acc_src[k], err);
            if (!src) return err->code;
            rc_tensor_share(&src->t, g); /* released after the run */
        }
        rc_tensor_touch(&gb->t);
    }
    /* input-sequence gradient: shaped like input 0 and zeroed (Caffe2 left garbage) */
    rc_tensor *gx = rc_out(op, 0);
    if ((s = rc_tensor_resize_like(gx, x, err))) return s;
    memset(rc_f32(gx), 0, rc_tensor_nbytes(gx));
    /* backward intermediates live once in the shared workspace, unless the
     * forward step workspace already holds them; link internals (views of a
     * row, no data of their own) stay in each step's workspace, so that the
     * steps do not share the blob a link points at (for the executor, one
     * step's link op would otherwise wait for the previous step's readers) */
    for (int i = 0; T > 0 && i < st->step->n_op; i++) {
        const rc_opdef *od = &st->step->ops[i];
        for (int j = 0; j < od->n_out; j++) {
            int is_link = 0;
            for (int l = 0; l < st->n_links && !is_link; l++) is_link = strcmp(st->link_int[l], od->outputs[j]) == 0;
            if (!is_link && !rc_ws_get_local(sc->ws[0], od->outputs[j]))
                if (!rc_ws_create(sc->shared, od->outputs[j], err)) return err->code;
        }
    }
    if ((s = deferred_prepare(op, st, sc, T, err))) return s;
    scratch_claim(sc, st);
    if ((s = nets_tmp_reserve(op, st, (int)T, err))) return s;
    for (int t = 0; t < T; t++) {
        rc_net *net = ensure_net(op, st, sc, sc->ws[t], &sc->bwd[t], t, err);
        if (!net) return err->code;
        st->nets_tmp[t] = net;
        st->ws_tmp[t] = sc->ws[t];
    }
    if ((s = run_loop(op, st, op->in[op->n_in - 1], (int)T, 0, 0, err))) return s;
    if ((s = check_link_views(op, st, (int)T, 0, err))) return s;
    if ((s = deferred_finish(op, st, sc, T, err))) return s;
    /* initial-state gradients */
    for (int i = 0; i < st->n_states; i++) {
        int id = fin0 + (int)st->init_ids[i];
        const rc_tensor *init = rc_in(op, id);
        rc_tensor *g = rc_out(op, 1 + st->n_params + i);
        rc_blob *gb = rc_ws_get(sc->shared, st->state_grad[i]);
        if (!gb || gb->t.ndim != 3 || gb->t.dims[1] != N)
            return rc_op_fail(op, err, RC_ERR_VALUE, "the gradient of state '%s' changed during the run",
                              st->states[i]);
        if (init->dtype != RC_F32 || !init_fits(init, &gb->t, T))
            return init_mismatch(op, st, i, id, &gb->t, T, " after the step loop (a step op changed it)", err);
        /* an alias of initial rows (rows below L: offset 0, the state named as an output, a windowed state's
         * other aliases): those rows are the initial state's */
        int64_t row = gb->t.dims[1] * gb->t.dims[2], R = gb->t.dims[0], L = R - T;
        for (int k = 0; k < st->n_owg; k++) {
            int64_t ao = st->alias_off[st->owg[k]];
            if (st->owg_state[k] != i || ao == -1) continue;
            int64_t start = ao >= 0 ? ao : R + ao;
            if (start >= L) continue;
            const rc_tensor *ag = rc_in(op, k);
            if (ag->dtype != RC_F32 || ag->ndim != 3 || ag->dims[0] != R - start || ag->dims[1] * ag->dims[2] != row)
                return rc_op_fail(op, err, RC_ERR_VALUE, "gradient '%s' changed during the run: now %s",
                                  rc_in_name(op, k), RC_SHAPE(ag));
            float *dst = rc_f32(&gb->t) + start * row;
            const float *src = rc_f32(ag);
            for (int64_t j = 0; j < (L - start) * row; j++) dst[j] += src[j];
        }
        if ((s = rc_tensor_resize_like(g, init, err))) return s;
        const float *src = rc_f32(&gb->t);
        float *dst = rc_f32(g);
        int64_t S = gb->t.dims[2];
        if (init->ndim >= 2) memcpy(dst, src, sizeof(float) * (size_t)rc_tensor_numel(init));
        else {
            memset(dst, 0, sizeof(float) * (size_t)S);
            for (int64_t n = 0; n < N; n++)
                for (int64_t j = 0; j < S; j++) dst[j] += src[n * S + j];
        }
    }
    /* the shared names of the alias gradients let go of their storage (a failed run keeps it until the
     * next run or the step workspaces go) */
    for (int k = 0; k < st->n_owg; k++) {
        rc_blob *b = st->acc_src[k] ? rc_ws_get_local(sc->shared, st->acc_src[k]) : NULL;
        if (b) rc_tensor_release(&b->t);
    }
    return RC_OK;
}

static rc_status rnn_grad_run(rc_op *op, rc_err *err)
{
    rnn_state *st = op->state;
    rc_status s = grad_run(op, err);
    for (int k = 0; k < st->n_defer; k++) /* a failed run: zeros, not old memory, in the sums it did not reach */
        if (st->defer[k].dw_unset) {
            rc_tensor *g = rc_out(op, st->defer[k].dw_out);
            if (rc_f32(g)) memset(rc_f32(g), 0, rc_tensor_nbytes(g));
            st->defer[k].dw_unset = 0;
        }
    return s;
}

/* ================================================================ link / accumulate ops */
static rc_status link_setup(rc_op *op, rc_err *err)
{
    rnn_link_args *a = calloc(1, sizeof *a);
    if (!a) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = a;
    rc_status s;
    if ((s = rc_arg_i(&op->def, "offset", -1, &a->offset, err)) ||
        (s = rc_arg_i(&op->def, "window", -1, &a->window, err)))
        return s;
    if (a->offset < 0) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'offset' must be set and >= 0");
    if (a->window < 0) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'window' must be set and >= 0");
    if (strcmp(op->def.inputs[1], op->def.outputs[1]) != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 ('%s') and output 1 ('%s') must be the same blob",
                          op->def.inputs[1], op->def.outputs[1]);
    return RC_OK;
}

static rc_status read_timestep(rc_op *op, int i, int *t, rc_err *err)
{
    const rc_tensor *ts = rc_in(op, i);
    if (ts->dtype != RC_I32 || rc_tensor_numel(ts) != 1)
        return rc_op_fail(op, err, RC_ERR_TYPE, "timestep blob '%s' must be a 1-element int32 tensor, got %s",
                          rc_in_name(op, i), RC_SHAPE(ts));
    *t = rc_i32(ts)[0];
    return RC_OK;
}

/* internal = external[t + offset : t + offset + window] (a view, no copy). */
static rc_status link_run(rc_op *op, rc_err *err)
{
    rnn_link_args *a = op->state;
    int t = 0;
    rc_status s;
    if ((s = read_timestep(op, 0, &t, err))) return s;
    const rc_tensor *ext = rc_in(op, 1);
    if (ext->dtype == RC_UNDEF || ext->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "link external '%s' must be a tensor of at least 1 dim, got %s",
                          rc_in_name(op, 1), RC_SHAPE(ext));
    /* compared without overflow: offset and window may be anything up to 2^63 */
    int64_t rows = ext->dims[0];
    if (t < 0 || a->offset > rows - t || a->window > rows - t - a->offset) {
        int big = a->offset > INT32_MAX || a->window > INT32_MAX;
        return rc_op_fail(op, err, RC_ERR_INDEX,
                          "link '%s' -> '%s': rows [%lld, %lld) are outside the %lld rows of %s (offset %lld, "
                          "window %lld)", rc_in_name(op, 1), rc_out_name(op, 0),
                          big ? (long long)a->offset : (long long)t + a->offset,
                          big ? (long long)a->window : (long long)t + a->offset + a->window, (long long)rows,
                          RC_SHAPE(ext), (long long)a->offset, (long long)a->window);
    }
    int64_t start = (int64_t)t + a->offset;
    rc_tensor_view_rows(rc_out(op, 0), ext, start, a->window);
    return RC_OK;
}

/* dst[t + offset] += src[t] (one row). Inputs (timestep, src, dst), output dst.
 * With alias_offset: src is the gradient of the alias of dst's rows at that offset (rows [o, R) for o >= 0,
 * the last -o rows for o < 0, R = dst's rows), so it holds R - start rows, its row j that of dst's row
 * start + j: dst[t + offset] += src[t + offset - start], nothing where t + offset < start. */
static rc_status acc_run(rc_op *op, rc_err *err)
{
    rnn_link_args *a = op->state;
    int t = 0;
    rc_status s;
    if ((s = read_timestep(op, 0, &t, err))) return s;
    if ((s = rc_check_input(op, 1, RC_F32, err)) || (s = rc_check_input(op, 2, RC_F32, err))) return s;
    const rc_tensor *src = rc_in(op, 1);
    rc_tensor *dst = rc_in(op, 2);
    if (src->ndim < 1 || dst->ndim < 1 || rc_dims_prod(src, 1, src->ndim) != rc_dims_prod(dst, 1, dst->ndim))
        return rc_op_fail(op, err, RC_ERR_VALUE, "row sizes of '%s' %s and '%s' %s differ", rc_in_name(op, 1),
                          RC_SHAPE(src), rc_in_name(op, 2), RC_SHAPE(dst));
    int64_t row = t + a->offset;
    if (t < 0 || row < 0 || row >= dst->dims[0])
        return rc_op_fail(op, err, RC_ERR_INDEX, "destination row %lld is outside the %lld rows of '%s'",
                          (long long)row, (long long)dst->dims[0], rc_in_name(op, 2));
    int64_t srow = t;
    if (a->has_alias_offset) {
        int64_t R = dst->dims[0], o = a->alias_offset;
        /* compared without overflow: o may be anything in int64 */
        if (o >= 0 ? o > R : o < -R)
            return rc_op_fail(op, err, RC_ERR_INDEX, "alias_offset %lld is outside the %lld rows of '%s'",
                              (long long)o, (long long)R, rc_in_name(op, 2));
        int64_t start = o >= 0 ? o : R + o;
        if (src->dims[0] != R - start)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "'%s' %s has %lld rows; the alias at offset %lld of the %lld rows of '%s' has %lld",
                              rc_in_name(op, 1), RC_SHAPE(src), (long long)src->dims[0], (long long)o, (long long)R,
                              rc_in_name(op, 2), (long long)(R - start));
        if (row < start) return RC_OK;
        srow = row - start;
    }
    if (srow >= src->dims[0])
        return rc_op_fail(op, err, RC_ERR_INDEX, "source row %lld is outside the %lld rows of '%s'",
                          (long long)srow, (long long)src->dims[0], rc_in_name(op, 1));
    int64_t n = rc_dims_prod(src, 1, src->ndim);
    const float *sp = rc_f32(src) + srow * n;
    float *dp = rc_f32(dst) + row * n;
    for (int64_t j = 0; j < n; j++) dp[j] += sp[j];
    return RC_OK;
}

static rc_status acc_setup(rc_op *op, rc_err *err)
{
    rnn_link_args *a = calloc(1, sizeof *a);
    if (!a) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = a;
    rc_status s;
    if ((s = rc_arg_i(&op->def, "offset", 1, &a->offset, err))) return s;
    if (rc_opdef_arg(&op->def, "alias_offset")) {
        a->has_alias_offset = 1;
        if ((s = rc_arg_i(&op->def, "alias_offset", 0, &a->alias_offset, err))) return s;
    }
    if (strcmp(op->def.inputs[2], op->def.outputs[0]) != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 ('%s') and output 0 ('%s') must be the same blob",
                          op->def.inputs[2], op->def.outputs[0]);
    return RC_OK;
}

static int link_inplace(int in, int out) { return in == 1 && out == 1; }
static int acc_inplace(int in, int out) { return in == 2 && out == 0; }

/* ================================================================ blob fetcher */
/* Copies every local blob b of step workspace i into the op's workspace as
 * "<prefix>_<b><i>"; output: int32 tensor of the UTF-8 bytes of all names,
 * each followed by a 0 byte. */
static rc_status fetcher_run(rc_op *op, rc_err *err)
{
    rnn_scratch *sc = scratch_get(op, op->in[0], 0, err);
    if (!sc) return err->code;
    const char *prefix;
    rc_status s;
    if ((s = rc_arg_s(&op->def, "prefix", "rnn", &prefix, err))) return s;
    size_t cap = 256, len = 0;
    char *names = malloc(cap);
    if (!names) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    for (int i = 0; i < sc->n; i++) {
        rc_workspace *w = sc->ws[i];
        int nb = rc_ws_num_blobs(w);
        for (int j = 0; j < nb; j++) {
            rc_blob *b = rc_ws_blob_at(w, j);
            if (b->obj || b->t.dtype == RC_UNDEF) continue;
            char nm[1024];
            int k = snprintf(nm, sizeof nm, "%s_%s%d", prefix, b->name, i);
            if (k < 0 || (size_t)k >= sizeof nm) {
                free(names);
                return rc_op_fail(op, err, RC_ERR_VALUE, "blob name too long: '%s'", b->name);
            }
            rc_blob *dst = rc_ws_create_local(op->ws, nm, err);
            if (!dst || (dst->obj && (free(names), 1))) {
                if (dst) return rc_op_fail(op, err, RC_ERR_TYPE, "blob '%s' holds a non-tensor", nm);
                free(names);
                return err->code;
            }
            rc_tensor fresh;
            rc_tensor_init(&fresh);
            if ((s = rc_tensor_copy(&fresh, &b->t, err))) { free(names); return s; }
            rc_tensor_release(&dst->t);
            dst->t = fresh;
            if (len + (size_t)k + 1 > cap) {
                while (len + (size_t)k + 1 > cap) cap *= 2;
                char *nn = realloc(names, cap);
                if (!nn) { free(names); return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory"); }
                names = nn;
            }
            memcpy(names + len, nm, (size_t)k + 1);
            len += (size_t)k + 1;
        }
    }
    int64_t dim = (int64_t)len;
    rc_tensor *out = rc_out(op, 0);
    if ((s = rc_tensor_resize_private(out, RC_I32, 1, &dim, err))) { free(names); return s; }
    int32_t *o = rc_i32(out);
    for (size_t j = 0; j < len; j++) o[j] = (unsigned char)names[j];
    free(names);
    return RC_OK;
}

const rc_op_schema rc_ops_recurrent[] = {
    {"RecurrentNetwork", 1, -1, 2, -1, NULL, rnn_setup, rnn_run, rnn_state_free,
     "runs step_net over the timesteps of input 0", NULL, RC_OP_OBJECT_OUT_LAST},
    {"RecurrentNetworkGradient", 2, -1, 1, -1, NULL, rnn_grad_setup, rnn_grad_run, rnn_state_free,
     "backward pass of RecurrentNetwork"},
    {"RecurrentNetworkBlobFetcher", 1, 1, 1, 1, NULL, NULL, fetcher_run, NULL,
     "copies step-workspace blobs into the op's workspace"},
    {"rnn_internal_apply_link", 2, 2, 2, 2, link_inplace, link_setup, link_run, free,
     "internal = external[t+offset : t+offset+window] as a view"},
    {"rnn_internal_accumulate_gradient_input", 3, 3, 1, 1, acc_inplace, acc_setup, acc_run, free,
     "dst[t+offset] += src[t] (or the row of src that alias_offset gives)"},
    {0},
};
