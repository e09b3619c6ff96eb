"""The atomic counters (csrc/ops/counter.c): CreateCounter, ResetCounter, CountDown, CheckCounterDone,
CountUp, RetrieveCount against a Python model of Caffe2's Counter, the int32 range, wrong input and
output kinds, FetchBlob / FeedBlob of a Counter, Save and Load of one in Caffe2's record format (and
the refusals), the refusal in step nets, ConstantFill's dtype BOOL. Counting from several
threads at once is tests/c/test_threads.c (test_concurrent_counter). No finite-difference test: the ops
have no gradient."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from recurrent import _C
from test_checkpoint import _varint as varint, records, write_records
from test_ops_math import feed, op
from test_ops_mutex import raises, run, usable

I32_MAX = 2 ** 31 - 1
I32_MIN = -2 ** 31
ALL = ["CreateCounter", "ResetCounter", "CountDown", "CheckCounterDone", "CountUp", "RetrieveCount"]


def scalar(name):
    v = workspace.FetchBlob(name)
    assert v.dtype == np.int32 and v.shape == ()
    return int(v)


def count(c="c"):
    run("RetrieveCount", [c], ["_count"])
    return scalar("_count")


class Model:
    """Caffe2's Counter<T> (counter_ops.h), in Python."""

    def __init__(self, n):
        self.n = n

    def down(self):
        done = self.n <= 0
        self.n -= 1
        return int(done)

    def up(self):
        self.n += 1
        return self.n - 1

    def reset(self, n):
        prev, self.n = self.n, n
        return prev


# ---------------------------------------------------------------- the counts
@pytest.mark.parametrize("init", [0, 1, 3, 7])
def test_ops_against_the_model(init):
    rng = np.random.default_rng(init)
    run("CreateCounter", [], ["c"], init_count=init)
    m = Model(init)
    assert count() == init
    for _ in range(60):
        k = rng.integers(5)
        if k == 0:
            run("CountDown", ["c"], ["d"])
            assert scalar("d") == m.down()
        elif k == 1:
            run("CountUp", ["c"], ["p"])
            assert scalar("p") == m.up()
        elif k == 2:
            run("CheckCounterDone", ["c"], ["d"])
            assert scalar("d") == int(m.n <= 0)
        elif k == 3:
            n = int(rng.integers(4))
            run("ResetCounter", ["c"], ["p"], init_count=n)
            assert scalar("p") == m.reset(n)
        else:
            assert count() == m.n


def test_caffe2s_sequence_and_defaults():
    run("CreateCounter", [], ["c"])  # init_count 0
    assert count() == 0
    run("CheckCounterDone", ["c"], ["d"])
    assert scalar("d") == 1
    run("ResetCounter", ["c"], [], init_count=2)  # no output
    run("CountDown", ["c"], ["t"])
    assert scalar("t") == 0 and count() == 1
    run("CountDown", ["c"], ["t"])
    assert scalar("t") == 0 and count() == 0
    run("CountDown", ["c"], ["t"])
    assert scalar("t") == 1 and count() == -1
    run("CheckCounterDone", ["c"], ["d"])
    assert scalar("d") == 1
    run("ResetCounter", ["c"], ["p"])  # init_count 0
    assert scalar("p") == -1 and count() == 0


def test_in_a_net_run_many_times_and_output_shapes_replaced():
    feed(d=np.ones((2, 3), np.float32))  # an output's old tensor is replaced by the int32 scalar
    init = core.Net("counting_init")
    init.CreateCounter([], "c", init_count=5)
    workspace.RunNetOnce(init)
    net = core.Net("counting_run")
    net.CountDown("c", "d")
    net.CountUp("c", "u")
    net.CountDown("c", "d2")
    workspace.CreateNet(net)
    workspace.RunNet(net, 7)  # each run: -1, +1, -1
    assert count() == 5 - 7
    assert scalar("d") == 1 and scalar("d2") == 1 and scalar("u") == -2  # the 7th run: -1 -> -2, up, down


