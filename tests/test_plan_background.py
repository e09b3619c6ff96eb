"""workspace.RunPlanInBackground: a plan in a thread of its own (Caffe2's BackgroundPlan, with
is_done / is_succeeded), the workspace's nets kept for it, blob calls of other threads run between
two of its nets, and its failures kept for is_succeeded() / exception()."""

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from recurrent import core, workspace

WAIT = 60  # seconds: a plan in these tests ends in well under a second unless something hangs


def _count_plan(name, stop="stop"):
    """init: cnt = 0, one = 1; then 'inc' (cnt += 1) until the int32 [1] blob ``stop`` is true."""
    init = core.Net(name + "_init")
    init.ConstantFill([], "cnt", shape=[1], value=0.0)
    init.ConstantFill([], "one", shape=[1], value=1.0)
    inc = core.Net(name + "_inc")
    inc.Add(["cnt", "one"], "cnt")
    plan = core.Plan(name)
    plan.AddStep(core.execution_step("init", init))
    plan.AddStep(core.execution_step("loop", inc, should_stop_blob=stop))
    return plan


def _wait_for(cond):
    end = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.001)


def test_caffe2_run_plan_in_background():
    # Caffe2's workspace_test.testRunPlanInBackground: poll is_done, then the plan's result
    net = core.Net("test-net")
    net.ConstantFill([], "testblob", shape=[1, 2, 3, 4], value=1.0)
    plan = core.Plan("test-plan")
    plan.AddStep(core.ExecutionStep("test-step", net))
    bp = workspace.RunPlanInBackground(plan)
    assert bp.wait(WAIT)
    while not bp.is_done():
        pass
    assert bp.is_succeeded() is True and bp.exception() is None
    np.testing.assert_array_equal(workspace.FetchBlob("testblob"), np.ones((1, 2, 3, 4), np.float32))
    assert "succeeded" in repr(bp)
    # the plan is copied when it starts: steps added to it afterwards do not run
    gate = threading.Event()
    held = core.Net("gated")
    held.Python(lambda inputs, outputs: gate.wait(WAIT))([], [])
    later = core.Net("later_step")
    later.ConstantFill([], "added", shape=[1], value=1.0)
    plan = core.Plan("copied")
    plan.AddStep(core.ExecutionStep("first", held))
    bp = workspace.RunPlanInBackground(plan)
    plan.AddStep(core.ExecutionStep("second", later))
    gate.set()
    assert bp.wait(WAIT) and bp.is_succeeded()
    assert not workspace.HasBlob("added")
    # an ExecutionStep alone becomes a plan of its own, as RunPlan takes it
    bp = workspace.RunPlanInBackground(core.ExecutionStep("again", net))
    assert bp.wait(WAIT) and bp.is_succeeded()


def test_blobs_are_fetched_and_fed_between_nets_and_a_fed_stop_blob_ends_the_plan():
    workspace.FeedBlob("stop", np.zeros(1, np.int32))
    bp = workspace.RunPlanInBackground(_count_plan("count"))
    _wait_for(lambda: workspace.HasBlob("cnt") and workspace.FetchBlob("cnt")[0] >= 3)
    seen = []
    for _ in range(20):
        seen.append(float(workspace.FetchBlob("cnt")[0]))
        time.sleep(0.002)
    assert not bp.is_done()
    # each fetch is a whole count (taken between two nets), and the counts only grow
    assert all(v == int(v) for v in seen) and seen == sorted(seen) and seen[-1] > seen[0]
    assert set(workspace.Blobs()) >= {"cnt", "one", "stop"}
    workspace.FeedBlob("stop", np.ones(1, np.int32))
    assert bp.wait(WAIT) and bp.is_succeeded()
    assert workspace.FetchBlob("cnt")[0] >= seen[-1]


def test_a_blob_call_waits_for_the_net_running():
    # the plan's net is held inside its Python op: a fetch from another thread waits for that net
    # to end, then sees what it wrote
    entered, gate = threading.Event(), threading.Event()

    def hold(inputs, outputs):
        entered.set()
        gate.wait(WAIT)

    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("held")
    net.Python(hold)([], [])
    net.Scale("x", "x", scale=3.0)
    bp = workspace.RunPlanInBackground(core.execution_step("s", net))
    assert entered.wait(WAIT)
    got = []
    t = threading.Thread(target=lambda: got.append(workspace.FetchBlob("x")))
    t.start()
    t.join(0.2)
    assert t.is_alive() and not got  # waiting, not failing
    gate.set()
    t.join(WAIT)
    assert not t.is_alive()
    np.testing.assert_array_equal(got[0], [3, 3])
    assert bp.wait(WAIT) and bp.is_succeeded()


