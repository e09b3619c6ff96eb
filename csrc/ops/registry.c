/* The operator registry: one static schema table per op family. Adding an op
 * means adding one row to its family's table (ops/<family>.c). */
#include "../core/rc_core.h"
#include <string.h>

extern const rc_op_schema rc_ops_math[];      /* ops/math.c */
extern const rc_op_schema rc_ops_shape[];     /* ops/shape.c */
extern const rc_op_schema rc_ops_fill[];      /* ops/fill.c */
extern const rc_op_schema rc_ops_loss[];      /* ops/loss.c */
extern const rc_op_schema rc_ops_rnn_units[]; /* ops/rnn_units.c: LSTMUnit, GRUUnit */
extern const rc_op_schema rc_ops_recurrent[]; /* rnn/recurrent_network.c */
extern const rc_op_schema rc_ops_embed[];     /* ops/embed.c: Gather, OneHot, WeightedSample, (Sparse)Adagrad */
extern const rc_op_schema rc_ops_dropout[];   /* ops/dropout.c: Dropout, DropoutGrad */
extern const rc_op_schema rc_ops_optim[];     /* ops/optim.c: Iter, LearningRate, MomentumSGDUpdate, Adam and their Sparse* */
extern const rc_op_schema rc_ops_norm[];      /* ops/layer_norm.c: LayerNorm */
extern const rc_op_schema rc_ops_norm2[];     /* ops/norm.c: GroupNorm, InstanceNorm, SpatialBN */
extern const rc_op_schema rc_ops_conv[];      /* ops/conv.c: Conv(1D|2D|3D) and their gradients, Im2Col, Col2Im */
extern const rc_op_schema rc_ops_batch[];     /* ops/batch.c: BatchMatMul, SequenceMask, ReversePackedSegs */
extern const rc_op_schema rc_ops_sparse[];    /* ops/sparse.c: SparseToDense, ScatterWeightedSum */
extern const rc_op_schema rc_ops_segment[];   /* ops/segment.c: Unique, (Sparse)UnsortedSegment{Sum,Mean,
                                                 WeightedSum} (+gradients) */
extern const rc_op_schema rc_ops_cast[];      /* ops/cast.c: Cast, Conditional */
extern const rc_op_schema rc_ops_topk_tile[]; /* ops/topk_tile.c: TopK, Tile and their gradients */
extern const rc_op_schema rc_ops_db[];        /* ops/db.c: Save, Load, CreateDB (minidb checkpoints) */
extern const rc_op_schema rc_ops_optim_adaptive[]; /* ops/optim_adaptive.c: RmsProp, (Sparse)Adadelta, (Sparse)Wngrad */
extern const rc_op_schema rc_ops_unary[];     /* ops/unary.c: Clip, Abs, Sqrt, LeakyRelu, Elu, Softsign, StopGradient,
                                                 NegateGradient, ReluN, Min, Mean */
extern const rc_op_schema rc_ops_reduce[];    /* ops/reduce.c: Reduce*, ReduceFront/Back*, ArgMax/ArgMin, Accuracy */
extern const rc_op_schema rc_ops_optim_rowwise[]; /* ops/optim_rowwise.c: (Sparse)Ftrl, RowWiseSparseAdagrad/Adam,
                                                     RowWiseCounter, SparseNormalize */
extern const rc_op_schema rc_ops_optim_more[]; /* ops/optim_more.c: DecayAdagrad, GFtrl, Storm, Lars, YellowFin */
extern const rc_op_schema rc_ops_bcast[];     /* ops/bcast.c: And, Or, Xor, Not, Add/Sub/MulGradient */
extern const rc_op_schema rc_ops_lengths_reduce[]; /* ops/lengths_reduce.c: (Sparse)Lengths{Sum,Mean,WeightedSum}, LengthsMax */
extern const rc_op_schema rc_ops_lengths[];   /* ops/lengths.c: (Un)PackSegments, Add/Remove/GatherPadding, Lengths* */
extern const rc_op_schema rc_ops_unary2[];    /* ops/unary2.c: Sin, Cos, Sign, Reciprocal, RSqrt, Floor, Ceil,
                                                 Softplus, Selu, Swish, HardSigmoid, Cube, Sinh, Cosh, Erf,
                                                 ThresholdedRelu, Gelu, Glu, Where, Expand */
extern const rc_op_schema rc_ops_loss2[];     /* ops/loss2.c: CrossEntropy, SigmoidCrossEntropyWithLogits, L1Distance, ... */
extern const rc_op_schema rc_ops_loss3[];     /* ops/loss3.c: MarginRankingCriterion, CosineEmbeddingCriterion,
                                                 PairWiseLoss, BernoulliJSD (+gradients) */
extern const rc_op_schema rc_ops_bmm_pow[];   /* ops/bmm_pow.c: BatchMatMulGradient, BatchGather(Gradient) */
extern const rc_op_schema rc_ops_util[];      /* ops/util.c: Alias, CopyFromCPUInput, EnsureCPUOutput */
extern const rc_op_schema rc_ops_mask[];      /* ops/mask.c: BooleanMask(+Gradient, Lengths), LengthsToWeights,
                                                 PadEmptySamples, DotProductWithPadding(+Gradient),
                                                 RemoveDataBlocks */
