"""Plans: core.Plan / core.execution_step built as PlanDefs, run by workspace.RunPlan and
Workspace.run as Caffe2's plan executor (caffe2/core/plan_executor.cc) ran them, and the parts that
need threads beside the running net, refused."""

import copy

import numpy as np
import pytest

from recurrent import core, text_format, workspace
from recurrent.proto import ExecutionStep, NetDef, PlanDef, caffe2_pb2


def _init_net(n_stop=None):
    """cnt = 0, one = 1 (and limit = n_stop) as float32 [1] blobs."""
    init = core.Net("init")
    init.ConstantFill([], "cnt", shape=[1], value=0.0)
    init.ConstantFill([], "one", shape=[1], value=1.0)
    if n_stop is not None:
        init.ConstantFill([], "limit", shape=[1], value=float(n_stop))
    return init


def _inc_net():
    inc = core.Net("inc")
    inc.Add(["cnt", "one"], "cnt")
    return inc


def _check_net():
    """stop = cnt >= limit (an int32 [1] tensor: bools are int32 here)."""
    check = core.Net("check")
    check.GE(["cnt", "limit"], "stop")
    return check


def _cnt():
    return float(workspace.FetchBlob("cnt")[0])


def _still_usable():
    workspace.FeedBlob("u", np.ones(3, np.float32))
    net = core.Net("usable")
    net.Scale("u", "u2", scale=2.0)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("u2"), [2, 2, 2])


def test_counter_num_iter():
    plan = core.Plan("count")
    plan.AddStep(core.execution_step("init", _init_net()))
    plan.AddStep(core.execution_step("loop", _inc_net(), num_iter=7))
    assert workspace.RunPlan(plan) is True
    assert _cnt() == 7
    # the plan's nets stay in the workspace, created under their names
    assert set(n.Name() for n in plan.Nets()) <= set(workspace.Nets())
    # a step alone becomes a plan of its own; with neither num_iter nor should_stop_blob it runs once
    step = core.execution_step("again", plan.Nets()[1])
    assert step.Proto().num_iter == 1
    assert workspace.RunPlan(step) and _cnt() == 8


def test_nets_of_a_step_run_in_order_each_iteration():
    workspace.FeedBlob("x", np.ones(1, np.float32))
    workspace.FeedBlob("one", np.ones(1, np.float32))
    double, plus1 = core.Net("double"), core.Net("plus1")
    double.Scale("x", "x", scale=2.0)
    plus1.Add(["x", "one"], "x")
    workspace.RunPlan(core.execution_step("s", [double, plus1], num_iter=2))
    assert workspace.FetchBlob("x")[0] == 7  # (1*2+1)*2+1; the other order would give 5
    assert workspace.RunPlan(core.Plan(core.execution_step("t", [plus1, double])))
    assert workspace.FetchBlob("x")[0] == 16


def test_should_stop_blob_stops_the_loop():
    plan = core.Plan("until")
    plan.AddStep(core.execution_step("init", _init_net(n_stop=5)))
    # 'stop' is an output of the step's own net: creating the net creates it (holding no tensor,
    # which reads as false), so it exists when the step starts
    plan.AddStep(core.execution_step("loop", [_inc_net(), _check_net()],
                                     should_stop_blob=core.BlobReference("stop")))
    workspace.RunPlan(plan)
    assert _cnt() == 5
    assert workspace.FetchBlob("stop").tolist() == [1]


def test_should_stop_blob_is_read_after_every_net_never_before_the_first():
    workspace.RunNetOnce(_init_net(n_stop=3))
    inc, check, after = _inc_net(), _check_net(), core.Net("after")
    after.Scale("cnt", "cnt", scale=10.0)
    # iteration 0: inc 1 (stop holds no tensor yet: false), check 1 >= 3 false, after 10;
    # iteration 1: inc 11, check true: the step stops at once, 'after' does not run again
    workspace.RunPlan(core.execution_step("s", [inc, check, after], should_stop_blob="stop"))
    assert _cnt() == 11
    # a stop blob already true: the first net still runs, then the step stops
    workspace.FeedBlob("stop", np.array([True]))
    workspace.RunPlan(core.execution_step("s2", [inc, check], should_stop_blob="stop"))
    assert _cnt() == 12


