"""workspace.GetOperatorCost: (flops, bytes_written, bytes_read) by Caffe2's formulas.

Every expected value is computed here from the shapes with Caffe2's formula written out again
(the file each comes from is named); every element is 4 bytes (float32 / int32 blobs)."""

import math

import numpy as np
import pytest

from recurrent import core, errors, workspace
from recurrent import cost_inference


def _feed(**arrays):
    for k, v in arrays.items():
        workspace.FeedBlob(k, np.asarray(v))


def _cost(op):
    return workspace.GetOperatorCost(op, op.input)


def _n(shape):
    return math.prod(shape)


def _rand(*shape):
    return np.random.rand(*shape).astype(np.float32)


def test_every_cost_type_is_a_registered_operator():
    assert set(cost_inference.registered()) <= set(workspace.RegisteredOperators())


def test_returns_a_plain_tuple_of_ints():
    _feed(A=_rand(2, 3), B=_rand(2, 3))
    c = _cost(core.CreateOperator("Add", ["A", "B"], ["C"]))
    assert type(c) is tuple and len(c) == 3 and all(type(v) is int for v in c)


# caffe2/core/operator_schema.h PointwiseCostInference<k>: flops = k * |in0|,
# bytes_written = 4 |in0|, bytes_read = 4 * sum |in_i|
def _pointwise(k, shapes):
    return k * _n(shapes[0]), 4 * _n(shapes[0]), 4 * sum(_n(s) for s in shapes)


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("a,b,kw", [((2, 3), (2, 3), {}), ((4, 3, 5), (5,), {}),
                                    ((4, 3, 5), (3,), {"broadcast": 1, "axis": 1}),
                                    ((3, 1), (1, 4), {}), ((1, 4), (3, 1), {})])
def test_binary_elementwise(op_type, a, b, kw):
    # caffe2/operators/elementwise_ops_schema.cc: PointwiseCostInference<1>; A's size counts,
    # even when broadcasting B makes the output larger
    _feed(A=_rand(*a) + 1, B=_rand(*b) + 1)
    op = core.CreateOperator(op_type, ["A", "B"], ["C"], **kw)
    assert _cost(op) == _pointwise(1, [a, b])
    workspace.RunOperatorOnce(op)  # the inputs are ones the op takes


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4), (0, 3)])
@pytest.mark.parametrize("op_type,k,kw", [("Relu", 0, {}),           # relu_op.cc
                                          ("LeakyRelu", 2, {}),      # leaky_relu_op.cc
                                          ("ThresholdedRelu", 2, {}),  # thresholded_relu_op.cc
                                          ("ReluN", 2, {"n": 6.0})])   # relu_n_op.cc
def test_unary_pointwise(shape, op_type, k, kw):
    _feed(X=_rand(*shape))
    assert _cost(core.CreateOperator(op_type, ["X"], ["Y"], **kw)) == _pointwise(k, [shape])


@pytest.mark.parametrize("op_type", ["Tanh", "Log"])
@pytest.mark.parametrize("shape", [(7,), (3, 4, 2)])
def test_tanh_log(op_type, shape):
    # caffe2/operators/tanh_op.cc CostInferenceForTanh, log_op.cc CostInferenceForLog
    _feed(X=_rand(*shape) + 0.5)
    n = _n(shape)
    assert _cost(core.CreateOperator(op_type, ["X"], ["Y"])) == (n, 4 * n, 4 * n)


@pytest.mark.parametrize("k,shape", [(1, (3, 4)), (2, (3, 4)), (3, (2, 5, 2))])
def test_sum(k, shape):
    # caffe2/operators/utility_ops.cc CostInferenceForSum: PointwiseCostInference<1>, flops * (k - 1)
    names = ["x%d" % i for i in range(k)]
    for nm in names:
        _feed(**{nm: _rand(*shape)})
    flops, w, r = _pointwise(1, [shape] * k)
    assert _cost(core.CreateOperator("Sum", names, ["y"])) == (flops * (k - 1), w, r)


