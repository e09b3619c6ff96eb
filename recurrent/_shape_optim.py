"""Shape functions of the optimizer family: the ops of csrc/ops/optim.c, optim_rowwise.c, optim_more.c,
optim_adaptive.c, counter.c, queue.c, db.c, mutex.c, collect.c, rnn_units.c and Adagrad / SparseAdagrad of embed.c.

Every optimizer step writes tensors of its inputs' shapes, float32 (the ops refuse other dtypes and
resize their float outputs as float32, so a float output is FLOAT even where the input's type was
not given); the checks mirror the C ones (shapes compared exactly, a learning rate / alpha / sum
of squares of one float32 element of any shape, an iteration counter of one int32 element of any
shape, sparse gradients of shape INDICES.shape + PARAM.shape[1:]) and raise ShapeError where the op
refuses. Surprises:
 - the sparse ops (and Iter, RowWiseCounter, SparseNormalize) update in place: their outputs must
   name their inputs' blobs (else the op is refused when created); such outputs get their inputs'
   shapes, and all outputs are None when the names do not match, as for input or output counts
   the op's schema refuses (also at creation);
 - Iter without an input keeps the shape of whatever counter its output blob holds (it creates an
   int32 (1,) only when the blob holds nothing), which a shape function cannot see: None;
 - LearningRate and Lars give (1,); LearningRateAdaption gives LR's shape; Wngrad's EFFECTIVE_LR has
   SEQ_B's shape (any one-element shape);
 - LSTMUnit / GRUUnit take a seq_lengths input unless sequence_lengths=0; a wrong input count is
   refused at creation: None then.
Not inferred (NOT_INFERRED says why for each): the ops whose output holds no tensor (CreateCounter,
CreateMutex, CreateBlobsQueue, CreateDB) or whose input is such an object (the Counter ops, AtomicIter,
AtomicFetchAdd, the queue ops): the engine calls a function only when every input is a known tensor, and these
inputs never are, although CountUp & co. always give an int32 () and AtomicIter its counter's shape;
DequeueBlobs & co. give what was queued, Load what the file holds. Save writes no blob ([]).
"""

from .shape_inference import (FLOAT, INT32, UNDEFINED, ShapeError, Tensor, args, not_inferred, register,
                              size)

MAX_DIMS = 8  # RC_MAX_DIMS

def _op(*op_types):
    """register() (the engine refuses an op whose count of inputs or outputs its schema refuses)."""
    def deco(f):
        register(*op_types)(f)
        return f
    return deco


def _f32(op, ins, *ks):
    for k in ks:
        if ins[k].dtype not in (FLOAT, UNDEFINED):
            raise ShapeError("%s: input %d '%s' must be float32" % (op.type, k, op.input[k]))


def _i32(op, ins, *ks):
    for k in ks:
        if ins[k].dtype not in (INT32, UNDEFINED):
            raise ShapeError("%s: input %d '%s' must be int32" % (op.type, k, op.input[k]))


def _same(op, ins, ref, *ks):
    """Inputs ref and ks float32 of input ref's shape (check_same_shape)."""
    _f32(op, ins, ref, *ks)
    for k in ks:
        if ins[k].shape != ins[ref].shape:
            raise ShapeError("%s: input %d '%s' %s must have the shape of input %d '%s' %s" % (
                op.type, k, op.input[k], list(ins[k].shape), ref, op.input[ref], list(ins[ref].shape)))


def _scalar(op, ins, k):
    """Input k: float32 of one element (rc_sparse_check_scalar, check_lr)."""
    _f32(op, ins, k)
    if size(ins[k].shape) != 1:
        raise ShapeError("%s: input %d '%s' must hold one value, got %s" % (
            op.type, k, op.input[k], list(ins[k].shape)))


