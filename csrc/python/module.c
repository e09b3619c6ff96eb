/* recurrent._C: the thin CPython + NumPy binding over the C core.
 *
 * Each entry point parses arguments, converts plain-data nets (tuples built by
 * recurrent/workspace.py) into rc_netdef, releases the GIL around one core
 * call, and maps the status to a Python exception. Workers never see Python
 * objects. A workspace refuses concurrent use from two Python threads
 * (RuntimeError) instead of racing; while a background plan runs in it, other
 * threads' blob calls wait for its running net instead (ws_wait_bg). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "../core/rc_core.h"
#include "../kernels/packed_gemm.h"
#include "../rnn/rnn_internal.h"

/* ---------------------------------------------------------------- errors */
/* The class recurrent.errors.<name> that a core error of that builtin kind is
 * raised as (a subclass of the builtin and of RuntimeError, as every op failure
 * was a RuntimeError in Caffe2), or the builtin itself when that module cannot
 * be imported or does not hold such a class (interpreter shutdown, no memory).
 * Returns a new reference; never fails, never leaves an exception set. */
static PyObject *core_error_type(PyObject *builtin)
{
    PyObject *mod = PyImport_ImportModule("recurrent.errors");
    PyObject *t = mod ? PyObject_GetAttrString(mod, ((PyTypeObject *)builtin)->tp_name) : NULL;
    Py_XDECREF(mod);
    if (t && PyExceptionClass_Check(t) && PyObject_IsSubclass(t, builtin) == 1 &&
        PyObject_IsSubclass(t, PyExc_RuntimeError) == 1)
        return t;
    PyErr_Clear();
    Py_XDECREF(t);
    Py_INCREF(builtin);
    return builtin;
}

/* PyErr_Format with core_error_type(builtin): for the workspace's own errors
 * (a missing blob or net, an array FeedBlob cannot store), which Caffe2 also
 * raised as RuntimeError. Returns NULL. */
static PyObject *raise_ws(PyObject *builtin, const char *fmt, ...)
{
    PyObject *cls = core_error_type(builtin);
    va_list ap;
    va_start(ap, fmt);
    PyErr_FormatV(cls, fmt, ap);
    va_end(ap);
    Py_DECREF(cls);
    return NULL;
}

static PyObject *raise_err(const rc_err *err)
{
    PyObject *type;
    switch (err->code) {
    case RC_ERR_VALUE: type = PyExc_ValueError; break;
    case RC_ERR_TYPE: type = PyExc_TypeError; break;
    case RC_ERR_KEY: type = PyExc_KeyError; break;
    case RC_ERR_INDEX: type = PyExc_IndexError; break;
    case RC_ERR_MEMORY: type = PyExc_MemoryError; break;
    case RC_ERR_INTERRUPT: type = PyExc_KeyboardInterrupt; break;
    case RC_ERR_IO: type = PyExc_OSError; break;
    default: type = PyExc_RuntimeError; break;
    }
    if (err->code == RC_ERR_INTERRUPT && rc_shutdown_pending())
        return PyErr_Format(PyExc_RuntimeError, "recurrent is shut down (the interpreter is exiting): %s", err->msg);
    if (type == PyExc_KeyboardInterrupt || type == PyExc_RuntimeError) {
        PyErr_SetString(type, err->msg[0] ? err->msg : "unknown error");
        return NULL;
    }
    PyObject *cls = core_error_type(type);
    PyErr_SetString(cls, err->msg[0] ? err->msg : "unknown error");
    Py_DECREF(cls);
    return NULL;
}

/* A core call with the GIL released, counted for _shutdown (which waits for
 * the calls of other threads before the process exits under them). An
 * interrupt request does not stop it (rc_interrupt_scope 0): only the calls
 * made with CORE_CALL_BEGIN_GUARDED while a sig_guard stands in for Python's
 * SIGINT handler on the main thread are stopped by one (Python interrupts the
 * main thread only; a Ctrl-C there must not stop another thread's run). */
#define CORE_CALL_BEGIN_GUARDED(g)                                                                       \
    rc_calls_enter();                                                                                    \
    Py_BEGIN_ALLOW_THREADS                                                                               \
    int core_call_scope_ = rc_interrupt_scope((g)->active);
#define CORE_CALL_BEGIN                                                                                  \
    rc_calls_enter();                                                                                    \
    Py_BEGIN_ALLOW_THREADS                                                                               \
    int core_call_scope_ = rc_interrupt_scope(0);
#define CORE_CALL_END                                                                                    \
    rc_interrupt_scope(core_call_scope_);                                                                \
    rc_calls_leave();                                                                                    \
    Py_END_ALLOW_THREADS

/* ---------------------------------------------------------------- tuple -> rc_netdef */
static int conv_netdef(PyObject *o, rc_netdef **out);

/* MemoryError naming what was being converted; returns -1. */
static int conv_nomem(const char *what)
{
    PyErr_Format(PyExc_MemoryError, "out of memory converting %s", what);
    return -1;
}

/* The pending exception, normalized (a new reference; NULL when none), now cleared; its traceback stays on
 * it, as Python 3.12's PyErr_GetRaisedException gives it. */
static PyObject *take_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    if (ev && tb) PyException_SetTraceback(ev, tb);
    Py_XDECREF(et);
    Py_XDECREF(tb);
    return ev;
#endif
}

/* Raises ev (take_exception's, or NULL: nothing) again; steals the reference. */
static void restore_exception(PyObject *ev)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(ev);
#else
    if (ev) PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(ev)), ev, PyException_GetTraceback(ev));
#endif
}

/* Prefixes the pending exception's message with "net 'NET': op #I (TYPE): ",
 * or "op TYPE: " when net is NULL (one op converted alone: RunOperatorOnce),
 * keeping its type (nested step nets chain their prefixes). If even that
 * fails (no memory), the exception of that failure is raised. */
static void conv_context(const char *net, Py_ssize_t i, const char *type)
{
    PyObject *ev = take_exception();
    PyObject *et = ev ? Py_NewRef((PyObject *)Py_TYPE(ev)) : NULL;
    PyObject *msg = ev ? PyObject_Str(ev) : NULL;
    if (msg && !net)
        PyErr_Format(et, "op %s: %U", type, msg);
    else if (msg)
        PyErr_Format(et, "net '%s': op #%zd%s%s%s: %U", net, i, type ? " (" : "", type ? type : "", type ? ")" : "",
                     msg);
    else if (!PyErr_Occurred())
        PyErr_SetString(PyExc_MemoryError, "out of memory converting a net");
    Py_XDECREF(msg);
    Py_XDECREF(et);
    Py_XDECREF(ev);
}

/* The UTF-8 of the str o (owned by o), or NULL with an exception set: the core keeps C strings, so a
 * NUL inside ("a\0b") would silently cut it short; a str that has no UTF-8 (a lone surrogate) is the
 * same core ValueError, naming what. */
static const char *utf8_no_nul(PyObject *o, const char *what)
{
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (!s && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        /* a lone surrogate: os.fsdecode of bytes that are not UTF-8, or a surrogate escape */
        PyErr_Clear();
        PyObject *cls = core_error_type(PyExc_ValueError);
        PyErr_Format(cls, "%s: %R is not valid UTF-8 (it holds a lone surrogate, as bytes that are not UTF-8 "
                     "decoded with surrogate escapes do), which this runtime does not take in names and string "
                     "arguments", what, o);
        Py_DECREF(cls);
        return NULL;
    }
    if (s && strlen(s) != (size_t)len) {
        PyObject *cls = core_error_type(PyExc_ValueError);
        PyErr_Format(cls, "%s: %R contains a NUL character, which this runtime does not take in names and "
                     "string arguments", what, o);
        Py_DECREF(cls);
        return NULL;
    }
    return s;
}

/* The workspace methods' name arguments, for "O&": a str without NUL (what names the argument kind in
 * the error: "blob name: 'a\x00b' contains a NUL character ..."); *out is borrowed from o. Returns 1, or 0
 * with an exception set. */
static int conv_name(PyObject *o, const char **out, const char *what)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, got %.100s", what, Py_TYPE(o)->tp_name);
        return 0;
    }
    return (*out = utf8_no_nul(o, what)) != NULL;
}
static int conv_blob_name(PyObject *o, void *out) { return conv_name(o, out, "blob name"); }
static int conv_net_name(PyObject *o, void *out) { return conv_name(o, out, "net name"); }
static int conv_root_name(PyObject *o, void *out) { return conv_name(o, out, "root folder"); }
static int conv_flag_name(PyObject *o, void *out) { return conv_name(o, out, "flag name"); }
static int conv_op_type_name(PyObject *o, void *out) { return conv_name(o, out, "op type"); }

static int conv_str(PyObject *o, char **out, const char *what)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, got %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *s = utf8_no_nul(o, what);
    if (!s) return -1;
    if (!(*out = strdup(s))) return conv_nomem(what);
    return 0;
}

static int conv_strlist(PyObject *o, char ***out, int *n, const char *what)
{
    PyObject *seq = PySequence_Fast(o, what);
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    *out = calloc((size_t)k + 1, sizeof(char *));
    *n = 0;
    if (!*out) { Py_DECREF(seq); return conv_nomem(what); }
    for (Py_ssize_t i = 0; i < k; i++) {
        if (conv_str(PySequence_Fast_GET_ITEM(seq, i), &(*out)[i], what)) { Py_DECREF(seq); return -1; }
        *n = (int)i + 1;
    }
    Py_DECREF(seq);
    return 0;
}

