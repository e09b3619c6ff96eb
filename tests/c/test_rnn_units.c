/* LSTMUnit / GRUUnit (+ gradients) at the C level: outputs that are views into rows of a
 * (T+1)xNxD state buffer are written through (same storage, same offset, no reallocation, other
 * rows untouched), and independent op instances run concurrently give bitwise the serial results
 * (run under TSan with RECURRENT_TSAN=ON). Numerics are tested against NumPy in
 * tests/test_ops_rnn_units.py. */
#include "rc_test.h"
#include "../../csrc/kernels/vmath.h"
#include <math.h>
#include <pthread.h>

enum { T1 = 3, N = 4, D = 5, LANES = 8, ITERS = 200 };

static void fill(rc_tensor *t, unsigned seed, float scale)
{
    float *p = rc_f32(t);
    for (int64_t i = 0; i < rc_tensor_numel(t); i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = scale * ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
}

static rc_blob *feed_i32(rc_workspace *ws, const char *name, int n, const int32_t *vals)
{
    rc_err err;
    rc_err_clear(&err);
    rc_blob *b = rc_ws_create_local(ws, name, &err);
    int64_t dims[1] = {n};
    if (!b || rc_tensor_resize(&b->t, RC_I32, 1, dims, &err)) return NULL;
    for (int i = 0; i < n; i++) rc_i32(&b->t)[i] = vals[i];
    return b;
}

/* view blob `name` = rows [row, row+1) of blob src */
static rc_blob *view_row(rc_workspace *ws, const char *name, rc_blob *src, int64_t row)
{
    rc_err err;
    rc_err_clear(&err);
    rc_blob *b = rc_ws_create_local(ws, name, &err);
    if (b) rc_tensor_view_rows(&b->t, &src->t, row, 1);
    return b;
}

static void test_outputs_written_through_views(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws);
    const int64_t sdims[3] = {T1, N, D}, gdims[3] = {1, N, 4 * D};
    rc_blob *hs = rct_feed_f32(ws, "h_states", 3, sdims, 0.0f);
    rc_blob *cs = rct_feed_f32(ws, "c_states", 3, sdims, 0.0f);
    rc_blob *g = rct_feed_f32(ws, "gates", 3, gdims, 0.0f);
    REQUIRE(hs && cs && g);
    fill(&hs->t, 1, 1.0f);
    fill(&cs->t, 2, 1.0f);
    fill(&g->t, 3, 2.0f);
    const int32_t seq[N] = {5, 1, 5, 0}, t1[1] = {1};
    REQUIRE(feed_i32(ws, "seq", N, seq) && feed_i32(ws, "t", 1, t1));
    rc_blob *hp = view_row(ws, "h_prev", hs, 1), *cp = view_row(ws, "c_prev", cs, 1);
    rc_blob *ho = view_row(ws, "h_t", hs, 2), *co = view_row(ws, "c_t", cs, 2);
    REQUIRE(hp && cp && ho && co);

    float before[T1 * N * D];
    memcpy(before, rc_f32(&hs->t), sizeof before);
    rc_netdef *nd = rc_netdef_new("n");
    const char *ins[] = {"h_prev", "c_prev", "gates", "seq", "t"};
    const char *outs[] = {"h_t", "c_t"}, *refs[] = {"h_ref", "c_ref"};
    REQUIRE(rct_add_op(nd, "LSTMUnit", 5, ins, 2, outs));
    REQUIRE(rct_add_op(nd, "LSTMUnit", 5, ins, 2, refs));
    rc_op *op = rc_op_create(ws, &nd->ops[0], 0, &err);
    rc_op *ref = rc_op_create(ws, &nd->ops[1], 1, &err);
    REQUIRE(op && ref);
    void *hdata = rc_tensor_data(&ho->t);
    for (int rep = 0; rep < 2; rep++) {
        CHECK_OK(rc_op_run(op, &err), err);
        CHECK_OK(rc_op_run(ref, &err), err);
        CHECK(ho->t.storage == hs->t.storage && co->t.storage == cs->t.storage);
        CHECK(rc_tensor_data(&ho->t) == hdata);
        CHECK_EQ(ho->t.ndim, 3);
        CHECK_EQ(ho->t.dims[0], 1);
        /* row 2 of the state buffers holds the result, bitwise equal to a private-output run */
        CHECK(memcmp(rc_f32(&hs->t) + 2 * N * D, rc_f32(&rc_ws_get(ws, "h_ref")->t), N * D * 4) == 0);
        CHECK(memcmp(rc_f32(&cs->t) + 2 * N * D, rc_f32(&rc_ws_get(ws, "c_ref")->t), N * D * 4) == 0);
        /* rows 0 and 1 untouched; invalid rows (n = 1, 3) carried row 1 through */
        CHECK(memcmp(rc_f32(&hs->t), before, 2 * N * D * 4) == 0);
        CHECK(memcmp(rc_f32(&hs->t) + 2 * N * D + 1 * D, before + 1 * N * D + 1 * D, D * 4) == 0);
        CHECK(memcmp(rc_f32(&hs->t) + 2 * N * D + 3 * D, before + 1 * N * D + 3 * D, D * 4) == 0);
        CHECK(memcmp(rc_f32(&hs->t) + 2 * N * D, before + 2 * N * D, D * 4) != 0); /* valid row changed */
    }
    rc_op_free(op);
    rc_op_free(ref);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* One lane: its own blobs and its own forward + gradient op instances for both units. */
typedef struct {
    rc_op *ops[4];
    rc_status st;
    rc_err err;
} lane;

static void *lane_run(void *p)
{
    lane *l = p;
    for (int it = 0; it < ITERS && !l->st; it++)
        for (int k = 0; k < 4 && !l->st; k++) l->st = rc_op_run(l->ops[k], &l->err);
    return NULL;
}

static void make_lane(rc_workspace *ws, rc_netdef *nd, int i, lane *l)
{
    char nm[16][32];
    const char *keys[16] = {"hp", "cp", "g", "seq", "t", "h", "c", "dh", "dc", "dhp", "dcp", "dg",
                            "gg", "gh", "gdhp", "gdg"};
    for (int k = 0; k < 16; k++) snprintf(nm[k], sizeof nm[k], "%s_%d", keys[k], i);
    const int64_t s3[3] = {1, N, D}, g4[3] = {1, N, 4 * D}, g3[3] = {1, N, 3 * D};
    rc_blob *b[5] = {rct_feed_f32(ws, nm[0], 3, s3, 0), rct_feed_f32(ws, nm[1], 3, s3, 0),
                     rct_feed_f32(ws, nm[2], 3, g4, 0), rct_feed_f32(ws, nm[7], 3, s3, 0),
                     rct_feed_f32(ws, nm[8], 3, s3, 0)};
    rc_blob *gg = rct_feed_f32(ws, nm[12], 3, g3, 0);
    for (int k = 0; k < 5; k++) fill(&b[k]->t, 10u * (unsigned)i + (unsigned)k, 1.5f);
    fill(&gg->t, 99u + (unsigned)i, 1.5f);
    const int32_t seq[N] = {3, 0, 2, 1}, t[1] = {1};
    feed_i32(ws, nm[3], N, seq);
    feed_i32(ws, nm[4], 1, t);
    const char *fi[] = {nm[0], nm[1], nm[2], nm[3], nm[4]}, *fo[] = {nm[5], nm[6]};
    const char *gi[] = {nm[0], nm[1], nm[2], nm[3], nm[4], nm[5], nm[6], nm[7], nm[8]};
    const char *go[] = {nm[9], nm[10], nm[11]};
    const char *ri[] = {nm[0], nm[12], nm[3], nm[4]}, *ro[] = {nm[13]};
    const char *rgi[] = {nm[0], nm[12], nm[3], nm[4], nm[13], nm[7]}, *rgo[] = {nm[14], nm[15]};
    int base = nd->n_op;
    rc_opdef_set_arg_i(rct_add_op(nd, "LSTMUnit", 5, fi, 2, fo), "drop_states", i & 1);
    rc_opdef_set_arg_i(rct_add_op(nd, "LSTMUnitGradient", 9, gi, 3, go), "drop_states", i & 1);
    rct_add_op(nd, "GRUUnit", 4, ri, 1, ro);
    rct_add_op(nd, "GRUUnitGradient", 6, rgi, 2, rgo);
    for (int k = 0; k < 4; k++) {
        rc_err_clear(&l->err);
        l->ops[k] = rc_op_create(ws, &nd->ops[base + k], base + k, &l->err);
    }
    l->st = RC_OK;
}

static void test_concurrent_instances_match_serial(void)
{
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws);
    rc_netdef *nd = rc_netdef_new("lanes");
    static lane lanes[LANES];
    for (int i = 0; i < LANES; i++) {
        make_lane(ws, nd, i, &lanes[i]);
        for (int k = 0; k < 4; k++) REQUIRE(lanes[i].ops[k]);
    }
    /* serial reference */
    const char *outs[] = {"h", "c", "dhp", "dcp", "dg", "gh", "gdhp", "gdg"};
    static float ref[LANES][8][N * 4 * D];
    for (int i = 0; i < LANES; i++) {
        lane_run(&lanes[i]);
        CHECK_OK(lanes[i].st, lanes[i].err);
        for (int k = 0; k < 8; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "%s_%d", outs[k], i);
            const rc_tensor *t = &rc_ws_get(ws, nm)->t;
            memcpy(ref[i][k], rc_f32(t), rc_tensor_nbytes(t));
            /* scribble so the threaded run must rewrite everything */
            memset(rc_f32(t), 0xff, rc_tensor_nbytes(t));
        }
    }
    pthread_t th[LANES];
    for (int i = 0; i < LANES; i++) REQUIRE(pthread_create(&th[i], NULL, lane_run, &lanes[i]) == 0);
    for (int i = 0; i < LANES; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < LANES; i++) {
        CHECK_OK(lanes[i].st, lanes[i].err);
        for (int k = 0; k < 8; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "%s_%d", outs[k], i);
            const rc_tensor *t = &rc_ws_get(ws, nm)->t;
            CHECK(memcmp(ref[i][k], rc_f32(t), rc_tensor_nbytes(t)) == 0);
        }
        for (int k = 0; k < 4; k++) rc_op_free(lanes[i].ops[k]);
    }
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* In a serial step loop with 2 or more step threads (rc_step_blas_set_threads),
 * a cell of at least 4096 elements is split by rows over rc_par_run's
 * threads: every output equals the unsplit run bit for bit, with rows whose
 * seq_lengths have ended (drop_states on and off), and the split is counted. */
