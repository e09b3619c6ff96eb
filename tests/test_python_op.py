"""The Python op: net.Python(f, grad_f) (recurrent/python_op.py, csrc/ops/pyfunc.c)."""

import re
import textwrap
import threading

import numpy as np
import pytest

from recurrent import core, workspace
from test_fork import run_python


def affine(inputs, outputs):
    x = inputs[0].data
    outputs[0].reshape(x.shape)
    outputs[0].data[...] = 2 * x + 1


def test_forward_against_numpy(rng):
    x = rng.randn(3, 4).astype(np.float32)
    workspace.FeedBlob("x", x)
    net = core.Net("py_fwd")
    y = net.Python(affine)(["x"], ["y"])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(y), 2 * x + 1)


def test_outputs_may_be_left_out(rng):
    # Caffe2's net.Python(f) returned lambda *args, **kwargs: so net.Python(f)(inputs) added the op
    # with one output named by the net, as any net.X(inputs) (hypothesis_test.py's
    # test_weighted_sample_blobs_queue calls it so)
    seen = []

    def f(inputs, outputs):
        seen.append((inputs[0].data.copy(), len(outputs)))
        outputs[0].feed(inputs[0].data * 3)
    x = rng.randn(4).astype(np.float32)
    workspace.FeedBlob("x", x)
    net = core.Net("py_no_outputs")
    y = net.Python(f)("x")
    assert isinstance(y, core.BlobReference) and str(y) != "x"
    assert list(net.Proto().op[0].output) == [str(y)]
    y2 = net.Python(f)(["x"], outputs=2)
    assert len(y2) == 2
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob(y), 3 * x, rtol=1e-6)
    assert [n for _, n in seen] == [1, 2]


def test_several_inputs_and_outputs_dtypes_and_in_place(rng):
    def f(inputs, outputs):
        a, b = inputs[0].data, inputs[1].data
        outputs[0].feed(a * b)                      # float64 product -> float32
        outputs[1].feed(a > 0)                      # bool -> int32
        outputs[2].init([2], core.DataType.INT64)   # int32 zeros
        outputs[2].data[:] = [7, 8]
    a = rng.randn(5).astype(np.float32)
    b = rng.randn(5).astype(np.float32)
    workspace.FeedBlob("a", a)
    workspace.FeedBlob("b", b)
    net = core.Net("py_multi")
    net.Python(f)(["a", "b"], ["a", "pos", "k"])    # output 0 in place over input 0
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("a"), a * b, rtol=1e-6)
    pos, k = workspace.FetchBlob("pos"), workspace.FetchBlob("k")
    assert pos.dtype == np.int32 and pos.tolist() == (a > 0).astype(int).tolist()
    assert k.dtype == np.int32 and k.tolist() == [7, 8]


def test_created_net_runs_again_and_the_function_sees_fresh_inputs():
    seen = []

    def f(inputs, outputs):
        seen.append(inputs[0].data.copy())
        inputs[0].data[...] = -1  # a copy: the blob keeps its value
        outputs[0].feed(inputs[0].data.sum(keepdims=True))
    net = core.Net("py_again")
    net.Python(f)(["x"], ["s"])
    workspace.FeedBlob("x", np.ones(3, np.float32))
    workspace.CreateNet(net)
    workspace.RunNet(net, 2)
    workspace.FeedBlob("x", np.full(2, 5, np.float32))
    workspace.RunNet(net)
    assert [s.tolist() for s in seen] == [[1, 1, 1], [1, 1, 1], [5, 5]]
    assert workspace.FetchBlob("x").tolist() == [5, 5]


def _loss_net(f, grad_f, **kw):
    net = core.Net("py_grad")
    y = net.Python(f, grad_f=grad_f, **kw)(["x", "w"], ["y"])
    loss = net.SumElements(net.Sqr(y), "loss")
    net.AddGradientOperators([loss])
    return net


def prod_f(inputs, outputs):
    outputs[0].feed(np.sin(inputs[0].data) * inputs[1].data)


