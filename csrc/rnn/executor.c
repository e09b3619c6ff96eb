#define _GNU_SOURCE
/* The RNN executor: runs the ops of different timesteps of a step net at the
 * same time (layer 2 at step t beside layer 1 at step t+1), with results
 * bitwise identical to the serial run.
 *
 * Dependency analysis. The serial run executes, for k = 0..T-1 (t = k forward,
 * t = T-1-k backward), a prologue P_t (writes the step workspace's timestep
 * blob) and then the step ops 0..n-1 of nets[t]. We walk that serial order
 * once and record, for every op instance, the memory *regions* it reads and
 * writes; every conflicting pair (write/read, read/write, write/write) keeps
 * its serial order as an edge (last writer + readers since, per region), so
 * any schedule of the resulting DAG computes exactly what the serial run
 * computes, in the same order for every accumulation.
 *
 * Regions: a blob's data; for a link internal (a view set by
 * rnn_internal_apply_link) the viewed rows of its external tensor, one region
 * per row, plus the blob object itself (the link op writes it, every user
 * reads it); the timestep blob of the step workspace (read by every op of
 * the step, written by the prologue -- this also makes rotating workspaces
 * in forward-only mode wait for the previous user of the workspace).
 * rnn_internal_accumulate_gradient_input writes one row of its destination.
 * This covers Caffe2's intra-step, recurrent (through the links),
 * write-after-read and write-after-write edges, and windowed links too.
 *
 * Tasks. One per (timestep, op), except the link ops RecurrentNetwork puts
 * at the start of the step net whose internal blob is the step's own: they
 * only point that blob at rows of a state tensor, and run inside the task
 * before them (the prologue, or the last output-gradient accumulation op),
 * in serial order (see inst_of_op). This halves the forward's tasks.
 *
 * Scheduling. A persistent pool of num_threads - 1 workers plus the calling
 * thread pop ready instances from a heap ordered by serial position; one
 * mutex and one condition variable; idle threads sleep. The first failure
 * reported is the one the serial run would hit: after a failure at serial
 * position f, instances after f no longer start, those before f still run
 * (they depend only on earlier instances, so they can all finish), and the
 * failure with the smallest position is returned once nothing before it is
 * left. The next run starts from scratch.
 *
 * fork(). The child keeps only the forking thread: an executor whose workers
 * started before the fork has none there, and its mutex and condition
 * variable may be held or waited on by threads that do not exist. A child
 * handler bumps fork_gen; an executor made in an earlier generation forgets
 * its workers and re-initialises both (the old ones are abandoned: destroying
 * a condition variable with waiters would block forever) before it runs, and
 * is freed without joining. */
#include "rnn_internal.h"
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const void *ptr;
    int64_t row;     /* -1: whole blob, -2: the blob object of a link internal, >= 0: a row */
    int last_writer; /* instance id or -1 */
    int n_readers, cap_readers;
    int *readers;
    int outer_ext;   /* row -1 of an outer blob: note_outer's answer; -2: not asked yet */
} region;

struct rc_rnn_exec {
    int forward, num_threads, debug;
    int interruptible; /* the starting thread's rc_interrupt_in_scope(), for the workers (drain) */
    /* graph (rebuilt when T, the nets or the state sizes change) */
    int T, n_ops, n_inst;
    int n_pre, n_lead;     /* the step net starts with n_pre accumulate ops, then link ops up to n_lead */
    int n1;                /* instances per timestep (see inst_of_op) */
    uint64_t gen;
    rc_net **g_nets;
    rc_workspace **g_ws;
    int64_t *g_ext_rows;   /* per link external seen: rows at build time (validity check) */
    int n_g_ext;
    const void **g_ext_ptr;
    /* the blobs of outer workspaces that step ops touch, and the link external each one's data lay in
     * at build time (-1: none; see blob_access): an alias of a state made or dropped since changes the
     * edges (validity check) */
    const rc_blob **g_outer;
    int *g_outer_ext;
    int n_g_outer, cap_g_outer;
    int *indeg0, *succ_off, *succ;
    int n_edges;
    rc_blob **tsb;         /* per timestep: its timestep blob */
    /* run state, guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *threads;
    int n_started, stop;
    int n_ids;    /* worker ids handed out (under mu) */
    int fork_gen; /* fork_gen when mu, cv and the workers were made */
    int running, remaining, inflight, failed;
    int fail_id;           /* smallest failed instance (valid when failed) */
    int wgen;              /* bumped (atomically, under mu) at every change a waiter may wait for:
                            * work pushed, run started / over, stop; polled without mu */
    int64_t spin_ns;       /* this run's poll budget before sleeping (rc_flag_spin_ns; 0 if oversubscribed) */
    int n_polling;         /* threads polling in wait_change (atomic writes; read without mu) */
    /* help board, guarded by mu (see "Helping" below): one product of a running instance, split into
     * parts that idle threads take */
    rc_part_fn help_fn;
    const void *help_ctx;
    int help_parts;        /* 0: nothing posted */
    int help_next;         /* next part to take (help_parts or more: none left); taken atomically, by
                            * helpers under mu, by the owner without */
    int help_left;         /* parts not finished (atomic writes; the owner polls it without mu) */
    int help_sleeper;      /* the owner sleeps on cv until help_left is 0 */
    int help_k, help_op;   /* the owner's task (k-th step run, step op), for the trace */
    rc_err err;
    int *indeg;
    int *heap, heap_n;
    /* trace */
    int trace;
    int64_t t0;
    int32_t *trace_rec;    /* T x (n_ops + 1) records of 5: timestep, op (-1 prologue), start_us, end_us,
                            * worker; row k * (n_ops + 1) + 1 + i for step op i of the k-th step run */
    int32_t *part_rec;     /* part_cap records of the same 5: the parts helpers ran ("Helping"), the
                            * timestep and op of the task they helped, in the order they ended (under
                            * mu; grown by help_part as needed) */
    int part_n, part_cap;
};

/* The task the calling thread runs (run_instance): k-th step run and step op, for the trace of the
 * parts that helpers take from its products. */
