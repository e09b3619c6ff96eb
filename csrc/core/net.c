/* Nets: an ordered list of ops created in one workspace, run in order. */
#include "rc_core.h"
#include <stdlib.h>

struct rc_net {
    rc_netdef *def;   /* owned copy */
    rc_op **ops;      /* owned */
    int n_ops;
};

void rc_net_free(rc_net *net)
{
    if (!net) return;
    for (int i = 0; i < net->n_ops; i++) rc_op_free(net->ops[i]);
    free(net->ops);
    rc_netdef_free(net->def);
    free(net);
}

rc_net *rc_net_create(rc_workspace *ws, const rc_netdef *def, rc_err *err)
{
    rc_net *net = calloc(1, sizeof *net);
    if (!net) goto oom;
    if (!(net->def = rc_netdef_clone(def))) goto oom;
    if (def->n_op && !(net->ops = calloc((size_t)def->n_op, sizeof *net->ops))) goto oom;
    for (int i = 0; i < def->n_op; i++) {
        net->ops[i] = rc_op_create(ws, &def->ops[i], i, err);
        if (!net->ops[i]) {
            if (def->name && def->name[0]) rc_err_prefix(err, "net '%s': ", def->name);
            rc_net_free(net);
            return NULL;
        }
        net->n_ops = i + 1;
    }
    return net;
oom:
    rc_net_free(net);
    rc_err_set(err, RC_ERR_MEMORY, "out of memory creating net '%s'", def->name ? def->name : "");
    return NULL;
}

rc_status rc_net_run(rc_net *net, rc_err *err)
{
    for (int i = 0; i < net->n_ops; i++) {
        if (rc_interrupt_pending())
            return rc_err_set(err, RC_ERR_INTERRUPT, "net '%s' interrupted before op #%d", net->def->name, i);
        rc_status st = rc_op_run(net->ops[i], err);
        if (st) return st;
    }
    return RC_OK;
}

int rc_net_num_ops(const rc_net *net) { return net->n_ops; }
rc_op *rc_net_op(const rc_net *net, int i) { return net->ops[i]; }
const rc_netdef *rc_net_def(const rc_net *net) { return net->def; }
