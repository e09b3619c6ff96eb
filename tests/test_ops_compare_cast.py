"""Cast, Conditional (csrc/ops/cast.c), the comparison ops EQ / NE / LT / LE /
GT / GE and Div on int32 (csrc/ops/math.c), and their gradient makers
(recurrent/_grad_math.py): NumPy references (every 'to' spelling, the range
of each integer target, truncation toward zero, NaN, bool; comparisons with
each broadcast form, NaN, int32; Conditional; integer division with negative
operands), errors naming op, blob and position (zero divisor, INT32_MIN / -1,
out of range), the output untouched on those errors, a finite-difference test
of Cast float -> float, and bad input (at run and at net creation)."""

import numpy as np
import pytest

from recurrent import core, workspace
from op_helpers import assert_must_not_differentiate
from test_ops_clip_math import check_grads
from test_ops_math import f32, feed, op, run  # the same helpers

DT = core.DataType
I32 = np.iinfo(np.int32)


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


# ================================================================ Cast
# (enum value, names accepted, range of the integer target or None for floating targets, bool)
TARGETS = [
    (DT.FLOAT, ["float", "FLOAT", "Float"], None, False),
    (DT.DOUBLE, ["double", "DOUBLE"], None, False),
    (DT.FLOAT16, ["float16", "FLOAT16"], None, False),
    (DT.INT32, ["int32", "INT32", "Int32"], (I32.min, I32.max), False),
    (DT.INT64, ["int64", "INT64"], (I32.min, I32.max), False),
    (DT.INT16, ["int16", "INT16"], (-32768, 32767), False),
    (DT.INT8, ["int8", "INT8"], (-128, 127), False),
    (DT.UINT8, ["uint8", "UINT8"], (0, 255), False),
    (DT.BYTE, ["byte", "BYTE"], (0, 255), False),
    (DT.UINT16, ["uint16", "UINT16"], (0, 65535), False),
    (DT.BOOL, ["bool", "BOOL", "Bool"], None, True),
]


def cast_ref(x, rng_, is_bool):
    x = np.asarray(x)
    if is_bool:
        return (x != 0).astype(np.int32)
    if rng_ is None:
        return x.astype(np.float32)
    return np.trunc(x.astype(np.float64)).astype(np.int32)


@pytest.mark.parametrize("target", TARGETS, ids=[t[1][0] for t in TARGETS])
def test_cast_every_spelling_float_input(rng, target):
    enum, names, rng_, is_bool = target
    x = f32(rng, 3, 4, lo=-3.0, hi=3.0) * 10
    x[0, 0], x[0, 1], x[0, 2] = 0.0, -0.0, -0.99   # zero, negative zero, truncates to 0
    if rng_ is not None and rng_[0] == 0:
        x = np.abs(x)
    feed(x=x)
    want = cast_ref(x, rng_, is_bool)
    for to in [enum] + names:
        y = run("Cast", ["x"], ["y"], to=to)
        assert y.dtype == want.dtype and y.shape == (3, 4)
        np.testing.assert_array_equal(y, want, err_msg=str(to))


@pytest.mark.parametrize("target", TARGETS, ids=[t[1][0] for t in TARGETS])
def test_cast_int_input(rng, target):
    enum, names, rng_, is_bool = target
    lo, hi = (-1000, 1000) if rng_ is None else (max(rng_[0], -1000), min(rng_[1], 1000))
    x = rng.randint(lo, hi + 1, size=(5, 2)).astype(np.int32)
    x[0, 0] = 0
    feed(x=x)
    y = run("Cast", ["x"], ["y"], to=names[0])
    np.testing.assert_array_equal(y, cast_ref(x, rng_, is_bool))
    assert y.dtype == (np.float32 if rng_ is None and not is_bool else np.int32)


def test_cast_truncates_toward_zero():
    x = np.array([2.9, -2.9, 0.5, -0.5, 1e9, -1e9, 7.0, -7.0], np.float32)
    feed(x=x)
    np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to="int32"),
                                  [2, -2, 0, 0, 1000000000, -1000000000, 7, -7])


