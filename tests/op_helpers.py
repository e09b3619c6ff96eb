"""Small helpers shared by the op test files: run one op, feed blobs, check the workspace is usable
after an error."""

import numpy as np

from recurrent import core, workspace

I32_MAX = 2 ** 31 - 1


def run(type_, inputs, outputs, **args):
    workspace.RunOperatorOnce(core.CreateOperator(type_, inputs, outputs, **args))


def feed(**blobs):
    for k, v in blobs.items():
        workspace.FeedBlob(k, v)


def usable():
    workspace.FeedBlob("_ok_x", np.ones((2, 3), np.float32))
    run("Scale", ["_ok_x"], ["_ok_y"], scale=2.0)
    assert (workspace.FetchBlob("_ok_y") == 2).all()


def assert_must_not_differentiate(op_def, n_inputs):
    """An op Caffe2 registered SHOULD_NOT_DO_GRADIENT: a gradient reaching an output is a ValueError
    naming the op and the output; with none reaching it, its inputs get none, silently."""
    import re

    import pytest
    outs = list(op_def.output)
    with pytest.raises(ValueError, match=r"op %s: the gradient of its output 0 '%s' reaches it, but %s must not "
                                         r"be differentiated" % (op_def.type, re.escape(outs[0]), op_def.type)):
        core.GradientRegistry.GetGradientForOp(op_def, [outs[0] + "_grad"] + [None] * (len(outs) - 1))
    assert core.GradientRegistry.GetGradientForOp(op_def, [None] * len(outs)) == ([], [None] * n_inputs)
