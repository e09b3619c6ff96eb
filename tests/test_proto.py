"""Protobuf text format of NetDef / OperatorDef (recurrent.text_format)."""

import copy
import math
import pickle

import numpy as np
import pytest

from recurrent import core, proto, text_format
from recurrent.core import CreateOperator
from recurrent.proto import Argument, DeviceOption, NetDef, OperatorDef, make_argument


def _sample_net():
    step = core.Net("sample_step")
    h = step.AddExternalInput("h_prev")
    step.Copy(h, "h")
    step.AddExternalOutput("h")
    net = core.Net("sample")
    x = net.AddExternalInput("x")
    net.FC([x, "w", "b"], "y", axis=2, name="fc1")
    net.Proto().op.append(CreateOperator(
        "Foo", ["y"], ["z", "z2"], name="foo", control_input=["y"],
        device_option=core.DeviceOption(core.DeviceType.CUDA, 1, random_seed=5), engine="CUDNN",
        f=0.1, i=-3, s='quote" back\\ tab\t nl\n é', floats=[1.0, 1e-5, 1e20, 123456789.0],
        ints=[0, -1, 2 ** 40], strings=["a", "b c"], step_net=step.Proto(),
        nets=[NetDef("n1"), step.Proto()]))
    net.Proto().op[-1].is_gradient_op = True
    net.AddExternalOutput("z")
    net.Proto().type = "simple"
    return net.Proto()


GOLDEN_OP = '''input: "s/a"
input: "b"
output: "s/c"
name: "nm"
type: "Foo"
arg {
  name: "f"
  f: 0.3
}
arg {
  name: "fl"
  floats: 1.0
  floats: -2.5
}
arg {
  name: "s"
  s: "x\\"y\\303\\251"
}
device_option {
  device_type: 1
  device_id: 0
}
engine: "E"
control_input: "ctl"
is_gradient_op: true
'''


def test_operator_golden_text():
    with core.NameScope("s"):
        op = CreateOperator("Foo", ["a", core.BlobReference("b")], "c", name="nm",
                            control_input=core.BlobReference("ctl"),
                            device_option=core.DeviceOption(1), engine="E",
                            f=0.3, fl=[1, -2.5], s='x"yé')
    op.is_gradient_op = True
    assert str(op) == GOLDEN_OP
    assert repr(op) == GOLDEN_OP


def test_net_golden_text():
    net = core.Net("golden")
    x = net.AddExternalInput("x")
    net.Copy(x, "y")
    net.ConstantFill([], "c", shape=[2, 3], value=0.0)
    net.AddExternalOutput("y")
    assert str(net.Proto()) == (
        'name: "golden"\n'
        'op {\n  input: "x"\n  output: "y"\n  type: "Copy"\n}\n'
        'op {\n  output: "c"\n  type: "ConstantFill"\n'
        '  arg {\n    name: "shape"\n    ints: 2\n    ints: 3\n  }\n'
        '  arg {\n    name: "value"\n    f: 0.0\n  }\n}\n'
        'external_input: "x"\n'
        'external_output: "y"\n')
    assert str(NetDef()) == ""


def test_nested_net_argument_indentation():
    sub = NetDef("sub")
    sub.op.append(CreateOperator("Copy", ["a"], ["b"]))
    op = CreateOperator("RecurrentNetwork", ["i"], ["o"], step_net=sub)
    assert str(op) == ('input: "i"\noutput: "o"\ntype: "RecurrentNetwork"\n'
                       'arg {\n  name: "step_net"\n  n {\n    name: "sub"\n    op {\n'
                       '      input: "a"\n      output: "b"\n      type: "Copy"\n    }\n  }\n}\n')


@pytest.mark.parametrize("value,text", [
    (0.1, "0.1"), (1.0, "1.0"), (-2.5, "-2.5"), (1e-5, "1e-05"), (1e20, "1e+20"),
    (123456789.0, "123456790.0"), (0.0, "0.0"), (-0.0, "-0.0"), (3.4e38, "3.4e+38"),
    (1.0 / 3.0, "0.33333334"), (float("inf"), "inf"), (float("-inf"), "-inf"),
    (float("nan"), "nan"), (1e39, "inf"), (2.5e-39, "2.5e-39"),
])
def test_float_formatting(value, text):
    assert text_format.format_float(value) == text


def test_string_escaping():
    a = Argument("s")
    a.s = "\x00\x01\x7f'\"\\\r\n\t~ é"
    assert str(text_format.message_to_text(a)) == (
        'name: "s"\ns: "\\000\\001\\177\\\'\\"\\\\\\r\\n\\t~ \\303\\251"\n')