def test_cast_int32_to_float_rounds_as_float32():
    x = np.array([2 ** 24 + 1, -(2 ** 24) - 1, I32.max, I32.min, 3], np.int32)
    feed(x=x)
    y = run("Cast", ["x"], ["y"], to=DT.FLOAT)
    np.testing.assert_array_equal(y, x.astype(np.float32))


@pytest.mark.parametrize("target", [t for t in TARGETS if t[2] is not None], ids=lambda t: t[1][0])
def test_cast_range_edges(target):
    enum, names, (lo, hi), _ = target
    ok = np.array([lo, hi], np.float64)
    if hi < 2 ** 24:   # exactly representable in float32
        feed(x=ok.astype(np.float32))
        np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to=enum), [lo, hi])
        feed(x=np.array([lo - 0.5, hi + 0.9], np.float32))   # truncate into the range
        np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to=enum), [lo, hi])
        bad = np.array([0, 0, hi + 1], np.float32)
        feed(x=bad)
        raises(ValueError, r"op Cast #0: input 0 blob 'x' \(3,\) float32: element 2 = %d cannot be cast "
                           r"to %s: "
               r"out of the range \[%d, %d\]" % (hi + 1, names[1], lo, hi), op("Cast", ["x"], ["y"], to=enum))
        feed(x=np.array([lo - 1, 0], np.float32))
        raises(ValueError, r"element 0 = %d cannot be cast to %s" % (lo - 1, names[1]),
               op("Cast", ["x"], ["y"], to=enum))
    # int32 input
    if hi < I32.max:
        feed(x=np.array([lo, hi, 5, hi + 1], np.int32))
        raises(ValueError, r"input 0 blob 'x' \(4,\) int32: element 3 = %d cannot be cast to %s: out of the "
               r"range" % (hi + 1, names[1]), op("Cast", ["x"], ["y"], to=enum))
        feed(x=np.array([lo, hi, 5], np.int32))
        np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to=enum), [lo, hi, 5])
    else:   # int32 -> int32 / int64: every value fits
        feed(x=np.array([I32.min, I32.max], np.int32))
        np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to=enum), [I32.min, I32.max])


@pytest.mark.parametrize("to", ["int32", "int64"])
def test_cast_float_beyond_int32(to):
    feed(x=np.array([1.0, 2.0 ** 31], np.float32))   # 2^31 does not fit int32
    raises(ValueError, r"element 1 = 2147483648 cannot be cast to %s" % to.upper(),
           op("Cast", ["x"], ["y"], to=to))
    feed(x=np.array([-(2.0 ** 31), 1.0], np.float32))   # INT32_MIN fits
    np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to=to), [I32.min, 1])
    if to == "int64":
        feed(x=np.array([3e10], np.float32))
        raises(ValueError, r"INT64 is stored as int32, our integer dtype", op("Cast", ["x"], ["y"], to=to))


@pytest.mark.parametrize("v", [np.nan, np.inf, -np.inf])
def test_cast_nan_inf_to_int(v):
    feed(x=np.array([1.5, v], np.float32))
    pat = "NaN has no integer value" if np.isnan(v) else "out of the range"
    raises(ValueError, r"op Cast #0: input 0 blob 'x' \(2,\) float32: element 1 = -?(nan|inf) cannot be "
                       r"cast to "
           r"INT8: " + pat, op("Cast", ["x"], ["y"], to="int8"))


def test_cast_nan_inf_to_float_and_bool():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45], np.float32)
    feed(x=x)
    y = run("Cast", ["x"], ["y"], to="double")
    np.testing.assert_array_equal(y, x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to="bool"), [1, 1, 1, 0, 0, 1])


