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
GRAPH_LINE = re.compile(r"RNN executor \((forward|backward), T=(\d+), (\d+) ops/step, (\d+) edges, "
                        r"(\d+) threads\)")


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

    def __init__(self, net, feed, compare):
        self.net = net
        self.feed = feed
        self.compare = list(compare)

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


CELLS = {"lstm": (rnn_cell.LSTM, 2), "milstm": (rnn_cell.MILSTM, 2), "gru": (rnn_cell.GRU, 1),
         "basic": (rnn_cell.BasicRNN, 1)}


def build_stack(kind="lstm", layers=4, H=8, N=3, D=5, forward_only=False, name="m", seq_lengths=True,
                memory_optimization=False):
    """A ``layers``-layer rnn_cell.LSTM (GRU, MILSTM, BasicRNN) in one RecurrentNetwork op,
    explicit initial states, and (unless forward_only) the loss
    sum(w_all * h_all) + sum(w_last * <last state>) of the last layer with
    AddGradientOperators. Compares every layer's outputs, the loss and every
    gradient (params, input, initial states, loss weights)."""
    model = ModelHelper(name=name)
    fn, n_states = CELLS[kind]
    inits = ["%s_init_%d" % (name, i) for i in range(n_states * layers)]
    owg = (0, 3) if n_states == 2 else (0, 1)
    extra = {"activation": "tanh"} if kind == "basic" else {}
    res = fn(model, "x", "seq" if seq_lengths else None, inits, D, [H] * layers, scope=name,
             outputs_with_grads=owg, return_last_layer_only=False, forward_only=forward_only,
             memory_optimization=memory_optimization, **extra)
    outputs = [str(r) for r in res]
    assert len(outputs) == 2 * n_states * layers
    last = res[-2 * n_states:]
    workspace.RunNetOnce(model.param_init_net)
    params = sorted(str(p) for p in model.params)
    shapes = {p: workspace.FetchBlob(p).shape for p in params}
    compare = list(outputs)
    if not forward_only:
        wa = model.net.Mul([last[0], "w_all"], "weighted_all")
        la = model.net.SumElements(wa, "loss_all")
        wl = model.net.Mul([last[owg[1]], "w_last"], "weighted_last")
        ll = model.net.SumElements(wl, "loss_last")
        model.net.Sum([la, ll], "loss")
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

    return Case(model.net, feed, compare)


# ================================================================ 1. bitwise equality
@pytest.mark.parametrize("T", TS)
def test_lstm4_training_bitwise_all_thread_counts(T, capfd):
    """4-layer LSTM with loss and gradients: every output and gradient with
    the executor on (1, 2, 3, 8 threads) equals the serial run bit for bit."""
    case = build_stack("lstm", layers=4, name="l4_%d" % T)
    ref = case.run(T, 7, enable=0, debug=1)
    assert graph_lines(capfd.readouterr().err) == []  # the serial path builds no graph
    if T > 0:
        assert np.any(ref["x_grad"] != 0) and np.any(ref["l4_%d/layer_3/gates_t_w_grad" % T] != 0)
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


@pytest.mark.parametrize("kind,layers,seq", [("milstm", 2, True), ("basic", 3, False), ("lstm", 3, False)])
@pytest.mark.parametrize("T", (1, 7, 50))
def test_other_cells_bitwise(kind, layers, seq, T):
    case = build_stack(kind, layers=layers, name="oc", seq_lengths=seq)
    ref = case.run(T, 13, enable=0)
    for threads in (2, 3, 8):
        got = case.run(T, 13, enable=1, threads=threads)
        assert_bitwise(ref, got, "%s T=%d threads=%d" % (kind, T, threads))


@pytest.mark.parametrize("T", (1, 7, 50))
def test_lstm4_memory_optimization_bitwise(T):
    """memory_optimization=True: the gates are recomputed on backward into
    blobs shared by all timesteps (the shared workspace): every timestep
    writes the same blob, so the executor must keep the serial order."""
    case = build_stack("lstm", layers=4, name="mo", memory_optimization=True)
    (op,) = [o for o in case.net.Proto().op if o.type == "RecurrentNetwork"]
    assert len({a.name: a.value() for a in op.arg}["recompute_blobs_on_backward"]) == 4
    ref = case.run(T, 17, enable=0)
    for threads in THREADS:
        assert_bitwise(ref, case.run(T, 17, enable=1, threads=threads), "T=%d threads=%d" % (T, threads))


