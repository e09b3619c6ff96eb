/* ops/queue.c -- Caffe2's blob queues (caffe2/queue/queue_ops.h, blobs_queue.cc).
 *
 *   CreateBlobsQueue() -> QUEUE                     a new, empty, open queue (an opaque blob)
 *   EnqueueBlobs(QUEUE, B1..BN) -> (B1..BN)         appends the record (B1..BN): in place, as Caffe2
 *   DequeueBlobs(QUEUE) -> (B1..BN)                 takes the oldest record out
 *   CloseBlobsQueue(QUEUE) -> ()                    no record may be added any more
 *   SafeEnqueueBlobs(QUEUE, B1..BN) -> (B1..BN, STATUS)
 *   SafeDequeueBlobs(QUEUE) -> (B1..BN, STATUS)     num_records records, concatenated along dim 0
 *   WeightedSampleDequeueBlobs(Q1..QK) -> (B1..BN, STATUS)
 *                                                   a record of one queue picked at random by weights
 *                                                   (its own section below)
 *
 * A queue is a FIFO of records of N tensors (N = num_blobs), at most
 * `capacity` of them. It lives in its blob as an object (blob->obj, kind
 * "BlobsQueue", freed with the blob: ResetWorkspace, or CreateBlobsQueue run
 * again, which replaces it by a new empty queue). FetchBlob / FeedBlob / Save
 * of a queue blob are TypeErrors ("holds a BlobsQueue, not a tensor"); a
 * queue op given a blob that is not a queue as its input 0 is a TypeError
 * naming the blob and what it holds (at net creation when it holds a tensor).
 *
 * Arguments (as Caffe2): CreateBlobsQueue: capacity (default 1, >= 1),
 * num_blobs (default 1, >= 1), enforce_unique_name (0 / 1, accepted: the
 * queue's records are not workspace blobs here, so no name can clash; Caffe2
 * created blobs "<queue>_<i>_<j>" in the workspace and, with this flag,
 * refused existing ones), field_names (num_blobs strings, or none; used in
 * messages). DequeueBlobs: timeout_secs (>= 0; cannot change the result, see
 * below). SafeDequeueBlobs: num_records (default 1, >= 1).
 *
 * Ownership: the queue owns its records. EnqueueBlobs copies the tensors in
 * (so later writes to the source blobs do not change a queued record; Caffe2
 * swapped the blobs' contents with the queue's slot, leaving the sources
 * holding whatever the slot held before, empty at first); DequeueBlobs moves
 * a record's tensors into the output blobs (their old tensors are released).
 * The records of one queue may differ in shapes and dtypes (as Caffe2).
 *
 * No waiting. Caffe2's queue blocked: a dequeue from an empty queue waited
 * for an enqueue (or for timeout_secs, then failed), an enqueue into a full
 * queue waited for a dequeue, both from other threads' nets. Here a
 * workspace runs one net (or operator) at a time (the binding refuses a
 * second: "workspace is busy") and different workspaces cannot share a blob,
 * so while a queue op runs nothing else can ever touch its queue: a wait
 * could never end. So every case where Caffe2 would wait raises at once
 * (RuntimeError, saying why), and timeout_secs cannot change that (a wait of
 * any length would see the same queue). For the same reason the queue needs
 * no mutex: exactly one thread (the one running the net holding the busy
 * workspace) can reach it at a time, and the ops are refused inside
 * RecurrentNetwork step nets (schema flag RC_OP_NOT_IN_STEP_NET), whose
 * timesteps the RNN executor runs on worker threads.
 *
 * Rules, and what differs from Caffe2:
 *  - EnqueueBlobs: the record must have num_blobs tensors (every input a
 *    tensor); a full queue raises (Caffe2 waited forever); a closed queue
 *    raises (Caffe2 still wrote into a closed queue that had room, and
 *    failed only when it was full).
 *  - DequeueBlobs: an empty open queue raises (Caffe2 waited forever or
 *    failed after timeout_secs); a closed empty queue raises (Caffe2's op
 *    failed too). A closed queue still gives the records it holds (as Caffe2).
 *  - SafeEnqueueBlobs: closed queue: STATUS 1 and nothing enqueued (Caffe2
 *    enqueued if there was room); full open queue: raises (Caffe2 waited).
 *  - SafeDequeueBlobs: closed and empty: STATUS 1, the data outputs are left
 *    as they were (as Caffe2); empty and open: raises (Caffe2 waited). With
 *    num_records = k > 1 it takes k records and concatenates each field along
 *    dim 0; a closed queue with 1 <= m < k records gives those m (as Caffe2),
 *    an open one raises (Caffe2 waited for the rest). Concatenated records
 *    must agree in dtype and in every dim after the first, and be at least
 *    1-d (Caffe2 checked only the rank and copied bytes whatever the dims and
 *    dtypes); a failure names the field, the record and both shapes.
 *    A single record (k = 1, or m = 1) is given as it is (any rank).
 *  - STATUS is an int32 scalar of shape () (Caffe2: a bool scalar): 0 when
 *    records moved, 1 when the queue is closed (and, for a dequeue, empty).
 *  - Every error leaves the queue, the outputs and STATUS as they were: the
 *    checks and allocations come before anything is written.
 *  - No gradient (Caffe2's NO_GRADIENT; recurrent/_grad_queue.py).
 *  - WeightedSampleDequeueBlobs follows the same rules (see its section).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include "../kernels/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char queue_kind[] = "BlobsQueue";
static const char rqueue_kind[] = "RebatchingQueue"; /* the rebatching queue: a bqueue too (its section) */
#define MAX_CAPACITY ((int64_t)INT32_MAX)
#define MAX_NUM_BLOBS (1 << 16)
#define ROWS_MAX ((int64_t)1 << 46) /* rc_tensor_resize's element cap: no sum of rows can overflow */

/* The object a CreateBlobsQueue output blob holds. Records live in a ring of
 * `alloc` records (grown on demand up to `capacity`, so a large capacity
 * costs nothing until used): record r (0 = oldest) is
 * rec[((head + r) % alloc) * num_blobs + j], j < num_blobs. Slots outside
 * the `count` live records hold empty tensors. */
