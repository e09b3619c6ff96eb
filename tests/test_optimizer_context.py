"""The Python pieces that let Caffe2's optimizer tests run with their imports changed:
``optimizer_context.UseOptimizer`` (a parameter's own optimizer, chosen where it is made),
``cnn.CNNModelHelper``, ``modeling.initializers`` (and brew.fc taking an initializer class),
``workspace.CreateBlob``, ``optimizer.get_param_device`` / ``_get_param_to_device``, AdamOptimizer's
``enableRAdam`` and the optimizers that are not provided (importable, NotImplementedError when made).
"""
import threading

import numpy as np
import pytest

from recurrent import brew, cnn, core, model_helper, optimizer, workspace
from recurrent.modeling import initializers
from recurrent.modeling import parameter_sharing as modeling_parameter_sharing
from recurrent.optimizer_context import DEFAULT_OPTIM, OptimizerContext, UseOptimizer
from recurrent import parameter_sharing


def lr_of(model, param):
    """The LearningRate base_lr that the update op of ``param`` reads (through its rate blob)."""
    producers = {o: op for op in model.net.Proto().op for o in op.output}
    for op in model.net.Proto().op:
        if op.type in ("WeightedSum", "Adagrad") and op.output and op.output[0] == param \
                and op.input[0] == param:
            rate = op.input[3]
            lr_op = producers[rate]
            assert lr_op.type == "LearningRate"
            return [a.f for a in lr_op.arg if a.name == "base_lr"][0], op.type
    raise AssertionError("no update of %s" % param)


# ---------------------------------------------------------------- UseOptimizer
def test_use_optimizer_by_tag_and_default():
    model = model_helper.ModelHelper(name="ctx")
    first = optimizer.SgdOptimizer(0.15)
    w_opt, b_opt = optimizer.SgdOptimizer(0.2), optimizer.AdagradOptimizer(alpha=0.3)
    with UseOptimizer(first):
        h = brew.fc(model, "x", "h", 4, 3)
    with UseOptimizer({"WEIGHT": w_opt, "BIAS": b_opt}):
        h2 = brew.fc(model, h, "h2", 3, 3)
    out = brew.fc(model, h2, "out", 3, 2)
    assert model.get_param_info("h_w").optimizer is first
    assert model.get_param_info("h_b").optimizer is first
    assert model.get_param_info("h2_w").optimizer is w_opt
    assert model.get_param_info("h2_b").optimizer is b_opt
    assert model.get_param_info("out_w").optimizer is None
    loss = model.net.AveragedLoss(model.net.SquaredL2Distance([out, "t"], "d"), "loss")
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, 0.11)
    assert lr_of(model, "h_w") == (pytest.approx(-0.15), "WeightedSum")
    assert lr_of(model, "h_b") == (pytest.approx(-0.15), "WeightedSum")
    assert lr_of(model, "h2_w") == (pytest.approx(-0.2), "WeightedSum")
    assert lr_of(model, "h2_b") == (pytest.approx(-0.3), "Adagrad")
    assert lr_of(model, "out_w") == (pytest.approx(-0.11), "WeightedSum")
    # and the net trains: the chosen optimizers run
    rng = np.random.default_rng(0)
    workspace.FeedBlob("x", rng.standard_normal((5, 4)).astype(np.float32))
    workspace.FeedBlob("t", rng.standard_normal((5, 2)).astype(np.float32))
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    workspace.RunNet(model.net)
    first_loss = float(workspace.FetchBlob("loss"))
    workspace.RunNet(model.net, 50)
    assert float(workspace.FetchBlob("loss")) < first_loss


def test_use_optimizer_nesting_and_exit():
    a, b, c = optimizer.SgdOptimizer(0.1), optimizer.SgdOptimizer(0.2), optimizer.SgdOptimizer(0.3)
    ctx = OptimizerContext.current()
    with UseOptimizer(a):
        with UseOptimizer({"BIAS": b}):
            assert ctx.get_optimizer(DEFAULT_OPTIM) is a and ctx.get_optimizer("BIAS") is b
            with UseOptimizer(c):
                assert ctx.get_optimizer(DEFAULT_OPTIM) is c
            assert ctx.get_optimizer(DEFAULT_OPTIM) is a
        assert not ctx.has_optimizer("BIAS")
    assert not ctx.has_optimizer(DEFAULT_OPTIM)
    with pytest.raises(KeyError, match="WEIGHT optimizer is not provided"):
        ctx.get_optimizer("WEIGHT")
    # an exception inside the block still pops the context
    with pytest.raises(RuntimeError):
        with UseOptimizer(a):
            raise RuntimeError("boom")
    assert not ctx.has_optimizer(DEFAULT_OPTIM)


