"""Protobuf binary wire format of the proto messages (recurrent/_wire.py): byte for byte as
google.protobuf's caffe2_pb2 (built here from descriptors with caffe2.proto's field numbers and
types), round trips of real nets and plans, malformed bytes, and the workspace functions that take
serialized messages as Caffe2's did."""

import copy
import math
import random

import numpy as np
import pytest

from recurrent import _wire, core, rnn_cell, text_format, workspace
from recurrent.model_helper import ModelHelper
from recurrent.proto import (Argument, DecodeError, DeviceOption, ExecutionStep, NetDef, OperatorDef, PlanDef,
                             make_argument)

MESSAGES = (DeviceOption, Argument, OperatorDef, NetDef, ExecutionStep, PlanDef)


# ================================================================ google.protobuf's caffe2_pb2, built here
def _build_pb2(package, packed=False):
    """The caffe2.proto messages this package mirrors, as google.protobuf classes by name: the
    field numbers, types and labels of caffe2/proto/caffe2.proto (Argument's tensor fields left
    out; DeviceOption's hip_gpu_id too). ``packed``: Argument's repeated scalars [packed=true]
    (another valid encoding)."""
    descriptor_pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
    from google.protobuf import descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    O, R = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    T = {"string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "int32": F.TYPE_INT32, "int64": F.TYPE_INT64,
         "uint32": F.TYPE_UINT32, "bool": F.TYPE_BOOL, "float": F.TYPE_FLOAT}
    fdp = descriptor_pb2.FileDescriptorProto(name=package.replace(".", "/") + ".proto", package=package,
                                             syntax="proto2")
    tables = {
        "DeviceOption": [(1, "device_type", "int32", O), (2, "device_id", "int32", O),
                         (3, "random_seed", "uint32", O), (4, "node_name", "string", O),
                         (5, "numa_node_id", "int32", O), (6, "extra_info", "string", R)],
        "Argument": [(1, "name", "string", O), (2, "f", "float", O), (3, "i", "int64", O),
                     (4, "s", "bytes", O),
                     (5, "floats", "float", R), (6, "ints", "int64", R), (7, "strings", "bytes", R),
                     (8, "n", "NetDef", O), (9, "nets", "NetDef", R)],
        "OperatorDef": [(1, "input", "string", R), (2, "output", "string", R), (3, "name", "string", O),
                        (4, "type", "string", O), (5, "arg", "Argument", R),
                        (6, "device_option", "DeviceOption", O),
                        (7, "engine", "string", O), (8, "control_input", "string", R),
                        (9, "is_gradient_op", "bool", O), (10, "debug_info", "string", O)],
        "NetDef": [(1, "name", "string", O), (2, "op", "OperatorDef", R), (3, "type", "string", O),
                   (4, "num_workers", "int32", O), (5, "device_option", "DeviceOption", O),
                   (6, "arg", "Argument", R), (7, "external_input", "string", R),
                   (8, "external_output", "string", R)],
        "ExecutionStep": [(1, "name", "string", O), (2, "substep", "ExecutionStep", R),
                          (3, "network", "string", R), (4, "num_iter", "int64", O),
                          (5, "criteria_network", "string", O), (7, "report_net", "string", O),
                          (8, "report_interval", "int32", O), (11, "run_every_ms", "int64", O),
                          (6, "concurrent_substeps", "bool", O), (9, "should_stop_blob", "string", O),
                          (10, "only_once", "bool", O), (12, "create_workspace", "bool", O),
                          (13, "num_concurrent_instances", "int32", O)],
        "PlanDef": [(1, "name", "string", O), (2, "network", "NetDef", R),
                    (3, "execution_step", "ExecutionStep", R)],
    }
    for name, fields in tables.items():
        m = fdp.message_type.add(name=name)
        for number, fname, kind, label in fields:
            f = m.field.add(name=fname, number=number, label=label)
            if kind in T:
                f.type = T[kind]
                if packed and label == R and kind in ("float", "int64"):
                    f.options.packed = True
            else:
                f.type, f.type_name = F.TYPE_MESSAGE, ".%s.%s" % (package, kind)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = getattr(message_factory, "GetMessageClass", None)
    if get is None:  # protobuf < 4.21
        factory = message_factory.MessageFactory(pool)
        get = factory.GetPrototype
    return {name: get(pool.FindMessageTypeByName("%s.%s" % (package, name))) for name in tables}


