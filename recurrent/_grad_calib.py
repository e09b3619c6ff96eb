"""Gradients of the calibration ops (csrc/ops/calib.c): none.

``Percentile``, ``BisectPercentile`` (Caffe2: NO_GRADIENT) and ``PiecewiseLinearTransform``
(SHOULD_NOT_DO_GRADIENT) map feature values through fitted tables: their inputs get no gradient.
``BatchBoxCox`` is left unregistered, as Caffe2's GRADIENT_NOT_IMPLEMENTED_YET: asking for its
gradient is an error.
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("Percentile", "BisectPercentile", "PiecewiseLinearTransform")
