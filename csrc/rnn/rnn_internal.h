/* Internal interfaces of the RecurrentNetwork family (csrc/rnn/). */
#ifndef RC_RNN_INTERNAL_H
#define RC_RNN_INTERNAL_H
#include "../core/rc_core.h"

/* The step workspaces of one RecurrentNetwork op: the object held by the op's
 * last output blob ("step_workspaces"), read by the gradient op and by
 * RecurrentNetworkBlobFetcher. Owned by that blob (freed by rnn_scratch_free). */
#define RC_RNN_EXEC_STATUS_N 9 /* the values of rc_rnn_exec_status */

typedef struct rnn_scratch {
    rc_workspace *shared;   /* child of the op's workspace; owned */
    int n, cap;
    rc_workspace **ws;      /* step workspaces, children of shared; owned */
    rc_net **fwd;           /* per step workspace: the forward step net instance (owned, may be NULL) */
    rc_net **bwd;           /* per step workspace: the backward step net instance (owned, may be NULL) */
    uint64_t fwd_owner;     /* id of the op whose step net fwd[] instantiates */
    uint64_t bwd_owner;
    uint64_t fwd_gen, bwd_gen; /* bumped whenever a forward / backward step net instance is created or freed */
    int64_t fwd_T;          /* T of the last forward run (-1: none) */
    int fwd_has_bwd;        /* whether that run kept one workspace per timestep */
    uint64_t fwd_run;       /* the last forward run's step-op run_seq (the backward's) */
    /* the executor's status after the last successful run of the forward [0]
     * and gradient [1] op whose executor is enabled (store_exec_status);
     * kept here, not in a workspace blob, so that a net's blobs are the same
     * with the executor on or off (as in Caffe2). has_status[d]: 0 before. */
    float exec_status[2][RC_RNN_EXEC_STATUS_N];
    int has_status[2];
} rnn_scratch;

#define RNN_SCRATCH_KIND "RecurrentNetwork step workspaces"

RC_INTERNAL void rnn_scratch_free(void *p);

/* The state of the rnn_internal_apply_link and rnn_internal_accumulate_gradient_input ops (owned by the
 * op; read by the executor's dependency analysis). offset: the destination row is t + offset; window: the
 * link's row count (0 for an accumulate op); alias_offset (accumulate op, has_alias_offset set): the source
 * is the gradient of the alias of that offset of the destination's rows (see acc_run). */
typedef struct {
    int64_t offset, window;
    int64_t alias_offset;
    int has_alias_offset;
} rnn_link_args;

/* ---- the executor (csrc/rnn/executor.c) */
typedef struct rc_rnn_exec rc_rnn_exec;

/* Builds the executor for a step net: dependency analysis of def (ops in
 * order, with the link ops) given the recurrent mapping. forward: 1 for the
 * forward direction (t = 0..T-1), 0 for backward (t = T-1..0). Owned by the
 * caller (rc_rnn_exec_free). NULL + err on failure. */
RC_INTERNAL rc_rnn_exec *rc_rnn_exec_new(const rc_netdef *def, int n_links, char *const *link_internal,
                                         char *const *link_external, const int64_t *link_offset, int forward,
                                         int num_threads, int debug, rc_err *err);
RC_INTERNAL void rc_rnn_exec_free(rc_rnn_exec *ex);
/* Runs nets[t] (t over T timesteps in the executor's direction), at most
 * max_parallel timesteps in flight (0: unlimited). ws[t] is timestep t's step
 * workspace, whose int32 blob `timestep` is set to t before t's first op runs.
 * A timestep never starts before the previous use of its workspace finished.
 * gen identifies the set of net instances: the cached dependency graph is
 * rebuilt when it changes (instances may be re-created at old addresses). */
RC_INTERNAL rc_status rc_rnn_exec_run(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws, const char *timestep,
                                      int T, int max_parallel, uint64_t gen, rc_err *err);

/* The average parallelism of running nets[t] over T timesteps: the time of
 * all tasks over that of the longest dependency chain, with op_cost[i] the
 * time (any unit) of step op i (i < n_cost, which must be the step nets' op
 * count, else *parallelism is 0: not measured) in one timestep (the link
 * ops' cost counts with the task that runs them, the prologue costs
 * nothing; all costs 0 give 1.0). 1.0 when
 * nothing can overlap (a one-layer LSTM: each op needs the one before it);
 * it grows with the layers of a stacked cell (their wavefront). Builds the
 * dependency graph for these nets and keeps it for the next run, as
 * rc_rnn_exec_run does. */
RC_INTERNAL rc_status rc_rnn_exec_parallelism(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws,
                                              const char *timestep, int T, uint64_t gen, const double *op_cost,
                                              int n_cost, double *parallelism, rc_err *err);

/* Opt-in trace of the next runs: per instance (timestep, op index or -1 for the
 * prologue, start_us, end_us, worker) since the run's start. Borrowed; valid
 * until the next run. */
RC_INTERNAL void rc_rnn_exec_set_trace(rc_rnn_exec *ex, int on);
/* CLOCK_MONOTONIC in nanoseconds (traces, the executor's min_op_us timing). */
RC_INTERNAL int64_t rc_rnn_now_ns(void);
RC_INTERNAL const int32_t *rc_rnn_exec_trace(const rc_rnn_exec *ex, int *n_records);
/* The same records for the parts of products that idle threads ran for a
 * task ("Helping" in executor.c), in the order they ended: the task's
 * timestep and op, the part's start_us, end_us and the helper's worker id
 * (a part is left out only when memory for its record runs out). Borrowed;
 * valid until the next run. */
RC_INTERNAL const int32_t *rc_rnn_exec_trace_parts(const rc_rnn_exec *ex, int *n_records);

/* recurrent_network.c: how many step FCGradients (process-wide, since load)
 * were rewritten to use another one's stash of the same dY (tests). */
RC_INTERNAL int64_t rc_rnn_shared_stashes(void);
/* recurrent_network.c: how many step-weight packs (process-wide, since load)
 * were kept from an earlier run instead of packed again (tests). */
RC_INTERNAL int64_t rc_rnn_packs_reused(void);
/* recurrent_network.c: how many times (process-wide, since load) a forward
 * run left a state's rows unzeroed because its step ops write them all
 * (find_state_writers; tests). */
RC_INTERNAL int64_t rc_rnn_states_unzeroed(void);

/* recurrent_network.c: the executor status of the RecurrentNetwork op
 * (backward = 0) or its gradient op (1) whose step workspaces blob b is, as of
 * its last successful run with the executor enabled, into out (see
 * store_exec_status for the values): 1, 0 when there is none (never ran so, or
 * the executor disabled), -1 when b holds no step workspaces. */
RC_INTERNAL int rc_rnn_exec_status(const rc_blob *b, int backward, float out[RC_RNN_EXEC_STATUS_N]);

#endif
