/* Workspaces: local/parent lookup, create vs create_local, insertion order,
 * hash-table growth with many blobs, opaque objects, nets (add / overwrite /
 * remove), reset and free, the print log, the root folder, net benchmarks. */
#include "rc_test.h"

static int n_obj_freed;
static void obj_free_count(void *p)
{
    n_obj_freed++;
    free(p);
}

static rc_net *copy_net(rc_workspace *ws, const char *name, const char *in, const char *out, rc_err *err)
{
    rc_netdef *nd = rc_netdef_new(name);
    if (!nd) return NULL;
    rc_opdef *od = rct_add_op(nd, "Copy", 1, &in, 1, &out);
    rc_net *net = od ? rc_net_create(ws, nd, err) : NULL;
    rc_netdef_free(nd);
    return net;
}

static void test_local_blobs(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    CHECK(rc_ws_parent(ws) == NULL);
    CHECK_EQ(rc_ws_num_blobs(ws), 0);
    CHECK(rc_ws_get(ws, "a") == NULL);
    CHECK(rc_ws_get_local(ws, "a") == NULL);

    rc_blob *a = rc_ws_create_local(ws, "a", &err);
    REQUIRE(a != NULL);
    CHECK(strcmp(a->name, "a") == 0);
    CHECK(a->ws == ws);
    CHECK_EQ(a->t.dtype, RC_UNDEF);
    CHECK(a->obj == NULL);
    CHECK(rc_ws_get(ws, "a") == a);
    CHECK(rc_ws_get_local(ws, "a") == a);
    CHECK(rc_ws_create_local(ws, "a", &err) == a); /* existing: same blob, no duplicate */
    CHECK(rc_ws_create(ws, "a", &err) == a);
    CHECK_EQ(rc_ws_num_blobs(ws), 1);

    /* names are compared exactly: prefixes, case, empty, long and odd bytes */
    const char *names[] = {"", "A", "a ", "ab", "a/b", "scope/a", "\xc3\xa9", "x_grad", "x_grad_autosplit_0"};
    const int nn = (int)(sizeof names / sizeof *names);
    rc_blob *bs[16];
    for (int i = 0; i < nn; i++) {
        bs[i] = rc_ws_create(ws, names[i], &err);
        REQUIRE(bs[i] != NULL);
    }
    char longname[5000];
    memset(longname, 'q', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    rc_blob *lb = rc_ws_create(ws, longname, &err);
    REQUIRE(lb != NULL);
    CHECK_EQ(rc_ws_num_blobs(ws), nn + 2);
    for (int i = 0; i < nn; i++) {
        CHECK(rc_ws_get(ws, names[i]) == bs[i]);
        CHECK(rc_ws_blob_at(ws, i + 1) == bs[i]);
    }
    CHECK(rc_ws_get(ws, longname) == lb);
    longname[100] = 0;
    CHECK(rc_ws_get(ws, longname) == NULL);
    rc_ws_free(ws);
    rc_ws_free(NULL);
}

/* Thousands of blobs: the hash index is rebuilt several times; blob pointers
 * stay valid and the insertion order is kept. */
static void test_many_blobs(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    enum { N = 5000 };
    static rc_blob *ptr[N];
    char name[32];
    int ok_create = 1;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "blob_%d", i);
        ptr[i] = rc_ws_create_local(ws, name, &err);
        if (!ptr[i]) { ok_create = 0; break; }
        if (i % 7 == 0) { /* give some blobs data, so pointers into tensors are also checked */
            const int64_t d[] = {i % 5 + 1};
            if (rc_tensor_resize(&ptr[i]->t, RC_I32, 1, d, &err)) { ok_create = 0; break; }
            rc_i32(&ptr[i]->t)[0] = i;
        }
    }
    REQUIRE(ok_create);
    CHECK_EQ(rc_ws_num_blobs(ws), N);
    int ok_get = 1, ok_order = 1, ok_data = 1;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "blob_%d", i);
        if (rc_ws_get(ws, name) != ptr[i] || rc_ws_get_local(ws, name) != ptr[i]) ok_get = 0;
        if (rc_ws_blob_at(ws, i) != ptr[i] || strcmp(ptr[i]->name, name) != 0) ok_order = 0;
        if (i % 7 == 0 && rc_i32(&ptr[i]->t)[0] != i) ok_data = 0;
    }
    CHECK(ok_get);
    CHECK(ok_order);
    CHECK(ok_data);
    int ok_missing = 1;
    for (int i = N; i < N + 2000; i++) {
        snprintf(name, sizeof name, "blob_%d", i);
        if (rc_ws_get(ws, name)) ok_missing = 0;
    }
    CHECK(ok_missing);
    /* re-creating returns the existing blobs; the count does not change */
    int ok_again = 1;
    for (int i = 0; i < N; i += 97) {
        snprintf(name, sizeof name, "blob_%d", i);
        if (rc_ws_create_local(ws, name, &err) != ptr[i]) ok_again = 0;
    }
    CHECK(ok_again);
    CHECK_EQ(rc_ws_num_blobs(ws), N);

    /* reset empties it; it is usable again and grows again */
    rc_ws_reset(ws);
    CHECK_EQ(rc_ws_num_blobs(ws), 0);
    CHECK(rc_ws_get(ws, "blob_0") == NULL);
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "again_%d", i);
        ptr[i] = rc_ws_create(ws, name, &err);
    }
    CHECK_EQ(rc_ws_num_blobs(ws), 100);
    CHECK(rc_ws_get(ws, "again_99") == ptr[99]);
    rc_ws_free(ws);
}

