"""recurrent.test_util and recurrent.hypothesis_test_util (Caffe2's test helpers), and
workspace.blobs. Hypothesis runs here are derandomized and short (QUICK)."""

import os
import subprocess
import sys
import unittest

import numpy as np
import pytest

import hypothesis.strategies as st
from hypothesis import HealthCheck, assume, is_hypothesis_test, settings

from recurrent import core, test_util, workspace
from recurrent.gradient_checker import GradientChecker
from recurrent import hypothesis_test_util as hu
from recurrent.proto import caffe2_pb2
from recurrent.serialized_test import serialized_test_util as serial

QUICK = hu.settings(derandomize=True, max_examples=8, deadline=None)


def _run_unittest(case_class, name):
    result = unittest.TestResult()
    case_class(name).run(result)
    return result


def _wrong_tanh_gradient(op, g_output):
    # dX = dY (missing the 1 - Y**2 factor)
    return [core.CreateOperator("Copy", [g_output[0]], [op.input[0] + "_grad"])], \
        [op.input[0] + "_grad"]


class TestAssertions(hu.HypothesisTestCase):

    def test_reference_check_passes_and_returns_outputs(self):
        x = np.array([[-1.0, 0.5], [2.0, -0.25]], np.float32)
        op = core.CreateOperator("Relu", ["X"], ["Y"])
        outs = self.assertReferenceChecks(hu.cpu_do, op, [x], lambda x: (np.maximum(x, 0),))
        np.testing.assert_array_equal(outs[0], np.maximum(x, 0))

    def test_reference_check_fails_on_a_wrong_reference(self):
        x = np.ones((2, 3), np.float32)
        op = core.CreateOperator("Relu", ["X"], ["Y"])
        with pytest.raises(AssertionError, match=r"op Relu: output 0 \('Y'\) does not match the reference"):
            self.assertReferenceChecks(hu.cpu_do, op, [x], lambda x: (x + 1,))

    def test_reference_check_bad_usage(self):
        op = core.CreateOperator("Sum", ["A", "B"], ["S"])
        a = np.ones(3, np.float32)
        with pytest.raises(ValueError, match=r"op Sum has 2 inputs \['A', 'B'\] but 1 arrays"):
            self.assertReferenceChecks(hu.cpu_do, op, [a], lambda a: (a,))
        with pytest.raises(RuntimeError, match="must return a tuple or list"):
            self.assertReferenceChecks(hu.cpu_do, op, [a, a], lambda a, b: a + b)
        with pytest.raises(AssertionError, match="gave 2 outputs, the op has 1"):
            self.assertReferenceChecks(hu.cpu_do, op, [a, a], lambda a, b: (a + b, a))
        with pytest.raises(ValueError, match="grad_reference needs output_to_grad"):
            self.assertReferenceChecks(hu.cpu_do, op, [a, a], lambda a, b: (a + b,),
                                       grad_reference=lambda g, outs, ins: [g, g])

    def test_reference_check_with_grad_reference(self):
        x = np.array([-1.0, 0.5, 2.0], np.float32)
        op = core.CreateOperator("Relu", ["X"], ["Y"])

        def grad_ref(g_out, outs, ins):
            return [g_out * (ins[0] > 0)]
        self.assertReferenceChecks(hu.cpu_do, op, [x], lambda x: (np.maximum(x, 0),),
                                   output_to_grad="Y", grad_reference=grad_ref)
        with pytest.raises(AssertionError, match="gradient 'X_grad' .* does not match grad_reference"):
            self.assertReferenceChecks(hu.cpu_do, op, [x], lambda x: (np.maximum(x, 0),),
                                       output_to_grad="Y",
                                       grad_reference=lambda g, outs, ins: [2 * g])

    def test_reference_check_leaves_the_callers_workspace(self):
        workspace.FeedBlob("mine", np.ones(2, np.float32))
        before = workspace.CurrentWorkspace()
        op = core.CreateOperator("Relu", ["X"], ["Y"])
        self.assertReferenceChecks(hu.cpu_do, op, [np.ones(2, np.float32)], lambda x: (x,))
        assert workspace.CurrentWorkspace() == before
        assert workspace.HasBlob("mine") and not workspace.HasBlob("Y")

    def test_gradient_check_passes(self):
        x = np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3)
        op = core.CreateOperator("Tanh", ["X"], ["Y"])
        self.assertGradientChecks(hu.cpu_do, op, [x], 0, [0], threshold=0.01, stepsize=0.01)
        a, b = x, (x[::-1] + 0.5).astype(np.float32)
        mul = core.CreateOperator("Mul", ["A", "B"], ["P"])
        self.assertGradientChecks(hu.cpu_do, mul, [a, b], 1, [0], threshold=0.01, stepsize=0.01)

    def test_gradient_check_of_a_transposed_input(self):
        # a Fortran-ordered input (Caffe2's matmul_op_test passes Y.transpose()): the checker must
        # perturb the array it feeds, not a reshaped copy (which gave an estimate of 0 everywhere)
        x = np.array([[1.0, -2.0]], np.float32)
        y = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 1.0]], np.float32).T
        assert not y.flags.c_contiguous
        op = core.CreateOperator("MatMul", ["X", "Y"], ["Z"])
        self.assertGradientChecks(hu.cpu_do, op, [x, y], 1, [0], threshold=0.005, stepsize=0.05)
        ok, grad, estimate = GradientChecker(0.05, 0.005).CheckSimple(op, [x, y], 1, [0])
        assert ok and np.abs(estimate).min() > 0.1
        np.testing.assert_allclose(grad, x.T @ (x @ y), rtol=1e-5)

    def test_gradient_check_fails_on_a_wrong_gradient_maker(self):
        x = np.linspace(-1, 1, 6).astype(np.float32)
        op = core.CreateOperator("Tanh", ["X"], ["Y"])
        registry = core.GradientRegistry.gradient_registry_
        saved = registry["Tanh"]
        registry["Tanh"] = _wrong_tanh_gradient
        try:
            with pytest.raises(AssertionError, match=r"op Tanh: gradient check failed for input 0 "
                                                     r"\('X'\)\ngradient check failed at \d+ of 6"):
                self.assertGradientChecks(hu.cpu_do, op, [x], 0, [0], threshold=0.01, stepsize=0.01)
        finally:
            registry["Tanh"] = saved
        wrong_ops = [core.CreateOperator("Copy", ["Y_grad"], ["X_grad"])]
        with pytest.raises(AssertionError, match="gradient check failed for input 0"):
            self.assertGradientChecks(hu.cpu_do, op, [x], 0, [0], grad_ops=wrong_ops,
                                      threshold=0.01, stepsize=0.01)

    def test_device_checks_compare_the_cpu_with_itself(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        self.assertDeviceChecks(hu.device_options, core.CreateOperator("Relu", ["X"], ["Y"]), [x], [0])
        # a fill without a seed draws anew on each run: the two CPU runs differ
        fill = core.CreateOperator("UniformFill", [], ["U"], shape=[50], min=0.0, max=1.0)
        with pytest.raises(AssertionError, match=r"output 0 \('U'\) differs between device option #0 "
                                                 r"and #1"):
            self.assertDeviceChecks([hu.cpu_do], fill, [], [0])

    def test_validation_checks(self):
        x = np.array([3.0, -1.0], np.float32)
        seen = {}

        def by_name(X, Y):
            seen["kw"] = (X.copy(), Y.copy())
            np.testing.assert_array_equal(Y, np.maximum(X, 0))
        op = core.CreateOperator("Relu", ["X"], ["Y"])
        self.assertValidationChecks(hu.cpu_do, op, [x], by_name)
        assert seen["kw"][1].tolist() == [3.0, 0.0]

        def by_list(inputs, outputs):
            seen["lists"] = (len(inputs), len(outputs))
        self.assertValidationChecks(hu.cpu_do, op, [x], by_list, as_kwargs=False)
        assert seen["lists"] == (1, 1)
        with pytest.raises(AssertionError):
            self.assertValidationChecks(hu.cpu_do, op, [x], lambda X, Y: self.assertTrue(Y[1] < 0))
        inplace = core.CreateOperator("Relu", ["X"], ["X"])
        with pytest.raises(ValueError, match="in place"):
            self.assertValidationChecks(hu.cpu_do, inplace, [x], by_name)
        init = core.Net("validation_init")
        init.ConstantFill([], "B", shape=[2], value=2.0)
        add = core.CreateOperator("Add", ["X", "B"], ["Z"])
        self.assertValidationChecks(hu.cpu_do, add, [x], lambda inputs, outputs:
                                    np.testing.assert_array_equal(outputs[0], x + 2),
                                    as_kwargs=False, init_net=init)

        def with_init(X, B, Z):
            seen["init"] = B.tolist()
            np.testing.assert_array_equal(Z, X + B)
        self.assertValidationChecks(hu.cpu_do, add, [x], with_init, init_net=init)
        assert seen["init"] == [2.0, 2.0]

    def test_run_op_raises(self):
        a, b = np.ones(3, np.float32), np.ones(4, np.float32)
        op = core.CreateOperator("Sum", ["A", "B"], ["S"])
        self.assertRunOpRaises(hu.cpu_do, op, [a, b], exception=ValueError)
        self.assertRunOpRaises(hu.cpu_do, op, [a, b], exception=ValueError, regexp="Sum")
        with pytest.raises(AssertionError):
            self.assertRunOpRaises(hu.cpu_do, op, [a, a])
        with pytest.raises(AssertionError):
            self.assertRunOpRaises(hu.cpu_do, op, [a, b], regexp="no such words")

    def test_gpu_device_options_are_refused(self):
        op = core.CreateOperator("Relu", ["X"], ["Y"])
        with pytest.raises(ValueError, match="only CPU blobs"):
            self.assertReferenceChecks(hu.cuda_do, op, [np.ones(2, np.float32)], lambda x: (x,))
        with pytest.raises(ValueError, match=r"asks for device CUDA .* CPU only"):
            self.assertReferenceChecks(hu.cuda_do, op, [np.ones(2, np.float32)], lambda x: (x,),
                                       input_device_options={"X": hu.cpu_do})

    @hu.given(x=hu.tensor(max_dim=3, max_value=4), **hu.gcs)
    @QUICK
    def test_given_with_gcs(self, x, gc, dc):
        assert gc.device_type == 0 and [d.device_type for d in dc] == [0]
        op = core.CreateOperator("Relu", ["X"], ["Y"])
        self.assertReferenceChecks(gc, op, [x], lambda x: (np.maximum(x, 0),))
        self.assertDeviceChecks(dc, op, [x], [0])

    @hu.given(**hu.gcs_cpu_only)
    @QUICK
    def test_gcs_cpu_only(self, gc, dc):
        assert gc == hu.cpu_do and dc == [hu.cpu_do]


    def test_gradient_check_of_a_recurrent_network_on_one_output(self):
        # a RecurrentNetwork op has outputs (all steps, last step, step workspaces); its gradient
        # maker refuses a gradient for an output outside outputs_with_grads, so the checker gives
        # the outputs outside the loss no gradient (None) rather than a '<output>_grad' name
        from recurrent import recurrent
        from recurrent.model_helper import ModelHelper
        model = ModelHelper(name="hu_rnn")
        x_all, h0 = model.net.AddExternalInputs("x_all", "h0")
        step = ModelHelper(name="hu_rnn_step", param_model=model)
        x_t, h_prev = step.net.AddExternalInput("x_t", "h_prev")
        h_t = step.net.Mul([x_t, step.net.Sum([x_t, h_prev])])
        step.net.AddExternalOutput(h_t)
        recurrent.recurrent_net(net=model.net, cell_net=step.net, inputs=[(x_t, x_all)],
                                initial_cell_inputs=[(h_prev, h0)], links={h_prev: h_t},
                                scope="hu_rnn")
        op = model.net.Proto().op[-1]
        assert op.type == "RecurrentNetwork" and len(op.output) == 3
        rng = np.random.RandomState(3)
        inputs = [rng.uniform(-1, 1, (3, 2, 2)).astype(np.float32),
                  rng.uniform(-1, 1, (1, 2, 2)).astype(np.float32)]
        for i in (0, 1):
            self.assertGradientChecks(hu.cpu_do, op, inputs, i, [0], threshold=0.01, stepsize=0.005)
        # a loss over output 1 too needs the op built with it in outputs_with_grads
        with pytest.raises(ValueError, match=r"output 1 '.*_last' receives a gradient but is not listed"):
            self.assertGradientChecks(hu.cpu_do, op, inputs, 1, [0, 1], threshold=0.01, stepsize=0.005)


class TestStrategies(hu.HypothesisTestCase):

    @hu.given(x=hu.tensor(min_dim=2, max_dim=3, min_value=2, max_value=4),
              i=hu.tensor(dtype=np.int32), b=hu.tensor(dtype=np.bool_),
              v=hu.tensor1d(min_len=3, max_len=5), d=hu.dims(2, 3))
    @QUICK
    def test_tensor(self, x, i, b, v, d):
        assert x.dtype == np.float32 and 2 <= x.ndim <= 3 and all(2 <= s <= 4 for s in x.shape)
        assert np.all(np.abs(x) <= 1)
        assert i.dtype == np.int32 and np.all(i >= 0)
        assert b.dtype == np.bool_
        assert v.ndim == 1 and 3 <= v.size <= 5
        assert d in (2, 3)

    @hu.given(ts=hu.tensors(n=3, min_dim=2, max_dim=2), nt=hu.ntensors(1, 3, max_dim=2),
              t1=hu.tensors1d(n=2, min_len=2, max_len=3), a=hu.arrays([2, 5], np.float64))
    @QUICK
    def test_tensors(self, ts, nt, t1, a):
        assert len(ts) == 3 and len({t.shape for t in ts}) == 1 and ts[0].ndim == 2
        assert 1 <= len(nt) <= 3 and len({t.shape for t in nt}) == 1
        assert len(t1) == 2 and t1[0].shape == t1[1].shape and 2 <= t1[0].size <= 3
        assert a.shape == (2, 5) and a.dtype == np.float64

    @hu.given(sorted_ids=hu.segment_ids(6, is_sorted=True),
              ids=hu.segment_ids(6, is_sorted=False), lens=hu.lengths(7, max_segments=3))
    @QUICK
    def test_segments(self, sorted_ids, ids, lens):
        assert sorted_ids.dtype == np.int32 and sorted_ids[0] == 0
        assert set(np.diff(sorted_ids).tolist()) <= {0, 1}
        assert ids.dtype == np.int32 and np.all((ids >= 0) & (ids <= 12))
        assert lens.dtype == np.int32 and lens.sum() == 7 and 1 <= lens.size <= 3
        assert np.all(lens >= 0)

    @hu.given(seg=hu.segmented_tensor(max_dim=3), lt=hu.lengths_tensor(allow_empty=True),
              sp=hu.sparse_segmented_tensor(itype=np.int32), sl=hu.sparse_lengths_tensor())
    @QUICK
    def test_segmented_tensors(self, seg, lt, sp, sl):
        data, ids = seg
        assert ids.shape == (data.shape[0],) and ids[0] == 0
        data, lens = lt
        assert lens.sum() == data.shape[0]
        data, idx, ids = sp
        assert idx.dtype == np.int32 and np.all(idx < data.shape[0]) and ids.shape == idx.shape
        data, idx, lens = sl
        assert idx.dtype == np.int64 and lens.sum() == idx.size

    @hu.given(ids=hu.segment_ids(0, True), lens=hu.lengths(0, max_segments=0))
    @QUICK
    def test_empty_segments(self, ids, lens):
        assert ids.shape == (0,) and lens.shape == (0,) and lens.dtype == np.int32

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="min_segments"):
            hu.lengths(3, min_segments=2, max_segments=1)
        with pytest.raises(ValueError, match="no default elements"):
            hu.elements_of_type(np.uint8)

    @hu.given(v=hu.elements_of_type(np.float32, filter_=lambda v: v > 0))
    @QUICK
    def test_elements_filter(self, v):
        assert 0 < v <= 1

    # hu.floats: float32 values unless a width is given; bounds not representable in float32
    # (0.1, inf) are accepted and rounded, as Caffe2's helper did
    @hu.given(v=hu.floats(min_value=0.1, max_value=0.3),
              w=hu.floats(min_value=-np.inf, max_value=np.inf, allow_nan=False),
              d=hu.floats(min_value=0.1, max_value=0.3, width=64))
    @QUICK
    def test_floats(self, v, w, d):
        assert float(np.float32(v)) == v and np.float32(0.1) <= v <= np.float32(0.3)
        assert float(np.float32(w)) == w or np.isinf(w)
        assert 0.1 <= d <= 0.3


