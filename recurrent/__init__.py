"""recurrent: Caffe2-style recurrent networks over NumPy, with an RNN executor
that runs timesteps in parallel.

Submodules mirror caffe2.python: core, workspace, scope, model_helper, brew,
recurrent, rnn_cell, gradient_checker.
"""

import ctypes as _ctypes
import os as _os


def _preload_openblas():
    # The extension links libscipy_openblas.so from the scipy-openblas32 wheel;
    # load it by full path first so the dynamic loader finds it from any layout.
    try:
        import scipy_openblas32 as _sob
    except ImportError:  # built against a system BLAS
        return
    path = _os.path.join(_sob.get_lib_dir(), _sob.get_library(fullname=True))
    if _os.path.exists(path):
        _ctypes.CDLL(path, mode=_ctypes.RTLD_GLOBAL)


_preload_openblas()

from . import _C  # noqa: E402
from . import workspace  # noqa: E402

__version__ = "0.1.0"
from .recurrent import recurrent_net, retrieve_step_blobs, set_rnn_executor_config  # noqa: E402,F401
from . import rnn_cell  # noqa: E402,F401
