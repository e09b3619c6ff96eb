"""Gradient makers of the ops in csrc/ops/moments.c: LpNorm and BatchMoments.

As Caffe2's (lpnorm_op.cc, batch_moments_op.cc), the forward op's arguments copied onto the gradient op
(``p``, ``average``; ``order``), input gradients named ``<input>_grad``:

- ``LpNorm(X) -> Z``: ``LpNormGradient([X, Z_grad]) -> X_grad``.
- ``BatchMoments(X) -> (mu, var)``: ``BatchMomentsGradient([mu_grad, var_grad, X]) -> X_grad``. Where only
  one of mu and var has a gradient, the other's is zeros of its shape (a ConstantFill), so a loss on
  either alone works (Caffe2's maker asked for both).
- ``SinusoidPositionEncoding`` has no gradient (its input is integer positions), nor the gradient ops.
"""

from . import core
from .core import GradientRegistry


def _gi(op, i):
    return str(op.input[i]) + "_grad"


@GradientRegistry.RegisterGradient("LpNorm", copy_arguments=True)
def _lp_norm_grad(op, g_output):
    if g_output[0] is None:
        return [], [None]
    gx = _gi(op, 0)
    return [core.CreateOperator("LpNormGradient", [op.input[0], g_output[0]], [gx])], [gx]


@GradientRegistry.RegisterGradient("BatchMoments", copy_arguments=True)
def _batch_moments_grad(op, g_output):
    if g_output[0] is None and g_output[1] is None:
        return [], [None]
    ops, grads = [], []
    for k in range(2):
        g = g_output[k]
        if g is None:
            g = "_%s_zero_grad" % op.output[k]
            ops.append(core.CreateOperator("ConstantFill", [op.output[k]], [g], value=0.0))
        grads.append(g)
    gx = _gi(op, 0)
    ops.append(core.CreateOperator("BatchMomentsGradient", grads + [op.input[0]], [gx]))
    return ops, [gx]


GradientRegistry.RegisterNoGradient("LpNormGradient", "BatchMomentsGradient", "SinusoidPositionEncoding")
