"""The tensor messages of recurrent.proto (TensorProto and its Segment, TensorProtos, TensorShape(s),
QTensorProto, BlobProto): byte for byte as google.protobuf's caffe2_pb2 (built here from a
FileDescriptorProto with caffe2.proto's field numbers, types, labels and [packed = true]), both
ways, packed and unpacked, text format, round trips, the RepeatedNumber containers and their
speed on 1e6 values; utils' NumpyArrayToCaffe2Tensor / Caffe2TensorToNumpyArray over every dtype
and their errors; serialize_tensor_blob / deserialize_tensor_blob: round trips, the same bytes as
the Save op's minidb records, what Caffe2 writes for each data type, and every error."""

import copy
import math
import pickle
import struct

import numpy as np
import pytest

from recurrent import core, utils, workspace
from recurrent.proto import (BlobProto, DecodeError, DeviceOption, EncodeError, QTensorProto, TensorProto,
                             TensorProtos, TensorShape, TensorShapes, caffe2_pb2, deserialize_tensor_blob,
                             serialize_tensor_blob)

Segment = TensorProto.Segment
DATA_TYPES = {"UNDEFINED": 0, "FLOAT": 1, "INT32": 2, "BYTE": 3, "STRING": 4, "BOOL": 5, "UINT8": 6,
              "INT8": 7, "UINT16": 8, "INT16": 9, "INT64": 10, "FLOAT16": 12, "DOUBLE": 13,
              "ZERO_COLLISION_HASH": 14, "REBATCHING_BUFFER": 15}