def prod_grad(inputs, outputs):
    x, w, _, dy = (t.data for t in inputs)
    outputs[0].feed(np.cos(x) * w * dy)
    outputs[1].feed(np.sin(x) * dy)


def test_gradient_against_finite_differences(rng):
    x = rng.randn(2, 3).astype(np.float32)
    w = rng.randn(2, 3).astype(np.float32)
    net = _loss_net(prod_f, prod_grad)
    assert [op.type for op in net.Proto().op][-1] == "PythonGradient"

    def loss(xv, wv):
        return float(np.sum((np.sin(xv.astype(np.float64)) * wv) ** 2))
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("w", w)
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("loss") == pytest.approx(loss(x, w), rel=1e-5)
    eps = 1e-3
    for name, v in (("x", x), ("w", w)):
        num = np.zeros(v.shape)
        for i in np.ndindex(v.shape):
            hi, lo = v.astype(np.float64), v.astype(np.float64)
            hi[i] += eps
            lo[i] -= eps
            args_hi = (hi, w) if name == "x" else (x, hi)
            args_lo = (lo, w) if name == "x" else (x, lo)
            num[i] = (loss(*args_hi) - loss(*args_lo)) / (2 * eps)
        np.testing.assert_allclose(workspace.FetchBlob(name + "_grad"), num, rtol=2e-3, atol=1e-4)


def test_gradient_indices():
    def grad_x_only(inputs, outputs):
        x, w, _, dy = (t.data for t in inputs)
        outputs[0].feed(np.cos(x) * w * dy)
    net = _loss_net(prod_f, grad_x_only, grad_input_indices=[0])
    gop = net.Proto().op[-1]
    assert gop.type == "PythonGradient" and list(gop.output) == ["x_grad"]
    workspace.FeedBlob("x", np.ones(3, np.float32))
    workspace.FeedBlob("w", np.full(3, 2, np.float32))
    workspace.RunNetOnce(net)
    y = np.sin(1.0) * 2
    np.testing.assert_allclose(workspace.FetchBlob("x_grad"), [np.cos(1.0) * 2 * 2 * y] * 3, rtol=1e-5)
    assert not workspace.HasBlob("w_grad")
    with pytest.raises(ValueError, match="grad_input_indices"):
        core.Net("n").Python(prod_f, prod_grad, grad_input_indices=[0, 0])


def test_errors_name_the_op_and_keep_the_workspace_usable():
    workspace.FeedBlob("x", np.ones(2, np.float32))

    def raises(inputs, outputs):
        raise ZeroDivisionError("boom")
    net = core.Net("py_raise")
    net.Python(raises)(["x"], ["y"])
    with pytest.raises(RuntimeError,
                       match=r"op Python #0: the Python function raised ZeroDivisionError: boom") as e:
        workspace.RunNetOnce(net)
    assert isinstance(e.value.__cause__, ZeroDivisionError)

    def raises_value(inputs, outputs):
        raise ValueError("bad value")
    net = core.Net("py_value")
    net.Python(raises_value)(["x"], ["y"])
    with pytest.raises(ValueError, match="raised ValueError: bad value"):
        workspace.RunNetOnce(net)

    def sets_nothing(inputs, outputs):
        pass
    net = core.Net("py_unset")  # as Caffe2's: an output not set is left as it is
    net.Python(sets_nothing)(["x"], ["y", "x"])
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("y") == b"y, a C++ native class of type nullptr (uninitialized)."
    assert workspace.FetchBlob("x").tolist() == [1, 1]

    def strings(inputs, outputs):
        outputs[0].feed(np.array(["a"]))
    net = core.Net("py_str")
    net.Python(strings)(["x"], ["y"])
    with pytest.raises(TypeError, match="cannot be stored"):
        workspace.RunNetOnce(net)

    net = core.Net("py_affine")
    net.Python(affine)(["x"], ["y"])
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("y").tolist() == [3, 3]


