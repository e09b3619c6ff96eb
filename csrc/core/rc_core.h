/* recurrent C core: tensors, workspaces, operator definitions, registry, nets.
 *
 * No Python.h here: the core compiles and runs without Python (see tests/c/).
 * Conventions (STYLE.md):
 *  - every fallible function returns rc_status and fills an rc_err with a message
 *    naming op type, op index, blob and shapes where known;
 *  - ownership is stated on every function that returns a pointer;
 *  - nothing here keeps mutable global state except the atomic runtime flags
 *    (rc_flags_*), which Python sets through GlobalInit.
 */
#ifndef RC_CORE_H
#define RC_CORE_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RC_INTERNAL __attribute__((visibility("hidden")))
#define RC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RC_INTERNAL
#define RC_PRINTF(a, b)
#endif

#define RC_MAX_DIMS 8
#define RC_ERR_LEN 2048

/* ---------------------------------------------------------------- errors */
typedef enum {
    RC_OK = 0,
    RC_ERR_VALUE,     /* bad value / shape mismatch        -> ValueError   */
    RC_ERR_TYPE,      /* wrong dtype / argument type        -> TypeError    */
    RC_ERR_KEY,       /* missing blob / unknown op / net    -> KeyError     */
    RC_ERR_INDEX,     /* out-of-range link / alias / label  -> IndexError   */
    RC_ERR_MEMORY,    /* allocation failed / size overflow  -> MemoryError  */
    RC_ERR_RUNTIME,   /* anything else                      -> RuntimeError */
    RC_ERR_INTERRUPT, /* run interrupted (Ctrl-C)           -> KeyboardInterrupt */
    RC_ERR_IO         /* file cannot be opened/read/written -> OSError      */
} rc_status;

typedef struct rc_err {
    rc_status code;
    int op_pos;             /* the failing op's position in the outermost net that failed (rc_net_create,
                             * rc_net_run, rc_net_benchmark set it), -1 when none (rc_err_clear) */
    char msg[RC_ERR_LEN];
} rc_err;

/* Sets code and message (printf-style); returns code so callers can
 * `return rc_err_set(err, RC_ERR_VALUE, "...")`. err may be NULL. */
RC_INTERNAL rc_status rc_err_set(rc_err *err, rc_status code, const char *fmt, ...) RC_PRINTF(3, 4);
/* Prepends context ("op FC #3: ") to an existing message. */
RC_INTERNAL void rc_err_prefix(rc_err *err, const char *fmt, ...) RC_PRINTF(2, 3);
RC_INTERNAL void rc_err_clear(rc_err *err);

/* ---------------------------------------------------------------- tensors */
typedef enum { RC_UNDEF = 0, RC_F32 = 1, RC_I32 = 2 } rc_dtype;

RC_INTERNAL size_t rc_dtype_size(rc_dtype dt);
RC_INTERNAL const char *rc_dtype_name(rc_dtype dt);

/* A reference-counted byte buffer (atomic count: views are taken and dropped
 * from executor worker threads). */
typedef struct rc_storage rc_storage;

/* An n-dimensional, C-contiguous tensor: dims + a reference to a storage at a
 * byte offset. Several tensors may share one storage (views: links, aliases).
 * The tensor owns one reference to its storage (NULL when it has no data). */
typedef struct rc_tensor {
    rc_dtype dtype;         /* RC_UNDEF until first resized/fed */
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    rc_storage *storage;    /* owned reference, may be NULL */
    size_t offset;          /* byte offset of element 0 in storage */
} rc_tensor;

RC_INTERNAL void rc_tensor_init(rc_tensor *t);
/* Drops the storage reference; t becomes empty (RC_UNDEF, ndim 0). */
RC_INTERNAL void rc_tensor_release(rc_tensor *t);
RC_INTERNAL int64_t rc_tensor_numel(const rc_tensor *t);
RC_INTERNAL size_t rc_tensor_nbytes(const rc_tensor *t);
/* Pointer to element 0; borrowed, valid while the storage lives and the
 * tensor is not resized. NULL for a tensor without storage. */
RC_INTERNAL void *rc_tensor_data(const rc_tensor *t);
static inline float *rc_f32(const rc_tensor *t) { return (float *)rc_tensor_data(t); }
static inline int32_t *rc_i32(const rc_tensor *t) { return (int32_t *)rc_tensor_data(t); }

/* Gives t the shape dims[0..ndim) and dtype dt. The current buffer is kept
 * (contents preserved) when it is large enough and either not shared or the
 * byte size is unchanged -- so writing through a resize into a link view
 * keeps writing into the viewed state rows. Otherwise a fresh zero-filled
 * buffer is allocated (a view is then detached from what it viewed).
 * Fails with RC_ERR_MEMORY on overflow / allocation failure and
 * RC_ERR_VALUE on negative dims or ndim > RC_MAX_DIMS. */
