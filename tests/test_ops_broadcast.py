"""Numpy-style broadcasting of Add, Sub, Mul, Div and the comparisons (without
broadcast=1), the logical ops And / Or / Xor / Not, and the broadcast gradient
ops AddGradient / SubGradient / MulGradient and DivGradient's (dC, A, B, C)
form (csrc/ops/bcast.c, csrc/ops/math.c, recurrent/_grad_math.py): NumPy
references over many shape pairs (0-d, (1,), rank differences, size 1 on both
sides, empty), float32 and int32, legacy (broadcast=1) vs numpy forms, bad
input with exact messages, in place, finite-difference gradients in several
broadcast forms, and gradients through a Net built with AddGradientOperators."""

import numpy as np
import pytest

from recurrent import core, workspace
from op_helpers import assert_must_not_differentiate
from test_ops_clip_math import check_grads
from test_ops_math import feed, op, run  # the same helpers


def raises(exc, pattern, o):
    with pytest.raises(exc, match=pattern):
        workspace.RunOperatorOnce(o)


# (A's shape, B's shape): every pair broadcasts numpy-style
PAIRS = [
    ((2, 3), (2, 3)),          # equal shapes: the elementwise path
    ((), ()),
    ((), (2, 3)),
    ((2, 3), ()),
    ((1,), (4,)),
    ((4,), (1,)),
    ((1,), ()),
    ((2, 3, 4), (4,)),         # rank differences
    ((4,), (2, 3, 4)),
    ((2, 3, 4), (3, 1)),
    ((3, 1), (1, 4)),          # both inputs stretched
    ((2, 1, 4), (3, 1)),
    ((5, 1, 1, 2), (1, 3, 2, 1)),
    ((1, 1), (2, 3)),
    ((0, 3), (1, 3)),          # empty results
    ((3, 1), (0,)),
    ((2, 0), (2, 1)),
]
PAIR_IDS = ["%s-%s" % (a, b) for a, b in PAIRS]

ARITH = [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.divide)]
CMP = [("EQ", np.equal), ("NE", np.not_equal), ("LT", np.less), ("LE", np.less_equal),
       ("GT", np.greater), ("GE", np.greater_equal)]


def arr(rng, shape, lo=-2.0, hi=2.0):
    return np.asarray(rng.uniform(lo, hi, shape), np.float32)


def nonzero(rng, shape):
    x = arr(rng, shape, 0.5, 2.0)
    return x * np.where(rng.rand(*shape) < 0.5, -1, 1).astype(np.float32)


def reduce_to(g, shape):
    """g (float64) summed over the dims where an input of ``shape`` was stretched."""
    g = np.asarray(g, np.float64)
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdims=True)
    return g.reshape(shape)


# ================================================================ forward: NumPy references
@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("kind,f", ARITH, ids=[k for k, _ in ARITH])
def test_arith_vs_numpy(rng, sa, sb, kind, f):
    a, b = arr(rng, sa), nonzero(rng, sb)
    feed(a=a, b=b)
    c = run(kind, ["a", "b"], ["c"])
    ref = f(a, b)
    assert c.dtype == np.float32 and c.shape == ref.shape
    np.testing.assert_array_equal(c, ref)   # one IEEE float32 operation per element: exact


@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_compare_vs_numpy(rng, sa, sb, dtype):
    # few distinct values, so that equality happens
    a = rng.randint(-2, 3, size=sa).astype(dtype)
    b = rng.randint(-2, 3, size=sb).astype(dtype)
    feed(a=a, b=b)
    for kind, f in CMP:
        c = run(kind, ["a", "b"], ["c"])
        assert c.dtype == np.int32
        np.testing.assert_array_equal(c, f(a, b).astype(np.int32), err_msg=kind)


def test_compare_nan_broadcast():
    feed(a=np.array([[np.nan], [1.0]], np.float32), b=np.array([1.0, np.nan], np.float32))
    for kind, f in CMP:
        np.testing.assert_array_equal(run(kind, ["a", "b"], ["c"]),
                                      f(workspace.FetchBlob("a"), workspace.FetchBlob("b")).astype(np.int32))


def int_div_ref(a, b):
    """C's truncating division (NumPy's // floors)."""
    a64, b64 = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
    q = np.abs(a64) // np.abs(b64)
    return (np.sign(a64) * np.sign(b64) * q).astype(np.int32)


@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
def test_int_div_vs_reference(rng, sa, sb):
    a = rng.randint(-50, 51, size=sa).astype(np.int32)
    b = rng.randint(1, 7, size=sb).astype(np.int32) * np.where(rng.rand(*sb) < 0.5, -1, 1).astype(np.int32)
    feed(a=a, b=b)
    c = run("Div", ["a", "b"], ["c"])
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, int_div_ref(a, b))


