/* ops/util.c -- Caffe2's small copy-like utility ops (utility_ops.cc Alias,
 * copy_op.cc CopyFromCPUInput, ensure_cpu_output_op.cc EnsureCPUOutput).
 *
 *   Alias(X) -> Y               Y = X (any dtype, any shape)
 *   CopyFromCPUInput(X) -> Y    Y = X (any dtype, any shape)
 *   EnsureCPUOutput(X) -> Y     Y = X (any dtype, any shape)
 *   EnsureDense(X) -> Y         Y = X (any dtype, any shape); Caffe2's utility_ops EnsureDense: its
 *                               gradient maker makes a sparse output gradient dense (_grad_util.py)
 *
 * All three run in place (Y named X: nothing is written). What differs from
 * Caffe2:
 *  - Alias: Caffe2's Y shared X's storage (ShareData), so a later write to
 *    either showed in the other. Here Y is a copy of X's bytes at the time the
 *    op runs (the same value; no later write reaches the other blob).
 *  - CopyFromCPUInput / EnsureCPUOutput: the runtime is CPU-only, so both are
 *    what Caffe2's CPU implementations were: a copy.
 *  - An input that holds no tensor (created but never fed or computed) is a
 *    ValueError naming the op and the blob when the op runs (Caffe2: an
 *    enforce failure). The schema's check (net creation) is the same test;
 *    since any tensor fits these ops, it cannot refuse a net at creation
 *    (the runtime calls it only for inputs that hold tensors).
 * Gradients (recurrent/_grad_util.py): Alias and CopyFromCPUInput pass the
 * output gradient through as the input's (no op); EnsureCPUOutput has none
 * (Caffe2's NO_GRADIENT).
 *
 * The copy itself is rc_tensor_copy (core/tensor.c), the same function the
 * Copy op (ops/math.c) uses. No state, no allocation besides Y's buffer.
 */
#include "../core/rc_core.h"

/* Input 0 must hold a tensor (fed or computed): a dtype and a storage. A
 * tensor of zero elements is fine (its storage has zero bytes). */
static rc_status util_check(rc_op *op, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    if (x->dtype == RC_UNDEF || !x->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' holds no tensor (was it fed or computed?)",
                          rc_in_name(op, 0));
    return RC_OK;
}

/* Y = X; in place (op->in[0] == op->out[0]) nothing is written. Y's old
 * buffer is reused when it is large enough and not shared (rc_tensor_copy). */
static rc_status util_copy_run(rc_op *op, rc_err *err)
{
    rc_status st = util_check(op, err);
    if (st || op->in[0] == op->out[0]) return st;
    if ((st = rc_tensor_copy(rc_out(op, 0), rc_in(op, 0), err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s' (for input %s): %s", rc_out_name(op, 0),
                          RC_SHAPE(rc_in(op, 0)), err->msg);
    return RC_OK;
}

const rc_op_schema rc_ops_util[] = {
    {"Alias", 1, 1, 1, 1, rc_inplace_any, NULL, util_copy_run, NULL,
     "Y = X (any dtype; a copy: Caffe2 shared the storage); gradient passed through", util_check},
    {"CopyFromCPUInput", 1, 1, 1, 1, rc_inplace_any, NULL, util_copy_run, NULL,
     "Y = X (any dtype; CPU-only runtime: a copy); gradient passed through", util_check},
    {"EnsureCPUOutput", 1, 1, 1, 1, rc_inplace_any, NULL, util_copy_run, NULL,
     "Y = X (any dtype; CPU-only runtime: a copy); no gradient", util_check},
    {"EnsureDense", 1, 1, 1, 1, rc_inplace_any, NULL, util_copy_run, NULL,
     "Y = X (any dtype; a copy); a sparse gradient (GradientSlice) is made dense by SparseToDense", util_check},
    {0},
};
