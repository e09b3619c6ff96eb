"""Ftrl, SparseFtrl, RowWiseSparseAdagrad, RowWiseSparseAdam, RowWiseCounter and SparseNormalize
(csrc/ops/optim_rowwise.c).

Each against a float32 NumPy reference written from Caffe2's kernels
(ftrl_op.cc, adagrad_op.h, adam_op.h; RowWiseCounter in float64 from
rowwise_counter.h, SparseNormalize in float64 from sparse_normalize_op.cc) over
several steps, repeated indices (one update per occurrence, in order), the
sparse ops equal to the dense
step on the rows they name, in-place equal to out-of-place, no gradient,
and bad input by exception type and exact message; a refused run leaves
the state as it was.
"""

import numpy as np
import pytest

from recurrent import core, workspace

f32 = np.float32


def feed(**blobs):
    for name, value in blobs.items():
        workspace.FeedBlob(name, value)


def run(op_type, inputs, outputs, **args):
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))
    return [workspace.FetchBlob(o) for o in outputs]


def raises(exc, match, op_type, inputs, outputs, **args):
    with pytest.raises(exc, match=match):
        workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **args))


def idx(*v):
    return np.array(v, np.int32)


# ---------------------------------------------------------------- references (float32, element by element)
def ref_ftrl(w, nz, g, alpha=0.005, beta=1.0, lambda1=0.001, lambda2=0.001):
    """New (w, nz): Caffe2's ftrl_compute on every element, in float32."""
    w, nz, g = w.astype(f32), nz.astype(f32).copy(), g.astype(f32)
    a_inv, beta, l1, l2 = f32(1.0 / f32(alpha)), f32(beta), f32(lambda1), f32(lambda2)
    n, z = nz[..., 0], nz[..., 1]
    n1 = n + g * g
    sigma = (np.sqrt(n1) - np.sqrt(n)) * a_inv
    z1 = z + g - sigma * w
    sgn = np.where(z1 < 0, f32(-1), f32(1)).astype(f32)
    w1 = np.where(np.abs(z1) > l1, (l1 * sgn - z1) / ((beta + np.sqrt(n1)) * a_inv + l2), f32(0)).astype(f32)
    return w1, np.stack([n1, z1], axis=-1).astype(f32)


def ref_sparse_ftrl(w, nz, indices, g, **args):
    w, nz = w.copy(), nz.copy()
    rows = g.reshape((-1,) + w.shape[1:])
    for k, i in enumerate(indices.ravel()):
        w[i], nz[i] = ref_ftrl(w[i], nz[i], rows[k], **args)
    return w, nz


def ref_rowwise_adagrad(w, h, indices, g, lr, epsilon=1e-5, weight_decay=0.0, counter_halflife=-1, count=None):
    """Caffe2's rowwise step (adagrad_test_helper's ref_adagrad, row_wise=True), in float32 in the op's order:
    the row's gradient plus weight_decay (times counter_halflife / count[i] when both are > 0) times the row."""
    w, h = w.copy(), h.copy()
    R = int(np.prod(w.shape[1:], dtype=np.int64))
    rows = g.reshape(-1, R).astype(f32)
    flat = w.reshape(w.shape[0], R)
    lr, eps = f32(lr), f32(epsilon)
    for k, i in enumerate(indices.ravel()):
        wd = weight_decay
        if count is not None and counter_halflife > 0 and count[i] > 0:
            wd = weight_decay * counter_halflife / float(count[i])
        wd = f32(wd)
        gk = rows[k] if wd == 0 else (rows[k].astype(np.float64) + np.float64(wd) * flat[i]).astype(f32)
        if R == 1:
            h[i] = h[i] + gk[0] * gk[0]
            flat[i] = flat[i] + lr * gk / (np.sqrt(h[i]) + eps)
            continue
        s = f32(0)
        for v in gk:
            s = f32(s + v * v)
        h[i] = f32(h[i] + s / f32(R))
        step = f32(lr / (np.sqrt(h[i]) + eps))
        flat[i] = flat[i] + gk * step
    return w, h


def ref_rowwise_adam(w, m1, m2, indices, g, lr, it, beta1=0.9, beta2=0.999, epsilon=1e-5):
    w, m1, m2 = w.copy(), m1.copy(), m2.copy()
    R = int(np.prod(w.shape[1:], dtype=np.int64))
    rows = g.reshape(-1, R).astype(f32)
    fw, fm = w.reshape(w.shape[0], R), m1.reshape(w.shape[0], R)
    t = it + 1.0
    step = f32(lr) * f32(np.sqrt(1.0 - float(f32(beta2)) ** t) / (1.0 - float(f32(beta1)) ** t))
    b1, b2, eps = f32(beta1), f32(beta2), f32(epsilon)
    for k, i in enumerate(indices.ravel()):
        gk = rows[k]
        s = f32(0)
        for v in gk:
            s = f32(s + v * v)
        m2[i] = f32(m2[i] * b2 + (s / f32(R)) * (f32(1) - b2))
        fm[i] = fm[i] * b1 + gk * (f32(1) - b1)
        fw[i] = fw[i] + step * fm[i] / (np.sqrt(m2[i]) + eps)
    return w, m1, m2


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


