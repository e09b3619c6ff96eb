"""Checkpoint ops (csrc/ops/db.c): Save, Load, CreateDB in Caffe2's minidb format.

Round trips bit for bit (float32/int32, 0-d and empty shapes, chunked tensors,
many blobs, prefixes, overrides, load_all, allow_incomplete, several dbs,
readers), a whole LSTM model saved, the workspace reset and the model reloaded
with the same outputs, an independent check of the wire format with the
``protobuf`` package (message classes built here from a FileDescriptorProto
with Caffe2's field numbers: our records parse and re-serialize to the same
bytes, and records written by protobuf, packed and unpacked, INT64 / DOUBLE /
BOOL, chunked, load), corrupt files (every truncation, lengths past the end,
huge lengths and element counts, random byte flips) giving exceptions that
name the op, the file and the record, and bad arguments.
"""

import re
import struct

import numpy as np
import pytest

from recurrent import core, workspace

INT32_MAX = 2**31 - 1


def save(blobs, path, **args):
    args.setdefault("db_type", "minidb")
    workspace.RunOperatorOnce(core.CreateOperator("Save", blobs, [], db=str(path), absolute_path=1, **args))


def load(blobs, path, inputs=(), **args):
    if not inputs:
        args.setdefault("db_type", "minidb")
        args["db"] = str(path)
    workspace.RunOperatorOnce(core.CreateOperator("Load", list(inputs), blobs, **args))


def bits(a):
    a = np.asarray(a)
    return a.dtype, a.shape, a.view(np.uint32 if a.dtype == np.float32 else np.int32).tobytes()


def records(path):
    """The (key, value) records of a minidb file (parsed here independently)."""
    data = open(path, "rb").read()
    out, off = [], 0
    while off < len(data):
        kl, vl = struct.unpack_from("=II", data, off)
        off += 8
        out.append((data[off:off + kl].decode(), data[off + kl:off + kl + vl]))
        off += kl + vl
    assert off == len(data)
    return out


def write_records(path, recs):
    with open(path, "wb") as f:
        for k, v in recs:
            k = k.encode() if isinstance(k, str) else k
            f.write(struct.pack("=II", len(k), len(v)) + k + v)


def special_floats(n, seed=0):
    rng = np.random.RandomState(seed)
    a = rng.standard_normal(n).astype(np.float32)
    specials = np.array([0x7fc00001, 0xffc12345, 0x7f800000, 0xff800000, 0x80000000, 0x00000001, 0x7f7fffff],
                        np.uint32).view(np.float32)
    a[:min(n, len(specials))] = specials[:n]
    return a


SHAPES = [(), (0,), (0, 3), (1,), (7,), (2, 3), (2, 3, 4), (1, 1, 1, 1, 1, 1, 1, 2)]


@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_bitwise(tmp_path, shape):
    n = int(np.prod(shape))
    f = special_floats(n).reshape(shape)
    rng = np.random.RandomState(1)
    i = rng.randint(-2**31, 2**31, size=n, dtype=np.int64).astype(np.int32)
    if n >= 2:
        i[:2] = [-2**31, INT32_MAX]
    i = i.reshape(shape)
    workspace.FeedBlob("f", f)
    workspace.FeedBlob("i", i)
    save(["f", "i"], tmp_path / "db")
    workspace.ResetWorkspace()
    load(["f", "i"], tmp_path / "db")
    assert bits(workspace.FetchBlob("f")) == bits(f)
    assert bits(workspace.FetchBlob("i")) == bits(i)


