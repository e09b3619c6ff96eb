"""Fuzz target: random operators of every registered type (recurrent._C.op_types())
with random arities, blob names (including in-place and missing ones), small
shapes and dtypes, and random arguments of every kind; run once, then as a
created net run again after re-feeding the inputs with other shapes. Before
each op of the first run, its outputs are inferred statically
(recurrent.shape_inference, as workspace.InferShapesAndTypes): when the op then
runs, the inference must not have raised or refused the inputs, and every
output it inferred must have the shape and type the run gave.

    python fuzz/fuzz_ops.py [libFuzzer flags]      (needs atheris)
    python fuzz/fuzz_ops.py --replay FILE...       (no atheris needed)

FUZZ_OP_TYPES=Conv,MaxPool,... restricts the op types drawn to those (a comma-separated list of
registered types), to fuzz a few new ops hard.
"""

import os
import sys

from common import API_ERRORS, Provider, check_usable, expected, main

from recurrent import _C, core, shape_inference, workspace  # noqa: E402
from recurrent.proto import NetDef  # noqa: E402

OP_TYPES = sorted(_C.op_types())
if os.environ.get("FUZZ_OP_TYPES"):
    _chosen = [t for t in os.environ["FUZZ_OP_TYPES"].split(",") if t]
    _unknown = sorted(set(_chosen) - set(OP_TYPES))
    if _unknown:
        raise SystemExit("fuzz_ops: FUZZ_OP_TYPES names unregistered op types: %s" % ", ".join(_unknown))
    OP_TYPES = sorted(set(_chosen))