RC_INTERNAL rc_status rc_tensor_resize(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err);
RC_INTERNAL rc_status rc_tensor_resize_like(rc_tensor *t, const rc_tensor *like, rc_err *err);
/* Like resize, but the first min(old, new) bytes of t's data stay as they were, whether the buffer is
 * kept or not (a fresh buffer is zero-filled past them). A fresh buffer gets room for reserve bytes
 * when that is more than the new size, so that growing later up to reserve keeps it (Caffe2's
 * Tensor::Reserve; LastNWindowCollector's ring buffer, ops/collect.c). */
RC_INTERNAL rc_status rc_tensor_resize_keep(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, size_t reserve,
                                            rc_err *err);
/* Like resize, but always gives t a private (unshared) buffer; contents undefined-but-initialised (zero or old). */
RC_INTERNAL rc_status rc_tensor_resize_private(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err);
/* Makes dst a view sharing src's storage: rows [row0, row0+nrows) of dim 0,
 * shape [nrows] + src.dims[1:]. dst's old storage reference is dropped.
 * Caller checks bounds (0 <= row0, row0+nrows <= src.dims[0], src.ndim >= 1). */
RC_INTERNAL void rc_tensor_view_rows(rc_tensor *dst, const rc_tensor *src, int64_t row0, int64_t nrows);
/* dst shares src's storage, dims and dtype (a full alias). */
RC_INTERNAL void rc_tensor_share(rc_tensor *dst, const rc_tensor *src);
/* Write stamps. Every storage has an id that is never reused in the process
 * and a count of the writes recorded on it: two equal stamps of a tensor
 * mean its bytes did not change in between, so a copy derived from them (a
 * packed weight) can be kept. The rule that makes this hold: whatever
 * writes a tensor's data calls rc_tensor_touch on it after writing (or
 * before reading a stamp again). rc_op_run does it for every output of every
 * op; code writing blobs that are not its op's outputs (RecurrentNetwork's
 * states, gradient buffers, timestep blobs), rc_tensor_copy and anything
 * writing into a tensor it did not just allocate do it themselves. A
 * freshly allocated storage has a new id, so FeedBlob (always a fresh
 * buffer) and resizes that reallocate need nothing. The stamp of a tensor
 * without storage is {0, 0}. Thread-safe (atomic). */
typedef struct rc_stamp {
    uint64_t id, writes;
} rc_stamp;
RC_INTERNAL void rc_tensor_touch(const rc_tensor *t);
RC_INTERNAL rc_stamp rc_tensor_stamp(const rc_tensor *t);
static inline int rc_stamp_eq(rc_stamp a, rc_stamp b) { return a.id == b.id && a.writes == b.writes; }
/* Resizes dst like src and copies the bytes (dst==src is a no-op). */
RC_INTERNAL rc_status rc_tensor_copy(rc_tensor *dst, const rc_tensor *src, rc_err *err);
RC_INTERNAL int rc_tensor_same_shape(const rc_tensor *a, const rc_tensor *b);
/* Writes "(2, 3) float32" into buf (always NUL-terminated); returns buf. */
RC_INTERNAL const char *rc_shape_str(const rc_tensor *t, char *buf, size_t n);
#define RC_SHAPE(t) rc_shape_str((t), (char[96]){0}, 96)
/* Product of dims[from, to). */
RC_INTERNAL int64_t rc_dims_prod(const rc_tensor *t, int from, int to);

/* ---------------------------------------------------------------- workspaces & blobs */
typedef struct rc_workspace rc_workspace;
typedef struct rc_net rc_net;

/* A named blob: a tensor, or an opaque object (e.g. a RecurrentNetwork's
 * step workspaces) with its destructor. Blobs are allocated individually;
 * a blob pointer stays valid until its workspace is reset or freed. */
typedef struct rc_blob {
    char *name;             /* owned */
    rc_tensor t;
    void *obj;              /* owned, freed with obj_free */
    void (*obj_free)(void *);
    const char *obj_kind;   /* static string naming the object type, NULL if none */
    rc_workspace *ws;       /* the workspace holding this blob (borrowed) */
} rc_blob;

/* New workspace; parent is borrowed and must outlive it (may be NULL).
 * Returns NULL only when out of memory. Owned by the caller (rc_ws_free). */