def test_chunks_keys_and_sizes(tmp_path):
    big = special_floats(2_500_001, seed=3)
    workspace.FeedBlob("big", big)
    workspace.FeedBlob("small", np.arange(10, dtype=np.int32))
    save(["big", "small"], tmp_path / "d")
    assert [k for k, _ in records(tmp_path / "d")] == ["big#%0", "big#%1", "big#%2", "small#%0"]
    workspace.ResetWorkspace()
    load(["big", "small"], tmp_path / "d")
    assert bits(workspace.FetchBlob("big")) == bits(big)
    # Caffe2's Save argument: -1 is the default chunk size (1000000), 0 no chunking
    # (load_save_op.h, kDefaultChunkSize / kNoChunking; load_save_test.py's
    # testSaveWithDefaultChunkSize / testSaveWithNoChunking)
    for cs, keys in [(-1, ["big#%0", "big#%1", "big#%2"]), (0, ["big#%0"])]:
        save(["big"], tmp_path / "n", chunk_size=cs)
        assert [k for k, _ in records(tmp_path / "n")] == keys
        workspace.FeedBlob("big", np.zeros(1, np.float32))
        load(["big"], tmp_path / "n")
        assert bits(workspace.FetchBlob("big")) == bits(big)
    # explicit chunk sizes; 0: one record per tensor
    x = special_floats(23, seed=4).reshape(23, 1)
    workspace.FeedBlob("x", x)
    for cs, nrec in [(7, 4), (23, 1), (1, 23), (0, 1), (-1, 1), (100, 1)]:
        save(["x"], tmp_path / "c", chunk_size=cs)
        assert [k for k, _ in records(tmp_path / "c")] == ["x#%%%d" % j for j in range(nrec)]
        workspace.FeedBlob("x", np.zeros(1, np.float32))
        load(["x"], tmp_path / "c")
        assert bits(workspace.FetchBlob("x")) == bits(x)
        workspace.FeedBlob("x", x)


def test_many_blobs_and_load_subsets(tmp_path):
    names = ["b%03d" % k for k in range(300)]
    vals = {n: special_floats(k % 17, seed=k).reshape(-1) for k, n in enumerate(names)}
    for n in names:
        workspace.FeedBlob(n, vals[n])
    save(names, tmp_path / "m")
    workspace.ResetWorkspace()
    load(names[::-1], tmp_path / "m")
    for n in names:
        assert bits(workspace.FetchBlob(n)) == bits(vals[n])
    workspace.ResetWorkspace()
    load(["b007", "b123"], tmp_path / "m")
    assert sorted(workspace.Blobs()) == ["b007", "b123"]
    workspace.ResetWorkspace()
    load([], tmp_path / "m", load_all=1)
    assert sorted(workspace.Blobs()) == names


def test_prefixes_overrides_and_source_names(tmp_path):
    workspace.FeedBlob("gpu_0/w", np.array([1.5, 2.5], np.float32))
    workspace.FeedBlob("gpu_0/b", np.array([3], np.int32))
    save(["gpu_0/w", "gpu_0/b"], tmp_path / "p", strip_prefix="gpu_0/")
    assert [k for k, _ in records(tmp_path / "p")] == ["w#%0", "b#%0"]
    workspace.ResetWorkspace()
    load(["new/w", "new/b"], tmp_path / "p", add_prefix="new/")
    assert workspace.FetchBlob("new/w").tolist() == [1.5, 2.5]
    workspace.ResetWorkspace()
    load([], tmp_path / "p", load_all=1, add_prefix="a/")
    assert sorted(workspace.Blobs()) == ["a/b", "a/w"]
    # strip_prefix on Load drops the first match and everything before it
    workspace.ResetWorkspace()
    workspace.FeedBlob("x", np.ones(2, np.float32))
    save(["x"], tmp_path / "o", blob_name_overrides=["scope/inner/x"])
    assert [k for k, _ in records(tmp_path / "o")] == ["scope/inner/x#%0"]
    load(["y"], tmp_path / "o", source_blob_names=["scope/inner/x"])
    load(["x"], tmp_path / "o", strip_prefix="inner/")
    assert workspace.FetchBlob("y").tolist() == [1.0, 1.0]
    assert workspace.FetchBlob("x").tolist() == [1.0, 1.0]


def test_allow_incomplete_and_missing(tmp_path):
    workspace.FeedBlob("a", np.ones(3, np.float32))
    save(["a"], tmp_path / "i")
    with pytest.raises(KeyError, match=r"op Load #0: output 1 blob 'b' is not in '.*i'"):
        load(["a", "b"], tmp_path / "i")
    load(["a", "b"], tmp_path / "i", allow_incomplete=1)
    assert not workspace.HasBlob("b") or workspace.FetchBlob("a").tolist() == [1, 1, 1]
    with pytest.raises(KeyError, match="output 0 blob 'zz'"):
        load(["zz"], tmp_path / "i", load_all=1)


