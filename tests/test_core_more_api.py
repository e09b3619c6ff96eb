"""Caffe2 APIs of core, scope and utils added later: Net.set_rand_seed / AddArgument /
insert_op_at_idx / reroute_tensor / ClonePartial / Net(proto, inplace=True), core.output_to_list,
remap_input, IsOperatorWithEngine, RefreshRegisteredOperators, GlobalInit / GetGlobalInitArgs, the
device inference helpers, SparseGradGenMeta, DataType, scope.EmptyDeviceScope and the utils proto
helpers, against what Caffe2's code and core_test say."""

import os
import subprocess
import sys

import numpy as np
import pytest

from recurrent import core, proto, scope, utils, workspace
from recurrent.proto import DecodeError, NetDef, OperatorDef, PlanDef, TensorProto, device_of

CPU = core.DeviceType.CPU


# ---------------------------------------------------------------- DataType, SparseGradGenMeta
def test_data_type_matches_tensor_proto_enum():
    # Caffe2's _CheckDataType: every TensorProto.DataType value is on core.DataType
    for name, value in proto.caffe2_pb2.TensorProto.DataType.items():
        assert getattr(core.DataType, name, None) == value, name
    assert core.DataType.ZERO_COLLISION_HASH == 14 and core.DataType.REBATCHING_BUFFER == 15


def test_sparse_grad_gen_meta_fields():
    m = core.SparseGradGenMeta(1, 2, 3, 4, "g", None)
    assert core.SparseGradGenMeta._fields == ("grad_op_indices", "idx_indices", "grad_op_values",
                                              "idx_values", "gradient", "device_option")
    assert (m.grad_op_values, m.gradient) == (3, "g")


# ---------------------------------------------------------------- set_rand_seed
def _seed_net():
    net = core.Net("seeded")
    net.UniformFill([], "u", shape=[4], min=0.0, max=1.0)
    with core.DeviceScope(core.DeviceOption(CPU)):
        net.Relu("u", "r")
    net.Dropout("r", ["d", "mask"], ratio=0.5)
    return net


def _seeds(net):
    return [op.device_option.random_seed for op in net.Proto().op]


def test_set_rand_seed_sequence_default():
    net = _seed_net()
    assert device_of(net.Proto().op[0]) is None
    net.set_rand_seed()
    assert _seeds(net) == [100, 101, 102]
    # ops without a device option got a CPU one; the one that had one keeps its device
    for op in net.Proto().op:
        assert op.HasField("device_option") and op.device_option.device_type == CPU
    net.set_rand_seed(7)
    assert _seeds(net) == [7, 8, 9]


def test_set_rand_seed_same_seed_for_all():
    net = _seed_net()
    net.set_rand_seed(42, sequence_seed=False)
    assert _seeds(net) == [42, 42, 42]


def test_set_rand_seed_on_op_def():
    net = _seed_net()
    other = _seed_net()
    net.set_rand_seed(3, sequence_seed=False, seed_on_op_def=True)
    other.set_rand_seed(3, sequence_seed=False, seed_on_op_def=True)
    seeds = _seeds(net)
    assert seeds == _seeds(other)          # the same ops and seed: the same values
    assert len(set(seeds)) == 3            # different ops: different values
    assert all(0 <= s < 2 ** 32 - 1 for s in seeds)
    again = _seed_net()
    again.set_rand_seed(4, sequence_seed=False, seed_on_op_def=True)
    assert _seeds(again) != seeds


def test_set_rand_seed_on_op_def_is_the_same_in_every_process():
    code = ("from recurrent import core\n"
            "n = core.Net('p'); n.Relu('x', 'y'); n.Tanh('y', 'z')\n"
            "n.set_rand_seed(9, sequence_seed=False, seed_on_op_def=True)\n"
            "print([op.device_option.random_seed for op in n.Proto().op])\n")
    outs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed,
                   PYTHONPATH=os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(
                       os.path.abspath(core.__file__))), os.environ.get("PYTHONPATH")) if p))
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert outs[0] == outs[1] and outs[0].startswith("[")


def test_set_rand_seed_errors_change_nothing():
    net = _seed_net()
    net.set_rand_seed(5)
    with pytest.raises(ValueError, match="cannot both be True"):
        net.set_rand_seed(1, sequence_seed=True, seed_on_op_def=True)
    with pytest.raises(ValueError,
                       match=r"op Dropout #2 of net 'seeded\S*' would get random_seed 4294967296"):
        net.set_rand_seed(2 ** 32 - 2)
    with pytest.raises(ValueError, match="random_seed -1"):
        net.set_rand_seed(-1)
    with pytest.raises(TypeError, match="seed must be an int, got float"):
        net.set_rand_seed(1.5)
    assert _seeds(net) == [5, 6, 7]


