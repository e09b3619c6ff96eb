"""Property-based op tests, as caffe2.python.hypothesis_test_util (imported as ``hu``).

A test draws its inputs from the strategies below with ``@given`` and checks a
property of the op with an assertion of ``HypothesisTestCase``:

- ``assertReferenceChecks(gc, op, inputs, reference)``: the op's outputs equal
  ``reference(*inputs)`` (a tuple or list of arrays) within a tolerance;
- ``assertGradientChecks(gc, op, inputs, i, [j, ...])``: the registered
  gradient of input ``i`` matches central differences
  (``recurrent.gradient_checker.GradientChecker``);
- ``assertDeviceChecks(dc, op, inputs, [j, ...])``: every device gives the same
  outputs. This package runs on the CPU only, so ``dc`` holds one device and the
  check runs the op twice on the CPU (a non-deterministic op still fails it);
- ``assertValidationChecks``, ``assertRunOpRaises``.

``gcs`` / ``gcs_cpu_only`` give ``gc`` (one device option) and ``dc`` (the
list): both the CPU here. Strategies: ``dims``, ``floats``, ``elements_of_type``,
``arrays``, ``tensor``, ``tensor1d``, ``tensors``, ``ntensors``, ``tensors1d``,
``segment_ids``, ``lengths``, ``segmented_tensor``, ``lengths_tensor``,
``sparse_segmented_tensor``, ``sparse_lengths_tensor``. ``given``, ``assume``
and ``HealthCheck`` come from hypothesis; ``settings`` is hypothesis's, but
drops ``min_satisfying_examples`` and turns ``timeout`` (seconds) into
``deadline`` (ms), arguments that old Caffe2 tests pass and current hypothesis
refuses.

Importing this module loads a hypothesis settings profile (as Caffe2's did):
``dev`` (10 examples) unless ``RECURRENT_HYPOTHESIS_PROFILE`` (or
``CAFFE2_HYPOTHESIS_PROFILE``) names ``debug`` (1000) or ``ci`` (100,
derandomized); ``CI=sandcastle``-style detection is not done. All profiles
keep no example database and have no deadline (CPU timings on shared machines
vary too much for one), and suppress the ``too_slow`` and ``differing_executors``
health checks (the latter fails a ``@given`` helper called by two test methods).

``hypothesis`` is a test dependency: ``import recurrent`` never needs it, and
importing this module without it raises ImportError saying how to install it.
"""

import contextlib
import copy
import functools
import os

import numpy as np

try:
    import hypothesis
    import hypothesis.extra.numpy as _hnp
    import hypothesis.strategies as st
    from hypothesis import HealthCheck, assume, given  # noqa: F401  (re-exported)
except ImportError as _e:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("recurrent.hypothesis_test_util needs the 'hypothesis' package, a test "
                      "dependency of recurrent: pip install hypothesis (or pip install "
                      "\"recurrent[test]\")") from _e

from . import core, gradient_checker, test_util, workspace
from .proto import caffe2_pb2

# ---------------------------------------------------------------- settings profiles
# differing_executors (hypothesis >= 6.56) fails a @given helper method that two test methods
# call, each from its own TestCase instance, as Caffe2's rnn_cell_test.lstm_base is: the check
# did not exist when those tests were written, and the draws do not depend on the instance.
_SUPPRESSED = [HealthCheck.too_slow] + [getattr(HealthCheck, n) for n in ("differing_executors",)
                                        if hasattr(HealthCheck, n)]
_PROFILE_BASE = dict(database=None, deadline=None, suppress_health_check=_SUPPRESSED)
hypothesis.settings.register_profile("dev", max_examples=10, **_PROFILE_BASE)
hypothesis.settings.register_profile("debug", max_examples=1000, **_PROFILE_BASE)
hypothesis.settings.register_profile("ci", max_examples=100, derandomize=True, **_PROFILE_BASE)
hypothesis.settings.register_profile("sandcastle", max_examples=100, derandomize=True,
                                     **_PROFILE_BASE)


def _profile_name():
    name = os.getenv("RECURRENT_HYPOTHESIS_PROFILE") or os.getenv("CAFFE2_HYPOTHESIS_PROFILE") or "dev"
    if name not in ("dev", "debug", "ci", "sandcastle"):
        raise ValueError("RECURRENT_HYPOTHESIS_PROFILE=%r: expected dev, debug or ci" % name)
    return name


