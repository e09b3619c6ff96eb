"""Gradient makers of the ops of csrc/ops/optim_adaptive.c.

``RmsProp``, ``Adadelta``, ``SparseAdadelta``, ``Wngrad`` and ``SparseWngrad``
have no gradient: they are optimizer steps (Caffe2 registered them with
SHOULD_NOT_DO_GRADIENT).
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("RmsProp", "Adadelta", "SparseAdadelta", "Wngrad", "SparseWngrad")