# ---------------------------------------------------------------- Ftrl
@pytest.mark.parametrize("args", [{}, dict(alpha=0.1, beta=0.5, lambda1=0.05, lambda2=0.2),
                                  dict(alpha=2.0, beta=0.0, lambda1=0.0, lambda2=0.0)])
def test_ftrl_several_steps_match_numpy(rng, args):
    w = rng.randn(4, 3).astype(f32)
    nz = np.zeros((4, 3, 2), f32)
    feed(w=w, nz=nz)
    for _ in range(4):
        g = rng.randn(4, 3).astype(f32)
        feed(g=g)
        got_w, got_nz = run("Ftrl", ["w", "nz", "g"], ["w", "nz"], **args)
        w, nz = ref_ftrl(w, nz, g, **args)
        close(got_w, w)
        close(got_nz, nz)
    assert got_w.shape == (4, 3) and got_nz.shape == (4, 3, 2)


def test_ftrl_lambda1_zeroes_small_weights(rng):
    # with a large lambda1 every |z| stays below it: all weights become exactly 0
    feed(w=rng.randn(5).astype(f32), nz=np.zeros((5, 2), f32), g=(0.01 * rng.randn(5)).astype(f32))
    got_w, got_nz = run("Ftrl", ["w", "nz", "g"], ["w", "nz"], alpha=0.5, lambda1=10.0)
    assert np.all(got_w == 0) and np.all(got_nz[:, 0] > 0)


def test_ftrl_alpha_input_replaces_the_argument(rng):
    w, nz, g = rng.randn(6).astype(f32), np.abs(rng.randn(6, 2)).astype(f32), rng.randn(6).astype(f32)
    feed(w=w, nz=nz, g=g, alpha=np.array([0.3], f32))
    got = run("Ftrl", ["w", "nz", "g", "alpha"], ["w2", "nz2"], beta=0.2)
    want = ref_ftrl(w, nz, g, alpha=0.3, beta=0.2)
    close(got[0], want[0])
    close(got[1], want[1])
    # out of place: the inputs are untouched
    np.testing.assert_array_equal(workspace.FetchBlob("w"), w)


def test_ftrl_in_place_equals_out_of_place(rng):
    w, nz, g = rng.randn(3, 2, 2).astype(f32), np.abs(rng.randn(3, 2, 2, 2)).astype(f32), rng.randn(3, 2, 2)
    feed(w=w, nz=nz, g=g.astype(f32))
    out = run("Ftrl", ["w", "nz", "g"], ["w_new", "nz_new"], alpha=0.2)
    inp = run("Ftrl", ["w", "nz", "g"], ["w", "nz"], alpha=0.2)
    np.testing.assert_array_equal(out[0], inp[0])
    np.testing.assert_array_equal(out[1], inp[1])


def test_ftrl_empty():
    feed(w=np.zeros((0, 3), f32), nz=np.zeros((0, 3, 2), f32), g=np.zeros((0, 3), f32))
    got = run("Ftrl", ["w", "nz", "g"], ["w", "nz"])
    assert got[0].shape == (0, 3) and got[1].shape == (0, 3, 2)


# ---------------------------------------------------------------- SparseFtrl
def test_sparse_ftrl_several_steps_with_repeated_indices(rng):
    args = dict(alpha=0.2, beta=0.3, lambda1=0.01, lambda2=0.05)
    w, nz = rng.randn(6, 4).astype(f32), np.zeros((6, 4, 2), f32)
    feed(w=w, nz=nz)
    for ind in (idx(1, 4, 1), idx(0, 5), idx(3, 3, 3, 2)):
        g = rng.randn(len(ind), 4).astype(f32)
        feed(i=ind, g=g)
        got_w, got_nz = run("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"], **args)
        w, nz = ref_sparse_ftrl(w, nz, ind, g, **args)
        close(got_w, w)
        close(got_nz, nz)


def test_sparse_ftrl_equals_dense_on_the_rows_it_names(rng):
    w, g = rng.randn(5, 3).astype(f32), rng.randn(5, 3).astype(f32)
    nz = np.abs(rng.randn(5, 3, 2)).astype(f32)
    feed(w=w, nz=nz, g=g)
    dense = run("Ftrl", ["w", "nz", "g"], ["wd", "nzd"], alpha=0.1)
    ind = idx(4, 0, 2)
    feed(i=ind, gs=g[ind], ws=w, nzs=nz)
    sparse = run("SparseFtrl", ["ws", "nzs", "i", "gs"], ["ws", "nzs"], alpha=0.1)
    np.testing.assert_array_equal(sparse[0][ind], dense[0][ind])
    np.testing.assert_array_equal(sparse[1][ind], dense[1][ind])
    untouched = [1, 3]
    np.testing.assert_array_equal(sparse[0][untouched], w[untouched])
    np.testing.assert_array_equal(sparse[1][untouched], nz[untouched])


