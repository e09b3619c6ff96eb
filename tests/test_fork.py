"""fork() after and during executor runs (multiprocessing's default start
method on Linux, Jupyter, data-loader workers): the child keeps only the
forking thread, so the executor's workers, the packed-product helpers and any
mutex a worker held do not exist there. The child must run the same nets with
the same bits, free them without waiting for threads that are gone, and leave
OpenBLAS's thread count as it found it.

Each scenario runs in a child Python process (a hang or crash is seen as
such), which forks a grandchild; both report on stdout.
"""

import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 120

PRELUDE = textwrap.dedent(r'''
    import os, signal, sys, threading, time
    import numpy as np
    from recurrent import _C, workspace
    from test_executor import assert_bitwise, build_stack
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])

    def fork_and_wait(child, timeout=60):
        """Runs child() in a forked process; returns its exit status (a
        signal number if it was killed: SIGALRM after ``timeout`` s)."""
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            signal.alarm(timeout)
            code = 1
            try:
                child()
                code = 0
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
''')


def run_python(code, *args, timeout=TIMEOUT_S):
    """Runs ``code`` in a child Python that imports the same recurrent as this
    process and the tests' helpers; returns the CompletedProcess (fails the
    test if it hangs past ``timeout``)."""
    import recurrent
    env = dict(os.environ)
    env.pop("RECURRENT_RNN_EXECUTOR", None)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent, HERE, env.get("PYTHONPATH", "")])
    try:
        return subprocess.run([sys.executable, "-c", code] + [str(a) for a in args], env=env, cwd=HERE,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail("hung (killed after %d s); stdout:\n%s\nstderr:\n%s" % (timeout, e.stdout, e.stderr))


def run_child(code):
    p = run_python(PRELUDE + textwrap.dedent(code))
    assert p.returncode == 0, "rc %d\nstdout:\n%s\nstderr:\n%s" % (
        p.returncode, p.stdout[-4000:], p.stderr[-8000:])
    return p.stdout


@pytest.mark.parametrize("threads", [2, 3])
def test_fork_after_executor_runs(threads):
    """The parent's workers exist (idle) when it forks: the child runs the same
    training net (same bits), replaces it by a new one (the old executor is
    freed: no join on threads that are not there), runs that; the parent's net
    still runs afterwards."""
    out = run_child('''
        case = build_stack("lstm", layers=3, H=16, N=4, D=5, name="fk")
        ref = case.run(20, 1, enable=1, threads=%d)
        assert_bitwise(ref, case.run_created(), "parent")
        blas = _C.get_flag("blas_num_threads")

        def child():
            assert_bitwise(ref, case.run_created(), "child, the parent's net")
            case.create(1, threads=%d)
            assert_bitwise(ref, case.run_created(), "child, a new net")
            workspace.ResetWorkspace()
            assert _C.get_flag("blas_num_threads") == blas
            print("child ok")

        assert fork_and_wait(child) == 0
        assert_bitwise(ref, case.run_created(), "parent after the fork")
        print("parent ok")
    ''' % (threads, threads))
    assert "child ok" in out and "parent ok" in out


def test_fork_while_a_run_is_in_flight():
    """Another thread is inside an executor run (GIL released, OpenBLAS at one
    thread, workers busy) when the main thread forks. In the child that run
    does not exist: a net in another workspace runs with the executor and the
    serial path and gives the parent's bits, and OpenBLAS's thread count is
    back to what it was before the parent's run."""
    out = run_child('''
        blas = _C.get_flag("blas_num_threads")
        workspace.SwitchWorkspace("small", True)
        small = build_stack("lstm", layers=2, H=8, N=3, D=4, name="sm")
        ref = small.run(6, 2, enable=1, threads=2)
        workspace.SwitchWorkspace("big", True)
        big = build_stack("lstm", layers=4, H=64, N=8, D=16, name="bg")
        big.run(50, 3, enable=1, threads=2)
        running = threading.Event()

        def loop():
            running.set()
            workspace.RunNet(big.net, num_iter=40)

        th = threading.Thread(target=loop)
        th.start()
        running.wait()
        time.sleep(0.05)

        def child():
            workspace.SwitchWorkspace("small")
            assert_bitwise(ref, small.run_created(), "child, executor")
            assert _C.get_flag("blas_num_threads") == blas, (_C.get_flag("blas_num_threads"), blas)
            small.create(0)
            assert_bitwise(ref, small.run_created(), "child, serial")
            print("child ok")

        forks = 0
        while th.is_alive() and forks < 3:
            assert fork_and_wait(child) == 0
            forks += 1
        th.join()
        assert forks >= 1
        print("parent ok", forks)
    ''')
    assert "child ok" in out and "parent ok" in out