def test_int_div_broadcast_bad_divisor_names_positions():
    feed(a=np.arange(6, dtype=np.int32).reshape(2, 3), b=np.array([[1], [0]], np.int32),
         c=np.full((2, 3), 7, np.int32))
    # C = A / B, B (2, 1) stretched along dim 1: element 3 of A meets B's element 1
    raises(ValueError, r"^op Div #0: integer division by zero: input 1 blob 'b' \(2, 1\) int32 is 0 at flat "
                       r"position 1 \(dividing element 3 of input 0 blob 'a' \(2, 3\) int32\)$",
           op("Div", ["a", "b"], ["c"]))
    np.testing.assert_array_equal(workspace.FetchBlob("c"), np.full((2, 3), 7))   # untouched
    feed(a=np.array([5, np.iinfo(np.int32).min], np.int32), b=np.array([[1], [-1]], np.int32))
    raises(ValueError, r"^op Div #0: integer overflow: element 1 of input 0 blob 'a' \(2,\) int32 is "
                       r"-2147483648 and input 1 blob 'b' \(2, 1\) int32 is -1 at flat position 1",
           op("Div", ["a", "b"], ["c"]))


INT_ARITH = [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply)]


@pytest.mark.parametrize("kind,f", INT_ARITH, ids=[k for k, _ in INT_ARITH])
@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
def test_int_arith_vs_numpy(rng, sa, sb, kind, f):
    a = rng.randint(-1000, 1001, size=sa).astype(np.int32)
    b = rng.randint(-1000, 1001, size=sb).astype(np.int32)
    feed(a=a, b=b)
    c = run(kind, ["a", "b"], ["c"])
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, f(a, b))


@pytest.mark.parametrize("kind,f", INT_ARITH, ids=[k for k, _ in INT_ARITH])
def test_int_arith_legacy_broadcast_and_in_place(rng, kind, f):
    a = rng.randint(-100, 101, size=(2, 3, 4)).astype(np.int32)
    b = rng.randint(-100, 101, size=(3,)).astype(np.int32)
    feed(a=a, b=b)
    c = run(kind, ["a", "b"], ["a"], broadcast=1, axis=1)
    np.testing.assert_array_equal(c, f(a, b[None, :, None]))


INT32_MAX, INT32_MIN = np.iinfo(np.int32).max, np.iinfo(np.int32).min


@pytest.mark.parametrize("kind,x,y,sym", [("Add", INT32_MAX, 1, r"\+"), ("Add", INT32_MIN, -1, r"\+"),
                                          ("Sub", INT32_MIN, 1, "-"), ("Sub", 0, INT32_MIN, "-"),
                                          ("Mul", 65536, 32768, r"\*"), ("Mul", INT32_MIN, -1, r"\*")])
@pytest.mark.parametrize("bshape", [(2,), (2, 1)], ids=["same", "bcast"])
def test_int_arith_overflow_is_an_error_before_writing(kind, x, y, sym, bshape):
    """The exact result (as Caffe2's int64 would hold it) must fit int32; else a ValueError names both
    elements, and the output (here input 0 itself, in place) is untouched."""
    a = np.array([0, x], np.int32)
    b = np.array([0, y], np.int32).reshape(bshape)
    out = "a" if bshape == (2,) else "c"
    feed(a=a, b=b, c=np.full((2, 2), 7, np.int32))
    # the first result element that does not fit, and the elements of A and B it comes from
    f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[kind]
    ia, ib = np.broadcast_arrays(np.arange(2).reshape(2), np.arange(2).reshape(bshape))
    exact = f(a.astype(np.int64)[ia], b.astype(np.int64).ravel()[ib]).ravel()
    jc = int(np.flatnonzero((exact > INT32_MAX) | (exact < INT32_MIN))[0])
    ja, jb = int(ia.ravel()[jc]), int(ib.ravel()[jc])
    xa, yb = int(a[ja]), int(b.ravel()[jb])
    raises(ValueError, r"^op %s #0: integer overflow: element %d of input 0 blob 'a' \(2,\) int32 is %d and "
                       r"element %d of input 1 blob 'b' %s int32 is %d: %d %s %d does not fit int32 "
                       r"\(result element %d\)$" % (kind, ja, xa, jb, re_shape(bshape), yb, xa, sym, yb, jc),
           op(kind, ["a", "b"], [out]))
    np.testing.assert_array_equal(workspace.FetchBlob("a"), a)
    np.testing.assert_array_equal(workspace.FetchBlob("c"), np.full((2, 2), 7))
    # the edges that fit
    feed(a=np.array([INT32_MAX - 1, INT32_MIN + 1], np.int32), b=np.array([1, -1], np.int32))
    np.testing.assert_array_equal(run("Add", ["a", "b"], ["c"]), [INT32_MAX, INT32_MIN])
    np.testing.assert_array_equal(run("Mul", ["a", "b"], ["c"]), [INT32_MAX - 1, INT32_MAX])


def re_shape(shape):
    return "\\(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + "\\)"


def test_float_div_by_zero_broadcast_is_ieee():
    feed(a=np.array([[1.0, -1.0, 0.0]], np.float32), b=np.array([[0.0], [2.0]], np.float32))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(run("Div", ["a", "b"], ["c"]),
                                      workspace.FetchBlob("a") / workspace.FetchBlob("b"))


# ---------------------------------------------------------------- legacy (broadcast=1) vs numpy
LEGACY = [
    # (A, B for broadcast=1 with axis, the same B in numpy form)
    ((2, 3, 4), (3, 4), {}, (3, 4)),
    ((2, 3, 4), (3,), {"axis": 1}, (3, 1)),
    ((2, 3, 4), (2,), {"axis": 0}, (2, 1, 1)),
    ((2, 3, 4), (2, 3), {"axis": 0}, (2, 3, 1)),
    ((2, 3, 4), (1,), {}, ()),
]


