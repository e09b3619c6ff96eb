"""WeightedSampleDequeueBlobs (csrc/ops/queue.c; no gradient, recurrent/_grad_queue.py): the sampling
frequencies against the weights (fixed seed, a 6-sigma bound), a weight of 0 never chosen, the same seed
giving the same choices, the record taken from the chosen queue in FIFO order, the table index output
(Caffe2's numbering: an index among the data outputs), the status of a closed empty chosen queue, every
error (the queues, the outputs and the generator left as they were), refused in step nets.
No finite-difference test: the op has no gradient."""

import math

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from test_ops_math import f32, feed, op
from test_ops_queue import create, enqueue, raises, usable

T = "WeightedSampleDequeueBlobs"


def closed_queues(names, num_blobs=2):
    for q in names:
        create(q, num_blobs=num_blobs)
        workspace.RunOperatorOnce(op("CloseBlobsQueue", [q], []))


def choices(net_name, queues, n, **args):
    """n runs of one op over closed empty queues: the chosen queue index of each run (table_idx_blob=0)."""
    net = core.Net(net_name)
    net.Proto().op.extend([op(T, queues, ["idx", "other", "st"], table_idx_blob=0, **args)])
    workspace.CreateNet(net)
    out = np.empty(n, np.int64)
    for r in range(n):
        workspace.RunNet(net)
        out[r] = workspace.FetchBlob("idx")[0]
    assert workspace.FetchBlob("st") == 1
    return out


# ---------------------------------------------------------------- sampling
@pytest.mark.parametrize("weights", [[1.0, 2.0, 0.0, 3.0, 4.0], [0.0, 0.25, 0.75], [5, 0, 0, 1, 0]])
def test_frequencies_match_the_weights(weights):
    """Each count c_k of n draws is Binomial(n, p_k): |c_k - n p_k| <= 6 sigma_k, sigma_k =
    sqrt(n p_k (1 - p_k)), fails with probability below 2e-9 per queue for a correct sampler (normal
    approximation, n p_k >= 1000 here; so no seed is picked to pass), and the bound (at most
    6 sqrt(n / 4) = 424 of n = 20000) is far below the error of a uniform sampler (checked below)."""
    n = 20000
    qs = ["wq%d" % k for k in range(len(weights))]
    closed_queues(qs)
    counts = np.bincount(choices("freq", qs, n, weights=weights, seed=7), minlength=len(weights))
    p = np.asarray(weights, np.float64) / np.sum(weights)
    for k in range(len(weights)):
        sigma = math.sqrt(n * p[k] * (1 - p[k]))
        assert abs(counts[k] - n * p[k]) <= 6 * sigma, (k, counts, n * p)
        if p[k] == 0:
            assert counts[k] == 0  # a weight of 0 is never chosen
    # the bound is tight enough to see a wrong distribution: uniform choice would be far outside it
    worst = max(abs(n / len(p) - n * p[k]) - 6 * math.sqrt(n * p[k] * (1 - p[k])) for k in range(len(p)))
    assert worst > 0


def test_default_weights_are_uniform_and_ints_are_accepted():
    n = 12000
    closed_queues(["u0", "u1", "u2"])
    for args in [{}, dict(weights=[1, 1, 1]), dict(weights=[])]:
        counts = np.bincount(choices("uni", ["u0", "u1", "u2"], n, seed=3, **args), minlength=3)
        sigma = math.sqrt(n / 3 * (2 / 3))
        assert np.all(np.abs(counts - n / 3) <= 6 * sigma), counts


def test_zero_weights_at_both_ends_are_never_chosen():
    """Caffe2's lower_bound chose a leading zero weight on a draw of exactly 0 and its 1.0001 put on the
    very last entry let a trailing zero weight catch rounding; here neither can be chosen."""
    closed_queues(["z0", "z1", "z2", "z3"])
    got = choices("zeros", ["z0", "z1", "z2", "z3"], 3000, weights=[0.0, 1e-30, 3.0, 0.0], seed=11)
    assert set(got) == {2}  # 1e-30 of 3: never drawn in practice, 0 never possible
    got = choices("zeros2", ["z0", "z1"], 500, weights=[0.0, 1.0], seed=1)
    assert set(got) == {1}
    got = choices("zeros3", ["z0", "z1"], 500, weights=[1.0, 0.0], seed=1)
    assert set(got) == {0}


