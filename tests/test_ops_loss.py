"""Loss / training operators: SquaredL2Distance, AveragedLoss, SumElements,
Softmax, SoftmaxWithLoss, LabelCrossEntropy and their gradient ops.

Forward ops and gradient ops are checked against NumPy references; the
gradient makers (recurrent/_grad_loss.py) by finite differences; bad input by
exception type and message (op, blob, shapes / offending value).
"""

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.gradient_checker import GradientChecker
from recurrent.proto import OperatorDef, make_argument


def make_op(op_type, inputs, outputs, **args):
    op = OperatorDef(op_type, inputs, outputs)
    for k, v in args.items():
        op.arg.append(make_argument(k, v))
    return op


def run(op_type, feeds, outputs, **args):
    """Feeds ``feeds`` (an ordered dict name -> array, the op's inputs in
    order), runs the op once and returns the fetched outputs."""
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    workspace.RunOperatorOnce(make_op(op_type, list(feeds), outputs, **args))
    res = [workspace.FetchBlob(o) for o in outputs]
    for r in res:
        assert r.dtype == np.float32
    return res


def rows(x, n):
    """x as an n x D matrix (works for n == 0, where reshape(0, -1) does not)."""
    return x.reshape(n, x.size // n if n else int(np.prod(x.shape[1:], dtype=np.int64)))


def f32(*shape, rng, scale=1.0):
    return np.asarray(rng.randn(*shape) * scale, dtype=np.float32)


# ---------------------------------------------------------------- NumPy references
def ref_softmax(x, axis=1):
    ax = axis % x.ndim
    n = int(np.prod(x.shape[:ax]))
    x2 = rows(x, n).astype(np.float64) if ax else x.reshape(1, -1).astype(np.float64)
    if x2.size == 0:
        return x.astype(np.float64)
    e = np.exp(x2 - x2.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)


def ref_log_softmax(x2):
    x2 = x2.astype(np.float64)
    m = x2.max(axis=1, keepdims=True)
    return x2 - m - np.log(np.exp(x2 - m).sum(axis=1, keepdims=True))


def ref_swl(x, labels, weights=None, label_prob=False, axis=1, scale=1.0):
    """Returns (softmax, loss, dloss/dlogits) in float64."""
    ax = axis % x.ndim
    n = int(np.prod(x.shape[:ax]))
    x2 = rows(x, n)
    d = x2.shape[1]
    logp = ref_log_softmax(x2)
    p = np.exp(logp)
    if label_prob:
        t = labels.reshape(n, d).astype(np.float64)
    else:
        t = np.zeros((n, d))
        t[np.arange(n), labels.reshape(-1)] = 1.0
    ce = -(t * logp).sum(axis=1)
    w = np.ones(n) if weights is None else weights.reshape(-1).astype(np.float64)
    wsum = w.sum()
    loss = scale * (w * ce).sum() / wsum if wsum != 0 else 0.0
    c = scale / wsum if wsum != 0 else 0.0
    grad = c * w[:, None] * (p * t.sum(axis=1, keepdims=True) - t)
    return p.reshape(x.shape), loss, grad.reshape(x.shape)


# ---------------------------------------------------------------- SquaredL2Distance
@pytest.mark.parametrize("shape", [(4, 3), (5,), (2, 3, 4), (0, 3), ()])
def test_squared_l2_distance(rng, shape):
    x = f32(*shape, rng=rng)
    y = f32(*shape, rng=rng)
    (dist,) = run("SquaredL2Distance", {"X": x, "Y": y}, ["dist"])
    n = shape[0] if shape else 1
    diff = rows(x.astype(np.float64) - y, n)
    ref = 0.5 * (diff ** 2).sum(axis=1)
    assert dist.shape == (n,)
    np.testing.assert_allclose(dist, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 3), (5,), (2, 3, 4), (0, 3)])
