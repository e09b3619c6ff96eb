"""Dropout / DropoutGrad (csrc/ops/dropout.c), brew.dropout and
rnn_cell.DropoutCell: values against NumPy, the masks' statistics and
determinism, finite-difference gradients, Dropout inside recurrent step nets
(executor on and off bit for bit, recompute on backward) and bad input."""

import numpy as np
import pytest

from recurrent import brew, core, recurrent, rnn_cell, workspace
from recurrent.model_helper import ModelHelper
from recurrent.proto import make_argument
from test_ops_clip_math import check_grads, raises
from test_ops_math import f32, feed, op, run


def scale_of(ratio):
    return np.float32(1) / (np.float32(1) - np.float32(ratio))


# ---------------------------------------------------------------- the op
@pytest.mark.parametrize("shape", [(3, 4), (1000,), (), (2, 0, 3), (2, 3, 5)])
@pytest.mark.parametrize("ratio", [0.5, 0.2, 0.9])
def test_dropout_values_against_mask(rng, shape, ratio):
    x = f32(rng, *shape)
    feed(x=x)
    y, m = run("Dropout", ["x"], ["y", "m"], ratio=ratio, seed=5)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert m.dtype == np.int32 and m.shape == x.shape
    assert set(np.unique(m)) <= {0, 1}
    # Y = X * (mask ? 1 / (1 - ratio) : 0), in float32, bit for bit
    want = x * np.where(m != 0, scale_of(ratio), np.float32(0))
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("ratio", [0.1, 0.5, 0.75])
def test_dropout_keep_fraction(ratio):
    n = 200000
    feed(x=np.ones(n, np.float32))
    _, m = run("Dropout", ["x"], ["y", "m"], ratio=ratio, seed=11)
    p = 1 - ratio
    # the kept count is Binomial(n, 1 - ratio): within 5 standard deviations
    assert abs(m.sum() - n * p) < 5 * np.sqrt(n * p * (1 - p))
    # neighbouring elements are independent: P(both kept) = p^2
    both = np.mean(m[:-1] & m[1:])
    assert abs(both - p * p) < 5 * np.sqrt(p * p * (1 - p * p) / n)


def test_dropout_seed_and_streams(rng):
    x = f32(rng, 64, 32)
    feed(x=x)
    a = run("Dropout", ["x"], ["y", "m"], seed=3)[1]
    b = run("Dropout", ["x"], ["y", "m"], seed=3)[1]
    c = run("Dropout", ["x"], ["y", "m"], seed=4)[1]
    np.testing.assert_array_equal(a, b)  # a fresh op with the same seed: the same mask
    assert not np.array_equal(a, c)
    # without a seed two ops draw different masks
    d = run("Dropout", ["x"], ["y", "m"])[1]
    e = run("Dropout", ["x"], ["y", "m"])[1]
    assert not np.array_equal(d, e)
    # one op run again (a created net): a new mask each run, the same sequence for the same seed
    seqs = []
    for _ in range(2):
        net = core.Net("drop")
        net.Dropout(["x"], ["y", "m"], seed=9)
        workspace.CreateNet(net, overwrite=True)
        masks = []
        for _ in range(3):
            workspace.RunNet(net)
            masks.append(workspace.FetchBlob("m"))
        assert not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])
        seqs.append(masks)
    for u, v in zip(*seqs):
        np.testing.assert_array_equal(u, v)


def test_dropout_test_mode_and_ratio_zero(rng):
    x = f32(rng, 5, 6)
    feed(x=x)
    y, m = run("Dropout", ["x"], ["y", "m"], ratio=0.7, is_test=1)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(m, np.ones_like(m))
    y = run("Dropout", ["x"], ["y"], is_test=1)
    np.testing.assert_array_equal(y, x)
    y, m = run("Dropout", ["x"], ["y", "m"], ratio=0.0)
    np.testing.assert_array_equal(y, x)
    assert m.min() == 1