@pytest.mark.parametrize("sa,sb,args,sb_np", LEGACY)
@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div", "LT", "EQ"])
def test_legacy_and_numpy_forms_agree(rng, sa, sb, args, sb_np, kind):
    a, b = arr(rng, sa), nonzero(rng, sb)
    feed(a=a, b=b, bn=b.reshape(sb_np))
    legacy = run(kind, ["a", "b"], ["c"], broadcast=1, **args)
    numpy_ = run(kind, ["a", "bn"], ["c"])
    np.testing.assert_array_equal(legacy, numpy_)
    assert legacy.shape == sa


def test_legacy_form_still_refuses_what_only_numpy_takes(rng):
    # (3, 1) against (1, 4): both stretched is numpy-only; broadcast=1 keeps Caffe2's legacy rule
    feed(a=arr(rng, (3, 1)), b=arr(rng, (1, 4)))
    raises(ValueError, r"^op Add #0: cannot broadcast input 1 blob 'b' of shape \(1, 4\) float32 to input 0 "
                       r"blob 'a' of shape \(3, 1\) float32 at axis 0: dim 1 is 4 but dim 1 of 'a' is 1$",
           op("Add", ["a", "b"], ["c"], broadcast=1))
    assert run("Add", ["a", "b"], ["c"]).shape == (3, 4)


# ---------------------------------------------------------------- axis_str (Caffe2's semantic axis)
AXIS_STR = [
    # (A, B, args, B reshaped for NumPy)
    ((2, 3, 4, 5), (3,), {"axis_str": "C"}, (3, 1, 1)),
    ((2, 3, 4, 5), (5,), {"axis_str": "C", "order": "NHWC"}, (5,)),
    ((2, 3, 4, 5), (4, 5), {"axis_str": "H"}, (4, 5)),
    ((2, 3, 4, 5), (2, 3), {"axis_str": "N"}, (2, 3, 1, 1)),
    ((2, 3, 4, 5), (3, 4), {"axis_str": "W", "order": "NWHC"}, (3, 4, 1)),
    ((2, 3, 4, 5), (3,), {"axis_str": "C", "axis": -1}, (3, 1, 1)),
]


@pytest.mark.parametrize("sa,sb,args,sb_np", AXIS_STR)
@pytest.mark.parametrize("kind,f", ARITH + [("Pow", np.power)], ids=[k for k, _ in ARITH] + ["Pow"])
def test_axis_str_vs_numpy(rng, sa, sb, args, sb_np, kind, f):
    a, b = arr(rng, sa, 0.5, 2.0), nonzero(rng, sb)
    feed(a=a, b=b)
    c = run(kind, ["a", "b"], ["c"], broadcast=1, **args)
    np.testing.assert_allclose(c, f(a, b.reshape(sb_np)), rtol=1e-5)
    # SumReduceLike reduces A to B's shape over the same placement
    s = run("SumReduceLike", ["a", "b"], ["s"], **args)
    ref = reduce_to(np.broadcast_to(a, a.shape), (1,) * (len(sa) - len(sb_np)) + sb_np)
    np.testing.assert_allclose(s, ref.reshape(sb), rtol=1e-5)


@pytest.mark.parametrize("sa,sb,args,sb_np", AXIS_STR[:4])
@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div", "Pow"])
def test_axis_str_gradient(rng, sa, sb, args, sb_np, kind):
    a = arr(rng, sa, 0.5, 2.0) if kind == "Pow" else arr(rng, sa)
    b = nonzero(rng, sb) if kind == "Div" else arr(rng, sb)
    check_grads(op(kind, ["a", "b"], ["c"], broadcast=1, **args), [a, b])


def test_axis_str_bad_arguments():
    feed(a=np.ones((2, 3, 4, 5), np.float32), b=np.ones((3,), np.float32))
    raises(ValueError, r"^op Add #0: arguments 'axis' and 'axis_str' cannot be used together$",
           op("Add", ["a", "b"], ["c"], broadcast=1, axis=1, axis_str="C"))
    raises(ValueError, r"^op Mul #0: argument axis_str='CH' must be one letter of 'order'$",
           op("Mul", ["a", "b"], ["c"], broadcast=1, axis_str="CH"))
    raises(ValueError, r"^op Sub #0: argument axis_str='D' is not a letter of order='NHWC'$",
           op("Sub", ["a", "b"], ["c"], broadcast=1, axis_str="D", order="NHWC"))
    raises(ValueError, r"^op Add #0: argument 'axis_str' needs broadcast=1$",
           op("Add", ["a", "b"], ["c"], axis_str="C"))
    raises(ValueError, r"^op SumReduceLike #0: arguments 'axis' and 'axis_str' cannot be used together$",
           op("SumReduceLike", ["a", "b"], ["c"], axis=0, axis_str="C"))
    # a placement that does not fit B is the legacy broadcast error
    raises(ValueError, r"^op Add #0: cannot broadcast input 1 blob 'b'",
           op("Add", ["a", "b"], ["c"], broadcast=1, axis_str="H"))