def test_layered_lstm_bitwise():
    """rnn_cell.layered_LSTM: one RecurrentNetwork op per layer, each reading
    the previous op's output; every op with its own executor."""
    model = ModelHelper(name="lay")
    H, N, D, T = 6, 3, 4, 20
    res = rnn_cell.layered_LSTM(model, "x", "seq", None, D, [H, H, H], scope="lay")
    workspace.RunNetOnce(model.param_init_net)
    model.net.SumElements(res[0], "loss")
    gmap = model.AddGradientOperators(["loss"])
    assert len(rnn_ops(model.net)) == 6
    params = [str(p) for p in model.params]
    compare = [str(r) for r in res] + ["loss"] + sorted(set(str(v) for v in gmap.values() if v is not None))
    shapes = {p: workspace.FetchBlob(p).shape for p in params}

    def feed(T_, seed):
        r = np.random.RandomState(seed)
        workspace.FeedBlob("x", f32(r, T_, N, D))
        workspace.FeedBlob("seq", r.randint(0, T_ + 1, N).astype(np.int32))
        for p in params:
            workspace.FeedBlob(p, f32(r, *shapes[p], scale=0.5))

    case = Case(model.net, feed, compare)
    ref = case.run(T, 21, enable=0)
    for threads in (2, 3):
        assert_bitwise(ref, case.run(T, 21, enable=1, threads=threads), "threads=%d" % threads)


_OPENBLAS_BITS = r"""
import sys
sys.path.insert(0, %r)
from recurrent import _C, workspace
from test_executor import assert_bitwise, build_stack
workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])
_C.set_flag("blas_num_threads", 4)
case = build_stack("lstm", layers=2, H=%d, N=%d, D=%d, name="ob")
ref = case.run(5, 3, enable=0)
for threads in (1, 2, 3):
    assert_bitwise(ref, case.run(5, 3, enable=1, threads=threads), "threads=%%d" %% threads)
print("ok", _C.get_flag("packed_gemm_kernel"), _C.get_flag("blas_num_threads"))
"""


def _cpu_has_avx2():
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx2" in flags and " fma" in flags


@pytest.mark.parametrize("coretype", [None, "Haswell"])
@pytest.mark.parametrize("packed,H,N,D", [("0", 256, 16, 40), ("1", 64, 100, 300)])
def test_openblas_step_products_bitwise(coretype, packed, H, N, D):
    """Step products that go to OpenBLAS (RECURRENT_PACKED_GEMM=0, or more
    than 64 rows) with OpenBLAS at 4 threads (or as many as it takes), big enough for OpenBLAS to
    thread them: executor on and off stay bitwise equal. OpenBLAS's results
    depend on its thread count (with its AVX2 "Haswell" kernels, which CPUs
    without AVX-512 run, they differ), so inside step loops every product runs
    single-threaded OpenBLAS calls on fixed chunks, spread over our threads."""
    env = dict(os.environ)
    env["RECURRENT_PACKED_GEMM"] = packed
    if coretype:
        if not _cpu_has_avx2():
            pytest.skip("OPENBLAS_CORETYPE=Haswell needs an x86-64 CPU with AVX2 + FMA")
        env["OPENBLAS_CORETYPE"] = coretype
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _OPENBLAS_BITS % (here, H, N, D)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout.split()[-1]) >= 2, r.stdout  # OpenBLAS did run threaded


def test_executor_restores_blas_threads():
    """The executor runs BLAS single-threaded while >= 2 workers run and
    gives the serial path its BLAS threads back, after a failure too."""
    before = _C.get_flag("blas_num_threads")
    lab = LabelRNN(N=2, name="blas")
    lab.feed(12, 1)
    lab.create(1, threads=3)
    lab.run_good()
    assert _C.get_flag("blas_num_threads") == before
    lab.fail("forward", [(5, 1)], 9)
    assert _C.get_flag("blas_num_threads") == before
    lab.fail("backward", [(5, 1)], 9)
    assert _C.get_flag("blas_num_threads") == before


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
    ref = case.run(6, 1, enable=0)
    for threads in (1, 2, 3):
        assert_bitwise(ref, case.run(6, 1, enable=1, threads=threads), "threads=%d" % threads)


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

    case = Case(model.net, feed, compare)
    ref = case.run(T, 4, enable=0)
    for threads in (2, 3):
        assert_bitwise(ref, case.run(T, 4, enable=1, threads=threads), "threads=%d" % threads)



def windowed_net(k, name):
    """s_t = Tanh(x_t + sum of the previous k states), the k states read
    through ONE link with window k (forward only: rotating workspaces)."""
    net = core.Net(name)
    cell = core.Net(name + "_cell")
    x_t, window = cell.AddExternalInputs("x_t", "window")
    parts = cell.Split([window], ["w%d" % i for i in range(k)], axis=0)
    s_t = cell.Tanh(cell.Sum([x_t] + list(parts), "pre"), "s_t")
    cell.AddExternalOutput(s_t)
    step = cell.Proto()
    step.type = "simple"
    net.Proto().op.append(core.CreateOperator(
        "RecurrentNetwork", ["x", "s_init"], ["s_all", "s_last", name + "_step_ws"],
        step_net=step, recurrent_states=["s_states"], initial_recurrent_state_ids=[1],
        link_internal=["window", "s_t", "x_t"], link_external=["s_states", "s_states", "x"],
        link_offset=[0, k, 0], link_window=[k, 1, 1],
        alias_src=["s_states", "s_states"], alias_dst=["s_all", "s_last"], alias_offset=[k, -1],
        timestep="timestep", enable_rnn_executor=1))
    return net


