"""recurrent_net, retrieve_step_blobs, set_rnn_executor_config, and the
gradient maker of the RecurrentNetwork operator.

Mirrors caffe2.python.recurrent. ``recurrent_net`` turns a *cell net* (the ops
of one timestep) into one ``RecurrentNetwork`` operator: it works out the
links, aliases, references and parameters, builds the backward cell net from
the cell's registered gradients and passes everything to the C operator as
arguments (spec sections 1.2, 1.8, 2.2, 2.5, 2.6, 2.7).

Where Caffe2 was silent or wrong (spec section 9) we check and raise:
``ValueError`` for a malformed call, naming the blob; see the docstrings.
"""

import copy
import os

import numpy as np

from . import core, workspace
from . import scope as _scope
from .proto import NetDef, device_of, make_argument

__all__ = ["recurrent_net", "retrieve_step_blobs", "set_rnn_executor_config"]

_RNN_OP_TYPES = ("RecurrentNetwork", "RecurrentNetworkGradient")


# ---------------------------------------------------------------- helpers
def _proto(net):
    """The NetDef of a core.Net (or a NetDef itself)."""
    if isinstance(net, NetDef):
        return net
    if hasattr(net, "Proto") and callable(net.Proto):
        return net.Proto()
    raise TypeError("expected a core.Net or NetDef, got %s" % type(net).__name__)


def _seed_dropouts(proto, recompute):
    """A copy of ``proto`` in which every training Dropout op that writes a
    blob of ``recompute`` (recompute_blobs_on_backward) carries an argument
    ``seed``: the backward pass reruns such an op and must draw the forward's
    masks (they depend on the seed, the run and the timestep). Other Dropout
    ops without a seed get a fresh one from the RecurrentNetwork op when it
    is created."""
    recompute = {str(b) for b in recompute}

    def needs_seed(op):
        args = {a.name: a.value() for a in op.arg}
        return (op.type == "Dropout" and recompute & {str(o) for o in op.output} and "seed" not in args
                and not args.get("is_test", 0))

    if not any(needs_seed(op) for op in proto.op):
        return proto
    proto = copy.deepcopy(proto)
    for op in proto.op:
        if needs_seed(op):
            op.arg.extend([make_argument("seed", int.from_bytes(os.urandom(8), "little") >> 2)])
    return proto


def _unique(names):
    """Order-preserving de-duplication."""
    seen = set()
    out = []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def _ssa(proto):
    """core.get_ssa, returning (ssa, blob_versions) as Caffe2 did."""
    res = core.get_ssa(proto)
    if isinstance(res, tuple) and len(res) == 2 and isinstance(res[1], dict):
        return res
    # A get_ssa that returns only the per-op list: rebuild the versions.
    versions = {}
    for _ins, outs in res:
        for name, ver in outs:
            versions[str(name)] = max(versions.get(str(name), 0), ver)
    return res, versions


def _final_names_op(op_type, inputs, outputs):
    """An op of the step nets whose blob names are final: built with the name
    scope cleared, so a recurrent_net called inside a NameScope does not scope
    them twice."""
    with _scope.NameScope(None, reset=True):
        return core.CreateOperator(op_type, inputs, outputs)


def _written_blobs(ops):
    out = set()
    for op in ops:
        out.update(str(o) for o in op.output)
    return out