# ================================================================ google.protobuf's classes, built here
def _build_pb2(package, packed):
    """caffe2.proto's tensor messages (and DeviceOption) as google.protobuf classes by name; ``packed``:
    the four [packed = true] fields as caffe2.proto declares them, else unpacked (another valid encoding)."""
    descriptor_pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
    from google.protobuf import descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    O, R, Q = F.LABEL_OPTIONAL, F.LABEL_REPEATED, F.LABEL_REQUIRED
    T = {"string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "int32": F.TYPE_INT32, "int64": F.TYPE_INT64,
         "uint32": F.TYPE_UINT32, "bool": F.TYPE_BOOL, "float": F.TYPE_FLOAT, "double": F.TYPE_DOUBLE}
    fdp = descriptor_pb2.FileDescriptorProto(name=package + ".proto", package=package, syntax="proto2")

    def message(parent, name, fields):
        m = parent.add(name=name)
        for number, fname, kind, label, *opts in fields:
            f = m.field.add(name=fname, number=number, label=label)
            if kind in T:
                f.type = T[kind]
            elif kind == "DataType":
                f.type, f.type_name = F.TYPE_ENUM, ".%s.TensorProto.DataType" % package
            else:
                f.type, f.type_name = F.TYPE_MESSAGE, ".%s.%s" % (package, kind)
            if opts and opts[0] == "packed" and packed:
                f.options.packed = True
            if opts and opts[0].startswith("default="):
                f.default_value = opts[0][len("default="):]
        return m

    message(fdp.message_type, "DeviceOption", [(1, "device_type", "int32", O), (2, "device_id", "int32", O),
                                               (3, "random_seed", "uint32", O), (4, "node_name", "string", O),
                                               (5, "numa_node_id", "int32", O), (6, "extra_info", "string", R)])
    tp = message(fdp.message_type, "TensorProto", [
        (1, "dims", "int64", R), (2, "data_type", "DataType", O, "default=FLOAT"),
        (3, "float_data", "float", R, "packed"), (4, "int32_data", "int32", R, "packed"),
        (5, "byte_data", "bytes", O), (6, "string_data", "bytes", R), (7, "name", "string", O),
        (8, "device_detail", "DeviceOption", O), (9, "double_data", "double", R, "packed"),
        (10, "int64_data", "int64", R, "packed"), (11, "segment", "TensorProto.Segment", O),
        (13, "raw_data", "bytes", O), (15, "data_format", "uint32", O)])
    enum = tp.enum_type.add(name="DataType")
    for k, v in DATA_TYPES.items():
        enum.value.add(name=k, number=v)
    message(tp.nested_type, "Segment", [(1, "begin", "int64", Q), (2, "end", "int64", Q)])
    message(fdp.message_type, "QTensorProto", [
        (1, "dims", "int64", R), (2, "precision", "int32", Q), (3, "scale", "double", Q),
        (4, "bias", "double", Q), (5, "is_signed", "bool", Q), (6, "data", "int32", R, "packed"),
        (7, "name", "string", O), (8, "data_type", "DataType", O, "default=INT32"),
        (9, "scales", "double", R), (10, "biases", "double", R), (11, "axis", "int32", O),
        (12, "is_multiparam", "bool", O)])
    message(fdp.message_type, "TensorProtos", [(1, "protos", "TensorProto", R)])
    message(fdp.message_type, "TensorShape", [
        (1, "dims", "int64", R), (2, "data_type", "DataType", O, "default=FLOAT"),
        (3, "unknown_dims", "int32", R), (4, "unknown_shape", "bool", O), (5, "name", "string", O)])
    message(fdp.message_type, "TensorShapes", [(1, "shapes", "TensorShape", R)])
    message(fdp.message_type, "BlobProto", [
        (1, "name", "string", O), (2, "type", "string", O), (3, "tensor", "TensorProto", O),
        (4, "content", "bytes", O), (5, "qtensor", "QTensorProto", O), (6, "content_num_chunks", "int32", O),
        (7, "content_chunk_id", "int32", O)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = getattr(message_factory, "GetMessageClass", None)
    if get is None:  # protobuf < 4.21
        get = message_factory.MessageFactory(pool).GetPrototype
    names = ["DeviceOption", "TensorProto", "QTensorProto", "TensorProtos", "TensorShape", "TensorShapes",
             "BlobProto"]
    return {n: get(pool.FindMessageTypeByName("%s.%s" % (package, n))) for n in names}


@pytest.fixture(scope="module")
def pb2():
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        pytest.skip("google.protobuf is not installed: the byte-for-byte comparison needs it")
    return _build_pb2("c2tp", packed=True)


@pytest.fixture(scope="module")
def pb2_unpacked():
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        pytest.skip("google.protobuf is not installed: the byte-for-byte comparison needs it")
    return _build_pb2("c2tpu", packed=False)


def _pb_text():
    from google.protobuf import text_format as pb_text
    return pb_text


def _to_pb(pb2, msg):
    """The google.protobuf message equal to ``msg``, read from our text format by google's parser."""
    cls = pb2["TensorProto"].Segment if type(msg) is Segment else pb2[type(msg).__name__]
    return _pb_text().Parse(str(msg), cls())


SPECIAL_F32 = np.array([0x7fc00001, 0xffc12345, 0x7f800000, 0xff800000, 0x80000000, 0x00000001, 0x7f7fffff,
                        0x3dcccccd], np.uint32).view(np.float32)


def _rich_tensor():
    """A TensorProto with every field set to awkward values."""
    rng = np.random.RandomState(0)
    t = TensorProto(name="weight \"q\"\n\\", data_type=TensorProto.DOUBLE, data_format=0)
    t.dims.extend([2, 0, 2 ** 40, -3])
    t.float_data = np.concatenate([SPECIAL_F32[2:], rng.standard_normal(5).astype(np.float32)])
    t.int32_data.extend([0, 1, -1, 127, 128, 2 ** 31 - 1, -2 ** 31, 300])
    t.byte_data = bytes(range(256))
    t.string_data = [b"", b"a\x00b", "\u00e9".encode(), bytes([255, 39, 34, 92])]
    t.device_detail = DeviceOption(1, 3, node_name="n\t", extra_info=["k:v", "b c"])
    t.double_data = [0.1, 1e300, -0.0, float("inf"), 1e-5, 123456789012.0, 5e-324]
    t.int64_data = [2 ** 63 - 1, -2 ** 63, 0, -1, 2 ** 35]
    t.segment = Segment(begin=2, end=9)
    t.raw_data = b"\x00\x01raw\xff"
    return t


def _rich_blob():
    q = QTensorProto(precision=8, scale=0.25, bias=-1.5, is_signed=False, data=[1, -2, 300], name="q",
                     scales=[0.5, 2.0], biases=[1e-3], axis=1, is_multiparam=True, dims=[3])
    return BlobProto(name="blob", type="Tensor", tensor=_rich_tensor(), content=b"\x00\xfe", qtensor=q,
                     content_num_chunks=4, content_chunk_id=-2)


def _rich_messages():
    shape = TensorShape(dims=[1, -1, 3], data_type=TensorProto.INT64, unknown_dims=[1], unknown_shape=False,
                        name="s")
    return [_rich_tensor(), _rich_blob(),
            TensorProtos(protos=[_rich_tensor(), TensorProto(), TensorProto(name="x")]),
            TensorShapes(shapes=[shape, TensorShape()]), shape, Segment(begin=-1, end=2 ** 40),
            TensorProto(data_type=TensorProto.FLOAT), TensorProto()]


# ================================================================ byte equality with google.protobuf
@pytest.mark.parametrize("index", range(8))
def test_same_bytes_and_text_as_google(pb2, index):
    msg = _rich_messages()[index]
    ours = msg.SerializeToString()
    theirs = _to_pb(pb2, msg)
    assert ours == theirs.SerializeToString()
    assert msg.ByteSize() == theirs.ByteSize() == len(ours)
    assert str(msg) == _pb_text().MessageToString(theirs)  # text format: the same text
    parsed = type(theirs)()
    assert parsed.ParseFromString(ours) == len(ours)
    assert parsed == theirs
    back = type(msg)()
    assert back.ParseFromString(theirs.SerializeToString()) == len(ours)
    assert back.SerializeToString() == ours and str(back) == str(msg)


def test_google_reads_our_fields(pb2):
    t = _rich_tensor()
    p = pb2["TensorProto"].FromString(t.SerializeToString())
    assert list(p.dims) == [2, 0, 2 ** 40, -3]
    assert p.data_type == 13 and p.HasField("data_format") and p.data_format == 0
    assert np.array(p.float_data, np.float32).view(np.uint32).tolist() == \
        np.asarray(t.float_data).view(np.uint32).tolist()
    assert list(p.int32_data) == [0, 1, -1, 127, 128, 2 ** 31 - 1, -2 ** 31, 300]
    assert p.byte_data == bytes(range(256)) and p.raw_data == b"\x00\x01raw\xff"
    assert list(p.string_data) == [b"", b"a\x00b", "\u00e9".encode(), bytes([255, 39, 34, 92])]
    assert p.name == "weight \"q\"\n\\"
    assert (p.device_detail.device_type, p.device_detail.device_id) == (1, 3)
    assert p.device_detail.node_name == "n\t" and list(p.device_detail.extra_info) == ["k:v", "b c"]
    assert not p.device_detail.HasField("numa_node_id")
    assert list(p.double_data)[:3] == [0.1, 1e300, -0.0] and math.copysign(1, p.double_data[2]) == -1
    assert list(p.int64_data) == [2 ** 63 - 1, -2 ** 63, 0, -1, 2 ** 35]
    assert (p.segment.begin, p.segment.end) == (2, 9)


@pytest.mark.parametrize("which", ["packed", "unpacked"])
def test_we_read_google_bytes_packed_and_unpacked(pb2, pb2_unpacked, which):
    classes = pb2 if which == "packed" else pb2_unpacked
    msg = _rich_blob()
    theirs = _pb_text().Parse(str(msg), classes["BlobProto"]())
    data = theirs.SerializeToString()
    if which == "unpacked":
        assert data != msg.SerializeToString()  # another encoding of the same content
    back = BlobProto.FromString(data)
    assert back == msg
    assert back.SerializeToString() == msg.SerializeToString()  # we write caffe2.proto's packed form
    t = back.tensor
    assert t.int64_data.tolist() == [2 ** 63 - 1, -2 ** 63, 0, -1, 2 ** 35]
    assert t.double_data[0] == 0.1
    assert t.float_data[-6:] == [float(np.float32(v)) for v in theirs.tensor.float_data[-6:]]
    assert back.qtensor.data.tolist() == [1, -2, 300] and back.content == b"\x00\xfe"


def test_packed_fields_exact_bytes():
    # [packed = true] fields: one length-delimited run; dims and string_data: one field per value
    assert TensorProto(float_data=[1.0, -2.0]).SerializeToString() == b"\x1a\x08" + struct.pack("<2f", 1, -2)
    assert TensorProto(int32_data=[1, -1]).SerializeToString() == b"\x22\x0b\x01" + b"\xff" * 9 + b"\x01"
    assert TensorProto(double_data=[0.5]).SerializeToString() == b"\x4a\x08" + struct.pack("<d", 0.5)
    assert TensorProto(int64_data=[300]).SerializeToString() == b"\x52\x02\xac\x02"
    assert TensorProto(dims=[2, 3]).SerializeToString() == b"\x08\x02\x08\x03"
    assert TensorProto(string_data=[b"a", b""]).SerializeToString() == b"\x32\x01a\x32\x00"
    assert QTensorProto(data=[5], precision=1, scale=1, bias=0, is_signed=True).SerializeToString() == \
        b"\x10\x01\x19" + struct.pack("<d", 1) + b"\x21" + struct.pack("<d", 0) + b"\x28\x01\x32\x01\x05"
    assert TensorProto().SerializeToString() == b""
    assert TensorProto(data_type=TensorProto.FLOAT).SerializeToString() == b"\x10\x01"  # set: written


def test_decoding_accepts_both_forms_and_mixes():
    # unpacked floats, a packed run, then more unpacked: all appended in order
    data = (b"\x1d" + struct.pack("<f", 1.5) + b"\x1a\x08" + struct.pack("<2f", 2, 3)
            + b"\x1d" + struct.pack("<f", 4))
    data += b"\x20\x7f\x22\x03\x01\x02\x03" + b"\x08\x05\x0a\x02\x06\x07"  # int32_data and dims, both forms
    t = TensorProto.FromString(data)
    assert t.float_data == [1.5, 2.0, 3.0, 4.0]
    assert t.int32_data == [127, 1, 2, 3] and t.dims == [5, 6, 7]
    # a value beyond int32 in int32_data reads as its low 32 bits, as protobuf
    assert TensorProto.FromString(b"\x22\x05\x80\x80\x80\x80\x08").int32_data == [-2 ** 31]
    assert TensorProto.FromString(b"\x20\x80\x80\x80\x80\x08").int32_data == [-2 ** 31]


@pytest.mark.parametrize("data, match", [
    (b"\x1a\x05" + b"\0" * 5, "truncated float of packed field 'float_data' at byte 6"),
    (b"\x4a\x04" + b"\0" * 4, "truncated double of packed field 'double_data'"),
    (b"\x22\x02\x01\x80", "truncated varint of packed field 'int32_data' at byte 3"),
    (b"\x52\x0b" + b"\x80" * 10 + b"\x01",
     "varint of packed field 'int64_data' longer than 10 bytes at byte 2"),
    (b"\x1a\x09" + b"\0" * 4, "length 9 of packed field 'float_data' runs past the end"),
    (b"\x19" + b"\0" * 8, r"field 'float_data' \(number 3\) has wire type fixed64, expected fixed32"),
    (b"\x4d" + b"\0" * 4, r"field 'double_data' \(number 9\) has wire type fixed32, expected fixed64"),
    (b"\x28\x01", r"field 'byte_data' \(number 5\) has wire type varint"),
    (b"\x5a\x02\x08\x80",
     r"truncated varint of field 'begin' at byte 3 in segment \(a caffe2.TensorProto.Segment\)"),
])
def test_malformed_tensor_bytes(data, match):
    with pytest.raises(DecodeError, match=match) as ei:
        TensorProto.FromString(data)
    assert isinstance(ei.value, ValueError) and "caffe2.TensorProto" in str(ei.value)
    t = TensorProto(float_data=[1.0])
    with pytest.raises(DecodeError):
        t.ParseFromString(data)
    assert t.float_data == [1.0]  # left as it was


def test_required_segment_fields(pb2):
    with pytest.raises(EncodeError, match=r"caffe2.TensorProto: required field segment.end is not set"):
        TensorProto(segment=Segment(begin=3)).SerializeToString()
    with pytest.raises(EncodeError,
                       match=r"caffe2.BlobProto: required field tensor.segment.begin is not set"):
        BlobProto(tensor=TensorProto(segment=Segment(end=3))).SerializeToString()
    with pytest.raises(EncodeError, match=r"required field protos\[1\].segment.begin"):
        TensorProtos(protos=[TensorProto(), TensorProto(segment=Segment())]).SerializeToString()
    with pytest.raises(EncodeError, match="qtensor.precision"):
        BlobProto(qtensor=QTensorProto()).SerializeToString()
    partial = TensorProto(segment=Segment(begin=3)).SerializePartialToString()
    assert partial == b"\x5a\x02\x08\x03"
    assert partial == pb2["TensorProto"].FromString(partial).SerializePartialToString()
    back = TensorProto.FromString(partial)  # parsing does not check them, as google.protobuf's Python
    assert back.segment.HasField("begin") and not back.segment.HasField("end") and back.segment.end == 0
    assert Segment(begin=0, end=0).SerializeToString() == b"\x08\x00\x10\x00"  # zeros set: written


def test_merge_and_copy():
    a = TensorProto(dims=[1], float_data=[1.0], name="a", segment=Segment(begin=0, end=1))
    b = TensorProto(dims=[2], float_data=[2.0, 3.0], segment=Segment(end=7))
    a.MergeFromString(b.SerializePartialToString())
    assert a.dims == [1, 2] and a.float_data == [1.0, 2.0, 3.0] and a.name == "a"
    assert (a.segment.begin, a.segment.end) == (0, 7)  # a nested message merged field by field
    c = TensorProto()
    c.CopyFrom(a)
    c.float_data.append(9)
    c.segment.begin = 5
    assert a.float_data == [1.0, 2.0, 3.0] and a.segment.begin == 0  # a deep copy
    assert pickle.loads(pickle.dumps(a)) == a and copy.deepcopy(a) == a
    a.ClearField("float_data")
    a.ClearField("segment")
    assert a.float_data == [] and a.segment is None
    a.Clear()
    assert a == TensorProto() and a.SerializeToString() == b""


def test_field_defaults_and_has_field():
    t = TensorProto()
    assert t.data_type == TensorProto.FLOAT and not t.HasField("data_type")
    assert t.byte_data == b"" and not t.HasField("byte_data") and t.data_format == 0
    assert t.segment is None and not t.HasField("segment") and t.name == ""
    t.byte_data = b""
    assert t.HasField("byte_data") and t.SerializeToString() == b"\x2a\x00"  # bytes: "" is set
    t.data_type = TensorProto.UNDEFINED
    assert t.HasField("data_type") and t.SerializeToString() == b"\x10\x00\x2a\x00"
    del t.data_type
    assert not t.HasField("data_type")
    assert QTensorProto().data_type == TensorProto.INT32 and TensorShape().unknown_shape is False
    with pytest.raises(ValueError, match='no singular "dims" field'):
        t.HasField("dims")
    with pytest.raises(ValueError, match='TensorProto has no "nope" field'):
        t.HasField("nope")
    with pytest.raises(ValueError, match='TensorProto has no "floats" field'):
        TensorProto(floats=[1])


def test_enums():
    for name, value in DATA_TYPES.items():
        assert getattr(TensorProto, name) == value == getattr(TensorProto.DataType, name)
        assert getattr(caffe2_pb2.TensorProto, name) == value
        assert TensorProto.DataType.Name(value) == name and TensorProto.DataType.Value(name) == value
    assert caffe2_pb2.TensorProto.DataType.FLOAT == 1 and caffe2_pb2.BlobProto is BlobProto
    assert TensorProto.DataType.keys() == list(DATA_TYPES)
    assert 12 in TensorProto.DataType and 11 not in TensorProto.DataType
    assert (TensorProto.FMT_PROTOBUF, TensorProto.FMT_BFLOAT16) == (0, 1)
    assert TensorProto.SerializationFormat.Name(1) == "FMT_BFLOAT16"
    for cls in (TensorProtos, TensorShape, TensorShapes, QTensorProto):
        assert getattr(caffe2_pb2, cls.__name__) is cls
    with pytest.raises(ValueError, match="no name defined for value 11"):
        TensorProto.DataType.Name(11)
    with pytest.raises(ValueError, match="no value defined for name 'HALF'"):
        TensorProto.DataType.Value("HALF")
    with pytest.raises(AttributeError, match="HALF"):
        TensorProto.DataType.HALF
    t = TensorProto()
    for bad in (11, 16, -1, True, 1.0, "FLOAT"):
        with pytest.raises(ValueError,
                           match=r"TensorProto.data_type: .* is not a caffe2.TensorProto.DataType value"):
            t.data_type = bad
    assert not t.HasField("data_type")
    # a number outside the enum read from the wire is kept, and printed as the number
    odd = TensorProto.FromString(b"\x10\x0b")
    assert odd.data_type == 11 and str(odd) == "data_type: 11\n" and odd.SerializeToString() == b"\x10\x0b"


def test_text_format_of_special_values():
    t = TensorProto(float_data=[0.1, float("nan"), float("-inf"), 3e38 * 10], double_data=[0.1, 1e-5, 2.0],
                    string_data=[b"\x00'\"\\\n\xe9"], data_type=TensorProto.STRING,
                    device_detail=DeviceOption())
    assert str(t) == ("data_type: STRING\nfloat_data: 0.1\nfloat_data: nan\nfloat_data: -inf\n"
                      "float_data: inf\n"
                      "string_data: \"\\000\\'\\\"\\\\\\n\\351\"\ndevice_detail {\n  device_type: 0\n"
                      "  device_id: 0\n}\ndouble_data: 0.1\ndouble_data: 1e-05\ndouble_data: 2.0\n")
    assert repr(Segment(begin=1, end=2)) == "begin: 1\nend: 2\n"
    # a string field with non-ASCII characters prints as recurrent.text_format prints the net messages'
    # (octal escapes, as the protobuf of Caffe2's time)
    from recurrent import text_format
    from recurrent.proto import NetDef
    text = str(TensorProto(name="\u00e9\t"))
    assert text == text_format.message_to_text(NetDef("\u00e9\t")) == 'name: "\\303\\251\\t"\n'

    assert str(TensorShape(unknown_shape=False)) == "unknown_shape: false\n"


# ================================================================ the repeated numeric containers
def test_repeated_number_container():
    t = TensorProto()
    f = t.float_data
    f.append(0.1)
    f.extend(np.array([1, 2], np.int64))
    f.extend(x / 2 for x in range(2))
    f.extend((np.float64(3.0),))
    assert f[0] == float(np.float32(0.1)) == 0.10000000149011612  # float32, as google.protobuf
    assert f == [np.float32(0.1), 1, 2, 0, 0.5, 3] and len(f) == 6 and f[-1] == 3.0
    assert f[1:3] == [1.0, 2.0] and isinstance(f[1:3], list) and list(f) == f.tolist()
    f[0] = 7
    f[1:3] = [8, 9, 10]
    del f[-1]
    assert f.tolist() == [7, 8, 9, 10, 0, 0.5]
    f.insert(1, -1)
    assert f.pop() == 0.5 and f.pop(0) == 7.0
    f.remove(10)
    f.sort()
    assert f == [-1, 0, 8, 9] and 8 in f and 11 not in f and f.index(8) == 2 and f.count(0) == 1
    f.reverse()
    assert f == [9, 8, 0, -1]
    arr = np.asarray(f)
    arr[0] = 100  # a copy
    assert arr.dtype == np.float32 and f[0] == 9
    f.append(1e39)  # beyond float32: infinity, as google.protobuf stores it
    assert f[-1] == float("inf") and t.float_data is f
    t.float_data = np.arange(3, dtype=np.float64)  # assignment replaces the values, converted
    assert t.float_data == [0, 1, 2] and t.float_data is not f
    t.int64_data = [2 ** 63 - 1]
    t.int64_data.extend(np.array([-2 ** 63], np.int64))
    assert t.int64_data == [2 ** 63 - 1, -2 ** 63]
    assert t.dims != [1] and t.dims == [] and not t.dims
    with pytest.raises(IndexError):
        f[10]
    with pytest.raises(TypeError):
        hash(f)


@pytest.mark.parametrize("field, bad, exc, match", [
    ("int32_data", [1, 2 ** 31], ValueError,
     r"field 'int32_data' of caffe2.TensorProto: 2147483648 is out of the int32 range"),
    ("int32_data", np.array([-2 ** 31 - 1]), ValueError, "-2147483649 is out of the int32 range"),
    ("int64_data", [2 ** 63], ValueError, "9223372036854775808 is out of the int64 range"),
    ("int64_data", np.array([2 ** 63], np.uint64), ValueError, "out of the int64 range"),
    ("int32_data", [1, 1.5], TypeError, "holds integers, got float64"),
    ("int32_data", [True], TypeError, "got bool"),
    ("int32_data", [1, True], TypeError, "got a bool"),
    ("int32_data", np.array([1.0]), TypeError, "holds integers, got float64"),
    ("dims", [[1, 2]], TypeError, "flat sequence"),
    ("float_data", ["1"], TypeError, "holds numbers, got <U1"),
    ("float_data", [1, None], TypeError, "holds numbers, got a NoneType"),
    ("float_data", np.zeros((2, 2)), TypeError, r"flat sequence of numbers, got an array of shape \(2, 2\)"),
    ("float_data", 1.0, TypeError, "takes a sequence of numbers, got float"),
    ("double_data", "12", TypeError, "takes a sequence of numbers, got str"),
    ("double_data", np.array([1j]), TypeError, "holds numbers, got complex128"),
])
def test_repeated_number_refusals(field, bad, exc, match):
    t = TensorProto(**{field: [1]})
    with pytest.raises(exc, match=match):
        getattr(t, field).extend(bad)
    with pytest.raises(exc, match=match):
        setattr(t, field, bad)
    assert getattr(t, field) == [1]  # left as it was


@pytest.mark.parametrize("field, bad, exc, match", [
    ("int32_data", 2 ** 31, ValueError, "2147483648 is out of the int32 range"),
    ("int64_data", -2 ** 63 - 1, ValueError, "out of the int64 range"),
    ("int32_data", 1.0, TypeError, "holds integers, got a float"),
    ("int32_data", np.float32(2), TypeError, "holds integers, got a float32"),
    ("int64_data", True, TypeError, "holds integers, got a bool"),
    ("dims", "3", TypeError, "holds integers, got a str"),
    ("float_data", "1.0", TypeError, "holds numbers, got a str"),
    ("double_data", None, TypeError, "holds numbers, got a NoneType"),
])
def test_repeated_number_append_refusals(field, bad, exc, match):
    t = TensorProto(**{field: [1]})
    for add in (getattr(t, field).append, lambda v: getattr(t, field).insert(0, v),
                lambda v: getattr(t, field).__setitem__(0, v)):
        with pytest.raises(exc, match=match):
            add(bad)
    assert getattr(t, field) == [1]


def test_a_million_floats_and_ints_take_no_per_value_python_path(monkeypatch):
    """Large repeated number fields encode and decode as whole arrays: the per-value codec
    (``_varint``, ``_read_varint``, ``_decode_scalar``, ``RepeatedNumber._scalar``) runs a bounded
    number of times, whatever the length. (Counted, not timed: speed belongs to benchmarks.)"""
    from recurrent import _wire
    calls = {}

    def counting(name, fn):
        def wrapped(*a, **k):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **k)
        return wrapped

    for name in ("_varint", "_read_varint", "_decode_scalar"):
        monkeypatch.setattr(_wire, name, counting(name, getattr(_wire, name)))
    monkeypatch.setattr(_wire.RepeatedNumber, "_scalar", counting("_scalar", _wire.RepeatedNumber._scalar))
    rng = np.random.RandomState(3)
    f = rng.standard_normal(10 ** 6).astype(np.float32)
    data = TensorProto(dims=[10 ** 6], float_data=f).SerializeToString()
    back = TensorProto.FromString(data)
    assert np.asarray(back.float_data).view(np.uint32).tolist() == f.view(np.uint32).tolist()
    assert len(data) == (1 + 3) + (1 + 4 + 4 * 10 ** 6)  # dims, then one packed run
    i = rng.randint(-2 ** 31, 2 ** 31, size=10 ** 6).astype(np.int32)
    data = TensorProto(int32_data=i, int64_data=i).SerializeToString()
    back = TensorProto.FromString(data)
    assert np.array_equal(np.asarray(back.int32_data), i) and np.array_equal(np.asarray(back.int64_data), i)
    extended = TensorProto()
    extended.float_data.extend(f.tolist())  # what Caffe2's NumpyArrayToCaffe2Tensor users do
    again = TensorProto.FromString(extended.SerializeToString())
    assert np.asarray(again.float_data).view(np.uint32).tolist() == f.view(np.uint32).tolist()
    assert sum(calls.values()) < 100, calls
    # the counters see the per-value path when it is taken
    calls.clear()
    unpacked = b"".join(b"\x20" + bytes([k]) for k in range(100))  # int32_data, one value per tag
    assert TensorProto.FromString(unpacked).int32_data == list(range(100))
    assert calls.get("_decode_scalar", 0) == 100, calls


def test_vectorized_varints_match_the_scalar_codec(pb2):
    rng = np.random.RandomState(4)
    edges = [0, 1, 127, 128, 2 ** 14 - 1, 2 ** 14, 2 ** 31 - 1, -1, -2 ** 31, 2 ** 35, 2 ** 63 - 1, -2 ** 63]
    values = edges + [int(v) for v in rng.randint(-2 ** 63, 2 ** 63 - 1, size=200, dtype=np.int64)]
    ours = TensorProto(int64_data=values).SerializeToString()
    theirs = pb2["TensorProto"]()
    theirs.int64_data.extend(values)
    assert ours == theirs.SerializeToString()
    assert TensorProto.FromString(ours).int64_data == values


# ================================================================ utils: NumPy <-> TensorProto
CASES = [  # dtype, data_type, field, values as the field holds them (for [a, b, c])
    (np.float32, "FLOAT", "float_data", None),
    (np.float64, "DOUBLE", "double_data", None),
    (np.int32, "INT32", "int32_data", None),
    (np.int64, "INT64", "int64_data", None),
    (np.int16, "INT16", "int32_data", None),
    (np.uint16, "UINT16", "int32_data", None),
    (np.int8, "INT8", "int32_data", None),
    (np.uint8, "UINT8", "int32_data", None),
    (np.bool_, "BOOL", "int32_data", None),
    (np.float16, "FLOAT16", "int32_data", "bits"),
]


def _sample(dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    if np.dtype(dtype).kind == "f":
        return (np.linspace(-2, 3, n) * 1.5).astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    vals = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 7][:n] + [5] * max(0, n - 6))
    return vals.astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype, type_name, field, how", CASES)
