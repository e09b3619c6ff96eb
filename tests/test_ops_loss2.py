"""The ops of csrc/ops/loss2.c: CrossEntropy, SigmoidCrossEntropyWithLogits (log_D_trick,
unjoined_lr_loss), WeightedSigmoidCrossEntropyWithLogits, MakeTwoClass, L1Distance, DotProduct,
CosineSimilarity, Normalize, NormalizeL1 and their gradient ops.

Forward and gradient ops are checked against float64 NumPy references (including the edge cases:
clamps, zero vectors, empty tensors); the gradient makers (recurrent/_grad_loss2.py) by finite
differences away from the non-differentiable points; bad input by exception type and message; and a
small model trained with SigmoidCrossEntropyWithLogits + AveragedLoss and build_sgd against NumPy.
"""

import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, workspace
from recurrent.gradient_checker import GradientChecker
from recurrent.proto import OperatorDef, make_argument


def make_op(op_type, inputs, outputs, **args):
    op = OperatorDef(op_type, inputs, outputs)
    for k, v in args.items():
        op.arg.append(make_argument(k, v))
    return op


def run(op_type, feeds, outputs, **args):
    """Feeds ``feeds`` (name -> array, the op's inputs in order), runs the op once, returns the outputs."""
    for name, value in feeds.items():
        workspace.FeedBlob(name, np.asarray(value))
    workspace.RunOperatorOnce(make_op(op_type, list(feeds), outputs, **args))
    res = [workspace.FetchBlob(o) for o in outputs]
    for r in res:
        assert r.dtype == np.float32
    return res


def f32(*shape, rng, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), b, rtol=rtol, atol=atol)
    assert np.shape(a) == np.shape(b)


def check_grad(op, inputs, index, stepsize=1e-3, threshold=1e-2):
    ok, grad, estimate = GradientChecker(stepsize, threshold).CheckSimple(op, inputs, index, [0])
    assert ok, (grad, estimate)


