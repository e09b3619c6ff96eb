"""RecurrentNetwork(Gradient) packs each step weight for the packed step
products at the start of a run, and keeps the pack for the next run while the
weight's bytes are unchanged (its storage's write stamp, data pointer and
shape): inference and evaluation, where the weights stay the same, stop
re-packing them; training, where an update op writes them, packs every run.

What must hold: a net with reuse gives the bits of a net with reuse off
(RECURRENT_PACK_REUSE=0 when the net is created) whatever wrote the weights
in between, and a changed weight is never multiplied through an old pack.
conftest.py runs the whole suite with RECURRENT_VERIFY_PACKS=1, which checks
every kept pack against a fresh one and fails on a difference; a write that
skips the stamp is tested in C (tests/c/test_rnn.c::test_pack_reuse)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from recurrent import _C, core, workspace
from test_executor import _executor_globally_on, assert_bitwise, build_stack  # noqa: F401 (fixture)


def reused():
    return _C.get_flag("packs_reused")


@pytest.fixture(autouse=True)
def _fresh_pair_workspaces():
    yield
    for m in ("on", "off"):
        in_ws("pr_" + m, workspace.ResetWorkspace)


def in_ws(name, fn):
    workspace.SwitchWorkspace(name, True)
    try:
        return fn()
    finally:
        workspace.SwitchWorkspace("default", True)


class Pair:
    """The same model in two workspaces: 'on' created with pack reuse, 'off'
    with RECURRENT_PACK_REUSE=0. Everything is done to both."""

    def __init__(self, make, monkeypatch):
        self.cases = {}
        for mode in ("on", "off"):
            monkeypatch.setenv("RECURRENT_PACK_REUSE", "1" if mode == "on" else "0")
            in_ws("pr_" + mode, workspace.ResetWorkspace)
            self.cases[mode] = in_ws("pr_" + mode, make)
        monkeypatch.delenv("RECURRENT_PACK_REUSE")

    def each(self, fn):
        return {m: in_ws("pr_" + m, lambda c=c: fn(c)) for m, c in self.cases.items()}

    def run(self):
        """Runs both nets; returns the 'on' net's results (checked equal to
        'off' bit for bit) and the packs the 'on' net kept."""
        res = {}
        for m, c in self.cases.items():
            before = reused()
            res[m] = in_ws("pr_" + m, c.run_created)
            res[m + "_kept"] = reused() - before
        assert res["off_kept"] == 0
        assert_bitwise(res["off"], res["on"], "pack reuse on against off")
        return res["on"], res["on_kept"]


def make_case(kind, forward_only, H=24, N=6, T=9, enable=1, threads=2):
    def make():
        case = build_stack(kind, layers=3, H=H, N=N, D=5, forward_only=forward_only, name="pr")
        case.feed(T, 5)
        case.create(enable, threads)
        return case
    return make


@pytest.mark.parametrize("kind", ("lstm", "gru"))
@pytest.mark.parametrize("enable", (0, 1))
def test_forward_only_keeps_packs_while_weights_unchanged(kind, enable, monkeypatch):
    """Forward-only, 3 layers, hidden 24 (packed products): the first run
    packs, the next runs keep every pack and give the same bits as the first
    and as the net without reuse."""
    pair = Pair(make_case(kind, True, enable=enable), monkeypatch)
    first, kept = pair.run()
    assert kept == 0
    for _ in range(2):
        again, kept = pair.run()
        assert kept > 0
        assert_bitwise(first, again, "a rerun with kept packs")


def weights():
    """The model's weight matrices (the step weights and layer 1's input
    projection), in the current workspace."""
    return sorted(b for b in workspace.Blobs() if b.startswith("pr/") and b.endswith("_w"))


@pytest.mark.parametrize("how", ("feed", "scale_op", "copy_op", "weighted_sum_op"))
def test_weights_changed_between_runs_are_packed_again(how, monkeypatch):
    """Between runs every step weight is changed: fed again, scaled in place
    by a Scale op of another net, overwritten by a Copy op (same shape, the
    buffer kept) or updated in place by WeightedSum. The next run must use
    the new values: bits equal to the net without reuse, and different from
    the run before."""
    pair = Pair(make_case("lstm", True), monkeypatch)
    first, _ = pair.run()
    names = in_ws("pr_on", weights)
    assert len(names) == 6, names  # 3 layers: i2h and gates_t

    def change(case):
        net = core.Net("change_" + how)
        for n in names:
            v = workspace.FetchBlob(n)
            if how == "feed":
                workspace.FeedBlob(n, (v * 0.75).astype(np.float32))
            elif how == "scale_op":
                net.Scale(n, n, scale=0.75)
            elif how == "copy_op":
                workspace.FeedBlob(n + "_src", (v[::-1] * 0.5).copy().astype(np.float32))
                net.Copy(n + "_src", n)
            else:
                workspace.FeedBlob("pr_one", np.ones(1, np.float32))
                workspace.FeedBlob("pr_lr", np.full(1, -0.25, np.float32))
                workspace.FeedBlob(n + "_step", np.full_like(v, 0.125))
                net.WeightedSum([n, "pr_one", n + "_step", "pr_lr"], n)
        if net.Proto().op:
            workspace.RunNetOnce(net)

    pair.each(change)
    second, kept = pair.run()
    assert kept == 0, "a changed weight kept its pack"
    assert any(first[b].tobytes() != second[b].tobytes() for b in first)
    third, kept = pair.run()
    assert kept > 0
    assert_bitwise(second, third, "unchanged since")


@pytest.mark.parametrize("kind", ("lstm", "gru"))
def test_training_with_updates_never_reuses(kind, monkeypatch):
    """Training with an SGD update of every parameter after the gradients:
    each iteration changes the weights, so neither op keeps a pack, and the
    losses and gradients of 4 iterations equal those without reuse."""
    def make():
        case = build_stack(kind, layers=2, H=20, N=4, D=5, name="pr")
        workspace.FeedBlob("pr_one", np.ones(1, np.float32))
        workspace.FeedBlob("pr_lr", np.full(1, -0.05, np.float32))
        params = [b for b in workspace.Blobs() if b.startswith("pr/") and b[-2:] in ("_w", "_b")]
        assert len(params) == (8 if kind == "lstm" else 16)
        for p in params:
            assert p + "_grad" in case.compare
            case.net.WeightedSum([p, "pr_one", p + "_grad", "pr_lr"], p)
        case.feed(8, 3)
        case.create(1, 2)
        return case
    pair = Pair(make, monkeypatch)
    prev = None
    for it in range(4):
        got, kept = pair.run()
        assert kept == 0, "iteration %d kept a pack of an updated weight" % it
        if prev is not None:
            assert got["loss"].tobytes() != prev["loss"].tobytes()
        prev = got


def test_training_without_updates_reuses_forward_and_backward(monkeypatch):
    """Training runs without an update (gradient checks, evaluation of the
    gradient): the forward and the gradient op keep their packs (the FCs'
    W^T and the FCGradients' W), and every run gives the first run's bits."""
    pair = Pair(make_case("lstm", False, H=20, N=4), monkeypatch)
    first, kept = pair.run()
    assert kept == 0
    again, kept = pair.run()
    # 3 layers: 5 step weights (layer 1's input projection is outside the
    # step net), packed for the forward FCs and for the backward FCGradients
    assert kept == 10
    assert_bitwise(first, again, "rerun")


def test_weight_fed_with_another_shape(monkeypatch):
    """A weight fed again with another shape (hidden size changed): the
    net fails or runs exactly as without reuse, and runs again after the
    right shapes are back."""
    pair = Pair(make_case("lstm", True), monkeypatch)
    first, _ = pair.run()
    names = in_ws("pr_on", weights)
    saved = {}

    def bad(case):
        for n in names:
            v = saved[n] = workspace.FetchBlob(n)
            workspace.FeedBlob(n, np.ones((v.shape[0], v.shape[1] + 1), np.float32))
        try:
            workspace.RunNet(case.net)
        except Exception as e:  # noqa: BLE001 -- compared below
            return "%s: %s" % (type(e).__name__, e)
        return None

    errs = pair.each(bad)
    assert errs["on"] is not None and errs["on"] == errs["off"]

    def restore(case):
        for n in names:
            workspace.FeedBlob(n, saved[n])
    pair.each(restore)
    again, kept = pair.run()
    assert kept == 0
    assert_bitwise(first, again, "the old weights fed back")


def test_verify_flag_round_trip():
    """conftest turns verification on for the suite; the flag can be
    switched at run time."""
    old = _C.get_flag("verify_packs")
    try:
        _C.set_flag("verify_packs", 0)
        assert _C.get_flag("verify_packs") == 0
        _C.set_flag("verify_packs", 1)
        assert _C.get_flag("verify_packs") == 1
    finally:
        _C.set_flag("verify_packs", old)


_ENV_PROBE = """
import numpy as np, sys
sys.path.insert(0, %r)
from recurrent import _C, workspace
from test_executor import build_stack
case = build_stack("lstm", layers=2, H=20, N=4, D=5, forward_only=True, name="pe")
case.feed(5, 1)
case.create(0)
for _ in range(3):
    case.run_created()
print(_C.get_flag("packs_reused"), _C.get_flag("verify_packs"))
"""


@pytest.mark.parametrize("reuse,verify,expect,warns", [
    ("0", "0", "0 0", False), ("off", "1", "0 1", False), ("1", "0", "6 0", False), ("", "", "6 0", False),
    ("true", "on", "6 1", False), ("bogus", "0", "6 0", True),
    ("1", "yes", "6 1", True)])
def test_environment_switches(reuse, verify, expect, warns):
    """RECURRENT_PACK_REUSE (read when the net is created) and
    RECURRENT_VERIFY_PACKS (read once) in a child process: 3 runs of a
    2-layer forward-only LSTM keep 2 x 3 packs with reuse on, none with it
    off; a value other than on/off warns at import (and counts as on)."""
    env = dict(os.environ, RECURRENT_PACK_REUSE=reuse, RECURRENT_VERIFY_PACKS=verify)
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _ENV_PROBE % here], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == expect.split()
    bogus = "RECURRENT_PACK_REUSE='bogus'" if reuse == "bogus" else "RECURRENT_VERIFY_PACKS='yes'"
    assert ("RuntimeWarning" in r.stderr and bogus in r.stderr) == warns, r.stderr