def _assert_round_trip(p, cls=NetDef):
    text = str(p)
    q = text_format.Parse(text, cls())
    assert str(q) == text
    return q


def test_round_trip_sample_net():
    p = _sample_net()
    q = _assert_round_trip(p)
    # float fields come back as their float32 value
    foo = q.op[1]
    args = {a.name: a for a in foo.arg}
    assert args["f"].f == pytest.approx(0.1) and args["s"].s == 'quote" back\\ tab\t nl\n é'
    assert args["ints"].ints == [0, -1, 2 ** 40] and args["strings"].strings == ["a", "b c"]
    assert args["step_net"].n.op[0].type == "Copy" and len(args["nets"].nets) == 2
    assert foo.device_option == DeviceOption(1, 1, 5) and foo.is_gradient_op
    assert foo.control_input == ["y"] and foo.engine == "CUDNN" and foo.name == "foo"
    assert q.type == "simple" and q.external_output == ["z"]
    # after one trip every float is float32-exact, so objects compare equal too
    r = text_format.parse_net(str(q))
    assert r == q


def test_round_trip_equality_with_float32_values():
    p = NetDef("eq")
    p.op.append(CreateOperator("A", ["x"], ["y"], f=0.5, fl=[0.25, -1.0], i=7, s="s",
                               names=["p", "q"]))
    p.external_input = ["x"]
    q = text_format.parse_net(str(p))
    assert q == p and str(q) == str(p)
    op = text_format.parse_op(str(p.op[0]))
    assert op == p.op[0]


def test_round_trip_core_net_with_gradients():
    net = core.Net("rt_grad")
    x = net.AddExternalInput("x")
    y = net.Copy(x, "y")
    net.Copy(y, "z")
    net.AddGradientOperators(["z"])
    _assert_round_trip(net.Proto())


def test_parse_accepts_protobuf_syntax_variants():
    text = '''
    # a comment
    name: 'n1'  # trailing comment
    op <
      input: "a" input: "b"
      output: "c" "d"
      type: "T"
      arg { name: "ints" ints: [1, 0x10, -2, 010] }
      arg: { name: "floats", floats: [1.5f, -inf, 2e3, 7]; }
      arg { name: "s" s: "\\x41\\101\\n" 'tail' }
      device_option { device_type: 1 device_id: 2 }
      is_gradient_op: t
    >
    external_input: ["a", "b"]
    '''
    p = text_format.parse_net(text)
    assert p.name == "n1" and p.external_input == ["a", "b"]
    op = p.op[0]
    assert op.input == ["a", "b"] and op.output == ["cd"] and op.type == "T"
    args = {a.name: a for a in op.arg}
    assert args["ints"].ints == [1, 16, -2, 8]
    assert args["floats"].floats == [1.5, -math.inf, 2000.0, 7.0]
    assert args["s"].s == "AA\ntail"
    assert op.device_option == DeviceOption(1, 2) and op.is_gradient_op is True


def test_merge_and_parse_clear():
    p = NetDef("keep")
    p.external_input = ["old"]
    text_format.Merge('external_input: "new"', p)
    assert p.name == "keep" and p.external_input == ["old", "new"]
    text_format.Parse('external_input: "only"', p)
    assert p.name == "" and p.external_input == ["only"]


@pytest.mark.parametrize("text,where,what", [
    ('name: "a"\nbogus: 1', "line 2 column 1", "no field named 'bogus'"),
    ('op {\n  input: "a"\n', "line 3 column 1", "unexpected end"),
    ('op {\n  type: 3\n}', "line 2 column 9", "quoted string"),
    ('op { arg { name: "x" i: 1.5 } }', "line 1 column 25", "integer"),
    ('op { arg { name: "x" f: abc } }', "line 1 column 25", "number"),
    ('name: "a', "line 1 column 7", "unterminated string"),
    ('name "a"', "line 1 column 6", "expected ':'"),
    ('name: "a"\nname: "b"', "line 2 column 1", "set twice"),
    ('op { is_gradient_op: maybe }', "line 1 column 22", "true or false"),
    ('name: "a" }', "line 1 column 11", "field name"),
    ('name: "\\q"', "line 1 column 7", "invalid escape"),
    ('name: "a" @', "line 1 column 11", "unexpected character"),
    ('op input: "a"', "line 1 column 4", "'{'"),
])
def test_parse_errors_name_line_and_column(text, where, what):
    with pytest.raises(ValueError) as e:
        text_format.parse_net(text)
    assert where in str(e.value) and what in str(e.value)