def _counter(op, ins, k):
    """Input k: the iteration counter, int32 of one element (rc_iter_check_counter)."""
    _i32(op, ins, k)
    if size(ins[k].shape) != 1:
        raise ShapeError("%s: input %d '%s' (the iteration counter) must hold one value, got %s" % (
            op.type, k, op.input[k], list(ins[k].shape)))


def _rows(op, ins, x, ii, v):
    """INDICES (input ii) int32; X (input x) float32 with >= 1 dim; V (input v) float32 of shape
    INDICES.shape + X.shape[1:] (rc_sparse_check_indices, rc_sparse_check_rows)."""
    _i32(op, ins, ii)
    _f32(op, ins, x, v)
    xs, idx = ins[x].shape, ins[ii].shape
    if len(xs) < 1:
        raise ShapeError("%s: input %d '%s' must have at least 1 dim (its rows)" % (op.type, x, op.input[x]))
    want = tuple(idx) + tuple(xs[1:])
    if len(want) > MAX_DIMS or ins[v].shape != want:
        raise ShapeError("%s: input %d '%s' %s must have shape %s (input %d %s + input %d %s without its "
                         "first dim)" % (op.type, v, op.input[v], list(ins[v].shape), list(want), ii,
                                         list(idx), x, list(xs)))


def _plus(op, ins, k, ref, last):
    """Input k float32 of input ref's shape plus a last dim of `last` (check_shape_plus)."""
    _f32(op, ins, k)
    if ins[k].shape != tuple(ins[ref].shape) + (last,):
        raise ShapeError("%s: input %d '%s' %s must have the shape of input %d '%s' %s plus a last dim of %d"
                         % (op.type, k, op.input[k], list(ins[k].shape), ref, op.input[ref],
                            list(ins[ref].shape), last))


def _rowwise(op, ins, k, x):
    """Input k (a row-wise moment) float32 of shape (X.shape[0],) (check_rowwise)."""
    _f32(op, ins, k)
    if ins[k].shape != (ins[x].shape[0],):
        raise ShapeError("%s: input %d '%s' %s (the row-wise moment) must have shape (%d,)" % (
            op.type, k, op.input[k], list(ins[k].shape), ins[x].shape[0]))


def _inplace(op, *pairs):
    """Whether output o names input i's blob for every (i, o) (required at creation)."""
    return all(op.output[o] == op.input[i] for i, o in pairs)


def _like(ins, *ks):
    return [Tensor(ins[k].shape, FLOAT) for k in ks]


# ---------------------------------------------------------------- optim.c
@_op("Iter")
def _iter(op, ins):
    if not ins:
        return [None]  # keeps the shape of the counter its output blob holds (or creates (1,))
    if op.input[0] != op.output[0]:
        return [None]
    _counter(op, ins, 0)
    return [Tensor(ins[0].shape, INT32)]


@_op("LearningRate")
def _learning_rate(op, ins):
    _counter(op, ins, 0)
    return [Tensor((1,), FLOAT)]


@_op("MomentumSGDUpdate", "MomentumSGD")
def _momentum(op, ins):
    _same(op, ins, 0, *((1, 3) if len(ins) == 4 else (1,)))
    _scalar(op, ins, 2)
    return _like(ins, *[0] * len(op.output))


@_op("Adam")
def _adam(op, ins):
    _same(op, ins, 0, 1, 2, 3)
    _scalar(op, ins, 4)
    _counter(op, ins, 5)
    return _like(ins, 0, 0, 0, 3)[:len(op.output)]


@_op("SparseMomentumSGDUpdate")
def _sparse_momentum(op, ins):
    # (GRAD, MOMENT, LR, PARAM, INDICES) -> (GRAD, MOMENT, PARAM); MOMENT and PARAM in place
    _same(op, ins, 3, 1)
    _rows(op, ins, 3, 4, 0)
    _scalar(op, ins, 2)
    if not _inplace(op, (1, 1), (3, 2)):
        return [None] * 3
    return _like(ins, 0, 1, 3)


