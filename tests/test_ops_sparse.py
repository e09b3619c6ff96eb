"""Sparse-row operators: SparseToDense, SparseToDenseMask(Gradient),
BatchSparseToDense, BatchDenseToSparse, ScatterWeightedSum (csrc/ops/sparse.c),
SparseMomentumSGDUpdate, SparseAdam (csrc/ops/optim.c) and SparseAdagrad
(csrc/ops/embed.c).

Every op against a float64 NumPy reference that applies the rows one
occurrence at a time in flat index order (random shapes, indices of rank 0, 1
and 2, duplicates, no indices), repeated in place in a net; a row named once
gets bitwise the dense op's result for that row; the finite-difference
gradient of SparseToDense's values; and bad input by exception type and
message (op, blob, shapes, the bad index, its position and the range), with
the outputs left untouched when an op fails.
"""

import math

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent.gradient_checker import GradientChecker


def feed(feeds):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)


def run(op_type, feeds, inputs, outputs, **args):
    """Feeds ``feeds``, runs one op, fetches ``outputs``."""
    feed(feeds)
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))
    return [workspace.FetchBlob(o) for o in outputs]


def raises(exc, match, op_type, feeds, inputs, outputs, **args):
    feed(feeds)
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))


def f32(rng, *shape):
    return np.asarray(rng.randn(*shape), np.float32)


def one(v):
    return np.array([v], np.float32)


def rand_indices(rng, shape, n, dup=True):
    """Indices of ``shape`` in [0, n); with dup, at least one repeat when size >= 2."""
    size = int(np.prod(shape))
    if dup:
        flat = rng.randint(0, n, size)
        if size >= 2:
            flat[-1] = flat[0]
    else:
        flat = rng.permutation(n)[:size]
    return flat.reshape(shape).astype(np.int32)


# the index shapes the tests sweep: rank 0, 1, 2 and empty
INDEX_SHAPES = [(), (5,), (2, 3), (0,), (3, 0)]


# ---------------------------------------------------------------- references (float64)
def ref_sparse_to_dense(idx, vals, d0):
    row = vals.shape[idx.ndim:]
    out = np.zeros((d0,) + row)
    v = vals.astype(np.float64).reshape((-1,) + row)
    for k, i in enumerate(idx.ravel()):
        out[i] += v[k]
    return out


def ref_scatter_weighted_sum(x, w0, idx, pairs):
    """Caffe2's order: every occurrence's row scaled by w0, then each pair's rows added in order."""
    x = x.astype(np.float64).copy()
    flat = idx.ravel()
    row = x.shape[1:]
    if w0 != 1.0:
        for i in flat:
            x[i] *= w0
    for v, w in pairs:
        v = v.astype(np.float64).reshape((-1,) + row)
        for k, i in enumerate(flat):
            x[i] += w * v[k]
    return x


def ref_sparse_momentum(g, m, p, lr, idx, momentum=0.0, nesterov=0):
    m, p = m.astype(np.float64).copy(), p.astype(np.float64).copy()
    row = p.shape[1:]
    g = g.astype(np.float64).reshape((-1,) + row)
    ng = np.empty_like(g)
    for k, i in enumerate(idx.ravel()):
        if nesterov:
            mn = momentum * m[i] + lr * g[k]
            ng[k] = (1 + momentum) * mn - momentum * m[i]
            m[i] = mn
        else:
            ng[k] = m[i] = lr * g[k] + momentum * m[i]
        p[i] -= ng[k]
    return ng.reshape(idx.shape + row), m, p


def ref_sparse_adagrad(p, h, idx, g, lr, epsilon=1e-5, decay=1.0, weight_decay=0.0):
    p, h = p.astype(np.float64).copy(), h.astype(np.float64).copy()
    g = g.astype(np.float64).reshape((-1,) + p.shape[1:])
    for k, i in enumerate(idx.ravel()):
        gk = g[k] + weight_decay * p[i]   # the row as it is at this occurrence
        h[i] = decay * h[i] + gk * gk
        p[i] = p[i] + lr * gk / (np.sqrt(h[i]) + epsilon)
    return p, h


def ref_sparse_adam(p, m1, m2, idx, g, lr, it, beta1=0.9, beta2=0.999, epsilon=1e-5):
    p, m1, m2 = (a.astype(np.float64).copy() for a in (p, m1, m2))
    g = g.astype(np.float64).reshape((-1,) + p.shape[1:])
    t = it + 1
    corr = math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    for k, i in enumerate(idx.ravel()):
        m1[i] = beta1 * m1[i] + (1 - beta1) * g[k]
        m2[i] = beta2 * m2[i] + (1 - beta2) * g[k] * g[k]
        p[i] = p[i] + lr * corr * m1[i] / (np.sqrt(m2[i]) + epsilon)
    return p, m1, m2


def ref_sparse_radam(p, m1, m2, idx, g, lr, it, beta1=0.9, beta2=0.999, epsilon=1e-5):
    """Rectified Adam (Liu et al. 2019) row by row, written from the paper's formulas: the variance of
    the adaptive rate is tractable once rho_t >= 5; before that the step is momentum alone."""
    p, m1, m2 = (a.astype(np.float64).copy() for a in (p, m1, m2))
    g_shape = g.shape
    g = g.astype(np.float64).reshape((-1,) + p.shape[1:])
    t = it + 1
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * beta2 ** t / (1 - beta2 ** t)
    effective = []
    for k, i in enumerate(idx.ravel()):
        m1[i] = beta1 * m1[i] + (1 - beta1) * g[k]
        m2[i] = beta2 * m2[i] + (1 - beta2) * g[k] * g[k]
        m_hat = m1[i] / (1 - beta1 ** t)
        if rho_t >= 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            e = r * m_hat * math.sqrt(1 - beta2 ** t) / (np.sqrt(m2[i]) + epsilon)
        else:
            e = m_hat
        effective.append(e)
        p[i] = p[i] + lr * e
    return p, m1, m2, np.array(effective).reshape(g_shape)


def close(a, b, tol=1e-5):
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---------------------------------------------------------------- SparseToDense
@pytest.mark.parametrize("ishape", INDEX_SHAPES)
@pytest.mark.parametrize("row", [(), (3,), (2, 4)])
def test_sparse_to_dense_matches_reference(rng, ishape, row):
    idx = rand_indices(rng, ishape, 6)
    vals = f32(rng, *(ishape + row))
    out, = run("SparseToDense", {"i": idx, "v": vals}, ["i", "v"], ["o"])
    d0 = int(idx.max()) + 1 if idx.size else 0
    assert out.dtype == np.float32 and out.shape == (d0,) + row
    close(out, ref_sparse_to_dense(idx, vals, d0))
    # the first dim from input 2 (any dtype, >= 1 dim), or from output_first_dim
    out, = run("SparseToDense", {"d": np.zeros((9, 2), np.int32)}, ["i", "v", "d"], ["o2"])
    close(out, ref_sparse_to_dense(idx, vals, 9))
    out, = run("SparseToDense", {}, ["i", "v"], ["o3"], output_first_dim=7)
    close(out, ref_sparse_to_dense(idx, vals, 7))


def test_sparse_to_dense_duplicates_sum_in_order():
    idx = np.array([1, 1, 1], np.int32)
    vals = np.array([1e8, 1.0, -1e8], np.float32)
    out, = run("SparseToDense", {"i": idx, "v": vals}, ["i", "v"], ["o"])
    # float32 in order: (0 + 1e8) + 1 rounds back to 1e8, minus 1e8 is 0 (a sum in another order gives 1)
    assert out.tolist() == [0.0, 0.0]


def test_sparse_to_dense_int32_values_wrap(rng):
    idx = np.array([[0, 2], [2, 0]], np.int32)
    vals = np.array([[[1, 2], [2**31 - 1, 5]], [[1, -7], [3, 4]]], np.int32)
    out, = run("SparseToDense", {"i": idx, "v": vals}, ["i", "v"], ["o"])
    assert out.dtype == np.int32
    assert out.tolist() == [[4, 6], [0, 0], [-(2**31), -2]]


