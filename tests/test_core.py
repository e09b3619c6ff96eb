"""recurrent.core: blob references, CreateOperator, Net, gradients, SSA;
recurrent.gradient_checker."""

import copy

import numpy as np
import pytest

from recurrent import core, proto, scope, workspace
from recurrent.core import BlobReference, CreateOperator, GradientRegistry
from recurrent.gradient_checker import GradientChecker, NetGradientChecker
from recurrent.proto import Argument, NetDef
from recurrent.model_helper import ModelHelper


def _made_up(net, op_type, inputs, outputs):
    """Adds an op of a made-up (unregistered) type, which ``net.<Type>`` refuses."""
    net.Proto().op.extend([CreateOperator(op_type, inputs, outputs)])
    return outputs


# ---------------------------------------------------------------- made-up ops for GetBackwardPass
# GetBackwardPass is pure Python: these op types never run.
@GradientRegistry.RegisterGradient("TestDirect")
def _direct_grad(op, g_output):
    """y_j = f(x_i): one gradient op reading all output gradients, writing every input gradient."""
    gis = [i + "_grad" for i in op.input]
    gos = [g for g in g_output if g is not None]
    return [CreateOperator("TestDirectGradient", gos, gis)], gis


@GradientRegistry.RegisterGradient("TestUsesOutput")
def _uses_output_grad(op, g_output):
    """Like Relu: the gradient reads the output."""
    gi = op.input[0] + "_grad"
    return [CreateOperator("TestUsesOutputGradient", [op.output[0], g_output[0]], [gi])], [gi]


@GradientRegistry.RegisterGradient("TestUsesInput")
def _uses_input_grad(op, g_output):
    """Like Sigmoid-by-input: the gradient reads the input."""
    gi = op.input[0] + "_grad"
    return [CreateOperator("TestUsesInputGradient", [op.input[0], g_output[0]], [gi])], [gi]


@GradientRegistry.RegisterGradient("TestPassThrough")
def _pass_through_grad(op, g_output):
    """Like Sum: input gradients are the output gradient itself, no op."""
    return [], [g_output[0]] * len(op.input)


@GradientRegistry.RegisterGradient("TestFirstOnly")
def _first_only_grad(op, g_output):
    """Only input 0 gets a gradient (like a lengths input)."""
    gi = op.input[0] + "_grad"
    return [CreateOperator("TestFirstOnlyGradient", [g_output[0]], [gi])], [gi, None]


def _types(ops):
    return [op.type for op in ops]


# ---------------------------------------------------------------- BlobReference
def test_blob_reference_str_hash_eq_add():
    b = BlobReference("x")
    assert str(b) == "x" and repr(b) == 'BlobReference("x")'
    assert b == "x" and "x" == b and b == BlobReference("x") and b != "y"
    assert hash(b) == hash("x")
    assert {b: 1}["x"] == 1 and "x" in {b} and b in {"x": 0}
    c = b + "_grad"
    assert isinstance(c, BlobReference) and c == "x_grad"
    d = "pre/" + b
    assert isinstance(d, BlobReference) and d == "pre/x"
    with pytest.raises(TypeError):
        b + 1
    assert BlobReference(b"bytes") == "bytes"
    assert BlobReference("a/b/c").GetNameScope() == "a/b/"
    assert BlobReference("a/b/c").GetUnscopedName() == "c"


def test_blob_reference_net_and_op_calls():
    net = core.Net("bref")
    x = net.AddExternalInput("x")
    assert x.Net() is net
    y = x.Copy([], "y")
    assert y.Net() is net and y == "y"
    assert net.Proto().op[-1].input == ["x"]
    with pytest.raises(AttributeError):
        x._private
    with pytest.raises(RuntimeError, match="no net"):
        BlobReference("free").Copy([], "z")
    assert copy.deepcopy(y) == y


def test_scoped_names():
    assert core.ScopedName("x") == "x"
    with core.NameScope("a"):
        assert core.ScopedName("x") == "a/x"
        with scope.NameScope("b"):
            r = core.ScopedBlobReference("x")
            assert isinstance(r, BlobReference) and r == "a/b/x"
    assert core.NameScope is scope.NameScope


