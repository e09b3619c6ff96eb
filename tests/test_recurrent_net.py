"""recurrent.recurrent_net and the RecurrentNetwork op built from it (spec 1.2,
1.8, 2.1-2.7, 4): graph construction (arguments, links, aliases, references,
params, backward step net, the _accum trick, recompute), then runs against
Python-loop / NumPy references, finite-difference gradients, forward-only,
recompute, changing T, windowed links and retrieve_step_blobs.

Max abs differences are printed as ``MAXDIFF <what> <value>`` (pytest -s)."""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from recurrent.proto import make_argument


# ---------------------------------------------------------------- helpers
def args_of(op):
    return {a.name: a.value() for a in op.arg}


def rnn_ops(net):
    return [op for op in net.Proto().op if op.type == "RecurrentNetwork"]


def f32(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def report(what, a, b):
    d = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))) if np.size(a) else 0.0
    print("MAXDIFF %s %.3g" % (what, d))
    return d


def mul_cell(kind="mul"):
    """o_t = x_t * o_{t-1} ('mul') or x_t * (x_t + o_{t-1}) ('sum_mul')."""
    cell = core.Net("cell_" + kind)
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    if kind == "mul":
        out = cell.Mul([input_t, prev], "output_t")
    else:
        internal = cell.Sum([input_t, prev], "output_t_internal")
        out = cell.Mul([input_t, internal], "output_t")
    cell.AddExternalOutput(out)
    return cell, input_t, prev, out


def build_mul(kind="mul", owg=(0,), forward_only=False, scope="rnn", recompute=None, name="outer"):
    net = core.Net(name)
    cell, input_t, prev, out = mul_cell(kind)
    outs = rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope=scope,
                             outputs_with_grads=owg, forward_only=forward_only,
                             recompute_blobs_on_backward=recompute)
    return net, cell, outs


def mul_reference(kind, x, init):
    T, N, D = x.shape
    o = np.broadcast_to(init.reshape(-1, D)[-N:] if init.ndim > 1 else init, (N, D)).astype(np.float64)
    res = np.zeros((T, N, D))
    for t in range(T):
        o = x[t] * o if kind == "mul" else x[t] * (x[t] + o)
        res[t] = o
    return res, o.reshape(1, N, D)


def with_grads(net, outs, owg, name="with_grads"):
    """A clone of ``net`` plus the gradient ops for a loss sum_k <G_k, out_k>
    over k in owg (the G_k fed as ``<out_k>_grad``). Returns (net, grad map)."""
    g = net.Clone(name)
    ys = {str(outs[k]): str(outs[k]) + "_grad" for k in owg}
    gmap = g.AddGradientOperators(ys)
    return g, {str(k): str(v) for k, v in gmap.items() if v is not None}


def fd_grad(fwd_net, outs, owg, G, blob, step=5e-3):
    """Central finite differences of sum_k <G_k, out_k> w.r.t. ``blob``."""
    x0 = workspace.FetchBlob(blob).copy()
    est = np.zeros(x0.shape, np.float64)

    def loss():
        workspace.RunNetOnce(fwd_net)
        return sum(float(np.sum(G[k].astype(np.float64) * workspace.FetchBlob(outs[k]))) for k in owg)

    flat = x0.reshape(-1)
    for i in range(flat.size):
        for sign in (1, -1):
            x = flat.copy()
            x[i] += sign * step
            workspace.FeedBlob(blob, x.reshape(x0.shape))
            est.reshape(-1)[i] += sign * loss()
    workspace.FeedBlob(blob, x0)
    workspace.RunNetOnce(fwd_net)
    return est / (2 * step)


def analytic_grads(gnet, outs, owg, G, gmap, blobs):
    for k in owg:
        workspace.FeedBlob(str(outs[k]) + "_grad", G[k])
    workspace.RunNetOnce(gnet)
    return {b: workspace.FetchBlob(gmap[b]) for b in blobs}


# ================================================================ graph construction
def test_mul_cell_op_arguments():
    net, cell, outs = build_mul("mul", owg=(0, 1))
    assert [str(o) for o in outs] == ["output_t_all", "output_t_last"]
    (op,) = rnn_ops(net)
    assert list(op.input) == ["input", "init"]
    assert list(op.output) == ["output_t_all", "output_t_last", "rnn/step_workspaces"]
    a = args_of(op)
    assert a["recurrent_states"] == ["rnn/output_t_prev_states"]
    assert a["initial_recurrent_state_ids"] == [1]
    assert a["link_internal"] == ["output_t_prev", "output_t", "input_t"]
    assert a["link_external"] == ["rnn/output_t_prev_states", "rnn/output_t_prev_states", "input"]
    assert a["link_offset"] == [0, 1, 0]
    assert a["alias_src"] == ["rnn/output_t_prev_states"] * 2
    assert a["alias_dst"] == ["output_t_all", "output_t_last"]
    assert a["alias_offset"] == [1, -1]
    assert a["enable_rnn_executor"] == 1
    assert a["timestep"] == "timestep"
    assert a["outputs_with_grads"] == [0, 1]
    assert a["param"] == []
    assert a["backward_link_internal"] == ["output_t_grad", "output_t_prev_grad", "input_t_grad"]
    assert a["backward_link_external"] == ["rnn/output_t_prev_states_grad"] * 2 + ["input_grad"]
    assert a["backward_link_offset"] == [1, 0, 0]
    step = a["step_net"]
    assert step.type == "simple" and [o.type for o in step.op] == ["Mul"]
    assert step is not cell.Proto()  # a copy: later edits of the cell do not leak in
    bwd = a["backward_step_net"]
    assert bwd.type == "simple"
    assert {o.type for o in bwd.op} <= {"Mul", "MulGradient"}
    assert "output_t_grad" in bwd.external_input
    for b in ("input_t", "output_t_prev", "output_t"):
        assert b in bwd.external_input


def test_default_scope_is_next_name():
    net = core.Net("n")
    cell, input_t, prev, out = mul_cell()
    rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out})
    (op,) = rnn_ops(net)
    scope = op.output[-1][:-len("/step_workspaces")]
    assert scope.startswith("recurrent") or "recurrent" in scope
    assert args_of(op)["recurrent_states"] == [scope + "/output_t_prev_states"]


def test_sum_first_cell_links_to_mapped_gradient():
    # Sum's gradient is a pass-through: nothing writes output_t_prev_grad, so
    # the state-input link uses the mapped name (and gets its own blob).
    net, _, _ = build_mul("sum_mul")
    a = args_of(rnn_ops(net)[0])
    bi, be, bo = a["backward_link_internal"], a["backward_link_external"], a["backward_link_offset"]
    assert bo == [1, 0, 0]
    assert bi[0] == "output_t_grad"
    assert bi[1] != "output_t_prev_grad"
    assert be == ["rnn/output_t_prev_states_grad"] * 2 + ["input_grad"]
    bwd = a["backward_step_net"]
    written = {o for op in bwd.op for o in op.output}
    assert bi[1] in written and bi[2] in written
    assert len(set(bi)) == 3


