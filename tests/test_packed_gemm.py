"""Step FCs against a weight packed once per run (csrc/kernels/packed_gemm.c).

RecurrentNetwork(Gradient) packs the weight of every step FC (and of every
FCGradient's dX product) once per run; the step ops then multiply against
the pack instead of calling OpenBLAS, which repacks the weight at every call:
up to 64 rows, and more while the rows times the inner dimension stay within
2^20 floats on the AVX-512 kernel, 2^17 on the AVX2 one (rc_packed_rows_ok;
tests/c/test_packed.c checks the limits). These tests check that the path is taken where it
should be and only there, that results stay those of the OpenBLAS path up to
rounding, that new weights are picked up, and that a weight the step net
writes is never packed. Executor on/off bitwise equality with the packed path
is covered by tests/test_executor.py (it runs packed on an AVX-512 CPU). On
AVX-512 CPUs the step FCs' weight gradients, summed after the loop, use the
same kernel (rc_gemm_wgrad; tests/c/test_packed.c checks it against a
reference)."""

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from recurrent import _C, core, workspace
from recurrent import recurrent as rnn
from test_executor import assert_bitwise, build_stack

needs_packed = pytest.mark.skipif(not _C.get_flag("packed_gemm"),
                                  reason="no AVX-512F (or RECURRENT_PACKED_GEMM=0): the step FCs use OpenBLAS")


def calls():
    """Step products on the packed kernel so far: all its products but those of
    FCs outside step loops that packed their weight themselves."""
    return _C.get_flag("packed_gemm_calls") - _C.get_flag("fc_self_packed")


@needs_packed
@pytest.mark.parametrize("enable", (0, 1))
def test_lstm_step_products_use_the_packed_weight(enable):
    """2-layer LSTM, T=6: per step 3 FCs forward (layer 0 recurrent, layer 1
    input and recurrent) and 3 dX products backward; the layer-0 input
    projection (all T*N rows at once, outside the step net) is not a step
    product (it packs its own weight: see test_fc_packs_its_own_weight).
    Every pack is 64-byte aligned (rc_pack_alloc: a 16-byte aligned pack
    split every AVX-512 load over two cache lines, ~10% slower)."""
    case = build_stack("lstm", layers=2, H=40, N=5, D=7, name="pk%d" % enable)
    case.feed(6, 3)
    case.create(enable, threads=2)
    before, unaligned = calls(), _C.get_flag("packed_unaligned_calls")
    case.run_created()
    assert calls() - before == 6 * 3 + 6 * 3
    assert _C.get_flag("packed_unaligned_calls") == unaligned


@pytest.mark.skipif(not _C.get_flag("packed_wgrad"),
                    reason="no AVX-512F (or RECURRENT_PACKED_GEMM=0 / avx2): the weight gradients use OpenBLAS")
@pytest.mark.parametrize("enable", (0, 1))
def test_weight_gradients_summed_by_our_kernel(enable):
    """2-layer LSTM: the three step FCs' weight gradients (layer 0 recurrent,
    layer 1 input and recurrent) are summed after the loop by rc_gemm_wgrad,
    once each per run, whatever the batch (5, or 70: more than the 64 rows
    every kernel packs)."""
    for N in (5, 70):
        case = build_stack("lstm", layers=2, H=40, N=N, D=7, name="wg%d_%d" % (enable, N))
        case.feed(6, 3)
        case.create(enable, threads=2)
        before, unaligned = _C.get_flag("packed_wgrad_calls"), _C.get_flag("packed_unaligned_calls")
        case.run_created()
        assert _C.get_flag("packed_wgrad_calls") - before == 3
        assert _C.get_flag("packed_unaligned_calls") == unaligned  # their packs too (rc_pack_alloc)


@needs_packed
@pytest.mark.parametrize("enable", (0, 1))
def test_more_than_64_rows(enable):
    """65 rows (a left operand of 65 x 16 and 65 x 64 floats): packed on
    every kernel, serial and executor."""
    case = build_stack("lstm", layers=2, H=16, N=65, D=4, name="wide%d" % enable)
    case.feed(4, 1)
    case.create(enable, threads=2)
    before = calls()
    case.run_created()
    assert calls() - before == 4 * 3 + 4 * 3