static void test_parent_lookup(void)
{
    rc_err err;
    rc_workspace *root = rc_ws_new(NULL);
    rc_workspace *mid = rc_ws_new(root);
    rc_workspace *leaf = rc_ws_new(mid);
    REQUIRE(root && mid && leaf);
    CHECK(rc_ws_parent(leaf) == mid);
    CHECK(rc_ws_parent(mid) == root);

    rc_blob *w = rc_ws_create_local(root, "w", &err);
    rc_blob *h = rc_ws_create_local(mid, "h", &err);
    REQUIRE(w && h);
    CHECK(rc_ws_get(leaf, "w") == w); /* found two levels up */
    CHECK(rc_ws_get(leaf, "h") == h);
    CHECK(rc_ws_get_local(leaf, "w") == NULL);
    CHECK(rc_ws_get(root, "h") == NULL); /* lookups never go down */

    /* rc_ws_create finds the parent's blob (Caffe2 CreateBlob) and adds nothing */
    CHECK(rc_ws_create(leaf, "w", &err) == w);
    CHECK_EQ(rc_ws_num_blobs(leaf), 0);
    /* rc_ws_create_local ignores parents: a local blob shadows the parent's */
    rc_blob *lw = rc_ws_create_local(leaf, "w", &err);
    REQUIRE(lw != NULL);
    CHECK(lw != w);
    CHECK(lw->ws == leaf);
    CHECK(rc_ws_get(leaf, "w") == lw);
    CHECK(rc_ws_get(mid, "w") == w);
    CHECK_EQ(rc_ws_num_blobs(leaf), 1);
    /* a new name is created locally */
    rc_blob *y = rc_ws_create(leaf, "y", &err);
    REQUIRE(y != NULL);
    CHECK(y->ws == leaf);
    CHECK(rc_ws_get(mid, "y") == NULL);

    /* a child's view of a parent tensor survives the parent's reset */
    const int64_t d[] = {4, 2};
    CHECK_OK(rc_tensor_resize(&w->t, RC_F32, 2, d, &err), err);
    rc_f32(&w->t)[7] = 3.5f;
    rc_tensor_view_rows(&y->t, &w->t, 2, 2);
    rc_ws_reset(root);
    CHECK(rc_ws_get(leaf, "w") == lw);
    CHECK(rc_f32(&y->t)[3] == 3.5f);

    /* children are freed before their parents */
    rc_ws_free(leaf);
    rc_ws_free(mid);
    rc_ws_free(root);
}

static void test_objects(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    n_obj_freed = 0;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "obj%d", i);
        rc_blob *b = rc_ws_create(ws, name, &err);
        REQUIRE(b != NULL);
        b->obj = malloc(64);
        b->obj_free = obj_free_count;
        b->obj_kind = "test";
    }
    rc_blob *nofree = rc_ws_create(ws, "nofree", &err); /* obj without destructor: not freed */
    static int borrowed;
    REQUIRE(nofree != NULL);
    nofree->obj = &borrowed;
    rc_ws_reset(ws);
    CHECK_EQ(n_obj_freed, 3);
    rc_blob *b = rc_ws_create(ws, "obj0", &err);
    REQUIRE(b != NULL);
    b->obj = malloc(8);
    b->obj_free = obj_free_count;
    rc_ws_free(ws);
    CHECK_EQ(n_obj_freed, 4);
}

