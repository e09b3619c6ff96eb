/* ops/math.c -- elementwise and matrix math ops and their gradient ops. */
#include "../core/rc_core.h"
#include <string.h>

/* Copy: Y = X (any dtype). In-place allowed (no-op). */
static rc_status copy_run(rc_op *op, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    if (x->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' holds no tensor", rc_in_name(op, 0));
    rc_status st = rc_tensor_copy(rc_out(op, 0), x, err);
    if (st) return rc_op_fail(op, err, st, "output blob '%s': %s", rc_out_name(op, 0), err->msg);
    return RC_OK;
}

const rc_op_schema rc_ops_math[] = {
    {"Copy", 1, 1, 1, 1, rc_inplace_any, NULL, copy_run, NULL, "Y = X"},
    {0},
};
