/* ops/counter.h -- the Counter object of ops/counter.c, for Save and Load
 * (ops/db.c), which write a Counter blob as Caffe2 did (a BlobProto of type
 * RC_COUNTER_PROTO_TYPE whose content is a TensorProto holding the count)
 * and read one back into a new Counter.
 */
#ifndef RC_OPS_COUNTER_H
#define RC_OPS_COUNTER_H

#include "../core/rc_core.h"

/* Caffe2's BlobProto type name of a serialized counter. */
#define RC_COUNTER_PROTO_TYPE "std::unique_ptr<Counter<int64_t>>"

/* Whether blob b holds a Counter. */
RC_INTERNAL int rc_counter_is(const rc_blob *b);

/* The count of the Counter blob b holds (rc_counter_is(b) must be true). An atomic read. */
RC_INTERNAL int32_t rc_counter_get(const rc_blob *b);

/* A new Counter holding count: owned by the caller until rc_counter_install
 * hands it to a blob (free it with free() otherwise). NULL when out of memory. */
RC_INTERNAL void *rc_counter_new(int32_t count);

/* Blob b's tensor and object (if any) are released and b holds counter c
 * (from rc_counter_new; the blob owns it now). Cannot fail. */
RC_INTERNAL void rc_counter_install(rc_blob *b, void *c);

#endif
