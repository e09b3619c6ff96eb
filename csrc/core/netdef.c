/* NetDef-like plain data: construction, deep copy, free, argument getters. */
#include "rc_core.h"
#include <stdlib.h>
#include <string.h>

static int push_str(char ***arr, int *n, const char *s)
{
    char **na = realloc(*arr, sizeof(char *) * (size_t)(*n + 1));
    if (!na) return -1;
    *arr = na;
    na[*n] = strdup(s ? s : "");
    if (!na[*n]) return -1;
    (*n)++;
    return 0;
}

static void free_strs(char **a, int n)
{
    for (int i = 0; i < n; i++) free(a[i]);
    free(a);
}

static int copy_strs(char ***dst, char *const *src, int n)
{
    *dst = NULL;
    if (n == 0) return 0;
    char **a = calloc((size_t)n, sizeof *a);
    if (!a) return -1;
    for (int i = 0; i < n; i++) {
        a[i] = strdup(src[i]);
        if (!a[i]) { free_strs(a, i); return -1; }
    }
    *dst = a;
    return 0;
}

void rc_arg_free(rc_arg *a)
{
    free(a->name);
    free(a->s);
    free(a->floats);
    free(a->ints);
    if (a->strings) free_strs(a->strings, a->n);
    if (a->net) rc_netdef_free(a->net);
    if (a->nets) {
        for (int i = 0; i < a->n; i++) rc_netdef_free(a->nets[i]);
        free(a->nets);
    }
    memset(a, 0, sizeof *a);
}

int rc_arg_copy(rc_arg *dst, const rc_arg *src)
{
    memset(dst, 0, sizeof *dst);
    dst->kind = src->kind;
    dst->f = src->f;
    dst->i = src->i;
    dst->n = src->n;
    if (!(dst->name = strdup(src->name ? src->name : ""))) goto fail;
    if (src->s && !(dst->s = strdup(src->s))) goto fail;
    if (src->floats && src->n) {
        if (!(dst->floats = malloc(sizeof(float) * (size_t)src->n))) goto fail;
        memcpy(dst->floats, src->floats, sizeof(float) * (size_t)src->n);
    }
    if (src->ints && src->n) {
        if (!(dst->ints = malloc(sizeof(int64_t) * (size_t)src->n))) goto fail;
        memcpy(dst->ints, src->ints, sizeof(int64_t) * (size_t)src->n);
    }
    if (src->strings && copy_strs(&dst->strings, src->strings, src->n)) goto fail;
    if (src->net && !(dst->net = rc_netdef_clone(src->net))) goto fail;
    if (src->nets && src->n) {
        if (!(dst->nets = calloc((size_t)src->n, sizeof *dst->nets))) goto fail;
        for (int i = 0; i < src->n; i++)
            if (!(dst->nets[i] = rc_netdef_clone(src->nets[i]))) goto fail;
    }
    return 0;
fail:
    rc_arg_free(dst);
    return -1;
}

void rc_opdef_free(rc_opdef *od)
{
    free(od->type);
    free(od->name);
    free_strs(od->inputs, od->n_in);
    free_strs(od->outputs, od->n_out);
    free_strs(od->control_inputs, od->n_ctrl);
    for (int i = 0; i < od->n_arg; i++) rc_arg_free(&od->args[i]);
    free(od->args);
    memset(od, 0, sizeof *od);
}

int rc_opdef_copy(rc_opdef *dst, const rc_opdef *src)
{
    memset(dst, 0, sizeof *dst);
    if (!(dst->type = strdup(src->type ? src->type : ""))) goto fail;
    if (!(dst->name = strdup(src->name ? src->name : ""))) goto fail;
    if (copy_strs(&dst->inputs, src->inputs, src->n_in)) goto fail;
    dst->n_in = src->n_in;
    if (copy_strs(&dst->outputs, src->outputs, src->n_out)) goto fail;
    dst->n_out = src->n_out;
    if (copy_strs(&dst->control_inputs, src->control_inputs, src->n_ctrl)) goto fail;
    dst->n_ctrl = src->n_ctrl;
    if (src->n_arg) {
        if (!(dst->args = calloc((size_t)src->n_arg, sizeof *dst->args))) goto fail;
        for (int i = 0; i < src->n_arg; i++) {
            if (rc_arg_copy(&dst->args[i], &src->args[i])) goto fail;
            dst->n_arg = i + 1;
        }
    }
    dst->device_type = src->device_type;
    return 0;
fail:
    rc_opdef_free(dst);
    return -1;
}