def test_the_same_seed_gives_the_same_choices():
    closed_queues(["s0", "s1", "s2"])
    a = choices("seed_a", ["s0", "s1", "s2"], 300, weights=[1.0, 1.0, 2.0], seed=42)
    b = choices("seed_b", ["s0", "s1", "s2"], 300, weights=[1.0, 1.0, 2.0], seed=42)
    c = choices("seed_c", ["s0", "s1", "s2"], 300, weights=[1.0, 1.0, 2.0], seed=43)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    # without a seed, two ops get different streams
    d = choices("noseed_a", ["s0", "s1", "s2"], 300)
    e = choices("noseed_b", ["s0", "s1", "s2"], 300)
    assert (d != e).any()


# ---------------------------------------------------------------- records, table index, status
def test_records_come_from_the_chosen_queue_in_fifo_order(rng):
    """Field 0 of a record of queue k, number j, is [[k, j]]; field 1 is data overwritten by the index."""
    K, per = 3, 40
    for k in range(K):
        create("rq%d" % k, capacity=per, num_blobs=3)
        for j in range(per):
            enqueue("rq%d" % k, a=np.array([[k, j]], np.float32), b=f32(rng, j % 3, 2),
                    c=np.arange(j, dtype=np.int32))
    net = core.Net("fifo")
    outs = net.WeightedSampleDequeueBlobs(["rq0", "rq1", "rq2"], 4, weights=[1.0, 2.0, 3.0],
                                          table_idx_blob=1, seed=5)
    assert len(outs) == 4
    workspace.CreateNet(net)
    nxt = [0] * K
    for r in range(60):
        workspace.RunNet(net)
        idx = workspace.FetchBlob(str(outs[1]))
        assert idx.dtype == np.int32 and idx.shape == (1,)  # as Caffe2: Output(i, {1}, int32)
        k = int(idx[0])
        np.testing.assert_array_equal(workspace.FetchBlob(str(outs[0])), [[k, nxt[k]]])
        np.testing.assert_array_equal(workspace.FetchBlob(str(outs[2])), np.arange(nxt[k], dtype=np.int32))
        st = workspace.FetchBlob(str(outs[3]))
        assert st.dtype == np.int32 and st.shape == () and st == 0
        nxt[k] += 1
    assert sum(nxt) == 60 and nxt[2] > nxt[0]


def test_without_table_idx_every_data_output_is_the_record():
    create("nq", num_blobs=2, capacity=2)
    for v in (1.5, 2.5):
        enqueue("nq", a=np.array([v], np.float32), b=np.array([7], np.int32))
    for v, ti in ((1.5, -1), (2.5, -3)):  # any negative table_idx_blob: none (as Caffe2)
        workspace.RunOperatorOnce(op(T, ["nq"], ["x", "y", "st"], table_idx_blob=ti))
        assert workspace.FetchBlob("x").tolist() == [v] and workspace.FetchBlob("y").tolist() == [7]
        assert workspace.FetchBlob("st") == 0


def test_closed_queue_gives_its_records_then_status_1_leaving_the_data_outputs():
    create("cq", num_blobs=2, capacity=2)
    enqueue("cq", a=np.array([3.0], np.float32), b=np.array([4], np.int32))
    workspace.RunOperatorOnce(op("CloseBlobsQueue", ["cq"], []))
    feed(x=np.zeros(2, np.float32), y=np.zeros(3, np.int32))
    workspace.RunOperatorOnce(op(T, ["cq"], ["x", "y", "st"]))
    assert workspace.FetchBlob("x").tolist() == [3.0] and workspace.FetchBlob("st") == 0
    workspace.RunOperatorOnce(op(T, ["cq"], ["x", "y", "st"]))
    assert workspace.FetchBlob("st") == 1  # Caffe2: status true, the data blobs untouched
    assert workspace.FetchBlob("x").tolist() == [3.0] and workspace.FetchBlob("y").tolist() == [4]
    # the table index is still written (as Caffe2), over data output 1
    workspace.RunOperatorOnce(op(T, ["cq"], ["x", "y", "st"], table_idx_blob=1))
    assert workspace.FetchBlob("st") == 1 and workspace.FetchBlob("y").tolist() == [0]
    assert workspace.FetchBlob("x").tolist() == [3.0]