@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (4, 0, 2)])
def test_numpy_to_tensor_and_back(pb2, dtype, type_name, field, how, shape):
    a = _sample(dtype, shape)
    t = utils.NumpyArrayToCaffe2Tensor(a, name="x")
    assert t.data_type == DATA_TYPES[type_name] and t.name == "x" and t.dims == list(shape)
    want = a.reshape(-1).view(np.uint16).tolist() if how == "bits" else a.reshape(-1).tolist()
    assert getattr(t, field) == want
    for other in ("float_data", "int32_data", "double_data", "int64_data"):
        if other != field:
            assert not getattr(t, other)
    back = utils.Caffe2TensorToNumpyArray(t)
    assert back.dtype == a.dtype and back.shape == a.shape
    assert back.tobytes() == a.tobytes()
    # what google.protobuf reads from the bytes
    p = pb2["TensorProto"].FromString(t.SerializeToString())
    assert p.data_type == DATA_TYPES[type_name] and list(getattr(p, field)) == want


def test_numpy_to_tensor_layouts_and_names():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (a.T, np.asfortranarray(a), a[:, ::2], a.astype(">f4")):
        t = utils.NumpyArrayToCaffe2Tensor(view)
        assert t.float_data == np.ascontiguousarray(view).reshape(-1).tolist() and t.dims == list(view.shape)
        assert t.name == "" and not t.HasField("name")
        assert np.array_equal(utils.Caffe2TensorToNumpyArray(t), view)
    t = utils.NumpyArrayToCaffe2Tensor(np.float64(2.5))
    assert t.dims == [] and t.double_data == [2.5] and utils.Caffe2TensorToNumpyArray(t).shape == ()
    big = np.array([2 ** 40, -2 ** 62], np.int64)  # Caffe2 mapped int64 to INT32 and lost these
    assert np.array_equal(utils.Caffe2TensorToNumpyArray(utils.NumpyArrayToCaffe2Tensor(big)), big)


