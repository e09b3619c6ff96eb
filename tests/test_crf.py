"""recurrent.crf (Caffe2's CRFWithLoss: a linear-chain CRF loss whose partition function is a
RecurrentNetwork) and recurrent.crf_predict (Viterbi decoding): the loss against a NumPy forward
algorithm, its gradients (predictions and transitions) against finite differences of that reference,
the executor on and off bitwise, the padding helpers, bad input."""

import warnings

import numpy as np
import pytest

from recurrent import brew, core, crf, model_helper, workspace
from test_rnn_cell import assert_executor_on_off_bitwise

LOW = crf.LOW_SCORE


def logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def pad_ref(pred):
    """(T, C) -> (T + 2, C + 2) as CRFWithLoss.pad_predictions, float64."""
    T, C = pred.shape
    p = np.full((T + 2, C + 2), LOW, np.float64)
    p[1:T + 1, :C] = pred
    p[0, C] = 0.0
    p[T + 1, C + 1] = 0.0
    return p


def crf_loss_ref(pred, labels, trans):
    """log Z - score(labels), float64: the forward algorithm over the padded scores."""
    pred, trans = np.asarray(pred, np.float64), np.asarray(trans, np.float64)
    C = pred.shape[1]
    p = pad_ref(pred)
    alpha = p[0]
    for t in range(1, p.shape[0]):
        alpha = logsumexp(alpha[:, None] + trans, axis=0) + p[t]
    log_z = logsumexp(alpha, axis=0)
    path = np.concatenate([[C], labels, [C + 1]]).astype(np.int64)
    score = sum(p[t, path[t]] for t in range(len(path))) + sum(trans[a, b] for a, b in zip(path[:-1], path[1:]))
    return log_z - score


def build(T, C, rng, labels=None, transitions=None):
    """A model with the CRF loss on fed predictions (T, C) and labels; returns (model, loss, layer)."""
    workspace.ResetWorkspace()
    model = model_helper.ModelHelper(name="crf")
    pred, lab = model.net.AddExternalInputs("pred", "labels")
    workspace.FeedBlob("pred", rng.randn(T, C).astype(np.float32))
    if labels is None:
        labels = rng.randint(C, size=T)
    workspace.FeedBlob("labels", np.asarray(labels, np.int32))
    trans_blob = None
    if transitions is not None:
        trans_blob = model.net.AddExternalInput("trans")
        workspace.FeedBlob("trans", transitions)
    layer = crf.CRFWithLoss(model, C, trans_blob)
    loss = layer.crf_loss(pred, lab)
    return model, loss, layer


@pytest.mark.parametrize("T,C", [(1, 1), (1, 3), (2, 2), (5, 4), (12, 3)])
def test_loss_vs_numpy_forward_algorithm(rng, T, C):
    model, loss, layer = build(T, C, rng)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    out = workspace.FetchBlob(str(loss))
    assert out.shape == () and out.dtype == np.float32
    trans = workspace.FetchBlob(str(layer.transitions))
    assert trans.shape == (C + 2, C + 2) and np.all(np.abs(trans) <= 1.0)   # UniformFill in [-1, 1]
    ref = crf_loss_ref(workspace.FetchBlob("pred"), workspace.FetchBlob("labels"), trans)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert ref > 0 or C == 1   # the labelled path is one of many (with one tag, the only one)


def test_loss_of_the_only_path_is_zero(rng):
    """With one tag and begin / end tags that cannot be left, the labelled path is the only one."""
    model, loss, _ = build(4, 1, rng)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    np.testing.assert_allclose(workspace.FetchBlob(str(loss)), 0.0, atol=1e-5)


def test_int64_labels_and_an_empty_sequence(rng):
    model, loss, layer = build(3, 2, rng, labels=np.array([1, 0, 1]))
    workspace.FeedBlob("labels", np.array([1, 0, 1], np.int64))    # Caffe2's dtype: cast, range-checked
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    trans = workspace.FetchBlob(str(layer.transitions))
    np.testing.assert_allclose(workspace.FetchBlob(str(loss)),
                               crf_loss_ref(workspace.FetchBlob("pred"), [1, 0, 1], trans), rtol=1e-5)
    # T = 0: begin -> end is the only path
    workspace.FeedBlob("pred", np.zeros((0, 2), np.float32))
    workspace.FeedBlob("labels", np.zeros(0, np.int32))
    workspace.RunNetOnce(model.net)
    np.testing.assert_allclose(workspace.FetchBlob(str(loss)), 0.0, atol=1e-5)


