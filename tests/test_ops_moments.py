"""The ops of csrc/ops/moments.c: LpNorm, BatchMoments (with their gradient ops and makers,
recurrent/_grad_moments.py) and SinusoidPositionEncoding, against float64 NumPy references (p = 1 and
2, average, both orders, empty tensors, NaN), finite differences for the gradients, bad input by
exception type and message (at run and at net creation), and the workspace staying usable."""

import math

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import G, check_grads, close, f32, feed, op, run  # the same helpers


V, T = ValueError, TypeError


def bad(exc, msg):
    return pytest.raises(exc, match=msg)


# ---------------------------------------------------------------- LpNorm
def lp_ref(x, p, average):
    x = np.asarray(x, np.float64)
    s = np.abs(x).sum() if p == 1 else (x * x).sum()
    return np.array([s / (x.size if average else 1)])


def lp_grad_ref(x, g, p, average):
    x = np.asarray(x, np.float64)
    d = np.where(x > 1e-12, 1.0, np.where(x < -1e-12, -1.0, 0.0)) if p == 1 else 2 * x
    return d * float(g) / (x.size if average else 1)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (), (0,), (2, 0)])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("average", [0, 1])
def test_lp_norm(rng, shape, p, average):
    x = f32(rng, *shape)
    if average and x.size == 0:
        return  # a ValueError: test_lp_norm_bad_input
    feed(x=x, g=np.array([0.7], np.float32))
    z = run("LpNorm", ["x"], ["z"], p=p, average=average)
    close(z, lp_ref(x, p, average))
    dx = run("LpNormGradient", ["x", "g"], ["dx"], p=p, average=average)
    close(dx, lp_grad_ref(x, 0.7, p, average))


def test_lp_norm_defaults_caffe2_doc_example_and_dead_zone():
    feed(x=np.array([5.0, 2.0], np.float32))
    close(run("LpNorm", ["x"], ["z"]), [29.0])  # p=2 by default: the sum of squares (no root), as Caffe2
    feed(x=np.array([1e-13, -1e-13, 0.0, 3.0, -2.0], np.float32), g=np.array([2.0], np.float32))
    close(run("LpNormGradient", ["x", "g"], ["dx"], p=1), [0, 0, 0, 2, -2])
    feed(x=np.array([1.0, np.nan], np.float32))
    assert np.isnan(run("LpNorm", ["x"], ["z"], p=1)).all()
    assert np.isnan(run("LpNormGradient", ["x", "g"], ["dx"], p=1)[1])


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("average", [0, 1])
def test_lp_norm_fd_gradient(rng, p, average):
    x = f32(rng, 3, 4)
    x[np.abs(x) < 0.1] = 0.5  # away from the kink of |x|
    check_grads(op("LpNorm", ["x"], ["z"], p=p, average=average), [x])


def test_lp_norm_gradient_maker():
    (g,), grads = G(op("LpNorm", ["x"], ["z"], p=1, average=1), ["z_grad"])
    assert g.type == "LpNormGradient" and list(g.input) == ["x", "z_grad"] and list(g.output) == ["x_grad"]
    assert {a.name: a.value() for a in g.arg} == {"p": 1, "average": 1}
    assert grads == ["x_grad"]


def test_lp_norm_bad_input():
    feed(x=np.ones((2, 3), np.float32), e=np.zeros((0,), np.float32), i=np.ones(3, np.int32),
         g2=np.ones(2, np.float32))
    with bad(V, r"op LpNorm #0: argument p must be 1 or 2, got 3"):
        workspace.RunOperatorOnce(op("LpNorm", ["x"], ["z"], p=3))
    with bad(V, r"op LpNorm #0: argument average must be 0 or 1, got 2"):
        workspace.RunOperatorOnce(op("LpNorm", ["x"], ["z"], average=2))
    with bad(V, r"op LpNorm #0: average=1 of input 0 blob 'e' \(0,\) float32: the average of no element"):
        workspace.RunOperatorOnce(op("LpNorm", ["e"], ["z"], average=1))
    with bad(T, r"op LpNorm #0: input 0 blob 'i'"):
        workspace.RunOperatorOnce(op("LpNorm", ["i"], ["z"]))
    with bad(V, r"op LpNormGradient #0: input 1 blob 'g2' \(dZ\) \(2,\) float32 must hold exactly 1 value"):
        workspace.RunOperatorOnce(op("LpNormGradient", ["x", "g2"], ["dx"]))
    # at net creation too
    net = core.Net("lp_bad")
    net.LpNorm(["e"], ["z"], average=1)
    with bad(V, r"op LpNorm #0: average=1 of input 0 blob 'e'"):
        workspace.CreateNet(net)
    close(run("LpNorm", ["x"], ["z"], p=1), [6.0])  # the workspace stays usable