def test_references_params_and_seq_lengths():
    net = core.Net("n")
    cell = core.Net("cell")
    input_t, timestep, h_prev, w, b, seq = cell.AddExternalInputs(
        "input_t", "timestep", "h_prev", "w", "b", "seq_lengths")
    fc = cell.FC([h_prev, w, b], "fc", axis=2)
    s = cell.Sum([fc, input_t], "s")
    h = cell.Tanh(s, "h")
    cell.AddExternalOutput(h)
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(h_prev, "h0")], {h_prev: h}, timestep=timestep,
                             scope="sc")
    (op,) = rnn_ops(net)
    assert list(op.input) == ["x", "h0", "w", "b", "seq_lengths"]
    a = args_of(op)
    assert a["param"] == [2, 3]
    assert a["param_grads"] == ["w_grad", "b_grad"]
    assert len(outs) == 2
    bwd = a["backward_step_net"]
    assert "h" in bwd.external_input and "h_grad" in bwd.external_input


def test_accum_trick_when_state_output_is_used_inside_cell():
    # h is a state output AND read by another cell op: the gradient computed
    # inside the cell must be added to the one arriving through the link.
    net = core.Net("n")
    cell = core.Net("cell")
    input_t, h_prev, c_prev = cell.AddExternalInputs("input_t", "h_prev", "c_prev")
    h = cell.Mul([input_t, h_prev], "h")
    c = cell.Mul([h, c_prev], "c")
    cell.AddExternalOutputs(h, c)
    rnn.recurrent_net(net, cell, [(input_t, "x")], [(h_prev, "h0"), (c_prev, "c0")], {h_prev: h, c_prev: c},
                      scope="sc", outputs_with_grads=(0, 2))
    bwd = args_of(rnn_ops(net)[0])["backward_step_net"]
    writers = [op for op in bwd.op if "h_grad_accum" in op.output]
    assert len(writers) == 1
    i = bwd.op.index(writers[0])
    nxt = bwd.op[i + 1]
    assert nxt.type == "Sum"
    assert list(nxt.input) == ["h_grad", "h_grad_accum"] and list(nxt.output) == ["h_grad"]


def test_recompute_blobs_prepend_forward_ops():
    net = core.Net("n")
    cell = core.Net("cell")
    input_t, h_prev, w, b = cell.AddExternalInputs("input_t", "h_prev", "w", "b")
    g = cell.FC([h_prev, w, b], "gates", axis=2)
    cell.Sum([g, input_t], g)
    h = cell.Tanh(g, "h")
    cell.AddExternalOutput(h)
    rnn.recurrent_net(net, cell, [(input_t, "x")], [(h_prev, "h0")], {h_prev: h}, scope="sc",
                      recompute_blobs_on_backward=[g])
    a = args_of(rnn_ops(net)[0])
    assert a["recompute_blobs_on_backward"] == ["gates"]
    bwd = a["backward_step_net"]
    assert [o.type for o in bwd.op[:2]] == ["FC", "Sum"]
    assert "gates" not in bwd.external_input  # recomputed, not a per-step scratch
    # an op with an output outside the set cannot be recomputed
    cell2 = core.Net("cell2")
    input_t, h_prev = cell2.AddExternalInputs("input_t", "h_prev")
    cat, _info = cell2.Concat([input_t, h_prev], ["cat", "cat_info"], axis=0)
    h = cell2.Mul([input_t, h_prev], "h")
    cell2.AddExternalOutput(h)
    with pytest.raises(ValueError, match="recompute"):
        rnn.recurrent_net(core.Net("m"), cell2, [(input_t, "x")], [(h_prev, "h0")], {h_prev: h},
                          recompute_blobs_on_backward=[cat])


def test_forward_only_has_no_backward_arguments():
    net, _, _ = build_mul("mul", forward_only=True)
    a = args_of(rnn_ops(net)[0])
    for k in ("backward_step_net", "param", "param_grads", "backward_link_internal", "outputs_with_grads",
              "recompute_blobs_on_backward"):
        assert k not in a
    assert a["step_net"].type == "simple"


def test_bad_calls_raise():
    cell, input_t, prev, out = mul_cell()
    with pytest.raises(ValueError, match="only one input"):
        rnn.recurrent_net(core.Net("n"), cell, [(input_t, "x"), (input_t, "y")], [(prev, "i")], {prev: out})
    with pytest.raises(ValueError, match="output_t_prev"):
        rnn.recurrent_net(core.Net("n"), cell, [(input_t, "x")], [(prev, "i")], {})
    with pytest.raises(ValueError, match="outputs_with_grads"):
        rnn.recurrent_net(core.Net("n"), cell, [(input_t, "x")], [(prev, "i")], {prev: out},
                          outputs_with_grads=(2,))
    with pytest.raises(ValueError, match="not written"):
        rnn.recurrent_net(core.Net("n"), cell, [(input_t, "x")], [(prev, "i")], {prev: "nobody_writes_me"})


def test_set_rnn_executor_config():
    net, _, _ = build_mul()
    op = rnn_ops(net)[0]
    rnn.set_rnn_executor_config(op, num_threads=3)
    rnn.set_rnn_executor_config(op, num_threads=2, max_cuda_streams=5)
    a = [x for x in op.arg if x.name.startswith("rnn_executor.")]
    assert {x.name: x.i for x in a} == {"rnn_executor.num_threads": 2, "rnn_executor.max_cuda_streams": 5}
    assert len(a) == 2
    with pytest.raises(ValueError, match="RecurrentNetwork"):
        rnn.set_rnn_executor_config(core.CreateOperator("Mul", ["a", "b"], ["c"]), num_threads=2)
    with pytest.raises(ValueError, match="num_threads"):
        rnn.set_rnn_executor_config(op, num_threads=0)


def test_gradient_op_definition():
    net, _, outs = build_mul("mul", owg=(0, 1))
    g, gmap = with_grads(net, outs, (0, 1))
    gops = [op for op in g.Proto().op if op.type == "RecurrentNetworkGradient"]
    assert len(gops) == 1
    gop = gops[0]
    fwd = rnn_ops(net)[0]
    assert list(gop.input) == ["output_t_all_grad", "output_t_last_grad"] + list(fwd.input) + list(fwd.output)
    assert list(gop.output) == ["input_grad", "init_grad"]
    assert {a.name for a in gop.arg} == {a.name for a in fwd.arg}
    assert gmap["input"] == "input_grad" and gmap["init"] == "init_grad"


