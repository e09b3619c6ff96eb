/* Operators and nets: the registry, op creation errors (unknown type, arity,
 * forbidden in-place, duplicate outputs, missing input, bad arguments), a
 * smoke run of every registered op on empty / odd / mistyped inputs (an error
 * or a result, never a crash), a small net of math, fill and shape ops
 * against a plain C reference, and the no-reallocation rule on re-runs. */
#include "rc_test.h"
#include "kernels/math_kernels.h"
#include "kernels/packed_gemm.h"
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- registry */
static void test_registry(void)
{
    int n = rc_op_num_schemas();
    CHECK(n >= 1);
    CHECK(rc_op_lookup("Copy") != NULL);
    CHECK(rc_op_lookup("copy") == NULL); /* case-sensitive */
    CHECK(rc_op_lookup("") == NULL);
    CHECK(rc_op_lookup("NoSuchOp") == NULL);
    CHECK(rc_op_schema_at(n) == NULL);
    CHECK(rc_op_schema_at(-1) == NULL);
    int ok_unique = 1, ok_sane = 1;
    for (int i = 0; i < n; i++) {
        const rc_op_schema *s = rc_op_schema_at(i);
        if (!s || !s->type) { ok_sane = 0; continue; }
        /* names are unique across the family tables: lookup finds this very row */
        if (rc_op_lookup(s->type) != s) {
            ok_unique = 0;
            printf("  duplicate op type '%s'\n", s->type);
        }
        if (!s->run || s->min_in < 0 || s->min_out < 0 || (s->max_in >= 0 && s->max_in < s->min_in) ||
            (s->max_out >= 0 && s->max_out < s->min_out) || !s->doc) {
            ok_sane = 0;
            printf("  schema '%s' has inconsistent arity / no run / no doc\n", s->type);
        }
    }
    CHECK(ok_unique);
    CHECK(ok_sane);
}

/* ---------------------------------------------------------------- creation errors */
static rc_op *create1(rc_workspace *ws, const char *type, int n_in, const char *const *ins, int n_out,
                      const char *const *outs, rc_err *err)
{
    rc_netdef *nd = rc_netdef_new("t");
    rc_opdef *od = nd ? rct_add_op(nd, type, n_in, ins, n_out, outs) : NULL;
    rc_op *op = od ? rc_op_create(ws, od, 3, err) : NULL;
    rc_netdef_free(nd);
    return op;
}

