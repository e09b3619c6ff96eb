"""recurrent.scope, recurrent.model_helper and recurrent.brew."""

import threading

import numpy as np
import pytest

from recurrent import brew, core, scope, workspace
from recurrent.model_helper import (ExternalInitializer, Initializer, ModelHelper, ParameterInfo,
                                    ParameterTags)


# ---------------------------------------------------------------- scope
def test_name_scope_nesting_and_reset():
    assert scope.CurrentNameScope() == ""
    with scope.NameScope("a"):
        assert scope.CurrentNameScope() == "a/"
        with scope.NameScope("b"):
            assert scope.CurrentNameScope() == "a/b/"
            with scope.NameScope("c", reset=True):
                assert scope.CurrentNameScope() == "c/"
            with scope.NameScope(None):
                assert scope.CurrentNameScope() == "a/b/"
            with scope.NameScope(""):
                assert scope.CurrentNameScope() == "a/b/"
            with scope.NameScope(core.BlobReference("r")):
                assert scope.CurrentNameScope() == "a/b/r/"
        assert scope.CurrentNameScope() == "a/"
    assert scope.CurrentNameScope() == ""
    with scope.NameScope("x/y"):
        assert scope.CurrentNameScope() == "x/y/"
    with pytest.raises(TypeError):
        with scope.NameScope(3):
            pass


def test_name_scope_restored_on_exception():
    with pytest.raises(KeyError):
        with scope.NameScope("boom"):
            raise KeyError()
    assert scope.CurrentNameScope() == ""


def test_name_scope_is_thread_local():
    seen = []
    with scope.NameScope("main"):
        t = threading.Thread(target=lambda: seen.append(scope.CurrentNameScope()))
        t.start()
        t.join()
    assert seen == [""]


def test_device_scope():
    assert scope.CurrentDeviceScope() is None
    dev = core.DeviceOption(core.DeviceType.CUDA, 1)
    with scope.DeviceScope(dev):
        cur = scope.CurrentDeviceScope()
        assert cur == dev and cur is not dev
        with core.DeviceScope(None):
            assert scope.CurrentDeviceScope() is None
        op = core.CreateOperator("Foo", [], ["x"])
        assert op.device_option == dev
    assert scope.CurrentDeviceScope() is None
    with pytest.raises(TypeError):
        with scope.DeviceScope("cpu"):
            pass


# ---------------------------------------------------------------- ModelHelper
def test_model_helper_basics():
    m = ModelHelper(name="mh")
    assert m.net.Name().startswith("mh") and m.param_init_net.Name().startswith("mh_init")
    assert m.Proto() is m.net.Proto() and m.InitProto() is m.param_init_net.Proto()
    assert m.params == [] and m.arg_scope == {}
    m2 = ModelHelper()
    assert m2.name == "model"


def test_create_param_tuple_and_initializer_objects():
    m = ModelHelper(name="cp")
    with core.NameScope("s"):
        w = m.create_param("w", [3, 2], ("XavierFill", {}), tags=ParameterTags.WEIGHT)
        b = m.create_param("b", (3,), ("ConstantFill", {"value": 0.5}), tags=[ParameterTags.BIAS])
        c = m.create_param(param_name="c", shape=[4], initializer=Initializer("GaussianFill", std=2.0))
    d = m.create_param(core.BlobReference("exact/d"), [1], ("ConstantFill", {}))
    assert (w, b, c, d) == ("s/w", "s/b", "s/c", "exact/d")
    assert all(isinstance(p, core.BlobReference) for p in (w, b, c, d))
    assert m.params == ["s/w", "s/b", "s/c", "exact/d"]
    assert m.weights == ["s/w"] and m.biases == ["s/b"]
    ops = m.param_init_net.Proto().op
    assert [o.type for o in ops] == ["XavierFill", "ConstantFill", "GaussianFill", "ConstantFill"]
    assert ops[0].output == ["s/w"] and ops[0].input == []
    assert [(a.name, a.value()) for a in ops[0].arg] == [("shape", [3, 2])]
    assert [(a.name, a.value()) for a in ops[1].arg] == [("shape", [3]), ("value", 0.5)]
    assert [(a.name, a.value()) for a in ops[2].arg] == [("shape", [4]), ("std", 2.0)]
    info = m.get_param_info(w)
    assert isinstance(info, ParameterInfo) and info.shape == [3, 2] and info.name == "s/w"
    assert info.blob == w and info.size == 6 and info.grad is None
    assert m.get_param_info("s/w") is info and m.get_param_info("nope") is None
    # asking again returns the same parameter; a different shape is an error
    with core.NameScope("s"):
        assert m.create_param("w", [3, 2], ("XavierFill", {})) == w
        with pytest.raises(ValueError, match="already exists with shape"):
            m.create_param("w", [2, 3], ("XavierFill", {}))
    assert len(m.param_init_net.Proto().op) == 4 and len(m.params) == 4
    with pytest.raises(ValueError, match="initializer is required"):
        m.create_param("x", [1], None)
    with pytest.raises(TypeError):
        m.create_param("x", [1], "XavierFill")
    with pytest.raises(TypeError):
        m.create_param(5, [1], ("XavierFill", {}))