static void test_split_rows_match_whole(void)
{
    enum { SN = 70, SD = 64 };
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws);
    const int64_t s3[3] = {1, SN, SD}, g4[3] = {1, SN, 4 * SD}, g3[3] = {1, SN, 3 * SD};
    const char *names[] = {"hp", "cp", "g", "dh", "dc", "gg"};
    const int64_t *shapes[] = {s3, s3, g4, s3, s3, g3};
    for (int k = 0; k < 6; k++) {
        rc_blob *b = rct_feed_f32(ws, names[k], 3, shapes[k], 0);
        REQUIRE(b);
        fill(&b->t, 7u + (unsigned)k, 2.5f);
    }
    int32_t seq[SN], t[1] = {2};
    for (int n = 0; n < SN; n++) seq[n] = n % 5;
    REQUIRE(feed_i32(ws, "seq", SN, seq) && feed_i32(ws, "t", 1, t));
    const char *fi[] = {"hp", "cp", "g", "seq", "t"}, *fo[] = {"h", "c"};
    const char *gi[] = {"hp", "cp", "g", "seq", "t", "h", "c", "dh", "dc"}, *go[] = {"dhp", "dcp", "dg"};
    const char *ri[] = {"hp", "gg", "seq", "t"}, *ro[] = {"gh"};
    const char *rgi[] = {"hp", "gg", "seq", "t", "gh", "dh"}, *rgo[] = {"gdhp", "gdg"};
    const char *outs[] = {"h", "c", "dhp", "dcp", "dg", "gh", "gdhp", "gdg"};
    for (int drop = 0; drop < 2; drop++) {
        rc_netdef *nd = rc_netdef_new("split");
        REQUIRE(nd);
        rc_opdef_set_arg_i(rct_add_op(nd, "LSTMUnit", 5, fi, 2, fo), "drop_states", drop);
        rc_opdef_set_arg_i(rct_add_op(nd, "LSTMUnitGradient", 9, gi, 3, go), "drop_states", drop);
        rc_opdef_set_arg_i(rct_add_op(nd, "GRUUnit", 4, ri, 1, ro), "drop_states", drop);
        rc_opdef_set_arg_i(rct_add_op(nd, "GRUUnitGradient", 6, rgi, 2, rgo), "drop_states", drop);
        rc_err_clear(&err);
        rc_net *net = rc_net_create(ws, nd, &err);
        REQUIRE(net);
        static float ref[8][SN * 4 * SD];
        int prev = rc_step_blas_set_threads(1);
        CHECK_OK(rc_net_run(net, &err), err);
        for (int k = 0; k < 8; k++) {
            rc_tensor *o = &rc_ws_get(ws, outs[k])->t;
            memcpy(ref[k], rc_f32(o), rc_tensor_nbytes(o));
        }
        for (int threads = 2; threads <= 3; threads++) {
            for (int k = 0; k < 8; k++) {
                rc_tensor *o = &rc_ws_get(ws, outs[k])->t;
                memset(rc_f32(o), 0xff, rc_tensor_nbytes(o));
            }
            rc_step_blas_set_threads(threads);
            int64_t before = rc_unit_splits();
            CHECK_OK(rc_net_run(net, &err), err);
            CHECK_EQ(rc_unit_splits(), before + 4);
            for (int k = 0; k < 8; k++) {
                rc_tensor *o = &rc_ws_get(ws, outs[k])->t;
                CHECK(memcmp(ref[k], rc_f32(o), rc_tensor_nbytes(o)) == 0);
            }
        }
        rc_step_blas_set_threads(prev);
        rc_net_free(net);
        rc_netdef_free(nd);
    }
    rc_ws_free(ws);
}