@pytest.fixture(scope="module")
def pb2():
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        pytest.skip("google.protobuf is not installed: the byte-for-byte comparison needs it")
    return _build_pb2("caffe2")


def _pb_text_format():
    from google.protobuf import text_format as pb_text
    return pb_text


def _to_pb(pb2, msg):
    """The google.protobuf message equal to ``msg`` (through text format, which both print the same)."""
    return _pb_text_format().Parse(text_format.message_to_text(msg), pb2[type(msg).__name__]())


def _check_same_as_google(pb2, msg):
    text = text_format.message_to_text(msg)
    ours = msg.SerializeToString()
    pb = _to_pb(pb2, msg)
    assert ours == pb.SerializeToString()
    assert ours == pb.SerializeToString(deterministic=True)
    assert msg.ByteSize() == pb.ByteSize() == len(ours)
    back = type(msg)()
    assert back.ParseFromString(pb.SerializeToString()) == len(ours)
    assert text_format.message_to_text(back) == text
    assert back.SerializeToString() == ours
    theirs = pb2[type(msg).__name__]()
    assert theirs.ParseFromString(ours) == len(ours)
    assert theirs.SerializeToString() == ours
    # what google read from our bytes, printed by google and read by our text format: what we read
    assert text_format.Parse(_pb_text_format().MessageToString(theirs), type(msg)()) == back
    return ours


# ================================================================ sample messages
def _step_net():
    step = core.Net("step")
    h = step.AddExternalInput("h_prev")
    step.Copy(h, "h")
    step.AddExternalOutput("h")
    return step.Proto()


def _full_net():
    """Every field of NetDef, OperatorDef, Argument and DeviceOption set, with awkward values."""
    net = NetDef("full")
    net.type = "dag"
    net.num_workers = -3
    net.device_option = DeviceOption(1, -2, random_seed=2 ** 32 - 1, node_name="node:é \"1\"",
                                     extra_info=["k2:v", "", "k1:v\n"])
    net.external_input = ["x", "w", "é"]
    net.external_output = ["z"]
    net.arg = [make_argument("net_arg", 7)]
    op = core.CreateOperator(
        "Foo", ["x", "w"], ["y", "z"], name="foo", control_input=["x"], engine="CUDNN",
        device_option=DeviceOption(0, 0, random_seed=0, numa_node_id=-1), f=0.1, i=-(2 ** 63), i2=2 ** 63 - 1, neg=-1,
        s='quote" nl\n é \x00', e="", floats=[1.0, -0.0, 1.4013e-45, 3.4e38, float("inf"), 1e20],
        ints=[0, -1, 2 ** 40, -(2 ** 40), 127, 128, 16383, 16384], strings=["a", "", "b c", "ü"],
        step_net=_step_net(), nets=[NetDef("n1"), _step_net()])
    op.is_gradient_op = True
    op.debug_info = "made by a test"
    net.op = [op, OperatorDef("Bar", ["z"], ["w2"])]
    bad = Argument("raw")
    bad.s = b"\xff\xfe\x80".decode("utf-8", "surrogateescape")  # bytes that are not UTF-8, kept
    bad.strings = [b"\x00\x81".decode("utf-8", "surrogateescape")]
    net.op[1].arg.append(bad)
    return net


