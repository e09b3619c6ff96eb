"""Segment reductions by lengths and the embedding-bag ops (csrc/ops/lengths_reduce.c) and their
gradient makers (recurrent/_grad_lengths_reduce.py): NumPy references (empty segments, repeated
indices, rank > 2 data, no rows, no segments), the order and precision of the sums (double, in
order, bitwise), every gradient op against NumPy and by finite differences (sparse gradients
compared dense), bad input with exact messages (at run and at net creation, outputs untouched),
and an embedding bag (SparseLengthsSum) + FC trained with build_adagrad against NumPy."""

import numpy as np
import pytest

from recurrent import core, model_helper, optimizer, workspace
from test_ops_clip_math import check_grads
from test_ops_math import f32, feed, op, run  # the same helpers


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


def i32(x):
    return np.asarray(x, np.int32)


def offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


# ---------------------------------------------------------------- references
def reduce_ref(kind, data, lengths, indices=None, weights=None):
    """float32 result of the op: accumulation in float64, in order (np.cumsum is sequential), rounded once."""
    rows = data if indices is None else data[np.asarray(indices, np.int64)]
    off = offsets(lengths)
    out = np.zeros((len(lengths),) + data.shape[1:], np.float32)
    for s, n in enumerate(lengths):
        seg = rows[off[s]:off[s + 1]].astype(np.float64)
        if n == 0:
            continue
        if kind == "Max":
            out[s] = np.max(rows[off[s]:off[s + 1]], axis=0)
            continue
        if weights is not None:
            w = np.asarray(weights[off[s]:off[s + 1]], np.float64).reshape((n,) + (1,) * (data.ndim - 1))
            seg = seg * w
        acc = np.cumsum(seg, axis=0)[-1]
        if kind == "Mean":
            acc = acc / n
        out[s] = acc.astype(np.float32)
    return out


def grad_rows_ref(kind, g, lengths, weights=None):
    off = offsets(lengths)
    out = np.zeros((int(off[-1]),) + g.shape[1:], np.float32)
    for s, n in enumerate(lengths):
        for k in range(off[s], off[s + 1]):
            if weights is not None:
                out[k] = weights[k] * g[s]
            elif kind == "Mean":
                out[k] = (g[s].astype(np.float64) / n).astype(np.float32)
            else:
                out[k] = g[s]
    return out


def grad_weights_ref(g, lengths, rows):
    off = offsets(lengths)
    out = np.zeros(int(off[-1]), np.float32)
    for s in range(len(lengths)):
        for k in range(off[s], off[s + 1]):
            out[k] = np.float32(np.sum(g[s].astype(np.float64) * rows[k].astype(np.float64)))
    return out


LENGTHS = [[2, 0, 3, 1], [0, 0], [], [4], [1, 1, 1, 0]]
REST = [(), (3,), (2, 3)]


# ---------------------------------------------------------------- forward
@pytest.mark.parametrize("kind", ["Sum", "Mean", "Max"])
@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("rest", REST)
def test_lengths_forward(rng, kind, lengths, rest):
    N = sum(lengths)
    data = f32(rng, N, *rest, lo=-3, hi=3)
    feed(d=data, l=i32(lengths))
    out = run("Lengths" + kind, ["d", "l"], ["o"])
    assert out.shape == (len(lengths),) + rest and out.dtype == np.float32
    assert out.tobytes() == reduce_ref(kind, data, lengths).tobytes()


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("rest", REST)
def test_lengths_weighted_sum_forward(rng, lengths, rest):
    N = sum(lengths)
    data, w = f32(rng, N, *rest, lo=-3, hi=3), f32(rng, N, lo=-2, hi=2)
    feed(d=data, w=w, l=i32(lengths))
    out = run("LengthsWeightedSum", ["d", "w", "l"], ["o"])
    assert out.tobytes() == reduce_ref("Sum", data, lengths, weights=w).tobytes()