# ---------------------------------------------------------------- recurrent_net
def recurrent_net(net, cell_net, inputs, initial_cell_inputs, links, timestep=None, scope=None,
                  outputs_with_grads=(0,), recompute_blobs_on_backward=None, forward_only=False):
    """Adds one ``RecurrentNetwork`` operator to ``net`` and returns its outputs.

    net: the core.Net the operator is added to.
    cell_net: core.Net run once per timestep. Its external inputs are the
        per-step input, the previous states, the timestep blob and any
        *references* (weights, biases, seq_lengths...: every other external
        input, resolved from the outer workspace without copying). Its
        external outputs are the new states.
    inputs: ``[(input_t, input_blob)]`` -- exactly one sequence, T x N x ...;
        the cell sees row t as ``input_t``.
    initial_cell_inputs: ``[(x_prev, initial_blob), ...]`` -- per recurrent
        state, the cell input name and the outer blob holding its initial
        value (1-D: broadcast over the batch; 2-D N x S; 3-D L x N x S).
    links: ``{x_prev: x}`` -- the cell output that becomes ``x_prev`` at the
        next step, for every state.
    timestep: name of the int32 timestep blob the cell reads (default
        ``"timestep"``).
    scope: prefix for the state blobs (``<scope>/<x_prev>_states``); default
        a fresh ``net.NextName('recurrent')``.
    outputs_with_grads: indices into the returned outputs that receive a
        gradient from outside during backpropagation.
    recompute_blobs_on_backward: blobs the backward pass recomputes instead of
        keeping one copy per timestep (their producing cell ops are copied to
        the start of the backward cell net; every output of such an op must be
        in the set).
    forward_only: build no backward pass at all.

    Returns ``(x1_all, x1_last, x2_all, x2_last, ...)`` as BlobReferences, in
    ``initial_cell_inputs`` order: ``x_all`` is T x N x S (the state after
    every step), ``x_last`` 1 x N x S (the final state). The operator's last
    output, ``<scope>/step_workspaces``, is kept internal.

    Differences from Caffe2 (spec section 9): malformed calls raise
    ValueError naming the blob; a state input or sequence input that receives
    no gradient inside the cell gets no backward link (its gradient is zero)
    instead of a KeyError; where one backward gradient blob would have to be a
    view of two different rows (e.g. a cell that is a bare Sum), a Copy is
    inserted so each link has its own blob; the backward pass is seeded with
    gradients for the state outputs only (the only cell outputs the op
    exports), not for every cell external output.
    """
    inputs = list(inputs)
    if len(inputs) != 1:
        raise ValueError("recurrent_net: only one input blob is supported so far, got %d: %r"
                         % (len(inputs), [str(i[1]) for i in inputs] if inputs else []))
    initial_cell_inputs = [(str(a), str(b)) for a, b in initial_cell_inputs]
    links = {str(k): str(v) for k, v in dict(links).items()}
    cell_proto = _seed_dropouts(_proto(cell_net), recompute_blobs_on_backward or ())
    ts_name = "timestep" if timestep is None else str(timestep)
    input_t, input_blob = str(inputs[0][0]), str(inputs[0][1])

    op_name = net.NextName("recurrent")
    scope_name = op_name if scope is None else str(scope)

    def s(name):
        return "{}/{}".format(scope_name, name)

    cell_inputs = [ci for ci, _ in initial_cell_inputs]
    initial_blobs = [b for _, b in initial_cell_inputs]
    cell_ext_in = _unique(str(b) for b in cell_proto.external_input)
    cell_ext_out = _unique(str(b) for b in cell_proto.external_output)
    cell_written = _written_blobs(cell_proto.op)

    # --- validate the call (Caffe2 raised KeyErrors or built broken ops here)
    for ci in cell_inputs:
        if ci not in links:
            raise ValueError("recurrent_net: state input '%s' has no entry in links (it must map to the "
                             "cell output that becomes '%s' at the next step)" % (ci, ci))
    for k in links:
        if k not in cell_inputs:
            raise ValueError("recurrent_net: links maps '%s', which is not a state input of "
                             "initial_cell_inputs %r" % (k, cell_inputs))
    if len(set(cell_inputs)) != len(cell_inputs):
        raise ValueError("recurrent_net: a state input appears twice in initial_cell_inputs: %r"
                         % cell_inputs)
    cell_outputs = [links[ci] for ci in cell_inputs]
    internals = [input_t] + cell_inputs + cell_outputs
    for name in set(internals):
        if internals.count(name) > 1:
            raise ValueError("recurrent_net: blob '%s' is used for two links (sequence input, state inputs "
                             "and state outputs must all be different blobs; use a Copy in the cell)" % name)
    for x in cell_outputs:
        if x not in cell_written:
            raise ValueError("recurrent_net: state output '%s' is not written by any op of cell net '%s'"
                             % (x, cell_proto.name))
    if ts_name in cell_written:
        raise ValueError("recurrent_net: the timestep blob '%s' cannot be an output of a cell op" % ts_name)
    n_outputs = 2 * len(initial_cell_inputs)
    outputs_with_grads = [int(i) for i in outputs_with_grads]
    for i in outputs_with_grads:
        if not 0 <= i < n_outputs:
            raise ValueError("recurrent_net: outputs_with_grads index %d out of range: the op has %d outputs "
                             "(x_all, x_last per state)" % (i, n_outputs))

    # --- references: cell external inputs that are none of the above (spec 1.8)
    known = set([input_t, input_blob, ts_name] + initial_blobs + cell_inputs)
    references = [b for b in cell_ext_in if b not in known]

    # --- backward cell net (spec 2.5, 2.6, 2.7)
    backward = None
    backward_mapping = {}
    if not forward_only:
        # Gradients arrive from outside for the state outputs: the only cell
        # outputs the op exports (Caffe2 seeded every cell external output,
        # which left a non-state output's gradient blob undefined).
        backward_ops, backward_mapping = core.GradientRegistry.GetBackwardPass(
            list(cell_proto.op), {o: o + "_grad" for o in cell_outputs})
        backward_ops = list(backward_ops)
        for k, v in list(backward_mapping.items()):
            if isinstance(v, core.GradientSlice):
                # The op sums a step's gradients into dense buffers: a sparse
                # step gradient (a Gather inside the cell) is made dense there.
                dense = str(k) + "_grad_dense"
                backward_ops.append(_final_names_op(
                    "SparseToDense", [str(v.indices), str(v.values), str(k)], [dense]))
                backward_mapping[k] = dense
        backward_mapping = {str(k): str(v) for k, v in backward_mapping.items() if v is not None}
        backward = NetDef("RecurrentBackwardStep")
        backward.type = "simple"
        recompute = set()
        if recompute_blobs_on_backward is not None:
            recompute = {str(b) for b in recompute_blobs_on_backward}
            for op in cell_proto.op:
                outs = set(str(o) for o in op.output)
                if outs & recompute:
                    if not outs <= recompute:
                        raise ValueError(
                            "recurrent_net: op %s writes %r; to recompute it on backward, all its outputs "
                            "must be in recompute_blobs_on_backward %r"
                            % (op.type, sorted(outs), sorted(recompute)))
                    backward.op.append(copy.deepcopy(op))
        backward.op.extend(copy.deepcopy(op) for op in backward_ops)

        # forward intermediates the backward pass reads ("scratches")
        bwd_ssa, _ = _ssa(backward)
        undefined = set(str(b) for b in core.get_undefined_blobs(bwd_ssa))
        _, fwd_versions = _ssa(cell_proto)
        scratches = [b for b, v in fwd_versions.items()
                     if v > 0 and b in undefined and b not in cell_ext_out]
        backward.external_input.extend(sorted(scratches))

    # --- links and aliases
    forward_links = []
    backward_links = []
    aliases = []
    recurrent_states = []
    all_outputs = []
    bwd_written = _written_blobs(backward.op) if backward is not None else set()
    for cell_input, _init in initial_cell_inputs:
        state = s(cell_input + "_states")
        states_grad = state + "_grad"
        cell_output = links[cell_input]
        forward_links.append((cell_input, state, 0))
        forward_links.append((cell_output, state, 1))
        aliases.append((state, cell_output + "_all", 1))
        aliases.append((state, cell_output + "_last", -1))
        all_outputs.extend([cell_output + "_all", cell_output + "_last"])
        recurrent_states.append(state)
        if backward is not None:
            backward_links.append((cell_output + "_grad", states_grad, 1))
            backward.external_input.append(cell_output + "_grad")
            prev_grad = cell_input + "_grad"
            if prev_grad in bwd_written:
                backward_links.append((prev_grad, states_grad, 0))
            elif cell_input in backward_mapping:
                backward_links.append((backward_mapping[cell_input], states_grad, 0))
            # else: nothing in the cell depends differentiably on this state
            # input; its gradient rows stay zero and need no link.
    forward_links.append((input_t, input_blob, 0))
    if backward is not None:
        if input_t in backward_mapping:
            backward_links.append((backward_mapping[input_t], input_blob + "_grad", 0))
        backward.external_input.extend(cell_ext_in)
        backward.external_input.extend(_unique(cell_ext_out + cell_outputs))

        # A gradient computed inside the cell for a blob that also arrives
        # from outside (x_grad, through a link) is added to it, not written
        # over it: rename such outputs to <blob>_accum and Sum (spec 2.5).
        ext = set(backward.external_input)
        ops = backward.op
        backward.op = []
        for op in ops:
            backward.op.append(op)
            ins = set(str(i) for i in op.input)
            for j, out in enumerate(list(op.output)):
                out = str(out)
                if out in ext and out not in ins:
                    accum = out + "_accum"
                    op.output[j] = accum
                    backward.op.append(_final_names_op("Sum", [out, accum], [out]))

        # Links that write a gradient (state-input and sequence-input links,
        # offset 0) must each own their blob: a blob that is also another
        # link's internal, or that no op writes (a pure pass-through), is
        # copied to a fresh blob first.
        read_internals = set(bl[0] for bl in backward_links if bl[2] == 1)
        written_now = _written_blobs(backward.op)
        taken = set(read_internals)
        fixed = []
        for internal, external, offset in backward_links:
            if offset == 1:
                fixed.append((internal, external, offset))
                continue
            if internal in taken or internal not in written_now:
                fresh = "{}_{}_link".format(internal, external)
                backward.op.append(_final_names_op("Copy", [internal], [fresh]))
                if internal not in written_now and internal not in backward.external_input:
                    backward.external_input.append(internal)
                internal = fresh
            taken.add(internal)
            fixed.append((internal, external, offset))
        backward_links = fixed
        backward.external_input[:] = _unique(backward.external_input)

    def unpack(triples):
        if not triples:
            return [], [], []
        a, b, c = zip(*triples)
        return [str(x) for x in a], [str(x) for x in b], [int(x) for x in c]

    link_internal, link_external, link_offset = unpack(forward_links)
    alias_src, alias_dst, alias_offset = unpack(aliases)

    all_inputs = [input_blob] + initial_blobs + references
    step_net = copy.deepcopy(cell_proto)
    step_net.type = "simple"
    cell_proto.type = "simple"

    args = dict(
        alias_src=alias_src,
        alias_dst=alias_dst,
        alias_offset=alias_offset,
        recurrent_states=recurrent_states,
        # positions, not all_inputs.index(): the same blob may feed two states
        initial_recurrent_state_ids=[1 + i for i in range(len(initial_blobs))],
        link_internal=link_internal,
        link_external=link_external,
        link_offset=link_offset,
        enable_rnn_executor=1,
        step_net=step_net,
        timestep=ts_name,
    )
    if backward is not None:
        params = [r for r in references if r in backward_mapping]
        base = 1 + len(initial_blobs)
        b_int, b_ext, b_off = unpack(backward_links)
        args.update(
            param=[base + references.index(p) for p in params],
            param_grads=[backward_mapping[p] for p in params],
            backward_link_internal=b_int,
            backward_link_external=b_ext,
            backward_link_offset=b_off,
            outputs_with_grads=outputs_with_grads,
            recompute_blobs_on_backward=sorted(set(str(b) for b in (recompute_blobs_on_backward or ()))),
        )
        if backward.op:
            args["backward_step_net"] = backward

    # BlobReferences: the names are final and must not get the current name
    # scope again; the step-workspaces blob does get it (as in Caffe2), so two
    # RNNs with the same ``scope`` under different NameScopes stay apart.
    results = net.RecurrentNetwork(
        [core.BlobReference(b) for b in all_inputs],
        [core.BlobReference(b) for b in all_outputs]
        + [core.BlobReference(core.ScopedName(s("step_workspaces")))],
        **args)
    if not isinstance(results, (list, tuple)):
        results = (results,)
    # the last output (the step workspaces) is internal to forward/backward
    return tuple(results[:-1])