# ---------------------------------------------------------------- bad input, in place
def test_shapes_that_do_not_broadcast():
    feed(a=np.ones((2, 3), np.float32), b=np.ones((4, 3, 1), np.float32), i=np.ones((2, 1), np.int32),
         j=np.ones((3, 3), np.int32))
    for kind in ("Add", "Sub", "Mul", "Div", "GE"):
        raises(ValueError, r"^op %s #0: input 0 blob 'a' of shape \(2, 3\) float32 and input 1 blob 'b' of "
                           r"shape \(4, 3, 1\) float32 do not broadcast \(numpy-style, dims aligned from the "
                           r"last\): dim 0 of 'a' is 2 but dim 1 of 'b' is 3$" % kind,
               op(kind, ["a", "b"], ["c"]))
    raises(ValueError, r"^op Div #0: input 0 blob 'i' of shape \(2, 1\) int32 and input 1 blob 'j' of shape "
                       r"\(3, 3\) int32 do not broadcast \(numpy-style, dims aligned from the last\): "
                       r"dim 0 of 'i' is 2 but dim 0 of 'j' is 3$", op("Div", ["i", "j"], ["c"]))
    # a mix of dtypes is still a TypeError, before any shape rule
    raises(TypeError, r"^op Div #0: input 1 blob 'i' \(2, 1\) int32 must have the dtype of input 0 blob 'a'",
           op("Div", ["a", "i"], ["c"]))
    raises(TypeError, r"^op Add #0: input 1 blob 'i' \(2, 1\) int32 must have the dtype of input 0 blob 'a'",
           op("Add", ["a", "i"], ["c"]))
    # the workspace stays usable
    assert run("Add", ["a", "a"], ["c"]).shape == (2, 3)


def test_do_not_broadcast_exact_message():
    feed(a=np.ones((2, 3), np.float32), b=np.ones((2, 2), np.float32))
    raises(ValueError, r"^op Mul #0: input 0 blob 'a' of shape \(2, 3\) float32 and input 1 blob 'b' of "
                       r"shape \(2, 2\) float32 do not broadcast \(numpy-style, dims aligned from the "
                       r"last\): dim 1 of 'a' is 3 but dim 1 of 'b' is 2$", op("Mul", ["a", "b"], ["c"]))


@pytest.mark.parametrize("kind,f", ARITH, ids=[k for k, _ in ARITH])
def test_in_place_when_the_result_has_that_inputs_shape(rng, kind, f):
    a, b = arr(rng, (2, 3)), nonzero(rng, (3,))
    feed(a=a, b=b)
    np.testing.assert_array_equal(run(kind, ["a", "b"], ["a"]), f(a, b))
    feed(a=nonzero(rng, (2, 1)), b=arr(rng, (2, 3)))
    a, b = workspace.FetchBlob("a"), workspace.FetchBlob("b")
    np.testing.assert_array_equal(run(kind, ["a", "b"], ["b"]), f(a, b))   # in place on B


@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div", "And"])
def test_in_place_refused_when_the_result_is_larger(rng, kind):
    dt = np.int32 if kind == "And" else np.float32
    feed(a=np.ones((3,), dt), b=np.ones((2, 1), dt))
    raises(ValueError, r"^op %s #0: output blob 'a' is input 0 of shape \(3,\) %s, but the result has the "
                       r"broadcast shape \(2, 3\) \(in place needs the result to have that input's shape\)$"
           % (kind, np.dtype(dt).name), op(kind, ["a", "b"], ["a"]))
    raises(ValueError, r"^op %s #0: output blob 'b' is input 1 of shape \(2, 1\) %s, but the result has the "
                       r"broadcast shape \(2, 3\)" % (kind, np.dtype(dt).name), op(kind, ["a", "b"], ["b"]))
    np.testing.assert_array_equal(workspace.FetchBlob("a"), np.ones(3))   # untouched
    np.testing.assert_array_equal(workspace.FetchBlob("b"), np.ones((2, 1)))


def test_shapes_checked_at_net_creation():
    feed(a=np.ones((2, 3), np.float32), b=np.ones((2,), np.float32), c=np.ones((3,), np.float32),
         i=np.ones(3, np.int32), j=np.ones((4,), np.int32))
    for kind in ("Add", "Div", "LT"):
        net = core.Net("n")
        getattr(net, kind)(["a", "b"], ["y"])
        with pytest.raises(ValueError, match=r"^net 'n\w*': op %s #0: input 0 blob 'a' of shape "
                                             r"\(2, 3\) float32 and input 1 blob 'b' of shape \(2,\) "
                                             r"float32 do not broadcast" % kind):
            workspace.CreateNet(net)
    net = core.Net("n")
    net.Xor(["i", "j"], ["y"])
    with pytest.raises(ValueError, match=r"^net 'n\w*': op Xor #0: input 0 blob 'i' of shape \(3,\) int32 "
                                         r"and input 1 blob 'j'"):
        workspace.CreateNet(net)
    net = core.Net("n")
    net.Mul(["a", "c"], ["y"])   # broadcasts: accepted, and runs
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("y").shape == (2, 3)


# ================================================================ gradients
GRAD_PAIRS = [
    ((2, 3), (2, 3)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 3, 4)),
    ((3, 1), (1, 4)),          # both stretched
    ((2, 1, 4), (3, 1)),
    ((), (2, 3)),              # 0-d
    ((2, 3), ()),
    ((1,), ()),
    ((2, 3), (1, 1)),
]
GRAD_IDS = ["%s-%s" % (a, b) for a, b in GRAD_PAIRS]


