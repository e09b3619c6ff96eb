"""Allocation failures: every allocation the C core and the binding make while
a net is created and run fails in turn, and each time the run either raises
MemoryError naming what ran out or (where the core has a fallback: fewer
executor workers, an unpacked weight) succeeds; nothing leaks, and the next
run in the same workspace gives the same bits as before.

Needs an extension built with -DRECURRENT_ALLOC_FAIL=ON, which routes the
core's malloc/calloc/realloc/strdup/pthread_create through a countdown
(csrc/testing/alloc_fail.h); tools/asan_pytest.sh builds one (so
tools/sanitize.sh and CI run these sweeps under AddressSanitizer, which also
catches a use-after-free or double free on an error path). Elsewhere the
tests are skipped. A sweep: count the wrapped calls of one cycle (create the
net, run it; the ops net is swept in parts, its init net being one), then for k = 1 .. count + 2
make the k-th call fail (``sticky``: the k-th and every later one), run the
cycle, disarm, run it again and compare.

Leaks are checked by counting the live blocks allocated through the wrappers
(``_C._alloc_live``): after a failed cycle plus a good one the count must be
what it was after good cycles only. The quick runs here use a stride; the
full sweeps (every k) are marked slow.
"""

import os
import re
import tempfile

import numpy as np
import pytest

from recurrent import _C, core, workspace
from recurrent import recurrent as rnn
from test_executor import assert_bitwise, build_stack, rnn_ops

pytestmark = pytest.mark.skipif(
    not hasattr(_C, "_alloc_fail"),
    reason="needs recurrent._C built with -DRECURRENT_ALLOC_FAIL=ON (tools/asan_pytest.sh builds one)")


@pytest.fixture(autouse=True)
def _disarmed():
    old = workspace.rnn_executor_enabled()
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=1"])
    yield
    if hasattr(_C, "_alloc_fail"):
        _C._alloc_fail(0)
    workspace.GlobalInit(["prog", "--caffe2_rnn_executor=%d" % old])


def fetch(names):
    return {b: workspace.FetchBlob(b) for b in names}


def sweep(cycle, compare, sticky, stride=1, offset=0, prepare=None):
    """Runs the sweep described in the module docstring over ``cycle`` (a
    callable creating and running the net); returns {message: count} of the
    MemoryErrors seen and the number of cycles that succeeded anyway.
    ``prepare``, if given, runs before every cycle with the failures disarmed
    and its allocations not counted (it puts back the blobs the cycle reads)."""
    prepare = prepare or (lambda: None)

    def run():
        prepare()
        cycle()

    run()
    ref = fetch(compare)
    run()
    live0 = _C._alloc_live()
    prepare()
    _C._alloc_fail(0)
    cycle()
    n = _C._alloc_fail(0)
    assert n > 0, "no wrapped allocation in a cycle: is the wrapper linked?"
    assert _C._alloc_live() == live0, "a good cycle changed the live allocation count"
    messages, ok = {}, 0
    ks = list(range(1 + offset, n + 1, stride)) + [n + 1, n + 2]
    for k in ks:
        ctx = "k=%d of %d (sticky=%s)" % (k, n, sticky)
        prepare()
        _C._alloc_fail(k, sticky)
        try:
            cycle()
        except MemoryError as e:
            msg = str(e)
            assert "out of memory" in msg or "cannot allocate" in msg, \
                "%s: MemoryError without a message saying so: %r" % (ctx, msg)
            key = re.split(r":? ?(out of memory|cannot allocate)", msg)[0][:120]
            messages[key] = messages.get(key, 0) + 1
        else:
            # a fallback ran (fewer executor workers, OpenBLAS for an unpacked weight): same values,
            # maybe other rounding
            ok += 1
            got = fetch(compare)
            for b in compare:
                np.testing.assert_allclose(got[b], ref[b], rtol=1e-5, atol=1e-6,
                                           err_msg="%s: blob %s" % (ctx, b))
        finally:
            calls = _C._alloc_fail(0)
        assert k > n or calls >= k, "%s: the cycle made only %d calls" % (ctx, calls)
        run()
        assert_bitwise(ref, fetch(compare), ctx)
        assert _C._alloc_live() == live0, "%s: %d blocks leaked" % (ctx, _C._alloc_live() - live0)
    assert ok >= 2, "the cycles past the last allocation (k > %d) must succeed" % n
    assert messages, "no allocation failure was reported"
    return messages, ok


# ---------------------------------------------------------------- recurrent nets
RNN_CASES = {
    # name: (build_stack kwargs, create kwargs, T)
    "lstm-train-executor": (dict(kind="lstm", layers=2), dict(enable=1, threads=2), 3),
    "lstm-train-serial": (dict(kind="lstm", layers=2), dict(enable=0), 3),
    "gru-train-executor": (dict(kind="gru", layers=1), dict(enable=1, threads=3), 2),
    "lstm-forward-only-rotating": (dict(kind="lstm", layers=2, forward_only=True),
                                   dict(enable=1, threads=2, num_workspaces=2), 4),
    # the automatic choice: min_op_us the tiny ops pass, three runs per cycle (two timed serial
    # runs, then the parallelism check on the executor's graph, which keeps it or frees it)
    "lstm-train-auto-keep": (dict(kind="lstm", layers=2), dict(enable=1, threads=2), 9),
    "lstm-train-auto-serial": (dict(kind="lstm", layers=2), dict(enable=1, threads=2), 9),
}
# min_parallelism of the automatic cases: one every parallelism passes, one none does (so that
# the op times' noise cannot change a cycle's allocations)
AUTO_MIN_PARALLELISM = {"lstm-train-auto-keep": 0.5, "lstm-train-auto-serial": 100}


def rnn_cycle(name, grow):
    """create: a cycle creates the net and runs it; grow: the net is created
    once, and a cycle feeds a 1-step sequence, runs, feeds the case's longer
    one and runs again (step workspaces and the executor's graph grow)."""
    build, create, T = RNN_CASES[name]
    case = build_stack(H=4, N=2, D=3, name="af", **build)
    case.feed(T, 3)
    case.create(**create)  # sets the executor arguments on the ops
    runs = 1
    if name in AUTO_MIN_PARALLELISM:
        runs = 3
        for op in rnn_ops(case.net):
            # trial off: with it, 100 would measure both (timing decides, and so the allocations)
            rnn.set_rnn_executor_config(op, min_op_us=0.001, min_parallelism=AUTO_MIN_PARALLELISM[name],
                                        trial=False)
        workspace.CreateNet(case.net, overwrite=True)

    def cycle():
        if grow:
            case.feed(1, 4)
            workspace.RunNet(case.net)
            case.feed(T, 3)
        else:
            workspace.CreateNet(case.net, overwrite=True)
        workspace.RunNet(case.net, runs)

    return cycle, case.compare


@pytest.mark.parametrize("sticky", [False, True])
@pytest.mark.parametrize("grow", [False, True], ids=["create", "grow"])
@pytest.mark.parametrize("name", sorted(RNN_CASES))
def test_rnn_allocation_failures(name, grow, sticky):
    cycle, compare = rnn_cycle(name, grow)
    messages, _ = sweep(cycle, compare, sticky, stride=7, offset=3 if sticky else 0)
    # failures are reported by the op that ran out, inside the step nets too
    text = " | ".join(messages)
    assert "RecurrentNetwork" in text, text


@pytest.mark.slow
@pytest.mark.parametrize("sticky", [False, True])
@pytest.mark.parametrize("grow", [False, True], ids=["create", "grow"])
@pytest.mark.parametrize("name", sorted(RNN_CASES))
def test_rnn_allocation_failures_every_call(name, grow, sticky):
    cycle, compare = rnn_cycle(name, grow)
    sweep(cycle, compare, sticky)


# ---------------------------------------------------------------- the other ops
def _py_scale(inputs, outputs):
    outputs[0].feed(2 * inputs[0].data)


def _py_scale_grad(inputs, outputs):
    outputs[0].feed(2 * inputs[2].data)