static void test_create_errors(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t d[] = {2, 3};
    REQUIRE(rct_feed_f32(ws, "x", 2, d, 0.f) && rct_feed_f32(ws, "w", 2, d, 0.f));
    const char *x1[] = {"x"}, *y1[] = {"y"}, *xx[] = {"x", "x"}, *yy[] = {"y", "y"}, *none[] = {NULL};
    (void)none;

    rc_err_clear(&err);
    CHECK(create1(ws, "NoSuchOp", 1, x1, 1, y1, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_KEY);
    CHECK_HAS(err.msg, "op #3: unknown operator type 'NoSuchOp'");

    rc_err_clear(&err);
    CHECK(create1(ws, "Copy", 0, x1, 1, y1, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op Copy #3: expects 1 inputs, got 0");
    rc_err_clear(&err);
    CHECK(create1(ws, "Copy", 2, xx, 1, y1, &err) == NULL);
    CHECK_HAS(err.msg, "expects 1 inputs, got 2");
    rc_err_clear(&err);
    CHECK(create1(ws, "Copy", 1, x1, 0, y1, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_VALUE);
    CHECK_HAS(err.msg, "expects 1 outputs, got 0");
    CHECK(rc_ws_get(ws, "y") == NULL); /* nothing was created by a failed op */

    rc_err_clear(&err);
    const char *miss[] = {"missing"};
    CHECK(create1(ws, "Copy", 1, miss, 1, y1, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_KEY);
    CHECK_HAS(err.msg, "op Copy #3: input 0 blob 'missing' does not exist");

    /* in-place: Copy allows it; ops with no allow_inplace refuse it */
    rc_op *op = create1(ws, "Copy", 1, x1, 1, x1, &err);
    CHECK(op != NULL);
    if (op) {
        CHECK_OK(rc_op_run(op, &err), err);
        CHECK(rc_f32(&rc_ws_get(ws, "x")->t)[5] == 5.f);
        rc_op_free(op);
    }
    int found = 0;
    for (int i = 0; i < rc_op_num_schemas(); i++) {
        const rc_op_schema *s = rc_op_schema_at(i);
        if (s->allow_inplace || s->min_in < 1 || s->min_out < 1 || s->min_in > 8) continue;
        const char *ins[8], *outs[8] = {"x", "o1", "o2", "o3", "o4", "o5", "o6", "o7"};
        for (int k = 0; k < s->min_in; k++) ins[k] = "x";
        rc_err_clear(&err);
        op = create1(ws, s->type, s->min_in, ins, s->min_out, outs, &err);
        CHECK(op == NULL);
        rc_op_free(op);
        CHECK_EQ(err.code, RC_ERR_VALUE);
        CHECK_HAS(err.msg, "which this op does not allow (in-place)");
        found++;
    }
    CHECK(found > 0 || rc_op_lookup("FC") == NULL);
    if (rc_op_lookup("FC")) {
        const char *fin[] = {"x", "w", "b"}, *fout[] = {"w"};
        rc_err_clear(&err);
        CHECK(create1(ws, "FC", 3, fin, 1, fout, &err) == NULL);
        CHECK_HAS(err.msg, "op FC #3: input 1 and output 0 are the same blob 'w'");
    }
    /* two outputs naming one blob */
    for (int i = 0; i < rc_op_num_schemas(); i++) {
        const rc_op_schema *s = rc_op_schema_at(i);
        if (!(s->max_out < 0 || s->max_out >= 2) || s->min_out > 2 || s->min_in > 8) continue;
        const char *ins[8];
        for (int k = 0; k < 8; k++) ins[k] = "x";
        rc_err_clear(&err);
        op = create1(ws, s->type, s->min_in ? s->min_in : 0, ins, 2, yy, &err);
        CHECK(op == NULL);
        rc_op_free(op);
        if (err.code == RC_ERR_VALUE && strstr(err.msg, "outputs 0 and 1 are the same blob 'y'")) {
            rct_passed++;
        } else if (!strstr(err.msg, "in-place")) { /* Split x -> (x?..) may fail on in-place first */
            RCT_FAIL_AT("%s: duplicate outputs not refused: %s", s->type, err.msg);
        }
    }

    /* wrong argument kinds fail at creation, naming op and argument */
    if (rc_op_lookup("Scale")) {
        rc_netdef *nd = rc_netdef_new("t");
        rc_opdef *od = rct_add_op(nd, "Scale", 1, x1, 1, y1);
        REQUIRE(od && rc_opdef_set_arg_s(od, "scale", "two") == 0);
        rc_err_clear(&err);
        op = rc_op_create(ws, od, 0, &err);
        CHECK(op == NULL);
        CHECK_EQ(err.code, RC_ERR_TYPE);
        CHECK_HAS(err.msg, "Scale");
        CHECK_HAS(err.msg, "'scale'");
        rc_netdef_free(nd);
    }

    /* a net whose second op fails names the net and the op index */
    rc_netdef *nd = rc_netdef_new("mynet");
    REQUIRE(nd != NULL);
    REQUIRE(rct_add_op(nd, "Copy", 1, x1, 1, y1) && rct_add_op(nd, "Copy", 1, miss, 1, y1));
    rc_err_clear(&err);
    CHECK(rc_net_create(ws, nd, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_KEY);
    CHECK_HAS(err.msg, "net 'mynet': op Copy #1: input 0 blob 'missing'");
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- shapes checked at net creation */
static void test_shapes_checked_at_creation(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {4, 3}, dw[] = {5, 2}, dw_ok[] = {5, 3}, db[] = {5};
    REQUIRE(rct_feed_f32(ws, "x", 2, dx, 0.f) && rct_feed_f32(ws, "w", 2, dw, 0.f) &&
            rct_feed_f32(ws, "w_ok", 2, dw_ok, 0.f) && rct_feed_f32(ws, "b", 1, db, 0.f));
    const char *bad[] = {"x", "w", "b"}, *good[] = {"x", "w_ok", "b"}, *y1[] = {"y"}, *z1[] = {"z"};
    const char *later[] = {"y", "w", "b"};

    /* K of X (3) and W (2) differ: refused at creation, naming net, op and blobs */
    rc_netdef *nd = rc_netdef_new("shapes");
    REQUIRE(nd && rct_add_op(nd, "FC", 3, bad, 1, y1));
    rc_err_clear(&err);
    CHECK(rc_net_create(ws, nd, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_VALUE);
    CHECK_HAS(err.msg, "net 'shapes': op FC #0: input 1 blob 'w' of shape (5, 2)");
    CHECK(rc_ws_get(ws, "y") == NULL || rc_ws_get(ws, "y")->t.dtype == RC_UNDEF);
    rc_netdef_free(nd);

    /* an input written by an earlier op of the net is checked when the net runs */
    nd = rc_netdef_new("later");
    REQUIRE(nd && rct_add_op(nd, "FC", 3, good, 1, y1) && rct_add_op(nd, "FC", 3, later, 1, z1));
    rc_err_clear(&err);
    rc_net *net = rc_net_create(ws, nd, &err);
    CHECK(net != NULL);
    if (net) {
        CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
        CHECK_HAS(err.msg, "op FC #1: input 1 blob 'w' of shape (5, 2)");
        rc_net_free(net);
    }
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- every op on odd inputs */
enum { N_CFG = 9 };

/* Feeds input k for configuration cfg. */
static int feed_cfg(rc_workspace *ws, const char *name, int k, int cfg)
{
    rc_err err;
    rc_blob *b = rc_ws_create_local(ws, name, &err);
    if (!b) return -1;
    rc_tensor *t = &b->t;
    int64_t d[4];
    switch (cfg) {
    case 0: return 0; /* unfed */
    case 1: d[0] = 2, d[1] = 3; return rc_tensor_resize(t, RC_F32, 2, d, &err) ? -1 : 0;
    case 2: d[0] = 2, d[1] = 3; return rc_tensor_resize(t, RC_I32, 2, d, &err) ? -1 : 0;
    case 3: return rc_tensor_resize(t, RC_F32, 0, d, &err) ? -1 : 0; /* scalar */
    case 4: d[0] = 0, d[1] = 3; return rc_tensor_resize(t, RC_F32, 2, d, &err) ? -1 : 0;
    case 5:
        d[0] = k ? 3 : 2, d[1] = 3;
        return rc_tensor_resize(t, RC_F32, k ? 1 : 2, k ? d + 1 : d, &err) ? -1 : 0;
    case 6:
        d[0] = 4, d[1] = 3, d[2] = 2;
        return rc_tensor_resize(t, RC_F32, k ? 2 : 3, k ? d + 1 : d, &err) ? -1 : 0;
    case 7: /* f32 data, then int32 [2, 3] (shape-like inputs) */
        if (k == 0) { d[0] = 2, d[1] = 3; return rc_tensor_resize(t, RC_F32, 2, d, &err) ? -1 : 0; }
        d[0] = 2;
        if (rc_tensor_resize(t, RC_I32, 1, d, &err)) return -1;
        rc_i32(t)[0] = 3, rc_i32(t)[1] = 2;
        return 0;
    case 8: /* rank 8 of ones, and negative garbage in int inputs */
        for (int i = 0; i < 4; i++) d[i] = 1;
        if (k % 2) {
            if (rc_tensor_resize(t, RC_I32, 1, d, &err)) return -1;
            rc_i32(t)[0] = -5;
            return 0;
        }
        return rc_tensor_resize(t, RC_F32, 4, d, &err) ? -1 : 0;
    }
    return -1;
}

static int fill_values(rc_workspace *ws)
{
    for (int i = 0; i < rc_ws_num_blobs(ws); i++) {
        rc_tensor *t = &rc_ws_blob_at(ws, i)->t;
        if (t->dtype == RC_F32)
            for (int64_t j = 0; j < rc_tensor_numel(t); j++) rc_f32(t)[j] = 0.5f + 0.25f * (float)j;
    }
    return 0;
}

static void check_failure_message(const rc_op_schema *s, rc_status st, const rc_err *err, int cfg,
                                  const char *when)
{
    if (st == RC_OK) return;
    char want[128];
    snprintf(want, sizeof want, "op %s #", s->type);
    if (st < RC_OK || st > RC_ERR_IO || err->code != st || strncmp(err->msg, want, strlen(want)) != 0)
        RCT_FAIL_AT("%s (cfg %d, %s): status %d, err.code %d, message \"%s\" should start with \"%s\"", s->type,
                    cfg, when, (int)st, (int)err->code, err->msg, want);
    else
        rct_passed++;
}

static void smoke_one(const rc_op_schema *s, int n_in, int n_out, int cfg)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    if (!ws) { RCT_FAIL_AT("out of memory"); return; }
    char in_names[12][8], out_names[12][8];
    const char *ins[12], *outs[12];
    for (int k = 0; k < n_in; k++) {
        snprintf(in_names[k], 8, "in%d", k);
        ins[k] = in_names[k];
        if (feed_cfg(ws, ins[k], k, cfg)) RCT_FAIL_AT("feeding cfg %d", cfg);
    }
    fill_values(ws);
    for (int k = 0; k < n_out; k++) {
        snprintf(out_names[k], 8, "out%d", k);
        outs[k] = out_names[k];
    }
    rc_netdef *nd = rc_netdef_new("smoke");
    rc_opdef *od = nd ? rct_add_op(nd, s->type, n_in, ins, n_out, outs) : NULL;
    if (!od) { RCT_FAIL_AT("out of memory"); rc_netdef_free(nd); rc_ws_free(ws); return; }
    rc_err_clear(&err);
    rc_op *op = rc_op_create(ws, od, 0, &err);
    if (!op) {
        check_failure_message(s, err.code ? err.code : RC_ERR_RUNTIME, &err, cfg, "create");
    } else {
        for (int r = 0; r < 2; r++) {
            rc_err_clear(&err);
            rc_status st = rc_op_run(op, &err);
            check_failure_message(s, st, &err, cfg, "run");
        }
        rc_op_free(op);
    }
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

static void test_all_ops_odd_inputs(void)
{
    int n = rc_op_num_schemas();
    for (int i = 0; i < n; i++) {
        const rc_op_schema *s = rc_op_schema_at(i);
        int in_counts[3] = {s->min_in, s->min_in + 1, s->max_in < 0 ? s->min_in + 3 : s->max_in};
        int out_counts[2] = {s->min_out, s->max_out < 0 ? s->min_out + 2 : s->max_out};
        for (int a = 0; a < 3; a++) {
            if (in_counts[a] > 10 || (s->max_in >= 0 && in_counts[a] > s->max_in)) continue;
            for (int b = 0; b < 2; b++) {
                if (out_counts[b] > 10) continue;
                for (int cfg = 0; cfg < N_CFG; cfg++) smoke_one(s, in_counts[a], out_counts[b], cfg);
            }
        }
    }
}

/* ---------------------------------------------------------------- a small net */
static int have(const char *const *types, int n)
{
    for (int i = 0; i < n; i++)
        if (!rc_op_lookup(types[i])) {
            printf("  note: op %s is not registered yet; skipping\n", types[i]);
            return 0;
        }
    return 1;
}

static float sigm(float v) { return 1.f / (1.f + expf(-v)); }

static int close_to(const float *a, const float *b, int64_t n, float tol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(a[i] - b[i]) <= tol * (1.f + fabsf(b[i])))) {
            printf("  mismatch at %lld: %g vs %g\n", (long long)i, (double)a[i], (double)b[i]);
            return 0;
        }
    return 1;
}

static rc_opdef *add(rc_netdef *nd, const char *type, const char *in_csv, const char *out_csv)
{
    rc_opdef *od = rc_netdef_add_op(nd, type);
    if (!od) return NULL;
    char buf[256];
    const char *lists[2] = {in_csv, out_csv};
    for (int l = 0; l < 2; l++) {
        snprintf(buf, sizeof buf, "%s", lists[l]);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if ((l == 0 ? rc_opdef_add_input(od, tok) : rc_opdef_add_output(od, tok))) return NULL;
        }
    }
    return od;
}

static void test_small_net(void)
{
    const char *needed[] = {"GivenTensorFill", "ConstantFill", "FC", "Relu", "Sigmoid", "Tanh", "Add", "Mul",
                            "Sub", "Scale", "Sum", "MatMul", "Transpose", "Concat", "Split", "Reshape", "Copy"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {2, 3};
    rc_blob *xb = rct_feed_f32(ws, "X", 2, dx, 0.f);
    REQUIRE(xb != NULL);
    float X[6];
    for (int i = 0; i < 6; i++) X[i] = rc_f32(&xb->t)[i] = 0.3f * (float)i - 0.7f;
    const float W[12] = {0.1f, -0.2f, 0.3f, 0.5f, 0.4f, -0.1f, -0.3f, 0.2f, 0.25f, 0.6f, -0.5f, 0.05f};
    const int64_t wshape[] = {4, 3}, bshape[] = {4}, rshape[] = {-1}, split[] = {1, 3};

    rc_netdef *nd = rc_netdef_new("small");
    REQUIRE(nd != NULL);
    rc_opdef *od;
    int ok = 1;
    ok &= (od = add(nd, "GivenTensorFill", "", "W")) && !rct_set_ints(od, "shape", 2, wshape) &&
          !rct_set_floats(od, "values", 12, W);
    ok &= (od = add(nd, "ConstantFill", "", "b")) && !rct_set_ints(od, "shape", 1, bshape) &&
          !rct_set_f(od, "value", 0.5);
    ok &= add(nd, "FC", "X,W,b", "Y") != NULL;
    ok &= add(nd, "Relu", "Y", "R") != NULL;
    ok &= add(nd, "Sigmoid", "Y", "S") != NULL;
    ok &= add(nd, "Tanh", "Y", "Tn") != NULL;
    ok &= add(nd, "Add", "S,Tn", "A") != NULL;
    ok &= add(nd, "Mul", "A,R", "M") != NULL;
    ok &= add(nd, "Sub", "M,S", "D") != NULL;
    ok &= (od = add(nd, "Scale", "D", "Sc")) && !rct_set_f(od, "scale", 2.0);
    ok &= add(nd, "Sum", "Sc,S,Tn", "Su") != NULL;
    ok &= add(nd, "MatMul", "Su,W", "MM") != NULL; /* (2,4) x (4,3) */
    ok &= add(nd, "Transpose", "MM", "T") != NULL; /* (3,2) */
    ok &= (od = add(nd, "Concat", "T,T", "C,C_info")) && !rc_opdef_set_arg_i(od, "axis", 1); /* (3,4) */
    ok &= (od = add(nd, "Split", "C", "P1,P2")) && !rc_opdef_set_arg_i(od, "axis", 1) &&
          !rct_set_ints(od, "split", 2, split);
    ok &= (od = add(nd, "Reshape", "P2", "Rs,Rs_old")) && !rct_set_ints(od, "shape", 1, rshape);
    ok &= add(nd, "Copy", "Rs", "Out") != NULL;
    ok &= add(nd, "Relu", "Out", "Out") != NULL; /* in-place */
    REQUIRE(ok);

    rc_err_clear(&err);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_EQ(rc_net_num_ops(net), nd->n_op);
    CHECK(rc_net_op(net, 2)->index == 2);
    CHECK(strcmp(rc_net_def(net)->name, "small") == 0);
    CHECK(rc_net_def(net) != nd);
    CHECK_OK(rc_net_run(net, &err), err);

    /* reference */
    float Y[8], R[8], S[8], Tn[8], Su[8], MM[6], Out[9];
    for (int m = 0; m < 2; m++)
        for (int n = 0; n < 4; n++) {
            float acc = 0.5f;
            for (int k = 0; k < 3; k++) acc += X[m * 3 + k] * W[n * 3 + k];
            Y[m * 4 + n] = acc;
        }
    for (int i = 0; i < 8; i++) {
        R[i] = Y[i] > 0 ? Y[i] : 0;
        S[i] = sigm(Y[i]);
        Tn[i] = tanhf(Y[i]);
        float a = S[i] + Tn[i], mm = a * R[i], d = mm - S[i];
        Su[i] = 2.f * d + S[i] + Tn[i];
    }
    for (int m = 0; m < 2; m++)
        for (int n = 0; n < 3; n++) {
            float acc = 0;
            for (int k = 0; k < 4; k++) acc += Su[m * 4 + k] * W[k * 3 + n];
            MM[m * 3 + n] = acc;
        }
    /* T = MM^T (3,2); C = [T T] (3,4); P2 = C[:, 1:4] (3,3) -> Out (9,) */
    for (int r = 0; r < 3; r++) {
        float crow[4] = {MM[0 * 3 + r], MM[1 * 3 + r], MM[0 * 3 + r], MM[1 * 3 + r]};
        for (int c = 0; c < 3; c++) Out[r * 3 + c] = crow[c + 1] > 0 ? crow[c + 1] : 0;
    }
    const rc_tensor *ty = &rc_ws_get(ws, "Y")->t, *tsu = &rc_ws_get(ws, "Su")->t, *tmm = &rc_ws_get(ws, "MM")->t;
    const rc_tensor *tout = &rc_ws_get(ws, "Out")->t, *tp1 = &rc_ws_get(ws, "P1")->t;
    CHECK(strcmp(RC_SHAPE(ty), "(2, 4) float32") == 0);
    CHECK(close_to(rc_f32(ty), Y, 8, 1e-6f));
    CHECK(close_to(rc_f32(tsu), Su, 8, 1e-5f));
    CHECK(strcmp(RC_SHAPE(tmm), "(2, 3) float32") == 0);
    CHECK(close_to(rc_f32(tmm), MM, 6, 1e-5f));
    CHECK(strcmp(RC_SHAPE(&rc_ws_get(ws, "C")->t), "(3, 4) float32") == 0);
    CHECK(strcmp(RC_SHAPE(tp1), "(3, 1) float32") == 0);
    CHECK(strcmp(RC_SHAPE(tout), "(9,) float32") == 0);
    CHECK(close_to(rc_f32(tout), Out, 9, 1e-5f));

    /* a second run: same results, and no output is reallocated once sized */
    int nb = rc_ws_num_blobs(ws);
    void *ptrs[64];
    REQUIRE(nb <= 64);
    for (int i = 0; i < nb; i++) ptrs[i] = rc_tensor_data(&rc_ws_blob_at(ws, i)->t);
    for (int r = 0; r < 3; r++) CHECK_OK(rc_net_run(net, &err), err);
    int same = 1;
    for (int i = 0; i < nb; i++)
        if (rc_tensor_data(&rc_ws_blob_at(ws, i)->t) != ptrs[i]) {
            same = 0;
            printf("  blob '%s' was reallocated on a re-run\n", rc_ws_blob_at(ws, i)->name);
        }
    CHECK(same);
    CHECK(close_to(rc_f32(tout), Out, 9, 1e-5f));

    /* a run-time error names op, index and blob; the net stays usable */
    const int64_t bad[] = {2, 5};
    CHECK_OK(rc_tensor_resize(&xb->t, RC_F32, 2, bad, &err), err);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op FC #2");
    CHECK_HAS(err.msg, "'X'");
    CHECK_OK(rc_tensor_resize(&xb->t, RC_F32, 2, dx, &err), err);
    for (int i = 0; i < 6; i++) rc_f32(&xb->t)[i] = X[i];
    CHECK_OK(rc_net_run(net, &err), err);
    CHECK(close_to(rc_f32(tout), Out, 9, 1e-5f));

    /* a dtype error names the blob */
    CHECK_OK(rc_tensor_resize(&xb->t, RC_I32, 2, dx, &err), err);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_TYPE);
    CHECK_HAS(err.msg, "op FC #2: input 0 blob 'X' must be float32");

    /* interrupts are honoured between ops and leave the net usable */
    CHECK_OK(rc_tensor_resize(&xb->t, RC_F32, 2, dx, &err), err);
    rc_interrupt_request();
    CHECK(rc_interrupt_pending());
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_INTERRUPT);
    CHECK_HAS(err.msg, "net 'small' interrupted before op #0");
    rc_interrupt_clear();
    CHECK(!rc_interrupt_pending());
    CHECK_OK(rc_net_run(net, &err), err);

    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- ReversePackedSegs, Sqr, Negative */
/* x (3, 2, 2) float32 = 0..11 and xi the same shape int32 = 0, -1, ..., lengths {3, 1}: entry 0 reversed
 * whole, entry 1 unchanged (length 1); then in place on x; Sqr, Negative and SqrGradient of the result. */
static void test_reverse_sqr_negative(void)
{
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {3, 2, 2}, dl[] = {2};
    rc_blob *xb = rct_feed_f32(ws, "x", 3, dx, 0.f);
    rc_blob *lb = rc_ws_create_local(ws, "len", &err);
    rc_blob *ib = rc_ws_create_local(ws, "xi", &err);
    REQUIRE(xb && lb && ib && !rc_tensor_resize(&lb->t, RC_I32, 1, dl, &err) &&
            !rc_tensor_resize(&ib->t, RC_I32, 3, dx, &err));
    rc_i32(&lb->t)[0] = 3, rc_i32(&lb->t)[1] = 1;
    for (int i = 0; i < 12; i++) rc_i32(&ib->t)[i] = -i;
    rc_netdef *nd = rc_netdef_new("rev");
    REQUIRE(nd != NULL);
    int ok = add(nd, "ReversePackedSegs", "x,len", "y") && add(nd, "ReversePackedSegs", "xi,len", "yi") &&
             add(nd, "ReversePackedSegs", "x,len", "x") && add(nd, "Sqr", "y", "s") &&
             add(nd, "Negative", "y", "n") && add(nd, "SqrGradient", "y,n", "ds") && add(nd, "Negative", "n", "n");
    REQUIRE(ok);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    /* element (t, b, k) is 4 t + 2 b + k; its source step: 2 - t for b = 0, t for b = 1 */
    float want[12];
    for (int t = 0; t < 3; t++)
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 2; k++) want[t * 4 + b * 2 + k] = (float)(4 * (b == 0 ? 2 - t : t) + 2 * b + k);
    const rc_tensor *y = &rc_ws_get(ws, "y")->t, *yi = &rc_ws_get(ws, "yi")->t, *x = &rc_ws_get(ws, "x")->t;
    const rc_tensor *sq = &rc_ws_get(ws, "s")->t, *ng = &rc_ws_get(ws, "n")->t, *ds = &rc_ws_get(ws, "ds")->t;
    REQUIRE(y->dtype == RC_F32 && yi->dtype == RC_I32 && rc_tensor_same_shape(y, x) && rc_tensor_same_shape(yi, x));
    int same = 1, same_i = 1, same_ip = 1, math = 1;
    for (int i = 0; i < 12; i++) {
        same &= rc_f32(y)[i] == want[i];
        same_i &= rc_i32(yi)[i] == -(int32_t)want[i];
        same_ip &= rc_f32(x)[i] == want[i];
        math &= rc_f32(sq)[i] == want[i] * want[i] && rc_f32(ng)[i] == want[i] &&
                rc_f32(ds)[i] == -2.f * want[i] * want[i];
    }
    CHECK(same);
    CHECK(same_i);
    CHECK(same_ip);
    CHECK(math);
    /* a length out of [0, T] is refused when the op runs, naming the position and the value */
    rc_i32(&lb->t)[1] = 4;
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg,
              "op ReversePackedSegs #0: input 1 blob 'len' (lengths) holds 4 at position 1, outside [0, 3]");
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- PackSegments, UnpackSegments, padding */
/* x (4, 2) float32 = 0..7, lengths {3, 0, 1}: PackSegments -> (3, 3, 2) with zero padding and the int32
 * presence mask; UnpackSegments gives x back; AddPadding (width 1, zeros) then RemovePadding gives x back
 * with lengths_out {5, 2, 3} then {3, 0, 1}; LengthsToSegmentIds {0, 0, 0, 2}; a sum of lengths that
 * is not x's row count is refused when the op runs. */
static void test_pack_padding_net(void)
{
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {4, 2}, dl[] = {3};
    rc_blob *xb = rct_feed_f32(ws, "x", 2, dx, 0.f);
    rc_blob *lb = rc_ws_create_local(ws, "len", &err);
    REQUIRE(xb && lb && !rc_tensor_resize(&lb->t, RC_I32, 1, dl, &err));
    for (int i = 0; i < 8; i++) rc_f32(&xb->t)[i] = (float)i;
    rc_i32(&lb->t)[0] = 3, rc_i32(&lb->t)[1] = 0, rc_i32(&lb->t)[2] = 1;
    rc_netdef *nd = rc_netdef_new("lengths");
    REQUIRE(nd != NULL);
    rc_opdef *pk = rc_netdef_add_op(nd, "PackSegments");
    REQUIRE(pk && !rc_opdef_add_input(pk, "len") && !rc_opdef_add_input(pk, "x") && !rc_opdef_add_output(pk, "p") &&
            !rc_opdef_add_output(pk, "m") && !rc_opdef_set_arg_i(pk, "return_presence_mask", 1));
    int ok = add(nd, "UnpackSegments", "len,p", "u") && add(nd, "AddPadding", "x,len", "a,al") &&
             add(nd, "RemovePadding", "a,al", "r,rl") && add(nd, "LengthsToSegmentIds", "len", "ids");
    REQUIRE(ok);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    const rc_tensor *p = &rc_ws_get(ws, "p")->t, *m = &rc_ws_get(ws, "m")->t, *u = &rc_ws_get(ws, "u")->t;
    const rc_tensor *r = &rc_ws_get(ws, "r")->t, *al = &rc_ws_get(ws, "al")->t, *rl = &rc_ws_get(ws, "rl")->t;
    const rc_tensor *ids = &rc_ws_get(ws, "ids")->t, *a = &rc_ws_get(ws, "a")->t;
    REQUIRE(p->ndim == 3 && p->dims[0] == 3 && p->dims[1] == 3 && p->dims[2] == 2 && m->dtype == RC_I32);
    REQUIRE(rc_tensor_same_shape(u, &xb->t) && rc_tensor_same_shape(r, &xb->t) && a->dims[0] == 10);
    const float want_p[18] = {0, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 6, 7, 0, 0, 0, 0};
    const int32_t want_m[9] = {1, 1, 1, 0, 0, 0, 1, 0, 0};
    int same = 1;
    for (int i = 0; i < 18; i++) same &= rc_f32(p)[i] == want_p[i];
    for (int i = 0; i < 9; i++) same &= rc_i32(m)[i] == want_m[i];
    for (int i = 0; i < 8; i++) same &= rc_f32(u)[i] == (float)i && rc_f32(r)[i] == (float)i;
    for (int i = 0; i < 3; i++) same &= rc_i32(al)[i] == rc_i32(&lb->t)[i] + 2 && rc_i32(rl)[i] == rc_i32(&lb->t)[i];
    same &= ids->dims[0] == 4 && rc_i32(ids)[0] == 0 && rc_i32(ids)[2] == 0 && rc_i32(ids)[3] == 2;
    same &= rc_f32(a)[0] == 0.f && rc_f32(a)[1] == 0.f && rc_f32(a)[2] == 0.f && rc_f32(a)[3] == 1.f;
    CHECK(same);
    rc_i32(&lb->t)[2] = 2;
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op PackSegments #0: input 0 blob 'len' (lengths) of shape (3,) int32 sums to 5, but input 1 "
                       "blob 'x' of shape (4, 2) float32 has 4 rows (dim 0)");
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- GT, LE, Cast, Conditional, int32 Div */
/* BasicRNNCell's masks: seq {3, 1, 0, 2} against timestep {1} (broadcast=1): GT {1, 0, 0, 1}, LE its
 * complement, Cast to 'Float'; Conditional picks rows of a (4, 2) = 1..8 or b = -1..6; Div of seq by {2}
 * truncates; a zero divisor is refused naming the position, and the output keeps its old values. */
static void test_compare_cast_net(void)
{
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t d4[] = {4}, d1[] = {1}, d42[] = {4, 2};
    rc_blob *sb = rc_ws_create_local(ws, "seq", &err), *tb = rc_ws_create_local(ws, "t", &err);
    rc_blob *two = rc_ws_create_local(ws, "two", &err);
    rc_blob *ab = rct_feed_f32(ws, "a", 2, d42, 1.f), *bb = rct_feed_f32(ws, "b", 2, d42, -1.f);
    REQUIRE(sb && tb && two && ab && bb && !rc_tensor_resize(&sb->t, RC_I32, 1, d4, &err) &&
            !rc_tensor_resize(&tb->t, RC_I32, 1, d1, &err) && !rc_tensor_resize(&two->t, RC_I32, 1, d1, &err));
    const int32_t seq[] = {3, 1, 0, 2};
    memcpy(rc_i32(&sb->t), seq, sizeof seq);
    rc_i32(&tb->t)[0] = 1;
    rc_i32(&two->t)[0] = 2;
    rc_netdef *nd = rc_netdef_new("cmp");
    REQUIRE(nd != NULL);
    rc_opdef *g, *l, *c, *dv;
    int ok = (g = add(nd, "GT", "seq,t", "v")) && !rc_opdef_set_arg_i(g, "broadcast", 1) &&
             (l = add(nd, "LE", "seq,t", "iv")) && !rc_opdef_set_arg_i(l, "broadcast", 1) &&
             (c = add(nd, "Cast", "v", "vf")) && !rc_opdef_set_arg_s(c, "to", "Float") &&
             add(nd, "Conditional", "v,a,b", "sel") &&
             (dv = add(nd, "Div", "seq,two", "q")) && !rc_opdef_set_arg_i(dv, "broadcast", 1);
    REQUIRE(ok);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    const rc_tensor *v = &rc_ws_get(ws, "v")->t, *iv = &rc_ws_get(ws, "iv")->t, *vf = &rc_ws_get(ws, "vf")->t;
    const rc_tensor *sel = &rc_ws_get(ws, "sel")->t, *q = &rc_ws_get(ws, "q")->t;
    REQUIRE(v->dtype == RC_I32 && iv->dtype == RC_I32 && vf->dtype == RC_F32 && sel->dtype == RC_F32 &&
            q->dtype == RC_I32 && rc_tensor_numel(sel) == 8 && rc_tensor_numel(q) == 4);
    const int32_t want_v[] = {1, 0, 0, 1}, want_q[] = {1, 0, 0, 1};
    int good = 1;
    for (int i = 0; i < 4; i++) {
        good &= rc_i32(v)[i] == want_v[i] && rc_i32(iv)[i] == 1 - want_v[i] && rc_f32(vf)[i] == (float)want_v[i];
        good &= rc_i32(q)[i] == want_q[i];
        for (int k = 0; k < 2; k++)
            good &= rc_f32(sel)[2 * i + k] == rc_f32(want_v[i] ? &ab->t : &bb->t)[2 * i + k];
    }
    CHECK(good);
    rc_i32(&two->t)[0] = 0;
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op Div #4: integer division by zero: input 1 blob 'two' (1,) int32 is 0 at flat position 0");
    CHECK(rc_i32(&rc_ws_get(ws, "q")->t)[0] == 1);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* Copy and fills work on int32 too; Copy into a link view writes the state rows. */
static void test_copy_into_view(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t ds[] = {4, 2, 3}, dx[] = {1, 2, 3};
    rc_blob *state = rct_feed_f32(ws, "state", 3, ds, 0.f);
    rc_blob *x = rct_feed_f32(ws, "x", 3, dx, 100.f);
    rc_blob *v = rc_ws_create_local(ws, "state_t", &err);
    REQUIRE(state && x && v);
    rc_tensor_view_rows(&v->t, &state->t, 2, 1);
    rc_netdef *nd = rc_netdef_new("n");
    REQUIRE(nd && add(nd, "Copy", "x", "state_t"));
    rc_net *net = rc_net_create(ws, nd, &err);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    CHECK(v->t.storage == state->t.storage);
    const float *s = rc_f32(&state->t);
    CHECK(s[11] == 11.f && s[12] == 100.f && s[17] == 105.f && s[18] == 18.f);
    rc_net_free(net);
    rc_netdef_free(nd);

    /* int32 copy */
    const int64_t di[] = {3};
    rc_blob *ib = rc_ws_create_local(ws, "i", &err);
    REQUIRE(ib && !rc_tensor_resize(&ib->t, RC_I32, 1, di, &err));
    rc_i32(&ib->t)[2] = -9;
    nd = rc_netdef_new("n2");
    REQUIRE(nd && add(nd, "Copy", "i", "j"));
    net = rc_net_create(ws, nd, &err);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    CHECK(rc_ws_get(ws, "j")->t.dtype == RC_I32 && rc_i32(&rc_ws_get(ws, "j")->t)[2] == -9);
    /* Copy of an unfed blob: an error naming the blob */
    rc_ws_create_local(ws, "unfed", &err);
    rc_netdef_free(nd);
    rc_net_free(net);
    nd = rc_netdef_new("n3");
    REQUIRE(nd && add(nd, "Copy", "unfed", "k"));
    net = rc_net_create(ws, nd, &err);
    REQUIRE(net != NULL);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op Copy #0: input 0 blob 'unfed' holds no tensor");
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* Loss ops: Softmax + LabelCrossEntropy + AveragedLoss equals SoftmaxWithLoss;
 * SquaredL2Distance and SumElements against a C reference; out-of-range labels
 * are an IndexError naming the blob, and the net stays usable. */
static void test_loss_net(void)
{
    const char *needed[] = {"Softmax", "LabelCrossEntropy", "AveragedLoss", "SoftmaxWithLoss", "SquaredL2Distance",
                            "SumElements"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    enum { N = 3, D = 4 };
    const int64_t dx[] = {N, D}, dl[] = {N};
    rc_blob *xb = rct_feed_f32(ws, "X", 2, dx, 0.f), *yb = rct_feed_f32(ws, "Y", 2, dx, 0.f);
    rc_blob *lb = rc_ws_create_local(ws, "label", &err);
    REQUIRE(xb && yb && lb && rc_tensor_resize(&lb->t, RC_I32, 1, dl, &err) == RC_OK);
    float X[N * D], Y[N * D];
    for (int i = 0; i < N * D; i++) {
        X[i] = rc_f32(&xb->t)[i] = 0.5f * sinf((float)i) + 0.1f * (float)i;
        Y[i] = rc_f32(&yb->t)[i] = 0.3f * cosf((float)i);
    }
    const int32_t labels[N] = {0, 3, 1};
    memcpy(rc_i32(&lb->t), labels, sizeof labels);

    rc_netdef *nd = rc_netdef_new("loss");
    REQUIRE(nd != NULL);
    int ok = add(nd, "Softmax", "X", "P") && add(nd, "LabelCrossEntropy", "P,label", "xent") &&
             add(nd, "AveragedLoss", "xent", "loss") && add(nd, "SoftmaxWithLoss", "X,label", "P2,loss2") &&
             add(nd, "SquaredL2Distance", "X,Y", "dist") && add(nd, "SumElements", "dist", "dsum");
    REQUIRE(ok);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);

    float P[N * D], xent[N], loss = 0, dist[N], dsum = 0;
    for (int n = 0; n < N; n++) {
        float mx = X[n * D], z = 0;
        for (int d = 1; d < D; d++) mx = fmaxf(mx, X[n * D + d]);
        for (int d = 0; d < D; d++) z += expf(X[n * D + d] - mx);
        for (int d = 0; d < D; d++) P[n * D + d] = expf(X[n * D + d] - mx) / z;
        xent[n] = -logf(P[n * D + labels[n]]);
        loss += xent[n] / N;
        dist[n] = 0;
        for (int d = 0; d < D; d++) dist[n] += 0.5f * (X[n * D + d] - Y[n * D + d]) * (X[n * D + d] - Y[n * D + d]);
        dsum += dist[n];
    }
    const rc_tensor *tp = &rc_ws_get(ws, "P")->t, *tp2 = &rc_ws_get(ws, "P2")->t;
    CHECK(close_to(rc_f32(tp), P, N * D, 1e-5f));
    CHECK(close_to(rc_f32(tp2), P, N * D, 1e-5f));
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "xent")->t), xent, N, 1e-5f));
    CHECK_EQ(rc_tensor_numel(&rc_ws_get(ws, "loss")->t), 1);
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "loss")->t), &loss, 1, 1e-5f));
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "loss2")->t), &loss, 1, 1e-5f));
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "dist")->t), dist, N, 1e-5f));
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "dsum")->t), &dsum, 1, 1e-5f));

    /* labels out of range: IndexError naming the label blob; then usable again */
    for (int bad = 0; bad < 2; bad++) {
        rc_i32(&lb->t)[2] = bad ? -1 : D;
        rc_err_clear(&err);
        CHECK_EQ(rc_net_run(net, &err), RC_ERR_INDEX);
        CHECK_HAS(err.msg, "'label'");
    }
    rc_i32(&lb->t)[2] = labels[2];
    CHECK_OK(rc_net_run(net, &err), err);
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "loss2")->t), &loss, 1, 1e-5f));
    /* float labels where int32 is required */
    CHECK_OK(rc_tensor_resize(&lb->t, RC_F32, 1, dl, &err), err);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_TYPE);
    CHECK_HAS(err.msg, "'label'");
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- convolution and pooling */
/* Conv (NCHW, stride 2, pads 1 / 0, dilation 2, bias), ConvTranspose of its output with the same
 * filter, MaxPool with Caffe's legacy (ceil) windows and AveragePool with pads, against plain C
 * loops; a filter of the wrong shape is refused and leaves the net usable. */
