"""Net types (csrc/core/net.c rc_net_check_type): every type Caffe2 accepted (registered, or redirected by its
CreateNet's legacy overrides) and "" are accepted and run the ops in order, with num_workers kept; any other
type makes CreateNet / RunNetOnce raise ValueError naming the net, the type and the accepted ones (Caffe2's
CreateNet failed: "Maybe net type: [X] does not exist"), also in a RecurrentNetwork's step nets (at the op's
creation); the workspace stays usable."""

import re

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from test_ops_math import f32, feed

ACCEPTED = ["", "simple", "dag", "async_scheduling", "async_dag", "async_polling", "async_simple", "prof_dag",
            "parallel", "simple_refcount", "rnn"]
LIST = ('the accepted types are "" \\(simple\\), simple, dag, async_scheduling, async_dag, async_polling, '
        'async_simple, prof_dag, parallel, simple_refcount, rnn; every one runs its ops in order here')


def ordered_net(name, net_type, num_workers=None):
    """Ops whose result depends on their order: tx = 1; tx *= 3 (in place); ty = tx + 1; then tx = 10."""
    net = core.Net(name)
    net.ConstantFill([], "tx", shape=[2], value=1.0)
    net.Scale("tx", "tx", scale=3.0)
    net.Add(["tx", net.ConstantFill([], "tone", shape=[2], value=1.0)], "ty")
    net.ConstantFill([], "tx", shape=[2], value=10.0)
    net.Proto().type = net_type
    if num_workers is not None:
        net.Proto().num_workers = num_workers
    return net


def ran_in_order():
    assert workspace.FetchBlob("ty").tolist() == [4.0, 4.0]
    assert workspace.FetchBlob("tx").tolist() == [10.0, 10.0]


def usable():
    workspace.RunNetOnce(ordered_net("after", ""))
    ran_in_order()


@pytest.mark.parametrize("net_type", ACCEPTED)
def test_each_caffe2_type_is_accepted_and_runs_in_order(net_type):
    net = ordered_net("typed_" + (net_type or "empty"), net_type, num_workers=4)
    workspace.RunNetOnce(net)
    ran_in_order()
    workspace.ResetWorkspace()
    workspace.CreateNet(net)
    workspace.RunNet(net, num_iter=2)
    ran_in_order()
    assert net.Proto().type == net_type and net.Proto().num_workers == 4  # kept


@pytest.mark.parametrize("net_type", ["bogus", "DAG", "simple ", "singlethread_async", "async_child",
                                      "é" * 50])
def test_an_unknown_type_is_refused_naming_net_type_and_the_accepted_ones(net_type):
    net = ordered_net("untyped", net_type)
    name = net.Proto().name
    shown = net_type if len(net_type.encode()) <= 80 else "é" * 40 + "..."
    msg = (r"net '%s': net type '%s' is not one Caffe2 registered \(its CreateNet failed too: \"Maybe net "
           r"type: \[%s\] does not exist\"\); " % (name, shown, shown)) + LIST
    workspace.FeedBlob("tx", np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=msg.replace("...", r"\.\.\.")):
        workspace.CreateNet(net)
    with pytest.raises(KeyError, match="does not exist"):
        workspace.RunNet(name)  # not created
    with pytest.raises(ValueError, match=r"net type '%s' is not one Caffe2 registered" % re.escape(shown)):
        workspace.RunNetOnce(net)
    assert workspace.FetchBlob("tx").tolist() == [0.0, 0.0, 0.0]  # nothing ran
    usable()


def rnn_net(name):
    cell = core.Net(name + "_cell")
    x_t, o_prev = cell.AddExternalInputs("x_t", "o_prev")
    o = cell.Tanh(cell.Sum([x_t, o_prev], "s"), "o")
    cell.AddExternalOutput(o)
    net = core.Net(name)
    o_all, _ = rnn.recurrent_net(net, cell, inputs=[(x_t, "x")], initial_cell_inputs=[(o_prev, "o_init")],
                                 links={o_prev: o}, scope=name)
    net.AddGradientOperators([net.SumElements([o_all], "loss")])
    return net, o_all


def step_net_arg(net, op_type, arg):
    op = [o for o in net.Proto().op if o.type == op_type][0]
    return [a for a in op.arg if a.name == arg][0].n


@pytest.mark.parametrize("side", ["forward", "backward"])
def test_a_step_net_of_an_unknown_type_is_refused_when_the_op_is_created(rng, side):
    net, o_all = rnn_net("tr_" + side)
    feed(x=f32(rng, 3, 2, 2), o_init=np.zeros((1, 2, 2), np.float32))
    op_type, arg = (("RecurrentNetwork", "step_net") if side == "forward" else
                    ("RecurrentNetworkGradient", "backward_step_net"))
    step = step_net_arg(net, op_type, arg)
    assert step.type == "simple"  # as recurrent_net builds it (and Caffe2's)
    step.type = "rnn"  # a type Caffe2 redirected to simple: runs
    workspace.RunNetOnce(net)
    ref = workspace.FetchBlob(str(o_all))
    step.type = "nope"
    with pytest.raises(ValueError, match=r"op %s #\d+: the %s step net '%s': net type 'nope' is not one "
                       r"Caffe2 registered .*; %s" % (op_type, side, step.name, LIST)):
        workspace.CreateNet(net)
    with pytest.raises(ValueError, match=r"the %s step net '%s': net type 'nope'" % (side, step.name)):
        workspace.RunNetOnce(net)
    usable()
    step.type = ""
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(o_all)), ref)


def test_nothing_in_the_repo_builds_a_refused_type():
    """recurrent_net's step nets are 'simple'; the model helpers copy the net's own type."""
    net, _ = rnn_net("tr_repo")
    for t, a in (("RecurrentNetwork", "step_net"), ("RecurrentNetworkGradient", "backward_step_net")):
        assert step_net_arg(net, t, a).type in ACCEPTED
    assert net.Proto().type in ACCEPTED
