"""LastNWindowCollector (csrc/ops/collect.c; no gradient, recurrent/_grad_optim.py): the cases of
Caffe2's tests rewritten (dataset_ops_test.py's test_last_n_window_ops, hypothesis_test.py's
test_last_n_windows, layers_test.py's testLastNWindowCollector with MUTEX and NUM_VISITED), a
Python ring buffer as the reference over random batch sizes, dtypes and row shapes, the values and
shapes it refuses (nothing written, the workspace usable), the in-place and arity rules, a recurrent
step net with the executor on and off, AddGradientOperators through it, and its static shapes."""

import numpy as np
import pytest

from recurrent import core, trace, utils, workspace
from recurrent import recurrent as rnn

from op_helpers import I32_MAX, feed, run, usable  # noqa: F401


def op(type_, inputs, outputs, **args):
    return core.CreateOperator(type_, inputs, outputs, **args)


def fetch(*names):
    return [workspace.FetchBlob(n) for n in names]


class Ring:
    """The reference: Caffe2's semantics in plain Python. rows: the buffer (a list of rows), next:
    the cursor, visited: the rows seen."""

    def __init__(self, num):
        self.num, self.rows, self.next, self.visited = num, [], 0, 0

    def collect(self, data):
        self.visited += len(data)
        if len(data) > self.num:
            self.rows, self.next = list(data[-self.num:]), 0
            return
        for row in data:
            if len(self.rows) < self.num:
                self.rows.append(row)
            else:
                self.rows[self.next] = row
            self.next = (self.next + 1) % self.num


# ---------------------------------------------------------------- Caffe2's cases
def test_caffe2_dataset_ops_case():
    """dataset_ops_test.py: a (3, 2) input collected into 7 rows by a plan, 1, then 2, then 3
    iterations (the buffer starts as an empty blob, the cursor 0)."""
    from recurrent import core as c
    x = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    collect = c.Net("collect_net")
    collect.GivenTensorFill([], "input", shape=[3, 2], values=x.ravel().tolist())
    workspace.CreateBlob("output")
    feed(next=np.array(0, np.int32))
    collect.LastNWindowCollector(["output", "next", "input"], ["output", "next"], num_to_collect=7)
    for iters, rows in [(1, [0, 1, 2]), (2, [1, 2, 2, 0, 1, 2, 0]), (3, [2, 0, 1, 2, 2, 0, 1])]:
        plan = c.Plan("collect_data")
        plan.AddStep(c.execution_step("collect_data", [collect], num_iter=iters))
        workspace.RunPlan(plan)
        np.testing.assert_array_equal(workspace.FetchBlob("output"), x[rows])


@pytest.mark.parametrize("seed", range(4))
def test_caffe2_hypothesis_case(seed):
    """hypothesis_test.py: a (5, 2) input, 7 rows kept, two runs: row i % 7 of the buffer holds
    input row i % 5 for i < 10."""
    x = np.random.RandomState(seed).uniform(1, 10, (5, 2)).astype(np.float32)
    feed(input=x, next=np.array(0, np.int32))
    workspace.CreateBlob("output")
    net = core.Net("collect_net")
    net.LastNWindowCollector(["output", "next", "input"], ["output", "next"], num_to_collect=7)
    workspace.CreateNet(net)
    workspace.RunNet(net, num_iter=2)
    want = np.zeros((7, 2), np.float32)
    for i in range(10):
        want[i % 7] = x[i % 5]
    np.testing.assert_array_equal(workspace.FetchBlob("output"), want)
    assert workspace.FetchBlob("next") == 3


