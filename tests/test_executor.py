"""The RNN executor (issue 4): executor on vs off gives bitwise identical
outputs and gradients for any thread count and any T (stacked LSTM and GRU,
training and forward-only with rotating workspaces, repeated runs, T changing
between runs); the controls (op arguments, GlobalInit, RECURRENT_RNN_EXECUTOR,
rnn_executor_debug, bad values); a failing op at a chosen timestep, forward
and backward (the serial run's exception, then correct runs); the trace.

The stress loop (hundreds of random runs under a hang timeout) is in
tests/test_executor_stress.py and reuses the builders of this file.

How a test knows which path ran: the executor prints its dependency graph
to stderr when ``rnn_executor_debug`` is set and it builds the graph (the
serial path prints nothing); in a trace, the serial path records every op on
worker 0 in serial order and has no ``set_timestep`` (step_op -1) events.
"""

import copy
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from recurrent import _C, core, rnn_cell, trace, workspace
from recurrent import recurrent as rnn
from recurrent.model_helper import ModelHelper
from recurrent.proto import make_argument

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNN_TYPES = ("RecurrentNetwork", "RecurrentNetworkGradient")
THREADS = (1, 2, 3, 8)
TS = (0, 1, 2, 7, 50)
GRAPH_LINE = re.compile(r"RNN executor \((forward|backward), T=(\d+), (\d+) ops/step, (\d+) edges, (\d+) threads\)")


# ================================================================ helpers
def f32(rng, *shape, scale=1.0):
    return rng.uniform(-scale, scale, shape).astype(np.float32)


def proto_of(net):
    return net.Proto() if hasattr(net, "Proto") else net


def set_arg(op, name, value):
    """Replaces (value None: removes) argument ``name`` of an OperatorDef."""
    op.arg[:] = [a for a in op.arg if a.name != name]
    if value is not None:
        op.arg.append(make_argument(name, value))


def rnn_ops(net):
    return [op for op in proto_of(net).op if op.type in RNN_TYPES]


def configure(net, enable, threads=None, debug=None, num_workspaces=None):
    """Executor settings on every RecurrentNetwork(Gradient) op of ``net``
    (takes effect when the net is created)."""
    ops = rnn_ops(net)
    assert ops, "no RecurrentNetwork op in %s" % proto_of(net).name
    for op in ops:
        set_arg(op, "enable_rnn_executor", int(enable))
        if threads is not None:
            rnn.set_rnn_executor_config(op, num_threads=threads)
        set_arg(op, "rnn_executor_debug", debug)
        if num_workspaces is not None and op.type == "RecurrentNetwork":
            set_arg(op, "num_workspaces", num_workspaces)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def assert_bitwise(ref, got, ctx=""):
    """Every blob of ``ref`` equals the one in ``got`` bit for bit (dtype,
    shape and bytes: -0.0 != 0.0 and NaN payloads count)."""
    assert sorted(ref) == sorted(got), ctx
    bad = []
    for k in sorted(ref):
        if bits(ref[k]) != bits(got[k]):
            a, b = ref[k], got[k]
            if a.shape == b.shape and a.dtype == b.dtype and a.size:
                d = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                bad.append("%s: max abs diff %.3g" % (k, d))
            else:
                bad.append("%s: %s %s vs %s %s" % (k, a.dtype, a.shape, b.dtype, b.shape))
    assert not bad, "%s: not bitwise equal: %s" % (ctx, "; ".join(bad))


def graph_lines(text):
    """(direction, T, threads) of every executor graph printout in ``text``."""
    return [(m.group(1), int(m.group(2)), int(m.group(5))) for m in GRAPH_LINE.finditer(text)]


@pytest.fixture(autouse=True)
def _executor_globally_on():
    """These tests compare the executor with the serial path, so the global
    switch must be on (whatever the environment says) and is restored after."""
    old_on = workspace.rnn_executor_enabled()
    old_n = _C.get_flag("rnn_executor_num_threads")
    old_trace = _C.get_flag("rnn_executor_trace")
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1", "--caffe2_rnn_executor_num_threads=0"])
    yield
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=%d" % old_on,
                          "--caffe2_rnn_executor_num_threads=%d" % old_n])
    trace.enable(bool(old_trace))


