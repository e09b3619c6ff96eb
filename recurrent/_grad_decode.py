"""Gradients of the decoding ops (csrc/ops/decode.c): none.

``ViterbiPath`` and ``SwapBestPath`` (Caffe2's crf_viterbi_op.cc, NO_GRADIENT) pick and reorder by
comparisons, so their inputs get no gradient.
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("ViterbiPath", "SwapBestPath")