def build_ops_net(name="af_ops"):
    """A training step over the non-recurrent ops: an init net of fill ops, a forward net (Gather, FC, Relu,
    Split, Concat, Tanh, Dropout, Sigmoid, Mul, Sub, ElementwiseLinear, Scale, Reshape, Transpose, MatMul,
    Softmax, LabelCrossEntropy, AveragedLoss, SoftmaxWithLoss, SquaredL2Distance, SumElements, Sum, the
    sorted-segment ops with NanCheck / EnsureDense / Assert, the global-norm chain SumSqrElements, Pow,
    Max, Div, LayerNorm with elementwise_affine, BatchMatMul, SequenceMask, Slice with int32 starts/ends,
    ReversePackedSegs, Sqr and Negative, Unique with UnsortedSegmentSum / UnsortedSegmentMean over its
    remapping, the Sparse / Weighted UnsortedSegment ops, the beam-search chain TopK (also padded: k
    larger than the axis), Exp, Log, Tile, FlattenToVec, and Clip, Elu, LeakyRelu, Abs, Sqrt, Softsign,
    StopGradient, Min, Mean and the Reduce* ops, the Lengths* and SparseLengths* segment reductions,
    PackSegments, UnpackSegments, AddPadding with a start padding, RemovePadding, and the unary2.c ops
    Sin, Cos, Reciprocal, RSqrt, Softplus, Selu, Swish, HardSigmoid, Cube, Expand, Where, Sign, Floor,
    Ceil) with its gradients, a checkpoint (Save, Load by name, CreateDB, Load of everything from the
    reader), WeightedSum (also in the loss, with its gradient), Adagrad, MomentumSGDUpdate, MomentumSGD
    and Adam updates (an Iter counter and LearningRate schedules; Adam with its effective-gradient output,
    read by LearningRateAdaption out of place), the sparse-row ops on Gather's (dense) output gradient as
    the rows of ids (SparseToDense, ScatterWeightedSum, SparseAdagrad, SparseMomentumSGDUpdate,
    SparseAdam; SparseAdadelta, SparseWngrad, SparseFtrl, RowWiseSparseAdagrad, RowWiseSparseAdam; the two
    Adams with their effective-gradient outputs), RmsProp, Adadelta and Wngrad (four outputs), Ftrl on a
    dense gradient, DecayAdagrad, GFtrl, Storm and Lars out of place, SparseStorm (in place), a composite
    LearningRate schedule, and a side branch of ops without gradients (Copy, Alias, CopyFromCPUInput,
    EnsureCPUOutput, ExpandDims, Squeeze, Flatten, Add, ResizeLike, SumReduceLike, OneHot, WeightedSample,
    and soft-coverage attention's zeros: ConstantFill(Slice(Shape(h))), ReversePackedSegs and Tile of
    int32 data, GT on int32 and EQ on float32, Cast, Conditional, Div on int32, ArgMax, ArgMin, Accuracy,
    And / Or / Xor / Not, the Bitwise ones, LengthsToSegmentIds, LengthsToRanges, SegmentIdsToLengths,
    GatherPadding, SequenceMask in the upper (with batch) and window modes), and numpy-style broadcasting
    Add, Sub, Mul, Div with their gradient ops, and DivGradient's three-input form; the mask.c ops
    BooleanMask and DotProductWithPadding (padded and replicated) with their gradients, and
    BooleanMaskLengths, LengthsToWeights, PadEmptySamples, RemoveDataBlocks and
    SparseLengthsPositionalWeightedSum on the side; the ranges.c op LengthsTile with its gradient
    (LengthsSum), and LengthsRangeFill, Range (int32 and float32), LengthsGather, GatherRanges,
    LengthsPad, ScatterAssign and Mod on the side; Print (limit=3) on the side; the blob queue ops
    (CreateBlobsQueue, EnqueueBlobs, SafeEnqueueBlobs, DequeueBlobs, SafeDequeueBlobs with num_records=2,
    CloseBlobsQueue, WeightedSampleDequeueBlobs) on the side; CreateMutex (fresh at every run, replacing
    the last one) and AtomicIter on a counter of their own, on the side. Added since: the loss3.c ranking
    losses and BernoulliJSD in the loss with their gradients; the activation ops (Sinh, Cosh, Erf, Gelu,
    ThresholdedRelu, ReluN, NegateGradient, PRelu, SquareRootDivide) in the loss, Glu on the side;
    PrependDim and CopyRowsToTensor in the loss, and MergeDim, LengthsToShape, LengthsSplit, EnsureClipped
    and ClipTensorByScaling on the side; on the side with their gradient ops: LpNorm, BatchMoments,
    LengthsTopK, GroupNorm, InstanceNorm, SpatialBN (training, test mode, multi-batch gradient), LRN, Conv, ConvTranspose, the pooling ops, PadImage, Im2Col / Col2Im,
    SpaceToBatch / BatchToSpace (each other's gradient), Mean broadcasting a row; without gradients on the
    side: Summarize, SinusoidPositionEncoding, int32 Add / Sub / Mul,
    SegmentOneHot, BatchOneHot, BatchBucketOneHot, SparseToDenseMask (+gradient), BatchSparseToDense /
    BatchDenseToSparse, ViterbiPath, SwapBestPath, CTCGreedyDecoder, CTCBeamSearchDecoder, the counter ops
    on a Counter made in the net, RowWiseCounter, SparseNormalize, WeightedMultiSampling,
    UniqueUniformFill, ConstantFill of bool, Percentile, BisectPercentile, BatchBoxCox,
    PiecewiseLinearTransform, a Python op and its PythonGradient, Perplexity, MultiClassAccuracy,
    ScaleBlobs (one pair in place), a seeded SparseLengthsFill and LastNWindowCollector (a buffer emptied at every run, grown twice, with a Mutex), IsMemberOf and
    AccumulateHistogram; in the init net MSRAFill, UniformIntFill (arguments and three inputs) and
    DiagonalFill."""
    init = core.Net(name + "_init")
    init.XavierFill([], "xavier", shape=[10, 6])  # random fills: run, not compared
    init.GaussianFill([], "gauss", shape=[8, 6], std=0.3)
    init.UniformFill([], "unif", shape=[8], min=-0.1, max=0.1)
    init.MSRAFill([], "msra", shape=[4, 3])
    init.GivenTensorIntFill([], "fl_shape", shape=[2], values=[3, 2])
    init.GivenTensorIntFill([], "fl_lo", shape=[1], values=[-4])
    init.GivenTensorIntFill([], "fl_hi", shape=[1], values=[9])
    init.UniformIntFill(["fl_shape", "fl_lo", "fl_hi"], "fl_uint", input_as_shape=1)
    init.UniformIntFill([], "fl_uint2", shape=[5], min=1, max=3)
    init.DiagonalFill([], "fl_diag", shape=[3, 4], value=2.0)
    rng = np.random.RandomState(0)
    init.GivenTensorFill([], "emb", shape=[10, 6], values=rng.uniform(-1, 1, 60).tolist())
    for b in ("emb_s", "emb_a", "emb_m", "emb_d"):
        init.GivenTensorFill([], b, shape=[10, 6], values=rng.uniform(-1, 1, 60).tolist())
    for b in ("emb_a_h", "emb_m_mom", "emb_d1", "emb_d2"):
        init.ConstantFill([], b, shape=[10, 6], value=0.0)
    for b in ("emb_f", "emb_r", "emb_q"):
        init.GivenTensorFill([], b, shape=[10, 6], values=rng.uniform(-1, 1, 60).tolist())
    init.ConstantFill([], "emb_f_nz", shape=[10, 6, 2], value=0.0)
    init.ConstantFill([], "emb_q1", shape=[10, 6], value=0.0)
    for b in ("emb_r_h", "emb_q2"):
        init.ConstantFill([], b, shape=[10], value=0.0)
    init.GivenTensorFill([], "ftrl_w", shape=[8], values=rng.uniform(-1, 1, 8).tolist())
    init.ConstantFill([], "ftrl_nz", shape=[8, 2], value=0.0)
    init.GivenTensorFill([], "fc_w", shape=[8, 6], values=rng.uniform(-0.5, 0.5, 48).tolist())
    init.GivenTensorFill([], "fc_b", shape=[8], values=rng.uniform(-0.1, 0.1, 8).tolist())
    init.ConstantFill([], "lin_w", shape=[8], value=0.5)
    init.GivenTensorFill([], "lin_b", shape=[8], values=[0.1 * i for i in range(8)])
    init.GivenTensorIntFill([], "ids", shape=[4], values=[1, 3, 5, 7])
    # RmsProp, Adadelta, Wngrad and their sparse forms (ops/optim_adaptive.c)
    for b in ("emb_ad", "emb_wn"):
        init.GivenTensorFill([], b, shape=[10, 6], values=rng.uniform(-1, 1, 60).tolist())
    for b in ("emb_ad_h", "emb_ad_d"):
        init.ConstantFill([], b, shape=[10, 6], value=0.0)
    for b in ("ad_w", "wn_w"):
        init.GivenTensorFill([], b, shape=[8], values=rng.uniform(-1, 1, 8).tolist())
    for b in ("rms_ms", "rms_mom", "ad_h", "ad_d"):
        init.ConstantFill([], b, shape=[8], value=0.0)
    for b in ("wn_b", "emb_wn_b"):
        init.ConstantFill([], b, shape=[1], value=1.0)
    # DecayAdagrad, GFtrl, Storm, SparseStorm, Lars (ops/optim_more.c)
    init.GivenTensorFill([], "more_w", shape=[8], values=rng.uniform(-1, 1, 8).tolist())
    for b in ("more_m1", "more_m2", "more_mom"):
        init.ConstantFill([], b, shape=[8], value=0.0)
    init.ConstantFill([], "more_gftrl_nz", shape=[8, 2], value=0.0)
    init.GivenTensorFill([], "emb_st", shape=[10, 6], values=rng.uniform(-1, 1, 60).tolist())
    init.ConstantFill([], "emb_st_m", shape=[10, 6], value=0.0)
    for b, v in (("more_gsq", 0.01), ("emb_st_s", 0.01), ("lars_wd", 0.0), ("lars_trust", 1.0),
                 ("lars_max", 10.0)):
        init.ConstantFill([], b, shape=[1], value=v)
    init.GivenTensorIntFill([], "ten", shape=[1], values=[10])
    init.GivenTensorIntFill([], "labels", shape=[4], values=[0, 2, 4, 7])
    init.ConstantFill([], "lr", shape=[1], value=-0.1)
    init.ConstantFill([], "one", shape=[1], value=1.0)
    init.ConstantFill([], "half", shape=[], value=0.5)
    init.ConstantFill([], "mom", shape=[8], value=0.0)
    init.ConstantFill([], "mom_b", shape=[8], value=0.0)
    init.ConstantFill([], "mom_b2", shape=[8], value=0.0)
    init.ConstantFill([], "wsum_w", shape=[1], value=0.5)
    init.GivenTensorFill([], "pr_v", shape=[6, 2], values=rng.uniform(-1, 1, 12).tolist())
    init.GivenTensorIntFill([], "pr_len", shape=[3], values=[2, 3, 1])
    init.GivenTensorIntFill([], "sbl_len", shape=[4], values=[1, 2, 3, 0])
    init.GivenTensorIntFill([], "nt_rep", shape=[2], values=[2, 1])
    # the decoding ops (csrc/ops/decode.c): their own RandomState, so the blobs above keep their values
    dr = np.random.RandomState(35)
    init.GivenTensorFill([], "vp_pred", shape=[5, 3], values=dr.uniform(-1, 1, 15).tolist())
    init.GivenTensorFill([], "vp_tr", shape=[3, 3], values=dr.uniform(-1, 1, 9).tolist())
    init.GivenTensorFill([], "ctc_x", shape=[6, 2, 4], values=dr.uniform(0, 1, 48).tolist())
    init.GivenTensorIntFill([], "ctc_len", shape=[2], values=[6, 3])
    init.GivenTensorFill([], "gd_data", shape=[4], values=[0.5, -1.0, 2.0, 0.25])
    init.GivenTensorIntFill([], "gd_ranges", shape=[2, 1, 2], values=[0, 2, 2, 2])
    for b, shape in (("fct_x", [3, 4]), ("fct_w", [4, 5]), ("fct_b", [5]), ("ssm_x", [2, 3, 2, 2])):
        init.GivenTensorFill([], b, shape=shape, values=rng.uniform(-1, 1, int(np.prod(shape))).tolist())
    init.GivenTensorIntFill([], "ssm_t", shape=[2, 2, 2], values=[0, 2, -1, 1, 1, 1, 0, -1])
    init.GivenTensorFill([], "ssm_w", shape=[2, 2, 2], values=[1.0, 0.5, 1.0, 2.0, 1.0, 1.0, 0.0, 1.0])
    init.ConstantFill([], "m1_w", shape=[8], value=0.0)
    init.ConstantFill([], "m2_w", shape=[8], value=0.0)
    init.GivenTensorIntFill([], "iter", shape=[1], values=[0])
    init.GivenTensorIntFill([], "mx_it", shape=[1], values=[7])
    init.GivenTensorIntFill([], "mx_inc", shape=[1], values=[3])
    init.GivenTensorFill([], "ln_g", shape=[8], values=[0.5 + 0.1 * i for i in range(8)])
    init.ConstantFill([], "ln_b", shape=[8], value=0.1)
    init.GivenTensorIntFill([], "bmm_len", shape=[4], values=[1, 2, 0, 5])
    init.GivenTensorIntFill([], "ga_idx", shape=[3], values=[3, 0, 3])
    init.GivenTensorIntFill([], "bg_idx", shape=[3], values=[1, 0, 1])
    # ReduceFront/Back with lengths (u_m is (4, 8)), Gather with wrap_indices and match_outer (pw (2, 2, 4))
    init.GivenTensorIntFill([], "rl_front", shape=[8], values=[4, 1, 1, 2, 3, 4, 2, 1])
    init.GivenTensorIntFill([], "rl_back", shape=[4], values=[8, 1, 3, 5])
    init.GivenTensorIntFill([], "gw_idx", shape=[2, 2, 2], values=[-1, 0, 3, -4, 1, 1, -2, 2])
    init.GivenTensorIntFill([], "sl_starts", shape=[2], values=[1, 2])
    init.GivenTensorIntFill([], "sl_ends", shape=[2], values=[-1, 6])
    # counter.c, RowWiseCounter / SparseNormalize (optim_rowwise.c), WeightedMultiSampling (embed.c),
    # UniqueUniformFill (fill.c): their own values, so the blobs above keep theirs
    init.GivenTensorIntFill([], "rwc_prev", shape=[8], values=[0, 3, 5, 0, 9, 2, 1, 4])
    init.GivenTensorFill([], "rwc_cnt", shape=[8], values=[0.5 * i for i in range(8)])
    init.GivenTensorIntFill([], "rwc_t", shape=[1], values=[6])
    init.GivenTensorFill([], "sn_w", shape=[10, 3], values=[0.1 * ((7 * i) % 13 - 6) for i in range(30)])
    init.GivenTensorFill([], "wms_cdf", shape=[4], values=[0.0, 1.0, 1.0, 3.0])
    init.GivenTensorIntFill([], "uuf_avoid", shape=[3], values=[2, 5, 7])
    init.GivenTensorIntFill([], "rev_len", shape=[2], values=[4, 1])
    init.GivenTensorIntFill([], "rev_ids", shape=[3, 2], values=[1, 2, 3, 4, 5, 6])
    init.GivenTensorIntFill([], "rev_len2", shape=[2], values=[3, 0])
    init.GivenTensorIntFill([], "pk_len", shape=[3], values=[3, 0, 1])
    init.GivenTensorFill([], "pad_s", shape=[8], values=rng.uniform(-1, 1, 8).tolist())
    init.GivenTensorIntFill([], "dd_idx", shape=[2, 3], values=[3, 1, 3, 0, 1, 3])
    init.GivenTensorIntFill([], "lr_len", shape=[3], values=[1, 0, 3])
    init.GivenTensorIntFill([], "mk_mask", shape=[4], values=[1, 0, 1, 1])
    init.GivenTensorIntFill([], "rg_len", shape=[4], values=[2, 0, 1, 3])
    init.GivenTensorIntFill([], "rg_i", shape=[3], values=[9, 2, -2])  # Range's start, stop, step
    init.GivenTensorFill([], "rg_f", shape=[2], values=[0.5, 3.0])
    init.GivenTensorIntFill([], "rg_idx", shape=[3], values=[2, 0, 2])
    init.GivenTensorIntFill([], "rg_ranges", shape=[2, 1, 2], values=[1, 2, 0, 3])
    init.GivenTensorIntFill([], "rg_sidx", shape=[2], values=[3, 1])
    init.GivenTensorFill([], "lr_w", shape=[4], values=[0.5, -1.0, 2.0, 0.25])
    init.GivenTensorIntFill([], "ss_ids", shape=[4], values=[0, 0, 2, 2])
    init.GivenTensorFill([], "dg_b", shape=[3], values=[0.5, -2.0, 4.0])
    for b in ("dg_c", "dg_dc"):
        init.GivenTensorFill([], b, shape=[2, 3], values=rng.uniform(-1, 1, 6).tolist())
    init.GivenTensorFill([], "us_tab", shape=[6, 3], values=rng.uniform(-1, 1, 18).tolist())
    init.GivenTensorIntFill([], "us_ids", shape=[4], values=[0, 5, 5, 1])
    init.GivenTensorIntFill([], "us_sids", shape=[4], values=[2, 0, 2, 1])
    init.GivenTensorIntFill([], "ss_rids", shape=[4], values=[0, 1, 1, 1])  # no gap: LogSumExp(empty) = -inf
    init.GivenTensorFill([], "emb_l", shape=[10, 6], values=rng.uniform(-1, 1, 60).tolist())
    init.GivenTensorFill([], "wts", shape=[4, 3],
                         values=[0.1, 0.2, 0.7, 0.5, 0.5, 0.0, 1.0, 0.0, 0.0, 0.3, 0.3, 0.4])
    net = core.Net(name)
    e = net.Gather(["emb", "ids"], "e")
    h = net.FC([e, "fc_w", "fc_b"], "h")
    r = net.Relu(h, "r")
    a, b = net.Split(r, ["a", "b"], axis=1)
    c = net.Concat([b, a], ["c", "c_dims"], axis=1)[0]
    t = net.Tanh(c, "t")
    s = net.Sigmoid(h, "s")
    td = net.Dropout(t, ["td", "td_mask"], ratio=0.3, seed=3)[0]  # seeded: the same masks every cycle
    d = net.Sub([net.Mul([td, s], "m"), h], "d")
    lin = net.ElementwiseLinear([d, "lin_w", "lin_b"], "l")
    sc = net.Scale(lin, "sc", scale=0.5)
    rs = net.Reshape(sc, ["rs", "rs_old"], shape=[8, 4])[0]
    mm = net.MatMul([net.Transpose(rs, "tr"), rs], "mm")
    p = net.Softmax(lin, "p")
    loss1 = net.AveragedLoss(net.LabelCrossEntropy([p, "labels"], "xent"), "loss1")
    _, loss2 = net.SoftmaxWithLoss([sc, "labels"], ["p2", "loss2"])
    loss3 = net.AveragedLoss(net.SquaredL2Distance([t, s], "dist"), "loss3")
    # the global-norm clipping ops, with gradients: ratio = max(norm(r), 0.5) / 0.5 scales sc
    norm = net.Pow(net.SumSqrElements(r, "sq"), "norm", exponent=0.5)
    ratio = net.Div([net.Max([norm, "half"], "nmax"), "half"], "ratio")
    loss5 = net.SumElements(net.Mul([sc, ratio], "scr", broadcast=1), "loss5")
    # LayerNorm over h's rows with gamma and beta, with its gradient (dX, dgamma, dbeta)
    ln = net.LayerNorm([h, "ln_g", "ln_b"], ["ln", "ln_mean", "ln_std"], epsilon=1e-3,
                       elementwise_affine=1)[0]
    loss6 = net.SumElements(net.Mul([ln, t], "lnt"), "loss6")
    # attention-style scores: BatchMatMul of two (2, 2, 8) views with trans_b, masked by SequenceMask
    # (lengths 1, 2, 0, 5 over rows of 2), with their gradients (two BatchMatMul, a SequenceMask with grad=1)
    q3 = net.Reshape(sc, ["q3", "q3_old"], shape=[2, 2, 8])[0]
    k3 = net.Reshape(t, ["k3", "k3_old"], shape=[2, 2, 8])[0]
    bmm = net.BatchMatMul([q3, k3], "bmm", trans_b=1)
    masked = net.SequenceMask([bmm, "bmm_len"], "bmm_mask", axis=2, fill_val=-2.0)
    loss7 = net.SumElements(net.Mul([masked, masked], "bmm_sq"), "loss7")
    # ops/bmm_pow.c: BatchMatMul with broadcast=1 ((2, 2, 8) by (1, 8, 4)), Pow with a (1, 1, 4) exponent
    # tensor, Gather at axis 2 and BatchGather, with their gradients (BatchMatMulGradient, PowGradient
    # (dY, X, E, Y), BatchGatherGradient)
    bcb = net.BatchMatMul([q3, net.Reshape(t, ["kb3", "kb3_old"], shape=[1, 8, 4])[0]], "bcb", broadcast=1)
    pw_e = net.Slice(net.Tanh(bcb, "bcb_t"), "pw_e", starts=[0, 0, 0], ends=[1, 1, -1])
    pw = net.Pow([net.Exp(bcb, "bcb_exp"), pw_e], "pw")
    ga = net.BatchGather([net.Gather([pw, "ga_idx"], "ga0", axis=2), "bg_idx"], "ga")
    loss_bmm = net.SumElements(net.Mul([ga, ga], "ga_sq"), "loss_bmm")
    # a (3, 4) box of h by int32 starts/ends, with its gradient (SliceGradient)
    sl = net.Slice([h, "sl_starts", "sl_ends"], "h_sl")
    loss8 = net.SumElements(net.Mul([sl, sl], "sl_sq"), "loss8")
    # seq2seq ops: sc as (4, 2, 4) steps reversed per entry (lengths 4, 1), then Sqr and Negative, with
    # their gradients (ReversePackedSegs, SqrGradient, Negative)
    rev = net.ReversePackedSegs([net.Reshape(sc, ["rv3", "rv3_old"], shape=[4, 2, 4])[0], "rev_len"], "rev")
    loss9 = net.SumElements(net.Mul([net.Sqr(rev, "rev_sq"), net.Negative(rev, "rev_neg")], "rev_m"), "loss9")
    # Caffe2's sparse-gradient deduplication: Unique of (2, 3) indices, then the (2, 3, 4) rows of e
    # summed and averaged per unique index, with their gradients (Gather, UnsortedSegmentMeanGradient)
    dd_r = net.Unique("dd_idx", ["dd_u", "dd_r"])[1]
    e3 = net.Reshape(e, ["e3", "e3_old"], shape=[2, 3, 4])[0]
    dd_sum = net.UnsortedSegmentSum([e3, dd_r], "dd_sum")
    dd_mean = net.UnsortedSegmentMean([e3, dd_r], "dd_mean", num_segments=4)
    loss10 = net.SumElements(net.Mul([dd_sum, net.Slice(dd_mean, "dd_mean3", starts=[0, 0], ends=[3, -1])],
                                     "dd_prod"), "loss10")
    # the rest of the unsorted segment family (ops/segment.c): the sparse forms over rows of us_tab, the
    # weighted ones with grad_on_weights, with their gradients (UnsortedSegment{Sum,Mean}Gradient,
    # UnsortedSegmentWeightedSumWithMainInputGradient)
    us_out = [net.SparseUnsortedSegmentSum(["us_tab", "us_ids", "us_sids"], "us_ss"),
              net.SparseUnsortedSegmentMean(["us_tab", "us_ids", "us_sids"], "us_sm"),
              net.SparseUnsortedSegmentWeightedSum(["us_tab", "lr_w", "us_ids", "us_sids"], "us_sw",
                                                   grad_on_weights=1),
              net.UnsortedSegmentWeightedSum([e, "lr_w", "us_sids"], "us_w", grad_on_weights=1)]
    loss_us = net.Sum([net.SumElements(net.Mul([o_, o_], "us_sq%d" % i), "us_l%d" % i)
                       for i, o_ in enumerate(us_out)], "loss_us")
    # beam-search ops: the top 3 of sc's rows (with flat indices), Exp then Log, tiled twice along the rows,
    # flattened, with their gradients (TopKGradient, Div, Mul, TileGradient, ResizeLike)
    tk_v = net.TopK(sc, ["tk_v", "tk_i", "tk_f"], k=3)[0]
    # TopK with k larger than the axis (sc's first 2 columns, k=3): padded with 0 / -1, with its gradient
    # PackRNNSequence / UnpackRNNSequence (each the other's gradient), FCTransposed, SplitByLengths and
    # SpatialSoftmaxWithLoss, with their gradients
    pr_u = net.UnpackRNNSequence([net.PackRNNSequence(["pr_v", "pr_len"], "pr_p"), "pr_len"], "pr_u")
    fct = net.FCTransposed(["fct_x", "fct_w", "fct_b"], "fct_y")
    sbl = net.SplitByLengths(["pr_v", "sbl_len"], ["sbl_a", "sbl_b"], axis=0)
    ssm_loss = net.SpatialSoftmaxWithLoss(["ssm_x", "ssm_t", "ssm_w"], ["ssm_p", "ssm_loss"])[1]
    loss_c2c = net.Sum([net.SumElements(net.Mul([o_, o_], "c2c_sq%d" % i), "c2c_l%d" % i)
                        for i, o_ in enumerate([pr_u, fct] + list(sbl))] + [ssm_loss], "loss_c2c")
    # Tan, Asin, Acos, Atan with their gradient ops (t is in (-1, 1))
    trig = [net.Tan(sc, "tr_tan"), net.Asin(t, "tr_asin"), net.Acos(t, "tr_acos"), net.Atan(sc, "tr_atan")]
    loss_trig = net.SumElements(net.Sum(trig, "tr_sum"), "loss_trig")
    # WeightedSum in the loss, with its gradient (WeightedSumGradient, with and without grad_on_w)
    wsum_a = net.WeightedSum([t, "one", s, "wsum_w"], "wsum_a", grad_on_w=1)
    wsum_b = net.WeightedSum([sc, "wsum_w", t, "one"], "wsum_b")
    loss_ws = net.SumElements(net.Mul([wsum_a, wsum_b], "wsum_ab"), "loss_ws")
    tk_src = net.Slice(sc, "tk_src", starts=[0, 0], ends=[-1, 2])
    tk_pv = net.TopK(tk_src, ["tk_pv", "tk_pi", "tk_pf"], k=3)[0]
    loss_tkp = net.SumElements(net.Mul([tk_pv, tk_pv], "tk_psq"), "loss_tkp")
    tk_t = net.Tile(net.Log(net.Exp(tk_v, "tk_exp"), "tk_log"), "tk_t", tiles=2, axis=1)
    tk_fv = net.FlattenToVec(tk_t, "tk_fv")
    loss11 = net.SumElements(net.Mul([tk_fv, tk_fv], "tk_sq"), "loss11")
    # unary.c / reduce.c ops with their gradients: Clip, Elu, LeakyRelu, Abs, Sqrt (Scale, Div), Softsign,
    # StopGradient, Min, Mean and every Reduce* op
    u_sq = net.Sqrt(net.Abs(sc, "u_abs"), "u_sqrt")
    u_e = net.LeakyRelu(net.Elu(net.Clip(sc, "u_clip", min=-0.4, max=0.4), "u_elu", alpha=0.5), "u_lr",
                        alpha=0.1)
    u_m = net.Mean([net.Min([u_sq, u_e, net.Softsign(t, "u_ss")], "u_min"), net.StopGradient(h, "u_stop")],
                   "u_m")
    u_red = [net.ReduceMax(u_m, "u_rmax", axes=[1]), net.ReduceMean(u_m, "u_rmean", axes=[0], keepdims=0),
             net.ReduceMin(u_m, "u_rmin"), net.ReduceSum(u_m, "u_rsum", axes=[-1], keepdims=0),
             net.ReduceFrontSum(u_m, "u_rfs"), net.ReduceFrontMean(u_m, "u_rfm"),
             net.ReduceBackSum(u_m, "u_rbs"), net.ReduceBackMean(u_m, "u_rbm")]
    u_red += [net.ReduceFrontSum([u_m, "rl_front"], "u_rfsl"),
              net.ReduceFrontMean([u_m, "rl_front"], "u_rfml"),
              net.ReduceBackSum([u_m, "rl_back"], "u_rbsl"), net.ReduceBackMean([u_m, "rl_back"], "u_rbml"),
              net.ReduceFrontMax([u_m, "rl_front"], "u_rfxl"), net.ReduceBackMax([u_m, "rl_back"], "u_rbxl"),
              net.Gather([pw, "gw_idx"], "u_gw", axis=2, wrap_indices=1, match_outer=1)]
    loss12 = net.Sum([net.SumElements(r_, "u_l%d" % i) for i, r_ in enumerate(u_red)], "loss12")
    # numpy-style broadcasting, with its gradient ops (AddGradient, SubGradient, MulGradient, DivGradient
    # (dC, A, B, C)): a (4, 1) column of lin against the (8,) lin_b and ln_g and the 0-d half
    bc_col = net.Slice(lin, "bc_col", starts=[0, 0], ends=[-1, 1])
    bc_m = net.Mul([net.Sub([net.Add([bc_col, "lin_b"], "bc_a"), "half"], "bc_s"), bc_col], "bc_m")
    loss13 = net.SumElements(net.Div([bc_m, "ln_g"], "bc_d"), "loss13")
    # lengths reductions (ops/lengths_reduce.c) over e's and h's rows and over a table read by ids, with
    # their gradients (the sparse ones densified and summed: SparseToDense, Sum)
    lr_out = [net.LengthsSum([e, "lr_len"], "lr_sum"), net.LengthsMean([e, "lr_len"], "lr_mean"),
              net.LengthsWeightedSum([e, "lr_w", "lr_len"], "lr_wsum", grad_on_weights=1),
              net.LengthsMax([h, "lr_len"], "lr_max"),
              net.SparseLengthsSum(["emb_l", "ids", "lr_len"], "lr_ssum"),
              net.SparseLengthsMean(["emb_l", "ids", "lr_len"], "lr_smean"),
              net.SparseLengthsWeightedSum(["emb_l", "lr_w", "ids", "lr_len"], "lr_swsum",
                                           grad_on_weights=1)]
    loss14 = net.Sum([net.SumElements(net.Mul([o_, o_], "lr_sq%d" % i), "lr_l%d" % i)
                      for i, o_ in enumerate(lr_out)], "loss14")
    # sorted-segment ops (csrc/ops/sorted_segment.c) over e's rows (through NanCheck) and over a table read by
    # ids (through EnsureDense: its sparse gradient made dense), with their gradients; Assert on the side
    ss_e = net.NanCheck([e, "lr_w"], "ss_e")
    ss_emb = net.EnsureDense("emb_l", "ss_emb")
    ss_out = [net.SortedSegmentSum([ss_e, "ss_ids"], "ss_sum"),
              net.SortedSegmentMean([ss_e, "ss_ids"], "ss_mean"),
              net.SortedSegmentWeightedSum([ss_e, "lr_w", "ss_ids"], "ss_wsum", grad_on_weights=1),
              net.SortedSegmentRangeSum([ss_e, "ss_ids"], "ss_rsum"),
              net.SortedSegmentRangeMean([ss_e, "ss_ids"], "ss_rmean"),
              net.SortedSegmentRangeLogSumExp([ss_e, "ss_rids"], "ss_rlse"),
              net.SortedSegmentRangeLogMeanExp([ss_e, "ss_rids"], "ss_rlme"),
              net.SortedSegmentRangeMax([ss_e, "ss_ids"], "ss_rmax"),
              net.SparseSortedSegmentMean([ss_emb, "ids", "ss_ids"], "ss_smean"),
              net.SparseSortedSegmentWeightedSum([ss_emb, "lr_w", "ids", "ss_ids"], "ss_swsum",
                                                 grad_on_weights=1)]
    loss_ss = net.Sum([net.SumElements(net.Mul([o_, o_], "ss_sq%d" % i), "ss_l%d" % i)
                       for i, o_ in enumerate(ss_out)], "loss_ss")
    net.Assert("lr_w", [], error_msg="lr_w holds a 0")
    # lengths ops (csrc/ops/lengths.c): sc's 4 rows packed by lengths 3, 0, 1 (with the presence mask),
    # unpacked, padded around each segment and unpadded, with their gradients (UnpackSegments,
    # PackSegments, RemovePadding, GatherPadding, AddPadding)
    pk = net.PackSegments(["pk_len", sc], ["pk", "pk_mask"], return_presence_mask=1, max_length=4)[0]
    upk = net.UnpackSegments(["pk_len", pk], "upk")
    pad, pad_len = net.AddPadding([upk, "pk_len", "pad_s"], ["pad", "pad_len"], padding_width=1)
    unpad = net.RemovePadding([pad, pad_len], ["unpad", "unpad_len"], padding_width=1)[0]
    loss_pk = net.Sum([net.SumElements(net.Mul([pad, pad], "pad_sq"), "pad_l"),
                       net.SumElements(net.Mul([unpad, unpad], "unpad_sq"), "unpad_l")], "loss_pk")
    # unary2.c ops with their gradient ops: Sin, Cos, Reciprocal, RSqrt, Softplus, Selu, Swish, HardSigmoid,
    # Cube, Expand (a (4, 1) column of sc to sc's shape), and Sign, Floor, Ceil, Where (no gradient: kept
    # out of the loss)
    v_r = net.RSqrt(net.Reciprocal(net.Softplus(sc, "v_sp"), "v_rec"), "v_rs")
    v_a = net.Swish(net.Selu(net.Sin(sc, "v_sin"), "v_selu"), "v_sw")
    v_b = net.Cube(net.HardSigmoid(net.Cos(sc, "v_cos"), "v_hs"), "v_cube")
    v_e = net.Expand([net.Slice(sc, "v_col", starts=[0, 0], ends=[-1, 1]), net.Shape(sc, "v_shape")],
                     "v_exp")
    loss_v = net.SumElements(net.Sum([v_r, v_a, v_b, v_e], "v_sum"), "loss_v")
    net.Where([net.GT([sc, "half"], "v_gt"), net.Sign(sc, "v_sign"),
               net.Floor(net.Ceil(sc, "v_ceil"), "v_fl")], "v_where")
    # the activation ops (unary.c, unary2.c, activation.c) with their gradients; Glu has none
    init.GivenTensorFill([], "act_w", shape=[8], values=[0.5, -0.25, 1.5, 0.1, -1.0, 2.0, 0.3, 0.75])
    init.GivenTensorIntFill([], "act_scale", shape=[4], values=[4, 0, 9, 2])
    act_a = net.Sinh(net.Erf(sc, "act_erf"), "act_sinh")
    act_b = net.Cosh(net.Gelu(sc, "act_gelu"), "act_cosh")
    act_c = net.ThresholdedRelu(net.Gelu(sc, "act_gfast", fast_gelu=1), "act_thr", alpha=0.1)
    act_d = net.ReluN(net.NegateGradient(sc, "act_neg"), "act_rn", n=0.3)
    act_e = net.SquareRootDivide([net.PRelu([sc, "act_w"], "act_pr"), "act_scale"], "act_srd")
    loss_act = net.SumElements(net.Sum([act_a, act_b, act_c, act_d, act_e], "act_sum"), "loss_act")
    net.Glu(sc, "act_glu")
    # the shape2 ops: PrependDim and CopyRowsToTensor (its gradient, CopyRowsToTensorGradient, gives the row
    # one too) in the loss; MergeDim (no gradient), LengthsToShape, LengthsSplit (argument and input),
    # EnsureClipped (dense, and sparse rows in place) and ClipTensorByScaling on the side
    init.GivenTensorIntFill([], "s2_idx", shape=[3], values=[2, 0, 2])
    init.GivenTensorIntFill([], "s2_lens", shape=[3], values=[9, 4, 5])
    init.GivenTensorIntFill([], "s2_eq", shape=[3], values=[4, 4, 4])
    init.GivenTensorIntFill([], "s2_n", shape=[1], values=[2])
    init.GivenTensorFill([], "s2_row", shape=[8], values=[0.5, -0.25, 1.5, 0.1, -1.0, 2.0, 0.3, 0.75])
    init.GivenTensorFill([], "s2_val", shape=[], values=[3.0])
    init.GivenTensorFill([], "s2_add", shape=[1], values=[0.5])
    s2_cp = net.Scale(sc, "s2_cp", scale=1.0)
    net.CopyRowsToTensor([s2_cp, "s2_idx", "s2_row"], [s2_cp])
    s2_pd = net.PrependDim(sc, "s2_pd", dim_size=2)
    loss_s2 = net.Sum([net.SumElements(s2_pd, "s2_pds"), net.SumElements(s2_cp, "s2_cps")], "loss_s2")
    net.MergeDim(s2_pd, "s2_md")
    net.LengthsToShape("s2_eq", "s2_shape")
    net.LengthsSplit("s2_lens", "s2_split", n_split=3)
    net.LengthsSplit(["s2_lens", "s2_n"], "s2_split2")
    net.EnsureClipped(sc, "s2_ec", min=-0.1, max=0.2)
    s2_ecs = net.Scale(sc, "s2_ecs", scale=1.0)
    net.EnsureClipped([s2_ecs, "s2_idx", net.Gather([sc, "s2_idx"], "s2_ecg")], [s2_ecs], min=0.0)
    net.ClipTensorByScaling([sc, "s2_val", "s2_add"], "s2_cts", threshold=1.0)
    # ops/calib.c on the side (no gradients): Percentile, BisectPercentile, BatchBoxCox,
    # PiecewiseLinearTransform (from the arguments, and binary from inputs on [N, 2]); Mean broadcasting a
    # row, with MeanGradient taking the inputs
    init.GivenTensorFill([], "cb_x", shape=[3, 2], values=[0.5, 1.5, 2.0, -1.0, 3.5, 0.25])
    init.GivenTensorFill([], "cb_vp", shape=[4, 2], values=[0.0, 0.1, 1.0, 0.5, 3.0, 0.9, 0.0, 0.3])
    init.GivenTensorIntFill([], "cb_len", shape=[2], values=[3, 1])
    init.GivenTensorFill([], "cb_l1", shape=[2], values=[0.0, 0.5])
    init.GivenTensorFill([], "cb_l2", shape=[2], values=[1.5, 2.0])
    init.GivenTensorFill([], "cb_b", shape=[3], values=[0.0, 1.0, 2.0])
    init.GivenTensorFill([], "cb_s", shape=[2], values=[0.5, 2.0])
    init.GivenTensorFill([], "cb_c", shape=[2], values=[0.0, -0.5])
    init.GivenTensorFill([], "cb_row", shape=[2], values=[1.0, -2.0])
    net.Percentile(["cb_x", "cb_vp", "cb_len"], "cb_pct")
    net.BisectPercentile("cb_x", "cb_bp", percentile_raw=[0.0, 1.0, 3.0, 0.0],
                         percentile_mapping=[0.1, 0.5, 0.9, 0.3], percentile_lower=[0.05, 0.4, 0.8, 0.2],
                         percentile_upper=[0.15, 0.6, 1.0, 0.4], lengths=[3, 1])
    net.BatchBoxCox(["cb_x", "cb_l1", "cb_l2"], "cb_bc")
    net.PiecewiseLinearTransform("cb_x", "cb_pa", bounds=[0.0, 1.0, 2.0, 0.0, 1.0, 2.0],
                                 slopes=[0.5, 2.0, 1.0, 1.0], intercepts=[0.0, -0.5, 0.0, 0.0])
    net.PiecewiseLinearTransform(["cb_x", "cb_b", "cb_s", "cb_c"], "cb_pi", binary=1)
    net.MeanGradient([net.Mean(["cb_x", "cb_row"], "cb_mean"), "cb_x", "cb_row"], ["cb_dx", "cb_drow"])
    loss = net.Sum([loss1, loss2, loss3, net.SumElements(mm, "loss4"), loss5, loss6, loss7, loss8, loss9,
                    loss10, loss11, loss12, loss13, loss14, loss_pk, loss_v, loss_bmm, loss_ss, loss_us,
                    loss_tkp, loss_ws, loss_c2c, loss_trig, loss_act, loss_s2],
                   "loss")
    # loss2.c ops with their gradients: SigmoidCrossEntropyWithLogits (log_D_trick) and the weighted
    # form on sc, MakeTwoClass + CrossEntropy on s, L1Distance, DotProduct, CosineSimilarity of t and s,
    # Normalize of lin along axis 0, and NormalizeL1 (no gradient) on the side
    l2_t = net.Sigmoid(t, "l2_t")
    l2_sx = net.SigmoidCrossEntropyWithLogits([sc, l2_t], "l2_sx", log_D_trick=1)
    l2_wsx = net.WeightedSigmoidCrossEntropyWithLogits([sc, l2_t, s], "l2_wsx")
    l2_two = net.MakeTwoClass(s, "l2_two")
    l2_ce = net.CrossEntropy([l2_two, net.MakeTwoClass(net.Sigmoid(sc, "l2_q"), "l2_lab")], "l2_ce")
    l2_pair = [net.L1Distance([t, s], "l2_l1"), net.DotProduct([t, s], "l2_dot"),
               net.CosineSimilarity([t, s], "l2_cos")]
    l2_nrm = net.SumElements(net.Mul([net.Normalize(lin, "l2_nrm", axis=0), d], "l2_nd"), "l2_nrm_l")
    net.NormalizeL1(lin, "l2_nl1")
    loss = net.Sum([loss, l2_nrm] + [net.SumElements(v, v + "_l")
                                     for v in [l2_sx, l2_wsx, l2_ce] + l2_pair], "loss_l2")
    # mask.c ops with their gradients (BooleanMaskGradient, DotProductWithPaddingGradient): rows 0, 2, 3
    # of sc, and sc / t against the (4, 1) column bc_col, padded with 0.5 and replicated
    mk_sel = net.BooleanMask([sc, "mk_mask"], ["mk_sel", "mk_idx"])[0]
    mk_dots = [net.DotProductWithPadding([sc, bc_col], "mk_dpad", pad_value=0.5),
               net.DotProductWithPadding([t, bc_col], "mk_drep", replicate=1)]
    loss = net.Sum([loss, net.SumElements(net.Mul([mk_sel, mk_sel], "mk_sq"), "mk_l")] +
                   [net.SumElements(v, v + "_l") for v in mk_dots], "loss_mk")
    # ranges.c: LengthsTile of sc's rows (2, 0, 1, 3 times) with its gradient (LengthsSum)
    rg_tile = net.LengthsTile([sc, "rg_len"], "rg_tile")
    loss = net.Sum([loss, net.SumElements(net.Mul([rg_tile, rg_tile], "rg_sq"), "rg_l")], "loss_rg")
    # loss3.c ops with their gradients: MarginRankingCriterion of t against s and CosineEmbeddingCriterion
    # of t with +-1 labels, PairWiseLoss of sc's first column in sessions of 1 and 3 rows, BernoulliJSD of
    # s against l2_t
    init.GivenTensorIntFill([], "l3_y", shape=[4, 8], values=[1 if i % 3 else -1 for i in range(32)])
    init.GivenTensorFill([], "l3_rel", shape=[4], values=[0.0, 2.0, 1.0, 2.0])
    init.GivenTensorIntFill([], "l3_len", shape=[2], values=[1, 3])
    l3 = [net.MarginRankingCriterion([t, s, "l3_y"], "l3_mrc", margin=0.1),
          net.CosineEmbeddingCriterion([t, "l3_y"], "l3_cec", margin=-0.2),
          net.PairWiseLoss([net.Slice(sc, "l3_col", starts=[0, 0], ends=[-1, 1]), "l3_rel", "l3_len"],
                           "l3_pwl"),
          net.BernoulliJSD([s, l2_t], "l3_jsd")]
    loss = net.Sum([loss] + [net.SumElements(v, v + "_l") for v in l3], "loss_l3")
    gmap = net.AddGradientOperators([loss])
    net.BooleanMaskLengths(["lr_len", "mk_mask"], "mk_len")
    net.LengthsToWeights("lr_len", "mk_w", power=1.0)
    net.PadEmptySamples(["lr_len", e, "ids"], ["mk_pl", "mk_pe", "mk_pids"])
    net.SparseLengthsPositionalWeightedSum(["emb_l", "lr_w", "ids", "lr_len"], "mk_slpws")
    net.RemoveDataBlocks([sc, "mk_mask"], "mk_rdb")  # mk_mask as indices 1, 0, 1, 1: rows 2, 3 stay
    # the other ranges.c ops on the side (ScatterAssign writes rg_sa in place: it allocates nothing)
    net.LengthsRangeFill("lr_len", "rg_lrf")
    rg_i = net.Split("rg_i", ["rg_a", "rg_b", "rg_c"], axis=0)
    net.Range(list(rg_i), "rg_range")
    net.Range(net.Split("rg_f", ["rg_fa", "rg_fb"], axis=0), "rg_frange")
    net.LengthsGather([e, "lr_len", "rg_idx"], "rg_lg")
    net.GatherRanges(["ids", "rg_ranges"], ["rg_gr", "rg_grl"])
    net.LengthsPad([e, "lr_len"], "rg_pad", padding_value=0.5, target_length=3)
    net.ScatterAssign([net.Copy(e, "rg_sa"), "rg_sidx", net.Gather([e, "rg_sidx"], "rg_sl")], "rg_sa")
    net.Mod("ids", "rg_mod", divisor=-3, sign_follow_divisor=1)
    # print.c: Print of e's first values to the print log (the op's state and line buffer, the
    # workspace's log); the binding writes the log to sys.stderr after every call
    net.Print(e, [], limit=3)
    # queue.c: a queue made in the net (fresh at every run) gets three records of e's rows and ids;
    # DequeueBlobs moves one out, SafeDequeueBlobs concatenates the other two, then closed and empty
    qu = net.CreateBlobsQueue([], "qu_q", capacity=3, num_blobs=2, field_names=["rows", "ids"])
    qu_in = [net.Copy(e, "qu_a"), net.Copy("ids", "qu_b")]
    net.EnqueueBlobs([qu] + qu_in, qu_in)
    net.SafeEnqueueBlobs([qu] + qu_in, qu_in + ["qu_st"])
    net.EnqueueBlobs([qu, net.Slice(e, "qu_a2", starts=[1, 0], ends=[3, -1]), "qu_b"], ["qu_a2", "qu_b"])
    net.DequeueBlobs(qu, ["qu_x", "qu_y"])
    net.SafeDequeueBlobs(qu, ["qu_cx", "qu_cy", "qu_st2"], num_records=2)
    net.CloseBlobsQueue([qu], [])
    net.SafeDequeueBlobs(qu, ["qu_cx", "qu_cy", "qu_st3"], num_records=2)
    # mutex.c: a Mutex made in the net (at every run, replacing the last run's) guards the counter mx_it
    mx = net.CreateMutex([], "mx_m")
    net.AtomicIter([mx, "mx_it"], ["mx_it"])
    net.AtomicFetchAdd([mx, "mx_it", "mx_inc"], ["mx_sum", "mx_old"])  # two new int32 scalars
    # WeightedSampleDequeueBlobs (seeded: the same choices at every run) over two closed queues of one
    # record each: records, the table index over data output 1, then status 1 once the chosen one is empty
    qw = [net.CreateBlobsQueue([], "qw_q%d" % k, capacity=2, num_blobs=2) for k in range(2)]
    for k in range(2):
        qw_in = [net.Copy(e, "qw_a%d" % k), net.Copy("ids", "qw_b%d" % k)]
        net.EnqueueBlobs([qw[k]] + qw_in, qw_in)
        net.CloseBlobsQueue([qw[k]], [])
    for r in range(3):
        net.WeightedSampleDequeueBlobs(qw, ["qw_x", "qw_i%d" % r, "qw_st%d" % r], weights=[1.0, 3.0],
                                       table_idx_blob=1, seed=3)
    x = net.Copy(lin, "x_copy")
    x = net.EnsureCPUOutput(net.CopyFromCPUInput(net.Alias(x, "x_alias"), "x_cfci"), "x_eco")
    x = net.Squeeze(net.ExpandDims(x, "x_exp", dims=[0]), "x_sq", dims=[0])
    x = net.Add([net.Flatten(x, "x_flat"), "fc_b"], "x_add", broadcast=1)
    net.SumReduceLike([net.ResizeLike([x, h], "x_rl"), "fc_b"], "x_srl", axis=1)
    net.OneHot(["ids", "ten"], "x_oh")
    net.WeightedSample("wts", "x_ws", seed=5)
    h_len = net.Slice(net.Shape(h, "h_shape"), "h_len", starts=[0], ends=[1])
    net.ConstantFill(h_len, "cov0", value=0.0, input_as_shape=1)
    net.ReversePackedSegs(["rev_ids", "rev_len2"], "rev_ids_r")
    # one-hot and batch sparse/dense ops (ops/embed.c, ops/sparse.c)
    init.GivenTensorIntFill([], "oh_len", shape=[2], values=[3, 1])
    init.GivenTensorIntFill([], "oh_bx", shape=[4, 2], values=[1, 2, 3, 2, 1, 5, 3, 2])
    init.GivenTensorIntFill([], "oh_blens", shape=[2], values=[2, 1])
    init.GivenTensorIntFill([], "oh_bvals", shape=[3], values=[1, 3, 2])
    init.GivenTensorFill([], "oh_fx", shape=[3, 2], values=[-1.0, 0.0, 0.5, 2.0, 0.7, -0.1])
    init.GivenTensorFill([], "oh_bb", shape=[3], values=[-0.5, 0.5, 0.0])
    init.GivenTensorFill([], "s2dm_d", shape=[6], values=[0.5] * 6)
    init.GivenTensorFill([], "bs_v", shape=[4], values=[0.25, -1.5, 2.0, 3.5])
    # ops/moments.c and LengthsTopK with their gradient ops, on the side
    mrng = np.random.RandomState(35)
    init.GivenTensorFill([], "mo_x", shape=[2, 3, 2], values=mrng.uniform(-1, 1, 12).tolist())
    init.GivenTensorIntFill([], "mo_pos", shape=[3, 2], values=[0, 0, 1, 1, 2, 2])
    init.GivenTensorFill([], "mo_lx", shape=[5], values=mrng.uniform(-1, 1, 5).tolist())
    init.GivenTensorIntFill([], "mo_len", shape=[3], values=[2, 0, 3])
    net.LpNorm("mo_x", "mo_l1", p=1, average=1)
    net.LpNormGradient(["mo_x", "mo_l1"], "mo_dl1", p=1, average=1)
    net.LpNorm("mo_x", "mo_l2", p=2)
    net.LpNormGradient(["mo_x", "mo_l2"], "mo_dl2", p=2)
    net.BatchMoments("mo_x", ["mo_mu", "mo_var"], order="NCHW")
    net.BatchMomentsGradient(["mo_mu", "mo_var", "mo_x"], "mo_dx", order="NCHW")
    net.BatchMoments("mo_x", ["mo_mu2", "mo_var2"], order="NHWC")
    net.SinusoidPositionEncoding("mo_pos", "mo_enc", embedding_size=4, alpha=100.0)
    net.LengthsTopK(["mo_lx", "mo_len"], ["mo_tv", "mo_ti"], k=2)
    net.LengthsTopKGradient(["mo_len", "mo_ti", "mo_tv"], "mo_tdx", k=2)
    # ops/norm.c with their gradient ops, on the side: GroupNorm (NHWC), InstanceNorm, SpatialBN in training
    # (running statistics in place) and test mode, SpatialBNGradient also in its multi-batch form
    nrng = np.random.RandomState(36)
    init.GivenTensorFill([], "nm_x", shape=[2, 3, 4], values=nrng.uniform(-1, 1, 24).tolist())
    init.GivenTensorFill([], "nm_dy", shape=[2, 3, 4], values=nrng.uniform(-1, 1, 24).tolist())
    init.GivenTensorFill([], "nm_g4", shape=[4], values=[0.5, 1.0, 1.5, 2.0])
    init.GivenTensorFill([], "nm_g3", shape=[3], values=[0.5, 1.0, 1.5])
    init.GivenTensorFill([], "nm_b3", shape=[3], values=[0.1, -0.2, 0.3])
    init.GivenTensorFill([], "nm_rm", shape=[3], values=[0.0, 0.1, -0.1])
    init.GivenTensorFill([], "nm_rv", shape=[3], values=[1.0, 0.5, 2.0])
    net.GroupNorm(["nm_x", "nm_g4", "nm_g4"], ["nm_gy", "nm_gm", "nm_gr"], group=2, order="NHWC")
    net.GroupNormGradient(["nm_dy", "nm_x", "nm_g4", "nm_g4", "nm_gm", "nm_gr"],
                          ["nm_gdx", "nm_gdg", "nm_gdb"], group=2, order="NHWC")
    net.InstanceNorm(["nm_x", "nm_g3", "nm_b3"], ["nm_iy", "nm_im", "nm_ir"])
    net.InstanceNormGradient(["nm_x", "nm_g3", "nm_b3", "nm_dy"], ["nm_idx", "nm_idg", "nm_idb"])
    net.SpatialBN(["nm_x", "nm_g3", "nm_b3", "nm_rm", "nm_rv"], ["nm_by", "nm_rm", "nm_rv", "nm_bm", "nm_br"],
                  momentum=0.5)
    net.SpatialBNGradient(["nm_x", "nm_g3", "nm_dy", "nm_bm", "nm_br"], ["nm_bdx", "nm_bdg", "nm_bdb"])
    net.SpatialBN(["nm_x", "nm_g3", "nm_b3", "nm_rm", "nm_rv"], ["nm_ty"], is_test=1)
    net.SpatialBNGradient(["nm_x", "nm_g3", "nm_dy", "nm_bm", "nm_br", "nm_bdg", "nm_bdb"],
                          ["nm_mdx", "nm_mdg", "nm_mdb"], num_batches=2)
    # ops/lrn.c: LRN (with its scale output, NHWC) and LRNGradient (their double scratch)
    net.LRN("nm_x", ["nm_ly", "nm_ls"], size=3, alpha=0.5, beta=0.75, bias=2.0, order="NHWC")
    net.LRNGradient(["nm_x", "nm_ly", "nm_dy"], "nm_ldx", size=3, alpha=0.5, beta=0.75, bias=2.0, order="NHWC")
    # ops/conv.c: Conv (NCHW with bias and groups; NHWC with groups: the column and group buffers) and
    # ConvGradient (with bias: the bias sums; no_bias NHWC: dX by col2im through the group buffer)
    crng = np.random.RandomState(37)
    init.GivenTensorFill([], "cv_x", shape=[2, 4, 5, 5], values=crng.uniform(-1, 1, 200).tolist())
    init.GivenTensorFill([], "cv_w", shape=[6, 2, 3, 3], values=crng.uniform(-1, 1, 108).tolist())
    init.GivenTensorFill([], "cv_b", shape=[6], values=crng.uniform(-1, 1, 6).tolist())
    init.GivenTensorFill([], "cv_xh", shape=[2, 5, 5, 4], values=crng.uniform(-1, 1, 200).tolist())
    init.GivenTensorFill([], "cv_wh", shape=[6, 3, 3, 2], values=crng.uniform(-1, 1, 108).tolist())
    net.Conv(["cv_x", "cv_w", "cv_b"], "cv_y", kernel=3, pad=1, group=2)
    net.ConvGradient(["cv_x", "cv_w", "cv_y"], ["cv_dw", "cv_db", "cv_dx"], kernel=3, pad=1, group=2)
    net.Conv(["cv_xh", "cv_wh"], "cv_yh", kernel=3, stride=2, group=2, order="NHWC")
    net.ConvGradient(["cv_xh", "cv_wh", "cv_yh"], ["cv_dwh", "cv_dxh"], kernel=3, stride=2, group=2,
                     order="NHWC", no_bias=1)
    # ops/conv.c: ConvTranspose (NCHW, bias, pad, adj, groups) and ConvTransposeGradient (column buffer, bias
    # sums)
    trng = np.random.RandomState(41)
    init.GivenTensorFill([], "ct_x", shape=[2, 4, 3, 3], values=trng.uniform(-1, 1, 72).tolist())
    init.GivenTensorFill([], "ct_w", shape=[4, 3, 2, 2], values=trng.uniform(-1, 1, 48).tolist())
    init.GivenTensorFill([], "ct_b", shape=[6], values=trng.uniform(-1, 1, 6).tolist())
    ct_args = dict(kernel=2, stride=2, pad=1, adj=1, group=2)
    net.ConvTranspose(["ct_x", "ct_w", "ct_b"], "ct_y", **ct_args)
    net.ConvTransposeGradient(["ct_x", "ct_w", "ct_y"], ["ct_dw", "ct_db", "ct_dx"], **ct_args)
    # ops/pool.c with their gradient ops, on the side: MaxPool (NCHW, pads), AveragePool (NHWC,
    # count_include_pad, CAFFE_LEGACY_POOLING), MaxPool1D with global_pooling, AveragePool3D
    prng = np.random.RandomState(37)
    init.GivenTensorFill([], "pl_x", shape=[2, 3, 5, 4], values=prng.uniform(-1, 1, 120).tolist())
    init.GivenTensorFill([], "pl_x1", shape=[2, 3, 5], values=prng.uniform(-1, 1, 30).tolist())
    init.GivenTensorFill([], "pl_x3", shape=[1, 2, 3, 4, 3], values=prng.uniform(-1, 1, 72).tolist())
    net.MaxPool("pl_x", "pl_my", kernel=2, stride=2, pad=1)
    net.MaxPoolGradient(["pl_x", "pl_my", "pl_my"], "pl_mdx", kernel=2, stride=2, pad=1)
    pl_args = dict(kernels=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], legacy_pad=3, count_include_pad=1,
                   order="NHWC")
    net.AveragePool("pl_x", "pl_ay", **pl_args)
    net.AveragePoolGradient(["pl_x", "pl_ay", "pl_ay"], "pl_adx", **pl_args)
    net.MaxPool1D("pl_x1", "pl_gy", global_pooling=1)
    net.MaxPool1DGradient(["pl_x1", "pl_gy", "pl_gy"], "pl_gdx", global_pooling=1)
    net.AveragePool3D("pl_x3", "pl_3y", kernels=[2, 2, 2], strides=[1, 2, 1])
    net.AveragePool3DGradient(["pl_x3", "pl_3y", "pl_3y"], "pl_3dx", kernels=[2, 2, 2], strides=[1, 2, 1])
    # LpPool (NCHW, pads, p 3) and LpPool (3-D NHWC, p 1) with their LpPoolGradient
    net.LpPool("pl_x", "pl_ly", kernel=2, stride=1, pad=1, p=3.0)
    net.LpPoolGradient(["pl_x", "pl_ly", "pl_ly"], "pl_ldx", kernel=2, stride=1, pad=1, p=3.0)
    lp3 = dict(kernels=[2, 2, 2], strides=[1, 2, 1], order="NHWC", p=1.0)
    net.LpPool("pl_x3", "pl_l3y", **lp3)
    net.LpPoolGradient(["pl_x3", "pl_l3y", "pl_l3y"], "pl_l3dx", **lp3)
    # ops/pad_image.c: PadImage (reflect with a crop, NCHW; edge NHWC; constant) and PadImageGradient
    # (the output and the index maps)
    irng = np.random.RandomState(37)
    init.GivenTensorFill([], "pi_x", shape=[2, 3, 4, 5], values=irng.uniform(-1, 1, 120).tolist())
    init.GivenTensorFill([], "pi_xh", shape=[2, 4, 5, 3], values=irng.uniform(-1, 1, 120).tolist())
    net.PadImage("pi_x", "pi_y", pads=[1, 2, 0, -1], mode="reflect")
    net.PadImageGradient("pi_y", "pi_dx", pads=[1, 2, 0, -1], mode="reflect")
    net.PadImage("pi_xh", "pi_yh", pad=2, mode="edge", order="NHWC")
    net.PadImageGradient("pi_yh", "pi_dxh", pad=2, mode="edge", order="NHWC")
    net.PadImage("pi_x", "pi_yc", pad_t=2, pad_l=0, pad_b=1, pad_r=3, value=0.5)
    # Im2Col / Col2Im (conv.c, NHWC with pads), SpaceToBatch / BatchToSpace (pad_image.c), Summarize (print.c)
    net.Im2Col("pi_xh", "ic_c", kernel=2, pad=1, stride=2, order="NHWC")
    net.Col2Im(["ic_c", "pi_xh"], "ic_y", kernel=2, pad=1, stride=2, order="NHWC")
    net.SpaceToBatch("pi_x", "sb_y", pad_l=1)
    net.BatchToSpace("sb_y", "sb_x", pad_l=1)
    net.Summarize("pi_x", "sm_y")
    # NumpyTile, GatherRangesToDense (its lifetime counters), EnforceFinite on the side
    net.NumpyTile(["rev_ids", "nt_rep"], "nt_y")
    net.GatherRangesToDense(["gd_data", "gd_ranges"], ["gd_o"], lengths=[2])
    net.EnforceFinite(lin, [])
    # DivGradient's three-input form with B broadcast numpy-style to C (its scratch of doubles)
    net.DivGradient(["dg_b", "dg_c", "dg_dc"], ["dg_da", "dg_db"])
    # beam search / BasicRNNCell ops: comparisons (int32 and float32), Cast, Conditional, int32 Div
    cc_gt = net.GT(["ids", "ten"], "cc_gt", broadcast=1)
    net.EQ(["fc_b", "fc_b"], "cc_eq")
    net.Cast(cc_gt, "cc_f", to="float")
    net.Conditional([cc_gt, "ids", "labels"], "cc_c")
    net.Div(["labels", "ten"], "cc_div", broadcast=1)
    # int32 Add / Sub / Mul (the overflow check, then the broadcast rows): equal shapes, legacy, numpy-style
    net.Sub([net.Mul(["rev_ids", "rev_len2"], "ia_mul"), "rev_ids"], "ia_sub")
    net.Add(["labels", "ten"], "ia_add", broadcast=1)
    net.Tile("rev_ids", "rev_ids_t", tiles=3, axis=-1)
    net.ArgMax(sc, "u_am", axis=1)
    net.ArgMin(sc, "u_an", axis=0, keepdims=0)
    net.Accuracy([p, "labels"], "u_acc", top_k=2)
    # metric.c and collect.c: Perplexity, MultiClassAccuracy; LastNWindowCollector twice on a buffer made
    # empty at every run (4 rows, then 6 with a wrap: the buffer grows through rc_tensor_resize_keep)
    net.Perplexity(net.FlattenToVec(p, "m_pvec"), "m_ppl")
    net.MultiClassAccuracy([p, "labels"], ["m_acc", "m_cnt"])
    # ScaleBlobs (math.c): two blobs, the second in place on a copy; SparseLengthsFill (fill.c), seeded
    net.Copy([p], "sb_p")
    net.ScaleBlobs([p, "sb_p"], ["sb_y", "sb_p"], scale=0.5)
    net.SparseLengthsFill([], ["slf_v", "slf_l"], batch_size=3, average_len=2, max_value=4, seed=5)
    ln_m = net.CreateMutex([], "ln_m")
    net.ConstantFill([], "ln_buf", shape=[0])
    net.ConstantFill([], "ln_next", shape=[], value=0, dtype=core.DataType.INT32)
    net.ConstantFill([], "ln_seen", shape=[1], value=0, dtype=core.DataType.INT32)
    for _ in range(2):
        net.LastNWindowCollector(["ln_buf", "ln_next", p, ln_m, "ln_seen"], ["ln_buf", "ln_next", "ln_seen"],
                                 num_to_collect=6)
    # member_hist.c: IsMemberOf (its sorted values made with the op), AccumulateHistogram (its bins made with
    # the op, fresh at every CreateNet)
    net.IsMemberOf(["labels"], "mh_member", value=[3, 0, 3, -7])
    net.AccumulateHistogram([p], ["mh_cur", "mh_acc"], lower_bound=0.05, upper_bound=0.6, num_buckets=7)
    # inference_lstm.c: InferenceLSTM, 2 layers, bidirectional, batch_first (its scratch made at the first run)
    net.ConstantFill([], "il_x", shape=[2, 3, 3], value=0.3)
    net.ConstantFill([], "il_h", shape=[4, 2, 2], value=0.1)
    net.ConstantFill([], "il_c", shape=[4, 2, 2], value=-0.2)
    il_w = []
    for k, shape in enumerate([[8, 3], [8, 2], [8], [8]] * 2 + [[8, 4], [8, 2], [8], [8]] * 2):
        il_w.append(net.ConstantFill([], "il_w%d" % k, shape=shape, value=0.05 * (k % 5) - 0.1))
    net.InferenceLSTM(["il_x", "il_h", "il_c"] + il_w, ["il_y", "il_hy", "il_cy"], num_layers=2, bidirectional=1,
                      batch_first=1)
    # the logical ops on int32, numpy-style broadcast: (3, 2) with (2,)
    lg_or = net.Or([net.And(["rev_ids", "rev_len2"], "lg_and"), "rev_len"], "lg_or")
    net.Not(net.Xor([lg_or, "rev_len2"], "lg_xor"), "lg_not")
    net.BitwiseXor([net.BitwiseOr([net.BitwiseAnd(["rev_ids", "rev_len2"], "bw_and"), "rev_len"], "bw_or"),
                    "rev_len2"], "bw_xor")
    net.SegmentIdsToLengths(net.LengthsToSegmentIds("pk_len", "lt_ids"), "lt_len")
    net.LengthsToRanges("pk_len", "lt_rng")
    net.GatherPadding([pad, pad_len], ["lt_gs", "lt_ge"], padding_width=1)
    net.SequenceMask(q3, "sm_up", mode="upper", axis=2, batch=0)
    net.SequenceMask([q3, "rev_len"], "sm_win", mode="window", radius=1, axis=2, batch=0)
    net.Adagrad(["lin_b", "mom", str(gmap["lin_b"]), "lr"], ["lin_b", "mom"], epsilon=1e-4)
    # Adagrad's effective-lr and update outputs with weight_decay, out of place (four new blobs)
    net.Adagrad(["lin_b", "mom", str(gmap["lin_b"]), "lr"], ["ag4_w", "ag4_h", "ag4_elr", "ag4_upd"],
                weight_decay=0.1)
    net.Iter(["iter"], ["iter"])
    net.LearningRate(["iter"], ["sched_neg"], base_lr=-0.1, policy="step", stepsize=1, gamma=0.9)
    net.LearningRate(["iter"], ["sched_pos"], base_lr=0.1, policy="multistep", stepsizes=[1, 3], gamma=0.5)
    net.MomentumSGDUpdate([gmap["fc_b"], "mom_b", "sched_pos", "fc_b"], ["fc_b_step", "mom_b", "fc_b"],
                          momentum=0.9, nesterov=1)
    net.MomentumSGD([gmap["fc_b"], "mom_b2", "sched_pos"], ["msgd_g", "mom_b2"], momentum=0.9, nesterov=1)
    net.Adam(["lin_w", "m1_w", "m2_w", gmap["lin_w"], "sched_neg", "iter"],
             ["lin_w", "m1_w", "m2_w", "adam_eg"])
    # Adam's learning-rate adaption (ops/optim_more.c), out of place: sched_neg stays for the ops below
    net.LearningRateAdaption(["sched_neg", gmap["lin_w"], "adam_eg"], "lra_lr", lr_alpha=0.1)
    ge = str(gmap[e])  # Gather's output gradient: the rows of ids, as in a GradientSlice
    # the one-hot and batch sparse/dense ops (init blobs above)
    net.SegmentOneHot(["oh_len", "ids", "ten"], "oh_seg")
    net.BatchOneHot(["oh_bx", "oh_blens", "oh_bvals"], "oh_batch")
    net.BatchBucketOneHot(["oh_fx", "oh_blens", "oh_bb"], "oh_bucket")
    net.SparseToDenseMask(["ids", ge, "s2dm_d", "oh_len"], ["s2dm_o", "s2dm_p"], mask=[7, 1, 5],
                          return_presence_mask=1)
    net.SparseToDenseMaskGradient(["ids", "s2dm_o", "oh_len"], "s2dm_g", mask=[7, 1, 5])
    net.BatchSparseToDense(["oh_len", "ids", "bs_v"], "bs_dense", dense_last_dim=8, default_value=-1.0)
    net.BatchDenseToSparse(["oh_len", "ids", "bs_dense"], "bs_back")
    net.SparseToDense(["ids", ge, "emb"], "emb_dense_g")
    net.ScatterWeightedSum(["emb_s", "half", "ids", ge, "lr"], "emb_s")
    net.SparseAdagrad(["emb_a", "emb_a_h", "ids", ge, "lr"], ["emb_a", "emb_a_h"], epsilon=1e-4)
    net.SparseMomentumSGDUpdate([ge, "emb_m_mom", "sched_pos", "emb_m", "ids"],
                                ["emb_step", "emb_m_mom", "emb_m"], momentum=0.9)
    net.SparseAdam(["emb_d", "emb_d1", "emb_d2", "ids", ge, "sched_neg", "iter"],
                   ["emb_d", "emb_d1", "emb_d2", "emb_d_eg"])
    # rectified Adam (enableRAdam), with the effective gradient, on copies of the same state
    net.SparseAdam(["emb_d", "emb_d1", "emb_d2", "ids", ge, "sched_neg", "iter"],
                   ["emb_d", "emb_d1", "emb_d2", "emb_d_reg"], enableRAdam=1)
    net.RmsProp([gmap["fc_b"], "rms_ms", "rms_mom", "lr"], ["rms_go", "rms_ms", "rms_mom"], momentum=0.5)
    net.Adadelta(["ad_w", "ad_h", "ad_d", gmap["lin_w"], "sched_neg"], ["ad_w", "ad_h", "ad_d"])
    net.Wngrad(["wn_w", "wn_b", gmap["lin_w"], "sched_neg"], ["wn_w", "wn_b", "wn_eff", "wn_upd"])
    net.SparseAdadelta(["emb_ad", "emb_ad_h", "emb_ad_d", "ids", ge, "sched_neg"],
                       ["emb_ad", "emb_ad_h", "emb_ad_d"])
    net.SparseWngrad(["emb_wn", "emb_wn_b", "ids", ge, "sched_neg"], ["emb_wn", "emb_wn_b"])
    net.LearningRate(["iter"], ["sched_comp"], base_lr=-0.1, policy="composite", sub_policy_num_iters=[1, 2],
                     sub_policy_0_policy="cosine", sub_policy_1_policy="hill", sub_policy_1_num_iter=2,
                     sub_policy_1_gamma=0.1, sub_policy_1_power=0.5)
    net.SparseFtrl(["emb_f", "emb_f_nz", "ids", ge], ["emb_f", "emb_f_nz"], alpha=0.1)
    net.RowWiseSparseAdagrad(["emb_r", "emb_r_h", "ids", ge, "sched_comp"], ["emb_r", "emb_r_h"])
    net.RowWiseSparseAdam(["emb_q", "emb_q1", "emb_q2", "ids", ge, "sched_neg", "iter"],
                          ["emb_q", "emb_q1", "emb_q2", "emb_q_eg"])
    net.Ftrl(["ftrl_w", "ftrl_nz", gmap["lin_w"]], ["ftrl_w", "ftrl_nz"], alpha=0.2)
    net.DecayAdagrad(["more_w", "more_m1", "more_m2", gmap["lin_w"], "sched_neg", "iter"],
                     ["da_w", "da_m1", "da_m2"], weight_decay=0.1)
    net.GFtrl(["more_w", "more_gftrl_nz", gmap["lin_w"]], ["gf_w", "gf_nz"], alpha=0.2)
    net.Storm(["more_w", "more_mom", "more_gsq", gmap["lin_w"], "sched_neg"], ["st_w", "st_m", "st_s"])
    net.SparseStorm(["emb_st", "emb_st_m", "emb_st_s", ge, "ids", "sched_neg"],
                    ["emb_st", "emb_st_m", "emb_st_s"])
    net.Lars(["more_w", gmap["lin_w"], "lars_wd", "lars_trust", "lars_max"], "lars_r")
    params = ["emb", "fc_w"]
    assert isinstance(gmap["emb"], core.GradientSlice)  # Gather's: sparse
    net.ScatterWeightedSum(["emb", "one", gmap["emb"].indices, gmap["emb"].values, "lr"], "emb")
    net.WeightedSum(["fc_w", "one", gmap["fc_w"], "lr"], "fc_w")
    # a checkpoint of the updated parameters, read back three ways (ops/db.c); chunk_size=16 splits
    # fc_w (48 elements) into records
    ckpt = os.path.join(tempfile.mkdtemp(prefix="af_ckpt"), name + ".minidb")
    net.Save(["fc_w", "ids"], [], db=ckpt, db_type="minidb", absolute_path=1, chunk_size=16)
    net.Load([], ["ck_fc_w", "ck_ids"], db=ckpt, db_type="minidb", source_blob_names=["fc_w", "ids"])
    net.CreateDB([], ["ck_reader"], db=ckpt, db_type="minidb")
    net.Load(["ck_reader"], [], load_all=1, add_prefix="ck/")
    # ViterbiPath (its scratch of back pointers), SwapBestPath, CTCGreedyDecoder and CTCBeamSearchDecoder
    # (its trie of prefixes, hash table and lists, grown during the run), after the checkpoint so the
    # parts before keep their bounds
    vp = net.ViterbiPath(["vp_pred", "vp_tr"], "vp_path")
    net.SwapBestPath(["vp_pred", vp], "vp_new")
    net.CTCGreedyDecoder(["ctc_x", "ctc_len"], ["ctc_gl", "ctc_gv"])
    net.CTCBeamSearchDecoder(["ctc_x", "ctc_len"], ["ctc_bl", "ctc_bv", "ctc_bp"], beam_width=3,
                             num_candidates=2)
    # a Counter made in the net (at every run, replacing the last run's), counted and read; the in-place
    # RowWiseCounter and SparseNormalize on the ids; the seeded samplers and ConstantFill's bool
    cn = net.CreateCounter([], "cn_c", init_count=2)
    for b in ("cn_d1", "cn_d2", "cn_d3"):
        net.CountDown(cn, b)
    net.CountUp(cn, "cn_u")
    net.CheckCounterDone(cn, "cn_done")
    net.ResetCounter(cn, "cn_prev", init_count=5)
    net.RetrieveCount(cn, "cn_n")
    net.RowWiseCounter(["rwc_prev", "rwc_cnt", "ids", "rwc_t"], ["rwc_prev", "rwc_cnt"], counter_halflife=2)
    net.SparseNormalize(["sn_w", "ids"], ["sn_w"], use_max_norm=0, norm=1.5)
    net.WeightedMultiSampling("wms_cdf", "wms_i", num_samples=6, seed=4)
    net.WeightedMultiSampling(["wms_cdf", "rwc_prev"], "wms_i2", seed=4)
    net.UniqueUniformFill([], "uuf_y", min=0, max=99, shape=[4], seed=2)
    net.UniqueUniformFill(["ids", "uuf_avoid"], "uuf_y2", min=0, max=9, seed=2)
    net.ConstantFill([], "cf_bool", shape=[3], value=True, dtype=core.DataType.BOOL)
    net.Python(_py_scale, grad_f=_py_scale_grad)(["sn_w"], ["py_y"])
    net.Proto().op.extend([core.CreateOperator("PythonGradient", ["sn_w", "py_y", "py_y"], ["py_dx"],
                                               token=net.Proto().op[-1].arg[-1].s)])
    compare = ["ck_fc_w", "ck_ids", "ck/fc_w", "ck/ids"] + params + \
        ["lin_b", "mom", "loss", "p", "p2", "mm", "x_srl", "x_oh", "x_ws", "norm", "ratio"] + \
        ["td"] + \
        ["fc_b", "mom_b", "fc_b_step", "lin_w", "m1_w", "m2_w", "iter", "sched_neg", "sched_pos"] + \
        ["ln", "ln_mean", "ln_std", "bmm", "bmm_mask", "h_sl", "h_shape", "h_len", "cov0"] + \
        [str(gmap[prm]) for prm in ["fc_w", "fc_b", "lin_w", "lin_b", "ln_g", "ln_b", "h"]] + \
        [str(gmap[b]) for b in ["bmm", "q3", "k3", "e3"]] + \
        ["emb_dense_g", "emb_s", "emb_a", "emb_a_h", "emb_step", "emb_m_mom", "emb_m", "emb_d", "emb_d1",
         "emb_d2"] + \
        ["sched_comp", "emb_f", "emb_f_nz", "emb_r", "emb_r_h", "emb_q", "emb_q1", "emb_q2", "ftrl_w",
         "ftrl_nz"] + \
        ["rev", "rev_sq", "rev_neg", "rev_ids_r"] + \
        ["rms_go", "rms_ms", "rms_mom", "ad_w", "ad_h", "ad_d", "wn_w", "wn_b", "wn_eff", "wn_upd"] + \
        ["emb_ad", "emb_ad_h", "emb_ad_d", "emb_wn", "emb_wn_b"] + \
        [str(gmap[b]) for b in ["rev", "rv3", "rev_sq", "rev_neg"]] + \
        ["dd_u", "dd_r", "dd_sum", "dd_mean", "us_ss", "us_sm", "us_sw", "us_w"] + \
        ["cc_gt", "cc_eq", "cc_f", "cc_c", "cc_div"] + \
        ["tk_v", "tk_i", "tk_f", "tk_exp", "tk_log", "tk_t", "tk_fv", "rev_ids_t"] + \
        [str(gmap[b]) for b in ["tk_v", "tk_exp", "tk_log", "tk_t", "tk_fv"]] + \
        ["u_m", "loss12", "u_am", "u_an", "u_acc"] + \
        [str(gmap[b]) for b in ["u_abs", "u_clip", "u_m", "u_min", "u_elu"]] + \
        ["bc_d", "lg_and", "lg_or", "lg_xor", "lg_not", "ia_mul", "ia_add", "ia_sub", "fl_diag"] + \
        ["mk_sel", "mk_idx", "mk_dpad", "mk_drep", "mk_len", "mk_w", "mk_pl", "mk_pe", "mk_pids", "mk_rdb",
         "mk_slpws"] + \
        [str(gmap[b]) for b in ["mk_sel", "mk_dpad", "mk_drep"]] + \
        [str(gmap[b]) for b in ["bc_col", "bc_m", "bc_s", "half"]] + \
        ["lr_sum", "lr_mean", "lr_wsum", "lr_max", "lr_ssum", "lr_smean", "lr_swsum", "loss14"] + \
        ["ss_sum", "ss_mean", "ss_wsum", "ss_rsum", "ss_rmean", "ss_rlse", "ss_rmax", "ss_smean", "ss_swsum",
         "ss_rlme", "loss_ss"] + \
        [str(gmap[b]) for b in ["ss_e", "ss_emb"]] + \
        [str(gmap[b]) for b in ["emb_l", "lr_w", "e", "h"]] + \
        ["loss_l2", "l2_sx", "l2_wsx", "l2_two", "l2_ce", "l2_l1", "l2_dot", "l2_cos", "l2_nrm",
         "l2_nl1"] + \
        [str(gmap[b]) for b in ["l2_two", "l2_nrm"]] + \
        ["loss_l3", "l3_mrc", "l3_cec", "l3_pwl", "l3_jsd", str(gmap["l3_col"])] + \
        ["oh_seg", "oh_batch", "oh_bucket", "s2dm_o", "s2dm_p", "s2dm_g", "bs_dense", "bs_back"] + \
        ["mo_l1", "mo_dl1", "mo_l2", "mo_dl2", "mo_mu", "mo_var", "mo_dx", "mo_mu2", "mo_var2", "mo_enc",
         "mo_tv", "mo_ti", "mo_tdx"] + \
        ["da_w", "da_m1", "da_m2", "gf_w", "gf_nz", "st_w", "st_m", "st_s", "emb_st", "emb_st_m", "emb_st_s",
         "lars_r"] + \
        ["rg_tile", str(gmap["rg_tile"]), "rg_lrf", "rg_range", "rg_frange", "rg_lg", "rg_gr", "rg_grl",
         "rg_pad", "rg_sa", "rg_mod"] + \
        ["qu_x", "qu_y", "qu_cx", "qu_cy", "qu_st", "qu_st2", "qu_st3"] + \
        ["mx_it", "mx_sum", "mx_old"] + \
        ["ag4_w", "ag4_h", "ag4_elr", "ag4_upd", "emb_d_reg"] + \
        ["qw_x", "qw_i0", "qw_i1", "qw_i2", "qw_st0", "qw_st1", "qw_st2"] + \
        ["vp_path", "vp_new", "ctc_gl", "ctc_gv", "ctc_bl", "ctc_bv", "ctc_bp"] + \
        ["act_sum", "act_glu", "loss_act"] + \
        ["s2_md", "loss_s2", "s2_shape", "s2_split", "s2_split2", "s2_ec", "s2_ecs", "s2_cts"] + \
        ["cb_pct", "cb_bp", "cb_bc", "cb_pa", "cb_pi", "cb_mean", "cb_dx", "cb_drow"] + \
        [str(gmap[b]) for b in ["s2_row", "s2_pd"]] + \
        ["cn_d1", "cn_d2", "cn_d3", "cn_u", "cn_done", "cn_prev", "cn_n", "rwc_prev", "rwc_cnt", "sn_w",
         "wms_i", "wms_i2", "uuf_y", "uuf_y2", "cf_bool", "py_y", "py_dx"] + \
        ["nm_gy", "nm_gm", "nm_gr", "nm_gdx", "nm_gdg", "nm_gdb", "nm_iy", "nm_im", "nm_ir", "nm_idx",
         "nm_idg", "nm_idb", "nm_by", "nm_rm", "nm_rv", "nm_bm", "nm_br", "nm_bdx", "nm_bdg", "nm_bdb", "nm_ty",
         "nm_mdx", "nm_mdg", "nm_mdb", "nm_ly", "nm_ls", "nm_ldx"] + \
        ["cv_y", "cv_dw", "cv_db", "cv_dx", "cv_yh", "cv_dwh", "cv_dxh"] + \
        ["pi_y", "pi_dx", "pi_yh", "pi_dxh", "pi_yc", "ic_c", "ic_y", "sb_y", "sb_x", "sm_y"] + \
        ["ct_y", "ct_dw", "ct_db", "ct_dx"] + \
        ["pl_my", "pl_mdx", "pl_ay", "pl_adx", "pl_gy", "pl_gdx", "pl_3y", "pl_3dx", "pl_ly", "pl_ldx", "pl_l3y",
         "pl_l3dx"] + \
        [str(gmap[b]) for b in ["act_w", "act_erf", "act_gelu", "act_gfast", "act_neg", "act_pr"]]
    return init, net, compare


