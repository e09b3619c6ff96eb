"""LayerNorm and LayerNormGradient (csrc/ops/layer_norm.c), their gradient
maker (recurrent/_grad_norm.py) and brew.layer_norm: NumPy float64
references, empty tensors, in place, NaN, bad input with exact messages,
gradients by finite differences, the backward pass through core.Net and
through a recurrent step net."""

import numpy as np
import pytest

from recurrent import brew, core, gradient_checker, rnn_cell, workspace
from recurrent.model_helper import ModelHelper
from test_ops_clip_math import check_grads, raises
from test_ops_math import close, f32, feed, op, run  # the same helpers


# ---------------------------------------------------------------- references (float64)
def split(shape, axis):
    ax = axis + len(shape) if axis < 0 else axis
    return ax, int(np.prod(shape[:ax], dtype=np.int64)), int(np.prod(shape[ax:], dtype=np.int64))


def ln_ref(x, axis=1, eps=1e-5, gamma=None, beta=None):
    """(Y, mean, stdev) in float64; mean and stdev of shape dims[:axis] + (1,)."""
    ax, left, n = split(x.shape, axis)
    xr = x.astype(np.float64).reshape(left, n)
    mean = xr.mean(axis=1) if n else np.zeros(left)
    var = ((xr - mean[:, None]) ** 2).mean(axis=1) if n else np.zeros(left)
    std = np.sqrt(var + eps)
    y = (xr - mean[:, None]) / std[:, None]
    if gamma is not None:
        y = y * gamma.astype(np.float64).reshape(-1) + beta.astype(np.float64).reshape(-1)
    stats = x.shape[:ax] + (1,)
    return y.reshape(x.shape), mean.reshape(stats), std.reshape(stats)


def ln_grad_ref(dy, x, mean, std, axis=1, gamma=None):
    """(dX, dgamma, dbeta) of Y = xhat (* gamma + beta), xhat = (X - mean) / std, in float64."""
    ax, left, n = split(x.shape, axis)
    m = mean.astype(np.float64).reshape(left, 1)
    s = std.astype(np.float64).reshape(left, 1)
    d = dy.astype(np.float64).reshape(left, n)
    xh = (x.astype(np.float64).reshape(left, n) - m) / s
    g = d * gamma.astype(np.float64).reshape(-1) if gamma is not None else d
    dx = (g - g.mean(axis=1, keepdims=True) - xh * (g * xh).mean(axis=1, keepdims=True)) / s
    pshape = x.shape[ax:]
    return dx.reshape(x.shape), (d * xh).sum(axis=0).reshape(pshape), d.sum(axis=0).reshape(pshape)


SHAPES_AXES = [((4, 5), 1), ((4, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), -2), ((2, 3, 4), 0),
               ((6,), 0), ((2, 3, 2, 5), -1), ((3, 1), 1)]


def params(rng, shape, axis):
    ax = split(shape, axis)[0]
    return f32(rng, *shape[ax:], lo=0.5, hi=2.0), f32(rng, *shape[ax:])


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("eps", [1e-5, 1e-2, 0.5])
@pytest.mark.parametrize("affine", [0, 1])
def test_layer_norm(rng, shape, axis, eps, affine):
    x = f32(rng, *shape, lo=-3, hi=2)
    g, b = params(rng, shape, axis)
    feed(x=x, g=g, b=b)
    ins = ["x", "g", "b"] if affine else ["x"]
    y, mean, std = run("LayerNorm", ins, ["y", "mean", "std"], axis=axis, epsilon=eps,
                       elementwise_affine=affine)
    ry, rm, rs = ln_ref(x, axis, eps, *((g, b) if affine else ()))
    close(mean, rm, 1e-6)
    close(std, rs, 1e-6)
    close(y, ry, 2e-5)
    assert mean.shape == std.shape == x.shape[:split(shape, axis)[0]] + (1,)   # Caffe2's stats shape