@_op("SparseAdam")
def _sparse_adam(op, ins):
    # (PARAM, MOMENT_1, MOMENT_2, INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[, EFFECTIVE_GRAD])
    _same(op, ins, 0, 1, 2)
    _rows(op, ins, 0, 3, 4)
    _scalar(op, ins, 5)
    _counter(op, ins, 6)
    if not _inplace(op, (0, 0), (1, 1), (2, 2)):
        return [None] * len(op.output)
    return _like(ins, 0, 1, 2, 4)[:len(op.output)]


# ---------------------------------------------------------------- optim_rowwise.c
@_op("Ftrl")
def _ftrl(op, ins):
    # (VAR, N_Z, GRAD[, ALPHA]) -> (VAR, N_Z)
    _f32(op, ins, 0)
    _plus(op, ins, 1, 0, 2)
    _same(op, ins, 0, 2)
    if len(ins) > 3:
        _scalar(op, ins, 3)
    return _like(ins, 0, 1)


@_op("SparseFtrl")
def _sparse_ftrl(op, ins):
    # (VAR, N_Z, INDICES, GRAD[, ALPHA]) -> (VAR, N_Z) in place
    _rows(op, ins, 0, 2, 3)
    _plus(op, ins, 1, 0, 2)
    if len(ins) > 4:
        _scalar(op, ins, 4)
    if not _inplace(op, (0, 0), (1, 1)):
        return [None] * 2
    return _like(ins, 0, 1)


@_op("RowWiseSparseAdagrad")
def _rowwise_adagrad(op, ins):
    # (PARAM, MOMENT (rows,), INDICES, GRAD, LR[, COUNTER (rows,)]) -> (PARAM, MOMENT) in place
    _rows(op, ins, 0, 2, 3)
    _rowwise(op, ins, 1, 0)
    _scalar(op, ins, 4)
    if len(ins) > 5:
        _rowwise(op, ins, 5, 0)
    if not _inplace(op, (0, 0), (1, 1)):
        return [None] * 2
    return _like(ins, 0, 1)


@_op("RowWiseSparseAdam")
def _rowwise_adam(op, ins):
    # (PARAM, MOMENT_1, MOMENT_2 (rows,), INDICES, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2[, EFF_GRAD])
    _rows(op, ins, 0, 3, 4)
    _same(op, ins, 0, 1)
    _rowwise(op, ins, 2, 0)
    _scalar(op, ins, 5)
    _counter(op, ins, 6)
    if not _inplace(op, (0, 0), (1, 1), (2, 2)):
        return [None] * len(op.output)
    return _like(ins, 0, 1, 2, 4)[:len(op.output)]


@_op("RowWiseCounter")
def _rowwise_counter(op, ins):
    # (PREV_ITER int32, COUNTER float32 of as many elements, INDICES, ITER) -> (PREV_ITER, COUNTER) in place
    _i32(op, ins, 0, 2)
    _f32(op, ins, 1)
    _counter(op, ins, 3)
    if size(ins[0].shape) != size(ins[1].shape):
        raise ShapeError("%s: inputs 0 %s and 1 %s must have the same number of elements" % (
            op.type, list(ins[0].shape), list(ins[1].shape)))
    if not _inplace(op, (0, 0), (1, 1)):
        return [None] * 2
    return [Tensor(ins[0].shape, INT32), Tensor(ins[1].shape, FLOAT)]


@_op("SparseNormalize")
def _sparse_normalize(op, ins):
    # (PARAM, INDICES[, GRAD (not read, not checked)]) -> PARAM in place
    _f32(op, ins, 0)
    if len(ins[0].shape) < 1:
        raise ShapeError("%s: input 0 '%s' must have at least 1 dim" % (op.type, op.input[0]))
    _i32(op, ins, 1)
    if not _inplace(op, (0, 0)):
        return [None]
    return _like(ins, 0)