RC_INTERNAL rc_workspace *rc_ws_new(rc_workspace *parent);
RC_INTERNAL void rc_ws_free(rc_workspace *ws);
/* Removes all blobs and nets. Pointers to them become invalid. */
RC_INTERNAL void rc_ws_reset(rc_workspace *ws);
RC_INTERNAL rc_workspace *rc_ws_parent(rc_workspace *ws);
/* Lookup in ws, then its parents. Borrowed; NULL if absent. */
RC_INTERNAL rc_blob *rc_ws_get(rc_workspace *ws, const char *name);
RC_INTERNAL rc_blob *rc_ws_get_local(rc_workspace *ws, const char *name);
/* Existing blob (ws or a parent, as Caffe2's CreateBlob), else a new empty
 * local blob. Borrowed. NULL + RC_ERR_MEMORY on allocation failure. */
RC_INTERNAL rc_blob *rc_ws_create(rc_workspace *ws, const char *name, rc_err *err);
/* Existing local blob or a new local one (ignores parents). Borrowed. */
RC_INTERNAL rc_blob *rc_ws_create_local(rc_workspace *ws, const char *name, rc_err *err);
/* Number of local blobs and the i-th local blob (insertion order); borrowed. */
RC_INTERNAL int rc_ws_num_blobs(const rc_workspace *ws);
RC_INTERNAL rc_blob *rc_ws_blob_at(const rc_workspace *ws, int i);
/* Nets held by a workspace (CreateNet/RunNet by name). rc_ws_add_net takes
 * ownership of net; fails with RC_ERR_VALUE if a net of that name exists and
 * overwrite is 0. rc_ws_get_net: borrowed or NULL. */
RC_INTERNAL rc_status rc_ws_add_net(rc_workspace *ws, const char *name, rc_net *net, int overwrite, rc_err *err);
RC_INTERNAL rc_net *rc_ws_get_net(rc_workspace *ws, const char *name);
RC_INTERNAL int rc_ws_num_nets(const rc_workspace *ws);
RC_INTERNAL const char *rc_ws_net_name_at(const rc_workspace *ws, int i);
RC_INTERNAL void rc_ws_remove_net(rc_workspace *ws, const char *name);

/* The print log: text that ops meant for the user (Print, ops/print.c) append
 * while a net runs. C never prints: the binding takes the text after every
 * call that can run ops and writes it to Python's sys.stderr. The log lives in
 * the root of a workspace tree (the workspace without a parent): an op in a
 * RecurrentNetwork step workspace appends to the log of the workspace that runs
 * the outer net. Appends are guarded by the root's mutex (the RNN executor runs
 * step ops of different timesteps on worker threads): a piece of text appended
 * in one call stays whole, in the order the appends happened. Bounded: text
 * that would take the log past RC_PRINT_LOG_MAX bytes is dropped (counted), so
 * a Print in a long loop cannot exhaust memory; the binding reports the count.
 * rc_ws_log_append: RC_ERR_MEMORY when the log cannot grow (the text is not
 * appended). rc_ws_log_take: the text (owned by the caller, free(); NULL when
 * empty, *n = 0) and the dropped counts since the last take; empties the log. */
#define RC_PRINT_LOG_MAX ((size_t)16 << 20)
RC_INTERNAL rc_status rc_ws_log_append(rc_workspace *ws, const char *text, size_t n, rc_err *err);
RC_INTERNAL char *rc_ws_log_take(rc_workspace *ws, size_t *n, int64_t *dropped_pieces, int64_t *dropped_bytes);

/* The root folder (Caffe2's Workspace::RootFolder): where Save, Load and
 * Print's to_file put files named by relative paths. It belongs to the root of
 * a workspace tree (step workspaces use their outer workspace's); "." unless
 * set. rc_ws_set_root_folder copies root (NULL or "." restores "."); set it
 * only while no op of the tree is being created or run. rc_ws_path: the path
 * of file `name` for an op of ws: `name` itself when `absolute` (the op's
 * absolute_path argument), when it starts with '/' (Caffe2 prefixed even
 * those) or when the root folder is ".", else "<root>/<name>". Owned by the
 * caller (free); NULL when out of memory. */
RC_INTERNAL const char *rc_ws_root_folder(rc_workspace *ws);
RC_INTERNAL rc_status rc_ws_set_root_folder(rc_workspace *ws, const char *root, rc_err *err);
RC_INTERNAL char *rc_ws_path(rc_workspace *ws, const char *name, int absolute);

/* ---------------------------------------------------------------- NetDef-like plain data */
typedef enum {
    RC_ARG_F = 1, RC_ARG_I, RC_ARG_S, RC_ARG_FLOATS, RC_ARG_INTS, RC_ARG_STRINGS, RC_ARG_NET, RC_ARG_NETS
} rc_arg_kind;

typedef struct rc_netdef rc_netdef;

