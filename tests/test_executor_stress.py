"""Stress of the RNN executor (issue 4): hundreds of runs with random sequence
lengths (0..40) and random thread counts (1..6), forward and backward,
executor on vs the serial path bit for bit; random failing timesteps
(forward and backward) mixed with good runs; runs whose step products
idle threads help with (random T, threads and helping switch); and nets
under the automatic choice between the executor and the serial loop.

Each loop runs in a child process (this file run as a script) under a hang
guard: every iteration re-arms a faulthandler watchdog, so an iteration that
takes more than ITER_WATCHDOG_S (a deadlock) dumps the Python stacks and exits,
and the parent kills the child after TIMEOUT_S. The guard is per iteration, not
per loop, because a loaded machine slows the whole loop several-fold (CI once
ran the helping loop under ASan beside two other busy processes: past the old
300 s whole-loop guard with every iteration still progressing), while a
deadlock stops one iteration for good. The child writes its progress to stderr
(shown when it fails) and prints one JSON line of counts.
Reproduce a failure with ``python tests/test_executor_stress.py <loop> <seed> <iters>``.
"""

import faulthandler
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# Under a sanitizer (tools/asan_pytest.sh sets ASAN_OPTIONS, tools/tsan_pytest.sh TSAN_OPTIONS)
# everything runs several times slower (the helping loop: ~9 s in a Release build, ~100 s under
# ASan, alone on 2 cores; ~180 s under TSan, RelWithDebInfo, on 2 shared cores).
SLOW = 4 if os.environ.get("ASAN_OPTIONS") or os.environ.get("TSAN_OPTIONS") else 1
ITER_WATCHDOG_S = 60 * SLOW  # one iteration: two runs of a small net (well under a second)
TIMEOUT_S = 600 * SLOW  # the whole loop, however loaded the machine: the parent's last resort