def test_layer_norm_defaults_axis_1_epsilon_1e5(rng):
    x = f32(rng, 2, 3, 4, lo=-0.01, hi=0.01)   # small variance: epsilon shows
    feed(x=x)
    y, mean, std = run("LayerNorm", ["x"], ["y", "mean", "std"])
    ry, rm, rs = ln_ref(x, 1, 1e-5)
    assert mean.shape == (2, 1)
    close(y, ry, 2e-5)
    close(std, rs, 1e-7)


def test_layer_norm_population_variance_with_epsilon_exact():
    # one row [0, 2]: mean 1, population variance 1, stdev sqrt(1 + eps)
    feed(x=np.array([[0.0, 2.0]], np.float32))
    y, mean, std = run("LayerNorm", ["x"], ["y", "mean", "std"], epsilon=0.21)
    assert mean.tolist() == [[1.0]]
    assert std[0, 0] == np.float32(np.sqrt(1.21))
    close(y, np.array([[-1, 1]]) / np.sqrt(1.21), 1e-7)


def test_layer_norm_large_offset_two_pass(rng):
    # a single pass (E[x^2] - E[x]^2) in float32 loses the variance next to a large mean
    x = (1e4 + f32(rng, 3, 50)).astype(np.float32)
    feed(x=x)
    y, mean, std = run("LayerNorm", ["x"], ["y", "mean", "std"])
    ry, rm, rs = ln_ref(x)
    close(std, rs, 1e-5)
    close(y, ry, 1e-4)


def test_layer_norm_same_bits_every_run(rng):
    x = f32(rng, 7, 1001, lo=-5, hi=5)
    feed(x=x)
    a = run("LayerNorm", ["x"], ["y", "m", "s"])
    b = run("LayerNorm", ["x"], ["y2", "m2", "s2"])
    assert all(u.tobytes() == v.tobytes() for u, v in zip(a, b))


@pytest.mark.parametrize("affine", [0, 1])
def test_layer_norm_in_place(rng, affine):
    x = f32(rng, 3, 4, 5)
    g, b = params(rng, (3, 4, 5), 2)
    feed(x=x, g=g, b=b)
    ins = ["x", "g", "b"] if affine else ["x"]
    ref = run("LayerNorm", ins, ["y", "m", "s"], axis=2, elementwise_affine=affine)
    got = run("LayerNorm", ins, ["x", "m2", "s2"], axis=2, elementwise_affine=affine)
    assert all(u.tobytes() == v.tobytes() for u, v in zip(ref, got))


@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((2, 0, 3), 2), ((0,), 0), ((2, 0, 3), 1), ((3, 0), 1)])
@pytest.mark.parametrize("affine", [0, 1])
def test_layer_norm_empty(rng, shape, axis, affine):
    x = np.zeros(shape, np.float32)
    ax = split(shape, axis)[0]
    g, b = np.ones(shape[ax:], np.float32), np.zeros(shape[ax:], np.float32)
    feed(x=x, g=g, b=b, dy=x)
    ins = ["x", "g", "b"] if affine else ["x"]
    y, mean, std = run("LayerNorm", ins, ["y", "mean", "std"], axis=axis, epsilon=0.25,
                       elementwise_affine=affine)
    assert y.shape == shape and mean.shape == std.shape == shape[:ax] + (1,)
    # rows of no values (N = 0, left > 0): mean 0, stdev sqrt(epsilon)
    assert (mean == 0).all() and (std == 0.5).all()
    gins = ["dy", "y", "mean", "std", "x"] + (["g"] if affine else [])
    gouts = ["dx", "dg", "db"] if affine else ["dx"]
    res = run("LayerNormGradient", gins, gouts, axis=axis, epsilon=0.25, elementwise_affine=affine)
    res = res if affine else [res]
    assert res[0].shape == shape
    for r in res[1:]:
        assert r.shape == shape[ax:] and (r == 0).all()   # sums over no rows