# ---------------------------------------------------------------- CreateOperator
def test_create_operator_argument_kinds():
    op = CreateOperator("Foo", ["a", BlobReference("b")], "c", name="n",
                        f=0.5, i=3, s="str", by=b"raw", flag=True,
                        floats=[1.0, 2.5], ints=(1, 2), strings=["p", "q"],
                        arr=np.array([1, 2], np.int32), npf=np.float32(1.5), skipped=None,
                        net=NetDef("sub"))
    assert op.type == "Foo" and op.input == ["a", "b"] and op.output == ["c"] and op.name == "n"
    args = {a.name: a for a in op.arg}
    assert "skipped" not in args
    assert [a.name for a in op.arg] == ["f", "i", "s", "by", "flag", "floats", "ints", "strings",
                                        "arr", "npf", "net"]
    assert args["f"].f == 0.5 and args["i"].i == 3 and args["s"].s == "str"
    assert args["by"].s == "raw" and args["flag"].i == 1
    assert args["floats"].floats == [1.0, 2.5] and args["ints"].ints == [1, 2]
    assert args["strings"].strings == ["p", "q"] and args["arr"].ints == [1, 2]
    assert args["npf"].f == 1.5 and args["net"].n.name == "sub"
    assert not op.HasField("device_option") and op.engine == "" and op.control_input == []


def test_create_operator_single_blobs_scope_device_engine():
    op = CreateOperator("Foo", BlobReference("a"), BlobReference("b"))
    assert op.input == ["a"] and op.output == ["b"]
    with core.NameScope("s"):
        op = CreateOperator("Foo", ["a", BlobReference("b")], "c", control_input="d")
    assert op.input == ["s/a", "b"] and op.output == ["s/c"] and op.control_input == ["s/d"]
    dev = core.DeviceOption(core.DeviceType.CUDA, 1)
    assert core.DeviceType.CPU == 0 and core.DeviceType.CUDA == 1
    op = CreateOperator("Foo", [], ["x"], device_option=dev, engine="CUDNN", random_seed=7)
    assert op.device_option.device_type == 1 and op.device_option.device_id == 1
    assert op.device_option.random_seed == 7 and dev.random_seed is None
    assert op.engine == "CUDNN"
    with core.DeviceScope(core.DeviceOption(core.DeviceType.CPU)):
        op = CreateOperator("Foo", [], ["x"])
    assert op.device_option == core.DeviceOption(0, 0)
    # unset: reads as a default DeviceOption (protobuf's), which becomes the field when changed
    op = CreateOperator("Foo", [], ["x"])
    assert not op.HasField("device_option") and proto.device_of(op) is None
    assert op.device_option == core.DeviceOption(0, 0) and str(op).count("device_option") == 0
    op.device_option.CopyFrom(core.DeviceOption(core.DeviceType.CUDA, 2))
    assert op.HasField("device_option") and proto.device_of(op) == core.DeviceOption(1, 2)
    assert "device_type: 1" in str(op)
    net = core.Net("dev")
    d = net.Proto().device_option
    d.device_type = 1
    assert net.Proto().HasField("device_option") and net.Proto().device_option.device_type == 1
    assert d.device_type == 1 and copy.deepcopy(d) == core.DeviceOption(1, 0)
    net.Proto().device_option = None
    assert not net.Proto().HasField("device_option") and d.device_type == 0
    a = Argument("given")
    a.i = 4
    op = CreateOperator("Foo", [], [], arg=[a], z=1)
    assert [x.name for x in op.arg] == ["given", "z"] and op.arg[0] is not a


def test_create_operator_bad_blobs():
    with pytest.raises(TypeError, match="blob #1"):
        CreateOperator("Foo", ["a", 3], "c")
    with pytest.raises(TypeError):
        CreateOperator("Foo", 3, "c")
    with pytest.raises(TypeError, match="Foo"):
        CreateOperator("Foo", [], [], bad={"a": 1})


# ---------------------------------------------------------------- Net
def test_net_names_unique_and_proto():
    n1 = core.Net("uniq_net")
    n2 = core.Net("uniq_net")
    assert n1.Name() == "uniq_net" and n2.Name() == "uniq_net_1"
    assert str(n1) == "uniq_net"
    p = n1.Proto()
    assert isinstance(p, NetDef) and p is n1.Proto() and p.name == "uniq_net"


def test_net_operator_calls_and_outputs():
    net = core.Net("ops")
    x, w = net.AddExternalInputs("x", "w")
    y = net.FC([x, w, "b"], "y", axis=2)
    assert isinstance(y, BlobReference) and y == "y" and y.Net() is net
    op = net.Proto().op[0]
    assert op.type == "FC" and op.input == ["x", "w", "b"] and op.output == ["y"]
    assert op.arg[0].name == "axis" and op.arg[0].i == 2
    # 'b' was not defined: it became an external input
    assert net.Proto().external_input == ["x", "w", "b"]
    auto = net.Relu(y)
    assert auto == "ops/Relu"
    a, b = net.Split(y, 2)
    assert (a, b) == ("ops/Split:0", "ops/Split:1")
    outs = net.Split(y, ["p", "q"])
    assert isinstance(outs, tuple) and outs == ("p", "q")
    assert net.Save([y], [], db="unused", db_type="minidb") is None
    with core.NameScope("sc"):
        z = net.Copy("y", "z")
    assert z == "sc/z" and net.Proto().op[-1].input == ["sc/y"]
    assert "sc/y" in net.Proto().external_input
    with pytest.raises(AttributeError):
        net._not_an_op
    with pytest.raises(AttributeError):
        net.__foo__


