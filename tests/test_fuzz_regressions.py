"""Regression tests for what the fuzzers (fuzz/) and the bad-input catalogue found.

Each case runs in a child process, so a crash fails the test instead of killing
pytest; under tools/asan_pytest.sh the child inherits the sanitizer runtime and
the staged sanitized build, so undefined behaviour is caught there too.

Every input committed under fuzz/corpus/<target>/ (the fuzzers' seeds, which
include each finding's input) is also replayed through its fuzz target.

Findings (date order):
1. FetchBlob while another thread runs a net in the same workspace: heap
   overflow (glibc 'double free or corruption') -- fetch_blob sized the NumPy
   array from the dims and then copied nbytes of a tensor the running net was
   resizing. Fixed in csrc/python/module.c: FetchBlob/HasBlob/Blobs/Nets refuse
   a busy workspace (RuntimeError). Found by the catalogue work.
2. FeedBlob of float64 / int64 ndarrays raised TypeError (NumPy's safe-cast
   rule) and of bool arrays ValueError, against the documented conversion.
   Fixed in csrc/python/module.c (force-cast after the int32 range check).
3. SIGINT with SIGINT ignored (SIG_IGN) or a custom Python handler still
   aborted RunNet with KeyboardInterrupt. Fixed in csrc/python/module.c (the
   guard stands in for Python's default handler only). Tests: tests/test_interrupt.py.
4. rc_expf (csrc/kernels/vmath.h) converted NaN to int: undefined behaviour
   (UBSan: '-nan is outside the range of representable values of type int').
   fuzz_rnn.py, instrumented build: Sigmoid in an LSTM step net fed NaN. Fixed
   in vmath.h (n from 0 for NaN; the result stays NaN); since then rc_expf
   rounds in float arithmetic and converts nothing to int at all.
5. A huge link_window with the RNN executor on: memory exhaustion / near-hang
   instead of IndexError (csrc/rnn/executor.c, graph_build). fuzz_rnn.py.
   Fixed: the dependency analysis only visits rows that exist (executor.c).
6. core.Net names: the k-th net of a basename tried k names (O(n^2) over a
   session). Found through the fuzzers' falling throughput. Fixed in
   recurrent/core.py.
7. link_offset near 2**63: int64 overflow in link_run makes the link a view
   outside its tensor -- wrong outputs or heap corruption (glibc abort).
   fuzz_rnn.py under UBSan. Fixed: link_run compares without overflow.
8. alias_offset = -2**63: int64 overflow (UB) in apply_aliases before the
   bounds check (the plain build still raises IndexError). fuzz_rnn.py under
   UBSan. Fixed: apply_aliases checks the offset against the rows before
   computing the count.
9. Fill ops with shape (2**33, 2**62, 0): rc_tensor_resize accepts any dims
   next to a 0, and rc_tensor_numel's product overflows int64 (UB).
   fuzz_ops.py under UBSan. Fixed: rc_tensor_resize refuses (ValueError)
   non-zero dims that multiply to over 2**46 even when another dim is 0.
10. RecurrentNetworkGradient whose initial_recurrent_state_ids differ from the
   forward op's (or whose initial state was re-fed with another shape after the
   forward run): heap overflow -- the initial state's gradient was copied out of
   the state gradient by the initial state's size (a read past it; a 1-D initial
   state narrower than the state was written past). fuzz_rnn.py, instrumented
   build (ASan). Fixed in csrc/rnn/recurrent_network.c: the gradient op checks
   each initial state against the state of the forward run (ValueError).
11. Load of a minidb TensorProto whose int64_data (or int32 / float / double
   data) is written value by value, not packed: 'applying zero offset to null
   pointer' (clang's UBSan) in fill_data, csrc/ops/db.c -- the packed-data span
   was set up as NULL + 0 for an unpacked value. Harmless in practice, undefined
   all the same. fuzz_minidb.py, instrumented build (20 minutes of rnn, ops and
   minidb). Fixed: the span is set up only for packed data. gcc's UBSan (the
   ASan pytest run) does not check this; the input is in fuzz/corpus/minidb.
"""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "fuzz")


def _env():
    import recurrent
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["FUZZ_INSTALLED"] = "1"  # fuzz/common.py: import the same recurrent as this process
    return env


def run(code, timeout=120):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                       env=_env())
    assert p.returncode == 0, "child failed (returncode %s):\n%s\n%s" % (p.returncode, p.stdout[-2000:],
                                                                          p.stderr[-4000:])
    return p.stdout