def test_gradient_maker_checks_outputs_with_grads():
    net, _, outs = build_mul("mul", owg=(0,))
    # a gradient for output 1, which is not in outputs_with_grads: refuse to drop it
    with pytest.raises(ValueError, match="outputs_with_grads"):
        with_grads(net, outs, (1,))
    net, _, outs = build_mul("mul", owg=(0, 1), name="o2")
    with pytest.raises(ValueError, match="receives no gradient"):
        with_grads(net, outs, (0,))
    net, _, outs = build_mul("mul", forward_only=True, name="o3")
    with pytest.raises(ValueError, match="forward_only"):
        with_grads(net, outs, (0,))


def test_same_blob_as_two_initial_states_gets_summed_gradient():
    net = core.Net("n")
    cell = core.Net("cell")
    input_t, a_prev, b_prev = cell.AddExternalInputs("input_t", "a_prev", "b_prev")
    a = cell.Mul([input_t, a_prev], "a")
    b = cell.Mul([a, b_prev], "b")
    cell.AddExternalOutputs(a, b)
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(a_prev, "z"), (b_prev, "z")],
                             {a_prev: a, b_prev: b}, scope="sc", outputs_with_grads=(0, 2))
    g, gmap = with_grads(net, outs, (0, 2))
    gop = [op for op in g.Proto().op if op.type == "RecurrentNetworkGradient"][0]
    assert gop.output[0] == "x_grad"
    assert gop.output[1] == "z_grad" and gop.output[2] != "z_grad"
    assert gmap["z"] == "z_grad"
    sums = [op for op in g.Proto().op if op.type == "Sum" and list(op.output) == ["z_grad"]]
    assert len(sums) == 1 and len(sums[0].input) == 2 and "z_grad" in sums[0].input


def test_decode_names():
    data = np.frombuffer(b"rnn_a0\0rnn_\xc3\xa90\0", dtype=np.uint8).astype(np.int32)
    assert rnn._decode_names(data) == ["rnn_a0", "rnn_\u00e90"]
    assert rnn._decode_names(np.zeros((0,), np.int32)) == []


# ================================================================ running
@pytest.mark.parametrize("kind", ["mul", "sum_mul"])
@pytest.mark.parametrize("T,N,D", [(1, 1, 1), (4, 3, 2), (3, 5, 4)])
def test_mul_cells_forward_vs_python_loop(rng, kind, T, N, D):
    net, cell, outs = build_mul(kind)
    x = f32(rng, T, N, D, lo=0.5, hi=1.5)
    init = f32(rng, 1, N, D)
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", init)
    workspace.RunNetOnce(net)
    all_, last = workspace.FetchBlob(outs[0]), workspace.FetchBlob(outs[1])
    # reference 1: the cell net itself, run step by step in another workspace
    ref_all = np.zeros((T, N, D), np.float32)
    ws = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace("loop_ref", True)
    try:
        workspace.ResetWorkspace()
        o = init.copy()
        for t in range(T):
            workspace.FeedBlob("input_t", x[t:t + 1])
            workspace.FeedBlob("output_t_prev", o)
            workspace.RunNetOnce(cell)
            o = workspace.FetchBlob("output_t")
            ref_all[t] = o[0]
    finally:
        workspace.SwitchWorkspace(ws)
    np.testing.assert_array_equal(all_, ref_all)
    np.testing.assert_array_equal(last, ref_all[-1:])
    # reference 2: NumPy
    r_all, r_last = mul_reference(kind, x, init)
    report("mul_cell_%s_fwd" % kind, all_, r_all)
    np.testing.assert_allclose(all_, r_all, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last, r_last, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["mul", "sum_mul"])
@pytest.mark.parametrize("owg", [(0,), (1,), (0, 1)])
@pytest.mark.parametrize("init_shape", ["3d", "2d", "1d"])
def test_mul_cells_gradients_vs_finite_differences(rng, kind, owg, init_shape):
    T, N, D = 3, 2, 3
    net, _, outs = build_mul(kind, owg=owg)
    g, gmap = with_grads(net, outs, owg)
    x = f32(rng, T, N, D, lo=0.5, hi=1.2)
    init = {"3d": f32(rng, 1, N, D), "2d": f32(rng, N, D), "1d": f32(rng, D)}[init_shape]
    G = {0: f32(rng, T, N, D), 1: f32(rng, 1, N, D)}
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", init)
    workspace.RunNetOnce(net)
    got = analytic_grads(g, outs, owg, G, gmap, ["input", "init"])
    assert got["init"].shape == init.shape
    assert got["input"].shape == x.shape
    for blob in ("input", "init"):
        est = fd_grad(net, outs, owg, G, blob)
        report("mul_cell_%s_grad_%s" % (kind, blob), got[blob], est)
        np.testing.assert_allclose(got[blob], est, rtol=2e-2, atol=2e-3)


def lstm_cell_net(D, with_seq=True):
    """A hand-built LSTM cell: gates = FC(h_prev) + input_t; LSTMUnit."""
    cell = core.Net("lstm_cell")
    input_t, timestep, h_prev, c_prev, w, b, seq = cell.AddExternalInputs(
        "input_t", "timestep", "h_prev", "c_prev", "gates_w", "gates_b", "seq_lengths")
    gates = cell.FC([h_prev, w, b], "gates_t", axis=2)
    cell.Sum([gates, input_t], gates)
    ins = [h_prev, c_prev, gates] + ([seq] if with_seq else []) + [timestep]
    h, c = cell.LSTMUnit(ins, ["hidden_t", "cell_t"], forget_bias=0.5, sequence_lengths=with_seq)
    cell.AddExternalOutputs(h, c)
    return cell, input_t, timestep, h_prev, c_prev, h, c, gates


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_reference(x, h0, c0, w, b, seq, forget_bias):
    T, N, G = x.shape
    D = G // 4
    h = np.broadcast_to(h0.reshape(-1, D)[-N:] if h0.ndim > 1 else h0, (N, D)).astype(np.float64)
    c = np.broadcast_to(c0.reshape(-1, D)[-N:] if c0.ndim > 1 else c0, (N, D)).astype(np.float64)
    hs, cs = [], []
    for t in range(T):
        g = h @ w.T.astype(np.float64) + b + x[t]
        i, f, o, gg = (g[:, k * D:(k + 1) * D] for k in range(4))
        cn = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(gg)
        hn = sigmoid(o) * np.tanh(cn)
        valid = (t < seq).reshape(N, 1) if seq is not None else np.ones((N, 1), bool)
        h = np.where(valid, hn, h)
        c = np.where(valid, cn, c)
        hs.append(h)
        cs.append(c)
    hs = np.array(hs).reshape(T, N, D)
    cs = np.array(cs).reshape(T, N, D)
    return hs, h.reshape(1, N, D), cs, c.reshape(1, N, D)


def build_lstm(D, owg=(0,), forward_only=False, recompute=False, with_seq=True, name="outer"):
    net = core.Net(name)
    cell, input_t, timestep, h_prev, c_prev, h, c, gates = lstm_cell_net(D, with_seq)
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(h_prev, "h0"), (c_prev, "c0")],
                             {h_prev: h, c_prev: c}, timestep=timestep, scope="lstm", outputs_with_grads=owg,
                             forward_only=forward_only,
                             recompute_blobs_on_backward=[gates] if recompute else None)
    return net, outs


