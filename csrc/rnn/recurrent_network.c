/* rnn/recurrent_network.c -- RecurrentNetwork and friends (being written). */
#include "../core/rc_core.h"

const rc_op_schema rc_ops_recurrent[] = {
    {0},
};
