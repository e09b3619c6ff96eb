"""The rest of Caffe2's workspace API: RegisteredOperators, ResetBlob, GetBlobSizeBytes, the NUMA and
no-GPU answers, Stringify*/GetNetName, RunOperatorMultiple, BenchmarkNet(Once), RootFolder and
ResetWorkspace(root_folder) (Save, Load, Print to_file), immediate mode, FetchTorch."""

import os
import re
import time
import warnings

import numpy as np
import pytest

from recurrent import _C, brew, core, errors, model_helper, workspace


@pytest.fixture(autouse=True)
def fresh():
    workspace.ResetWorkspace(".")
    yield
    workspace.StopImmediate()
    workspace.ResetWorkspace(".")


# ---------------------------------------------------------------- small answers
def test_registered_operators_sorted_and_complete():
    ops = workspace.RegisteredOperators()
    assert ops == sorted(ops)
    assert set(ops) == set(core.RegisteredOperators())
    for t in ("FC", "RecurrentNetwork", "LSTMUnit", "Save"):
        assert t in ops


def test_build_and_device_answers():
    assert workspace.is_asan is _C.is_asan and isinstance(workspace.is_asan, bool)
    assert workspace.GetCUDAVersion() == 0 and workspace.GetCuDNNVersion() == 0
    assert workspace.GetDeviceProperties(0) is None and workspace.GetGPUMemoryInfo() is None
    pattern = workspace.GetGpuPeerAccessPattern()
    assert isinstance(pattern, np.ndarray) and pattern.size == 0
    assert workspace.IsNUMAEnabled() is False and workspace.GetNumNUMANodes() == -1


def test_blob_numa_node_and_size():
    workspace.FeedBlob("f", np.zeros((3, 5), np.float32))
    workspace.FeedBlob("i", np.zeros(7, np.int32))
    workspace.FeedBlob("e", np.zeros((0, 4), np.float32))
    workspace.CreateBlob("u")
    assert workspace.GetBlobSizeBytes("f") == 60
    assert workspace.GetBlobSizeBytes(core.BlobReference("i")) == 28
    assert workspace.GetBlobSizeBytes("e") == 0
    assert workspace.GetBlobSizeBytes("u") == 0
    assert workspace.GetBlobNUMANode("f") == -1
    with pytest.raises(errors.ValueError, match="'e' is an empty tensor"):
        workspace.GetBlobNUMANode("e")
    with pytest.raises(errors.TypeError, match="'u' holds no tensor"):
        workspace.GetBlobNUMANode("u")
    for f in (workspace.GetBlobSizeBytes, workspace.GetBlobNUMANode):
        with pytest.raises(KeyError, match="'nope' does not exist"):
            f("nope")


def test_stringify_names():
    net = core.Net("mynet")
    assert workspace.StringifyBlobName("a") == "a"
    assert workspace.StringifyBlobName(core.BlobReference("s/b")) == "s/b"
    assert workspace.StringifyNetName("n") == "n" and workspace.StringifyNetName(net) == "mynet"
    assert workspace.GetNetName("n") == "n" and workspace.GetNetName(net) == "mynet"
    assert workspace.GetNetName(net.Proto()) == "mynet"
    with pytest.raises(TypeError, match="BlobReference"):
        workspace.StringifyBlobName(3)
    with pytest.raises(TypeError, match="string or Net"):
        workspace.StringifyNetName(core.BlobReference("x"))
    with pytest.raises(TypeError, match="Not a Net"):
        workspace.GetNetName(5)


# ---------------------------------------------------------------- ResetBlob
def test_reset_blob_then_ops_refuse_it_until_fed():
    workspace.FeedBlob("x", np.arange(6, dtype=np.float32).reshape(2, 3))
    net = core.Net("relu")
    net.Relu("x", "y")
    workspace.CreateNet(net)
    workspace.RunNet(net)
    assert workspace.ResetBlob("x") is True
    assert workspace.HasBlob("x")
    assert workspace.FetchBlob("x") == b"x, a C++ native class of type nullptr (uninitialized)."
    with pytest.raises(RuntimeError, match="x"):
        workspace.RunNet(net)
    workspace.FeedBlob("x", -np.ones((4,), np.float32))
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.zeros(4, np.float32))
    workspace.CreateBlob("empty")
    workspace.ResetBlob("empty")  # already empty: fine
    assert workspace.GetBlobSizeBytes("empty") == 0


def test_reset_blob_errors():
    with pytest.raises(KeyError, match="ResetBlob: blob 'nope' does not exist"):
        workspace.ResetBlob("nope")
    workspace.RunOperatorOnce(core.CreateOperator("CreateMutex", [], ["m"]))
    with pytest.raises(errors.TypeError, match="'m' holds a Mutex"):
        workspace.ResetBlob("m")
    assert workspace.FetchBlob("m") == b"m, a C++ native class of type Mutex."