# ---------------------------------------------------------------- NumPy references (float64)
def rows2(x):
    """x as N x D: N = dims[0] (1 for 0-d), as the distance ops split it."""
    x = np.asarray(x, np.float64)
    n = x.shape[0] if x.ndim else 1
    return x.reshape(n, x.size // n if n else 0)


def xent_nd(x):
    return (x.shape[0], int(np.prod(x.shape[1:]))) if x.ndim > 1 else (1, x.shape[0])


def ref_cross_entropy(x, lab):
    n, d = xent_nd(x)
    x2 = np.maximum(x.reshape(n, d).astype(np.float64), np.float32(1e-20))
    return -(lab.reshape(n, d) * np.log(x2)).sum(axis=1)


def ref_cross_entropy_grad(x, lab, dy):
    n, d = xent_nd(x)
    x2 = x.reshape(n, d).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(x2 < np.float32(1e-20), 0.0, -dy.reshape(n, 1) * lab.reshape(n, d) / x2)
    return g.reshape(x.shape)


def softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def sigmoid(x):
    return 0.5 * (1 + np.tanh(0.5 * x))


def sx_f(x, t, mode):
    x, t = x.astype(np.float64), t.astype(np.float64)
    if mode == "log_D_trick":
        return (2 * t - 1) * (x - softplus(x))
    if mode == "unjoined_lr_loss":
        return x * t - (1 - t) * softplus(x)
    return x * t - softplus(x)


def sx_df(x, t, mode):
    x, t = x.astype(np.float64), t.astype(np.float64)
    if mode == "log_D_trick":
        return (2 * t - 1) * sigmoid(-x)
    if mode == "unjoined_lr_loss":
        return t - (1 - t) * sigmoid(x)
    return t - sigmoid(x)


def ref_sx(x, t, mode=None, w=None):
    f = sx_f(x, t, mode) * (1.0 if w is None else w)
    d = x.shape[-1] if x.ndim else 1
    if d == 0:
        return np.zeros(x.shape[:-1])  # the mean over 0 elements is 0 here (Caffe2 divided by 0)
    return -f.sum(axis=-1) / d if x.ndim else -f / d


def ref_sx_grad(g, x, t, mode=None, w=None):
    d = x.shape[-1] if x.ndim else 1
    if d == 0:
        return np.zeros(x.shape)
    gd = np.asarray(g, np.float64).reshape(x.shape[:-1] + (1,) if x.ndim else ())
    return -gd / d * sx_df(x, t, mode) * (1.0 if w is None else w)


def ref_cos(x, y):
    x2, y2 = rows2(x), rows2(y)
    xx, yy, xy = (x2 * x2).sum(1), (y2 * y2).sum(1), (x2 * y2).sum(1)
    return xy / np.sqrt(np.maximum(xx, 1e-12) * np.maximum(yy, 1e-12))


def ref_cos_grad(x, y, g):
    """The exact derivative of the clamped forward (the norm term drops where the clamp is active)."""
    x2, y2 = rows2(x), rows2(y)
    g = g.astype(np.float64)[:, None]
    xx, yy, xy = [v[:, None] for v in ((x2 * x2).sum(1), (y2 * y2).sum(1), (x2 * y2).sum(1))]
    nx2, ny2 = np.maximum(xx, 1e-12), np.maximum(yy, 1e-12)
    inv = 1 / np.sqrt(nx2 * ny2)
    c = xy * inv
    dx = g * (y2 * inv - np.where(xx >= 1e-12, c / nx2, 0) * x2)
    dy = g * (x2 * inv - np.where(yy >= 1e-12, c / ny2, 0) * y2)
    return dx.reshape(x.shape), dy.reshape(x.shape)


def ref_normalize(x, axis=-1, l1=False):
    x = x.astype(np.float64)
    if l1:
        n = np.abs(x).sum(axis=axis, keepdims=True)
        return x / np.where(n == 0, 1.0, n)
    return x / np.maximum(np.sqrt((x * x).sum(axis=axis, keepdims=True)), 1e-12)


def ref_normalize_grad(x, g, axis=-1):
    x, g = x.astype(np.float64), g.astype(np.float64)
    n = np.sqrt((x * x).sum(axis=axis, keepdims=True))
    xg = (x * g).sum(axis=axis, keepdims=True)
    clamped = n < 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        full = g / n - x * xg / n ** 3
    return np.where(clamped, g / 1e-12, full)


# ---------------------------------------------------------------- CrossEntropy
@pytest.mark.parametrize("xshape,lshape", [((4, 5), (4, 5)), ((3, 2, 2), (3, 4)), ((3, 2, 2), (3, 2, 2)),
                                           ((6,), (6,)), ((6,), (1, 6)), ((4, 1), (4,)), ((0, 3), (0, 3))])
def test_cross_entropy(rng, xshape, lshape):
    x = f32(*xshape, rng=rng, lo=0.01, hi=1.0)
    lab = f32(*lshape, rng=rng, lo=0.0, hi=1.0)
    dy = f32(xent_nd(x)[0], rng=rng)
    (y,) = run("CrossEntropy", {"x": x, "l": lab}, ["y"])
    close(y, ref_cross_entropy(x, lab))
    (dx,) = run("CrossEntropyGradient", {"x": x, "l": lab, "dy": dy}, ["dx"])
    close(dx, ref_cross_entropy_grad(x, lab, dy))


def test_cross_entropy_caffe2_doc_example_and_clamp():
    x = np.array([[.01, .05, .02, .02, .9], [.03, .1, .42, .05, .4]], np.float32)
    lab = np.array([[0, 0, 0, 0, 1], [0, 0, 1, 0, 0]], np.float32)
    (y,) = run("CrossEntropy", {"x": x, "l": lab}, ["y"])
    close(y, [0.10536055, 0.8675006])
    # X below 1e-20 (and 0, negative) is clamped in the forward; its gradient is 0 there
    x = np.array([[0.0, 1e-30, -2.0, 0.5]], np.float32)
    lab = np.array([[0.25, 0.25, 0.25, 0.25]], np.float32)
    (y,) = run("CrossEntropy", {"x": x, "l": lab}, ["y"])
    close(y, [-(0.75 * np.log(np.float64(np.float32(1e-20))) + 0.25 * np.log(0.5))])
    (dx,) = run("CrossEntropyGradient", {"x": x, "l": lab, "dy": np.array([2.0], np.float32)}, ["dx"])
    close(dx, [[0, 0, 0, -2 * 0.25 / 0.5]])
    # NaN propagates (Caffe2's clamp turned it into 1e-20)
    (y,) = run("CrossEntropy", {"x": np.array([[np.nan, 0.5]], np.float32),
                                "l": np.array([[0.5, 0.5]], np.float32)}, ["y"])
    assert np.isnan(y[0])


@pytest.mark.parametrize("op", ["CrossEntropy", "CrossEntropyGradient"])
@pytest.mark.parametrize("bad", [1.5, -0.25, np.nan])
def test_cross_entropy_label_outside_0_1(op, bad):
    lab = np.array([[0.5, 0.5], [0.0, bad]], np.float32)
    feeds = {"x": np.full((2, 2), 0.5, np.float32), "l": lab}
    if op == "CrossEntropyGradient":
        feeds["dy"] = np.ones(2, np.float32)
    with pytest.raises(ValueError, match=(
            r"op %s #0: input 1 blob 'l' \(2, 2\) float32: label %s at row 1, "
            r"column 1 is not a probability in \[0, 1\]" % (op, "nan" if bad != bad else "%g" % bad))):
        run(op, feeds, ["o"])


def test_cross_entropy_bad_shapes():
    with pytest.raises(ValueError, match=(
            r"op CrossEntropy #0: input 1 blob 'l' \(4,\) float32 must hold N x D = "
            r"4 x 3 label probabilities for input 0 blob 'x' \(4, 3\) float32: shape \(4, 3\) or the "
            r"shape of input 0")):
        run("CrossEntropy", {"x": np.ones((4, 3), np.float32), "l": np.ones(4, np.float32)}, ["y"])
    with pytest.raises(TypeError, match=(
            r"op CrossEntropy #0: input 1 blob 'l' must be float32, got \(4, 3\) int32")):
        run("CrossEntropy", {"x": np.ones((4, 3), np.float32), "l": np.ones((4, 3), np.int32)}, ["y"])
    with pytest.raises(ValueError, match=(
            r"op CrossEntropyGradient #0: input 2 blob 'dy' \(3,\) float32 \(the loss "
            r"gradient\) must have shape \(4,\) to match input 0 blob 'x' \(4, 3\) float32")):
        run("CrossEntropyGradient", {"x": np.ones((4, 3), np.float32), "l": np.ones((4, 3), np.float32),
                                     "dy": np.ones(3, np.float32)}, ["dx"])
    with pytest.raises(ValueError, match=(
            r"op CrossEntropy #0: input 0 blob 'x' must have 1 to \d+ dims, got \(\) "
            r"float32")):
        run("CrossEntropy", {"x": np.float32(0.5), "l": np.float32(0.5)}, ["y"])


# ---------------------------------------------------------------- SigmoidCrossEntropyWithLogits
MODES = [None, "log_D_trick", "unjoined_lr_loss"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4), (7,), (), (3, 0), (0, 4)])
def test_sigmoid_xent(rng, mode, shape):
    x = f32(*shape, rng=rng, lo=-4, hi=4)
    t = (rng.uniform(size=shape) > 0.5).astype(np.float32)
    if shape == (4, 5):
        t[0] = [0.1, 0.3, 0.5, 0.7, 0.9]  # soft targets too
    args = {mode: 1} if mode else {}
    (y,) = run("SigmoidCrossEntropyWithLogits", {"x": x, "t": t}, ["y"], **args)
    close(y, ref_sx(x, t, mode))
    g = f32(*shape[:-1], rng=rng) if shape else np.float32(rng.uniform(-1, 1))
    (dx,) = run("SigmoidCrossEntropyWithLogitsGradient", {"g": g, "x": x, "t": t}, ["dx"], **args)
    close(dx, ref_sx_grad(g, x, t, mode))


