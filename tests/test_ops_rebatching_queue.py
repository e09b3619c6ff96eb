"""Rebatching queues (csrc/ops/queue.c: CreateRebatchingQueue, EnqueueRebatchingQueue,
DequeueRebatchingQueue, CloseRebatchingQueue; no gradients, recurrent/_grad_queue.py): the elements
against a NumPy model of the FIFO (single elements and rows of batches, stacked along a new first
dim), capacity, close, every error (where Caffe2 would have waited: raised at once, nothing taken or
added), the workspace and the queue usable after each, the ops refused in step nets. No
finite-difference test: the ops have no gradient."""

import collections

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from test_ops_math import f32, feed, op
from test_ops_queue import raises


def create(name="q", **args):
    workspace.RunOperatorOnce(op("CreateRebatchingQueue", [], [name], **args))


def enqueue(q, batch=False, **blobs):
    feed(**blobs)
    workspace.RunOperatorOnce(op("EnqueueRebatchingQueue", [q] + list(blobs), [], enqueue_batch=int(batch)))


def dequeue(q, outs, **args):
    workspace.RunOperatorOnce(op("DequeueRebatchingQueue", [q], outs, **args))
    return [workspace.FetchBlob(o) for o in outs]


def test_against_a_fifo_model(rng):
    """Random enqueues (one element, or a batch split into rows) and dequeues of 1-4 elements, checked
    bitwise against a deque of NumPy elements; closing lets the last dequeue take fewer."""
    create(capacity=40, num_blobs=2)
    model = collections.deque()
    for step in range(60):
        if rng.rand() < 0.5 and len(model) < 30:
            if rng.rand() < 0.5:
                a, b = f32(rng, 3, 2), rng.randint(-9, 9, size=(4,)).astype(np.int32)
                enqueue("q", a=a, b=b)
                model.append((a, b))
            else:
                n = rng.randint(0, 5)
                a, b = f32(rng, n, 3, 2), rng.randint(-9, 9, size=(n, 4)).astype(np.int32)
                enqueue("q", batch=True, a=a, b=b)
                model.extend(zip(a, b))
        elif model:
            k = rng.randint(1, min(4, len(model)) + 1)
            x, y = dequeue("q", ["x", "y"], num_elements=k)
            taken = [model.popleft() for _ in range(k)]
            assert x.dtype == np.float32 and y.dtype == np.int32
            np.testing.assert_array_equal(x, np.stack([t[0] for t in taken]))
            np.testing.assert_array_equal(y, np.stack([t[1] for t in taken]))
    workspace.RunOperatorOnce(op("CloseRebatchingQueue", ["q"], []))
    while model:
        x, y = dequeue("q", ["x", "y"], num_elements=5)
        taken = [model.popleft() for _ in range(min(5, len(model)))]
        np.testing.assert_array_equal(x, np.stack([t[0] for t in taken]))
        np.testing.assert_array_equal(y, np.stack([t[1] for t in taken]))
    raises(RuntimeError, r"op DequeueRebatchingQueue #0: queue 'q' is closed and empty: no element will come",
           "DequeueRebatchingQueue", ["q"], ["x", "y"])


def test_shapes_of_elements():
    """A 0-d element stacks to (k,); a batch of 1-d inputs gives 0-d elements; one element dequeued
    still gets the new first dim (as Caffe2's concat)."""
    create(capacity=5)
    enqueue("q", a=np.float32(7))
    enqueue("q", a=np.float32(8))
    np.testing.assert_array_equal(dequeue("q", ["x"], num_elements=2)[0], [7, 8])
    enqueue("q", batch=True, a=np.array([1, 2, 3], np.float32))
    (x,) = dequeue("q", ["x"])
    assert x.shape == (1,) and x.tolist() == [1]
    np.testing.assert_array_equal(dequeue("q", ["x"], num_elements=2)[0], [2, 3])
    enqueue("q", a=np.zeros((2, 0), np.float32))
    enqueue("q", a=np.zeros((2, 0), np.float32))
    assert dequeue("q", ["x"], num_elements=2)[0].shape == (2, 2, 0)


def test_copies_and_in_place_reuse():
    """Enqueued elements are copies: later writes to the source blobs do not change them."""
    create(capacity=3)
    enqueue("q", a=np.array([1, 2], np.float32))
    feed(a=np.array([5, 6], np.float32))
    np.testing.assert_array_equal(dequeue("q", ["a"])[0], [[1, 2]])


