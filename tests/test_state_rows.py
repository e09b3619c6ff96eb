"""A forward RecurrentNetwork zeroes the T rows of each state after its initial
value unless its step ops certainly write every element of every row before
anything reads it (find_state_writers in csrc/rnn/recurrent_network.c). These
tests run each net twice, the first time with other inputs, so a row the second
run reads before writing holds the first run's values unless it was zeroed, and
compare the second run with a NumPy reference. ``get_flag("states_unzeroed")``
counts the states left to their writer."""

import numpy as np
import pytest

from recurrent import _C, core, workspace
from recurrent import recurrent as rnn
from recurrent import rnn_cell
from recurrent.model_helper import ModelHelper

T, N, D = 6, 3, 4


def unzeroed():
    return _C.get_flag("states_unzeroed")


def build(cell, links, init_rows=1, name="rows", executor=1):
    """RecurrentNetwork(x, s_init) -> s_all (the state's rows after the initial
    ones), cell reading x_t; links: (internal, offset, window) on s_states."""
    net = core.Net(name)
    step = cell.Proto()
    step.type = "simple"
    op = core.CreateOperator(
        "RecurrentNetwork", ["x", "s_init"], ["s_all", "step_ws"],
        step_net=step, recurrent_states=["s_states"], initial_recurrent_state_ids=[1],
        link_internal=[l[0] for l in links] + ["x_t"], link_external=["s_states"] * len(links) + ["x"],
        link_offset=[l[1] for l in links] + [0], link_window=[l[2] for l in links] + [1],
        alias_src=["s_states"], alias_dst=["s_all"], alias_offset=[init_rows], timestep="timestep",
        enable_rnn_executor=executor)
    if executor:
        rnn.set_rnn_executor_config(op, min_op_us=0)
    net.Proto().op.append(op)
    return net


def run_twice(net, init_rows=1, seed=0):
    """Runs net on other inputs, then on (x, s0); returns (s_all, x, s0, states
    left unzeroed per run)."""
    rng = np.random.default_rng(seed)
    workspace.FeedBlob("x", rng.uniform(50, 60, (T, N, D)).astype(np.float32))
    workspace.FeedBlob("s_init", rng.uniform(50, 60, (init_rows, N, D)).astype(np.float32))
    workspace.CreateNet(net, overwrite=True)
    workspace.RunNet(net.Name())
    x = rng.uniform(-1, 1, (T, N, D)).astype(np.float32)
    s0 = rng.uniform(-1, 1, (init_rows, N, D)).astype(np.float32)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("s_init", s0)
    before = unzeroed()
    workspace.RunNet(net.Name())
    return workspace.FetchBlob("s_all"), x, s0, unzeroed() - before


def cell_net(name, inputs=("x_t", "prev")):
    cell = core.Net(name)
    cell.AddExternalInputs(*inputs)
    return cell


def check_running_sum(cell, executor, want_unzeroed, links=(("prev", 0, 1), ("s_t", 1, 1))):
    """Builds the net around cell and runs it twice: the second run's s_all
    must be the running sum s0 + x_0 + ... + x_t (every cell below computes
    s_t = x_t + s_{t-1} when the rows it reads before they are written are
    zero), with want_unzeroed states left to their writer."""
    net = build(cell, list(links), executor=executor)
    s_all, x, s0, n = run_twice(net)
    assert n == want_unzeroed
    np.testing.assert_allclose(s_all, np.cumsum(x, axis=0) + s0, rtol=1e-5, atol=1e-5)


@pytest.fixture(params=[0, 1], ids=["serial", "executor"])
def executor(request):
    return request.param


def test_written_rows_are_not_zeroed(executor):
    """s_t = x_t + s_{t-1}: Sum writes every row, so nothing is zeroed."""
    cell = cell_net("c_sum")
    cell.AddExternalOutput(cell.Sum(["x_t", "prev"], "s_t"))
    check_running_sum(cell, executor, 1)


def test_writer_reading_its_row_gets_zeros(executor):
    """Sum(x_t, s_t) -> s_t reads the row it writes (in place) before any op
    wrote it: the row must be zero, not the last run's value."""
    cell = cell_net("c_inplace")
    cell.Sum(["x_t", "s_t"], "s_t")
    cell.AddExternalOutput(cell.Sum(["s_t", "prev"], "s_t"))
    check_running_sum(cell, executor, 0)


def test_reader_before_writer_gets_zeros(executor):
    """Copy(s_t) -> peek before the op writing s_t: peek must be zeros."""
    cell = cell_net("c_peek")
    cell.Copy(["s_t"], "peek")
    cell.AddExternalOutput(cell.Sum(["x_t", "prev", "peek"], "s_t"))
    check_running_sum(cell, executor, 0)


def test_window_over_the_written_row_gets_zeros(executor):
    """A window of 2 rows at offset 0 reads row t + 1 before Sum writes it."""
    cell = cell_net("c_win", ("x_t", "win"))
    w0, w1 = cell.Split(["win"], ["w0", "w1"], axis=0)
    cell.AddExternalOutput(cell.Sum(["x_t", w0, w1], "s_t"))
    check_running_sum(cell, executor, 0, links=(("win", 0, 2), ("s_t", 1, 1)))