static void test_conv_pool_net(void)
{
    const char *needed[] = {"Conv", "ConvTranspose", "MaxPool", "AveragePool"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    enum { N = 2, C = 3, H = 7, W = 6, M = 4, K = 3 };
    const int64_t dx[] = {N, C, H, W}, dw[] = {M, C, K, K}, db[] = {M};
    rc_blob *xb = rct_feed_f32(ws, "x", 4, dx, 0.f), *wb = rct_feed_f32(ws, "w", 4, dw, 0.f),
            *bb = rct_feed_f32(ws, "b", 1, db, 0.f);
    REQUIRE(xb && wb && bb);
    float *x = rc_f32(&xb->t), *b = rc_f32(&bb->t), w[M * C * K * K];
    for (int i = 0; i < N * C * H * W; i++) x[i] = sinf(0.7f * (float)i);
    for (int i = 0; i < M * C * K * K; i++) rc_f32(&wb->t)[i] = w[i] = cosf(0.3f * (float)i);
    for (int i = 0; i < M; i++) b[i] = 0.1f * (float)i;
    rc_netdef *nd = rc_netdef_new("convpool");
    REQUIRE(nd != NULL);
    const int64_t strides[] = {2, 2}, pads[] = {1, 0, 1, 0}, dil[] = {2, 1}, k3[] = {K, K}, k2[] = {2, 2};
    const int64_t ppad[] = {1, 1, 1, 1};
    rc_opdef *od = add(nd, "Conv", "x,w,b", "y"); /* each pointer is valid until the next add */
    REQUIRE(od && !rct_set_ints(od, "kernels", 2, k3) && !rct_set_ints(od, "strides", 2, strides) &&
            !rct_set_ints(od, "pads", 4, pads) && !rct_set_ints(od, "dilations", 2, dil));
    od = add(nd, "ConvTranspose", "y,w", "z");
    REQUIRE(od && !rct_set_ints(od, "kernels", 2, k3) && !rct_set_ints(od, "strides", 2, strides));
    od = add(nd, "MaxPool", "x", "mp");
    REQUIRE(od && !rct_set_ints(od, "kernels", 2, k2) && !rct_set_ints(od, "strides", 2, strides) &&
            !rct_set_ints(od, "pads", 4, ppad) && !rc_opdef_set_arg_i(od, "legacy_pad", 3));
    od = add(nd, "AveragePool", "x", "ap");
    REQUIRE(od && !rct_set_ints(od, "kernels", 2, k3) && !rct_set_ints(od, "pads", 4, ppad));
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);

    /* Conv: out = (in + pads - dilation (K - 1) - 1) / stride + 1 */
    enum { OH = (H + 1 + 1 - 2 * (K - 1) - 1) / 2 + 1, OW = (W + 0 + 0 - (K - 1) - 1) / 2 + 1 };
    const rc_tensor *ty = &rc_ws_get(ws, "y")->t;
    REQUIRE(ty->ndim == 4 && ty->dims[0] == N && ty->dims[1] == M && ty->dims[2] == OH && ty->dims[3] == OW);
    float y[N * M * OH * OW];
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double acc = b[m];
                    for (int c = 0; c < C; c++)
                        for (int a = 0; a < K; a++)
                            for (int e = 0; e < K; e++) {
                                const int ih = oh * 2 - 1 + a * 2, iw = ow * 2 + e;
                                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                                    acc += (double)w[((m * C + c) * K + a) * K + e] * x[((n * C + c) * H + ih) * W + iw];
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = (float)acc;
                }
    CHECK(close_to(rc_f32(ty), y, N * M * OH * OW, 1e-5f));

    /* ConvTranspose(y, w): z (N, C, (OH - 1) 2 + K, (OW - 1) 2 + K) scatters y through w */
    enum { ZH = (OH - 1) * 2 + K, ZW = (OW - 1) * 2 + K };
    const rc_tensor *tz = &rc_ws_get(ws, "z")->t;
    REQUIRE(tz->ndim == 4 && tz->dims[1] == C && tz->dims[2] == ZH && tz->dims[3] == ZW);
    static float z[N * C * ZH * ZW];
    memset(z, 0, sizeof z);
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    for (int c = 0; c < C; c++)
                        for (int a = 0; a < K; a++)
                            for (int e = 0; e < K; e++)
                                z[((n * C + c) * ZH + oh * 2 + a) * ZW + ow * 2 + e] +=
                                    y[((n * M + m) * OH + oh) * OW + ow] * w[((m * C + c) * K + a) * K + e];
    CHECK(close_to(rc_f32(tz), z, N * C * ZH * ZW, 1e-4f));

    /* MaxPool 2x2 stride 2 pad 1, Caffe's ceil windows: out = ceil((in + 2 - 2) / 2) + 1, less one if the
     * last window starts in the tail padding */
    const int PH = (H + 1) / 2 + 1 - (((H + 1) / 2) * 2 >= H + 1), PW = (W + 1) / 2 + 1 - (((W + 1) / 2) * 2 >= W + 1);
    const rc_tensor *tm = &rc_ws_get(ws, "mp")->t, *ta = &rc_ws_get(ws, "ap")->t;
    REQUIRE(tm->dims[2] == PH && tm->dims[3] == PW);
    int ok = 1;
    for (int p = 0; p < N * C; p++)
        for (int oh = 0; oh < PH; oh++)
            for (int ow = 0; ow < PW; ow++) {
                float mx = -INFINITY;
                for (int ih = oh * 2 - 1; ih < oh * 2 + 1; ih++)
                    for (int iw = ow * 2 - 1; iw < ow * 2 + 1; iw++)
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W) mx = fmaxf(mx, x[(p * H + ih) * W + iw]);
                ok &= rc_f32(tm)[(p * PH + oh) * PW + ow] == mx;
            }
    CHECK(ok);
    /* AveragePool 3x3 stride 1 pad 1: the mean over the cells of the image in each window */
    REQUIRE(ta->dims[2] == H && ta->dims[3] == W);
    ok = 1;
    for (int p = 0; p < N * C; p++)
        for (int oh = 0; oh < H; oh++)
            for (int ow = 0; ow < W; ow++) {
                double sum = 0;
                int cnt = 0;
                for (int ih = oh - 1; ih <= oh + 1; ih++)
                    for (int iw = ow - 1; iw <= ow + 1; iw++)
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W) sum += x[(p * H + ih) * W + iw], cnt++;
                const float want = (float)(sum / cnt);
                ok &= close_to(&rc_f32(ta)[(p * H + oh) * W + ow], &want, 1, 1e-6f);
            }
    CHECK(ok);

    /* a filter of the wrong shape: ValueError naming the filter blob; usable after */
    const int64_t dbad[] = {M, C, K, K - 1};
    CHECK_OK(rc_tensor_resize(&wb->t, RC_F32, 4, dbad, &err), err);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "'w'");
    CHECK_OK(rc_tensor_resize(&wb->t, RC_F32, 4, dw, &err), err);
    for (int i = 0; i < M * C * K * K; i++) rc_f32(&wb->t)[i] = w[i];
    CHECK_OK(rc_net_run(net, &err), err);
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "y")->t), y, N * M * OH * OW, 1e-5f));
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- deduplication ops */
/* Unique of (2, 3) indices, then UnsortedSegmentSum / Mean of (2, 3, 2) rows
 * over the remapping, against hand-computed values; a bad id is refused and
 * leaves the net usable. */
