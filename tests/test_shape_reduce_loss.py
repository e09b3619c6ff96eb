"""Shape inference of the reductions, losses and normalizations (recurrent/_shape_reduce_loss.py):
every op type inferred and then run, the inferred shapes and types against the fetched outputs;
the argument variants that change shapes; the blob_dimensions / blob_types path; inputs the ops
refuse (a warning and empty results, and the run refuses them too); outputs left unknown."""

import warnings

import numpy as np
import pytest

from recurrent import core, shape_inference as si, workspace

rng = np.random.RandomState(0)


def r(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def p(*shape):
    return rng.uniform(0.05, 0.95, shape).astype(np.float32)


def i32(x):
    return np.asarray(x, np.int32)


def pm1(*shape):
    return np.where(rng.uniform(size=shape) < 0.5, -1, 1).astype(np.int32)


def onehot_probs(n, d):
    t = np.zeros((n, d), np.float32)
    t[np.arange(n), np.arange(n) % d] = 1
    return t


def _net(op_type, inputs, outputs, kw):
    net = core.Net("si_reduce_loss")
    net.Proto().op.extend([core.CreateOperator(op_type, inputs, outputs, **kw)])
    return net


def _dtype(a):
    return {np.dtype(np.float32): si.FLOAT, np.dtype(np.int32): si.INT32}[a.dtype]


def infer_and_run(op_type, inputs, outputs, unknown=(), **kw):
    """Feeds ``inputs`` (list of (name, array)), infers, runs, and compares every output (all must
    be inferred but those in ``unknown``, which must be absent)."""
    for name, a in inputs:
        workspace.FeedBlob(name, a)
    net = _net(op_type, [n for n, _ in inputs], outputs, kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    for o in outputs:
        got = workspace.FetchBlob(o)
        if o in unknown:
            assert o not in shapes, "%s: '%s' should not be inferred" % (op_type, o)
            continue
        assert o in shapes, "%s: '%s' not inferred" % (op_type, o)
        want = (list(got.shape), _dtype(got))
        assert (shapes[o], types[o]) == want, "%s: '%s' inferred %s %d, ran %s" % (
            op_type, o, shapes[o], types[o], want)
    return shapes, types


X234 = r(2, 3, 4)

# (op type, inputs, outputs, args[, unknown outputs])
CASES = [
    # ---- reduce.c
    ("ReduceSum", [("x", X234)], ["y"], {}),
    ("ReduceSum", [("x", np.float32(3))], ["y"], {}),
    ("ReduceMean", [("x", X234)], ["y"], {"axes": [1], "keepdims": 0}),
    ("ReduceMax", [("x", X234)], ["y"], {"axes": [-1, 0]}),
    ("ReduceMin", [("x", X234)], ["y"], {"axes": [2], "keepdims": 0}),
    ("ReduceL1", [("x", X234)], ["y"], {"axes": [0, 2]}),
    ("ReduceL2", [("x", X234)], ["y"], {"keepdims": 0}),
    ("ReduceL1Gradient", [("dy", r(2, 1, 4)), ("x", X234), ("y", r(2, 1, 4))], ["dx"], {"axes": [1]}),
    ("ReduceL2Gradient", [("dy", r(2, 3)), ("x", X234), ("y", r(2, 3))], ["dx"], {"axes": [2], "keepdims": 0}),
    ("ReduceMean", [("x", r(2, 0, 3))], ["y"], {"axes": [1], "keepdims": 0}),
    ("ReduceSumGradient", [("dy", r(2, 4)), ("x", X234), ("y", r(2, 4))], ["dx"],
     {"axes": [1], "keepdims": 0}),
    ("ReduceMeanGradient", [("dy", r(1, 1, 1)), ("x", X234), ("y", r(1, 1, 1))], ["dx"], {}),
    ("ReduceMaxGradient", [("dy", r(1, 3, 1)), ("x", X234), ("y", r(1, 3, 1))], ["dx"], {"axes": [0, 2]}),
    ("ReduceMinGradient", [("dy", r(2, 3)), ("x", X234), ("y", r(2, 3))], ["dx"],
     {"axes": [-1], "keepdims": 0}),
    ("ReduceFrontSum", [("x", X234)], ["y"], {"num_reduce_dim": 2}),
    ("ReduceFrontSum", [("x", X234), ("l", i32([6, 0, 3, 1]))], ["y"], {"num_reduce_dim": 2}),
    ("ReduceFrontMean", [("x", X234)], ["y"], {"num_reduce_dim": 0}),
    ("ReduceBackSum", [("x", X234)], ["y"], {"num_reduce_dim": 3}),
    ("ReduceBackMean", [("x", X234), ("l", i32([1, 2, 3, 4, 0, 4]))], ["y"], {}),
    ("ReduceFrontMax", [("x", X234)], ["y"], {}),
    ("ReduceFrontMax", [("x", X234), ("l", i32([1, 2] * 6))], ["y"], {}),
    ("ReduceBackMax", [("x", X234), ("l", i32([1, 12]))], ["y"], {"num_reduce_dim": 2}),
    ("ReduceFrontSumGradient", [("dy", r(4)), ("x", X234)], ["dx"], {"num_reduce_dim": 2}),
    ("ReduceFrontSumGradient", [("dy", r(4)), ("x", X234), ("l", i32([6, 0, 3, 1]))], ["dx"],
     {"num_reduce_dim": 2}),
    # X given as its shape: dX's shape is data
    ("ReduceFrontMeanGradient", [("dy", r(3, 4)), ("xs", i32([2, 3, 4]))], ["dx"], {}, ["dx"]),
    ("ReduceBackSumGradient", [("dy", r(2, 3)), ("x", X234)], ["dx"], {}),
    ("ReduceBackMeanGradient", [("dy", r(2)), ("x", X234), ("l", i32([5, 12]))], ["dx"],
     {"num_reduce_dim": 2}),
    ("ReduceFrontMaxGradient", [("dy", r(3, 4)), ("x", X234), ("y", r(3, 4))], ["dx"], {}),
    ("ReduceBackMaxGradient", [("dy", r(2, 3)), ("x", X234), ("y", r(2, 3)), ("l", i32([1, 2, 3, 4, 1, 1]))],
     ["dx"], {}),
    ("ArgMax", [("x", X234)], ["i"], {}),
    ("ArgMin", [("x", X234)], ["i"], {"axis": 0, "keepdims": 0}),
    ("ArgMax", [("x", r(5))], ["i"], {"keepdims": 0}),
    ("RowWiseArgMax", [("x", r(3, 4))], ["i"], {}),
    ("RowWiseArgMax", [("x", r(0, 0))], ["i"], {}),
    ("ReduceTailSum", [("x", X234)], ["s"], {}),
    ("ReduceTailSum", [("x", r(3))], ["s"], {}),
    ("ReduceTailSum", [("x", r(2, 0))], ["s"], {}),
    ("Accuracy", [("p", r(4, 5)), ("l", i32([0, 4, 2, 1]))], ["a"], {"top_k": 2}),
    # ---- metric.c
    ("Perplexity", [("p", p(6))], ["y"], {}),
    ("Perplexity", [("p", p(0))], ["y"], {}),
    ("MultiClassAccuracy", [("x", r(4, 5)), ("l", i32([0, 4, 2, 4]))], ["a", "c"], {}),
    ("MultiClassAccuracy", [("x", r(0, 3)), ("l", i32([]))], ["a", "c"], {}),
    # ---- member_hist.c
    ("IsMemberOf", [("x", i32([[1, 2, 3], [4, 5, 6]]))], ["y"], {"value": [2, 5, 5]}),
    ("IsMemberOf", [("x", i32([]))], ["y"], {}),
    ("AccumulateHistogram", [("x", r(3, 4))], ["c", "a"], {"num_buckets": 5, "lower_bound": -1.0}),
    ("AccumulateHistogram", [("x", r(0))], ["c", "a"], {}),
    # ---- loss.c
    ("SquaredL2Distance", [("x", r(3, 4)), ("y", r(3, 4))], ["d"], {}),
    ("SquaredL2Distance", [("x", np.float32(1)), ("y", np.float32(2))], ["d"], {}),
    ("SquaredL2DistanceGradient", [("x", X234), ("y", X234), ("g", r(2))], ["dx", "dy"], {}),
    ("AveragedLoss", [("x", X234)], ["l"], {}),
    ("AveragedLossGradient", [("x", X234), ("g", np.float32(1))], ["dx"], {}),
    ("SumElements", [("x", X234)], ["l"], {"average": 1}),
    ("SumElementsGradient", [("x", X234), ("g", r(1))], ["dx"], {}),
    ("SumSqrElements", [("x", r(0, 3))], ["l"], {}),
    ("SumSqrElementsGradient", [("x", X234), ("g", np.float32(2))], ["dx"], {"average": 1}),
    ("Softmax", [("x", X234)], ["y"], {}),
    ("Softmax", [("x", X234)], ["y"], {"axis": -1}),
    ("SoftmaxGradient", [("y", X234), ("dy", X234)], ["dx"], {"axis": 2}),
    ("SoftmaxWithLoss", [("x", r(4, 5)), ("t", i32([0, 1, 4, 2]))], ["p", "loss"], {}),
    ("SoftmaxWithLoss", [("x", X234), ("t", i32([[0, 1, 3], [2, 2, 1]])), ("w", p(6))], ["p", "loss"],
     {"axis": 2, "scale": 0.5}),
    ("SoftmaxWithLoss", [("x", r(4, 5)), ("t", onehot_probs(4, 5))], ["p", "loss"], {"label_prob": 1}),
    ("SoftmaxWithLossGradient", [("x", r(4, 5)), ("t", i32([[0], [1], [4], [2]])), ("p", r(4, 5)),
                                 ("g", np.float32(1))], ["dx"], {}),
    ("SoftmaxWithLossGradient", [("x", r(4, 5)), ("t", i32([0, 1, 4, 2])), ("w", p(4)), ("p", r(4, 5)),
                                 ("g", r(1))], ["dx"], {}),
    ("SpatialSoftmaxWithLoss", [("x", r(2, 3, 2, 2)), ("t", i32(rng.randint(-1, 3, (2, 2, 2))))],
     ["p", "loss"], {}),
    ("SpatialSoftmaxWithLoss", [("x", r(2, 3, 2, 2)), ("t", i32(rng.randint(0, 3, (2, 2, 2)))),
                                ("w", p(2, 2, 2))], ["p", "loss"], {"scale": 2.0}),
    ("SpatialSoftmaxWithLossGradient", [("x", r(2, 3, 2, 2)), ("t", i32(rng.randint(0, 3, (2, 2, 2)))),
                                        ("p", r(2, 3, 2, 2)), ("g", np.float32(1))], ["dx"], {}),
    ("LabelCrossEntropy", [("x", p(3, 4)), ("t", i32([0, 3, 1]))], ["y"], {}),
    ("LabelCrossEntropy", [("x", p(4)), ("t", i32([[2]]))], ["y"], {}),
    ("LabelCrossEntropyGradient", [("x", p(3, 2, 2)), ("t", i32([0, 3, 1])), ("g", r(3))], ["dx"], {}),
    # ---- loss2.c
    ("CrossEntropy", [("x", p(3, 4)), ("t", onehot_probs(3, 4))], ["y"], {}),
    ("CrossEntropy", [("x", p(3, 2, 2)), ("t", onehot_probs(3, 4))], ["y"], {}),
    ("CrossEntropyGradient", [("x", p(3, 1)), ("t", p(3)), ("g", r(3))], ["dx"], {}),
    ("SigmoidCrossEntropyWithLogits", [("x", X234), ("t", p(2, 3, 4))], ["y"], {}),
    ("SigmoidCrossEntropyWithLogits", [("x", r(5)), ("t", p(5))], ["y"], {"log_D_trick": 1}),
    ("SigmoidCrossEntropyWithLogitsGradient", [("g", r(2, 3)), ("x", X234), ("t", p(2, 3, 4))], ["dx"],
     {"unjoined_lr_loss": 1}),
    ("WeightedSigmoidCrossEntropyWithLogits", [("x", X234), ("t", p(2, 3, 4)), ("w", p(2, 3, 4))], ["y"], {}),
    ("WeightedSigmoidCrossEntropyWithLogitsGradient", [("g", r(6)), ("x", X234), ("t", p(2, 3, 4)),
                                                       ("w", p(2, 3, 4))], ["dx"], {}),
    ("MakeTwoClass", [("x", p(3, 2))], ["y"], {}),
    ("MakeTwoClass", [("x", np.float32(0.5))], ["y"], {}),
    ("MakeTwoClassGradient", [("g", r(3, 2, 2))], ["dx"], {}),
    ("L1Distance", [("x", X234), ("y", r(2, 3, 4))], ["d"], {}),
    ("L1DistanceGradient", [("x", r(3, 4)), ("y", r(3, 4)), ("g", r(3))], ["dx", "dy"], {}),
    ("DotProduct", [("x", r(3, 0)), ("y", r(3, 0))], ["d"], {}),
    ("DotProductGradient", [("x", r(3, 4)), ("y", r(3, 4)), ("g", r(3))], ["dx", "dy"], {}),
    ("CosineSimilarity", [("x", r(3, 4)), ("y", r(3, 4))], ["d"], {}),
    ("CosineSimilarityGradient", [("x", r(3, 4)), ("y", r(3, 4)), ("g", r(3))], ["dx", "dy"], {}),
    ("Normalize", [("x", X234)], ["y"], {}),
    ("NormalizeL1", [("x", X234)], ["y"], {"axis": 0}),
    ("NormalizeGradient", [("x", X234), ("dy", r(2, 3, 4))], ["dx"], {"axis": 1}),
    # ---- loss3.c
    ("MarginRankingCriterion", [("a", r(3, 2)), ("b", r(6)), ("y", pm1(2, 3))], ["l"], {"margin": 0.5}),
    ("MarginRankingCriterionGradient", [("a", r(3, 2)), ("b", r(6)), ("y", pm1(6)), ("g", r(2, 3))],
     ["da", "db"], {}),
    ("CosineEmbeddingCriterion", [("s", r(4)), ("y", pm1(4, 1))], ["l"], {}),
    ("CosineEmbeddingCriterionGradient", [("s", r(4, 1)), ("y", pm1(4)), ("g", r(4))], ["ds"], {}),
    ("PairWiseLoss", [("x", r(5, 1)), ("t", r(5)), ("len", i32([2, 3]))], ["y"], {}),
    ("PairWiseLoss", [("x", r(5)), ("t", r(5, 1))], ["y"], {}),
    ("PairWiseLoss", [("x", r(0)), ("t", r(0))], ["y"], {}),
    ("PairWiseLossGradient", [("x", r(5, 1)), ("t", r(5)), ("g", r(3)), ("len", i32([2, 0, 3]))], ["dx"], {}),
    ("PairWiseLossGradient", [("x", r(5)), ("t", r(5)), ("g", r(1))], ["dx"], {}),
    ("BernoulliJSD", [("x", p(3, 4)), ("t", p(12))], ["l"], {}),
    ("BernoulliJSDGradient", [("g", r(12)), ("x", p(3, 4)), ("t", p(3, 4))], ["dx"], {}),
    # ---- moments.c
    ("LpNorm", [("x", X234)], ["z"], {"p": 1, "average": 1}),
    ("LpNorm", [("x", r(0))], ["z"], {}),
    ("LpNormGradient", [("x", X234), ("g", r(1))], ["dx"], {}),
    ("BatchMoments", [("x", X234)], ["mu", "var"], {}),
    ("BatchMoments", [("x", X234)], ["mu", "var"], {"order": "NHWC"}),
    ("BatchMomentsGradient", [("dmu", r(4)), ("dvar", r(4)), ("x", X234)], ["dx"], {"order": "NHWC"}),
    ("SinusoidPositionEncoding", [("pos", i32([[1, 2], [3, 4], [5, 6]]))], ["y"], {"embedding_size": 6}),
    ("SinusoidPositionEncoding", [("pos", i32(np.zeros((1, 2))))], ["y"], {}),
    # ---- layer_norm.c
    ("LayerNorm", [("x", X234)], ["y", "mean", "std"], {}),
    ("LayerNorm", [("x", X234)], ["y", "mean", "std"], {"axis": -1}),
    ("LayerNorm", [("x", X234), ("g", r(3, 4)), ("b", r(3, 4))], ["y", "mean", "std"],
     {"elementwise_affine": 1}),
    ("LayerNormGradient", [("dy", X234), ("y", X234), ("m", r(2, 3, 1)), ("s", p(2, 3, 1)),
                           ("x", X234)], ["dx"], {"axis": 2}),
    ("LayerNormGradient", [("dy", X234), ("y", X234), ("m", r(1)), ("s", p(1)), ("x", X234),
                           ("g", r(2, 3, 4))], ["dx", "dg", "db"], {"axis": 0, "elementwise_affine": 1}),
    # ---- norm.c
    ("GroupNorm", [("x", r(2, 4, 3)), ("g", r(4)), ("b", r(4))], ["y", "m", "s"], {"group": 2}),
    ("GroupNorm", [("x", r(2, 3, 6)), ("g", r(6)), ("b", r(6))], ["y", "m", "s"],
     {"group": 3, "order": "NHWC"}),
    ("GroupNormGradient", [("dy", r(2, 4, 3)), ("x", r(2, 4, 3)), ("g", r(4)), ("b", r(4)), ("m", r(2, 2)),
                           ("s", p(2, 2))], ["dx", "dg", "db"], {"group": 2}),
    ("InstanceNorm", [("x", X234), ("s", r(3)), ("b", r(3))], ["y"], {}),
    ("InstanceNorm", [("x", X234), ("s", r(4)), ("b", r(4))], ["y", "m", "is"], {"order": "NHWC"}),
    ("InstanceNormGradient", [("x", X234), ("s", r(3)), ("b", r(3)), ("dy", r(2, 3, 4))],
     ["dx", "ds", "db"], {}),
    ("InstanceNormGradient", [("x", X234), ("s", r(3)), ("b", r(3)), ("dy", r(2, 3, 4)), ("m", r(2, 3)),
                              ("is", p(2, 3))], ["dx", "ds", "db"], {}),
    ("SpatialBN", [("x", X234), ("s", r(3)), ("b", r(3)), ("m", r(3)), ("v", p(3))], ["y"], {"is_test": 1}),
    ("SpatialBN", [("x", X234), ("s", r(4)), ("b", r(4)), ("m", r(4)), ("v", p(4))],
     ["y", "m", "v", "sm", "siv"], {"order": "NHWC"}),
    ("SpatialBN", [("x", X234), ("s", r(3)), ("b", r(3)), ("m", r(3)), ("v", p(3)), ("sx", r(3)),
                   ("sxx", p(3))], ["y", "rm", "rv", "sm", "siv"], {"num_batches": 2}),
    ("SpatialBNGradient", [("x", X234), ("s", r(3)), ("dy", r(2, 3, 4)), ("m", r(3)), ("is", p(3))],
     ["dx", "ds", "db"], {}),
    ("SpatialBNGradient", [("x", X234), ("s", r(3)), ("dy", r(2, 3, 4)), ("m", r(3)), ("is", p(3)),
                           ("a", r(3)), ("c", r(3))], ["dx", "ds", "db"], {"num_batches": 3}),
    # ---- lrn.c
    ("LRN", [("x", X234)], ["y", "scale"], {"size": 3, "alpha": 0.1, "beta": 0.75}),
    ("LRN", [("x", X234)], ["y"], {"size": 1, "order": "NHWC"}),
    ("LRNGradient", [("x", X234), ("y", r(2, 3, 4)), ("dy", r(2, 3, 4))], ["dx"], {"size": 3, "alpha": 0.1}),
    # ---- dropout.c
    ("Dropout", [("x", X234)], ["y", "mask"], {"ratio": 0.3}),
    ("Dropout", [("x", X234)], ["y"], {"is_test": 1}),
    ("DropoutGrad", [("dy", X234), ("mask", i32(rng.randint(0, 2, (2, 3, 4))))], ["dx"], {}),
    ("DropoutGrad", [("dy", X234)], ["dx"], {"is_test": 1}),
    # ---- Sum, Max (math.c), Mean (unary.c)
    ("Sum", [("a", X234), ("b", r(2, 3, 4)), ("c", r(2, 3, 4))], ["s"], {}),
    ("SumInt", [("a", i32([[1, 2], [3, 4]])), ("b", i32([[5, 6], [7, 8]]))], ["s"], {}),
    ("SumInt", [("a", i32([1, 2, 3]))], ["a"], {}),
    ("Max", [("a", r(3)), ("b", r(3))], ["s"], {}),
    ("Mean", [("a", r(2, 1, 4)), ("b", r(3, 1)), ("c", r(4))], ["s"], {}),
    ("Mean", [("a", r(2, 3)), ("b", r(3))], ["a"], {}),
]


@pytest.mark.parametrize("case", CASES, ids=["%s-%d" % (c[0], k) for k, c in enumerate(CASES)])
def test_infer_then_run(case):
    op_type, inputs, outputs, kw = case[:4]
    infer_and_run(op_type, inputs, outputs, unknown=case[4] if len(case) > 4 else (), **kw)


def test_every_op_type_of_the_family_has_a_case():
    si.registered()
    mine = {t for t, f in si._REGISTRY.items() if f.__module__ == "recurrent._shape_reduce_loss"}
    assert len(mine) == 95
    assert not mine - {c[0] for c in CASES}


def test_in_place_outputs():
    workspace.FeedBlob("x", X234)
    net = core.Net("inplace")
    net.Softmax(["x"], ["x"], axis=2)
    net.Dropout(["x"], ["x", "mask"], is_test=1)
    net.LayerNorm(["x"], ["x", "mean", "std"], axis=-2)
    net.ReduceBackSum(["x"], ["r"], num_reduce_dim=2)
    net.Mean(["r", "r"], ["r"])
    net.Sum(["x", "x"], ["x"])
    shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    assert shapes["x"] == [2, 3, 4] and shapes["r"] == [2] and types["r"] == si.FLOAT
    assert shapes["mean"] == [2, 1] and shapes["mask"] == [2, 3, 4] and types["mask"] == si.INT32
    for b in ("x", "r", "mean", "std", "mask"):
        assert list(workspace.FetchBlob(b).shape) == shapes[b]


def test_blob_dimensions_and_types():
    net = core.Net("dims")
    net.ReduceMean(["x"], ["m"], axes=[0], keepdims=0)
    net.ArgMax(["m"], ["i"], axis=0)
    net.SoftmaxWithLoss(["m", "lab"], ["p", "loss"], axis=0)
    net.ReduceFrontSumGradient(["dy", "xs"], ["dx"])
    shapes, types = workspace.InferShapesAndTypes(
        [net], blob_dimensions={"x": [2, 3, 4], "lab": [], "dy": [4], "xs": [2]},
        blob_types={"x": core.DataType.FLOAT, "lab": core.DataType.INT32, "dy": core.DataType.FLOAT})
    assert shapes == {"x": [2, 3, 4], "lab": [], "dy": [4], "xs": [2], "m": [3, 4], "i": [1, 4], "p": [3, 4],
                      "loss": []}
    assert types["m"] == types["p"] == types["loss"] == si.FLOAT and types["i"] == si.INT32
    assert types["xs"] == si.UNDEFINED  # X or X's shape: dX unknown
    # without types: the outputs get the dtype the ops always give
    shapes, types = workspace.InferShapesAndTypes([net], blob_dimensions={"x": [2, 3, 4], "lab": [1]})
    assert shapes["i"] == [1, 4] and types["i"] == si.INT32 and types["m"] == si.FLOAT and "dx" not in shapes
    # a known wrong dtype is refused
    with pytest.warns(RuntimeWarning, match="Softmax"):
        assert workspace.InferShapesAndTypes([net], blob_dimensions={"x": [2, 3, 4], "lab": [1]},
                                             blob_types={"lab": core.DataType.FLOAT}) == ({}, {})


def test_shape_input_makes_the_gradient_unknown():
    """Reduce{Front,Back}{Sum,Mean}Gradient given X's shape: dX is left out, also when the blob had a
    shape before."""
    workspace.FeedBlob("dx", r(7))
    infer_and_run("ReduceBackSumGradient", [("dy", r(2, 3)), ("xs", i32([2, 3, 5]))], ["dx"], unknown=["dx"])
    assert workspace.FetchBlob("dx").shape == (2, 3, 5)


def test_odd_arity_is_refused():
    """An op with a number of inputs / outputs its schema refuses fails at creation: the inference
    warns and gives ({}, {}), as for inputs the op refuses."""
    workspace.FeedBlob("x", r(3, 4))
    for op_type, ins, outs in [("SoftmaxWithLoss", ["x"], ["p", "l"]), ("Relu", ["x"], ["y", "z"]),
                               ("ReduceSum", ["x"], ["x"])]:
        with pytest.warns(RuntimeWarning, match="cannot be created"):
            assert workspace.InferShapesAndTypes([_net(op_type, ins, outs, {})]) == ({}, {})
        with pytest.raises(Exception):
            workspace.RunNetOnce(_net(op_type, ins, outs, {}))


# (op type, inputs, outputs, args): inputs every op refuses, one per kind of check
REFUSED = [
    ("Softmax", [("x", r(3, 4))], ["y"], {"axis": 2}),                       # axis out of range
    ("Normalize", [("x", np.float32(1))], ["y"], {}),                        # no axis in a 0-d X
    ("ReduceSum", [("x", r(3, 4))], ["y"], {"axes": [0, -2]}),               # repeated axis
    ("ReduceMean", [("x", r(3, 4))], ["y"], {"axes": [2]}),                  # axis out of range
    ("ReduceFrontSum", [("x", r(3, 4))], ["y"], {"num_reduce_dim": 3}),      # more dims than X has
    ("ReduceMax", [("x", r(3, 0))], ["y"], {"axes": [1]}),                   # max of nothing
    ("ArgMax", [("x", r(3, 0))], ["y"], {}),                                 # no position to give
    ("RowWiseArgMax", [("x", r(3, 0))], ["y"], {}),                          # no position to give
    ("RowWiseArgMax", [("x", X234)], ["y"], {}),                             # not 2-D
    ("ReduceTailSum", [("x", i32(3))], ["y"], {}),                           # 0-d int32
    ("ArgMin", [("x", np.float32(1))], ["y"], {}),                           # 0-d
    ("ReduceBackMean", [("x", r(3, 4)), ("l", i32([1, 2]))], ["y"], {}),     # lengths count
    ("ReduceFrontSum", [("x", r(3, 4)), ("l", r(4))], ["y"], {}),            # lengths dtype
    ("ReduceSumGradient", [("dy", r(3)), ("x", r(3, 4)), ("y", r(3))], ["dx"], {}),  # dY not Y's shape
    ("ReduceMaxGradient", [("dy", r(1, 1)), ("x", r(3, 4)), ("y", r(1))], ["dx"], {}),  # Y not dY's shape
    ("ReduceFrontSumGradient", [("dy", r(4)), ("xs", i32([[3, 4]]))], ["dx"], {}),  # shape input not 1-D
    ("Accuracy", [("p", r(4)), ("l", i32([0, 1, 2, 3]))], ["a"], {}),        # rank
    ("Accuracy", [("p", r(4, 3)), ("l", r(4))], ["a"], {}),                  # dtype
    ("Accuracy", [("p", r(0, 3)), ("l", i32([]))], ["a"], {}),               # no rows
    ("Perplexity", [("p", p(2, 3))], ["y"], {}),                            # not 1-D
    ("Perplexity", [("p", i32([1, 1]))], ["y"], {}),                         # dtype
    ("MultiClassAccuracy", [("x", r(4, 3)), ("l", i32([0, 1, 2]))], ["a", "c"], {}),  # one label per row
    ("MultiClassAccuracy", [("x", r(4)), ("l", i32([0, 1, 2, 0]))], ["a", "c"], {}),  # rank
    ("MultiClassAccuracy", [("x", r(4, 3)), ("l", r(4))], ["a", "c"], {}),   # label dtype
    ("IsMemberOf", [("x", r(3))], ["y"], {"value": [1]}),                   # float32 X
    ("AccumulateHistogram", [("x", i32([1, 2]))], ["c", "a"], {}),           # int32 X
    ("SquaredL2Distance", [("x", r(3, 4)), ("y", r(3, 5))], ["d"], {}),      # shapes differ
    ("DotProductGradient", [("x", r(3, 4)), ("y", r(3, 4)), ("g", r(4))], ["dx", "dy"], {}),  # per-row grad
    ("AveragedLossGradient", [("x", r(3)), ("g", r(2))], ["dx"], {}),       # one value
    ("SoftmaxWithLoss", [("x", r(4, 5)), ("t", i32([0, 1, 2]))], ["p", "l"], {}),  # one label per row
    ("SoftmaxWithLoss", [("x", r(4, 5)), ("t", onehot_probs(4, 4))], ["p", "l"], {"label_prob": 1}),
    ("SoftmaxWithLoss", [("x", r(4, 5)), ("t", i32([0, 1, 2, 3])), ("w", r(3))], ["p", "l"], {}),  # weights
    ("SpatialSoftmaxWithLoss", [("x", r(2, 3, 4)), ("t", i32(np.zeros((2, 4))))], ["p", "l"], {}),  # 4-D
    ("LabelCrossEntropy", [("x", r(3, 4)), ("t", i32([[0, 1, 2]]))], ["y"], {}),
    ("CrossEntropy", [("x", p(3, 4)), ("t", p(3))], ["y"], {}),
    ("SigmoidCrossEntropyWithLogitsGradient", [("g", r(3)), ("x", r(2, 3)), ("t", r(2, 3))], ["dx"], {}),
    ("MakeTwoClass", [("x", p(*[1] * 8))], ["y"], {}),                       # too many dims out
    ("MakeTwoClassGradient", [("g", r(3, 3))], ["dx"], {}),
    ("MarginRankingCriterion", [("a", r(3)), ("b", r(4)), ("y", pm1(3))], ["l"], {}),  # sizes
    ("PairWiseLoss", [("x", r(3, 2)), ("t", r(3))], ["y"], {}),              # one score per row
    ("LpNorm", [("x", r(0, 2))], ["z"], {"average": 1}),                     # mean of nothing
    ("BatchMoments", [("x", r(4))], ["m", "v"], {}),                         # image rank
    ("BatchMomentsGradient", [("dm", r(3)), ("dv", r(4)), ("x", r(2, 3))], ["dx"], {}),
    ("SinusoidPositionEncoding", [("pos", i32([1, 2]))], ["y"], {}),
    ("LayerNorm", [("x", r(2, 3)), ("g", r(2, 3)), ("b", r(3))], ["y", "m", "s"], {"elementwise_affine": 1}),
    ("LayerNormGradient", [("dy", r(2, 3)), ("y", r(2, 3)), ("m", r(2)), ("s", r(2, 1)), ("x", r(2, 3))],
     ["dx"], {}),                                                              # stats shape (2, 1)
    ("GroupNorm", [("x", r(2, 6, 3)), ("g", r(6)), ("b", r(6))], ["y", "m", "s"], {"group": 4}),  # divides C
    ("InstanceNormGradient", [("x", r(2, 3, 4)), ("s", r(3)), ("b", r(3)), ("dy", r(2, 3, 4)), ("m", r(3))],
     ["dx", "ds", "db"], {}),
    ("SpatialBN", [("x", r(2, 3, 4)), ("s", r(3)), ("b", r(3)), ("m", r(4)), ("v", r(3))], ["y"],
     {"is_test": 1}),
    ("DropoutGrad", [("dy", r(2, 3)), ("mask", i32(np.ones((3, 2))))], ["dx"], {}),
    ("Sum", [("a", r(2, 3)), ("b", r(3))], ["s"], {}),
    ("Max", [("a", r(3)), ("b", i32([1, 2, 3]))], ["s"], {}),
    ("Mean", [("a", r(2, 3)), ("b", r(2))], ["s"], {}),                       # does not broadcast
    ("Mean", [("a", r(2, 3)), ("b", r(3))], ["b"], {}),                       # in place, other shape
]


@pytest.mark.parametrize("case", REFUSED, ids=["%s-%d" % (c[0], k) for k, c in enumerate(REFUSED)])
def test_refused(case):
    op_type, inputs, outputs, kw = case
    for name, a in inputs:
        workspace.FeedBlob(name, a)
    net = _net(op_type, [n for n, _ in inputs], outputs, kw)
    with pytest.warns(RuntimeWarning, match="InferShapesAndTypes.*%s" % op_type):
        assert workspace.InferShapesAndTypes([net]) == ({}, {})
    with pytest.raises(Exception):
        workspace.RunNetOnce(net)