def test_refusals():
    workspace.FeedBlob("x", np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"python_func_type\(f\) must have a method forward\(inputs, outputs\), "
                                        r"got object"):
        core.Net("n").Python(affine, python_func_type=lambda f: object())
    with pytest.raises(TypeError, match="must be callable or a \\(builder, args, kwargs\\) tuple, got int"):
        core.Net("n").Python(3)
    with pytest.raises(ValueError, match="argument 'token' is missing"):
        workspace.RunOperatorOnce(core.CreateOperator("Python", ["x"], ["y"]))
    with pytest.raises(KeyError, match="no Python function is registered under token 'nope'"):
        workspace.RunOperatorOnce(core.CreateOperator("Python", ["x"], ["y"], token="nope"))
    workspace.CreateBlob("empty")
    net = core.Net("py_empty_input")
    net.Python(affine)(["empty"], ["y"])
    with pytest.raises(ValueError, match="input 0 blob 'empty' holds no tensor"):
        workspace.RunNetOnce(net)
    net = core.Net("py_nograd")
    y = net.Python(affine)(["x"], ["y"])
    with pytest.raises(ValueError, match="made without grad_f"):
        net.AddGradientOperators([net.SumElements(y, "l")])


class Scaled:
    """A python_func_type: made from the scale factor, its forward and backward are the op's functions."""
    made = 0

    def __init__(self, k):
        self.k = k
        Scaled.made += 1

    def forward(self, inputs, outputs):
        outputs[0].feed(inputs[0].data * self.k)

    def backward(self, inputs, outputs):  # inputs: x, y, dy
        outputs[0].feed(inputs[2].data * self.k)


def test_python_func_type(rng):
    """Caffe2's python_func_type: one object per net.Python call, its forward and backward the functions
    (grad_f is not used); checked against NumPy and by finite differences."""
    x = rng.randn(3, 4).astype(np.float32)
    workspace.FeedBlob("x", x)
    made = Scaled.made
    net = core.Net("py_func_type")
    y = net.Python(3.0, grad_f=lambda i, o: None, python_func_type=Scaled)(["x"], ["y"])
    assert Scaled.made == made + 1
    net.AddGradientOperators([net.SumElements(y, "loss")])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), x * np.float32(3))
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), np.full_like(x, 3))
    from recurrent import gradient_checker
    op = core.CreatePythonOperator(2.0, ["x"], ["y"], python_func_type=Scaled)
    ok, grad, estimated = gradient_checker.GradientChecker(0.01, 0.005).CheckSimple(op, [x], 0, [0])
    assert ok, (grad, estimated)
    net = core.Net("py_func_type_forward_only")
    net.Python(None, python_func_type=type("F", (), {"__init__": lambda s, f: None,
                                                   "forward": lambda s, i, o: o[0].feed(i[0].data + 1)}))(
        ["x"], ["z"])
    z = net.Proto().op[0]
    assert [a.name for a in z.arg] == ["token"]
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("z"), x + 1)
    with pytest.raises(ValueError, match="made without grad_f"):
        net.AddGradientOperators([net.SumElements("z", "l2")])


def counting_builder(name, index, extra):
    """Caffe2's python_op_test op_builder: each function built counts its own calls."""
    assert (name, index, extra) == ("name", 5, 4.2)
    calls = [0]

    def my_op(inputs, outputs):
        assert inputs[0].data[0] == calls[0], (inputs[0].data[0], calls[0])
        calls[0] += 1
    return my_op