static int conv_arg(PyObject *t, rc_arg *a)
{
    PyObject *name, *kind, *val;
    if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "UUO", &name, &kind, &val)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "argument must be a (name, kind, value) tuple");
        return -1;
    }
    if (conv_str(name, &a->name, "argument name")) return -1;
    const char *k = PyUnicode_AsUTF8(kind);
    if (!k) return -1;
    if (!strcmp(k, "f")) {
        a->kind = RC_ARG_F;
        a->f = PyFloat_AsDouble(val);
        if (a->f == -1.0 && PyErr_Occurred()) return -1;
    } else if (!strcmp(k, "i")) {
        a->kind = RC_ARG_I;
        long long v = PyLong_AsLongLong(val);
        if (v == -1 && PyErr_Occurred()) return -1;
        a->i = v;
    } else if (!strcmp(k, "s")) {
        a->kind = RC_ARG_S;
        if (conv_str(val, &a->s, "string argument")) return -1;
    } else if (!strcmp(k, "floats") || !strcmp(k, "ints")) {
        int is_f = k[0] == 'f';
        a->kind = is_f ? RC_ARG_FLOATS : RC_ARG_INTS;
        PyObject *seq = PySequence_Fast(val, "list argument");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n > INT32_MAX) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "argument list too long"); return -1; }
        a->n = (int)n;
        if (is_f) a->floats = malloc(sizeof(float) * (size_t)(n + 1));
        else a->ints = malloc(sizeof(int64_t) * (size_t)(n + 1));
        if (is_f ? !a->floats : !a->ints) { Py_DECREF(seq); return conv_nomem("list argument"); }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
            if (is_f) {
                double d = PyFloat_AsDouble(it);
                if (d == -1.0 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
                a->floats[i] = (float)d;
            } else {
                long long v = PyLong_AsLongLong(it);
                if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
                a->ints[i] = v;
            }
        }
        Py_DECREF(seq);
    } else if (!strcmp(k, "strings")) {
        a->kind = RC_ARG_STRINGS;
        if (conv_strlist(val, &a->strings, &a->n, "list of strings argument")) return -1;
    } else if (!strcmp(k, "n")) {
        a->kind = RC_ARG_NET;
        if (conv_netdef(val, &a->net)) return -1;
    } else if (!strcmp(k, "nets")) {
        a->kind = RC_ARG_NETS;
        PyObject *seq = PySequence_Fast(val, "list of nets");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        a->nets = calloc((size_t)n + 1, sizeof *a->nets);
        if (!a->nets) { Py_DECREF(seq); return conv_nomem("list of nets"); }
        for (Py_ssize_t i = 0; i < n; i++) {
            a->n = (int)i + 1; /* before: a net that fails half-way is freed with the others (rc_arg_free) */
            if (conv_netdef(PySequence_Fast_GET_ITEM(seq, i), &a->nets[i])) { Py_DECREF(seq); return -1; }
        }
        Py_DECREF(seq);
    } else {
        PyErr_Format(PyExc_TypeError, "argument '%s': unknown kind '%s'", a->name, k);
        return -1;
    }
    return 0;
}

/* op tuple: (type, name, inputs, outputs, control_inputs, args, device_type) */
static int conv_opdef(PyObject *t, rc_opdef *od)
{
    PyObject *type, *name, *ins, *outs, *ctrl, *args;
    int dev = 0;
    memset(od, 0, sizeof *od);
    if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "UUOOOOi", &type, &name, &ins, &outs, &ctrl, &args, &dev)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "operator must be a 7-tuple");
        return -1;
    }
    od->device_type = dev;
    if (conv_str(type, &od->type, "op type") || conv_str(name, &od->name, "op name")) return -1;
    if (conv_strlist(ins, &od->inputs, &od->n_in, "op inputs")) return -1;
    if (conv_strlist(outs, &od->outputs, &od->n_out, "op outputs")) return -1;
    if (conv_strlist(ctrl, &od->control_inputs, &od->n_ctrl, "op control inputs")) return -1;
    PyObject *seq = PySequence_Fast(args, "op args");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    od->args = calloc((size_t)n + 1, sizeof *od->args);
    if (!od->args) { Py_DECREF(seq); return conv_nomem("op args"); }
    for (Py_ssize_t i = 0; i < n; i++) {
        od->n_arg = (int)i + 1;
        if (conv_arg(PySequence_Fast_GET_ITEM(seq, i), &od->args[i])) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    return 0;
}

/* net tuple: (name, type, ops, external_inputs, external_outputs) */
static int conv_netdef(PyObject *t, rc_netdef **out)
{
    PyObject *name, *type, *ops, *ein, *eout;
    *out = NULL;
    if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "UUOOO", &name, &type, &ops, &ein, &eout)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "net must be a 5-tuple");
        return -1;
    }
    const char *nname = utf8_no_nul(name, "net name");
    if (!nname) return -1;
    rc_netdef *nd = rc_netdef_new(nname);
    if (!nd) return conv_nomem("a net");
    *out = nd;
    free(nd->type);
    nd->type = NULL;
    if (conv_str(type, &nd->type, "net type")) return -1;
    PyObject *seq = PySequence_Fast(ops, "net ops");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    nd->ops = calloc((size_t)n + 1, sizeof *nd->ops);
    if (!nd->ops) { Py_DECREF(seq); return conv_nomem("net ops"); }
    for (Py_ssize_t i = 0; i < n; i++) {
        nd->n_op = (int)i + 1;
        if (conv_opdef(PySequence_Fast_GET_ITEM(seq, i), &nd->ops[i])) {
            Py_DECREF(seq);
            conv_context(nname, i, nd->ops[i].type);
            return -1;
        }
    }
    Py_DECREF(seq);
    if (conv_strlist(ein, &nd->ext_in, &nd->n_ext_in, "external inputs")) return -1;
    if (conv_strlist(eout, &nd->ext_out, &nd->n_ext_out, "external outputs")) return -1;
    return 0;
}

/* ---------------------------------------------------------------- interrupts */
/* While the GIL is released on the main thread, SIGINT is routed to the core's
 * interrupt flag (polled between ops and timesteps); the previous handler is
 * restored afterwards and Python's own SIGINT handling runs (KeyboardInterrupt
 * by default). Python tells us whether we are on the main thread. We stand in
 * only for Python's default handler (signal.default_int_handler): when SIGINT
 * is ignored (SIG_IGN, e.g. a background job) or handled by the program's own
 * handler, the run is not interrupted and that handler keeps its meaning. */
static void on_sigint(int sig)
{
    (void)sig;
    rc_interrupt_request();
}

typedef struct {
    int active;
    struct sigaction old;
} sig_guard;

/* 1 if Python's SIGINT handler is signal.default_int_handler (GIL held; never raises). */
static int sigint_is_default(void)
{
    int r = 0;
    PyObject *mod = PyImport_ImportModule("signal");
    PyObject *h = mod ? PyObject_CallMethod(mod, "getsignal", "i", SIGINT) : NULL;
    PyObject *d = mod ? PyObject_GetAttrString(mod, "default_int_handler") : NULL;
    if (h && d) r = h == d;
    Py_XDECREF(h);
    Py_XDECREF(d);
    Py_XDECREF(mod);
    PyErr_Clear();
    return r;
}

static void sig_guard_enter(sig_guard *g, int main_thread)
{
    g->active = 0;
    if (!main_thread || !sigint_is_default()) return;
    rc_interrupt_clear();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, &g->old) == 0) g->active = 1;
}

/* Returns 1 if an interrupt arrived while guarded. */
static int sig_guard_exit(sig_guard *g)
{
    if (!g->active) return 0;
    sigaction(SIGINT, &g->old, NULL);
    int hit = rc_interrupt_requested();
    rc_interrupt_clear();
    return hit;
}

/* Raises the exception for a finished core call (GIL held). */
static PyObject *finish(rc_status st, rc_err *err, int interrupted)
{
    if (st == RC_ERR_INTERRUPT && !interrupted && rc_shutdown_pending()) return raise_err(err);
    if (interrupted || st == RC_ERR_INTERRUPT) {
        PyErr_SetInterruptEx(SIGINT);
        if (PyErr_CheckSignals() < 0) return NULL;
        if (st == RC_OK) Py_RETURN_NONE;
        if (st == RC_ERR_INTERRUPT) {
            PyErr_SetString(PyExc_KeyboardInterrupt, err->msg);
            return NULL;
        }
    }
    if (st) return raise_err(err);
    Py_RETURN_NONE;
}

/* The end of a net call (create, run, benchmark) that raised (ret NULL) because of op err->op_pos's
 * failure (st; op_pos >= 0): the pending exception gets that position as its `op_position` attribute, which
 * workspace._in_net reads for the traceback note (the workspace's last_failed_op() may have changed since:
 * another thread's call on it between the raise and the read). An exception that takes no attributes keeps
 * none. Returns ret. */
static PyObject *tag_op_position(PyObject *ret, rc_status st, const rc_err *err)
{
    if (ret || !st || err->op_pos < 0 || !PyErr_Occurred()) return ret;
    PyObject *ev = take_exception();
    PyObject *pos = ev ? PyLong_FromLong(err->op_pos) : NULL;
    if (!pos || PyObject_SetAttrString(ev, "op_position", pos) < 0) PyErr_Clear();
    Py_XDECREF(pos);
    restore_exception(ev);
    return NULL;
}

/* ---------------------------------------------------------------- Workspace type */
typedef struct WorkspaceObject WorkspaceObject;
struct WorkspaceObject {
    PyObject_HEAD
    rc_workspace *ws;              /* owned */
    int busy;                      /* guarded by the GIL, as the fields below */
    unsigned long owner;           /* the thread holding it (PyThread_get_thread_ident) while busy */
    int in_pyop;                   /* Python op functions of its running net now being called */
    int pyop_writes;               /* the function being called may write blobs (pass_workspace=1) */
    WorkspaceObject *prev_running; /* the owner thread's tls_running before this one was taken */
    int last_failed_op;            /* position of the op that failed in the last net call (create, run,
                                    * benchmark), -1 when that call succeeded or none failed in a net */
    int bg_active;                 /* a background plan runs in it (workspace.RunPlanInBackground) */
    unsigned long bg_owner;        /* the thread running that plan */
    int bg_waiters;                /* other threads' blob calls waiting for the plan's running net */
};

/* The workspace whose net or operator this thread is running (the one taken
 * last), so that the Python op's hook can lend it to the function: borrowed,
 * NULL when none. */
static _Thread_local WorkspaceObject *tls_running;

/* Inside a Python op's function, called in the thread running the net of
 * this workspace: it may read blobs, and write them when made with
 * pass_workspace=1 (ws_enter_blobs), nothing more. */