def test_several_dbs_and_duplicates(tmp_path):
    workspace.FeedBlob("a", np.ones(2, np.float32))
    workspace.FeedBlob("b", np.full(2, 2, np.int32))
    save(["a"], tmp_path / "1")
    save(["b"], tmp_path / "2")
    workspace.ResetWorkspace()
    workspace.RunOperatorOnce(core.CreateOperator("Load", [], ["a", "b"], db_type="minidb",
                                                  dbs=[str(tmp_path / "1"), str(tmp_path / "2")]))
    assert workspace.FetchBlob("b").tolist() == [2, 2]
    copy = tmp_path / "1copy"
    copy.write_bytes((tmp_path / "1").read_bytes())
    with pytest.raises(ValueError, match=r"record 0 \(key 'a#%0'.*blob 'a' is also in an earlier db"):
        workspace.RunOperatorOnce(core.CreateOperator("Load", [], [], db_type="minidb", load_all=1,
                                                      dbs=[str(tmp_path / "1"), str(copy)]))


def test_create_db_reader(tmp_path):
    workspace.FeedBlob("w", np.arange(4, dtype=np.float32))
    save(["w"], tmp_path / "r")
    workspace.RunOperatorOnce(core.CreateOperator("CreateDB", [], ["reader"], db=str(tmp_path / "r"),
                                                  db_type="minidb"))
    assert workspace.FetchBlob("reader") == b"reader, a C++ native class of type DBReader."  # as Caffe2's
    for _ in range(2):  # every Load reads the file from its start
        workspace.FeedBlob("w", np.zeros(1, np.float32))
        load([], None, inputs=["reader"], load_all=1)
        assert workspace.FetchBlob("w").tolist() == [0, 1, 2, 3]
    load(["p/w"], None, inputs=["reader"], add_prefix="p/")
    assert workspace.FetchBlob("p/w").tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="input 0 blob 'w' must be a DBReader"):
        load([], None, inputs=["w"], load_all=1)
    with pytest.raises(TypeError, match="op Save #0: input 0 blob 'reader' holds a DBReader"):
        save(["reader"], tmp_path / "x")
    workspace.RunOperatorOnce(core.CreateOperator("CreateDB", [], ["reader2"], db=str(tmp_path / "r"),
                                                  db_type="minidb"))
    with pytest.raises(TypeError, match="blob 'reader2' holds a DBReader and cannot receive a tensor"):
        load(["reader2"], None, inputs=["reader"], source_blob_names=["w"])
    with pytest.raises(OSError, match=r"op CreateDB #0: cannot open '.*nope' for reading: No such file"):
        workspace.RunOperatorOnce(core.CreateOperator("CreateDB", [], ["r2"], db=str(tmp_path / "nope"),
                                                      db_type="minidb"))
    workspace.ResetWorkspace()  # frees the reader (its file descriptor)


def test_lstm_model_saved_reset_loaded(tmp_path):
    from recurrent import rnn_cell
    from recurrent.model_helper import ModelHelper
    T, N, D, H = 5, 3, 4, 6

    def build():
        m = ModelHelper(name="ckpt_lstm")
        out = rnn_cell.LSTM(m, "x", "seq", ["h0", "c0"], D, H, scope="l")
        return m, out

    def feed_inputs():
        rng = np.random.RandomState(7)
        workspace.FeedBlob("x", rng.standard_normal((T, N, D)).astype(np.float32))
        workspace.FeedBlob("seq", np.array([5, 3, 1], np.int32))
        workspace.FeedBlob("h0", rng.standard_normal((1, N, H)).astype(np.float32))
        workspace.FeedBlob("c0", rng.standard_normal((1, N, H)).astype(np.float32))

    m, out = build()
    workspace.RunNetOnce(m.param_init_net)
    feed_inputs()
    workspace.RunNetOnce(m.net)
    want = [workspace.FetchBlob(str(o)) for o in out]
    params = [str(p) for p in m.GetParams()]
    assert params
    save(params, tmp_path / "lstm.minidb")
    workspace.ResetWorkspace()
    m2, out2 = build()
    feed_inputs()
    load(params, tmp_path / "lstm.minidb")
    workspace.RunNetOnce(m2.net)
    for a, o in zip(want, out2):
        assert bits(workspace.FetchBlob(str(o))) == bits(a)