def feed_lstm(rng, T, N, D, init="3d"):
    x = f32(rng, T, N, 4 * D)
    shapes = {"3d": (1, N, D), "2d": (N, D), "1d": (D,)}[init]
    h0, c0 = f32(rng, *shapes), f32(rng, *shapes)
    w, b = f32(rng, 4 * D, D), f32(rng, 4 * D)
    seq = rng.randint(1, T + 1, size=N).astype(np.int32) if T > 0 else np.zeros(N, np.int32)
    for k, v in dict(x=x, h0=h0, c0=c0, gates_w=w, gates_b=b, seq_lengths=seq).items():
        workspace.FeedBlob(k, v)
    return x, h0, c0, w, b, seq


@pytest.mark.parametrize("with_seq", [True, False])
@pytest.mark.parametrize("init", ["3d", "2d", "1d"])
def test_hand_built_lstm_vs_numpy(rng, with_seq, init):
    T, N, D = 5, 3, 4
    net, outs = build_lstm(D, owg=(0,), with_seq=with_seq)
    x, h0, c0, w, b, seq = feed_lstm(rng, T, N, D, init)
    workspace.RunNetOnce(net)
    ref = lstm_reference(x, h0, c0, w, b, seq if with_seq else None, 0.5)
    for k in range(4):
        got = workspace.FetchBlob(outs[k])
        report("hand_lstm_fwd_%d" % k, got, ref[k])
        np.testing.assert_allclose(got, ref[k], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("owg", [(0,), (1,), (0, 1, 2, 3), (2,)])
@pytest.mark.parametrize("init", ["3d", "2d", "1d"])
def test_hand_built_lstm_gradients_vs_finite_differences(rng, owg, init):
    T, N, D = 3, 2, 2
    net, outs = build_lstm(D, owg=owg)
    g, gmap = with_grads(net, outs, owg)
    feed_lstm(rng, T, N, D, init)
    workspace.FeedBlob("seq_lengths", np.array([T, T - 1], np.int32))
    G = {0: f32(rng, T, N, D), 1: f32(rng, 1, N, D), 2: f32(rng, T, N, D), 3: f32(rng, 1, N, D)}
    workspace.RunNetOnce(net)
    blobs = ["x", "h0", "c0", "gates_w", "gates_b"]
    got = analytic_grads(g, outs, owg, G, gmap, blobs)
    for blob in blobs:
        est = fd_grad(net, outs, owg, G, blob)
        report("hand_lstm_grad_%s" % blob, got[blob], est)
        np.testing.assert_allclose(got[blob], est, rtol=3e-2, atol=3e-3)


def test_forward_only_equals_training_forward(rng):
    T, N, D = 4, 3, 3
    feed_lstm(rng, T, N, D)
    net_t, outs_t = build_lstm(D, name="train")
    net_f, outs_f = build_lstm(D, forward_only=True, name="infer")
    workspace.RunNetOnce(net_t)
    ref = [workspace.FetchBlob(o) for o in outs_t]
    workspace.RunNetOnce(net_f)
    got = [workspace.FetchBlob(o) for o in outs_f]
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)
    # forward-only runs longer than its rotating workspaces, repeatedly
    x = f32(rng, 11, N, 4 * D)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("seq_lengths", np.full(N, 11, np.int32))
    for _ in range(2):
        workspace.RunNetOnce(net_f)
        got = [workspace.FetchBlob(o) for o in outs_f]
    workspace.RunNetOnce(net_t)
    for a, o in zip(got, outs_t):
        np.testing.assert_array_equal(a, workspace.FetchBlob(o))


def test_recompute_gives_identical_gradients(rng):
    T, N, D = 4, 2, 3
    owg = (0, 3)
    G = {0: f32(rng, T, N, D), 3: f32(rng, 1, N, D)}
    res = []
    for recompute in (False, True):
        workspace.ResetWorkspace()
        feed_lstm(np.random.RandomState(7), T, N, D)
        net, outs = build_lstm(D, owg=owg, recompute=recompute, name="r%d" % recompute)
        g, gmap = with_grads(net, outs, owg)
        res.append(analytic_grads(g, outs, owg, G, gmap, ["x", "h0", "c0", "gates_w", "gates_b"]))
    for k in res[0]:
        np.testing.assert_array_equal(res[0][k], res[1][k])


def mul_grad_reference(x, init, G, owg):
    """Analytic gradients of sum_k <G_k, out_k> for o_t = x_t * o_{t-1}."""
    T, N, D = x.shape
    o = [init.reshape(1, N, D)[0].astype(np.float64)]
    for t in range(T):
        o.append(x[t] * o[-1])
    d_next = np.zeros((N, D))
    if 1 in owg:
        d_next = d_next + G[1][0]
    dx = np.zeros_like(x, dtype=np.float64)
    for t in reversed(range(T)):
        do = d_next + (G[0][t] if 0 in owg else 0)
        dx[t] = do * o[t]
        d_next = do * x[t]
    return dx, d_next.reshape(1, N, D)


def test_same_net_with_changing_T(rng):
    N, D = 2, 3
    owg = (0, 1)
    net, _, outs = build_mul("mul", owg=owg)
    g, gmap = with_grads(net, outs, owg)
    workspace.FeedBlob("input", f32(rng, 1, N, D))
    workspace.FeedBlob("init", f32(rng, 1, N, D))
    for o in outs:
        workspace.FeedBlob(str(o) + "_grad", np.zeros((1, N, D), np.float32))
    workspace.CreateNet(g)
    for T in (5, 2, 4, 0, 3):
        x = f32(rng, T, N, D, lo=0.5, hi=1.5)
        init = f32(rng, 1, N, D)
        G = {0: f32(rng, T, N, D), 1: f32(rng, 1, N, D)}
        workspace.FeedBlob("input", x)
        workspace.FeedBlob("init", init)
        for k in owg:
            workspace.FeedBlob(str(outs[k]) + "_grad", G[k])
        workspace.RunNet(g)
        r_all, r_last = mul_reference("mul", x, init)
        got_all, got_last = workspace.FetchBlob(outs[0]), workspace.FetchBlob(outs[1])
        assert got_all.shape == (T, N, D)
        np.testing.assert_allclose(got_all, r_all, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_last, r_last if T else init, rtol=1e-5, atol=1e-6)
        dx, dinit = mul_grad_reference(x, init, G, owg)
        gx, ginit = workspace.FetchBlob(gmap["input"]), workspace.FetchBlob(gmap["init"])
        assert gx.shape == (T, N, D)
        np.testing.assert_allclose(gx, dx, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ginit, dinit, rtol=1e-4, atol=1e-5)


