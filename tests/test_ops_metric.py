"""Perplexity and MultiClassAccuracy (csrc/ops/metric.c; no gradient, recurrent/_grad_loss.py):
NumPy references over several shapes and the edge cases (N = 0, a zero probability, D = 0, ties,
NaN and -inf scores), the values each refuses (the workspace usable after every error, nothing
written), in-net use beside a trained loss, AddGradientOperators through them (their inputs get no
gradient, as Accuracy's), and their static shapes."""

import functools

import numpy as np
import pytest

from recurrent import core, workspace

from op_helpers import I32_MAX, feed, run, usable  # noqa: F401


# ---------------------------------------------------------------- Perplexity
def perplexity_ref(p):
    """Caffe2's formula, prod(p_i ^ (-1/N)), in float64."""
    p = np.asarray(p, np.float64)
    if p.size == 0:
        return 1.0
    return functools.reduce(lambda a, b: a * b, np.power(p, -1.0 / p.size), 1.0)


@pytest.mark.parametrize("n", [1, 2, 10, 1000, 100000])
def test_perplexity_against_numpy(n):
    rng = np.random.RandomState(n)
    p = rng.uniform(0.01, 1.0, n).astype(np.float32)
    feed(p=p)
    run("Perplexity", ["p"], ["y"])
    y = workspace.FetchBlob("y")
    assert y.dtype == np.float32 and y.shape == ()
    np.testing.assert_allclose(y, perplexity_ref(p), rtol=2e-6)
    # and the stable form
    np.testing.assert_allclose(y, np.exp(-np.mean(np.log(p.astype(np.float64)))), rtol=1e-6)


def test_perplexity_values():
    for p, want in [([0.5], 2.0), ([0.25, 1.0], 2.0), ([1.0] * 7, 1.0), ([0.1] * 3, 10.0),
                    ([2.0, 2.0], 0.5)]:  # above 1: accepted, as Caffe2
        feed(p=np.asarray(p, np.float32))
        run("Perplexity", ["p"], ["y"])
        np.testing.assert_allclose(workspace.FetchBlob("y"), want, rtol=1e-6)


def test_perplexity_does_not_underflow():
    # prod(p) underflows float32 and float64 alike (1e-30^100000); the mean of the logs does not
    p = np.full(100000, 1e-30, np.float32)
    feed(p=p)
    run("Perplexity", ["p"], ["y"])
    np.testing.assert_allclose(workspace.FetchBlob("y"), 1.0 / p.astype(np.float64)[0], rtol=1e-5)


def test_perplexity_edge_values():
    # N = 0: the empty product, 1 (Caffe2's value)
    feed(p=np.zeros(0, np.float32))
    run("Perplexity", ["p"], ["y"])
    assert workspace.FetchBlob("y") == 1.0
    # a zero probability: +inf (Caffe2's value too)
    feed(p=np.array([0.5, 0.0, 0.25], np.float32))
    run("Perplexity", ["p"], ["y"])
    assert workspace.FetchBlob("y") == np.inf
    feed(p=np.array([-0.0], np.float32))
    run("Perplexity", ["p"], ["y"])
    assert workspace.FetchBlob("y") == np.inf
    # a perplexity above float32's range rounds to inf
    feed(p=np.array([1e-45], np.float32))
    run("Perplexity", ["p"], ["y"])
    assert workspace.FetchBlob("y") == np.inf


@pytest.mark.parametrize("bad,pos", [(-0.5, 1), (np.nan, 0), (np.inf, 2), (-np.inf, 1)])
def test_perplexity_refuses_what_is_no_probability(bad, pos):
    feed(y=np.float32(7))
    p = np.full(3, 0.5, np.float32)
    p[pos] = bad
    feed(p=p)
    with pytest.raises(ValueError, match=r"op Perplexity #0: input 0 blob 'p' \(3,\) float32 \(probabilities\) "
                                         r"holds %s at position %d; a probability must be finite and >= 0"
                       % (("-?nan" if np.isnan(bad) else "%g" % bad), pos)):
        run("Perplexity", ["p"], ["y"])
    assert workspace.FetchBlob("y") == 7  # nothing written
    usable()


