"""Decoding ops (csrc/ops/decode.c): ViterbiPath and SwapBestPath (Caffe2's crf_viterbi_op.cc) and
CTCGreedyDecoder / CTCBeamSearchDecoder (ctc_*_decoder_op.cc) against NumPy references, brute force over every path, ties (to the lowest index) and Caffe2's NaN rule, empty
inputs, bad input with the messages, no gradients, and the workspace staying usable."""

import itertools

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import f32, feed, op, run  # the same helpers


V, T = ValueError, TypeError


def bad(exc, msg):
    return pytest.raises(exc, match=msg)


def G(o, g_output):
    return core.GradientRegistry.GetGradientForOp(o, g_output)


# ---------------------------------------------------------------- references
def viterbi_ref(pred, tr):
    """Caffe2's crf.py NumPy Viterbi in float32: scores[prev, next] = score[prev] + tr[prev, next]."""
    pred, tr = np.asarray(pred, np.float32), np.asarray(tr, np.float32)
    n, c = pred.shape
    if n == 0:
        return np.zeros(0, np.int32)
    score, bps = pred[0].copy(), []
    for t in range(1, n):
        m = score[:, None] + tr
        bp = np.argmax(m, axis=0)  # the first maximum: the lowest index on ties
        bps.append(bp)
        score = pred[t] + m[bp, np.arange(c)]
    path = [int(np.argmax(score))]
    for bp in reversed(bps):
        path.append(int(bp[path[-1]]))
    return np.array(path[::-1], np.int32)


def path_score(pred, tr, path):
    return sum(float(pred[t, k]) for t, k in enumerate(path)) + sum(
        float(tr[a, b]) for a, b in zip(path[:-1], path[1:]))


def swap_ref(pred, best):
    out = np.array(pred, np.float32, copy=True)
    for t, row in enumerate(out):
        old = int(np.argmax(row))
        row[best[t]], row[old] = row[old], row[best[t]]
    return out


# ---------------------------------------------------------------- ViterbiPath
@pytest.mark.parametrize("n,c", [(1, 1), (1, 4), (2, 1), (2, 3), (5, 4), (7, 6), (30, 12), (3, 40)])
def test_viterbi_matches_numpy(rng, n, c):
    for _ in range(3):
        pred, tr = f32(rng, n, c, lo=-3, hi=3), f32(rng, c, c, lo=-2, hi=2)
        feed(p=pred, tr=tr)
        path = run("ViterbiPath", ["p", "tr"], ["path"])
        assert path.dtype == np.int32 and path.shape == (n,)
        np.testing.assert_array_equal(path, viterbi_ref(pred, tr))


@pytest.mark.parametrize("n,c", [(1, 3), (2, 2), (3, 3), (4, 3), (5, 2)])
def test_viterbi_is_the_best_of_every_path(rng, n, c):
    pred, tr = f32(rng, n, c, lo=-3, hi=3), f32(rng, c, c, lo=-2, hi=2)
    feed(p=pred, tr=tr)
    path = [int(k) for k in run("ViterbiPath", ["p", "tr"], ["path"])]
    scores = {p: path_score(pred, tr, p) for p in itertools.product(range(c), repeat=n)}
    best = max(scores.values())
    assert scores[tuple(path)] == pytest.approx(best, abs=1e-5)


def test_viterbi_transitions_go_from_row_to_column():
    # tr[i, j] scores the step i -> j: a large tr[2, 0] pulls the path through 2 then 0
    pred = np.zeros((2, 3), np.float32)
    tr = np.zeros((3, 3), np.float32)
    tr[2, 0] = 5
    feed(p=pred, tr=tr)
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), [2, 0])
    feed(tr=tr.T.copy())  # now 0 -> 2
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), [0, 2])