# ---------------------------------------------------------------- the gradient maker
def _arg(op, name, default=None):
    for a in op.arg:
        if a.name == name:
            return a.value()
    return default


def _rnn_op_label(op):
    return "op RecurrentNetwork%s" % (" '%s'" % op.name if op.name else "")


@core.GradientRegistry.RegisterGradient("RecurrentNetwork")
def _recurrent_network_grad(op, g_output):
    """RecurrentNetworkGradient, per spec 2.1.

    Inputs: GO(i) for i in outputs_with_grads, then every forward input, then
    every forward output (the last is the step workspaces). Outputs: GI(0),
    GI(p) for p in param, GI(r) for r in initial_recurrent_state_ids. All
    forward arguments are copied. Where one blob feeds several of those
    inputs (say the same zero blob as two initial states) the gradient op
    writes a separate blob for each position (``<blob>_grad`` for the first,
    ``<blob>_grad_autosplit_rnn_<k>`` for the others), one per entry of
    g_input, and GetBackwardPass's gradient accumulation sums them, so
    nothing is overwritten.
    """
    if _arg(op, "backward_step_net") is None:
        raise ValueError("%s: built with forward_only=True (or a cell with no gradient); it has no "
                         "backward step net" % _rnn_op_label(op))
    owg = [int(i) for i in (_arg(op, "outputs_with_grads") or [])]
    if not owg:
        raise ValueError("%s: outputs_with_grads is empty; there is no gradient to propagate"
                         % _rnn_op_label(op))
    n_out = len(op.output) - 1
    g_output = list(g_output) + [None] * (len(op.output) - len(g_output))
    # outputs_with_grads holds output indices here; the gradient op reads alias indices (Caffe2 used one
    # list for both, which agree when the outputs are the alias destinations in order). An output that
    # names a recurrent state itself (allowed, as in Caffe2) is, for the gradient op, one more alias of
    # that state at offset 0 (all its rows), appended to the alias arguments.
    outs, dst = [str(o) for o in op.output[:-1]], [str(d) for d in (_arg(op, "alias_dst") or [])]
    for i in owg:
        if not 0 <= i < n_out:
            raise ValueError("%s: outputs_with_grads %r: %d is not an output index (the op has %d outputs "
                             "before the step-workspaces blob)" % (_rnn_op_label(op), owg, i, n_out))
        if g_output[i] is None:
            raise ValueError("%s: output %d '%s' is listed in outputs_with_grads %r but receives no "
                             "gradient" % (_rnn_op_label(op), i, op.output[i], owg))
    for i in range(n_out):
        if g_output[i] is not None and i not in owg:
            raise ValueError("%s: output %d '%s' receives a gradient but is not listed in "
                             "outputs_with_grads %r; add %d to outputs_with_grads"
                             % (_rnn_op_label(op), i, op.output[i], owg, i))
    g_ins = [str(g_output[i]) for i in owg]

    params = [int(p) for p in (_arg(op, "param") or [])]
    init_ids = [int(r) for r in (_arg(op, "initial_recurrent_state_ids") or [])]
    positions = [0] + params + init_ids
    out_names = []
    g_input = [None] * len(op.input)
    seen = set()
    for k, pos in enumerate(positions):
        blob = str(op.input[pos])
        name = blob + "_grad"
        if blob in seen:
            # the same blob at another input position: a separate gradient
            # blob, which GetBackwardPass sums with the first one
            name = "%s_autosplit_rnn_%d" % (name, k)
        seen.add(blob)
        out_names.append(name)
        g_input[pos] = name

    src = [str(x) for x in (_arg(op, "alias_src") or [])]
    offsets = [int(x) for x in (_arg(op, "alias_offset") or [])]
    alias_owg = []
    for i in owg:
        if outs[i] in dst:
            alias_owg.append(dst.index(outs[i]))
        else:  # a recurrent state (the forward op refuses any other name)
            alias_owg.append(len(dst))
            src, dst, offsets = src + [outs[i]], dst + [outs[i]], offsets + [0]
    new_args = {"outputs_with_grads": alias_owg, "alias_src": src, "alias_dst": dst, "alias_offset": offsets}
    grad_op = core.CreateOperator(
        "RecurrentNetworkGradient",
        g_ins + [str(i) for i in op.input] + dst + [str(op.output[-1])],
        out_names)
    grad_op.arg = [copy.deepcopy(a) if a.name not in new_args else make_argument(a.name, new_args[a.name])
                   for a in op.arg]
    have = {a.name for a in op.arg}
    grad_op.arg.extend(make_argument(k, v) for k, v in new_args.items() if k not in have)
    if device_of(op) is not None:
        grad_op.device_option = copy.deepcopy(device_of(op))
    return [grad_op], g_input


