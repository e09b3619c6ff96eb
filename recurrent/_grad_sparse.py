"""Gradient makers of the sparse-row ops (csrc/ops/sparse.c, and the sparse
optimizer ops of csrc/ops/optim.c and csrc/ops/embed.c).

- ``SparseToDense(INDICES, VALUES[, DATA_TO_INFER_DIM])``: VALUES get
  ``Gather(dOUTPUT, INDICES)`` (as Caffe2); INDICES and DATA_TO_INFER_DIM get
  none. (An output gradient that is a ``GradientSlice`` reaches the maker
  dense: core adds a ``SparseToDense`` shaped like the output first.)
- ``SparseToDenseMask(INDICES, VALUES, DEFAULT[, LENGTHS])``: VALUES get
  ``SparseToDenseMaskGradient(INDICES, dOUTPUT[, LENGTHS])`` with the same
  ``mask`` (as Caffe2): the gradient of the kept occurrence of each id, zeros
  for the overwritten ones and the ids outside the mask. DEFAULT gets none
  (Caffe2 had none either), nor do INDICES and LENGTHS.
- ``BatchSparseToDense(LENGTHS, INDICES, VALUES[, SHAPE_LIKE])``: VALUES get
  ``BatchDenseToSparse(LENGTHS, INDICES, dDENSE)``; ``BatchDenseToSparse(LENGTHS,
  INDICES, DENSE)``: DENSE gets ``BatchSparseToDense(LENGTHS, INDICES, dVALUES,
  DENSE)`` (zeros elsewhere), as Caffe2. Exact because the indices of a row are
  distinct (the ops refuse repeats).
- ``CopyRowsToTensor(X, INDICES, ROW) -> X``: ``CopyRowsToTensorGradient(dY, INDICES) -> (dX, dROW)``:
  dX is dY with the overwritten rows zeroed, dROW the sum of those rows of dY (each distinct index once).
  Caffe2's gradient copied dY to dX (the overwritten rows kept their gradient) and gave ROW none.
- ``ScatterWeightedSum``, ``SparseMomentumSGDUpdate``, ``SparseAdagrad`` and
  ``SparseAdam`` have no gradient (in-place updates, as Caffe2 registered them).
"""

import copy

from . import core
from .core import GradientRegistry


@GradientRegistry.RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, g_output):
    n_in = len(op.input)
    g = g_output[0]
    if g is None:
        return [], [None] * n_in
    g_values = str(op.input[1]) + "_grad"
    gather = core.CreateOperator("Gather", [g, op.input[0]], [g_values])
    return [gather], [None, g_values] + [None] * (n_in - 2)


@GradientRegistry.RegisterGradient("SparseToDenseMask")
def _sparse_to_dense_mask_grad(op, g_output):
    n_in = len(op.input)
    g = g_output[0]
    if g is None:
        return [], [None] * n_in
    g_values = str(op.input[1]) + "_grad"
    ins = [op.input[0], g] + ([op.input[3]] if n_in == 4 else [])
    grad = core.CreateOperator("SparseToDenseMaskGradient", ins, [g_values])
    grad.arg.extend(copy.deepcopy([a for a in op.arg if a.name == "mask"]))
    return [grad], [None, g_values] + [None] * (n_in - 2)


@GradientRegistry.RegisterGradient("BatchSparseToDense")
def _batch_sparse_to_dense_grad(op, g_output):
    n_in = len(op.input)
    if g_output[0] is None:
        return [], [None] * n_in
    g_values = str(op.input[2]) + "_grad"
    grad = core.CreateOperator("BatchDenseToSparse", [op.input[0], op.input[1], g_output[0]], [g_values])
    return [grad], [None, None, g_values] + [None] * (n_in - 3)


@GradientRegistry.RegisterGradient("BatchDenseToSparse")
def _batch_dense_to_sparse_grad(op, g_output):
    if g_output[0] is None:
        return [], [None] * 3
    g_dense = str(op.input[2]) + "_grad"
    ins = [op.input[0], op.input[1], g_output[0], op.input[2]]
    return [core.CreateOperator("BatchSparseToDense", ins, [g_dense])], [None, None, g_dense]


@GradientRegistry.RegisterGradient("CopyRowsToTensor")
def _copy_rows_to_tensor_grad(op, g_output):
    if g_output[0] is None:
        return [], [None, None, None]
    gx, grow = str(op.input[0]) + "_grad", str(op.input[2]) + "_grad"
    g = core.CreateOperator("CopyRowsToTensorGradient", [g_output[0], op.input[1]], [gx, grow])
    return [g], [gx, None, grow]


GradientRegistry.RegisterNoGradient("CopyRowsToTensorGradient", "ScatterWeightedSum",
                                    "SparseMomentumSGDUpdate", "SparseAdagrad", "SparseAdam")
