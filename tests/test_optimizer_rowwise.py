"""build_ftrl / FtrlOptimizer and rowWise=True for build_adagrad and
build_adam (recurrent/optimizer.py) on a small model whose embedding is read
with Gather (a sparse gradient): the ops and state blobs Caffe2 built
(names, shapes), and a few training steps against a NumPy reimplementation
of the updates fed with the gradients the net computed.
"""

import numpy as np
import pytest

from recurrent import core, model_helper, optimizer, workspace
from recurrent.model_helper import ParameterTags
from recurrent.proto import make_argument

from test_ops_optim_rowwise import ref_ftrl, ref_rowwise_adagrad, ref_rowwise_adam, ref_sparse_ftrl

V, D = 7, 3
f32 = np.float32


def emb_model(name, with_fc=False):
    """ids (3, 2) -> Gather(emb) [-> FC] -> squared distance to target, averaged."""
    m = model_helper.ModelHelper(name=name)
    emb = m.create_param("emb", [V, D], ("GaussianFill", {"std": 1.0}), tags=[ParameterTags.WEIGHT])
    x = m.net.Gather([emb, "ids"], "x")
    x2 = m.net.Reshape([x], ["x2", "x_shape"], shape=[-1, D])[0]
    if with_fc:
        w = m.create_param("w", [D, D], ("GaussianFill", {"std": 1.0}))
        b = m.create_param("b", [D], ("ConstantFill", {"value": 0.1}))
        x2 = m.net.FC([x2, w, b], "y")
    sq = m.net.SquaredL2Distance([x2, "target"], "sq")
    m.AddGradientOperators([m.net.AveragedLoss(sq, "loss")])
    return m, emb


def init(m, rng, ids):
    for op in m.param_init_net.Proto().op:
        if op.type == "GaussianFill":
            op.arg.append(make_argument("seed", 11 + len(op.output[0])))
    workspace.RunNetOnce(m.param_init_net)
    workspace.FeedBlob("ids", ids)
    workspace.FeedBlob("target", rng.randn(ids.size, D).astype(f32))
    workspace.CreateNet(m.net)


IDS = [np.array([[1, 4], [4, 6], [0, 1]], np.int32), np.array([[2, 2], [5, 3], [6, 1]], np.int32),
       np.array([[3, 0], [0, 0], [4, 5]], np.int32)]


def types(net):
    return [op.type for op in net.Proto().op]