static void test_nets(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t d[] = {3};
    REQUIRE(rct_feed_f32(ws, "x", 1, d, 1.f) != NULL);
    CHECK_EQ(rc_ws_num_nets(ws), 0);
    CHECK(rc_ws_get_net(ws, "n1") == NULL);

    rc_net *n1 = copy_net(ws, "n1", "x", "y", &err);
    REQUIRE(n1 != NULL);
    CHECK_OK(rc_ws_add_net(ws, "n1", n1, 0, &err), err);
    CHECK(rc_ws_get_net(ws, "n1") == n1);
    CHECK_EQ(rc_ws_num_nets(ws), 1);
    CHECK(strcmp(rc_ws_net_name_at(ws, 0), "n1") == 0);

    /* same name without overwrite: refused, and the new net is freed (LSan checks) */
    rc_net *dup = copy_net(ws, "n1", "x", "z", &err);
    REQUIRE(dup != NULL);
    CHECK_ERR(rc_ws_add_net(ws, "n1", dup, 0, &err), RC_ERR_VALUE, err, "already exists");
    CHECK_HAS(err.msg, "'n1'");
    CHECK(rc_ws_get_net(ws, "n1") == n1);
    CHECK_EQ(rc_ws_num_nets(ws), 1);

    /* overwrite replaces it in place */
    rc_net *n1b = copy_net(ws, "n1", "x", "z", &err);
    REQUIRE(n1b != NULL);
    CHECK_OK(rc_ws_add_net(ws, "n1", n1b, 1, &err), err);
    CHECK(rc_ws_get_net(ws, "n1") == n1b);
    CHECK_EQ(rc_ws_num_nets(ws), 1);
    /* re-adding the net it already holds under that name keeps it alive */
    CHECK_OK(rc_ws_add_net(ws, "n1", n1b, 1, &err), err);
    CHECK(rc_ws_get_net(ws, "n1") == n1b);
    CHECK_OK(rc_net_run(rc_ws_get_net(ws, "n1"), &err), err);
    CHECK(rc_f32(&rc_ws_get(ws, "z")->t)[2] == 3.f);

    /* many nets (the table grows), then remove from the middle keeps order */
    char name[16];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "net%d", i);
        rc_net *n = copy_net(ws, name, "x", "y", &err);
        REQUIRE(n != NULL);
        CHECK_OK(rc_ws_add_net(ws, name, n, 0, &err), err);
    }
    CHECK_EQ(rc_ws_num_nets(ws), 21);
    rc_ws_remove_net(ws, "net5");
    rc_ws_remove_net(ws, "net5"); /* absent: no-op */
    rc_ws_remove_net(ws, "nope");
    CHECK_EQ(rc_ws_num_nets(ws), 20);
    CHECK(rc_ws_get_net(ws, "net5") == NULL);
    CHECK(strcmp(rc_ws_net_name_at(ws, 0), "n1") == 0);
    CHECK(strcmp(rc_ws_net_name_at(ws, 5), "net4") == 0);
    CHECK(strcmp(rc_ws_net_name_at(ws, 6), "net6") == 0);
    CHECK(strcmp(rc_ws_net_name_at(ws, 19), "net19") == 0);
    rc_ws_remove_net(ws, "net19"); /* last */
    rc_ws_remove_net(ws, "n1");    /* first */
    CHECK_EQ(rc_ws_num_nets(ws), 18);
    CHECK(strcmp(rc_ws_net_name_at(ws, 0), "net0") == 0);

    /* reset frees nets (which point at blobs) and blobs */
    rc_ws_reset(ws);
    CHECK_EQ(rc_ws_num_nets(ws), 0);
    CHECK_EQ(rc_ws_num_blobs(ws), 0);
    /* the workspace works after a reset */
    REQUIRE(rct_feed_f32(ws, "x", 1, d, 5.f) != NULL);
    rc_net *n2 = copy_net(ws, "n2", "x", "y", &err);
    REQUIRE(n2 != NULL);
    CHECK_OK(rc_ws_add_net(ws, "n2", n2, 0, &err), err);
    CHECK_OK(rc_net_run(n2, &err), err);
    CHECK(rc_f32(&rc_ws_get(ws, "y")->t)[0] == 5.f);
    rc_ws_free(ws); /* frees n2 */
}

/* A net in a child workspace that reads the parent's blobs and writes its own. */
static void test_child_net(void)
{
    rc_err err;
    rc_workspace *p = rc_ws_new(NULL);
    rc_workspace *c = rc_ws_new(p);
    REQUIRE(p && c);
    const int64_t d[] = {2, 2};
    REQUIRE(rct_feed_f32(p, "w", 2, d, 1.f) != NULL);
    rc_net *n = copy_net(c, "step", "w", "out", &err);
    REQUIRE(n != NULL);
    CHECK(rc_ws_get_local(c, "out") != NULL);
    CHECK(rc_ws_get_local(p, "out") == NULL);
    CHECK_OK(rc_ws_add_net(c, "step", n, 0, &err), err);
    CHECK_OK(rc_net_run(n, &err), err);
    CHECK(rc_f32(&rc_ws_get(c, "out")->t)[3] == 4.f);
    rc_ws_free(c);
    rc_ws_free(p);
}