# ---------------------------------------------------------------- RunOperatorMultiple
def test_run_operator_multiple_keeps_state():
    workspace.FeedBlob("it", np.array([10], np.int32))
    op = core.CreateOperator("Iter", [], ["it"])
    assert workspace.RunOperatorMultiple(op, 7) is True
    assert workspace.FetchBlob("it")[0] == 17
    workspace.RunOperatorMultiple(op.SerializeToString(), 0)
    assert workspace.FetchBlob("it")[0] == 17
    workspace.RunOperatorOnce(op)
    assert workspace.FetchBlob("it")[0] == 18


def test_run_operator_multiple_errors():
    with pytest.raises(ValueError, match="num_runs must be >= 0"):
        workspace.RunOperatorMultiple(core.CreateOperator("Iter", [], ["it"]), -1)
    with pytest.raises(TypeError, match="OperatorDef"):
        workspace.RunOperatorMultiple("Iter", 2)
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    workspace.FeedBlob("w", np.ones((4, 2), np.float32))
    workspace.FeedBlob("b", np.ones(4, np.float32))
    with pytest.raises(errors.ValueError, match="FC"):
        workspace.RunOperatorMultiple(core.CreateOperator("FC", ["x", "w", "b"], ["y"]), 3)
    workspace.FeedBlob("w", np.ones((4, 3), np.float32))
    workspace.RunOperatorMultiple(core.CreateOperator("FC", ["x", "w", "b"], ["y"]), 2)  # usable after
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.full((2, 4), 4, np.float32))


# ---------------------------------------------------------------- BenchmarkNet
def _sleep(inputs, outputs):
    time.sleep(0.02)


def test_benchmark_net_times_each_op():
    workspace.FeedBlob("it", np.zeros(1, np.int32))
    net = core.Net("bench")
    net.Iter([], ["it"])
    net.Python(_sleep)([], [])
    net.Copy("it", "it_copy")
    workspace.CreateNet(net)
    res = workspace.BenchmarkNet(net.Name(), 1, 2, True)
    assert len(res) == 4 and all(isinstance(v, float) for v in res)
    assert workspace.FetchBlob("it")[0] == 1 + 2 + 2  # warmup, main, op-by-op runs
    assert res[0] >= 20 and res[2] >= 20  # the net and the sleeping op, in ms
    assert 0 <= res[1] < res[2] and 0 <= res[3] < res[2]
    res = workspace.BenchmarkNet(net, 0, 1, False)  # a Net names its net
    assert res[0] >= 20 and res[1:] == [0.0, 0.0, 0.0]
    assert workspace.FetchBlob("it")[0] == 6
    once = workspace.BenchmarkNetOnce(net.Name())
    assert isinstance(once, float) and once >= 20
    assert workspace.FetchBlob("it")[0] == 7


def test_benchmark_net_errors():
    with pytest.raises(KeyError, match="net 'nope' does not exist"):
        workspace.BenchmarkNet("nope", 0, 1, False)
    net = core.Net("b")
    net.ConstantFill([], "c", shape=[1], value=1.0)
    workspace.CreateNet(net)
    with pytest.raises(errors.ValueError, match="main_runs >= 1"):
        workspace.BenchmarkNet(net, 0, 0, False)
    with pytest.raises(errors.ValueError, match="warmup_runs must be >= 0"):
        workspace.BenchmarkNet(net, -1, 1, False)
    workspace.FeedBlob("x", np.ones((5,), np.float32))
    bad = core.Net("bad")
    bad.Reshape("x", ["y", "old"], shape=[5])
    workspace.CreateNet(bad)
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))  # now it cannot reshape
    with pytest.raises(errors.ValueError, match="BenchmarkNet: main run 0 failed: .*Reshape"):
        workspace.BenchmarkNet(bad, 0, 1, False)
    workspace.FeedBlob("x", np.ones((5,), np.float32))
    assert len(workspace.BenchmarkNet(bad, 0, 1, True)) == 2  # usable after