typedef struct rc_arg {
    char *name;
    rc_arg_kind kind;
    double f;
    int64_t i;
    char *s;
    int n;                  /* element count of the list kinds */
    float *floats;
    int64_t *ints;
    char **strings;
    rc_netdef *net;         /* RC_ARG_NET */
    rc_netdef **nets;       /* RC_ARG_NETS */
} rc_arg;

typedef struct rc_opdef {
    char *type;
    char *name;             /* may be "" */
    int n_in, n_out, n_ctrl, n_arg;
    char **inputs, **outputs, **control_inputs;
    rc_arg *args;
    int device_type;        /* 0 CPU, 1 CUDA */
} rc_opdef;

struct rc_netdef {
    char *name, *type;
    int n_op, n_ext_in, n_ext_out;
    rc_opdef *ops;
    char **ext_in, **ext_out;
};

/* All of these own their strings/arrays; *_free releases contents (opdef,
 * arg) or the object itself (netdef). */
RC_INTERNAL rc_netdef *rc_netdef_new(const char *name);          /* owned; NULL on OOM */
RC_INTERNAL void rc_netdef_free(rc_netdef *nd);
RC_INTERNAL rc_netdef *rc_netdef_clone(const rc_netdef *nd);     /* owned deep copy; NULL on OOM */
RC_INTERNAL rc_opdef *rc_netdef_add_op(rc_netdef *nd, const char *type); /* borrowed (valid until next add) */
RC_INTERNAL rc_opdef *rc_netdef_insert_op(rc_netdef *nd, int pos, const char *type); /* borrowed */
RC_INTERNAL int rc_netdef_add_ext_in(rc_netdef *nd, const char *blob);  /* 0 ok, -1 OOM; no duplicates */
RC_INTERNAL int rc_netdef_add_ext_out(rc_netdef *nd, const char *blob);
RC_INTERNAL void rc_opdef_free(rc_opdef *od);                  /* frees contents only */
RC_INTERNAL int rc_opdef_copy(rc_opdef *dst, const rc_opdef *src); /* deep copy into dst; -1 OOM */
RC_INTERNAL int rc_opdef_add_input(rc_opdef *od, const char *blob);
RC_INTERNAL int rc_opdef_add_output(rc_opdef *od, const char *blob);
RC_INTERNAL int rc_opdef_add_control_input(rc_opdef *od, const char *blob);
RC_INTERNAL int rc_opdef_set_arg_i(rc_opdef *od, const char *name, int64_t v);
RC_INTERNAL int rc_opdef_set_arg_f(rc_opdef *od, const char *name, double v);
RC_INTERNAL int rc_opdef_set_arg_s(rc_opdef *od, const char *name, const char *v);
RC_INTERNAL void rc_arg_free(rc_arg *a);
RC_INTERNAL int rc_arg_copy(rc_arg *dst, const rc_arg *src);

/* Argument getters. Missing argument -> the default. Wrong kind ->
 * RC_ERR_TYPE naming op type and argument. Pointers returned are borrowed
 * from the opdef. rc_arg_f accepts an int argument too. */
RC_INTERNAL const rc_arg *rc_opdef_arg(const rc_opdef *od, const char *name);
RC_INTERNAL rc_status rc_arg_f(const rc_opdef *od, const char *name, float dflt, float *out, rc_err *err);
RC_INTERNAL rc_status rc_arg_i(const rc_opdef *od, const char *name, int64_t dflt, int64_t *out, rc_err *err);
RC_INTERNAL rc_status rc_arg_s(const rc_opdef *od, const char *name, const char *dflt, const char **out, rc_err *err);
/* List getters: *n = 0 and *out = NULL when absent. An empty list given in
 * any list kind is accepted. */
RC_INTERNAL rc_status rc_arg_ints(const rc_opdef *od, const char *name, const int64_t **out, int *n, rc_err *err);
RC_INTERNAL rc_status rc_arg_floats(const rc_opdef *od, const char *name, const float **out, int *n, rc_err *err);
RC_INTERNAL rc_status rc_arg_strings(const rc_opdef *od, const char *name, char *const **out, int *n, rc_err *err);
/* A NetDef argument (RC_ARG_NET); *out NULL when absent. */
RC_INTERNAL rc_status rc_arg_net(const rc_opdef *od, const char *name, const rc_netdef **out, rc_err *err);

/* ---------------------------------------------------------------- operators */
typedef struct rc_op rc_op;
typedef struct rc_op_schema rc_op_schema;

/* setup: called once when the op is created (blobs resolved); parses
 *   arguments into op->state, checks what can be checked without data.
 * run: computes outputs from inputs. Must be thread-safe across different op
 *   instances (no global mutable state); may allocate only on first run or
 *   when shapes change.
 * free_state: releases op->state (may be NULL). */
