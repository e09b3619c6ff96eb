/* Runtime flags (set by workspace.GlobalInit) and the interrupt request. The
 * only process-wide mutable state of the core; all accesses are atomic. */
#include "rc_core.h"
#include <stdlib.h>
#include <string.h>

static int flag_executor = -1;        /* -1: not yet read from the environment */
static int flag_executor_threads = 0;
static int interrupt_flag = 0;
static int flag_trace = 0;
static int64_t flag_min_op_ns = -1;   /* -1: not yet read from the environment */

int64_t rc_env_us_as_ns(const char *name, int64_t def, double max_us)
{
    const char *e = getenv(name);
    if (e && *e) {
        char *end = NULL;
        double us = strtod(e, &end);
        /* unparsable, negative or absurd values keep the default (the Python
         * package warns about them at import) */
        if (end && *end == 0 && us >= 0 && us <= max_us) return (int64_t)(us * 1000.0 + 0.5);
    }
    return def;
}

int rc_env_off(const char *name)
{
    const char *e = getenv(name);
    return e && (strcmp(e, "0") == 0 || strcmp(e, "false") == 0 || strcmp(e, "off") == 0);
}

int64_t rc_flag_rnn_executor_min_op_ns(void)
{
    int64_t v = __atomic_load_n(&flag_min_op_ns, __ATOMIC_RELAXED);
    if (v < 0) {
        v = rc_env_us_as_ns("RECURRENT_RNN_EXECUTOR_MIN_OP_US", RC_RNN_EXECUTOR_MIN_OP_NS_DEFAULT, 1e6);
        __atomic_store_n(&flag_min_op_ns, v, __ATOMIC_RELAXED);
    }
    return v;
}

void rc_flag_set_rnn_executor_min_op_ns(int64_t ns) { __atomic_store_n(&flag_min_op_ns, ns < 0 ? 0 : ns, __ATOMIC_RELAXED); }

/* A switch that is on unless the environment variable `name` turns it off:
 * *slot is -1 until the variable is read (on first use), then 0 or 1. */
static int env_switch(int *slot, const char *name)
{
    int v = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (v < 0) {
        v = !rc_env_off(name);
        __atomic_store_n(slot, v, __ATOMIC_RELAXED);
    }
    return v;
}

int rc_flag_rnn_executor(void) { return env_switch(&flag_executor, "RECURRENT_RNN_EXECUTOR"); }

void rc_flag_set_rnn_executor(int on) { __atomic_store_n(&flag_executor, on ? 1 : 0, __ATOMIC_RELAXED); }
int rc_flag_rnn_executor_threads(void) { return __atomic_load_n(&flag_executor_threads, __ATOMIC_RELAXED); }
void rc_flag_set_rnn_executor_threads(int n) { __atomic_store_n(&flag_executor_threads, n, __ATOMIC_RELAXED); }

void rc_interrupt_request(void) { __atomic_store_n(&interrupt_flag, 1, __ATOMIC_RELEASE); }
int rc_interrupt_requested(void) { return __atomic_load_n(&interrupt_flag, __ATOMIC_ACQUIRE); }
/* 1 (the default): this thread's runs stop for an interrupt request (rc_interrupt_scope) */
static _Thread_local int interrupt_scope = 1;
int rc_interrupt_scope(int on)
{
    int prev = interrupt_scope;
    interrupt_scope = on ? 1 : 0;
    return prev;
}
int rc_interrupt_in_scope(void) { return interrupt_scope; }
int rc_interrupt_pending(void) { return (interrupt_scope && rc_interrupt_requested()) || rc_shutdown_pending(); }
void rc_interrupt_clear(void) { __atomic_store_n(&interrupt_flag, 0, __ATOMIC_RELEASE); }

static int shutdown_flag, calls_in_flight;
void rc_shutdown_request(void) { __atomic_store_n(&shutdown_flag, 1, __ATOMIC_RELEASE); }
int rc_shutdown_pending(void) { return __atomic_load_n(&shutdown_flag, __ATOMIC_ACQUIRE); }
void rc_calls_enter(void) { __atomic_add_fetch(&calls_in_flight, 1, __ATOMIC_ACQ_REL); }
void rc_calls_leave(void) { __atomic_sub_fetch(&calls_in_flight, 1, __ATOMIC_ACQ_REL); }
int rc_calls_in_flight(void) { return __atomic_load_n(&calls_in_flight, __ATOMIC_ACQUIRE); }

static int flag_verify_packs = -1; /* -1: not yet read from the environment */
int rc_flag_verify_packs(void)
{
    int v = __atomic_load_n(&flag_verify_packs, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("RECURRENT_VERIFY_PACKS");
        v = e && *e && !rc_env_off("RECURRENT_VERIFY_PACKS");
        __atomic_store_n(&flag_verify_packs, v, __ATOMIC_RELAXED);
    }
    return v;
}
void rc_flag_set_verify_packs(int on) { __atomic_store_n(&flag_verify_packs, on ? 1 : 0, __ATOMIC_RELAXED); }

int rc_flag_rnn_trace(void) { return __atomic_load_n(&flag_trace, __ATOMIC_RELAXED); }
void rc_flag_set_rnn_trace(int on) { __atomic_store_n(&flag_trace, on ? 1 : 0, __ATOMIC_RELAXED); }

static int flag_help = -1; /* -1: not yet read from the environment */
int rc_flag_rnn_executor_help(void) { return env_switch(&flag_help, "RECURRENT_RNN_EXECUTOR_HELP"); }
void rc_flag_set_rnn_executor_help(int on) { __atomic_store_n(&flag_help, on ? 1 : 0, __ATOMIC_RELAXED); }