def window_cell(name, k):
    """The step net s_t = x_t + the sum of the k rows of its input 'window' (a NetDef)."""
    cell = core.Net(name)
    x_t, window = cell.AddExternalInputs("x_t", "window")
    parts = cell.Split([window], ["w%d" % i for i in range(k)], axis=0)
    s_t = cell.Sum([x_t] + list(parts), "s_t")
    cell.AddExternalOutput(s_t)
    step = cell.Proto()
    step.type = "simple"
    return step


def test_windowed_link_reads_last_k_states(rng):
    """s_t = x_t + sum of the previous k states, read through one link with
    window k over a state with k initial rows (forward only, spec 1.4/1.5)."""
    T, N, D, k = 5, 2, 3, 3
    net = core.Net("win")
    step = window_cell("win_cell", k)
    op = core.CreateOperator(
        "RecurrentNetwork", ["x", "s_init"], ["s_all", "step_ws"],
        step_net=step, recurrent_states=["s_states"], initial_recurrent_state_ids=[1],
        link_internal=["window", "s_t", "x_t"], link_external=["s_states", "s_states", "x"],
        link_offset=[0, k, 0], link_window=[k, 1, 1],
        alias_src=["s_states"], alias_dst=["s_all"], alias_offset=[k], timestep="timestep",
        enable_rnn_executor=1)
    net.Proto().op.append(op)
    x = f32(rng, T, N, D)
    s0 = f32(rng, k, N, D)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("s_init", s0)
    workspace.RunNetOnce(net)
    rows = list(s0.astype(np.float64))
    for t in range(T):
        rows.append(x[t] + sum(rows[-k:]))
    np.testing.assert_allclose(workspace.FetchBlob("s_all"), np.array(rows[k:]), rtol=1e-5, atol=1e-5)


def test_retrieve_step_blobs_names(rng):
    T, N, D = 3, 2, 2
    net = core.Net("two_rnns")
    for i, (scope, inp, init) in enumerate([("r1", "in1", "i1"), ("r2", "in2", "i2")]):
        cell = core.Net("cell%d" % i)
        input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
        out = cell.Mul([input_t, prev], "output_t%d" % i)
        cell.AddExternalOutput(out)
        rnn.recurrent_net(net, cell, [(input_t, inp)], [(prev, init)], {prev: out}, scope=scope)
    for b in ("in1", "in2"):
        workspace.FeedBlob(b, f32(rng, T, N, D))
    for b in ("i1", "i2"):
        workspace.FeedBlob(b, f32(rng, 1, N, D))
    workspace.RunNetOnce(net)
    names = rnn.retrieve_step_blobs(net, "extractTest")
    assert all(isinstance(n, str) for n in names)
    # Caffe2 returned bytes, so code written for it decodes each name: that gives the same str
    decoded = [n.decode() for n in names]
    assert decoded == names and all(type(d) is str for d in decoded)
    for t in range(T):
        assert "extractTest_input_t%d" % t in names
        assert "extractTest_2_input_t%d" % t in names
        assert "extractTest_output_t0%d" % t in names
        assert "extractTest_2_output_t1%d" % t in names
        np.testing.assert_array_equal(workspace.FetchBlob("extractTest_input_t%d" % t),
                                      workspace.FetchBlob("in1")[t:t + 1])
        np.testing.assert_array_equal(workspace.FetchBlob("extractTest_2_input_t%d" % t),
                                      workspace.FetchBlob("in2")[t:t + 1])
    for n in names:
        assert workspace.HasBlob(n)


def test_retrieve_step_blobs_before_run_raises():
    net, _, _ = build_mul()
    with pytest.raises(Exception, match="step_workspaces"):
        rnn.retrieve_step_blobs(net)


def test_top_level_exports():
    import recurrent
    assert recurrent.recurrent_net is rnn.recurrent_net
    assert recurrent.retrieve_step_blobs is rnn.retrieve_step_blobs
    assert recurrent.set_rnn_executor_config is rnn.set_rnn_executor_config
    assert recurrent.recurrent is rnn
    assert recurrent.rnn_cell.LSTM is not None
    from recurrent import gru_cell
    assert gru_cell.GRUCell is recurrent.rnn_cell.GRUCell


def test_pass_through_cell_gets_own_link_blobs(rng):
    """o_t = x_t + o_{t-1} (one Sum): its gradient ops are all pass-through,
    so one gradient blob would have to be three links at once (Caffe2 built
    no backward net at all). Copies give each link its own blob."""
    T, N, D = 4, 2, 3
    net = core.Net("cumsum")
    cell = core.Net("cumsum_cell")
    input_t, prev = cell.AddExternalInputs("input_t", "o_prev")
    out = cell.Sum([input_t, prev], "o")
    cell.AddExternalOutput(out)
    owg = (0, 1)
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "o0")], {prev: out}, scope="cs",
                             outputs_with_grads=owg)
    a = args_of(rnn_ops(net)[0])
    assert len(set(a["backward_link_internal"])) == 3
    assert {o.type for o in a["backward_step_net"].op} == {"Copy"}
    g, gmap = with_grads(net, outs, owg)
    x, o0 = f32(rng, T, N, D), f32(rng, N, D)
    G = {0: f32(rng, T, N, D), 1: f32(rng, 1, N, D)}
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("o0", o0)
    got = analytic_grads(g, outs, owg, G, gmap, ["x", "o0"])
    np.testing.assert_allclose(workspace.FetchBlob(outs[0]), np.cumsum(x, 0) + o0, rtol=1e-5, atol=1e-5)
    # d/dx_t = sum_{s >= t} G0_s + G1
    dx = np.cumsum(G[0][::-1], 0)[::-1] + G[1]
    np.testing.assert_allclose(got["x"], dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["o0"], dx[0], rtol=1e-5, atol=1e-5)


