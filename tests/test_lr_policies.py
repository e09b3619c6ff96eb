"""LearningRate's policies beyond Caffe2's basic ones (csrc/ops/optim.c):
alter, hill, slope, gate, cyclical, cosine, constantThenLinearWarmup,
pieceWarmup and composite.

Each against a float64 Python formula written from Caffe2's
learning_rate_functors.h over a range of iterations that crosses its
boundaries (rounded to float32 once, as the op does), Caffe2's defaults,
and argument errors at net creation by type and message.
"""

import math

import numpy as np
import pytest

from recurrent import core, workspace


def i32(v):
    return np.array([v], np.int32)


def rates(base_lr, iters, **args):
    """The op's LR at each iteration of ``iters`` (one net, fed counter)."""
    workspace.FeedBlob("it", i32(0))
    net = core.Net("lr_policy")
    net.LearningRate(["it"], ["lr"], base_lr=base_lr, **args)
    workspace.CreateNet(net)
    out = []
    for it in iters:
        workspace.FeedBlob("it", i32(it))
        workspace.RunNet(net)
        v = workspace.FetchBlob("lr")
        assert v.dtype == np.float32 and v.shape == (1,)
        out.append(v[0])
    return np.array(out, np.float32)


# ---------------------------------------------------------------- references (float64, from the functors)
def linear_warmup(it, start, n):
    return 1.0 if it >= n else start + (1.0 - start) * it / n


def ctlw_ref(it, start, c, n):
    """constantThenLinearWarmup: start for c iterations, then linear to 1 over n."""
    if it < c:
        return start
    if it < c + n:
        return linear_warmup(it - c, start, n)
    return 1.0


def cyclical_ref(it, base_lr, max_lr, stepsize, decay):
    k = it // (2 * stepsize)
    x = abs(it / stepsize - 2 * (k + 1) + 1)
    return 1 + (abs(max_lr) / abs(base_lr) - 1) * max(0.0, 1 - x) * decay ** k


def cosine_ref(it, max_lr, min_lr, period, t_mult, shrink):
    if t_mult != 1.0:
        i = math.floor(math.log(1 - it / period * (1.0 - t_mult)) / math.log(t_mult))
        t_i = t_mult ** i * period
        t_curr = it - (1.0 - t_mult ** i) / (1.0 - t_mult) * period
    else:
        i = math.floor(it / period)
        t_i = period
        t_curr = it - t_i * i
    lo, hi = min_lr * shrink ** i, max_lr * shrink ** i
    return lo + 0.5 * (hi - lo) * (1 + math.cos(math.pi * t_curr / t_i))


