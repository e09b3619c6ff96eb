"""The ops of csrc/ops/loss3.c: MarginRankingCriterion, CosineEmbeddingCriterion, PairWiseLoss (with
and without lengths), BernoulliJSD and their gradient ops.

Forward and gradient ops are checked against float64 NumPy references (including the edge cases:
hinges, ties, empty sessions, clamped probabilities, empty tensors); the gradient makers
(recurrent/_grad_loss3.py) by finite differences away from the kinks; bad input by exception type
and message.
"""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_loss2 import check_grad, close, make_op, run, sigmoid, softplus


def labels(n, rng):
    return rng.choice([-1, 1], size=n).astype(np.int32)


def randn(shape, rng):
    return np.asarray(rng.randn(*shape), np.float32)


# ---------------------------------------------------------------- NumPy references (float64)
def ref_mrc(x1, x2, y, margin):
    return np.maximum(-y * (x1.astype(np.float64) - x2) + margin, 0)


def ref_mrc_grad(x1, x2, y, g, margin):
    active = -y * (x1.astype(np.float64) - x2) + margin >= 0
    return np.where(active, -y * g, 0.0), np.where(active, y * g, 0.0)


def ref_cec(s, y, margin):
    s = s.astype(np.float64)
    return np.where(y == 1, 1 - s, np.maximum(s - margin, 0))


def ref_cec_grad(s, y, g, margin):
    return np.where(y == 1, -g, np.where(s >= np.float32(margin), g, 0.0))


def sessions(n, lengths):
    ends = np.cumsum(lengths) if lengths is not None else [n]
    return [(int(e) - int(ln), int(e)) for e, ln in zip(ends, lengths if lengths is not None else [n])]


def ref_pwl(x, lab, lengths=None):
    x, lab = x.reshape(-1).astype(np.float64), lab.reshape(-1)
    out = []
    for a, b in sessions(len(x), lengths):
        terms = [softplus(x[j] - x[i]) if lab[i] > lab[j] else softplus(x[i] - x[j])
                 for i in range(a, b) for j in range(a, i) if lab[i] != lab[j]]
        out.append(np.mean(terms) if terms else 0.0)
    return np.array(out if lengths is not None or len(x) else [])


def ref_pwl_grad(x, lab, g, lengths=None):
    x, lab = x.reshape(-1).astype(np.float64), lab.reshape(-1)
    dx = np.zeros_like(x)
    for k, (a, b) in enumerate(sessions(len(x), lengths)):
        pairs = sum(lab[i] != lab[j] for i in range(a, b) for j in range(a, i))
        for i in range(a, b):
            for j in range(a, b):
                if lab[i] < lab[j]:
                    dx[i] += sigmoid(x[i] - x[j]) * g[k] / pairs
                elif lab[i] > lab[j]:
                    dx[i] -= sigmoid(x[j] - x[i]) * g[k] / pairs
    return dx


