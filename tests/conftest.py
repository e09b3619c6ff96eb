import os

# The executor tests compare the executor with the serial loop on small nets,
# where the library's default (min_op_us 4: ops this quick run serially) would
# quietly run both serially. Tests of that default set it themselves.
# Subprocesses started by tests inherit this.
os.environ["RECURRENT_RNN_EXECUTOR_MIN_OP_US"] = "0"

import numpy as np
import pytest

from recurrent import workspace


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