@pytest.mark.parametrize("mode", MODES)
def test_sigmoid_xent_stable_for_large_logits(mode):
    x = np.array([[-200.0, -30.0, 0.0, 30.0, 200.0]], np.float32)
    t = np.array([[0.0, 1.0, 0.5, 0.0, 1.0]], np.float32)
    args = {mode: 1} if mode else {}
    (y,) = run("SigmoidCrossEntropyWithLogits", {"x": x, "t": t}, ["y"], **args)
    assert np.isfinite(y).all()
    close(y, ref_sx(x, t, mode))
    (dx,) = run("SigmoidCrossEntropyWithLogitsGradient", {"g": np.ones(1, np.float32), "x": x, "t": t},
                ["dx"], **args)
    assert np.isfinite(dx).all()
    close(dx, ref_sx_grad(np.ones(1), x, t, mode))


def test_sigmoid_xent_matches_the_plain_formula():
    """The stable formula equals -(t log p + (1 - t) log(1 - p)) with p = sigmoid(x)."""
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 2.0]], np.float32)
    t = np.array([[0.0, 1.0, 0.3, 1.0, 0.0]], np.float32)
    (y,) = run("SigmoidCrossEntropyWithLogits", {"x": x, "t": t}, ["y"])
    p = 1 / (1 + np.exp(-x.astype(np.float64)))
    close(y, [-(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()])


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 2), (5,), ()])
def test_weighted_sigmoid_xent(rng, shape):
    x = f32(*shape, rng=rng, lo=-3, hi=3)
    t = (rng.uniform(size=shape) > 0.5).astype(np.float32)
    w = f32(*shape, rng=rng, lo=0, hi=2)
    (y,) = run("WeightedSigmoidCrossEntropyWithLogits", {"x": x, "t": t, "w": w}, ["y"])
    close(y, ref_sx(x, t, None, w))
    g = f32(*shape[:-1], rng=rng) if shape else np.float32(0.7)
    (dx,) = run("WeightedSigmoidCrossEntropyWithLogitsGradient", {"g": g, "x": x, "t": t, "w": w}, ["dx"])
    close(dx, ref_sx_grad(g, x, t, None, w))