static int ws_lent_here(const WorkspaceObject *self)
{
    return self->busy && self->in_pyop > 0 && self->owner == PyThread_get_thread_ident();
}

/* RuntimeError for a call into a workspace the calling thread holds itself, outside a Python op's function
 * (Python code run while it creates, runs or frees a net: a Python op's builder, a finalizer). */
static void busy_here(void)
{
    PyErr_SetString(PyExc_RuntimeError,
                    "workspace is busy: this thread is creating, running or freeing a net or operator in it "
                    "(Python code called meanwhile, such as a Python op's builder, cannot use it)");
}

/* While a background plan runs in the workspace (bg_active), blob calls of
 * other threads do not fail when they find it busy: they wait for the net
 * running (GIL released, polling every 200 us), then run between two nets of
 * the plan. The plan's thread yields to them (waiting while bg_waiters > 0), so
 * that a plan whose nets follow each other closely cannot starve them. Calls
 * that create, run or remove nets or reset the workspace stay the plan's own:
 * other threads get RuntimeError (ws_acquire). 0, or -1 with the exception of a
 * signal handler (KeyboardInterrupt on the main thread) raised while waiting,
 * or with RuntimeError when this thread holds the workspace itself. */
static int ws_wait_bg(WorkspaceObject *self, int waiter)
{
    if (self->busy && self->owner == PyThread_get_thread_ident()) {
        /* taken by this very thread (Python code run while it creates a net or frees one: a Python op's
         * builder, a finalizer): it would wait for itself forever */
        busy_here();
        return -1;
    }
    if (waiter) self->bg_waiters++;
    int rc = 0;
    while (self->busy || (!waiter && self->bg_waiters > 0)) {
        Py_BEGIN_ALLOW_THREADS
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) { rc = -1; break; }
    }
    if (waiter) self->bg_waiters--;
    return rc;
}

static void ws_take(WorkspaceObject *self)
{
    self->busy = 1;
    self->owner = PyThread_get_thread_ident();
    self->prev_running = tls_running;
    tls_running = self;
}

/* Takes the workspace for a call that creates, runs or removes nets or ops,
 * or resets it: 0, or -1 with RuntimeError when it is taken. */
static int ws_acquire(WorkspaceObject *self)
{
    if (self->bg_active && !ws_lent_here(self)) {
        if (self->bg_owner != PyThread_get_thread_ident()) {
            PyErr_SetString(PyExc_RuntimeError,
                            "workspace is busy: a plan runs in it in the background (RunPlanInBackground); it "
                            "takes its nets, operators and resets until it ends (BackgroundPlan.wait()); blobs "
                            "can be fed and fetched meanwhile");
            return -1;
        }
        if (ws_wait_bg(self, 0)) return -1;
        ws_take(self);
        return 0;
    }
    if (ws_lent_here(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a Python op's function may read blobs of the workspace running its net (and write them "
                        "when made with pass_workspace=True), but not create, run or delete nets or run operators "
                        "or plans in it, or reset it (the net is still running); use another workspace "
                        "(workspace.Workspace()) for that");
        return -1;
    }
    if (self->busy && self->owner == PyThread_get_thread_ident()) {
        busy_here();
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "workspace is busy: another thread is running a net or operator in it; "
                        "use one workspace per thread (workspace.SwitchWorkspace(name, True) in that thread)");
        return -1;
    }
    ws_take(self);
    return 0;
}

static void ws_release(WorkspaceObject *self)
{
    tls_running = self->prev_running;
    self->prev_running = NULL;
    self->busy = 0;
}

/* Takes the workspace for a call on blobs only (feed and create: writes; fetch,
 * list: reads): as ws_acquire, except that a Python op's function may make it
 * on the workspace running its net (no other op runs meanwhile, and blob
 * pointers stay valid when blobs are added: rc_core.h). Writes only when the
 * op has pass_workspace=1: the net-creation check and shape inference know
 * that such an op may change any blob (RC_OP_PASS_WORKSPACE), not the others.
 * *lent: 1 when lent (the caller then neither takes nor releases it). */
static int ws_enter_blobs(WorkspaceObject *self, int writes, int *lent)
{
    *lent = ws_lent_here(self);
    if (*lent && writes && !self->pyop_writes) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a Python op's function may write blobs of the workspace running its net only when the op "
                        "is made with pass_workspace=True (net.Python(f, pass_workspace=True)); it may read them");
        return -1;
    }
    if (*lent) return 0;
    if (self->bg_active) {
        /* a background plan's workspace: wait for its running net (ws_wait_bg), unless this thread runs a
         * net itself (two plans whose Python ops read each other's blobs would wait for each other forever) */
        int own = self->bg_owner == PyThread_get_thread_ident();
        if (!tls_running || own) {
            if (ws_wait_bg(self, !own)) return -1;
        } else if (self->busy) {
            PyErr_SetString(PyExc_RuntimeError,
                            "workspace is busy: its background plan (RunPlanInBackground) is running a net, and a "
                            "thread that runs a net itself does not wait for another workspace's net");
            return -1;
        }
        ws_take(self);
        return 0;
    }
    return ws_acquire(self);
}

static void ws_leave_blobs(WorkspaceObject *self, int lent)
{
    if (!lent) ws_release(self);
}

/* ---------------------------------------------------------------- print log */
/* What Print ops wrote during a call (rc_ws_log_take): taken from the
 * workspace while the call still holds it (so another thread's run cannot mix
 * its lines in), written by log_write once the workspace is released. */
typedef struct {
    char *text;        /* owned (free), NULL when empty */
    size_t n;
    int64_t dropped, dropped_bytes;
} print_text;

static void log_take(WorkspaceObject *self, print_text *pt)
{
    pt->text = rc_ws_log_take(self->ws, &pt->n, &pt->dropped, &pt->dropped_bytes);
}

