"""CreateMutex and AtomicIter (csrc/ops/mutex.c; no gradients, recurrent/_grad_optim.py) and
utils.BuildUniqueMutexIter, which the optimizers use: the counter against a NumPy count and against
Iter, the in-place rule, wrong input kinds, overflow, FetchBlob / FeedBlob / Save of a Mutex (the
workspace usable after every error), BuildUniqueMutexIter's ops (Caffe2's three) and idempotence, an
optimizer training loop against NumPy and against the former Iter-counted nets (bitwise), what a
model's parameters, checkpoints and predictor nets make of the Mutex, and AtomicIter inside a
recurrent step net (allowed: the RNN executor orders the instances that write the counter), with the
executor on and off. No finite-difference test: the ops have no gradient."""

import numpy as np
import pytest

from recurrent import brew, core, model_helper, optimizer, trace, utils, workspace
from recurrent import recurrent as rnn
from recurrent import _C
from test_ops_math import f32, feed, op

I32_MAX = 2 ** 31 - 1


def run(type_, inputs, outputs, **args):
    workspace.RunOperatorOnce(op(type_, inputs, outputs, **args))


def usable():
    workspace.FeedBlob("_ok_x", np.ones((2, 3), np.float32))
    run("Scale", ["_ok_x"], ["_ok_y"], scale=2.0)
    assert (workspace.FetchBlob("_ok_y") == 2).all()


def raises(exc, match, type_, inputs, outputs, **args):
    """Running the op raises exc whose message matches; the workspace stays usable."""
    with pytest.raises(exc, match=match):
        run(type_, inputs, outputs, **args)
    usable()


def counter(name="it"):
    return workspace.FetchBlob(name)


def mutex(name="m"):
    run("CreateMutex", [], [name])


# ---------------------------------------------------------------- the count
@pytest.mark.parametrize("start", [0, 1, 41, I32_MAX - 9])
def test_atomic_iter_counts_like_numpy_and_like_iter(start):
    mutex()
    feed(it=np.array([start], np.int32), it_ref=np.array([start], np.int32))
    expect = np.array([start], np.int64)
    for _ in range(3):
        run("AtomicIter", ["m", "it"], ["it"])
        run("Iter", ["it_ref"], ["it_ref"])
        expect += 1
        got = counter()
        assert got.dtype == np.int32 and got.shape == (1,)
        np.testing.assert_array_equal(got, expect)
        np.testing.assert_array_equal(got, counter("it_ref"))
    # in a net, run several times at once
    net = core.Net("atomic_count_%d" % start)
    net.AtomicIter(["m", "it"], ["it"])
    workspace.CreateNet(net)
    workspace.RunNet(net, 6)
    np.testing.assert_array_equal(counter(), expect + 6)


def test_a_counter_of_shape_one_by_one_and_zero_d():
    """Any int32 tensor of one element counts, as with Iter; its shape is kept."""
    mutex()
    for shape in [(1, 1), ()]:
        feed(it=np.full(shape, 3, np.int32))
        run("AtomicIter", ["m", "it"], ["it"])
        got = counter()
        assert got.shape == shape and got.dtype == np.int32 and int(got.reshape(-1)[0]) == 4


def test_create_mutex_again_replaces_it_and_the_net_keeps_working():
    mutex()
    feed(it=np.array([0], np.int32))
    net = core.Net("atomic_again")
    net.AtomicIter(["m", "it"], ["it"])
    workspace.CreateNet(net)
    workspace.RunNet(net)
    mutex()  # a new Mutex in the same blob; the created net reads the blob at every run
    workspace.RunNet(net)
    np.testing.assert_array_equal(counter(), [2])
    # a tensor in the output blob is replaced by the Mutex
    feed(t=np.ones(3, np.float32))
    mutex("t")
    assert workspace.FetchBlob("t") == b"t, a C++ native class of type Mutex."
    run("AtomicIter", ["t", "it"], ["it"])
    np.testing.assert_array_equal(counter(), [3])


# ---------------------------------------------------------------- in place, arity
def test_in_place_and_arity_errors():
    mutex()
    feed(a=np.array([4], np.int32), b=np.array([9], np.int32))
    raises(ValueError, r"op AtomicIter #0: input 1 blob 'a' and output 0 blob 'b' must be the same blob "
           r"\(AtomicIter increments its counter in place\)", "AtomicIter", ["m", "a"], ["b"])
    np.testing.assert_array_equal(counter("a"), [4])
    np.testing.assert_array_equal(counter("b"), [9])
    raises(ValueError, r"op AtomicIter #0: input 0 and output 0 are the same blob 'm', which this op does "
           r"not allow", "AtomicIter", ["m", "a"], ["m"])
    raises(ValueError, r"op AtomicIter #0: expects 2 inputs, got 1", "AtomicIter", ["a"], ["a"])
    raises(ValueError, r"op AtomicIter #0: expects 1 outputs?, got 2", "AtomicIter", ["m", "a"], ["a", "b"])
    raises(ValueError, r"op CreateMutex #0: expects 0 inputs, got 1", "CreateMutex", ["a"], ["m2"])
    raises(ValueError, r"op CreateMutex #0: expects 1 outputs?, got 0", "CreateMutex", [], [])
    # the failed creations left the Mutex and the counter as they were
    run("AtomicIter", ["m", "a"], ["a"])
    np.testing.assert_array_equal(counter("a"), [5])


