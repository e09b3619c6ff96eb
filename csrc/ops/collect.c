/* ops/collect.c -- Caffe2's LastNWindowCollector (caffe2/operators/last_n_window_collector.cc):
 * keeps the last num_to_collect rows seen across runs in a ring buffer.
 *
 *   LastNWindowCollector(LAST_N, NEXT, DATA[, MUTEX[, NUM_VISITED]])
 *       -> (LAST_N, NEXT[, NUM_VISITED])            arg num_to_collect (> 0, int32)
 *
 * LAST_N (the buffer), NEXT (the cursor: an int32 scalar, shape ()) and NUM_VISITED (an int32
 * tensor of one element; Caffe2: int64) are updated in place: output k is input k's blob (input 4's
 * for output 2; ValueError at creation otherwise, as Caffe2's EnforceInplace). NUM_VISITED comes
 * with its output and only so: 5 inputs need 3 outputs and 3 outputs 5 inputs (Caffe2 ignored a
 * fifth input without a third output, and a third output without a fifth input needed a blob
 * holding one int64). MUTEX must hold a Mutex (TypeError otherwise); as for AtomicIter
 * (ops/mutex.c) nothing runs beside the op on the same blobs, so it only checks the kind.
 *
 * DATA: any tensor (float32 or int32) with at least 1 dim; its rows are its first dim. The
 * buffer is empty when LAST_N holds no tensor or one with 0 rows (shape (0, ...): Caffe2's
 * layer starts it as a ConstantFill of shape [0]); an empty buffer takes DATA's dtype and row
 * shape and starts with the cursor at 0 (NEXT's value is not read) and NUM_VISITED at 0. A
 * buffer with rows must have DATA's dtype, rank and row shape and at most num_to_collect rows
 * (TypeError / ValueError otherwise; Caffe2 threw away a buffer of another dtype and kept a
 * larger one), and its cursor must be where the ring buffer puts it: equal to the row count
 * while the buffer is not full (the rows fill in order), in [0, num_to_collect) once it is
 * (ValueError otherwise; Caffe2 checked only cursor < rows and then left rows unwritten or read
 * before the buffer). NUM_VISITED must be >= 0 and stay within int32 (ValueError).
 *
 * A run with n rows of DATA (m = min(n, num_to_collect) of them are kept):
 *  - n = 0: an empty buffer becomes DATA's copy (shape (0, ...)); nothing else changes but
 *    NUM_VISITED (+= 0; reset to 0 when the buffer is empty), as Caffe2.
 *  - n > num_to_collect: the buffer holds DATA's last num_to_collect rows in order and the
 *    cursor is 0.
 *  - otherwise DATA's rows are written from the cursor on, wrapping to row 0 at
 *    num_to_collect; the buffer grows (up to num_to_collect rows) to hold the rows past its
 *    end; the cursor advances by n modulo num_to_collect.
 * NUM_VISITED += n. DATA may share the buffer's storage (a view of its rows): its rows are then
 * copied first, so the ring's writes cannot change rows still to be read (named as the buffer it is
 * refused by the in-place rule). Every check runs before anything is written. The buffer grows into room
 * reserved ahead (twice its rows, at most num_to_collect: Caffe2 reserved num_to_collect rows
 * at once), so filling it copies each row O(1) times.
 *
 * Differences from Caffe2 beyond the checks: Caffe2 also took a buffer whose first 8 bytes were
 * zero for an empty one (a pointer test meant for another blob type) and reset it; a buffer of
 * rows of no element (DATA (n, 0)) is a buffer with rows here, where Caffe2 reset it each run.
 * No gradient (recurrent/_grad_optim.py; Caffe2's SHOULD_NOT_DO_GRADIENT). Allowed in step nets:
 * it writes every blob it changes (its in-place outputs), so the RNN executor orders its
 * instances, as AtomicIter's.
 */
#include "../core/rc_core.h"
#include "checks.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { LAST_N = 0, NEXT = 1, DATA = 2, MUTEX = 3, NUM_VISITED = 4 };

typedef struct lastn_state {
    int64_t num; /* num_to_collect */
} lastn_state;

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* In place: LAST_N, NEXT and NUM_VISITED are inputs 0, 1, 4 and outputs 0, 1, 2. */
static int lastn_inplace(int in, int out)
{
    return (in == 0 && out == 0) || (in == 1 && out == 1) || (in == 4 && out == 2);
}

