/* Nets: an ordered list of ops created in one workspace, run in order. */
#include "rc_core.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rc_net {
    rc_netdef *def;   /* owned copy */
    rc_op **ops;      /* owned */
    int n_ops;
};

void rc_net_free(rc_net *net)
{
    if (!net) return;
    for (int i = 0; i < net->n_ops; i++) rc_op_free(net->ops[i]);
    free(net->ops);
    rc_netdef_free(net->def);
    free(net);
}

/* Shape checks at creation: every op with a schema check whose inputs all
 * hold tensors that no earlier op of the net writes (so their shapes are the
 * ones the op will see, unless the caller feeds new ones before running). The
 * blobs written so far are kept in a pointer set (open addressing). An op
 * that may write any blob (a Python op with pass_workspace=1) ends the checks:
 * the ops after it are checked when they run. */
static rc_status check_shapes(rc_net *net, rc_err *err)
{
    size_t cap = 16;
    for (int i = 0; i < net->n_ops; i++) cap += 2 * (size_t)net->ops[i]->n_out;
    const rc_blob **set = calloc(cap, sizeof *set);
    if (!set) return rc_err_set(err, RC_ERR_MEMORY, "out of memory checking shapes");
    rc_status st = RC_OK;
    for (int i = 0; i < net->n_ops && !st; i++) {
        rc_op *op = net->ops[i];
        int known = op->schema->check != NULL;
        for (int j = 0; j < op->n_in && known; j++) {
            const rc_blob *b = op->in[j];
            if (b->t.dtype == RC_UNDEF) known = 0;
            for (size_t h = ((uintptr_t)b >> 4) % cap; known && set[h]; h = (h + 1) % cap)
                if (set[h] == b) known = 0;
        }
        if (known && (st = op->schema->check(op, err)) != RC_OK && err) err->op_pos = i;
        if (rc_op_writes_any_blob(op)) break;
        for (int j = 0; j < op->n_out; j++) {
            const rc_blob *b = op->out[j];
            size_t h = ((uintptr_t)b >> 4) % cap;
            while (set[h] && set[h] != b) h = (h + 1) % cap;
            set[h] = b;
        }
    }
    free(set);
    return st;
}

/* The net types Caffe2 (its last release, a CPU build) accepted: those it
 * registered (REGISTER_NET in caffe2/core/net_simple.cc, net_simple_refcount.cc,
 * net_async_scheduling.cc, net_parallel.cc, net_dag.cc) and the legacy ones its
 * CreateNet redirected (net.cc defaultOverrides: dag, prof_dag, async_dag and
 * async_polling to async_scheduling; async_simple and rnn to simple). "" is
 * "simple". Any other type made Caffe2's CreateNet fail ("Error when creating
 * the network. Maybe net type: [X] does not exist"); so does it here. The
 * GPU-only singlethread_async is refused, as in a Caffe2 built without CUDA. */
static const char *const net_types[] = {"simple", "dag", "async_scheduling", "async_dag", "async_polling",
                                        "async_simple", "prof_dag", "parallel", "simple_refcount", "rnn"};
#define N_NET_TYPES ((int)(sizeof net_types / sizeof net_types[0]))

rc_status rc_net_check_type(const rc_netdef *def, const char *what, rc_err *err)
{
    const char *t = def->type ? def->type : "";
    if (!t[0]) return RC_OK;
    for (int i = 0; i < N_NET_TYPES; i++)
        if (strcmp(t, net_types[i]) == 0) return RC_OK;
    char list[256];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; i < N_NET_TYPES; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", net_types[i]);
    int len = (int)strnlen(t, 81); /* a long type is cut (at a UTF-8 character boundary) */
    const char *more = "";
    if (len > 80) {
        len = 80;
        while (len > 0 && ((unsigned char)t[len] & 0xc0) == 0x80) len--;
        more = "...";
    }
    return rc_err_set(err, RC_ERR_VALUE, "%s '%.120s': net type '%.*s%s' is not one Caffe2 registered (its "
                      "CreateNet failed too: \"Maybe net type: [%.*s%s] does not exist\"); the accepted types are "
                      "\"\" (simple), %s; every one runs its ops in order here", what ? what : "net",
                      def->name ? def->name : "", len, t, more, len, t, more, list);
}