def test_net_op_input_from_same_net_must_be_defined():
    net = core.Net("undef")
    with pytest.raises(ValueError, match="no op"):
        net.Copy(BlobReference("ghost", net), "y")


def test_next_name_unique():
    net = core.Net("nn")
    names = [net.NextName("rec") for _ in range(3)]
    assert names == ["nn/rec", "nn/rec_2", "nn/rec_3"]
    net.Copy(net.AddExternalInput("x"), "nn/other")
    assert net.NextName("other") == "nn/other_2"
    assert [net.NextName() for _ in range(2)] == ["nn_blob_0", "nn_blob_1"]
    assert net.NextName("o", output_id=1) == "nn/o:1"
    assert net.NextName("o", output_id=1) == "nn/o_2:1"
    b1, b2 = net.NextBlob("t"), net.NextBlob("t")
    assert b1 == "t" and b2 == "t_auto_0"


def test_external_inputs_outputs():
    net = core.Net("ext")
    r = net.AddExternalInput("a")
    assert isinstance(r, BlobReference) and r == "a"
    rs = net.AddExternalInput("b", "c")
    assert rs == ["b", "c"]
    with pytest.raises(ValueError, match="already"):
        net.AddExternalInput("a")
    with core.NameScope("s"):
        one = net.AddScopedExternalInputs("d")
        two = net.AddScopedExternalInputs("e", "f")
    assert one == ["s/d"] and two == ["s/e", "s/f"]
    y = net.Copy("a", "y")
    net.AddExternalOutput(y)
    net.AddExternalOutputs("a")
    with pytest.raises(ValueError, match="not defined"):
        net.AddExternalOutput("nope")
    p = net.Proto()
    assert p.external_input == ["a", "b", "c", "s/d", "s/e", "s/f"]
    assert p.external_output == ["y", "a"]
    assert net.BlobIsDefined("y") and net.BlobIsDefined("a") and not net.BlobIsDefined("zz")
    assert [str(b) for b in net.external_inputs][:3] == ["a", "b", "c"]


def test_proto_edits_are_seen():
    net = core.Net("edits")
    net.Proto().op.append(CreateOperator("Copy", ["x"], ["made"]))
    assert net.BlobIsDefined("made")
    net.Proto().external_input.append("x")
    assert net.BlobIsDefined("x")
    assert net.GetBlobRef("made").Net() is net
    with pytest.raises(KeyError):
        net.GetBlobRef("nothing")


def test_clone_is_independent_and_remaps():
    net = core.Net("orig")
    x = net.AddExternalInput("x")
    y = net.Copy(x, "y")
    net.Copy(y, "z", some=[1, 2])
    net.AddExternalOutput("z")
    c = net.Clone("cl", blob_remap={"y": "yy"})
    assert c.Name() == "cl" and c is not net
    p, q = net.Proto(), c.Proto()
    assert [o.output for o in q.op] == [["yy"], ["z"]] and q.op[1].input == ["yy"]
    assert [o.output for o in p.op] == [["y"], ["z"]]
    q.op[1].arg[0].ints.append(3)
    q.op.append(CreateOperator("Copy", ["z"], ["w"]))
    q.external_input.append("extra")
    assert p.op[1].arg[0].ints == [1, 2] and len(p.op) == 2 and p.external_input == ["x"]
    partial = net.Clone("part", op_id_mask=[1])
    assert [o.type for o in partial.Proto().op] == ["Copy"] and partial.Proto().op[0].output == ["z"]
    c2 = net.Clone("cl")
    assert c2.Name() == "cl_1"


def test_clone_remaps_recurrent_network_args():
    step = NetDef("step")
    step.op.append(CreateOperator("Copy", ["h_prev"], ["h"]))
    step.external_input.append("h_prev")
    net = core.Net("rnn_clone")
    net.RecurrentNetwork(["in"], ["out", "ws"], step_net=step, recurrent_states=["h_prev"],
                         timestep="t")
    c = net.Clone("rnn_clone2", blob_remap={"h_prev": "H", "t": "T", "in": "IN"})
    op = c.Proto().op[0]
    args = {a.name: a for a in op.arg}
    assert op.input == ["IN"]
    assert args["recurrent_states"].strings == ["H"] and args["timestep"].s == "T"
    assert args["step_net"].n.op[0].input == ["H"] and args["step_net"].n.external_input == ["H"]
    assert step.op[0].input == ["h_prev"]