int rc_opdef_add_input(rc_opdef *od, const char *b) { return push_str(&od->inputs, &od->n_in, b); }
int rc_opdef_add_output(rc_opdef *od, const char *b) { return push_str(&od->outputs, &od->n_out, b); }
int rc_opdef_add_control_input(rc_opdef *od, const char *b) { return push_str(&od->control_inputs, &od->n_ctrl, b); }

static rc_arg *arg_slot(rc_opdef *od, const char *name)
{
    for (int i = 0; i < od->n_arg; i++)
        if (strcmp(od->args[i].name, name) == 0) {
            char *nm = od->args[i].name;
            od->args[i].name = NULL;
            rc_arg_free(&od->args[i]);
            od->args[i].name = nm;
            return &od->args[i];
        }
    rc_arg *na = realloc(od->args, sizeof *na * (size_t)(od->n_arg + 1));
    if (!na) return NULL;
    od->args = na;
    rc_arg *a = &na[od->n_arg];
    memset(a, 0, sizeof *a);
    if (!(a->name = strdup(name))) return NULL;
    od->n_arg++;
    return a;
}

int rc_opdef_set_arg_i(rc_opdef *od, const char *name, int64_t v)
{
    rc_arg *a = arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_I;
    a->i = v;
    return 0;
}

int rc_opdef_set_arg_f(rc_opdef *od, const char *name, double v)
{
    rc_arg *a = arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_F;
    a->f = v;
    return 0;
}

int rc_opdef_set_arg_s(rc_opdef *od, const char *name, const char *v)
{
    rc_arg *a = arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_S;
    a->s = strdup(v);
    return a->s ? 0 : -1;
}

rc_netdef *rc_netdef_new(const char *name)
{
    rc_netdef *nd = calloc(1, sizeof *nd);
    if (!nd) return NULL;
    nd->name = strdup(name ? name : "");
    nd->type = strdup("");
    if (!nd->name || !nd->type) { rc_netdef_free(nd); return NULL; }
    return nd;
}

void rc_netdef_free(rc_netdef *nd)
{
    if (!nd) return;
    free(nd->name);
    free(nd->type);
    for (int i = 0; i < nd->n_op; i++) rc_opdef_free(&nd->ops[i]);
    free(nd->ops);
    free_strs(nd->ext_in, nd->n_ext_in);
    free_strs(nd->ext_out, nd->n_ext_out);
    free(nd);
}

rc_netdef *rc_netdef_clone(const rc_netdef *src)
{
    rc_netdef *nd = rc_netdef_new(src->name);
    if (!nd) return NULL;
    free(nd->type);
    if (!(nd->type = strdup(src->type ? src->type : ""))) goto fail;
    if (src->n_op) {
        if (!(nd->ops = calloc((size_t)src->n_op, sizeof *nd->ops))) goto fail;
        for (int i = 0; i < src->n_op; i++) {
            if (rc_opdef_copy(&nd->ops[i], &src->ops[i])) goto fail;
            nd->n_op = i + 1;
        }
    }
    if (copy_strs(&nd->ext_in, src->ext_in, src->n_ext_in)) goto fail;
    nd->n_ext_in = src->n_ext_in;
    if (copy_strs(&nd->ext_out, src->ext_out, src->n_ext_out)) goto fail;
    nd->n_ext_out = src->n_ext_out;
    return nd;
fail:
    rc_netdef_free(nd);
    return NULL;
}

rc_opdef *rc_netdef_insert_op(rc_netdef *nd, int pos, const char *type)
{
    if (pos < 0 || pos > nd->n_op) pos = nd->n_op;
    rc_opdef *no = realloc(nd->ops, sizeof *no * (size_t)(nd->n_op + 1));
    if (!no) return NULL;
    nd->ops = no;
    memmove(no + pos + 1, no + pos, sizeof *no * (size_t)(nd->n_op - pos));
    rc_opdef *od = &no[pos];
    memset(od, 0, sizeof *od);
    od->type = strdup(type);
    od->name = strdup("");
    nd->n_op++;
    if (!od->type || !od->name) return NULL;
    return od;
}

rc_opdef *rc_netdef_add_op(rc_netdef *nd, const char *type) { return rc_netdef_insert_op(nd, nd->n_op, type); }

