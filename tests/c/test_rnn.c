/* RecurrentNetwork forward with the link/alias logic and the RNN executor:
 * a synthetic tanh RNN  h_t = tanh(x_t W^T + b + h_{t-1} U^T + c)  run
 *  - serially and with the executor at 1..8 threads: outputs bitwise equal,
 *  - against a plain C reference,
 *  - with T = 0, 1, short and long sequences, rotating workspaces
 *    (forward-only) and one workspace per step (with a backward net),
 *  - with several ops running at once from different threads (TSan),
 *  - with errors in a step (the op stays usable),
 *  - with every allocation of creating and running the net failing in turn
 *    (RC_ERR_MEMORY or a fallback; no leak: LeakSanitizer under ASan and the
 *    live count; the next run is bitwise the same),
 *  - re-run with a changing T and N,
 *  - with the step-weight packs kept between runs while the weights are
 *    unchanged, and packed again after a recorded write (pack reuse),
 *  - with executor threads helping split each other's products. */
#include "rc_test.h"
#include "kernels/packed_gemm.h"
#include "rnn/rnn_internal.h"
#include "testing/alloc_fail.h"
#include <math.h>
#include <pthread.h>

enum { D = 3, S = 4 };

static int set_strings(rc_opdef *od, const char *name, int n, const char *const *v)
{
    rc_arg *a = rct_arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_STRINGS;
    a->n = 0;
    if (n && !(a->strings = calloc((size_t)n, sizeof(char *)))) return -1;
    for (int i = 0; i < n; i++) {
        if (!(a->strings[i] = malloc(strlen(v[i]) + 1))) return -1;
        strcpy(a->strings[i], v[i]);
        a->n = i + 1;
    }
    return 0;
}

static int set_net(rc_opdef *od, const char *name, rc_netdef *nd /* taken */)
{
    rc_arg *a = rct_arg_slot(od, name);
    if (!a) { rc_netdef_free(nd); return -1; }
    a->kind = RC_ARG_NET;
    a->net = nd;
    return 0;
}

static rc_netdef *step_net(void)
{
    rc_netdef *nd = rc_netdef_new("rnn_step");
    if (!nd) return NULL;
    const char *f1i[] = {"input_t", "W", "b"}, *f1o[] = {"xw"};
    const char *f2i[] = {"h_prev", "U", "c"}, *f2o[] = {"hu"};
    const char *ai[] = {"xw", "hu"}, *ao[] = {"pre"};
    const char *ti[] = {"pre"}, *to[] = {"h"};
    rc_opdef *f1, *f2;
    /* input_t and h_prev are (1, N, .) row views: FC flattens them at axis 2 */
    if (!(f1 = rct_add_op(nd, "FC", 3, f1i, 1, f1o)) || rc_opdef_set_arg_i(f1, "axis", 2) ||
        !(f2 = rct_add_op(nd, "FC", 3, f2i, 1, f2o)) || rc_opdef_set_arg_i(f2, "axis", 2) ||
        !rct_add_op(nd, "Add", 2, ai, 1, ao) || !rct_add_op(nd, "Tanh", 1, ti, 1, to)) {
        rc_netdef_free(nd);
        return NULL;
    }
    return nd;
}

/* The RecurrentNetwork op definition (in nd): inputs X, h0, W, b, U, c;
 * outputs h_all (T x N x S), h_last (1 x N x S), the step workspaces. */
static rc_opdef *rnn_opdef(rc_netdef *nd, int executor, int threads, int with_backward, int num_ws,
                           const char *scratch)
{
    const char *ins[] = {"X", "h0", "W", "b", "U", "c"}, *outs[] = {"h_all", "h_last", scratch};
    rc_opdef *od = rct_add_op(nd, "RecurrentNetwork", 6, ins, 3, outs);
    if (!od) return NULL;
    const char *states[] = {"h_states"};
    const int64_t init_ids[] = {1};
    const char *li[] = {"input_t", "h_prev", "h"}, *le[] = {"X", "h_states", "h_states"};
    const int64_t lo[] = {0, 0, 1}, lw[] = {1, 1, 1};
    const char *as[] = {"h_states", "h_states"}, *ad[] = {"h_all", "h_last"};
    const int64_t ao[] = {1, -1};
    if (set_net(od, "step_net", step_net()) || set_strings(od, "recurrent_states", 1, states) ||
        rct_set_ints(od, "initial_recurrent_state_ids", 1, init_ids) || set_strings(od, "link_internal", 3, li) ||
        set_strings(od, "link_external", 3, le) || rct_set_ints(od, "link_offset", 3, lo) ||
        rct_set_ints(od, "link_window", 3, lw) || set_strings(od, "alias_src", 2, as) ||
        set_strings(od, "alias_dst", 2, ad) || rct_set_ints(od, "alias_offset", 2, ao) ||
        rc_opdef_set_arg_i(od, "enable_rnn_executor", executor) ||
        rc_opdef_set_arg_i(od, "rnn_executor.num_threads", threads))
        return NULL;
    if (with_backward) {
        rc_netdef *bw = rc_netdef_new("rnn_step_backward"); /* only makes the op keep one workspace per step */
        if (!bw || set_net(od, "backward_step_net", bw)) return NULL;
    }
    if (num_ws && rc_opdef_set_arg_i(od, "num_workspaces", num_ws)) return NULL;
    return od;
}