# argument names the ops read (csrc/ops, csrc/rnn), plus a nonsense one
ARG_NAMES = ["accumulate_db", "accumulate_dw", "add_axis", "axes", "axis", "axis_a", "axis_b", "axis_w",
             "broadcast", "decay", "dims", "drop_states", "dtype", "epsilon", "forget_bias", "index_size",
             "input_as_shape", "max", "mean", "min", "offset", "order", "scale", "seed", "sequence_lengths",
             "shape", "split", "std", "trans_a", "trans_b", "value", "values", "window", "extra_shape",
             "linear_before_reset", "prefix", "timestep",
             # Gather (csrc/ops/bmm_pow.c), compositeCyclical / compositeCosine (csrc/ops/optim.c)
             "wrap_indices", "match_outer", "cyclical_max_lr", "cyclical_step_size", "cyclical_decay",
             "cosine_max_lr", "cosine_min_lr", "cosine_period", "cosine_t_mult", "cosine_lr_shrink",
             # optimizer ops (csrc/ops/optim.c)
             "base_lr", "policy", "stepsize", "gamma", "power", "max_iter", "stepsizes", "start_multiplier",
             "multiplier", "num_iter", "momentum", "nesterov", "beta1", "beta2",
             # SumSqrElements (csrc/ops/loss.c), Pow (csrc/ops/math.c)
             "average", "exponent",
             # Dropout (csrc/ops/dropout.c)
             "ratio", "is_test",
             # LayerNorm(+Gradient) (csrc/ops/layer_norm.c; axis and epsilon are above)
             "elementwise_affine",
             # BatchMatMul, SequenceMask (csrc/ops/batch.c; trans_a, trans_b, broadcast, axis are above)
             "mode", "fill_val", "grad",
             # Shape, Slice(+Gradient) (csrc/ops/shape.c; axes is above)
             "starts", "ends",
             # SparseToDense (csrc/ops/sparse.c; the sparse optimizers read momentum, nesterov,
             # epsilon, decay, beta1, beta2, above)
             "output_first_dim",
             # ReversePackedSegs (csrc/ops/batch.c), Sqr, SqrGradient, Negative (csrc/ops/math.c) read no
             # argument (their names come with _C.op_types())
             # UnsortedSegmentSum / Mean (csrc/ops/segment.c)
             "num_segments",
             # Cast (csrc/ops/cast.c); EQ, NE, LT, LE, GT, GE, Conditional and int32 Div read broadcast and
             # axis, above, or nothing
             "to", "from_type",
             # TopK(+Gradient), Tile(+Gradient) (csrc/ops/topk_tile.c; axis is above); Log, Exp
             # (csrc/ops/math.c)
             # and FlattenToVec (csrc/ops/shape.c) read no argument
             "k", "tiles",
             # Save, Load, CreateDB (csrc/ops/db.c). Not 'db' / 'dbs': random ops must not write files
             # where they run; without them these ops stop at argument checks (fuzz_minidb.py fuzzes
             # Load's file reader)
             "db_type", "absolute_path", "strip_prefix", "add_prefix", "blob_name_overrides", "chunk_size",
             "load_all", "allow_incomplete", "keep_device", "source_blob_names",
             # RmsProp, (Sparse)Adadelta, (Sparse)Wngrad (csrc/ops/optim_adaptive.c) read decay,
             # momentum and epsilon, above
             # csrc/ops/unary.c (Clip reads min / max, above) and csrc/ops/reduce.c (axes, axis above)
             "alpha", "keepdims", "num_reduce_dim", "top_k",
             # Ftrl, SparseFtrl (csrc/ops/optim_rowwise.c; RowWiseSparseAdagrad/Adam read epsilon, beta1,
             # beta2, above)
             "beta", "lambda1", "lambda2",
             # LearningRate's further policies (csrc/ops/optim.c; decay, gamma, power, num_iter are above)
             "active_period", "inactive_period", "active_first", "end_multiplier", "num_iter_1", "num_iter_2",
             "multiplier_1", "multiplier_2", "max_lr", "min_lr", "period", "t_mult", "lr_shrink",
             "start_warmup_multiplier", "constant_warmup_num_iter", "linear_warmup_num_iter", "m1", "n1",
             "m2",
             "n2", "m3", "sub_policy_num_iters", "sub_policy_0_policy", "sub_policy_0_gamma",
             "sub_policy_0_lr_scale", "sub_policy_1_policy", "sub_policy_1_num_iter",
             # And, Or, Xor, AddGradient, SubGradient, MulGradient (csrc/ops/bcast.c) read broadcast and
             # axis, above (and refuse axis_str, here); Not reads nothing
             "axis_str",
             # (Sparse)LengthsWeightedSum (csrc/ops/lengths_reduce.c); the other Lengths* ops read no argument
             "grad_on_weights",
             # PackSegments, UnpackSegments, AddPadding, RemovePadding, GatherPadding (csrc/ops/lengths.c;
             # the Lengths* / SegmentIdsToLengths ops read no argument) and SequenceMask's modes
             # (csrc/ops/batch.c; mode, axis, fill_val, grad are above)
             "max_length", "pad_minf", "return_presence_mask", "padding_width", "end_padding_width",
             "radius", "batch", "repeat_from_axis",
             # Where (csrc/ops/unary2.c; Selu reads alpha and scale, HardSigmoid alpha and beta, above;
             # Sin, Cos, Sign, Reciprocal, RSqrt, Floor, Ceil, Softplus, Swish, Cube, Expand and the
             # gradient ops read no argument)
             "broadcast_on_rows",
             # SigmoidCrossEntropyWithLogits(+Gradient) (csrc/ops/loss2.c; Normalize(L1) read axis, above)
             "log_D_trick", "unjoined_lr_loss",
             # BatchMatMulGradient, BatchGather(Gradient) (csrc/ops/bmm_pow.c), Pow (X, E), PowGradient
             # (dY, X, E, Y) and Gather read trans_a, trans_b, broadcast, axis and exponent, above;
             # BatchMatMul and Pow with broadcast=1 run the new paths
             # DecayAdagrad, GFtrl, (Sparse)Storm, Lars (csrc/ops/optim_more.c; beta1, beta2, epsilon, alpha,
             # beta, lambda1, lambda2, momentum and offset are above); RowWiseSparseAdagrad's weight_decay
             # and counter_halflife (csrc/ops/optim_rowwise.c)
             "weight_decay", "bias_correction_first", "lr_min", "enableRAdam", "counter_halflife",
             # LearningRateAdaption (csrc/ops/optim_more.c); Adam / SparseAdam / RowWiseSparseAdam's optional
             # effective-gradient output needs no argument
             "lr_alpha", "normalized_lr_adaption",
             # DotProductWithPadding(Gradient) (csrc/ops/mask.c; LengthsToWeights reads power, above;
             # BooleanMask(Gradient, Lengths), PadEmptySamples and SparseLengthsPositionalWeightedSum read
             # no argument)
             "pad_value", "replicate",
             # (Sparse)SortedSegment*, SortedSegmentRange*, NanCheck (csrc/ops/sorted_segment.c; the
             # WeightedSum ones read grad_on_weights, above), EnsureDense (csrc/ops/util.c, none)
             "error_msg",
             # LengthsPad, Mod (csrc/ops/ranges.c; LengthsTile, LengthsRangeFill, Range, LengthsGather,
             # GatherRanges and ScatterAssign read no argument)
             "padding_value", "target_length", "divisor", "sign_follow_divisor",
             # CreateBlobsQueue, (Safe)DequeueBlobs (csrc/ops/queue.c; (Safe)EnqueueBlobs and CloseBlobsQueue
             # read no argument)
             "capacity", "num_blobs", "enforce_unique_name", "field_names", "timeout_secs", "num_records",
             # Print (csrc/ops/print.c). Not 'to_file': random ops must not write files where they run
             # (Print would create '<input>.log' in the current directory)
             "limit", "every_n",
             # WeightedSampleDequeueBlobs (csrc/ops/queue.c; seed is above)
             "weights", "table_idx_blob",
             # LRN(Gradient) (csrc/ops/lrn.c; alpha, beta and order are above); the convolution and
             # pooling ops (csrc/ops/convpool.c, conv.c, pool.c; order above)
             "size", "bias", "kernel", "kernels", "kernel_h", "kernel_w", "stride", "strides", "stride_h",
             "stride_w", "pad", "pads", "pad_t", "pad_l", "pad_b", "pad_r", "dilation", "dilations",
             "dilation_h", "dilation_w", "legacy_pad", "global_pooling", "group", "no_bias",
             "count_include_pad",
             # LengthsToOffsets (csrc/ops/lengths.c); ReplaceNaN (unary2.c) reads value and Accumulate (math.c)
             # gamma, above; Log1p, Round, SumInt, NCHW2NHWC, NHWC2NCHW, IsEmpty, HasElements read none, and
             # DepthConcat / DepthSplit read Concat's / Split's (above)
             "include_last_offset",
             # ResizeNearest(Gradient) (csrc/ops/image.c; ChannelShuffle(Gradient) read group and order,
             # above); BooleanUnmask, SegmentIdsToRanges, RowMul, ReduceTailSum, RowWiseArgMax and
             # FindDuplicateElements read none
             "width_scale", "height_scale",
             # SpaceToBatch / BatchToSpace (csrc/ops/pad_image.c; pad, pad_t.. and order are above); Im2Col /
             # Col2Im (conv.c) read the convolution arguments, above; Summarize (print.c): not 'to_file'
             # (it would create '<input>.summary' where the fuzzer runs)
             "block_size",
             # LastNWindowCollector (csrc/ops/collect.c); Perplexity and MultiClassAccuracy (metric.c) read none
             "num_to_collect",
             # AccumulateHistogram (csrc/ops/member_hist.c); IsMemberOf reads value and dtype, above
             "lower_bound", "upper_bound", "num_buckets",
             "no_such_argument"]