# ---------------------------------------------------------------- wrong input kinds
def test_input_zero_must_be_a_mutex():
    feed(it=np.array([2], np.int32), t=np.zeros(2, np.float32))
    msg = r"op AtomicIter #0: input 0 blob '%s' must be a Mutex \(CreateMutex's output\), but it holds %s"
    # a tensor: refused when the net is created (before any op runs)
    n = core.Net("atomic_tensor_mutex")
    n.Iter(["c2"], ["c2"])
    n.AtomicIter(["t", "it"], ["it"])
    feed(c2=np.array([0], np.int32))
    with pytest.raises(TypeError, match=r"net 'atomic_tensor_mutex': op AtomicIter #1: input 0 blob 't' "
                       r"must be a Mutex \(CreateMutex's output\), but it holds a tensor \(2,\) float32"):
        workspace.CreateNet(n)
    usable()
    np.testing.assert_array_equal(counter("c2"), [0])  # the Iter before it did not run
    raises(TypeError, msg % ("t", r"a tensor \(2,\) float32"), "AtomicIter", ["t", "it"], ["it"])
    # another object: a blob queue
    run("CreateBlobsQueue", [], ["q"])
    raises(TypeError, msg % ("q", "a BlobsQueue"), "AtomicIter", ["q", "it"], ["it"])
    # a blob that exists but was never written (an output of a net not run yet)
    e = core.Net("atomic_empty_maker")
    e.Copy("t", "never_written")
    workspace.CreateNet(e)
    raises(TypeError, msg % ("never_written", r"nothing \(it was created but never written\)"), "AtomicIter",
           ["never_written", "it"], ["it"])
    # a missing blob
    raises(KeyError, r"op AtomicIter #0: input 0 blob 'nope' does not exist", "AtomicIter", ["nope", "it"],
           ["it"])
    np.testing.assert_array_equal(counter(), [2])
    # the Mutex made later: the same created net now runs
    workspace.FeedBlob("t", np.zeros(2, np.float32))
    mutex("m")
    ok = core.Net("atomic_ok")
    ok.AtomicIter(["m", "it"], ["it"])
    workspace.RunNetOnce(ok)
    np.testing.assert_array_equal(counter(), [3])


def test_the_counter_errors_are_iters():
    mutex()
    cases = [
        (np.zeros(1, np.float32), TypeError, r"must be int32, got \(1,\) float32"),
        (np.zeros(2, np.int32), ValueError, r"must hold one value, got \(2,\) int32"),
        (np.zeros((0,), np.int32), ValueError, r"must hold one value, got \(0,\) int32"),
    ]
    for value, exc, tail in cases:
        feed(it=value, it_ref=value)
        pre = r"op %s #0: output 0 blob '%s' \(the iteration counter\) "
        raises(exc, pre % ("AtomicIter", "it") + tail, "AtomicIter", ["m", "it"], ["it"])
        raises(exc, pre % ("Iter", "it_ref") + tail, "Iter", ["it_ref"], ["it_ref"])
        np.testing.assert_array_equal(counter(), value)
    # a counter that was never written
    e = core.Net("atomic_counter_maker")
    e.Copy("m_src", "c_empty")
    feed(m_src=np.zeros(1, np.int32))
    workspace.CreateNet(e)
    raises(ValueError, r"op AtomicIter #0: output 0 blob 'c_empty' \(the iteration counter\) holds no tensor",
           "AtomicIter", ["m", "c_empty"], ["c_empty"])
    # a float counter beside a tensor "mutex": creation names input 0 first
    feed(t=np.zeros(1, np.float32), itf=np.zeros(1, np.float32))
    n = core.Net("atomic_both_bad")
    n.AtomicIter(["t", "itf"], ["itf"])
    with pytest.raises(TypeError, match=r"input 0 blob 't' must be a Mutex"):
        workspace.CreateNet(n)
    usable()


def test_overflow_leaves_the_counter_unchanged():
    mutex()
    feed(it=np.array([I32_MAX], np.int32))
    raises(ValueError, r"op AtomicIter #0: output 0 blob 'it' \(the iteration counter\) is at 2147483647: "
           r"incrementing it would overflow int32", "AtomicIter", ["m", "it"], ["it"])
    np.testing.assert_array_equal(counter(), [I32_MAX])
    feed(it=np.array([I32_MAX - 1], np.int32))
    run("AtomicIter", ["m", "it"], ["it"])
    np.testing.assert_array_equal(counter(), [I32_MAX])
    # a negative counter counts on, as Iter's (Caffe2 refused it)
    feed(it=np.array([-3], np.int32))
    run("AtomicIter", ["m", "it"], ["it"])
    np.testing.assert_array_equal(counter(), [-2])