def test_cast_error_leaves_output_and_in_place_input_untouched():
    x = np.array([1.5, 300.0], np.float32)
    feed(x=x, y=np.array([9, 9, 9], np.int32))
    raises(ValueError, "cannot be cast to UINT8", op("Cast", ["x"], ["y"], to="uint8"))
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [9, 9, 9])
    raises(ValueError, "cannot be cast to UINT8", op("Cast", ["x"], ["x"], to="uint8"))
    got = workspace.FetchBlob("x")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("to,dtype", [("int32", np.int32), ("float", np.float32), ("bool", np.int32)])
def test_cast_in_place(rng, to, dtype):
    x = f32(rng, 4, 3, lo=-5, hi=5)
    feed(x=x)
    y = run("Cast", ["x"], ["x"], to=to)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, cast_ref(x, None if to == "float" else (0, 0), to == "bool"))
    feed(i=np.array([-3, 0, 4], np.int32))
    np.testing.assert_array_equal(run("Cast", ["i"], ["i"], to="float"), [-3.0, 0.0, 4.0])


def test_cast_empty_and_scalar():
    feed(x=np.zeros((2, 0), np.float32), s=np.array(-2.5, np.float32))
    y = run("Cast", ["x"], ["y"], to="int32")
    assert y.shape == (2, 0) and y.dtype == np.int32
    y = run("Cast", ["s"], ["y"], to="int8")
    assert y.shape == () and y == -2


@pytest.mark.parametrize("to,exc,pat", [
    (DT.STRING, ValueError, r"argument 'to'=4 is not a supported DataType"),
    (DT.UNDEFINED, ValueError, r"argument 'to'=0 is not a supported DataType"),
    (11, ValueError, r"argument 'to'=11 is not a supported DataType"),
    (-1, ValueError, r"argument 'to'=-1 is not"),
    ("string", ValueError, r"argument 'to'='string' is not a supported DataType name"),
    ("float32", ValueError, r"argument 'to'='float32' is not a supported DataType name"),
    ("", ValueError, r"argument 'to'='' is not"),
    ("x" * 100, ValueError, r"argument 'to'='x{64}' is not"),
    (1.0, TypeError, r"argument 'to' must be an int or a string DataType"),
    ([1], TypeError, r"argument 'to' must be an int or a string DataType"),
])
def test_cast_bad_to(to, exc, pat):
    feed(x=np.ones(2, np.float32))
    raises(exc, r"op Cast #0: " + pat, op("Cast", ["x"], ["y"], to=to))
    # at net creation too: nothing runs
    net = core.Net("n")
    net.Cast(["x"], ["y"], to=to)
    with pytest.raises(exc, match=pat):
        workspace.CreateNet(net)
    if workspace.HasBlob("y"):   # created, never written (FetchBlob describes it, as Caffe2's)
        assert workspace.FetchBlob("y") == b"y, a C++ native class of type nullptr (uninitialized)."


def test_cast_missing_to_and_bad_from_type():
    feed(x=np.ones(2, np.float32))
    feed(i=np.array([3, -2], np.int32))
    np.testing.assert_array_equal(run("Cast", ["i"], ["y"]), np.array([3.0, -2.0], np.float32))  # to: FLOAT
    assert workspace.FetchBlob("y").dtype == np.float32
    raises(ValueError, r"argument 'from_type'='str' is not", op("Cast", ["x"], ["y"], to=1, from_type="str"))
    np.testing.assert_array_equal(run("Cast", ["x"], ["y"], to=1, from_type="float"), [1.0, 1.0])


def test_cast_missing_blob():
    raises(KeyError, r"op Cast #0: input 0 blob 'nope' does not exist", op("Cast", ["nope"], ["y"], to=1))


# ---------------------------------------------------------------- Cast's gradient
@pytest.mark.parametrize("to", ["float", DT.DOUBLE, DT.FLOAT16])
def test_cast_float_gradient_finite_differences(rng, to):
    o = op("Cast", ["x"], ["y"], to=to)
    check_grads(o, [f32(rng, 3, 4)])
    ops, g = G(o, ["y_grad"])
    assert g == ["x_grad"] and [p.type for p in ops] == ["Cast"]