@pytest.mark.parametrize("kind", ["Sum", "Mean", "WeightedSum"])
@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("rest", REST)
def test_sparse_lengths_forward_repeated_indices(rng, kind, lengths, rest):
    V, N = 5, sum(lengths)
    data = f32(rng, V, *rest, lo=-3, hi=3)
    idx = i32(rng.randint(0, V, N))
    if N >= 3:
        idx[1] = idx[2] = idx[0]  # a repeated index, within and across segments
    w = f32(rng, N, lo=-2, hi=2)
    feed(d=data, i=idx, l=i32(lengths), w=w)
    if kind == "WeightedSum":
        out = run("SparseLengthsWeightedSum", ["d", "w", "i", "l"], ["o"])
        ref = reduce_ref("Sum", data, lengths, idx, w)
    else:
        out = run("SparseLengths" + kind, ["d", "i", "l"], ["o"])
        ref = reduce_ref(kind, data, lengths, idx)
    assert out.shape == (len(lengths),) + rest
    assert out.tobytes() == ref.tobytes()
    # the same as the unfused Gather + Lengths* (which materialises the rows)
    feed(g_rows=data[idx])
    ins = ["g_rows", "w", "l"] if kind == "WeightedSum" else ["g_rows", "l"]
    assert out.tobytes() == run("Lengths" + kind, ins, ["o2"]).tobytes()


def test_sums_are_accumulated_in_double():
    # 1 + 1e-8 ... : float32 in-order accumulation would lose every small term
    data = np.array([1.0] + [1e-8] * 1000 + [-1.0], np.float32).reshape(-1, 1)
    feed(d=data, l=i32([len(data)]), i=i32(np.arange(len(data))))
    expect = np.float32(np.sum(data[1:-1].astype(np.float64)))
    assert run("LengthsSum", ["d", "l"], ["o"])[0, 0] == expect
    assert run("SparseLengthsSum", ["d", "i", "l"], ["o"])[0, 0] == expect
    assert expect != np.float32(0)


def test_mean_and_max_of_empty_segments_are_zero(rng):
    # the output blob held other values before: an empty segment must not keep them
    feed(d=f32(rng, 2, 2), l=i32([0, 2, 0]))
    for kind in ["Sum", "Mean", "Max"]:
        feed(o=np.full((3, 2), 7.0, np.float32))
        out = run("Lengths" + kind, ["d", "l"], ["o"])
        assert (out[0] == 0).all() and (out[2] == 0).all()


def test_lengths_max_nan_propagates_and_ties():
    data = np.array([[1, np.nan], [np.nan, 2], [3, 3], [3, 1]], np.float32)
    feed(d=data, l=i32([2, 2]))
    out = run("LengthsMax", ["d", "l"], ["o"])
    assert np.isnan(out[0]).all()
    assert out[1].tolist() == [3, 3]
    # NaN first or last in its segment
    feed(d=np.array([[np.nan], [5.0], [5.0], [np.nan]], np.float32), l=i32([2, 2]))
    assert np.isnan(run("LengthsMax", ["d", "l"], ["o"])).all()


def test_no_rows_and_no_segments(rng):
    feed(d=np.zeros((0, 4), np.float32), l=i32([0, 0, 0]), i=i32([]))
    assert run("LengthsSum", ["d", "l"], ["o"]).shape == (3, 4)
    assert not run("SparseLengthsMean", ["d", "i", "l"], ["o"]).any()
    feed(d=f32(rng, 3, 2), l=i32([]))
    assert run("SparseLengthsSum", ["d", "i", "l"], ["o"]).shape == (0, 2)


# ---------------------------------------------------------------- gradient ops
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind", ["Sum", "Mean"])
@pytest.mark.parametrize("lengths", LENGTHS)
def test_sum_mean_gradient_ops(rng, sparse, kind, lengths):
    g = f32(rng, len(lengths), 2, 3)
    feed(g=g, l=i32(lengths))
    out = run(("SparseLengths" if sparse else "Lengths") + kind + "Gradient", ["g", "l"], ["dx"])
    assert out.tobytes() == grad_rows_ref(kind, g, lengths).tobytes()


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("lengths", LENGTHS)
def test_weighted_sum_gradient_ops(rng, sparse, lengths):
    N, V = sum(lengths), 4
    g, w = f32(rng, len(lengths), 3), f32(rng, N)
    data = f32(rng, V if sparse else N, 3)
    idx = i32(rng.randint(0, V, N))
    feed(g=g, l=i32(lengths), w=w, d=data, i=idx)
    pre = "SparseLengths" if sparse else "Lengths"
    out = run(pre + "WeightedSumGradient", ["w", "g", "l"], ["dx"])
    assert out.tobytes() == grad_rows_ref("Sum", g, lengths, w).tobytes()
    ins = ["w", "g", "l", "d"] + (["i"] if sparse else [])
    dx, dw = run(pre + "WeightedSumWithMainInputGradient", ins, ["dx2", "dw"])
    assert dx.tobytes() == out.tobytes()
    assert dw.tobytes() == grad_weights_ref(g, lengths, data[idx] if sparse else data).tobytes()