def test_settings_accepts_old_caffe2_arguments():
    s = hu.settings(max_examples=3, timeout=2, min_satisfying_examples=1)
    assert s.max_examples == 3 and s.deadline.total_seconds() == 2
    assert hu.settings(timeout=2, deadline=None).deadline is None


def test_run_op_on_input_benchmark_and_temp_workspace():
    x = np.array([-2.0, 3.0], np.float32)
    op = core.CreateOperator("Relu", ["X"], ["Y"])
    assert hu.runOpOnInput(hu.cpu_do, op, [x])[0].tolist() == [0.0, 3.0]
    times = hu.runOpBenchmark(hu.cpu_do, op, [x], iterations=3)
    assert len(times) == 2 and times[0] >= 0 and times[1] >= 0
    with pytest.raises(ValueError, match="main_runs >= 1"):
        hu.runOpBenchmark(hu.cpu_do, op, [x], iterations=0)
    before = workspace.CurrentWorkspace()
    with pytest.raises(KeyError):
        with hu.temp_workspace("hu_scratch"):
            workspace.FeedBlob("t", x)
            raise KeyError("boom")
    assert workspace.CurrentWorkspace() == before
    workspace.SwitchWorkspace("hu_scratch")
    try:
        assert workspace.Blobs() == []
    finally:
        workspace.SwitchWorkspace(before)