# The ops net is swept in parts: a sweep costs (allocations of a cycle)^2, so one cycle of the whole net
# (about 21,000 allocations) took 25 minutes under ASan. Each part is a run of consecutive ops of the
# forward/backward/update net (the init net is a part of its own); before each of its cycles, the blobs
# its ops read or write are put back (FeedBlob, not counted) to their values after the init net and the
# earlier parts ran once, so every cycle of a part starts from the same state, as a cycle of the whole net
# did. A part boundary never separates a blob that holds no tensor (a queue, a Mutex, a DB reader) from
# the op that made it; the parts together hold every op once (test_ops_parts_cover_the_net).
OPS_PART_SIZE = 40
OPS_MAX_PARTS = 26  # test ids (23 parts now); test_ops_parts_cover_the_net fails when they do not fit

# every op that must report a failure (with "op <type> #": by its net-creation or run message)
OPS_REPORTING = ("GivenTensorFill", "Gather", "Concat", "Softmax", "Adagrad", "LearningRate",
                 "op PadImage #", "op PadImageGradient #", "op Conv #", "op ConvGradient #",
                 "op ConvTranspose #", "op ConvTransposeGradient #", "op LRN #", "op LRNGradient #",
                 "op MaxPool #", "op MaxPoolGradient #", "op AveragePool #", "op AveragePoolGradient #",
                 "op MaxPool1D #", "op MaxPool1DGradient #", "op AveragePool3D #", "op AveragePool3DGradient #",
                 "op LpPool #", "op LpPoolGradient #", "op Im2Col #", "op Col2Im #", "op SpaceToBatch #",
                 "op BatchToSpace #", "op Summarize #",
                 "MomentumSGDUpdate", "Adam", "op LayerNorm #", "op LayerNormGradient #", "op BatchMatMul #",
                 "op BatchMatMulGradient #",
                 "op SequenceMask #", "op PowGradient #", "op BatchGather #", "op BatchGatherGradient #",
                 "op Shape #", "op Slice #", "op SliceGradient #", "op SparseToDense #",
                 "op ScatterWeightedSum #", "op SparseAdagrad #", "op SparseMomentumSGDUpdate #",
                 "op SparseAdam #", "op ReversePackedSegs #", "op Sqr #", "op SqrGradient #", "op Negative #",
                 "op Unique #", "op UnsortedSegmentSum #", "op UnsortedSegmentMean #",
                 "op ReduceFrontMax #", "op ReduceBackMaxGradient #", "op DivGradient #",
                 "op BitwiseAnd #", "op BitwiseOr #", "op BitwiseXor #",
                 "op MomentumSGD #", "op WeightedSumGradient #",
                 "op PackRNNSequence #", "op UnpackRNNSequence #", "op FCTransposedGradient #",
                 "op SplitByLengths #", "op SpatialSoftmaxWithLossGradient #",
                 "op TanGradient #", "op AsinGradient #", "op AcosGradient #", "op AtanGradient #",
                 "op NumpyTile #", "op GatherRangesToDense #",
                 "op SparseUnsortedSegmentSum #", "op SparseUnsortedSegmentMean #",
                 "op SparseUnsortedSegmentWeightedSum #", "op UnsortedSegmentWeightedSum #",
                 "op UnsortedSegmentSumGradient #", "op UnsortedSegmentWeightedSumWithMainInputGradient #",
                 "op UnsortedSegmentMeanGradient #", "op GT #", "op EQ #", "op Cast #", "op Conditional #",
                 "op TopK #", "op TopKGradient #", "op Tile #", "op TileGradient #", "op Log #", "op Exp #",
                 "op FlattenToVec #", "op Save #", "op Load #", "op CreateDB #",
                 "op RmsProp #", "op Adadelta #", "op SparseAdadelta #", "op Wngrad #", "op SparseWngrad #",
                 "op Clip #", "op Sqrt #",
                 "op StopGradient #", "op Min #", "op MinGradient #", "op Mean #", "op MeanGradient #",
                 "op ReduceSum #", "op ReduceMaxGradient #", "op ReduceFrontSumGradient #", "op ArgMax #",
                 "op Accuracy #", "op Ftrl #",
                 "op SparseFtrl #", "op RowWiseSparseAdagrad #", "op RowWiseSparseAdam #",
                 "op LengthsSum #", "op LengthsMean #", "op LengthsWeightedSum #", "op LengthsMax #",
                 "op SparseLengthsSum #", "op SparseLengthsMean #", "op SparseLengthsWeightedSum #",
                 "op LengthsIndicesInGradientSumGradient #", "op LengthsIndicesInGradientMeanGradient #",
                 "op LengthsWeightedSumWithMainInputGradient #",
                 "op LengthsMaxWithMainInputAndForwardOutputGradient #",
                 "op SparseLengthsIndicesInGradientSumGradient #",
                 "op SparseLengthsIndicesInGradientMeanGradient #",
                 "op SparseLengthsIndicesInGradientWeightedSumWithMainInputGradient #",
                 "op PackSegments #", "op UnpackSegments #", "op AddPadding #", "op RemovePadding #",
                 "op GatherPadding #", "op LengthsToSegmentIds #", "op LengthsToRanges #",
                 "op SegmentIdsToLengths #",
                 "op BooleanMask #", "op BooleanMaskGradient #", "op BooleanMaskLengths #",
                 "op LengthsToWeights #", "op PadEmptySamples #", "op DotProductWithPadding #",
                 "op DotProductWithPaddingGradient #", "op SparseLengthsPositionalWeightedSum #",
                 "op RemoveDataBlocks #",
                 "op SortedSegmentSum #", "op SortedSegmentMeanGradient #",
                 "op SortedSegmentRangeSumGradient #", "op SortedSegmentRangeLogSumExp #",
                 "op SortedSegmentRangeLogSumExpGradient #", "op SortedSegmentRangeMax #",
                 "op SortedSegmentRangeLogMeanExp #", "op SortedSegmentRangeLogMeanExpGradient #",
                 "op SortedSegmentRangeMaxGradient #",
                 "op SortedSegmentWeightedSumWithMainInputGradient #", "op SparseSortedSegmentMean #",
                 "op NanCheck #", "op EnsureDense #",
                 "op LengthsTile #", "op LengthsRangeFill #", "op Range #", "op LengthsGather #",
                 "op GatherRanges #", "op LengthsPad #", "op Mod #",
                 "op Sin #", "op SinGradient #", "op Reciprocal #", "op RSqrtGradient #", "op Softplus #",
                 "op SeluGradient #", "op SwishGradient #", "op HardSigmoid #", "op CubeGradient #",
                 "op Expand #", "op ExpandGradient #", "op Where #", "op Sign #", "op Floor #", "op Ceil #",
                 "op SigmoidCrossEntropyWithLogits #", "op SigmoidCrossEntropyWithLogitsGradient #",
                 "op WeightedSigmoidCrossEntropyWithLogitsGradient #", "op MakeTwoClass #",
                 "op MakeTwoClassGradient #", "op CrossEntropy #", "op CrossEntropyGradient #",
                 "op L1DistanceGradient #", "op DotProductGradient #", "op CosineSimilarityGradient #",
                 "op Normalize #", "op NormalizeGradient #", "op NormalizeL1 #",
                 "op DecayAdagrad #", "op GFtrl #", "op Storm #", "op Lars #", "op LearningRateAdaption #",
                 "op CreateBlobsQueue #", "op EnqueueBlobs #", "op SafeEnqueueBlobs #",
                 "op SafeDequeueBlobs #", "op Print #", "op CreateMutex #", "op AtomicFetchAdd #",
                 "op WeightedSampleDequeueBlobs #",
                 "op MarginRankingCriterion #", "op MarginRankingCriterionGradient #",
                 "op CosineEmbeddingCriterion #", "op CosineEmbeddingCriterionGradient #",
                 "op PairWiseLoss #", "op PairWiseLossGradient #", "op BernoulliJSD #",
                 "op BernoulliJSDGradient #",
                 "op LpNorm #", "op LpNormGradient #", "op BatchMoments #", "op BatchMomentsGradient #",
                 "op SinusoidPositionEncoding #", "op LengthsTopK #", "op LengthsTopKGradient #",
                 "op Mul #", "op Sub #", "op MSRAFill #", "op UniformIntFill #", "op DiagonalFill #",
                 "op SegmentOneHot #", "op BatchOneHot #", "op BatchBucketOneHot #", "op SparseToDenseMask #",
                 "op SparseToDenseMaskGradient #", "op BatchSparseToDense #", "op BatchDenseToSparse #",
                 "op ViterbiPath #", "op SwapBestPath #", "op CTCGreedyDecoder #",
                 "op CTCBeamSearchDecoder #",
                 "op Sinh #", "op SinhGradient #", "op Cosh #", "op CoshGradient #", "op Erf #",
                 "op ErfGradient #",
                 "op ThresholdedRelu #", "op ThresholdedReluGradient #", "op Gelu #", "op GeluGradient #",
                 "op ReluN #", "op ReluNGradient #", "op NegateGradient #", "op Glu #", "op PRelu #",
                 "op PReluGradient #", "op SquareRootDivide #",
                 "op GroupNorm #", "op GroupNormGradient #", "op InstanceNorm #", "op InstanceNormGradient #",
                 "op SpatialBN #", "op SpatialBNGradient #",
                 "op CreateCounter #", "op CountDown #", "op CountUp #", "op CheckCounterDone #",
                 "op ResetCounter #", "op RetrieveCount #", "op RowWiseCounter #", "op SparseNormalize #",
                 "op WeightedMultiSampling #", "op UniqueUniformFill #",
                 "op PrependDim #", "op MergeDim #", "op CopyRowsToTensor #", "op CopyRowsToTensorGradient #",
                 "op LengthsToShape #", "op LengthsSplit #", "op EnsureClipped #", "op ClipTensorByScaling #",
                 "op Percentile #", "op BisectPercentile #", "op BatchBoxCox #",
                 "op PiecewiseLinearTransform #", "op Python #", "op PythonGradient #",
                 "op Perplexity #", "op MultiClassAccuracy #", "op LastNWindowCollector #",
                 "op IsMemberOf #", "op AccumulateHistogram #", "op InferenceLSTM #",
                 "op ScaleBlobs #", "op SparseLengthsFill #")


