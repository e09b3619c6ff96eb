"""Gradient makers of the embedding / sampling / optimizer ops (csrc/ops/embed.c).

- ``Gather(DATA, INDICES)``: as in Caffe2, the gradient of DATA is sparse, a
  ``core.GradientSlice(indices=INDICES, values=dOUT)`` (no op: the rows of dOUT
  belong to the rows INDICES of DATA; repeated indices add up). The optimizers
  update only those rows (``ScatterWeightedSum``, ``SparseAdagrad``, ...);
  gradient accumulation and gradient makers that need it dense get a
  ``SparseToDense`` (see core). INDICES get no gradient. The op
  ``GatherGradient(DATA, INDICES, dOUT)`` (the dense gradient) stays available.
  With ``axis`` != 0 the gradient is dense, as Caffe2's:
  ``BatchGatherGradient(DATA, INDICES, dOUT) -> dDATA`` with the same axis; also with
  ``wrap_indices=1`` or ``match_outer=1`` (passed on), at any axis: Caffe2's sparse gradient at
  axis 0 kept the negative indices, which the sparse updates cannot use.
- ``BatchGather(DATA, INDICES)`` (Gather at axis 1): ``BatchGatherGradient``,
  dense, as Caffe2's.
- ``OneHot``, ``SegmentOneHot``, ``BatchOneHot``, ``BatchBucketOneHot``,
  ``WeightedSample``, ``WeightedMultiSampling`` and ``Adagrad`` have no gradient (one-hot, integer or
  random outputs, and an optimizer step; Caffe2 registered none either).
"""

from . import core
from .core import GradientRegistry


def _axis(op, default):
    for a in op.arg:
        if a.name == "axis":
            return int(a.value())
    return default


@GradientRegistry.RegisterGradient("Gather")
def _gather_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    axis = _axis(op, 0)
    flags = {a.name: int(a.value()) for a in op.arg if a.name in ("wrap_indices", "match_outer")}
    if axis != 0 or any(flags.values()):
        # dense, as Caffe2: BatchGatherGradient(DATA, INDICES, dOUT) with the forward op's axis (and
        # wrap_indices / match_outer: a sparse gradient would carry the negative indices unwrapped)
        gd = str(op.input[0]) + "_grad"
        ins = [str(op.input[0]), str(op.input[1]), str(g_output[0])]
        return [core.CreateOperator("BatchGatherGradient", ins, [gd], axis=axis, **flags)], [gd, None]
    return [], [core.GradientSlice(str(op.input[1]), g_output[0]), None]


@GradientRegistry.RegisterGradient("BatchGather")
def _batch_gather_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None]
    gd = str(op.input[0]) + "_grad"
    ins = [str(op.input[0]), str(op.input[1]), str(g_output[0])]
    return [core.CreateOperator("BatchGatherGradient", ins, [gd])], [gd, None]


GradientRegistry.RegisterNoGradient("OneHot", "SegmentOneHot", "BatchOneHot", "BatchBucketOneHot",
                                    "WeightedSample", "WeightedMultiSampling")
GradientRegistry.RegisterShouldNotDoGradient("Adagrad")  # Caffe2: SHOULD_NOT_DO_GRADIENT