def test_state_input_without_gradient(rng):
    """A cell that never reads its state input differentiably: no backward
    link for it (Caffe2 raised KeyError); its initial-state gradient is 0."""
    T, N, D = 3, 2, 2
    net = core.Net("nograd")
    cell = core.Net("nograd_cell")
    input_t, prev = cell.AddExternalInputs("input_t", "h_prev")
    out = cell.Mul([input_t, input_t], "h")
    cell.AddExternalOutput(out)
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "h0")], {prev: out}, scope="ng",
                             outputs_with_grads=(0,))
    a = args_of(rnn_ops(net)[0])
    assert a["backward_link_internal"] == ["h_grad", "input_t_grad"]
    g, gmap = with_grads(net, outs, (0,))
    x = f32(rng, T, N, D)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("h0", f32(rng, 1, N, D))
    G = {0: f32(rng, T, N, D)}
    got = analytic_grads(g, outs, (0,), G, gmap, ["x", "h0"])
    np.testing.assert_allclose(got["x"], 2 * x * G[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["h0"], np.zeros((1, N, D), np.float32))


def test_link_internals_never_write_blobs_of_the_outer_workspace():
    """A link's internal blob is the step workspace's own: an outer blob of the same name (here the
    cell's input name fed in the outer workspace, and a backward link internal renamed to the initial
    state) keeps its value; before, the link op made it a view of the external's rows."""
    import numpy as np
    from recurrent import core, workspace
    from recurrent import recurrent as rnn
    net = core.Net("outer_li")
    cell = core.Net("cell_li")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "h0")], {prev: out}, scope="r",
                             outputs_with_grads=(0,))
    net.AddGradientOperators({str(outs[0]): "g_all"})
    gop = [op for op in net.Proto().op if op.type == "RecurrentNetworkGradient"][0]
    for a in gop.arg:
        if a.name == "link_internal":
            a.strings = [("h0" if s == "input_t" else s) for s in a.strings]
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("h0", np.ones(2, np.float32))
    workspace.FeedBlob("input_t", np.full(5, 7, np.float32))
    workspace.FeedBlob("g_all", np.ones((3, 2, 2), np.float32))
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("input_t").tolist() == [7] * 5
    assert workspace.FetchBlob("h0").tolist() == [1, 1]
    assert workspace.FetchBlob("h0_grad").shape == (2,)


# ================================================================ outputs by name (Caffe2's Elman test)
def _mul_op_with_outputs(order):
    """build_mul's RecurrentNetwork (two aliases of the state) with its outputs rearranged:
    'state_between' lists [all, state, last] (as Caffe2's hypothesis_test Elman net lists
    [output, hidden, hidden_output]), 'reordered' lists [last, state, all]. Its
    outputs_with_grads counts outputs: both aliases get a gradient."""
    net, _, _ = build_mul("mul", owg=(0, 1), name="named_" + order)
    (op,) = rnn_ops(net)
    state = args_of(op)["recurrent_states"][0]
    all_, last, ws = [str(o) for o in op.output]
    new = [all_, state, last] if order == "state_between" else [last, state, all_]
    del op.output[:]
    op.output.extend(new + [ws])
    owg = [new.index(all_), new.index(last)]
    op.arg[:] = [a if a.name != "outputs_with_grads" else make_argument(a.name, owg) for a in op.arg]
    return net, op, new, owg, (all_, state, last)


@pytest.mark.parametrize("order", ["state_between", "reordered"])
def test_outputs_by_name_state_output_and_any_order(rng, order):
    """A RecurrentNetwork's outputs before the step workspaces are taken by name, as Caffe2 did:
    the alias destinations in any order, and a recurrent state's own name, which holds all the
    state's rows (init then every step). Gradients through the aliases match finite differences
    with outputs_with_grads naming outputs (the gradient op gets alias indices)."""
    T, N, D = 4, 2, 3
    net, op, outs, owg, (all_, state, last) = _mul_op_with_outputs(order)
    x, init = f32(rng, T, N, D, lo=0.5, hi=1.2), f32(rng, 1, N, D)
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", init)
    workspace.RunNetOnce(net)
    r_all, r_last = mul_reference("mul", x, init)
    np.testing.assert_allclose(workspace.FetchBlob(all_), r_all, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob(last), r_last, rtol=1e-5, atol=1e-6)
    got_state = workspace.FetchBlob(state)
    assert got_state.shape == (T + 1, N, D)
    np.testing.assert_allclose(got_state, np.concatenate([init, r_all]), rtol=1e-5, atol=1e-6)
    G = {k: f32(rng, *workspace.FetchBlob(outs[k]).shape) for k in owg}
    gnet, gmap = with_grads(net, outs, owg, name="g_" + order)
    (gop,) = [o for o in gnet.Proto().op if o.type == "RecurrentNetworkGradient"]
    assert args_of(gop)["outputs_with_grads"] == [0, 1]  # alias indices: all is alias 0, last alias 1
    got = analytic_grads(gnet, outs, owg, G, gmap, ["input", "init"])
    for b in ("input", "init"):
        np.testing.assert_allclose(got[b], fd_grad(net, outs, owg, G, b), rtol=2e-3, atol=2e-3)


def test_outputs_by_name_bad_outputs_raise():
    net, op, outs, owg, (all_, state, last) = _mul_op_with_outputs("state_between")
    ws = str(op.output[-1])
    workspace.FeedBlob("input", np.ones((2, 1, 3), np.float32))
    workspace.FeedBlob("init", np.ones((1, 1, 3), np.float32))
    for bad, msg in [([all_, "bogus", last], r"output 1 'bogus' is neither an alias destination \(alias_dst\) "
                                             r"nor a recurrent state"),
                     ([all_, state], r"alias_dst\[1\] 'output_t_last' is not among the outputs"),
                     ([all_], r"has 2 outputs but 2 aliases")]:
        del op.output[:]
        op.output.extend(bad + [ws])
        with pytest.raises(ValueError, match=msg):
            workspace.RunNetOnce(net)
    del op.output[:]
    op.output.extend(outs + [ws])
    workspace.RunNetOnce(net)  # the workspace and the net are fine afterwards
    np.testing.assert_allclose(workspace.FetchBlob(state)[1:], workspace.FetchBlob(all_))
    del op.output[:]
    op.output.extend([all_, last, all_, ws])
    with pytest.raises(ValueError, match=r"outputs 0 and 2 are the same blob 'output_t_all'"):
        workspace.RunNetOnce(net)
    del op.output[:]
    op.output.extend([all_, state, last, state, ws])
    with pytest.raises(ValueError, match=r"outputs 1 and 3 are the same blob '%s'" % state.replace("/", "\\/")):
        workspace.RunNetOnce(net)


# ================================================================ gradients through any alias of a state
def _mul_op_with_aliases(spec, name):
    """build_mul's RecurrentNetwork with its aliases replaced by ``spec``: a list of alias offsets of the
    state (ints) and the string "state" (the state's own name as an output); every output gets a
    gradient. Returns (net, outputs, owg)."""
    net, _, _ = build_mul("sum_mul", owg=(0,), name=name)
    (op,) = rnn_ops(net)
    state = args_of(op)["recurrent_states"][0]
    offs = [o for o in spec if o != "state"]
    dsts = ["%s_alias%d" % (name, j) for j in range(len(offs))]
    outs, it = [], iter(dsts)
    for o in spec:
        outs.append(state if o == "state" else next(it))
    ws = str(op.output[-1])
    del op.output[:]
    op.output.extend(outs + [ws])
    new = {"alias_src": [state] * len(offs), "alias_dst": dsts, "alias_offset": offs,
           "outputs_with_grads": list(range(len(outs)))}
    op.arg[:] = [a if a.name not in new else make_argument(a.name, new[a.name]) for a in op.arg]
    return net, outs, list(range(len(outs)))


