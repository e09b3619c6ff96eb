/* ops/checks.c -- the input checks of ops/checks.h, shared by ops/mask.c and
 * ops/ranges.c. No global state; nothing allocates.
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <stdio.h>
#include <string.h>

rc_status rc_checks_i32_vector(rc_op *op, int i, const char *what, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_I32, err);
    if (st) return st;
    if (rc_in(op, i)->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must be 1-D, got %s", i,
                          rc_in_name(op, i), what, RC_SHAPE(rc_in(op, i)));
    return RC_OK;
}

rc_status rc_checks_rows_any(rc_op *op, int i, const char *what, int one_d, rc_err *err)
{
    const rc_tensor *x = rc_in(op, i);
    rc_status st;
    if (x->dtype != RC_I32 && (st = rc_check_input(op, i, RC_F32, err)))
        return st == RC_ERR_TYPE ? rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' (%s) must be float32 or "
                                              "int32, got %s", i, rc_in_name(op, i), what, RC_SHAPE(x)) : st;
    if (one_d ? x->ndim != 1 : x->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must %s, got %s", i, rc_in_name(op, i),
                          what, one_d ? "be 1-D" : "have at least 1 dim", RC_SHAPE(x));
    return RC_OK;
}

rc_status rc_checks_lengths_values(rc_op *op, int li, int64_t *sum, rc_err *err)
{
    const rc_tensor *t = rc_in(op, li);
    const int64_t n = t->dims[0];
    const int32_t *l = n ? rc_i32(t) : NULL;
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        if (l[i] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lengths) holds %d at position %lld; a "
                              "length must not be negative", li, rc_in_name(op, li), (int)l[i], (long long)i);
        s += l[i];
    }
    *sum = s;
    return RC_OK;
}

rc_status rc_checks_lengths_match(rc_op *op, int li, int64_t sum, int di, rc_err *err)
{
    const rc_tensor *x = rc_in(op, di);
    if (x->dims[0] != sum)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (lengths) of shape %s sums to %lld, but input "
                          "%d blob '%s' of shape %s has %lld rows", li, rc_in_name(op, li), RC_SHAPE(rc_in(op, li)),
                          (long long)sum, di, rc_in_name(op, di), RC_SHAPE(x), (long long)x->dims[0]);
    return RC_OK;
}

rc_status rc_checks_lengths_sum(rc_op *op, int li, int di, rc_err *err)
{
    int64_t sum = 0;
    rc_status st = rc_checks_lengths_values(op, li, &sum, err);
    return st ? st : rc_checks_lengths_match(op, li, sum, di, err);
}

const char *rc_checks_holds(const rc_blob *b, char *buf, size_t n)
{
    if (b->obj) snprintf(buf, n, "a %s", b->obj_kind ? b->obj_kind : "non-tensor object");
    else if (b->t.dtype == RC_UNDEF) snprintf(buf, n, "nothing (it was created but never written)");
    else snprintf(buf, n, "a tensor %s", RC_SHAPE(&b->t));
    return buf;
}

rc_status rc_checks_object_output(rc_op *op, const char *kind, const char *what, rc_err *err)
{
    const rc_blob *b = op->out[0];
    if (b->obj && b->obj_kind != kind)
        return rc_op_fail(op, err, RC_ERR_TYPE, "output 0 blob '%s' holds a %s, which a %s cannot replace",
                          rc_out_name(op, 0), b->obj_kind ? b->obj_kind : "non-tensor object", what);
    return RC_OK;
}

void rc_checks_put_object(rc_blob *b, void *obj, void (*obj_free)(void *), const char *kind)
{
    if (b->obj && b->obj_free) b->obj_free(b->obj);
    rc_tensor_release(&b->t);
    b->obj = obj;
    b->obj_free = obj_free;
    b->obj_kind = kind;
}

rc_status rc_checks_order(rc_op *op, int *nhwc, rc_err *err)
{
    const char *order;
    rc_status st = rc_arg_s(&op->def, "order", "NCHW", &order, err);
    if (st) return st;
    if (strcmp(order, "NCHW") != 0 && strcmp(order, "NHWC") != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument order must be \"NCHW\" or \"NHWC\", got \"%s\"", order);
    *nhwc = order[1] == 'H';
    return RC_OK;
}

rc_status rc_checks_image(rc_op *op, int xi, int nhwc, rc_err *err)
{
    rc_status st = rc_check_input(op, xi, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, xi);
    if (x->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (X) must have at least 2 dims (%s), got %s", xi,
                          rc_in_name(op, xi), nhwc ? "N, ..., C" : "N, C, ...", RC_SHAPE(x));
    return RC_OK;
}