@pytest.mark.parametrize("op", ["SigmoidCrossEntropyWithLogits", "SigmoidCrossEntropyWithLogitsGradient"])
def test_sigmoid_xent_bad_arguments(op):
    ins = ["g", "x", "t"] if op.endswith("Gradient") else ["x", "t"]
    for b in ins:
        workspace.FeedBlob(b, np.ones(2, np.float32))
    with pytest.raises(ValueError, match=(
            r"op %s #0: arguments log_D_trick=1 and unjoined_lr_loss=1 cannot be "
            r"used together" % op)):
        workspace.RunOperatorOnce(make_op(op, ins, ["o"], log_D_trick=1, unjoined_lr_loss=1))
    with pytest.raises(ValueError, match=r"op %s #0: argument log_D_trick must be 0 or 1, got 2" % op):
        workspace.RunOperatorOnce(make_op(op, ins, ["o"], log_D_trick=2))


def test_sigmoid_xent_bad_shapes():
    with pytest.raises(ValueError, match=(
            r"op SigmoidCrossEntropyWithLogits #0: input 1 blob 't' \(4, 2\) float32 "
            r"must have the shape of input 0 blob 'x' \(4, 3\) float32")):
        run("SigmoidCrossEntropyWithLogits",
            {"x": np.ones((4, 3), np.float32), "t": np.ones((4, 2), np.float32)}, ["y"])
    with pytest.raises(ValueError, match=(
            r"op WeightedSigmoidCrossEntropyWithLogits #0: input 2 blob 'w' \(4,\) "
            r"float32 must have the shape of input 0 blob 'x' \(4, 3\) float32")):
        run("WeightedSigmoidCrossEntropyWithLogits", {"x": np.ones((4, 3), np.float32),
                                                      "t": np.ones((4, 3), np.float32),
                                                      "w": np.ones(4, np.float32)}, ["y"])
    with pytest.raises(ValueError, match=(
            r"op SigmoidCrossEntropyWithLogitsGradient #0: input 0 blob 'g' \(3,\) "
            r"float32 \(the loss gradient\) must hold 4 values, one per row of input 1 blob 'x' "
            r"\(4, 3\) float32")):
        run("SigmoidCrossEntropyWithLogitsGradient",
            {"g": np.ones(3, np.float32), "x": np.ones((4, 3), np.float32), "t": np.ones((4, 3), np.float32)},
            ["dx"])
    with pytest.raises(TypeError, match=(
            r"op SigmoidCrossEntropyWithLogits #0: input 1 blob 't' must be float32")):
        run("SigmoidCrossEntropyWithLogits",
            {"x": np.ones((4, 3), np.float32), "t": np.ones((4, 3), np.int32)}, ["y"])


# ---------------------------------------------------------------- MakeTwoClass
@pytest.mark.parametrize("shape", [(5,), (2, 3), (), (0,)])
def test_make_two_class(rng, shape):
    x = f32(*shape, rng=rng, lo=0, hi=1)
    (y,) = run("MakeTwoClass", {"x": x}, ["y"])
    close(y, np.stack([1 - x.astype(np.float64), x], axis=-1))
    dy = f32(*(shape + (2,)), rng=rng)
    (dx,) = run("MakeTwoClassGradient", {"dy": dy}, ["dx"])
    close(dx, dy[..., 1].astype(np.float64) - dy[..., 0])


def test_make_two_class_bad_input():
    with pytest.raises(ValueError, match=r"op MakeTwoClass #0: input 0 blob 'x' \(3,\) float32: value 1.5 at "
                       r"element 2 is not a probability in \[0, 1\]"):
        run("MakeTwoClass", {"x": np.array([0, 1, 1.5], np.float32)}, ["y"])
    with pytest.raises(ValueError, match=(
            r"value nan at element 0")):
        run("MakeTwoClass", {"x": np.array([np.nan], np.float32)}, ["y"])
    with pytest.raises(ValueError, match=(
            r"op MakeTwoClassGradient #0: input 0 blob 'dy' \(2, 3\) float32 \(the "
            r"gradient of MakeTwoClass's output\) must have a last dim of size 2")):
        run("MakeTwoClassGradient", {"dy": np.ones((2, 3), np.float32)}, ["dx"])
    with pytest.raises(ValueError, match=(
            r"op MakeTwoClass #0: input 0 blob 'x' \(1, 1, 1, 1, 1, 1, 1, 1\) float32 "
            r"has 8 dims: the output would have more than 8")):
        run("MakeTwoClass", {"x": np.ones((1,) * 8, np.float32)}, ["y"])


