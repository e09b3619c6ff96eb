/* ops/counter.c -- Caffe2's atomic counters (caffe2/operators/counter_ops.h).
 *
 *   CreateCounter() -> COUNTER               a new Counter holding init_count (an opaque object blob)
 *   ResetCounter(COUNTER) -> [PREVIOUS]      count = init_count; PREVIOUS: the count before
 *   CountDown(COUNTER) -> DONE               DONE = (count <= 0), then count -= 1
 *   CheckCounterDone(COUNTER) -> DONE        DONE = (count <= 0); the count is unchanged
 *   CountUp(COUNTER) -> PREVIOUS             PREVIOUS = count, then count += 1
 *   RetrieveCount(COUNTER) -> COUNT          COUNT = count
 *
 * A Counter lives in its blob as an object (blob->obj, kind "Counter", freed
 * with the blob: ResetWorkspace, or CreateCounter run again, which replaces it
 * by a new one, as Caffe2). Its count is an int32 (Caffe2: int64): init_count
 * must be in [0, 2^31 - 1] (ValueError at creation; Caffe2 refused a negative
 * one too), and a CountDown of a count at -2^31 or a CountUp of one at
 * 2^31 - 1 is a ValueError that leaves the count unchanged (Caffe2's int64
 * wrapped). DONE, PREVIOUS and COUNT are int32 scalars of shape () (DONE 0 or
 * 1: Caffe2's bool, which is int32 here as everywhere).
 *
 * Input 0 must hold a Counter: a TypeError naming the blob and what it holds
 * (at net creation when it holds a tensor). CreateCounter replaces a tensor
 * or a Counter its output blob holds; an object of another kind (a Mutex, a
 * BlobsQueue) is a TypeError (Caffe2 replaced it). FetchBlob / FeedBlob of a
 * Counter blob are TypeErrors ("holds a Counter, not a tensor"), as for every
 * object blob. Save writes a Counter as Caffe2 did (a BlobProto of type
 * "std::unique_ptr<Counter<int64_t>>" holding the count as an INT64
 * TensorProto), and Load reads one back into a new Counter (ops/db.c).
 *
 * Atomic. Caffe2's counter was a std::atomic, so that nets of several threads
 * could count on one counter. Here a workspace runs one net at a time, but
 * the count is a C11 atomic all the same and every change is one atomic
 * operation (a compare-and-swap loop where the range is checked), so no two
 * threads can ever lose or repeat a count. The ops are refused inside
 * RecurrentNetwork step nets (RC_OP_NOT_IN_STEP_NET, as the queue ops): they
 * change a counter that is only their input, which the RNN executor does not
 * order, so the timesteps would see the counts in any order.
 * No gradient (Caffe2's SHOULD_NOT_DO_GRADIENT; recurrent/_grad_queue.py).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include "counter.h"
#include <stdatomic.h>
#include <stdlib.h>

static const char counter_kind[] = "Counter";

/* The object a CreateCounter output blob holds. Owned by its blob, freed with free(). */
typedef struct rc_counter_obj {
    _Atomic int32_t count;
} rc_counter_obj;

int rc_counter_is(const rc_blob *b) { return b->obj && b->obj_kind == counter_kind; }

int32_t rc_counter_get(const rc_blob *b) { return atomic_load(&((rc_counter_obj *)b->obj)->count); }

void *rc_counter_new(int32_t count)
{
    rc_counter_obj *c = malloc(sizeof *c);
    if (c) atomic_init(&c->count, count);
    return c;
}

void rc_counter_install(rc_blob *b, void *c) { rc_checks_put_object(b, c, free, counter_kind); }

/* init_count: an integer in [0, INT32_MAX]. */
static rc_status init_count_arg(rc_op *op, int32_t *out, rc_err *err)
{
    int64_t v = 0;
    rc_status st = rc_arg_i(&op->def, "init_count", 0, &v, err);
    if (st) return st;
    if (v < 0 || v > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "init_count must be in [0, %d] (the count is an int32), got %lld",
                          INT32_MAX, (long long)v);
    *out = (int32_t)v;
    return RC_OK;
}

/* setup of CreateCounter and ResetCounter: parses init_count into op->state (owned, freed with free). */
static rc_status init_count_setup(rc_op *op, rc_err *err)
{
    int32_t v = 0;
    rc_status st = init_count_arg(op, &v, err);
    if (st) return st;
    int32_t *s = malloc(sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    *s = v;
    op->state = s;
    return RC_OK;
}

/* Input 0 must hold a Counter. Reads no data. At net creation it runs only when input 0 holds a tensor. */
static rc_status counter_check(rc_op *op, rc_err *err)
{
    const rc_blob *b = op->in[0];
    if (!rc_counter_is(b))
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' must be a Counter (CreateCounter's output), but "
                          "it holds %s", rc_in_name(op, 0), RC_HOLDS(b));
    return RC_OK;
}

/* The counter of input 0 (borrowed from its blob), or NULL after failing. */
static rc_counter_obj *counter_of(rc_op *op, rc_err *err)
{
    return counter_check(op, err) ? NULL : op->in[0]->obj;
}

/* Output o becomes an int32 scalar of shape () holding v. (An output blob holding an object, another Counter
 * or a Mutex, never gets here: rc_op_run refuses it before the op runs.) */
