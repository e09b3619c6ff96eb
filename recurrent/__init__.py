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
from . import workspace, scope, core, model_helper, brew, gradient_checker, trace  # noqa: E402,F401
from . import recurrent as _recurrent_module  # noqa: E402
from .recurrent import recurrent_net, retrieve_step_blobs, set_rnn_executor_config  # noqa: E402,F401
from . import rnn_cell, gru_cell, torch_interop  # noqa: E402,F401

# `recurrent.recurrent` is the module mirroring caffe2.python.recurrent
recurrent = _recurrent_module

__version__ = "0.1.0"
__all__ = ["core", "workspace", "scope", "model_helper", "brew", "gradient_checker", "rnn_cell", "gru_cell",
           "torch_interop", "trace", "recurrent", "recurrent_net", "retrieve_step_blobs", "set_rnn_executor_config"]
