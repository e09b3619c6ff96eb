/* ops/sparse.h -- checks shared by the ops that take sparse rows: an int32
 * INDICES tensor of any rank (K = its size) naming rows of a tensor X, with
 * VALUES (or GRAD) of shape INDICES.shape + X.shape[1:] (row k of VALUES goes
 * to row INDICES.flat[k] of X). Defined in ops/sparse.c; used there
 * (SparseToDense, ScatterWeightedSum), in ops/optim.c
 * (SparseMomentumSGDUpdate, SparseAdam) and ops/embed.c (SparseAdagrad).
 * Every function returns RC_OK or fails through rc_op_fail (the message names
 * the op, the blob and the shapes); none allocates or writes a tensor.
 */
#ifndef RC_OPS_SPARSE_H
#define RC_OPS_SPARSE_H

#include "../core/rc_core.h"

/* Input i holds an int32 tensor (of any shape, possibly empty). */
RC_INTERNAL rc_status rc_sparse_check_indices(rc_op *op, int i, rc_err *err);

/* Input x: float32 with at least one dim; input v: float32 of shape
 * INDICES.shape + X.shape[1:], INDICES being input ii (already checked by
 * rc_sparse_check_indices). `vwhat` names v's role in messages ("the values",
 * "the gradient"). */
RC_INTERNAL rc_status rc_sparse_check_rows(rc_op *op, int x, int ii, int v, const char *vwhat, rc_err *err);

/* Every index of input ii lies in [0, n); `what` says what n is. An index out
 * of range is an IndexError naming the blob, the value, its position (flat,
 * and per dim when INDICES has two or more) and the range. Reads the data: run
 * it before anything is written. */
RC_INTERNAL rc_status rc_sparse_check_range(rc_op *op, int ii, int64_t n, const char *what, rc_err *err);

/* As rc_sparse_check_range with n = X.shape[0], X being input x. */
RC_INTERNAL rc_status rc_sparse_check_range_of(rc_op *op, int ii, int x, rc_err *err);

/* For setup: output pairs[2k + 1] must be the blob of input pairs[2k], for
 * k < n (the op updates those in place); a ValueError otherwise. */
RC_INTERNAL rc_status rc_sparse_require_inplace(rc_op *op, const int *pairs, int n, rc_err *err);

/* Input i: float32 holding one value (any shape of one element); *v = it.
 * `what` names its role ("the learning rate", "weight 0"). */
RC_INTERNAL rc_status rc_sparse_read_scalar(rc_op *op, int i, const char *what, float *v, rc_err *err);

/* Checks input i as rc_sparse_read_scalar does, without reading it (for the
 * net-creation checks). */
RC_INTERNAL rc_status rc_sparse_check_scalar(rc_op *op, int i, const char *what, rc_err *err);

#endif
