"""Static cost inference: Caffe2's ``workspace.GetOperatorCost(op, blobs)``.

``cost(op, ins)`` gives ``(flops, bytes_written, bytes_read)`` for an op of a type that has a cost
function (``register_cost``), from the shapes of its inputs (``ins``: ``shape_inference.Tensor``s,
one per op input), never from their values. Each function reproduces the ``CostInferenceFunction``
Caffe2's schema of that op type registered, quirks included (the file is named on each); the
output shapes it uses come from this package's shape functions (recurrent/_shape_*.py), which also
refuse inputs the op would refuse when run.

Bytes: Caffe2 multiplied element counts by ``sizeof(X.data_type())`` (the size of the enum, 4) in
most functions and by the element type's size in the others; blobs here are float32 or int32, so
both are 4 bytes per element. An op type without a function raises RuntimeError, as Caffe2's
"Cost inference function not defined".

Writing a function: ``@register_cost("Type", ...)`` on ``f(op, ins, outs)``; ``outs`` are the
inferred outputs (a ``Tensor`` or None each); ``f`` returns ``(flops, bytes_written, bytes_read)``.
"""

from .shape_inference import ShapeError, args, canonical_axis, size

_COST = {}
_BYTES = 4  # bytes per element: float32 / int32 (see the module docstring)


def register_cost(*op_types):
    """Decorator: ``f(op, ins, outs)`` gives the cost of ops of these types."""
    def deco(f):
        for t in op_types:
            if t in _COST:
                raise ValueError("cost inference: op type '%s' has a function already" % t)
            _COST[t] = f
        return f
    return deco


def registered():
    """The op types that have a cost function (sorted)."""
    return sorted(_COST)


def require(op_type):
    """The cost function of ``op_type``; RuntimeError naming the type when it has none."""
    f = _COST.get(op_type)
    if f is None:
        raise RuntimeError("GetOperatorCost: op type '%s' has no cost inference function (Caffe2: "
                           "\"Cost inference function not defined\"); the types with one: %s"
                           % (op_type, ", ".join(registered())))
    return f


def cost(op, ins, outs):
    """``(flops, bytes_written, bytes_read)`` of ``op`` on inputs ``ins`` with inferred ``outs``."""
    flops, written, read = require(op.type)(op, ins, outs)
    return (int(flops), int(written), int(read))


def _n(t):
    return size(t.shape)


def _need(op, outs, k):
    if outs[k] is None:
        raise ShapeError("%s: the shape of output %d '%s' cannot be inferred, and the cost needs it"
                         % (op.type, k, op.output[k]))
    return outs[k]


def _pointwise(ops_per_point, ins):
    """caffe2/core/operator_schema.h PointwiseCostInference<OpsPerPoint>: input 0's elements times
    OpsPerPoint flops and bytes written (whatever the output's size, so a broadcast B that makes
    the output larger than A is not counted), every input's elements read."""
    n0 = _n(ins[0])
    return n0 * ops_per_point, n0 * _BYTES, sum(_n(t) for t in ins) * _BYTES


# caffe2/operators/elementwise_ops_schema.cc: PointwiseCostInference<1>
register_cost("Add", "Sub", "Mul", "Div")(lambda op, ins, outs: _pointwise(1, ins))
# caffe2/operators/relu_op.cc CostInferenceForRelu: PointwiseCostInference<0>
register_cost("Relu")(lambda op, ins, outs: _pointwise(0, ins))
# caffe2/operators/leaky_relu_op.cc, thresholded_relu_op.cc: PointwiseCostInference<2>;
# caffe2/operators/relu_n_op.cc CostInferenceForReluN: the same
register_cost("LeakyRelu", "ThresholdedRelu", "ReluN")(lambda op, ins, outs: _pointwise(2, ins))
# caffe2/operators/spatial_batch_norm_op.cc CostInferenceForSpatialBN: PointwiseCostInference<4>
register_cost("SpatialBN")(lambda op, ins, outs: _pointwise(4, ins))


@register_cost("Sum")
def _sum(op, ins, outs):
    """caffe2/operators/utility_ops.cc CostInferenceForSum: PointwiseCostInference<1> with the flops
    times (number of inputs - 1)."""
    flops, written, read = _pointwise(1, ins)
    return flops * (len(ins) - 1), written, read


@register_cost("Tanh", "Log")
def _nonlinear(op, ins, outs):
    """caffe2/operators/tanh_op.cc CostInferenceForTanh, log_op.cc CostInferenceForLog: one flop per
    element; the elements read and written once."""
    n = _n(ins[0])
    return n, n * _BYTES, n * _BYTES


@register_cost("DotProduct")
def _dot_product(op, ins, outs):
    """caffe2/operators/distance_op.cc CostInferenceForDotProduct: PointwiseCostInference<2>, with
    the bytes written those of the output (X's first dim, 1 for a 0-d X)."""
    flops, _, read = _pointwise(2, ins)
    rows = ins[0].shape[0] if len(ins[0].shape) > 0 else 1
    return flops, rows * _BYTES, read