def test_layer_norm_nan_inf_propagate(rng):
    x = f32(rng, 4, 5)
    x[0, 1] = np.nan
    x[1, 2] = np.inf
    feed(x=x)
    y, mean, std = run("LayerNorm", ["x"], ["y", "mean", "std"])
    assert np.isnan(y[0]).all() and np.isnan(mean[0, 0]) and np.isnan(std[0, 0])
    assert not np.isfinite(y[1]).all() and not np.isfinite(mean[1, 0])
    close(y[2:], ln_ref(x[2:])[0], 2e-5)
    # epsilon 0 on a constant row: 0 / 0
    feed(c=np.ones((2, 3), np.float32))
    y = run("LayerNorm", ["c"], ["yc", "mc", "sc"], epsilon=0.0)[0]
    assert np.isnan(y).all()


# ---------------------------------------------------------------- gradient op
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("affine", [0, 1])
def test_layer_norm_gradient_op(rng, shape, axis, affine):
    x = f32(rng, *shape, lo=-2, hi=2)
    g, b = params(rng, shape, axis)
    dy = f32(rng, *shape)
    feed(x=x, g=g, b=b, dy=dy)
    ins = ["x", "g", "b"] if affine else ["x"]
    run("LayerNorm", ins, ["y", "mean", "std"], axis=axis, epsilon=0.1, elementwise_affine=affine)
    gins = ["dy", "y", "mean", "std", "x"] + (["g"] if affine else [])
    gouts = ["dx", "dg", "db"] if affine else ["dx"]
    res = run("LayerNormGradient", gins, gouts, axis=axis, epsilon=0.1, elementwise_affine=affine)
    res = res if affine else [res]
    mean, std = workspace.FetchBlob("mean"), workspace.FetchBlob("std")
    rdx, rdg, rdb = ln_grad_ref(dy, x, mean, std, axis, g if affine else None)
    close(res[0], rdx, 2e-5)
    if affine:
        close(res[1], rdg, 2e-5)
        close(res[2], rdb, 2e-5)
        # dX over dY (in place)
        dx2 = run("LayerNormGradient", gins, ["dy", "dg2", "db2"], axis=axis, epsilon=0.1,
                  elementwise_affine=1)
        assert [a.tobytes() for a in dx2] == [a.tobytes() for a in res]
    else:
        assert run("LayerNormGradient", gins, ["dy"], axis=axis, epsilon=0.1).tobytes() == res[0].tobytes()


def test_layer_norm_gradient_op_scratch_grows(rng):
    # one op instance run on growing N (the dgamma / dbeta sums are resized) gives the reference each time
    net = core.Net("grow")
    net.LayerNormGradient(["dy", "y", "mean", "std", "x", "g"], ["dx", "dg", "db"], elementwise_affine=1)
    for n in (3, 40, 7):
        x, dy, g = f32(rng, 5, n), f32(rng, 5, n), f32(rng, n)
        feed(x=x, g=g, b=np.zeros(n, np.float32), dy=dy)
        run("LayerNorm", ["x", "g", "b"], ["y", "mean", "std"], elementwise_affine=1)
        if n == 3:
            workspace.CreateNet(net)
        workspace.RunNet("grow")
        rdx, rdg, rdb = ln_grad_ref(dy, x, workspace.FetchBlob("mean"), workspace.FetchBlob("std"), 1, g)
        close(workspace.FetchBlob("dx"), rdx, 2e-5)
        close(workspace.FetchBlob("dg"), rdg, 2e-5)
        close(workspace.FetchBlob("db"), rdb, 2e-5)


