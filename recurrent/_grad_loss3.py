"""Gradient makers of the ops in csrc/ops/loss3.c: MarginRankingCriterion,
CosineEmbeddingCriterion, PairWiseLoss and BernoulliJSD.

Each follows the Caffe2 gradient maker of the same op: the same inputs in the
same order, the forward op's arguments (margin) copied onto the gradient op,
input gradients named ``<input>_grad``. Labels, lengths and BernoulliJSD's
target get no gradient.
"""

from .core import GradientRegistry
from ._grad_loss2 import _single


@GradientRegistry.RegisterGradient("MarginRankingCriterion", copy_arguments=True)
def _margin_ranking_grad(op, g_output):
    return _single(op, g_output, "MarginRankingCriterionGradient", list(op.input[:3]) + [g_output[0]], 2)


@GradientRegistry.RegisterGradient("CosineEmbeddingCriterion", copy_arguments=True)
def _cosine_embedding_grad(op, g_output):
    inputs = [op.input[0], op.input[1], g_output[0]]
    return _single(op, g_output, "CosineEmbeddingCriterionGradient", inputs, 1)


@GradientRegistry.RegisterGradient("PairWiseLoss", copy_arguments=True)
def _pair_wise_loss_grad(op, g_output):
    lengths = list(op.input[2:3])
    return _single(op, g_output, "PairWiseLossGradient", [op.input[0], op.input[1], g_output[0]] + lengths, 1)


@GradientRegistry.RegisterGradient("BernoulliJSD", copy_arguments=True)
def _bernoulli_jsd_grad(op, g_output):
    return _single(op, g_output, "BernoulliJSDGradient", [g_output[0], op.input[0], op.input[1]], 1)
