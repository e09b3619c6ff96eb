/* ops/print.c -- Caffe2's Print (caffe2/operators/utility_ops.h PrintOp, with
 * caffe2/core/tensor.h/.cc TensorPrinter), and Summarize (its section below):
 *
 *   Print(X) -> ()
 *
 * Writes one line of text for X:
 *   "Tensor <name> of type <type>. Dims: (<d0>,<d1>,): <v0>,<v1>,..."
 * <name> is the input's name as written in the op, <type> Caffe2's TypeMeta
 * name ("float" for float32, "int" for int32), every dim followed by a comma
 * ("()" for a 0-d tensor), then at most `limit` values in C order: float32 as
 * C++'s ostream prints a float (6 significant digits, %g: 0.1, 1e-07, 1e+20,
 * inf, -inf, nan, -0), int32 as integers. An empty tensor ends after "): ".
 * A blob holding no tensor gives Caffe2's "Blob of type: nullptr
 * (uninitialized)"; one holding an object (a blob queue, step workspaces)
 * "Blob of type: <kind>" (Caffe2 named the C++ type).
 *
 * Arguments (checked when the op is created; ValueError / TypeError naming the op):
 *   limit    int >= 0, default 0: the number of values printed at most; 0 is
 *            Caffe2's default limit, 1000 (k_limit_default_). Caffe2 did not
 *            check it (a negative limit read before the data).
 *   every_n  int >= 1, default 1: the op prints on its 1st run and every
 *            every_n-th run after (runs 1, 1 + n, 1 + 2n, ...: Caffe2's
 *            occurrences_mod_n_ counter, which counts every run, printing or not).
 *   to_file  0 or 1, default 0 (Caffe2 took any nonzero int as 1): 1 writes the
 *            lines to "<input name>.log" in the workspace's root folder
 *            (rc_ws_path: the current directory unless ResetWorkspace(root_folder)
 *            set one, as Caffe2's), opened and truncated when the op is
 *            created (OSError naming the op, the path and the reason when it
 *            cannot be), flushed after every line, closed when the op is freed
 *            (its net deleted or replaced, the workspace reset). Refused in
 *            RecurrentNetwork step nets (rnn/recurrent_network.c): each
 *            timestep's op would open and truncate the same file.
 *
 * Without to_file the line goes to the print log of the op's workspace tree
 * (rc_ws_log_append: the workspace running the outer net, also for an op in a
 * step net), which the binding writes to sys.stderr after the call; C never
 * prints. A line is appended in one piece, so lines are never torn; under the
 * RNN executor the lines of different timesteps come in the order the steps
 * ran, which may differ from the serial loop's.
 *
 * State (op->state, owned by the op, freed by print_free): the arguments, the
 * run counter, the FILE* and a line buffer grown as needed (an allocation
 * failure is a MemoryError naming the op; the op stays usable). */
#include "../core/rc_core.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRINT_LIMIT_DEFAULT 1000 /* Caffe2's k_limit_default_ */
#define PRINT_VALUE_MAX 16       /* "%.6g" of a float: at most 12 chars ("-1.17549e-38"); int32 11; + ',' */

typedef struct print_state {
    int64_t limit;     /* values printed at most (> 0) */
    int64_t every_n;   /* >= 1 */
    int64_t count;     /* Caffe2's occurrences_mod_n_: in [1, every_n] after a run, 0 before the first */
    FILE *fp;          /* owned; NULL: the workspace's print log */
    char *path;        /* owned; the file's path (to_file) for messages, else NULL */
    char *line;        /* owned scratch of line_cap bytes */
    size_t line_cap;
} print_state;

static void print_free(void *p)
{
    print_state *s = p;
    if (!s) return;
    if (s->fp) fclose(s->fp);
    free(s->path);
    free(s->line);
    free(s);
}

/* to_file=1 of Print and Summarize: opens "<input 0's name><ext>" in the workspace's root folder
 * (rc_ws_path) for writing, truncated, each '/' of the name made '#' when `hash` (Summarize's, as
 * Caffe2's). *path and *fp go to the op's state, which owns them. Refused inside a RecurrentNetwork step
 * net (a workspace with a parent): each timestep's op would truncate the same file; `advice` begins
 * the message's suggestion ("<advice> the recurrent op's outputs in the outer net"). */