def test_dropout_in_place_and_nonfinite(rng):
    x = f32(rng, 50)
    x[:4] = [np.inf, -np.inf, np.nan, 2.0]
    feed(x=x)
    y_ref, m = run("Dropout", ["x"], ["y", "m"], ratio=0.5, seed=21)
    workspace.RunOperatorOnce(op("Dropout", ["x"], ["x", "m2"], ratio=0.5, seed=21))
    np.testing.assert_array_equal(workspace.FetchBlob("x"), y_ref)
    np.testing.assert_array_equal(workspace.FetchBlob("m2"), m)
    # a dropped inf or NaN gives NaN (X * 0), as Caffe2 and torch
    for i in range(3):
        assert np.isnan(y_ref[i]) if (m[i] == 0 or np.isnan(x[i])) else y_ref[i] == x[i] * 2


@pytest.mark.parametrize("is_test", [0, 1])
def test_dropout_grad_op(rng, is_test):
    dy = f32(rng, 4, 7)
    m = (rng.uniform(size=(4, 7)) < 0.6).astype(np.int32)
    feed(dy=dy, m=m)
    if is_test:
        dx = run("DropoutGrad", ["dy"], ["dx"], ratio=0.4, is_test=1)
        np.testing.assert_array_equal(dx, dy)
    else:
        dx = run("DropoutGrad", ["dy", "m"], ["dx"], ratio=0.4)
        np.testing.assert_array_equal(dx, dy * np.where(m != 0, scale_of(0.4), np.float32(0)))
        workspace.RunOperatorOnce(op("DropoutGrad", ["dy", "m"], ["dy"], ratio=0.4))
        np.testing.assert_array_equal(workspace.FetchBlob("dy"), dx)


def test_dropout_gradient_maker_and_finite_differences(rng):
    x = f32(rng, 6, 5)
    o = op("Dropout", ["x"], ["y", "m"], ratio=0.3, seed=17)
    check_grads(o, [x], [0])
    g, gi = core.GradientRegistry.GetGradientForOp(o, ["y_grad", None])
    assert [x.type for x in g] == ["DropoutGrad"] and list(g[0].input) == ["y_grad", "m"]
    assert gi == ["x_grad"]
    o = op("Dropout", ["x"], ["y"], is_test=1)
    check_grads(o, [x], [0])
    g, _ = core.GradientRegistry.GetGradientForOp(o, ["y_grad"])
    assert list(g[0].input) == ["y_grad"]


def test_dropout_bad_input(rng):
    feed(x=f32(rng, 3, 4), xi=np.ones((3, 4), np.int32), m=np.ones((3, 5), np.int32), mf=f32(rng, 3, 4))
    raises(ValueError, r"op Dropout #0: argument 'ratio' must be in \[0, 1\), got 1",
           op("Dropout", ["x"], ["y", "m"], ratio=1.0))
    raises(ValueError, r"argument 'ratio' must be in \[0, 1\), got -0.1",
           op("Dropout", ["x"], ["y", "m"], ratio=-0.1))
    raises(ValueError, r"op Dropout #0: with is_test=0 the outputs are \(Y, mask\): output 1 \(the mask\) is "
           r"missing for input blob 'x'", op("Dropout", ["x"], ["y"]))
    raises(TypeError, r"op Dropout #0: input 0 blob 'xi' must be float32, got \(3, 4\) int32",
           op("Dropout", ["xi"], ["y", "m"]))
    raises(ValueError, r"op DropoutGrad #0: input 1 blob 'm' \(the mask\) of shape \(3, 5\) int32 must have "
           r"the shape of input 0 blob 'x' \(3, 4\) float32", op("DropoutGrad", ["x", "m"], ["dx"]))
    raises(TypeError, r"op DropoutGrad #0: input 1 blob 'mf' must be int32, got \(3, 4\) float32",
           op("DropoutGrad", ["x", "mf"], ["dx"]))
    raises(ValueError, r"op DropoutGrad #0: with is_test=0 the inputs are \(dY, mask\), got 1 input",
           op("DropoutGrad", ["x"], ["dx"]))
    raises(ValueError, r"with is_test=1 the inputs are \(dY\), got 2 inputs",
           op("DropoutGrad", ["x", "m"], ["dx"], is_test=1))
    # the workspace stays usable
    y, m = run("Dropout", ["x"], ["y", "m"], seed=1)
    assert y.shape == (3, 4)


