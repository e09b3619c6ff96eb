"""Static shape and type inference (workspace.InferShapesAndTypes, recurrent/shape_inference.py)."""

import warnings

import numpy as np
import pytest

from recurrent import _C, core, shape_inference as si, workspace
from test_alloc_fail import build_ops_net


def _actual(names):
    shapes = workspace._ws().blob_shapes()
    return {n: shapes.get(n) for n in names}


def test_ops_net_op_by_op():
    """Every op of the allocation sweep's training net (800+ ops of every family), inferred from the
    workspace just before it runs, against what running it gives; and the share inferred."""
    init, net, _ = build_ops_net()
    ops = list(init.Proto().op) + list(net.Proto().op)
    inferred, unknown = 0, []
    for i, op in enumerate(ops):
        one = core.Net("si_%d" % i)
        one.Proto().op.extend([op])
        shapes, types = workspace.InferShapesAndTypes([one])
        workspace.RunNetOnce(one)
        actual = _actual(op.output)
        for o in op.output:
            if o in shapes:
                got = actual[o]
                assert got is not None, "op #%d %s: inferred %s for '%s', which holds no tensor" % (
                    i, op.type, shapes[o], o)
                assert (list(got[0]), got[1]) == (shapes[o], types[o]), \
                    "op #%d %s: '%s' inferred %s type %d, ran %s type %d" % (
                        i, op.type, o, shapes[o], types[o], list(got[0]), got[1])
                inferred += 1
            elif actual[o] is not None:
                unknown.append(op.type)
    total = inferred + len(unknown)
    print("inferred %d of %d tensor outputs; not inferred by type: %s" % (
        inferred, total, sorted(set(unknown))))


def test_every_op_type_has_a_function_or_a_reason():
    si.registered()
    missing = sorted(t for t in _C.op_types() if t not in si._REGISTRY and t not in si.NOT_INFERRED)
    assert not missing, "op types with no shape function and no reason in NOT_INFERRED: %s" % missing
    stale = sorted(t for t in list(si._REGISTRY) + list(si.NOT_INFERRED) if t not in _C.op_types())
    assert not stale, "shape functions of op types that are not registered: %s" % stale


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("T", [0, 1, 5])
def test_recurrent_network_and_its_gradient(kind, T):
    """A 2-layer rnn_cell LSTM / GRU with loss and gradients: every output of the RecurrentNetwork
    op and of its gradient op is inferred before the run and equals what the run gives."""
    from test_executor import build_stack
    case = build_stack(kind, layers=2, name="si_%s_%d" % (kind, T))
    case.feed(T, 3)
    netdef = case.net.Proto()
    shapes, types = workspace.InferShapesAndTypes([case.net])
    workspace.RunNetOnce(case.net)
    actual = _actual(shapes)
    checked = 0
    for op in netdef.op:
        if op.type not in ("RecurrentNetwork", "RecurrentNetworkGradient"):
            continue
        outs = op.output[:-1] if op.type == "RecurrentNetwork" else op.output
        for o in outs:
            assert o in shapes, "%s output '%s' not inferred" % (op.type, o)
            checked += 1
    for name, (dims, dtype) in ((n, actual[n]) for n in shapes):
        assert (list(dims), dtype) == (shapes[name], types[name]), name
    assert checked >= 8


def test_recurrent_network_initial_state_forms():
    """Initial states of 1, 2 and 3 dims give states of T + L rows; the aliases' offsets."""
    from recurrent import recurrent as rnn
    net = core.Net("si_forms")
    cell = core.Net("si_cell")
    cell.Add(["h_prev", "x_t"], "h")
    T, N, S = 4, 3, 2
    for init_shape, L in [((S,), 1), ((N, S), 1), ((2, N, S), 2)]:
        workspace.ResetWorkspace()
        net = core.Net("si_forms_%d" % len(init_shape))
        outs = rnn.recurrent_net(net=net, cell_net=cell, inputs=[("x_t", "x")],
                                 initial_cell_inputs=[("h_prev", "h0")], links={"h_prev": "h"},
                                 timestep="t", scope="r%d" % len(init_shape), forward_only=True)
        workspace.FeedBlob("x", np.ones((T, N, S), np.float32))
        workspace.FeedBlob("h0", np.ones(init_shape, np.float32))
        shapes, types = workspace.InferShapesAndTypes([net])
        workspace.RunNetOnce(net)
        assert shapes[str(outs[0])] == [T + L - 1, N, S]
        assert shapes[str(outs[1])] == [1, N, S]
        for o in outs[:2]:
            assert shapes[str(o)] == list(workspace.FetchBlob(o).shape)
            assert types[str(o)] == core.DataType.FLOAT