PRELUDE = """
import numpy as np
from recurrent import core, workspace, rnn_cell
from recurrent.model_helper import ModelHelper
"""


# A forward-only Mul-cell recurrent net over x (3, 2, 4) with one argument of
# its RecurrentNetwork op replaced (the fuzz findings on link/alias arguments).
MUL_RNN = PRELUDE + """
from recurrent import recurrent as rnn
from recurrent.proto import make_argument

def mul_rnn_with(arg, value, executor):
    net = core.Net("outer")
    cell = core.Net("cell")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    cell.AddExternalOutput(out)
    rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "h0")], {prev: out}, scope="r", forward_only=True)
    op = [o for o in net.Proto().op if o.type == "RecurrentNetwork"][0]
    op.arg[:] = [a for a in op.arg if a.name not in (arg, "enable_rnn_executor")]
    op.arg.append(make_argument(arg, value))
    op.arg.append(make_argument("enable_rnn_executor", executor))
    workspace.FeedBlob("x", np.ones((3, 2, 4), np.float32))
    workspace.FeedBlob("h0", np.ones((2, 4), np.float32))
    return net
"""


def test_fetch_blob_during_run_in_other_thread_is_refused_not_racing():
    """Finding 1: a net resizing its blobs (changing T) in one thread, FetchBlob /
    HasBlob / Blobs in a loop in another: no crash, each call either works (the
    workspace was idle) or raises 'workspace is busy'."""
    out = run(PRELUDE + r'''
import threading, time
T, N, D, H = 20, 4, 8, 16
m = ModelHelper(name="m")
res = rnn_cell.LSTM(m, "x", "seq", ["h0", "c0"], D, H, scope="l")
workspace.RunNetOnce(m.param_init_net)
workspace.FeedBlob("seq", np.full(N, T, np.int32))
workspace.FeedBlob("h0", np.zeros((1, N, H), np.float32))
workspace.FeedBlob("c0", np.zeros((1, N, H), np.float32))
m.AddGradientOperators({str(res[0]): "g_all"})
workspace.FeedBlob("x", np.ones((T, N, D), np.float32))
workspace.FeedBlob("g_all", np.ones((T, N, H), np.float32))
workspace.CreateNet(m.net)
stop = []
def runner():
    r = np.random.RandomState(0)
    while not stop:
        Tn = int(r.randint(1, 120))
        try:
            workspace.FeedBlob("x", r.rand(Tn, N, D).astype(np.float32))
            workspace.FeedBlob("g_all", np.ones((Tn, N, H), np.float32))
            workspace.RunNet(m.net)
        except RuntimeError as e:
            assert "workspace is busy" in str(e), e
th = threading.Thread(target=runner)
th.start()
ok = busy = 0
t_end = time.time() + 3
while time.time() < t_end:
    for call in (workspace.Blobs, lambda: workspace.FetchBlob(str(res[0])), lambda: workspace.HasBlob("x")):
        try:
            call()
            ok += 1
        except RuntimeError as e:
            assert "workspace is busy" in str(e), e
            busy += 1
        except ValueError:
            ok += 1     # fetched before the first run wrote it
stop.append(1)
th.join()
print("OK", ok, "BUSY", busy)
''')
    assert "OK" in out and "BUSY 0" not in out, out


def test_feed_blob_converts_float64_int64_bool_ndarrays():
    """Finding 2."""
    run(PRELUDE + r'''
for arr, dt in ((np.arange(4.0) / 3, np.float32), (np.arange(4), np.int32),
                (np.array([True, False]), np.int32), (np.arange(3, dtype=np.uint8), np.int32),
                (np.arange(3, dtype=np.float16), np.float32), (np.array([-2**31, 2**31 - 1]), np.int32)):
    workspace.FeedBlob("a", arr)
    got = workspace.FetchBlob("a")
    assert got.dtype == dt and np.array_equal(got, arr.astype(dt)), (arr, got)
for bad in (np.array([2**31]), np.array([-2**31 - 1]), np.array([2**63], np.uint64)):
    try:
        workspace.FeedBlob("a", bad)
    except ValueError as e:
        assert "do not fit in int32" in str(e)
    else:
        raise AssertionError(bad)
''')