def test_parse_wrong_message_type():
    with pytest.raises(TypeError):
        text_format.Parse("", object())


# ---------------------------------------------------------------- cross-check with real protobuf
def _protobuf_classes():
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    O, R = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    fd = descriptor_pb2.FileDescriptorProto(name="c2check.proto", package="caffe2", syntax="proto2")
    specs = {
        "DeviceOption": [("device_type", 1, F.TYPE_INT32, O), ("device_id", 2, F.TYPE_INT32, O),
                         ("random_seed", 3, F.TYPE_UINT32, O), ("node_name", 4, F.TYPE_STRING, O),
                         ("numa_node_id", 5, F.TYPE_INT32, O), ("extra_info", 6, F.TYPE_STRING, R)],
        "Argument": [("name", 1, F.TYPE_STRING, O), ("f", 2, F.TYPE_FLOAT, O),
                     ("i", 3, F.TYPE_INT64, O), ("s", 4, F.TYPE_BYTES, O),
                     ("floats", 5, F.TYPE_FLOAT, R), ("ints", 6, F.TYPE_INT64, R),
                     ("strings", 7, F.TYPE_BYTES, R), ("n", 8, "NetDef", O), ("nets", 9, "NetDef", R)],
        "OperatorDef": [("input", 1, F.TYPE_STRING, R), ("output", 2, F.TYPE_STRING, R),
                        ("name", 3, F.TYPE_STRING, O), ("type", 4, F.TYPE_STRING, O),
                        ("arg", 5, "Argument", R), ("device_option", 6, "DeviceOption", O),
                        ("engine", 7, F.TYPE_STRING, O), ("control_input", 8, F.TYPE_STRING, R),
                        ("is_gradient_op", 9, F.TYPE_BOOL, O), ("debug_info", 10, F.TYPE_STRING, O)],
        "NetDef": [("name", 1, F.TYPE_STRING, O), ("op", 2, "OperatorDef", R),
                   ("type", 3, F.TYPE_STRING, O), ("num_workers", 4, F.TYPE_INT32, O),
                   ("device_option", 5, "DeviceOption", O), ("arg", 6, "Argument", R),
                   ("external_input", 7, F.TYPE_STRING, R), ("external_output", 8, F.TYPE_STRING, R)],
    }
    for name, fields in specs.items():
        m = fd.message_type.add(name=name)
        for fname, num, typ, label in fields:
            f = m.field.add(name=fname, number=num, label=label)
            if isinstance(typ, str):
                f.type = F.TYPE_MESSAGE
                f.type_name = ".caffe2." + typ
            else:
                f.type = typ
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName("caffe2." + n))
            for n in specs}


def test_text_matches_python_protobuf():
    """Our text equals protobuf's text_format.MessageToString(as_utf8=False), which is what
    str() of a Caffe2 message gave, and protobuf parses ours back to the same message."""
    C = _protobuf_classes()
    from google.protobuf import text_format as pbtf
    p = _sample_net()
    msg = pbtf.Parse(str(p), C["NetDef"]())
    assert pbtf.MessageToString(msg, as_utf8=False) == str(p)
    # and the other way: build with protobuf, print with both
    m = C["NetDef"](name="pb")
    op = m.op.add(type="T", input=["a"], output=["b"])
    for v in (0.1, 1 / 3, 1e-7, 65504.0, 1e30, -0.0):
        a = op.arg.add(name="f")
        a.f = v
    op.arg.add(name="s").s = bytes(range(256))
    op.arg.add(name="i").i = -(2 ** 62)
    # (device_type / device_id set: they always are here, as core.DeviceOption sets them)
    op.device_option.device_type, op.device_option.device_id = 0, 0
    m.device_option.device_type, m.device_option.device_id = 0, 0
    op.device_option.node_name = 'node "1"\n'
    op.device_option.numa_node_id = 2
    op.device_option.extra_info.extend(["b:2", "a:1"])
    m.device_option.extra_info.append("k:v")
    ours = text_format.parse_net(pbtf.MessageToString(m, as_utf8=False))
    assert str(ours) == pbtf.MessageToString(m, as_utf8=False)
    assert ours.op[0].device_option == DeviceOption(0, 0, None, 'node "1"\n', 2, ["b:2", "a:1"])
    assert ours.device_option.extra_info == ["k:v"] and not ours.device_option.HasField("node_name")


