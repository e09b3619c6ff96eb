"""Caffe2's ``caffe2.python.net_drawer``: nets and plans as pydot graphs, to look at in Jupyter
(``IPython.display.Image(graph.create_png())``, which needs Graphviz's ``dot``) or write out.

- ``GetPydotGraph(net_or_ops, name=None, rankdir='LR')``: an octagon per blob version and a green box
  per op (``"<type> (op#<i>)"``, ``"<name>/<type> (op#<i>)"`` for a named op), edges blob -> op ->
  blob; a blob written again gets a new node (its name plus a version number), as Caffe2's.
- ``GetPydotGraphMinimal(net_or_ops, name, rankdir='LR', minimal_dependency=False)``: the ops only,
  an edge from each op to the ops whose outputs it reads (with ``minimal_dependency``, only those not
  implied through another parent).
- ``GetOperatorMapForPlan(plan_def)``, ``GetPlanGraph(plan_def, name=None, rankdir='TB')``: a plan's
  nets by name, and its execution steps as a graph.
- ``python -m recurrent.net_drawer --input FILE [--output_prefix P] [--minimal]
  [--minimal_dependency] [--rankdir LR]``: writes ``<P><net name>.dot`` (and a ``.pdf`` when
  Graphviz is installed) for each net of a NetDef or PlanDef file, text or binary.

``net_or_ops`` is a ``core.Net``, a ``NetDef`` or a list of ``OperatorDef``. The graphs are
``pydot.Dot`` objects, the same nodes, labels, styles and edges as Caffe2's. pydot is needed
(``pip install pydot``): without it the functions raise ImportError saying so (Caffe2 printed a
warning at import and failed later).
"""

import argparse
import collections
import json

from .proto import NetDef, PlanDef

OP_STYLE = {"shape": "box", "color": "#0F9D58", "style": "filled", "fontcolor": "#FFFFFF"}
BLOB_STYLE = {"shape": "octagon"}


def _pydot():
    try:
        import pydot
    except ImportError:
        raise ImportError("recurrent.net_drawer needs pydot, which is not installed: pip install pydot (and "
                          "Graphviz, e.g. apt-get install graphviz, to render the graphs to png or pdf)") from None
    return pydot


def _rectify_operator_and_name(operators_or_net, name):
    """The ops and the graph's name of a NetDef, a core.Net (anything with ``Proto()``) or a list of
    ops ("unnamed" unless ``name`` is given)."""
    if isinstance(operators_or_net, NetDef):
        return operators_or_net.op, name if name is not None else operators_or_net.name
    if hasattr(operators_or_net, "Proto"):
        net = operators_or_net.Proto()
        if not isinstance(net, NetDef):
            raise TypeError("expected Proto() to give a NetDef, got %s" % type(net).__name__)
        return net.op, name if name is not None else net.name
    return list(operators_or_net), name if name is not None else "unnamed"


def _escape_label(name):
    return json.dumps(name)


def _op_node(pydot, op, op_id):
    label = "%s/%s (op#%d)" % (op.name, op.type, op_id) if op.name else "%s (op#%d)" % (op.type, op_id)
    return pydot.Node(label, **OP_STYLE)


def GetPydotGraph(operators_or_net, name=None, rankdir="LR"):
    """The net as blobs and ops (see the module)."""
    pydot = _pydot()
    operators, name = _rectify_operator_and_name(operators_or_net, name)
    graph = pydot.Dot(name, rankdir=rankdir)
    nodes = {}
    versions = collections.defaultdict(int)
    for op_id, op in enumerate(operators):
        op_node = _op_node(pydot, op, op_id)
        graph.add_node(op_node)
        for blob in op.input:
            blob = str(blob)
            node = nodes.get(blob)
            if node is None:
                node = nodes[blob] = pydot.Node(blob + str(versions[blob]), label=_escape_label(blob),
                                                **BLOB_STYLE)
            graph.add_node(node)
            graph.add_edge(pydot.Edge(node, op_node))
        for blob in op.output:
            blob = str(blob)
            if blob in nodes:  # written again: a new version
                versions[blob] += 1
            node = nodes[blob] = pydot.Node(blob + str(versions[blob]), label=_escape_label(blob), **BLOB_STYLE)
            graph.add_node(node)
            graph.add_edge(pydot.Edge(op_node, node))
    return graph


def GetPydotGraphMinimal(operators_or_net, name=None, rankdir="LR", minimal_dependency=False):
    """The ops only (see the module)."""
    pydot = _pydot()
    operators, name = _rectify_operator_and_name(operators_or_net, name)
    graph = pydot.Dot(name, rankdir=rankdir)
    blob_parents = {}
    ancestry = collections.defaultdict(set)
    for op_id, op in enumerate(operators):
        op_node = _op_node(pydot, op, op_id)
        graph.add_node(op_node)
        parents = [blob_parents[str(b)] for b in op.input if str(b) in blob_parents]
        ancestry[op_node].update(parents)
        for parent in parents:
            ancestry[op_node].update(ancestry[parent])
        for parent in parents:
            if not minimal_dependency or all(parent not in ancestry[other] for other in parents):
                graph.add_edge(pydot.Edge(parent, op_node))
        for blob in op.output:
            blob_parents[str(blob)] = op_node
    return graph