def test_computed_params_and_get_params():
    m = ModelHelper(name="gp")
    with core.NameScope("a"):
        m.create_param("p", [1], ("ConstantFill", {}))
        m.create_param("q", [1], ("ConstantFill", {}), tags=ParameterTags.COMPUTED_PARAM)
    with core.NameScope("ab"):
        m.create_param("p", [1], ("ConstantFill", {}))
    m.create_param("top", [1], ("ConstantFill", {}))
    assert m.GetParams() == ["a/p", "ab/p", "top"]
    assert m.GetParams("a") == ["a/p"] and m.GetParams("a/") == ["a/p"]
    with core.NameScope("ab"):
        assert m.GetParams() == ["ab/p"]
    assert m.GetComputedParams() == ["a/q"]
    assert m.GetAllParams() == ["a/p", "ab/p", "top", "a/q"]


def test_external_initializer_and_init_params_false():
    m = ModelHelper(name="ext", init_params=False)
    w = m.create_param("w", [2], ("XavierFill", {}))
    assert w == "w" and m.params == ["w"] and m.param_init_net.Proto().op == []
    m2 = ModelHelper(name="ext2")
    v = m2.create_param("v", [2], ExternalInitializer())
    assert v == "v" and m2.param_init_net.Proto().op == []


def test_param_model_shares_params():
    outer = ModelHelper(name="outer")
    outer.create_param("o", [1], ("ConstantFill", {}))
    step = ModelHelper(name="step", param_model=outer)
    assert step.param_init_net is outer.param_init_net and step.params is outer.params
    with core.NameScope("cell"):
        brew.fc(step, "h_prev", "gates", 2, 8)
    assert outer.params == ["o", "cell/gates_w", "cell/gates_b"]
    assert outer.get_param_info("cell/gates_w").shape == [8, 2]
    assert [o.output for o in outer.param_init_net.Proto().op][1:] == [["cell/gates_w"],
                                                                       ["cell/gates_b"]]
    assert step.net is not outer.net and [o.type for o in step.net.Proto().op] == ["FC"]
    assert outer.net.Proto().op == []
    assert "cell/gates_w" in step.net.Proto().external_input


def _made_up(net, op_type, inputs, outputs):
    """Adds an op of a made-up (unregistered) type, which ``net.<Type>`` refuses."""
    net.Proto().op.extend([core.CreateOperator(op_type, inputs, outputs)])
    return outputs


@core.GradientRegistry.RegisterGradient("TestMHAdd")
def _test_add_grad(op, g_output):
    return [], [g_output[0], g_output[0]]


def test_add_gradient_operators_param_to_grad():
    m = ModelHelper(name="grads")
    x = m.net.AddExternalInput("x")
    w = m.create_param("w", [2], ("ConstantFill", {"value": 1.0}))
    y = _made_up(m.net, "TestMHAdd", [x, w], "y")
    m.net.Copy(y, "z")
    grad_map = m.AddGradientOperators({"z": "z_grad"})
    assert m.gradient_ops_added and grad_map is m.grad_map
    assert grad_map["x"] is not None and m.param_to_grad == {w: grad_map[w]}
    assert m.get_param_info(w).grad == grad_map[w]
    with pytest.raises(RuntimeError, match="only once"):
        m.AddGradientOperators({"z": "z_grad"})
    fresh = ModelHelper(name="nograds")
    with pytest.raises(RuntimeError, match="AddGradientOperators first"):
        fresh.get_param_to_grad([])


