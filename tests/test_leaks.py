"""Leaks and stress (issue 5, item 5).

- 10,000 training runs of a small LSTM (rnn_cell.LSTM, 2 layers, gradients and
  an SGD update) with changing T and the executor on and off: the resident set
  size stays flat after a warm-up.
- Nets created and freed over and over (RunNetOnce, CreateNet(overwrite=True))
  and ops that fail half-way keep memory flat too.
- FeedBlob / FetchBlob keep the reference counts of the arrays stable and leave
  no NumPy memory behind (tracemalloc).
- Executor stress: random T and thread counts, compared bit for bit with the
  serial run, under a hang timeout.

The memory checks run in a child process (a clean heap, and a hang or crash is
seen as such). Under AddressSanitizer (quarantined frees) RSS says nothing, so
the RSS checks are skipped there; LeakSanitizer covers the C core in tests/c.
"""

import gc
import subprocess
import sys
import os
import tracemalloc

import numpy as np
import pytest

from recurrent import workspace

pytestmark = pytest.mark.slow

ASAN = "libasan" in open("/proc/self/maps").read()


def _env():
    import recurrent
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_child(code, timeout):
    # glibc adapts its mmap threshold to the sizes freed so far, so the heap
    # creeps up for a few thousand runs before it settles; fixed thresholds
    # make RSS a direct measure of what is allocated and kept.
    env = dict(_env(), MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    p = subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True,
                       timeout=timeout, env=env)
    assert p.returncode == 0, "child failed (returncode %s):\n%s\n%s" % (p.returncode, p.stdout[-3000:],
                                                                          p.stderr[-3000:])
    return p.stdout