@pytest.mark.parametrize("num", range(1, 11))
def test_caffe2_layer_case(num):
    """layers_test.py's LastNWindowCollector layer: the buffer a ConstantFill of shape [0], the
    cursor an int32 () 0, a Mutex, NUM_VISITED 0 (int64 in Caffe2, int32 here); one run keeps the
    last min(5, num) rows of a (5, 2) input, in order."""
    x = np.random.RandomState(num).randn(5, 2).astype(np.float32)
    init = core.Net("init")
    init.ConstantFill([], "last_n", shape=[0])
    init.ConstantFill([], "next", shape=[], value=0, dtype=core.DataType.INT32)
    init.CreateMutex([], "mutex")
    init.ConstantFill([], "num_visited", shape=[], value=0, dtype=core.DataType.INT32)
    workspace.RunNetOnce(init)
    feed(x=x)
    run("LastNWindowCollector", ["last_n", "next", "x", "mutex", "num_visited"],
        ["last_n", "next", "num_visited"], num_to_collect=num)
    last_n, nxt, visited = fetch("last_n", "next", "num_visited")
    np.testing.assert_array_equal(last_n, x[max(0, 5 - num):])
    assert nxt.shape == () and nxt == (0 if num <= 5 else 5)
    assert visited.dtype == np.int32 and visited.shape == () and visited == 5


# ---------------------------------------------------------------- against the reference
@pytest.mark.parametrize("num", [1, 2, 5, 16])
@pytest.mark.parametrize("dtype,row", [(np.float32, ()), (np.float32, (3,)), (np.int32, (2, 2)),
                                       (np.float32, (0,))])
@pytest.mark.parametrize("with_visited", [False, True])
def test_against_a_python_ring_buffer(num, dtype, row, with_visited):
    rng = np.random.RandomState(num * 7 + len(row))
    ring = Ring(num)
    feed(buf=np.zeros(0, np.float32), nx=np.array(0, np.int32))
    ins, outs = ["buf", "nx", "d"], ["buf", "nx"]
    if with_visited:
        run("CreateMutex", [], ["mx"])
        feed(nv=np.array([123], np.int32))  # reset to 0 while the buffer is empty, as Caffe2
        ins, outs = ins + ["mx", "nv"], outs + ["nv"]
    collect = op("LastNWindowCollector", ins, outs, num_to_collect=num)
    seen = 0
    for step in range(25):
        n = int(rng.choice([0, 1, 2, num - 1, num, num + 1, 3 * num])) if step else 0
        data = (rng.randn(n, *row) * 100).astype(dtype)
        seen += n
        feed(d=data)
        workspace.RunOperatorOnce(collect)
        ring.collect(list(data))
        buf, nx = fetch("buf", "nx")
        if not ring.rows:  # nothing collected yet: DATA's empty copy
            assert buf.shape == (0,) + row and buf.dtype == dtype
        else:
            assert buf.dtype == dtype and buf.shape == (len(ring.rows),) + row
            np.testing.assert_array_equal(buf, np.array(ring.rows, dtype).reshape(buf.shape))
            assert nx == ring.next
        if with_visited:
            assert workspace.FetchBlob("nv") == [seen]


