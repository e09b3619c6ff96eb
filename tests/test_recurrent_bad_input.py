"""Bad input to RecurrentNetwork / RecurrentNetworkGradient (issue 3, item 6):
each case raises a Python exception naming the op (and the timestep where a
step fails), never crashes, and the same net runs correctly afterwards --
with the executor on and off."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from recurrent.proto import make_argument


def mul_net(executor=True, forward_only=False, name="outer"):
    """o_t = x_t * o_{t-1} with gradients (loss fed through <out>_grad)."""
    net = core.Net(name)
    cell = core.Net("cell")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    cell.AddExternalOutput(out)
    outs = rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="rnn",
                             forward_only=forward_only)
    if not forward_only:
        net.AddGradientOperators({str(outs[0]): str(outs[0]) + "_grad"})
    for op in net.Proto().op:
        if op.type.startswith("RecurrentNetwork"):
            set_arg(op, "enable_rnn_executor", 1 if executor else 0)
            if executor:
                rnn.set_rnn_executor_config(op, num_threads=3)
    feed()  # inputs must exist when a net is created (as in Caffe2)
    return net, outs


def set_arg(op, name, value):
    op.arg[:] = [a for a in op.arg if a.name != name] + [make_argument(name, value)]


def get_arg(op, name):
    for a in op.arg:
        if a.name == name:
            return a.value()
    raise KeyError(name)


def rnn_op(net):
    return next(op for op in net.Proto().op if op.type == "RecurrentNetwork")


def feed(T=4, N=2, D=3, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(0.5, 1.5, (T, N, D)).astype(np.float32)
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", np.ones((1, N, D), np.float32))
    workspace.FeedBlob("output_t_all_grad", np.ones((T, N, D), np.float32))
    return x


def expected(x):
    return np.cumprod(x.astype(np.float32), axis=0, dtype=np.float32)


def check_runs_ok(net, outs):
    x = feed()
    workspace.RunNet(net)
    np.testing.assert_allclose(workspace.FetchBlob(outs[0]), expected(x), rtol=1e-6)


EXEC = [pytest.param(True, id="executor"), pytest.param(False, id="serial")]


@pytest.mark.parametrize("executor", EXEC)
def test_initial_state_wrong_batch_size(executor):
    net, outs = mul_net(executor)
    feed()
    workspace.CreateNet(net)
    workspace.FeedBlob("init", np.ones((1, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r"RecurrentNetwork #0.*initial state 'init'.*batch size 5.*\(1, 5, 3\)"):
        workspace.RunNet(net)
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
def test_initial_state_wrong_size_fails_in_the_cell_at_timestep_0(executor):
    net, outs = mul_net(executor)
    feed()
    workspace.CreateNet(net)
    workspace.FeedBlob("init", np.ones((1, 2, 4), np.float32))
    with pytest.raises(ValueError, match=r"RecurrentNetwork #0.*op Mul #\d+ at timestep 0"):
        workspace.RunNet(net)
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
def test_initial_state_bad_rank(executor):
    net, outs = mul_net(executor)
    feed()
    workspace.CreateNet(net)
    workspace.FeedBlob("init", np.ones((1, 1, 2, 3), np.float32))
    with pytest.raises(ValueError, match=r"initial state 'init'.*\(1, 1, 2, 3\)"):
        workspace.RunNet(net)
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
def test_input_sequence_must_be_float_and_2d(executor):
    net, outs = mul_net(executor)
    feed()
    workspace.CreateNet(net)
    workspace.FeedBlob("input", np.ones((4,), np.float32))
    with pytest.raises(ValueError, match=r"RecurrentNetwork #0.*input sequence 'input' must be at least 2-D"):
        workspace.RunNet(net)
    workspace.FeedBlob("input", np.ones((4, 2, 3), np.int32))
    with pytest.raises(TypeError, match=r"RecurrentNetwork #0.*'input' must be float32"):
        workspace.RunNet(net)
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
def test_link_to_a_missing_blob(executor):
    net, outs = mul_net(executor)
    op = rnn_op(net)
    ext = get_arg(op, "link_external")
    set_arg(op, "link_external", [e if e != "input" else "no_such_sequence" for e in ext])
    feed()
    workspace.CreateNet(net)
    with pytest.raises(KeyError, match=r"RecurrentNetwork #0.*'no_such_sequence' does not exist"):
        workspace.RunNet(net)
    workspace.FeedBlob("no_such_sequence", np.ones((4, 2, 3), np.float32))
    workspace.RunNet(net)  # now it exists: the same net runs


@pytest.mark.parametrize("executor", EXEC)
def test_link_window_past_the_end(executor):
    net, outs = mul_net(executor, forward_only=True)
    op = rnn_op(net)
    internal = get_arg(op, "link_internal")
    offsets = list(get_arg(op, "link_offset"))
    offsets[internal.index("input_t")] = 1  # reads row t+1 of input: t = T-1 is past the end
    set_arg(op, "link_offset", offsets)
    feed()
    workspace.CreateNet(net)
    for _ in range(2):
        with pytest.raises(IndexError, match=r"RecurrentNetwork #0.*rnn_internal_apply_link #\d+ at timestep 3.*"
                                             r"rows \[4, 5\) are outside the 4 rows"):
            workspace.RunNet(net)
    offsets[internal.index("input_t")] = 0
    set_arg(op, "link_offset", offsets)
    workspace.CreateNet(net, overwrite=True)
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
def test_link_offset_negative_rejected_at_creation(executor):
    net, outs = mul_net(executor)
    op = rnn_op(net)
    set_arg(op, "link_offset", [-1] + list(get_arg(op, "link_offset"))[1:])
    with pytest.raises(ValueError, match=r"RecurrentNetwork.*negative offset -1"):
        workspace.CreateNet(net)


def test_link_lists_of_different_length():
    net, outs = mul_net()
    op = rnn_op(net)
    set_arg(op, "link_offset", list(get_arg(op, "link_offset"))[:-1])
    with pytest.raises(ValueError, match=r"RecurrentNetwork.*link_internal has \d+ entries but link_offset"):
        workspace.CreateNet(net)


@pytest.mark.parametrize("offset", [6, -6])
def test_alias_offset_beyond_T(offset):
    net, outs = mul_net(forward_only=True)
    op = rnn_op(net)
    set_arg(op, "alias_offset", [offset, -1])
    workspace.CreateNet(net)
    feed()  # T = 4: the state has 5 rows
    with pytest.raises(IndexError, match=r"RecurrentNetwork #0.*alias 0.*offset %d is outside the 5 rows" % offset):
        workspace.RunNet(net)
    set_arg(op, "alias_offset", [1, -1])
    workspace.CreateNet(net, overwrite=True)
    check_runs_ok(net, outs)


def test_timestep_blob_as_an_op_output():
    net, outs = mul_net()
    op = rnn_op(net)
    step = get_arg(op, "step_net")
    step.op.append(core.CreateOperator("Copy", ["input_t"], ["timestep"]))
    with pytest.raises(ValueError, match=r"RecurrentNetwork.*writes the timestep blob 'timestep'"):
        workspace.CreateNet(net)


def test_missing_step_net_and_mismatched_states():
    net, outs = mul_net()
    op = rnn_op(net)
    saved = list(op.arg)
    op.arg[:] = [a for a in op.arg if a.name != "step_net"]
    with pytest.raises(ValueError, match=r"RecurrentNetwork.*'step_net'.*required"):
        workspace.CreateNet(net)
    op.arg[:] = saved
    set_arg(op, "initial_recurrent_state_ids", [1, 1])
    with pytest.raises(ValueError, match=r"states/inputs mismatch"):
        workspace.CreateNet(net)
    set_arg(op, "initial_recurrent_state_ids", [7])
    with pytest.raises(IndexError, match=r"initial_recurrent_state_ids\[0\] = 7"):
        workspace.CreateNet(net)


@pytest.mark.parametrize("executor", EXEC)
def test_gradient_shape_mismatch_and_T_mismatch(executor):
    net, outs = mul_net(executor)
    feed()
    workspace.CreateNet(net)
    workspace.FeedBlob("output_t_all_grad", np.ones((3, 2, 3), np.float32))  # T is 4
    with pytest.raises(ValueError, match=r"RecurrentNetworkGradient #\d+.*'output_t_all_grad'.*\(3, 2, 3\)"
                                         r".*expected \(4, 2, 3\)"):
        workspace.RunNet(net)
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
def test_gradient_before_forward(executor):
    net, outs = mul_net(executor)
    grad_ops = [op for op in net.Proto().op if op.type == "RecurrentNetworkGradient"]
    feed()
    workspace.FeedBlob("output_t_all", np.ones((4, 2, 3), np.float32))
    workspace.FeedBlob("output_t_last", np.ones((1, 2, 3), np.float32))
    for b in grad_ops[0].input:
        if not workspace.HasBlob(b):
            workspace.FeedBlob(b, np.zeros((1,), np.float32))
    with pytest.raises((ValueError, TypeError), match=r"RecurrentNetworkGradient.*step workspaces"):
        workspace.RunOperatorOnce(grad_ops[0])


def test_fetching_the_step_workspaces_blob_describes_it_feeding_it_is_a_type_error():
    net, outs = mul_net()
    feed()
    workspace.CreateNet(net)
    workspace.RunNet(net)
    scratch = rnn_op(net).output[-1]
    # FetchBlob describes it, as Caffe2's fetch_blob did for a type without a fetcher
    want = b"%s, a C++ native class of type RecurrentNetwork step workspaces." % scratch.encode()
    assert workspace.FetchBlob(scratch) == want
    with pytest.raises(TypeError, match="step workspaces|not a tensor"):
        workspace.FeedBlob(scratch, np.zeros(3, np.float32))
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
@pytest.mark.parametrize("T", [0, 1, 6])
def test_many_failures_then_success(executor, T):
    """A failing run never leaves the op (or its executor) broken."""
    net, outs = mul_net(executor)
    feed(T=T)
    workspace.CreateNet(net)
    for i in range(5):
        feed(T=T)
        workspace.FeedBlob("init", np.ones((1, 7, 3), np.float32))
        with pytest.raises(ValueError):
            workspace.RunNet(net)
        x = feed(T=T, seed=i)
        workspace.RunNet(net)
        np.testing.assert_allclose(workspace.FetchBlob(outs[0]), expected(x), rtol=1e-6)


@pytest.mark.parametrize("executor", EXEC)
def test_gradient_after_forward_of_another_length(executor):
    net, outs = mul_net(executor)
    workspace.CreateNet(net)
    workspace.RunNet(net)  # T = 4
    fwd, grad = [op for op in net.Proto().op if op.type.startswith("RecurrentNetwork")]
    feed(T=3)
    with pytest.raises(ValueError, match=r"RecurrentNetworkGradient.*another length.*same 3 steps"):
        workspace.RunOperatorOnce(grad)
    workspace.RunOperatorOnce(fwd)
    workspace.RunOperatorOnce(grad)  # now consistent
    check_runs_ok(net, outs)


@pytest.mark.parametrize("executor", EXEC)
@pytest.mark.parametrize("shape", [(2,), (4,), (2, 2), (1, 2, 2), (2, 2, 3), (5, 2, 3), (4, 3), (1, 1, 2, 3)])
def test_gradient_after_initial_state_changed_shape(executor, shape):
    """The initial state's gradient is cut from the state gradient of the
    forward run: an initial state re-fed with another shape before the
    gradient op runs is an error naming it and both shapes (found by the
    instrumented fuzzer: a 1-D initial state narrower than the state wrote
    past its gradient, a larger one was read past the state gradient)."""
    net, outs = mul_net(executor)
    workspace.CreateNet(net)
    workspace.RunNet(net)
    fwd, grad = [op for op in net.Proto().op if op.type.startswith("RecurrentNetwork")]
    workspace.FeedBlob("init", np.ones(shape, np.float32))
    with pytest.raises(ValueError, match=r"RecurrentNetworkGradient #\d+.*initial state 'init'.*%s.*state .*"
                                         r"\(5, 2, 3\).* over 4 steps.*\(3,\), \(2, 3\) or \(1, 2, 3\)"
                                         % re_shape(shape)):
        workspace.RunOperatorOnce(grad)
    # shapes the forward accepts for the same state keep working: (S), (N, S), (1, N, S)
    for ok in [(3,), (2, 3), (1, 2, 3)]:
        workspace.FeedBlob("init", np.full(ok, 2, np.float32))
        workspace.RunOperatorOnce(fwd)
        workspace.RunOperatorOnce(grad)
        g = workspace.FetchBlob(str(grad.output[-1]))
        assert g.shape == ok
    check_runs_ok(net, outs)


def re_shape(shape):
    return r"\(" + r", ".join(str(d) for d in shape) + (r",\)" if len(shape) == 1 else r"\)")