def test_create_counter_again_replaces_it_and_the_net_keeps_working():
    run("CreateCounter", [], ["c"], init_count=3)
    net = core.Net("count_again")
    net.CountDown("c", "d")
    workspace.CreateNet(net)
    workspace.RunNet(net)
    assert count() == 2
    run("CreateCounter", [], ["c"], init_count=9)  # a new counter in the same blob
    workspace.RunNet(net)
    assert count() == 8
    feed(t=np.ones(3, np.float32))  # a tensor in the output blob is replaced
    run("CreateCounter", [], ["t"], init_count=1)
    assert workspace.FetchBlob("t") == b"t, a C++ native class of type Counter."
    assert count("t") == 1


# ---------------------------------------------------------------- the int32 range
def test_the_ends_of_int32():
    run("CreateCounter", [], ["c"], init_count=I32_MAX)
    raises(ValueError, r"op CountUp #0: counter 'c' is at 2147483647: counting up would leave the int32 "
           r"range \(the counter is unchanged\)", "CountUp", ["c"], ["p"])
    assert count() == I32_MAX
    run("CountDown", ["c"], ["d"])
    assert scalar("d") == 0 and count() == I32_MAX - 1
    run("CreateCounter", [], ["c"], init_count=0)
    run("CountUp", ["c"], ["p"])
    assert scalar("p") == 0
    run("ResetCounter", ["c"], [], init_count=2)
    net = core.Net("to_the_bottom")
    net.CountDown("c", "d")
    workspace.CreateNet(net)
    workspace.RunNet(net, 5)
    assert count() == -3


@pytest.mark.parametrize("bad", [-1, I32_MAX + 1, -2 ** 40])
def test_init_count_out_of_range(bad):
    for t, ins, outs in [("CreateCounter", [], ["c"]), ("ResetCounter", ["c"], [])]:
        run("CreateCounter", [], ["c"], init_count=4)
        raises(ValueError, r"op %s #0: init_count must be in \[0, 2147483647\] \(the count is an int32\), "
               r"got %d" % (t, bad), t, ins, outs, init_count=bad)
        assert count() == 4  # unchanged


def test_init_count_must_be_an_int():
    raises(TypeError, r"op CreateCounter: argument 'init_count' must be an int, got float", "CreateCounter",
           [], ["c"], init_count=1.5)


# ---------------------------------------------------------------- wrong kinds
@pytest.mark.parametrize("t", ALL[1:])
def test_input_must_be_a_counter(t):
    msg = r"op %s #0: input 0 blob '%s' must be a Counter \(CreateCounter's output\), but it holds %s"
    feed(x=np.zeros(2, np.float32))
    outs = ["o"] if t != "ResetCounter" else []
    raises(TypeError, msg % (t, "x", r"a tensor \(2,\) float32"), t, ["x"], outs)
    # at net creation when it holds a tensor
    n = core.Net("counter_tensor_" + t)
    n.Proto().op.extend([op(t, ["x"], outs)])
    with pytest.raises(TypeError, match=r"net 'counter_tensor_%s': " % t + msg % (t, "x", "a tensor")):
        workspace.CreateNet(n)
    usable()
    run("CreateMutex", [], ["m"])
    raises(TypeError, msg % (t, "m", "a Mutex"), t, ["m"], outs)
    e = core.Net("counter_empty_" + t)
    e.Copy("x", "never_written")
    workspace.CreateNet(e)
    raises(TypeError, msg % (t, "never_written", r"nothing \(it was created but never written\)"), t,
           ["never_written"], outs)
    raises(KeyError, r"op %s #0: input 0 blob 'nope' does not exist" % t, t, ["nope"], outs)