def test_net_calls_of_other_threads_are_refused_while_it_runs_and_work_after():
    workspace.FeedBlob("stop", np.zeros(1, np.int32))
    bp = workspace.RunPlanInBackground(_count_plan("busy"))
    other = core.Net("other")
    other.Scale("one", "two", scale=2.0)
    _wait_for(lambda: workspace.HasBlob("one"))
    busy = "workspace is busy: a plan runs in it in the background"
    calls = [lambda: workspace.RunNetOnce(other),
             lambda: workspace.CreateNet(other),
             lambda: workspace.RunOperatorOnce(core.CreateOperator("Scale", ["one"], ["two"])),
             lambda: workspace.RunPlan(core.Plan(core.execution_step("s", other))),
             lambda: workspace.ResetWorkspace()]
    for call in calls:
        with pytest.raises(RuntimeError, match=busy):
            call()
    with pytest.raises(RuntimeError, match="a plan runs in it in the background already"):
        workspace.RunPlanInBackground(core.Plan(core.execution_step("s", other)))
    assert not bp.is_done()
    with pytest.raises(RuntimeError, match="is_succeeded\\(\\) before the plan ended"):
        bp.is_succeeded()
    assert bp.exception() is None and "running" in repr(bp)
    workspace.FeedBlob("stop", np.ones(1, np.int32))
    assert bp.wait(WAIT) and bp.is_succeeded()
    # the plan's thread gave the workspace back: every call works again
    workspace.RunNetOnce(other)
    assert workspace.FetchBlob("two")[0] == 2
    bp = workspace.RunPlanInBackground(core.Plan(core.execution_step("s", other)))
    assert bp.wait(WAIT) and bp.is_succeeded()
    assert workspace.ResetWorkspace() and workspace.Blobs() == []


def test_refused_where_run_plan_is():
    # from a Python op's function of the net running in the workspace: the plan would wait for that
    # net, and the function might wait for the plan
    caught = []

    def start_plan(inputs, outputs):
        try:
            workspace.RunPlanInBackground(core.Plan("inner"))
        except RuntimeError as e:
            caught.append(str(e))

    net = core.Net("starts_a_plan")
    net.Python(start_plan)([], [])
    workspace.RunNetOnce(net)
    assert len(caught) == 1 and "not create, run or delete nets or run operators or plans" in caught[0]
    # while another thread runs a net in it
    entered, gate = threading.Event(), threading.Event()

    def hold(inputs, outputs):
        entered.set()
        gate.wait(WAIT)

    held = core.Net("held_elsewhere")
    held.Python(hold)([], [])
    t = threading.Thread(target=workspace.RunNetOnce, args=(held,))
    t.start()
    try:
        assert entered.wait(WAIT)
        with pytest.raises(RuntimeError, match="workspace is busy: another thread is running a net"):
            workspace.RunPlanInBackground(core.Plan("beside"))
    finally:
        gate.set()
        t.join(WAIT)
    bp = workspace.RunPlanInBackground(core.Plan("after"))
    assert bp.wait(WAIT) and bp.is_succeeded()


def test_other_workspaces_are_free_while_it_runs():
    workspace.FeedBlob("stop", np.zeros(1, np.int32))
    bp = workspace.RunPlanInBackground(_count_plan("free"))
    with workspace.WorkspaceGuard("bg_other"):
        net = core.Net("elsewhere")
        net.ConstantFill([], "z", shape=[2], value=3.0)
        workspace.RunNetOnce(net)
        np.testing.assert_array_equal(workspace.FetchBlob("z"), [3, 3])
        workspace.ResetWorkspace()
    workspace.FeedBlob("stop", np.ones(1, np.int32))
    assert bp.wait(WAIT) and bp.is_succeeded()


def test_a_failing_plan_keeps_its_error_and_frees_the_workspace():
    fails = core.Net("fails")
    fails.Relu("no_such_blob", "r")
    bp = workspace.RunPlanInBackground(core.Plan(core.execution_step("f", fails)))
    assert bp.wait(WAIT)
    assert bp.is_succeeded() is False
    e = bp.exception()
    assert isinstance(e, KeyError)
    assert "step 'f', creating net 'fails" in str(e) and "'no_such_blob' does not exist" in str(e)
    assert "failed: KeyError" in repr(bp)
    # a run failing in a later iteration, after some ran
    workspace.FeedBlob("x", np.ones(2, np.float32))
    workspace.CreateBlob("empty")
    ok, later = core.Net("ok"), core.Net("later")
    ok.Scale("x", "x", scale=2.0)
    later.Relu("empty", "r")
    bp = workspace.RunPlanInBackground(core.execution_step("s", [ok, later], num_iter=3))
    assert bp.wait(WAIT) and not bp.is_succeeded()
    assert isinstance(bp.exception(), ValueError)
    assert "iteration 0, net '%s'" % later.Name() in str(bp.exception())
    np.testing.assert_array_equal(workspace.FetchBlob("x"), [2, 2])
    # a refused plan (threads beside the net) fails the same way
    step = core.execution_step("conc", [core.execution_step("a", ok), core.execution_step("b", ok)])
    step.SetConcurrentSubsteps(True)
    bp = workspace.RunPlanInBackground(step)
    assert bp.wait(WAIT) and isinstance(bp.exception(), ValueError)
    assert "concurrent_substeps is not provided" in str(bp.exception())
    workspace.RunNetOnce(ok)
    np.testing.assert_array_equal(workspace.FetchBlob("x"), [4, 4])
    with pytest.raises(TypeError, match="RunPlan expects"):
        workspace.RunPlanInBackground("not a plan")


