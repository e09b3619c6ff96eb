"""LearningRateAdaption and the effective-gradient output of Adam, SparseAdam and RowWiseSparseAdam.

The references are float32 NumPy, one rounding per operation in the order the formulas are written
(sums accumulated one element at a time in float32), so they agree bitwise:
  Adam with the effective gradient (t = iter + 1, c rounded to float32 once from double):
    m = b1 * m1 + (1 - b1) * g;  v = b2 * m2 + (1 - b2) * g^2;  e = c * m / (sqrt(v) + eps);  p = p + lr * e
  LearningRateAdaption: x = <g, e>, y = |g|, z = |e| (float32 sums);
    normalized: lr * (1 - lr_alpha * x / (max(y, 1e-12) * max(z, 1e-12))), else lr - lr_alpha * x.
"""
import math

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_optim_more import raises, run

F = np.float32


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(F)


def correction(it, b1, b2):
    t = it + 1.0
    return F(math.sqrt(1.0 - float(F(b2)) ** t) / (1.0 - float(F(b1)) ** t))


# ---------------------------------------------------------------- references (float32)
def ref_adam_eg(p, m1, m2, g, lr, it, b1=0.9, b2=0.999, eps=1e-5):
    b1, b2, eps, lr = F(b1), F(b2), F(eps), F(lr)
    c = correction(it, b1, b2)
    m = m1 * b1 + g * (F(1) - b1)
    v = m2 * b2 + g * g * (F(1) - b2)
    e = c * m / (np.sqrt(v) + eps)
    return p + lr * e, m, v, e


def ref_rowwise_row_eg(w, m, v, g, lr, c, b1, b2, eps):
    """One occurrence: w, m, g rows (R,), v a float32 scalar -> (w, m, v, e)."""
    b1, b2, eps = F(b1), F(b2), F(eps)
    s = F(0)
    for gj in g:
        s = F(s + gj * gj)
    v = F(v * b2 + (s / F(len(g))) * (F(1) - b2))
    denom = F(np.sqrt(v) + eps)
    m = m * b1 + g * (F(1) - b1)
    e = c * m / denom
    return w + F(lr) * e, m, v, e


def ref_lr_adaption(lr, g, e, lr_alpha=0.01, normalized=True):
    x = y = z = F(0)
    for gi, ei in zip(g.ravel(), e.ravel()):
        x = F(x + gi * ei)
        y = F(y + gi * gi)
        z = F(z + ei * ei)
    lr0, a = F(lr.ravel()[0]), F(lr_alpha)
    if normalized:
        y = max(F(np.sqrt(y)), F(1e-12))
        z = max(F(np.sqrt(z)), F(1e-12))
        return F(lr0 * (F(1) - a * x / (y * z)))
    return F(lr0 - a * x)


def same(got, want):
    want = np.asarray(want, F)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- LearningRateAdaption
@pytest.mark.parametrize("shape", [(7,), (3, 4), (1,), (2, 0), (0,)])
@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("lr_alpha", [0.01, 0.5, -0.2])
def test_lr_adaption_matches_numpy(shape, normalized, lr_alpha):
    rng = np.random.default_rng(sum(shape) + int(normalized))
    g, e = f32(rng, *shape), f32(rng, *shape)
    lr = np.array([-0.05], F)
    out, = run("LearningRateAdaption", {"lr": lr, "g": g, "e": e}, ["nlr"], lr_alpha=lr_alpha,
               normalized_lr_adaption=int(normalized))
    same(out, [ref_lr_adaption(lr, g, e, lr_alpha, normalized)])


def test_lr_adaption_defaults_in_place_and_lr_shape():
    rng = np.random.default_rng(1)
    g, e = f32(rng, 5), f32(rng, 5)
    for lr in (np.array([0.3], F), np.array(0.3, F), np.array([[0.3]], F)):
        workspace.FeedBlob("lr", lr)
        run("LearningRateAdaption", {"g": g, "e": e}, ["lr"], inputs=["lr", "g", "e"])
        same(workspace.FetchBlob("lr"), np.full(lr.shape, ref_lr_adaption(lr, g, e), F))
    # e = g: the normalized product is 1, lr * (1 - lr_alpha); e = -g: lr * (1 + lr_alpha)
    out, = run("LearningRateAdaption", {"lr": np.array([2.0], F), "g": g, "e": g}, ["o"], lr_alpha=0.25)
    np.testing.assert_allclose(out, [1.5], rtol=1e-6)
    out, = run("LearningRateAdaption", {"lr": np.array([2.0], F), "g": g, "e": -g}, ["o"], lr_alpha=0.25)
    np.testing.assert_allclose(out, [2.5], rtol=1e-6)


