"""Sparse gradients (core.GradientSlice): Gather's gradient, how the backward
pass sums and densifies slices, slices inside step nets, the gradient checker,
and the optimizers' sparse updates (ScatterWeightedSum, SparseMomentumSGDUpdate,
SparseAdagrad, SparseAdam) against NumPy references.
"""

import numpy as np
import pytest

from recurrent import core, model_helper, optimizer, recurrent, workspace
from recurrent.gradient_checker import GradientChecker, NetGradientChecker
from recurrent.model_helper import ParameterTags
from recurrent.proto import make_argument

from test_rnn_cell import assert_executor_on_off_bitwise


def f32(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


def scatter_add(shape, idx, rows):
    out = np.zeros(shape, np.float64)
    np.add.at(out, idx.reshape(-1), rows.reshape((idx.size,) + tuple(shape[1:])).astype(np.float64))
    return out


def feed(**blobs):
    for k, v in blobs.items():
        workspace.FeedBlob(k, v)


def fetch(name):
    return workspace.FetchBlob(str(name))


# ---------------------------------------------------------------- the backward pass


def test_gather_gives_a_slice_and_no_op(rng):
    net = core.Net("g")
    x = net.Gather(["emb", "idx"], "x")
    loss = net.SumElements(x, "loss")
    n_fwd = len(net.Proto().op)
    grad_map = net.AddGradientOperators([loss])
    g = grad_map["emb"]
    assert isinstance(g, core.GradientSlice)
    assert (str(g.indices), str(g.values)) == ("idx", "x_grad")
    assert "idx" not in grad_map
    types = [op.type for op in net.Proto().op[n_fwd:]]
    assert "GatherGradient" not in types and "SparseToDense" not in types
    emb, idx = f32(rng, 5, 3), np.array([[0, 4], [4, 1]], np.int32)
    feed(emb=emb, idx=idx)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(fetch(g.values), np.ones((2, 2, 3), np.float32))


def test_two_gathers_of_one_table_sum_dense(rng):
    """Two slices of one blob: made dense (SparseToDense) and summed."""
    emb, w = f32(rng, 8, 4), f32(rng, 4)  # rows 6, 7 never read: the dense sum keeps the table's shape
    i1, i2 = np.array([0, 5, 5], np.int32), np.array([[5, 2], [1, 0]], np.int32)
    net = core.Net("two")
    a = net.Gather(["emb", "i1"], "a")
    b = net.Gather(["emb", "i2"], "b")
    sa = net.SumElements(net.Mul([a, "w"], "aw", broadcast=1), "sa")
    sb = net.SumSqrElements(b, "sb")
    loss = net.Sum([sa, sb], "loss")
    grad_map = net.AddGradientOperators([loss])
    g = grad_map["emb"]
    assert not isinstance(g, core.GradientSlice)
    assert [op.type for op in net.Proto().op].count("SparseToDense") == 2
    feed(emb=emb, w=w, i1=i1, i2=i2)
    workspace.RunNetOnce(net)
    e = emb.astype(np.float64)
    want = scatter_add(emb.shape, i1, np.broadcast_to(w, (3, 4))) + scatter_add(emb.shape, i2, 2 * e[i2])
    np.testing.assert_allclose(fetch(g), want, rtol=1e-5, atol=1e-6)


def test_slice_plus_dense_gradient(rng):
    """A table read by Gather and used densely (MatMul): dense sum of both."""
    emb, x = f32(rng, 6, 3), f32(rng, 2, 3)
    idx = np.array([3, 3, 0], np.int32)  # rows 4, 5 not gathered
    net = core.Net("mixed")
    a = net.Gather(["emb", "idx"], "a")
    m = net.MatMul(["x", "emb"], "m", trans_b=1)             # (2, 4)
    loss = net.Sum([net.SumSqrElements(a, "sa"), net.SumElements(m, "sm")], "loss")
    grad_map = net.AddGradientOperators([loss])
    feed(emb=emb, x=x, idx=idx)
    workspace.RunNetOnce(net)
    e = emb.astype(np.float64)
    want = scatter_add(emb.shape, idx, 2 * e[idx]) + np.ones((2, 6)).T @ x.astype(np.float64)
    np.testing.assert_allclose(fetch(grad_map["emb"]), want, rtol=1e-5, atol=1e-6)


def test_get_gradient_for_op_in_a_name_scope_keeps_the_names(rng):
    """GetGradientForOp called inside a NameScope with a sparse output gradient: the SparseToDense it
    puts first and the maker's ops use the names as given (not scoped a second time)."""
    op = core.CreateOperator("Scale", ["ns/emb"], ["ns/scaled"], scale=3.0)
    with core.NameScope("ns"):
        ops, g_in = core.GradientRegistry.GetGradientForOp(
            op, [core.GradientSlice("ns/idx", "ns/a_grad")])
    assert [o.type for o in ops] == ["SparseToDense", "Scale"]
    assert list(ops[0].input) == ["ns/idx", "ns/a_grad", "ns/scaled"]
    assert list(ops[0].output) == ["ns/scaled_grad_dense"]
    assert list(ops[1].input) == ["ns/scaled_grad_dense"]
    assert str(g_in[0]) == str(ops[1].output[0]) and not str(g_in[0]).startswith("ns/ns/")


def test_gather_of_a_computed_blob_densifies_for_its_maker(rng):
    """The slice reaches Scale's gradient maker, which needs it dense: a
    SparseToDense shaped like Scale's output comes first (Caffe2 refused)."""
    emb = f32(rng, 5, 2)
    idx = np.array([4, 0, 4], np.int32)
    net = core.Net("computed")
    s = net.Scale("emb", "scaled", scale=3.0)
    a = net.Gather([s, "idx"], "a")
    loss = net.SumSqrElements(a, "loss")
    grad_map = net.AddGradientOperators([loss])
    assert "scaled_grad_dense" in [str(o) for op in net.Proto().op for o in op.output]
    feed(emb=emb, idx=idx)
    workspace.RunNetOnce(net)
    want = 3 * scatter_add(emb.shape, idx, 2 * 3 * emb.astype(np.float64)[idx])
    np.testing.assert_allclose(fetch(grad_map["emb"]), want, rtol=1e-5, atol=1e-6)
    NetGradientChecker.Check(_fresh_net_computed(), ["loss"], {"emb": emb, "idx": idx}, "emb",
                             step_size=1e-2, threshold=2e-2, print_net=False)


def _fresh_net_computed():
    net = core.Net("computed_fd")
    s = net.Scale("emb", "scaled", scale=3.0)
    a = net.Gather([s, "idx"], "a")
    net.SumSqrElements(a, "loss")
    return net


def test_indices_overwritten_later_is_refused():
    net = core.Net("overwrite")
    a = net.Gather(["emb", "idx"], "a")
    net.Copy("other", "idx")
    loss = net.SumElements(a, "loss")
    with pytest.raises(RuntimeError, match=r"Gather.*'idx'.*overwritten"):
        net.AddGradientOperators([loss])


def test_seeded_slice_for_an_output(rng):
    """A GradientSlice given as the gradient of a net output (ys dict)."""
    w = f32(rng, 4, 3)
    net = core.Net("seeded")
    net.Scale("w", "y", scale=2.0)
    grad_map = net.AddGradientOperators({"y": core.GradientSlice("gi", "gv")})
    gi = np.array([1, 1, 3], np.int32)
    gv = f32(rng, 3, 3)
    feed(w=w, gi=gi, gv=gv)
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(fetch(grad_map["w"]), 2 * scatter_add(w.shape, gi, gv), rtol=1e-6)


@pytest.mark.parametrize("idx_shape", [(6,), (2, 3)])
def test_gradient_checker_on_gather(rng, idx_shape):
    data = f32(rng, 5, 3)
    idx = rng.randint(0, 5, size=idx_shape).astype(np.int32)
    op = core.CreateOperator("Gather", ["data", "idx"], ["out"])
    checker = GradientChecker(1e-2, 1e-2)
    ok, grad, _ = checker.CheckSimple(op, [data, idx], 0, [0])
    assert ok, checker.last_message
    np.testing.assert_allclose(grad, scatter_add(data.shape, idx, data.astype(np.float64)[idx]),
                               rtol=1e-5)


def test_model_helper_keeps_the_slice():
    m = model_helper.ModelHelper(name="emb_model")
    emb = m.create_param("emb", [7, 3], ("GaussianFill", {"std": 0.1}))
    x = m.net.Gather([emb, "ids"], "x")
    m.AddGradientOperators([m.net.SumElements(x, "loss")])
    g = m.param_to_grad[emb]
    assert isinstance(g, core.GradientSlice) and str(g.indices) == "ids"
    assert m.get_param_info(emb).grad == g


# ---------------------------------------------------------------- inside a step net


def _step_gather_net():
    """o_t = tanh(emb[sel] * x_t + o_{t-1}): the table (and the int32 row
    selection ``sel``, a reference) read inside the cell at every step."""
    step = core.Net("step_gather")
    x_t, o_prev = step.AddExternalInputs("x_t", "o_prev")
    e = step.Gather(["emb", "sel"], "e_t")
    o = step.Tanh(step.Add([step.Mul([e, x_t], "ex"), o_prev], "pre"), "o")
    step.AddExternalOutput(o)
    net = core.Net("outer_gather")
    outs = recurrent.recurrent_net(net=net, cell_net=step, inputs=[(x_t, "x")],
                                   initial_cell_inputs=[(o_prev, "o0")], links={o_prev: o},
                                   timestep="timestep", scope="sg")
    loss = net.SumSqrElements(outs[0], "loss")
    return net, loss


def _step_gather_feeds(rng, T, N, V, D):
    return {"emb": f32(rng, V, D), "o0": f32(rng, 1, N, D), "x": f32(rng, T, N, D),
            "sel": rng.randint(0, V - 2, size=(1, N)).astype(np.int32)}  # the last rows never read


def test_gather_inside_a_step_net(rng):
    T, N, V, D = 5, 3, 6, 4
    feeds = _step_gather_feeds(rng, T, N, V, D)
    feeds["sel"][0, 1] = feeds["sel"][0, 0]  # a repeated row
    net, loss = _step_gather_net()
    grad_map = net.AddGradientOperators([loss])
    assert not isinstance(grad_map["emb"], core.GradientSlice)
    feed(**feeds)
    workspace.RunNetOnce(net)
    e = feeds["emb"].astype(np.float64)[feeds["sel"]]
    o = feeds["o0"][0].astype(np.float64)
    want = 0.0
    for t in range(T):
        o = np.tanh(e * feeds["x"][t] + o)
        want += np.sum(o ** 2)
    np.testing.assert_allclose(fetch(loss), want, rtol=1e-5)
    NetGradientChecker.Check(_step_gather_net()[0], ["loss"], feeds, "emb", step_size=1e-2,
                             threshold=2e-2, print_net=False)


@pytest.mark.parametrize("threads", [2, 3])
def test_gather_inside_a_step_net_executor_bitwise(rng, threads):
    feed(**_step_gather_feeds(rng, 7, 3, 6, 4))
    net, loss = _step_gather_net()
    grad_map = net.AddGradientOperators([loss])
    assert_executor_on_off_bitwise(net, [str(loss), str(grad_map["emb"]), str(grad_map["o0"])], threads)


# ---------------------------------------------------------------- the optimizers' sparse updates

V, D, K = 9, 3, 2


def _emb_model(name, dense_twin):
    """ids (T, N) -> Gather(emb) -> FC -> squared loss; with ``dense_twin`` the
    table's gradient is made dense (SparseToDense) before the optimizer sees it."""
    m = model_helper.ModelHelper(name=name)
    emb = m.create_param("emb", [V, D], ("GaussianFill", {"std": 1.0}), tags=[ParameterTags.WEIGHT])
    w = m.create_param("w", [K, D], ("GaussianFill", {"std": 1.0}))
    b = m.create_param("b", [K], ("ConstantFill", {"value": 0.1}))
    x = m.net.Gather([emb, "ids"], "x")
    y = m.net.FC([x, w, b], "y", axis=2)
    sq = m.net.SquaredL2Distance([m.net.Reshape([y], ["y2", "y_shape"], shape=[-1, K])[0], "target"], "sq")
    loss = m.net.AveragedLoss(sq, "loss")
    m.AddGradientOperators([loss])
    if dense_twin:
        g = m.param_to_grad[emb]
        dense = m.net.SparseToDense([g.indices, g.values, emb], "emb_grad_dense")
        m.param_to_grad[emb] = dense
        m.get_param_info(emb).grad = dense
    return m, emb


BUILDERS = {
    "sgd": lambda m: optimizer.build_sgd(m, 0.3),
    "momentum": lambda m: optimizer.build_sgd(m, 0.3, momentum=0.9),
    "momentum-plain": lambda m: optimizer.build_sgd(m, 0.3, momentum=0.9, nesterov=0),
    "adagrad": lambda m: optimizer.build_adagrad(m, 0.3, epsilon=1e-3),
    "adam": lambda m: optimizer.build_adam(m, 0.3),
    "sgd-clipped": lambda m: optimizer.build_sgd(m, 0.3, max_gradient_norm=0.5),
}
SPARSE_OPS = {"sgd": "ScatterWeightedSum", "momentum": "SparseMomentumSGDUpdate",
              "momentum-plain": "SparseMomentumSGDUpdate", "adagrad": "SparseAdagrad", "adam": "SparseAdam",
              "sgd-clipped": "ScatterWeightedSum"}


def _train(kind, dense_twin, ids, target, seed, iters):
    workspace.ResetWorkspace()
    m, emb = _emb_model("opt_%s_%d" % (kind, dense_twin), dense_twin)
    BUILDERS[kind](m)
    types = [op.type for op in m.net.Proto().op]
    for op in m.param_init_net.Proto().op:
        if op.type in ("GaussianFill",):
            op.arg.append(make_argument("seed", seed + len(op.output[0])))
    workspace.RunNetOnce(m.param_init_net)
    emb0 = fetch(emb).copy()
    feed(ids=ids, target=target)
    workspace.CreateNet(m.net)
    for _ in range(iters):
        workspace.RunNet(m.net)
    return emb0, fetch(emb).copy(), types


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_sparse_update_equals_dense_for_unique_rows(rng, kind):
    """Each row read once: the sparse update of the table is the dense
    optimizer's (with the gradient made dense), bit for bit, and the rows not
    read stay as they were. One iteration (Adam's and momentum's state makes
    untouched rows move later in the dense form)."""
    ids = rng.permutation(V)[:6].reshape(3, 2).astype(np.int32)
    target = f32(rng, 6, K)
    emb0, sparse, types = _train(kind, False, ids, target, 5, 1)
    assert SPARSE_OPS[kind] in types
    _, dense, dtypes = _train(kind, True, ids, target, 5, 1)
    assert SPARSE_OPS[kind] not in dtypes
    if SPARSE_OPS[kind] == "ScatterWeightedSum":  # x + lr * g against WeightedSum's 1 * x + lr * g
        np.testing.assert_allclose(sparse, dense, rtol=3e-7, atol=0)
    else:  # the sparse ops run the dense ops' kernels per row
        np.testing.assert_array_equal(sparse, dense)
    untouched = np.setdiff1d(np.arange(V), ids)
    np.testing.assert_array_equal(sparse[untouched], emb0[untouched])
    assert not np.array_equal(sparse[ids.ravel()], emb0[ids.ravel()])


def test_sparse_sgd_with_repeated_rows_matches_the_dense_sum(rng):
    ids = np.array([[1, 4], [4, 4], [7, 1]], np.int32)
    target = f32(rng, 6, K)
    emb0, sparse, _ = _train("sgd", False, ids, target, 3, 3)
    _, dense, _ = _train("sgd", True, ids, target, 3, 3)
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-6)
    untouched = np.setdiff1d(np.arange(V), ids)
    np.testing.assert_array_equal(sparse[untouched], emb0[untouched])


