"""Gradient makers of the utility ops of csrc/ops/util.c.

- ``Alias``: the output gradient is passed through as the input's, with no op (Caffe2's
  GetAliasGradient, ``SetDense(0, GO(0))``). A sparse output gradient (``GradientSlice``, e.g. from a
  later Gather of Y) passes through as it is, not made dense.
- ``CopyFromCPUInput``: the same pass-through. Caffe2 registered no gradient, so a gradient reaching it
  was an error there ("Gradient maker ... not implemented"); Caffe2 only applied it to blobs that get
  no gradient (the timestep, the learning rate). Here the op is a plain copy, Y = X, so dX = dY is its
  exact gradient, and what Caffe2's other copy ops (CopyCPUToGPU / CopyGPUToCPU) gave.
- ``EnsureCPUOutput``: no gradient (Caffe2's NO_GRADIENT): its input gets none.
- ``Print`` (csrc/ops/print.c): no gradient (Caffe2's SHOULD_NOT_DO_GRADIENT); it has no outputs, so
  no gradient ever reaches it, and its input gets none from it.
- ``Summarize`` (csrc/ops/print.c): no gradient (Caffe2's SHOULD_NOT_DO_GRADIENT).
"""

from .core import GradientRegistry


def _pass_through(op, g_output):
    return [], [g_output[0]]


GradientRegistry.RegisterGradient("Alias")(_pass_through)
GradientRegistry.RegisterGradient("CopyFromCPUInput")(_pass_through)
GradientRegistry.TakesSparse("Alias", "CopyFromCPUInput")
GradientRegistry.RegisterNoGradient("EnsureCPUOutput", "Summarize")
GradientRegistry.RegisterShouldNotDoGradient("Print")  # Caffe2: SHOULD_NOT_DO_GRADIENT (it has no outputs)
