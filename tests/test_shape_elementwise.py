"""Static shape inference of the elementwise family (recurrent/_shape_elementwise.py): for every op type of
csrc/ops/unary.c, unary2.c, math.c, bcast.c, activation.c and cast.c, the shapes and types inferred before a
run against the run's; the argument variants that change shapes; inputs given by blob_dimensions /
blob_types; the inputs the ops refuse (a RuntimeWarning and empty results, and the run refuses them too);
and the outputs that cannot be inferred."""

import warnings

import numpy as np
import pytest

from recurrent import core, shape_inference as si, workspace

F, I = si.FLOAT, si.INT32


def ints(*shape, lo=1, hi=4):
    return np.random.RandomState(7).randint(lo, hi, shape).astype(np.int32)


def data(spec, k):
    """A float32 array of shape spec (a tuple; values in [0.5, 0.9)), or spec itself (an array)."""
    if isinstance(spec, np.ndarray):
        return spec
    return np.random.RandomState(k).uniform(0.5, 0.9, spec).astype(np.float32)


def make_net(type_, n_in, outputs, **kw):
    net = core.Net("si_elem")
    net.Proto().op.append(core.CreateOperator(type_, ["i%d" % k for k in range(n_in)], outputs, **kw))
    return net


def check(type_, inputs, n_out=1, outputs=None, expect=None, **kw):
    """Feeds the inputs (i0, i1, ...), infers, runs and compares every output's shape and type.
    Returns the inferred (shapes, types)."""
    outputs = outputs or ["o%d" % k for k in range(n_out)]
    for k, spec in enumerate(inputs):
        workspace.FeedBlob("i%d" % k, data(spec, k))
    net = make_net(type_, len(inputs), outputs, **kw)
    shapes, types = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    for k, o in enumerate(outputs):
        got = workspace.FetchBlob(o)
        assert o in shapes, "%s: output '%s' not inferred" % (type_, o)
        assert shapes[o] == list(got.shape), (type_, o, shapes[o], got.shape)
        assert types[o] == (F if got.dtype == np.float32 else I), (type_, o, types[o], got.dtype)
        if expect is not None:
            assert shapes[o] == list(expect[k])
    return shapes, types


UNARY = ["Abs", "Acos", "Asin", "Atan", "Ceil", "Clip", "Cos", "Cosh", "Cube", "Elu", "Erf", "Exp",
         "Floor", "Gelu", "HardSigmoid", "LeakyRelu", "Log", "Negative", "RSqrt", "Reciprocal", "Relu",
         "ReluN", "Scale", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqr", "Sqrt",
         "Swish", "Tan", "Tanh", "ThresholdedRelu", "Logit", "Cbrt", "IsNaN", "Log1p", "Round", "ReplaceNaN",
         "Accumulate"]
UNARY_GRAD = ["AbsGradient", "AcosGradient", "AsinGradient", "AtanGradient", "ClipGradient", "CosGradient",
              "CoshGradient", "CubeGradient", "EluGradient", "ErfGradient", "GeluGradient",
              "HardSigmoidGradient", "LeakyReluGradient", "RSqrtGradient", "ReciprocalGradient",
              "ReluGradient", "ReluNGradient", "SigmoidGradient", "SinGradient", "SinhGradient",
              "SoftplusGradient", "SoftsignGradient", "SqrGradient", "TanGradient", "TanhGradient",
              "ThresholdedReluGradient", "LogitGradient", "CbrtGradient", "Log1pGradient"]


@pytest.mark.parametrize("type_", UNARY)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4)])
def test_unary(type_, shape):
    check(type_, [shape], expect=[shape])


@pytest.mark.parametrize("type_", UNARY_GRAD)
def test_unary_grad(type_):
    check(type_, [(2, 3), (2, 3)], expect=[(2, 3)])