def test_model_forwards_operators_to_net():
    m = ModelHelper(name="fwd")
    y = m.Copy(m.net.AddExternalInput("x"), "y")
    assert y == "y" and m.net.Proto().op[-1].type == "Copy"
    with pytest.raises(AttributeError):
        m.NotAnOperatorAtAll
    with pytest.raises(AttributeError):
        m._private


# ---------------------------------------------------------------- brew
def test_brew_fc_params_and_op():
    m = ModelHelper(name="brewfc")
    with core.NameScope("layer"):
        y = brew.fc(m, "x", "y", dim_in=3, dim_out=4, axis=2)
    assert y == "layer/y" and isinstance(y, core.BlobReference)
    assert m.params == ["layer/y_w", "layer/y_b"]
    assert m.weights == ["layer/y_w"] and m.biases == ["layer/y_b"]
    init = m.param_init_net.Proto().op
    assert [o.type for o in init] == ["XavierFill", "ConstantFill"]
    assert init[0].arg[0].ints == [4, 3] and init[1].arg[0].ints == [4]
    assert len(init[1].arg) == 1          # Caffe2's default bias init: ConstantFill, value 0
    fc = m.net.Proto().op[0]
    assert fc.type == "FC" and fc.input == ["layer/x", "layer/y_w", "layer/y_b"]
    assert fc.output == ["layer/y"] and [(a.name, a.i) for a in fc.arg] == [("axis", 2)]
    y2 = brew.fc(m, y, "y2", 4, 5, weight_init=("GaussianFill", {"std": 0.1}),
                 bias_init=("ConstantFill", {"value": 0.25}))
    init = m.param_init_net.Proto().op
    assert init[2].type == "GaussianFill" and init[2].arg[1].name == "std"
    assert init[3].arg[1].f == 0.25
    assert m.net.Proto().op[1].input == ["layer/y", "y2_w", "y2_b"] and m.net.Proto().op[1].arg == []
    with pytest.raises(TypeError):
        brew.fc(m, y2, "y3", 5, 1, weight_init="XavierFill")
    with pytest.raises(TypeError, match="ModelHelper"):
        brew.fc("not a model", "x", "y", 1, 1)


def test_brew_fc_runs(rng):
    m = ModelHelper(name="brewrun")
    brew.fc(m, "x", "y", 3, 2, bias_init=("ConstantFill", {"value": 0.5}))
    workspace.RunNetOnce(m.param_init_net)
    w = workspace.FetchBlob("y_w")
    assert w.shape == (2, 3) and np.all(np.abs(w) <= np.sqrt(3.0 / 3) + 1e-6)
    np.testing.assert_array_equal(workspace.FetchBlob("y_b"), np.full(2, 0.5, np.float32))
    x = rng.randn(4, 3).astype(np.float32)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(m.net)
    np.testing.assert_allclose(workspace.FetchBlob("y"), x @ w.T + 0.5, rtol=1e-5, atol=1e-6)


def test_brew_fc_init_params_false_and_arg_scope():
    m = ModelHelper(name="noinit", init_params=False)
    brew.fc(m, "x", "y", 2, 2)
    assert m.param_init_net.Proto().op == [] and m.params == ["y_w", "y_b"]
    m2 = ModelHelper(name="scoped", arg_scope={"engine": "E"})
    brew.fc(m2, "x", "y", 2, 2)
    assert m2.net.Proto().op[0].engine == "E"
    with brew.arg_scope([brew.fc], axis=2):
        brew.fc(m2, "y", "z", 2, 2)
        brew.fc(m2, "z", "z3", 2, 2, axis=3)
    brew.fc(m2, "z3", "z4", 2, 2)
    axes = [[a.i for a in o.arg if a.name == "axis"] for o in m2.net.Proto().op]
    assert axes == [[], [2], [3], []]
    with pytest.raises(ValueError):
        with brew.arg_scope(["nope"], x=1):
            pass