def test_set_rand_seed_net_still_runs_and_serializes():
    net = _seed_net()
    net.set_rand_seed(11)
    workspace.RunNetOnce(net)
    u = workspace.FetchBlob("u")
    assert u.shape == (4,) and ((u >= 0) & (u <= 1)).all()
    assert workspace.FetchBlob("d").shape == (4,)
    again = NetDef()
    again.ParseFromString(net.Proto().SerializeToString())
    assert _seeds(core.Net(again)) == [11, 12, 13]
    assert "random_seed: 11" in str(net.Proto())


def _draws(seed=None, net_seed=None, scope_seed=None):
    net = core.Net("seed_draws")
    if scope_seed is not None:
        with core.DeviceScope(core.DeviceOption(CPU, 0, random_seed=scope_seed)):
            net.GaussianFill([], "g", shape=[6])
    else:
        net.GaussianFill([], "g", shape=[6])
    net.Dropout("g", ["d", "m"], ratio=0.5)
    if net_seed is not None:
        net.Proto().device_option = core.DeviceOption(CPU, 0, random_seed=net_seed)
    if seed is not None:
        net.set_rand_seed(seed)
    workspace.RunNetOnce(net)
    return workspace.FetchBlob("g").tolist() + workspace.FetchBlob("m").tolist()


def test_random_seed_seeds_the_random_ops():
    """device_option.random_seed (set_rand_seed, a DeviceScope's, the net's) is the seed of an op without a
    `seed` argument, as Caffe2's context generator was seeded with it."""
    assert _draws(5) == _draws(5)
    assert _draws(5) != _draws(6)
    assert _draws() != _draws()  # unseeded: fresh draws
    assert _draws(net_seed=7) == _draws(net_seed=7) != _draws(net_seed=8)  # the net's, for ops without one
    assert _draws(scope_seed=3)[:6] == _draws(scope_seed=3)[:6]  # GaussianFill's own device option


def test_explicit_seed_argument_wins_over_random_seed():
    values = []
    for seed in (1, 1, 2):
        net = core.Net("seed_arg")
        net.UniformFill([], "v", shape=[5], min=0.0, max=1.0, seed=123)
        net.set_rand_seed(seed)
        workspace.RunNetOnce(net)
        values.append(workspace.FetchBlob("v"))
    np.testing.assert_array_equal(values[0], values[1])
    np.testing.assert_array_equal(values[0], values[2])


# ---------------------------------------------------------------- AddArgument
def test_add_argument():
    net = core.Net("args")
    net.AddArgument("num_workers_hint", 4)
    net.AddArgument("mode", "fast")
    net.AddArgument("dims", [1, 2])
    args = utils.ArgsToDict(net.Proto().arg)
    assert args == {"num_workers_hint": 4, "mode": "fast", "dims": [1, 2]}
    assert net.Proto().arg[0] == utils.MakeArgument("num_workers_hint", 4)
    with pytest.raises(TypeError, match="argument 'bad'"):
        net.AddArgument("bad", object())
    assert len(net.Proto().arg) == 3


# ---------------------------------------------------------------- insert_op_at_idx
def test_insert_op_at_idx():
    net = core.Net("ins")
    net.Relu("x", "y")
    net.Tanh("y", "z")
    op = core.CreateOperator("Sigmoid", ["y"], ["s"])
    net.insert_op_at_idx(op, 1)
    assert [o.type for o in net.Proto().op] == ["Relu", "Sigmoid", "Tanh"]
    assert net.Proto().op[1] == op and net.Proto().op[1] is not op  # a copy, as protobuf's extend
    assert net.BlobIsDefined("s")                                   # lookup tables see the new op
    assert [str(b) for b in net.external_inputs] == ["x"]           # external lists unchanged
    net.insert_op_at_idx(core.CreateOperator("Exp", ["z"], ["e"]), 99)  # past the end: appended
    net.insert_op_at_idx(core.CreateOperator("Abs", ["x"], ["a"]), 0)
    assert [o.type for o in net.Proto().op] == ["Abs", "Relu", "Sigmoid", "Tanh", "Exp"]
    workspace.FeedBlob("x", np.array([-1.0, 2.0], np.float32))
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("e"), np.exp(np.tanh([0.0, 2.0])), rtol=1e-6)


def test_insert_op_at_idx_shifts_op_tracebacks():
    net = core.Net("ins_tb")
    net.Relu("x", "y")
    net.Tanh("y", "z")
    before = dict(workspace.operator_tracebacks[net.Name()])
    net.insert_op_at_idx(core.CreateOperator("Abs", ["x"], ["a"]), 1)
    after = workspace.operator_tracebacks[net.Name()]
    assert after[0] == before[0] and after[2] == before[1] and 1 not in after


def test_insert_op_at_idx_errors():
    net = core.Net("ins_err")
    net.Relu("x", "y")
    with pytest.raises(ValueError, match="op_idx must be >= 0, got -1"):
        net.insert_op_at_idx(core.CreateOperator("Abs", ["x"], ["a"]), -1)
    with pytest.raises(TypeError, match="expects an OperatorDef, got str"):
        net.insert_op_at_idx("Abs", 0)
    with pytest.raises(TypeError, match="op_idx must be an int"):
        net.insert_op_at_idx(core.CreateOperator("Abs", ["x"], ["a"]), 1.0)
    assert len(net.Proto().op) == 1


