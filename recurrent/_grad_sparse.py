"""Gradient makers of the sparse-row ops (csrc/ops/sparse.c, and the sparse
optimizer ops of csrc/ops/optim.c and csrc/ops/embed.c).

- ``SparseToDense(INDICES, VALUES[, DATA_TO_INFER_DIM])``: VALUES get
  ``Gather(dOUTPUT, INDICES)`` (as Caffe2); INDICES and DATA_TO_INFER_DIM get
  none. An output gradient that is itself a ``GradientSlice`` is made dense
  first (``SparseToDense`` of its indices and values, shaped by the forward
  output), then gathered.
- ``ScatterWeightedSum``, ``SparseMomentumSGDUpdate``, ``SparseAdagrad`` and
  ``SparseAdam`` have no gradient (in-place updates, as Caffe2 registered them).
"""

from . import core
from .core import GradientRegistry


@GradientRegistry.RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, g_output):
    n_in = len(op.input)
    g = g_output[0]
    if g is None:
        return [], [None] * n_in
    ops = []
    if isinstance(g, core.GradientSlice):
        dense = str(op.output[0]) + "_grad_dense"
        ops.append(core.CreateOperator("SparseToDense", [str(g.indices), str(g.values), op.output[0]],
                                       [dense]))
        g = dense
    g_values = str(op.input[1]) + "_grad"
    ops.append(core.CreateOperator("Gather", [str(g), op.input[0]], [g_values]))
    return ops, [None, g_values] + [None] * (n_in - 2)


GradientRegistry.RegisterNoGradient("ScatterWeightedSum", "SparseMomentumSGDUpdate", "SparseAdagrad",
                                    "SparseAdam")