def ref(policy, it, base_lr, **a):
    if policy == "fixed":
        return 1.0
    if policy == "exp":
        return a["gamma"] ** it
    if policy == "step":
        return a["gamma"] ** (it // a["stepsize"])
    if policy == "alter":
        period = a["active_period"] + a["inactive_period"]
        first = a.get("active_first", 1)
        if it % period < (a["active_period"] if first else a["inactive_period"]):
            return 1.0 if first else 0.0
        return 0.0 if first else 1.0
    if policy == "hill":
        n = a["num_iter"]
        if it < n:
            return linear_warmup(it, a.get("start_multiplier", 0.0), n)
        return max(a.get("end_multiplier", 0.0), (1.0 + a["gamma"] * (it - n)) ** -a["power"])
    if policy == "slope":
        n1, n2 = a["num_iter_1"], a["num_iter_2"]
        m1, m2 = a.get("multiplier_1", 0.0), a.get("multiplier_2", 0.0)
        if it < n1:
            return m1
        return max(m2, m1 + (it - n1) * (m2 - m1) / (n2 - n1))
    if policy == "gate":
        return a.get("multiplier_1", 1.0) if it < a.get("num_iter", 0) else a.get("multiplier_2", 1.0)
    if policy == "cyclical":
        return cyclical_ref(it, base_lr, a.get("max_lr", 0.005), a["stepsize"], a.get("decay", 1.0))
    if policy == "cosine":
        return cosine_ref(it, a.get("max_lr", 0.5), a.get("min_lr", 0.1), a.get("period", 50),
                          a.get("t_mult", 1.0), a.get("lr_shrink", 0.99))
    if policy == "constantThenLinearWarmup":
        c, n = a.get("constant_warmup_num_iter", 10000000), a.get("linear_warmup_num_iter", 10000000)
        return ctlw_ref(it, a.get("start_warmup_multiplier", 0.1), c, n)
    if policy == "pieceWarmup":
        if it < a.get("n1", 0):
            return a.get("m1", 0.5)
        if it < a.get("n2", 0):
            return a.get("m2", 0.5)
        return a.get("m3", 0.5)
    raise AssertionError(policy)


CASES = [
    ("alter", dict(active_period=3, inactive_period=2), range(0, 16)),
    ("alter", dict(active_period=2, inactive_period=3, active_first=0), range(0, 16)),
    ("alter", dict(active_period=0, inactive_period=4), range(0, 6)),
    ("hill", dict(num_iter=5, start_multiplier=0.2, gamma=0.5, power=1.5, end_multiplier=0.1), range(0, 40)),
    ("hill", dict(num_iter=3, gamma=2.0, power=0.5), list(range(0, 12)) + [1000, 10 ** 9]),
    ("slope", dict(num_iter_1=4, multiplier_1=1.0, num_iter_2=10, multiplier_2=0.25), range(0, 16)),
    ("slope", dict(num_iter_1=2, multiplier_1=0.5, num_iter_2=6, multiplier_2=2.0), range(0, 10)),
    ("gate", dict(multiplier_1=0.3, multiplier_2=-2.0, num_iter=4), range(0, 8)),
    ("gate", dict(), range(0, 3)),
    ("cyclical", dict(max_lr=0.5, stepsize=4), range(0, 30)),
    ("cyclical", dict(max_lr=-0.9, stepsize=3, decay=0.5), range(0, 30)),
    ("cosine", dict(), range(0, 160, 3)),
    ("cosine", dict(max_lr=1.0, min_lr=0.0, period=7, lr_shrink=0.5), range(0, 30)),
    ("cosine", dict(max_lr=0.8, min_lr=0.2, period=5, t_mult=2.0, lr_shrink=0.9), range(0, 80)),
    ("constantThenLinearWarmup", dict(start_warmup_multiplier=0.25, constant_warmup_num_iter=3,
                                      linear_warmup_num_iter=4), range(0, 12)),
    ("constantThenLinearWarmup", dict(), [0, 10 ** 7 - 1, 10 ** 7, 15 * 10 ** 6, 2 * 10 ** 7, 2 ** 31 - 1]),
    ("constantThenLinearWarmup", dict(constant_warmup_num_iter=0, linear_warmup_num_iter=0), range(0, 3)),
    ("pieceWarmup", dict(m1=0.1, n1=3, m2=0.4, n2=6, m3=1.5), range(0, 9)),
    ("pieceWarmup", dict(), range(0, 3)),
]


@pytest.mark.parametrize("policy,args,iters", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
@pytest.mark.parametrize("base_lr", [-0.05, 0.3])
def test_policy_matches_formula(policy, args, iters, base_lr):
    iters = list(iters)
    got = rates(base_lr, iters, policy=policy, **args)
    want = np.array([base_lr * ref(policy, it, base_lr, **args) for it in iters])
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-7, atol=1e-12)


def test_policies_take_different_values():
    # the formulas are not degenerate over the ranges tested: each takes several values
    for policy, args, iters in CASES[3:4] + CASES[5:6] + CASES[9:12] + CASES[14:15]:
        assert len(set(rates(0.3, list(iters), policy=policy, **args).tolist())) >= 3, policy


def test_cyclical_peaks_at_max_lr_and_returns_to_base_lr():
    got = rates(0.1, range(0, 17), policy="cyclical", max_lr=0.5, stepsize=4)
    assert got[0] == np.float32(0.1) and got[8] == np.float32(0.1) and got[16] == np.float32(0.1)
    assert got[4] == np.float32(0.5) and got[12] == np.float32(0.5)


def test_cosine_restarts_and_shrinks():
    got = rates(1.0, range(0, 21), policy="cosine", max_lr=1.0, min_lr=0.0, period=10, lr_shrink=0.5)
    assert got[0] == 1.0 and got[10] == 0.5 and got[20] == 0.25
    assert got[5] == np.float32(0.5) and all(np.diff(got[:10]) < 0)


def composite_ref(it, base_lr, subs):
    """Caffe2's composite: sub-policy i covers [1 + n_0 + ... + n_{i-1}, + n_i); past the end the last one,
    iteration 0 the first; evaluated at the absolute iteration, times lr_scale."""
    k, start = 0, 1
    for i, (n, policy, args, scale) in enumerate(subs):
        if it >= start:
            k = i
        start += n
    n, policy, args, scale = subs[k]
    return base_lr * ref(policy, it, base_lr, **args) * scale


def composite_args(subs):
    args = {"policy": "composite", "sub_policy_num_iters": [s[0] for s in subs]}
    for i, (n, policy, sub, scale) in enumerate(subs):
        args["sub_policy_%d_policy" % i] = policy
        if scale != 1.0:
            args["sub_policy_%d_lr_scale" % i] = scale
        for key, value in sub.items():
            args["sub_policy_%d_%s" % (i, key)] = value
    return args


SUBS = [
    (3, "constantThenLinearWarmup", dict(start_warmup_multiplier=0.5, constant_warmup_num_iter=1,
                                         linear_warmup_num_iter=3), 1.0),
    (4, "step", dict(stepsize=2, gamma=0.5), 2.0),
    (2, "fixed", {}, 0.25),
    (5, "cyclical", dict(max_lr=0.9, stepsize=2), 1.0),
]


@pytest.mark.parametrize("base_lr", [-0.3, 0.3])
def test_composite_matches_formula(base_lr):
    iters = list(range(0, 25))
    got = rates(base_lr, iters, **composite_args(SUBS))
    want = np.array([composite_ref(it, base_lr, SUBS) for it in iters])
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-7)
    # the boundaries: 1..3 first, 4..7 second (step at absolute iteration: gamma^(it // 2)), 8..9 third
    assert got[3] == np.float32(base_lr * (0.5 + 0.5 * 2 / 3)) and got[4] == np.float32(base_lr * 0.25 * 2.0)
    assert got[8] == np.float32(base_lr * 0.25) and got[9] == got[8]