static rc_status put_scalar(rc_op *op, int o, int32_t v, rc_err *err)
{
    int64_t none[1] = {0};
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_I32, 0, none, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    rc_i32(rc_out(op, o))[0] = v;
    return RC_OK;
}

/* Output 0 becomes an int32 scalar (allocated before the count changes, so that a MemoryError leaves it as it
 * was). */
static rc_status alloc_scalar(rc_op *op, rc_err *err)
{
    return put_scalar(op, 0, 0, err);
}

/* ---------------------------------------------------------------- CreateCounter */

static rc_status create_check(rc_op *op, rc_err *err)
{
    (void)op;
    (void)err;
    return RC_OK;
}

static rc_status create_run(rc_op *op, rc_err *err)
{
    rc_status st = rc_checks_object_output(op, counter_kind, "Counter", err);
    if (st) return st;
    void *c = rc_counter_new(*(const int32_t *)op->state);
    if (!c) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating counter '%s'", rc_out_name(op, 0));
    rc_counter_install(op->out[0], c);
    return RC_OK;
}

/* ---------------------------------------------------------------- ResetCounter */

static rc_status reset_run(rc_op *op, rc_err *err)
{
    rc_counter_obj *c = counter_of(op, err);
    if (!c) return err->code;
    if (op->n_out && alloc_scalar(op, err)) return err->code;
    int32_t prev = atomic_exchange(&c->count, *(const int32_t *)op->state);
    if (op->n_out) rc_i32(rc_out(op, 0))[0] = prev;
    return RC_OK;
}

/* ---------------------------------------------------------------- CountDown, CountUp */

/* Adds delta (+1 or -1) to the count atomically, unless that leaves the int32 range; *prev = the count before. */
static rc_status step_count(rc_op *op, rc_counter_obj *c, int delta, int32_t *prev, rc_err *err)
{
    int32_t cur = atomic_load(&c->count);
    do {
        if ((delta > 0 && cur == INT32_MAX) || (delta < 0 && cur == INT32_MIN))
            return rc_op_fail(op, err, RC_ERR_VALUE, "counter '%s' is at %d: counting %s would leave the int32 "
                              "range (the counter is unchanged)", rc_in_name(op, 0), cur, delta > 0 ? "up" : "down");
    } while (!atomic_compare_exchange_weak(&c->count, &cur, cur + delta));
    *prev = cur;
    return RC_OK;
}

static rc_status count_down_run(rc_op *op, rc_err *err)
{
    rc_counter_obj *c = counter_of(op, err);
    if (!c || alloc_scalar(op, err)) return err->code;
    int32_t prev = 0;
    if (step_count(op, c, -1, &prev, err)) return err->code;
    rc_i32(rc_out(op, 0))[0] = prev <= 0;
    return RC_OK;
}

static rc_status count_up_run(rc_op *op, rc_err *err)
{
    rc_counter_obj *c = counter_of(op, err);
    if (!c || alloc_scalar(op, err)) return err->code;
    int32_t prev = 0;
    if (step_count(op, c, 1, &prev, err)) return err->code;
    rc_i32(rc_out(op, 0))[0] = prev;
    return RC_OK;
}

/* ---------------------------------------------------------------- CheckCounterDone, RetrieveCount */

static rc_status check_done_run(rc_op *op, rc_err *err)
{
    rc_counter_obj *c = counter_of(op, err);
    return c ? put_scalar(op, 0, atomic_load(&c->count) <= 0, err) : err->code;
}

static rc_status retrieve_run(rc_op *op, rc_err *err)
{
    rc_counter_obj *c = counter_of(op, err);
    return c ? put_scalar(op, 0, atomic_load(&c->count), err) : err->code;
}

const rc_op_schema rc_ops_counter[] = {
    {"CreateCounter", 0, 0, 1, 1, NULL, init_count_setup, create_run, free,
     "() -> COUNTER: a new Counter holding init_count (int32 in [0, 2^31-1]; an opaque object blob)",
     create_check, RC_OP_NOT_IN_STEP_NET | RC_OP_OBJECT_OUT_FIRST},
    {"ResetCounter", 1, 1, 0, 1, NULL, init_count_setup, reset_run, free,
     "(COUNTER) -> [PREVIOUS]: count = init_count; PREVIOUS (int32 scalar) the count before",
     counter_check, RC_OP_NOT_IN_STEP_NET},
    {"CountDown", 1, 1, 1, 1, NULL, NULL, count_down_run, NULL,
     "(COUNTER) -> DONE: DONE = count <= 0 (int32 0/1 scalar), then count -= 1 (atomic)",
     counter_check, RC_OP_NOT_IN_STEP_NET},
    {"CheckCounterDone", 1, 1, 1, 1, NULL, NULL, check_done_run, NULL,
     "(COUNTER) -> DONE: DONE = count <= 0 (int32 0/1 scalar)", counter_check, RC_OP_NOT_IN_STEP_NET},
    {"CountUp", 1, 1, 1, 1, NULL, NULL, count_up_run, NULL,
     "(COUNTER) -> PREVIOUS: PREVIOUS = count (int32 scalar), then count += 1 (atomic)",
     counter_check, RC_OP_NOT_IN_STEP_NET},
    {"RetrieveCount", 1, 1, 1, 1, NULL, NULL, retrieve_run, NULL,
     "(COUNTER) -> COUNT: the count (int32 scalar)", counter_check, RC_OP_NOT_IN_STEP_NET},
    {0},
};