def test_sparse_ftrl_two_dim_indices_and_alpha_input(rng):
    w, nz = rng.randn(4, 2).astype(f32), np.zeros((4, 2, 2), f32)
    ind = idx(0, 3, 3, 1).reshape(2, 2)
    g = rng.randn(2, 2, 2).astype(f32)
    feed(w=w, nz=nz, i=ind, g=g, a=np.array([0.05], f32))
    got = run("SparseFtrl", ["w", "nz", "i", "g", "a"], ["w", "nz"])
    want = ref_sparse_ftrl(w, nz, ind, g, alpha=0.05)
    close(got[0], want[0])
    close(got[1], want[1])


# ---------------------------------------------------------------- RowWiseSparseAdagrad
@pytest.mark.parametrize("shape", [(6, 4), (5, 1), (5,), (4, 2, 3)])
def test_rowwise_adagrad_several_steps(rng, shape):
    w, h = rng.randn(*shape).astype(f32), np.zeros(shape[0], f32)
    feed(w=w, h=h, lr=np.array([-0.1], f32))
    for ind in (idx(1, 3), idx(0, 0, 2), idx(3, 1, 3, 0)):
        g = rng.randn(*((len(ind),) + shape[1:])).astype(f32)
        feed(i=ind, g=g)
        got_w, got_h = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], epsilon=1e-4)
        w, h = ref_rowwise_adagrad(w, h, ind, g, -0.1, epsilon=1e-4)
        close(got_w, w)
        close(got_h, h)
    assert got_h.shape == (shape[0],)


def test_rowwise_adagrad_moment_is_the_mean_square_of_the_row(rng):
    feed(w=np.zeros((3, 4), f32), h=np.zeros(3, f32), i=idx(2), g=np.array([[1, 2, 3, 4]], f32),
         lr=np.array([-1.0], f32))
    got_w, got_h = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], epsilon=0.0)
    assert got_h.tolist() == [0, 0, 7.5]
    close(got_w[2], -np.array([1, 2, 3, 4], f32) / np.sqrt(f32(7.5)))
    assert np.all(got_w[:2] == 0)


@pytest.mark.parametrize("shape", [(6, 4), (5, 1), (4, 2, 3)])
def test_rowwise_adagrad_weight_decay(rng, shape):
    """Caffe2's later weight_decay: g + wd * row (the row as it is at that occurrence: index 3 twice)."""
    w, h = rng.randn(*shape).astype(f32), np.abs(rng.randn(shape[0])).astype(f32)
    ind = idx(3, 1, 3)
    g = rng.randn(*((3,) + shape[1:])).astype(f32)
    feed(w=w, h=h, i=ind, g=g, lr=np.array([-0.1], f32))
    got_w, got_h = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], epsilon=1e-4,
                       weight_decay=0.3)
    want_w, want_h = ref_rowwise_adagrad(w, h, ind, g, -0.1, epsilon=1e-4, weight_decay=0.3)
    close(got_w, want_w)
    close(got_h, want_h)
    plain_w, _ = ref_rowwise_adagrad(w, h, ind, g, -0.1, epsilon=1e-4)
    assert not np.allclose(got_w, plain_w)  # the decay changed the step
    feed(w=w, h=h)
    zero = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], epsilon=1e-4, weight_decay=0.0)
    assert np.array_equal(zero[0], plain_w)  # 0: bitwise the op without it


def test_rowwise_adagrad_counter_scales_the_decay(rng):
    """With counter_halflife > 0 and the COUNTER input, wd * halflife / count[i] where count[i] > 0."""
    w, h = rng.randn(4, 3).astype(f32), np.abs(rng.randn(4)).astype(f32)
    count = np.array([0.0, 2.5, 0.0, 8.0], f32)
    ind = idx(1, 2, 3)
    g = rng.randn(3, 3).astype(f32)
    feed(w=w, h=h, i=ind, g=g, lr=np.array([-0.2], f32), c=count)
    got = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr", "c"], ["w", "h"], weight_decay=0.1,
              counter_halflife=4)
    want = ref_rowwise_adagrad(w, h, ind, g, -0.2, weight_decay=0.1, counter_halflife=4, count=count)
    close(got[0], want[0])
    close(got[1], want[1])
    feed(w=w, h=h)  # without counter_halflife the counter is not used
    got = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr", "c"], ["w", "h"], weight_decay=0.1)
    want = ref_rowwise_adagrad(w, h, ind, g, -0.2, weight_decay=0.1)
    close(got[0], want[0])


