"""Fuzz target: RecurrentNetwork link / alias / state arguments and shapes.

Builds a recurrent net (a Mul cell, or a 1-2 layer rnn_cell.LSTM / GRU), then
overwrites some of its RecurrentNetwork(Gradient) arguments with random values
(link_internal/external/offset/window, alias_src/dst/offset,
recurrent_states, initial_recurrent_state_ids, timestep, outputs_with_grads,
param, executor settings) and now and then the forward op's outputs (reordered, a
recurrent state or another name added), feeds inputs of random shapes (T, N, D, initial
states of any rank, seq_lengths, output gradients) and runs forward (and
backward), twice with different T. A net run by RunNetOnce is first inferred
statically (recurrent.shape_inference): when it runs, the inference must not
have raised or refused it, and what it inferred must be what the run gave.

    python fuzz/fuzz_rnn.py [libFuzzer flags] [corpus dir]   (needs atheris)
    python fuzz/fuzz_rnn.py --replay FILE...                 (no atheris needed)
"""

import copy
import sys
import warnings

import numpy as np

from common import API_ERRORS, Provider, check_usable, expected, main

from recurrent import core, rnn_cell, shape_inference, workspace  # noqa: E402
from recurrent import recurrent as rnn  # noqa: E402
from recurrent.model_helper import ModelHelper  # noqa: E402
from recurrent.proto import NetDef, make_argument  # noqa: E402

LIST_ARGS = {
    "link_internal": "strings", "link_external": "strings", "link_offset": "ints", "link_window": "ints",
    "alias_src": "strings", "alias_dst": "strings", "alias_offset": "ints",
    "recurrent_states": "strings", "initial_recurrent_state_ids": "ints",
    "backward_link_internal": "strings", "backward_link_external": "strings", "backward_link_offset": "ints",
    "outputs_with_grads": "ints", "param": "ints", "param_grads": "strings",
    "recompute_blobs_on_backward": "strings",
}
SCALAR_ARGS = {"timestep": "s", "enable_rnn_executor": "i", "rnn_executor.num_threads": "i",
               "num_workspaces": "i", "rnn_executor.min_op_us": "f", "rnn_executor.min_parallelism": "f",
               "rnn_executor.trial": "i"}


_CACHE = {}


def build(p):
    """A fresh copy of one of the recurrent nets (built once per configuration,
    then copied: building is the slow, pure-Python part) with its parameters
    fed. Returns (net, kind, outputs, the layers' hidden sizes)."""
    kind = p.int(0, 2)
    forward_only = p.bool(0.3)
    two_layers = kind and p.bool(0.4)
    with_seq = p.bool(0.7)
    drop = p.bool(0.3)
    both_outputs = p.bool()
    # wide 1: hidden 6 / 5, so that the LSTM's gate products (4 x hidden >= 16
    # columns) multiply by packed step weights, which runs after the first
    # keep (RECURRENT_VERIFY_PACKS checks them); wide 2 (rarely): hidden 64 / 60,
    # fed batches of 60-70 half the time (feed), so that cells of 4096 elements
    # and more split by rows over a serial loop's threads, and in the executor
    # cells and gate products (70 x 256 x 64: over 1M multiply-adds) are posted
    # for idle threads to help with while one polls
    wide = (2 if p.bool(0.1) else 1) if kind and p.bool(0.3) else 0
    key = (kind, forward_only, two_layers, with_seq, drop, both_outputs, wide)
    if key not in _CACHE:
        _CACHE[key] = _build(*key)
    proto, params, outs = _CACHE[key]
    for name, value in params.items():
        workspace.FeedBlob(name, value)
    net = NetDef("outer")   # not core.Net: no new unique net name per input
    # mutate() replaces arguments of the RecurrentNetwork ops, never edits
    # them: copying those ops with their own argument lists is enough
    for op in proto.op:
        if op.type.startswith("RecurrentNetwork"):
            op = copy.copy(op)
            op.arg = list(op.arg)
        net.op.append(op)
    net.external_input.extend(proto.external_input)
    return net, kind, outs, _widths(wide)


def _widths(wide):
    """The layers' hidden sizes (the second when there are two layers)."""
    return [[2, 3], [6, 5], [64, 60]][wide]