def test_net_from_netdef_continues_blob_numbering():
    net = core.Net("numbering")
    net.Copy(net.AddExternalInput("x"), 1)
    p = copy.deepcopy(net.Proto())
    p.op[0].output = ["numbering_blob_4"]
    n2 = core.Net(p)
    assert n2.Name() == "numbering_1"
    assert n2.BlobIsDefined("numbering_blob_4") and n2.BlobIsDefined("x")


def test_run_net_with_copy():
    net = core.Net("run_copy")
    x = net.AddExternalInput("x")
    y = net.Copy(x, "y")
    net.Copy(y, "z")
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    workspace.FeedBlob("x", data)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("z"), data)


# ---------------------------------------------------------------- gradients
def test_get_gradient_for_op_copy_and_marks():
    op = CreateOperator("Copy", ["x"], ["y"], device_option=core.DeviceOption(0, 0), engine="E")
    gops, gin = GradientRegistry.GetGradientForOp(op, ["y_grad"])
    assert gin == ["x_grad"] and len(gops) == 1
    g = gops[0]
    assert g.type == "Copy" and g.input == ["y_grad"] and g.output == ["x_grad"]
    assert g.is_gradient_op and g.device_option == op.device_option and g.engine == "E"
    assert GradientRegistry.GetGradientForOp(op, [None]) == ([], [None])


def test_get_gradient_for_op_unregistered_and_bad_makers():
    op = CreateOperator("NoSuchOpType", ["x"], ["y"])
    with pytest.raises(RuntimeError, match="no gradient is registered.*NoSuchOpType"):
        GradientRegistry.GetGradientForOp(op, ["y_grad"])

    @GradientRegistry.RegisterGradient("TestBadArity")
    def _bad(op, g_output):
        return [], []

    with pytest.raises(ValueError, match="0 input gradients for 1 inputs"):
        GradientRegistry.GetGradientForOp(CreateOperator("TestBadArity", ["x"], ["y"]), ["g"])


def test_makers_do_not_inherit_name_scope():
    op = CreateOperator("TestUsesInput", ["s/x"], ["s/y"])
    with core.NameScope("s"):
        gops, gin = GradientRegistry.GetGradientForOp(op, ["s/y_grad"])
        gops2, m = GradientRegistry.GetBackwardPass([op], ["s/y"])
    assert gops[0].input == ["s/x", "s/y_grad"] and gin == ["s/x_grad"]
    assert gops2[0].output == ["s/y_autogen_grad"] and m["s/x"] == "s/x_grad"


def test_copy_arguments_option():
    @GradientRegistry.RegisterGradient("TestCopyArgs", copy_arguments=True)
    def _g(op, g_output):
        return [CreateOperator("TestCopyArgsGradient", [g_output[0]], ["x_grad"], axis=5)], ["x_grad"]

    op = CreateOperator("TestCopyArgs", ["x"], ["y"], axis=2, scale=0.5)
    gops, _ = GradientRegistry.GetGradientForOp(op, ["y_grad"])
    assert [(a.name, a.value()) for a in gops[0].arg] == [("axis", 5), ("scale", 0.5)]


def test_backward_pass_chain_with_autogen_seed():
    ops = [CreateOperator("TestDirect", "in", "hidden"),
           CreateOperator("TestDirect", "hidden", "out")]
    gops, m = GradientRegistry.GetBackwardPass(ops, ["out"])
    assert _types(gops) == ["ConstantFill", "TestDirectGradient", "TestDirectGradient"]
    fill = gops[0]
    assert fill.input == ["out"] and fill.output == ["out_autogen_grad"]
    assert fill.arg[0].name == "value" and fill.arg[0].f == 1.0
    assert gops[1].input == ["out_autogen_grad"] and gops[1].output == ["hidden_grad"]
    assert gops[2].input == ["hidden_grad"] and gops[2].output == ["in_grad"]
    assert m == {"out": "out_autogen_grad", "hidden": "hidden_grad", "in": "in_grad"}
    assert all(isinstance(k, BlobReference) and isinstance(v, BlobReference) for k, v in m.items())


def test_backward_pass_external_gradients_dict():
    ops = [CreateOperator("TestDirect", "in", "out")]
    gops, m = GradientRegistry.GetBackwardPass(ops, {"out": "out_given_grad"})
    assert _types(gops) == ["TestDirectGradient"]
    assert gops[0].input == ["out_given_grad"] and m["in"] == "in_grad"
    assert m["out"] == "out_given_grad"