@pytest.mark.parametrize("n,c", [(1, 3), (4, 3), (6, 5), (9, 2)])
def test_viterbi_ties_go_to_the_lowest_index(rng, n, c):
    # small integers: the float32 sums are exact, so ties are real and many
    for _ in range(10):
        pred = rng.randint(0, 3, (n, c)).astype(np.float32)
        tr = rng.randint(0, 2, (c, c)).astype(np.float32)
        feed(p=pred, tr=tr)
        np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), viterbi_ref(pred, tr))
    feed(p=np.zeros((n, c), np.float32), tr=np.zeros((c, c), np.float32))
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), np.zeros(n, np.int32))


def test_viterbi_nan_rule_is_caffe2s():
    # the first maximum of a scan that moves on a strictly larger value: a NaN at index 0 is kept,
    # a NaN elsewhere is passed over (np.argmax would pick the NaN at index 1 here)
    nan = np.float32(np.nan)
    feed(p=np.array([[1, nan, 0]], np.float32), tr=np.zeros((3, 3), np.float32))
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), [0])
    feed(p=np.array([[nan, 1, 2]], np.float32))
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), [0])
    feed(p=np.array([[0, 0, 0], [0, 0, 1]], np.float32), tr=np.array([[0, 0, 0], [0, nan, 0], [0, 0, 0]],
                                                                         np.float32))
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]), [0, 2])


def test_viterbi_empty_and_reuse(rng):
    feed(p=np.zeros((0, 3), np.float32), tr=f32(rng, 3, 3))
    path = run("ViterbiPath", ["p", "tr"], ["path"])
    assert path.dtype == np.int32 and path.shape == (0,)
    feed(p=np.zeros((0, 0), np.float32), tr=np.zeros((0, 0), np.float32))
    assert run("ViterbiPath", ["p", "tr"], ["path"]).shape == (0,)
    # one op run on growing and shrinking inputs (its scratch grows, then is reused)
    net = core.Net("vit")
    net.ViterbiPath(["p", "tr"], "path")
    for n, c in [(2, 2), (40, 9), (3, 2), (0, 4), (17, 5)]:
        pred, tr = f32(rng, n, c), f32(rng, c, c)
        feed(p=pred, tr=tr)
        workspace.RunNetOnce(net)
        np.testing.assert_array_equal(workspace.FetchBlob("path"), viterbi_ref(pred, tr))


def test_viterbi_bad_inputs(rng):
    feed(p=f32(rng, 4, 3), tr=f32(rng, 3, 3), tr2=f32(rng, 3, 4), tr3=f32(rng, 2, 2), v=f32(rng, 3),
         pi=np.zeros((4, 3), np.int32), e=np.zeros((2, 0), np.float32), e0=np.zeros((0, 0), np.float32))
    with bad(V, r"op ViterbiPath #0: input 1 blob 'tr2' \(transitions\) \(3, 4\) float32 must be C x C for "
                r"input 0 blob 'p' \(predictions\) \(4, 3\) float32"):
        run("ViterbiPath", ["p", "tr2"], ["path"])
    with bad(V, r"op ViterbiPath #0: input 1 blob 'tr3' \(transitions\) \(2, 2\) float32 must be C x C"):
        run("ViterbiPath", ["p", "tr3"], ["path"])
    with bad(V, r"op ViterbiPath #0: input 0 blob 'v' must have 2 dims"):
        run("ViterbiPath", ["v", "tr"], ["path"])
    with bad(V, r"op ViterbiPath #0: input 1 blob 'v' must have 2 dims"):
        run("ViterbiPath", ["p", "v"], ["path"])
    with bad(T, r"op ViterbiPath #0: input 0 blob 'pi' must be float32"):
        run("ViterbiPath", ["pi", "tr"], ["path"])
    with bad(V, r"op ViterbiPath #0: input 0 blob 'e' \(predictions\) \(2, 0\) float32 has no class to choose"):
        run("ViterbiPath", ["e", "e0"], ["path"])
    assert not workspace.HasBlob("path") or not isinstance(workspace.FetchBlob("path"), np.ndarray)
    np.testing.assert_array_equal(run("ViterbiPath", ["p", "tr"], ["path"]),
                                  viterbi_ref(workspace.FetchBlob("p"), workspace.FetchBlob("tr")))


