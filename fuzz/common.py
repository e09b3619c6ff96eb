"""Shared pieces of the fuzz targets (see fuzz/README.md).

Every target defines ``test_one_input(data: bytes)``. It turns the bytes into
API calls with ``Provider`` (pure Python, so a saved input replays without
atheris: ``python fuzz/fuzz_ops.py --replay FILE``) and lets only the
documented exceptions through (``API_ERRORS``, see docs/errors.md). Anything
else -- a segfault or abort (the process dies), a SystemError, an
AssertionError from an invariant check -- is a finding.
"""

import glob
import math
import os
import resource
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the checkout's package when it has an in-place build (./dev_build.sh), else the
# installed one; FUZZ_INSTALLED=1 forces the latter (instrumented builds)
if (not os.environ.get("FUZZ_INSTALLED") and glob.glob(os.path.join(ROOT, "recurrent", "_C*.so"))
        and ROOT not in sys.path):
    sys.path.insert(0, ROOT)

# fuzz the executor on the tiny nets the targets build (the library's default,
# min_op_us 4, would run them serially); the RNN target also fuzzes the argument
os.environ.setdefault("RECURRENT_RNN_EXECUTOR_MIN_OP_US", "0")
# a step-weight pack kept from an earlier run is checked against a fresh one
# (a weight written without recording it fails the run: a finding)
os.environ.setdefault("RECURRENT_VERIFY_PACKS", "1")

import numpy as np  # noqa: E402

# Python coverage for libFuzzer's guidance: the recurrent package's modules are
# instrumented as the target imports them (after this module). C coverage only
# comes with an instrumented build (fuzz/README.md).
_INSTRUMENT = None
if "--replay" not in sys.argv:
    try:
        import atheris
    except ImportError:
        atheris = None
    if atheris is not None:
        _INSTRUMENT = atheris.instrument_imports(include=["recurrent"])
        _INSTRUMENT.__enter__()

# the exceptions the API documents (docs/errors.md); KeyboardInterrupt is not fuzzed
API_ERRORS = (ValueError, TypeError, KeyError, IndexError, MemoryError, RuntimeError, OSError)


def expected(e):
    """Called with a caught API_ERRORS exception: one that reports an
    internal error (a kept step-weight pack found stale, RECURRENT_VERIFY_PACKS)
    is a finding, not an answer to bad input."""
    if "internal error" in str(e):
        raise AssertionError("internal error reported: %s" % e) from e


def limit_memory(gb=None):
    """Caps the address space so that a huge-but-possible allocation fails with
    MemoryError instead of the OOM killer (libFuzzer's -rss_limit_mb would
    otherwise report it as a crash)."""
    with open("/proc/self/maps") as f:
        if "asan" in f.read():
            return  # ASan reserves terabytes of shadow: use ASAN_OPTIONS=max_allocation_size_mb
    gb = gb or float(os.environ.get("FUZZ_MEMORY_GB", "4"))
    lim = int(gb * 2**30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > lim:
        resource.setrlimit(resource.RLIMIT_AS, (lim, hard))


_RNG = np.random.RandomState(0)


class Provider:
    """Deterministic choices from fuzzer bytes (like atheris's
    FuzzedDataProvider, but pure Python). Past the end, every choice is the
    smallest option, so short inputs stay meaningful."""

    def __init__(self, data):
        self.data = bytes(data)
        self.pos = 0

    def byte(self):
        if self.pos >= len(self.data):
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b

    def int(self, lo, hi):
        """An int in [lo, hi]."""
        span = hi - lo
        if span <= 0:
            return lo
        v, n = 0, 0
        while (1 << (8 * n)) <= span:
            v = (v << 8) | self.byte()
            n += 1
        return lo + v % (span + 1)

    def bool(self, p_true=0.5):
        return self.byte() < int(256 * p_true)

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def interesting_int(self, small=(-2, 6)):
        """Mostly small; sometimes a boundary value."""
        if self.bool(0.85):
            return self.int(*small)
        return self.pick([-2**63, -2**31 - 1, -2**31, -2**15, -100, -1, 0, 1, 7, 100, 2**15, 2**31 - 1,
                          2**31, 2**32, 2**40, 2**62, 2**63 - 1])

    def interesting_float(self):
        k = self.int(0, 15)
        if k < 10:
            return (self.int(0, 4000) - 2000) / 500.0
        return [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-45, 3.4e38][self.int(0, 6)]

    def shape(self, max_rank=4, max_dim=4):
        rank = self.int(0, max_rank)
        return tuple(self.int(0, max_dim) for _ in range(rank))

    def array(self, shape=None, dtype=None):
        """A float32 or int32 array with a few special values."""
        if shape is None:
            shape = self.shape()
        if dtype is None:
            dtype = np.float32 if self.bool(0.75) else np.int32
        n = int(np.prod(shape)) if shape else 1
        r = _RNG
        r.seed(self.int(0, 2**16))
        if dtype == np.float32:
            a = r.uniform(-2, 2, n).astype(np.float32)
            if n and self.bool(0.1):
                a[self.int(0, n - 1)] = self.pick([np.nan, np.inf, -np.inf, 3e38])
        else:
            a = r.randint(-1, 6, n).astype(np.int32)
            if n and self.bool(0.1):
                a[self.int(0, n - 1)] = self.pick([-2**31, 2**31 - 1, -5, 100])
        return a.reshape(shape)

    def name(self, pool):
        return self.pick(pool)


_USABLE = []


def check_usable(workspace, core):
    """A small valid net still runs correctly in the current workspace."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    w = np.ones((2, 4), np.float32)
    b = np.array([0.5, -0.5], np.float32)
    workspace.FeedBlob("_ok_x", x)
    workspace.FeedBlob("_ok_w", w)
    workspace.FeedBlob("_ok_b", b)
    if not _USABLE:
        n = core.Net("_usable")
        n.FC(["_ok_x", "_ok_w", "_ok_b"], "_ok_y")
        _USABLE.append(n)
    workspace.RunNetOnce(_USABLE[0])
    y = workspace.FetchBlob("_ok_y")
    assert np.allclose(y, x @ w.T + b, rtol=1e-5, atol=1e-6), y


def main(test_one_input, argv=None):
    """``--replay FILE...``: run the saved inputs (no atheris needed);
    otherwise hand argv to atheris/libFuzzer."""
    argv = list(sys.argv if argv is None else argv)
    if len(argv) > 1 and argv[1] == "--replay":
        for path in argv[2:]:
            with open(path, "rb") as f:
                data = f.read()
            print("replay %s (%d bytes)" % (path, len(data)), flush=True)
            test_one_input(data)
        print("replay ok", flush=True)
        return
    import atheris
    if _INSTRUMENT is not None:
        _INSTRUMENT.__exit__(None, None, None)
    limit_memory()
    # libFuzzer's -jobs / -fork start more fuzzing processes by running argv[0]
    # (plus the flags) through the shell: make it a command that runs this
    # target with this interpreter, not the bare script name
    argv[0] = "%s %s" % (shlex.quote(sys.executable), shlex.quote(os.path.abspath(argv[0])))
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