def test_max_gradient_op_gives_every_tie_the_gradient():
    data = np.array([[1, 5], [4, 5], [4, 0], [2, 2]], np.float32)
    feed(d=data, l=i32([3, 0, 1]))
    np.testing.assert_array_equal(run("LengthsMax", ["d", "l"], ["o"]), [[4, 5], [0, 0], [2, 2]])
    g = np.array([[10, 20], [30, 40], [50, 60]], np.float32)
    feed(g=g)
    dx = run("LengthsMaxWithMainInputAndForwardOutputGradient", ["o", "g", "l", "d"], ["dx"])
    np.testing.assert_array_equal(dx, [[0, 20], [10, 20], [10, 0], [50, 60]])


# ---------------------------------------------------------------- finite differences
@pytest.mark.parametrize("kind", ["Sum", "Mean", "Max"])
def test_lengths_gradients_by_finite_differences(rng, kind):
    lengths = i32([2, 0, 3, 1])
    data = f32(rng, 6, 2, 3, lo=-2, hi=2)  # continuous values: no ties for Max
    check_grads(op("Lengths" + kind, ["d", "l"], ["o"]), [data, lengths], indices=[0])


@pytest.mark.parametrize("gow", [0, 1])
def test_lengths_weighted_sum_gradients_by_finite_differences(rng, gow):
    lengths = i32([2, 0, 3, 1])
    data, w = f32(rng, 6, 3, lo=-2, hi=2), f32(rng, 6, lo=-2, hi=2)
    o = op("LengthsWeightedSum", ["d", "w", "l"], ["o"], grad_on_weights=gow)
    check_grads(o, [data, w, lengths], indices=[0, 1] if gow else [0])
    ops, g_in = G(o, ["o_grad"])
    assert [x.type for x in ops] == ["LengthsWeightedSum" + ("WithMainInput" if gow else "") + "Gradient"]
    assert (g_in[1] is not None) == bool(gow) and g_in[2] is None


@pytest.mark.parametrize("kind", ["Sum", "Mean"])
def test_lengths_gradient_makers_emit_caffe2s_ops(kind):
    ops, g_in = G(op("Lengths" + kind, ["d", "l"], ["o"]), ["o_grad"])
    assert [(x.type, list(x.input), list(x.output)) for x in ops] == \
        [("LengthsIndicesInGradient%sGradient" % kind, ["o_grad", "l", "d"], ["d_grad"])]
    assert g_in == ["d_grad", None]
    assert G(ops[0], ["x"]) == ([], [None, None, None])


def test_sparse_weighted_sum_grad_on_weights_maker_emits_caffe2s_op():
    o = op("SparseLengthsWeightedSum", ["d", "w", "i", "l"], ["o"], grad_on_weights=1)
    ops, g_in = G(o, ["o_grad"])
    assert [(x.type, list(x.input), list(x.output)) for x in ops] == \
        [("SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient", ["w", "o_grad", "l", "d", "i"],
          ["o_d_grad_values", "w_grad"])]
    assert isinstance(g_in[0], core.GradientSlice) and g_in[1] == "w_grad" and g_in[2:] == [None, None]