def test_brew_dropout():
    m = ModelHelper(name="bd")
    with pytest.raises(ValueError, match="'is_test' is required"):
        brew.dropout(m, "x", "y", ratio=0.5)
    out = brew.dropout(m, "x", "y", ratio=0.25, is_test=0, seed=2)
    assert str(out) == "y"
    o = m.net.Proto().op[-1]
    assert o.type == "Dropout" and list(o.output) == ["y", "_y_mask"]
    feed(x=np.ones((4, 4), np.float32))
    workspace.RunNetOnce(m.net)
    y, mask = workspace.FetchBlob("y"), workspace.FetchBlob("_y_mask")
    np.testing.assert_array_equal(y, np.where(mask != 0, scale_of(0.25), np.float32(0)))


# ---------------------------------------------------------------- in recurrent step nets
def tanh_rnn_with_dropout(D, seed=7, recompute=False, ratio=0.3):
    """h_t = Dropout(tanh(FC(h_{t-1}) + x_t)); with recompute
    h_t = tanh(Dropout(FC(h_{t-1}) + x_t)), the Dropout recomputed on
    backward."""
    m = ModelHelper(name="m")
    step = ModelHelper(name="step", param_model=m)
    step.Proto().external_input.extend(["input_t", "timestep", "h_prev"])
    fc = brew.fc(step, "h_prev", "fc_t", D, D, axis=2)
    s = step.net.Sum([fc, "input_t"], "s_t")
    kw = dict(ratio=ratio, is_test=0)
    if seed is not None:
        kw["seed"] = seed
    if recompute:
        step.net.Tanh(step.net.Dropout(s, ["d_t", "mask_t"], **kw)[0], "h_t")
    else:
        step.net.Dropout(step.net.Tanh(s, "a_t"), ["h_t", "mask_t"], **kw)
    step.Proto().external_output.extend(["h_t"])
    out = recurrent.recurrent_net(net=m.net, cell_net=step.net, inputs=[("input_t", "x")],
                                  initial_cell_inputs=[("h_prev", "h0")], links={"h_prev": "h_t"}, scope="r",
                                  timestep="timestep",
                                  recompute_blobs_on_backward=["d_t", "mask_t"] if recompute else None)
    return m, out


def set_executor(net, enable, threads=None, num_workspaces=None):
    for o in net.Proto().op:
        if o.type.startswith("RecurrentNetwork"):
            o.arg[:] = [a for a in o.arg if a.name not in ("enable_rnn_executor", "num_workspaces")]
            o.arg.append(make_argument("enable_rnn_executor", int(enable)))
            if threads:
                recurrent.set_rnn_executor_config(o, num_threads=threads)
            if num_workspaces and o.type == "RecurrentNetwork":
                o.arg.append(make_argument("num_workspaces", num_workspaces))


def np_tanh_rnn(x, h0, w, b, masks, scale):
    h = h0[0].astype(np.float64)
    hs = []
    for t in range(x.shape[0]):
        h = np.tanh(h @ w.T.astype(np.float64) + b + x[t]) * masks[t].reshape(h.shape) * scale
        hs.append(h)
    return np.stack(hs)


def step_masks(net, T):
    names = set(recurrent.retrieve_step_blobs(net, prefix="st"))
    return [workspace.FetchBlob("st_mask_t%d" % t) for t in range(T) if "st_mask_t%d" % t in names]


def test_step_net_dropout_vs_numpy_and_masks_per_timestep(rng):
    T, N, D = 6, 3, 4
    m, out = tanh_rnn_with_dropout(D)
    workspace.RunNetOnce(m.param_init_net)
    x, h0 = f32(rng, T, N, D), f32(rng, 1, N, D)
    feed(x=x, h0=h0, fc_t_w=f32(rng, D, D), fc_t_b=f32(rng, D))
    workspace.RunNetOnce(m.net)
    masks = step_masks(m.net, T)
    assert len(masks) == T
    # every timestep draws its own mask
    assert len({mk.tobytes() for mk in masks}) == T
    w, b = workspace.FetchBlob("fc_t_w"), workspace.FetchBlob("fc_t_b")
    ref = np_tanh_rnn(x, h0, w, b, masks, scale_of(0.3))
    np.testing.assert_allclose(workspace.FetchBlob(out[0]), ref, rtol=1e-5, atol=1e-6)