/* Feeds X (T, N, D), h0 (N, H), W (H, D), b (H), U (H, H), c (H) into ws (H: the hidden size). */
static int feed_sized(rc_workspace *ws, int T, int N, int64_t H, int seed)
{
    const int64_t dx[] = {T, N, D}, dh[] = {N, H}, dw[] = {H, D}, ds[] = {H}, du[] = {H, H};
    rc_blob *b[6] = {rct_feed_f32(ws, "X", 3, dx, 0), rct_feed_f32(ws, "h0", 2, dh, 0),
                     rct_feed_f32(ws, "W", 2, dw, 0), rct_feed_f32(ws, "b", 1, ds, 0),
                     rct_feed_f32(ws, "U", 2, du, 0), rct_feed_f32(ws, "c", 1, ds, 0)};
    for (int i = 0; i < 6; i++) {
        if (!b[i]) return -1;
        float *p = rc_f32(&b[i]->t);
        for (int64_t j = 0; j < rc_tensor_numel(&b[i]->t); j++)
            p[j] = 0.4f * sinf(0.7f * (float)j + 1.3f * (float)i + 0.1f * (float)seed);
    }
    return 0;
}

static int feed_inputs(rc_workspace *ws, int T, int N, int seed) { return feed_sized(ws, T, N, S, seed); }

/* Plain C reference of h_all (T x N x S). */
static void reference(rc_workspace *ws, int T, int N, float *h_all)
{
    const float *X = rc_f32(&rc_ws_get(ws, "X")->t), *h0 = rc_f32(&rc_ws_get(ws, "h0")->t);
    const float *W = rc_f32(&rc_ws_get(ws, "W")->t), *b = rc_f32(&rc_ws_get(ws, "b")->t);
    const float *U = rc_f32(&rc_ws_get(ws, "U")->t), *c = rc_f32(&rc_ws_get(ws, "c")->t);
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++) {
                const float *hp = t ? h_all + ((t - 1) * N + n) * S : h0 + n * S;
                float xw = b[s], hu = c[s];
                for (int d = 0; d < D; d++) xw += X[(t * N + n) * D + d] * W[s * D + d];
                for (int k = 0; k < S; k++) hu += hp[k] * U[s * S + k];
                h_all[(t * N + n) * S + s] = tanhf(xw + hu);
            }
}

typedef struct {
    int T, N, executor, threads, with_backward, num_ws, runs, seed;
    int failed;
    char msg[512];
    float *out; /* T*N*S, malloc'd, the last run's h_all */
} rnn_case;

static void run_case(rnn_case *c)
{
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    rc_netdef *nd = rc_netdef_new("rnn_net");
    rc_net *net = NULL;
    c->failed = 1;
    c->out = NULL;
    if (!ws || !nd || feed_inputs(ws, c->T, c->N, c->seed) ||
        !rnn_opdef(nd, c->executor, c->threads, c->with_backward, c->num_ws, "step_ws")) {
        snprintf(c->msg, sizeof c->msg, "setup failed");
        goto done;
    }
    if (!(net = rc_net_create(ws, nd, &err))) {
        snprintf(c->msg, sizeof c->msg, "create: %s", err.msg);
        goto done;
    }
    for (int r = 0; r < c->runs; r++)
        if (rc_net_run(net, &err)) {
            snprintf(c->msg, sizeof c->msg, "run %d: %s", r, err.msg);
            goto done;
        }
    const rc_tensor *h_all = &rc_ws_get(ws, "h_all")->t, *h_last = &rc_ws_get(ws, "h_last")->t;
    if (h_all->ndim != 3 || h_all->dims[0] != c->T || h_all->dims[1] != c->N || h_all->dims[2] != S) {
        snprintf(c->msg, sizeof c->msg, "h_all has shape %s", RC_SHAPE(h_all));
        goto done;
    }
    if (h_last->ndim != 3 || h_last->dims[0] != 1) {
        snprintf(c->msg, sizeof c->msg, "h_last has shape %s", RC_SHAPE(h_last));
        goto done;
    }
    size_t n = (size_t)c->T * (size_t)c->N * S;
    float *ref = malloc(sizeof(float) * (n + 1));
    c->out = malloc(sizeof(float) * (n + 1));
    if (!ref || !c->out) { free(ref); goto done; }
    if (n) memcpy(c->out, rc_f32(h_all), sizeof(float) * n);
    reference(ws, c->T, c->N, ref);
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(ref[i] - c->out[i]) <= 1e-5f)) {
            snprintf(c->msg, sizeof c->msg, "h_all[%zu] = %g, reference %g", i, (double)c->out[i], (double)ref[i]);
            free(ref);
            goto done;
        }
    /* h_last is the last row of the states (the initial state when T == 0) */
    const float *want_last = c->T ? ref + (size_t)(c->T - 1) * c->N * S : rc_f32(&rc_ws_get(ws, "h0")->t);
    if (memcmp(rc_f32(h_last), want_last, sizeof(float) * (size_t)c->N * S) != 0 && c->T) {
        /* compare with h_all itself (bitwise) rather than the reference */
        if (memcmp(rc_f32(h_last), c->out + (size_t)(c->T - 1) * c->N * S, sizeof(float) * (size_t)c->N * S)) {
            snprintf(c->msg, sizeof c->msg, "h_last is not the last row of h_all");
            free(ref);
            goto done;
        }
    }
    free(ref);
    c->failed = 0;