def test_sparse_adagrad_applies_repeated_rows_one_at_a_time(rng):
    """Caffe2's SparseAdagrad without dedup: a repeated index updates its row
    once per occurrence, in order (not once with the summed gradient)."""
    ids = np.array([[2, 5], [5, 2], [5, 0]], np.int32)
    target = f32(rng, 6, K)
    workspace.ResetWorkspace()
    m, emb = _emb_model("adagrad_rep", False)
    optimizer.build_adagrad(m, 0.3, epsilon=1e-3)
    workspace.RunNetOnce(m.param_init_net)
    feed(ids=ids, target=target)
    # the forward and backward part only, to read the gradient slice
    n_update = [op.type for op in m.net.Proto().op].index("SparseAdagrad")
    grad_part = core.Net(m.net.Proto())
    del grad_part.Proto().op[n_update:]
    emb0 = fetch(emb).copy()
    workspace.RunNetOnce(grad_part)
    g = fetch(m.param_to_grad[emb].values).reshape(-1, D).astype(np.float32)
    workspace.FeedBlob(str(emb), emb0)
    workspace.RunNetOnce(m.net)
    lr = np.float32(-0.3)
    w, h = emb0.copy(), np.zeros_like(emb0)
    for k, i in enumerate(ids.ravel()):
        h[i] = h[i] + g[k] * g[k]
        w[i] = w[i] + lr * g[k] / (np.sqrt(h[i]) + np.float32(1e-3))
    np.testing.assert_allclose(fetch(emb), w, rtol=1e-5, atol=1e-6)