def test_as_caffe2s_test_builds_it(rng):
    """queue_ops_test's form: net.WeightedSampleDequeueBlobs(queues, num_blobs + 1, weights=<array>,
    table_idx_blob=<numpy int>); the status is the last output."""
    qs = ["cq0", "cq1"]
    for q in qs:
        create(q, num_blobs=2, capacity=4)
        enqueue(q, a=f32(rng, 2), b=f32(rng, 1))
    net = core.Net("c2form")
    blobs = net.WeightedSampleDequeueBlobs(qs, 3, weights=np.array([0.3, 0.6]),
                                           table_idx_blob=np.random.RandomState(0).randint(0, 2, 1)[0])
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob(str(blobs[-1])) == 0


# ---------------------------------------------------------------- errors
def test_argument_errors():
    for q in ("e0", "e1"):
        create(q, num_blobs=1)
    V = ValueError
    ins, outs = ["e0", "e1"], ["x", "st"]
    pre = "op WeightedSampleDequeueBlobs #0: "
    raises(V, pre + r"argument weights has 3 values but the op has 2 input queues: give one weight per "
           r"queue, or none \(all 1\)", T, ins, outs, weights=[1.0, 2.0, 3.0])
    raises(V, pre + r"argument weights: weight 1 \(of input queue 'e1'\) is -1: every weight must be finite "
           r"and >= 0", T, ins, outs, weights=[1.0, -1.0])
    raises(V, r"weight 0 \(of input queue 'e0'\) is nan", T, ins, outs, weights=[float("nan"), 1.0])
    raises(V, r"weight 1 \(of input queue 'e1'\) is inf", T, ins, outs, weights=[1.0, float("inf")])
    raises(V, pre + r"argument weights: their sum is 0: it must be positive and finite in float32", T, ins,
           outs, weights=[0.0, 0.0])
    raises(V, r"their sum is inf", T, ins, outs, weights=[3e38, 3e38])
    raises(TypeError, pre + r"argument weights must be a list of 2 numbers \(one per input queue\)", T, ins,
           outs, weights=["a", "b"])
    raises(V, pre + r"argument table_idx_blob is 1 but the op has 1 data outputs \(the last of its 2 outputs "
           r"is the status\): it must name one of outputs 0..0 \(or be -1, none\)", T, ins, outs,
           table_idx_blob=1)
    raises(V, pre + r"expects at least 2 outputs, got 1", T, ins, ["x"])


def test_queue_and_output_errors(rng):
    create("f0", num_blobs=1)
    create("f2", num_blobs=2)
    feed(t=f32(rng, 2))
    raises(TypeError, r"op WeightedSampleDequeueBlobs #0: input 1 blob 't' must be a BlobsQueue "
           r"\(CreateBlobsQueue's output\), but it holds a tensor \(2,\) float32", T, ["f0", "t"],
           ["x", "st"])
    raises(ValueError, r"op WeightedSampleDequeueBlobs #0: input 1 queue 'f2' holds records of num_blobs=2 "
           r"blobs, but the op has 1 data outputs \(its last output is the status\): every queue it may "
           r"choose must hold records of 1 blobs", T, ["f0", "f2"], ["x", "st"], weights=[1.0, 0.0])
    raises(TypeError, r"output 0 blob 'f2' holds a BlobsQueue and cannot receive a tensor", T, ["f0"],
           ["f2", "st"])
    # at net creation too, when the inputs hold tensors
    net = core.Net("bad_in")
    net.Proto().op.extend([op(T, ["t", "t"], ["x", "st"])])
    with pytest.raises(TypeError, match=r"input 0 blob 't' must be a BlobsQueue"):
        workspace.CreateNet(net)
    usable()


