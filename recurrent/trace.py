"""Executor timelines: per-(timestep, op) timings of RecurrentNetwork runs.

    with recurrent.trace.tracing():
        workspace.RunNet(net)
    events = recurrent.trace.fetch(net)            # forward and backward ops
    recurrent.trace.save_chrome_trace(events, "rnn_trace.json")  # Perfetto / chrome://tracing
    recurrent.trace.plot_timeline(events, "rnn_timeline.png")    # needs matplotlib

Tracing is off by default; while on, every RecurrentNetwork(Gradient) run
records when each op instance started and ended and on which worker thread
(worker 0 is the calling thread), and the parts of products that idle
executor threads ran for them ("Helping" in the README). With the executor
off, everything runs on worker 0, one timestep after the other; with it on,
the picture shows the wavefront: layer 2 of step t beside layer 1 of step
t+1. An op with the executor on may still run serially: after its first two
runs, timed, it keeps the serial loop where that was faster or the step net
is a chain (rnn_executor.min_op_us, min_parallelism, trial);
``executor_status(net)`` says what each op does.
"""

import contextlib
import json

import numpy as np

from . import _C, workspace

__all__ = ["enable", "tracing", "fetch", "executor_status", "to_chrome_trace", "save_chrome_trace",
           "plot_timeline", "summary"]


def enable(on=True):
    """Turns recording on or off for all RecurrentNetwork ops of this process."""
    _C.set_flag("rnn_executor_trace", 1 if on else 0)


@contextlib.contextmanager
def tracing():
    """Context manager: recording on inside the block."""
    old = _C.get_flag("rnn_executor_trace")
    enable(True)
    try:
        yield
    finally:
        enable(bool(old))


def _decode_names(arr):
    b = bytes(np.asarray(arr, dtype=np.int32).astype(np.uint8).tolist())
    return [s.decode() for s in b.split(b"\0")[:-1]]


def _rnn_ops(net):
    proto = net.Proto() if hasattr(net, "Proto") else net
    for i, op in enumerate(proto.op):
        if op.type == "RecurrentNetwork":
            yield i, op, op.output[-1], "trace", "forward"
        elif op.type == "RecurrentNetworkGradient":
            yield i, op, op.input[-1], "backward_trace", "backward"


def fetch(net):
    """Events recorded during the last run of every RecurrentNetwork op of
    ``net`` (a core.Net or NetDef): a list of dicts with keys op_index (the
    RNN op's index in ``net``), direction, timestep, step_op (index in the step
    net, -1 for setting the timestep), type, start_us, end_us, worker and
    part. part False: a task (an op instance), on the worker that ran it.
    part True: a part of that task's product that an idle executor thread
    ran for it (README, "Helping"), on the helper's row, inside the task's
    own interval (a part is left out only if memory for its record runs
    out)."""
    events = []
    for idx, op, scratch, kind, direction in _rnn_ops(net):
        name = "%s_%s" % (scratch, kind)
        if not workspace.HasBlob(name):
            continue
        types = _decode_names(workspace.FetchBlob(name + "_ops"))
        for blob, part in ((name, False), (name + "_parts", True)):
            if not workspace.HasBlob(blob):
                continue
            # every record is a real event (stored only after a successful run)
            for t, j, s, e, w in workspace.FetchBlob(blob).tolist():
                events.append(dict(op_index=idx, direction=direction, timestep=t, step_op=j,
                                   type=types[j] if 0 <= j < len(types) else "set_timestep",
                                   start_us=s, end_us=e, worker=w, part=part))
    return events


_MODES = {0: "off", 1: "measuring", 2: "executor", 3: "serial", 4: "trying"}