def test_nan_through_exp_based_kernels():
    """Finding 4: Sigmoid / Tanh / LSTMUnit / GRUUnit and a whole LSTM with NaN
    and +-Inf inputs give NaN where NaN went in (no undefined behaviour: under
    tools/asan_pytest.sh UBSan aborts the child on a float -> int of NaN)."""
    run(PRELUDE + r'''
x = np.array([np.nan, np.inf, -np.inf, 0.0, 100.0, -100.0, 1.0], np.float32)
workspace.FeedBlob("x", x)
for op in ("Sigmoid", "Tanh"):
    workspace.RunOperatorOnce(core.CreateOperator(op, "x", "y"))
    y = workspace.FetchBlob("y")
    assert np.isnan(y[0]) and np.isfinite(y[1:]).all(), (op, y)
    x64 = x[1:].astype(np.float64)
    ref = 1 / (1 + np.exp(-x64)) if op == "Sigmoid" else np.tanh(x64)
    assert np.allclose(y[1:], ref, atol=1e-6), (op, y)
N, Dh = 3, 2
g = np.zeros((1, N, 4 * Dh), np.float32)
g[0, 0, 0] = np.nan
g[0, 1, :] = np.inf
g[0, 2, :] = -np.inf
workspace.FeedBlob("h", np.zeros((1, N, Dh), np.float32))
workspace.FeedBlob("c", np.zeros((1, N, Dh), np.float32))
workspace.FeedBlob("g", g)
workspace.FeedBlob("seq", np.full(N, 5, np.int32))
workspace.FeedBlob("t", np.zeros(1, np.int32))
workspace.RunOperatorOnce(core.CreateOperator("LSTMUnit", ["h", "c", "g", "seq", "t"], ["h2", "c2"]))
h2 = workspace.FetchBlob("h2")
assert np.isnan(h2[0, 0]).any() and np.isfinite(h2[0, 1:]).all(), h2
workspace.FeedBlob("g3", np.full((1, N, 3 * Dh), np.nan, np.float32))
workspace.RunOperatorOnce(core.CreateOperator("GRUUnit", ["h", "g3", "seq", "t"], ["h3"]))
assert np.isnan(workspace.FetchBlob("h3")).all()
m = ModelHelper(name="m")
res = rnn_cell.LSTM(m, "xs", "seq", ["h0", "c0"], 2, 3, scope="l")
workspace.RunNetOnce(m.param_init_net)
xs = np.ones((4, N, 2), np.float32)
xs[1, 0, 0] = np.nan
workspace.FeedBlob("xs", xs)
workspace.FeedBlob("h0", np.zeros((1, N, 3), np.float32))
workspace.FeedBlob("c0", np.zeros((1, N, 3), np.float32))
m.AddGradientOperators({str(res[0]): "gs"})
workspace.FeedBlob("gs", np.ones((4, N, 3), np.float32))
for ex in (0, 1):
    for op in m.net.Proto().op:
        for a in op.arg:
            if a.name == "enable_rnn_executor":
                a.i = ex
    workspace.RunNetOnce(m.net)
    h = workspace.FetchBlob(str(res[0]))
    assert np.isfinite(h[0]).all() and np.isnan(h[1:, 0]).all() and np.isfinite(h[:, 1:]).all(), h
''')


def test_huge_link_window_with_executor_fails_fast():
    """Finding 5 (fuzz_rnn.py): link_window = 2**31 on a 3-step sequence. Executor
    off: IndexError at once. Executor on: graph_build (csrc/rnn/executor.c,
    blob_access) records one region per window row -- 2**31 of them -- before
    rnn_internal_apply_link checks the bounds: window 10**6 takes 1.5 s and
    170 MB, 10**7 17 s and 2.2 GB, 2**31 exhausts memory (OOM kill) or, with
    allocation failing, loops ~forever. Should be an IndexError either way
    (e.g. clamp the loop to the external blob's rows)."""
    run(MUL_RNN + r'''
import resource
if "libasan" not in open("/proc/self/maps").read():   # ASan needs terabytes of address space
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))
for executor in (0, 1):
    net = mul_rnn_with("link_window", [1, 1, 2**31], executor)
    try:
        workspace.RunNetOnce(net)
    except IndexError as e:
        assert "rows [0, 2147483648) are outside the 3 rows" in str(e), e
    else:
        raise AssertionError("no error")
''', timeout=8)