@pytest.mark.parametrize("lengths", LENGTHS)
def test_indices_in_gradient_ops_equal_the_plain_ones(rng, lengths):
    """The *IndicesInGradient* ops compute what the ops without the last input do, bit for bit."""
    N, V = sum(lengths), 4
    g, w, data = f32(rng, len(lengths), 2, 3), f32(rng, N), f32(rng, V, 2, 3)
    feed(g=g, l=i32(lengths), w=w, d=data, dn=f32(rng, N, 2, 3), dni=i32(np.zeros((N, 5))),
         i=i32(rng.randint(0, V, N)))
    for kind in ["Sum", "Mean"]:
        plain = run("Lengths%sGradient" % kind, ["g", "l"], ["p"])
        assert plain.tobytes() == grad_rows_ref(kind, g, lengths).tobytes()
        for rows in ["dn", "dni"]:  # DATA (float32) or int32 row indices, as Caffe2's CUDA op
            assert run("LengthsIndicesInGradient%sGradient" % kind, ["g", "l", rows], ["x"]).tobytes() == \
                plain.tobytes()
        assert run("SparseLengthsIndicesInGradient%sGradient" % kind, ["g", "l", "i"], ["x"]).tobytes() == \
            plain.tobytes()
    plain = run("SparseLengthsWeightedSumGradient", ["w", "g", "l"], ["p"])
    assert plain.tobytes() == grad_rows_ref("Sum", g, lengths, w).tobytes()
    x = run("SparseLengthsIndicesInGradientWeightedSumGradient", ["w", "g", "l", "i"], ["x"])
    assert x.tobytes() == plain.tobytes()
    ins = ["w", "g", "l", "d", "i"]
    p1, p2 = run("SparseLengthsWeightedSumWithMainInputGradient", ins, ["p1", "p2"])
    x1, x2 = run("SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient", ins, ["x1", "x2"])
    assert x1.tobytes() == p1.tobytes() and x2.tobytes() == p2.tobytes()
    assert x2.tobytes() == grad_weights_ref(g, lengths, data[workspace.FetchBlob("i")]).tobytes()


def test_caffe2_legacy_sparse_and_lengths_sum_gradient(rng):
    """Caffe2's test_legacy_sparse_and_lengths_sum_gradient: the old names run in a net and agree."""
    feed(X=f32(rng, 3, 64), Y=i32([20, 20, 10]))
    net = core.Net("legacy")
    net.SparseLengthsSumGradient(["X", "Y"], "out1")
    net.LengthsSumGradient(["X", "Y"], "out2")
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("out1").shape == (50, 64)
    assert workspace.FetchBlob("out1").tobytes() == workspace.FetchBlob("out2").tobytes()


@pytest.mark.parametrize("kind", ["Sum", "Mean"])
def test_sparse_lengths_gradients_by_finite_differences(rng, kind):
    lengths = i32([2, 0, 3, 1])
    data = f32(rng, 4, 2, 3, lo=-2, hi=2)
    idx = i32([3, 1, 1, 0, 3, 1])  # repeated: the densified slice adds them up
    check_grads(op("SparseLengths" + kind, ["d", "i", "l"], ["o"]), [data, idx, lengths], indices=[0])


@pytest.mark.parametrize("gow", [0, 1])
def test_sparse_lengths_weighted_sum_gradients_by_finite_differences(rng, gow):
    lengths = i32([2, 0, 3, 1])
    data, w = f32(rng, 4, 3, lo=-2, hi=2), f32(rng, 6, lo=-2, hi=2)
    idx = i32([3, 1, 1, 0, 3, 1])
    o = op("SparseLengthsWeightedSum", ["d", "w", "i", "l"], ["o"], grad_on_weights=gow)
    check_grads(o, [data, w, idx, lengths], indices=[0, 1] if gow else [0])


@pytest.mark.parametrize("kind", ["Sum", "Mean", "WeightedSum"])
def test_sparse_gradient_is_a_slice_of_the_indices(kind):
    ins = ["d", "w", "i", "l"] if kind == "WeightedSum" else ["d", "i", "l"]
    o = op("SparseLengths" + kind, ins, ["o"])
    ops, g_in = G(o, ["o_grad"])
    assert isinstance(g_in[0], core.GradientSlice)
    assert g_in[0].indices == "i" and g_in[0].values == "o_d_grad_values"
    # Caffe2's makers' op names and inputs (GradientNeedIndices: INDICES last)
    assert [x.type for x in ops] == ["SparseLengthsIndicesInGradient%sGradient" % kind]
    assert list(ops[0].input) == (["w"] if kind == "WeightedSum" else []) + ["o_grad", "l", "i"]
    assert list(ops[0].output) == ["o_d_grad_values"]
    assert all(g is None for g in g_in[1:])
    # the gradient ops themselves have none
    assert G(ops[0], ["x"] * len(ops[0].output)) == ([], [None] * len(ops[0].input))