def test_builder_tuple():
    """Caffe2's python_op_test.test_builder_tuple: a (builder, args, kwargs) tuple is built once per op
    instance, when the op is created (a clone's ops get functions of their own); the functions are
    dropped with their ops."""
    from recurrent import python_op
    before = len(python_op._INSTANCES)
    net = core.Net("builder_template")
    net.Python((counting_builder, ["name", 5], {"extra": 4.2}))(["iter"], [])
    net.Python((counting_builder, ("name", 5), {"extra": 4.2}))(["iter"], [])
    for repeat in range(2):
        cloned = net.Clone("builder_%d" % repeat)
        workspace.FeedBlob("iter", np.array([0]))
        workspace.CreateNet(cloned)
        assert len(python_op._INSTANCES) == before + 2 * (repeat + 1)
        for i in range(10):
            workspace.FeedBlob("iter", np.array([i]))
            workspace.RunNet(cloned)
    workspace.DeleteNet(cloned)
    assert len(python_op._INSTANCES) == before + 2
    for _ in range(50):  # each RunNetOnce creates (builds) and frees its ops
        workspace.FeedBlob("iter", np.array([0]))
        workspace.RunNetOnce(net)
    assert len(python_op._INSTANCES) == before + 2
    workspace.ResetWorkspace()
    assert len(python_op._INSTANCES) == before


def test_builder_tuple_of_create_python_operator_and_of_grad_f():
    """CreatePythonOperator builds its tuple once, when called (Caffe2's _RegisterPythonImpl): one
    function for every run of the OperatorDef. A grad_f tuple is built for each PythonGradient op."""
    op = core.CreatePythonOperator((counting_builder, ["name", 5], {"extra": 4.2}), ["iter"], [])
    for i in range(3):
        workspace.FeedBlob("iter", np.array([i]))
        workspace.RunOperatorOnce(op)

    def scaler(k):
        return lambda inputs, outputs: outputs[0].feed(inputs[0].data * k)

    def scaler_grad(k):
        return lambda inputs, outputs: outputs[0].feed(inputs[2].data * k)
    workspace.FeedBlob("x", np.array([1, 2], np.float32))
    net = core.Net("py_builder_grad")
    y = net.Python((scaler, [3.0], {}), grad_f=(scaler_grad, [], {"k": 3.0}))(["x"], ["y"])
    net.AddGradientOperators([net.SumElements(y, "loss")])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [3, 6])
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), [3, 3])


def test_builder_errors():
    """A builder that raises fails the op's creation (CreateNet names the op; nothing is left built);
    one that returns no function too; a tuple that is not (callable, list, dict) is a TypeError."""
    from recurrent import python_op
    before = len(python_op._INSTANCES)

    def raising():
        raise ValueError("no function today")
    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("py_builder_raises")
    net.Python((lambda: affine, [], {}))(["x"], ["y"])
    net.Python((raising, [], {}))(["x"], ["z"])
    with pytest.raises(ValueError, match="op Python #1: the Python function raised ValueError: no function today"):
        workspace.CreateNet(net)
    assert len(python_op._INSTANCES) == before and net.Name() not in workspace.Nets()
    net = core.Net("py_builder_not_a_function")
    net.Python((lambda: 3, [], {}))(["x"], ["y"])
    with pytest.raises(TypeError, match=r"op Python #0: net.Python: the builder <lambda> of f returned int, "
                                        r"not a function"):
        workspace.RunNetOnce(net)
    for bad in [(affine,), (affine, [], {}, 1), (3, [], {}), (affine, 1, {}), (affine, [], [])]:
        with pytest.raises(TypeError, match=r"f as a tuple must be \(builder, args, kwargs\)"):
            core.Net("n").Python(bad)
    assert len(python_op._INSTANCES) == before
    after = core.Net("py_after")
    after.Python(affine)(["x"], ["y"])
    workspace.RunNetOnce(after)
    assert workspace.FetchBlob("y").tolist() == [3, 3]


def test_exit_with_built_functions_alive():
    """The interpreter exits with nets whose ops hold built functions: no call into Python while it
    finalizes, a clean exit."""
    code = textwrap.dedent('''
        import numpy as np
        from recurrent import core, workspace

        def builder():
            return lambda inputs, outputs: outputs[0].feed(inputs[0].data)

        workspace.FeedBlob("x", np.ones(2, np.float32))
        net = core.Net("kept")
        net.Python((builder, [], {}))(["x"], ["y"])
        workspace.CreateNet(net)
        workspace.RunNet(net)
        ws = workspace.C.Workspace()
        ws.feed_blob("x", np.ones(2, np.float32))
        ws.create_net(net)
        print("done", flush=True)
    ''')
    p = run_python(code, timeout=60)
    assert p.returncode == 0 and "done" in p.stdout and not p.stderr.strip(), p.stderr[-3000:]


