/* The RNN executor (being written): for now runs timesteps in order. */
#include "rnn_internal.h"
#include <stdlib.h>

struct rc_rnn_exec { int forward; };

rc_rnn_exec *rc_rnn_exec_new(const rc_netdef *def, int n_links, char *const *link_internal,
                             char *const *link_external, const int64_t *link_offset, int forward, int num_threads,
                             int debug, rc_err *err)
{
    rc_rnn_exec *ex = calloc(1, sizeof *ex);
    if (!ex) { rc_err_set(err, RC_ERR_MEMORY, "out of memory"); return NULL; }
    ex->forward = forward;
    return ex;
}

void rc_rnn_exec_free(rc_rnn_exec *ex) { free(ex); }

rc_status rc_rnn_exec_run(rc_rnn_exec *ex, rc_net **nets, rc_workspace **ws, const char *timestep, int T,
                          int max_parallel, rc_err *err)
{
    return rc_err_set(err, RC_ERR_RUNTIME, "executor not built yet");
}