/* Calls sys.stderr.write(s) then sys.stderr.flush(); 0, or -1 with an exception set. */
static int stderr_write(PyObject *s)
{
    PyObject *f = PySys_GetObject("stderr"); /* borrowed */
    if (!f || f == Py_None) return 0;        /* no stderr (pythonw, or set to None): nowhere to write */
    Py_INCREF(f);
    PyObject *r = PyObject_CallMethod(f, "write", "O", s);
    if (r) {
        Py_DECREF(r);
        r = PyObject_CallMethod(f, "flush", NULL);
    }
    Py_DECREF(f);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* Writes the taken text to sys.stderr (GIL held) and frees it, with a line
 * saying how much was dropped when the log was full. Returns 0, or -1 with
 * the exception of the write set (the caller drops it when the call itself
 * failed: the run's own error must win). */
static int log_write(print_text *pt)
{
    int rc = 0;
    if (pt->text) {
        PyObject *s = PyUnicode_DecodeUTF8(pt->text, (Py_ssize_t)pt->n, "replace");
        free(pt->text);
        pt->text = NULL;
        rc = s ? stderr_write(s) : -1;
        Py_XDECREF(s);
    }
    if (!rc && pt->dropped) {
        PyObject *s = PyUnicode_FromFormat("[recurrent] Print: %lld lines (%lld bytes) dropped: the print log "
                                           "holds at most %zu bytes per call (RunNet: per num_iter iterations)\n",
                                           (long long)pt->dropped, (long long)pt->dropped_bytes,
                                           (size_t)RC_PRINT_LOG_MAX);
        rc = s ? stderr_write(s) : -1;
        Py_XDECREF(s);
    }
    free(pt->text);
    pt->text = NULL;
    return rc;
}

/* log_write after a call whose result is st (RC_OK or an error still in err,
 * or hit: interrupted): a write error is raised only when nothing else is. */
static int log_write_after(print_text *pt, rc_status st, int hit)
{
    if (log_write(pt) == 0) return 0;
    if (st || hit) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static PyObject *Workspace_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args; (void)kw;
    WorkspaceObject *self = (WorkspaceObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->last_failed_op = -1;
    self->ws = rc_ws_new(NULL);
    if (!self->ws) {
        Py_DECREF(self);
        return PyErr_Format(PyExc_MemoryError, "out of memory creating a workspace");
    }
    return (PyObject *)self;
}

static void Workspace_dealloc(WorkspaceObject *self)
{
    rc_ws_free(self->ws);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int dtype_of(PyArrayObject *a, rc_dtype *dt, int *convert_to)
{
    int t = PyArray_TYPE(a);
    *convert_to = -1;
    switch (t) {
    case NPY_FLOAT32: *dt = RC_F32; return 0;
    case NPY_INT32: *dt = RC_I32; return 0;
    case NPY_FLOAT16: case NPY_FLOAT64: case NPY_LONGDOUBLE:
        *dt = RC_F32; *convert_to = NPY_FLOAT32; return 0;
    case NPY_BOOL: case NPY_INT8: case NPY_UINT8: case NPY_INT16: case NPY_UINT16:
    case NPY_UINT32: case NPY_INT64: case NPY_UINT64:
        *dt = RC_I32; *convert_to = NPY_INT32; return 0;
    default:
        /* the integer types not named above by their size (long long where int64 is long) */
        if (PyTypeNum_ISINTEGER(t)) { *dt = RC_I32; *convert_to = NPY_INT32; return 0; }
        return -1;
    }
}

/* arr (aligned, native order) as a new C-contiguous float32 array: NumPy's cast, except that float64 /
 * long double are converted here, each value rounded to nearest, and a finite value float32 cannot
 * hold (|v| >= 2^128 - 2^103, which rounds to inf) is a ValueError naming the blob, the flat position
 * (C order) and the value, as for integers that do not fit int32 (Load refuses such values too).
 * Returns a new reference, or NULL with an exception set. */
static PyArrayObject *to_float32_checked(PyArrayObject *arr, const char *name)
{
    int t = PyArray_TYPE(arr);
    if (t != NPY_FLOAT64 && t != NPY_LONGDOUBLE)
        return (PyArrayObject *)PyArray_FROM_OTF((PyObject *)arr, NPY_FLOAT32,
                                                 NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_FORCECAST);
    PyArrayObject *src = PyArray_GETCONTIGUOUS(arr);
    if (!src) return NULL;
    PyArrayObject *dst = (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(src), PyArray_DIMS(src), NPY_FLOAT32);
    if (!dst) {
        Py_DECREF(src);
        return NULL;
    }
    const long double inf_from = 340282356779733661637539395458142568448.0L; /* 2^128 - 2^103: FLT_MAX + ulp/2 */
    const npy_intp n = PyArray_SIZE(src);
    const double *sd = (const double *)PyArray_DATA(src);
    const long double *sl = (const long double *)PyArray_DATA(src);
    float *d = (float *)PyArray_DATA(dst);
    npy_intp i = 0;
    if (t == NPY_FLOAT64) /* the common case: blocks converted in double arithmetic, and checked, until one
                           * holds a finite value beyond FLT_MAX (then the exact loop below from there) */
        for (; i < n; i += 1024) {
            const npy_intp m = n - i < 1024 ? n - i : 1024;
            int beyond = 0;
            for (npy_intp j = 0; j < m; j++) {
                const double a = fabs(sd[i + j]);
                beyond |= (a > FLT_MAX) & (a < INFINITY);
            }
            if (beyond) break;
            for (npy_intp j = 0; j < m; j++) d[i + j] = (float)sd[i + j];
        }
    for (; i < n; i++) {
        const long double v = t == NPY_FLOAT64 ? (long double)sd[i] : sl[i];
        if (!(fabsl(v) > FLT_MAX) || isinf(v)) { /* in range, NaN or inf: the cast is exact or rounds */
            d[i] = (float)v;
            continue;
        }
        if (fabsl(v) < inf_from) { /* rounds to the largest float */
            d[i] = v < 0 ? -FLT_MAX : FLT_MAX;
            continue;
        }
        char val[64];
        char *txt = t == NPY_FLOAT64 ? PyOS_double_to_string((double)v, 'r', 0, 0, NULL) : NULL; /* repr's digits */
        if (txt) {
            snprintf(val, sizeof val, "%s", txt);
            PyMem_Free(txt);
        } else {
            PyErr_Clear();
            snprintf(val, sizeof val, "%.10Lg", v);
        }
        raise_ws(PyExc_ValueError, "FeedBlob '%s': %s value %s at flat position %lld is outside float32's range "
                 "(it would become %sinf); scale it, or feed float32", name,
                 t == NPY_FLOAT64 ? "float64" : "long double", val, (long long)i, v < 0 ? "-" : "");
        Py_DECREF(src);
        Py_DECREF(dst);
        return NULL;
    }
    Py_DECREF(src);
    return dst;
}

static PyObject *Workspace_feed_blob(WorkspaceObject *self, PyObject *args)
{
    int lent;
    const char *name;
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O&O", conv_blob_name, &name, &obj)) return NULL;
    /* native byte order: the data is copied as it is (a '>f4' array is byte-swapped first, never reinterpreted) */
    PyArrayObject *arr = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    if (!arr) return NULL;
    rc_dtype dt;
    int conv;
    if (dtype_of(arr, &dt, &conv)) {
        raise_ws(PyExc_TypeError,
                 "FeedBlob '%s': unsupported dtype %S (float32 and int32 are stored; other float types are "
                 "converted to float32 and integer/bool types to int32)",
                 name, (PyObject *)PyArray_DESCR(arr));
        Py_DECREF(arr);
        return NULL;
    }
    if (conv >= 0) {
        if (conv == NPY_INT32 && PyArray_TYPE(arr) != NPY_BOOL && PyArray_SIZE(arr) > 0) {
            /* reject integers that do not fit int32 instead of wrapping them */
            PyObject *mn = PyArray_Min(arr, NPY_RAVEL_AXIS, NULL), *mx = PyArray_Max(arr, NPY_RAVEL_AXIS, NULL);
            int bad = 0;
            if (!mn || !mx) bad = -1;
            else {
                long long lo = PyLong_AsLongLong(mn), hi = PyLong_AsLongLong(mx);
                if (PyErr_Occurred()) { PyErr_Clear(); bad = 1; }
                else bad = lo < INT32_MIN || hi > INT32_MAX;
            }
            Py_XDECREF(mn);
            Py_XDECREF(mx);
            if (bad) {
                Py_DECREF(arr);
                if (bad > 0)
                    raise_ws(PyExc_ValueError, "FeedBlob '%s': integer values do not fit in int32", name);
                return NULL;
            }
        }
        /* the documented conversion: values were range-checked above (integers);
         * float64 -> float32 rounds to nearest (tiny values to 0 or subnormals) */
        PyArrayObject *c = conv == NPY_FLOAT32 ? to_float32_checked(arr, name)
                                               : (PyArrayObject *)PyArray_FROM_OTF((PyObject *)arr, conv,
                                                                                   NPY_ARRAY_C_CONTIGUOUS |
                                                                                       NPY_ARRAY_FORCECAST);
        Py_DECREF(arr);
        if (!c) return NULL;
        arr = c;
    } else if (!PyArray_IS_C_CONTIGUOUS(arr)) {
        PyArrayObject *c = (PyArrayObject *)PyArray_NewCopy(arr, NPY_CORDER);
        Py_DECREF(arr);
        if (!c) return NULL;
        arr = c;
    }
    int nd = PyArray_NDIM(arr);
    if (nd > RC_MAX_DIMS) {
        raise_ws(PyExc_ValueError, "FeedBlob '%s': %d dims, at most %d supported", name, nd, RC_MAX_DIMS);
        Py_DECREF(arr);
        return NULL;
    }
    if (ws_enter_blobs(self, 1, &lent)) { Py_DECREF(arr); return NULL; }
    int64_t dims[RC_MAX_DIMS];
    for (int i = 0; i < nd; i++) dims[i] = PyArray_DIM(arr, i);
    rc_err err;
    rc_err_clear(&err);
    PyObject *ret = NULL;
    rc_blob *b = rc_ws_create_local(self->ws, name, &err);
    if (!b) { raise_err(&err); goto done; }
    if (b->obj) {
        raise_ws(PyExc_TypeError, "FeedBlob '%s': blob holds a %s, not a tensor", name, b->obj_kind);
        goto done;
    }
    /* a fed blob gets a private buffer: never write through an old view */
    rc_tensor fresh;
    rc_tensor_init(&fresh);
    if (rc_tensor_resize(&fresh, dt, nd, dims, &err)) {
        rc_err_prefix(&err, "FeedBlob '%s': ", name);
        raise_err(&err);
        goto done;
    }
    if (PyArray_NBYTES(arr)) memcpy(rc_tensor_data(&fresh), PyArray_DATA(arr), (size_t)PyArray_NBYTES(arr));
    rc_tensor_release(&b->t);
    b->t = fresh;
    ret = Py_None;
    Py_INCREF(ret);
done:
    ws_leave_blobs(self, lent);
    Py_DECREF(arr);
    return ret;
}

/* What FetchBlob gives for a blob that holds no tensor, as Caffe2's fetch_blob
 * did for a type without a fetcher: bytes "<name>, a C++ native class of type
 * <type>." (<type>: the object's kind, "BlobsQueue", "Mutex", ...; Caffe2 gave
 * the C++ type name; "nullptr (uninitialized)" for a blob created but never
 * written, as Caffe2's empty blob). */
static PyObject *blob_description(const rc_blob *b, const char *name)
{
    const char *type = b->obj ? (b->obj_kind ? b->obj_kind : "object") : "nullptr (uninitialized)";
    return PyBytes_FromFormat("%s, a C++ native class of type %s.", name, type);
}

static PyObject *tensor_to_array(const rc_tensor *t)
{
    npy_intp dims[RC_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) dims[i] = (npy_intp)t->dims[i];
    PyObject *a = PyArray_SimpleNew(t->ndim, dims, t->dtype == RC_F32 ? NPY_FLOAT32 : NPY_INT32);
    if (!a) return NULL;
    size_t nb = rc_tensor_nbytes(t);
    if (nb) memcpy(PyArray_DATA((PyArrayObject *)a), rc_tensor_data(t), nb);
    return a;
}

static PyObject *Workspace_fetch_blob(WorkspaceObject *self, PyObject *args)
{
    int lent;
    const char *name;
    if (!PyArg_ParseTuple(args, "O&", conv_blob_name, &name)) return NULL;
    /* a net running in another thread may resize or create blobs: refuse */
    if (ws_enter_blobs(self, 0, &lent)) return NULL;
    PyObject *ret;
    rc_blob *b = rc_ws_get(self->ws, name);
    if (!b) ret = raise_ws(PyExc_KeyError, "blob '%s' does not exist in the workspace", name);
    else if (b->obj || b->t.dtype == RC_UNDEF) ret = blob_description(b, name);
    else ret = tensor_to_array(&b->t);
    ws_leave_blobs(self, lent);
    return ret;
}

/* rnn_exec_status(name, backward) -> tuple of the 9 status values of the
 * RecurrentNetwork (gradient) op whose step workspaces blob is name, or None
 * (recurrent.trace.executor_status reads them). */
static PyObject *Workspace_rnn_exec_status(WorkspaceObject *self, PyObject *args)
{
    int lent;
    const char *name;
    int backward;
    if (!PyArg_ParseTuple(args, "O&p", conv_blob_name, &name, &backward)) return NULL;
    if (ws_enter_blobs(self, 0, &lent)) return NULL;
    float v[RC_RNN_EXEC_STATUS_N];
    rc_blob *b = rc_ws_get(self->ws, name);
    int r = b ? rc_rnn_exec_status(b, backward, v) : -2;
    ws_leave_blobs(self, lent);
    if (r == -2) return raise_ws(PyExc_KeyError, "blob '%s' does not exist in the workspace", name);
    if (r < 0) return PyErr_Format(PyExc_TypeError, "blob '%s' holds no RecurrentNetwork step workspaces", name);
    if (r == 0) Py_RETURN_NONE;
    PyObject *t = PyTuple_New(RC_RNN_EXEC_STATUS_N);
    if (!t) return NULL;
    for (int i = 0; i < RC_RNN_EXEC_STATUS_N; i++) {
        PyObject *f = PyFloat_FromDouble((double)v[i]);
        if (!f) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, f);
    }
    return t;
}

static PyObject *Workspace_has_blob(WorkspaceObject *self, PyObject *args)
{
    int lent;
    const char *name;
    if (!PyArg_ParseTuple(args, "O&", conv_blob_name, &name)) return NULL;
    if (ws_enter_blobs(self, 0, &lent)) return NULL;
    int has = rc_ws_get(self->ws, name) != NULL;
    ws_leave_blobs(self, lent);
    return PyBool_FromLong(has);
}

static PyObject *Workspace_blobs(WorkspaceObject *self, PyObject *noargs)
{
    int lent;
    (void)noargs;
    if (ws_enter_blobs(self, 0, &lent)) return NULL;
    int n = rc_ws_num_blobs(self->ws);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(rc_ws_blob_at(self->ws, i)->name);
        if (!s) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, s);
    }
    ws_leave_blobs(self, lent);
    return l;
}

/* blob_shapes() -> {name: (dims tuple, data type) or None}: every blob of the
 * workspace, with its tensor's dims and TensorProto data type (1 FLOAT, 2
 * INT32), None for a blob that holds no tensor (workspace.InferShapesAndTypes
 * starts from it; no data is copied). */
static PyObject *Workspace_blob_shapes(WorkspaceObject *self, PyObject *noargs)
{
    int lent;
    (void)noargs;
    if (ws_enter_blobs(self, 0, &lent)) return NULL;
    PyObject *d = PyDict_New();
    int n = rc_ws_num_blobs(self->ws);
    for (int i = 0; d && i < n; i++) {
        const rc_blob *b = rc_ws_blob_at(self->ws, i);
        PyObject *v;
        if (b->obj || b->t.dtype == RC_UNDEF) {
            v = Py_None;
            Py_INCREF(v);
        } else {
            PyObject *dims = PyTuple_New(b->t.ndim);
            for (int k = 0; dims && k < b->t.ndim; k++) {
                PyObject *x = PyLong_FromLongLong((long long)b->t.dims[k]);
                if (!x) Py_CLEAR(dims);
                else PyTuple_SET_ITEM(dims, k, x);
            }
            v = dims ? Py_BuildValue("(Ni)", dims, b->t.dtype == RC_F32 ? 1 : 2) : NULL;
        }
        if (!v || PyDict_SetItemString(d, b->name, v)) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    ws_leave_blobs(self, lent);
    return d;
}

static PyObject *Workspace_nets(WorkspaceObject *self, PyObject *noargs)
{
    int lent;
    (void)noargs;
    if (ws_enter_blobs(self, 0, &lent)) return NULL;
    int n = rc_ws_num_nets(self->ws);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(rc_ws_net_name_at(self->ws, i));
        if (!s) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, s);
    }
    ws_leave_blobs(self, lent);
    return l;
}