# ---------------------------------------------------------------- L1Distance, DotProduct, CosineSimilarity
PAIR_SHAPES = [(4, 5), (3, 2, 2), (6,), (), (0, 3), (3, 0)]


@pytest.mark.parametrize("shape", PAIR_SHAPES)
def test_l1_distance(rng, shape):
    x, y = f32(*shape, rng=rng), f32(*shape, rng=rng)
    if x.size:
        y.flat[0] = x.flat[0]  # |x - y| = 0: gradient 0
    (d,) = run("L1Distance", {"x": x, "y": y}, ["d"])
    close(d, np.abs(rows2(x) - rows2(y)).sum(1))
    g = f32(len(d), rng=rng)
    dx, dy = run("L1DistanceGradient", {"x": x, "y": y, "g": g}, ["dx", "dy"])
    ref = (g[:, None] * np.sign(rows2(x) - rows2(y))).reshape(shape)
    close(dx, ref)
    close(dy, -ref)


def test_l1_distance_caffe2_doc_example_and_gradient_dead_zone():
    (d,) = run("L1Distance", {"x": np.full((1, 4), 5, np.float32), "y": np.ones((1, 4), np.float32)}, ["d"])
    close(d, [16.0])
    x = np.array([[1e-13, 2e-12, 0.0]], np.float32)
    dx, dy = run("L1DistanceGradient", {"x": x, "y": np.zeros_like(x), "g": np.array([3.0], np.float32)},
                 ["dx", "dy"])
    close(dx, [[0.0, 3.0, 0.0]])  # |x - y| <= 1e-12 gives 0, as Caffe2
    close(dy, [[0.0, -3.0, 0.0]])


@pytest.mark.parametrize("shape", PAIR_SHAPES)
def test_dot_product(rng, shape):
    x, y = f32(*shape, rng=rng), f32(*shape, rng=rng)
    (d,) = run("DotProduct", {"x": x, "y": y}, ["d"])
    close(d, (rows2(x) * rows2(y)).sum(1))
    assert d.shape == ((shape[0] if shape else 1),)  # (3, 0) gives 3 zeros (Caffe2: an empty output)
    g = f32(len(d), rng=rng)
    dx, dy = run("DotProductGradient", {"x": x, "y": y, "g": g}, ["dx", "dy"])
    close(dx, (g[:, None] * rows2(y)).reshape(shape))
    close(dy, (g[:, None] * rows2(x)).reshape(shape))


@pytest.mark.parametrize("shape", PAIR_SHAPES)
def test_cosine_similarity(rng, shape):
    x, y = f32(*shape, rng=rng), f32(*shape, rng=rng)
    (c,) = run("CosineSimilarity", {"x": x, "y": y}, ["c"])
    close(c, ref_cos(x, y))
    g = f32(len(c), rng=rng)
    dx, dy = run("CosineSimilarityGradient", {"x": x, "y": y, "g": g}, ["dx", "dy"])
    rx, ry = ref_cos_grad(x, y, g)
    close(dx, rx, atol=1e-5)
    close(dy, ry, atol=1e-5)


def test_cosine_similarity_zero_and_tiny_vectors():
    """kEps = 1e-12 clamps the squared norms, as Caffe2: a zero row gives 0, not NaN; below the clamp the
    gradient is the exact derivative of the clamped forward (the norm is a constant there)."""
    x = np.array([[0, 0, 0], [1e-7, 0, 0], [1, 2, 3], [3, 0, 4]], np.float32)
    y = np.array([[1, 2, 3], [1, 0, 0], [0, 0, 0], [6, 0, 8]], np.float32)
    (c,) = run("CosineSimilarity", {"x": x, "y": y}, ["c"])
    close(c, [0.0, 1e-7 / 1e-6, 0.0, 1.0], rtol=1e-5)
    g = np.array([1.0, 2.0, 1.0, 1.0], np.float32)
    dx, dy = run("CosineSimilarityGradient", {"x": x, "y": y, "g": g}, ["dx", "dy"])
    rx, ry = ref_cos_grad(x, y, g)
    close(dx, rx, rtol=1e-4)
    close(dy, ry, rtol=1e-4)
    close(dx[1], [2.0 / 1e-6, 0, 0], rtol=1e-5)  # Caffe2 subtracted its norm term: 0 here