static void test_dedup_net(void)
{
    const char *needed[] = {"Unique", "UnsortedSegmentSum", "UnsortedSegmentMean", "UnsortedSegmentMeanGradient"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t di[] = {2, 3}, dv[] = {2, 3, 2};
    rc_blob *ib = rc_ws_create_local(ws, "idx", &err), *vb = rct_feed_f32(ws, "vals", 3, dv, 0.f);
    REQUIRE(ib && vb && rc_tensor_resize(&ib->t, RC_I32, 2, di, &err) == RC_OK);
    const int32_t idx[6] = {7, -3, 7, 0, -3, 7};
    memcpy(rc_i32(&ib->t), idx, sizeof idx);
    for (int i = 0; i < 12; i++) rc_f32(&vb->t)[i] = (float)(i + 1);

    rc_netdef *nd = rc_netdef_new("dedup");
    REQUIRE(nd != NULL);
    rc_opdef *od;
    int ok = add(nd, "Unique", "idx", "u,r") && add(nd, "UnsortedSegmentSum", "vals,r", "s") &&
             (od = add(nd, "UnsortedSegmentMean", "vals,r", "m")) && !rc_opdef_set_arg_i(od, "num_segments", 4) &&
             add(nd, "UnsortedSegmentMeanGradient", "m,r", "dm");
    REQUIRE(ok);
    rc_err_clear(&err);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);

    /* first occurrence order: 7, -3, 0; rows (1,2) (3,4) (5,6) | (7,8) (9,10) (11,12) */
    const int32_t want_u[3] = {7, -3, 0}, want_r[6] = {0, 1, 0, 2, 1, 0};
    const float want_s[6] = {1 + 5 + 11, 2 + 6 + 12, 3 + 9, 4 + 10, 7, 8};
    const float want_m[8] = {17.f / 3, 20.f / 3, 6, 7, 7, 8, 0, 0};
    const rc_tensor *tu = &rc_ws_get(ws, "u")->t, *tr = &rc_ws_get(ws, "r")->t, *ts = &rc_ws_get(ws, "s")->t;
    const rc_tensor *tm = &rc_ws_get(ws, "m")->t, *tdm = &rc_ws_get(ws, "dm")->t;
    CHECK(tu->dtype == RC_I32 && tu->ndim == 1 && tu->dims[0] == 3 && memcmp(rc_i32(tu), want_u, sizeof want_u) == 0);
    CHECK(tr->dtype == RC_I32 && tr->ndim == 2 && tr->dims[0] == 2 && tr->dims[1] == 3 &&
          memcmp(rc_i32(tr), want_r, sizeof want_r) == 0);
    CHECK(ts->ndim == 2 && ts->dims[0] == 3 && ts->dims[1] == 2 && close_to(rc_f32(ts), want_s, 6, 0.f));
    CHECK(tm->ndim == 2 && tm->dims[0] == 4 && tm->dims[1] == 2 && close_to(rc_f32(tm), want_m, 8, 1e-7f));
    /* dm[k] = m[r[k]] / count(r[k]): counts 3, 2, 1 */
    const int cnt[3] = {3, 2, 1};
    float want_dm[12];
    for (int k = 0; k < 6; k++)
        for (int j = 0; j < 2; j++) want_dm[k * 2 + j] = want_m[want_r[k] * 2 + j] / (float)cnt[want_r[k]];
    CHECK(tdm->ndim == 3 && tdm->dims[0] == 2 && tdm->dims[2] == 2 && close_to(rc_f32(tdm), want_dm, 12, 1e-7f));

    /* an index shape that is no prefix of the rows: refused, naming op and blobs; then usable again */
    const int64_t dbad[] = {3, 2};
    CHECK_OK(rc_tensor_resize(&ib->t, RC_I32, 2, dbad, &err), err);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op UnsortedSegmentSum #1: the shape of input 1 blob 'r' (segment_ids) (3, 2) int32");
    CHECK_OK(rc_tensor_resize(&ib->t, RC_I32, 2, di, &err), err);
    memcpy(rc_i32(&ib->t), idx, sizeof idx);
    CHECK_OK(rc_net_run(net, &err), err);
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "s")->t), want_s, 6, 0.f));
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- lengths reductions */
/* LengthsSum of (4, 2) rows by lengths {1, 0, 3}, SparseLengthsWeightedSum of those rows picked by
 * {3, 3, 0} with weights {1, 2, -1} by lengths {2, 1}, and LengthsMax, against hand-computed values;
 * a negative length is refused, names the op, and leaves the outputs and the net usable. */
