"""Polling before sleeping (rnn_executor_spin_us, csrc/core/spin.c).

A thread of a parallel run that runs out of work (an executor worker, a
helper of the packed step products, a caller waiting for them) polls for new
work for a bounded time before it sleeps on a condition variable. These tests
check the controls (flag, GlobalInit, environment), that the results do not
depend on the setting, and that no thread keeps polling once a run is over."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from recurrent import _C, workspace
from test_executor import assert_bitwise, build_stack

DEFAULT_NS = 100000


@pytest.fixture
def restore_spin():
    was = _C.get_flag("rnn_executor_spin_ns")
    yield
    _C.set_flag("rnn_executor_spin_ns", was)


def test_flag_and_global_init(restore_spin):
    _C.set_flag("rnn_executor_spin_ns", 2500)
    assert _C.get_flag("rnn_executor_spin_ns") == 2500
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_spin_us=7.5"])
    assert _C.get_flag("rnn_executor_spin_ns") == 7500
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_spin_us=0"])
    assert _C.get_flag("rnn_executor_spin_ns") == 0
    for bad in ("-1", "100001", "nan", "fast"):
        with pytest.raises(ValueError, match="caffe2_rnn_executor_spin_us"):
            workspace.GlobalInit(["prog", "--caffe2_rnn_executor_spin_us=" + bad])
    assert _C.get_flag("rnn_executor_spin_ns") == 0  # a rejected value changes nothing
    for bad in (-1, 100000001):
        with pytest.raises(ValueError, match=r"rnn_executor_spin_ns must be in \[0, 100000000\]"):
            _C.set_flag("rnn_executor_spin_ns", bad)


def _flag_in_child(value):
    env = dict(os.environ)
    env["RECURRENT_RNN_EXECUTOR_SPIN_US"] = value
    r = subprocess.run([sys.executable, "-W", "always", "-c",
                        "from recurrent import _C; print(_C.get_flag('rnn_executor_spin_ns'))"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.split()[-1]), r.stderr


def test_environment():
    assert _flag_in_child("25") == (25000, "")
    assert _flag_in_child("0")[0] == 0
    for bad in ("-3", "1e9", "soon"):
        got, err = _flag_in_child(bad)
        assert got == DEFAULT_NS
        assert "RECURRENT_RNN_EXECUTOR_SPIN_US=%r is not a number of microseconds in [0, 100000]" % bad in err


@pytest.mark.parametrize("spin_ns", (0, 1000, DEFAULT_NS))
def test_results_do_not_depend_on_polling(spin_ns, restore_spin):
    """3-layer LSTM, loss and gradients: executor (2 threads) and serial path
    (products big enough to be split over the packed helpers) with polling
    off, with a budget that runs out mid-run (1 us) and the default: all
    bitwise equal to the serial run without polling."""
    case = build_stack("lstm", layers=3, H=256, N=8, D=5, name="spin%d" % spin_ns)
    _C.set_flag("rnn_executor_spin_ns", 0)
    ref = case.run(7, 4, enable=0)
    _C.set_flag("rnn_executor_spin_ns", spin_ns)
    for _ in range(3):
        assert_bitwise(ref, case.run(7, 4, enable=1, threads=2), "executor, spin %d ns" % spin_ns)
        assert_bitwise(ref, case.run(7, 4, enable=0), "serial, spin %d ns" % spin_ns)


def _cpu_seconds():
    t = os.times()
    return t.user + t.system


@pytest.mark.skipif(_C.get_flag("num_cores") < 2, reason="polling is off on one core")
def test_no_polling_after_a_run(restore_spin):
    """With the largest budget (100 ms), the executor's workers stop polling
    when the run ends and the packed helpers within the budget: one second
    of idleness afterwards costs far less than a second of CPU."""
    _C.set_flag("rnn_executor_spin_ns", 100000000)
    case = build_stack("lstm", layers=2, H=256, N=16, D=8, name="idle")
    for enable in (1, 0):
        case.run(5, 2, enable=enable, threads=2)
        time.sleep(0.2)  # the helpers' budget runs out
        c0, w0 = _cpu_seconds(), time.perf_counter()
        time.sleep(1.0)
        used, wall = _cpu_seconds() - c0, time.perf_counter() - w0
        assert used < 0.25 * wall, "enable=%d: %.2f s of CPU in %.2f s of idleness" % (enable, used, wall)