done:
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

static void check_case(rnn_case *c, const char *label)
{
    run_case(c);
    if (c->failed)
        RCT_FAIL_AT("%s T=%d N=%d executor=%d threads=%d backward=%d num_ws=%d: %s", label, c->T, c->N, c->executor,
                    c->threads, c->with_backward, c->num_ws, c->msg);
    else
        rct_passed++;
}

static int have_ops(void)
{
    const char *need[] = {"RecurrentNetwork", "FC", "Add", "Tanh"};
    for (int i = 0; i < 4; i++)
        if (!rc_op_lookup(need[i])) {
            printf("  note: op %s is not registered yet; skipping\n", need[i]);
            return 0;
        }
    return 1;
}

/* Executor on vs off: bitwise equal for every thread count and layout. */
static void test_executor_matches_serial(void)
{
    if (!have_ops()) return;
    const int Ts[] = {0, 1, 2, 7, 40};
    const int threads[] = {1, 2, 3, 8};
    for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
        for (int bw = 0; bw < 2; bw++) {
            rnn_case serial = {Ts[ti], 3, 0, 0, bw, 0, 2, 1, 0, "", NULL};
            check_case(&serial, "serial");
            if (serial.failed) continue;
            for (size_t k = 0; k < sizeof threads / sizeof *threads; k++)
                for (int nws = 0; nws <= 3; nws += 3) {
                    rnn_case ex = {Ts[ti], 3, 1, threads[k], bw, nws, 2, 1, 0, "", NULL};
                    check_case(&ex, "executor");
                    if (!ex.failed && memcmp(ex.out, serial.out, sizeof(float) * (size_t)Ts[ti] * 3 * S) != 0)
                        RCT_FAIL_AT("executor (T=%d threads=%d backward=%d num_ws=%d) differs from serial",
                                    Ts[ti], threads[k], bw, nws);
                    free(ex.out);
                }
            free(serial.out);
        }
}

static void *case_worker(void *p)
{
    run_case(p);
    return NULL;
}

/* Several RecurrentNetwork ops (each with its executor) in different
 * workspaces at once. */
static void test_concurrent_ops(void)
{
    if (!have_ops()) return;
    enum { K = 4 };
    pthread_t th[K];
    rnn_case cs[K];
    for (int i = 0; i < K; i++) {
        cs[i] = (rnn_case){20 + i, 2, 1, 1 + i % 3, i % 2, 0, 5, i, 0, "", NULL};
        REQUIRE(pthread_create(&th[i], NULL, case_worker, &cs[i]) == 0);
    }
    for (int i = 0; i < K; i++) {
        pthread_join(th[i], NULL);
        if (cs[i].failed) RCT_FAIL_AT("concurrent case %d: %s", i, cs[i].msg);
        else rct_passed++;
        free(cs[i].out);
    }
}

/* One op re-run with changing T and N, and an error in a step that leaves
 * the op usable; both with and without the executor. */
static void test_rerun_and_errors(void)
{
    if (!have_ops()) return;
    for (int ex = 0; ex < 2; ex++) {
        rc_err err;
        rc_workspace *ws = rc_ws_new(NULL);
        rc_netdef *nd = rc_netdef_new("rnn_net");
        REQUIRE(ws && nd && feed_inputs(ws, 5, 2, 0) == 0 && rnn_opdef(nd, ex, 4, 0, 0, "scratch"));
        rc_net *net = rc_net_create(ws, nd, &err);
        if (!net) printf("  %s\n", err.msg);
        REQUIRE(net != NULL);
        const int TN[][2] = {{5, 2}, {9, 2}, {3, 2}, {0, 2}, {6, 5}, {2, 1}};
        /* Tanh writes every row of h_states before anything reads it: the rows are not zeroed first
         * (5 runs with T > 0), and the results below match the reference all the same */
        int64_t unzeroed = rc_rnn_states_unzeroed();
        for (size_t k = 0; k < sizeof TN / sizeof *TN; k++) {
            int T = TN[k][0], N = TN[k][1];
            REQUIRE(feed_inputs(ws, T, N, (int)k) == 0);
            CHECK_OK(rc_net_run(net, &err), err);
            const rc_tensor *h_all = &rc_ws_get(ws, "h_all")->t;
            REQUIRE(h_all->dtype == RC_F32);
            CHECK(h_all->dims[0] == T && h_all->dims[1] == N);
            float *ref = malloc(sizeof(float) * ((size_t)T * N * S + 1));
            REQUIRE(ref != NULL);
            reference(ws, T, N, ref);
            int ok = 1;
            for (int i = 0; i < T * N * S; i++) ok &= fabsf(ref[i] - rc_f32(h_all)[i]) <= 1e-5f;
            CHECK(ok);
            free(ref);
        }
        CHECK_EQ(rc_rnn_states_unzeroed() - unzeroed, 5);
        /* a step error: W of the wrong width; names the step op and the timestep */
        const int64_t bad[] = {S, D + 1};
        CHECK_OK(rc_tensor_resize(&rc_ws_get(ws, "W")->t, RC_F32, 2, bad, &err), err);
        rc_err_clear(&err);
        CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
        CHECK_HAS(err.msg, "op FC #");
        CHECK_HAS(err.msg, "timestep");
        CHECK_HAS(err.msg, "'W'");
        /* a bad initial state */
        REQUIRE(feed_inputs(ws, 4, 2, 1) == 0);
        const int64_t bad_h0[] = {3, S};
        CHECK_OK(rc_tensor_resize(&rc_ws_get(ws, "h0")->t, RC_F32, 2, bad_h0, &err), err);
        rc_err_clear(&err);
        CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
        CHECK_HAS(err.msg, "'h0'");
        /* usable afterwards */
        REQUIRE(feed_inputs(ws, 4, 2, 2) == 0);
        CHECK_OK(rc_net_run(net, &err), err);
        float ref[4 * 2 * S];
        reference(ws, 4, 2, ref);
        int ok = 1;
        for (int i = 0; i < 4 * 2 * S; i++) ok &= fabsf(ref[i] - rc_f32(&rc_ws_get(ws, "h_all")->t)[i]) <= 1e-5f;
        CHECK(ok);
        /* an interrupt between timesteps */
        rc_interrupt_request();
        rc_err_clear(&err);
        CHECK_EQ(rc_net_run(net, &err), RC_ERR_INTERRUPT);
        rc_interrupt_clear();
        CHECK_OK(rc_net_run(net, &err), err);
        rc_net_free(net);
        rc_netdef_free(nd);
        rc_ws_free(ws); /* frees the step workspaces held by the scratch blob */
    }
}