# ================================================================ models
class Case:
    """A built model: ``net`` (a core.Net), ``feed(T, seed)`` feeding every
    input, ``compare`` the blobs the tests compare (outputs and gradients)."""

    def __init__(self, net, feed, compare, n_fwd_ops):
        self.net = net
        self.feed = feed
        self.compare = list(compare)
        self.n_fwd_ops = n_fwd_ops

    def poison(self):
        """NaN into every compared blob, so a blob the run does not write
        shows up as non-finite instead of as the previous run's value."""
        for b in self.compare:
            workspace.FeedBlob(b, np.full((1,), np.nan, np.float32))

    def fetch(self):
        out = {b: workspace.FetchBlob(b) for b in self.compare}
        for b, v in out.items():
            if v.dtype.kind == "f":
                assert np.all(np.isfinite(v)), "blob '%s' not written by the run (or not finite)" % b
        return out

    def create(self, enable, threads=None, debug=None, num_workspaces=None):
        configure(self.net, enable, threads, debug, num_workspaces)
        workspace.CreateNet(self.net, overwrite=True)

    def run_created(self):
        self.poison()
        workspace.RunNet(self.net)
        return self.fetch()

    def run(self, T, seed, enable, threads=None, debug=None, num_workspaces=None):
        self.feed(T, seed)
        self.create(enable, threads, debug, num_workspaces)
        return self.run_created()


def build_stack(kind="lstm", layers=4, H=8, N=3, D=5, forward_only=False, name="m", seq_lengths=True):
    """A ``layers``-layer rnn_cell.LSTM (or GRU) in one RecurrentNetwork op,
    explicit initial states, and (unless forward_only) the loss
    sum(w_all * h_all) + sum(w_last * <last state>) of the last layer with
    AddGradientOperators. Compares every layer's outputs, the loss and every
    gradient (params, input, initial states, loss weights)."""
    model = ModelHelper(name=name)
    n_states = 2 if kind == "lstm" else 1
    inits = ["%s_init_%d" % (name, i) for i in range(n_states * layers)]
    fn = rnn_cell.LSTM if kind == "lstm" else rnn_cell.GRU
    owg = (0, 3) if kind == "lstm" else (0, 1)
    res = fn(model, "x", "seq" if seq_lengths else None, inits, D, [H] * layers, scope=name,
             outputs_with_grads=owg, return_last_layer_only=False, forward_only=forward_only)
    outputs = [str(r) for r in res]
    assert len(outputs) == 2 * n_states * layers
    last = res[-2 * n_states:]
    workspace.RunNetOnce(model.param_init_net)
    params = sorted(str(p) for p in model.params)
    shapes = {p: workspace.FetchBlob(p).shape for p in params}
    compare = list(outputs)
    n_fwd = len(model.net.Proto().op)
    if not forward_only:
        wa = model.net.Mul([last[0], "w_all"], "weighted_all")
        la = model.net.SumElements(wa, "loss_all")
        wl = model.net.Mul([last[owg[1]], "w_last"], "weighted_last")
        ll = model.net.SumElements(wl, "loss_last")
        model.net.Sum([la, ll], "loss")
        n_fwd = len(model.net.Proto().op)
        gmap = model.AddGradientOperators(["loss"])
        grads = sorted(set(str(v) for v in gmap.values() if v is not None))
        for must in ["x"] + inits + params:
            assert must in gmap, "no gradient for %s" % must
        compare += ["loss"] + grads

    def feed(T, seed):
        r = np.random.RandomState(seed)
        workspace.FeedBlob("x", f32(r, T, N, D))
        seq = r.randint(0, T + 1, N).astype(np.int32)
        seq[0] = T
        workspace.FeedBlob("seq", seq)
        for b in inits:
            workspace.FeedBlob(b, f32(r, 1, N, H))
        for p in params:
            workspace.FeedBlob(p, f32(r, *shapes[p], scale=0.5))
        workspace.FeedBlob("w_all", f32(r, T, N, H))
        workspace.FeedBlob("w_last", f32(r, 1, N, H))

    return Case(model.net, feed, compare, n_fwd)