hypothesis.settings.load_profile(_profile_name())


def settings(*args, **kwargs):
    """hypothesis.settings, accepting two arguments of old Caffe2 tests:
    ``min_satisfying_examples`` (dropped; hypothesis removed it) and ``timeout``
    in seconds (becomes ``deadline`` in ms unless a deadline is given)."""
    kwargs.pop("min_satisfying_examples", None)
    if "timeout" in kwargs:
        timeout = kwargs.pop("timeout")
        if "deadline" not in kwargs and timeout is not None:
            kwargs["deadline"] = float(timeout) * 1000.0
    return hypothesis.settings(*args, **kwargs)


def is_sandcastle():
    """Caffe2's CI detection; always False here (use RECURRENT_HYPOTHESIS_PROFILE=ci)."""
    return False


def is_travis():
    return "TRAVIS" in os.environ


# ---------------------------------------------------------------- strategies
def dims(min_value=1, max_value=5):
    """One dimension: an integer in [min_value, max_value]."""
    return st.integers(min_value=min_value, max_value=max_value)


def floats(*args, **kwargs):
    """``hypothesis.strategies.floats`` drawing float32 values unless ``width`` is
    given: the bounds are rounded to float32 first (hypothesis refuses a bound
    that is not representable at the width)."""
    if "width" not in kwargs:
        kwargs["width"] = 32
        for bound in ("min_value", "max_value"):
            if kwargs.get(bound) is not None:
                kwargs[bound] = float(np.float32(kwargs[bound]))
    return st.floats(*args, **kwargs)