struct rc_op_schema {
    const char *type;
    int min_in, max_in;      /* max -1: unbounded */
    int min_out, max_out;
    /* Which (input, output) pairs may name the same blob. NULL: none. */
    int (*allow_inplace)(int in, int out);
    rc_status (*setup)(rc_op *op, rc_err *err);
    rc_status (*run)(rc_op *op, rc_err *err);
    void (*free_state)(void *state);
    const char *doc;         /* one line */
    /* check (may be NULL): validates the dtypes and shapes of the inputs as they
     * are, without touching outputs or data values; run at net creation for the
     * ops whose inputs all hold tensors and are not written by an earlier op of
     * the net. run() performs the same checks. */
    rc_status (*check)(rc_op *op, rc_err *err);
    /* RC_OP_* bits (0 for most ops; tables may leave it out). */
    int flags;
};

/* Refused inside RecurrentNetwork(Gradient) step nets when the op is created
 * (rnn/recurrent_network.c): the RNN executor runs a step net's ops of
 * different timesteps on worker threads, ordered only by the blobs they read
 * and write, so an op with effects on shared state that its inputs do not
 * show (a queue op mutates the queue it only reads as an input) would race. */
#define RC_OP_NOT_IN_STEP_NET 1
/* The op puts an object (a Mutex, a Counter, a queue, a DB reader, step
 * workspaces) into its first / its last output, replacing what the blob held.
 * Every other output of every op receives a tensor: rc_op_run refuses to run
 * an op whose such output blob holds an object (the tensor written there
 * would be hidden behind the object: FetchBlob, the next op and Save read the
 * object). */
#define RC_OP_OBJECT_OUT_FIRST 2
#define RC_OP_OBJECT_OUT_LAST 4
/* The op checks the objects its output blobs hold itself (Load may put a
 * Counter in any output; the queue ops name the record field). */
#define RC_OP_OWN_OBJECT_OUT_CHECKS 8
/* With argument pass_workspace = 1 the op (Python, PythonGradient) may write
 * any blob of its workspace, not only its outputs: the creation check of its
 * net (core/net.c) checks no op after it. rc_op_writes_any_blob tells. */
#define RC_OP_PASS_WORKSPACE 16
RC_INTERNAL int rc_op_writes_any_blob(const rc_op *op);

/* allow_inplace helpers */
RC_INTERNAL int rc_inplace_any(int in, int out);        /* every pair */
RC_INTERNAL int rc_inplace_same_index(int in, int out); /* in == out */
RC_INTERNAL int rc_inplace_first(int in, int out);      /* in == 0 && out == 0 */

/* An instantiated operator, bound to blobs of one workspace. */
struct rc_op {
    const rc_op_schema *schema;
    rc_opdef def;            /* owned copy */
    int index;               /* position in its net (for messages) */
    int timestep;            /* -1 outside recurrent step nets (for messages) */
    uint64_t run_seq;        /* in step nets: the forward RecurrentNetwork run (keys Dropout's masks) */
    rc_workspace *ws;        /* borrowed */
    int n_in, n_out;
    rc_blob **in, **out;     /* owned arrays of borrowed blob pointers */
    void *state;             /* owned by the op, freed by schema->free_state */
};

static inline rc_tensor *rc_in(rc_op *op, int i) { return &op->in[i]->t; }
static inline rc_tensor *rc_out(rc_op *op, int i) { return &op->out[i]->t; }

/* Registry: static tables, looked up by type name. Borrowed; NULL if unknown. */
RC_INTERNAL const rc_op_schema *rc_op_lookup(const char *type);
RC_INTERNAL int rc_op_num_schemas(void);
RC_INTERNAL const rc_op_schema *rc_op_schema_at(int i);

/* Creates an op in ws: looks up the schema, checks arity and in-place pairs,
 * resolves inputs (which must exist in ws or a parent) and creates outputs,
 * then calls setup. index is used in messages. Owned by caller (rc_op_free). */
RC_INTERNAL rc_op *rc_op_create(rc_workspace *ws, const rc_opdef *def, int index, rc_err *err);
RC_INTERNAL void rc_op_free(rc_op *op);
/* Runs the op; on failure the message is prefixed with "op <Type> #<index>". */
RC_INTERNAL rc_status rc_op_run(rc_op *op, rc_err *err);
/* Helpers for kernels: errors that name the op and the blob. */
RC_INTERNAL rc_status rc_op_fail(rc_op *op, rc_err *err, rc_status code, const char *fmt, ...) RC_PRINTF(4, 5);
/* Checks input i has dtype dt and data (is not an empty/unfed blob); names the blob on failure. */
RC_INTERNAL rc_status rc_check_input(rc_op *op, int i, rc_dtype dt, rc_err *err);
/* Checks input i has ndim in [lo, hi]. */
RC_INTERNAL rc_status rc_check_ndim(rc_op *op, int i, int lo, int hi, rc_err *err);
RC_INTERNAL const char *rc_in_name(const rc_op *op, int i);
RC_INTERNAL const char *rc_out_name(const rc_op *op, int i);