def executor_status(net):
    """What each RecurrentNetwork(Gradient) op of ``net`` with the executor
    enabled does from its next run on (rnn_executor.min_op_us): a list of
    dicts with keys op_index, direction, mode ("measuring": its next run is
    still a timed serial run; "executor"; "serial": its step ops averaged less
    than min_op_us, or their parallelism was below min_parallelism, or the
    executor lost when tried, so it keeps running serially; "trying": the
    timed runs averaged under min_op_us, or the parallelism is under
    min_parallelism but not a chain, and rnn_executor.trial is on, so its
    next runs of 8 or more timesteps alternate between the executor and the
    serial loop, timed, two of each, and it keeps the executor only if its
    faster run beat the serial loop's by 5%), mean_op_us (the lowest mean
    time per step-op instance of the timed serial runs; None when none was
    timed, as with min_op_us 0), timed_runs, tried_op_us and
    tried_serial_op_us (the same for the executor's and the serial loop's
    runs while trying; None before the first), tried_runs (those runs, both
    kinds; 0 when it did not try), min_op_us, last_run ("executor" or "serial": what that
    run used; in mode "executor" a run of a single timestep is serial unless
    min_op_us is 0), and parallelism (the step ops' time over their longest
    dependency chain's, measured at the first run of 8 or more timesteps
    after the timed runs chose the executor; None before, or when not
    measured). As of the op's last successful run; ops whose executor is
    disabled, or that have not run successfully yet, are left out."""
    out = []
    for idx, op, scratch, kind, direction in _rnn_ops(net):
        if not workspace.HasBlob(scratch):
            continue
        status = workspace._ws().rnn_exec_status(str(scratch), direction == "backward")
        if status is None:
            continue
        mode, mean_us, runs, min_us, last_exec, par, tried_us, tried_serial_us, tried = status
        out.append(dict(op_index=idx, direction=direction, mode=_MODES.get(int(mode), "unknown"),
                        mean_op_us=float(mean_us) if runs else None, timed_runs=int(runs),
                        tried_op_us=float(tried_us) if tried_us else None,
                        tried_serial_op_us=float(tried_serial_us) if tried_serial_us else None,
                        tried_runs=int(tried),
                        min_op_us=float(min_us), last_run="executor" if last_exec else "serial",
                        parallelism=float(par) if par else None))
    return out


def to_chrome_trace(events):
    """Chrome trace-event JSON (a dict) for Perfetto or chrome://tracing: one
    row per worker thread, one slice per op instance."""
    out = []
    # forward and backward ops run one after the other: lay the runs end to end
    offset = 0
    by_run = {}
    for e in events:
        by_run.setdefault((e["op_index"], e["direction"]), []).append(e)
    for (idx, direction), evs in sorted(by_run.items()):
        start = min(e["start_us"] for e in evs)
        for e in evs:
            out.append({"name": "%s t=%d%s" % (e["type"], e["timestep"], " (helped part)" if e.get("part") else ""),
                        "cat": direction + (" part" if e.get("part") else ""), "ph": "X",
                        "ts": offset + e["start_us"] - start, "dur": max(e["end_us"] - e["start_us"], 0),
                        "pid": 1, "tid": e["worker"],
                        "args": {"timestep": e["timestep"], "step_op": e["step_op"], "rnn_op": idx}})
        offset += max(e["end_us"] for e in evs) - start + 10
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def save_chrome_trace(events, path):
    with open(path, "w") as f:
        json.dump(to_chrome_trace(events), f)
    return path


def summary(events):
    """Busy time per worker and the wall time of each run (microseconds).

    A worker's busy time counts its tasks and the parts of other tasks'
    products it ran as a helper (README, "Helping"); the owner's task spans
    its whole product, so the busy times can add up to more than the work."""
    res = {}
    for e in events:
        r = res.setdefault((e["op_index"], e["direction"]), {"busy_us": {}, "start": e["start_us"], "end": 0})
        r["busy_us"][e["worker"]] = r["busy_us"].get(e["worker"], 0) + e["end_us"] - e["start_us"]
        r["start"] = min(r["start"], e["start_us"])
        r["end"] = max(r["end"], e["end_us"])
    return {k: {"wall_us": v["end"] - v["start"], "busy_us": v["busy_us"]} for k, v in res.items()}


def plot_timeline(events, path=None, title="RNN executor timeline", max_us=None):
    """Draws the timeline (one row per worker, each op instance a bar coloured
    by its timestep, each helped part a thin bar) with matplotlib and saves
    it to ``path`` (PNG) if given.
    Returns the matplotlib Figure. Raises ImportError without matplotlib."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    runs = {}
    for e in events:
        runs.setdefault((e["op_index"], e["direction"]), []).append(e)
    fig, axes = plt.subplots(len(runs) or 1, 1, figsize=(12, 1.2 + 1.4 * max(len(runs), 1)), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, ((idx, direction), evs) in zip(axes[:, 0], sorted(runs.items())):
        start = min(e["start_us"] for e in evs)
        workers = sorted({e["worker"] for e in evs})
        for e in evs:
            if max_us is not None and e["start_us"] - start > max_us:
                continue
            ax.barh(workers.index(e["worker"]), max(e["end_us"] - e["start_us"], 1) / 1000.0,
                    left=(e["start_us"] - start) / 1000.0, height=0.4 if e.get("part") else 0.8,
                    color=cmap(e["timestep"] % 10), edgecolor="none")
        ax.set_yticks(range(len(workers)))
        ax.set_yticklabels(["worker %d" % w for w in workers])
        ax.set_xlabel("ms (%s pass, colour = timestep mod 10, thin bars: parts helped)" % direction)
    axes[0, 0].set_title(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