def _full_plan():
    plan = PlanDef("plan")
    plan.network = [_full_net(), _step_net()]
    inner = ExecutionStep("inner")
    inner.network = ["step", "full"]
    inner.num_iter = 2 ** 40
    inner.criteria_network = "crit"
    inner.report_net = "rep"
    inner.report_interval = -5
    inner.should_stop_blob = "stop"
    inner.only_once = False  # set though False: protobuf's has-bit, kept
    inner.concurrent_substeps = False
    inner.run_every_ms = 100
    inner.create_workspace = True
    inner.num_concurrent_instances = 3
    outer = ExecutionStep("outer")
    outer.substep = [inner, ExecutionStep("empty")]
    plan.execution_step = [outer, ExecutionStep()]
    return plan


# ================================================================ (1) byte for byte as google.protobuf
def test_every_field_kind_as_google(pb2):
    net = _full_net()
    ours = _check_same_as_google(pb2, net)
    assert NetDef.FromString(ours) == net
    for msg in [net.op[0], net.op[0].arg[0], net.device_option, _full_plan(), _full_plan().execution_step[0]]:
        _check_same_as_google(pb2, msg)


def test_filled_field_by_field_on_both_sides(pb2):
    """The same message filled through each side's own API (not through text)."""
    pb = pb2["NetDef"](name="n", type="simple", num_workers=2)
    pb.device_option.device_type = 1
    pb.device_option.device_id = 3
    pb.external_input.extend(["a", "b"])
    op = pb.op.add(type="FC", name="fc", input=["a", "b"], output=["y"], engine="E", is_gradient_op=True)
    op.device_option.device_type = 0
    op.device_option.device_id = 0
    op.device_option.random_seed = 9
    op.device_option.node_name = "worker"
    op.device_option.numa_node_id = 0
    op.device_option.extra_info.extend(["a:1", "b:2"])
    a = op.arg.add(name="f", f=0.5)
    a = op.arg.add(name="i", i=-7)
    a = op.arg.add(name="s", s=b"bytes\xff")
    a = op.arg.add(name="floats", floats=[1.5, -2.25])
    a = op.arg.add(name="ints", ints=[3, -4, 2 ** 62])
    a = op.arg.add(name="strings", strings=[b"x", b"y"])
    a = op.arg.add(name="n")
    a.n.name = "inner"
    a.n.op.add(type="Copy", input=["p"], output=["q"])
    a = op.arg.add(name="nets")
    a.nets.add(name="m1")
    a.nets.add(name="m2").external_output.append("o")
    pb.arg.add(name="num", i=1)

    net = NetDef("n")
    net.type = "simple"
    net.num_workers = 2
    net.device_option = DeviceOption(1, 3)
    net.external_input = ["a", "b"]
    o = OperatorDef("FC", ["a", "b"], ["y"], name="fc")
    o.engine = "E"
    o.is_gradient_op = True
    o.device_option.random_seed = 9  # through the unset field's proxy, as Caffe2 code does
    o.device_option.node_name = "worker"
    o.device_option.numa_node_id = 0
    o.device_option.extra_info.extend(["a:1", "b:2"])
    inner = NetDef("inner")
    inner.op.append(OperatorDef("Copy", ["p"], ["q"]))
    m2 = NetDef("m2")
    m2.external_output.append("o")
    o.arg = [make_argument("f", 0.5), make_argument("i", -7), make_argument("s", "placeholder"),
             make_argument("floats", [1.5, -2.25]), make_argument("ints", [3, -4, 2 ** 62]),
             make_argument("strings", ["x", "y"]), make_argument("n", inner),
             make_argument("nets", [NetDef("m1"), m2])]
    o.arg[2].s = b"bytes\xff".decode("utf-8", "surrogateescape")
    net.op.append(o)
    net.arg.append(make_argument("num", 1))
    assert net.SerializeToString() == pb.SerializeToString()
    back = NetDef()
    back.ParseFromString(pb.SerializeToString())
    assert back == net
    assert back.op[0].arg[2].s.encode("utf-8", "surrogateescape") == b"bytes\xff"


