"""Gradient makers of the optimizer ops (csrc/ops/optim.c).

``Iter``, ``LearningRate``, ``MomentumSGDUpdate``, ``MomentumSGD`` and ``Adam`` have no
gradient: an integer counter, a schedule of it, and optimizer steps (as
Caffe2 registered them).
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("Iter", "LearningRate", "MomentumSGDUpdate")
GradientRegistry.RegisterShouldNotDoGradient("MomentumSGD", "Adam")  # Caffe2: SHOULD_NOT_DO_GRADIENT

# csrc/ops/mutex.c: a Mutex and the counter it guards (Caffe2: SHOULD_NOT_DO_GRADIENT / NO_GRADIENT).
GradientRegistry.RegisterNoGradient("CreateMutex", "AtomicIter", "AtomicFetchAdd", "AtomicFetchAdd64")

# csrc/ops/collect.c: LastNWindowCollector keeps rows of data it saw (Caffe2: SHOULD_NOT_DO_GRADIENT).
GradientRegistry.RegisterShouldNotDoGradient("LastNWindowCollector")

# csrc/ops/optim_rowwise.c: FTRL, the row-wise sparse Adagrad/Adam, RowWiseCounter and SparseNormalize are
# optimizer steps (no gradient, as Caffe2 registered them).
GradientRegistry.RegisterNoGradient("Ftrl", "SparseFtrl", "RowWiseSparseAdagrad", "RowWiseSparseAdam",
                                    "RowWiseCounter", "SparseNormalize")

# csrc/ops/optim_more.c: YellowFin is an optimizer step (Caffe2: SHOULD_NOT_DO_GRADIENT).
GradientRegistry.RegisterNoGradient("YellowFin")