static rc_status lastn_setup(rc_op *op, rc_err *err)
{
    lastn_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st = rc_arg_i(&op->def, "num_to_collect", -1, &s->num, err);
    if (st) return st;
    if (s->num <= 0 || s->num > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'num_to_collect' must be in [1, %d], got %lld",
                          (int)INT32_MAX, (long long)s->num);
    if ((op->n_in == 5) != (op->n_out == 3))
        return rc_op_fail(op, err, RC_ERR_VALUE, "NUM_VISITED needs both input 4 and output 2 (the same blob): "
                          "got %d inputs and %d outputs", op->n_in, op->n_out);
    static const int pairs[3][2] = {{LAST_N, 0}, {NEXT, 1}, {NUM_VISITED, 2}};
    static const char *const what[3] = {"LAST_N", "NEXT", "NUM_VISITED"};
    for (int k = 0; k < op->n_out; k++)
        if (op->in[pairs[k][0]] != op->out[pairs[k][1]])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' and output %d blob '%s' must be the same "
                              "blob (%s is updated in place)", pairs[k][0], rc_in_name(op, pairs[k][0]), pairs[k][1],
                              rc_out_name(op, pairs[k][1]), what[k]);
    return RC_OK;
}

/* The buffer has rows (is not empty: see the head comment). */
static int buffer_has_rows(const rc_tensor *b)
{
    return b->dtype != RC_UNDEF && b->storage && !(b->ndim >= 1 && b->dims[0] == 0);
}

/* Dtypes and shapes: DATA (>= 1 dim), NEXT int32 (), NUM_VISITED int32 of one element, a buffer
 * with rows like DATA's with at most num_to_collect of them, MUTEX a Mutex. Reads no data. */
static rc_status lastn_check(rc_op *op, rc_err *err)
{
    const lastn_state *s = op->state;
    const rc_tensor *data = rc_in(op, DATA), *buf = rc_in(op, LAST_N), *next = rc_in(op, NEXT);
    rc_status st;
    if (data->dtype == RC_UNDEF || !data->storage)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (DATA) holds no tensor (was it fed or "
                          "computed?)", rc_in_name(op, DATA));
    if (data->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (DATA) must have at least 1 dim (its rows), "
                          "got %s", rc_in_name(op, DATA), RC_SHAPE(data));
    if ((st = rc_check_input(op, NEXT, RC_I32, err))) return st;
    if (next->ndim != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (NEXT, the cursor) must be an int32 scalar of "
                          "shape (), got %s", rc_in_name(op, NEXT), RC_SHAPE(next));
    if (op->n_in > MUTEX && (st = rc_checks_mutex(op, MUTEX, err))) return st;
    if (op->n_in > NUM_VISITED) {
        if ((st = rc_check_input(op, NUM_VISITED, RC_I32, err))) return st;
        if (rc_tensor_numel(rc_in(op, NUM_VISITED)) != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 4 blob '%s' (NUM_VISITED) must hold one int32 value, "
                              "got %s", rc_in_name(op, NUM_VISITED), RC_SHAPE(rc_in(op, NUM_VISITED)));
    }
    if (!buffer_has_rows(buf)) return RC_OK;
    int same = buf->ndim == data->ndim;
    for (int i = 1; same && i < data->ndim; i++) same = buf->dims[i] == data->dims[i];
    if (buf->dtype != data->dtype)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' %s (LAST_N, the buffer) and input 2 blob '%s' "
                          "%s (DATA) must have the same dtype", rc_in_name(op, LAST_N), RC_SHAPE(buf),
                          rc_in_name(op, DATA), RC_SHAPE(data));
    if (!same)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (LAST_N, the buffer) must have rows shaped "
                          "as those of input 2 blob '%s' %s (DATA)", rc_in_name(op, LAST_N), RC_SHAPE(buf),
                          rc_in_name(op, DATA), RC_SHAPE(data));
    if (buf->dims[0] > s->num)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (LAST_N, the buffer) has more rows than "
                          "num_to_collect = %lld", rc_in_name(op, LAST_N), RC_SHAPE(buf), (long long)s->num);
    return RC_OK;
}

/* Copies nrows rows of row_bytes bytes (memmove: the two ranges may be of one storage). */
static void copy_rows(char *dst, int64_t dst_row, const char *src, int64_t src_row, int64_t nrows, size_t row_bytes)
{
    if (nrows > 0 && row_bytes > 0)
        memmove(dst + (size_t)dst_row * row_bytes, src + (size_t)src_row * row_bytes, (size_t)nrows * row_bytes);
}