@pytest.mark.parametrize("to", ["int32", DT.INT64, "bool", DT.UINT8])
def test_cast_to_integer_has_no_gradient(to):
    assert G(op("Cast", ["x"], ["y"], to=to), ["y_grad"]) == ([], [None])


def test_cast_from_integer_type_has_no_gradient():
    assert G(op("Cast", ["x"], ["y"], to="float", from_type="int32"), ["y_grad"]) == ([], [None])
    ops, g = G(op("Cast", ["x"], ["y"], to="float", from_type=DT.FLOAT), ["y_grad"])
    assert g == ["x_grad"]


def test_cast_gradient_through_a_net(rng):
    # y = Cast(x) * w: x's gradient is w (the Cast passes it through)
    net = core.Net("n")
    net.Cast(["x"], ["xc"], to="double")
    net.Mul(["xc", "w"], ["y"])
    gmap = net.AddGradientOperators({"y": "dy"})
    x, w, dy = f32(rng, 5), f32(rng, 5), f32(rng, 5)
    feed(x=x, w=w, dy=dy)
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob(gmap["x"]), w * dy, rtol=1e-6)


# ================================================================ comparisons
CMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
       "GE": np.greater_equal}


def legacy_ref(fn, a, b, axis=-1):
    """Caffe2's legacy broadcast: B matches A's dims from axis (-1: a suffix)."""
    ax = a.ndim - b.ndim if axis == -1 else axis
    shape = (1,) * ax + b.shape + (1,) * (a.ndim - ax - b.ndim)
    return fn(a, b.reshape(shape)).astype(np.int32)


def rand_pair(rng, dtype, shape_a, shape_b):
    if dtype == np.float32:
        a = np.round(f32(rng, *shape_a, lo=-2, hi=2) * 2) / 2   # many ties
        b = np.round(f32(rng, *shape_b, lo=-2, hi=2) * 2) / 2
        return a.astype(np.float32), b.astype(np.float32)
    return (rng.randint(-3, 4, size=shape_a).astype(np.int32),
            rng.randint(-3, 4, size=shape_b).astype(np.int32))


@pytest.mark.parametrize("type_", list(CMP))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_compare_same_shape(rng, type_, dtype):
    a, b = rand_pair(rng, dtype, (4, 5), (4, 5))
    feed(a=a, b=b)
    c = run(type_, ["a", "b"], ["c"])
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, CMP[type_](a, b).astype(np.int32))
    assert 0 < c.sum() < c.size or type_ in ("EQ", "NE")


@pytest.mark.parametrize("type_", list(CMP))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("sa,sb,axis", [((2, 3, 4), (4,), None), ((2, 3, 4), (3, 4), None),
                                         ((2, 3, 4), (3,), 1), ((2, 3, 4), (2,), 0), ((2, 3, 4), (1,), None),
                                         ((2, 3, 4), (3, 1), 1), ((5,), (1,), None), ((2, 3, 4), (), None)])
def test_compare_legacy_broadcast(rng, type_, dtype, sa, sb, axis):
    a, b = rand_pair(rng, dtype, sa, sb)
    feed(a=a, b=b)
    args = {"broadcast": 1}
    if axis is not None:
        args["axis"] = axis
    c = run(type_, ["a", "b"], ["c"], **args)
    ref = legacy_ref(CMP[type_], a, b, -1 if axis is None else axis)
    assert c.shape == sa and c.dtype == np.int32
    np.testing.assert_array_equal(c, ref)


def test_compare_rnn_cell_form():
    # rnn_cell: GT([seq_lengths (N,), timestep (1,)], broadcast=1)
    feed(s=np.array([3, 1, 0, 2], np.int32), t=np.array([1], np.int32))
    np.testing.assert_array_equal(run("GT", ["s", "t"], ["v"], broadcast=1), [1, 0, 0, 1])
    np.testing.assert_array_equal(run("LE", ["s", "t"], ["v"], broadcast=1), [0, 1, 1, 0])