@pytest.mark.parametrize("order,x", [("NCHW", (2, 3, 4, 5)), ("NHWC", (2, 4, 5, 3))])
def test_spatial_bn(order, x):
    # caffe2/operators/spatial_batch_norm_op.cc CostInferenceForSpatialBN: PointwiseCostInference<4>
    c = x[1] if order == "NCHW" else x[3]
    _feed(X=_rand(*x), s=_rand(c), b=_rand(c), m=_rand(c), v=_rand(c) + 1)
    op = core.CreateOperator("SpatialBN", ["X", "s", "b", "m", "v"], ["Y"], is_test=1, order=order)
    assert _cost(op) == _pointwise(4, [x, (c,), (c,), (c,), (c,)])


@pytest.mark.parametrize("shape", [(4,), (3, 5)])
def test_dot_product(shape):
    # caffe2/operators/distance_op.cc CostInferenceForDotProduct: PointwiseCostInference<2>,
    # bytes_written = 4 * X.dims(0)
    _feed(X=_rand(*shape), Y=_rand(*shape))
    flops, _, r = _pointwise(2, [shape, shape])
    assert _cost(core.CreateOperator("DotProduct", ["X", "Y"], ["Z"])) == (flops, 4 * shape[0], r)


@pytest.mark.parametrize("n,d", [(1, 1), (3, 4)])
def test_lstm_unit(n, d):
    # caffe2/operators/lstm_unit_op.cc CostInferenceForLSTMUnit: N, D from input 1 (1, N, D);
    # flops = D N, bytes read = bytes written = 4 D N
    _feed(h=_rand(1, n, d), c=_rand(1, n, d), g=_rand(1, n, 4 * d),
          L=np.full(n, 2, np.int32), t=np.array([0], np.int32))
    op = core.CreateOperator("LSTMUnit", ["h", "c", "g", "L", "t"], ["h2", "c2"])
    assert _cost(op) == (d * n, 4 * d * n, 4 * d * n)


def test_batch_one_hot():
    # caffe2/operators/one_hot_ops.cc CostInferenceForBatchOneHot: no flops, the inputs read,
    # the (N, len(values)) output written
    _feed(X=np.array([[1, 2], [3, 4], [1, 3]], np.int32), L=np.array([2, 3], np.int32),
          V=np.array([1, 2, 3, 4, 5], np.int32))
    assert _cost(core.CreateOperator("BatchOneHot", ["X", "L", "V"], ["Y"])) == (
        0, 4 * 3 * 5, 4 * (6 + 2 + 5))


def _fc_expect(x, w, axis, axis_w, pretransposed):
    # caffe2/operators/fully_connected_op.cc CostInferenceForFC
    m, k = _n(x[:axis]), _n(x[axis:])
    n = _n(w[axis_w:]) if pretransposed else _n(w[:axis_w])
    return m * n * (2 * k + 1), m * n * 4, (k * (m + n) + n) * 4


@pytest.mark.parametrize("x,w,axis,axis_w", [((4, 3), (5, 3), 1, 1), ((2, 3, 4), (6, 4), 2, 1),
                                             ((2, 3, 4), (6, 12), 1, 1), ((5, 6), (2, 3, 6), 1, 2)])
def test_fc(x, w, axis, axis_w):
    n = _n(w[:axis_w])
    _feed(X=_rand(*x), W=_rand(*w), b=_rand(n))
    op = core.CreateOperator("FC", ["X", "W", "b"], ["Y"], axis=axis, axis_w=axis_w)
    assert _cost(op) == _fc_expect(x, w, axis, axis_w, False)


def test_fc_transposed():
    _feed(X=_rand(4, 3), W=_rand(3, 5), b=_rand(5))
    op = core.CreateOperator("FCTransposed", ["X", "W", "b"], ["Y"])
    assert _cost(op) == _fc_expect((4, 3), (3, 5), 1, 1, True)