def test_rowwise_adagrad_two_dim_indices(rng):
    w, h = rng.randn(5, 3).astype(f32), np.abs(rng.randn(5)).astype(f32)
    ind = idx(4, 1, 1, 0, 2, 4).reshape(3, 2)
    g = rng.randn(3, 2, 3).astype(f32)
    feed(w=w, h=h, i=ind, g=g, lr=np.array([0.5], f32))
    got = run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"])
    want = ref_rowwise_adagrad(w, h, ind, g, 0.5)
    close(got[0], want[0])
    close(got[1], want[1])


# ---------------------------------------------------------------- RowWiseSparseAdam
@pytest.mark.parametrize("shape,args", [((6, 3), {}), ((4, 1), dict(beta1=0.5, beta2=0.9, epsilon=1e-3)),
                                        ((3, 2, 2), dict(beta1=0.0, beta2=0.0))])
def test_rowwise_adam_several_steps(rng, shape, args):
    w, m1, m2 = rng.randn(*shape).astype(f32), np.zeros(shape, f32), np.zeros(shape[0], f32)
    feed(w=w, m1=m1, m2=m2, lr=np.array([-0.01], f32))
    for it, ind in enumerate((idx(1, 2), idx(0, 0, 2), idx(2, 1, 2, 0))):
        g = rng.randn(*((len(ind),) + shape[1:])).astype(f32)
        feed(i=ind, g=g, it=np.array([it + 1], np.int32))
        got = run("RowWiseSparseAdam", ["w", "m1", "m2", "i", "g", "lr", "it"], ["w", "m1", "m2"], **args)
        w, m1, m2 = ref_rowwise_adam(w, m1, m2, ind, g, -0.01, it + 1, **args)
        for a, b in zip(got, (w, m1, m2)):
            close(a, b)
    assert got[2].shape == (shape[0],)


def test_rowwise_adam_untouched_rows_keep_their_state(rng):
    w, m1, m2 = rng.randn(4, 2).astype(f32), rng.randn(4, 2).astype(f32), np.abs(rng.randn(4)).astype(f32)
    feed(w=w, m1=m1, m2=m2, i=idx(2), g=rng.randn(1, 2).astype(f32), lr=np.array([-0.1], f32),
         it=np.array([0], np.int32))
    got = run("RowWiseSparseAdam", ["w", "m1", "m2", "i", "g", "lr", "it"], ["w", "m1", "m2"])
    for a, b in zip(got, (w, m1, m2)):
        np.testing.assert_array_equal(np.delete(a, 2, axis=0), np.delete(b, 2, axis=0))
        assert not np.array_equal(a[2], b[2])


def test_empty_indices_change_nothing(rng):
    w = rng.randn(3, 2).astype(f32)
    feed(w=w, h=np.ones(3, f32), m1=np.ones((3, 2), f32), nz=np.ones((3, 2, 2), f32), i=np.zeros(0, np.int32),
         g=np.zeros((0, 2), f32), lr=np.array([-0.1], f32), it=np.array([2], np.int32))
    run("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"])
    run("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "it"], ["w", "m1", "h"])
    run("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"])
    np.testing.assert_array_equal(workspace.FetchBlob("w"), w)


def ref_rowwise_counter(prev, cnt, indices, t, halflife):
    prev, cnt = prev.astype(np.int64).copy(), cnt.astype(np.float64).copy()
    if halflife <= 0:
        return prev, cnt
    rho = np.log(2.0) / halflife
    for i in indices.reshape(-1):
        cnt.flat[i] = np.float32(1.0 + np.exp(-max(0, t - prev.flat[i]) * rho) * cnt.flat[i])
        prev.flat[i] = max(t, prev.flat[i])
    return prev, cnt


@pytest.mark.parametrize("halflife", [1, 3, 50, 0, -1])
def test_rowwise_counter_several_steps_with_repeated_indices(rng, halflife):
    prev = rng.randint(0, 20, size=(8, 1)).astype(np.int32)  # any shape with the counters' element count
    cnt = (rng.rand(8) * 5).astype(f32)
    feed(pi=prev, cn=cnt)
    for t, ind in [(10, idx(1, 3, 3, 7)), (12, idx(0, 1)), (12, idx(1)), (30, idx(5, 1, 0, 0)), (5, idx(1))]:
        feed(ci=ind, t=np.array([t], np.int32))
        run("RowWiseCounter", ["pi", "cn", "ci", "t"], ["pi", "cn"], counter_halflife=halflife)
        prev, cnt = ref_rowwise_counter(prev, cnt, ind, t, halflife)
        got_p, got_c = workspace.FetchBlob("pi"), workspace.FetchBlob("cn")
        assert got_p.dtype == np.int32 and got_p.shape == (8, 1) and got_c.dtype == f32
        np.testing.assert_array_equal(got_p, prev)
        np.testing.assert_allclose(got_c, cnt, rtol=1e-6)


