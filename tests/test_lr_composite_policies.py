"""LearningRate's policies compositeCyclical and compositeCosine (csrc/ops/optim.c).

Caffe2's functors (learning_rate_functors.h): constantThenLinearWarmup below
constant_warmup_num_iter + linear_warmup_num_iter iterations, then cyclical / cosine restarted at
iteration 0 there, with the arguments cyclical_max_lr, cyclical_step_size, cyclical_decay /
cosine_max_lr, cosine_min_lr, cosine_period, cosine_t_mult, cosine_lr_shrink. Checked against a
float64 reimplementation over many iterations, the boundary between the two parts included, as
top-level policies and as composite sub-policies; and their argument errors.
"""

import numpy as np
import pytest

from recurrent import core, workspace
from test_lr_policies import cosine_ref, ctlw_ref, cyclical_ref, rates


def composite_ref(policy, it, base_lr, a):
    start = a.get("start_warmup_multiplier", 0.1)
    c = a.get("constant_warmup_num_iter", 10000000)
    n = a.get("linear_warmup_num_iter", 10000000)
    if it < c + n:
        return ctlw_ref(it, start, c, n)
    t = it - c - n
    if policy == "compositeCyclical":
        return cyclical_ref(t, base_lr, a.get("cyclical_max_lr", 0.05), a.get("cyclical_step_size", 1000000),
                            a.get("cyclical_decay", 1.0))
    return cosine_ref(t, a.get("cosine_max_lr", 0.5), a.get("cosine_min_lr", 0.1), a.get("cosine_period", 50),
                      a.get("cosine_t_mult", 1.0), a.get("cosine_lr_shrink", 0.99))


CASES = [
    ("compositeCyclical", dict(start_warmup_multiplier=0.25, constant_warmup_num_iter=3,
                               linear_warmup_num_iter=4, cyclical_max_lr=0.9, cyclical_step_size=3),
     range(0, 40)),
    ("compositeCyclical", dict(start_warmup_multiplier=0.5, constant_warmup_num_iter=0,
                               linear_warmup_num_iter=2, cyclical_max_lr=-0.8, cyclical_step_size=2,
                               cyclical_decay=0.5), range(0, 30)),
    ("compositeCyclical", dict(constant_warmup_num_iter=2, linear_warmup_num_iter=0, cyclical_max_lr=0.6,
                               cyclical_step_size=5), range(0, 30)),
    ("compositeCyclical", dict(cyclical_max_lr=0.5),
     [0, 10 ** 7 - 1, 10 ** 7, 2 * 10 ** 7 - 1, 2 * 10 ** 7, 2 * 10 ** 7 + 10 ** 6, 2 ** 31 - 1]),
    ("compositeCosine", dict(start_warmup_multiplier=0.2, constant_warmup_num_iter=4,
                             linear_warmup_num_iter=5, cosine_max_lr=1.0, cosine_min_lr=0.0, cosine_period=6,
                             cosine_lr_shrink=0.5),
     range(0, 40)),
    ("compositeCosine", dict(start_warmup_multiplier=0.1, constant_warmup_num_iter=1,
                             linear_warmup_num_iter=3, cosine_max_lr=0.8, cosine_min_lr=0.2, cosine_period=5,
                             cosine_t_mult=2.0, cosine_lr_shrink=0.9), range(0, 80)),
    ("compositeCosine", dict(constant_warmup_num_iter=0, linear_warmup_num_iter=0), range(0, 160, 3)),
    ("compositeCosine", dict(), [0, 5, 10 ** 7, 2 * 10 ** 7 - 1, 2 * 10 ** 7, 2 * 10 ** 7 + 25, 2 ** 31 - 1]),
]


@pytest.mark.parametrize("policy,args,iters", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
@pytest.mark.parametrize("base_lr", [-0.3, 0.3])
def test_policy_matches_formula(policy, args, iters, base_lr):
    iters = list(iters)
    got = rates(base_lr, iters, policy=policy, **args)
    want = np.array([base_lr * composite_ref(policy, it, base_lr, args) for it in iters])
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-7, atol=1e-12)
    assert len(set(got.tolist())) >= 3


def test_composite_cyclical_boundary_values():
    # 2 constant, 2 linear (0.5 -> 1), then cyclical from its own iteration 0 (base_lr) up to max_lr
    got = rates(0.1, range(0, 13), policy="compositeCyclical", start_warmup_multiplier=0.5,
                constant_warmup_num_iter=2, linear_warmup_num_iter=2, cyclical_max_lr=0.5,
                cyclical_step_size=4)
    assert got[0] == got[1] == np.float32(0.05)
    assert got[2] == np.float32(0.05) and got[3] == np.float32(0.1 * 0.75)
    assert got[4] == np.float32(0.1) and got[8] == np.float32(0.5) and got[12] == np.float32(0.1)