def test_two_bags_of_one_table_give_a_dense_summed_gradient(rng):
    """Two slices of one table (unique values names) are densified and summed by the backward pass."""
    table = f32(rng, 5, 3)
    feed(t=table, i1=i32([0, 4, 4]), l1=i32([1, 2]), i2=i32([4, 2]), l2=i32([2]))
    net = core.Net("bags")
    a = net.SparseLengthsSum(["t", "i1", "l1"], "a")
    b = net.SparseLengthsMean(["t", "i2", "l2"], "b")
    sa, sb = net.SumElements([a], "sa"), net.SumElements([b], "sb")
    loss = net.Add([sa, sb], "loss")
    grads = net.AddGradientOperators([loss])
    workspace.RunNetOnce(net)
    ref = np.zeros((5, 3), np.float32)
    np.add.at(ref, [0, 4, 4], 1.0)
    np.add.at(ref, [4, 2], 0.5)
    g = workspace.FetchBlob(str(grads["t"]))
    np.testing.assert_allclose(g, ref, rtol=1e-6)


# ---------------------------------------------------------------- bad input
def fails(exc, message, type_, inputs, outputs=("o",), **args):
    with pytest.raises(exc) as e:
        workspace.RunOperatorOnce(op(type_, inputs, list(outputs), **args))
    assert str(e.value) == message


D_42 = "(the rows of input 0 blob 'd' of shape (4, 2) float32)"


def test_bad_lengths_and_indices_leave_the_output_alone(rng):
    keep = np.full((2, 2), 9.0, np.float32)
    feed(o=keep, d=f32(rng, 4, 2), i=i32([0, 1, 4, 3]), w=f32(rng, 4))
    feed(l=i32([3, -1, 2]))
    fails(ValueError, "op LengthsSum #0: input 1 blob 'l' (lengths): length -1 at position 1 is negative",
          "LengthsSum", ["d", "l"])
    feed(l=i32([3, 2]))
    fails(ValueError, "op LengthsMean #0: input 1 blob 'l' (lengths) of shape (2,) int32 sums to 5, "
          "but must sum to 4 (the first dim of input 0 blob 'd' of shape (4, 2) float32)",
          "LengthsMean", ["d", "l"])
    fails(ValueError, "op SparseLengthsSum #0: input 2 blob 'l' (lengths) of shape (2,) int32 sums to 5, "
          "but must sum to 4 (the first dim of input 1 blob 'i' of shape (4,) int32)",
          "SparseLengthsSum", ["d", "i", "l"])
    feed(l=i32([3, 1]))
    fails(IndexError, "op SparseLengthsWeightedSum #0: input 2 blob 'i': index 4 at position 2 "
          "is out of range [0, 4) " + D_42, "SparseLengthsWeightedSum", ["d", "w", "i", "l"])
    feed(i=i32([0, -2, 1, 1]))
    fails(IndexError, "op SparseLengthsMean #0: input 1 blob 'i': index -2 at position 1 "
          "is out of range [0, 4) " + D_42, "SparseLengthsMean", ["d", "i", "l"])
    assert workspace.FetchBlob("o").tobytes() == keep.tobytes()
    # the workspace stays usable
    feed(i=i32([0, 1, 1, 3]))
    assert run("SparseLengthsSum", ["d", "i", "l"], ["o"]).shape == (2, 2)


def test_bad_shapes_and_dtypes(rng):
    feed(d=f32(rng, 4, 2), l=i32([4]), l2=i32([[4]]), lf=np.array([4.0], np.float32), w=f32(rng, 3),
         s=np.float32(1), i=i32([[0, 1], [2, 3]]), i1=i32([0, 1, 2, 3]))
    fails(ValueError, "op LengthsSum #0: input 1 blob 'l2' (lengths) must have 1 dim, got (1, 1) int32",
          "LengthsSum", ["d", "l2"])
    fails(TypeError, "op LengthsMax #0: input 1 blob 'lf' must be int32, got (1,) float32", "LengthsMax",
          ["d", "lf"])
    fails(ValueError, "op LengthsSum #0: input 0 blob 's' (data) must have at least 1 dim, got () float32",
          "LengthsSum", ["s", "l"])
    fails(ValueError, "op LengthsWeightedSum #0: input 1 blob 'w' (scalars) of shape (3,) float32 "
          "must hold one weight per row: 4 (the first dim of input 0 blob 'd' of shape (4, 2) float32)",
          "LengthsWeightedSum", ["d", "w", "l"])
    fails(ValueError, "op SparseLengthsSum #0: input 1 blob 'i' (indices) must have 1 dim, got (2, 2) int32",
          "SparseLengthsSum", ["d", "i", "l"])
    fails(ValueError, "op LengthsWeightedSum #0: argument grad_on_weights must be 0 or 1, got 2",
          "LengthsWeightedSum", ["d", "w", "l"], grad_on_weights=2)