static PyObject *Workspace_create_net(WorkspaceObject *self, PyObject *args)
{
    self->last_failed_op = -1;
    PyObject *t;
    int overwrite = 0;
    if (!PyArg_ParseTuple(args, "O|p", &t, &overwrite)) return NULL;
    rc_netdef *nd = NULL;
    if (conv_netdef(t, &nd)) { rc_netdef_free(nd); return NULL; }
    if (ws_acquire(self)) { rc_netdef_free(nd); return NULL; } /* before reading the net table (Workspace_run_net) */
    if (!overwrite && rc_ws_get_net(self->ws, nd->name)) {
        ws_release(self);
        PyErr_Format(PyExc_RuntimeError,
                     "CreateNet: a net named '%s' already exists in this workspace (pass overwrite=True)", nd->name);
        rc_netdef_free(nd);
        return NULL;
    }
    rc_err err;
    rc_err_clear(&err);
    rc_status st;
    CORE_CALL_BEGIN
    rc_net *net = rc_net_create(self->ws, nd, &err);
    st = net ? rc_ws_add_net(self->ws, nd->name, net, overwrite, &err) : err.code;
    CORE_CALL_END
    self->last_failed_op = st ? err.op_pos : -1;
    print_text pt;
    log_take(self, &pt); /* no op runs at creation today; drained anyway, so none ever waits for the next call */
    ws_release(self);
    rc_netdef_free(nd);
    if (log_write_after(&pt, st, 0)) return NULL;
    if (st) return tag_op_position(raise_err(&err), st, &err);
    Py_RETURN_NONE;
}

/* The end of a call that ran a net of this workspace (RunNet, RunNetOnce, BenchmarkNet): records the failing
 * op's position, leaves the signal guard, writes the print log, releases the workspace and raises st's error
 * (finish). Returns finish's result. */
static PyObject *net_call_done(WorkspaceObject *self, rc_status st, rc_err *err, sig_guard *g)
{
    self->last_failed_op = st ? err->op_pos : -1;
    int hit = sig_guard_exit(g);
    print_text pt;
    log_take(self, &pt);
    ws_release(self);
    if (log_write_after(&pt, st, hit)) return NULL;
    return tag_op_position(finish(st, err, hit), st, err);
}

static PyObject *Workspace_run_net(WorkspaceObject *self, PyObject *args)
{
    self->last_failed_op = -1;
    const char *name;
    long long iters = 1;
    int main_thread = 0;
    if (!PyArg_ParseTuple(args, "O&|Lp", conv_net_name, &name, &iters, &main_thread)) return NULL;
    if (iters < 0) return PyErr_Format(PyExc_ValueError, "RunNet '%s': num_iter must be >= 0, got %lld", name, iters);
    /* the net table is read only once the workspace is taken: another thread's call may be changing it */
    if (ws_acquire(self)) return NULL;
    rc_net *net = rc_ws_get_net(self->ws, name);
    if (!net) {
        ws_release(self);
        return raise_ws(PyExc_KeyError, "net '%s' does not exist in the workspace (call CreateNet first)", name);
    }
    rc_err err;
    rc_err_clear(&err);
    rc_status st = RC_OK;
    sig_guard g;
    sig_guard_enter(&g, main_thread);
    CORE_CALL_BEGIN_GUARDED(&g)
    for (long long i = 0; i < iters && st == RC_OK; i++) st = rc_net_run(net, &err);
    CORE_CALL_END
    return net_call_done(self, st, &err, &g);
}

/* benchmark_net(name, warmup_runs, main_runs, run_individual, main_thread) -> list of floats: Caffe2's
 * BenchmarkNet (rc_net_benchmark): [ms per run of the net, ms per run of op 0, op 1, ...]. */
static PyObject *Workspace_benchmark_net(WorkspaceObject *self, PyObject *args)
{
    self->last_failed_op = -1;
    const char *name;
    long long warmup, runs;
    int individual = 0, main_thread = 0;
    if (!PyArg_ParseTuple(args, "O&LL|pp", conv_net_name, &name, &warmup, &runs, &individual, &main_thread))
        return NULL;
    if (ws_acquire(self)) return NULL; /* before reading the net table (Workspace_run_net) */
    rc_net *net = rc_ws_get_net(self->ws, name);
    if (!net) {
        ws_release(self);
        return raise_ws(PyExc_KeyError, "net '%s' does not exist in the workspace (call CreateNet first)", name);
    }
    int n = rc_net_num_ops(net);
    double *out = PyMem_Calloc((size_t)n + 1, sizeof *out);
    if (!out) {
        ws_release(self);
        return PyErr_NoMemory();
    }
    rc_err err;
    rc_err_clear(&err);
    rc_status st;
    sig_guard g;
    sig_guard_enter(&g, main_thread);
    CORE_CALL_BEGIN_GUARDED(&g)
    st = rc_net_benchmark(net, warmup, runs, individual, out, &err);
    CORE_CALL_END
    PyObject *ret = NULL, *r = net_call_done(self, st, &err, &g);
    if (!r) goto done;
    Py_DECREF(r);
    if (!(ret = PyList_New(n + 1))) goto done;
    for (int i = 0; i <= n; i++) {
        PyObject *v = PyFloat_FromDouble(out[i]);
        if (!v) { Py_CLEAR(ret); goto done; }
        PyList_SET_ITEM(ret, i, v);
    }
done:
    PyMem_Free(out);
    return ret;
}

static PyObject *Workspace_run_net_once(WorkspaceObject *self, PyObject *args)
{
    self->last_failed_op = -1;
    PyObject *t;
    int main_thread = 0;
    if (!PyArg_ParseTuple(args, "O|p", &t, &main_thread)) return NULL;
    rc_netdef *nd = NULL;
    if (conv_netdef(t, &nd)) { rc_netdef_free(nd); return NULL; }
    if (ws_acquire(self)) { rc_netdef_free(nd); return NULL; }
    rc_err err;
    rc_err_clear(&err);
    rc_status st;
    sig_guard g;
    sig_guard_enter(&g, main_thread);
    CORE_CALL_BEGIN_GUARDED(&g)
    rc_net *net = rc_net_create(self->ws, nd, &err);
    st = net ? rc_net_run(net, &err) : err.code;
    rc_net_free(net);
    CORE_CALL_END
    rc_netdef_free(nd);
    return net_call_done(self, st, &err, &g);
}

/* Creates the op of tuple t once and runs it runs (>= 0) times, then frees it: RunOperatorOnce (runs 1) and
 * Caffe2's RunOperatorMultiple, whose runs share the op's state (an Iter counts them all). */
static PyObject *run_operator_n(WorkspaceObject *self, PyObject *t, long long runs)
{
    rc_opdef od;
    if (conv_opdef(t, &od)) {
        if (od.type) conv_context(NULL, 0, od.type);
        rc_opdef_free(&od);
        return NULL;
    }
    if (ws_acquire(self)) { rc_opdef_free(&od); return NULL; }
    rc_err err;
    rc_err_clear(&err);
    rc_status st;
    CORE_CALL_BEGIN
    rc_op *op = rc_op_create(self->ws, &od, 0, &err);
    st = op ? RC_OK : err.code;
    for (long long i = 0; i < runs && !st; i++) {
        if (i > 0 && rc_interrupt_pending())
            st = rc_err_set(&err, RC_ERR_INTERRUPT, "RunOperatorMultiple interrupted before run %lld", i);
        else
            st = rc_op_run(op, &err);
    }
    rc_op_free(op);
    CORE_CALL_END
    print_text pt;
    log_take(self, &pt);
    ws_release(self);
    rc_opdef_free(&od);
    if (log_write_after(&pt, st, 0)) return NULL;
    if (st) return raise_err(&err);
    Py_RETURN_NONE;
}