LENT = r"a Python op's function may read blobs of the workspace running its net \(and write them when made " \
       r"with pass_workspace=True\), but not create, run or delete nets or run operators or plans in it, or reset it"


def test_workspace_manipulation():
    """Caffe2's python_op_test.test_workspace_manipulation (pass_workspace), and a blob the function
    feeds is what the net's later ops read."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(inputs, outputs, ws):
        fetched = ws.blobs["internal"].fetch()
        np.testing.assert_array_equal(fetched, x)
        ws.feed_blob("made", fetched * 2)
        ws.create_blob("made_empty")
        assert ws.has_blob("made") and "made_empty" in ws.blobs and not ws.has_blob("nope")
    ws = workspace.C.Workspace()
    ws.feed_blob("made", np.zeros(1, np.float32))  # an op's input must exist when the net is created
    net = core.Net("test")
    net.GivenTensorFill([], ["internal"], values=x.ravel().tolist(), shape=x.shape)
    net.Python(f, pass_workspace=True)([], [])
    net.Scale("made", "scaled", scale=0.5)
    assert ws.run(net)
    np.testing.assert_array_equal(ws.fetch_blob("scaled"), x)
    assert ws.fetch_blob("made_empty") == b"made_empty, a C++ native class of type nullptr (uninitialized)."
    assert not workspace.HasBlob("internal")  # ws is not the current workspace


def test_the_current_workspace_is_lent_to_the_function():
    """The function reads the running (current) workspace with FetchBlob / HasBlob / Blobs; it writes
    it (FeedBlob, CreateBlob) only when made with pass_workspace=True, which the net-creation check
    and shape inference know of. 300 new blobs (the blob table grows while the net runs) leave the
    net's ops reading the right blobs."""
    seen = {}

    def reads(inputs, outputs):
        seen["a"] = workspace.FetchBlob("a").tolist()
        seen["has"] = (workspace.HasBlob("a"), workspace.HasBlob("nope"), "a" in workspace.Blobs())
        outputs[0].feed(inputs[0].data * 10)

    def writes(inputs, outputs, ws):
        reads(inputs, outputs)
        for i in range(300):
            workspace.FeedBlob("extra_%d" % i, np.full(2, i, np.float32))
        workspace.FeedBlob("a", workspace.FetchBlob("a") + 1)
        workspace.CreateBlob("empty")
        seen["n"] = len(workspace.Blobs())
    workspace.FeedBlob("a", np.ones(2, np.float32))
    workspace.FeedBlob("x", np.full(2, 3, np.float32))
    for f in (reads, writes):
        net = core.Net("py_lent_" + f.__name__)
        net.Python(f, pass_workspace=f is writes)(["x"], ["y"])
        net.Scale("a", "b", scale=3.0)
        net.Add(["y", "b"], "z")
        workspace.CreateNet(net)
        workspace.RunNet(net)
        np.testing.assert_array_equal(workspace.FetchBlob("z"), [33, 33] if f is reads else [36, 36])
    assert seen == {"a": [1, 1], "has": (True, False, True), "n": len(workspace.Blobs())}
    workspace.RunNet(net)  # again: the fed `a` (2) is read
    np.testing.assert_array_equal(workspace.FetchBlob("z"), [39, 39])
    assert seen["a"] == [2, 2] and workspace.FetchBlob("extra_299").tolist() == [299, 299]

    def writes_without_leave(inputs, outputs):
        workspace.FeedBlob("a", np.zeros(3, np.float32))
    net = core.Net("py_no_leave")
    net.Python(writes_without_leave)([], [])
    with pytest.raises(RuntimeError, match=r"the Python function raised RuntimeError: a Python op's function may "
                                           r"write blobs of the workspace running its net only when the op is "
                                           r"made with pass_workspace=True"):
        workspace.RunNetOnce(net)
    assert workspace.FetchBlob("a").tolist() == [3, 3]