def test_max_gradient_norm_counts_the_slice_rows(rng):
    """The global norm takes a sparse gradient's values as they are (Caffe2)."""
    ids = np.array([[1, 1], [3, 1]], np.int32)
    workspace.ResetWorkspace()
    m, emb = _emb_model("clip_norm", False)
    optimizer.build_sgd(m, 0.3, max_gradient_norm=1e-3)
    workspace.RunNetOnce(m.param_init_net)
    feed(ids=ids, target=f32(rng, 4, K))
    workspace.RunNetOnce(m.net)
    grads = [m.param_to_grad[p] for p in m.GetParams()]
    blobs = [g.values if isinstance(g, core.GradientSlice) else g for g in grads]
    total = sum(float(np.sum(fetch(b).astype(np.float64) ** 2)) for b in blobs)
    np.testing.assert_allclose(fetch("norm_clipped_grad_update/global_norm"), np.sqrt(total), rtol=1e-5)


def test_sparse_gradient_refusals():
    m, emb = _emb_model("refuse_wd", False)
    with pytest.raises(ValueError, match=r"WeightDecayBuilder: parameter 'emb' has a sparse gradient"):
        optimizer.add_weight_decay(m, 1e-4)
    m, emb = _emb_model("refuse_dedup", False)
    with pytest.raises(ValueError, match=r"aggregator must be 'sum' or 'mean', got 'max'"):
        optimizer.build_adagrad(m, 0.1, sparse_dedup_aggregator="max")