def test_sparse_to_dense_rerun_overwrites_and_resizes(rng):
    net = core.Net("s2d_rerun")
    net.SparseToDense(["i", "v"], "o")
    feed({"i": np.array([3, 0], np.int32), "v": f32(rng, 2, 2)})
    workspace.RunNetOnce(net)
    first = workspace.FetchBlob("o")
    assert first.shape == (4, 2)
    workspace.RunNetOnce(net)
    assert np.array_equal(workspace.FetchBlob("o"), first)  # zeroed again, not accumulated
    vals = f32(rng, 1, 2)
    feed({"i": np.array([1], np.int32), "v": vals})
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob("o"), ref_sparse_to_dense(np.array([1]), vals, 2))


@pytest.mark.parametrize("ishape", [(4,), (2, 3)])
def test_sparse_to_dense_values_gradient(rng, ishape):
    idx = rand_indices(rng, ishape, 5)
    vals = f32(rng, *(ishape + (3,)))
    op = core.CreateOperator("SparseToDense", ["i", "v"], ["o"])
    checker = GradientChecker(1e-2, 1e-2)
    ok, grad, _ = checker.CheckSimple(op, [idx, vals], 1, [0])
    assert ok, checker.last_message
    assert grad.shape == vals.shape
    # with data_to_infer_dim: rows past max(indices) have gradients nobody reads
    op = core.CreateOperator("SparseToDense", ["i", "v", "d"], ["o"])
    ok, grad, _ = checker.CheckSimple(op, [idx, vals, np.zeros((8,), np.float32)], 1, [0])
    assert ok, checker.last_message


def test_sparse_to_dense_gradient_maker():
    op = core.CreateOperator("SparseToDense", ["i", "v", "d"], ["o"])
    ops, g = core.GradientRegistry.GetGradientForOp(op, ["o_grad"])
    assert g == [None, "v_grad", None]
    assert [(o.type, list(o.input), list(o.output)) for o in ops] == [("Gather", ["o_grad", "i"], ["v_grad"])]
    assert core.GradientRegistry.GetGradientForOp(op, [None]) == ([], [None] * 3)


def test_sparse_to_dense_gradient_of_a_gradient_slice(rng):
    """An output gradient given as a GradientSlice is made dense (by core, shaped like the output), then
    gathered."""
    op = core.CreateOperator("SparseToDense", ["i", "v"], ["o"])
    ops, g = core.GradientRegistry.GetGradientForOp(op, [core.GradientSlice("gi", "gv")])
    assert g == [None, "v_grad"]
    assert [o.type for o in ops] == ["SparseToDense", "Gather"]
    idx = np.array([2, 0, 2], np.int32)
    vals = f32(rng, 3, 2)
    gi = np.array([[0, 2], [2, 1]], np.int32)
    gv = f32(rng, 2, 2, 2)
    feed({"i": idx, "v": vals, "gi": gi, "gv": gv})
    workspace.RunOperatorOnce(op)
    for o in ops:
        workspace.RunOperatorOnce(o)
    dense = ref_sparse_to_dense(gi, gv, 3)
    close(workspace.FetchBlob("v_grad"), dense[idx])


def test_sparse_to_dense_bad_input(rng):
    op = "SparseToDense"
    v = f32(rng, 2, 3)
    i2 = np.array([0, 1], np.int32)
    raises(TypeError, r"op SparseToDense #0: input 0 blob 'i' must be int32 indices, got \(2,\) float32", op,
           {"i": i2.astype(np.float32), "v": v}, ["i", "v"], ["o"])
    raises(ValueError, r"input 1 blob 'v' \(the values\) must have shape input 0 blob 'i' \(3,\) int32 "
           r"\+ the row shape, got \(2, 3\) float32", op, {"i": np.array([0, 1, 2], np.int32), "v": v},
           ["i", "v"], ["o"])
    raises(ValueError, r"input 1 blob 'v' \(the values\) must have shape input 0 blob 'i' \(2, 3\) int32", op,
           {"i": np.zeros((2, 3), np.int32), "v": v.reshape(3, 2)}, ["i", "v"], ["o"])
    raises(IndexError, r"input 0 blob 'i': index -1 at position 1 is out of range \[0, 4\) "
           r"\(max index \+ 1\)",
           op, {"i": np.array([3, -1], np.int32), "v": v}, ["i", "v"], ["o"])
    raises(IndexError, r"index 3 at position 0 is out of range \[0, 2\) \(the first dim of input 2 "
           r"blob 'd' of shape \(2,\) float32\)", op,
           {"i": np.array([3, 1], np.int32), "v": v, "d": one(0.5).repeat(2)},
           ["i", "v", "d"], ["o"])
    raises(IndexError, r"index 5 at position 1 is out of range \[0, 3\) \(argument output_first_dim\)", op,
           {"i": np.array([1, 5], np.int32), "v": v}, ["i", "v"], ["o"], output_first_dim=3)
    raises(ValueError, r"input 2 blob 'd' \(its first dim gives the output's\) must have at least 1 dim, got "
           r"\(\) float32", op, {"i": i2, "v": v, "d": np.float32(3)}, ["i", "v", "d"], ["o"])
    raises(ValueError, r"argument output_first_dim or as input 2 \(blob 'd'\), not both", op, {"d": v},
           ["i", "v", "d"], ["o"], output_first_dim=3)
    raises(ValueError, r"argument output_first_dim must be >= 0, got -2", op, {}, ["i", "v"], ["o"],
           output_first_dim=-2)
    # the output is never an input (it is zeroed first)
    raises(ValueError, r"input 1 and output 0 are the same blob 'v'", op, {}, ["i", "v"], ["v"])
    # a failing run leaves an existing output as it was
    feed({"o": np.full((2, 3), 7.0, np.float32)})
    raises(IndexError, "out of range", op, {"i": np.array([0, -3], np.int32)}, ["i", "v"], ["o"])
    assert np.array_equal(workspace.FetchBlob("o"), np.full((2, 3), 7.0, np.float32))


# ---------------------------------------------------------------- SparseToDenseMask
def ref_s2dm(idx, vals, dflt, lens, mask):
    """OUTPUT, PRESENCE and the values' gradient map (the kept k of each (row, column), -1 if none)."""
    col = {m: c for c, m in enumerate(mask)}
    lens = [len(idx)] if lens is None else lens
    out = np.broadcast_to(dflt, (len(lens), len(mask)) + dflt.shape).copy()
    pres = np.zeros((len(lens), len(mask)), np.int32)
    kept = -np.ones((len(lens), len(mask)), np.int64)
    k = 0
    for r, n in enumerate(lens):
        for _ in range(n):
            c = col.get(int(idx[k]))
            if c is not None:
                out[r, c], pres[r, c], kept[r, c] = vals[k], 1, k
            k += 1
    return out, pres, kept


@pytest.mark.parametrize("row", [(), (2,), (2, 3)])
@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_sparse_to_dense_mask_matches_reference(rng, row, with_lengths, dtype):
    lens = np.array([3, 0, 4, 2], np.int32)
    idx = rng.randint(-1, 8, size=int(lens.sum())).astype(np.int32)
    idx[idx < 0] = 9  # an id outside the mask
    idx[0] = idx[2] = 4  # a repeated id: the last wins
    vals = rng.randint(-50, 50, size=(len(idx),) + row).astype(dtype)
    dflt = rng.randint(-50, 50, size=row).astype(dtype)
    mask = [4, 0, 7, 2, 100]
    ins = ["i", "v", "d"] + (["l"] if with_lengths else [])
    out, pres = run("SparseToDenseMask", {"i": idx, "v": vals, "d": dflt, "l": lens}, ins, ["o", "p"],
                    mask=mask, return_presence_mask=1)
    ref, ref_pres, _ = ref_s2dm(idx, vals, dflt, lens if with_lengths else None, mask)
    if not with_lengths:
        ref, ref_pres = ref[0], ref_pres[0]
    assert out.dtype == dtype and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(pres, ref_pres)
    (out1,) = run("SparseToDenseMask", {}, ins, ["o1"], mask=mask)
    np.testing.assert_array_equal(out1, ref)