@pytest.mark.parametrize("x,exc,match", [
    (np.full((2, 3), 0.5, np.float32), ValueError, r"input 0 blob 'p' \(probabilities\) must be 1-D, got \(2, 3\)"),
    (np.float32(0.5), ValueError, r"input 0 blob .p. \(probabilities\) must be 1-D, got \(\) float32"),
    (np.ones(3, np.int32), TypeError, r"input 0 blob 'p' must be float32, got \(3,\) int32"),
])
def test_perplexity_refuses_shapes_and_dtypes(x, exc, match):
    feed(p=x)
    with pytest.raises(exc, match=r"op Perplexity #0: " + match):
        run("Perplexity", ["p"], ["y"])
    usable()


# ---------------------------------------------------------------- MultiClassAccuracy
def mca_ref(x, labels):
    """Caffe2's loop in NumPy terms: the first position of the row's largest number (NaN skipped,
    0 for a row without a number above -inf)."""
    n, d = x.shape
    acc = np.zeros(d, np.float64)
    count = np.zeros(d, np.int64)
    for i in range(n):
        row = np.where(np.isnan(x[i]), -np.inf, x[i])
        pred = int(np.argmax(row)) if d else 0
        count[labels[i]] += 1
        acc[labels[i]] += pred == labels[i]
    acc = np.divide(acc, count, out=np.zeros(d), where=count > 0)
    return acc.astype(np.float32), count.astype(np.int32)


@pytest.mark.parametrize("n,d", [(1, 1), (10, 3), (7, 5), (200, 10), (5, 20), (0, 4), (0, 0)])
def test_multi_class_accuracy_against_numpy(n, d):
    rng = np.random.RandomState(n * 100 + d)
    x = rng.uniform(0, 1, (n, d)).astype(np.float32)
    labels = rng.randint(0, max(d, 1), n).astype(np.int32)
    if n > 3 and d > 1:
        x[np.arange(0, n, 2), labels[::2]] = 2.0  # about half the rows right
    feed(x=x, l=labels)
    run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    acc, cnt = workspace.FetchBlob("acc"), workspace.FetchBlob("cnt")
    assert acc.dtype == np.float32 and acc.shape == (d,)
    assert cnt.dtype == np.int32 and cnt.shape == (d,)
    want_acc, want_cnt = mca_ref(x, labels)
    np.testing.assert_array_equal(cnt, want_cnt)
    np.testing.assert_array_equal(acc, want_acc)
    if n:
        assert cnt.sum() == n


def test_multi_class_accuracy_known_values():
    x = np.array([[0.1, 0.7, 0.2],   # pred 1, label 1: right
                  [0.5, 0.5, 0.0],   # tie: the first, 0; label 1: wrong
                  [0.3, 0.3, 0.3],   # tie: 0; label 0: right
                  [0.0, 0.2, 0.9],   # pred 2, label 1: wrong
                  [0.9, 0.0, 0.0]],  # pred 0, label 0: right
                 np.float32)
    feed(x=x, l=np.array([1, 1, 0, 1, 0], np.int32))
    run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    np.testing.assert_array_equal(workspace.FetchBlob("cnt"), [2, 3, 0])
    np.testing.assert_allclose(workspace.FetchBlob("acc"), [1.0, 1.0 / 3, 0.0], rtol=1e-7)


def test_multi_class_accuracy_nan_and_inf_scores():
    nan, inf = np.nan, np.inf
    x = np.array([[nan, 0.2, 0.1],       # NaN skipped: pred 1
                  [nan, nan, nan],       # no number: pred 0
                  [-inf, -inf, -inf],    # nothing above -inf: pred 0
                  [-inf, -3.4e38, -inf],  # -FLT_MAX is a number above -inf: pred 1 (Caffe2: 0)
                  [1.0, inf, inf]],      # the first inf: pred 1
                 np.float32)
    feed(x=x, l=np.array([1, 0, 0, 1, 1], np.int32))
    run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    np.testing.assert_array_equal(workspace.FetchBlob("cnt"), [2, 3, 0])
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [1, 1, 0])
    want_acc, want_cnt = mca_ref(x, np.array([1, 0, 0, 1, 1]))
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), want_acc)