def test_buffer_blob_held_by_another_net_run_keeps_growing_in_place():
    """Growth keeps the collected rows when the buffer's storage is reused (room reserved ahead) and
    when it is not (a view of the buffer holds it: the resize copies)."""
    ring = Ring(40)
    feed(buf=np.zeros(0, np.float32), nx=np.array(0, np.int32))
    collect = op("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=40)
    for k in range(30):
        data = np.full((3 if k % 2 else 1, 2), k, np.float32)
        feed(d=data)
        workspace.RunOperatorOnce(collect)
        ring.collect(list(data))
        if k == 7:
            view_rows("buf", "view", 0, len(ring.rows))  # shares the buffer's storage from now on
        np.testing.assert_array_equal(workspace.FetchBlob("buf"), np.array(ring.rows))


def view_rows(src, view, start, count):
    """Makes blob `view` a view of rows [start, start + count) of blob `src` (its storage shared), as a
    recurrent step net's link does."""
    feed(_view_t=np.array([start], np.int32))
    run("rnn_internal_apply_link", ["_view_t", src], [view, src], offset=0, window=count)


@pytest.mark.parametrize("num,rows,cursor,start,count", [
    (3, 3, 1, 0, 3),   # the whole full buffer, the writes wrap around
    (3, 3, 2, 0, 3),
    (5, 5, 3, 1, 3),   # some of its rows
    (5, 5, 4, 2, 3),
    (4, 4, 0, 1, 2),   # no wrap: rows ahead of the cursor
    (6, 3, 3, 0, 3),   # a buffer not full yet: it grows
    (8, 4, 4, 1, 2),
])
def test_data_sharing_the_buffers_storage(num, rows, cursor, start, count):
    """DATA a view of the buffer's own rows: the rows are read as they were before the run (they are
    copied first), not as the ring has just overwritten them."""
    ring = Ring(num)
    ring.collect(list(np.arange(100, 100 + 2 * num, dtype=np.float32).reshape(-1, 2)[:rows]))
    ring.next = cursor
    feed(buf=np.array(ring.rows, np.float32), nx=np.array(cursor, np.int32))
    view_rows("buf", "d", start, count)
    data = workspace.FetchBlob("d")
    np.testing.assert_array_equal(data, np.array(ring.rows[start:start + count]))
    run("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=num)
    ring.collect(list(data))
    np.testing.assert_array_equal(workspace.FetchBlob("buf"), np.array(ring.rows))
    assert workspace.FetchBlob("nx") == ring.next
    usable()


def test_data_by_alias_or_by_name_of_the_buffer():
    """Alias copies here (Caffe2's shared the storage): DATA is the buffer's rows at the Alias. DATA
    named as the buffer is refused (the op updates the buffer in place, DATA is read)."""
    feed(buf=np.array([[0.0], [1.0], [2.0]], np.float32), nx=np.array(1, np.int32))
    run("Alias", ["buf"], ["view"])
    run("LastNWindowCollector", ["buf", "nx", "view"], ["buf", "nx"], num_to_collect=3)
    np.testing.assert_array_equal(workspace.FetchBlob("buf").ravel(), [2, 0, 1])
    with pytest.raises(ValueError, match=r"LastNWindowCollector #0: input 2 and output 0 are the same blob 'buf'"):
        run("LastNWindowCollector", ["buf", "nx", "buf"], ["buf", "nx"], num_to_collect=3)
    np.testing.assert_array_equal(workspace.FetchBlob("buf").ravel(), [2, 0, 1])
    usable()


def test_data_larger_than_the_window_keeps_its_last_rows_in_order():
    feed(buf=np.arange(6, dtype=np.int32).reshape(3, 2), nx=np.array(1, np.int32),
         d=np.arange(100, 120, dtype=np.int32).reshape(10, 2))
    run("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=3)
    np.testing.assert_array_equal(workspace.FetchBlob("buf"), np.arange(114, 120).reshape(3, 2))
    assert workspace.FetchBlob("nx") == 0


def test_empty_data_on_empty_buffer_copies_data_and_leaves_the_cursor():
    workspace.CreateBlob("buf")
    feed(nx=np.array(5, np.int32), d=np.zeros((0, 4, 2), np.int32))
    run("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=3)
    buf = workspace.FetchBlob("buf")
    assert buf.shape == (0, 4, 2) and buf.dtype == np.int32
    assert workspace.FetchBlob("nx") == 5  # not read and not written, as Caffe2


# ---------------------------------------------------------------- refused
def check_refused(exc, match, ins, outs, feeds, **args):
    feed(**feeds)
    before = {k: workspace.FetchBlob(k) for k in feeds if k != "mx"}
    with pytest.raises(exc, match=match):
        run("LastNWindowCollector", ins, outs, **args)
    for k, v in before.items():  # nothing written
        np.testing.assert_array_equal(workspace.FetchBlob(k), v)
    usable()


P = r"op LastNWindowCollector #0: "


@pytest.mark.parametrize("feeds,exc,match", [
    (dict(buf=np.ones((2, 3), np.float32), nx=np.array(2, np.int32), d=np.ones((1, 4), np.float32)), ValueError,
     r"input 0 blob 'buf' \(2, 3\) float32 \(LAST_N, the buffer\) must have rows shaped as those of input 2 "
     r"blob 'd' \(1, 4\) float32 \(DATA\)"),
    (dict(buf=np.ones((2, 3), np.float32), nx=np.array(2, np.int32), d=np.ones((1, 3, 1), np.float32)), ValueError,
     r"input 0 blob 'buf' \(2, 3\) float32 \(LAST_N, the buffer\) must have rows shaped as those of input 2 "
     r"blob 'd' \(1, 3, 1\)"),
    (dict(buf=np.ones((2, 3), np.float32), nx=np.array(2, np.int32), d=np.ones((1, 3), np.int32)), TypeError,
     r"input 0 blob 'buf' \(2, 3\) float32 \(LAST_N, the buffer\) and input 2 blob 'd' \(1, 3\) int32 \(DATA\) "
     r"must have the same dtype"),
    (dict(buf=np.ones((5, 3), np.float32), nx=np.array(0, np.int32), d=np.ones((1, 3), np.float32)), ValueError,
     r"input 0 blob 'buf' \(5, 3\) float32 \(LAST_N, the buffer\) has more rows than num_to_collect = 4"),
    (dict(buf=np.ones((2, 3), np.float32), nx=np.array(1, np.int32), d=np.ones((1, 3), np.float32)), ValueError,
     r"input 1 blob 'nx' \(NEXT, the cursor\) is 1, but input 0 blob 'buf' \(2, 3\) float32 \(LAST_N, the "
     r"buffer\) with num_to_collect = 4 needs it to equal its row count"),
    (dict(buf=np.ones((4, 3), np.float32), nx=np.array(4, np.int32), d=np.ones((1, 3), np.float32)), ValueError,
     r"input 1 blob 'nx' \(NEXT, the cursor\) is 4, .* needs it in \[0, num_to_collect\)"),
    (dict(buf=np.ones((4, 3), np.float32), nx=np.array(-1, np.int32), d=np.ones((0, 3), np.float32)), ValueError,
     r"input 1 blob 'nx' \(NEXT, the cursor\) is -1"),
    (dict(buf=np.ones(0, np.float32), nx=np.array([0], np.int32), d=np.ones((1, 3), np.float32)), ValueError,
     r"input 1 blob 'nx' \(NEXT, the cursor\) must be an int32 scalar of shape \(\), got \(1,\) int32"),
    (dict(buf=np.ones(0, np.float32), nx=np.array(0, np.float32), d=np.ones((1, 3), np.float32)), TypeError,
     r"input 1 blob 'nx' must be int32, got \(\) float32"),
    (dict(buf=np.ones(0, np.float32), nx=np.array(0, np.int32), d=np.float32(3)), ValueError,
     r"input 2 blob 'd' \(DATA\) must have at least 1 dim \(its rows\), got \(\) float32"),
    (dict(buf=np.float32(1), nx=np.array(0, np.int32), d=np.ones((1, 3), np.float32)), ValueError,
     r"input 0 blob 'buf' \(\) float32 \(LAST_N, the buffer\) must have rows shaped as those"),
])
def test_refused_values_and_shapes(feeds, exc, match):
    check_refused(exc, P + match, ["buf", "nx", "d"], ["buf", "nx"], feeds, num_to_collect=4)


def test_data_holding_nothing():
    workspace.CreateBlob("d")
    feed(buf=np.ones(0, np.float32), nx=np.array(0, np.int32))
    with pytest.raises(ValueError, match=P + r"input 2 blob 'd' \(DATA\) holds no tensor"):
        run("LastNWindowCollector", ["buf", "nx", "d"], ["buf", "nx"], num_to_collect=4)
    usable()


def test_num_visited_refused():
    run("CreateMutex", [], ["mx"])
    base = dict(buf=np.ones((2, 3), np.float32), nx=np.array(2, np.int32), d=np.ones((1, 3), np.float32))
    ins, outs = ["buf", "nx", "d", "mx", "nv"], ["buf", "nx", "nv"]
    check_refused(ValueError, P + r"input 4 blob 'nv' \(NUM_VISITED\) is -3; it must be >= 0", ins, outs,
                  dict(base, nv=np.array(-3, np.int32)), num_to_collect=4)
    check_refused(ValueError, P + r"input 4 blob 'nv' \(NUM_VISITED\) 2147483647 \+ 1 rows of input 2 blob 'd' "
                  r"\(1, 3\) float32 overflows int32", ins, outs, dict(base, nv=np.array(I32_MAX, np.int32)),
                  num_to_collect=4)
    check_refused(ValueError, P + r"input 4 blob 'nv' \(NUM_VISITED\) must hold one int32 value, got \(2,\)",
                  ins, outs, dict(base, nv=np.zeros(2, np.int32)), num_to_collect=4)
    check_refused(TypeError, P + r"input 4 blob 'nv' must be int32", ins, outs,
                  dict(base, nv=np.zeros(1, np.float32)), num_to_collect=4)
    # up to INT32_MAX it counts
    feed(**dict(base, nv=np.array(I32_MAX - 1, np.int32)))
    run("LastNWindowCollector", ins, outs, num_to_collect=4)
    assert workspace.FetchBlob("nv") == I32_MAX


def test_mutex_input_must_be_a_mutex():
    base = dict(buf=np.ones(0, np.float32), nx=np.array(0, np.int32), d=np.ones((1, 3), np.float32),
                mx=np.ones(1, np.float32))
    check_refused(TypeError, P + r"input 3 blob 'mx' must be a Mutex \(CreateMutex's output\), but it holds a "
                  r"tensor \(1,\) float32", ["buf", "nx", "d", "mx"], ["buf", "nx"], base, num_to_collect=4)
    run("CreateCounter", [], ["cnt"])
    feed(**{k: v for k, v in base.items() if k != "mx"})
    with pytest.raises(TypeError, match=P + r"input 3 blob 'cnt' must be a Mutex .* but it holds a Counter"):
        run("LastNWindowCollector", ["buf", "nx", "d", "cnt"], ["buf", "nx"], num_to_collect=4)
    usable()


@pytest.mark.parametrize("ins,outs,args,match", [
    (["buf", "nx", "d"], ["buf", "nx"], {}, r"argument 'num_to_collect' must be in \[1, 2147483647\], got -1"),
    (["buf", "nx", "d"], ["buf", "nx"], dict(num_to_collect=0), r"num_to_collect' must be in .*got 0"),
    (["buf", "nx", "d"], ["buf", "nx"], dict(num_to_collect=2 ** 31), r"got 2147483648"),
    (["buf", "nx", "d"], ["b2", "nx"], dict(num_to_collect=2),
     r"input 0 blob 'buf' and output 0 blob 'b2' must be the same blob \(LAST_N is updated in place\)"),
    (["buf", "nx", "d"], ["buf", "n2"], dict(num_to_collect=2), r"\(NEXT is updated in place\)"),
    (["buf", "nx", "d", "mx", "nv"], ["buf", "nx", "n2"], dict(num_to_collect=2),
     r"input 4 blob 'nv' and output 2 blob 'n2' must be the same blob \(NUM_VISITED is updated in place\)"),
    (["buf", "nx", "d", "mx", "nv"], ["buf", "nx"], dict(num_to_collect=2),
     r"NUM_VISITED needs both input 4 and output 2 \(the same blob\): got 5 inputs and 2 outputs"),
    (["buf", "nx", "d", "mx"], ["buf", "nx", "nv"], dict(num_to_collect=2), r"got 4 inputs and 3 outputs"),
    (["buf", "nx", "d"], ["buf", "nx", "nv"], dict(num_to_collect=2), r"got 3 inputs and 3 outputs"),
])
def test_refused_at_creation(ins, outs, args, match):
    run("CreateMutex", [], ["mx"])
    feed(buf=np.ones(0, np.float32), nx=np.array(0, np.int32), d=np.ones((1, 3), np.float32),
         nv=np.zeros(1, np.int32))
    net = core.Net("bad")
    net.LastNWindowCollector(ins, outs, **args)
    with pytest.raises(ValueError, match=r"op LastNWindowCollector #0: (argument |input |NUM_VISITED )?.*" + match):
        workspace.CreateNet(net)
    usable()


@pytest.mark.parametrize("ins,outs", [
    (["buf", "nx", "d"], ["d", "nx"]),      # DATA is not the buffer
    (["buf", "nx", "nx"], ["buf", "nx"]),   # nor the cursor
    (["buf", "nx"], ["buf", "nx"]),         # arity
    (["buf", "nx", "d"], ["buf"]),
    (["buf", "nx", "d"], ["buf", "buf"]),
])
def test_schema_refusals(ins, outs):
    feed(buf=np.ones(0, np.float32), nx=np.array(0, np.int32), d=np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="LastNWindowCollector"):
        run("LastNWindowCollector", ins, outs, num_to_collect=2)
    usable()


# ---------------------------------------------------------------- nets, step nets, gradients
@pytest.mark.parametrize("enable,threads", [(0, 1), (1, 2), (1, 4)])
def test_in_a_recurrent_step_net(enable, threads):
    """Collecting each timestep's hidden state (one row (1, N, D)) inside the step net: the executor orders the
    instances (they write the buffer and the cursor), so it gives the Python ring buffer's rows,
    as the serial loop does."""
    T, N, D, num = 12, 2, 3, 5
    x = np.random.RandomState(1).randn(T, N, D).astype(np.float32)
    step = core.Net("step")
    step.Add(["input_t", "hidden_t_prev"], "hidden_t")
    step.LastNWindowCollector(["buf", "nx", "hidden_t"], ["buf", "nx"], num_to_collect=num)
    step.AddExternalOutput("hidden_t")
    net = core.Net("outer")
    rnn.recurrent_net(net, step, inputs=[("input_t", "x")], initial_cell_inputs=[("hidden_t_prev", "h0")],
                      links={"hidden_t_prev": "hidden_t"}, scope="outer", forward_only=True)
    for o in net.Proto().op:
        if o.type == "RecurrentNetwork":
            o.arg[:] = [a for a in o.arg if a.name != "enable_rnn_executor"]
            o.arg.append(utils.MakeArgument("enable_rnn_executor", enable))
            rnn.set_rnn_executor_config(o, num_threads=threads, min_op_us=0)
    feed(x=x, h0=np.zeros((1, N, D), np.float32), buf=np.zeros(0, np.float32), nx=np.array(0, np.int32))
    workspace.CreateNet(net)
    ring = Ring(num)
    for r in range(2):
        workspace.RunNet(net)
        h = np.zeros((N, D), np.float32)  # each run starts from h0
        for t in range(T):
            h = h + x[t]
            ring.collect([h])  # the step's hidden_t is one row of shape (N, D)
        np.testing.assert_array_equal(workspace.FetchBlob("buf"), np.array(ring.rows))
        assert workspace.FetchBlob("nx") == ring.next
    if enable:
        assert [s["last_run"] for s in trace.executor_status(net)] == ["executor"]


def test_no_gradient_through_it():
    """Caffe2's SHOULD_NOT_DO_GRADIENT: a gradient reaching the buffer is a ValueError naming the op,
    its index and the output (Caffe2 raised too); DATA's own gradient from elsewhere is unaffected."""
    assert core.GradientRegistry.ShouldNotDoGradient("LastNWindowCollector")
    feed(x=np.ones((2, 3), np.float32), buf=np.zeros(0, np.float32), nx=np.array(0, np.int32))
    net = core.Net("g")
    net.Sigmoid(["x"], "s")
    net.LastNWindowCollector(["buf", "nx", "s"], ["buf", "nx"], num_to_collect=3)
    net.SumElements(["buf"], "loss")
    with pytest.raises(ValueError, match=r"^op LastNWindowCollector #1: the gradient of its output 0 'buf' "
                                         r"reaches it, but LastNWindowCollector must not be differentiated"):
        net.AddGradientOperators(["loss"])
    net.SumElements(["s"], "loss2")
    grad_map = net.AddGradientOperators(["loss2"])
    assert "x" in grad_map and "buf" not in grad_map
    types = [o.type for o in net.Proto().op]
    assert "SigmoidGradient" in types
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("loss") == pytest.approx(6 * (1 / (1 + np.exp(-1))), rel=1e-6)


def test_static_shapes_follow_the_runs():
    feed(buf=np.zeros(0, np.float32), nx=np.array(0, np.int32), d=np.ones((3, 2), np.float32))
    net = core.Net("s")
    for _ in range(3):  # 3, 5, 5 rows
        net.LastNWindowCollector(["buf", "nx", "d"], ["buf", "nx"], num_to_collect=5)
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["buf"] == [5, 2] and types["buf"] == core.DataType.FLOAT
    assert shapes["nx"] == [] and types["nx"] == core.DataType.INT32
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("buf").shape == (5, 2) and workspace.FetchBlob("nx") == 4
