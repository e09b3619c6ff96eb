/* ops/checks.h -- input checks shared by the ops on variable-length batches:
 * ops/mask.c (BooleanMask*, LengthsToWeights, PadEmptySamples),
 * ops/ranges.c (LengthsTile, LengthsRangeFill, LengthsGather, GatherRanges,
 * LengthsPad, ScatterAssign), ops/embed.c (SegmentOneHot, BatchOneHot,
 * BatchBucketOneHot) and ops/sparse.c (SparseToDenseMask, BatchSparseToDense),
 * and the image-order checks of ops/moments.c (BatchMoments) and ops/norm.c
 * (GroupNorm, InstanceNorm, SpatialBN).
 * Defined in ops/checks.c. Every function returns
 * RC_OK or fails through rc_op_fail (the message names the op, the blob, its
 * role and its shape or the bad value); none allocates or writes a tensor.
 */
#ifndef RC_OPS_CHECKS_H
#define RC_OPS_CHECKS_H

#include "../core/rc_core.h"

/* Input i: int32 1-D; `what` names its role ("lengths", "mask"). */
RC_INTERNAL rc_status rc_checks_i32_vector(rc_op *op, int i, const char *what, rc_err *err);

/* Input i: float32 or int32 with ndim >= 1 (exactly 1 when one_d); `what`
 * names its role. */
RC_INTERNAL rc_status rc_checks_rows_any(rc_op *op, int i, const char *what, int one_d, rc_err *err);

/* Input li (lengths, int32 1-D, already checked): every length >= 0 (a
 * ValueError naming the position and the value otherwise); *sum = their sum.
 * Reads the data: run it before anything is written. */
RC_INTERNAL rc_status rc_checks_lengths_values(rc_op *op, int li, int64_t *sum, rc_err *err);

/* sum, the sum of the lengths of input li, is input di's first dim (a
 * ValueError naming both blobs otherwise). */
RC_INTERNAL rc_status rc_checks_lengths_match(rc_op *op, int li, int64_t sum, int di, rc_err *err);

/* rc_checks_lengths_values, then rc_checks_lengths_match with input di. */
RC_INTERNAL rc_status rc_checks_lengths_sum(rc_op *op, int li, int di, rc_err *err);

/* The argument order ("NCHW", the default, or "NHWC"): *nhwc = 1 for NHWC. */
RC_INTERNAL rc_status rc_checks_order(rc_op *op, int *nhwc, rc_err *err);

/* Input xi: float32 X with >= 2 dims (N, C, ... or N, ..., C by nhwc). */
RC_INTERNAL rc_status rc_checks_image(rc_op *op, int xi, int nhwc, rc_err *err);

#endif