def test_bad_gradient_inputs(rng):
    feed(g=f32(rng, 2, 3), l=i32([1, 1, 1]), l2=i32([2, 1]), w=f32(rng, 2), d=f32(rng, 3, 4),
         i=i32([0, 5, 1]), o=f32(rng, 3, 3))
    fails(ValueError, "op LengthsSumGradient #0: input 0 blob 'g' (the output gradient) of shape (2, 3) "
          "float32 must have one row per segment: 3 (input 1 blob 'l' (lengths) of shape (3,) int32)",
          "LengthsSumGradient", ["g", "l"], ["dx"])
    fails(ValueError, "op LengthsWeightedSumGradient #0: input 2 blob 'l2' (lengths) of shape (2,) int32 "
          "sums to 3, but must sum to 2 (the first dim of input 0 blob 'w' of shape (2,) float32)",
          "LengthsWeightedSumGradient", ["w", "g", "l2"], ["dx"])
    fails(ValueError, "op LengthsWeightedSumWithMainInputGradient #0: input 3 blob 'd' (3, 4) float32 and "
          "input 1 blob 'g' (2, 3) float32 must have the same shape after the first dim",
          "LengthsWeightedSumWithMainInputGradient", ["w", "g", "l2", "d"], ["dx", "dw"])
    feed(d=f32(rng, 3, 3), w=f32(rng, 3))
    fails(IndexError, "op SparseLengthsWeightedSumWithMainInputGradient #0: input 4 blob 'i': index 5 "
          "at position 1 is out of range [0, 3) (the rows of input 3 blob 'd' of shape (3, 3) float32)",
          "SparseLengthsWeightedSumWithMainInputGradient", ["w", "g", "l2", "d", "i"], ["dx", "dw"])
    fails(ValueError, "op LengthsMaxWithMainInputAndForwardOutputGradient #0: input 0 blob 'o' "
          "(the forward output) (3, 3) float32 must have the shape of input 1 blob 'g' "
          "(the output gradient) (2, 3) float32",
          "LengthsMaxWithMainInputAndForwardOutputGradient", ["o", "g", "l2", "d"], ["dx"])


def test_bad_indices_in_gradient_inputs(rng):
    feed(g=f32(rng, 2, 3), l=i32([2, 1]), w=f32(rng, 3), i=i32([0, 1, 1]), i2=i32([0, 1]), if_=f32(rng, 3),
         i22=i32([[0], [1], [1]]), d=f32(rng, 3, 3), d4=f32(rng, 4, 3), s=np.float32(1))
    S, M = "SparseLengthsIndicesInGradientSumGradient", "LengthsIndicesInGradientMeanGradient"
    fails(ValueError, "op %s #0: input 1 blob 'l' (lengths) of shape (2,) int32 sums to 3, but must sum to 2 "
          "(the first dim of input 2 blob 'i2' of shape (2,) int32)" % S, S, ["g", "l", "i2"], ["dx"])
    W = "SparseLengthsIndicesInGradientWeightedSumGradient"
    fails(ValueError, "op %s #0: input 3 blob 'i2' (indices) of shape (2,) int32 must have one row per row "
          "of the gradient: 3 (the first dim of input 0 blob 'w' of shape (3,) float32)" % W, W,
          ["w", "g", "l", "i2"], ["dx"])
    fails(TypeError, "op SparseLengthsIndicesInGradientMeanGradient #0: input 2 blob 'if_' must be int32, "
          "got (3,) float32", "SparseLengthsIndicesInGradientMeanGradient", ["g", "l", "if_"], ["dx"])
    fails(ValueError, "op %s #0: input 2 blob 'i22' (indices) must have 1 dim, got (3, 1) int32" % S, S,
          ["g", "l", "i22"], ["dx"])
    fails(ValueError, "op %s #0: input 1 blob 'l' (lengths) of shape (2,) int32 sums to 3, but must sum to 4 "
          "(the first dim of input 2 blob 'd4' of shape (4, 3) float32)" % M, M, ["g", "l", "d4"], ["dx"])
    fails(ValueError, "op LengthsIndicesInGradientSumGradient #0: input 2 blob 's' (data) must have at least "
          "1 dim, got () float32", "LengthsIndicesInGradientSumGradient", ["g", "l", "s"], ["dx"])
    fails(ValueError, "op LengthsIndicesInGradientSumGradient #0: expects 3 inputs, got 2",
          "LengthsIndicesInGradientSumGradient", ["g", "l"], ["dx"])
    # a good run afterwards
    assert run("LengthsIndicesInGradientSumGradient", ["g", "l", "d"], ["dx"]).shape == (3, 3)


