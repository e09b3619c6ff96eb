"""Gradient makers of the lengths ops (csrc/ops/lengths.c), as Caffe2's.

- ``PackSegments(lengths, tensor) -> packed``:
  ``UnpackSegments([lengths, d_packed]) -> tensor_grad`` with the forward op's
  max_length. The padding of packed and the presence mask get no gradient.
- ``UnpackSegments(lengths, packed) -> tensor``:
  ``PackSegments([lengths, d_tensor, packed]) -> packed_grad``: the third input
  (ours) gives the gradient packed's number of steps. Caffe2's maker packed to
  max(lengths) (or max_length) steps, the wrong shape where packed had more.
- ``AddPadding(data[, lengths[, start_padding[, end_padding]]]) -> data_out[, lengths_out]``:
  ``RemovePadding([d_data_out(, lengths_out)]) -> data_grad``, and where the
  paddings are inputs ``GatherPadding([d_data_out, lengths_out]) ->
  start_padding_grad[, end_padding_grad]`` (one output sums the start and the end
  rows: start_padding stood for both). Both with the forward op's padding_width
  and end_padding_width. With a lengths input the forward op must have the
  lengths_out output (Caffe2 enforced the same).
- ``RemovePadding(data[, lengths]) -> data_out[, lengths_out]``:
  ``AddPadding([d_data_out(, lengths_out)]) -> data_grad`` (zero padding).
- Lengths and segment ids get no gradient; ``GatherPadding``,
  ``LengthsToSegmentIds``, ``LengthsToRanges``, ``LengthsToOffsets``, ``SegmentIdsToLengths`` and
  ``SegmentIdsToRanges`` have none.

Gradient blobs are named ``<input>_grad``.
"""

import copy

from .core import CreateOperator, GradientRegistry


def _args(op, names):
    return copy.deepcopy([a for a in op.arg if a.name in names])


_PAD_ARGS = ("padding_width", "end_padding_width")


@GradientRegistry.RegisterGradient("PackSegments")
def _pack_segments_grad(op, g_output):
    n_in = len(op.input)
    dy = g_output[0]
    if dy is None:
        return [], [None] * n_in
    gx = str(op.input[1]) + "_grad"
    g = CreateOperator("UnpackSegments", [str(op.input[0]), str(dy)], [gx])
    g.arg.extend(_args(op, ("max_length",)))
    return [g], [None, gx] + [None] * (n_in - 2)


@GradientRegistry.RegisterGradient("UnpackSegments")
def _unpack_segments_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return [], [None, None]
    gx = str(op.input[1]) + "_grad"
    return [CreateOperator("PackSegments", [str(op.input[0]), str(dy), str(op.input[1])], [gx])], [None, gx]


def _padding_lengths_in(op, kind):
    """[] without a lengths input, else [lengths_out] (which the forward op must produce)."""
    if len(op.input) < 2:
        return []
    if len(op.output) < 2:
        raise ValueError("%s gradient: op %s -> %s has a lengths input but no lengths_out output, which the "
                         "gradient needs (as Caffe2)"
                         % (kind, list(map(str, op.input)), list(map(str, op.output))))
    return [str(op.output[1])]


@GradientRegistry.RegisterGradient("AddPadding")
def _add_padding_grad(op, g_output):
    n_in = len(op.input)
    dy = g_output[0]
    if dy is None:
        return [], [None] * n_in
    ins = [str(dy)] + _padding_lengths_in(op, "AddPadding")
    gx = str(op.input[0]) + "_grad"
    g = CreateOperator("RemovePadding", ins, [gx])
    g.arg.extend(_args(op, _PAD_ARGS))
    ops, grads = [g], [gx] + [None] * (n_in - 1)
    if n_in >= 3:
        pads = [str(b) + "_grad" for b in op.input[2:]]
        gp = CreateOperator("GatherPadding", ins, pads)
        gp.arg.extend(_args(op, _PAD_ARGS))
        ops.append(gp)
        grads[2:] = pads
    return ops, grads


@GradientRegistry.RegisterGradient("RemovePadding")
def _remove_padding_grad(op, g_output):
    n_in = len(op.input)
    dy = g_output[0]
    if dy is None:
        return [], [None] * n_in
    ins = [str(dy)] + _padding_lengths_in(op, "RemovePadding")
    gx = str(op.input[0]) + "_grad"
    g = CreateOperator("AddPadding", ins, [gx])
    g.arg.extend(_args(op, _PAD_ARGS))
    return [g], [gx] + [None] * (n_in - 1)


GradientRegistry.RegisterNoGradient("GatherPadding", "LengthsToSegmentIds", "LengthsToRanges",
                                    "LengthsToOffsets", "SegmentIdsToLengths", "SegmentIdsToRanges")