static rc_status open_op_file(rc_op *op, const char *ext, int hash, const char *advice, char **path, FILE **fp,
                              rc_err *err)
{
    const char *name = rc_in_name(op, 0);
    const size_t n = strlen(name) + strlen(ext) + 1;
    char *file = malloc(n);
    if (!file) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    snprintf(file, n, "%s%s", name, ext);
    for (char *c = file; hash && *c; c++)
        if (*c == '/') *c = '#';
    if (rc_ws_parent(op->ws)) {
        rc_status st = rc_op_fail(op, err, RC_ERR_VALUE, "to_file=1 inside a RecurrentNetwork step net: each "
                                  "timestep's op would open and truncate '%s' (%s the recurrent op's outputs in "
                                  "the outer net)", file, advice);
        free(file);
        return st;
    }
    *path = rc_ws_path(op->ws, file, 0);
    free(file);
    if (!*path) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    errno = 0;
    *fp = fopen(*path, "we");
    if (!*fp)
        return rc_op_fail(op, err, RC_ERR_IO, "cannot open '%s' for writing (to_file=1): %s", *path,
                          strerror(errno ? errno : EIO));
    return RC_OK;
}

static rc_status print_setup(rc_op *op, rc_err *err)
{
    print_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    int64_t limit, every_n, to_file;
    rc_status st;
    if ((st = rc_arg_i(&op->def, "limit", 0, &limit, err))) return st;
    if ((st = rc_arg_i(&op->def, "every_n", 1, &every_n, err))) return st;
    if ((st = rc_arg_i(&op->def, "to_file", 0, &to_file, err))) return st;
    if (limit < 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument 'limit' must be >= 0 (0: Caffe2's default of %d values), got %" PRId64,
                          PRINT_LIMIT_DEFAULT, limit);
    if (every_n < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'every_n' must be >= 1, got %" PRId64, every_n);
    if (to_file != 0 && to_file != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'to_file' must be 0 or 1, got %" PRId64, to_file);
    s->limit = limit ? limit : PRINT_LIMIT_DEFAULT;
    s->every_n = every_n;
    return to_file ? open_op_file(op, ".log", 0, "print to the log, or Print", &s->path, &s->fp, err) : RC_OK;
}

/* Print accepts any blob (a tensor of any dtype and shape, no tensor, an
 * object): there is nothing to check at net creation, so it has no check and
 * is one of the op types listed as unchecked (tests/test_net_creation_checks.py). */

/* Makes s->line hold at least n bytes. */
static rc_status line_reserve(rc_op *op, print_state *s, size_t n, rc_err *err)
{
    if (n <= s->line_cap) return RC_OK;
    char *p = realloc(s->line, n);
    if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for a line of %zu bytes", n);
    s->line = p;
    s->line_cap = n;
    return RC_OK;
}

/* The line for input 0 (with its '\n') into s->line; its length in *len. */
static rc_status format_line(rc_op *op, print_state *s, size_t *len, rc_err *err)
{
    const rc_blob *b = op->in[0];
    const rc_tensor *t = &b->t;
    const char *name = rc_in_name(op, 0);
    rc_status st;
    if (b->obj || t->dtype == RC_UNDEF) {
        const char *kind = b->obj ? (b->obj_kind ? b->obj_kind : "object") : "nullptr (uninitialized)";
        size_t n = sizeof "Blob of type: \n" + strlen(kind);
        if ((st = line_reserve(op, s, n, err))) return st;
        *len = (size_t)snprintf(s->line, n, "Blob of type: %s\n", kind);
        return RC_OK;
    }
    const int64_t numel = rc_tensor_numel(t);
    const int64_t count = numel < s->limit ? numel : s->limit;
    /* "Tensor " name " of type " type ". Dims: (" dims "): " values "\n" */
    size_t n = 64 + strlen(name) + (size_t)t->ndim * 22 + (size_t)count * PRINT_VALUE_MAX;
    if ((st = line_reserve(op, s, n, err))) return st;
    char *p = s->line, *end = s->line + n;
    p += snprintf(p, (size_t)(end - p), "Tensor %s of type %s. Dims: (", name, t->dtype == RC_F32 ? "float" : "int");
    for (int d = 0; d < t->ndim; d++) p += snprintf(p, (size_t)(end - p), "%" PRId64 ",", t->dims[d]);
    p += snprintf(p, (size_t)(end - p), "): ");
    if (t->dtype == RC_F32) {
        const float *x = count ? rc_f32(t) : NULL;
        for (int64_t k = 0; k < count; k++)
            p += snprintf(p, (size_t)(end - p), k ? ",%.6g" : "%.6g", (double)x[k]);
    } else {
        const int32_t *x = count ? rc_i32(t) : NULL;
        for (int64_t k = 0; k < count; k++) p += snprintf(p, (size_t)(end - p), k ? ",%" PRId32 : "%" PRId32, x[k]);
    }
    *p++ = '\n';
    *len = (size_t)(p - s->line);
    return RC_OK;
}

static rc_status print_run(rc_op *op, rc_err *err)
{
    print_state *s = op->state;
    rc_status st;
    if (++s->count > s->every_n) s->count -= s->every_n;
    if (s->count != 1) return RC_OK;
    size_t len;
    if ((st = format_line(op, s, &len, err))) return st;
    if (!s->fp) {
        if ((st = rc_ws_log_append(op->ws, s->line, len, err)))
            return rc_op_fail(op, err, st, "%s", err->msg);
        return RC_OK;
    }
    errno = 0;
    if (fwrite(s->line, 1, len, s->fp) != len || fflush(s->fp)) {
        int e = errno ? errno : EIO;
        clearerr(s->fp);
        return rc_op_fail(op, err, RC_ERR_IO, "cannot write '%s': %s", s->path, strerror(e));
    }
    return RC_OK;
}

/* ================================================================ Summarize */

/* Caffe2's Summarize (summarize_op.cc): Summarize(X) -> ([Y]): X float32 with
 * at least one element; Y (4,) float32 = (min, max, mean, std), std the
 * unbiased standard deviation (divided by n - 1; 0 for one element), mean and
 * std summed in double in memory order (two passes), then rounded to float.
 * A NaN in X makes min and max NaN too (np.min's; Caffe2's std::min / max
 * kept or dropped it depending on its position). Without an output the
 * statistics go only to the file, if any.
 *
 * to_file (0 or 1, default 0; Caffe2 took any nonzero int as 1): 1 writes the
 * line "min max mean std" (each as C++'s ostream prints a float: %.6g) for
 * every run to "<input name>.summary" in the workspace's root folder, each '/'
 * of the name replaced by '#' (Caffe2's file: RootFolder() + "/" + name);
 * opened and truncated when the op is created (an OSError naming the path
 * otherwise), flushed after every line, closed when the op is freed; refused
 * in RecurrentNetwork step nets, as Print's.
 * Where Caffe2 differs: an empty X read past the data (here a ValueError);
 * Caffe2 summed in float. */
typedef struct {
    FILE *fp;   /* owned; NULL without to_file */
    char *path; /* owned; the file's path for messages */
} summarize_state;

static void summarize_free(void *p)
{
    summarize_state *s = p;
    if (!s) return;
    if (s->fp) fclose(s->fp);
    free(s->path);
    free(s);
}

static rc_status summarize_setup(rc_op *op, rc_err *err)
{
    summarize_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    int64_t to_file;
    rc_status st;
    if ((st = rc_arg_i(&op->def, "to_file", 0, &to_file, err))) return st;
    if (to_file != 0 && to_file != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'to_file' must be 0 or 1, got %" PRId64, to_file);
    return to_file ? open_op_file(op, ".summary", 1, "Summarize", &s->path, &s->fp, err) : RC_OK;
}

static rc_status summarize_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (rc_tensor_numel(x) == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s is empty: there is nothing to summarize",
                          rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

static rc_status summarize_run(rc_op *op, rc_err *err)
{
    summarize_state *s = op->state;
    rc_status st = summarize_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const float *xd = rc_f32(x);
    const int64_t n = rc_tensor_numel(x);
    float lo = xd[0], hi = xd[0];
    double sum = 0.0, ss = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float v = xd[i];
        if (v < lo || v != v) lo = lo != lo ? lo : v; /* the first NaN stays */
        if (v > hi || v != v) hi = hi != hi ? hi : v;
        sum += (double)v;
    }
    const double mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)xd[i] - mean;
        ss += d * d;
    }
    const float stats[4] = {lo, hi, (float)mean, n == 1 ? 0.0f : (float)sqrt(ss / (double)(n - 1))};
    if (s->fp) {
        errno = 0;
        if (fprintf(s->fp, "%.6g %.6g %.6g %.6g\n", (double)stats[0], (double)stats[1], (double)stats[2],
                    (double)stats[3]) < 0 ||
            fflush(s->fp)) {
            int e = errno ? errno : EIO;
            clearerr(s->fp);
            return rc_op_fail(op, err, RC_ERR_IO, "cannot write '%s': %s", s->path, strerror(e));
        }
    }
    if (op->n_out == 0) return RC_OK;
    const int64_t four = 4;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, 1, &four, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    memcpy(rc_f32(rc_out(op, 0)), stats, sizeof stats);
    return RC_OK;
}

const rc_op_schema rc_ops_print[] = {
    {"Print", 1, 1, 0, 0, NULL, print_setup, print_run, print_free,
     "(X) -> (): a line 'Tensor X of type T. Dims: (...): values' to sys.stderr (or X.log with to_file=1), "
     "at most limit values (0: 1000), on the 1st and every every_n-th run"},
    {"Summarize", 1, 1, 0, 1, NULL, summarize_setup, summarize_run, summarize_free,
     "(X) -> ([Y]): Y (4,) = min, max, mean and unbiased std of float32 X; to_file=1 also writes them to "
     "<X>.summary", summarize_check},
    {NULL},
};