# ---------------------------------------------------------------- executor config
def set_rnn_executor_config(rnn_op, num_threads=None, max_cuda_streams=None, min_op_us=None,
                            min_parallelism=None, trial=None):
    """Sets ``rnn_executor.num_threads`` / ``rnn_executor.max_cuda_streams`` /
    ``rnn_executor.min_op_us`` / ``rnn_executor.min_parallelism`` /
    ``rnn_executor.trial`` on a RecurrentNetwork or
    RecurrentNetworkGradient OperatorDef (an existing setting is replaced).
    Takes effect when the net is (re)created.

    ``min_op_us`` (ours, not Caffe2's): the op's first runs are serial and
    timed; if its step ops take at least this many microseconds on average,
    it uses the executor from then on, else it runs serially (the
    executor's cost per op may outweigh the parallelism), or with ``trial``
    (the default) measures both. 0 always uses the executor. Default: the
    global flag (``--caffe2_rnn_executor_min_op_us``, 4).

    ``trial`` (ours; True by default): where the rules here are in doubt,
    the op measures instead of guessing. That is when its step ops averaged
    under ``min_op_us`` (on small cells the serial loop runs each product on
    one core, and the executor measured 0.5-1.4x it, with no op time that
    separates the two), and when the parallelism is under
    ``min_parallelism`` but not a chain (1.1 or more). Its next runs of at
    least 8 timesteps then alternate between the executor and the serial
    loop, timed as a whole, two of each (shorter runs meanwhile are
    serial), and it keeps the executor only if its faster run took at most
    0.95x the serial loop's. False: the rules alone (below either
    threshold, serial).

    ``min_parallelism`` (ours): when the timed runs chose the executor, its
    first run of at least 8 timesteps weighs the dependency graph with the
    ops' timed costs; if all the work over the longest dependency chain's is
    below this (1.0 for a chain such as a one-layer LSTM, where no two ops
    can overlap; about 2.2-2.8 for two LSTM layers), the op runs serially
    from then on: the serial loop splits every product over the cores, and
    an executor that cannot keep two threads busy loses to it. With
    ``trial`` only a chain (below 1.1) goes serial at once; between 1.1 and
    this the op measures both. Default 2.5 (measured on 2 cores, see the
    README); 0 skips the check. Not used with ``min_op_us`` 0 (no timed
    runs)."""
    if getattr(rnn_op, "type", None) not in _RNN_OP_TYPES:
        raise ValueError("set_rnn_executor_config: expected a RecurrentNetwork or RecurrentNetworkGradient "
                         "op, got %r" % getattr(rnn_op, "type", type(rnn_op).__name__))

    def replace(key, value):
        name = "rnn_executor." + key
        rnn_op.arg[:] = [a for a in rnn_op.arg if a.name != name]
        rnn_op.arg.append(make_argument(name, value))

    def put(key, value):
        value = int(value)
        if value < 1:
            raise ValueError("set_rnn_executor_config: %s must be >= 1, got %d" % (key, value))
        replace(key, value)

    def put_float(key, value, hi, what):  # in [0, hi]
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError("set_rnn_executor_config: %s must be %s, got %r" % (key, what, value)) from None
        if not 0 <= v <= float(hi):
            raise ValueError("set_rnn_executor_config: %s must be in [0, %s], got %r" % (key, hi, value))
        replace(key, v)

    if num_threads is not None:
        put("num_threads", num_threads)
    if max_cuda_streams is not None:
        put("max_cuda_streams", max_cuda_streams)
    if min_op_us is not None:
        put_float("min_op_us", min_op_us, "1e6", "a number of microseconds")
    if min_parallelism is not None:
        put_float("min_parallelism", min_parallelism, "1024", "a number")
    if trial is not None:
        if not isinstance(trial, (bool, int, np.integer)) or trial not in (0, 1):
            raise ValueError("set_rnn_executor_config: trial must be True or False, got %r" % (trial,))
        replace("trial", int(trial))