# ================================================================ 1. bitwise equality
@pytest.mark.parametrize("T", TS)
def test_lstm4_training_bitwise_all_thread_counts(T, capfd):
    """4-layer LSTM with loss and gradients: every output and gradient with
    the executor on (1, 2, 3, 8 threads) equals the serial run bit for bit."""
    case = build_stack("lstm", layers=4, name="l4_%d" % T)
    ref = case.run(T, 7, enable=0, debug=1)
    assert graph_lines(capfd.readouterr().err) == []  # the serial path builds no graph
    if T > 0:
        assert np.any(ref["x_grad"] != 0) and np.any(ref["%s/layer_3/gates_t_w_grad" % "l4_%d" % T] != 0)
    for threads in THREADS:
        got = case.run(T, 7, enable=1, threads=threads, debug=1)
        assert_bitwise(ref, got, "T=%d threads=%d" % (T, threads))
        printed = graph_lines(capfd.readouterr().err)
        # the executor ran (T = 0 runs no step, so there is no graph)
        assert printed == ([] if T == 0 else [("forward", T, threads), ("backward", T, threads)])


@pytest.mark.parametrize("T", (0, 1, 7, 50))
def test_gru2_training_bitwise(T):
    case = build_stack("gru", layers=2, name="g2_%d" % T)
    ref = case.run(T, 11, enable=0)
    for threads in (1, 2, 3, 8):
        assert_bitwise(ref, case.run(T, 11, enable=1, threads=threads), "GRU T=%d threads=%d" % (T, threads))


@pytest.mark.parametrize("T", TS)
def test_lstm4_forward_only_rotating_workspaces(T):
    """forward_only=True: the step workspaces rotate (num_workspaces 1..3 and
    the default); the executor must equal the serial run for every setting."""
    case = build_stack("lstm", layers=4, forward_only=True, name="fo_%d" % T)
    ref = case.run(T, 5, enable=0)
    for nws in (None, 1, 2, 3):
        if nws is not None:
            assert_bitwise(ref, case.run(T, 5, enable=0, num_workspaces=nws), "serial nws=%s" % nws)
        for threads in THREADS:
            got = case.run(T, 5, enable=1, threads=threads, num_workspaces=nws)
            assert_bitwise(ref, got, "forward-only T=%d nws=%s threads=%d" % (T, nws, threads))


def test_forward_only_equals_training_forward():
    """The forward-only op (rotating workspaces) computes the same outputs as
    the training op (one workspace per step), executor on, bit for bit."""
    T = 9
    tr = build_stack("lstm", layers=3, name="same")
    fo = build_stack("lstm", layers=3, name="same", forward_only=True)
    a = tr.run(T, 3, enable=1, threads=3)
    b = fo.run(T, 3, enable=1, threads=3, num_workspaces=2)
    for k in fo.compare:
        assert bits(a[k]) == bits(b[k]), k


@pytest.mark.parametrize("kind,forward_only", [("lstm", False), ("gru", False), ("lstm", True)])
def test_same_net_repeated_runs_changing_T(kind, forward_only):
    """One created net, run twice per T with T changing between runs
    (5, 2, 4, 0, 3): both runs equal each other and the serial net's."""
    Ts = (5, 2, 4, 0, 3)
    case = build_stack(kind, layers=4 if kind == "lstm" else 2, forward_only=forward_only, name="rep")
    configs = [(0, None)] + [(1, t) for t in THREADS]
    results = {}
    for enable, threads in configs:
        case.feed(Ts[0], 100 + Ts[0])
        case.create(enable, threads, num_workspaces=2 if forward_only else None)
        for T in Ts:
            case.feed(T, 100 + T)
            first = case.run_created()
            second = case.run_created()
            assert_bitwise(first, second, "rerun T=%d enable=%d threads=%s" % (T, enable, threads))
            results[enable, threads, T] = first
    for enable, threads in configs[1:]:
        for T in Ts:
            assert_bitwise(results[0, None, T], results[enable, threads, T], "T=%d threads=%d" % (T, threads))


def test_blas_threads_do_not_change_bits():
    """Shapes big enough for multi-threaded BLAS in the serial path (the
    executor with >= 2 threads runs BLAS single-threaded): still bitwise."""
    case = build_stack("lstm", layers=2, H=64, N=32, D=48, name="big")
    ref = case.run(12, 1, enable=0)
    for threads in (1, 2, 3):
        assert_bitwise(ref, case.run(12, 1, enable=1, threads=threads), "threads=%d" % threads)


