"""Shape functions of the pooling ops (csrc/ops/pool.c): ``MaxPool``, ``AveragePool``, their
``1D`` / ``2D`` / ``3D`` names, ``LpPool`` and their gradients.

The geometry is the shared base's (recurrent/_convpool.py, mirroring csrc/ops/convpool.c); on top
of it the rules of csrc/ops/pool.c: every pad as given smaller than its kernel (unless
``global_pooling``), LpPool's ``p`` > 0. ``Y`` has X's batch and channels and the pooled spatial
sizes; a gradient's ``dX`` has X's shape, and its Y and dY must have Y's shape. All outputs are FLOAT.
"""

from . import _convpool
from ._grad_pool import POOL_TYPES
from .shape_inference import FLOAT, UNDEFINED, ShapeError, Tensor, args, register


def _f32(op, ins, i):
    if ins[i].dtype not in (FLOAT, UNDEFINED):
        raise ShapeError("%s: input %d '%s' must be float32" % (op.type, i, op.input[i]))


def _pooled(op, ins):
    """(X's shape, Y's shape); ShapeError where the op refuses its arguments or X."""
    _f32(op, ins, 0)
    a = _convpool.parse(op, _convpool.POOL)
    if op.type.startswith("LpPool"):
        p = args(op).get("p", 2.0)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
            raise ShapeError("%s: argument p must be > 0, got %r" % (op.type, p))
    if not a["glob"]:
        nd = len(a["kernel"])
        for i in range(nd):
            if a["pads"][i] >= a["kernel"][i] or a["pads"][nd + i] >= a["kernel"][i]:
                raise ShapeError("%s: the pads must be smaller than the kernel" % op.type)
    g = _convpool.geometry(op, ins[0].shape, _convpool.POOL)
    return tuple(ins[0].shape), _convpool.out_shape(g, g.C)


@register(*POOL_TYPES)
def _pool(op, ins):
    _, y = _pooled(op, ins)
    return [Tensor(y, FLOAT)]


@register(*[t + "Gradient" for t in POOL_TYPES])
def _pool_grad(op, ins):
    x, y = _pooled(op, ins)
    for i, what in ((1, "Y"), (2, "dY")):
        _f32(op, ins, i)
        if tuple(ins[i].shape) != y:
            raise ShapeError("%s: input %d '%s' (%s) must have the pooled shape %s, got %s"
                             % (op.type, i, op.input[i], what, list(y), list(ins[i].shape)))
    return [Tensor(x, FLOAT)]