def test_squared_l2_distance_gradient_op(rng, shape):
    x = f32(*shape, rng=rng)
    y = f32(*shape, rng=rng)
    g = f32(shape[0], rng=rng)
    dx, dy = run("SquaredL2DistanceGradient", {"X": x, "Y": y, "dDist": g}, ["dX", "dY"])
    ref = g.reshape((-1,) + (1,) * (x.ndim - 1)) * (x - y)
    assert dx.shape == x.shape and dy.shape == y.shape
    np.testing.assert_allclose(dx, ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dy, -ref, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- AveragedLoss / SumElements
@pytest.mark.parametrize("shape", [(4, 3), (7,), (2, 3, 4), ()])
def test_averaged_loss(rng, shape):
    x = f32(*shape, rng=rng)
    (loss,) = run("AveragedLoss", {"X": x}, ["loss"])
    assert loss.shape == ()
    np.testing.assert_allclose(loss, x.astype(np.float64).mean(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("average", [0, 1])
def test_sum_elements(rng, average):
    x = f32(3, 5, rng=rng)
    (s,) = run("SumElements", {"X": x}, ["s"], average=average)
    ref = x.astype(np.float64).sum() / (x.size if average else 1)
    assert s.shape == ()
    np.testing.assert_allclose(s, ref, rtol=1e-5, atol=1e-6)
    (s2,) = run("SumElements", {"X": x}, ["s2"])   # default: plain sum
    np.testing.assert_allclose(s2, x.astype(np.float64).sum(), rtol=1e-5, atol=1e-6)


def test_empty_reductions_are_zero():
    """Documented: the mean (and the sum) of an empty tensor is 0, not NaN."""
    x = np.zeros((0, 4), np.float32)
    (loss,) = run("AveragedLoss", {"X": x}, ["loss"])
    (s,) = run("SumElements", {"X": x}, ["s"], average=1)
    (s0,) = run("SumElements", {"X": x}, ["s0"])
    assert loss.shape == () and loss == 0.0 and s == 0.0 and s0 == 0.0
    (dx,) = run("AveragedLossGradient", {"X": x, "dL": np.float32(1.0).reshape(())}, ["dX"])
    assert dx.shape == (0, 4)


@pytest.mark.parametrize("gshape", [(), (1,)])
def test_averaged_loss_and_sum_gradient_ops(rng, gshape):
    x = f32(3, 4, rng=rng)
    g = np.full(gshape, 0.75, np.float32)
    (dx,) = run("AveragedLossGradient", {"X": x, "dL": g}, ["dX"])
    np.testing.assert_allclose(dx, np.full(x.shape, 0.75 / 12), rtol=1e-6)
    (ds,) = run("SumElementsGradient", {"X": x, "dL": g}, ["dS"])
    np.testing.assert_allclose(ds, np.full(x.shape, 0.75), rtol=1e-6)
    (da,) = run("SumElementsGradient", {"X": x, "dL": g}, ["dA"], average=1)
    np.testing.assert_allclose(da, np.full(x.shape, 0.75 / 12), rtol=1e-6)


def test_averaged_loss_gradient_in_place(rng):
    x = f32(3, 4, rng=rng)
    workspace.FeedBlob("X", x)
    workspace.FeedBlob("dL", np.ones((), np.float32))
    workspace.RunOperatorOnce(make_op("AveragedLossGradient", ["X", "dL"], ["X"]))
    np.testing.assert_allclose(workspace.FetchBlob("X"), np.full((3, 4), 1 / 12), rtol=1e-6)


# ---------------------------------------------------------------- Softmax
@pytest.mark.parametrize("shape,axis", [((4, 6), 1), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), -1),
                                        ((2, 3, 4), 0), ((5,), 0), ((0, 3), 1), ((3, 0), 1)])
def test_softmax(rng, shape, axis):
    x = f32(*shape, rng=rng, scale=3.0)
    (y,) = run("Softmax", {"X": x}, ["Y"], axis=axis)
    assert y.shape == x.shape
    np.testing.assert_allclose(y, ref_softmax(x, axis), rtol=1e-5, atol=1e-7)


def test_softmax_default_axis_and_stability():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    (y,) = run("Softmax", {"X": x}, ["Y"])
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, ref_softmax(x), rtol=1e-6)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-6)


