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


# OpenBLAS's idle worker threads spin for 2**28 cycles (~0.1 s) after each
# multi-threaded call before they sleep. The RNN executor limits BLAS to one
# thread per worker, but a worker left spinning by the GEMM that ran just before
# (outside the loop, with all threads) takes a core away from the executor's
# workers: measured 1.45x slower executor runs at hidden 256 / batch 16. 2**16
# cycles (~25 us) keeps them awake between back-to-back GEMMs of the serial path
# and lets them sleep soon after. OpenBLAS reads the variable once, when it is
# loaded: set here only for our OpenBLAS and only if the user has not set it.
_BLAS_THREAD_TIMEOUT = "16"


def _load_core():
    set_here = "OPENBLAS_THREAD_TIMEOUT" not in _os.environ
    if set_here:
        _os.environ["OPENBLAS_THREAD_TIMEOUT"] = _BLAS_THREAD_TIMEOUT
    try:
        _preload_openblas()
        from . import _C  # noqa: F401  (loads a system OpenBLAS when built against one)
    finally:
        if set_here:
            del _os.environ["OPENBLAS_THREAD_TIMEOUT"]


_load_core()

from . import _C  # noqa: E402


def _check_env():
    from .workspace import _US_FLAG_MAX
    for var, flag in (("RECURRENT_RNN_EXECUTOR_MIN_OP_US", "rnn_executor_min_op_ns"),
                      ("RECURRENT_RNN_EXECUTOR_SPIN_US", "rnn_executor_spin_ns")):
        hi = _US_FLAG_MAX[flag]
        v = _os.environ.get(var)
        if not v:
            continue
        try:
            ok = 0 <= float(v) <= float(hi)
        except ValueError:
            ok = False
        if not ok:
            import warnings
            warnings.warn("%s=%r is not a number of microseconds in [0, %s]; using the default %g"
                          % (var, v, hi, _C.get_flag(flag) / 1000.0), RuntimeWarning, stacklevel=2)
    for var, meaning in (("RECURRENT_STEP_FUSION", "step FCs do the Sums after them"),
                         ("RECURRENT_PACK_REUSE", "step-weight packs are kept while the weights are unchanged"),
                         ("RECURRENT_VERIFY_PACKS", "kept step-weight packs are verified"),
                         ("RECURRENT_RNN_EXECUTOR_HELP", "idle executor threads help split products")):
        v = _os.environ.get(var)
        if v and v not in ("0", "false", "off", "1", "true", "on"):
            import warnings
            warnings.warn("%s=%r is not 0 or 1; %s (as with 1)" % (var, v, meaning), RuntimeWarning, stacklevel=2)
    v = _os.environ.get("RECURRENT_PACKED_GEMM")
    if v and v not in ("0", "1", "avx2"):
        import warnings
        warnings.warn("RECURRENT_PACKED_GEMM=%r is not 0, 1 or avx2; using the CPU's best kernel (%s)"
                      % (v, _C.get_flag("packed_gemm_kernel")), RuntimeWarning, stacklevel=2)
    elif v == "avx2" and _C.get_flag("packed_gemm_kernel") != "avx2":
        import warnings
        warnings.warn("RECURRENT_PACKED_GEMM=avx2: this CPU has no AVX2 + FMA; the step products use OpenBLAS",
                      RuntimeWarning, stacklevel=2)


_check_env()


def _shutdown():
    # At interpreter exit daemon threads may still be inside RunNet: the
    # process would then exit (OpenBLAS's destructor, freed memory) under
    # their running ops and crash or hang. Stop every run at its next op or
    # timestep and wait for those calls (they raise RuntimeError if their
    # thread ever runs again). Registered at import, so it runs after the
    # atexit handlers of code that imported recurrent.
    _C._shutdown(30.0)


import atexit as _atexit  # noqa: E402
_atexit.register(_shutdown)
from . import workspace, scope, core, model_helper, brew, gradient_checker, trace  # noqa: E402,F401
from . import recurrent as _recurrent_module  # noqa: E402
from .recurrent import recurrent_net, retrieve_step_blobs, set_rnn_executor_config  # noqa: E402,F401
from . import rnn_cell, gru_cell, torch_interop, optimizer, utils, attention  # noqa: E402,F401
from ._config import show_config  # noqa: E402,F401

# `recurrent.recurrent` is the module mirroring caffe2.python.recurrent
recurrent = _recurrent_module

__version__ = "0.1.0"
__all__ = ["core", "workspace", "scope", "model_helper", "brew", "gradient_checker", "rnn_cell", "gru_cell",
           "torch_interop", "trace", "optimizer", "utils", "attention", "recurrent", "recurrent_net",
           "retrieve_step_blobs", "set_rnn_executor_config", "show_config"]