@pytest.mark.parametrize("T,C", [(1, 2), (3, 3), (6, 2)])
def test_gradients_vs_finite_differences_of_the_reference(rng, T, C):
    trans = rng.uniform(-1, 1, (C + 2, C + 2)).astype(np.float32)
    model, loss, layer = build(T, C, rng, transitions=trans)
    gmap = model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    pred, labels = workspace.FetchBlob("pred"), workspace.FetchBlob("labels")
    d_pred = workspace.FetchBlob(str(gmap["pred"]))
    d_trans = workspace.FetchBlob(str(gmap["trans"]))
    eps = 1e-4
    for x, g, f in [(pred, d_pred, lambda v: crf_loss_ref(v, labels, trans)),
                    (trans, d_trans, lambda v: crf_loss_ref(pred, labels, v))]:
        assert g.shape == x.shape
        x64 = x.astype(np.float64)
        num = np.zeros_like(x64)
        for i in np.ndindex(x.shape):
            hi, lo = x64.copy(), x64.copy()
            hi[i] += eps
            lo[i] -= eps
            num[i] = (f(hi) - f(lo)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("threads", [1, 3])
def test_executor_on_off_bitwise(rng, threads):
    model, loss, layer = build(9, 3, rng)
    gmap = model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    assert_executor_on_off_bitwise(model.net, [str(loss), str(gmap["pred"]), str(gmap[str(layer.transitions)])],
                                   threads)


def test_transitions_parameter_and_names(rng):
    model, loss, layer = build(2, 2, rng)
    assert str(layer.transitions) == "crf_transitions" and layer.transitions in model.params
    with core.NameScope("tagger"):
        m2 = model_helper.ModelHelper(name="m2")
        assert str(crf.CRFWithLoss(m2, 3).transitions) == "tagger/crf_transitions"
    # the step net's blobs carry Caffe2's names (its crf_test looks one up)
    rnn = [op for op in model.net.Proto().op if op.type == "RecurrentNetwork"]
    assert len(rnn) == 1 and "crf_net/zero_segment_id" in rnn[0].input


def test_pad_helpers(rng):
    init, net = core.Net("i"), core.Net("n")
    workspace.ResetWorkspace()
    pred = rng.randn(3, 2).astype(np.float32)
    workspace.FeedBlob("p", pred)
    workspace.FeedBlob("l", np.array([1, 0, 1], np.int32))
    padded = crf.CRFWithLoss.pad_predictions("p", init, net, 2)
    labels = crf.CRFWithLoss.pad_labels("l", init, net, 2)
    workspace.RunNetOnce(init)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(padded)), pad_ref(pred).astype(np.float32))
    np.testing.assert_array_equal(workspace.FetchBlob(str(labels)), [2, 1, 0, 1, 3])


@pytest.mark.parametrize("labels,pred_shape,exc,pattern", [
    ([0, 2, 1], (3, 2), IndexError, r"op OneHot #\d+: input 0 blob '[^']*': index 2 at position 1 is out of "
                                    r"range \[0, 2\)"),
    ([0, -1, 1], (3, 2), IndexError, r"op OneHot #\d+: .*index -1 at position 1 is out of range"),
    ([0, 1], (3, 2), ValueError, r"op DotProduct #\d+: input 1 blob .* \(6,\) float32 must have the shape of "
                                 r"input 0 blob .* \(4,\) float32"),
    ([0, 1, 1], (3, 3), ValueError, r"op DotProduct #\d+: .* \(9,\) float32 must have the shape of input 0 "
                                    r"blob .* \(6,\) float32"),
    ([0, 1, 1], (3, 2, 1), ValueError, r"op Concat #\d+: input 1 blob .* \(3, 1\) float32 does not match "
                                       r"input 0 blob 'pred' \(3, 2, 1\) float32"),
])
def test_bad_input(rng, labels, pred_shape, exc, pattern):
    """A label out of range, labels and predictions of different lengths, predictions of the wrong width or
    rank: an exception naming the op that found it; the same net then runs on good input."""
    model, loss, layer = build(3, 2, rng)
    model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob("pred", rng.randn(*pred_shape).astype(np.float32))
    workspace.FeedBlob("labels", np.array(labels, np.int32))
    with pytest.raises(exc, match=pattern):
        workspace.RunNetOnce(model.net)
    pred = rng.randn(3, 2).astype(np.float32)
    workspace.FeedBlob("pred", pred)
    workspace.FeedBlob("labels", np.array([1, 1, 0], np.int32))
    workspace.RunNetOnce(model.net)
    np.testing.assert_allclose(workspace.FetchBlob(str(loss)),
                               crf_loss_ref(pred, [1, 1, 0], workspace.FetchBlob(str(layer.transitions))),
                               rtol=1e-5)


