"""Gradients of the decoding ops (csrc/ops/decode.c): none.

``ViterbiPath`` and ``SwapBestPath`` (Caffe2's crf_viterbi_op.cc, NO_GRADIENT) pick and reorder by
comparisons, so their inputs get no gradient. ``CTCGreedyDecoder`` (Caffe2's
ctc_greedy_decoder_op.cc, SHOULD_NOT_DO_GRADIENT) neither: its outputs are int32 classes and counts.
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("ViterbiPath", "SwapBestPath", "CTCGreedyDecoder")