@pytest.mark.parametrize("kind", ["adagrad", "adam", "momentum"])
def test_dedup_sum_equals_the_dense_update(rng, kind):
    """sparse_dedup_aggregator='sum': one update per row with the summed
    gradient, which is the dense optimizer's update of the rows read (and
    the others stay), for one iteration."""
    ids = np.array([[2, 5], [5, 2], [5, 0]], np.int32)
    target = f32(rng, 6, K)
    dedup = {"sparse_dedup_aggregator": "sum"}
    builders = {"adagrad": lambda m: optimizer.build_adagrad(m, 0.3, epsilon=1e-3, **dedup),
                "adam": lambda m: optimizer.build_adam(m, 0.3, **dedup),
                "momentum": lambda m: optimizer.build_sgd(m, 0.3, momentum=0.9, **dedup)}
    BUILDERS["dedup-" + kind] = builders[kind]
    try:
        emb0, sparse, types = _train("dedup-" + kind, False, ids, target, 7, 1)
    finally:
        del BUILDERS["dedup-" + kind]
    assert "Unique" in types and "UnsortedSegmentSum" in types
    _, dense, _ = _train(kind, True, ids, target, 7, 1)
    np.testing.assert_allclose(sparse, dense, rtol=1e-6, atol=1e-7)
    untouched = np.setdiff1d(np.arange(V), ids)
    np.testing.assert_array_equal(sparse[untouched], emb0[untouched])


def test_deduplicate_gradient_slices(rng):
    idx = np.array([[3, 1], [3, 3]], np.int32)
    vals = f32(rng, 2, 2, 4)
    for aggregator in ("sum", "mean"):
        workspace.ResetWorkspace()
        net = core.Net("dedup_" + aggregator)
        g = net.DeduplicateGradientSlices(core.GradientSlice("idx", "vals"), aggregator=aggregator)
        feed(idx=idx, vals=vals)
        workspace.RunNetOnce(net)
        np.testing.assert_array_equal(fetch(g.indices), [3, 1])
        rows = vals.reshape(4, 4).astype(np.float64)
        want = np.stack([rows[[0, 2, 3]].sum(0), rows[1]])
        if aggregator == "mean":
            want[0] /= 3
        np.testing.assert_allclose(fetch(g.values), want, rtol=1e-6)
    with pytest.raises(TypeError, match="expected a GradientSlice"):
        core.Net("x").DeduplicateGradientSlices("g")