/* ---------------------------------------------------------------- nets */
/* Creates every op of def in ws, in order (an op's outputs exist before the
 * next op is created). Owned by caller (rc_net_free). */
RC_INTERNAL rc_net *rc_net_create(rc_workspace *ws, const rc_netdef *def, rc_err *err);
/* RC_ERR_VALUE naming the net ("<what> '<name>'", `what` NULL: "net", or
 * e.g. "the forward step net"), its type and the accepted ones
 * unless def->type is a net type Caffe2 accepted (or ""; see net.c). Every net
 * runs its ops in order whatever its type. rc_net_create calls it first. */
RC_INTERNAL rc_status rc_net_check_type(const rc_netdef *def, const char *what, rc_err *err);
RC_INTERNAL void rc_net_free(rc_net *net);
RC_INTERNAL rc_status rc_net_run(rc_net *net, rc_err *err);
/* Caffe2's BenchmarkNet (SimpleNet::TEST_Benchmark): warmup_runs (>= 0) runs,
 * then main_runs (>= 1) timed runs of the whole net, then, with
 * run_individual, main_runs more runs timing each op on its own. out (1 +
 * rc_net_num_ops entries, caller's) gets the mean milliseconds per run of the
 * whole net in out[0] and of op i in out[1 + i] (0 without run_individual).
 * A failing run stops it with the op's error, the phase and run in front. */
RC_INTERNAL rc_status rc_net_benchmark(rc_net *net, int64_t warmup_runs, int64_t main_runs, int run_individual,
                                       double *out, rc_err *err);
RC_INTERNAL int rc_net_num_ops(const rc_net *net);
RC_INTERNAL rc_op *rc_net_op(const rc_net *net, int i);              /* borrowed */
RC_INTERNAL const rc_netdef *rc_net_def(const rc_net *net);          /* borrowed */

/* ---------------------------------------------------------------- runtime flags & interrupts */
/* caffe2_rnn_executor (default 1, env RECURRENT_RNN_EXECUTOR), caffe2_rnn_executor_num_threads (0 = cores). */
RC_INTERNAL int rc_flag_rnn_executor(void);
RC_INTERNAL void rc_flag_set_rnn_executor(int on);
RC_INTERNAL int rc_flag_rnn_executor_threads(void);
RC_INTERNAL void rc_flag_set_rnn_executor_threads(int n);
/* caffe2_rnn_executor_min_op_us (env RECURRENT_RNN_EXECUTOR_MIN_OP_US), kept in
 * nanoseconds: a RecurrentNetwork op whose executor is enabled first runs
 * serially and times its step ops; if they average less than this, it stays
 * serial (the executor's per-op cost would outweigh the parallelism).
 * 0: always use the executor. */
#define RC_RNN_EXECUTOR_MIN_OP_NS_DEFAULT 4000
RC_INTERNAL int64_t rc_flag_rnn_executor_min_op_ns(void);
RC_INTERNAL void rc_flag_set_rnn_executor_min_op_ns(int64_t ns);
/* caffe2_rnn_executor_spin_us (env RECURRENT_RNN_EXECUTOR_SPIN_US), kept in
 * nanoseconds: how long a thread that runs out of work in a parallel run (an
 * executor worker, a helper of the packed products, a caller waiting for
 * them) keeps polling for more before it sleeps on a condition variable.
 * Waking a sleeping thread costs microseconds on bare metal and tens of them
 * in some VMs, more than a step op lasts; a poll sees new work within a
 * fraction of a microsecond. 0: always sleep. Threads never poll between
 * runs, nor when a pool has more threads than the process has cores. */
#define RC_SPIN_NS_DEFAULT 100000
#define RC_SPIN_US_MAX 100000.0
RC_INTERNAL int64_t rc_flag_spin_ns(void);
RC_INTERNAL void rc_flag_set_spin_ns(int64_t ns);
/* caffe2_rnn_executor_help (env RECURRENT_RNN_EXECUTOR_HELP, default 1):
 * RNN executor threads with nothing to run help split the products of the
 * instances running (rnn/executor.c "Helping"). Same bits either way. */
RC_INTERNAL int rc_flag_rnn_executor_help(void);
RC_INTERNAL void rc_flag_set_rnn_executor_help(int on);
/* Polls *word (atomically, acquire) until it differs from value or budget_ns
 * have passed, yielding the core every few dozen polls; returns whether it
 * changed. The caller re-checks its condition under its lock either way. */
