/* Thread safety of the core (run under TSan with RECURRENT_TSAN=ON):
 * atomic storage reference counts with views taken and dropped from many
 * threads, nets run concurrently in child workspaces that read one parent's
 * blobs (the layout of step workspaces), concurrent registry lookups and
 * runtime flags, and one Counter (ops/counter.c) counted by nets of several
 * threads. */
#include "rc_test.h"
#include <math.h>
#include <pthread.h>
#include <time.h>

enum { NTHREADS = 8 };

/* ---------------------------------------------------------------- refcounts */
typedef struct {
    const rc_tensor *src;
    int iters;
    int bad;
} ref_arg;

static void *ref_worker(void *p)
{
    ref_arg *a = p;
    rc_tensor v, w;
    rc_tensor_init(&v);
    rc_tensor_init(&w);
    for (int i = 0; i < a->iters; i++) {
        rc_tensor_share(&v, a->src);
        rc_tensor_view_rows(&w, a->src, i % 4, 1);
        if (rc_f32(&w)[0] != (float)((i % 4) * 3)) a->bad++; /* read-only: the source is never written */
        if (i % 3 == 0) rc_tensor_release(&v);
        rc_tensor_release(&w);
    }
    rc_tensor_release(&v);
    return NULL;
}

static void test_concurrent_refcounts(void)
{
    rc_err err;
    rc_tensor src;
    rc_tensor_init(&src);
    const int64_t d[] = {4, 3};
    REQUIRE(rc_tensor_resize(&src, RC_F32, 2, d, &err) == RC_OK);
    for (int i = 0; i < 12; i++) rc_f32(&src)[i] = (float)i;
    void *p0 = rc_tensor_data(&src);
    pthread_t th[NTHREADS];
    ref_arg args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (ref_arg){&src, 20000, 0};
        REQUIRE(pthread_create(&th[i], NULL, ref_worker, &args[i]) == 0);
    }
    int bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        bad += args[i].bad;
    }
    CHECK_EQ(bad, 0);
    /* every reference was dropped: the count is back to 1, so a private resize keeps the buffer */
    CHECK(rc_tensor_resize_private(&src, RC_F32, 2, d, &err) == RC_OK);
    CHECK(rc_tensor_data(&src) == p0);

    /* a storage whose last holder is released from a worker thread */
    rc_tensor keep;
    rc_tensor_init(&keep);
    rc_tensor_share(&keep, &src);
    rc_tensor_release(&src);
    ref_arg a = {&keep, 1000, 0};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, ref_worker, &a) == 0);
    pthread_join(t, NULL);
    CHECK_EQ(a.bad, 0);
    rc_tensor_release(&keep);
}

/* ---------------------------------------------------------------- nets in child workspaces */
typedef struct {
    rc_workspace *parent;
    int id;
    int iters;
    int failed;
    char msg[256];
    float result[8];
} net_arg;

static rc_netdef *make_cell(void)
{
    /* h = tanh(FC(x, W, b)) * s ; y = Sum(h, x2) with x2 = Scale(h) */
    rc_netdef *nd = rc_netdef_new("cell");
    if (!nd) return NULL;
    const char *fc_in[] = {"x", "W", "b"}, *fc_out[] = {"xw"};
    const char *th_in[] = {"xw"}, *th_out[] = {"h"};
    const char *sc_in[] = {"h"}, *sc_out[] = {"h2"};
    const char *su_in[] = {"h", "h2", "bias_row"}, *su_out[] = {"y"};
    rc_opdef *sc;
    if (!rct_add_op(nd, "FC", 3, fc_in, 1, fc_out) || !rct_add_op(nd, "Tanh", 1, th_in, 1, th_out) ||
        !(sc = rct_add_op(nd, "Scale", 1, sc_in, 1, sc_out)) || rct_set_f(sc, "scale", 0.5) ||
        !rct_add_op(nd, "Sum", 3, su_in, 1, su_out)) {
        rc_netdef_free(nd);
        return NULL;
    }
    return nd;
}