def run_child(loop, seed, iters):
    env = dict(os.environ)
    env.pop("RECURRENT_RNN_EXECUTOR", None)
    import recurrent  # the child imports the same package as this process (installed, staged or in place)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env["PYTHONPATH"] = pkg_parent + os.pathsep + os.path.dirname(os.path.abspath(__file__)) + os.pathsep + \
        env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), loop, str(seed), str(iters)]
    try:
        p = subprocess.run(cmd, env=env, cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail("stress loop %r hung (killed after %d s); stderr:\n%s" % (loop, TIMEOUT_S, e.stderr))
    assert p.returncode == 0, "stress loop %r failed (rc %d):\n%s\n%s" % (
        loop, p.returncode, p.stdout[-4000:], p.stderr[-8000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_stress_random_T_and_threads_bitwise():
    res = run_child("bitwise", 20240601, 300)
    assert res["runs"] == 300
    assert res["training"] > 150 and res["forward_only"] > 50
    assert set(res["threads"]) == {str(k) for k in range(1, 7)}
    assert res["T0"] > 0


def test_stress_random_failures():
    res = run_child("failures", 777, 200)
    assert res["runs"] == 200
    assert res["forward_failures"] > 30 and res["backward_failures"] > 30 and res["good"] > 30
    assert set(res["threads"]) == {str(k) for k in range(1, 7)}


def test_stress_helping_bitwise():
    """Step products big enough to be split for idle threads (helping):
    random T, threads and the helping switch, bitwise equal to serial."""
    res = run_child("helping", 4242, 300)
    assert res["runs"] == 300
    assert set(res["threads"]) == {str(k) for k in range(1, 5)}
    if res["num_cores"] >= 2:
        assert res["helped_parts"] > 0


def test_stress_automatic_choice_bitwise():
    """Nets under the automatic choice (timed serial runs, the parallelism
    check, the trial alternating executor and serial runs), re-created now
    and then with random settings: random T and threads, every run bitwise
    equal to the serial net, and trials that ran to their decision."""
    res = run_child("automatic", 99, 400)
    assert res["runs"] == 400
    assert {"trying", "executor", "serial"} <= set(res["modes"]), res["modes"]
    assert res["trials_decided"] > 5 and res["recreated"] > 10, res


def test_stress_interrupts():
    """SIGINT while the executor runs a long sequence: KeyboardInterrupt, no
    hang, and the next runs are correct (bitwise equal to the serial run)."""
    res = run_child("interrupts", 5, 12)
    assert res["interrupted"] == 12
    assert res["in_run"] >= 6  # most interrupts land inside RunNet (the loop does little else)


# ================================================================ the child
def _create_nets(tx, workspace, cases, max_threads, num_workspaces=None):
    """For every case, clones of its net created serially (threads 0) and with
    the executor at 1..max_threads threads: {(kind, threads): net}.
    ``num_workspaces(kind, threads)`` gives a net's num_workspaces (None: the default)."""
    nets = {}
    for kind, case in cases.items():
        case.feed(3, 0)
        for threads in range(0, max_threads + 1):
            net = case.net.Clone("%s_%d" % (case.net.Proto().name, threads))
            nws = num_workspaces(kind, threads) if num_workspaces else None
            tx.configure(net, threads > 0, threads or None, num_workspaces=nws)
            workspace.CreateNet(net, overwrite=True)
            nets[kind, threads] = net
    return nets


def _bitwise_loop(tx, workspace, rng, iters):
    """Pre-created nets (serial, and executor with 1..6 threads) of a 3-layer
    LSTM with loss and gradients, and of a forward-only one; each run feeds
    random inputs with a random T, runs the serial net and a random executor
    net and compares every output and gradient. Now and then an executor net
    is re-created (new ops, new worker threads). All nets of a model share
    the step-workspaces blob, so switching nets re-instantiates step nets."""
    cases = {
        "training": tx.build_stack("lstm", layers=3, H=8, N=3, D=5, name="st"),
        "forward_only": tx.build_stack("lstm", layers=3, H=8, N=3, D=5, name="sf", forward_only=True),
    }
    nets = _create_nets(tx, workspace, cases, 6,
                        lambda kind, threads: int(rng.randint(1, 5)) if kind == "forward_only" and threads else None)
    counts = {"runs": 0, "training": 0, "forward_only": 0, "T0": 0, "threads": {}}
    for i in _iterations(iters):
        kind = "training" if rng.rand() < 0.65 else "forward_only"
        case = cases[kind]
        T = int(rng.randint(0, 41))
        threads = int(rng.randint(1, 7))
        seed = int(rng.randint(1 << 30))
        case.feed(T, seed)
        if rng.rand() < 0.1:
            workspace.CreateNet(nets[kind, threads], overwrite=True)
        results = []
        for net in (nets[kind, 0], nets[kind, threads]):
            case.poison()
            workspace.RunNet(net)
            results.append(case.fetch())
        ctx = "run %d: %s T=%d threads=%d seed=%d" % (i, kind, T, threads, seed)
        tx.assert_bitwise(results[0], results[1], ctx)
        counts["runs"] += 1
        counts[kind] += 1
        counts["T0"] += T == 0
        counts["threads"][threads] = counts["threads"].get(threads, 0) + 1
    return counts


def _failure_loop(tx, workspace, rng, iters):
    """LabelRNN (tests/test_executor.py): per run a random T (1..40), random
    threads, and with probability 2/3 one to three bad labels at random
    timesteps, in the forward or the backward pass. The executor's exception
    must be the serial one; every good run (and the run after each failure)
    must equal the serial results bit for bit."""
    lab = tx.LabelRNN(N=2, name="stress")
    counts = {"runs": 0, "forward_failures": 0, "backward_failures": 0, "good": 0, "threads": {}}
    # serial nets: clones of the executor nets (same blobs, same step-workspaces blob)
    serial = (lab.fwd.Clone("stress_serial_fwd"), lab.bwd.Clone("stress_serial_bwd"))
    lab.feed(2, 0)
    for net in serial:
        tx.configure(net, 0)
        workspace.CreateNet(net, overwrite=True)
        if net is serial[0]:
            workspace.RunNet(net)
    threads_now = None
    for i in _iterations(iters):
        T = int(rng.randint(1, 41))
        # keep the executor nets for a few runs (reuse after failures), then switch
        threads = threads_now if threads_now and rng.rand() < 0.7 else int(rng.randint(1, 7))
        seed = int(rng.randint(1 << 30))
        u = rng.rand()
        direction = "good" if u < 1 / 3 else ("forward" if u < 2 / 3 else "backward")
        k = int(rng.randint(1, 4))
        bad = [(int(rng.randint(0, T)), int(rng.randint(0, 2))) for _ in range(k)]
        value = int(rng.choice([-1, 5, 6, 1000, -100]))
        ctx = "run %d: %s T=%d threads=%d seed=%d bad=%r value=%d" % (
            i, direction, T, threads, seed, bad, value)
        lab.feed(T, seed)
        if threads != threads_now:
            lab.create(1, threads)  # new executor nets (the old ones and their workers are freed)
            threads_now = threads
        out = []
        for nets in (serial, (lab.fwd, lab.bwd)):
            msg = str(lab.fail(direction, bad, value, nets)) if direction != "good" else None
            out.append((msg, lab.run_good(nets)))
        (msg_s, good_s), (msg_x, good_x) = out
        assert msg_s == msg_x, "%s\nserial:   %s\nexecutor: %s" % (ctx, msg_s, msg_x)
        if direction != "good":
            expect_t = min(t for t, _ in bad) if direction == "forward" else max(t for t, _ in bad)
            assert "at timestep %d:" % expect_t in msg_s, (ctx, msg_s)
        tx.assert_bitwise(good_s, good_x, ctx)
        counts["runs"] += 1
        counts["good" if direction == "good" else direction + "_failures"] += 1
        counts["threads"][threads] = counts["threads"].get(threads, 0) + 1
    return counts


def _helping_loop(tx, workspace, rng, iters):
    """A 2-layer LSTM at hidden 256 / batch 16 (its gate products, 16 x 1024 x
    256, are posted in 4 parts for idle threads to take) and a forward-only
    one-layer GRU at hidden 256 / batch 24; random T (0..20), threads (1..4)
    and helping on or off per run; every output and gradient bitwise equal
    to the serial run."""
    from recurrent import _C
    cases = {
        "lstm2": tx.build_stack("lstm", layers=2, H=256, N=16, D=16, name="hl"),
        "gru1_fwd": tx.build_stack("gru", layers=1, H=256, N=24, D=16, name="hg", forward_only=True),
    }
    nets = _create_nets(tx, workspace, cases, 4)
    counts = {"runs": 0, "threads": {}, "num_cores": _C.get_flag("num_cores")}
    before = _C.get_flag("executor_help_parts")
    for i in _iterations(iters):
        kind = "lstm2" if rng.rand() < 0.7 else "gru1_fwd"
        case = cases[kind]
        T = int(rng.randint(0, 21))
        threads = int(rng.randint(1, 5))
        on = int(rng.rand() < 0.8)
        seed = int(rng.randint(1 << 30))
        case.feed(T, seed)
        results = []
        for net in (nets[kind, 0], nets[kind, threads]):
            _C.set_flag("rnn_executor_help", on)
            case.poison()
            workspace.RunNet(net)
            results.append(case.fetch())
        _C.set_flag("rnn_executor_help", 1)
        tx.assert_bitwise(results[0], results[1], "run %d: %s T=%d threads=%d help=%d seed=%d"
                          % (i, kind, T, threads, on, seed))
        counts["runs"] += 1
        counts["threads"][threads] = counts["threads"].get(threads, 0) + 1
    counts["helped_parts"] = _C.get_flag("executor_help_parts") - before
    return counts


def _automatic_loop(tx, workspace, rng, iters):
    """A 2-layer LSTM with loss and gradients and a forward-only 2-layer GRU
    (hidden 16, batch 4), each with a serial net and a net under the
    automatic choice, re-created with probability 0.08 per run (and at
    first) with random threads (1..4), min_op_us (1e6: the ops are under it
    and, with trial, try both; 0.001: the executor, then the parallelism
    check), min_parallelism (0, 2.5, 100) and trial (on 80%); random T
    (0..20: runs under 8 steps do not count in a trial). Every output and
    gradient bitwise equal to the serial net's; counts the modes seen and
    the trials that reached their decision."""
    from recurrent import recurrent as rnn
    from recurrent import trace
    cases = {
        "training": tx.build_stack("lstm", layers=2, H=16, N=4, D=5, name="au"),
        "forward_only": tx.build_stack("gru", layers=2, H=16, N=4, D=5, name="auf", forward_only=True),
    }
    serial = _create_nets(tx, workspace, cases, 0)
    auto = {}
    counts = {"runs": 0, "modes": {}, "trials_decided": 0, "recreated": 0}

    def recreate(kind):
        threads = int(rng.randint(1, 5))
        cfg = dict(min_op_us=float(rng.choice([1e6, 0.001])), min_parallelism=float(rng.choice([0, 2.5, 100])),
                   trial=bool(rng.rand() < 0.8))
        net = cases[kind].net.Clone("%s_auto" % cases[kind].net.Proto().name)
        tx.configure(net, True, threads)
        for op in net.Proto().op:
            if op.type.startswith("RecurrentNetwork"):
                rnn.set_rnn_executor_config(op, **cfg)
        workspace.CreateNet(net, overwrite=True)
        auto[kind] = (net, threads, cfg)
        counts["recreated"] += 1

    for i in _iterations(iters):
        kind = "training" if rng.rand() < 0.6 else "forward_only"
        case = cases[kind]
        if kind not in auto or rng.rand() < 0.08:
            if kind in auto:  # the trials of the net replaced
                counts["trials_decided"] += sum(st["tried_runs"] == 4 and st["mode"] != "trying"
                                                for st in trace.executor_status(auto[kind][0]))
            recreate(kind)
        net, threads, cfg = auto[kind]
        T = int(rng.randint(0, 21))
        seed = int(rng.randint(1 << 30))
        case.feed(T, seed)
        results = []
        for n in (serial[kind, 0], net):
            case.poison()
            workspace.RunNet(n)
            results.append(case.fetch())
        tx.assert_bitwise(results[0], results[1], "run %d: %s T=%d threads=%d %r seed=%d"
                          % (i, kind, T, threads, cfg, seed))
        for st in trace.executor_status(net):
            counts["modes"][st["mode"]] = counts["modes"].get(st["mode"], 0) + 1
        counts["runs"] += 1
    for net, _, _ in auto.values():
        counts["trials_decided"] += sum(st["tried_runs"] == 4 and st["mode"] != "trying"
                                        for st in trace.executor_status(net))
    return counts


def _interrupt_loop(tx, workspace, rng, iters):
    """A 4-layer LSTM (T=300) with the executor (random threads 2..6) run in a
    loop; a timer thread sends SIGINT after a random delay; after the
    KeyboardInterrupt the net must give the serial results."""
    import signal
    import threading
    case = tx.build_stack("lstm", layers=4, H=16, N=4, D=8, name="intr")
    T = 300
    ref = case.run(T, 1, enable=0)
    counts = {"interrupted": 0, "in_run": 0, "runs_between": []}
    for i in _iterations(iters):
        case.create(1, threads=int(rng.randint(2, 7)))
        if i % 2:
            case.run_created()  # warm: the interrupted run reuses the cached graph
        in_run = [False]
        timer = threading.Timer(float(rng.uniform(0.01, 0.15)), os.kill, (os.getpid(), signal.SIGINT))
        t0 = time.time()
        n = 0
        timer.start()
        try:
            while time.time() - t0 < 20:
                in_run[0] = True
                workspace.RunNet(case.net)
                in_run[0] = False
                n += 1
            raise AssertionError("iteration %d: no KeyboardInterrupt within 20 s" % i)
        except KeyboardInterrupt:
            counts["interrupted"] += 1
            counts["in_run"] += in_run[0]
        timer.join()
        counts["runs_between"].append(n)
        tx.assert_bitwise(ref, case.run_created(), "after interrupt %d" % i)
        tx.assert_bitwise(ref, case.run_created(), "second run after interrupt %d" % i)
    return counts


_T0 = time.monotonic()


def _progress(i, iters):
    sys.stderr.write("progress: %d of %d iterations, %.1f s\n" % (i, iters, time.monotonic() - _T0))
    sys.stderr.flush()


def _iterations(iters):
    """range(iters), re-arming the watchdog before each iteration (see the module's doc)."""
    for i in range(iters):
        if i % 25 == 0:
            _progress(i, iters)
        faulthandler.dump_traceback_later(ITER_WATCHDOG_S, exit=True)
        yield i


def main(argv):
    loop, seed, iters = argv[1], int(argv[2]), int(argv[3])
    sys.path.insert(0, HERE)
    import test_executor as tx
    from recurrent import workspace
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])
    rng = np.random.RandomState(seed)
    fn = {"bitwise": _bitwise_loop, "failures": _failure_loop, "interrupts": _interrupt_loop,
          "helping": _helping_loop, "automatic": _automatic_loop}[loop]
    counts = fn(tx, workspace, rng, iters)
    faulthandler.cancel_dump_traceback_later()
    _progress(iters, iters)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