def test_random_messages_as_google(pb2):
    rng = random.Random(7)
    words = ["", "a", "blob_1", "é", "tab\t", "x" * 200, "\U0001f600"]

    def rand_arg(depth):
        a = Argument(rng.choice(words))
        k = rng.choice(["f", "i", "s", "floats", "ints", "strings", "n", "nets", "none"])
        if k == "f":
            a.f = rng.choice([0.0, -1.5, 1e-30, 3.0e38, rng.uniform(-1e6, 1e6)])
        elif k == "i":
            a.i = rng.choice([0, 1, -1, 2 ** 63 - 1, -(2 ** 63), rng.randrange(-2 ** 40, 2 ** 40)])
        elif k == "s":
            a.s = rng.choice(words)
        elif k == "floats":
            a.floats = [rng.uniform(-10, 10) for _ in range(rng.randrange(1, 5))]
        elif k == "ints":
            a.ints = [rng.randrange(-2 ** 63, 2 ** 63) for _ in range(rng.randrange(1, 5))]
        elif k == "strings":
            a.strings = [rng.choice(words) for _ in range(rng.randrange(1, 4))]
        elif k == "n" and depth < 3:
            a.n = rand_net(depth + 1)
        elif k == "nets" and depth < 3:
            a.nets = [rand_net(depth + 1) for _ in range(rng.randrange(1, 3))]
        return a

    def rand_net(depth):
        n = NetDef(rng.choice(words))
        n.type = rng.choice(["", "simple", "dag"])
        if rng.random() < 0.3:
            n.num_workers = rng.randrange(-2 ** 31, 2 ** 31)
        if rng.random() < 0.3:
            n.device_option = DeviceOption(rng.randrange(0, 7), rng.randrange(-5, 5),
                                           rng.choice([None, 0, 2 ** 32 - 1]), rng.choice(words),
                                           rng.choice([None, 0, -1, 2 ** 31 - 1]),
                                           [rng.choice(words) for _ in range(rng.randrange(3))])
        for _ in range(rng.randrange(0, 3)):
            op = OperatorDef(rng.choice(words), [rng.choice(words[1:]) for _ in range(rng.randrange(3))],
                             [rng.choice(words[1:]) for _ in range(rng.randrange(3))], name=rng.choice(words))
            op.arg = [rand_arg(depth) for _ in range(rng.randrange(3))]
            op.is_gradient_op = rng.random() < 0.3
            op.engine = rng.choice(["", "CUDNN"])
            if rng.random() < 0.3:
                op.device_option = DeviceOption(1, 1)
            n.op.append(op)
        n.arg = [rand_arg(depth) for _ in range(rng.randrange(2))]
        n.external_input = [rng.choice(words[1:]) for _ in range(rng.randrange(3))]
        n.external_output = [rng.choice(words[1:]) for _ in range(rng.randrange(2))]
        return n

    for _ in range(150):
        _check_same_as_google(pb2, rand_net(0))


def test_packed_repeated_scalars_and_unknown_fields_parse(pb2):
    """Other valid encodings: [packed=true] repeated scalars, and fields this package does not
    hold (DeviceOption's hip_gpu_id, field 7 of older caffe2.proto), which are skipped."""
    packed = _build_pb2("caffe2packed", packed=True)
    a = packed["Argument"](name="a", floats=[1.0, 2.5, -3.0], ints=[1, -1, 2 ** 50])
    data = a.SerializeToString()
    unpacked = pb2["Argument"](name="a", floats=[1.0, 2.5, -3.0], ints=[1, -1, 2 ** 50]).SerializeToString()
    assert data != unpacked and Argument.FromString(unpacked) == Argument.FromString(data)
    back = Argument.FromString(data)
    assert back.name == "a" and back.floats == [1.0, 2.5, -3.0] and back.ints == [1, -1, 2 ** 50]
    # packed and unpacked pieces of one field, interleaved, are appended in order
    plain = Argument("a")
    plain.ints = [5]
    both = data + plain.SerializeToString()[3:]
    assert Argument.FromString(both).ints == [1, -1, 2 ** 50, 5]
    d = packed["DeviceOption"](device_type=1, device_id=2, node_name="node", numa_node_id=3,
                               extra_info=["x", "y"], random_seed=4)
    data = d.SerializeToString()
    back = DeviceOption.FromString(data + b"\x38\x05")  # + hip_gpu_id: 5
    assert (back.device_type, back.device_id, back.random_seed) == (1, 2, 4)
    assert (back.node_name, back.numa_node_id, back.extra_info) == ("node", 3, ["x", "y"])
    assert back.SerializeToString() == data


