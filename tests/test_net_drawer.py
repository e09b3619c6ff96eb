"""recurrent.net_drawer (Caffe2's net_drawer): the pydot graphs of nets and plans."""
import sys

import pytest

from recurrent import core, net_drawer

pydot = pytest.importorskip("pydot")


def _net():
    net = core.Net("draw")
    net.FC(["x", "w", "b"], "h")
    net.Relu("h", "h")  # h written again: a second version
    net.Add(["h", "x2"], "y", name="sum")
    return net


def _edges(graph):
    return sorted((e.get_source().strip('"'), e.get_destination().strip('"')) for e in graph.get_edges())


def test_blob_and_op_graph():
    net = _net()
    g = net_drawer.GetPydotGraph(net, rankdir="TB")
    assert g.get_name() == net.Name() and g.get_rankdir() == "TB"
    assert _edges(g) == sorted([
        ("x0", "FC (op#0)"), ("w0", "FC (op#0)"), ("b0", "FC (op#0)"), ("FC (op#0)", "h0"),
        ("h0", "Relu (op#1)"), ("Relu (op#1)", "h1"),
        ("h1", "sum/Add (op#2)"), ("x20", "sum/Add (op#2)"), ("sum/Add (op#2)", "y0")])
    ops = [n for n in g.get_nodes() if n.get("shape") == "box"]
    assert {n.get_name().strip('"') for n in ops} == {"FC (op#0)", "Relu (op#1)", "sum/Add (op#2)"}
    assert all(n.get("color") == "#0F9D58" and n.get("fontcolor") == "#FFFFFF" for n in ops)
    blobs = {n.get_name().strip('"'): n.get("label") for n in g.get_nodes() if n.get("shape") == "octagon"}
    assert blobs["h1"] == '"h"' and blobs["x20"] == '"x2"'
    # a NetDef, and a list of ops (named "unnamed" unless given)
    assert _edges(net_drawer.GetPydotGraph(net.Proto())) == _edges(g)
    assert net_drawer.GetPydotGraph(list(net.Proto().op)).get_name() == "unnamed"
    assert net_drawer.GetPydotGraph(list(net.Proto().op), name="mine").get_name() == "mine"
    assert "digraph" in g.to_string()


def test_minimal_graph():
    net = core.Net("minimal")
    net.Relu("x", "a")
    net.Relu("a", "b")
    net.Add(["a", "b"], "c")  # depends on a's op directly and through b's
    full = net_drawer.GetPydotGraphMinimal(net, "m")
    assert _edges(full) == sorted([("Relu (op#0)", "Relu (op#1)"), ("Relu (op#0)", "Add (op#2)"),
                                   ("Relu (op#1)", "Add (op#2)")])
    minimal = net_drawer.GetPydotGraphMinimal(net, "m", minimal_dependency=True)
    assert _edges(minimal) == sorted([("Relu (op#0)", "Relu (op#1)"), ("Relu (op#1)", "Add (op#2)")])
    assert all(n.get("shape") == "box" for n in minimal.get_nodes())


def test_plan_graph():
    a, b = core.Net("pa"), core.Net("pb")
    a.ConstantFill([], "c", shape=[1], value=1.0)
    b.Relu("c", "d")
    plan = core.Plan("plan")
    plan.AddStep(core.execution_step("first", [a, b]))
    plan.AddStep(core.execution_step("second", [b], num_iter=2))
    ops = net_drawer.GetOperatorMapForPlan(plan.Proto())
    assert sorted(ops) == ["plan_pa", "plan_pb"] and [o.type for o in ops["plan_pb"]] == ["Relu"]
    g = net_drawer.GetPlanGraph(plan.Proto(), name="p")
    labels = sorted(n.get_name() for n in g.get_nodes())
    assert labels == ['"first\\n"', '"pa"', '"pb"', '"pb"', '"second\\n"']  # JSON-escaped, as Caffe2's
    dashed = [e for e in g.get_edges() if e.get("style") == "dashed"]
    assert len(dashed) == 2  # each step to its first net
    assert len(g.get_edges()) == 2 + 1 + 1  # the two substep edges, first -> second, pa -> pb
    empty = core.Plan("empty_step_plan")
    empty.Proto().execution_step.append(core.ExecutionStep("nothing").Proto())
    with pytest.raises(ValueError, match="execution step 'nothing' has neither nets nor substeps"):
        net_drawer.GetPlanGraph(empty.Proto())


def test_main_writes_dot_files(tmp_path, capsys):
    net = _net()
    text = tmp_path / "net.pbtxt"
    text.write_text(str(net.Proto()))
    binary = tmp_path / "net.pb"
    binary.write_bytes(net.Proto().SerializeToString())
    for src, prefix in ((text, "t_"), (binary, "b_")):
        written = net_drawer.main(["--input", str(src), "--output_prefix", str(tmp_path / prefix)])
        dot = tmp_path / (prefix + net.Name() + ".dot")
        assert str(dot) in written and dot.read_text().startswith("digraph")
    written = net_drawer.main(["--input", str(binary), "--output_prefix", str(tmp_path / "m_"), "--minimal",
                               "--minimal_dependency"])
    assert "octagon" not in (tmp_path / ("m_" + net.Name() + ".dot")).read_text()


def test_without_pydot(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydot", None)
    with pytest.raises(ImportError, match="needs pydot.*pip install pydot"):
        net_drawer.GetPydotGraph(_net())