# ---------------------------------------------------------------- gradients by finite differences
@pytest.mark.parametrize("shape,axis", [((3, 4), 1), ((2, 3, 4), 2), ((2, 3, 2), 1), ((3, 5), -1)])
def test_layer_norm_gradient_affine(rng, shape, axis):
    x = f32(rng, *shape, lo=-2, hi=2)
    g, b = params(rng, shape, axis)
    o = op("LayerNorm", ["x", "g", "b"], ["y", "m", "s"], axis=axis, epsilon=1e-3, elementwise_affine=1)
    check_grads(o, [x, g, b])


@pytest.mark.parametrize("eps", [0.3, 1e-5])
def test_layer_norm_gradient_x(rng, eps):
    # the loss 1/2 sum(Y^2) = N var / (2 (var + eps)) per row moves with X only through epsilon:
    # a large epsilon on a small variance makes that gradient large enough to check
    x = f32(rng, 3, 6, lo=-0.5, hi=0.5)
    check_grads(op("LayerNorm", ["x"], ["y", "m", "s"], epsilon=eps), [x], stepsize=1e-3, threshold=1e-2)


@pytest.mark.parametrize("shape,axis", [((3, 5), 1), ((2, 3, 4), -2), ((4, 3), 0)])
def test_layer_norm_net_gradient(rng, shape, axis):
    # loss = sum(LayerNorm(x) * w) for a fixed random w: a gradient through every term of dX
    net = core.Net("lnw")
    y = net.LayerNorm(["x"], ["y", "mean", "std"], axis=axis, epsilon=1e-4)[0]
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    x = f32(rng, *shape, lo=-2, hi=2)
    w = f32(rng, *shape)
    gradient_checker.NetGradientChecker.Check(net, ["loss"], {"x": x, "w": w}, "x", step_size=1e-3,
                                              threshold=1e-2, print_net=False)


