"""The ops of Caffe2's RmsProp, Adadelta and Wngrad optimizers (csrc/ops/optim_adaptive.c):
RmsProp, Adadelta, SparseAdadelta, Wngrad, SparseWngrad.

Every op against a float64 NumPy reference over several steps in place, the
in-place results equal to the out-of-place ones bit for bit, the sparse ops
equal to the dense ones bit for bit on unique rows (rows not named stay as they
were), repeated rows as documented (Adadelta: one occurrence at a time; Wngrad:
every occurrence steps from the SEQ_B read before the op, and each counts in
SEQ_B), no gradient, and bad input by exception type and message.
"""

import numpy as np
import pytest

from recurrent import core, workspace


def run(op_type, feeds, outputs, inputs=None, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    inputs = list(feeds) if inputs is None else inputs
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))
    return [workspace.FetchBlob(o) for o in outputs]


def raises(exc, match, op_type, feeds, outputs, inputs=None, **args):
    for name, value in feeds.items():
        workspace.FeedBlob(name, value)
    inputs = list(feeds) if inputs is None else inputs
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))


def f32(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


def one(v):
    return np.array([v], np.float32)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- references (float64)
def ref_rmsprop(g, ms, mom, lr, decay=0.9, momentum=0.0, eps=1e-5):
    g, ms, mom = (np.asarray(a, np.float64) for a in (g, ms, mom))
    ms = ms + (1 - decay) * (g * g - ms)
    mom = momentum * mom + lr * g / np.sqrt(eps + ms)
    return mom, ms, mom


def ref_adadelta(w, h, d, g, lr, eps=1e-5, decay=0.95):
    w, h, d, g = (np.asarray(a, np.float64) for a in (w, h, d, g))
    h = decay * h + (1 - decay) * g * g
    u = np.sqrt(d + eps) / np.sqrt(h + eps) * g
    return w + lr * u, h, decay * d + (1 - decay) * u * u


def ref_wngrad(w, b, g, lr, eps=1e-5):
    w, g = np.asarray(w, np.float64), np.asarray(g, np.float64)
    b = float(np.asarray(b).reshape(-1)[0])
    eff = lr / (b + eps)
    return w + eff * g, b + (g * g).sum() / (b + eps), eff, eff * g


# ---------------------------------------------------------------- RmsProp
@pytest.mark.parametrize("decay,momentum,eps", [(0.9, 0.0, 1e-5), (0.5, 0.8, 1e-3), (0.0, 0.3, 1e-8),
                                                (1.0, 0.9, 1e-2)])
def test_rmsprop_steps_in_place_match_numpy(rng, decay, momentum, eps):
    shape = (3, 4)
    ms = np.abs(f32(rng, *shape))
    mom = f32(rng, *shape)
    r_ms, r_mom = ms.astype(np.float64), mom.astype(np.float64)
    workspace.FeedBlob("ms", ms)
    workspace.FeedBlob("mom", mom)
    for step in range(4):
        g = f32(rng, *shape)
        lr = 0.1 * (step + 1)
        go, ms_o, mom_o = run("RmsProp", {"g": g, "lr": one(lr)}, ["g", "ms", "mom"],
                              ["g", "ms", "mom", "lr"], decay=decay, momentum=momentum, epsilon=eps)
        r_go, r_ms, r_mom = ref_rmsprop(g, r_ms, r_mom, lr, decay, momentum, eps)
        close(ms_o, r_ms)
        close(mom_o, r_mom)
        close(go, r_go)
        assert ms_o.dtype == np.float32 and go.shape == shape


def test_rmsprop_defaults_and_new_outputs(rng):
    g, ms, mom = f32(rng, 5), np.abs(f32(rng, 5)), f32(rng, 5)
    go, ms_o, mom_o = run("RmsProp", {"g": g, "ms": ms, "mom": mom, "lr": one(0.5)}, ["go", "ms_o", "mom_o"])
    r = ref_rmsprop(g, ms, mom, 0.5)  # decay 0.9, momentum 0, epsilon 1e-5
    close(go, r[0])
    close(ms_o, r[1])
    close(mom_o, r[2])
    # the inputs are untouched; in place gives the same bits
    np.testing.assert_array_equal(workspace.FetchBlob("g"), g)
    ip = run("RmsProp", {}, ["g", "ms", "mom"], ["g", "ms", "mom", "lr"])
    for a, b in zip(ip, (go, ms_o, mom_o)):
        np.testing.assert_array_equal(a, b)


def test_rmsprop_empty_and_0d(rng):
    e = np.zeros((0, 3), np.float32)
    outs = run("RmsProp", {"g": e, "ms": e, "mom": e, "lr": one(1.0)}, ["g", "ms", "mom"])
    assert all(o.shape == (0, 3) for o in outs)
    s = np.array(2.0, np.float32)
    go, _, _ = run("RmsProp", {"g": s, "ms": np.array(0.0, np.float32), "mom": np.array(0.0, np.float32),
                               "lr": one(1.0)}, ["go", "mso", "momo"], ["g", "ms", "mom", "lr"], decay=0.0,
                   epsilon=0.0)
    assert go.shape == () and float(go) == 1.0  # 2 / sqrt(4)


# ---------------------------------------------------------------- Adadelta
@pytest.mark.parametrize("eps,decay", [(1e-5, 0.95), (1e-2, 0.5), (0.0, 0.9)])
def test_adadelta_steps_in_place_match_numpy(rng, eps, decay):
    shape = (4, 2)
    w = f32(rng, *shape)
    h, d = np.abs(f32(rng, *shape)) + 0.1, np.abs(f32(rng, *shape)) + 0.1
    r = (w.astype(np.float64), h.astype(np.float64), d.astype(np.float64))
    for name, v in zip(("w", "h", "d"), (w, h, d)):
        workspace.FeedBlob(name, v)
    for step in range(4):
        g = f32(rng, *shape)
        lr = -0.5 / (step + 1)
        outs = run("Adadelta", {"g": g, "lr": one(lr)}, ["w", "h", "d"], ["w", "h", "d", "g", "lr"],
                   epsilon=eps, decay=decay)
        r = ref_adadelta(*r, g, lr, eps, decay)
        for a, b in zip(outs, r):
            close(a, b)
    assert not np.allclose(workspace.FetchBlob("w"), w)


def test_adadelta_defaults_and_in_place_equals_out_of_place(rng):
    w, h, d, g = f32(rng, 6), np.abs(f32(rng, 6)), np.abs(f32(rng, 6)), f32(rng, 6)
    feeds = {"w": w, "h": h, "d": d, "g": g, "lr": one(-1.0)}
    out = run("Adadelta", feeds, ["w2", "h2", "d2"])
    for a, b in zip(out, ref_adadelta(w, h, d, g, -1.0)):  # epsilon 1e-5, decay 0.95
        close(a, b)
    ip = run("Adadelta", feeds, ["w", "h", "d"])
    for a, b in zip(ip, out):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- SparseAdadelta
def _table(rng, rows=7, cols=3):
    return f32(rng, rows, cols), np.abs(f32(rng, rows, cols)), np.abs(f32(rng, rows, cols))


@pytest.mark.parametrize("idx_shape", [(4,), (2, 2)])
def test_sparse_adadelta_unique_rows_equal_dense_bitwise(rng, idx_shape):
    w, h, d = _table(rng)
    idx = np.array([5, 0, 3, 6], np.int32).reshape(idx_shape)
    g = f32(rng, *(idx_shape + (3,)))
    dense_g = np.zeros_like(w)
    dense_g[idx.ravel()] = g.reshape(-1, 3)
    dw, dh, dd = run("Adadelta", {"w": w, "h": h, "d": d, "g": dense_g, "lr": one(-0.3)}, ["dw", "dh", "dd"],
                     epsilon=1e-4, decay=0.8)
    sw, sh, sd = run("SparseAdadelta", {"w": w, "h": h, "d": d, "i": idx, "g": g, "lr": one(-0.3)},
                     ["w", "h", "d"], epsilon=1e-4, decay=0.8)
    rows = idx.ravel()
    untouched = np.setdiff1d(np.arange(7), rows)
    for s, dn, orig in ((sw, dw, w), (sh, dh, h), (sd, dd, d)):
        np.testing.assert_array_equal(s[rows], dn[rows])
        np.testing.assert_array_equal(s[untouched], orig[untouched])


def test_sparse_adadelta_repeated_rows_one_occurrence_at_a_time(rng):
    w, h, d = _table(rng)
    idx = np.array([2, 4, 2, 2], np.int32)
    g = f32(rng, 4, 3)
    sw, sh, sd = run("SparseAdadelta", {"w": w, "h": h, "d": d, "i": idx, "g": g, "lr": one(-0.5)},
                     ["w", "h", "d"])
    rw, rh, rd = (a.astype(np.float64) for a in (w, h, d))
    for k, i in enumerate(idx):
        rw[i], rh[i], rd[i] = ref_adadelta(rw[i], rh[i], rd[i], g[k], -0.5)
    close(sw, rw)
    close(sh, rh)
    close(sd, rd)
    # not the dense step with the summed gradient
    summed = np.zeros_like(w)
    np.add.at(summed, idx, g)
    assert not np.allclose(sw, ref_adadelta(w, h, d, summed, -0.5)[0], rtol=1e-4)


def test_sparse_adadelta_empty_indices_change_nothing(rng):
    w, h, d = _table(rng)
    outs = run("SparseAdadelta", {"w": w, "h": h, "d": d, "i": np.zeros(0, np.int32),
                                  "g": np.zeros((0, 3), np.float32), "lr": one(-0.5)}, ["w", "h", "d"])
    for a, b in zip(outs, (w, h, d)):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- Wngrad
@pytest.mark.parametrize("n_out", [2, 3, 4])
def test_wngrad_steps_in_place_match_numpy(rng, n_out):
    w = f32(rng, 3, 5)
    workspace.FeedBlob("w", w)
    workspace.FeedBlob("b", one(2.0))
    rw, rb = w.astype(np.float64), 2.0
    outs = ["w", "b", "eff", "upd"][:n_out]
    for step in range(4):
        g = f32(rng, 3, 5)
        lr = -0.7 + 0.1 * step
        got = run("Wngrad", {"g": g, "lr": one(lr)}, outs, ["w", "b", "g", "lr"], epsilon=1e-3)
        rw, rb_new, eff, upd = ref_wngrad(rw, rb, g, lr, 1e-3)
        close(got[0], rw)
        close(got[1], [rb_new])
        if n_out >= 3:
            close(got[2], [eff])
            assert got[2].shape == (1,)
        if n_out == 4:
            close(got[3], upd)
            assert got[3].shape == (3, 5)
        rb = rb_new
    assert rb > 2.0


def test_wngrad_outputs_agree_across_output_counts(rng):
    """Caffe2 computed param + lr * g / (b + eps) with two outputs and
    param + (lr / (b + eps)) * g with more; both are kept (equal to rounding)."""
    w, g = f32(rng, 8), f32(rng, 8)
    feeds = {"w": w, "b": one(3.0), "g": g, "lr": one(-0.3)}
    two = run("Wngrad", feeds, ["w2", "b2"])
    four = run("Wngrad", feeds, ["w4", "b4", "e4", "u4"])
    np.testing.assert_array_equal(two[1], four[1])
    np.testing.assert_allclose(two[0], four[0], rtol=1e-6)
    lr, den = np.float32(-0.3), np.float32(3.0) + np.float32(1e-5)
    np.testing.assert_array_equal(two[0], w + lr * g / den)
    eff = lr / den
    np.testing.assert_array_equal(four[2], [eff])
    np.testing.assert_array_equal(four[3], eff * g)
    np.testing.assert_array_equal(four[0], w + eff * g)


def test_wngrad_sums_the_squares_in_double():
    """1 + 4096 squares of 2^-12: a float accumulator stays at 1 (each 2^-24
    rounds away); the double sum is 1 + 2^-12."""
    g = np.full(4097, 2.0 ** -12, np.float32)
    g[0] = 1.0
    _, b = run("Wngrad", {"w": np.zeros(4097, np.float32), "b": one(1.0), "g": g, "lr": one(-1.0)},
               ["w", "b"], epsilon=0.0)
    assert float(b[0]) == np.float32(1.0 + (1.0 + 2.0 ** -12))


def test_wngrad_keeps_seq_bs_shape_and_empty_param(rng):
    b = np.array([[5.0]], np.float32)
    w, nb, eff = run("Wngrad", {"w": np.zeros(0, np.float32), "b": b, "g": np.zeros(0, np.float32),
                                "lr": one(-1.0)}, ["w", "b", "eff"])
    assert w.shape == (0,) and nb.shape == (1, 1) and float(nb[0, 0]) == 5.0 and eff.shape == (1, 1)


# ---------------------------------------------------------------- SparseWngrad
def test_sparse_wngrad_unique_rows_equal_dense_bitwise(rng):
    w = f32(rng, 6, 2)
    idx = np.array([[0, 2], [3, 5]], np.int32)  # sorted: the sums of squares add in the same order
    g = f32(rng, 2, 2, 2)
    dense_g = np.zeros_like(w)
    dense_g[idx.ravel()] = g.reshape(-1, 2)
    dw, db = run("Wngrad", {"w": w, "b": one(1.5), "g": dense_g, "lr": one(-0.4)}, ["dw", "db"], epsilon=1e-4)
    sw, sb = run("SparseWngrad", {"w": w, "b": one(1.5), "i": idx, "g": g, "lr": one(-0.4)}, ["w", "b"],
                 epsilon=1e-4)
    np.testing.assert_array_equal(sw, dw)
    np.testing.assert_array_equal(sb, db)
    np.testing.assert_array_equal(sw[[1, 4]], w[[1, 4]])


def test_sparse_wngrad_repeated_rows_step_from_the_old_seq_b(rng):
    w = f32(rng, 4, 3)
    idx = np.array([1, 3, 1], np.int32)
    g = f32(rng, 3, 3)
    sw, sb = run("SparseWngrad", {"w": w, "b": one(2.0), "i": idx, "g": g, "lr": one(-0.5)}, ["w", "b"])
    den = 2.0 + 1e-5
    rw = w.astype(np.float64)
    for k, i in enumerate(idx):
        rw[i] += -0.5 * g[k] / den
    close(sw, rw)
    close(sb, [2.0 + (g.astype(np.float64) ** 2).sum() / den])  # each occurrence counted


def test_sparse_wngrad_at_zero_seq_b_divides_by_epsilon(rng):
    """Caffe2's SparseWngrad divided the sum of squares by SEQ_B alone (inf at 0)."""
    w, g = f32(rng, 3, 2), f32(rng, 1, 2)
    sw, sb = run("SparseWngrad", {"w": w, "b": one(0.0), "i": np.array([2], np.int32), "g": g,
                                  "lr": one(-1e-3)}, ["w", "b"], epsilon=0.5)
    close(sb, [(g.astype(np.float64) ** 2).sum() / 0.5])
    close(sw[2], w[2] - 1e-3 * g[0] / 0.5)
    assert np.isfinite(sb).all()


def test_no_gradients():
    for op_type, ins, outs in (("RmsProp", ["g", "ms", "m", "lr"], ["g", "ms", "m"]),
                               ("Adadelta", ["w", "h", "d", "g", "lr"], ["w", "h", "d"]),
                               ("SparseAdadelta", ["w", "h", "d", "i", "g", "lr"], ["w", "h", "d"]),
                               ("Wngrad", ["w", "b", "g", "lr"], ["w", "b"]),
                               ("SparseWngrad", ["w", "b", "i", "g", "lr"], ["w", "b"])):
        op = core.CreateOperator(op_type, ins, outs)
        grads = core.GradientRegistry.GetGradientForOp(op, [o + "_grad" for o in outs])
        assert grads == ([], [None] * len(ins)), op_type


# ---------------------------------------------------------------- bad input
def test_rmsprop_bad_input(rng):
    v = f32(rng, 3)
    outs = ["g", "ms", "m"]

    def feeds(**kw):
        d = {"g": v, "ms": v, "m": v, "lr": one(1.0)}
        d.update(kw)
        return d

    raises(ValueError, r"op RmsProp #0: input 1 blob 'ms' must have the shape of input 0 blob 'g' \(3,\) "
                       r"float32, "
                       r"got \(3, 1\) float32", "RmsProp", feeds(ms=f32(rng, 3, 1)), outs)
    raises(ValueError, r"op RmsProp #0: input 2 blob 'm' must have the shape of input 0 blob 'g' \(3,\) "
                       r"float32, "
                       r"got \(4,\) float32", "RmsProp", feeds(m=f32(rng, 4)), outs)
    raises(TypeError, r"op RmsProp #0: input 0 blob 'g' must be float32, got \(3,\) int32", "RmsProp",
           feeds(g=np.zeros(3, np.int32)), outs)
    raises(ValueError, r"op RmsProp #0: input 3 blob 'lr' \(the learning rate\) must hold one value, got "
                       r"\(2,\) "
                       r"float32", "RmsProp", feeds(lr=np.ones(2, np.float32)), outs)
    for arg, val, msg in (("decay", 1.5, r"decay must be in \[0, 1\], got 1.5"),
                          ("decay", float("nan"), r"decay must be in \[0, 1\], got nan"),
                          ("momentum", -0.1, r"momentum must be finite and >= 0, got -0.1"),
                          ("epsilon", float("inf"), r"epsilon must be finite and >= 0, got inf")):
        raises(ValueError, r"op RmsProp #0: argument " + msg, "RmsProp", feeds(), outs, **{arg: val})
    raises(ValueError, r"op RmsProp #0: input 0 and output 1 are the same blob 'g'", "RmsProp", feeds(),
           ["x", "g", "m"])


def test_adadelta_bad_input(rng):
    v = f32(rng, 2, 2)
    outs = ["w", "h", "d"]

    def feeds(**kw):
        d = {"w": v, "h": v, "d": v, "g": v, "lr": one(-1.0)}
        d.update(kw)
        return d

    raises(ValueError, r"op Adadelta #0: input 3 blob 'g' must have the shape of input 0 blob 'w' \(2, 2\) "
                       r"float32, got \(4,\) float32", "Adadelta", feeds(g=f32(rng, 4)), outs)
    raises(ValueError, r"op Adadelta #0: input 2 blob 'd' must have the shape of input 0 blob 'w' \(2, 2\) "
                       r"float32, got \(2, 3\) float32", "Adadelta", feeds(d=f32(rng, 2, 3)), outs)
    raises(TypeError, r"op Adadelta #0: input 4 blob 'lr' must be float32, got \(1,\) int32", "Adadelta",
           feeds(lr=np.ones(1, np.int32)), outs)
    for arg, val, msg in (("decay", 1.0, r"decay must be in \(0, 1\), got 1"),
                          ("decay", 0.0, r"decay must be in \(0, 1\), got 0"),
                          ("epsilon", -1e-3, r"epsilon must be finite and >= 0, got -0.001")):
        raises(ValueError, r"op Adadelta #0: argument " + msg, "Adadelta", feeds(), outs, **{arg: val})
    raises(ValueError, r"op Adadelta #0: expects 3 outputs, got 2", "Adadelta", feeds(), ["w", "h"])


def test_sparse_adadelta_bad_input(rng):
    w, h, d = _table(rng, 4, 2)
    ins = ["w", "h", "d", "i", "g", "lr"]

    def feeds(**kw):
        f = {"w": w, "h": h, "d": d, "i": np.array([1, 3], np.int32), "g": f32(rng, 2, 2), "lr": one(-1.0)}
        f.update(kw)
        return f

    raises(IndexError, r"op SparseAdadelta #0: input 3 blob 'i': index 4 at position 1 is out of range "
                       r"\[0, 4\) "
                       r"\(the rows of input 0 blob 'w' of shape \(4, 2\) float32\)", "SparseAdadelta",
           feeds(i=np.array([0, 4], np.int32)), ["w", "h", "d"], ins)
    for name, v in zip(("w", "h", "d"), (w, h, d)):  # nothing was written
        np.testing.assert_array_equal(workspace.FetchBlob(name), v)
    raises(ValueError, r"op SparseAdadelta #0: input 4 blob 'g' \(the gradient\) must have shape \(2, 2\) "
                       r"float32 \(input 3 blob 'i' \(2,\) int32 \+ input 0 blob 'w' \(4, 2\) float32 "
                       r"without its "
                       r"first dim\), got \(2, 3\) float32", "SparseAdadelta", feeds(g=f32(rng, 2, 3)),
           ["w", "h", "d"], ins)
    raises(TypeError, r"op SparseAdadelta #0: input 3 blob 'i' must be int32 indices, got \(2,\) float32",
           "SparseAdadelta", feeds(i=np.ones(2, np.float32)), ["w", "h", "d"], ins)
    raises(ValueError, r"op SparseAdadelta #0: input 1 blob 'h' must have the shape of input 0 blob 'w' "
                       r"\(4, 2\) float32, got \(4, 3\) float32", "SparseAdadelta", feeds(h=f32(rng, 4, 3)),
           ["w", "h", "d"], ins)
    raises(ValueError, r"op SparseAdadelta #0: output 2 blob 'd_new' must be input 2 blob 'd' \(this op "
                       r"updates "
                       r"it in place\)", "SparseAdadelta", feeds(), ["w", "h", "d_new"], ins)


def test_wngrad_bad_input(rng):
    v = f32(rng, 3)
    ins = ["w", "b", "g", "lr"]

    def feeds(**kw):
        f = {"w": v, "b": one(1.0), "g": v, "lr": one(-1.0)}
        f.update(kw)
        return f

    raises(ValueError, r"op Wngrad #0: input 2 blob 'g' must have the shape of input 0 blob 'w' \(3,\) "
                       r"float32, "
                       r"got \(1, 3\) float32", "Wngrad", feeds(g=f32(rng, 1, 3)), ["w", "b"], ins)
    raises(ValueError, r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must hold one value, got \(0,\) float32",
           "Wngrad", feeds(b=np.zeros(0, np.float32)), ["w", "b"], ins)
    raises(ValueError, r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must be finite with seq_b \+ epsilon > "
                       r"0, got -1 "
                       r"\(epsilon 1e-05\)", "Wngrad", feeds(b=one(-1.0)), ["w", "b"], ins)
    raises(ValueError, r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must be finite with seq_b \+ epsilon > "
                       r"0, got nan",
           "Wngrad", feeds(b=one(np.nan)), ["w", "b"], ins)
    np.testing.assert_array_equal(workspace.FetchBlob("w"), v)  # a refused run writes nothing
    raises(ValueError, r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must be finite with seq_b \+ epsilon > "
                       r"0, got 0 "
                       r"\(epsilon 0\)", "Wngrad", feeds(b=one(0.0)), ["w", "b"], ins, epsilon=0.0)
    raises(ValueError, r"op Wngrad #0: argument epsilon must be finite and >= 0, got -1", "Wngrad", feeds(),
           ["w", "b"], ins, epsilon=-1.0)
    raises(ValueError, r"op Wngrad #0: input 2 and output 2 are the same blob 'g'", "Wngrad", feeds(),
           ["w", "b", "g"], ins)
    raises(ValueError, r"op Wngrad #0: expects 2 to 4 outputs, got 5", "Wngrad", feeds(),
           ["w", "b", "e", "u", "x"], ins)


def test_sparse_wngrad_bad_input(rng):
    w = f32(rng, 3, 2)
    ins = ["w", "b", "i", "g", "lr"]

    def feeds(**kw):
        f = {"w": w, "b": one(1.0), "i": np.array([[0], [2]], np.int32), "g": f32(rng, 2, 1, 2),
             "lr": one(-1.0)}
        f.update(kw)
        return f

    raises(IndexError, r"op SparseWngrad #0: input 2 blob 'i': index -1 at position 1 \(element \(1, 0\) "
                       r"of its "
                       r"\(2, 1\) int32\) is out of range \[0, 3\)", "SparseWngrad",
           feeds(i=np.array([[0], [-1]], np.int32)), ["w", "b"], ins)
    np.testing.assert_array_equal(workspace.FetchBlob("w"), w)
    np.testing.assert_array_equal(workspace.FetchBlob("b"), one(1.0))
    raises(ValueError, r"op SparseWngrad #0: input 1 blob 'b' \(seq_b\) must hold one value, got \(2,\) "
                       r"float32",
           "SparseWngrad", feeds(b=np.ones(2, np.float32)), ["w", "b"], ins)
    raises(ValueError, r"op SparseWngrad #0: input 3 blob 'g' \(the gradient\) must have shape \(2, 1, "
                       r"2\) float32",
           "SparseWngrad", feeds(g=f32(rng, 2, 2)), ["w", "b"], ins)
    raises(ValueError, r"op SparseWngrad #0: output 1 blob 'b2' must be input 1 blob 'b' \(this op "
                       r"updates it in "
                       r"place\)", "SparseWngrad", feeds(), ["w", "b2"], ins)


@pytest.mark.parametrize("op_type,ins,feeds,msg", [
    ("RmsProp", ["g", "ms", "m", "lr"], dict(g=(3,), ms=(3,), m=(2,), lr=(1,)),
     r"op RmsProp #0: input 2 blob 'm' must have the shape of input 0 blob 'g'"),
    ("Adadelta", ["w", "h", "d", "g", "lr"], dict(w=(2, 2), h=(2, 2), d=(2, 2), g=(2, 2), lr=(2,)),
     r"op Adadelta #0: input 4 blob 'lr' \(the learning rate\) must hold one value"),
    ("SparseAdadelta", ["w", "h", "d", "i", "g", "lr"], dict(w=(4, 2), h=(4, 2), d=(4, 2), g=(3, 2), lr=(1,)),
     r"op SparseAdadelta #0: input 4 blob 'g' \(the gradient\) must have shape \(2, 2\)"),
    ("Wngrad", ["w", "b", "g", "lr"], dict(w=(3,), b=(2,), g=(3,), lr=(1,)),
     r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must hold one value"),
    ("SparseWngrad", ["w", "b", "i", "g", "lr"], dict(w=(4, 2), b=(1,), g=(2, 3), lr=(1,)),
     r"op SparseWngrad #0: input 3 blob 'g' \(the gradient\) must have shape \(2, 2\)"),
])
def test_shapes_are_checked_at_net_creation(op_type, ins, feeds, msg):
    for name, shape in feeds.items():
        workspace.FeedBlob(name, np.ones(shape, np.float32))
    workspace.FeedBlob("i", np.array([0, 1], np.int32))
    net = core.Net("adaptive")
    outs = ins[:2] if "Wngrad" in op_type else ins[:3]
    getattr(net, op_type)(ins, outs)
    with pytest.raises(ValueError, match="net 'adaptive[^']*': " + msg):
        workspace.CreateNet(net)
