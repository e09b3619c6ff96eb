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