static __thread int tl_task_k, tl_task_op;

int64_t rc_rnn_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int rc_num_cores(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
#endif
    return 1;
}

/* ---------------------------------------------------------------- heap of ready instances */
static void heap_push(rc_rnn_exec *ex, int id)
{
    int i = ex->heap_n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (ex->heap[p] <= id) break;
        ex->heap[i] = ex->heap[p];
        i = p;
    }
    ex->heap[i] = id;
}

static int heap_pop(rc_rnn_exec *ex)
{
    int top = ex->heap[0], last = ex->heap[--ex->heap_n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= ex->heap_n) break;
        if (c + 1 < ex->heap_n && ex->heap[c + 1] < ex->heap[c]) c++;
        if (last <= ex->heap[c]) break;
        ex->heap[i] = ex->heap[c];
        i = c;
    }
    if (ex->heap_n) ex->heap[i] = last;
    return top;
}

/* ---------------------------------------------------------------- graph building */
typedef struct {
    region *r;
    int n, cap;      /* cap: power of two, open addressing */
    int *edge_from, *edge_to;
    int n_edges, cap_edges;
    int *stamp;      /* per instance: last instance that added an edge from it */
    int cur;
    int oom;
} builder;

static uint64_t hkey(const void *p, int64_t row)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t)(row + 3) * 0xC2B2AE3D27D4EB4FULL;
    return h ^ (h >> 29);
}

static region *reg_get(builder *b, const void *p, int64_t row)
{
    if ((b->n + 1) * 2 > b->cap) {
        int nc = b->cap ? b->cap * 2 : 1024;
        region *nr = calloc((size_t)nc, sizeof *nr);
        if (!nr) { b->oom = 1; return NULL; }
        for (int i = 0; i < b->cap; i++)
            if (b->r[i].ptr) {
                uint64_t h = hkey(b->r[i].ptr, b->r[i].row) & (uint64_t)(nc - 1);
                while (nr[h].ptr) h = (h + 1) & (uint64_t)(nc - 1);
                nr[h] = b->r[i];
            }
        free(b->r);
        b->r = nr;
        b->cap = nc;
    }
    uint64_t h = hkey(p, row) & (uint64_t)(b->cap - 1);
    while (b->r[h].ptr) {
        if (b->r[h].ptr == p && b->r[h].row == row) return &b->r[h];
        h = (h + 1) & (uint64_t)(b->cap - 1);
    }
    b->r[h].ptr = p;
    b->r[h].row = row;
    b->r[h].last_writer = -1;
    b->r[h].outer_ext = -2;
    b->n++;
    return &b->r[h];
}

static void add_edge(builder *b, int from)
{
    if (from < 0 || from == b->cur || b->stamp[from] == b->cur) return;
    b->stamp[from] = b->cur;
    if (b->n_edges == b->cap_edges) {
        if (b->cap_edges > INT_MAX / 2) { b->oom = 1; return; } /* edge counts are int: out of memory */
        int nc = b->cap_edges ? b->cap_edges * 2 : 4096;
        int *f = realloc(b->edge_from, sizeof(int) * (size_t)nc);
        if (f) b->edge_from = f;
        int *t = realloc(b->edge_to, sizeof(int) * (size_t)nc);
        if (t) b->edge_to = t;
        if (!f || !t) { b->oom = 1; return; }
        b->cap_edges = nc;
    }
    b->edge_from[b->n_edges] = from;
    b->edge_to[b->n_edges] = b->cur;
    b->n_edges++;
}

static void builder_free(builder *b)
{
    for (int i = 0; i < b->cap; i++) free(b->r[i].readers);
    free(b->r);
    free(b->edge_from);
    free(b->edge_to);
    free(b->stamp);
}

static void access(builder *b, const void *p, int64_t row, int write)
{
    region *r = reg_get(b, p, row);
    if (!r) return;
    add_edge(b, r->last_writer);
    if (!write) {
        if (r->n_readers && r->readers[r->n_readers - 1] == b->cur) return;
        if (r->n_readers == r->cap_readers) {
            int nc = r->cap_readers ? r->cap_readers * 2 : 4;
            int *nr = realloc(r->readers, sizeof(int) * (size_t)nc);
            if (!nr) { b->oom = 1; return; }
            r->readers = nr;
            r->cap_readers = nc;
        }
        r->readers[r->n_readers++] = b->cur;
    } else {
        for (int i = 0; i < r->n_readers; i++) add_edge(b, r->readers[i]);
        r->n_readers = 0;
        r->last_writer = b->cur;
    }
}

typedef struct {
    const rc_blob *internal, *external;
    int64_t offset, window;
} link_info;

static int is_type(const rc_op *op, const char *type) { return strcmp(op->def.type, type) == 0; }

/* Instances. RecurrentNetwork(Gradient) starts the step net with its own
 * ops: output-gradient accumulation ops (0..n_pre-1, gradient only), then link
 * ops (n_pre..n_lead-1), which only point their internal blob at rows of a
 * state tensor. A link op is not worth a task of its own: the link ops run in
 * the instance before them (the last accumulate op's, or the prologue's),
 * keeping the serial order. Instance j of a timestep: 0 = the prologue (sets
 * the timestep); then one per accumulate op; then one per later op. */
static int inst_of_op(const rc_rnn_exec *ex, int i)
{
    if (i < ex->n_pre) return i + 1;
    if (i < ex->n_lead) return ex->n_pre;
    return ex->n_pre + 1 + (i - ex->n_lead);
}

/* The step ops [first, last) that instance j runs. */
static void ops_of_inst(const rc_rnn_exec *ex, int j, int *first, int *last)
{
    if (j == 0) {
        *first = 0;
        *last = ex->n_pre ? 0 : ex->n_lead;
    } else if (j <= ex->n_pre) {
        *first = j - 1;
        *last = j == ex->n_pre ? ex->n_lead : j;
    } else {
        *first = ex->n_lead + (j - ex->n_pre - 1);
        *last = *first + 1;
    }
}