def test_nested_substeps_only_once_and_outer_stop():
    workspace.RunNetOnce(_init_net(n_stop=100))
    workspace.FeedBlob("skip", np.array([0], np.int32))
    workspace.FeedBlob("y", np.zeros(1, np.float32))
    inc = _inc_net()
    set_skip, add_y = core.Net("set_skip"), core.Net("add_y")
    set_skip.GE(["cnt", "cnt"], "skip")  # true
    add_y.Add(["y", "one"], "y")
    # only_once with a stop blob: runs once per run of the outer step, and stops after set_skip
    guarded = core.execution_step("guarded", [set_skip, add_y], should_stop_blob="skip", only_once=True)
    outer = core.execution_step("outer", [core.execution_step("count", inc), guarded], num_iter=3)
    assert [s.Name() for s in outer.Substeps()] == ["count", "guarded"]
    workspace.RunPlan(outer)
    assert _cnt() == 3 and workspace.FetchBlob("y")[0] == 0
    # the outer step's own stop blob is read after every substep
    check = _check_net()
    workspace.FeedBlob("limit", np.array([5], np.float32))
    loop = core.execution_step("loop", [core.execution_step("a", inc), core.execution_step("b", check),
                                        core.execution_step("c", add_y)], should_stop_blob="stop")
    workspace.RunPlan(loop)
    assert _cnt() == 5 and workspace.FetchBlob("y")[0] == 1  # c ran after cnt 4, not after 5


def test_mixed_list_and_scoped_and_empty_steps():
    workspace.RunNetOnce(_init_net())
    inc = _inc_net()
    step = core.execution_step("mixed", [inc, core.execution_step("sub", inc, num_iter=2)])
    assert [s.Name() for s in step.Substeps()] == [inc.Name(), "sub"]
    workspace.RunPlan(step)
    assert _cnt() == 3
    with core.NameScope("scope"):
        assert core.scoped_execution_step("s", inc).Name() == "scope/s"
    # a step with nothing to run is skipped by AddStep; a plan without steps runs nothing
    plan = core.Plan("empty")
    plan.AddStep(core.execution_step("nothing", []))
    assert plan.Proto().execution_step == [] and workspace.RunPlan(plan)
    # an empty step written by hand: nothing to run, however many times; with a stop blob, refused
    workspace.RunPlan(_raw_plan(copy.deepcopy(core.ExecutionStep("e", num_iter=10 ** 12).Proto())))
    forever = ExecutionStep("forever")
    forever.should_stop_blob = "cnt"
    with pytest.raises(ValueError, match="step 'forever': a step with should_stop_blob and nothing to run "
                                         "would never stop"):
        workspace.RunPlan(_raw_plan(forever))


def test_an_existing_net_of_the_same_name_is_replaced_once():
    workspace.RunNetOnce(_init_net())
    inc = _inc_net()
    old = copy.deepcopy(inc.Proto())
    old.op[0].type = "Sub"
    workspace.CreateNet(old)
    plan = core.Plan("replace")
    plan.AddStep(core.execution_step("a", inc, num_iter=2))
    plan.AddStep(core.execution_step("b", inc, num_iter=3))
    workspace.RunPlan(plan)
    assert _cnt() == 5  # the plan's Add ran, not the Sub created before
    workspace.RunNet(inc.Name())
    assert _cnt() == 6


def test_plan_nets_are_copied_when_the_step_is_added():
    workspace.RunNetOnce(_init_net())
    inc = _inc_net()
    plan = core.Plan(core.execution_step("s", inc))
    inc.Add(["cnt", "one"], "cnt")  # not in the plan's copy
    workspace.RunPlan(plan)
    assert _cnt() == 1
    step = core.execution_step("t", inc)
    core.Plan(step)
    with pytest.raises(ValueError, match="already been added"):
        step.SetIter(3)


def test_proto_round_trip_and_text_format():
    init, inc, check = _init_net(n_stop=4), _inc_net(), _check_net()
    plan = core.Plan("rt")
    plan.AddStep(core.execution_step("init", init))
    plan.AddStep(core.execution_step(
        "outer", [core.execution_step("loop", [inc, check], should_stop_blob=core.BlobReference("stop"),
                                      only_once=False)], num_iter=1))
    proto = plan.Proto()
    assert isinstance(proto, caffe2_pb2.PlanDef) and caffe2_pb2.ExecutionStep is ExecutionStep
    assert [n.name for n in proto.network] == [init.Name(), inc.Name(), check.Name()]
    text = str(proto)
    assert 'should_stop_blob: "stop"' in text and "only_once: false" in text
    parsed = text_format.Parse(text, caffe2_pb2.PlanDef())
    assert parsed == proto and str(parsed) == text
    assert parsed.execution_step[1].substep[0].HasField("only_once")
    assert not parsed.execution_step[1].substep[0].HasField("num_iter")
    assert text_format.parse_plan(text) == proto

    again = core.Plan.create_from_proto(parsed)
    assert again.Proto().name == "rt" and len(again.Steps()) == 2
    assert [s.Name() for s in again.Steps()] == ["init", "outer"]
    assert len(again.Proto().network) == 3
    # new Nets take a suffix, as every Net whose name is in use in this process
    for a, b in zip(plan.Nets(), again.Nets()):
        assert b.Name().startswith(a.Name()) and b.Name() != a.Name()
        assert b.Proto().op == a.Proto().op
    workspace.RunPlan(again)
    assert _cnt() == 4


