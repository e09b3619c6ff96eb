"""Gradient makers of the batched ops (csrc/ops/batch.c), as Caffe2's.

BatchMatMul (Y = op(A) op(B) per batch element): two BatchMatMul ops, as
Caffe2's GetBatchMatMulGradient without broadcasting:

    trans_a, trans_b   dA                dB
    0, 0               dY B^T            A^T dY
    1, 0               B dY^T            A dY
    0, 1               dY B              dY^T A
    1, 1               B^T dY^T          dY^T A^T

With broadcast=1 (batch broadcasting, 1-D operands): one
``BatchMatMulGradient(A, B, dY) -> (dA, dB)`` op (csrc/ops/bmm_pow.c), which
adds the same products into the blocks of A and B, so a block repeated by the
broadcast gets the sum over its repeats (Caffe2 refused this gradient).

When A and B are one blob, A's gradient is ``<a>_grad`` and B's
``<a>_grad_autogen_bmm_1``; the backward pass sums them.

SequenceMask: ``SequenceMask([dY, sequence_lengths], [dX])`` (``[dY]`` for the
modes without a second input, ``[dY, window_centers]`` for 'window') with the
forward op's arguments (mode, axis, fill_val, batch, radius, repeat_from_axis)
and ``grad=1``, which makes the fill value 0: the masked positions get a zero
gradient. The lengths (centers) get no gradient.

ReversePackedSegs: ``ReversePackedSegs([dY, lengths], [dX])``, as Caffe2's
maker (the op is its own inverse and, being a permutation, its own gradient).
The lengths get no gradient. A forward op run in place gives a gradient op run
in place on dY, which the op allows.

Gradient blobs are named ``<input>_grad``.
"""

import copy

from .core import CreateOperator, GradientRegistry
from .proto import make_argument


def _arg(op, name, default=None):
    for a in op.arg:
        if a.name == name:
            return a.value()
    return default


# (trans_a, trans_b) -> ((inputs, trans_a, trans_b) of dA, the same of dB); "a", "b", "dy" name the blobs
_BMM_GRAD = {
    (0, 0): ((("dy", "b"), 0, 1), (("a", "dy"), 1, 0)),
    (1, 0): ((("b", "dy"), 0, 1), (("a", "dy"), 0, 0)),
    (0, 1): ((("dy", "b"), 0, 0), (("dy", "a"), 1, 0)),
    (1, 1): ((("b", "dy"), 1, 1), (("dy", "a"), 1, 1)),
}


@GradientRegistry.RegisterGradient("BatchMatMul")
def _batch_matmul_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return [], [None, None]
    a, b = str(op.input[0]), str(op.input[1])
    flags = (int(bool(_arg(op, "trans_a", 0))), int(bool(_arg(op, "trans_b", 0))))
    ga = a + "_grad"
    # the same blob as A and B: a name of its own per use, summed by the backward pass
    gb = b + "_grad" if b != a else a + "_grad_autogen_bmm_1"
    if _arg(op, "broadcast", 0):
        # one BatchMatMulGradient op: the products of the table, summed over the broadcast batch dims
        # (Caffe2 had no gradient with broadcast=1)
        kwargs = {"trans_a": flags[0], "trans_b": flags[1], "broadcast": 1}
        return [CreateOperator("BatchMatMulGradient", [a, b, str(dy)], [ga, gb], **kwargs)], [ga, gb]
    blobs = {"a": a, "b": b, "dy": str(dy)}
    ops = []
    for (ins, ta, tb), out in zip(_BMM_GRAD[flags], (ga, gb)):
        kwargs = {}
        if ta:
            kwargs["trans_a"] = 1
        if tb:
            kwargs["trans_b"] = 1
        ops.append(CreateOperator("BatchMatMul", [blobs[k] for k in ins], [out], **kwargs))
    return ops, [ga, gb]


@GradientRegistry.RegisterGradient("SequenceMask")
def _sequence_mask_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return [], [None] * len(op.input)
    gx = str(op.input[0]) + "_grad"
    g = CreateOperator("SequenceMask", [str(dy)] + [str(b) for b in op.input[1:]], [gx])
    # the forward op's arguments (mode, axis, fill_val, ...), then grad=1, as Caffe2's maker
    g.arg.extend(copy.deepcopy([a for a in op.arg if a.name != "grad"]))
    g.arg.append(make_argument("grad", 1))
    return [g], [gx] + [None] * (len(op.input) - 1)


@GradientRegistry.RegisterGradient("ReversePackedSegs")
def _reverse_packed_segs_grad(op, g_output):
    dy = g_output[0]
    if dy is None:
        return [], [None, None]
    gx = str(op.input[0]) + "_grad"
    return [CreateOperator("ReversePackedSegs", [str(dy), str(op.input[1])], [gx])], [gx, None]