@pytest.mark.parametrize("T", (0, 1, 2, 7, 50))
def test_windowed_link_bitwise(T):
    """A link with a window (rows t..t+k-1 of the state) and another link
    writing row t+k of the same state, with rotating workspaces: the
    executor (1, 2, 3, 8 threads, 1..5 workspaces) equals the serial run."""
    k, N, D = 3, 2, 4
    r = np.random.RandomState(T)
    x, s0 = f32(r, T, N, D), f32(r, k, N, D)

    def feed(T_, seed):
        workspace.FeedBlob("x", x)
        workspace.FeedBlob("s_init", s0)

    case = Case(windowed_net(k, "win"), feed, ["s_all", "s_last"])
    ref = case.run(T, 0, enable=0)
    rows = list(s0.astype(np.float64))
    for t in range(T):
        rows.append(np.tanh(x[t] + sum(rows[-k:])))
    np.testing.assert_allclose(ref["s_all"], np.array(rows[k:]).reshape(T, N, D), rtol=1e-5, atol=1e-5)
    for nws in (None, 1, 2, 3, 5):
        for threads in THREADS:
            got = case.run(T, 0, enable=1, threads=threads, num_workspaces=nws)
            assert_bitwise(ref, got, "T=%d nws=%s threads=%d" % (T, nws, threads))


@pytest.mark.parametrize("forward_only", [False, True])
def test_every_workspace_blob_is_the_same_with_the_executor_on_or_off(forward_only):
    """The comparison Caffe2's recurrent_net_executor_test makes: after runs of several lengths, the
    workspace's blob names (in order) are the same with the executor on and off, every blob can be
    fetched (step workspaces give their bytes description) and every tensor is bitwise equal. The
    executor's status is kept in the op's step workspaces, not in a blob of its own."""
    case = build_stack("lstm", layers=2, name="wsb", forward_only=forward_only)
    init = {k: workspace.FetchBlob(k) for k in workspace.Blobs()}
    got = {}
    for enable in (0, 1):
        workspace.ResetWorkspace()
        for k, v in init.items():
            workspace.FeedBlob(k, v)
        ws = {}
        for j, T in enumerate([3, 9, 1]):
            case.feed(T, 11 + j)
            if j == 0:
                for op in rnn_ops(case.net):
                    rnn.set_rnn_executor_config(op, min_op_us=0)  # the executor for every run
                case.create(enable, threads=2)
            workspace.RunNet(case.net)
            ws.update({"%s.%d" % (k, j): workspace.FetchBlob(k) for k in workspace.Blobs()})
        got[enable] = ws
        status = trace.executor_status(case.net)
        if enable:
            assert len(status) == (1 if forward_only else 2)
            assert all(s["mode"] == "executor" and s["last_run"] == "executor" for s in status)
        else:
            assert status == []
    assert list(got[0]) == list(got[1])
    assert not any("executor" in k for k in got[1])
    described = [k for k, v in got[0].items() if isinstance(v, bytes)]
    assert described and all("step_workspaces" in k for k in described)
    for k, v in got[0].items():
        if isinstance(v, bytes):
            assert v == got[1][k]
            assert v.endswith(b", a C++ native class of type RecurrentNetwork step workspaces.")
        else:
            assert bits(v) == bits(got[1][k]), k


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
    for _ in range(3):
        case.run_created()
        assert graph_lines(capfd.readouterr().err) == []  # same T and nets: the graph is reused
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
    # the child imports the same recurrent package as this process (installed, staged or in place)
    import recurrent
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CONTROL_SCRIPT, os.path.join(REPO, "tests")] + list(args),
                       env=env, cwd=os.path.join(REPO, "tests"), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_environment_variable_turns_executor_off():
    """RECURRENT_RNN_EXECUTOR=0 (read once per process) makes the ops run
    serially; results are the same bits as the executor's; GlobalInit wins
    over the environment."""
    on, err_on = run_control_script(None)
    assert on["enabled"] is True
    assert graph_lines(err_on) == [("forward", 7, 2), ("backward", 7, 2)]
    for value in ("0", "off"):
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


