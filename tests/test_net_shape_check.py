"""Shapes checked when a net is created (CreateNet, RunNetOnce): FC, MatMul,
Add/Sub/Mul, Sum, SquaredL2Distance, LabelCrossEntropy, ReversePackedSegs, TopK and Tile check the dtypes and
shapes of inputs that hold a tensor and that no earlier op of the net writes;
the same checks run again when the op runs (inputs computed inside the net,
blobs fed again before running). Data values (labels in range) are checked at
run time only."""

import numpy as np
import pytest

from recurrent import core, workspace


def feed(**blobs):
    for k, v in blobs.items():
        workspace.FeedBlob(k, np.asarray(v))


def f32(*shape):
    return np.ones(shape, np.float32)


CASES = [
    # (op, inputs, kwargs, feeds, expected message part)
    ("FC", ["x", "w", "b"], {}, dict(x=f32(4, 3), w=f32(5, 2), b=f32(5)),
     r"op FC #0: input 1 blob 'w' of shape \(5, 2\) float32 does not fit input 0 blob 'x'"),
    ("FC", ["x", "w", "b"], {}, dict(x=f32(4, 3), w=f32(5, 3), b=f32(4)),
     r"op FC #0: input 2 blob 'b' must have shape \(5,\)"),
    ("MatMul", ["a", "m"], {}, dict(a=f32(4, 3), m=f32(2, 5)), r"op MatMul #0: inner dimensions differ"),
    ("Add", ["a", "c"], {}, dict(a=f32(4, 3), c=f32(3, 4)),
     r"op Add #0: input 0 blob 'a' of shape \(4, 3\) float32 and input 1 blob 'c' of shape \(3, 4\) "
     r"float32 do not broadcast"),
    ("Mul", ["a", "c"], dict(broadcast=1), dict(a=f32(4, 3), c=f32(5)), r"op Mul #0: "),
    ("Sum", ["a", "c"], {}, dict(a=f32(4, 3), c=f32(4, 2)), r"op Sum #0: input 1 blob 'c'"),
    ("SquaredL2Distance", ["a", "c"], {}, dict(a=f32(4, 3), c=f32(4, 2)), r"op SquaredL2Distance #0: "),
    ("LabelCrossEntropy", ["p", "lab"], {}, dict(p=f32(4, 3), lab=np.zeros(5, np.int32)),
     r"op LabelCrossEntropy #0: input 1 blob 'lab' must hold one int32 label per row"),
    ("ReversePackedSegs", ["a3", "lens"], {}, dict(a3=f32(4, 2, 3), lens=np.zeros(3, np.int32)),
     r"op ReversePackedSegs #0: input 1 blob 'lens' \(lengths\) must have shape \(2,\)"),
    ("ReversePackedSegs", ["a", "lens"], {}, dict(a=f32(4), lens=np.zeros(1, np.int32)),
     r"op ReversePackedSegs #0: input 0 blob 'a' \(data\) must have at least 2 dims"),
    ("TopK", ["a"], dict(k=4, axis=2, _outs=["v", "i"]), dict(a=f32(4, 3)),
     r"op TopK #0: axis 2 is out of range for input 0 blob 'a' \(4, 3\) float32"),
    ("Tile", ["a"], dict(tiles=2, axis=-3), dict(a=f32(4, 3)),
     r"op Tile #0: axis -3 is out of range for input 0 blob 'a' \(4, 3\) float32"),
]


@pytest.mark.parametrize("op,inputs,kwargs,feeds,msg", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_mismatch_is_refused_at_creation(op, inputs, kwargs, feeds, msg):
    feed(**feeds)
    net = core.Net("shapes")
    outs = kwargs.get("_outs", "out")
    getattr(net, op)(inputs, outs, **{k: v for k, v in kwargs.items() if k != "_outs"})
    with pytest.raises(ValueError, match="net 'shapes[^']*': " + msg):
        workspace.CreateNet(net)
    with pytest.raises(ValueError, match=msg):
        workspace.RunNetOnce(net)  # creates the net too
    with pytest.raises(KeyError):
        workspace.RunNet(net)  # never created
    # the workspace stays usable
    feed(ok=f32(2, 2))
    workspace.RunOperatorOnce(core.CreateOperator("Copy", ["ok"], ["ok2"]))
    np.testing.assert_array_equal(workspace.FetchBlob("ok2"), f32(2, 2))


def test_wrong_dtype_is_refused_at_creation():
    feed(x=np.ones((4, 3), np.int32), w=f32(5, 3), b=f32(5))
    net = core.Net("dtype")
    net.FC(["x", "w", "b"], "y")
    with pytest.raises(TypeError,
                       match=r"net 'dtype[^']*': op FC #0: input 0 blob 'x' must be float32, got \(4, 3\) int32"):
        workspace.CreateNet(net)


def test_inputs_computed_in_the_net_are_checked_when_it_runs():
    feed(x=f32(4, 3), w=f32(5, 3), b=f32(5), w2=f32(2, 4), b2=f32(2))
    net = core.Net("later")
    h = net.FC(["x", "w", "b"], "h")
    net.FC([h, "w2", "b2"], "y")  # K of h (5) != 4: only known once the first FC ran
    workspace.CreateNet(net)
    with pytest.raises(ValueError, match=r"op FC #1: input 1 blob 'w2' of shape \(2, 4\)"):
        workspace.RunNet(net)
    feed(w2=f32(2, 5))
    workspace.RunNet(net)
    np.testing.assert_allclose(workspace.FetchBlob("y"), np.full((4, 2), 5 * 4 + 1, np.float32))


def test_feeding_new_shapes_after_creation_is_checked_at_run_time():
    feed(x=f32(4, 3), w=f32(5, 3), b=f32(5))
    net = core.Net("refeed")
    net.FC(["x", "w", "b"], "y")
    workspace.CreateNet(net)
    feed(x=f32(4, 2))
    with pytest.raises(ValueError, match=r"op FC #0: input 1 blob 'w' of shape \(5, 3\)"):
        workspace.RunNet(net)
    feed(x=f32(7, 3))
    workspace.RunNet(net)
    assert workspace.FetchBlob("y").shape == (7, 5)


def test_label_values_are_checked_at_run_time_only():
    feed(p=np.full((2, 3), 0.5, np.float32), lab=np.array([0, 3], np.int32))
    net = core.Net("labels")
    net.LabelCrossEntropy(["p", "lab"], "xent")
    workspace.CreateNet(net)  # label 3 is out of range, but labels may be fed again before the run
    with pytest.raises(IndexError, match=r"label 3 at row 1 is out of range \[0, 3\)"):
        workspace.RunNet(net)
    feed(lab=np.array([0, 2], np.int32))
    workspace.RunNet(net)
    np.testing.assert_allclose(workspace.FetchBlob("xent"), -np.log([0.5, 0.5]), rtol=1e-6)