@register_cost("LSTMUnit")
def _lstm_unit(op, ins, outs):
    """caffe2/operators/lstm_unit_op.cc CostInferenceForLSTMUnit: N and D from input 1 (the cell
    state, (1, N, D)); D N flops, D N elements read and written."""
    c = ins[1].shape
    if len(c) < 3:
        raise ShapeError("%s: Caffe2's cost reads dims 1 and 2 of the cell state '%s', which has shape %s"
                         % (op.type, op.input[1], list(c)))
    n, d = c[1], c[2]
    return d * n, d * n * _BYTES, d * n * _BYTES


@register_cost("BatchOneHot")
def _batch_one_hot(op, ins, outs):
    """caffe2/operators/one_hot_ops.cc CostInferenceForBatchOneHot: no flops; the three inputs
    read, the (N, len(values)) output written."""
    y = _need(op, outs, 0)
    return 0, _n(y) * _BYTES, sum(_n(t) for t in ins) * _BYTES


def _fc_mkn(op, ins, pretransposed):
    a = args(op)
    x, w = ins[0].shape, ins[1].shape
    ax = canonical_axis(a.get("axis", 1), len(x), op.type)
    axw = canonical_axis(a.get("axis_w", 1), len(w), op.type)
    m, k = size(x[:ax]), size(x[ax:])
    n = size(w[axw:]) if pretransposed else size(w[:axw])
    return m, k, n


@register_cost("FC", "FCTransposed")
def _fc(op, ins, outs):
    """caffe2/operators/fully_connected_op.cc CostInferenceForFC: M N (2 K + 1) flops (the bias add
    counted), X, W and b read, Y written."""
    m, k, n = _fc_mkn(op, ins, op.type == "FCTransposed")
    return m * n * (2 * k + 1), m * n * _BYTES, (k * (m + n) + n) * _BYTES


@register_cost("FCGradient", "FCTransposedGradient")
def _fc_grad(op, ins, outs):
    """caffe2/operators/fully_connected_op.cc CostInferenceForFCGradient: M N (2 K + 1) flops for dW
    and db, 2 M N K more for dX; dW, db (and dX) written; bytes read not counted (0). Caffe2 bound
    it with pretransposed_weight=false for FCTransposedGradient too, so N is W's leading dims for
    both."""
    m, k, n = _fc_mkn(op, ins, False)
    flops = m * n * (2 * k + 1)
    written = (_n(ins[1]) + n) * _BYTES
    if len(op.output) == 3:
        flops += 2 * m * n * k
        written += _n(ins[0]) * _BYTES
    return flops, written, 0


def _nhwc(op):
    return args(op).get("order", "NCHW") == "NHWC"


@register_cost("Conv", "Conv2D", "Conv3D")
def _conv(op, ins, outs):
    """caffe2/operators/conv_pool_op_base.h CostInferenceForConv (registered in conv_op.cc for Conv,
    Conv2D and Conv3D; not Conv1D): 2 N Y_spatial kernel C_in_per_group M flops (groups ignored:
    C_in is the filter's channel dim), X, W and b read, Y written."""
    x, w = ins[0].shape, ins[1].shape
    y = _need(op, outs, 0).shape
    nhwc = _nhwc(op)
    nd = len(x) - 2 if len(x) in (4, 5) else 1  # Caffe2: 5 dims 3-D, 4 dims 2-D, else 1-D
    y_sp = y[1:1 + nd] if nhwc else y[2:2 + nd]
    k_sp = w[1:1 + nd] if nhwc else w[2:2 + nd]
    cin = w[-1] if nhwc else w[1]
    cout = w[0]
    flops = x[0] * size(y_sp) * size(k_sp) * cin * cout * 2
    bias = _n(ins[2]) if len(ins) > 2 else 0
    return flops, x[0] * cout * size(y_sp) * _BYTES, (_n(ins[0]) + _n(ins[1]) + bias) * _BYTES


@register_cost("ConvGradient")
def _conv_grad(op, ins, outs):
    """caffe2/operators/conv_gradient_op.cc CostInferenceForConvGradient (ConvGradient only): 2 N M
    kernel C image flops for dfilter, N M image more for dbias, 2 N M kernel C image more for dX
    (C: all of X's channels); X, filter and dY read; the outputs written."""
    x, w, dy = ins[0].shape, ins[1].shape, ins[2].shape
    nhwc = _nhwc(op)
    no_bias = args(op).get("no_bias", 0)
    n, m = x[0], w[0]
    c = x[-1] if nhwc else x[1]
    image = size(dy[1:-1]) if nhwc else size(dy[2:])
    kernel = size(w[1:-1]) if nhwc else size(w[2:])
    flops = n * 2 * m * kernel * c * image
    if not no_bias:
        flops += n * m * image
    if len(op.output) == 3 or (no_bias and len(op.output) == 2):
        flops += n * 2 * m * kernel * c * image
    written = sum(_n(_need(op, outs, i)) for i in range(len(op.output))) * _BYTES
    return flops, written, (_n(ins[0]) + _n(ins[1]) + _n(ins[2])) * _BYTES