/* The step op an instance is named after in the debug printout (-1: prologue). */
static int inst_label(const rc_rnn_exec *ex, int j)
{
    int first, last;
    ops_of_inst(ex, j, &first, &last);
    return j == 0 ? -1 : first;
}

/* The link external (its index in ex->g_ext_ptr) whose data holds blob's data, or -1. Only links
 * and RecurrentNetwork's aliases make one tensor's data a view of another's (rc_core.h); an alias
 * lies in a state tensor (a link external), and a step op may read it from the outer workspace. */
static int outer_in_external(const rc_rnn_exec *ex, const rc_blob *blob)
{
    size_t nb = rc_tensor_nbytes(&blob->t);
    const char *p = nb ? rc_tensor_data(&blob->t) : NULL;
    if (!p) return -1;
    for (int e = 0; e < ex->n_g_ext; e++) {
        const rc_blob *x = ex->g_ext_ptr[e];
        size_t xn = rc_tensor_nbytes(&x->t);
        const char *q = xn ? rc_tensor_data(&x->t) : NULL;
        if (q && p < q + xn && q < p + nb) return e;
    }
    return -1;
}

/* Records an outer blob step ops touch, with outer_in_external at build time (graph_valid checks
 * the answer again). Once per blob: the answer is kept in the blob's region (found by hash). */
static int note_outer(rc_rnn_exec *ex, builder *b, const rc_blob *blob)
{
    region *r = reg_get(b, blob, -1);
    if (!r) return -1;
    if (r->outer_ext != -2) return r->outer_ext;
    if (ex->n_g_outer == ex->cap_g_outer) {
        int nc = ex->cap_g_outer ? ex->cap_g_outer * 2 : 16;
        const rc_blob **o = realloc(ex->g_outer, sizeof *o * (size_t)nc);
        if (o) ex->g_outer = o;
        int *e = realloc(ex->g_outer_ext, sizeof *e * (size_t)nc);
        if (e) ex->g_outer_ext = e;
        if (!o || !e) { b->oom = 1; return -1; }
        ex->cap_g_outer = nc;
    }
    int e = outer_in_external(ex, blob);
    ex->g_outer[ex->n_g_outer] = blob;
    ex->g_outer_ext[ex->n_g_outer] = e;
    ex->n_g_outer++;
    r->outer_ext = e;
    return e;
}

static void blob_access(rc_rnn_exec *ex, builder *b, const rc_blob *blob, int t, rc_workspace *ws,
                        const link_info *links, int n_links, int write)
{
    for (int l = 0; l < n_links; l++)
        if (links[l].internal == blob) {
            access(b, blob, -2, 0);
            /* only rows that exist: an out-of-range link fails in its link op at run time */
            int64_t rows = links[l].external->t.ndim ? links[l].external->t.dims[0] : 0;
            if (links[l].offset < rows - t)
                for (int64_t r = t + links[l].offset; r < rows && r - t - links[l].offset < links[l].window; r++)
                    access(b, links[l].external, r, write);
            return;
        }
    for (int l = 0; l < n_links; l++)
        if (links[l].external == blob) {
            int64_t rows = blob->t.ndim ? blob->t.dims[0] : 0;
            for (int64_t r = 0; r < rows; r++) access(b, blob, r, write);
            return;
        }
    if (blob->ws != ws) {
        /* a blob of an outer workspace: when it is an alias of a state (its data lies in a link
         * external's), the op touches the state's rows too -- all of them, to be safe */
        int e = note_outer(ex, b, blob);
        if (e >= 0) {
            const rc_blob *x = ex->g_ext_ptr[e];
            int64_t rows = x->t.ndim ? x->t.dims[0] : 0;
            for (int64_t r = 0; r < rows; r++) access(b, x, r, write);
        }
    }
    access(b, blob, -1, write);
}

static void graph_free(rc_rnn_exec *ex)
{
    free(ex->g_nets);
    free(ex->g_ws);
    free(ex->g_ext_rows);
    free(ex->g_ext_ptr);
    free(ex->g_outer);
    free(ex->g_outer_ext);
    ex->g_outer = NULL;
    ex->g_outer_ext = NULL;
    ex->n_g_outer = ex->cap_g_outer = 0;
    free(ex->indeg0);
    free(ex->indeg);
    free(ex->succ_off);
    free(ex->succ);
    free(ex->heap);
    free(ex->tsb);
    free(ex->trace_rec);
    free(ex->part_rec);
    ex->part_rec = NULL;
    ex->part_n = ex->part_cap = 0;
    ex->g_nets = NULL;
    ex->g_ws = NULL;
    ex->g_ext_rows = NULL;
    ex->g_ext_ptr = NULL;
    ex->indeg0 = ex->indeg = ex->succ_off = ex->succ = ex->heap = NULL;
    ex->tsb = NULL;
    ex->trace_rec = NULL;
    ex->T = -1;
    ex->n_g_ext = 0;
}

static int graph_valid(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws, int T, uint64_t gen)
{
    if (ex->T != T || !ex->g_nets || ex->gen != gen) return 0;
    if (memcmp(ex->g_nets, nets, sizeof *nets * (size_t)T) || memcmp(ex->g_ws, ws, sizeof *ws * (size_t)T)) return 0;
    for (int i = 0; i < ex->n_g_ext; i++) {
        const rc_blob *bl = ex->g_ext_ptr[i];
        if ((bl->t.ndim ? bl->t.dims[0] : 0) != ex->g_ext_rows[i]) return 0;
    }
    for (int i = 0; i < ex->n_g_outer; i++)
        if (outer_in_external(ex, ex->g_outer[i]) != ex->g_outer_ext[i]) return 0;
    return 1;
}