def test_two_rnn_ops_sharing_nothing_in_one_net():
    """Two independent stacked LSTMs in one net (each op its own executor)."""
    model = ModelHelper(name="two")
    H, N, D, T = 6, 2, 4, 8
    a = rnn_cell.LSTM(model, "xa", None, None, D, [H, H], scope="A", outputs_with_grads=(0,))
    b = rnn_cell.LSTM(model, "xb", None, None, D, [H, H, H], scope="B", outputs_with_grads=(0,))
    workspace.RunNetOnce(model.param_init_net)
    la = model.net.SumElements(a[0], "la")
    lb = model.net.SumElements(b[0], "lb")
    model.net.Sum([la, lb], "loss")
    gmap = model.AddGradientOperators(["loss"])
    compare = [str(x) for x in a + b] + sorted(set(str(v) for v in gmap.values() if v is not None))
    r = np.random.RandomState(2)
    params = [str(p) for p in model.params]
    vals = {p: f32(r, *workspace.FetchBlob(p).shape, scale=0.5) for p in params}

    def feed(T, seed):
        workspace.FeedBlob("xa", f32(np.random.RandomState(seed), T, N, D))
        workspace.FeedBlob("xb", f32(np.random.RandomState(seed + 1), T, N, D))
        for p in params:
            workspace.FeedBlob(p, vals[p])

    case = Case(model.net, feed, compare, 0)
    ref = case.run(T, 4, enable=0)
    for threads in (2, 3):
        assert_bitwise(ref, case.run(T, 4, enable=1, threads=threads), "threads=%d" % threads)


# ================================================================ 2. control
def lstm_for_control(name="ctl", T=7):
    case = build_stack("lstm", layers=2, H=6, N=2, D=3, name=name)
    case.feed(T, 9)
    return case


def test_op_argument_enable_rnn_executor_and_debug_printout(capfd):
    """rnn_executor_debug=1 prints the dependency graph (forward and
    backward, with T and the thread count) when the executor builds it; not
    with enable_rnn_executor=0, and not again while T stays the same."""
    case = lstm_for_control()
    case.create(1, threads=3, debug=1)
    case.run_created()
    err = capfd.readouterr().err
    assert graph_lines(err) == [("forward", 7, 3), ("backward", 7, 3)]
    # one line per op of the first timestep, "[i] Type -> successors"
    assert re.search(r"^\s+\[-1\] <set timestep> ->", err, re.M)
    assert re.search(r"^\s+\[\d+\] LSTMUnit ->", err, re.M)
    assert re.search(r"^\s+\[\d+\] LSTMUnitGradient ->", err, re.M)
    case.run_created()
    assert graph_lines(capfd.readouterr().err) == []  # same T: the graph is reused
    case.feed(4, 9)
    case.run_created()
    assert graph_lines(capfd.readouterr().err) == [("forward", 4, 3), ("backward", 4, 3)]
    case.create(1, threads=2, debug=None)  # no debug argument: silent
    case.run_created()
    assert capfd.readouterr().err == ""
    case.create(0, threads=2, debug=1)  # executor off: nothing to print
    case.run_created()
    assert graph_lines(capfd.readouterr().err) == []


def test_globalinit_switch_makes_new_nets_serial(capfd):
    """--caffe2_rnn_executor=0 makes newly created nets run serially (no
    graph printout, a serial trace), with the same bits; =1 turns it back on."""
    T = 50
    case = build_stack("lstm", layers=4, name="gi")
    case.feed(T, 1)
    ref = case.run(T, 1, enable=0)
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=0"])
    assert not workspace.rnn_executor_enabled()
    case.create(1, threads=4, debug=1)  # the op asks for the executor
    with trace.tracing():
        got = case.run_created()
    assert_bitwise(ref, got, "GlobalInit off")
    assert graph_lines(capfd.readouterr().err) == []
    events = trace.fetch(case.net)
    assert events and {e["worker"] for e in events} == {0}
    assert all(e["step_op"] >= 0 for e in events)  # no executor prologue
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])
    assert workspace.rnn_executor_enabled()
    case.create(1, threads=4, debug=1)
    got = case.run_created()
    assert_bitwise(ref, got, "GlobalInit on again")
    assert graph_lines(capfd.readouterr().err) == [("forward", T, 4), ("backward", T, 4)]


def test_globalinit_default_num_threads(capfd):
    """Without an rnn_executor.num_threads argument the op uses
    --caffe2_rnn_executor_num_threads (0: the usable cores)."""
    case = lstm_for_control()
    for op in rnn_ops(case.net):
        set_arg(op, "rnn_executor.num_threads", None)
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_num_threads=3"])
    case.create(1, debug=1)
    ref = case.run_created()
    assert graph_lines(capfd.readouterr().err) == [("forward", 7, 3), ("backward", 7, 3)]
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor_num_threads=0"])
    case.create(1, debug=1)
    assert_bitwise(ref, case.run_created())
    cores = len(os.sched_getaffinity(0))
    assert graph_lines(capfd.readouterr().err) == [("forward", 7, cores), ("backward", 7, cores)]