typedef struct bqueue {
    int64_t capacity;
    int num_blobs;
    char **field_names; /* owned: num_blobs strings, or NULL */
    int closed;
    int64_t head, count, alloc;
    rc_tensor *rec;     /* owned: alloc * num_blobs tensors, each owning its storage reference */
} bqueue;

static void bqueue_free(void *p)
{
    bqueue *q = p;
    if (!q) return;
    for (int64_t i = 0; q->rec && i < q->alloc * q->num_blobs; i++) rc_tensor_release(&q->rec[i]);
    free(q->rec);
    if (q->field_names)
        for (int j = 0; j < q->num_blobs; j++) free(q->field_names[j]);
    free(q->field_names);
    free(q);
}

/* The tensor of field j of live record r (0 = oldest). Borrowed. */
static rc_tensor *rec_at(const bqueue *q, int64_t r, int j)
{
    return &q->rec[((q->head + r) % q->alloc) * q->num_blobs + j];
}

/* "field 'name' (blob 1)" or "blob 1": names a column of the records in messages. A
 * long name is cut at a UTF-8 character boundary (messages must stay valid UTF-8). */
static const char *field_str(const bqueue *q, int j, char *buf, size_t n)
{
    if (!q->field_names) {
        snprintf(buf, n, "blob %d", j);
        return buf;
    }
    const char *f = q->field_names[j];
    int len = (int)strnlen(f, 81);
    const char *more = "";
    if (len > 80) {
        len = 80;
        while (len > 0 && ((unsigned char)f[len] & 0xc0) == 0x80) len--;
        more = "...";
    }
    snprintf(buf, n, "field '%.*s%s' (blob %d)", len, f, more, j);
    return buf;
}
#define FIELD(q, j) field_str((q), (j), (char[160]){0}, 160)

#define HOLDS(b) RC_HOLDS(b)

/* ---------------------------------------------------------------- arguments and checks */

static rc_status create_args(rc_op *op, int64_t *capacity, int64_t *num_blobs, char *const **names, int *n_names,
                             rc_err *err)
{
    rc_status st;
    int64_t unique;
    if ((st = rc_arg_i(&op->def, "capacity", 1, capacity, err))) return st;
    if ((st = rc_arg_i(&op->def, "num_blobs", 1, num_blobs, err))) return st;
    if ((st = rc_arg_i(&op->def, "enforce_unique_name", 0, &unique, err))) return st;
    if ((st = rc_arg_strings(&op->def, "field_names", names, n_names, err))) return st;
    if (*capacity < 1 || *capacity > MAX_CAPACITY)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument capacity must be in [1, %lld], got %lld",
                          (long long)MAX_CAPACITY, (long long)*capacity);
    if (*num_blobs < 1 || *num_blobs > MAX_NUM_BLOBS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument num_blobs must be in [1, %d], got %lld", MAX_NUM_BLOBS,
                          (long long)*num_blobs);
    if (unique != 0 && unique != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument enforce_unique_name must be 0 or 1, got %lld",
                          (long long)unique);
    if (*n_names && *n_names != *num_blobs)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument field_names has %d names but num_blobs is %lld: give one "
                          "name per blob of a record, or none", *n_names, (long long)*num_blobs);
    return RC_OK;
}

static rc_status create_check(rc_op *op, rc_err *err)
{
    int64_t c, n;
    char *const *names;
    int nn;
    return create_args(op, &c, &n, &names, &nn, err);
}

/* The queue op's input i must hold a queue of `kind` (queue_kind or rqueue_kind; input 0 for all but
 * WeightedSampleDequeueBlobs). */
static rc_status get_queue_of(rc_op *op, int i, const char *kind, bqueue **q, rc_err *err)
{
    const rc_blob *b = op->in[i];
    if (!b->obj || b->obj_kind != kind)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' must be a %s (Create%s's output), but it holds "
                          "%s", i, rc_in_name(op, i), kind, kind, HOLDS(b));
    *q = b->obj;
    return RC_OK;
}

static rc_status get_queue_at(rc_op *op, int i, bqueue **q, rc_err *err)
{
    return get_queue_of(op, i, queue_kind, q, err);
}

static rc_status get_queue(rc_op *op, bqueue **q, rc_err *err) { return get_queue_at(op, 0, q, err); }
static rc_status get_rqueue(rc_op *op, bqueue **q, rc_err *err) { return get_queue_of(op, 0, rqueue_kind, q, err); }

/* A data input or output blob: a tensor for inputs (a record's field), never an object for outputs. */
static rc_status check_data_input(rc_op *op, const bqueue *q, int i, rc_err *err)
{
    const rc_blob *b = op->in[i];
    const char *f = q ? FIELD(q, i - 1) : "";
    if (b->obj)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s'%s%s holds a %s, not a tensor: a record holds "
                          "tensors", i, rc_in_name(op, i), q ? ", " : "", f, b->obj_kind ? b->obj_kind : "object");
    if (b->t.dtype == RC_UNDEF || (rc_tensor_numel(&b->t) > 0 && !b->t.storage))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s'%s%s holds no tensor (was it fed or computed?)",
                          i, rc_in_name(op, i), q ? ", " : "", f);
    return RC_OK;
}

static rc_status check_outputs_take_tensors(rc_op *op, rc_err *err)
{
    for (int o = 0; o < op->n_out; o++)
        if (op->out[o]->obj)
            return rc_op_fail(op, err, RC_ERR_TYPE, "output %d blob '%s' holds a %s and cannot receive a tensor", o,
                              rc_out_name(op, o), op->out[o]->obj_kind ? op->out[o]->obj_kind : "object");
    return RC_OK;
}

/* Net-creation check of the ops taking a queue of `kind`: run by the net only
 * when input 0 holds a tensor (a queue blob holds none), which is then the
 * error. At run: the queue, the data inputs, the outputs. */
static rc_status queue_check_of(rc_op *op, const char *kind, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = get_queue_of(op, 0, kind, &q, err);
    if (st) return st;
    for (int i = 1; i < op->n_in; i++)
        if ((st = check_data_input(op, kind == queue_kind ? q : NULL, i, err))) return st;
    return check_outputs_take_tensors(op, err);
}