/* The executor really runs: with the trace flag on, the op records one row
 * per (timestep, op) instance, with worker ids below the thread count. */
static void test_executor_trace(void)
{
    if (!have_ops()) return;
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    rc_netdef *nd = rc_netdef_new("rnn_net");
    enum { T = 30, THREADS = 4 };
    REQUIRE(ws && nd && feed_inputs(ws, T, 2, 0) == 0 && rnn_opdef(nd, 1, THREADS, 0, 0, "sw"));
    rc_net *net = rc_net_create(ws, nd, &err);
    REQUIRE(net != NULL);
    int was = rc_flag_rnn_trace();
    rc_flag_set_rnn_trace(1);
    CHECK_OK(rc_net_run(net, &err), err);
    rc_flag_set_rnn_trace(was);
    rc_blob *tr = rc_ws_get(ws, "sw_trace");
    REQUIRE(tr != NULL && tr->t.dtype == RC_I32 && tr->t.ndim == 2 && tr->t.dims[1] == 5);
    int64_t k = tr->t.dims[0];
    CHECK(k >= T * 4); /* at least the 4 cell ops (plus link ops / prologues) per step */
    int ok = 1, seen[T] = {0};
    for (int64_t i = 0; i < k; i++) {
        const int32_t *r = rc_i32(&tr->t) + 5 * i;
        if (r[0] < 0 || r[0] >= T || r[4] < 0 || r[4] >= THREADS || r[3] < r[2]) ok = 0;
        else seen[r[0]] = 1;
    }
    CHECK(ok);
    int all = 1;
    for (int t = 0; t < T; t++) all &= seen[t];
    CHECK(all);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* Runs the RNN op `runs` times over T steps with the executor enabled,
 * min_op_us set by `arg_us` (< 0: from the global flag),
 * rnn_executor.min_parallelism by `min_par` (< 0: the default) and
 * rnn_executor.trial by `trial` (< 0: the default, on); returns the
 * executor status (rc_rnn_exec_status of the step workspaces "sw") in st and
 * checks h_all each run. The status: EXEC_*
 * mode, serial us per task, timed runs, min_op_us, whether the last run
 * used the executor, the measured parallelism or 0, then the trial's
 * executor us, serial us and runs. */
enum { ST_LEN = RC_RNN_EXEC_STATUS_N };
static int auto_case_tt(int arg_us, int runs, float st[ST_LEN], int T, double min_par, int trial)
{
    rc_err err;
    int res = -1;
    rc_workspace *ws = rc_ws_new(NULL);
    rc_netdef *nd = rc_netdef_new("rnn_net");
    rc_net *net = NULL;
    rc_opdef *od;
    enum { N = 2, T_MAX = 16 };
    float ref[T_MAX * N * S];
    if (T > T_MAX || !ws || !nd || feed_inputs(ws, T, N, 3) || !(od = rnn_opdef(nd, 1, 2, 0, 0, "sw"))) goto done;
    if (arg_us >= 0 && rc_opdef_set_arg_i(od, "rnn_executor.min_op_us", arg_us)) goto done;
    if (min_par >= 0 && rc_opdef_set_arg_f(od, "rnn_executor.min_parallelism", min_par)) goto done;
    if (trial >= 0 && rc_opdef_set_arg_i(od, "rnn_executor.trial", trial)) goto done;
    if (!(net = rc_net_create(ws, nd, &err))) goto done;
    reference(ws, T, N, ref);
    for (int r = 0; r < runs; r++) {
        if (rc_net_run(net, &err)) goto done;
        if (memcmp(rc_f32(&rc_ws_get(ws, "h_all")->t), ref, sizeof(float) * (size_t)(T * N * S)) != 0) {
            /* the reference is not bitwise: compare within float tolerance */
            const float *h = rc_f32(&rc_ws_get(ws, "h_all")->t);
            for (int i = 0; i < T * N * S; i++)
                if (!(fabsf(h[i] - ref[i]) <= 1e-5f)) goto done;
        }
    }
    /* the status is kept in the step workspaces object, not in a blob of its own */
    CHECK(rc_ws_get(ws, "sw_executor") == NULL);
    rc_blob *b = rc_ws_get(ws, "sw");
    if (!b || rc_rnn_exec_status(b, 0, st) != 1) goto done;
    float none[ST_LEN];
    CHECK_EQ(rc_rnn_exec_status(b, 1, none), 0);                          /* no gradient op ran */
    CHECK_EQ(rc_rnn_exec_status(rc_ws_get(ws, "h_all"), 0, none), -1);    /* not step workspaces */
    res = 0;
done:
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
    return res;
}

/* trial off: the rules alone */
static int auto_case_t(int arg_us, int runs, float st[ST_LEN], int T, double min_par)
{
    return auto_case_tt(arg_us, runs, st, T, min_par, 0);
}
static int auto_case(int arg_us, int runs, float st[ST_LEN]) { return auto_case_t(arg_us, runs, st, 6, -1); }

/* rnn_executor.min_op_us: the first two runs are serial and timed, then the
 * op keeps the executor (ops slower than the threshold) or the serial loop;
 * with trial (the default) it measures both where a rule is in doubt. */
static void test_executor_auto(void)
{
    if (!have_ops()) return;
    float st[ST_LEN];
    int64_t was = rc_flag_rnn_executor_min_op_ns();
    /* 0: the executor from the first run, nothing timed */
    REQUIRE(auto_case(0, 1, st) == 0);
    CHECK_EQ(st[0], 2);
    CHECK_EQ(st[2], 0);
    CHECK_EQ(st[4], 1);
    /* a threshold no op reaches: serial after two timed runs */
    REQUIRE(auto_case(1000000, 1, st) == 0);
    CHECK_EQ(st[0], 1); /* still measuring */
    CHECK_EQ(st[2], 1);
    CHECK(st[1] > 0.f && st[3] == 1e6f);
    REQUIRE(auto_case(1000000, 3, st) == 0);
    CHECK_EQ(st[0], 3);
    CHECK_EQ(st[2], 2);
    CHECK_EQ(st[4], 0);
    /* the global flag when the op has no argument: 1 ns, every op is slower */
    rc_flag_set_rnn_executor_min_op_ns(1);
    REQUIRE(auto_case(-1, 3, st) == 0);
    CHECK_EQ(st[0], 2);
    CHECK_EQ(st[2], 2);
    CHECK_EQ(st[4], 1);
    CHECK(st[3] == 0.001f);
    CHECK_EQ(st[5], 0); /* T = 6: parallelism not measured */
    /* T = 10: the third run (the first executor run of 8+ steps) measures the
     * parallelism: at least 1 (all the work is at least the longest chain's;
     * this cell's input product is off the recurrence, so usually ~1.5-2.5);
     * min_parallelism 0.5 keeps the executor, 100 turns the op serial from
     * that run on */
    REQUIRE(auto_case_t(-1, 3, st, 10, 0.5) == 0);
    CHECK_EQ(st[0], 2);
    CHECK_EQ(st[4], 1);
    CHECK(st[5] >= 0.999f && st[5] < 100.f);
    REQUIRE(auto_case_t(-1, 4, st, 10, 100) == 0);
    CHECK_EQ(st[0], 3);
    CHECK_EQ(st[4], 0);
    CHECK(st[5] >= 0.999f && st[5] < 100.f);
    /* 0: no check */
    REQUIRE(auto_case_t(-1, 3, st, 10, 0) == 0);
    CHECK_EQ(st[0], 2);
    CHECK_EQ(st[5], 0);
    /* trial (the default) under min_parallelism 100: measures both from the
     * third run unless the cell is a chain (below 1.1) */
    REQUIRE(auto_case_tt(-1, 3, st, 10, 100, -1) == 0);
    CHECK(st[5] >= 0.999f);
    CHECK_EQ(st[0], st[5] < 1.1f ? 3 : 4);
    CHECK_EQ(st[8], st[5] < 1.1f ? 0 : 1);
    rc_flag_set_rnn_executor_min_op_ns(was);
    /* trial under min_op_us: after the two timed runs the op tries (mode 4);
     * runs of fewer than 8 steps are serial and not timed; from 8 steps on
     * the executor and the serial loop alternate, two of each, then the
     * faster (2 or 3), with both times in the status */
    REQUIRE(auto_case_tt(1000000, 2, st, 6, 0, -1) == 0);
    CHECK_EQ(st[0], 4);
    CHECK_EQ(st[8], 0);
    REQUIRE(auto_case_tt(1000000, 5, st, 6, 0, -1) == 0);
    CHECK_EQ(st[0], 4);
    CHECK_EQ(st[4], 0);
    CHECK_EQ(st[8], 0);
    REQUIRE(auto_case_tt(1000000, 3, st, 10, 0, -1) == 0);
    CHECK_EQ(st[0], 4);
    CHECK_EQ(st[4], 1); /* the executor's turn first */
    CHECK_EQ(st[8], 1);
    CHECK(st[6] > 0.f && st[7] == 0.f);
    REQUIRE(auto_case_tt(1000000, 6, st, 10, 0, -1) == 0);
    CHECK(st[0] == 2 || st[0] == 3);
    CHECK_EQ(st[4], 0); /* the last timed run was the serial loop's */
    CHECK_EQ(st[8], 4);
    CHECK(st[6] > 0.f && st[7] > 0.f);
    if (fabsf(st[6] - 0.95f * st[7]) > 1e-3f * st[7]) /* float us here; the rule compares ns */
        CHECK_EQ(st[0] == 2, st[6] <= 0.95f * st[7]);
    /* a bad argument fails at creation, naming it */
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    rc_netdef *nd = rc_netdef_new("rnn_net");
    rc_opdef *od;
    REQUIRE(ws && nd && feed_inputs(ws, 2, 2, 0) == 0 && (od = rnn_opdef(nd, 1, 2, 0, 0, "sw")));
    REQUIRE(rc_opdef_set_arg_i(od, "rnn_executor.min_op_us", -1) == 0);
    rc_err_clear(&err);
    CHECK(rc_net_create(ws, nd, &err) == NULL);
    CHECK_HAS(err.msg, "rnn_executor.min_op_us must be in [0, 1e6], got -1");
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* Creates the net in ws and runs it twice; returns the status (err: why). */
static rc_status create_and_run(rc_workspace *ws, const rc_netdef *nd, rc_err *err)
{
    rc_err_clear(err);
    rc_net *net = rc_net_create(ws, nd, err);
    if (!net) return err->code ? err->code : RC_ERR_RUNTIME;
    rc_status st = rc_net_run(net, err);
    if (!st) st = rc_net_run(net, err);
    rc_net_free(net);
    return st;
}

/* Allocation-failure injection (csrc/testing/alloc_fail.h): the k-th wrapped
 * call of creating and running the net fails (or, sticky, every call from the
 * k-th on), for every k; forward with rotating workspaces and with one
 * workspace per step, executor off and on (2 threads). */
static void test_alloc_failures(void)
{
    if (!have_ops()) return;
    const int cfg[][3] = {{0, 0, 0}, {1, 2, 0}, {1, 2, 1}, {0, 0, 1}}; /* executor, threads, with_backward */
    for (size_t ci = 0; ci < sizeof cfg / sizeof *cfg; ci++)
        for (int sticky = 0; sticky < 2; sticky++) {
            enum { T = 5, N = 2 };
            rc_err err;
            rc_workspace *ws = rc_ws_new(NULL);
            rc_netdef *nd = rc_netdef_new("rnn_net");
            REQUIRE(ws && nd && feed_inputs(ws, T, N, 3) == 0 &&
                    rnn_opdef(nd, cfg[ci][0], cfg[ci][1], cfg[ci][2], 0, "step_ws"));
            CHECK_OK(create_and_run(ws, nd, &err), err);
            float ref[T * N * S];
            memcpy(ref, rc_f32(&rc_ws_get(ws, "h_all")->t), sizeof ref);
            long long live0 = rc_alloc_live();
            rc_alloc_fail_arm(0, 0);
            CHECK_OK(create_and_run(ws, nd, &err), err);
            long long n = rc_alloc_fail_arm(0, 0);
            CHECK(n > 10);
            CHECK_EQ(rc_alloc_live(), live0);
            int n_mem = 0, n_ok = 0, bad = 0;
            for (long long k = 1; k <= n + 1 && !bad; k++) {
                rc_alloc_fail_arm(k, sticky);
                rc_status st = create_and_run(ws, nd, &err);
                rc_alloc_fail_arm(0, 0);
                if (st == RC_OK) n_ok++;
                else if (st == RC_ERR_MEMORY && strstr(err.msg, "out of memory")) n_mem++;
                else {
                    RCT_FAIL_AT("config %zu sticky %d k=%lld: status %d: %s", ci, sticky, k, (int)st, err.msg);
                    bad = 1;
                }
                if ((st = create_and_run(ws, nd, &err))) {
                    RCT_FAIL_AT("config %zu sticky %d k=%lld: the next run failed: %s", ci, sticky, k, err.msg);
                    bad = 1;
                } else if (memcmp(ref, rc_f32(&rc_ws_get(ws, "h_all")->t), sizeof ref)) {
                    RCT_FAIL_AT("config %zu sticky %d k=%lld: the next run differs", ci, sticky, k);
                    bad = 1;
                }
                if (rc_alloc_live() != live0) {
                    RCT_FAIL_AT("config %zu sticky %d k=%lld: %lld blocks leaked", ci, sticky, k,
                                rc_alloc_live() - live0);
                    bad = 1;
                }
            }
            CHECK(!bad);
            CHECK(n_mem > 0);
            CHECK(n_ok >= 1); /* at least k = n + 1 */
            rc_netdef_free(nd);
            rc_ws_free(ws);
        }
}

/* ---- helping: an executor thread with nothing to run takes parts of another's product */
enum { HH = 256, HN = 64, HT = 40 };

/* Runs the tanh RNN at hidden HH (h_prev U^T: HN x HH x HH multiply-adds, 4
 * parts) with the executor always on (min_op_us 0) at `threads` threads, or
 * serially (threads 0), and copies h_all into out (HT x HN x HH floats). */
/* traced: the last run is traced, and its record of helped parts must hold
 * every part helped in it, each a valid record for this run. */
static int help_run(int threads, float *out, int traced)
{
    rc_err err;
    rc_err_clear(&err);
    int res = -1;
    rc_workspace *ws = rc_ws_new(NULL);
    rc_netdef *nd = rc_netdef_new("rnn_net");
    rc_net *net = NULL;
    rc_opdef *od;
    if (!ws || !nd || feed_sized(ws, HT, HN, HH, 5) || !(od = rnn_opdef(nd, threads > 0, threads, 1, 0, "hw")) ||
        rc_opdef_set_arg_i(od, "rnn_executor.min_op_us", 0) || !(net = rc_net_create(ws, nd, &err)))
        goto done;
    int64_t before = 0;
    for (int r = 0; r < 3; r++) {
        int trace_this = traced && r == 2;
        if (trace_this) {
            rc_flag_set_rnn_trace(1);
            before = rc_rnn_exec_help_parts();
        }
        rc_status s = rc_net_run(net, &err);
        if (trace_this) rc_flag_set_rnn_trace(0);
        if (s) goto done;
    }
    if (traced) {
        rc_blob *pb = rc_ws_get(ws, "hw_trace_parts");
        CHECK(pb && pb->t.dtype == RC_I32 && pb->t.ndim == 2 && pb->t.dims[1] == 5);
        if (!pb || pb->t.ndim != 2) goto done;
        int64_t n = pb->t.dims[0];
        CHECK_EQ(n, rc_rnn_exec_help_parts() - before);
        const int32_t *r = rc_i32(&pb->t);
        for (int64_t i = 0; i < n; i++, r += 5)
            if (!(r[0] >= 0 && r[0] < HT && r[1] >= 0 && r[2] >= 0 && r[2] <= r[3] && r[4] >= 0 && r[4] < threads))
                RCT_FAIL_AT("bad part record %lld: %d %d %d %d %d", (long long)i, r[0], r[1], r[2], r[3], r[4]);
    }
    const rc_tensor *h = &rc_ws_get(ws, "h_all")->t;
    if (rc_tensor_numel(h) != (int64_t)HT * HN * HH) goto done;
    memcpy(out, rc_f32(h), sizeof(float) * (size_t)HT * HN * HH);
    res = 0;
done:
    if (res) printf("  help_run(%d): %s\n", threads, err.msg);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
    return res;
}

/* The step net is a chain (FC, Add, Tanh after the previous step's Tanh), so
 * one thread runs while the others poll and help; results bitwise the
 * serial loop's at 2 and 3 threads, with helping on and off; parts are
 * helped only when it is on (and the threads do not outnumber the cores:
 * only then do idle threads poll, and only a polling thread helps). */
static void test_executor_help(void)
{
    if (!have_ops() || !rc_packed_available()) return;
    size_t n = (size_t)HT * HN * HH;
    float *ref = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
    REQUIRE(ref && got);
    int prev = rc_flag_rnn_executor_help();
    if (help_run(0, ref, 0) == 0) {
        rct_passed++;
        for (int threads = 2; threads <= 3; threads++)
            for (int on = 0; on <= 1; on++) {
                rc_flag_set_rnn_executor_help(on);
                int64_t before = rc_rnn_exec_help_parts();
                /* whether a thread polls when a product is posted is a matter of timing (a busy
                 * machine may deschedule it): up to 20 tries for a help to happen */
                int want_help = on && threads <= rc_num_cores(); /* threads poll only then */
                for (int tries = 0; tries < (want_help ? 20 : 1); tries++) {
                    int ok = help_run(threads, got, tries % 2 == 0) == 0; /* every other try traced, the first too */
                    CHECK(ok);
                    if (ok && memcmp(got, ref, sizeof(float) * n) != 0)
                        RCT_FAIL_AT("executor at %d threads, helping %d, differs from serial", threads, on);
                    if (!ok || rc_rnn_exec_help_parts() > before) break;
                }
                int64_t helped = rc_rnn_exec_help_parts() - before;
                if (!on) CHECK_EQ(helped, 0);
                else if (want_help) CHECK(helped > 0);
            }
    } else
        RCT_FAIL_AT("serial run failed");
    rc_flag_set_rnn_executor_help(prev);
    free(ref);
    free(got);
}

/* ---- pack reuse: hidden SP so that both step FCs multiply by packs */
enum { SP = 32 };

static int feed_wide(rc_workspace *ws, int T, int N) { return feed_sized(ws, T, N, SP, 3); }

static int same_h_all(rc_workspace *a, rc_workspace *b)
{
    const rc_tensor *x = &rc_ws_get(a, "h_all")->t, *y = &rc_ws_get(b, "h_all")->t;
    return rc_tensor_same_shape(x, y) && memcmp(rc_f32(x), rc_f32(y), rc_tensor_nbytes(x)) == 0;
}

/* Adds v to U[i] in ws without recording the write (what a writer that
 * forgets rc_tensor_touch does). */
static void poke_u(rc_workspace *ws, int i, float v) { rc_f32(&rc_ws_get(ws, "U")->t)[i] += v; }

/* Runs net (pack reuse on) and ref (off) and returns how many packs net kept. */
static int64_t run_pair(rc_net *net, rc_net *ref, rc_status want, const char *want_msg)
{
    rc_err err;
    rc_err_clear(&err);
    int64_t k0 = rc_rnn_packs_reused();
    if (want) CHECK_ERR(rc_net_run(net, &err), want, err, want_msg);
    else CHECK_OK(rc_net_run(net, &err), err);
    int64_t kept = rc_rnn_packs_reused() - k0;
    CHECK_OK(rc_net_run(ref, &err), err);
    CHECK_EQ(rc_rnn_packs_reused() - k0, kept);
    return kept;
}

static void test_pack_reuse(void)
{
    if (!have_ops()) return;
    if (!rc_packed_available()) {
        printf("  note: no packed step products on this CPU; skipping\n");
        return;
    }
    rc_err err;
    rc_err_clear(&err);
    int old_verify = rc_flag_verify_packs();
    rc_workspace *ws = rc_ws_new(NULL), *rws = rc_ws_new(NULL);
    rc_netdef *nd = rc_netdef_new("wide");
    REQUIRE(ws && rws && nd && feed_wide(ws, 6, 3) == 0 && feed_wide(rws, 6, 3) == 0);
    REQUIRE(rnn_opdef(nd, 1, 2, 0, 0, "scratch") != NULL);
    rc_net *net = rc_net_create(ws, nd, &err);
    setenv("RECURRENT_PACK_REUSE", "0", 1); /* read when the op is created */
    rc_net *ref = rc_net_create(rws, nd, &err);
    unsetenv("RECURRENT_PACK_REUSE");
    REQUIRE(net && ref);

    /* first run packs W and U; the second keeps both */
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 0);
    CHECK(same_h_all(ws, rws));
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 2);
    CHECK(same_h_all(ws, rws));

    /* a recorded write (an op of another net scaling U in place): U is packed again, W kept */
    rc_netdef *sd = rc_netdef_new("scale_u");
    const char *su[] = {"U"};
    rc_opdef *sc = sd ? rct_add_op(sd, "Scale", 1, su, 1, su) : NULL;
    REQUIRE(sc && rct_set_f(sc, "scale", 0.5) == 0);
    rc_net *s1 = rc_net_create(ws, sd, &err), *s2 = rc_net_create(rws, sd, &err);
    REQUIRE(s1 && s2);
    CHECK_OK(rc_net_run(s1, &err), err);
    CHECK_OK(rc_net_run(s2, &err), err);
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 1);
    CHECK(same_h_all(ws, rws));

    /* a write that skips rc_tensor_touch, with verify_packs: the run fails
     * naming the weight; the pack is dropped, so the next run is right */
    rc_flag_set_verify_packs(1);
    poke_u(ws, 1, 0.25f);
    poke_u(rws, 1, 0.25f);
    CHECK_EQ(run_pair(net, ref, RC_ERR_RUNTIME, "weight 'U' kept from an earlier run no longer matches"), 0);
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 1);
    CHECK(same_h_all(ws, rws));

    /* without verify_packs the same mistake goes unseen (the contract:
     * writers record their writes) until the write is recorded */
    rc_flag_set_verify_packs(0);
    poke_u(ws, 2, 0.25f);
    poke_u(rws, 2, 0.25f);
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 2);
    CHECK(!same_h_all(ws, rws));
    rc_tensor_touch(&rc_ws_get(ws, "U")->t);
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 1);
    CHECK(same_h_all(ws, rws));

    /* fed again (a fresh buffer, as FeedBlob): both packed again */
    REQUIRE(feed_wide(ws, 6, 3) == 0 && feed_wide(rws, 6, 3) == 0);
    CHECK_EQ(run_pair(net, ref, RC_OK, NULL), 0);
    CHECK(same_h_all(ws, rws));

    rc_flag_set_verify_packs(old_verify);
    rc_net_free(s1);
    rc_net_free(s2);
    rc_netdef_free(sd);
    rc_net_free(net);
    rc_net_free(ref);
    rc_netdef_free(nd);
    rc_ws_free(ws);
    rc_ws_free(rws);
}

int main(void)
{
    /* these tests run the executor on a tiny net: no serial fallback */
    rc_flag_set_rnn_executor_min_op_ns(0);
    RUN(test_executor_auto);
    RUN(test_executor_trace);
    RUN(test_executor_matches_serial);
    RUN(test_executor_help);
    RUN(test_concurrent_ops);
    RUN(test_rerun_and_errors);
    RUN(test_pack_reuse);
    RUN(test_alloc_failures);
    return TEST_REPORT();
}