@pytest.mark.parametrize("sa,sb", GRAD_PAIRS, ids=GRAD_IDS)
@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div"])
def test_gradient_finite_differences(rng, sa, sb, kind):
    a = arr(rng, sa)
    b = nonzero(rng, sb) if kind == "Div" else arr(rng, sb)
    check_grads(op(kind, ["a", "b"], ["c"]), [a, b])


def grad_refs(kind, a, b, dc):
    a64, b64, dc64 = (np.asarray(x, np.float64) for x in (a, b, dc))
    if kind == "Add":
        ga, gb = dc64, dc64
    elif kind == "Sub":
        ga, gb = dc64, -dc64
    elif kind == "Mul":
        ga, gb = dc64 * b64, dc64 * a64
    else:
        ga, gb = dc64 / b64, -dc64 * (a64 / b64) / b64
    return (reduce_to(np.broadcast_to(ga, dc.shape), a.shape),
            reduce_to(np.broadcast_to(gb, dc.shape), b.shape))


@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div"])
def test_gradient_ops_vs_numpy(rng, sa, sb, kind):
    a, b = arr(rng, sa), nonzero(rng, sb)
    dc = arr(rng, np.broadcast(a, b).shape)
    feed(a=a, b=b, dc=dc)
    run(kind, ["a", "b"], ["c"])
    ins = ["dc", "a", "b"] + (["c"] if kind == "Div" else [])
    da, db = run(kind + "Gradient", ins, ["da", "db"])
    ra, rb = grad_refs(kind, a, b, dc)
    assert da.shape == sa and db.shape == sb and da.dtype == db.dtype == np.float32
    np.testing.assert_allclose(da, ra, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db, rb, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div"])
def test_gradient_sums_in_double(kind):
    # 2^24 + 1 + 1 + ... : float32 accumulation would lose every 1; double keeps them
    n = 1000
    a = np.ones((n, 1), np.float32)
    b = np.ones((1,), np.float32)
    dc = np.ones((n, 1), np.float32)
    dc[0, 0] = 2.0 ** 24
    feed(a=a, b=b, dc=dc)
    run(kind, ["a", "b"], ["c"])
    _, db = run(kind + "Gradient", ["dc", "a", "b"] + (["c"] if kind == "Div" else []), ["da", "db"])
    expect = np.float32(2.0 ** 24 + n - 1) * (-1 if kind in ("Sub", "Div") else 1)
    assert db[0] == expect


def test_gradient_equal_shapes_bitwise_the_elementwise_ops(rng):
    a, b, dc = arr(rng, (3, 4)), nonzero(rng, (3, 4)), arr(rng, (3, 4))
    feed(a=a, b=b, dc=dc)
    da, db = run("MulGradient", ["dc", "a", "b"], ["da", "db"])
    np.testing.assert_array_equal(da, dc * b)
    np.testing.assert_array_equal(db, dc * a)
    run("Div", ["a", "b"], ["c"])
    # the four-input DivGradient gives bitwise the legacy (B, C, dC) form's result
    new = run("DivGradient", ["dc", "a", "b", "c"], ["da", "db"])
    old = run("DivGradient", ["b", "c", "dc"], ["da", "db"])
    for x, y in zip(new, old):
        np.testing.assert_array_equal(x, y)
    da, db = run("SubGradient", ["dc", "a", "b"], ["da", "db"])
    np.testing.assert_array_equal(da, dc)
    np.testing.assert_array_equal(db, -dc)


@pytest.mark.parametrize("sa,sb,args", [((2, 3, 4), (3,), {"axis": 1}), ((2, 3, 4), (3, 4), {}),
                                        ((2, 3), (1,), {})])
@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div"])
def test_gradient_ops_legacy_broadcast(rng, sa, sb, args, kind):
    # <Op>Gradient with broadcast=1 follows the legacy rule, as Caffe2's
    a, b = arr(rng, sa), nonzero(rng, sb)
    dc = arr(rng, sa)
    feed(a=a, b=b, dc=dc)
    run(kind, ["a", "b"], ["c"], broadcast=1, **args)
    ins = ["dc", "a", "b"] + (["c"] if kind == "Div" else [])
    da, db = run(kind + "Gradient", ins, ["da", "db"], broadcast=1, **args)
    bn = b.reshape(b.shape + (1,) * (len(sa) - len(sb) - args.get("axis", len(sa) - len(sb))))
    ra, rb = grad_refs(kind, a, bn, dc)
    np.testing.assert_allclose(da, ra, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db, rb.reshape(sb), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["Add", "Sub", "Mul", "Div"])
def test_gradient_op_da_over_dc(rng, kind):
    # dA may be written over dC's blob, also when A was stretched (dC's blob then takes A's shape)
    a, b, dc = arr(rng, (3, 1)), nonzero(rng, (1, 4)), arr(rng, (3, 4))
    feed(a=a, b=b, dc=dc)
    run(kind, ["a", "b"], ["c"])
    ins = ["dc", "a", "b"] + (["c"] if kind == "Div" else [])
    ra, rb = grad_refs(kind, a, b, dc)
    da, db = run(kind + "Gradient", ins, ["dc", "db"])
    np.testing.assert_allclose(da, ra, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db, rb, rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("sc,sb", [((4, 3), (3,)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 1, 4)), ((3, 4), ()),
                                   ((5, 1, 2), (1, 2)), ((0, 3), (3,)), ((2, 3), (2, 3))])
@pytest.mark.parametrize("in_place", [False, True])
def test_div_gradient_three_inputs_numpy_broadcast(rng, sc, sb, in_place):
    # Caffe2's legacy-signature DivGradient (B, C, dC) without broadcast=1 broadcasts B to C numpy-style
    # (A had C's shape): dA = dC / B, dB = -dC C / B summed over the stretched dims (its test_div_legacy_grad)
    a, b, dc = arr(rng, sc), nonzero(rng, sb), arr(rng, sc)
    feed(a=a, b=b, dc=dc)
    run("Div", ["a", "b"], ["c"])
    da, db = run("DivGradient", ["b", "c", "dc"], ["dc" if in_place else "da", "db"])
    ra, rb = grad_refs("Div", a, b, dc)
    assert da.shape == sc and db.shape == sb
    np.testing.assert_allclose(da, ra, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(db, rb, rtol=1e-5, atol=1e-5)
    # the same as the four-input form, bitwise
    feed(dc=dc)
    new = run("DivGradient", ["dc", "a", "b", "c"], ["da4", "db4"])
    np.testing.assert_array_equal(new[0], da)
    np.testing.assert_array_equal(new[1], db)


def test_div_gradient_three_inputs_bad_broadcast():
    feed(b=np.ones((4,), np.float32), b2=np.ones((2, 3, 4), np.float32), c=np.ones((3, 5), np.float32),
         c2=np.ones((3, 4), np.float32), dc=np.ones((3, 5), np.float32), dc2=np.ones((3, 4), np.float32))
    raises(ValueError, r"^op DivGradient #0: input 1 blob 'c' of shape \(3, 5\) float32 and input 0 blob "
                       r"'b' of shape \(4,\) float32 do not broadcast",
           op("DivGradient", ["b", "c", "dc"], ["da", "db"]))
    raises(ValueError, r"^op DivGradient #0: input 0 blob 'b2' of shape \(2, 3, 4\) float32 must broadcast "
                       r"\(numpy-style\) to the shape of input 1 blob 'c2' \(3, 4\) float32 \(Div's "
                       r"output\)$",
           op("DivGradient", ["b2", "c2", "dc2"], ["da", "db"]))


def test_gradient_ops_bad_input():
    feed(a=np.ones((3, 1), np.float32), b=np.ones((4,), np.float32), dc=np.ones((3, 5), np.float32),
         c=np.ones((3, 4), np.float32), i=np.ones((3, 4), np.int32), bad=np.ones((2, 1), np.float32))
    raises(ValueError, r"^op AddGradient #0: input 0 blob 'dc' of shape \(3, 5\) float32 must have the shape "
                       r"\(3, 4\) of the forward result \(input 1 blob 'a' \(3, 1\) float32 with input 2 "
                       r"blob 'b' \(4,\) float32\)$", op("AddGradient", ["dc", "a", "b"], ["da", "db"]))
    raises(ValueError, r"^op MulGradient #0: input 1 blob 'a' of shape \(3, 1\) float32 and input 2 "
                       r"blob 'bad' of shape \(2, 1\) float32 do not broadcast",
           op("MulGradient", ["c", "a", "bad"], ["da", "db"]))
    raises(TypeError, r"^op SubGradient #0: input 0 blob 'i' must be float32",
           op("SubGradient", ["i", "a", "b"], ["da", "db"]))
    raises(ValueError, r"^op DivGradient #0: input 3 blob 'dc' of shape \(3, 5\) float32 must have the shape "
                       r"\(3, 4\)", op("DivGradient", ["c", "a", "b", "dc"], ["da", "db"]))
    raises(TypeError, r"^op DivGradient #0: input 3 blob 'i' \(3, 4\) int32 is int32: Div on int32 inputs "
                      r"has no gradient", op("DivGradient", ["c", "a", "b", "i"], ["da", "db"]))
    raises(ValueError, r"^op DivGradient #0: output 0 blob 'b' \(dA\) is input 2, which is not dC \(input 0 "
                       r"'c'\): only dC's blob may take dA$",
           op("DivGradient", ["c", "a", "b", "c"], ["b", "db"]))
    raises(ValueError, r"^op AddGradient #0: argument 'axis' needs broadcast=1",
           op("AddGradient", ["c", "a", "b"], ["da", "db"], axis=0))
    # outputs other than dA over dC are refused at creation
    with pytest.raises(ValueError, match=r"AddGradient.*'b'"):
        workspace.RunOperatorOnce(op("AddGradient", ["c", "a", "b"], ["da", "b"]))


# ---------------------------------------------------------------- the makers, and a Net's backward pass
def test_makers_give_caffe2_gradient_ops():
    G = core.GradientRegistry.GetGradientForOp
    for kind in ("Add", "Sub", "Mul"):
        ops, g = G(op(kind, ["a", "b"], ["y"]), ["y_grad"])
        assert g == ["a_grad", "b_grad"]
        assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
            (kind + "Gradient", ["y_grad", "a", "b"], ["a_grad", "b_grad"])]
    ops, g = G(op("Div", ["a", "b"], ["y"]), ["y_grad"])
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("DivGradient", ["y_grad", "a", "b", "y"], ["a_grad", "b_grad"])]
    # in place on A: dA is written over dC (A's gradient name is dC's), and dC stands for A's shape
    ops, g = G(op("Add", ["a", "b"], ["a"]), ["a_grad"])
    assert g == ["a_grad", "b_grad"]
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("AddGradient", ["a_grad", "a_grad", "b"], ["a_grad", "b_grad"])]
    ops, g = G(op("Div", ["a", "b"], ["a"]), ["a_grad"])
    assert [(p.type, list(p.input), list(p.output)) for p in ops] == [
        ("DivGradient", ["a_grad", "a_grad", "b", "a"], ["a_grad", "b_grad"])]
    # one blob twice: two names, summed by the backward pass
    ops, g = G(op("Sub", ["x", "x"], ["y"]), ["y_grad"])
    assert g == ["x_grad", "x_grad_autogen_sub_1"]
    # the legacy makers are unchanged
    ops, g = G(op("Add", ["a", "b"], ["y"], broadcast=1), ["y_grad"])
    assert [p.type for p in ops] == ["SumReduceLike"] and g == ["y_grad", "b_grad"]
    for kind in ("And", "Or", "Xor", "EQ"):
        assert_must_not_differentiate(op(kind, ["a", "b"], ["y"]), 2)
    assert_must_not_differentiate(op("Not", ["a"], ["y"]), 1)