@pytest.mark.parametrize("type_", list(CMP))
def test_compare_nan_is_ieee(type_):
    a = np.array([np.nan, np.nan, 1.0, np.inf, -np.inf, 0.0], np.float32)
    b = np.array([np.nan, 1.0, np.nan, np.inf, np.inf, -0.0], np.float32)
    feed(a=a, b=b)
    with np.errstate(invalid="ignore"):
        ref = CMP[type_](a, b).astype(np.int32)
    np.testing.assert_array_equal(run(type_, ["a", "b"], ["c"]), ref)
    assert ref[0] == (type_ == "NE")


def test_compare_int32_extremes():
    a = np.array([I32.min, I32.max, -1, 0], np.int32)
    b = np.array([I32.max, I32.min, -1, 0], np.int32)
    feed(a=a, b=b)
    np.testing.assert_array_equal(run("LT", ["a", "b"], ["c"]), [1, 0, 0, 0])
    np.testing.assert_array_equal(run("GE", ["a", "b"], ["c"]), [0, 1, 1, 1])


def test_compare_same_blob_both_inputs_and_empty():
    feed(a=np.array([1.0, np.nan], np.float32), e=np.zeros((0, 3), np.int32))
    np.testing.assert_array_equal(run("EQ", ["a", "a"], ["c"]), [1, 0])
    c = run("GT", ["e", "e"], ["c"])
    assert c.shape == (0, 3) and c.dtype == np.int32


@pytest.mark.parametrize("type_", list(CMP))
def test_compare_has_no_gradient(type_):
    assert_must_not_differentiate(op(type_, ["a", "b"], ["c"]), 2)


def test_compare_bad_input():
    feed(a=np.ones((2, 3), np.float32), i=np.ones((2, 3), np.int32), b=np.ones(3, np.float32),
         w=np.ones(4, np.float32))
    raises(TypeError, r"op GT #0: input 1 blob 'i' \(2, 3\) int32 must have the dtype of input 0 blob 'a' "
           r"\(2, 3\) float32", op("GT", ["a", "i"], ["c"]))
    raises(TypeError, r"op LT #0: input 1 blob 'a' \(2, 3\) float32 must have the dtype of input 0 blob 'i'",
           op("LT", ["i", "a"], ["c"]))
    raises(ValueError, r"^op EQ #0: input 0 blob 'a' of shape \(2, 3\) float32 and input 1 blob 'w' of shape "
                       r"\(4,\) float32 do not broadcast \(numpy-style, dims aligned from the last\): "
                       r"dim 1 of 'a' is 3 but dim 0 of 'w' is 4$", op("EQ", ["a", "w"], ["c"]))
    raises(ValueError, r"op NE #0: cannot broadcast input 1 blob 'w' of shape \(4,\) float32 to input 0 "
                       r"blob 'a'",
           op("NE", ["a", "w"], ["c"], broadcast=1))
    raises(ValueError, r"op GE #0: axis=2 is out of range", op("GE", ["a", "b"], ["c"], broadcast=1, axis=2))
    raises(ValueError, r"op LE #0: argument 'axis' needs broadcast=1", op("LE", ["a", "a"], ["c"], axis=0))
    raises(KeyError, r"op GT #0: input 1 blob 'nope' does not exist", op("GT", ["a", "nope"], ["c"]))
    for i in range(2):
        ins = ["a", "b"]
        raises(ValueError, r"op GT #0: input %d and output 0 are the same blob '%s'" % (i, ins[i]),
               op("GT", ins, [ins[i]], broadcast=1))
    # the workspace stays usable
    np.testing.assert_array_equal(run("GT", ["a", "b"], ["c"], broadcast=1), np.zeros((2, 3), np.int32))