# ---------------------------------------------------------------- SwapBestPath
@pytest.mark.parametrize("n,c", [(1, 1), (1, 5), (4, 3), (10, 7)])
def test_swap_best_path_matches_numpy(rng, n, c):
    pred = f32(rng, n, c, lo=-3, hi=3)
    best = rng.randint(0, c, n).astype(np.int32)
    feed(p=pred, b=best)
    y = run("SwapBestPath", ["p", "b"], ["y"])
    assert y.dtype == np.float32 and y.shape == (n, c)
    np.testing.assert_array_equal(y, swap_ref(pred, best))
    np.testing.assert_array_equal(np.argmax(y, axis=1), best)  # the path now holds each row's maximum
    # in place
    np.testing.assert_array_equal(run("SwapBestPath", ["p", "b"], ["p"]), swap_ref(pred, best))


def test_swap_best_path_after_viterbi_ties_and_nan(rng):
    pred, tr = f32(rng, 6, 4, lo=-3, hi=3), f32(rng, 4, 4)
    feed(p=pred, tr=tr)
    net = core.Net("crf")
    path = net.ViterbiPath(["p", "tr"], "path")
    net.SwapBestPath(["p", path], "new")
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("new"), swap_ref(pred, viterbi_ref(pred, tr)))
    # ties: the first maximum is the one swapped out
    feed(p=np.array([[2, 2, 1]], np.float32), b=np.array([2], np.int32))
    np.testing.assert_array_equal(run("SwapBestPath", ["p", "b"], ["y"]), [[1, 2, 2]])
    # NaN: Caffe2's scan keeps a NaN at index 0 as the best and passes over a later one
    nan = np.float32(np.nan)
    feed(p=np.array([[nan, 1, 2], [1, nan, 2]], np.float32), b=np.array([1, 0], np.int32))
    np.testing.assert_array_equal(run("SwapBestPath", ["p", "b"], ["y"]), [[1, nan, 2], [2, nan, 1]])


def test_swap_best_path_empty(rng):
    feed(p=np.zeros((0, 3), np.float32), b=np.zeros(0, np.int32))
    y = run("SwapBestPath", ["p", "b"], ["y"])
    assert y.dtype == np.float32 and y.shape == (0, 3)


def test_swap_best_path_bad_inputs(rng):
    pred = f32(rng, 3, 4)
    feed(p=pred, b=np.array([0, 4, 1], np.int32), bn=np.array([0, 1, -1], np.int32),
         b2=np.array([0, 1], np.int32), bf=np.zeros(3, np.float32), b22=np.zeros((3, 1), np.int32),
         e=np.zeros((2, 0), np.float32), be=np.zeros(2, np.int32))
    with bad(V, r"op SwapBestPath #0: input 1 blob 'b' \(bestPath\) \(3,\) int32: entry 1 is 4, out of range "
                r"\[0, 4\) \(the columns of input 0 blob 'p' \(3, 4\) float32\)"):
        run("SwapBestPath", ["p", "b"], ["p"])
    with bad(V, r"op SwapBestPath #0: input 1 blob 'bn' \(bestPath\) \(3,\) int32: entry 2 is -1, out of range"):
        run("SwapBestPath", ["p", "bn"], ["p"])
    np.testing.assert_array_equal(workspace.FetchBlob("p"), pred)  # checked before anything is written
    with bad(V, r"op SwapBestPath #0: input 1 blob 'b2' \(bestPath\) \(2,\) int32 must have one entry per row "
                r"of input 0 blob 'p' \(predictions\) \(3, 4\) float32"):
        run("SwapBestPath", ["p", "b2"], ["y"])
    with bad(T, r"op SwapBestPath #0: input 1 blob 'bf' must be int32"):
        run("SwapBestPath", ["p", "bf"], ["y"])
    with bad(V, r"op SwapBestPath #0: input 1 blob 'b22' must have 1 dims"):
        run("SwapBestPath", ["p", "b22"], ["y"])
    with bad(V, r"op SwapBestPath #0: input 1 blob 'be' \(bestPath\) \(2,\) int32: entry 0 is 0, out of range "
                r"\[0, 0\)"):
        run("SwapBestPath", ["e", "be"], ["y"])
    with bad(V, r"op SwapBestPath #0: .*same blob 'b'"):
        workspace.RunOperatorOnce(op("SwapBestPath", ["p", "b"], ["b"]))
    feed(b=np.array([0, 3, 1], np.int32))  # the workspace stays usable
    np.testing.assert_array_equal(run("SwapBestPath", ["p", "b"], ["y"]), swap_ref(pred, [0, 3, 1]))