def test_relative_path_is_against_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    workspace.FeedBlob("a", np.ones(1, np.float32))
    workspace.RunOperatorOnce(core.CreateOperator("Save", ["a"], [], db="rel.db", db_type="minidb"))
    assert (tmp_path / "rel.db").exists()
    workspace.RunOperatorOnce(core.CreateOperator("Load", [], ["a"], db="rel.db", db_type="minidb"))


# ---------------------------------------------------------------- errors
def test_io_and_argument_errors(tmp_path):
    workspace.FeedBlob("a", np.ones(1, np.float32))
    with pytest.raises(OSError, match=r"op Load #0: cannot open '.*missing' for reading: No such file"):
        load(["a"], tmp_path / "missing")
    with pytest.raises(OSError, match=r"op Save #0: cannot open '.*nodir/x' for writing: No such file"):
        save(["a"], tmp_path / "nodir" / "x")
    with pytest.raises(OSError, match="is not a regular file"):
        load(["a"], tmp_path)
    for op, ins, outs in [("Save", ["a"], []), ("Load", [], ["a"]), ("CreateDB", [], ["r"])]:
        net = core.Net("bad_" + op)
        net.Proto().op.extend([core.CreateOperator(op, ins, outs, db=str(tmp_path / "z"), db_type="leveldb")])
        msg = r"op %s #0: db_type 'leveldb' is not supported: only 'minidb'" % op
        with pytest.raises(ValueError, match=msg):
            workspace.CreateNet(net)
        with pytest.raises(ValueError, match="db_type '' is not supported"):
            workspace.RunOperatorOnce(core.CreateOperator(op, ins, outs, db=str(tmp_path / "z")))
    with pytest.raises(ValueError, match="argument 'db'"):
        workspace.RunOperatorOnce(core.CreateOperator("Save", ["a"], [], db_type="minidb"))
    save(["a"], tmp_path / "one")
    load(["a", "empty"], tmp_path / "one", allow_incomplete=1)  # creates 'empty' without a tensor
    with pytest.raises(ValueError, match="op Save #0: input 0 blob 'empty' holds no tensor"):
        save(["empty"], tmp_path / "e")
    assert not (tmp_path / "e").exists()
    workspace.FeedBlob("gpu/a", np.ones(1, np.float32))
    with pytest.raises(ValueError, match="would both be saved as 'a'"):
        save(["a", "gpu/a"], tmp_path / "e", strip_prefix="gpu/")
    workspace.FeedBlob("a#%1", np.ones(1, np.float32))
    with pytest.raises(ValueError, match="chunk separator '#%'"):
        save(["a#%1"], tmp_path / "e")
    with pytest.raises(ValueError, match="blob_name_overrides has 1 names for 2 inputs"):
        save(["a", "gpu/a"], tmp_path / "e", blob_name_overrides=["x"])
    with pytest.raises(ValueError, match="chunk_size must be"):
        save(["a"], tmp_path / "e", chunk_size=-2)
    with pytest.raises(ValueError, match="mutually exclusive"):
        load(["a"], tmp_path / "e", load_all=1, source_blob_names=["x"])


def test_failed_load_changes_nothing(tmp_path):
    workspace.FeedBlob("a", np.ones(3, np.float32))
    workspace.FeedBlob("b", np.full(2, 7, np.int32))
    save(["a", "b"], tmp_path / "f")
    data = open(tmp_path / "f", "rb").read()
    open(tmp_path / "f", "wb").write(data[:-3])  # b's record is cut
    workspace.FeedBlob("a", np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"record 1 .*at byte \d+\): key length"):
        load(["a", "b"], tmp_path / "f")
    assert workspace.FetchBlob("a").tolist() == [0, 0, 0]
    assert workspace.FetchBlob("b").tolist() == [7, 7]


# ---------------------------------------------------------------- corrupt files
LOAD_ERRORS = (ValueError, TypeError, KeyError)


def _small_db(path):
    workspace.FeedBlob("w", special_floats(9).reshape(3, 3))
    workspace.FeedBlob("n", np.array([-5, 6, INT32_MAX], np.int32))
    save(["w", "n"], path, chunk_size=4)
    return open(path, "rb").read()