@pytest.mark.parametrize("op_type,w", [("FCGradient", (5, 3)), ("FCTransposedGradient", (3, 5))])
@pytest.mark.parametrize("with_dx", [False, True])
def test_fc_gradient(op_type, w, with_dx):
    # caffe2/operators/fully_connected_op.cc CostInferenceForFCGradient, bound with
    # pretransposed_weight=false for both types: N = W's leading dims; bytes_read not counted
    x = (4, 3)
    dy_n = 5
    _feed(X=_rand(*x), W=_rand(*w), dY=_rand(4, dy_n))
    outs = ["dW", "db"] + (["dX"] if with_dx else [])
    m, k, n = 4, 3, w[0]
    flops = m * n * (2 * k + 1) + (2 * m * n * k if with_dx else 0)
    written = (_n(w) + n + (_n(x) if with_dx else 0)) * 4
    assert _cost(core.CreateOperator(op_type, ["X", "W", "dY"], outs)) == (flops, written, 0)


def _conv_out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


@pytest.mark.parametrize("op_type", ["Conv", "Conv2D"])
@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("bias,group", [(True, 1), (False, 1), (True, 2)])
def test_conv_2d(op_type, order, bias, group):
    # caffe2/operators/conv_pool_op_base.h CostInferenceForConv: flops = 2 N Yh Yw kh kw C_in M with
    # C_in the filter's channel dim (C / group); read X, W, b; written N M Yh Yw
    n, c, h, wd, m, k, stride, pad = 2, 4, 7, 6, 6, 3, 2, 1
    ci = c // group
    if order == "NCHW":
        x, w = (n, c, h, wd), (m, ci, k, k)
    else:
        x, w = (n, h, wd, c), (m, k, k, ci)
    ins = {"X": _rand(*x), "W": _rand(*w)}
    if bias:
        ins["b"] = _rand(m)
    _feed(**ins)
    op = core.CreateOperator(op_type, list(ins), ["Y"], kernel=k, stride=stride, pad=pad, order=order,
                             group=group)
    yh, yw = _conv_out(h, k, stride, pad), _conv_out(wd, k, stride, pad)
    expect = (2 * n * yh * yw * k * k * ci * m, 4 * n * m * yh * yw,
              4 * (_n(x) + _n(w) + (m if bias else 0)))
    assert _cost(op) == expect
    workspace.RunOperatorOnce(op)
    assert workspace.FetchBlob("Y").nbytes == expect[1]


def test_conv_3d_and_1d():
    n, c, m = 1, 2, 3
    _feed(X=_rand(n, c, 4, 5, 6), W=_rand(m, c, 2, 3, 3))
    op = core.CreateOperator("Conv3D", ["X", "W"], ["Y"], kernels=[2, 3, 3])
    yt, yh, yw = 3, 3, 4
    assert _cost(op) == (2 * n * yt * yh * yw * 2 * 3 * 3 * c * m, 4 * n * m * yt * yh * yw,
                         4 * (n * c * 4 * 5 * 6 + m * c * 18))
    # conv_op.cc registered no cost function for Conv1D, while Conv of a 1-D image has one
    _feed(X1=_rand(n, c, 9), W1=_rand(m, c, 4))
    with pytest.raises(RuntimeError, match="Conv1D.*no cost inference function"):
        workspace.GetOperatorCost(core.CreateOperator("Conv1D", ["X1", "W1"], ["Y1"], kernels=[4]),
                                  ["X1", "W1"])
    op = core.CreateOperator("Conv", ["X1", "W1"], ["Y1"], kernels=[4])
    assert _cost(op) == (2 * n * 6 * 4 * c * m, 4 * n * m * 6, 4 * (n * c * 9 + m * c * 4))