@needs_packed
def test_new_weights_are_packed_again():
    """Weights fed between two runs of the same created net: the second run
    equals a freshly created net's run on the new weights, bit for bit."""
    case = build_stack("lstm", layers=3, H=24, N=4, D=6, name="refeed")
    first = case.run(9, 5, enable=1, threads=2)
    case.feed(9, 6)  # new weights, same shapes
    again = case.run_created()
    fresh = case.run(9, 6, enable=1, threads=2)
    assert_bitwise(fresh, again, "re-fed weights")
    assert not np.array_equal(first["x_grad"], again["x_grad"])


_DUMP = r"""
import json, sys
import numpy as np
sys.path.insert(0, %r)
from recurrent import _C, workspace
from test_executor import build_stack
case = build_stack("lstm", layers=2, H=48, N=%d, D=5, name="dump")
out = case.run(11, 4, enable=%d, threads=%d)
print(json.dumps({"packed": _C.get_flag("packed_gemm"), "calls": _C.get_flag("packed_gemm_calls"),
                  "kernel": _C.get_flag("packed_gemm_kernel"), "wgrad_calls": _C.get_flag("packed_wgrad_calls"),
                  "blobs": {k: np.asarray(v, np.float64).ravel().tolist() for k, v in out.items()}}))
"""


def _dump(packed, N=8, enable=0, threads=2):
    """packed: the RECURRENT_PACKED_GEMM value (True: "1", False: "0", or e.g. "avx2")."""
    env = dict(os.environ)
    env["RECURRENT_PACKED_GEMM"] = packed if isinstance(packed, str) else ("1" if packed else "0")
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _DUMP % (here, N, enable, threads)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_packed
@pytest.mark.parametrize("N", (8, 12, 29, 130))
def test_packed_and_openblas_paths_agree(N):
    """The same training run with the packed products and (environment
    RECURRENT_PACKED_GEMM=0) without: equal up to float32 rounding. 8 rows
    take the kernel's 8 x 32 tile, 12 that tile and a 4 x 32 one, 29 its
    6 x 64 tile with 5 rows left over, 130 rows 21 of those tiles and 4
    rows."""
    on, off = _dump(True, N), _dump(False, N)
    assert on["packed"] == 1 and on["calls"] > 0
    assert off["packed"] == 0 and off["calls"] == 0 and off["wgrad_calls"] == 0
    assert on["wgrad_calls"] == (3 if on["kernel"] == "avx512" else 0)
    assert on["blobs"].keys() == off["blobs"].keys()
    for k in on["blobs"]:
        a, b = np.array(on["blobs"][k]), np.array(off["blobs"][k])
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=k)


@needs_packed
@pytest.mark.parametrize("N", (5, 8, 12, 29, 64, 97))
def test_avx2_kernel_gives_the_same_bits(N):
    """RECURRENT_PACKED_GEMM=avx2 runs the AVX2 kernel (what a CPU without
    AVX-512 runs): the same training run, serial and with the executor at 2
    and 3 threads, gives the bits of the CPU's default kernel (one FMA chain
    per element on every kernel). Hidden 48: 4H = 192 columns are 6 full
    panels, the dX products' 48 columns one full and one half panel; 8, 29,
    64 and 97 rows exercise every row remainder of its 6-row tiles, and 97
    its partial panel in two slices of 64 rows; on the AVX-512 kernel 5 rows
    take one 5 x 32 tile and 12 an 8 x 32 and a 4 x 32 one. Except: the
    step FCs' weight gradients, summed after the loop, which an AVX-512 CPU
    computes with rc_gemm_wgrad and an AVX2 one with OpenBLAS (compared up to
    float32 rounding: at 97 rows a sum of ~600 terms of size ~1 that cancels
    to ~0.01 differed by 3e-6 under ASan; every other blob bitwise)."""
    ref = _dump(True, N)
    if ref["kernel"] == "avx2":
        pytest.skip("the CPU's default kernel is the AVX2 one already")
    for enable, threads in ((0, 2), (1, 2), (1, 3)):
        got = _dump("avx2", N, enable, threads)
        if got["kernel"] != "avx2":
            pytest.skip("no AVX2 + FMA on this CPU")
        assert got["calls"] > 0 and got["wgrad_calls"] == 0
        assert got["blobs"].keys() == ref["blobs"].keys()
        for k in ref["blobs"]:
            what = "N=%d enable=%d threads=%d: %s differs" % (N, enable, threads, k)
            if ref["wgrad_calls"] and k.startswith("dump/layer_") and k.endswith("_w_grad"):
                np.testing.assert_allclose(got["blobs"][k], ref["blobs"][k], rtol=1e-4, atol=1e-5, err_msg=what)
            else:
                assert got["blobs"][k] == ref["blobs"][k], what


