"""The net-creation check of every op type whose inputs can be checked (csrc/core/net.c check_shapes):
for each op type given one in stop 31, inputs of a wrong shape or dtype make CreateNet / RunNetOnce
raise the exception and the message the op gives when it runs (RunOperatorOnce), and the workspace
stays usable. Data values (indices, labels, split sizes, shapes read from a blob, the iteration
counter) are checked when the op runs only: blobs may be fed again between creation and the run.
See also tests/test_net_shape_check.py (the ops checked before)."""

import numpy as np
import pytest

from recurrent import _C, core, workspace

# The op types whose inputs are not checked at net creation, and why (README "Shapes checked at net
# creation" lists them): nothing about their inputs can be told without the data, or any tensor fits.
UNCHECKED = {
    "Cast",  # float32 or int32 (every dtype a blob holds), any shape; the range needs the values
    "Copy", "FlattenToVec", "ZeroGradient",  # any tensor
    "Print",  # any blob: a tensor of any dtype and shape, no tensor, an object
    "Iter",  # the counter's checks are its own output's (the input is the output's blob)
    "Save", "Load", "CreateDB",  # inputs are blobs to store / a DB handle, checked against files at run time
    "RecurrentNetwork", "RecurrentNetworkGradient", "RecurrentNetworkBlobFetcher",  # step nets check their
    "rnn_internal_apply_link", "rnn_internal_accumulate_gradient_input",  # ops; links need the timestep
    "Python", "PythonGradient",  # any tensors: the Python function decides
}


def f32(*shape):
    return np.ones(shape, np.float32)


def i32(*shape):
    return np.zeros(shape, np.int32)


V, E = ValueError, TypeError