# ---------------------------------------------------------------- reroute_tensor
def test_reroute_tensor_caffe2_case():
    # core_test's TestRerouteTensor: a SpatialBN between Conv and Relu
    net = core.Net("reroute_tensor")
    net.Conv(["input", "w", "b"], "conv1", kernel=1)
    net.Relu(["conv1"], "conv1_relu")
    new_op = core.CreateOperator("SpatialBN", ["conv1", "scale", "bias", "mean", "var"],
                                 ["conv1_bn", "mean", "var", "saved_mean", "saved_var"])
    assert net.reroute_tensor("conv1", new_op, [net.Proto().op[1]]) == 1
    assert new_op == net.Proto().op[1], "insertion failed"
    assert net.Proto().op[2].input[0] == "conv1_bn", "reroute failed"


def test_reroute_tensor_external_input_and_outputs():
    net = core.Net("rr")
    x = net.AddExternalInput("x")
    y = net.Relu(x, "y")
    z = net.Tanh(x, "z")
    net.Sigmoid(y, "s")
    net.AddExternalOutput(y, z)
    scale = core.CreateOperator("Scale", ["x"], ["x2"], scale=2.0)
    # only the listed consumers change (Tanh, not listed, keeps reading x); a listed op that does
    # not read x (Sigmoid) is not counted
    n = net.reroute_tensor(x, scale, can_modify=[net.Proto().op[0], net.Proto().op[2]])
    assert n == 1
    assert [o.type for o in net.Proto().op] == ["Scale", "Relu", "Tanh", "Sigmoid"]
    assert list(net.Proto().op[1].input) == ["x2"] and list(net.Proto().op[2].input) == ["x"]
    workspace.FeedBlob("x", np.array([-1.0, 0.5], np.float32))
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("y"), [0.0, 1.0])
    np.testing.assert_allclose(workspace.FetchBlob("z"), np.tanh([-1.0, 0.5]), rtol=1e-6)
    # an external output rerouted is renamed to the new producer's output, which goes right
    # after the op writing z
    n2 = net.reroute_tensor("z", core.CreateOperator("Abs", ["z"], ["z_abs"]))
    assert n2 == 0
    assert list(net.Proto().external_output) == ["y", "z_abs"]
    assert [o.type for o in net.Proto().op] == ["Scale", "Relu", "Tanh", "Abs", "Sigmoid"]


def test_reroute_tensor_errors():
    net = core.Net("rr_err")
    net.Relu("x", "y")
    with pytest.raises(ValueError, match=r"does not read 'y' \(its inputs: \['x'\]\)"):
        net.reroute_tensor("y", core.CreateOperator("Abs", ["x"], ["a"]))
    with pytest.raises(ValueError, match="neither writes 'q' nor takes it as an external input"):
        net.reroute_tensor("q", core.CreateOperator("Abs", ["q"], ["a"]))
    with pytest.raises(ValueError, match="has no output"):
        net.reroute_tensor("y", core.CreateOperator("Print", ["y"], []))
    with pytest.raises(TypeError, match="expects an OperatorDef"):
        net.reroute_tensor("y", "Abs")
    assert [o.type for o in net.Proto().op] == ["Relu"]


# ---------------------------------------------------------------- ClonePartial
def _partial_clone_net():
    """core_test's TestCloneNet.testPartialClone net."""
    params = core.Net("params")
    p1 = params.ConstantFill([], ["p1"], shape=[2], value=1.0)
    workspace.RunNetOnce(params)
    n = core.Net("original")
    a1 = n.AddExternalInput("a1")
    a2 = n.AddExternalInput("a2")
    b1, b2 = n.Concat([a1, a2], ["b1", "b2"], axis=0)
    c1 = n.Sum([b1, p1], ["c1"])
    c2 = n.Sum([b2], ["c2"])
    d = n.Sum([c1, c2], ["d"])
    n.AddGradientOperators([d])      # gradient ops are ignored when partial-cloning
    k = n.Sum([p1], ["k"])            # some in-place ops
    e = n.Sum([d], ["e"])
    e = n.Sum([e, k], [e])
    e = n.Sum([e], [e])
    f = n.Sum(e, ["f"])
    return n, dict(a1=a1, a2=a2, b1=b1, b2=b2, c1=c1, c2=c2, d=d, e=e, f=f)


def _net_assert(net, num_ops, inputs, outputs, internals):
    p = net.Proto()
    assert len(p.op) == num_ops
    assert set(p.external_input) == inputs
    assert set(p.external_output) == outputs
    blobs = set(p.external_input) | set(p.external_output)
    for op in p.op:
        blobs |= set(op.input) | set(op.output)
    assert blobs == inputs | outputs | internals
    for b in inputs:  # create the net to make sure it is valid
        workspace.FeedBlob(b, np.zeros(2, np.float32))
    workspace.CreateNet(net)