def test_use_optimizer_is_per_thread():
    a = optimizer.SgdOptimizer(0.1)
    seen = []
    with UseOptimizer(a):
        def look():
            seen.append(OptimizerContext.current().has_optimizer(DEFAULT_OPTIM))
        t = threading.Thread(target=look)
        t.start()
        t.join()
        assert OptimizerContext.current().has_optimizer(DEFAULT_OPTIM)
    assert seen == [False]


def test_add_weight_decay_ignores_the_context():
    model = model_helper.ModelHelper(name="wd")
    with UseOptimizer(optimizer.SgdOptimizer(0.5)):
        out = brew.fc(model, "x", "y", 3, 2)
    loss = model.net.AveragedLoss(model.net.SquaredL2Distance([out, "t"], "d"), "loss")
    model.AddGradientOperators([loss])
    optimizer.add_weight_decay(model, 1e-4)
    decays = [op for op in model.net.Proto().op if op.type == "WeightedSum" and "wd_0_0" in op.input]
    assert [op.output[0] for op in decays] == ["y_w_grad"]


# ---------------------------------------------------------------- CNNModelHelper
def test_cnn_model_helper_old_api_trains_a_sparse_model():
    model = cnn.CNNModelHelper("NCHW", name="old")
    assert model.arg_scope["order"] == "NCHW" and model.order == "NCHW"
    w = model.param_init_net.ConstantFill([], "w", shape=[4], value=0.0)
    model.params.append(w)
    picked = model.net.Gather([w, "idx"], "picked")
    out = model.ReduceFrontSum(picked, "s")
    loss = model.AveragedLoss(model.SquaredL2Distance([out, "label"], "sq"), "loss")
    grads = model.AddGradientOperators([loss])
    assert isinstance(grads["w"], core.GradientSlice)
    optimizer.build_sgd(model, 0.1)
    workspace.CreateBlob("idx")
    workspace.CreateBlob("label")
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net, True)
    target = np.array([1.0, -2.0, 0.5, 3.0])
    rng = np.random.default_rng(1)
    for _ in range(400):
        idx = np.flatnonzero(rng.integers(0, 2, 4))
        if not idx.size:
            continue
        workspace.FeedBlob("idx", idx.astype(np.int64))
        workspace.FeedBlob("label", np.array(target[idx].sum(), np.float32))
        workspace.RunNet(model.net)
    np.testing.assert_allclose(workspace.FetchBlob("w"), target, atol=1e-2)


