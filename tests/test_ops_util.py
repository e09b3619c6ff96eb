"""Alias, CopyFromCPUInput, EnsureCPUOutput (csrc/ops/util.c) and their gradients
(recurrent/_grad_util.py)."""

import numpy as np
import pytest

from recurrent import core, workspace
from test_ops_math import close, f32, feed, op, run  # the same helpers

TYPES = ["Alias", "CopyFromCPUInput", "EnsureCPUOutput"]


@pytest.mark.parametrize("type_", TYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 4)])
def test_copy_forward(rng, type_, shape):
    x = f32(rng, *shape)
    i = rng.randint(-100, 100, shape).astype(np.int32)
    feed(x=x, i=i)
    y = run(type_, ["x"], ["y"])
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    j = run(type_, ["i"], ["j"])
    assert j.dtype == np.int32
    np.testing.assert_array_equal(j, i)


@pytest.mark.parametrize("type_", TYPES)
def test_copy_is_not_shared(rng, type_):
    """Y is a copy (Caffe2's Alias shared storage): writing X later leaves Y as it was, and an
    old, larger Y of the other dtype is replaced."""
    x = f32(rng, 2, 3)
    feed(x=x, y=np.zeros((5, 5), np.int32))
    run(type_, ["x"], ["y"])
    run("Scale", ["x"], ["x"], scale=2.0)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), x)
    np.testing.assert_array_equal(workspace.FetchBlob("x"), 2 * x)


@pytest.mark.parametrize("type_", TYPES)
def test_copy_in_place(rng, type_):
    x = f32(rng, 4)
    feed(x=x)
    run(type_, ["x"], ["x"])
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x)


@pytest.mark.parametrize("type_", TYPES)
def test_copy_bad_input(type_):
    with pytest.raises(KeyError, match="op %s #0: input 0 blob 'nope' does not exist" % type_):
        workspace.RunOperatorOnce(op(type_, ["nope"], ["y"]))
    with pytest.raises(ValueError, match="1 input"):
        feed(a=np.zeros(2, np.float32))
        workspace.RunOperatorOnce(op(type_, ["a", "a"], ["y"]))
    feed(a=np.ones(2, np.float32))
    run(type_, ["a"], ["y"])  # the workspace stays usable
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.ones(2, np.float32))


@pytest.mark.parametrize("type_", TYPES)
def test_copy_empty_blob_refused(type_):
    """A blob that exists but holds no tensor: a ValueError naming op and blob when the op runs (the
    net-creation check runs only over inputs that hold tensors, and any tensor fits these ops)."""
    feed(a=np.ones(2, np.float32))
    mk = core.Net("mk")
    mk.Relu("a", "empty")
    workspace.CreateNet(mk)         # creates 'empty' without writing it
    net = core.Net("e")
    getattr(net, type_)("empty", "z")
    workspace.CreateNet(net)
    with pytest.raises(ValueError, match="op %s #0: input 0 blob 'empty' holds no tensor" % type_):
        workspace.RunNet(net)
    workspace.RunNet(mk)
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("z"), np.ones(2, np.float32))


@pytest.mark.parametrize("type_", ["Alias", "CopyFromCPUInput"])
def test_pass_through_gradient(rng, type_):
    ops, g_in = core.GradientRegistry.GetGradientForOp(op(type_, ["x"], ["y"]), ["y_grad"])
    assert ops == [] and g_in == ["y_grad"]
    ops, g_in = core.GradientRegistry.GetGradientForOp(op(type_, ["x"], ["y"]), [None])
    assert ops == [] and g_in == [None]
    x = f32(rng, 3, 4)
    net = core.Net("pt")
    y = getattr(net, type_)("x", "y")
    s = net.Sqr(y, "s")
    loss = net.SumElements(s, "loss")
    gmap = net.AddGradientOperators([loss])
    feed(x=x)
    workspace.RunNetOnce(net)
    close(workspace.FetchBlob(str(gmap["x"])), 2 * x)
    assert [o.type for o in net.Proto().op].count(type_) == 1


@pytest.mark.parametrize("type_", ["Alias", "CopyFromCPUInput"])
def test_pass_through_gradient_finite_difference(rng, type_):
    """loss = sum(T(x)^2 * w): the analytic gradient of the net against finite differences."""
    x, w = f32(rng, 2, 3), f32(rng, 2, 3)
    net = core.Net("fd")
    y = getattr(net, type_)("x", "y")
    p = net.Mul([y, "w"], "p")
    q = net.Mul([p, y], "q")
    loss = net.SumElements(q, "loss")
    gmap = net.AddGradientOperators([loss])
    feed(x=x, w=w)
    workspace.RunNetOnce(net)
    g = workspace.FetchBlob(str(gmap["x"]))
    eps = 1e-2
    num = np.zeros_like(x)
    fwd = core.Net("fd_fwd")
    fwd.Proto().op = [o for o in net.Proto().op[:4]]
    for k in range(x.size):
        vals = []
        for d in (eps, -eps):
            xx = x.copy().reshape(-1)
            xx[k] += d
            feed(x=xx.reshape(x.shape))
            workspace.RunNetOnce(fwd)
            vals.append(float(workspace.FetchBlob("loss")))
        num.reshape(-1)[k] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-2, atol=1e-2)
    close(g, 2 * x * w, tol=1e-5)


@pytest.mark.parametrize("type_", ["Alias", "CopyFromCPUInput"])
def test_sparse_gradient_passes_through(rng, type_):
    """A Gather of the alias gives a GradientSlice; it reaches the input as a slice, not made dense."""
    net = core.Net("sp")
    t = getattr(net, type_)("table", "t")
    g = net.Gather([t, "idx"], "g")
    loss = net.SumElements(g, "loss")
    gmap = net.AddGradientOperators([loss])
    gt = gmap["table"]
    assert isinstance(gt, core.GradientSlice)
    assert str(gt.indices) == "idx"
    assert "SparseToDense" not in [o.type for o in net.Proto().op]
    feed(table=f32(rng, 5, 2), idx=np.array([1, 3, 1], np.int32))
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(gt.values)), np.ones((3, 2), np.float32))


def test_ensure_cpu_output_has_no_gradient(rng):
    ops, g_in = core.GradientRegistry.GetGradientForOp(op("EnsureCPUOutput", ["x"], ["y"]), ["y_grad"])
    assert ops == [] and g_in == [None]
    net = core.Net("nog")
    y = net.EnsureCPUOutput("x", "y")
    loss = net.SumElements(y, "loss")
    gmap = net.AddGradientOperators([loss])
    assert gmap.get("x") is None