def test_every_truncation_is_an_error(tmp_path):
    data = _small_db(tmp_path / "t")
    bad = tmp_path / "bad"
    for cut in range(len(data)):
        open(bad, "wb").write(data[:cut])
        with pytest.raises(LOAD_ERRORS) as ei:
            load(["w", "n"], bad)
        assert "op Load #0" in str(ei.value)


def test_lengths_past_the_end_and_huge_lengths(tmp_path):
    bad = tmp_path / "bad"
    for kl, vl in [(0xFFFFFFFF, 0), (0, 0xFFFFFFFF), (5, 0x7FFFFFFF), (0x80000000, 0x80000000)]:
        open(bad, "wb").write(struct.pack("=II", kl, vl) + b"abcde")
        with pytest.raises(ValueError, match=r"op Load #0: file '.*bad' record 0 \(at byte 0\): key length"):
            load([], bad, load_all=1)


@pytest.mark.parametrize("key", [b"\xff", b"w\xf8\x80\x80", b"\xed\xa0\x80", b"\xc0\xaf", b"a\x00b",
                                 b"\xe2\x82", b"\xf4\x90\x80\x80"])
def test_keys_that_are_not_utf8_text(tmp_path, key):
    workspace.FeedBlob("w", np.ones(1, np.float32))
    save(["w"], tmp_path / "k")
    _, value = records(tmp_path / "k")[0]
    write_records(tmp_path / "k", [(key, value)])
    with pytest.raises(ValueError, match=r"record 0 \(key '.*', at byte 0\): the key is not UTF-8 text"):
        load([], tmp_path / "k", load_all=1)
    write_records(tmp_path / "k", [("\u00e9t\u00e9#%0", value)])  # UTF-8 names are fine
    load([], tmp_path / "k", load_all=1)
    assert workspace.FetchBlob("\u00e9t\u00e9").tolist() == [1.0]


def _tensor_value(name, body):
    """A BlobProto of type Tensor around a hand-written TensorProto body."""
    def ld(field, b):
        return _varint(field << 3 | 2) + _varint(len(b)) + b
    return ld(1, name.encode()) + ld(2, b"Tensor") + ld(3, body)


def _varint(v):
    v &= (1 << 64) - 1
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


@pytest.mark.parametrize("body, exc, match", [
    # dims claim 2**40 elements: refused before any allocation
    (b"\x08" + _varint(2**40) + b"\x10\x01", ValueError, "claims 1099511627776 elements"),
    (b"\x08" + _varint(-3) + b"\x10\x01", ValueError, "negative dim"),
    (b"\x08\x02\x10\x01\x1a\x04\x00\x00\x80\x3f", ValueError,
     r"float_data holds 1 elements, the segment \[0, 2\)"),
    (b"\x08\x02\x10\x01\x1a\x03\x00\x00\x80", ValueError, "not a multiple of 4"),
    (b"\x08\x01\x10\x01\x1a\x08\x00\x00\x80\x3f", ValueError, "runs past the end"),
    (b"\x08" + b"\xff" * 11, ValueError, "varint longer than 10 bytes"),
    (b"\x08\x01\x10\x04\x32\x01a", TypeError, r"Caffe2 dtype STRING \(4\)"),
    (b"\x08\x01\x10\x0c\x20\x01", TypeError, "FLOAT16"),
    (b"\x08\x02\x10\x01\x1a\x08" + b"\0" * 8 + b"\x5a\x04\x08\x01\x10\x03", ValueError, r"segment \[1, 3\)"),
    (b"\x0b", ValueError, "unsupported wire type"),
    (b"\x08\x01\x10\x0a\x50" + _varint(2**31), ValueError,
     "INT64 value 2147483648 at element 0 does not fit"),
    (b"\x08\x01\x10\x0d\x49" + struct.pack("<d", 1e39), ValueError, "beyond float32's range"),
    (b"\x08\x01\x10\x01\x78\x01", ValueError, "data_format 1 is not supported"),
])
def test_corrupt_tensor_protos(tmp_path, body, exc, match):
    write_records(tmp_path / "c", [("w#%0", _tensor_value("w", body))])
    with pytest.raises(exc, match=match) as ei:
        load(["w"], tmp_path / "c")
    assert re.search(r"op Load #0: file '.*c' record 0 \(key 'w#%0', at byte 0\)", str(ei.value))