RC_INTERNAL int rc_spin_while(const int *word, int value, int64_t budget_ns);
/* The same with mu (held by the caller) released while polling and held
 * again on return; returns whether *word differs from value then. The way a
 * pool's waiter polls before it sleeps on a condition variable of mu. */
RC_INTERNAL int rc_spin_while_unlocked(pthread_mutex_t *mu, const int *word, int value, int64_t budget_ns);
/* Reads a number of microseconds in [0, max_us] from the environment variable
 * name, in nanoseconds; def when unset or unparsable. */
RC_INTERNAL int64_t rc_env_us_as_ns(const char *name, int64_t def, double max_us);
/* 1 when environment variable `name` is 0, false or off (a switch turned off). */
RC_INTERNAL int rc_env_off(const char *name);
/* rnn_executor_trace: RecurrentNetwork ops record per-(timestep, op) timings
 * into "<step_workspaces blob>_trace" (int32 K x 5) after each run. */
/* Usable cores of this process (sched_getaffinity). */
RC_INTERNAL int rc_num_cores(void);
/* verify_packs: RecurrentNetwork(Gradient) checks every step-weight pack it
 * keeps from an earlier run against a fresh pack and fails on a difference
 * (tests and fuzzing turn it on: it catches a write that skipped
 * rc_tensor_touch). Off unless RECURRENT_VERIFY_PACKS is set (and not to
 * 0 / false / off) when first read. */
RC_INTERNAL int rc_flag_verify_packs(void);
RC_INTERNAL void rc_flag_set_verify_packs(int on);
RC_INTERNAL int rc_flag_rnn_trace(void);
RC_INTERNAL void rc_flag_set_rnn_trace(int on);
/* Interrupt request (set from a signal check in the binding; polled between
 * ops and timesteps). rc_interrupt_pending is also true once shutdown is
 * requested (below), so runs stop for either; rc_interrupt_requested and
 * rc_interrupt_clear concern the interrupt only.
 * An interrupt request stops only the runs of threads whose interrupt scope is
 * on: rc_interrupt_scope(on) sets the calling thread's (returning the previous
 * value); it is on by default (a C program's runs). The binding turns it off
 * for every call but the main thread's runs that stand in for Python's SIGINT
 * handler, since Python interrupts the main thread only: a Ctrl-C then never
 * stops another thread's run. The RNN executor's workers take the scope of the
 * thread that started the run. */
RC_INTERNAL void rc_interrupt_request(void);
RC_INTERNAL int rc_interrupt_scope(int on);
RC_INTERNAL int rc_interrupt_in_scope(void);
RC_INTERNAL int rc_interrupt_pending(void);
RC_INTERNAL int rc_interrupt_requested(void);
RC_INTERNAL void rc_interrupt_clear(void);
/* Process shutdown (the binding's atexit handler): every run stops at its
 * next op or timestep with RC_ERR_INTERRUPT, for good; rc_calls_enter/leave
 * count the core calls in flight (made by other threads) so the handler can
 * wait for them before the process exits under them. */
RC_INTERNAL void rc_shutdown_request(void);
RC_INTERNAL int rc_shutdown_pending(void);

/* The Python op's hook (ops/pyfunc.c): called by a Python / PythonGradient op
 * run, in the thread running the net, with the GIL released; it computes the
 * op's outputs. Installed once by the Python binding; NULL: the op fails. */
typedef rc_status (*rc_pyop_hook)(rc_op *op, rc_err *err);
RC_INTERNAL void rc_set_pyop_hook(rc_pyop_hook hook);
/* The Python op's instance hooks: build, called when an op is created (in the
 * creating thread, GIL released), gives the op its own function when its
 * token names a builder (net.Python((builder, args, kwargs))): *instance > 0
 * names it, 0 when the token names a function (or none: the run reports
 * that). release drops instance when the op is freed. Installed with the
 * run hook; NULL: no instances. rc_pyop_instance: the op's (0 if none). */
typedef rc_status (*rc_pyop_build_hook)(rc_op *op, const char *token, int64_t *instance, rc_err *err);
typedef void (*rc_pyop_release_hook)(int64_t instance);
RC_INTERNAL void rc_set_pyop_instance_hooks(rc_pyop_build_hook build, rc_pyop_release_hook release);
RC_INTERNAL int64_t rc_pyop_instance(const rc_op *op);
RC_INTERNAL void rc_calls_enter(void);
RC_INTERNAL void rc_calls_leave(void);
RC_INTERNAL int rc_calls_in_flight(void);