def check_flat(out, per_phase):
    """RSS after each phase of ``per_phase`` runs (after a warm-up). The
    allocator steps up and down by a page run now and then (~150 kB); a leak
    makes RSS climb. Fails if RSS ends more than 512 kB above where it started
    or the peak of the second half is over 256 kB above the first half's."""
    r = [int(v) for v in [ln for ln in out.splitlines() if ln.startswith("RSS ")][0].split()[1:]]
    h = len(r) // 2
    msg = "RSS (kB) after each phase of %d runs: %s\n%s" % (per_phase, [v // 1024 for v in r], out)
    assert r[-1] - r[0] <= 512 * 1024, msg
    assert max(r[h:]) - max(r[:h + 1]) <= 256 * 1024, msg


def run_flat(code, per_phase, timeout):
    """run_child + check_flat; a failed check is measured once more in a new
    child. A leak fails both; the allocator's occasional step that comes back
    down (CI once saw 41040 -> 41328 -> 41044 kB) rarely repeats. Returns the
    output of the child that passed."""
    out = run_child(code, timeout)
    try:
        check_flat(out, per_phase)
        return out
    except AssertionError as first:
        out = run_child(code, timeout)
        try:
            check_flat(out, per_phase)
        except AssertionError as second:
            raise AssertionError("twice:\n%s\n---\n%s" % (first, second)) from None
        print("first measurement failed, the second passed:\n%s" % first)
        return out


PRELUDE = r'''
import os, sys, time
import numpy as np
from recurrent import core, workspace, rnn_cell
from recurrent import recurrent as rnn
from recurrent.model_helper import ModelHelper
from recurrent.proto import make_argument

PAGE = os.sysconf("SC_PAGE_SIZE")

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

N, D, H = 2, 3, 4

def lstm_training_net(executor, threads=2, name="m"):
    """A 2-layer rnn_cell.LSTM with gradients and an SGD update (WeightedSum)."""
    m = ModelHelper(name=name)
    res = rnn_cell.LSTM(m, "x", "seq", ["h0", "c0", "h1", "c1"], D, [H, H], scope="l",
                        outputs_with_grads=(0, 1))
    workspace.RunNetOnce(m.param_init_net)
    gm = m.AddGradientOperators({str(res[0]): "g_all", str(res[1]): "g_last"})
    workspace.FeedBlob("lr", np.array([-0.001], np.float32))
    workspace.FeedBlob("one", np.array([1.0], np.float32))
    for p in m.params:
        m.net.WeightedSum([str(p), "one", gm[str(p)], "lr"], str(p))
    for op in m.net.Proto().op:
        if op.type.startswith("RecurrentNetwork"):
            op.arg[:] = [a for a in op.arg if a.name != "enable_rnn_executor"]
            op.arg.append(make_argument("enable_rnn_executor", executor))
            rnn.set_rnn_executor_config(op, num_threads=threads)
    return m, res, gm

rng = np.random.RandomState(0)
_inputs = {}

def feed(T):
    """Feeds x, seq, g_all, g_last and the initial states for length T (cached arrays)."""
    if T not in _inputs:
        _inputs[T] = dict(x=rng.uniform(-1, 1, (T, N, D)).astype(np.float32),
                          seq=rng.randint(0, T + 1, N).astype(np.int32),
                          g_all=rng.uniform(-1, 1, (T, N, H)).astype(np.float32),
                          g_last=rng.uniform(-1, 1, (1, N, H)).astype(np.float32))
    for k, v in _inputs[T].items():
        workspace.FeedBlob(k, v)
    for k in ("h0", "c0", "h1", "c1"):
        workspace.FeedBlob(k, np.zeros((1, N, H), np.float32))
'''


@pytest.mark.skipif(ASAN, reason="RSS is meaningless under ASan (quarantine); LSan covers the C core")
def test_10000_lstm_training_runs_keep_rss_flat():
    out = run_flat(r'''
Ts = [1, 7, 3, 12, 0, 5]
m_on, res, gm = lstm_training_net(1, threads=2, name="on")
m_off, _, _ = lstm_training_net(0, name="off")
feed(12)
workspace.CreateNet(m_on.net)
workspace.CreateNet(m_off.net)
nets = [m_on.net, m_off.net]

def runs(k0, k1):
    for k in range(k0, k1):
        feed(Ts[k % len(Ts)])
        workspace.RunNet(nets[k % 2])

t0 = time.time()
runs(0, 1000)                      # warm-up: every T, both nets, all buffers sized
r = [rss()]
for phase in range(9):
    runs(1000 + 1000 * phase, 2000 + 1000 * phase)
    r.append(rss())
w = workspace.FetchBlob("l/layer_0/gates_t_w")
assert np.isfinite(w).all()
print("RSS_MB %.2f -> %.2f in %.1f s" % (r[0] / 2**20, r[-1] / 2**20, time.time() - t0))
print("RSS", *r)
''', per_phase=1000, timeout=300)
    print(out)


@pytest.mark.skipif(ASAN, reason="RSS is meaningless under ASan (quarantine); LSan covers the C core")
def test_net_creation_and_failures_keep_rss_flat():
    """RunNetOnce (instantiate + free every time), CreateNet(overwrite=True),
    and runs that fail in a step (the error path) do not leak."""
    run_flat(r'''
m, res, gm = lstm_training_net(1, name="c")
feed(5)
good_w = workspace.FetchBlob("l/layer_1/gates_t_w")
bad_w = np.zeros((4 * H, H + 1), np.float32)

def cycle(k):
    feed(5)
    if k % 3 == 0:
        workspace.RunNetOnce(m.net)
    elif k % 3 == 1:
        workspace.CreateNet(m.net, overwrite=True)
        workspace.RunNet(m.net)
    else:
        workspace.FeedBlob("l/layer_1/gates_t_w", bad_w)
        try:
            workspace.RunNet(m.net)
        except ValueError:
            pass
        else:
            raise AssertionError("no error")
        workspace.FeedBlob("l/layer_1/gates_t_w", good_w)

workspace.CreateNet(m.net)
for k in range(300):
    cycle(k)
r = [rss()]
for phase in range(6):
    for k in range(300 + 500 * phase, 800 + 500 * phase):
        cycle(k)
    r.append(rss())
print("RSS", *r)
''', per_phase=500, timeout=300)


def test_feed_fetch_reference_counts_stable():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    f64 = np.arange(6.0)
    nc = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    before = [sys.getrefcount(x) for x in (a, f64, nc)]
    for _ in range(2000):
        workspace.FeedBlob("a", a)
        workspace.FeedBlob("f", f64)
        workspace.FeedBlob("nc", nc)
    assert [sys.getrefcount(x) for x in (a, f64, nc)] == before
    out = workspace.FetchBlob("a")
    assert sys.getrefcount(out) == 2  # `out` and getrefcount's argument: nothing else holds it
    assert out.base is None or sys.getrefcount(out.base) <= 2
    fetched = [workspace.FetchBlob("a") for _ in range(100)]
    assert all(sys.getrefcount(x) == 3 for x in fetched)  # the list, the loop variable, the argument
    del fetched
    name = "blob_with_a_name"
    rc_name = sys.getrefcount(name)
    for _ in range(1000):
        workspace.FeedBlob(name, a)
        workspace.FetchBlob(name)
        workspace.HasBlob(name)
    assert sys.getrefcount(name) == rc_name


def test_feed_fetch_leave_no_python_memory():
    """10,000 feeds and fetches (with conversions) leave no NumPy or Python
    memory behind (tracemalloc sees NumPy's data buffers)."""
    a = np.ones((64, 64), np.float32)
    f64 = np.ones((64, 64))
    ints = np.arange(1000)

    def cycle():
        workspace.FeedBlob("a", a)
        workspace.FeedBlob("f", f64)
        workspace.FeedBlob("i", ints)
        workspace.FeedBlob("nc", a[:, ::2])
        x = workspace.FetchBlob("a") + workspace.FetchBlob("f")
        workspace.FetchBlob("i")
        return x

    for _ in range(200):
        cycle()
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(10000):
            cycle()
        gc.collect()
        now, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert now - base < 64 * 1024, (base, now)
    n_obj = len(gc.get_objects())
    for _ in range(2000):
        cycle()
    gc.collect()
    assert len(gc.get_objects()) - n_obj < 50


def test_executor_stress_random_T_and_threads():
    """Random T (including 0) and thread counts (1..8) with the executor on:
    outputs and gradients equal the serial run bit for bit; the child must
    finish within the timeout (a hang in the executor fails the test)."""
    out = run_child(r'''
m_off, res, gm = lstm_training_net(0, name="ref")
blobs = [str(r) for r in res] + [gm[k] for k in ("x", "h0", "c0", "h1", "c1")]
nets = {}
trials = 0
t_end = time.time() + 8
r = np.random.RandomState(42)
while time.time() < t_end:
    T = int(r.choice([0, 1, 2, 3, 5, 8, 13, 21, 34]))
    threads = int(r.randint(1, 9))
    if threads not in nets:
        m_on, _, _ = lstm_training_net(1, threads=threads, name="on%d" % threads)
        nets[threads] = m_on
    params = {str(p): workspace.FetchBlob(str(p)) for p in m_off.params}
    got = []
    for net in (m_off.net, nets[threads].net):
        for p, v in params.items():
            workspace.FeedBlob(p, v)
        feed(T)
        workspace.RunNetOnce(net)
        got.append([workspace.FetchBlob(b) for b in blobs])
    for b, x, y in zip(blobs, *got):
        assert x.shape == y.shape and np.array_equal(x, y), (b, T, threads)
    trials += 1
print("TRIALS", trials)
''', timeout=180)
    trials = int([ln for ln in out.splitlines() if ln.startswith("TRIALS")][0].split()[1])
    assert trials >= 20, out