def test_rowwise_counter_two_dim_indices_and_default_is_off(rng):
    feed(pi=np.zeros(6, np.int32), cn=np.ones(6, f32), ci=idx(0, 2, 2, 5).reshape(2, 2),
         t=np.array([4], np.int32))
    run("RowWiseCounter", ["pi", "cn", "ci", "t"], ["pi", "cn"])  # counter_halflife -1: off
    np.testing.assert_array_equal(workspace.FetchBlob("pi"), np.zeros(6, np.int32))
    np.testing.assert_array_equal(workspace.FetchBlob("cn"), np.ones(6, f32))
    run("RowWiseCounter", ["pi", "cn", "ci", "t"], ["pi", "cn"], counter_halflife=2)
    np.testing.assert_array_equal(workspace.FetchBlob("pi"), [4, 0, 4, 0, 0, 4])
    # 2: 1 + 0.25 * 1 = 1.25, then (delta 0) 1 + 1.25
    np.testing.assert_allclose(workspace.FetchBlob("cn"), [1.25, 1, 2.25, 1, 1, 1.25], rtol=1e-7)
    feed(ci=np.zeros((0, 3), np.int32))  # no indices: nothing changes
    run("RowWiseCounter", ["pi", "cn", "ci", "t"], ["pi", "cn"], counter_halflife=2)
    np.testing.assert_array_equal(workspace.FetchBlob("pi"), [4, 0, 4, 0, 0, 4])


def ref_sparse_normalize(w, indices, norm=1.0, use_max_norm=True):
    w = w.astype(np.float32).copy()
    for i in indices.reshape(-1):
        row = w[i].astype(np.float64)
        n = np.sqrt((row * row).sum())
        if use_max_norm and n <= norm:
            continue
        w[i] = w[i] * np.float32(norm / (n + 1e-12))
    return w


@pytest.mark.parametrize("shape", [(6, 4), (5, 2, 3), (4,)])
@pytest.mark.parametrize("norm,use_max", [(1.0, 1), (0.5, 0), (2.5, 1), (0.0, 0)])
def test_sparse_normalize_matches_numpy(rng, shape, norm, use_max):
    w = (rng.randn(*shape) * rng.choice([0.1, 3.0], size=shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)))
    w = w.astype(f32)
    ind = idx(0, 3, 3, 1)  # a repeated index normalizes its row again
    feed(w=w, ci=ind, g=np.ones((4,) + shape[1:], f32))
    run("SparseNormalize", ["w", "ci", "g"], ["w"], norm=norm, use_max_norm=use_max)
    np.testing.assert_allclose(workspace.FetchBlob("w"), ref_sparse_normalize(w, ind, norm, use_max),
                               rtol=1e-6, atol=1e-7)
    untouched = [r for r in range(shape[0]) if r not in (0, 1, 3)]
    np.testing.assert_array_equal(workspace.FetchBlob("w")[untouched], w[untouched])


def test_sparse_normalize_defaults_two_inputs_and_two_dim_indices():
    w = np.array([[3, 4], [0.3, 0.4], [0, 0], [6, 8]], f32)
    feed(w=w, ci=idx(0, 1, 2, 3).reshape(2, 2))
    run("SparseNormalize", ["w", "ci"], ["w"])  # norm 1, use_max_norm 1: rows above norm 1 are scaled to it
    np.testing.assert_allclose(workspace.FetchBlob("w"), [[0.6, 0.8], [0.3, 0.4], [0, 0], [0.6, 0.8]],
                               rtol=1e-6)
    feed(w=w)
    run("SparseNormalize", ["w", "ci"], ["w"], use_max_norm=0, norm=2.0)  # a zero row stays zero
    np.testing.assert_allclose(workspace.FetchBlob("w"), [[1.2, 1.6], [1.2, 1.6], [0, 0], [1.2, 1.6]],
                               rtol=1e-6)
    feed(w=np.array([[np.nan, 1.0], [1.0, 1.0]], f32), ci=idx(0))
    run("SparseNormalize", ["w", "ci"], ["w"], use_max_norm=0)  # NaN spreads over its row only
    got = workspace.FetchBlob("w")
    assert np.isnan(got[0]).all() and (got[1] == 1).all()
    feed(w=np.ones((3, 0), f32), ci=idx(2))  # empty rows
    run("SparseNormalize", ["w", "ci"], ["w"])
    assert workspace.FetchBlob("w").shape == (3, 0)