INPUTS = ["a", "b", "c", "d", "e", "missing"]
OUTPUTS = ["a", "b", "o1", "o2", "o3", "o4"]


def random_arg(p):
    kind = p.int(0, 6)
    if kind == 0:
        return p.interesting_int()
    if kind == 1:
        return p.interesting_float()
    if kind == 2:
        return p.pick(["", "NCHW", "NHWC", "x", "a" * 300, "fixed", "step", "exp", "inv", "poly", "multistep",
                       "linearWarmup", "constantWarmup", "alter", "hill", "slope", "gate", "cyclical",
                       "cosine", "constantThenLinearWarmup", "pieceWarmup", "composite", "compositeCyclical",
                       "compositeCosine", "sequence", "window",
                       "upper", "lower", "upperdiag", "lowerdiag", "float", "INT32", "bool", "uint8", "int8",
                       "int64", "double", "string", "minidb"])
    if kind == 3:
        return [p.interesting_int() for _ in range(p.int(0, 5))]
    if kind == 4:
        return [p.interesting_float() for _ in range(p.int(1, 4))]
    if kind == 5:
        return [p.pick(["a", "b", "", "o1"]) for _ in range(p.int(1, 3))]
    return p.int(0, 1)


def random_op(p):
    t = p.pick(OP_TYPES)
    ins = [p.name(INPUTS) for _ in range(p.int(0, 7))]  # up to 7: SparseAdam takes 7
    outs = [p.name(OUTPUTS) for _ in range(p.int(0, 4))]
    args = {}
    for _ in range(p.int(0, 4)):
        args[p.pick(ARG_NAMES)] = random_arg(p)
    return core.CreateOperator(t, ins, outs, **args)


