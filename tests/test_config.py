"""recurrent.show_config(): what this process runs with, printed or as dicts."""

import json
import os
import subprocess
import sys

import pytest

import recurrent
from recurrent import _C, workspace
from test_benchmark import bench_env


def _in_subprocess(env_extra, code):
    """Runs code in a fresh interpreter that imports the package these tests import (the
    checkout's in-place build, or the installed one)."""
    env = bench_env()
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_dicts_agree_with_the_flags():
    d = recurrent.show_config(mode="dicts")
    assert set(d) == {"recurrent", "cpu", "step_products", "blas", "rnn_executor", "environment"}
    assert d["recurrent"]["version"] == recurrent.__version__
    assert os.path.samefile(d["recurrent"]["extension"], _C.__file__)
    assert d["cpu"]["usable_cores"] == _C.get_flag("num_cores") >= 1
    sp = d["step_products"]
    if _C.get_flag("packed_gemm"):
        assert sp["packed_kernel"] == _C.get_flag("packed_gemm_kernel") in ("avx512", "avx2")
    else:
        assert sp["packed_kernel"] == "off (OpenBLAS)"
    if sp["packed_kernel"] == "avx512":
        assert sp["next_panel_prefetch_min_bytes"] == _C.get_flag("packed_prefetch_min_bytes") > 0
    else:
        assert sp["next_panel_prefetch_min_bytes"] is None
    if _C.get_flag("packed_wgrad"):
        assert sp["weight_gradients"] == "packed kernel"
        assert sp["weight_gradient_pass_rows"] == _C.get_flag("packed_wgrad_pass_rows") in (256, 1024)
    else:
        assert (sp["weight_gradients"], sp["weight_gradient_pass_rows"]) == ("OpenBLAS", None)
    assert d["blas"]["config"].startswith("OpenBLAS")
    assert d["blas"]["corename"] and d["blas"]["num_threads"] == _C.get_flag("blas_num_threads") >= 1
    ex = d["rnn_executor"]
    assert ex["enabled"] == bool(_C.get_flag("rnn_executor"))
    assert ex["min_op_us"] == _C.get_flag("rnn_executor_min_op_ns") / 1000.0
    assert ex["spin_us"] == _C.get_flag("rnn_executor_spin_ns") / 1000.0
    assert ex["num_threads"] >= 1
    for k, v in d["environment"].items():
        assert k.startswith(("RECURRENT_", "OPENBLAS_")) or k in ("OMP_NUM_THREADS", "GOTO_NUM_THREADS")
        assert os.environ[k] == v
    json.dumps(d)  # plain values: a bug report can carry it


def test_corename_is_the_one_threadpoolctl_sees():
    """The core type OpenBLAS reports through our symbols is the one threadpoolctl finds for the
    same library (not NumPy's OpenBLAS, which the process may hold too)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    ours = [i for i in threadpoolctl.threadpool_info()
            if i.get("internal_api") == "openblas" and "libscipy_openblas.so" in os.path.basename(i["filepath"])]
    if not ours:
        pytest.skip("built against a system OpenBLAS")
    assert recurrent.show_config("dicts")["blas"]["corename"].lower() == ours[0]["architecture"].lower()


def test_follows_global_init():
    old = _C.get_flag("rnn_executor"), _C.get_flag("rnn_executor_num_threads")
    try:
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor=0", "--caffe2_rnn_executor_num_threads=3"])
        ex = recurrent.show_config("dicts")["rnn_executor"]
        assert (ex["enabled"], ex["num_threads"]) == (False, 3)
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1", "--caffe2_rnn_executor_num_threads=0"])
        ex = recurrent.show_config("dicts")["rnn_executor"]
        assert (ex["enabled"], ex["num_threads"]) == (True, _C.get_flag("num_cores"))
    finally:
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor=%d" % old[0],
                              "--caffe2_rnn_executor_num_threads=%d" % old[1]])


def test_environment_switches_show():
    code = "import json, recurrent; print(json.dumps(recurrent.show_config('dicts')))"
    d = json.loads(_in_subprocess({"RECURRENT_PACKED_GEMM": "0", "RECURRENT_PACK_REUSE": "off",
                                   "RECURRENT_STEP_FUSION": "false", "RECURRENT_RNN_EXECUTOR": "0"}, code))
    sp = d["step_products"]
    assert sp["packed_kernel"] == "off (OpenBLAS)" and sp["weight_gradients"] == "OpenBLAS"
    assert (sp["pack_reuse"], sp["step_fusion"]) == (False, False)
    assert d["rnn_executor"]["enabled"] is False
    assert d["environment"]["RECURRENT_PACKED_GEMM"] == "0"
    assert d["environment"]["RECURRENT_PACK_REUSE"] == "off"


def test_stdout(capsys):
    assert recurrent.show_config() is None
    out = capsys.readouterr().out
    d = recurrent.show_config("dicts")
    for section in d:
        assert "\n%s:\n" % section in "\n" + out
    assert "  packed_kernel: %s\n" % d["step_products"]["packed_kernel"] in out
    assert "  corename: %s\n" % d["blas"]["corename"] in out
    assert "  enabled: %s\n" % ("on" if d["rnn_executor"]["enabled"] else "off") in out


def test_bad_mode():
    with pytest.raises(ValueError, match="show_config: mode must be 'stdout' or 'dicts', got 'json'"):
        recurrent.show_config(mode="json")