def elements_of_type(dtype=np.float32, filter_=None):
    """Element values for ``dtype``: floats in [-1, 1] (exactly representable in
    the dtype), int32 / int64 in [0, max], booleans; ``filter_`` restricts them."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        elems = st.floats(min_value=-1.0, max_value=1.0, width=8 * dt.itemsize)
    elif dt == np.int32:
        elems = st.integers(min_value=0, max_value=2 ** 31 - 1)
    elif dt == np.int64:
        elems = st.integers(min_value=0, max_value=2 ** 63 - 1)
    elif dt == np.bool_:
        elems = st.booleans()
    else:
        raise ValueError("elements_of_type: no default elements for dtype %s; pass elements=" % dt)
    return elems if filter_ is None else elems.filter(filter_)


def arrays(dims, dtype=np.float32, elements=None):
    """Arrays of shape ``dims`` (a list of ints) and ``dtype``."""
    if elements is None:
        elements = elements_of_type(dtype)
    return _hnp.arrays(dtype, dims, elements=elements)


def _shapes(min_dim, max_dim, **kwargs):
    return st.lists(dims(**kwargs), min_size=min_dim, max_size=max_dim)


def tensor(min_dim=1, max_dim=4, dtype=np.float32, elements=None, **kwargs):
    """One array of rank in [min_dim, max_dim], each dimension from ``dims(**kwargs)``."""
    return _shapes(min_dim, max_dim, **kwargs).flatmap(lambda s: arrays(s, dtype, elements))


def tensor1d(min_len=1, max_len=64, dtype=np.float32, elements=None):
    """One vector of length in [min_len, max_len]."""
    return tensor(1, 1, dtype, elements, min_value=min_len, max_value=max_len)


def tensors(n, min_dim=1, max_dim=4, dtype=np.float32, elements=None, **kwargs):
    """A list of ``n`` arrays, all of the same (drawn) shape."""
    return _shapes(min_dim, max_dim, **kwargs).flatmap(
        lambda s: st.lists(arrays(s, dtype, elements), min_size=n, max_size=n))


def ntensors(min_n, max_n, min_dim=1, max_dim=4, dtype=np.float32, elements=None, **kwargs):
    """A list of between ``min_n`` and ``max_n`` arrays, all of the same shape."""
    return _shapes(min_dim, max_dim, **kwargs).flatmap(
        lambda s: st.lists(arrays(s, dtype, elements), min_size=min_n, max_size=max_n))


def tensors1d(n, min_len=1, max_len=64, dtype=np.float32, elements=None):
    """A list of ``n`` vectors of one length in [min_len, max_len]."""
    return tensors(n, 1, 1, dtype, elements, min_value=min_len, max_value=max_len)


def segment_ids(size, is_sorted):
    """int32 segment ids for ``size`` rows: sorted ones start at 0 and rise by 0
    or 1 per row; unsorted ones are any values in [0, 2 * size]."""
    if size == 0:
        return st.just(np.empty((0,), np.int32))
    if is_sorted:
        return arrays([size], np.int32, st.booleans()).map(
            lambda steps: (np.cumsum(steps, dtype=np.int32) - steps[0]).astype(np.int32))
    return arrays([size], np.int32, st.integers(min_value=0, max_value=2 * size))


def lengths(size, min_segments=None, max_segments=None, **kwargs):
    """int32 lengths (zeros allowed) that sum to ``size``, between
    ``min_segments`` (default 0) and ``max_segments`` (default ``size``) of them
    (at least one unless ``size`` and ``max_segments`` are both 0)."""
    min_segments = 0 if min_segments is None else min_segments
    max_segments = size if max_segments is None else max_segments
    if not 0 <= min_segments <= max_segments:
        raise ValueError("lengths: need 0 <= min_segments <= max_segments, got %d, %d"
                         % (min_segments, max_segments))
    if size == 0 and max_segments == 0:
        return st.just(np.empty((0,), np.int32))
    if max_segments <= 0:
        raise ValueError("lengths: size %d needs at least one segment" % size)

    def from_cuts(cuts):
        edges = np.sort(np.concatenate([cuts, [0, size]]).astype(np.int32))
        return np.diff(edges).astype(np.int32)

    return st.integers(min_value=max(min_segments - 1, 0), max_value=max_segments - 1).flatmap(
        lambda n_cuts: _hnp.arrays(np.int32, n_cuts, elements=st.integers(0, size))).map(from_cuts)


def segmented_tensor(min_dim=1, max_dim=4, dtype=np.float32, is_sorted=True, elements=None,
                     segment_generator=segment_ids, allow_empty=False, **kwargs):
    """``(data, segments)``: data of rank in [min_dim, max_dim] (first dimension
    0 sometimes when ``allow_empty``; then one rank more) and
    ``segment_generator(data.shape[0], is_sorted=...)`` for its rows."""
    empty = st.booleans() if allow_empty else st.just(False)
    shapes = st.tuples(empty, _shapes(min_dim, max_dim, **kwargs)).map(
        lambda p: ([0] if p[0] else []) + p[1])
    return shapes.flatmap(lambda s: st.tuples(
        arrays(s, dtype, elements), segment_generator(s[0], is_sorted=is_sorted)))


def lengths_tensor(min_segments=None, max_segments=None, *args, **kwargs):
    """``(data, lengths)``: segmented_tensor with ``lengths`` as the segments."""
    gen = functools.partial(lengths, min_segments=min_segments, max_segments=max_segments)
    return segmented_tensor(*args, segment_generator=gen, **kwargs)


def sparse_segmented_tensor(min_dim=1, max_dim=4, dtype=np.float32, is_sorted=True, elements=None,
                            allow_empty=False, segment_generator=segment_ids, itype=np.int64,
                            **kwargs):
    """``(data, indices, segments)``: indices (``itype``, values < data.shape[0])
    select rows of data; the segments are for the indices. ``itype`` int64
    arrays are converted to int32 when fed (blobs hold int32 only)."""
    empty = st.booleans() if allow_empty else st.just(False)
    all_shapes = st.tuples(empty, _shapes(min_dim, max_dim, **kwargs)).flatmap(
        lambda p: st.tuples(st.just(p[1]),
                            st.just(0) if p[0] else st.integers(min_value=1, max_value=p[1][0])))
    return all_shapes.flatmap(lambda s: st.tuples(
        arrays(s[0], dtype, elements),
        arrays(s[1], itype, st.integers(min_value=0, max_value=s[0][0] - 1)),
        segment_generator(s[1], is_sorted=is_sorted)))


def sparse_lengths_tensor(**kwargs):
    """``(data, indices, lengths)``: sparse_segmented_tensor with lengths."""
    return sparse_segmented_tensor(segment_generator=lengths, **kwargs)


# ---------------------------------------------------------------- devices
cpu_do = caffe2_pb2.DeviceOption()
# Device options of Caffe2's GPU builds, kept so that code naming them imports; an op
# run with one of them is refused with a ValueError (this package runs on the CPU only).
cuda_do = caffe2_pb2.DeviceOption(device_type=caffe2_pb2.CUDA)
hip_do = caffe2_pb2.DeviceOption(device_type=6)
gpu_do = caffe2_pb2.DeviceOption(device_type=workspace.GpuDeviceType)
_device_options_no_hip = [cpu_do]
device_options = [cpu_do]  # the devices this build runs ops on: the CPU
expanded_device_options = [cpu_do]


def device_checker_device_options():
    return st.just(device_options)


def gradient_checker_device_option():
    return st.sampled_from(device_options)


gcs = dict(gc=gradient_checker_device_option(), dc=device_checker_device_options())
gcs_cpu_only = dict(gc=st.sampled_from([cpu_do]), dc=st.just([cpu_do]))
gcs_cuda_only = dict(gc=st.sampled_from([cuda_do]), dc=st.just([cuda_do]))
gcs_gpu_only = dict(gc=st.sampled_from([gpu_do]), dc=st.just([gpu_do]))
gcs_no_hip = dict(gc=st.sampled_from(_device_options_no_hip), dc=st.just(_device_options_no_hip))


# ---------------------------------------------------------------- running one op
@contextlib.contextmanager
def temp_workspace(name="temp_ws"):
    """Runs the block in workspace ``name`` (created if needed), then empties it
    and switches back to the caller's workspace (also when the block raises)."""
    old = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace(name, True)
    try:
        yield
    finally:
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace(old)