def test_singular_fields_repeated_in_the_bytes_last_wins_messages_merge(pb2):
    one = pb2["NetDef"](name="first")
    one.device_option.device_type = 1
    two = pb2["NetDef"](name="second")
    two.device_option.device_id = 5
    data = one.SerializeToString() + two.SerializeToString()
    theirs = pb2["NetDef"]()
    theirs.ParseFromString(data)
    ours = NetDef.FromString(data)
    assert ours.name == theirs.name == "second"
    assert (ours.device_option.device_type, ours.device_option.device_id) == (1, 5)
    # MergeFromString: scalars replaced, lists appended, nested messages merged
    net = NetDef("a")
    net.external_input = ["x"]
    net.device_option = DeviceOption(1, 0, random_seed=3)
    other = NetDef("b")
    other.external_input = ["y"]
    other.device_option = DeviceOption(0, 2)
    assert net.MergeFromString(other.SerializeToString()) == other.ByteSize()
    pb = _to_pb(pb2, NetDef("a"))
    pb.external_input.append("x")
    pb.device_option.device_type, pb.device_option.device_id, pb.device_option.random_seed = 1, 0, 3
    pb.MergeFromString(other.SerializeToString())
    assert net.SerializeToString() == pb.SerializeToString()
    assert net.external_input == ["x", "y"] and net.device_option.random_seed == 3


def test_nesting_limit_as_google(pb2):
    """100 levels of messages below the top one parse, 101 do not (upb's limit)."""
    def chain(levels):
        tags = [0x12, 0x2A, 0x42]  # NetDef.op, OperatorDef.arg, Argument.n
        body = b""
        for d in range(levels - 1, 0, -1):
            body = bytes([tags[(d - 1) % 3]]) + _varint(len(body)) + body
        return body

    for levels, ok in ((101, True), (102, False)):
        data = chain(levels)
        try:
            pb2["NetDef"]().ParseFromString(data)
            google_ok = True
        except Exception:
            google_ok = False
        assert google_ok == ok
        if ok:
            net = NetDef.FromString(data)
            assert net.SerializeToString() == data
        else:
            with pytest.raises(ValueError, match="nested more than 100 deep"):
                NetDef.FromString(data)


def _varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))


def test_float_beyond_float32_is_infinity_as_google(pb2):
    a = Argument("f")
    a.f = 1e300
    pb = pb2["Argument"](name="f")
    pb.f = 1e300
    assert a.SerializeToString() == pb.SerializeToString()
    assert Argument.FromString(a.SerializeToString()).f == math.inf
    a.f = float("nan")
    assert math.isnan(Argument.FromString(a.SerializeToString()).f)


# ================================================================ (2) real nets and plans
def _lstm_model(gradients=False):
    model = ModelHelper(name="wire")
    out = rnn_cell.LSTM(model, "x", "seq", ("h0", "c0"), dim_in=4, dim_out=3, scope="lstm")
    if gradients:
        model.AddGradientOperators([out[0]])
    return model, out


