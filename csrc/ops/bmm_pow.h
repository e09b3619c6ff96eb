/* ops/bmm_pow.h -- the parts of BatchMatMul (broadcast=1), Pow (exponent
 * tensor) and Gather (axis != 0) that live in ops/bmm_pow.c, called from the
 * ops' own files (ops/batch.c, ops/math.c, ops/embed.c). */
#ifndef RC_OPS_BMM_POW_H
#define RC_OPS_BMM_POW_H

#include "../core/rc_core.h"
#include <stdint.h>

/* BatchMatMul(A, B) with broadcast=1 (numpy.matmul's rules, see bmm_pow.c):
 * check validates dtypes and shapes; run also writes Y (output 0). */
RC_INTERNAL rc_status rc_bmm_bc_check(rc_op *op, int trans_a, int trans_b, rc_err *err);
RC_INTERNAL rc_status rc_bmm_bc_run(rc_op *op, int trans_a, int trans_b, rc_err *err);

/* Pow(X, E) -> Y: E a float32 tensor, broadcast as Mul (legacy with
 * broadcast=1 / axis, else equal or numpy-style). */
RC_INTERNAL rc_status rc_pow_tensor_run(rc_op *op, int broadcast, int64_t axis, rc_err *err);
/* Its inputs only (dtypes, broadcast, in place), as run checks them first. */
RC_INTERNAL rc_status rc_pow_tensor_check(rc_op *op, int broadcast, int64_t axis, rc_err *err);

/* PowGradient(dY, X, E, Y) -> (dX, dE); acc / acc_n: the caller's double
 * scratch (owned by its op state, grown here). */
RC_INTERNAL rc_status rc_pow_tensor_grad_run(rc_op *op, int broadcast, int64_t axis, double **acc,
                                             int64_t *acc_n, rc_err *err);
/* Its inputs only (dtypes, broadcast, dY and Y of the result's shape), as run checks them first. */
RC_INTERNAL rc_status rc_pow_tensor_grad_check(rc_op *op, int broadcast, int64_t axis, rc_err *err);

/* Gather(DATA, INDICES) along `axis` (in [-ndim, ndim) of DATA), with Caffe2's wrap_indices and match_outer
 * (0 or 1). */
RC_INTERNAL rc_status rc_gather_axis_run(rc_op *op, int64_t axis, int wrap, int match_outer, rc_err *err);
/* Its inputs without the index values (dtypes, axis, output rank), as run checks them first. */
RC_INTERNAL rc_status rc_gather_axis_check(rc_op *op, int64_t axis, int wrap, int match_outer, rc_err *err);
/* The arguments wrap_indices and match_outer (default 0; 0 or 1, else a ValueError). */
RC_INTERNAL rc_status rc_gather_flag_args(rc_op *op, int64_t *wrap, int64_t *match_outer, rc_err *err);

#endif