static void debug_print(rc_rnn_exec *ex)
{
    /* rnn_executor_debug: the dependency structure of the first timestep, as
     * Caffe2's PrintInfo did (stderr: this output is what the flag asks for). */
    int n1 = ex->n1;
    rc_net *net = ex->g_nets[ex->forward ? 0 : ex->T - 1];
    fprintf(stderr, "RNN executor (%s, T=%d, %d ops/step, %d edges, %d threads)\n",
            ex->forward ? "forward" : "backward", ex->T, ex->n_ops, ex->n_edges, ex->num_threads);
    if (ex->n_lead > ex->n_pre)
        fprintf(stderr, "  (link ops %d..%d run in the task of [%d])\n", ex->n_pre, ex->n_lead - 1,
                ex->n_pre ? ex->n_pre - 1 : -1);
    for (int j = 0; j < n1 && j < ex->n_inst; j++) {
        int lab = inst_label(ex, j);
        const char *ty = lab < 0 ? "<set timestep>" : rc_net_op(net, lab)->def.type;
        fprintf(stderr, "  [%d] %s ->", lab, ty);
        for (int e = ex->succ_off[j]; e < ex->succ_off[j + 1]; e++) {
            int s = ex->succ[e];
            fprintf(stderr, " %s%d", s / n1 ? "next:" : "", inst_label(ex, s % n1));
        }
        fprintf(stderr, "\n");
    }
}

static rc_status graph_build(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws, const char *timestep, int T,
                             rc_err *err)
{
    graph_free(ex);
    int n = rc_net_num_ops(nets[0]);
    /* the leading accumulate and link ops (see inst_of_op); a link op is
     * folded only while its internal blob belongs to the step's workspace in
     * every step: one shared by all steps (a backward intermediate) is written
     * by every step's link op, and that write waits for the previous step's
     * readers, which must not hold up the other links and the whole step */
    int n_pre = 0, n_lead;
    while (n_pre < n && is_type(rc_net_op(nets[0], n_pre), "rnn_internal_accumulate_gradient_input")) n_pre++;
    n_lead = n;
    for (int t = 0; t < T; t++) {
        int i = n_pre;
        while (i < n_lead && rc_net_num_ops(nets[t]) == n) {
            rc_op *op = rc_net_op(nets[t], i);
            if (!is_type(op, "rnn_internal_apply_link") || rc_ws_get_local(ws[t], op->def.outputs[0]) != op->out[0])
                break;
            i++;
        }
        n_lead = i;
    }
    ex->n_pre = n_pre;
    ex->n_lead = n_lead;
    int n1 = 1 + n_pre + (n - n_lead);
    if ((int64_t)T * (n + 1) > (int64_t)INT32_MAX / 4)
        return rc_err_set(err, RC_ERR_VALUE, "RNN executor: %d timesteps x %d ops is too large", T, n);
    int N = T * n1;
    builder b;
    memset(&b, 0, sizeof b);
    link_info *links = calloc((size_t)n + 1, sizeof *links);
    b.stamp = malloc(sizeof(int) * (size_t)N);
    ex->g_nets = malloc(sizeof *nets * (size_t)T);
    ex->g_ws = malloc(sizeof *ws * (size_t)T);
    ex->tsb = calloc((size_t)T, sizeof *ex->tsb);
    ex->indeg0 = calloc((size_t)N, sizeof(int));
    ex->indeg = calloc((size_t)N, sizeof(int));
    ex->heap = malloc(sizeof(int) * (size_t)N);
    ex->succ_off = calloc((size_t)N + 1, sizeof(int));
    ex->g_ext_ptr = calloc((size_t)n + 1, sizeof *ex->g_ext_ptr);
    ex->g_ext_rows = calloc((size_t)n + 1, sizeof *ex->g_ext_rows);
    if (!links || !b.stamp || !ex->g_nets || !ex->g_ws || !ex->tsb || !ex->indeg0 || !ex->indeg || !ex->heap ||
        !ex->succ_off || !ex->g_ext_ptr || !ex->g_ext_rows)
        goto oom;
    for (int i = 0; i < N; i++) b.stamp[i] = -1;
    memcpy(ex->g_nets, nets, sizeof *nets * (size_t)T);
    memcpy(ex->g_ws, ws, sizeof *ws * (size_t)T);
    for (int k = 0; k < T && !b.oom; k++) {
        int t = ex->forward ? k : T - 1 - k;
        rc_net *net = nets[t];
        /* a first run at a huge T spends a while here: Ctrl-C is honoured */
        if ((k & 1023) == 1023 && rc_interrupt_pending()) {
            rc_err_set(err, RC_ERR_INTERRUPT, "interrupted while building the executor's dependency graph (%d of %d "
                       "timesteps)", k, T);
            goto fail;
        }
        if (rc_net_num_ops(net) != n) {
            rc_err_set(err, RC_ERR_RUNTIME, "RNN executor: step nets differ in size");
            goto fail;
        }
        rc_blob *tsb = rc_ws_get_local(ws[t], timestep);
        if (!tsb) {
            rc_err_set(err, RC_ERR_RUNTIME, "RNN executor: timestep blob '%s' missing at step %d", timestep, t);
            goto fail;
        }
        ex->tsb[t] = tsb;
        int n_links = 0;
        for (int i = 0; i < n; i++) {
            rc_op *op = rc_net_op(net, i);
            if (is_type(op, "rnn_internal_apply_link")) {
                const rnn_link_args *la = op->state;
                links[n_links].internal = op->out[0];
                links[n_links].external = op->in[1];
                links[n_links].offset = la->offset;
                links[n_links].window = la->window;
                n_links++;
                if (k == 0) {
                    int seen = 0;
                    for (int e = 0; e < ex->n_g_ext; e++) seen |= ex->g_ext_ptr[e] == op->in[1];
                    if (!seen) {
                        ex->g_ext_ptr[ex->n_g_ext] = op->in[1];
                        ex->g_ext_rows[ex->n_g_ext] = op->in[1]->t.ndim ? op->in[1]->t.dims[0] : 0;
                        ex->n_g_ext++;
                    }
                }
            }
        }
        /* prologue: writes the timestep blob, then runs the leading ops */
        b.cur = k * n1;
        access(&b, tsb, -1, 1);
        for (int i = 0; i < n && !b.oom; i++) {
            rc_op *op = rc_net_op(net, i);
            if (i < n_lead && !is_type(op, i < n_pre ? "rnn_internal_accumulate_gradient_input"
                                                     : "rnn_internal_apply_link")) {
                rc_err_set(err, RC_ERR_RUNTIME, "RNN executor: step nets differ in their leading ops");
                goto fail;
            }
            int j = inst_of_op(ex, i);
            if (j) {
                b.cur = k * n1 + j;
                access(&b, tsb, -1, 0);
            }
            if (is_type(op, "rnn_internal_apply_link")) {
                access(&b, op->out[0], -2, 1);
                continue;
            }
            if (is_type(op, "rnn_internal_accumulate_gradient_input")) {
                const rnn_link_args *la = op->state;
                blob_access(ex, &b, op->in[1], t, ws[t], links, n_links, 0);
                int ext = 0;
                for (int l = 0; l < n_links; l++) ext |= links[l].external == op->in[2];
                if (ext) access(&b, op->in[2], t + la->offset, 1);
                else access(&b, op->in[2], -1, 1);
                continue;
            }
            for (int j = 0; j < op->n_in; j++) blob_access(ex, &b, op->in[j], t, ws[t], links, n_links, 0);
            for (int j = 0; j < op->n_out; j++) blob_access(ex, &b, op->out[j], t, ws[t], links, n_links, 1);
        }
    }
    if (b.oom) goto oom;
    /* CSR successor lists */
    ex->succ = malloc(sizeof(int) * (size_t)(b.n_edges + 1));
    if (!ex->succ) goto oom;
    for (int e = 0; e < b.n_edges; e++) {
        ex->succ_off[b.edge_from[e] + 1]++;
        ex->indeg0[b.edge_to[e]]++;
    }
    for (int i = 0; i < N; i++) ex->succ_off[i + 1] += ex->succ_off[i];
    {
        int *fill = calloc((size_t)N, sizeof(int));
        if (!fill) goto oom;
        for (int e = 0; e < b.n_edges; e++) {
            int f = b.edge_from[e];
            ex->succ[ex->succ_off[f] + fill[f]++] = b.edge_to[e];
        }
        free(fill);
    }
    ex->n_edges = b.n_edges;
    ex->n_ops = n;
    ex->n1 = n1;
    ex->n_inst = N;
    ex->T = T;
    builder_free(&b);
    free(links);
    if (ex->debug) debug_print(ex);
    return RC_OK;
oom:
    rc_err_set(err, RC_ERR_MEMORY, "RNN executor: out of memory building the dependency graph");
fail:
    builder_free(&b);
    free(links);
    graph_free(ex);
    return err->code;
}

