"""RecurrentNetwork fuses a step FC with the in-place Sum after it (the
LSTM, GRU and BasicRNN cells: gates = FC(h_prev) + the input's projection):
the FC stores X W^T + b + Z and the Sum does nothing. The results must be
those of the unfused net bit for bit (RECURRENT_STEP_FUSION=0 when the net
is created turns the fusion off), serial and with the executor, training and
forward-only, on the packed kernel and on OpenBLAS (more than 64 rows); a Sum
the FC cannot do (Z of another shape) fails exactly as it does unfused. The
mechanism itself (Z overlapping Y, a stale "done") is tested in C
(tests/c/test_ops.c::test_fc_sum_fusion)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from recurrent import _C, core, workspace
from recurrent import recurrent as rnn
from test_executor import _executor_globally_on, assert_bitwise, build_stack, set_arg  # noqa: F401 (fixture)


def fused_pairs(net):
    """In-place Sum(Y, Z) -> Y ops of the forward step nets of ``net`` whose
    Y was last written by an FC, with nothing in between touching Y or
    writing Z."""
    n = 0
    for op in net.Proto().op:
        if op.type != "RecurrentNetwork":
            continue
        ops = list(next(a.n for a in op.arg if a.name == "step_net").op)
        for j, s in enumerate(ops):
            if s.type != "Sum" or len(s.input) != 2 or list(s.output) != [s.input[0]] or s.input[1] == s.input[0]:
                continue
            y, z = s.input
            for o in reversed(ops[:j]):
                if y in o.output or y in o.input or z in o.output:
                    n += o.type == "FC" and list(o.output) == [y] and y not in o.input
                    break
    return n


def run(case, T, fusion, monkeypatch, enable, threads=None, num_workspaces=None):
    monkeypatch.setenv("RECURRENT_STEP_FUSION", "1" if fusion else "0")
    case.feed(T, 11)
    case.create(enable, threads, num_workspaces=num_workspaces)
    before = _C.get_flag("fused_sums")
    out = case.run_created()
    return out, _C.get_flag("fused_sums") - before


@pytest.mark.parametrize("kind", ("lstm", "gru", "basic"))
@pytest.mark.parametrize("N", (5, 70))
@pytest.mark.parametrize("enable,threads", [(0, None), (1, 2), (1, 3)])
def test_fused_equals_unfused_bitwise(kind, N, enable, threads, monkeypatch):
    """3 layers, T=7, hidden 40 (packed: 4H = 160 columns) with loss and
    gradients: every output and gradient fused equals unfused bit for bit;
    each pair is fused once per step (batch 70: the FC on OpenBLAS, the sum
    with the Sum's own kernel). The GRU has two pairs per layer with other
    ops between FC and Sum."""
    T = 7
    case = build_stack(kind, layers=3, H=40, N=N, D=7, name="fu_%s_%d" % (kind, N), seq_lengths=kind != "basic")
    pairs = fused_pairs(case.net)
    assert pairs >= 3
    ref, n_off = run(case, T, False, monkeypatch, enable, threads)
    got, n_on = run(case, T, True, monkeypatch, enable, threads)
    assert n_off == 0 and n_on == pairs * T
    assert_bitwise(ref, got, "%s N=%d enable=%d threads=%s" % (kind, N, enable, threads))


@pytest.mark.parametrize("enable,threads,nws", [(0, None, None), (1, 2, 2), (1, 3, 3)])
def test_forward_only_rotating_workspaces(enable, threads, nws, monkeypatch):
    """Forward-only LSTM with rotating step workspaces: step t and t + nws
    share a step net, so one FC + Sum pair serves several timesteps."""
    case = build_stack("lstm", layers=4, H=24, N=6, D=5, forward_only=True, name="fuf%d" % enable)
    ref, _ = run(case, 50, False, monkeypatch, enable, threads, nws)
    got, n = run(case, 50, True, monkeypatch, enable, threads, nws)
    assert n == 4 * 50
    assert_bitwise(ref, got, "forward-only enable=%d" % enable)


def gate_net(H=4):
    """o_t = tanh(FC(o_{t-1}) + x_t): an FC followed by Sum(Y, x_t) -> Y."""
    net = core.Net("gate")
    cell = core.Net("gate_cell")
    x_t, prev = cell.AddExternalInputs("input_t", "o_t_prev")
    y = cell.FC([prev, "W", "b"], "y_t", axis=2)
    cell.Sum([y, x_t], y)
    out = cell.Tanh(y, "o_t")
    cell.AddExternalOutput(out)
    outs = rnn.recurrent_net(net, cell, [(x_t, "x")], [(prev, "o_init")], {prev: out}, scope="g",
                             forward_only=True)
    return net, outs


@pytest.mark.parametrize("enable", (0, 1))
def test_sum_the_fc_cannot_do_fails_as_unfused(enable, monkeypatch):
    """x_t of another width than the FC's output: the fused FC leaves the sum
    to the Sum, which raises the unfused net's exception (same op index and
    timestep); with the right width the same created net runs fused and
    gives the unfused bits."""
    r = np.random.RandomState(3)
    H, N, T = 4, 2, 5
    workspace.FeedBlob("W", r.randn(H, H).astype(np.float32))
    workspace.FeedBlob("b", r.randn(H).astype(np.float32))
    workspace.FeedBlob("o_init", np.zeros((1, N, H), np.float32))
    msgs, outs_ok = {}, {}
    for fusion in (0, 1):
        monkeypatch.setenv("RECURRENT_STEP_FUSION", str(fusion))
        net, outs = gate_net(H)
        for op in net.Proto().op:
            if op.type == "RecurrentNetwork":
                set_arg(op, "enable_rnn_executor", enable)
                rnn.set_rnn_executor_config(op, num_threads=2)
        workspace.FeedBlob("x", r.randn(T, N, H + 1).astype(np.float32))
        workspace.CreateNet(net, overwrite=True)
        with pytest.raises(ValueError) as e:
            workspace.RunNet(net)
        msgs[fusion] = str(e.value)
        x = np.random.RandomState(9).randn(T, N, H).astype(np.float32)
        workspace.FeedBlob("x", x)
        before = _C.get_flag("fused_sums")
        workspace.RunNet(net)
        assert _C.get_flag("fused_sums") - before == (T if fusion else 0)
        outs_ok[fusion] = workspace.FetchBlob(outs[0])
    assert "op Sum #" in msgs[0] and "at timestep 0" in msgs[0] and "must have the shape of input 0" in msgs[0]
    assert re.sub(r"step net '[^']+'", "", msgs[1]) == re.sub(r"step net '[^']+'", "", msgs[0])
    assert outs_ok[1].tobytes() == outs_ok[0].tobytes()


_ENV_PROBE = """
import numpy as np
from recurrent import _C, core, workspace
from recurrent import recurrent as rnn
net = core.Net("p")
cell = core.Net("pc")
x_t, prev = cell.AddExternalInputs("input_t", "o_t_prev")
y = cell.FC([prev, "W", "b"], "y_t", axis=2)
cell.Sum([y, x_t], y)
cell.AddExternalOutput(cell.Tanh(y, "o_t"))
rnn.recurrent_net(net, cell, [(x_t, "x")], [(prev, "o_init")], {prev: "o_t"}, scope="g", forward_only=True)
for k, v in dict(W=np.eye(3), b=np.zeros(3), o_init=np.zeros((1, 2, 3)), x=np.ones((4, 2, 3))).items():
    workspace.FeedBlob(k, v.astype(np.float32))
workspace.RunNetOnce(net)
print(_C.get_flag("fused_sums"))
"""


@pytest.mark.parametrize("value,fused,warns", [("0", 0, False), ("off", 0, False), ("1", 4, False),
                                               ("bogus", 4, True)])
def test_step_fusion_environment_variable(value, fused, warns):
    """RECURRENT_STEP_FUSION: 0 / false / off keep FC and Sum apart; 1 (the
    default) fuses them; anything else warns at import and fuses."""
    env = dict(os.environ, RECURRENT_STEP_FUSION=value)
    r = subprocess.run([sys.executable, "-c", _ENV_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) == fused
    assert ("RuntimeWarning" in r.stderr and "RECURRENT_STEP_FUSION='bogus'" in r.stderr) == warns, r.stderr