static rc_status queue_check(rc_op *op, rc_err *err) { return queue_check_of(op, queue_kind, err); }

/* The record size the op's data blobs give must be the queue's. */
static rc_status check_num_blobs(rc_op *op, const bqueue *q, int n, const char *what, rc_err *err)
{
    if (n != q->num_blobs)
        return rc_op_fail(op, err, RC_ERR_VALUE, "queue '%s' holds records of num_blobs=%d blobs, but the op has %d "
                          "%s", rc_in_name(op, 0), q->num_blobs, n, what);
    return RC_OK;
}

/* EnqueueBlobs / SafeEnqueueBlobs: output o is input o + 1 (Caffe2's EnforceInplace). */
static int enqueue_inplace(int in, int out) { return in == out + 1; }

static rc_status enqueue_setup(rc_op *op, rc_err *err)
{
    const int safe = op->def.type[0] == 'S';
    const int n_data = op->n_in - 1;
    if (op->n_out != n_data + safe)
        return rc_op_fail(op, err, RC_ERR_VALUE, "has %d data inputs and %d outputs: the outputs must be the data "
                          "inputs again (in place)%s", n_data, op->n_out, safe ? ", then the status blob" : "");
    for (int o = 0; o < n_data; o++)
        if (strcmp(op->def.outputs[o], op->def.inputs[o + 1]) != 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "output %d blob '%s' must be input %d blob '%s' (the op runs in "
                              "place, as Caffe2's)", o, op->def.outputs[o], o + 1, op->def.inputs[o + 1]);
    return RC_OK;
}

static rc_status dequeue_setup(rc_op *op, rc_err *err)
{
    rc_status st;
    if (strcmp(op->def.type, "DequeueBlobs") == 0) {
        float t;
        if ((st = rc_arg_f(&op->def, "timeout_secs", 0.f, &t, err))) return st;
        if (!(t >= 0.f))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument timeout_secs must be >= 0, got %g", (double)t);
    } else {
        int64_t nr;
        if ((st = rc_arg_i(&op->def, "num_records", 1, &nr, err))) return st;
        if (nr < 1 || nr > MAX_CAPACITY)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument num_records must be in [1, %lld], got %lld",
                              (long long)MAX_CAPACITY, (long long)nr);
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- the ops */

/* CreateBlobsQueue / CreateRebatchingQueue: a new empty queue of the op's kind in output 0 (run again,
 * it replaces the queue the blob holds). */
static rc_status create_run(rc_op *op, rc_err *err)
{
    const char *kind = strstr(op->def.type, "Rebatching") ? rqueue_kind : queue_kind;
    int64_t capacity, num_blobs;
    char *const *names;
    int n_names;
    rc_status st = create_args(op, &capacity, &num_blobs, &names, &n_names, err);
    if (st) return st;
    rc_blob *b = op->out[0];
    if (b->obj && b->obj_kind != kind)
        return rc_op_fail(op, err, RC_ERR_TYPE, "output 0 blob '%s' holds a %s", rc_out_name(op, 0),
                          b->obj_kind ? b->obj_kind : "non-tensor object");
    bqueue *q = calloc(1, sizeof *q);
    if (!q) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating queue '%s'", rc_out_name(op, 0));
    q->capacity = capacity;
    q->num_blobs = (int)num_blobs;
    if (n_names) {
        q->field_names = calloc((size_t)n_names, sizeof *q->field_names);
        for (int j = 0; q->field_names && j < n_names; j++)
            if (!(q->field_names[j] = strdup(names[j]))) break;
        if (!q->field_names || !q->field_names[n_names - 1]) {
            bqueue_free(q);
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating queue '%s'", rc_out_name(op, 0));
        }
    }
    if (b->obj && b->obj_free) b->obj_free(b->obj);
    rc_tensor_release(&b->t);
    b->obj = q;
    b->obj_free = bqueue_free;
    b->obj_kind = kind;
    return RC_OK;
}

/* A full or closed queue refuses a record; the message says why waiting would not help. */
static rc_status refuse_full(rc_op *op, const bqueue *q, rc_err *err)
{
    return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' is full (capacity %lld): the op would wait forever: "
                      "nothing can dequeue while this net runs (a workspace runs one net at a time; Caffe2 "
                      "blocked)", rc_in_name(op, 0), (long long)q->capacity);
}

/* Grows q's ring (oldest record first) to hold `need` more records (need <= capacity - count): doubling
 * from 4, at most capacity, so a large capacity costs nothing until used. */
static rc_status queue_reserve(rc_op *op, bqueue *q, int64_t need, rc_err *err)
{
    if (q->count + need <= q->alloc) return RC_OK;
    int64_t na = q->alloc ? q->alloc : 4;
    while (na < q->count + need) na = na > q->capacity / 2 ? q->capacity : na * 2;
    if (na > q->capacity) na = q->capacity;
    if ((uint64_t)na > SIZE_MAX / sizeof(rc_tensor) / (uint64_t)q->num_blobs)
        return rc_op_fail(op, err, RC_ERR_MEMORY, "queue '%s': %lld records cannot be allocated", rc_in_name(op, 0),
                          (long long)na);
    rc_tensor *nr = calloc((size_t)na * (size_t)q->num_blobs, sizeof *nr);
    if (!nr) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory growing queue '%s' to %lld records",
                               rc_in_name(op, 0), (long long)na);
    for (int64_t r = 0; r < q->count; r++)
        memcpy(&nr[r * q->num_blobs], rec_at(q, r, 0), (size_t)q->num_blobs * sizeof *nr); /* moves */
    free(q->rec);
    q->rec = nr;
    q->alloc = na;
    q->head = 0;
    return RC_OK;
}

/* Appends a copy of inputs 1..num_blobs as the newest record. All or nothing:
 * on failure (out of memory) the queue is as it was. */