def test_lstm_net_round_trip_and_runs_from_bytes():
    model, out = _lstm_model(gradients=True)
    proto = model.net.Proto()
    data = proto.SerializeToString()
    back = NetDef()
    assert back.ParseFromString(data) == len(data)
    assert back == proto and str(back) == str(proto)
    assert back.SerializeToString() == data
    (rnn,) = [op for op in back.op if op.type == "RecurrentNetwork"]
    args = {a.name: a for a in rnn.arg}
    assert [o.type for o in args["step_net"].n.op] == ["FC", "Sum", "LSTMUnit"]
    (orig,) = [op for op in proto.op if op.type == "RecurrentNetwork"]
    assert args["backward_step_net"].n.op
    assert args["backward_step_net"].n == {a.name: a for a in orig.arg}["backward_step_net"].n

    rng = np.random.RandomState(3)
    T, N = 5, 2
    workspace.RunNetOnce(model.param_init_net.Proto().SerializeToString())
    params = {b: workspace.FetchBlob(b) for b in workspace.Blobs()}  # random fills: run once, kept

    def run(net):
        workspace.ResetWorkspace()
        for b, v in params.items():
            workspace.FeedBlob(b, v)
        workspace.FeedBlob("x", rng_x)
        workspace.FeedBlob("seq", np.array([5, 3], np.int32))
        workspace.FeedBlob("h0", np.zeros((1, N, 3), np.float32) + 0.1)
        workspace.FeedBlob("c0", np.zeros((1, N, 3), np.float32) - 0.2)
        workspace.RunNetOnce(net)
        return [workspace.FetchBlob(b) for b in (str(out[0]), "lstm/i2h_w_grad")]

    rng_x = rng.uniform(-1, 1, (T, N, 4)).astype(np.float32)
    want = run(model.net)
    got = run(data)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_plan_round_trip():
    plan = _full_plan()
    data = plan.SerializeToString()
    back = PlanDef.FromString(data)
    assert back == plan and back.SerializeToString() == data
    assert back.execution_step[0].substep[0].only_once is False
    assert text_format.parse_plan(str(plan)).SerializeToString() == data


def test_message_api_details():
    op = OperatorDef("Copy", ["a"], ["b"])
    data = op.SerializeToString()
    assert op.SerializePartialToString() == data and op.ByteSize() == len(data)
    assert OperatorDef().ParseFromString(bytearray(data)) == len(data)
    assert OperatorDef.FromString(memoryview(data)) == op
    # parsing replaces the content; the unset device option stays unset
    other = OperatorDef("X", ["p", "q"], [])
    other.device_option = DeviceOption(1, 0)
    other.arg.append(make_argument("k", 1))
    other.ParseFromString(data)
    assert other == op and not other.HasField("device_option")
    # a DeviceOption proxy (an unset field) parses into its owner's field
    op.device_option.ParseFromString(DeviceOption(0, 0, random_seed=11).SerializeToString())
    assert op.HasField("device_option") and op.device_option.random_seed == 11
    op.Clear()
    assert op == OperatorDef()
    assert op.SerializeToString() == b""
    for cls in MESSAGES:
        assert cls.FromString(b"") == cls()
    with pytest.raises(TypeError, match="expected bytes"):
        NetDef().ParseFromString("name")


def test_values_that_cannot_be_serialized():
    d = DeviceOption(2 ** 31, 0)
    with pytest.raises(ValueError, match="device_type.*out of the int32 range"):
        d.SerializeToString()
    a = Argument("a")
    a.i = 2 ** 63
    with pytest.raises(ValueError, match="out of the int64 range"):
        a.SerializeToString()
    a.i = 1.5
    with pytest.raises(TypeError, match="field 'i' of caffe2.Argument holds a float"):
        a.SerializeToString()
    a = Argument("a")
    a.floats = ["1.5"]
    with pytest.raises(TypeError, match="expected a number"):
        a.SerializeToString()
    op = OperatorDef("Copy", ["a"], ["b"])
    op.input.append(3)
    with pytest.raises(TypeError, match="field 'input' of caffe2.OperatorDef holds a int"):
        op.SerializeToString()
    op = OperatorDef("Copy", ["\ud800"], ["b"])
    with pytest.raises(ValueError, match="cannot be encoded as UTF-8"):
        op.SerializeToString()
    net = NetDef("loop")  # a net holding itself
    net.arg.append(make_argument("self", net))
    with pytest.raises(ValueError, match="nested more than 100 deep"):
        net.SerializeToString()
    net = NetDef("n")
    net.op.append(NetDef("not an op"))
    with pytest.raises(TypeError, match="expected a OperatorDef"):
        net.SerializeToString()