def test_composite_of_one_policy_is_that_policy_scaled():
    iters = list(range(0, 12))
    plain = rates(0.2, iters, policy="exp", gamma=0.8)
    comp = rates(0.2, iters, policy="composite", sub_policy_num_iters=[3], sub_policy_0_policy="exp",
                 sub_policy_0_gamma=0.8, sub_policy_0_lr_scale=3.0)
    np.testing.assert_allclose(comp, (plain.astype(np.float64) * 3.0).astype(np.float32), rtol=2e-7)


def test_composite_counts_from_iteration_one_as_optimizers_run_it():
    # Iter runs before LearningRate: the first run sees iteration 1, the first sub-policy's first iteration
    net = core.Net("comp_iter")
    net.Iter([], ["count"])
    net.LearningRate(["count"], ["rate"], base_lr=1.0, policy="composite", sub_policy_num_iters=[2, 2],
                     sub_policy_0_policy="gate", sub_policy_0_multiplier_1=0.5, sub_policy_0_num_iter=100,
                     sub_policy_1_policy="fixed")
    workspace.CreateNet(net)
    got = []
    for _ in range(5):
        workspace.RunNet(net)
        got.append(float(workspace.FetchBlob("rate")[0]))
    assert got == [0.5, 0.5, 1.0, 1.0, 1.0]