def check_aliases_and_gradients(rng, net, outs, owg, spec, rows, inputs, name, atol):
    """After a forward run of ``net``: each output is its alias's rows of ``rows`` (the state's, initial rows
    first; spec as _mul_op_with_aliases's), and the gradients of ``inputs`` for random output gradients
    match finite differences."""
    for o, out in zip(spec, outs):
        want = rows if o == "state" else (rows[o:] if o >= 0 else rows[len(rows) + o:])
        np.testing.assert_allclose(workspace.FetchBlob(out), want, rtol=1e-5, atol=atol)
    G = {k: f32(rng, *workspace.FetchBlob(outs[k]).shape) for k in owg}
    gnet, gmap = with_grads(net, outs, owg, name="g_" + name)
    got = analytic_grads(gnet, outs, owg, G, gmap, inputs)
    for b in inputs:
        want = fd_grad(net, outs, owg, G, b)
        report("%s %s" % (name, b), got[b], want)
        np.testing.assert_allclose(got[b], want, rtol=2e-3, atol=2e-3)


def _state_rows(x, init):
    r_all, _ = mul_reference("sum_mul", x, init)
    return np.concatenate([init.astype(np.float64), r_all])


@pytest.mark.parametrize("spec", [
    ["state"],                 # Caffe2's hypothesis_test Elman net lists the state as an output
    [0],                       # an alias of all rows, the same thing by alias
    [1, "state", -1],          # the state between the usual two aliases
    [-1, -1],                  # two aliases of the last row: both gradients count (one was dropped)
    [1, 1, 2],                 # several aliases of the steps' rows (offset 2 skips step 0's row)
    [-2, -4, 3],               # the last rows by negative offsets (-4 of T + 1 = 4 rows reaches row 0)
])
@pytest.mark.parametrize("T", [3, 1, 0])
def test_gradients_through_any_alias_and_state_outputs(rng, spec, T):
    """Every alias of a recurrent state (any offset, several per state) and a state named as an output
    pass their gradient back: the analytic gradients of input and initial state match finite
    differences. Before, a state output was refused, offsets other than +1 / -1 were refused, and of
    two aliases with the same offset sign only one gradient counted (silently)."""
    N, D = 2, 3
    if any(isinstance(o, int) and (o > T + 1 or o < -(T + 1)) for o in spec):
        pytest.skip("offset outside the state's rows at this T")
    name = "anyalias_%d_%s" % (T, "_".join(str(o).replace("-", "m") for o in spec))
    net, outs, owg = _mul_op_with_aliases(spec, name)
    x, init = f32(rng, T, N, D, lo=0.5, hi=1.2), f32(rng, 1, N, D)
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", init)
    workspace.RunNetOnce(net)
    check_aliases_and_gradients(rng, net, outs, owg, spec, _state_rows(x, init), ["input", "init"], name, 1e-6)


def test_state_output_gradient_matches_its_aliases(rng):
    """A gradient G on the state output (all T + 1 rows) gives the input gradient of G[1:] on the
    offset-1 alias, and its initial-state gradient plus G[0]; each bitwise the same with the executor
    off and on (1, 2 and 8 threads, always used: min_op_us 0), and so for a mix of aliases of one
    state with the state output."""
    T, N, D = 5, 2, 3
    x, init = f32(rng, T, N, D, lo=0.5, hi=1.2), f32(rng, 1, N, D)
    G = f32(rng, T + 1, N, D)
    specs = {"state": ["state"], "alias": [1], "mixed": [1, "state", -1, 0, -1]}
    res = {}
    for threads in (0, 1, 2, 8):  # 0: the executor off
        for kind, spec in specs.items():
            name = "stateout_%s_%d" % (kind, threads)
            net, outs, owg = _mul_op_with_aliases(spec, name)
            (op,) = rnn_ops(net)
            op.arg[:] = [a if a.name != "enable_rnn_executor" else make_argument(a.name, int(threads > 0))
                         for a in op.arg]
            if threads:
                rnn.set_rnn_executor_config(op, num_threads=threads, min_op_us=0)
            workspace.FeedBlob("input", x)
            workspace.FeedBlob("init", init)
            workspace.RunNetOnce(net)
            gnet, gmap = with_grads(net, outs, owg, name="g_" + name)
            if kind == "mixed":
                Gk = {k: f32(np.random.default_rng(k), *workspace.FetchBlob(outs[k]).shape) for k in owg}
            else:
                Gk = {0: G if kind == "state" else G[1:]}
            res[kind, threads] = analytic_grads(gnet, outs, owg, Gk, gmap, ["input", "init"])
    for b in ("input", "init"):
        for kind in specs:
            for threads in (1, 2, 8):
                np.testing.assert_array_equal(res[kind, 0][b], res[kind, threads][b])
        np.testing.assert_array_equal(res["state", 0]["input"], res["alias", 0]["input"])
    np.testing.assert_allclose(res["state", 0]["init"], res["alias", 0]["init"] + G[:1], rtol=1e-6, atol=1e-7)


def test_alias_gradient_errors(rng):
    """A gradient through an alias of a blob that is not a recurrent state, through an alias other than
    offset -1 of a state with several initial rows, or shaped unlike its alias: a ValueError naming
    it; the gradient net then runs."""
    T, N, D = 3, 2, 3
    net, outs, owg = _mul_op_with_aliases([1, -1], "aliaserr")
    (op,) = rnn_ops(net)
    x, init = f32(rng, T, N, D, lo=0.5, hi=1.2), f32(rng, 1, N, D)
    workspace.FeedBlob("input", x)
    workspace.FeedBlob("init", init)
    workspace.RunNetOnce(net)
    gnet, gmap = with_grads(net, outs, owg, name="g_aliaserr")
    G = {0: f32(rng, T, N, D), 1: f32(rng, 1, N, D)}
    workspace.FeedBlob(outs[0] + "_grad", f32(rng, T + 1, N, D))  # one row too many
    workspace.FeedBlob(outs[1] + "_grad", G[1])
    with pytest.raises(ValueError, match=r"gradient '%s_grad' of alias '%s' \(offset 1: rows \[1, %d\) of state "
                       r".*\) has shape \(%d, %d, %d\) float32, expected \(%d, %d, %d\)"
                       % (outs[0], outs[0], T + 1, T + 1, N, D, T, N, D)):
        workspace.RunNetOnce(gnet)
    got = analytic_grads(gnet, outs, owg, G, gmap, ["input"])  # usable afterwards
    np.testing.assert_allclose(got["input"], fd_grad(net, outs, owg, G, "input"), rtol=2e-3, atol=2e-3)
    # an alias of the input sequence (not a state) with a gradient
    bad = core.Net("g_aliaserr_src")
    bad.Proto().op.extend([o for o in gnet.Proto().op])
    (gop,) = [o for o in bad.Proto().op if o.type == "RecurrentNetworkGradient"]
    gop.arg[:] = [a if a.name != "alias_src" else make_argument(a.name, ["input", a.value()[1]]) for a in gop.arg]
    with pytest.raises(ValueError, match=r"alias 0 \('input' -> '%s'\) has a gradient \(outputs_with_grads\[0\]\) "
                       r"but 'input' is not a recurrent state" % outs[0]):
        workspace.RunNetOnce(bad)


