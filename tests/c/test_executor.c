/* The RNN executor without Python: a stacked "cumulative sum" RNN (layer l:
 * x_l[t] = x_l[t-1] + x_{l-1}[t]) run by RecurrentNetwork with the executor on
 * (1..8 threads) must equal the serial run bitwise, for any T, forward-only
 * with rotating workspaces too; a failing step raises an error naming the
 * timestep and the next run works. Run under TSan by tools/sanitize.sh. */
#include "rc_test.h"

static int add_arg(rc_opdef *od, rc_arg *a)
{
    rc_arg *na = realloc(od->args, sizeof *na * (size_t)(od->n_arg + 1));
    if (!na) return -1;
    od->args = na;
    od->args[od->n_arg++] = *a;
    return 0;
}

static void arg_strings(rc_opdef *od, const char *name, int n, const char *const *v)
{
    rc_arg a;
    memset(&a, 0, sizeof a);
    a.name = strdup(name);
    a.kind = RC_ARG_STRINGS;
    a.n = n;
    a.strings = calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) a.strings[i] = strdup(v[i]);
    add_arg(od, &a);
}

static void arg_ints(rc_opdef *od, const char *name, int n, const int64_t *v)
{
    rc_arg a;
    memset(&a, 0, sizeof a);
    a.name = strdup(name);
    a.kind = RC_ARG_INTS;
    a.n = n;
    a.ints = malloc(sizeof(int64_t) * (size_t)(n + 1));
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
    add_arg(od, &a);
}

static void arg_net(rc_opdef *od, const char *name, rc_netdef *nd)
{
    rc_arg a;
    memset(&a, 0, sizeof a);
    a.name = strdup(name);
    a.kind = RC_ARG_NET;
    a.net = nd; /* ownership moves to the opdef */
    add_arg(od, &a);
}

#define MAXL 6

/* Net "main": one RecurrentNetwork over `input` with L cumulative-sum layers.
 * with_aux adds a link reading `aux` rows (to make a chosen timestep fail). */
static rc_netdef *build(int L, int executor, int threads, int fwd_only, int64_t num_ws, int with_aux)
{
    char names[3 * MAXL + 2][32];
    const char *li[3 * MAXL + 2], *le[3 * MAXL + 2];
    int64_t lo[3 * MAXL + 2];
    int nl = 0;
    rc_netdef *step = rc_netdef_new("step");
    for (int l = 0; l < L; l++) {
        char prev[32], x[32], in[32];
        snprintf(prev, sizeof prev, "x%d_prev", l);
        snprintf(x, sizeof x, "x%d", l);
        if (l == 0) snprintf(in, sizeof in, "input_t");
        else snprintf(in, sizeof in, "x%d", l - 1);
        const char *ins[2] = {prev, in}, *outs[1] = {x};
        rct_add_op(step, "Sum", 2, ins, 1, outs);
        snprintf(names[nl], 32, "%s", prev);
        li[nl] = names[nl];
        snprintf(names[3 * MAXL + 1], 32, "x%d_states", l);
        le[nl] = strdup(names[3 * MAXL + 1]);
        lo[nl++] = 0;
        snprintf(names[nl], 32, "%s", x);
        li[nl] = names[nl];
        le[nl] = strdup(le[nl - 1]);
        lo[nl++] = 1;
    }
    li[nl] = "input_t";
    le[nl] = strdup("input");
    lo[nl++] = 0;
    if (with_aux) {
        const char *ins[2] = {"aux_t", "x0"}, *outs[1] = {"aux_sum"};
        rct_add_op(step, "Sum", 2, ins, 1, outs);
        li[nl] = "aux_t";
        le[nl] = strdup("aux");
        lo[nl++] = 0;
    }
    rc_netdef *nd = rc_netdef_new("main");
    const char *ins[1 + MAXL];
    char initn[MAXL][32];
    ins[0] = "input";
    for (int l = 0; l < L; l++) {
        snprintf(initn[l], 32, "init%d", l);
        ins[1 + l] = initn[l];
    }
    const char *outs[3] = {"x_all", "x_last", "step_ws"};
    rc_opdef *od = rct_add_op(nd, "RecurrentNetwork", 1 + L, ins, 3, outs);
    const char *states[MAXL];
    char sn[MAXL][32];
    int64_t ids[MAXL];
    for (int l = 0; l < L; l++) {
        snprintf(sn[l], 32, "x%d_states", l);
        states[l] = sn[l];
        ids[l] = 1 + l;
    }
    arg_strings(od, "recurrent_states", L, states);
    arg_ints(od, "initial_recurrent_state_ids", L, ids);
    arg_strings(od, "link_internal", nl, li);
    arg_strings(od, "link_external", nl, le);
    arg_ints(od, "link_offset", nl, lo);
    const char *asrc[2] = {sn[L - 1], sn[L - 1]}, *adst[2] = {"x_all", "x_last"};
    int64_t aoff[2] = {1, -1};
    arg_strings(od, "alias_src", 2, asrc);
    arg_strings(od, "alias_dst", 2, adst);
    arg_ints(od, "alias_offset", 2, aoff);
    arg_net(od, "step_net", step);
    if (!fwd_only) {
        /* a backward net makes the op keep one workspace per timestep */
        rc_netdef *b = rc_netdef_new("bstep");
        const char *bi[1] = {"x0_grad"}, *bo[1] = {"input_t_grad"};
        rct_add_op(b, "Copy", 1, bi, 1, bo);
        arg_net(od, "backward_step_net", b);
    } else if (num_ws > 0) {
        rc_opdef_set_arg_i(od, "num_workspaces", num_ws);
    }
    rc_opdef_set_arg_i(od, "enable_rnn_executor", executor);
    rc_opdef_set_arg_i(od, "rnn_executor.num_threads", threads);
    for (int i = 0; i < nl; i++) free((void *)le[i]);
    return nd;
}