/* The print log: appends from a child go to the root; take empties it and
 * hands the text over; the bound drops (and counts) whole pieces. */
static void test_print_log(void)
{
    rc_err err;
    rc_workspace *root = rc_ws_new(NULL);
    REQUIRE(root != NULL);
    rc_workspace *child = rc_ws_new(root);
    REQUIRE(child != NULL);
    size_t n;
    int64_t dropped, dropped_bytes;
    CHECK(rc_ws_log_take(root, &n, &dropped, &dropped_bytes) == NULL);
    CHECK_EQ(n, 0);
    CHECK_EQ(dropped, 0);
    CHECK_EQ(rc_ws_log_append(root, "ab\n", 3, &err), RC_OK);
    CHECK_EQ(rc_ws_log_append(child, "cd\n", 3, &err), RC_OK);
    char *text = rc_ws_log_take(child, &n, &dropped, &dropped_bytes); /* the child takes the root's log */
    REQUIRE(text != NULL);
    CHECK_EQ(n, 6);
    CHECK(memcmp(text, "ab\ncd\n", 6) == 0);
    free(text);
    CHECK(rc_ws_log_take(root, &n, &dropped, &dropped_bytes) == NULL); /* emptied */
    CHECK_EQ(n, 0);
    /* fill to the bound: a piece that would pass it is dropped whole, a smaller one still fits */
    size_t big = RC_PRINT_LOG_MAX - 4;
    char *buf = malloc(big);
    REQUIRE(buf != NULL);
    memset(buf, 'x', big);
    CHECK_EQ(rc_ws_log_append(child, buf, big, &err), RC_OK);
    CHECK_EQ(rc_ws_log_append(child, "12345", 5, &err), RC_OK);
    CHECK_EQ(rc_ws_log_append(root, "1234", 4, &err), RC_OK);
    CHECK_EQ(rc_ws_log_append(root, "z", 1, &err), RC_OK);
    free(buf);
    text = rc_ws_log_take(root, &n, &dropped, &dropped_bytes);
    REQUIRE(text != NULL);
    CHECK_EQ(n, RC_PRINT_LOG_MAX);
    CHECK(memcmp(text + big, "1234", 4) == 0);
    CHECK_EQ(dropped, 2);
    CHECK_EQ(dropped_bytes, 6);
    free(text);
    CHECK(rc_ws_log_take(root, &n, &dropped, &dropped_bytes) == NULL); /* counts reset too */
    CHECK_EQ(dropped, 0);
    CHECK_EQ(dropped_bytes, 0);
    rc_ws_free(child);
    rc_ws_free(root);
}

/* The root folder: "." by default; set on the root of a tree, seen by its
 * children; rc_ws_path joins relative names only. */