def test_backward_pass_fan_out_sums_gradients():
    # in -> hidden1, in -> hidden2, (hidden1, hidden2) -> out
    ops = [CreateOperator("TestDirect", "in", "hidden1"),
           CreateOperator("TestDirect", "in", "hidden2"),
           CreateOperator("TestDirect", ["hidden1", "hidden2"], "out")]
    gops, m = GradientRegistry.GetBackwardPass(ops, {"out": "out_grad"})
    assert _types(gops) == ["TestDirectGradient"] * 3 + ["Sum"]
    assert gops[0].input == ["out_grad"] and gops[0].output == ["hidden1_grad", "hidden2_grad"]
    assert gops[1].input == ["hidden2_grad"] and gops[1].output == ["in_grad"]
    assert gops[2].input == ["hidden1_grad"] and gops[2].output == ["_in_grad_autosplit_0"]
    assert gops[3].input == ["in_grad", "_in_grad_autosplit_0"] and gops[3].output == ["in_grad"]
    assert not gops[3].is_gradient_op
    assert m["in"] == "in_grad"


def test_backward_pass_fan_out_three_and_pass_through():
    ops = [CreateOperator("TestDirect", "x", "a"),
           CreateOperator("TestPassThrough", ["x", "a"], "b"),
           CreateOperator("TestDirect", ["x", "b"], "y")]
    gops, m = GradientRegistry.GetBackwardPass(ops, {"y": "y_grad"})
    # op2 writes x_grad, b_grad; op1 passes b_grad to x and a; op0 gives x a third gradient
    assert _types(gops) == ["TestDirectGradient", "TestDirectGradient", "Sum"]
    assert gops[0].output == ["x_grad", "b_grad"]
    assert gops[1].input == ["b_grad"] and gops[1].output == ["_x_grad_autosplit_0"]
    assert gops[2].input == ["x_grad", "b_grad", "_x_grad_autosplit_0"]
    assert gops[2].output == ["x_grad"] and m["x"] == "x_grad" and m["a"] == "b_grad"


def test_backward_pass_y_also_consumed_gets_summed():
    ops = [CreateOperator("TestDirect", "x", "h"),
           CreateOperator("TestDirect", "h", "y")]
    gops, m = GradientRegistry.GetBackwardPass(ops, ["h", "y"])
    assert _types(gops) == ["ConstantFill", "ConstantFill", "TestDirectGradient", "Sum",
                            "TestDirectGradient"]
    # the seed (ConstantFill) is the first generator and keeps its name
    assert gops[2].input == ["y_autogen_grad"] and gops[2].output == ["_h_grad_autosplit_0"]
    assert gops[3].input == ["h_autogen_grad", "_h_grad_autosplit_0"]
    assert gops[3].output == ["h_autogen_grad"]
    assert m["h"] == "h_autogen_grad" and gops[4].input == ["h_autogen_grad"]


def test_backward_pass_inputs_without_gradient_are_absent():
    ops = [CreateOperator("TestFirstOnly", ["x", "lengths"], "y")]
    gops, m = GradientRegistry.GetBackwardPass(ops, ["y"])
    assert "lengths" not in m and m["x"] == "x_grad"
    assert _types(gops) == ["ConstantFill", "TestFirstOnlyGradient"]


def test_backward_pass_ops_not_on_the_path_are_skipped():
    ops = [CreateOperator("NoGradientKnownOp", ["p"], ["q"]),   # no maker, but q needs none
           CreateOperator("TestDirect", ["x"], ["y"])]
    gops, m = GradientRegistry.GetBackwardPass(ops, ["y"])
    assert _types(gops) == ["ConstantFill", "TestDirectGradient"] and "p" not in m


def test_backward_pass_missing_maker_raises():
    ops = [CreateOperator("NoGradientKnownOp", ["x"], ["h"]),
           CreateOperator("TestDirect", ["h"], ["y"])]
    with pytest.raises(RuntimeError, match="NoGradientKnownOp #0.*no gradient"):
        GradientRegistry.GetBackwardPass(ops, ["y"])


def test_backward_pass_in_place_ok():
    # x -> y, then y is updated in place twice; gradients read input versions that survive
    ops = [CreateOperator("TestDirect", "x", "y"),
           CreateOperator("TestDirect", "y", "y"),
           CreateOperator("TestDirect", "y", "y")]
    gops, m = GradientRegistry.GetBackwardPass(ops, {"y": "y_grad"})
    assert _types(gops) == ["TestDirectGradient"] * 3
    assert [g.input for g in gops] == [["y_grad"], ["y_grad"], ["y_grad"]]
    assert gops[2].output == ["x_grad"] and m["x"] == "x_grad" and m["y"] == "y_grad"