def test_cnn_model_helper_methods():
    model = cnn.CNNModelHelper(order="NHWC", use_cudnn=False)
    assert model.name == "CNN"
    fc = model.FC("x", "fc", 3, 2)
    relu = model.Relu(fc, "relu")
    sm = model.Softmax(relu, "sm")
    model.Iter("it")
    assert [op.type for op in model.net.Proto().op] == ["FC", "Relu", "Softmax", "Iter"]
    assert [str(p) for p in model.params] == ["fc_w", "fc_b"]
    assert model.XavierInit == ("XavierFill", {})
    assert model.ConstantInit(2.0) == ("ConstantFill", {"value": 2.0})
    workspace.FeedBlob("x", np.ones((2, 3), np.float32))
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    np.testing.assert_allclose(workspace.FetchBlob(str(sm)).sum(axis=1), [1.0, 1.0], rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot understand the CNN storage order NCWH"):
        cnn.CNNModelHelper("NCWH")
    for name in ("GroupConv_Deprecated", "MaxPoolWithIndex", "ImageInput", "PackedFC"):
        with pytest.raises(AttributeError, match="CNNModelHelper.%s is not provided" % name):
            getattr(model, name)


def test_brew_prelu_and_cnn_prelu(rng):
    """brew.prelu: a slope parameter <out>_slope of num_channels (ConstantFill 0.25 unless slope_init),
    PRelu with the model's order (CNNModelHelper.PRelu through its arg scope); trains through the slope."""
    x = rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32)
    model = cnn.CNNModelHelper(order="NHWC", name="pr")
    y = model.PRelu("x", "pr", num_channels=2)
    y1 = brew.prelu(model, "x", "pr1", slope_init=("ConstantFill", {"value": -0.5}))
    ops = model.net.Proto().op
    assert [(o.type, list(o.input)) for o in ops] == [("PRelu", ["x", "pr_slope"]),
                                                      ("PRelu", ["x", "pr1_slope"])]
    assert [(a.name, a.s) for a in ops[0].arg] == [("order", "NHWC")]
    assert [str(p) for p in model.params] == ["pr_slope", "pr1_slope"]
    loss = model.net.SumElements(model.net.Sum([y, y1], "pr_sum"), "pr_loss")
    grads = model.AddGradientOperators([loss])
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(model.param_init_net)
    workspace.RunNetOnce(model.net)
    np.testing.assert_allclose(workspace.FetchBlob("pr_slope"), [0.25, 0.25])
    np.testing.assert_allclose(workspace.FetchBlob(str(y)), np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob(str(y1)), np.where(x > 0, x, -0.5 * x), rtol=1e-6)
    want = np.where(x > 0, 0, x).reshape(-1, 2).sum(0)  # NHWC: channels are the last dim
    np.testing.assert_allclose(workspace.FetchBlob(str(grads["pr_slope"])), want, rtol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob(str(grads["pr1_slope"])), [want.sum()], rtol=1e-5)


# ---------------------------------------------------------------- modeling.initializers, brew.fc
def test_brew_fc_takes_an_initializer_class():
    model = model_helper.ModelHelper(name="init")
    brew.fc(model, "x", "a", 3, 2, ("ConstantFill", {"value": 0.5}), ("ConstantFill", {"value": -1.0}),
            WeightInitializer=initializers.Initializer, BiasInitializer=initializers.Initializer)
    brew.fc(model, "x", "b", 3, 2, WeightInitializer=initializers.Initializer)  # the default XavierFill
    brew.fc(model, "x", "c", 3, 2, WeightInitializer=initializers.Initializer("ConstantFill", value=2.0))
    workspace.RunNetOnce(model.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob("a_w"), np.full((2, 3), 0.5, np.float32))
    np.testing.assert_array_equal(workspace.FetchBlob("a_b"), np.full(2, -1.0, np.float32))
    assert [op.type for op in model.param_init_net.Proto().op if op.output[0] == "b_w"] == ["XavierFill"]
    np.testing.assert_array_equal(workspace.FetchBlob("c_w"), np.full((2, 3), 2.0, np.float32))
    with pytest.raises(TypeError, match="with an initializer class, the weight initializer must be"):
        brew.fc(model, "x", "d", 3, 2, "XavierFill", WeightInitializer=initializers.Initializer)
    with pytest.raises(TypeError, match="weight initializer must be an Initializer class or object"):
        brew.fc(model, "x", "e", 3, 2, WeightInitializer=42)


def test_float16_initializers_are_refused():
    model = model_helper.ModelHelper(name="fp16")
    with pytest.raises(NotImplementedError,
                       match="PseudoFP16Initializer is not provided: .*float32 and int32"):
        brew.fc(model, "x", "a", 3, 2, WeightInitializer=initializers.PseudoFP16Initializer)
    with pytest.raises(NotImplementedError, match="ReversePseudoFP16Initializer is not provided"):
        initializers.ReversePseudoFP16Initializer("ConstantFill")
    assert not model.params and not model.param_init_net.Proto().op


def test_modeling_parameter_sharing_is_the_same_module():
    assert modeling_parameter_sharing.ParameterSharing is parameter_sharing.ParameterSharing
    assert modeling_parameter_sharing.parameter_sharing_context is parameter_sharing.parameter_sharing_context


