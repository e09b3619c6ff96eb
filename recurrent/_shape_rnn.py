"""Shape inference of the recurrent ops (csrc/rnn/recurrent_network.c).

- ``RecurrentNetwork``: input 0 is the sequence (T, N, ...). Recurrent state i (argument
  ``recurrent_states``) is a (T + L, N, S) blob, where its initial value (input
  ``initial_recurrent_state_ids[i]``) is (S,), (N, S) or (L, N, S) (L = 1 for the first two). An
  output is alias a (``alias_src`` / ``alias_dst`` / ``alias_offset``): the rows of its source
  from the offset on (offset -1: the last row; offset 1: rows 1 to the end), so an alias of
  state i with offset k >= 0 is (T + L - k, N, S), with offset -k is (k, N, S). An alias whose
  source is not a recurrent state is not inferred; nor is the last output (the step workspaces,
  no tensor). The step net itself is not inferred: its ops run in the step workspaces.
- ``RecurrentNetworkGradient``: its outputs are the gradients of forward inputs 0, ``param`` and
  ``initial_recurrent_state_ids`` in that order, each shaped like that input (the gradient op's
  inputs are the ``len(outputs_with_grads)`` output gradients, then the forward inputs).
- ``rnn_internal_apply_link`` (step nets): output 0 is ``window`` rows of the external blob,
  output 1 the external blob itself; ``rnn_internal_accumulate_gradient_input``: its output is
  its input 2, in place.
- ``RecurrentNetworkBlobFetcher``: its output holds the names of the blobs copied out of the step
  workspaces, a length no shape tells.
"""

from .shape_inference import FLOAT, UNDEFINED, ShapeError, Tensor, args, not_inferred, register