static PyObject *Workspace_run_operator_once(WorkspaceObject *self, PyObject *args)
{
    PyObject *t;
    if (!PyArg_ParseTuple(args, "O", &t)) return NULL;
    return run_operator_n(self, t, 1);
}

/* run_operator_multiple(op_tuple, num_runs): run_operator_n. */
static PyObject *Workspace_run_operator_multiple(WorkspaceObject *self, PyObject *args)
{
    PyObject *t;
    long long runs;
    if (!PyArg_ParseTuple(args, "OL", &t, &runs)) return NULL;
    if (runs < 0) return PyErr_Format(PyExc_ValueError, "RunOperatorMultiple: num_runs must be >= 0, got %lld", runs);
    return run_operator_n(self, t, runs);
}

static PyObject *Workspace_delete_net(WorkspaceObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "O&", conv_net_name, &name)) return NULL;
    if (ws_acquire(self)) return NULL;
    rc_ws_remove_net(self->ws, name);
    ws_release(self);
    Py_RETURN_NONE;
}

/* create_blob(name): a blob holding no tensor (Caffe2's empty blob), if name is not there yet;
 * CreateNet's input_blobs. Ops refuse it when they run; the net-creation check skips it. */
static PyObject *Workspace_create_blob(WorkspaceObject *self, PyObject *args)
{
    int lent;
    const char *name;
    if (!PyArg_ParseTuple(args, "O&", conv_blob_name, &name)) return NULL;
    if (ws_enter_blobs(self, 1, &lent)) return NULL;
    rc_err err;
    rc_err_clear(&err);
    rc_blob *b = rc_ws_get(self->ws, name) ? NULL : rc_ws_create(self->ws, name, &err);
    rc_status st = b || !err.code ? RC_OK : err.code;
    ws_leave_blobs(self, lent);
    if (st) return raise_err(&err);
    Py_RETURN_NONE;
}

/* reset_blob(name): the blob holds no tensor any more (as one CreateBlob made; Caffe2's ResetBlob).
 * A blob holding an object (a queue, a Mutex, step workspaces) is refused: the ops of nets that use it
 * keep pointers to it; ResetWorkspace frees those. */
static PyObject *Workspace_reset_blob(WorkspaceObject *self, PyObject *args)
{
    int lent;
    const char *name;
    if (!PyArg_ParseTuple(args, "O&", conv_blob_name, &name)) return NULL;
    if (ws_enter_blobs(self, 1, &lent)) return NULL;
    rc_blob *b = rc_ws_get_local(self->ws, name);
    PyObject *ret = NULL;
    if (!b)
        raise_ws(PyExc_KeyError, "ResetBlob: blob '%s' does not exist in the workspace", name);
    else if (b->obj)
        raise_ws(PyExc_TypeError, "ResetBlob: blob '%s' holds a %s, not a tensor; only a tensor blob can be reset "
                 "(ResetWorkspace frees it)", name, b->obj_kind);
    else {
        rc_tensor_release(&b->t);
        ret = Py_None;
        Py_INCREF(ret);
    }
    ws_leave_blobs(self, lent);
    return ret;
}

/* root_folder() -> str; set_root_folder(path): where Save, Load and Print's to_file put relative paths
 * (rc_ws_path). Setting it takes the workspace, as a reset does. */
static PyObject *Workspace_root_folder(WorkspaceObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyUnicode_FromString(rc_ws_root_folder(self->ws));
}

static PyObject *Workspace_set_root_folder(WorkspaceObject *self, PyObject *args)
{
    const char *root;
    if (!PyArg_ParseTuple(args, "O&", conv_root_name, &root)) return NULL;
    if (!root[0]) return PyErr_Format(PyExc_ValueError, "root folder must not be empty (\".\": the current directory)");
    if (ws_acquire(self)) return NULL;
    rc_err err;
    rc_err_clear(&err);
    rc_status st = rc_ws_set_root_folder(self->ws, root, &err);
    ws_release(self);
    if (st) return raise_err(&err);
    Py_RETURN_NONE;
}

/* last_failed_op() -> int: the position of the op that failed in the last net call, -1 when none (Caffe2's
 * _last_failed_op_net_position). */
static PyObject *Workspace_last_failed_op(WorkspaceObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyLong_FromLong(self->last_failed_op);
}

/* RuntimeError (returns NULL): a background plan runs in the workspace already. */
static PyObject *bg_already_running(void)
{
    return PyErr_Format(PyExc_RuntimeError,
                        "workspace is busy: a plan runs in it in the background already (RunPlanInBackground); "
                        "wait for it (BackgroundPlan.wait()) before starting another");
}

/* _bg_begin(): the calling thread starts running a background plan in the workspace (ws_wait_bg);
 * RuntimeError when one runs already. _bg_end(): that thread's plan ended (RuntimeError from another
 * thread, or when none runs). */
static PyObject *Workspace_bg_begin(WorkspaceObject *self, PyObject *noargs)
{
    (void)noargs;
    if (self->bg_active) return bg_already_running();
    self->bg_active = 1;
    self->bg_owner = PyThread_get_thread_ident();
    Py_RETURN_NONE;
}

/* _bg_check(): RuntimeError when a background plan could not start now: one runs already, a net of
 * another thread runs, or the caller is a Python op's function of the net running here (the plan
 * would wait for that net, and the function might wait for the plan). */
static PyObject *Workspace_bg_check(WorkspaceObject *self, PyObject *noargs)
{
    (void)noargs;
    if (self->bg_active) return bg_already_running();
    if (ws_acquire(self)) return NULL;
    ws_release(self);
    Py_RETURN_NONE;
}

static PyObject *Workspace_bg_end(WorkspaceObject *self, PyObject *noargs)
{
    (void)noargs;
    if (!self->bg_active || self->bg_owner != PyThread_get_thread_ident())
        return PyErr_Format(PyExc_RuntimeError, "_bg_end: no background plan of this thread runs in the workspace");
    self->bg_active = 0;
    self->bg_owner = 0;
    Py_RETURN_NONE;
}

static PyObject *Workspace_reset(WorkspaceObject *self, PyObject *noargs)
{
    (void)noargs;
    if (ws_acquire(self)) return NULL;
    rc_ws_reset(self->ws);
    ws_release(self);
    Py_RETURN_NONE;
}