def test_serialized_given_runs_a_fixed_example_then_draws():
    calls = []

    class Case(serial.SerializedTestCase):
        @serial.given(n=st.integers(0, 1000))
        def test_n(self, n):
            calls.append(n)
    assert issubclass(Case, hu.HypothesisTestCase)
    result = _run_unittest(Case, "test_n")
    assert result.wasSuccessful(), result.failures + result.errors
    assert len(calls) >= 2


def test_serialized_given_honours_settings_applied_above_it():
    # Caffe2's fc_operator_test puts @settings(max_examples=50, suppress_health_check=[...]) above
    # @serial.given; hypothesis's pytest plugin refused that as "@settings on a test without @given"
    calls = []

    class Case(serial.SerializedTestCase):
        @settings(max_examples=30, suppress_health_check=[HealthCheck.filter_too_much])
        @serial.given(n=st.integers(0, 10 ** 6))
        def test_n(self, n):
            assume(n % 4 == 0)
            calls.append(n)
    assert is_hypothesis_test(Case.test_n)
    result = _run_unittest(Case, "test_n")
    assert result.wasSuccessful(), result.failures + result.errors
    assert len(calls) == 1 + 30


def test_device_type_constants():
    assert (caffe2_pb2.CPU, caffe2_pb2.CUDA, caffe2_pb2.HIP) == (0, 1, 6)
    assert core.DeviceType.HIP == caffe2_pb2.HIP and core.DeviceType.IDEEP == 5
    assert core.IsGPUDeviceType(caffe2_pb2.HIP) and core.IsGPUDeviceType(caffe2_pb2.CUDA)
    assert not core.IsGPUDeviceType(caffe2_pb2.CPU) and not core.IsGPUDeviceType(caffe2_pb2.IDEEP)