static int has_str(char *const *a, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(a[i], s) == 0) return 1;
    return 0;
}

int rc_netdef_add_ext_in(rc_netdef *nd, const char *b)
{
    if (has_str(nd->ext_in, nd->n_ext_in, b)) return 0;
    return push_str(&nd->ext_in, &nd->n_ext_in, b);
}

int rc_netdef_add_ext_out(rc_netdef *nd, const char *b)
{
    if (has_str(nd->ext_out, nd->n_ext_out, b)) return 0;
    return push_str(&nd->ext_out, &nd->n_ext_out, b);
}

/* ---------------------------------------------------------------- argument getters */
const rc_arg *rc_opdef_arg(const rc_opdef *od, const char *name)
{
    for (int i = 0; i < od->n_arg; i++)
        if (strcmp(od->args[i].name, name) == 0) return &od->args[i];
    return NULL;
}

static const char *kind_name(rc_arg_kind k)
{
    switch (k) {
    case RC_ARG_F: return "float";
    case RC_ARG_I: return "int";
    case RC_ARG_S: return "string";
    case RC_ARG_FLOATS: return "list of floats";
    case RC_ARG_INTS: return "list of ints";
    case RC_ARG_STRINGS: return "list of strings";
    case RC_ARG_NET: return "NetDef";
    case RC_ARG_NETS: return "list of NetDefs";
    }
    return "?";
}

static rc_status bad_kind(const rc_opdef *od, const rc_arg *a, const char *want, rc_err *err)
{
    return rc_err_set(err, RC_ERR_TYPE, "op %s: argument '%s' must be %s, got %s", od->type, a->name, want,
                      kind_name(a->kind));
}

static int is_empty_list(const rc_arg *a)
{
    return (a->kind == RC_ARG_FLOATS || a->kind == RC_ARG_INTS || a->kind == RC_ARG_STRINGS ||
            a->kind == RC_ARG_NETS) && a->n == 0;
}

rc_status rc_arg_f(const rc_opdef *od, const char *name, float dflt, float *out, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    if (!a) { *out = dflt; return RC_OK; }
    if (a->kind == RC_ARG_F) { *out = (float)a->f; return RC_OK; }
    if (a->kind == RC_ARG_I) { *out = (float)a->i; return RC_OK; }
    return bad_kind(od, a, "a float", err);
}

rc_status rc_arg_i(const rc_opdef *od, const char *name, int64_t dflt, int64_t *out, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    if (!a) { *out = dflt; return RC_OK; }
    if (a->kind == RC_ARG_I) { *out = a->i; return RC_OK; }
    return bad_kind(od, a, "an int", err);
}

rc_status rc_arg_s(const rc_opdef *od, const char *name, const char *dflt, const char **out, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    if (!a) { *out = dflt; return RC_OK; }
    if (a->kind == RC_ARG_S) { *out = a->s; return RC_OK; }
    return bad_kind(od, a, "a string", err);
}

rc_status rc_arg_ints(const rc_opdef *od, const char *name, const int64_t **out, int *n, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    *out = NULL;
    *n = 0;
    if (!a || is_empty_list(a)) return RC_OK;
    if (a->kind == RC_ARG_INTS) { *out = a->ints; *n = a->n; return RC_OK; }
    return bad_kind(od, a, "a list of ints", err);
}

rc_status rc_arg_floats(const rc_opdef *od, const char *name, const float **out, int *n, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    *out = NULL;
    *n = 0;
    if (!a || is_empty_list(a)) return RC_OK;
    if (a->kind == RC_ARG_FLOATS) { *out = a->floats; *n = a->n; return RC_OK; }
    return bad_kind(od, a, "a list of floats", err);
}

rc_status rc_arg_strings(const rc_opdef *od, const char *name, char *const **out, int *n, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    *out = NULL;
    *n = 0;
    if (!a || is_empty_list(a)) return RC_OK;
    if (a->kind == RC_ARG_STRINGS) { *out = a->strings; *n = a->n; return RC_OK; }
    return bad_kind(od, a, "a list of strings", err);
}

rc_status rc_arg_net(const rc_opdef *od, const char *name, const rc_netdef **out, rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(od, name);
    *out = NULL;
    if (!a) return RC_OK;
    if (a->kind == RC_ARG_NET) { *out = a->net; return RC_OK; }
    return bad_kind(od, a, "a NetDef", err);
}