def test_empty_open_chosen_queue_raises_and_leaves_queues_outputs_and_generator(rng):
    closed_queues(["g0", "g1"])
    d = choices("gen_check", ["g0", "g1"], 8, seed=9)  # the choices of a fresh op with this seed
    assert len(set(d[:4])) == 2  # so a draw kept by a failed run would show below
    c = int(d[0])
    create("o0", num_blobs=2)
    create("o1", num_blobs=2)
    enqueue("o%d" % (1 - c), a=np.array([7.0], np.float32), b=np.array([7], np.int32))  # the other queue
    feed(x=np.array([9.0], np.float32), y=np.array([8], np.int32), st=np.array(5, np.int32))
    net = core.Net("open_empty")
    net.Proto().op.extend([op(T, ["o0", "o1"], ["x", "y", "st"], table_idx_blob=1, seed=9)])
    workspace.CreateNet(net)
    for _ in range(4):  # every failed run keeps no draw: the same queue each time
        with pytest.raises(RuntimeError, match=r"op WeightedSampleDequeueBlobs #0: input %d queue 'o%d' "
                           r"\(chosen at random\) is empty: the op would wait forever: nothing can enqueue "
                           r"while this net runs \(a workspace runs one net at a time; Caffe2 blocked\)"
                           % (c, c)):
            workspace.RunNet(net)
        assert workspace.FetchBlob("x").tolist() == [9.0] and workspace.FetchBlob("y").tolist() == [8]
        assert workspace.FetchBlob("st") == 5
    usable()
    enqueue("o%d" % c, a=np.array([1.0], np.float32), b=np.array([1], np.int32))
    workspace.RunNet(net)
    assert workspace.FetchBlob("x").tolist() == [1.0] and workspace.FetchBlob("y").tolist() == [c]
    assert workspace.FetchBlob("st") == 0
    # then the op goes on with the stream's next draws; the other queue's record is still there
    left = {1 - c: 7.0}
    r = 1
    while left:
        k = int(d[r])
        if k in left:
            workspace.RunNet(net)
            assert workspace.FetchBlob("x").tolist() == [left.pop(k)]
            assert workspace.FetchBlob("y").tolist() == [k]
            r += 1
        else:
            with pytest.raises(RuntimeError, match=r"input %d queue 'o%d' \(chosen at random\)" % (k, k)):
                workspace.RunNet(net)
            enqueue("o%d" % k, a=np.array([3.0], np.float32), b=np.array([3], np.int32))
            left[k] = 3.0


def test_no_gradient():
    assert core.GradientRegistry.HasGradient(T)  # registered, as having none
    create("gq", num_blobs=1)
    enqueue("gq", a=np.ones((2, 3), np.float32))
    net = core.Net("wsd_grad")
    x, st = net.WeightedSampleDequeueBlobs(["gq"], ["x", "st"])
    loss = net.SumElements([net.FC([x, "w", "b"], "y")], "loss")
    gmap = net.AddGradientOperators([loss])
    assert [o.type for o in net.Proto().op].count(T) == 1
    assert "w" in gmap and "x" in gmap and "gq" not in gmap


def test_refused_in_a_step_net(rng):
    cell = core.Net("wcell")
    x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
    cell.Proto().op.extend([op(T, ["q"], ["d", "dst"])])
    o = cell.Tanh(cell.Sum([x_t, o_prev], "s"), "o")
    cell.AddExternalOutput(o)
    net = core.Net("wrnn")
    rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                      links={o_prev: o}, scope="wrnn", forward_only=True)
    create()
    feed(x=f32(rng, 3, 2, 2), o_init=np.zeros((1, 2, 2), np.float32))
    with pytest.raises(ValueError, match=r"op RecurrentNetwork #0: step op WeightedSampleDequeueBlobs #0 of "
                       r"the forward step net cannot run inside a recurrent net"):
        workspace.CreateNet(net)
    usable()