# ---------------------------------------------------------------- workspace.CreateBlob
def test_create_blob():
    assert workspace.CreateBlob("e") is True
    assert workspace.HasBlob("e")
    assert workspace.FetchBlob("e") == b"e, a C++ native class of type nullptr (uninitialized)."
    workspace.FeedBlob("f", np.arange(3, dtype=np.float32))
    workspace.CreateBlob("f")  # an existing blob is left as it is
    np.testing.assert_array_equal(workspace.FetchBlob("f"), [0, 1, 2])
    # an op reading an empty blob fails when it runs, naming it; the workspace stays usable
    net = core.Net("reads_empty")
    net.Relu("e", "r")
    workspace.CreateNet(net)
    with pytest.raises((ValueError, TypeError, KeyError), match="'e'"):
        workspace.RunNet(net)
    workspace.FeedBlob("e", np.array([-1.0, 2.0], np.float32))
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("r"), [0.0, 2.0])


# ---------------------------------------------------------------- devices of parameters
def test_get_param_device():
    model = model_helper.ModelHelper(name="dev")
    out = brew.fc(model, "x", "y", 3, 2)
    model.AddGradientOperators([model.net.AveragedLoss(out, "loss")])
    devices = optimizer._get_param_to_device(model)
    cpu = core.DeviceOption(core.DeviceType.CPU)
    assert optimizer.get_param_device("y_w", "y_w_grad", devices) == cpu
    # not made by any op: its gradient's device, else the default, else a ValueError
    assert optimizer.get_param_device("fed", "y_w_grad", devices) == cpu
    assert optimizer.get_param_device("fed", core.GradientSlice("idx", "y_b_grad"), devices) == cpu
    assert optimizer.get_param_device("fed", "nope", devices, default_device=cpu) == cpu
    with pytest.raises(ValueError, match="Cannot infer device for fed: no op creates it"):
        optimizer.get_param_device("fed", "nope", devices)
    assert optimizer._optimizer_instance_count is optimizer._instance_count


# ---------------------------------------------------------------- enableRAdam, optimizers not provided
def sparse_model(name):
    model = model_helper.ModelHelper(name=name)
    w = model.param_init_net.ConstantFill([], "w", shape=[6, 2], value=0.5)
    model.params.append(w)
    out = model.net.ReduceFrontSum(model.net.Gather([w, "idx"], "picked"), "s")
    model.AddGradientOperators([model.net.AveragedLoss(out, "loss")])
    return model


def test_adam_enable_radam_reaches_sparse_adam_only():
    model = sparse_model("radam")
    optimizer.build_adam(model, 0.1, enableRAdam=True)
    ops = [op for op in model.net.Proto().op if op.type in ("SparseAdam", "LearningRate")]
    args = {op.type: {a.name: a for a in op.arg} for op in ops}
    assert args["SparseAdam"]["enableRAdam"].i == 1
    assert "enableRAdam" not in args["LearningRate"]
    with pytest.raises(ValueError, match="enableRAdam works with SparseAdam only, not with rowWise=True"):
        optimizer.AdamOptimizer(enableRAdam=True, rowWise=True)


@pytest.mark.parametrize("build,cls", [
    (optimizer.build_multi_precision_sgd, "MultiPrecisionSgdOptimizer"),
    (optimizer.build_fp16_sgd, "FP16SgdOptimizer"),
])
def test_optimizers_not_provided(build, cls):
    model = sparse_model("np_" + cls)
    n_ops = len(model.net.Proto().op)
    with pytest.raises(NotImplementedError, match="%s is not provided: " % cls):
        build(model, 0.1)
    assert len(model.net.Proto().op) == n_ops  # nothing added
    with pytest.raises(NotImplementedError, match=cls):
        getattr(optimizer, cls)()


def test_yellowfin_refuses_a_sparse_gradient():
    model = sparse_model("yf_sparse")
    n_ops = len(model.net.Proto().op)
    with pytest.raises(ValueError, match=r"YellowFinOptimizer: parameter '.*' has a sparse gradient "
                                         r"\(GradientSlice\); YellowFin needs a dense one"):
        optimizer.build_yellowfin(model, 0.1)
    assert not [op for op in model.net.Proto().op[n_ops:] if op.type == "YellowFin"]