def test_clone_partial_caffe2_cases():
    n, b = _partial_clone_net()
    n2, (d22,) = n.ClonePartial("f1", {b["a1"]: "a11", b["a2"]: "a22"}, [b["d"]])
    _net_assert(n2, 4, {"p1", "a11", "a22"}, {"f1/d"}, {"f1/b1", "f1/b2", "f1/c1", "f1/c2", "p1"})
    assert isinstance(d22, core.BlobReference) and d22.Net() is n2 and str(d22) == "f1/d"
    assert list(n2.Proto().external_input) == ["a11", "a22", "p1"]   # inputs first, then params

    n3, (d22,) = n.ClonePartial("f2", [b["b1"], b["b2"]], [b["d"]])
    _net_assert(n3, 3, {"p1", "b1", "b2"}, {"f2/d"}, {"f2/c1", "f2/c2", "p1"})
    assert str(d22) == "f2/d"

    n4, (c22,) = n.ClonePartial("f3", [b["b1"]], [b["c1"]])
    _net_assert(n4, 1, {"p1", "b1"}, {"f3/c1"}, {"p1"})

    n5, (c11, c22) = n.ClonePartial("f4", [b["b1"], b["b2"]], [b["c1"], b["c2"]])
    _net_assert(n5, 2, {"p1", "b1", "b2"}, {"f4/c1", "f4/c2"}, {"p1"})
    assert (str(c11), str(c22)) == ("f4/c1", "f4/c2")

    n6, (e22,) = n.ClonePartial("f5", [b["d"]], [b["e"]])
    _net_assert(n6, 4, {"p1", "d"}, {"f5/e"}, {"f5/k", "p1"})

    n8, (e22, f22) = n.ClonePartial("f7", [b["d"]], [b["e"], b["f"]])
    _net_assert(n8, 5, {"p1", "d"}, {"f7/e", "f7/f"}, {"p1", "f7/k"})
    assert (str(e22), str(f22)) == ("f7/e", "f7/f")


def test_clone_partial_computes_the_same_values():
    n = core.Net("to_run")
    a = n.AddExternalInput("a")
    c = n.Scale(n.Relu(a, "b"), "c", scale=3.0)
    d = n.Sum([c, "p"], "d")
    e = n.Tanh(d, "e")
    e = n.Mul([e, c], e)                     # in place
    n.Sigmoid(a, "unrelated")
    x = np.array([-1.0, 0.25, 2.0], np.float32)
    p = np.array([0.5, -0.5, 1.0], np.float32)
    workspace.FeedBlob("a", x)
    workspace.FeedBlob("p", p)
    workspace.RunNetOnce(n)
    want = workspace.FetchBlob("e")
    clone, (e2,) = n.ClonePartial("part", [("a", "in")], "e")   # pairs; one output, not a list
    assert [o.type for o in clone.Proto().op] == ["Relu", "Scale", "Sum", "Tanh", "Mul"]
    assert list(clone.Proto().external_input) == ["in", "p"]
    assert list(clone.Proto().external_output) == ["part/e"] and str(e2) == "part/e"
    workspace.ResetWorkspace()
    workspace.FeedBlob("in", x)
    workspace.FeedBlob("p", p)
    workspace.RunNetOnce(clone)
    np.testing.assert_array_equal(workspace.FetchBlob("part/e"), want)
    assert not workspace.HasBlob("e") and not workspace.HasBlob("part/unrelated")
    unnamed, (e3,) = n.ClonePartial("", ["d", "c"], ["e"])     # no name: no prefix
    assert str(e3) == "e" and [o.type for o in unnamed.Proto().op] == ["Tanh", "Mul"]
    assert list(unnamed.Proto().external_input) == ["d", "c"]
    # from d alone, e needs c, whose ops also lead to d
    with pytest.raises(ValueError, match=r"op Relu #0, op Scale #1 needed for the outputs \['e'\] "
                                         r"also lead to the inputs \['d'\]"):
        n.ClonePartial("", ["d"], ["e"])


def test_clone_partial_errors():
    n, b = _partial_clone_net()
    with pytest.raises(ValueError,
                       match=r"op Concat #0 needed for the outputs \['d'\] also lead to the inputs"):
        n.ClonePartial("f4", [b["a1"], b["a2"], b["c2"]], [b["d"]])
    with pytest.raises(ValueError, match=r"output 'nope' is not defined in net 'original\S*'"):
        n.ClonePartial("g", ["a1"], ["nope"])
    with pytest.raises(ValueError, match="input 'a1' is given two names, 'x' and 'y'"):
        n.ClonePartial("g", [("a1", "x"), ("a1", "y")], ["d"])
    with pytest.raises(TypeError, match="inputs must be a dict"):
        n.ClonePartial("g", "a1", ["d"])
    with pytest.raises(TypeError, match="inputs must be blob names"):
        n.ClonePartial("g", [1], ["d"])
    with pytest.raises(TypeError, match="outputs must be a blob or a list of blobs"):
        n.ClonePartial("g", ["a1"], [3])