@pytest.mark.parametrize("in_place", [False, True])
def test_net_backward_through_broadcasting_ops(rng, in_place):
    # r = ((x + w + w2) * u / v - z);  x (3, 1), w (1, 4), w2 (4,), u (4,), v (3, 1), z ()
    # in_place: s and p are written again (as attention's coverage sums do)
    x, w, w2, u = arr(rng, (3, 1)), arr(rng, (1, 4)), arr(rng, (4,)), arr(rng, (4,))
    v, z, dr = nonzero(rng, (3, 1)), arr(rng, ()), arr(rng, (3, 4))
    feed(x=x, w=w, w2=w2, u=u, v=v, z=z, dr=dr)
    net = core.Net("bc")
    s = net.Add(["x", "w"], "s")
    s = net.Add([s, "w2"], "s" if in_place else "s2")
    p = net.Mul([s, "u"], "p")
    q = net.Div([p, "v"], "p" if in_place else "q")
    net.Sub([q, "z"], "r")
    net.AddGradientOperators({"r": "dr"})
    workspace.RunNetOnce(net)
    x64, w64, w264, u64, v64, dr64 = (np.asarray(t, np.float64) for t in (x, w, w2, u, v, dr))
    s64 = x64 + w64 + w264
    dq = dr64
    dz = -dr64.sum()
    dp = dq / v64
    dv = reduce_to(-dq * (s64 * u64 / v64) / v64, (3, 1))
    ds = dp * u64
    du = reduce_to(dp * s64, (4,))
    dx, dw, dw2 = reduce_to(ds, (3, 1)), reduce_to(ds, (1, 4)), reduce_to(ds, (4,))
    np.testing.assert_allclose(workspace.FetchBlob("r"), s64 * u64 / v64 - z, rtol=1e-5, atol=1e-5)
    for name, ref in (("x", dx), ("w", dw), ("w2", dw2), ("u", du), ("v", dv), ("z", dz)):
        got = workspace.FetchBlob(name + "_grad")
        assert got.shape == np.shape(ref), name
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=name)