/* ---------------------------------------------------------------- running */
static void trace_put(rc_rnn_exec *ex, int k, int op, int64_t start, int worker)
{
    int32_t *r = ex->trace_rec + ((size_t)k * (size_t)(ex->n_ops + 1) + (size_t)(op + 1)) * 5;
    r[0] = ex->forward ? k : ex->T - 1 - k;
    r[1] = op;
    r[2] = (int32_t)((start - ex->t0) / 1000);
    r[3] = (int32_t)((rc_rnn_now_ns() - ex->t0) / 1000);
    r[4] = worker;
}

/* Runs one instance (no lock held); records it in the trace when on. */
static rc_status run_instance(rc_rnn_exec *ex, int id, rc_net **nets, int worker, rc_err *err)
{
    int n1 = ex->n1;
    int k = id / n1, j = id % n1;
    int t = ex->forward ? k : ex->T - 1 - k;
    if (rc_interrupt_pending())
        return rc_err_set(err, RC_ERR_INTERRUPT, "interrupted at timestep %d", t);
    int64_t start = ex->trace ? rc_rnn_now_ns() : 0;
    if (j == 0) {
        rc_i32(&ex->tsb[t]->t)[0] = t;
        rc_tensor_touch(&ex->tsb[t]->t);
        for (int i = 0; i < ex->n_ops; i++) rc_net_op(nets[t], i)->timestep = t;
        if (ex->trace) trace_put(ex, k, -1, start, worker);
    }
    int first, last;
    ops_of_inst(ex, j, &first, &last);
    tl_task_k = k;
    for (int i = first; i < last; i++) {
        if (ex->trace) start = rc_rnn_now_ns();
        tl_task_op = i;
        rc_status st = rc_op_run(rc_net_op(nets[t], i), err);
        if (ex->trace) trace_put(ex, k, i, start, worker);
        if (st) return st;
    }
    return RC_OK;
}

/* Whether an instance may still be started. */
static int runnable(const rc_rnn_exec *ex)
{
    return ex->running && ex->heap_n > 0 && (!ex->failed || ex->heap[0] < ex->fail_id);
}

/* The run is over: all done, or failed with nothing before the failure left. */
static int finished(const rc_rnn_exec *ex)
{
    return ex->remaining == 0 || (ex->failed && ex->inflight == 0 && !runnable(ex));
}

/* Publishes a change of the run's state (mu held): to pollers via wgen, to
 * sleepers by a broadcast when wake. */
static void notify(rc_rnn_exec *ex, int wake)
{
    __atomic_add_fetch(&ex->wgen, 1, __ATOMIC_RELEASE);
    if (wake) pthread_cond_broadcast(&ex->cv);
}

/* Waits for a change of the run's state (mu held; the caller re-checks its
 * condition). While a run is on, polls wgen for up to spin_ns first: a
 * sleeping thread takes microseconds (tens in some VMs) to wake, and the next
 * instance is usually ready well before that. */
static void wait_change(rc_rnn_exec *ex)
{
    int64_t budget = ex->spin_ns; /* read under mu */
    if (ex->running && budget > 0) {
        /* every change bumps wgen under mu: unchanged means nothing happened
         * yet, and what happens next broadcasts (or is work its own thread
         * takes next) */
        __atomic_add_fetch(&ex->n_polling, 1, __ATOMIC_RELAXED);
        int changed = rc_spin_while_unlocked(&ex->mu, &ex->wgen, __atomic_load_n(&ex->wgen, __ATOMIC_RELAXED), budget);
        __atomic_sub_fetch(&ex->n_polling, 1, __ATOMIC_RELAXED);
        if (changed) return;
    }
    pthread_cond_wait(&ex->cv, &ex->mu);
}