# ---------------------------------------------------------------- the engine and its API
def _fc_net():
    net = core.Net("si_api")
    net.FC(["x", "w", "b"], "y")
    net.Relu("y", "z")
    return net


def test_from_the_workspace_and_from_blob_dimensions():
    net = _fc_net()
    workspace.FeedBlob("x", np.ones((4, 3), np.float32))
    workspace.FeedBlob("w", np.ones((5, 3), np.float32))
    workspace.FeedBlob("b", np.ones((5,), np.float32))
    workspace.CreateBlob("empty")  # holds no tensor: left out
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes == {"x": [4, 3], "w": [5, 3], "b": [5], "y": [4, 5], "z": [4, 5]}
    assert set(types.values()) == {core.DataType.FLOAT}
    # from a map: no workspace blob is read; types UNDEFINED unless given
    dims = {"x": [2, 3], "w": [7, 3], "b": [7]}
    shapes, types = workspace.InferShapesAndTypes([net], dims)
    assert shapes["z"] == [2, 7] and types["z"] == core.DataType.FLOAT
    assert types["x"] == core.DataType.UNDEFINED
    shapes, types = workspace.InferShapesAndTypes([net.Proto()], dims, nets_proto=True,
                                                  blob_types={"x": core.DataType.FLOAT})
    assert shapes["z"] == [2, 7] and types["x"] == core.DataType.FLOAT
    assert workspace.InferShapesAndTypes([net], {}) == ({}, {})  # nothing known: nothing inferred


def test_nets_in_order_and_unknown_inputs():
    """Several nets are walked in order; an op whose input is unknown makes its outputs unknown,
    dropping the shape the blob had before (the run may change it)."""
    init = core.Net("si_init")
    init.ConstantFill([], "x", shape=[2, 3], value=1.0)
    net = core.Net("si_next")
    net.Relu("x", "y")
    net.BooleanMask(["y", "mask"], "picked")  # data-dependent: not inferred
    net.Relu("picked", "z")
    workspace.FeedBlob("z", np.ones((9,), np.float32))
    shapes, types = workspace.InferShapesAndTypes([init, net], {"z": [9], "mask": [2]})
    assert shapes == {"x": [2, 3], "y": [2, 3], "mask": [2]}
    assert "z" not in shapes and "picked" not in shapes


def test_refused_inputs_warn_and_give_nothing():
    net = _fc_net()
    with pytest.warns(RuntimeWarning, match=r"op #0 \(FC\) refuses its inputs x \[4, 3\], w \[5, 2\]"):
        assert workspace.InferShapesAndTypes([net], {"x": [4, 3], "w": [5, 2], "b": [5]}) == ({}, {})
    bad = core.Net("si_bad")
    bad.Proto().op.extend([core.CreateOperator("Relu", ["x"], ["y", "y2"])])
    with pytest.warns(RuntimeWarning, match="cannot be created: 2 outputs"):
        assert workspace.InferShapesAndTypes([bad], {"x": [3]}) == ({}, {})
    unknown = core.Net("si_unknown_type")
    unknown.Proto().op.extend([core.CreateOperator("NoSuchOp", ["x"], ["y"])])
    with pytest.warns(RuntimeWarning, match="unknown operator type"):
        assert workspace.InferShapesAndTypes([unknown], {"x": [3]}) == ({}, {})


def test_bad_arguments():
    net = _fc_net()
    with pytest.raises(TypeError, match="list of nets"):
        workspace.InferShapesAndTypes(net)
    with pytest.raises(ValueError, match="negative dimension"):
        workspace.InferShapesAndTypes([net], {"x": [4, -1]})
    with pytest.raises(ValueError, match="blob_types needs blob_dimensions"):
        workspace.InferShapesAndTypes([net], None, blob_types={"x": 1})
    with pytest.raises(TypeError):
        workspace.InferShapesAndTypes([3])


def test_the_first_argument_of_a_name_counts():
    """As when the op runs (csrc/core/netdef.c: the first argument of a name wins)."""
    op = core.CreateOperator("ConstantFill", [], ["y"], shape=[2])
    op.arg.extend(core.CreateOperator("ConstantFill", [], ["y"], shape=[5]).arg)
    net = core.Net("si_first")
    net.Proto().op.extend([op])
    shapes, _ = workspace.InferShapesAndTypes([net])
    workspace.RunNetOnce(net)
    assert shapes["y"] == [2] == list(workspace.FetchBlob("y").shape)


def test_every_function_is_called_only_on_known_inputs_unless_partial():
    # LastNWindowCollector: its optional MUTEX input never is a known tensor
    assert si._PARTIAL == {"RecurrentNetworkGradient", "LastNWindowCollector"}
    assert si.registered() == sorted(si._REGISTRY)
    assert not set(si._REGISTRY) & set(si.NOT_INFERRED)
