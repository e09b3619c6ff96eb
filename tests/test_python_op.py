"""The Python op: net.Python(f, grad_f) (recurrent/python_op.py, csrc/ops/pyfunc.c)."""

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
    with pytest.raises(NotImplementedError, match="pass_workspace"):
        core.Net("n").Python(affine, pass_workspace=True)
    with pytest.raises(NotImplementedError, match="python_func_type"):
        core.Net("n").Python(affine, python_func_type=object)
    with pytest.raises(TypeError, match="must be callable"):
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


def test_the_running_workspace_is_busy_inside_the_function():
    def fetches(inputs, outputs):
        workspace.FetchBlob("x")
    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("py_busy")
    net.Python(fetches)(["x"], ["y"])
    with pytest.raises(RuntimeError, match="workspace is busy"):
        workspace.RunNetOnce(net)


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
