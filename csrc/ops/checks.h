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

/* What blob b holds, for messages: "a Mutex", "a tensor (2, 3) float32",
 * "nothing (it was created but never written)". Written into buf (n bytes),
 * which it returns. Used by the object-blob ops (ops/mutex.c, ops/queue.c,
 * ops/counter.c). */
RC_INTERNAL const char *rc_checks_holds(const rc_blob *b, char *buf, size_t n);
#define RC_HOLDS(b) rc_checks_holds((b), (char[160]){0}, 160)

/* For the ops that create an object blob (CreateMutex, CreateCounter): output
 * 0 may hold nothing, a tensor or an object of kind `kind` (which the op
 * replaces); another object is a TypeError ("... which a <what> cannot
 * replace"). Writes nothing. */
RC_INTERNAL rc_status rc_checks_object_output(rc_op *op, const char *kind, const char *what, rc_err *err);

/* Blob b's object (freed) and tensor (released) give way to obj, which b owns
 * from now on (freed with obj_free; kind: a static string). Cannot fail. */
RC_INTERNAL void rc_checks_put_object(rc_blob *b, void *obj, void (*obj_free)(void *), const char *kind);

/* Input i must hold a Mutex (CreateMutex's output; a TypeError naming the blob and what it holds
 * otherwise). Defined in ops/mutex.c, which owns the Mutex kind; used by AtomicIter, AtomicFetchAdd
 * and LastNWindowCollector (ops/collect.c). */
RC_INTERNAL rc_status rc_checks_mutex(rc_op *op, int i, rc_err *err);

/* The argument order ("NCHW", the default, or "NHWC"): *nhwc = 1 for NHWC. */
RC_INTERNAL rc_status rc_checks_order(rc_op *op, int *nhwc, rc_err *err);

/* Input xi: float32 X with >= 2 dims (N, C, ... or N, ..., C by nhwc). */
RC_INTERNAL rc_status rc_checks_image(rc_op *op, int xi, int nhwc, rc_err *err);

#endif