/* Takes and runs ready instances until none is ready or the run is over.
 * Called with mu held; returns with mu held. */
static void drain(rc_rnn_exec *ex, rc_net **nets, int worker)
{
    rc_interrupt_scope(ex->interruptible); /* a worker's instances stop for an interrupt as its caller's would */
    while (runnable(ex)) {
        int id = heap_pop(ex);
        ex->inflight++;
        pthread_mutex_unlock(&ex->mu);
        rc_err err;
        rc_err_clear(&err);
        rc_status st = run_instance(ex, id, nets, worker, &err);
        pthread_mutex_lock(&ex->mu);
        ex->inflight--;
        ex->remaining--;
        if (st) {
            if (!ex->failed || id < ex->fail_id) {
                ex->failed = 1;
                ex->fail_id = id;
                ex->err = err;
                if (!ex->err.code) ex->err.code = st;
            }
        } else {
            int pushed = 0;
            for (int e = ex->succ_off[id]; e < ex->succ_off[id + 1]; e++) {
                int s = ex->succ[e];
                if (--ex->indeg[s] == 0) {
                    heap_push(ex, s);
                    pushed++;
                }
            }
            /* one new instance with nothing else ready: this thread takes it
             * next, so only pollers hear of it */
            if (pushed) notify(ex, pushed > 1 || ex->heap_n > 1);
        }
        if (finished(ex)) notify(ex, 1);
    }
}

/* ---------------------------------------------------------------- helping
 * A thread with no instance to run lends itself to the products of the
 * instances running: a worker's product (rc_gemm_packed, rc_sgemm's chunks,
 * a cell's rows; what the serial loop splits over its helper threads) is
 * cut into parts by its size (rc_step_split_threads) and posted on the
 * executor's help board, and a thread that polls for work, or runs out of
 * it while the product runs, takes the parts left one by one. The owner
 * takes parts too and waits for the taken ones. A part's results never depend on the thread that runs it, nor
 * on the number of parts (packed_gemm.h, rc_core.h "Step loops"), so helping
 * changes no bit. Products too small to split (rc_step_split_threads) are
 * not posted, nor those of fewer than RC_HELP_LATE_PARTS parts while no
 * thread polls. One product is posted at a time; a thread that finds the
 * board taken runs its product alone. The owner takes its parts without
 * the lock (an atomic counter), so a product nobody helps costs two lock
 * round trips more than before. Ready instances
 * go first: a polling thread helps only while none is runnable, and a part
 * lasts a fraction of a product, so a helper is soon free again. This fills
 * the gaps where the dependency graph leaves a thread nothing to run (the
 * two-layer LSTM's backward, say), with the serial loop's split. */
#define RC_HELP_LATE_PARTS 4
static __thread rc_rnn_exec *tl_exec; /* the executor whose run the calling thread works in */
static int64_t n_help_parts;          /* parts run by a thread other than their product's owner */
int64_t rc_rnn_exec_help_parts(void) { return __atomic_load_n(&n_help_parts, __ATOMIC_RELAXED); }

/* Whether a posted product has a part left to take (mu held). */
static int help_open(const rc_rnn_exec *ex)
{
    return ex->help_parts > 0 && __atomic_load_n(&ex->help_next, __ATOMIC_RELAXED) < ex->help_parts;
}

/* Takes and runs one part of the posted product (mu held; returns with mu
 * held); worker: the calling thread's id (0 the caller), for the trace. */
static void help_part(rc_rnn_exec *ex, int worker)
{
    int p = __atomic_fetch_add(&ex->help_next, 1, __ATOMIC_RELAXED), parts = ex->help_parts;
    if (p >= parts) return; /* the owner took the last part meanwhile */
    /* a part taken keeps help_left above 0, so the owner cannot close the board before it is done */
    rc_part_fn fn = ex->help_fn;
    const void *ctx = ex->help_ctx;
    int k = ex->help_k, op = ex->help_op, trace = ex->trace && ex->part_rec;
    pthread_mutex_unlock(&ex->mu);
    int64_t start = trace ? rc_rnn_now_ns() : 0;
    fn(ctx, p, parts);
    int64_t end = trace ? rc_rnn_now_ns() : 0;
    __atomic_add_fetch(&n_help_parts, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&ex->mu);
    if (trace && ex->part_n == ex->part_cap && ex->part_cap < INT_MAX / 2) { /* full: twice the room */
        int32_t *grown = realloc(ex->part_rec, (size_t)ex->part_cap * 2 * 5 * sizeof(int32_t));
        if (grown) { /* else this part goes unrecorded (out of memory; the run goes on) */
            ex->part_rec = grown;
            ex->part_cap *= 2;
        }
    }
    if (trace && ex->part_n < ex->part_cap) {
        int32_t *r = ex->part_rec + (size_t)ex->part_n++ * 5;
        r[0] = ex->forward ? k : ex->T - 1 - k;
        r[1] = op;
        r[2] = (int32_t)((start - ex->t0) / 1000);
        r[3] = (int32_t)((end - ex->t0) / 1000);
        r[4] = worker;
    }
    if (__atomic_sub_fetch(&ex->help_left, 1, __ATOMIC_RELEASE) == 0 && ex->help_sleeper)
        pthread_cond_broadcast(&ex->cv);
}

int rc_step_split_threads(double work, double part_min)
{
    int n = rc_step_blas_threads();
    if (n == 1 && tl_exec && rc_flag_rnn_executor_help()) {
        double parts = work / part_min; /* at least 2 from part_min on, as the serial loop splits */
        n = parts >= RC_HELP_MAX_PARTS ? RC_HELP_MAX_PARTS : parts >= 2 ? (int)parts : parts >= 1 ? 2 : 1;
        /* work of fewer than 4 parts (a product under 4M multiply-adds, a cell under 16384
         * elements) is split only while a thread polls: one that frees up later would find little
         * left, and such posts cost ~1% at 4 LSTM layers, hidden 256 / batch 16, where the
         * threads are nearly always busy; larger products are posted for threads freeing up
         * while they run (two LSTM layers there: 1.09-1.10x the serial loop, against 1.05-1.07x
         * when posted only while a thread polls) */
        if (n < RC_HELP_LATE_PARTS && __atomic_load_n(&tl_exec->n_polling, __ATOMIC_RELAXED) == 0) n = 1;
    }
    return n;
}

