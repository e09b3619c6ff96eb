"""Gradient makers of the index and range ops (csrc/ops/ranges.c), as Caffe2's
(lengths_tile_op.cc, utility_ops.cc, filler_op.cc, lengths_pad_op.cc, mod_op.cc,
gather_ranges_to_dense_op.cc).

- ``LengthsTile(DATA, LENGTHS) -> OUTPUT``: ``LengthsSum([OUTPUT_grad, LENGTHS]) -> DATA_grad`` (each row's
  copies summed back, as Caffe2's GetLengthsTileGradient); LENGTHS gets no gradient.
- ``PackRNNSequence(values, lengths) -> output``: ``UnpackRNNSequence([output_grad, lengths]) -> values_grad``
  and ``UnpackRNNSequence`` the other way round: ``PackRNNSequence([output_grad, lengths]) -> values_grad``
  (Caffe2's GetPackRNNSequenceGradient / GetUnpackRNNSequenceGradient); lengths gets no gradient.
- ``LengthsRangeFill``, ``Range``, ``LengthsGather``, ``GatherRanges``, ``GatherRangesToDense``,
  ``LengthsPad``, ``ScatterAssign`` and ``Mod`` have no gradient (Caffe2: NO_GRADIENT or
  SHOULD_NOT_DO_GRADIENT): their inputs get none.
"""

from . import core
from .core import GradientRegistry


@GradientRegistry.RegisterGradient("LengthsTile")
def _lengths_tile_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    g_data = str(op.input[0]) + "_grad"
    grad_op = core.CreateOperator("LengthsSum", [g_output[0], op.input[1]], [g_data])
    return [grad_op], [g_data, None]


def _swap_grad(grad_type):
    def maker(op, g_output):
        if g_output[0] is None:
            return [], [None, None]
        g_values = str(op.input[0]) + "_grad"
        grad_op = core.CreateOperator(grad_type, [g_output[0], op.input[1]], [g_values])
        return [grad_op], [g_values, None]
    return maker


GradientRegistry.RegisterGradient("PackRNNSequence")(_swap_grad("UnpackRNNSequence"))
GradientRegistry.RegisterGradient("UnpackRNNSequence")(_swap_grad("PackRNNSequence"))


GradientRegistry.RegisterNoGradient("LengthsRangeFill", "Range", "LengthsGather", "GatherRanges",
                                    "GatherRangesToDense", "LengthsPad", "ScatterAssign", "Mod")