def test_lr_adaption_zero_gradients_keep_the_rate():
    z = np.zeros(4, F)
    out, = run("LearningRateAdaption", {"lr": np.array([-0.1], F), "g": z, "e": z}, ["o"])
    same(out, [-0.1])  # x = 0; the norms are raised to 1e-12: no division by zero


def test_lr_adaption_has_no_gradient():
    op = core.CreateOperator("LearningRateAdaption", ["lr", "g", "e"], ["lr"])
    with pytest.raises(Exception, match="LearningRateAdaption"):
        core.GradientRegistry.GetGradientForOp(op, ["lr_grad"])


def test_lr_adaption_bad_input():
    rng = np.random.default_rng(2)
    g = f32(rng, 3)
    op = "LearningRateAdaption"

    def feeds(**kw):
        d = {"lr": np.array([0.1], F), "g": g, "e": g}
        d.update(kw)
        return d

    raises(ValueError, r"op LearningRateAdaption #0: input 2 blob 'e' must have the shape of input 1 blob "
                       r"'g' \(3,\) float32, got \(1, 3\) float32", op, feeds(e=f32(rng, 1, 3)), ["o"])
    raises(TypeError, r"op LearningRateAdaption #0: input 1 blob 'g' must be float32, got \(3,\) int32",
           op, feeds(g=np.zeros(3, np.int32)), ["o"])
    raises(ValueError, r"op LearningRateAdaption #0: input 0 blob 'lr' \(the learning rate\) must hold one "
                       r"value, got \(2,\) float32", op, feeds(lr=np.array([0.1, 0.2], F)), ["o"])
    raises(ValueError, r"op LearningRateAdaption #0: argument lr_alpha must be finite, got inf",
           op, feeds(), ["o"], lr_alpha=float("inf"))
    raises(ValueError, r"op LearningRateAdaption #0: argument normalized_lr_adaption must be 0 or 1, got 2",
           op, feeds(), ["o"], normalized_lr_adaption=2)
    raises(ValueError, r"op LearningRateAdaption #0: input 1 and output 0 are the same blob 'g'",
           op, feeds(), ["g"])
    raises(ValueError, r"op LearningRateAdaption #0: expects 1 outputs, got 2", op, feeds(), ["o", "o2"])
    # a failed run leaves the rate as it was
    workspace.FeedBlob("lr", np.array([0.7], F))
    raises(ValueError, "must have the shape", op, feeds(lr=np.array([0.7], F), e=f32(rng, 4)), ["lr"])
    same(workspace.FetchBlob("lr"), [0.7])


# ---------------------------------------------------------------- Adam's effective gradient
@pytest.mark.parametrize("it", [0, 3, 1000])
@pytest.mark.parametrize("betas", [(0.9, 0.999, 1e-8), (0.5, 0.6, 1e-2), (0.0, 0.0, 0.0)])
@pytest.mark.parametrize("shape", [(4, 3), (1,), (0, 2)])
def test_adam_effective_grad_matches_numpy(it, betas, shape):
    rng = np.random.default_rng(it)
    b1, b2, eps = betas
    p, m1, g = f32(rng, *shape), f32(rng, *shape), f32(rng, *shape)
    m2 = np.abs(f32(rng, *shape))
    feeds = {"p": p, "m1": m1, "m2": m2, "g": g, "lr": np.array([-0.01], F), "it": np.array([it], np.int32)}
    outs = run("Adam", feeds, ["np", "nm1", "nm2", "ng"], beta1=b1, beta2=b2, epsilon=eps)
    for got, want in zip(outs, ref_adam_eg(p, m1, m2, g, -0.01, it, b1, b2, eps)):
        same(got, want)
    # the moments are those of the three-output op; the parameter within a rounding of it
    three = run("Adam", feeds, ["q", "qm1", "qm2"], beta1=b1, beta2=b2, epsilon=eps)
    same(three[1], outs[1])
    same(three[2], outs[2])
    np.testing.assert_allclose(three[0], outs[0], rtol=1e-6, atol=1e-7)


def test_adam_effective_grad_in_place_of_grad():
    rng = np.random.default_rng(4)
    p, m1, m2, g = f32(rng, 6), f32(rng, 6), np.abs(f32(rng, 6)), f32(rng, 6)
    want = ref_adam_eg(p, m1, m2, g, -0.1, 2)
    feeds = {"p": p, "m1": m1, "m2": m2, "g": g, "lr": np.array([-0.1], F), "it": np.array([2], np.int32)}
    outs = run("Adam", feeds, ["p", "m1", "m2", "g"])
    for got, w in zip(outs, want):
        same(got, w)