def test_get_all_attributes():
    a, b = core.Net("attr_a"), core.Net("attr_b")
    a.add_attribute("k", 1)
    b.add_attribute("k", 2)
    step = core.execution_step("s", [core.execution_step("x", a), core.execution_step("y", b)])
    assert step.get_all_attributes("k") == [1, 2]
    assert core.Plan(step).get_all_attributes("k") == [1, 2]


def test_workspace_object_run_plan():
    ws = workspace.C.Workspace()
    plan = core.Plan("obj")
    plan.AddStep(core.execution_step("init", _init_net()))
    plan.AddStep(core.execution_step("loop", _inc_net(), num_iter=4))
    assert ws.run(plan) is True
    assert ws.fetch_blob("cnt")[0] == 4
    assert not workspace.HasBlob("cnt")  # not the current workspace
    assert ws.run(plan.Proto()) and ws.fetch_blob("cnt")[0] == 0 + 4  # init ran again
    ws.run(core.execution_step("more", plan.Nets()[1], num_iter=2))
    assert ws.fetch_blob("cnt")[0] == 6
    with pytest.raises(ValueError, match="concurrent_substeps"):
        ws.run(core.execution_step("c", [core.execution_step("p", plan.Nets()[1]),
                                         core.execution_step("q", plan.Nets()[1])],
                                   concurrent_substeps=True))
    ws.run(core.CreateOperator("Scale", ["cnt"], ["cnt2"], scale=2.0))  # still usable
    assert ws.fetch_blob("cnt2")[0] == 12


def _raw_plan(*steps, nets=()):
    plan = PlanDef("raw")
    plan.network = [copy.deepcopy(n.Proto()) for n in nets]
    plan.execution_step = list(steps)
    return plan


def test_refusals_name_the_step_and_leave_the_workspace_usable():
    workspace.RunNetOnce(_init_net(n_stop=2))
    inc = _inc_net()
    sub = core.execution_step("sub", inc)

    both = copy.deepcopy(sub.Proto())
    both.name = "both"
    both.substep.append(copy.deepcopy(sub.Proto()))
    with pytest.raises(ValueError, match="step 'both': .*either have substeps or networks, not both"):
        workspace.RunPlan(_raw_plan(both, nets=[inc]))
    with pytest.raises(ValueError, match="Cannot have both network and substeps"):
        core.execution_step("x", inc).AddSubstep(core.execution_step("y", inc))

    conc = core.execution_step("conc", [core.execution_step("p", inc), core.execution_step("q", inc)],
                               concurrent_substeps=True)
    with pytest.raises(ValueError, match="step 'conc': concurrent_substeps is not provided.*2 substeps.*"
                                         "one net at a time"):
        workspace.RunPlan(conc)
    # with one substep Caffe2 ran it in order too: accepted
    workspace.RunPlan(core.execution_step("conc1", [core.execution_step("p1", inc)],
                                          concurrent_substeps=True))
    assert _cnt() == 1

    with pytest.raises(ValueError, match="step 'inst': num_concurrent_instances=2 is not provided"):
        workspace.RunPlan(core.execution_step("inst", [core.execution_step("p2", inc)],
                                              num_concurrent_instances=2))
    with pytest.raises(ValueError, match="step 'cw': create_workspace is not provided"):
        workspace.RunPlan(core.execution_step("cw", inc, create_workspace=True))
    every = core.execution_step("every", inc, run_every_ms=10)
    with pytest.raises(ValueError, match="step 'top': substep 'every' has run_every_ms"):
        workspace.RunPlan(core.execution_step("top", [every, core.execution_step("p3", inc)]))
    # on a top-level step Caffe2 ignored it
    workspace.RunPlan(core.execution_step("every_top", inc, run_every_ms=10))
    assert _cnt() == 2
    with pytest.raises(ValueError, match="step 'rep': report_net is not provided"):
        workspace.RunPlan(core.execution_step("rep", inc, report_net=inc, report_interval=1))

    with pytest.raises(ValueError, match="Cannot set both should_stop_blob and num_iter"):
        core.execution_step("sn", inc, num_iter=2, should_stop_blob="stop")
    both_stop = copy.deepcopy(sub.Proto())
    both_stop.name, both_stop.should_stop_blob = "both_stop", "cnt"
    with pytest.raises(ValueError, match="step 'both_stop': must not specify num_iter"):
        workspace.RunPlan(_raw_plan(both_stop, nets=[inc]))
    with pytest.raises(ValueError, match="step 'once': only_once is only supported with should_stop_blob"):
        workspace.RunPlan(core.execution_step("once", inc, only_once=True))
    assert _cnt() == 2  # none of the refused steps ran anything
    _still_usable()


