"""Gradient makers of the checkpoint ops (csrc/ops/db.c).

``Save``, ``Load`` and ``CreateDB`` have no gradient (as in Caffe2).
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("Save", "Load", "CreateDB")