# ---------------------------------------------------------------- no gradients
@pytest.mark.parametrize("type_,ins,outs", [("ViterbiPath", ["p", "tr"], ["y"]), ("SwapBestPath", ["p", "b"], ["y"]),
                                             ("CTCGreedyDecoder", ["x", "l"], ["ol", "v"]),
                                             ("CTCBeamSearchDecoder", ["x", "l"], ["ol", "v", "pr"])])
def test_no_gradient(type_, ins, outs):
    ops, g_in = G(op(type_, ins, outs), [o + "_grad" for o in outs])
    assert ops == [] and g_in == [None] * len(ins)


# ---------------------------------------------------------------- CTCGreedyDecoder
def first_max(row):
    """Caffe2's best class: the first maximum of a strictly-greater scan (a NaN wins at index 0 only)."""
    best = 0
    for i in range(1, len(row)):
        if row[i] > row[best]:
            best = i
    return best


def ctc_greedy_ref(x, lens=None, merge=True):
    t_max, n, _ = x.shape
    out_len, vals = [], []
    for b in range(n):
        prev, k = 0, 0
        for t in range(t_max if lens is None else lens[b]):
            c = first_max(x[t, b])
            if c != 0 and not (merge and c == prev):
                vals.append(c)
                k += 1
            prev = c
        out_len.append(k)
    return np.array(out_len, np.int32), np.array(vals, np.int32)


def ctc(ins, **args):
    return run("CTCGreedyDecoder", ins, ["olen", "vals"], **args)


@pytest.mark.parametrize("t,n,c", [(1, 1, 1), (1, 3, 2), (5, 2, 3), (10, 4, 6), (30, 3, 26)])
@pytest.mark.parametrize("merge", [None, 0, 1])
def test_ctc_greedy_matches_numpy(rng, t, n, c, merge):
    args = {} if merge is None else dict(merge_repeated=merge)
    for x in (f32(rng, t, n, c, lo=0, hi=1), rng.randint(0, 2, (t, n, c)).astype(np.float32)):  # ties
        lens = rng.randint(0, t + 1, n).astype(np.int32)
        feed(x=x, lens=lens)
        for ins, ls in ((["x", "lens"], lens), (["x"], None)):
            olen, vals = ctc(ins, **args)
            want = ctc_greedy_ref(x, ls, merge=merge is None or bool(merge))
            assert olen.dtype == vals.dtype == np.int32 and olen.shape == (n,)
            np.testing.assert_array_equal(olen, want[0])
            np.testing.assert_array_equal(vals, want[1])


def test_ctc_greedy_blanks_repeats_and_nan():
    nan = np.float32(np.nan)
    # one sequence: best classes 1 1 0 1 2 2 -> merged: 1 1 2 (the blank separates the two 1s)
    best = [1, 1, 0, 1, 2, 2]
    x = np.zeros((6, 1, 3), np.float32)
    x[np.arange(6), 0, best] = 1
    feed(x=x)
    olen, vals = ctc(["x"])
    assert olen.tolist() == [3] and vals.tolist() == [1, 1, 2]
    olen, vals = ctc(["x"], merge_repeated=0)
    assert olen.tolist() == [5] and vals.tolist() == [1, 1, 1, 2, 2]
    # NaN: at index 0 it is the best (a blank); later it is passed over
    feed(x=np.array([[[nan, 1, 2]], [[0, nan, 1]], [[1, 2, nan]]], np.float32))
    olen, vals = ctc(["x"])
    assert olen.tolist() == [2] and vals.tolist() == [2, 1]