def test_sparse_to_dense_mask_edges(rng):
    # no indices, no lengths rows, empty rows, negative ids skipped (fewer than max_skipped_indices)
    out, = run("SparseToDenseMask", {"i": np.zeros(0, np.int32), "v": np.zeros((0, 2), np.float32),
                                     "d": one(3).repeat(2)}, ["i", "v", "d"], ["o"], mask=[1, 0])
    np.testing.assert_array_equal(out, np.full((2, 2), 3, np.float32))
    out, = run("SparseToDenseMask", {"l": np.zeros(0, np.int32)}, ["i", "v", "d", "l"], ["o"], mask=[1, 0])
    assert out.shape == (0, 2, 2)
    out, = run("SparseToDenseMask", {"i": np.array([-1, 0, -5, -2, 1], np.int32), "v": f32(rng, 5, 0),
                                     "d": np.zeros(0, np.float32)}, ["i", "v", "d"], ["o"], mask=[1, 0])
    assert out.shape == (2, 0)
    vals = f32(rng, 5)
    out, = run("SparseToDenseMask", {"v": vals, "d": one(9)[0]}, ["i", "v", "d"], ["o"], mask=[1, 0])
    np.testing.assert_array_equal(out, [vals[4], vals[1]])


@pytest.mark.parametrize("with_lengths", [False, True])
def test_sparse_to_dense_mask_values_gradient(rng, with_lengths):
    lens = np.array([3, 0, 4], np.int32)
    idx = np.array([2, 5, 2, 0, 3, 0, -1], np.int32)  # repeats in a row, an id outside the mask, a negative
    vals = f32(rng, 7, 2)
    ins = ["i", "v", "d"] + (["l"] if with_lengths else [])
    op = core.CreateOperator("SparseToDenseMask", ins, ["o"], mask=[0, 2, 3])
    checker = GradientChecker(1e-2, 1e-2)
    inputs = [idx, vals, f32(rng, 2)] + ([lens] if with_lengths else [])
    ok, grad, _ = checker.CheckSimple(op, inputs, 1, [0])
    assert ok, checker.last_message
    # exactly: each kept occurrence gets its output row's gradient, the others zeros
    g = f32(rng, *((3,) if with_lengths else ()) + (3, 2))
    feed({"i": idx, "o_grad": g, "l": lens})
    ops, gi = core.GradientRegistry.GetGradientForOp(op, ["o_grad"])
    assert gi == [None, "v_grad", None] + ([None] if with_lengths else [])
    assert [(o.type, list(o.input)) for o in ops] == [
        ("SparseToDenseMaskGradient", ["i", "o_grad"] + (["l"] if with_lengths else []))]
    for o in ops:
        workspace.RunOperatorOnce(o)
    _, _, kept = ref_s2dm(idx, vals, np.zeros(2, np.float32), lens if with_lengths else None, [0, 2, 3])
    ref = np.zeros_like(vals)
    g3 = g if with_lengths else g[None]
    for r, c in zip(*np.nonzero(kept >= 0)):
        ref[kept[r, c]] = g3[r, c]
    np.testing.assert_array_equal(workspace.FetchBlob("v_grad"), ref)


def test_sparse_to_dense_mask_bad_input(rng):
    op, ins = "SparseToDenseMask", ["i", "v", "d"]
    i3, v, d = np.array([0, 1, 2], np.int32), f32(rng, 3, 2), f32(rng, 2)
    feed({"i": i3, "v": v, "d": d})
    raises(ValueError, r"op SparseToDenseMask #0: argument mask \(the ids of the output's columns\) is "
           r"missing", op, {}, ins, ["o"])
    raises(ValueError, r"argument mask holds id 3 twice \(positions 0 and 2\)", op, {}, ins, ["o"],
           mask=[3, 1, 3])
    raises(ValueError, r"argument mask: id -1 at position 1 is outside \[0, 2\*\*31 - 1\]", op, {}, ins,
           ["o"], mask=[3, -1])
    raises(ValueError, r"return_presence_mask=1 needs output 1", op, {}, ins, ["o"], mask=[1],
           return_presence_mask=1)
    raises(ValueError, r"output 1 \(the presence mask\) needs return_presence_mask=1", op, {}, ins,
           ["o", "p"], mask=[1])
    raises(ValueError, r"input 1 blob 'v2' \(the values\) must have one row per index of input 0 blob 'i' "
           r"\(3,\) int32, got \(2, 2\) float32", op, {"v2": f32(rng, 2, 2)}, ["i", "v2", "d"], ["o"],
           mask=[1])
    raises(ValueError, r"input 2 blob 'd3' \(the default\) must have the shape of a row of input 1 blob 'v' "
           r"\(3, 2\) float32, got \(3,\) float32", op, {"d3": f32(rng, 3)}, ["i", "v", "d3"], ["o"],
           mask=[1])
    raises(TypeError, r"input 2 blob 'di' must be float32, got \(2,\) int32", op,
           {"di": np.zeros(2, np.int32)}, ["i", "v", "di"], ["o"], mask=[1])
    raises(ValueError, r"input 3 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 4, but input 0 blob 'i' "
           r"of shape \(3,\) int32 has 3 rows", op,
           {"l": np.array([1, 3], np.int32)}, ["i", "v", "d", "l"], ["o"], mask=[1])
    raises(ValueError, r"input 0 blob 'neg' holds 3 negative ids \(the last -7 at position 2\); at most "
           r"max_skipped_indices - 1 = 2 are skipped", op, {"neg": np.array([-1, -2, -7], np.int32)},
           ["neg", "v", "d"], ["o"], mask=[1], max_skipped_indices=3)
    g = "SparseToDenseMaskGradient"
    raises(ValueError, r"op SparseToDenseMaskGradient #0: input 1 blob 'g' \(the output gradient\) must have "
           r"shape \(len\(lengths\)\) \+ \(2, ...\) \(a row per length, 2 mask ids\), got \(3, 2\) float32",
           g, {"g": f32(rng, 3, 2), "l": np.array([3], np.int32)}, ["i", "g", "l"], ["dv"], mask=[1, 2])
    raises(ValueError, r"input 1 blob 'g' \(the output gradient\) must have shape \(4, ...\) \(4 mask ids\), "
           r"got \(3, 2\) float32", g, {}, ["i", "g"], ["dv"], mask=[1, 2, 0, 5])
    # a failing run leaves the outputs as they were
    feed({"o": np.full((2, 3), 7.0, np.float32)})
    raises(ValueError, "lengths", op, {"l": np.array([-1, 4], np.int32)}, ins + ["l"], ["o"], mask=[1])
    assert np.array_equal(workspace.FetchBlob("o"), np.full((2, 3), 7.0, np.float32))


# ---------------------------------------------------------------- BatchSparseToDense, BatchDenseToSparse
def batch_rows(rng, lens, D):
    """Indices distinct within each row of ``lens``, in [0, D)."""
    return np.concatenate([rng.permutation(D)[:n] for n in lens] + [np.zeros(0, int)]).astype(np.int32)


def ref_bs2d(lens, idx, v, D, dflt):
    out = np.full((len(lens), D), dflt, np.float32)
    rows = np.repeat(np.arange(len(lens)), lens)
    out[rows, idx] = v
    return out


def test_batch_sparse_to_dense_matches_reference(rng):
    lens = np.array([2, 0, 5, 1], np.int32)
    idx = batch_rows(rng, lens, 6)
    v = f32(rng, len(idx))
    out, = run("BatchSparseToDense", {"l": lens, "i": idx, "v": v}, ["l", "i", "v"], ["o"], dense_last_dim=6,
               default_value=2.5)
    np.testing.assert_array_equal(out, ref_bs2d(lens, idx, v, 6, 2.5))
    out, = run("BatchSparseToDense", {"s": np.zeros((9, 7), np.int32)}, ["l", "i", "v", "s"], ["o"])
    np.testing.assert_array_equal(out, ref_bs2d(lens, idx, v, 7, 0.0))  # SHAPE_LIKE's dim 1 only
    out, = run("BatchSparseToDense", {"s7": np.zeros((4, 7), np.float32)}, ["l", "i", "v", "s7"], ["o"],
               dense_last_dim=7)
    np.testing.assert_array_equal(out, ref_bs2d(lens, idx, v, 7, 0.0))
    dense = f32(rng, 4, 6)
    vals, = run("BatchDenseToSparse", {"d": dense}, ["l", "i", "d"], ["vals"])
    np.testing.assert_array_equal(vals, dense[np.repeat(np.arange(4), lens), idx])
    # Caffe2's example
    out, = run("BatchSparseToDense", {"l": np.array([2, 3, 1], np.int32), "i": np.arange(6, dtype=np.int32),
                                      "v": np.arange(6, 12, dtype=np.float32)}, ["l", "i", "v"], ["o"],
               dense_last_dim=6)
    np.testing.assert_array_equal(out, [[6, 7, 0, 0, 0, 0], [0, 0, 8, 9, 10, 0], [0, 0, 0, 0, 0, 11]])