def test_caffe2_workspace_test_conv2d_port():
    # Caffe2's workspace_test.testGetOperatorCost, with a filter whose channels match X (Caffe2's
    # test gave a (1, 1, 3, 3) filter for 8 channels, which the op refuses here: see the README)
    op = core.CreateOperator("Conv2D", ["X", "W"], ["Y"], stride_h=1, stride_w=1, pad_t=1, pad_l=1,
                             pad_b=1, pad_r=1, kernel=3)
    _feed(X=np.zeros((1, 8, 8, 8)), W=np.zeros((1, 8, 3, 3)))
    flops, _, _ = workspace.GetOperatorCost(op.SerializeToString(), ["X", "W"])
    assert flops == 1152 * 8


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("outs,no_bias", [(["dW", "db", "dX"], 0), (["dW", "db"], 0),
                                          (["dW", "dX"], 1), (["dW"], 1)])
def test_conv_gradient(order, outs, no_bias):
    # caffe2/operators/conv_gradient_op.cc CostInferenceForConvGradient (C: all of X's channels)
    n, c, h, wd, m, k = 2, 3, 5, 4, 4, 3
    x, w = ((n, c, h, wd), (m, c, k, k)) if order == "NCHW" else ((n, h, wd, c), (m, k, k, c))
    yh, yw = h - k + 1, wd - k + 1
    dy = (n, m, yh, yw) if order == "NCHW" else (n, yh, yw, m)
    _feed(X=_rand(*x), W=_rand(*w), dY=_rand(*dy))
    op = core.CreateOperator("ConvGradient", ["X", "W", "dY"], outs, kernel=k, order=order,
                             no_bias=no_bias)
    image, kernel = yh * yw, k * k
    flops = n * 2 * m * kernel * c * image
    if not no_bias:
        flops += n * m * image
    if len(outs) == 3 or (no_bias and len(outs) == 2):
        flops += n * 2 * m * kernel * c * image
    sizes = {"dW": _n(w), "db": m, "dX": _n(x)}
    written = 4 * sum(sizes[o] for o in outs)
    assert _cost(op) == (flops, written, 4 * (_n(x) + _n(w) + _n(dy)))


@pytest.mark.parametrize("a,b,kw,y", [((2, 3, 4), (2, 4, 5), {}, (2, 3, 5)),
                                      ((2, 4, 3), (2, 4, 5), {"trans_a": 1}, (2, 3, 5)),
                                      ((2, 3, 4), (2, 5, 4), {"trans_b": 1}, (2, 3, 5)),
                                      ((3, 4), (6, 4, 2), {"broadcast": 1}, (6, 3, 2))])
def test_batch_matmul(a, b, kw, y):
    # caffe2/operators/batch_matmul_op.cc CostInferenceForBatchMatMul: flops = 2 |Y| K
    _feed(A=_rand(*a), B=_rand(*b))
    k = a[-2] if kw.get("trans_a") else a[-1]
    op = core.CreateOperator("BatchMatMul", ["A", "B"], ["Y"], **kw)
    assert _cost(op) == (2 * _n(y) * k, 4 * _n(y), 4 * (_n(a) + _n(b)))


def _nbytes(names):
    return sum(workspace.FetchBlob(b).nbytes for b in names)


@pytest.mark.parametrize("kw,outs", [({}, 3), ({"axis": 0}, 2), ({"axis": 1, "add_axis": 1}, 3),
                                     ({"axis": 0, "split": [1, 1]}, 2)])
