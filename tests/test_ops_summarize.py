"""Summarize (csrc/ops/print.c): (min, max, mean, unbiased std) against NumPy over shapes and value
ranges, one element (std 0), NaN and Inf, no output; to_file writing '<input>.summary' ('/' -> '#')
in the workspace's root folder as Caffe2's (truncated at creation, one line per run, C++'s float
text; its refusal in RecurrentNetwork step nets is tested with Print's, in test_ops_print.py);
bad input with exact messages."""

import os

import numpy as np
import pytest

from recurrent import core, workspace
from recurrent import recurrent as rnn
from test_ops_math import f32, feed, fails, run


def ref(x):
    x64 = x.astype(np.float64)
    std = 0.0 if x.size == 1 else x64.std(ddof=1)
    return np.array([x.min(), x.max(), x64.mean(), std], np.float32)


def g6(v):
    """C++'s ``std::ostream << float``: 6 significant digits, %g."""
    return "%.6g" % float(v)


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 5), (), (1000,), (4, 1, 1, 9)])
@pytest.mark.parametrize("scale,offset", [(1.0, 0.0), (100.0, 1e4), (1e-3, -5.0)])
def test_summarize_against_numpy(rng, shape, scale, offset):
    x = np.asarray(rng.randn(*shape) * scale + offset).astype(np.float32)
    feed(x=x)
    y = run("Summarize", ["x"], ["y"])
    assert y.shape == (4,) and y.dtype == np.float32
    want = ref(x)
    assert y[0] == want[0] and y[1] == want[1]     # min and max exactly
    np.testing.assert_allclose(y[2:], want[2:], rtol=1e-6, atol=1e-6 * scale)


def test_summarize_one_element_and_constant():
    feed(x=np.array([3.5], np.float32), c=np.full((4, 4), -2.0, np.float32))
    assert run("Summarize", ["x"], ["y"]).tolist() == [3.5, 3.5, 3.5, 0.0]
    assert run("Summarize", ["c"], ["y"]).tolist() == [-2.0, -2.0, -2.0, 0.0]


def test_summarize_sums_in_double():
    """A mean that float32 sums lose: 2^24 ones then many small values (Caffe2 summed in float)."""
    x = np.concatenate([np.full(1, 2.0 ** 24, np.float32), np.ones(1 << 16, np.float32)])
    feed(x=x)
    y = run("Summarize", ["x"], ["y"])
    np.testing.assert_allclose(y[2], np.float32((2.0 ** 24 + (1 << 16)) / x.size), rtol=1e-7)


@pytest.mark.parametrize("pos", [0, 3, 6])
def test_summarize_nan_anywhere_gives_nan(pos):
    """NaN propagates to min, max, mean and std wherever it is (Caffe2's std::min / std::max kept a NaN
    only when it came first)."""
    x = np.arange(7, dtype=np.float32)
    x[pos] = np.nan
    feed(x=x)
    assert np.isnan(run("Summarize", ["x"], ["y"])).all()


def test_summarize_inf():
    feed(x=np.array([1.0, np.inf, -2.0], np.float32))
    y = run("Summarize", ["x"], ["y"])
    assert y[0] == -2.0 and y[1] == np.inf and y[2] == np.inf and np.isnan(y[3])   # as NumPy's