# ---------------------------------------------------------------- optim_more.c
@_op("DecayAdagrad")
def _decay_adagrad(op, ins):
    # (PARAM, MOMENT_1, MOMENT_2, GRAD, LR, ITER) -> (PARAM, MOMENT_1, MOMENT_2)
    _same(op, ins, 0, 1, 2, 3)
    _scalar(op, ins, 4)
    _counter(op, ins, 5)
    return _like(ins, 0, 1, 2)


@_op("GFtrl")
def _gftrl(op, ins):
    # (VAR (>= 1 dim), N_Z, GRAD[, ALPHA]) -> (VAR, N_Z)
    _same(op, ins, 0, 2)
    if len(ins[0].shape) < 1:
        raise ShapeError("%s: input 0 '%s' (the variable) must have at least one dim" % (
            op.type, op.input[0]))
    _plus(op, ins, 1, 0, 2)
    if len(ins) > 3:
        _scalar(op, ins, 3)
    return _like(ins, 0, 1)


@_op("Storm")
def _storm(op, ins):
    # (PARAM, MOMENT, GRAD_SQ_SUM, GRAD, LR) -> (PARAM, MOMENT, GRAD_SQ_SUM)
    _same(op, ins, 0, 1, 3)
    _scalar(op, ins, 2)
    _scalar(op, ins, 4)
    return _like(ins, 0, 1, 2)


@_op("YellowFin")
def _yellowfin(op, ins):
    # (PARAM, MOMENT, LR, MU, CURV_WIN, G_AVG, G2_AVG, SCALARS, GRAD, ITER) -> the first eight
    _same(op, ins, 0, 1, 5, 6, 8)
    _scalar(op, ins, 2)
    _scalar(op, ins, 3)
    width = args(op).get("curv_win_width", 20)
    _f32(op, ins, 4, 7)
    for i, n in ((4, width), (7, 5)):
        if size(ins[i].shape) != n:
            raise ShapeError("%s: input %d '%s' must hold %d values, got %s" % (
                op.type, i, op.input[i], n, list(ins[i].shape)))
    return _like(ins, 0, 1, 2, 3, 4, 5, 6, 7)


@_op("SparseStorm")
def _sparse_storm(op, ins):
    # (PARAM, MOMENT, GRAD_SQ_SUM, GRAD, INDICES, LR) -> (PARAM, MOMENT, GRAD_SQ_SUM) in place
    _same(op, ins, 0, 1)
    _scalar(op, ins, 2)
    _rows(op, ins, 0, 4, 3)
    _scalar(op, ins, 5)
    if not _inplace(op, (0, 0), (1, 1), (2, 2)):
        return [None] * 3
    return _like(ins, 0, 1, 2)


@_op("Lars")
def _lars(op, ins):
    # (X, DX, WD, TRUST, LR_MAX) -> LR_RESCALED (1,)
    _same(op, ins, 0, 1)
    for k in (2, 3, 4):
        _scalar(op, ins, k)
    return [Tensor((1,), FLOAT)]


@_op("LearningRateAdaption")
def _lr_adaption(op, ins):
    # (LR, GRAD, EFFGRAD) -> LR
    _scalar(op, ins, 0)
    _same(op, ins, 1, 2)
    return _like(ins, 0)


# ---------------------------------------------------------------- optim_adaptive.c
@_op("RmsProp")
def _rmsprop(op, ins):
    # (GRAD, MEAN_SQUARES, MOMENTUM, LR) -> (GRAD_O, MEAN_SQUARES, MOMENTUM), all GRAD's shape
    _same(op, ins, 0, 1, 2)
    _scalar(op, ins, 3)
    return _like(ins, 0, 0, 0)


@_op("Adadelta")
def _adadelta(op, ins):
    # (PARAM, MOMENT, MOMENT_DELTA, GRAD, LR) -> (PARAM, MOMENT, MOMENT_DELTA)
    _same(op, ins, 0, 1, 2, 3)
    _scalar(op, ins, 4)
    return _like(ins, 0, 0, 0)