# ---------------------------------------------------------------- root folder
def test_root_folder_places_save_load_and_print(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert workspace.RootFolder() == "."
    assert workspace.ResetWorkspace("r/sub") is True
    assert workspace.RootFolder() == "r/sub" and os.path.isdir("r/sub")
    workspace.FeedBlob("x", np.arange(4, dtype=np.float32))
    net = core.Net("save")
    net.Save(["x"], [], db="ck.minidb", db_type="minidb")
    net.Print("x", [], to_file=1)
    workspace.RunNetOnce(net)
    assert sorted(os.listdir("r/sub")) == ["ck.minidb", "x.log"]
    assert os.listdir(".") == ["r"]
    workspace.ResetBlob("x")
    load = core.Net("load")
    load.Load([], ["x"], db="ck.minidb", db_type="minidb")
    workspace.RunNetOnce(load)
    np.testing.assert_array_equal(workspace.FetchBlob("x"), np.arange(4, dtype=np.float32))
    load2 = core.Net("load2")
    load2.Load([], ["x"], dbs=["ck.minidb"], db_type="minidb")
    workspace.RunNetOnce(load2)
    # absolute_path=1: as given, against the current directory
    load3 = core.Net("load3")
    load3.Load([], ["x"], db="ck.minidb", db_type="minidb", absolute_path=1)
    with pytest.raises(errors.OSError, match="cannot open 'ck.minidb'"):
        workspace.RunNetOnce(load3)
    # an absolute path is used as given (Caffe2 put the root folder in front of it too)
    abs_db = str(tmp_path / "abs.minidb")
    save_abs = core.Net("save_abs")
    save_abs.Save(["x"], [], db=abs_db, db_type="minidb")
    workspace.RunNetOnce(save_abs)
    assert os.path.isfile(abs_db)
    # the error names the file it tried
    missing = core.Net("missing")
    missing.Load([], ["x"], db="gone.minidb", db_type="minidb")
    with pytest.raises(errors.OSError, match="cannot open 'r/sub/gone.minidb'"):
        workspace.RunNetOnce(missing)


def test_root_folder_kept_by_reset_and_per_workspace(tmp_path):
    root = str(tmp_path / "root")
    workspace.ResetWorkspace(root)
    workspace.ResetWorkspace()
    assert workspace.RootFolder() == root
    workspace.SwitchWorkspace("other_root_ws", True)
    try:
        assert workspace.RootFolder() == "."
    finally:
        workspace.SwitchWorkspace("default")
        workspace.ResetWorkspace(".")
    assert workspace.RootFolder() == "."
    with pytest.raises(ValueError, match="must not be empty"):
        workspace.ResetWorkspace("")
    workspace.ResetWorkspace(tmp_path / "pathlike")  # os.PathLike
    assert workspace.RootFolder() == str(tmp_path / "pathlike")


@pytest.mark.parametrize("root, shown", [
    ("a\x00b", r"'a\\x00b' contains a NUL character"),
    (b"a\x00b", r"'a\\x00b' contains a NUL character"),
    ("sub/a\x00b", r"'sub/a\\x00b' contains a NUL character"),
    (b"r\xff", r"'r\\udcff' is not valid UTF-8"),    # bytes that are not UTF-8: no C string for them
    ("r\udcff", r"'r\\udcff' is not valid UTF-8"),
])
def test_reset_workspace_root_folder_the_runtime_cannot_keep(tmp_path, monkeypatch, root, shown):
    """The binding's error for names (before, os.makedirs's own ValueError, or a UnicodeEncodeError
    after the workspace was emptied), before anything changes: the blobs, the nets and the root folder
    stay, no folder is made."""
    monkeypatch.chdir(tmp_path)
    workspace.ResetWorkspace("kept")
    workspace.FeedBlob("x", np.ones(2, np.float32))
    net = core.Net("kept_net")
    net.Scale("x", "y")
    workspace.CreateNet(net)
    with pytest.raises(errors.ValueError, match=r"^root folder: " + shown + r".*, which this runtime does not take"):
        workspace.ResetWorkspace(root)
    if isinstance(root, str):
        with pytest.raises(errors.ValueError, match=r"^root folder: "):
            workspace.ResetWorkspace(tmp_path / root)  # os.PathLike
    assert workspace.HasBlob("x") and workspace.RootFolder() == "kept" and workspace.Nets() == [net.Name()]
    assert os.listdir(".") == ["kept"]


def test_reset_workspace_root_folder_that_cannot_be_made(tmp_path, monkeypatch):
    """os.makedirs's own error (a file in the way); the workspace and its root folder stay."""
    monkeypatch.chdir(tmp_path)
    workspace.ResetWorkspace("kept")
    workspace.FeedBlob("x", np.ones(2, np.float32))
    open("file", "w").close()
    with pytest.raises(OSError):
        workspace.ResetWorkspace("file/sub")
    assert workspace.HasBlob("x") and workspace.RootFolder() == "kept"


def test_names_without_utf8_are_refused_as_names_with_nul():
    with pytest.raises(errors.ValueError, match=r"^blob name: 'a\\udcff' is not valid UTF-8"):
        workspace.FeedBlob("a\udcff", np.ones(2, np.float32))
    with pytest.raises(errors.ValueError, match=r"^blob name: 'a\\udcff' is not valid UTF-8"):
        workspace.HasBlob("a\udcff")
    assert workspace.Blobs() == []


# ---------------------------------------------------------------- immediate mode
def test_immediate_mode_runs_ops_as_they_are_made():
    workspace.FeedBlob("data", np.full((2, 4), 9, np.float32))  # the default workspace's: untouched
    with pytest.warns(RuntimeWarning, match="immediate mode"):
        workspace.StartImmediate()
    assert workspace.IsImmediate()
    workspace.FeedImmediate("data", np.ones((2, 4), np.float32))
    m = model_helper.ModelHelper("m")
    brew.fc(m, "data", "fc", 4, 3)
    assert set(workspace.ImmediateBlobs()) == {"data", "fc_w", "fc_b", "fc"}
    w, b = workspace.FetchImmediate("fc_w"), workspace.FetchImmediate("fc_b")
    np.testing.assert_allclose(workspace.FetchImmediate("fc"), np.ones((2, 4)) @ w.T + b, rtol=1e-5, atol=1e-6)
    assert not workspace.HasBlob("fc") and workspace.CurrentWorkspace() == "default"
    np.testing.assert_array_equal(workspace.FetchBlob("data"), np.full((2, 4), 9, np.float32))
    # a failing op raises when it is made; the mode stays on
    with pytest.raises(KeyError, match="missing_input"):
        m.net.Relu("missing_input", "r")
    assert workspace.IsImmediate() and workspace.CurrentWorkspace() == "default"
    # the backward pass is built, not run (its seed and its gradient ops)
    m.net.SquaredL2Distance(["fc", "fc"], "d")
    m.net.AveragedLoss("d", "loss")
    m.AddGradientOperators(["loss"])
    assert set(workspace.ImmediateBlobs()) == {"data", "fc_w", "fc_b", "fc", "d", "loss"}
    assert any(op.type == "FCGradient" for op in m.net.Proto().op)
    workspace.StopImmediate()
    assert not workspace.IsImmediate()
    with workspace.WorkspaceGuard("_CAFFE2_IMMEDIATE"):
        assert workspace.Blobs() == [] and workspace.RootFolder() == "."
    # ops are not run any more
    m.net.Relu("missing_input", "r2")
    workspace.StopImmediate()  # off already: no-op


def test_immediate_mode_root_folder_is_temporary_and_removed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        workspace.StartImmediate(i_know=True)  # no warning
    with workspace.WorkspaceGuard("_CAFFE2_IMMEDIATE"):
        root = workspace.RootFolder()
    assert os.path.isdir(root) and root != "."
    workspace.FeedImmediate("x", np.ones(3, np.float32))
    core.Net("s").Save(["x"], [], db="x.minidb", db_type="minidb")
    assert os.path.isfile(os.path.join(root, "x.minidb"))
    workspace.StartImmediate(i_know=True)  # again: afresh
    assert not os.path.exists(root) and workspace.ImmediateBlobs() == []
    workspace.StopImmediate()


def test_workspace_guard_switches_back_on_error():
    with pytest.raises(ZeroDivisionError):
        with workspace.WorkspaceGuard("guarded_ws"):
            assert workspace.CurrentWorkspace() == "guarded_ws"
            1 / 0
    assert workspace.CurrentWorkspace() == "default"


# ---------------------------------------------------------------- FetchTorch
def test_fetch_torch():
    torch = pytest.importorskip("torch")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    workspace.FeedBlob("a", a)
    t = workspace.FetchTorch("a")
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    np.testing.assert_array_equal(t.numpy(), a)
    workspace.FeedBlob("i", np.array([1, 2], np.int32))
    assert workspace.FetchTorch("i").dtype == torch.int32
    workspace.CreateBlob("u")
    with pytest.raises(errors.TypeError, match="Blob has to be a tensor"):
        workspace.FetchTorch("u")
    with pytest.raises(KeyError):
        workspace.FetchTorch("nope")


# ---------------------------------------------------------------- where a failing op was added
needs_notes = pytest.mark.skipif(not hasattr(Exception(), "add_note"), reason="exception notes need Python 3.11")


def _add_failing_fc(net):
    net.Relu("x", "y")
    net.FC(["y", "w", "b"], "z")  # w and b are missing
    return _add_failing_fc.__code__.co_firstlineno + 2  # the line of the FC call


def _notes(e):
    return "\n".join(getattr(e, "__notes__", []))


def _workspace_with_x():
    ws = workspace.Workspace()
    ws.feed_blob("x", np.ones((2, 3), np.float32))
    return ws


@needs_notes
def test_failing_op_gets_the_python_stack_that_added_it():
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    net = core.Net("tb_net")
    line = _add_failing_fc(net)
    def created_then_reset(run):
        workspace.FeedBlob("w", np.ones((4, 3), np.float32))
        workspace.FeedBlob("b", np.ones(4, np.float32))
        workspace.CreateNet(net, True)
        workspace.ResetBlob("w")  # FC fails when it runs
        run()

    for run in (lambda: workspace.RunNetOnce(net),
                lambda: workspace.CreateNet(net, True),
                lambda: _workspace_with_x().run(net),
                lambda: created_then_reset(lambda: workspace.RunNet(net.Name())),
                lambda: created_then_reset(lambda: workspace.BenchmarkNet(net.Name(), 0, 1, False))):
        with pytest.raises((KeyError, ValueError)) as info:
            run()
        assert info.value.op_position == 1
        notes = _notes(info.value)
        assert "Original python traceback for operator `1` in network `%s`" % net.Name() in notes
        assert 'test_workspace_api.py", line %d, in _add_failing_fc' % line in notes
        assert notes.rstrip().endswith("in _add_failing_fc")  # most recent call last
    assert workspace.operator_tracebacks[net.Name()][1][0][2] == "_add_failing_fc"
    assert workspace._ws().last_failed_op() == 1
    workspace.RunNetOnce(core.Net("ok_net"))
    assert workspace._ws().last_failed_op() == -1
    with pytest.raises(KeyError) as info:  # not an op's failure: no note, not the last op's
        workspace.BenchmarkNet("no_such_net", 0, 1, False)
    assert _notes(info.value) == ""
    assert not hasattr(info.value, "op_position")


@pytest.mark.parametrize("between", ["succeeds", "fails_elsewhere"])
def test_the_note_names_the_op_of_its_own_call(monkeypatch, between):
    """Another call on the same workspace (another thread's, in real use) between the raise and the note
    changes the workspace's last_failed_op(); the note still names this call's failing op, which the
    error carries as op_position."""
    from recurrent import workspace as wsmod
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    net = core.Net("tb_own")
    line = _add_failing_fc(net)                  # op 1 fails
    other = core.Net("tb_other")
    for _ in range(3):
        other.Relu("x", "x2")
    other.FC(["x2", "nope_w", "nope_b"], "z")    # op 3 fails
    real = wsmod._chained
    state = {"interleaved": False}

    def interleaved(call, *args):
        try:
            return real(call, *args)
        except Exception:
            if state["interleaved"]:
                raise
            state["interleaved"] = True
            if between == "succeeds":
                workspace.RunNetOnce(core.Net("tb_ok"))
            else:
                with pytest.raises(KeyError):
                    workspace.RunNetOnce(other)
            raise

    monkeypatch.setattr(wsmod, "_chained", interleaved)
    with pytest.raises(KeyError) as info:
        workspace.RunNetOnce(net)
    assert info.value.op_position == 1
    assert workspace._ws().last_failed_op() == (-1 if between == "succeeds" else 3)
    notes = _notes(info.value)
    if hasattr(info.value, "add_note"):
        assert "Original python traceback for operator `1` in network `%s`" % net.Name() in notes
        assert 'test_workspace_api.py", line %d, in _add_failing_fc' % line in notes
    assert other.Name() not in notes


@needs_notes
def test_creation_check_failure_names_its_op_and_python_op_failures_too():
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    workspace.FeedBlob("w", np.ones((4, 2), np.float32))  # should be (4, 3)
    workspace.FeedBlob("b", np.ones(4, np.float32))
    net = core.Net("tb_check")
    net.Relu("x", "unused")
    net.FC(["x", "w", "b"], "z")
    with pytest.raises(ValueError) as info:
        workspace.CreateNet(net)
    assert "operator `1` in network `%s`" % net.Name() in _notes(info.value)

    def boom(inputs, outputs):
        raise ArithmeticError("boom")
    py = core.Net("tb_python")
    py.Relu("x", "x2")
    py.Relu("x2", "x3")
    py.Python(boom)([], [])
    with pytest.raises(RuntimeError) as info:
        workspace.RunNetOnce(py)
    assert "operator `2` in network `%s`" % py.Name() in _notes(info.value)


def test_operator_tracebacks_follow_live_nets():
    import gc
    net = core.Net("tb_live")
    net.Relu("x", "y")
    name = net.Name()
    tb = workspace.operator_tracebacks[name][0]
    assert tb[0][2] == "test_operator_tracebacks_follow_live_nets"
    assert name in list(workspace.operator_tracebacks)
    assert workspace.operator_tracebacks.get("never_made") is None
    del net
    gc.collect()
    assert workspace.operator_tracebacks.get(name) is None


def test_call_with_exception_intercept_logs(caplog):
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    net = core.Net("tb_log")
    line = _add_failing_fc(net)
    with caplog.at_level("WARNING", logger="recurrent.workspace"):
        with pytest.raises(KeyError):
            workspace.CallWithExceptionIntercept(workspace.RunNetOnce, lambda: 1, net.Name(), net)
    text = caplog.text
    assert "operator `1` in network `%s`" % net.Name() in text and "line %d" % line in text
    assert workspace.CallWithExceptionIntercept(lambda a: a + 1, lambda: 0, "x", 2) == 3


@needs_notes
def test_traceback_note_shows_the_innermost_frames():
    def nest(k):
        if k == 0:
            net = core.Net("tb_deep")
            net.Relu("not_fed", "y")
            return net
        return nest(k - 1)
    net = nest(15)
    with pytest.raises(KeyError) as info:
        workspace.RunNetOnce(net)
    lines = _notes(info.value).splitlines()
    assert lines[1].startswith("  ... ") and lines[1].endswith(" outer frames")
    assert len(lines) == 2 + 10 and all("in nest" in line for line in lines[2:])
    assert len(workspace.operator_tracebacks[net.Name()][0]) > 16  # all are kept


# ---------------------------------------------------------------- SerializeBlob / DeserializeBlob / TensorProto feeds
def test_serialize_deserialize_blob_round_trip_and_save_record(tmp_path):
    from recurrent.proto import BlobProto
    for a in (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([-3, 7], np.int32),
              np.zeros((0, 4), np.float32), np.float32(2.5).reshape(())):
        workspace.FeedBlob("a", a)
        data = workspace.SerializeBlob("a")
        msg = BlobProto.FromString(data)
        assert msg.name == "a" and msg.type == "Tensor" and list(msg.tensor.dims) == list(a.shape)
        workspace.DeserializeBlob("b", data)
        back = workspace.FetchBlob("b")
        assert back.dtype == a.dtype and back.shape == a.shape
        np.testing.assert_array_equal(back, a)
    # the bytes of a Save record: Load reads a file made of them
    workspace.FeedBlob("w", np.arange(5, dtype=np.float32))
    data = workspace.SerializeBlob(core.BlobReference("w"))
    workspace.ResetWorkspace(str(tmp_path))
    workspace.DeserializeBlob("w", data)
    net = core.Net("save_w")
    net.Save(["w"], [], db="w.minidb", db_type="minidb")
    workspace.RunNetOnce(net)
    raw = (tmp_path / "w.minidb").read_bytes()
    assert data in raw


def test_serialize_deserialize_blob_errors():
    with pytest.raises(KeyError, match="'nope'"):
        workspace.SerializeBlob("nope")
    workspace.CreateBlob("u")
    with pytest.raises(errors.TypeError, match="SerializeBlob: blob 'u' holds no tensor"):
        workspace.SerializeBlob("u")
    with pytest.raises(TypeError, match="must be bytes"):
        workspace.DeserializeBlob("d", "text")
    with pytest.raises(ValueError, match="blob 'd'"):
        workspace.DeserializeBlob("d", b"\x0a\x05ab")  # truncated
    assert not workspace.HasBlob("d")
    from recurrent.proto import BlobProto
    with pytest.raises(TypeError, match="'d'"):
        workspace.DeserializeBlob("d", BlobProto(name="d", type="std::string", content=b"x").SerializeToString())
    assert not workspace.HasBlob("d")


def test_feed_blob_takes_a_tensor_proto():
    from recurrent import utils
    t = utils.NumpyArrayToCaffe2Tensor(np.array([[1, 2, 3]], np.int64), "t")
    workspace.FeedBlob("t", t)
    got = workspace.FetchBlob("t")
    assert got.dtype == np.int32 and got.tolist() == [[1, 2, 3]]
    workspace.FeedBlob("d", utils.NumpyArrayToCaffe2Tensor(np.array([0.5, 1.5])))  # DOUBLE -> float32
    assert workspace.FetchBlob("d").dtype == np.float32
    big = utils.NumpyArrayToCaffe2Tensor(np.array([2 ** 40], np.int64))
    with pytest.raises(ValueError, match="int32"):
        workspace.FeedBlob("big", big)
    ws = workspace.Workspace()
    ws.feed_blob("t", t)
    assert ws.fetch_blob("t").tolist() == [[1, 2, 3]]


def test_text_format_reads_and_writes_tensor_messages():
    from recurrent import text_format
    from recurrent.proto import BlobProto, TensorProto, TensorShapes
    t = TensorProto(dims=[2], data_type=TensorProto.INT32, int32_data=[4, -5], name="t",
                    segment=TensorProto.Segment(begin=0, end=2), raw_data=b"\x00\xff")
    b = BlobProto(name="t", type="Tensor", tensor=t)
    text = text_format.MessageToString(b)
    assert "data_type: INT32" in text and 'raw_data: "\\000\\377"' in text
    back = text_format.Parse(text, BlobProto())
    assert back.SerializeToString() == b.SerializeToString()
    assert text_format.Parse("data_type: 13 double_data: 0.1", TensorProto()).double_data[0] == 0.1
    shapes = text_format.Parse("shapes { dims: 3 data_type: FLOAT } shapes { unknown_shape: true }", TensorShapes())
    assert len(shapes.shapes) == 2 and list(shapes.shapes[0].dims) == [3] and shapes.shapes[1].unknown_shape
    with pytest.raises(ValueError, match="expected an integer, got 'BOGUS'"):
        text_format.Parse("data_type: BOGUS", TensorProto())
    with pytest.raises(ValueError, match="no field named 'nope'"):
        text_format.Parse("nope: 1", TensorProto())


def test_feed_blob_converts_byte_swapped_and_long_long_arrays():
    # a non-native byte order array is byte-swapped, never reinterpreted (a '>f4' array was copied
    # as it is, giving 4.6e-41 for 1.0); long long arrays (another type number than int64 on Linux)
    # are converted as every integer type is (they were refused as "unsupported dtype int64")
    cases = [(np.array([1.0, -2.5], ">f4"), np.float32), (np.array([1, -7], ">i4"), np.int32),
             (np.array([1.0, 3.0], ">f8"), np.float32), (np.array([[1, 2], [3, 4]], ">i8")[:, ::-1], np.int32),
             (np.array([5, -6], np.longlong), np.int32), (np.array([5, 6], np.ulonglong), np.int32)]
    for arr, dtype in cases:
        workspace.FeedBlob("x", arr)
        got = workspace.FetchBlob("x")
        assert got.dtype == dtype, arr.dtype
        np.testing.assert_array_equal(got, arr.astype(dtype))
    with pytest.raises(ValueError, match="do not fit in int32"):
        workspace.FeedBlob("x", np.array([2 ** 40], np.longlong))
    with pytest.raises(ValueError, match="do not fit in int32"):
        workspace.FeedBlob("x", np.array([2 ** 63], np.ulonglong))


def test_feed_blob_float64_beyond_float32_raises():
    """A finite float64 (or long double) value that float32 cannot hold would become inf: a ValueError naming
    the blob, the flat position (C order of the array as given) and the value, the blob unchanged; as for
    integers beyond int32. inf, NaN, tiny values (rounded to 0 / subnormals) and float32's max pass."""
    workspace.FeedBlob("f", np.ones(2, np.float32))
    bad = [(np.array([1.0, 1e39]), r"float64 value 1e\+39 at flat position 1 is outside float32's range "
                                   r"\(it would become inf\)"),
           (np.array([[1.0, 2.0], [-1e300, 4.0]]).T, r"float64 value -1e\+300 at flat position 1 .*become -inf"),
           ([0.5, 2e38, 4e38], r"float64 value 4e\+38 at flat position 2"),
           (np.array([1e39], np.longdouble), r"long double value 1e\+39 at flat position 0")]
    for arr, pattern in bad:
        with pytest.raises(ValueError, match="FeedBlob 'f': " + pattern):
            workspace.FeedBlob("f", arr)
        np.testing.assert_array_equal(workspace.FetchBlob("f"), np.ones(2, np.float32))
    thr = 2.0 ** 128 - 2.0 ** 103  # float32's max plus half an ulp: from here on the cast gives inf
    with pytest.raises(ValueError, match=r"FeedBlob 'f': float64 value -3\.4028235677973366e\+38 at flat position 0 .*become -inf"):
        workspace.FeedBlob("f", np.array([-thr]))
    edge = np.array([np.inf, -np.inf, np.nan, 1e-300, -1e-46, float(np.finfo(np.float32).max), 5e-324,
                     np.nextafter(thr, 0), -np.nextafter(thr, 0)])
    workspace.FeedBlob("f", edge)
    got = workspace.FetchBlob("f")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, edge.astype(np.float32))