# ---------------------------------------------------------------- Net(proto, inplace=True)
def test_net_inplace_adopts_the_netdef():
    src = core.Net("inplace_src")
    src.Relu("x", "y")
    nd = NetDef()
    nd.CopyFrom(src.Proto())
    nd.name = "adopted"
    ops = nd.op
    net = core.Net(nd, inplace=True)
    assert net.Proto() is nd and nd.op is ops
    net.Tanh("y", "z")
    assert [o.type for o in nd.op] == ["Relu", "Tanh"]
    # the name is made unique in the NetDef itself, as Caffe2's
    second = core.Net(nd, inplace=True)
    assert nd.name == second.Name() != "adopted"
    copied = core.Net(nd)
    copied.Sigmoid("z", "s")
    assert len(nd.op) == 2 and copied.Proto() is not nd


def test_net_inplace_with_a_net_is_refused():
    net = core.Net("inplace_net")
    with pytest.raises(TypeError, match=r"inplace=True\) adopts a NetDef; got a core.Net"):
        core.Net(net, inplace=True)
    assert core.Net("named", inplace=True).Name().startswith("named")


# ---------------------------------------------------------------- output_to_list, remap_input
def test_output_to_list():
    net = core.Net("otl")
    one = net.Relu("x", "y")
    two = net.Split("y", 2, axis=0)
    assert core.output_to_list(one) == [one]
    assert core.output_to_list(two) == list(two) and isinstance(core.output_to_list(two), list)
    assert core.output_to_list([one]) == [one]
    with pytest.raises(TypeError, match="got str"):
        core.output_to_list("y")


def test_remap_input():
    op = core.CreateOperator("Sum", ["a", "b", "a"], ["s"])
    assert core.remap_input(op, {"a": "x", core.BlobReference("c"): "z"}) is None
    assert list(op.input) == ["x", "b", "x"] and list(op.output) == ["s"]
    with pytest.raises(TypeError, match="remap_input expects an OperatorDef"):
        core.remap_input(["a"], {})


# ---------------------------------------------------------------- registry
def test_is_operator_with_engine():
    assert core.IsOperatorWithEngine("Relu", "")
    assert core.IsOperatorWithEngine("Relu", "DEFAULT")
    assert not core.IsOperatorWithEngine("Relu", "CUDNN")     # no engine-specific ops here
    assert not core.IsOperatorWithEngine("NoSuchOp", "")
    with pytest.raises(TypeError, match="expects \\(str, str\\)"):
        core.IsOperatorWithEngine("Relu", None)


def test_refresh_registered_operators(monkeypatch):
    fresh = core.RefreshRegisteredOperators()
    assert fresh == set(core.RegisteredOperators()) and "Relu" in fresh
    assert core.RefreshRegisteredOperators(trigger_lazy=False) == fresh
    # the cache IsOperator reads is rebuilt from the C runtime
    monkeypatch.setattr(core, "_op_types", frozenset())
    assert not core.IsOperator("Relu")
    core.RefreshRegisteredOperators()
    assert core.IsOperator("Relu")


def test_global_init_records_args():
    before = core.GetGlobalInitArgs()
    try:
        core.GlobalInit(["prog", "--caffe2_log_level=2"])
        got = core.GetGlobalInitArgs()
        assert got == before + ["--caffe2_log_level=2"]
        got.append("mutated")
        assert core.GetGlobalInitArgs() == before + ["--caffe2_log_level=2"]   # a copy
        with pytest.raises(ValueError, match="unknown flag --no_such_flag"):
            core.GlobalInit(["prog", "--no_such_flag=1"])
        assert core.GetGlobalInitArgs() == before + ["--caffe2_log_level=2"]   # refused: not recorded
        with pytest.raises(TypeError, match="list of str"):
            core.GlobalInit("prog --caffe2_log_level=2")
    finally:
        core._GLOBAL_INIT_ARGS[:] = before


# ---------------------------------------------------------------- device inference
def test_infer_blob_devices():
    net = core.Net("devs")
    net.Relu("x", "y")
    dev = core.DeviceOption(CPU, 0, random_seed=3)
    with core.DeviceScope(dev):
        net.Tanh("y", "z")
    m = core.InferBlobDevices(net)
    assert set(m) == {"y", "z"}
    assert m["y"] == core.DeviceOption(CPU) and m["z"] == dev
    assert m["z"] is device_of(net.Proto().op[1])        # the op's own object, as Caffe2's
    assert device_of(net.Proto().op[0]) is None           # an op without one is not changed
    assert core.InferBlobDevices(net.Proto()) == m
    with pytest.raises(TypeError, match="InferBlobDevices expects a core.Net or a NetDef"):
        core.InferBlobDevices([net])


def test_infer_op_device_as_blob_devices():
    op = core.CreateOperator("Sum", ["a", "b"], ["s"])
    ins, outs = core.InferOpDeviceAsBlobDevices(op)
    assert ins == [core.DeviceOption(CPU)] * 2 and outs == [core.DeviceOption(CPU)]
    gpu = core.DeviceOption(core.DeviceType.CUDA, 1)
    op = core.CreateOperator("Sum", ["a"], ["s", "t"], device_option=gpu)
    ins, outs = core.InferOpDeviceAsBlobDevices(op)
    assert [d.device_type for d in ins + outs] == [core.DeviceType.CUDA] * 3
    with pytest.raises(TypeError, match="expects an OperatorDef"):
        core.InferOpDeviceAsBlobDevices("Sum")