def _on_device(op, device_option):
    op = copy.deepcopy(op)
    op.device_option = copy.deepcopy(device_option)
    return op


def _feed_inputs(op, inputs, device_option, input_device_options, require_all=True):
    """Feeds ``inputs`` to the op's first inputs, in order; unless ``require_all``
    is False, the op may not have more inputs than arrays were given."""
    if require_all and len(op.input) > len(inputs):
        raise ValueError("op %s has %d inputs %s but %d arrays were given"
                         % (op.type, len(op.input), list(op.input), len(inputs)))
    input_device_options = input_device_options or {}
    for name, value in zip(op.input, inputs):
        workspace.FeedBlob(name, value, device_option=input_device_options.get(name, device_option))


def runOpOnInput(device_option, op, inputs, input_device_options=None):
    """Runs ``op`` once on ``inputs`` in a temporary workspace; returns its outputs."""
    op = _on_device(op, device_option)
    with temp_workspace():
        _feed_inputs(op, inputs, device_option, input_device_options)
        workspace.RunOperatorOnce(op)
        return [workspace.FetchBlob(name) for name in op.output]


def runOpBenchmark(device_option, op, inputs, input_device_options=None, iterations=10):
    """Times ``op`` on ``inputs`` as Caffe2's: ``workspace.BenchmarkNet`` of a one-op net, one
    warm-up run, then ``iterations`` (>= 1) runs of the net and ``iterations`` of the op on its own.
    Returns ``[ms per run of the net, ms per run of the op]``."""
    op = _on_device(op, device_option)
    net = caffe2_pb2.NetDef()
    net.name = op.name or "benchmark"
    net.op.append(op)
    with temp_workspace():
        _feed_inputs(op, inputs, device_option, input_device_options)
        workspace.CreateNet(net)
        return workspace.BenchmarkNet(net.name, 1, iterations, True)


