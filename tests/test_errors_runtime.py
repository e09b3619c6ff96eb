"""Errors the C core reports are also RuntimeErrors (Caffe2 raised RuntimeError for every
op failure, and ported code catches that), keep the builtin they are (ValueError, TypeError,
KeyError, IndexError, MemoryError, OSError) and its name, and fall back to the plain builtin
when recurrent.errors cannot be imported."""

import builtins
import subprocess
import sys

import numpy as np
import pytest

from recurrent import core, errors, workspace


def run(build, **feeds):
    workspace.ResetWorkspace()
    for k, v in feeds.items():
        workspace.FeedBlob(k, v)
    net = core.Net("n")
    build(net)
    workspace.RunNetOnce(net)


f32, i32 = np.float32, np.int32
CASES = [
    ("ValueError", lambda n: n.FC(["x", "w", "b"], "y"),
     dict(x=np.ones((2, 3), f32), w=np.ones((4, 2), f32), b=np.ones(4, f32)), "op FC #0"),
    ("TypeError", lambda n: n.FC(["x", "w", "b"], "y"),
     dict(x=np.ones((2, 3), i32), w=np.ones((4, 3), f32), b=np.ones(4, f32)), "must be float32"),
    ("KeyError", lambda n: n.Relu(["nope"], "y"), {}, "blob 'nope' does not exist"),
    ("IndexError", lambda n: n.Gather(["d", "i"], "y"), dict(d=np.ones((2, 3), f32), i=np.array([5], i32)),
     "out of range"),
    ("MemoryError", lambda n: n.ConstantFill([], "y", shape=[2 ** 40, 2 ** 20]), {}, "op ConstantFill #0"),
    ("OSError", lambda n: n.Load([], ["y"], db="/nonexistent/x.minidb", db_type="minidb", absolute_path=1), {},
     "cannot open"),
]


@pytest.mark.parametrize("kind, build, feeds, msg", CASES, ids=[c[0] for c in CASES])
def test_core_errors_are_runtime_errors(kind, build, feeds, msg):
    builtin = getattr(builtins, kind)
    with pytest.raises(RuntimeError, match=msg) as info:  # what Caffe2 code catches
        run(build, **feeds)
    assert isinstance(info.value, builtin)
    assert type(info.value) is getattr(errors, kind)
    assert type(info.value).__name__ == kind
    # the workspace stays usable
    workspace.FeedBlob("ok", np.ones(2, f32))
    assert workspace.FetchBlob("ok").sum() == 2


def test_step_net_and_executor_errors_are_runtime_errors():
    # an op failing inside a recurrent net's step net, with and without the RNN executor
    from test_executor import build_stack
    for enable in (0, 1):
        workspace.ResetWorkspace()
        case = build_stack(H=4, N=2, D=3, name="rt%d" % enable, kind="lstm", layers=1)
        case.feed(3, 3)
        case.create(enable=enable, threads=2)
        # a wrong-shaped recurrent weight, found by the step net's FC
        workspace.FeedBlob("rt%d/gates_t_w" % enable, np.ones((5, 2), f32))
        with pytest.raises(RuntimeError, match=r"op RecurrentNetwork #1 .*op FC #5 at timestep 0") as info:
            workspace.RunNet(case.net)
        assert type(info.value) is errors.ValueError


def test_workspace_errors_are_runtime_errors():
    # what Caffe2's workspace raised as RuntimeError too: a missing blob or net, an array FeedBlob
    # cannot store, a device this build does not have
    cases = [
        (errors.KeyError, "blob 'no such blob' does not exist", lambda: workspace.FetchBlob("no such blob")),
        (errors.KeyError, "blob 'nope' does not exist", lambda: workspace.blobs["nope"]),
        (errors.KeyError, "net 'nonet' does not exist", lambda: workspace.RunNet("nonet")),
        (errors.TypeError, "unsupported dtype complex64",
         lambda: workspace.FeedBlob("c", np.ones(2, np.complex64))),
        (errors.ValueError, "do not fit in int32", lambda: workspace.FeedBlob("c", np.array([2 ** 40]))),
        (errors.ValueError, "num_iter must be >= 0", lambda: workspace.RunNet("nonet", -1)),
        (errors.KeyError, "workspace 'nows' does not exist", lambda: workspace.SwitchWorkspace("nows")),
    ]
    for cls, msg, call in cases:
        with pytest.raises(RuntimeError, match=msg) as info:
            call()
        assert type(info.value) is cls, (msg, type(info.value))


def test_plain_errors_stay_builtin():
    # interrupts, and errors of building a net in Python, are not RuntimeErrors
    assert not issubclass(KeyboardInterrupt, RuntimeError)
    with pytest.raises(TypeError) as info:
        workspace.FetchBlob(3)
    assert type(info.value) is TypeError
    net = core.Net("n")
    with pytest.raises(AttributeError):
        net.NoSuchOpType([], "y")


def test_fallback_without_the_errors_module():
    code = (
        "import sys, numpy as np\n"
        "from recurrent import core, workspace\n"
        "sys.modules['recurrent.errors'] = None  # import now fails\n"
        "import recurrent; recurrent.__dict__.pop('errors', None)\n"
        "n = core.Net('n'); n.Relu(['nope'], 'y')\n"
        "try:\n"
        "    workspace.RunNetOnce(n)\n"
        "except KeyError as e:\n"
        "    print(type(e) is KeyError, isinstance(e, RuntimeError))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]