def test_chunk_conflicts(tmp_path):
    def chunk(dims, begin, vals, dtype=1):
        body = b"".join(b"\x08" + _varint(d) for d in dims) + b"\x10" + _varint(dtype)
        body += b"\x1a" + _varint(4 * len(vals)) + struct.pack("<%df" % len(vals), *vals)
        body += b"\x5a" + bytes([4, 8, begin, 16, begin + len(vals)])
        return _tensor_value("w", body)
    write_records(tmp_path / "c", [("w#%0", chunk([4], 0, [1, 2])), ("w#%1", chunk([4], 1, [3, 4]))])
    with pytest.raises(ValueError, match=r"record 1 .*segment \[1, 3\) overlaps"):
        load(["w"], tmp_path / "c")
    write_records(tmp_path / "c", [("w#%0", chunk([4], 0, [1, 2])), ("w#%1", chunk([2, 2], 2, [3, 4]))])
    with pytest.raises(ValueError, match=r"this chunk says \(2, 2\) float32, an earlier one \(4,\) float32"):
        load(["w"], tmp_path / "c")
    write_records(tmp_path / "c", [("w#%0", chunk([4], 0, [1, 2]))])
    with pytest.raises(ValueError, match=r"blob 'w' in '.*c' is incomplete: 2 of its 4 elements"):
        load(["w"], tmp_path / "c")
    write_records(tmp_path / "c", [("w#%1", chunk([4], 2, [3, 4])), ("w#%0", chunk([4], 0, [1, 2]))])
    load(["w"], tmp_path / "c")  # chunks in any order
    assert workspace.FetchBlob("w").tolist() == [1, 2, 3, 4]
    write_records(tmp_path / "c", [("w#%0", b"\x12\x08notensor")])
    with pytest.raises(TypeError, match="is of type 'notensor', only 'Tensor'"):
        load(["w"], tmp_path / "c")


def test_random_byte_flips_never_crash(tmp_path):
    data = bytearray(_small_db(tmp_path / "t"))
    rng = np.random.RandomState(5)
    bad = tmp_path / "bad"
    loaded = failed = 0
    for _ in range(400):
        d = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            d[rng.randint(len(d))] = rng.randint(256)
        open(bad, "wb").write(bytes(d))
        try:
            load(["w", "n"], bad)
            loaded += 1
        except LOAD_ERRORS as e:
            assert "op Load #0" in str(e)
            failed += 1
    assert failed > 100 and loaded + failed == 400
    workspace.FeedBlob("ok", np.ones(2, np.float32))  # the workspace is still usable
    assert workspace.FetchBlob("ok").tolist() == [1, 1]


