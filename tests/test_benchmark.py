"""benchmarks/lstm_benchmark.py runs: --compare on a tiny LSTM validates
(executor on/off bitwise, layered_LSTM and torch close) and writes its JSON;
the single-implementation modes print entries per second. Speed is not
checked here (benchmarks are for that)."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "benchmarks", "lstm_benchmark.py")
SHAPE = ["--hidden_dim", "8", "--batch_size", "2", "--num_layers", "2", "--seq_length", "5", "--input_dim", "3"]


def bench_env():
    """The environment for a benchmark subprocess: it imports the package
    the tests import."""
    import recurrent
    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run(args, timeout=300):
    p = subprocess.run([sys.executable, BENCH] + SHAPE + list(args), env=bench_env(), capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
def test_compare_validates_and_writes_json(tmp_path):
    pytest.importorskip("torch")
    out_json = tmp_path / "out.json"
    out = run(["--compare", "--iters", "1", "--rounds", "1", "--json", str(out_json)])
    assert "validated: executor on == off bitwise" in out
    res = json.loads(out_json.read_text())
    keys = set(res["entries_per_sec_median"])
    assert {"own_executor", "own_serial_blas1", "own_layered_serial_blas1", "torch_threads1"} <= keys
    for k in ("ratio_executor_vs_best_serial", "ratio_executor_vs_best_torch",
              "ratio_executor_vs_best_layered_serial"):
        assert res[k] > 0
    # the benchmark forces the executor (min_op_us 0) unless told otherwise
    assert [s["mode"] for s in res["executor_status"]] == ["executor", "executor"]
    # the ceiling from the dense-product rate: SHAPE's products, fwd + input and weight gradients
    # (hidden 8, input 3, batch 2, 2 layers, 5 steps): 3 * 2 * 5 * 2 * 32 * ((3 + 8) + (8 + 8))
    assert res["flops_per_iteration"] == 3 * 2 * 5 * 2 * 32 * 27
    assert res["dense_gflops_best"] > 0
    ceiling = 5 * 2 * res["dense_gflops_best"] * 1e9 / res["flops_per_iteration"]
    assert res["ceiling_entries_per_sec"] == pytest.approx(ceiling)
    assert "an iteration's products allow at most" in out
    assert "(OpenBLAS, %d threads)" % res["thread_budget"] in out
    # what ran (recurrent.show_config): training turns pack reuse off unless the environment says
    cfg = res["config"]
    reuse = os.environ.get("RECURRENT_PACK_REUSE", "0") not in ("0", "false", "off")
    assert cfg["step_products"]["pack_reuse"] is reuse
    assert cfg["blas"]["config"].startswith("OpenBLAS") and cfg["cpu"]["usable_cores"] >= 1


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
@pytest.mark.parametrize("extra", [[], ["--forward_only"]])
def test_compare_gru_validates_against_torch_gru(tmp_path, extra):
    pytest.importorskip("torch")
    out_json = tmp_path / "gru.json"
    out = run(["--compare", "--cell", "gru", "--iters", "1", "--rounds", "1", "--json", str(out_json)] + extra)
    assert "validated: executor on == off bitwise" in out and "(no layered GRU)" in out
    assert "layered_LSTM" not in out.split("validated")[1]
    res = json.loads(out_json.read_text())
    assert res["shape"]["cell"] == "gru"
    keys = set(res["entries_per_sec_median"])
    assert {"own_executor", "own_serial_blas1", "torch_threads1"} <= keys
    assert not any(k.startswith("own_layered") for k in keys)
    assert res["ratio_executor_vs_best_torch"] > 0 and res["ratio_executor_vs_best_layered_serial"] is None
    # a GRU's gate products are 3H wide: (hidden 8, input 3, batch 2, 2 layers, 5 steps)
    fwd = 2 * 5 * 2 * 24 * ((3 + 8) + (8 + 8))
    assert res["flops_per_iteration"] == (fwd if extra else 3 * fwd)


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
def test_compare_gru_catches_a_wrong_torch_gru(tmp_path):
    """The validation is real: torch's GRU without our weights differs and the run stops."""
    pytest.importorskip("torch")
    code = ("import sys; sys.path.insert(0, %r); import lstm_benchmark as b; from recurrent import torch_interop;"
            "torch_interop.gru_to_torch = lambda *a, **k: None; b.main(sys.argv[1:])" % os.path.dirname(BENCH))
    p = subprocess.run([sys.executable, "-c", code] + SHAPE + ["--compare", "--cell", "gru", "--iters", "1",
                                                               "--rounds", "1"],
                       env=bench_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "ours vs torch.nn.GRU output differ" in p.stdout + p.stderr


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
def test_lstm_flops_counts_the_products():
    import importlib.util
    spec = importlib.util.spec_from_file_location("lstm_benchmark", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args, _ = mod.parse_args(["--hidden_dim", "256", "--batch_size", "16", "--num_layers", "4", "--seq_length", "50",
                              "--input_dim", "40"])
    fwd = 2 * 50 * 16 * 1024 * ((40 + 256) + 3 * (256 + 256))  # the README's shape: 2.94 GFLOP forward
    assert mod.lstm_flops(args) == 3 * fwd
    args.forward_only = True
    assert mod.lstm_flops(args) == fwd


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
@pytest.mark.parametrize("args", [["--rnn_executor", "--rnn_executor_num_threads", "2"], ["--forward_only"],
                                  ["--implementation", "torch"], ["--cell", "gru", "--rnn_executor"],
                                  ["--cell", "gru", "--implementation", "torch"]])
def test_single_modes(args):
    if "torch" in args:
        pytest.importorskip("torch")
    out = run(args + ["--iters", "1", "--data_size", "30"])
    assert "Done. Total EPS:" in out


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
@pytest.mark.parametrize("executor", (True, False))
def test_breakdown(tmp_path, executor):
    out_json = tmp_path / "b.json"
    out = run(["--breakdown", "--rounds", "2", "--json", str(out_json)] + (["--rnn_executor"] if executor else []))
    assert "RecurrentNetworkGradient" in out and "step loops" in out
    assert ("forward executor, backward executor" in out) == executor
    rows = json.loads(out_json.read_text())["breakdown"]
    rnn = [r for r in rows if r["type"].startswith("RecurrentNetwork")]
    assert [r["type"] for r in rnn] == ["RecurrentNetwork", "RecurrentNetworkGradient"]
    for r in rows:
        assert r["ms"] > 0
        assert (r["loop_ms"] is not None) == r["type"].startswith("RecurrentNetwork")
        if r["loop_ms"] is not None:
            assert 0 < r["loop_ms"] <= r["ms"]


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
def test_breakdown_refuses_compare():
    import recurrent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(recurrent.__file__)))
    p = subprocess.run([sys.executable, BENCH, "--breakdown", "--compare"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and "--breakdown times our own LSTM" in p.stderr


GEN = os.path.join(REPO, "benchmarks", "step_generation.py")


@pytest.mark.skipif(not os.path.exists(GEN), reason="benchmarks/ not in this checkout")
def test_step_generation_validates_and_reports():
    """benchmarks/step_generation.py on a tiny LSTM: our three variants give
    the same bits, torch matches, and the defaults ran a single timestep
    serially with packs kept."""
    pytest.importorskip("torch")
    p = subprocess.run([sys.executable, GEN, "--hidden_dim", "16", "--input_dim", "5", "--iters", "5", "--rounds", "1"],
                       env=bench_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "our variants bitwise equal: True" in p.stdout
    assert "best torch (torch_threads" in p.stdout and "packed every call / ours" in p.stdout
    assert "(last run: serial)" in p.stdout


CHOICE = os.path.join(REPO, "benchmarks", "executor_choice.py")


@pytest.mark.skipif(not os.path.exists(CHOICE), reason="benchmarks/ not in this checkout")
@pytest.mark.parametrize("cell,extra", [("gru", []), ("lstm", ["--forward_only", "--num_layers", "2"])])
def test_executor_choice_validates_and_writes_json(tmp_path, cell, extra):
    """benchmarks/executor_choice.py: executor always / serial / default give
    the same bits; entries/s and ratios per variant; what the default chose."""
    out_json = tmp_path / "choice.json"
    p = subprocess.run([sys.executable, CHOICE, "--cell", cell, "--hidden_dim", "8", "--batch_size", "2",
                        "--seq_length", "9", "--input_dim", "3", "--iters", "1", "--rounds", "1",
                        "--min_parallelism", "2", "--json", str(out_json)] + extra,
                       env=bench_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "validated: serial, executor, default bitwise equal: True" in p.stdout
    res = json.loads(out_json.read_text())
    assert set(res["entries_per_sec_median"]) == {"executor", "serial", "default"}
    assert res["ratio_vs_serial"]["serial"] == 1.0
    assert all(v > 0 for v in res["entries_per_sec_median"].values())
    directions = [s["direction"] for s in res["default_status"]]
    assert directions == (["forward"] if "--forward_only" in extra else ["forward", "backward"])
    assert all(s["mode"] in ("executor", "serial") and s["timed_runs"] == 2 and s["tried_runs"] in (0, 4)
               for s in res["default_status"])
    assert "default chose: forward " in p.stdout


@pytest.mark.skipif(not os.path.exists(CHOICE), reason="benchmarks/ not in this checkout")
def test_executor_choice_rejects_bad_arguments():
    p = subprocess.run([sys.executable, CHOICE, "--num_layers", "0"], env=bench_env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--num_layers must be >= 1" in p.stderr
    p = subprocess.run([sys.executable, CHOICE, "--min_parallelism", "-1"], env=bench_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "--min_parallelism must be in [0, 1024]" in p.stderr


CONV = os.path.join(REPO, "benchmarks", "conv_benchmark.py")
CONV_SHAPE = ["--batch_size", "3", "--channels", "2", "--image", "6", "--filters", "4", "--kernel", "3"]


@pytest.mark.skipif(not os.path.exists(CONV), reason="benchmarks/ not in this checkout")
@pytest.mark.parametrize("extra", [[], ["--forward_only"], ["--order", "NHWC"],
                                   ["--order", "NHWC", "--forward_only"]])
def test_conv_benchmark_validates_and_writes_json(tmp_path, extra):
    pytest.importorskip("torch")
    out_json = tmp_path / "conv.json"
    p = subprocess.run([sys.executable, CONV] + CONV_SHAPE + ["--iters", "1", "--rounds", "1", "--json",
                                                              str(out_json)] + extra,
                       env=bench_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(out_json.read_text())
    (row,) = res["rows"]
    assert row["shape"] == {"N": 3, "C": 2, "image": 6, "M": 4, "kernel": 3}
    assert {"ours_blas1", "torch_threads1"} <= set(row["images_per_sec_median"])
    assert row["ratio_ours_vs_torch"] > 0 and row["max_relative_difference"] < 1e-4
    assert res["forward_only"] == ("--forward_only" in extra) and "ours / torch:" in p.stdout
    assert res["order"] == ("NHWC" if "NHWC" in extra else "NCHW")
    assert res["config"]["blas"]["config"].startswith("OpenBLAS")  # what ran (recurrent.show_config)


@pytest.mark.skipif(not os.path.exists(CONV), reason="benchmarks/ not in this checkout")
def test_conv_benchmark_catches_a_wrong_result():
    """The validation is real: a conv2d whose output is 0.01 off makes the run stop."""
    pytest.importorskip("torch")
    code = ("import sys; sys.path.insert(0, %r); import conv_benchmark as b; import torch;"
            "f = torch.nn.functional.conv2d;"
            "torch.nn.functional.conv2d = lambda x, w, bias, padding: f(x, w, bias, padding=padding) + 0.01;"
            "b.main(sys.argv[1:])" % os.path.dirname(CONV))
    p = subprocess.run([sys.executable, "-c", code] + CONV_SHAPE + ["--iters", "1", "--rounds", "1"],
                       env=bench_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "validation failed at shape (3, 2, 6, 4, 3): Y differs" in p.stdout + p.stderr


@pytest.mark.skipif(not os.path.exists(CONV), reason="benchmarks/ not in this checkout")
def test_conv_benchmark_wants_a_whole_shape():
    p = subprocess.run([sys.executable, CONV, "--batch_size", "3"], env=bench_env(), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and "one shape needs all of" in p.stderr


@pytest.mark.skipif(not os.path.exists(CONV), reason="benchmarks/ not in this checkout")
@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_conv_benchmark_pool_suite_validates(tmp_path, order):
    """--pool: MaxPool / AveragePool and their gradients against torch's, validated, one row per shape
    (a small suite patched in so the test is quick); --order NHWC against torch's channels_last."""
    pytest.importorskip("torch")
    out_json = tmp_path / "pool.json"
    code = ("import sys; sys.path.insert(0, %r); import conv_benchmark as b;"
            "b.POOL_SUITE = [(3, 2, 6, 'max', 2, 2), (2, 3, 7, 'avg', 3, 1)]; b.main(sys.argv[1:])"
            % os.path.dirname(CONV))
    p = subprocess.run([sys.executable, "-c", code, "--pool", "--iters", "1", "--rounds", "1", "--json",
                        str(out_json), "--order", order], env=bench_env(), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(out_json.read_text())
    assert res["pool"] is True and len(res["rows"]) == 2 and res["order"] == order
    assert res["rows"][1]["shape"] == {"N": 2, "C": 3, "image": 7, "kind": "avg", "kernel": 3, "stride": 1}
    for row in res["rows"]:
        assert row["ratio_ours_vs_torch"] > 0 and row["max_relative_difference"] < 1e-4
        assert row["gflops_ours"] is None
    p = subprocess.run([sys.executable, CONV, "--pool"] + CONV_SHAPE, env=bench_env(), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and "--pool runs its own suite" in p.stderr


@pytest.mark.skipif(not os.path.exists(BENCH), reason="benchmarks/ not in this checkout")
def test_inference_lstm_benchmark_validates_and_writes_json(tmp_path):
    """benchmarks/inference_lstm_benchmark.py: checks the op against torch.nn.LSTM first, then times both
    and writes the ratio (the numbers themselves are not checked: a shared machine is noisy)."""
    pytest.importorskip("torch")
    bench = os.path.join(os.path.dirname(BENCH), "inference_lstm_benchmark.py")
    out = tmp_path / "il.json"
    p = subprocess.run([sys.executable, bench, "--hidden_dim", "8", "--batch_size", "3", "--num_layers", "2",
                        "--seq_length", "4", "--input_dim", "5", "--bidirectional", "--batch_first", "--iters", "1",
                        "--rounds", "1", "--json", str(out)], env=bench_env(), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "ours / torch:" in p.stdout
    res = json.loads(out.read_text())
    assert res["max_abs_diff_vs_torch"] < 1e-4 and res["ours_over_torch"] > 0
    assert res["shape"]["bidirectional"] and res["shape"]["batch_first"]
