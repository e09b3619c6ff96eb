/* The Python op (Caffe2's `net.Python(f)`): runs a Python function as an op.
 *
 * The core knows no Python: the op calls a hook the Python binding installs
 * (csrc/python/module.c), which takes the GIL, calls the function registered
 * under the op's argument `token` (recurrent/python_op.py) on copies of the
 * inputs (and, with argument `pass_workspace` = 1, the workspace running the
 * net) and writes what it returns into the outputs. Without a hook (the C
 * tests, an embedding without the binding) the op fails with a RuntimeError.
 *
 * A token may name a builder (net.Python((builder, args, kwargs))): then each
 * op instance gets its own function, built when the op is created (the
 * binding's build hook) and dropped when it is freed (its release hook).
 *
 * The op is refused in RecurrentNetwork step nets (RC_OP_NOT_IN_STEP_NET): the
 * executor runs step ops on worker threads, which never touch Python. It
 * therefore only runs in the thread that runs the net, which released the GIL
 * for the run and takes it back for the call. */
#include "../core/rc_core.h"

static rc_pyop_hook pyop_hook;
static rc_pyop_build_hook build_hook;
static rc_pyop_release_hook release_hook;

void rc_set_pyop_hook(rc_pyop_hook hook) { pyop_hook = hook; }

void rc_set_pyop_instance_hooks(rc_pyop_build_hook build, rc_pyop_release_hook release)
{
    build_hook = build;
    release_hook = release;
}

/* op->state: the function built for this op instance (a builder's), if any. */
typedef struct {
    int64_t instance; /* > 0; released with the state */
} pyop_state;

int64_t rc_pyop_instance(const rc_op *op) { return op->state ? ((const pyop_state *)op->state)->instance : 0; }

static void pyop_free_state(void *state)
{
    pyop_state *ps = state;
    if (release_hook) release_hook(ps->instance);
    free(ps);
}

static rc_status pyop_setup(rc_op *op, rc_err *err)
{
    const char *token;
    rc_status st = rc_arg_s(&op->def, "token", NULL, &token, err);
    if (st) return st;
    if (!token || !token[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument 'token' is missing: a %s op is made by net.Python(f)(inputs, outputs), which "
                          "registers f under a token", op->def.type);
    int64_t pass_ws; /* 1: f(inputs, outputs, workspace) (net.Python(f, pass_workspace=True)) */
    st = rc_arg_i(&op->def, "pass_workspace", 0, &pass_ws, err);
    if (st) return st;
    if (pass_ws != 0 && pass_ws != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'pass_workspace' must be 0 or 1, got %lld",
                          (long long)pass_ws);
    if (!build_hook) return RC_OK;
    int64_t instance = 0;
    st = build_hook(op, token, &instance, err);
    if (st || instance <= 0) return st;
    pyop_state *ps = malloc(sizeof *ps);
    if (!ps) {
        if (release_hook) release_hook(instance);
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    ps->instance = instance;
    op->state = ps;
    return RC_OK;
}

static rc_status pyop_run(rc_op *op, rc_err *err)
{
    if (!pyop_hook)
        return rc_op_fail(op, err, RC_ERR_RUNTIME, "Python functions can only run through the recurrent Python "
                                                   "module (no Python here)");
    if (rc_shutdown_pending())
        return rc_op_fail(op, err, RC_ERR_INTERRUPT, "recurrent is shutting down: the Python function is not called");
    return pyop_hook(op, err);
}

int rc_op_writes_any_blob(const rc_op *op)
{
    if (!(op->schema->flags & RC_OP_PASS_WORKSPACE)) return 0;
    int64_t pass_ws = 0;
    rc_err e;
    rc_err_clear(&e);
    return rc_arg_i(&op->def, "pass_workspace", 0, &pass_ws, &e) == RC_OK && pass_ws != 0;
}

const rc_op_schema rc_ops_pyfunc[] = {
    {"Python", 0, -1, 0, -1, rc_inplace_any, pyop_setup, pyop_run, pyop_free_state,
     "outputs = f(inputs), f a Python function registered under argument 'token' by net.Python(f)", NULL,
     RC_OP_NOT_IN_STEP_NET | RC_OP_PASS_WORKSPACE},
    {"PythonGradient", 0, -1, 0, -1, rc_inplace_any, pyop_setup, pyop_run, pyop_free_state,
     "the input gradients of a Python op: grad_f(inputs + outputs + output gradients), registered by "
     "net.Python(f, grad_f)", NULL, RC_OP_NOT_IN_STEP_NET | RC_OP_PASS_WORKSPACE},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