@pytest.mark.parametrize("link", ["input", "state"])
def test_link_offset_near_int64_max_is_an_index_error(link):
    """Finding 7 (fuzz_rnn.py; UBSan 'signed integer overflow: 1 + 9223372036854775807'
    in link_run, csrc/rnn/recurrent_network.c): link_offset = 2**63 - 1. At t >= 1,
    start = t + offset wraps to a negative row, `start + window > rows` is false,
    and rc_tensor_view_rows makes a view far outside the tensor: the input link
    reads garbage (no error, wrong outputs); the state link is written through
    (glibc: 'corrupted size vs. prev_size', abort). Executor on and off.
    Should be an IndexError (e.g. reject offsets/windows > INT32_MAX in
    parse_links, or compare without overflow)."""
    offsets = "[0, 1, 2**63 - 1]" if link == "input" else "[0, 2**63 - 1, 0]"
    run(MUL_RNN + r'''
for executor in (0, 1):
    net = mul_rnn_with("link_offset", OFFSETS, executor)
    try:
        workspace.RunNetOnce(net)
    except IndexError as e:
        assert "outside" in str(e), e
    else:
        raise AssertionError("no error; output_t_all = %r" % workspace.FetchBlob("output_t_all").ravel()[:4])
'''.replace("OFFSETS", offsets))


def test_alias_offset_int64_min_is_an_index_error():
    """Finding 8 (fuzz_rnn.py under UBSan: 'signed integer overflow: 5 - -9223372036854775803'
    in apply_aliases, csrc/rnn/recurrent_network.c): alias_offset = -2**63. start =
    rows + off, then count = rows - start overflows before the `start < 0` check.
    The plain build raises the right IndexError (the wrapped values are negative);
    the overflow is undefined behaviour all the same, so under tools/asan_pytest.sh
    the child aborted before the fix."""
    run(MUL_RNN + r'''
for executor in (0, 1):
    net = mul_rnn_with("alias_offset", [1, -2**63], executor)
    try:
        workspace.RunNetOnce(net)
    except IndexError as e:
        assert "offset -9223372036854775808 is outside the 4 rows" in str(e), e
    else:
        raise AssertionError("no error")
''')


def test_empty_tensor_with_huge_dims_no_overflow():
    """Finding 9 (fuzz_ops.py under UBSan: 'signed integer overflow: 8589934592 *
    4611686018427387904' in rc_tensor_numel, csrc/core/tensor.c, from XavierFill's
    fill_resize): rc_tensor_resize accepts any dims when one of them is 0 (the
    byte count is 0), so the shape (2**33, 2**62, 0) is stored and every later
    product of its dims (numel, rows x cols in kernels) overflows int64 before the
    0 is reached. Worked by luck in the plain build; undefined behaviour all the
    same. NumPy refuses such shapes ('array is too big'); so does rc_tensor_resize
    now (non-zero dims must multiply to <= 2**46): a ValueError."""
    run(PRELUDE + r'''
for op in ("XavierFill", "ConstantFill", "GaussianFill"):
    try:
        workspace.RunOperatorOnce(core.CreateOperator(op, [], "y", shape=[2**33, 2**62, 0]))
    except ValueError as e:
        assert "refused even though the tensor is empty" in str(e), e
    else:
        raise AssertionError("no error for " + op)
    workspace.RunOperatorOnce(core.CreateOperator(op, [], "y", shape=[2**20, 2**20, 0]))
    assert workspace.FetchBlob("y").shape == (2**20, 2**20, 0)
''')



def test_minidb_unpacked_tensor_values_load():
    """Finding 11: a TensorProto's values written one field each (not packed), as
    the fuzzer's input had them (int64_data 5 and 127, a segment [0, 2)) and for
    the other value fields, load as the values (int64 and bool data as int32,
    double data as float32) through the loop that read packed data from a NULL span."""
    run(PRELUDE + r'''
import os, struct, sys, tempfile
sys.path.insert(0, %r)
from minidb_bytes import record, tensor_blob, varint

path = os.path.join(tempfile.mkdtemp(), "t.minidb")
cases = [  # (data_type, field number and wire type of each value, encoded values, expected)
    (10, 0x50, [varint(5), varint(127)], np.array([5, 127], np.int32)),          # INT64, int64_data
    (2, 0x20, [varint(7), varint(2**32 - 3)], np.array([7, -3], np.int32)),      # INT32, int32_data
    (5, 0x20, [varint(1), varint(0)], np.array([1, 0], np.int32)),               # BOOL, int32_data
    (1, 0x1d, [struct.pack("<f", 1.5), struct.pack("<f", -2.0)], np.array([1.5, -2.0], np.float32)),
    (13, 0x49, [struct.pack("<d", 0.25), struct.pack("<d", 3.0)], np.array([0.25, 3.0], np.float32)),
]
for dtype, tag, values, expect in cases:
    tensor = b"\x08\x02\x10" + varint(dtype) + b"".join(bytes([tag]) + v for v in values) + b"\x5a\x04\x08\x00\x10\x02"
    with open(path, "wb") as f:
        f.write(record(b"w", tensor_blob(tensor, name=b"w")))
    workspace.ResetWorkspace()
    workspace.RunOperatorOnce(core.CreateOperator("Load", [], ["w"], db=path, db_type="minidb"))
    got = workspace.FetchBlob("w")
    assert got.dtype == expect.dtype and np.array_equal(got, expect), (dtype, got)
''' % FUZZ)


