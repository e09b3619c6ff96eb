/* ops/mutex.c -- Caffe2's mutex-guarded iteration counter
 * (caffe2/operators/atomic_ops.cc CreateMutex, caffe2/sgd/iter_op.h AtomicIter),
 * which caffe2.python.utils.BuildUniqueMutexIter puts in every optimizer's nets,
 * and atomic_ops.cc's AtomicFetchAdd.
 *
 *   CreateMutex() -> MUTEX              a new Mutex (an opaque object blob)
 *   AtomicIter(MUTEX, COUNTER) -> COUNTER   COUNTER += 1 (int32, one element; in place)
 *   AtomicFetchAdd(MUTEX, A, B) -> (C, D)   D = A, C = A + B (int32 scalars)
 *
 * AtomicFetchAdd (Caffe2's int32 op; AtomicFetchAdd64, its int64 twin, is the
 * same op here: Caffe2's int64 blobs are int32 ones, so its sums must fit int32
 * too, as every INT64 value's): A and B int32 tensors of one element
 * each (any shape: (), (1,), (1, 1); TypeError / ValueError naming the blob
 * otherwise, where Caffe2 read the first element of whatever it got), C and D
 * int32 scalars (shape (), as Caffe2's Resize()). C is usually A's blob (the
 * value fetched and advanced in place); any output may be any input's blob,
 * since both values are read before either is written; C and D the same blob
 * is a ValueError at creation, as for every op (Caffe2 wrote D, then C over
 * it). A sum outside int32 is a ValueError and nothing is written (Caffe2's
 * int32 addition overflowed). In step nets the executor orders it as it
 * orders AtomicIter (below): it writes its outputs.
 *
 * A Mutex lives in its blob as an object (blob->obj, kind "Mutex", freed with
 * the blob: ResetWorkspace, or CreateMutex run again, which replaces it by a
 * new one, as Caffe2's made a new std::mutex). FetchBlob / FeedBlob / Save of
 * a Mutex blob are TypeErrors ("holds a Mutex, not a tensor"), as for every
 * object blob (Caffe2 saved an empty record that Load turned into a new
 * mutex; a mutex is not a parameter, and nothing here saves it). CreateMutex
 * replaces a tensor its output blob holds; an output holding an object of
 * another kind (a BlobsQueue, a DBReader) is a TypeError (Caffe2 replaced it).
 *
 * AtomicIter does to COUNTER exactly what Iter (ops/optim.c) does: an int32
 * tensor of one element (TypeError for another dtype, ValueError for another
 * size or an empty blob), += 1, a counter at INT32_MAX is a ValueError and
 * stays unchanged (Caffe2: int64 counter, and it refused a negative one; our
 * Iter and AtomicIter count on from any int32 below INT32_MAX). COUNTER must
 * be updated in place: output 0 is input 1's blob (ValueError at creation
 * otherwise; Caffe2's EnforceInplace({{1, 0}})). Input 0 must hold a Mutex
 * (TypeError naming the blob and what it holds; at net creation when it holds
 * a tensor, as the queue ops: a Mutex blob holds no tensor, so the
 * net-creation check runs only then; Caffe2 failed at run time on the wrong
 * type). No stats (Caffe2 counted atomic_iter/stats/<COUNTER>).
 *
 * No lock. Caffe2's AtomicIter locked the mutex around the increment because
 * nets of other threads (Hogwild) could increment the same counter at once.
 * Here nothing can run beside it on the same counter, so the Mutex object
 * holds no lock and AtomicIter never changes it (it only checks its kind):
 *  - a workspace runs one net (or operator) at a time (the binding refuses a
 *    second: "workspace is busy"), its ops one after another, and different
 *    workspaces cannot share a blob;
 *  - inside a RecurrentNetwork step net the RNN executor does run ops of
 *    different timesteps at once, but it orders every pair of op instances
 *    that touch the same blob and one of which writes it (rnn/executor.c:
 *    regions, last writer and readers per blob), in the serial order. Every
 *    AtomicIter writes its counter (output 0), so two instances on one
 *    counter never overlap and run in timestep order; instances on different
 *    counters may overlap but share only the Mutex, which they only read;
 *    CreateMutex writes its output blob and is ordered alike. So both ops
 *    are allowed in step nets (no RC_OP_NOT_IN_STEP_NET, unlike the queue
 *    ops, whose input queue changes without being an output), and the
 *    counter advances by exactly T per forward run with the executor on as
 *    off (tests/test_ops_mutex.py runs it with several threads).
 * No gradient for either (recurrent/_grad_optim.py; Caffe2's
 * SHOULD_NOT_DO_GRADIENT / NO_GRADIENT).
 */
#include "../core/rc_core.h"
#include "checks.h"
#include "iter.h"
#include <stdio.h>
#include <stdlib.h>

static const char mutex_kind[] = "Mutex";

/* The object a CreateMutex output blob holds. It carries no lock (see the
 * head comment); it exists so that AtomicIter can tell a Mutex blob from any
 * other. Owned by its blob, freed with free(). */
typedef struct rc_mutex_obj {
    int unused;
} rc_mutex_obj;