def test_multi_class_accuracy_outputs_resized_and_zeroed_each_run():
    feed(x=np.eye(4, dtype=np.float32), l=np.arange(4, dtype=np.int32))
    run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), np.ones(4))
    feed(x=np.eye(2, 4, dtype=np.float32), l=np.array([1, 1], np.int32))
    run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])  # same D: the buffers are kept
    np.testing.assert_array_equal(workspace.FetchBlob("cnt"), [0, 2, 0, 0])
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [0, 0.5, 0, 0])


@pytest.mark.parametrize("labels,row,label", [([0, 3, 1], 1, 3), ([0, 1, -1], 2, -1), ([7, 0, 0], 0, 7)])
def test_multi_class_accuracy_label_out_of_range(labels, row, label):
    feed(x=np.ones((3, 3), np.float32), l=np.array(labels, np.int32),
         acc=np.float32(5), cnt=np.int32(6))
    with pytest.raises(IndexError, match=r"op MultiClassAccuracy #0: input 1 blob 'l' \(3,\) int32 \(label\): "
                                         r"label %d at row %d is out of range \[0, 3\) \(input 0 blob 'x' \(3, 3\) "
                                         r"float32\)" % (label, row)):
        run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    assert workspace.FetchBlob("acc") == 5 and workspace.FetchBlob("cnt") == 6  # nothing written
    usable()


def test_multi_class_accuracy_no_classes():
    feed(x=np.zeros((2, 0), np.float32), l=np.array([0, 0], np.int32))
    with pytest.raises(IndexError, match=r"label 0 at row 0 is out of range \[0, 0\)"):
        run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    usable()


@pytest.mark.parametrize("x,l,exc,match", [
    (np.ones(3, np.float32), np.zeros(3, np.int32), ValueError,
     r"input 0 blob 'x' \(prediction\) must be 2-D \(N, D\), got \(3,\) float32"),
    (np.ones((3, 2), np.float32), np.zeros(2, np.int32), ValueError,
     r"input 1 blob 'l' \(2,\) int32 \(label\) must be 1-D with one label per row of input 0 blob 'x' \(3, 2\)"),
    (np.ones((3, 2), np.float32), np.zeros((3, 1), np.int32), ValueError,
     r"input 1 blob .l. \(3, 1\) int32 \(label\) must be 1-D"),
    (np.ones((3, 2), np.int32), np.zeros(3, np.int32), TypeError, r"input 0 blob 'x' must be float32"),
    (np.ones((3, 2), np.float32), np.zeros(3, np.float32), TypeError, r"input 1 blob 'l' must be int32"),
])
def test_multi_class_accuracy_refuses_shapes_and_dtypes(x, l, exc, match):
    feed(x=x, l=l)
    with pytest.raises(exc, match=r"op MultiClassAccuracy #0: " + match):
        run("MultiClassAccuracy", ["x", "l"], ["acc", "cnt"])
    usable()


def test_multi_class_accuracy_arity_and_outputs():
    feed(x=np.ones((3, 2), np.float32), l=np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="MultiClassAccuracy"):
        run("MultiClassAccuracy", ["x", "l"], ["acc"])
    with pytest.raises(ValueError, match="MultiClassAccuracy"):
        run("MultiClassAccuracy", ["x", "l"], ["acc", "acc"])
    with pytest.raises(ValueError, match="MultiClassAccuracy"):
        run("MultiClassAccuracy", ["x", "l"], ["x", "cnt"])  # not in place
    usable()