def test_batch_sparse_to_dense_edges():
    e = np.zeros(0, np.int32)
    out, = run("BatchSparseToDense", {"l": e, "i": e, "v": np.zeros(0, np.float32)}, ["l", "i", "v"], ["o"],
               dense_last_dim=3)
    assert out.shape == (0, 3)
    out, = run("BatchSparseToDense", {"l": np.zeros(2, np.int32)}, ["l", "i", "v"], ["o"], dense_last_dim=3,
               default_value=-1.0)
    np.testing.assert_array_equal(out, np.full((2, 3), -1, np.float32))
    vals, = run("BatchDenseToSparse", {"d": np.zeros((2, 0), np.float32)}, ["l", "i", "d"], ["vals"])
    assert vals.shape == (0,)


def test_batch_sparse_dense_gradients(rng):
    lens = np.array([3, 0, 2, 4], np.int32)
    idx = batch_rows(rng, lens, 5)
    checker = GradientChecker(1e-2, 1e-2)
    for op, ins in [(core.CreateOperator("BatchSparseToDense", ["l", "i", "v"], ["o"], dense_last_dim=5,
                                         default_value=1.5), [lens, idx, f32(rng, len(idx))]),
                    (core.CreateOperator("BatchSparseToDense", ["l", "i", "v", "s"], ["o"]),
                     [lens, idx, f32(rng, len(idx)), f32(rng, 4, 5)]),
                    (core.CreateOperator("BatchDenseToSparse", ["l", "i", "d"], ["o"]),
                     [lens, idx, f32(rng, 4, 5)])]:
        ok, grad, _ = checker.CheckSimple(op, ins, 2, [0])
        assert ok, checker.last_message
    op = core.CreateOperator("BatchSparseToDense", ["l", "i", "v", "s"], ["o"])
    ops, g = core.GradientRegistry.GetGradientForOp(op, ["o_grad"])
    assert g == [None, None, "v_grad", None]
    assert [(o.type, list(o.input)) for o in ops] == [("BatchDenseToSparse", ["l", "i", "o_grad"])]
    op = core.CreateOperator("BatchDenseToSparse", ["l", "i", "d"], ["o"])
    ops, g = core.GradientRegistry.GetGradientForOp(op, ["o_grad"])
    assert g == [None, None, "d_grad"]
    assert [(o.type, list(o.input)) for o in ops] == [("BatchSparseToDense", ["l", "i", "o_grad", "d"])]


def test_batch_sparse_to_dense_bad_input(rng):
    op, ins = "BatchSparseToDense", ["l", "i", "v"]
    lens, idx, v = np.array([2, 1], np.int32), np.array([1, 3, 0], np.int32), f32(rng, 3)
    feed({"l": lens, "i": idx, "v": v})
    raises(ValueError, r"op BatchSparseToDense #0: the output's last dim is missing: give argument "
           r"dense_last_dim or input 3", op, {}, ins, ["o"])
    raises(ValueError, r"argument dense_last_dim must be >= 1, got 0", op, {}, ins, ["o"], dense_last_dim=0)
    raises(IndexError, r"op BatchSparseToDense #0: input 1 blob 'i': index 3 at position 1 is out of range "
           r"\[0, 3\) \(the dense tensor's last dim\)", op, {}, ins, ["o"], dense_last_dim=3)
    raises(ValueError, r"input 1 blob 'dup' \(indices\): index 2 appears twice in row 1 \(positions 2 and "
           r"4\); the indices of a row must be distinct", op,
           {"l3": np.array([2, 3], np.int32), "dup": np.array([2, 1, 2, 0, 2], np.int32), "v5": f32(rng, 5)},
           ["l3", "dup", "v5"], ["o"], dense_last_dim=4)
    raises(ValueError, r"input 0 blob 'l2' \(lengths\) of shape \(2,\) int32 sums to 4, but input 1 blob "
           r"'i' of shape \(3,\) int32 has 3 rows", op, {"l2": np.array([2, 2], np.int32)}, ["l2", "i", "v"],
           ["o"], dense_last_dim=4)
    raises(ValueError, r"input 2 blob 'v2' \(the values\) must have the shape of input 1 blob 'i' \(3,\) "
           r"int32, got \(3, 1\) float32", op, {"v2": f32(rng, 3, 1)}, ["l", "i", "v2"], ["o"],
           dense_last_dim=4)
    raises(ValueError, r"argument dense_last_dim = 4 differs from dim 1 of input 3 blob 's' \(2, 5\) float32",
           op, {"s": f32(rng, 2, 5)}, ins + ["s"], ["o"], dense_last_dim=4)
    raises(ValueError, r"argument dense_last_dim = 6 differs from dim 1 of input 3 blob 's' \(2, 5\) float32",
           op, {}, ins + ["s"], ["o"], dense_last_dim=6)
    raises(ValueError, r"input 3 blob 's1' \(its dim 1 gives the output's last dim\) must be 2-D, got \(5,\) "
           r"float32", op, {"s1": f32(rng, 5)}, ins + ["s1"], ["o"])
    raises(TypeError, r"input 1 blob 'fi' must be int32", op, {"fi": v}, ["l", "fi", "v"], ["o"],
           dense_last_dim=4)
    d2s = "BatchDenseToSparse"
    raises(ValueError, r"op BatchDenseToSparse #0: input 2 blob 'd' \(the dense tensor\) must be 2-D with a "
           r"row per length of input 0 blob 'l' \(2,\) int32, got \(3, 4\) float32", d2s,
           {"d": f32(rng, 3, 4)}, ["l", "i", "d"], ["vals"])
    raises(IndexError, r"op BatchDenseToSparse #0: input 1 blob 'i': index 3 at position 1 is out of range "
           r"\[0, 3\)", d2s, {"d3": f32(rng, 2, 3)}, ["l", "i", "d3"], ["vals"])
    # a failing run leaves the output as it was
    feed({"o": np.full((2, 3), 7.0, np.float32)})
    raises(IndexError, "out of range", op, {}, ins, ["o"], dense_last_dim=3)
    assert np.array_equal(workspace.FetchBlob("o"), np.full((2, 3), 7.0, np.float32))


# ---------------------------------------------------------------- ScatterWeightedSum
@pytest.mark.parametrize("ishape", INDEX_SHAPES)
@pytest.mark.parametrize("w0", [1.0, 0.5, -2.0])
@pytest.mark.parametrize("npairs", [1, 3])
def test_scatter_weighted_sum_matches_reference(rng, ishape, w0, npairs):
    x = f32(rng, 6, 2, 3)
    idx = rand_indices(rng, ishape, 6)
    pairs = [(f32(rng, *(ishape + (2, 3))), float(rng.uniform(-2, 2))) for _ in range(npairs)]
    feeds = {"x": x, "w0": one(w0), "i": idx}
    inputs = ["x", "w0", "i"]
    for j, (v, w) in enumerate(pairs):
        feeds["v%d" % j] = v
        # weights of shape (1,) and () alike
        feeds["w%d" % (j + 1)] = one(w) if j % 2 else np.float32(w)
        inputs += ["v%d" % j, "w%d" % (j + 1)]
    out, = run("ScatterWeightedSum", feeds, inputs, ["x"])
    close(out, ref_scatter_weighted_sum(x, w0, idx, [(v, np.float32(w)) for v, w in pairs]))
    untouched = np.setdiff1d(np.arange(6), idx.ravel())
    assert np.array_equal(out[untouched], x[untouched])