/* ---------------------------------------------------------------- CreateMutex */

/* Nothing to check before the run: no inputs, no arguments. */
static rc_status create_check(rc_op *op, rc_err *err)
{
    (void)op;
    (void)err;
    return RC_OK;
}

static rc_status create_run(rc_op *op, rc_err *err)
{
    rc_status st = rc_checks_object_output(op, mutex_kind, "Mutex", err);
    if (st) return st;
    rc_mutex_obj *m = calloc(1, sizeof *m);
    if (!m) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating mutex '%s'", rc_out_name(op, 0));
    rc_checks_put_object(op->out[0], m, free, mutex_kind);
    return RC_OK;
}

/* ---------------------------------------------------------------- AtomicIter */

/* Output 0 must be input 1's blob: the counter is incremented in place. */
static rc_status atomic_iter_setup(rc_op *op, rc_err *err)
{
    if (op->in[1] != op->out[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' and output 0 blob '%s' must be the same blob (AtomicIter increments its "
                          "counter in place)", rc_in_name(op, 1), rc_out_name(op, 0));
    return RC_OK;
}

rc_status rc_checks_mutex(rc_op *op, int i, rc_err *err)
{
    const rc_blob *b = op->in[i];
    if (!b->obj || b->obj_kind != mutex_kind)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' must be a Mutex (CreateMutex's output), but it "
                          "holds %s", i, rc_in_name(op, i), RC_HOLDS(b));
    return RC_OK;
}

/* Input 0 must hold a Mutex. */
static rc_status check_mutex(rc_op *op, rc_err *err)
{
    return rc_checks_mutex(op, 0, err);
}

/* Input 0 a Mutex; the counter (input 1, output 0's blob) int32 with one element. Reads no data. At net
 * creation it runs only when both inputs hold tensors, so there it names input 0's tensor. */
static rc_status atomic_iter_check(rc_op *op, rc_err *err)
{
    rc_status st = check_mutex(op, err);
    return st ? st : rc_iter_check_counter(op, "output", 0, rc_out_name(op, 0), rc_out(op, 0), err);
}

static rc_status atomic_iter_run(rc_op *op, rc_err *err)
{
    rc_status st = atomic_iter_check(op, err);
    return st ? st : rc_iter_increment(op, err);
}

/* AtomicIter: the counter (input 1) is output 0. */
static int inplace_counter(int in, int out) { return in == 1 && out == 0; }

/* ---------------------------------------------------------------- AtomicFetchAdd */

/* Input 0 a Mutex; inputs 1 (the value) and 2 (the increment) int32 with one element each. */
static rc_status fetch_add_check(rc_op *op, rc_err *err)
{
    static const char *const role[] = {"", "the value", "the increment"};
    rc_status st = check_mutex(op, err);
    for (int i = 1; !st && i < 3; i++) {
        if ((st = rc_check_input(op, i, RC_I32, err))) return st;
        const rc_tensor *t = rc_in(op, i);
        if (rc_tensor_numel(t) != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must hold one int32 value, got %s", i,
                              rc_in_name(op, i), role[i], RC_SHAPE(t));
    }
    return st;
}

static rc_status fetch_add_run(rc_op *op, rc_err *err)
{
    rc_status st = fetch_add_check(op, err);
    if (st) return st;
    const int32_t a = rc_i32(rc_in(op, 1))[0], b = rc_i32(rc_in(op, 2))[0];
    int32_t c;
    if (__builtin_add_overflow(a, b, &c))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the value) %d + input 2 blob '%s' (the "
                          "increment) %d overflows int32", rc_in_name(op, 1), (int)a, rc_in_name(op, 2), (int)b);
    for (int o = 0; o < 2; o++) {
        if ((st = rc_tensor_resize(rc_out(op, o), RC_I32, 0, NULL, err)))
            return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
        rc_i32(rc_out(op, o))[0] = o == 0 ? c : a;
    }
    return RC_OK;
}

const rc_op_schema rc_ops_mutex[] = {
    {"CreateMutex", 0, 0, 1, 1, NULL, NULL, create_run, NULL,
     "() -> MUTEX: a new Mutex (an opaque object blob, for AtomicIter; it cannot be fetched, fed or saved)",
     create_check, RC_OP_OBJECT_OUT_FIRST},
    {"AtomicIter", 2, 2, 1, 1, inplace_counter, atomic_iter_setup, atomic_iter_run, NULL,
     "(MUTEX, COUNTER) -> COUNTER: Iter's int32 one-element counter += 1, in place; input 0 must be a Mutex",
     atomic_iter_check},
    {"AtomicFetchAdd", 3, 3, 2, 2, rc_inplace_any, NULL, fetch_add_run, NULL,
     "(MUTEX, A, B) -> (C, D): D = A, C = A + B, int32 scalars (C usually A's blob); input 0 must be a Mutex",
     fetch_add_check},
    {"AtomicFetchAdd64", 3, 3, 2, 2, rc_inplace_any, NULL, fetch_add_run, NULL,
     "AtomicFetchAdd of Caffe2's int64 values, which are int32 here (the sum must fit int32)", fetch_add_check},
    {0},
};