# ---------------------------------------------------------------- BatchMoments
def bm_ref(x, order):
    x = np.asarray(x, np.float64)
    c = x.shape[1] if order == "NCHW" else x.shape[-1]
    if x.size == 0:
        return np.zeros(c), np.zeros(c)
    rows = np.moveaxis(x, 1, -1).reshape(-1, c) if order == "NCHW" else x.reshape(-1, c)
    return rows.mean(axis=0), (rows * rows).mean(axis=0)


def bm_grad_ref(dmu, dvar, x, order):
    x = np.asarray(x, np.float64)
    c = x.shape[1] if order == "NCHW" else x.shape[-1]
    shape = [1] * x.ndim
    shape[1 if order == "NCHW" else -1] = c
    count = x.size // c if c else 0
    return (dmu.reshape(shape) + 2 * x * dvar.reshape(shape)) / max(count, 1)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 2, 2, 2), (1, 1), (0, 3, 2), (3, 0, 2), (2, 3, 0)])
@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_batch_moments(rng, shape, order):
    x = f32(rng, *shape)
    feed(x=x)
    mu, var = run("BatchMoments", ["x"], ["mu", "var"], order=order)
    want_mu, want_var = bm_ref(x, order)
    close(mu, want_mu)
    close(var, want_var)
    c = mu.shape[0]
    dmu, dvar = f32(rng, c), f32(rng, c)
    feed(dmu=dmu, dvar=dvar)
    dx = run("BatchMomentsGradient", ["dmu", "dvar", "x"], ["dx"], order=order)
    close(dx, bm_grad_ref(dmu, dvar, x, order))


def test_batch_moments_default_order_is_nchw(rng):
    x = f32(rng, 2, 3, 4)
    feed(x=x)
    mu, var = run("BatchMoments", ["x"], ["mu", "var"])
    close(mu, bm_ref(x, "NCHW")[0])
    assert var.shape == (3,)


@pytest.mark.parametrize("order,shape", [("NCHW", (2, 3, 2)), ("NHWC", (2, 2, 3))])
@pytest.mark.parametrize("outs", [(0, 1), (0,), (1,)])
def test_batch_moments_fd_gradient(rng, order, shape, outs):
    check_grads(op("BatchMoments", ["x"], ["mu", "var"], order=order), [f32(rng, *shape)],
                outputs_with_grads=outs)


def test_batch_moments_gradient_maker_fills_a_missing_gradient():
    ops, grads = G(op("BatchMoments", ["x"], ["mu", "var"], order="NHWC"), [None, "var_g"])
    assert [o.type for o in ops] == ["ConstantFill", "BatchMomentsGradient"]
    assert list(ops[0].input) == ["mu"] and list(ops[1].input) == [ops[0].output[0], "var_g", "x"]
    assert {a.name: a.value() for a in ops[1].arg} == {"order": "NHWC"}
    assert grads == ["x_grad"]
    assert G(op("BatchMoments", ["x"], ["mu", "var"]), [None, None]) == ([], [None])