def test_create_mutex_over_another_object_is_a_type_error():
    run("CreateBlobsQueue", [], ["q"])
    raises(TypeError, r"op CreateMutex #0: output 0 blob 'q' holds a BlobsQueue, which a Mutex cannot "
           r"replace", "CreateMutex", [], ["q"])
    # the queue is still there and works
    feed(a=np.ones(2, np.float32))
    run("EnqueueBlobs", ["q", "a"], ["a"])
    run("DequeueBlobs", ["q"], ["b"])
    np.testing.assert_array_equal(workspace.FetchBlob("b"), np.ones(2, np.float32))
    # and a queue op refuses a Mutex
    mutex()
    raises(TypeError, r"op DequeueBlobs #0: input 0 blob 'm' must be a BlobsQueue \(CreateBlobsQueue's "
           r"output\), but it holds a Mutex", "DequeueBlobs", ["m"], ["b"])


def test_fetch_feed_save_of_a_mutex_blob(tmp_path):
    mutex()
    # FetchBlob describes it, as Caffe2's fetch_blob did for a type without a fetcher
    assert workspace.FetchBlob("m") == b"m, a C++ native class of type Mutex."
    usable()
    with pytest.raises(TypeError, match=r"FeedBlob 'm': blob holds a Mutex, not a tensor"):
        workspace.FeedBlob("m", np.ones(2, np.float32))
    usable()
    raises(TypeError, r"op Save #0: input 0 blob 'm' holds a Mutex, not a tensor: only tensors and Counters can be saved",
           "Save", ["m"], [], db=str(tmp_path / "x"), db_type="minidb")
    assert "m" in workspace.Blobs() and workspace.HasBlob("m")
    feed(it=np.array([0], np.int32))
    run("AtomicIter", ["m", "it"], ["it"])  # the Mutex survived every refusal
    np.testing.assert_array_equal(counter(), [1])
    workspace.ResetWorkspace()  # frees it (ASan checks)
    assert not workspace.HasBlob("m")


def test_registered_checked_and_without_gradient():
    assert {"CreateMutex", "AtomicIter"} <= set(_C.op_types(checked=True))
    for t in ["CreateMutex", "AtomicIter"]:
        assert core.GradientRegistry.HasGradient(t)  # registered, as having none
    net = core.Net("atomic_grad")
    net.CreateMutex([], "m")
    it = net.ConstantFill([], "it", shape=[1], value=0, dtype=core.DataType.INT32)
    net.AtomicIter(["m", it], [it])
    w = net.ConstantFill([], "w", shape=[3], value=2.0)
    loss = net.SumElements(net.Mul([w, w], "w2"), "loss")
    gmap = net.AddGradientOperators([loss])
    assert "it" not in gmap and "m" not in gmap
    gtypes = [o.type for o in net.Proto().op][6:]
    assert "AtomicIter" not in " ".join(gtypes[1:]) and "CreateMutexGradient" not in gtypes
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(gmap["w"])), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(counter(), [1])


# ---------------------------------------------------------------- BuildUniqueMutexIter
def op_list(net):
    return [(o.type, list(o.input), list(o.output)) for o in net.Proto().op]


def test_build_unique_mutex_iter_builds_caffe2s_three_ops():
    init, net = core.Net("bumi_init"), core.Net("bumi")
    it = utils.BuildUniqueMutexIter(init, net)
    assert isinstance(it, core.BlobReference) and str(it) == "optimizer_iteration"
    assert utils.OPTIMIZER_ITERATION_NAME == "optimizer_iteration"
    assert utils.ITERATION_MUTEX_NAME == "iteration_mutex"
    assert op_list(init) == [("ConstantFill", [], ["optimizer_iteration"]),
                             ("CreateMutex", [], ["iteration_mutex"])]
    assert op_list(net) == [("AtomicIter", ["iteration_mutex", "optimizer_iteration"],
                             ["optimizer_iteration"])]
    fill = init.Proto().op[0]
    args = {a.name: a for a in fill.arg}
    assert list(args["shape"].ints) == [1] and args["value"].i == 0 and args["dtype"].i == core.DataType.INT32
    for o in list(init.Proto().op) + list(net.Proto().op):
        assert o.device_option.device_type == core.DeviceType.CPU
        # as Caffe2's (utils_test.py testBuildUniqueMutexIter): pinned to the CPU for placers
        assert list(o.device_option.extra_info) == ["device_type_override:cpu"]
    # idempotent: the same blob, nothing added
    again = utils.BuildUniqueMutexIter(init, net)
    assert str(again) == str(it) and len(init.Proto().op) == 2 and len(net.Proto().op) == 1
    # and through optimizer.build_iteration too
    assert str(optimizer.build_iteration(init, net)) == str(it) and len(net.Proto().op) == 1
    workspace.RunNetOnce(init)
    workspace.CreateNet(net)
    workspace.RunNet(net, 3)
    got = workspace.FetchBlob(it)
    assert got.dtype == np.int32 and got.tolist() == [3]