def test_given_helper_shared_by_two_test_methods():
    # Caffe2's rnn_cell_test has test_lstm and test_milstm both call one @given method with the
    # profile's settings; each unittest method runs on its own instance, which current
    # hypothesis reports as a differing_executors health-check failure unless suppressed.
    seen = []

    class Case(hu.HypothesisTestCase):
        @hu.given(n=st.integers(0, 9))
        def base(self, n, kind):
            seen.append((kind, n))

        def test_one(self):
            self.base(kind="one")

        def test_two(self):
            self.base(kind="two")

    for name in ("test_one", "test_two"):
        result = _run_unittest(Case, name)
        assert result.wasSuccessful(), result.failures + result.errors
    assert {k for k, _ in seen} == {"one", "two"}


# ---------------------------------------------------------------- test_util
def test_rand_array_and_blobs():
    a = test_util.rand_array(3, 2)
    assert a.shape == (3, 2) and a.dtype == np.float32 and np.all(np.abs(a) <= 0.5)
    s = test_util.rand_array()
    assert isinstance(s, np.ndarray) and s.shape == ()
    test_util.randBlobFloat32("r", 4, offset=10.0)
    r = workspace.FetchBlob("r")
    assert r.shape == (4,) and r.dtype == np.float32 and np.all(r >= 10)
    test_util.randBlobsFloat32(["p", "q"], 2, 2)
    assert workspace.FetchBlob("p").shape == (2, 2) and workspace.HasBlob("q")
    test_util.randBlob("i", np.int32, 3)  # rand() cast to int32 is 0; + offset: float, as in Caffe2
    assert workspace.FetchBlob("i").tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="unexpected keyword"):
        test_util.randBlob("i", np.int32, 3, ofset=1)
    net = core.Net("count")
    net.Relu("X", "Y")
    net.Relu("Y", "Z")
    assert test_util.numOps(net) == 2 and test_util.numOps(net.Proto()) == 2
    assert test_util.str_compare(b"abc", "abc") and not test_util.str_compare("a", b"b")
    workspace.ResetWorkspace()