def _window_op(spec, name, k, threads=0):
    """window_cell's RecurrentNetwork (s_t = x_t + the sum of the k rows before it; state 's_states' with k
    initial rows, step t writing row t + k) with a backward step net that adds ds_t into each of the k
    window rows (one link of window 1 per row: backward links have no window) and copies it to dx_t.
    ``spec`` as _mul_op_with_aliases's (offsets of the state, "state" for the state itself as an output);
    every output has a gradient. ``threads``: 0 the executor off, else its thread count (min_op_us 0).
    Returns (net, outputs, owg)."""
    step = window_cell(name + "_cell", k)
    bstep = core.Net(name + "_bcell")
    bstep.Copy(["s_t_grad"], ["x_t_grad"])
    for i in range(k):
        bstep.Sum(["wg%d" % i, "s_t_grad"], ["wg%d" % i])
    offs = [o for o in spec if o != "state"]
    dsts = ["%s_alias%d" % (name, j) for j in range(len(offs))]
    it = iter(dsts)
    outs = ["s_states" if o == "state" else next(it) for o in spec]
    op = core.CreateOperator(
        "RecurrentNetwork", ["x", "s_init"], outs + [name + "_ws"],
        step_net=step, backward_step_net=bstep.Proto(), recurrent_states=["s_states"],
        initial_recurrent_state_ids=[1], param=[],
        link_internal=["window", "s_t", "x_t"], link_external=["s_states", "s_states", "x"],
        link_offset=[0, k, 0], link_window=[k, 1, 1],
        backward_link_internal=["s_t_grad", "x_t_grad"] + ["wg%d" % i for i in range(k)],
        backward_link_external=["s_states_grad", "x_grad"] + ["s_states_grad"] * k,
        backward_link_offset=[k, 0] + list(range(k)),
        alias_src=["s_states"] * len(offs), alias_dst=dsts, alias_offset=offs,
        outputs_with_grads=list(range(len(outs))), timestep="timestep", enable_rnn_executor=int(threads > 0))
    if threads:
        rnn.set_rnn_executor_config(op, num_threads=threads, min_op_us=0)
    net = core.Net(name)
    net.Proto().op.append(op)
    return net, outs, list(range(len(outs)))


def _window_rows(x, init, k):
    rows = list(init.astype(np.float64))
    for t in range(len(x)):
        rows.append(x[t] + sum(rows[-k:]))
    return np.array(rows).reshape((len(init) + len(x),) + init.shape[1:])


@pytest.mark.parametrize("spec", [
    [2, -1],          # the usual pair: the steps' rows and the last row
    ["state"],        # all rows, initial ones included
    [0, 1, -3],       # from row 0, from the second initial row, the last three (initial rows at small T)
    [3, 3, -1, -1],   # repeats add up
])
@pytest.mark.parametrize("T", [4, 1, 0])
def test_windowed_state_gradients_through_any_alias(rng, spec, T):
    """A state with k = 2 initial rows read through a window of 2 (step t writes row t + 2): the gradient
    through any alias of it (rows of the steps go to the step that wrote them, initial rows to the
    initial state) matches finite differences. Before, every alias but offset -1 of such a state was
    refused ("a gradient flows through an alias other than offset -1 only for a state with one initial
    row")."""
    N, D, k = 2, 3, 2
    if any(isinstance(o, int) and (o > T + k or o < -(T + k)) for o in spec):
        pytest.skip("offset outside the state's rows at this T")
    name = "winalias_%d_%s" % (T, "_".join(str(o).replace("-", "m") for o in spec))
    net, outs, owg = _window_op(spec, name, k)
    x, init = f32(rng, T, N, D), f32(rng, k, N, D)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("s_init", init)
    workspace.RunNetOnce(net)
    check_aliases_and_gradients(rng, net, outs, owg, spec, _window_rows(x, init, k), ["x", "s_init"], name, 1e-5)


def test_windowed_state_gradients_executor_bitwise(rng):
    """The windowed state's alias gradients (several aliases, initial rows included) are bitwise the same
    with the executor off and on at 1, 2 and 8 threads, at T = 7, 1 and 0."""
    N, D, k = 2, 3, 3
    spec = [3, "state", -1, 1, -2]
    for T in (7, 1, 0):
        x, init = f32(rng, T, N, D), f32(rng, k, N, D)
        res = {}
        for threads in (0, 1, 2, 8):
            name = "winexec_%d_%d" % (T, threads)
            net, outs, owg = _window_op(spec, name, k, threads)
            workspace.FeedBlob("x", x)
            workspace.FeedBlob("s_init", init)
            workspace.RunNetOnce(net)
            G = {j: f32(np.random.default_rng(j), *workspace.FetchBlob(outs[j]).shape) for j in owg}
            gnet, gmap = with_grads(net, outs, owg, name="g_" + name)
            res[threads] = analytic_grads(gnet, outs, owg, G, gmap, ["x", "s_init"])
        for b in ("x", "s_init"):
            for threads in (1, 2, 8):
                np.testing.assert_array_equal(res[0][b], res[threads][b])


def test_windowed_state_alias_gradient_needs_matching_rows(rng):
    """The windowed state's steps write rows from 2 on (its write link's offset); an initial state of 3 rows
    (which the forward run accepts: its step 0 then overwrites initial row 2) leaves the steps' rows
    unmatched with the alias rows: a gradient through an alias other than offset -1 is refused, naming the
    alias and both numbers; then a run with 2 initial rows is correct."""
    T, N, D, k = 3, 2, 3, 2
    net, outs, owg = _window_op([2], "winrows", k)
    gnet, gmap = with_grads(net, outs, owg, name="g_winrows")
    workspace.FeedBlob("x", f32(rng, T, N, D))
    workspace.FeedBlob("s_init", f32(rng, k + 1, N, D))
    workspace.RunNetOnce(net)
    workspace.FeedBlob(outs[0] + "_grad", f32(rng, *workspace.FetchBlob(outs[0]).shape))
    with pytest.raises(ValueError, match=r"alias 0 \('s_states' -> 'winrows_alias0', offset 2\) has a gradient, "
                       r"but state 's_states' \(6, 2, 3\) float32 has 3 initial rows and its steps write rows "
                       r"from 2 on"):
        workspace.RunNetOnce(gnet)
    init = f32(rng, k, N, D)
    workspace.FeedBlob("s_init", init)
    G = {0: f32(rng, T, N, D)}
    workspace.RunNetOnce(net)
    got = analytic_grads(gnet, outs, owg, G, gmap, ["s_init"])
    np.testing.assert_allclose(got["s_init"], fd_grad(net, outs, owg, G, "s_init"), rtol=2e-3, atol=2e-3)