B = {"base_lr": 0.1}
BAD = [
    (dict(B, policy="alter", inactive_period=2),
     ValueError, r"argument active_period is required by policy 'alter'"),
    (dict(B, policy="alter", active_period=2),
     ValueError, r"argument inactive_period is required by policy 'alter'"),
    (dict(B, policy="alter", active_period=-1, inactive_period=2), ValueError,
     r"argument active_period must be >= 0, got -1"),
    (dict(B, policy="alter", active_period=0, inactive_period=0), ValueError,
     r"arguments active_period and inactive_period must not both be 0 \(policy 'alter' repeats "
     r"with their sum as period\)"),
    (dict(B, policy="alter", active_period=1, inactive_period=1, active_first=2), ValueError,
     r"argument active_first must be 0 or 1, got 2"),
    (dict(B, policy="hill", gamma=0.1, power=1.0),
     ValueError, r"argument num_iter is required by policy 'hill'"),
    (dict(B, policy="hill", num_iter=0, gamma=0.1, power=1.0),
     ValueError, r"argument num_iter must be >= 1, got 0"),
    (dict(B, policy="hill", num_iter=2, gamma=0.1, power=0.0), ValueError,
     r"argument power must be finite and > 0, got 0"),
    (dict(B, policy="hill", num_iter=2, gamma=0.1, power=1.0, start_multiplier=1.5), ValueError,
     r"argument start_multiplier must be in \[0, 1\], got 1.5"),
    (dict(B, policy="hill", num_iter=2, gamma=0.1, power=1.0, end_multiplier=-0.1), ValueError,
     r"argument end_multiplier must be in \[0, 1\], got -0.1"),
    (dict(B, policy="slope", num_iter_1=5, num_iter_2=5), ValueError,
     r"argument num_iter_2 must be > num_iter_1 \(5\), got 5"),
    (dict(B, policy="slope", num_iter_2=5), ValueError, r"argument num_iter_1 is required by policy 'slope'"),
    (dict(B, policy="slope", num_iter_1=1, num_iter_2=5, multiplier_1=float("nan")), ValueError,
     r"argument multiplier_1 must be finite, got nan"),
    (dict(B, policy="gate", num_iter=-1), ValueError, r"argument num_iter must be >= 0, got -1"),
    (dict(B, policy="gate", multiplier_2="x"),
     TypeError, r"argument 'multiplier_2' must be a float, got string"),
    (dict(B, policy="cyclical", max_lr=0.5),
     ValueError, r"argument stepsize is required by policy 'cyclical'"),
    (dict(B, policy="cyclical", max_lr=0.05, stepsize=2), ValueError,
     r"argument max_lr must satisfy \|max_lr\| >= \|base_lr\| \(0.1\), got 0.05"),
    (dict(base_lr=0.0, policy="cyclical", max_lr=0.5, stepsize=2), ValueError,
     r"policy 'cyclical' needs base_lr != 0"),
    (dict(B, policy="cyclical", max_lr=0.5, stepsize=2, decay=-1.0), ValueError,
     r"argument decay must be finite and >= 0, got -1"),
    (dict(B, policy="cosine", period=0), ValueError, r"argument period must be >= 1, got 0"),
    (dict(B, policy="cosine", max_lr=0.1, min_lr=0.2), ValueError,
     r"argument max_lr must be >= min_lr \(0.2\), got 0.1"),
    (dict(B, policy="cosine", t_mult=0.5), ValueError, r"argument t_mult must be finite and >= 1, got 0.5"),
    (dict(B, policy="cosine", lr_shrink=float("inf")),
     ValueError, r"argument lr_shrink must be finite, got inf"),
    (dict(B, policy="constantThenLinearWarmup", start_warmup_multiplier=-1.0), ValueError,
     r"argument start_warmup_multiplier must be finite and >= 0, got -1"),
    (dict(B, policy="constantThenLinearWarmup", linear_warmup_num_iter=-3), ValueError,
     r"argument linear_warmup_num_iter must be >= 0, got -3"),
    (dict(B, policy="pieceWarmup", n2=-1), ValueError, r"argument n2 must be >= 0, got -1"),
    (dict(B, policy="composite"), ValueError,
     r"argument sub_policy_num_iters \(a non-empty list of ints\) is required by policy 'composite'"),
    (dict(B, policy="composite", sub_policy_num_iters=[2, 0], sub_policy_0_policy="fixed",
          sub_policy_1_policy="fixed"), ValueError,
     r"argument sub_policy_num_iters must hold ints > 0, got 0 at position 1"),
    (dict(B, policy="composite", sub_policy_num_iters=[2, 3], sub_policy_0_policy="fixed"), ValueError,
     r"argument sub_policy_1_policy is required by policy 'composite' \(one per entry of "
     r"sub_policy_num_iters\)"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="composite"), ValueError,
     r"argument sub_policy_0_policy: a composite policy cannot be a sub-policy of policy 'composite'"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="stepp"), ValueError,
     r"argument sub_policy_0_policy: unknown policy 'stepp' \(supported: fixed, step"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="step",
          sub_policy_0_gamma=0.5),
     ValueError, r"argument sub_policy_0_stepsize is required by policy 'step'"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="exp", gamma=0.5), ValueError,
     r"argument sub_policy_0_gamma is required by policy 'exp'"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="fixed",
          sub_policy_0_lr_scale=float("nan")),
     ValueError, r"argument sub_policy_0_lr_scale must be finite, got nan"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="multistep",
          sub_policy_0_stepsizes=[3, 2], sub_policy_0_gamma=0.5), ValueError,
     r"argument sub_policy_0_stepsizes must be strictly increasing, got 2 after 3 at position 1"),
    (dict(B, policy="composite", sub_policy_num_iters=[2.0], sub_policy_0_policy="fixed"), TypeError,
     r"argument 'sub_policy_num_iters' must be a list of ints, got list of floats"),
]


@pytest.mark.parametrize("args,exc,match", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_arguments_fail_at_creation(args, exc, match):
    workspace.FeedBlob("it", i32(0))
    net = core.Net("lr_bad")
    net.LearningRate(["it"], ["lr"], **args)
    with pytest.raises(exc, match=r"op LearningRate(?: #0)?: " + match):
        workspace.CreateNet(net)
    # the workspace stays usable
    assert rates(0.5, [3], policy="fixed")[0] == np.float32(0.5)