def test_no_gradient():
    for op, ins, outs in [("Ftrl", ["w", "nz", "g"], ["w", "nz"]),
                          ("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"]),
                          ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"]),
                          ("RowWiseSparseAdam", ["w", "m", "v", "i", "g", "lr", "it"], ["w", "m", "v"]),
                          ("RowWiseCounter", ["p", "c", "i", "t"], ["p", "c"]),
                          ("SparseNormalize", ["w", "i", "g"], ["w"])]:
        assert core.GradientRegistry.GetGradientForOp(core.CreateOperator(op, ins, outs),
                                                      [o + "_grad" for o in outs]) == ([], [None] * len(ins))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("op,ins,outs,bad,match", [
    ("Ftrl", ["w", "nz", "g"], ["w", "nz"], dict(nz=np.zeros((4, 3), f32)), r"input 1 blob 'nz' \(n and z\)"),
    ("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"], dict(g=np.zeros((3, 3), f32)),
     r"input 3 blob 'g' \(the gradient\) must have shape \(2, 3\)"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], dict(h=np.zeros((4, 1), f32)),
     r"input 1 blob 'h' \(the row-wise moment\)"),
    ("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "it"], ["w", "m1", "h"], dict(lr=np.zeros(2, f32)),
     r"input 5 blob 'lr' \(the learning rate\) must hold one value"),
    ("RowWiseCounter", ["pi", "h", "i", "it"], ["pi", "h"], dict(h=np.zeros(5, f32)),
     r"input 0 blob 'pi' \(the last update iterations\) \(4,\) int32 and input 1 blob 'h'"),
    ("RowWiseCounter", ["pi", "h", "i", "it"], ["pi", "h"], dict(it=np.zeros(2, np.int32)),
     r"input 3 blob 'it' \(the iteration counter\) must hold one value"),
    ("RowWiseCounter", ["w", "h", "i", "it"], ["w", "h"], {}, r"input 0 blob 'w' must be int32"),
    ("SparseNormalize", ["w", "g"], ["w"], {}, r"input 1 blob 'g' must be int32 indices"),
    ("SparseNormalize", ["lr", "i"], ["lr"], dict(lr=np.array(1.0, f32)), r"input 0 blob 'lr' must have"),
])
def test_shapes_are_checked_at_net_creation(op, ins, outs, bad, match):
    feed(w=np.ones((4, 3), f32), nz=np.zeros((4, 3, 2), f32), h=np.zeros(4, f32), m1=np.zeros((4, 3), f32),
         i=idx(1, 2), g=np.ones((2, 3), f32), lr=np.array([-0.1], f32), it=np.array([0], np.int32),
         pi=np.zeros(4, np.int32))
    feed(**bad)
    net = core.Net("rw_check_" + op)
    getattr(net, op)(ins, outs)
    prefix = r"net 'rw_check_%s(_\d+)?': op %s #0: " % (op, op)  # a repeated net name gets a suffix
    with pytest.raises((ValueError, TypeError), match=prefix + match):
        workspace.CreateNet(net)


def base_feeds():
    feed(w=np.ones((4, 3), f32), nz=np.zeros((4, 3, 2), f32), h=np.zeros(4, f32), m1=np.zeros((4, 3), f32),
         i=idx(1, 2), g=np.ones((2, 3), f32), gd=np.ones((4, 3), f32), lr=np.array([-0.1], f32),
         it=np.array([0], np.int32), pi=np.zeros(4, np.int32), cn=np.zeros(4, f32))