def _tensor_blobs():
    blobs = {b: workspace.FetchBlob(b) for b in workspace.Blobs()}
    return {b: v for b, v in blobs.items() if isinstance(v, np.ndarray)}


def _base(want):
    # "op X #" -> "X"
    return re.sub(r"^op (.*) #$", r"\1", want)


def ops_parts():
    """The init net and the parts of build_ops_net's net: a list of (net, [op types], prepare, compare)
    whose first entry is the init net (prepare does nothing; compare: the blobs of build_ops_net's
    compare list it writes, not the random fills). Builds them in the current workspace, which it
    resets, running the init net and every part once."""
    init, net, compare = build_ops_net()
    ops = list(net.Proto().op)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init)
    workspace.RunNetOnce(net)
    # where a blob that holds no tensor is first and last used: no boundary inside
    objects = {b for b in workspace.Blobs() if not isinstance(workspace.FetchBlob(b), np.ndarray)}
    span = {}
    for i, op in enumerate(ops):
        for x in list(op.input) + list(op.output):
            if x in objects:
                span[x] = (span.get(x, (i, i))[0], i)
    bounds, start = [], 0
    while start < len(ops):
        end = min(start + OPS_PART_SIZE, len(ops))
        while any(first < end <= last for first, last in span.values()):
            end += 1
        bounds.append((start, end))
        start = end
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init)
    init_types = [op.type for op in init.Proto().op]
    init_out = {x for op in init.Proto().op for x in op.output}
    parts = [(init, init_types, lambda: None, [x for x in compare if x in init_out])]
    for p, (a, b) in enumerate(bounds):
        part = net.Clone("af_ops_part%d" % p, op_id_mask=range(a, b))
        before = _tensor_blobs()
        touched = {x for op in ops[a:b] for x in list(op.input) + list(op.output)}
        saved = {x: before[x] for x in touched if x in before}

        def prepare(saved=saved):
            for x, v in saved.items():
                workspace.FeedBlob(x, v)

        workspace.RunNetOnce(part)
        after = _tensor_blobs()
        written = sorted({x for op in ops[a:b] for x in op.output if x in after})
        parts.append((part, [op.type for op in ops[a:b]], prepare, written))
    return init, net, parts