def test_gradient_initial_state_ids_differ_from_forward():
    """Finding 10 (fuzz_rnn.py, instrumented build: ASan heap-buffer-overflow, READ
    of 240 bytes in rnn_grad_run): the gradient op's initial_recurrent_state_ids
    pointed at the input sequence (T, N, 6) while the forward op's pointed at h0
    (N, 2); the initial state's gradient was memcpy'd from the state gradient
    ((T + 1) x N x 2 floats) by the input sequence's size. Now a ValueError naming
    the blob and both shapes, before any work; the net runs normally afterwards."""
    run(PRELUDE + r'''
from recurrent import recurrent as rnn
from recurrent.proto import make_argument
for executor in (0, 1):
    workspace.ResetWorkspace()
    net = core.Net("outer")
    cell = core.Net("cell")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    cell.AddExternalOutput(cell.Mul([input_t, prev], "output_t"))
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "h0")], {prev: "output_t"}, scope="r")
    net.AddGradientOperators({str(outs[0]): "g_all"})
    fwd, grad = [o for o in net.Proto().op if o.type.startswith("RecurrentNetwork")]
    for o in (fwd, grad):
        o.arg[:] = [a for a in o.arg if a.name != "enable_rnn_executor"] + [make_argument("enable_rnn_executor", executor)]
    ids = [a for a in grad.arg if a.name == "initial_recurrent_state_ids"][0]
    good = list(ids.value())
    workspace.FeedBlob("x", np.full((5, 2, 6), 0.5, np.float32))
    workspace.FeedBlob("h0", np.ones((2, 6), np.float32))
    workspace.FeedBlob("g_all", np.ones((5, 2, 6), np.float32))
    grad.arg[:] = [a for a in grad.arg if a.name != "initial_recurrent_state_ids"] + [
        make_argument("initial_recurrent_state_ids", [0])]
    try:
        workspace.RunNetOnce(net)
    except ValueError as e:
        assert "initial state 'x' (forward input 0) has shape (5, 2, 6)" in str(e), e
        assert "(6, 2, 6)" in str(e) and "(6,), (2, 6) or (1, 2, 6)" in str(e), e
    else:
        raise AssertionError("no error")
    grad.arg[:] = [a for a in grad.arg if a.name != "initial_recurrent_state_ids"] + [
        make_argument("initial_recurrent_state_ids", good)]
    workspace.RunNetOnce(net)
    g = workspace.FetchBlob("h0_grad")
    assert g.shape == (2, 6), g.shape
    np.testing.assert_allclose(g, np.full((2, 6), sum(0.5 ** k for k in range(1, 6)), np.float32), rtol=1e-6)
''')


CORPUS = sorted(glob.glob(os.path.join(FUZZ, "corpus", "*", "*")))


@pytest.mark.skipif(not CORPUS, reason="no committed fuzz inputs")
@pytest.mark.parametrize("target", sorted({os.path.basename(os.path.dirname(p)) for p in CORPUS}))
def test_replay_committed_fuzz_inputs(target):
    """Every committed input of a target (seeds and findings) runs through the
    target without a crash or an undocumented exception (no atheris needed)."""
    files = [p for p in CORPUS if os.path.basename(os.path.dirname(p)) == target]
    p = subprocess.run([sys.executable, "fuzz_%s.py" % target, "--replay"] + files, cwd=FUZZ,
                       capture_output=True, text=True, timeout=300, env=_env())
    assert p.returncode == 0 and "replay ok" in p.stdout, "%s\n%s" % (p.stdout[-3000:], p.stderr[-4000:])