def test_creation_check_and_shape_inference_after_a_pass_workspace_op():
    """An op after a pass_workspace Python op is not checked at creation (its function may feed the
    blobs the op reads) and shape inference knows no blob after it; after a plain Python op both
    go on as before."""
    def fix_w(inputs, outputs, ws):
        ws.feed_blob("w", np.ones((4, 3), np.float32))
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    workspace.FeedBlob("w", np.ones((4, 5), np.float32))  # wrong for FC until fix_w runs
    workspace.FeedBlob("b", np.zeros(4, np.float32))
    plain = core.Net("py_plain_before_fc")
    plain.Python(affine)(["x"], ["x1"])
    plain.FC(["x", "w", "b"], "y")
    with pytest.raises(ValueError, match="op FC #1"):
        workspace.CreateNet(plain)
    shapes, _ = workspace.InferShapesAndTypes([core.Net("py_empty_net")])
    assert shapes["w"] == [4, 5]
    net = core.Net("py_fix_then_fc")
    net.Python(fix_w, pass_workspace=True)([], [])
    net.FC(["x", "w", "b"], "y")
    shapes, _ = workspace.InferShapesAndTypes([net])
    assert shapes == {}
    workspace.CreateNet(net)
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.full((2, 4), 3, np.float32))


def test_pass_workspace_gradient():
    """grad_f gets the workspace too (Caffe2's PythonGradient op took the forward op's arguments)."""
    def f(inputs, outputs, ws):
        outputs[0].feed(inputs[0].data * ws.fetch_blob("k"))

    def grad_f(inputs, outputs, ws):
        outputs[0].feed(inputs[2].data * ws.blobs["k"].fetch())
    workspace.FeedBlob("x", np.array([1, 2, 3], np.float32))
    workspace.FeedBlob("k", np.array([2, 3, 4], np.float32))
    net = core.Net("py_pass_ws_grad")
    y = net.Python(f, grad_f=grad_f, pass_workspace=True)(["x"], ["y"])
    net.AddGradientOperators([net.SumElements(y, "loss")])
    gop = net.Proto().op[-1]
    assert gop.type == "PythonGradient" and [(a.name, a.i) for a in gop.arg if a.name == "pass_workspace"] == [
        ("pass_workspace", 1)]
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [2, 6, 12])
    np.testing.assert_array_equal(workspace.FetchBlob("x_grad"), [2, 3, 4])


@pytest.mark.parametrize("what", ["RunNetOnce", "CreateNet", "RunNet", "RunNet itself", "DeleteNet itself",
                                  "ResetWorkspace", "RunOperatorOnce", "RunPlan", "ws.run", "ws.reset",
                                  "ws.create_net"])
