"""Gradient makers of the pooling operators (csrc/ops/pool.c).

As Caffe2's GetPoolGradient: ``<Type>Gradient(X, Y, dY) -> dX`` for ``MaxPool``, ``AveragePool``
and their ``1D`` / ``2D`` / ``3D`` names, and ``LpPool``, the forward op's arguments copied onto it. The
gradient is named ``<X>_grad``.
"""

from .core import CreateOperator, GradientRegistry

POOL_TYPES = ("MaxPool", "MaxPool1D", "MaxPool2D", "MaxPool3D",
              "AveragePool", "AveragePool1D", "AveragePool2D", "AveragePool3D", "LpPool")


def _pool_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    dx = str(op.input[0]) + "_grad"
    g = CreateOperator(op.type + "Gradient", [str(op.input[0]), str(op.output[0]), str(g_output[0])], [dx])
    return [g], [dx]


for _t in POOL_TYPES:
    GradientRegistry.RegisterGradient(_t, copy_arguments=True)(_pool_grad)
