"""Gradients of the decoding ops (csrc/ops/decode.c): none.

``ViterbiPath`` and ``SwapBestPath`` (Caffe2's crf_viterbi_op.cc, NO_GRADIENT) pick and reorder by
comparisons, so their inputs get no gradient. ``CTCGreedyDecoder`` and
``CTCBeamSearchDecoder`` (Caffe2's ctc_*_decoder_op.cc, SHOULD_NOT_DO_GRADIENT) neither: they output
classes, counts and (the beam search) probabilities of what they chose.
"""

from .core import GradientRegistry

GradientRegistry.RegisterNoGradient("ViterbiPath", "SwapBestPath", "CTCGreedyDecoder",
                                   "CTCBeamSearchDecoder")