static rc_status push_record(rc_op *op, bqueue *q, rc_err *err)
{
    rc_status st = queue_reserve(op, q, 1, err); /* count < capacity here */
    if (st) return st;
    rc_tensor *slot = rec_at(q, q->count, 0);
    for (int j = 0; j < q->num_blobs; j++) {
        st = rc_tensor_copy(&slot[j], rc_in(op, j + 1), err);
        if (st) {
            for (int k = 0; k <= j; k++) rc_tensor_release(&slot[k]);
            return rc_op_fail(op, err, st, "copying input %d blob '%s' %s into queue '%s': %s", j + 1,
                              rc_in_name(op, j + 1), RC_SHAPE(rc_in(op, j + 1)), rc_in_name(op, 0), err->msg);
        }
    }
    q->count++;
    return RC_OK;
}

static rc_status enqueue_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = queue_check(op, err);
    if (st || (st = get_queue(op, &q, err))) return st;
    if ((st = check_num_blobs(op, q, op->n_in - 1, "data inputs", err))) return st;
    if (q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' is closed: no record can be added (SafeEnqueueBlobs "
                          "reports this as its status instead)", rc_in_name(op, 0));
    if (q->count == q->capacity) return refuse_full(op, q, err);
    return push_record(op, q, err);
}

/* The int32 scalar STATUS in a fresh tensor (moved into the blob by set_status). */
static rc_status new_status(rc_op *op, rc_tensor *s, rc_err *err)
{
    rc_tensor_init(s);
    int64_t none[1] = {0};
    rc_status st = rc_tensor_resize(s, RC_I32, 0, none, err);
    if (st) return rc_op_fail(op, err, st, "status output blob '%s': %s", rc_out_name(op, op->n_out - 1), err->msg);
    return RC_OK;
}

static void set_status(rc_op *op, rc_tensor *s, int32_t v)
{
    rc_blob *b = op->out[op->n_out - 1];
    rc_i32(s)[0] = v;
    rc_tensor_release(&b->t);
    b->t = *s; /* moves the storage reference */
    rc_tensor_init(s);
}

static rc_status safe_enqueue_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = queue_check(op, err);
    if (st || (st = get_queue(op, &q, err))) return st;
    if ((st = check_num_blobs(op, q, op->n_in - 1, "data inputs", err))) return st;
    if (!q->closed && q->count == q->capacity) return refuse_full(op, q, err);
    rc_tensor s;
    if ((st = new_status(op, &s, err))) return st;
    if (!q->closed && (st = push_record(op, q, err))) {
        rc_tensor_release(&s);
        return st;
    }
    set_status(op, &s, q->closed ? 1 : 0);
    return RC_OK;
}

/* An empty queue: closed (nothing more will come) or open (nothing can come while this net runs). */
static rc_status refuse_empty(rc_op *op, const bqueue *q, rc_err *err)
{
    if (q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' is closed and empty: no record will come (Caffe2's "
                          "DequeueBlobs failed too; SafeDequeueBlobs reports this as its status)", rc_in_name(op, 0));
    return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' is empty: the op would wait forever: nothing can "
                      "enqueue while this net runs (a workspace runs one net at a time; Caffe2 blocked, or failed "
                      "after timeout_secs)", rc_in_name(op, 0));
}

/* Moves the oldest record into outputs 0..num_blobs-1 (their old tensors released). Cannot fail. */
static void pop_into_outputs(rc_op *op, bqueue *q)
{
    rc_tensor *slot = rec_at(q, 0, 0);
    for (int j = 0; j < q->num_blobs; j++) {
        rc_tensor_release(rc_out(op, j));
        *rc_out(op, j) = slot[j]; /* moves the storage reference */
        rc_tensor_init(&slot[j]);
    }
    q->head = (q->head + 1) % q->alloc;
    q->count--;
}

static rc_status dequeue_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = queue_check(op, err);
    if (st || (st = get_queue(op, &q, err))) return st;
    if ((st = dequeue_setup(op, err))) return st;
    if ((st = check_num_blobs(op, q, op->n_out, "outputs", err))) return st;
    if (q->count == 0) return refuse_empty(op, q, err);
    pop_into_outputs(op, q);
    return RC_OK;
}

/* Concatenates the m oldest records field by field along dim 0 into out[0..num_blobs)
 * (fresh tensors, owned by the caller). Checks first: every record at least
 * 1-d, of record 0's dtype and trailing dims. Takes nothing from the queue. */
static rc_status concat_records(rc_op *op, const bqueue *q, int64_t m, int64_t nr, rc_tensor *out, rc_err *err)
{
    for (int j = 0; j < q->num_blobs; j++) {
        const rc_tensor *r0 = rec_at(q, 0, j);
        int64_t rows = 0;
        for (int64_t r = 0; r < m; r++) {
            const rc_tensor *x = rec_at(q, r, j);
            int same = x->ndim >= 1 && x->dtype == r0->dtype && x->ndim == r0->ndim;
            for (int d = 1; same && d < x->ndim; d++) same = x->dims[d] == r0->dims[d];
            if (!same)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "%s of queue '%s' (output %d blob '%s'): record %lld of the %lld to concatenate "
                                  "(num_records=%lld) is %s, record 0 is %s: concatenated records must be at least "
                                  "1-d and agree in dtype and in every dim after the first", FIELD(q, j),
                                  rc_in_name(op, 0), j, rc_out_name(op, j), (long long)r, (long long)m, (long long)nr,
                                  RC_SHAPE(x), RC_SHAPE(r0));
            if (x->dims[0] > ROWS_MAX - rows)
                return rc_op_fail(op, err, RC_ERR_VALUE, "%s of queue '%s': the %lld records to concatenate have "
                                  "more than %lld rows together", FIELD(q, j), rc_in_name(op, 0), (long long)m,
                                  (long long)ROWS_MAX);
            rows += x->dims[0];
        }
    }
    for (int j = 0; j < q->num_blobs; j++) {
        const rc_tensor *r0 = rec_at(q, 0, j);
        int64_t dims[RC_MAX_DIMS];
        memcpy(dims, r0->dims, sizeof dims);
        dims[0] = 0;
        for (int64_t r = 0; r < m; r++) dims[0] += rec_at(q, r, j)->dims[0];
        rc_status st = rc_tensor_resize(&out[j], r0->dtype, r0->ndim, dims, err);
        if (st)
            return rc_op_fail(op, err, st, "concatenating %lld records of %s of queue '%s' into output %d blob '%s': "
                              "%s", (long long)m, FIELD(q, j), rc_in_name(op, 0), j, rc_out_name(op, j), err->msg);
        char *dst = rc_tensor_data(&out[j]);
        for (int64_t r = 0; r < m; r++) {
            const rc_tensor *x = rec_at(q, r, j);
            size_t nb = rc_tensor_nbytes(x);
            if (nb) memcpy(dst, rc_tensor_data(x), nb);
            dst += nb;
        }
    }
    return RC_OK;
}