def test_split(kw, outs):
    # Caffe2's caffe2/python/operator_test/split_op_cost_test.py: no flops, the inputs read,
    # the outputs (the input's elements) written
    _feed(input=np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    op = core.CreateOperator("Split", ["input"], ["o%d" % i for i in range(outs)], **kw)
    workspace.RunOperatorOnce(op)
    assert _cost(op) == (0, _nbytes(op.output), _nbytes(op.input)) == (0, 24, 24)


def test_split_then_concat():
    # Caffe2's concat_op_cost_test.py test_split_then_concat, values as there
    _feed(input=np.array([[1, 2, 3], [4, 5, 6]], np.int32), split=np.array([1, 1, 1], np.int32))
    split = core.CreateOperator("Split", ["input", "split"], ["o1", "o2", "o3"], axis=1, add_axis=1)
    workspace.RunOperatorOnce(split)
    concat = core.CreateOperator("Concat", ["o1", "o2", "o3"], ["output", "split_info"], axis=1,
                                 add_axis=1)
    workspace.RunOperatorOnce(concat)
    assert workspace.GetOperatorCost(split, split.input) == (0, 24, 36)
    assert workspace.GetOperatorCost(concat, concat.input) == (0, 36, 24)


@pytest.mark.parametrize("shapes,kw", [([(2, 3), (2, 1)], {}), ([(2, 3), (4, 3), (1, 3)], {"axis": 0}),
                                       ([(2, 2), (2, 2)], {"axis": 1, "add_axis": 1})])
def test_concat(shapes, kw):
    # Caffe2's concat_op_cost_test.py: no flops, the inputs read, the output and the int32
    # split_info written
    names = ["x%d" % i for i in range(len(shapes))]
    for nm, s in zip(names, shapes):
        _feed(**{nm: _rand(*s)})
    op = core.CreateOperator("Concat", names, ["output", "split_info"], **kw)
    workspace.RunOperatorOnce(op)
    assert _cost(op) == (0, _nbytes(op.output), _nbytes(op.input))


@pytest.mark.parametrize("op_type,weighted", [("SparseLengthsSum", False), ("SparseLengthsMean", False),
                                              ("SparseLengthsWeightedSum", True)])
@pytest.mark.parametrize("data", [(6, 4), (6, 2, 3), (0, 3)])
def test_sparse_lengths(op_type, weighted, data):
    # caffe2/operators/segment_reduction_op.cc CostInferenceForSparseLengths: flops = |I| D (x2
    # weighted), read = |I| (4 D + 4) + 4 M (+ 4 |I| weighted), written not counted
    n_idx, m = (5, 2) if data[0] else (0, 2)
    idx = np.arange(n_idx, dtype=np.int32) % max(data[0], 1)
    lengths = np.array([n_idx - n_idx // 2, n_idx // 2], np.int32)
    ins = {"D": _rand(*data)}
    if weighted:
        ins["w"] = _rand(n_idx)
    ins.update(I=idx, L=lengths)
    _feed(**ins)
    op = core.CreateOperator(op_type, list(ins), ["Y"])
    if data[0] == 0:
        expect = (0, 0, 0)
    else:
        d = _n(data[1:])
        flops = n_idx * d * (2 if weighted else 1)
        read = n_idx * (d * 4 + 4) + m * 4 + (n_idx * 4 if weighted else 0)
        expect = (flops, 0, read)
    assert _cost(op) == expect
    workspace.RunOperatorOnce(op)



# ---------------------------------------------------------------- the Adagrad family
@pytest.mark.parametrize("shape", [(3, 5), (7,), (2, 3, 4)])
@pytest.mark.parametrize("n_out", [2, 3, 4])
def test_adagrad(shape, n_out):
    # caffe2/sgd/adagrad_op.cc CostInferenceForAdagrad: flops = 10 G (G = |GRAD|); written =
    # 4 G + 4 (the moment's 4 bytes added once: Caffe2's `G * param_size + moment_size`), + 4 G
    # with EFFECTIVE_LR, + 8 G with UPDATE too; read = written + 4 G (GRAD) + 4 G (LR per element)
    _feed(p=_rand(*shape), h=_rand(*shape), g=_rand(*shape), lr=np.array([0.1], np.float32))
    op = core.CreateOperator("Adagrad", ["p", "h", "g", "lr"], ["p", "h", "elr", "u"][:n_out])
    g = _n(shape)
    written = 4 * g + 4 + {2: 0, 3: 4 * g, 4: 8 * g}[n_out]
    assert _cost(op) == (10 * g, written, written + 8 * g)
    workspace.RunOperatorOnce(op)


@pytest.mark.parametrize("param,idx", [((6, 4), (3,)), ((5, 2, 3), (2, 4)), ((6,), (4,))])
def test_sparse_adagrad(param, idx):
    # caffe2/sgd/adagrad_op.cc CostInferenceForSparseAdagrad: flops = 7 G (G = |GRAD| =
    # |INDICES| * row size); written = 8 G; read = written + 4 G (GRAD) + 4 |INDICES|
    grad = idx + param[1:]
    _feed(p=_rand(*param), h=_rand(*param), i=np.arange(_n(idx), dtype=np.int32).reshape(idx) % param[0],
          g=_rand(*grad), lr=np.array([0.1], np.float32))
    op = core.CreateOperator("SparseAdagrad", ["p", "h", "i", "g", "lr"], ["p", "h"])
    g, n = _n(grad), _n(idx)
    assert _cost(op) == (7 * g, 8 * g, 8 * g + 4 * g + 4 * n)
    workspace.RunOperatorOnce(op)


@pytest.mark.parametrize("param,idx", [((6, 4), (3,)), ((5, 2, 3), (4,)), ((6,), (4,)),
                                       ((6, 0), (3,)), ((6, 4), (0,))])
@pytest.mark.parametrize("counter", [False, True])
def test_rowwise_sparse_adagrad(param, idx, counter):
    # caffe2/sgd/adagrad_op.cc CostInferenceForRowWiseSparseAdagrad, by B = |GRAD| // N (N =
    # |INDICES|): (0, 0, 0) for N = 0; B = 1: (9 N, 8 N, 8 N + 12 N) (GRAD, INDICES, LR per
    # index); else (N (5 + 8 B), 4 N + 4 N B, written + 4 N + 2 N B (4 + 4)) (INDICES not
    # counted); B = 0 (empty rows) takes the second branch; the COUNTER input is not counted
    grad = idx + param[1:]
    ins = dict(p=_rand(*param), h=_rand(param[0]), i=np.arange(_n(idx), dtype=np.int32) % param[0],
               g=_rand(*grad), lr=np.array([0.1], np.float32))
    if counter:
        ins["c"] = _rand(param[0])
    _feed(**ins)
    op = core.CreateOperator("RowWiseSparseAdagrad", list(ins), ["p", "h"])
    n = _n(idx)
    if n == 0:
        expect = (0, 0, 0)
    elif _n(grad) // n == 1:
        expect = (9 * n, 8 * n, 8 * n + 12 * n)
    else:
        b = _n(grad) // n
        written = 4 * n + 4 * n * b
        expect = (n * (5 + 8 * b), written, written + 4 * n + 2 * n * b * 8)
    assert _cost(op) == expect
    workspace.RunOperatorOnce(op)


def test_rowwise_sparse_adagrad_values():
    # the formula above on (6, 4) and 3 indices, written out: B = 4
    _feed(p=_rand(6, 4), h=_rand(6), i=np.array([0, 2, 5], np.int32), g=_rand(3, 4),
          lr=np.array([0.1], np.float32))
    op = core.CreateOperator("RowWiseSparseAdagrad", ["p", "h", "i", "g", "lr"], ["p", "h"])
    assert _cost(op) == (3 * 37, 60, 60 + 12 + 192)


@pytest.mark.parametrize("op_type,ins,shapes", [
    ("Adagrad", ["p", "h", "g", "lr"], {"h": (3, 4)}),
    ("Adagrad", ["p", "h", "g", "lr"], {"g": (3, 5)}),
    ("Adagrad", ["p", "h", "g", "lr"], {"lr": (2,)}),
    ("SparseAdagrad", ["p", "h", "i", "g", "lr"], {"g": (4, 3)}),
    ("SparseAdagrad", ["p", "h", "i", "g", "lr"], {"h": (3, 5)}),
    ("RowWiseSparseAdagrad", ["p", "h", "i", "g", "lr"], {"h": (3,)}),
    ("RowWiseSparseAdagrad", ["p", "h", "i", "g", "lr"], {"g": (2, 5)}),
])
def test_adagrad_family_refuses_bad_shapes(op_type, ins, shapes):
    # PARAM (5, 3), 2 indices; one input changed to a shape the op refuses
    base = {"p": (5, 3), "h": (5, 3) if op_type != "RowWiseSparseAdagrad" else (5,),
            "g": (5, 3) if op_type == "Adagrad" else (2, 3), "lr": (1,)}
    base.update(shapes)
    _feed(i=np.array([0, 3], np.int32), **{k: _rand(*v) for k, v in base.items()})
    outs = ["p", "h"]
    with pytest.raises(errors.ValueError, match="GetOperatorCost: op %s refuses its inputs" % op_type):
        _cost(core.CreateOperator(op_type, ins, outs))


def test_decay_adagrad_has_no_cost_function():
    # caffe2/sgd/decay_adagrad_op.cc registered no CostInferenceFunction for DecayAdagrad
    _feed(p=_rand(3), m1=_rand(3), m2=_rand(3), g=_rand(3), lr=np.array([0.1], np.float32),
          it=np.array([0], np.int32))
    op = core.CreateOperator("DecayAdagrad", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"])
    with pytest.raises(RuntimeError, match="op type 'DecayAdagrad' has no cost inference function"):
        _cost(op)


# ---------------------------------------------------------------- errors
def test_op_without_cost_function():
    _feed(X=_rand(3))
    with pytest.raises(RuntimeError, match="op type 'Sigmoid' has no cost inference function"):
        workspace.GetOperatorCost(core.CreateOperator("Sigmoid", ["X"], ["Y"]), ["X"])


def test_unregistered_op_type():
    _feed(X=_rand(3))
    with pytest.raises(KeyError, match="operator type 'NoSuchOp' is not registered") as e:
        workspace.GetOperatorCost(core.CreateOperator("NoSuchOp", ["X"], ["Y"]), ["X"])
    assert isinstance(e.value, RuntimeError)


def test_missing_blob():
    _feed(A=_rand(3))
    with pytest.raises(errors.KeyError, match="blob 'B' does not exist"):
        workspace.GetOperatorCost(core.CreateOperator("Add", ["A", "B"], ["C"]), ["A", "B"])


def test_blob_without_tensor():
    _feed(A=_rand(3))
    workspace.CreateBlob("B")
    with pytest.raises(errors.TypeError, match="blob 'B' holds no tensor"):
        workspace.GetOperatorCost(core.CreateOperator("Add", ["A", "B"], ["C"]), ["A", "B"])


def test_wrong_count_of_blobs():
    _feed(A=_rand(3), B=_rand(3))
    op = core.CreateOperator("Add", ["A", "B"], ["C"])
    with pytest.raises(errors.ValueError, match="op Add has 2 inputs .* but 1 blobs"):
        workspace.GetOperatorCost(op, ["A"])
    with pytest.raises(TypeError, match="blobs must be a list"):
        workspace.GetOperatorCost(op, "A")
    with pytest.raises(TypeError, match="expects an OperatorDef"):
        workspace.GetOperatorCost("Add", ["A", "B"])


def test_inputs_the_op_refuses():
    _feed(X=_rand(4, 3), W=_rand(5, 2), b=_rand(5))
    with pytest.raises(errors.ValueError, match="GetOperatorCost: op FC refuses its inputs X \\[4, 3\\]"):
        workspace.GetOperatorCost(core.CreateOperator("FC", ["X", "W", "b"], ["Y"]), ["X", "W", "b"])


def test_workspace_usable_afterwards():
    _feed(A=_rand(2, 2), B=_rand(2, 2))
    op = core.CreateOperator("Add", ["A", "B"], ["C"])
    for bad in (["A"], ["A", "nope"]):
        with pytest.raises(RuntimeError):
            workspace.GetOperatorCost(op, bad)
    assert workspace.GetOperatorCost(op, ["A", "B"]) == (4, 16, 32)
    workspace.RunOperatorOnce(op)
    np.testing.assert_allclose(workspace.FetchBlob("C"), workspace.FetchBlob("A") + workspace.FetchBlob("B"))
    assert not workspace.HasBlob("nope")