def test_infer_op_blob_devices():
    gpu = core.DeviceOption(core.DeviceType.CUDA, 1)
    op = core.CreateOperator("Sum", ["a", "b"], ["s"], device_option=gpu)
    ins, outs = core.InferOpBlobDevices(op)
    assert ins == [gpu, gpu] and outs == [gpu]
    assert ins[0] is not device_of(op)                     # new objects, as Caffe2's parsed ones
    ins, outs = core.InferOpBlobDevices(core.CreateOperator("Relu", ["x"], ["y"]))
    assert ins == outs == [core.DeviceOption(CPU)]
    # the two copy ops' schemas put one side on the CPU
    ins, outs = core.InferOpBlobDevices(
        core.CreateOperator("CopyFromCPUInput", ["x"], ["y"], device_option=gpu))
    assert ins == [core.DeviceOption(CPU)] and outs == [gpu]
    ins, outs = core.InferOpBlobDevices(
        core.CreateOperator("EnsureCPUOutput", ["x"], ["y"], device_option=gpu))
    assert ins == [gpu] and outs == [core.DeviceOption(CPU)]
    with pytest.raises(TypeError, match="InferOpBlobDevices expects an OperatorDef"):
        core.InferOpBlobDevices(None)


def test_infer_op_blob_devices_as_dict_feeds():
    gpu = core.DeviceOption(core.DeviceType.CUDA, 0)
    op = core.CreateOperator("EnsureCPUOutput", ["x"], ["y"], device_option=gpu)
    ins, outs = core.InferOpBlobDevicesAsDict(op)
    assert ins == {"x": gpu} and outs == {"y": core.DeviceOption(CPU)}
    # as Caffe2's test helpers use it: feed each input on its inferred device
    op = core.CreateOperator("Relu", ["x"], ["y"])
    ins, _ = core.InferOpBlobDevicesAsDict(op)
    workspace.FeedBlob("x", np.array([-1.0, 1.0], np.float32), device_option=ins["x"])
    workspace.RunOperatorOnce(op)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [0.0, 1.0])


# ---------------------------------------------------------------- scope.EmptyDeviceScope
def test_empty_device_scope():
    dev = core.DeviceOption(CPU, 0, random_seed=5)
    with core.DeviceScope(dev):
        with scope.EmptyDeviceScope():
            assert scope.CurrentDeviceScope() is None
            op = core.CreateOperator("Relu", ["x"], ["y"])
            assert not op.HasField("device_option")
        assert scope.CurrentDeviceScope() == dev
        with pytest.raises(KeyError, match="inside"):
            with scope.EmptyDeviceScope():
                raise KeyError("inside")                     # propagates (Caffe2's swallowed it)
        assert scope.CurrentDeviceScope() == dev
    assert scope.CurrentDeviceScope() is None
    with scope.EmptyDeviceScope():
        assert scope.CurrentDeviceScope() is None
    assert scope.CurrentDeviceScope() is None


# ---------------------------------------------------------------- node_name / extra_info in scopes
def test_core_device_option_new_fields():
    d = core.DeviceOption(CPU, 0, node_name="n", numa_node_id=1, extra_info=["k:v"])
    assert (d.node_name, d.numa_node_id, d.extra_info) == ("n", 1, ["k:v"])
    d = core.DeviceOption(CPU)
    assert (d.node_name, d.numa_node_id, d.extra_info) == ("", None, [])
    with pytest.raises(ValueError, match="numa_node_id 0 is for the CPU"):
        core.DeviceOption(core.DeviceType.CUDA, 0, numa_node_id=0)
    given = ["a"]
    core.DeviceOption(CPU, extra_info=given).extra_info.append("b")
    assert given == ["a"]


def test_device_option_equal_ignore_flags():
    a, b = core.DeviceOption(CPU), core.DeviceOption(CPU, 3)
    b.node_name, b.random_seed = "n", 5
    assert core.device_option_equal(a, b)                      # both ignored by default
    assert not core.device_option_equal(a, b, ignore_node_name=False)
    assert not core.device_option_equal(a, b, ignore_random_seed=False)
    a.node_name, a.random_seed = "n", 5
    assert core.device_option_equal(a, b, ignore_node_name=False, ignore_random_seed=False)
    a.extra_info, a.numa_node_id = ["x"], 2                    # never compared, as Caffe2's
    assert core.device_option_equal(a, b, ignore_node_name=False, ignore_random_seed=False)
    # None is the CPU, with no node name and no seed
    assert core.device_option_equal(None, b) and not core.device_option_equal(None, b, ignore_node_name=False)
    assert not core.device_option_equal(b, None, ignore_random_seed=False)
    assert core.device_option_equal(None, core.DeviceOption(CPU), ignore_node_name=False, ignore_random_seed=False)
    gpu1, gpu2 = core.DeviceOption(core.DeviceType.CUDA, 1, node_name="n"), core.DeviceOption(core.DeviceType.CUDA, 2)
    assert not core.device_option_equal(gpu1, gpu2) and not core.device_option_equal(None, gpu2)


