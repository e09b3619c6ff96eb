"""Shape functions of PadImage and PadImageGradient (csrc/ops/pad_image.c).

The pads are parsed as the shared base's kind PAD (recurrent/_convpool.py, mirroring
csrc/ops/convpool.c); on top of them pad_image.c's rules: a 4-D float32 input; per spatial dim
the image size ``n`` and padded size ``n + pad_head + pad_tail`` (pads may be negative) must be
>= 0 and >= 1; ``reflect`` and ``edge`` need ``n >= 1``, ``reflect`` each pad <= ``n - 1``.
PadImage's ``Y`` has the padded sizes; PadImageGradient's ``dX`` has dY's sizes less the pads.
All outputs are FLOAT.

SpaceToBatch and BatchToSpace (the same C file) mirror ``sb_setup`` / ``sb_shapes``: block_size
(default 2) >= 1, pad / pad_t / pad_l / pad_b / pad_r (each defaulting to pad) >= 0, order NCHW (an
argument the op refuses at creation is refused here too); a float32 4-D input; SpaceToBatch's
padded sizes must be multiples of the block, BatchToSpace's batch a multiple of its square and its
cropped sizes >= 0.
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


_INT32_MAX = 2 ** 31 - 1


def _space_batch_args(op):
    """(block, [t, l, b, r]); ShapeError where the op refuses its arguments at creation."""
    a = _args(op)
    order = a.get("order", "NCHW")
    if isinstance(order, bytes):
        order = order.decode()
    if order != "NCHW":
        raise ShapeError("%s: supports order NCHW only" % op.type)

    def get(name, dflt, lo):
        v = a.get(name, dflt)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= _INT32_MAX:
            raise ShapeError("%s: argument %s must be an int in [%d, 2^31 - 1]" % (op.type, name, lo))
        return v

    block, pad = get("block_size", 2, 1), get("pad", 0, 0)
    return block, [get(n, pad, 0) for n in ("pad_t", "pad_l", "pad_b", "pad_r")]


@register("SpaceToBatch", "BatchToSpace")
def _space_batch(op, ins):
    b, (t, l, bo, r_) = _space_batch_args(op)
    if ins[0].dtype not in (FLOAT, UNDEFINED):
        raise ShapeError("%s: input 0 '%s' must be float32" % (op.type, op.input[0]))
    x = tuple(ins[0].shape)
    if len(x) != 4:
        raise ShapeError("%s: input 0 '%s' %s must have 4 dims" % (op.type, op.input[0], list(x)))
    N, C, H, W = x
    if op.type == "SpaceToBatch":
        hp, wp = H + t + bo, W + l + r_
        if hp % b or wp % b:
            raise ShapeError("%s: the padded image %dx%d is not a multiple of block_size %d"
                             % (op.type, hp, wp, b))
        if N * b * b >= 2 ** 63:
            raise ShapeError("%s: the output batch is beyond 2^63" % op.type)
        return [Tensor((N * b * b, C, hp // b, wp // b), FLOAT)]
    if N % (b * b):
        raise ShapeError("%s: the batch %d is not a multiple of block_size^2 %d" % (op.type, N, b * b))
    h, w = H * b - t - bo, W * b - l - r_
    if h < 0 or w < 0 or max(H, W) * b >= 2 ** 63:
        raise ShapeError("%s: the pads crop more than the image %s x block_size %d" % (op.type, list(x), b))
    return [Tensor((N // (b * b), C, h, w), FLOAT)]
