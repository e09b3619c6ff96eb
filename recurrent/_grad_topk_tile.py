"""Gradient makers of TopK and Tile (csrc/ops/topk_tile.c), as Caffe2's (top_k.cc, tile_op.cc).

- ``TopK(X) -> (values, indices[, flatten_indices])``:
  ``TopKGradient([values_grad, indices, X]) -> X_grad`` with the forward op's ``axis``: zeros of X's
  shape with each value's gradient at its index. The integer outputs get no gradient.
- ``Tile(X[, tiles, axis]) -> Y``: ``TileGradient([Y_grad[, tiles, axis]]) -> X_grad`` with the
  forward op's ``tiles`` and ``axis``: the tiles of Y_grad summed. The tiles and axis inputs get none.
- ``LengthsTopK(X, lengths) -> (values, indices)``: ``LengthsTopKGradient([lengths, indices, values_grad])
  -> X_grad`` with the forward op's ``k``: zeros of X's length with each value's gradient at its position.
  The lengths and the indices get no gradient.
- ``TopKGradient``, ``TileGradient`` and ``LengthsTopKGradient`` have no gradient.
"""

from . import core
from .core import GradientRegistry


def _args(op, *names):
    return {a.name: a.value() for a in op.arg if a.name in names}


@GradientRegistry.RegisterGradient("TopK")
def _topk_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = str(op.input[0]) + "_grad"
    g = core.CreateOperator("TopKGradient", [g_output[0], op.output[1], op.input[0]], [gx],
                            **_args(op, "axis"))
    return [g], [gx]


@GradientRegistry.RegisterGradient("Tile")
def _tile_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * len(op.input)
    gx = str(op.input[0]) + "_grad"
    g = core.CreateOperator("TileGradient", [g_output[0]] + [str(b) for b in op.input[1:]], [gx],
                            **_args(op, "tiles", "axis"))
    return [g], [gx] + [None] * (len(op.input) - 1)


@GradientRegistry.RegisterGradient("LengthsTopK")
def _lengths_topk_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gx = str(op.input[0]) + "_grad"
    g = core.CreateOperator("LengthsTopKGradient", [op.input[1], op.output[1], g_output[0]], [gx],
                            **_args(op, "k"))
    return [g], [gx, None]


GradientRegistry.RegisterNoGradient("TopKGradient", "TileGradient", "LengthsTopKGradient")
