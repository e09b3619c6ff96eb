"""The current workspace is per thread: a thread that never switched uses the
main thread's current workspace (as in Caffe2), SwitchWorkspace in another
thread changes only that thread's, so "one workspace per thread" is safe; and
threads running RNN nets in their own workspaces at the same time (executor on
and off side by side) get the bits of a run alone."""

import threading

import numpy as np
import pytest

from recurrent import _C, core, workspace

from test_executor import assert_bitwise, build_stack


def in_thread(fn):
    """Runs fn() in a new thread; returns its result or re-raises its exception."""
    box = {}

    def body():
        try:
            box["r"] = fn()
        except BaseException as e:  # noqa: BLE001 -- re-raised in the caller
            box["e"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "thread did not finish"
    if "e" in box:
        raise box["e"]
    return box.get("r")


def test_new_thread_uses_main_threads_workspace():
    workspace.SwitchWorkspace("wt_main", True)
    workspace.FeedBlob("a", np.arange(3, dtype=np.float32))
    assert in_thread(workspace.CurrentWorkspace) == "wt_main"
    np.testing.assert_array_equal(in_thread(lambda: workspace.FetchBlob("a")), np.arange(3, dtype=np.float32))
    in_thread(lambda: workspace.FeedBlob("b", np.ones(2, np.float32)))
    assert workspace.HasBlob("b")
    # the main thread switches later: threads that never switched follow
    workspace.SwitchWorkspace("wt_main2", True)
    assert in_thread(workspace.CurrentWorkspace) == "wt_main2"
    assert not in_thread(lambda: workspace.HasBlob("a"))


def test_switch_in_a_thread_changes_that_thread_only():
    workspace.SwitchWorkspace("default", True)

    def body():
        workspace.SwitchWorkspace("wt_own", True)
        workspace.FeedBlob("mine", np.zeros(1, np.float32))
        return workspace.CurrentWorkspace(), workspace.Blobs()

    assert in_thread(body) == ("wt_own", ["mine"])
    assert workspace.CurrentWorkspace() == "default"
    assert not workspace.HasBlob("mine")
    assert "wt_own" in workspace.Workspaces()
    # another new thread has not switched: it follows the main thread
    assert in_thread(workspace.CurrentWorkspace) == "default"
    with pytest.raises(KeyError, match="workspace 'wt_nope' does not exist"):
        in_thread(lambda: workspace.SwitchWorkspace("wt_nope"))


def test_interleaved_switches_never_redirect_another_thread():
    """Thread A switches to its workspace, then thread B to its own, then A
    feeds, fetches and runs: all in A's workspace. (With one process-wide
    current workspace, as in Caffe2, A's calls went to B's workspace.)"""
    from recurrent import core
    steps = [threading.Barrier(2, timeout=30) for _ in range(3)]
    out, errors = {}, []

    def worker(name, value):
        def body():
            try:
                run(name, value)
            except BaseException as e:  # noqa: BLE001 -- reported below
                errors.append((name, e))
                for b in steps:
                    b.abort()

        def run(name, value):
            if name == "A":
                workspace.SwitchWorkspace("wt_A", True)
                steps[0].wait()
                steps[1].wait()  # B switches in between
            else:
                steps[0].wait()
                workspace.SwitchWorkspace("wt_B", True)
                steps[1].wait()
            workspace.FeedBlob("x", np.full(4, value, np.float32))
            steps[2].wait()  # both fed before either reads
            n = core.Net("twice_" + name)
            n.Scale("x", "y", scale=2.0)
            workspace.RunNetOnce(n)
            out[name] = (workspace.CurrentWorkspace(), workspace.FetchBlob("y"), sorted(workspace.Blobs()))
        return body

    threads = [threading.Thread(target=worker(n, v), daemon=True) for n, v in (("A", 1.0), ("B", 5.0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert out["A"][0] == "wt_A" and out["B"][0] == "wt_B"
    np.testing.assert_array_equal(out["A"][1], np.full(4, 2.0, np.float32))
    np.testing.assert_array_equal(out["B"][1], np.full(4, 10.0, np.float32))
    assert out["A"][2] == out["B"][2] == ["x", "y"]
    assert workspace.CurrentWorkspace() == "default"


@pytest.fixture
def executor_on():
    old_on = workspace.rnn_executor_enabled()
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])
    yield
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=%d" % old_on])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_threads_run_rnn_nets_in_own_workspaces_bitwise(kind, executor_on):
    """Four threads, each in its own workspace, train the same 2-layer RNN at
    the same time, two with the executor (2 and 3 workers) and two serially,
    several rounds: every output and gradient has the bits of the serial run
    made alone in the main thread. The executor limits OpenBLAS to one thread
    while it runs and the serial runs split products over OpenBLAS's thread
    count: the bits do not depend on either."""
    case = build_stack(kind, layers=2, H=24, N=4, D=6, name="wt_" + kind)
    T, seed = 9, 77
    case.feed(T, seed)
    case.create(False)
    ref = case.run_created()
    blas_before = _C.get_flag("blas_num_threads")
    configs = [(True, 2), (True, 3), (False, None), (False, None)]
    start = threading.Barrier(len(configs), timeout=30)
    results, errors = {}, []

    def worker(i, enable, threads):
        try:
            workspace.SwitchWorkspace("wt_run_%d" % i, True)
            case.feed(T, seed)
            case.create(enable, threads)
            start.wait()
            for r in range(4):
                results[(i, r)] = case.run_created()
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append((i, e))
            start.abort()

    ts = [threading.Thread(target=worker, args=(i, e, n), daemon=True) for i, (e, n) in enumerate(configs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "a thread hung"
    assert not errors, errors
    assert len(results) == 4 * len(configs)
    for (i, r), got in sorted(results.items()):
        assert_bitwise(ref, got, "thread %d (%s), round %d" % (i, configs[i], r))
    assert _C.get_flag("blas_num_threads") == blas_before
    assert workspace.CurrentWorkspace() == "default"


def test_net_calls_look_the_net_up_only_once_the_workspace_is_taken():
    # ResetWorkspace frees net 'a' and its name, then net 'b', whose Python op's function is
    # released: its finalizer runs while the reset still holds the workspace. RunNet and
    # BenchmarkNet looked the net table (freed entries) up before taking the workspace (a
    # heap-use-after-free under ASan, KeyError otherwise); they are refused as busy now.
    got = []

    class F:
        def __call__(self, inputs, outputs):
            pass

        def __del__(self):
            for call in (lambda: workspace.RunNet("zzz"), lambda: workspace.BenchmarkNet("zzz", 0, 1, False),
                         lambda: workspace.CreateNet(core.Net("zzz"))):
                try:
                    call()
                except Exception as e:
                    got.append(e)

    a = core.Net("a")
    a.ConstantFill([], "x", shape=[1], value=1.0)
    b = core.Net("b")
    b.Python((F, [], {}))([], [])
    workspace.CreateNet(a)
    workspace.CreateNet(b)
    workspace.ResetWorkspace()
    assert len(got) == 3
    for e in got:
        assert isinstance(e, RuntimeError) and "workspace is busy" in str(e), repr(e)
    assert workspace.Nets() == []