# ================================================================ 3. failures
class LabelRNN:
    """A recurrent net whose step net has a per-step label input, so a label
    out of range makes one chosen timestep fail, forward or backward.

    Cell (input_t: 1 x N x D, label_t: the row t of the int32 T x N blob
    ``labels``, through an extra link added to the RecurrentNetwork op):
        h   = Tanh(FC(h_prev, W, b) + FC(input_t, U, e))      (recurrent state)
        z   = Reshape(FC(input_t, V, c), (N, K))
        xent = LabelCrossEntropy(Softmax(z), label)           (N,)
        acc = acc_prev + Reshape(xent, (1, N, 1))             (recurrent state)
    The loss branch depends on input_t only, so the LabelCrossEntropy of
    different timesteps are independent (the executor may run a later one
    first). Outer loss: sum(acc_last) + sum(w_all * h_all).

    N == 1: LabelCrossEntropy reads label_t (1 x 1) directly; the gradient op
    re-applies the forward links, so labels fed after the forward pass reach
    LabelCrossEntropyGradient. N > 1: the label goes through
    Reshape(label_t) -> label_flat, listed in recompute_blobs_on_backward, so
    the backward step net recomputes it from the current labels.
    """

    H, D, K = 4, 3, 5

    def __init__(self, N=1, name="lab"):
        H, D, K = self.H, self.D, self.K
        self.N = N
        net = core.Net(name)
        cell = core.Net(name + "_cell")
        input_t, h_prev, acc_prev, W, b, U, e, V, c, label_t = cell.AddExternalInputs(
            "input_t", "h_prev", "acc_prev", "W", "b", "U", "e", "V", "c", "label_t")
        hw = cell.FC([h_prev, W, b], "hw", axis=2)
        xu = cell.FC([input_t, U, e], "xu", axis=2)
        h = cell.Tanh(cell.Sum([hw, xu], "pre"), "h")
        z = cell.FC([input_t, V, c], "z", axis=2)
        z2, _ = cell.Reshape(z, ["z2", "z_old_shape"], shape=[-1, K])
        probs = cell.Softmax(z2, "probs")
        if N == 1:
            label, recompute = label_t, None
        else:
            label, _ = cell.Reshape(label_t, ["label_flat", "label_old_shape"], shape=[-1])
            recompute = ["label_flat", "label_old_shape"]
        xent = cell.LabelCrossEntropy([probs, label], "xent")
        x3, _ = cell.Reshape(xent, ["xent3", "xent_old_shape"], shape=[1, -1, 1])
        acc = cell.Sum([acc_prev, x3], "acc")
        cell.AddExternalOutputs(h, acc)
        self.cell_types = [op.type for op in cell.Proto().op]
        outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(h_prev, "h0"), (acc_prev, "acc0")],
                                 {h_prev: h, acc_prev: acc}, scope=name, outputs_with_grads=(0, 3),
                                 recompute_blobs_on_backward=recompute)
        (op,) = [o for o in net.Proto().op if o.type == "RecurrentNetwork"]
        # label_t became a "reference" (the last input); make it a link instead
        assert op.input[-1] == "label_t"
        del op.input[-1]
        net.Proto().external_input[:] = [b for b in net.Proto().external_input if b != "label_t"]
        for key, value in (("link_internal", "label_t"), ("link_external", "labels"), ("link_offset", 0)):
            old = [a for a in op.arg if a.name == key][0].value()
            set_arg(op, key, list(old) + [value])
        self.n_fwd_links = len(list(old)) + 1
        la = net.SumElements(outs[3], "loss_acc")
        lh = net.SumElements(net.Mul([outs[0], "w_all"], "weighted_h"), "loss_h")
        net.Sum([la, lh], "loss")
        n_fwd = len(net.Proto().op)
        gmap = net.AddGradientOperators(["loss"])
        grads = sorted(set(str(v) for v in gmap.values() if v is not None))
        for must in ("x", "h0", "acc0", "W", "b", "U", "e", "V", "c"):
            assert must in gmap
        self.compare = [str(o) for o in outs] + ["loss"] + grads
        self.fwd = net.Clone(name + "_fwd", op_id_mask=range(n_fwd))
        self.bwd = net.Clone(name + "_bwd", op_id_mask=range(n_fwd, len(net.Proto().op)))
        (gop,) = [o for o in self.bwd.Proto().op if o.type == "RecurrentNetworkGradient"]
        a = {x.name: x.value() for x in gop.arg}
        # the gradient op's step net as the C op runs it: one accumulate op per
        # state whose _all output has a gradient, the forward links, the
        # backward links, one stash link per FC weight gradient summed after
        # the loop (an FCGradient whose X is a forward link: see
        # test_deferred_fc_grad.py), then the backward step net
        n_acc = 1  # h_all (output 0) has a gradient, acc_all does not
        self.bwd_types = a["backward_step_net"] and [o.type for o in a["backward_step_net"].op]
        n_stash = sum(1 for o in a["backward_step_net"].op
                      if o.type == "FCGradient" and o.input[0] in list(a["link_internal"]))
        self.bwd_offset = n_acc + len(a["link_internal"]) + len(a["backward_link_internal"]) + n_stash
        assert len(a["link_internal"]) == self.n_fwd_links

    def lce_index(self, backward):
        if backward:
            return self.bwd_offset + self.bwd_types.index("LabelCrossEntropyGradient")
        return self.n_fwd_links + self.cell_types.index("LabelCrossEntropy")

    def feed(self, T, seed):
        r = np.random.RandomState(seed)
        H, D, K, N = self.H, self.D, self.K, self.N
        vals = dict(x=f32(r, T, N, D), h0=f32(r, 1, N, H), acc0=f32(r, 1, N, 1), W=f32(r, H, H), b=f32(r, H),
                    U=f32(r, H, D), e=f32(r, H), V=f32(r, K, D), c=f32(r, K), w_all=f32(r, T, N, H))
        for k, v in vals.items():
            workspace.FeedBlob(k, v)
        self.labels = r.randint(0, K, (T, N)).astype(np.int32)
        workspace.FeedBlob("labels", self.labels)
        return vals

    def feed_labels(self, bad=(), value=None):
        lab = self.labels.copy()
        for t, n in bad:
            lab[t, n] = value
        workspace.FeedBlob("labels", lab)

    def create(self, enable, threads=None):
        configure(self.fwd, enable, threads)
        configure(self.bwd, enable, threads)
        workspace.CreateNet(self.fwd, overwrite=True)
        self.feed_labels()
        workspace.RunNet(self.fwd)  # the gradient net's inputs exist after a forward run
        workspace.CreateNet(self.bwd, overwrite=True)

    def run_good(self, nets=None):
        fwd, bwd = nets or (self.fwd, self.bwd)
        self.feed_labels()
        for b in self.compare:
            workspace.FeedBlob(b, np.full((1,), np.nan, np.float32))
        workspace.RunNet(fwd)
        workspace.RunNet(bwd)
        out = {b: workspace.FetchBlob(b) for b in self.compare}
        for b, v in out.items():
            assert np.all(np.isfinite(v)), b
        return out

    def fail(self, direction, bad, value, nets=None):
        """Runs with bad labels at the (t, n) in ``bad``; returns the exception."""
        fwd, bwd = nets or (self.fwd, self.bwd)
        if direction == "backward":
            self.feed_labels()
            workspace.RunNet(fwd)
        self.feed_labels(bad, value)
        with pytest.raises(IndexError) as ei:
            workspace.RunNet(fwd if direction == "forward" else bwd)
        return ei.value