def test_only_blobs_inside_the_function(what):
    """What would create, run or remove nets or ops in the running workspace, or reset it, raises
    RuntimeError inside the function; caught there, the net goes on; not caught, the op fails with
    it; either way the workspace stays usable and nothing was removed."""
    other = core.Net("py_other")
    other.Scale("x", "x2", scale=2.0)
    nets = {}
    calls = {
        "RunNetOnce": lambda ws: workspace.RunNetOnce(other),
        "CreateNet": lambda ws: workspace.CreateNet(other),
        "RunNet": lambda ws: workspace.RunNet(nets["existing"]),
        "RunNet itself": lambda ws: workspace.RunNet(nets["itself"]),
        "DeleteNet itself": lambda ws: workspace.DeleteNet(nets["itself"]),
        "ResetWorkspace": lambda ws: workspace.ResetWorkspace(),
        "RunOperatorOnce": lambda ws: workspace.RunOperatorOnce(core.CreateOperator("Relu", ["x"], ["r"])),
        "RunPlan": lambda ws: workspace.RunPlan(core.execution_step("s", [other])),
        "ws.run": lambda ws: ws.run(other),
        "ws.reset": lambda ws: ws.reset(),
        "ws.create_net": lambda ws: ws.create_net(other),
    }
    for catch in (True, False):
        caught = []

        def f(inputs, outputs, ws):
            try:
                calls[what](ws)
            except RuntimeError as e:
                if not catch:
                    raise
                caught.append(str(e))
            outputs[0].feed(ws.fetch_blob("x") + 1)
        workspace.ResetWorkspace()
        workspace.FeedBlob("x", np.ones(2, np.float32))
        nets["existing"] = core.Net("py_existing")
        workspace.CreateNet(nets["existing"])
        net = nets["itself"] = core.Net("py_only_blobs")
        net.Python(f, pass_workspace=True)([], ["y"])
        net.Scale("y", "z", scale=2.0)
        workspace.CreateNet(net)
        if catch:
            workspace.RunNet(net)
            assert len(caught) == 1 and re.search(LENT, caught[0]), caught
            np.testing.assert_array_equal(workspace.FetchBlob("z"), [4, 4])
        else:
            with pytest.raises(RuntimeError, match="op Python #0: the Python function raised RuntimeError: (RunPlan .*: )?" + LENT):
                workspace.RunNet(net)
        assert set(workspace.Nets()) == {nets["existing"].Name(), net.Name()}
        assert not workspace.HasBlob("x2") and not workspace.HasBlob("r")
        workspace.RunNetOnce(other)  # usable
        np.testing.assert_array_equal(workspace.FetchBlob("x2"), [2, 2])


def test_another_thread_still_finds_the_workspace_busy():
    """The lending is to the thread running the net: another thread's call into that workspace while
    the function runs (and releases the GIL) is refused as before."""
    got = []

    def other_thread():
        try:
            workspace.FetchBlob("x")
            got.append("fetched")
        except RuntimeError as e:
            got.append(str(e))

    def f(inputs, outputs):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join(30)
        outputs[0].feed(workspace.FetchBlob("x"))
    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("py_busy")
    net.Python(f)([], ["y"])
    workspace.RunNetOnce(net)
    assert len(got) == 1 and got[0].startswith("workspace is busy: another thread is running"), got
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [1, 1])


def test_a_function_running_a_net_of_another_workspace():
    """f runs, in a workspace of its own, a net whose Python op gets that workspace; then f reads its
    own again (each function gets the workspace running its own net)."""
    inner_ws = workspace.C.Workspace()
    inner_ws.feed_blob("w", np.full(2, 5, np.float32))
    order = []

    def inner(inputs, outputs, ws):
        order.append(("inner", ws.fetch_blob("w").tolist(), ws.has_blob("x")))
        try:
            ws.run(core.Net("nested_again"))
        except RuntimeError as e:
            order.append(str(e)[:40])

    def outer(inputs, outputs, ws):
        n = core.Net("py_inner")
        n.Python(inner, pass_workspace=True)([], [])
        inner_ws.run(n)
        order.append(("outer", ws.fetch_blob("x").tolist(), ws.has_blob("w")))
        outputs[0].feed(ws.fetch_blob("x") * 2)
    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("py_outer_ws")
    net.Python(outer, pass_workspace=True)([], ["y"])
    workspace.RunNetOnce(net)
    assert order == [("inner", [5, 5], False), "a Python op's function may read blobs of", ("outer", [1, 1], False)]
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [2, 2])
    inner_ws.run(core.Net("empty"))  # neither workspace stays taken
    workspace.RunNetOnce(core.Net("empty"))


def test_pass_workspace_argument_checked():
    token = core.Net("n").Python(affine)  # registers affine
    del token
    op = core.CreateOperator("Python", ["x"], ["y"], token="nope", pass_workspace=2)
    workspace.FeedBlob("x", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="op Python.*argument 'pass_workspace' must be 0 or 1, got 2"):
        workspace.RunOperatorOnce(op)