def test_bad_should_stop_blob():
    workspace.RunNetOnce(_init_net(n_stop=2))
    inc = _inc_net()
    with pytest.raises(KeyError, match="step 'missing': should_stop_blob 'nope' does not exist"):
        workspace.RunPlan(core.execution_step("missing", inc, should_stop_blob="nope"))
    assert _cnt() == 0
    with pytest.raises(TypeError, match="step 'float': should_stop_blob 'cnt' must be a 1-element bool "
                                        "tensor .*float32"):
        workspace.RunPlan(core.execution_step("float", inc, should_stop_blob="cnt"))
    workspace.FeedBlob("two", np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match=r"step 'outer' > 'two': should_stop_blob 'two' must be a "
                                         r"1-element bool tensor, got shape \[2\]"):
        workspace.RunPlan(core.execution_step("outer", [core.execution_step("two", inc,
                                                                            should_stop_blob="two")]))
    assert _cnt() == 2  # the first net ran before each check
    _still_usable()


def test_failing_nets_raise_their_error_with_the_step():
    workspace.RunNetOnce(_init_net())
    inc = _inc_net()
    bad = core.Net("bad_type")
    bad.Proto().op.append(core.CreateOperator("NoSuchOp", ["cnt"], ["z"]))
    with pytest.raises(RuntimeError, match="RunPlan 'bad_type'.*step 'bad_type', creating net 'bad_type"
                                           ".*NoSuchOp"):
        workspace.RunPlan(core.Plan(core.execution_step("bad_type", bad)))
    fails = core.Net("fails")
    fails.Relu("no_such_blob", "r")
    with pytest.raises(KeyError, match="step 'f', creating net 'fails.*'no_such_blob' does not exist"):
        workspace.RunPlan(core.execution_step("f", fails))
    # a blob that exists but holds no tensor passes creation and fails the run
    workspace.CreateBlob("empty")
    fails_later = core.Net("fails_later")
    fails_later.Relu("empty", "r")
    outer = core.execution_step("outer", [core.execution_step("ok", inc),
                                          core.execution_step("inner", [inc, fails_later])], num_iter=3)
    with pytest.raises(ValueError, match="step 'outer' > 'inner', iteration 0, net 'fails_later': op Relu "
                                         "#0: input 0 blob 'empty' holds no tensor"):
        workspace.RunPlan(outer)
    assert _cnt() == 2  # what ran before the failure stays
    with pytest.raises(KeyError, match="step 'undef' uses undefined net 'ghost'"):
        step = ExecutionStep("undef")
        step.network = ["ghost"]
        workspace.RunPlan(_raw_plan(step))
    dup = _raw_plan(copy.deepcopy(core.execution_step("d", inc).Proto()), nets=[inc, inc])
    with pytest.raises(ValueError, match="plan holds two nets named"):
        workspace.RunPlan(dup)
    with pytest.raises(TypeError, match="RunPlan expects a core.Plan"):
        workspace.RunPlan(inc)
    with pytest.raises(TypeError, match="AddNet expects a core.Net"):
        core.ExecutionStep("s").AddNet(NetDef("n"))
    with pytest.raises(ValueError, match="Different nets with same name"):
        core.Plan("p").AddNets([inc, _same_name(inc)])
    workspace.RunPlan(core.execution_step("fine", inc))
    assert _cnt() == 3
    _still_usable()


def _same_name(net):
    other = core.Net("other")
    other.Proto().name = net.Name()
    return other
