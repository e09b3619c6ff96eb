"""Print (csrc/ops/print.c): Caffe2's PrintOp / TensorPrinter text for float32 and int32 tensors of
several shapes (0-d, empty), limit, every_n over runs, blobs holding no tensor, to_file, Print inside
RecurrentNetwork step nets with the executor on and off, the print log written to sys.stderr by the
binding after a failing run too, its bound, and bad arguments."""

import os
import sys

import numpy as np
import pytest

from recurrent import _C, core, rnn_cell, trace, workspace
from recurrent import recurrent as rnn
from recurrent.model_helper import ModelHelper


def g6(v):
    """C++'s ``std::cout << float``: 6 significant digits, %g."""
    return "%.6g" % float(v)


def ref_line(name, x, limit=1000):
    kind = "float" if x.dtype == np.float32 else "int"
    dims = "".join("%d," % d for d in x.shape)
    vals = [g6(v) if kind == "float" else str(int(v)) for v in x.reshape(-1)[:limit]]
    return "Tensor %s of type %s. Dims: (%s): %s" % (name, kind, dims, ",".join(vals))


def lines(capfd):
    out, err = capfd.readouterr()
    assert out == ""
    return err.splitlines()


def print_net(name="p", blob="x", **kw):
    net = core.Net(name)
    net.Print(blob, [], **kw)
    return net


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,), (5,), (2, 3), (2, 1, 3), (1, 1, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_print_text_matches_caffe2(capfd, rng, shape, dtype):
    x = np.asarray(rng.randn(*shape) * 100).astype(dtype)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(print_net())
    assert lines(capfd) == [ref_line("x", x)]


def test_print_float_formatting_as_cpp_ostream(capfd):
    vals = [0.1, 1e-7, 1e20, np.inf, -np.inf, np.nan, -0.0, 123456.7, 1234567.0, 3.4028235e38, 1.17549435e-38,
            1e-45, 0.5, 100.0, 1e5, 1e6, 2.5e-5, -1.5]
    workspace.FeedBlob("v", np.array(vals, np.float32))
    workspace.RunNetOnce(print_net(blob="v"))
    # what g++'s std::cout << float prints for these (checked with a C++ program)
    want = ("0.1,1e-07,1e+20,inf,-inf,nan,-0,123457,1.23457e+06,3.40282e+38,1.17549e-38,1.4013e-45,0.5,100,"
            "100000,1e+06,2.5e-05,-1.5")
    assert lines(capfd) == ["Tensor v of type float. Dims: (18,): " + want]
    workspace.FeedBlob("i", np.array([-2 ** 31, 2 ** 31 - 1, 0, -7], np.int32))
    workspace.RunNetOnce(print_net(blob="i"))
    assert lines(capfd) == ["Tensor i of type int. Dims: (4,): -2147483648,2147483647,0,-7"]


@pytest.mark.parametrize("limit,shown", [(0, 1000), (1, 1), (7, 7), (1200, 1200), (5000, 1200)])
def test_print_limit(capfd, limit, shown):
    x = np.arange(1200, dtype=np.int32).reshape(30, 40)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(print_net(limit=limit))
    got = lines(capfd)
    assert got == [ref_line("x", x, shown)]
    assert got[0].count(",") == 2 + shown - 1   # two dims, then shown values


@pytest.mark.parametrize("every_n", [1, 2, 3, 5])
def test_print_every_n_counts_runs_of_the_op(capfd, every_n):
    """Caffe2's occurrences_mod_n_: runs 1, 1 + n, 1 + 2n, ... print."""
    workspace.FeedBlob("x", np.zeros(1, np.float32))
    net = core.Net("every")
    net.Print("x", [], every_n=every_n)
    workspace.CreateNet(net)
    printed = []
    for run in range(1, 12):
        workspace.FeedBlob("x", np.array([run], np.float32))
        workspace.RunNet(net)
        got = lines(capfd)
        if got:
            assert got == ["Tensor x of type float. Dims: (1,): %d" % run]
            printed.append(run)
    assert printed == list(range(1, 12, every_n))
    workspace.RunNet(net, num_iter=2 * every_n)   # one call, several runs: each counts
    assert len(lines(capfd)) == 2


def test_print_two_ops_and_run_operator_once(capfd):
    workspace.FeedBlob("a", np.array([1.5], np.float32))
    workspace.FeedBlob("b", np.array([[2]], np.int32))
    net = core.Net("two")
    net.Print("a", [])
    net.Print("b", [])
    net.Print("a", [], limit=1)
    workspace.RunNetOnce(net)
    assert lines(capfd) == ["Tensor a of type float. Dims: (1,): 1.5",
                            "Tensor b of type int. Dims: (1,1,): 2",
                            "Tensor a of type float. Dims: (1,): 1.5"]
    workspace.RunOperatorOnce(core.CreateOperator("Print", ["b"], []))
    assert lines(capfd) == ["Tensor b of type int. Dims: (1,1,): 2"]
    m = ModelHelper(name="m")
    m.Print("a", [])     # Caffe2's ModelHelper forwards Print to its net
    workspace.RunNetOnce(m.net)
    assert lines(capfd) == ["Tensor a of type float. Dims: (1,): 1.5"]


def test_print_blobs_holding_no_tensor(capfd):
    workspace.CreateNet(print_net("u", "empty"), input_blobs=["empty"])
    workspace.RunNet("u")
    assert lines(capfd) == ["Blob of type: nullptr (uninitialized)"]
    workspace.RunNetOnce(_queue_net())
    workspace.RunNetOnce(print_net("pq", "queue"))
    assert lines(capfd) == ["Blob of type: BlobsQueue"]


def _queue_net():
    net = core.Net("q")
    net.CreateBlobsQueue([], "queue", capacity=2, num_blobs=1)
    return net


def test_print_no_gradient_and_arity():
    net = core.Net("g")
    x = net.AddExternalInput("x")
    y = net.Sigmoid(x, "y")
    net.Print(y, [])
    loss = net.SumElements(y, "loss")
    gmap = net.AddGradientOperators([loss])
    assert [op.type for op in net.Proto().op].count("Print") == 1
    # registered as having no gradient (Caffe2's SHOULD_NOT_DO_GRADIENT), not merely unreached
    registry = core.GradientRegistry.gradient_registry_
    assert registry["Print"] is registry["Assert"]
    assert str(gmap["x"]) == "x_grad"
    workspace.FeedBlob("a", np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"op Print #0: expects 1 inputs, got 2"):
        workspace.RunOperatorOnce(core.CreateOperator("Print", ["a", "a"], []))
    with pytest.raises(ValueError, match=r"op Print #0: expects 0 outputs, got 1"):
        workspace.RunOperatorOnce(core.CreateOperator("Print", ["a"], ["o"]))


@pytest.mark.parametrize("args,exc,pattern", [
    ({"limit": -1}, ValueError, r"op Print #0: argument 'limit' must be >= 0 \(0: Caffe2's default of 1000 "
                                r"values\), got -1"),
    ({"every_n": 0}, ValueError, r"op Print #0: argument 'every_n' must be >= 1, got 0"),
    ({"every_n": -3}, ValueError, r"op Print #0: argument 'every_n' must be >= 1, got -3"),
    ({"to_file": 2}, ValueError, r"op Print #0: argument 'to_file' must be 0 or 1, got 2"),
    ({"to_file": -1}, ValueError, r"op Print #0: argument 'to_file' must be 0 or 1, got -1"),
    ({"limit": "a"}, TypeError, r"Print.*limit"),
    ({"every_n": 1.5}, TypeError, r"Print.*every_n"),
])
def test_print_bad_arguments(capfd, args, exc, pattern):
    workspace.FeedBlob("x", np.ones(2, np.float32))
    with pytest.raises(exc, match=pattern):
        workspace.CreateNet(print_net(**args))
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(core.CreateOperator("Print", ["x"], [], **args))
    assert lines(capfd) == []
    workspace.RunNetOnce(print_net())   # the workspace stays usable
    assert len(lines(capfd)) == 1


def test_print_line_appears_when_a_later_op_fails(capfd):
    workspace.FeedBlob("x", np.array([1, 0], np.int32))
    net = core.Net("fails")
    net.Print("x", [])
    net.Assert("x", [], error_msg="boom")
    with pytest.raises(RuntimeError, match=r"op Assert #1: assertion failed.*boom"):
        workspace.RunNetOnce(net)
    assert lines(capfd) == ["Tensor x of type int. Dims: (2,): 1,0"]
    workspace.CreateNet(net)
    with pytest.raises(RuntimeError, match=r"op Assert #1: assertion failed"):
        workspace.RunNet(net)
    assert lines(capfd) == ["Tensor x of type int. Dims: (2,): 1,0"]
    with pytest.raises(RuntimeError, match=r"op Assert #0"):
        workspace.RunOperatorOnce(core.CreateOperator("Assert", ["x"], []))
    assert lines(capfd) == []


class _BrokenStderr:
    def write(self, s):
        raise ValueError("I/O operation on closed file.")

    def flush(self):
        pass


def test_print_closed_stderr_does_not_hide_the_net_error(monkeypatch):
    workspace.FeedBlob("x", np.array([1, 0], np.int32))
    net = core.Net("fails2")
    net.Print("x", [])
    net.Assert("x", [])
    monkeypatch.setattr(sys, "stderr", _BrokenStderr())
    with pytest.raises(RuntimeError, match=r"op Assert #1: assertion failed"):
        workspace.RunNetOnce(net)
    # a run that succeeded: the write's own error is raised (the run's effects stand)
    with pytest.raises(ValueError, match="closed file"):
        workspace.RunNetOnce(print_net())
    monkeypatch.setattr(sys, "stderr", None)   # no stderr at all: the text is dropped
    workspace.RunNetOnce(print_net())


def test_print_writes_to_sys_stderr(capsys):
    workspace.FeedBlob("x", np.array([2.25], np.float32))
    workspace.RunNetOnce(print_net())
    out, err = capsys.readouterr()
    assert (out, err) == ("", "Tensor x of type float. Dims: (1,): 2.25\n")


def test_print_log_is_bounded(capfd):
    """More than print_log_max bytes in one call: the rest is dropped, with a note."""
    cap = _C.get_flag("print_log_max")
    x = np.full(1000, -1.17549e-38, np.float32)   # the longest values: ~12 KB a line
    workspace.FeedBlob("x", x)
    net = print_net()
    workspace.CreateNet(net)
    line = ref_line("x", x) + "\n"
    n = cap // len(line) + 5
    workspace.RunNet(net, num_iter=n)
    got = lines(capfd)
    kept = cap // len(line)
    assert got[:-1] == [line[:-1]] * kept
    assert got[-1] == ("[recurrent] Print: %d lines (%d bytes) dropped: the print log holds at most %d bytes "
                       "per call (RunNet: per num_iter iterations)" % (n - kept, (n - kept) * len(line), cap))
    workspace.RunNet(net)   # the next call starts afresh
    assert lines(capfd) == [line[:-1]]


# ---------------------------------------------------------------- to_file
def _fds_to(path):
    path = os.path.realpath(path)
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.path.realpath(os.readlink("/proc/self/fd/" + fd)) == path
        except OSError:
            pass
    return n


def test_print_to_file(capfd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.log").write_text("old content\n")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    workspace.FeedBlob("x", x)
    net = print_net("tofile", to_file=1, every_n=2)
    workspace.CreateNet(net)
    assert (tmp_path / "x.log").read_text() == ""   # truncated when the op is created
    assert _fds_to(tmp_path / "x.log") == 1
    for _ in range(3):
        workspace.RunNet(net)
    # flushed after every line: readable while the op lives; runs 1 and 3 printed
    assert (tmp_path / "x.log").read_text() == (ref_line("x", x) + "\n") * 2
    workspace.RunOperatorOnce(core.CreateOperator("Print", ["x"], [], to_file=1, limit=2))
    assert (tmp_path / "x.log").read_text() == "Tensor x of type float. Dims: (2,3,): 0,0.25\n"
    workspace.CreateNet(net, overwrite=True)   # the replaced net's op closed its file
    assert _fds_to(tmp_path / "x.log") == 1
    workspace.ResetWorkspace()
    assert _fds_to(tmp_path / "x.log") == 0
    assert lines(capfd) == []   # nothing went to stderr


def test_print_to_file_that_cannot_be_opened(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    workspace.FeedBlob("nodir/x", np.ones(1, np.float32))
    with pytest.raises(OSError, match=r"op Print #0: cannot open 'nodir/x.log' for writing \(to_file=1\): "
                                      r"No such file or directory"):
        workspace.CreateNet(print_net(blob="nodir/x", to_file=1))
    assert "p" not in workspace.Nets()
    (tmp_path / "nodir").mkdir()
    net = print_net(blob="nodir/x", to_file=1)
    workspace.CreateNet(net)
    workspace.RunNet(net)
    assert (tmp_path / "nodir" / "x.log").read_text() == "Tensor nodir/x of type float. Dims: (1,): 1\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_print_to_file_write_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("/dev/full", tmp_path / "x.log")
    workspace.FeedBlob("x", np.ones(1, np.float32))
    net = print_net(to_file=1)
    workspace.CreateNet(net)
    with pytest.raises(OSError, match=r"op Print #0: cannot write 'x.log': No space left on device"):
        workspace.RunNet(net)


# ---------------------------------------------------------------- step nets
class _PrintingLSTMCell(rnn_cell.LSTMCell):
    """An LSTM cell whose step net prints its hidden state."""

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t, cell_t = super().apply_override(model, input_t, seq_lengths, states, timestep, extra_inputs)
        model.net.Print(hidden_t, [], limit=0)
        return hidden_t, cell_t


def _set_executor(net, on):
    for op in net.Proto().op:
        if op.type == "RecurrentNetwork":
            for a in op.arg:
                if a.name == "enable_rnn_executor":
                    a.i = int(on)


@pytest.mark.parametrize("forward_only", [False, True])
def test_print_in_lstm_step_net_executor_on_and_off(capfd, rng, forward_only):
    T, N, D, H = 6, 2, 3, 4
    got = {}
    for on in (0, 1):
        workspace.ResetWorkspace()
        model = ModelHelper(name="lstm_print")
        outs = rnn_cell._LSTM(_PrintingLSTMCell, model, "x", None, ("h0", "c0"), D, H, scope="lstm",
                              forward_only=forward_only)
        _set_executor(model.net, on)
        workspace.FeedBlob("x", rng.randn(T, N, D).astype(np.float32) if on == 0 else x)
        x = workspace.FetchBlob("x")
        workspace.FeedBlob("h0", np.zeros((1, N, H), np.float32))
        workspace.FeedBlob("c0", np.zeros((1, N, H), np.float32))
        workspace.RunNetOnce(model.param_init_net)
        if on == 0:
            params = {p: workspace.FetchBlob(p) for p in map(str, model.params)}
        for p, v in params.items():
            workspace.FeedBlob(p, v)
        workspace.CreateNet(model.net)
        assert lines(capfd) == []
        workspace.RunNet(model.net)
        hidden = workspace.FetchBlob(str(outs[0]))
        got[on] = lines(capfd)
        want = [ref_line("lstm/hidden_state", hidden[t:t + 1]) for t in range(T)]
        status = [s for s in trace.executor_status(model.net) if s["direction"] == "forward"]
        if on:
            assert status[0]["last_run"] == "executor"   # the executor ran the steps
            assert sorted(got[on]) == sorted(want)   # the same lines, maybe in another order
        else:
            assert got[on] == want   # the serial loop's order
    assert sorted(got[0]) == sorted(got[1])


def test_print_in_recurrent_net_step_net_every_n(capfd, rng):
    """Every timestep has its own op instance (as in Caffe2), each counting its own runs."""
    net = core.Net("outer")
    cell = core.Net("cell")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    cell.Print(out, [], every_n=2)
    cell.AddExternalOutput(out)
    rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="r")
    x = rng.randn(3, 1, 2).astype(np.float32)
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", np.ones((1, 1, 2), np.float32))
    workspace.CreateNet(net)
    o = np.ones((1, 2), np.float32)
    want = []
    for t in range(3):
        o = x[t] * o
        want.append(ref_line("output_t", o.reshape(1, 1, 2)))
    for run in range(1, 6):
        workspace.RunNet(net)
        assert sorted(lines(capfd)) == (sorted(want) if run % 2 else [])


def test_print_in_forward_only_step_nets_counts_per_step_workspace(capfd, rng, core_flag):
    """forward_only: num_workspaces step nets used in turn (t % num_workspaces, as Caffe2): each one's
    op counts the runs it gets."""
    core_flag("rnn_executor", 0)
    net = core.Net("outer_fo")
    cell = core.Net("cell_fo")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    cell.Print(out, [], every_n=2, limit=1)
    cell.AddExternalOutput(out)
    rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="r",
                      forward_only=True)
    workspace.FeedBlob("input", np.full((3, 1, 1), 2, np.float32))
    workspace.FeedBlob("init", np.ones((1, 1, 1), np.float32))
    workspace.CreateNet(net)
    # 2 step workspaces: t = 0 and 2 run step net 0 (its runs 1 and 2), t = 1 step net 1 (its run 1)
    workspace.RunNet(net)
    assert lines(capfd) == ["Tensor output_t of type float. Dims: (1,1,1,): 2",
                            "Tensor output_t of type float. Dims: (1,1,1,): 4"]
    workspace.RunNet(net)   # step net 0: runs 3 and 4 (3 prints), step net 1: run 2
    assert lines(capfd) == ["Tensor output_t of type float. Dims: (1,1,1,): 2"]


@pytest.mark.parametrize("op_type,suffix", [("Print", "log"), ("Summarize", "summary")])
def test_to_file_refused_in_step_nets(tmp_path, monkeypatch, op_type, suffix):
    """Print's and Summarize's to_file in a step net: refused when the net is created, before any file
    is opened (each timestep's op would truncate the same file)."""
    monkeypatch.chdir(tmp_path)
    net = core.Net("outer_f")
    cell = core.Net("cell_f")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    getattr(cell, op_type)(out, [], to_file=1)
    cell.AddExternalOutput(out)
    rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="r")
    workspace.FeedBlob("input", np.ones((2, 1, 2), np.float32))
    workspace.FeedBlob("init", np.ones((1, 1, 2), np.float32))
    pattern = (r"op RecurrentNetwork #0: step op %s #\d+ of the forward step net has to_file=1: each "
               r"timestep's op would open and truncate 'output_t.%s'" % (op_type, suffix))
    with pytest.raises(ValueError, match=pattern):
        workspace.CreateNet(net)
    assert os.listdir(tmp_path) == []