@_op("SparseAdadelta")
def _sparse_adadelta(op, ins):
    # (PARAM, MOMENT, MOMENT_DELTA, INDICES, GRAD, LR) -> (PARAM, MOMENT, MOMENT_DELTA) in place
    _same(op, ins, 0, 1, 2)
    _rows(op, ins, 0, 3, 4)
    _scalar(op, ins, 5)
    if not _inplace(op, (0, 0), (1, 1), (2, 2)):
        return [None] * 3
    return _like(ins, 0, 1, 2)


@_op("Wngrad")
def _wngrad(op, ins):
    # (PARAM, SEQ_B, GRAD, LR) -> (PARAM, SEQ_B[, EFFECTIVE_LR (SEQ_B's shape)[, UPDATE (GRAD's)]])
    _same(op, ins, 0, 2)
    _scalar(op, ins, 1)
    _scalar(op, ins, 3)
    return _like(ins, 0, 1, 1, 2)[:len(op.output)]


@_op("SparseWngrad")
def _sparse_wngrad(op, ins):
    # (PARAM, SEQ_B, INDICES, GRAD, LR) -> (PARAM, SEQ_B) in place
    _scalar(op, ins, 1)
    _rows(op, ins, 0, 2, 3)
    _scalar(op, ins, 4)
    if not _inplace(op, (0, 0), (1, 1)):
        return [None] * 2
    return _like(ins, 0, 1)


# ---------------------------------------------------------------- embed.c: Adagrad, SparseAdagrad
@_op("Adagrad")
def _adagrad(op, ins):
    # (PARAM, MOMENT, GRAD, LR) -> (PARAM, MOMENT[, EFFECTIVE_LR[, UPDATE]]), all PARAM's shape
    _same(op, ins, 0, 1, 2)
    _scalar(op, ins, 3)
    return _like(ins, *[0] * len(op.output))


@_op("SparseAdagrad")
def _sparse_adagrad(op, ins):
    # (PARAM, MOMENT, INDICES, GRAD, LR) -> (PARAM, MOMENT) in place
    _same(op, ins, 0, 1)
    _rows(op, ins, 0, 2, 3)
    _scalar(op, ins, 4)
    if not _inplace(op, (0, 0), (1, 1)):
        return [None] * 2
    return _like(ins, 0, 1)


# ---------------------------------------------------------------- rnn_units.c
def _unit_inputs(op, ins, n_base, n_after):
    """The index of seq_lengths (None without) and of the timestep, or None when the input count does
    not fit the argument sequence_lengths (refused at creation)."""
    seq = args(op).get("sequence_lengths", 1)
    if not isinstance(seq, int):
        return None
    if len(ins) != n_base + (1 if seq else 0) + 1 + n_after:
        return None
    return (n_base if seq else None), (n_base + 1 if seq else n_base)


def _state(op, ins, k):
    """Input k float32 of shape (1, N, D): (N, D)."""
    _f32(op, ins, k)
    s = ins[k].shape
    if len(s) != 3 or s[0] != 1:
        raise ShapeError("%s: input %d '%s' must be 1xNxD, got %s" % (op.type, k, op.input[k], list(s)))
    return s[1], s[2]


def _gates(op, ins, k, n, d, mult):
    _f32(op, ins, k)
    if ins[k].shape != (1, n, mult * d):
        raise ShapeError("%s: input %d '%s' (gates) must be (1, %d, %d), got %s" % (
            op.type, k, op.input[k], n, mult * d, list(ins[k].shape)))