def _ints(a, name):
    v = a.get(name, [])
    return [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def _strs(a, name):
    v = a.get(name, [])
    return [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


@register("RecurrentNetwork")
def _recurrent_network(op, ins):
    a = args(op)
    x = ins[0]
    if x.dtype not in (FLOAT, UNDEFINED):
        raise ShapeError("RecurrentNetwork: input sequence '%s' must be float32" % op.input[0])
    if len(x.shape) < 2:
        raise ShapeError("RecurrentNetwork: input sequence '%s' must be at least 2-D (T, N, ...), got %s"
                         % (op.input[0], list(x.shape)))
    T, N = x.shape[0], x.shape[1]
    states = _strs(a, "recurrent_states")
    ids = _ints(a, "initial_recurrent_state_ids")
    if len(states) != len(ids):
        return [None] * len(op.output)
    shapes = {}
    for state, i in zip(states, ids):
        if not 0 <= i < len(ins):
            return [None] * len(op.output)
        init = ins[i].shape
        if not 1 <= len(init) <= 3:
            raise ShapeError("RecurrentNetwork: initial state '%s' must be 1-D, 2-D or 3-D, got %s"
                             % (op.input[i], list(init)))
        if len(init) >= 2 and init[-2] != N:
            raise ShapeError("RecurrentNetwork: initial state '%s' %s has batch size %d but the input "
                             "sequence has %d" % (op.input[i], list(init), init[-2], N))
        L = init[0] if len(init) == 3 else 1
        shapes[state] = (T + L, N, init[-1])
    out = [None] * len(op.output)
    src, dst, off = _strs(a, "alias_src"), _strs(a, "alias_dst"), _ints(a, "alias_offset")
    if not len(src) == len(dst) == len(off):
        return out
    # each output but the last: an alias destination, or a recurrent state by its own name (all its rows)
    for i, name in enumerate(str(o) for o in op.output[:-1]):
        if name in dst:
            k = dst.index(name)
            s, o = src[k], off[k]
            if s not in shapes:
                continue
            rows = shapes[s][0]
            if (o >= 0 and o > rows) or (o < 0 and o < -rows):
                raise ShapeError("RecurrentNetwork: alias %d ('%s' -> '%s'): offset %d is outside the %d rows"
                                 % (k, s, dst[k], o, rows))
            start = o if o >= 0 else rows + o
            out[i] = Tensor((rows - start,) + shapes[s][1:], FLOAT)
        elif name in shapes:
            out[i] = Tensor(shapes[name], FLOAT)
    return out


@register("RecurrentNetworkGradient", partial=True)
def _recurrent_network_gradient(op, ins):
    # partial: its last input is the step workspaces, which holds no tensor
    a = args(op)
    n_g = len(_ints(a, "outputs_with_grads"))
    positions = [0] + _ints(a, "param") + _ints(a, "initial_recurrent_state_ids")
    out = [None] * len(op.output)
    for k, pos in enumerate(positions[:len(op.output)]):
        if 0 <= n_g + pos < len(ins) and ins[n_g + pos] is not None:
            out[k] = Tensor(ins[n_g + pos].shape, FLOAT)
    return out


@register("rnn_internal_apply_link")
def _apply_link(op, ins):
    ext = ins[1]
    window = args(op).get("window", -1)
    if not isinstance(window, int) or window < 0 or len(ext.shape) < 1:
        return [None, None]
    return [Tensor((window,) + ext.shape[1:], ext.dtype), ext]


@register("rnn_internal_accumulate_gradient_input")
def _accumulate_gradient_input(op, ins):
    return [ins[2]]


not_inferred("its output holds the names of the blobs copied out of the step workspaces, a length no shape "
             "tells", "RecurrentNetworkBlobFetcher")


@register("InferenceLSTM")
def _inference_lstm(op, ins):
    # csrc/ops/inference_lstm.c: input (T, N, D) ((N, T, D) with batch_first), hx, cx (L * dirs, N, H),
    # then w_ih (4H, D_l), w_hh (4H, H)[, b_ih, b_hh (4H,)] per layer and direction
    a = args(op)
    L, bias, bf, bidir = (a.get(k, d) for k, d in (("num_layers", 1), ("has_biases", 1), ("batch_first", 0),
                                                    ("bidirectional", 0)))
    if not all(isinstance(v, int) for v in (L, bias, bf, bidir)) or L < 1 or any(v not in (0, 1)
                                                                                  for v in (bias, bf, bidir)):
        raise ShapeError("InferenceLSTM: num_layers must be >= 1 and has_biases / batch_first / bidirectional "
                         "0 or 1, got %r" % ((L, bias, bf, bidir),))
    dirs, per = 2 if bidir else 1, 4 if bias else 2
    if len(ins) != 3 + L * dirs * per:
        raise ShapeError("InferenceLSTM: %d inputs, expected %d" % (len(ins), 3 + L * dirs * per))
    if any(t.dtype not in (FLOAT, UNDEFINED) for t in ins):
        raise ShapeError("InferenceLSTM: every input must be float32")
    x, hx, cx = ins[0].shape, ins[1].shape, ins[2].shape
    if len(x) != 3:
        raise ShapeError("InferenceLSTM: input '%s' must be 3-D, got %s" % (op.input[0], list(x)))
    T, N = (x[1], x[0]) if bf else (x[0], x[1])
    if len(hx) != 3 or hx[0] != L * dirs or hx[1] != N or tuple(cx) != tuple(hx):
        raise ShapeError("InferenceLSTM: hx %s and cx %s must both be (%d, %d, H)" % (list(hx), list(cx),
                                                                                       L * dirs, N))
    H = hx[2]
    for layer in range(L):
        for d in range(dirs):
            k = 3 + (layer * dirs + d) * per
            want = [(4 * H, x[2] if layer == 0 else dirs * H), (4 * H, H)] + [(4 * H,)] * (per - 2)
            for j, w in enumerate(want):
                if tuple(ins[k + j].shape) != w:
                    raise ShapeError("InferenceLSTM: input '%s' has shape %s, expected %s"
                                     % (op.input[k + j], list(ins[k + j].shape), list(w)))
    y = (N, T, dirs * H) if bf else (T, N, dirs * H)
    return [Tensor(y, FLOAT), Tensor(tuple(hx), FLOAT), Tensor(tuple(hx), FLOAT)]