@pytest.mark.parametrize("t", ALL[1:])
def test_output_holding_an_object_is_refused_and_the_count_unchanged(t):
    run("CreateCounter", [], ["c"], init_count=3)
    run("CreateCounter", [], ["c2"], init_count=1)
    raises(TypeError, r"op %s #0: output 0 blob 'c2' holds a Counter and cannot receive a tensor" % t, t,
           ["c"], ["c2"])
    assert count() == 3 and count("c2") == 1
    raises(ValueError, r"op %s #0: input 0 and output 0 are the same blob 'c', which this op does not "
           r"allow" % t, t, ["c"], ["c"])
    assert count() == 3


def test_create_counter_over_another_object_is_a_type_error():
    run("CreateMutex", [], ["m"])
    raises(TypeError, r"op CreateCounter #0: output 0 blob 'm' holds a Mutex, which a Counter cannot replace",
           "CreateCounter", [], ["m"])
    assert workspace.FetchBlob("m") == b"m, a C++ native class of type Mutex."
    run("CreateCounter", [], ["c"])
    raises(TypeError, r"op CreateMutex #0: output 0 blob 'c' holds a Counter, which a Mutex cannot replace",
           "CreateMutex", [], ["c"])
    run("CreateBlobsQueue", [], ["q"])
    raises(TypeError, r"op CreateCounter #0: output 0 blob 'q' holds a BlobsQueue", "CreateCounter", [],
           ["q"])


def test_arity():
    run("CreateCounter", [], ["c"])
    raises(ValueError, r"op CreateCounter #0: expects 0 inputs, got 1", "CreateCounter", ["c"], ["c2"])
    raises(ValueError, r"op CountDown #0: expects 1 outputs?, got 0", "CountDown", ["c"], [])
    raises(ValueError, r"op ResetCounter #0: expects at most 1 outputs?, got 2|op ResetCounter #0: expects",
           "ResetCounter", ["c"], ["a", "b"])
    assert count() == 0


def test_fetch_and_feed_of_a_counter_blob():
    run("CreateCounter", [], ["c"], init_count=2)
    assert workspace.FetchBlob("c") == b"c, a C++ native class of type Counter."
    with pytest.raises(TypeError, match=r"FeedBlob 'c': blob holds a Counter, not a tensor"):
        workspace.FeedBlob("c", np.ones(2, np.float32))
    usable()
    assert count() == 2
    workspace.ResetWorkspace()  # frees it (ASan checks)
    assert not workspace.HasBlob("c")


# ---------------------------------------------------------------- Save and Load (csrc/ops/db.c)
def field(num, payload):
    """A length-delimited protobuf field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


COUNTER_TYPE = b"std::unique_ptr<Counter<int64_t>>"


def counter_record(name, value, dims=(), dtype=10, content=True):
    """A BlobProto as Caffe2's CounterSerializer wrote it (content: an INT64 TensorProto)."""
    t = b"".join(varint(1 << 3) + varint(d) for d in dims) + varint(2 << 3) + varint(dtype)
    t += field(10 if dtype == 10 else 4, varint(value))
    return field(1, name.encode()) + field(2, COUNTER_TYPE) + (field(4, t) if content else b"")


def save(blobs, path):
    run("Save", blobs, [], db=str(path), db_type="minidb", absolute_path=1)


def load(blobs, path, **args):
    run("Load", [], blobs, db=str(path), db_type="minidb", absolute_path=1, **args)