def test_compare_shape_checked_at_net_creation():
    feed(a=np.ones((2, 3), np.float32), b=np.ones(4, np.float32), i=np.ones((2, 3), np.int32))
    for ins, pat in [(["a", "b"], r"net 'n\w*': op LT #0: input 0 blob 'a' of shape \(2, 3\) float32 and "
                                  r"input 1 blob 'b' of shape \(4,\) float32 do not broadcast"),
                     (["a", "i"], r"net 'n\w*': op LT #0: input 1 blob 'i' \(2, 3\) int32 must have the "
                                  r"dtype")]:
        net = core.Net("n")
        net.LT(ins, ["c"])
        with pytest.raises((ValueError, TypeError), match=pat):
            workspace.CreateNet(net)


# ================================================================ Conditional
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("shape", [(5,), (5, 3), (5, 2, 3), (0, 4)])
def test_conditional_vs_numpy(rng, dtype, shape):
    N = shape[0]
    cond = rng.randint(-2, 3, size=N).astype(np.int32)   # nonzero (incl. negative) is true
    if N:
        cond[0], cond[-1] = 0, 7
    t, f = (rng.uniform(-5, 5, shape).astype(dtype) for _ in range(2))
    feed(c=cond, t=t, f=f)
    y = run("Conditional", ["c", "t", "f"], ["y"])
    ref = np.where((cond != 0).reshape((N,) + (1,) * (len(shape) - 1)), t, f)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("target", ["t", "f"])
def test_conditional_in_place(rng, target):
    cond = np.array([1, 0, 1, 0], np.int32)
    t, f = f32(rng, 4, 2), f32(rng, 4, 2)
    feed(c=cond, t=t, f=f)
    y = run("Conditional", ["c", "t", "f"], [target])
    np.testing.assert_array_equal(y, np.where(cond[:, None] != 0, t, f))


def test_conditional_keeps_nan_bits():
    t = np.array([np.nan, -0.0], np.float32)
    f = np.array([1.0, 2.0], np.float32)
    feed(c=np.array([1, 1], np.int32), t=t, f=f)
    y = run("Conditional", ["c", "t", "f"], ["y"])
    assert np.isnan(y[0]) and np.signbit(y[1])


def test_conditional_has_no_gradient():
    assert G(op("Conditional", ["c", "t", "f"], ["y"]), ["y_grad"]) == ([], [None, None, None])


def test_conditional_bad_input():
    feed(c=np.array([1, 0, 1], np.int32), cf=np.array([1.0, 0.0, 1.0], np.float32),
         c2=np.ones((3, 1), np.int32),
         t=np.ones((3, 2), np.float32), f=np.zeros((3, 2), np.float32), fi=np.zeros((3, 2), np.int32),
         f4=np.zeros((3, 4), np.float32), t4=np.ones((4, 2), np.float32), s=np.array(1.0, np.float32))
    C = "op Conditional #0: "
    raises(TypeError, C + r"input 0 blob 'cf' must be int32, got \(3,\) "
                          r"float32", op("Conditional", ["cf", "t", "f"],
                                                                                      ["y"]))
    raises(ValueError, C + r"input 0 blob 'c2' must have 1 dims, got \(3, 1\) int32",
           op("Conditional", ["c2", "t", "f"], ["y"]))
    raises(TypeError, C + r"input 2 blob 'fi' \(3, 2\) int32 must have the dtype of input 1 blob 't' \(3, "
                          r"2\) float32",
           op("Conditional", ["c", "t", "fi"], ["y"]))
    raises(ValueError, C + r"input 2 blob 'f4' \(3, 4\) float32 must have the shape of input 1 blob 't' "
                           r"\(3, 2\)",
           op("Conditional", ["c", "t", "f4"], ["y"]))
    raises(ValueError, C + r"input 1 blob 't4' \(4, 2\) float32 must have first dim 3 \(the length of "
                           r"input 0 "
           r"blob 'c' \(3,\) int32\)", op("Conditional", ["c", "t4", "t4"], ["y"]))
    raises(ValueError, C + r"input 1 blob 's' \(\) float32 must have first dim 3",
           op("Conditional", ["c", "s", "s"], ["y"]))
    raises(ValueError, C + r"input 0 and output 0 are the same blob "
                           r"'c'", op("Conditional", ["c", "t", "f"], ["c"]))
    raises(KeyError, C + r"input 2 blob 'nope' does not exist", op("Conditional", ["c", "t", "nope"], ["y"]))
    net = core.Net("n")
    net.Conditional(["c", "t", "f4"], ["y"])
    with pytest.raises(ValueError, match=r"net 'n\w*': op Conditional #0: input 2 blob 'f4'"):
        workspace.CreateNet(net)
    np.testing.assert_array_equal(run("Conditional", ["c", "t", "f"], ["y"]), [[1, 1], [0, 0], [1, 1]])