# ---------------------------------------------------------------- DeviceOption's fields 4-6
def test_device_option_node_name_numa_node_id_extra_info():
    d = DeviceOption()
    assert (d.node_name, d.numa_node_id, d.extra_info) == ("", None, [])
    assert not d.HasField("node_name") and not d.HasField("numa_node_id") and d.HasField("device_type")
    with pytest.raises(ValueError, match='no singular "extra_info" field'):
        d.HasField("extra_info")
    with pytest.raises(ValueError, match='no "hip_gpu_id" field'):
        d.HasField("hip_gpu_id")
    d.node_name, d.numa_node_id = "n", 0
    d.extra_info.extend(["k:v", "a"])
    assert d.HasField("node_name") and d.HasField("numa_node_id")  # 0 set is set
    e = DeviceOption(0, 0, None, "n", 0, ["k:v", "a"])
    assert d == e and d != DeviceOption(0, 0, None, "m", 0, ["k:v", "a"])
    assert d != DeviceOption(0, 0, None, "n", None, ["k:v", "a"]) and d != DeviceOption(0, 0, None, "n", 0, ["a"])
    c = copy.deepcopy(d)
    c.extra_info.append("more")
    assert d.extra_info == ["k:v", "a"]
    c = DeviceOption()
    c.CopyFrom(d)
    assert c == d and c.extra_info is not d.extra_info
    assert pickle.loads(pickle.dumps(d)) == d
    assert text_format.message_to_text(d) == ('device_type: 0\ndevice_id: 0\nnode_name: "n"\n'
                                              'numa_node_id: 0\nextra_info: "k:v"\nextra_info: "a"\n')
    assert text_format.Parse(text_format.message_to_text(d), DeviceOption()) == d
    assert DeviceOption.FromString(d.SerializeToString()) == d
    d.ClearField("node_name")
    d.ClearField("extra_info")
    d.ClearField("numa_node_id")
    assert d == DeviceOption() and d.extra_info == []


def test_unset_device_option_new_fields_set_the_owner():
    """An op's unset device_option reads as a default one; setting one of the new fields through
    it (extra_info included: append, extend, +=) sets the op's field, as protobuf's."""
    for change in (lambda d: setattr(d, "node_name", "n"), lambda d: setattr(d, "numa_node_id", 1),
                   lambda d: d.extra_info.append("k:v"), lambda d: d.extra_info.extend(["k:v"]),
                   lambda d: d.extra_info.insert(0, "k:v")):
        op = CreateOperator("Foo", [], [])
        d = op.device_option
        assert not op.HasField("device_option") and d.extra_info == [] and d.node_name == ""
        change(d)
        assert op.HasField("device_option"), change
        assert type(op.device_option.extra_info) is list
    op = CreateOperator("Foo", [], [])
    op.device_option.extra_info += ["a", "b"]
    op.device_option.extra_info.append("c")
    assert op.device_option.extra_info == ["a", "b", "c"] and type(op.device_option.extra_info) is list
    # reading, clearing or copying an unset field does not set it
    op = CreateOperator("Foo", [], [])
    list(op.device_option.extra_info)
    op.device_option.ClearField("node_name")
    op.device_option.Clear()
    other = CreateOperator("Bar", [], [])
    other.device_option = op.device_option
    assert not op.HasField("device_option") and not other.HasField("device_option")
    assert copy.deepcopy(op.device_option) == DeviceOption() and type(copy.deepcopy(op.device_option)) is DeviceOption
    plain = DeviceOption()
    plain.CopyFrom(op.device_option)
    plain.extra_info.append("mine")
    copied = copy.copy(op.device_option.extra_info)
    copied.append("mine too")
    assert type(plain.extra_info) is list and not op.HasField("device_option")
    # CopyFrom gives the op its own copy of every field
    src = DeviceOption(0, 0, 3, "n", 1, ["x"])
    op.device_option.CopyFrom(src)
    src.extra_info.append("y")
    assert proto.device_of(op) == DeviceOption(0, 0, 3, "n", 1, ["x"])
    assert pickle.loads(pickle.dumps(op.device_option)) == DeviceOption(0, 0, 3, "n", 1, ["x"])
    # and the op's text and bytes hold them
    back = OperatorDef()
    back.ParseFromString(op.SerializeToString())
    assert back == op and text_format.parse_op(str(op)) == op


def test_make_argument_values_print():
    a = make_argument("arr", np.array([1.5, 2.0], np.float32))
    assert text_format.message_to_text(a) == 'name: "arr"\nfloats: 1.5\nfloats: 2.0\n'