def _seq_t(op, ins, seq, t, n):
    if seq is not None:
        _i32(op, ins, seq)
        if size(ins[seq].shape) != n:
            raise ShapeError("%s: input %d '%s' (seq_lengths) must have N=%d elements, got %s" % (
                op.type, seq, op.input[seq], n, list(ins[seq].shape)))
    _i32(op, ins, t)
    if size(ins[t].shape) != 1:
        raise ShapeError("%s: input %d '%s' (timestep) must hold one element, got %s" % (
            op.type, t, op.input[t], list(ins[t].shape)))


def _lstm_inputs(op, ins, n_after):
    where = _unit_inputs(op, ins, 3, n_after)
    if where is None:
        return None
    n, d = _state(op, ins, 1)
    _same(op, ins, 1, 0)
    _gates(op, ins, 2, n, d, 4)
    _seq_t(op, ins, where[0], where[1], n)
    return where[1] + 1


def _gru_inputs(op, ins, n_after):
    where = _unit_inputs(op, ins, 2, n_after)
    if where is None:
        return None
    n, d = _state(op, ins, 0)
    _gates(op, ins, 1, n, d, 3)
    _seq_t(op, ins, where[0], where[1], n)
    return where[1] + 1


@_op("LSTMUnit")
def _lstm_unit(op, ins):
    # (h_prev, c_prev, gates, [seq_lengths], timestep) -> (h, c), both c_prev's shape
    if _lstm_inputs(op, ins, 0) is None:
        return [None] * 2
    return _like(ins, 1, 1)


@_op("LSTMUnitGradient")
def _lstm_unit_gradient(op, ins):
    # (h_prev, c_prev, gates, [seq_lengths], timestep, h, c, dh, dc) -> (dh_prev, dc_prev, dgates)
    k = _lstm_inputs(op, ins, 4)
    if k is None:
        return [None] * 3
    _same(op, ins, 1, k, k + 1, k + 2, k + 3)
    return _like(ins, 0, 1, 2)


@_op("GRUUnit")
def _gru_unit(op, ins):
    # (h_prev, gates, [seq_lengths], timestep) -> h
    if _gru_inputs(op, ins, 0) is None:
        return [None]
    return _like(ins, 0)


@_op("GRUUnitGradient")
def _gru_unit_gradient(op, ins):
    # (h_prev, gates, [seq_lengths], timestep, h, dh) -> (dh_prev, dgates)
    k = _gru_inputs(op, ins, 2)
    if k is None:
        return [None] * 2
    _same(op, ins, 0, k, k + 1)
    return _like(ins, 0, 1)


# ---------------------------------------------------------------- db.c, counter.c, mutex.c, queue.c
@_op("Save")
def _save(op, ins):
    return []  # writes a file, no blob


not_inferred("its output is a DBReader object (no tensor)", "CreateDB")
not_inferred("the shapes come from the file (or reader) it reads", "Load")
not_inferred("its output is a Counter object (no tensor)", "CreateCounter")
not_inferred("its input is a Counter object, never a known tensor, so no function can run (the outputs would "
             "be int32 ())", "ResetCounter", "CountDown", "CheckCounterDone", "CountUp", "RetrieveCount")
not_inferred("its output is a Mutex object (no tensor)", "CreateMutex")
not_inferred("its input 0 is a Mutex object, never a known tensor, so no function can run (the counter keeps "
             "its shape)", "AtomicIter")
not_inferred("its input 0 is a Mutex object, never a known tensor, so no function can run (the outputs would "
             "be int32 ())", "AtomicFetchAdd", "AtomicFetchAdd64")