def test_brew_initializer_tuple_with_extra_elements_warns():
    """Caffe2's update_initializer used the first two elements of a longer tuple (its crf_test passes
    one): the same here, with a warning naming what is ignored."""
    model = model_helper.ModelHelper(name="w")
    with pytest.warns(UserWarning, match=r"only \('UniformFill', \{'min': -1.0\}\) is used and "
                                         r"\(\{'max': 0.5\},\) is ignored"):
        brew.fc(model, "x", "fc", 3, 2, ("UniformFill", {"min": -1.0}, {"max": 0.5}))
    fill = [op for op in model.param_init_net.Proto().op if op.output[0] == "fc_w"][0]
    assert fill.type == "UniformFill" and [a.name for a in fill.arg if a.name in ("min", "max")] == ["min"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        brew.fc(model, "x", "fc2", 3, 2, ("UniformFill", {"min": -1.0}))
    with pytest.raises(TypeError, match=r"weight initializer must be an \('OpName', \{kwargs\}\) tuple"):
        brew.fc(model, "x", "fc3", 3, 2, ("UniformFill", "min"))


def viterbi_ref(scores, trans):
    """The best path (first index on ties) of a (T, n) score matrix under (n, n) transitions."""
    T = scores.shape[0]
    best, back = scores[0].astype(np.float64), np.zeros(scores.shape, np.int64)
    for t in range(1, T):
        v = best[:, None] + trans
        back[t] = np.argmax(v, axis=0)
        best = scores[t] + np.max(v, axis=0)
    path = [int(np.argmax(best))]
    for t in range(T - 1, 0, -1):
        path.append(int(back[t][path[-1]]))
    return path[::-1]


@pytest.mark.parametrize("T,C", [(1, 2), (4, 3), (10, 5)])
def test_update_predictions_reads_the_viterbi_path(rng, T, C):
    """update_predictions / crf_predict.apply_crf: each row's argmax is the Viterbi path's tag (found on
    the padded scores, as Caffe2's Python op found it), the row otherwise unchanged but for the swap."""
    from recurrent import crf_predict
    for use_layer in (True, False):
        workspace.ResetWorkspace()
        model = model_helper.ModelHelper(name="dec")
        classes = model.net.AddExternalInput("classes")
        pred = rng.randn(T, C).astype(np.float32)
        trans = rng.uniform(-2, 2, (C + 2, C + 2)).astype(np.float32)
        workspace.FeedBlob("classes", pred)
        layer = crf.CRFWithLoss(model, C, model.net.AddExternalInput("trans"))
        workspace.FeedBlob("trans", trans)
        out = layer.update_predictions(classes) if use_layer else \
            crf_predict.crf_update_predictions(model, layer, classes)
        workspace.RunNetOnce(model.param_init_net)
        workspace.RunNetOnce(model.net)
        got = workspace.FetchBlob(str(out))
        assert got.shape == (T, C) and got.dtype == np.float32
        path = viterbi_ref(pad_ref(pred), trans.astype(np.float64))
        assert path[0] == C and path[-1] == C + 1
        want = pred.copy()
        for t, tag in enumerate(path[1:-1]):
            best = int(np.argmax(pred[t]))
            want[t, [tag, best]] = pred[t, [best, tag]]
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.argmax(got, axis=1), path[1:-1])