def test_step_net_dropout_finite_differences(rng):
    """With a seed, each RunNetOnce (a fresh RecurrentNetwork op) draws the
    same masks, so the loss is a function of the inputs and weights."""
    from test_rnn_cell import fd_check
    T, N, D = 4, 2, 3
    m, out = tanh_rnn_with_dropout(D)
    workspace.RunNetOnce(m.param_init_net)
    feed(x=f32(rng, T, N, D), h0=f32(rng, 1, N, D), fc_t_w=f32(rng, D, D), fc_t_b=f32(rng, D))
    fd_check(rng, m, out, (0,), ["x", "h0", "fc_t_w", "fc_t_b"], "dropout_rnn")


def test_step_net_dropout_without_seed(rng):
    """Without a seed, each created RecurrentNetwork op draws its own seed:
    two RunNetOnce calls give different masks; within one op every timestep
    still draws its own mask."""
    T, N, D = 5, 4, 8
    m, out = tanh_rnn_with_dropout(D, seed=None)
    workspace.RunNetOnce(m.param_init_net)
    feed(x=f32(rng, T, N, D), h0=f32(rng, 1, N, D))
    workspace.RunNetOnce(m.net)
    a = step_masks(m.net, T)
    workspace.RunNetOnce(m.net)
    b = step_masks(m.net, T)
    assert len({mk.tobytes() for mk in a}) == T
    assert any(not np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("T", [0, 1, 2, 7])
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_step_net_dropout_seeded_executor_bitwise(rng, T, threads):
    N, D = 3, 4
    m, out = tanh_rnn_with_dropout(D, seed=123)
    loss = m.net.SumElements(out[0], "loss")
    gmap = m.AddGradientOperators([loss])
    workspace.RunNetOnce(m.param_init_net)
    feed(x=f32(rng, T, N, D), h0=f32(rng, 1, N, D), fc_t_w=f32(rng, D, D), fc_t_b=f32(rng, D))
    blobs = [str(out[0]), str(out[1]), "loss"] + [str(gmap[b]) for b in ("x", "h0", "fc_t_w", "fc_t_b")]
    results = []
    for enable in (0, 1):
        net = core.Net(m.net.Proto())
        net.Proto().name = "n%d_%d_%d" % (T, threads, enable)
        set_executor(net, enable, threads)
        workspace.CreateNet(net, overwrite=True)
        runs = []
        for _ in range(3):  # each run of the op draws new masks; both paths draw the same ones
            workspace.RunNet(net.Proto().name)
            runs.append({b: workspace.FetchBlob(b).copy() for b in blobs})
        if T > 1:
            assert not np.array_equal(runs[0][str(out[0])], runs[1][str(out[0])])
        results.append(runs)
    for r0, r1 in zip(*results):
        for b in blobs:
            np.testing.assert_array_equal(r0[b], r1[b], err_msg=b)


def test_forward_only_rotating_workspaces_bitwise(rng):
    """Forward-only nets rotate step workspaces (2 serially, 4 with the
    executor by default): the masks depend on the timestep, not on which
    instance runs it."""
    T, N, D = 9, 2, 3
    m = ModelHelper(name="fo")
    step = ModelHelper(name="step", param_model=m)
    step.Proto().external_input.extend(["input_t", "timestep", "h_prev"])
    a = step.net.Tanh(step.net.Sum([brew.fc(step, "h_prev", "fc_t", D, D, axis=2), "input_t"], "s_t"), "a_t")
    step.net.Dropout(a, ["h_t", "mask_t"], ratio=0.5, seed=77)
    step.Proto().external_output.extend(["h_t"])
    out = recurrent.recurrent_net(net=m.net, cell_net=step.net, inputs=[("input_t", "x")],
                                  initial_cell_inputs=[("h_prev", "h0")], links={"h_prev": "h_t"}, scope="fo",
                                  timestep="timestep", forward_only=True)
    workspace.RunNetOnce(m.param_init_net)
    feed(x=f32(rng, T, N, D), h0=f32(rng, 1, N, D))
    got = []
    for enable, nws in ((0, 2), (1, 3), (1, 4), (0, 1)):
        net = core.Net(m.net.Proto())
        set_executor(net, enable, 2, num_workspaces=nws)
        workspace.RunNetOnce(net)
        got.append(workspace.FetchBlob(out[0]).copy())
    for g in got[1:]:
        np.testing.assert_array_equal(got[0], g)


def test_recompute_dropout_on_backward(rng):
    """A Dropout recomputed on backward draws the forward's masks: the
    gradients equal those of the same cell without recompute."""
    T, N, D = 5, 2, 3
    res = []
    for recompute in (False, True):
        workspace.ResetWorkspace()
        m, out = tanh_rnn_with_dropout(D, seed=None, recompute=True)
        step_nets = [a.n for o in m.net.Proto().op for a in o.arg
                     if a.name in ("step_net", "backward_step_net")]
        drops = [so for n in step_nets for so in n.op if so.type == "Dropout"]
        assert len(drops) == 2, "recurrent_net must put the recomputed Dropout into the backward step net"
        for so in drops:  # recurrent_net seeded both copies alike; give both runs one seed
            seeds = [x for x in so.arg if x.name == "seed"]
            assert seeds, "recurrent_net must seed a recomputed Dropout"
            seeds[0].i = 5
        if not recompute:  # the same ops, the backward reading the forward's blobs instead
            for o in m.net.Proto().op:
                for a in o.arg:
                    if a.name == "recompute_blobs_on_backward":
                        a.strings[:] = []
        loss = m.net.SumElements(out[0], "loss")
        gmap = m.AddGradientOperators([loss])
        workspace.RunNetOnce(m.param_init_net)
        r = np.random.RandomState(3)
        feed(x=f32(r, T, N, D), h0=f32(r, 1, N, D), fc_t_w=f32(r, D, D), fc_t_b=f32(r, D))
        workspace.RunNetOnce(m.net)
        res.append([workspace.FetchBlob(str(gmap[b])).copy() for b in ("x", "fc_t_w", "h0")])
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_backward_recompute_dropout_without_seed_is_an_error(rng):
    T, N, D = 3, 2, 3
    m, out = tanh_rnn_with_dropout(D, seed=None, recompute=True)
    for o in m.net.Proto().op:
        for a in o.arg:
            if a.name == "backward_step_net":
                for so in a.n.op:
                    so.arg[:] = [x for x in so.arg if x.name != "seed"]
    loss = m.net.SumElements(out[0], "loss")
    m.AddGradientOperators([loss])
    workspace.RunNetOnce(m.param_init_net)
    feed(x=f32(rng, T, N, D), h0=f32(rng, 1, N, D))
    with pytest.raises(ValueError, match=r"step op Dropout #\d+ of the backward step net recomputes a "
                                         r"forward "
                                         r"Dropout and needs that op's argument 'seed'"):
        workspace.RunNetOnce(m.net)


# ---------------------------------------------------------------- DropoutCell
def lstm_cell(name, D, H, **kw):
    return rnn_cell.LSTMCell(input_size=D, hidden_size=H, forget_bias=0.0, memory_optimization=False,
                             name=name, **kw)


def test_dropout_cell_structure_and_errors():
    with pytest.raises(ValueError, match="'is_test' is required"):
        rnn_cell.DropoutCell(lstm_cell("c", 2, 3), dropout_ratio=0.5)
    with pytest.raises(ValueError, match=r"dropout_ratio must be in \[0, 1\)"):
        rnn_cell.DropoutCell(lstm_cell("c", 2, 3), dropout_ratio=1.5, is_test=0)
    inner = lstm_cell("c", 2, 3)
    cell = rnn_cell.DropoutCell(inner, dropout_ratio=0.5, is_test=0, name="d")
    assert cell.get_state_names() == inner.get_state_names()
    assert cell.get_output_dim() == 3 and cell.initializer is inner.initializer
    m = ModelHelper(name="dc")
    output, _ = cell.apply_over_sequence(m, "x")
    assert [o.type for o in m.net.Proto().op][-1] == "Dropout"
    assert str(output).endswith("_with_dropout_mask0")
    # ratio None / 0, or forward_only: no Dropout op
    for kw in (dict(dropout_ratio=None, is_test=0), dict(dropout_ratio=0.0, is_test=0),
               dict(dropout_ratio=0.5, is_test=0, forward_only=True)):
        m = ModelHelper(name="dc")
        rnn_cell.DropoutCell(lstm_cell("c", 2, 3), **kw).apply_over_sequence(m, "x")
        assert "Dropout" not in [o.type for o in m.net.Proto().op]


def stacked(rng, T, N, D, H, ratio, is_test, seed=31):
    model = ModelHelper(name="st")
    cells = [rnn_cell.DropoutCell(lstm_cell(None, D, H), dropout_ratio=ratio, is_test=is_test, seed=seed),
             lstm_cell(None, H, H)]
    multi = rnn_cell.MultiRNNCell(cells, name="ml")
    output, states = multi.apply_over_sequence(model, "x")
    workspace.RunNetOnce(model.param_init_net)
    return model, output, states


def test_dropout_cell_between_layers(rng):
    """In a MultiRNNCell a DropoutCell drops, per step, the output layer 0
    hands to layer 1; the recurrent path of layer 0 is untouched."""
    T, N, D, H = 5, 2, 3, 4
    model, output, states = stacked(rng, T, N, D, H, 0.4, 0)
    step_ops = [o for o in model.net.Proto().op if o.type == "RecurrentNetwork"][0]
    step = [a.n for a in step_ops.arg if a.name == "step_net"][0]
    drops = [o for o in step.op if o.type == "Dropout"]
    assert len(drops) == 1 and str(drops[0].input[0]) == "ml/layer_0/hidden_state"
    feed(x=f32(rng, T, N, D))
    workspace.RunNetOnce(model.net)
    names = set(recurrent.retrieve_step_blobs(model.net, prefix="s"))
    h0_name, m_name = "ml/layer_0/hidden_state", str(drops[0].output[1])
    for t in range(T):
        h = workspace.FetchBlob("s_%s%d" % (h0_name, t))
        mk = workspace.FetchBlob("s_%s%d" % (m_name, t))
        dropped = workspace.FetchBlob("s_%s%d" % (str(drops[0].output[0]), t))
        np.testing.assert_array_equal(dropped, h * np.where(mk != 0, scale_of(0.4), np.float32(0)))
    assert any(n.startswith("s_" + m_name) for n in names)


def test_dropout_cell_is_test_equals_plain_stack(rng):
    T, N, D, H = 4, 3, 2, 3
    x = f32(rng, T, N, D)
    outs = []
    for with_dropout in (True, False):
        workspace.ResetWorkspace()
        model = ModelHelper(name="p")
        c0 = lstm_cell(None, D, H)
        cells = [rnn_cell.DropoutCell(c0, dropout_ratio=0.5, is_test=1) if with_dropout else c0,
                 lstm_cell(None, H, H)]
        output, _ = rnn_cell.MultiRNNCell(cells, name="ml").apply_over_sequence(model, "x")
        workspace.RunNetOnce(model.param_init_net)
        r = np.random.RandomState(8)
        for p in sorted(str(p) for p in model.params):
            feed(**{p: f32(r, *workspace.FetchBlob(p).shape)})
        feed(x=x)
        workspace.RunNetOnce(model.net)
        outs.append(workspace.FetchBlob(output).copy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_dropout_cell_gradients_finite_differences(rng):
    from test_rnn_cell import fd_check
    T, N, D, H = 3, 2, 2, 2
    model, output, states = stacked(rng, T, N, D, H, 0.5, 0)
    r = np.random.RandomState(4)
    params = sorted(str(p) for p in model.params)
    for p in params:
        feed(**{p: f32(r, *workspace.FetchBlob(p).shape, lo=-0.8, hi=0.8)})
    feed(x=f32(rng, T, N, D))
    outs = [output] + list(states)
    fd_check(rng, model, outs, (0,), ["x"] + [p for p in params if "initial" not in p], "dropout_cell")
