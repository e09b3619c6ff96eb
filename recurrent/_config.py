"""recurrent.show_config(): which kernels, BLAS and executor settings this process runs with."""

import os

from . import _C

_OFF = ("0", "false", "off")
_ENV_PREFIXES = ("RECURRENT_", "OPENBLAS_")
_ENV_NAMES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS")


def _env_on(var):
    # the rule of the C core's rc_env_off: unset or anything but 0 / false / off is on
    return os.environ.get(var, "1") not in _OFF


def config_dicts():
    """The configuration as nested dicts (``show_config(mode="dicts")``)."""
    from . import __version__
    packed = bool(_C.get_flag("packed_gemm"))
    kernel = _C.get_flag("packed_gemm_kernel") if packed else "off (OpenBLAS)"
    wgrad = bool(_C.get_flag("packed_wgrad"))
    threads = _C.get_flag("rnn_executor_num_threads")
    return {
        "recurrent": {"version": __version__, "extension": _C.__file__},
        "cpu": {"usable_cores": _C.get_flag("num_cores")},
        "step_products": {
            # RECURRENT_PACKED_GEMM and the CPU decide once, at the first product
            "packed_kernel": kernel,
            # the AVX-512 tiles' next-panel prefetch, and the passes of the weight-gradient sums
            "next_panel_prefetch_min_bytes": _C.get_flag("packed_prefetch_min_bytes") if kernel == "avx512" else None,
            "weight_gradients": "packed kernel" if wgrad else "OpenBLAS",
            "weight_gradient_pass_rows": _C.get_flag("packed_wgrad_pass_rows") if wgrad else None,
            # read when a RecurrentNetwork op is created
            "pack_reuse": _env_on("RECURRENT_PACK_REUSE"),
            "verify_packs": bool(_C.get_flag("verify_packs")),
            "step_fusion": _env_on("RECURRENT_STEP_FUSION"),
        },
        "blas": {
            "config": _C.get_flag("blas_config").strip(),
            "corename": _C.get_flag("blas_corename"),
            "num_threads": _C.get_flag("blas_num_threads"),
        },
        "rnn_executor": {
            "enabled": bool(_C.get_flag("rnn_executor")),
            # 0 (the default): the usable cores
            "num_threads": threads if threads > 0 else _C.get_flag("num_cores"),
            "min_op_us": _C.get_flag("rnn_executor_min_op_ns") / 1000.0,
            "spin_us": _C.get_flag("rnn_executor_spin_ns") / 1000.0,
            "help": bool(_C.get_flag("rnn_executor_help")),
            "trace": bool(_C.get_flag("rnn_executor_trace")),
        },
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES},
    }


def _format(d):
    lines = []
    for section, items in d.items():
        lines.append("%s:" % section)
        if not items:
            lines.append("  (none set)")
        for k, v in items.items():
            if isinstance(v, bool):
                v = "on" if v else "off"
            elif v is None:
                v = "n/a"
            lines.append("  %s: %s" % (k, v))
    return "\n".join(lines)


def show_config(mode="stdout"):
    """Prints (``mode="stdout"``) or returns (``mode="dicts"``) what this
    process runs with: the step-product kernel and its machine-dependent
    choices, the BLAS (OpenBLAS's build and the core type whose kernels it
    runs) and its thread count, the RNN executor's settings, and the
    environment variables that change any of them. Paste it into bug reports
    and next to benchmark numbers. The values are the current process-wide
    ones: the executor's follow ``workspace.GlobalInit`` flags and their
    environment variables (``set_rnn_executor_config`` changes single ops:
    ``trace.executor_status`` shows what those decided); ``pack_reuse`` and
    ``step_fusion`` are read when a net is created (README, "The RNN
    executor")."""
    if mode not in ("stdout", "dicts"):
        raise ValueError("show_config: mode must be 'stdout' or 'dicts', got %r" % (mode,))
    d = config_dicts()
    if mode == "dicts":
        return d
    print(_format(d))
    return None