def feed_inputs(p):
    for b in INPUTS[:-1]:
        if p.bool(0.9):
            workspace.FeedBlob(b, p.array())


def infer(op):
    """The op's outputs inferred from the workspace as it is, or the exception inferring raised."""
    desc = {n: None if v is None else shape_inference.Tensor(tuple(v[0]), v[1])
            for n, v in workspace._ws().blob_shapes().items()}
    try:
        return shape_inference.infer_op(op, 0, desc)
    except Exception as e:  # checked only if the op runs
        return e


def check_inferred(op, inferred):
    """Called after ``op`` ran: what was inferred before must be what it gave."""
    if isinstance(inferred, Exception):
        raise AssertionError("shape inference of %s raised %s: %s, but the op ran" % (
            op.type, type(inferred).__name__, inferred))
    if len(set(op.output)) != len(op.output):
        return  # an output named twice: which write it keeps is not the inference's business
    actual = workspace._ws().blob_shapes()
    for name, t in zip(op.output, inferred):
        if t is None:
            continue
        got = actual.get(name)
        if got is None or tuple(got[0]) != t.shape or got[1] != t.dtype:
            raise AssertionError("shape inference of %s: output '%s' inferred %s dtype %d, the op gave %s" % (
                op.type, name, list(t.shape), t.dtype, got))


def test_one_input(data):
    p = Provider(data)
    workspace.ResetWorkspace()
    feed_inputs(p)
    ops = [random_op(p) for _ in range(p.int(1, 3))]
    try:
        for op in ops:
            inferred = infer(op)
            workspace.RunOperatorOnce(op)
            check_inferred(op, inferred)
        for b in workspace.Blobs():
            try:
                workspace.FetchBlob(b)
            except (ValueError, TypeError):
                pass  # a blob created but never written
    except API_ERRORS as e:
        expected(e)
    # the same ops as a net, run, then run again on other input shapes
    net = NetDef("fuzz")   # not core.Net: no new unique net name per input
    net.op.extend(ops)
    try:
        workspace.CreateNet(net, overwrite=True)
        workspace.RunNet(net)
        feed_inputs(p)
        workspace.RunNet(net, p.int(1, 2))
    except API_ERRORS as e:
        expected(e)
    check_usable(workspace, core)


if __name__ == "__main__":
    main(test_one_input, sys.argv)