def test_build_unique_mutex_iter_names_and_iter_val():
    init, net = core.Net("bumi2_init"), core.Net("bumi2")
    it = utils.BuildUniqueMutexIter(init, net, iter="c", iter_mutex="cm", iter_val=40)
    assert str(it) == "c"
    assert op_list(init) == [("ConstantFill", [], ["c"]), ("CreateMutex", [], ["cm"])]
    assert op_list(net) == [("AtomicIter", ["cm", "c"], ["c"])]
    # another counter beside it gets its own ops; the default one too
    utils.BuildUniqueMutexIter(init, net, iter="d", iter_mutex="dm")
    utils.BuildUniqueMutexIter(init, net)
    assert [o.type for o in net.Proto().op] == ["AtomicIter"] * 3
    workspace.RunNetOnce(init)
    workspace.RunNetOnce(net)
    assert [workspace.FetchBlob(b).tolist() for b in ("c", "d", "optimizer_iteration")] == [[41], [1], [1]]
    # a counter init_net already defines (any way): returned, nothing added (as Caffe2)
    init3, net3 = core.Net("bumi3_init"), core.Net("bumi3")
    init3.GivenTensorIntFill([], "c3", shape=[1], values=[7])
    it3 = utils.BuildUniqueMutexIter(init3, net3, iter="c3", iter_val=99)
    assert str(it3) == "c3" and len(init3.Proto().op) == 1 and len(net3.Proto().op) == 0
    # iter_val must fit the int32 counter
    for bad in (-1, I32_MAX, 2 ** 40):
        with pytest.raises(ValueError, match=r"iter_val must be in \[0, 2\*\*31 - 1\) \(the counter is "
                           r"int32\), got %d" % bad):
            utils.BuildUniqueMutexIter(core.Net("b_init"), core.Net("b"), iter_val=bad)


# ---------------------------------------------------------------- optimizers
def test_sgd_loop_against_numpy_bitwise():
    """SgdOptimizer on a parameter with a fed gradient, policy step (stepsize 1, gamma 0.5: the rate
    halves at every iteration, so a counter one off doubles or halves every step). The values are
    multiples of 1/8 and the rates powers of two, so the float32 results are exact and NumPy gives
    their bits: the first update uses iteration 1 (the counter is incremented first), as before."""
    init, net = core.Net("sgd_np_init"), core.Net("sgd_np")
    w0 = np.array([1.0, -2.5, 0.125, 3.0], np.float32)
    init.GivenTensorFill([], "w", shape=[4], values=w0.tolist())
    opt = optimizer.SgdOptimizer(base_learning_rate=0.25, policy="step", stepsize=1, gamma=0.5)
    opt(net, init, "w", "g")
    assert [o.type for o in init.Proto().op].count("CreateMutex") == 1
    assert [o.type for o in net.Proto().op][0] == "AtomicIter"
    rng = np.random.RandomState(3)
    workspace.RunNetOnce(init)
    feed(g=np.zeros(4, np.float32))
    workspace.CreateNet(net)
    w, it = w0.astype(np.float64), 0
    for step in range(6):
        g = (rng.randint(-16, 17, size=4) / 8.0).astype(np.float32)
        feed(g=g)
        workspace.RunNet(net)
        it += 1
        lr = -0.25 * 0.5 ** it
        w = w + lr * g.astype(np.float64)
        assert workspace.FetchBlob("optimizer_iteration").tolist() == [it]
        got = workspace.FetchBlob("w")
        assert got.tobytes() == w.astype(np.float32).tobytes(), (step, got, w)
        assert w.astype(np.float32).astype(np.float64).tolist() == w.tolist()  # exact: the bits are NumPy's


def test_adam_first_update_uses_t_two_against_numpy():
    """Adam's bias correction sees t = iteration + 1 = 2 at the first update (as before, as Caffe2)."""
    init, net = core.Net("adam_np_init"), core.Net("adam_np")
    w0 = np.array([0.5, -1.0, 2.0], np.float32)
    init.GivenTensorFill([], "w", shape=[3], values=w0.tolist())
    optimizer.AdamOptimizer(alpha=0.01, beta1=0.8, beta2=0.95, epsilon=1e-4)(net, init, "w", "g")
    workspace.RunNetOnce(init)
    g = np.array([0.3, -0.2, 0.1], np.float32)
    feed(g=g)
    workspace.CreateNet(net)
    w, m1, m2 = w0.astype(np.float64), 0.0, 0.0
    for it in range(1, 4):
        workspace.RunNet(net)
        t = it + 1
        m1 = 0.8 * m1 + 0.2 * g.astype(np.float64)
        m2 = 0.95 * m2 + 0.05 * g.astype(np.float64) ** 2
        w = w - 0.01 * np.sqrt(1 - 0.95 ** t) / (1 - 0.8 ** t) * m1 / (np.sqrt(m2) + 1e-4)
        np.testing.assert_allclose(workspace.FetchBlob("w"), w, rtol=1e-6, atol=1e-7)
        assert workspace.FetchBlob("optimizer_iteration").tolist() == [it]