static void test_bad_inputs_name_op_and_blob(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws);
    const int64_t s3[3] = {1, N, D}, bad[3] = {1, N, 4 * D - 1};
    rct_feed_f32(ws, "h", 3, s3, 0);
    rct_feed_f32(ws, "c", 3, s3, 0);
    rct_feed_f32(ws, "g", 3, bad, 0);
    const int32_t seq[N] = {1, 1, 1, 1}, t[1] = {0};
    feed_i32(ws, "seq", N, seq);
    feed_i32(ws, "t", 1, t);
    rc_netdef *nd = rc_netdef_new("n");
    const char *ins[] = {"h", "c", "g", "seq", "t"}, *outs[] = {"ho", "co"};
    rct_add_op(nd, "LSTMUnit", 5, ins, 2, outs);
    rc_op *op = rc_op_create(ws, &nd->ops[0], 7, &err);
    REQUIRE(op);
    CHECK_ERR(rc_op_run(op, &err), RC_ERR_VALUE, err, "op LSTMUnit #7: input 2 blob 'g' (gates)");
    rc_op_free(op);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* The vectorisable exp / sigmoid / tanh of kernels/vmath.h against libm in
 * double precision on a dense grid (the accuracy vmath.h states), and NaN,
 * +-Inf and the clamps. */