# ---------------------------------------------------------------- the gradient maker
def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def test_layer_norm_gradient_maker():
    ops, g = G(op("LayerNorm", ["x"], ["y", "m", "s"], axis=-1, epsilon=0.5), ["y_grad", None, None])
    assert g == ["x_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("LayerNormGradient", ["y_grad", "y", "m", "s", "x"], ["x_grad"])]
    assert sorted((a.name, a.value()) for a in ops[0].arg) == [("axis", -1), ("epsilon", 0.5)]
    ops, g = G(op("LayerNorm", ["x", "g", "b"], ["y", "m", "s"], elementwise_affine=1), ["dy", None, None])
    assert g == ["x_grad", "g_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("LayerNormGradient", ["dy", "y", "m", "s", "x", "g"], ["x_grad", "g_grad", "b_grad"])]
    assert [(a.name, a.value()) for a in ops[0].arg] == [("elementwise_affine", 1)]


def test_layer_norm_gradient_maker_no_output_gradient_and_stats():
    o = op("LayerNorm", ["x", "g", "b"], ["y", "m", "s"], elementwise_affine=1)
    assert G(o, [None, "m_grad", "s_grad"]) == ([], [None, None, None])
    # gradients on mean / stdev are ignored (documented in _grad_norm.py): the same op as without them
    with_stats = G(o, ["y_grad", "m_grad", "s_grad"])
    assert str(with_stats[0][0]) == str(G(o, ["y_grad", None, None])[0][0])


def test_layer_norm_gradient_maker_in_place_refused():
    with pytest.raises(ValueError, match=r"^LayerNorm gradient: the forward op computes 'x' in place, so its "
                                         r"input X is lost; the gradient needs it$"):
        G(op("LayerNorm", ["x"], ["x", "m", "s"]), ["x_grad", None, None])


def test_layer_norm_gradient_same_blob_as_x_and_gamma(rng):
    # Y = xhat * x + b with x of shape dims[0:] (axis 0): the two contributions to x's gradient are summed
    net = core.Net("same")
    net.SumElements(net.Mul([net.LayerNorm(["x", "x", "b"], ["y", "m", "s"], axis=0, elementwise_affine=1)[0],
                             "w"], "yw"), "loss")
    x = f32(rng, 6, lo=0.5, hi=2)
    values = {"x": x, "b": f32(rng, 6), "w": f32(rng, 6)}
    gradient_checker.NetGradientChecker.Check(net, ["loss"], values, "x", step_size=1e-3, threshold=1e-2,
                                              print_net=False)


def test_layer_norm_add_gradient_operators(rng):
    net = core.Net("ln_bw")
    y, _, _ = net.LayerNorm(["x", "g", "b"], ["y", "mean", "std"], axis=2, epsilon=0.01, elementwise_affine=1)
    net.SumElements(net.Mul([y, "w"], "yw"), "loss")
    gmap = net.AddGradientOperators(["loss"])
    assert [o.type for o in net.Proto().op][-1] == "LayerNormGradient"
    assert "mean" not in gmap and "std" not in gmap
    x, w = f32(rng, 2, 3, 4), f32(rng, 2, 3, 4)
    g, b = params(rng, (2, 3, 4), 2)
    feed(x=x, w=w, g=g, b=b)
    workspace.RunNetOnce(net)
    ry, rm, rs = ln_ref(x, 2, 0.01, g, b)
    close(workspace.FetchBlob("y"), ry, 2e-5)
    rdx, rdg, rdb = ln_grad_ref(w, x, workspace.FetchBlob("mean"), workspace.FetchBlob("std"), 2, g)
    close(workspace.FetchBlob(str(gmap["x"])), rdx, 2e-5)
    close(workspace.FetchBlob(str(gmap["g"])), rdg, 2e-5)
    close(workspace.FetchBlob(str(gmap["b"])), rdb, 2e-5)


# ---------------------------------------------------------------- brew.layer_norm
def test_brew_layer_norm_names_params_values_and_gradients(rng):
    m = ModelHelper(name="bln")
    with core.NameScope("enc"):
        out, mean, std = brew.layer_norm(m, "x", "ln", 5, initial_scale=1.5, initial_bias=-0.25)
    assert (str(out), str(mean), str(std)) == ("enc/ln_biased", "enc/ln_mean", "enc/ln_stdev")
    assert m.params == ["enc/ln_scale", "enc/ln_bias"]
    assert m.weights == ["enc/ln_scale"] and m.biases == ["enc/ln_bias"]
    assert m.get_param_info("enc/ln_scale").shape == [5]
    ops = m.net.Proto().op
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [
        ("LayerNorm", ["enc/x"], ["enc/ln", "enc/ln_mean", "enc/ln_stdev"]),
        ("Mul", ["enc/ln", "enc/ln_scale"], ["enc/ln_scaled"]),
        ("Add", ["enc/ln_scaled", "enc/ln_bias"], ["enc/ln_biased"])]
    assert sorted((a.name, a.value()) for a in ops[0].arg) == [("axis", 1), ("epsilon", pytest.approx(1e-4))]
    bargs = [sorted((a.name, a.value()) for a in o.arg) for o in ops[1:]]
    assert bargs == [[("axis", 1), ("broadcast", 1)]] * 2
    init = m.param_init_net.Proto().op
    assert [(o.type, list(o.output)) for o in init] == [("ConstantFill", ["enc/ln_scale"]),
                                                        ("ConstantFill", ["enc/ln_bias"])]

    w = f32(rng, 4, 5)
    m.net.SumElements(m.net.Mul([out, "w"], "ow"), "loss")
    gmap = m.AddGradientOperators(["loss"])
    x = f32(rng, 4, 5, lo=-2, hi=2)
    feed(**{"enc/x": x, "w": w})
    workspace.RunNetOnce(m.param_init_net)
    workspace.RunNetOnce(m.net)
    ry, rm, rs = ln_ref(x, 1, 1e-4)
    close(workspace.FetchBlob("enc/ln_biased"), ry * 1.5 - 0.25, 2e-5)
    close(workspace.FetchBlob("enc/ln_stdev"), rs, 1e-6)
    _, rdg, rdb = ln_grad_ref(w, x, rm, rs, 1, np.full(5, 1.5))
    close(workspace.FetchBlob(str(gmap["enc/ln_scale"])), rdg, 2e-5)
    close(workspace.FetchBlob(str(gmap["enc/ln_bias"])), rdb, 2e-5)
    rdx = ln_grad_ref(w, x, workspace.FetchBlob("enc/ln_mean"), workspace.FetchBlob("enc/ln_stdev"), 1,
                      np.full(5, 1.5))[0]
    close(workspace.FetchBlob(str(gmap["enc/x"])), rdx, 2e-5)


@pytest.mark.parametrize("axis,dim_in", [(-1, 4), (2, 4), (1, [3, 4]), (-2, [3, 4])])
def test_brew_layer_norm_axes(rng, axis, dim_in):
    m = ModelHelper(name="blnax")
    out = brew.layer_norm(m, "x", "y", dim_in, axis=axis, epsilon=1e-3)[0]
    x = f32(rng, 2, 3, 4)
    feed(x=x)
    workspace.RunNetOnce(m.param_init_net)
    s = np.linspace(0.5, 2, np.prod(dim_in)).reshape(dim_in).astype(np.float32)
    b = np.linspace(-1, 1, np.prod(dim_in)).reshape(dim_in).astype(np.float32)
    feed(y_scale=s, y_bias=b)
    workspace.RunNetOnce(m.net)
    close(workspace.FetchBlob(str(out)), ln_ref(x, axis, 1e-3)[0] * s + b, 2e-5)


def test_brew_layer_norm_in_a_step_model():
    outer = ModelHelper(name="outer")
    step = ModelHelper(name="step", param_model=outer)
    with core.NameScope("cell"):
        out = brew.layer_norm(step, "h", "ln", 8)[0]
    assert str(out) == "cell/ln_biased"
    assert outer.params == ["cell/ln_scale", "cell/ln_bias"]   # created in the param model
    assert [list(o.output) for o in outer.param_init_net.Proto().op] == [["cell/ln_scale"], ["cell/ln_bias"]]
    assert outer.net.Proto().op == [] and [o.type for o in step.net.Proto().op] == ["LayerNorm", "Mul", "Add"]


class _LayerNormRNNCell(rnn_cell.RNNCell):
    """h_t = tanh(layer_norm(h_{t-1} W^T + b + x_t W_i^T + b_i) * scale + bias)."""

    def __init__(self, input_size, hidden_size, **kwargs):
        super().__init__(initializer=rnn_cell.HiddenStateInitializer(hidden_size), **kwargs)
        self.input_size, self.hidden_size = input_size, hidden_size

    def prepare_input(self, model, input_blob):
        return brew.fc(model, input_blob, self.scope("i2h"), self.input_size, self.hidden_size, axis=2)

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        gates = brew.fc(model, states[0], "gates_t", self.hidden_size, self.hidden_size, axis=2)
        gates = model.net.Sum([gates, input_t], "gates_sum")
        normed = brew.layer_norm(model, gates, "ln", self.hidden_size, axis=2)[0]
        return (model.net.Tanh(normed, "hidden_t"),)

    def get_state_names_override(self):
        return ["hidden_t"]

    def get_output_dim(self):
        return self.hidden_size


def test_brew_layer_norm_in_a_recurrent_step_net(rng):
    T, N, D, H = 3, 2, 3, 4
    m = ModelHelper(name="lnrnn")
    cell = _LayerNormRNNCell(D, H, name="c")
    out, _ = cell.apply_over_sequence(m, "seq")
    assert "c/ln_scale" in m.params and "c/ln_bias" in m.params
    loss = m.net.SumElements(m.net.Mul([out, "w_out"], "weighted"), "loss")
    gmap = m.AddGradientOperators([loss])
    workspace.RunNetOnce(m.param_init_net)
    x, w_out = f32(rng, T, N, D), f32(rng, T, N, H)
    vals = {p: workspace.FetchBlob(p) for p in ["c/i2h_w", "c/i2h_b", "c/gates_t_w", "c/gates_t_b"]}
    scale, bias = np.linspace(0.5, 1.5, H).astype(np.float32), np.linspace(-0.2, 0.2, H).astype(np.float32)
    feed(seq=x, w_out=w_out, **{"c/ln_scale": scale, "c/ln_bias": bias})
    workspace.RunNetOnce(m.net)
    # forward against NumPy
    h = np.zeros((N, H))
    hs = []
    for t in range(T):
        a = h @ vals["c/gates_t_w"].T + vals["c/gates_t_b"] + x[t] @ vals["c/i2h_w"].T + vals["c/i2h_b"]
        h = np.tanh(ln_ref(a[None].astype(np.float32), 2, 1e-4)[0][0] * scale + bias)
        hs.append(h)
    close(workspace.FetchBlob(str(out)), np.stack(hs), 1e-4)
    # gradients reach the layer-norm parameters; check them by finite differences
    for p in ("c/ln_scale", "c/ln_bias"):
        assert p in gmap and workspace.FetchBlob(str(gmap[p])).shape == (H,)
        gradient_checker.NetGradientChecker.Check(m.net, ["loss"], {p: workspace.FetchBlob(p)}, p,
                                                  step_size=1e-3, threshold=1e-2, print_net=False)


# ---------------------------------------------------------------- bad input
LN, LG = r"^op LayerNorm #0: ", r"^op LayerNormGradient #0: "


def test_layer_norm_bad_inputs(rng):
    feed(xi=np.ones((2, 3), np.int32), x=f32(rng, 2, 3), g=f32(rng, 3), b=f32(rng, 3), g2=f32(rng, 2, 3),
         s=np.array(1.0, np.float32))
    outs = ["y", "m", "sd"]
    raises(TypeError, LN + r"input 0 blob 'xi' must be float32, got \(2, 3\) int32$",
           op("LayerNorm", ["xi"], outs))
    raises(ValueError, LN + r"argument axis=2 is out of range for input 0 blob 'x' of shape \(2, 3\) float32 "
                            r"\(must be in \[-2, 2\)\)$", op("LayerNorm", ["x"], outs, axis=2))
    raises(ValueError, LN + r"argument axis=-3 is out of range", op("LayerNorm", ["x"], outs, axis=-3))
    raises(ValueError, LN + r"argument axis=1 is out of range for input 0 blob 's' of shape \(\) float32",
           op("LayerNorm", ["s"], outs, axis=1))
    for eps, shown in ((-1e-3, "-0.001"), (float("inf"), "inf"), (float("nan"), "nan")):
        raises(ValueError, LN + r"argument epsilon must be finite and >= 0, got %s$" % shown,
               op("LayerNorm", ["x"], outs, epsilon=eps))
    raises(ValueError, LN + r"argument elementwise_affine must be 0 or 1, got 2$",
           op("LayerNorm", ["x", "g", "b"], outs, elementwise_affine=2))
    raises(ValueError, LN + r"with elementwise_affine=1 takes 3 inputs \(X, gamma, beta\), got 1 inputs$",
           op("LayerNorm", ["x"], outs, elementwise_affine=1))
    raises(ValueError, LN + r"without elementwise_affine takes 1 input \(X\); pass elementwise_affine=1 for "
                            r"\(X, gamma, beta\), got 3 inputs$", op("LayerNorm", ["x", "g", "b"], outs))
    raises(ValueError, LN + r"input 1 blob 'g2' \(gamma\) must have shape \(3,\) float32 \(the dims of "
                            r"input 0 blob 'x' \(2, 3\) float32 from axis 1 on\), got \(2, 3\) float32$",
           op("LayerNorm", ["x", "g2", "b"], outs, elementwise_affine=1))
    raises(ValueError, LN + r"input 2 blob 'b' \(beta\) must have shape \(2, 3\) float32 \(the dims of "
                            r"input 0 blob 'x' \(2, 3\) float32 from axis 0 on\), got \(3,\) float32$",
           op("LayerNorm", ["x", "g2", "b"], outs, axis=0, elementwise_affine=1))
    raises(ValueError, LN + r"input 0 and output 1 are the same blob 'x'",
           op("LayerNorm", ["x"], ["y", "x", "sd"]))


def test_layer_norm_gradient_bad_inputs(rng):
    x = f32(rng, 2, 3)
    feed(x=x, g=f32(rng, 3), b=f32(rng, 3))
    run("LayerNorm", ["x"], ["y", "m", "s"])
    feed(dy=f32(rng, 2, 3), dyb=f32(rng, 3, 2), mflat=f32(rng, 2), g4=f32(rng, 4))
    gins = ["dy", "y", "m", "s", "x"]
    raises(ValueError, LG + r"input 0 blob 'dyb' \(dY\) must have the shape of input 4 blob 'x' \(2, 3\) "
                            r"float32, got \(3, 2\) float32$",
           op("LayerNormGradient", ["dyb"] + gins[1:], ["dx"]))
    raises(ValueError, LG + r"input 2 blob 'mflat' \(mean\) must have shape \(2, 1\) float32 \(the dims of "
                            r"input 4 blob 'x' \(2, 3\) float32 before axis 1, then 1\), got \(2,\) float32$",
           op("LayerNormGradient", ["dy", "y", "mflat", "s", "x"], ["dx"]))
    raises(ValueError, LG + r"input 3 blob 'mflat' \(stdev\)",
           op("LayerNormGradient", ["dy", "y", "m", "mflat", "x"], ["dx"]))
    raises(ValueError, LG + r"input 5 blob 'g4' \(gamma\) must have shape \(3,\) float32",
           op("LayerNormGradient", gins + ["g4"], ["dx", "dg", "db"], elementwise_affine=1))
    raises(ValueError, LG + r"with elementwise_affine=1 takes 6 inputs \(dY, Y, mean, stdev, X, gamma\) and "
                            r"gives 3 outputs \(dX, dgamma, dbeta\), got 5 inputs and 1 outputs$",
           op("LayerNormGradient", gins, ["dx"], elementwise_affine=1))
    raises(ValueError, LG + r"without elementwise_affine takes 5 inputs \(dY, Y, mean, stdev, X\) and "
                            r"gives 1 output \(dX\), got 6 inputs and 3 outputs$",
           op("LayerNormGradient", gins + ["g"], ["dx", "dg", "db"]))
    raises(ValueError, LG + r"input 4 and output 0 are the same blob 'x'",
           op("LayerNormGradient", gins, ["x"]))
    raises(ValueError, LG + r"argument axis=5 is out of range for input 4 blob 'x'",
           op("LayerNormGradient", gins, ["dx"], axis=5))


def test_layer_norm_checked_at_create_net(rng):
    feed(x=f32(rng, 2, 3), g=f32(rng, 4), b=f32(rng, 3))
    net = core.Net("lnchk")
    net.LayerNorm(["x", "g", "b"], ["y", "m", "s"], elementwise_affine=1)
    with pytest.raises(ValueError, match=r"^net 'lnchk': op LayerNorm #0: input 1 blob 'g' \(gamma\) must "
                                         r"have shape \(3,\) float32"):
        workspace.CreateNet(net)
    feed(g=f32(rng, 3))
    workspace.CreateNet(net)
    workspace.RunNet("lnchk")
    net2 = core.Net("lnchk2")
    net2.LayerNorm(["x"], ["y", "m", "s"], epsilon=-1.0)
    with pytest.raises(ValueError, match=r"^net 'lnchk2': op LayerNorm #0: argument epsilon must be finite"):
        workspace.CreateNet(net2)
