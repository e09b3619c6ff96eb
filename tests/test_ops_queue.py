"""Blob queues (csrc/ops/queue.c: CreateBlobsQueue, EnqueueBlobs, DequeueBlobs, CloseBlobsQueue,
SafeEnqueueBlobs, SafeDequeueBlobs; no gradients, recurrent/_grad_queue.py): FIFO order over records of
differing shapes, capacity, close, the Safe* status, num_records concatenation against NumPy, every error
(where Caffe2 would have waited forever: raised at once), the workspace usable after each, a net that
dequeues one batch per run against feeding the batches directly (bitwise), the ops refused in step nets.
No finite-difference test: the ops have no gradient."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from recurrent.model_helper import ModelHelper
from test_ops_math import f32, feed, op


def create(name="q", **args):
    workspace.RunOperatorOnce(op("CreateBlobsQueue", [], [name], **args))


def enqueue(q, **blobs):
    feed(**blobs)
    workspace.RunOperatorOnce(op("EnqueueBlobs", [q] + list(blobs), list(blobs)))


def dequeue(q, outs, **args):
    workspace.RunOperatorOnce(op("DequeueBlobs", [q], outs, **args))
    return [workspace.FetchBlob(o) for o in outs]


def safe_dequeue(q, outs, **args):
    workspace.RunOperatorOnce(op("SafeDequeueBlobs", [q], outs + ["status"], **args))
    return [workspace.FetchBlob(o) for o in outs], workspace.FetchBlob("status")


def raises(exc, match, type_, inputs, outputs, **args):
    """Running the op raises exc whose message matches; the workspace stays usable."""
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(op(type_, inputs, outputs, **args))
    usable()


def usable():
    workspace.FeedBlob("_ok_x", np.ones((2, 3), np.float32))
    workspace.RunOperatorOnce(op("Scale", ["_ok_x"], ["_ok_y"], scale=2.0))
    assert (workspace.FetchBlob("_ok_y") == 2).all()


def records(rng, n):
    """n records (float32 of a varying shape and rank, int32 of varying length)."""
    out = []
    for r in range(n):
        shape = [(r % 4) + 1, 3] if r % 3 else [r % 5]
        out.append((f32(rng, *shape), rng.randint(-9, 9, size=r % 6).astype(np.int32)))
    return out


# ---------------------------------------------------------------- FIFO, capacity, close
def test_fifo_order_over_records_of_differing_shapes(rng):
    recs = records(rng, 13)
    create(capacity=5, num_blobs=2)
    taken = []
    for k, (a, b) in enumerate(recs):  # 1..5 records in the queue, wrapping the ring several times
        enqueue("q", a=a, b=b)
        if k % 2 and k > 4 or k == 3:
            taken.append(dequeue("q", ["x", "y"]))
            taken.append(dequeue("q", ["x", "y"]))
    while len(taken) < len(recs):
        taken.append(dequeue("q", ["x", "y"]))
    for (a, b), (x, y) in zip(recs, taken):
        assert x.dtype == np.float32 and y.dtype == np.int32
        assert x.shape == a.shape and y.shape == b.shape
        assert x.tobytes() == a.tobytes() and y.tobytes() == b.tobytes()


def test_enqueue_copies_so_later_writes_do_not_change_the_record(rng):
    a = f32(rng, 2, 3)
    create()
    enqueue("q", a=a)
    # the source blob keeps its value (Caffe2 swapped it out) and a new value fed into it is not queued
    assert workspace.FetchBlob("a").tobytes() == a.tobytes()
    workspace.RunOperatorOnce(op("Scale", ["a"], ["a"], scale=3.0))  # in place: into a's buffer
    (x,) = dequeue("q", ["x"])
    assert x.tobytes() == a.tobytes()
    np.testing.assert_array_equal(workspace.FetchBlob("a"), a * 3)
    # a new value fed into the source is not queued either
    enqueue("q", a=a)
    workspace.FeedBlob("a", np.zeros((4,), np.float32))
    (x,) = dequeue("q", ["x"])
    assert x.tobytes() == a.tobytes()
    # the dequeued blob is the caller's: writing it does not reach anything else
    workspace.RunOperatorOnce(op("Scale", ["x"], ["x"], scale=2.0))
    np.testing.assert_array_equal(workspace.FetchBlob("x"), a * 2)


def test_capacity_and_growth(rng):
    create(capacity=9, num_blobs=1)
    vals = [f32(rng, k + 1) for k in range(9)]
    for v in vals:
        enqueue("q", a=v)
    raises(RuntimeError, r"op EnqueueBlobs #0: queue 'q' is full \(capacity 9\): the op would wait forever: "
           r"nothing can dequeue while this net runs \(a workspace runs one net at a time; Caffe2 blocked\)",
           "EnqueueBlobs", ["q", "a"], ["a"])
    for v in vals[:4]:
        assert dequeue("q", ["x"])[0].tobytes() == v.tobytes()
    for v in vals[:4]:  # room again
        enqueue("q", a=v)
    for v in vals[4:] + vals[:4]:
        assert dequeue("q", ["x"])[0].tobytes() == v.tobytes()


def test_large_capacity_costs_nothing_until_used():
    create(capacity=2 ** 31 - 1, num_blobs=3)
    enqueue("q", a=np.ones(2, np.float32), b=np.zeros(0, np.int32), c=np.float32(5))
    x, y, z = dequeue("q", ["x", "y", "z"])
    assert x.shape == (2,) and y.shape == (0,) and z.shape == () and z == 5


def test_close_keeps_the_records_for_dequeue(rng):
    create(capacity=3)
    a, b = f32(rng, 2), f32(rng, 3)
    enqueue("q", a=a)
    enqueue("q", a=b)
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["q"], []))
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["q"], []))  # twice is fine (as Caffe2)
    raises(RuntimeError, r"op EnqueueBlobs #0: queue 'q' is closed: no record can be added",
           "EnqueueBlobs", ["q", "a"], ["a"])
    assert dequeue("q", ["x"])[0].tobytes() == a.tobytes()
    assert dequeue("q", ["x"], timeout_secs=2.5)[0].tobytes() == b.tobytes()
    raises(RuntimeError, r"op DequeueBlobs #0: queue 'q' is closed and empty: no record will come",
           "DequeueBlobs", ["q"], ["x"])
    # CreateBlobsQueue again: a fresh open empty queue in the same blob
    create(capacity=3)
    enqueue("q", a=a)
    assert dequeue("q", ["x"])[0].tobytes() == a.tobytes()


# ---------------------------------------------------------------- Safe* status
def test_safe_enqueue_status(rng):
    a = f32(rng, 2, 2)
    create(capacity=2, num_blobs=1)
    feed(a=a)
    safe = op("SafeEnqueueBlobs", ["q", "a"], ["a", "st"])
    workspace.RunOperatorOnce(safe)
    st = workspace.FetchBlob("st")
    assert st.dtype == np.int32 and st.shape == () and st == 0
    workspace.RunOperatorOnce(safe)
    raises(RuntimeError, r"op SafeEnqueueBlobs #0: queue 'q' is full \(capacity 2\): the op would wait "
           r"forever", "SafeEnqueueBlobs", ["q", "a"], ["a", "st"])
    assert workspace.FetchBlob("st") == 0  # untouched by the failure
    assert dequeue("q", ["x"])[0].tobytes() == a.tobytes()
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["q"], []))
    workspace.RunOperatorOnce(safe)  # closed: status 1, nothing enqueued
    assert workspace.FetchBlob("st") == 1
    assert dequeue("q", ["x"])[0].tobytes() == a.tobytes()
    raises(RuntimeError, "closed and empty", "DequeueBlobs", ["q"], ["x"])


def test_safe_dequeue_status_and_outputs_left_alone(rng):
    a, b = f32(rng, 3), np.array([4, 5], np.int32)
    create(capacity=2, num_blobs=2)
    enqueue("q", a=a, b=b)
    (x, y), st = safe_dequeue("q", ["x", "y"])
    assert x.tobytes() == a.tobytes() and y.tobytes() == b.tobytes()
    assert st.dtype == np.int32 and st.shape == () and st == 0
    raises(RuntimeError, r"op SafeDequeueBlobs #0: queue 'q' is empty: the op would wait forever: nothing "
           r"can enqueue while this net runs", "SafeDequeueBlobs", ["q"], ["x", "y", "status"])
    assert workspace.FetchBlob("status") == 0
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["q"], []))
    (x2, y2), st = safe_dequeue("q", ["x", "y"])
    assert st == 1  # closed and empty: the data outputs keep what they held (as Caffe2)
    assert x2.tobytes() == a.tobytes() and y2.tobytes() == b.tobytes()
    # the same with num_records > 1
    (x2, y2), st = safe_dequeue("q", ["x", "y"], num_records=3)
    assert st == 1 and x2.tobytes() == a.tobytes()


# ---------------------------------------------------------------- num_records
@pytest.mark.parametrize("tail", [(), (3,), (2, 0), (2, 3)])
def test_num_records_concatenates_along_the_first_dim(rng, tail):
    rows = [2, 0, 1, 3, 1]
    recs = [(f32(rng, r, *tail), rng.randint(0, 9, size=(r, 2)).astype(np.int32)) for r in rows]
    create(capacity=5, num_blobs=2)
    for a, b in recs:
        enqueue("q", a=a, b=b)
    (x, y), st = safe_dequeue("q", ["x", "y"], num_records=3)
    assert st == 0
    np.testing.assert_array_equal(x, np.concatenate([a for a, _ in recs[:3]]))
    np.testing.assert_array_equal(y, np.concatenate([b for _, b in recs[:3]]))
    assert x.dtype == np.float32 and y.dtype == np.int32 and x.shape == (3,) + tail
    # two left in an open queue, three asked: Caffe2 would wait for the third
    raises(RuntimeError, r"op SafeDequeueBlobs #0: queue 'q' holds 2 records and num_records is 3: the op "
           r"would wait forever for the rest: nothing can enqueue while this net runs .*close the queue to "
           r"take fewer",
           "SafeDequeueBlobs", ["q"], ["x", "y", "st"], num_records=3)
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["q"], []))
    (x, y), st = safe_dequeue("q", ["x", "y"], num_records=3)  # closed: the two that are there
    assert st == 0
    np.testing.assert_array_equal(x, np.concatenate([a for a, _ in recs[3:]]))
    np.testing.assert_array_equal(y, np.concatenate([b for _, b in recs[3:]]))
    (x, y), st = safe_dequeue("q", ["x", "y"], num_records=3)
    assert st == 1


def test_num_records_one_record_is_given_as_it_is(rng):
    create(capacity=2, num_blobs=1)
    enqueue("q", a=np.float32(7))  # a 0-d record: fine alone
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["q"], []))
    (x,), st = safe_dequeue("q", ["x"], num_records=4)
    assert st == 0 and x.shape == () and x == 7


@pytest.mark.parametrize("second, shown", [
    (np.ones((2, 4), np.float32), r"\(2, 4\) float32, record 0 is \(1, 3\) float32"),
    (np.ones((2, 3), np.int32), r"\(2, 3\) int32, record 0 is \(1, 3\) float32"),
    (np.ones((2, 3, 1), np.float32), r"\(2, 3, 1\) float32, record 0 is \(1, 3\) float32"),
    (np.float32(1), r"\(\) float32, record 0 is \(1, 3\) float32"),
])
def test_num_records_mismatch_names_the_field_and_shapes_and_takes_nothing(second, shown):
    create(capacity=3, num_blobs=2, field_names=["ids", "data"])
    first = np.zeros((1, 3), np.float32)
    enqueue("q", a=np.int32([1]), b=first)
    enqueue("q", a=np.int32([2, 3]), b=second)
    raises(ValueError, r"op SafeDequeueBlobs #0: field 'data' \(blob 1\) of queue 'q' \(output 1 blob 'y'\): "
           r"record 1 of the 2 to concatenate \(num_records=2\) is " + shown +
           r": concatenated records must be at least 1-d and agree in dtype and in every dim after the first",
           "SafeDequeueBlobs", ["q"], ["x", "y", "st"], num_records=2)
    # nothing was taken: both records come out one by one
    (x, y), _ = safe_dequeue("q", ["x", "y"])
    assert x.tolist() == [1] and y.tobytes() == first.tobytes()
    (x, y), _ = safe_dequeue("q", ["x", "y"])
    assert x.tolist() == [2, 3] and y.tobytes() == np.asarray(second).tobytes()


# ---------------------------------------------------------------- errors
def test_argument_errors():
    raises(ValueError, r"op CreateBlobsQueue #0: argument capacity must be in \[1, 2147483647\], got 0",
           "CreateBlobsQueue", [], ["q"], capacity=0)
    raises(ValueError, r"argument num_blobs must be in \[1, 65536\], got 0", "CreateBlobsQueue", [], ["q"],
           num_blobs=0)
    raises(ValueError, r"argument enforce_unique_name must be 0 or 1, got 2", "CreateBlobsQueue", [], ["q"],
           enforce_unique_name=2)
    raises(ValueError, r"argument field_names has 1 names but num_blobs is 2: give one name per blob of a "
           r"record, or none", "CreateBlobsQueue", [], ["q"], num_blobs=2, field_names=["a"])
    raises(TypeError, r"argument 'capacity'", "CreateBlobsQueue", [], ["q"], capacity="big")
    create()
    raises(ValueError, r"op DequeueBlobs #0: argument timeout_secs must be >= 0, got -1",
           "DequeueBlobs", ["q"], ["x"], timeout_secs=-1.0)
    raises(ValueError, r"op SafeDequeueBlobs #0: argument num_records must be in \[1, 2147483647\], got 0",
           "SafeDequeueBlobs", ["q"], ["x", "st"], num_records=0)
    create("q2", enforce_unique_name=1)  # accepted: the records are not workspace blobs


def test_wrong_record_size_errors(rng):
    create(num_blobs=2)
    feed(a=f32(rng, 2), b=f32(rng, 2), c=f32(rng, 2))
    raises(ValueError, r"op EnqueueBlobs #0: queue 'q' holds records of num_blobs=2 blobs, but the op has 1 "
           r"data inputs", "EnqueueBlobs", ["q", "a"], ["a"])
    raises(ValueError, r"op SafeEnqueueBlobs #0: queue 'q' holds records of num_blobs=2 blobs, but the op "
           r"has 3 data inputs", "SafeEnqueueBlobs", ["q", "a", "b", "c"], ["a", "b", "c", "st"])
    enqueue("q", a=f32(rng, 2), b=f32(rng, 2))
    raises(ValueError, r"op DequeueBlobs #0: queue 'q' holds records of num_blobs=2 blobs, but the op has 1 "
           r"outputs", "DequeueBlobs", ["q"], ["x"])
    raises(ValueError, r"op SafeDequeueBlobs #0: queue 'q' holds records of num_blobs=2 blobs, but the op "
           r"has 3 data outputs", "SafeDequeueBlobs", ["q"], ["x", "y", "z", "st"])
    assert len(dequeue("q", ["x", "y"])) == 2  # the record is still there


def test_arity_and_in_place_errors(rng):
    create()
    feed(a=f32(rng, 2))
    raises(ValueError, r"op EnqueueBlobs #0: output 0 blob 'b' must be input 1 blob 'a' \(the op runs in "
           r"place", "EnqueueBlobs", ["q", "a"], ["b"])
    feed(a2=f32(rng, 2))
    raises(ValueError, r"op EnqueueBlobs #0: has 2 data inputs and 1 outputs: the outputs must be the data "
           r"inputs again \(in place\)$", "EnqueueBlobs", ["q", "a", "a2"], ["a"])
    raises(ValueError, r"op SafeEnqueueBlobs #0: has 2 data inputs and 2 outputs: the outputs must be the "
           r"data inputs again \(in place\), then the status blob",
           "SafeEnqueueBlobs", ["q", "a", "a2"], ["a", "a2"])
    raises(ValueError, r"op EnqueueBlobs #0: expects at least 2 inputs, got 1", "EnqueueBlobs", ["q"], ["q2"])
    raises(ValueError, r"op DequeueBlobs #0: expects 1 inputs, got 2", "DequeueBlobs", ["q", "a"], ["x"])
    raises(ValueError, r"op SafeDequeueBlobs #0: expects at least 2 outputs, got 1",
           "SafeDequeueBlobs", ["q"], ["x"])
    raises(ValueError, r"op CloseBlobsQueue #0: expects 0 outputs, got 1", "CloseBlobsQueue", ["q"], ["x"])


def test_not_a_queue_errors(rng):
    feed(t=f32(rng, 2), a=f32(rng, 2))
    workspace.RunOperatorOnce(op("ConstantFill", [], ["e"], shape=[1]))
    for type_, ins, outs in [("EnqueueBlobs", ["t", "a"], ["a"]), ("DequeueBlobs", ["t"], ["x"]),
                             ("CloseBlobsQueue", ["t"], []), ("SafeEnqueueBlobs", ["t", "a"], ["a", "st"]),
                             ("SafeDequeueBlobs", ["t"], ["x", "st"])]:
        msg = (r"op %s #0: input 0 blob 't' must be a BlobsQueue \(CreateBlobsQueue's output\), but it holds "
               r"a tensor \(2,\) float32" % type_)
        raises(TypeError, msg, type_, ins, outs)
        # refused at net creation too (the blob holds a tensor)
        n = core.Net("nq_" + type_)
        n.Proto().op.extend([op(type_, ins, outs)])
        with pytest.raises(TypeError, match=msg):
            workspace.CreateNet(n)
        usable()
    workspace.RunOperatorOnce(op("CreateDB", [], ["r"], db=__file__, db_type="minidb"))
    raises(TypeError, r"op DequeueBlobs #0: input 0 blob 'r' must be a BlobsQueue \(CreateBlobsQueue's "
           r"output\), but it holds a DBReader", "DequeueBlobs", ["r"], ["x"])
    n = core.Net("never")
    n.ConstantFill([], "fresh", shape=[1])
    workspace.CreateNet(n)  # creates the blob 'fresh' without writing it
    raises(TypeError, r"input 0 blob 'fresh' must be a BlobsQueue \(CreateBlobsQueue's output\), but it "
           r"holds nothing \(it was created but never written\)", "DequeueBlobs", ["fresh"], ["x"])
    # a DBReader blob cannot become a queue
    raises(TypeError, r"op CreateBlobsQueue #0: output 0 blob 'r' holds a DBReader",
           "CreateBlobsQueue", [], ["r"])


def test_blob_content_errors(rng):
    create(num_blobs=2, field_names=["ids", "data"])
    create("q2")
    feed(a=f32(rng, 2))
    n = core.Net("never2")
    n.ConstantFill([], "fresh", shape=[1])
    workspace.CreateNet(n)
    raises(ValueError, r"op EnqueueBlobs #0: input 2 blob 'fresh', field 'data' \(blob 1\) holds no tensor",
           "EnqueueBlobs", ["q", "a", "fresh"], ["a", "fresh"])
    raises(TypeError, r"op EnqueueBlobs #0: input 1 blob 'q2', field 'ids' \(blob 0\) holds a BlobsQueue, "
           r"not a tensor: a record holds tensors", "EnqueueBlobs", ["q", "q2", "a"], ["q2", "a"])
    enqueue("q", a=f32(rng, 2), b=f32(rng, 1))
    raises(TypeError, r"op DequeueBlobs #0: output 1 blob 'q2' holds a BlobsQueue and cannot receive a "
           r"tensor", "DequeueBlobs", ["q"], ["x", "q2"])
    assert len(dequeue("q", ["x", "y"])) == 2  # not taken by the failure


def test_fetch_feed_save_of_a_queue_blob(tmp_path):
    create()
    # FetchBlob describes it, as Caffe2's fetch_blob did for a type without a fetcher
    assert workspace.FetchBlob("q") == b"q, a C++ native class of type BlobsQueue."
    with pytest.raises(TypeError, match=r"FeedBlob 'q': blob holds a BlobsQueue, not a tensor"):
        workspace.FeedBlob("q", np.ones(2, np.float32))
    raises(TypeError, r"op Save #0: input 0 blob 'q' holds a BlobsQueue, not a tensor: only tensors and "
           r"Counters can be saved", "Save", ["q"], [], db=str(tmp_path / "x"), db_type="minidb")
    assert "q" in workspace.Blobs() and workspace.HasBlob("q")
    workspace.ResetWorkspace()  # frees the queue (ASan checks)
    assert not workspace.HasBlob("q")


def test_a_failing_dequeue_in_a_net_stops_it_and_the_workspace_stays_usable(rng):
    net = core.Net("deq_net")
    net.DequeueBlobs("q", ["x"])
    net.Scale("x", "y", scale=2.0)
    create()
    workspace.CreateNet(net)
    with pytest.raises(RuntimeError, match=r"op DequeueBlobs #0: queue 'q' is empty"):
        workspace.RunNet(net)
    usable()
    a = f32(rng, 3)
    enqueue("q", a=a)
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), a * 2)


# ---------------------------------------------------------------- a training-style net
def test_dequeue_one_batch_per_run_into_fc_matches_feeding_directly(rng):
    T, D, H = 6, 4, 3
    batches = [(f32(rng, n, D), rng.randint(0, 5, size=n).astype(np.int32)) for n in [5, 1, 3, 0, 7, 2]]
    w, b = f32(rng, H, D), f32(rng, H)

    model = ModelHelper(name="qm")
    queue = model.param_init_net.CreateBlobsQueue([], "input_queue", capacity=T, num_blobs=2)
    x, labels = model.net.DequeueBlobs(queue, ["x", "labels"])
    assert str(x) == "x" and str(labels) == "labels"
    y = model.net.FC([x, "w", "b"], "y")
    model.net.Copy(labels, "labels_seen")

    fill = core.Net("fill")
    fill.EnqueueBlobs([queue, "in_x", "in_l"], ["in_x", "in_l"])

    feed(w=w, b=b, in_x=batches[0][0], in_l=batches[0][1])
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(fill)
    for bx, bl in batches:
        feed(in_x=bx, in_l=bl)
        workspace.RunNet(fill)
    workspace.CreateNet(model.net)
    got = []
    for _ in range(T):
        workspace.RunNet(model.net)
        got.append((workspace.FetchBlob(str(y)), workspace.FetchBlob("labels_seen")))
    with pytest.raises(RuntimeError, match="queue 'input_queue' is empty"):
        workspace.RunNet(model.net)

    direct = core.Net("direct")
    direct.FC(["x", "w", "b"], "y")
    for (bx, bl), (gy, gl) in zip(batches, got):
        feed(x=bx)
        workspace.RunNetOnce(direct)
        assert gy.tobytes() == workspace.FetchBlob("y").tobytes() and gy.shape == (bx.shape[0], H)
        assert gl.tobytes() == bl.tobytes()


def test_no_gradient_for_the_queue_ops(rng):
    for t in ["CreateBlobsQueue", "EnqueueBlobs", "DequeueBlobs", "CloseBlobsQueue", "SafeEnqueueBlobs",
              "SafeDequeueBlobs"]:
        assert core.GradientRegistry.HasGradient(t)  # registered, as having none
    net = core.Net("g")
    net.CreateBlobsQueue([], "q", num_blobs=1)
    net.EnqueueBlobs(["q", "a"], ["a"])
    x, st = net.SafeDequeueBlobs("q", ["x", "st"])
    loss = net.SumElements([net.FC([x, "w", "b"], "y")], "loss")
    gmap = net.AddGradientOperators([loss])
    types = [o.type for o in net.Proto().op]
    assert types.count("CreateBlobsQueue") == 1 and types.count("EnqueueBlobs") == 1
    assert not any("Queue" in t and t != "CreateBlobsQueue" for t in types)
    assert "w" in gmap and "a" not in gmap and "q" not in gmap
    feed(a=f32(rng, 2, 3), w=f32(rng, 4, 3), b=f32(rng, 4))
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob(str(gmap["w"])),
                               np.ones((2, 4), np.float32).T @ workspace.FetchBlob("a"), rtol=1e-6)


# ---------------------------------------------------------------- step nets
def test_queue_ops_are_refused_in_a_step_net(rng):
    cell = core.Net("qcell")
    x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
    cell.DequeueBlobs("q", ["d"])
    o = cell.Tanh(cell.Sum([x_t, o_prev], "s"), "o")
    cell.AddExternalOutput(o)
    net = core.Net("qrnn")
    rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                      links={o_prev: o}, scope="qrnn", forward_only=True)
    create()
    feed(x=f32(rng, 3, 2, 2), o_init=np.zeros((1, 2, 2), np.float32))
    with pytest.raises(ValueError, match=r"op RecurrentNetwork #0: step op DequeueBlobs #0 of the forward "
                       r"step net cannot run inside a recurrent net: its timesteps run on the RNN executor's "
                       r"worker threads, which would race on the state it changes \(run it in the outer "
                       r"net\)"):
        workspace.CreateNet(net)
    usable()
    # every queue op type carries the flag
    for t in ["CreateBlobsQueue", "EnqueueBlobs", "CloseBlobsQueue", "SafeEnqueueBlobs", "SafeDequeueBlobs",
              "WeightedSampleDequeueBlobs"]:
        cell2 = core.Net("qcell_" + t)
        x_t, o_prev = cell2.AddExternalInputs("x_t", "o_prev")
        cell2.Proto().op.extend([op(t, [], ["zz"])])
        o = cell2.Tanh(cell2.Sum([x_t, o_prev], "s"), "o")
        cell2.AddExternalOutput(o)
        net2 = core.Net("qrnn_" + t)
        rnn.recurrent_net(net2, cell2, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                          links={o_prev: o}, scope="qrnn", forward_only=True)
        with pytest.raises(ValueError, match=r"step op %s #0 of the forward step net cannot run inside" % t):
            workspace.CreateNet(net2)
    # the same cell without the queue op runs
    cell3 = core.Net("okcell")
    x_t, o_prev = cell3.AddExternalInputs("x_t", "o_prev")
    o = cell3.Tanh(cell3.Sum([x_t, o_prev], "s"), "o")
    cell3.AddExternalOutput(o)
    net3 = core.Net("okrnn")
    o_all, _ = rnn.recurrent_net(net3, cell3, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                                 links={o_prev: o}, scope="okrnn", forward_only=True)
    workspace.RunNetOnce(net3)
    assert workspace.FetchBlob(o_all).shape == (3, 2, 2)


def test_queue_ops_are_refused_in_a_backward_step_net(rng):
    cell = core.Net("bcell")
    x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
    o = cell.Tanh(cell.Sum([x_t, o_prev], "s"), "o")
    cell.AddExternalOutput(o)
    net = core.Net("brnn")
    o_all, _ = rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                                 links={o_prev: o}, scope="brnn")
    net.AddGradientOperators([net.SumElements([o_all], "loss")])
    create()
    feed(x=f32(rng, 3, 2, 2), o_init=np.zeros((1, 2, 2), np.float32))
    workspace.RunNetOnce(net)  # runs as built
    grad = [o for o in net.Proto().op if o.type == "RecurrentNetworkGradient"][0]
    bstep = [a for a in grad.arg if a.name == "backward_step_net"][0].n
    n_ops = len(bstep.op)
    bstep.op.extend([op("CloseBlobsQueue", ["q"], [])])
    with pytest.raises(ValueError, match=r"op RecurrentNetworkGradient #\d+: step op CloseBlobsQueue #%d of "
                       r"the backward step net cannot run inside a recurrent net" % n_ops):
        workspace.CreateNet(net)
    usable()



def test_queue_ops_are_refused_in_a_nested_step_net(rng):
    # an inner recurrent net in the outer one's step net: the inner step net is only created when the
    # outer step net is, at the first run; the refusal comes then, and every run after it gives it again
    inner = core.Net("qinner")
    ix, io = inner.AddExternalInputs("ix_t", "io_prev")
    inner.DequeueBlobs("q", ["d"])
    io_next = inner.Tanh(inner.Sum([ix, io], "is"), "io")
    inner.AddExternalOutput(io_next)
    outer = core.Net("qouter_cell")
    x_t, o_prev = outer.AddExternalInputs("ox_t", "oo_prev")
    xt3 = outer.ExpandDims([x_t], "xt3", dims=[0])
    rnn.recurrent_net(outer, inner, inputs=[(ix, xt3)], initial_cell_inputs=[(io, "io_init")],
                      links={io: io_next}, scope="qinner", forward_only=True)
    o = outer.Tanh(outer.Sum([x_t, o_prev], "os"), "oo")
    outer.AddExternalOutput(o)
    net = core.Net("qouter")
    rnn.recurrent_net(net, outer, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                      links={o_prev: o}, scope="qouter", forward_only=True)
    create()
    enqueue("q", a=np.ones((1, 2), np.float32))
    feed(x=f32(rng, 3, 2, 2), o_init=np.zeros((1, 2, 2), np.float32), io_init=np.zeros((1, 2, 2), np.float32))
    workspace.CreateNet(net)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"op RecurrentNetwork #0: creating the forward step net: "
                           r"net 'qouter_cell': op RecurrentNetwork #\d+: step op DequeueBlobs #0 of the "
                           r"forward step net cannot run inside a recurrent net"):
            workspace.RunNet(net.Proto().name)
    usable()
    # the record is still queued: nothing ran
    (d,), st = safe_dequeue("q", ["d"])
    assert int(st.reshape(-1)[0]) == 0 and d.tolist() == [[1.0, 1.0]]

def test_a_long_field_name_is_cut_at_a_character_boundary():
    name = "é" * 100  # 200 bytes of UTF-8: the message keeps 80 bytes, whole characters only
    create(capacity=2, field_names=[name])
    enqueue("q", a=np.ones((1, 2), np.float32))
    enqueue("q", a=np.ones((1, 3), np.float32))
    raises(ValueError, "field '%s...' \\(blob 0\\) of queue 'q'" % ("é" * 40), "SafeDequeueBlobs", ["q"],
           ["x", "st"], num_records=2)