# (op type, inputs {name: value} in order, outputs, arguments, exception)
CASES = [
    ("FCGradient", dict(x=f32(4, 3), w=f32(5, 3), dy=f32(4, 6)), ["dw", "db"], {}, V),
    ("WeightedSum", dict(x0=f32(2, 3), w0=f32(1), x1=f32(2, 4), w1=f32(1)), ["y"], {}, V),
    ("WeightedSum", dict(x0=f32(2, 3), w0=f32(2)), ["y"], {}, V),
    ("DivGradient", dict(b=f32(2, 3), c=f32(2, 3), dc=f32(2, 4)), ["da", "db"], {}, V),
    ("DivGradient", dict(b=i32(2, 3), c=f32(2, 3), dc=f32(2, 3)), ["da", "db"], {}, E),
    ("DivGradient", dict(dc=f32(2, 3), a=f32(2, 3), b=f32(3), c=f32(3, 3)), ["da", "db"], {}, V),
    ("Pow", dict(x=i32(2, 3)), ["y"], dict(exponent=2.0), E),
    ("Pow", dict(x=f32(2, 3), e=f32(4)), ["y"], {}, V),
    ("PowGradient", dict(x=f32(2, 3), dy=f32(3, 2)), ["dx"], dict(exponent=2.0), V),
    ("PowGradient", dict(dy=f32(2, 3), x=f32(2, 3), e=f32(2, 3), y=f32(3, 3)), ["dx", "de"], {}, V),
    ("MaxGradient", dict(y=f32(2, 3), dy=f32(2, 3), x0=f32(2, 4)), ["dx0"], {}, V),
    ("SumReduceLike", dict(a=f32(2, 3), b=f32(4)), ["c"], {}, V),
    ("Sigmoid", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Tanh", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Relu", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Scale", dict(x=i32(2, 3)), ["y"], dict(scale=2.0), E),
    ("Sqr", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Negative", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Log", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Exp", dict(x=i32(2, 3)), ["y"], {}, E),
    ("SigmoidGradient", dict(y=f32(2, 3), dy=f32(3, 2)), ["dx"], {}, V),
    ("TanhGradient", dict(y=f32(2, 3), dy=f32(3, 2)), ["dx"], {}, V),
    ("ReluGradient", dict(y=f32(2, 3), dy=i32(2, 3)), ["dx"], {}, E),
    ("SqrGradient", dict(x=f32(2, 3), dy=f32(3, 2)), ["dx"], {}, V),
    ("ElementwiseLinear", dict(x=f32(2, 3), a=f32(4), b=f32(3)), ["y"], {}, V),
    ("ElementwiseLinearGradient", dict(dy=f32(2, 3), x=f32(2, 3), a=f32(4)), ["dx", "da", "db"], {}, V),
    ("AddGradient", dict(dc=f32(2, 4), a=f32(2, 3), b=f32(2, 3)), ["da", "db"], {}, V),
    ("SubGradient", dict(dc=f32(2, 3), a=f32(2, 3), b=f32(4, 3)), ["da", "db"], {}, V),
    ("MulGradient", dict(dc=f32(2, 3), a=i32(2, 3), b=f32(2, 3)), ["da", "db"], {}, E),
    ("Concat", dict(a=f32(2, 3), c=f32(3, 3)), ["y"], dict(axis=1), V),
    ("Concat", dict(a=f32(2, 3), c=i32(2, 3)), ["y"], {}, E),
    ("Split", dict(x=f32(2, 3)), ["s0", "s1"], dict(axis=1, split=[1, 1]), V),
    ("Split", dict(x=f32(2, 3)), ["s0", "s1"], dict(axis=1), V),
    ("Split", dict(x=f32(2, 3), sizes=i32(3)), ["s0", "s1"], dict(axis=1), V),
    ("Reshape", dict(x=f32(2, 3)), ["y", "old"], dict(shape=[4, 2]), V),
    ("Reshape", dict(x=f32(2, 3), shape=i32(2, 2)), ["y", "old"], {}, V),
    ("Reshape", dict(x=f32(2, 3), shape=f32(2)), ["y", "old"], {}, E),
    ("PrependDim", dict(x=f32(5, 3)), ["y"], dict(dim_size=2), V),
    ("MergeDim", dict(x=f32(3)), ["y"], {}, V),
    ("LengthsToShape", dict(l=f32(3)), ["y"], {}, E),
    ("LengthsSplit", dict(l=i32(3), n=i32(2)), ["y"], {}, V),
    ("EnsureClipped", dict(p=i32(5, 3)), ["q"], {}, E),
    ("ClipTensorByScaling", dict(x=f32(4, 3), v=f32(2)), ["y"], dict(threshold=1.0), V),
    ("CopyRowsToTensorGradient", dict(dy=f32(3, 2), i=i32(1, 1)), ["dx", "dr"], {}, V),
    ("Flatten", dict(x=f32(2, 3)), ["y"], dict(axis=3), V),
    ("ResizeLike", dict(x=f32(2, 3), like=f32(4)), ["y"], {}, V),
    ("Transpose", dict(x=f32(2, 3)), ["y"], dict(axes=[0, 2, 1]), V),
    ("ExpandDims", dict(x=f32(2, 3)), ["y"], dict(dims=[5]), V),
    ("Squeeze", dict(x=f32(2, 3)), ["y"], dict(dims=[0]), V),
    ("ConstantFill", dict(s=f32(2)), ["y"], dict(input_as_shape=1), E),
    ("ConstantFill", dict(x=f32(2, 3, 1, 1, 1, 1, 1, 1)), ["y"], dict(extra_shape=[2]), V),
    ("UniformFill", dict(s=i32(2, 2)), ["y"], dict(input_as_shape=1), V),
    ("GaussianFill", dict(s=i32(2, 2)), ["y"], dict(input_as_shape=1), V),
    ("XavierFill", dict(s=i32(1, 2)), ["y"], dict(input_as_shape=1), V),
    ("MSRAFill", dict(s=i32(1, 2)), ["y"], dict(input_as_shape=1), V),
    ("DiagonalFill", dict(s=i32(1, 2)), ["y"], dict(input_as_shape=1), V),
    ("UniformIntFill", dict(s=i32(2), lo=i32(2), hi=i32(1)), ["y"], dict(input_as_shape=1), V),
    ("UniformIntFill", dict(s=i32(2), lo=f32(1), hi=i32(1)), ["y"], dict(input_as_shape=1), E),
    ("UniformFill", dict(s=i32(2), lo=f32(1), hi=f32(1, 2)), ["y"], dict(input_as_shape=1), V),
    ("GivenTensorFill", dict(x=f32(2, 3)), ["y"], dict(values=[1.0, 2.0]), V),
    ("GivenTensorIntFill", dict(s=f32(2)), ["y"], dict(input_as_shape=1, values=[1, 2]), E),
    ("SquaredL2DistanceGradient", dict(x=f32(4, 3), y=f32(4, 3), dd=f32(3)), ["dx", "dy"], {}, V),
    ("AveragedLoss", dict(x=i32(2, 3)), ["loss"], {}, E),
    ("AveragedLossGradient", dict(x=f32(2, 3), g=f32(2)), ["dx"], {}, V),
    ("SumElements", dict(x=i32(2, 3)), ["s"], {}, E),
    ("SumElementsGradient", dict(x=f32(2, 3), g=i32(1)), ["dx"], {}, E),
    ("SumSqrElements", dict(x=i32(2, 3)), ["s"], {}, E),
    ("SumSqrElementsGradient", dict(x=f32(2, 3), g=f32(2)), ["dx"], {}, V),
    ("Softmax", dict(x=f32(2, 3)), ["y"], dict(axis=2), V),
    ("SoftmaxGradient", dict(y=f32(2, 3), dy=f32(3, 2)), ["dx"], {}, V),
    ("SoftmaxWithLoss", dict(x=f32(4, 3), lab=i32(5)), ["p", "loss"], {}, V),
    ("SoftmaxWithLoss", dict(x=f32(4, 3), lab=f32(4, 2)), ["p", "loss"], dict(label_prob=1), V),
    ("SoftmaxWithLoss", dict(x=f32(4, 3), lab=i32(4), w=f32(3)), ["p", "loss"], {}, V),
    ("SoftmaxWithLossGradient", dict(x=f32(4, 3), lab=i32(4), p=f32(4, 3), dl=f32(2)), ["dx"], {}, V),
    ("SoftmaxWithLossGradient", dict(x=f32(4, 3), lab=i32(4), p=f32(4, 2), dl=f32(1)), ["dx"], {}, V),
    ("LabelCrossEntropyGradient", dict(x=f32(4, 3), lab=i32(4), dy=f32(3)), ["dx"], {}, V),
    ("LabelCrossEntropyGradient", dict(x=f32(4, 3), lab=f32(4), dy=f32(4)), ["dx"], {}, E),
    ("LSTMUnit", dict(h=f32(1, 2, 3), c=f32(1, 2, 3), g=f32(1, 2, 8), seq=i32(2), t=i32(1)), ["h2", "c2"], {},
     V),
    ("LSTMUnit", dict(h=f32(1, 2, 3), c=f32(1, 2, 3), g=f32(1, 2, 12), seq=i32(3), t=i32(1)), ["h2", "c2"],
     {}, V),
    ("LSTMUnitGradient", dict(h=f32(1, 2, 3), c=f32(1, 2, 3), g=f32(1, 2, 12), seq=i32(2), t=i32(1),
                              ht=f32(1, 2, 3), ct=f32(1, 2, 3), dh=f32(1, 2, 3), dc=f32(1, 2, 4)),
     ["dh0", "dc0", "dg"], {}, V),
    ("GRUUnit", dict(h=f32(1, 2, 3), g=f32(1, 2, 6), seq=i32(2), t=i32(1)), ["h2"], {}, V),
    ("GRUUnit", dict(h=f32(1, 2, 3), g=f32(1, 2, 9), t=f32(1)), ["h2"], dict(sequence_lengths=0), E),
    ("GRUUnitGradient", dict(h=f32(1, 2, 3), g=f32(1, 2, 9), seq=i32(2), t=i32(1), ht=f32(1, 2, 3),
                             dh=f32(1, 3, 3)), ["dh0", "dg"], {}, V),
    ("Gather", dict(data=f32(5, 3), idx=f32(2)), ["out"], {}, E),
    ("Gather", dict(data=f32(5, 3), idx=i32(2)), ["out"], dict(axis=2), V),
    ("GatherGradient", dict(data=f32(5, 3), idx=i32(2), dout=f32(2, 4)), ["ddata"], {}, V),
    ("OneHot", dict(idx=f32(3)), ["y"], dict(index_size=4), E),
    ("OneHot", dict(idx=i32(3), size=i32(2)), ["y"], {}, V),
    ("SegmentOneHot", dict(lens=i32(2), idx=i32(3, 1), size=i32(1)), ["y"], {}, V),
    ("SegmentOneHot", dict(lens=i32(2), idx=i32(3), size=f32(1)), ["y"], {}, E),
    ("BatchOneHot", dict(x=i32(4, 2), lens=i32(3), vals=i32(3)), ["y"], {}, V),
    ("BatchOneHot", dict(x=i32(4, 2), lens=i32(2), vals=f32(3)), ["y"], {}, E),
    ("BatchBucketOneHot", dict(x=i32(4, 2), lens=i32(2), b=f32(3)), ["y"], {}, E),
    ("BatchBucketOneHot", dict(x=f32(4, 2), lens=i32(2), b=f32(3, 1)), ["y"], {}, V),
    ("SparseToDenseMask", dict(i=i32(3), v=f32(2, 2), d=f32(2)), ["y"], dict(mask=[1, 0]), V),
    ("SparseToDenseMask", dict(i=i32(3), v=f32(3, 2), d=i32(2)), ["y"], dict(mask=[1, 0]), E),
    ("SparseToDenseMaskGradient", dict(i=i32(3), g=f32(3, 2), l=i32(2)), ["dv"], dict(mask=[1, 0]), V),
    ("BatchSparseToDense", dict(l=i32(2), i=i32(3), v=f32(2)), ["y"], dict(dense_last_dim=4), V),
    ("BatchSparseToDense", dict(l=i32(2), i=i32(3), v=f32(3), s=f32(2, 5)), ["y"], dict(dense_last_dim=4), V),
    ("BatchDenseToSparse", dict(l=i32(2), i=i32(3), d=f32(3, 4)), ["y"], {}, V),
    ("BatchDenseToSparse", dict(l=i32(2), i=f32(3), d=f32(2, 4)), ["y"], {}, E),
    ("WeightedSample", dict(w=f32(2, 3, 1)), ["idx"], {}, V),
    ("WeightedSample", dict(w=f32(2, 3), vals=f32(3, 2)), ["idx", "sv"], {}, V),
    ("Adagrad", dict(p=f32(2, 3), m=f32(2, 3), g=f32(2, 4), lr=f32(1)), ["p2", "m2"], {}, V),
    ("Adagrad", dict(p=f32(2, 3), m=f32(2, 3), g=f32(2, 3), lr=f32(2)), ["p2", "m2"], {}, V),
    ("LearningRate", dict(it=f32(1)), ["lr"], dict(base_lr=-0.1, policy="fixed"), E),
    ("MomentumSGDUpdate", dict(g=f32(2, 3), m=f32(2, 3), lr=f32(2), p=f32(2, 3)), ["g2", "m2", "p2"], {}, V),
    ("MomentumSGDUpdate", dict(g=f32(2, 3), m=f32(3, 2), lr=f32(1), p=f32(2, 3)), ["g2", "m2", "p2"], {}, V),
    ("Adam", dict(p=f32(2, 3), m1=f32(2, 3), m2=f32(2, 3), g=f32(2, 3), lr=f32(1), it=f32(1)),
     ["p2", "m12", "m22"], {}, E),
    ("Adam", dict(p=f32(2, 3), m1=f32(2, 3), m2=f32(2, 3), g=f32(2, 3), lr=f32(1), it=i32(2)),
     ["p2", "m12", "m22"], {}, V),
    ("BatchGather", dict(data=f32(5), idx=i32(2)), ["out"], {}, V),
    ("BatchGather", dict(data=f32(2, 5), idx=f32(2)), ["out"], {}, E),
    ("BatchGatherGradient", dict(data=f32(2, 5), idx=i32(3), dout=f32(2, 4)), ["ddata"], {}, V),
    # the losses of csrc/ops/loss3.c
    ("MarginRankingCriterion", dict(a=f32(3), b=f32(4), y=i32(3)), ["l"], {}, V),
    ("MarginRankingCriterion", dict(a=f32(3), b=f32(3), y=f32(3)), ["l"], {}, E),
    ("MarginRankingCriterionGradient", dict(a=f32(3), b=f32(3), y=i32(3), g=f32(2)), ["da", "db"], {}, V),
    ("CosineEmbeddingCriterion", dict(s=f32(3), y=i32(2)), ["l"], {}, V),
    ("CosineEmbeddingCriterionGradient", dict(s=f32(3), y=i32(3), g=i32(3)), ["ds"], {}, E),
    ("PairWiseLoss", dict(x=f32(3, 2), t=f32(3)), ["l"], {}, V),
    ("PairWiseLoss", dict(x=f32(3), t=f32(3), n=f32(1)), ["l"], {}, E),
    ("PairWiseLossGradient", dict(x=f32(3), t=f32(3), g=f32(2)), ["dx"], {}, V),
    ("PairWiseLossGradient", dict(x=f32(3), t=f32(3), g=f32(1, 2), n=i32(2)), ["dx"], {}, V),
    ("BernoulliJSD", dict(p=f32(3), q=f32(2)), ["l"], {}, V),
    ("BernoulliJSDGradient", dict(g=f32(2), p=f32(3), q=f32(3)), ["dp"], {}, V),
    # the activation ops (csrc/ops/unary.c, unary2.c, activation.c)
    ("Sinh", dict(x=i32(2, 3)), ["y"], {}, E),
    ("CoshGradient", dict(dy=f32(2, 3), x=f32(3, 2)), ["dx"], {}, V),
    ("ErfGradient", dict(x=f32(2, 3), dy=f32(2, 2)), ["dx"], {}, V),
    ("ThresholdedRelu", dict(x=i32(2, 3)), ["y"], {}, E),
    ("GeluGradient", dict(dy=f32(2, 3), x=i32(2, 3)), ["dx"], {}, E),
    ("ReluNGradient", dict(y=f32(2, 3), dy=f32(3)), ["dx"], {}, V),
    ("Glu", dict(x=f32(2, 3)), ["y"], {}, V),
    ("PRelu", dict(x=f32(2, 3), w=f32(2)), ["y"], {}, V),
    ("PReluGradient", dict(y=f32(2, 3), dy=f32(2, 3), x=f32(2, 3), w=f32(1, 3)), ["dx", "dw"], {}, V),
    ("SquareRootDivide", dict(d=f32(2, 3), s=f32(3)), ["y"], {}, V),
    ("Mean", dict(a=f32(2, 3), b=f32(2, 2)), ["y"], {}, V),
    ("MeanGradient", dict(dy=f32(2, 3), a=f32(3), b=f32(2, 1, 1)), ["da", "db"], {}, V),
    # the calibration ops (csrc/ops/calib.c)
    ("Percentile", dict(x=f32(2, 3), vp=f32(3, 2), l=i32(2)), ["y"], {}, V),
    ("Percentile", dict(x=f32(2, 3), vp=f32(3, 3), l=i32(3)), ["y"], {}, V),
    ("BisectPercentile", dict(x=f32(2, 3)), ["y"], dict(percentile_raw=[1.0], percentile_mapping=[1.0],
                                                        percentile_lower=[1.0], percentile_upper=[1.0],
                                                        lengths=[1]), V),
    ("BatchBoxCox", dict(d=f32(2, 3), l1=f32(3), l2=f32(2)), ["y"], {}, V),
    ("PiecewiseLinearTransform", dict(x=f32(2, 3)), ["y"], dict(bounds=[0.0, 1.0], slopes=[1.0],
                                                                intercepts=[0.0]), V),
    ("PiecewiseLinearTransform", dict(x=f32(2), b=f32(2), s=f32(1), c=f32(2)), ["y"], dict(binary=1), V),
    # the queue ops (csrc/ops/queue.c): a tensor where the BlobsQueue goes
    ("DequeueBlobs", dict(q=f32(2)), ["x"], {}, E),
    ("SafeDequeueBlobs", dict(q=f32(2)), ["x", "st"], {}, E),
    ("CloseBlobsQueue", dict(q=i32(1)), [], {}, E),
    ("EnqueueRebatchingQueue", dict(q=f32(2), a=f32(2)), [], {}, E),
    ("DequeueRebatchingQueue", dict(q=f32(2)), ["x"], {}, E),
    ("CloseRebatchingQueue", dict(q=i32(1)), [], {}, E),
    # the decoding ops (csrc/ops/decode.c)
    ("ViterbiPath", dict(p=f32(4, 3), tr=f32(3, 4)), ["path"], {}, V),
    ("ViterbiPath", dict(p=i32(4, 3), tr=f32(3, 3)), ["path"], {}, E),
    ("ViterbiPath", dict(p=f32(2, 0), tr=f32(0, 0)), ["path"], {}, V),
    ("SwapBestPath", dict(p=f32(3, 4), b=i32(2)), ["y"], {}, V),
    ("SwapBestPath", dict(p=f32(3, 4), b=f32(3)), ["y"], {}, E),
    ("CTCGreedyDecoder", dict(x=f32(4, 6)), ["olen", "vals"], {}, V),
    ("CTCGreedyDecoder", dict(x=f32(4, 2, 3), l=i32(3)), ["olen", "vals"], {}, V),
    ("CTCGreedyDecoder", dict(x=f32(4, 2, 3), l=f32(2)), ["olen", "vals"], {}, E),
    ("CTCBeamSearchDecoder", dict(x=f32(4, 2, 3), l=i32(3)), ["olen", "vals", "prob"], {}, V),
    ("CTCBeamSearchDecoder", dict(x=i32(4, 2, 3)), ["olen", "vals"], {}, E),
    # csrc/ops/moments.c and LengthsTopK (csrc/ops/topk_tile.c)
    ("LpNorm", dict(x=f32(0)), ["z"], dict(average=1), V),
    ("LpNorm", dict(x=i32(2)), ["z"], {}, E),
    ("LpNormGradient", dict(x=f32(2, 3), dz=f32(2)), ["dx"], {}, V),
    ("BatchMoments", dict(x=f32(3)), ["mu", "var"], {}, V),
    ("BatchMomentsGradient", dict(dmu=f32(3), dvar=f32(2), x=f32(2, 3)), ["dx"], dict(order="NHWC"), V),
    ("SinusoidPositionEncoding", dict(p=i32(3)), ["y"], {}, V),
    ("SinusoidPositionEncoding", dict(p=f32(2, 3)), ["y"], {}, E),
    ("LengthsTopK", dict(x=f32(2, 3), lens=i32(2)), ["v", "i"], dict(k=2), V),
    ("LengthsTopK", dict(x=f32(5), lens=f32(2)), ["v", "i"], dict(k=2), E),
    ("LengthsTopKGradient", dict(lens=i32(2), ix=i32(2, 3), dv=f32(2, 2)), ["dx"], dict(k=2), V),
    # csrc/ops/counter.c: a tensor where the Counter goes
    ("ResetCounter", dict(c=f32(2)), [], dict(init_count=1), E),
    ("CountDown", dict(c=i32(1)), ["d"], {}, E),
    ("CheckCounterDone", dict(c=f32(1)), ["d"], {}, E),
    ("CountUp", dict(c=f32(1)), ["p"], {}, E),
    ("RetrieveCount", dict(c=i32()), ["n"], {}, E),
    # WeightedMultiSampling (csrc/ops/embed.c), UniqueUniformFill (csrc/ops/fill.c); the in-place
    # RowWiseCounter and SparseNormalize: tests/test_ops_optim_rowwise.py
    ("WeightedMultiSampling", dict(w=f32(2, 3)), ["idx"], dict(num_samples=2), V),
    ("WeightedMultiSampling", dict(w=i32(3)), ["idx"], {}, E),
    ("UniqueUniformFill", dict(s=i32(1), a=f32(2)), ["y"], dict(min=0, max=9, input_as_shape=1), E),
    ("UniqueUniformFill", dict(s=i32(1, 2)), ["y"], dict(min=0, max=9, input_as_shape=1), V),
    # csrc/ops/norm.c
    ("GroupNorm", dict(x=f32(2, 4, 3), g=f32(4), b=f32(4)), ["y", "m", "r"], dict(group=3), V),
    ("GroupNorm", dict(x=i32(2, 4, 3), g=f32(4), b=f32(4)), ["y", "m", "r"], dict(group=2), E),
    ("GroupNormGradient", dict(dy=f32(2, 4), x=f32(2, 4), g=f32(4), b=f32(4), m=f32(2, 2), r=f32(2)),
     ["dx", "dg", "db"], dict(group=2), V),
    ("InstanceNorm", dict(x=f32(2, 3, 4), s=f32(3), b=f32(4)), ["y"], dict(order="NHWC"), V),
    ("InstanceNormGradient", dict(x=f32(2, 3, 4), s=f32(3), b=f32(3), dy=f32(2, 3, 5)), ["dx", "ds", "db"], {},
     V),
    # csrc/ops/lrn.c
    ("LRN", dict(x=f32(4)), ["y"], dict(size=3), V),
    ("LRN", dict(x=i32(2, 4)), ["y", "s"], dict(size=3), E),
    ("LRNGradient", dict(x=f32(2, 4), y=f32(2, 4), dy=f32(2, 3)), ["dx"], dict(size=3), V),
    ("SpatialBN", dict(x=f32(2, 3), s=f32(3), b=f32(3), m=f32(3), v=f32(2)), ["y"], dict(is_test=1), V),
    ("SpatialBN", dict(x=f32(3), s=f32(3), b=f32(3), m=f32(3), v=f32(3)), ["y", "m2", "v2", "sm", "sr"], {},
     V),
    ("SpatialBNGradient", dict(x=f32(2, 3), s=f32(3), dy=f32(2, 3), m=f32(3), r=i32(3)), ["dx", "ds", "db"],
     {}, E),
    # csrc/ops/conv.c
    ("Conv", dict(x=f32(2, 4, 5, 5), w=f32(6, 2, 3, 3)), ["y"], dict(kernel=3), V),
    ("Conv", dict(x=f32(2, 4, 5, 5), w=f32(6, 4, 3, 3), b=i32(6)), ["y"], dict(kernel=3), E),
    ("Conv1D", dict(x=f32(2, 4, 5), w=f32(6, 2, 3)), ["y"], dict(kernels=[3], group=3), V),
    ("Conv2D", dict(x=f32(2, 5, 5, 4), w=f32(6, 3, 3, 4), b=f32(5)), ["y"], dict(kernel=3, order="NHWC"), V),
    ("Conv3D", dict(x=f32(1, 2, 3, 3, 3), w=f32(2, 2, 2, 2, 2)), ["y"], dict(kernel=2), V),
    ("ConvGradient", dict(x=f32(2, 4, 5, 5), w=f32(6, 4, 3, 3), dy=f32(2, 6, 3, 4)), ["dw", "db", "dx"],
     dict(kernel=3), V),
    ("Conv1DGradient", dict(x=f32(2, 4, 5), w=f32(6, 4, 3), dy=f32(2, 6, 2)), ["dw", "db"], dict(kernels=[3]),
     V),
    ("Conv2DGradient", dict(x=f32(2, 4, 5, 5), w=f32(6, 4, 3, 3), dy=i32(2, 6, 3, 3)), ["dw", "dx"],
     dict(kernel=3, no_bias=1), E),
    ("Conv3DGradient", dict(x=f32(1, 2, 3, 3, 3), w=f32(2, 1, 2, 2, 2), dy=f32(1, 2, 2, 2, 2)), ["dw", "db"],
     dict(kernel=2), V),
    ("ConvTranspose", dict(x=f32(2, 4, 5, 5), w=f32(6, 2, 3, 3)), ["y"], dict(kernel=3), V),
    ("ConvTranspose", dict(x=f32(2, 4, 5, 5), w=f32(4, 2, 3, 3), b=i32(2)), ["y"], dict(kernel=3), E),
    ("ConvTransposeGradient", dict(x=f32(2, 4, 5, 5), w=f32(4, 2, 3, 3), dy=f32(2, 2, 7, 8)),
     ["dw", "db", "dx"], dict(kernel=3), V),
    # csrc/ops/pool.c (every name of each op)
    ("MaxPool", dict(x=f32(2, 3, 5)), ["y"], dict(kernel=2), V),
    ("MaxPool1D", dict(x=i32(2, 3, 5)), ["y"], dict(kernels=[2]), E),
    ("MaxPool2D", dict(x=f32(2, 3, 3, 3)), ["y"], dict(kernel=4), V),
    ("MaxPool3D", dict(x=f32(2, 3, 3, 3)), ["y"], dict(kernels=[2, 2, 2]), V),
    ("AveragePool", dict(x=f32(2, 3, 5, 6)), ["y"], dict(kernel=2, legacy_pad=0, pads=[0, 0, 0, 9]), V),
    ("AveragePool1D", dict(x=f32(2, 3)), ["y"], dict(global_pooling=1), V),
    ("AveragePool2D", dict(x=i32(2, 3, 4, 4)), ["y"], dict(kernel=2), E),
    ("AveragePool3D", dict(x=f32(2, 3, 4, 4, 4)), ["y"], dict(kernels=[5, 1, 1]), V),
    ("MaxPoolGradient", dict(x=f32(2, 3, 4, 4), y=f32(2, 3, 2, 3), dy=f32(2, 3, 2, 2)), ["dx"],
     dict(kernel=2, stride=2), V),
    ("MaxPool1DGradient", dict(x=f32(2, 3, 4), y=f32(2, 3, 2), dy=i32(2, 3, 2)), ["dx"],
     dict(kernels=[2], strides=[2]), E),
    ("MaxPool2DGradient", dict(x=f32(2, 3, 4, 4), y=f32(2, 3, 2, 2), dy=f32(2, 3, 3, 3)), ["dx"],
     dict(kernel=2, stride=2), V),
    ("MaxPool3DGradient", dict(x=f32(2, 3, 4, 4), y=f32(2, 3, 2, 2), dy=f32(2, 3, 2, 2)), ["dx"],
     dict(kernels=[2, 2, 2]), V),
    ("AveragePoolGradient", dict(x=f32(2, 3, 4, 4), y=f32(2, 2, 2, 2), dy=f32(2, 3, 2, 2)), ["dx"],
     dict(kernel=2, stride=2), V),
    ("AveragePool1DGradient", dict(x=f32(2, 3, 4), y=i32(2, 3, 3), dy=f32(2, 3, 3)), ["dx"],
     dict(kernels=[2]), E),
    ("AveragePool2DGradient", dict(x=f32(2, 4, 4, 3), y=f32(2, 2, 2, 3), dy=f32(2, 2, 2, 4)), ["dx"],
     dict(kernel=2, stride=2, order="NHWC"), V),
    ("AveragePool3DGradient", dict(x=f32(1, 1, 2, 2, 2), y=f32(1, 1, 1, 1, 1), dy=f32(1, 1, 1, 1, 2)), ["dx"],
     dict(global_pooling=1), V),
    ("LpPool", dict(x=f32(2, 3, 3, 3)), ["y"], dict(kernel=4, p=3.0), V),
    ("LpPool", dict(x=i32(2, 3, 4, 4)), ["y"], dict(kernel=2), E),
    ("Perplexity", dict(p=f32(2, 3)), ["y"], {}, V),
    ("Perplexity", dict(p=i32(3)), ["y"], {}, E),
    ("MultiClassAccuracy", dict(x=f32(3, 2), l=i32(2)), ["a", "c"], {}, V),
    ("MultiClassAccuracy", dict(x=f32(3, 2), l=f32(3)), ["a", "c"], {}, E),
    ("IsMemberOf", dict(x=f32(3)), ["y"], dict(value=[1]), E),
    ("IsMemberOf", dict(x=i32(3)), ["y"], dict(value=[2 ** 31]), V),
    ("AccumulateHistogram", dict(x=i32(3)), ["c", "a"], {}, E),
    ("AccumulateHistogram", dict(x=f32(3)), ["c", "a"], dict(num_buckets=0), V),
    ("LastNWindowCollector", dict(buf=f32(2, 3), nx=i32(), d=f32(1, 4)), ["buf", "nx"], dict(num_to_collect=4), V),
    ("LastNWindowCollector", dict(buf=f32(2, 3), nx=i32(), d=i32(1, 3)), ["buf", "nx"], dict(num_to_collect=4), E),
    ("LastNWindowCollector", dict(buf=f32(5, 3), nx=i32(), d=f32(1, 3)), ["buf", "nx"], dict(num_to_collect=4), V),
    ("LastNWindowCollector", dict(buf=f32(0), nx=i32(1), d=f32(1, 3)), ["buf", "nx"], dict(num_to_collect=4), V),
    ("LastNWindowCollector", dict(buf=f32(0), nx=i32(), d=f32(1, 3), m=f32(1)), ["buf", "nx"],
     dict(num_to_collect=4), E),
    ("LpPoolGradient", dict(x=f32(2, 3, 4, 4), y=f32(2, 3, 2, 2), dy=f32(2, 3, 3, 3)), ["dx"],
     dict(kernel=2, stride=2), V),
    ("LpPoolGradient", dict(x=f32(2, 3, 4), y=f32(2, 3, 2), dy=i32(2, 3, 2)), ["dx"],
     dict(kernels=[2], strides=[2]), E),
    # csrc/ops/pad_image.c
    ("PadImage", dict(x=f32(2, 3, 5)), ["y"], dict(pad=1), V),
    ("PadImage", dict(x=i32(2, 3, 4, 4)), ["y"], dict(pad=1), E),
    ("PadImage", dict(x=f32(2, 3, 4, 4)), ["y"], dict(pad=4, mode="reflect"), V),
    ("PadImage", dict(x=f32(2, 3, 4, 4)), ["y"], dict(pads=[-2, 0, -2, 0]), V),
    ("PadImageGradient", dict(dy=f32(2, 3, 4, 4)), ["dx"], dict(pads=[0, 3, 0, 2]), V),
    ("PadImageGradient", dict(dy=i32(2, 3, 4, 4)), ["dx"], dict(pad=1), E),
    # Log1p, Round, ReplaceNaN (csrc/ops/unary2.c), SumInt, Accumulate (math.c), NCHW2NHWC, NHWC2NCHW,
    # DepthConcat, DepthSplit (shape.c), LengthsToOffsets (lengths.c)
    ("Log1p", dict(x=i32(2, 3)), ["y"], {}, E),
    ("Log1pGradient", dict(x=f32(2, 3), dy=f32(3, 2)), ["dx"], {}, V),
    ("Round", dict(x=i32(2, 3)), ["y"], {}, E),
    ("ReplaceNaN", dict(x=i32(2, 3)), ["y"], dict(value=1.0), E),
    ("SumInt", dict(a=i32(2, 3), b=f32(2, 3)), ["y"], {}, E),
    ("SumInt", dict(a=i32(2, 3), b=i32(3, 2)), ["y"], {}, V),
    ("Accumulate", dict(x=i32(2, 3)), ["y"], {}, E),
    ("NCHW2NHWC", dict(x=f32(2, 3)), ["y"], {}, V),
    ("NHWC2NCHW", dict(x=f32(3)), ["y"], {}, V),
    ("DepthConcat", dict(a=f32(2, 3), c=f32(3, 3)), ["y", "info"], dict(axis=1), V),
    ("DepthSplit", dict(x=f32(2, 3)), ["s0", "s1"], dict(axis=1), V),
    ("LengthsToOffsets", dict(l=f32(3)), ["y"], {}, E),
    ("LengthsToOffsets", dict(l=i32(3, 1)), ["y"], dict(include_last_offset=1), V),
    # BooleanUnmask (csrc/ops/mask.c), SegmentIdsToRanges (lengths.c), RowMul, ReduceTailSum (math.c),
    # RowWiseArgMax (reduce.c), FindDuplicateElements (segment.c), ChannelShuffle(Gradient),
    # ResizeNearest(Gradient) (image.c)
    ("BooleanUnmask", dict(m=i32(3), v=f32(2), n=i32(2), w=f32(1)), ["y"], {}, V),
    ("BooleanUnmask", dict(m=i32(3), v=f32(2), n=i32(3), w=i32(1)), ["y"], {}, E),
    ("SegmentIdsToRanges", dict(s=f32(3)), ["r"], {}, E),
    ("SegmentIdsToRanges", dict(s=i32(3), d=np.float32(1)), ["r"], {}, V),
    ("RowMul", dict(m=f32(3, 2), w=f32(2)), ["y"], {}, V),
    ("ReduceTailSum", dict(m=i32(3, 2)), ["y"], {}, E),
    ("RowWiseArgMax", dict(x=f32(3)), ["y"], {}, V),
    ("FindDuplicateElements", dict(x=f32(2, 2)), ["y"], {}, V),
    ("ChannelShuffle", dict(x=f32(2, 6, 2)), ["y"], dict(group=4), V),
    ("ChannelShuffleGradient", dict(x=i32(2, 6)), ["y"], dict(group=2), E),
    ("ResizeNearest", dict(x=f32(2, 3, 4)), ["y"], {}, V),
    ("ResizeNearest", dict(x=f32(2, 3, 4, 4), s=f32(3)), ["y"], {}, V),
    ("ResizeNearestGradient", dict(dy=f32(2, 3, 8, 9), x=f32(2, 3, 4, 4)), ["dx"], dict(width_scale=2.0,
                                                                                       height_scale=2.0), V),
    ("ResizeNearestGradient", dict(dy=f32(2, 3, 8, 8), x=f32(2, 3, 4, 4), s=i32(2)), ["dx"], {}, E),
    # Im2Col, Col2Im (csrc/ops/conv.c), SpaceToBatch, BatchToSpace (pad_image.c), Summarize (print.c)
    ("Im2Col", dict(x=f32(2, 3, 5)), ["y"], dict(kernel=3), V),
    ("Im2Col", dict(x=i32(2, 3, 5, 5)), ["y"], dict(kernel=3), E),
    ("Im2Col", dict(x=f32(2, 3, 5, 5)), ["y"], dict(kernel=7), V),
    ("Col2Im", dict(c=f32(2, 27, 3, 4), x=f32(2, 3, 5, 5)), ["y"], dict(kernel=3), V),
    ("Col2Im", dict(c=i32(2, 27, 3, 3), x=f32(2, 3, 5, 5)), ["y"], dict(kernel=3), E),
    ("Col2Im", dict(c=f32(2, 27, 3, 3), x=f32(3, 5, 5)), ["y"], dict(kernel=3), V),
    ("SpaceToBatch", dict(x=f32(2, 3, 4, 5)), ["y"], {}, V),
    ("SpaceToBatch", dict(x=i32(2, 3, 4, 4)), ["y"], {}, E),
    ("SpaceToBatch", dict(x=f32(2, 3, 4)), ["y"], {}, V),
    ("BatchToSpace", dict(x=f32(6, 3, 2, 2)), ["y"], {}, V),
    ("BatchToSpace", dict(x=f32(4, 3, 2, 2)), ["y"], dict(pad_t=3, pad_b=2), V),
    ("Summarize", dict(x=f32(2, 0)), ["y"], {}, V),
    ("Summarize", dict(x=i32(3)), [], {}, E),
]

IDS = ["%s-%d" % (c[0], i) for i, c in enumerate(CASES)]


def feed(inputs):
    for k, v in inputs.items():
        workspace.FeedBlob(k, v)


def run_message(op, inputs, outs, args, exc):
    """The exception and message the op gives when it runs on these inputs."""
    feed(inputs)
    with pytest.raises(exc) as info:
        workspace.RunOperatorOnce(core.CreateOperator(op, list(inputs), outs, **args))
    return str(info.value)


def usable():
    workspace.FeedBlob("ok", f32(2, 2))
    workspace.RunOperatorOnce(core.CreateOperator("Copy", ["ok"], ["ok2"]))
    np.testing.assert_array_equal(workspace.FetchBlob("ok2"), f32(2, 2))


@pytest.mark.parametrize("op,inputs,outs,args,exc", CASES, ids=IDS)
def test_refused_at_creation_with_the_run_message(op, inputs, outs, args, exc):
    msg = run_message(op, inputs, outs, args, exc)
    assert msg.startswith("op %s #0: " % op), msg
    workspace.ResetWorkspace()
    feed(inputs)
    net = core.Net("chk")
    getattr(net, op)(list(inputs), outs, **args)
    with pytest.raises(exc) as info:
        workspace.CreateNet(net)
    prefix = "net '%s': " % net.Name()
    assert str(info.value) == prefix + msg
    assert net.Name() not in workspace.Nets()
    for o in outs:  # nothing was written (op creation may have made the blob, holding no tensor)
        if o in inputs:  # in place (LastNWindowCollector): the fed value
            np.testing.assert_array_equal(workspace.FetchBlob(o), inputs[o])
        elif workspace.HasBlob(o):  # FetchBlob describes it, as Caffe2's
            want = b"%s, a C++ native class of type nullptr (uninitialized)." % o.encode()
            assert workspace.FetchBlob(o) == want
    with pytest.raises(exc) as info:
        workspace.RunNetOnce(net)
    assert str(info.value) == prefix + msg
    usable()


def test_every_changed_op_type_has_a_case_and_a_check():
    checked = set(_C.op_types(checked=True))
    ops = {c[0] for c in CASES}
    assert ops <= checked
    assert not ops & UNCHECKED


def test_the_unchecked_op_types_are_the_listed_ones():
    """A new op type without a check is a visible decision: add it here (and to README's list)."""
    assert set(_C.op_types(checked=False)) == UNCHECKED
    assert set(_C.op_types(checked=False)) | set(_C.op_types(checked=True)) == set(_C.op_types())


# Inputs whose values (not shapes) are wrong: the net is created, the run refuses them, and after
# feeding fixed values the same net runs.
VALUE_CASES = [
    ("Gather", dict(data=f32(5, 3), idx=np.array([0, 5], np.int32)), ["out"], {}, IndexError,
     dict(idx=np.array([0, 4], np.int32))),
    ("Gather", dict(data=f32(5, 3), idx=np.array([3], np.int32)), ["out"], dict(axis=1), IndexError,
     dict(idx=np.array([2], np.int32))),
    ("BatchGatherGradient", dict(data=f32(2, 5), idx=np.array([7], np.int32), dout=f32(2, 1)), ["dd"], {},
     IndexError, dict(idx=np.array([4], np.int32))),
    ("GatherGradient", dict(data=f32(5, 3), idx=np.array([-1], np.int32), dout=f32(1, 3)), ["dd"], {},
     IndexError, dict(idx=np.array([1], np.int32))),
    ("OneHot", dict(idx=np.array([0, 4], np.int32)), ["y"], dict(index_size=4), IndexError,
     dict(idx=np.array([0, 3], np.int32))),
    ("OneHot", dict(idx=np.array([0, 1], np.int32), size=np.array([-1], np.int32)), ["y"], {}, ValueError,
     dict(size=np.array([2], np.int32))),
    ("SegmentOneHot", dict(lens=np.array([1, 1], np.int32), idx=np.array([0, 3], np.int32),
                           size=np.array([3], np.int32)), ["y"], {}, IndexError,
     dict(idx=np.array([0, 2], np.int32))),
    ("BatchOneHot", dict(x=i32(4, 2), lens=np.array([1, 1], np.int32), vals=i32(3)), ["y"], {}, ValueError,
     dict(lens=np.array([1, 2], np.int32))),
    ("BatchBucketOneHot", dict(x=f32(4, 2), lens=np.array([2, 0], np.int32), b=np.array([1, 0], np.float32)),
     ["y"], {}, ValueError, dict(b=np.array([0, 1], np.float32))),
    ("SparseToDenseMask", dict(i=i32(3), v=f32(3, 2), d=f32(2), l=np.array([1, 1], np.int32)), ["y"],
     dict(mask=[1, 0]), ValueError, dict(l=np.array([1, 2], np.int32))),
    ("BatchSparseToDense", dict(l=np.array([2], np.int32), i=np.array([1, 1], np.int32), v=f32(2)), ["y"],
     dict(dense_last_dim=3), ValueError, dict(i=np.array([1, 2], np.int32))),
    ("BatchDenseToSparse", dict(l=np.array([2], np.int32), i=np.array([1, 4], np.int32), d=f32(1, 3)), ["y"],
     {}, IndexError, dict(i=np.array([1, 0], np.int32))),
    ("SoftmaxWithLoss", dict(x=f32(2, 3), lab=np.array([0, 3], np.int32)), ["p", "loss"], {}, IndexError,
     dict(lab=np.array([0, 2], np.int32))),
    ("SoftmaxWithLossGradient", dict(x=f32(2, 3), lab=np.array([0, 3], np.int32), p=f32(2, 3), dl=f32(1)),
     ["dx"], {}, IndexError, dict(lab=np.array([0, 2], np.int32))),
    ("LabelCrossEntropyGradient", dict(x=f32(2, 3), lab=np.array([3, 0], np.int32), dy=f32(2)), ["dx"], {},
     IndexError, dict(lab=np.array([2, 0], np.int32))),
    ("Split", dict(x=f32(2, 3), sizes=np.array([2, 2], np.int32)), ["s0", "s1"], dict(axis=1), ValueError,
     dict(sizes=np.array([1, 2], np.int32))),
    ("Reshape", dict(x=f32(2, 3), shape=np.array([4, 2], np.int32)), ["y", "old"], {}, ValueError,
     dict(shape=np.array([3, 2], np.int32))),
    ("LengthsSplit", dict(l=np.array([2, -1], np.int32)), ["y"], dict(n_split=2), ValueError,
     dict(l=np.array([2, 1], np.int32))),
    ("CopyRowsToTensor", dict(x=f32(3, 2), i=np.array([3], np.int32), r=f32(2)), ["x"], {}, IndexError,
     dict(i=np.array([2], np.int32))),
    ("EnsureClipped", dict(p=f32(5, 3), i=np.array([5], np.int32), g=f32(1, 3)), ["p"], {}, IndexError,
     dict(i=np.array([4], np.int32))),
    ("ClipTensorByScaling", dict(x=f32(4, 3), v=f32(1), a=np.zeros(1, np.float32)), ["y"],
     dict(threshold=1.0), ValueError, dict(a=f32(1))),
    ("LengthsToShape", dict(l=np.array([2, 1], np.int32)), ["y"], {}, ValueError,
     dict(l=np.array([2, 2], np.int32))),
    ("ConstantFill", dict(s=np.array([2, -1], np.int32)), ["y"], dict(input_as_shape=1), ValueError,
     dict(s=np.array([2, 1], np.int32))),
    ("LearningRate", dict(it=np.array([-1], np.int32)), ["lr"], dict(base_lr=-0.1, policy="fixed"),
     ValueError, dict(it=np.array([3], np.int32))),
    ("WeightedSample", dict(w=np.zeros((2, 3), np.float32)), ["idx"], dict(seed=1), ValueError,
     dict(w=f32(2, 3))),
    ("SwapBestPath", dict(p=f32(3, 4), b=np.array([0, 4, 1], np.int32)), ["y"], {}, ValueError,
     dict(b=np.array([0, 3, 1], np.int32))),
    ("CTCGreedyDecoder", dict(x=f32(4, 2, 3), l=np.array([1, 5], np.int32)), ["olen", "vals"], {}, ValueError,
     dict(l=np.array([1, 4], np.int32))),
    ("CTCBeamSearchDecoder", dict(x=f32(4, 2, 3), l=np.array([-1, 2], np.int32)), ["olen", "vals"], {},
     ValueError, dict(l=np.array([1, 4], np.int32))),
    ("LengthsTopK", dict(x=f32(5), lens=np.array([2, 2], np.int32)), ["v", "i"], dict(k=2), ValueError,
     dict(lens=np.array([2, 3], np.int32))),
    ("LengthsTopKGradient", dict(lens=np.array([2, 1], np.int32), ix=np.array([[0, 2], [0, -1]], np.int32),
                                 dv=f32(2, 2)), ["dx"], dict(k=2), ValueError,
     dict(ix=np.array([[1, 0], [0, -1]], np.int32))),
    ("MarginRankingCriterion", dict(a=f32(2), b=f32(2), y=i32(2)), ["l"], {}, ValueError,
     dict(y=np.array([1, -1], np.int32))),
    ("PairWiseLoss", dict(x=f32(3), t=f32(3), n=np.array([1, 1], np.int32)), ["l"], {}, ValueError,
     dict(n=np.array([1, 2], np.int32))),
    ("BernoulliJSD", dict(p=np.full(2, 2, np.float32), q=f32(2)), ["l"], {}, ValueError, dict(p=f32(2))),
    ("RowWiseCounter", dict(p=i32(4), c=f32(4), i=np.array([1, 4], np.int32), t=i32(1)), ["p", "c"],
     dict(counter_halflife=2), IndexError, dict(i=np.array([1, 3], np.int32))),
    ("SparseNormalize", dict(w=f32(4, 3), i=np.array([-1], np.int32)), ["w"], {}, IndexError,
     dict(i=np.array([3], np.int32))),
    ("WeightedMultiSampling", dict(w=np.array([2, 1], np.float32)), ["idx"], dict(num_samples=3), ValueError,
     dict(w=np.array([1, 2], np.float32))),
    ("UniqueUniformFill", dict(s=np.array([11], np.int32)), ["y"], dict(min=0, max=9, input_as_shape=1),
     ValueError, dict(s=np.array([10], np.int32))),
    ("SumInt", dict(a=np.array([2 ** 31 - 1], np.int32), b=np.array([1], np.int32)), ["y"], {}, ValueError,
     dict(b=np.array([0], np.int32))),
    ("LengthsToOffsets", dict(l=np.array([2, -1], np.int32)), ["y"], {}, ValueError,
     dict(l=np.array([2, 1], np.int32))),
    ("BooleanUnmask", dict(m=np.array([1, 0], np.int32), v=f32(1), n=np.array([0, 0], np.int32), w=f32(1)),
     ["y"], {}, ValueError, dict(n=np.array([0, 1], np.int32))),
    ("SegmentIdsToRanges", dict(s=np.array([1, 0], np.int32)), ["r"], {}, ValueError,
     dict(s=np.array([0, 1], np.int32))),
    ("ResizeNearest", dict(x=f32(1, 1, 2, 2), s=np.array([0.0, 1.0], np.float32)), ["y"], {}, ValueError,
     dict(s=np.array([2.0, 1.0], np.float32))),
]


@pytest.mark.parametrize("op,inputs,outs,args,exc,fixed", VALUE_CASES,
                         ids=["%s-%d" % (c[0], i) for i, c in enumerate(VALUE_CASES)])
def test_data_values_are_checked_when_the_op_runs(op, inputs, outs, args, exc, fixed):
    feed(inputs)
    net = core.Net("vals")
    getattr(net, op)(list(inputs), outs, **args)
    workspace.CreateNet(net)
    with pytest.raises(exc, match="op %s #0: " % op):
        workspace.RunNet(net)
    feed(fixed)
    workspace.RunNet(net)
    usable()


def test_inputs_written_earlier_in_the_net_are_checked_when_it_runs():
    feed(dict(p=f32(2, 3), m=f32(2, 3), w=f32(3, 2), lr=f32(1)))
    net = core.Net("later")
    net.Copy(["w"], "w2")  # w2 is written by the net: its shape is not known at creation
    net.Adagrad(["p", "m", "w2", "lr"], ["p", "m"])
    workspace.CreateNet(net)
    with pytest.raises(ValueError, match=r"op Adagrad #1: input 2 blob 'w2' must have the shape"):
        workspace.RunNet(net)
    feed(dict(w=f32(2, 3)))
    workspace.RunNet(net)


def test_create_net_input_blobs_hold_no_tensor_and_are_not_checked():
    """CreateNet(input_blobs=...) creates missing blobs holding no tensor (Caffe2's empty blobs): an op
    reading them is checked when it runs, once they are fed (here Gather's int32 indices)."""
    workspace.FeedBlob("data", f32(5, 3))
    net = core.Net("placeholders")
    net.Gather(["data", "idx"], "out")
    workspace.CreateNet(net, input_blobs=["idx"])
    with pytest.raises(ValueError, match=r"op Gather #0: input 1 blob 'idx' holds no tensor"):
        workspace.RunNet(net)
    workspace.FeedBlob("idx", np.array([1, 4], np.int32))
    workspace.RunNet(net)
    assert workspace.FetchBlob("out").shape == (2, 3)