static void feed(rc_workspace *ws, int T, int N, int D, int L, unsigned seed)
{
    int64_t dims[3] = {T, N, D};
    rc_blob *b = rct_feed_f32(ws, "input", 3, dims, 0.f);
    float *p = rc_f32(&b->t);
    for (int64_t i = 0; i < (int64_t)T * N * D; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    int64_t idims[3] = {1, N, D};
    for (int l = 0; l < L; l++) {
        char nm[16];
        snprintf(nm, sizeof nm, "init%d", l);
        rct_feed_f32(ws, nm, 3, idims, 0.25f * (float)l);
    }
}

/* Runs one configuration in a fresh workspace, returns a malloc'd copy of x_all. */
static float *run_once(int L, int executor, int threads, int fwd_only, int64_t num_ws, int T, int N, int D,
                       int64_t *numel)
{
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    feed(ws, T, N, D, L, 7u);
    rc_netdef *nd = build(L, executor, threads, fwd_only, num_ws, 0);
    rc_net *net = rc_net_create(ws, nd, &err);
    float *out = NULL;
    if (!net) {
        RCT_FAIL_AT("create: %s", err.msg);
        goto done;
    }
    for (int rep = 0; rep < 2; rep++) {
        rc_status st = rc_net_run(net, &err);
        if (st) {
            RCT_FAIL_AT("run: %s", err.msg);
            goto done;
        }
    }
    rc_blob *b = rc_ws_get(ws, "x_all");
    *numel = rc_tensor_numel(&b->t);
    out = malloc(sizeof(float) * (size_t)(*numel + 1));
    memcpy(out, rc_f32(&b->t), sizeof(float) * (size_t)*numel);
done:
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
    return out;
}

static void test_bitwise_equal(void)
{
    const int Ts[] = {0, 1, 2, 7, 50};
    const int threads[] = {1, 2, 3, 8};
    for (int fo = 0; fo < 2; fo++)
        for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++) {
            int T = Ts[ti];
            int64_t n_ref = 0, n = 0;
            rc_flag_set_rnn_executor(0);
            float *ref = run_once(4, 1, 0, fo, fo ? 3 : 0, T, 3, 5, &n_ref);
            rc_flag_set_rnn_executor(1);
            REQUIRE(ref != NULL);
            CHECK_EQ(n_ref, (int64_t)T * 3 * 5);
            /* reference values: cumulative sums */
            for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
                float *got = run_once(4, 1, threads[k], fo, fo ? 3 : 0, T, 3, 5, &n);
                REQUIRE(got != NULL);
                CHECK_EQ(n, n_ref);
                CHECK(memcmp(got, ref, sizeof(float) * (size_t)n) == 0);
                free(got);
            }
            free(ref);
        }
}

static void test_failure_then_recovery(void)
{
    rc_err err;
    rc_err_clear(&err);
    rc_flag_set_rnn_executor(1);
    for (int executor = 0; executor < 2; executor++) {
        rc_workspace *ws = rc_ws_new(NULL);
        int T = 9, N = 2, D = 3;
        feed(ws, T, N, D, 2, 3u);
        int64_t adims[3] = {4, N, D}; /* only 4 rows: timestep 4 fails */
        rct_feed_f32(ws, "aux", 3, adims, 1.f);
        rc_netdef *nd = build(2, executor, 4, 0, 0, 1);
        rc_net *net = rc_net_create(ws, nd, &err);
        REQUIRE(net != NULL);
        for (int rep = 0; rep < 3; rep++) {
            CHECK_ERR(rc_net_run(net, &err), RC_ERR_INDEX, err, "timestep 4");
            CHECK_HAS(err.msg, "aux");
        }
        int64_t okdims[3] = {T, N, D};
        rct_feed_f32(ws, "aux", 3, okdims, 1.f);
        CHECK_OK(rc_net_run(net, &err), err);
        rc_blob *b = rc_ws_get(ws, "aux_sum");
        (void)b;
        rc_net_free(net);
        rc_netdef_free(nd);
        rc_ws_free(ws);
    }
}

static void test_stress(void)
{
    unsigned seed = 12345u;
    rc_flag_set_rnn_executor(1);
    for (int it = 0; it < 60; it++) {
        seed = seed * 1103515245u + 12345u;
        int T = (int)((seed >> 8) % 40);
        int th = 1 + (int)((seed >> 16) % 6);
        int fo = (int)((seed >> 4) & 1);
        /* waiting by polling, by sleeping at once, and by a poll budget that
         * runs out mid-run (1 us) */
        const int64_t spins[] = {RC_SPIN_NS_DEFAULT, 0, 1000};
        rc_flag_set_spin_ns(spins[it % 3]);
        int64_t n_ref = 0, n = 0;
        rc_flag_set_rnn_executor(0);
        float *ref = run_once(3, 1, 0, fo, 2, T, 2, 4, &n_ref);
        rc_flag_set_rnn_executor(1);
        float *got = run_once(3, 1, th, fo, 2, T, 2, 4, &n);
        REQUIRE(ref && got);
        CHECK(n == n_ref && memcmp(got, ref, sizeof(float) * (size_t)n) == 0);
        free(ref);
        free(got);
    }
    rc_flag_set_spin_ns(RC_SPIN_NS_DEFAULT);
}

int main(void)
{
    /* these tests run the executor on tiny nets: no serial fallback */
    rc_flag_set_rnn_executor_min_op_ns(0);
    RUN(test_bitwise_equal);
    RUN(test_failure_then_recovery);
    RUN(test_stress);
    return TEST_REPORT();
}