def test_device_scope_node_name():
    dev = core.DeviceOption(CPU, 0, random_seed=4)
    with core.DeviceScope(dev, node_name="n1"):
        cur = scope.CurrentDeviceScope()
        assert cur.node_name == "n1" and cur.random_seed == 4 and dev.node_name == ""  # a copy
        with core.DeviceScope(core.DeviceOption(CPU, 1)):              # inherited
            assert scope.CurrentDeviceScope().node_name == "n1"
            assert core.CreateOperator("Relu", ["x"], ["y"]).device_option.node_name == "n1"
        with core.DeviceScope(core.DeviceOption(CPU, node_name="own")):  # its own wins
            assert scope.CurrentDeviceScope().node_name == "own"
            with core.DeviceScope(None, node_name="n3"):                # node_name wins over both
                assert scope.CurrentDeviceScope() == core.DeviceOption(CPU, node_name="n3")
        with core.DeviceScope(None):                                    # None alone clears, no inheriting
            assert scope.CurrentDeviceScope() is None
        assert scope.CurrentDeviceScope().node_name == "n1"
    # None (or Caffe2's 0) with a node_name: a CPU option holding only the node name
    for none in (None, 0):
        with core.DeviceScope(none, node_name="only"):
            assert scope.CurrentDeviceScope() == core.DeviceOption(CPU, node_name="only")
        with core.DeviceScope(none):
            assert scope.CurrentDeviceScope() is None
    assert scope.CurrentDeviceScope() is None
    with pytest.raises(TypeError, match="node_name must be a str, got int"):
        with core.DeviceScope(dev, node_name=3):
            pass
    with pytest.raises(TypeError, match="DeviceScope takes a DeviceOption as its argument, got int"):
        with core.DeviceScope(1, node_name="n"):
            pass


def test_device_scope_extra_info_merged_sorted():
    with core.DeviceScope(core.DeviceOption(CPU, extra_info=["k3:v", "k1:v"])):
        assert scope.CurrentDeviceScope().extra_info == ["k1:v", "k3:v"]
        with core.DeviceScope(core.DeviceOption(CPU, extra_info=["k2:v", "k1:v"])):
            assert scope.CurrentDeviceScope().extra_info == ["k1:v", "k1:v", "k2:v", "k3:v"]  # duplicates kept
            op = core.CreateOperator("Relu", ["x"], ["y"])
            assert op.device_option.extra_info == ["k1:v", "k1:v", "k2:v", "k3:v"]
        with core.DeviceScope(None, node_name="n"):
            assert scope.CurrentDeviceScope().extra_info == ["k1:v", "k3:v"]
        with scope.EmptyDeviceScope():
            with core.DeviceScope(core.DeviceOption(CPU, extra_info=["z"])):
                assert scope.CurrentDeviceScope().extra_info == ["z"]
        assert scope.CurrentDeviceScope().extra_info == ["k1:v", "k3:v"]
    given = core.DeviceOption(CPU, extra_info=["b", "a"])
    with core.DeviceScope(given):
        assert scope.CurrentDeviceScope().extra_info == ["a", "b"]
    assert given.extra_info == ["b", "a"]                                # the argument is not changed


# ---------------------------------------------------------------- utils proto helpers
def _a_net():
    net = core.Net("io_net")
    net.FC(["x", "w", "b"], "y", axis=2)
    return net.Proto()


def test_try_read_proto_text_and_binary():
    nd = _a_net()
    from_text = utils.TryReadProtoWithClass(NetDef, str(nd))
    from_text_bytes = utils.TryReadProtoWithClass(NetDef, str(nd).encode())
    from_binary = utils.TryReadProtoWithClass(NetDef, nd.SerializeToString())
    assert from_text == from_text_bytes == from_binary == nd
    assert isinstance(from_binary, NetDef)
    t = utils.NumpyArrayToCaffe2Tensor(np.arange(6, dtype=np.float32).reshape(2, 3), "t")
    got = utils.TryReadProtoWithClass(TensorProto, t.SerializeToString())
    np.testing.assert_array_equal(utils.Caffe2TensorToNumpyArray(got), np.arange(6).reshape(2, 3))


def test_try_read_proto_errors():
    with pytest.raises(DecodeError, match=r"not a NetDef in text format \(.*\) nor in binary"):
        utils.TryReadProtoWithClass(NetDef, b"\xff\xff\xff")
    with pytest.raises(DecodeError, match="a str is not read as binary"):
        utils.TryReadProtoWithClass(NetDef, "no_such_field: 1")
    with pytest.raises(ValueError):          # DecodeError is a ValueError, as the module says
        utils.TryReadProtoWithClass(PlanDef, b"\x08")
    with pytest.raises(TypeError, match="expected str or bytes, got int"):
        utils.TryReadProtoWithClass(NetDef, 3)
    with pytest.raises(TypeError, match="is not a message class"):
        utils.TryReadProtoWithClass(dict, b"")


