"""The bad-input catalogue (docs/errors.md): every way we know to feed bad data
to the API, the exception it gets and its message.

Each case runs in a child Python process, so a crash (segfault, abort, a
sanitizer report) is seen as a crash and not as a dead test runner. Cases are
batched (a dozen per child) to keep the file fast; when a child dies, the
cases it did not report are rerun one per child so the crashing case is named.
After every case the child checks that the workspace is still usable: it runs
a small valid FC net in the same workspace (and, where a case gives one, the
case's own ``after`` code, e.g. the same net again with the input fixed).

docs/errors.md is generated from CASES:
    python tests/test_bad_input_catalogue.py --markdown > docs/errors.md
and a test checks that every case is in it.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(os.path.dirname(HERE), "docs", "errors.md")
BATCH = 12
TIMEOUT = 120


class Case:
    def __init__(self, id, area, call, code, exc, match, after=None, note=""):
        self.id, self.area, self.call, self.code = id, area, call, textwrap.dedent(code).strip()
        self.exc, self.match, self.note = exc, match, note
        self.after = after and textwrap.dedent(after).strip()


# ---------------------------------------------------------------- helpers available to every case
PRELUDE = r'''
import json, os, re, signal, sys, threading, time, traceback
import numpy as np
from recurrent import core, workspace, rnn_cell, text_format
from recurrent import recurrent as rnn
from recurrent.model_helper import ModelHelper
from recurrent.proto import make_argument

def f32(*shape, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)

def feed(**blobs):
    for k, v in blobs.items():
        workspace.FeedBlob(k, v)

def run_op(type, ins, outs, **args):
    workspace.RunOperatorOnce(core.CreateOperator(type, ins, outs, **args))

def set_args(net, op_type="RecurrentNetwork", **kw):
    """Replaces (or with None: removes) arguments of the first op_type op of net."""
    for op in net.Proto().op:
        if op.type == op_type:
            for k, v in kw.items():
                k = k.replace("__", ".")
                op.arg[:] = [a for a in op.arg if a.name != k]
                if v is not None:
                    op.arg.append(make_argument(k, v))
            return op
    raise AssertionError("no %s op" % op_type)

T, N, D, H = 4, 2, 3, 5

_bg_gate = threading.Event()

def bg_plan_held():
    """A background plan whose net waits (in a Python op) until bg_release."""
    _bg_gate.clear()
    entered = threading.Event()
    def hold(inputs, outputs):
        entered.set()
        _bg_gate.wait(60)
    n = core.Net("bg_hold")
    n.Python(hold)([], [])
    bp = workspace.RunPlanInBackground(core.execution_step("held", n))
    assert entered.wait(60)
    return bp

def bg_release(bp):
    _bg_gate.set()
    assert bp.wait(60)

def lstm(grads=True, forward_only=False, executor=1, seq=True, name="m"):
    """A 1-layer rnn_cell.LSTM (T=4, N=2, D=3, H=5), params initialised, inputs
    fed; with grads, the gradient ops and g_all (the gradient of the output
    sequence) too. Returns (model, outputs, grad map)."""
    m = ModelHelper(name=name)
    res = rnn_cell.LSTM(m, "x", "seq" if seq else None, ["h0", "c0"], D, H, scope="l",
                        forward_only=forward_only)
    workspace.RunNetOnce(m.param_init_net)
    feed(x=f32(T, N, D), seq=np.full(N, T, np.int32), h0=f32(1, N, H, seed=1), c0=f32(1, N, H, seed=2))
    gm = None
    if grads:
        gm = m.AddGradientOperators({str(res[0]): "g_all"})
        feed(g_all=f32(T, N, H, seed=3))
    for op in m.net.Proto().op:
        if op.type.startswith("RecurrentNetwork"):
            set_args(m.net, op.type, enable_rnn_executor=executor)
    return m, res, gm

def mul_rnn(forward_only=False, executor=1, owg=(0,), **args):
    """recurrent_net over the cell o_t = input_t * o_{t-1} (input 3x2x4, init 2x4),
    with RecurrentNetwork arguments replaced by **args. Returns (net, outputs)."""
    net = core.Net("outer")
    cell = core.Net("cell")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    cell.AddExternalOutput(out)
    outs = rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="rnn",
                             forward_only=forward_only, outputs_with_grads=owg)
    feed(input=f32(3, 2, 4), init=f32(2, 4, seed=1))
    set_args(net, enable_rnn_executor=executor, **args)
    return net, outs

def long_lstm_net():
    """A created LSTM training net (T=50) and the seconds one run takes."""
    m = ModelHelper(name="long")
    res = rnn_cell.LSTM(m, "lx", "lseq", ["lh0", "lc0"], 8, 16, scope="long")
    workspace.RunNetOnce(m.param_init_net)
    feed(lx=f32(50, 4, 8), lseq=np.full(4, 50, np.int32), lh0=f32(1, 4, 16), lc0=f32(1, 4, 16))
    m.AddGradientOperators({str(res[0]): "lg"})
    feed(lg=f32(50, 4, 16))
    workspace.CreateNet(m.net)
    t0 = time.time()
    workspace.RunNet(m.net, 3)
    return m.net, (time.time() - t0) / 3

def busy_while_running(call):
    """Runs ``call`` in a second thread while the main thread runs a long net in
    the same workspace (stopped with SIGINT afterwards); re-raises what
    ``call`` raised."""
    net, per_run = long_lstm_net()
    box = {}
    def helper():
        # wait until the main thread's RunNet holds the workspace (HasBlob then raises "busy"): it
        # installs its SIGINT guard before it lets go of the GIL, so the SIGINT below always stops
        # the run (a fixed sleep lost that race on a loaded machine, and the run went on)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                workspace.HasBlob("lx")
            except RuntimeError:
                break
            time.sleep(0.01)
        try:
            call()
        except BaseException as e:
            box["e"] = e
        finally:
            os.kill(os.getpid(), signal.SIGINT)
    th = threading.Thread(target=helper)
    th.start()
    try:
        workspace.RunNet(net, 10**9)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the long run ended by itself")
    th.join()
    if "e" in box:
        raise box["e"]

_usable_count = [0]
def check_usable():
    """A small valid net in the current workspace gives the NumPy result."""
    _usable_count[0] += 1
    k = _usable_count[0]
    x, w, b = f32(3, 4, seed=k), f32(2, 4, seed=k + 1), f32(2, seed=k + 2)
    feed(**{"ok_x": x, "ok_w": w, "ok_b": b})
    n = core.Net("usable_%d" % k)
    n.FC(["ok_x", "ok_w", "ok_b"], "ok_y")
    n.Sigmoid("ok_y", "ok_s")
    workspace.RunNetOnce(n)
    ref = 1 / (1 + np.exp(-(x.astype(np.float64) @ w.T + b)))
    np.testing.assert_allclose(workspace.FetchBlob("ok_s"), ref, rtol=1e-5, atol=1e-6)
'''

RUNNER = PRELUDE + r'''
def main():
    # Ctrl-C raises KeyboardInterrupt even when this child inherited SIGINT ignored (a shell's
    # background job): the signal cases stop their long runs with SIGINT
    signal.signal(signal.SIGINT, signal.default_int_handler)
    cases = json.load(sys.stdin)
    for c in cases:
        workspace.SwitchWorkspace("default", True)
        workspace.ResetWorkspace()
        ns = dict(globals())
        res = {"id": c["id"], "exc": None, "msg": "", "usable": False, "problem": ""}
        try:
            exec(c["code"], ns)
        except BaseException as e:
            res["exc"], res["msg"] = type(e).__name__, str(e) if not isinstance(e, KeyError) else e.args[0]
            res["tb"] = traceback.format_exc()[-1500:]
        try:
            check_usable()
            if c["after"]:
                exec(c["after"], ns)
            res["usable"] = True
        except BaseException:
            res["problem"] = traceback.format_exc()[-1500:]
        print("RESULT " + json.dumps(res), flush=True)

main()
'''


def _env():
    """The children import the same recurrent package as this process."""
    import recurrent
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_cases(cases, timeout=TIMEOUT):
    """Runs cases in one child; returns ({id: result}, returncode, stderr tail)."""
    payload = json.dumps([{"id": c.id, "code": c.code, "after": c.after} for c in cases])
    try:
        p = subprocess.run([sys.executable, "-c", RUNNER], input=payload, capture_output=True, text=True,
                           timeout=timeout, env=_env())
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = "timed out after %d s" % timeout, "timeout"
    results = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            results[r["id"]] = r
    return results, rc, err[-3000:]


def run_all(cases):
    """Results for every case; a case a dead child did not report is rerun alone
    and, if that child dies too, reported as a crash."""
    batches = [cases[i:i + BATCH] for i in range(0, len(cases), BATCH)]
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        outs = list(pool.map(run_cases, batches))
    results = {}
    for batch, (res, rc, err) in zip(batches, outs):
        results.update(res)
        for c in batch:
            if c.id in results:
                continue
            r1, rc1, err1 = run_cases([c])
            results[c.id] = r1.get(c.id) or {"id": c.id, "crash": True, "rc": rc1, "stderr": err1}
    return results


# ================================================================ the catalogue
V, T_, K, I, M, R, KI = "ValueError", "TypeError", "KeyError", "IndexError", "MemoryError", "RuntimeError", \
    "KeyboardInterrupt"
CASES = [
    # ---------------------------------------------------------------- FeedBlob / FetchBlob
    Case("feed-complex-dtype", "blobs", "FeedBlob('a', np.ones(3, np.complex64))",
         "workspace.FeedBlob('a', np.ones(3, np.complex64))",
         T_, r"FeedBlob 'a': unsupported dtype complex64"),
    Case("feed-object-array", "blobs", "FeedBlob('a', np.array(['s', None], object))",
         "workspace.FeedBlob('a', np.array(['s', None], object))", T_, r"unsupported dtype object"),
    Case("feed-string-array", "blobs", "FeedBlob('a', np.array(['x', 'y']))",
         "workspace.FeedBlob('a', np.array(['x', 'y']))", T_, r"unsupported dtype <U1"),
    Case("feed-int64-overflow", "blobs", "FeedBlob('a', np.array([2**40]))",
         "workspace.FeedBlob('a', np.array([2**40]))", V, r"FeedBlob 'a': integer values do not fit in int32",
         note="int64/uint64/int16/... and bool are converted to int32 when every value fits"),
    Case("feed-float64-overflow", "blobs", "FeedBlob('a', np.array([1.0, 1e39]))",
         "workspace.FeedBlob('a', np.array([1.0, 1e39]))", V,
         r"FeedBlob 'a': float64 value 1e\+39 at flat position 1 is outside float32's range \(it would "
         r"become inf\)", note="Before, it became inf silently; inf and NaN are still fed as they are"),
    Case("feed-uint64-overflow", "blobs", "FeedBlob('a', np.array([2**63], np.uint64))",
         "workspace.FeedBlob('a', np.array([2**63], np.uint64))", V, r"do not fit in int32"),
    Case("feed-too-many-dims", "blobs", "FeedBlob('a', np.ones((1,) * 9, np.float32))",
         "workspace.FeedBlob('a', np.ones((1,) * 9, np.float32))",
         V, r"FeedBlob 'a': 9 dims, at most 8 supported"),
    Case("feed-bad-name", "blobs", "FeedBlob(3, x)", "workspace.FeedBlob(3, f32(2))", T_,
         r"blob name must be a str or BlobReference, got int"),
    Case("feed-ragged-list", "blobs", "FeedBlob('a', [[1, 2], [3]])",
         "workspace.FeedBlob('a', [[1, 2], [3]])",
         V, r"inhomogeneous",
         note="NumPy's own message (np.asarray fails)"),
    Case("feed-huge", "blobs", "FeedBlob('a', np.broadcast_to(np.float32(0), (2**40,)))",
         "workspace.FeedBlob('a', np.broadcast_to(np.float32(0), (2**40,)))",
         M, r"Unable to allocate 4.00 TiB",
         note="the C-contiguous copy of a 4 TiB view fails in NumPy"),
    Case("feed-float64", "blobs", "FeedBlob('a', np.arange(3.0))",
         """
         workspace.FeedBlob('a', np.arange(3.0) / 3)
         a = workspace.FetchBlob('a')
         assert a.dtype == np.float32 and np.allclose(a, np.arange(3.0) / 3)
         """,
         None, "",
         note="no error: float64/float16/longdouble are converted to float32 (documented rule)"),
    Case("feed-int64-bool", "blobs", "FeedBlob('a', np.arange(3)); FeedBlob('b', np.array([True, False]))",
         """
         workspace.FeedBlob('a', np.arange(3)); workspace.FeedBlob('b', np.array([True, False]))
         a, b = workspace.FetchBlob('a'), workspace.FetchBlob('b')
         assert a.dtype == b.dtype == np.int32 and a.tolist() == [0, 1, 2] and b.tolist() == [1, 0]
         """, None, "", note="no error: integer and bool arrays whose values fit are converted to int32"),
    Case("feed-non-contiguous", "blobs", "FeedBlob('w', w_big[:, ::2])",
         """
         big = f32(2, 8)
         feed(x=f32(3, 4), w=big[:, ::2], b=f32(2))
         run_op('FC', ['x', 'w', 'b'], 'y')
         np.testing.assert_allclose(workspace.FetchBlob('y'), f32(3, 4) @ big[:, ::2].T + f32(2), rtol=1e-5)
         """, None, "", note="no error: a strided view is copied into a C-contiguous blob"),
    Case("feed-fortran-order", "blobs", "FeedBlob('w', np.asfortranarray(w))",
         """
         w = f32(2, 4)
         feed(x=f32(3, 4), w=np.asfortranarray(w), b=f32(2))
         run_op('FC', ['x', 'w', 'b'], 'y')
         np.testing.assert_allclose(workspace.FetchBlob('y'), f32(3, 4) @ w.T + f32(2), rtol=1e-5)
         """, None, "", note="no error: copied in C order, values unchanged"),
    Case("feed-read-only", "blobs", "FeedBlob('a', read_only_array); ops write 'a' in place",
         """
         a = f32(3, 4); a.setflags(write=False); keep = a.copy()
         workspace.FeedBlob('a', a)
         run_op('Scale', 'a', 'a', scale=2.0)
         assert np.array_equal(a, keep)
         np.testing.assert_allclose(workspace.FetchBlob('a'), 2 * keep)
         """, None, "", note="no error: FeedBlob copies, so ops never write into the caller's array"),
    Case("feed-into-step-workspaces", "blobs", "FeedBlob('l/step_workspaces', x) after a run",
         """
         m, res, gm = lstm()
         workspace.RunNetOnce(m.net)
         workspace.FeedBlob('l/step_workspaces', f32(2))
         """,
         T_, r"FeedBlob 'l/step_workspaces': blob holds a RecurrentNetwork step workspaces, not a tensor"),
    Case("fetch-missing", "blobs", "FetchBlob('nope')", "workspace.FetchBlob('nope')", K,
         r"blob 'nope' does not exist in the workspace"),
    Case("switch-missing-workspace", "workspace", "SwitchWorkspace('nope')",
         "workspace.SwitchWorkspace('nope')",
         K, r"workspace 'nope' does not exist \(pass create_if_missing=True\)"),
    Case("reset-blob-missing", "workspace", "ResetBlob('nope')", "workspace.ResetBlob('nope')",
         K, r"ResetBlob: blob 'nope' does not exist"),
    Case("reset-blob-object", "workspace", "ResetBlob of a Mutex blob",
         "run_op('CreateMutex', [], ['m']); workspace.ResetBlob('m')",
         T_, r"ResetBlob: blob 'm' holds a Mutex, not a tensor",
         note="nets keep pointers to such objects; ResetWorkspace frees them"),
    Case("reset-workspace-empty-root", "workspace", "ResetWorkspace('')", "workspace.ResetWorkspace('')",
         V, r"ResetWorkspace: root_folder must not be empty"),
    Case("reset-workspace-root-with-nul", "workspace", "ResetWorkspace('a\\x00b')",
         "feed(x=f32(2)); workspace.ResetWorkspace('a\\x00b')",
         V, r"^root folder: 'a\\x00b' contains a NUL character, which this runtime does not take in names and "
            r"string arguments$",
         after="assert workspace.HasBlob('x') and workspace.RootFolder() == '.'",
         note="was os.makedirs's own 'embedded null byte'; nothing changes (blobs, nets, root folder)"),
    Case("reset-workspace-root-not-utf8", "workspace", "ResetWorkspace(b'r\\xff')",
         "feed(x=f32(2)); workspace.ResetWorkspace(b'r\\xff')",
         V, r"^root folder: 'r\\udcff' is not valid UTF-8 \(it holds a lone surrogate",
         after="assert workspace.HasBlob('x') and workspace.RootFolder() == '.'",
         note="was a UnicodeEncodeError after the workspace was emptied and the folder made"),
    Case("feed-blob-name-not-utf8", "workspace", "FeedBlob('a\\udcff', x)",
         "workspace.FeedBlob('a\\udcff', f32(2))",
         V, r"^blob name: 'a\\udcff' is not valid UTF-8 \(it holds a lone surrogate",
         after="workspace.FeedBlob('a', f32(2))",
         note="was a bare UnicodeEncodeError; every name and string argument says the same"),
    Case("feed-blob-name-with-nul", "workspace", "FeedBlob('a\\x00b', x)",
         "workspace.FeedBlob('a\\x00b', f32(2))",
         V, r"^blob name: 'a\\x00b' contains a NUL character, which this runtime does not take in names and "
            r"string arguments$",
         after="assert not workspace.HasBlob('a'); workspace.FeedBlob('a', f32(2))",
         note="CPython's own message named neither argument nor name; the core would cut the name at the NUL"),
    Case("fetch-blob-name-with-nul", "workspace", "FetchBlob('a\\x00b')",
         "feed(a=f32(2)); workspace.FetchBlob('a\\x00b')",
         V, r"^blob name: 'a\\x00b' contains a NUL character", after="workspace.FetchBlob('a')",
         note="HasBlob, CreateBlob and ResetBlob say the same"),
    Case("run-net-name-with-nul", "workspace", "RunNet('n\\x00x')",
         """
         n = core.Net('n'); n.ConstantFill([], 'y', shape=[2], value=1.0); workspace.CreateNet(n)
         workspace.RunNet('n\\x00x')
         """, V, r"^net name: 'n\\x00x' contains a NUL character", after="workspace.RunNet(n)",
         note="DeleteNet and BenchmarkNet say the same"),
    Case("benchmark-net-zero-runs", "workspace", "BenchmarkNet(name, 0, 0, False)",
         """
         n = core.Net('bz'); n.ConstantFill([], 'y', shape=[2], value=1.0)
         workspace.CreateNet(n)
         workspace.BenchmarkNet('bz', 0, 0, False)
         """,
         V, r"BenchmarkNet 'bz': warmup_runs must be >= 0 and main_runs >= 1, got 0 and 0",
         note="Caffe2 divided by zero"),
    Case("benchmark-net-missing", "workspace", "BenchmarkNet('nope', 1, 1, True)",
         "workspace.BenchmarkNet('nope', 1, 1, True)", K, r"net 'nope' does not exist in the workspace"),
    Case("plan-background-net-call", "workspace", "RunNetOnce(net) while RunPlanInBackground runs",
         """
         bp = bg_plan_held()
         try:
             n = core.Net('other')
             n.ConstantFill([], 'z', shape=[1], value=1.0)
             workspace.RunNetOnce(n)
         finally:
             bg_release(bp)
         """,
         R, r"workspace is busy: a plan runs in it in the background \(RunPlanInBackground\)",
         note="blob calls wait for the plan's running net instead; the workspace is the caller's again "
              "once the plan ends"),
    Case("plan-background-second", "workspace", "RunPlanInBackground(plan) while another runs there",
         """
         bp = bg_plan_held()
         try:
             workspace.RunPlanInBackground(core.Plan('second'))
         finally:
             bg_release(bp)
         """,
         R, r"a plan runs in it in the background already"),
    Case("plan-background-early-result", "workspace", "BackgroundPlan.is_succeeded() while it runs",
         """
         bp = bg_plan_held()
         try:
             bp.is_succeeded()
         finally:
             bg_release(bp)
         """,
         R, r"is_succeeded\(\) before the plan ended", note="as Caffe2's"),
    Case("plan-background-not-a-plan", "workspace", "RunPlanInBackground('plan')",
         "workspace.RunPlanInBackground('plan')", T_, r"RunPlan expects a core.Plan"),
    Case("operator-cost-no-function", "workspace", "GetOperatorCost(Sigmoid op, ['x'])",
         """
         feed(x=f32(3))
         workspace.GetOperatorCost(core.CreateOperator('Sigmoid', ['x'], ['y']), ['x'])
         """,
         R, r"GetOperatorCost: op type 'Sigmoid' has no cost inference function",
         note="as Caffe2's \"Cost inference function not defined\"; the README lists the op types with one"),
    Case("operator-cost-unknown-type", "workspace", "GetOperatorCost(op of an unregistered type, ...)",
         """
         feed(x=f32(3))
         workspace.GetOperatorCost(core.CreateOperator('NoSuchOp', ['x'], ['y']), ['x'])
         """,
         K, r"GetOperatorCost: operator type 'NoSuchOp' is not registered"),
    Case("operator-cost-missing-blob", "workspace", "GetOperatorCost(Add op, ['a', 'missing'])",
         """
         feed(a=f32(3))
         workspace.GetOperatorCost(core.CreateOperator('Add', ['a', 'b'], ['c']), ['a', 'b'])
         """,
         K, r"GetOperatorCost: blob 'b' does not exist in workspace 'default'"),
    Case("operator-cost-not-a-tensor", "workspace", "GetOperatorCost(Add op, [tensor, empty blob])",
         """
         feed(a=f32(3))
         workspace.CreateBlob('b')
         workspace.GetOperatorCost(core.CreateOperator('Add', ['a', 'b'], ['c']), ['a', 'b'])
         """,
         T_, r"GetOperatorCost: blob 'b' holds no tensor"),
    Case("operator-cost-blob-count", "workspace", "GetOperatorCost(Add op, ['a'])",
         """
         feed(a=f32(3))
         workspace.GetOperatorCost(core.CreateOperator('Add', ['a', 'b'], ['c']), ['a'])
         """,
         V, r"GetOperatorCost: op Add has 2 inputs \['a', 'b'\] but 1 blobs were given \['a'\]"),
    Case("operator-cost-refused-shapes", "workspace", "GetOperatorCost(FC op, shapes FC refuses)",
         """
         feed(x=f32(4, 3), w=f32(5, 2), b=f32(5))
         workspace.GetOperatorCost(core.CreateOperator('FC', ['x', 'w', 'b'], ['y']), ['x', 'w', 'b'])
         """,
         V, r"GetOperatorCost: op FC refuses its inputs x \[4, 3\], w \[5, 2\], b \[5\]",
         note="Caffe2 computed a cost for any shapes; here the inputs must be ones the op takes"),
    Case("fill-random-inputs-count", "workspace",
         "FillRandomNetworkInputs(Concat of X0, X1, X2 net, one dims)",
         """
         net = core.Net('fill')
         net.Concat(['X0', 'X1', 'X2'], ['c', 's'])
         workspace.FillRandomNetworkInputs(net, [[(30, 20)]], [['float']])
         """,
         V, r"FillRandomNetworkInputs: op #0 Concat has 3 \(required\) inputs \['X0', 'X1', 'X2'\] but "
            r"input_dims\[0\] has 1 entries",
         after="assert not workspace.HasBlob('X0')",
         note="also a RuntimeError, as Caffe2's test_filler expects; nothing is written"),
    Case("fill-random-inputs-op-count", "workspace", "FillRandomNetworkInputs(1-op net, two entries)",
         """
         net = core.Net('fill')
         net.Relu('x', 'y')
         workspace.FillRandomNetworkInputs(net, [[(2,)], [(2,)]], [['float'], ['float']])
         """,
         V, r"FillRandomNetworkInputs: input_dims has 2 entries but net 'fill\w*' has 1 ops with inputs "
            r"that no op of the net writes, one entry each: #0 Relu \(x\)"),
    Case("fill-random-inputs-unstorable-type", "workspace", "FillRandomNetworkInputs(..., [['double']])",
         """
         net = core.Net('fill')
         net.Relu('x', 'y')
         workspace.FillRandomNetworkInputs(net, [[(2,)]], [['double']])
         """,
         T_, r"FillRandomNetworkInputs: blob 'x' \(input_types\[0\]\[0\], op #0 Relu input 0\): "
             r"type 'double' cannot be stored here: blobs are float32 \('float'\) or int32 "
             r"\('int32_t' or 'int'\)",
         note="Caffe2 also took int64_t, uint8_t, int8_t, int16_t, uint16_t, bool"),
    Case("fill-random-inputs-unknown-type", "workspace", "FillRandomNetworkInputs(..., [['half']])",
         """
         net = core.Net('fill')
         net.Relu('x', 'y')
         workspace.FillRandomNetworkInputs(net, [[(2,)]], [['half']])
         """,
         V, r"FillRandomNetworkInputs: blob 'x' \(input_types\[0\]\[0\], op #0 Relu input 0\): filler does "
            r"not support type half",
         note="Caffe2's std::invalid_argument"),
    Case("fill-random-inputs-negative-dim", "workspace", "FillRandomNetworkInputs(..., [[(2, -1)]], ...)",
         """
         net = core.Net('fill')
         net.Relu('x', 'y')
         workspace.FillRandomNetworkInputs(net, [[(2, -1)]], [['float']])
         """,
         V, r"FillRandomNetworkInputs: input_dims\[0\]\[0\] \(op #0 Relu input 0 'x'\) has a negative "
            r"dimension: \[2, -1\]"),
    Case("fill-random-inputs-nesting", "workspace", "FillRandomNetworkInputs(..., [[2, 3]], ...)",
         """
         net = core.Net('fill')
         net.Concat(['a', 'b'], ['c', 's'])
         workspace.FillRandomNetworkInputs(net, [[2, 3]], [['float', 'float']])
         """,
         T_, r"FillRandomNetworkInputs: input_dims\[0\]\[0\] \(op #0 Concat input 0 'a'\) must be a list, "
             r"got int"),
    Case("fill-random-inputs-disallowed", "workspace", "FillRandomNetworkInputs(LengthsSum net, ...)",
         """
         net = core.Net('fill')
         net.LengthsSum(['d', 'l'], 'o')
         workspace.FillRandomNetworkInputs(net, [[(4, 2), (2,)]], [['float', 'int']])
         """,
         V, r"FillRandomNetworkInputs: op #0 LengthsSum: LengthsSum does not have input fillers",
         note="the op types whose Caffe2 schema had DisallowInputFillers (README)"),
    Case("fill-random-inputs-empty", "workspace", "FillRandomNetworkInputs(net of ConstantFill only, [], [])",
         """
         net = core.Net('fill')
         net.ConstantFill([], 'c', shape=[2])
         workspace.FillRandomNetworkInputs(net, [], [])
         """,
         V, r"FillRandomNetworkInputs: Empty input for run net: no op of net 'fill\w*' reads a blob that "
            r"no op of the net writes"),
    Case("fill-random-inputs-lengths-for-keys", "workspace",
         "FillRandomNetworkInputs(SparseLengthsSum net, 6 keys, 0 lengths)",
         """
         net = core.Net('fill')
         net.SparseLengthsSum(['data', 'idx', 'len'], 'o')
         workspace.FillRandomNetworkInputs(net, [[(4, 2), (6,), (0,)]], [['float', 'int', 'int']])
         """,
         V, r"FillRandomNetworkInputs: op #0 SparseLengthsSum: the lengths 'len' must add up to 6 \(the keys "
            r"'idx'\), but it has no elements",
         after="assert not workspace.HasBlob('data')"),
    Case("fill-random-inputs-object-blob", "workspace",
         "FillRandomNetworkInputs(net reading a Mutex blob, ...)",
         """
         run_op('CreateMutex', [], ['m'])
         net = core.Net('fill')
         net.Concat(['x', 'm'], ['c', 's'])
         workspace.FillRandomNetworkInputs(net, [[(2,), (2,)]], [['float', 'float']])
         """,
         T_, r"FillRandomNetworkInputs: blob 'm' holds an object "
             r"\(m, a C\+\+ native class of type Mutex\.\), not a tensor",
         after="assert not workspace.HasBlob('x')"),
    Case("run-operator-multiple-negative", "workspace", "RunOperatorMultiple(op, -1)",
         "workspace.RunOperatorMultiple(core.CreateOperator('Iter', [], ['it']), -1)",
         V, r"RunOperatorMultiple: num_runs must be >= 0, got -1"),
    Case("numa-node-empty-blob", "workspace", "GetBlobNUMANode of an empty tensor",
         "feed(e=np.zeros((0, 3), np.float32)); workspace.GetBlobNUMANode('e')",
         V, r"GetBlobNUMANode: blob 'e' is an empty tensor \(0, 3\): it has no data"),
    Case("predictor-too-many-inputs", "workspace", "Predictor(init, predict).run(3 arrays for 1 input)",
         """
         p = core.Net('pp'); p.Relu('x', 'y')
         workspace.Predictor(core.Net('pi'), p).run([f32(2)] * 3)
         """,
         V, r"Predictor.run: 3 inputs for a net with 1 external inputs \['x'\]"),
    Case("predictor-not-an-array", "workspace", "Predictor(...).run([[1.0, 2.0]])",
         """
         p = core.Net('pp'); p.Relu('x', 'y')
         workspace.Predictor(core.Net('pi'), p).run([[1.0, 2.0]])
         """,
         T_, r"Predictor.run: input 'x' must be a NumPy array, got list"),
    # ---------------------------------------------------------------- nets and workspace calls
    Case("net-type-unknown", "nets", "CreateNet of a net whose Proto().type is 'bogus'",
         """
         n = core.Net('nt'); n.ConstantFill([], 'y', shape=[2], value=1.0)
         n.Proto().type = 'bogus'
         workspace.CreateNet(n)
         """, V, r"net 'nt(_\d+)?': net type 'bogus' is not one Caffe2 registered \(its CreateNet failed "
                 r"too: \"Maybe net type: \[bogus\] does not exist\"\); the accepted types are \"\" "
                 r"\(simple\), simple, dag, async_scheduling, async_dag, async_polling, async_simple, "
                 r"prof_dag, parallel, simple_refcount, rnn; every one runs its ops in order here",
         after="n.Proto().type = 'dag'; workspace.RunNetOnce(n)"),
    Case("net-type-step-net", "nets", "recurrent_net whose step net's type is 'bogus'",
         """
         cell = core.Net('cell')
         x_t, prev = cell.AddExternalInputs('x_t', 'prev')
         o = cell.Sum([x_t, prev], 'o')
         cell.AddExternalOutput(o)
         net = core.Net('outer')
         rnn.recurrent_net(net, cell, [(x_t, 'x')], [(prev, 'init')], {prev: o}, scope='r', forward_only=True)
         [a for a in net.Proto().op[-1].arg if a.name == 'step_net'][0].n.type = 'bogus'
         feed(x=f32(3, 2, 4), init=f32(2, 4))
         workspace.CreateNet(net)
         """, V, r"op RecurrentNetwork #\d+: the forward step net '[^']*': net type 'bogus' is not one "
                 r"Caffe2 registered"),
    Case("create-net-twice", "nets", "CreateNet(net); CreateNet(net)",
         """
         feed(x=f32(3, 4), w=f32(2, 4), b=f32(2))
         n = core.Net('n'); n.FC(['x', 'w', 'b'], 'y')
         workspace.CreateNet(n)
         workspace.CreateNet(n)
         """,
         R, r"CreateNet: a net named 'n(_\d+)?' already exists in this workspace \(pass overwrite=True\)",
         after="workspace.CreateNet(n, overwrite=True); workspace.RunNet(n)"),
    Case("blob-name-with-nul", "nets", "an op whose output name holds a NUL character",
         """
         n = core.Net('nul'); n.ConstantFill([], 'y\\x00z', shape=[2], value=1.0)
         workspace.RunNetOnce(n)
         """, V, r"net 'nul(_\d+)?': op #0 \(ConstantFill\): op outputs: 'y\\x00z' contains a NUL character, "
                 r"which this runtime does not take in names and string arguments",
         after="assert not workspace.HasBlob('y'); n.Proto().op[0].output[0] = 'y'; workspace.RunNetOnce(n)",
         note="The core keeps names as C strings: Caffe2 took the name whole, and before this check "
              "the op wrote blob 'y' (a name cut at the NUL)."),
    Case("op-string-arg-with-nul", "nets", "RunOperatorOnce of an op whose string argument holds a NUL",
         """
         feed(x=f32(2))
         run_op('Save', ['x'], [], db='a\\x00b', db_type='minidb')
         """, V, r"op Save: string argument: 'a\\x00b' contains a NUL character, which this runtime does "
                 r"not take in names and string arguments"),
    Case("run-net-negative-iters", "nets", "RunNet(net, num_iter=-1)",
         """
         feed(x=f32(3, 4), w=f32(2, 4), b=f32(2))
         n = core.Net('n'); n.FC(['x', 'w', 'b'], 'y')
         workspace.CreateNet(n)
         workspace.RunNet(n, -1)
         """, V, r"RunNet: num_iter must be >= 0, got -1", after="workspace.RunNet(n, 2)"),
    Case("run-net-missing", "nets", "RunNet('nope')", "workspace.RunNet('nope')", K,
         r"net 'nope' does not exist in the workspace \(call CreateNet first\)"),
    Case("create-net-not-a-net", "nets", "CreateNet('n')", "workspace.CreateNet('n')", T_,
         r"expected a core.Net or NetDef, got str"),
    Case("run-operator-not-an-op", "nets", "RunOperatorOnce('FC')", "workspace.RunOperatorOnce('FC')", T_,
         r"RunOperatorOnce expects an OperatorDef, got str"),
    Case("create-net-missing-input", "nets", "CreateNet(net reading a blob nobody wrote)",
         """
         feed(x=f32(3, 4))
         n = core.Net('n'); n.Copy('x', 'y'); n.Copy('nope', 'z')
         workspace.CreateNet(n)
         """, K, r"net 'n(_\d+)?': op Copy #1: input 0 blob 'nope' does not exist in the workspace",
         note="checked at creation: nothing runs"),
    Case("run-net-shape-error", "nets", "RunNet(net) whose 2nd op gets a bad shape",
         """
         feed(x=f32(3, 4), w=f32(2, 5), b=f32(2))
         n = core.Net('n'); n.Copy('x', 'x2'); n.FC(['x2', 'w', 'b'], 'y')
         workspace.CreateNet(n)
         workspace.RunNet(n)
         """, V, r"op FC #1: input 1 blob 'w' of shape \(2, 5\) float32 does not fit input 0 blob 'x2'",
         after="feed(w=f32(2, 4)); workspace.RunNet(n)"),
    Case("op-input-never-written", "nets",
         "RunOperatorOnce(Copy('y')) where 'y' exists but was never written",
         """
         feed(x=f32(3, 4), w=f32(2, 4), b=f32(2))
         n = core.Net('n'); n.FC(['x', 'w', 'b'], 'y')
         workspace.CreateNet(n)
         run_op('Copy', 'y', 'z')
         """,
         V, r"op Copy #0: input 0 blob 'y' holds no tensor"),
    Case("util-input-never-written", "ops: util",
         "RunNet(Alias('y')) where CreateNet(input_blobs=['y']) created 'y' holding no tensor",
         """
         n = core.Net('n'); n.Alias('y', 'z')
         workspace.CreateNet(n, input_blobs=['y'])
         workspace.RunNet(n)
         """,
         V, r"op Alias #0: input 0 blob 'y' holds no tensor \(was it fed or computed\?\)",
         after="feed(y=f32(2, 3)); workspace.RunNet(n)"),
    Case("unknown-op-type", "nets", "RunOperatorOnce(CreateOperator('Foo', ...))",
         "run_op('Foo', 'x', 'y')",
         K, r"op #0: unknown operator type 'Foo'"),
    Case("net-attr-unregistered-op", "nets", "core.Net('n').Sigmod('x', 'y')",
         "core.Net('n').Sigmod('x', 'y')",
         "AttributeError", r"Method Sigmod is not a registered operator. Did you mean: \[Sigmoid"),
    Case("net-in-gpu-device-scope", "nets", "RunNetOnce of a net built in a GPU DeviceScope",
         """
         with core.DeviceScope(core.DeviceOption(workspace.GpuDeviceType, 4)):
             n = core.Net('gpu_scope'); n.ConstantFill([], 'y', shape=[2])
         workspace.RunNetOnce(n)
         """,
         V, r"net 'gpu_scope(_\d+)?' op #0: op ConstantFill \(outputs \['y'\]\) asks for device CUDA "
            r"\(device_type 1, device_id 4\), but this build runs on the CPU only",
         after="n.Proto().op[0].device_option = None; workspace.RunNetOnce(n)"),
    Case("net-run-all-on-gpu", "nets", "CreateNet of a net after Net.RunAllOnGPU()",
         """
         n = core.Net('all_gpu'); n.ConstantFill([], 'y', shape=[2]); n.RunAllOnGPU()
         workspace.CreateNet(n)
         """,
         V, r"net 'all_gpu(_\d+)?' op #0: op ConstantFill .* asks for device CUDA "
            r"\(device_type 1, device_id 0\)"),
    Case("cudnn-lstm", "nets", "rnn_cell.cudnn_LSTM(...)",
         "rnn_cell.cudnn_LSTM",
         "AttributeError",
         r"rnn_cell.cudnn_LSTM is not provided: it runs cuDNN's LSTM on a GPU, and this build "
         r"runs on the CPU only"),
    Case("global-init-unknown-flag", "flags", "GlobalInit(['prog', '--foo'])",
         "workspace.GlobalInit(['p', '--foo'])",
         V, r"GlobalInit: unknown flag --foo"),
    Case("global-init-bad-bool", "flags", "GlobalInit(['prog', '--caffe2_rnn_executor=maybe'])",
         "workspace.GlobalInit(['p', '--caffe2_rnn_executor=maybe'])", V,
         r"flag --caffe2_rnn_executor expects 0/1/true/false, got 'maybe'"),
    Case("global-init-bad-threads", "flags", "GlobalInit(['prog', '--caffe2_rnn_executor_num_threads=-1'])",
         "workspace.GlobalInit(['p', '--caffe2_rnn_executor_num_threads=-1'])", V,
         r"rnn_executor_num_threads must be in \[0, 1024\]"),
    Case("global-init-bad-min-op-us", "flags", "GlobalInit(['prog', '--caffe2_rnn_executor_min_op_us=-1'])",
         "workspace.GlobalInit(['p', '--caffe2_rnn_executor_min_op_us=-1'])", V,
         r"--caffe2_rnn_executor_min_op_us must be in \[0, 1e6\], got '-1'"),
    Case("text-format-truncated", "text format", "text_format.parse_net('name: \"a\" op { type: \"FC\"')",
         "text_format.parse_net('name: \"a\"\\nop { type: \"FC\" input: \"x\"\\n')", V,
         r"protobuf text format, line 3 column 1: unexpected end of text"),
    Case("text-format-unknown-field", "text format", "text_format.parse_net('foo: 3')",
         "text_format.parse_net('name: \"a\"\\nfoo: 3\\n')", V,
         r"line 2 column 1: message caffe2.NetDef has no field named 'foo'"),
    Case("text-format-bad-int", "text format", "text_format.parse_op('arg { name: \"axis\" i: 1.5 }')",
         "text_format.parse_op('type: \"FC\" arg { name: \"axis\" i: 1.5 }')",
         V, r"expected an integer, got '1.5'"),
    # ---------------------------------------------------------------- threads and signals
    Case("concurrent-run-net", "threads", "RunNet from two Python threads on one workspace",
         "busy_while_running(lambda: workspace.RunNetOnce(core.Net('other')))",
         R,
         r"workspace is busy: another thread is running a net "
         r"or operator in it; use one workspace per thread",
         note="the running net continues undisturbed; a thread's SwitchWorkspace changes that thread's "
              "current workspace only, so each thread can have its own"),
    Case("concurrent-feed-blob", "threads", "FeedBlob while another thread runs a net in the workspace",
         "busy_while_running(lambda: workspace.FeedBlob('q', f32(2)))", R, r"workspace is busy"),
    Case("concurrent-fetch-blob", "threads", "FetchBlob / HasBlob / Blobs while another thread runs a net",
         """
         def fetch_all():
             calls = (lambda: workspace.FetchBlob('lx'), lambda: workspace.HasBlob('lx'), workspace.Blobs)
             for call in calls:
                 try:
                     call()
                 except RuntimeError as e:
                     assert 'workspace is busy' in str(e)
                 else:
                     raise AssertionError('no error')
             workspace.FetchBlob('lx')
         busy_while_running(fetch_all)
         """,
         R, r"workspace is busy",
         note="refused rather than racing the running net (it crashed "
              "before: a blob resized during the copy)"),
    Case("keyboard-interrupt", "signals", "Ctrl-C during RunNet(lstm_training_net, num_iter=10**9)",
         """
         net, per_run = long_lstm_net()
         threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
         t0 = time.time()
         try:
             workspace.RunNet(net, 10**9)
         finally:
             assert time.time() - t0 < 5, time.time() - t0
         """, KI, r"^$", after="workspace.RunNet(net, 2)",
         note="honoured between ops and timesteps (executor on or off); tests/test_interrupt.py has more"),
    # ---------------------------------------------------------------- math ops
    Case("fc-too-few-inputs", "ops: math", "FC([x, w], y)",
         "feed(x=f32(3, 4), w=f32(2, 4)); run_op('FC', ['x', 'w'], 'y')",
         V, r"op FC #0: expects 3 inputs, got 2"),
    Case("fc-too-many-outputs", "ops: math", "FC([x, w, b], [y, z])",
         "feed(x=f32(3, 4), w=f32(2, 4), b=f32(2)); run_op('FC', ['x', 'w', 'b'], ['y', 'z'])", V,
         r"op FC #0: expects 1 outputs, got 2"),
    Case("fc-missing-input", "ops: math", "FC([x, w, 'nope'], y)",
         "feed(x=f32(3, 4), w=f32(2, 4)); run_op('FC', ['x', 'w', 'nope'], 'y')", K,
         r"op FC #0: input 2 blob 'nope' does not exist in the workspace"),
    Case("fc-int32-input", "ops: math", "FC([x_int32, w, b], y)",
         "feed(x=np.ones((3, 4), np.int32), w=f32(2, 4), b=f32(2)); run_op('FC', ['x', 'w', 'b'], 'y')", T_,
         r"op FC #0: input 0 blob 'x' must be float32, got \(3, 4\) int32"),
    Case("fc-k-mismatch", "ops: math", "FC([x (3,4), w (2,3), b], y)",
         "feed(x=f32(3, 4), w=f32(2, 3), b=f32(2)); run_op('FC', ['x', 'w', 'b'], 'y')",
         V,
         r"op FC #0: input 1 blob 'w' of shape \(2, 3\) float32 "
         r"does not fit input 0 blob 'x' of shape \(3, 4\)"),
    Case("fc-axis-string", "ops: math", "FC(..., axis='a')",
         "feed(x=f32(3, 4), w=f32(2, 4), b=f32(2)); run_op('FC', ['x', 'w', 'b'], 'y', axis='a')", T_,
         r"op FC: argument 'axis' must be an int, got string"),
    Case("fc-axis-out-of-range", "ops: math", "FC(..., axis=5)",
         "feed(x=f32(3, 4), w=f32(2, 4), b=f32(2)); run_op('FC', ['x', 'w', 'b'], 'y', axis=5)", V,
         r"op FC #0: input 0 blob 'x' must have at least 6 dims for axis=5"),
    Case("fc-in-place", "ops: math", "FC([x, w, b], x)",
         "feed(x=f32(3, 4), w=f32(4, 4), b=f32(4)); run_op('FC', ['x', 'w', 'b'], 'x')", V,
         r"op FC #0: input 0 and output 0 are the same blob 'x', which this op does not allow \(in-place\)"),
    Case("fc-transposed-k-mismatch", "ops: math", "FCTransposed([x (4,5), w (6,3), b], y)",
         "feed(x=f32(4, 5), w=f32(6, 3), b=f32(3)); run_op('FCTransposed', ['x', 'w', 'b'], 'y')", V,
         r"op FCTransposed #0: input 1 blob 'w' of shape \(6, 3\) float32 does not fit input 0 blob 'x' of "
         r"shape \(4, 5\) float32: K is 5 from 'x' \(axis=1\) but 6 from 'w' \(the dims before axis_w=1; "
         r"FCTransposed's W is K x N\)"),
    Case("fc-transposed-bias", "ops: math", "FCTransposed([x (4,5), w (5,3), b (4,)], y)",
         "feed(x=f32(4, 5), w=f32(5, 3), b=f32(4)); run_op('FCTransposed', ['x', 'w', 'b'], 'y')", V,
         r"op FCTransposed #0: input 2 blob 'b' must have shape \(3,\) \(N of input 1 blob 'w' \(5, 3\) "
         r"float32\), got \(4,\) float32"),
    Case("matmul-inner-dims", "ops: math", "MatMul([a (3,4), b (3,4)])",
         "feed(a=f32(3, 4), b=f32(3, 4)); run_op('MatMul', ['a', 'b'], 'y')", V,
         r"op MatMul #0: inner dimensions differ"),
    Case("mul-shape-mismatch", "ops: math", "Mul([a (3,4), b (5,4)])",
         "feed(a=f32(3, 4), b=f32(5, 4)); run_op('Mul', ['a', 'b'], 'y')", V,
         r"op Mul #0: input 0 blob 'a' of shape \(3, 4\) float32 and input 1 blob 'b' of shape \(5, 4\) "
         r"float32 do not broadcast \(numpy-style, dims aligned from the last\): dim 0 of 'a' is 3 but "
         r"dim 0 of 'b' is 5"),
    Case("mul-bad-broadcast", "ops: math", "Mul([a (3,4), b (5,)], broadcast=1)",
         "feed(a=f32(3, 4), b=f32(5)); run_op('Mul', ['a', 'b'], 'y', broadcast=1)", V,
         r"op Mul #0: cannot broadcast input 1 blob 'b' of shape \(5,\) float32"),
    Case("add-axis-and-axis-str", "ops: math", "Add([a (2,3,4,5), b (3,)], broadcast=1, axis=1, axis_str='C')",
         "feed(a=f32(2, 3, 4, 5), b=f32(3)); run_op('Add', ['a', 'b'], 'y', broadcast=1, axis=1, axis_str='C')",
         V, r"op Add #0: arguments 'axis' and 'axis_str' cannot be used together",
         note="as Caffe2; axis=-1 (the default) with axis_str is accepted"),
    Case("add-axis-str-not-in-order", "ops: math", "Add([a (2,3,4,5), b (3,)], broadcast=1, axis_str='D')",
         "feed(a=f32(2, 3, 4, 5), b=f32(3)); run_op('Add', ['a', 'b'], 'y', broadcast=1, axis_str='D')",
         V, r"op Add #0: argument axis_str='D' is not a letter of order='NCHW'"),
    Case("sum-reduce-like-axis-str-long", "ops: math", "SumReduceLike([a (2,3,4,5), b (3,)], axis_str='CH')",
         "feed(a=f32(2, 3, 4, 5), b=f32(3)); run_op('SumReduceLike', ['a', 'b'], 'y', axis_str='CH')",
         V, r"op SumReduceLike #0: argument axis_str='CH' must be one letter of 'order'"),
    Case("sum-shape-mismatch", "ops: math", "Sum([a (3,4), b (5,4)])",
         "feed(a=f32(3, 4), b=f32(5, 4)); run_op('Sum', ['a', 'b'], 'y')", V,
         r"op Sum #0: input 1 blob 'b' of shape \(5, 4\) float32 must have the shape of input 0"),
    Case("sum-int-overflow", "ops: math", "SumInt([a [2147483647, 1], b [1, 1]])",
         "feed(a=np.array([2147483647, 1], np.int32), b=np.array([1, 1], np.int32)); "
         "run_op('SumInt', ['a', 'b'], 'a')", V,
         r"op SumInt #0: the sum at flat position 0 is 2147483648, which int32 cannot hold \(2 inputs of "
         r"shape \(2,\) int32, input 0 blob 'a'\)",
         after="assert list(workspace.FetchBlob('a')) == [2147483647, 1]",
         note="checked before the output (here in place over 'a') is written; Caffe2's int addition wrapped"),
    Case("row-mul-w-size", "ops: math", "RowMul([mat (3,2), w (2,)])",
         "feed(m=f32(3, 2), w=f32(2)); run_op('RowMul', ['m', 'w'], 'y')", V,
         r"op RowMul #0: input 1 blob 'w' \(w\) of shape \(2,\) float32 must hold one element per row \(dim "
         r"0\) of input 0 blob 'm' \(mat\) of shape \(3, 2\) float32",
         note="Caffe2 resized the output before its check; w may have any shape with N elements, as Caffe2"),
    Case("reduce-tail-sum-0d", "ops: math", "ReduceTailSum(x ())",
         "feed(x=np.float32(2)); run_op('ReduceTailSum', ['x'], 'y')", V,
         r"op ReduceTailSum #0: input 0 blob 'x' \(mat\) must have at least 1 dim, got \(\) float32",
         note="Caffe2 read dim 0 of a 0-d tensor; RowMul's mat likewise"),
    Case("sum-int-float-input", "ops: math", "SumInt([a int32, f float32])",
         "feed(a=np.ones(3, np.int32), f=f32(3)); run_op('SumInt', ['a', 'f'], 'y')", T_,
         r"op SumInt #0: input 1 blob 'f' must be int32, got \(3,\) float32"),
    Case("accumulate-int32-input", "ops: math", "Accumulate(x int32, y)",
         "feed(x=np.ones(3, np.int32)); run_op('Accumulate', 'x', 'y')", T_,
         r"op Accumulate #0: input 0 blob 'x' must be float32, got \(3,\) int32"),
    Case("weighted-sum-odd-inputs", "ops: math", "WeightedSum([x, w, y])",
         "feed(x=f32(3, 4), w=f32(1), y=f32(3, 4)); run_op('WeightedSum', ['x', 'w', 'y'], 'o')", V,
         r"op WeightedSum #0: input 2 blob 'y' has no weight"),
    Case("weighted-sum-grad-no-weight", "ops: math", "WeightedSumGradient([dy, x0, w0, x1], [a, b])",
         "feed(dy=f32(2, 3), x0=f32(2, 3), w0=f32(1), x1=f32(2, 3)); "
         "run_op('WeightedSumGradient', ['dy', 'x0', 'w0', 'x1'], ['a', 'b'])", V,
         r"op WeightedSumGradient #0: takes \(dY, X0, w0, X1, w1, ...\): input 3 blob 'x1' has no weight"),
    Case("weighted-sum-grad-outputs", "ops: math", "WeightedSumGradient([dy, x0, w0], [a], grad_on_w=1)",
         "feed(dy=f32(2, 3), x0=f32(2, 3), w0=f32(1)); "
         "run_op('WeightedSumGradient', ['dy', 'x0', 'w0'], ['a'], grad_on_w=1)", V,
         r"op WeightedSumGradient #0: 3 inputs \(1 pairs\) with grad_on_w=1 need 2 outputs"),
    Case("weighted-sum-grad-x-shape", "ops: math", "WeightedSumGradient([dy (2,3), x0 (3,2), w0], [a, b], "
         "grad_on_w=1)",
         "feed(dy=f32(2, 3), x0=f32(3, 2), w0=f32(1)); "
         "run_op('WeightedSumGradient', ['dy', 'x0', 'w0'], ['a', 'b'], grad_on_w=1)", V,
         r"op WeightedSumGradient #0: input 1 blob 'x0' of shape \(3, 2\) float32 must have the shape of "
         r"input 0 blob 'dy'", note="X is read (and checked) only with grad_on_w=1, as Caffe2's"),
    Case("scale-string-arg", "ops: math", "Scale(x, scale='a')",
         "feed(x=f32(3)); run_op('Scale', 'x', 'y', scale='a')",
         T_, r"op Scale: argument 'scale' must be a float"),
    Case("elementwise-linear-shape", "ops: math", "ElementwiseLinear([x (3,4), a (5,), b (5,)])",
         "feed(x=f32(3, 4), a=f32(5), b=f32(5)); run_op('ElementwiseLinear', ['x', 'a', 'b'], 'y')", V,
         r"op ElementwiseLinear #0: input 1 blob 'a' must have shape \(4,\)"),
    Case("sigmoid-gradient-shapes", "ops: math", "SigmoidGradient([y (3,4), dy (5,4)])",
         "feed(y=f32(3, 4), dy=f32(5, 4)); run_op('SigmoidGradient', ['y', 'dy'], 'dx')",
         V,
         r"op SigmoidGradient #0: input 1 blob 'dy' of shape "
         r"\(5, 4\) float32 must have the shape of input 0"),
    Case("nan-inf-propagate", "ops: math", "FC / Softmax on data with NaN and Inf",
         """
         x = f32(3, 4); x[0, 0] = np.nan; x[1, 1] = np.inf
         feed(x=x, w=f32(2, 4), b=f32(2))
         run_op('FC', ['x', 'w', 'b'], 'y'); run_op('Softmax', 'y', 'p')
         y, p = workspace.FetchBlob('y'), workspace.FetchBlob('p')
         assert np.isnan(y[0]).all() and not np.isfinite(y[1]).any() and np.isfinite(y[2]).all()
         assert np.isnan(p[0]).all() and np.isfinite(p[2]).all()
         """, None, "", note="no error: NaN/Inf propagate (IEEE arithmetic); nothing checks for them"),
    Case("pow-missing-exponent", "ops: math", "CreateNet(net with Pow(x))",
         """
         feed(x=f32(3))
         n = core.Net('pw')
         n.Pow('x', 'y')
         workspace.CreateNet(n)
         """, V, r"net 'pw': op Pow #0: argument 'exponent' is required",
         note="arguments are checked when the net is created"),
    Case("pow-nan-exponent", "ops: math", "Pow(x, exponent=nan)",
         "feed(x=f32(3)); run_op('Pow', 'x', 'y', exponent=float('nan'))", V,
         r"op Pow #0: argument 'exponent' must be finite, got nan"),
    Case("pow-exponent-input", "ops: math", "Pow([x, e], exponent=2.0)",
         "feed(x=f32(3), e=f32(3)); run_op('Pow', ['x', 'e'], 'y', exponent=2.0)", V,
         r"op Pow #0: input 1 blob 'e' is the exponent tensor: the argument 'exponent' must not be given too",
         note="the exponent comes from the argument or from input 1, not both"),
    Case("pow-negative-base", "ops: math", "Pow(x = [-8, 4], exponent=0.5)",
         """
         feed(x=np.array([-8.0, 4.0], np.float32)); run_op('Pow', 'x', 'y', exponent=0.5)
         y = workspace.FetchBlob('y'); assert np.isnan(y[0]) and y[1] == 2.0
         """, None, "", note="no error: NaN for a negative base and a non-integer exponent, as NumPy"),
    Case("max-shape-mismatch", "ops: math", "Max([a (3,4), b (4,3)])",
         "feed(a=f32(3, 4), b=f32(4, 3)); run_op('Max', ['a', 'b'], 'y')", V,
         r"op Max #0: input 1 blob 'b' of shape \(4, 3\) float32 must have the shape of input 0 blob 'a' "
         r"\(3, 4\) float32"),
    Case("max-int32-input", "ops: math", "Max([a, i_int32])",
         "feed(a=f32(3), i=np.ones(3, np.int32)); run_op('Max', ['a', 'i'], 'y')", T_,
         r"op Max #0: input 1 blob 'i' must be float32, got \(3,\) int32"),
    Case("div-shape-mismatch", "ops: math", "Div([a (3,4), b (3,)])",
         "feed(a=f32(3, 4), b=f32(3)); run_op('Div', ['a', 'b'], 'y')", V,
         r"op Div #0: input 0 blob 'a' of shape \(3, 4\) float32 and input 1 blob 'b' of shape \(3,\) "
         r"float32 do not broadcast \(numpy-style, dims aligned from the last\): dim 1 of 'a' is 4 but "
         r"dim 0 of 'b' is 3",
         note="numpy-style: dims are aligned from the last; (4,) would broadcast"),
    Case("div-scalar-a-vector-b", "ops: math", "Div([a (), b (1,)], broadcast=1)",
         "feed(a=np.array(2.0, np.float32), b=np.ones(1, np.float32)); "
         "run_op('Div', ['a', 'b'], 'y', broadcast=1)",
         V, r"op Div #0: cannot broadcast input 1 blob 'b' of shape \(1,\) float32 to input 0 blob 'a' "
            r"of shape \(\) float32: it has more dims", note="a (1,) A with a () B works"),
    Case("div-by-zero", "ops: math", "Div([a, zeros])",
         """
         feed(a=np.array([1.0, 0.0], np.float32), z=np.zeros(2, np.float32)); run_op('Div', ['a', 'z'], 'y')
         y = workspace.FetchBlob('y'); assert y[0] == np.inf and np.isnan(y[1])
         """, None, "", note="no error: inf / NaN (IEEE)"),
    Case("sum-sqr-elements-int32", "ops: loss", "SumSqrElements(x_int32)",
         "feed(x=np.ones(3, np.int32)); run_op('SumSqrElements', 'x', 'y')", T_,
         r"op SumSqrElements #0: input 0 blob 'x' must be float32, got \(3,\) int32"),
    # ---------------------------------------------------------------- normalization ops
    Case("layer-norm-int32", "ops: norm", "LayerNorm(x_int32)",
         "feed(x=np.ones((2, 3), np.int32)); run_op('LayerNorm', 'x', ['y', 'mean', 'std'])", T_,
         r"op LayerNorm #0: input 0 blob 'x' must be float32, got \(2, 3\) int32"),
    Case("layer-norm-axis-out-of-range", "ops: norm", "LayerNorm(x (2,3), axis=2)",
         "feed(x=f32(2, 3)); run_op('LayerNorm', 'x', ['y', 'mean', 'std'], axis=2)", V,
         r"op LayerNorm #0: argument axis=2 is out of range for input 0 blob 'x' of shape \(2, 3\) float32 "
         r"\(must be in \[-2, 2\)\)"),
    Case("layer-norm-negative-epsilon", "ops: norm", "CreateNet(net with LayerNorm(x, epsilon=-1e-5))",
         """
         feed(x=f32(2, 3))
         n = core.Net('ln')
         n.LayerNorm('x', ['y', 'mean', 'std'], epsilon=-1e-5)
         workspace.CreateNet(n)
         """, V, r"net 'ln': op LayerNorm #0: argument epsilon must be finite and >= 0, got -1e-05",
         note="checked when the net is created; NaN and Inf are refused too"),
    Case("layer-norm-affine-one-input", "ops: norm", "LayerNorm([x], elementwise_affine=1)",
         "feed(x=f32(2, 3)); run_op('LayerNorm', ['x'], ['y', 'mean', 'std'], elementwise_affine=1)", V,
         r"op LayerNorm #0: with elementwise_affine=1 takes 3 inputs \(X, gamma, beta\), got 1 inputs"),
    Case("layer-norm-gamma-shape", "ops: norm",
         "LayerNorm([x (2,3), gamma (4,), beta (3,)], elementwise_affine=1)",
         """
         feed(x=f32(2, 3), g=f32(4), b=f32(3))
         run_op('LayerNorm', ['x', 'g', 'b'], ['y', 'mean', 'std'], elementwise_affine=1)
         """, V, r"op LayerNorm #0: input 1 blob 'g' \(gamma\) must have shape \(3,\) float32 \(the dims of "
                 r"input 0 blob 'x' \(2, 3\) float32 from axis 1 on\), got \(4,\) float32",
         note="checked already at CreateNet when x, gamma and beta hold tensors"),
    Case("layer-norm-grad-stats-shape", "ops: norm", "LayerNormGradient([dy, y, mean (2,), std, x (2,3)])",
         """
         feed(x=f32(2, 3), dy=f32(2, 3), m=f32(2))
         run_op('LayerNorm', 'x', ['y', 'mean', 'std'])
         run_op('LayerNormGradient', ['dy', 'y', 'm', 'std', 'x'], ['dx'])
         """, V, r"op LayerNormGradient #0: input 2 blob 'm' \(mean\) must have shape \(2, 1\) float32 "
                 r"\(the dims of input 4 blob 'x' \(2, 3\) float32 before axis 1, then 1\), got \(2,\) "
                 r"float32",
         note="the statistics have Caffe2's shape dims[:axis] + [1]"),
    Case("layer-norm-in-place-gradient", "ops: norm", "net.LayerNorm('x', ['x', ...]); AddGradientOperators",
         """
         n = core.Net('lnip')
         n.LayerNorm('x', ['x', 'mean', 'std'])
         n.AddGradientOperators(['x'])
         """, V, r"LayerNorm gradient: the forward op computes 'x' in place, so its input X is lost; the "
                 r"gradient needs it", note="LayerNorm itself runs in place; its gradient needs X"),
    Case("layer-norm-empty", "ops: norm", "LayerNorm(x (0,5)), LayerNorm(x (3,0))",
         """
         feed(x=np.zeros((0, 5), np.float32), z=np.zeros((3, 0), np.float32))
         run_op('LayerNorm', 'x', ['y', 'mean', 'std']); run_op('LayerNorm', 'z', ['yz', 'mz', 'sz'])
         assert workspace.FetchBlob('y').shape == (0, 5) and workspace.FetchBlob('mean').shape == (0, 1)
         mz, sz = workspace.FetchBlob('mz'), workspace.FetchBlob('sz')
         assert (mz == 0).all() and np.allclose(sz, 10 ** -2.5)
         """, None, "",
         note="no error: empty outputs; rows of no values have mean 0 and stdev sqrt(epsilon)"),
    Case("group-norm-group-not-dividing", "ops: norm", "GroupNorm(x (2,4,3), group=3)",
         """
         feed(x=f32(2, 4, 3), g=f32(4), b=f32(4))
         run_op('GroupNorm', ['x', 'g', 'b'], ['y', 'mean', 'inv_std'], group=3)
         """, V, r"op GroupNorm #0: argument group=3 must divide the 4 channels of input 0 blob 'x' "
                 r"\(2, 4, 3\) "
                 r"float32 \(order NCHW\)",
         note="checked already at CreateNet when the inputs hold tensors; group must be >= 1 (at creation)"),
    Case("group-norm-grad-stats-shape", "ops: norm", "GroupNormGradient([dy, x (2,4,3), g, b, mean "
                                                     "(2,), inv_std])",
         """
         feed(x=f32(2, 4, 3), dy=f32(2, 4, 3), g=f32(4), b=f32(4), m=f32(2), r=f32(2, 2))
         run_op('GroupNormGradient', ['dy', 'x', 'g', 'b', 'm', 'r'], ['dx', 'dg', 'db'], group=2)
         """, V, r"op GroupNormGradient #0: input 4 blob 'm' \(mean\) must have shape \(2, 2\) float32 "
                 r"\(N, group\), got \(2,\) float32",
         note="the statistics have Caffe2's shape (N, group)"),
    Case("lrn-size-even", "ops: norm", "LRN(x (2,4,3), size=2)",
         """
         feed(x=f32(2, 4, 3))
         run_op('LRN', 'x', ['y', 'scale'], size=2, alpha=0.1, beta=0.75)
         """, V, r"op LRN #0: argument size \(the channels of the window\) must be odd and >= 1, got 2",
         note="when the op is created; size is required (Caffe2's default 0 only asserted in debug builds)"),
    Case("lrn-x-1d", "ops: norm", "LRN(x (5,), size=3)",
         """
         feed(x=f32(5))
         run_op('LRN', 'x', 'y', size=3, alpha=0.1, beta=0.75)
         """, V, r"op LRN #0: input 0 blob 'x' must have 2 to 8 dims, got \(5,\) float32",
         note="channels are dim 1 (NCHW) or the last dim (NHWC) of an X of >= 2 dims (Caffe2: 4-D only)"),
    Case("lrn-grad-dy-shape", "ops: norm", "LRNGradient([x (2,4,3), y (2,4,3), dy (2,4,2)], size=3)",
         """
         feed(x=f32(2, 4, 3), y=f32(2, 4, 3), dy=f32(2, 4, 2))
         run_op('LRNGradient', ['x', 'y', 'dy'], 'dx', size=3, alpha=0.1, beta=0.75)
         """, V, r"op LRNGradient #0: input 2 blob 'dy' \(2, 4, 2\) float32 must have the shape of input 0 blob "
                 r"'x' \(2, 4, 3\) float32",
         note="Caffe2 compared the sizes in debug builds only"),
    Case("instance-norm-x-1d", "ops: norm", "InstanceNorm(x (5,), order='NHWC')",
         """
         feed(x=f32(5), s=f32(5), b=f32(5))
         run_op('InstanceNorm', ['x', 's', 'b'], ['y'], order='NHWC')
         """, V, r"op InstanceNorm #0: input 0 blob 'x' \(X\) must have at least 2 dims \(N, "
                 r"\.\.\., C\), got "
                 r"\(5,\) float32"),
    Case("instance-norm-bad-order", "ops: norm", "InstanceNorm(x, order='CHW')",
         "feed(x=f32(2, 3), s=f32(3), b=f32(3)); run_op('InstanceNorm', ['x', 's', 'b'], ['y'], "
         "order='CHW')", V,
         r'op InstanceNorm #0: argument order must be "NCHW" or "NHWC", got "CHW"',
         note="checked when the op is created; epsilon must be finite and >= 0 (also for GroupNorm, "
              "SpatialBN)"),
    Case("instance-norm-grad-dy-shape", "ops: norm", "InstanceNormGradient([x (2,3,4), s, b, dy (2,3,5)])",
         """
         feed(x=f32(2, 3, 4), s=f32(3), b=f32(3), dy=f32(2, 3, 5))
         run_op('InstanceNormGradient', ['x', 's', 'b', 'dy'], ['dx', 'ds', 'db'])
         """, V, r"op InstanceNormGradient #0: input 3 blob 'dy' \(dY\) must have the shape of "
                 r"input 0 blob 'x' "
                 r"\(2, 3, 4\) float32, got \(2, 3, 5\) float32"),
    Case("spatial-bn-var-shape", "ops: norm", "SpatialBN([x (2,3), s, b, mean, var (2,)], is_test=1)",
         """
         feed(x=f32(2, 3), s=f32(3), b=f32(3), m=f32(3), v=f32(2))
         run_op('SpatialBN', ['x', 's', 'b', 'm', 'v'], ['y'], is_test=1)
         """, V, r"op SpatialBN #0: input 4 blob 'v' \(var\) must have shape \(3,\) float32 \(C\), "
                 r"got \(2,\) "
                 r"float32"),
    Case("spatial-bn-outputs", "ops: norm", "SpatialBN(..., is_test=1) with 5 outputs",
         """
         feed(x=f32(2, 3), s=f32(3), b=f32(3), m=f32(3), v=f32(3))
         run_op('SpatialBN', ['x', 's', 'b', 'm', 'v'], ['y', 'm', 'v', 'sm', 'sr'], is_test=1)
         """, V, r"op SpatialBN #0: with is_test=1 gives 1 output \(Y\), got 5 outputs",
         note="training (is_test=0) gives 5 outputs"),
    Case("spatial-bn-num-batches-inputs", "ops: norm", "SpatialBN([5 inputs], num_batches=2)",
         """
         feed(x=f32(2, 3), s=f32(3), b=f32(3), m=f32(3), v=f32(3))
         run_op('SpatialBN', ['x', 's', 'b', 'm', 'v'], ['y', 'm', 'v', 'sm', 'sr'], num_batches=2)
         """, V, r"op SpatialBN #0: with num_batches=2 takes 7 inputs \(the last two the sums over "
                 r"the batches\), "
                 r"got 5 inputs", note="num_batches must be >= 1, and 1 with is_test=1"),
    Case("spatial-bn-momentum-nan", "ops: norm", "SpatialBN(..., momentum=nan)",
         """
         feed(x=f32(2, 3), s=f32(3), b=f32(3), m=f32(3), v=f32(3))
         run_op('SpatialBN', ['x', 's', 'b', 'm', 'v'], ['y', 'm', 'v', 'sm', 'sr'], momentum=float('nan'))
         """, V, r"op SpatialBN #0: argument momentum must be finite, got nan"),
    Case("norm-in-place-gradient", "ops: norm", "net.GroupNorm(['x', g, b], ['x', ...]); "
                                                "AddGradientOperators",
         """
         n = core.Net('gnip')
         n.GroupNorm(['x', 'g', 'b'], ['x', 'mean', 'inv_std'], group=1)
         n.AddGradientOperators(['x'])
         """, V, r"GroupNorm gradient: the forward op computes 'x' in place, so its input X is lost; the "
                 r"gradient needs it", note="the same for InstanceNorm and SpatialBN; the ops run in place"),
    Case("norm-empty", "ops: norm", "GroupNorm(x (0,4,3)), SpatialBN(x (0,3,2)) training",
         """
         feed(x=np.zeros((0, 4, 3), np.float32), g=f32(4), b=f32(4), m=np.ones(4, np.float32), v=f32(4))
         run_op('GroupNorm', ['x', 'g', 'b'], ['y', 'mean', 'inv_std'], group=2)
         assert workspace.FetchBlob('y').shape == (0, 4, 3) and workspace.FetchBlob('mean').shape == (0, 2)
         run_op('SpatialBN', ['x', 'g', 'b', 'm', 'v'], ['z', 'm', 'v', 'sm', 'sr'])
         assert (workspace.FetchBlob('m') == 1).all() and (workspace.FetchBlob('sm') == 0).all()
         """, None, "",
         note="no error: empty outputs; SpatialBN keeps the running statistics and saves 0, as Caffe2"),
    # ---------------------------------------------------------------- Conv
    Case("conv-group-not-dividing", "ops: conv", "Conv([x (2,4,5,5), w], kernel=3, group=3)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(6, 2, 3, 3))
         run_op('Conv', ['x', 'w'], ['y'], kernel=3, group=3)
         """, V, r"op Conv #0: argument group=3 must divide the 4 channels of input 0 blob 'x' "
                 r"\(2, 4, 5, 5\) float32 \(order NCHW\)",
         note="checked already at CreateNet when the inputs hold tensors; group must be >= 1 (at creation)"),
    Case("conv-filter-shape", "ops: conv", "Conv([x (2,4,5,5), w (6,2,3,3)], kernel=3)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(6, 2, 3, 3))
         run_op('Conv', ['x', 'w'], ['y'], kernel=3)
         """, V, r"op Conv #0: input 1 blob 'w' \(filter\) must have shape \(M, 4, 3, 3\) with M a "
                 r"multiple of group=1 \(X \(2, 4, 5, 5\) float32, order NCHW, kernel from the "
                 r"arguments\), got "
                 r"\(6, 2, 3, 3\) float32",
         note="NHWC: (M, kernel..., C / group); the kernel arguments must be the filter's spatial dims"),
    Case("conv-bias-shape", "ops: conv", "Conv([x, w (6,4,3,3), b (5,)], kernel=3)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(6, 4, 3, 3), b=f32(5))
         run_op('Conv', ['x', 'w', 'b'], ['y'], kernel=3)
         """, V, r"op Conv #0: input 2 blob 'b' \(bias\) must have shape \(6\) \(M, the filter's first "
                 r"dim\), got \(5,\) float32"),
    Case("conv-grad-outputs", "ops: conv", "ConvGradient([x, w, dy], [dw, db, dx], no_bias=1)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(6, 4, 3, 3), dy=f32(2, 6, 3, 3))
         run_op('ConvGradient', ['x', 'w', 'dy'], ['dw', 'db', 'dx'], kernel=3, no_bias=1)
         """, V, r"op ConvGradient #0: with no_bias=1 gives 1 or 2 outputs \(dfilter\[, dX\]\), got 3 "
                 r"outputs",
         note="checked when the op is created; without no_bias: 2 or 3 outputs (dfilter, dbias[, dX])"),
    Case("conv-grad-dy-shape", "ops: conv", "ConvGradient([x (2,4,5,5), w (6,4,3,3), dy (2,6,3,4)])",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(6, 4, 3, 3), dy=f32(2, 6, 3, 4))
         run_op('ConvGradient', ['x', 'w', 'dy'], ['dw', 'db', 'dx'], kernel=3)
         """, V, r"op ConvGradient #0: input 2 blob 'dy' \(dY\) must have the shape of Conv's output "
                 r"\(2, 6, 3, 3\) float32 \(X \(2, 4, 5, 5\) float32, filter \(6, 4, 3, 3\) float32\), got "
                 r"\(2, 6, 3, 4\) float32"),
    Case("conv-column-buffer", "ops: conv", "Conv(x (1,1,2048,2048), kernel=128, pad=64)",
         """
         feed(x=np.zeros((1, 1, 2048, 2048), np.float32), w=np.zeros((1, 1, 128, 128), np.float32))
         run_op('Conv', ['x', 'w'], ['y'], kernel=128, pad=64)
         """, M, r"op Conv #0: cannot allocate the column buffer \(68786601984 elements\) for input 0 "
                 r"blob 'x' \(1, 1, 2048, 2048\) float32",
         note="the im2col columns of one image and group (kernel size x C / group x output positions), "
              "sized on the first run"),
    Case("conv-empty", "ops: conv", "Conv(x (0,3,5,5)), Conv(x (2,0,5,5)) and their gradients",
         """
         feed(x=np.zeros((0, 3, 5, 5), np.float32), w=f32(4, 3, 3, 3), b=f32(4),
              z=np.zeros((2, 0, 5, 5), np.float32), wz=np.zeros((4, 0, 3, 3), np.float32))
         run_op('Conv', ['x', 'w', 'b'], ['y'], kernel=3)
         assert workspace.FetchBlob('y').shape == (0, 4, 3, 3)
         run_op('Conv', ['z', 'wz', 'b'], ['yz'], kernel=3)
         assert (workspace.FetchBlob('yz') == workspace.FetchBlob('b')[None, :, None, None]).all()
         run_op('ConvGradient', ['x', 'w', 'y'], ['dw', 'db', 'dx'], kernel=3)
         assert (workspace.FetchBlob('dw') == 0).all() and (workspace.FetchBlob('db') == 0).all()
         """, None, "",
         note="no error: empty outputs; no input channels give the bias; no images give zero gradients"),
    # ---------------------------------------------------------------- Im2Col / Col2Im
    Case("im2col-rank", "ops: conv", "Im2Col(x (2,3,5), kernel=3)",
         "feed(x=f32(2, 3, 5)); run_op('Im2Col', ['x'], ['y'], kernel=3)", V,
         r"op Im2Col #0: input 0 blob 'x' \(2, 3, 5\) float32 must have 4 dims for a 2-D kernel \(order NCHW: "
         r"N, C, spatial dims\)"),
    Case("im2col-kernel-too-large", "ops: conv", "Im2Col(x (2,3,5,5), kernel=3, dilation=4, pad=1)",
         "feed(x=f32(2, 3, 5, 5)); run_op('Im2Col', ['x'], ['y'], kernel=3, dilation=4, pad=1)", V,
         r"op Im2Col #0: input 0 blob 'x' \(2, 3, 5, 5\) float32 \(order NCHW\): spatial size 5 in dim h with "
         r"pads 1 \+ 1 is smaller than the window 9 \(kernel 3, dilation 4\)",
         note="the padded image must hold the dilated kernel (Caffe2 required the unpadded one to)"),
    Case("im2col-3d-kernel", "ops: conv", "Im2Col(x, kernels=[2, 2, 2])",
         "feed(x=f32(2, 3, 5, 5)); run_op('Im2Col', ['x'], ['y'], kernels=[2, 2, 2])", V,
         r"op Im2Col #0: takes a 2-D kernel \(kernel, kernel_h \+ kernel_w, or kernels with 2 values\), got 3-D",
         note="checked when the op is created; so is legacy_pad (0 only); as Caffe2, X is 4-D"),
    Case("im2col-negative-pad", "ops: conv", "Im2Col(x, kernel=3, pad=-1)",
         "feed(x=f32(2, 3, 5, 5)); run_op('Im2Col', ['x'], ['y'], kernel=3, pad=-1)", V,
         r"op Im2Col #0: argument pads: value 0 is -1, must lie in \[0, 2\^31 - 1\]"),
    Case("im2col-columns-overflow", "ops: conv", "Im2Col(x (1,3,1,1), kernel=2^31-1, pad=2^31-1)",
         "feed(x=f32(1, 3, 1, 1)); run_op('Im2Col', ['x'], ['y'], kernel=2 ** 31 - 1, pad=2 ** 31 - 1)", M,
         r"op Im2Col #0: input 0 blob 'x' \(1, 3, 1, 1\) float32: the columns \(3 channels x 4611686014132420609 "
         r"kernel cells x 4611686022722355201 positions per image\) have more than 2\^63 elements",
         note="a count that fits int64 but not memory is a MemoryError naming output 0"),
    Case("col2im-columns-shape", "ops: conv", "Col2Im([c (2,3,3,27), x (2,3,5,5)], kernel=3)",
         "feed(c=f32(2, 3, 3, 27), x=f32(2, 3, 5, 5)); run_op('Col2Im', ['c', 'x'], ['y'], kernel=3)", V,
         r"op Col2Im #0: input 0 blob 'c' \(columns\) \(2, 3, 3, 27\) float32 must have Im2Col's output shape "
         r"\(2, 27, 3, 3\) float32 for input 1 blob 'x' \(2, 3, 5, 5\) float32 \(order NCHW, kernel 3 x 3\)",
         note="Caffe2 compared element counts only: this NHWC layout would have been read in NCHW order"),
    Case("col2im-empty-batch", "ops: conv", "Im2Col / Col2Im of x (0,3,5,5)",
         """
         feed(x=np.zeros((0, 3, 5, 5), np.float32))
         run_op('Im2Col', ['x'], ['c'], kernel=3)
         assert workspace.FetchBlob('c').shape == (0, 27, 3, 3)
         run_op('Col2Im', ['c', 'x'], ['y'], kernel=3)
         assert workspace.FetchBlob('y').shape == (0, 3, 5, 5)
         """, None, "", note="no error: empty outputs (Caffe2 divided by N = 0)"),
    Case("normalize-softmax-grad-empty-huge", "ops: loss",
         "Normalize / NormalizeL1 / NormalizeGradient / Softmax / SoftmaxGradient of (2^40, 0) float32",
         """
         feed(x=np.zeros((2 ** 40, 0), np.float32), g=np.zeros((2 ** 40, 0), np.float32))
         for t, ins in (('Normalize', ['x']), ('NormalizeL1', ['x']), ('NormalizeGradient', ['x', 'g']),
                        ('Softmax', ['x']), ('SoftmaxGradient', ['x', 'g'])):
             run_op(t, ins, ['y'])
             assert workspace.FetchBlob('y').shape == (2 ** 40, 0)
         """, None, "", note="no error: an empty output returns at once (the loops walked each of the "
                              "2^40 empty vectors: minutes; Softmax's only in a build without "
                              "optimization; found by tests/test_empty_huge_inputs.py's sweep)"),
    Case("pool-empty-huge-batch", "ops: conv",
         "MaxPool / AveragePool / LpPool and their gradients of x (2^40,1,1,0) NHWC, kernel 1",
         """
         feed(x=np.zeros((2 ** 40, 1, 1, 0), np.float32))
         for t in ('MaxPool', 'AveragePool', 'LpPool'):
             run_op(t, ['x'], ['y'], kernel=1, order='NHWC')
             assert workspace.FetchBlob('y').shape == (2 ** 40, 1, 1, 0)
             run_op(t + 'Gradient', ['x', 'y', 'y'], ['dx'], kernel=1, order='NHWC')
             assert workspace.FetchBlob('dx').shape == (2 ** 40, 1, 1, 0)
         """, None, "", note="no error: an empty Y (an empty dY for the gradients) returns at once (the "
                              "window loops walked every position of the 2^40 images: minutes)"),
    Case("conv-empty-huge-batch", "ops: conv",
         "Conv / ConvTranspose / ConvGradient / ConvTransposeGradient of x (2^40,0,1,1), w (0,0,1,1)",
         """
         feed(x=np.zeros((2 ** 40, 0, 1, 1), np.float32), w=np.zeros((0, 0, 1, 1), np.float32),
              b=np.zeros(0, np.float32))
         run_op('Conv', ['x', 'w', 'b'], ['y'], kernel=1)
         assert workspace.FetchBlob('y').shape == (2 ** 40, 0, 1, 1)
         run_op('ConvTranspose', ['x', 'w', 'b'], ['yt'], kernel=1)
         assert workspace.FetchBlob('yt').shape == (2 ** 40, 0, 1, 1)
         run_op('ConvGradient', ['x', 'w', 'y'], ['dw', 'db', 'dx'], kernel=1)
         assert workspace.FetchBlob('dx').shape == (2 ** 40, 0, 1, 1)
         run_op('ConvTransposeGradient', ['x', 'w', 'yt'], ['dwt', 'dbt', 'dxt'], kernel=1)
         assert workspace.FetchBlob('dxt').shape == (2 ** 40, 0, 1, 1)
         # a non-empty filter gradient of an empty batch is 0
         feed(x0=np.zeros((0, 2, 3, 3), np.float32), w0=np.ones((4, 2, 2, 2), np.float32),
              dy0=np.zeros((0, 4, 2, 2), np.float32), dw0=np.full((4, 2, 2, 2), 7, np.float32))
         run_op('ConvGradient', ['x0', 'w0', 'dy0'], ['dw0', 'db0', 'dx0'], kernel=2)
         assert not workspace.FetchBlob('dw0').any() and not workspace.FetchBlob('db0').any()
         """, None, "", note="no error: an empty Y (an empty dY for the gradients) returns at once, the "
                              "gradients 0 (the image loops walked every one of the 2^40 images: "
                              "minutes)"),
    Case("im2col-empty-huge-extent", "ops: conv",
         "Im2Col / Col2Im of x (1,1,2,0) NHWC, pads [2^31-1, 3, 0, 3]; of x (2^40,0,1,1)",
         """
         feed(x=np.zeros((1, 1, 2, 0), np.float32))
         a = dict(kernel=3, order='NHWC', pads=[2 ** 31 - 1, 3, 0, 3])
         run_op('Im2Col', ['x'], ['c'], **a)
         assert workspace.FetchBlob('c').shape == (1, 2 ** 31 - 2, 6, 0)
         run_op('Col2Im', ['c', 'x'], ['y'], **a)
         feed(z=np.zeros((2 ** 40, 0, 1, 1), np.float32))
         run_op('Im2Col', ['z'], ['cz'], kernel=1)
         run_op('Col2Im', ['cz', 'z'], ['yz'], kernel=1)
         assert workspace.FetchBlob('yz').shape == (2 ** 40, 0, 1, 1)
         """, None, "", note="no error: an empty column tensor returns at once (the NHWC walk visited "
                              "its 2^31 positions, and both orders every image: minutes to hours)"),
    # ---------------------------------------------------------------- ConvTranspose
    Case("convt-adj", "ops: conv", "ConvTranspose([x, w], kernel=3, stride=2, adj=3)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(4, 2, 3, 3))
         run_op('ConvTranspose', ['x', 'w'], ['y'], kernel=3, stride=2, adj=3)
         """, V, r"op ConvTranspose #0: argument adjs: value 0 is 3, must lie in \[0, stride 2\]",
         note="checked when the op is created; adjs / adj / adj_h + adj_w (default 0), one per kernel dim, "
              "each <= stride as in Caffe2"),
    Case("convt-legacy-pooling", "ops: conv", "ConvTranspose([x, w], kernel=3, legacy_pad=3)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(4, 2, 3, 3))
         run_op('ConvTranspose', ['x', 'w'], ['y'], kernel=3, legacy_pad=3)
         """, V, r"op ConvTranspose #0: argument legacy_pad 3 \(CAFFE_LEGACY_POOLING\) is not supported by "
                 r"the transposed convolution \(give 0 NOTSET, 1 VALID or 2 SAME\)",
         note="checked when the op is created (Caffe2 aborted the process)"),
    Case("convt-filter-shape", "ops: conv", "ConvTranspose([x (2,4,5,5), w (6,2,3,3)], kernel=3)",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(6, 2, 3, 3))
         run_op('ConvTranspose', ['x', 'w'], ['y'], kernel=3)
         """, V, r"op ConvTranspose #0: input 1 blob 'w' \(filter\) must have shape \(4, C/group, 3, 3\) "
                 r"\(X \(2, 4, 5, 5\) float32: its channels first; order NCHW, kernel from the arguments\), "
                 r"got \(6, 2, 3, 3\) float32",
         note="the filter is (C_in, C_out / group, kernel...), NHWC (C_in, kernel..., C_out / group); a "
              "group that does not divide C_in and a bias not (C_out,) are ValueErrors too"),
    Case("convt-output-size", "ops: conv", "ConvTranspose([x (1,4,1,1), w (4,2,3,3)], kernel=3, pad=2)",
         """
         feed(x=f32(1, 4, 1, 1), w=f32(4, 2, 3, 3))
         run_op('ConvTranspose', ['x', 'w'], ['y'], kernel=3, pad=2)
         """, V, r"op ConvTranspose #0: input 0 blob 'x' \(1, 4, 1, 1\) float32 \(order NCHW\): the output "
                 r"size in dim 0, \(1 - 1\) \* stride 1 \+ dilation 1 \* \(kernel 3 - 1\) \+ 1 \+ adj 0 - "
                 r"pads 2 - 2 = -1, must be >= 1",
         note="Caffe2 made a tensor of negative size; a spatial size 0 in X is a ValueError too"),
    Case("convt-grad-dy-shape", "ops: conv", "ConvTransposeGradient([x (2,4,5,5), w (4,2,3,3), "
                                             "dy (2,2,7,8)])",
         """
         feed(x=f32(2, 4, 5, 5), w=f32(4, 2, 3, 3), dy=f32(2, 2, 7, 8))
         run_op('ConvTransposeGradient', ['x', 'w', 'dy'], ['dw', 'db', 'dx'], kernel=3)
         """, V, r"op ConvTransposeGradient #0: input 2 blob 'dy' \(dY\) must have the shape of "
                 r"ConvTranspose's output \(2, 2, 7, 7\) float32 \(X \(2, 4, 5, 5\) float32, filter "
                 r"\(4, 2, 3, 3\) float32\), got \(2, 2, 7, 8\) float32",
         note="the output count for no_bias is Conv's rule (checked when the op is created)"),
    Case("convt-empty", "ops: conv", "ConvTranspose(x (0,3,4,4)), ConvTranspose(x (2,0,4,4)), gradient",
         """
         feed(x=np.zeros((0, 3, 4, 4), np.float32), w=f32(3, 2, 3, 3), b=f32(2),
              z=np.zeros((2, 0, 4, 4), np.float32), wz=np.zeros((0, 2, 3, 3), np.float32))
         run_op('ConvTranspose', ['x', 'w', 'b'], ['y'], kernel=3)
         assert workspace.FetchBlob('y').shape == (0, 2, 6, 6)
         run_op('ConvTranspose', ['z', 'wz', 'b'], ['yz'], kernel=3)
         assert (workspace.FetchBlob('yz') == workspace.FetchBlob('b')[None, :, None, None]).all()
         run_op('ConvTransposeGradient', ['x', 'w', 'y'], ['dw', 'db', 'dx'], kernel=3)
         assert (workspace.FetchBlob('dw') == 0).all() and (workspace.FetchBlob('db') == 0).all()
         """, None, "",
         note="no error: empty outputs; no input channels give the bias; no images give zero gradients"),
    # ---------------------------------------------------------------- pooling
    Case("pool-pad-not-smaller-than-kernel", "ops: pool", "MaxPool(x, kernel=3, pad=3)",
         "feed(x=f32(2, 3, 5, 6)); run_op('MaxPool', ['x'], ['y'], kernel=3, pad=3)", V,
         r"op MaxPool #0: argument pads: the head pad of dim 0 is 3, not smaller than the kernel 3 \(pooling "
         r"needs pad < kernel\)",
         note="checked when the op is created, as Caffe2's PoolOp (not with global_pooling); the kernel, "
              "stride, pad, legacy_pad and order errors are the shared base's"),
    Case("pool-grad-y-shape", "ops: pool", "MaxPoolGradient([x (2,3,5,6), y (2,3,2,2), dy], kernel=2, "
                                           "stride=2)",
         """
         feed(x=f32(2, 3, 5, 6), y=f32(2, 3, 2, 2), dy=f32(2, 3, 2, 3))
         run_op('MaxPoolGradient', ['x', 'y', 'dy'], ['dx'], kernel=2, stride=2)
         """, V, r"op MaxPoolGradient #0: input 1 blob 'y' \(Y\) must have the pooled shape \(2, 3, 2, 3\) "
                 r"float32 of input 0 blob 'x' \(2, 3, 5, 6\) float32, got \(2, 3, 2, 2\) float32",
         note="dY (input 2) likewise; AveragePoolGradient checks Y's shape too (Caffe2 read its dims)"),
    Case("pool-grad-dy-int32", "ops: pool", "AveragePoolGradient([x, y, dy_int32], kernel=2)",
         """
         feed(x=f32(2, 3, 4, 4), y=f32(2, 3, 3, 3), dy=np.zeros((2, 3, 3, 3), np.int32))
         run_op('AveragePoolGradient', ['x', 'y', 'dy'], ['dx'], kernel=2)
         """, T_, r"op AveragePoolGradient #0: input 2 blob 'dy' must be float32, got \(2, 3, 3, 3\) int32"),
    Case("pool-empty-and-window-past-the-image", "ops: pool",
         "MaxPool(x (0,3,4,4)); MaxPool(x (1,1,5), kernels=[1], strides=[3], legacy_pad=3)",
         """
         feed(x=np.zeros((0, 3, 4, 4), np.float32), z=np.arange(5, dtype=np.float32).reshape(1, 1, 5))
         run_op('MaxPool', ['x'], ['y'], kernel=2, stride=2)
         assert workspace.FetchBlob('y').shape == (0, 3, 2, 2)
         run_op('MaxPool', ['z'], ['w'], kernels=[1], strides=[3], legacy_pad=3)
         assert workspace.FetchBlob('w').tolist() == [[[0, 3, -np.finfo(np.float32).max]]]
         """, None, "",
         note="no error: empty outputs; CAFFE_LEGACY_POOLING with head pad 0 and stride > kernel can put the "
              "last window past the image: its max is -FLT_MAX (Caffe2's start value), its average 0"),
    Case("lp-pool-p-not-positive", "ops: pool", "LpPool(x, kernel=2, p=0.0)",
         "feed(x=f32(2, 3, 5, 6)); run_op('LpPool', ['x'], ['y'], kernel=2, p=0.0)", V,
         r"op LpPool #0: argument p must be > 0 \(the norm's exponent, inf allowed\), got 0",
         note="checked when the op is created (Caffe2 did not check: p = 0 gave (sum |x|^0)^inf); a NaN or "
              "negative p likewise, a p that is not a number a TypeError; p = inf is accepted (max |x|)"),
    Case("lp-pool-grad-dy-shape", "ops: pool", "LpPoolGradient([x (2,3,5,6), y, dy (2,3,2,2)], kernel=2, "
                                               "stride=2)",
         """
         feed(x=f32(2, 3, 5, 6), y=f32(2, 3, 2, 3), dy=f32(2, 3, 2, 2))
         run_op('LpPoolGradient', ['x', 'y', 'dy'], ['dx'], kernel=2, stride=2)
         """, V, r"op LpPoolGradient #0: input 2 blob 'dy' \(dY\) must have the pooled shape \(2, 3, 2, 3\) "
                 r"float32 of input 0 blob 'x' \(2, 3, 5, 6\) float32, got \(2, 3, 2, 2\) float32",
         note="Y (input 1) likewise (Caffe2 did not check them: 'TODO: Add shape checks')"),
    Case("lp-pool-grad-at-zero", "ops: pool", "LpPoolGradient(x = 0 in a window, p=1)",
         """
         feed(x=np.array([[[0, 2, 0, 0]]], np.float32))
         run_op('LpPool', ['x'], ['y'], kernels=[2], strides=[2], p=1.0)
         feed(dy=np.ones((1, 1, 2), np.float32))
         run_op('LpPoolGradient', ['x', 'y', 'dy'], ['dx'], kernels=[2], strides=[2], p=1.0)
         assert workspace.FetchBlob('dx').tolist() == [[[0, 1, 0, 0]]]
         """, None, "",
         note="no error: a cell with x = 0 gets gradient 0, also in a window of zeros (Y = 0); Caffe2 gave "
              "NaN there for p < 2 (0 * inf) and for Y = 0 (0 / 0)"),
    # ---------------------------------------------------------------- ChannelShuffle, ResizeNearest
    Case("channel-shuffle-group-divides", "ops: image", "ChannelShuffle(x (2,6,3,3), group=4)",
         "feed(x=f32(2, 6, 3, 3)); run_op('ChannelShuffle', ['x'], ['y'], group=4)", V,
         r"op ChannelShuffle #0: input 0 blob 'x' \(2, 6, 3, 3\) float32 has 6 channels \(order NCHW\), not a "
         r"multiple of argument group=4",
         note="ChannelShuffleGradient and order NHWC (the last dim) likewise"),
    Case("channel-shuffle-group-zero", "ops: image", "ChannelShuffle(x, group=0)",
         "feed(x=f32(2, 6, 3, 3)); run_op('ChannelShuffle', ['x'], ['y'], group=0)", V,
         r"op ChannelShuffle #0: argument group=0 must be >= 1",
         note="checked when the op is created; Caffe2 computed C % 0 (and divided by N C = 0 for an empty X)"),
    Case("resize-nearest-scale-arg", "ops: image", "ResizeNearest(x, width_scale=0)",
         "feed(x=f32(2, 3, 4, 4)); run_op('ResizeNearest', ['x'], ['y'], width_scale=0.0)", V,
         r"op ResizeNearest #0: argument width_scale=0 must be a finite number > 0",
         note="checked when the op is created (Caffe2 refused <= 0; NaN and inf are refused here too)"),
    Case("resize-nearest-scales-input-values", "ops: image", "ResizeNearest(x, scales [2, -1])",
         "feed(x=f32(2, 3, 4, 4), s=np.array([2.0, -1.0], np.float32)); "
         "run_op('ResizeNearest', ['x', 's'], ['y'])", V,
         r"op ResizeNearest #0: input 1 blob 's' \(scales\) holds width_scale -1; it must be a finite number "
         r"> 0", note="Caffe2 did not check the scales input: 0 divided by zero, a negative scale gave a "
                      "negative size"),
    Case("resize-nearest-size-overflow", "ops: image", "ResizeNearest(x (2,3,4,4), width_scale=1e9)",
         "feed(x=f32(2, 3, 4, 4)); run_op('ResizeNearest', ['x'], ['y'], width_scale=1e9)", M,
         r"op ResizeNearest #0: input 0 blob 'x' \(2, 3, 4, 4\) float32: the output width 4 x width_scale "
         r"1e\+09 = 4e\+09 overflows int32",
         note="Caffe2's int overflowed; sizes that fit int32 but not memory are refused by the allocation "
              "(MemoryError)"),
    Case("resize-nearest-gradient-dy-shape", "ops: image",
         "ResizeNearestGradient([dy (2,3,8,9), x (2,3,4,4)], scales 2)",
         "feed(dy=f32(2, 3, 8, 9), x=f32(2, 3, 4, 4)); "
         "run_op('ResizeNearestGradient', ['dy', 'x'], ['dx'], width_scale=2.0, height_scale=2.0)", V,
         r"op ResizeNearestGradient #0: input 0 blob 'dy' \(dY\) \(2, 3, 8, 9\) float32 must have the shape "
         r"ResizeNearest gives for input 1 blob 'x' \(X\) \(2, 3, 4, 4\) float32 with height_scale 2, "
         r"width_scale 2: N 2, C 3, H 8, W 8 \(order NCHW\)",
         note="Caffe2 took N and C from dY and did not check: a larger dY wrote outside dX"),
    # ---------------------------------------------------------------- PadImage
    Case("pad-image-mode", "ops: pad image", "PadImage(x, mode='wrap')",
         "feed(x=f32(2, 3, 5, 6)); run_op('PadImage', ['x'], ['y'], pad=1, mode='wrap')", V,
         r"op PadImage #0: argument mode must be \"constant\", \"reflect\" or \"edge\", got \"wrap\"",
         note="checked when the op is created; so are legacy_pad (0 only), strides and dilations (1 only) "
              "and pads (4 values: t, l, b, r; negative ones crop) -- the shared base's kind RC_CP_PAD"),
    Case("pad-image-legacy-pad", "ops: pad image", "PadImage(x, legacy_pad=2)",
         "feed(x=f32(2, 3, 5, 6)); run_op('PadImage', ['x'], ['y'], legacy_pad=2)", V,
         r"op PadImage #0: takes explicit pads only: argument legacy_pad must be 0 \(NOTSET\), got 2",
         note="as Caffe2's PadImageOp"),
    Case("pad-image-stride", "ops: pad image", "PadImage(x, pad=1, stride=2)",
         "feed(x=f32(2, 3, 5, 6)); run_op('PadImage', ['x'], ['y'], pad=1, stride=2)", V,
         r"op PadImage #0: argument strides: value 0 is 2; padding takes 1 only",
         note="dilations likewise; the kernel arguments are ignored (Caffe2 replaced them by 1s)"),
    Case("pad-image-pads-count", "ops: pad image", "PadImage(x, pads=[1, 1, 1, 1, 1, 1])",
         "feed(x=f32(2, 3, 5, 6)); run_op('PadImage', ['x'], ['y'], pads=[1] * 6)", V,
         r"op PadImage #0: argument pads has 6 values; padding is 2-D: give 4 \(pad_t, pad_l, pad_b, pad_r\)"),
    Case("pad-image-reflect-too-wide", "ops: pad image", "PadImage(x (2,3,5,6), mode='reflect', pads=[4,0,4,6])",
         "feed(x=f32(2, 3, 5, 6)); run_op('PadImage', ['x'], ['y'], mode='reflect', pads=[4, 0, 4, 6])", V,
         r"op PadImage #0: input 0 blob 'x' \(2, 3, 5, 6\) float32: mode \"reflect\" needs pads <= size - 1 "
         r"in dim w \(size 6, pads 0, 6\)",
         note="Caffe2 read outside X there; np.pad would reflect again"),
    Case("pad-image-crop-all", "ops: pad image", "PadImage(x (2,3,5,6), pads=[-3,0,-2,0])",
         "feed(x=f32(2, 3, 5, 6)); run_op('PadImage', ['x'], ['y'], pads=[-3, 0, -2, 0])", V,
         r"op PadImage #0: input 0 blob 'x' \(2, 3, 5, 6\) float32: in dim h the image has size 5 and the "
         r"padded image 0 \(pads -3 \+ -2\); need image >= 0 and padded >= 1",
         note="PadImageGradient likewise when dY's size less the pads is negative"),
    Case("pad-image-empty-image-edge", "ops: pad image", "PadImage(x (2,3,0,6), mode='edge', pad=1)",
         "feed(x=f32(2, 3, 0, 6)); run_op('PadImage', ['x'], ['y'], mode='edge', pad=1)", V,
         r"op PadImage #0: input 0 blob 'x' \(2, 3, 0, 6\) float32: dim h of the image has size 0: mode "
         r"\"edge\" has no cell to copy",
         note="reflect likewise; constant mode pads an empty image (Y all `value`)"),
    Case("pad-image-grad-int32", "ops: pad image", "PadImageGradient(dy_int32, pad=1)",
         "feed(dy=np.zeros((2, 3, 4, 4), np.int32)); run_op('PadImageGradient', ['dy'], ['dx'], pad=1)", T_,
         r"op PadImageGradient #0: input 0 blob 'dy' must be float32, got \(2, 3, 4, 4\) int32"),
    Case("pad-image-huge", "ops: pad image", "PadImage(x (1,1,1,1), pad=2^31-1)",
         "feed(x=f32(1, 1, 1, 1)); run_op('PadImage', ['x'], ['y'], pad=2 ** 31 - 1)", M,
         r"op PadImage #0: output 0 blob 'y': "),
    # ---------------------------------------------------------------- SpaceToBatch / BatchToSpace
    Case("space-to-batch-block-not-dividing", "ops: pad image", "SpaceToBatch(x (2,3,4,6), block_size=3)",
         "feed(x=f32(2, 3, 4, 6)); run_op('SpaceToBatch', ['x'], ['y'], block_size=3)", V,
         r"op SpaceToBatch #0: input 0 blob 'x' \(2, 3, 4, 6\) float32: the padded height, 4 \+ pads 0 \+ 0 = 4, "
         r"is not a multiple of block_size 3", note="as Caffe2's CAFFE_ENFORCE"),
    Case("space-to-batch-negative-pad", "ops: pad image", "SpaceToBatch(x, pad_l=-2)",
         "feed(x=f32(2, 3, 4, 6)); run_op('SpaceToBatch', ['x'], ['y'], pad_l=-2)", V,
         r"op SpaceToBatch #0: argument pad_l must lie in \[0, 2\^31 - 1\], got -2",
         note="checked when the op is created (Caffe2 did not check; it also read pad_l, pad_b and pad_r from "
              "pad); block_size must be >= 1 (0 divided by zero) and order NCHW"),
    Case("space-to-batch-rank", "ops: pad image", "SpaceToBatch(x (3,4,6))",
         "feed(x=f32(3, 4, 6)); run_op('SpaceToBatch', ['x'], ['y'])", V,
         r"op SpaceToBatch #0: input 0 blob 'x' \(3, 4, 6\) float32 must have 4 dims \(N, C, H, W\)"),
    Case("space-to-batch-batch-overflow", "ops: pad image", "SpaceToBatch(x (3,1,0,0), block_size=2^31-1)",
         "feed(x=np.zeros((3, 1, 0, 0), np.float32)); run_op('SpaceToBatch', ['x'], ['y'], block_size=2 ** 31 - 1)",
         M, r"op SpaceToBatch #0: input 0 blob 'x' \(3, 1, 0, 0\) float32: the output batch, 3 x block_size\^2 "
            r"4611686014132420609, is beyond 2\^63"),
    Case("batch-to-space-batch-not-dividing", "ops: pad image", "BatchToSpace(x (10,3,32,32), pad=3)",
         "feed(x=f32(10, 3, 32, 32)); run_op('BatchToSpace', ['x'], ['y'], pad=3)", V,
         r"op BatchToSpace #0: input 0 blob 'x' \(10, 3, 32, 32\) float32: the batch 10 is not a multiple of "
         r"block_size\^2 = 4", note="Caffe2 truncated the batch (its own doc example gave 2 images of 10)"),
    Case("batch-to-space-pads-crop-all", "ops: pad image", "BatchToSpace(x (4,3,2,2), pad_t=3, pad_b=2)",
         "feed(x=f32(4, 3, 2, 2)); run_op('BatchToSpace', ['x'], ['y'], pad_t=3, pad_b=2)", V,
         r"op BatchToSpace #0: input 0 blob 'x' \(4, 3, 2, 2\) float32: the pads 3 \+ 2 crop more than the height "
         r"2 x block_size 2 = 4", note="Caffe2 made a negative dim"),
    Case("batch-to-space-int32", "ops: pad image", "BatchToSpace(x int32)",
         "feed(x=np.zeros((4, 3, 2, 2), np.int32)); run_op('BatchToSpace', ['x'], ['y'])", T_,
         r"op BatchToSpace #0: input 0 blob 'x' must be float32, got \(4, 3, 2, 2\) int32"),
    # ---------------------------------------------------------------- Dropout
    Case("dropout-ratio", "ops: dropout", "Dropout(x, ratio=1.0)",
         "feed(x=f32(3, 4)); run_op('Dropout', 'x', ['y', 'm'], ratio=1.0)", V,
         r"op Dropout #0: argument 'ratio' must be in \[0, 1\), got 1"),
    Case("dropout-no-mask-output", "ops: dropout", "Dropout(x) -> y only, is_test=0",
         "feed(x=f32(3, 4)); run_op('Dropout', 'x', 'y')", V,
         r"op Dropout #0: with is_test=0 the outputs are \(Y, mask\): output 1 \(the mask\) is missing for "
         r"input blob 'x'", note="with is_test=1 the mask output is optional"),
    Case("dropout-grad-mask-shape", "ops: dropout", "DropoutGrad([dy (3,4), mask (3,5)])",
         "feed(dy=f32(3, 4), m=np.ones((3, 5), np.int32)); run_op('DropoutGrad', ['dy', 'm'], 'dx')", V,
         r"op DropoutGrad #0: input 1 blob 'm' \(the mask\) of shape \(3, 5\) int32 must have the shape of "
         r"input 0 blob 'dy' \(3, 4\) float32"),
    Case("dropout-recompute-unseeded", "recurrent: dropout",
         "backward step net recomputing a Dropout that has no 'seed'",
         """
         m = core.Net('drn')
         step = core.Net('step'); step.Proto().external_input.extend(['input_t', 'timestep', 'h_prev'])
         step.Dropout(step.Sum(['h_prev', 'input_t'], 'd_in'), ['d_t', 'mask_t'], ratio=0.5)
         step.Copy('d_t', 'h_t'); step.Proto().external_output.extend(['h_t'])
         out = rnn.recurrent_net(net=m, cell_net=step, inputs=[('input_t', 'x')],
                                 initial_cell_inputs=[('h_prev', 'h0')], links={'h_prev': 'h_t'},
                                 scope='dr', recompute_blobs_on_backward=['d_t', 'mask_t'])
         for o in m.Proto().op:
             for a in o.arg:
                 if a.name == 'backward_step_net':
                     for so in a.n.op:
                         so.arg[:] = [x for x in so.arg if x.name != 'seed']
         m.AddGradientOperators([m.SumElements(out[0], 'loss')])
         feed(x=f32(3, 2, 4), h0=f32(1, 2, 4)); workspace.RunNetOnce(m)
         """, V, r"step op Dropout #0 of the backward step net recomputes a forward Dropout and needs that "
                 r"op's "
                 r"argument 'seed' \(recurrent_net sets it\)",
         note="recurrent_net seeds a recomputed Dropout; only a hand-edited backward step net lacks it"),
    # ---------------------------------------------------------------- batched ops (attention)
    Case("batch-matmul-batch-dims", "ops: batch", "BatchMatMul([a (2,3,4), b (3,4,5)])",
         "feed(a=f32(2, 3, 4), b=f32(3, 4, 5)); run_op('BatchMatMul', ['a', 'b'], 'y')", V,
         r"op BatchMatMul #0: batch dims differ: input 0 blob 'a' of shape \(2, 3, 4\) float32 and input 1 "
         r"blob 'b' of shape \(3, 4, 5\) float32 must agree on all dims but the last two \(dim 0: 2 vs 3; "
         r"or give broadcast=1\)", note="without broadcast=1, A and B must also have the same ndim"),
    Case("batch-matmul-inner-dims", "ops: batch", "BatchMatMul([a (2,3,4), b (2,5,6)])",
         "feed(a=f32(2, 3, 4), b=f32(2, 5, 6)); run_op('BatchMatMul', ['a', 'b'], 'y')", V,
         r"op BatchMatMul #0: inner dimensions differ: input 0 blob 'a' of shape \(2, 3, 4\) float32 gives "
         r"3 x 4 matrices \(trans_a=0\) but input 1 blob 'b' of shape \(2, 5, 6\) float32 gives 5 x 6 "
         r"\(trans_b=0\)", note="checked already at CreateNet when A and B hold tensors"),
    Case("batch-matmul-broadcast", "ops: batch",
         "CreateNet(net with BatchMatMul([a (2,3,4), b (3,4,5)], broadcast=1))",
         """
         feed(a=f32(2, 3, 4), b=f32(3, 4, 5))
         n = core.Net('bmm')
         n.BatchMatMul(['a', 'b'], 'y', broadcast=1)
         workspace.CreateNet(n)
         """, V, r"net 'bmm': op BatchMatMul #0: batch dims do not broadcast: input 0 blob 'a' of shape "
                 r"\(2, 3, 4\) float32 and input 1 blob 'b' of shape \(3, 4, 5\) float32 \(batch dim 1 from "
                 r"the right: 2 vs 3; each must be equal or 1\)", note="checked already at CreateNet"),
    Case("sequence-mask-mode", "ops: batch", "SequenceMask([x, lengths], mode='diagonal')",
         "feed(x=f32(2, 3), l=np.ones(2, np.int32)); "
         "run_op('SequenceMask', ['x', 'l'], 'y', mode='diagonal')",
         V, r"op SequenceMask #0: argument mode='diagonal' is not supported: one of 'sequence', 'window', "
            r"'upper', 'lower', 'upperdiag', 'lowerdiag'",
         note="mode defaults to 'sequence' (Caffe2 requires the argument)"),
    Case("sequence-mask-lengths-count", "ops: batch", "SequenceMask([x (2,3,4), lengths (2,)], axis=2)",
         """
         feed(x=f32(2, 3, 4), l=np.ones(2, np.int32))
         run_op('SequenceMask', ['x', 'l'], 'y', axis=2)
         """, V, r"op SequenceMask #0: input 1 blob 'l' \(sequence_lengths\) must have shape \(6,\), one "
                 r"length per row of input 0 blob 'x' of shape \(2, 3, 4\) float32 viewed as 6 x 4 at "
                 r"axis 2, got \(2,\) int32", note="sequence_lengths must be int32 (TypeError otherwise)"),
    Case("sequence-mask-negative-length", "ops: batch", "SequenceMask([x (3,4), lengths [2, 0, -1]])",
         """
         feed(x=f32(3, 4), l=np.array([2, 0, -1], np.int32))
         run_op('SequenceMask', ['x', 'l'], 'y')
         """, V, r"op SequenceMask #0: input 1 blob 'l' \(sequence_lengths\) holds a negative length -1 at "
                 r"index 2", note="checked when the op runs; a length above the row size masks nothing"),
    # ---------------------------------------------------------------- seq2seq ops (ReversePackedSegs, ...)
    Case("reverse-packed-segs-rank", "ops: seq2seq", "ReversePackedSegs([data (4,), lengths (1,)])",
         "feed(x=f32(4), l=np.ones(1, np.int32)); run_op('ReversePackedSegs', ['x', 'l'], 'y')", V,
         r"op ReversePackedSegs #0: input 0 blob 'x' \(data\) must have at least 2 dims \(T, N, \.\.\.\), "
         r"got \(4,\) float32", note="data is float32 or int32, (T, N, ...); Caffe2 required exactly 3 dims"),
    Case("reverse-packed-segs-lengths-count", "ops: seq2seq",
         "ReversePackedSegs([data (4,2,3), lengths (3,)])",
         "feed(x=f32(4, 2, 3), l=np.ones(3, np.int32)); run_op('ReversePackedSegs', ['x', 'l'], 'y')", V,
         r"op ReversePackedSegs #0: input 1 blob 'l' \(lengths\) must have shape \(2,\), one length per "
         r"batch entry \(dim 1\) of input 0 blob 'x' of shape \(4, 2, 3\) float32, got \(3,\) int32",
         note="checked already at CreateNet when both hold tensors"),
    Case("reverse-packed-segs-lengths-dtype", "ops: seq2seq", "ReversePackedSegs([data, lengths float32])",
         "feed(x=f32(4, 2, 3), l=np.ones(2, np.float32)); run_op('ReversePackedSegs', ['x', 'l'], 'y')", T_,
         r"op ReversePackedSegs #0: input 1 blob 'l' must be int32, got \(2,\) float32",
         note="Caffe2 also took int64 lengths; blobs here are float32 or int32"),
    Case("reverse-packed-segs-length-range", "ops: seq2seq",
         "ReversePackedSegs([data (4,3,2), lengths [2, -1, 5]])",
         """
         feed(x=f32(4, 3, 2), l=np.array([2, -1, 5], np.int32))
         run_op('ReversePackedSegs', ['x', 'l'], 'y')
         """, V, r"op ReversePackedSegs #0: input 1 blob 'l' \(lengths\) holds -1 at position 1, outside "
                 r"\[0, 4\] \(T = dim 0 of input 0 blob 'x' of shape \(4, 3, 2\) float32\)",
         after="feed(l=np.array([2, 0, 4], np.int32)); run_op('ReversePackedSegs', ['x', 'l'], 'y')",
         note="checked when the op runs, before anything is written; Caffe2 checked only the upper bound "
              "(a negative length copied the entry unreversed)"),
    Case("reverse-packed-segs-in-place-on-lengths", "ops: seq2seq",
         "ReversePackedSegs([data, lengths], lengths)",
         "feed(x=f32(4, 2), l=np.ones(2, np.int32)); run_op('ReversePackedSegs', ['x', 'l'], 'l')", V,
         r"op ReversePackedSegs #0: input 1 and output 0 are the same blob 'l', which this op does not allow "
         r"\(in-place\)", note="in place on data is allowed"),
    Case("sqr-int32", "ops: seq2seq", "Sqr(x int32)",
         "feed(x=np.arange(6, dtype=np.int32)); run_op('Sqr', 'x', 'y')", T_,
         r"op Sqr #0: input 0 blob 'x' must be float32, got \(6,\) int32"),
    Case("sqr-gradient-shapes", "ops: seq2seq", "SqrGradient([x (2,3), dy (3,2)])",
         "feed(x=f32(2, 3), dy=f32(3, 2)); run_op('SqrGradient', ['x', 'dy'], 'dx')", V,
         r"op SqrGradient #0: input 1 blob 'dy' of shape \(3, 2\) float32 must have the shape of input 0 "
         r"blob 'x' \(2, 3\) float32"),
    Case("sqr-in-place-gradient", "ops: seq2seq", "net.Sqr('x', 'x'); AddGradientOperators",
         """
         n = core.Net('sq')
         n.SumElements(n.Sqr('x', 'x'), 'loss')
         n.AddGradientOperators(['loss'])
         """, V, r"Sqr gradient: the forward op computes 'x' in place \(inputs \['x'\]\), so the input it "
                 r"overwrote is lost; the gradient needs it",
         note="Sqr in place runs; only its gradient needs X. Negative in place has a gradient"),
    Case("negative-int32", "ops: seq2seq", "Negative(x int32)",
         "feed(x=np.arange(6, dtype=np.int32)); run_op('Negative', 'x', 'y')", T_,
         r"op Negative #0: input 0 blob 'x' must be float32, got \(6,\) int32",
         note="Caffe2's Negative also took integer types"),
    # ---------------------------------------------------------------- beam-search ops (TopK, Tile, ...)
    Case("topk-k-too-large", "ops: beam search", "TopK(x (2,5), k=2**62)",
         "feed(x=f32(2, 5)); run_op('TopK', 'x', ['v', 'i'], k=2 ** 62)", M,
         r"op TopK #0: output 0 blob 'v': tensor of overflowing elements is too large to allocate",
         after="run_op('TopK', 'x', ['v', 'i'], k=5)",
         note="k > dims[axis] pads values with 0 and indices with -1, as Caffe2; this k's padding cannot "
              "be allocated"),
    Case("topk-k-missing", "ops: beam search", "TopK(x) without k",
         "feed(x=f32(2, 5)); run_op('TopK', 'x', ['v', 'i'])", V, r"op TopK #0: argument 'k' is required",
         note="k must be >= 1 too"),
    Case("topk-int32", "ops: beam search", "TopK(x int32, k=1)",
         "feed(x=np.arange(6, dtype=np.int32)); run_op('TopK', 'x', ['v', 'i'], k=1)", T_,
         r"op TopK #0: input 0 blob 'x' must be float32, got \(6,\) int32"),
    Case("topk-gradient-index-range", "ops: beam search", "TopKGradient([dv (1,2), indices [0, 5], x (1,5)])",
         """
         feed(dv=f32(1, 2), i=np.array([[0, 5]], np.int32), x=f32(1, 5))
         run_op('TopKGradient', ['dv', 'i', 'x'], 'dx')
         """, V, r"op TopKGradient #0: input 1 blob 'i' \(1, 2\) int32 \(indices\): index 5 at flat "
                 r"position 1 is out of range \[0, 5\) \(dim 1 of input 2 blob 'x' \(1, 5\) float32; -1, "
                 r"TopK's padding, is skipped\)",
         note="checked before anything is written; Caffe2 wrote out of bounds"),
    Case("tile-tiles-missing", "ops: beam search", "Tile(x, axis=0) without tiles",
         "feed(x=f32(2, 3)); run_op('Tile', 'x', 'y', axis=0)", V,
         r"op Tile #0: argument 'tiles' is required \(or give it as input 1\)",
         note="axis defaults to 0 (Caffe2 required it too)"),
    Case("numpy-tile-repeats-length", "ops: beam search", "NumpyTile([x (2,3), repeats [2]])",
         "feed(x=f32(2, 3), r=np.array([2], np.int32)); run_op('NumpyTile', ['x', 'r'], 'y')", V,
         r"op NumpyTile #0: input 1 blob 'r' \(repeats\) \(1,\) int32 must have one entry per dim of input 0 "
         r"blob 'x' \(2, 3\) float32",
         after="feed(r=np.array([2, 1], np.int32)); run_op('NumpyTile', ['x', 'r'], 'y')",
         note="as Caffe2 (np.tile would take other lengths)"),
    Case("numpy-tile-negative", "ops: beam search", "NumpyTile([x (2,3), repeats [2, -1]])",
         "feed(x=f32(2, 3), r=np.array([2, -1], np.int32)); run_op('NumpyTile', ['x', 'r'], 'y')", V,
         r"op NumpyTile #0: input 1 blob 'r' \(repeats\) \(2,\) int32: entry 1 is -1, must be >= 0",
         note="Caffe2 did not check"),
    Case("tile-tiles-range", "ops: beam search", "Tile(x, tiles=0)",
         "feed(x=f32(2, 3)); run_op('Tile', 'x', 'y', tiles=0)", V,
         r"op Tile #0: argument 'tiles' must be in \[1, 2147483647\], got 0",
         note="Caffe2 did not check (a negative count gave a negative dim; TileGradient of 0 divided by "
              "zero)"),
    Case("tile-tiles-input-shape", "ops: beam search", "Tile([x, tiles (2,)])",
         "feed(x=f32(2, 3), t=np.array([2, 3], np.int32)); run_op('Tile', ['x', 't'], 'y')", V,
         r"op Tile #0: input 1 blob 't' \(tiles\) must have shape \(1,\), got \(2,\) int32",
         note="tiles and axis inputs are int32 of shape (1,) and override the arguments"),
    Case("tile-axis-out-of-range", "ops: beam search", "Tile(x (2,3), tiles=2, axis=2)",
         "feed(x=f32(2, 3)); run_op('Tile', 'x', 'y', tiles=2, axis=2)", V,
         r"op Tile #0: axis 2 is out of range for input 0 blob 'x' \(2, 3\) float32",
         note="checked already at CreateNet when the axis is an argument"),
    Case("tile-gradient-not-multiple", "ops: beam search", "TileGradient(dy (2,7), tiles=2, axis=1)",
         "feed(dy=f32(2, 7)); run_op('TileGradient', 'dy', 'dx', tiles=2, axis=1)", V,
         r"op TileGradient #0: dim 1 of input 0 blob 'dy' \(2, 7\) float32 is not a multiple of tiles=2"),
    Case("log-int32", "ops: beam search", "Log(x int32)",
         "feed(x=np.arange(6, dtype=np.int32)); run_op('Log', 'x', 'y')", T_,
         r"op Log #0: input 0 blob 'x' must be float32, got \(6,\) int32",
         note="Exp the same; log(0) = -inf and log(x < 0) = NaN are not errors"),
    Case("log-in-place-gradient", "ops: beam search", "net.Log('x', 'x'); AddGradientOperators",
         """
         n = core.Net('lg')
         n.SumElements(n.Log('x', 'x'), 'loss')
         n.AddGradientOperators(['loss'])
         """, V, r"Log gradient: the forward op computes 'x' in place \(inputs \['x'\]\), so the input it "
                 r"overwrote is lost; the gradient needs it",
         note="Log in place runs; its gradient dY / X needs X. Exp in place has a gradient (it uses Y)"),
    Case("flatten-to-vec-in-place", "ops: beam search", "FlattenToVec(x, x)",
         "feed(x=f32(2, 3)); run_op('FlattenToVec', 'x', 'x')", V,
         r"op FlattenToVec #0: input 0 and output 0 are the same blob 'x', which this op does not allow "
         r"\(in-place\)", note="as Caffe2; its gradient ResizeLike(dY, X) needs X's shape"),
    # ---------------------------------------------------------------- shape ops
    Case("concat-axis-out-of-range", "ops: shape", "Concat([x, x], axis=7)",
         "feed(x=f32(3, 4)); run_op('Concat', ['x', 'x'], ['y', 'split'], axis=7)", I,
         r"op Concat #0: axis 7 is out of range for input 0 \(2 dims\)"),
    Case("split-sizes", "ops: shape", "Split(x (3,4), split=[1, 1], axis=1)",
         "feed(x=f32(3, 4)); run_op('Split', 'x', ['a', 'b'], split=[1, 1], axis=1)", V,
         r"op Split #0: split sizes \(1, 1\) \(argument 'split'\) sum to 2 but axis 1"),
    Case("split-add-axis-sizes", "ops: shape", "Split(x (3,4), split=[2, 0, 1], axis=0, add_axis=1)",
         "feed(x=f32(3, 4)); run_op('Split', 'x', ['a', 'b', 'c'], split=[2, 0, 1], axis=0, add_axis=1)", V,
         r"op Split #0: with add_axis=1 each output is one slice of axis 0, so every split size must be 1"),
    Case("split-by-lengths-count", "ops: shape", "SplitByLengths([x (5,2), lengths (3,)], [a, b], axis=0)",
         """
         feed(x=f32(5, 2), l=np.array([1, 2, 2], np.int32))
         run_op('SplitByLengths', ['x', 'l'], ['a', 'b'], axis=0)
         """, V, r"op SplitByLengths #0: input 1 blob 'l' \(lengths\) of shape \(3,\) int32: 3 lengths "
                 r"cannot be shared by 2 outputs \(the count must be a multiple of the outputs\)"),
    Case("split-by-lengths-sum", "ops: shape", "SplitByLengths([x (5,2), lengths = [1, 1]], [a], axis=0)",
         """
         feed(x=f32(5, 2), l=np.array([1, 1], np.int32))
         run_op('SplitByLengths', ['x', 'l'], ['a'], axis=0)
         """, V, r"op SplitByLengths #0: input 1 blob 'l' \(lengths\) sums to 2, but axis 0 of input 0 blob "
                 r"'x' \(5, 2\) float32 has size 5 \(they must be equal\)"),
    Case("reshape-two-minus-one", "ops: shape", "Reshape(x, shape=[-1, -1])",
         "feed(x=f32(3, 4)); run_op('Reshape', 'x', ['y', 'old'], shape=[-1, -1])", V,
         r"op Reshape #0: argument 'shape' has more than one -1"),
    Case("reshape-numel", "ops: shape", "Reshape(x (3,4), shape=[5])",
         "feed(x=f32(3, 4)); run_op('Reshape', 'x', ['y', 'old'], shape=[5])", V,
         r"op Reshape #0: cannot reshape input 0 blob 'x' \(3, 4\) float32 \(12 elements\) to \(5,\)"),
    Case("reshape-empty-minus-one", "ops: shape", "Reshape(x (2,0), shape=[-1, 0])",
         "feed(x=np.zeros((2, 0), np.float32)); run_op('Reshape', 'x', ['y', 'old'], shape=[-1, 0])", V,
         r"op Reshape #0: cannot reshape input 0 blob 'x' \(2, 0\) float32 \(0 elements\) to \(-1, 0\): no "
         r"size for the -1 fits \(the other dims' size is zero\)"),
    Case("prepend-dim-size", "ops: shape", "PrependDim(x, dim_size=0)",
         "feed(x=f32(6, 2)); run_op('PrependDim', 'x', 'y', dim_size=0)", V,
         r"op PrependDim #0: argument 'dim_size' must be > 0, got 0"),
    Case("prepend-dim-not-multiple", "ops: shape", "PrependDim(x (6,2), dim_size=4)",
         "feed(x=f32(6, 2)); run_op('PrependDim', 'x', 'y', dim_size=4)", V,
         r"op PrependDim #0: input 0 blob 'x' \(6, 2\) float32 needs 1 to 7 dims, the first a multiple of "
         r"dim_size 4"),
    Case("merge-dim-1d", "ops: shape", "MergeDim(x (3,))",
         "feed(x=f32(3)); run_op('MergeDim', 'x', 'y')", V,
         r"op MergeDim #0: input 0 blob 'x' \(3,\) float32 must have at least 2 dims"),
    Case("lengths-to-shape-unequal", "ops: shape", "LengthsToShape(lengths = [2, 3])",
         "feed(l=np.array([2, 3], np.int32)); run_op('LengthsToShape', 'l', 'y')", V,
         r"op LengthsToShape #0: input 0 blob 'l': all lengths must be equal, got 2 at 0 and 3 at 1"),
    Case("lengths-to-shape-2d", "ops: shape", "LengthsToShape(lengths (2,2))",
         "feed(l=np.zeros((2, 2), np.int32)); run_op('LengthsToShape', 'l', 'y')", V,
         r"op LengthsToShape #0: input 0 blob 'l' \(the lengths\) must be 1-D, got \(2, 2\) int32"),
    Case("lengths-split-negative", "ops: shape", "LengthsSplit(lengths = [3, -4], n_split=2)",
         "feed(l=np.array([3, -4], np.int32)); run_op('LengthsSplit', 'l', 'y', n_split=2)", V,
         r"op LengthsSplit #0: input 0 blob 'l' has a negative length -4 at 1"),
    Case("lengths-split-no-n", "ops: shape", "LengthsSplit(lengths) without n_split",
         "feed(l=np.array([3], np.int32)); run_op('LengthsSplit', 'l', 'y')", V,
         r"op LengthsSplit #0: argument 'n_split' is missing \(or pass it as input 1\)"),
    Case("lengths-split-n-arg", "ops: shape", "LengthsSplit(lengths, n_split=0)",
         "feed(l=np.array([3], np.int32)); run_op('LengthsSplit', 'l', 'y', n_split=0)", V,
         r"op LengthsSplit #0: argument 'n_split' must be in \[1, 2\^31\), got 0"),
    Case("lengths-split-n-input", "ops: shape", "LengthsSplit([lengths, n = [0]])",
         """
         feed(l=np.array([3], np.int32), n=np.array([0], np.int32))
         run_op('LengthsSplit', ['l', 'n'], 'y')
         """, V, r"op LengthsSplit #0: input 1 blob 'n' \(n_split\) must be > 0, got 0"),
    Case("lengths-split-n-shape", "ops: shape", "LengthsSplit([lengths, n (2,)])",
         """
         feed(l=np.array([3], np.int32), n=np.array([1, 2], np.int32))
         run_op('LengthsSplit', ['l', 'n'], 'y')
         """, V, r"op LengthsSplit #0: input 1 blob 'n' \(n_split\) must be a vector of size 1, got \(2,\) "
                 r"int32"),
    Case("transpose-not-permutation", "ops: shape", "Transpose(x, axes=[0, 0])",
         "feed(x=f32(3, 4)); run_op('Transpose', 'x', 'y', axes=[0, 0])", V,
         r"op Transpose #0: argument 'axes' \(0, 0\) is not a permutation of 0..1"),
    Case("nchw2nhwc-rank", "ops: shape", "NCHW2NHWC(x (3,4))",
         "feed(x=f32(3, 4)); run_op('NCHW2NHWC', 'x', 'y')", V,
         r"op NCHW2NHWC #0: input 0 blob 'x' must have 3 to 8 dims, got \(3, 4\) float32"),
    Case("depth-split-sizes", "ops: shape", "DepthSplit(x (3,4), split=[1, 1], axis=1)",
         "feed(x=f32(3, 4)); run_op('DepthSplit', 'x', ['a', 'b'], split=[1, 1], axis=1)", V,
         r"op DepthSplit #0: ", note="Split's checks and messages, under the op's own name"),
    Case("is-empty-no-tensor", "ops: shape", "IsEmpty(e), e created but never written",
         "workspace.CreateBlob('e'); run_op('IsEmpty', 'e', 'y')", V,
         r"op IsEmpty #0: input 0 blob 'e' holds no tensor \(was it fed or computed\?\)"),
    Case("squeeze-non-unit-dim", "ops: shape", "Squeeze(x (3,4), dims=[0])",
         "feed(x=f32(3, 4)); run_op('Squeeze', 'x', 'y', dims=[0])", V,
         r"op Squeeze #0: dim 0 of input 0 blob 'x' \(3, 4\) float32 must be 1 to be squeezed"),
    Case("flatten-axis", "ops: shape", "Flatten(x (3,4), axis=9)",
         "feed(x=f32(3, 4)); run_op('Flatten', 'x', 'y', axis=9)",
         V, r"op Flatten #0: axis 9 is out of range"),
    Case("shape-axes-out-of-range", "ops: shape", "Shape(x (3,4), axes=[0, 2])",
         "feed(x=f32(3, 4)); run_op('Shape', 'x', 'y', axes=[0, 2])", V,
         r"op Shape #0: argument 'axes' entry 1 \(2\) is out of range for input 0 blob 'x' of shape \(3, 4\) "
         r"float32 \(must be in \[-2, 2\)\)", note="negative axes count from the end"),
    Case("slice-starts-ends-count", "ops: shape", "Slice(x (3,4), starts=[0, 1], ends=[2])",
         "feed(x=f32(3, 4)); run_op('Slice', 'x', 'y', starts=[0, 1], ends=[2])", V,
         r"op Slice #0: argument 'starts' has 2 entries but argument 'ends' has 1",
         note="fewer entries than dims keep the remaining dims whole (as Caffe2); more are refused"),
    Case("slice-out-of-range", "ops: shape", "Slice(x (3,4), starts=[0, 3], ends=[2, 2])",
         "feed(x=f32(3, 4)); run_op('Slice', 'x', 'y', starts=[0, 3], ends=[2, 2])", V,
         r"op Slice #0: dim 1 \(size 4\) of input 0 blob 'x' of shape \(3, 4\) float32: start 3 and end 2 "
         r"give \[3, 2\), which is not a range 0 <= start <= end \(a negative value v counts from the end as "
         r"size \+ 1 \+ v; values above the size are clamped\)",
         note="starts/ends given as int32 inputs are checked when the op runs"),
    Case("slice-args-and-inputs", "ops: shape", "CreateNet(net with Slice([x, s, e], starts=[0, 0]))",
         """
         feed(x=f32(3, 4), s=np.zeros(2, np.int32), e=np.ones(2, np.int32))
         n = core.Net('sl')
         n.Slice(['x', 's', 'e'], 'y', starts=[0, 0])
         workspace.CreateNet(n)
         """, V, r"net 'sl': op Slice #0: starts and ends are given by input 1 blob 's' and input 2 blob "
                 r"'e': do not also pass argument 'starts'"),
    # ---------------------------------------------------------------- fill ops
    Case("fill-negative-dim", "ops: fill", "ConstantFill(shape=[-1])",
         "run_op('ConstantFill', [], 'y', shape=[-1], value=1.0)",
         V,
         r"op ConstantFill #0: argument 'shape' for output blob "
         r"'y' has a negative dimension -1 at position 0"),
    Case("fill-huge", "ops: fill", "ConstantFill(shape=[2**40])",
         "run_op('ConstantFill', [], 'y', shape=[2**40], value=1.0)",
         M,
         r"op ConstantFill #0: output blob 'y' of shape \(1099511627776,\): "
         r"cannot allocate 4398046511104 bytes"),
    Case("fill-overflowing-size", "ops: fill", "ConstantFill(shape=[2**40, 2**40])",
         "run_op('ConstantFill', [], 'y', shape=[2**40, 2**40], value=1.0)", M,
         r"tensor of overflowing elements is too large to allocate"),
    Case("uniform-fill-min-max", "ops: fill", "UniformFill(shape=[2], min=1, max=0)",
         "run_op('UniformFill', [], 'y', shape=[2], min=1.0, max=0.0)", V,
         r"op UniformFill #0: argument 'min' \(1\) must be <= 'max' \(0\)"),
    Case("uniform-int-fill-two-inputs", "ops: fill", "UniformIntFill([shape, min], input_as_shape=1)",
         "feed(s=np.array([2], np.int32), lo=np.array([0], np.int32)); "
         "run_op('UniformIntFill', ['s', 'lo'], 'y', input_as_shape=1)", V,
         r"op UniformIntFill #0: takes no input, one \(the shape\) or three \(the shape, min and max\), got two"),
    Case("uniform-fill-min-input-size", "ops: fill", "UniformFill([shape, min (2,), max], input_as_shape=1)",
         "feed(s=np.array([2], np.int32), lo=f32(2), hi=f32(1)); "
         "run_op('UniformFill', ['s', 'lo', 'hi'], 'y', input_as_shape=1)", V,
         r"op UniformFill #0: input 1 blob 'lo' \(min\) must hold one element, got \(2,\) float32"),
    Case("msra-fill-1d", "ops: fill", "MSRAFill(shape=[5])",
         "run_op('MSRAFill', [], 'y', shape=[5])", V,
         r"op MSRAFill #0: output blob 'y' must have at least 2 dims \(fan_out = numel / shape\[1\]\), got "
         r"\(5,\) float32"),
    Case("diagonal-fill-unequal-dims", "ops: fill", "DiagonalFill(shape=[3, 3, 2])",
         "run_op('DiagonalFill', [], 'y', shape=[3, 3, 2], value=1.0)", V,
         r"op DiagonalFill #0: output blob 'y' of shape \(3, 3, 2\): with more than 2 dims all must be equal "
         r"\(dim 2 is 2, dim 0 3\)",
         note="Caffe2's rule; 2-D fills the diagonal of any rectangle (NumPy's fill_diagonal)"),
    Case("given-tensor-fill-count", "ops: fill", "GivenTensorFill(shape=[2, 2], values=[1., 2.])",
         "run_op('GivenTensorFill', [], 'y', shape=[2, 2], values=[1.0, 2.0])",
         V,
         r"op GivenTensorFill #0: argument 'values' has 2 elements "
         r"but shape \(2, 2\) of output blob 'y' needs 4"),
    Case("given-tensor-int-fill-floats", "ops: fill", "GivenTensorIntFill(shape=[2], values=[1.5, 2.5])",
         "run_op('GivenTensorIntFill', [], 'y', shape=[2], values=[1.5, 2.5])", T_,
         r"op GivenTensorIntFill #0: argument 'values' must be a list of ints"),
    # ---------------------------------------------------------------- loss ops
    Case("spatial-softmax-label-range", "ops: loss",
         "SpatialSoftmaxWithLoss([x (1,3,1,2), labels = [[[0, 3]]]])",
         """
         feed(x=f32(1, 3, 1, 2), t=np.array([[[0, 3]]], np.int32))
         run_op('SpatialSoftmaxWithLoss', ['x', 't'], ['p', 'loss'])
         """, I, r"op SpatialSoftmaxWithLoss #0: input 1 blob 't': label 3 at pixel 1 \(flat\) is out of "
                 r"range \[0, 3\) \(the number of classes; -1 is ignored\)",
         note="Caffe2 enforced it in the forward op only; the gradient op read out of bounds"),
    Case("spatial-softmax-label-shape", "ops: loss", "SpatialSoftmaxWithLoss([x (2,3,2,2), labels (2,2,3)])",
         """
         feed(x=f32(2, 3, 2, 2), t=np.zeros((2, 2, 3), np.int32))
         run_op('SpatialSoftmaxWithLoss', ['x', 't'], ['p', 'loss'])
         """, V, r"op SpatialSoftmaxWithLoss #0: input 1 blob 't' \(labels\) must have shape \(N, H, W\) = "
                 r"\(2, 2, 2\), one per pixel of input 0 blob 'x' \(2, 3, 2, 2\) float32, got "
                 r"\(2, 2, 3\) int32",
         note="Caffe2 checked only N and the rank, and read past the labels"),
    Case("label-out-of-range", "ops: loss", "LabelCrossEntropy([p (3,4), label [0, 7, 1]])",
         "feed(p=f32(3, 4), lab=np.array([0, 7, 1], np.int32)); "
         "run_op('LabelCrossEntropy', ['p', 'lab'], 'y')",
         I, r"op LabelCrossEntropy #0: input 1 blob 'lab': label 7 at row 1 is out of range \[0, 4\)"),
    Case("float-labels", "ops: loss", "SoftmaxWithLoss([x, label_float32])",
         "feed(x=f32(3, 4), lab=f32(3)); run_op('SoftmaxWithLoss', ['x', 'lab'], ['p', 'loss'])", T_,
         r"op SoftmaxWithLoss #0: input 1 blob 'lab' must be int32, got \(3,\) float32"),
    Case("squared-l2-shapes", "ops: loss", "SquaredL2Distance([a (3,4), b (5,4)])",
         "feed(a=f32(3, 4), b=f32(5, 4)); run_op('SquaredL2Distance', ['a', 'b'], 'y')", V,
         r"op SquaredL2Distance #0: input 0 blob 'a' and input 1 blob 'b' must have the same shape"),
    Case("softmax-scalar", "ops: loss", "Softmax(x of shape ())",
         "feed(s=np.float32(1)); run_op('Softmax', 's', 'y')", V,
         r"op Softmax #0: argument axis=1 is out of range for input 0 blob 's' of shape \(\) float32"),
    # ---------------------------------------------------------------- cell ops
    Case("lstm-unit-gates-shape", "ops: rnn units", "LSTMUnit(h, c, gates of the wrong size, seq, t)",
         """
         feed(h=f32(1, 3, 2), c=f32(1, 3, 2), g=f32(1, 3, 2))
         feed(sq=np.ones(3, np.int32), ts=np.zeros(1, np.int32))
         run_op('LSTMUnit', ['h', 'c', 'g', 'sq', 'ts'], ['h2', 'c2'])
         """,
         V, r"op LSTMUnit #0: input 2 blob 'g' \(gates\) must be \(1, N=3, G=4\*D=8\), got \(1, 3, 2\)"),
    Case("lstm-unit-timestep-float", "ops: rnn units", "LSTMUnit(..., timestep float32)",
         """
         feed(h=f32(1, 3, 2), c=f32(1, 3, 2), g=f32(1, 3, 8))
         feed(sq=np.ones(3, np.int32), ts=np.zeros(1, np.float32))
         run_op('LSTMUnit', ['h', 'c', 'g', 'sq', 'ts'], ['h2', 'c2'])
         """,
         T_, r"op LSTMUnit #0: input 4 blob 'ts' must be int32, got \(1,\) float32"),
    Case("lstm-unit-missing-timestep", "ops: rnn units", "LSTMUnit(h, c, gates, seq) (4 inputs)",
         """
         feed(h=f32(1, 3, 2), c=f32(1, 3, 2), g=f32(1, 3, 8), sq=np.ones(3, np.int32))
         run_op('LSTMUnit', ['h', 'c', 'g', 'sq'], ['h2', 'c2'])
         """, V, r"op LSTMUnit #0: expects 5 inputs .* got 4 \(is the timestep input missing\?\)"),
    Case("gru-unit-gates-shape", "ops: rnn units", "GRUUnit(h, gates of the wrong size, seq, t)",
         """
         feed(h=f32(1, 3, 2), g=f32(1, 3, 8), sq=np.ones(3, np.int32), ts=np.zeros(1, np.int32))
         run_op('GRUUnit', ['h', 'g', 'sq', 'ts'], 'h2')
         """, V, r"op GRUUnit #0: input 1 blob 'g' \(gates\) must be \(1, N=3, G=3\*D=6\), got \(1, 3, 8\)"),
    Case("blob-fetcher-not-step-workspaces", "ops: recurrent", "RecurrentNetworkBlobFetcher(x)",
         "feed(x=f32(3)); run_op('RecurrentNetworkBlobFetcher', 'x', 'names')", V,
         r"blob 'x' holds no step workspaces: run the forward RecurrentNetwork op first"),
    # ---------------------------------------------------------------- optimizer ops
    Case("iter-overflow", "ops: optim", "Iter(it, it) with it = [2**31 - 1] (int32)",
         "feed(it=np.array([2**31 - 1], np.int32)); run_op('Iter', 'it', 'it')", V,
         r"op Iter #0: output 0 blob 'it' \(the iteration counter\) is at 2147483647: incrementing it would "
         r"overflow int32",
         after="""
         assert workspace.FetchBlob('it').tolist() == [2**31 - 1]
         feed(it=np.array([5], np.int32)); run_op('Iter', 'it', 'it')
         assert workspace.FetchBlob('it').tolist() == [6]
         """, note="the counter is left unchanged"),
    Case("iter-float-counter", "ops: optim", "Iter(it, it) with it float32",
         "feed(it=np.zeros(1, np.float32)); run_op('Iter', 'it', 'it')", T_,
         r"op Iter #0: output 0 blob 'it' \(the iteration counter\) must be int32, got \(1,\) float32"),
    Case("iter-input-not-output", "ops: optim", "Iter(a, b)",
         "feed(a=np.zeros(1, np.int32)); run_op('Iter', 'a', 'b')", V,
         r"op Iter #0: input 0 blob 'a' and output 0 blob 'b' must be the same blob"),
    Case("learning-rate-unknown-policy", "ops: optim", "LearningRate(it, base_lr=0.1, policy='cosin')",
         """
         feed(it=np.zeros(1, np.int32))
         run_op('LearningRate', 'it', 'lr', base_lr=0.1, policy='cosin')
         """, V,
         r"op LearningRate #0: argument policy: unknown policy 'cosin' \(supported: fixed, step, exp, inv, "
         r"poly, multistep, linearWarmup, constantWarmup, alter, hill, slope, gate, cyclical, cosine, "
         r"constantThenLinearWarmup, pieceWarmup, composite, compositeCyclical, compositeCosine\)"),
    Case("learning-rate-missing-argument", "ops: optim",
         "CreateNet(net with LearningRate(policy='step', gamma=0.5))",
         """
         feed(it=np.zeros(1, np.int32))
         n = core.Net('sched')
         n.LearningRate('it', 'lr', base_lr=0.1, policy='step', gamma=0.5)
         workspace.CreateNet(n)
         """, V, r"op LearningRate #0: argument stepsize is required by policy 'step'",
         note="arguments are checked when the net is created"),
    Case("learning-rate-negative-iter", "ops: optim", "LearningRate(it = [-1], policy='exp')",
         """
         feed(it=np.array([-1], np.int32))
         run_op('LearningRate', 'it', 'lr', base_lr=0.1, policy='exp', gamma=0.9)
         """, V, r"op LearningRate #0: input 0 blob 'it' \(the iteration counter\) must be >= 0, got -1"),
    Case("learning-rate-poly-past-max-iter", "ops: optim",
         "LearningRate(it = [12], policy='poly', max_iter=10)",
         """
         feed(it=np.array([12], np.int32))
         run_op('LearningRate', 'it', 'lr', base_lr=0.1, policy='poly', max_iter=10, power=0.5)
         assert workspace.FetchBlob('lr').tolist() == [0.0]
         """, None, "",
         note="no error: the rate is 0 from max_iter on (Caffe2 gave NaN, or a rate that grows again or "
              "changes sign)"),
    Case("momentum-sgd-shape-mismatch", "ops: optim", "MomentumSGDUpdate([g (3,), m (4,), lr, p (3,)])",
         """
         feed(g=f32(3), m=f32(4), lr=np.ones(1, np.float32), p=f32(3))
         run_op('MomentumSGDUpdate', ['g', 'm', 'lr', 'p'], ['g', 'm', 'p'], momentum=0.9)
         """, V,
         r"op MomentumSGDUpdate #0: input 1 blob 'm' must have the shape of input 0 blob 'g' \(3,\) float32, "
         r"got \(4,\) float32"),
    Case("momentum-sgd-no-param-lr-int", "ops: optim", "MomentumSGD([g (3,), m (3,), lr int32])",
         """
         feed(g=f32(3), m=f32(3), lr=np.ones(1, np.int32))
         run_op('MomentumSGD', ['g', 'm', 'lr'], ['g', 'm'], momentum=0.9)
         """, T_, r"op MomentumSGD #0: input 2 blob 'lr' must be float32, got \(1,\) int32",
         note="Caffe2's MomentumSGD: MomentumSGDUpdate without the param (the same checks)"),
    Case("adam-lr-two-values", "ops: optim", "Adam([p, m1, m2, g, lr (2,), it])",
         """
         feed(p=f32(3), m1=f32(3), m2=f32(3), g=f32(3), lr=np.array([-0.1, -0.2], np.float32),
              it=np.zeros(1, np.int32))
         run_op('Adam', ['p', 'm1', 'm2', 'g', 'lr', 'it'], ['p', 'm1', 'm2'])
         """, V,
         r"op Adam #0: input 4 blob 'lr' \(the learning rate\) must hold one value, got \(2,\) float32"),
    Case("adam-beta1-one", "ops: optim", "Adam(..., beta1=1.0)",
         """
         feed(p=f32(3), m1=f32(3), m2=f32(3), g=f32(3), lr=np.ones(1, np.float32), it=np.zeros(1, np.int32))
         run_op('Adam', ['p', 'm1', 'm2', 'g', 'lr', 'it'], ['p', 'm1', 'm2'], beta1=1.0)
         """, V, r"op Adam #0: argument beta1 must be in \[0, 1\), got 1"),
    # ---------------------------------------------------------------- ops: one-hot (csrc/ops/embed.c)
    Case("segment-one-hot-lengths-sum", "ops: one-hot",
         "SegmentOneHot(lens = [1, 2], idx = [0, 1], size = [3])",
         """
         feed(l=np.array([1, 2], np.int32), i=np.array([0, 1], np.int32), n=np.array([3], np.int32))
         run_op('SegmentOneHot', ['l', 'i', 'n'], ['o'])
         """, V, r"op SegmentOneHot #0: input 0 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 3, but "
                 r"input 1 blob 'i' of shape \(2,\) int32 has 2 rows"),
    Case("segment-one-hot-index", "ops: one-hot", "SegmentOneHot(lens = [2], idx = [0, 3], size = [3])",
         """
         feed(l=np.array([2], np.int32), i=np.array([0, 3], np.int32), n=np.array([3], np.int32))
         run_op('SegmentOneHot', ['l', 'i', 'n'], ['o'])
         """, I, r"op SegmentOneHot #0: input 1 blob 'i': index 3 at position 1 is out of range \[0, 3\) "
                 r"\(the index size\)"),
    Case("segment-one-hot-negative-size", "ops: one-hot", "SegmentOneHot(lens = [0], idx = [], size = [-2])",
         """
         feed(l=np.array([0], np.int32), i=np.zeros(0, np.int32), n=np.array([-2], np.int32))
         run_op('SegmentOneHot', ['l', 'i', 'n'], ['o'])
         """, V, r"op SegmentOneHot #0: input 2 blob 'n' \(the index size\) must be >= 0, got -2",
         note="Caffe2 required a size > 0; 0 gives an (L, 0) output here, as OneHot"),
    Case("batch-one-hot-lengths-per-column", "ops: one-hot", "BatchOneHot(x (2, 2), lens (3,), vals (3,))",
         """
         feed(x=np.zeros((2, 2), np.int32), l=np.ones(3, np.int32), v=np.zeros(3, np.int32))
         run_op('BatchOneHot', ['x', 'l', 'v'], ['o'])
         """, V, r"op BatchOneHot #0: input 1 blob 'l' \(lengths\) must hold one length per column of "
                 r"input 0 blob 'x' \(2, 2\) int32 \(2\), got \(3,\) int32"),
    Case("batch-one-hot-values-count", "ops: one-hot", "BatchOneHot(x (2, 2), lens = [1, 1], vals (3,))",
         """
         feed(x=np.zeros((2, 2), np.int32), l=np.ones(2, np.int32), v=np.zeros(3, np.int32))
         run_op('BatchOneHot', ['x', 'l', 'v'], ['o'])
         """, V, r"op BatchOneHot #0: input 2 blob 'v' \(the values, of input 0's dtype\) must hold "
                 r"sum\(lengths\) = 2 elements, got \(3,\) int32"),
    Case("batch-one-hot-values-dtype", "ops: one-hot", "BatchOneHot(x int32, lens, vals float32)",
         """
         feed(x=np.zeros((2, 2), np.int32), l=np.ones(2, np.int32), v=np.zeros(2, np.float32))
         run_op('BatchOneHot', ['x', 'l', 'v'], ['o'])
         """, T_, r"op BatchOneHot #0: input 2 blob 'v' must be int32, got \(2,\) float32"),
    Case("batch-bucket-one-hot-unsorted", "ops: one-hot",
         "BatchBucketOneHot(x (1, 2), lens = [1, 2], b = [5, 1, 0])",
         """
         feed(x=f32(1, 2), l=np.array([1, 2], np.int32), b=np.array([5, 1, 0], np.float32))
         run_op('BatchBucketOneHot', ['x', 'l', 'b'], ['o'])
         """, V, r"op BatchBucketOneHot #0: input 2 blob 'b' \(the boundaries\): column 1's must be sorted, "
                 r"without NaN, but position 2 holds 0 after a larger one",
         note="Caffe2 assumed sorted boundaries"),
    # ---------------------------------------------------------------- ops: sparse rows (csrc/ops/sparse.c)
    Case("sparse-to-dense-negative-index", "ops: sparse", "SparseToDense(i = [3, -1], v (2, 3))",
         """
         feed(i=np.array([3, -1], np.int32), v=f32(2, 3))
         run_op('SparseToDense', ['i', 'v'], ['o'])
         """, I, r"op SparseToDense #0: input 0 blob 'i': index -1 at position 1 is out of range \[0, 4\) "
                 r"\(max index \+ 1\)"),
    Case("sparse-to-dense-values-shape", "ops: sparse", "SparseToDense(i (2, 3), v (3, 2))",
         """
         feed(i=np.zeros((2, 3), np.int32), v=f32(3, 2))
         run_op('SparseToDense', ['i', 'v'], ['o'])
         """, V, r"op SparseToDense #0: input 1 blob 'v' \(the values\) must have shape input 0 blob 'i' "
                 r"\(2, 3\) int32 \+ the row shape, got \(3, 2\) float32"),
    Case("sparse-to-dense-mask-duplicate-id", "ops: sparse", "SparseToDenseMask(..., mask=[3, 1, 3])",
         """
         feed(i=np.array([1], np.int32), v=f32(1, 2), d=f32(2))
         run_op('SparseToDenseMask', ['i', 'v', 'd'], ['o'], mask=[3, 1, 3])
         """, V, r"op SparseToDenseMask #0: argument mask holds id 3 twice \(positions 0 and 2\)"),
    Case("sparse-to-dense-mask-default-shape", "ops: sparse", "SparseToDenseMask(i (3,), v (3, 2), d (3,))",
         """
         feed(i=np.array([0, 1, 2], np.int32), v=f32(3, 2), d=f32(3))
         run_op('SparseToDenseMask', ['i', 'v', 'd'], ['o'], mask=[1])
         """, V, r"op SparseToDenseMask #0: input 2 blob 'd' \(the default\) must have the shape of a row of "
                 r"input 1 blob 'v' \(3, 2\) float32, got \(3,\) float32",
         note="Caffe2 compared sizes only"),
    Case("sparse-to-dense-mask-lengths-sum", "ops: sparse",
         "SparseToDenseMask(i (3,), v, d, lengths = [1, 3])",
         """
         feed(i=np.array([0, 1, 2], np.int32), v=f32(3, 2), d=f32(2), l=np.array([1, 3], np.int32))
         run_op('SparseToDenseMask', ['i', 'v', 'd', 'l'], ['o'], mask=[1])
         """, V, r"op SparseToDenseMask #0: input 3 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 4, "
                 r"but input 0 blob 'i' of shape \(3,\) int32 has 3 rows",
         note="Caffe2 read past the end of the indices"),
    Case("sparse-to-dense-mask-skipped", "ops: sparse", "SparseToDenseMask(i = [-1, -2, -7], ..., "
         "max_skipped_indices=3)",
         """
         feed(i=np.array([-1, -2, -7], np.int32), v=f32(3, 2), d=f32(2))
         run_op('SparseToDenseMask', ['i', 'v', 'd'], ['o'], mask=[1], max_skipped_indices=3)
         """, V, r"op SparseToDenseMask #0: input 0 blob 'i' holds 3 negative ids \(the last -7 at position "
                 r"2\); at most max_skipped_indices - 1 = 2 are skipped",
         note="Caffe2 counted the skipped ids over all runs of the op"),
    Case("sparse-to-dense-mask-presence-output", "ops: sparse",
         "SparseToDenseMask(..., ['o', 'p'], mask=[1])",
         """
         feed(i=np.array([1], np.int32), v=f32(1, 2), d=f32(2))
         run_op('SparseToDenseMask', ['i', 'v', 'd'], ['o', 'p'], mask=[1])
         """, V, r"op SparseToDenseMask #0: output 1 \(the presence mask\) needs return_presence_mask=1"),
    Case("sparse-to-dense-mask-gradient-shape", "ops: sparse",
         "SparseToDenseMaskGradient(i (3,), g (3, 2), mask=[1, 2, 0, 5])",
         """
         feed(i=np.array([0, 1, 2], np.int32), g=f32(3, 2))
         run_op('SparseToDenseMaskGradient', ['i', 'g'], ['dv'], mask=[1, 2, 0, 5])
         """, V, r"op SparseToDenseMaskGradient #0: input 1 blob 'g' \(the output gradient\) must have shape "
                 r"\(4, ...\) \(4 mask ids\), got \(3, 2\) float32"),
    Case("batch-sparse-to-dense-duplicate", "ops: sparse",
         "BatchSparseToDense(lengths = [2, 3], i = [2, 1, 2, 0, 2], v (5,), dense_last_dim=4)",
         """
         feed(l=np.array([2, 3], np.int32), i=np.array([2, 1, 2, 0, 2], np.int32), v=f32(5))
         run_op('BatchSparseToDense', ['l', 'i', 'v'], ['o'], dense_last_dim=4)
         """, V, r"op BatchSparseToDense #0: input 1 blob 'i' \(indices\): index 2 appears twice in row 1 "
                 r"\(positions 2 and 4\); the indices of a row must be distinct",
         note="Caffe2 required it without checking (the last won; its gradient was then wrong)"),
    Case("batch-sparse-to-dense-index", "ops: sparse",
         "BatchSparseToDense(lengths = [2], i = [1, 3], v (2,), dense_last_dim=3)",
         """
         feed(l=np.array([2], np.int32), i=np.array([1, 3], np.int32), v=f32(2))
         run_op('BatchSparseToDense', ['l', 'i', 'v'], ['o'], dense_last_dim=3)
         """, I, r"op BatchSparseToDense #0: input 1 blob 'i': index 3 at position 1 is out of range "
                 r"\[0, 3\) \(the dense tensor's last dim\)", note="Caffe2 did not check negative indices"),
    Case("batch-sparse-to-dense-no-dim", "ops: sparse", "BatchSparseToDense(l, i, v) without dense_last_dim",
         """
         feed(l=np.array([2], np.int32), i=np.array([1, 0], np.int32), v=f32(2))
         run_op('BatchSparseToDense', ['l', 'i', 'v'], ['o'])
         """, V, r"op BatchSparseToDense #0: the output's last dim is missing: give argument dense_last_dim "
                 r"or input 3 \(a 2-D tensor whose dim 1 it is\)"),
    Case("batch-sparse-to-dense-dim-mismatch", "ops: sparse",
         "BatchSparseToDense(l, i, v, s (2, 5), dense_last_dim=4)",
         """
         feed(l=np.array([2], np.int32), i=np.array([1, 0], np.int32), v=f32(2), s=f32(2, 5))
         run_op('BatchSparseToDense', ['l', 'i', 'v', 's'], ['o'], dense_last_dim=4)
         """, V, r"op BatchSparseToDense #0: argument dense_last_dim = 4 differs from dim 1 of input 3 blob "
                 r"'s' \(2, 5\) float32"),
    Case("batch-dense-to-sparse-rows", "ops: sparse", "BatchDenseToSparse(lengths (2,), i, d (3, 4))",
         """
         feed(l=np.array([1, 1], np.int32), i=np.array([1, 0], np.int32), d=f32(3, 4))
         run_op('BatchDenseToSparse', ['l', 'i', 'd'], ['o'])
         """, V, r"op BatchDenseToSparse #0: input 2 blob 'd' \(the dense tensor\) must be 2-D with a row "
                 r"per length of input 0 blob 'l' \(2,\) int32, got \(3, 4\) float32"),
    Case("scatter-weighted-sum-not-in-place", "ops: sparse", "ScatterWeightedSum([x, w0, i, v, w1], 'y')",
         """
         feed(x=f32(4, 3), w0=np.ones(1, np.float32), i=np.array([1], np.int32), v=f32(1, 3),
              w1=np.ones(1, np.float32))
         run_op('ScatterWeightedSum', ['x', 'w0', 'i', 'v', 'w1'], ['y'])
         """, V, r"op ScatterWeightedSum #0: output 0 blob 'y' must be input 0 blob 'x' \(this op updates it "
                 r"in place\)"),
    Case("scatter-weighted-sum-index-out-of-range", "ops: sparse",
         "ScatterWeightedSum(x (4, 3), i = [[1, 2], [4, 0]])",
         """
         x = f32(4, 3)
         feed(x=x, w0=np.ones(1, np.float32), i=np.array([[1, 2], [4, 0]], np.int32), v=f32(2, 2, 3),
              w1=np.ones(1, np.float32))
         try:
             run_op('ScatterWeightedSum', ['x', 'w0', 'i', 'v', 'w1'], ['x'])
         finally:
             assert np.array_equal(workspace.FetchBlob('x'), x)
         """, I, r"op ScatterWeightedSum #0: input 2 blob 'i': index 4 at position 2 \(element \(1, 0\) "
                 r"of its \(2, 2\) int32\) is out of range \[0, 4\) \(the rows of input 0 blob 'x' of shape "
                 r"\(4, 3\) float32\)",
         note="every index is checked before anything is written: x is unchanged"),
    Case("copy-rows-to-tensor-row-width", "ops: sparse", "CopyRowsToTensor([x (3, 2), i, row (3,)], 'x')",
         """
         feed(x=f32(3, 2), i=np.array([0], np.int32), r=f32(3))
         run_op('CopyRowsToTensor', ['x', 'i', 'r'], ['x'])
         """, V, r"op CopyRowsToTensor #0: width of input tensor should match lengths of row: input 0 blob "
                 r"'x' is \(3, 2\) float32, input 2 blob 'r' must be 1-D of 2 values, got \(3,\) float32"),
    Case("copy-rows-to-tensor-index", "ops: sparse", "CopyRowsToTensor([x (3, 2), i = [3], row], 'x')",
         """
         feed(x=f32(3, 2), i=np.array([3], np.int32), r=f32(2))
         run_op('CopyRowsToTensor', ['x', 'i', 'r'], ['x'])
         """, I, r"op CopyRowsToTensor #0: input 1 blob 'i': index 3 at position 0 is out of range \[0, 3\)"),
    Case("copy-rows-to-tensor-not-in-place", "ops: sparse", "CopyRowsToTensor([x, i, row], 'y')",
         """
         feed(x=f32(3, 2), i=np.array([0], np.int32), r=f32(2))
         run_op('CopyRowsToTensor', ['x', 'i', 'r'], ['y'])
         """, V, r"op CopyRowsToTensor #0: output 0 blob 'y' must be input 0 blob 'x' \(this op updates it "
                 r"in place\)"),
    Case("copy-rows-to-tensor-3d", "ops: sparse", "CopyRowsToTensor([x (3, 2, 1), i, row], 'x')",
         """
         feed(x=f32(3, 2, 1), i=np.array([0], np.int32), r=f32(2))
         run_op('CopyRowsToTensor', ['x', 'i', 'r'], ['x'])
         """, V, r"op CopyRowsToTensor #0: input 0 blob 'x' must be 2-D, got \(3, 2, 1\) float32"),
    Case("copy-rows-to-tensor-indices-2d", "ops: sparse", "CopyRowsToTensor([x, i (1, 1), row], 'x')",
         """
         feed(x=f32(3, 2), i=np.zeros((1, 1), np.int32), r=f32(2))
         run_op('CopyRowsToTensor', ['x', 'i', 'r'], ['x'])
         """, V, r"op CopyRowsToTensor #0: input 1 blob 'i' \(the indices\) must be 1-D, got \(1, 1\) int32"),
    Case("sparse-momentum-grad-shape", "ops: sparse",
         "SparseMomentumSGDUpdate([g (3, 3), m (4, 3), lr, p (4, 3), i (2,)])",
         """
         feed(g=f32(3, 3), m=f32(4, 3), lr=np.ones(1, np.float32), p=f32(4, 3), i=np.array([0, 2], np.int32))
         run_op('SparseMomentumSGDUpdate', ['g', 'm', 'lr', 'p', 'i'], ['g', 'm', 'p'], momentum=0.9)
         """, V, r"op SparseMomentumSGDUpdate #0: input 0 blob 'g' \(the gradient\) must have shape \(2, 3\) "
                 r"float32 \(input 4 blob 'i' \(2,\) int32 \+ input 3 blob 'p' \(4, 3\) float32 without its "
                 r"first dim\), got \(3, 3\) float32"),
    Case("sparse-adagrad-lr-two-values", "ops: sparse", "SparseAdagrad([p, h, i, g, lr (2,)])",
         """
         feed(p=f32(4, 3), h=f32(4, 3), i=np.array([1], np.int32), g=f32(1, 3),
              lr=np.array([-0.1, -0.2], np.float32))
         run_op('SparseAdagrad', ['p', 'h', 'i', 'g', 'lr'], ['p', 'h'])
         """, V, r"op SparseAdagrad #0: input 4 blob 'lr' \(the learning rate\) must hold one value, got "
                 r"\(2,\) float32"),
    Case("adagrad-weight-decay-nan", "ops: sparse", "Adagrad([p, h, g, lr], [p, h, elr], weight_decay=nan)",
         """
         feed(p=f32(4, 3), h=f32(4, 3), g=f32(4, 3), lr=np.array([-0.1], np.float32))
         run_op('Adagrad', ['p', 'h', 'g', 'lr'], ['p', 'h', 'elr'], weight_decay=float('nan'))
         """, V, r"op Adagrad #0: argument weight_decay must be finite, got nan"),
    Case("adagrad-update-output-is-grad", "ops: sparse", "Adagrad([p, h, g, lr], [p, h, elr, g])",
         """
         feed(p=f32(4, 3), h=f32(4, 3), g=f32(4, 3), lr=np.array([-0.1], np.float32))
         run_op('Adagrad', ['p', 'h', 'g', 'lr'], ['p', 'h', 'elr', 'g'])
         """, V, r"op Adagrad #0: input 2 and output 3 are the same blob 'g', which this op does not allow "
                 r"\(in-place\)"),
    Case("sparse-adam-radam-flag", "ops: sparse", "SparseAdam(..., enableRAdam=2)",
         """
         feed(p=f32(4, 3), m1=f32(4, 3), m2=f32(4, 3), i=np.array([1], np.int32), g=f32(1, 3),
              lr=np.array([-0.1], np.float32), it=np.array([0], np.int32))
         run_op('SparseAdam', ['p', 'm1', 'm2', 'i', 'g', 'lr', 'it'], ['p', 'm1', 'm2'], enableRAdam=2)
         """, V, r"op SparseAdam #0: argument enableRAdam must be 0 or 1, got 2"),
    Case("sparse-adam-moment-not-in-place", "ops: sparse", "SparseAdam([p, m1, m2, ...], [p, m1_new, m2])",
         """
         feed(p=f32(4, 3), m1=f32(4, 3), m2=f32(4, 3), i=np.array([1], np.int32), g=f32(1, 3),
              lr=np.ones(1, np.float32), it=np.zeros(1, np.int32))
         run_op('SparseAdam', ['p', 'm1', 'm2', 'i', 'g', 'lr', 'it'], ['p', 'm1_new', 'm2'])
         """, V, r"op SparseAdam #0: output 1 blob 'm1_new' must be input 1 blob 'm1' \(this op updates "
                 r"it in place\)"),
    # ------------------------------------------------------- RmsProp, Adadelta, Wngrad (optim_adaptive.c)
    Case("rmsprop-momentum-shape", "ops: adaptive optimizers", "RmsProp([g (3,), ms (3,), mom (4,), lr])",
         """
         feed(g=f32(3), ms=f32(3), mom=f32(4), lr=np.ones(1, np.float32))
         run_op('RmsProp', ['g', 'ms', 'mom', 'lr'], ['g', 'ms', 'mom'])
         """, V, r"op RmsProp #0: input 2 blob 'mom' must have the shape of input 0 blob 'g' \(3,\) float32, "
                 r"got \(4,\) float32",
         note="Caffe2 compared sizes only; checked already at CreateNet when the inputs hold tensors"),
    Case("rmsprop-decay-out-of-range", "ops: adaptive optimizers", "RmsProp(..., decay=1.5)",
         """
         feed(g=f32(3), ms=f32(3), mom=f32(3), lr=np.ones(1, np.float32))
         run_op('RmsProp', ['g', 'ms', 'mom', 'lr'], ['g', 'ms', 'mom'], decay=1.5)
         """, V, r"op RmsProp #0: argument decay must be in \[0, 1\], got 1.5",
         note="Caffe2 checked no argument of RmsProp"),
    Case("adadelta-decay-one", "ops: adaptive optimizers", "Adadelta(..., decay=1)",
         """
         feed(p=f32(3), h=f32(3), d=f32(3), g=f32(3), lr=np.ones(1, np.float32))
         run_op('Adadelta', ['p', 'h', 'd', 'g', 'lr'], ['p', 'h', 'd'], decay=1.0)
         """, V, r"op Adadelta #0: argument decay must be in \(0, 1\), got 1"),
    Case("sparse-adadelta-index-out-of-range", "ops: adaptive optimizers",
         "SparseAdadelta(p (4, 3), i = [1, 4])",
         """
         p = f32(4, 3)
         feed(p=p, h=f32(4, 3), d=f32(4, 3), i=np.array([1, 4], np.int32), g=f32(2, 3),
              lr=np.ones(1, np.float32))
         try:
             run_op('SparseAdadelta', ['p', 'h', 'd', 'i', 'g', 'lr'], ['p', 'h', 'd'])
         finally:
             assert np.array_equal(workspace.FetchBlob('p'), p)
         """, I, r"op SparseAdadelta #0: input 3 blob 'i': index 4 at position 1 is out of range \[0, 4\) "
                 r"\(the rows of input 0 blob 'p' of shape \(4, 3\) float32\)",
         note="every index is checked before anything is written (Caffe2 checked only in debug builds)"),
    Case("wngrad-seq-b-empty", "ops: adaptive optimizers", "Wngrad([p, seq_b (0,), g, lr])",
         """
         feed(p=f32(3), b=np.zeros(0, np.float32), g=f32(3), lr=np.ones(1, np.float32))
         run_op('Wngrad', ['p', 'b', 'g', 'lr'], ['p', 'b'])
         """, V, r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must hold one value, got \(0,\) float32",
         note="Caffe2 read element 0 of whatever it was given"),
    Case("wngrad-seq-b-negative", "ops: adaptive optimizers", "Wngrad([p, seq_b = [-1], g, lr])",
         """
         feed(p=f32(3), b=np.array([-1.0], np.float32), g=f32(3), lr=np.ones(1, np.float32))
         run_op('Wngrad', ['p', 'b', 'g', 'lr'], ['p', 'b'])
         """, V, r"op Wngrad #0: input 1 blob 'b' \(seq_b\) must be finite with seq_b \+ epsilon > 0, got -1 "
                 r"\(epsilon 1e-05\)"),
    Case("sparse-wngrad-seq-b-not-in-place", "ops: adaptive optimizers",
         "SparseWngrad([p, b, i, g, lr], [p, b2])",
         """
         feed(p=f32(4, 3), b=np.ones(1, np.float32), i=np.array([1], np.int32), g=f32(1, 3),
              lr=np.ones(1, np.float32))
         run_op('SparseWngrad', ['p', 'b', 'i', 'g', 'lr'], ['p', 'b2'])
         """, V, r"op SparseWngrad #0: output 1 blob 'b2' must be input 1 blob 'b' \(this op updates it in "
                 r"place\)"),
    # ---------------------------------------------------------------- FTRL and row-wise sparse optimizers
    Case("ftrl-nz-shape", "ops: optim_rowwise", "Ftrl([w (4, 3), nz (4, 3), g (4, 3)])",
         """
         feed(w=f32(4, 3), nz=f32(4, 3), g=f32(4, 3))
         run_op('Ftrl', ['w', 'nz', 'g'], ['w', 'nz'])
         """, V, r"op Ftrl #0: input 1 blob 'nz' \(n and z\) must have the shape of input 0 blob 'w' "
                 r"\(4, 3\) float32 plus a last dim of 2, got \(4, 3\) float32",
         note="Caffe2's FtrlOptimizer makes it with extra_shape=[2]; Caffe2 compared sizes only"),
    Case("ftrl-alpha-twice", "ops: optim_rowwise", "Ftrl([w, nz, g, alpha], alpha=0.1)",
         """
         feed(w=f32(4, 3), nz=f32(4, 3, 2), g=f32(4, 3), a=np.ones(1, np.float32))
         run_op('Ftrl', ['w', 'nz', 'g', 'a'], ['w', 'nz'], alpha=0.1)
         """, V, r"op Ftrl #0: alpha is given both as input 3 blob 'a' and as an argument \(give one\)"),
    Case("ftrl-alpha-input-zero", "ops: optim_rowwise", "Ftrl([w, nz, g, alpha = [0]])",
         """
         feed(w=f32(4, 3), nz=f32(4, 3, 2), g=f32(4, 3), a=np.zeros(1, np.float32))
         run_op('Ftrl', ['w', 'nz', 'g', 'a'], ['w', 'nz'])
         """, V, r"op Ftrl #0: input 3 blob 'a' \(alpha\) must be finite and > 0, got 0",
         note="Caffe2 divided by it"),
    Case("sparse-ftrl-index-out-of-range", "ops: optim_rowwise", "SparseFtrl([w (4, 3), nz, i = [1, 4], g])",
         """
         feed(w=f32(4, 3), nz=f32(4, 3, 2), i=np.array([1, 4], np.int32), g=f32(2, 3))
         run_op('SparseFtrl', ['w', 'nz', 'i', 'g'], ['w', 'nz'])
         """, I, r"op SparseFtrl #0: input 2 blob 'i': index 4 at position 1 is out of range \[0, 4\) \(the "
                 r"rows of input 0 blob 'w' of shape \(4, 3\) float32\)",
         note="every index is checked before anything is written (Caffe2: only in debug builds)"),
    Case("rowwise-adagrad-moment-shape", "ops: optim_rowwise",
         "RowWiseSparseAdagrad([p (4, 3), h (4, 3), i, g, lr])",
         """
         feed(p=f32(4, 3), h=f32(4, 3), i=np.array([1], np.int32), g=f32(1, 3), lr=np.ones(1, np.float32))
         run_op('RowWiseSparseAdagrad', ['p', 'h', 'i', 'g', 'lr'], ['p', 'h'])
         """, V, r"op RowWiseSparseAdagrad #0: input 1 blob 'h' \(the row-wise moment\) must have shape "
                 r"\(4,\) \(one value per row of input 0 blob 'p' \(4, 3\) float32\), got \(4, 3\) float32"),
    Case("rowwise-adam-not-in-place", "ops: optim_rowwise",
         "RowWiseSparseAdam([p, m1, m2, ...], [p, m1, m2_new])",
         """
         feed(p=f32(4, 3), m1=f32(4, 3), m2=f32(4), i=np.array([1], np.int32), g=f32(1, 3),
              lr=np.ones(1, np.float32), it=np.zeros(1, np.int32))
         run_op('RowWiseSparseAdam', ['p', 'm1', 'm2', 'i', 'g', 'lr', 'it'], ['p', 'm1', 'm2_new'])
         """, V, r"op RowWiseSparseAdam #0: output 2 blob 'm2_new' must be input 2 blob 'm2' \(this op "
                 r"updates it in place\)"),
    Case("learning-rate-composite-nested", "ops: optim",
         "LearningRate(policy='composite', sub-policy composite)",
         """
         feed(it=np.zeros(1, np.int32))
         run_op('LearningRate', ['it'], ['lr'], base_lr=0.1, policy='composite', sub_policy_num_iters=[2],
                sub_policy_0_policy='composite')
         """, V, r"op LearningRate #0: argument sub_policy_0_policy: a composite policy cannot be a "
                 r"sub-policy of policy 'composite'"),
    Case("learning-rate-cosine-t-mult", "ops: optim", "LearningRate(policy='cosine', t_mult=0.5)",
         """
         feed(it=np.zeros(1, np.int32))
         run_op('LearningRate', ['it'], ['lr'], base_lr=0.1, policy='cosine', t_mult=0.5)
         """, V, r"op LearningRate #0: argument t_mult must be finite and >= 1, got 0.5",
         note="Caffe2 took the log of a negative number once a shrinking schedule ran out"),
    # ---------------------------------------------------------------- deduplication ops (sparse gradients)
    Case("unique-float-indices", "ops: dedup", "Unique(x float32)",
         "feed(x=f32(4)); run_op('Unique', ['x'], ['u', 'r'])", T_,
         r"op Unique #0: input 0 blob 'x' must be int32, got \(4,\) float32",
         note="indices of any shape are read flattened; the remapping has their shape"),
    Case("find-duplicate-elements-rank", "ops: dedup", "FindDuplicateElements(x (2,2))",
         "feed(x=f32(2, 2)); run_op('FindDuplicateElements', ['x'], ['y'])", V,
         r"op FindDuplicateElements #0: input 0 blob 'x' \(data\) must be 1-D, got \(2, 2\) float32",
         note="as Caffe2; float32 or int32 data, int32 indices (Caffe2: int64)"),
    Case("segment-ids-not-prefix", "ops: dedup", "UnsortedSegmentSum([data (3,4), ids (3,2)])",
         """
         feed(d=f32(3, 4), i=np.zeros((3, 2), np.int32))
         run_op('UnsortedSegmentSum', ['d', 'i'], 'y')
         """, V,
         r"op UnsortedSegmentSum #0: the shape of input 1 blob 'i' \(segment_ids\) \(3, 2\) int32 must be a "
         r"prefix of the shape of input 0 blob 'd' \(3, 4\) float32",
         note="checked already at CreateNet when both inputs hold tensors"),
    Case("segment-id-negative", "ops: dedup",
         "UnsortedSegmentMean([data (3,2), ids [[0, 1], [-2, 0], [1, 1]]])",
         """
         feed(d=f32(3, 2), i=np.array([[0, 1], [-2, 0], [1, 1]], np.int32))
         run_op('UnsortedSegmentMean', ['d', 'i'], 'y')
         """, V, r"op UnsortedSegmentMean #0: input 1 blob 'i' \(segment_ids\) of shape \(3, 2\) int32: "
                 r"segment id -2 at index \[1, 0\] is out of range \[0, 2\) \(the number of segments: "
                 r"max\(segment_ids\) \+ 1\)",
         note="every id is checked before the output is written (Caffe2 resized it first)"),
    Case("segment-id-over-num-segments", "ops: dedup",
         "UnsortedSegmentSum([data (3,), ids [0, 1, 1]], num_segments=1)",
         """
         feed(d=f32(3), i=np.array([0, 1, 1], np.int32))
         run_op('UnsortedSegmentSum', ['d', 'i'], 'y', num_segments=1)
         """, V, r"op UnsortedSegmentSum #0: input 1 blob 'i' \(segment_ids\) of shape \(3,\) int32: segment "
                 r"id 1 at index \[1\] is out of range \[0, 1\) \(argument num_segments=1\)"),
    Case("segment-num-segments-negative", "ops: dedup", "UnsortedSegmentSum(..., num_segments=-2)",
         """
         feed(d=f32(3), i=np.zeros(3, np.int32))
         run_op('UnsortedSegmentSum', ['d', 'i'], 'y', num_segments=-2)
         """, V, r"op UnsortedSegmentSum #0: argument num_segments=-2 must be >= 0 \(or -1, the default: "
            r"max\(segment_ids\) \+ 1\)", note="checked at op creation"),
    # ------------------------------------------ unsorted segment reductions (segment.c: WeightedSum, Sparse*)
    Case("unsorted-wsum-scalars-shape", "ops: unsorted segment",
         "UnsortedSegmentWeightedSum([d (4,2), scalars (3,), ids (4,)])",
         "feed(d=f32(4, 2), w=f32(3), s=np.array([0, 1, 1, 2], np.int32)); "
         "run_op('UnsortedSegmentWeightedSum', ['d', 'w', 's'], 'y')", V,
         r"op UnsortedSegmentWeightedSum #0: input 1 blob 'w' \(scalars\) of shape \(3,\) float32 must have "
         r"the shape of input 2 blob 's' \(segment_ids\) \(4,\) int32",
         note="checked already at CreateNet; the gradient ops the same"),
    Case("unsorted-wsum-grad-on-weights", "ops: unsorted segment",
         "UnsortedSegmentWeightedSum(..., grad_on_weights=3)",
         "feed(d=f32(2), w=f32(2), s=np.zeros(2, np.int32)); "
         "run_op('UnsortedSegmentWeightedSum', ['d', 'w', 's'], 'y', grad_on_weights=3)", V,
         r"op UnsortedSegmentWeightedSum #0: argument grad_on_weights must be 0 or 1, got 3",
         note="checked at op creation"),
    Case("sparse-unsorted-ids-count", "ops: unsorted segment",
         "SparseUnsortedSegmentSum([d (4,2), indices (4,), ids (3,)])",
         "feed(d=f32(4, 2), i=np.array([0, 3, 1, 1], np.int32), s=np.array([0, 1, 1], np.int32)); "
         "run_op('SparseUnsortedSegmentSum', ['d', 'i', 's'], 'y')", V,
         r"op SparseUnsortedSegmentSum #0: input 2 blob 's' \(segment_ids\) of shape \(3,\) int32 must hold "
         r"one id per index: 4 \(input 1 blob 'i' \(indices\) of shape \(4,\) int32\)",
         note="checked already at CreateNet"),
    Case("sparse-unsorted-index-range", "ops: unsorted segment",
         "SparseUnsortedSegmentMean([d (4,2), indices [0, 4], ids [0, 0]])",
         "feed(d=f32(4, 2), i=np.array([0, 4], np.int32), s=np.zeros(2, np.int32)); "
         "run_op('SparseUnsortedSegmentMean', ['d', 'i', 's'], 'y')", I,
         r"op SparseUnsortedSegmentMean #0: input 1 blob 'i': index 4 at position 1 is out of range \[0, 4\) "
         r"\(the rows of input 0 blob 'd' of shape \(4, 2\) float32\)",
         after="feed(i=np.array([0, 3], np.int32)); "
               "run_op('SparseUnsortedSegmentMean', ['d', 'i', 's'], 'y')",
         note="checked before anything is written, after the segment ids; Caffe2 enforced it too"),
    Case("sparse-unsorted-indices-dtype", "ops: unsorted segment",
         "SparseUnsortedSegmentWeightedSum([d, w, indices float32, ids])",
         "feed(d=f32(4, 2), w=f32(2), i=f32(2), s=np.zeros(2, np.int32)); "
         "run_op('SparseUnsortedSegmentWeightedSum', ['d', 'w', 'i', 's'], 'y')", T_,
         r"op SparseUnsortedSegmentWeightedSum #0: input 2 blob 'i' must be int32, got \(2,\) float32",
         note="Caffe2 took int32 or int64 indices"),
    Case("sparse-unsorted-arity", "ops: unsorted segment", "SparseUnsortedSegmentWeightedSum([d, i, s])",
         "feed(d=f32(4, 2), i=np.zeros(2, np.int32), s=np.zeros(2, np.int32)); "
         "run_op('SparseUnsortedSegmentWeightedSum', ['d', 'i', 's'], 'y')", V,
         r"op SparseUnsortedSegmentWeightedSum #0: expects 4 inputs, got 3"),
    Case("unsorted-segment-gradient-id-range", "ops: unsorted segment",
         "UnsortedSegmentSumGradient([dout (3,2), ids [0, 9]])",
         "feed(g=f32(3, 2), s=np.array([0, 9], np.int32)); "
         "run_op('UnsortedSegmentSumGradient', ['g', 's'], 'x')", V,
         r"op UnsortedSegmentSumGradient #0: input 1 blob 's' \(segment_ids\) of shape \(2,\) int32: segment "
         r"id 9 at index \[1\] is out of range \[0, 3\) \(the first dim of input 0 blob 'g' of shape "
         r"\(3, 2\) float32\)"),
    Case("unsorted-wsum-main-gradient-index-range", "ops: unsorted segment",
         "UnsortedSegmentWeightedSumWithMainInputGradient([w, dout (3,2), ids, data (5,2), indices [0, 5]])",
         "feed(w=f32(2), g=f32(3, 2), s=np.array([0, 2], np.int32), d=f32(5, 2), "
         "i=np.array([0, 5], np.int32)); "
         "run_op('UnsortedSegmentWeightedSumWithMainInputGradient', ['w', 'g', 's', 'd', 'i'], "
         "['x', 'dw'])", I,
         r"op UnsortedSegmentWeightedSumWithMainInputGradient #0: input 4 blob 'i': index 5 at position 1 is "
         r"out of range \[0, 5\) \(the rows of input 3 blob 'd' of shape \(5, 2\) float32\)"),
    Case("segment-mean-grad-id-range", "ops: dedup", "UnsortedSegmentMeanGradient([dout (3,2), ids [0, 3]])",
         """
         feed(g=f32(3, 2), i=np.array([0, 3], np.int32))
         run_op('UnsortedSegmentMeanGradient', ['g', 'i'], 'dd')
         """, V, r"op UnsortedSegmentMeanGradient #0: input 1 blob 'i' \(segment_ids\) of shape \(2,\) "
                 r"int32: segment id 3 at index \[1\] is out of range \[0, 3\) \(the first dim of input 0 "
                 r"blob 'g' of shape \(3, 2\) float32\)"),
    # ---------------------------------------------------------------- sparse gradients (GradientSlice)
    Case("gather-indices-overwritten", "sparse gradients",
         "Gather(emb, idx); Copy(other, idx); AddGradientOperators",
         """
         n = core.Net('n')
         a = n.Gather(['emb', 'idx'], 'a')
         n.Copy('other', 'idx')
         n.AddGradientOperators([n.SumElements(a, 'loss')])
         """, R, r"op Gather #0: its gradient needs input 'idx' at version 0, but it is overwritten later",
         note="the GradientSlice would name indices that no longer hold the gathered rows"),
    Case("weight-decay-sparse-gradient", "sparse gradients",
         "add_weight_decay on an embedding read by Gather",
         """
         from recurrent import model_helper, optimizer
         m = model_helper.ModelHelper(name='m')
         emb = m.create_param('emb', [5, 2], ('GaussianFill', {}),
                              tags=[model_helper.ParameterTags.WEIGHT])
         m.AddGradientOperators([m.net.SumElements(m.net.Gather([emb, 'ids'], 'x'), 'loss')])
         optimizer.add_weight_decay(m, 1e-4)
         """, V, r"WeightDecayBuilder: parameter 'emb' has a sparse gradient \(GradientSlice\); weight decay "
                 r"needs a dense one", note="as in Caffe2"),
    Case("dedup-aggregator-unknown", "sparse gradients", "build_adagrad(..., sparse_dedup_aggregator='max')",
         """
         from recurrent import model_helper, optimizer
         m = model_helper.ModelHelper(name='m')
         emb = m.create_param('emb', [5, 2], ('GaussianFill', {}))
         m.AddGradientOperators([m.net.SumElements(m.net.Gather([emb, 'ids'], 'x'), 'loss')])
         optimizer.build_adagrad(m, 0.1, sparse_dedup_aggregator='max')
         """, V, r"DeduplicateGradientSlices: aggregator must be 'sum' or 'mean', got 'max'"),
    Case("beam-search-beam-size-zero", "seq2seq", "BeamSearchForwardOnly(beam_size=0, ...)",
         """
         from recurrent.models.seq2seq.beam_search import BeamSearchForwardOnly
         from recurrent.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper
         BeamSearchForwardOnly(0, Seq2SeqModelHelper(name='m'), eos_token_id=2)
         """, V, r"BeamSearchForwardOnly: beam_size must be >= 1, got 0"),
    # ------------------------------------------------ Cast, comparisons, Conditional, integer Div
    Case("cast-to-string", "ops: compare/cast", "Cast(x, to='string')",
         "feed(x=f32(3)); run_op('Cast', ['x'], ['y'], to='string')", V,
         r"op Cast #0: argument 'to'='string' is not a supported DataType name",
         note="names are Caffe2's DataType names, case-insensitive; blobs hold float32 or int32 only"),
    Case("cast-out-of-range", "ops: compare/cast", "Cast(x = [1.5, 300.0], to='uint8')",
         "feed(x=np.array([1.5, 300.0], np.float32)); run_op('Cast', ['x'], ['y'], to='uint8')", V,
         r"op Cast #0: input 0 blob 'x' \(2,\) float32: element 1 = 300 cannot be cast to UINT8: out of the "
         r"range \[0, 255\]",
         note="checked before the output is written; Caffe2's static_cast wrapped (undefined for floats)"),
    Case("cast-nan-to-int", "ops: compare/cast", "Cast(x = [nan], to=core.DataType.INT32)",
         "feed(x=np.array([np.nan], np.float32)); run_op('Cast', ['x'], ['y'], to=core.DataType.INT32)", V,
         r"op Cast #0: input 0 blob 'x' \(1,\) float32: element 0 = nan cannot be cast to INT32: NaN has no "
         r"integer value"),
    Case("compare-dtype-mismatch", "ops: compare/cast", "GT([a float32, b int32])",
         "feed(a=f32(3), b=np.ones(3, np.int32)); run_op('GT', ['a', 'b'], ['c'])", T_,
         r"op GT #0: input 1 blob 'b' \(3,\) int32 must have the dtype of input 0 blob 'a' \(3,\) float32",
         note="EQ, NE, LT, LE, GT, GE take float32 or int32, one dtype for both"),
    Case("compare-shape-no-broadcast", "ops: compare/cast", "LT([a (2,3), b (2,)]) without broadcast=1",
         "feed(a=f32(2, 3), b=f32(2)); run_op('LT', ['a', 'b'], ['c'])", V,
         r"op LT #0: input 0 blob 'a' of shape \(2, 3\) float32 and input 1 blob 'b' of shape \(2,\) float32 "
         r"do not broadcast \(numpy-style, dims aligned from the last\): dim 1 of 'a' is 3 but "
         r"dim 0 of 'b' is 2",
         note="numpy-style broadcasting aligns the last dims; Caffe2's legacy form (broadcast=1, axis=0) "
              "takes this B"),
    Case("conditional-float-condition", "ops: compare/cast", "Conditional([cond float32, t, f])",
         "feed(c=f32(3), t=f32(3, 2), f=f32(3, 2)); run_op('Conditional', ['c', 't', 'f'], ['y'])", T_,
         r"op Conditional #0: input 0 blob 'c' must be int32, got \(3,\) float32",
         note="the condition is int32 (bool as 0 / 1; nonzero is true)"),
    Case("conditional-first-dim", "ops: compare/cast", "Conditional([cond (3,), t (4,2), f (4,2)])",
         "feed(c=np.ones(3, np.int32), t=f32(4, 2), f=f32(4, 2)); "
         "run_op('Conditional', ['c', 't', 'f'], ['y'])",
         V, r"op Conditional #0: input 1 blob 't' \(4, 2\) float32 must have first dim 3 \(the length of "
            r"input 0 blob 'c' \(3,\) int32\)"),
    Case("div-int-by-zero", "ops: compare/cast", "Div([a int32 (2,3), b int32 [1, 0, 2]], broadcast=1)",
         """
         feed(a=np.ones((2, 3), np.int32), b=np.array([1, 0, 2], np.int32))
         run_op('Div', ['a', 'b'], ['c'], broadcast=1)
         """, V, r"op Div #0: integer division by zero: input 1 blob 'b' \(3,\) int32 is 0 at flat "
                 r"position 1 \(dividing element 1 of input 0 blob 'a' \(2, 3\) int32\)",
         note="checked before the output is written (Caffe2: undefined behaviour); float32 Div stays IEEE"),
    Case("div-int-overflow", "ops: compare/cast", "Div([a = [INT32_MIN], b = [-1]]) int32",
         """
         feed(a=np.array([-2 ** 31], np.int32), b=np.array([-1], np.int32))
         run_op('Div', ['a', 'b'], ['c'])
         """, V, r"op Div #0: integer overflow: element 0 of input 0 blob 'a' \(1,\) int32 is -2147483648 "
                 r"and input 1 blob 'b' \(1,\) int32 is -1 at flat position 0 \(the quotient does not fit "
                 r"int32\)"),
    Case("mul-int-overflow", "ops: compare/cast", "Mul([a int32 [2, 65536], b int32 [3, 65536]])",
         """
         feed(a=np.array([2, 65536], np.int32), b=np.array([3, 65536], np.int32))
         run_op('Mul', ['a', 'b'], ['c'])
         """, V, r"op Mul #0: integer overflow: element 1 of input 0 blob 'a' \(2,\) int32 is 65536 and element 1 "
                 r"of input 1 blob 'b' \(2,\) int32 is 65536: 65536 \* 65536 does not fit int32 \(result "
                 r"element 1\)",
         note="int32 Add / Sub / Mul: the exact result (Caffe2's int64 would hold it) must fit int32; checked "
              "before the output is written (NumPy wraps around silently)"),
    Case("add-int-float-mix", "ops: compare/cast", "Add([a int32 (2,), b float32 (2,)])",
         "feed(a=np.ones(2, np.int32), b=f32(2)); run_op('Add', ['a', 'b'], ['c'])",
         T_, r"op Add #0: input 1 blob 'b' \(2,\) float32 must have the dtype of input 0 blob 'a' \(2,\) "
            r"int32"),
    # ---------------------------------------------------------------- rnn_cell.LSTM: data
    Case("seq-lengths-wrong-length", "recurrent: data", "rnn_cell.LSTM net, seq_lengths of N+1 entries",
         "m, res, gm = lstm(); feed(seq=np.full(N + 1, T, np.int32)); workspace.RunNetOnce(m.net)", V,
         r"op RecurrentNetwork #1 \(step net '[^']+'\): op LSTMUnit #\d+ at timestep 0: input 3 blob 'seq' "
         r"\(seq_lengths\) must have N=2 elements, got \(3,\) int32",
         after="feed(seq=np.full(N, T, np.int32)); workspace.RunNetOnce(m.net)"),
    Case("seq-lengths-float", "recurrent: data", "rnn_cell.LSTM net, seq_lengths float32",
         "m, res, gm = lstm(); feed(seq=np.full(N, T, np.float32)); workspace.RunNetOnce(m.net)", T_,
         r"op LSTMUnit #\d+ at timestep 0: input 3 blob 'seq' must be int32, got \(2,\) float32",
         after="feed(seq=np.full(N, T, np.int32)); workspace.RunNetOnce(m.net)"),
    Case("seq-lengths-out-of-range", "recurrent: data", "rnn_cell.LSTM net, seq_lengths [T+3, -2]",
         """
         m, res, gm = lstm()
         feed(seq=np.array([T + 3, -2], np.int32))
         workspace.RunNetOnce(m.net)
         h = workspace.FetchBlob(res[0])
         assert np.isfinite(h).all()
         assert np.array_equal(h[:, 1], np.broadcast_to(workspace.FetchBlob('h0')[0, 1], (T, H)))
         """,
         None, "",
         note="no error: step t of sequence n is valid iff t < seq_lengths[n], "
              "so >= T means all steps and <= 0 "
              "none (the state is carried unchanged)"),
    Case("gradient-T-mismatch", "recurrent: data",
         "LSTM training net, gradient of the outputs with T+1 steps",
         "m, res, gm = lstm(); feed(g_all=f32(T + 1, N, H)); workspace.RunNetOnce(m.net)",
         V,
         r"op RecurrentNetworkGradient #\d+: gradient 'g_all' of alias '[^']+' \(offset 1: rows \[1, 5\) of "
         r"state '[^']+' \(5, 2, 5\) float32\) has shape \(5, 2, 5\) float32, expected \(4, 2, 5\)",
         after="feed(g_all=f32(T, N, H)); workspace.RunNetOnce(m.net)"),
    Case("last-state-gradient-shape", "recurrent: data",
         "mul-cell net, gradient of output_t_last of the wrong size",
         """
         net, outs = mul_rnn(owg=(1,))
         g = net.Clone('g'); g.AddGradientOperators({str(outs[1]): 'g_last'})
         feed(g_last=f32(1, 2, 5))
         workspace.RunNetOnce(g)
         """,
         V,
         r"gradient 'g_last' of the last state of 'rnn/output_t_prev_states' has shape \(1, 2, 5\) float32, "
                 r"expected \(1, 2, 4\)"),
    Case("initial-state-batch", "recurrent: data", "LSTM net, h0 of batch size N+1",
         "m, res, gm = lstm(); feed(h0=f32(1, N + 1, H)); workspace.RunNetOnce(m.net)",
         V,
         r"op RecurrentNetwork #1: initial state 'h0' has batch "
         r"size 3 \(shape \(1, 3, 5\) float32\) but the input "
         r"sequence '[^']+' has batch size 2",
         after="feed(h0=f32(1, N, H)); workspace.RunNetOnce(m.net)"),
    Case("initial-state-4d", "recurrent: data", "LSTM net, h0 4-D",
         "m, res, gm = lstm(); feed(h0=f32(1, 1, N, H)); workspace.RunNetOnce(m.net)",
         V,
         r"initial state 'h0' \(input 1\) must be 1-D \(S\), 2-D "
         r"\(N, S\) or 3-D \(L, N, S\), got \(1, 1, 2, 5\)"),
    Case("initial-state-size", "recurrent: data", "LSTM net, h0 with H+1 units",
         "m, res, gm = lstm(); feed(h0=f32(1, N, H + 1)); workspace.RunNetOnce(m.net)",
         V,
         r"op RecurrentNetwork #1 \(step net '[^']+'\): op FC "
         r"#\d+ at timestep 0: input 1 blob 'l/gates_t_w' of "
         r"shape \(20, 5\) float32 does not fit input 0 blob 'l/hidden_t_prev' of shape \(1, 2, 6\)",
         after="feed(h0=f32(1, N, H)); workspace.RunNetOnce(m.net)"),
    Case("input-feature-size", "recurrent: data", "LSTM net, x with D+1 features",
         "m, res, gm = lstm(); feed(x=f32(T, N, D + 1)); workspace.RunNetOnce(m.net)",
         V,
         r"op FC #0: input 1 blob 'l/i2h_w' of shape \(20, 3\) "
         r"float32 does not fit input 0 blob 'x' of shape "
         r"\(4, 2, 4\)"),
    Case("input-int32", "recurrent: data", "LSTM net, x int32",
         "m, res, gm = lstm(); feed(x=np.ones((T, N, D), np.int32)); workspace.RunNetOnce(m.net)", T_,
         r"op FC #0: input 0 blob 'x' must be float32, got \(4, 2, 3\) int32"),
    Case("sequence-1d", "recurrent: data", "mul-cell net, input sequence 1-D",
         "net, outs = mul_rnn(); feed(input=f32(3)); workspace.RunNetOnce(net)",
         V,
         r"op RecurrentNetwork #0: input sequence 'input' must "
         r"be at least 2-D \(T, N, ...\), got \(3,\) float32"),
    Case("sequence-int32", "recurrent: data", "mul-cell net, input sequence int32",
         "net, outs = mul_rnn(); feed(input=np.ones((3, 2, 4), np.int32)); workspace.RunNetOnce(net)", T_,
         r"op RecurrentNetwork #0: input 0 blob 'input' must be float32, got \(3, 2, 4\) int32"),
    Case("nan-inf-in-sequence", "recurrent: data", "LSTM training net, x with NaN and Inf at t=1",
         """
         m, res, gm = lstm()
         x = f32(T, N, D); x[1, 0, 0] = np.nan; x[1, 1, 0] = np.inf
         feed(x=x)
         workspace.RunNetOnce(m.net)
         h, gx = workspace.FetchBlob(res[0]), workspace.FetchBlob(gm['x'])
         assert np.isfinite(h[0]).all() and np.isnan(h[1:, 0]).all()
         assert np.isnan(gx[:2, 0]).any() and np.isnan(gx).any()
         """, None, "", note="no error: NaN propagates to later steps and into the gradients"),
    Case("huge-T", "recurrent: data", "mul-cell net, input of shape (2**31, 2, 0)",
         "net, outs = mul_rnn(); feed(input=np.zeros((2**31, 2, 0), np.float32), init=f32(2, 0)); "
         "workspace.RunNetOnce(net)", V, r"op RecurrentNetwork #0: sequence length 2147483648 too large"),
    Case("huge-state", "recurrent: data", "mul-cell net, (T+1) x N x S states of ~1 PB",
         "net, outs = mul_rnn(forward_only=True); feed(input=np.zeros((2**28, 1000, 0), np.float32), "
         "init=f32(1000, 1000)); workspace.RunNetOnce(net)",
         M,
         r"op RecurrentNetwork #0: state 'rnn/output_t_prev_states' "
         r"268435457x1000x1000: .*too large to allocate"),
    Case("T-zero", "recurrent: data", "LSTM training net, x of shape (0, N, D)",
         """
         m, res, gm = lstm(); feed(x=f32(0, N, D), g_all=f32(0, N, H))
         workspace.RunNetOnce(m.net)
         assert workspace.FetchBlob(res[0]).shape == (0, N, H)
         assert np.array_equal(workspace.FetchBlob(res[1]), workspace.FetchBlob('h0'))
         """, None, "", note="no error: empty outputs, last state = initial state"),
    Case("missing-reference-blob", "recurrent: data", "LSTM net before param_init_net ran",
         """
         m = ModelHelper(name='m')
         rnn_cell.LSTM(m, 'x', 'seq', ['h0', 'c0'], D, H, scope='l')
         feed(x=f32(T, N, D), seq=np.full(N, T, np.int32), h0=f32(1, N, H), c0=f32(1, N, H))
         workspace.RunNetOnce(m.net)
         """, K, r"op FC #0: input 1 blob 'l/i2h_w' does not exist in the workspace"),
    Case("initial-state-changed-before-gradient", "recurrent: data",
         "LSTM training net run once, then h0 re-fed as (1, N, H+1) and the gradient op run alone",
         """
         m, res, gm = lstm()
         workspace.RunNetOnce(m.net)
         feed(h0=f32(1, N, H + 1))
         (gop,) = [o for o in m.net.Proto().op if o.type == 'RecurrentNetworkGradient']
         workspace.RunOperatorOnce(gop)
         """,
         V,
         r"op RecurrentNetworkGradient #0: initial state 'h0' \(forward input 1\) has shape "
         r"\(1, 2, 6\) float32, but the forward run made state '[^']+' \(5, 2, 5\) float32 over 4 steps "
         r"from it: the gradient needs it as in the forward run, \(5,\), \(2, 5\) or \(1, 2, 5\)",
         after="feed(h0=f32(1, N, H)); workspace.RunNetOnce(m.net)"),
    Case("gradient-before-forward", "recurrent: data", "RecurrentNetworkGradient run without its forward op",
         """
         net, outs = mul_rnn()
         g = net.Clone('g'); g.AddGradientOperators({str(outs[0]): 'g_all'})
         (gop,) = [o for o in g.Proto().op if o.type == 'RecurrentNetworkGradient']
         for b in gop.input:
             if not workspace.HasBlob(b):
                 feed(**{b: f32(3, 2, 4)})
         workspace.RunOperatorOnce(gop)
         """,
         V,
         r"op RecurrentNetworkGradient #0: blob 'rnn/step_workspaces' holds no step workspaces: run the "
                 r"forward RecurrentNetwork op first"),
    Case("step-op-fails-executor-off", "recurrent: data",
         "a cell op fails (executor off): gates_t_w re-fed with H+1 columns, RunNet",
         """
         m, res, gm = lstm(executor=0)
         workspace.CreateNet(m.net); workspace.RunNet(m.net)
         feed(**{'l/gates_t_w': f32(4 * H, H + 1)})
         workspace.RunNet(m.net)
         """,
         V,
         r"op RecurrentNetwork #1 \(step net '[^']+'\): op FC #\d+ at timestep 0: input 1 blob 'l/gates_t_w'",
         after="feed(**{'l/gates_t_w': f32(4 * H, H)}); workspace.RunNet(m.net)"),
    Case("step-op-fails-executor-on", "recurrent: data", "the same with the executor on (4 threads)",
         """
         m, res, gm = lstm(executor=1)
         for op in m.net.Proto().op:
             if op.type.startswith('RecurrentNetwork'):
                 rnn.set_rnn_executor_config(op, num_threads=4)
         workspace.CreateNet(m.net); workspace.RunNet(m.net)
         feed(**{'l/gates_t_w': f32(4 * H, H + 1)})
         workspace.RunNet(m.net)
         """,
         V,
         r"op RecurrentNetwork #1 \(step net '[^']+'\): op FC #\d+ at timestep 0: input 1 blob 'l/gates_t_w'",
         after="feed(**{'l/gates_t_w': f32(4 * H, H)}); workspace.RunNet(m.net)",
         note="first error wins; the executor stays usable"),
    Case("cell-changes-state-shape", "recurrent: data",
         "a cell whose new state (N x 5) has another size than the initial state (N x 4)",
         """
         cell = core.Net('cell')
         i_t, pv = cell.AddExternalInputs('input_t', 'output_t_prev')
         o = cell.FC([pv, 'wref', 'bref'], 'output_t', axis=2)
         cell.AddExternalOutput(o)
         net = core.Net('o')
         outs = rnn.recurrent_net(net, cell, [(i_t, 'input')], [(pv, 'init')], {pv: o}, forward_only=True)
         feed(input=f32(3, 2, 4), init=f32(2, 4), wref=f32(5, 4), bref=f32(5))
         workspace.RunNetOnce(net)
         """,
         V, r"step op FC #\d+ at timestep 0 wrote 'output_t' as \(1, 2, 5\) float32, which does not fit"),
    # ---------------------------------------------------------------- RecurrentNetwork arguments
    Case("link-offset-out-of-range", "recurrent: arguments", "link_offset=[0, 1, 7] (3 input rows)",
         "net, outs = mul_rnn(link_offset=[0, 1, 7]); workspace.RunNetOnce(net)",
         I,
         r"op RecurrentNetwork #0 \(step net '[^']+'\): op rnn_internal_apply_link "
         r"#2 at timestep 0: link 'input' -> "
         r"'input_t': rows \[7, 8\) are outside the 3 rows of \(3, 2, 4\) float32 \(offset 7, window 1\)"),
    Case("link-window-out-of-range", "recurrent: arguments", "link_window=[1, 1, 9]",
         "net, outs = mul_rnn(link_window=[1, 1, 9]); workspace.RunNetOnce(net)", I,
         r"link 'input' -> 'input_t': rows \[0, 9\) are outside the 3 rows"),
    Case("link-offset-negative", "recurrent: arguments", "link_offset=[0, -1, 0]",
         "net, outs = mul_rnn(link_offset=[0, -1, 0]); workspace.RunNetOnce(net)",
         V,
         r"op RecurrentNetwork #0: link 1 \('rnn/output_t_prev_states' "
         r"-> 'output_t'\) has negative offset -1"),
    Case("link-window-negative", "recurrent: arguments", "link_window=[1, -1, 1]",
         "net, outs = mul_rnn(link_window=[1, -1, 1]); workspace.RunNetOnce(net)",
         V, r"has negative window -1"),
    Case("link-lists-mismatch", "recurrent: arguments", "link_offset with 2 entries, link_internal with 3",
         "net, outs = mul_rnn(link_offset=[0, 1]); workspace.RunNetOnce(net)", V,
         r"op RecurrentNetwork #0: link_internal has 3 entries but link_offset has 2"),
    Case("link-external-missing", "recurrent: arguments", "link_external naming a blob that does not exist",
         "net, outs = mul_rnn(link_external=['rnn/output_t_prev_states', "
         "'rnn/output_t_prev_states', 'nope']); "
         "workspace.RunNetOnce(net)",
         K,
         r"creating the forward step net: net '[^']+': op rnn_internal_apply_link "
         r"#2: input 1 blob 'nope' does not "
         r"exist"),
    Case("alias-offset-out-of-range", "recurrent: arguments", "alias_offset=[9, -1] (4 state rows)",
         "net, outs = mul_rnn(alias_offset=[9, -1]); workspace.RunNetOnce(net)",
         I,
         r"op RecurrentNetwork #0: alias 0 \('rnn/output_t_prev_states' "
         r"-> 'output_t_all'\): offset 9 is outside "
         r"the 4 rows"),
    Case("alias-negative-offset-out-of-range", "recurrent: arguments", "alias_offset=[1, -9]",
         "net, outs = mul_rnn(alias_offset=[1, -9]); workspace.RunNetOnce(net)", I,
         r"alias 1 \('rnn/output_t_prev_states' -> 'output_t_last'\): offset -9 is outside the 4 rows"),
    Case("alias-lists-mismatch", "recurrent: arguments", "alias_offset with 1 entry, 2 aliases",
         "net, outs = mul_rnn(alias_offset=[1]); workspace.RunNetOnce(net)", V,
         r"alias_src \(2\), alias_dst \(2\) and alias_offset \(1\) must have the same length"),
    Case("alias-source-missing", "recurrent: arguments", "alias_src=['nope', ...]",
         "net, outs = mul_rnn(alias_src=['nope', 'rnn/output_t_prev_states']); workspace.RunNetOnce(net)", K,
         r"op RecurrentNetwork #0: alias 0: source blob 'nope' does not exist"),
    Case("alias-dst-not-output", "recurrent: arguments", "alias_dst=['zzz', ...] (not the op's outputs)",
         "net, outs = mul_rnn(alias_dst=['zzz', 'output_t_last']); workspace.RunNetOnce(net)", V,
         r"op RecurrentNetwork #0: output 0 'output_t_all' is neither an alias destination \(alias_dst\) nor a "
         r"recurrent state \(recurrent_states\); the last output is the step-workspaces blob"),
    Case("alias-dst-missing-from-outputs", "recurrent: arguments",
         "RecurrentNetwork outputs ['output_t_all', <the state>, step workspaces] (alias 1's destination left out)",
         """
         net, outs = mul_rnn(); op = net.Proto().op[0]
         op.output[1] = 'rnn/output_t_prev_states'
         workspace.RunNetOnce(net)
         """, V, r"op RecurrentNetwork #0: alias_dst\[1\] 'output_t_last' is not among the outputs \(each alias "
                 r"destination is an output\)",
         note="An output may name a recurrent state (it holds all the state's rows), as Caffe2 allowed."),
    Case("rnn-state-output-gradient-shape", "recurrent: data",
         "a gradient of 3 rows for a RecurrentNetwork output that names the recurrent state (4 rows)",
         """
         net, outs = mul_rnn(owg=(0, 1)); op = net.Proto().op[0]
         names = list(op.output); del op.output[:]
         op.output.extend([names[0], 'rnn/output_t_prev_states'] + names[1:])
         g = net.Clone('g'); g.AddGradientOperators({'output_t_all': 'g_all', 'rnn/output_t_prev_states': 'g_st'})
         feed(g_all=f32(3, 2, 4), g_st=f32(3, 2, 4))
         workspace.RunNetOnce(g)
         """, V, r"op RecurrentNetworkGradient #\d+: gradient 'g_st' of alias 'rnn/output_t_prev_states' \(offset 0: "
                 r"rows \[0, 4\) of state 'rnn/output_t_prev_states' \(4, 2, 4\) float32\) has shape \(3, 2, 4\) "
                 r"float32, expected \(4, 2, 4\)",
         after="feed(g_st=f32(4, 2, 4)); workspace.RunNetOnce(g)",
         note="An output naming a recurrent state passes its gradient back (all rows, the first to the initial "
              "state), as an alias at offset 0 does."),
    Case("rnn-gradient-alias-not-a-state", "recurrent: arguments",
         "RecurrentNetworkGradient whose alias with a gradient views the input sequence, not a state",
         """
         net, outs = mul_rnn()
         g = net.Clone('g'); g.AddGradientOperators({'output_t_all': 'g_all'})
         set_args(g, 'RecurrentNetworkGradient', alias_src=['input', 'rnn/output_t_prev_states'])
         feed(g_all=f32(3, 2, 4))
         workspace.RunNetOnce(g)
         """, V, r"op RecurrentNetworkGradient #\d+: alias 0 \('input' -> 'output_t_all'\) has a gradient "
                 r"\(outputs_with_grads\[0\]\) but 'input' is not a recurrent state: gradients flow back only "
                 r"through aliases of recurrent_states",
         note="Before, such a gradient was dropped without a word."),
    Case("rnn-alias-gradient-initial-rows", "recurrent: arguments",
         "a gradient through the steps' alias of a state fed 2 initial rows while its steps write from row 1",
         """
         net, outs = mul_rnn()
         g = net.Clone('g'); g.AddGradientOperators({'output_t_all': 'g_all'})
         feed(init=f32(2, 2, 4))
         workspace.RunNetOnce(net)
         feed(g_all=f32(4, 2, 4))
         workspace.RunNetOnce(g)
         """, V, r"op RecurrentNetworkGradient #\d+: alias 0 \('rnn/output_t_prev_states' -> 'output_t_all', "
                 r"offset 1\) has a gradient, but state 'rnn/output_t_prev_states' \(5, 2, 4\) float32 has 2 "
                 r"initial rows and its steps write rows from 1 on",
         note="The forward run takes the 2 rows (step 0 overwrites row 1); the alias rows would not match the "
              "steps that wrote them."),
    Case("initial-state-id-out-of-range", "recurrent: arguments", "initial_recurrent_state_ids=[5]",
         "net, outs = mul_rnn(initial_recurrent_state_ids=[5]); workspace.RunNetOnce(net)",
         I,
         r"op RecurrentNetwork #0: initial_recurrent_state_ids\[0\] "
         r"= 5 is not an input index \(op has 2 inputs\)"),
    Case("initial-state-id-negative", "recurrent: arguments", "initial_recurrent_state_ids=[-1]",
         "net, outs = mul_rnn(initial_recurrent_state_ids=[-1]); workspace.RunNetOnce(net)", I,
         r"initial_recurrent_state_ids\[0\] = -1 is not an input index"),
    Case("states-ids-mismatch", "recurrent: arguments", "recurrent_states with 2 entries, 1 initial state id",
         "net, outs = mul_rnn(recurrent_states=['a', 'b']); workspace.RunNetOnce(net)", V,
         r"recurrent_states has 2 entries but initial_recurrent_state_ids has 1"),
    Case("timestep-written-by-step-op", "recurrent: arguments", "a step-net op writes the timestep blob",
         """
         net, outs = mul_rnn()
         op = set_args(net)
         [a for a in op.arg if a.name == 'step_net'][0].n.op.append(
             core.CreateOperator('ConstantFill', [], ['timestep'], shape=[1], value=1.0))
         workspace.RunNetOnce(net)
         """,
         V,
         r"op RecurrentNetwork #0: step op ConstantFill #1 writes the timestep blob 'timestep': the timestep "
                 r"cannot be the output of an op"),
    Case("step-net-missing", "recurrent: arguments", "RecurrentNetwork without step_net",
         "net, outs = mul_rnn(step_net=None); workspace.RunNetOnce(net)", V,
         r"op RecurrentNetwork #0: argument 'step_net' \(a NetDef\) is required"),
    Case("step-net-string", "recurrent: arguments", "step_net='...' (a string)",
         "net, outs = mul_rnn(step_net='name: \"x\"'); workspace.RunNetOnce(net)", T_,
         r"op RecurrentNetwork: argument 'step_net' must be a NetDef, got string"),
    Case("executor-threads-out-of-range", "recurrent: arguments", "rnn_executor.num_threads=-3",
         "net, outs = mul_rnn(rnn_executor__num_threads=-3); workspace.RunNetOnce(net)", V,
         r"rnn_executor.num_threads must be in \[0, 1024\], got -3"),
    Case("executor-min-op-us-negative", "recurrent: arguments", "rnn_executor.min_op_us=-2.5",
         "net, outs = mul_rnn(rnn_executor__min_op_us=-2.5); workspace.RunNetOnce(net)", V,
         r"op RecurrentNetwork #0: rnn_executor.min_op_us must be in \[0, 1e6\], got -2.5"),
    Case("num-workspaces-zero", "recurrent: arguments", "num_workspaces=0",
         "net, outs = mul_rnn(num_workspaces=0); workspace.RunNetOnce(net)",
         V, r"num_workspaces must be >= 1, got 0"),
    # ---------------------------------------------------------------- recurrent_net / rnn_cell calls
    Case("recurrent-net-two-inputs", "recurrent: Python", "recurrent_net(..., inputs=[(a, x), (b, y)])",
         """
         cell = core.Net('c')
         i_t, pv = cell.AddExternalInputs('input_t', 'prev'); o = cell.Mul([i_t, pv], 'o')
         rnn.recurrent_net(core.Net('n'), cell, [(i_t, 'x'), (i_t, 'y')], [(pv, 'i')], {pv: o})
         """,
         V, r"recurrent_net: only one input blob is supported so far, got 2"),
    Case("recurrent-net-missing-link", "recurrent: Python", "recurrent_net(..., links={})",
         """
         cell = core.Net('c')
         i_t, pv = cell.AddExternalInputs('input_t', 'prev'); o = cell.Mul([i_t, pv], 'o')
         rnn.recurrent_net(core.Net('n'), cell, [(i_t, 'x')], [(pv, 'i')], {})
         """,
         V, r"recurrent_net: state input 'prev' has no entry in links"),
    Case("recurrent-net-timestep-output", "recurrent: Python",
         "recurrent_net with a cell op writing 'timestep'",
         """
         cell = core.Net('c')
         i_t, pv = cell.AddExternalInputs('input_t', 'prev'); o = cell.Mul([i_t, pv], 'o')
         cell.ConstantFill([], 'timestep', shape=[1], value=1.0)
         rnn.recurrent_net(core.Net('n'), cell, [(i_t, 'x')], [(pv, 'i')], {pv: o})
         """,
         V, r"recurrent_net: the timestep blob 'timestep' cannot be an output of a cell op"),
    Case("recurrent-net-outputs-with-grads", "recurrent: Python",
         "recurrent_net(..., outputs_with_grads=(2,))",
         """
         cell = core.Net('c')
         i_t, pv = cell.AddExternalInputs('input_t', 'prev'); o = cell.Mul([i_t, pv], 'o')
         rnn.recurrent_net(core.Net('n'), cell, [(i_t, 'x')], [(pv, 'i')], {pv: o}, outputs_with_grads=(2,))
         """,
         V, r"recurrent_net: outputs_with_grads index 2 out of range"),
    Case("lstm-wrong-number-of-states", "recurrent: Python", "rnn_cell.LSTM(..., initial_states=['h0'])",
         "rnn_cell.LSTM(ModelHelper(name='m'), 'x', None, ['h0'], 4, 3, scope='s')", V,
         r"Number of initial state values provided doesn't match the number of states"),
    Case("lstm-empty-dim-out", "recurrent: Python", "rnn_cell.LSTM(..., dim_out=[])",
         "rnn_cell.LSTM(ModelHelper(name='m'), 'x', 'seq', ['h0', 'c0'], 3, [], scope='l')", V,
         r"dim_out must be an int or a non-empty list"),
    Case("lstm-bad-input-name", "recurrent: Python", "rnn_cell.LSTM(model, 3, ...)",
         "rnn_cell.LSTM(ModelHelper(name='m'), 3, 'seq', ['h0', 'c0'], 3, 4, scope='l')", T_,
         r"expected a blob name \(str\) or BlobReference, got int"),
    Case("basic-rnn-activation", "recurrent: Python", "rnn_cell.BasicRNNCell(..., activation='sigmoid')",
         "rnn_cell.BasicRNNCell(3, 3, 0.0, False, activation='sigmoid')", R,
         r"BasicRNNCell with unknown activation function \(sigmoid\)"),
    Case("gradient-through-should-not-do", "nets", "AddGradientOperators through Accuracy's output",
         """
         n = core.Net('acc_g'); n.Softmax(['x'], 'p'); n.Accuracy(['p', 'l'], 'acc')
         n.AddGradientOperators(['acc'])
         """,
         V, r"^op Accuracy #1: the gradient of its output 0 'acc' reaches it, but Accuracy must not be "
            r"differentiated \(Caffe2: SHOULD_NOT_DO_GRADIENT\)",
         after="assert len(n.Proto().op) == 2; n.AddGradientOperators(['p'])",
         note="was silent (no gradient); Caffe2 raised too; NO_GRADIENT ops (StopGradient) stay silent"),
    Case("gradient-of-forward-only", "recurrent: Python",
         "AddGradientOperators on an LSTM built forward_only",
         """
         m = ModelHelper(name='m')
         res = rnn_cell.LSTM(m, 'x', 'seq', ['h0', 'c0'], 3, 5, scope='l', forward_only=True)
         m.AddGradientOperators([res[0]])
         """,
         V, r"built with forward_only=True .* it has no backward step net"),
    Case("executor-config-bad-threads", "recurrent: Python", "set_rnn_executor_config(rnn_op, num_threads=0)",
         """
         net, outs = mul_rnn()
         rnn.set_rnn_executor_config(set_args(net), num_threads=0)
         """, V, r"set_rnn_executor_config: num_threads must be >= 1, got 0"),
    Case("executor-config-bad-min-op-us", "recurrent: Python",
         "set_rnn_executor_config(rnn_op, min_op_us=float('nan'))",
         """
         net, outs = mul_rnn()
         rnn.set_rnn_executor_config(set_args(net), min_op_us=float('nan'))
         """, V, r"set_rnn_executor_config: min_op_us must be in \[0, 1e6\], got nan"),
    Case("executor-config-not-rnn-op", "recurrent: Python", "set_rnn_executor_config(fc_op, num_threads=2)",
         "rnn.set_rnn_executor_config(core.CreateOperator('FC', ['x', 'w', 'b'], 'y'), num_threads=2)", V,
         r"expected a RecurrentNetwork or RecurrentNetworkGradient op, got 'FC'"),
    # ---------------------------------------------------------------- checkpoints (ops/db.c)
    Case("ckpt-load-missing-file", "checkpoints", "Load([], ['w'], db='/no/such/file', db_type='minidb')",
         "run_op('Load', [], ['w'], db='/no/such/file', db_type='minidb')",
         "OSError", r"op Load #0: cannot open '/no/such/file' for reading: No such file or directory"),
    Case("ckpt-save-unwritable", "checkpoints", "Save(['w'], [], db='/no/such/dir/ckpt', db_type='minidb')",
         "feed(w=f32(2)); run_op('Save', ['w'], [], db='/no/such/dir/ckpt', db_type='minidb')",
         "OSError", r"op Save #0: cannot open '/no/such/dir/ckpt' for writing: No such file or directory"),
    Case("ckpt-unknown-db-type", "checkpoints", "CreateNet with Save(..., db_type='leveldb')",
         """
         n = core.Net('n'); n.Save(['w'], [], db='/tmp/x', db_type='leveldb')
         feed(w=f32(2)); workspace.CreateNet(n)
         """, V, r"op Save #0: db_type 'leveldb' is not supported: only 'minidb' is"),
    Case("ckpt-save-no-tensor", "checkpoints", "Save of a blob created but never written",
         """
         import tempfile; d = tempfile.mkdtemp(); feed(w=f32(2))
         run_op('Save', ['w'], [], db=d + '/a', db_type='minidb')
         run_op('Load', [], ['w', 'e'], db=d + '/a', db_type='minidb', allow_incomplete=1)
         run_op('Save', ['e'], [], db=d + '/b', db_type='minidb')
         """, V, r"op Save #0: input 0 blob 'e' holds no tensor"),
    Case("ckpt-save-chunk-separator", "checkpoints", "Save(['a#%1'], ...)",
         "feed(**{'a#%1': f32(2)}); run_op('Save', ['a#%1'], [], db='/tmp/unused', db_type='minidb')",
         V, r"would be saved as 'a#%1', which contains the chunk separator '#%'",
         note="Load cuts keys at '#%' (Caffe2's chunk ids), so such a name would not come back"),
    Case("ckpt-load-absent-blob", "checkpoints", "Load(['w', 'v'], ...) from a file holding only 'w'",
         """
         import tempfile; d = tempfile.mkdtemp(); feed(w=f32(2))
         run_op('Save', ['w'], [], db=d + '/a', db_type='minidb')
         run_op('Load', [], ['w', 'v'], db=d + '/a', db_type='minidb')
         """, K, r"op Load #0: output 1 blob 'v' is not in '.*/a' "
                 r"\(allow_incomplete=1 loads what is there\)"),
    Case("ckpt-truncated-file", "checkpoints", "Load of a file cut in the middle of a record",
         """
         import tempfile; d = tempfile.mkdtemp(); feed(w=f32(5))
         run_op('Save', ['w'], [], db=d + '/a', db_type='minidb')
         data = open(d + '/a', 'rb').read(); open(d + '/a', 'wb').write(data[:-6])
         run_op('Load', [], ['w'], db=d + '/a', db_type='minidb')
         """, V, r"op Load #0: file '.*/a' record 0 \(at byte 0\): key length 4 and value length \d+ "
                 r"run past"),
    Case("ckpt-huge-lengths", "checkpoints", "Load of a record claiming 4 GiB key and value lengths",
         """
         import tempfile, struct; d = tempfile.mkdtemp()
         open(d + '/a', 'wb').write(struct.pack('=II', 2**32 - 1, 2**32 - 1) + b'xy')
         run_op('Load', [], [], db=d + '/a', db_type='minidb', load_all=1)
         """, V, r"key length 4294967295 and value length 4294967295 run past the end of the file"),
    Case("ckpt-huge-dims", "checkpoints", "Load of a TensorProto claiming 2**40 elements",
         """
         import tempfile, struct; d = tempfile.mkdtemp()
         t = b'\\x08\\x80\\x80\\x80\\x80\\x80\\x20\\x10\\x01'
         v = b'\\x12\\x06Tensor\\x1a' + bytes([len(t)]) + t
         open(d + '/a', 'wb').write(struct.pack('=II', 4, len(v)) + b'w#%0' + v)
         run_op('Load', [], ['w'], db=d + '/a', db_type='minidb')
         """, V, r"record 0 \(key 'w#%0', at byte 0\): blob 'w' claims 1099511627776 elements, more than the "
                 r"\d+ bytes of the file\(s\) can hold", note="refused before anything is allocated"),
    Case("ckpt-garbage", "checkpoints", "Load of a record whose value is garbage bytes",
         """
         import tempfile, struct; d = tempfile.mkdtemp(); v = bytes(range(250, 256)) * 3
         open(d + '/a', 'wb').write(struct.pack('=II', 1, len(v)) + b'w' + v)
         run_op('Load', [], ['w'], db=d + '/a', db_type='minidb')
         """, V, r"op Load #0: file '.*/a' record 0 \(key 'w', at byte 0\): corrupt BlobProto"),
    Case("ckpt-int64-out-of-range", "checkpoints", "Load of a Caffe2 INT64 tensor holding 2**31",
         """
         import tempfile, struct; d = tempfile.mkdtemp()
         t = b'\\x08\\x01\\x10\\x0a\\x50\\x80\\x80\\x80\\x80\\x08'
         v = b'\\x12\\x06Tensor\\x1a' + bytes([len(t)]) + t
         open(d + '/a', 'wb').write(struct.pack('=II', 4, len(v)) + b'w#%0' + v)
         run_op('Load', [], ['w'], db=d + '/a', db_type='minidb')
         """, V, r"blob 'w': INT64 value 2147483648 at element 0 does not fit in int32"),
    Case("ckpt-string-dtype", "checkpoints", "Load of a Caffe2 STRING tensor",
         """
         import tempfile, struct; d = tempfile.mkdtemp()
         t = b'\\x08\\x01\\x10\\x04\\x32\\x01s'
         v = b'\\x12\\x06Tensor\\x1a' + bytes([len(t)]) + t
         open(d + '/a', 'wb').write(struct.pack('=II', 4, len(v)) + b'w#%0' + v)
         run_op('Load', [], ['w'], db=d + '/a', db_type='minidb')
         """, T_, r"blob 'w' has Caffe2 dtype STRING \(4\), which recurrent cannot hold"),
    Case("ckpt-load-from-tensor", "checkpoints", "Load(['w'], ...) where 'w' holds a tensor, not a DBReader",
         "feed(w=f32(2)); run_op('Load', ['w'], [], load_all=1)",
         T_, r"op Load #0: input 0 blob 'w' must be a DBReader \(CreateDB's output\), got \(2,\) float32"),
    Case("ckpt-save-reader", "checkpoints", "Save(['reader'], ...) of CreateDB's output",
         """
         import tempfile; d = tempfile.mkdtemp(); feed(w=f32(2))
         run_op('Save', ['w'], [], db=d + '/a', db_type='minidb')
         run_op('CreateDB', [], ['reader'], db=d + '/a', db_type='minidb')
         run_op('Save', ['reader'], [], db=d + '/b', db_type='minidb')
         """, T_, r"op Save #0: input 0 blob 'reader' holds a DBReader, not a tensor"),
    # ---------------------------------------------------------------- unary.c and reduce.c ops
    Case("clip-min-above-max", "ops: unary & reduce", "Clip(x, min=1, max=0)",
         "feed(x=f32(2, 3)); run_op('Clip', 'x', 'y', min=1.0, max=0.0)", V,
         r"op Clip #0: argument 'min' \(1\) must be <= argument 'max' \(0\)",
         after="run_op('Clip', 'x', 'y', min=0.0, max=1.0)",
         note="Caffe2 gave max everywhere; unset bounds are -inf / +inf (Caffe2: -FLT_MAX / FLT_MAX)"),
    Case("ensure-clipped-index", "ops: unary & reduce", "EnsureClipped([p (5, 3), i = [0, 5], g], 'p')",
         """
         feed(p=f32(5, 3), i=np.array([0, 5], np.int32), g=f32(2, 3))
         run_op('EnsureClipped', ['p', 'i', 'g'], ['p'], min=0.0)
         """, I, r"op EnsureClipped #0: input 1 blob 'i': index 5 at position 1 is out of range \[0, 5\)"),
    Case("ensure-clipped-grad-shape", "ops: unary & reduce",
         "EnsureClipped([p (5, 3), i (2,), g (2, 4)], 'p')",
         """
         feed(p=f32(5, 3), i=np.array([0, 1], np.int32), g=f32(2, 4))
         run_op('EnsureClipped', ['p', 'i', 'g'], ['p'], min=0.0)
         """, V, r"op EnsureClipped #0: input 2 blob 'g' \(the gradient\) must have shape \(2, 3\)"),
    Case("ensure-clipped-sparse-not-in-place", "ops: unary & reduce", "EnsureClipped([p, i, g], 'q')",
         """
         feed(p=f32(5, 3), i=np.array([0], np.int32), g=f32(1, 3))
         run_op('EnsureClipped', ['p', 'i', 'g'], ['q'], min=0.0)
         """, V, r"op EnsureClipped #0: output 0 blob 'q' must be input 0 blob 'p' \(this op updates it in "
                 r"place\)"),
    Case("ensure-clipped-two-inputs", "ops: unary & reduce", "EnsureClipped([p, i], 'p')",
         "feed(p=f32(5, 3), i=np.array([0], np.int32)); run_op('EnsureClipped', ['p', 'i'], ['p'])", V,
         r"op EnsureClipped #0: takes param alone or \(param, indices, grad\), got 2 inputs"),
    Case("clip-tensor-by-scaling-threshold", "ops: unary & reduce",
         "ClipTensorByScaling([x, v]) without threshold",
         "feed(x=f32(4, 3), v=np.float32(2.0)); run_op('ClipTensorByScaling', ['x', 'v'], 'y')", V,
         r"op ClipTensorByScaling #0: argument 'threshold' \(0\) must be > 0"),
    Case("clip-tensor-by-scaling-value-shape", "ops: unary & reduce", "ClipTensorByScaling([x, v (2,)])",
         "feed(x=f32(4, 3), v=f32(2)); run_op('ClipTensorByScaling', ['x', 'v'], 'y', threshold=1.0)", V,
         r"op ClipTensorByScaling #0: input 1 blob 'v' \(the value\) must hold one value, got \(2,\) "
         r"float32"),
    Case("clip-tensor-by-scaling-additional", "ops: unary & reduce", "ClipTensorByScaling([x, v, a = [0]])",
         """
         feed(x=f32(4, 3), v=np.float32(2.0), a=np.zeros(1, np.float32))
         run_op('ClipTensorByScaling', ['x', 'v', 'a'], 'y', threshold=1.0)
         """, V, r"op ClipTensorByScaling #0: input 2 blob 'a' \(additional_threshold\) must be > 0, got 0",
         note="Caffe2 did not check it (a threshold <= 0 flipped or zeroed the tensor)"),
    Case("leaky-relu-gradient-negative-alpha", "ops: unary & reduce",
         "LeakyReluGradient([y, dy], alpha=-0.5)",
         "feed(y=f32(2, 3)); run_op('LeakyReluGradient', ['y', 'y'], 'dx', alpha=-0.5)", V,
         r"op LeakyReluGradient #0: argument 'alpha' is -0.5: the gradient reads Y only, which does not "
         r"tell the sign of X when alpha < 0",
         note="Caffe2 gave a wrong gradient for X < 0; EluGradient the same; the forward ops take any alpha"),
    Case("softsign-in-place-gradient", "ops: unary & reduce", "net.Softsign('x', 'x'); AddGradientOperators",
         """
         n = core.Net('ss'); y = n.Softsign('x', 'x'); l = n.SumElements(y, 'l')
         n.AddGradientOperators([l])
         """, V, r"Softsign gradient: the forward op ran in place on 'x', so X is overwritten",
         note="as Caffe2's Softsign maker; Abs the same (Caffe2's Abs maker did not check)"),
    Case("min-shapes", "ops: unary & reduce", "Min([a (2,3), b (3,2)])",
         "feed(a=f32(2, 3), b=f32(3, 2)); run_op('Min', ['a', 'b'], 'y')", V,
         r"op Min #0: input 1 blob 'b' of shape \(3, 2\) float32 must have the shape of input 0 blob 'a' "
         r"\(2, 3\) float32", note="no broadcasting (as our Max); Mean broadcasts (below)"),
    Case("mean-no-broadcast", "ops: unary & reduce", "Mean([a (2,3), b (2,2)])",
         "feed(a=f32(2, 3), b=f32(2, 2)); run_op('Mean', ['a', 'b'], 'y')", V,
         r"op Mean #0: input 1 blob 'b' of shape \(2, 2\) float32 does not broadcast with the inputs "
         r"before it \(numpy-style, dims aligned from the last\): its dim 1 is 2 where they give 3",
         note="numpy-style, as newer Caffe2's Mean; checked already at CreateNet"),
    Case("mean-in-place-broadcast", "ops: unary & reduce", "Mean([a (3,), b (2,3)]) -> a",
         "feed(a=f32(3), b=f32(2, 3)); run_op('Mean', ['a', 'b'], 'a')", V,
         r"op Mean #0: output blob 'a' is input 0 of shape \(3,\) float32, but the inputs broadcast to "
         r"another shape \(in place needs the result to have that input's shape\)",
         note="as newer Caffe2 (it checked input 0 only)"),
    Case("mean-gradient-x-shape", "ops: unary & reduce", "MeanGradient([dy (2,3), dy, b (2,2)])",
         "feed(dy=f32(2, 3), b=f32(2, 2)); run_op('MeanGradient', ['dy', 'dy', 'b'], ['da', 'db'])", V,
         r"op MeanGradient #0: input 2 blob 'b' \(X1\) of shape \(2, 2\) float32 does not broadcast to "
         r"dY 'dy' of shape \(2, 3\) float32", note="the X give their shapes only"),
    Case("mean-gradient-in-place-shape", "ops: unary & reduce", "MeanGradient([dy (2,3), a (3,)]) -> dy",
         "feed(dy=f32(2, 3), a=f32(3)); run_op('MeanGradient', ['dy', 'a'], 'dy')", V,
         r"op MeanGradient #0: output 0 blob 'dy' is dY, but X0 'a' of shape \(3,\) float32 is not of dY's "
         r"shape \(2, 3\) float32 \(in place needs it\)"),
    Case("reduce-axis-out-of-range", "ops: unary & reduce", "ReduceSum(x (2,3), axes=[2])",
         "feed(x=f32(2, 3)); run_op('ReduceSum', 'x', 'y', axes=[2])", V,
         r"op ReduceSum #0: axis 2 in argument 'axes' is out of range for input 0 blob 'x' \(2, 3\) float32",
         note="checked already at CreateNet; negative axes count from the end"),
    Case("reduce-axis-repeated", "ops: unary & reduce", "ReduceMean(x (2,3), axes=[1, -1])",
         "feed(x=f32(2, 3)); run_op('ReduceMean', 'x', 'y', axes=[1, -1])", V,
         r"op ReduceMean #0: axis -1 in argument 'axes' repeats dim 1 of input 0 blob 'x' \(2, 3\) float32"),
    Case("reduce-max-empty", "ops: unary & reduce", "ReduceMax(x (2,0), axes=[1])",
         "feed(x=np.zeros((2, 0), np.float32)); run_op('ReduceMax', 'x', 'y', axes=[1])", V,
         r"op ReduceMax #0: input 0 blob 'x' \(2, 0\) float32: the maximum of 0 elements is undefined",
         note="Caffe2 gave the lowest float; ReduceMin the same; ReduceMean of 0 elements is NaN, as NumPy"),
    Case("reduce-front-num-reduce-dim", "ops: unary & reduce", "ReduceFrontSum(x (2,3), num_reduce_dim=3)",
         "feed(x=f32(2, 3)); run_op('ReduceFrontSum', 'x', 'y', num_reduce_dim=3)", V,
         r"op ReduceFrontSum #0: argument 'num_reduce_dim' \(3\) is larger than the rank of input 0 blob 'x' "
         r"\(2, 3\) float32",
         note="ReduceBack*/Mean the same"),
    Case("reduce-gradient-dy-shape", "ops: unary & reduce",
         "ReduceSumGradient([dy (2,2), x (2,3), y], axes=[1])",
         "feed(dy=f32(2, 2), x=f32(2, 3)); run_op('ReduceSumGradient', ['dy', 'x', 'dy'], 'dx', axes=[1])", V,
         r"op ReduceSumGradient #0: input 0 blob 'dy' \(2, 2\) float32 \(dY\) must have the shape \(2, 1\) "
         r"float32 of the forward output for input 1 blob 'x' \(2, 3\) float32 \(X\)"),
    Case("argmax-empty-axis", "ops: unary & reduce", "ArgMax(x (2,0))",
         "feed(x=np.zeros((2, 0), np.float32)); run_op('ArgMax', 'x', 'y')", V,
         r"op ArgMax #0: dim 1 of input 0 blob 'x' \(2, 0\) float32 has size 0: no position to give",
         note="Caffe2 wrote no index; ArgMin the same; indices are int32 (Caffe2: int64)"),
    Case("rowwise-argmax-empty-rows", "ops: unary & reduce", "RowWiseArgMax(x (2,0))",
         "feed(x=np.zeros((2, 0), np.float32)); run_op('RowWiseArgMax', 'x', 'y')", V,
         r"op RowWiseArgMax #0: input 0 blob 'x' \(2, 0\) float32 has rows of 0 elements: no position to give",
         note="Caffe2 read X[0] of an empty row (and left the index unset for rows of 1 element)"),
    Case("rowwise-argmax-rank", "ops: unary & reduce", "RowWiseArgMax(x (2,3,4))",
         "feed(x=f32(2, 3, 4)); run_op('RowWiseArgMax', 'x', 'y')", V,
         r"op RowWiseArgMax #0: input 0 blob 'x' must be 2-D \(N, D\), got \(2, 3, 4\) float32"),
    Case("accuracy-label-range", "ops: unary & reduce", "Accuracy([p (2,3), label [0, 3]])",
         "feed(p=f32(2, 3), l=np.array([0, 3], np.int32)); run_op('Accuracy', ['p', 'l'], 'a')", I,
         r"op Accuracy #0: input 1 blob 'l' \(2,\) int32 \(label\): label 3 at row 1 is out of range "
         r"\[0, 3\)",
         after="feed(l=np.array([0, 2], np.int32)); run_op('Accuracy', ['p', 'l'], 'a')",
         note="Caffe2 read out of bounds"),
    Case("accuracy-no-rows", "ops: unary & reduce", "Accuracy([p (0,3), label (0,)])",
         "feed(p=np.zeros((0, 3), np.float32), l=np.zeros(0, np.int32)); run_op('Accuracy', ['p', 'l'], 'a')",
         V, r"op Accuracy #0: input 0 blob 'p' \(0, 3\) float32 \(prediction\) has no rows",
         note="Caffe2 divided by zero"),
    # ---------------------------------------------------------- metrics (csrc/ops/metric.c)
    Case("perplexity-negative", "ops: metrics", "Perplexity(p [0.5, -0.25])",
         "feed(p=np.array([0.5, -0.25], np.float32)); run_op('Perplexity', ['p'], ['y'])", V,
         r"op Perplexity #0: input 0 blob 'p' \(2,\) float32 \(probabilities\) holds -0.25 at position 1; a "
         r"probability must be finite and >= 0",
         after="feed(p=np.array([0.5, 0.25], np.float32)); run_op('Perplexity', ['p'], ['y'])",
         note="NaN and inf too; Caffe2 gave NaN (0 for inf). A 0 gives inf and N = 0 gives 1, as Caffe2"),
    Case("perplexity-rank", "ops: metrics", "Perplexity(p (2,3))",
         "feed(p=f32(2, 3)); run_op('Perplexity', ['p'], ['y'])", V,
         r"op Perplexity #0: input 0 blob 'p' \(probabilities\) must be 1-D, got \(2, 3\) float32",
         note="Caffe2 only DCHECKed the rank"),
    Case("multi-class-accuracy-label-range", "ops: metrics", "MultiClassAccuracy([x (2,3), label [0, -1]])",
         "feed(x=f32(2, 3), l=np.array([0, -1], np.int32)); run_op('MultiClassAccuracy', ['x', 'l'], ['a', 'c'])",
         I, r"op MultiClassAccuracy #0: input 1 blob 'l' \(2,\) int32 \(label\): label -1 at row 1 is out of "
            r"range \[0, 3\)",
         after="feed(l=np.array([0, 2], np.int32)); run_op('MultiClassAccuracy', ['x', 'l'], ['a', 'c'])",
         note="Caffe2 only DCHECKed label < D (release builds wrote out of bounds)"),
    Case("multi-class-accuracy-label-count", "ops: metrics", "MultiClassAccuracy([x (3,2), label (2,)])",
         "feed(x=f32(3, 2), l=np.zeros(2, np.int32)); run_op('MultiClassAccuracy', ['x', 'l'], ['a', 'c'])",
         V, r"op MultiClassAccuracy #0: input 1 blob 'l' \(2,\) int32 \(label\) must be 1-D with one label per "
            r"row of input 0 blob 'x' \(3, 2\) float32 \(prediction\)"),
    # ---------------------------------------------------------- ScaleBlobs (csrc/ops/math.c), SparseLengthsFill (fill.c)
    Case("scale-blobs-output-count", "ops: ScaleBlobs & SparseLengthsFill", "ScaleBlobs([a, b]) -> [y]",
         "feed(a=f32(3), b=f32(2)); run_op('ScaleBlobs', ['a', 'b'], ['y'], scale=2.0)", V,
         r"op ScaleBlobs #0: takes one output per input \(output i = scale \* input i\): got 2 inputs and 1 "
         r"outputs", after="run_op('ScaleBlobs', ['a', 'b'], ['y', 'z'], scale=2.0)",
         note="Caffe2's schema allowed any count of outputs; fewer than the inputs failed at Output(i)"),
    Case("scale-blobs-crossed-in-place", "ops: ScaleBlobs & SparseLengthsFill", "ScaleBlobs([a, b]) -> [b, a]",
         "feed(a=f32(3), b=f32(2)); run_op('ScaleBlobs', ['a', 'b'], ['b', 'a'], scale=2.0)", V,
         r"op ScaleBlobs #0: input 0 and output 1 are the same blob 'a', which this op does not allow "
         r"\(in-place\)", after="run_op('ScaleBlobs', ['a', 'b'], ['a', 'b'], scale=2.0)",
         note="Caffe2 allowed any pair in place: pair 1 then read the b pair 0 had already scaled"),
    Case("scale-blobs-dtype", "ops: ScaleBlobs & SparseLengthsFill", "ScaleBlobs([a, b int32]) -> [ya, yb]",
         "feed(a=f32(3), b=np.ones(2, np.int32), ya=np.zeros(3, np.float32)); "
         "run_op('ScaleBlobs', ['a', 'b'], ['ya', 'yb'], scale=2.0)", T_,
         r"op ScaleBlobs #0: input 1 blob 'b' must be float32, got \(2,\) int32",
         after="""
         assert (workspace.FetchBlob('ya') == 0).all()
         run_op('ScaleBlobs', ['a'], ['ya'], scale=2.0)
         """, note="every input is checked before any output is written"),
    Case("sparse-lengths-fill-required", "ops: ScaleBlobs & SparseLengthsFill",
         "SparseLengthsFill() without average_len",
         "run_op('SparseLengthsFill', [], ['v', 'l'], batch_size=4, max_value=10)", V,
         r"op SparseLengthsFill #0: argument 'average_len' is required",
         after="run_op('SparseLengthsFill', [], ['v', 'l'], batch_size=4, average_len=2, max_value=10)",
         note="batch_size, average_len and max_value are all required (no defaults assumed)"),
    Case("sparse-lengths-fill-batch-size", "ops: ScaleBlobs & SparseLengthsFill", "SparseLengthsFill(batch_size=-1)",
         "run_op('SparseLengthsFill', [], ['v', 'l'], batch_size=-1, average_len=2, max_value=10)", V,
         r"op SparseLengthsFill #0: argument 'batch_size' must be in \[0, 2147483647\], got -1"),
    Case("sparse-lengths-fill-total", "ops: ScaleBlobs & SparseLengthsFill",
         "SparseLengthsFill(batch_size=65536, average_len=32768)",
         "run_op('SparseLengthsFill', [], ['v', 'l'], batch_size=65536, average_len=32768, max_value=10)", V,
         r"op SparseLengthsFill #0: argument 'average_len' must be >= 0 with batch_size \* average_len at most "
         r"2147483647 \(the int32 lengths must hold it\), got batch_size 65536, average_len 32768"),
    Case("sparse-lengths-fill-max-value", "ops: ScaleBlobs & SparseLengthsFill", "SparseLengthsFill(max_value=0)",
         "run_op('SparseLengthsFill', [], ['v', 'l'], batch_size=4, average_len=2, max_value=0)", V,
         r"op SparseLengthsFill #0: argument 'max_value' must be in \[1, 2\^31\] \(values are int32 in "
         r"\[0, max_value\)\), got 0"),
    # ---------------------------------------------------------- LastNWindowCollector (csrc/ops/collect.c)
    Case("last-n-cursor", "ops: collect", "LastNWindowCollector(buf (2,3), next 0, data (1,3)), num_to_collect=4",
         """
         feed(buf=f32(2, 3), nx=np.array(0, np.int32), d=f32(1, 3))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd'], ['buf', 'nx'], num_to_collect=4)
         """, V, r"op LastNWindowCollector #0: input 1 blob 'nx' \(NEXT, the cursor\) is 0, but input 0 blob "
                 r"'buf' \(2, 3\) float32 \(LAST_N, the buffer\) with num_to_collect = 4 needs it to equal its row "
                 r"count \(a buffer that is not full fills in order\)",
         after="""
         feed(nx=np.array(2, np.int32))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd'], ['buf', 'nx'], num_to_collect=4)
         assert workspace.FetchBlob('buf').shape == (3, 3)
         """, note="Caffe2 checked only cursor < rows, then left rows unwritten"),
    Case("last-n-row-shape", "ops: collect", "LastNWindowCollector(buf (2,3), next 2, data (1,4))",
         """
         feed(buf=f32(2, 3), nx=np.array(2, np.int32), d=f32(1, 4))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd'], ['buf', 'nx'], num_to_collect=4)
         """, V, r"op LastNWindowCollector #0: input 0 blob 'buf' \(2, 3\) float32 \(LAST_N, the buffer\) must "
                 r"have rows shaped as those of input 2 blob 'd' \(1, 4\) float32 \(DATA\)"),
    Case("last-n-dtype", "ops: collect", "LastNWindowCollector(buf (2,3) float32, next 2, data (1,3) int32)",
         """
         feed(buf=f32(2, 3), nx=np.array(2, np.int32), d=np.zeros((1, 3), np.int32))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd'], ['buf', 'nx'], num_to_collect=4)
         """, T_, r"op LastNWindowCollector #0: input 0 blob 'buf' \(2, 3\) float32 \(LAST_N, the buffer\) and "
                  r"input 2 blob 'd' \(1, 3\) int32 \(DATA\) must have the same dtype",
         note="Caffe2 threw the buffer away and started a new one"),
    Case("last-n-num-to-collect", "ops: collect", "LastNWindowCollector without num_to_collect",
         """
         feed(buf=f32(0), nx=np.array(0, np.int32), d=f32(1, 3))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd'], ['buf', 'nx'])
         """, V, r"op LastNWindowCollector #0: argument 'num_to_collect' must be in \[1, 2147483647\], got -1"),
    Case("last-n-not-in-place", "ops: collect", "LastNWindowCollector(buf, next, data) -> (buf2, next)",
         """
         feed(buf=f32(0), nx=np.array(0, np.int32), d=f32(1, 3))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd'], ['buf2', 'nx'], num_to_collect=2)
         """, V, r"op LastNWindowCollector #0: input 0 blob 'buf' and output 0 blob 'buf2' must be the same blob "
                 r"\(LAST_N is updated in place\)"),
    Case("last-n-num-visited-without-output", "ops: collect",
         "LastNWindowCollector(buf, next, data, mutex, num_visited) -> (buf, next)",
         """
         run_op('CreateMutex', [], ['m'])
         feed(buf=f32(0), nx=np.array(0, np.int32), d=f32(1, 3), nv=np.zeros(1, np.int32))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd', 'm', 'nv'], ['buf', 'nx'], num_to_collect=2)
         """, V, r"op LastNWindowCollector #0: NUM_VISITED needs both input 4 and output 2 \(the same blob\): got 5 "
                 r"inputs and 2 outputs", note="Caffe2 ignored the fifth input"),
    Case("last-n-num-visited-overflow", "ops: collect", "LastNWindowCollector with num_visited at INT32_MAX",
         """
         run_op('CreateMutex', [], ['m'])
         feed(buf=f32(1, 3), nx=np.array(1, np.int32), d=f32(1, 3), nv=np.array([2 ** 31 - 1], np.int32))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd', 'm', 'nv'], ['buf', 'nx', 'nv'], num_to_collect=2)
         """, V, r"op LastNWindowCollector #0: input 4 blob 'nv' \(NUM_VISITED\) 2147483647 \+ 1 rows of input 2 "
                 r"blob 'd' \(1, 3\) float32 overflows int32",
         after="assert workspace.FetchBlob('buf').shape == (1, 3) and workspace.FetchBlob('nx') == 1",
         note="Caffe2 counted in int64; nothing is written"),
    Case("last-n-not-a-mutex", "ops: collect", "LastNWindowCollector(buf, next, data, m) where m holds a tensor",
         """
         feed(buf=f32(0), nx=np.array(0, np.int32), d=f32(1, 3), m=f32(1))
         run_op('LastNWindowCollector', ['buf', 'nx', 'd', 'm'], ['buf', 'nx'], num_to_collect=2)
         """, T_, r"op LastNWindowCollector #0: input 3 blob 'm' must be a Mutex \(CreateMutex's output\), but it "
                  r"holds a tensor \(1,\) float32", note="Caffe2 failed on the blob's type"),
    # ---------------------------------------------------------- IsMemberOf, AccumulateHistogram (ops/member_hist.c)
    Case("is-member-of-float", "ops: member & histogram", "IsMemberOf(x float32, value=[1])",
         "feed(x=f32(2)); run_op('IsMemberOf', ['x'], ['y'], value=[1])",
         T_, r"op IsMemberOf #0: input 0 blob 'x' must be int32, got \(2,\) float32",
         after="feed(x=np.array([1, 2], np.int32)); run_op('IsMemberOf', ['x'], ['y'], value=[1])",
         note="Caffe2 took int32, int64, bool and string; bool and int64 are int32 here"),
    Case("is-member-of-value-range", "ops: member & histogram", "IsMemberOf(x, value=[1, 2**31])",
         "feed(x=np.array([1, 2], np.int32)); run_op('IsMemberOf', ['x'], ['y'], value=[1, 2 ** 31])",
         V, r"op IsMemberOf #0: argument 'value' holds 2147483648 at position 1, outside int32's range"),
    Case("is-member-of-string-dtype", "ops: member & histogram", "IsMemberOf(x, value=[1], dtype=STRING)",
         "feed(x=np.array([1, 2], np.int32)); run_op('IsMemberOf', ['x'], ['y'], value=[1], dtype=4)",
         V, r"op IsMemberOf #0: argument 'dtype' is STRING \(4\): there are no string blobs here"),
    Case("is-member-of-bool-value", "ops: member & histogram", "IsMemberOf(x, value=[1, 2], dtype=BOOL)",
         "feed(x=np.array([1, 0], np.int32)); run_op('IsMemberOf', ['x'], ['y'], value=[1, 2], dtype=5)",
         V, r"op IsMemberOf #0: argument 'value' holds 2 at position 1, but with 'dtype' BOOL \(5\) the values "
            r"must be 0 or 1",
         note="Caffe2 cast each value to bool, so 2 meant true"),
    Case("inference-lstm-input-count", "ops: InferenceLSTM", "InferenceLSTM(x, hx, cx, w_ih, w_hh, b_ih): one bias",
         """
         feed(x=f32(3, 2, 4), hx=f32(1, 2, 5), cx=f32(1, 2, 5), wi=f32(20, 4), wh=f32(20, 5), bi=f32(20))
         run_op('InferenceLSTM', ['x', 'hx', 'cx', 'wi', 'wh', 'bi'], ['y', 'hy', 'cy'])
         """, V, r"op InferenceLSTM #0: 6 inputs, expected 7: input, hx, cx, then 4 weights \(w_ih, w_hh, b_ih, "
                 r"b_hh\) for each of num_layers=1 x 1 direction",
         after="feed(bh=f32(20)); run_op('InferenceLSTM', ['x', 'hx', 'cx', 'wi', 'wh', 'bi', 'bh'], "
               "['y', 'hy', 'cy'])"),
    Case("inference-lstm-weight-shape", "ops: InferenceLSTM",
         "InferenceLSTM, bidirectional: the reverse direction's w_hh (20, 4) for hidden 5",
         """
         feed(x=f32(3, 2, 4), hx=f32(2, 2, 5), cx=f32(2, 2, 5), wi=f32(20, 4), wh=f32(20, 5), wh4=f32(20, 4))
         run_op('InferenceLSTM', ['x', 'hx', 'cx', 'wi', 'wh', 'wi', 'wh4'], ['y', 'hy', 'cy'], bidirectional=1,
                has_biases=0)
         """, V, r"op InferenceLSTM #0: input 6 blob 'wh4' \(w_hh of layer 0, reverse direction\) has shape "
                 r"\(20, 4\) float32, expected \(20, 5\)"),
    Case("inference-lstm-states", "ops: InferenceLSTM", "InferenceLSTM with hx of another batch size",
         """
         feed(x=f32(3, 2, 4), hx=f32(1, 3, 5), cx=f32(1, 3, 5), wi=f32(20, 4), wh=f32(20, 5))
         run_op('InferenceLSTM', ['x', 'hx', 'cx', 'wi', 'wh'], ['y', 'hy', 'cy'], has_biases=0)
         """, V, r"op InferenceLSTM #0: input 1 blob 'hx' \(hx\) must be \(num_layers \* directions, N, H\) = "
                 r"\(1, 2, H\) for input 'x' \(3, 2, 4\) float32, got \(1, 3, 5\) float32"),
    Case("inference-lstm-bool-arg", "ops: InferenceLSTM", "InferenceLSTM(..., batch_first=2)",
         """
         feed(x=f32(3, 2, 4), hx=f32(1, 2, 5), cx=f32(1, 2, 5), wi=f32(20, 4), wh=f32(20, 5))
         run_op('InferenceLSTM', ['x', 'hx', 'cx', 'wi', 'wh'], ['y', 'hy', 'cy'], has_biases=0, batch_first=2)
         """, V, r"op InferenceLSTM #0: argument 'batch_first' must be 0 or 1, got 2"),
    Case("histogram-nan", "ops: member & histogram", "AccumulateHistogram(x [0.5, nan])",
         """
         n = core.Net('h'); n.AccumulateHistogram(['x'], ['cur', 'acc'], num_buckets=2)
         feed(x=np.array([0.5, 0.25], np.float32)); workspace.CreateNet(n); workspace.RunNet(n)
         feed(x=np.array([0.5, np.nan], np.float32)); workspace.RunNet(n)
         """, V, r"op AccumulateHistogram #0: input 0 blob 'x' \(2,\) float32 holds NaN at flat position 1; NaN "
                 r"has no bin",
         after="""
         feed(x=np.array([0.75], np.float32)); workspace.RunNet(n)
         assert workspace.FetchBlob('acc').tolist() == [0, 1, 2, 0]
         """, note="Caffe2 cast NaN to int (undefined) and wrote out of bounds; the accumulated counts are kept"),
    Case("histogram-bounds", "ops: member & histogram", "AccumulateHistogram(x, lower_bound=1, upper_bound=1)",
         "feed(x=f32(3)); run_op('AccumulateHistogram', ['x'], ['c', 'a'], lower_bound=1.0, upper_bound=1.0)",
         V, r"op AccumulateHistogram #0: arguments 'lower_bound' \(1\) and 'upper_bound' \(1\) must be finite "
            r"float32 values with lower_bound < upper_bound", note="Caffe2 did not check the bounds"),
    Case("histogram-num-buckets", "ops: member & histogram", "AccumulateHistogram(x, num_buckets=0)",
         "feed(x=f32(3)); run_op('AccumulateHistogram', ['x'], ['c', 'a'], num_buckets=0)",
         V, r"op AccumulateHistogram #0: argument 'num_buckets' must be in \[1, 2147483645\], got 0"),
    Case("histogram-bucket-width", "ops: member & histogram",
         "AccumulateHistogram(x, lower_bound=-3e38, upper_bound=3e38)",
         "feed(x=f32(3)); run_op('AccumulateHistogram', ['x'], ['c', 'a'], lower_bound=-3e38, upper_bound=3e38)",
         V, r"op AccumulateHistogram #0: the bucket width \(upper_bound - lower_bound\) / num_buckets = "
            r"\(3e\+38 - -3e\+38\) / 1 is inf in float32; it must be positive and finite"),
    # ---------------------------------------------------------- numpy-style broadcasting, And/Or/Xor/Not
    Case("bcast-no-broadcast", "ops: broadcasting", "Add([a (2,3), b (4,3,1)]) without broadcast=1",
         "feed(a=f32(2, 3), b=f32(4, 3, 1)); run_op('Add', ['a', 'b'], ['c'])", V,
         r"op Add #0: input 0 blob 'a' of shape \(2, 3\) float32 and input 1 blob 'b' of shape \(4, 3, 1\) "
         r"float32 do not broadcast \(numpy-style, dims aligned from the last\): dim 0 of 'a' is 2 but "
         r"dim 1 of 'b' is 3"),
    Case("bcast-in-place-grows", "ops: broadcasting", "Mul([a (3,), b (2,1)]) -> a",
         "feed(a=f32(3), b=f32(2, 1)); run_op('Mul', ['a', 'b'], ['a'])", V,
         r"op Mul #0: output blob 'a' is input 0 of shape \(3,\) float32, but the result has the broadcast "
         r"shape \(2, 3\) \(in place needs the result to have that input's shape\)",
         note="Caffe2 refuses it too; in place is fine when the result has that input's shape"),
    Case("bcast-int-div-by-zero", "ops: broadcasting", "Div([a int32 (2,3), b int32 [[1], [0]]])",
         "feed(a=np.ones((2, 3), np.int32), b=np.array([[1], [0]], np.int32)); "
         "run_op('Div', ['a', 'b'], ['c'])",
         V, r"op Div #0: integer division by zero: input 1 blob 'b' \(2, 1\) int32 is 0 at flat position 1 "
            r"\(dividing element 3 of input 0 blob 'a' \(2, 3\) int32\)"),
    Case("bcast-grad-dc-shape", "ops: broadcasting", "AddGradient([dc (3,5), a (3,1), b (4,)])",
         "feed(dc=f32(3, 5), a=f32(3, 1), b=f32(4)); "
         "run_op('AddGradient', ['dc', 'a', 'b'], ['da', 'db'])", V,
         r"op AddGradient #0: input 0 blob 'dc' of shape \(3, 5\) float32 must have the shape \(3, 4\) "
         r"of the forward result \(input 1 blob 'a' \(3, 1\) float32 with input 2 blob 'b' \(4,\) "
         r"float32\)"),
    Case("bcast-divgrad-da-over-b", "ops: broadcasting", "DivGradient([dc, a, b, c]) -> [b, db]",
         "feed(dc=f32(3), a=f32(3), b=f32(3), c=f32(3)); "
         "run_op('DivGradient', ['dc', 'a', 'b', 'c'], ['b', 'db'])",
         V, r"op DivGradient #0: output 0 blob 'b' \(dA\) is input 2, which is not dC \(input 0 'dc'\): "
            r"only dC's blob may take dA"),
    Case("logical-float-input", "ops: broadcasting", "And([f float32 (3,), i int32 (3,)])",
         "feed(f=f32(3), i=np.ones(3, np.int32)); run_op('And', ['f', 'i'], ['c'])", T_,
         r"op And #0: input 0 blob 'f' \(3,\) float32 must be int32 \(bool as 0 / 1; nonzero is true\)$"),
    Case("logical-no-broadcast", "ops: broadcasting", "Xor([i int32 (2,3), j int32 (4,)])",
         "feed(i=np.ones((2, 3), np.int32), j=np.ones(4, np.int32)); run_op('Xor', ['i', 'j'], ['c'])", V,
         r"op Xor #0: input 0 blob 'i' of shape \(2, 3\) int32 and input 1 blob 'j' of shape \(4,\) int32 do "
         r"not broadcast"),
    Case("bitwise-float-input", "ops: broadcasting", "BitwiseAnd([f float32 (3,), i int32 (3,)])",
         "feed(f=f32(3), i=np.ones(3, np.int32)); run_op('BitwiseAnd', ['f', 'i'], ['c'])", T_,
         r"op BitwiseAnd #0: input 0 blob 'f' \(3,\) float32 must be int32 \(the bitwise ops take integers\)$"),
    Case("bitwise-no-broadcast", "ops: broadcasting", "BitwiseXor([i int32 (2,3), j int32 (4,)])",
         "feed(i=np.ones((2, 3), np.int32), j=np.ones(4, np.int32)); run_op('BitwiseXor', ['i', 'j'], ['c'])", V,
         r"op BitwiseXor #0: input 0 blob 'i' of shape \(2, 3\) int32 and input 1 blob 'j' of shape \(4,\) int32 "
         r"do not broadcast"),
    Case("not-float-input", "ops: broadcasting", "Not([f float32 (2,)])",
         "feed(f=f32(2)); run_op('Not', ['f'], ['y'])", T_,
         r"op Not #0: input 0 blob 'f' \(2,\) float32 must be int32 \(bool as 0 / 1; nonzero is true\)$"),
    # ---------------------------------------------------------------- lengths reductions (lengths_reduce.c)
    Case("lengths-negative", "ops: lengths reductions", "LengthsSum([d (4,2), lengths [3, -1, 2]])",
         "feed(d=f32(4, 2), l=np.array([3, -1, 2], np.int32)); run_op('LengthsSum', ['d', 'l'], 'o')", V,
         r"op LengthsSum #0: input 1 blob 'l' \(lengths\): length -1 at position 1 is negative",
         after="feed(l=np.array([3, 0, 1], np.int32)); run_op('LengthsSum', ['d', 'l'], 'o')",
         note="checked before anything is written; every Lengths*/SparseLengths* op the same"),
    Case("lengths-sum-mismatch", "ops: lengths reductions", "LengthsMean([d (4,2), lengths [3, 2]])",
         "feed(d=f32(4, 2), l=np.array([3, 2], np.int32)); run_op('LengthsMean', ['d', 'l'], 'o')", V,
         r"op LengthsMean #0: input 1 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 5, "
         r"but must sum to 4 \(the first dim of input 0 blob 'd' of shape \(4, 2\) float32\)",
         note="SparseLengths*: the lengths must sum to len(INDICES)"),
    Case("sparse-lengths-index-range", "ops: lengths reductions",
         "SparseLengthsSum([d (4,2), indices [0, 4], lengths [2]])",
         "feed(d=f32(4, 2), i=np.array([0, 4], np.int32), l=np.array([2], np.int32)); "
         "run_op('SparseLengthsSum', ['d', 'i', 'l'], 'o')", I,
         r"op SparseLengthsSum #0: input 1 blob 'i': index 4 at position 1 is out of range \[0, 4\) "
         r"\(the rows of input 0 blob 'd' of shape \(4, 2\) float32\)",
         note="negative indices the same; Caffe2 enforced the range too"),
    Case("lengths-weights-count", "ops: lengths reductions",
         "LengthsWeightedSum([d (4,2), scalars (3,), lengths [4]])",
         "feed(d=f32(4, 2), w=f32(3), l=np.array([4], np.int32)); "
         "run_op('LengthsWeightedSum', ['d', 'w', 'l'], 'o')", V,
         r"op LengthsWeightedSum #0: input 1 blob 'w' \(scalars\) of shape \(3,\) float32 "
         r"must hold one weight per row: 4 \(the first dim of input 0 blob 'd' of shape \(4, 2\) float32\)",
         note="checked already at CreateNet"),
    Case("lengths-gradient-rows", "ops: lengths reductions", "LengthsSumGradient([dout (2,3), lengths (3,)])",
         "feed(g=f32(2, 3), l=np.array([1, 1, 1], np.int32)); run_op('LengthsSumGradient', ['g', 'l'], 'dx')",
         V, r"op LengthsSumGradient #0: input 0 blob 'g' \(the output gradient\) of shape \(2, 3\) "
         r"float32 must have one row per segment: 3 \(input 1 blob 'l' \(lengths\) of shape \(3,\) int32\)"),
    Case("indices-in-gradient-rows", "ops: lengths reductions",
         "SparseLengthsIndicesInGradientWeightedSumGradient([w (3,), dout (2,3), lengths [2, 1], "
         "indices (2,)])",
         "feed(w=f32(3), g=f32(2, 3), l=np.array([2, 1], np.int32), i=np.zeros(2, np.int32)); "
         "run_op('SparseLengthsIndicesInGradientWeightedSumGradient', ['w', 'g', 'l', 'i'], 'dx')", V,
         r"op SparseLengthsIndicesInGradientWeightedSumGradient #0: input 3 blob 'i' \(indices\) of shape "
         r"\(2,\) int32 must have one row per row of the gradient: 3 \(the first dim of input 0 blob 'w' of "
         r"shape \(3,\) float32\)",
         note="the last input of the *IndicesInGradient* ops only gives the row count (unused on CPU, as "
              "Caffe2)"),
    Case("indices-in-gradient-indices-dtype", "ops: lengths reductions",
         "SparseLengthsIndicesInGradientSumGradient([dout, lengths, indices float32])",
         "feed(g=f32(2, 3), l=np.array([2, 1], np.int32), i=f32(3)); "
         "run_op('SparseLengthsIndicesInGradientSumGradient', ['g', 'l', 'i'], 'dx')", T_,
         r"op SparseLengthsIndicesInGradientSumGradient #0: input 2 blob 'i' must be int32, got \(3,\) "
         r"float32",
         note="checked already at CreateNet"),
    # ---------------------------------------------------------------- lengths ops (PackSegments, ...)
    Case("pack-segments-lengths-sum", "ops: lengths", "PackSegments([lengths [2, 2], x (3,2)])",
         "feed(l=np.array([2, 2], np.int32), x=f32(3, 2)); run_op('PackSegments', ['l', 'x'], 'p')", V,
         r"op PackSegments #0: input 0 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 4, but input 1 "
         r"blob "
         r"'x' of shape \(3, 2\) float32 has 3 rows \(dim 0\)",
         note="every length is checked before anything is written; Caffe2 read past the data"),
    Case("pack-segments-max-length", "ops: lengths", "PackSegments([lengths [1, 3], x (4,)], max_length=2)",
         "feed(l=np.array([1, 3], np.int32), x=f32(4)); "
         "run_op('PackSegments', ['l', 'x'], 'p', max_length=2)",
         V, r"op PackSegments #0: input 0 blob 'l' \(lengths\) holds 3 at index 1, above 2 \(argument "
            r"max_length\)",
         after="feed(l=np.array([2, 2], np.int32)); run_op('PackSegments', ['l', 'x'], 'p', max_length=2)",
         note="Caffe2 truncated the segment (its gradient then had the wrong shape)"),
    Case("pack-segments-pad-minf-int32", "ops: lengths", "PackSegments([lengths, x int32], pad_minf=1)",
         "feed(l=np.array([1], np.int32), x=np.ones(1, np.int32)); "
         "run_op('PackSegments', ['l', 'x'], 'p', pad_minf=1)", V,
         r"op PackSegments #0: argument pad_minf=1 needs float32 data, input 1 blob 'x' \(tensor\) is \(1,\) "
         r"int32", note="int32 data is padded with 0 (Caffe2 left it uninitialised)"),
    Case("unpack-segments-length-above-t", "ops: lengths", "UnpackSegments([lengths [1, 4], packed (2,3,2)])",
         "feed(l=np.array([1, 4], np.int32), p=f32(2, 3, 2)); run_op('UnpackSegments', ['l', 'p'], 'u')", V,
         r"op UnpackSegments #0: input 0 blob 'l' \(lengths\) holds 4 at index 1, above 3 \(T = dim 1 of "
         r"input "
         r"1 \(packed\)\)", note="Caffe2 read past packed"),
    Case("add-padding-padding-size", "ops: lengths", "AddPadding([x (3,2), lengths, start_padding (3,)])",
         "feed(x=f32(3, 2), l=np.array([3], np.int32), s=f32(3)); run_op('AddPadding', ['x', 'l', 's'], 'y')",
         V, r"op AddPadding #0: input 2 blob 's' \(start_padding\) must hold 2 elements, one row of input 0 "
            r"blob 'x' of shape \(3, 2\) float32, got \(3,\) float32",
         note="checked already at CreateNet when the inputs hold tensors"),
    Case("remove-padding-short-length", "ops: lengths", "RemovePadding([x (5,2), lengths [3, 2]], "
         "padding_width=1, end_padding_width=2)",
         "feed(x=f32(5, 2), l=np.array([3, 2], np.int32)); "
         "run_op('RemovePadding', ['x', 'l'], 'y', padding_width=1, end_padding_width=2)", V,
         r"op RemovePadding #0: input 1 blob 'l' \(lengths\) holds 2 at index 1, below 3 \(padding_width \+ "
         r"end_padding_width\)", note="Caffe2 copied a negative count; GatherPadding checks the same"),
    Case("segment-ids-to-lengths-unsorted", "ops: lengths", "SegmentIdsToLengths(ids [0, 2, 1])",
         "feed(i=np.array([0, 2, 1], np.int32)); run_op('SegmentIdsToLengths', ['i'], 'l')", V,
         r"op SegmentIdsToLengths #0: input 0 blob 'i' \(segment_ids\) must be sorted: 1 at index 2 follows "
         r"2",
         note="negative ids are refused too"),
    Case("segment-ids-to-ranges-negative-id", "ops: lengths", "SegmentIdsToRanges(ids [-2, -2, 0])",
         "feed(i=np.array([-2, -2, 0], np.int32)); run_op('SegmentIdsToRanges', ['i'], 'r')", V,
         r"op SegmentIdsToRanges #0: input 0 blob 'i' \(segment_ids\) holds a negative id -2 at index 0",
         note="Caffe2 wrote outside its output for a negative first id; unsorted ids and more segments than "
              "data_to_infer_dim's rows are refused too (as Caffe2)"),
    Case("lengths-to-ranges-overflow", "ops: lengths", "LengthsToRanges(lengths [2147483647, 1])",
         "feed(l=np.array([2147483647, 1], np.int32)); run_op('LengthsToRanges', ['l'], 'r')", V,
         r"op LengthsToRanges #0: input 0 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 2147483648, "
         r"above "
         r"2147483647 \(the offsets are int32\)"),
    Case("lengths-to-offsets-negative", "ops: lengths", "LengthsToOffsets(lengths [2, -1])",
         "feed(l=np.array([2, -1], np.int32)); "
         "run_op('LengthsToOffsets', ['l'], 'o', include_last_offset=1)", V,
         r"op LengthsToOffsets #0: input 0 blob 'l' \(lengths\) holds -1 at index 1, below 0",
         note="Caffe2 did not check; an offset above 2^31 - 1 is refused too"),
    Case("sequence-mask-window-inputs", "ops: lengths", "SequenceMask([x], mode='window')",
         "feed(x=f32(2, 3)); run_op('SequenceMask', ['x'], 'y', mode='window')", V,
         r"op SequenceMask #0: mode 'window' takes 2 input\(s\) \(input, window_centers\), got 1",
         note="the triangular modes take exactly 1 input (Caffe2 ignored a second one)"),
    Case("sequence-mask-batch-axis", "ops: lengths", "SequenceMask([x (2,3), lengths], batch=1)",
         "feed(x=f32(2, 3), l=np.ones(2, np.int32)); run_op('SequenceMask', ['x', 'l'], 'y', batch=1)", V,
         r"op SequenceMask #0: argument batch=1 must name a dim before axis=1 of input 0 blob 'x' of shape "
         r"\(2, 3\) float32 \(canonical batch in \[0, 1\)\)"),
    # ---------------------------------------------------------------- unary2.c ops
    Case("log1p-gradient-shape", "ops: unary2", "Log1pGradient([x (2,3), dy (3,2)])",
         "feed(x=f32(2, 3), dy=f32(3, 2)); run_op('Log1pGradient', ['x', 'dy'], 'dx')", V,
         r"op Log1pGradient #0: input 1 blob 'dy' of shape \(3, 2\) float32 must have the shape of input 0 "
         r"blob 'x' \(2, 3\) float32"),
    Case("replace-nan-int32", "ops: unary2", "ReplaceNaN(x int32, value=0)",
         "feed(x=np.ones(3, np.int32)); run_op('ReplaceNaN', 'x', 'y')", T_,
         r"op ReplaceNaN #0: input 0 blob 'x' must be float32, got \(3,\) int32",
         note="Caffe2 took float and double; int32 holds no NaN"),
    Case("selu-gradient-bad-args", "ops: unary2", "SeluGradient([y, dy], alpha=-1)",
         "feed(y=f32(2, 3)); run_op('SeluGradient', ['y', 'y'], 'dx', alpha=-1.0)", V,
         r"op SeluGradient #0: arguments alpha -1 and scale 1.0507: the gradient reads Y only, "
         r"which tells the sign of X only when scale > 0 and alpha >= 0",
         after="run_op('SeluGradient', ['y', 'y'], 'dx')",
         note="Caffe2 gave a wrong gradient for X < 0; the forward Selu takes any alpha and scale"),
    Case("selu-gradient-size", "ops: unary2", "SeluGradient([y (2,3), dy (5,)])",
         "feed(y=f32(2, 3), dy=f32(5)); run_op('SeluGradient', ['y', 'dy'], 'dx')", V,
         r"op SeluGradient #0: input 1 blob 'dy' of shape \(5,\) float32 must have as many elements as "
         r"input 0 blob 'y' \(2, 3\) float32",
         after="feed(dy=f32(6)); run_op('SeluGradient', ['y', 'dy'], 'dx')",
         note="as Caffe2, dY may have any shape of Y's element count (dX gets Y's shape)"),
    Case("asin-gradient-shape", "ops: unary2", "AsinGradient([x (2,3), dy (3,2)])",
         "feed(x=f32(2, 3), dy=f32(3, 2)); run_op('AsinGradient', ['x', 'dy'], 'dx')", V,
         r"op AsinGradient #0: input 1 blob 'dy' of shape \(3, 2\) float32 must have the shape of input 0 "
         r"blob 'x' \(2, 3\) float32",
         note="Tan, Acos, Atan and their gradients the same (float32, one shape)"),
    Case("tan-in-place", "ops: unary2", "net.Tan('x', 'x')",
         "feed(x=f32(2, 3)); run_op('Tan', 'x', 'x')", V,
         r"op Tan #0: input 0 and output 0 are the same blob 'x'",
         note="its gradient reads X; Asin, Acos, Atan the same"),
    Case("cube-in-place", "ops: unary2", "net.Cube('x', 'x')",
         "feed(x=f32(2, 3)); run_op('Cube', 'x', 'x')", V,
         r"op Cube #0: input 0 and output 0 are the same blob 'x'",
         note="as Caffe2's schema; Sin, Cos, Swish the same (their gradients read X)"),
    Case("where-float-condition", "ops: unary2", "Where([c float32 (2,3), x, y])",
         "feed(c=f32(2, 3), x=f32(2, 3)); run_op('Where', ['c', 'x', 'x'], 'z')", T_,
         r"op Where #0: input 0 blob 'c' \(2, 3\) float32 must be int32 \(bool as 0 / 1; nonzero is true\)$"),
    Case("where-no-broadcast", "ops: unary2", "Where([c int32 (2,3), x (2,3), y (2,2)])",
         "feed(c=np.ones((2, 3), np.int32), x=f32(2, 3), y=f32(2, 2)); run_op('Where', ['c', 'x', 'y'], 'z')",
         V, r"op Where #0: input 0 blob 'c' of shape \(2, 3\) int32, input 1 blob 'x' of shape \(2, 3\) "
            r"float32 and input 2 blob 'y' of shape \(2, 2\) float32 do not broadcast",
         note="numpy-style broadcasting of the three (Caffe2: one shape, or broadcast_on_rows)"),
    Case("where-dtype-mismatch", "ops: unary2", "Where([c, x float32 (2,3), y int32 (2,3)])",
         "feed(c=np.ones((2, 3), np.int32), x=f32(2, 3), y=np.ones((2, 3), np.int32))\n"
         "run_op('Where', ['c', 'x', 'y'], 'z')", T_,
         r"op Where #0: input 2 blob 'y' must have the dtype of input 1 blob 'x' \(2, 3\) float32, "
         r"got \(2, 3\) int32"),
    Case("where-gradient", "ops: unary2", "net.Where([c, x, y]); AddGradientOperators",
         """
         n = core.Net('wh'); z = n.Where(['c', 'x', 'y'], 'z'); l = n.SumElements(z, 'l')
         n.AddGradientOperators([l])
         """, V, r"Where has no gradient op \(Caffe2 neither\): output 'z' needs a gradient",
         note="Caffe2 gave X and Y no gradient, silently"),
    Case("expand-negative-shape", "ops: unary2", "Expand([x (2,3), shape [4, -1]])",
         "feed(x=f32(2, 3), s=np.array([4, -1], np.int32)); run_op('Expand', ['x', 's'], 'y')", V,
         r"op Expand #0: input 0 blob 'x' of shape \(2, 3\) float32 does not broadcast to the shape in "
         r"input 1 blob 's' \(numpy-style, dims aligned from the last\): dim 0 of 'x' is 2 but entry 0 "
         r"of the shape is 4",
         after="feed(s=np.array([2, -1], np.int32)); run_op('Expand', ['x', 's'], 'y')",
         note="-1 (any negative entry) keeps X's dim, as Caffe2's; the other entries must broadcast"),
    Case("expand-no-broadcast", "ops: unary2", "Expand([x (2,3), shape [4]])",
         "feed(x=f32(2, 3), s=np.array([4], np.int32)); run_op('Expand', ['x', 's'], 'y')", V,
         r"op Expand #0: input 0 blob 'x' of shape \(2, 3\) float32 does not broadcast to the shape in "
         r"input 1 blob 's' \(numpy-style, dims aligned from the last\): dim 1 of 'x' is 3 but entry 0 "
         r"of the shape is 4",
         note="a dim of 1 against 0 gives 0, as NumPy (Caffe2 took the max and read past X's data)"),
    Case("expand-gradient-shapes", "ops: unary2", "ExpandGradient([dy (2,3), x (2,2)])",
         "feed(dy=f32(2, 3), x=f32(2, 2)); run_op('ExpandGradient', ['dy', 'x'], 'dx')", V,
         r"op ExpandGradient #0: input 0 blob 'dy' of shape \(2, 3\) float32 is not an expansion of input 1 "
         r"blob 'x' of shape \(2, 2\) float32"),
    Case("sinh-int", "ops: unary2", "Sinh([x int32])",
         "feed(x=np.arange(4, dtype=np.int32)); run_op('Sinh', 'x', 'y')", T_,
         r"op Sinh #0: input 0 blob 'x' must be float32, got \(4,\) int32",
         note="Cosh, Erf, Gelu, ThresholdedRelu, ReluN the same (float32 only, as Caffe2's CPU ops)"),
    Case("sinh-gradient-shape", "ops: unary2", "SinhGradient([dy (2,3), x (3,2)])",
         "feed(dy=f32(2, 3), x=f32(3, 2)); run_op('SinhGradient', ['dy', 'x'], 'dx')", V,
         r"op SinhGradient #0: input 1 blob 'x' of shape \(3, 2\) float32 must have the shape of input 0 "
         r"blob 'dy' \(2, 3\) float32",
         note="CoshGradient, ErfGradient, GeluGradient, ThresholdedReluGradient, ReluNGradient the same"),
    Case("erf-in-place", "ops: unary2", "net.Erf('x', 'x')",
         "feed(x=f32(2, 3)); run_op('Erf', 'x', 'x')", V,
         r"op Erf #0: input 0 and output 0 are the same blob 'x'",
         note="its gradient reads X, as Sinh's, Cosh's and Gelu's (refused the same)"),
    Case("thresholded-relu-nan-alpha", "ops: unary2", "ThresholdedRelu(x, alpha=nan)",
         "feed(x=f32(2, 3)); run_op('ThresholdedRelu', 'x', 'y', alpha=float('nan'))", V,
         r"op ThresholdedRelu #0: argument 'alpha' is NaN"),
    Case("thresholded-relu-gradient-negative-alpha", "ops: unary2",
         "ThresholdedReluGradient([y, dy], alpha=-1)",
         "feed(y=f32(2, 3)); run_op('ThresholdedReluGradient', ['y', 'y'], 'dx', alpha=-1.0)", V,
         r"op ThresholdedReluGradient #0: argument 'alpha' is -1: the gradient reads Y only, which does not "
         r"tell X = 0 \(passed\) from X <= alpha \(zeroed\) when alpha < 0",
         note="Caffe2 gave -dY where Y < 0; the forward ThresholdedRelu takes any alpha"),
    Case("glu-odd-dim", "ops: unary2", "Glu(x (2,3), dim=1)",
         "feed(x=f32(2, 3)); run_op('Glu', 'x', 'y', dim=1)", V,
         r"op Glu #0: argument dim=1 must name a dim of input 0 blob 'x' of shape \(2, 3\) float32 "
         r"\(in \[-2, 2\)\) of even size",
         after="run_op('Glu', 'x', 'y', dim=0)", note="an out-of-range dim the same"),
    Case("glu-gradient", "ops: unary2", "net.Glu(x); AddGradientOperators",
         """
         n = core.Net('gl'); y = n.Glu('x', 'y'); l = n.SumElements(y, 'l')
         n.AddGradientOperators([l])
         """, V, r"Glu has no gradient op \(Caffe2 neither\): output 'y' needs a gradient, but input 'x' "
                 r"would get none",
         note="Caffe2 had no GluGradient and no gradient maker"),
    # ---------------------------------------------------------------- unary.c: ReluN, NegateGradient
    Case("relu-n-bad-n", "ops: unary & reduce", "ReluN(x, n=0)",
         "feed(x=f32(2, 3)); run_op('ReluN', 'x', 'y', n=0.0)", V,
         r"op ReluN #0: argument 'n' \(0\) must be > 0",
         note="as Caffe2's CAFFE_ENFORCE_GT(n, 0); NaN the same; ReluNGradient the same"),
    Case("negate-gradient-no-tensor", "ops: unary & reduce", "NegateGradient([u (no tensor)])",
         "workspace.CreateBlob('u'); run_op('NegateGradient', 'u', 'y')", V,
         r"op NegateGradient #0: input 0 blob 'u' holds no tensor \(was it fed or computed\?\)",
         note="any dtype is copied, as StopGradient"),
    # ---------------------------------------------------------------- activation.c: PRelu, SquareRootDivide
    Case("prelu-bad-order", "ops: activation", "PRelu([x, w], order='NCWH')",
         "feed(x=f32(2, 3), w=f32(3)); run_op('PRelu', ['x', 'w'], 'y', order='NCWH')", V,
         r"op PRelu #0: argument order='NCWH' must be 'NCHW' or 'NHWC'",
         note="Caffe2 took any order other than NCHW as NHWC"),
    Case("prelu-slope-count", "ops: activation", "PRelu([x (2,3,4), w (4,)])",
         "feed(x=f32(2, 3, 4), w=f32(4)); run_op('PRelu', ['x', 'w'], 'y')", V,
         r"op PRelu #0: input 1 blob 'w' \(4,\) float32 must have 1 entry \(shared\) or one per channel of "
         r"input 0 blob 'x' of shape \(2, 3, 4\) float32 \(order NCHW: channels are its second dim\)",
         after="run_op('PRelu', ['x', 'w'], 'y', order='NHWC')", note="PReluGradient the same"),
    Case("prelu-slope-2d", "ops: activation", "PRelu([x (2,3), w (1,3)])",
         "feed(x=f32(2, 3), w=f32(1, 3)); run_op('PRelu', ['x', 'w'], 'y')", V,
         r"op PRelu #0: input 1 blob 'w' must have 1 dims, got \(1, 3\) float32"),
    Case("prelu-gradient-shape", "ops: activation", "PReluGradient([y (2,2), dy, x (2,3), w])",
         "feed(y=f32(2, 2), x=f32(2, 3), w=f32(3))\n"
         "run_op('PReluGradient', ['y', 'x', 'x', 'w'], ['dx', 'dw'])",
         V, r"op PReluGradient #0: input 0 blob 'y' of shape \(2, 2\) float32 must have the shape of input 2 "
            r"blob 'x' \(X\) \(2, 3\) float32"),
    Case("prelu-in-place-gradient", "ops: activation", "net.PRelu([x, w], x); AddGradientOperators",
         """
         n = core.Net('pr'); n.PRelu(['x', 'w'], 'x'); l = n.SumElements('x', 'l')
         n.AddGradientOperators([l])
         """, V, r"PRelu gradient: the forward op ran in place on 'x', so X is overwritten",
         note="Caffe2 allowed it and differentiated with Y in place of X"),
    Case("square-root-divide-rows", "ops: activation", "SquareRootDivide([data (3,2), scale (2,)])",
         "feed(d=f32(3, 2), s=np.ones(2, np.int32)); run_op('SquareRootDivide', ['d', 's'], 'y')", V,
         r"op SquareRootDivide #0: input 1 blob 's' \(scale\) \(2,\) int32 must have one entry per row of "
         r"input 0 blob 'd' \(data\) \(3, 2\) float32"),
    Case("square-root-divide-scalar-data", "ops: activation", "SquareRootDivide([data (), scale (1,)])",
         "feed(d=np.float32(2), s=np.ones(1, np.int32)); run_op('SquareRootDivide', ['d', 's'], 'y')", V,
         r"op SquareRootDivide #0: input 0 blob 'd' must have 1 to 8 dims, got \(\) float32"),
    Case("square-root-divide-scale-dims", "ops: activation", "SquareRootDivide([data (2,2), scale (2,1)])",
         "feed(d=f32(2, 2), s=f32(2, 1)); run_op('SquareRootDivide', ['d', 's'], 'y')", V,
         r"op SquareRootDivide #0: input 1 blob 's' must have 1 dims, got \(2, 1\) float32"),
    # ---------------------------------------------------------------- loss2.c ops
    Case("cross-entropy-label-not-prob", "ops: loss2", "CrossEntropy([x (2,2), label with 1.5])",
         "feed(x=np.full((2, 2), 0.5, np.float32), l=np.array([[0.5, 0.5], [0, 1.5]], np.float32)); "
         "run_op('CrossEntropy', ['x', 'l'], 'y')", V,
         r"op CrossEntropy #0: input 1 blob 'l' \(2, 2\) float32: label 1.5 at row 1, column 1 is not a "
         r"probability in \[0, 1\]",
         after="feed(l=np.full((2, 2), 0.5, np.float32)); run_op('CrossEntropy', ['x', 'l'], 'y')",
         note="as Caffe2's forward; CrossEntropyGradient checks too (Caffe2 did not); NaN is refused"),
    Case("cross-entropy-label-shape", "ops: loss2", "CrossEntropy([x (4,3), label (4,)])",
         "feed(x=f32(4, 3), l=f32(4)); run_op('CrossEntropy', ['x', 'l'], 'y')", V,
         r"op CrossEntropy #0: input 1 blob 'l' \(4,\) float32 must hold N x D = 4 x 3 label probabilities",
         note="Caffe2 accepted a (N,) label for any D and read past its end"),
    Case("sigmoid-xent-both-tricks", "ops: loss2",
         "SigmoidCrossEntropyWithLogits(log_D_trick=1, unjoined_lr_loss=1)",
         "feed(x=f32(2, 3), t=f32(2, 3)); "
         "run_op('SigmoidCrossEntropyWithLogits', ['x', 't'], 'y', log_D_trick=1, unjoined_lr_loss=1)", V,
         r"op SigmoidCrossEntropyWithLogits #0: arguments log_D_trick=1 and unjoined_lr_loss=1 cannot be "
         r"used together", note="Caffe2 silently ignored log_D_trick"),
    Case("sigmoid-xent-gradient-shape", "ops: loss2",
         "SigmoidCrossEntropyWithLogitsGradient([g (3,), x (4,3), t (4,3)])",
         "feed(g=f32(3), x=f32(4, 3), t=f32(4, 3)); "
         "run_op('SigmoidCrossEntropyWithLogitsGradient', ['g', 'x', 't'], 'dx')", V,
         r"op SigmoidCrossEntropyWithLogitsGradient #0: input 0 blob 'g' \(3,\) float32 \(the loss "
         r"gradient\) must hold 4 values, one per row of input 1 blob 'x' \(4, 3\) float32"),
    Case("make-two-class-not-prob", "ops: loss2", "MakeTwoClass(x with 1.5)",
         "feed(x=np.array([0, 1, 1.5], np.float32)); run_op('MakeTwoClass', 'x', 'y')", V,
         r"op MakeTwoClass #0: input 0 blob 'x' \(3,\) float32: value 1.5 at element 2 is not a probability "
         r"in \[0, 1\]", note="Caffe2: a debug-build DCHECK only"),
    Case("cosine-similarity-shapes", "ops: loss2", "CosineSimilarity([x (4,3), y (4,2)])",
         "feed(x=f32(4, 3), y=f32(4, 2)); run_op('CosineSimilarity', ['x', 'y'], 'c')", V,
         r"op CosineSimilarity #0: input 1 blob 'y' \(4, 2\) float32 must have the shape of input 0 blob 'x' "
         r"\(4, 3\) float32", note="L1Distance and DotProduct the same; checked already at CreateNet"),
    Case("normalize-axis", "ops: loss2", "Normalize(x (4,3), axis=2)",
         "feed(x=f32(4, 3)); run_op('Normalize', 'x', 'y', axis=2)", V,
         r"op Normalize #0: argument axis=2 is out of range for input 0 blob 'x' \(4, 3\) float32 "
         r"\(must be in \[-2, 2\)\)", note="NormalizeL1 and NormalizeGradient the same"),
    # -------------------------------------------------------------- moments.c
    Case("lp-norm-p", "ops: moments", "LpNorm(x, p=3)",
         "feed(x=f32(2, 3)); run_op('LpNorm', 'x', 'z', p=3)", V,
         r"op LpNorm #0: argument p must be 1 or 2, got 3",
         after="run_op('LpNorm', 'x', 'z', p=1)", note="Caffe2 left the output unwritten"),
    Case("lp-norm-average-flag", "ops: moments", "LpNorm(x, average=2)",
         "feed(x=f32(2, 3)); run_op('LpNorm', 'x', 'z', average=2)", V,
         r"op LpNorm #0: argument average must be 0 or 1, got 2", note="LpNormGradient the same"),
    Case("lp-norm-average-empty", "ops: moments", "LpNorm(x (0,), average=1)",
         "feed(x=f32(0)); run_op('LpNorm', 'x', 'z', average=1)", V,
         r"op LpNorm #0: average=1 of input 0 blob 'x' \(0,\) float32: the average of no element \(divides by "
         r"0\)", after="feed(x=f32(3)); run_op('LpNorm', 'x', 'z', average=1)",
         note="as Caffe2's enforce; checked already at CreateNet"),
    Case("lp-norm-grad-dz", "ops: moments", "LpNormGradient([x (2,3), dz (2,)])",
         "feed(x=f32(2, 3), dz=f32(2)); run_op('LpNormGradient', ['x', 'dz'], 'dx')", V,
         r"op LpNormGradient #0: input 1 blob 'dz' \(dZ\) \(2,\) float32 must hold exactly 1 value \(LpNorm's "
         r"output has shape \(1,\)\)"),
    Case("batch-moments-order", "ops: moments", "BatchMoments(x, order='CHW')",
         "feed(x=f32(2, 3)); run_op('BatchMoments', 'x', ['mu', 'var'], order='CHW')", V,
         r"op BatchMoments #0: argument order must be \"NCHW\" or \"NHWC\", got \"CHW\"",
         note="BatchMomentsGradient the same"),
    Case("batch-moments-1d", "ops: moments", "BatchMoments(x (3,))",
         "feed(x=f32(3)); run_op('BatchMoments', 'x', ['mu', 'var'])", V,
         r"op BatchMoments #0: input 0 blob 'x' \(X\) must have at least 2 dims \(N, C, ...\), got \(3,\) "
         r"float32", note="Caffe2 divided by a wrong count for a 1-D NHWC X"),
    Case("batch-moments-grad-shape", "ops: moments", "BatchMomentsGradient([dmu (3,), dvar (2,), x (2,3)])",
         "feed(dmu=f32(3), dvar=f32(2), x=f32(2, 3)); "
         "run_op('BatchMomentsGradient', ['dmu', 'dvar', 'x'], 'dx', order='NHWC')", V,
         r"op BatchMomentsGradient #0: input 1 blob 'dvar' \(dvar\) \(2,\) float32 must have shape \(3,\): the "
         r"channels of input 2 blob 'x' \(2, 3\) float32", note="Caffe2 read past a short dmu / dvar"),
    Case("sinusoid-embedding-size", "ops: moments", "SinusoidPositionEncoding(p, embedding_size=0)",
         "feed(p=np.ones((2, 3), np.int32)); run_op('SinusoidPositionEncoding', 'p', 'y', embedding_size=0)", V,
         r"op SinusoidPositionEncoding #0: argument embedding_size must be in \[1, 2147483647\], got 0"),
    Case("sinusoid-alpha", "ops: moments", "SinusoidPositionEncoding(p, alpha=-1)",
         "feed(p=np.ones((2, 3), np.int32)); run_op('SinusoidPositionEncoding', 'p', 'y', alpha=-1.0)", V,
         r"op SinusoidPositionEncoding #0: argument alpha must be finite and > 0, got -1",
         note="Caffe2 took the log of alpha unchecked"),
    Case("sinusoid-amplitude", "ops: moments", "SinusoidPositionEncoding(p, amplitude=inf)",
         "feed(p=np.ones((2, 3), np.int32)); "
         "run_op('SinusoidPositionEncoding', 'p', 'y', amplitude=float('inf'))", V,
         r"op SinusoidPositionEncoding #0: argument amplitude must be finite, got inf"),
    Case("sinusoid-positions-rank", "ops: moments", "SinusoidPositionEncoding(p (3,))",
         "feed(p=np.ones(3, np.int32)); run_op('SinusoidPositionEncoding', 'p', 'y')", V,
         r"op SinusoidPositionEncoding #0: input 0 blob 'p' \(positions\) must be 2-D, got \(3,\) int32",
         note="as Caffe2; checked already at CreateNet"),
    Case("lengths-topk-huge-k", "ops: beam search", "LengthsTopK([x (5,), lengths [2, 3]], k=2**62)",
         "feed(x=f32(5), l=np.array([2, 3], np.int32)); run_op('LengthsTopK', ['x', 'l'], ['v', 'i'], k=2 ** 62)",
         M, r"op LengthsTopK #0: output 0 blob 'v': tensor of .* elements is too large"),
    Case("lengths-topk-sum", "ops: beam search", "LengthsTopK([x (5,), lengths [2, 2]], k=2)",
         "feed(x=f32(5), l=np.array([2, 2], np.int32)); run_op('LengthsTopK', ['x', 'l'], ['v', 'i'], k=2)", V,
         r"op LengthsTopK #0: input 1 blob 'l' \(lengths\) sums to 4, but input 0 blob 'x' \(X\) has 5 elements",
         after="feed(l=np.array([2, 3], np.int32)); run_op('LengthsTopK', ['x', 'l'], ['v', 'i'], k=2)",
         note="Caffe2 read past X (or ignored its tail)"),
    Case("lengths-topk-negative", "ops: beam search", "LengthsTopK([x (5,), lengths [6, -1]], k=2)",
         "feed(x=f32(5), l=np.array([6, -1], np.int32)); run_op('LengthsTopK', ['x', 'l'], ['v', 'i'], k=2)",
         V, r"op LengthsTopK #0: input 1 blob 'l' \(lengths\) holds -1 at position 1; a length must not be "
            r"negative", note="LengthsTopKGradient the same"),
    Case("lengths-topk-x-rank", "ops: beam search", "LengthsTopK([x (5,1), lengths], k=2)",
         "feed(x=f32(5, 1), l=np.array([2, 3], np.int32)); "
         "run_op('LengthsTopK', ['x', 'l'], ['v', 'i'], k=2)", V,
         r"op LengthsTopK #0: input 0 blob 'x' \(X\) must be 1-D, got \(5, 1\) float32",
         note="as Caffe2's schema; checked already at CreateNet"),
    Case("lengths-topk-k", "ops: beam search", "LengthsTopK([x, lengths], k=0)",
         "feed(x=f32(5), l=np.array([2, 3], np.int32)); run_op('LengthsTopK', ['x', 'l'], ['v', 'i'], k=0)", V,
         r"op LengthsTopK #0: argument 'k' must be >= 1, got 0",
         note="a missing k is a ValueError too, as TopK; LengthsTopKGradient the same"),
    Case("lengths-topk-grad-index", "ops: beam search",
         "LengthsTopKGradient([lengths [2, 1], indices [[0, 2], [0, -1]], dv (2,2)], k=2)",
         "feed(l=np.array([2, 1], np.int32), ix=np.array([[0, 2], [0, -1]], np.int32), dv=f32(2, 2)); "
         "run_op('LengthsTopKGradient', ['l', 'ix', 'dv'], 'dx', k=2)", V,
         r"op LengthsTopKGradient #0: input 1 blob 'ix' \(indices\) \(2, 2\) int32: index 2 at \[0, 1\] is out "
         r"of range \[0, 2\) \(the length of segment 0\)",
         note="Caffe2 checked only the end of the whole X; -1 (padding) past a segment's length is skipped"),
    Case("lengths-topk-grad-shape", "ops: beam search",
         "LengthsTopKGradient([lengths (2,), indices (2,3), dv (2,2)], k=2)",
         "feed(l=np.array([2, 1], np.int32), ix=np.zeros((2, 3), np.int32), dv=f32(2, 2)); "
         "run_op('LengthsTopKGradient', ['l', 'ix', 'dv'], 'dx', k=2)", V,
         r"op LengthsTopKGradient #0: input 1 blob 'ix' \(indices\) \(2, 3\) int32 must have shape \(2, 2\): "
         r"one row of k=2 per length of input 0 blob 'l' \(2,\) int32"),
    # -------------------------------------------------------------- loss3.c
    Case("margin-ranking-label", "ops: loss3", "MarginRankingCriterion([x1, x2, y = [1, 0, -1]])",
         "feed(a=f32(3), b=f32(3), y=np.array([1, 0, -1], np.int32)); "
         "run_op('MarginRankingCriterion', ['a', 'b', 'y'], 'l')", V,
         r"op MarginRankingCriterion #0: input 2 blob 'y' \(3,\) int32: label 0 at element 1 must be 1 or -1",
         after="feed(y=np.array([1, 1, -1], np.int32)); "
               "run_op('MarginRankingCriterion', ['a', 'b', 'y'], 'l')",
         note="Caffe2 used any value in the formula; the gradient op and CosineEmbeddingCriterion(+Gradient) "
              "check the same"),
    Case("margin-ranking-sizes", "ops: loss3", "MarginRankingCriterion([x1 (3,), x2 (4,), y (3,)])",
         "feed(a=f32(3), b=f32(4), y=np.ones(3, np.int32)); "
         "run_op('MarginRankingCriterion', ['a', 'b', 'y'], 'l')", V,
         r"op MarginRankingCriterion #0: input 1 blob 'b' \(4,\) float32 must hold as many values as "
         r"input 0 blob 'a' \(3,\) float32 \(3\)",
         note="checked already at CreateNet; every input of the four criterion ops and "
              "BernoulliJSD(+Gradient)"),
    Case("margin-ranking-label-dtype", "ops: loss3", "MarginRankingCriterion([x1, x2, y float32])",
         "feed(a=f32(3), b=f32(3), y=np.ones(3, np.float32)); "
         "run_op('MarginRankingCriterion', ['a', 'b', 'y'], 'l')", T_,
         r"op MarginRankingCriterion #0: input 2 blob 'y' must be int32, got \(3,\) float32"),
    Case("margin-not-finite", "ops: loss3", "CosineEmbeddingCriterion(..., margin=nan)",
         "feed(s=f32(3), y=np.ones(3, np.int32)); "
         "run_op('CosineEmbeddingCriterion', ['s', 'y'], 'l', margin=float('nan'))", V,
         r"op CosineEmbeddingCriterion #0: argument margin must be finite, got nan",
         note="MarginRankingCriterion and the gradient ops the same"),
    Case("pair-wise-loss-x-shape", "ops: loss3", "PairWiseLoss([x (3,2), label (3,)])",
         "feed(x=f32(3, 2), t=f32(3)); run_op('PairWiseLoss', ['x', 't'], 'l')", V,
         r"op PairWiseLoss #0: input 0 blob 'x' \(3, 2\) float32 must hold one score per row: "
         r"shape \(N,\) or \(N, 1\)"),
    Case("pair-wise-loss-label-shape", "ops: loss3", "PairWiseLoss([x (3,), label (2,)])",
         "feed(x=f32(3), t=f32(2)); run_op('PairWiseLoss', ['x', 't'], 'l')", V,
         r"op PairWiseLoss #0: input 1 blob 't' \(2,\) float32 \(label\) must have shape \(3,\) or "
         r"\(3, 1\)"),
    Case("pair-wise-loss-lengths-sum", "ops: loss3", "PairWiseLoss([x (3,), label (3,), lengths [1, 1]])",
         "feed(x=f32(3), t=f32(3), n=np.array([1, 1], np.int32)); "
         "run_op('PairWiseLoss', ['x', 't', 'n'], 'l')", V,
         r"op PairWiseLoss #0: input 2 blob 'n' \(lengths\) sums to 2, but input 0 blob 'x' \(3,\) "
         r"float32 has 3 rows",
         after="feed(n=np.array([1, 2], np.int32)); run_op('PairWiseLoss', ['x', 't', 'n'], 'l')"),
    Case("pair-wise-loss-lengths-negative", "ops: loss3",
         "PairWiseLoss([x (3,), label (3,), lengths [4, -1]])",
         "feed(x=f32(3), t=f32(3), n=np.array([4, -1], np.int32)); "
         "run_op('PairWiseLoss', ['x', 't', 'n'], 'l')", V,
         r"op PairWiseLoss #0: input 2 blob 'n' \(lengths\) holds -1 at position 1; a length must not "
         r"be negative"),
    Case("pair-wise-loss-label-nan", "ops: loss3", "PairWiseLoss([x (2,), label [0, nan]])",
         "feed(x=f32(2), t=np.array([0, np.nan], np.float32)); run_op('PairWiseLoss', ['x', 't'], 'l')", V,
         r"op PairWiseLoss #0: input 1 blob 't' \(2,\) float32: label nan at row 1 is not finite",
         note="PairWiseLossGradient the same"),
    Case("pair-wise-loss-grad-dy", "ops: loss3", "PairWiseLossGradient([x (3,), label (3,), dY (2,)])",
         "feed(x=f32(3), t=f32(3), g=f32(2)); run_op('PairWiseLossGradient', ['x', 't', 'g'], 'dx')", V,
         r"op PairWiseLossGradient #0: input 2 blob 'g' \(2,\) float32 \(the loss gradient\) must have "
         r"shape \(1,\): one value per session"),
    Case("bernoulli-jsd-not-prob", "ops: loss3", "BernoulliJSD([p with 1.5, q])",
         "feed(p=np.array([0.5, 1.5], np.float32), q=np.ones(2, np.float32)); "
         "run_op('BernoulliJSD', ['p', 'q'], 'l')", V,
         r"op BernoulliJSD #0: input 0 blob 'p' \(2,\) float32: value 1.5 at element 1 is not a "
         r"probability in \[0, 1\]",
         note="Caffe2 took logs of it; NaN is refused; BernoulliJSDGradient the same"),
    # -------------------------------------------------------------- bmm_pow.c
    Case("bmm-bc-inner-dims", "ops: bmm_pow", "BatchMatMul([a (3,4), b (5,)], broadcast=1)",
         "feed(a=f32(3, 4), b=f32(5)); run_op('BatchMatMul', ['a', 'b'], 'y', broadcast=1)", V,
         r"op BatchMatMul #0: inner dimensions differ: input 0 blob 'a' of shape \(3, 4\) float32 gives "
         r"3 x 4 matrices \(trans_a=0\) but input 1 blob 'b' of shape \(5,\) float32 gives "
         r"5 x 1 \(trans_b=0\)",
         note="a 1-D B is a column; its trans flag is ignored"),
    Case("bmm-grad-dy-shape", "ops: bmm_pow", "BatchMatMulGradient([a (2,3,4), b (4,5), dy (2,3,6)])",
         "feed(a=f32(2, 3, 4), b=f32(4, 5), dy=f32(2, 3, 6)); "
         "run_op('BatchMatMulGradient', ['a', 'b', 'dy'], ['da', 'db'])", V,
         r"op BatchMatMulGradient #0: input 2 blob 'dy' \(dY\) of shape \(2, 3, 6\) float32 must have the "
         r"forward result's shape \(2, 3, 5\) float32"),
    Case("pow-tensor-shapes", "ops: bmm_pow", "Pow([x (2,3), e (4,)])",
         "feed(x=f32(2, 3), e=f32(4)); run_op('Pow', ['x', 'e'], 'y')", V,
         r"op Pow #0: .*'x'.*\(2, 3\).*'e'.*\(4,\)", note="numpy-style broadcasting, as Mul"),
    Case("pow-grad-dy-shape", "ops: bmm_pow", "PowGradient([dy (2,4), x (2,3), e (3,), y (2,3)])",
         "feed(dy=f32(2, 4), x=f32(2, 3), e=f32(3), y=f32(2, 3)); "
         "run_op('PowGradient', ['dy', 'x', 'e', 'y'], ['dx', 'de'])", V,
         r"op PowGradient #0: input 0 blob 'dy' of shape \(2, 4\) float32 must have the shape \(2, 3\) "
         r"float32 of the forward result"),
    Case("gather-axis-index", "ops: bmm_pow", "Gather([d (2,5,3), i = [0, 5]], axis=1)",
         "feed(d=f32(2, 5, 3), i=np.array([0, 5], np.int32)); run_op('Gather', ['d', 'i'], 'o', axis=1)", I,
         r"op Gather #0: input 1 blob 'i': index 5 at position 1 is out of range \[0, 5\) \(dim 1 of input 0 "
         r"blob 'd' of shape \(2, 5, 3\) float32\)", note="checked before the output is written"),
    Case("gather-axis-range", "ops: bmm_pow", "Gather([d (2,5,3), i], axis=3)",
         "feed(d=f32(2, 5, 3), i=np.array([0], np.int32)); run_op('Gather', ['d', 'i'], 'o', axis=3)", V,
         r"op Gather #0: argument axis=3 is out of range for input 0 blob 'd' \(DATA\) of shape \(2, 5, 3\) "
         r"float32 \(must be in \[-3, 3\)\)"),
    Case("batch-gather-1d", "ops: bmm_pow", "BatchGather([d (4,), i])",
         "feed(d=f32(4), i=np.array([0], np.int32)); run_op('BatchGather', ['d', 'i'], 'o')", V,
         r"op BatchGather #0: input 0 blob 'd' \(DATA\) must have at least 2 dims, got \(4,\) float32"),
    Case("batch-gather-grad-shape", "ops: bmm_pow", "BatchGatherGradient([d (2,5,3), i (2,), do (2,3,3)])",
         "feed(d=f32(2, 5, 3), i=np.array([1, 0], np.int32), do=f32(2, 3, 3)); "
         "run_op('BatchGatherGradient', ['d', 'i', 'do'], 'dd')", V,
         r"op BatchGatherGradient #0: input 2 blob 'do' \(the output gradient\) of shape \(2, 3, 3\) float32 "
         r"must have the gathered shape \(2, 2, 3\) float32"),
    # ------------------------------------------------ DecayAdagrad, GFtrl, Storm, Lars (optim_more.c)
    Case("decay-adagrad-beta1-one", "ops: optim_more", "DecayAdagrad(..., beta1=1)",
         """
         feed(p=f32(3), m1=f32(3), m2=f32(3), g=f32(3), lr=np.ones(1, np.float32), it=np.zeros(1, np.int32))
         run_op('DecayAdagrad', ['p', 'm1', 'm2', 'g', 'lr', 'it'], ['p', 'm1', 'm2'], beta1=1.0)
         """, V, r"op DecayAdagrad #0: argument beta1 must be in \[0, 1\) with bias_correction_first, got 1",
         note="Caffe2 divided by 1 - beta1^t = 0"),
    Case("decay-adagrad-iter-float", "ops: optim_more", "DecayAdagrad([..., it float32])",
         """
         feed(p=f32(3), m1=f32(3), m2=f32(3), g=f32(3), lr=np.ones(1, np.float32), it=np.zeros(1, np.float32))
         run_op('DecayAdagrad', ['p', 'm1', 'm2', 'g', 'lr', 'it'], ['p', 'm1', 'm2'])
         """, T_, r"op DecayAdagrad #0: input 5 blob 'it' \(the iteration counter\) must be int32, "
                  r"got \(1,\) float32"),
    Case("gftrl-alpha-twice", "ops: optim_more", "GFtrl([w, nz, g, alpha], alpha=0.1)",
         """
         feed(w=f32(4, 3), nz=f32(4, 3, 2), g=f32(4, 3), a=np.ones(1, np.float32))
         run_op('GFtrl', ['w', 'nz', 'g', 'a'], ['w', 'nz'], alpha=0.1)
         """, V, r"op GFtrl #0: alpha is given both as input 3 blob 'a' and as an argument \(give one\)"),
    Case("gftrl-nz-shape", "ops: optim_more", "GFtrl([w (4, 3), nz (4, 3), g (4, 3)])",
         """
         feed(w=f32(4, 3), nz=f32(4, 3), g=f32(4, 3))
         run_op('GFtrl', ['w', 'nz', 'g'], ['w', 'nz'])
         """, V, r"op GFtrl #0: input 1 blob 'nz' \(n and z\) must have the shape of input 0 blob 'w' "
                 r"\(4, 3\) float32 plus a last dim of 2, got \(4, 3\) float32",
         note="Caffe2 compared sizes only"),
    Case("storm-grad-sq-sum-negative", "ops: optim_more", "Storm([p, m, s = [-1], g = 0, lr])",
         """
         feed(p=f32(3), m=f32(3), s=np.array([-1.0], np.float32), g=np.zeros(3, np.float32),
              lr=np.ones(1, np.float32))
         run_op('Storm', ['p', 'm', 's', 'g', 'lr'], ['p', 'm', 's'])
         """, V, r"op Storm #0: input 2 blob 's' \(the sum of squared gradients\) must be finite with "
                 r"beta \+ sum > 0 after adding this gradient's squares, got -1 \(new sum -1, beta 0.1\)",
         note="Caffe2 raised beta + sum <= 0 to the power -1/3"),
    Case("sparse-storm-index-out-of-range", "ops: optim_more", "SparseStorm(p (4, 3), i = [1, 4])",
         """
         p = f32(4, 3)
         feed(p=p, m=f32(4, 3), s=np.ones(1, np.float32), g=f32(2, 3), i=np.array([1, 4], np.int32),
              lr=np.ones(1, np.float32))
         try:
             run_op('SparseStorm', ['p', 'm', 's', 'g', 'i', 'lr'], ['p', 'm', 's'])
         finally:
             assert np.array_equal(workspace.FetchBlob('p'), p)
         """, I, r"op SparseStorm #0: input 4 blob 'i': index 4 at position 1 is out of range \[0, 4\) "
                 r"\(the rows of input 0 blob 'p' of shape \(4, 3\) float32\)",
         note="Caffe2 checked only in debug builds, and never for rows of one value"),
    Case("lars-lr-max-below-lr-min", "ops: optim_more", "Lars([x, dx, wd, trust, lr_max = [0.01]])",
         """
         feed(x=f32(3), dx=f32(3), wd=np.zeros(1, np.float32), t=np.ones(1, np.float32),
              mx=np.array([0.01], np.float32))
         run_op('Lars', ['x', 'dx', 'wd', 't', 'mx'], ['r'])
         """, V, r"op Lars #0: input 4 blob 'mx' \(the maximum rate\) must be finite and >= 0.02, got 0.01"),
    # ------------------------------------------------ LearningRateAdaption, Adam's effective gradient
    Case("lr-adaption-effgrad-shape", "ops: optim_more", "LearningRateAdaption([lr, g (3,), e (1, 3)])",
         """
         feed(lr=np.ones(1, np.float32), g=f32(3), e=f32(1, 3))
         run_op('LearningRateAdaption', ['lr', 'g', 'e'], ['lr'])
         """, V, r"op LearningRateAdaption #0: input 2 blob 'e' must have the shape of input 1 blob 'g' "
                 r"\(3,\) float32, got \(1, 3\) float32",
         note="Caffe2 compared sizes only"),
    Case("lr-adaption-normalized-two", "ops: optim_more",
         "LearningRateAdaption(..., normalized_lr_adaption=2)",
         """
         feed(lr=np.ones(1, np.float32), g=f32(3), e=f32(3))
         run_op('LearningRateAdaption', ['lr', 'g', 'e'], ['lr'], normalized_lr_adaption=2)
         """, V, r"op LearningRateAdaption #0: argument normalized_lr_adaption must be 0 or 1, got 2",
         note="Caffe2 read any int as a bool"),
    Case("sparse-adam-effgrad-is-indices", "ops: sparse", "SparseAdam([p, m1, m2, i, ...], [p, m1, m2, i])",
         """
         feed(p=f32(4, 3), m1=f32(4, 3), m2=f32(4, 3), i=np.array([1], np.int32), g=f32(1, 3),
              lr=np.ones(1, np.float32), it=np.zeros(1, np.int32))
         run_op('SparseAdam', ['p', 'm1', 'm2', 'i', 'g', 'lr', 'it'], ['p', 'm1', 'm2', 'i'])
         """, V, r"op SparseAdam #0: input 3 and output 3 are the same blob 'i', which this op does not "
                 r"allow"),
    # ---- Gather wrap_indices / match_outer, ReduceFront/Back lengths, compositeCyclical / compositeCosine
    Case("gather-wrap-index-out-of-range", "ops: bmm_pow", "Gather([d (5,3), i = [0, -6]], wrap_indices=1)",
         "feed(d=f32(5, 3), i=np.array([0, -6], np.int32)); "
         "run_op('Gather', ['d', 'i'], 'o', wrap_indices=1)",
         I, r"op Gather #0: input 1 blob 'i': index -6 at position 1 is out of range \[-5, 5\) "
            r"\(wrap_indices=1; dim 0 of input 0 blob 'd' of shape \(5, 3\) float32\)",
         note="without wrap_indices=1 a negative index is an IndexError "
              "(Caffe2 wrapped at axis 0 by default)"),
    Case("gather-match-outer-shape", "ops: bmm_pow", "Gather([d (2,5), i (3,2)], axis=1, match_outer=1)",
         "feed(d=f32(2, 5), i=np.zeros((3, 2), np.int32)); "
         "run_op('Gather', ['d', 'i'], 'o', axis=1, match_outer=1)", V,
         r"op Gather #0: input 1 blob 'i' \(INDICES\) of shape \(3, 2\) int32 must begin with the 1 dims of "
         r"input 0 blob 'd' \(DATA\) \(2, 5\) float32 before axis 1 \(match_outer=1\)",
         note="checked already at CreateNet; match_outer=1 with axis 0 is a ValueError too"),
    Case("reduce-lengths-out-of-range", "ops: unary & reduce",
         "ReduceBackSum([x (3,4), lengths = [4, 5, 0]])",
         "feed(x=f32(3, 4), l=np.array([4, 5, 0], np.int32)); run_op('ReduceBackSum', ['x', 'l'], 'y')", V,
         r"op ReduceBackSum #0: input 1 blob 'l' \(3,\) int32 \(lengths\): length 5 at position 1 is out of "
         r"range \[0, 4\] \(the size of the reduced dims of input 0 blob 'x' \(3, 4\) float32\)",
         note="Caffe2 read past the run; a wrong count is a ValueError at CreateNet; "
              "Front/Mean/Gradient the same"),
    Case("reduce-front-max-length-zero", "ops: unary & reduce",
         "ReduceFrontMax([x (3,4), lengths = [1, 0, 2, 3]])",
         "feed(x=f32(3, 4), l=np.array([1, 0, 2, 3], np.int32)); run_op('ReduceFrontMax', ['x', 'l'], 'y')", V,
         r"op ReduceFrontMax #0: input 1 blob 'l' \(4,\) int32 \(lengths\): length 0 at position 1: the maximum "
         r"of 0 elements is undefined",
         note="Caffe2 gave the run's first entry; ReduceBackMax the same"),
    Case("reduce-front-max-grad-y-shape", "ops: unary & reduce",
         "ReduceBackMaxGradient([dy (3,), x (3,4), y (2,)])",
         "feed(dy=f32(3), x=f32(3, 4), y=f32(2)); run_op('ReduceBackMaxGradient', ['dy', 'x', 'y'], 'dx')", V,
         r"op ReduceBackMaxGradient #0: input 2 blob 'y' \(2,\) float32 \(Y\) must have the shape of input 0 "
         r"blob 'dy' \(3,\) float32 \(dY\)"),
    Case("reduce-front-grad-shape-input", "ops: unary & reduce",
         "ReduceFrontSumGradient([dy (3,), shape = [4, -3]])",
         "feed(dy=f32(3), s=np.array([4, -3], np.int32)); run_op('ReduceFrontSumGradient', ['dy', 's'], 'dx')", V,
         r"op ReduceFrontSumGradient #0: input 1 blob 's' \(2,\) int32 \(X's shape\): entry 1 is -3, a size "
         r"must be >= 0",
         note="an int32 input 1 is X's shape (Caffe2's int64 form); not 1-D: a ValueError; Back/Mean the same"),
    Case("learning-rate-composite-cyclical-max-lr", "ops: optim",
         "LearningRate(it, base_lr=0.1, policy='compositeCyclical', cyclical_max_lr=0.05)",
         """
         feed(it=np.zeros(1, np.int32))
         run_op('LearningRate', 'it', 'lr', base_lr=0.1, policy='compositeCyclical', cyclical_max_lr=0.05)
         """, V, r"op LearningRate #0: argument cyclical_max_lr must satisfy "
                 r"\|cyclical_max_lr\| >= \|base_lr\| \(0.1\), got 0.05",
         note="Caffe2 only DCHECKed it; compositeCosine checks cosine_max_lr >= cosine_min_lr the same way"),
    # ---------------------------------------------------------------- ops: mask (csrc/ops/mask.c)
    Case("boolean-mask-value-not-0-1", "ops: mask", "BooleanMask(d (4, 2), m = [1, 0, 2, 1])",
         """
         feed(d=f32(4, 2), m=np.array([1, 0, 2, 1], np.int32))
         run_op('BooleanMask', ['d', 'm'], ['o'])
         """, V,
         r"op BooleanMask #0: input 1 blob 'm' \(mask\) holds 2 at position 2; a mask holds only 0 and 1",
         note="Caffe2's mask was bool; an int32 mask here holds 0 and 1 only"),
    Case("boolean-mask-length-mismatch", "ops: mask", "BooleanMask(d (4, 2), m (3,))",
         """
         feed(d=f32(4, 2), m=np.array([1, 0, 1], np.int32))
         run_op('BooleanMask', ['d', 'm'], ['o'])
         """, V,
         r"op BooleanMask #0: input 1 blob 'm' \(mask\) of shape \(3,\) int32 must hold one value per "
         r"row of input 0 blob 'd' of shape \(4, 2\) float32"),
    Case("boolean-mask-gradient-rows", "ops: mask", "BooleanMaskGradient(m (two ones), g (3, 2))",
         """
         feed(m=np.array([1, 0, 1, 0], np.int32), g=f32(3, 2))
         run_op('BooleanMaskGradient', ['m', 'g'], ['dx'])
         """, V,
         r"op BooleanMaskGradient #0: input 1 blob 'g' \(the gradient of masked_data\) of shape \(3, 2\) "
         r"float32 must have one row per 1 of input 0 blob 'm' \(mask\) of shape \(4,\) int32: 2",
         note="Caffe2 read past the gradient"),
    Case("boolean-mask-lengths-sum", "ops: mask", "BooleanMaskLengths(l = [2, 1], m (4,))",
         """
         feed(l=np.array([2, 1], np.int32), m=np.array([1, 0, 1, 1], np.int32))
         run_op('BooleanMaskLengths', ['l', 'm'], ['o'])
         """, V, r"op BooleanMaskLengths #0: input 0 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 3, "
                 r"but input 1 blob 'm' \(mask\) of shape \(4,\) int32 holds 4 values"),
    Case("boolean-unmask-no-mask-at-position", "ops: mask",
         "BooleanUnmask(m1 [1, 0, 1], v1 (2,), m2 [0, 0, 0], v2 (1,))",
         """
         feed(m1=np.array([1, 0, 1], np.int32), v1=f32(2), m2=np.zeros(3, np.int32), v2=f32(1))
         run_op('BooleanUnmask', ['m1', 'v1', 'm2', 'v2'], ['o'])
         """, V,
         r"op BooleanUnmask #0: no mask holds 1 at position 1, so it has no value \(2 masks of length 3, the "
         r"first input 0 blob 'm1'\)",
         note="Caffe2 enforced it too, after writing part of the output; here nothing is written"),
    Case("boolean-unmask-values-count", "ops: mask", "BooleanUnmask(m1 [1, 0], v1 (1,), m2 [1, 1], v2 (2,))",
         """
         feed(m1=np.array([1, 0], np.int32), v1=f32(1), m2=np.array([1, 1], np.int32), v2=f32(2))
         run_op('BooleanUnmask', ['m1', 'v1', 'm2', 'v2'], ['o'])
         """, V,
         r"op BooleanUnmask #0: input 3 blob 'v2' \(values\) of shape \(2,\) float32 must hold one value per "
         r"position where input 2 blob 'm2' \(mask\) is the first mask holding 1: 1",
         note="a later mask's 1 where an earlier mask holds 1 takes no value, as Caffe2's code (its doc's "
              "second example, this case, fails in Caffe2 too)"),
    Case("boolean-unmask-values-dtypes", "ops: mask", "BooleanUnmask(m1, v1 float32, m2, v2 int32)",
         """
         feed(m1=np.array([1, 0], np.int32), v1=f32(1), m2=np.array([0, 1], np.int32), v2=np.ones(1, np.int32))
         run_op('BooleanUnmask', ['m1', 'v1', 'm2', 'v2'], ['o'])
         """, T_,
         r"op BooleanUnmask #0: input 3 blob 'v2' \(values\) of shape \(1,\) int32 must have the dtype of "
         r"input 1 blob 'v1' \(values\) of shape \(1,\) float32",
         note="Caffe2 copied every values input with values_0's item size (another dtype was reinterpreted)"),
    Case("boolean-unmask-odd-inputs", "ops: mask", "BooleanUnmask(m1, v1, m2)",
         """
         feed(m1=np.array([1, 0], np.int32), v1=f32(1), m2=np.array([0, 1], np.int32))
         run_op('BooleanUnmask', ['m1', 'v1', 'm2'], ['o'])
         """, V, r"op BooleanUnmask #0: takes \(mask, values\) pairs: an even number of inputs, got 3",
         note="checked when the op is created, as Caffe2's schema"),
    Case("remove-data-blocks-index-range", "ops: mask", "RemoveDataBlocks(d (4, 2), i = [1, 4])",
         """
         feed(d=f32(4, 2), i=np.array([1, 4], np.int32))
         run_op('RemoveDataBlocks', ['d', 'i'], ['o'])
         """, V,
         r"op RemoveDataBlocks #0: input 1 blob 'i' \(indices\) holds 4 at position 1; an index must be in "
         r"\[0, 4\) \(the rows of input 0 blob 'd' of shape \(4, 2\) float32\)",
         note="Caffe2 enforced the range of the sorted indices (its message gave no position or value)"),
    Case("remove-data-blocks-indices-dtype", "ops: mask", "RemoveDataBlocks(d (4, 2), i float32 (2,))",
         """
         feed(d=f32(4, 2), i=np.ones(2, np.float32))
         run_op('RemoveDataBlocks', ['d', 'i'], ['o'])
         """, T_, r"op RemoveDataBlocks #0: input 1 blob 'i' must be int32, got \(2,\) float32",
         note="an empty indices of any dtype is accepted (a copy), as in Caffe2"),
    Case("lengths-to-weights-negative", "ops: mask", "LengthsToWeights(l = [1, -2])",
         """
         feed(l=np.array([1, -2], np.int32))
         run_op('LengthsToWeights', ['l'], ['w'])
         """, V,
         r"op LengthsToWeights #0: input 0 blob 'l' \(lengths\) holds -2 at position 1; a length must "
         r"not be negative"),
    Case("pad-empty-samples-rows", "ops: mask", "PadEmptySamples(l = [0, 2, 1], a (3, 2), b (4, 2))",
         """
         feed(l=np.array([0, 2, 1], np.int32), a=f32(3, 2), b=f32(4, 2))
         run_op('PadEmptySamples', ['l', 'a', 'b'], ['ol', 'oa', 'ob'])
         """, V, r"op PadEmptySamples #0: input 2 blob 'b' \(features\) of shape \(4, 2\) float32 must have "
                 r"sum\(lengths\) = 3 rows"),
    Case("pad-empty-samples-outputs", "ops: mask", "PadEmptySamples([l, a], [ol])",
         """
         feed(l=np.array([0, 2], np.int32), a=f32(2, 2))
         run_op('PadEmptySamples', ['l', 'a'], ['ol'])
         """, V,
         r"op PadEmptySamples #0: has 2 inputs \(lengths and 1 features\) but 1 outputs; it needs one "
         r"output per input", note="Caffe2 wrote to outputs that did not exist"),
    Case("dot-product-with-padding-replicate", "ops: mask",
         "DotProductWithPadding(x (2, 5), y (2, 3), replicate=1)",
         """
         feed(x=f32(2, 5), y=f32(2, 3))
         run_op('DotProductWithPadding', ['x', 'y'], ['z'], replicate=1)
         """, V,
         r"op DotProductWithPadding #0: with replicate=1 the longer row \(5 elements\) must be a multiple "
         r"of the shorter \(3\)", note="Caffe2 dropped the remainder silently"),
    Case("dot-product-with-padding-dim0", "ops: mask", "DotProductWithPadding(x (2, 5), y (3, 3))",
         """
         feed(x=f32(2, 5), y=f32(3, 3))
         run_op('DotProductWithPadding', ['x', 'y'], ['z'])
         """, V,
         r"op DotProductWithPadding #0: input 0 blob 'x' \(2, 5\) float32 and input 1 blob 'y' \(3, 3\) "
         r"float32 must have the same number of dims and the same dim 0"),
    Case("slpws-length-above-weights", "ops: mask",
         "SparseLengthsPositionalWeightedSum(d, w (2,), i, l = [1, 3])",
         """
         feed(d=f32(3, 2), w=f32(2), i=np.array([0, 2, 1, 1], np.int32), l=np.array([1, 3], np.int32))
         run_op('SparseLengthsPositionalWeightedSum', ['d', 'w', 'i', 'l'], ['o'])
         """, V,
         r"op SparseLengthsPositionalWeightedSum #0: input 3 blob 'l' \(lengths\): length 3 at position 1 "
         r"exceeds the 2 positional weights of input 1 blob 'w' of shape \(2,\) float32",
         note="Caffe2 read past the weights"),
    # -------------------------------------------------- ops: sorted_segment (csrc/ops/sorted_segment.c)
    Case("sorted-segment-ids-unsorted", "ops: sorted_segment", "SortedSegmentSum(d (4, 2), s = [0, 2, 1, 3])",
         """
         feed(d=f32(4, 2), s=np.array([0, 2, 1, 3], np.int32))
         run_op('SortedSegmentSum', ['d', 's'], ['o'])
         """, V,
         r"op SortedSegmentSum #0: input 1 blob 's' \(segment_ids\) of shape \(4,\) int32 must be sorted: "
         r"segment id 1 at position 2 is below the id 2 before it",
         note="Caffe2 enforced it after writing part of the output; every SortedSegment*/Range op the same"),
    Case("sorted-segment-ids-negative", "ops: sorted_segment", "SortedSegmentMean(d (2, 2), s = [-1, 0])",
         """
         feed(d=f32(2, 2), s=np.array([-1, 0], np.int32))
         run_op('SortedSegmentMean', ['d', 's'], ['o'])
         """, V,
         r"op SortedSegmentMean #0: input 1 blob 's' \(segment_ids\) of shape \(2,\) int32: segment id -1 at "
         r"position 0 is negative",
         note="a first id above 0 or a gap is allowed here (empty segments, 0); Caffe2 refused both"),
    Case("sorted-segment-rows", "ops: sorted_segment", "SortedSegmentWeightedSum(d (4, 2), w (3,), s (4,))",
         """
         feed(d=f32(4, 2), w=f32(3), s=np.array([0, 0, 1, 1], np.int32))
         run_op('SortedSegmentWeightedSum', ['d', 'w', 's'], ['o'])
         """, V,
         r"op SortedSegmentWeightedSum #0: input 1 blob 'w' \(scalars\) of shape \(3,\) float32 must "
         r"have one row per segment id: first dim 4 \(input 2 blob 's' \(segment_ids\) of shape \(4,\) "
         r"int32\)"),
    Case("sparse-sorted-segment-index", "ops: sorted_segment",
         "SparseSortedSegmentSum(d (3, 2), i = [0, 3], s)",
         """
         feed(d=f32(3, 2), i=np.array([0, 3], np.int32), s=np.array([0, 0], np.int32))
         run_op('SparseSortedSegmentSum', ['d', 'i', 's'], ['o'])
         """, I, r"op SparseSortedSegmentSum #0: input 1 blob 'i'.*3.*\[0, 3\)"),
    Case("sorted-segment-gradient-segments", "ops: sorted_segment",
         "SortedSegmentSumGradient(g (2, 2), s = [0, 2])",
         """
         feed(g=f32(2, 2), s=np.array([0, 2], np.int32))
         run_op('SortedSegmentSumGradient', ['g', 's'], ['x'])
         """, V,
         r"op SortedSegmentSumGradient #0: input 0 blob 'g' \(the output gradient\) of shape \(2, 2\) "
         r"float32 must have one row per segment: 3 \(the last id of input 1 blob 's'",
         note="Caffe2 enforced the same (K - 1 == last id)"),
    Case("sorted-segment-range-gradient-out-shape", "ops: sorted_segment",
         "SortedSegmentRangeMaxGradient(d (4, 2), o (3, 3), g (3, 2), s (4,))",
         """
         feed(d=f32(4, 2), o=f32(3, 3), g=f32(3, 2), s=np.array([0, 0, 1, 2], np.int32))
         run_op('SortedSegmentRangeMaxGradient', ['d', 'o', 'g', 's'], ['x'])
         """, V,
         r"op SortedSegmentRangeMaxGradient #0: input 1 blob 'o' \(the forward output\) of shape \(3, 3\) "
         r"float32 must have the rows of input 2 blob 'g' \(the output gradient\) \(3, 2\) float32",
         note="Caffe2 read OUT by dOUT's layout without checking it; LogSumExp (and Sum, Mean) the same"),
    Case("sorted-segment-range-gradient-data-rows", "ops: sorted_segment",
         "SortedSegmentRangeLogSumExpGradient(d (3, 2), o (3, 2), g (3, 2), s (4,))",
         """
         feed(d=f32(3, 2), o=f32(3, 2), g=f32(3, 2), s=np.array([0, 0, 1, 2], np.int32))
         run_op('SortedSegmentRangeLogSumExpGradient', ['d', 'o', 'g', 's'], ['x'])
         """, V,
         r"op SortedSegmentRangeLogSumExpGradient #0: input 0 blob 'd' \(data\) of shape \(3, 2\) float32 "
         r"must have one row per segment id: first dim 4 \(input 3 blob 's' \(segment_ids\) of shape \(4,\) "
         r"int32\)",
         note="Caffe2 read DATA by the ids without checking its rows; Max the same"),
    Case("sorted-segment-range-lme-unsorted", "ops: sorted_segment",
         "SortedSegmentRangeLogMeanExp(d (4, 2), s = [0, 2, 1, 3])",
         """
         feed(d=f32(4, 2), s=np.array([0, 2, 1, 3], np.int32))
         run_op('SortedSegmentRangeLogMeanExp', ['d', 's'], ['o'])
         """, V,
         r"op SortedSegmentRangeLogMeanExp #0: input 1 blob 's' \(segment_ids\) of shape \(4,\) int32 must "
         r"be sorted: segment id 1 at position 2 is below the id 2 before it"),
    Case("nan-check-nan", "ops: sorted_segment", "NanCheck(x with a NaN at [1, 0])",
         """
         x = f32(2, 3)
         x[1, 0] = np.nan
         feed(x=x)
         run_op('NanCheck', ['x'], ['y'])
         """, V,
         r"op NanCheck #0: input 0 blob 'x' of shape \(2, 3\) float32 contains NaN: first at flat index 3 "
         r"\(row 1\)",
         note="inf and -inf the same; Caffe2 printed the inputs to stderr and failed"),
    Case("enforce-finite-inf", "ops: sorted_segment", "EnforceFinite(x with -inf at [0, 2])",
         """
         x = f32(2, 3)
         x[0, 2] = -np.inf
         feed(x=x)
         run_op('EnforceFinite', ['x'], [])
         """, V,
         r"op EnforceFinite #0: input 0 blob 'x' of shape \(2, 3\) float32 contains -inf: first at flat "
         r"index 2 \(row 0\)$",
         after="feed(x=f32(2, 3)); run_op('EnforceFinite', ['x'], [])",
         note="NaN and inf the same; a ValueError, also a RuntimeError as Caffe2's"),
    Case("enforce-finite-int32", "ops: sorted_segment", "EnforceFinite(x int32)",
         "feed(x=np.ones(3, np.int32)); run_op('EnforceFinite', ['x'], [])", T_,
         r"op EnforceFinite #0: input 0 blob 'x' must be float32, got \(3,\) int32"),
    Case("assert-zero", "ops: sorted_segment", "Assert(x = [1, 0], error_msg='boom')",
         """
         feed(x=np.array([1, 0], np.int32))
         run_op('Assert', ['x'], [], error_msg='boom')
         """, R,
         r"op Assert #0: assertion failed: input 0 blob 'x' of shape \(2,\) int32 has 0 at flat index 1; "
         r"error_msg: 'boom'"),
    Case("assert-float32-zero", "ops: sorted_segment", "Assert(x = [1.5, 0.0] float32)",
         """
         feed(x=np.array([1.5, 0.0], np.float32))
         run_op('Assert', ['x'], [])
         """, R, r"op Assert #0: assertion failed: .*has 0 at flat index 1; error_msg: ''",
         note="float32 too (Caffe2: bool, int32, int64)"),
    # ---------------------------------------------------------------- ops: print (csrc/ops/print.c)
    Case("print-limit-negative", "ops: print", "Print(x, limit=-1)",
         """
         feed(x=f32(2))
         run_op('Print', ['x'], [], limit=-1)
         """, V, r"op Print #0: argument 'limit' must be >= 0 \(0: Caffe2's default of 1000 values\), got -1",
         note="checked when the op is created; Caffe2 did not check it"),
    Case("print-every-n-zero", "ops: print", "Print(x, every_n=0)",
         """
         feed(x=f32(2))
         run_op('Print', ['x'], [], every_n=0)
         """, V, r"op Print #0: argument 'every_n' must be >= 1, got 0", note="Caffe2: CAFFE_ENFORCE_GE"),
    Case("print-to-file-not-0-or-1", "ops: print", "Print(x, to_file=2)",
         """
         feed(x=f32(2))
         run_op('Print', ['x'], [], to_file=2)
         """, V, r"op Print #0: argument 'to_file' must be 0 or 1, got 2",
         note="Caffe2 took any nonzero int as 1"),
    Case("print-to-file-unopenable", "ops: print", "CreateNet(Print('/no/such/dir/x', to_file=1))",
         """
         feed(**{'/no/such/dir/x': f32(2)})
         n = core.Net('n'); n.Print('/no/such/dir/x', [], to_file=1)
         workspace.CreateNet(n)
         """, "OSError", r"op Print #0: cannot open '/no/such/dir/x.log' for writing \(to_file=1\): No such "
                         r"file or directory", note="when the op is created, as Caffe2"),
    Case("summarize-empty", "ops: print", "Summarize(x (2,0))",
         "feed(x=f32(2, 0)); run_op('Summarize', ['x'], ['y'])", V,
         r"op Summarize #0: input 0 blob 'x' \(2, 0\) float32 is empty: there is nothing to summarize",
         note="checked already at CreateNet when x holds a tensor; Caffe2 read past the data"),
    Case("summarize-int32", "ops: print", "Summarize(x int32)",
         "feed(x=np.zeros(3, np.int32)); run_op('Summarize', ['x'], ['y'])", T_,
         r"op Summarize #0: input 0 blob 'x' must be float32, got \(3,\) int32"),
    Case("summarize-to-file-in-step-net", "ops: print", "recurrent_net with a step Summarize(output_t, to_file=1)",
         """
         net = core.Net('outer'); cell = core.Net('cell')
         i_t, prev = cell.AddExternalInputs('input_t', 'output_t_prev')
         out = cell.Mul([i_t, prev], 'output_t'); cell.Summarize(out, [], to_file=1); cell.AddExternalOutput(out)
         rnn.recurrent_net(net, cell, [(i_t, 'input')], [(prev, 'init')], {prev: out}, scope='r')
         feed(input=f32(2, 1, 2), init=f32(1, 1, 2))
         workspace.CreateNet(net)
         """, V, r"op RecurrentNetwork #0: step op Summarize #\d+ of the forward step net has to_file=1: each "
                 r"timestep's op would open and truncate 'output_t.summary'",
         note="as Print's; Caffe2's steps truncated and overwrote one file"),
    Case("print-to-file-in-step-net", "ops: print", "recurrent_net with a step Print(output_t, to_file=1)",
         """
         net = core.Net('outer'); cell = core.Net('cell')
         i_t, prev = cell.AddExternalInputs('input_t', 'output_t_prev')
         out = cell.Mul([i_t, prev], 'output_t'); cell.Print(out, [], to_file=1); cell.AddExternalOutput(out)
         rnn.recurrent_net(net, cell, [(i_t, 'input')], [(prev, 'init')], {prev: out}, scope='r')
         feed(input=f32(2, 1, 2), init=f32(1, 1, 2))
         workspace.CreateNet(net)
         """, V, r"op RecurrentNetwork #0: step op Print #1 of the forward step net has to_file=1: each "
                 r"timestep's op would open and truncate 'output_t.log'",
         note="Caffe2 opened the file once per timestep, the steps overwriting each other"),
    # ---------------------------------------------------------------- ops: ranges (csrc/ops/ranges.c)
    Case("lengths-tile-negative-length", "ops: ranges", "LengthsTile(d (3, 2), l = [1, -1, 2])",
         """
         feed(d=f32(3, 2), l=np.array([1, -1, 2], np.int32))
         run_op('LengthsTile', ['d', 'l'], ['o'])
         """, V, r"op LengthsTile #0: input 1 blob 'l' \(lengths\) holds -1 at position 1; a length must not "
                 r"be negative"),
    Case("lengths-tile-rows", "ops: ranges", "LengthsTile(d (3, 2), l (2,))",
         """
         feed(d=f32(3, 2), l=np.array([1, 2], np.int32))
         run_op('LengthsTile', ['d', 'l'], ['o'])
         """, V, r"op LengthsTile #0: input 1 blob 'l' \(LENGTHS\) of shape \(2,\) int32 must hold one "
                 r"length per row of input 0 blob 'd' of shape \(3, 2\) float32"),
    Case("pack-rnn-sequence-lengths-sum", "ops: ranges", "PackRNNSequence(values (5, 2), lengths = [2, 4])",
         """
         feed(v=f32(5, 2), l=np.array([2, 4], np.int32))
         run_op('PackRNNSequence', ['v', 'l'], ['o'])
         """, V, r"op PackRNNSequence #0: input 1 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 6, but "
                 r"input 0 blob 'v' of shape \(5, 2\) float32 has 5 rows",
         note="Caffe2 read past the end of values"),
    Case("unpack-rnn-sequence-columns", "ops: ranges", "UnpackRNNSequence(values (3, 2, 2), lengths (3,))",
         """
         feed(p=f32(3, 2, 2), l=np.array([1, 1, 3], np.int32))
         run_op('UnpackRNNSequence', ['p', 'l'], ['o'])
         """, V, r"op UnpackRNNSequence #0: input 1 blob 'l' \(lengths\) of shape \(3,\) int32 must hold one "
                 r"length per column \(dim 1\) of input 0 blob 'p' of shape \(3, 2, 2\) float32",
         note="Caffe2 took any dim 1 and read values with the wrong stride"),
    Case("unpack-rnn-sequence-rows", "ops: ranges", "UnpackRNNSequence(values (3, 2, 2), lengths = [2, 4])",
         """
         feed(p=f32(3, 2, 2), l=np.array([2, 4], np.int32))
         run_op('UnpackRNNSequence', ['p', 'l'], ['o'])
         """, V, r"op UnpackRNNSequence #0: input 1 blob 'l' \(lengths\) holds 4, more than the 3 rows "
                 r"\(dim 0\) of input 0 blob 'p' of shape \(3, 2, 2\) float32",
         note="Caffe2 read past the end of values"),
    Case("lengths-range-fill-negative", "ops: ranges", "LengthsRangeFill(l = [3, -2])",
         """
         feed(l=np.array([3, -2], np.int32))
         run_op('LengthsRangeFill', ['l'], ['o'])
         """, V, r"op LengthsRangeFill #0: input 0 blob 'l' \(lengths\) holds -2 at position 1; a length "
                 r"must not be negative", note="Caffe2 mis-sized its output"),
    Case("range-step-zero", "ops: ranges", "Range(a = 1, b = 5, z = 0)",
         """
         feed(a=np.int32(1), b=np.int32(5), z=np.int32(0))
         run_op('Range', ['a', 'b', 'z'], ['o'])
         """, V, r"op Range #0: input 2 blob 'z' \(step\) must not be 0"),
    Case("range-not-scalar", "ops: ranges", "Range(a = 1, v (2,))",
         """
         feed(a=np.int32(1), v=np.array([1, 2], np.int32))
         run_op('Range', ['a', 'v'], ['o'])
         """, V, r"op Range #0: input 1 blob 'v' \(stop\) must hold one value \(a scalar\), got \(2,\) int32",
         note="Caffe2 checked the rank of the first input only"),
    Case("range-too-long", "ops: ranges", "Range(0.0, 1e30, 1e-30)",
         """
         feed(a=np.float32(0), b=np.float32(1e30), c=np.float32(1e-30))
         run_op('Range', ['a', 'b', 'c'], ['o'])
         """, V, r"op Range #0: \(stop - start\) / step = \(1e\+30 - 0\) / 1e-30 asks for more than "
                 r"2\*\*31 - 1 values", note="Caffe2's int length overflowed"),
    Case("lengths-gather-index-out-of-range", "ops: ranges",
         "LengthsGather(it (4, 2), l = [1, 3], i = [1, 2])",
         """
         feed(it=f32(4, 2), l=np.array([1, 3], np.int32), i=np.array([1, 2], np.int32))
         run_op('LengthsGather', ['it', 'l', 'i'], ['o'])
         """, I,
         r"op LengthsGather #0: input 2 blob 'i' \(INDICES\): index 2 at position 1 is out of "
         r"range \[0, 2\) \(the segments of input 1 blob 'l'\)",
         note="Caffe2 took negative indices"),
    Case("lengths-gather-lengths-sum", "ops: ranges", "LengthsGather(it (4, 2), l = [1, 2], i)",
         """
         feed(it=f32(4, 2), l=np.array([1, 2], np.int32), i=np.array([0], np.int32))
         run_op('LengthsGather', ['it', 'l', 'i'], ['o'])
         """, V, r"op LengthsGather #0: input 1 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 3, but "
                 r"input 0 blob 'it' of shape \(4, 2\) float32 has 4 rows"),
    Case("gather-ranges-past-data", "ops: ranges", "GatherRanges(d (5,), r = [[[0, 2]], [[3, 3]]])",
         """
         feed(d=f32(5), r=np.array([[[0, 2]], [[3, 3]]], np.int32))
         run_op('GatherRanges', ['d', 'r'], ['o', 'ol'])
         """, I, r"op GatherRanges #0: input 1 blob 'r' \(RANGES\): range 0 of example 1 \(start 3, "
                 r"length 3\) is not within input 0 blob 'd' of shape \(5,\) float32",
         note="Caffe2 let a negative start read before DATA"),
    Case("gather-ranges-shape", "ops: ranges", "GatherRanges(d (5,), r (1, 2))",
         """
         feed(d=f32(5), r=np.array([[0, 2]], np.int32))
         run_op('GatherRanges', ['d', 'r'], ['o', 'ol'])
         """, V, r"op GatherRanges #0: input 1 blob 'r' \(RANGES\) must be \(batch, ranges >= 1, 2\) of "
                 r"\(start, length\) pairs, got \(1, 2\) int32"),
    Case("gather-ranges-to-dense-past-data", "ops: ranges",
         "GatherRangesToDense(d (5,), r = [[[0, 2], [4, 2]]], lengths=[2, 2])",
         """
         feed(d=f32(5), r=np.array([[[0, 2], [4, 2]]], np.int32))
         run_op('GatherRangesToDense', ['d', 'r'], ['o0', 'o1'], lengths=[2, 2])
         """, I, r"op GatherRangesToDense #0: input 1 blob 'r' \(RANGES\): range 1 of example 0 \(start 4, "
                 r"length 2\) is not within input 0 blob 'd' of shape \(5,\) float32",
         note="every range, read or not (Caffe2 did not check)"),
    Case("gather-ranges-to-dense-mismatch-ratio", "ops: ranges",
         "GatherRangesToDense(1 of 2 ranges of another length, max_mismatched_ratio=0.25, min_observation=2)",
         """
         feed(d=f32(5), r=np.array([[[0, 1]], [[2, 2]]], np.int32))
         run_op('GatherRangesToDense', ['d', 'r'], ['o'], lengths=[2], min_observation=2,
                max_mismatched_ratio=0.25)
         """, V, r"op GatherRangesToDense #0: output 0 blob 'o': 1 of the 2 ranges seen by this op are of "
                 r"another length than lengths\[j\], a ratio of 0.5, which exceeds max_mismatched_ratio=0.25 "
                 r"\(with min_observation=2\)",
         note="as Caffe2's enforce (a RuntimeError there); the counts span the op's lifetime"),
    Case("lengths-pad-above-target", "ops: ranges", "LengthsPad(d (5, 2), l = [2, 3], target_length=2)",
         """
         feed(d=f32(5, 2), l=np.array([2, 3], np.int32))
         run_op('LengthsPad', ['d', 'l'], ['o'], target_length=2)
         """, V,
         r"op LengthsPad #0: input 1 blob 'l' \(LENGTHS\) holds 3 at position 1, above target_length 2"),
    Case("lengths-pad-no-target", "ops: ranges", "LengthsPad(d, l) without target_length",
         """
         feed(d=f32(5, 2), l=np.array([2, 3], np.int32))
         run_op('LengthsPad', ['d', 'l'], ['o'])
         """, V, r"op LengthsPad #0: argument target_length must be >= 1, got -1"),
    Case("scatter-assign-index-out-of-range", "ops: ranges", "ScatterAssign(d (4, 2), i = [1, 4], s (2, 2))",
         """
         feed(d=f32(4, 2), i=np.array([1, 4], np.int32), s=f32(2, 2))
         run_op('ScatterAssign', ['d', 'i', 's'], ['d'])
         """, I,
         r"op ScatterAssign #0: input 1 blob 'i' \(INDICES\): index 4 at position 1 is out of "
         r"range \[0, 4\) \(the rows of input 0 blob 'd' of shape \(4, 2\) float32\)",
         note="Caffe2 only DCHECKed it and wrote outside DATA"),
    Case("scatter-assign-not-in-place", "ops: ranges", "ScatterAssign([d, i, s], [o])",
         """
         feed(d=f32(4, 2), i=np.array([1], np.int32), s=f32(1, 2))
         run_op('ScatterAssign', ['d', 'i', 's'], ['o'])
         """, V, r"op ScatterAssign #0: input 0 blob 'd' and output 0 blob 'o' must be the same blob "
                 r"\(ScatterAssign writes DATA in place\)"),
    Case("mod-divisor-zero", "ops: ranges", "Mod(x, divisor=0)",
         """
         feed(x=np.array([1, 2], np.int32))
         run_op('Mod', ['x'], ['y'], divisor=0)
         """, V, r"op Mod #0: argument divisor must be a non-zero int32 value, got 0",
         note="Caffe2 divided by zero"),
    # ---------------------------------------------------------------- blob queues (csrc/ops/queue.c)
    Case("queue-dequeue-empty-open", "ops: queue", "DequeueBlobs of an empty open queue",
         """
         run_op('CreateBlobsQueue', [], ['q'], capacity=2)
         run_op('DequeueBlobs', ['q'], ['x'], timeout_secs=1.0)
         """, R, r"op DequeueBlobs #0: queue 'q' is empty: the op would wait forever: nothing can enqueue "
                 r"while this net runs \(a workspace runs one net at a time; Caffe2 blocked, or failed after "
                 r"timeout_secs\)", note="Caffe2 waited forever (or failed after timeout_secs)"),
    Case("queue-enqueue-full", "ops: queue", "EnqueueBlobs into a full queue (capacity 1)",
         """
         run_op('CreateBlobsQueue', [], ['q'], capacity=1)
         feed(a=f32(2))
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         """, R, r"op EnqueueBlobs #0: queue 'q' is full \(capacity 1\): the op would wait forever: nothing "
                 r"can dequeue while this net runs", note="Caffe2 waited forever"),
    Case("queue-enqueue-closed", "ops: queue", "EnqueueBlobs into a closed queue",
         """
         run_op('CreateBlobsQueue', [], ['q'], capacity=2)
         run_op('CloseBlobsQueue', ['q'], [])
         feed(a=f32(2))
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         """, R, r"op EnqueueBlobs #0: queue 'q' is closed: no record can be added",
         note="Caffe2 still wrote into a closed queue that had room"),
    Case("queue-dequeue-closed-empty", "ops: queue", "DequeueBlobs of a closed empty queue",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('CloseBlobsQueue', ['q'], [])
         run_op('DequeueBlobs', ['q'], ['x'])
         """, R, r"op DequeueBlobs #0: queue 'q' is closed and empty: no record will come"),
    Case("queue-safe-dequeue-too-few", "ops: queue",
         "SafeDequeueBlobs(num_records=3) of an open queue holding 1 record",
         """
         run_op('CreateBlobsQueue', [], ['q'], capacity=4)
         feed(a=f32(2))
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         run_op('SafeDequeueBlobs', ['q'], ['x', 'st'], num_records=3)
         """, R, r"op SafeDequeueBlobs #0: queue 'q' holds 1 records and num_records is 3: the op would wait "
                 r"forever for the rest", note="Caffe2 waited for the rest"),
    Case("queue-concat-mismatch", "ops: queue",
         "SafeDequeueBlobs(num_records=2) of records (1, 3) and (2, 4)",
         """
         run_op('CreateBlobsQueue', [], ['q'], capacity=2, field_names=['data'])
         feed(a=f32(1, 3))
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         feed(a=f32(2, 4))
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         run_op('SafeDequeueBlobs', ['q'], ['x', 'st'], num_records=2)
         """, V, r"op SafeDequeueBlobs #0: field 'data' \(blob 0\) of queue 'q' \(output 0 blob 'x'\): "
                 r"record 1 of the 2 to concatenate \(num_records=2\) is \(2, 4\) float32, record 0 is "
                 r"\(1, 3\) float32",
         note="Caffe2 copied the bytes whatever the dims and dtypes"),
    Case("queue-wrong-record-size", "ops: queue", "EnqueueBlobs of 1 blob into a queue of num_blobs=2",
         """
         run_op('CreateBlobsQueue', [], ['q'], num_blobs=2)
         feed(a=f32(2))
         run_op('EnqueueBlobs', ['q', 'a'], ['a'])
         """, V, r"op EnqueueBlobs #0: queue 'q' holds records of num_blobs=2 blobs, but the op has 1 data "
                 r"inputs"),
    Case("queue-not-a-queue", "ops: queue", "CreateNet with DequeueBlobs(t) where t holds a tensor",
         """
         feed(t=f32(2))
         n = core.Net('n'); n.DequeueBlobs('t', ['x'])
         workspace.CreateNet(n)
         """, T_, r"op DequeueBlobs #0: input 0 blob 't' must be a BlobsQueue \(CreateBlobsQueue's output\), "
                  r"but it holds a tensor \(2,\) float32"),
    Case("queue-bad-capacity", "ops: queue", "CreateBlobsQueue(capacity=0)",
         "run_op('CreateBlobsQueue', [], ['q'], capacity=0)",
         V, r"op CreateBlobsQueue #0: argument capacity must be in \[1, 2147483647\], got 0",
         note="Caffe2 divided by the capacity (0) at the first read"),
    Case("queue-in-step-net", "ops: queue", "recurrent_net whose cell runs DequeueBlobs",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         cell = core.Net('cell')
         x_t, prev = cell.AddExternalInputs('x_t', 'prev')
         cell.DequeueBlobs('q', ['d'])
         o = cell.Sum([x_t, prev], 'o')
         cell.AddExternalOutput(o)
         net = core.Net('outer')
         rnn.recurrent_net(net, cell, [(x_t, 'x')], [(prev, 'init')], {prev: o}, scope='r', forward_only=True)
         feed(x=f32(3, 2, 4), init=f32(2, 4))
         workspace.CreateNet(net)
         """, V, r"op RecurrentNetwork #0: step op DequeueBlobs #0 of the forward step net cannot run inside "
                 r"a recurrent net: its timesteps run on the RNN executor's worker threads, which would race "
                 r"on the state it changes \(run it in the outer net\)"),
    Case("rebatching-enqueue-no-room", "ops: queue", "EnqueueRebatchingQueue(enqueue_batch=1) of 3 rows into a "
         "queue of capacity 2",
         """
         run_op('CreateRebatchingQueue', [], ['q'], capacity=2)
         feed(x=f32(3, 4))
         run_op('EnqueueRebatchingQueue', ['q', 'x'], [], enqueue_batch=1)
         """, R, r"op EnqueueRebatchingQueue #0: queue 'q' holds 0 of 2 elements and the op adds 3: the op would "
                 r"wait forever for room", note="Caffe2 added what fitted, then waited; here nothing is added"),
    Case("rebatching-dequeue-too-few", "ops: queue", "DequeueRebatchingQueue(num_elements=2) from an open queue "
         "holding 1",
         """
         run_op('CreateRebatchingQueue', [], ['q'], capacity=2)
         feed(x=f32(4))
         run_op('EnqueueRebatchingQueue', ['q', 'x'], [])
         run_op('DequeueRebatchingQueue', ['q'], ['y'], num_elements=2)
         """, R, r"op DequeueRebatchingQueue #0: queue 'q' holds 1 elements and num_elements is 2: the op would "
                 r"wait forever for the rest", note="Caffe2 waited; closing the queue lets it take fewer"),
    Case("rebatching-dequeue-mixed-shapes", "ops: queue", "DequeueRebatchingQueue of elements (4,) and (5,)",
         """
         run_op('CreateRebatchingQueue', [], ['q'], capacity=2)
         feed(x=f32(4), z=f32(5))
         run_op('EnqueueRebatchingQueue', ['q', 'x'], [])
         run_op('EnqueueRebatchingQueue', ['q', 'z'], [])
         run_op('DequeueRebatchingQueue', ['q'], ['y'], num_elements=2)
         """, V, r"element 1 of the 2 to stack is \(5,\) float32, element 0 is \(4,\) float32"),
    Case("yellowfin-curv-win-size", "ops: optimizers", "YellowFin with a curv_win of 4 values and curv_win_width 20",
         """
         feed(p=f32(2, 3), m=f32(2, 3), lr=f32(1), mu=f32(1), cw=f32(4), ga=f32(2, 3), g2=f32(2, 3), s=f32(5),
              g=f32(2, 3), it=np.array([1], np.int32))
         run_op('YellowFin', ['p', 'm', 'lr', 'mu', 'cw', 'ga', 'g2', 's', 'g', 'it'],
                ['p', 'm', 'lr', 'mu', 'cw', 'ga', 'g2', 's'])
         """, V, r"op YellowFin #0: input 4 blob 'cw' \(the curvature window of curv_win_width values\) must hold "
                 r"20 values, got \(4,\) float32", note="Caffe2 read and wrote 20 values whatever its size"),
    Case("yellowfin-iter-0", "ops: optimizers", "YellowFin with iteration counter 0",
         """
         feed(p=f32(2), m=f32(2), lr=f32(1), mu=f32(1), cw=f32(20), ga=f32(2), g2=f32(2), s=f32(5), g=f32(2),
              it=np.array([0], np.int32))
         run_op('YellowFin', ['p', 'm', 'lr', 'mu', 'cw', 'ga', 'g2', 's', 'g', 'it'],
                ['p', 'm', 'lr', 'mu', 'cw', 'ga', 'g2', 's'])
         """, V, r"input 9 blob 'it' \(the iteration counter\) must be >= 1",
         note="Caffe2 divided by zero and wrote before the window"),
    # ---------------------------------------------------------------- mutex (csrc/ops/mutex.c)
    Case("mutex-atomic-iter-not-a-mutex", "ops: mutex",
         "CreateNet with AtomicIter(t, it) where t holds a tensor",
         """
         feed(t=f32(2), it=np.zeros(1, np.int32))
         n = core.Net('n'); n.AtomicIter(['t', 'it'], ['it'])
         workspace.CreateNet(n)
         """, T_, r"op AtomicIter #0: input 0 blob 't' must be a Mutex \(CreateMutex's output\), but it "
                  r"holds a tensor \(2,\) float32", note="Caffe2 failed at run time on the blob's type"),
    # ---------------------------------------------------------------- the Python op (csrc/ops/pyfunc.c)
    Case("python-op-raises", "ops: python", "net.Python(f) where f raises ZeroDivisionError",
         """
         def f(inputs, outputs):
             raise ZeroDivisionError('boom')
         feed(x=f32(2))
         n = core.Net('n'); n.Python(f)(['x'], ['y'])
         workspace.RunNetOnce(n)
         """, R, r"op Python #0: the Python function raised ZeroDivisionError: boom",
         note="the ZeroDivisionError is the error's __cause__"),
    Case("python-op-unknown-token", "ops: python", "Python op whose token no function has (another process's net)",
         "feed(x=f32(2)); run_op('Python', ['x'], ['y'], token='no_such_token')",
         K, r"op Python #0: no Python function is registered under token 'no_such_token' in this process"),
    Case("python-op-writes-without-pass-workspace", "ops: python",
         "net.Python(f) where f calls workspace.FeedBlob on the running workspace",
         """
         def f(inputs, outputs):
             workspace.FeedBlob('z', np.zeros(2, np.float32))
         feed(x=f32(2))
         n = core.Net('n'); n.Python(f)(['x'], ['y'])
         workspace.RunNetOnce(n)
         """, R, r"op Python #0: the Python function raised RuntimeError: a Python op's function may write blobs "
                 r"of the workspace running its net only when the op is made with pass_workspace=True",
         note="reading (FetchBlob) is allowed; shape inference and CreateNet's checks know that a "
              "pass_workspace op may change any blob"),
    Case("python-op-runs-a-net-in-its-workspace", "ops: python",
         "net.Python(f, pass_workspace=True) where f runs a net in the workspace running it",
         """
         def f(inputs, outputs, ws):
             ws.run(core.Net('inner'))
         feed(x=f32(2))
         n = core.Net('n'); n.Python(f, pass_workspace=True)(['x'], ['y'])
         workspace.RunNetOnce(n)
         """, R, r"op Python #0: the Python function raised RuntimeError: a Python op's function may read blobs of "
                 r"the workspace running its net \(and write them when made with pass_workspace=True\), but not "
                 r"create, run or delete nets or run operators or plans in it, or reset it",
         note="Caffe2 let it run (re-entering the running net could crash it)"),
    Case("python-op-builder-raises", "ops: python", "net.Python((builder, [], {})) where builder raises",
         """
         def builder():
             raise ValueError('no function')
         feed(x=f32(2))
         n = core.Net('n'); n.Python((builder, [], {}))(['x'], ['y'])
         workspace.CreateNet(n)
         """, V, r"op Python #0: the Python function raised ValueError: no function",
         note="the builder runs when the op is created (once per op instance, as in Caffe2)"),
    Case("python-op-pass-workspace-not-0-or-1", "ops: python", "Python op with pass_workspace=2",
         "feed(x=f32(2)); run_op('Python', ['x'], ['y'], token='t', pass_workspace=2)",
         V, r"op Python #0: argument 'pass_workspace' must be 0 or 1, got 2"),
    Case("python-op-in-step-net", "ops: python", "recurrent_net whose cell runs a Python op",
         """
         cell = core.Net('cell'); cell.Python(lambda i, o: o[0].feed(i[0].data))(['x_t'], ['h'])
         n = core.Net('outer')
         rnn.recurrent_net(net=n, cell_net=cell, inputs=[('x_t', 'x')], initial_cell_inputs=[('h_prev', 'h0')],
                           links={'h_prev': 'h'}, timestep='t', scope='r', forward_only=True)
         feed(x=f32(3, 2, 4), h0=f32(1, 2, 4))
         workspace.RunNetOnce(n)
         """, V, r"step op Python #0 of the forward step net cannot run inside a recurrent net: its timesteps run "
                 r"on the RNN executor's worker threads, which never call Python"),
    Case("tensor-output-into-object", "ops: mutex", "Relu(x) -> m where m holds a Mutex",
         """
         run_op('CreateMutex', [], ['m'])
         feed(x=f32(2))
         run_op('Relu', ['x'], ['m'])
         """, T_, r"op Relu #0: output 0 blob 'm' holds a Mutex and cannot receive a tensor",
         after="""
         assert workspace.FetchBlob('m') == b"m, a C++ native class of type Mutex."
         """, note="before, the op ran and its output was hidden behind the Mutex (found by fuzz_ops' shape "
                   "inference check); Caffe2 replaced the blob's content"),
    Case("mutex-atomic-iter-queue", "ops: mutex", "AtomicIter(q, it) where q holds a BlobsQueue",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         feed(it=np.zeros(1, np.int32))
         run_op('AtomicIter', ['q', 'it'], ['it'])
         """, T_, r"op AtomicIter #0: input 0 blob 'q' must be a Mutex \(CreateMutex's output\), but it "
                  r"holds a BlobsQueue"),
    Case("mutex-atomic-iter-overflow", "ops: mutex", "AtomicIter(m, it) with it = [2**31 - 1] (int32)",
         """
         run_op('CreateMutex', [], ['m'])
         feed(it=np.array([2**31 - 1], np.int32))
         run_op('AtomicIter', ['m', 'it'], ['it'])
         """, V, r"op AtomicIter #0: output 0 blob 'it' \(the iteration counter\) is at 2147483647: "
                 r"incrementing it would overflow int32",
         after="""
         assert workspace.FetchBlob('it').tolist() == [2**31 - 1]
         feed(it=np.array([5], np.int32)); run_op('AtomicIter', ['m', 'it'], ['it'])
         assert workspace.FetchBlob('it').tolist() == [6]
         """, note="the counter is left unchanged (Caffe2: int64)"),
    Case("mutex-atomic-iter-float-counter", "ops: mutex", "AtomicIter(m, it) with it float32",
         """
         run_op('CreateMutex', [], ['m'])
         feed(it=np.zeros(1, np.float32))
         run_op('AtomicIter', ['m', 'it'], ['it'])
         """, T_, r"op AtomicIter #0: output 0 blob 'it' \(the iteration counter\) must be int32, got \(1,\) "
                  r"float32"),
    Case("mutex-atomic-iter-not-in-place", "ops: mutex", "AtomicIter(m, a) -> b",
         """
         run_op('CreateMutex', [], ['m'])
         feed(a=np.zeros(1, np.int32))
         run_op('AtomicIter', ['m', 'a'], ['b'])
         """, V, r"op AtomicIter #0: input 1 blob 'a' and output 0 blob 'b' must be the same blob "
                 r"\(AtomicIter increments its counter in place\)"),
    Case("mutex-fetch-add-overflow", "ops: mutex", "AtomicFetchAdd(m, a, b) with a + b beyond int32",
         """
         run_op('CreateMutex', [], ['m'])
         feed(a=np.array([2**31 - 2], np.int32), b=np.array([2], np.int32))
         run_op('AtomicFetchAdd', ['m', 'a', 'b'], ['a', 'old'])
         """, V, r"op AtomicFetchAdd #0: input 1 blob 'a' \(the value\) 2147483646 \+ input 2 blob 'b' \(the "
                 r"increment\) 2 overflows int32",
         after="""
         assert workspace.FetchBlob('a').tolist() == [2**31 - 2]
         """, note="nothing is written (Caffe2's int32 sum overflowed)"),
    Case("mutex-fetch-add-size", "ops: mutex", "AtomicFetchAdd(m, a, b) with b of two elements",
         """
         run_op('CreateMutex', [], ['m'])
         feed(a=np.array([1], np.int32), b=np.array([1, 2], np.int32))
         run_op('AtomicFetchAdd', ['m', 'a', 'b'], ['a', 'old'])
         """, V, r"op AtomicFetchAdd #0: input 2 blob 'b' \(the increment\) must hold one int32 value, got "
                 r"\(2,\) int32", note="Caffe2 read the first element"),
    Case("mutex-fetch-add-not-mutex", "ops: mutex", "AtomicFetchAdd(q, a, b) where q holds a BlobsQueue",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         feed(a=np.array([1], np.int32), b=np.array([1], np.int32))
         run_op('AtomicFetchAdd', ['q', 'a', 'b'], ['a', 'old'])
         """, T_, r"op AtomicFetchAdd #0: input 0 blob 'q' must be a Mutex \(CreateMutex's output\), but it "
                  r"holds a BlobsQueue"),
    Case("mutex-save", "ops: mutex", "Save of a Mutex blob",
         """
         run_op('CreateMutex', [], ['m'])
         run_op('Save', ['m'], [], db='/tmp/unused', db_type='minidb')
         """, T_, r"op Save #0: input 0 blob 'm' holds a Mutex, not a tensor: only tensors and Counters can "
                  r"be saved",
         note="Caffe2 saved an empty record (Load made a new mutex); a Mutex is no parameter"),
    Case("mutex-create-over-queue", "ops: mutex", "CreateMutex into a blob holding a BlobsQueue",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('CreateMutex', [], ['q'])
         """, T_, r"op CreateMutex #0: output 0 blob 'q' holds a BlobsQueue, which a Mutex cannot replace",
         note="Caffe2 replaced it"),
    # ---------------------------------------------------------------- counters (csrc/ops/counter.c)
    Case("counter-not-a-counter", "ops: counter", "CreateNet with CountDown(t) where t holds a tensor",
         """
         feed(t=f32(2))
         n = core.Net('n'); n.CountDown(['t'], ['d'])
         workspace.CreateNet(n)
         """, T_, r"op CountDown #0: input 0 blob 't' must be a Counter \(CreateCounter's output\), but it "
                  r"holds a tensor \(2,\) float32", note="Caffe2 failed at run time on the blob's type"),
    Case("counter-count-up-overflow", "ops: counter", "CountUp(c) with c at 2**31 - 1",
         """
         run_op('CreateCounter', [], ['c'], init_count=2**31 - 1)
         run_op('CountUp', ['c'], ['p'])
         """, V, r"op CountUp #0: counter 'c' is at 2147483647: counting up would leave the int32 range "
                 r"\(the counter is unchanged\)",
         after="""
         run_op('RetrieveCount', ['c'], ['n'])
         assert int(workspace.FetchBlob('n')) == 2**31 - 1
         """, note="Caffe2's int64 counter went on"),
    Case("counter-init-count-negative", "ops: counter", "CreateCounter(init_count=-1)",
         """
         run_op('CreateCounter', [], ['c'], init_count=-1)
         """, V, r"op CreateCounter #0: init_count must be in \[0, 2147483647\] \(the count is an int32\), "
                 r"got -1"),
    Case("counter-output-holds-object", "ops: counter", "CountDown(c) -> c2 where c2 holds a Counter",
         """
         run_op('CreateCounter', [], ['c'], init_count=3)
         run_op('CreateCounter', [], ['c2'])
         run_op('CountDown', ['c'], ['c2'])
         """, T_, r"op CountDown #0: output 0 blob 'c2' holds a Counter and cannot receive a tensor",
         after="""
         run_op('RetrieveCount', ['c'], ['n'])
         assert int(workspace.FetchBlob('n')) == 3
         """, note="the count is unchanged"),
    Case("counter-create-over-mutex", "ops: counter", "CreateCounter into a blob holding a Mutex",
         """
         run_op('CreateMutex', [], ['m'])
         run_op('CreateCounter', [], ['m'])
         """, T_, r"op CreateCounter #0: output 0 blob 'm' holds a Mutex, which a Counter cannot replace",
         note="Caffe2 replaced it"),
    Case("counter-load-into-mutex", "ops: counter", "Load of a saved Counter into a blob holding a Mutex",
         """
         import tempfile
         path = os.path.join(tempfile.mkdtemp(), 'db')
         run_op('CreateCounter', [], ['c'], init_count=2)
         run_op('Save', ['c'], [], db=path, db_type='minidb', absolute_path=1)
         run_op('CreateMutex', [], ['m'])
         run_op('Load', [], ['m'], db=path, db_type='minidb', absolute_path=1, source_blob_names=['c'])
         """, T_, r"op Load #0: blob 'm' holds a Mutex and cannot receive a Counter"),
    Case("counter-in-step-net", "ops: counter", "CountUp inside a RecurrentNetwork step net",
         """
         cell = core.Net('cell')
         x_t, prev = cell.AddExternalInputs('x_t', 'prev')
         cell.CountUp(['c'], ['p'])
         o = cell.Sum([x_t, prev], 'o')
         cell.AddExternalOutput(o)
         net = core.Net('outer')
         rnn.recurrent_net(net, cell, [(x_t, 'x')], [(prev, 'init')], {prev: o}, scope='r', forward_only=True)
         run_op('CreateCounter', [], ['c'])
         feed(x=f32(3, 2, 4), init=f32(2, 4))
         workspace.CreateNet(net)
         """, V, r"op RecurrentNetwork #0: step op CountUp #0 of the forward step net cannot run inside a "
                 r"recurrent net"),
    # ---------------------------------------------------------------- RowWiseCounter, SparseNormalize
    Case("rowwise-counter-index", "ops: optimizers", "RowWiseCounter with an index past the counters",
         """
         feed(p=np.zeros(4, np.int32), c=f32(4), i=np.array([1, 4], np.int32), t=np.array([3], np.int32))
         run_op('RowWiseCounter', ['p', 'c', 'i', 't'], ['p', 'c'], counter_halflife=2)
         """, I, r"op RowWiseCounter #0: input 2 blob 'i': index 4 at position 1 is out of range \[0, 4\) "
                 r"\(the number of counters\)", note="Caffe2 let an index equal to the size through"),
    Case("rowwise-counter-sizes", "ops: optimizers", "RowWiseCounter with 4 last iterations and 5 counters",
         """
         feed(p=np.zeros(4, np.int32), c=f32(5), i=np.array([1], np.int32), t=np.array([3], np.int32))
         run_op('RowWiseCounter', ['p', 'c', 'i', 't'], ['p', 'c'])
         """, V, r"op RowWiseCounter #0: input 0 blob 'p' \(the last update iterations\) \(4,\) int32 and "
                 r"input 1 blob 'c' \(the counters\) \(5,\) float32 must have the same number of elements"),
    Case("rowwise-counter-not-in-place", "ops: optimizers", "RowWiseCounter(p, c, i, t) -> (p, c2)",
         """
         feed(p=np.zeros(4, np.int32), c=f32(4), i=np.array([1], np.int32), t=np.array([3], np.int32))
         run_op('RowWiseCounter', ['p', 'c', 'i', 't'], ['p', 'c2'])
         """, V, r"op RowWiseCounter #0: output 1 blob 'c2' must be input 1 blob 'c' \(this op updates it in "
                 r"place\)"),
    Case("sparse-normalize-index", "ops: optimizers", "SparseNormalize with a negative index",
         """
         feed(w=f32(4, 3), i=np.array([-1], np.int32))
         run_op('SparseNormalize', ['w', 'i'], ['w'])
         """, I, r"op SparseNormalize #0: input 1 blob 'i': index -1 at position 0 is out of range \[0, 4\)",
         note="Caffe2 did not check"),
    Case("sparse-normalize-norm", "ops: optimizers", "SparseNormalize(norm=-1)",
         """
         feed(w=f32(4, 3), i=np.array([1], np.int32))
         run_op('SparseNormalize', ['w', 'i'], ['w'], norm=-1.0)
         """, V, r"op SparseNormalize #0: argument norm must be finite and >= 0, got -1",
         note="Caffe2 checked nothing"),
    # ---------------------------------------------------------------- WeightedMultiSampling
    Case("wms-cdf-decreasing", "ops: sampling", "WeightedMultiSampling of a decreasing CDF",
         """
         feed(w=np.array([2, 1], np.float32))
         run_op('WeightedMultiSampling', ['w'], ['idx'], num_samples=3)
         """, V, r"op WeightedMultiSampling #0: input 0 blob 'w' of shape \(2,\) float32 \(the cumulative "
                 r"distribution\): value 1 at position 1 must be finite and >= the one before it \(2\)",
         note="Caffe2 assumed a sorted CDF"),
    Case("wms-cdf-zero", "ops: sampling", "WeightedMultiSampling of an all-zero CDF with samples to draw",
         """
         feed(w=np.zeros(3, np.float32))
         run_op('WeightedMultiSampling', ['w'], ['idx'], num_samples=2)
         """, V, r"op WeightedMultiSampling #0: input 0 blob 'w' of shape \(3,\) float32 \(the cumulative "
                 r"distribution\) ends at 0: there is nothing to draw"),
    Case("wms-shape-and-num-samples", "ops: sampling", "WeightedMultiSampling(w, shape, num_samples=2)",
         """
         feed(w=f32(3), s=f32(2))
         run_op('WeightedMultiSampling', ['w', 's'], ['idx'], num_samples=2)
         """, V, r"op WeightedMultiSampling #0: the output's shape is given by input 1 blob 's': do not pass "
                 r"the argument num_samples too"),
    Case("wms-num-samples-negative", "ops: sampling", "WeightedMultiSampling(num_samples=-1)",
         """
         feed(w=f32(3))
         run_op('WeightedMultiSampling', ['w'], ['idx'], num_samples=-1)
         """, V, r"op WeightedMultiSampling #0: argument num_samples must be in \[0, 2147483647\], got -1"),
    # ---------------------------------------------------------------- UniqueUniformFill
    Case("uuf-too-many", "fills", "UniqueUniformFill of 5 values from [1, 5] avoiding 1 and 2",
         """
         feed(X=np.array([5], np.int32), A=np.array([1, 2], np.int32))
         run_op('UniqueUniformFill', ['X', 'A'], ['Y'], min=1, max=5, input_as_shape=1)
         """, V, r"op UniqueUniformFill #0: output blob 'Y' needs 5 distinct values, more than the 3 in "
                 r"\[1, 5\] that input 1 blob 'A' does not avoid"),
    Case("uuf-min-max", "fills", "UniqueUniformFill(min=5, max=5)",
         """
         run_op('UniqueUniformFill', [], ['Y'], min=5, max=5)
         """, V, r"op UniqueUniformFill #0: argument 'min' \(5\) must be < 'max' \(5\), both int32, for "
                 r"output blob 'Y'"),
    Case("uuf-no-max", "fills", "UniqueUniformFill(min=1)",
         """
         run_op('UniqueUniformFill', [], ['Y'], min=1)
         """, V, r"op UniqueUniformFill #0: arguments 'min' and 'max' are required"),
    Case("uuf-dtype", "fills", "UniqueUniformFill(dtype=FLOAT)",
         """
         run_op('UniqueUniformFill', [], ['Y'], min=1, max=5, dtype=1)
         """, V, r"op UniqueUniformFill #0: argument 'dtype' 1 is not supported: use 2 \(int32\) or 10 "
                 r"\(int64, given as int32\)"),
    Case("wsdq-empty-open", "ops: queue", "WeightedSampleDequeueBlobs choosing an empty open queue",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('WeightedSampleDequeueBlobs', ['q'], ['x', 'st'])
         """, R, r"op WeightedSampleDequeueBlobs #0: input 0 queue 'q' \(chosen at random\) is empty: the op "
                 r"would wait forever: nothing can enqueue while this net runs",
         note="Caffe2 waited forever"),
    Case("wsdq-weights-count", "ops: queue", "WeightedSampleDequeueBlobs of 2 queues with 3 weights",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('WeightedSampleDequeueBlobs', ['q', 'q'], ['x', 'st'], weights=[1.0, 2.0, 3.0])
         """, V, r"op WeightedSampleDequeueBlobs #0: argument weights has 3 values but the op has 2 input "
                 r"queues"),
    Case("wsdq-weight-negative", "ops: queue", "WeightedSampleDequeueBlobs(weights=[1, -1])",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('WeightedSampleDequeueBlobs', ['q', 'q'], ['x', 'st'], weights=[1.0, -1.0])
         """, V, r"op WeightedSampleDequeueBlobs #0: argument weights: weight 1 \(of input queue 'q'\) is "
                 r"-1: every weight must be finite and >= 0"),
    Case("wsdq-weights-sum", "ops: queue", "WeightedSampleDequeueBlobs(weights=[0, 0])",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('WeightedSampleDequeueBlobs', ['q', 'q'], ['x', 'st'], weights=[0.0, 0.0])
         """, V, r"op WeightedSampleDequeueBlobs #0: argument weights: their sum is 0: it must be positive "
                 r"and finite in float32"),
    Case("wsdq-table-idx", "ops: queue", "WeightedSampleDequeueBlobs(table_idx_blob=1) with 1 data output",
         """
         run_op('CreateBlobsQueue', [], ['q'])
         run_op('WeightedSampleDequeueBlobs', ['q'], ['x', 'st'], table_idx_blob=1)
         """, V, r"op WeightedSampleDequeueBlobs #0: argument table_idx_blob is 1 but the op has 1 data "
                 r"outputs \(the last of its 2 outputs is the status\)"),
    Case("wsdq-record-size", "ops: queue",
         "WeightedSampleDequeueBlobs with 1 data output over a queue of num_blobs=2",
         """
         run_op('CreateBlobsQueue', [], ['q1'])
         run_op('CreateBlobsQueue', [], ['q2'], num_blobs=2)
         run_op('WeightedSampleDequeueBlobs', ['q1', 'q2'], ['x', 'st'], weights=[1.0, 0.0])
         """, V, r"op WeightedSampleDequeueBlobs #0: input 1 queue 'q2' holds records of num_blobs=2 blobs, "
                 r"but the op has 1 data outputs", note="Caffe2 checked the chosen queue only"),
    Case("wsdq-not-a-queue", "ops: queue",
         "CreateNet with WeightedSampleDequeueBlobs(t) where t holds a tensor",
         """
         feed(t=f32(2))
         n = core.Net('n'); n.WeightedSampleDequeueBlobs(['t'], ['x', 'st'])
         workspace.CreateNet(n)
         """, T_, r"op WeightedSampleDequeueBlobs #0: input 0 blob 't' must be a BlobsQueue"),
    Case("viterbi-transitions-shape", "ops: decode", "ViterbiPath([p (4,3), tr (3,4)])",
         "feed(p=f32(4, 3), tr=f32(3, 4)); run_op('ViterbiPath', ['p', 'tr'], 'path')", V,
         r"op ViterbiPath #0: input 1 blob 'tr' \(transitions\) \(3, 4\) float32 must be C x C for input 0 "
         r"blob 'p' \(predictions\) \(4, 3\) float32",
         after="feed(tr=f32(3, 3)); run_op('ViterbiPath', ['p', 'tr'], 'path')",
         note="Caffe2 compared dim 0 only"),
    Case("viterbi-no-class", "ops: decode", "ViterbiPath([p (2,0), tr (0,0)])",
         "feed(p=np.zeros((2, 0), np.float32), tr=np.zeros((0, 0), np.float32)); "
         "run_op('ViterbiPath', ['p', 'tr'], 'path')", V,
         r"op ViterbiPath #0: input 0 blob 'p' \(predictions\) \(2, 0\) float32 has no class to choose",
         note="T = 0 gives an empty path (Caffe2 raised for it)"),
    Case("swap-best-path-range", "ops: decode", "SwapBestPath([p (3,4), bestPath [0, 4, 1]])",
         "feed(p=f32(3, 4), b=np.array([0, 4, 1], np.int32)); run_op('SwapBestPath', ['p', 'b'], 'p')", V,
         r"op SwapBestPath #0: input 1 blob 'b' \(bestPath\) \(3,\) int32: entry 1 is 4, out of range "
         r"\[0, 4\) \(the columns of input 0 blob 'p' \(3, 4\) float32\)",
         note="checked before anything is written; Caffe2 wrote out of bounds"),
    Case("swap-best-path-length", "ops: decode", "SwapBestPath([p (3,4), bestPath (2,)])",
         "feed(p=f32(3, 4), b=np.array([0, 1], np.int32)); run_op('SwapBestPath', ['p', 'b'], 'y')", V,
         r"op SwapBestPath #0: input 1 blob 'b' \(bestPath\) \(2,\) int32 must have one entry per row of "
         r"input 0 blob 'p' \(predictions\) \(3, 4\) float32"),
    Case("ctc-greedy-seq-len-range", "ops: decode", "CTCGreedyDecoder([x (4,2,3), SEQ_LEN [1, -1]])",
         "feed(x=f32(4, 2, 3), l=np.array([1, -1], np.int32)); "
         "run_op('CTCGreedyDecoder', ['x', 'l'], ['olen', 'vals'])", V,
         r"op CTCGreedyDecoder #0: input 1 blob 'l' \(SEQ_LEN\) \(2,\) int32: entry 1 is -1, out of range "
         r"\[0, 4\] \(dim 0 of input 0 blob 'x' \(4, 2, 3\) float32\)",
         after="feed(l=np.array([1, 4], np.int32)); run_op('CTCGreedyDecoder', ['x', 'l'], ['olen', 'vals'])",
         note="Caffe2 took a negative length as 0 (and refused one > T)"),
    Case("ctc-greedy-seq-len-size", "ops: decode", "CTCGreedyDecoder([x (4,2,3), SEQ_LEN (3,)])",
         "feed(x=f32(4, 2, 3), l=np.array([1, 2, 3], np.int32)); "
         "run_op('CTCGreedyDecoder', ['x', 'l'], ['olen', 'vals'])", V,
         r"op CTCGreedyDecoder #0: input 1 blob 'l' \(SEQ_LEN\) \(3,\) int32 must have one entry per sequence "
         r"\(dim 1\) of input 0 blob 'x' \(INPUTS\) \(4, 2, 3\) float32",
         note="Caffe2 did not check (it read past a short SEQ_LEN)"),
    Case("ctc-greedy-no-class", "ops: decode", "CTCGreedyDecoder(x (4,2,0))",
         "feed(x=np.zeros((4, 2, 0), np.float32)); run_op('CTCGreedyDecoder', ['x'], ['olen', 'vals'])", V,
         r"op CTCGreedyDecoder #0: input 0 blob 'x' \(INPUTS\) \(4, 2, 0\) float32 has no class to choose "
         r"for sequence 0 of length 4", note="sequences of length 0 read nothing and decode to nothing"),
    Case("ctc-beam-num-candidates", "ops: decode", "CTCBeamSearchDecoder(x, beam_width=2, num_candidates=3)",
         "feed(x=f32(4, 2, 3)); "
         "run_op('CTCBeamSearchDecoder', ['x'], ['olen', 'vals'], beam_width=2, num_candidates=3)", V,
         r"op CTCBeamSearchDecoder #0: argument 'num_candidates' must be in \[1, beam_width = 2\], got 3",
         after="run_op('CTCBeamSearchDecoder', ['x'], ['olen', 'vals'], beam_width=3, num_candidates=3)",
         note="checked when the op is created"),
    Case("ctc-beam-width", "ops: decode", "CTCBeamSearchDecoder(x, beam_width=0)",
         "feed(x=f32(4, 2, 3)); run_op('CTCBeamSearchDecoder', ['x'], ['olen', 'vals'], beam_width=0)", V,
         r"op CTCBeamSearchDecoder #0: argument 'beam_width' must be in \[1, 2147483647\], got 0",
         note="Caffe2 did not check (an empty beam decoded nothing)"),
    # ---------------------------------------------------------------- calib.c ops
    Case("percentile-columns", "ops: calibration", "Percentile([x (2,2), vp (3,3), l])",
         "feed(x=f32(2, 2), vp=f32(3, 3), l=np.array([2, 1], np.int32)); run_op('Percentile', ['x', "
         "'vp', 'l'], 'y')", V,
         r"op Percentile #0: input 1 blob 'vp' \(value_to_pct\) of shape \(3, 3\) float32 must have 2 "
         r"columns \(value, percentile\)",
         note="checked already at CreateNet"),
    Case("percentile-lengths-count", "ops: calibration", "Percentile([x (2,2), vp (3,2), l (3,)])",
         "feed(x=f32(2, 2), vp=f32(3, 2), l=np.array([1, 1, 1], np.int32)); run_op('Percentile', ['x', "
         "'vp', 'l'], 'y')", V,
         r"op Percentile #0: input 2 blob 'l' \(lengths\) of shape \(3,\) int32 must have one entry per "
         r"column of input 0 blob 'x' of shape \(2, 2\) float32",
         note="one run per column of X"),
    Case("percentile-lengths-sum", "ops: calibration", "Percentile([x (2,2), vp (3,2), l [1, 1]])",
         "feed(x=f32(2, 2), vp=f32(3, 2), l=np.array([1, 1], np.int32)); run_op('Percentile', ['x', "
         "'vp', 'l'], 'y')", V,
         r"op Percentile #0: input 2 blob 'l' \(lengths\) of shape \(2,\) int32 sums to 2, but input 1 blob "
         r"'vp' of shape \(3, 2\) float32 has 3 rows",
         note="as Caffe2's enforce; a negative length is a ValueError too"),
    Case("percentile-unsorted", "ops: calibration",
         "Percentile([x, vp [[2, .1], [1, .2], [1, .5]], l [2, 1]])",
         "feed(x=f32(2, 2), vp=np.array([[2, .1], [1, .2], [1, .5]], np.float32), l=np.array([2, 1], "
         "np.int32)); run_op('Percentile', ['x', 'vp', 'l'], 'y')", V,
         r"op Percentile #0: input 1 blob 'vp' \(value_to_pct\): run 0 \(rows 0\.\.1\) must be sorted by "
         r"value, but row 1 holds 1 after 2",
         note="Caffe2 assumed sorted runs; NaN values are refused the same way"),
    Case("bisect-percentile-arg-sizes", "ops: calibration",
         "BisectPercentile(x, percentile_lower of 2 entries, others of 3)",
         "feed(x=f32(2, 1)); run_op('BisectPercentile', 'x', 'y', percentile_raw=[1.0, 2.0, 3.0], "
         "percentile_mapping=[.1, .2, .3], percentile_lower=[.1, .2], percentile_upper=[.1, .2, .3], "
         "lengths=[3])", V,
         r"op BisectPercentile #0: argument 'percentile_lower' has 2 entries but 'percentile_raw' has 3 "
         r"\(one each\)",
         note="checked when the op is created, as Caffe2's constructor"),
    Case("bisect-percentile-empty-run", "ops: calibration", "BisectPercentile(x, lengths=[3, 0])",
         "feed(x=f32(2, 2)); run_op('BisectPercentile', 'x', 'y', lengths=[3, 0], percentile_raw=[1.0, "
         "2.0, 3.0], percentile_mapping=[.1, .2, .3], percentile_lower=[.1, .2, .3], "
         "percentile_upper=[.1, .2, .3])", V,
         r"op BisectPercentile #0: argument 'lengths' holds 0 at position 1; each run needs 1 to 3 entries "
         r"of 'percentile_raw'",
         note="Caffe2 read before the table for an empty run"),
    Case("bisect-percentile-lengths-sum", "ops: calibration",
         "BisectPercentile(x, lengths=[1, 1], 3 entries)",
         "feed(x=f32(2, 2)); run_op('BisectPercentile', 'x', 'y', lengths=[1, 1], percentile_raw=[1.0, "
         "2.0, 3.0], percentile_mapping=[.1, .2, .3], percentile_lower=[.1, .2, .3], "
         "percentile_upper=[.1, .2, .3])", V,
         r"op BisectPercentile #0: argument 'lengths' must sum to the 3 entries of 'percentile_raw'"),
    Case("bisect-percentile-unsorted", "ops: calibration",
         "BisectPercentile(x, percentile_raw=[1, 0, 3], lengths=[2, 1])",
         "feed(x=f32(2, 2)); run_op('BisectPercentile', 'x', 'y', lengths=[2, 1], percentile_raw=[1.0, "
         "0.0, 3.0], percentile_mapping=[.1, .2, .3], percentile_lower=[.1, .2, .3], "
         "percentile_upper=[.1, .2, .3])", V,
         r"op BisectPercentile #0: argument 'percentile_raw': run 0 \(entries 0\.\.1\) must be sorted, but "
         r"entry 1 is 0",
         note="Caffe2 assumed sorted runs; NaN is refused the same way"),
    Case("bisect-percentile-columns", "ops: calibration", "BisectPercentile(x (2,3), lengths=[2, 1])",
         "feed(x=f32(2, 3)); run_op('BisectPercentile', 'x', 'y', lengths=[2, 1], percentile_raw=[1.0, "
         "2.0, 3.0], percentile_mapping=[.1, .2, .3], percentile_lower=[.1, .2, .3], "
         "percentile_upper=[.1, .2, .3])", V,
         r"op BisectPercentile #0: input 0 blob 'x' of shape \(2, 3\) float32 must have one column per "
         r"entry of argument 'lengths' \(2\)",
         note="checked already at CreateNet"),
    Case("batch-box-cox-lambda-size", "ops: calibration", "BatchBoxCox([d (2,3), l1 (3,), l2 (2,)])",
         "feed(d=f32(2, 3), l1=f32(3), l2=f32(2)); run_op('BatchBoxCox', ['d', 'l1', 'l2'], 'y')", V,
         r"op BatchBoxCox #0: input 2 blob 'l2' \(lambda2\) of shape \(2,\) float32 must have 3 entries, "
         r"one per column of input 0 blob 'd' of shape \(2, 3\) float32",
         note="checked for an empty D too (Caffe2 returned first)"),
    Case("pwl-partial-args", "ops: calibration", "PiecewiseLinearTransform(x, bounds, slopes, no intercepts)",
         "feed(x=f32(3, 1)); run_op('PiecewiseLinearTransform', 'x', 'y', bounds=[0.0, 1.0], "
         "slopes=[1.0])", V,
         r"op PiecewiseLinearTransform #0: arguments 'bounds', 'slopes' and 'intercepts' must be all set or "
         r"all unset \(got 2, 1 and 0 entries\)",
         note="as Caffe2's enforce"),
    Case("pwl-args-and-inputs", "ops: calibration", "PiecewiseLinearTransform([x, b, s, c], bounds=..)",
         "feed(x=f32(3, 1), b=np.array([0, 1], np.float32), s=f32(1)); "
         "run_op('PiecewiseLinearTransform', ['x', 'b', 's', 's'], 'y', bounds=[0.0, 1.0], "
         "slopes=[1.0], intercepts=[0.0])", V,
         r"op PiecewiseLinearTransform #0: takes the pieces from the arguments \(then X only\) or from "
         r"inputs \(X, bounds, slopes, intercepts\): got 4 inputs with the arguments",
         note="the pieces come from one place"),
    Case("pwl-groups", "ops: calibration", "PiecewiseLinearTransform([x, b (2,), s (2,), c (2,)])",
         "feed(x=f32(3, 1), s=f32(2)); run_op('PiecewiseLinearTransform', ['x', 's', 's', 's'], 'y')", V,
         r"op PiecewiseLinearTransform #0: inputs 1\.\.3 \(bounds, slopes, intercepts\): 2 bounds and 2 "
         r"slopes do not make G groups of P >= 1 pieces \(G \(P \+ 1\) bounds, G P slopes\)",
         note="G (P + 1) bounds and G P slopes / intercepts; unequal slopes and intercepts are a "
         "ValueError too"),
    Case("pwl-binary-groups", "ops: calibration", "PiecewiseLinearTransform(x, 2 groups of bounds, binary=1)",
         "feed(x=f32(3, 2)); run_op('PiecewiseLinearTransform', 'x', 'y', binary=1, bounds=[0.0, 1.0, "
         "0.0, 1.0], slopes=[1.0, 1.0], intercepts=[0.0, 0.0])", V,
         r"op PiecewiseLinearTransform #0: the arguments: binary=1 takes one group of pieces, got 2 \(4 "
         r"bounds, 2 slopes\)"),
    Case("pwl-unsorted-bounds", "ops: calibration", "PiecewiseLinearTransform([x, b [0, 2, 1], s, c])",
         "feed(x=f32(3), b=np.array([0, 2, 1], np.float32), s=f32(2)); "
         "run_op('PiecewiseLinearTransform', ['x', 'b', 's', 's'], 'y', binary=1)", V,
         r"op PiecewiseLinearTransform #0: input 1 \(bounds\): the bounds of group 0 \(entries 0\.\.2\) "
         r"must be sorted, but entry 2 is 1",
         note="Caffe2 checked only bounds given as arguments; NaN is refused the same way"),
    Case("pwl-columns", "ops: calibration", "PiecewiseLinearTransform(x (3,2), one group)",
         "feed(x=f32(3, 2)); run_op('PiecewiseLinearTransform', 'x', 'y', bounds=[0.0, 1.0], "
         "slopes=[1.0], intercepts=[0.0])", V,
         r"op PiecewiseLinearTransform #0: input 0 blob 'x' of shape \(3, 2\) float32 must have one column "
         r"per group of pieces \(1\)",
         note="one group per column; binary=1 takes X of [N], [N, 1] or [N, 2]"),
]
XFAIL = {}

_RESULTS = {}


def results():
    if not _RESULTS:
        _RESULTS.update(run_all(CASES))
    return _RESULTS


def _params():
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(reason=XFAIL[c.id], strict=True)] if c.id in XFAIL else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def test_catalogue_size_and_unique_ids():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", _params())
def test_case(case):
    r = results()[case.id]
    assert not r.get("crash"), "CRASH (returncode %s) in case %s:\n%s" % (r.get("rc"), case.id,
                                                                       r.get("stderr"))
    if case.exc is None:
        assert r["exc"] is None, "expected no error, got %s: %s\n%s" % (r["exc"], r["msg"], r.get("tb", ""))
    else:
        assert r["exc"] == case.exc, "expected %s, got %s: %s\n%s" % (case.exc, r["exc"], r["msg"],
                                                                      r.get("tb", ""))
        assert re.search(case.match, r["msg"]), "message %r does not match %r" % (r["msg"], case.match)
    assert r["usable"], "workspace unusable after the error:\n" + r["problem"]


def test_every_op_type_rejects_wrong_arity_without_crashing():
    """Every registered op with no inputs/outputs and with 9 of each raises a
    Python exception (or runs) -- never crashes."""
    code = PRELUDE + r'''
from recurrent import _C
bad = []
for t in _C.op_types():
    for nin, nout in ((0, 0), (0, 1), (9, 9), (1, 0)):
        workspace.ResetWorkspace()
        ins = ["i%d" % k for k in range(nin)]
        feed(**{b: f32(2, 3) for b in ins})
        try:
            run_op(t, ins, ["o%d" % k for k in range(nout)])
        except (ValueError, TypeError, KeyError, IndexError) as e:
            if t not in str(e) and "op #" not in str(e):
                bad.append((t, nin, nout, str(e)))
        check_usable()
print("BAD", bad)
'''
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT,
                       env=_env())
    assert p.returncode == 0, p.stderr[-3000:]
    assert "BAD []" in p.stdout, p.stdout


def test_every_op_type_is_registered_once():
    """The C op table lists each family once: a family listed twice (a merge
    that kept both sides of registry.c) would register its ops twice."""
    from recurrent import _C
    types = list(_C.op_types())
    repeated = sorted({t for t in types if types.count(t) > 1})
    assert not repeated, "registered more than once: %s" % repeated


def test_docs_list_every_case():
    with open(DOC) as f:
        doc = f.read()
    missing = [c.id for c in CASES if "`%s`" % c.id not in doc]
    assert not missing, "docs/errors.md lacks %s; regenerate: python tests/test_bad_input_catalogue.py " \
                        "--markdown > docs/errors.md" % missing


# ---------------------------------------------------------------- docs/errors.md
def _md(s):
    # a case's temporary directory reads <tmpdir>, so that regenerating the file changes only what changed
    s = re.sub(re.escape(tempfile.gettempdir()) + r"/tmp\w+", "<tmpdir>", s)
    return s.replace("|", "\\|").replace("\n", " ")


def markdown():
    res = run_all(CASES)
    lines = [
        "# Bad input: what you get",
        "",
        "Every way we know to feed bad data to `recurrent`, the exception it raises and an example of",
        "its message. Each row is a test in `tests/test_bad_input_catalogue.py` that runs in a child",
        "process (so a crash would be caught as a crash) and then checks that the workspace is still",
        "usable. Regenerate this file with",
        "`python tests/test_bad_input_catalogue.py --markdown > docs/errors.md`.",
        "",
        "General rules:",
        "",
        "- A bad call raises a Python exception and leaves the process and the workspace usable: you can",
        "  fix the input and run the same net again.",
        "- `ValueError`: a bad value or shape; `TypeError`: a wrong dtype or argument kind; `KeyError`: a",
        "  missing blob, net, op type or workspace; `IndexError`: an out-of-range link, alias, axis or",
        "  label; `MemoryError`: a size that cannot be allocated (or overflows); `RuntimeError`: a busy",
        "  workspace or a state conflict; `KeyboardInterrupt`: Ctrl-C during a run; `OSError`: a",
        "  checkpoint file that cannot be opened, read or written (Save, Load, CreateDB).",
        "- A `RuntimeError` whose message starts \"internal error\" (after the op's name) is a bug in the",
        "  library, not in the input; the only one today is `RECURRENT_VERIFY_PACKS=1` finding a kept",
        "  step-weight pack that no longer matches its weight (README \"Packs kept between runs\"). Please",
        "  report it; `RECURRENT_PACK_REUSE=0` avoids it.",
        "- Messages name the op (type and index in its net), the blob and the shapes involved; errors",
        "  inside a RecurrentNetwork's step net also name the step net and the timestep.",
        "- What is checked when: arities, missing blobs, in-place pairs and argument kinds/values at",
        "  `CreateNet` (nothing runs); dtypes and shapes when the op runs, and already at `CreateNet`",
        "  for every op type but those README.md lists under \"Shapes checked at net creation\"",
        "  (`recurrent._C.op_types(checked=False)`) when its inputs hold tensors that no earlier op of",
        "  the net writes (the cases below use `RunOperatorOnce`, which checks when it runs); values",
        "  (labels, lengths, indices, probabilities) when the op runs.",
        "- NaN and Inf are not errors: they propagate through ops and gradients (IEEE arithmetic).",
        "- Every registered op type given no inputs/outputs, or 9 of each, raises a Python exception",
        "  naming the op (`test_every_op_type_rejects_wrong_arity_without_crashing`). Random nets,",
        "  arguments and shapes are fuzzed too: see `fuzz/README.md`.",
        "",
        "%d cases." % len(CASES),
        "",
        "| case | area | call | exception | message example |",
        "|---|---|---|---|---|",
    ]
    for c in CASES:
        r = res.get(c.id, {})
        if r.get("crash"):
            msg = "**CRASH** (returncode %s)" % r.get("rc")
        elif c.id in XFAIL:
            msg = "**no error today** -- " + c.note
        elif c.exc is None:
            msg = "*(no error)* " + re.sub(r"^no error: ", "", c.note)
        else:
            msg = "`%s`" % _md(r.get("msg", "")) if r.get("msg") else "*(empty message)*"
            if c.note:
                msg += " -- " + c.note
        exc = c.exc or "none"
        lines.append("| `%s` | %s | `%s` | %s | %s |" % (c.id, c.area, _md(c.call), exc, _md(msg)))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    if sys.argv[1:] == ["--markdown"]:
        sys.stdout.write(markdown())
    else:
        sys.exit("usage: python tests/test_bad_input_catalogue.py --markdown > docs/errors.md")