/* Drops the m oldest records of q and moves out[0..num_blobs) (fresh tensors) into outputs
 * 0..num_blobs-1, their old tensors released. Cannot fail. */
static void take_records(rc_op *op, bqueue *q, int64_t m, rc_tensor *out)
{
    for (int64_t r = 0; r < m; r++) {
        for (int j = 0; j < q->num_blobs; j++) rc_tensor_release(rec_at(q, 0, j));
        q->head = (q->head + 1) % q->alloc;
        q->count--;
    }
    for (int j = 0; j < q->num_blobs; j++) {
        rc_tensor_release(rc_out(op, j));
        *rc_out(op, j) = out[j]; /* moves */
        rc_tensor_init(&out[j]);
    }
}

static rc_status safe_dequeue_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = queue_check(op, err);
    if (st || (st = get_queue(op, &q, err))) return st;
    if ((st = dequeue_setup(op, err))) return st;
    int64_t nr;
    if ((st = rc_arg_i(&op->def, "num_records", 1, &nr, err))) return st;
    if ((st = check_num_blobs(op, q, op->n_out - 1, "data outputs", err))) return st;
    if (q->count == 0 && !q->closed) return refuse_empty(op, q, err);
    if (q->count < nr && !q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' holds %lld records and num_records is %lld: the op "
                          "would wait forever for the rest: nothing can enqueue while this net runs (a workspace "
                          "runs one net at a time; Caffe2 blocked); close the queue to take fewer",
                          rc_in_name(op, 0), (long long)q->count, (long long)nr);
    const int64_t m = q->count < nr ? q->count : nr;
    rc_tensor s;
    if ((st = new_status(op, &s, err))) return st;
    if (m == 0) { /* closed and empty: the data outputs stay as they were */
        set_status(op, &s, 1);
        return RC_OK;
    }
    if (m == 1) {
        pop_into_outputs(op, q);
        set_status(op, &s, 0);
        return RC_OK;
    }
    rc_tensor *out = calloc((size_t)q->num_blobs, sizeof *out);
    if (!out) {
        rc_tensor_release(&s);
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory concatenating %lld records", (long long)m);
    }
    st = concat_records(op, q, m, nr, out, err);
    if (!st) {
        take_records(op, q, m, out);
        set_status(op, &s, 0);
    }
    for (int j = 0; j < q->num_blobs; j++) rc_tensor_release(&out[j]);
    free(out);
    rc_tensor_release(&s);
    return st;
}

/* CloseBlobsQueue / CloseRebatchingQueue: input 0 a queue of the op's kind. */
static rc_status close_check_q(rc_op *op, bqueue **q, rc_err *err)
{
    return strstr(op->def.type, "Rebatching") ? get_rqueue(op, q, err) : get_queue(op, q, err);
}

static rc_status close_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = close_check_q(op, &q, err);
    if (st) return st;
    q->closed = 1;
    return RC_OK;
}

static rc_status close_check(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    return close_check_q(op, &q, err);
}

/* ---------------------------------------------------------------- WeightedSampleDequeueBlobs
 *
 * WeightedSampleDequeueBlobs(Q0..Q(K-1)) -> (B0..B(N-1), STATUS)   (Caffe2's WeightedSampleDequeueBlobsOp)
 *
 * Picks queue k with probability weights[k] / sum(weights) and dequeues its
 * oldest record into B0..B(N-1), as DequeueBlobs. Every queue must hold
 * records of N = (number of outputs - 1) blobs (Caffe2 checked the chosen
 * queue only, so a net could fail at random). STATUS (int32, shape (); Caffe2:
 * bool) is 0 when a record moved, 1 when the chosen queue was closed and
 * empty (the data outputs then stay as they were, as Caffe2); an open empty
 * chosen queue raises (Caffe2 waited). Argument table_idx_blob = i >= 0 (in
 * [0, N), as Caffe2: an index among the *data* outputs) then overwrites B_i
 * with the chosen k, an int32 tensor of shape (1,) (as Caffe2, also when
 * STATUS is 1); a negative value (default -1) writes none.
 *
 * The weights (default: all 1) are normalised and accumulated as Caffe2 did,
 * in float32: p_k = w_k / sum (the sum accumulated in order), cum = partial
 * sums of p, and the entry of the last positive weight (and those after it)
 * set to 1.0001 against rounding (Caffe2 set the very last entry, which
 * could make a trailing zero weight chosen). The draw u in [0, 1) picks the
 * first k with cum[k] > u (Caffe2: cum[k] >= u, lower_bound, which a draw of
 * exactly cum[k] -- 0 for a leading zero weight -- sent to a queue of weight
 * 0), so a weight of 0 is never chosen. Weights must be finite and >= 0 and
 * their float32 sum positive and finite (ValueError at net creation).
 *
 * Randomness: a xoshiro256** stream in op->state (kernels/rng.h, as
 * WeightedSample), seeded from argument `seed` when given, else fresh. An
 * error leaves the stream as it was too (the draw is made on a copy and kept
 * only when the op succeeds), so running the op again after fixing the cause
 * picks the same queue. */

typedef struct wsd_state {
    uint64_t rng[4];   /* xoshiro256** */
    int table_idx;     /* data output receiving the chosen index, -1: none */
    int k;             /* number of queues */
    float cum[];       /* k cumulative probabilities */
} wsd_state;

