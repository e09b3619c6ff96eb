"""Every registered op type on empty inputs with a huge dim ((2^40, 0), (0, 2^40), (2^20, 2^20, 0), ...;
float32 and int32; 1 to 3 inputs; default arguments): each run raises or returns at once, never loops
over the empty extent. Such loops were found in Im2Col / Col2Im (by a directed stress run), then in
Conv / ConvTranspose and their gradients, Normalize / NormalizeL1 / NormalizeGradient and
SoftmaxGradient (by this sweep), Softmax (by this sweep under ASan: an optimizing compiler removed
its empty loop), and the pooling ops and their gradients (NHWC with C = 0, by the sweep with common
arguments): minutes to hours for an output of no element.

The sweep runs in a child process (this file run as a script). There a watchdog, re-armed for each
run, dumps the stacks and exits when a run takes longer than RUN_WATCHDOG_S; its last progress line
on stderr names the op, shapes and dtype."""

import faulthandler
import os
import subprocess
import sys

import numpy as np
import pytest

SLOW = 4 if os.environ.get("ASAN_OPTIONS") or os.environ.get("TSAN_OPTIONS") else 1
RUN_WATCHDOG_S = 30 * SLOW  # one op run on empty inputs (microseconds when it does not loop)
TIMEOUT_S = 900 * SLOW  # the whole sweep (about 110000 runs; under a minute in a Release build)

# default arguments: these shapes, float32 and int32
SHAPES = [(2 ** 40, 0), (2 ** 40, 0, 3), (0, 2 ** 40), (2 ** 20, 2 ** 20, 0), (2 ** 40, 0, 1, 1)]
# common arguments (an op that refuses one at creation is skipped): these shapes, float32
ARG_SHAPES = [(2 ** 40, 0), (2 ** 40, 0, 3), (2 ** 40, 0, 1, 1), (2 ** 40, 1, 1, 0), (1, 2 ** 40, 0)]
ARGS = [{"axis": 1}, {"axis": 0}, {"kernel": 1}, {"kernel": 1, "order": "NHWC"}, {"broadcast": 1},
        {"axis": 1, "broadcast": 1}, {"kernel": 1, "stride": 1, "pad": 0}, {"num_segments": 1}, {"dims": [1]},
        {"shape": [1]}, {"to": 1}, {"group": 1}, {"block_size": 1}]


def _run(op_type, shape, n_in, dtype, args):
    """1 when the op was created and run (raising or not), 0 when creating it refused the arguments."""
    from recurrent import core, workspace
    workspace.ResetWorkspace()
    names = ["i%d" % k for k in range(n_in)]
    for name in names:
        workspace.FeedBlob(name, np.zeros(shape, dtype))
    try:
        op = core.CreateOperator(op_type, names, ["o0"], **args)
    except Exception:
        return 0
    sys.stderr.write("%s %s %d inputs %s %s\n" % (op_type, shape, n_in, dtype.__name__, args))
    faulthandler.dump_traceback_later(RUN_WATCHDOG_S, exit=True)
    try:
        workspace.RunOperatorOnce(op)
    except Exception:
        pass  # refusing these inputs is fine: the bad-input tests check the messages
    faulthandler.cancel_dump_traceback_later()
    return 1


def sweep():
    from recurrent import core
    runs = 0
    for op_type in sorted(core.RegisteredOperators()):
        for n_in in (1, 2, 3):
            for shape in SHAPES:
                for dtype in (np.float32, np.int32):
                    runs += _run(op_type, shape, n_in, dtype, {})
            for shape in ARG_SHAPES:
                for args in ARGS:
                    _run(op_type, shape, n_in, np.float32, args)
    return runs


def test_every_op_on_empty_inputs_of_a_huge_dim_returns_at_once():
    import recurrent  # the child imports the same package as this process (installed, staged or in place)
    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail("the sweep was killed after %d s; its stderr ends:\n%s" % (TIMEOUT_S, (e.stderr or "")[-3000:]))
    last = [line for line in p.stderr.splitlines() if " inputs " in line][-1:]
    assert p.returncode == 0, "a run did not return within %d s (or crashed): %s\n%s" % (
        RUN_WATCHDOG_S, last, p.stderr[-6000:])
    assert p.stdout.strip().splitlines()[-1] == "runs %d" % (
        len(recurrent.core.RegisteredOperators()) * len(SHAPES) * 3 * 2)


if __name__ == "__main__":
    print("runs %d" % sweep())
