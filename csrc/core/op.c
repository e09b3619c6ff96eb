/* Operator instantiation, running, and kernel-side check helpers. */
#include "rc_core.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rc_inplace_any(int in, int out) { (void)in; (void)out; return 1; }
int rc_inplace_same_index(int in, int out) { return in == out; }
int rc_inplace_first(int in, int out) { return in == 0 && out == 0; }

const char *rc_in_name(const rc_op *op, int i) { return op->def.inputs[i]; }
const char *rc_out_name(const rc_op *op, int i) { return op->def.outputs[i]; }

void rc_op_free(rc_op *op)
{
    if (!op) return;
    if (op->state && op->schema && op->schema->free_state) op->schema->free_state(op->state);
    rc_opdef_free(&op->def);
    free(op->in);
    free(op->out);
    free(op);
}

static void arity_str(char *buf, size_t n, int lo, int hi)
{
    if (hi < 0) snprintf(buf, n, "at least %d", lo);
    else if (lo == hi) snprintf(buf, n, "%d", lo);
    else snprintf(buf, n, "%d to %d", lo, hi);
}

rc_op *rc_op_create(rc_workspace *ws, const rc_opdef *def, int index, rc_err *err)
{
    const rc_op_schema *sc = rc_op_lookup(def->type);
    if (!sc) {
        rc_err_set(err, RC_ERR_KEY, "op #%d: unknown operator type '%s'", index, def->type);
        return NULL;
    }
    char ar[64];
    int max_in = sc->max_in;
    /* a step FC fused with the Sum after it takes that Sum's addend as a 4th
     * input (RecurrentNetwork's rewrite of its step net; see rc_fc_bind_sum) */
    if (strcmp(def->type, "FC") == 0 && rc_opdef_arg(def, "rnn_internal_fused_sum")) max_in++;
    if (def->n_in < sc->min_in || (max_in >= 0 && def->n_in > max_in)) {
        arity_str(ar, sizeof ar, sc->min_in, max_in);
        rc_err_set(err, RC_ERR_VALUE, "op %s #%d: expects %s inputs, got %d", def->type, index, ar, def->n_in);
        return NULL;
    }
    if (def->n_out < sc->min_out || (sc->max_out >= 0 && def->n_out > sc->max_out)) {
        arity_str(ar, sizeof ar, sc->min_out, sc->max_out);
        rc_err_set(err, RC_ERR_VALUE, "op %s #%d: expects %s outputs, got %d", def->type, index, ar, def->n_out);
        return NULL;
    }
    for (int i = 0; i < def->n_in; i++)
        for (int o = 0; o < def->n_out; o++)
            if (strcmp(def->inputs[i], def->outputs[o]) == 0 && !(sc->allow_inplace && sc->allow_inplace(i, o))) {
                rc_err_set(err, RC_ERR_VALUE,
                           "op %s #%d: input %d and output %d are the same blob '%s', which this op does not "
                           "allow (in-place)", def->type, index, i, o, def->inputs[i]);
                return NULL;
            }
    for (int o = 0; o < def->n_out; o++)
        for (int p = o + 1; p < def->n_out; p++)
            if (strcmp(def->outputs[o], def->outputs[p]) == 0) {
                rc_err_set(err, RC_ERR_VALUE, "op %s #%d: outputs %d and %d are the same blob '%s'", def->type,
                           index, o, p, def->outputs[o]);
                return NULL;
            }
    rc_op *op = calloc(1, sizeof *op);
    if (!op) goto oom;
    op->schema = sc;
    op->index = index;
    op->timestep = -1;
    op->ws = ws;
    if (rc_opdef_copy(&op->def, def)) goto oom;
    op->n_in = def->n_in;
    op->n_out = def->n_out;
    op->in = calloc((size_t)def->n_in + 1, sizeof *op->in);
    op->out = calloc((size_t)def->n_out + 1, sizeof *op->out);
    if (!op->in || !op->out) goto oom;
    for (int i = 0; i < def->n_in; i++) {
        op->in[i] = rc_ws_get(ws, def->inputs[i]);
        if (!op->in[i]) {
            rc_err_set(err, RC_ERR_KEY, "op %s #%d: input %d blob '%s' does not exist in the workspace",
                       def->type, index, i, def->inputs[i]);
            rc_op_free(op);
            return NULL;
        }
    }
    for (int i = 0; i < def->n_ctrl; i++) {
        /* control inputs only order ops; they need not exist */
    }
    for (int o = 0; o < def->n_out; o++) {
        op->out[o] = rc_ws_create(ws, def->outputs[o], err);
        if (!op->out[o]) { rc_op_free(op); return NULL; }
    }
    if (sc->setup) {
        rc_status st = sc->setup(op, err);
        if (st) {
            if (strncmp(err->msg, "op ", 3) != 0) rc_err_prefix(err, "op %s #%d: ", def->type, index);
            rc_op_free(op);
            return NULL;
        }
    }
    return op;
oom:
    rc_op_free(op);
    rc_err_set(err, RC_ERR_MEMORY, "op %s #%d: out of memory", def->type, index);
    return NULL;
}

rc_status rc_op_run(rc_op *op, rc_err *err)
{
    int fl = op->schema->flags;
    for (int i = 0; !(fl & RC_OP_OWN_OBJECT_OUT_CHECKS) && i < op->n_out; i++) {
        const rc_blob *b = op->out[i];
        if (b->obj && !((fl & RC_OP_OBJECT_OUT_FIRST) && i == 0) &&
            !((fl & RC_OP_OBJECT_OUT_LAST) && i == op->n_out - 1))
            return rc_op_fail(op, err, RC_ERR_TYPE,
                              "output %d blob '%s' holds a %s and cannot receive a tensor (write the output to "
                              "another blob)", i, rc_out_name(op, i), b->obj_kind ? b->obj_kind : "non-tensor object");
    }
    rc_status st = op->schema->run(op, err);
    /* after the run, failed or not: whatever it wrote is recorded (rc_tensor_stamp) */
    for (int i = 0; i < op->n_out; i++) rc_tensor_touch(rc_out(op, i));
    if (st && strncmp(err->msg, "op ", 3) != 0) {
        if (op->timestep >= 0)
            rc_err_prefix(err, "op %s #%d at timestep %d: ", op->def.type, op->index, op->timestep);
        else
            rc_err_prefix(err, "op %s #%d: ", op->def.type, op->index);
    }
    return st;
}

/* Messages from kernels: "op FC #3: <msg>" ("at timestep t" inside step nets). */
rc_status rc_op_fail(rc_op *op, rc_err *err, rc_status code, const char *fmt, ...)
{
    char body[RC_ERR_LEN - 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (op->timestep >= 0)
        return rc_err_set(err, code, "op %s #%d at timestep %d: %s", op->def.type, op->index, op->timestep, body);
    return rc_err_set(err, code, "op %s #%d: %s", op->def.type, op->index, body);
}

rc_status rc_check_input(rc_op *op, int i, rc_dtype dt, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->dtype == RC_UNDEF || !t->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", i,
                          rc_in_name(op, i));
    if (t->dtype != dt)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' must be %s, got %s", i, rc_in_name(op, i),
                          rc_dtype_name(dt), RC_SHAPE(t));
    return RC_OK;
}

rc_status rc_check_ndim(rc_op *op, int i, int lo, int hi, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim < lo || t->ndim > hi) {
        if (lo == hi)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have %d dims, got %s", i,
                              rc_in_name(op, i), lo, RC_SHAPE(t));
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have %d to %d dims, got %s", i,
                          rc_in_name(op, i), lo, hi, RC_SHAPE(t));
    }
    return RC_OK;
}