@pytest.mark.parametrize("op", ["L1Distance", "DotProduct", "CosineSimilarity"])
def test_pair_bad_input(op):
    with pytest.raises(ValueError, match=(
            r"op %s #0: input 1 blob 'y' \(4, 2\) float32 must have the shape of "
            r"input 0 blob 'x' \(4, 3\) float32" % op)):
        run(op, {"x": np.ones((4, 3), np.float32), "y": np.ones((4, 2), np.float32)}, ["d"])
    with pytest.raises(ValueError, match=r"op %sGradient #0: input 2 blob 'g' \(4, 1\) float32 \(the output "
                       r"gradient\) must have shape \(4,\) to match input 0 blob 'x' \(4, 3\) float32" % op):
        run(op + "Gradient", {"x": np.ones((4, 3), np.float32), "y": np.ones((4, 3), np.float32),
                              "g": np.ones((4, 1), np.float32)}, ["dx", "dy"])
    with pytest.raises(TypeError, match=(
            r"op %s #0: input 0 blob 'x' must be float32, got \(4, 3\) int32" % op)):
        run(op, {"x": np.ones((4, 3), np.int32), "y": np.ones((4, 3), np.float32)}, ["d"])


# ---------------------------------------------------------------- Normalize, NormalizeL1
@pytest.mark.parametrize("shape,axis", [((4, 5), -1), ((4, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -3), ((6,), 0),
                                        ((3, 0), 1), ((0, 3), -1), ((3, 0, 2), 1)])
def test_normalize(rng, shape, axis):
    x = f32(*shape, rng=rng)
    (y,) = run("Normalize", {"x": x}, ["y"], axis=axis)
    close(y, ref_normalize(x, axis))
    g = f32(*shape, rng=rng)
    (dx,) = run("NormalizeGradient", {"x": x, "g": g}, ["dx"], axis=axis)
    close(dx, ref_normalize_grad(x, g, axis), atol=1e-5)
    (y1,) = run("NormalizeL1", {"x": x}, ["y1"], axis=axis)
    close(y1, ref_normalize(x, axis, l1=True))


def test_normalize_default_axis_is_last(rng):
    x = f32(3, 4, rng=rng)
    (y,) = run("Normalize", {"x": x}, ["y"])
    close(np.linalg.norm(y.astype(np.float64), axis=1), np.ones(3))
    (y1,) = run("NormalizeL1", {"x": x}, ["y1"])
    close(np.abs(y1.astype(np.float64)).sum(axis=1), np.ones(3))


def test_normalize_zero_and_tiny_vectors():
    x = np.array([[0, 0, 0], [1e-14, 0, 0], [3, 0, -4]], np.float32)
    (y,) = run("Normalize", {"x": x}, ["y"])
    close(y, [[0, 0, 0], [np.float32(1e-14) / 1e-12, 0, 0], [0.6, 0, -0.8]], rtol=1e-5)
    g = np.array([[1, 2, 3], [1, 1, 1], [1, 1, 1]], np.float32)
    (dx,) = run("NormalizeGradient", {"x": x, "g": g}, ["dx"])
    close(dx[:2], g[:2] / 1e-12, rtol=1e-6)  # the clamped forward is X / 1e-12: its derivative
    close(dx, ref_normalize_grad(x, g), rtol=1e-5)
    (y1,) = run("NormalizeL1", {"x": x}, ["y1"])
    close(y1, [[0, 0, 0], [1, 0, 0], [3 / 7, 0, -4 / 7]])  # a zero row stays 0 (Caffe2 left it unwritten)


def test_normalize_bad_input():
    with pytest.raises(ValueError, match=(
            r"op Normalize #0: argument axis=2 is out of range for input 0 blob 'x' "
            r"\(4, 3\) float32 \(must be in \[-2, 2\)\)")):
        run("Normalize", {"x": np.ones((4, 3), np.float32)}, ["y"], axis=2)
    with pytest.raises(ValueError, match=(
            r"op NormalizeL1 #0: argument axis=-1 is out of range for input 0 blob "
            r"'x' \(\) float32")):
        run("NormalizeL1", {"x": np.float32(1)}, ["y"])
    with pytest.raises(ValueError, match=(
            r"op NormalizeGradient #0: input 1 blob 'g' \(3, 4\) float32 must have "
            r"the shape of input 0 blob 'x' \(4, 3\) float32")):
        run("NormalizeGradient", {"x": np.ones((4, 3), np.float32), "g": np.ones((3, 4), np.float32)}, ["dx"])


# ---------------------------------------------------------------- finite-difference gradient checks
@pytest.mark.parametrize("shape", [(3, 4), (5,)])
def test_cross_entropy_fd_gradient(rng, shape):
    x = f32(*shape, rng=rng, lo=0.2, hi=1.0)
    lab = f32(*shape, rng=rng, lo=0.0, hi=1.0)
    check_grad(make_op("CrossEntropy", ["x", "l"], ["y"]), [x, lab], 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3, 4), (2, 2, 3), (4,)])