def test_shapes_checked_at_net_creation(rng):
    feed(d=f32(rng, 4, 2), w=f32(rng, 3), l=i32([4]))
    net = core.Net("early")
    net.LengthsWeightedSum(["d", "w", "l"], "o")
    with pytest.raises(ValueError, match=r"input 1 blob 'w' \(scalars\) of shape \(3,\) float32 "
                       r"must hold one weight per row: 4"):
        workspace.CreateNet(net)


# ---------------------------------------------------------------- end to end: an embedding bag, Adagrad
V, D, K, B = 7, 4, 3, 3


def test_embedding_bag_trained_with_sparse_adagrad(rng):
    ids = i32([2, 5, 2, 0, 5, 5])
    lengths = i32([3, 0, 3])  # an empty bag and repeated ids in and across bags
    target = f32(rng, B, K)
    m = model_helper.ModelHelper(name="bag")
    emb = m.create_param("emb", [V, D], ("GaussianFill", {"std": 1.0}))
    w = m.create_param("w", [K, D], ("GaussianFill", {"std": 1.0}))
    b = m.create_param("b", [K], ("ConstantFill", {"value": 0.1}))
    x = m.net.SparseLengthsSum([emb, "ids", "lengths"], "x")
    y = m.net.FC([x, w, b], "y")
    sq = m.net.SquaredL2Distance([y, "target"], "sq")
    loss = m.net.AveragedLoss(sq, "loss")
    m.AddGradientOperators([loss])
    assert isinstance(m.param_to_grad[emb], core.GradientSlice)
    eps, lr = np.float32(1e-3), np.float32(-0.3)
    optimizer.build_adagrad(m, 0.3, epsilon=1e-3)
    assert "SparseAdagrad" in [o.type for o in m.net.Proto().op]
    workspace.RunNetOnce(m.param_init_net)
    feed(ids=ids, lengths=lengths, target=target)
    E, W, bb = (workspace.FetchBlob(n).copy() for n in ("emb", "w", "b"))
    hE, hW, hb = np.zeros_like(E), np.zeros_like(W), np.zeros_like(bb)
    untouched = E[[1, 3, 4, 6]].copy()
    workspace.CreateNet(m.net)
    for step in range(5):
        # NumPy: forward, backward, Adagrad (the table's rows one occurrence at a time, in order)
        X = reduce_ref("Sum", E, lengths, ids)
        Y = X @ W.T + bb
        dY = (Y - target) / B
        dW, db, dX = dY.T @ X, dY.sum(0), dY @ W
        rows = grad_rows_ref("Sum", dX.astype(np.float32), lengths)
        for p, h, gp in ((W, hW, dW), (bb, hb, db)):
            h += gp * gp
            p += lr * gp / (np.sqrt(h) + eps)
        for k, i in enumerate(ids):
            hE[i] = hE[i] + rows[k] * rows[k]
            E[i] = E[i] + lr * rows[k] / (np.sqrt(hE[i]) + eps)
        workspace.RunNet(m.net)
        ref_loss = 0.5 * np.sum((Y - target) ** 2) / B
        np.testing.assert_allclose(workspace.FetchBlob("loss"), ref_loss, rtol=1e-4)
        np.testing.assert_allclose(workspace.FetchBlob("emb"), E, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(workspace.FetchBlob("w"), W, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(workspace.FetchBlob("b"), bb, rtol=1e-4, atol=1e-5)
    # rows never read are bitwise unchanged: the update was sparse
    assert workspace.FetchBlob("emb")[[1, 3, 4, 6]].tobytes() == untouched.tobytes()