static void test_lengths_net(void)
{
    const char *needed[] = {"LengthsSum", "SparseLengthsWeightedSum", "LengthsMax"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dd[] = {4, 2}, d3[] = {3}, d2[] = {2};
    rc_blob *db = rct_feed_f32(ws, "d", 2, dd, 0.f), *wb = rct_feed_f32(ws, "w", 1, d3, 0.f);
    rc_blob *lb = rc_ws_create_local(ws, "l", &err), *ib = rc_ws_create_local(ws, "i", &err);
    rc_blob *l2b = rc_ws_create_local(ws, "l2", &err);
    REQUIRE(db && wb && lb && ib && l2b);
    REQUIRE(rc_tensor_resize(&lb->t, RC_I32, 1, d3, &err) == RC_OK &&
            rc_tensor_resize(&ib->t, RC_I32, 1, d3, &err) == RC_OK &&
            rc_tensor_resize(&l2b->t, RC_I32, 1, d2, &err) == RC_OK);
    const int32_t len[3] = {1, 0, 3}, idx[3] = {3, 3, 0}, len2[2] = {2, 1};
    memcpy(rc_i32(&lb->t), len, sizeof len);
    memcpy(rc_i32(&ib->t), idx, sizeof idx);
    memcpy(rc_i32(&l2b->t), len2, sizeof len2);
    const float w[3] = {1, 2, -1}, d[8] = {1, 2, 3, -4, 5, 6, -7, 8};
    memcpy(rc_f32(&wb->t), w, sizeof w);
    memcpy(rc_f32(&db->t), d, sizeof d);

    rc_netdef *nd = rc_netdef_new("lengths");
    REQUIRE(nd != NULL);
    int ok = add(nd, "LengthsSum", "d,l", "s") && add(nd, "SparseLengthsWeightedSum", "d,w,i,l2", "ws") &&
             add(nd, "LengthsMax", "d,l", "mx");
    REQUIRE(ok);
    rc_err_clear(&err);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    const float want_s[6] = {1, 2, 0, 0, 3 + 5 - 7, -4 + 6 + 8};
    const float want_ws[4] = {3 * -7.f, 3 * 8.f, -1, -2};
    const float want_mx[6] = {1, 2, 0, 0, 5, 8};
    const rc_tensor *ts = &rc_ws_get(ws, "s")->t, *tw = &rc_ws_get(ws, "ws")->t, *tm = &rc_ws_get(ws, "mx")->t;
    CHECK(ts->ndim == 2 && ts->dims[0] == 3 && ts->dims[1] == 2 && close_to(rc_f32(ts), want_s, 6, 0.f));
    CHECK(tw->ndim == 2 && tw->dims[0] == 2 && tw->dims[1] == 2 && close_to(rc_f32(tw), want_ws, 4, 0.f));
    CHECK(tm->ndim == 2 && tm->dims[0] == 3 && close_to(rc_f32(tm), want_mx, 6, 0.f));

    const int32_t bad[3] = {2, -1, 3};
    memcpy(rc_i32(&lb->t), bad, sizeof bad);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(net, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op LengthsSum #0: input 1 blob 'l' (lengths): length -1 at position 1 is negative");
    CHECK(close_to(rc_f32(&rc_ws_get(ws, "s")->t), want_s, 6, 0.f));
    memcpy(rc_i32(&lb->t), len, sizeof len);
    CHECK_OK(rc_net_run(net, &err), err);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- TopK, Tile, Log, Exp, FlattenToVec */
/* x (2, 5) with ties and a NaN: TopK (k = 3, flat indices), its gradient, Tile of an int32 (2, 2) along
 * axis 1, TileGradient, Log, Exp, FlattenToVec, against hand-computed values; an axis out of range is refused
 * when the net is created. */
static void test_topk_tile_net(void)
{
    const char *needed[] = {"TopK", "TopKGradient", "Tile", "TileGradient", "Log", "Exp", "FlattenToVec"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {2, 5}, di[] = {2, 2}, dg[] = {2, 3};
    rc_blob *xb = rct_feed_f32(ws, "x", 2, dx, 0.f), *gb = rct_feed_f32(ws, "g", 2, dg, 0.f);
    rc_blob *ib = rc_ws_create_local(ws, "xi", &err);
    REQUIRE(xb && gb && ib && !rc_tensor_resize(&ib->t, RC_I32, 2, di, &err));
    const float xv[10] = {1, 4, 4, 2, 4, 3, NAN, -1, 3, 0.5f};
    memcpy(rc_f32(&xb->t), xv, sizeof xv);
    for (int i = 0; i < 6; i++) rc_f32(&gb->t)[i] = (float)(i + 1);
    for (int i = 0; i < 4; i++) rc_i32(&ib->t)[i] = 10 * i - 7;
    rc_netdef *nd = rc_netdef_new("topk");
    REQUIRE(nd != NULL);
    rc_opdef *a, *b, *c, *d;
    int ok = (a = add(nd, "TopK", "x", "v,i,f")) && !rc_opdef_set_arg_i(a, "k", 3) &&
             add(nd, "TopKGradient", "g,i,x", "dx") && (b = add(nd, "Tile", "xi", "ti")) &&
             !rc_opdef_set_arg_i(b, "tiles", 3) && !rc_opdef_set_arg_i(b, "axis", 1) &&
             (c = add(nd, "Tile", "x", "tx")) && !rc_opdef_set_arg_i(c, "tiles", 2) &&
             (d = add(nd, "TileGradient", "tx", "gx")) && !rc_opdef_set_arg_i(d, "tiles", 2) &&
             add(nd, "Exp", "v", "e") && add(nd, "Log", "e", "l") && add(nd, "FlattenToVec", "ti", "fv");
    REQUIRE(ok);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    const rc_tensor *v = &rc_ws_get(ws, "v")->t, *i = &rc_ws_get(ws, "i")->t, *f = &rc_ws_get(ws, "f")->t;
    const rc_tensor *tdx = &rc_ws_get(ws, "dx")->t, *ti = &rc_ws_get(ws, "ti")->t, *gx = &rc_ws_get(ws, "gx")->t;
    const rc_tensor *l = &rc_ws_get(ws, "l")->t, *fv = &rc_ws_get(ws, "fv")->t;
    /* row 0: the three 4s by index; row 1: NaN first, then 3 (index 5 - 5 = 0, then 3) */
    const int32_t want_i[6] = {1, 2, 4, 1, 0, 3}, want_f[6] = {1, 2, 4, 6, 5, 8};
    CHECK(v->dtype == RC_F32 && v->ndim == 2 && v->dims[0] == 2 && v->dims[1] == 3);
    CHECK(i->dtype == RC_I32 && memcmp(rc_i32(i), want_i, sizeof want_i) == 0);
    CHECK(f->dtype == RC_I32 && f->ndim == 1 && f->dims[0] == 6 && memcmp(rc_i32(f), want_f, sizeof want_f) == 0);
    CHECK(rc_f32(v)[0] == 4 && rc_f32(v)[2] == 4 && isnan(rc_f32(v)[3]) && rc_f32(v)[4] == 3 && rc_f32(v)[5] == 3);
    const float want_dx[10] = {0, 1, 2, 0, 3, 5, 4, 0, 6, 0};
    CHECK(tdx->ndim == 2 && tdx->dims[1] == 5 && close_to(rc_f32(tdx), want_dx, 10, 0.f));
    /* Tile of int32 [[-7, 3], [13, 23]] three times along axis 1 */
    int tile_ok = ti->dtype == RC_I32 && ti->ndim == 2 && ti->dims[0] == 2 && ti->dims[1] == 6;
    for (int r = 0; tile_ok && r < 2; r++)
        for (int k = 0; k < 6; k++) tile_ok &= rc_i32(ti)[r * 6 + k] == 10 * (r * 2 + k % 2) - 7;
    CHECK(tile_ok);
    CHECK(fv->dtype == RC_I32 && fv->ndim == 1 && fv->dims[0] == 12 && memcmp(rc_i32(fv), rc_i32(ti), 48) == 0);
    /* TileGradient of x tiled twice along axis 0: 2 x */
    float want_gx[10];
    for (int k = 0; k < 10; k++) want_gx[k] = 2 * xv[k];
    CHECK(gx->ndim == 2 && gx->dims[0] == 2 && memcmp(rc_f32(gx), want_gx, 6 * sizeof(float)) == 0 &&
          isnan(rc_f32(gx)[6]) && memcmp(rc_f32(gx) + 7, want_gx + 7, 3 * sizeof(float)) == 0);
    /* log(exp(4)) and log(exp(3)) within a float rounding or two */
    const float want_l[3] = {4, 4, 4};
    CHECK(close_to(rc_f32(l), want_l, 3, 1e-6f) && isnan(rc_f32(l)[3]) && fabsf(rc_f32(l)[5] - 3) < 1e-6f);
    rc_net_free(net);
    /* an axis outside X's rank: refused at creation, naming op, axis, blob and shape (a k larger than
     * the row is padded, as in Caffe2: tests/test_ops_topk_tile.py) */
    rc_opdef_set_arg_i(&nd->ops[0], "axis", 2);
    rc_err_clear(&err);
    CHECK(rc_net_create(ws, nd, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op TopK #0: axis 2 is out of range for input 0 blob 'x' (2, 5) float32");
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- unary.c and reduce.c ops */
/* x (2, 3) with a tie: ReduceFrontSum, ReduceBackMean, ReduceMax (all dims, keepdims=0: shape ()),
 * ArgMax (first of the tied maxima), Clip, Accuracy with top_k=2, against hand-computed values;
 * num_reduce_dim larger than the rank is refused when the net is created. */
static void test_unary_reduce_net(void)
{
    const char *needed[] = {"ReduceFrontSum", "ReduceBackMean", "ReduceMax", "ArgMax", "Clip", "Accuracy"};
    if (!have(needed, (int)(sizeof needed / sizeof *needed))) return;
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {2, 3}, dl[] = {2};
    rc_blob *xb = rct_feed_f32(ws, "x", 2, dx, 0.f);
    rc_blob *lb = rc_ws_create_local(ws, "lab", &err);
    REQUIRE(xb && lb && !rc_tensor_resize(&lb->t, RC_I32, 1, dl, &err));
    const float xv[6] = {1, 5, 5, -2, 0.5f, 3};
    memcpy(rc_f32(&xb->t), xv, sizeof xv);
    rc_i32(&lb->t)[0] = 2;
    rc_i32(&lb->t)[1] = 0;
    rc_netdef *nd = rc_netdef_new("unary_reduce");
    REQUIRE(nd != NULL);
    rc_opdef *m, *c, *a;
    int ok = add(nd, "ReduceFrontSum", "x", "fs") && add(nd, "ReduceBackMean", "x", "bm") &&
             (m = add(nd, "ReduceMax", "x", "mx")) && !rc_opdef_set_arg_i(m, "keepdims", 0) &&
             add(nd, "ArgMax", "x", "am") && (c = add(nd, "Clip", "x", "cl")) &&
             !rc_opdef_set_arg_f(c, "min", 0.0) && !rc_opdef_set_arg_f(c, "max", 4.0) &&
             (a = add(nd, "Accuracy", "x,lab", "acc")) && !rc_opdef_set_arg_i(a, "top_k", 2);
    REQUIRE(ok);
    rc_net *net = rc_net_create(ws, nd, &err);
    if (!net) printf("  %s\n", err.msg);
    REQUIRE(net != NULL);
    CHECK_OK(rc_net_run(net, &err), err);
    const rc_tensor *fs = &rc_ws_get(ws, "fs")->t, *bm = &rc_ws_get(ws, "bm")->t, *mx = &rc_ws_get(ws, "mx")->t;
    const rc_tensor *am = &rc_ws_get(ws, "am")->t, *cl = &rc_ws_get(ws, "cl")->t, *acc = &rc_ws_get(ws, "acc")->t;
    const float want_fs[3] = {-1, 5.5f, 8}, want_bm[2] = {11.f / 3, 0.5f}, want_cl[6] = {1, 4, 4, 0, 0.5f, 3};
    CHECK(fs->ndim == 1 && fs->dims[0] == 3 && close_to(rc_f32(fs), want_fs, 3, 0.f));
    CHECK(bm->ndim == 1 && bm->dims[0] == 2 && close_to(rc_f32(bm), want_bm, 2, 1e-6f));
    CHECK(mx->ndim == 0 && rc_f32(mx)[0] == 5);
    CHECK(am->dtype == RC_I32 && am->ndim == 2 && am->dims[1] == 1 && rc_i32(am)[0] == 1 && rc_i32(am)[1] == 2);
    CHECK(cl->ndim == 2 && close_to(rc_f32(cl), want_cl, 6, 0.f));
    /* row 0: label 2 (5) has one value before it (the tied 5 at index 1): in the top 2; row 1: -2 is last */
    CHECK(acc->dtype == RC_F32 && acc->ndim == 0 && rc_f32(acc)[0] == 0.5f);
    rc_net_free(net);
    rc_opdef_set_arg_i(&nd->ops[0], "num_reduce_dim", 3);
    rc_err_clear(&err);
    CHECK(rc_net_create(ws, nd, &err) == NULL);
    CHECK_EQ(err.code, RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op ReduceFrontSum #0: argument 'num_reduce_dim' (3) is larger than the rank of input 0 "
                       "blob 'x' (2, 3) float32");
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

/* ---------------------------------------------------------------- FC + Sum fusion */
/* RecurrentNetwork's fusion of a step FC with the in-place Sum after it
 * (rc_fc_bind_sum): the FC stores X W^T + b + Z, the Sum does nothing, the
 * bits are those of the two ops apart; when the FC cannot do it (Z of
 * another shape, or overlapping Y) the Sum does it, or reports the error;
 * a run of the FC always decides afresh (no stale "done"). */
static rc_net *fc_sum_net(rc_workspace *ws, const char *y, int fused, rc_err *err)
{
    rc_netdef *nd = rc_netdef_new("fused");
    const char *fin[] = {"x", "w", "b", "z"}, *sin[] = {y, "z"}, *out[] = {y};
    rc_opdef *fc = nd ? rct_add_op(nd, "FC", fused ? 4 : 3, fin, 1, out) : NULL;
    if (fc && fused) rc_opdef_set_arg_i(fc, "rnn_internal_fused_sum", 1);
    rc_net *net = fc && rct_add_op(nd, "Sum", 2, sin, 1, out) ? rc_net_create(ws, nd, err) : NULL;
    rc_netdef_free(nd);
    return net;
}

static int same_bits(const rc_tensor *a, const rc_tensor *b)
{
    return rc_tensor_same_shape(a, b) && memcmp(rc_f32(a), rc_f32(b), sizeof(float) * (size_t)rc_tensor_numel(a)) == 0;
}

/* The Sum kernel's one-pass path (two inputs) takes the output in place or
 * apart; an output that overlaps an input partly goes through the buffered
 * path, which reads a chunk before it writes it: the sums of the inputs as
 * they were. */
static void test_sum_of_two_overlapping(void)
{
    float mem[64], want[20];
    const float *x[2];
    for (int off = -3; off <= 3; off++) {
        for (int i = 0; i < 64; i++) mem[i] = 0.25f * (float)i - 3.f;
        float *x0 = mem + 8, *x1 = mem + 44, *y = mem + 8 + off;
        for (int i = 0; i < 20; i++) want[i] = x0[i] + x1[i];
        x[0] = x0;
        x[1] = x1;
        rc_k_weighted_sum(2, x, NULL, 20, y);
        CHECK(memcmp(y, want, sizeof(float) * 20) == 0);
    }
}

static void test_fc_sum_fusion(void)
{
    rc_err err;
    rc_err_clear(&err);
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t dx[] = {2, 3}, dw[] = {40, 3}, db[] = {40}, dz[] = {2, 40}, dbad[] = {2, 39};
    REQUIRE(rct_feed_f32(ws, "x", 2, dx, 0.3f) && rct_feed_f32(ws, "w", 2, dw, -1.7f) &&
            rct_feed_f32(ws, "b", 1, db, 0.11f));
    rc_blob *z = rct_feed_f32(ws, "z", 2, dz, 5.3f);
    REQUIRE(z != NULL);
    for (int64_t i = 0; i < 80; i++) rc_f32(&z->t)[i] *= 0.37f;
    rc_net *fused = fc_sum_net(ws, "y", 1, &err), *plain = fc_sum_net(ws, "y_ref", 0, &err);
    REQUIRE(fused && plain);
    rc_op *fc = rc_net_op(fused, 0), *sum = rc_net_op(fused, 1);
    CHECK_EQ(rc_fc_bind_sum(rc_net_op(plain, 0), rc_net_op(plain, 1)), 0); /* no 4th input */
    /* unbound: the FC ignores Z, the Sum adds it */
    int64_t n0 = rc_fc_fused_sums();
    CHECK_OK(rc_net_run(fused, &err), err);
    CHECK_OK(rc_net_run(plain, &err), err);
    CHECK(same_bits(&rc_ws_get(ws, "y")->t, &rc_ws_get(ws, "y_ref")->t));
    CHECK_EQ(rc_fc_fused_sums(), n0);
    /* bound: the FC adds Z, the same bits */
    CHECK_EQ(rc_fc_bind_sum(fc, sum), 1);
    CHECK_OK(rc_net_run(fused, &err), err);
    CHECK(same_bits(&rc_ws_get(ws, "y")->t, &rc_ws_get(ws, "y_ref")->t));
    CHECK_EQ(rc_fc_fused_sums(), n0 + 1);
    /* Z of another shape: the FC leaves it to the Sum, which fails as it does unfused */
    CHECK_OK(rc_tensor_resize(&z->t, RC_F32, 2, dbad, &err), err);
    rc_err_clear(&err);
    CHECK_EQ(rc_net_run(fused, &err), RC_ERR_VALUE);
    CHECK_HAS(err.msg, "op Sum #1: input 1 blob 'z' of shape (2, 39) float32 must have the shape of input 0 blob 'y'");
    CHECK_EQ(rc_fc_fused_sums(), n0 + 1);
    /* a fused FC run, then one that cannot fuse: the Sum is not fooled by the first */
    CHECK_OK(rc_tensor_resize(&z->t, RC_F32, 2, dz, &err), err);
    CHECK_OK(rc_op_run(fc, &err), err);
    CHECK_OK(rc_tensor_resize(&z->t, RC_F32, 2, dbad, &err), err);
    rc_err_clear(&err);
    CHECK(rc_op_run(fc, &err) == RC_OK && rc_op_run(sum, &err) == RC_ERR_VALUE);
    /* Z the same memory as Y: not fused; the Sum computes Y + Y */
    CHECK_OK(rc_tensor_resize(&z->t, RC_F32, 2, dz, &err), err);
    CHECK_OK(rc_net_run(fused, &err), err); /* y has its shape */
    rc_tensor_share(&z->t, &rc_ws_get(ws, "y")->t);
    int64_t n1 = rc_fc_fused_sums();
    CHECK_OK(rc_net_run(fused, &err), err);
    CHECK_EQ(rc_fc_fused_sums(), n1);
    const char *xin[] = {"x", "w", "b"}, *yr[] = {"y_ref"}, *yy[] = {"y_ref", "y_ref"};
    rc_netdef *nd = rc_netdef_new("twice");
    REQUIRE(nd && rct_add_op(nd, "FC", 3, xin, 1, yr) && rct_add_op(nd, "Sum", 2, yy, 1, yr));
    rc_net *twice = rc_net_create(ws, nd, &err);
    REQUIRE(twice != NULL);
    CHECK_OK(rc_net_run(twice, &err), err);
    CHECK(same_bits(&rc_ws_get(ws, "y")->t, &rc_ws_get(ws, "y_ref")->t));
    /* the same with the FC's weight packed (the step FCs' kernel, which reads Z as it stores) */
    if (rc_packed_available()) {
        float *P = malloc(sizeof(float) * (size_t)rc_pack_floats(3, 40));
        REQUIRE(P != NULL);
        const float *wd = rc_f32(&rc_ws_get(ws, "w")->t);
        rc_pack_b(3, 40, wd, 1, 3, P);
        rc_packed_w pw = {wd, 3, 40, 1, P, P, rc_pack_floats(3, 40)};
        CHECK_EQ(rc_fc_set_packed(fc, &pw), 1);
        int64_t calls = rc_packed_calls();
        CHECK_OK(rc_net_run(fused, &err), err); /* Z still the memory of Y */
        CHECK_EQ(rc_packed_calls(), calls + 1);
        CHECK_EQ(rc_fc_fused_sums(), n1);
        CHECK(same_bits(&rc_ws_get(ws, "y")->t, &rc_ws_get(ws, "y_ref")->t));
        CHECK_OK(rc_tensor_resize_private(&z->t, RC_F32, 2, dz, &err), err); /* apart from Y again */
        for (int64_t i = 0; i < 80; i++) rc_f32(&z->t)[i] = -2.9f + 0.71f * (float)i;
        CHECK_OK(rc_net_run(fused, &err), err);
        CHECK_OK(rc_net_run(plain, &err), err);
        CHECK_EQ(rc_fc_fused_sums(), n1 + 1);
        CHECK(same_bits(&rc_ws_get(ws, "y")->t, &rc_ws_get(ws, "y_ref")->t));
        rc_fc_set_packed(fc, NULL);
        free(P);
    }
    /* a 4th input is only taken with the internal argument */
    const char *fin[] = {"x", "w", "b", "x"}, *o[] = {"q"};
    rc_opdef *od = rct_add_op(nd, "FC", 4, fin, 1, o);
    REQUIRE(od != NULL);
    rc_err_clear(&err);
    CHECK(rc_op_create(ws, od, 5, &err) == NULL);
    CHECK_HAS(err.msg, "op FC #5: expects 3 inputs, got 4");
    rc_net_free(twice);
    rc_netdef_free(nd);
    rc_net_free(fused);
    rc_net_free(plain);
    rc_ws_free(ws);
}

int main(void)
{
    RUN(test_registry);
    RUN(test_create_errors);
    RUN(test_shapes_checked_at_creation);
    RUN(test_all_ops_odd_inputs);
    RUN(test_small_net);
    RUN(test_reverse_sqr_negative);
    RUN(test_pack_padding_net);
    RUN(test_compare_cast_net);
    RUN(test_loss_net);
    RUN(test_conv_pool_net);
    RUN(test_dedup_net);
    RUN(test_lengths_net);
    RUN(test_topk_tile_net);
    RUN(test_unary_reduce_net);
    RUN(test_copy_into_view);
    RUN(test_sum_of_two_overlapping);
    RUN(test_fc_sum_fusion);
    return TEST_REPORT();
}