def test_save_and_load_a_counter_as_caffe2(tmp_path):
    """Caffe2's counter_ops_test: the count saved, counted down, loaded back."""
    run("CreateCounter", [], ["c"], init_count=22)
    feed(x=np.arange(3, dtype=np.float32))
    save(["c", "x"], tmp_path / "db")
    # the record is Caffe2's: name, type, content = TensorProto{data_type: INT64, int64_data: [22]}
    recs = dict(records(tmp_path / "db"))
    content = b"\x10\x0a" + field(10, b"\x16")
    assert recs["c#%0"] == field(1, b"c") + field(2, COUNTER_TYPE) + field(4, content)
    for _ in range(10):
        run("CountDown", ["c"], ["t"])
    assert count() == 12
    load(["c"], tmp_path / "db")
    assert count() == 22
    # into a fresh workspace (the blob is created), with the tensor beside it
    workspace.ResetWorkspace()
    load(["c", "x"], tmp_path / "db")
    assert count() == 22 and workspace.FetchBlob("x").tolist() == [0, 1, 2]
    workspace.ResetWorkspace()
    load([], tmp_path / "db", load_all=1)
    assert count() == 22
    # a tensor in the blob is replaced by the Counter
    workspace.ResetWorkspace()
    feed(c=np.ones(2, np.float32))
    load(["c"], tmp_path / "db")
    assert count() == 22
    # negative counts and both ends of int32 round trip
    for v in [-5, I32_MIN, I32_MAX]:
        write_records(tmp_path / "v", [("c", counter_record("c", v))])  # Caffe2's key: the bare name
        load(["c"], tmp_path / "v")
        assert count() == v
        save(["c"], tmp_path / "w")
        run("CreateCounter", [], ["c"])
        load(["c"], tmp_path / "w")
        assert count() == v


def test_count_at_the_ends_of_int32_refuses_to_leave_them(tmp_path):
    write_records(tmp_path / "v", [("c", counter_record("c", I32_MIN))])
    load(["c"], tmp_path / "v")
    raises(ValueError, r"op CountDown #0: counter 'c' is at -2147483648: counting down would leave the int32 "
           r"range \(the counter is unchanged\)", "CountDown", ["c"], ["d"])
    assert count() == I32_MIN
    run("CountUp", ["c"], ["p"])
    assert scalar("p") == I32_MIN and count() == I32_MIN + 1
    run("CheckCounterDone", ["c"], ["d"])
    assert scalar("d") == 1


def test_load_refusals_leave_the_blobs_as_they_were(tmp_path):
    run("CreateMutex", [], ["m"])
    write_records(tmp_path / "m", [("m", counter_record("m", 3))])
    raises(TypeError, r"op Load #0: blob 'm' holds a Mutex and cannot receive a Counter", "Load", [], ["m"],
           db=str(tmp_path / "m"), db_type="minidb", absolute_path=1)
    assert workspace.FetchBlob("m") == b"m, a C++ native class of type Mutex."
    # a tensor record into a Counter blob
    run("CreateCounter", [], ["c"], init_count=4)
    feed(t=np.ones(2, np.float32))
    save(["t"], tmp_path / "t")
    raises(TypeError, r"op Load #0: blob 'c' holds a Counter and cannot receive a tensor", "Load", [], ["c"],
           db=str(tmp_path / "t"), db_type="minidb", absolute_path=1, source_blob_names=["t"])
    assert count() == 4
    bad = [
        (counter_record("c", 2 ** 31), ValueError,
         r"blob 'c': INT64 value 2147483648 at element 0 does not fit in int32"),
        (counter_record("c", 1, dims=[1]), ValueError,
         r"blob 'c': a serialized Counter's count must be one INT64 \(or INT32\) without dims or segment, "
         r"got Caffe2 dtype INT64 \(10\) with 1 dims"),
        (counter_record("c", 1, dtype=1), ValueError,
         r"blob 'c': a serialized .* got Caffe2 dtype FLOAT \(1\) with 0 dims"),
        (counter_record("c", 1, content=False), ValueError,
         r"blob 'c': a serialized Counter without its count \(no content field\)"),
    ]
    for rec, exc, match in bad:
        write_records(tmp_path / "b", [("c", rec)])
        raises(exc, r"op Load #0: file '.*b' record 0 \(key 'c', at byte 0\): " + match, "Load", [], ["c"],
               db=str(tmp_path / "b"), db_type="minidb", absolute_path=1)
        assert count() == 4
    # a second record of the name (load_all reads on: Load stops once its outputs are complete)
    write_records(tmp_path / "b", [("c", counter_record("c", 1)), ("c#%1", counter_record("c", 2))])
    raises(ValueError, r"blob 'c' is also in an earlier record \(duplicate key\)", "Load", [], [],
           db=str(tmp_path / "b"), db_type="minidb", absolute_path=1, load_all=1)
    assert count() == 4
    tensor = field(1, b"c") + field(2, b"Tensor") + field(3, b"\x10\x02" + field(4, b"\x07"))  # int32 7
    write_records(tmp_path / "b", [("c", counter_record("c", 1)), ("c#%1", tensor)])
    raises(ValueError, r"blob 'c' is also in an earlier record \(duplicate key\)", "Load", [], [],
           db=str(tmp_path / "b"), db_type="minidb", absolute_path=1, load_all=1)
    assert count() == 4
    # a Mutex still cannot be saved
    raises(TypeError, r"op Save #0: input 1 blob 'm' holds a Mutex, not a tensor: only tensors and Counters "
           r"can be saved", "Save", ["c", "m"], [], db=str(tmp_path / "x"), db_type="minidb", absolute_path=1)