/* ---------------------------------------------------------------- BLAS */
/* Row-major C[M,N] = alpha * op(A) op(B) + beta * C via OpenBLAS sgemm. */
RC_INTERNAL void rc_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                          const float *A, const float *B, float beta, float *C);
/* OpenBLAS's (process-wide, for this library's private OpenBLAS instance)
 * thread count. The executor sets 1 for the length of a parallel run so its
 * workers do not oversubscribe the cores, and restores it afterwards. */
RC_INTERNAL int rc_blas_num_threads(void);
/* Bracket a parallel executor run: OpenBLAS runs one thread per call while any
 * executor is running (reference-counted across threads). */
RC_INTERNAL void rc_blas_executor_enter(void);
RC_INTERNAL void rc_blas_executor_leave(void);
RC_INTERNAL void rc_blas_set_num_threads(int n);
/* What the BLAS says of itself: OpenBLAS's build configuration and the core
 * type whose kernels it runs (openblas_get_config / openblas_get_corename);
 * "unknown" for a BLAS without them. Static strings, owned by the BLAS. */
RC_INTERNAL const char *rc_blas_config(void);
RC_INTERNAL const char *rc_blas_corename(void);

/* Step loops (RecurrentNetwork(Gradient), serial or with the executor):
 * OpenBLAS's results depend on its thread count (measured with its AVX2
 * kernels), and the executor runs it at one thread per worker. So while any
 * step loop runs, OpenBLAS is at one thread (rc_blas_executor_enter), and
 * rc_sgemm called from a thread inside a step loop multiplies in fixed
 * chunks (a function of the shape and of the process's core count, read
 * once), each one single-threaded OpenBLAS
 * call, spread over that thread's step threads: the OpenBLAS thread count
 * found when the loop started for the serial loop (the helper threads of
 * rc_par_run), 1 for an executor worker (whose chunks the executor's idle
 * threads may take: rc_step_split_threads). Same bits in either mode.
 * rc_step_blas_enter starts a loop in the calling thread and returns what
 * rc_step_blas_leave needs to end it (loops nest). rc_step_blas_set_threads
 * sets the calling thread's step threads (the executor: 1 while its workers
 * run) and returns the previous value; rc_step_blas_threads reads it (0:
 * not in a step loop). */
RC_INTERNAL int rc_step_blas_enter(void);
RC_INTERNAL void rc_step_blas_leave(int prev);
RC_INTERNAL int rc_step_blas_set_threads(int n);
RC_INTERNAL int rc_step_blas_threads(void);
/* The threads an op outside step loops may split its own work over
 * (rc_par_run; the convolutions' images, pooling's planes): OpenBLAS's
 * thread count, the library's thread budget; 1 inside a step loop, whose
 * threads (the executor's or the serial loop's) are already busy. */
RC_INTERNAL int rc_op_split_threads(void);

/* Runs fn(ctx, p, parts) for p = 0..parts-1 over up to `threads` threads:
 * the caller and persistent helper threads (kernels/packed_gemm.c). Returns
 * when every part is done; a concurrent call (helpers busy) runs its parts
 * on its caller alone. */
typedef void (*rc_part_fn)(const void *ctx, int part, int parts);
RC_INTERNAL void rc_par_run(int threads, int parts, rc_part_fn fn, const void *ctx);
/* The parts a piece of work (`work` units, part_min of them the least worth
 * a part) of the calling thread is split into: its step threads
 * (rc_step_blas_threads: 0 outside step loops); inside an RNN executor's run,
 * where the worker runs its products alone, work / part_min parts (1 below
 * part_min, then 2 to RC_HELP_MAX_PARTS), which the executor's idle
 * threads help with (rnn/executor.c "Helping"; 1 when
 * rc_flag_rnn_executor_help is off, and below 4 parts while no executor
 * thread polls for work). The
 * split sites (rc_gemm_packed, rc_sgemm, the cells) ask this. */
#define RC_HELP_MAX_PARTS 16
RC_INTERNAL int rc_step_split_threads(double work, double part_min);
/* rc_par_run's path inside an executor's run: runs the parts on the calling
 * thread and the executor's idle threads; returns 0 (nothing run) when the
 * calling thread works in no executor's run. */
RC_INTERNAL int rc_step_help_run(int parts, rc_part_fn fn, const void *ctx);
/* Parts run so far by an executor thread helping another's product (tests). */
RC_INTERNAL int64_t rc_rnn_exec_help_parts(void);
/* Products below this many multiply-adds are not split over rc_par_run's
 * threads (a helper's wake-up costs microseconds). */
#define RC_PAR_SPLIT_MIN (1 << 20)
/* ops/rnn_units.c: LSTMUnit / GRUUnit runs (and their gradients) split by
 * rows over a serial step loop's threads so far (tests check the split). */
RC_INTERNAL int64_t rc_unit_splits(void);

#ifdef __cplusplus
}
#endif
#endif