def test_composite_cosine_boundary_values():
    got = rates(1.0, range(0, 16), policy="compositeCosine", start_warmup_multiplier=0.5,
                constant_warmup_num_iter=1, linear_warmup_num_iter=4, cosine_max_lr=2.0, cosine_min_lr=0.0,
                cosine_period=10, cosine_lr_shrink=0.5)
    assert got[0] == np.float32(0.5) and got[1] == np.float32(0.5) and got[4] == np.float32(0.5 + 0.5 * 3 / 4)
    assert got[5] == np.float32(2.0) and got[10] == np.float32(1.0) and got[15] == np.float32(1.0)


def test_as_composite_sub_policies():
    # sub-policies see the absolute iteration (as Caffe2's composite): compositeCyclical covers 1..5,
    # compositeCosine 6.. (its warmup already over there)
    subs = dict(policy="composite", sub_policy_num_iters=[5, 4],
                sub_policy_0_policy="compositeCyclical", sub_policy_0_constant_warmup_num_iter=1,
                sub_policy_0_linear_warmup_num_iter=2, sub_policy_0_cyclical_max_lr=0.6,
                sub_policy_0_cyclical_step_size=2, sub_policy_0_lr_scale=2.0,
                sub_policy_1_policy="compositeCosine", sub_policy_1_constant_warmup_num_iter=1,
                sub_policy_1_linear_warmup_num_iter=1, sub_policy_1_cosine_period=3)
    iters = list(range(0, 14))
    got = rates(0.2, iters, **subs)
    a0 = dict(constant_warmup_num_iter=1, linear_warmup_num_iter=2, cyclical_max_lr=0.6, cyclical_step_size=2)
    a1 = dict(constant_warmup_num_iter=1, linear_warmup_num_iter=1, cosine_period=3)
    want = [0.2 * (2.0 * composite_ref("compositeCyclical", it, 0.2, a0) if it < 6
                   else composite_ref("compositeCosine", it, 0.2, a1)) for it in iters]
    np.testing.assert_allclose(got, np.array(want).astype(np.float32), rtol=2e-7)


B = {"base_lr": 0.1}
BAD = [
    (dict(B, policy="compositeCyclical", cyclical_max_lr=0.05), ValueError,
     r"argument cyclical_max_lr must satisfy \|cyclical_max_lr\| >= \|base_lr\| \(0.1\), got 0.05"),
    (dict(base_lr=0.0, policy="compositeCyclical"), ValueError,
     r"policy 'compositeCyclical' needs base_lr != 0"),
    (dict(B, policy="compositeCyclical", cyclical_step_size=0), ValueError,
     r"argument cyclical_step_size must be >= 1, got 0"),
    (dict(B, policy="compositeCyclical", cyclical_decay=-0.5), ValueError,
     r"argument cyclical_decay must be finite and >= 0, got -0.5"),
    (dict(B, policy="compositeCyclical", start_warmup_multiplier=-1.0), ValueError,
     r"argument start_warmup_multiplier must be finite and >= 0, got -1"),
    (dict(B, policy="compositeCosine", constant_warmup_num_iter=-2), ValueError,
     r"argument constant_warmup_num_iter must be >= 0, got -2"),
    (dict(B, policy="compositeCosine", linear_warmup_num_iter=2 ** 62), ValueError,
     r"arguments constant_warmup_num_iter \(10000000\) and linear_warmup_num_iter \(4611686018427387904\) "
     r"must each be at most"),
    (dict(B, policy="compositeCosine", cosine_period=0), ValueError,
     r"argument cosine_period must be >= 1, got 0"),
    (dict(B, policy="compositeCosine", cosine_max_lr=0.1, cosine_min_lr=0.2), ValueError,
     r"argument cosine_max_lr must be >= cosine_min_lr \(0.2\), got 0.1"),
    (dict(B, policy="compositeCosine", cosine_t_mult=0.5), ValueError,
     r"argument cosine_t_mult must be finite and >= 1, got 0.5"),
    (dict(B, policy="compositeCosine", cosine_lr_shrink=float("nan")), ValueError,
     r"argument cosine_lr_shrink must be finite, got nan"),
    (dict(B, policy="composite", sub_policy_num_iters=[2], sub_policy_0_policy="compositeCosine",
          sub_policy_0_cosine_period=-1), ValueError,
     r"argument sub_policy_0_cosine_period must be >= 1, got -1"),
]


@pytest.mark.parametrize("args,exc,msg", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_arguments_at_net_creation(args, exc, msg):
    workspace.FeedBlob("it", np.zeros(1, np.int32))
    net = core.Net("lr_bad_composite")
    net.LearningRate(["it"], ["lr"], **args)
    with pytest.raises(exc, match="LearningRate.*" + msg):
        workspace.CreateNet(net)
    workspace.FeedBlob("it", np.zeros(1, np.int32))
    assert workspace.FetchBlob("it")[0] == 0