/* Weight k of the list a: absent or empty -> 1 (Caffe2's default); ints are accepted as floats. */
static float wsd_weight(const rc_arg *a, int k)
{
    if (!a || a->n == 0) return 1.0f;
    return a->kind == RC_ARG_INTS ? (float)a->ints[k] : a->floats[k];
}

static rc_status wsd_setup(rc_op *op, rc_err *err)
{
    const int K = op->n_in, N = op->n_out - 1;
    wsd_state *s = calloc(1, sizeof *s + (size_t)K * sizeof(float));
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    s->k = K;
    rc_status st;
    int64_t ti;
    if ((st = rc_arg_i(&op->def, "table_idx_blob", -1, &ti, err))) return st;
    if (ti >= N)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument table_idx_blob is %lld but the op has %d data outputs "
                          "(the last of its %d outputs is the status): it must name one of outputs 0..%d (or be "
                          "-1, none)", (long long)ti, N, op->n_out, N - 1);
    s->table_idx = ti < 0 ? -1 : (int)ti;
    const rc_arg *a = rc_opdef_arg(&op->def, "weights");
    if (a && a->kind != RC_ARG_FLOATS && a->kind != RC_ARG_INTS &&
        !(a->n == 0 && (a->kind == RC_ARG_STRINGS || a->kind == RC_ARG_NETS))) /* an empty list of any kind */
        return rc_op_fail(op, err, RC_ERR_TYPE, "argument weights must be a list of %d numbers (one per input "
                          "queue)", K);
    if (a && a->n && a->n != K)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument weights has %d values but the op has %d input queues: "
                          "give one weight per queue, or none (all 1)", a->n, K);
    float sum = 0.0f;
    for (int k = 0; k < K; k++) {
        const float w = wsd_weight(a, k);
        if (!(w >= 0.0f) || isinf(w))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument weights: weight %d (of input queue '%s') is %g: "
                              "every weight must be finite and >= 0", k, op->def.inputs[k], (double)w);
        sum += w;
    }
    if (!(sum > 0.0f) || isinf(sum))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument weights: their sum is %g: it must be positive and "
                          "finite in float32", (double)sum);
    float c = 0.0f;
    int last = 0;
    for (int k = 0; k < K; k++) {
        const float w = wsd_weight(a, k);
        c += w / sum;
        s->cum[k] = c;
        if (w > 0.0f) last = k;
    }
    for (int k = last; k < K; k++) s->cum[k] = 1.0001f; /* as Caffe2's last entry: no draw falls past it */
    uint64_t x;
    if (rc_opdef_arg(&op->def, "seed")) {
        int64_t seed;
        if ((st = rc_arg_i(&op->def, "seed", 0, &seed, err))) return st;
        x = (uint64_t)seed;
    } else {
        x = rc_rng_fresh_seed();
    }
    rc_rng_seed(s->rng, x);
    return RC_OK;
}

/* Every input a queue, no output an object. At net creation only when an input holds a tensor. */
static rc_status wsd_check(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st;
    for (int i = 0; i < op->n_in; i++)
        if ((st = get_queue_at(op, i, &q, err))) return st;
    return check_outputs_take_tensors(op, err);
}

static rc_status wsd_run(rc_op *op, rc_err *err)
{
    wsd_state *s = op->state;
    rc_status st = wsd_check(op, err);
    if (st) return st;
    const int N = op->n_out - 1;
    for (int i = 0; i < op->n_in; i++) {
        const bqueue *qi = op->in[i]->obj;
        if (qi->num_blobs != N)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d queue '%s' holds records of num_blobs=%d blobs, but "
                              "the op has %d data outputs (its last output is the status): every queue it may "
                              "choose must hold records of %d blobs", i, rc_in_name(op, i), qi->num_blobs, N, N);
    }
    uint64_t rng[4];
    memcpy(rng, s->rng, sizeof rng);
    const double u = rc_rng_unit(rng); /* [0, 1) */
    int k = 0;
    while (k < s->k - 1 && !((double)s->cum[k] > u)) k++; /* cum[last positive] = 1.0001 > u */
    bqueue *q = op->in[k]->obj;
    if (q->count == 0 && !q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "input %d queue '%s' (chosen at random) is empty: the op would "
                          "wait forever: nothing can enqueue while this net runs (a workspace runs one net at a "
                          "time; Caffe2 blocked)", k, rc_in_name(op, k));
    rc_tensor stat, idx;
    rc_tensor_init(&idx);
    if ((st = new_status(op, &stat, err))) return st;
    if (s->table_idx >= 0) {
        int64_t one[1] = {1};
        if ((st = rc_tensor_resize(&idx, RC_I32, 1, one, err))) {
            rc_tensor_release(&stat);
            return rc_op_fail(op, err, st, "table index output %d blob '%s': %s", s->table_idx,
                              rc_out_name(op, s->table_idx), err->msg);
        }
        rc_i32(&idx)[0] = k;
    }
    /* nothing can fail from here on */
    memcpy(s->rng, rng, sizeof rng);
    const int taken = q->count > 0;
    if (taken) pop_into_outputs(op, q);
    if (s->table_idx >= 0) {
        rc_tensor_release(rc_out(op, s->table_idx));
        *rc_out(op, s->table_idx) = idx; /* moves */
    }
    set_status(op, &stat, taken ? 0 : 1);
    return RC_OK;
}

