"""Optimizer operators (csrc/ops/optim.c): Iter, LearningRate,
MomentumSGDUpdate, MomentumSGD, Adam.

Every op against a float64 NumPy reference (every LearningRate policy over
iterations around its boundaries), in place and repeated in a net (Iter
counting between the steps), the in-place results equal to the out-of-place
ones bit for bit, no gradient (recurrent/_grad_optim.py), and bad input by
exception type and message (op, blob, shapes, argument).
"""

import math

import numpy as np
import pytest

from recurrent import core, workspace
from op_helpers import assert_must_not_differentiate

INT32_MAX = 2**31 - 1


def run(op_type, feeds, outputs, inputs=None, **args):
    """Feeds ``feeds``, runs one op reading them (or ``inputs``), fetches ``outputs``."""
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


# the counter in messages
CNT = r"\(the iteration counter\)"


def f32(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


def i32(v):
    return np.array([v], np.int32)


def lr1(v):
    return np.array([v], np.float32)


# ---------------------------------------------------------------- references (float64)
def ref_multiplier(policy, it, gamma=None, power=None, stepsize=None, max_iter=None, stepsizes=None,
                   start_multiplier=0.0, multiplier=0.5, num_iter=0):
    if policy == "fixed":
        return 1.0
    if policy == "step":
        return gamma ** (it // stepsize)
    if policy == "exp":
        return gamma ** it
    if policy == "inv":
        return (1.0 + gamma * it) ** (-power)
    if policy == "poly":
        return 0.0 if it >= max_iter else (1.0 - it / max_iter) ** power
    if policy == "multistep":
        return gamma ** sum(1 for s in stepsizes if it >= s)
    if policy == "linearWarmup":
        return start_multiplier + (1.0 - start_multiplier) * it / num_iter if it < num_iter else 1.0
    if policy == "constantWarmup":
        return multiplier if it < num_iter else 1.0
    raise AssertionError(policy)


def ref_momentum(g, m, p, lr, momentum=0.0, nesterov=0):
    g, m, p = (a.astype(np.float64) for a in (g, m, p))
    if nesterov:
        mn = momentum * m + lr * g
        ng = (1 + momentum) * mn - momentum * m
        return ng, mn, p - ng
    a = lr * g + momentum * m
    return a, a, p - a


def ref_adam(p, m1, m2, g, lr, it, beta1=0.9, beta2=0.999, eps=1e-5):
    p, m1, m2, g = (a.astype(np.float64) for a in (p, m1, m2, g))
    t = it + 1
    corr = math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    m = beta1 * m1 + (1 - beta1) * g
    v = beta2 * m2 + (1 - beta2) * g * g
    return p + lr * corr * m / (np.sqrt(v) + eps), m, v


# ---------------------------------------------------------------- Iter
def test_iter_creates_the_counter_on_its_first_run():
    out, = run("Iter", {}, ["it"])
    assert out.dtype == np.int32 and out.shape == (1,) and out.tolist() == [1]
    net = core.Net("iter_count")
    net.Iter([], ["it"])
    workspace.CreateNet(net)
    workspace.RunNet(net, 4)
    assert workspace.FetchBlob("it").tolist() == [5]


@pytest.mark.parametrize("shape", [(1,), (), (1, 1)])
def test_iter_in_place_increments(shape):
    workspace.FeedBlob("it", np.full(shape, 41, np.int32))
    net = core.Net("iter_in_place")
    net.Iter(["it"], ["it"])
    workspace.RunNetOnce(net)
    out = workspace.FetchBlob("it")
    assert out.shape == shape and out.dtype == np.int32 and out.ravel().tolist() == [42]
    workspace.RunNetOnce(net)
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("it").ravel().tolist() == [44]


def test_iter_without_input_counts_a_fed_counter():
    workspace.FeedBlob("it", i32(-3))
    out, = run("Iter", {}, ["it"])
    assert out.tolist() == [-2]


def test_iter_overflow_is_refused_and_leaves_the_counter():
    workspace.FeedBlob("it", i32(INT32_MAX - 1))
    net = core.Net("iter_overflow")
    net.Iter(["it"], ["it"])
    workspace.CreateNet(net)
    workspace.RunNet(net)
    assert workspace.FetchBlob("it").tolist() == [INT32_MAX]
    for _ in range(2):
        with pytest.raises(ValueError, match=r"op Iter #0: output 0 blob 'it' " + CNT +
                           r" is at 2147483647: incrementing it would overflow int32"):
            workspace.RunNet(net)
        assert workspace.FetchBlob("it").tolist() == [INT32_MAX]
    workspace.FeedBlob("it", i32(7))  # usable again once fixed
    workspace.RunNet(net)
    assert workspace.FetchBlob("it").tolist() == [8]


def test_iter_has_no_gradient():
    op = core.CreateOperator("Iter", ["it"], ["it"])
    assert core.GradientRegistry.GetGradientForOp(op, ["it_grad"]) == ([], [None])


def test_iter_bad_input():
    raises(TypeError, r"op Iter #0: output 0 blob 'it' " + CNT + r" must be int32, got \(1,\) float32",
           "Iter", {"it": lr1(1)}, ["it"])
    raises(TypeError, r"op Iter #0: output 0 blob 'c' " + CNT + r" must be int32, got \(\) float32",
           "Iter", {"c": np.float32(3)}, ["c"], inputs=[])
    raises(ValueError, r"op Iter #0: output 0 blob 'it' \(the iteration counter\) must hold one value, "
                       r"got \(2,\) int32",
           "Iter", {"it": np.array([1, 2], np.int32)}, ["it"])
    raises(ValueError, r"op Iter #0: output 0 blob 'e' \(the iteration counter\) must hold one value, "
                       r"got \(0,\) int32",
           "Iter", {"e": np.zeros(0, np.int32)}, ["e"], inputs=[])
    raises(ValueError, r"op Iter #0: input 0 blob 'it' and output 0 blob 'other' must be the same blob",
           "Iter", {"it": i32(0)}, ["other"])
    # the failed runs changed nothing
    assert workspace.FetchBlob("it").tolist() == [0]
    assert workspace.FetchBlob("c").tolist() == 3.0


# ---------------------------------------------------------------- LearningRate
POLICIES = [
    ("fixed", {}, [0, 1, 7, 1000]),
    ("step", {"stepsize": 3, "gamma": 0.5}, [0, 1, 2, 3, 4, 5, 6, 7, 100]),
    ("exp", {"gamma": 0.9}, [0, 1, 2, 10, 500]),
    ("inv", {"gamma": 0.1, "power": 0.75}, [0, 1, 9, 10, 1000]),
    ("inv", {"gamma": 2, "power": 2}, [0, 3]),  # int arguments are accepted as floats
    ("poly", {"max_iter": 10, "power": 2.0}, [0, 1, 5, 9, 10, 11, 1000]),
    ("poly", {"max_iter": 4, "power": 0.5}, [0, 3, 4, 5]),
    ("poly", {"max_iter": 4, "power": 0}, [0, 3, 4, 5]),  # 1 up to max_iter - 1, then 0
    ("multistep", {"stepsizes": [2, 5, 9], "gamma": 0.1}, [0, 1, 2, 3, 4, 5, 8, 9, 10, 100]),
    ("multistep", {"stepsizes": [1], "gamma": 3.0}, [0, 1, 2]),
    ("linearWarmup", {"start_multiplier": 0.25, "num_iter": 4}, [0, 1, 2, 3, 4, 5, 100]),
    ("linearWarmup", {"num_iter": 5}, [0, 1, 4, 5, 6]),  # start_multiplier defaults to 0
    ("linearWarmup", {}, [0, 1, 10]),  # num_iter defaults to 0: always 1
    ("constantWarmup", {"multiplier": 0.2, "num_iter": 3}, [0, 1, 2, 3, 4]),
    ("constantWarmup", {"num_iter": 2}, [0, 1, 2, 3]),  # multiplier defaults to 0.5
    ("constantWarmup", {"multiplier": 0.2}, [0, 5]),  # num_iter defaults to 0: always 1
]


@pytest.mark.parametrize("policy,args,iters", POLICIES,
                         ids=["%s-%d" % (p[0], i) for i, p in enumerate(POLICIES)])
@pytest.mark.parametrize("base_lr", [-0.05, 1.7])
def test_learning_rate_matches_numpy(policy, args, iters, base_lr):
    workspace.FeedBlob("it", i32(0))
    net = core.Net("lr_" + policy)
    net.LearningRate(["it"], ["lr"], base_lr=base_lr, policy=policy, **args)
    workspace.CreateNet(net)
    got, want = [], []
    for it in iters:
        workspace.FeedBlob("it", i32(it))
        workspace.RunNet(net)
        out = workspace.FetchBlob("lr")
        assert out.dtype == np.float32 and out.shape == (1,)
        got.append(float(out[0]))
        want.append(base_lr * ref_multiplier(policy, it, **args))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_learning_rate_poly_is_zero_from_max_iter_on():
    workspace.FeedBlob("it", i32(0))
    net = core.Net("lr_poly")
    net.LearningRate(["it"], ["lr"], base_lr=-0.1, policy="poly", max_iter=8, power=1.5)
    workspace.CreateNet(net)
    for it in (8, 9, 12, 2**31 - 1):
        workspace.FeedBlob("it", i32(it))
        workspace.RunNet(net)
        assert workspace.FetchBlob("lr")[0] == 0.0
    workspace.FeedBlob("it", i32(7))
    workspace.RunNet(net)
    assert workspace.FetchBlob("lr")[0] < 0


def test_learning_rate_rounds_once_from_double():
    # base_lr * multiplier in double, rounded to float32 once: 0.1 * 0.9**10 to the nearest float32
    out, = run("LearningRate", {"it": i32(10)}, ["lr"], base_lr=0.1, policy="exp", gamma=0.9)
    assert out[0] == np.float32(0.1 * 0.9 ** 10)


def test_learning_rate_scalar_iter_and_counter_from_iter():
    out, = run("LearningRate", {"it": np.int32(4)}, ["lr"], base_lr=2.0, policy="step", stepsize=2, gamma=0.5)
    assert out.shape == (1,) and out[0] == 0.5
    # Iter then LearningRate, as an optimizer builds them: the first run sees iteration 1
    net = core.Net("lr_schedule")
    net.Iter([], ["count"])
    net.LearningRate(["count"], ["rate"], base_lr=-0.5, policy="multistep", stepsizes=[2, 4], gamma=0.1)
    workspace.CreateNet(net)
    got = []
    for _ in range(5):
        workspace.RunNet(net)
        got.append(float(workspace.FetchBlob("rate")[0]))
    want = [-0.5 * ref_multiplier("multistep", it, stepsizes=[2, 4], gamma=0.1) for it in range(1, 6)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_learning_rate_has_no_gradient():
    op = core.CreateOperator("LearningRate", ["it"], ["lr"], base_lr=0.1, policy="fixed")
    assert core.GradientRegistry.GetGradientForOp(op, ["lr_grad"]) == ([], [None])


def test_learning_rate_bad_input():
    fixed = {"base_lr": 0.1, "policy": "fixed"}
    raises(TypeError, r"op LearningRate #0: input 0 blob 'itf' \(the iteration counter\) must be int32, "
                      r"got \(1,\) float32",
           "LearningRate", {"itf": lr1(1)}, ["lr"], **fixed)
    raises(ValueError, r"op LearningRate #0: input 0 blob 'it2' " + CNT +
           r" must hold one value, got \(2,\) int32",
           "LearningRate", {"it2": np.array([1, 2], np.int32)}, ["lr"], **fixed)
    raises(ValueError, r"op LearningRate #0: input 0 blob 'itn' " + CNT + r" must be >= 0, got -1",
           "LearningRate", {"itn": i32(-1)}, ["lr"], **fixed)


BAD_LR_ARGS = [
    ({"policy": "fixed"}, ValueError, r"argument base_lr is required"),
    ({"base_lr": 0.1}, ValueError,
     r"argument policy is required \(one of: fixed, step, exp, inv, poly, multistep, linearWarmup, "
     r"constantWarmup, alter, hill, slope, gate, cyclical, cosine, constantThenLinearWarmup, pieceWarmup, "
     r"composite, compositeCyclical, compositeCosine\)"),
    ({"base_lr": 0.1, "policy": "cosin"}, ValueError,
     r"argument policy: unknown policy 'cosin' \(supported: fixed, step, exp, inv, poly, multistep, "
     r"linearWarmup, constantWarmup, alter, hill, slope, gate, cyclical, cosine, constantThenLinearWarmup, "
     r"pieceWarmup, composite, compositeCyclical, compositeCosine\)"),
    ({"base_lr": 0.1, "policy": 3}, TypeError, r"argument 'policy' must be a string, got int"),
    ({"base_lr": float("nan"), "policy": "fixed"}, ValueError, r"argument base_lr must be finite, got nan"),
    ({"base_lr": float("inf"), "policy": "fixed"}, ValueError, r"argument base_lr must be finite, got inf"),
    ({"base_lr": "a", "policy": "fixed"}, TypeError, r"argument 'base_lr' must be a float, got string"),
    ({"base_lr": 0.1, "policy": "step", "gamma": 0.5}, ValueError,
     r"argument stepsize is required by policy 'step'"),
    ({"base_lr": 0.1, "policy": "step", "stepsize": 0, "gamma": 0.5}, ValueError,
     r"argument stepsize must be >= 1, got 0"),
    ({"base_lr": 0.1, "policy": "step", "stepsize": 2.0, "gamma": 0.5}, TypeError,
     r"argument 'stepsize' must be an int, got float"),
    ({"base_lr": 0.1, "policy": "step", "stepsize": 2}, ValueError,
     r"argument gamma is required by policy 'step'"),
    ({"base_lr": 0.1, "policy": "exp"}, ValueError, r"argument gamma is required by policy 'exp'"),
    ({"base_lr": 0.1, "policy": "exp", "gamma": float("nan")}, ValueError,
     r"argument gamma must be finite, got nan"),
    ({"base_lr": 0.1, "policy": "exp", "gamma": 0.0}, ValueError,
     r"argument gamma must be finite and > 0, got 0"),
    ({"base_lr": 0.1, "policy": "inv", "gamma": 0.1}, ValueError,
     r"argument power is required by policy 'inv'"),
    ({"base_lr": 0.1, "policy": "inv", "gamma": 0.1, "power": float("-inf")}, ValueError,
     r"argument power must be finite, got -inf"),
    ({"base_lr": 0.1, "policy": "poly", "power": 1.0}, ValueError,
     r"argument max_iter is required by policy 'poly'"),
    ({"base_lr": 0.1, "policy": "poly", "max_iter": -5, "power": 1.0}, ValueError,
     r"argument max_iter must be >= 1, got -5"),
    ({"base_lr": 0.1, "policy": "poly", "max_iter": 5}, ValueError,
     r"argument power is required by policy 'poly'"),
    ({"base_lr": 0.1, "policy": "multistep", "gamma": 0.1}, ValueError,
     r"argument stepsizes \(a non-empty list of ints\) is required by policy 'multistep'"),
    ({"base_lr": 0.1, "policy": "multistep", "stepsizes": [], "gamma": 0.1}, ValueError,
     r"argument stepsizes \(a non-empty list of ints\) is required by policy 'multistep'"),
    ({"base_lr": 0.1, "policy": "multistep", "stepsizes": [3, 3], "gamma": 0.1}, ValueError,
     r"argument stepsizes must be strictly increasing, got 3 after 3 at position 1"),
    ({"base_lr": 0.1, "policy": "multistep", "stepsizes": [0, 3], "gamma": 0.1}, ValueError,
     r"argument stepsizes must hold ints > 0, got 0 at position 0"),
    ({"base_lr": 0.1, "policy": "multistep", "stepsizes": [1.5], "gamma": 0.1}, TypeError,
     r"argument 'stepsizes' must be a list of ints, got list of floats"),
    ({"base_lr": 0.1, "policy": "multistep", "stepsizes": [2]}, ValueError,
     r"argument gamma is required by policy 'multistep'"),
    ({"base_lr": 0.1, "policy": "linearWarmup", "num_iter": -1}, ValueError,
     r"argument num_iter must be >= 0, got -1"),
    ({"base_lr": 0.1, "policy": "linearWarmup", "start_multiplier": -0.5}, ValueError,
     r"argument start_multiplier must be finite and >= 0, got -0.5"),
    ({"base_lr": 0.1, "policy": "constantWarmup", "multiplier": float("inf")}, ValueError,
     r"argument multiplier must be finite, got inf"),
    ({"base_lr": 0.1, "policy": "constantWarmup", "num_iter": -2}, ValueError,
     r"argument num_iter must be >= 0, got -2"),
]


@pytest.mark.parametrize("args,exc,match", BAD_LR_ARGS, ids=[str(i) for i in range(len(BAD_LR_ARGS))])
def test_learning_rate_bad_arguments_fail_at_creation(args, exc, match):
    workspace.FeedBlob("it", i32(0))
    net = core.Net("lr_bad")
    net.LearningRate(["it"], ["lr"], **args)
    with pytest.raises(exc, match=r"op LearningRate(?: #0)?: " + match):
        workspace.CreateNet(net)  # nothing runs: refused when the op is created


def test_learning_rate_ignores_arguments_its_policy_does_not_use():
    out, = run("LearningRate", {"it": i32(3)}, ["lr"], base_lr=0.25, policy="fixed", stepsize=0, gamma=-1.0,
               stepsizes=[5, 1])
    assert out[0] == np.float32(0.25)


# ---------------------------------------------------------------- MomentumSGDUpdate
@pytest.mark.parametrize("nesterov", [0, 1])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_momentum_sgd_matches_numpy(rng, nesterov, momentum):
    g, m, p = f32(rng, 4, 3), f32(rng, 4, 3), f32(rng, 4, 3)
    ng, nm, np_ = run("MomentumSGDUpdate", {"g": g, "m": m, "lr": lr1(0.1), "p": p}, ["ng", "nm", "np"],
                      momentum=momentum, nesterov=nesterov)
    rg, rm, rp = ref_momentum(g, m, p, 0.1, momentum, nesterov)
    for got, want in ((ng, rg), (nm, rm), (np_, rp)):
        assert got.dtype == np.float32 and got.shape == (4, 3)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_momentum_sgd_defaults(rng):
    # momentum 0, nesterov 0: the moment is forgotten, the step is lr * grad
    g, m, p = f32(rng, 5), f32(rng, 5), f32(rng, 5)
    ng, nm, np_ = run("MomentumSGDUpdate", {"g": g, "m": m, "lr": lr1(0.5), "p": p}, ["ng", "nm", "np"])
    rg, rm, rp = ref_momentum(g, m, p, 0.5)
    np.testing.assert_allclose(ng, rg, rtol=1e-6)
    np.testing.assert_allclose(np_, rp, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nesterov", [0, 1])
def test_momentum_sgd_in_place_and_repeated(rng, nesterov):
    p = f32(rng, 3, 4)
    rm, rp = np.zeros((3, 4)), p.astype(np.float64)
    workspace.FeedBlob("p", p)
    workspace.FeedBlob("m", np.zeros((3, 4), np.float32))
    workspace.FeedBlob("lr", lr1(0.05))
    net = core.Net("momentum_steps")
    net.MomentumSGDUpdate(["g", "m", "lr", "p"], ["g", "m", "p"], momentum=0.8, nesterov=nesterov)
    for step in range(3):
        g = f32(rng, 3, 4)
        workspace.FeedBlob("g", g)
        workspace.RunNetOnce(net)
        rg, rm, rp = ref_momentum(g, rm, rp, 0.05, 0.8, nesterov)
        np.testing.assert_allclose(workspace.FetchBlob("g"), rg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("m"), rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("p"), rp, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nesterov", [0, 1])
def test_momentum_sgd_in_place_equals_out_of_place(rng, nesterov):
    g, m, p = f32(rng, 7), f32(rng, 7), f32(rng, 7)
    feeds = {"g": g, "m": m, "lr": lr1(0.3), "p": p}
    outs = run("MomentumSGDUpdate", feeds, ["ng", "nm", "np"], momentum=0.7, nesterov=nesterov)
    ins = run("MomentumSGDUpdate", feeds, ["g", "m", "p"], momentum=0.7, nesterov=nesterov)
    for a, b in zip(outs, ins):
        np.testing.assert_array_equal(a, b)


def test_momentum_sgd_empty_and_scalar(rng):
    e = np.zeros((0, 3), np.float32)
    outs = run("MomentumSGDUpdate", {"g": e, "m": e, "lr": lr1(0.1), "p": e}, ["ng", "nm", "np"],
               momentum=0.5)
    assert [o.shape for o in outs] == [(0, 3)] * 3
    s = np.float32(2.0)
    ng, nm, np_ = run("MomentumSGDUpdate", {"g": s, "m": np.float32(1.0), "lr": np.float32(0.5), "p": s},
                      ["ng", "nm", "np"], momentum=0.5)
    assert ng.shape == () and float(ng) == 0.5 * 2.0 + 0.5 * 1.0 and float(np_) == 2.0 - 1.5


def test_momentum_sgd_has_no_gradient():
    op = core.CreateOperator("MomentumSGDUpdate", ["g", "m", "lr", "p"], ["g", "m", "p"])
    assert core.GradientRegistry.GetGradientForOp(op, ["g_grad", None, "p_grad"]) == ([], [None] * 4)


def test_momentum_sgd_bad_input(rng):
    v = f32(rng, 3)
    op = "MomentumSGDUpdate"
    outs = ["g", "m", "p"]
    raises(ValueError, r"op MomentumSGDUpdate #0: input 1 blob 'm' must have the shape of input 0 blob 'g' "
                       r"\(3,\) float32, got \(4,\) float32",
           op, {"g": v, "m": f32(rng, 4), "lr": lr1(0.1), "p": v}, outs)
    raises(ValueError, r"op MomentumSGDUpdate #0: input 3 blob 'p' must have the shape of input 0 blob 'g' "
                       r"\(3,\) float32, got \(3, 1\) float32",
           op, {"g": v, "m": v, "lr": lr1(0.1), "p": f32(rng, 3, 1)}, outs)
    raises(ValueError, r"op MomentumSGDUpdate #0: input 2 blob 'lr2' \(the learning rate\) must hold one "
                       r"value, got \(2,\) float32",
           op, {"g": v, "m": v, "lr2": np.array([0.1, 0.2], np.float32), "p": v}, outs)
    raises(TypeError, r"op MomentumSGDUpdate #0: input 3 blob 'pi' must be float32, got \(3,\) int32",
           op, {"g": v, "m": v, "lr": lr1(0.1), "pi": np.zeros(3, np.int32)}, outs)
    raises(TypeError, r"op MomentumSGDUpdate #0: input 2 blob 'lri' must be float32, got \(1,\) int32",
           op, {"g": v, "m": v, "lri": i32(1), "p": v}, outs)
    raises(ValueError, r"op MomentumSGDUpdate #0: argument momentum must be finite and >= 0, got -0.5",
           op, {"g": v, "m": v, "lr": lr1(0.1), "p": v}, outs, momentum=-0.5)
    raises(ValueError, r"op MomentumSGDUpdate #0: argument momentum must be finite and >= 0, got inf",
           op, {"g": v, "m": v, "lr": lr1(0.1), "p": v}, outs, momentum=float("inf"))
    raises(ValueError, r"op MomentumSGDUpdate #0: argument nesterov must be 0 or 1, got 2",
           op, {"g": v, "m": v, "lr": lr1(0.1), "p": v}, outs, nesterov=2)
    raises(ValueError, r"op MomentumSGDUpdate #0: input 3 and output 0 are the same blob 'p'",
           op, {"g": v, "m": v, "lr": lr1(0.1), "p": v}, ["p", "m", "q"])
    raises(ValueError, r"op MomentumSGDUpdate #0: expects 3 outputs, got 2",
           op, {"g": v, "m": v, "lr": lr1(0.1), "p": v}, ["g", "m"])


# ---------------------------------------------------------------- MomentumSGD (no param)
@pytest.mark.parametrize("nesterov", [0, 1])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_momentum_sgd_without_param_matches_numpy_and_the_update(rng, nesterov, momentum):
    # Caffe2's MomentumSGD: MomentumSGDUpdate's adjusted gradient and moment, no param
    g, m, p = f32(rng, 4, 3), f32(rng, 4, 3), f32(rng, 4, 3)
    ng, nm = run("MomentumSGD", {"g": g, "m": m, "lr": lr1(0.1)}, ["ng", "nm"], momentum=momentum,
                 nesterov=nesterov)
    rg, rm, _ = ref_momentum(g, m, p, 0.1, momentum, nesterov)
    for got, want in ((ng, rg), (nm, rm)):
        assert got.dtype == np.float32 and got.shape == (4, 3)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    ug, um, _ = run("MomentumSGDUpdate", {"g": g, "m": m, "lr": lr1(0.1), "p": p}, ["ug", "um", "up"],
                    momentum=momentum, nesterov=nesterov)
    assert ng.tobytes() == ug.tobytes() and nm.tobytes() == um.tobytes()   # the same kernel, bit for bit
    # in place, as Caffe2's optimizer calls it, equals out of place; empty works
    ig, im = run("MomentumSGD", {"g": g, "m": m, "lr": lr1(0.1)}, ["g", "m"], momentum=momentum,
                 nesterov=nesterov)
    assert ig.tobytes() == ng.tobytes() and im.tobytes() == nm.tobytes()
    e = np.zeros((0, 2), np.float32)
    empty = run("MomentumSGD", {"g": e, "m": e, "lr": lr1(0.1)}, ["eg", "em"])
    assert [o.shape for o in empty] == [(0, 2)] * 2


def test_momentum_sgd_without_param_no_gradient_and_bad_input(rng):
    op = core.CreateOperator("MomentumSGD", ["g", "m", "lr"], ["g", "m"])
    assert_must_not_differentiate(op, 3)
    v, o, outs = f32(rng, 3), "MomentumSGD", ["g", "m"]
    raises(ValueError, r"op MomentumSGD #0: input 1 blob 'm' must have the shape of input 0 blob 'g' "
                       r"\(3,\) float32, got \(4,\) float32",
           o, {"g": v, "m": f32(rng, 4), "lr": lr1(0.1)}, outs)
    raises(TypeError, r"op MomentumSGD #0: input 1 blob 'mi' must be float32, got \(3,\) int32",
           o, {"g": v, "mi": np.zeros(3, np.int32), "lr": lr1(0.1)}, outs)
    raises(ValueError, r"op MomentumSGD #0: input 2 blob 'lr2' \(the learning rate\) must hold one value",
           o, {"g": v, "m": v, "lr2": np.array([0.1, 0.2], np.float32)}, outs)
    raises(ValueError, r"op MomentumSGD #0: argument nesterov must be 0 or 1, got 2",
           o, {"g": v, "m": v, "lr": lr1(0.1)}, outs, nesterov=2)
    raises(ValueError, r"op MomentumSGD #0: expects 3 inputs, got 4",
           o, {"g": v, "m": v, "lr": lr1(0.1), "p": v}, outs)
    raises(ValueError, r"op MomentumSGD #0: expects 2 outputs, got 3",
           o, {"g": v, "m": v, "lr": lr1(0.1)}, ["g", "m", "p"])
    raises(ValueError, r"op MomentumSGD #0: input 0 and output 1 are the same blob 'g', which this op does "
                       r"not allow",
           o, {"g": v, "m": v, "lr": lr1(0.1)}, ["m", "g"])


# ---------------------------------------------------------------- Adam
@pytest.mark.parametrize("it", [0, 1, 9, 1000])
@pytest.mark.parametrize("betas", [(0.9, 0.999, 1e-8), (0.5, 0.6, 1e-2), (0.0, 0.0, 0.0)])
def test_adam_matches_numpy(rng, it, betas):
    b1, b2, eps = betas
    p, m1, g = f32(rng, 4, 3), f32(rng, 4, 3), f32(rng, 4, 3)
    m2 = np.abs(f32(rng, 4, 3))
    feeds = {"p": p, "m1": m1, "m2": m2, "g": g, "lr": lr1(-0.01), "it": i32(it)}
    outs = run("Adam", feeds, ["np", "nm1", "nm2"], beta1=b1, beta2=b2, epsilon=eps)
    refs = ref_adam(p, m1, m2, g, -0.01, it, b1, b2, eps)
    for got, want in zip(outs, refs):
        assert got.dtype == np.float32 and got.shape == (4, 3)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_adam_defaults(rng):
    # gradients of 1e-5 and a fresh second moment: sqrt(v) ~ the default epsilon 1e-5 matters
    p = f32(rng, 6)
    g = (f32(rng, 6) * 1e-5).astype(np.float32)
    z = np.zeros(6, np.float32)
    feeds = {"p": p, "m1": z, "m2": z, "g": g, "lr": lr1(-0.1), "it": i32(0)}
    outs = run("Adam", feeds, ["np", "nm1", "nm2"])
    refs = ref_adam(p, z, z, g, -0.1, 0, 0.9, 0.999, 1e-5)
    for got, want in zip(outs, refs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-12)
    # ... and not another epsilon
    other = ref_adam(p, z, z, g, -0.1, 0, 0.9, 0.999, 1e-8)[0]
    assert np.max(np.abs(other - refs[0])) > 1e-3


def test_adam_three_steps_in_place_with_iter(rng):
    """Three Adam steps in one net, Iter incrementing the counter before each
    (as an optimizer builds them: the first step sees iteration 1)."""
    p = f32(rng, 2, 5)
    workspace.FeedBlob("p", p)
    workspace.FeedBlob("m1", np.zeros((2, 5), np.float32))
    workspace.FeedBlob("m2", np.zeros((2, 5), np.float32))
    workspace.FeedBlob("lr", lr1(-0.02))
    net = core.Net("adam_steps")
    net.Iter([], ["it"])
    net.Adam(["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"], beta1=0.8, beta2=0.95, epsilon=1e-6)
    rp, rm1, rm2 = p.astype(np.float64), np.zeros((2, 5)), np.zeros((2, 5))
    workspace.FeedBlob("g", f32(rng, 2, 5))
    workspace.CreateNet(net)
    for step in range(1, 4):
        g = f32(rng, 2, 5)
        workspace.FeedBlob("g", g)
        workspace.RunNet(net)
        assert workspace.FetchBlob("it").tolist() == [step]
        rp, rm1, rm2 = ref_adam(rp, rm1, rm2, g, -0.02, step, 0.8, 0.95, 1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("p"), rp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("m1"), rm1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("m2"), rm2, rtol=1e-5, atol=1e-6)


def test_adam_with_learning_rate_schedule(rng):
    """Iter -> LearningRate -> Adam, the ops Caffe2's Adam optimizer emits."""
    p = f32(rng, 8)
    workspace.FeedBlob("p", p)
    workspace.FeedBlob("m1", np.zeros(8, np.float32))
    workspace.FeedBlob("m2", np.zeros(8, np.float32))
    workspace.FeedBlob("it", i32(0))
    net = core.Net("adam_schedule")
    net.Iter(["it"], ["it"])
    net.LearningRate(["it"], ["lr"], base_lr=-0.01, policy="step", stepsize=2, gamma=0.5)
    net.Adam(["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"])
    rp, rm1, rm2 = p.astype(np.float64), np.zeros(8), np.zeros(8)
    for it in range(1, 6):
        g = f32(rng, 8)
        workspace.FeedBlob("g", g)
        workspace.RunNetOnce(net)
        lr = -0.01 * ref_multiplier("step", it, stepsize=2, gamma=0.5)
        np.testing.assert_allclose(workspace.FetchBlob("lr"), [lr], rtol=1e-6)
        rp, rm1, rm2 = ref_adam(rp, rm1, rm2, g, lr, it)
    np.testing.assert_allclose(workspace.FetchBlob("p"), rp, rtol=1e-5, atol=1e-6)


def test_adam_in_place_equals_out_of_place(rng):
    p, m1, g = f32(rng, 9), f32(rng, 9), f32(rng, 9)
    m2 = np.abs(f32(rng, 9))
    feeds = {"p": p, "m1": m1, "m2": m2, "g": g, "lr": lr1(-0.1), "it": i32(3)}
    outs = run("Adam", feeds, ["np", "nm1", "nm2"])
    ins = run("Adam", feeds, ["p", "m1", "m2"])
    for a, b in zip(outs, ins):
        np.testing.assert_array_equal(a, b)


def test_adam_empty():
    e = np.zeros((2, 0), np.float32)
    feeds = {"p": e, "m1": e, "m2": e, "g": e, "lr": lr1(-0.1), "it": i32(0)}
    outs = run("Adam", feeds, ["np", "nm1", "nm2"])
    assert [o.shape for o in outs] == [(2, 0)] * 3


def test_adam_has_no_gradient():
    op = core.CreateOperator("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"])
    assert_must_not_differentiate(op, 6)


def test_adam_bad_input(rng):
    v = f32(rng, 3)
    op = "Adam"
    outs = ["p", "m1", "m2"]

    def feeds(**kw):
        d = {"p": v, "m1": v, "m2": v, "g": v, "lr": lr1(-0.1), "it": i32(0)}
        d.update(kw)
        return d

    raises(ValueError, r"op Adam #0: input 3 blob 'g' must have the shape of input 0 blob 'p' "
                       r"\(3,\) float32, got \(2, 3\) float32",
           op, feeds(g=f32(rng, 2, 3)), outs)
    raises(ValueError, r"op Adam #0: input 2 blob 'm2' must have the shape of input 0 blob 'p' "
                       r"\(3,\) float32, got \(4,\) float32",
           op, feeds(m2=f32(rng, 4)), outs)
    raises(TypeError, r"op Adam #0: input 1 blob 'm1' must be float32, got \(3,\) int32",
           op, feeds(m1=np.zeros(3, np.int32)), outs)
    raises(ValueError, r"op Adam #0: input 4 blob 'lr' \(the learning rate\) must hold one value, "
                       r"got \(2,\) float32",
           op, feeds(lr=np.array([-0.1, -0.2], np.float32)), outs)
    raises(TypeError, r"op Adam #0: input 5 blob 'it' " + CNT + r" must be int32, got \(1,\) float32",
           op, feeds(it=lr1(0)), outs)
    raises(ValueError, r"op Adam #0: input 5 blob 'it' \(the iteration counter\) must hold one value, "
                       r"got \(0,\) int32",
           op, feeds(it=np.zeros(0, np.int32)), outs)
    raises(ValueError, r"op Adam #0: input 5 blob 'it' \(the iteration counter\) must be >= 0, got -3",
           op, feeds(it=i32(-3)), outs)
    for arg, val, msg in (("beta1", 1.0, r"beta1 must be in \[0, 1\), got 1"),
                          ("beta1", -0.1, r"beta1 must be in \[0, 1\), got -0.1"),
                          ("beta2", float("nan"), r"beta2 must be in \[0, 1\), got nan"),
                          ("epsilon", -1.0, r"epsilon must be finite and >= 0, got -1"),
                          ("epsilon", float("inf"), r"epsilon must be finite and >= 0, got inf")):
        raises(ValueError, r"op Adam #0: argument " + msg, op, feeds(), outs, **{arg: val})
    raises(ValueError, r"op Adam #0: expects 3 to 4 outputs, got 5", op, feeds(), outs + ["e", "extra"])
    raises(ValueError, r"op Adam #0: input 3 and output 0 are the same blob 'g'", op, feeds(),
           ["g", "m1", "m2"])


def test_adam_failed_run_leaves_the_parameters(rng):
    p = f32(rng, 5)
    workspace.FeedBlob("p", p)
    for b in ("m1", "m2"):
        workspace.FeedBlob(b, np.zeros(5, np.float32))
    workspace.FeedBlob("g", f32(rng, 5))
    workspace.FeedBlob("lr", lr1(-0.1))
    workspace.FeedBlob("it", i32(-1))
    with pytest.raises(ValueError, match="must be >= 0, got -1"):
        workspace.RunOperatorOnce(core.CreateOperator("Adam", ["p", "m1", "m2", "g", "lr", "it"],
                                                      ["p", "m1", "m2"]))
    np.testing.assert_array_equal(workspace.FetchBlob("p"), p)
    np.testing.assert_array_equal(workspace.FetchBlob("m1"), np.zeros(5, np.float32))