@register_cost("BatchMatMul")
def _batch_matmul(op, ins, outs):
    """caffe2/operators/batch_matmul_op.cc CostInferenceForBatchMatMul: 2 K flops per element of Y,
    K being A's last dim (its second last with trans_a); A and B read, Y written."""
    a = ins[0].shape
    y = _need(op, outs, 0)
    trans_a = args(op).get("trans_a", 0)
    if len(a) < (2 if trans_a else 1):
        raise ShapeError("%s: Caffe2's cost reads dim %d of A '%s', which has shape %s"
                         % (op.type, len(a) - 2, op.input[0], list(a)))
    k = a[-2] if trans_a else a[-1]
    return 2 * _n(y) * k, _n(y) * _BYTES, (_n(ins[0]) + _n(ins[1])) * _BYTES


@register_cost("Concat")
def _concat(op, ins, outs):
    """Caffe2's Concat cost (caffe2/operators/concat_split_op.cc CostInferenceForConcat, as its
    tests caffe2/python/operator_test/concat_op_cost_test.py pin it): no flops; every input read;
    the output and the int32 split_info (one per input) written."""
    y = _need(op, outs, 0)
    written = _n(y) * _BYTES + (len(ins) * 4 if len(op.output) > 1 else 0)
    return 0, written, sum(_n(t) for t in ins) * _BYTES


@register_cost("Split")
def _split(op, ins, outs):
    """Caffe2's Split cost (caffe2/operators/concat_split_op.cc, as its tests
    caffe2/python/operator_test/split_op_cost_test.py pin it): no flops; the input (and the split
    tensor) read; the input's elements written."""
    return 0, _n(ins[0]) * _BYTES, sum(_n(t) for t in ins) * _BYTES


def _sparse_lengths(op, ins, use_weight):
    """caffe2/operators/segment_reduction_op.cc CostInferenceForSparseLengths: D flops per index
    (2 D weighted), each index's row and the index read, the lengths read (and each index's weight);
    bytes written not counted (0). Nothing for an empty DATA."""
    data, indices, lengths = ins[0].shape, ins[1 + use_weight], ins[2 + use_weight].shape
    if len(data) == 0 or len(lengths) == 0:
        raise ShapeError("%s: DATA and LENGTHS need at least 1 dimension" % op.type)
    if data[0] == 0:
        return 0, 0, 0
    d = size(data[1:])
    k = _n(indices)
    flops = k * d
    read = k * (d * _BYTES + _BYTES) + lengths[0] * _BYTES
    if use_weight:
        flops += k * d
        read += k * _BYTES
    return flops, 0, read


register_cost("SparseLengthsSum", "SparseLengthsMean")(
    lambda op, ins, outs: _sparse_lengths(op, ins, False))
register_cost("SparseLengthsWeightedSum")(lambda op, ins, outs: _sparse_lengths(op, ins, True))


@register_cost("Adagrad")
def _adagrad(op, ins, outs):
    """caffe2/sgd/adagrad_op.cc CostInferenceForAdagrad: 10 flops per element of GRAD (G); written
    4 G + 4 (Caffe2's ``G * param_size + moment_size``: the moment's bytes counted once, not per
    element), plus 4 G for the EFFECTIVE_LR output and 4 G more for UPDATE; read the bytes written
    plus 8 G (GRAD, and LR counted per element)."""
    g = _n(ins[2])
    written = g * _BYTES + _BYTES
    if len(op.output) == 3:
        written += g * _BYTES
    elif len(op.output) == 4:
        written += g * 2 * _BYTES
    return 10 * g, written, written + g * 2 * _BYTES


@register_cost("SparseAdagrad")
def _sparse_adagrad(op, ins, outs):
    """caffe2/sgd/adagrad_op.cc CostInferenceForSparseAdagrad: 7 flops per element of GRAD (G);
    written 8 G (PARAM's and MOMENT's rows); read the bytes written plus GRAD and INDICES."""
    g, n = _n(ins[3]), _n(ins[2])
    written = g * 2 * _BYTES
    return 7 * g, written, written + g * _BYTES + n * _BYTES


@register_cost("RowWiseSparseAdagrad")
def _rowwise_sparse_adagrad(op, ins, outs):
    """caffe2/sgd/adagrad_op.cc CostInferenceForRowWiseSparseAdagrad, by the block B = |GRAD| // N
    (N: the indices): nothing for N = 0; for B = 1, 9 N flops, 8 N bytes written, read the bytes
    written plus GRAD, INDICES and LR per index (12 N); else N (5 + 8 B) flops, written a moment
    element and a row of B per index, read the bytes written plus LR per index and GRAD and PARAM
    twice (4 N + 16 N B; INDICES not counted). The optional COUNTER input is not counted."""
    n = _n(ins[2])
    if n == 0:
        return 0, 0, 0
    b = _n(ins[3]) // n
    if b == 1:
        written = n * 2 * _BYTES
        return 9 * n, written, written + n * 3 * _BYTES
    written = n * _BYTES + n * b * _BYTES
    return n * (5 + 8 * b), written, written + n * _BYTES + 2 * n * b * 2 * _BYTES
