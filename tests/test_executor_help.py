"""Executor threads with nothing to run help split the products of the
instances running (csrc/rnn/executor.c, "Helping"): a worker's step product
is posted in parts, polling threads take parts, and the results are the
bits of the serial loop, which splits the same products over its own
threads. Helping is on by default; --caffe2_rnn_executor_help=0 (or
RECURRENT_RNN_EXECUTOR_HELP=0) turns it off."""

import os
import subprocess
import sys

import pytest

from recurrent import _C, workspace
from test_executor import assert_bitwise, build_stack


@pytest.fixture
def help_flag(core_flag):
    return lambda on: core_flag("rnn_executor_help", on)


def helped():
    return _C.get_flag("executor_help_parts")


# one layer is a chain (the other thread always idle), two layers a wavefront
# with gaps; at hidden 128 / batch 32 every step product (32 x 512 x 128, the
# GRU's 32 x 384 x 128) is large enough to be split. Whether a thread polls
# when a product is posted is a matter of timing, so these check the bits
# only (an unloaded machine helps in every one of them); the test below
# checks that helping happens.
@pytest.mark.parametrize("kind,layers", [("lstm", 1), ("lstm", 2), ("gru", 1), ("gru", 2)])
def test_helped_runs_give_the_serial_bits(kind, layers, help_flag):
    case = build_stack(kind, layers=layers, H=128, N=32, D=16, name="help_%s%d" % (kind, layers))
    T = 20
    ref = case.run(T, 4, enable=0)
    for threads in (2, 3):
        for on in (0, 1):
            help_flag(on)
            before = helped()
            got = case.run(T, 4, enable=1, threads=threads)
            assert_bitwise(ref, got, "%s x%d, %d threads, helping %d" % (kind, layers, threads, on))
            if not on:
                assert helped() == before  # off: no part runs on another thread


@pytest.mark.skipif(_C.get_flag("num_cores") < 2, reason="idle threads poll (and help) only on 2+ cores")
def test_idle_threads_help(help_flag):
    """A one-layer LSTM is a chain: one thread runs, the other polls and
    takes parts of its products (hidden 256, batch 64: 16 parts each). Up
    to 20 runs, for a machine busy enough to keep the poller off the cores."""
    case = build_stack("lstm", layers=1, H=256, N=64, D=16, name="help_chain")
    ref = case.run(30, 5, enable=0)
    help_flag(1)
    before = helped()
    for _ in range(20):
        assert_bitwise(ref, case.run(30, 5, enable=1, threads=2), "one-layer LSTM, 2 threads, helping")
        if helped() > before:
            break
    assert helped() > before, "no product was helped in 20 runs"


@pytest.mark.skipif(_C.get_flag("num_cores") < 2, reason="idle threads poll (and help) only on 2+ cores")
def test_trace_shows_helped_parts(help_flag):
    """recurrent.trace records the parts that helpers ran (part=True): each
    lies inside its task's interval, on another worker, for a task of the
    same timestep and op; the summary counts them in the helper's busy time.
    With helping off, and in the serial loop's trace, there are none (the
    serial run replaces the previous run's parts)."""
    from recurrent import trace
    case = build_stack("lstm", layers=1, H=256, N=64, D=16, name="help_trace")
    help_flag(1)
    parts = []
    with trace.tracing():
        for _ in range(20):
            before = helped()
            case.run(30, 5, enable=1, threads=2)
            events = trace.fetch(case.net)
            parts = [e for e in events if e["part"]]
            assert len(parts) == helped() - before  # every part helped is in the trace
            if parts:
                break
        assert parts, "no product was helped in 20 runs"
        tasks = {(e["op_index"], e["direction"], e["timestep"], e["step_op"]): e for e in events if not e["part"]}
        assert len(parts) <= 16 * len(tasks)  # at most 16 parts per product
        for p in parts:
            task = tasks[(p["op_index"], p["direction"], p["timestep"], p["step_op"])]
            assert p["type"] == task["type"] and p["step_op"] >= 0
            assert p["worker"] != task["worker"], (p, task)
            assert task["start_us"] <= p["start_us"] <= p["end_us"] <= task["end_us"], (p, task)
        busy = trace.summary(events)
        for key, r in busy.items():
            own = sum(e["end_us"] - e["start_us"] for e in events if (e["op_index"], e["direction"]) == key)
            assert sum(r["busy_us"].values()) == own
        chrome = trace.to_chrome_trace(events)["traceEvents"]
        assert sum(ev["name"].endswith("(helped part)") for ev in chrome) == len(parts)
        help_flag(0)
        case.run(30, 5, enable=1, threads=2)
        assert not [e for e in trace.fetch(case.net) if e["part"]]
        help_flag(1)
        case.run(30, 5, enable=1, threads=2)
        case.run(30, 5, enable=0)  # serial: its trace has no parts, whatever the run before had
        events = trace.fetch(case.net)
        assert events and not [e for e in events if e["part"]] and {e["worker"] for e in events} == {0}


def test_forward_only_helped_bits(help_flag):
    case = build_stack("lstm", layers=2, H=128, N=32, D=16, forward_only=True, name="help_fo")
    ref = case.run(30, 2, enable=0)
    help_flag(1)
    for threads in (2, 3):
        assert_bitwise(ref, case.run(30, 2, enable=1, threads=threads), "forward only, %d threads" % threads)
        assert_bitwise(ref, case.run(30, 2, enable=1, threads=threads, num_workspaces=2),
                       "forward only, rotating workspaces, %d threads" % threads)


def test_global_init_flag(help_flag):
    help_flag(1)  # the fixture restores the value from before the test
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_help=0"])
    assert _C.get_flag("rnn_executor_help") == 0
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_help=true"])
    assert _C.get_flag("rnn_executor_help") == 1
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_help"])
    assert _C.get_flag("rnn_executor_help") == 1
    with pytest.raises(ValueError, match="caffe2_rnn_executor_help expects 0/1"):
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor_help=maybe"])
    assert _C.get_flag("rnn_executor_help") == 1


def run_py(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)


def test_environment_variable():
    code = "from recurrent import _C; print(_C.get_flag('rnn_executor_help'))"
    assert run_py(code, RECURRENT_RNN_EXECUTOR_HELP="0").stdout.strip() == "0"
    assert run_py(code, RECURRENT_RNN_EXECUTOR_HELP="1").stdout.strip() == "1"
    p = run_py(code, RECURRENT_RNN_EXECUTOR_HELP="yes please")
    assert p.stdout.strip() == "1"
    assert "RECURRENT_RNN_EXECUTOR_HELP='yes please' is not 0 or 1" in p.stderr