int rc_step_help_run(int parts, rc_part_fn fn, const void *ctx)
{
    rc_rnn_exec *ex = tl_exec;
    if (!ex) return 0;
    pthread_mutex_lock(&ex->mu);
    if (ex->help_parts || !ex->running) {
        pthread_mutex_unlock(&ex->mu); /* board taken: alone */
        for (int p = 0; p < parts; p++) fn(ctx, p, parts);
        return 1;
    }
    ex->help_fn = fn;
    ex->help_ctx = ctx;
    ex->help_parts = parts;
    ex->help_k = tl_task_k;
    ex->help_op = tl_task_op;
    __atomic_store_n(&ex->help_next, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ex->help_left, parts, __ATOMIC_RELAXED);
    notify(ex, 0); /* the pollers see it; sleepers are not woken for a product */
    pthread_mutex_unlock(&ex->mu);
    for (;;) { /* the owner's parts: no lock per part */
        int p = __atomic_fetch_add(&ex->help_next, 1, __ATOMIC_RELAXED);
        if (p >= parts) break;
        fn(ctx, p, parts);
        __atomic_sub_fetch(&ex->help_left, 1, __ATOMIC_RELEASE);
    }
    int r;
    pthread_mutex_lock(&ex->mu);
    while ((r = __atomic_load_n(&ex->help_left, __ATOMIC_ACQUIRE)) > 0) {
        /* the parts left are running on helpers: poll, or sleep if polling is off */
        if (rc_spin_while_unlocked(&ex->mu, &ex->help_left, r, ex->spin_ns)) continue;
        ex->help_sleeper = 1;
        pthread_cond_wait(&ex->cv, &ex->mu);
        ex->help_sleeper = 0;
    }
    ex->help_parts = 0;
    __atomic_store_n(&ex->help_next, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ex->mu);
    return 1;
}

static void *worker_main(void *p)
{
    rc_rnn_exec *ex = p;
    tl_exec = ex;
    rc_step_blas_set_threads(1); /* a worker's products run on the worker and idle helpers ("Helping") */
    pthread_mutex_lock(&ex->mu);
    int id = ++ex->n_ids; /* 1 .. num_threads - 1, in the order the workers start */
    for (;;) {
        while (!ex->stop && !runnable(ex) && !help_open(ex)) wait_change(ex);
        if (ex->stop) break;
        if (runnable(ex)) drain(ex, ex->g_nets, id);
        else help_part(ex, id);
    }
    pthread_mutex_unlock(&ex->mu);
    return NULL;
}