# ================================================================ (3) malformed bytes
@pytest.mark.parametrize("data, message", [
    (b"\x08", "truncated varint of field 'device_type' at byte 1"),
    (b"\x08\x80\x80", "truncated varint of field 'device_type' at byte 1"),
    (b"\x80", "truncated tag at byte 0"),
    (b"\x08" + b"\xff" * 10 + b"\x01", "varint of field 'device_type' longer than 10 bytes at byte 1"),
    (b"\x00\x01", "field number 0 at byte 0"),
    (b"\x0f", "invalid wire type 7 at byte 0"),
    (b"\x0a\x00", "field 'device_type' \\(number 1\\) has wire type length-delimited, expected varint"),
    (b"\x42\x05ab", "length 5 of unknown field 8 runs past the end \\(2 bytes left\\) at byte 1"),
    (b"\x22\x05ab", "length 5 of field 'node_name' runs past the end \\(2 bytes left\\) at byte 1"),
    (b"\x3c", "end-group tag of field 7 outside a group at byte 0"),
    (b"\x43\x08\x01", "group 8 has no end-group tag at byte 0"),
    (b"\x43\x4c", "end-group tag 9 closes group 8"),
    (b"\x4d\x01\x02", "truncated fixed32 value of unknown field 9"),
    (b"\x2d\x01\x02\x03\x04", "field 'numa_node_id' \\(number 5\\) has wire type fixed32, expected varint"),
])
def test_malformed_device_option(data, message):
    with pytest.raises(DecodeError, match="cannot parse caffe2.DeviceOption from %d bytes: %s"
                                          % (len(data), message)):
        DeviceOption.FromString(data)


def test_malformed_messages_name_the_path_and_offset():
    net = NetDef("n")
    op = OperatorDef("Copy", ["a"], ["b"])
    op.arg.append(make_argument("k", [1.0]))
    net.op = [OperatorDef("Nop"), op]
    data = net.SerializeToString()
    cut = data[:-1]  # the float of op[1].arg[0] loses a byte ... and so does every length around it
    with pytest.raises(DecodeError, match="length .* runs past the end"):
        NetDef.FromString(cut)
    # invalid UTF-8 in a string field (the op's type), valid in a bytes field (an argument's s)
    bad = data.replace(b"Copy", b"Co\xffy")
    with pytest.raises(DecodeError, match=r"field 'type' is not valid UTF-8 at byte (\d+) in op\[1\] "
                                          r"\(a caffe2.OperatorDef\)") as e:
        NetDef.FromString(bad)
    assert bad[int(e.value.args[0].split("at byte ")[1].split()[0])] == 0xFF
    a = Argument("s")
    a.s = "Copy"
    assert Argument.FromString(a.SerializeToString().replace(b"Copy", b"Co\xffy")).s == "Co\udcffy"
    # a wrong wire type deep inside
    arg = make_argument("k", 1)
    raw = arg.SerializeToString().replace(b"\x18\x01", b"\x1d\x00\x00\x00\x00")  # i as fixed32
    with pytest.raises(DecodeError, match=r"field 'i' \(number 3\) has wire type fixed32, expected varint"):
        Argument.FromString(raw)
    # packed floats whose length is not a multiple of 4
    with pytest.raises(DecodeError, match="truncated float of field 'floats'"):
        Argument.FromString(b"\x2a\x03\x00\x00\x00")
    # a failed parse leaves the message as it was
    keep = NetDef("keep")
    with pytest.raises(DecodeError):
        keep.ParseFromString(cut)
    with pytest.raises(DecodeError):
        keep.MergeFromString(cut)
    assert keep == NetDef("keep")


def test_every_truncation_of_a_real_net_parses_or_raises_value_error():
    model, _ = _lstm_model()
    data = model.net.Proto().SerializeToString()
    assert len(data) > 1000
    failed = 0
    for i in range(len(data)):
        try:
            NetDef.FromString(data[:i])
        except ValueError:
            failed += 1
    assert failed > len(data) // 2  # most cuts land inside a nested message


