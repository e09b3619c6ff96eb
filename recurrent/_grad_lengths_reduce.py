"""Gradient makers of the segment reductions by lengths (csrc/ops/lengths_reduce.c).

Input orders are Caffe2's (LengthsOpGetGradient in segment_reduction_op.h):
[original inputs the reducer needs (SCALARS)], [forward output (Max)],
dOUT, LENGTHS, [DATA (WithMainInput)], [INDICES (sparse WithMainInput)].

- ``LengthsSum`` / ``LengthsMean``: ``LengthsIndicesInGradient{Sum,Mean}Gradient([dOUT,
  LENGTHS, DATA]) -> DATA_grad``, dense: Caffe2's makers' op (its GradientNeedIndices
  ops, registered for LengthsSum / LengthsMean in segment_reduction_op.cc), which takes
  DATA only for its row count; ``Lengths{Sum,Mean}Gradient([dOUT, LENGTHS])`` compute
  the same and stay registered (as in Caffe2).
- ``LengthsWeightedSum(DATA, SCALARS, LENGTHS)``:
  ``LengthsWeightedSumGradient([SCALARS, dOUT, LENGTHS]) -> DATA_grad``; with
  argument ``grad_on_weights=1`` (as Caffe2)
  ``LengthsWeightedSumWithMainInputGradient([SCALARS, dOUT, LENGTHS, DATA])
  -> (DATA_grad, SCALARS_grad)``; otherwise SCALARS get no gradient.
- ``LengthsMax``: ``LengthsMaxWithMainInputAndForwardOutputGradient([OUT, dOUT,
  LENGTHS, DATA]) -> DATA_grad``.
- ``SparseLengths{Sum,Mean,WeightedSum}(DATA, [SCALARS,] INDICES, LENGTHS)``:
  the gradient of DATA is sparse, as in Caffe2: ``core.GradientSlice(INDICES,
  values)``, ``values`` (shaped ``(len(INDICES),) + DATA.shape[1:]``) made by
  Caffe2's makers' ops (lengths_reducer_ops.cc: GradientNeedIndices):
  ``SparseLengthsIndicesInGradient{Sum,Mean}Gradient([dOUT, LENGTHS, INDICES])``,
  ``SparseLengthsIndicesInGradientWeightedSumGradient([SCALARS, dOUT, LENGTHS,
  INDICES])`` or, with ``grad_on_weights=1``,
  ``SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient([SCALARS, dOUT,
  LENGTHS, DATA, INDICES])``, which also gives SCALARS_grad. INDICES only give
  the row count (unused on CPU, as Caffe2's); ``SparseLengths{Sum,Mean,
  WeightedSum}Gradient`` without them compute the same rows and stay
  registered. The values blob is named after the forward output
  (``<OUT>_<DATA>_grad_values``), so two ops reading one table give two slices
  that the backward pass densifies and sums.
- LENGTHS and INDICES get no gradient; the gradient ops have none.
"""

from . import core
from .core import GradientRegistry


def _grad_on_weights(op):
    for a in op.arg:
        if a.name == "grad_on_weights":
            return bool(a.i)
    return False


def _lengths_grad(grad_type):
    def maker(op, g_output):
        if g_output[0] is None:
            return [], [None, None]
        g_data = str(op.input[0]) + "_grad"
        grad_op = core.CreateOperator(grad_type, [g_output[0], op.input[1], op.input[0]], [g_data])
        return [grad_op], [g_data, None]
    return maker


@GradientRegistry.RegisterGradient("LengthsWeightedSum")
def _lengths_weighted_sum_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None, None]
    data, scalars, lengths = (str(x) for x in op.input)
    if _grad_on_weights(op):
        outs = [data + "_grad", scalars + "_grad"]
        grad_op = core.CreateOperator("LengthsWeightedSumWithMainInputGradient",
                                      [scalars, g_output[0], lengths, data], outs)
        return [grad_op], [outs[0], outs[1], None]
    grad_op = core.CreateOperator("LengthsWeightedSumGradient", [scalars, g_output[0], lengths],
                                  [data + "_grad"])
    return [grad_op], [data + "_grad", None, None]


@GradientRegistry.RegisterGradient("LengthsMax")
def _lengths_max_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    g_data = str(op.input[0]) + "_grad"
    grad_op = core.CreateOperator("LengthsMaxWithMainInputAndForwardOutputGradient",
                                  [op.output[0], g_output[0], op.input[1], op.input[0]], [g_data])
    return [grad_op], [g_data, None]


def _values_name(op):
    return "%s_%s_grad_values" % (op.output[0], op.input[0])


def _sparse_lengths_grad(grad_type):
    def maker(op, g_output):
        if g_output[0] is None:
            return [], [None, None, None]
        data, indices, lengths = (str(x) for x in op.input)
        values = _values_name(op)
        grad_op = core.CreateOperator(grad_type, [g_output[0], lengths, indices], [values])
        return [grad_op], [core.GradientSlice(indices, values), None, None]
    return maker


@GradientRegistry.RegisterGradient("SparseLengthsWeightedSum")
def _sparse_lengths_weighted_sum_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None, None, None]
    data, scalars, indices, lengths = (str(x) for x in op.input)
    values = _values_name(op)
    if _grad_on_weights(op):
        grad_op = core.CreateOperator("SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient",
                                      [scalars, g_output[0], lengths, data, indices],
                                      [values, scalars + "_grad"])
        return [grad_op], [core.GradientSlice(indices, values), scalars + "_grad", None, None]
    grad_op = core.CreateOperator("SparseLengthsIndicesInGradientWeightedSumGradient",
                                  [scalars, g_output[0], lengths, indices], [values])
    return [grad_op], [core.GradientSlice(indices, values), None, None, None]


GradientRegistry.RegisterGradient("LengthsSum")(_lengths_grad("LengthsIndicesInGradientSumGradient"))
GradientRegistry.RegisterGradient("LengthsMean")(_lengths_grad("LengthsIndicesInGradientMeanGradient"))
GradientRegistry.RegisterGradient("SparseLengthsSum")(
    _sparse_lengths_grad("SparseLengthsIndicesInGradientSumGradient"))
GradientRegistry.RegisterGradient("SparseLengthsMean")(
    _sparse_lengths_grad("SparseLengthsIndicesInGradientMeanGradient"))
GradientRegistry.RegisterNoGradient(
    "LengthsSumGradient", "LengthsMeanGradient", "LengthsWeightedSumGradient",
    "LengthsWeightedSumWithMainInputGradient", "LengthsMaxWithMainInputAndForwardOutputGradient",
    "SparseLengthsSumGradient", "SparseLengthsMeanGradient", "SparseLengthsWeightedSumGradient",
    "SparseLengthsWeightedSumWithMainInputGradient", "LengthsIndicesInGradientSumGradient",
    "LengthsIndicesInGradientMeanGradient", "SparseLengthsIndicesInGradientSumGradient",
    "SparseLengthsIndicesInGradientMeanGradient", "SparseLengthsIndicesInGradientWeightedSumGradient",
    "SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient")
