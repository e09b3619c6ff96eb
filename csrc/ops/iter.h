/* ops/iter.h -- the int32 iteration counter shared by Iter (ops/optim.c,
 * where both functions are defined) and AtomicIter (ops/mutex.c). Both fail
 * through rc_op_fail (the message names the op, the blob, its role and its
 * shape or value); neither allocates.
 */
#ifndef RC_OPS_ITER_H
#define RC_OPS_ITER_H

#include "../core/rc_core.h"

/* t (`what` "input" / "output" k, blob `name`) must be an int32 tensor of
 * exactly one element: ValueError when it holds nothing or another number of
 * elements, TypeError for another dtype. Reads no data values. */
RC_INTERNAL rc_status rc_iter_check_counter(rc_op *op, const char *what, int k, const char *name,
                                            const rc_tensor *t, rc_err *err);

/* Output 0, the counter (checked as above), += 1; a counter at INT32_MAX is a
 * ValueError and stays unchanged. */
RC_INTERNAL rc_status rc_iter_increment(rc_op *op, rc_err *err);

#endif