rc_net *rc_net_create(rc_workspace *ws, const rc_netdef *def, rc_err *err)
{
    if (rc_net_check_type(def, NULL, err)) return NULL;
    rc_net *net = calloc(1, sizeof *net);
    if (!net) goto oom;
    if (!(net->def = rc_netdef_clone(def))) goto oom;
    if (def->n_op && !(net->ops = calloc((size_t)def->n_op, sizeof *net->ops))) goto oom;
    for (int i = 0; i < def->n_op; i++) {
        net->ops[i] = rc_op_create(ws, &def->ops[i], i, err);
        if (!net->ops[i]) {
            if (err) err->op_pos = i;
            if (def->name && def->name[0]) rc_err_prefix(err, "net '%s': ", def->name);
            rc_net_free(net);
            return NULL;
        }
        net->n_ops = i + 1;
    }
    if (check_shapes(net, err)) {
        if (def->name && def->name[0]) rc_err_prefix(err, "net '%s': ", def->name);
        rc_net_free(net);
        return NULL;
    }
    return net;
oom:
    rc_net_free(net);
    rc_err_set(err, RC_ERR_MEMORY, "out of memory creating net '%s'", def->name ? def->name : "");
    return NULL;
}

rc_status rc_net_run(rc_net *net, rc_err *err)
{
    for (int i = 0; i < net->n_ops; i++) {
        if (rc_interrupt_pending())
            return rc_err_set(err, RC_ERR_INTERRUPT, "net '%s' interrupted before op #%d", net->def->name, i);
        rc_status st = rc_op_run(net->ops[i], err);
        if (st) {
            if (err) err->op_pos = i;
            return st;
        }
    }
    return RC_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static rc_status bench_run(rc_net *net, const char *phase, int64_t run, rc_err *err)
{
    rc_status st = rc_net_run(net, err);
    if (st && st != RC_ERR_INTERRUPT) rc_err_prefix(err, "BenchmarkNet: %s run %lld failed: ", phase, (long long)run);
    return st;
}

rc_status rc_net_benchmark(rc_net *net, int64_t warmup_runs, int64_t main_runs, int run_individual, double *out,
                           rc_err *err)
{
    const char *name = net->def->name ? net->def->name : "";
    if (warmup_runs < 0 || main_runs < 1)
        return rc_err_set(err, RC_ERR_VALUE, "BenchmarkNet '%s': warmup_runs must be >= 0 and main_runs >= 1, got "
                          "%lld and %lld", name, (long long)warmup_runs, (long long)main_runs);
    for (int i = 0; i <= net->n_ops; i++) out[i] = 0.0;
    for (int64_t r = 0; r < warmup_runs; r++) {
        rc_status st = bench_run(net, "warmup", r, err);
        if (st) return st;
    }
    double t0 = now_ms();
    for (int64_t r = 0; r < main_runs; r++) {
        rc_status st = bench_run(net, "main", r, err);
        if (st) return st;
    }
    out[0] = (now_ms() - t0) / (double)main_runs;
    if (!run_individual) return RC_OK;
    for (int64_t r = 0; r < main_runs; r++) {
        for (int i = 0; i < net->n_ops; i++) {
            if (rc_interrupt_pending())
                return rc_err_set(err, RC_ERR_INTERRUPT, "net '%s' interrupted before op #%d", name, i);
            double t = now_ms();
            rc_status st = rc_op_run(net->ops[i], err);
            if (st) {
                err->op_pos = i;
                if (st != RC_ERR_INTERRUPT)
                    rc_err_prefix(err, "BenchmarkNet: individual run %lld failed: ", (long long)r);
                return st;
            }
            out[1 + i] += now_ms() - t;
        }
    }
    for (int i = 0; i < net->n_ops; i++) out[1 + i] /= (double)main_runs;
    return RC_OK;
}

int rc_net_num_ops(const rc_net *net) { return net->n_ops; }
rc_op *rc_net_op(const rc_net *net, int i) { return net->ops[i]; }
const rc_netdef *rc_net_def(const rc_net *net) { return net->def; }