/* ---------------------------------------------------------------- the rebatching queue
 *
 *   CreateRebatchingQueue() -> QUEUE              a new, empty, open queue of elements (RebatchingQueue)
 *   EnqueueRebatchingQueue(QUEUE, T1..TN) -> ()   one element (T1..TN), or with enqueue_batch=1 the
 *                                                 rows of T1..TN, one element per row
 *   DequeueRebatchingQueue(QUEUE) -> (B1..BN)     num_elements elements, each field stacked along a
 *                                                 new first dim
 *   CloseRebatchingQueue(QUEUE) -> ()
 *
 * Caffe2's caffe2/queue/rebatching_queue{,_ops}.{h,cc}: a FIFO of elements of
 * N = num_blobs tensors, at most `capacity` elements (arguments as
 * CreateBlobsQueue's: capacity, num_blobs, default 1). It is the bqueue above
 * (an element is a record) under another kind, so a blob queue op refuses a
 * rebatching queue and the reverse. The elements hold copies. Every op runs
 * all or nothing: the checks and allocations come first, and an error leaves
 * the queue and the outputs as they were.
 *
 * Nothing waits (as the blob queues above, for the same reason). Where
 * Caffe2 waited -- an enqueue with more elements than free room (it enqueued
 * what fitted, then waited for the rest), a dequeue from an open queue holding
 * fewer than num_elements -- the op raises at once, enqueuing or taking
 * nothing. Also as Caffe2: an enqueue into a closed queue fails (Caffe2
 * returned false, failing the op; here also for an empty batch, which Caffe2
 * let pass); a dequeue from a closed queue takes the elements it holds, up to
 * num_elements, and fails when it holds none.
 *
 * Stacking: every element's field j must have the dtype and dims of the
 * first element taken (Caffe2 enforced the same); output j is then (k, dims)
 * for the k elements taken (a new first dim even for k = 1). With
 * enqueue_batch=1 the inputs must be at least 1-d with one first dim (Caffe2
 * enforced the same); an input (B, d...) gives B elements of dims (d...). The
 * dequeue must have N outputs and the enqueue N data inputs (Caffe2 checked
 * the enqueue's count, not the dequeue's, and indexed past its outputs). */

/* Net-creation check, and the start of every run: the queue, the data inputs, the outputs. */
static rc_status rq_check(rc_op *op, rc_err *err) { return queue_check_of(op, rqueue_kind, err); }

static rc_status rq_enqueue_setup(rc_op *op, rc_err *err)
{
    int64_t eb;
    rc_status st = rc_arg_i(&op->def, "enqueue_batch", 0, &eb, err);
    if (st) return st;
    if (eb != 0 && eb != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument enqueue_batch must be 0 or 1, got %lld", (long long)eb);
    return RC_OK;
}

static rc_status rq_enqueue_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = rq_check(op, err);
    if (st || (st = get_rqueue(op, &q, err)) || (st = rq_enqueue_setup(op, err))) return st;
    if ((st = check_num_blobs(op, q, op->n_in - 1, "data inputs", err))) return st;
    int64_t batch;
    if ((st = rc_arg_i(&op->def, "enqueue_batch", 0, &batch, err))) return st;
    if (q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' is closed: no element can be added (as Caffe2)",
                          rc_in_name(op, 0));
    int64_t n = 1; /* elements to add */
    if (batch) {
        for (int i = 1; i < op->n_in; i++) {
            const rc_tensor *x = rc_in(op, i);
            if (x->ndim < 1)
                return rc_op_fail(op, err, RC_ERR_VALUE, "enqueue_batch=1 splits the inputs along their first dim "
                                  "into elements, but input %d blob '%s' is %s, which has none", i, rc_in_name(op, i),
                                  RC_SHAPE(x));
            if (x->dims[0] != rc_in(op, 1)->dims[0])
                return rc_op_fail(op, err, RC_ERR_VALUE, "enqueue_batch=1 splits the inputs along their first dim "
                                  "into elements: every input must have one first dim, but input 1 blob '%s' is %s "
                                  "and input %d blob '%s' is %s", rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), i,
                                  rc_in_name(op, i), RC_SHAPE(x));
        }
        n = rc_in(op, 1)->dims[0];
    }
    if (n > q->capacity - q->count)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' holds %lld of %lld elements and the op adds %lld: the "
                          "op would wait forever for room: nothing can dequeue while this net runs (a workspace runs "
                          "one net at a time; Caffe2 added what fitted and blocked)", rc_in_name(op, 0),
                          (long long)q->count, (long long)q->capacity, (long long)n);
    if ((st = queue_reserve(op, q, n, err))) return st;
    for (int64_t e = 0; e < n; e++) {
        rc_tensor *slot = rec_at(q, q->count + e, 0);
        for (int j = 0; j < q->num_blobs && !st; j++) {
            const rc_tensor *x = rc_in(op, j + 1);
            if (!batch) {
                st = rc_tensor_copy(&slot[j], x, err);
                continue;
            }
            st = rc_tensor_resize(&slot[j], x->dtype, x->ndim - 1, x->dims + 1, err);
            size_t nb = rc_tensor_nbytes(&slot[j]);
            if (!st && nb) memcpy(rc_tensor_data(&slot[j]), (const char *)rc_tensor_data(x) + (size_t)e * nb, nb);
        }
        if (st) { /* out of memory: the elements made so far go, the queue stays as it was */
            for (int64_t k = 0; k <= e; k++)
                for (int j = 0; j < q->num_blobs; j++) rc_tensor_release(rec_at(q, q->count + k, j));
            return rc_op_fail(op, err, st, "copying element %lld into queue '%s': %s", (long long)e,
                              rc_in_name(op, 0), err->msg);
        }
    }
    q->count += n;
    return RC_OK;
}

static rc_status rq_dequeue_setup(rc_op *op, rc_err *err)
{
    int64_t ne;
    rc_status st = rc_arg_i(&op->def, "num_elements", 1, &ne, err);
    if (st) return st;
    if (ne < 1 || ne > MAX_CAPACITY)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument num_elements must be in [1, %lld], got %lld",
                          (long long)MAX_CAPACITY, (long long)ne);
    return RC_OK;
}