def test_adam_effective_grad_bad_input():
    rng = np.random.default_rng(5)
    v = f32(rng, 3)
    feeds = {"p": v, "m1": v, "m2": v, "g": v, "lr": np.array([-0.1], F), "it": np.array([0], np.int32)}
    raises(ValueError, r"op Adam #0: expects 3 to 4 outputs, got 5", "Adam", feeds,
           ["p", "m1", "m2", "e", "extra"])
    raises(ValueError, r"op Adam #0: input 4 and output 3 are the same blob 'lr'", "Adam", feeds,
           ["p", "m1", "m2", "lr"])
    raises(ValueError, r"op Adam #0: input 0 and output 3 are the same blob 'p'", "Adam", feeds,
           ["p", "m1", "m2", "p"])
    raises(ValueError, r"op Adam #0: outputs 0 and 3 are the same blob 'q'", "Adam", feeds,
           ["q", "m1", "m2", "q"])


def sparse_feeds(rng, V=6, R=(3,), ids=(4, 1, 4, 0), rowwise=False):
    p = f32(rng, V, *R)
    m1 = f32(rng, V, *R)
    m2 = np.abs(f32(rng, V)) if rowwise else np.abs(f32(rng, V, *R))
    ids = np.array(ids, np.int32)
    g = f32(rng, *ids.shape, *R)
    return {"p": p, "m1": m1, "m2": m2, "i": ids, "g": g, "lr": np.array([-0.02], F),
            "it": np.array([3], np.int32)}


@pytest.mark.parametrize("R", [(3,), (), (2, 2)])
@pytest.mark.parametrize("ids", [(4, 1, 4, 0), (2,), ()])
def test_sparse_adam_effective_grad_matches_numpy(R, ids):
    rng = np.random.default_rng(len(ids))
    d = sparse_feeds(rng, R=R, ids=ids)
    p, m1, m2 = d["p"].copy(), d["m1"].copy(), d["m2"].copy()
    e = np.zeros_like(d["g"])
    for k, i in enumerate(d["i"]):  # one occurrence at a time, in order
        p[i], m1[i], m2[i], e[k] = ref_adam_eg(p[i], m1[i], m2[i], d["g"][k], -0.02, 3)
    outs = run("SparseAdam", d, ["p", "m1", "m2", "eg"], beta1=0.9, beta2=0.999, epsilon=1e-5)
    for got, want in zip(outs, (p, m1, m2, e)):
        same(got, want)


@pytest.mark.parametrize("R", [(3,), (), (2, 2)])
@pytest.mark.parametrize("ids", [(4, 1, 4, 0), (2,), ()])
def test_rowwise_sparse_adam_effective_grad_matches_numpy(R, ids):
    rng = np.random.default_rng(10 + len(ids))
    d = sparse_feeds(rng, R=R, ids=ids, rowwise=True)
    p, m1, m2 = d["p"].copy(), d["m1"].copy(), d["m2"].copy()
    e = np.zeros_like(d["g"])
    c = correction(3, 0.8, 0.9)
    for k, i in enumerate(d["i"]):
        w, m, v, ek = ref_rowwise_row_eg(p[i].ravel(), m1[i].ravel(), m2[i], d["g"][k].ravel(), -0.02, c,
                                         0.8, 0.9, 1e-3)
        p[i], m1[i], m2[i], e[k] = w.reshape(R), m.reshape(R), v, ek.reshape(R)
    outs = run("RowWiseSparseAdam", d, ["p", "m1", "m2", "eg"], beta1=0.8, beta2=0.9, epsilon=1e-3)
    for got, want in zip(outs, (p, m1, m2, e)):
        same(got, want)


@pytest.mark.parametrize("op", ["SparseAdam", "RowWiseSparseAdam"])
def test_sparse_effective_grad_in_place_of_grad_and_bad_input(op):
    rng = np.random.default_rng(7)
    d = sparse_feeds(rng, rowwise=op == "RowWiseSparseAdam")
    want = run(op, d, ["p", "m1", "m2", "eg"])
    workspace.ResetWorkspace()
    got = run(op, d, ["p", "m1", "m2", "g"], inputs=list(d))
    for a, b in zip(got, want):
        same(a, b)
    workspace.ResetWorkspace()
    raises(ValueError, r"op %s #0: expects 3 to 4 outputs, got 5" % op, op, d, ["p", "m1", "m2", "e", "x"])
    raises(ValueError, r"op %s #0: input 3 and output 3 are the same blob 'i'" % op, op, d,
           ["p", "m1", "m2", "i"])
    # a bad index: nothing written, the effective-gradient blob not created
    bad = dict(d, i=np.array([1, 6], np.int32), g=f32(rng, 2, 3))
    raises(IndexError, r"op %s #0: .*6" % op, op, bad, ["p", "m1", "m2", "eg2"])
    same(workspace.FetchBlob("p"), d["p"])
    assert workspace.FetchBlob("eg2") == b"eg2, a C++ native class of type nullptr (uninitialized)."