_PARTS = {}


def _parts():
    if not _PARTS:
        _PARTS["init"], _PARTS["net"], _PARTS["parts"] = ops_parts()
    return _PARTS["init"], _PARTS["net"], _PARTS["parts"]


def test_ops_parts_cover_the_net():
    init, net, parts = _parts()
    assert parts[0][1] == [op.type for op in init.Proto().op]
    assert [t for _, types, _, _ in parts[1:] for t in types] == [op.type for op in net.Proto().op]
    assert 5 < len(parts) <= OPS_MAX_PARTS, \
        "%d parts: too few to keep the sweeps short, or more than the test ids" % len(parts)
    assert all(compare for _, _, _, compare in parts), "a part compares no blob"
    types = {t for _, ts, _, _ in parts for t in ts}
    for want in OPS_REPORTING:
        assert _base(want) in types, want


@pytest.mark.parametrize("sticky", [False, True])
@pytest.mark.parametrize("part", range(OPS_MAX_PARTS))
def test_ops_allocation_failures(part, sticky):
    init, _, parts = _parts()
    if part >= len(parts):
        pytest.skip("the ops net has %d parts" % len(parts))
    pnet, types, prepare, compare = parts[part]
    # the workspace as the earlier parts leave it (prepare puts back what this part touches)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init)
    for earlier, _, prep, _ in parts[1:part]:
        prep()
        workspace.RunNetOnce(earlier)

    if part == 0:
        def cycle():
            workspace.RunNetOnce(init)
    else:
        def cycle():
            workspace.CreateNet(pnet, overwrite=True)
            workspace.RunNet(pnet)

    messages, _ = sweep(cycle, compare, sticky, prepare=prepare)
    text = " | ".join(messages)
    for want in OPS_REPORTING:
        if _base(want) in types:
            assert want in text, "no failure reported by %s: %s" % (want, text)
    if part == 1:
        # converting the net's description names the net and the op
        assert re.search(r"net 'af_ops_part0(_\d+)?': op #0 \(Gather\)", text), text