def test_softmax_in_place(rng):
    x = f32(3, 5, rng=rng)
    workspace.FeedBlob("X", x)
    workspace.RunOperatorOnce(make_op("Softmax", ["X"], ["X"]))
    np.testing.assert_allclose(workspace.FetchBlob("X"), ref_softmax(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape,axis", [((4, 6), 1), ((2, 3, 4), 2), ((2, 3, 4), 0)])
def test_softmax_gradient_op(rng, shape, axis):
    y = ref_softmax(f32(*shape, rng=rng), axis).astype(np.float32)
    dy = f32(*shape, rng=rng)
    (dx,) = run("SoftmaxGradient", {"Y": y, "dY": dy}, ["dX"], axis=axis)
    n = int(np.prod(shape[:axis % len(shape)]))
    y2, dy2 = y.reshape(n, -1).astype(np.float64), dy.reshape(n, -1).astype(np.float64)
    ref = y2 * (dy2 - (y2 * dy2).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(dx, ref.reshape(shape), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- SoftmaxWithLoss
def _labels(rng, n, d, shape=None):
    lab = rng.randint(0, d, size=n).astype(np.int32)
    return lab if shape is None else lab.reshape(shape)


@pytest.mark.parametrize("label_shape", ["flat", "column"])
@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_with_loss(rng, label_shape, weighted):
    n, d = 6, 5
    x = f32(n, d, rng=rng, scale=2.0)
    lab = _labels(rng, n, d, (n,) if label_shape == "flat" else (n, 1))
    feeds = {"X": x, "L": lab}
    w = None
    if weighted:
        w = rng.uniform(0.2, 2.0, size=n).astype(np.float32)
        feeds["W"] = w
    p, loss = run("SoftmaxWithLoss", feeds, ["P", "loss"])
    rp, rloss, rgrad = ref_swl(x, lab, w)
    assert p.shape == x.shape and loss.shape == ()
    np.testing.assert_allclose(p, rp, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss, rloss, rtol=1e-5)
    feeds.update({"P": p, "dL": np.float32(1.5).reshape(())})
    (dx,) = run("SoftmaxWithLossGradient", feeds, ["dX"])
    np.testing.assert_allclose(dx, 1.5 * rgrad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_with_loss_label_prob(rng, weighted):
    n, d = 5, 4
    x = f32(n, d, rng=rng, scale=2.0)
    t = rng.uniform(0.0, 1.0, size=(n, d))
    t = (t / t.sum(axis=1, keepdims=True)).astype(np.float32)
    feeds = {"X": x, "T": t}
    w = None
    if weighted:
        w = rng.uniform(0.2, 2.0, size=n).astype(np.float32)
        feeds["W"] = w
    p, loss = run("SoftmaxWithLoss", feeds, ["P", "loss"], label_prob=1)
    rp, rloss, rgrad = ref_swl(x, t, w, label_prob=True)
    np.testing.assert_allclose(p, rp, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss, rloss, rtol=1e-5)
    feeds.update({"P": p, "dL": np.ones((1,), np.float32)})
    (dx,) = run("SoftmaxWithLossGradient", feeds, ["dX"], label_prob=1)
    np.testing.assert_allclose(dx, rgrad, rtol=1e-5, atol=1e-7)


def test_softmax_with_loss_scale_and_axis(rng):
    x = f32(2, 3, 4, rng=rng)
    lab = _labels(rng, 6, 4, (2, 3))           # rank == axis: N labels
    p, loss = run("SoftmaxWithLoss", {"X": x, "L": lab}, ["P", "loss"], axis=2, scale=2.5)
    rp, rloss, rgrad = ref_swl(x, lab, axis=2, scale=2.5)
    np.testing.assert_allclose(p, rp, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss, rloss, rtol=1e-5)
    (dx,) = run("SoftmaxWithLossGradient", {"X": x, "L": lab, "P": p, "dL": np.ones((), np.float32)},
                ["dX"], axis=2, scale=2.5)
    np.testing.assert_allclose(dx, rgrad, rtol=1e-5, atol=1e-7)
    # axis=1 on a 3-D input: D = 3 * 4
    lab1 = _labels(rng, 2, 12)
    p1, loss1 = run("SoftmaxWithLoss", {"X": x, "L1": lab1}, ["P1", "loss1"])
    rp1, rloss1, _ = ref_swl(x, lab1)
    np.testing.assert_allclose(p1, rp1, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(loss1, rloss1, rtol=1e-5)


def test_softmax_with_loss_caffe2_doc_example():
    x = np.array([[0.1, 0.4, 0.7, 1.5, 0.2]], np.float32)
    p, loss = run("SoftmaxWithLoss", {"X": x, "L": np.array([4], np.int32)}, ["P", "loss"], scale=5.0)
    np.testing.assert_allclose(p, [[0.10715417, 0.144643, 0.19524762, 0.4345316, 0.11842369]], rtol=1e-5)
    np.testing.assert_allclose(loss, 10.667433, rtol=1e-5)


def test_softmax_with_loss_stable_for_large_logits():
    x = np.array([[0.0, 200.0, -200.0], [1e4, 0.0, 0.0]], np.float32)
    p, loss = run("SoftmaxWithLoss", {"X": x, "L": np.array([2, 1], np.int32)}, ["P", "loss"])
    assert np.all(np.isfinite(p)) and np.isfinite(loss)
    np.testing.assert_allclose(loss, (400.0 + 1e4) / 2, rtol=1e-5)


def test_softmax_with_loss_empty_batch():
    """Documented: the loss of an empty batch is 0 (as is the gradient)."""
    x = np.zeros((0, 5), np.float32)
    lab = np.zeros((0,), np.int32)
    p, loss = run("SoftmaxWithLoss", {"X": x, "L": lab}, ["P", "loss"])
    assert p.shape == (0, 5) and loss.shape == () and loss == 0.0
    (dx,) = run("SoftmaxWithLossGradient", {"X": x, "L": lab, "P": p, "dL": np.ones((), np.float32)}, ["dX"])
    assert dx.shape == (0, 5)
    # weighted, label_prob and zero total weight: also 0
    w = np.zeros((0,), np.float32)
    _, loss_w = run("SoftmaxWithLoss", {"X": x, "L": lab, "W": w}, ["P2", "loss2"])
    _, loss_p = run("SoftmaxWithLoss", {"X": x, "T": np.zeros((0, 5), np.float32)}, ["P3", "loss3"],
                    label_prob=1)
    assert loss_w == 0.0 and loss_p == 0.0


def test_softmax_with_loss_zero_weights(rng):
    x = f32(3, 4, rng=rng)
    lab = _labels(rng, 3, 4)
    w = np.zeros(3, np.float32)
    p, loss = run("SoftmaxWithLoss", {"X": x, "L": lab, "W": w}, ["P", "loss"])
    assert loss == 0.0
    (dx,) = run("SoftmaxWithLossGradient", {"X": x, "L": lab, "W": w, "P": p, "dL": np.ones((), np.float32)},
                ["dX"])
    np.testing.assert_array_equal(dx, np.zeros_like(x))


# ---------------------------------------------------------------- LabelCrossEntropy
@pytest.mark.parametrize("label_shape", ["flat", "column"])
def test_label_cross_entropy(rng, label_shape):
    n, d = 5, 4
    x = ref_softmax(f32(n, d, rng=rng)).astype(np.float32)
    x[0, :] = 0.0                         # clamped at 1e-20
    lab = _labels(rng, n, d, (n,) if label_shape == "flat" else (n, 1))
    (y,) = run("LabelCrossEntropy", {"X": x, "L": lab}, ["Y"])
    picked = x[np.arange(n), lab.reshape(-1)].astype(np.float64)
    ref = -np.log(np.maximum(picked, 1e-20))
    assert y.shape == (n,)
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    g = f32(n, rng=rng)
    (dx,) = run("LabelCrossEntropyGradient", {"X": x, "L": lab, "dY": g}, ["dX"])
    rdx = np.zeros((n, d))
    safe = picked >= np.float32(1e-20)
    rdx[np.arange(n), lab.reshape(-1)] = np.where(safe, -g / np.where(safe, picked, 1.0), 0.0)
    np.testing.assert_allclose(dx, rdx, rtol=1e-5)
    assert dx[0].tolist() == [0.0] * d     # below the clamp: no gradient


def test_label_cross_entropy_1d_and_caffe2_doc_example():
    x = np.array([[.01, .05, .02, .02, .9], [.03, .1, .42, .05, .4]], np.float32)
    (y,) = run("LabelCrossEntropy", {"X": x, "L": np.array([4, 2], np.int32)}, ["Y"])
    np.testing.assert_allclose(y, [0.10536055, 0.8675006], rtol=1e-5)
    # a 1-D X is one row
    (y1,) = run("LabelCrossEntropy", {"X1": x[1], "L1": np.array([2], np.int32)}, ["Y1"])
    np.testing.assert_allclose(y1, [0.8675006], rtol=1e-5)


def test_label_cross_entropy_empty_batch():
    (y,) = run("LabelCrossEntropy", {"X": np.zeros((0, 3), np.float32), "L": np.zeros((0,), np.int32)}, ["Y"])
    assert y.shape == (0,)


# ---------------------------------------------------------------- finite-difference gradient checks
def check_grad(op, inputs, index, outputs_with_grads, stepsize=5e-3, threshold=2e-2):
    checker = GradientChecker(stepsize, threshold)
    ok, grad, estimate = checker.CheckSimple(op, inputs, index, outputs_with_grads)
    assert ok, checker.last_message
    assert grad.shape == inputs[index].shape
    return grad


@pytest.mark.parametrize("shape", [(4, 3), (5,), (2, 3, 2)])
@pytest.mark.parametrize("index", [0, 1])
def test_squared_l2_distance_fd_gradient(rng, shape, index):
    op = make_op("SquaredL2Distance", ["X", "Y"], ["dist"])
    check_grad(op, [f32(*shape, rng=rng), f32(*shape, rng=rng)], index, [0])


@pytest.mark.parametrize("op_type,args", [("AveragedLoss", {}), ("SumElements", {}),
                                          ("SumElements", {"average": 1})])
def test_reduction_fd_gradient(rng, op_type, args):
    op = make_op(op_type, ["X"], ["y"], **args)
    grad = check_grad(op, [f32(3, 4, rng=rng)], 0, [0])
    assert np.ptp(grad) < 1e-6          # every element gets the same gradient


@pytest.mark.parametrize("shape,axis", [((3, 5), 1), ((2, 3, 4), 2), ((2, 3, 4), 1), ((2, 3, 2), 0)])
def test_softmax_fd_gradient(rng, shape, axis):
    op = make_op("Softmax", ["X"], ["Y"], axis=axis)
    check_grad(op, [f32(*shape, rng=rng)], 0, [0])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_prob", [False, True])
def test_softmax_with_loss_fd_gradient(rng, weighted, label_prob):
    n, d = 4, 5
    x = f32(n, d, rng=rng)
    if label_prob:
        t = rng.uniform(0.0, 1.0, size=(n, d))
        labels = (t / t.sum(axis=1, keepdims=True)).astype(np.float32)
    else:
        labels = _labels(rng, n, d)
    inputs, names = [x, labels], ["X", "L"]
    if weighted:
        inputs.append(rng.uniform(0.2, 2.0, size=n).astype(np.float32))
        names.append("W")
    op = make_op("SoftmaxWithLoss", names, ["P", "loss"], label_prob=int(label_prob), scale=1.5)
    grad = check_grad(op, inputs, 0, [1])
    _, loss, rgrad = ref_swl(x, labels, inputs[2] if weighted else None, label_prob=label_prob, scale=1.5)
    np.testing.assert_allclose(grad, loss * rgrad, rtol=1e-4, atol=1e-6)    # dL/dx of L = loss^2 / 2


def test_softmax_with_loss_fd_gradient_axis(rng):
    op = make_op("SoftmaxWithLoss", ["X", "L"], ["P", "loss"], axis=2)
    check_grad(op, [f32(2, 3, 4, rng=rng), _labels(rng, 6, 4, (2, 3, 1))], 0, [1])


def test_label_cross_entropy_fd_gradient(rng):
    x = rng.uniform(0.2, 1.0, size=(4, 3)).astype(np.float32)
    op = make_op("LabelCrossEntropy", ["X", "L"], ["Y"])
    check_grad(op, [x, _labels(rng, 4, 3)], 0, [0], stepsize=2e-3)


def test_gradient_makers_shape():
    """Which inputs get gradients, and what the gradient ops read."""
    ops, g = core.GradientRegistry.GetGradientForOp(
        make_op("SoftmaxWithLoss", ["X", "L", "W"], ["P", "loss"], scale=2.0), ["P_grad", "loss_grad"])
    assert g == ["X_grad", None, None]
    assert len(ops) == 1 and ops[0].type == "SoftmaxWithLossGradient"
    assert ops[0].input == ["X", "L", "W", "P", "loss_grad"] and ops[0].output == ["X_grad"]
    assert [(a.name, a.f) for a in ops[0].arg] == [("scale", 2.0)]
    ops, g = core.GradientRegistry.GetGradientForOp(make_op("SoftmaxWithLoss", ["X", "L"], ["P", "loss"]),
                                                    [None, "dloss"])
    assert g == ["X_grad", None] and ops[0].input == ["X", "L", "P", "dloss"]
    ops, g = core.GradientRegistry.GetGradientForOp(make_op("SoftmaxWithLoss", ["X", "L"], ["P", "loss"]),
                                                    ["P_grad", None])
    assert ops == [] and g == [None, None]
    ops, g = core.GradientRegistry.GetGradientForOp(make_op("Softmax", ["X"], ["Y"], axis=0), ["Y_grad"])
    assert ops[0].input == ["Y", "Y_grad"] and ops[0].arg[0].name == "axis" and g == ["X_grad"]
    ops, g = core.GradientRegistry.GetGradientForOp(make_op("LabelCrossEntropy", ["X", "L"], ["Y"]), ["dY"])
    assert ops[0].input == ["X", "L", "dY"] and g == ["X_grad", None]
    ops, g = core.GradientRegistry.GetGradientForOp(make_op("SquaredL2Distance", ["X", "Y"], ["d"]), ["dd"])
    assert ops[0].output == ["X_grad", "Y_grad"] and g == ["X_grad", "Y_grad"]
    ops, g = core.GradientRegistry.GetGradientForOp(make_op("SumElements", ["X"], ["s"], average=1), ["ds"])
    assert ops[0].type == "SumElementsGradient" and ops[0].arg[0].i == 1


def test_backward_pass_softmax_xent_equals_softmax_with_loss(rng):
    """Softmax -> LabelCrossEntropy -> AveragedLoss, built by AddGradientOperators,
    gives the same loss and logits gradient as SoftmaxWithLoss."""
    n, d = 5, 6
    x = f32(n, d, rng=rng)
    lab = _labels(rng, n, d)
    net = core.Net("xent")
    p = net.Softmax(["X"], "P")
    xent = net.LabelCrossEntropy([p, "L"], "xent")
    loss = net.AveragedLoss(xent, "loss")
    net.AddGradientOperators([loss])
    net2 = core.Net("swl")
    _, loss2 = net2.SoftmaxWithLoss(["X", "L"], ["P2", "loss2"])
    net2.AddGradientOperators([loss2])
    workspace.FeedBlob("X", x)
    workspace.FeedBlob("L", lab)
    workspace.RunNetOnce(net)
    l1, g1 = workspace.FetchBlob("loss"), workspace.FetchBlob("X_grad")
    workspace.RunNetOnce(net2)
    l2, g2 = workspace.FetchBlob("loss2"), workspace.FetchBlob("X_grad")
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g2, ref_swl(x, lab)[2], rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- bad input
def _raises(exc, match, op_type, feeds, outputs, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(make_op(op_type, list(feeds), outputs, **args))


@pytest.mark.parametrize("bad", [5, -1])
def test_softmax_with_loss_label_out_of_range(rng, bad):
    lab = np.array([0, 1, bad, 2], np.int32)
    workspace.FeedBlob("loss", np.full((), 42.0, np.float32))
    _raises(IndexError, r"op SoftmaxWithLoss #0: input 1 blob 'labs': label %d at row 2 is out of range \[0, 5\)"
            % bad, "SoftmaxWithLoss", {"X": f32(4, 5, rng=rng), "labs": lab}, ["P", "loss"])
    assert workspace.FetchBlob("loss") == 42.0       # checked before anything is written


def test_softmax_with_loss_gradient_label_out_of_range(rng):
    x = f32(2, 3, rng=rng)
    _raises(IndexError, r"op SoftmaxWithLossGradient #0: input 1 blob 'labs': label 3 at row 1",
            "SoftmaxWithLossGradient", {"X": x, "labs": np.array([0, 3], np.int32), "P": x,
                                        "dL": np.ones((), np.float32)}, ["dX"])


def test_label_cross_entropy_label_out_of_range(rng):
    _raises(IndexError, r"op LabelCrossEntropy #0: input 1 blob 'lab': label 7 at row 0 is out of range \[0, 4\)",
            "LabelCrossEntropy", {"X": f32(2, 4, rng=rng), "lab": np.array([7, 1], np.int32)}, ["Y"])
    _raises(IndexError, r"op LabelCrossEntropyGradient #0: input 1 blob 'lab': label -3 at row 1",
            "LabelCrossEntropyGradient", {"X": f32(2, 4, rng=rng), "lab": np.array([0, -3], np.int32),
                                          "dY": f32(2, rng=rng)}, ["dX"])


def test_label_dtype_float(rng):
    _raises(TypeError, r"op SoftmaxWithLoss #0: input 1 blob 'lab' must be int32, got \(3,\) float32",
            "SoftmaxWithLoss", {"X": f32(3, 4, rng=rng), "lab": np.array([0, 1, 2], np.float32)}, ["P", "loss"])
    _raises(TypeError, r"op LabelCrossEntropy #0: input 1 blob 'lab' must be int32, got \(3,\) float32",
            "LabelCrossEntropy", {"X": f32(3, 4, rng=rng), "lab": np.array([0, 1, 2], np.float32)}, ["Y"])
    # label_prob=1 wants float32 probabilities
    _raises(TypeError, r"op SoftmaxWithLoss #0: input 1 blob 'T' must be float32, got \(3, 4\) int32",
            "SoftmaxWithLoss", {"X": f32(3, 4, rng=rng), "T": np.zeros((3, 4), np.int32)}, ["P", "loss"],
            label_prob=1)


def test_x_y_shape_mismatch(rng):
    _raises(ValueError, r"op SquaredL2Distance #0: input 0 blob 'a' and input 1 blob 'b' must have the same "
            r"shape, got \(2, 3\) float32 and \(2, 4\) float32",
            "SquaredL2Distance", {"a": f32(2, 3, rng=rng), "b": f32(2, 4, rng=rng)}, ["d"])
    _raises(ValueError, r"op SquaredL2DistanceGradient #0: input 2 blob 'g' \(the distance gradient\) must have "
            r"shape \(2,\)", "SquaredL2DistanceGradient",
            {"a": f32(2, 3, rng=rng), "b": f32(2, 3, rng=rng), "g": f32(3, rng=rng)}, ["da", "db"])
    _raises(ValueError, r"op SoftmaxGradient #0: input 0 blob 'Y' and input 1 blob 'dY' must have the same shape",
            "SoftmaxGradient", {"Y": f32(2, 3, rng=rng), "dY": f32(3, 2, rng=rng)}, ["dX"])
    _raises(ValueError, r"op SoftmaxWithLossGradient #0: input 0 blob 'X' and input 2 blob 'P' must have the same "
            r"shape", "SoftmaxWithLossGradient", {"X": f32(2, 3, rng=rng), "L": np.array([0, 1], np.int32),
                                                  "P": f32(2, 4, rng=rng), "dL": np.ones((), np.float32)}, ["dX"])


def test_label_and_weight_shape_mismatch(rng):
    x = f32(4, 5, rng=rng)
    _raises(ValueError, r"op SoftmaxWithLoss #0: input 1 blob 'lab' must hold one int32 label per row: N=4 "
            r"labels.*got \(3,\) int32", "SoftmaxWithLoss", {"X": x, "lab": np.zeros(3, np.int32)}, ["P", "loss"])
    _raises(ValueError, r"op SoftmaxWithLoss #0: input 1 blob 'lab' must hold one int32 label per row.*"
            r"got \(4, 2\) int32", "SoftmaxWithLoss", {"X": x, "lab": np.zeros((4, 2), np.int32)}, ["P", "loss"])
    _raises(ValueError, r"op SoftmaxWithLoss #0: input 2 blob 'w' \(weights\) must hold one weight per row, "
            r"shape \(4,\), got \(3,\) float32", "SoftmaxWithLoss",
            {"X": x, "lab": np.zeros(4, np.int32), "w": np.ones(3, np.float32)}, ["P", "loss"])
    _raises(ValueError, r"op SoftmaxWithLoss #0: input 1 blob 'T' \(label_prob=1\) must split at axis 1 into "
            r"N=4 rows of D=5", "SoftmaxWithLoss", {"X": x, "T": np.full((4, 4), 0.25, np.float32)}, ["P", "loss"],
            label_prob=1)
    _raises(ValueError, r"op LabelCrossEntropy #0: input 1 blob 'lab' must hold one int32 label per row of input 0 "
            r"blob 'X' \(4, 5\) float32: shape \(4,\) or \(4, 1\), got \(4, 2\) int32", "LabelCrossEntropy",
            {"X": x, "lab": np.zeros((4, 2), np.int32)}, ["Y"])
    _raises(ValueError, r"op LabelCrossEntropyGradient #0: input 2 blob 'g' \(the loss gradient\) must have shape "
            r"\(4,\), got \(4, 1\) float32", "LabelCrossEntropyGradient",
            {"X": x, "lab": np.zeros(4, np.int32), "g": np.ones((4, 1), np.float32)}, ["dX"])


def test_label_prob_must_be_a_distribution(rng):
    x = f32(2, 3, rng=rng)
    _raises(ValueError, r"op SoftmaxWithLoss #0: input 1 blob 'T': label probabilities of row 1 sum to 0.9",
            "SoftmaxWithLoss", {"X": x, "T": np.array([[0.2, 0.3, 0.5], [0.3, 0.3, 0.3]], np.float32)},
            ["P", "loss"], label_prob=1)
    _raises(ValueError, r"op SoftmaxWithLoss #0: input 1 blob 'T': label probability -0.5 at row 0, class 1 is "
            r"negative", "SoftmaxWithLoss", {"X": x, "T": np.array([[1.0, -0.5, 0.5], [0, 0, 1]], np.float32)},
            ["P", "loss"], label_prob=1)


def test_wrong_rank(rng):
    _raises(ValueError, r"op LabelCrossEntropy #0: input 0 blob 'X' must have 1 to 8 dims, got \(\) float32",
            "LabelCrossEntropy", {"X": np.float32(0.5).reshape(()), "lab": np.zeros(1, np.int32)}, ["Y"])
    _raises(ValueError, r"op Softmax #0: argument axis=1 is out of range for input 0 blob 'X' of shape \(4,\) "
            r"float32", "Softmax", {"X": f32(4, rng=rng)}, ["Y"])
    _raises(ValueError, r"op Softmax #0: argument axis=-3 is out of range", "Softmax", {"X": f32(2, 4, rng=rng)},
            ["Y"], axis=-3)
    _raises(ValueError, r"op SoftmaxWithLoss #0: argument axis=1 is out of range for input 0 blob 'X' of shape "
            r"\(\) float32", "SoftmaxWithLoss", {"X": np.float32(1).reshape(()), "lab": np.zeros(1, np.int32)},
            ["P", "loss"])
    _raises(ValueError, r"op AveragedLossGradient #0: input 1 blob 'dL' must hold one value \(shape \(\) or "
            r"\(1,\)\), got \(2,\) float32", "AveragedLossGradient", {"X": f32(3, rng=rng), "dL": f32(2, rng=rng)},
            ["dX"])


def test_wrong_dtype_float_inputs(rng):
    _raises(TypeError, r"op SquaredL2Distance #0: input 1 blob 'b' must be float32, got \(2, 3\) int32",
            "SquaredL2Distance", {"a": f32(2, 3, rng=rng), "b": np.zeros((2, 3), np.int32)}, ["d"])
    _raises(TypeError, r"op AveragedLoss #0: input 0 blob 'X' must be float32, got \(3,\) int32",
            "AveragedLoss", {"X": np.zeros(3, np.int32)}, ["loss"])


def test_bad_arguments(rng):
    _raises(ValueError, r"op SumElements #0: argument average must be 0 or 1, got 2", "SumElements",
            {"X": f32(3, rng=rng)}, ["s"], average=2)
    _raises(ValueError, r"op SoftmaxWithLoss #0: argument label_prob must be 0 or 1, got 3", "SoftmaxWithLoss",
            {"X": f32(3, 2, rng=rng), "lab": np.zeros(3, np.int32)}, ["P", "loss"], label_prob=3)
    _raises(TypeError, r"SoftmaxWithLoss.*axis", "SoftmaxWithLoss",
            {"X": f32(3, 2, rng=rng), "lab": np.zeros(3, np.int32)}, ["P", "loss"], axis="one")
    _raises(ValueError, r"op SoftmaxWithLoss #0: argument spatial", "SoftmaxWithLoss",
            {"X": f32(3, 2, rng=rng), "lab": np.zeros(3, np.int32)}, ["P", "loss"], spatial=1)


def test_wrong_arity(rng):
    _raises(ValueError, r"op SoftmaxWithLoss #0: expects 2 to 3 inputs, got 1", "SoftmaxWithLoss",
            {"X": f32(3, 2, rng=rng)}, ["P", "loss"])
    _raises(ValueError, r"op SoftmaxWithLoss #0: expects 2 outputs, got 1", "SoftmaxWithLoss",
            {"X": f32(3, 2, rng=rng), "lab": np.zeros(3, np.int32)}, ["P"])


def test_workspace_usable_after_error(rng):
    x = f32(3, 4, rng=rng)
    _raises(IndexError, "label 9", "SoftmaxWithLoss", {"X": x, "lab": np.array([0, 9, 1], np.int32)},
            ["P", "loss"])
    workspace.FeedBlob("lab", np.array([0, 3, 1], np.int32))
    workspace.RunOperatorOnce(make_op("SoftmaxWithLoss", ["X", "lab"], ["P", "loss"]))
    np.testing.assert_allclose(workspace.FetchBlob("loss"), ref_swl(x, np.array([0, 3, 1]))[1], rtol=1e-5)


def test_repeated_runs_reuse_outputs(rng):
    """Same shapes: a second run writes into the same buffers and gives the same result."""
    x = f32(8, 10, rng=rng)
    lab = _labels(rng, 8, 10)
    p1, l1 = run("SoftmaxWithLoss", {"X": x, "L": lab}, ["P", "loss"])
    p2, l2 = run("SoftmaxWithLoss", {"X": x, "L": lab}, ["P", "loss"])
    np.testing.assert_array_equal(p1, p2)
    assert l1 == l2


# ---------------------------------------------------------------- SpatialSoftmaxWithLoss
def spatial_ref(x, labels, weights=None, scale=1.0):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    w = np.ones(labels.shape) if weights is None else weights.astype(np.float64)
    w = np.where(labels == -1, 0.0, w)
    safe = np.where(labels == -1, 0, labels)
    logp = np.log(np.take_along_axis(p, safe[:, None], axis=1)[:, 0])
    tw = w.sum()
    return p, (scale * -(w * logp).sum() / tw if tw != 0 else 0.0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_spatial_softmax_with_loss(weighted, scale):
    rng = np.random.RandomState(3)
    x = rng.randn(2, 4, 3, 5).astype(np.float32)
    labels = rng.randint(-1, 4, size=(2, 3, 5)).astype(np.int32)
    feeds = {"x": x, "t": labels}
    weights = None
    if weighted:
        weights = rng.rand(2, 3, 5).astype(np.float32)
        feeds["w"] = weights
    p, loss = run("SpatialSoftmaxWithLoss", feeds, ["p", "loss"], scale=scale)
    p_ref, loss_ref = spatial_ref(x, labels, weights, scale)
    assert p.shape == x.shape and loss.shape == ()
    np.testing.assert_allclose(p, p_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, loss_ref, rtol=1e-5)
    # the gradient op against the closed form
    op = make_op("SpatialSoftmaxWithLoss", list(feeds), ["p", "loss"], scale=scale)
    grad_ops, g_in = core.GradientRegistry.GetGradientForOp(op, [None, "loss_grad"])
    assert [(g.type, list(g.input)) for g in grad_ops] == [
        ("SpatialSoftmaxWithLossGradient",
         list(feeds)[:2] + (["w"] if weighted else []) + ["p", "loss_grad"])]
    assert g_in == ["x_grad"] + [None] * (len(feeds) - 1)
    workspace.FeedBlob("loss_grad", np.float32(2.0))
    workspace.RunOperatorOnce(grad_ops[0])
    w = np.ones(labels.shape) if weights is None else weights.astype(np.float64)
    w = np.where(labels == -1, 0.0, w)
    onehot = (np.arange(4)[None, :, None, None] == labels[:, None]).astype(np.float64)
    ref = 2.0 * scale * w[:, None] * (p_ref - onehot) / w.sum()
    np.testing.assert_allclose(workspace.FetchBlob("x_grad"), ref, rtol=1e-4, atol=1e-6)
    assert core.GradientRegistry.GetGradientForOp(op, ["p_grad", None])[0] == []


def test_spatial_softmax_with_loss_finite_differences():
    rng = np.random.RandomState(4)
    x = rng.randn(2, 3, 2, 3).astype(np.float32)
    labels = np.array([[[0, -1, 2], [1, 1, -1]], [[2, 0, 0], [-1, 1, 2]]], np.int32)
    weights = rng.rand(2, 2, 3).astype(np.float32) + 0.5
    checker = GradientChecker(1e-2, 1e-2)
    for inputs in ([x, labels], [x, labels, weights]):
        names = ["x", "t", "w"][:len(inputs)]
        o = make_op("SpatialSoftmaxWithLoss", names, ["p", "loss"])
        ok, grad, est = checker.CheckSimple(o, inputs, 0, [1])
        assert ok, (grad, est)
        assert np.all(grad * (labels == -1)[:, None] == 0) and np.any(grad != 0)  # ignored pixels get 0


def test_spatial_softmax_with_loss_all_ignored_and_empty():
    x = np.random.RandomState(5).randn(2, 3, 2, 2).astype(np.float32)
    t = -np.ones((2, 2, 2), np.int32)
    _, loss = run("SpatialSoftmaxWithLoss", {"x": x, "t": t}, ["p", "loss"])
    assert loss == 0.0
    _, loss = run("SpatialSoftmaxWithLoss", {"x": np.zeros((0, 3, 2, 2), np.float32),
                                             "t": np.zeros((0, 2, 2), np.int32)}, ["p", "loss"])
    assert loss == 0.0


def test_spatial_softmax_with_loss_bad_input():
    x = np.zeros((2, 3, 2, 2), np.float32)
    feeds = dict(x=x, x3=np.zeros((2, 3, 2), np.float32), t=np.zeros((2, 2, 2), np.int32),
                 tb=np.array([[[0, 3], [0, 0]], [[0, 0], [-2, 0]]], np.int32),
                 ts=np.zeros((2, 2, 3), np.int32),
                 tf=np.zeros((2, 2, 2), np.float32), w=np.ones((2, 2), np.float32))
    for k, v in feeds.items():
        workspace.FeedBlob(k, v)

    def fails(exc, pattern, inputs, **args):
        with pytest.raises(exc, match=pattern):
            workspace.RunOperatorOnce(make_op("SpatialSoftmaxWithLoss", inputs, ["p", "loss"], **args))

    fails(IndexError, r"^op SpatialSoftmaxWithLoss #0: input 1 blob 'tb': label 3 at pixel 1 \(flat\) is "
                      r"out of range \[0, 3\) \(the number of classes; -1 is ignored\)$", ["x", "tb"])
    fails(ValueError, r"^op SpatialSoftmaxWithLoss #0: input 0 blob 'x3' \(logits\) must be 4-D "
                      r"\(N, D, H, W\), got \(2, 3, 2\) float32$", ["x3", "t"])
    fails(ValueError, r"^op SpatialSoftmaxWithLoss #0: input 1 blob 'ts' \(labels\) must have shape "
                      r"\(N, H, W\) = \(2, 2, 2\), one per pixel of input 0 blob 'x' \(2, 3, 2, 2\) float32, "
                      r"got \(2, 2, 3\) int32$",
          ["x", "ts"])
    fails(ValueError, r"input 2 blob 'w' \(weights\) must have shape \(N, H, W\)", ["x", "t", "w"])
    fails(TypeError, r"op SpatialSoftmaxWithLoss #0: input 1 blob 'tf'", ["x", "tf"])
    fails(ValueError, r"argument order must be NCHW", ["x", "t"], order="NHWC")
    fails(ValueError, r"argument scale must be finite", ["x", "t"], scale=float("inf"))
    # checked at net creation when the inputs hold tensors
    net = core.Net("sswl_early")
    net.SpatialSoftmaxWithLoss(["x", "ts"], ["p", "loss"])
    with pytest.raises(ValueError, match=r"op SpatialSoftmaxWithLoss #0: input 1 blob 'ts' \(labels\)"):
        workspace.CreateNet(net)


def test_spatial_softmax_with_loss_large_logits():
    # each pixel's max is subtracted before exp: logits of +-200 give exact probabilities, no inf / NaN
    x = np.zeros((1, 3, 2, 2), np.float32)
    x[0, 2] = 200.0
    x[0, 0, 1, 1] = -200.0
    x[0, 1, 0, 0] = 250.0
    t = np.array([[[1, 2], [0, 2]]], np.int32)
    p, loss = run("SpatialSoftmaxWithLoss", {"x": x, "t": t}, ["p", "loss"])
    p_ref, loss_ref = spatial_ref(x, t)
    assert np.all(np.isfinite(p)) and np.isfinite(loss)
    np.testing.assert_allclose(p, p_ref, atol=1e-6)
    np.testing.assert_allclose(loss, loss_ref, rtol=1e-5)