static void *net_worker(void *p)
{
    net_arg *a = p;
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(a->parent);
    rc_netdef *nd = make_cell();
    rc_net *net = NULL;
    if (!ws || !nd) { a->failed = 1; goto done; }
    /* the thread's own input x (2, 3) */
    const int64_t dx[] = {2, 3};
    rc_blob *x = rct_feed_f32(ws, "x", 2, dx, 0.f);
    if (!x) { a->failed = 1; goto done; }
    for (int i = 0; i < 6; i++) rc_f32(&x->t)[i] = 0.1f * (float)(i + a->id);
    if (!(net = rc_net_create(ws, nd, &err))) { a->failed = 1; goto done; }
    for (int it = 0; it < a->iters; it++) {
        if (rc_net_run(net, &err)) { a->failed = 1; goto done; }
        /* the step reads the parent's blobs by lookup on every run */
        if (!rc_ws_get(ws, "W") || rc_ws_get_local(ws, "W")) { a->failed = 1; goto done; }
    }
    memcpy(a->result, rc_f32(&rc_ws_get(ws, "y")->t), sizeof a->result);
done:
    if (a->failed) snprintf(a->msg, sizeof a->msg, "%s", err.msg);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
    return NULL;
}

static void test_concurrent_nets(void)
{
    const char *need[] = {"FC", "Tanh", "Scale", "Sum"};
    for (int i = 0; i < 4; i++)
        if (!rc_op_lookup(need[i])) {
            printf("  note: op %s not registered yet; skipping\n", need[i]);
            return;
        }
    rc_workspace *parent = rc_ws_new(NULL);
    REQUIRE(parent != NULL);
    const int64_t dw[] = {4, 3}, db[] = {4}, dr[] = {2, 4};
    rc_blob *W = rct_feed_f32(parent, "W", 2, dw, 0.f), *b = rct_feed_f32(parent, "b", 1, db, 0.f);
    REQUIRE(W && b && rct_feed_f32(parent, "bias_row", 2, dr, 0.f));
    for (int i = 0; i < 12; i++) rc_f32(&W->t)[i] = 0.05f * (float)(i - 6);
    for (int i = 0; i < 4; i++) rc_f32(&b->t)[i] = 0.1f * (float)i;
    for (int i = 0; i < 8; i++) rc_f32(&rc_ws_get(parent, "bias_row")->t)[i] = 0.01f * (float)i;

    /* single-threaded references */
    net_arg ref[NTHREADS], args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        ref[i] = (net_arg){parent, i, 1, 0, "", {0}};
        net_worker(&ref[i]);
        REQUIRE(!ref[i].failed);
    }
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (net_arg){parent, i, 300, 0, "", {0}};
        REQUIRE(pthread_create(&th[i], NULL, net_worker, &args[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++) {
        if (args[i].failed) RCT_FAIL_AT("thread %d: %s", i, args[i].msg);
        CHECK(memcmp(args[i].result, ref[i].result, sizeof ref[i].result) == 0); /* bitwise */
    }
    /* the reference values themselves (thread 0) */
    float x[6], want[8];
    for (int i = 0; i < 6; i++) x[i] = 0.1f * (float)i;
    for (int m = 0; m < 2; m++)
        for (int n = 0; n < 4; n++) {
            float acc = rc_f32(&b->t)[n];
            for (int k = 0; k < 3; k++) acc += x[m * 3 + k] * rc_f32(&W->t)[n * 3 + k];
            float h = tanhf(acc);
            want[m * 4 + n] = h + 0.5f * h + 0.01f * (float)(m * 4 + n);
        }
    int close = 1;
    for (int i = 0; i < 8; i++) close &= fabsf(ref[0].result[i] - want[i]) < 1e-5f;
    CHECK(close);
    rc_ws_free(parent);
}

/* ---------------------------------------------------------------- one counter, many threads */
enum { COUNT_ITERS = 2000 };

typedef struct {
    rc_workspace *parent;
    int failed;
    char msg[256];
    int32_t seen[COUNT_ITERS]; /* what CountUp gave on each run */
} count_arg;

/* Runs CountUp(c) -> prev COUNT_ITERS times in a child workspace of the parent holding the Counter "c". */
static void *count_worker(void *p)
{
    count_arg *a = p;
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(a->parent);
    rc_netdef *nd = rc_netdef_new("count");
    rc_net *net = NULL;
    const char *in[] = {"c"}, *out[] = {"prev"};
    if (!ws || !nd || !rct_add_op(nd, "CountUp", 1, in, 1, out) || !(net = rc_net_create(ws, nd, &err))) {
        a->failed = 1;
        goto done;
    }
    for (int it = 0; it < COUNT_ITERS; it++) {
        if (rc_net_run(net, &err)) { a->failed = 1; goto done; }
        a->seen[it] = rc_i32(&rc_ws_get(ws, "prev")->t)[0];
    }
done:
    if (a->failed) snprintf(a->msg, sizeof a->msg, "%s", err.msg);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
    return NULL;
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Every count is given exactly once: none lost, none repeated. */
static void test_concurrent_counter(void)
{
    if (!rc_op_lookup("CountUp")) {
        printf("  note: op CountUp not registered yet; skipping\n");
        return;
    }
    rc_err err;
    rc_workspace *parent = rc_ws_new(NULL);
    rc_netdef *init = rc_netdef_new("init");
    const char *none[] = {NULL}, *c[] = {"c"}, *total[] = {"total"};
    REQUIRE(parent && init && rct_add_op(init, "CreateCounter", 0, none, 1, c) &&
            rct_add_op(init, "RetrieveCount", 1, c, 1, total));
    rc_net *net = rc_net_create(parent, init, &err);
    REQUIRE(net && rc_net_run(net, &err) == RC_OK);
    static count_arg args[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (count_arg){parent, 0, "", {0}};
        REQUIRE(pthread_create(&th[i], NULL, count_worker, &args[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    static int32_t all[NTHREADS * COUNT_ITERS];
    for (int i = 0; i < NTHREADS; i++) {
        if (args[i].failed) RCT_FAIL_AT("thread %d: %s", i, args[i].msg);
        memcpy(all + i * COUNT_ITERS, args[i].seen, sizeof args[i].seen);
    }
    qsort(all, NTHREADS * COUNT_ITERS, sizeof all[0], cmp_i32);
    int bad = 0;
    for (int i = 0; i < NTHREADS * COUNT_ITERS; i++) bad += all[i] != i;
    CHECK_EQ(bad, 0);
    /* the count the threads left */
    rc_netdef *get = rc_netdef_new("get");
    REQUIRE(get && rct_add_op(get, "RetrieveCount", 1, c, 1, total));
    rc_net *gnet = rc_net_create(parent, get, &err);
    REQUIRE(gnet && rc_net_run(gnet, &err) == RC_OK);
    CHECK_EQ(rc_i32(&rc_ws_get(parent, "total")->t)[0], NTHREADS * COUNT_ITERS);
    rc_net_free(gnet);
    rc_netdef_free(get);
    rc_net_free(net);
    rc_netdef_free(init);
    rc_ws_free(parent);
}

/* ---------------------------------------------------------------- registry, flags, BLAS */
static void *lookup_worker(void *p)
{
    int *bad = p;
    for (int i = 0; i < 2000; i++) {
        const rc_op_schema *s = rc_op_schema_at(i % rc_op_num_schemas());
        if (!s || rc_op_lookup(s->type) != s) (*bad)++;
        (void)rc_flag_rnn_executor();
        (void)rc_flag_rnn_executor_threads();
        (void)rc_interrupt_pending();
    }
    return NULL;
}

static void test_concurrent_lookups_and_flags(void)
{
    pthread_t th[NTHREADS];
    int bad[NTHREADS] = {0};
    for (int i = 0; i < NTHREADS; i++) REQUIRE(pthread_create(&th[i], NULL, lookup_worker, &bad[i]) == 0);
    int was = rc_flag_rnn_executor_threads();
    for (int i = 0; i < 100; i++) rc_flag_set_rnn_executor_threads(i % 3); /* written while others read */
    rc_flag_set_rnn_executor_threads(was);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(bad[i], 0);
    }
}

typedef struct {
    int seed, bad;
} gemm_arg;

static void *gemm_worker(void *p)
{
    gemm_arg *a = p;
    enum { M = 7, N = 5, K = 9 };
    float A[M * K], B[K * N], C[M * N];
    for (int r = 0; r < 200; r++) {
        for (int i = 0; i < M * K; i++) A[i] = (float)((i * 7 + a->seed + r) % 11) - 5.f;
        for (int i = 0; i < K * N; i++) B[i] = (float)((i * 3 + a->seed) % 13) - 6.f;
        rc_sgemm(0, 0, M, N, K, 1.f, A, B, 0.f, C);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float acc = 0;
                for (int k = 0; k < K; k++) acc += A[m * K + k] * B[k * N + n];
                if (acc != C[m * N + n]) a->bad++; /* small integers: exact */
            }
    }
    return NULL;
}

static void test_concurrent_sgemm(void)
{
    int was = rc_blas_num_threads();
    rc_blas_set_num_threads(1);
    pthread_t th[NTHREADS];
    gemm_arg args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (gemm_arg){i, 0};
        REQUIRE(pthread_create(&th[i], NULL, gemm_worker, &args[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(args[i].bad, 0);
    }
    rc_blas_set_num_threads(was);
}

/* ---------------------------------------------------------------- rc_spin_while */
typedef struct {
    int word;
} spin_arg;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *spin_setter(void *p)
{
    spin_arg *a = p;
    struct timespec d = {0, 2000000}; /* 2 ms */
    nanosleep(&d, NULL);
    __atomic_store_n(&a->word, 7, __ATOMIC_RELEASE);
    return NULL;
}

static void test_spin_while(void)
{
    spin_arg a = {3};
    /* no change: returns 0 once the budget (5 ms) is spent, not much later */
    int64_t t0 = mono_ns();
    CHECK_EQ(rc_spin_while(&a.word, 3, 5000000), 0);
    int64_t dt = mono_ns() - t0;
    CHECK(dt >= 5000000);
    CHECK(dt < 2000000000); /* generous: a loaded machine may deschedule the poller */
    CHECK_EQ(rc_spin_while(&a.word, 3, 0), 0);
    CHECK_EQ(rc_spin_while(&a.word, 4, 0), 1);  /* already different */
    CHECK_EQ(rc_spin_while(&a.word, 4, -5), 1);
    /* a change by another thread ends the poll early */
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, spin_setter, &a) == 0);
    CHECK_EQ(rc_spin_while(&a.word, 3, 60000000000LL), 1); /* a minute's budget: must return at the change */
    pthread_join(th, NULL);
    CHECK_EQ(a.word, 7);
}

static void test_spin_flag(void)
{
    int64_t was = rc_flag_spin_ns();
    CHECK(was >= 0);
    rc_flag_set_spin_ns(1234);
    CHECK_EQ(rc_flag_spin_ns(), 1234);
    rc_flag_set_spin_ns(-1);
    CHECK_EQ(rc_flag_spin_ns(), 0);
    rc_flag_set_spin_ns(was);
}

int main(void)
{
    RUN(test_concurrent_refcounts);
    RUN(test_concurrent_nets);
    RUN(test_concurrent_counter);
    RUN(test_concurrent_lookups_and_flags);
    RUN(test_concurrent_sgemm);
    RUN(test_spin_while);
    RUN(test_spin_flag);
    return TEST_REPORT();
}
