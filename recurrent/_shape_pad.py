"""Shape functions of PadImage and PadImageGradient (csrc/ops/pad_image.c).

The pads are parsed as the shared base's kind PAD (recurrent/_convpool.py, mirroring
csrc/ops/convpool.c); on top of them pad_image.c's rules: a 4-D float32 input; per spatial dim
the image size ``n`` and padded size ``n + pad_head + pad_tail`` (pads may be negative) must be
>= 0 and >= 1; ``reflect`` and ``edge`` need ``n >= 1``, ``reflect`` each pad <= ``n - 1``.
PadImage's ``Y`` has the padded sizes; PadImageGradient's ``dX`` has dY's sizes less the pads.
All outputs are FLOAT.
"""

from . import _convpool
from .shape_inference import FLOAT, UNDEFINED, ShapeError, Tensor, args as _args, register


def _padded(op, ins, grad):
    """The output shape for input 0 (X, or dY with ``grad``); ShapeError where the op refuses it."""
    if ins[0].dtype not in (FLOAT, UNDEFINED):
        raise ShapeError("%s: input 0 '%s' must be float32" % (op.type, op.input[0]))
    a = _convpool.parse(op, _convpool.PAD)
    mode = _args(op).get("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode not in ("constant", "reflect", "edge"):
        raise ShapeError("%s: argument mode must be constant, reflect or edge" % op.type)
    shape = list(ins[0].shape)
    if len(shape) != 4:
        raise ShapeError("%s: input 0 '%s' %s must have 4 dims" % (op.type, op.input[0], shape))
    first = 1 if a["nhwc"] else 2
    for d in range(2):
        head, tail = a["pads"][d], a["pads"][2 + d]
        n = shape[first + d] - (head + tail if grad else 0)
        out = n + head + tail
        if n < 0 or out < 1 or (mode != "constant" and n == 0) or (mode == "reflect" and max(head, tail) > n - 1):
            raise ShapeError("%s: input 0 '%s' %s: dim %d (image %d, pads %d, %d) is refused in mode %s"
                             % (op.type, op.input[0], shape, d, n, head, tail, mode))
        shape[first + d] = n if grad else out
    return shape


@register("PadImage")
def _pad_image(op, ins):
    return [Tensor(_padded(op, ins, False), FLOAT)]


@register("PadImageGradient")
def _pad_image_grad(op, ins):
    return [Tensor(_padded(op, ins, True), FLOAT)]