RWC = ["pi", "cn", "i", "it"]
BAD = [
    ("Ftrl", ["w", "bad", "gd"], ["w", "bad"], dict(bad=np.zeros((4, 3), f32)), {}, ValueError,
     r"input 1 blob 'bad' \(n and z\) must have the shape of input 0 blob 'w' \(4, 3\) float32 plus a "
     r"last dim of 2, got \(4, 3\) float32"),
    ("Ftrl", ["w", "nz", "bad"], ["w", "nz"], dict(bad=np.zeros((3, 4), f32)), {}, ValueError,
     r"input 2 blob 'bad' \(the gradient\) must have the shape of input 0 blob 'w' \(4, 3\) float32, "
     r"got \(3, 4\) float32"),
    ("Ftrl", ["w", "nz", "bad"], ["w", "nz"], dict(bad=np.zeros((4, 3), np.int32)), {}, TypeError,
     r"input 2 blob 'bad'.*int32"),
    ("Ftrl", ["w", "nz", "gd", "bad"], ["w", "nz"], dict(bad=np.array([0.0], f32)), {}, ValueError,
     r"input 3 blob 'bad' \(alpha\) must be finite and > 0, got 0"),
    ("Ftrl", ["w", "nz", "gd", "bad"], ["w", "nz"], dict(bad=np.array([0.1, 0.2], f32)), {}, ValueError,
     r"input 3 blob 'bad' \(alpha\) must hold one value, got \(2,\) float32"),
    ("Ftrl", ["w", "nz", "gd", "lr"], ["w", "nz"], {}, dict(alpha=0.1), ValueError,
     r"alpha is given both as input 3 blob 'lr' and as an argument \(give one\)"),
    ("Ftrl", ["w", "nz", "gd"], ["w", "nz"], {}, dict(alpha=0.0), ValueError,
     r"argument alpha must be finite and > 0, got 0"),
    ("Ftrl", ["w", "nz", "gd"], ["w", "nz"], {}, dict(lambda1=-1.0), ValueError,
     r"argument lambda1 must be finite and >= 0, got -1"),
    ("Ftrl", ["w", "nz", "gd"], ["w", "nz"], {}, dict(beta=float("nan")), ValueError,
     r"argument beta must be finite and >= 0, got nan"),
    ("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"], dict(i=idx(1, 4)), {}, IndexError,
     r"input 2 blob 'i': index 4 at position 1 is out of range \[0, 4\) \(the rows of input 0 "
     r"blob 'w' of shape \(4, 3\) float32\)"),
    ("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"], dict(i=idx(-1, 0)), {}, IndexError,
     r"input 2 blob 'i': index -1 at position 0 is out of range \[0, 4\)"),
    ("SparseFtrl", ["w", "nz", "i", "bad"], ["w", "nz"], dict(bad=np.ones((3, 3), f32)), {}, ValueError,
     r"input 3 blob 'bad' \(the gradient\) must have shape \(2, 3\) float32"),
    ("SparseFtrl", ["w", "bad", "i", "g"], ["w", "bad"], dict(bad=np.zeros((4, 3, 3), f32)), {}, ValueError,
     r"input 1 blob 'bad' \(n and z\) must have the shape of input 0 blob 'w' \(4, 3\) float32 "
     r"plus a last dim of 2, got \(4, 3, 3\) float32"),
    ("SparseFtrl", ["w", "nz", "i", "g"], ["w2", "nz"], {}, {}, ValueError,
     r"output 0 blob 'w2' must be input 0 blob 'w' \(this op updates it in place\)"),
    ("SparseFtrl", ["w", "nz", "bad", "g"], ["w", "nz"], dict(bad=np.array([1.0, 2.0], f32)), {}, TypeError,
     r"input 2 blob 'bad' must be int32 indices, got \(2,\) float32"),
    ("RowWiseSparseAdagrad", ["w", "bad", "i", "g", "lr"], ["w", "bad"], dict(bad=np.zeros((4, 3), f32)), {},
     ValueError, r"input 1 blob 'bad' \(the row-wise moment\) must have shape \(4,\) "
     r"\(one value per row of input 0 blob 'w' \(4, 3\) float32\), got \(4, 3\) float32"),
    ("RowWiseSparseAdagrad", ["w", "bad", "i", "g", "lr"], ["w", "bad"], dict(bad=np.zeros(5, f32)), {},
     ValueError, r"input 1 blob 'bad' \(the row-wise moment\) must have shape \(4,\)"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "bad"], ["w", "h"], dict(bad=np.ones(2, f32)), {},
     ValueError,
     r"input 4 blob 'bad' \(the learning rate\) must hold one value, got \(2,\) "
     r"float32"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], dict(i=idx(0, 9)), {}, IndexError,
     r"input 2 blob 'i': index 9 at position 1 is out of range \[0, 4\)"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h2"], {}, {}, ValueError,
     r"output 1 blob 'h2' must be input 1 blob 'h' \(this op updates it in place\)"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], {}, dict(epsilon=-1e-3), ValueError,
     r"argument epsilon must be finite and >= 0, got -0.001"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], {}, dict(weight_decay=float("inf")),
     ValueError, r"argument weight_decay must be finite, got inf"),
    ("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr", "bad"], ["w", "h"], dict(bad=np.zeros(3, f32)),
     dict(counter_halflife=2), ValueError,
     r"input 5 blob 'bad' \(the row-wise update counts\) must have shape \(4,\)"),
    ("RowWiseSparseAdam", ["w", "m1", "bad", "i", "g", "lr", "it"], ["w", "m1", "bad"],
     dict(bad=np.zeros((4, 3), f32)), {}, ValueError,
     r"input 2 blob 'bad' \(the row-wise moment\) must have shape \(4,\)"),
    ("RowWiseSparseAdam", ["w", "bad", "h", "i", "g", "lr", "it"], ["w", "bad", "h"],
     dict(bad=np.zeros(4, f32)), {}, ValueError,
     r"input 1 blob 'bad' \(the first moment\) must have the shape of input 0 blob 'w' "
     r"\(4, 3\) float32, got \(4,\) float32"),
    ("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "bad"], ["w", "m1", "h"],
     dict(bad=np.array([1.0], f32)), {}, TypeError,
     r"input 6 blob 'bad' \(the iteration counter\) must be int32, got \(1,\) float32"),
    ("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "bad"], ["w", "m1", "h"],
     dict(bad=np.array([-2], np.int32)), {}, ValueError,
     r"input 6 blob 'bad' \(the iteration counter\) must be >= 0, got -2"),
    ("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "it"], ["w", "m1", "h"], dict(i=idx(4, 0)), {},
     IndexError, r"input 3 blob 'i': index 4 at position 0 is out of range \[0, 4\)"),
    ("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "it"], ["w", "m1", "h"], {}, dict(beta1=1.0),
     ValueError, r"argument beta1 must be in \[0, 1\), got 1"),
    ("RowWiseSparseAdam", ["w", "m1", "h", "i", "g", "lr", "it"], ["w", "m1", "h"], {}, dict(beta2=-0.5),
     ValueError, r"argument beta2 must be in \[0, 1\), got -0.5"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(i=idx(0, 4)), dict(counter_halflife=2), IndexError,
     r"input 2 blob 'i': index 4 at position 1 is out of range \[0, 4\) \(the number of counters\)"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(i=idx(-1)), {}, IndexError,
     r"input 2 blob 'i': index -1 at position 0 is out of range \[0, 4\)"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(cn=np.zeros(5, f32)), {}, ValueError,
     r"input 0 blob 'pi' \(the last update iterations\) \(4,\) int32 and input 1 blob 'cn' \(the counters\) "
     r"\(5,\) float32 must have the same number of elements"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(pi=np.zeros(4, f32)), {}, TypeError,
     r"input 0 blob 'pi' must be int32, got \(4,\) float32"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(cn=np.zeros(4, np.int32)), {}, TypeError,
     r"input 1 blob 'cn' must be float32, got \(4,\) int32"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(i=np.zeros(1, f32)), {}, TypeError,
     r"input 2 blob 'i' must be int32 indices, got \(1,\) float32"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(it=np.zeros(2, np.int32)), {}, ValueError,
     r"input 3 blob 'it' \(the iteration counter\) must hold one value, got \(2,\) int32"),
    ("RowWiseCounter", RWC, ["pi", "cn"], dict(it=np.zeros(1, f32)), {}, TypeError,
     r"input 3 blob 'it' \(the iteration counter\) must be int32, got \(1,\) float32"),
    ("RowWiseCounter", RWC, ["pi", "cn2"], {}, {}, ValueError,
     r"output 1 blob 'cn2' must be input 1 blob 'cn' \(this op updates it in place\)"),
    ("SparseNormalize", ["w", "i", "g"], ["w"], dict(i=idx(0, 4)), {}, IndexError,
     r"input 1 blob 'i': index 4 at position 1 is out of range \[0, 4\) \(the rows of input 0 blob 'w' of "
     r"shape \(4, 3\) float32\)"),
    ("SparseNormalize", ["w", "i"], ["w"], dict(i=np.ones(2, f32)), {}, TypeError,
     r"input 1 blob 'i' must be int32 indices, got \(2,\) float32"),
    ("SparseNormalize", ["bad", "i"], ["bad"], dict(bad=np.ones(4, np.int32)), {}, TypeError,
     r"input 0 blob 'bad' must be float32, got \(4,\) int32"),
    ("SparseNormalize", ["bad", "i"], ["bad"], dict(bad=np.array(2.0, f32)), {}, ValueError,
     r"input 0 blob 'bad' must have"),
    ("SparseNormalize", ["w", "i"], ["w2"], {}, {}, ValueError,
     r"output 0 blob 'w2' must be input 0 blob 'w' \(this op updates it in place\)"),
    ("SparseNormalize", ["w", "i"], ["w"], {}, dict(norm=-1.0), ValueError,
     r"argument norm must be finite and >= 0, got -1"),
    ("SparseNormalize", ["w", "i"], ["w"], {}, dict(norm=float("inf")), ValueError,
     r"argument norm must be finite and >= 0, got inf"),
]


@pytest.mark.parametrize("op,ins,outs,feeds,args,exc,match", BAD,
                         ids=["%s-%d" % (b[0], k) for k, b in enumerate(BAD)])
def test_bad_input(op, ins, outs, feeds, args, exc, match):
    base_feeds()
    feed(**feeds)
    before = {b: workspace.FetchBlob(b).copy() for b in set(ins) | set(outs) if workspace.HasBlob(b)}
    raises(exc, r"op %s #0: " % op + match, op, ins, outs, **args)
    # nothing was written, and the workspace still runs ops
    for b, v in before.items():
        np.testing.assert_array_equal(workspace.FetchBlob(b), v)
    run("Ftrl", ["w", "nz", "gd"], ["w", "nz"])