# ---------------------------------------------------------------- in nets, gradients, shapes
def test_metrics_beside_a_trained_loss():
    """A classifier's net with both metrics on the side: AddGradientOperators on the loss builds
    the same gradient ops as without them, and the metrics match NumPy on the softmax."""
    rng = np.random.RandomState(0)
    feed(x=rng.randn(6, 4).astype(np.float32), w=rng.randn(3, 4).astype(np.float32),
         b=np.zeros(3, np.float32), l=np.array([0, 1, 2, 0, 1, 2], np.int32))

    def build(with_metrics):
        net = core.Net("clf%d" % with_metrics)
        net.FC(["x", "w", "b"], "fc")
        net.SoftmaxWithLoss(["fc", "l"], ["prob", "loss"])
        if with_metrics:
            net.LabelCrossEntropy(["prob", "l"], "xent")
            net.Exp(["xent"], "inv_p")  # 1 / p(label)
            net.Reciprocal(["inv_p"], "p_label")
            net.Perplexity(["p_label"], "ppl")
            net.MultiClassAccuracy(["prob", "l"], ["acc", "cnt"])
        net.AddGradientOperators(["loss"])
        return net

    plain, with_m = build(False), build(True)
    grad_types = [o.type for o in plain.Proto().op]
    assert [o.type for o in with_m.Proto().op if o.type not in (
        "LabelCrossEntropy", "Exp", "Reciprocal", "Perplexity", "MultiClassAccuracy")] == grad_types
    workspace.RunNetOnce(with_m)
    prob = workspace.FetchBlob("prob")
    labels = workspace.FetchBlob("l")
    p_label = prob[np.arange(6), labels]
    np.testing.assert_allclose(workspace.FetchBlob("ppl"), perplexity_ref(p_label), rtol=1e-5)
    want_acc, want_cnt = mca_ref(prob, labels)
    np.testing.assert_array_equal(workspace.FetchBlob("cnt"), want_cnt)
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), want_acc)
    assert workspace.FetchBlob("w_grad").shape == (3, 4)


@pytest.mark.parametrize("metric", ["Perplexity", "MultiClassAccuracy"])
def test_no_gradient_through_the_metrics(metric):
    """Registered as Caffe2's SHOULD_NOT_DO_GRADIENT, as Accuracy: a gradient reaching the metric's
    output is a ValueError naming the op, its index and the output (Caffe2 raised too), the net left
    as it was; beside a loss (no gradient reaching it) it is silent and its inputs get none from it."""
    assert core.GradientRegistry.HasGradient(metric) and core.GradientRegistry.ShouldNotDoGradient(metric)
    feed(x=np.full((3, 2), 0.5, np.float32), l=np.zeros(3, np.int32))
    net = core.Net("g")
    net.Sigmoid(["x"], "s")
    if metric == "Perplexity":
        net.Flatten(["s"], "s2", axis=0)
        net.Reshape(["s2"], ["s1", "old"], shape=[-1])
        out, idx = net.Perplexity(["s1"], "m"), 3
    else:
        out, idx = net.MultiClassAccuracy(["s", "l"], ["m", "cnt"])[0], 1
    n_ops = len(net.Proto().op)
    with pytest.raises(ValueError, match=r"^op %s #%d: the gradient of its output 0 'm' reaches it, but %s "
                                         r"must not be differentiated \(Caffe2: SHOULD_NOT_DO_GRADIENT\)"
                       % (metric, idx, metric)):
        net.AddGradientOperators([out])
    assert len(net.Proto().op) == n_ops
    net.SumElements(["s"], "loss")
    grad_map = net.AddGradientOperators(["loss"])
    assert "x" in grad_map
    workspace.RunNetOnce(net)


def test_static_shapes():
    feed(p=np.full(5, 0.5, np.float32), x=np.ones((4, 3), np.float32), l=np.zeros(4, np.int32))
    net = core.Net("shapes")
    net.Perplexity(["p"], "y")
    net.MultiClassAccuracy(["x", "l"], ["acc", "cnt"])
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["y"] == [] and types["y"] == core.DataType.FLOAT
    assert shapes["acc"] == [3] and types["acc"] == core.DataType.FLOAT
    assert shapes["cnt"] == [3] and types["cnt"] == core.DataType.INT32
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("cnt").shape == (3,)
    # refused inputs: a warning and empty results, and the run refuses them too
    for op_type, ins in [("Perplexity", dict(p=np.ones((2, 2), np.float32))),
                         ("MultiClassAccuracy", dict(x=np.ones((4, 3), np.float32), l=np.zeros(3, np.int32))),
                         ("MultiClassAccuracy", dict(x=np.ones((4, 3), np.float32), l=np.zeros(4, np.float32)))]:
        workspace.ResetWorkspace()
        feed(**ins)
        bad = core.Net("bad")
        getattr(bad, op_type)(list(ins), ["o0", "o1"][:1 if op_type == "Perplexity" else 2])
        with pytest.warns(RuntimeWarning, match="InferShapesAndTypes.*%s" % op_type):
            assert workspace.InferShapesAndTypes([bad]) == ({}, {})
        with pytest.raises((ValueError, TypeError)):
            workspace.RunNetOnce(bad)