# ---------------------------------------------------------------- a small net of image and index ops
def test_unmask_ranges_rowmul_duplicates_shuffle_resize_allocation_failures():
    """BooleanUnmask (its per-pair counters made with the op), SegmentIdsToRanges, RowMul, ReduceTailSum,
    RowWiseArgMax, FindDuplicateElements (hash table and positions: scratch of the run), ChannelShuffle,
    ResizeNearest and their gradient ops: every allocation of a cycle fails in turn; each failure is a
    MemoryError naming the op, nothing leaks, and the next cycle gives the same bits."""
    r = np.random.RandomState(3)
    blobs = dict(m1=np.array([1, 0, 1, 0], np.int32), v1=r.rand(2).astype(np.float32),
                 m2=np.array([0, 1, 0, 1], np.int32), v2=r.rand(2).astype(np.float32),
                 ids=np.array([0, 0, 2, 2, 3], np.int32), d=np.zeros((6, 1), np.float32),
                 mat=r.rand(3, 4).astype(np.float32), w=r.rand(3).astype(np.float32),
                 fd=np.array([5, 1, 5, 2, 1, 5], np.int32), img=r.rand(2, 4, 3, 2).astype(np.float32))
    net = core.Net("af_image_index")
    net.BooleanUnmask(["m1", "v1", "m2", "v2"], "bu")
    net.SegmentIdsToRanges(["ids"], "sr")
    net.SegmentIdsToRanges(["ids", "d"], "sr2")
    net.RowMul(["mat", "w"], "rm")
    net.ReduceTailSum(["mat"], "rts")
    net.RowWiseArgMax(["mat"], "ram")
    net.FindDuplicateElements(["fd"], "fde")
    net.ChannelShuffle(["img"], "cs", group=2)
    net.ChannelShuffleGradient(["cs"], "csg", group=2)
    net.ResizeNearest(["img"], "rn", height_scale=1.5, width_scale=2.0)
    net.ResizeNearestGradient(["rn", "img"], "rng", height_scale=1.5, width_scale=2.0)
    compare = ["bu", "sr", "sr2", "rm", "rts", "ram", "fde", "cs", "csg", "rn", "rng"]

    def prepare():
        for k, v in blobs.items():
            workspace.FeedBlob(k, v)

    def cycle():
        workspace.CreateNet(net, overwrite=True)
        workspace.RunNet(net)

    for sticky in (False, True):
        workspace.ResetWorkspace()
        messages, _ = sweep(cycle, compare, sticky, prepare=prepare)
        text = " | ".join(messages)
        for t in ("BooleanUnmask", "SegmentIdsToRanges", "RowMul", "ReduceTailSum", "RowWiseArgMax",
                  "FindDuplicateElements", "ChannelShuffle", "ChannelShuffleGradient", "ResizeNearest",
                  "ResizeNearestGradient"):
            assert "op %s #" % t in text, "no failure reported by %s: %s" % (t, text)


def test_a_net_list_argument_that_fails_conversion_leaks_nothing():
    # an op argument holding a list of nets, whose second net fails to convert (an int argument
    # beyond int64): the half-converted net was left out of what the failed conversion frees
    good = core.Net("good")
    good.Copy(["a"], ["b"])
    bad = core.Net("bad")
    bad.Copy(["a"], ["b"])
    bad.Copy(["a"], ["b"], k=2 ** 70)
    op = core.CreateOperator("Copy", ["a"], ["b"], nets=[good.Proto(), bad.Proto()])

    def cycle():
        with pytest.raises(OverflowError, match="net '%s': op #1" % bad.Name()):
            workspace.RunOperatorOnce(op)

    cycle()
    live0 = _C._alloc_live()
    for _ in range(3):
        cycle()
    assert _C._alloc_live() == live0, "%d blocks leaked" % (_C._alloc_live() - live0)