def test_ctc_greedy_empty():
    for shape in [(0, 2, 3), (4, 0, 3), (0, 0, 0), (3, 2, 0)]:
        feed(x=np.zeros(shape, np.float32), lens=np.zeros(shape[1], np.int32))
        olen, vals = ctc(["x", "lens"])  # every length 0: nothing is read, even with no class
        assert olen.tolist() == [0] * shape[1] and vals.shape == (0,) and vals.dtype == np.int32
        if shape[0] == 0 or shape[1] == 0:
            olen, vals = ctc(["x"])
            assert olen.tolist() == [0] * shape[1] and vals.shape == (0,)


def test_ctc_greedy_bad_inputs(rng):
    feed(x=f32(rng, 4, 2, 3), l3=np.array([1, 2, 3], np.int32), lneg=np.array([1, -1], np.int32),
         lbig=np.array([5, 1], np.int32), lf=np.zeros(2, np.float32), x2=f32(rng, 4, 6),
         xi=np.zeros((4, 2, 3), np.int32), e=np.zeros((4, 2, 0), np.float32), l1=np.array([0, 1], np.int32))
    with bad(V, r"op CTCGreedyDecoder #0: input 1 blob 'l3' \(SEQ_LEN\) \(3,\) int32 must have one entry per "
                r"sequence \(dim 1\) of input 0 blob 'x' \(INPUTS\) \(4, 2, 3\) float32"):
        ctc(["x", "l3"])
    with bad(V, r"op CTCGreedyDecoder #0: input 1 blob 'lneg' \(SEQ_LEN\) \(2,\) int32: entry 1 is -1, out of "
                r"range \[0, 4\] \(dim 0 of input 0 blob 'x' \(4, 2, 3\) float32\)"):
        ctc(["x", "lneg"])
    with bad(V, r"op CTCGreedyDecoder #0: input 1 blob 'lbig' \(SEQ_LEN\) \(2,\) int32: entry 0 is 5, out of "
                r"range \[0, 4\]"):
        ctc(["x", "lbig"])
    with bad(T, r"op CTCGreedyDecoder #0: input 1 blob 'lf' must be int32"):
        ctc(["x", "lf"])
    with bad(V, r"op CTCGreedyDecoder #0: input 0 blob 'x2' must have 3 dims"):
        ctc(["x2"])
    with bad(T, r"op CTCGreedyDecoder #0: input 0 blob 'xi' must be float32"):
        ctc(["xi"])
    with bad(V, r"op CTCGreedyDecoder #0: input 0 blob 'e' \(INPUTS\) \(4, 2, 0\) float32 has no class to choose "
                r"for sequence 1 of length 1"):
        ctc(["e", "l1"])
    assert not workspace.HasBlob("olen") or not isinstance(workspace.FetchBlob("olen"), np.ndarray)
    olen, vals = ctc(["x", "l1"])  # the workspace stays usable
    want = ctc_greedy_ref(workspace.FetchBlob("x"), [0, 1])
    np.testing.assert_array_equal(olen, want[0])
    np.testing.assert_array_equal(vals, want[1])