def test_registered_checked_and_without_gradient():
    assert set(ALL) <= set(_C.op_types(checked=True))
    for t in ALL:
        assert core.GradientRegistry.HasGradient(t)  # registered, as having none
    net = core.Net("counter_grad")
    net.CreateCounter([], "c", init_count=1)
    net.CountDown("c", "d")
    w = net.ConstantFill([], "w", shape=[3], value=2.0)
    loss = net.SumElements(net.Mul([w, w], "w2"), "loss")
    gmap = net.AddGradientOperators([loss])
    assert "c" not in gmap and "d" not in gmap
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(gmap["w"])), [4.0, 4.0, 4.0])
    assert count() == 0


def test_bool_constant_fill_compares_with_count_down():
    """Caffe2's counter test compares CountDown's output with ConstantFill(dtype=BOOL)."""
    run("ConstantFill", [], ["f"], value=False, shape=[], dtype=core.DataType.BOOL)
    run("ConstantFill", [], ["t"], value=True, shape=[2], dtype=core.DataType.BOOL)
    run("ConstantFill", [], ["n"], value=float("nan"), shape=[1], dtype=core.DataType.BOOL)
    run("ConstantFill", [], ["z"], value=0.0, shape=[1], dtype=core.DataType.BOOL)
    assert workspace.FetchBlob("f").dtype == np.int32 and scalar("f") == 0
    assert workspace.FetchBlob("t").tolist() == [1, 1]
    assert workspace.FetchBlob("n").tolist() == [1] and workspace.FetchBlob("z").tolist() == [0]
    run("CreateCounter", [], ["c"], init_count=0)
    run("CountDown", ["c"], ["d"])
    run("And", ["d", "t"], ["a"])
    assert workspace.FetchBlob("a").tolist() == [1, 1]
    raises(ValueError, r"argument 'dtype' 4 is not supported: use 1 \(float32; 13 double and 12 float16 give "
           r"float32 too\), 2 \(int32; .*\) or 5 \(bool", "ConstantFill", [], ["x"], value=1, shape=[1], dtype=4)


# ---------------------------------------------------------------- step nets
@pytest.mark.parametrize("t", ALL)
def test_counter_ops_are_refused_in_a_step_net(t):
    cell = core.Net("ccell_" + t)
    x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
    cell.Proto().op.extend([op(t, [] if t == "CreateCounter" else ["c"], ["zz"])])
    o = cell.Tanh(cell.Sum([x_t, o_prev], "s"), "o")
    cell.AddExternalOutput(o)
    net = core.Net("crnn_" + t)
    rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                      links={o_prev: o}, scope="crnn", forward_only=True)
    run("CreateCounter", [], ["c"])
    feed(x=np.zeros((3, 2, 2), np.float32), o_init=np.zeros((1, 2, 2), np.float32))
    with pytest.raises(ValueError, match=r"op RecurrentNetwork #0: step op %s #0 of the forward step net "
                       r"cannot run inside a recurrent net" % t):
        workspace.CreateNet(net)
    usable()
    assert count() == 0