static PyMethodDef Workspace_methods[] = {
    {"feed_blob", (PyCFunction)Workspace_feed_blob, METH_VARARGS, "feed_blob(name, array)"},
    {"fetch_blob", (PyCFunction)Workspace_fetch_blob, METH_VARARGS, "fetch_blob(name) -> ndarray (a copy)"},
    {"blob_shapes", (PyCFunction)Workspace_blob_shapes, METH_NOARGS,
     "blob_shapes() -> {name: (dims, data type) or None}"},
    {"has_blob", (PyCFunction)Workspace_has_blob, METH_VARARGS, "has_blob(name) -> bool"},
    {"rnn_exec_status", (PyCFunction)Workspace_rnn_exec_status, METH_VARARGS,
     "rnn_exec_status(step_workspaces_name, backward) -> the RNN executor's 9 status values, or None"},
    {"create_blob", (PyCFunction)Workspace_create_blob, METH_VARARGS,
     "create_blob(name): a blob holding no tensor, unless name exists"},
    {"blobs", (PyCFunction)Workspace_blobs, METH_NOARGS, "blobs() -> list of names"},
    {"nets", (PyCFunction)Workspace_nets, METH_NOARGS, "nets() -> list of names"},
    {"create_net", (PyCFunction)Workspace_create_net, METH_VARARGS, "create_net(net_tuple, overwrite=False)"},
    {"run_net", (PyCFunction)Workspace_run_net, METH_VARARGS, "run_net(name, num_iter=1, main_thread=False)"},
    {"run_net_once", (PyCFunction)Workspace_run_net_once, METH_VARARGS, "run_net_once(net_tuple, main_thread=False)"},
    {"run_operator_once", (PyCFunction)Workspace_run_operator_once, METH_VARARGS, "run_operator_once(op_tuple)"},
    {"benchmark_net", (PyCFunction)Workspace_benchmark_net, METH_VARARGS,
     "benchmark_net(name, warmup_runs, main_runs, run_individual=False, main_thread=False) -> [ms per run of the "
     "net, of op 0, op 1, ...]"},
    {"run_operator_multiple", (PyCFunction)Workspace_run_operator_multiple, METH_VARARGS,
     "run_operator_multiple(op_tuple, num_runs): creates the op once, runs it num_runs times"},
    {"reset_blob", (PyCFunction)Workspace_reset_blob, METH_VARARGS, "reset_blob(name): the blob holds no tensor"},
    {"last_failed_op", (PyCFunction)Workspace_last_failed_op, METH_NOARGS,
     "last_failed_op() -> position of the op that failed in the last net call (-1: none)"},
    {"root_folder", (PyCFunction)Workspace_root_folder, METH_NOARGS, "root_folder() -> str (\".\" by default)"},
    {"set_root_folder", (PyCFunction)Workspace_set_root_folder, METH_VARARGS,
     "set_root_folder(path): where Save, Load and Print(to_file=1) put relative paths"},
    {"delete_net", (PyCFunction)Workspace_delete_net, METH_VARARGS, "delete_net(name)"},
    {"reset", (PyCFunction)Workspace_reset, METH_NOARGS, "reset(): remove all blobs and nets"},
    {"_bg_begin", (PyCFunction)Workspace_bg_begin, METH_NOARGS,
     "_bg_begin(): this thread runs a background plan in the workspace (workspace.RunPlanInBackground)"},
    {"_bg_end", (PyCFunction)Workspace_bg_end, METH_NOARGS, "_bg_end(): this thread's background plan ended"},
    {"_bg_check", (PyCFunction)Workspace_bg_check, METH_NOARGS,
     "_bg_check(): RuntimeError when a background plan cannot start in the workspace now"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WorkspaceType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "recurrent._C.Workspace",
    .tp_basicsize = sizeof(WorkspaceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A C workspace: named blobs and nets.",
    .tp_new = Workspace_new,
    .tp_dealloc = (destructor)Workspace_dealloc,
    .tp_methods = Workspace_methods,
};

/* ---------------------------------------------------------------- module functions */
static PyObject *mod_set_flag(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name;
    long long v;
    if (!PyArg_ParseTuple(args, "O&L", conv_flag_name, &name, &v)) return NULL;
    if (!strcmp(name, "rnn_executor")) rc_flag_set_rnn_executor((int)v);
    else if (!strcmp(name, "rnn_executor_trace")) rc_flag_set_rnn_trace((int)v);
    else if (!strcmp(name, "verify_packs")) rc_flag_set_verify_packs((int)v);
    else if (!strcmp(name, "rnn_executor_help")) rc_flag_set_rnn_executor_help((int)v);
    else if (!strcmp(name, "rnn_executor_num_threads")) {
        if (v < 0 || v > 1024) return PyErr_Format(PyExc_ValueError, "rnn_executor_num_threads must be in [0, 1024]");
        rc_flag_set_rnn_executor_threads((int)v);
    } else if (!strcmp(name, "rnn_executor_min_op_ns")) {
        if (v < 0 || v > 1000000000LL)
            return PyErr_Format(PyExc_ValueError, "rnn_executor_min_op_ns must be in [0, 1e9]");
        rc_flag_set_rnn_executor_min_op_ns((int64_t)v);
    } else if (!strcmp(name, "rnn_executor_spin_ns")) {
        if (v < 0 || v > (long long)(RC_SPIN_US_MAX * 1000))
            return PyErr_Format(PyExc_ValueError, "rnn_executor_spin_ns must be in [0, %lld]",
                                (long long)(RC_SPIN_US_MAX * 1000));
        rc_flag_set_spin_ns((int64_t)v);
    } else if (!strcmp(name, "blas_num_threads")) {
        if (v < 1 || v > 1024) return PyErr_Format(PyExc_ValueError, "blas_num_threads must be in [1, 1024]");
        rc_blas_set_num_threads((int)v);
    } else return PyErr_Format(PyExc_KeyError, "unknown flag '%s'", name);
    Py_RETURN_NONE;
}

static PyObject *mod_get_flag(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name;
    if (!PyArg_ParseTuple(args, "O&", conv_flag_name, &name)) return NULL;
    if (!strcmp(name, "rnn_executor")) return PyLong_FromLong(rc_flag_rnn_executor());
    if (!strcmp(name, "rnn_executor_num_threads")) return PyLong_FromLong(rc_flag_rnn_executor_threads());
    if (!strcmp(name, "rnn_executor_trace")) return PyLong_FromLong(rc_flag_rnn_trace());
    if (!strcmp(name, "rnn_executor_min_op_ns")) return PyLong_FromLongLong(rc_flag_rnn_executor_min_op_ns());
    if (!strcmp(name, "rnn_executor_spin_ns")) return PyLong_FromLongLong(rc_flag_spin_ns());
    if (!strcmp(name, "rnn_executor_help")) return PyLong_FromLong(rc_flag_rnn_executor_help());
    if (!strcmp(name, "executor_help_parts")) return PyLong_FromLongLong(rc_rnn_exec_help_parts());
    if (!strcmp(name, "num_cores")) return PyLong_FromLong(rc_num_cores());
    if (!strcmp(name, "blas_num_threads")) return PyLong_FromLong(rc_blas_num_threads());
    if (!strcmp(name, "blas_config")) return PyUnicode_FromString(rc_blas_config());
    if (!strcmp(name, "blas_corename")) return PyUnicode_FromString(rc_blas_corename());
    if (!strcmp(name, "packed_gemm")) return PyLong_FromLong(rc_packed_available());
    if (!strcmp(name, "packed_gemm_calls")) return PyLong_FromLongLong(rc_packed_calls());
    if (!strcmp(name, "packed_unaligned_calls")) return PyLong_FromLongLong(rc_packed_unaligned_calls());
    if (!strcmp(name, "packed_gemm_kernel")) return PyUnicode_FromString(rc_packed_kernel());
    if (!strcmp(name, "packed_wgrad")) return PyLong_FromLong(rc_wgrad_packed_available());
    if (!strcmp(name, "packed_wgrad_calls")) return PyLong_FromLongLong(rc_wgrad_calls());
    if (!strcmp(name, "packed_wgrad_pass_rows")) return PyLong_FromLongLong(rc_wgrad_kc());
    if (!strcmp(name, "packed_prefetch_min_bytes")) return PyLong_FromLongLong(rc_packed_pf_next_min_bytes());
    if (!strcmp(name, "shared_stashes")) return PyLong_FromLongLong(rc_rnn_shared_stashes());
    if (!strcmp(name, "fused_sums")) return PyLong_FromLongLong(rc_fc_fused_sums());
    if (!strcmp(name, "fc_self_packed")) return PyLong_FromLongLong(rc_fc_self_packed());
    if (!strcmp(name, "unit_splits")) return PyLong_FromLongLong(rc_unit_splits());
    if (!strcmp(name, "verify_packs")) return PyLong_FromLong(rc_flag_verify_packs());
    if (!strcmp(name, "print_log_max")) return PyLong_FromSize_t(RC_PRINT_LOG_MAX);
    if (!strcmp(name, "packs_reused")) return PyLong_FromLongLong(rc_rnn_packs_reused());
    if (!strcmp(name, "states_unzeroed")) return PyLong_FromLongLong(rc_rnn_states_unzeroed());
    return PyErr_Format(PyExc_KeyError, "unknown flag '%s'", name);
}

/* op_schema(type) -> (min_in, max_in, min_out, max_out) of a registered type
 * (max -1: unbounded); KeyError for an unknown type. */
static PyObject *mod_op_schema(PyObject *m, PyObject *args)
{
    (void)m;
    const char *type;
    if (!PyArg_ParseTuple(args, "O&:op_schema", conv_op_type_name, &type)) return NULL;
    const rc_op_schema *sc = rc_op_lookup(type);
    if (!sc) return PyErr_Format(PyExc_KeyError, "unknown operator type '%s'", type);
    return Py_BuildValue("(iiii)", sc->min_in, sc->max_in, sc->min_out, sc->max_out);
}

/* op_inplace(type, input, output) -> whether input `input` and output `output`
 * of an op of this type may name the same blob (as net creation checks it). */
static PyObject *mod_op_inplace(PyObject *m, PyObject *args)
{
    (void)m;
    const char *type;
    int in, out;
    if (!PyArg_ParseTuple(args, "O&ii:op_inplace", conv_op_type_name, &type, &in, &out)) return NULL;
    const rc_op_schema *sc = rc_op_lookup(type);
    if (!sc) return PyErr_Format(PyExc_KeyError, "unknown operator type '%s'", type);
    return PyBool_FromLong(sc->allow_inplace != NULL && sc->allow_inplace(in, out));
}

/* op_types(checked=None): every registered type; checked=True only those whose
 * schema has a check function (inputs validated at net creation), False the others. */
static PyObject *mod_op_types(PyObject *m, PyObject *args, PyObject *kw)
{
    (void)m;
    static char *kwlist[] = {"checked", NULL};
    PyObject *checked = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:op_types", kwlist, &checked)) return NULL;
    int want = -1;
    if (checked != Py_None) {
        want = PyObject_IsTrue(checked);
        if (want < 0) return NULL;
    }
    int n = rc_op_num_schemas();
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (int i = 0; i < n; i++) {
        const rc_op_schema *sc = rc_op_schema_at(i);
        if (want >= 0 && (sc->check != NULL) != want) continue;
        PyObject *s = PyUnicode_FromString(sc->type);
        if (!s || PyList_Append(l, s) < 0) { Py_XDECREF(s); Py_DECREF(l); return NULL; }
        Py_DECREF(s);
    }
    return l;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* atexit (recurrent/__init__.py): stops every run at its next op or timestep
 * and waits up to timeout_s for the core calls of other (daemon) threads, so
 * that the process does not exit (OpenBLAS's destructor, freed memory) under
 * them. The GIL stays held: a thread whose call returned waits for it and is
 * ended by the interpreter's finalisation. Returns the calls still running. */
static PyObject *mod_shutdown(PyObject *m, PyObject *args)
{
    (void)m;
    double timeout_s = 30.0;
    if (!PyArg_ParseTuple(args, "|d", &timeout_s)) return NULL;
    rc_shutdown_request();
    double end = now_s() + timeout_s;
    /* without the GIL: a net running in another thread may be in a Python op,
     * which needs it to finish its call */
    Py_BEGIN_ALLOW_THREADS
    while (rc_calls_in_flight() > 0 && now_s() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc_calls_in_flight());
}

#ifdef RC_ALLOC_FAIL
#include "testing/alloc_fail.h"
/* Test builds only (-DRECURRENT_ALLOC_FAIL=ON): allocation-failure injection. */
static PyObject *mod_alloc_fail(PyObject *m, PyObject *args)
{
    (void)m;
    long long nth;
    int sticky = 0;
    if (!PyArg_ParseTuple(args, "L|p", &nth, &sticky)) return NULL;
    return PyLong_FromLongLong(rc_alloc_fail_arm(nth, sticky));
}

static PyObject *mod_alloc_live(PyObject *m, PyObject *noargs)
{
    (void)m; (void)noargs;
    return PyLong_FromLongLong(rc_alloc_live());
}
#endif

/* ---------------------------------------------------------------- the Python op's hook */
/* The core error code a Python exception is reported with (its message keeps
 * the exception's type name). A KeyboardInterrupt or SystemExit is a
 * RuntimeError here, not an interrupt (which would signal the main thread):
 * workspace.py raises the exception itself in the calling thread. */
static rc_status pyexc_code(PyObject *exc)
{
    if (PyErr_GivenExceptionMatches(exc, PyExc_MemoryError)) return RC_ERR_MEMORY;
    if (PyErr_GivenExceptionMatches(exc, PyExc_KeyError)) return RC_ERR_KEY;
    if (PyErr_GivenExceptionMatches(exc, PyExc_IndexError)) return RC_ERR_INDEX;
    if (PyErr_GivenExceptionMatches(exc, PyExc_TypeError)) return RC_ERR_TYPE;
    if (PyErr_GivenExceptionMatches(exc, PyExc_ValueError)) return RC_ERR_VALUE;
    if (PyErr_GivenExceptionMatches(exc, PyExc_OSError)) return RC_ERR_IO;
    return RC_ERR_RUNTIME;
}

/* Fails the op with the pending Python exception ("<Type>: <message>"), which
 * it clears (recurrent/python_op.py keeps the exception object for the caller
 * to chain). Called with the GIL held. */
static rc_status pyop_fail_from_exception(rc_op *op, rc_err *err)
{
    PyObject *ev = take_exception();
    rc_status code = ev ? pyexc_code(ev) : RC_ERR_RUNTIME;
    PyObject *text = ev ? PyObject_Str(ev) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!msg) {
        PyErr_Clear();
        msg = "(the message could not be read)";
    }
    const char *tname = ev ? Py_TYPE(ev)->tp_name : "an exception";
    /* the runtime's own errors (python_op.py: an unknown token, an output not set) are reported as they are */
    int own = ev && PyObject_HasAttrString(ev, "_recurrent_own");
    rc_status st = own ? rc_op_fail(op, err, code, "%s", msg)
                       : rc_op_fail(op, err, code, "the Python function raised %s: %s", tname, msg);
    Py_XDECREF(text);
    Py_XDECREF(ev);
    return st;
}

/* Writes array a (float32 or int32, C-contiguous, as python_op._run returns)
 * into output o. Called with the GIL held. */
static rc_status pyop_store(rc_op *op, int o, PyObject *a, rc_err *err)
{
    if (!PyArray_Check(a))
        return rc_op_fail(op, err, RC_ERR_TYPE, "output %d: the Python function gave no array", o);
    PyArrayObject *arr = (PyArrayObject *)a;
    int tn = PyArray_TYPE(arr);
    if ((tn != NPY_FLOAT32 && tn != NPY_INT32) || !PyArray_IS_C_CONTIGUOUS(arr) || PyArray_NDIM(arr) > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_TYPE, "output %d: the Python function gave an array this runtime cannot "
                          "hold (float32 or int32, at most %d dims)", o, RC_MAX_DIMS);
    int64_t dims[RC_MAX_DIMS];
    for (int d = 0; d < PyArray_NDIM(arr); d++) dims[d] = (int64_t)PyArray_DIM(arr, d);
    rc_tensor *t = rc_out(op, o);
    rc_status st = rc_tensor_resize(t, tn == NPY_FLOAT32 ? RC_F32 : RC_I32, PyArray_NDIM(arr), dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    if (PyArray_NBYTES(arr)) memcpy(rc_tensor_data(t), PyArray_DATA(arr), (size_t)PyArray_NBYTES(arr));
    return RC_OK;
}

/* The hook of the Python / PythonGradient op (csrc/ops/pyfunc.c): in the
 * thread running the net, which released the GIL for the run, takes the GIL,
 * calls recurrent.python_op._run(token, [input copies], [output names], ws,
 * pass_workspace) and writes the arrays it returns into the outputs (None: an
 * output the function did not set, left as it is). ws is the workspace
 * object running the net (None if the op's workspace is not the one this
 * thread runs); while the function runs it is lent to it: the function may
 * read and write its blobs (ws_enter_blobs), through ws or workspace.FetchBlob
 * and FeedBlob. */
static rc_status pyop_hook(rc_op *op, rc_err *err)
{
    const char *token;
    int64_t pass_ws;
    rc_status st = rc_arg_s(&op->def, "token", NULL, &token, err);
    if (!st) st = rc_arg_i(&op->def, "pass_workspace", 0, &pass_ws, err);
    if (st) return st;
    PyGILState_STATE gil = PyGILState_Ensure();
    WorkspaceObject *wso = tls_running && tls_running->ws == op->ws ? tls_running : NULL; /* borrowed */
    PyObject *ins = PyList_New(op->n_in), *names = PyList_New(op->n_out), *mod = NULL, *res = NULL;
    if (!ins || !names) goto pyerr;
    for (int i = 0; i < op->n_in; i++) {
        const rc_blob *b = op->in[i];
        if (b->obj || b->t.dtype == RC_UNDEF) {
            st = rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)", i,
                            rc_in_name(op, i));
            goto done;
        }
        PyObject *a = tensor_to_array(&b->t);
        if (!a) goto pyerr;
        PyList_SET_ITEM(ins, i, a);
    }
    for (int o = 0; o < op->n_out; o++) {
        PyObject *n = PyUnicode_FromString(rc_out_name(op, o));
        if (!n) goto pyerr;
        PyList_SET_ITEM(names, o, n);
    }
    mod = PyImport_ImportModule("recurrent.python_op");
    if (!mod) goto pyerr;
    int writes_before = wso ? wso->pyop_writes : 0;
    if (wso) {
        wso->in_pyop++;
        wso->pyop_writes = pass_ws != 0;
    }
    res = PyObject_CallMethod(mod, "_run", "sOOOiL", token, ins, names, wso ? (PyObject *)wso : Py_None, pass_ws != 0,
                              (long long)rc_pyop_instance(op));
    if (wso) {
        wso->in_pyop--;
        wso->pyop_writes = writes_before;
    }
    if (!res) goto pyerr;
    if (!PyList_Check(res) || PyList_GET_SIZE(res) != op->n_out) {
        st = rc_op_fail(op, err, RC_ERR_RUNTIME, "python_op._run gave no list of %d arrays", op->n_out);
        goto done;
    }
    for (int o = 0; o < op->n_out && !st; o++)
        if (PyList_GET_ITEM(res, o) != Py_None) st = pyop_store(op, o, PyList_GET_ITEM(res, o), err);
    goto done;
pyerr:
    st = pyop_fail_from_exception(op, err);
done:
    Py_XDECREF(res);
    Py_XDECREF(mod);
    Py_XDECREF(names);
    Py_XDECREF(ins);
    PyGILState_Release(gil);
    return st;
}

/* The build hook (csrc/ops/pyfunc.c): when a Python / PythonGradient op is
 * created, in the creating thread (GIL released), asks
 * recurrent.python_op._build(token) for the op's own function: an instance
 * id > 0 when the token names a builder (called now, once for this op), 0
 * otherwise. An exception (the builder's) fails the op's creation. */
static rc_status pyop_build(rc_op *op, const char *token, int64_t *instance, rc_err *err)
{
    rc_status st = RC_OK;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *mod = PyImport_ImportModule("recurrent.python_op");
    PyObject *res = mod ? PyObject_CallMethod(mod, "_build", "s", token) : NULL;
    long long id = res ? PyLong_AsLongLong(res) : -1;
    if (id == -1 && PyErr_Occurred()) st = pyop_fail_from_exception(op, err);
    else *instance = id;
    Py_XDECREF(res);
    Py_XDECREF(mod);
    PyGILState_Release(gil);
    return st;
}

/* The release hook: the op holding instance is freed (in the thread freeing
 * its net, GIL held or not): recurrent.python_op._release(instance). Nothing
 * is called while the interpreter finalizes (the instances go with it). */
static void pyop_release(int64_t instance)
{
#if PY_VERSION_HEX >= 0x030D0000
    if (!Py_IsInitialized() || Py_IsFinalizing()) return;
#else
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
#endif
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *mod = PyImport_ImportModule("recurrent.python_op");
    PyObject *res = mod ? PyObject_CallMethod(mod, "_release", "L", (long long)instance) : NULL;
    if (!res) PyErr_Clear(); /* nothing to report to: the instance stays in the table */
    Py_XDECREF(res);
    Py_XDECREF(mod);
    PyGILState_Release(gil);
}

static PyMethodDef module_methods[] = {
    {"set_flag", mod_set_flag, METH_VARARGS, "set_flag(name, value)"},
    {"get_flag", mod_get_flag, METH_VARARGS, "get_flag(name) -> int"},
    {"op_schema", mod_op_schema, METH_VARARGS, "op_schema(type) -> (min_in, max_in, min_out, max_out); max -1: any"},
    {"op_inplace", mod_op_inplace, METH_VARARGS, "op_inplace(type, input, output) -> may they name one blob"},
    {"op_types", (PyCFunction)(void (*)(void))mod_op_types, METH_VARARGS | METH_KEYWORDS,
     "op_types(checked=None) -> registered operator types (checked=True: those checked at net creation)"},
    {"_shutdown", mod_shutdown, METH_VARARGS,
     "_shutdown(timeout_s=30.0) -> calls still running; stops every run for good (atexit only)"},
#ifdef RC_ALLOC_FAIL
    {"_alloc_fail", mod_alloc_fail, METH_VARARGS,
     "_alloc_fail(nth, sticky=False) -> calls counted since the last call; the nth wrapped allocation from now "
     "fails (and every later one if sticky); nth=0 disarms (test builds only)"},
    {"_alloc_live", mod_alloc_live, METH_NOARGS, "_alloc_live() -> live wrapped allocations (test builds only)"},
#endif
    {NULL, NULL, 0, NULL},
};

/* Whether this build has AddressSanitizer (workspace.is_asan, as Caffe2's C.is_asan). */
#if defined(__SANITIZE_ADDRESS__)
#define RC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RC_ASAN 1
#endif
#endif
#ifndef RC_ASAN
#define RC_ASAN 0
#endif

static int module_exec(PyObject *m)
{
    if (PyArray_ImportNumPyAPI() < 0) return -1;
    rc_set_pyop_hook(pyop_hook);
    rc_set_pyop_instance_hooks(pyop_build, pyop_release);
    if (PyModule_AddObjectRef(m, "is_asan", RC_ASAN ? Py_True : Py_False) < 0) return -1;
    if (PyType_Ready(&WorkspaceType) < 0) return -1;
    Py_INCREF(&WorkspaceType);
    if (PyModule_AddObject(m, "Workspace", (PyObject *)&WorkspaceType) < 0) {
        Py_DECREF(&WorkspaceType);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_C", "recurrent's C runtime binding", 0, module_methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