static void test_vmath_accuracy(void)
{
    double e_exp = 0, e_sig = 0, e_tanh = 0;
    for (double v = -87.0; v < 88.0; v += 0.000917) {
        float x = (float)v;
        double e = exp((double)x), s = 1.0 / (1.0 + exp(-(double)x)), th = tanh((double)x);
        double r1 = fabs(rc_expf(x) - e) / e, r2 = fabs(rc_sigmoidf(x) - s) / s, r3 = fabs(rc_tanhf(x) - th);
        if (r1 > e_exp) e_exp = r1;
        if (r2 > e_sig) e_sig = r2;
        if (r3 > e_tanh) e_tanh = r3;
    }
    if (!(e_exp < 2e-7 && e_sig < 3e-7 && e_tanh < 2e-7))
        RCT_FAIL_AT("max errors: exp relative %.3g, sigmoid relative %.3g, tanh absolute %.3g", e_exp, e_sig, e_tanh);
    else rct_passed++;
    /* the clamps themselves: x / ln2 rounds to 127 and -126 there (a 128 would overflow the exponent) */
    const float hi = 88.3762626647949f, lo = -87.3365447504f;
    CHECK(fabs(rc_expf(hi) - exp((double)hi)) / exp((double)hi) < 2e-7);
    CHECK(fabs(rc_expf(lo) - exp((double)lo)) / exp((double)lo) < 2e-7);
    CHECK(rc_expf(0.f) == 1.f && rc_sigmoidf(0.f) == 0.5f && rc_tanhf(0.f) == 0.f);
    CHECK(isnan(rc_expf(NAN)) && isnan(rc_sigmoidf(NAN)) && isnan(rc_tanhf(NAN)));
    CHECK(isfinite(rc_expf(INFINITY)) && rc_expf(INFINITY) > 1e38f && rc_expf(-INFINITY) >= 0.f &&
          rc_expf(-INFINITY) < 1.2e-38f);
    CHECK(rc_sigmoidf(INFINITY) == 1.f && rc_sigmoidf(-INFINITY) >= 0.f && rc_sigmoidf(-INFINITY) < 1e-37f);
    CHECK(rc_tanhf(INFINITY) == 1.f && rc_tanhf(-INFINITY) == -1.f && rc_tanhf(20.f) == 1.f);
}

int main(void)
{
    RUN(test_vmath_accuracy);
    RUN(test_outputs_written_through_views);
    RUN(test_concurrent_instances_match_serial);
    RUN(test_split_rows_match_whole);
    RUN(test_bad_inputs_name_op_and_blob);
    return TEST_REPORT();
}