# ---------------------------------------------------------------- CTCBeamSearchDecoder
def ctc_beam_ref(x, lens=None, beam_width=10, prune=0.001, k=1):
    """Caffe2's prefix beam search in float32: prefixes ranked by Pb + Pnb, ties by prefix order (a
    tuple's order is std::vector's), NaN last; every prefix written at a step is ranked, zeros included."""
    f = np.float32
    t_max, n, a = x.shape
    out_len, out_prob, vals = np.zeros(n * k, np.int32), np.zeros(n * k, np.float32), []
    for i in range(n):
        pb, pnb = {(): f(1)}, {(): f(0)}
        beam, ranked = [()], []
        for t in range(t_max if lens is None else lens[i]):
            ctc = x[t, i].astype(np.float32)
            alpha = [c for c in range(a) if ctc[c] > f(prune)] or list(range(a))
            nb_, nnb = {}, {}

            def add(d, key, v):
                d[key] = f(d.get(key, f(0)) + v)
            for lp in beam:
                b, nb = pb.get(lp, f(0)), pnb.get(lp, f(0))
                for c in alpha:
                    if c == 0:
                        add(nb_, lp, ctc[0] * f(b + nb))
                        continue
                    lplus = lp + (c,)
                    if lp and c == lp[-1]:
                        add(nnb, lplus, ctc[c] * b)
                        add(nnb, lp, ctc[c] * nb)
                    else:
                        add(nnb, lplus, ctc[c] * f(b + nb))
                    if lplus not in beam:
                        add(nb_, lplus, ctc[0] * f(pb.get(lplus, f(0)) + pnb.get(lplus, f(0))))
                        add(nnb, lplus, ctc[c] * pnb.get(lplus, f(0)))
            pb, pnb = nb_, nnb
            total = {key: f(pb.get(key, f(0)) + pnb.get(key, f(0))) for key in set(pb) | set(pnb)}
            ranked = sorted(total, key=lambda key: (bool(np.isnan(total[key])),
                                                    0 if np.isnan(total[key]) else -total[key], key))
            beam = ranked[:beam_width]
        for j, cand in enumerate(ranked[:k]):
            out_len[i * k + j] = len(cand)
            out_prob[i * k + j] = total[cand]
            vals.extend(cand)
    return out_len, np.array(vals, np.int32), out_prob


def beam(ins, outs=("olen", "vals", "prob"), **args):
    return run("CTCBeamSearchDecoder", ins, list(outs), **args)


@pytest.mark.parametrize("t,n,a", [(1, 1, 1), (1, 2, 3), (4, 2, 2), (8, 3, 5), (20, 2, 12)])
@pytest.mark.parametrize("args", [{}, dict(beam_width=1), dict(beam_width=3, num_candidates=3),
                                  dict(beam_width=16, num_candidates=2, prune_threshold=0.3)])
def test_ctc_beam_matches_reference(rng, t, n, a, args):
    ref_args = dict(beam_width=args.get("beam_width", 10), prune=args.get("prune_threshold", 0.001),
                    k=args.get("num_candidates", 1))
    x = rng.uniform(0, 1, (t, n, a)).astype(np.float32)
    x /= x.sum(axis=2, keepdims=True)
    lens = rng.randint(0, t + 1, n).astype(np.int32)
    feed(x=x, lens=lens)
    for ins, ls in ((["x", "lens"], lens), (["x"], None)):
        olen, vals, prob = beam(ins, **args)
        want = ctc_beam_ref(x, ls, **ref_args)
        assert olen.dtype == vals.dtype == np.int32 and prob.dtype == np.float32
        np.testing.assert_array_equal(olen, want[0])
        np.testing.assert_array_equal(vals, want[1])
        np.testing.assert_array_equal(prob, want[2])
        olen2, vals2 = beam(ins, ("olen2", "vals2"), **args)  # OUTPUT_PROB is optional
        np.testing.assert_array_equal(olen2, olen)
        np.testing.assert_array_equal(vals2, vals)


def collapse(path):
    out, prev = [], 0
    for c in path:
        if c != 0 and c != prev:
            out.append(c)
        prev = c
    return tuple(out)


@pytest.mark.parametrize("t,a", [(1, 3), (3, 2), (4, 3), (5, 2)])
def test_ctc_beam_unbounded_is_exact(rng, t, a):
    # with no pruning and a beam that holds every prefix, the probabilities are the exact sums over
    # every alignment that collapses to the prefix
    x = rng.uniform(0, 1, (t, 1, a)).astype(np.float32)
    x /= x.sum(axis=2, keepdims=True)
    exact = {}
    for path in itertools.product(range(a), repeat=t):
        p = np.prod([float(x[s, 0, c]) for s, c in enumerate(path)])
        exact[collapse(path)] = exact.get(collapse(path), 0.0) + p
    k = min(3, len(exact))
    feed(x=x)
    olen, vals, prob = beam(["x"], beam_width=10000, num_candidates=k, prune_threshold=-1.0)
    best = sorted(exact, key=lambda key: (-exact[key], key))[:k]
    np.testing.assert_allclose(prob, [exact[b] for b in best], rtol=1e-5)
    assert olen.tolist() == [len(b) for b in best]
    assert vals.tolist() == [c for b in best for c in b]