def test_object_api_blob_serialize_deserialize_and_current_workspace():
    # Caffe2's C.Blob.serialize(name) / deserialize(bytes) and C.Workspace.current (workspace_test)
    ws = workspace.C.Workspace()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    ws.create_blob("x").feed(x)
    data = ws.blobs["x"].serialize("x")
    workspace.FeedBlob("x", x)
    assert data == workspace.SerializeBlob("x")
    ws.create_blob("x_serde").deserialize(data)
    np.testing.assert_array_equal(ws.blobs["x_serde"].fetch(), x)
    ws.create_blob("empty")
    with pytest.raises(TypeError, match="blob 'empty' holds no tensor"):
        ws.blobs["empty"].serialize("empty")
    with pytest.raises(TypeError, match="Blob.deserialize 'x_serde': serialized must be bytes, got str"):
        ws.blobs["x_serde"].deserialize("x")

    cur = workspace.C.Workspace.current
    assert "x" in cur.blobs and "x_serde" not in cur.blobs
    np.testing.assert_array_equal(cur.blobs["x"].fetch(), x)
    cur.create_blob("y").feed(np.ones(2, np.float32))
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.ones(2, np.float32))
    workspace.ResetWorkspace()
    assert "x" not in workspace.C.Workspace.current.blobs
    assert workspace.C.has_mkldnn is False and workspace.C.has_gpu_support is False