def entropy(p):
    p = np.asarray(p, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -p * np.log(p) - (1 - p) * np.log1p(-p)
    return np.where((p < 1e-20) | (1 - p < 1e-20), 0.0, h)


def logit(p):
    p = np.asarray(p, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.log(p) - np.log1p(-p)
    return np.where((p < 1e-20) | (1 - p < 1e-20), 0.0, v)


def ref_jsd(p, q):
    m = (p.astype(np.float64) + q) / 2
    return entropy(m) - (entropy(p) + entropy(q)) / 2


def ref_jsd_grad(g, p, q):
    m = (p.astype(np.float64) + q) / 2
    return g * (logit(p) - logit(m)) / 2


# ---------------------------------------------------------------- MarginRankingCriterion
@pytest.mark.parametrize("shape", [(7,), (3, 4), (), (0,)])
@pytest.mark.parametrize("margin", [None, 0.3, -0.5])
def test_margin_ranking(rng, shape, margin):
    n = int(np.prod(shape))
    x1, x2 = randn(shape, rng), randn(shape, rng)
    y = labels(n, rng).reshape(shape)
    g = randn(shape, rng)
    args = {} if margin is None else {"margin": margin}
    m = 1.0 if margin is None else np.float32(margin)
    (loss,) = run("MarginRankingCriterion", {"x1": x1, "x2": x2, "y": y}, ["loss"], **args)
    close(loss, ref_mrc(x1, x2, y, m))
    dx1, dx2 = run("MarginRankingCriterionGradient", {"x1": x1, "x2": x2, "y": y, "g": g}, ["d1", "d2"],
                   **args)
    r1, r2 = ref_mrc_grad(x1, x2, y, g, m)
    close(dx1, r1)
    close(dx2, r2)


def test_margin_ranking_hinge_and_nan():
    x1 = np.array([0.0, 2.0, 1.0, np.nan], np.float32)
    x2 = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    y = np.array([1, 1, 1, -1], np.int32)
    (loss,) = run("MarginRankingCriterion", {"x1": x1, "x2": x2, "y": y}, ["loss"])
    close(loss[:3], [2.0, 0.0, 0.0])  # at the hinge (dist = 0): 0
    assert np.isnan(loss[3])
    ones = np.ones(4, np.float32)
    dx1, dx2 = run("MarginRankingCriterionGradient", {"x1": x1, "x2": x2, "y": y, "g": ones}, ["d1", "d2"])
    close(dx1[:3], [-1.0, 0.0, -1.0])  # the hinge point takes the active side, as Caffe2
    close(dx2[:3], [1.0, 0.0, 1.0])


def test_margin_ranking_fd_gradient(rng):
    x1, x2 = rng.randn(12).astype(np.float32), rng.randn(12).astype(np.float32)
    y = labels(12, rng)
    x1[np.abs(0.2 - y * (x1 - x2)) < 0.1] += 0.3
    op = make_op("MarginRankingCriterion", ["x1", "x2", "y"], ["loss"], margin=0.2)
    check_grad(op, [x1, x2, y], 0)
    check_grad(op, [x1, x2, y], 1)


# ---------------------------------------------------------------- CosineEmbeddingCriterion
@pytest.mark.parametrize("shape", [(9,), (2, 5), (), (0,)])
@pytest.mark.parametrize("margin", [None, 0.25, -0.4])
def test_cosine_embedding(rng, shape, margin):
    n = int(np.prod(shape))
    s = rng.uniform(-1, 1, shape).astype(np.float32)
    y = labels(n, rng).reshape(shape)
    g = randn(shape, rng)
    args = {} if margin is None else {"margin": margin}
    m = 0.0 if margin is None else np.float32(margin)
    (loss,) = run("CosineEmbeddingCriterion", {"s": s, "y": y}, ["loss"], **args)
    close(loss, ref_cec(s, y, m))
    (ds,) = run("CosineEmbeddingCriterionGradient", {"s": s, "y": y, "g": g}, ["ds"], **args)
    close(ds, ref_cec_grad(s, y, g, m))


def test_cosine_embedding_margin_point():
    s = np.array([0.5, 0.5, 0.2], np.float32)
    y = np.array([-1, 1, -1], np.int32)
    (loss,) = run("CosineEmbeddingCriterion", {"s": s, "y": y}, ["loss"], margin=0.5)
    close(loss, [0.0, 0.5, 0.0])
    (ds,) = run("CosineEmbeddingCriterionGradient", {"s": s, "y": y, "g": np.full(3, 2, np.float32)}, ["ds"],
                margin=0.5)
    close(ds, [2.0, -2.0, 0.0])  # S == margin counts as active (Caffe2's >=)


def test_cosine_embedding_fd_gradient(rng):
    s = rng.randn(15).astype(np.float32)
    s[np.abs(s - 0.1) < 0.1] += 0.2
    check_grad(make_op("CosineEmbeddingCriterion", ["s", "y"], ["loss"], margin=0.1), [s, labels(15, rng)], 0)


# ---------------------------------------------------------------- PairWiseLoss
@pytest.mark.parametrize("lengths", [None, [3, 1, 4, 2], [0, 5, 0], [], [10]])
@pytest.mark.parametrize("xshape", [(-1,), (-1, 1)])
def test_pair_wise_loss(rng, lengths, xshape):
    n = sum(lengths) if lengths is not None else 6
    x = rng.randn(n).astype(np.float32).reshape(xshape)
    lab = rng.randint(0, 3, n).astype(np.float32)
    feeds = {"x": x, "lab": lab}
    if lengths is not None:
        feeds["len"] = np.array(lengths, np.int32)
    (y,) = run("PairWiseLoss", feeds, ["y"])
    ref = ref_pwl(x, lab, lengths)
    close(y, ref)
    g = rng.uniform(0.5, 2, ref.shape).astype(np.float32)
    gfeeds = {"x": x, "lab": lab, "g": g}
    if lengths is not None:
        gfeeds["len"] = feeds["len"]
    (dx,) = run("PairWiseLossGradient", gfeeds, ["dx"])
    close(dx, ref_pwl_grad(x, lab, g, lengths).reshape(x.shape))


def test_pair_wise_loss_ties_empty_and_extremes():
    # all labels tied: no pair, loss 0, gradient 0
    (y,) = run("PairWiseLoss", {"x": np.array([1, 2, 3], np.float32), "lab": np.ones(3, np.float32)}, ["y"])
    close(y, [0.0])
    (dx,) = run("PairWiseLossGradient", {"x": np.array([1, 2, 3], np.float32), "lab": np.ones(3, np.float32),
                                         "g": np.ones(1, np.float32)}, ["dx"])
    close(dx, np.zeros(3))
    # N = 0 without lengths: no session (as Caffe2), the gradient takes an empty dY
    (y,) = run("PairWiseLoss", {"x": np.zeros((0, 1), np.float32), "lab": np.zeros(0, np.float32)}, ["y"])
    assert y.shape == (0,)
    (dx,) = run("PairWiseLossGradient", {"x": np.zeros((0, 1), np.float32), "lab": np.zeros(0, np.float32),
                                         "g": np.zeros(0, np.float32)}, ["dx"])
    assert dx.shape == (0, 1)
    # exact softplus far from 0 (Caffe2 clamped): 1e-20 is not rounded to 0, 100 stays 100
    lab = np.array([0, 1], np.float32)
    (y,) = run("PairWiseLoss", {"x": np.array([0, 46], np.float32), "lab": lab}, ["y"])
    close(y, [softplus(-46.0)], rtol=1e-6, atol=0)
    (y,) = run("PairWiseLoss", {"x": np.array([100, 0], np.float32), "lab": lab}, ["y"])
    close(y, [100.0])
    # labels closer than FLT_EPSILON are tied (Caffe2's rule)
    lab = np.array([0.5, np.nextafter(np.float32(0.5), np.float32(1))], np.float32)
    (y,) = run("PairWiseLoss", {"x": np.array([0, 1], np.float32), "lab": lab}, ["y"])
    close(y, [0.0])


def test_pair_wise_loss_swapping_rows_keeps_the_loss(rng):
    x, lab = rng.randn(5).astype(np.float32), np.array([0, 1, 2, 1, 0], np.float32)
    (a,) = run("PairWiseLoss", {"x": x, "lab": lab}, ["y"])
    (b,) = run("PairWiseLoss", {"x": x[::-1].copy(), "lab": lab[::-1].copy()}, ["y"])
    close(a, b.astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("with_lengths", [False, True])
def test_pair_wise_loss_fd_gradient(rng, with_lengths):
    x = rng.randn(7, 1).astype(np.float32)
    lab = rng.randint(0, 3, 7).astype(np.float32)
    ins = ["x", "lab"] + (["len"] if with_lengths else [])
    vals = [x, lab] + ([np.array([3, 0, 4], np.int32)] if with_lengths else [])
    check_grad(make_op("PairWiseLoss", ins, ["y"]), vals, 0)


# ---------------------------------------------------------------- BernoulliJSD
@pytest.mark.parametrize("shape", [(20,), (3, 4), (), (0,)])
def test_bernoulli_jsd(rng, shape):
    p, q = rng.uniform(0, 1, shape).astype(np.float32), rng.uniform(0, 1, shape).astype(np.float32)
    g = randn(shape, rng)
    (loss,) = run("BernoulliJSD", {"p": p, "q": q}, ["l"])
    close(loss, ref_jsd(p, q), rtol=1e-5, atol=1e-6)
    (dp,) = run("BernoulliJSDGradient", {"g": g, "p": p, "q": q}, ["dp"])
    close(dp, ref_jsd_grad(g, p, q), rtol=1e-5, atol=1e-6)


def test_bernoulli_jsd_edges():
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.3, 0.5], np.float32)
    q = np.array([0.0, 1.0, 1.0, 0.0, 0.3, 1.0], np.float32)
    (loss,) = run("BernoulliJSD", {"p": p, "q": q}, ["l"])
    close(loss, [0.0, 0.0, np.log(2), np.log(2), 0.0, ref_jsd(p[5:], q[5:])[0]], atol=1e-7)
    (dp,) = run("BernoulliJSDGradient", {"g": np.ones(6, np.float32), "p": p, "q": q}, ["dp"])
    assert np.all(np.isfinite(dp))  # the clamped terms drop out (Caffe2: inf at p = 1)
    close(dp, ref_jsd_grad(np.ones(6), p, q), atol=1e-7)
    # a 2-D X keeps its shape (Caffe2 flattened it)
    half = np.full(6, 0.5, np.float32)
    (loss,) = run("BernoulliJSD", {"p": half.reshape(2, 3), "q": half}, ["l"])
    assert loss.shape == (2, 3)


def test_bernoulli_jsd_fd_gradient(rng):
    p, q = rng.uniform(0.05, 0.95, 10).astype(np.float32), rng.uniform(0.05, 0.95, 10).astype(np.float32)
    check_grad(make_op("BernoulliJSD", ["p", "q"], ["l"]), [p, q], 0)


# ---------------------------------------------------------------- gradient makers
def test_gradient_makers():
    get = core.GradientRegistry.GetGradientForOp
    ops, g = get(make_op("MarginRankingCriterion", ["A", "B", "Y"], ["L"], margin=0.5), ["dL"])
    assert (ops[0].type, ops[0].input) == ("MarginRankingCriterionGradient", ["A", "B", "Y", "dL"])
    assert ops[0].output == ["A_grad", "B_grad"] and g == ["A_grad", "B_grad", None]
    assert [(a.name, a.f) for a in ops[0].arg] == [("margin", 0.5)]
    ops, g = get(make_op("CosineEmbeddingCriterion", ["S", "Y"], ["L"]), ["dL"])
    assert (ops[0].type, ops[0].input, g) == ("CosineEmbeddingCriterionGradient", ["S", "Y", "dL"],
                                              ["S_grad", None])
    ops, g = get(make_op("PairWiseLoss", ["X", "T"], ["L"]), ["dL"])
    assert (ops[0].type, ops[0].input, g) == ("PairWiseLossGradient", ["X", "T", "dL"], ["X_grad", None])
    ops, g = get(make_op("PairWiseLoss", ["X", "T", "N"], ["L"]), ["dL"])
    assert (ops[0].input, g) == (["X", "T", "dL", "N"], ["X_grad", None, None])
    ops, g = get(make_op("BernoulliJSD", ["P", "Q"], ["L"]), ["dL"])
    assert (ops[0].type, ops[0].input, g) == ("BernoulliJSDGradient", ["dL", "P", "Q"], ["P_grad", None])
    assert get(make_op("BernoulliJSD", ["P", "Q"], ["L"]), [None]) == ([], [None, None])


# ---------------------------------------------------------------- bad input
F, I = np.float32, np.int32


@pytest.mark.parametrize("op,feeds,exc,msg", [
    ("MarginRankingCriterion", dict(a=np.ones(3, F), b=np.ones(4, F), y=np.ones(3, I)), ValueError,
     r"input 1 blob 'b' \(4,\) float32 must hold as many values as input 0 blob 'a' \(3,\) float32 \(3\)"),
    ("MarginRankingCriterion", dict(a=np.ones(3, F), b=np.ones(3, F), y=np.ones(3, F)), TypeError,
     r"input 2 blob 'y' must be int32, got \(3,\) float32"),
    ("MarginRankingCriterion", dict(a=np.ones(3, F), b=np.ones(3, F), y=np.array([1, 0, -1], I)), ValueError,
     r"input 2 blob 'y' \(3,\) int32: label 0 at element 1 must be 1 or -1"),
    ("MarginRankingCriterionGradient",
     dict(a=np.ones(3, F), b=np.ones(3, F), y=np.ones(3, I), g=np.ones(2, F)), ValueError,
     r"input 3 blob 'g' \(2,\) float32 must hold as many values as input 0"),
    ("MarginRankingCriterionGradient",
     dict(a=np.ones(3, F), b=np.ones(3, F), y=np.full(3, 2, I), g=np.ones(3, F)), ValueError,
     r"input 2 blob 'y' \(3,\) int32: label 2 at element 0 must be 1 or -1"),
    ("CosineEmbeddingCriterion", dict(s=np.ones(3, F), y=np.ones(2, I)), ValueError,
     r"input 1 blob 'y' \(2,\) int32 must hold as many values as input 0 blob 's'"),
    ("CosineEmbeddingCriterionGradient", dict(s=np.ones(2, F), y=np.array([1, 3], I), g=np.ones(2, F)),
     ValueError,
     r"input 1 blob 'y' \(2,\) int32: label 3 at element 1 must be 1 or -1"),
    ("PairWiseLoss", dict(x=np.ones((3, 2), F), t=np.ones(3, F)), ValueError,
     r"input 0 blob 'x' \(3, 2\) float32 must hold one score per row"),
    ("PairWiseLoss", dict(x=np.ones(3, F), t=np.ones((3, 2), F)), ValueError,
     r"input 1 blob 't' \(3, 2\) float32 \(label\) must have shape \(3,\) or \(3, 1\)"),
    ("PairWiseLoss", dict(x=np.ones(3, F), t=np.ones(3, F), n=np.array([1, 1], I)), ValueError,
     r"input 2 blob 'n' \(lengths\) sums to 2, but input 0 blob 'x' \(3,\) float32 has 3 rows"),
    ("PairWiseLoss", dict(x=np.ones(3, F), t=np.ones(3, F), n=np.array([4, -1], I)), ValueError,
     r"input 2 blob 'n' \(lengths\) holds -1 at position 1"),
    ("PairWiseLoss", dict(x=np.ones(3, F), t=np.ones(3, F), n=np.ones((1, 3), I)), ValueError,
     r"input 2 blob 'n' \(lengths\) must be 1-D"),
    ("PairWiseLoss", dict(x=np.ones(2, F), t=np.array([0, np.nan], F)), ValueError,
     r"input 1 blob 't' \(2,\) float32: label nan at row 1 is not finite"),
    ("PairWiseLossGradient", dict(x=np.ones(3, F), t=np.ones(3, F), g=np.ones(2, F)), ValueError,
     r"input 2 blob 'g' \(2,\) float32 \(the loss gradient\) must have shape \(1,\)"),
    ("BernoulliJSD", dict(p=np.ones(3, F), q=np.ones(2, F)), ValueError,
     r"input 1 blob 'q' \(2,\) float32 must hold as many values as input 0"),
    ("BernoulliJSD", dict(p=np.array([0.5, 1.5], F), q=np.ones(2, F)), ValueError,
     r"input 0 blob 'p' \(2,\) float32: value 1.5 at element 1 is not a probability in \[0, 1\]"),
    ("BernoulliJSDGradient", dict(g=np.ones(2, F), p=np.ones(2, F), q=np.array([0, np.nan], F)), ValueError,
     r"input 2 blob 'q' \(2,\) float32: value nan at element 1 is not a probability"),
])
def test_bad_input(op, feeds, exc, msg):
    n_out = 2 if op == "MarginRankingCriterionGradient" else 1
    with pytest.raises(exc, match=r"op %s #0: %s" % (op, msg)):
        run(op, feeds, ["o%d" % i for i in range(n_out)])


@pytest.mark.parametrize("op,margin", [("MarginRankingCriterion", float("nan")),
                                       ("CosineEmbeddingCriterion", float("inf"))])
def test_margin_must_be_finite(op, margin):
    ins = ["a", "b", "y"] if op == "MarginRankingCriterion" else ["a", "y"]
    for name in ins:
        workspace.FeedBlob(name, np.ones(2, np.int32 if name == "y" else np.float32))
    with pytest.raises(ValueError, match=r"op %s #0: argument margin must be finite, got" % op):
        workspace.RunOperatorOnce(make_op(op, ins, ["o"], margin=margin))


def test_shapes_checked_at_net_creation_values_when_run():
    workspace.FeedBlob("x", np.ones(3, np.float32))
    workspace.FeedBlob("t", np.ones(2, np.float32))
    net = core.Net("chk")
    net.PairWiseLoss(["x", "t"], "y")
    with pytest.raises(ValueError, match=r"net 'chk[^']*': op PairWiseLoss #0: input 1 blob 't'"):
        workspace.CreateNet(net)
    workspace.FeedBlob("t", np.ones(3, np.float32))
    workspace.FeedBlob("n", np.array([1, 1], np.int32))
    net = core.Net("chk2")
    net.PairWiseLoss(["x", "t", "n"], "y")
    workspace.CreateNet(net)  # shapes fit: the lengths' sum is a value, checked when the op runs
    with pytest.raises(ValueError, match=r"sums to 2"):
        workspace.RunNet(net)