def test_backward_pass_in_place_needs_overwritten_version_raises():
    # the gradient of op 0 needs output h at version 0, but op 1 overwrote h in place
    ops = [CreateOperator("TestUsesOutput", "x", "h"),
           CreateOperator("TestUsesOutput", "h", "h")]
    with pytest.raises(RuntimeError, match="needs output 'h' at version 0"):
        GradientRegistry.GetBackwardPass(ops, ["h"])
    ops = [CreateOperator("TestUsesInput", "x", "h"),
           CreateOperator("TestDirect", "x", "x"),
           CreateOperator("TestDirect", ["h", "x"], "y")]
    with pytest.raises(RuntimeError, match="needs input 'x' at version 0"):
        GradientRegistry.GetBackwardPass(ops, ["y"])


def test_backward_pass_in_place_relu_like_chain():
    ops = [CreateOperator("TestDirect", "x", "h"),
           CreateOperator("TestUsesOutput", "h", "h")]
    gops, m = GradientRegistry.GetBackwardPass(ops, ["h"])
    assert _types(gops) == ["ConstantFill", "TestUsesOutputGradient", "TestDirectGradient"]
    assert gops[1].input == ["h", "h_autogen_grad"] and gops[1].output == ["h_grad"]
    assert gops[2].input == ["h_grad"] and m["x"] == "x_grad"


def test_backward_pass_bad_ys():
    with pytest.raises(TypeError):
        GradientRegistry.GetBackwardPass([], 3)


# Checked against Caffe2's sources (SHOULD_NOT_DO_GRADIENT): accuracy_op, perplexity_op,
# multi_class_accuracy_op, elementwise_logical_ops (IsMemberOf), utility_ops (AccumulateHistogram, Print),
# last_n_window_collector, arg_ops, elementwise_ops_schema (comparisons, logical and bitwise ops, Not,
# Sign), adam_op, momentum_sgd_op, adagrad_op. NO_GRADIENT there: StopGradient, Percentile.
SHOULD_NOT_DO = ["Accuracy", "Perplexity", "MultiClassAccuracy", "IsMemberOf", "AccumulateHistogram",
                 "LastNWindowCollector", "ArgMax", "ArgMin", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or",
                 "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Not", "Sign", "Print", "Adam",
                 "MomentumSGD", "Adagrad"]


def test_should_not_do_gradient_ops_refuse_a_gradient_reaching_them():
    assert sorted(GradientRegistry._should_not_do) == sorted(SHOULD_NOT_DO)
    for t in SHOULD_NOT_DO:
        assert GradientRegistry.HasGradient(t) and GradientRegistry.ShouldNotDoGradient(t)
    for t in ["StopGradient", "Percentile", "ConstantFill", "Iter"]:
        assert GradientRegistry.HasGradient(t) and not GradientRegistry.ShouldNotDoGradient(t)
    ops = [CreateOperator("Sigmoid", ["x"], ["s"]),
           CreateOperator("Relu", ["x"], ["r"], name="here"),
           CreateOperator("LT", ["s", "r"], ["lt"]),
           CreateOperator("Mul", ["s", "lt"], ["y"])]
    with pytest.raises(ValueError, match=r"^op LT #2: the gradient of its output 0 'lt' reaches it, "
                                         r"but LT must not be differentiated"):
        GradientRegistry.GetBackwardPass(ops, ["y"])
    # the gradient stopped before it: silent, as in Caffe2
    ops[3] = CreateOperator("Mul", ["s", "lt2"], ["y"])
    ops.insert(3, CreateOperator("StopGradient", ["lt"], ["lt2"]))
    _, g = GradientRegistry.GetBackwardPass(ops, ["y"])
    assert "x" in g and "lt" not in g and "lt2" in g
    # a gradient reaching only an output it does not matter for is still refused, naming it
    ops = [CreateOperator("ArgMax", ["x"], ["am"], name="amx")]
    with pytest.raises(ValueError, match=r"^op ArgMax #0 \(amx\): the gradient of its output 0 'am'"):
        GradientRegistry.GetBackwardPass(ops, {"am": "am_g"})
    with pytest.raises(ValueError, match=r"^op ArgMax \(amx\): the gradient of its output 0 'am'"):
        GradientRegistry.GetGradientForOp(ops[0], ["am_g"])
    # NO_GRADIENT ops stay silent
    for t, ins in [("StopGradient", ["x"]), ("Percentile", ["x", "v", "l"])]:
        ops, g = GradientRegistry.GetBackwardPass([CreateOperator(t, ins, ["o"])], ["o"])
        assert [o.type for o in ops] == ["ConstantFill"] and set(map(str, g)) == {"o"}