def test_brew_thin_wrappers():
    m = ModelHelper(name="thin")
    x = m.net.AddExternalInput("x")
    s = brew.sum(m, [x, x], "s")
    r = brew.relu(m, s, "r")
    g = brew.sigmoid(m, r, "g")
    t = brew.tanh(m, g, "t")
    sm = brew.softmax(m, t, "sm", axis=1)
    c = brew.concat(m, [sm, t], "c", axis=2)
    tr = brew.transpose(m, c, "tr", axes=[1, 0, 2])
    sm2 = brew.softmax(m, tr)
    ops = m.net.Proto().op
    assert [o.type for o in ops] == ["Sum", "Relu", "Sigmoid", "Tanh", "Softmax", "Concat",
                                     "Transpose", "Softmax"]
    assert ops[0].input == ["x", "x"] and ops[0].output == ["s"]
    assert ops[1].arg == [] and ops[2].arg == [] and ops[3].arg == []
    assert ops[5].output == ["c", "_c_concat_dims"] and c == "c"
    assert ops[6].arg[0].ints == [1, 0, 2]
    assert (s, r, g, t, sm, tr) == ("s", "r", "g", "t", "sm", "tr")
    assert sm2 == ops[7].output[0] and str(sm2).startswith(m.net.Name() + "/Softmax")


def test_brew_register_custom_helper():
    def my_scale(model, blob_in, blob_out, scale=1.0):
        return model.net.Scale(blob_in, blob_out, scale=scale)

    brew.Register(my_scale)
    assert brew.has_helper("my_scale") and brew.has_helper(my_scale)
    m = ModelHelper(name="custom", arg_scope={"unrelated": 1})
    with brew.arg_scope(["my_scale"], scale=3.0):
        brew.my_scale(m, "x", "y")
    assert [(a.name, a.f) for a in m.net.Proto().op[0].arg] == [("scale", 3.0)]


def test_brew_register_refuses_a_name_already_registered():
    # Caffe2's Register raised AttributeError for a taken name; replacing brew.fc (or a helper
    # registered before) without a word would change every model built afterwards.
    fc_before = brew.fc

    def fc(model, *args, **kwargs):
        return "not the real fc"

    with pytest.raises(AttributeError, match="helper 'fc' already exists"):
        brew.Register(fc)
    assert brew.fc is fc_before

    def my_twice(model, val=-1):
        return val

    brew.Register(my_twice)
    first = brew.my_twice

    def my_twice(model, val=-2):  # noqa: F811 (same name, another function)
        return val

    with pytest.raises(AttributeError, match="helper 'my_twice' already exists"):
        brew.Register(my_twice)
    assert brew.my_twice is first and brew.my_twice(ModelHelper(name="t")) == -1


def test_model_gradient_of_fc_chain_runs(rng):
    m = ModelHelper(name="fcgrad")
    h = brew.fc(m, "x", "h", 3, 4)
    y = brew.fc(m, h, "y", 4, 2)
    loss = m.net.SumElements(y, "loss")
    if not all(core.IsOperator(t) for t in ("FCGradient", "SumElements", "SumElementsGradient")):
        pytest.skip("FC/SumElements gradient ops are not in the C runtime yet")
    m.AddGradientOperators([loss])
    assert set(m.param_to_grad) == {"h_w", "h_b", "y_w", "y_b"}
    workspace.RunNetOnce(m.param_init_net)
    x = rng.randn(5, 3).astype(np.float32)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(m.net)
    w2 = workspace.FetchBlob("y_w")
    np.testing.assert_allclose(workspace.FetchBlob(m.param_to_grad["y_b"]), np.full(2, 5.0),
                               rtol=1e-5)
    hv = workspace.FetchBlob("h")
    np.testing.assert_allclose(workspace.FetchBlob(m.param_to_grad["y_w"]),
                               np.ones((5, 2)).T @ hv, rtol=1e-4, atol=1e-5)
    assert w2.shape == (2, 4)


def test_validate_lists_duplicates_and_modeling_aliases():
    # Caffe2's ModelHelper._Validate (brew_test), modeling.parameter_info and the old pFP16Initializer name
    from recurrent.modeling import initializers, parameter_info
    m = ModelHelper(name="v")
    m.params.extend(["a", "b"])
    assert m._Validate() == []
    m.params.extend(["x", "b", "a", "b"])
    assert m._Validate() == ["a", "b"]
    with pytest.raises(ValueError, match=r"duplicate parameters: \['a', 'b'\]"):
        m.Validate()
    assert parameter_info.ParameterTags is ParameterTags and parameter_info.ParameterInfo is ParameterInfo
    assert initializers.pFP16Initializer is initializers.PseudoFP16Initializer
    with pytest.raises(NotImplementedError, match="float16"):
        initializers.pFP16Initializer()
