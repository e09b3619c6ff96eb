/* ops/shape.c -- operator family table (rows are added as the ops are implemented). */
#include "../core/rc_core.h"

const rc_op_schema rc_ops_shape[] = {
    {0},
};