def small_model(seed):
    rng = np.random.RandomState(seed)
    m = model_helper.ModelHelper(name="mutex_model_%d" % seed)
    y = brew.fc(m, "x", "y", dim_in=4, dim_out=3)
    loss = m.net.AveragedLoss(m.net.SquaredL2Distance([y, "target"], "dist"), "loss")
    m.AddGradientOperators([loss])
    feed(x=f32(rng, 5, 4), target=f32(rng, 5, 3))
    return m


def as_iter_nets(m):
    """The model's nets as they were before AtomicIter: CreateMutex dropped, AtomicIter([mutex, it],
    [it]) written as Iter([it], [it])."""
    init, net = m.param_init_net.Clone("old_init"), m.net.Clone("old_net")
    init.Proto().op[:] = [o for o in init.Proto().op if o.type != "CreateMutex"]
    n_atomic = 0
    for o in net.Proto().op:
        if o.type == "AtomicIter":
            o.type, o.input[:] = "Iter", [o.input[1]]
            n_atomic += 1
    assert n_atomic == 1
    return init, net


@pytest.mark.parametrize("build", [
    lambda m: optimizer.build_sgd(m, base_learning_rate=0.1, policy="step", stepsize=2, gamma=0.7),
    lambda m: optimizer.build_sgd(m, base_learning_rate=0.1, momentum=0.9),
    lambda m: optimizer.build_adam(m, base_learning_rate=0.01),
    lambda m: optimizer.build_adagrad(m, base_learning_rate=0.1, policy="inv", gamma=0.1, power=0.5),
], ids=["sgd-step", "momentum", "adam", "adagrad-inv"])
def test_training_equals_the_iter_counted_nets_bitwise(build):
    m = small_model(7)
    build(m)
    assert [o.type for o in m.net.Proto().op].count("AtomicIter") == 1
    assert "Iter" not in [o.type for o in m.net.Proto().op]
    params = [str(p) for p in m.GetParams()]
    x, target = workspace.FetchBlob("x"), workspace.FetchBlob("target")
    old_init, old_net = as_iter_nets(m)
    results, start = [], None
    for init, net in [(m.param_init_net, m.net), (old_init, old_net)]:
        workspace.ResetWorkspace()
        feed(x=x, target=target)
        workspace.RunNetOnce(init)
        if start is None:  # the random fills: both runs start from the first's draws
            start = {p: workspace.FetchBlob(p) for p in params}
        feed(**start)
        workspace.CreateNet(net)
        workspace.RunNet(net, 5)
        results.append({b: workspace.FetchBlob(b).tobytes()
                        for b in params + ["optimizer_iteration", "loss"]})
    assert results[0] == results[1]
    assert np.frombuffer(results[0]["optimizer_iteration"], np.int32).tolist() == [5]


def test_the_mutex_is_no_parameter_and_checkpoints_leave_it_out(tmp_path):
    m = small_model(8)
    opt = optimizer.build_adam(m, base_learning_rate=0.01)
    assert "iteration_mutex" not in [str(p) for p in m.GetAllParams()]
    aux = opt.get_auxiliary_parameters()
    assert [str(b) for b in aux.shared] == ["optimizer_iteration"]
    assert "iteration_mutex" not in [str(b) for b in aux.local]
    workspace.RunNetOnce(m.param_init_net)
    workspace.CreateNet(m.net)
    workspace.RunNet(m.net, 2)
    # saving the parameters and the counter works; the Mutex cannot be saved
    keep = [str(p) for p in m.GetAllParams()] + [str(b) for b in aux.local] + ["optimizer_iteration"]
    db = str(tmp_path / "ckpt")
    run("Save", keep, [], db=db, db_type="minidb", absolute_path=1)
    with pytest.raises(TypeError, match=r"input \d+ blob 'iteration_mutex' holds a Mutex, not a tensor"):
        run("Save", keep + ["iteration_mutex"], [], db=db + "2", db_type="minidb", absolute_path=1)
    saved = {b: workspace.FetchBlob(b) for b in keep}
    workspace.RunNet(m.net, 3)
    after5 = {b: workspace.FetchBlob(b) for b in keep}
    # resume in a fresh workspace: the init net makes a new Mutex, the checkpoint restores the rest
    workspace.ResetWorkspace()
    x, target = small_model_inputs(8)
    feed(x=x, target=target)
    workspace.RunNetOnce(m.param_init_net)
    run("Load", [], keep, db=db, db_type="minidb", absolute_path=1)
    for b in keep:
        np.testing.assert_array_equal(workspace.FetchBlob(b), saved[b])
    workspace.CreateNet(m.net)
    workspace.RunNet(m.net, 3)
    for b in keep:
        assert workspace.FetchBlob(b).tobytes() == after5[b].tobytes(), b