static rc_status lastn_run(rc_op *op, rc_err *err)
{
    const lastn_state *s = op->state;
    rc_status st = lastn_check(op, err);
    if (st) return st;
    const rc_tensor *data = rc_in(op, DATA);
    rc_tensor *buf = rc_out(op, 0), *next_t = rc_out(op, 1);
    const int64_t num = s->num, n = data->dims[0];
    const int filled = buffer_has_rows(buf);
    const int64_t rows = filled ? buf->dims[0] : 0;

    /* the values: cursor and NUM_VISITED, checked before anything is written */
    int64_t cursor = 0;
    if (filled) {
        cursor = rc_i32(next_t)[0];
        if (rows < num ? cursor != rows : (cursor < 0 || cursor >= num))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (NEXT, the cursor) is %lld, but input 0 blob "
                              "'%s' %s (LAST_N, the buffer) with num_to_collect = %lld needs %s", rc_in_name(op, NEXT),
                              (long long)cursor, rc_in_name(op, LAST_N), RC_SHAPE(buf), (long long)num,
                              rows < num ? "it to equal its row count (a buffer that is not full fills in order)"
                                         : "it in [0, num_to_collect)");
    }
    int64_t visited = 0;
    if (op->n_out > 2) {
        const int64_t old = rc_i32(rc_in(op, NUM_VISITED))[0];
        if (filled && old < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 4 blob '%s' (NUM_VISITED) is %lld; it must be >= 0",
                              rc_in_name(op, NUM_VISITED), (long long)old);
        visited = (filled ? old : 0) + n; /* n < 2^46: no int64 overflow */
        if (visited > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 4 blob '%s' (NUM_VISITED) %lld + %lld rows of input 2 "
                              "blob '%s' %s overflows int32", rc_in_name(op, NUM_VISITED),
                              (long long)(visited - n), (long long)n, rc_in_name(op, DATA), RC_SHAPE(data));
    }

    const size_t row_bytes = (size_t)rc_dims_prod(data, 1, data->ndim) * rc_dtype_size(data->dtype);
    /* DATA sharing the buffer's storage (a view of its rows: a link's rnn_internal_apply_link view, a
     * RecurrentNetwork output aliasing a state): the ring writes would overwrite rows of DATA still to
     * be read, so DATA's rows are copied first (before anything is written; the test is sparse.c's). */
    void *data_copy = NULL;
    if (n > 0 && row_bytes > 0 && data->storage == buf->storage) {
        data_copy = malloc((size_t)n * row_bytes);
        if (!data_copy)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory copying input 2 blob '%s' %s (DATA), which "
                              "shares its memory with input 0 blob '%s' (LAST_N, the buffer)", rc_in_name(op, DATA),
                              RC_SHAPE(data), rc_in_name(op, LAST_N));
        memcpy(data_copy, rc_tensor_data(data), (size_t)n * row_bytes);
    }
    if (n == 0) {
        if (!filled && (st = rc_tensor_copy(buf, data, err))) return out_fail(op, 0, err);
    } else {
        const int64_t m = n < num ? n : num;
        const int64_t new_rows = rows + m < num ? rows + m : num;
        if (!filled || new_rows != rows) {
            int64_t dims[RC_MAX_DIMS];
            memcpy(dims, data->dims, sizeof dims);
            dims[0] = new_rows;
            /* room for twice the rows (at most num_to_collect): the bytes fit the tensor size cap
             * times 2, since new_rows rows do */
            const int64_t reserve_rows = 2 * new_rows < num ? 2 * new_rows : num;
            if ((st = rc_tensor_resize_keep(buf, data->dtype, data->ndim, dims, (size_t)reserve_rows * row_bytes,
                                            err))) {
                free(data_copy);
                return out_fail(op, 0, err);
            }
        }
        char *bd = rc_tensor_data(buf);
        const char *dd = data_copy ? data_copy : rc_tensor_data(data);
        if (n > num) {
            copy_rows(bd, 0, dd, n - num, num, row_bytes);
            cursor = 0;
        } else {
            const int64_t first = (cursor + n < num ? cursor + n : num) - cursor;
            copy_rows(bd, cursor, dd, 0, first, row_bytes);
            copy_rows(bd, 0, dd, first, n - first, row_bytes);
            cursor = (cursor + n) % num;
        }
        rc_i32(next_t)[0] = (int32_t)cursor;
        free(data_copy);
    }
    if (op->n_out > 2) rc_i32(rc_out(op, 2))[0] = (int32_t)visited;
    return RC_OK;
}

static void lastn_free(void *state)
{
    free(state);
}

const rc_op_schema rc_ops_collect[] = {
    {"LastNWindowCollector", 3, 5, 2, 3, lastn_inplace, lastn_setup, lastn_run, lastn_free,
     "(LAST_N, NEXT, DATA[, MUTEX[, NUM_VISITED]]) -> (LAST_N, NEXT[, NUM_VISITED]), in place: the last "
     "num_to_collect rows of DATA seen, in a ring buffer (NEXT the int32 cursor, NUM_VISITED int32 rows seen)",
     lastn_check},
    {0},
};
