import os

# The executor tests compare the executor with the serial loop on small nets,
# where the library's default (min_op_us 4: ops this quick run serially) would
# quietly run both serially. Tests of that default set it themselves.
# Subprocesses started by tests inherit this.
os.environ["RECURRENT_RNN_EXECUTOR_MIN_OP_US"] = "0"
# Every step-weight pack kept from an earlier run is checked against a fresh
# pack (a write to a weight that was not recorded fails the run loudly), so
# that the whole suite tests pack reuse (tests/test_pack_reuse.py).
os.environ.setdefault("RECURRENT_VERIFY_PACKS", "1")

import numpy as np
import pytest

from recurrent import workspace

if os.environ.get("RECURRENT_CHECK_SHAPES", "1") != "0":
    # every RunNetOnce / RunOperatorOnce of the suite also checks static shape inference against
    # the run (tests/shape_check.py); RECURRENT_CHECK_SHAPES=0 turns it off
    import shape_check
    shape_check.install()


@pytest.fixture(autouse=True)
def _fresh_workspace():
    """Every test starts in an empty default workspace."""
    workspace.SwitchWorkspace("default", True)
    workspace.ResetWorkspace()
    yield
    workspace.SwitchWorkspace("default", True)
    workspace.ResetWorkspace()


@pytest.fixture
def rng():
    return np.random.RandomState(1234)


@pytest.fixture
def core_flag():
    """``core_flag(name, value)`` sets a process-wide flag of the core
    (``recurrent._C.set_flag``); each flag set gets its value back after the test."""
    from recurrent import _C
    saved = {}

    def set_(name, value):
        saved.setdefault(name, _C.get_flag(name))
        _C.set_flag(name, value)

    yield set_
    for name, value in saved.items():
        _C.set_flag(name, value)