def test_summarize_without_output_computes_nothing_visible(rng, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    feed(x=f32(rng, 3))
    workspace.RunOperatorOnce(core.CreateOperator("Summarize", ["x"], []))
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- to_file
def line(x):
    return " ".join(g6(v) for v in ref(x)) + "\n"


def test_summarize_to_file(rng, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.summary").write_text("old\n")
    x = f32(rng, 3, 4, lo=-50, hi=50)
    feed(x=x)
    net = core.Net("summ")
    net.Summarize("x", "s", to_file=1)
    workspace.CreateNet(net)
    assert (tmp_path / "x.summary").read_text() == ""   # truncated when the op is created
    workspace.RunNet(net)
    x2 = x * 2
    feed(x=x2)
    workspace.RunNet(net)
    assert (tmp_path / "x.summary").read_text() == line(x) + line(x2)
    np.testing.assert_array_equal(workspace.FetchBlob("s"), run("Summarize", ["x"], ["t"]))


def test_summarize_to_file_without_output_and_scoped_name(tmp_path, monkeypatch):
    """The file is named after the input with each '/' made '#' (Caffe2's), in the root folder."""
    monkeypatch.chdir(tmp_path)
    workspace.ResetWorkspace("root")
    x = np.array([1.0, 2.0, 4.0], np.float32)
    feed(**{"scope/sub/x": x})
    workspace.RunOperatorOnce(core.CreateOperator("Summarize", ["scope/sub/x"], [], to_file=1))
    assert os.listdir(tmp_path / "root") == ["scope#sub#x.summary"]
    assert (tmp_path / "root" / "scope#sub#x.summary").read_text() == "1 4 2.33333 1.52753\n"
    workspace.ResetWorkspace(".")


def test_summarize_to_file_that_cannot_be_opened(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    workspace.ResetWorkspace("gone")
    os.rmdir("gone")
    feed(x=np.ones(2, np.float32))
    with pytest.raises(OSError, match=r"^op Summarize #0: cannot open 'gone/x.summary' for writing "
                                      r"\(to_file=1\): No such file or directory$"):
        workspace.RunOperatorOnce(core.CreateOperator("Summarize", ["x"], ["y"], to_file=1))
    workspace.ResetWorkspace(".")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_summarize_to_file_write_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("/dev/full", tmp_path / "x.summary")
    feed(x=np.ones(1, np.float32))
    net = core.Net("full")
    net.Summarize("x", [], to_file=1)
    workspace.CreateNet(net)
    with pytest.raises(OSError, match=r"op Summarize #0: cannot write 'x.summary': No space left on device"):
        workspace.RunNet(net)


def test_summarize_in_step_nets_without_file():
    """Without to_file Summarize runs in a step net like any op."""
    net = core.Net("outer_s2")
    cell = core.Net("cell_s2")
    input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
    out = cell.Mul([input_t, prev], "output_t")
    cell.Summarize(out, "stats")
    cell.AddExternalOutput(out)
    rnn.recurrent_net(net, cell, [(input_t, "input")], [(prev, "init")], {prev: out}, scope="r2")
    workspace.FeedBlob("input", np.full((2, 1, 2), 2.0, np.float32))
    workspace.FeedBlob("init", np.ones((1, 1, 2), np.float32))
    workspace.RunNetOnce(net)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("x,kw,exc,msg", [
    (np.zeros((2, 0), np.float32), {}, ValueError,
     "op Summarize #0: input 0 blob 'x' (2, 0) float32 is empty: there is nothing to summarize"),
    (np.zeros(3, np.int32), {}, TypeError,
     "op Summarize #0: input 0 blob 'x' must be float32, got (3,) int32"),
    (np.zeros(3, np.float32), dict(to_file=2), ValueError,
     "op Summarize #0: argument 'to_file' must be 0 or 1, got 2"),
])
def test_summarize_bad_input(x, kw, exc, msg):
    feed(x=x)
    fails(exc, msg, "Summarize", ["x"], ["y"], **kw)
    feed(x=np.ones(2, np.float32))
    assert run("Summarize", ["x"], ["y"]).tolist() == [1.0, 1.0, 1.0, 0.0]


def test_summarize_not_in_place_and_one_output():
    feed(x=np.ones(2, np.float32))
    with pytest.raises(ValueError, match="op Summarize #0"):
        workspace.RunOperatorOnce(core.CreateOperator("Summarize", ["x"], ["x"]))
    with pytest.raises(ValueError, match="op Summarize #0"):
        workspace.RunOperatorOnce(core.CreateOperator("Summarize", ["x"], ["a", "b"]))


def test_summarize_has_no_gradient():
    """Caffe2's SHOULD_NOT_DO_GRADIENT: no gradient op, and X gets no gradient from it."""
    o = core.CreateOperator("Summarize", ["x"], ["s"])
    ops, g_in = core.GradientRegistry.GetGradientForOp(o, ["s_grad"])
    assert ops == [] and g_in == [None]