@pytest.mark.parametrize("value,warns", [("bogus", "is not 0, 1 or avx2"), ("0", None), ("avx2", None)])
def test_packed_gemm_environment_variable(value, warns):
    """RECURRENT_PACKED_GEMM: 0 turns the packed path off, avx2 picks the AVX2
    kernel (on a CPU that has it), anything else warns at import and keeps the
    CPU's best kernel."""
    env = dict(os.environ)
    env["RECURRENT_PACKED_GEMM"] = value
    r = subprocess.run([sys.executable, "-c", "from recurrent import _C; print(_C.get_flag('packed_gemm_kernel'))"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    kernel = r.stdout.split()[-1]
    if warns:
        assert "RuntimeWarning" in r.stderr and warns in r.stderr, r.stderr
        assert kernel == _C.get_flag("packed_gemm_kernel")
    elif value == "0":
        assert kernel == "none" and not r.stderr
    elif kernel == "avx2":
        assert not r.stderr
    else:  # a CPU without AVX2 + FMA: said at import
        assert kernel == "none" and "no AVX2 + FMA" in r.stderr, r.stderr


@needs_packed
@pytest.mark.parametrize("N", (24, 29, 64, 97))
def test_six_row_tiles_executor_bitwise(N):
    """24-97 rows go through the 6 x 64 tile (none, 5, 4 and 1 rows left
    over);
    hidden 40: 4H = 160 columns are two panel pairs and one single panel, and
    the dX products' 40 columns one full and one partial panel. Executor on
    (1-3 threads) and off stay bitwise equal."""
    case = build_stack("lstm", layers=3, H=40, N=N, D=6, name="six%d" % N)
    ref = case.run(7, 2, enable=0)
    before = calls()
    for threads in (1, 2, 3):
        assert_bitwise(ref, case.run(7, 2, enable=1, threads=threads), "N=%d threads=%d" % (N, threads))
    assert calls() > before


def test_weight_written_by_the_step_net_is_not_packed():
    """A step net that scales its FC weight after using it (W_t = W_0 / 2^t):
    every step must see the current weight, so it is never packed."""
    cell = core.Net("scaling_cell")
    input_t, prev = cell.AddExternalInputs("input_t", "o_prev")
    fc = cell.FC([input_t, "W", "b"], "fc_t", axis=2)
    out = cell.Sum([fc, prev], "o_t")
    cell.Scale("W", "W", scale=0.5)
    cell.AddExternalOutput(out)
    net = core.Net("scaling_outer")
    outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "o0")], {prev: out}, scope="sc",
                             forward_only=True)
    rng = np.random.RandomState(0)
    T, N, K, D = 5, 3, 24, 40  # D >= 32: wide enough to be packed (by RecurrentNetwork or the FC) if allowed
    x = rng.uniform(-1, 1, (T, N, K)).astype(np.float32)
    W0 = rng.uniform(-1, 1, (D, K)).astype(np.float32)
    b = rng.uniform(-1, 1, D).astype(np.float32)
    o0 = rng.uniform(-1, 1, (1, N, D)).astype(np.float32)
    for name, v in (("x", x), ("W", W0), ("b", b), ("o0", o0)):
        workspace.FeedBlob(name, v)
    before = _C.get_flag("packed_gemm_calls")  # the FC does not pack its own weight in a step loop either
    workspace.RunNetOnce(net)
    assert _C.get_flag("packed_gemm_calls") == before
    o, ref = o0[0].astype(np.float64), []
    for t in range(T):
        o = x[t] @ (W0.astype(np.float64) * 0.5 ** t).T + b + o
        ref.append(o)
    np.testing.assert_allclose(workspace.FetchBlob(str(outs[0])), np.array(ref), rtol=1e-5, atol=1e-5)


