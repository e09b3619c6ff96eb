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