def label_reference_loss(vals, labels, K):
    """NumPy forward of LabelRNN: acc_last (the per-row summed cross-entropy)."""
    x = vals["x"].astype(np.float64)
    acc = vals["acc0"].astype(np.float64).copy()
    for t in range(x.shape[0]):
        z = x[t] @ vals["V"].T.astype(np.float64) + vals["c"]
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        acc[0, :, 0] += -np.log(p[np.arange(x.shape[1]), labels[t]])
    return acc


# (direction, bad (t, n) cells, bad value, the timestep the serial run reports)
def failure_scenarios(T, N):
    last = N - 1
    return [
        ("forward", [(4, last)], 99, 4),
        ("backward", [(4, 0)], 5, 4),
        ("forward", [(0, 0)], -1, 0),
        ("backward", [(T - 1, last)], -7, T - 1),
        ("forward", [(T - 1, 0)], 5, T - 1),
        ("backward", [(0, 0)], 1000, 0),
        # several bad steps: forward reports the first, backward (T-1 -> 0) the last
        ("forward", [(6, 0), (2, last), (7, 0)], 42, 2),
        ("backward", [(1, 0), (6, last), (3, 0)], -2, 6),
    ]


def test_label_rnn_forward_matches_numpy():
    """The extra label link gives the cell the labels of its own timestep."""
    lab = LabelRNN(N=3)
    vals = lab.feed(6, 1)
    lab.create(0)
    np.testing.assert_allclose(workspace.FetchBlob("acc_last"), label_reference_loss(vals, lab.labels, lab.K),
                               rtol=1e-5, atol=1e-5)
    lab.create(1, threads=3)
    np.testing.assert_allclose(workspace.FetchBlob("acc_last"), label_reference_loss(vals, lab.labels, lab.K),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("N", (1, 3))
@pytest.mark.parametrize("enable,threads", [(0, None), (1, 1), (1, 2), (1, 3), (1, 8)])
def test_failing_step_forward_and_backward(N, enable, threads):
    """A failing op at a chosen timestep, forward and backward: IndexError
    naming the RNN op, the step op's type and index and the timestep, exactly
    the serial run's message; afterwards the nets run correctly (bitwise equal
    to a fresh serial run), over and over."""
    T = 9
    lab = LabelRNN(N=N)
    scenarios = failure_scenarios(T, N)
    # reference: a fresh serial run and the serial messages, in another workspace
    workspace.SwitchWorkspace("exectest_ref", True)
    try:
        workspace.ResetWorkspace()
        lab.feed(T, 3)
        lab.create(0)
        ref = lab.run_good()
        serial_msgs = [str(lab.fail(d, bad, v)) for d, bad, v, _ in scenarios]
    finally:
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace("default")
    for (direction, bad, value, t), msg in zip(scenarios, serial_msgs):
        backward = direction == "backward"
        op = "RecurrentNetworkGradient" if backward else "RecurrentNetwork"
        step_op = "LabelCrossEntropyGradient" if backward else "LabelCrossEntropy"
        assert re.match(r"op %s #\d+ \(step net '[^']+'\): op %s #%d at timestep %d: " % (
            op, step_op, lab.lce_index(backward), t), msg), msg
        assert "label %d at row" % value in msg, msg

    lab.feed(T, 3)
    lab.create(enable, threads)
    assert_bitwise(ref, lab.run_good(), "first good run")
    for rep in range(2):
        for (direction, bad, value, t), msg in zip(scenarios, serial_msgs):
            err = lab.fail(direction, bad, value)
            assert str(err) == msg, "%s %r rep %d" % (direction, bad, rep)
            assert_bitwise(ref, lab.run_good(), "after %s failure at %r, rep %d" % (direction, bad, rep))


@pytest.mark.parametrize("enable,threads", [(0, None), (1, 2)])
def test_failed_backward_leaves_summed_weight_gradients_zero(enable, threads):
    """The step FCs' weight gradients are summed after the gradient loop; our
    kernel writes them without zeroing them first. A backward run that fails
    in its loop never reaches the sums: those gradients are then zeros, not
    what their buffers held before (here NaN), and the next run is right."""
    lab = LabelRNN(N=3)
    lab.feed(9, 3)
    lab.create(enable, threads)
    ref = lab.run_good()
    grads = ["W_grad", "U_grad", "V_grad"]
    assert set(grads) <= set(lab.compare)
    calls = _C.get_flag("packed_wgrad_calls")
    for g in grads:
        workspace.FeedBlob(g, np.full(ref[g].shape, np.nan, np.float32))
    lab.fail("backward", [(4, 0)], 5)
    assert _C.get_flag("packed_wgrad_calls") == calls  # no sum ran
    for g in grads:
        assert np.array_equal(workspace.FetchBlob(g), np.zeros_like(ref[g])), g
    assert_bitwise(ref, lab.run_good(), "after the failure")


def test_failure_with_changing_T_then_success():
    """A failure, then runs with other sequence lengths (the executor's graph
    is rebuilt), then a failure at the new T: all as the serial run."""
    lab = LabelRNN(N=2)
    serial = {}
    for enable, threads in ((0, None), (1, 3)):
        for i, T in enumerate((9, 4, 12, 1, 9)):
            lab.feed(T, T)
            if i == 0:
                lab.create(enable, threads)
            out = lab.run_good()
            e1 = str(lab.fail("forward", [(T - 1, 1)], 5))
            e2 = str(lab.fail("backward", [(0, 0)], -1))
            assert "at timestep %d:" % (T - 1) in e1 and "at timestep 0:" in e2
            assert_bitwise(out, lab.run_good(), "T=%d" % T)
            got = (e1, e2, out)
            if enable == 0:
                serial[T] = got
            else:
                assert got[:2] == serial[T][:2]
                assert_bitwise(serial[T][2], out, "T=%d serial vs executor" % T)


def test_failing_step_forward_only_rotating_workspaces():
    """Forward-only (rotating step workspaces, 1..3 of them): a failing
    timestep, the serial message, then correct runs."""
    T = 10
    lab = LabelRNN(N=2, name="fofail")
    # a forward-only copy of the forward net: no backward step net
    fo = core.Net("fofail_fo")
    fo.Proto().op.extend(copy.deepcopy(op) for op in lab.fwd.Proto().op)
    for op in rnn_ops(fo):
        set_arg(op, "backward_step_net", None)
    lab.feed(T, 8)
    configure(fo, 0)
    workspace.CreateNet(fo, overwrite=True)
    workspace.RunNet(fo)
    ref = {b: workspace.FetchBlob(b) for b in ("loss", "h_all", "acc_last")}
    bad_cases = [([(3, 1)], 9), ([(0, 0)], -1), ([(T - 1, 1)], 5), ([(8, 0), (5, 1)], 77)]
    serial = []
    for bad, value in bad_cases:
        lab.feed_labels(bad, value)
        with pytest.raises(IndexError) as ei:
            workspace.RunNet(fo)
        serial.append(str(ei.value))
    assert "at timestep 5:" in serial[-1]
    for nws in (1, 2, 3):
        for threads in (1, 2, 3):
            configure(fo, 1, threads, num_workspaces=nws)
            workspace.CreateNet(fo, overwrite=True)
            for (bad, value), msg in zip(bad_cases, serial):
                lab.feed_labels(bad, value)
                with pytest.raises(IndexError) as ei:
                    workspace.RunNet(fo)
                assert str(ei.value) == msg
                lab.feed_labels()
                workspace.RunNet(fo)
                got = {b: workspace.FetchBlob(b) for b in ref}
                assert_bitwise(ref, got, "nws=%d threads=%d" % (nws, threads))


# ================================================================ 5. trace
def step_op_types(net, backward):
    """The op types of the step net as the C op ran it (from the trace)."""
    (op,) = [o for o in proto_of(net).op if o.type == ("RecurrentNetworkGradient" if backward else
                                                       "RecurrentNetwork")]
    scratch = op.input[-1] if backward else op.output[-1]
    blob = "%s_%s_ops" % (scratch, "backward_trace" if backward else "trace")
    raw = bytes(workspace.FetchBlob(blob).astype(np.uint8).tolist())
    return [s.decode() for s in raw.split(b"\0")[:-1]]


def raw_events(net):
    """The trace records as the ops stored them ("<step_workspaces>_trace",
    int32 K x 5: timestep, step op, start_us, end_us, worker), decoded
    without trace.fetch (see test_trace_fetch_keeps_a_zero_time_event)."""
    events = []
    for idx, op in enumerate(proto_of(net).op):
        if op.type not in RNN_TYPES:
            continue
        backward = op.type == "RecurrentNetworkGradient"
        scratch = op.input[-1] if backward else op.output[-1]
        name = "%s_%s" % (scratch, "backward_trace" if backward else "trace")
        if not workspace.HasBlob(name):
            continue
        types = step_op_types(net, backward)
        for blob, part in ((name, False), (name + "_parts", True)):  # tasks, then helped parts
            for t, j, s, e, w in workspace.FetchBlob(blob).tolist():
                events.append(dict(op_index=idx, direction="backward" if backward else "forward", timestep=t,
                                   step_op=j, type=types[j] if j >= 0 else "set_timestep", start_us=s,
                                   end_us=e, worker=w, part=part))
    return events


def check_fetch(net):
    """trace.fetch(net) returns every stored record, an all-zero one (an op
    of timestep 0 that took under a microsecond) included; see
    test_trace_fetch_keeps_a_zero_time_event."""
    raw = raw_events(net)
    assert trace.fetch(net) == raw
    return raw


def check_trace(case, events, T, executor):
    """Every (timestep, step op) exactly once per direction, start <= end;
    serial: worker 0 only, in serial order, no overlap; executor: one
    set_timestep event per timestep and the recurrence respected."""
    (fop,) = [o for o in case.net.Proto().op if o.type == "RecurrentNetwork"]
    fargs = {a.name: a.value() for a in fop.arg}
    fwd_types = step_op_types(case.net, False)
    assert fwd_types == (["rnn_internal_apply_link"] * len(fargs["link_internal"])
                         + [o.type for o in fargs["step_net"].op])
    bwd_types = step_op_types(case.net, True)
    bsteps = [o.type for o in fargs["backward_step_net"].op]
    it = iter(bwd_types)
    assert all(t in it for t in bsteps), "backward step ops %r not in order in %r" % (bsteps, bwd_types)
    for direction, types in (("forward", fwd_types), ("backward", bwd_types)):
        evs = [e for e in events if e["direction"] == direction and not e["part"]]  # the tasks
        ops = [e for e in evs if e["step_op"] >= 0]
        seen = sorted((e["timestep"], e["step_op"]) for e in ops)
        assert seen == [(t, j) for t in range(T) for j in range(len(types))], direction
        for e in evs:
            assert 0 <= e["start_us"] <= e["end_us"], e
            if e["step_op"] >= 0:
                assert e["type"] == types[e["step_op"]]
        pro = [e for e in evs if e["step_op"] == -1]
        if not executor:
            assert pro == [] and {e["worker"] for e in evs} == {0}
            order = sorted(ops, key=lambda e: (e["start_us"], e["end_us"]))
            keys = [(e["timestep"], e["step_op"]) for e in order]
            ts = range(T) if direction == "forward" else range(T - 1, -1, -1)
            expected = [(t, j) for t in ts for j in range(len(types))]
            # (start, end) sorts the serial chain a.start <= a.end <= b.start <= ...; ties keep record order
            assert keys == expected, direction
            for a, b in zip(order, order[1:]):
                assert a["end_us"] <= b["start_us"] or a["start_us"] == a["end_us"] == b["start_us"], (a, b)
        else:
            assert sorted(e["timestep"] for e in pro) == list(range(T))
            assert all(e["type"] == "set_timestep" for e in pro)
            # the recurrence: each LSTMUnit(Gradient) instance starts after
            # the same op of the previous step (in the run's direction) ended
            unit = "LSTMUnit" if direction == "forward" else "LSTMUnitGradient"
            by = {(e["timestep"], e["step_op"]): e for e in ops}
            for j, ty in enumerate(types):
                if ty != unit:
                    continue
                for t in range(1, T):
                    prev, cur = (t - 1, t) if direction == "forward" else (t, t - 1)
                    assert by[cur, j]["start_us"] >= by[prev, j]["end_us"], (direction, j, t)
    return events


@pytest.mark.parametrize("layers,T", [(1, 1), (4, 7)])
def test_trace_serial_path(layers, T):
    case = build_stack("lstm", layers=layers, name="ts%d" % T)
    case.feed(T, 2)
    case.create(0)
    with trace.tracing():
        case.run_created()
    check_trace(case, check_fetch(case.net), T, executor=False)


@pytest.mark.parametrize("T", (1, 7, 50))
def test_trace_executor(T, tmp_path):
    case = build_stack("lstm", layers=4, name="te%d" % T)
    case.feed(T, 2)
    case.create(1, threads=3)
    assert not _C.get_flag("rnn_executor_trace")
    with trace.tracing():
        assert _C.get_flag("rnn_executor_trace")
        case.run_created()
    assert not _C.get_flag("rnn_executor_trace")
    events = check_trace(case, check_fetch(case.net), T, executor=True)
    ct = json.loads(json.dumps(trace.to_chrome_trace(events)))
    assert len(ct["traceEvents"]) == len(events)
    workers = {e["worker"] for e in events}
    for ev in ct["traceEvents"]:
        assert ev["ph"] == "X" and ev["dur"] >= 0 and ev["ts"] >= 0 and ev["tid"] in workers
        assert ev["cat"] in ("forward", "backward") and "t=" in ev["name"]
    path = trace.save_chrome_trace(events, str(tmp_path / "trace.json"))
    with open(path) as f:
        assert json.load(f) == ct
    s = trace.summary(events)
    assert sorted(k[1] for k in s) == ["backward", "forward"]


def test_trace_uses_several_workers():
    """T=50, 4 layers, 2 and 4 threads: the wavefront runs on more than one
    worker (retried a few times: a loaded machine may starve the workers)."""
    case = build_stack("lstm", layers=4, name="tw")
    case.feed(50, 2)
    for threads in (2, 4):
        case.create(1, threads=threads)
        seen = set()
        for _ in range(10):
            with trace.tracing():
                case.run_created()
            events = trace.fetch(case.net)
            seen |= {e["worker"] for e in events}
            if len(seen) > 1:
                break
        assert len(seen) > 1 and seen <= set(range(threads)), (threads, seen)


def test_trace_off_records_nothing_new():
    case = build_stack("lstm", layers=2, name="toff")
    case.feed(5, 2)
    case.create(1, threads=2)
    case.run_created()
    assert trace.fetch(case.net) == []
    with trace.tracing():
        case.run_created()
    n = len(trace.fetch(case.net))
    assert n > 0
    case.feed(3, 2)
    case.run_created()  # not traced: the blobs keep the last traced run
    assert len(trace.fetch(case.net)) == n


def test_plot_timeline_png(tmp_path):
    pytest.importorskip("matplotlib")
    case = build_stack("lstm", layers=2, name="tp")
    case.feed(5, 2)
    case.create(1, threads=2)
    with trace.tracing():
        case.run_created()
    events = trace.fetch(case.net)
    path = tmp_path / "timeline.png"
    fig = trace.plot_timeline(events, str(path))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 1000
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_trace_fetch_keeps_a_zero_time_event():
    """Deterministic: the trace blobs of a traced serial run with the first
    record set to (0, 0, 0, 0, 0), as the serial path writes it when the op
    took under a microsecond."""
    case = build_stack("lstm", layers=1, name="tz")
    case.feed(2, 2)
    case.create(0)
    with trace.tracing():
        case.run_created()
    (op,) = [o for o in case.net.Proto().op if o.type == "RecurrentNetwork"]
    name = op.output[-1] + "_trace"
    rec = workspace.FetchBlob(name)
    assert tuple(rec[0, :2]) == (0, 0)  # timestep 0, step op 0 comes first in the serial path
    rec[0] = 0
    workspace.FeedBlob(name, rec)
    fwd = [e for e in trace.fetch(case.net) if e["direction"] == "forward"]
    assert len(fwd) == len(rec)
    assert (fwd[0]["timestep"], fwd[0]["step_op"], fwd[0]["start_us"], fwd[0]["end_us"]) == (0, 0, 0, 0)