def test_net_add_gradient_operators_and_run():
    net = core.Net("grad_run")
    x = net.AddExternalInput("x")
    y = net.Copy(x, "y")
    z = net.Copy(y, "z")
    grad_map = net.AddGradientOperators({z: "z_grad"})
    assert grad_map[x] == "x_grad" and grad_map["y"] == "y_grad"
    assert _types(net.Proto().op) == ["Copy"] * 4
    data = np.random.RandomState(0).randn(3, 2).astype(np.float32)
    workspace.FeedBlob("x", data)
    workspace.FeedBlob("z_grad", 2 * data)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), 2 * data)


def test_add_gradient_operators_skip():
    net = core.Net("skip")
    _made_up(net, "TestDirect", "a", "b")
    _made_up(net, "TestDirect", "b", "c")
    m = net.AddGradientOperators({"c": "c_grad"}, skip=1)
    assert "a" not in m and m["b"] == "b_grad"


# ---------------------------------------------------------------- SSA
def test_get_ssa_blob_written_twice():
    net = core.Net("ssa")
    net.AddExternalInput("x")
    _made_up(net, "TestDirect", "x", "y")
    _made_up(net, "TestDirect", ["y", "x"], "y")
    _made_up(net, "TestDirect", "y", "z")
    ssa, versions = core.get_ssa(net)
    assert ssa == [([("x", 0)], [("y", 1)]),
                   ([("y", 1), ("x", 0)], [("y", 2)]),
                   ([("y", 2)], [("z", 1)])]
    assert versions == {"x": 0, "y": 2, "z": 1}
    assert core.get_undefined_blobs(ssa) == {"x"}
    ssa2, _ = core.get_ssa(net.Proto())
    assert ssa2 == ssa
    assert core.get_output_producers(ssa)[("y", 2)] == 1
    assert core.get_op_ids_in_path(ssa, versions, ["x"], ["z"]) == [0, 1, 2]


def test_get_ssa_without_external_inputs_and_undefined():
    p = NetDef("noext")
    p.op = [CreateOperator("A", ["u", "v"], ["w"]), CreateOperator("B", ["w", "u2"], ["u2"])]
    ssa, versions = core.get_ssa(p)
    assert ssa == [([("u", 0), ("v", 0)], [("w", 1)]), ([("w", 1), ("u2", 0)], [("u2", 1)])]
    assert core.get_undefined_blobs(ssa) == {"u", "v", "u2"}
    # with external inputs, unknown reads default to version 0 but are not recorded
    p.external_input = ["u"]
    ssa, versions = core.get_ssa(p)
    assert "v" not in versions and core.get_undefined_blobs(ssa) == {"u", "v", "u2"}


def test_gradient_modules_are_loaded():
    import recurrent
    import pkgutil
    import os
    pkg_dir = os.path.dirname(recurrent.__file__)
    grads = [m.name for m in pkgutil.iter_modules([pkg_dir]) if m.name.startswith("_grad_")]
    import sys
    for g in grads:
        assert "recurrent." + g in sys.modules


# ---------------------------------------------------------------- gradient checker
def test_gradient_checker_copy_and_workspace_restored():
    workspace.SwitchWorkspace("mine", True)
    workspace.FeedBlob("keep", np.ones(2, np.float32))
    x = np.random.RandomState(1).randn(3, 4).astype(np.float32)
    x_before = x.copy()
    op = CreateOperator("Copy", ["x"], ["y"])
    ok, grad, est = GradientChecker(stepsize=1e-2, threshold=1e-3).CheckSimple(op, [x], 0, [0])
    assert ok
    np.testing.assert_allclose(grad, x, rtol=1e-6)      # d(1/2 sum y^2)/dx = y = x
    np.testing.assert_allclose(est, x, rtol=1e-3, atol=1e-3)
    assert est.shape == x.shape and est.dtype == np.float32
    np.testing.assert_array_equal(x, x_before)          # the caller's array is untouched
    assert workspace.CurrentWorkspace() == "mine" and workspace.HasBlob("keep")
    assert not workspace.HasBlob("x")
    workspace.SwitchWorkspace("gradient_check")
    assert workspace.Blobs() == []                      # the checker cleaned up
    workspace.SwitchWorkspace("default")