# ================================================================ Div on int32
def int_div_ref(a, b):
    """C's integer division (truncation toward zero), in int64."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(np.int32)


def nonzero_ints(rng, *shape, lo=-20, hi=21):
    x = rng.randint(lo, hi, size=shape).astype(np.int32)
    x[x == 0] = 3
    return x


def test_int_div_signs():
    a = np.array([7, -7, 7, -7, 0, 6, -6, 1, -1], np.int32)
    b = np.array([2, 2, -2, -2, 5, 3, 3, 2, 2], np.int32)
    feed(a=a, b=b)
    c = run("Div", ["a", "b"], ["c"])
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, [3, -3, -3, 3, 0, 2, -2, 0, 0])
    np.testing.assert_array_equal(c, int_div_ref(a, b))


@pytest.mark.parametrize("sa,sb,axis", [((3, 4), (3, 4), None), ((2, 3, 4), (4,), -1), ((2, 3, 4), (3,), 1),
                                         ((2, 3, 4), (2, 3), 0), ((5,), (1,), -1), ((2, 3), (), -1)])
def test_int_div_broadcast(rng, sa, sb, axis):
    a = rng.randint(-100, 101, size=sa).astype(np.int32)
    b = nonzero_ints(rng, *sb)
    feed(a=a, b=b)
    args = {} if axis is None else {"broadcast": 1, "axis": axis}
    c = run("Div", ["a", "b"], ["c"], **args)
    if axis is None:
        ref = int_div_ref(a, b)
    else:
        bb = b.reshape(-1) if b.ndim else b.reshape(1)
        ax = a.ndim - b.ndim if axis == -1 else axis
        shape = (1,) * ax + b.shape + (1,) * (a.ndim - ax - b.ndim) if b.ndim else (1,) * a.ndim
        ref = int_div_ref(a, bb.reshape(shape))
    np.testing.assert_array_equal(c, ref)


def test_int_div_extremes_and_in_place():
    a = np.array([I32.min, I32.max, I32.min, I32.max, -5], np.int32)
    b = np.array([1, -1, 2, I32.min, I32.min], np.int32)
    feed(a=a, b=b)
    np.testing.assert_array_equal(run("Div", ["a", "b"], ["c"]), [I32.min, -I32.max, I32.min // 2, 0, 0])
    np.testing.assert_array_equal(run("Div", ["a", "b"], ["a"]), [I32.min, -I32.max, I32.min // 2, 0, 0])
    feed(a=a)
    np.testing.assert_array_equal(run("Div", ["a", "b"], ["b"]), [I32.min, -I32.max, I32.min // 2, 0, 0])


def test_int_div_by_zero_names_position_and_leaves_output():
    feed(a=np.array([[1, 2, 3], [4, 5, 6]], np.int32), b=np.array([1, 0, 2], np.int32),
         c=np.array([9], np.int32))
    raises(ValueError, r"op Div #0: integer division by zero: input 1 blob 'b' \(3,\) int32 is 0 at flat "
                       r"position 1 "
           r"\(dividing element 1 of input 0 blob 'a' \(2, 3\) "
           r"int32\)", op("Div", ["a", "b"], ["c"], broadcast=1))
    np.testing.assert_array_equal(workspace.FetchBlob("c"), [9])
    raises(ValueError, r"is 0 at flat position 1", op("Div", ["a", "b"], ["a"], broadcast=1))
    np.testing.assert_array_equal(workspace.FetchBlob("a"), [[1, 2, 3], [4, 5, 6]])
    feed(z=np.array([[1, 1, 1], [1, 1, 0]], np.int32))
    raises(ValueError, r"input 1 blob 'z' \(2, 3\) int32 is 0 at flat position 5 \(dividing element 5",
           op("Div", ["a", "z"], ["c"]))
    # B over A's first dim (axis=0): B's position is not A's
    feed(a3=np.arange(6, dtype=np.int32).reshape(3, 2), b3=np.array([1, 0, 1], np.int32))
    raises(ValueError, r"input 1 blob 'b3' \(3,\) int32 is 0 at flat position 1 \(dividing element 2 of "
                       r"input 0 blob 'a3' \(3, 2\) int32\)",
           op("Div", ["a3", "b3"], ["c"], broadcast=1, axis=0))
    feed(e=np.zeros((0, 3), np.int32))   # nothing to divide: no error
    assert run("Div", ["e", "b"], ["c"], broadcast=1).shape == (0, 3)


def test_int_div_overflow():
    feed(a=np.array([[5, I32.min], [I32.min, 3]], np.int32), b=np.array([-1, 1], np.int32))
    raises(ValueError, r"op Div #0: integer overflow: element 2 of input 0 blob 'a' \(2, 2\) int32 is "
                       r"-2147483648 "
           r"and input 1 blob 'b' \(2,\) int32 is -1 at flat position "
           r"0", op("Div", ["a", "b"], ["c"], broadcast=1,
                                                                             axis=1))
    raises(ValueError, r"integer overflow: element 1 of input 0 blob 'a'",
           op("Div", ["a", "b"], ["c"], broadcast=1, axis=0))
    feed(a=np.array([[5, I32.min], [7, 3]], np.int32))
    np.testing.assert_array_equal(run("Div", ["a", "b"], ["c"], broadcast=1, axis=1),
                                  [[-5, I32.min], [-7, 3]])


def test_int_div_float_div_unchanged(rng):
    a, b = f32(rng, 3), np.array([2.0, 0.0, -4.0], np.float32)
    feed(a=a, b=b)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(run("Div", ["a", "b"], ["c"]), a / b)


def test_int_div_bad_input_and_gradient():
    feed(a=np.ones(3, np.int32), f=np.ones(3, np.float32), b=np.ones(4, np.int32))
    raises(TypeError, r"op Div #0: input 1 blob 'f' \(3,\) float32 must have the dtype of input 0 blob "
                      r"'a' \(3,\) "
           r"int32", op("Div", ["a", "f"], ["c"]))
    raises(TypeError, r"op Div #0: input 1 blob 'a' \(3,\) int32 must have the dtype of input 0 blob 'f'",
           op("Div", ["f", "a"], ["c"]))
    raises(ValueError, r"op Div #0: input 0 blob 'a' of shape \(3,\) int32 and input 1 blob 'b' of shape "
                       r"\(4,\) int32 do not broadcast", op("Div", ["a", "b"], ["c"]))
    net = core.Net("n")
    net.Div(["a", "b"], ["c"], broadcast=1)
    with pytest.raises(ValueError, match=r"net 'n\w*': op Div #0: cannot broadcast input 1 blob 'b'"):
        workspace.CreateNet(net)
    # a gradient through an int32 Div fails clearly when the gradient op runs
    net = core.Net("g")
    net.Div(["a", "a"], ["c"])
    net.Cast(["c"], ["cf"], to="float")
    net.Scale(["cf"], ["y"])
    net.AddGradientOperators({"y": "dy"})
    feed(dy=np.ones(3, np.float32))
    # DivGradient (dC, A, B, C): A is input 1
    with pytest.raises(TypeError, match=r"op DivGradient #\d+: input 1 blob 'a' \(3,\) int32 is int32: "
                                        r"Div on "
                       r"int32 inputs has no gradient"):
        workspace.RunNetOnce(net)