# ---------------------------------------------------------------- independent wire-format check (protobuf)
def _proto_classes():
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        pytest.skip("the protobuf package is not installed (pip install protobuf; it is in the 'test' extra)")
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="c2test_caffe2.proto", package="c2test", syntax="proto2")
    dev = fdp.message_type.add(name="DeviceOption")
    dev.field.add(name="device_type", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)

    def tensor_message(name, packed):
        tp = fdp.message_type.add(name=name)
        seg = tp.nested_type.add(name="Segment")
        seg.field.add(name="begin", number=1, type=F.TYPE_INT64, label=F.LABEL_REQUIRED)
        seg.field.add(name="end", number=2, type=F.TYPE_INT64, label=F.LABEL_REQUIRED)
        rep = F.LABEL_REPEATED
        tp.field.add(name="dims", number=1, type=F.TYPE_INT64, label=rep)
        tp.field.add(name="data_type", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, default_value="1")
        for fname, num, typ in [("float_data", 3, F.TYPE_FLOAT), ("int32_data", 4, F.TYPE_INT32),
                                ("double_data", 9, F.TYPE_DOUBLE), ("int64_data", 10, F.TYPE_INT64)]:
            f = tp.field.add(name=fname, number=num, type=typ, label=rep)
            f.options.packed = packed
        tp.field.add(name="byte_data", number=5, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
        tp.field.add(name="string_data", number=6, type=F.TYPE_BYTES, label=rep)
        tp.field.add(name="name", number=7, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        tp.field.add(name="device_detail", number=8, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                     type_name=".c2test.DeviceOption")
        tp.field.add(name="segment", number=11, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                     type_name=".c2test.%s.Segment" % name)
        tp.field.add(name="raw_data", number=13, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
        bp = fdp.message_type.add(name="Blob" + name)
        bp.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        bp.field.add(name="type", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        bp.field.add(name="tensor", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                     type_name=".c2test." + name)
        bp.field.add(name="content", number=4, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)

    tensor_message("TensorProto", True)
    tensor_message("TensorProtoUnpacked", False)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)

    def cls(n):
        d = pool.FindMessageTypeByName("c2test." + n)
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(d)
        return message_factory.MessageFactory(pool).GetPrototype(d)
    return cls("BlobTensorProto"), cls("BlobTensorProtoUnpacked")


def test_protobuf_parses_our_records(tmp_path):
    Blob, _ = _proto_classes()
    f = special_floats(10, seed=9).reshape(2, 5)
    i = np.array([[-1, 0], [INT32_MAX, -2**31]], np.int32)
    workspace.FeedBlob("f", f)
    workspace.FeedBlob("i", i)
    workspace.FeedBlob("s", np.float32(2.0))
    workspace.FeedBlob("e", np.zeros((0, 4), np.int32))
    save(["f", "i", "s", "e"], tmp_path / "p", chunk_size=4)
    recs = records(tmp_path / "p")
    assert [k for k, _ in recs] == ["f#%0", "f#%1", "f#%2", "i#%0", "s#%0", "e#%0"]
    got = {}
    for k, v in recs:
        b = Blob()
        b.ParseFromString(v)
        assert b.SerializeToString(deterministic=True) == v  # canonical field order and encoding
        name = k.split("#%")[0]
        assert b.name == name and b.type == "Tensor" and b.tensor.name == name
        assert b.tensor.HasField("device_detail") and b.tensor.device_detail.device_type == 0
        assert b.tensor.HasField("segment")
        t = b.tensor
        want = {"f": f, "i": i, "s": np.asarray(np.float32(2.0)), "e": np.zeros((0, 4), np.int32)}[name]
        assert list(t.dims) == list(want.shape)
        assert t.data_type == (1 if want.dtype == np.float32 else 2)
        data = np.array(t.float_data if t.data_type == 1 else t.int32_data, want.dtype)
        assert len(data) == t.segment.end - t.segment.begin
        got.setdefault(name, []).append((t.segment.begin, data))
    for name, want in [("f", f), ("i", i)]:
        flat = np.concatenate([d for _, d in sorted(got[name], key=lambda x: x[0])])
        assert bits(flat) == bits(want.reshape(-1))


def test_our_load_reads_protobuf_records(tmp_path):
    Blob, BlobUnpacked = _proto_classes()
    rng = np.random.RandomState(11)
    fl = special_floats(7, seed=2)
    recs = []
    for cls, name in [(Blob, "packed"), (BlobUnpacked, "unpacked")]:
        b = cls(name=name, type="Tensor")
        b.tensor.dims.extend([7])
        b.tensor.data_type = 1
        b.tensor.float_data.extend(fl.tolist())
        recs.append((name, b.SerializeToString()))  # a plain key, as old Caffe2 wrote
    i64 = rng.randint(-2**31, 2**31, size=6).astype(np.int64)
    b = BlobUnpacked(name="i64", type="Tensor")
    b.tensor.dims.extend([2, 3])
    b.tensor.data_type = 10
    b.tensor.int64_data.extend(i64.tolist())
    b.content = b"ignored"
    recs.append(("i64#%0", b.SerializeToString()))
    dbl = rng.standard_normal(5) * 1e30
    b = Blob(name="dbl", type="Tensor")
    b.tensor.dims.extend([5])
    b.tensor.data_type = 13
    b.tensor.double_data.extend(dbl.tolist())
    recs.append(("dbl#%0", b.SerializeToString()))
    b = Blob(name="bool", type="Tensor")
    b.tensor.dims.extend([3])
    b.tensor.data_type = 5
    b.tensor.int32_data.extend([1, 0, 1])
    recs.append(("bool#%0", b.SerializeToString()))
    b.tensor.ClearField("int32_data")
    b.tensor.byte_data = b"\x00\x01\x01"
    recs.append(("boolb#%0", b.SerializeToString()))
    b = Blob(name="raw", type="Tensor")
    b.tensor.dims.extend([2])
    b.tensor.data_type = 2
    b.tensor.raw_data = np.array([-7, 9], "<i4").tobytes()
    recs.append(("raw#%0", b.SerializeToString()))
    big = rng.standard_normal(10).astype(np.float32)  # chunked, out of order
    for c, (lo, hi) in reversed(list(enumerate([(0, 4), (4, 8), (8, 10)]))):
        b = BlobUnpacked(name="big", type="Tensor")
        b.tensor.dims.extend([2, 5])
        b.tensor.data_type = 1
        b.tensor.float_data.extend(big[lo:hi].tolist())
        b.tensor.segment.begin, b.tensor.segment.end = lo, hi
        recs.append(("big#%%%d" % c, b.SerializeToString()))
    write_records(tmp_path / "w", recs)
    load(["packed", "unpacked", "i64", "dbl", "bool", "boolb", "raw", "big"], tmp_path / "w")
    assert bits(workspace.FetchBlob("packed")) == bits(fl)
    assert bits(workspace.FetchBlob("unpacked")) == bits(fl)
    assert bits(workspace.FetchBlob("i64")) == bits(i64.astype(np.int32).reshape(2, 3))
    assert bits(workspace.FetchBlob("dbl")) == bits(dbl.astype(np.float32))
    assert workspace.FetchBlob("bool").tolist() == [1, 0, 1]
    assert workspace.FetchBlob("boolb").tolist() == [0, 1, 1]
    assert workspace.FetchBlob("raw").tolist() == [-7, 9]
    assert bits(workspace.FetchBlob("big")) == bits(big.reshape(2, 5))
    # out of range values are errors naming the blob
    b = Blob(name="o", type="Tensor")
    b.tensor.dims.extend([2])
    b.tensor.data_type = 10
    b.tensor.int64_data.extend([1, -2**31 - 1])
    write_records(tmp_path / "o", [("o#%0", b.SerializeToString())])
    msg = "blob 'o': INT64 value -2147483649 at element 1 does not fit in int32"
    with pytest.raises(ValueError, match=msg):
        load(["o"], tmp_path / "o")



def test_model_helper_create_db_goes_to_param_init_net(tmp_path):
    from recurrent import model_helper
    workspace.FeedBlob("w", np.arange(3, dtype=np.float32))
    save(["w"], tmp_path / "m")
    m = model_helper.ModelHelper(name="db_model")
    reader = m.CreateDB("dbreader_m", db=str(tmp_path / "m"), db_type="minidb")
    assert str(reader) == "dbreader_m"
    assert [(op.type, list(op.input), list(op.output)) for op in m.param_init_net.Proto().op] == [
        ("CreateDB", [], ["dbreader_m"])]
    assert m.net.Proto().op == []
    m.net.Load([reader], [], load_all=1)
    workspace.FeedBlob("w", np.zeros(1, np.float32))
    workspace.RunNetOnce(m.param_init_net)
    workspace.RunNetOnce(m.net)
    assert workspace.FetchBlob("w").tolist() == [0, 1, 2]


def test_core_c_registered_dbs(tmp_path):
    # Caffe2's tests read core.C.registered_dbs() (checkpoint_test.py skips without "LevelDB"):
    # core.C is workspace.C, and every type it lists is one Save and Load accept
    from recurrent import core
    assert core.C is workspace.C
    assert core.C.registered_dbs() == ["minidb"]
    assert "LevelDB" not in core.C.registered_dbs()
    workspace.FeedBlob("r", np.arange(3, dtype=np.float32))
    for t in core.C.registered_dbs():
        workspace.RunOperatorOnce(core.CreateOperator("Save", ["r"], [], db=str(tmp_path / t),
                                                      db_type=t, absolute_path=1))
        workspace.RunOperatorOnce(core.CreateOperator("Load", [], ["r"], db=str(tmp_path / t),
                                                      db_type=t, absolute_path=1))
    assert not hasattr(core, "no_such_name")