def test_sigmoid_xent_fd_gradient(rng, mode, shape):
    x = f32(*shape, rng=rng, lo=-3, hi=3)
    t = rng.uniform(size=shape).astype(np.float32)
    args = {mode: 1} if mode else {}
    check_grad(make_op("SigmoidCrossEntropyWithLogits", ["x", "t"], ["y"], **args), [x, t], 0)


def test_weighted_sigmoid_xent_fd_gradient(rng):
    x, t, w = f32(3, 4, rng=rng, lo=-3, hi=3), rng.uniform(size=(3, 4)).astype(np.float32), f32(3, 4, rng=rng)
    check_grad(make_op("WeightedSigmoidCrossEntropyWithLogits", ["x", "t", "w"], ["y"]), [x, t, w], 0)


def test_make_two_class_fd_gradient(rng):
    check_grad(make_op("MakeTwoClass", ["x"], ["y"]), [f32(3, 2, rng=rng, lo=0.1, hi=0.9)], 0)


@pytest.mark.parametrize("op", ["L1Distance", "DotProduct", "CosineSimilarity"])
@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("shape", [(3, 4), (2, 2, 3), (5,)])
def test_pair_fd_gradient(rng, op, index, shape):
    x = f32(*shape, rng=rng)
    # L1: keep |x - y| >= 0.1, away from the kink
    y = (x + np.where(rng.uniform(size=shape) > 0.5, 1, -1) * rng.uniform(0.1, 1, shape)).astype(np.float32)
    check_grad(make_op(op, ["x", "y"], ["d"]), [x, y], index)


@pytest.mark.parametrize("op", ["Normalize"])
@pytest.mark.parametrize("shape,axis", [((3, 4), -1), ((3, 4), 0), ((2, 3, 2), 1)])
def test_normalize_fd_gradient(rng, op, shape, axis):
    check_grad(make_op(op, ["x"], ["y"], axis=axis), [f32(*shape, rng=rng)], 0)


def test_gradient_makers():
    """Which inputs get gradients, what the gradient ops read, and that arguments are copied."""
    get = core.GradientRegistry.GetGradientForOp
    ops, g = get(make_op("CrossEntropy", ["X", "L"], ["Y"]), ["dY"])
    assert (ops[0].type, ops[0].input) == ("CrossEntropyGradient", ["X", "L", "dY"])
    assert ops[0].output == ["X_grad"]
    assert g == ["X_grad", None]
    ops, g = get(make_op("SigmoidCrossEntropyWithLogits", ["X", "T"], ["Y"], log_D_trick=1), ["dY"])
    assert ops[0].input == ["dY", "X", "T"] and g == ["X_grad", None]
    assert [(a.name, a.i) for a in ops[0].arg] == [("log_D_trick", 1)]
    ops, g = get(make_op("WeightedSigmoidCrossEntropyWithLogits", ["X", "T", "W"], ["Y"]), ["dY"])
    assert ops[0].input == ["dY", "X", "T", "W"] and g == ["X_grad", None, None]
    ops, g = get(make_op("MakeTwoClass", ["X"], ["Y"]), ["dY"])
    assert ops[0].input == ["dY"] and g == ["X_grad"]
    for t in ("L1Distance", "DotProduct", "CosineSimilarity"):
        ops, g = get(make_op(t, ["X", "Y"], ["d"]), ["dd"])
        assert (ops[0].type, ops[0].input) == (t + "Gradient", ["X", "Y", "dd"])
        assert ops[0].output == ["X_grad", "Y_grad"]
        assert g == ["X_grad", "Y_grad"]
        assert get(make_op(t, ["X", "Y"], ["d"]), [None]) == ([], [None, None])
    ops, g = get(make_op("Normalize", ["X"], ["Y"], axis=0), ["dY"])
    assert ops[0].input == ["X", "dY"] and [(a.name, a.i) for a in ops[0].arg] == [("axis", 0)]
    assert get(make_op("NormalizeL1", ["X"], ["Y"]), ["dY"]) == ([], [None])