def test_get_content_from_proto():
    fmap = {NetDef: lambda m: ("net", m.name), PlanDef: lambda m: ("plan", m.name)}
    nd = NetDef("n")
    assert utils.GetContentFromProto(nd, fmap) == ("net", "n")
    assert utils.GetContentFromProto(PlanDef(), fmap) == ("plan", "")
    assert utils.GetContentFromProto(OperatorDef(), fmap) is None
    # exact type only, as Caffe2's `type(obj) is cls`
    sub = type("SubNet", (NetDef,), {"__slots__": ()})()
    assert utils.GetContentFromProto(sub, fmap) is None


def test_get_content_from_proto_string():
    plan = core.Plan("a_plan")
    plan.AddStep(core.execution_step("s", core.Net("plan_net")))
    text = str(plan.Proto())
    fmap = {NetDef: lambda m: "net", PlanDef: lambda m: ("plan", m.name)}
    assert utils.GetContentFromProtoString(text, fmap) == ("plan", "a_plan")
    assert utils.GetContentFromProtoString(str(_a_net()), fmap) == "net"
    assert utils.GetContentFromProtoString(_a_net().SerializeToString(), fmap) == "net"
    with pytest.raises(DecodeError, match="Cannot find a fit protobuffer class."):
        utils.GetContentFromProtoString("garbage here", fmap)
    with pytest.raises(DecodeError, match="Cannot find a fit protobuffer class."):
        utils.GetContentFromProtoString(b"", {})


def test_convert_proto_to_binary(tmp_path):
    nd = _a_net()
    src = tmp_path / "net.pbtxt"
    src.write_text(str(nd))
    out = tmp_path / "net.pb"
    utils.ConvertProtoToBinary(NetDef, str(src), str(out))
    assert out.read_bytes() == nd.SerializeToString()
    back = NetDef()
    back.ParseFromString(out.read_bytes())
    assert back == nd
    out2 = tmp_path / "again.pb"
    utils.ConvertProtoToBinary(NetDef, str(out), str(out2))     # binary in: binary out
    assert out2.read_bytes() == out.read_bytes()
    bad = tmp_path / "bad.pbtxt"
    bad.write_text("op { no_such_field: 1 }")
    with pytest.raises(DecodeError, match="no field named 'no_such_field'"):
        utils.ConvertProtoToBinary(NetDef, str(bad), str(tmp_path / "bad.pb"))
    assert not (tmp_path / "bad.pb").exists()
    with pytest.raises(FileNotFoundError):
        utils.ConvertProtoToBinary(NetDef, str(tmp_path / "missing"), str(out))


def test_utils_names_are_exported():
    for name in ("TryReadProtoWithClass", "GetContentFromProto", "GetContentFromProtoString",
                 "ConvertProtoToBinary"):
        assert name in utils.__all__ and name not in utils._NOT_PROVIDED
    assert "Left out: CaffeBlobToNumpyArray" in utils.__doc__
    assert "TryReadProtoWithClass(cls, s)" in utils.__doc__


def test_random_seed_reaches_step_nets_and_stays_out_of_the_netdef():
    from recurrent.proto import NetDef, OperatorDef, make_argument
    step = NetDef("step")
    step.op.append(OperatorDef("Dropout", ["x"], ["y", "m"]))
    seeded = OperatorDef("Dropout", ["x"], ["y", "m"])
    seeded.arg.append(make_argument("seed", 9))
    step.op.append(seeded)
    outer = OperatorDef("RecurrentNetwork", ["a"], ["b"])
    outer.arg.append(make_argument("step_net", step))
    outer.device_option = core.DeviceOption(CPU, 0, random_seed=21)
    c = outer.to_c()
    assert ("seed", "i", 21) in c[5]  # the op's own
    step_c = next(v for name, kind, v in c[5] if name == "step_net")
    assert ("seed", "i", 21) in step_c[2][0][5]  # a step op without a device option: the outer op's
    assert [a for a in step_c[2][1][5] if a[0] == "seed"] == [("seed", "i", 9)]  # its own seed wins
    assert [a.name for a in outer.arg] == ["step_net"] and all(a.name != "seed" for a in step.op[0].arg)


def test_populate_proto_with_file_name_names_ops_where_they_were_added():
    # Caffe2's Net.PopulateProtoWithFileName (core_test's TestOperatorTraceback): "<file>:<line>:<func>"
    import inspect
    net = core.Net("pp")
    net.Relu("x", "y"); line = inspect.currentframe().f_lineno  # noqa: E702
    net.Proto().op.extend([core.CreateOperator("Relu", "y", "z", name="kept")])
    net.PopulateProtoWithFileName()
    func = inspect.currentframe().f_code.co_name
    assert net.Proto().op[0].name == "%s:%d:%s" % (__file__, line, func)
    assert net.Proto().op[1].name == "kept"