class HypothesisTestCase(test_util.TestCase):
    """test_util.TestCase with the op assertions of Caffe2's hypothesis tests."""

    def assertDeviceChecks(self, device_options, op, inputs, outputs_to_check,
                           input_device_options=None, threshold=0.01):
        """Runs ``op`` on every device option of ``device_options`` and asserts
        that the outputs ``outputs_to_check`` (indices) agree with the first
        device's within ``threshold`` (absolute and relative). Here the only
        device is the CPU: the op runs twice on it, so the check catches
        outputs that change from run to run."""
        device_options = list(device_options)
        if len(device_options) == 1:
            device_options = device_options * 2
        outputs_to_check = list(outputs_to_check)
        first = None
        for k, opt in enumerate(device_options):
            outs = runOpOnInput(opt, op, inputs, input_device_options)
            if first is None:
                first = outs
                continue
            for i in outputs_to_check:
                np.testing.assert_allclose(
                    outs[i], first[i], atol=threshold, rtol=threshold,
                    err_msg="op %s: output %d ('%s') differs between device option #0 and #%d"
                            % (op.type, i, op.output[i], k))

    def assertGradientChecks(self, device_option, op, inputs, outputs_to_check, outputs_with_grads,
                             grad_ops=None, threshold=0.005, stepsize=0.05, input_device_options=None,
                             ensure_outputs_are_inferred=False):
        """Checks the gradient of input ``outputs_to_check`` (an input index, as
        Caffe2 named it) for the loss ``1/2 sum(y**2)`` over the outputs
        ``outputs_with_grads`` against central differences with step
        ``stepsize``; ``threshold`` is the absolute and relative tolerance.
        ``grad_ops`` replaces the registered gradient ops (they must write
        ``<input>_grad``). ``ensure_outputs_are_inferred`` is accepted and has
        no effect: there is no separate shape inference here."""
        checker = gradient_checker.GradientChecker(
            stepsize=stepsize, threshold=threshold, device_option=device_option,
            workspace_name="gradient_check", input_device_options=input_device_options)
        ok, grad, estimate = checker.CheckSimple(
            op, inputs, outputs_to_check, outputs_with_grads, grad_ops=grad_ops,
            input_device_options=input_device_options,
            ensure_outputs_are_inferred=ensure_outputs_are_inferred)
        self.assertEqual(grad.shape, estimate.shape)
        self.assertTrue(ok, "op %s: gradient check failed for input %d ('%s')\n%s"
                        % (op.type, outputs_to_check, op.input[outputs_to_check],
                           checker.last_message))

    def _assertGradReferenceChecks(self, op, inputs, ref_outputs, output_to_grad, grad_reference,
                                   threshold=1e-4):
        grad_name = str(output_to_grad) + "_grad"
        grad_ops, grad_map = core.GradientRegistry.GetBackwardPass(
            [op], {str(output_to_grad): grad_name})
        output = workspace.FetchBlob(str(output_to_grad))
        expected = grad_reference(output, ref_outputs, inputs)
        workspace.FeedBlob(grad_name, output)
        workspace.RunOperatorsOnce(grad_ops)
        self.assertEqual(len(expected), len(inputs),
                         "grad_reference returned %d gradients for %d inputs"
                         % (len(expected), len(inputs)))
        for name, ref in zip(op.input, expected):
            g = grad_map.get(name)
            if not g:
                self.assertIsNone(ref, "input '%s' has no gradient, but grad_reference gave one"
                                  % name)
                continue
            if isinstance(g, core.GradientSlice):
                ref_values, ref_indices = ref
                values_name = str(g.values)
            else:
                ref_values, ref_indices = ref, None
                values_name = str(g)
            np.testing.assert_allclose(
                workspace.FetchBlob(values_name), ref_values, atol=threshold, rtol=threshold,
                err_msg="gradient '%s' (actual) does not match grad_reference (desired)"
                        % values_name)
            if ref_indices is not None:
                np.testing.assert_array_equal(workspace.FetchBlob(str(g.indices)), ref_indices,
                                              err_msg="indices of gradient '%s'" % values_name)

    def assertReferenceChecks(self, device_option, op, inputs, reference, input_device_options=None,
                              threshold=1e-4, output_to_grad=None, grad_reference=None, atol=None,
                              outputs_to_check=None, ensure_outputs_are_inferred=False):
        """Runs ``op`` on ``inputs`` (in a temporary workspace, which is current
        while ``reference(*inputs)`` runs) and asserts that its outputs
        ``outputs_to_check`` (indices, default all) match the arrays the
        reference returns, in order: relative tolerance ``threshold``,
        absolute ``atol`` (default ``threshold``). With ``grad_reference``,
        also feeds ``<output_to_grad>_grad`` = that output, runs the backward
        pass and compares every input's gradient with
        ``grad_reference(output, reference_outputs, inputs)`` (None for inputs
        without a gradient, ``(values, indices)`` for sparse ones). Returns the
        op's outputs that were checked. As Caffe2's, the shapes and types
        ``workspace.InferShapesAndTypes`` gives for the outputs before the run
        are compared with the outputs (a mismatch fails; here always, in Caffe2
        only with ``CAFFE2_ASSERT_SHAPEINFERENCE=1``); with
        ``ensure_outputs_are_inferred`` an output not inferred fails too."""
        op = _on_device(op, device_option)
        with temp_workspace():
            _feed_inputs(op, inputs, device_option, input_device_options)
            net = core.Net("opnet")
            net.Proto().op.append(op)
            shapes, types = workspace.InferShapesAndTypes([net])
            workspace.RunNetOnce(net)
            reference_outputs = reference(*inputs)
            if not isinstance(reference_outputs, (tuple, list)):
                raise RuntimeError("the reference of op %s returned %s; it must return a tuple or "
                                   "list of arrays, one per output checked"
                                   % (op.type, type(reference_outputs).__name__))
            if not outputs_to_check:
                self.assertEqual(len(reference_outputs), len(op.output),
                                 "the reference of op %s gave %d outputs, the op has %d"
                                 % (op.type, len(reference_outputs), len(op.output)))
                outputs_to_check = list(range(len(op.output)))
            tol_abs = threshold if atol is None else atol
            outs = []
            for index, ref in zip(outputs_to_check, reference_outputs):
                name = op.output[index]
                output = workspace.FetchBlob(name)
                if output.dtype.kind in ("S", "O", "U"):
                    np.testing.assert_array_equal(output, ref)
                else:
                    np.testing.assert_allclose(
                        output, ref, atol=tol_abs, rtol=threshold,
                        err_msg="op %s: output %d ('%s') does not match the reference"
                                % (op.type, index, name))
                self._assertInferTensorChecks(name, shapes, types, output, ensure_outputs_are_inferred)
                outs.append(output)
            if grad_reference is not None:
                if output_to_grad is None:
                    raise ValueError("assertReferenceChecks: grad_reference needs output_to_grad")
                with core.DeviceScope(device_option):
                    self._assertGradReferenceChecks(op, inputs, reference_outputs, output_to_grad,
                                                    grad_reference, threshold=threshold)
            return outs

    def _assertInferTensorChecks(self, name, shapes, types, output, ensure_output_is_inferred=False):
        """The inferred shape and type of blob ``name`` (if inferred) are those of ``output``;
        with ``ensure_output_is_inferred``, it must be inferred."""
        self.assertTrue(not ensure_output_is_inferred or name in shapes,
                        "Shape for %s was not inferred" % name)
        if name not in shapes or not isinstance(output, np.ndarray):
            return
        self.assertEqual(list(shapes[name]), list(output.shape),
                         "Shape %s mismatch: inferred %s, the op gave %s" % (name, shapes[name], output.shape))
        want = {np.dtype(np.float32): core.DataType.FLOAT, np.dtype(np.int32): core.DataType.INT32}.get(output.dtype)
        if want is not None and types[name] != core.DataType.UNDEFINED:
            self.assertEqual(types[name], want, "Type %s mismatch: inferred %s, the op gave %s"
                             % (name, types[name], output.dtype))

    def assertValidationChecks(self, device_option, op, inputs, validator, input_device_options=None,
                               as_kwargs=True, init_net=None):
        """Runs ``op`` on ``inputs`` (after ``init_net``, if given: it may
        provide the op's inputs beyond ``inputs``) and calls ``validator``: with
        ``as_kwargs``, as ``validator(**{blob name: array})`` over the op's
        inputs and outputs (in-place ops are refused there); otherwise as
        ``validator(inputs=inputs, outputs=[...])``."""
        if as_kwargs and len(set(op.input) | set(op.output)) != len(op.input) + len(op.output):
            raise ValueError("assertValidationChecks: op %s reads and writes a blob of the same "
                             "name (in place); use as_kwargs=False" % op.type)
        op = _on_device(op, device_option)
        with temp_workspace():
            _feed_inputs(op, inputs, device_option, input_device_options, require_all=False)
            if init_net:
                workspace.RunNetOnce(init_net)
            # inputs beyond the arrays given come from init_net: passed as they were before the run
            extra = [workspace.FetchBlob(name) for name in op.input[len(inputs):]]
            workspace.RunOperatorOnce(op)
            outputs = [workspace.FetchBlob(name) for name in op.output]
            if as_kwargs:
                values = list(inputs)[:len(op.input)] + extra + outputs
                validator(**dict(zip(list(op.input) + list(op.output), values)))
            else:
                validator(inputs=inputs, outputs=outputs)

    def assertRunOpRaises(self, device_option, op, inputs, input_device_options=None,
                          exception=(Exception,), regexp=None):
        """Asserts that running ``op`` on ``inputs`` raises ``exception`` (and,
        with ``regexp``, a message that it matches: re.search)."""
        op = _on_device(op, device_option)
        with temp_workspace():
            _feed_inputs(op, inputs, device_option, input_device_options, require_all=False)
            if regexp is None:
                self.assertRaises(exception, workspace.RunOperatorOnce, op)
            else:
                self.assertRaisesRegex(exception, regexp, workspace.RunOperatorOnce, op)