def test_test_case_empties_the_workspace():
    seen = {}

    class Case(test_util.TestCase):
        def test_a(self):
            seen["start"] = workspace.Blobs()
            workspace.FeedBlob("left_behind", np.ones(1, np.float32))
            seen["tmp"] = self.make_tempdir()
            assert seen["tmp"].is_dir()

        @test_util.caffe2_flaky
        def test_flaky(self):
            seen["flaky"] = True

    workspace.FeedBlob("before", np.ones(1, np.float32))
    assert _run_unittest(Case, "test_a").wasSuccessful()
    assert seen["start"] == [] and workspace.Blobs() == [] and not seen["tmp"].exists()
    result = _run_unittest(Case, "test_flaky")
    assert len(result.skipped) == 1 and "flaky" not in seen


def test_workspace_blobs_mapping():
    workspace.ResetWorkspace()
    workspace.blobs["a"] = np.arange(3, dtype=np.float32)
    assert "a" in workspace.blobs and "b" not in workspace.blobs
    assert workspace.blobs["a"].tolist() == [0.0, 1.0, 2.0]
    assert len(workspace.blobs) == 1 and list(workspace.blobs) == ["a"] and workspace.blobs.keys() == ["a"]
    with pytest.raises(KeyError, match="blob 'b' does not exist"):
        workspace.blobs["b"]
    workspace.ResetWorkspace()


# ---------------------------------------------------------------- hypothesis is optional
def _python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)


def test_import_recurrent_does_not_need_hypothesis():
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "import recurrent, recurrent.test_util\n"
            "from recurrent import core, workspace, gradient_checker\n"
            "try:\n"
            "    import recurrent.hypothesis_test_util\n"
            "except ImportError as e:\n"
            "    print('IMPORTERROR', e)\n")
    res = _python(code)
    assert res.returncode == 0, res.stderr
    assert "IMPORTERROR" in res.stdout and "pip install hypothesis" in res.stdout
    res = _python("import sys, recurrent, recurrent.test_util; print('hypothesis' in sys.modules)")
    assert res.returncode == 0 and res.stdout.strip() == "False", res.stderr