def small_model_inputs(seed):
    rng = np.random.RandomState(seed)
    return f32(rng, 5, 4), f32(rng, 5, 3)


def test_predictor_clone_and_text_leave_the_training_counter_alone():
    m = small_model(9)
    optimizer.build_sgd(m, base_learning_rate=0.1)
    predict, params = model_helper.ExtractPredictorNet(m.net.Proto(), ["x"], ["y"])
    types = [o.type for o in predict.Proto().op]
    assert types == ["FC"] and "iteration_mutex" not in params and "optimizer_iteration" not in params
    clone = m.net.Clone("mutex_clone")
    assert op_list(clone) == op_list(m.net)
    text = str(m.net.Proto())
    assert 'type: "AtomicIter"' in text and 'input: "iteration_mutex"' in text
    assert 'type: "CreateMutex"' in str(m.param_init_net.Proto())
    # the complete net and its split back, run
    complete = m.GetCompleteNet()
    m2 = model_helper.ModelHelper(name="split")
    m2.ConstructInitTrainNetfromNet(complete)
    assert [o.type for o in m2.param_init_net.Proto().op].count("CreateMutex") == 1
    assert [o.type for o in m2.net.Proto().op].count("AtomicIter") == 1
    workspace.RunNetOnce(m2.param_init_net)
    workspace.RunNetOnce(m2.net)
    assert workspace.FetchBlob("optimizer_iteration").tolist() == [1]


def test_brew_iter_stays_the_plain_iter():
    m = model_helper.ModelHelper(name="brew_iter")
    brew.iter(m, "count")
    assert [o.type for o in m.net.Proto().op] == ["Iter"]


# ---------------------------------------------------------------- step nets
def counting_rnn(name, mutex_in_cell=False):
    """A recurrent net whose cell increments the outer counter cnt (AtomicIter) and adds it to its
    state: o_t = x_t + o_{t-1} + cnt after the increment."""
    cell = core.Net(name + "_cell")
    x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
    if mutex_in_cell:
        cell.CreateMutex([], "step_m")
    cell.AtomicIter(["step_m" if mutex_in_cell else "m", "cnt"], ["cnt"])
    c = cell.Cast("cnt", "c_f", to="float")
    s = cell.Sum([x_t, o_prev], "s")
    o = cell.Add([s, c], "o", broadcast=1)
    cell.AddExternalOutput(o)
    net = core.Net(name)
    o_all, _ = rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                                 links={o_prev: o}, scope=name, forward_only=True)
    return net, o_all


def configure(net, enable, threads):
    for o in net.Proto().op:
        if o.type == "RecurrentNetwork":
            o.arg[:] = [a for a in o.arg if a.name != "enable_rnn_executor"]
            o.arg.append(utils.MakeArgument("enable_rnn_executor", int(enable)))
            rnn.set_rnn_executor_config(o, num_threads=threads, min_op_us=0)


@pytest.mark.parametrize("mutex_in_cell", [False, True], ids=["outer-mutex", "mutex-in-cell"])
def test_atomic_iter_in_a_step_net_counts_in_timestep_order(rng, mutex_in_cell):
    """Allowed in step nets (ops/mutex.c's head comment): with the executor on (4 threads, always used)
    the counter advances by T per run and each timestep sees its own value, as the serial loop and
    NumPy say."""
    T, start = 64, 10
    x = (rng.randint(-4, 5, size=(T, 1, 1)) / 4.0).astype(np.float32)
    outs = {}
    for enable, threads in [(0, 1), (1, 4), (1, 2)]:
        workspace.ResetWorkspace()
        net, o_all = counting_rnn("cnt_rnn", mutex_in_cell)
        configure(net, enable, threads)
        if not mutex_in_cell:
            mutex("m")
        feed(cnt=np.array([start], np.int32), x=x, o_init=np.zeros((1, 1, 1), np.float32))
        workspace.CreateNet(net)
        for r in range(3):
            workspace.RunNet(net)
            seen = start + r * T + np.arange(1, T + 1, dtype=np.float64)
            expect = np.cumsum(x.reshape(-1).astype(np.float64) + seen)
            got = workspace.FetchBlob(o_all)
            np.testing.assert_array_equal(got.reshape(-1), expect.astype(np.float32))
            assert workspace.FetchBlob("cnt").tolist() == [start + (r + 1) * T]
        if enable:
            st = trace.executor_status(net)
            assert [s["last_run"] for s in st] == ["executor"], st
        outs[(enable, threads)] = got.tobytes()
    assert len(set(outs.values())) == 1