@pytest.mark.parametrize("a", [np.array([[b"ab", b""], [b"x\x00y", b"\xff"]], object),
                               np.array(["\u00e9t\u00e9", "b"]), np.array([b"ab", b"c"]),
                               np.array([b"a", "\u00e9"], object)])
def test_string_tensors(pb2, a):
    t = utils.NumpyArrayToCaffe2Tensor(a, "s")
    want = [v.encode() if isinstance(v, str) else bytes(v) for v in a.reshape(-1).tolist()]
    assert t.data_type == TensorProto.STRING and t.string_data == want and t.dims == list(a.shape)
    back = utils.Caffe2TensorToNumpyArray(t)
    assert back.dtype == object and back.shape == a.shape and back.reshape(-1).tolist() == want
    assert list(pb2["TensorProto"].FromString(t.SerializeToString()).string_data) == want


def test_numpy_to_tensor_errors():
    for bad in (np.zeros(2, np.complex64), np.zeros(2, np.uint32), np.zeros(2, np.uint64),
                np.zeros(2, "datetime64[s]"), np.zeros(2, "V4")):
        with pytest.raises(TypeError,
                           match=r"NumpyArrayToCaffe2Tensor: tensor 'n': dtype .* has no Caffe2 data type"):
            utils.NumpyArrayToCaffe2Tensor(bad, "n")
    with pytest.raises(TypeError, match="expected a NumPy array, got list"):
        utils.NumpyArrayToCaffe2Tensor([1.0, 2.0])
    with pytest.raises(TypeError,
                       match=r"tensor 'o': a string tensor holds only bytes and str, element 1 is a int"):
        utils.NumpyArrayToCaffe2Tensor(np.array(["a", 1], object), "o")
    with pytest.raises(TypeError, match="the tensor name must be a str, got bytes"):
        utils.NumpyArrayToCaffe2Tensor(np.zeros(1, np.float32), b"n")