def test_build_ftrl_sparse_and_dense(rng):
    m, emb = emb_model("ftrl", with_fc=True)
    opt = optimizer.build_ftrl(m, alpha=0.05, beta=0.2, lambda1=0.01, lambda2=0.02)
    assert isinstance(opt, optimizer.FtrlOptimizer)
    assert types(m.net).count("SparseFtrl") == 1 and types(m.net).count("Ftrl") == 2
    assert "LearningRate" not in types(m.net)
    init(m, rng, IDS[0])
    args = dict(alpha=0.05, beta=0.2, lambda1=0.01, lambda2=0.02)
    state = {p: (workspace.FetchBlob(p).copy(), workspace.FetchBlob(p + "_ftrl_nz").copy())
             for p in ("emb", "w", "b")}
    assert state["emb"][1].shape == (V, D, 2) and state["w"][1].shape == (D, D, 2)
    assert state["b"][1].shape == (D, 2)
    assert {str(b) for b in opt.get_auxiliary_parameters().local} == {"emb_ftrl_nz", "w_ftrl_nz", "b_ftrl_nz"}
    for step, ids in enumerate(IDS):
        workspace.FeedBlob("ids", ids)
        workspace.RunNet(m.net)
        g = m.param_to_grad[emb]
        gv = workspace.FetchBlob(g.values)
        w, nz = ref_sparse_ftrl(*state["emb"], workspace.FetchBlob(g.indices), gv, **args)
        np.testing.assert_allclose(workspace.FetchBlob("emb"), w, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(workspace.FetchBlob("emb_ftrl_nz"), nz, rtol=2e-6, atol=1e-7)
        state["emb"] = (w, nz)
        for p in ("w", "b"):
            w, nz = ref_ftrl(*state[p], workspace.FetchBlob(m.param_to_grad[p]), **args)
            np.testing.assert_allclose(workspace.FetchBlob(p), w, rtol=2e-6, atol=1e-7)
            state[p] = (w, nz)
    untouched = np.setdiff1d(np.arange(V), np.concatenate([i.ravel() for i in IDS]))
    assert untouched.size == 0 or np.all(workspace.FetchBlob("emb_ftrl_nz")[untouched] == 0)


def test_build_ftrl_dedup_sums_repeated_rows(rng):
    m, emb = emb_model("ftrl_dedup")
    optimizer.build_ftrl(m, alpha=0.1, sparse_dedup_aggregator="sum")
    assert {"Unique", "UnsortedSegmentSum"} <= set(types(m.net))
    init(m, rng, IDS[2])
    before = workspace.FetchBlob("emb").copy()
    workspace.RunNet(m.net)
    g = m.param_to_grad[emb]
    idx, vals = workspace.FetchBlob(g.indices), workspace.FetchBlob(g.values)
    out = {op.type: op.output[0] for op in m.net.Proto().op}
    uidx, uvals = workspace.FetchBlob(out["Unique"]), workspace.FetchBlob(out["UnsortedSegmentSum"])
    assert sorted(uidx.tolist()) == sorted(set(idx.ravel().tolist()))
    w, _ = ref_sparse_ftrl(before, np.zeros((V, D, 2), f32), uidx, uvals, alpha=0.1, beta=1e-4, lambda1=0.0,
                           lambda2=0.0)
    np.testing.assert_allclose(workspace.FetchBlob("emb"), w, rtol=2e-6, atol=1e-7)
    assert vals.shape == idx.shape + (D,)


@pytest.mark.parametrize("kind", ["adagrad", "adam"])
def test_rowwise_builds_caffe2s_ops_and_state(rng, kind):
    m, emb = emb_model("rw_" + kind)
    build = optimizer.build_adagrad if kind == "adagrad" else optimizer.build_adam
    opt = build(m, 0.2, rowWise=True)
    op = "RowWiseSparseAdagrad" if kind == "adagrad" else "RowWiseSparseAdam"
    assert op in types(m.net) and "SparseAdagrad" not in types(m.net) and "SparseAdam" not in types(m.net)
    assert {"Shape", "Slice"} <= set(types(m.param_init_net))
    init(m, rng, IDS[0])
    name = "emb_avg_squared_sum" if kind == "adagrad" else "emb_avg_second_moment"
    state = workspace.FetchBlob(name)
    assert state.shape == (V,) and state.dtype == np.float32 and np.all(state == 0)
    assert name in {str(b) for b in opt.get_auxiliary_parameters().local}
    if kind == "adam":
        assert workspace.FetchBlob("emb_first_moment").shape == (V, D)


def test_rowwise_adagrad_steps_match_numpy(rng):
    m, emb = emb_model("rw_adagrad")
    optimizer.build_adagrad(m, 0.3, epsilon=1e-3, rowWise=True, policy="step", stepsize=2, gamma=0.5)
    init(m, rng, IDS[0])
    w, h = workspace.FetchBlob("emb").copy(), np.zeros(V, f32)
    for step, ids in enumerate(IDS + IDS):
        workspace.FeedBlob("ids", ids)
        workspace.RunNet(m.net)
        g = m.param_to_grad[emb]
        lr = -0.3 * 0.5 ** ((step + 1) // 2)  # the counter reads step + 1 when LearningRate runs
        w, h = ref_rowwise_adagrad(w, h, workspace.FetchBlob(g.indices), workspace.FetchBlob(g.values), lr,
                                   epsilon=1e-3)
        np.testing.assert_allclose(workspace.FetchBlob("emb"), w, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(workspace.FetchBlob("emb_avg_squared_sum"), h, rtol=2e-6, atol=1e-7)
    assert np.all(h > 0)


def test_rowwise_adam_steps_match_numpy(rng):
    m, emb = emb_model("rw_adam")
    optimizer.build_adam(m, 0.05, beta1=0.8, beta2=0.95, rowWise=True)
    init(m, rng, IDS[0])
    w, m1, m2 = workspace.FetchBlob("emb").copy(), np.zeros((V, D), f32), np.zeros(V, f32)
    for step, ids in enumerate(IDS):
        workspace.FeedBlob("ids", ids)
        workspace.RunNet(m.net)
        g = m.param_to_grad[emb]
        w, m1, m2 = ref_rowwise_adam(w, m1, m2, workspace.FetchBlob(g.indices), workspace.FetchBlob(g.values),
                                     -0.05, step + 1, beta1=0.8, beta2=0.95, epsilon=1e-4)
        np.testing.assert_allclose(workspace.FetchBlob("emb"), w, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(workspace.FetchBlob("emb_first_moment"), m1, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(workspace.FetchBlob("emb_avg_second_moment"), m2, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["adagrad", "adam"])
def test_rowwise_with_a_dense_gradient_is_refused(kind):
    m, _ = emb_model("rw_dense_" + kind, with_fc=True)
    build = optimizer.build_adagrad if kind == "adagrad" else optimizer.build_adam
    cls = "AdagradOptimizer" if kind == "adagrad" else "AdamOptimizer"
    msg = r"%s: rowWise=True works on sparse gradients \(GradientSlice\) only; parameter '(w|b)' has a dense"
    with pytest.raises(ValueError, match=msg % cls):
        build(m, 0.1, rowWise=True)


def test_rowwise_adagrad_needs_decay_one():
    msg = r"AdagradOptimizer: rowWise=True needs decay=1 \(RowWiseSparseAdagrad has no decay\), got 0.5"
    with pytest.raises(ValueError, match=msg):
        optimizer.AdagradOptimizer(alpha=0.1, rowWise=True, decay=0.5)


@pytest.mark.parametrize("arg", ["alpha", "beta", "lambda1", "lambda2"])
def test_ftrl_optimizer_refuses_negative_arguments(arg):
    with pytest.raises(ValueError, match=r"%s must be a finite number >= 0, got -1.0" % arg):
        optimizer.FtrlOptimizer(**{arg: -1.0})


def test_ftrl_alpha_zero_adds_no_update():
    m, _ = emb_model("ftrl0")
    optimizer.build_ftrl(m, alpha=0.0)
    assert "SparseFtrl" not in types(m.net) and "Ftrl" not in types(m.net)


def test_ftrl_optimizer_with_explicit_grad(rng):
    net, init_net = core.Net("ftrl_direct"), core.Net("ftrl_direct_init")
    init_net.GaussianFill([], "p", shape=[4, 2], seed=3)
    opt = optimizer.FtrlOptimizer(alpha=0.5)
    opt(net, init_net, "p", "p_grad")
    workspace.RunNetOnce(init_net)
    p0 = workspace.FetchBlob("p").copy()
    g = rng.randn(4, 2).astype(f32)
    workspace.FeedBlob("p_grad", g)
    workspace.RunNetOnce(net)
    w, _ = ref_ftrl(p0, np.zeros((4, 2, 2), f32), g, alpha=0.5, beta=1e-4, lambda1=0.0, lambda2=0.0)
    np.testing.assert_allclose(workspace.FetchBlob("p"), w, rtol=2e-6, atol=1e-7)