static void test_root_folder(void)
{
    rc_err err;
    rc_workspace *root = rc_ws_new(NULL);
    REQUIRE(root != NULL);
    rc_workspace *child = rc_ws_new(root);
    REQUIRE(child != NULL);
    CHECK(strcmp(rc_ws_root_folder(root), ".") == 0);
    char *p = rc_ws_path(child, "a.db", 0);
    REQUIRE(p != NULL);
    CHECK(strcmp(p, "a.db") == 0); /* "." keeps the name as given */
    free(p);
    CHECK_OK(rc_ws_set_root_folder(root, "/tmp/r", &err), err);
    CHECK(strcmp(rc_ws_root_folder(child), "/tmp/r") == 0);
    const char *cases[][3] = {{"a.db", "0", "/tmp/r/a.db"}, {"d/a.db", "0", "/tmp/r/d/a.db"},
                              {"a.db", "1", "a.db"},        {"/abs/a.db", "0", "/abs/a.db"},
                              {"/abs/a.db", "1", "/abs/a.db"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        p = rc_ws_path(child, cases[i][0], cases[i][1][0] == '1');
        REQUIRE(p != NULL);
        CHECK_HAS(p, cases[i][2]);
        CHECK(strcmp(p, cases[i][2]) == 0);
        free(p);
    }
    CHECK_OK(rc_ws_set_root_folder(root, "rel/", &err), err); /* a trailing slash is not doubled */
    p = rc_ws_path(root, "x.log", 0);
    REQUIRE(p != NULL);
    CHECK(strcmp(p, "rel/x.log") == 0);
    free(p);
    rc_ws_reset(root); /* a reset keeps it */
    CHECK(strcmp(rc_ws_root_folder(root), "rel/") == 0);
    CHECK_OK(rc_ws_set_root_folder(root, NULL, &err), err);
    CHECK(strcmp(rc_ws_root_folder(root), ".") == 0);
    rc_ws_free(child);
    rc_ws_free(root);
}

/* rc_net_benchmark: runs warmup + main (+ main again per op), one entry per
 * op plus the whole net, errors for bad counts and failing runs. */
static void test_benchmark(void)
{
    rc_err err;
    rc_workspace *ws = rc_ws_new(NULL);
    REQUIRE(ws != NULL);
    const int64_t d[] = {1};
    rc_blob *it = rct_feed_f32(ws, "unused", 1, d, 0.f);
    REQUIRE(it != NULL);
    rc_netdef *nd = rc_netdef_new("bench");
    REQUIRE(nd != NULL);
    const char *out = "it", *cp = "it_copy";
    REQUIRE(rct_add_op(nd, "Iter", 0, NULL, 1, &out) != NULL);
    REQUIRE(rct_add_op(nd, "Copy", 1, &out, 1, &cp) != NULL);
    rc_net *net = rc_net_create(ws, nd, &err);
    REQUIRE(net != NULL);
    double res[3] = {-1, -1, -1};
    CHECK_OK(rc_net_benchmark(net, 2, 3, 0, res, &err), err);
    CHECK_EQ(rc_i32(&rc_ws_get(ws, "it")->t)[0], 5);
    CHECK(res[0] >= 0 && res[1] == 0 && res[2] == 0);
    CHECK_OK(rc_net_benchmark(net, 0, 2, 1, res, &err), err);
    CHECK_EQ(rc_i32(&rc_ws_get(ws, "it")->t)[0], 9); /* 2 whole runs, then 2 op by op */
    CHECK_EQ(rc_i32(&rc_ws_get(ws, "it_copy")->t)[0], 9);
    CHECK(res[0] >= 0 && res[1] >= 0 && res[2] >= 0);
    CHECK_ERR(rc_net_benchmark(net, 0, 0, 0, res, &err), RC_ERR_VALUE, err, "main_runs");
    CHECK_ERR(rc_net_benchmark(net, -1, 1, 0, res, &err), RC_ERR_VALUE, err, "warmup_runs");
    /* a failing run: the phase and run in front of the op's error */
    rc_netdef *bad = rc_netdef_new("bad");
    REQUIRE(bad != NULL);
    const char *missing = "nope", *o2 = "o2";
    REQUIRE(rct_add_op(bad, "Copy", 1, &missing, 1, &o2) != NULL);
    rc_ws_create(ws, "nope", &err); /* exists, holds no tensor: fails when run */
    rc_net *bn = rc_net_create(ws, bad, &err);
    REQUIRE(bn != NULL);
    CHECK_ERR(rc_net_benchmark(bn, 1, 1, 0, res, &err), RC_ERR_VALUE, err, "BenchmarkNet: warmup run 0 failed");
    CHECK_EQ(err.op_pos, 0);
    rc_err_clear(&err);
    CHECK_EQ(err.op_pos, -1);
    CHECK_ERR(rc_net_run(bn, &err), RC_ERR_VALUE, err, "nope");
    CHECK_EQ(err.op_pos, 0); /* the failing op's position, for the binding's traceback note */
    rc_netdef *bad2 = rc_netdef_new("bad2");
    REQUIRE(bad2 != NULL);
    const char *absent = "absent", *o3 = "o3";
    REQUIRE(rct_add_op(bad2, "Copy", 1, &out, 1, &o3) != NULL);
    REQUIRE(rct_add_op(bad2, "Copy", 1, &absent, 1, &o3) != NULL);
    rc_err_clear(&err);
    CHECK(rc_net_create(ws, bad2, &err) == NULL);
    CHECK_EQ(err.op_pos, 1); /* creation: the op that could not be made */
    rc_netdef_free(bad2);
    rc_net_free(bn);
    rc_netdef_free(bad);
    rc_net_free(net);
    rc_netdef_free(nd);
    rc_ws_free(ws);
}

int main(void)
{
    RUN(test_local_blobs);
    RUN(test_many_blobs);
    RUN(test_parent_lookup);
    RUN(test_objects);
    RUN(test_nets);
    RUN(test_child_net);
    RUN(test_print_log);
    RUN(test_root_folder);
    RUN(test_benchmark);
    return TEST_REPORT();
}