static int fork_gen; /* forks of this process's ancestors and itself (bumped in the child) */
static void after_fork_child(void) { __atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED); }
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_init(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* 1 in a child forked after ex's workers, mutex and condition variable were made. */
static int forked(const rc_rnn_exec *ex) { return ex->fork_gen != __atomic_load_n(&fork_gen, __ATOMIC_RELAXED); }

/* In a forked child: a fresh mutex and condition variable, no workers (they
 * start again at the next parallel run). */
static rc_status reset_after_fork(rc_rnn_exec *ex, rc_err *err)
{
    if (pthread_mutex_init(&ex->mu, NULL)) return rc_err_set(err, RC_ERR_RUNTIME, "RNN executor: pthread_mutex_init failed");
    if (pthread_cond_init(&ex->cv, NULL)) {
        pthread_mutex_destroy(&ex->mu);
        return rc_err_set(err, RC_ERR_RUNTIME, "RNN executor: pthread_cond_init failed");
    }
    ex->n_started = ex->n_ids = 0;
    ex->stop = ex->running = ex->inflight = 0;
    ex->n_polling = ex->help_parts = ex->help_next = ex->help_left = ex->help_sleeper = 0;
    ex->fork_gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
    return RC_OK;
}

rc_rnn_exec *rc_rnn_exec_new(const rc_netdef *def, int n_links, char *const *link_internal,
                             char *const *link_external, const int64_t *link_offset, int forward, int num_threads,
                             int debug, rc_err *err)
{
    (void)def; (void)n_links; (void)link_internal; (void)link_external; (void)link_offset;
    rc_rnn_exec *ex = calloc(1, sizeof *ex);
    if (!ex) {
        rc_err_set(err, RC_ERR_MEMORY, "out of memory creating the RNN executor");
        return NULL;
    }
    ex->forward = forward;
    ex->num_threads = num_threads > 0 ? num_threads : rc_num_cores();
    ex->debug = debug;
    ex->T = -1;
    pthread_once(&fork_once, fork_init);
    ex->fork_gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
    if (pthread_mutex_init(&ex->mu, NULL)) { free(ex); rc_err_set(err, RC_ERR_RUNTIME, "pthread_mutex_init failed"); return NULL; }
    if (pthread_cond_init(&ex->cv, NULL)) {
        pthread_mutex_destroy(&ex->mu);
        free(ex);
        rc_err_set(err, RC_ERR_RUNTIME, "pthread_cond_init failed");
        return NULL;
    }
    return ex;
}

void rc_rnn_exec_free(rc_rnn_exec *ex)
{
    if (!ex) return;
    if (!forked(ex)) { /* in a forked child there are no workers to stop, and mu / cv are abandoned */
        pthread_mutex_lock(&ex->mu);
        ex->stop = 1;
        notify(ex, 1);
        pthread_mutex_unlock(&ex->mu);
        for (int i = 0; i < ex->n_started; i++) pthread_join(ex->threads[i], NULL);
        pthread_cond_destroy(&ex->cv);
        pthread_mutex_destroy(&ex->mu);
    }
    free(ex->threads);
    graph_free(ex);
    free(ex);
}

static void start_workers(rc_rnn_exec *ex)
{
    int want = ex->num_threads - 1;
    if (ex->n_started >= want) return;
    pthread_t *th = realloc(ex->threads, sizeof *th * (size_t)want);
    if (!th) return;
    ex->threads = th;
    while (ex->n_started < want) {
        if (pthread_create(&ex->threads[ex->n_started], NULL, worker_main, ex))
            return; /* fewer workers: still correct, the caller runs the rest */
        ex->n_started++;
    }
}

void rc_rnn_exec_set_trace(rc_rnn_exec *ex, int on) { ex->trace = on; }

const int32_t *rc_rnn_exec_trace(const rc_rnn_exec *ex, int *n_records)
{
    *n_records = ex->trace_rec ? ex->T * (ex->n_ops + 1) : 0;
    return ex->trace_rec;
}

const int32_t *rc_rnn_exec_trace_parts(const rc_rnn_exec *ex, int *n_records)
{
    *n_records = ex->part_rec ? ex->part_n : 0;
    return ex->part_rec;
}

rc_status rc_rnn_exec_parallelism(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws, const char *timestep, int T,
                                  uint64_t gen, const double *op_cost, int n_cost, double *parallelism, rc_err *err)
{
    *parallelism = 0.0;
    if (T <= 0) return RC_OK;
    rc_status st;
    if (!graph_valid(ex, nets, ws, T, gen)) {
        if ((st = graph_build(ex, nets, ws, timestep, T, err))) return st;
        ex->gen = gen;
    }
    if (n_cost != ex->n_ops) return RC_OK; /* costs of other nets: not measured */
    int n1 = ex->n1;
    double *cost = calloc((size_t)n1, sizeof *cost), *start = calloc((size_t)ex->n_inst, sizeof *start);
    if (!cost || !start) {
        free(cost);
        free(start);
        return rc_err_set(err, RC_ERR_MEMORY, "RNN executor: out of memory measuring the dependency graph");
    }
    double per_step = 0;
    for (int j = 0; j < n1; j++) {
        int first, last;
        ops_of_inst(ex, j, &first, &last);
        for (int i = first; i < last; i++) cost[j] += op_cost[i] > 0 ? op_cost[i] : 0;
        per_step += cost[j];
    }
    /* instance ids follow the serial order and every edge points forward, so
     * one pass in id order is a topological one */
    double longest = 0;
    for (int i = 0; i < ex->n_inst; i++) {
        double fin = start[i] + cost[i % n1];
        if (fin > longest) longest = fin;
        for (int e = ex->succ_off[i]; e < ex->succ_off[i + 1]; e++)
            if (start[ex->succ[e]] < fin) start[ex->succ[e]] = fin;
    }
    free(cost);
    free(start);
    *parallelism = longest > 0 ? per_step * T / longest : 1.0;
    return RC_OK;
}

rc_status rc_rnn_exec_run(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws, const char *timestep, int T,
                          int max_parallel, uint64_t gen, rc_err *err)
{
    (void)max_parallel; /* implied by workspace reuse (see the prologue regions) */
    if (T < 0) return rc_err_set(err, RC_ERR_VALUE, "RNN executor: negative number of steps %d", T);
    if (T == 0) return RC_OK;
    rc_status st;
    if (forked(ex) && (st = reset_after_fork(ex, err))) return st;
    if (!graph_valid(ex, nets, ws, T, gen)) {
        if ((st = graph_build(ex, nets, ws, timestep, T, err))) return st;
        ex->gen = gen;
    }
    if (ex->trace) {
        free(ex->trace_rec);
        ex->trace_rec = calloc((size_t)ex->T * (size_t)(ex->n_ops + 1) * 5, sizeof(int32_t));
        if (!ex->trace_rec) return rc_err_set(err, RC_ERR_MEMORY, "out of memory for the executor trace");
        free(ex->part_rec);
        ex->part_cap = ex->T * (ex->n_ops + 1);
        ex->part_rec = malloc((size_t)ex->part_cap * 5 * sizeof(int32_t));
        if (!ex->part_rec) {
            ex->part_cap = 0;
            return rc_err_set(err, RC_ERR_MEMORY, "out of memory for the executor trace");
        }
        ex->t0 = rc_rnn_now_ns();
    }
    ex->part_n = 0;
    int prev_step_threads = 0;
    rc_rnn_exec *prev_exec = NULL;
    if (ex->num_threads > 1) {
        rc_blas_executor_enter();
        start_workers(ex);
        prev_step_threads = rc_step_blas_set_threads(1); /* the caller runs tasks beside the workers */
        prev_exec = tl_exec;
        tl_exec = ex;
    }
    pthread_mutex_lock(&ex->mu);
    memcpy(ex->indeg, ex->indeg0, sizeof(int) * (size_t)ex->n_inst);
    ex->heap_n = 0;
    for (int i = 0; i < ex->n_inst; i++)
        if (ex->indeg[i] == 0) heap_push(ex, i);
    ex->remaining = ex->n_inst;
    ex->inflight = 0;
    ex->failed = 0;
    ex->fail_id = 0;
    ex->err.code = RC_OK;
    ex->err.msg[0] = 0;
    ex->running = 1;
    ex->interruptible = rc_interrupt_in_scope();
    ex->spin_ns = ex->num_threads > 1 && ex->num_threads <= rc_num_cores() ? rc_flag_spin_ns() : 0;
    notify(ex, 1);
    for (;;) {
        drain(ex, nets, 0);
        if (finished(ex)) break;
        if (help_open(ex)) help_part(ex, 0);
        else wait_change(ex);
    }
    ex->running = 0;
    notify(ex, 0); /* pollers go to sleep now */
    ex->heap_n = 0;
    int failed = ex->failed;
    rc_err e = ex->err;
    pthread_mutex_unlock(&ex->mu);
    if (ex->num_threads > 1) {
        tl_exec = prev_exec;
        rc_step_blas_set_threads(prev_step_threads);
        rc_blas_executor_leave();
    }
    if (failed) {
        *err = e;
        return e.code ? e.code : RC_ERR_RUNTIME;
    }
    return RC_OK;
}