def test_keyboard_interrupt_in_the_function():
    def interrupts(inputs, outputs):
        raise KeyboardInterrupt()
    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("py_int")
    net.Python(interrupts)(["x"], ["y"])
    with pytest.raises(KeyboardInterrupt):
        workspace.RunNetOnce(net)
    net = core.Net("py_after")
    net.Python(affine)(["x"], ["y"])
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob("y").tolist() == [3, 3]


def test_refused_in_a_step_net():
    """The RNN executor runs step ops on threads that never touch Python: refused at creation."""
    cell = core.Net("py_cell")
    cell.Python(affine)(["x_t"], ["h"])
    from recurrent import recurrent
    net = core.Net("py_outer")
    recurrent.recurrent_net(net=net, cell_net=cell, inputs=[("x_t", "x")],
                            initial_cell_inputs=[("h_prev", "h0")], links={"h_prev": "h"}, timestep="t",
                            scope="r", forward_only=True)
    workspace.FeedBlob("x", np.ones((3, 2, 4), np.float32))
    workspace.FeedBlob("h0", np.zeros((1, 2, 4), np.float32))
    with pytest.raises(ValueError, match=r"step op Python #0 of the forward step net cannot run inside a "
                                         r"recurrent net: its timesteps run on the RNN executor's worker "
                                         r"threads, which never call Python \(run it in the outer net\)"):
        workspace.RunNetOnce(net)


def test_threads_each_with_its_own_workspace():
    """Nets with Python ops in 4 threads at once (one workspace each): right results, no deadlock."""
    results, errors = {}, []

    def work(k):
        try:
            workspace.SwitchWorkspace("py_thread_%d" % k, True)
            workspace.FeedBlob("x", np.full(3, k, np.float32))
            net = core.Net("py_t%d" % k)
            net.Python(affine)(["x"], ["y"])
            net.Relu("y", "z")
            workspace.CreateNet(net)
            for _ in range(50):
                workspace.RunNet(net)
            results[k] = workspace.FetchBlob("z").tolist()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and not errors
    assert results == {k: [2 * k + 1] * 3 for k in range(4)}


def test_exit_while_a_thread_is_in_the_function():
    """The interpreter exits while a daemon thread's net is inside a slow Python function: the
    process exits at once (the exit-time wait lets the function finish), cleanly."""
    code = textwrap.dedent('''
        import threading, time
        import numpy as np
        from recurrent import core, workspace

        def slow(inputs, outputs):
            time.sleep(0.3)
            outputs[0].feed(inputs[0].data)

        def loop():
            workspace.SwitchWorkspace("bg", True)
            workspace.FeedBlob("x", np.ones(2, np.float32))
            net = core.Net("slow")
            net.Python(slow)(["x"], ["y"])
            workspace.CreateNet(net)
            workspace.RunNet(net, 1000)

        threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.5)
        print("main thread done", flush=True)
    ''')
    import time
    t0 = time.time()
    p = run_python(code, timeout=60)
    assert p.returncode == 0 and "main thread done" in p.stdout, p.stderr[-3000:]
    assert time.time() - t0 < 20


def test_keyboard_interrupt_in_the_function_of_another_thread():
    """A KeyboardInterrupt the function raises in a thread that is not the main one reaches that
    thread's caller; the main thread gets no SIGINT."""
    def interrupts(inputs, outputs):
        raise KeyboardInterrupt()
    got = []

    def work():
        workspace.SwitchWorkspace("py_kbd", True)
        workspace.FeedBlob("x", np.ones(2, np.float32))
        net = core.Net("py_kbd_t")
        net.Python(interrupts)(["x"], ["y"])
        try:
            workspace.RunNetOnce(net)
        except KeyboardInterrupt:
            got.append("KeyboardInterrupt")
    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    import time
    time.sleep(0.2)  # a SIGINT sent to this thread would raise here
    assert got == ["KeyboardInterrupt"]