extern const rc_op_schema rc_ops_sorted_segment[]; /* ops/sorted_segment.c: (Sparse)SortedSegment{Sum,Mean,
                                                 WeightedSum}, SortedSegmentRange{Sum,Mean,LogSumExp,
                                                 LogMeanExp,Max} (+gradients),
                                                 NanCheck, Assert */
extern const rc_op_schema rc_ops_queue[];     /* ops/queue.c: CreateBlobsQueue, (Safe)EnqueueBlobs,
                                                 (Safe)DequeueBlobs, CloseBlobsQueue */
extern const rc_op_schema rc_ops_mutex[];     /* ops/mutex.c: CreateMutex, AtomicIter */
extern const rc_op_schema rc_ops_counter[];   /* ops/counter.c: CreateCounter, CountDown, ... */
extern const rc_op_schema rc_ops_ranges[];    /* ops/ranges.c: LengthsTile, LengthsRangeFill, Range, LengthsGather,
                                                 GatherRanges, LengthsPad, ScatterAssign, Mod */
extern const rc_op_schema rc_ops_print[];     /* ops/print.c: Print, Summarize */
extern const rc_op_schema rc_ops_decode[];    /* ops/decode.c: ViterbiPath, SwapBestPath, CTC*Decoder */
extern const rc_op_schema rc_ops_moments[];   /* ops/moments.c: LpNorm, BatchMoments (+gradients),
                                                 SinusoidPositionEncoding */
extern const rc_op_schema rc_ops_activation[]; /* ops/activation.c: PRelu(+Gradient), SquareRootDivide */
extern const rc_op_schema rc_ops_pyfunc[];    /* ops/pyfunc.c: Python, PythonGradient (through a hook) */
extern const rc_op_schema rc_ops_pool[];      /* ops/pool.c: MaxPool, AveragePool (1D/2D/3D), LpPool (+gradients) */
extern const rc_op_schema rc_ops_pad_image[]; /* ops/pad_image.c: PadImage, PadImageGradient, SpaceToBatch,
                                                 BatchToSpace */
extern const rc_op_schema rc_ops_lrn[];       /* ops/lrn.c: LRN, LRNGradient */
extern const rc_op_schema rc_ops_image[];     /* ops/image.c: ChannelShuffle, ResizeNearest (+gradients) */
extern const rc_op_schema rc_ops_metric[];    /* ops/metric.c: Perplexity, MultiClassAccuracy */
extern const rc_op_schema rc_ops_collect[];   /* ops/collect.c: LastNWindowCollector */
extern const rc_op_schema rc_ops_member_hist[]; /* ops/member_hist.c: IsMemberOf, AccumulateHistogram */
extern const rc_op_schema rc_ops_inference_lstm[]; /* ops/inference_lstm.c: InferenceLSTM */
extern const rc_op_schema rc_ops_calib[];     /* ops/calib.c: Percentile, BisectPercentile, BatchBoxCox,
                                                 PiecewiseLinearTransform */

static const rc_op_schema *const families[] = {
    rc_ops_math, rc_ops_shape, rc_ops_fill, rc_ops_loss, rc_ops_rnn_units, rc_ops_recurrent,
    rc_ops_embed, rc_ops_optim, rc_ops_dropout, rc_ops_norm, rc_ops_norm2, rc_ops_conv, rc_ops_batch,
    rc_ops_sparse, rc_ops_segment, rc_ops_cast, rc_ops_topk_tile, rc_ops_db,
    rc_ops_optim_adaptive,
    rc_ops_unary, rc_ops_reduce,
    rc_ops_optim_rowwise,
    rc_ops_bcast,
    rc_ops_lengths_reduce,
    rc_ops_lengths,
    rc_ops_unary2,
    rc_ops_loss2,
    rc_ops_loss3,
    rc_ops_bmm_pow,
    rc_ops_optim_more,
    rc_ops_util,
    rc_ops_mask,
    rc_ops_sorted_segment,
    rc_ops_ranges,
    rc_ops_queue,
    rc_ops_print,
    rc_ops_mutex,
    rc_ops_counter,
    rc_ops_decode,
    rc_ops_moments,
    rc_ops_activation,
    rc_ops_calib,
    rc_ops_pool,
    rc_ops_pyfunc,
    rc_ops_lrn,
    rc_ops_pad_image,
    rc_ops_image,
    rc_ops_metric,
    rc_ops_collect,
    rc_ops_member_hist,
    rc_ops_inference_lstm,
};

const rc_op_schema *rc_op_lookup(const char *type)
{
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const rc_op_schema *s = families[f]; s->type; s++)
            if (strcmp(s->type, type) == 0) return s;
    return NULL;
}

int rc_op_num_schemas(void)
{
    int n = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const rc_op_schema *s = families[f]; s->type; s++) n++;
    return n;
}

const rc_op_schema *rc_op_schema_at(int i)
{
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (const rc_op_schema *s = families[f]; s->type; s++)
            if (i-- == 0) return s;
    return NULL;
}