def test_random_and_mutated_bytes_parse_or_raise_value_error():
    rng = random.Random(20261206)
    model, _ = _lstm_model()
    real = model.net.Proto().SerializeToString()
    plan = _full_plan().SerializeToString()
    parsed = 0
    for i in range(3000):
        if i % 3 == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        else:
            base = bytearray(real if i % 3 == 1 else plan)
            for _ in range(rng.randrange(1, 4)):
                base[rng.randrange(len(base))] = rng.randrange(256)
            data = bytes(base)
        cls = MESSAGES[i % len(MESSAGES)] if i % 3 == 0 else (NetDef if i % 3 == 1 else PlanDef)
        try:
            msg = cls.FromString(data)
        except ValueError:
            continue
        parsed += 1
        again = msg.SerializeToString()  # what parsed serializes, and reads back the same
        assert cls.FromString(again) == msg or _has_nan(msg)
    assert parsed > 100


def _has_nan(msg):
    return "nan" in text_format.message_to_text(msg)


# ================================================================ (4) the workspace takes serialized messages
def test_workspace_entry_points_take_bytes():
    init = core.Net("init")
    init.ConstantFill([], "cnt", shape=[1], value=0.0)
    init.ConstantFill([], "one", shape=[1], value=1.0)
    inc = core.Net("inc")
    inc.Add(["cnt", "one"], "cnt")

    assert workspace.RunNetOnce(init.Proto().SerializeToString())
    assert workspace.CreateNet(workspace.StringifyProto(inc))
    assert workspace.RunNet(inc.Proto().name, 2)
    assert workspace.FetchBlob("cnt")[0] == 2.0
    assert workspace.RunOperatorOnce(core.CreateOperator("Add", ["cnt", "one"], "cnt").SerializeToString())
    assert workspace.RunOperatorsOnce([inc.Proto().op[0].SerializeToString()] * 2)
    assert workspace.FetchBlob("cnt")[0] == 5.0

    plan = core.Plan("p")
    plan.AddStep(core.execution_step("init", init))
    plan.AddStep(core.execution_step("loop", inc, num_iter=7))
    assert workspace.RunPlan(plan.Proto().SerializeToString())
    assert workspace.FetchBlob("cnt")[0] == 7.0
    assert workspace.RunPlan(bytearray(workspace.StringifyProto(plan)))
    assert workspace.FetchBlob("cnt")[0] == 7.0

    shapes, types = workspace.InferShapesAndTypes([init.Proto().SerializeToString()], nets_proto=True)
    assert shapes["cnt"] == [1]

    ws = workspace.Workspace()
    handle = ws.create_net(init.Proto().SerializeToString())
    handle.run()
    assert ws.fetch_blob("one")[0] == 1.0

    assert workspace.StringifyProto(b"raw") == b"raw"
    assert workspace.StringifyProto(init.Proto()) == init.Proto().SerializeToString()
    with pytest.raises(ValueError, match="Unexpected argument to StringifyProto"):
        workspace.StringifyProto(3)


def test_workspace_refuses_malformed_bytes():
    init = core.Net("init")
    init.ConstantFill([], "c", shape=[1], value=1.0)
    data = init.Proto().SerializeToString()
    for call in (workspace.RunNetOnce, workspace.CreateNet, workspace.RunOperatorOnce, workspace.RunPlan):
        with pytest.raises(ValueError, match="cannot parse caffe2"):
            call(data[:-3])
    assert not workspace.HasBlob("c")
    with pytest.raises(TypeError, match="expected a core.Net or NetDef, got str"):
        workspace.RunNetOnce("init")
    plan_bytes = copy.deepcopy(_full_plan())
    plan_bytes.network = []
    plan_bytes.execution_step = [ExecutionStep("s")]
    assert workspace.RunPlan(plan_bytes.SerializeToString())  # a step with nothing to run
    assert _wire.MAX_DEPTH == 100
