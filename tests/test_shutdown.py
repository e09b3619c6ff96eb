"""Interpreter exit while daemon threads are inside RunNet.

Without help the process exits under their running ops (OpenBLAS's
destructor stops its threads and frees its buffers, the interpreter tears
down): measured 7 crashes or hangs in 30 exits. `import recurrent` registers
an atexit handler (`_C._shutdown`) that stops every run at its next op or
timestep and waits for the calls in flight; a run stopped that way raises
RuntimeError in its thread (if that thread ever runs Python again).

Each scenario runs in a child process (a crash or hang is seen as such).
"""

import textwrap

import pytest

from test_fork import run_python

PRELUDE = textwrap.dedent(r'''
    import os, sys, threading, time
    from recurrent import _C, workspace
    from test_executor import build_stack
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])
''')


def run_child(code, *args):
    return run_python(PRELUDE + textwrap.dedent(code), *args, timeout=60)


EXIT_WHILE_RUNNING = '''
    enable, delay = int(sys.argv[1]), float(sys.argv[2])
    net = build_stack("lstm", layers=2, H=128, N=16, D=32, name="bg")
    net.run(20, 3, enable=enable, threads=2)

    def loop():
        workspace.RunNet(net.net, num_iter=100000)

    threading.Thread(target=loop, daemon=True).start()
    time.sleep(delay)
    print("main thread done", flush=True)
'''


@pytest.mark.parametrize("enable", [1, 0], ids=["executor", "serial"])
def test_exit_while_a_daemon_thread_runs(enable):
    """The main thread ends while a daemon thread is inside a long RunNet
    (forward, backward, the weight-gradient GEMMs on OpenBLAS threads): the
    process exits cleanly, every time (exits at different points of the run)."""
    for i in range(6):
        p = run_child(EXIT_WHILE_RUNNING, enable, 0.1 + 0.13 * i)
        assert p.returncode == 0 and "main thread done" in p.stdout, \
            "exit %d: rc %d\nstdout:\n%s\nstderr:\n%s" % (i, p.returncode, p.stdout, p.stderr[-4000:])


def test_shutdown_stops_runs_for_good():
    """_C._shutdown stops a run in flight (its thread gets RuntimeError, not
    KeyboardInterrupt, and no SIGINT reaches the main thread), waits for it,
    and every later run raises the same error."""
    p = run_child('''
        net = build_stack("lstm", layers=2, H=64, N=8, D=16, name="bg")
        net.run(30, 3, enable=1, threads=2)
        errors = []
        started = threading.Event()

        def loop():
            started.set()
            try:
                workspace.RunNet(net.net, num_iter=100000)
            except Exception as e:
                errors.append(e)

        th = threading.Thread(target=loop)
        th.start()
        started.wait()
        time.sleep(0.2)
        assert _C._shutdown(10.0) == 0
        th.join(30)
        assert not th.is_alive()
        assert len(errors) == 1 and type(errors[0]) is RuntimeError, errors
        assert "recurrent is shut down (the interpreter is exiting)" in str(errors[0]), errors
        try:
            workspace.RunNet(net.net)
        except RuntimeError as e:
            assert "shut down" in str(e)
        else:
            raise AssertionError("a run after _shutdown did not raise")
        time.sleep(0.1)  # a stray SIGINT would raise KeyboardInterrupt here
        print("ok", flush=True)
    ''')
    assert p.returncode == 0 and "ok" in p.stdout, "rc %d\n%s\n%s" % (
        p.returncode, p.stdout, p.stderr[-4000:])