def test_atomic_iter_in_a_step_net_errors_name_the_step_op(rng):
    net, _ = counting_rnn("bad_rnn")
    feed(m=np.zeros(1, np.float32), cnt=np.array([0], np.int32), x=np.zeros((3, 1, 1), np.float32),
         o_init=np.zeros((1, 1, 1), np.float32))
    with pytest.raises(TypeError, match=r"op RecurrentNetwork #0: creating the forward step net: net "
                       r"'bad_rnn_cell': op AtomicIter #\d+: input 0 blob 'm' must be a Mutex "
                       r"\(CreateMutex's output\), but it holds a tensor \(1,\) float32"):
        workspace.RunNetOnce(net)
    usable()
    mutex("m")
    feed(cnt=np.array([I32_MAX - 1], np.int32))
    with pytest.raises(ValueError, match=r"op AtomicIter #\d+.*blob 'cnt' \(the iteration counter\) is at "
                       r"2147483647: incrementing it would overflow int32"):
        workspace.RunNetOnce(net)
    usable()
    assert workspace.FetchBlob("cnt").tolist() == [I32_MAX]
    feed(cnt=np.array([0], np.int32))
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("cnt").tolist() == [3]


# ---------------------------------------------------------------- AtomicFetchAdd
@pytest.mark.parametrize("a,b", [(0, 1), (41, -3), (-7, 7), (I32_MAX - 2, 2), (-I32_MAX - 1, 5)])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_atomic_fetch_add_against_numpy(a, b, shape):
    """D = A, C = A + B as int32 scalars (shape (), Caffe2's Resize()), whatever one-element shape A
    and B have; the inputs are left alone when the outputs are other blobs."""
    mutex()
    feed(a=np.full(shape, a, np.int32), b=np.full(shape, b, np.int32))
    run("AtomicFetchAdd", ["m", "a", "b"], ["c", "d"])
    c, d = workspace.FetchBlob("c"), workspace.FetchBlob("d")
    assert c.dtype == d.dtype == np.int32 and c.shape == d.shape == ()
    assert int(c) == int(np.int64(a) + np.int64(b)) and int(d) == a
    assert workspace.FetchBlob("a").shape == shape and int(workspace.FetchBlob("a").reshape(-1)[0]) == a


def test_atomic_fetch_add_in_place_counts_like_caffe2s_loop():
    """Caffe2's use: the value is both input 1 and output 0, so each run fetches the old value and
    advances it; any output may be any input's blob (both values are read first)."""
    mutex()
    feed(v=np.array([5], np.int32), inc=np.array([3], np.int32))
    net = core.Net("fetch_add_loop")
    net.AtomicFetchAdd(["m", "v", "inc"], ["v", "fetched"])
    workspace.CreateNet(net)
    for r in range(4):
        workspace.RunNet(net)
        assert int(workspace.FetchBlob("fetched")) == 5 + 3 * r
        assert int(workspace.FetchBlob("v")) == 5 + 3 * (r + 1)
    feed(p=np.array(10, np.int32), q=np.array(4, np.int32))
    run("AtomicFetchAdd", ["m", "p", "q"], ["q", "p"])  # C into B's blob, D into A's
    assert int(workspace.FetchBlob("q")) == 14 and int(workspace.FetchBlob("p")) == 10


def test_atomic_fetch_add_errors_leave_the_outputs_alone():
    mutex()
    feed(a=np.array([I32_MAX], np.int32), b=np.array([1], np.int32), c=np.array([7], np.int32))
    raises(ValueError, r"op AtomicFetchAdd #0: input 1 blob 'a' \(the value\) 2147483647 \+ input 2 blob 'b' "
           r"\(the increment\) 1 overflows int32", "AtomicFetchAdd", ["m", "a", "b"], ["c", "d"])
    assert workspace.FetchBlob("c").tolist() == [7] and isinstance(workspace.FetchBlob("d"), bytes)  # no tensor
    feed(a=np.array([-I32_MAX - 1], np.int32), b=np.array([-1], np.int32))
    raises(ValueError, r"overflows int32", "AtomicFetchAdd", ["m", "a", "b"], ["c", "d"])
    feed(a=np.array([1.0], np.float32), b=np.array([1], np.int32))
    raises(TypeError, r"op AtomicFetchAdd #0: input 1 blob 'a'.*float32", "AtomicFetchAdd", ["m", "a", "b"],
           ["c", "d"])
    feed(a=np.array([1, 2], np.int32))
    raises(ValueError, r"op AtomicFetchAdd #0: input 1 blob 'a' \(the value\) must hold one int32 value, got "
           r"\(2,\) int32", "AtomicFetchAdd", ["m", "a", "b"], ["c", "d"])
    feed(a=np.array([1], np.int32), b=np.zeros((0,), np.int32))
    raises(ValueError, r"input 2 blob 'b' \(the increment\) must hold one int32 value, got \(0,\) int32",
           "AtomicFetchAdd", ["m", "a", "b"], ["c", "d"])
    feed(b=np.array([1], np.int32), t=np.zeros(1, np.float32))
    raises(TypeError, r"op AtomicFetchAdd #0: input 0 blob 't' must be a Mutex \(CreateMutex's output\), but it "
           r"holds a tensor \(1,\) float32", "AtomicFetchAdd", ["t", "a", "b"], ["c", "d"])
    raises(ValueError, r"op AtomicFetchAdd #0: outputs 0 and 1 are the same blob 'c'", "AtomicFetchAdd",
           ["m", "a", "b"], ["c", "c"])
    assert workspace.FetchBlob("c").tolist() == [7]
    run("AtomicFetchAdd", ["m", "a", "b"], ["c", "d"])
    assert int(workspace.FetchBlob("c")) == 2 and int(workspace.FetchBlob("d")) == 1