def test_batch_moments_bad_input():
    feed(x=np.ones((2, 3), np.float32), x1=np.ones(3, np.float32), d3=np.ones(3, np.float32),
         d2=np.ones(2, np.float32))
    with bad(V, r"op BatchMoments #0: argument order must be \"NCHW\" or \"NHWC\", got \"CHW\""):
        workspace.RunOperatorOnce(op("BatchMoments", ["x"], ["mu", "var"], order="CHW"))
    with bad(V, r"op BatchMoments #0: input 0 blob 'x1' \(X\) must have at least 2 dims \(N, C, ...\), got "
                r"\(3,\) float32"):
        workspace.RunOperatorOnce(op("BatchMoments", ["x1"], ["mu", "var"]))
    with bad(V, r"op BatchMomentsGradient #0: input 1 blob 'd2' \(dvar\) \(2,\) float32 must have shape \(3,\): "
                r"the channels of input 2 blob 'x' \(2, 3\) float32"):
        workspace.RunOperatorOnce(op("BatchMomentsGradient", ["d3", "d2", "x"], ["dx"], order="NHWC"))
    with bad(V, r"op BatchMomentsGradient #0: input 0 blob 'd2' \(dmu\)"):
        workspace.RunOperatorOnce(op("BatchMomentsGradient", ["d2", "d3", "x"], ["dx"], order="NHWC"))
    mu, _ = run("BatchMoments", ["x"], ["mu", "var"])  # the workspace stays usable
    close(mu, [1, 1, 1])


# ---------------------------------------------------------------- SinusoidPositionEncoding
def spe_ref(pos, emb, alpha, amp):
    pos = np.asarray(pos, np.float64)[..., None]
    e = np.arange(emb)
    x = pos / np.power(float(alpha), e / emb)
    return amp * np.where(e % 2 == 0, np.sin(x), np.cos(x))


@pytest.mark.parametrize("shape", [(4, 3), (1, 1), (0, 3), (3, 0)])
@pytest.mark.parametrize("emb,alpha,amp", [(6, 10000.0, 1.0), (1, 5000.0, 2.5), (7, 20000.0, 0.1)])
def test_sinusoid_position_encoding(rng, shape, emb, alpha, amp):
    pos = rng.randint(0, 50, shape).astype(np.int32)
    feed(p=pos)
    y = run("SinusoidPositionEncoding", ["p"], ["y"], embedding_size=emb, alpha=alpha, amplitude=amp)
    close(y, spe_ref(pos, emb, alpha, amp))


def test_sinusoid_position_encoding_defaults_and_each_position_on_its_own():
    pos = np.array([[1, 5], [0, -3]], np.int32)  # Caffe2 encoded pos[m, 0] for every k (and log(0), log(-3))
    feed(p=pos)
    y = run("SinusoidPositionEncoding", ["p"], ["y"])
    assert y.shape == (2, 2, 100)
    close(y, spe_ref(pos, 100, 10000.0, 1.0))
    close(y[1, 0], [0.0, 1.0] * 50)
    assert math.isclose(y[0, 1, 0], math.sin(5.0), rel_tol=1e-6)


def test_sinusoid_position_encoding_bad_input_and_no_gradient():
    feed(p=np.ones((2, 3), np.int32), p1=np.ones(3, np.int32), pf=np.ones((2, 3), np.float32))
    spe = "SinusoidPositionEncoding"
    with bad(V, r"op SinusoidPositionEncoding #0: argument embedding_size must be in \[1, 2147483647\], got 0"):
        workspace.RunOperatorOnce(op(spe, ["p"], ["y"], embedding_size=0))
    with bad(V, r"op SinusoidPositionEncoding #0: argument alpha must be finite and > 0, got -1"):
        workspace.RunOperatorOnce(op(spe, ["p"], ["y"], alpha=-1.0))
    with bad(V, r"op SinusoidPositionEncoding #0: argument amplitude must be finite, got inf"):
        workspace.RunOperatorOnce(op(spe, ["p"], ["y"], amplitude=float("inf")))
    with bad(V, r"op SinusoidPositionEncoding #0: input 0 blob 'p1' \(positions\) must be 2-D, got \(3,\) int32"):
        workspace.RunOperatorOnce(op(spe, ["p1"], ["y"]))
    with bad(T, r"op SinusoidPositionEncoding #0: input 0 blob 'pf'"):
        workspace.RunOperatorOnce(op(spe, ["pf"], ["y"]))
    assert G(op(spe, ["p"], ["y"]), ["y_grad"]) == ([], [None])  # no gradient (integer positions)
    assert run(spe, ["p"], ["y"], embedding_size=4).shape == (2, 3, 4)  # the workspace stays usable