def test_scatter_weighted_sum_weight_one_is_exact_sum(rng):
    """w0 == 1 skips the multiply: the rows are exactly x + w1 v[k] + ..., float32 in order."""
    x = f32(rng, 4, 5)
    idx = np.array([[3, 1], [3, 3]], np.int32)
    v1, v2 = f32(rng, 2, 2, 5), f32(rng, 2, 2, 5)
    w1, w2 = np.float32(0.3), np.float32(-1.7)
    out, = run("ScatterWeightedSum", {"x": x, "w0": one(1.0), "i": idx, "v1": v1, "w1": one(w1), "v2": v2,
                                      "w2": one(w2)}, ["x", "w0", "i", "v1", "w1", "v2", "w2"], ["x"])
    want = x.copy()
    for v, w in ((v1, w1), (v2, w2)):
        for k, i in enumerate(idx.ravel()):
            want[i] = want[i] + w * v.reshape(4, 5)[k]
    assert np.array_equal(out, want)


def test_scatter_weighted_sum_scales_each_occurrence(rng):
    """Caffe2's semantics: a row named twice is scaled by w0 twice, before any row is added."""
    x = np.ones((2, 1), np.float32)
    out, = run("ScatterWeightedSum", {"x": x, "w0": one(3.0), "i": np.array([1, 1], np.int32),
                                      "v": np.array([[1.0], [2.0]], np.float32), "w": one(1.0)},
               ["x", "w0", "i", "v", "w"], ["x"])
    assert out.ravel().tolist() == [1.0, 9.0 + 1.0 + 2.0]


def test_scatter_weighted_sum_repeated_in_a_net(rng):
    x = f32(rng, 5, 3)
    idx = np.array([4, 0, 4], np.int32)
    v = f32(rng, 3, 3)
    feed({"x": x, "w0": one(0.9), "i": idx, "v": v, "w": one(-0.1)})
    net = core.Net("sws_repeat")
    net.ScatterWeightedSum(["x", "w0", "i", "v", "w"], "x")
    workspace.CreateNet(net)
    workspace.RunNet(net, 3)
    want = x
    for _ in range(3):
        want = ref_scatter_weighted_sum(want, 0.9, idx, [(v, np.float32(-0.1))])
    close(workspace.FetchBlob("x"), want)


def test_scatter_weighted_sum_empty_x():
    x = np.zeros((0, 3), np.float32)
    out, = run("ScatterWeightedSum", {"x": x, "w0": one(2.0), "i": np.zeros(0, np.int32),
                                      "v": np.zeros((0, 3), np.float32), "w": one(1.0)},
               ["x", "w0", "i", "v", "w"], ["x"])
    assert out.shape == (0, 3)
    raises(IndexError, r"index 0 at position 0 is out of range \[0, 0\)", "ScatterWeightedSum",
           {"i": np.zeros(1, np.int32), "v": np.zeros((1, 3), np.float32)}, ["x", "w0", "i", "v", "w"], ["x"])


def test_scatter_weighted_sum_bad_input(rng):
    op = "ScatterWeightedSum"
    x = f32(rng, 4, 3)
    good = {"x": x, "w0": one(0.5), "i": np.array([1, 2], np.int32), "v": f32(rng, 2, 3), "w": one(2.0)}
    ins = ["x", "w0", "i", "v", "w"]
    feed(good)
    raises(ValueError, r"op ScatterWeightedSum #0: output 0 blob 'y' must be input 0 blob 'x' "
           r"\(this op updates it in place\)", op, {}, ins, ["y"])
    raises(ValueError, r"an odd number of inputs \(5, 7, ...\), got 6", op, {"v2": x}, ins + ["v2"], ["x"])
    raises(ValueError, r"expects at least 5 inputs, got 3|expects 5\.\. inputs|inputs, got 3", op, {},
           ["x", "w0", "i"], ["x"])
    for k in (3, 4):
        raises(ValueError, r"input %d and output 0 are the same blob 'x'" % k, op, {},
               ins[:k] + ["x"] + ins[k + 1:], ["x"])
    raises(TypeError, r"input 2 blob 'i' must be int32 indices, got \(2,\) float32", op,
           {"i": np.array([1, 2], np.float32)}, ins, ["x"])
    feed(good)
    raises(ValueError, r"input 1 blob 'w0' \(weight 0\) must hold one value, got \(2,\) float32", op,
           {"w0": np.ones(2, np.float32)}, ins, ["x"])
    feed(good)
    raises(ValueError, r"input 4 blob 'w' \(weight 1\) must hold one value, got \(0,\) float32", op,
           {"w": np.ones(0, np.float32)}, ins, ["x"])
    feed(good)
    raises(TypeError, r"input 4 blob 'w' must be float32, got \(1,\) int32", op, {"w": np.ones(1, np.int32)},
           ins, ["x"])
    feed(good)
    raises(ValueError, r"input 3 blob 'v' \(the rows to add\) must have shape \(2, 3\) float32 "
           r"\(input 2 blob 'i' \(2,\) int32 \+ input 0 blob 'x' \(4, 3\) float32 without its first dim\), "
           r"got \(6,\) float32",
           op, {"v": f32(rng, 6)}, ins, ["x"])
    feed(good)
    raises(ValueError, r"input 0 blob 'x' must have at least 1 dim \(its rows\), got \(\) float32", op,
           {"x": np.float32(1)}, ins, ["x"])
    # out of range (negative too), checked before anything is written: x is untouched
    for bad, pos in ((np.array([[1, 2], [4, 0]], np.int32),
                      r"2 \(element \(1, 0\) of its \(2, 2\) int32\)"),
                     (np.array([[1, 2], [0, -1]], np.int32),
                      r"3 \(element \(1, 1\) of its \(2, 2\) int32\)")):
        feed(good)
        v = bad.ravel()[-1] if bad.ravel()[-1] < 0 else 4
        raises(IndexError, r"op ScatterWeightedSum #0: input 2 blob 'i': index %d at position %s is out "
               r"of range \[0, 4\) \(the rows of input 0 blob 'x' of shape \(4, 3\) float32\)" % (v, pos), op,
               {"i": bad, "v": f32(rng, 2, 2, 3)}, ins, ["x"])
        assert np.array_equal(workspace.FetchBlob("x"), x)


# ---------------------------------------------------------------- the sparse optimizers
def _case(rng, ishape, n=6, row=(3,), dup=True):
    idx = rand_indices(rng, ishape, n, dup)
    p = f32(rng, n, *row)
    g = f32(rng, *(ishape + row))
    return idx, p, g


@pytest.mark.parametrize("ishape", INDEX_SHAPES)
@pytest.mark.parametrize("nesterov", [0, 1])
@pytest.mark.parametrize("grad_in_place", [False, True])
def test_sparse_momentum_matches_reference(rng, ishape, nesterov, grad_in_place):
    idx, p, g = _case(rng, ishape, row=(2, 2))
    m = f32(rng, *p.shape)
    gout = "g" if grad_in_place else "step"
    ng, nm, np_ = run("SparseMomentumSGDUpdate", {"g": g, "m": m, "lr": one(0.1), "p": p, "i": idx},
                      ["g", "m", "lr", "p", "i"], [gout, "m", "p"], momentum=0.9, nesterov=nesterov)
    rg, rm, rp = ref_sparse_momentum(g, m, p, 0.1, idx, 0.9, nesterov)
    close(ng, rg)
    close(nm, rm)
    close(np_, rp)


@pytest.mark.parametrize("ishape", INDEX_SHAPES)
@pytest.mark.parametrize("decay", [1.0, 0.9])
def test_sparse_adagrad_matches_reference(rng, ishape, decay):
    idx, p, g = _case(rng, ishape)
    h = np.abs(f32(rng, *p.shape))
    np_, nh = run("SparseAdagrad", {"p": p, "h": h, "i": idx, "g": g, "lr": one(-0.1)},
                  ["p", "h", "i", "g", "lr"], ["p", "h"], epsilon=1e-4, decay=decay)
    rp, rh = ref_sparse_adagrad(p, h, idx, g, -0.1, 1e-4, decay)
    close(np_, rp)
    close(nh, rh)