def test_writer_behind_the_initial_rows_leaves_a_zero_row(executor):
    """Two initial rows, but the step writes at offset 1: rows 1..T are
    written (row 1 over the second initial row) and row T + 1 never is, so it
    stays zero."""
    cell = cell_net("c_off")
    cell.AddExternalOutput(cell.Sum(["x_t", "prev"], "s_t"))
    net = build(cell, [("prev", 0, 1), ("s_t", 1, 1)], init_rows=2, executor=executor)
    s_all, x, s0, n = run_twice(net, init_rows=2)
    assert n == 0
    want = np.cumsum(x, axis=0) + s0[0]
    np.testing.assert_allclose(s_all[:T - 1], want[1:], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(s_all[T - 1], np.zeros((N, D), np.float32))


def test_two_initial_rows_written_at_offset_two(executor):
    """s_t = x_t + s_{t-2}: two initial rows, the writer at offset 2, the
    reader at offset 0: every row written, nothing zeroed."""
    cell = cell_net("c_two")
    cell.AddExternalOutput(cell.Sum(["x_t", "prev"], "s_t"))
    net = build(cell, [("prev", 0, 1), ("s_t", 2, 1)], init_rows=2, executor=executor)
    s_all, x, s0, n = run_twice(net, init_rows=2)
    assert n == 1
    rows = list(s0.astype(np.float64))
    for t in range(T):
        rows.append(x[t] + rows[t])
    np.testing.assert_allclose(s_all, np.array(rows[2:]), rtol=1e-5, atol=1e-5)


def test_writer_of_an_unlisted_type_is_zeroed(executor):
    """Only op types known to write every element leave the rows unzeroed."""
    cell = cell_net("c_resize")
    cell.ResizeLike(["prev", "prev"], "s_t")
    cell.AddExternalOutput(cell.Sum(["s_t", "x_t"], "s_t"))
    check_running_sum(cell, executor, 0)


def test_step_naming_the_state_is_zeroed(executor):
    """A step op that names the state blob itself could read any of its rows."""
    cell = cell_net("c_named")
    cell.Copy(["s_states"], "whole")
    cell.AddExternalOutput(cell.Sum(["x_t", "prev"], "s_t"))
    check_running_sum(cell, executor, 0)


def test_step_naming_an_alias_of_the_state_is_zeroed(executor):
    """s_all, the alias of the state's rows, is a view of the state after a
    run: a step op reading it reads the state."""
    cell = cell_net("c_alias")
    cell.Copy(["s_all"], "whole")
    cell.AddExternalOutput(cell.Sum(["x_t", "prev"], "s_t"))
    workspace.FeedBlob("s_all", np.zeros((T, N, D), np.float32))  # exists when the step net is made
    check_running_sum(cell, executor, 0)


def test_step_reading_an_alias_of_the_state_gets_the_serial_bits():
    """A step op that reads s_all (an alias of the state's rows, looked up in the outer workspace)
    and uses it: the executor must order it against every write of the state's rows, as the
    serial run does (the first run's s_all is a blob of its own; from the second on it is a view
    of the state, and the executor's graph is rebuilt for it)."""
    def run(executor, threads, seed):
        workspace.ResetWorkspace()
        cell = cell_net("c_alias_use")
        cell.Copy(["s_all"], "whole")
        cell.ReduceFrontSum(["whole"], "r")
        cell.ExpandDims(["r"], "r1", dims=[0])
        cell.AddExternalOutput(cell.Sum(["x_t", "prev", "r1"], "s_t"))
        workspace.FeedBlob("s_all", np.zeros((T, N, D), np.float32))
        net = build(cell, [("prev", 0, 1), ("s_t", 1, 1)], executor=executor)
        if executor:
            rnn.set_rnn_executor_config(net.Proto().op[0], min_op_us=0, num_threads=threads)
        out = [run_twice(net, seed=seed)[0].copy()]
        workspace.RunNet(net.Name())  # a third run on the same graph
        return out + [workspace.FetchBlob("s_all")]

    for seed in range(40):
        want = run(0, 1, seed)
        for threads in (2, 4):
            got = run(1, threads, seed)
            for a, b in zip(want, got):
                assert np.array_equal(a, b), (seed, threads)


@pytest.mark.parametrize("forward_only", [True, False], ids=["inference", "training"])
def test_lstm_rows_match_a_fresh_workspace(forward_only):
    """A 2-layer LSTM leaves its 4 states to LSTMUnit; a run after a run on
    other inputs gives the same bits (outputs and gradients) as the same net
    in a fresh workspace."""
    H, L = 5, 2
    model = ModelHelper(name="lstm_rows_%d" % forward_only)
    inits = [n for i in range(L) for n in ("h0_%d" % i, "c0_%d" % i)]
    res = rnn_cell.LSTM(model, "seq", None, inits, D, [H] * L, scope="rows", forward_only=forward_only)
    out = str(res[0])
    want = [out]
    if not forward_only:
        gmap = model.net.AddGradientOperators({out: out + "_g"})
        want += sorted(str(v) for k, v in gmap.items() if v is not None and str(k) != out)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(model.param_init_net)
    params = {str(p): workspace.FetchBlob(str(p)).copy() for p in model.params}
    rng = np.random.default_rng(3)

    def inputs(scale):
        d = {"seq": rng.uniform(-scale, scale, (T, N, D)), out + "_g": rng.uniform(-1, 1, (T, N, H))}
        d.update({n: rng.uniform(-scale, scale, (1, N, H)) for n in inits})
        return {k: v.astype(np.float32) for k, v in d.items()}

    def run(feed, create):
        for k, v in feed.items():
            workspace.FeedBlob(k, v)
        if create:  # the second run is the same op's
            workspace.CreateNet(model.net, overwrite=True)
        workspace.RunNet(model.net.Name())
        return {b: workspace.FetchBlob(b).copy() for b in want}

    base = unzeroed()
    run(inputs(30.0), True)
    feed = inputs(1.0)
    second = run(feed, False)
    assert unzeroed() - base == 2 * 2 * L  # h and c of each layer, two runs
    workspace.ResetWorkspace()
    for k, v in params.items():
        workspace.FeedBlob(k, v)
    fresh = run(feed, True)
    for b in want:
        np.testing.assert_array_equal(second[b], fresh[b], err_msg=b)