# ================================================================ And, Or, Xor, Not
LOGIC = [("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)]


@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
def test_logical_vs_numpy(rng, sa, sb):
    a = rng.randint(-2, 3, size=sa).astype(np.int32)   # nonzero (incl. negative) is true
    b = rng.randint(-2, 3, size=sb).astype(np.int32)
    feed(a=a, b=b)
    for kind, f in LOGIC:
        c = run(kind, ["a", "b"], ["c"])
        assert c.dtype == np.int32
        np.testing.assert_array_equal(c, f(a, b).astype(np.int32), err_msg=kind)


def test_logical_truth_table_and_not():
    feed(a=np.array([0, 0, 1, 1, -7, 5], np.int32), b=np.array([0, 1, 0, 1, 2, 0], np.int32))
    np.testing.assert_array_equal(run("And", ["a", "b"], ["c"]), [0, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(run("Or", ["a", "b"], ["c"]), [0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(run("Xor", ["a", "b"], ["c"]), [0, 1, 1, 0, 0, 1])
    np.testing.assert_array_equal(run("Not", ["a"], ["c"]), [1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(run("Not", ["a"], ["a"]), [1, 1, 0, 0, 0, 0])   # in place
    # in place, same shape (a is now [1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(run("And", ["a", "b"], ["a"]), [0, 1, 0, 0, 0, 0])
    feed(e=np.zeros((0, 2), np.int32), s=np.array(3, np.int32))
    assert run("Not", ["e"], ["c"]).shape == (0, 2)
    assert run("Not", ["s"], ["c"]).shape == () and run("Not", ["s"], ["c"]) == 0


@pytest.mark.parametrize("kind,f", LOGIC, ids=[k for k, _ in LOGIC])
def test_logical_legacy_broadcast(rng, kind, f):
    a = rng.randint(0, 2, size=(2, 3, 4)).astype(np.int32)
    b = rng.randint(0, 2, size=(3,)).astype(np.int32)
    feed(a=a, b=b)
    np.testing.assert_array_equal(run(kind, ["a", "b"], ["c"], broadcast=1, axis=1),
                                  f(a, b.reshape(3, 1)).astype(np.int32))


def test_logical_bad_input():
    feed(f=np.ones((2, 3), np.float32), i=np.ones((2, 3), np.int32), j=np.ones((4,), np.int32))
    for kind in ("And", "Or", "Xor"):
        raises(TypeError, r"^op %s #0: input 0 blob 'f' \(2, 3\) float32 must be int32 \(bool as 0 / 1; "
                          r"nonzero is true\)$" % kind, op(kind, ["f", "i"], ["c"]))
        raises(TypeError, r"^op %s #0: input 1 blob 'f' \(2, 3\) float32 must be int32" % kind,
               op(kind, ["i", "f"], ["c"]))
        raises(ValueError, r"^op %s #0: input 0 blob 'i' of shape \(2, 3\) int32 and input 1 blob 'j' of "
                           r"shape \(4,\) int32 do not broadcast" % kind, op(kind, ["i", "j"], ["c"]))
        raises(ValueError, r"^op %s #0: cannot broadcast input 1 blob 'j' of shape \(4,\) int32 to input 0 "
                           r"blob 'i'" % kind, op(kind, ["i", "j"], ["c"], broadcast=1))
    raises(TypeError, r"^op Not #0: input 0 blob 'f' \(2, 3\) float32 must be int32", op("Not", ["f"], ["c"]))
    raises(KeyError, r"op Not #0: input 0 blob 'nope' does not exist", op("Not", ["nope"], ["c"]))
    assert run("And", ["i", "i"], ["c"]).shape == (2, 3)   # still usable


# ================================================================ BitwiseAnd, BitwiseOr, BitwiseXor
BITWISE = [("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor)]


@pytest.mark.parametrize("sa,sb", PAIRS, ids=PAIR_IDS)
def test_bitwise_vs_numpy(rng, sa, sb):
    # every bit pattern: negative values, INT32_MIN / MAX
    a = rng.randint(np.iinfo(np.int32).min, np.iinfo(np.int32).max, size=sa, dtype=np.int64).astype(np.int32)
    b = rng.randint(np.iinfo(np.int32).min, np.iinfo(np.int32).max, size=sb, dtype=np.int64).astype(np.int32)
    feed(a=a, b=b)
    for kind, f in BITWISE:
        c = run(kind, ["a", "b"], ["c"])
        assert c.dtype == np.int32
        np.testing.assert_array_equal(c, f(a, b), err_msg=kind)


def test_bitwise_values_in_place_and_legacy_broadcast(rng):
    a = np.array([0, 1, 6, -1, np.iinfo(np.int32).min, 12], np.int32)
    b = np.array([3, 3, 3, 5, -1, 10], np.int32)
    feed(a=a, b=b)
    np.testing.assert_array_equal(run("BitwiseAnd", ["a", "b"], ["c"]), [0, 1, 2, 5, np.iinfo(np.int32).min, 8])
    np.testing.assert_array_equal(run("BitwiseOr", ["a", "b"], ["c"]), [3, 3, 7, -1, -1, 14])
    np.testing.assert_array_equal(run("BitwiseXor", ["a", "b"], ["c"]), a ^ b)
    np.testing.assert_array_equal(run("BitwiseXor", ["a", "b"], ["a"]), a ^ b)  # in place
    x = rng.randint(-50, 50, size=(2, 3, 4)).astype(np.int32)
    y = rng.randint(-50, 50, size=(3,)).astype(np.int32)
    feed(x=x, y=y)
    for kind, f in BITWISE:
        np.testing.assert_array_equal(run(kind, ["x", "y"], ["c"], broadcast=1, axis=1), f(x, y.reshape(3, 1)))


def test_bitwise_bad_input_and_no_gradient():
    feed(f=np.ones((2, 3), np.float32), i=np.ones((2, 3), np.int32), j=np.ones((4,), np.int32))
    for kind, _ in BITWISE:
        raises(TypeError, r"^op %s #0: input 0 blob 'f' \(2, 3\) float32 must be int32 \(the bitwise ops "
                          r"take integers\)$" % kind, op(kind, ["f", "i"], ["c"]))
        raises(TypeError, r"^op %s #0: input 1 blob 'f' \(2, 3\) float32 must be int32" % kind,
               op(kind, ["i", "f"], ["c"]))
        raises(ValueError, r"^op %s #0: input 0 blob 'i' of shape \(2, 3\) int32 and input 1 blob 'j' of "
                           r"shape \(4,\) int32 do not broadcast" % kind, op(kind, ["i", "j"], ["c"]))
        # checked when the net is created
        net = core.Net("bw_" + kind)
        getattr(net, kind)(["i", "j"], "c")
        with pytest.raises(ValueError, match=r"op %s #0: input 0 blob 'i'" % kind):
            workspace.CreateNet(net)
        assert_must_not_differentiate(op(kind, ["i", "i"], ["c"]), 2)
    assert run("BitwiseAnd", ["i", "i"], ["c"]).shape == (2, 3)   # still usable