@pytest.mark.parametrize("ishape", INDEX_SHAPES)
def test_sparse_adagrad_weight_decay(rng, ishape):
    # Caffe2's weight_decay: each occurrence adds weight_decay * (the row as it is then) to its gradient
    idx, p, g = _case(rng, ishape)
    h = np.abs(f32(rng, *p.shape))
    feeds = {"p": p, "h": h, "i": idx, "g": g, "lr": one(-0.1)}
    np_, nh = run("SparseAdagrad", feeds, ["p", "h", "i", "g", "lr"], ["p", "h"], weight_decay=0.3)
    rp, rh = ref_sparse_adagrad(p, h, idx, g, -0.1, weight_decay=0.3)
    close(np_, rp)
    close(nh, rh)
    # weight_decay 0 is bitwise the op without it
    a = run("SparseAdagrad", feeds, ["p", "h", "i", "g", "lr"], ["p", "h"])
    b = run("SparseAdagrad", feeds, ["p", "h", "i", "g", "lr"], ["p", "h"], weight_decay=0.0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    feed(feeds)
    with pytest.raises(ValueError,
                       match=r"op SparseAdagrad #0: argument weight_decay must be finite, got inf"):
        workspace.RunOperatorOnce(core.CreateOperator("SparseAdagrad", ["p", "h", "i", "g", "lr"], ["p", "h"],
                                                      weight_decay=float("inf")))


@pytest.mark.parametrize("ishape", INDEX_SHAPES)
@pytest.mark.parametrize("it", [0, 7])
def test_sparse_adam_matches_reference(rng, ishape, it):
    idx, p, g = _case(rng, ishape, row=(4,))
    m1, m2 = f32(rng, *p.shape), np.abs(f32(rng, *p.shape))
    outs = run("SparseAdam", {"p": p, "m1": m1, "m2": m2, "i": idx, "g": g, "lr": one(-0.01),
                              "it": np.array([it], np.int32)},
               ["p", "m1", "m2", "i", "g", "lr", "it"], ["p", "m1", "m2"],
               beta1=0.8, beta2=0.99, epsilon=1e-3)
    for got, want in zip(outs, ref_sparse_adam(p, m1, m2, idx, g, -0.01, it, 0.8, 0.99, 1e-3)):
        close(got, want)


@pytest.mark.parametrize("ishape", INDEX_SHAPES)
@pytest.mark.parametrize("it,beta2", [(0, 0.999), (3, 0.9), (5, 0.9), (6, 0.9), (500, 0.999), (9, 0.5)])
def test_sparse_adam_rectified(rng, ishape, it, beta2):
    # enableRAdam=1: unrectified momentum steps while rho_t < 5 (it 0 and 3 here, beta2 0.5 always),
    # the rectified Adam step after (it 5 with beta2 0.9, rho_t 5.4, just past the threshold; it 6; it 500
    # with 0.999)
    idx, p, g = _case(rng, ishape, row=(4,))
    m1, m2 = f32(rng, *p.shape), np.abs(f32(rng, *p.shape))
    feeds = {"p": p, "m1": m1, "m2": m2, "i": idx, "g": g, "lr": one(-0.01), "it": np.array([it], np.int32)}
    ins = ["p", "m1", "m2", "i", "g", "lr", "it"]
    want = ref_sparse_radam(p, m1, m2, idx, g, -0.01, it, 0.8, beta2, 1e-3)
    outs = run("SparseAdam", feeds, ins, ["p", "m1", "m2"], beta1=0.8, beta2=beta2, epsilon=1e-3,
               enableRAdam=1)
    for got, ref in zip(outs, want[:3]):
        close(got, ref)
    outs = run("SparseAdam", feeds, ins, ["p", "m1", "m2", "eg"], beta1=0.8, beta2=beta2, epsilon=1e-3,
               enableRAdam=1)
    for got, ref in zip(outs, want):
        close(got, ref)
    # enableRAdam=0 is bitwise the op without the argument
    a = run("SparseAdam", feeds, ins, ["p", "m1", "m2"], beta1=0.8, beta2=beta2, epsilon=1e-3)
    b = run("SparseAdam", feeds, ins, ["p", "m1", "m2"], beta1=0.8, beta2=beta2, epsilon=1e-3, enableRAdam=0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_sparse_adam_rectified_bad_argument(rng):
    idx, p, g = _case(rng, (2,))
    feed({"p": p, "m1": p, "m2": np.abs(p), "i": idx, "g": g, "lr": one(-0.01),
          "it": np.array([0], np.int32)})
    with pytest.raises(ValueError, match=r"op SparseAdam #0: argument enableRAdam must be 0 or 1, got 2"):
        workspace.RunOperatorOnce(core.CreateOperator("SparseAdam", ["p", "m1", "m2", "i", "g", "lr", "it"],
                                                      ["p", "m1", "m2"], enableRAdam=2))
    assert np.array_equal(workspace.FetchBlob("p"), p)


def test_sparse_optimizers_repeated_in_a_net(rng):
    """Three steps of each in one net (Iter counting for Adam), against the references."""
    idx = np.array([[2, 0], [2, 5]], np.int32)
    p = f32(rng, 6, 3)
    g = f32(rng, 2, 2, 3)
    feed({"i": idx, "g": g, "gm": g, "lr": one(-0.05), "lrp": one(0.05), "it": np.array([0], np.int32),
          "pa": p, "ha": np.zeros_like(p), "pm": p, "mm": np.zeros_like(p),
          "pd": p, "m1": np.zeros_like(p), "m2": np.zeros_like(p)})
    net = core.Net("sparse_opt_repeat")
    net.SparseAdagrad(["pa", "ha", "i", "g", "lr"], ["pa", "ha"])
    net.SparseMomentumSGDUpdate(["gm", "mm", "lrp", "pm", "i"], ["step", "mm", "pm"], momentum=0.5)
    net.SparseAdam(["pd", "m1", "m2", "i", "g", "lr", "it"], ["pd", "m1", "m2"])
    net.Iter(["it"], ["it"])
    workspace.CreateNet(net)
    workspace.RunNet(net, 3)
    rp, rh = p, np.zeros_like(p)
    rmp, rm = p, np.zeros_like(p)
    rd, r1, r2 = p, np.zeros_like(p), np.zeros_like(p)
    for t in range(3):
        rp, rh = ref_sparse_adagrad(rp, rh, idx, g, -0.05)
        _, rm, rmp = ref_sparse_momentum(g, rm, rmp, 0.05, idx, 0.5)
        rd, r1, r2 = ref_sparse_adam(rd, r1, r2, idx, g, -0.05, t)
    for name, want in (("pa", rp), ("ha", rh), ("pm", rmp), ("mm", rm), ("pd", rd), ("m1", r1), ("m2", r2)):
        close(workspace.FetchBlob(name), want, 1e-4)


# ---------------------------------------------------------------- bitwise the dense op's rows
def _dense_vs_sparse(rng, ishape):
    """Unique indices; the dense gradient holds grad row k at row INDICES[k] and zeros elsewhere."""
    n, row = 7, (2, 3)
    idx = rand_indices(rng, ishape, n, dup=False)
    g = f32(rng, *(ishape + row))
    dense_g = np.zeros((n,) + row, np.float32)
    dense_g[idx.ravel()] = g.reshape((-1,) + row)
    return idx, g, dense_g, idx.ravel(), np.setdiff1d(np.arange(n), idx.ravel()), (n,) + row


@pytest.mark.parametrize("ishape", [(4,), (2, 3)])
@pytest.mark.parametrize("nesterov", [0, 1])
def test_sparse_momentum_rows_bitwise_dense(rng, ishape, nesterov):
    idx, g, dg, rows, rest, shape = _dense_vs_sparse(rng, ishape)
    m, p = f32(rng, *shape), f32(rng, *shape)
    args = dict(momentum=0.9, nesterov=nesterov)
    dng, dm, dp = run("MomentumSGDUpdate", {"dg": dg, "dm": m, "lr": one(0.3), "dp": p},
                      ["dg", "dm", "lr", "dp"], ["dng", "dm", "dp"], **args)
    sng, sm, sp = run("SparseMomentumSGDUpdate", {"g": g, "sm": m, "sp": p, "i": idx},
                      ["g", "sm", "lr", "sp", "i"], ["sng", "sm", "sp"], **args)
    assert np.array_equal(sm[rows], dm[rows]) and np.array_equal(sp[rows], dp[rows])
    assert np.array_equal(sng.reshape((-1,) + shape[1:]), dng[rows])
    assert np.array_equal(sm[rest], m[rest]) and np.array_equal(sp[rest], p[rest])


@pytest.mark.parametrize("ishape", [(4,), (2, 3)])
def test_sparse_adagrad_rows_bitwise_dense(rng, ishape):
    idx, g, dg, rows, rest, shape = _dense_vs_sparse(rng, ishape)
    p, h = f32(rng, *shape), np.abs(f32(rng, *shape))
    args = dict(epsilon=1e-3, decay=0.95)
    dp, dh = run("Adagrad", {"dp": p, "dh": h, "dg": dg, "lr": one(-0.2)}, ["dp", "dh", "dg", "lr"],
                 ["dp", "dh"], **args)
    sp, sh = run("SparseAdagrad", {"sp": p, "sh": h, "i": idx, "g": g}, ["sp", "sh", "i", "g", "lr"],
                 ["sp", "sh"], **args)
    assert np.array_equal(sp[rows], dp[rows]) and np.array_equal(sh[rows], dh[rows])
    assert np.array_equal(sp[rest], p[rest]) and np.array_equal(sh[rest], h[rest])


@pytest.mark.parametrize("ishape", [(4,), (2, 3)])
def test_sparse_adam_rows_bitwise_dense(rng, ishape):
    idx, g, dg, rows, rest, shape = _dense_vs_sparse(rng, ishape)
    p, m1, m2 = f32(rng, *shape), f32(rng, *shape), np.abs(f32(rng, *shape))
    it = np.array([5], np.int32)
    dp, d1, d2 = run("Adam", {"dp": p, "d1": m1, "d2": m2, "dg": dg, "lr": one(-0.01), "it": it},
                     ["dp", "d1", "d2", "dg", "lr", "it"], ["dp", "d1", "d2"], beta1=0.85)
    sp, s1, s2 = run("SparseAdam", {"sp": p, "s1": m1, "s2": m2, "i": idx, "g": g},
                     ["sp", "s1", "s2", "i", "g", "lr", "it"], ["sp", "s1", "s2"], beta1=0.85)
    for s, d, orig in ((sp, dp, p), (s1, d1, m1), (s2, d2, m2)):
        assert np.array_equal(s[rows], d[rows])
        assert np.array_equal(s[rest], orig[rest])


# ---------------------------------------------------------------- no gradients
@pytest.mark.parametrize("op_type,n_in,n_out", [("ScatterWeightedSum", 5, 1),
                                                ("SparseMomentumSGDUpdate", 5, 3),
                                                ("SparseAdagrad", 5, 2), ("SparseAdam", 7, 3)])
def test_sparse_updates_have_no_gradient(op_type, n_in, n_out):
    op = core.CreateOperator(op_type, ["in%d" % k for k in range(n_in)], ["out%d" % k for k in range(n_out)])
    assert core.GradientRegistry.GetGradientForOp(op, ["g"] + [None] * (n_out - 1)) == ([], [None] * n_in)


# ---------------------------------------------------------------- bad input of the sparse optimizers
def _opt_feeds(rng):
    p = f32(rng, 4, 3)
    return {"p": p, "m": np.zeros_like(p), "m2": np.zeros_like(p), "i": np.array([[0, 3]], np.int32),
            "g": f32(rng, 1, 2, 3), "lr": one(-0.1), "it": np.array([0], np.int32)}


OPT_CASES = {
    "SparseMomentumSGDUpdate": (["g", "m", "lr", "p", "i"], ["g", "m", "p"], 3, 4, 0, 2),
    "SparseAdagrad": (["p", "m", "i", "g", "lr"], ["p", "m"], 0, 2, 3, 4),
    "SparseAdam": (["p", "m", "m2", "i", "g", "lr", "it"], ["p", "m", "m2"], 0, 3, 4, 5),
}


@pytest.mark.parametrize("op", sorted(OPT_CASES))
def test_sparse_optimizer_bad_input(rng, op):
    ins, outs, pi, ii, gi, li = OPT_CASES[op]
    base = _opt_feeds(rng)
    pre = r"op %s #0: " % op

    def bad(exc, match, **changes):
        feed(base)
        raises(exc, pre + match, op, changes, ins, outs)
        fed = dict(base, **changes)
        for name in ("p", "m"):  # nothing written
            assert np.array_equal(workspace.FetchBlob(name), fed[name])

    bad(TypeError, r"input %d blob 'i' must be int32 indices, got \(1, 2\) float32" % ii,
        i=base["i"].astype(np.float32))
    bad(ValueError, r"input %d blob 'g' \(the gradient\) must have shape \(1, 2, 3\) float32 "
        r"\(input %d blob 'i' \(1, 2\) int32 \+ input %d blob 'p' \(4, 3\) float32 without its first dim\), "
        r"got \(2, 3\) float32"
        % (gi, ii, pi), g=f32(rng, 2, 3))
    bad(TypeError, r"input %d blob 'g' must be float32, got \(1, 2, 3\) int32" % gi,
        g=np.zeros((1, 2, 3), np.int32))
    bad(ValueError, r"input %d blob 'lr' \(the learning rate\) must hold one value, got \(2,\) float32" % li,
        lr=np.array([-0.1, -0.2], np.float32))
    bad(ValueError, r"input 1 blob 'm' must have the shape of input %d blob 'p' \(4, 3\) float32, "
        r"got \(3, 4\) float32" % pi, m=np.zeros((3, 4), np.float32))
    bad(IndexError, r"input %d blob 'i': index 4 at position 1 \(element \(0, 1\) of its \(1, 2\) "
        r"int32\) is out of range \[0, 4\) \(the rows of input %d blob 'p' of shape \(4, 3\) float32\)"
        % (ii, pi),
        i=np.array([[3, 4]], np.int32))
    bad(IndexError, r"input %d blob 'i': index -1 at position 0 is out of range \[0, 4\)" % ii,
        i=np.array([-1, 0], np.int32), g=f32(rng, 2, 3))
    bad(ValueError, r"input %d blob 'p' must have at least 1 dim \(its rows\), got \(\) float32" % pi,
        p=np.float32(1), m=np.float32(0), m2=np.float32(0))
    # the state is updated in place: another output blob is refused when the op is created
    for k in range(1 if op == "SparseMomentumSGDUpdate" else 0, len(outs)):
        other = list(outs)
        other[k] = "elsewhere"
        feed(base)
        raises(ValueError, pre + r"output %d blob 'elsewhere' must be input %d blob '%s' "
               r"\(this op updates it in place\)" % (k, ins.index(outs[k]), outs[k]), op, {}, ins, other)


def test_sparse_optimizer_bad_arguments():
    feed({"p": np.zeros((2, 2), np.float32)})
    for op, ins, outs, args, match in (
            ("SparseMomentumSGDUpdate", ["g", "m", "lr", "p", "i"], ["g", "m", "p"], dict(nesterov=2),
             "argument nesterov must be 0 or 1, got 2"),
            ("SparseMomentumSGDUpdate", ["g", "m", "lr", "p", "i"], ["g", "m", "p"], dict(momentum=-1.0),
             "argument momentum must be finite and >= 0"),
            ("SparseAdagrad", ["p", "m", "i", "g", "lr"], ["p", "m"], dict(epsilon=-1.0),
             "argument epsilon must be finite and >= 0"),
            ("SparseAdam", ["p", "m", "m2", "i", "g", "lr", "it"], ["p", "m", "m2"], dict(beta1=1.0),
             r"argument beta1 must be in \[0, 1\)")):
        for b in ins:
            workspace.FeedBlob(b, np.zeros(1, np.float32))
        with pytest.raises(ValueError, match="op %s #0: %s" % (op, match)):
            workspace.RunOperatorOnce(core.CreateOperator(op, ins, outs, **args))


def test_sparse_adam_bad_iter(rng):
    base = _opt_feeds(rng)
    feed(base)
    raises(ValueError, r"op SparseAdam #0: input 6 blob 'it' \(the iteration counter\) must be >= 0, got -1",
           "SparseAdam", {"it": np.array([-1], np.int32)}, ["p", "m", "m2", "i", "g", "lr", "it"],
           ["p", "m", "m2"])
    assert np.array_equal(workspace.FetchBlob("p"), base["p"])


# ---------------------------------------------------------------- shapes checked at net creation
@pytest.mark.parametrize("op,ins,outs", [
    ("SparseToDense", ["i", "g"], ["o"]),
    ("ScatterWeightedSum", ["p", "lr", "i", "g", "lr"], ["p"]),
    ("SparseMomentumSGDUpdate", ["g", "m", "lr", "p", "i"], ["g", "m", "p"]),
    ("SparseAdagrad", ["p", "m", "i", "g", "lr"], ["p", "m"]),
    ("SparseAdam", ["p", "m", "m2", "i", "g", "lr", "it"], ["p", "m", "m2"]),
])
def test_sparse_shapes_checked_at_net_creation(rng, op, ins, outs):
    base = _opt_feeds(rng)
    base["g"] = f32(rng, 5, 3)  # not (1, 2) + (3,)
    feed(base)
    net = core.Net("sparse_check")
    getattr(net, op)(ins, outs)
    with pytest.raises(ValueError, match=r"op %s #0: input \d blob '[gi]'" % op):
        workspace.CreateNet(net)


# ---------------------------------------------------------------- CopyRowsToTensor
def ref_copy_rows(x, idx, row):
    y = x.copy()
    y[idx] = row
    return y


@pytest.mark.parametrize("n,w,idx", [(5, 3, [1, 3]), (4, 2, []), (3, 4, [2, 2, 0]), (0, 3, []), (3, 0, [1])])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_copy_rows_to_tensor_matches_reference(rng, n, w, idx, dtype):
    x = (rng.randn(n, w) * 10).astype(dtype)
    row = (rng.randn(w) * 10).astype(dtype)
    idx = np.array(idx, np.int32)
    (y,) = run("CopyRowsToTensor", dict(x=x, i=idx, r=row), ["x", "i", "r"], ["x"])
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, ref_copy_rows(x, idx, row))


def _copy_rows_loss(x, idx, row, dy):
    (y,) = run("CopyRowsToTensor", dict(x=x, i=idx, r=row), ["x", "i", "r"], ["x"])
    return float((y.astype(np.float64) * dy).sum())


@pytest.mark.parametrize("idx", [[1, 3], [2, 2, 0], []])
def test_copy_rows_to_tensor_gradient(rng, idx):
    x, row, dy = f32(rng, 4, 3), f32(rng, 3), f32(rng, 4, 3)
    idx = np.array(idx, np.int32)
    op = core.CreateOperator("CopyRowsToTensor", ["x", "i", "r"], ["x"])
    grad_ops, g_in = core.GradientRegistry.GetGradientForOp(op, ["x_grad"])
    assert g_in == ["x_grad", None, "r_grad"] and [g.type for g in grad_ops] == ["CopyRowsToTensorGradient"]
    feed(dict(x_grad=dy, i=idx))
    for g in grad_ops:
        workspace.RunOperatorOnce(g)
    dx, drow = workspace.FetchBlob("x_grad"), workspace.FetchBlob("r_grad")
    # finite differences of sum(Y * dY) (linear: exact up to rounding)
    eps = 1e-2
    for arr, grad in ((x, dx), (row, drow)):
        est = np.zeros(arr.shape)
        for k in np.ndindex(*arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[k] += eps
            minus[k] -= eps
            xp, rp = (plus, row) if arr is x else (x, plus)
            xm, rm = (minus, row) if arr is x else (x, minus)
            est[k] = (_copy_rows_loss(xp, idx, rp, dy) - _copy_rows_loss(xm, idx, rm, dy)) / (2 * eps)
        np.testing.assert_allclose(grad, est, atol=1e-3)
    # and the reference: overwritten rows get none, the row their sum (each index once)
    ref = dy.copy()
    ref[idx] = 0
    np.testing.assert_array_equal(dx, ref)
    np.testing.assert_allclose(drow, dy[np.unique(idx)].sum(axis=0) if idx.size else np.zeros(3), rtol=1e-6)
    # in place on dY, one output
    (dx1,) = run("CopyRowsToTensorGradient", dict(g=dy, i=idx), ["g", "i"], ["g"])
    np.testing.assert_array_equal(dx1, ref)


def test_copy_rows_to_tensor_bad_input(rng):
    base = dict(x=f32(rng, 3, 2), i=np.array([0], np.int32), r=f32(rng, 2))
    raises(ValueError, r"^op CopyRowsToTensor #0: width of input tensor should match lengths of row: input 0 "
                       r"blob 'x' is \(3, 2\) float32, input 2 blob 'r3' must be 1-D of 2 values, got \(3,\) "
                       r"float32$",
           "CopyRowsToTensor", dict(base, r3=f32(rng, 3)), ["x", "i", "r3"], ["x"])
    raises(ValueError, r"width of input tensor should match lengths of row: .* got \(1,\) float32$",
           "CopyRowsToTensor", dict(base, r1=f32(rng, 1)), ["x", "i", "r1"], ["x"])
    raises(ValueError, r"width of input tensor should match lengths of row: .* got \(1, 2\) float32$",
           "CopyRowsToTensor", dict(base, r2=f32(rng, 1, 2)), ["x", "i", "r2"], ["x"])
    raises(IndexError, r"^op CopyRowsToTensor #0: input 1 blob 'i3': index 3 at position 1 is out of range "
                       r"\[0, 3\)", "CopyRowsToTensor", dict(base, i3=np.array([0, 3], np.int32)),
           ["x", "i3", "r"], ["x"])
    raises(IndexError, r"index -1 at position 0", "CopyRowsToTensor", dict(base, im=np.array([-1], np.int32)),
           ["x", "im", "r"], ["x"])
    raises(ValueError, r"^op CopyRowsToTensor #0: output 0 blob 'y' must be input 0 blob 'x' \(this op "
                       r"updates it in place\)$", "CopyRowsToTensor", base, ["x", "i", "r"], ["y"])
    raises(ValueError, r"^op CopyRowsToTensor #0: input 0 blob 'x3' must be 2-D, got \(3, 2, 1\) float32$",
           "CopyRowsToTensor", dict(base, x3=f32(rng, 3, 2, 1)), ["x3", "i", "r"], ["x3"])
    raises(ValueError, r"^op CopyRowsToTensor #0: input 1 blob 'i2' \(the indices\) must be 1-D, got "
                       r"\(1, 1\)",
           "CopyRowsToTensor", dict(base, i2=np.zeros((1, 1), np.int32)), ["x", "i2", "r"], ["x"])
    raises(TypeError, r"^op CopyRowsToTensor #0: input 1 blob 'fi' must be int32 indices",
           "CopyRowsToTensor", dict(base, fi=np.zeros(1, np.float32)), ["x", "fi", "r"], ["x"])
    raises(TypeError, r"^op CopyRowsToTensor #0: input 2 blob 'ri' must be float32, got \(2,\) int32",
           "CopyRowsToTensor", dict(base, ri=np.zeros(2, np.int32)), ["x", "i", "ri"], ["x"])
    raises(TypeError, r"^op CopyRowsToTensorGradient #0: input 0 blob 'gi' must be float32",
           "CopyRowsToTensorGradient", dict(base, gi=np.zeros((3, 2), np.int32)), ["gi", "i"], ["dx"])
    raises(IndexError, r"^op CopyRowsToTensorGradient #0: input 1 blob 'i3': index 3",
           "CopyRowsToTensorGradient", dict(base, i3=np.array([3], np.int32)), ["x", "i3"], ["dx", "dr"])
    # nothing was written by the failing runs
    np.testing.assert_array_equal(workspace.FetchBlob("x"), base["x"])


def test_copy_rows_to_tensor_checked_at_net_creation(rng):
    x = f32(rng, 3, 2)
    feed(dict(x=x, i=np.array([0], np.int32), r=f32(rng, 3)))
    net = core.Net("crt_early")
    net.CopyRowsToTensor(["x", "i", "r"], ["x"])
    with pytest.raises(ValueError, match=r"^net 'crt_early': op CopyRowsToTensor #0: width of input tensor "
                                         r"should match lengths of row"):
        workspace.CreateNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x)