def _build(kind, forward_only, two_layers, with_seq, drop, both_outputs, wide):
    workspace.ResetWorkspace()
    if kind == 0:
        net = core.Net("outer")
        cell = core.Net("cell")
        input_t, prev = cell.AddExternalInputs("input_t", "output_t_prev")
        out = cell.Mul([input_t, prev], "output_t")
        cell.AddExternalOutput(out)
        outs = rnn.recurrent_net(net, cell, [(input_t, "x")], [(prev, "h0")], {prev: out}, scope="r",
                                 forward_only=forward_only,
                                 outputs_with_grads=(0, 1) if both_outputs else (0,))
        if not forward_only:
            ys = {str(outs[0]): "g_all", str(outs[1]): "g_last"} if both_outputs else {str(outs[0]): "g_all"}
            net.AddGradientOperators(ys)
        return net.Proto(), {}, outs
    m = ModelHelper(name="m")
    dims = _widths(wide)[:2 if two_layers else 1]
    states = ["h0", "c0", "h1", "c1"][:2 * len(dims)] if kind == 1 else ["h0", "h1"][:len(dims)]
    f = rnn_cell.LSTM if kind == 1 else rnn_cell.GRU
    outs = f(m, "x", "seq" if with_seq else None, states, 2, dims if len(dims) > 1 else dims[0], scope="l",
             forward_only=forward_only, drop_states=drop)
    workspace.RunNetOnce(m.param_init_net)
    if not forward_only:
        m.AddGradientOperators({str(outs[0]): "g_all"})
    params = {str(b): workspace.FetchBlob(str(b)) for b in m.params}
    return m.net.Proto(), params, outs


def mutate(p, net):
    names = ["x", "h0", "c0", "input_t", "output_t", "output_t_prev", "r/output_t_prev_states", "timestep",
             "l/hidden_t_prev", "l/l/hidden_t_prev_states", "l/i2h", "nope", ""]
    ops = [op for op in net.op if op.type.startswith("RecurrentNetwork")]
    if ops and p.bool(0.1):
        # the automatic choice on these tiny ops: a time threshold they pass,
        # so that the first executor run of 8+ steps (feed) weighs the graph
        # against min_parallelism (as given, or a fuzzed value below), or one
        # they do not (1e6 us), so that with trial (the default) their runs of
        # 8+ steps alternate between the executor and the serial loop, timed
        min_us = 0.001 if p.bool() else 1e6
        for op in ops:
            op.arg[:] = [a for a in op.arg if a.name != "rnn_executor.min_op_us"]
            op.arg.append(make_argument("rnn_executor.min_op_us", min_us))
    for _ in range(p.int(0, 3)):
        if not ops:
            break
        op = p.pick(ops)
        if p.bool(0.75):
            key = p.pick(sorted(LIST_ARGS))
            cur = [a for a in op.arg if a.name == key]
            old = list(cur[0].value()) if cur else []
            akind = LIST_ARGS[key]
            n = len(old) if old and p.bool(0.7) else p.int(0, 4)
            if akind == "ints":
                val = [p.interesting_int((-2, 4)) for _ in range(n)]
            else:
                val = [p.pick(names + old) if old else p.pick(names) for _ in range(n)]
            if old and p.bool(0.5) and n:
                # change one entry only
                val = old[:]
                i = p.int(0, len(val) - 1)
                val[i] = p.interesting_int((-2, 4)) if akind == "ints" else p.pick(names)
        else:
            key = p.pick(sorted(SCALAR_ARGS))
            akind = SCALAR_ARGS[key]
            if akind == "s":
                val = p.pick(names)
            elif akind == "f":
                val = p.pick([-1.0, 0.0, 0.25, 4.0, 1e7, float("nan"), float("inf")])
            else:
                val = p.interesting_int((-1, 5))
        op.arg[:] = [a for a in op.arg if a.name != key]
        if akind == "strings" and not val:
            continue
        op.arg.append(make_argument(key, val))
    fwd = [op for op in ops if op.type == "RecurrentNetwork"]
    if fwd and p.bool(0.15):
        # the outputs go by name: the alias destinations in any order, a recurrent state's own name
        op = p.pick(fwd)
        body, ws = [str(o) for o in op.output[:-1]], str(op.output[-1])
        if p.bool():
            body.reverse()
        if p.bool(0.7):
            body.insert(p.int(0, len(body)), p.pick(names))
        del op.output[:]
        op.output.extend(body + [ws])


