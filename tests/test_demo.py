"""The demo (python -m recurrent) end to end with tiny settings, in a
subprocess: exit status, the sample, the speedup line, the timeline PNG and
Chrome-trace JSON, and determinism (same seed -> same losses and sample)."""

import json
import os
import re
import subprocess
import sys

import pytest

import recurrent

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
TINY = ["--steps", "6", "--hidden", "16", "--embed", "8", "--seq-length", "8", "--batch-size", "4",
        "--sample-length", "40", "--speedup-iters", "2", "--threads", "2", "--no-progress"]


def run_demo(args, cwd, timeout=240):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([sys.executable, "-m", "recurrent"] + list(args), cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=timeout)


def loss_lines(stdout):
    return re.findall(r"^step +\d+/\d+ +loss [0-9.]+", stdout, re.M)


def sample_text(stdout):
    m = re.search(r"^sample .*\n-+\n(.*)\n-+$", stdout, re.M | re.S)
    return m.group(1) if m else None


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    res = []
    for i in range(2):
        out = tmp_path_factory.mktemp("demo%d" % i)
        p = run_demo(TINY + ["--seed", "3", "--out-dir", str(out / "o")], out)
        res.append((p, out / "o"))
    return res


def test_demo_runs_and_writes_outputs(two_runs):
    pytest.importorskip("matplotlib")
    p, out = two_runs[0]
    assert p.returncode == 0, p.stdout + p.stderr
    assert "character-level LSTM" in p.stdout
    assert len(loss_lines(p.stdout)) >= 2
    sample = sample_text(p.stdout)
    assert sample is not None and len(sample) >= 20, p.stdout
    times = r"1 BLAS thread [0-9.]+, 2 BLAS threads [0-9.]+$"
    assert re.search(r"^  executor on \(2 threads\): " + times, p.stdout, re.M)
    assert re.search(r"^  executor off \(serial\): +" + times, p.stdout, re.M)
    m = re.search(r"^  speedup ([0-9.]+)x \(best on ([0-9.]+) ms/iter vs best off ([0-9.]+) ms/iter\)$",
                  p.stdout, re.M)
    assert m, p.stdout
    on, off = float(m.group(2)), float(m.group(3))
    assert on > 0 and off > 0 and float(m.group(1)) > 0
    assert "executor results identical to serial: yes (bitwise)" in p.stdout
    png, js = out / "rnn_timeline.png", out / "rnn_trace.json"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    trace = json.loads(js.read_text())
    events = trace["traceEvents"]
    assert events and {e["cat"] for e in events} == {"forward", "backward"}
    assert {e["tid"] for e in events} <= {0, 1}
    assert str(png) in p.stdout and str(js) in p.stdout


def test_demo_same_seed_same_losses(two_runs):
    (a, _), (b, _) = two_runs
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    la, lb = loss_lines(a.stdout), loss_lines(b.stdout)
    assert la and la == lb
    assert sample_text(a.stdout) == sample_text(b.stdout)


def test_demo_other_seed_other_losses(tmp_path, two_runs):
    p = run_demo(TINY + ["--seed", "4", "--out-dir", str(tmp_path / "o"), "--sample-length", "0"], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert loss_lines(p.stdout) != loss_lines(two_runs[0][0].stdout)


def test_demo_own_text_and_progress_bar(tmp_path):
    pytest.importorskip("tqdm")
    text = tmp_path / "mine.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 40)
    args = [a for a in TINY if a != "--no-progress"] + ["--text", str(text), "--layers", "1",
                                                         "--out-dir", str(tmp_path / "o")]
    p = run_demo(args, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "mine.txt (1800 characters, 28 distinct)" in p.stdout
    assert "entries/s" in p.stderr          # the tqdm bar
    assert set(sample_text(p.stdout)) <= set("the quick brown fox jumps over the lazy dog.\n")


def test_demo_help_and_bad_arguments(tmp_path):
    p = run_demo(["--help"], tmp_path)
    assert p.returncode == 0
    for opt in ("--steps", "--layers", "--hidden", "--seq-length", "--batch-size", "--threads", "--seed",
                "--text", "--out-dir"):
        assert opt in p.stdout
    p = run_demo(["--steps", "0"], tmp_path)
    assert p.returncode == 2 and "--steps must be >= 1" in p.stderr
    p = run_demo(["--text", str(tmp_path / "missing.txt")], tmp_path)
    assert p.returncode == 2 and "missing.txt" in p.stderr
    short = tmp_path / "short.txt"
    short.write_text("abc")
    p = run_demo(["--text", str(short)], tmp_path)
    assert p.returncode == 2 and "too short" in p.stderr