def test_atomic_fetch_add_checked_at_creation_and_without_gradient():
    assert "AtomicFetchAdd" in set(_C.op_types(checked=True))
    assert "AtomicFetchAdd64" in set(_C.op_types(checked=True))  # the same op: int64 values are int32 here
    assert core.GradientRegistry.HasGradient("AtomicFetchAdd")  # registered, as having none
    feed(t=np.zeros(1, np.float32), a=np.array([1], np.int32), b=np.array([2], np.int32))
    net = core.Net("fetch_add_check")
    net.AtomicFetchAdd(["t", "a", "b"], ["a", "d"])
    with pytest.raises(TypeError, match=r"op AtomicFetchAdd #0: input 0 blob 't' must be a Mutex"):
        workspace.CreateNet(net)
    usable()
    net = core.Net("fetch_add_grad")
    net.CreateMutex([], "m")
    w = net.ConstantFill([], "w", shape=[3], value=2.0)
    net.AtomicFetchAdd(["m", "a", "b"], ["a", "d"])
    loss = net.SumElements(net.Mul([w, w], "w2"), "loss")
    gmap = net.AddGradientOperators([loss])
    assert "a" not in gmap and "d" not in gmap
    assert not any("AtomicFetchAdd" in o.type for o in net.Proto().op[5:])
    workspace.RunNetOnce(net)
    assert int(workspace.FetchBlob("a")) == 3 and int(workspace.FetchBlob("d")) == 1


def test_atomic_fetch_add_in_a_step_net_with_the_executor(rng):
    """In a step net it fetches and advances a counter once per timestep, in timestep order, with
    the executor on (2 and 4 threads) as off."""
    T, start = 40, 100
    x = (rng.randint(-4, 5, size=(T, 1, 1)) / 4.0).astype(np.float32)
    outs = {}
    for enable, threads in [(0, 1), (1, 4), (1, 2)]:
        workspace.ResetWorkspace()
        cell = core.Net("fa_cell")
        x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
        cell.AtomicFetchAdd(["m", "cnt", "inc"], ["cnt", "old"])
        c = cell.Cast("old", "old_f", to="float")
        o = cell.Add([cell.Sum([x_t, o_prev], "s"), c], "o", broadcast=1)
        cell.AddExternalOutput(o)
        net = core.Net("fa_rnn")
        o_all, _ = rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                                     links={o_prev: o}, scope="fa_rnn", forward_only=True)
        configure(net, enable, threads)
        mutex("m")
        feed(cnt=np.array(start, np.int32), inc=np.array(2, np.int32), x=x, o_init=np.zeros((1, 1, 1), np.float32))
        workspace.RunNetOnce(net)
        seen = start + 2 * np.arange(T, dtype=np.float64)
        expect = np.cumsum(x.reshape(-1).astype(np.float64) + seen).astype(np.float32)
        np.testing.assert_array_equal(workspace.FetchBlob(o_all).reshape(-1), expect)
        assert int(workspace.FetchBlob("cnt")) == start + 2 * T
        outs[(enable, threads)] = workspace.FetchBlob(o_all).tobytes()
    assert len(set(outs.values())) == 1


def test_atomic_fetch_add_64_is_the_int32_op():
    """Caffe2's int64 twin runs on the int32 blobs that stand for int64 here, overflow checked."""
    mutex()
    feed(v=np.array([5], np.int32), inc=np.array([3], np.int32))
    run("AtomicFetchAdd64", ["m", "v", "inc"], ["v", "fetched"])
    assert int(workspace.FetchBlob("v")) == 8 and int(workspace.FetchBlob("fetched")) == 5
    feed(v=np.array([I32_MAX], np.int32))
    raises(ValueError, r"op AtomicFetchAdd64 #0: input 1 blob 'v' \(the value\) 2147483647 \+ input 2 blob 'inc' "
           r"\(the increment\) 3 overflows int32", "AtomicFetchAdd64", ["m", "v", "inc"], ["v", "fetched"])
    assert core.GradientRegistry.HasGradient("AtomicFetchAdd64")  # registered, as having none
