/* NetDef-like plain data: construction, insert, deep clone, free, argument
 * getters (right kind, defaults, conversions, wrong kinds). */
#include "rc_test.h"

/* An argument slot of od named `name`, emptied, to be filled by the caller
 * (owned by od). */
static rc_arg *arg_slot(rc_opdef *od, const char *name)
{
    if (rc_opdef_set_arg_i(od, name, 0)) return NULL;
    return (rc_arg *)rc_opdef_arg(od, name);
}

static char *dupstr(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

/* An op with every kind of argument, including nested nets. */
static int fill_all_args(rc_opdef *od, const rc_netdef *inner)
{
    rc_arg *a;
    if (rc_opdef_set_arg_i(od, "i", -7)) return -1;
    if (!(a = arg_slot(od, "f"))) return -1;
    a->kind = RC_ARG_F;
    a->f = 0.25;
    if (rc_opdef_set_arg_s(od, "s", "hello")) return -1;
    if (!(a = arg_slot(od, "ints"))) return -1;
    a->kind = RC_ARG_INTS;
    a->n = 3;
    if (!(a->ints = malloc(3 * sizeof(int64_t)))) return -1;
    a->ints[0] = 1, a->ints[1] = -2, a->ints[2] = INT64_MAX;
    if (!(a = arg_slot(od, "floats"))) return -1;
    a->kind = RC_ARG_FLOATS;
    a->n = 2;
    if (!(a->floats = malloc(2 * sizeof(float)))) return -1;
    a->floats[0] = 1.5f, a->floats[1] = -0.5f;
    if (!(a = arg_slot(od, "strings"))) return -1;
    a->kind = RC_ARG_STRINGS;
    a->n = 2;
    if (!(a->strings = calloc(2, sizeof(char *)))) return -1;
    if (!(a->strings[0] = dupstr("x")) || !(a->strings[1] = dupstr(""))) return -1;
    if (!(a = arg_slot(od, "net"))) return -1;
    a->kind = RC_ARG_NET;
    if (!(a->net = rc_netdef_clone(inner))) return -1;
    if (!(a = arg_slot(od, "nets"))) return -1;
    a->kind = RC_ARG_NETS;
    a->n = 2;
    if (!(a->nets = calloc(2, sizeof(rc_netdef *)))) return -1;
    if (!(a->nets[0] = rc_netdef_clone(inner)) || !(a->nets[1] = rc_netdef_new("second"))) return -1;
    if (!(a = arg_slot(od, "empty_floats"))) return -1;
    a->kind = RC_ARG_FLOATS; /* n == 0, no array */
    return 0;
}

static rc_netdef *make_inner(void)
{
    rc_netdef *nd = rc_netdef_new("step");
    if (!nd) return NULL;
    const char *in[] = {"a", "b"}, *out[] = {"c"};
    rc_opdef *od = rct_add_op(nd, "Copy", 2, in, 1, out);
    if (!od || rc_opdef_add_control_input(od, "ctl") || rc_opdef_set_arg_i(od, "axis", 1)) {
        rc_netdef_free(nd);
        return NULL;
    }
    if (rc_netdef_add_ext_in(nd, "a") || rc_netdef_add_ext_out(nd, "c")) {
        rc_netdef_free(nd);
        return NULL;
    }
    return nd;
}

static void test_build_and_insert(void)
{
    rc_netdef *nd = rc_netdef_new("main");
    REQUIRE(nd != NULL);
    CHECK(strcmp(nd->name, "main") == 0);
    CHECK(strcmp(nd->type, "") == 0);
    CHECK_EQ(nd->n_op, 0);
    rc_netdef *anon = rc_netdef_new(NULL);
    REQUIRE(anon != NULL);
    CHECK(strcmp(anon->name, "") == 0);
    rc_netdef_free(anon);
    rc_netdef_free(NULL);

    REQUIRE(rc_netdef_add_op(nd, "B") != NULL);
    REQUIRE(rc_netdef_add_op(nd, "D") != NULL);
    REQUIRE(rc_netdef_insert_op(nd, 0, "A") != NULL);
    REQUIRE(rc_netdef_insert_op(nd, 2, "C") != NULL);
    REQUIRE(rc_netdef_insert_op(nd, 99, "E") != NULL); /* out of range: appended */
    REQUIRE(rc_netdef_insert_op(nd, -1, "F") != NULL);
    REQUIRE(nd->n_op == 6);
    const char *want = "ABCDEF";
    for (int i = 0; i < 6; i++) {
        CHECK(nd->ops[i].type[0] == want[i] && nd->ops[i].type[1] == 0);
        CHECK(strcmp(nd->ops[i].name, "") == 0);
        CHECK_EQ(nd->ops[i].n_in, 0);
    }
    rc_opdef *od = &nd->ops[1];
    CHECK_EQ(rc_opdef_add_input(od, "x"), 0);
    CHECK_EQ(rc_opdef_add_input(od, NULL), 0); /* NULL is stored as "" */
    CHECK_EQ(rc_opdef_add_output(od, "y"), 0);
    CHECK_EQ(od->n_in, 2);
    CHECK(strcmp(od->inputs[1], "") == 0);
    CHECK(strcmp(od->outputs[0], "y") == 0);

    /* external inputs/outputs: duplicates ignored, order kept */
    CHECK_EQ(rc_netdef_add_ext_in(nd, "x"), 0);
    CHECK_EQ(rc_netdef_add_ext_in(nd, "w"), 0);
    CHECK_EQ(rc_netdef_add_ext_in(nd, "x"), 0);
    CHECK_EQ(rc_netdef_add_ext_out(nd, "y"), 0);
    CHECK_EQ(rc_netdef_add_ext_out(nd, "y"), 0);
    CHECK_EQ(nd->n_ext_in, 2);
    CHECK_EQ(nd->n_ext_out, 1);
    CHECK(strcmp(nd->ext_in[1], "w") == 0);

    /* arguments: setting an existing name replaces it (also across kinds) */
    CHECK_EQ(rc_opdef_set_arg_i(od, "k", 1), 0);
    CHECK_EQ(rc_opdef_set_arg_s(od, "k", "str"), 0);
    CHECK_EQ(rc_opdef_set_arg_s(od, "k", "str2"), 0);
    CHECK_EQ(rc_opdef_set_arg_i(od, "k", 5), 0);
    CHECK_EQ(rc_opdef_set_arg_i(od, "m", 6), 0);
    CHECK_EQ(od->n_arg, 2);
    const rc_arg *k = rc_opdef_arg(od, "k");
    REQUIRE(k != NULL);
    CHECK_EQ(k->kind, RC_ARG_I);
    CHECK_EQ(k->i, 5);
    CHECK(k->s == NULL);
    CHECK(rc_opdef_arg(od, "nope") == NULL);
    rc_netdef_free(nd);
}

static void test_clone(void)
{
    rc_netdef *inner = make_inner();
    REQUIRE(inner != NULL);
    rc_netdef *nd = rc_netdef_new("outer");
    REQUIRE(nd != NULL);
    free(nd->type);
    nd->type = dupstr("dag");
    const char *in[] = {"x"}, *out[] = {"y", "z"};
    rc_opdef *od = rct_add_op(nd, "Thing", 1, in, 2, out);
    REQUIRE(od != NULL);
    free(od->name);
    od->name = dupstr("my_op");
    od->device_type = 1;
    REQUIRE(fill_all_args(od, inner) == 0);
    REQUIRE(rc_netdef_add_op(nd, "Empty") != NULL); /* an op with nothing at all */
    REQUIRE(rc_netdef_add_ext_in(nd, "x") == 0);

    rc_netdef *cl = rc_netdef_clone(nd);
    REQUIRE(cl != NULL);
    CHECK(strcmp(cl->name, "outer") == 0);
    CHECK(strcmp(cl->type, "dag") == 0);
    REQUIRE(cl->n_op == 2);
    CHECK_EQ(cl->n_ext_in, 1);
    CHECK(cl->ext_in != nd->ext_in);
    const rc_opdef *co = &cl->ops[0];
    CHECK(strcmp(co->type, "Thing") == 0);
    CHECK(strcmp(co->name, "my_op") == 0);
    CHECK_EQ(co->device_type, 1);
    CHECK_EQ(co->n_in, 1);
    CHECK_EQ(co->n_out, 2);
    CHECK(strcmp(co->outputs[1], "z") == 0);
    CHECK(co->outputs != nd->ops[0].outputs && co->outputs[1] != nd->ops[0].outputs[1]);
    CHECK_EQ(co->n_arg, nd->ops[0].n_arg);
    CHECK_EQ(cl->ops[1].n_in, 0);
    CHECK_EQ(cl->ops[1].n_arg, 0);

    rc_err err;
    int64_t iv;
    float fv;
    const char *sv;
    const int64_t *ints;
    const float *floats;
    char *const *strs;
    const rc_netdef *net;
    int n;
    CHECK_OK(rc_arg_i(co, "i", 0, &iv, &err), err);
    CHECK_EQ(iv, -7);
    CHECK_OK(rc_arg_f(co, "f", 0, &fv, &err), err);
    CHECK(fv == 0.25f);
    CHECK_OK(rc_arg_s(co, "s", NULL, &sv, &err), err);
    CHECK(strcmp(sv, "hello") == 0 && sv != rc_opdef_arg(&nd->ops[0], "s")->s);
    CHECK_OK(rc_arg_ints(co, "ints", &ints, &n, &err), err);
    CHECK(n == 3 && ints[1] == -2 && ints[2] == INT64_MAX);
    CHECK_OK(rc_arg_floats(co, "floats", &floats, &n, &err), err);
    CHECK(n == 2 && floats[0] == 1.5f);
    CHECK_OK(rc_arg_strings(co, "strings", &strs, &n, &err), err);
    CHECK(n == 2 && strcmp(strs[0], "x") == 0 && strcmp(strs[1], "") == 0);
    CHECK_OK(rc_arg_net(co, "net", &net, &err), err);
    REQUIRE(net != NULL);
    CHECK(strcmp(net->name, "step") == 0);
    CHECK(net != rc_opdef_arg(&nd->ops[0], "net")->net);
    REQUIRE(net->n_op == 1);
    CHECK_EQ(net->ops[0].n_ctrl, 1);
    CHECK(strcmp(net->ops[0].control_inputs[0], "ctl") == 0);
    CHECK_EQ(net->n_ext_out, 1);
    const rc_arg *nets = rc_opdef_arg(co, "nets");
    REQUIRE(nets != NULL && nets->n == 2);
    CHECK(strcmp(nets->nets[1]->name, "second") == 0);
    CHECK_EQ(nets->nets[0]->n_op, 1);

    /* the clone is independent: free the original first */
    rc_netdef_free(nd);
    rc_netdef_free(inner);
    CHECK(strcmp(cl->ops[0].args[0].name, "i") == 0);
    rc_netdef *cl2 = rc_netdef_clone(cl);
    REQUIRE(cl2 != NULL);
    rc_netdef_free(cl);
    CHECK_OK(rc_arg_net(&cl2->ops[0], "net", &net, &err), err);
    CHECK(net && strcmp(net->ops[0].inputs[1], "b") == 0);

    /* opdef copy / free on its own */
    rc_opdef copy;
    REQUIRE(rc_opdef_copy(&copy, &cl2->ops[0]) == 0);
    CHECK_EQ(copy.n_arg, cl2->ops[0].n_arg);
    rc_opdef_free(&copy);
    CHECK(copy.type == NULL && copy.n_arg == 0);
    rc_opdef_free(&copy); /* freeing twice after the memset is harmless */

    rc_arg ac;
    REQUIRE(rc_arg_copy(&ac, rc_opdef_arg(&cl2->ops[0], "nets")) == 0);
    CHECK_EQ(ac.n, 2);
    rc_arg_free(&ac);
    rc_netdef_free(cl2);
}

static void test_getters_wrong_kind(void)
{
    rc_netdef *inner = make_inner();
    rc_netdef *nd = rc_netdef_new("n");
    REQUIRE(inner && nd);
    rc_opdef *od = rc_netdef_add_op(nd, "MyOp");
    REQUIRE(od != NULL);
    REQUIRE(fill_all_args(od, inner) == 0);
    rc_err err;
    int64_t iv = 0;
    float fv = 0;
    const char *sv = NULL;
    const int64_t *ints;
    const float *floats;
    char *const *strs;
    const rc_netdef *net;
    int n = -1;

    /* defaults when absent */
    CHECK_OK(rc_arg_i(od, "absent", 11, &iv, &err), err);
    CHECK_EQ(iv, 11);
    CHECK_OK(rc_arg_f(od, "absent", 2.5f, &fv, &err), err);
    CHECK(fv == 2.5f);
    CHECK_OK(rc_arg_s(od, "absent", "dflt", &sv, &err), err);
    CHECK(strcmp(sv, "dflt") == 0);
    CHECK_OK(rc_arg_ints(od, "absent", &ints, &n, &err), err);
    CHECK(ints == NULL && n == 0);
    CHECK_OK(rc_arg_floats(od, "absent", &floats, &n, &err), err);
    CHECK(floats == NULL && n == 0);
    CHECK_OK(rc_arg_strings(od, "absent", &strs, &n, &err), err);
    CHECK(strs == NULL && n == 0);
    CHECK_OK(rc_arg_net(od, "absent", &net, &err), err);
    CHECK(net == NULL);

    /* int is accepted where a float is asked for */
    CHECK_OK(rc_arg_f(od, "i", 0, &fv, &err), err);
    CHECK(fv == -7.f);
    /* an empty list of any kind is accepted by every list getter */
    CHECK_OK(rc_arg_ints(od, "empty_floats", &ints, &n, &err), err);
    CHECK(ints == NULL && n == 0);
    CHECK_OK(rc_arg_strings(od, "empty_floats", &strs, &n, &err), err);
    CHECK(strs == NULL && n == 0);

    /* wrong kinds: RC_ERR_TYPE naming op type, argument and both kinds */
    CHECK_ERR(rc_arg_i(od, "f", 0, &iv, &err), RC_ERR_TYPE, err, "op MyOp: argument 'f' must be an int, got float");
    CHECK_ERR(rc_arg_i(od, "s", 0, &iv, &err), RC_ERR_TYPE, err, "must be an int, got string");
    CHECK_ERR(rc_arg_i(od, "ints", 0, &iv, &err), RC_ERR_TYPE, err, "got list of ints");
    CHECK_ERR(rc_arg_f(od, "s", 0, &fv, &err), RC_ERR_TYPE, err, "argument 's' must be a float, got string");
    CHECK_ERR(rc_arg_f(od, "floats", 0, &fv, &err), RC_ERR_TYPE, err, "got list of floats");
    CHECK_ERR(rc_arg_s(od, "i", NULL, &sv, &err), RC_ERR_TYPE, err, "argument 'i' must be a string, got int");
    CHECK_ERR(rc_arg_s(od, "strings", NULL, &sv, &err), RC_ERR_TYPE, err, "got list of strings");
    CHECK_ERR(rc_arg_ints(od, "i", &ints, &n, &err), RC_ERR_TYPE, err, "must be a list of ints, got int");
    CHECK_ERR(rc_arg_ints(od, "floats", &ints, &n, &err), RC_ERR_TYPE, err, "got list of floats");
    CHECK(ints == NULL && n == 0);
    CHECK_ERR(rc_arg_floats(od, "ints", &floats, &n, &err), RC_ERR_TYPE, err, "must be a list of floats");
    CHECK_ERR(rc_arg_floats(od, "f", &floats, &n, &err), RC_ERR_TYPE, err, "got float");
    CHECK_ERR(rc_arg_strings(od, "s", &strs, &n, &err), RC_ERR_TYPE, err, "must be a list of strings, got string");
    CHECK_ERR(rc_arg_net(od, "nets", &net, &err), RC_ERR_TYPE, err, "must be a NetDef, got list of NetDefs");
    CHECK_ERR(rc_arg_net(od, "s", &net, &err), RC_ERR_TYPE, err, "got string");
    CHECK(net == NULL);
    CHECK_ERR(rc_arg_ints(od, "net", &ints, &n, &err), RC_ERR_TYPE, err, "got NetDef");
    /* a non-empty list of NetDefs is not an empty list */
    CHECK_ERR(rc_arg_strings(od, "nets", &strs, &n, &err), RC_ERR_TYPE, err, "got list of NetDefs");
    /* err may be NULL for a getter that fails */
    CHECK_EQ(rc_arg_i(od, "s", 0, &iv, NULL), RC_ERR_TYPE);
    rc_netdef_free(nd);
    rc_netdef_free(inner);
}

int main(void)
{
    RUN(test_build_and_insert);
    RUN(test_clone);
    RUN(test_getters_wrong_kind);
    return TEST_REPORT();
}