# ---------------------------------------------------------------- step blobs
def _decode_names(arr):
    """RecurrentNetworkBlobFetcher's names: int32 UTF-8 bytes, each name
    terminated by a 0 byte."""
    data = bytes((np.asarray(arr).ravel().astype(np.int64) & 0xFF).astype(np.uint8).tolist())
    if not data:
        return []
    parts = data.split(b"\0")
    if parts[-1] != b"":
        raise ValueError("RecurrentNetworkBlobFetcher: names list is not 0-terminated")
    return [p.decode("utf-8") for p in parts[:-1]]


class StepBlobName(str):
    """A name ``retrieve_step_blobs`` returns: a ``str`` that also has ``decode()`` (returning
    the plain ``str``), because Caffe2 returned ``bytes`` under Python 3 and code written for it
    calls ``x.decode()`` on each name."""
    __slots__ = ()

    def decode(self, encoding="utf-8", errors="strict"):
        return str(self)


def retrieve_step_blobs(net, prefix="rnn"):
    """Copies the blobs of every step workspace into the current workspace and
    returns their names (``StepBlobName``: a ``str`` with Caffe2's ``decode()``).
    Call it after the net has run.

    For each ``RecurrentNetwork`` op of ``net``, in order, every local blob
    ``b`` of step workspace ``i`` becomes ``<p>_<b><i>`` (no separator before
    the index, as in Caffe2), where ``<p>`` is ``prefix`` for the first RNN op
    and ``<prefix>_<k>`` for the k-th (k >= 2), so two RNN ops never overwrite
    each other's blobs (Caffe2 used the same prefix for all). The name lists
    themselves are kept in blobs ``<p>__step_blob_names``.
    """
    names = []
    k = 0
    for op in _proto(net).op:
        if op.type != "RecurrentNetwork":
            continue
        k += 1
        p = prefix if k == 1 else "%s_%d" % (prefix, k)
        names_blob = p + "__step_blob_names"
        workspace.RunOperatorOnce(core.CreateOperator(
            "RecurrentNetworkBlobFetcher", [op.output[-1]], [names_blob], prefix=p))
        names.extend(StepBlobName(n) for n in _decode_names(workspace.FetchBlob(names_blob)))
    return names