def test_ctc_beam_ties_blank_only_and_empty():
    # every class equally likely: the ties go to the lower prefix in std::vector's order
    x = np.full((3, 1, 3), 1 / 3, np.float32)
    feed(x=x)
    olen, vals, prob = beam(["x"], beam_width=4, num_candidates=4)
    want = ctc_beam_ref(x, beam_width=4, k=4)
    for got, w in zip((olen, vals, prob), want):
        np.testing.assert_array_equal(got, w)
    # only the blank: one empty prefix with the product of the blank's probabilities
    x = np.array([[[0.5]], [[0.25]]], np.float32)
    feed(x=x)
    olen, vals, prob = beam(["x"])
    assert olen.tolist() == [0] and vals.shape == (0,) and prob.tolist() == [0.125]
    # length 0, no sequence, no step: no candidate (length 0, probability 0)
    for shape, lens in [((3, 2, 4), [0, 0]), ((0, 2, 4), None), ((3, 0, 4), None), ((3, 2, 0), [0, 0])]:
        feed(x=np.zeros(shape, np.float32))
        ins = ["x"]
        if lens is not None:
            feed(lens=np.array(lens, np.int32))
            ins = ["x", "lens"]
        olen, vals, prob = beam(ins, num_candidates=2, beam_width=2)
        assert olen.tolist() == prob.tolist() == [0] * (2 * shape[1]) and vals.shape == (0,)


def test_ctc_beam_bad_inputs(rng):
    feed(x=f32(rng, 4, 2, 3, lo=0, hi=1), lneg=np.array([1, -1], np.int32), e=np.zeros((4, 2, 0), np.float32),
         x2=f32(rng, 4, 6))
    for args, msg in [(dict(beam_width=0), r"argument 'beam_width' must be in \[1, 2147483647\], got 0"),
                      (dict(num_candidates=0), r"argument 'num_candidates' must be in \[1, beam_width = 10\], got 0"),
                      (dict(beam_width=2, num_candidates=3),
                       r"argument 'num_candidates' must be in \[1, beam_width = 2\], got 3")]:
        with bad(V, r"op CTCBeamSearchDecoder #0: " + msg):
            beam(["x"], **args)
    with bad(V, r"op CTCBeamSearchDecoder #0: input 1 blob 'lneg' \(SEQ_LEN\) \(2,\) int32: entry 1 is -1, out "
                r"of range \[0, 4\]"):
        beam(["x", "lneg"])
    with bad(V, r"op CTCBeamSearchDecoder #0: input 0 blob 'e' \(INPUTS\) \(4, 2, 0\) float32 has no class to "
                r"choose for sequence 0 of length 4"):
        beam(["e"])
    with bad(V, r"op CTCBeamSearchDecoder #0: input 0 blob 'x2' must have 3 dims"):
        beam(["x2"])
    assert not workspace.HasBlob("olen") or not isinstance(workspace.FetchBlob("olen"), np.ndarray)
    x = workspace.FetchBlob("x")
    olen, vals, prob = beam(["x"])  # the workspace stays usable
    np.testing.assert_array_equal(vals, ctc_beam_ref(x)[1])


def test_ctc_beam_nan_ranks_last():
    # a NaN class is pruned (NaN > threshold is false) unless nothing passes the threshold; then the
    # prefixes it reaches have NaN probabilities and rank after every number (Caffe2's multimap had no
    # order for them)
    x = np.array([[[0.5, 0.3, 0.2]], [[0.0005, np.nan, 0.0002]]], np.float32)
    feed(x=x)
    olen, vals, prob = beam(["x"], num_candidates=10)
    want = ctc_beam_ref(x, k=10)
    assert np.isnan(want[2]).sum() >= 2 and not np.isnan(want[2][0])
    for got, w in zip((olen, vals, prob), want):
        np.testing.assert_array_equal(got, w)