@register("LastNWindowCollector", partial=True)
def _last_n_window_collector(op, ins):
    """(LAST_N, NEXT, DATA[, MUTEX[, NUM_VISITED]]) -> (LAST_N, NEXT[, NUM_VISITED]), in place
    (csrc/ops/collect.c). Called with unknown inputs too (partial), since MUTEX never is a known
    tensor; LAST_N is unknown when LAST_N or DATA is (LAST_N holding nothing among them: that empty
    buffer would take DATA's shape, but unknown may also mean not inferred). The
    buffer's rows after the run: those it had plus DATA's (at most num_to_collect of these), at
    most num_to_collect; an empty buffer (0 rows) with an empty DATA becomes DATA's shape."""
    unknown = [None] * len(op.output)
    num = args(op).get("num_to_collect", -1)
    n_in, n_out = len(op.input), len(op.output)
    if isinstance(num, bool) or not isinstance(num, int) or not 0 < num <= 2 ** 31 - 1 \
            or (n_in == 5) != (n_out == 3) \
            or any(op.input[i] != op.output[o] for i, o in ((0, 0), (1, 1), (4, 2)) if o < n_out):
        return unknown  # refused at creation
    if n_in > 3 and ins[3] is not None:
        raise ShapeError("LastNWindowCollector: input 3 '%s' must be a Mutex, not a tensor" % op.input[3])
    buf, nxt, data = ins[0], ins[1], ins[2]
    if data is not None and not data.shape:
        raise ShapeError("LastNWindowCollector: input 2 '%s' (DATA) must have at least 1 dim" % op.input[2])
    if nxt is not None:
        _i32(op, ins, 1)
        if nxt.shape != ():
            raise ShapeError("LastNWindowCollector: input 1 '%s' (NEXT) must be an int32 scalar (), got %s" % (
                op.input[1], list(nxt.shape)))
    if n_in > 4 and ins[4] is not None:
        _counter(op, ins, 4)
    last_n = None
    if buf is not None and data is not None:
        has_rows = not (buf.shape and buf.shape[0] == 0)
        if has_rows:
            if UNDEFINED not in (buf.dtype, data.dtype) and buf.dtype != data.dtype:
                raise ShapeError("LastNWindowCollector: input 0 '%s' (LAST_N) and input 2 '%s' (DATA) must have "
                                 "the same dtype" % (op.input[0], op.input[2]))
            if len(buf.shape) != len(data.shape) or buf.shape[1:] != data.shape[1:]:
                raise ShapeError("LastNWindowCollector: input 0 '%s' %s (LAST_N) must have rows shaped as those "
                                 "of input 2 '%s' %s (DATA)" % (op.input[0], list(buf.shape), op.input[2],
                                                                list(data.shape)))
            if buf.shape[0] > num:
                raise ShapeError("LastNWindowCollector: input 0 '%s' %s (LAST_N) has more rows than "
                                 "num_to_collect %d" % (op.input[0], list(buf.shape), num))
        n = data.shape[0]
        if n == 0:
            last_n = buf if has_rows else data
        else:
            rows = buf.shape[0] if has_rows else 0
            last_n = Tensor((min(num, rows + min(n, num)),) + tuple(data.shape[1:]), data.dtype)
    outs = [last_n, None if nxt is None else Tensor((), INT32)]
    if n_out == 3:
        outs.append(None if ins[4] is None else Tensor(ins[4].shape, INT32))
    return outs


not_inferred("its output is a BlobsQueue object (no tensor)", "CreateBlobsQueue")
not_inferred("its input 0 is a BlobsQueue object, never a known tensor (the outputs are its inputs, in "
             "place, and SafeEnqueueBlobs' status)",
             "EnqueueBlobs", "SafeEnqueueBlobs")
not_inferred("its input 0 is a BlobsQueue object and it writes no blob", "CloseBlobsQueue")
not_inferred("the dequeued shapes are those of the records queued (data); its inputs are BlobsQueue objects",
             "DequeueBlobs", "SafeDequeueBlobs", "WeightedSampleDequeueBlobs")
not_inferred("its output is a RebatchingQueue object (no tensor)", "CreateRebatchingQueue")
not_inferred("its input 0 is a RebatchingQueue object and it writes no blob", "EnqueueRebatchingQueue",
             "CloseRebatchingQueue")
not_inferred("the dequeued shapes are those of the elements queued (data); its input is a RebatchingQueue object",
             "DequeueRebatchingQueue")