def test_errors_leave_the_queue_as_it_was():
    create(capacity=3, num_blobs=2)
    enqueue("q", a=np.ones(2, np.float32), b=np.ones(1, np.int32))
    feed(a=np.ones((3, 2), np.float32), b=np.ones((3, 1), np.int32), c=np.ones((2, 1), np.int32),
         v=np.float32(1))
    raises(RuntimeError, r"queue 'q' holds 1 of 3 elements and the op adds 3: the op would wait forever for room",
           "EnqueueRebatchingQueue", ["q", "a", "b"], [], enqueue_batch=1)
    raises(ValueError, r"enqueue_batch=1 splits the inputs along their first dim into elements: every input must "
           r"have one first dim, but input 1 blob 'a' is \(3, 2\) float32 and input 2 blob 'c' is \(2, 1\) int32",
           "EnqueueRebatchingQueue", ["q", "a", "c"], [], enqueue_batch=1)
    raises(ValueError, r"enqueue_batch=1 splits the inputs along their first dim into elements, but input 2 blob "
           r"'v' is \(\) float32, which has none", "EnqueueRebatchingQueue", ["q", "a", "v"], [], enqueue_batch=1)
    raises(ValueError, r"queue 'q' holds records of num_blobs=2 blobs, but the op has 1 data inputs",
           "EnqueueRebatchingQueue", ["q", "a"], [])
    raises(ValueError, r"queue 'q' holds records of num_blobs=2 blobs, but the op has 1 outputs",
           "DequeueRebatchingQueue", ["q"], ["x"])
    raises(ValueError, r"argument enqueue_batch must be 0 or 1, got 2", "EnqueueRebatchingQueue", ["q", "a", "b"],
           [], enqueue_batch=2)
    raises(ValueError, r"argument num_elements must be in \[1, 2147483647\], got 0", "DequeueRebatchingQueue",
           ["q"], ["x", "y"], num_elements=0)
    raises(RuntimeError, r"queue 'q' holds 1 elements and num_elements is 2: the op would wait forever for the rest",
           "DequeueRebatchingQueue", ["q"], ["x", "y"], num_elements=2)
    enqueue("q", a=np.ones(3, np.float32), b=np.ones(1, np.int32))
    raises(ValueError, r"blob 0 of queue 'q' \(output 0 blob 'x'\): element 1 of the 2 to stack is \(3,\) float32, "
           r"element 0 is \(2,\) float32: stacked elements must agree in dtype and dims", "DequeueRebatchingQueue",
           ["q"], ["x", "y"], num_elements=2)
    x, y = dequeue("q", ["x", "y"])  # nothing was taken or added by the failures
    assert x.tolist() == [[1, 1]] and y.tolist() == [[1]]
    workspace.RunOperatorOnce(op("CloseRebatchingQueue", ["q"], []))
    raises(RuntimeError, r"queue 'q' is closed: no element can be added", "EnqueueRebatchingQueue", ["q", "a", "b"],
           [], enqueue_batch=1)
    assert dequeue("q", ["x", "y"])[0].tolist() == [[1, 1, 1]]
    create("q", capacity=2, num_blobs=2)  # run again: a new, empty, open queue
    enqueue("q", a=np.ones(2, np.float32), b=np.ones(1, np.int32))
    assert dequeue("q", ["x", "y"])[1].tolist() == [[1]]


def test_the_queue_kinds_do_not_mix():
    create("rq")
    workspace.RunOperatorOnce(op("CreateBlobsQueue", [], ["bq"]))
    feed(a=np.ones(2, np.float32))
    raises(TypeError, r"input 0 blob 'bq' must be a RebatchingQueue \(CreateRebatchingQueue's output\), but it "
           r"holds a BlobsQueue", "EnqueueRebatchingQueue", ["bq", "a"], [])
    raises(TypeError, r"input 0 blob 'rq' must be a BlobsQueue \(CreateBlobsQueue's output\), but it holds a "
           r"RebatchingQueue", "EnqueueBlobs", ["rq", "a"], ["a"])
    raises(TypeError, r"input 0 blob 'a' must be a RebatchingQueue", "CloseRebatchingQueue", ["a"], [])
    raises(TypeError, r"output 0 blob 'bq' holds a BlobsQueue", "CreateRebatchingQueue", [], ["bq"])
    assert workspace.FetchBlob("rq") == b"rq, a C++ native class of type RebatchingQueue."
    with pytest.raises(TypeError, match="holds a RebatchingQueue, not a tensor"):
        workspace.FeedBlob("rq", np.ones(1, np.float32))


def test_net_creation_check_and_no_gradient():
    feed(q=np.ones(2, np.float32), a=np.ones(2, np.float32))
    net = core.Net("rq_tensor")
    net.EnqueueRebatchingQueue(["q", "a"], [])
    with pytest.raises(TypeError, match=r"op EnqueueRebatchingQueue #0: input 0 blob 'q' must be a RebatchingQueue"):
        workspace.CreateNet(net)
    model = core.Net("rq_model")
    init = core.Net("rq_init")
    q = init.CreateRebatchingQueue([], "rq", capacity=4, num_blobs=1)
    x = model.DequeueRebatchingQueue([q], ["x"], num_elements=2)
    y = model.Scale(x, "y", scale=2.0)
    model.AddGradientOperators([model.SumElements(y, "loss")])
    assert [o.type for o in model.Proto().op].count("DequeueRebatchingQueue") == 1
    assert not any(o.type.startswith("DequeueRebatchingQueueGradient") for o in model.Proto().op)
    workspace.RunNetOnce(init)
    enqueue("rq", batch=True, src=np.array([[1, 2], [3, 4]], np.float32))
    workspace.RunNetOnce(model)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [[2, 4], [6, 8]])


def test_refused_in_a_step_net():
    cell = core.Net("rq_cell")
    cell.EnqueueRebatchingQueue(["q", "x_t"], [])
    cell.Copy("x_t", "h")
    net = core.Net("rq_outer")
    rnn.recurrent_net(net=net, cell_net=cell, inputs=[("x_t", "x")], initial_cell_inputs=[("h_prev", "h0")],
                      links={"h_prev": "h"}, timestep="t", scope="r", forward_only=True)
    create("q")
    feed(x=np.ones((3, 2, 4), np.float32), h0=np.zeros((1, 2, 4), np.float32))
    with pytest.raises(ValueError, match=r"step op EnqueueRebatchingQueue #0 of the forward step net cannot run "
                                         r"inside a recurrent net"):
        workspace.RunNetOnce(net)