_FORK = r"""
import os, sys
sys.path.insert(0, %r)
from recurrent import _C
from test_executor import build_stack
case = build_stack("lstm", layers=2, H=256, N=16, D=8, name="fk")
ref = case.run(5, 2, enable=0)  # serial path: products split over the helper threads
assert _C.get_flag("blas_num_threads") < 2 or _C.get_flag("packed_gemm_calls") > 0
pid = os.fork()
if pid == 0:
    got = case.run(5, 2, enable=0)  # the child has no helpers: must start its own, not wait forever
    os._exit(0 if all((got[k] == ref[k]).all() for k in ref) else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


@needs_packed
def test_products_after_fork():
    """fork() after the helper threads started: the child's products start
    their own helpers and give the same bits (no hang, no lost helpers)."""
    env = dict(os.environ)
    env["RECURRENT_PACKED_GEMM"] = "1"
    env["OPENBLAS_NUM_THREADS"] = "2"
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _FORK % here], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "child 0"


def _cpuinfo_vendor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _l2_bytes():
    try:
        out = subprocess.run(["getconf", "LEVEL2_CACHE_SIZE"], capture_output=True, text=True, timeout=10)
        return int(out.stdout.strip() or 0)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def test_machine_dependent_choices_are_reported():
    """The two choices the packed kernels make from the CPU (README, "Step weights packed once"):
    the pack size from which row tiles prefetch the next panel (2 MB on AMD, 1 MB elsewhere, 0
    without the x86 kernels) and the weight-gradient sums' pass length (1024 rows where L2 holds
    2 MB, else 256), as get_flag reports them and lstm_benchmark prints them."""
    pf = _C.get_flag("packed_prefetch_min_bytes")
    rows = _C.get_flag("packed_wgrad_pass_rows")
    if platform.machine() in ("x86_64", "AMD64"):
        vendor = _cpuinfo_vendor()
        assert pf == ((2 << 20) if vendor == "AuthenticAMD" else (1 << 20)) or vendor is None
    else:
        assert pf == 0
    assert rows in (256, 1024)
    l2 = _l2_bytes()
    if l2 is not None:
        assert rows == (1024 if l2 >= 2 << 20 else 256), (rows, l2)


@needs_packed
@pytest.mark.parametrize("M,N,K,packs", [
    (800, 1024, 40, True),    # the LSTM benchmark's layer-1 input projection at batch 16
    (16, 1024, 40, True),     # few rows
    (130, 96, 128, True),     # the longest inner dimension it takes, 3 panels
    (70, 33, 1, True),        # K = 1; a partial second panel
    (800, 1024, 129, False),  # K > 128: OpenBLAS
    (800, 31, 40, False),     # fewer outputs than a panel: OpenBLAS
    (2, 64, 40, False),       # 2 rows: packing the weight would cost more than it saves
])
def test_fc_packs_its_own_weight(M, N, K, packs):
    """An FC outside a step loop with a short inner dimension (K <= 128, at
    least 4 rows and 32 outputs) packs its weight itself and runs on our kernel (1.5-2x
    OpenBLAS there, packed_gemm.c); the others stay on OpenBLAS. Either way
    the result is X W^T + b; the pack is 64-byte aligned, and a second run
    (the weight changed in between) packs again."""
    rng = np.random.default_rng(M + N + K)
    X = rng.standard_normal((2, M // 2, K)).astype(np.float32)  # 3-D: flattened at axis 2
    W = rng.standard_normal((N, K)).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    net = core.Net("fc_self_%d_%d_%d" % (M, N, K))
    net.FC(["fx", "fw", "fb"], "fy", axis=2)
    workspace.FeedBlob("fx", X)
    workspace.FeedBlob("fw", W)
    workspace.FeedBlob("fb", b)
    workspace.CreateNet(net, overwrite=True)
    for run in range(2):
        before, unaligned = _C.get_flag("fc_self_packed"), _C.get_flag("packed_unaligned_calls")
        workspace.RunNet(net.Name())
        assert _C.get_flag("fc_self_packed") - before == (1 if packs else 0)
        assert _C.get_flag("packed_unaligned_calls") == unaligned
        y = workspace.FetchBlob("fy")
        ref = X.reshape(-1, K).astype(np.float64) @ W.T.astype(np.float64) + b
        assert y.shape == (2, M // 2, N)
        np.testing.assert_allclose(y.reshape(-1, N), ref, rtol=1e-5, atol=1e-4 * np.sqrt(K))
        W = (W * -0.5).astype(np.float32)
        workspace.FeedBlob("fw", W)