def feed(p, kind, outs, dims):
    # now and then 8-9 steps: with min_op_us > 0, the third run of a created
    # net weighs the executor's graph (rnn_executor.min_parallelism)
    T = p.int(8, 9) if p.bool(0.1) else p.int(0, 5)
    # now and then a batch over 64 rows: the packed step products' larger-M path (rc_packed_rows_ok)
    N = p.int(0, 3) if p.bool(0.2) else (p.int(65, 70) if p.bool(0.05) else 2)
    if dims[0] >= 64 and p.bool(0.5):
        N = p.int(60, 70)  # 3840-4480 elements per cell: both sides of the split threshold
    D = 2 if kind else p.int(0, 3)
    if p.bool(0.15):
        shape = p.shape(4, 4)
    else:
        shape = (T, N, D)
    workspace.FeedBlob("x", p.array(shape, np.float32))
    for s in ("h0", "c0", "h1", "c1"):
        H = dims[0] if s.endswith("0") else dims[1]
        if kind == 0:
            H = D
        shape = p.pick([(H,), (N, H), (1, N, H), (2, N, H)]) if p.bool(0.85) else p.shape(4, 3)
        workspace.FeedBlob(s, p.array(shape, np.float32))
    seq = p.array((N,) if p.bool(0.85) else p.shape(2, 3), np.int32 if p.bool(0.9) else np.float32)
    workspace.FeedBlob("seq", seq)
    H = dims[0] if kind else D
    if outs is not None and len(outs) > 2 and kind == 1:
        H = dims[1] if "layer_1" in str(outs[0]) else dims[0]
    gshape = (T, N, H) if p.bool(0.8) else p.shape(3, 3)
    workspace.FeedBlob("g_all", p.array(gshape, np.float32))
    workspace.FeedBlob("g_last", p.array((1, N, H) if p.bool(0.8) else p.shape(3, 3), np.float32))


def infer_net(net):
    """The net's blobs inferred statically from the workspace (workspace.InferShapesAndTypes's
    engine), or the exception inferring raised (checked only if the net runs)."""
    desc = {n: None if v is None else shape_inference.Tensor(tuple(v[0]), v[1])
            for n, v in workspace._ws().blob_shapes().items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return shape_inference.infer([workspace._netdef(net)], desc)
    except Exception as e:  # noqa: BLE001 - a finding only if the net then runs
        return e


def check_inferred_net(net, inferred):
    """After a successful run: the inference neither raised nor refused, and every blob an op of the
    net wrote that it inferred has that shape and type."""
    if inferred is None or isinstance(inferred, Exception):
        raise AssertionError("shape inference of a net that ran %s" % (
            "refused its inputs" if inferred is None else "raised %r" % inferred))
    actual = workspace._ws().blob_shapes()
    for op in workspace._netdef(net).op:
        for o in op.output:
            t = inferred.get(o)
            got = actual.get(o)
            if t is not None and (got is None or tuple(got[0]) != t.shape or got[1] != t.dtype):
                raise AssertionError("shape inference: '%s' (written by %s) inferred %s dtype %d, the run "
                                     "gave %s" % (o, op.type, list(t.shape), t.dtype, got))


def test_one_input(data):
    p = Provider(data)
    workspace.ResetWorkspace()
    net, kind, outs, dims = build(p)
    mutate(p, net)
    for _ in range(p.int(1, 3)):
        feed(p, kind, outs, dims)
        try:
            if p.bool(0.5):
                inferred = infer_net(net)
                workspace.RunNetOnce(net)
                check_inferred_net(net, inferred)
            else:
                workspace.CreateNet(net, overwrite=True)
                workspace.RunNet(net, p.int(1, 3))
            for o in outs:
                workspace.FetchBlob(str(o))
        except API_ERRORS as e:
            expected(e)
    check_usable(workspace, core)


if __name__ == "__main__":
    main(test_one_input, sys.argv)