# ---------------------------------------------------------------- checked at net creation
@pytest.mark.parametrize("op,ins,feeds,msg", [
    ("CrossEntropy", ["x", "l"], dict(x=(4, 3), l=(4,)), r"input 1 blob 'l' \(4,\) float32 must hold N x D"),
    ("SigmoidCrossEntropyWithLogits", ["x", "l"], dict(x=(4, 3), l=(4, 2)), r"input 1 blob 'l'"),
    ("WeightedSigmoidCrossEntropyWithLogits", ["x", "l", "w"], dict(x=(4, 3), l=(4, 3), w=(3,)),
     r"input 2 blob 'w'"),
    ("MakeTwoClassGradient", ["x"], dict(x=(4, 3)),
     r"input 0 blob 'x' \(4, 3\) float32 \(the gradient.* last dim of size 2"),
    ("L1Distance", ["x", "l"], dict(x=(4, 3), l=(4, 2)), r"input 1 blob 'l'"),
    ("DotProduct", ["x", "l"], dict(x=(4, 3), l=(3, 4)), r"input 1 blob 'l'"),
    ("CosineSimilarity", ["x", "l"], dict(x=(4, 3), l=(4,)), r"input 1 blob 'l'"),
    ("Normalize", ["x"], dict(x=(4,)), r"argument axis=1 is out of range"),
    ("NormalizeL1", ["x"], dict(x=(4,)), r"argument axis=1 is out of range"),
])
def test_shapes_checked_at_net_creation(op, ins, feeds, msg):
    for k, shape in feeds.items():
        workspace.FeedBlob(k, np.full(shape, 0.5, np.float32))
    net = core.Net("chk")
    kw = {"axis": 1} if op.startswith("Normalize") else {}
    getattr(net, op)(ins, ["o"], **kw)
    with pytest.raises(ValueError, match=r"net 'chk[^']*': op %s #0: %s" % (op, msg)):
        workspace.CreateNet(net)


def test_label_values_checked_when_the_op_runs():
    workspace.FeedBlob("x", np.full((2, 2), 0.5, np.float32))
    workspace.FeedBlob("l", np.full((2, 2), 2.0, np.float32))
    net = core.Net("chk2")
    net.CrossEntropy(["x", "l"], "y")
    workspace.CreateNet(net)  # shapes fit: created
    with pytest.raises(ValueError, match=r"label 2 at row 0, column 0 is not a probability"):
        workspace.RunNet(net)
    workspace.FeedBlob("l", np.full((2, 2), 0.5, np.float32))
    workspace.RunNet(net)
    close(workspace.FetchBlob("y"), -np.log(0.5) * np.ones(2))


# ---------------------------------------------------------------- a small model trained with build_sgd
def test_train_sigmoid_xent_with_sgd_matches_numpy():
    """FC -> SigmoidCrossEntropyWithLogits -> AveragedLoss with build_sgd, 4 steps, against float64 NumPy."""
    n, d_in, k, lr = 6, 4, 3, 0.5
    rng = np.random.RandomState(7)
    x = rng.randn(n, d_in).astype(np.float32)
    t = (rng.uniform(size=(n, k)) > 0.5).astype(np.float32)
    m = model_helper.ModelHelper(name="sx_model")
    logits = brew.fc(m, "x", "logits", dim_in=d_in, dim_out=k)
    xent = m.net.SigmoidCrossEntropyWithLogits([logits, "t"], "xent")
    loss = m.net.AveragedLoss(xent, "loss")
    m.AddGradientOperators([loss])
    optimizer.build_sgd(m, base_learning_rate=lr)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("t", t)
    workspace.RunNetOnce(m.param_init_net)
    w = workspace.FetchBlob("logits_w").astype(np.float64)
    b = workspace.FetchBlob("logits_b").astype(np.float64)
    workspace.CreateNet(m.net)
    losses = []
    for _ in range(4):
        z = x.astype(np.float64) @ w.T + b
        ref_loss = ref_sx(z, t).mean()
        dz = ref_sx_grad(np.full(n, 1.0 / n), z, t)
        w, b = w - lr * dz.T @ x, b - lr * dz.sum(0)
        workspace.RunNet(m.net)
        losses.append(float(workspace.FetchBlob("loss")))
        close(losses[-1], ref_loss, rtol=1e-5)
        close(workspace.FetchBlob("logits_w"), w, rtol=1e-4, atol=1e-5)
        close(workspace.FetchBlob("logits_b"), b, rtol=1e-4, atol=1e-5)
    assert losses[-1] < losses[0]