def test_globalinit_bad_flags_raise():
    with pytest.raises(ValueError, match="unknown flag --caffe2_rnn_exector"):
        workspace.GlobalInit(["prog", "--caffe2_rnn_exector=0"])
    with pytest.raises(ValueError, match="caffe2_rnn_executor expects 0/1/true/false, got 'maybe'"):
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor=maybe"])
    with pytest.raises(ValueError, match="caffe2_rnn_executor_num_threads expects an int, got 'two'"):
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor_num_threads=two"])
    with pytest.raises(ValueError, match=r"rnn_executor_num_threads must be in \[0, 1024\]"):
        workspace.GlobalInit(["prog", "--caffe2_rnn_executor_num_threads=-1"])
    with pytest.raises(ValueError, match="unexpected argument 'caffe2_rnn_executor=0'"):
        workspace.GlobalInit(["prog", "caffe2_rnn_executor=0"])
    assert workspace.rnn_executor_enabled()  # nothing changed by the failed calls
    assert _C.get_flag("rnn_executor_num_threads") == 0


def test_bad_num_threads_raises():
    case = lstm_for_control()
    (fwd,) = [op for op in rnn_ops(case.net) if op.type == "RecurrentNetwork"]
    for bad in (0, -2):
        with pytest.raises(ValueError, match="num_threads must be >= 1, got %d" % bad):
            rnn.set_rnn_executor_config(fwd, num_threads=bad)
    for bad in (-1, 1025):
        configure(case.net, 1)
        for op in rnn_ops(case.net):
            set_arg(op, "rnn_executor.num_threads", bad)
        with pytest.raises(ValueError, match=r"op RecurrentNetwork #\d+: rnn_executor.num_threads must be in "
                                             r"\[0, 1024\], got %d" % bad):
            workspace.CreateNet(case.net, overwrite=True)
    # the workspace is still usable
    case.create(1, threads=2)
    case.run_created()


CONTROL_SCRIPT = textwrap.dedent("""
    import hashlib, json, sys
    sys.path.insert(0, sys.argv[1])
    import test_executor as tx
    from recurrent import workspace
    if len(sys.argv) > 2:
        workspace.GlobalInit(["prog", sys.argv[2]])
    enabled = workspace.rnn_executor_enabled()
    case = tx.build_stack("lstm", layers=2, H=6, N=2, D=3, name="env")
    out = case.run(7, 3, enable=1, threads=2, debug=1)
    h = hashlib.sha256()
    for k in sorted(out):
        h.update(k.encode() + out[k].tobytes())
    print(json.dumps({"enabled": enabled, "digest": h.hexdigest()}))
""")


def run_control_script(env_value, *args):
    env = dict(os.environ)
    env.pop("RECURRENT_RNN_EXECUTOR", None)
    if env_value is not None:
        env["RECURRENT_RNN_EXECUTOR"] = env_value
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CONTROL_SCRIPT, os.path.join(REPO, "tests")] + list(args),
                       env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_environment_variable_turns_executor_off():
    """RECURRENT_RNN_EXECUTOR=0 (read once per process) makes the ops run
    serially; results are the same bits as the executor's; GlobalInit wins
    over the environment."""
    on, err_on = run_control_script(None)
    assert on["enabled"] is True
    assert graph_lines(err_on) == [("forward", 7, 2), ("backward", 7, 2)]
    for value in ("0", "off", "false"):
        off, err_off = run_control_script(value)
        assert off["enabled"] is False, value
        assert graph_lines(err_off) == [], value
        assert off["digest"] == on["digest"]
    forced, err_forced = run_control_script("0", "--caffe2_rnn_executor=1")
    assert forced["enabled"] is True
    assert graph_lines(err_forced) == [("forward", 7, 2), ("backward", 7, 2)]
    # in this process: the same inputs give the same bits
    case = build_stack("lstm", layers=2, H=6, N=2, D=3, name="env")
    out = case.run(7, 3, enable=0)
    import hashlib
    h = hashlib.sha256()
    for k in sorted(out):
        h.update(k.encode() + out[k].tobytes())
    assert h.hexdigest() == on["digest"]