def test_python_ops_of_the_plan_see_its_workspace():
    # the plan's thread has the workspace it was started in as its current one, whatever the
    # caller switches to meanwhile
    seen = []
    gate = threading.Event()

    def f(inputs, outputs):
        gate.wait(WAIT)
        seen.append((workspace.CurrentWorkspace(), workspace.FetchBlob("tag").tolist()))

    workspace.SwitchWorkspace("bg_home", True)
    workspace.FeedBlob("tag", np.array([7], np.int32))
    net = core.Net("pyop")
    net.Python(f)([], [])
    bp = workspace.RunPlanInBackground(core.execution_step("s", net))
    workspace.SwitchWorkspace("bg_away", True)
    workspace.FeedBlob("tag", np.array([8], np.int32))
    gate.set()
    assert bp.wait(WAIT) and bp.is_succeeded(), bp.exception()
    assert seen == [("bg_home", [7])]
    workspace.ResetWorkspace()
    workspace.SwitchWorkspace("bg_home")
    workspace.ResetWorkspace()
    workspace.SwitchWorkspace("default")


def test_plans_reading_each_others_blobs_do_not_wait_for_each_other():
    # the Python op of each plan fetches a blob of the other plan's workspace while its own net runs:
    # a thread that runs a net never waits for another workspace's net (the two would wait forever),
    # so each fetch either runs between the other plan's nets or raises "busy"
    outcomes = {"a": [], "b": []}

    def reader(me, other):
        def f(inputs, outputs):
            with workspace.WorkspaceGuard(other):
                try:
                    workspace.FetchBlob("cnt")
                    outcomes[me].append("ok")
                except RuntimeError as e:
                    assert "does not wait for another workspace's net" in str(e)
                    outcomes[me].append("busy")
        return f

    for me in ("bg_a", "bg_b"):
        with workspace.WorkspaceGuard(me):
            workspace.FeedBlob("cnt", np.zeros(1, np.float32))
            workspace.FeedBlob("one", np.ones(1, np.float32))
    plans = {}
    for me, other in (("bg_a", "bg_b"), ("bg_b", "bg_a")):
        with workspace.WorkspaceGuard(me):
            net = core.Net("mutual_" + me)
            net.Add(["cnt", "one"], "cnt")
            net.Python(reader(me[-1], other))([], [])
            plans[me] = workspace.RunPlanInBackground(core.execution_step("s", net, num_iter=200))
    for me, bp in plans.items():
        assert bp.wait(WAIT), "plan of %s hangs" % me
    for me, bp in plans.items():
        assert bp.is_succeeded(), bp.exception()
        with workspace.WorkspaceGuard(me):
            assert workspace.FetchBlob("cnt")[0] == 200
            workspace.ResetWorkspace()
    assert len(outcomes["a"]) == len(outcomes["b"]) == 200


def test_a_plan_still_running_at_exit_does_not_hold_the_process():
    code = """
import numpy as np
from recurrent import core, workspace
inc = core.Net("inc")
workspace.FeedBlob("cnt", np.zeros(1, np.float32))
workspace.FeedBlob("one", np.ones(1, np.float32))
workspace.FeedBlob("stop", np.zeros(1, np.int32))
inc.Add(["cnt", "one"], "cnt")
bp = workspace.RunPlanInBackground(core.execution_step("forever", inc, should_stop_blob="stop"))
while workspace.FetchBlob("cnt")[0] < 10:
    pass
print("running", bp.is_done())
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "running False"


def test_python_code_of_the_plans_own_thread_is_refused_not_left_waiting_for_itself():
    # a Python op's builder runs when the plan creates the net, in the plan's thread, which holds
    # the workspace meanwhile: a blob call there waited for the workspace to be free, i.e. for
    # itself, forever (the plan never ended); it is refused as busy, as outside a background plan
    workspace.FeedBlob("cfg", np.array([2.0], np.float32))
    seen = []

    def builder():
        try:
            seen.append(workspace.FetchBlob("cfg"))
        except RuntimeError as e:
            seen.append(e)
        return lambda inputs, outputs: None

    net = core.Net("built")
    net.Python((builder, [], {}))([], [])
    bp = workspace.RunPlanInBackground(core.execution_step("s", net))
    assert bp.wait(WAIT) and bp.is_succeeded()
    assert len(seen) == 1 and isinstance(seen[0], RuntimeError)
    assert "workspace is busy: this thread is creating, running or freeing a net" in str(seen[0])
    # the same builder outside a background plan gets the same message (not "another thread")
    seen.clear()
    workspace.RunNetOnce(net)
    assert len(seen) == 1 and isinstance(seen[0], RuntimeError)
    assert "workspace is busy: this thread is creating, running or freeing a net" in str(seen[0])
    # the workspace is usable afterwards
    np.testing.assert_array_equal(workspace.FetchBlob("cfg"), [2.0])