BF16_RAW = (np.array([1.5, -2, 3], np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()  # bfloat16


def test_tensor_to_numpy_reads_byte_data_and_raw_data(pb2):
    cases = [  # data_type, the fields set, the array wanted
        ("UINT8", {"byte_data": bytes([0, 255, 7])}, np.array([0, 255, 7], np.uint8)),
        ("INT8", {"byte_data": bytes([0, 255, 7])}, np.array([0, -1, 7], np.int8)),
        ("INT16", {"byte_data": np.array([-2, 300, 5], "<i2").tobytes()}, np.array([-2, 300, 5], np.int16)),
        ("UINT16", {"byte_data": np.array([65535, 0, 1], "<u2").tobytes()},
         np.array([65535, 0, 1], np.uint16)),
        ("BOOL", {"byte_data": bytes([0, 1, 2])}, np.array([False, True, True])),
        ("BOOL", {"int32_data": [0, 1, -5]}, np.array([False, True, True])),
        ("FLOAT16", {"byte_data": np.array([1.5, -2, 65504], "<f2").tobytes()},
         np.array([1.5, -2, 65504], np.float16)),
        ("BYTE", {"byte_data": b"abc"}, np.array([97, 98, 99], np.uint8)),
        ("FLOAT", {"raw_data": np.array([1.5, -2, 3], "<f4").tobytes()}, np.array([1.5, -2, 3], np.float32)),
        ("INT32", {"raw_data": np.array([1, -2, 3], "<i4").tobytes()}, np.array([1, -2, 3], np.int32)),
        ("INT64", {"raw_data": np.array([1, -2, 2 ** 40], "<i8").tobytes()},
         np.array([1, -2, 2 ** 40], np.int64)),
        ("DOUBLE", {"raw_data": np.array([0.1, -2, 3], "<f8").tobytes()}, np.array([0.1, -2, 3])),
        ("FLOAT", {"raw_data": BF16_RAW, "data_format": 1}, np.array([1.5, -2, 3], np.float32)),
    ]
    for type_name, fields, want in cases:
        p = pb2["TensorProto"](dims=[3], data_type=DATA_TYPES[type_name], **fields)
        t = TensorProto.FromString(p.SerializeToString())
        got = utils.Caffe2TensorToNumpyArray(t)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), (type_name, fields)


def _tensor(**fields):
    return TensorProto(name="t", **fields)


@pytest.mark.parametrize("t, exc, match", [
    (_tensor(dims=[2, -3], float_data=[1.0]), ValueError, r"tensor 't': negative dim -3 in dims \[2, -3\]"),
    (_tensor(dims=[2, 2], float_data=[1, 2, 3]), ValueError,
     r"tensor 't': float_data holds 3 values, its dims \[2, 2\] need 4"),
    (_tensor(float_data=[1, 2]), ValueError, r"float_data holds 2 values, its dims \[\] need 1"),
    (_tensor(dims=[2], data_type=TensorProto.INT64, int32_data=[1, 2]), ValueError,
     "int64_data holds 0 values"),
    (_tensor(dims=[2], data_type=TensorProto.STRING, string_data=[b"a"]), ValueError,
     "string_data holds 1 values"),
    (_tensor(dims=[2], data_type=TensorProto.INT16, byte_data=b"abc"), ValueError,
     "byte_data of 3 bytes is not a whole number of 2-byte values"),
    (_tensor(dims=[1], float_data=[1.0], raw_data=b"\0" * 4), ValueError,
     "both float_data and raw_data hold data"),
    (_tensor(dims=[1], data_type=TensorProto.UINT8, int32_data=[1], byte_data=b"\1"), ValueError,
     "both int32_data and byte_data"),
    (_tensor(dims=[1], data_type=TensorProto.UINT8, int32_data=[256]), ValueError,
     r"int32_data value 256 at element 0 is out of the range of UINT8 \(6\) \(\[0, 255\]\)"),
    (_tensor(dims=[2], data_type=TensorProto.INT8, int32_data=[0, -129]), ValueError,
     "value -129 at element 1"),
    (_tensor(dims=[1], data_type=TensorProto.FLOAT16, int32_data=[65536]), ValueError,
     "out of the range of FLOAT16"),
    (_tensor(dims=[4], float_data=[1, 2], segment=Segment(begin=0, end=2)), ValueError,
     r"segment \[0, 2\) does not cover the whole tensor \(\[0, 4\) for dims \[4\]\)"),
    (_tensor(dims=[1], float_data=[1], data_format=2), ValueError, "data_format 2 is not supported"),
    (_tensor(dims=[1], int32_data=[1], data_type=TensorProto.INT32, data_format=1), ValueError,
     r"data_format 1 is not supported for data type INT32 \(2\)"),
    (_tensor(dims=[1], data_type=TensorProto.UNDEFINED), TypeError,
     r"data type UNDEFINED \(0\) has no NumPy array"),
    (_tensor(dims=[1], data_type=TensorProto.ZERO_COLLISION_HASH), TypeError, "ZERO_COLLISION_HASH"),
    (_tensor(dims=[1], data_type=TensorProto.REBATCHING_BUFFER), TypeError, "REBATCHING_BUFFER"),
    (TensorProto.FromString(b"\x08\x01\x10\x0b\x3a\x01t"), TypeError,
     r"data type 11 \(not a TensorProto.DataType\)"),
    ("not a tensor", TypeError, "expected a TensorProto, got str"),
])
def test_tensor_to_numpy_errors(t, exc, match):
    with pytest.raises(exc, match=match) as ei:
        utils.Caffe2TensorToNumpyArray(t)
    assert "Caffe2TensorToNumpyArray: " in str(ei.value)
    if isinstance(t, TensorProto):
        assert "tensor 't'" in str(ei.value)


# ================================================================ serialize / deserialize helpers
from test_checkpoint import records as _records  # noqa: E402  (the minidb records, parsed independently)


SHAPES = [(), (0,), (0, 3), (1,), (7,), (2, 3), (2, 3, 4)]


def _arrays(shape, seed=0):
    n = int(np.prod(shape))
    rng = np.random.RandomState(seed)
    f = rng.standard_normal(n).astype(np.float32)
    f[:min(n, len(SPECIAL_F32))] = SPECIAL_F32[:n]
    i = rng.randint(-2 ** 31, 2 ** 31, size=n, dtype=np.int64).astype(np.int32)
    i[:min(n, 3)] = [-2 ** 31, 2 ** 31 - 1, -1][:n]
    return f.reshape(shape), i.reshape(shape)


def _bits(a):
    return a.dtype, a.shape, a.tobytes()


@pytest.mark.parametrize("shape", SHAPES)
def test_serialize_round_trip_and_save_records(tmp_path, shape):
    f, i = _arrays(shape)
    for name, a in (("f", f), ("i", i)):
        data = serialize_tensor_blob(name, a)
        back = deserialize_tensor_blob(data)
        assert _bits(back) == _bits(a)
        workspace.FeedBlob(name, a)
    workspace.RunOperatorOnce(core.CreateOperator("Save", ["f", "i"], [], db=str(tmp_path / "db"),
                                                  db_type="minidb", absolute_path=1))
    recs = _records(tmp_path / "db")
    assert [k for k, _ in recs] == ["f#%0", "i#%0"]
    assert recs[0][1] == serialize_tensor_blob("f", f)
    assert recs[1][1] == serialize_tensor_blob("i", i)
    # and what the Load op reads from our bytes
    workspace.ResetWorkspace()
    with open(tmp_path / "ours", "wb") as out:
        for key, a in (("f#%0", f), ("i#%0", i)):
            value = serialize_tensor_blob(key[0], a)
            out.write(struct.pack("=II", len(key), len(value)) + key.encode() + value)
    workspace.RunOperatorOnce(core.CreateOperator("Load", [], ["f", "i"], db=str(tmp_path / "ours"),
                                                  db_type="minidb", absolute_path=1))
    assert _bits(workspace.FetchBlob("f")) == _bits(f) and _bits(workspace.FetchBlob("i")) == _bits(i)


def test_serialized_layout(pb2):
    data = serialize_tensor_blob("w", np.array([[1.5, -2.0]], np.float32))
    body = (b"\x08\x01\x08\x02\x10\x01\x1a\x08" + struct.pack("<2f", 1.5, -2) + b"\x3a\x01w"
            + b"\x42\x02\x08\x00" + b"\x5a\x04\x08\x00\x10\x02")
    assert data == b"\x0a\x01w\x12\x06Tensor\x1a" + bytes([len(body)]) + body
    p = pb2["BlobProto"].FromString(data)
    assert p.SerializeToString() == data and p.tensor.device_detail.device_type == 0
    assert not p.tensor.device_detail.HasField("device_id") and p.tensor.HasField("segment")
    assert serialize_tensor_blob("e", np.zeros((0, 2), np.int32)) == \
        b"\x0a\x01e\x12\x06Tensor\x1a\x13" \
        b"\x08\x00\x08\x02\x10\x02\x3a\x01e\x42\x02\x08\x00\x5a\x04\x08\x00\x10\x00"
    back = BlobProto.FromString(data)
    assert back.SerializeToString() == data  # device_detail without device_id reserializes as it was


def test_serialize_other_dtypes_as_caffe2_writes_them():
    for dtype, type_name, field, how in CASES:
        a = _sample(dtype)
        blob = BlobProto.FromString(serialize_tensor_blob("x", a))
        assert blob.tensor.data_type == DATA_TYPES[type_name]
        want = a.reshape(-1).view(np.uint16) if how else a.reshape(-1)
        assert getattr(blob.tensor, field) == want.tolist()
    blob = BlobProto.FromString(serialize_tensor_blob("s", np.array([b"a", b"bc"])))
    assert blob.tensor.string_data == [b"a", b"bc"] and blob.tensor.data_type == TensorProto.STRING


def _blob(pb2, name="b", type_="Tensor", **tensor):
    b = pb2["BlobProto"](name=name, type=type_)
    if tensor:
        b.tensor.CopyFrom(pb2["TensorProto"](**tensor))
    return b.SerializeToString()


def test_deserialize_converts_other_types(pb2):
    cases = [
        (dict(dims=[3], data_type=13, double_data=[0.1, -1e30, float("inf")]),
         np.array([0.1, -1e30, np.inf], np.float32)),
        (dict(dims=[2], data_type=12, int32_data=[0x3E00, 0xC000]), np.array([1.5, -2.0], np.float32)),
        (dict(dims=[2], data_type=12, byte_data=np.array([1.5, -2], "<f2").tobytes()),
         np.array([1.5, -2.0], np.float32)),
        (dict(dims=[2], data_type=10, int64_data=[-2 ** 31, 2 ** 31 - 1]),
         np.array([-2 ** 31, 2 ** 31 - 1], np.int32)),
        (dict(dims=[2], data_type=10, raw_data=np.array([-5, 6], "<i8").tobytes()),
         np.array([-5, 6], np.int32)),
        (dict(dims=[3], data_type=5, int32_data=[1, 0, 1]), np.array([1, 0, 1], np.int32)),
        (dict(dims=[3], data_type=5, byte_data=b"\x00\x01\x01"), np.array([0, 1, 1], np.int32)),
        (dict(dims=[2], data_type=6, int32_data=[255, 0]), np.array([255, 0], np.int32)),
        (dict(dims=[2], data_type=7, byte_data=b"\xff\x05"), np.array([-1, 5], np.int32)),
        (dict(dims=[2], data_type=8, int32_data=[65535, 1]), np.array([65535, 1], np.int32)),
        (dict(dims=[2], data_type=9, int32_data=[-32768, 1]), np.array([-32768, 1], np.int32)),
        (dict(dims=[2], data_type=3, byte_data=b"ab"), np.array([97, 98], np.int32)),
        (dict(dims=[1, 2], data_type=1, raw_data=np.array([1, 2], "<f4").tobytes()),
         np.array([[1, 2]], np.float32)),
        (dict(dims=[0, 4], data_type=0), np.zeros((0,), np.float32)),  # Caffe2's empty legacy tensor
        (dict(dims=[2], float_data=[1, 2]), np.array([1, 2], np.float32)),  # data_type unset: FLOAT
    ]
    for tensor, want in cases:
        got = deserialize_tensor_blob(_blob(pb2, **tensor))
        assert _bits(got) == _bits(want), tensor


def test_deserialize_reads_unpacked_and_chunk_free_records(pb2_unpacked):
    b = pb2_unpacked["BlobProto"](name="u", type="Tensor")
    b.tensor.dims.extend([3])
    b.tensor.data_type = 2
    b.tensor.int32_data.extend([-1, 0, 7])
    b.tensor.segment.begin, b.tensor.segment.end = 0, 3
    assert deserialize_tensor_blob(b.SerializeToString()).tolist() == [-1, 0, 7]


@pytest.mark.parametrize("tensor, type_, exc, match", [
    (None, "std::string", TypeError, "blob 'b' is of type 'std::string', not 'Tensor'"),
    (None, "", TypeError, "blob 'b' is of type '', not 'Tensor'"),
    (None, "Tensor", ValueError, "blob 'b': its BlobProto of type 'Tensor' holds no tensor"),
    (dict(dims=[1], data_type=4, string_data=[b"a"]), "Tensor", TypeError, "blob 'b' holds a STRING tensor"),
    (dict(dims=[1], data_type=0, string_data=[b"a"]), "Tensor", TypeError,
     r"blob 'b': data type UNDEFINED \(0\)"),
    (dict(dims=[1], data_type=14), "Tensor", TypeError, "ZERO_COLLISION_HASH"),
    (dict(dims=[4], float_data=[1, 2], segment=dict(begin=2, end=4)), "Tensor", ValueError,
     r"blob 'b': its segment \[2, 4\) does not cover the whole tensor"),
    (dict(dims=[2], float_data=[1, 2, 3]), "Tensor", ValueError,
     r"blob 'b': float_data holds 3 values, its dims \[2\] need 2"),
    (dict(dims=[-2], float_data=[1, 2]), "Tensor", ValueError, "blob 'b': negative dim -2"),
    (dict(dims=[1], data_type=10, int64_data=[2 ** 31]), "Tensor", ValueError,
     r"blob 'b': INT64 \(10\) value 2147483648 at element 0 does not fit in int32"),
    (dict(dims=[2], data_type=13, double_data=[1, -1e39]), "Tensor", ValueError,
     r"blob 'b': DOUBLE \(13\) value -1e\+39 at element 1 is beyond float32's range"),
    (dict(dims=[1], float_data=[1], data_format=1), "Tensor", ValueError,
     r"data_format FMT_BFLOAT16 \(1\) keeps FLOAT data in raw_data, but float_data holds 1 values"),
    (dict(dims=[1], data_format=1, raw_data=b"\0\0\0"), "Tensor", ValueError,
     r"raw_data \(bfloat16\) of 3 bytes is not a whole number of 2-byte values"),
    (dict(dims=[1], float_data=[1], raw_data=b"\0\0\0\0"), "Tensor", ValueError,
     "both float_data and raw_data"),
])
def test_deserialize_errors(pb2, tensor, type_, exc, match):
    if tensor is None:
        data = _blob(pb2, type_=type_) if type_ != "Tensor" else b"\x0a\x01b\x12\x06Tensor"
    else:
        seg = tensor.pop("segment", None)
        b = pb2["BlobProto"](name="b", type=type_)
        b.tensor.CopyFrom(pb2["TensorProto"](**tensor))
        if seg:
            b.tensor.segment.begin, b.tensor.segment.end = seg["begin"], seg["end"]
        data = b.SerializeToString()
    with pytest.raises(exc, match=match):
        deserialize_tensor_blob(data)
    with pytest.raises(exc, match=match.replace("blob 'b'", "blob 'dest'")):
        deserialize_tensor_blob(data, name="dest")  # the name given wins over the BlobProto's


def test_deserialize_malformed_and_partial_records(tmp_path):
    good = serialize_tensor_blob("w", np.arange(5, dtype=np.float32))
    for cut in range(len(good)):  # a cut at a field's end parses, and then lacks what follows
        with pytest.raises((ValueError, TypeError)):
            deserialize_tensor_blob(good[:cut])
    with pytest.raises(DecodeError, match=r"blob 'w': cannot parse caffe2.BlobProto from 8 bytes"):
        deserialize_tensor_blob(good[:8], name="w")
    with pytest.raises(DecodeError,
                       match=r"cannot parse caffe2.BlobProto .* in tensor \(a caffe2.TensorProto\)"):
        deserialize_tensor_blob(b"\x1a\x02\x1a\x09")
    with pytest.raises(TypeError, match="expected bytes, got str"):
        deserialize_tensor_blob("abc")
    # a segment without its required end: Caffe2's C++ parser refuses such bytes
    seg_less = BlobProto(name="s", type="Tensor", tensor=TensorProto(dims=[1], float_data=[1],
                                                                     segment=Segment(begin=0)))
    with pytest.raises(ValueError, match="blob 's': its segment lacks the required end"):
        deserialize_tensor_blob(seg_less.SerializePartialToString())
    # a chunked Save record is a chunk, not a whole tensor
    workspace.FeedBlob("c", np.arange(5, dtype=np.float32))
    workspace.RunOperatorOnce(core.CreateOperator("Save", ["c"], [], db=str(tmp_path / "c"), db_type="minidb",
                                                  absolute_path=1, chunk_size=2))
    recs = _records(tmp_path / "c")
    assert len(recs) == 3
    with pytest.raises(ValueError, match=r"blob 'c': its segment \[2, 4\) does not cover the whole tensor"):
        deserialize_tensor_blob(recs[1][1])


def test_serialize_errors():
    with pytest.raises(TypeError, match="the blob name must be a str, got bytes"):
        serialize_tensor_blob(b"w", np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="the blob name is empty"):
        serialize_tensor_blob("", np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="serialize_tensor_blob: blob 'w': expected a NumPy array, got list"):
        serialize_tensor_blob("w", [1.0])
    with pytest.raises(TypeError,
                       match="serialize_tensor_blob: blob 'w': dtype complex128 has no Caffe2 data type"):
        serialize_tensor_blob("w", np.zeros(1, complex))
    scalar = deserialize_tensor_blob(serialize_tensor_blob("w", np.float32(3)))  # a NumPy scalar: 0-d
    assert scalar.shape == () and scalar.dtype == np.float32 and scalar == 3