def GetOperatorMapForPlan(plan_def):
    """``{"<plan name>_<net name>": ops}`` for the nets of a PlanDef (``_network_<i>`` for an unnamed
    one), as Caffe2's."""
    operator_map = {}
    for net_id, net in enumerate(plan_def.network):
        if net.name:
            operator_map[plan_def.name + "_" + net.name] = net.op
        else:
            operator_map[plan_def.name + "_network_%d" % net_id] = net.op
    return operator_map


def _draw_nets(pydot, nets, graph):
    nodes = []
    for i, net in enumerate(nets):
        nodes.append(pydot.Node(_escape_label(net)))
        graph.add_node(nodes[-1])
        if i > 0:
            graph.add_edge(pydot.Edge(nodes[-2], nodes[-1]))
    return nodes


_MAX_PARALLEL_STEPS = 3


def _step_label(step):
    label = [step.name + "\n"]
    if step.report_net:
        label.append("Reporter: {}".format(step.report_net))
    if step.should_stop_blob:
        label.append("Stopper: {}".format(step.should_stop_blob))
    if step.concurrent_substeps:
        label.append("Concurrent")
    return "\n".join(label)


def _draw_steps(pydot, steps, graph, skip_step_edges=False):
    def substep_edge(start, end):
        return pydot.Edge(start, end, arrowhead="dot", style="dashed")

    nodes = []
    for i, step in enumerate(steps):
        parallel = bool(step.concurrent_substeps)
        nodes.append(pydot.Node(_escape_label(_step_label(step)), **OP_STYLE))
        graph.add_node(nodes[-1])
        if i > 0 and not skip_step_edges:
            graph.add_edge(pydot.Edge(nodes[-2], nodes[-1]))
        if step.network:
            sub_nodes = _draw_nets(pydot, step.network, graph)
        elif step.substep:
            if parallel:
                sub_nodes = _draw_steps(pydot, step.substep[:_MAX_PARALLEL_STEPS], graph, skip_step_edges=True)
            else:
                sub_nodes = _draw_steps(pydot, step.substep, graph)
        else:
            raise ValueError("execution step '%s' has neither nets nor substeps" % step.name)
        if parallel:
            for node in sub_nodes:
                graph.add_edge(substep_edge(nodes[-1], node))
            if len(step.substep) > _MAX_PARALLEL_STEPS:
                more = pydot.Node("{} more steps".format(len(step.substep) - _MAX_PARALLEL_STEPS), **OP_STYLE)
                graph.add_node(more)
                graph.add_edge(substep_edge(nodes[-1], more))
        else:
            graph.add_edge(substep_edge(nodes[-1], sub_nodes[0]))
    return nodes


def GetPlanGraph(plan_def, name=None, rankdir="TB"):
    """A plan's execution steps, each with its nets or substeps (dashed edges), as Caffe2's."""
    pydot = _pydot()
    if hasattr(plan_def, "Proto") and not isinstance(plan_def, PlanDef):
        plan_def = plan_def.Proto()
    graph = pydot.Dot(name if name is not None else (plan_def.name or "plan"), rankdir=rankdir)
    _draw_steps(pydot, plan_def.execution_step, graph)
    return graph


def main(argv=None):
    from . import utils
    parser = argparse.ArgumentParser(description="Draws the nets of a NetDef or PlanDef file (recurrent's "
                                                 "port of Caffe2's net drawer).")
    parser.add_argument("--input", type=str, required=True, help="The NetDef or PlanDef file (text or binary).")
    parser.add_argument("--output_prefix", type=str, default="", help="Prefixed to the output file names.")
    parser.add_argument("--minimal", action="store_true", help="Draw the ops only.")
    parser.add_argument("--minimal_dependency", action="store_true", help="With --minimal: minimal edges only.")
    parser.add_argument("--rankdir", type=str, default="LR", help="The rank direction of the graphs.")
    args = parser.parse_args(argv)
    with open(args.input, "rb") as f:
        content = f.read()
    graphs = utils.GetContentFromProtoString(content, {
        PlanDef: lambda x: GetOperatorMapForPlan(x),
        NetDef: lambda x: {x.name: x.op},
    })
    written = []
    for key, operators in graphs.items():
        if args.minimal:
            graph = GetPydotGraphMinimal(operators, key, rankdir=args.rankdir,
                                         minimal_dependency=args.minimal_dependency)
        else:
            graph = GetPydotGraph(operators, key, rankdir=args.rankdir)
        filename = args.output_prefix + graph.get_name() + ".dot"
        graph.write(filename, format="raw")
        written.append(filename)
        try:
            graph.write_pdf(filename[:-3] + "pdf")
            written.append(filename[:-3] + "pdf")
        except Exception:  # pydot raises whatever running Graphviz's dot raised
            print("Could not write %s (Graphviz's dot is needed for pdf; the .dot file is written)"
                  % (filename[:-3] + "pdf"))
    return written


if __name__ == "__main__":
    main()