# (type, inputs, number of outputs, args, expected shapes)
CASES = [
    ("SwishGradient", [(2, 3), (2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("SeluGradient", [(2, 3), (6,)], 1, {}, [(2, 3)]),
    ("Clip", [(2, 3)], 1, {"min": 0.6, "max": 0.7}, [(2, 3)]),
    ("Copy", [ints(2, 3)], 1, {}, [(2, 3)]),
    ("Copy", [(4,)], 1, {}, [(4,)]),
    ("StopGradient", [ints(3)], 1, {}, [(3,)]),
    ("NegateGradient", [(3, 1)], 1, {}, [(3, 1)]),
    ("Pow", [(2, 3)], 1, {"exponent": 2.0}, [(2, 3)]),
    ("Pow", [(2, 3), (3,)], 1, {}, [(2, 3)]),
    ("Pow", [(3, 1), (1, 4)], 1, {}, [(3, 4)]),
    ("Pow", [(2, 3), (2,)], 1, {"broadcast": 1, "axis": 0}, [(2, 3)]),
    ("PowGradient", [(2, 3), (2, 3)], 1, {"exponent": 3.0}, [(2, 3)]),
    ("PowGradient", [(3, 4), (3, 1), (1, 4), (3, 4)], 2, {}, [(3, 1), (1, 4)]),
    ("PowGradient", [(2, 3), (2, 3), (3,), (2, 3)], 2, {"broadcast": 1}, [(2, 3), (3,)]),
    ("Glu", [(2, 4)], 1, {}, [(2, 2)]),
    ("Glu", [(4, 3)], 1, {"dim": 0}, [(2, 3)]),
    ("Cast", [(2, 3)], 1, {"to": core.DataType.INT32}, [(2, 3)]),
    ("Cast", [(2, 3)], 1, {"to": "bool"}, [(2, 3)]),
    ("Cast", [ints(4)], 1, {"to": core.DataType.FLOAT}, [(4,)]),
    ("Cast", [ints(4)], 1, {"to": "double"}, [(4,)]),
    ("Cast", [(2,)], 1, {"to": core.DataType.INT64}, [(2,)]),
    ("Conditional", [np.array([1, 0], np.int32), (2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("Conditional", [np.array([1, 0, 1], np.int32), ints(3), ints(3)], 1, {}, [(3,)]),
    ("EnsureClipped", [(4, 3)], 1, {"min": 0.6}, [(4, 3)]),
    ("ClipTensorByScaling", [(2, 3), np.array([5.0], np.float32)], 1, {"threshold": 1.0}, [(2, 3)]),
    ("ClipTensorByScaling", [(2, 3), np.array([5.0], np.float32), np.array([2.0], np.float32)], 1,
     {"threshold": 1.0}, [(2, 3)]),
    ("PRelu", [(2, 3, 4), (3,)], 1, {}, [(2, 3, 4)]),
    ("PRelu", [(2, 3, 4), (4,)], 1, {"order": "NHWC"}, [(2, 3, 4)]),
    ("PRelu", [(5,), (1,)], 1, {}, [(5,)]),
    ("PReluGradient", [(2, 3, 4), (2, 3, 4), (2, 3, 4), (3,)], 2, {}, [(2, 3, 4), (3,)]),
    ("SquareRootDivide", [(3, 2), (3,)], 1, {}, [(3, 2)]),
    ("RowMul", [(3, 2, 4), (3,)], 1, {}, [(3, 2, 4)]),
    ("RowMul", [(3,), (3, 1)], 1, {}, [(3,)]),
    ("RowMul", [(0, 5), (0,)], 1, {}, [(0, 5)]),
    ("ScaleBlobs", [(3, 2), (), (0, 4)], 3, {"scale": 2.0}, [(3, 2), (), (0, 4)]),
    ("ScaleBlobs", [(5,)], 1, {}, [(5,)]),
    ("SquareRootDivide", [(3, 2, 2), ints(3)], 1, {}, [(3, 2, 2)]),
    # binary ops: equal shapes, numpy-style, legacy broadcast=1 with axis / axis_str
    ("Add", [(2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("Add", [(2, 3, 4), (3, 1)], 1, {}, [(2, 3, 4)]),
    ("Add", [(3, 1), (1, 4)], 1, {}, [(3, 4)]),
    ("Add", [(), (2, 3)], 1, {}, [(2, 3)]),
    ("Add", [(2, 3, 4), (3,)], 1, {"broadcast": 1, "axis": 1}, [(2, 3, 4)]),
    ("Add", [(2, 3, 4, 5), (3,)], 1, {"broadcast": 1, "axis_str": "C"}, [(2, 3, 4, 5)]),
    ("Add", [(2, 4, 5, 3), (3,)], 1, {"broadcast": 1, "axis_str": "C", "order": "NHWC"}, [(2, 4, 5, 3)]),
    ("Add", [(2, 3, 4), (1, 3, 1)], 1, {"broadcast": 1}, [(2, 3, 4)]),
    ("Add", [ints(2, 3), ints(3)], 1, {}, [(2, 3)]),
    ("Sub", [(2, 3), (1,)], 1, {}, [(2, 3)]),
    ("Sub", [(2, 3), (2,)], 1, {"broadcast": 1, "axis": 0}, [(2, 3)]),
    ("Mul", [(4,), (2, 1)], 1, {}, [(2, 4)]),
    ("Mul", [ints(2, 1), ints(3)], 1, {}, [(2, 3)]),
    ("Div", [(2, 3), (3,)], 1, {}, [(2, 3)]),
    ("Div", [ints(2, 3), ints(2, 3)], 1, {}, [(2, 3)]),
    ("Div", [(0, 3), (1, 3)], 1, {}, [(0, 3)]),
    ("EQ", [(2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("NE", [ints(2, 3), ints(3)], 1, {}, [(2, 3)]),
    ("LT", [(3, 1), (1, 2)], 1, {}, [(3, 2)]),
    ("LE", [(2, 3), (3,)], 1, {"broadcast": 1}, [(2, 3)]),
    ("GT", [ints(4), ints(1)], 1, {}, [(4,)]),
    ("GE", [(), ()], 1, {}, [()]),
    ("And", [ints(2, 3, lo=0, hi=2), ints(3, lo=0, hi=2)], 1, {}, [(2, 3)]),
    ("Or", [ints(2, 1, lo=0, hi=2), ints(1, 3, lo=0, hi=2)], 1, {}, [(2, 3)]),
    ("Xor", [ints(2, 3, lo=0, hi=2), ints(2, lo=0, hi=2)], 1, {"broadcast": 1, "axis": 0}, [(2, 3)]),
    ("BitwiseAnd", [ints(2, 3), ints(2, 3)], 1, {}, [(2, 3)]),
    ("BitwiseOr", [ints(3), ints(2, 1)], 1, {}, [(2, 3)]),
    ("BitwiseXor", [ints(4), ints(4)], 1, {}, [(4,)]),
    ("Not", [ints(2, 3, lo=0, hi=2)], 1, {}, [(2, 3)]),
    ("AddGradient", [(2, 3), (2, 3), (3,)], 2, {}, [(2, 3), (3,)]),
    ("AddGradient", [(2, 3), (2, 3), (2,)], 2, {"broadcast": 1, "axis": 0}, [(2, 3), (2,)]),
    ("SubGradient", [(3, 4), (3, 1), (1, 4)], 2, {}, [(3, 1), (1, 4)]),
    ("MulGradient", [(2, 3), (2, 3), (2, 3)], 2, {}, [(2, 3), (2, 3)]),
    ("MulGradient", [(2, 3, 4), (2, 3, 4), (3,)], 2, {"broadcast": 1, "axis": 1}, [(2, 3, 4), (3,)]),
    ("DivGradient", [(3, 4), (3, 1), (1, 4), (3, 4)], 2, {}, [(3, 1), (1, 4)]),
    ("DivGradient", [(3,), (2, 3), (2, 3)], 2, {}, [(2, 3), (3,)]),
    ("DivGradient", [(2,), (2, 3), (2, 3)], 2, {"broadcast": 1, "axis": 0}, [(2, 3), (2,)]),
    ("DivGradient", [(2, 3), (2, 3), (2, 3)], 2, {}, [(2, 3), (2, 3)]),
    ("SumReduceLike", [(2, 3, 4), (3,)], 1, {"axis": 1}, [(3,)]),
    ("SumReduceLike", [(2, 3, 4), (4,)], 1, {}, [(4,)]),
    ("SumReduceLike", [(2, 3, 4), ints(1, 1)], 1, {}, [(1, 1)]),
    ("SumReduceLike", [(2, 3, 4, 5), (3,)], 1, {"axis_str": "C", "broadcast": 1}, [(3,)]),
    ("Where", [ints(3, 1, lo=0, hi=2), (1, 4), ()], 1, {}, [(3, 4)]),
    ("Where", [ints(2, lo=0, hi=2), ints(2, 3), ints(2, 3)], 1, {"broadcast_on_rows": 1}, [(2, 3)]),
    ("Where", [ints(2, 3, lo=0, hi=2), (2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("ExpandGradient", [(2, 3, 4), (3, 1)], 1, {}, [(3, 1)]),
    ("ExpandGradient", [(2, 3), ints(2, 3)], 1, {}, [(2, 3)]),
    ("Min", [(2, 3), (2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("Min", [(4,)], 1, {}, [(4,)]),
    ("MinGradient", [(2, 3), (2, 3), (2, 3), (2, 3)], 2, {}, [(2, 3), (2, 3)]),
    ("MaxGradient", [(2, 3), (2, 3), (2, 3)], 1, {}, [(2, 3)]),
    ("MeanGradient", [(2, 3)], 2, {}, [(2, 3), (2, 3)]),
    ("MeanGradient", [(2, 3), (2, 3), (3,)], 2, {}, [(2, 3), (3,)]),
    ("MeanGradient", [(2, 3), (2, 1), ()], 2, {}, [(2, 1), ()]),
    ("WeightedSum", [(2, 3), (1,), (2, 3), (1,)], 1, {}, [(2, 3)]),
    ("WeightedSumGradient", [(2, 3), (2, 3), (1,), (2, 3), (1,)], 2, {}, [(2, 3), (2, 3)]),
    ("WeightedSumGradient", [(2, 3), (2, 3), (1,), (2, 3), (1,)], 4, {"grad_on_w": 1},
     [(2, 3), (2, 3), (1,), (1,)]),
    # matrix ops and their axes
    ("FC", [(2, 3), (4, 3), (4,)], 1, {}, [(2, 4)]),
    ("FC", [(2, 3, 5), (4, 5), (4,)], 1, {"axis": 2}, [(2, 3, 4)]),
    ("FC", [(2, 3, 5), (4, 15), (4,)], 1, {"axis": -2}, [(2, 4)]),
    ("FC", [(2, 3), (2, 2, 3), (4,)], 1, {"axis_w": 2}, [(2, 4)]),
    ("FCTransposed", [(2, 3), (3, 4), (4,)], 1, {}, [(2, 4)]),
    ("FCTransposed", [(2, 3), (1, 3, 2), (2,)], 1, {"axis_w": 2}, [(2, 2)]),
    ("FCTransposed", [(2, 3), (3, 2, 2), (4,)], 1, {}, [(2, 4)]),
    ("FCGradient", [(2, 3), (4, 3), (2, 4)], 3, {}, [(4, 3), (4,), (2, 3)]),
    ("FCGradient", [(2, 3, 5), (4, 5), (2, 3, 4)], 2, {"axis": 2}, [(4, 5), (4,)]),
    ("FCTransposedGradient", [(2, 3), (3, 4), (2, 4)], 3, {}, [(3, 4), (4,), (2, 3)]),
    ("MatMul", [(2, 3), (3, 4)], 1, {}, [(2, 4)]),
    ("MatMul", [(3, 2), (3, 4)], 1, {"trans_a": 1}, [(2, 4)]),
    ("MatMul", [(2, 3), (4, 3)], 1, {"trans_b": 1}, [(2, 4)]),
    ("MatMul", [(2, 5, 3), (3, 4)], 1, {"axis_a": 2}, [(10, 4)]),
    ("MatMul", [(2, 3), (3, 2, 2)], 1, {"axis_b": 1}, [(2, 4)]),
    ("MatMul", [(2, 3), (3, 4), ints(2, 2, 2)], 1, {}, [(2, 2, 2)]),
    ("ElementwiseLinear", [(2, 3), (3,), (3,)], 1, {}, [(2, 3)]),
    ("ElementwiseLinear", [(2, 3), (6,), (6,)], 1, {"axis": 0}, [(2, 3)]),
    ("ElementwiseLinearGradient", [(2, 3, 2), (2, 3, 2), (6,)], 3, {}, [(2, 3, 2), (6,), (6,)]),
]


@pytest.mark.parametrize("type_, inputs, n_out, kw, expect", CASES,
                         ids=["%d-%s" % (k, c[0]) for k, c in enumerate(CASES)])
def test_case(type_, inputs, n_out, kw, expect):
    check(type_, inputs, n_out, expect=expect, **kw)


def test_every_type_of_the_family_is_covered():
    covered = set(UNARY) | set(UNARY_GRAD) | {c[0] for c in CASES} | {"Expand"}
    si.registered()
    mine = {t for t, f in si._REGISTRY.items() if f.__module__ == "recurrent._shape_elementwise"}
    mine |= {t for t in si.NOT_INFERRED if t == "Expand"}
    assert len(mine) == 127
    assert mine <= covered, sorted(mine - covered)


def test_accumulate_over_an_output_of_another_shape_or_dtype():
    """Accumulate's Y is float32 of X's shape whatever the blob held (it is zeroed first)."""
    workspace.FeedBlob("o0", np.arange(5, dtype=np.int32))
    check("Accumulate", [(2, 3)], expect=[(2, 3)], gamma=0.5)
    workspace.FeedBlob("o0", np.ones((3, 2), np.float32))
    check("Accumulate", [(2, 3)], expect=[(2, 3)])


def test_in_place_and_chained():
    """Outputs written over inputs, and a chain where each op reads the one before."""
    check("Add", [(2, 3), (3,)], outputs=["i0"], expect=[(2, 3)])
    check("Where", [ints(2, 1, lo=0, hi=2), (2, 3), (3,)], outputs=["i1"], expect=[(2, 3)])
    check("EnsureClipped", [(4, 3), np.array([0, 2], np.int32), (2, 3)], outputs=["i0"], min=0.6,
          expect=[(4, 3)])
    workspace.FeedBlob("x", data((2, 5), 0))
    workspace.FeedBlob("w", data((4, 5), 1))
    workspace.FeedBlob("b", data((4,), 2))
    net = core.Net("chain")
    net.FC(["x", "w", "b"], "y")
    net.Relu("y", "r")
    net.Add(["r", "b"], "s")
    net.LT(["s", "b"], "m")
    shapes, types = workspace.InferShapesAndTypes([net])
    assert (shapes["s"], types["s"], shapes["m"], types["m"]) == ([2, 4], F, [2, 4], I)
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("m").shape == (2, 4)


def test_blob_dimensions_and_types():
    """Shapes without types: dtype UNDEFINED passed through, or what the op always gives."""
    net = core.Net("dims")
    net.Add(["a", "b"], "c")
    net.EQ(["c", "a"], "e")
    net.Sin("a", "s")
    net.FC(["a", "w", "bias"], "y")
    net.Cast("y", "yi", to=core.DataType.INT32)
    shapes, types = workspace.InferShapesAndTypes(
        [net], blob_dimensions={"a": [2, 3], "b": [3], "w": [5, 3], "bias": [5]})
    assert shapes == {"a": [2, 3], "b": [3], "w": [5, 3], "bias": [5], "c": [2, 3], "e": [2, 3], "s": [2, 3],
                      "y": [2, 5], "yi": [2, 5]}
    assert (types["c"], types["e"], types["s"], types["y"], types["yi"]) == (si.UNDEFINED, I, F, F, I)
    net = core.Net("dims2")
    net.Add(["p", "q"], "c")
    net.And(["c", "q"], "r")
    net.Cast("r", "f", to="float")
    shapes, types = workspace.InferShapesAndTypes([net], blob_dimensions={"p": [4, 1], "q": [3]},
                                                  blob_types={"p": I, "q": I})
    assert (shapes["c"], types["c"], shapes["r"], types["r"], types["f"]) == ([4, 3], I, [4, 3], I, F)


def test_not_inferred():
    """Expand's shape is its shape input's values; FCGradient's skipped outputs are left as they were."""
    assert "Expand" in si.NOT_INFERRED
    workspace.FeedBlob("i0", data((3, 1), 0))
    workspace.FeedBlob("i1", np.array([2, 3, 4], np.int32))
    net = make_net("Expand", 2, ["o"])
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert "o" not in shapes and shapes["i1"] == [3]
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("o").shape == (2, 3, 4)
    for k, spec in enumerate([(2, 3), (4, 3), (2, 4)]):
        workspace.FeedBlob("i%d" % k, data(spec, k))
    workspace.FeedBlob("db", np.zeros(4, np.float32))
    net = make_net("FCGradient", 3, ["dw", "db", "dx"], skip_db=1)
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert shapes["dw"] == [4, 3] and shapes["dx"] == [2, 3] and "db" not in shapes


# (type, inputs (fed), args, outputs): inputs the op refuses when it runs
REFUSED = [
    ("Add", [(2, 3), (4,)], {}, None),                                  # numpy shapes do not broadcast
    ("Mul", [(2, 3), (2,)], {"broadcast": 1}, None),                    # legacy: not a suffix
    ("Sub", [(2, 3), (3,)], {"broadcast": 1, "axis": 2}, None),         # legacy: axis out of range
    ("Div", [(3,), (2, 3)], {"broadcast": 1}, None),                    # legacy: B has more dims
    ("Add", [(2, 3), ints(2, 3)], {}, None),                            # dtypes differ
    ("Sin", [ints(2, 3)], {}, None),                                    # int32 into a float32 op
    ("And", [(2, 3), ints(2, 3)], {}, None),                            # float32 into a logical op
    ("Where", [(2,), (2, 3), (2, 3)], {"broadcast_on_rows": 1}, None),  # float32 condition
    ("SigmoidGradient", [(2, 3), (3, 2)], {}, None),                    # shapes must be equal
    ("SeluGradient", [(2, 3), (5,)], {}, None),                         # element counts differ
    ("Add", [(2, 3), (3,)], {}, ["i1"]),                                # in place over the smaller input
    ("Where", [ints(2, 1, lo=0, hi=2), (2, 3), (3,)], {}, ["i2"]),      # in place over the smaller input
    ("AddGradient", [(2, 4), (2, 3), (3,)], {}, None),                  # dC not of the result's shape
    ("DivGradient", [(4,), (2, 3), (2, 3)], {}, None),                  # B does not broadcast to C
    ("PowGradient", [(2, 3), (2, 3), (3,), (3, 2)], {}, ["o", "p"]),    # Y not of the result's shape
    ("FC", [(2, 3), (4, 5), (4,)], {}, None),                           # K differs
    ("FC", [(2, 3), (4, 3), (3,)], {}, None),                           # b not (N,)
    ("FC", [(2, 3), (4, 3), (4,)], {"axis": 2}, None),                  # axis out of range
    ("FCGradient", [(2, 3), (4, 3), (2, 5)], {}, None),                 # dY not M x N
    ("MatMul", [(2, 3), (4, 5)], {}, None),                             # inner dims differ
    ("MatMul", [(2, 3), (3, 4), (7,)], {}, None),                       # shape input of another size
    ("ElementwiseLinear", [(2, 3), (2,), (3,)], {}, None),              # a not (D,)
    ("Glu", [(2, 3)], {}, None),                                        # odd dim
    ("PRelu", [(2, 3, 4), (4,)], {}, None),                             # W not per channel
    ("Conditional", [np.array([1, 0, 1], np.int32), (2, 3), (2, 3)], {}, None),  # first dim differs
    ("WeightedSum", [(2, 3), (2,), (2, 3), (1,)], {}, None),            # weight of 2 elements
    ("MeanGradient", [(2, 3), (2, 3), (2,)], {}, ["o", "p"]),           # X1 does not broadcast to dY
    ("ExpandGradient", [(2, 3), (4,)], {}, None),                       # not an expansion
    ("SquareRootDivide", [(3, 2), (2,)], {}, None),                     # one scale per row
    ("RowMul", [(3, 2), (2,)], {}, None),                               # w not one per row
    ("RowMul", [(), (1,)], {}, None),                                   # mat 0-d
    ("ScaleBlobs", [(2, 3), ints(2)], {}, ["o", "p"]),                  # int32 input 1
    ("SumReduceLike", [(2, 3, 4), (5,)], {}, None),                     # B not a run of A's dims
    ("EnsureClipped", [(4, 3), np.array([0, 2], np.int32), (2, 2)], {}, ["i0"]),  # grad's shape
    ("ClipTensorByScaling", [(2, 3), (2,)], {"threshold": 1.0}, None),  # value not a scalar
]


@pytest.mark.parametrize("type_, inputs, kw, outputs", REFUSED,
                         ids=["%d-%s" % (k, c[0]) for k, c in enumerate(REFUSED)])
def test_refused(type_, inputs, kw, outputs):
    for k, spec in enumerate(inputs):
        workspace.FeedBlob("i%d" % k, data(spec, k))
    net = make_net(type_, len(inputs), outputs or ["o"], **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert workspace.InferShapesAndTypes([net]) == ({}, {})
    assert any(issubclass(w.category, RuntimeWarning) and type_ in str(w.message) for w in caught)
    with pytest.raises(Exception):
        workspace.RunNetOnce(net)


def test_random_broadcasts_agree_with_runs():
    """Random shapes and broadcast arguments for the binary ops and their gradients: the inference refuses
    exactly the inputs the run refuses, and gives the shapes and types the run gives otherwise."""
    r = np.random.RandomState(5)
    arg_sets = [{}, {"broadcast": 1}, {"broadcast": 1, "axis": 0}, {"broadcast": 1, "axis": 1},
                {"broadcast": 1, "axis": 2}, {"broadcast": 1, "axis_str": "C"}]

    def shape():
        return tuple(int(d) for d in r.choice([1, 1, 2, 3], r.randint(0, 4)))

    agreed = 0
    for it in range(300):
        a, b = shape(), shape()
        if r.rand() < 0.3:
            b = a[r.randint(0, len(a) + 1):]
        kw = arg_sets[r.randint(len(arg_sets))]
        type_ = ["Add", "Sub", "Div", "LT", "And", "Pow", "AddGradient", "DivGradient"][it % 8]
        if type_ in ("AddGradient", "DivGradient"):
            c = a if kw or r.rand() < 0.3 else tuple(np.broadcast_shapes(a, b)) if _fits(a, b) else a
            feeds, n_out = [c, a, b] + ([c] if type_ == "DivGradient" else []), 2
        else:
            feeds, n_out = [a, b], 1
        workspace.ResetWorkspace()
        for k, s in enumerate(feeds):
            workspace.FeedBlob("i%d" % k, ints(*s) if type_ == "And" else data(s, k))
        net = make_net(type_, len(feeds), ["o%d" % k for k in range(n_out)], **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            shapes, types = workspace.InferShapesAndTypes([net])
        try:
            workspace.RunNetOnce(net)
        except Exception:
            assert shapes == {}, (type_, feeds, kw, shapes)
            continue
        for k in range(n_out):
            got = workspace.FetchBlob("o%d" % k)
            assert shapes["o%d" % k] == list(got.shape), (type_, feeds, kw)
        agreed += 1
    assert agreed > 60


def _fits(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False