static rc_status rq_dequeue_run(rc_op *op, rc_err *err)
{
    bqueue *q = NULL;
    rc_status st = rq_check(op, err);
    if (st || (st = get_rqueue(op, &q, err)) || (st = rq_dequeue_setup(op, err))) return st;
    if ((st = check_num_blobs(op, q, op->n_out, "outputs", err))) return st;
    int64_t ne;
    if ((st = rc_arg_i(&op->def, "num_elements", 1, &ne, err))) return st;
    if (q->count == 0 && q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' is closed and empty: no element will come (Caffe2's "
                          "op failed too)", rc_in_name(op, 0));
    if (q->count < ne && !q->closed)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "queue '%s' holds %lld elements and num_elements is %lld: the op "
                          "would wait forever for the rest: nothing can enqueue while this net runs (a workspace "
                          "runs one net at a time; Caffe2 blocked); close the queue to take fewer",
                          rc_in_name(op, 0), (long long)q->count, (long long)ne);
    const int64_t k = q->count < ne ? q->count : ne;
    for (int j = 0; j < q->num_blobs; j++) { /* every element's field j as the first's */
        const rc_tensor *e0 = rec_at(q, 0, j);
        if (e0->ndim >= RC_MAX_DIMS)
            return rc_op_fail(op, err, RC_ERR_VALUE, "blob %d of queue '%s': element 0 is %s: stacked it would have "
                              "more than %d dims", j, rc_in_name(op, 0), RC_SHAPE(e0), RC_MAX_DIMS);
        for (int64_t r = 1; r < k; r++)
            if (rec_at(q, r, j)->dtype != e0->dtype || !rc_tensor_same_shape(rec_at(q, r, j), e0))
                return rc_op_fail(op, err, RC_ERR_VALUE, "blob %d of queue '%s' (output %d blob '%s'): element %lld "
                                  "of the %lld to stack is %s, element 0 is %s: stacked elements must agree in dtype "
                                  "and dims", j, rc_in_name(op, 0), j, rc_out_name(op, j), (long long)r,
                                  (long long)k, RC_SHAPE(rec_at(q, r, j)), RC_SHAPE(e0));
    }
    rc_tensor *out = calloc((size_t)q->num_blobs, sizeof *out);
    if (!out) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory stacking %lld elements", (long long)k);
    for (int j = 0; j < q->num_blobs && !st; j++) {
        const rc_tensor *e0 = rec_at(q, 0, j);
        int64_t dims[RC_MAX_DIMS];
        dims[0] = k;
        memcpy(dims + 1, e0->dims, (size_t)e0->ndim * sizeof *dims);
        st = rc_tensor_resize(&out[j], e0->dtype, e0->ndim + 1, dims, err);
        if (st) {
            st = rc_op_fail(op, err, st, "stacking %lld elements of blob %d of queue '%s' into output %d blob '%s': "
                            "%s", (long long)k, j, rc_in_name(op, 0), j, rc_out_name(op, j), err->msg);
            break;
        }
        char *dst = rc_tensor_data(&out[j]);
        const size_t nb = rc_tensor_nbytes(e0);
        for (int64_t r = 0; r < k && nb; r++) memcpy(dst + (size_t)r * nb, rc_tensor_data(rec_at(q, r, j)), nb);
    }
    if (!st) take_records(op, q, k, out);
    for (int j = 0; j < q->num_blobs; j++) rc_tensor_release(&out[j]);
    free(out);
    return st;
}

const rc_op_schema rc_ops_queue[] = {
    {"CreateBlobsQueue", 0, 0, 1, 1, NULL, create_check, create_run, NULL,
     "a new empty FIFO of records of num_blobs tensors, at most capacity records (an opaque BlobsQueue blob)",
     create_check, RC_OP_NOT_IN_STEP_NET | RC_OP_OBJECT_OUT_FIRST},
    {"EnqueueBlobs", 2, -1, 1, -1, enqueue_inplace, enqueue_setup, enqueue_run, NULL,
     "appends a copy of (B1..BN) to the queue; in place; a full or closed queue raises", queue_check,
     RC_OP_NOT_IN_STEP_NET | RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"DequeueBlobs", 1, 1, 1, -1, NULL, dequeue_setup, dequeue_run, NULL,
     "moves the oldest record into the outputs; an empty queue raises (timeout_secs accepted)", queue_check,
     RC_OP_NOT_IN_STEP_NET | RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"CloseBlobsQueue", 1, 1, 0, 0, NULL, NULL, close_run, NULL,
     "closes the queue: no more records may be added; those in it can still be taken", close_check,
     RC_OP_NOT_IN_STEP_NET},
    {"SafeEnqueueBlobs", 2, -1, 2, -1, enqueue_inplace, enqueue_setup, safe_enqueue_run, NULL,
     "EnqueueBlobs with an int32 status output: 1 (nothing added) when the queue is closed", queue_check,
     RC_OP_NOT_IN_STEP_NET | RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"SafeDequeueBlobs", 1, 1, 2, -1, NULL, dequeue_setup, safe_dequeue_run, NULL,
     "DequeueBlobs of num_records records concatenated along dim 0, with an int32 status output: 1 when the "
     "queue is closed and empty", queue_check, RC_OP_NOT_IN_STEP_NET | RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"WeightedSampleDequeueBlobs", 1, -1, 2, -1, NULL, wsd_setup, wsd_run, free,
     "DequeueBlobs from one of the input queues picked at random with probabilities from argument weights, with "
     "an int32 status output: 1 when that queue is closed and empty; argument table_idx_blob, seed",
     wsd_check, RC_OP_NOT_IN_STEP_NET | RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"CreateRebatchingQueue", 0, 0, 1, 1, NULL, create_check, create_run, NULL,
     "a new empty FIFO of elements of num_blobs tensors, at most capacity elements (an opaque RebatchingQueue blob)",
     create_check, RC_OP_NOT_IN_STEP_NET | RC_OP_OBJECT_OUT_FIRST},
    {"EnqueueRebatchingQueue", 2, -1, 0, 0, NULL, rq_enqueue_setup, rq_enqueue_run, NULL,
     "appends a copy of (T1..TN) as one element, or with enqueue_batch=1 each row of them as an element; no room "
     "or a closed queue raises", rq_check, RC_OP_NOT_IN_STEP_NET},
    {"DequeueRebatchingQueue", 1, 1, 1, -1, NULL, rq_dequeue_setup, rq_dequeue_run, NULL,
     "takes num_elements elements, each field stacked along a new first dim (fewer from a closed queue); too few "
     "in an open queue raises", rq_check, RC_OP_NOT_IN_STEP_NET | RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"CloseRebatchingQueue", 1, 1, 0, 0, NULL, NULL, close_run, NULL,
     "closes the queue: no more elements may be added; those in it can still be taken", close_check,
     RC_OP_NOT_IN_STEP_NET},
    {0},
};