def test_gradient_checker_detects_wrong_gradient():
    # Check in the caller's own workspace so a blob the wrong gradient op reads can be pre-fed.
    x = np.full((2, 2), 3.0, np.float32)
    other = np.full((2, 2), -1.0, np.float32)
    workspace.FeedBlob("other", other)
    checker = GradientChecker(stepsize=1e-2, threshold=1e-2, workspace_name="default")
    wrong_ops = [CreateOperator("Copy", ["other"], ["x_grad"])]
    ok, grad, est = checker.CheckSimple(CreateOperator("Copy", ["x"], ["y"]), [x], 0, [0],
                                        grad_ops=wrong_ops)
    assert not ok
    np.testing.assert_array_equal(grad, other)
    np.testing.assert_allclose(est, x, rtol=1e-3)
    assert "gradient check failed at 4 of 4" in checker.last_message
    assert workspace.CurrentWorkspace() == "default" and workspace.HasBlob("other")


def test_gradient_checker_errors_restore_workspace():
    op = CreateOperator("NoSuchRunnableOp", ["x"], ["y"])

    @GradientRegistry.RegisterGradient("NoSuchRunnableOp")
    def _g(op, g_output):
        return [], ["x_grad"]

    with pytest.raises(Exception):
        GradientChecker(1e-2, 1e-2).CheckSimple(op, [np.ones(2, np.float32)], 0, [0])
    assert workspace.CurrentWorkspace() == "default"
    with pytest.raises(ValueError, match="no gradient"):
        GradientChecker(1e-2, 1e-2).CheckSimple(CreateOperator("TestFirstOnly", ["x", "l"], ["y"]),
                                                [np.ones(2, np.float32), np.ones(2, np.float32)],
                                                1, [0])
    with pytest.raises(IndexError):
        GradientChecker(1e-2, 1e-2).CheckSimple(CreateOperator("Copy", ["x"], ["y"]),
                                                [np.ones(2, np.float32)], 1, [0])


def test_net_gradient_checker_copy_chain():
    net = core.Net("ngc")
    x = net.AddExternalInput("x")
    y = net.Copy(x, "y")
    z = net.Copy(y, "z")
    xv = np.random.RandomState(3).randn(2, 3).astype(np.float32)
    mean, mx = NetGradientChecker.Check(net, [z], {"x": xv}, "x", step_size=1e-2, threshold=1e-3)
    assert mx < 1e-3
    net2 = core.Net("ngc2")
    x2 = net2.AddExternalInput("x")
    z2 = net2.Copy(x2, "z2")
    NetGradientChecker.CompareNets([net, net2], [[z], [z2]], [0], ["x"], {"x": xv})


def test_import_leaves_the_openblas_thread_timeout_variable_as_it_was():
    """recurrent sets OPENBLAS_THREAD_TIMEOUT only while its OpenBLAS loads
    (idle BLAS threads must not spin through the executor's runs), and never
    overrides the user's value."""
    import os
    import subprocess
    import sys
    import recurrent
    root = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    code = "import os, recurrent; print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    for value, expected in ((None, "None"), ("7", "7")):
        env = dict(os.environ, PYTHONPATH=root)
        env.pop("OPENBLAS_THREAD_TIMEOUT", None)
        if value is not None:
            env["OPENBLAS_THREAD_TIMEOUT"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected


def test_unregistered_operator_refused_when_built():
    """As Caffe2: net.X / blob.X for an unregistered X raise AttributeError at once, naming near
    registered types, instead of failing when the net runs; the net is left unchanged."""
    net = core.Net("unregistered")
    x = net.AddExternalInput("x")
    with pytest.raises(AttributeError, match=r"Method Sigmod is not a registered operator. "
                                             r"Did you mean: \[.*Sigmoid"):
        net.Sigmod(x, "y")
    with pytest.raises(AttributeError, match="Method startswith is not a registered operator"):
        x.startswith("x")
    assert net.Proto().op == []
    assert str(x.Sigmoid([], "y")) == "y" and [o.type for o in net.Proto().op] == ["Sigmoid"]


def test_model_helper_refuses_known_caffe2_ops_not_provided():
    """Caffe2's ModelHelper lists ops it forwards (model.Snapshot, model.NCCLAllreduce, ...); those this
    runtime does not provide fail when the model is built, not when the net runs."""
    m = ModelHelper(name="known")
    for op_type in ("Snapshot", "NCCLAllreduce", "Checkpoint"):
        with pytest.raises(AttributeError, match="Method %s is not a registered operator" % op_type):
            getattr(m, op_type)
    assert m.Sigmoid("x", "y") == "y"
    assert m.NHWC2NCHW("y", "n") == "n"   # registered since the order switch ops (ops/shape.c)
    assert m.EnsureCPUOutput("y", "z") == "z"   # registered since ops/util.c
    assert m.Summarize("y", "s") == "s"   # registered since Summarize (ops/print.c)