# ---------------------------------------------------------------- names holding a NUL character
_NUL = r" contains a NUL character, which this runtime does not take in names and string arguments$"


def _bench(name):
    return workspace.BenchmarkNet(name, 0, 1, False)


@pytest.mark.parametrize("call, what, bad", [
    (lambda n: workspace.FeedBlob(n, np.ones(2, np.float32)), "blob name", "a\x00b"),
    (lambda n: workspace.FeedBlob(n, "not an array"), "blob name", "a\x00b"),  # the name is checked first
    (lambda n: workspace.FetchBlob(n), "blob name", "a\x00b"),
    (lambda n: workspace.FetchBlobs(["a", n]), "blob name", "a\x00b"),
    (lambda n: workspace.HasBlob(n), "blob name", "a\x00b"),
    (lambda n: workspace.CreateBlob(n), "blob name", "a\x00b"),
    (lambda n: workspace.ResetBlob(n), "blob name", "a\x00"),
    (lambda n: workspace.RunNet(n), "net name", "n\x00et"),
    (lambda n: workspace.DeleteNet(n), "net name", "\x00"),
    (_bench, "net name", "n\x00et"),
    (lambda n: workspace.CreateNet(core.Net(n)), "net name", "n\x00et"),
    (lambda n: workspace.CreateNet(core.Net("ok_net"), input_blobs=[n]), "blob name", "a\x00b"),
    (lambda n: _C.get_flag(n), "flag name", "rnn_executor\x00"),
    (lambda n: _C.set_flag(n, 1), "flag name", "rnn_executor\x00"),
    (lambda n: _C.op_schema(n), "op type", "FC\x00x"),
    (lambda n: _C.op_inplace(n, 0, 0), "op type", "Relu\x00"),
])
def test_name_with_nul_is_a_value_error_naming_it(call, what, bad):
    """Every name argument of the workspace methods holding a NUL is the runtime's ValueError naming
    the kind of name and the name (CPython's "s" said only "embedded null character"); the message
    comes out once; nothing is created or changed (the core would have cut the name at the NUL)."""
    workspace.FeedBlob("a", np.arange(3, dtype=np.float32))
    net = core.Net("n")
    net.Scale(["a"], "y", scale=2.0)
    workspace.CreateNet(net)
    before = sorted(workspace.Blobs()), workspace.Nets()
    with pytest.raises(ValueError, match="^%s: %s%s" % (what, re.escape(repr(bad)), _NUL)) as e:
        call(bad)
    assert isinstance(e.value, errors.ValueError)
    assert str(e.value).count("NUL") == 1
    assert (sorted(workspace.Blobs()), workspace.Nets()) == before
    np.testing.assert_array_equal(workspace.FetchBlob("a"), [0, 1, 2])
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [0, 2, 4])


def test_name_of_wrong_type_at_the_binding():
    """The binding's own methods (the Python wrappers check types first) name the argument too."""
    ws = workspace._ws() if hasattr(workspace, "_ws") else None
    with pytest.raises(TypeError, match="^blob name must be a str, got int$"):
        ws.fetch_blob(5)
    with pytest.raises(TypeError, match="^net name must be a str, got bytes$"):
        ws.run_net(b"n")
    with pytest.raises(TypeError, match="^op type must be a str, got NoneType$"):
        _C.op_schema(None)
    with pytest.raises(TypeError, match="^blob name must be a str or BlobReference, got int$"):
        workspace.FeedBlob(5, np.ones(1, np.float32))


def test_names_without_nul_still_work_including_unicode():
    for name in ["plain", "with space", "ünï/cödé", "a" * 1000]:
        workspace.FeedBlob(name, np.ones(2, np.float32))
        assert workspace.HasBlob(name)
        np.testing.assert_array_equal(workspace.FetchBlob(name), [1, 1])
