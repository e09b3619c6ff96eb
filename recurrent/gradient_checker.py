"""Finite-difference checks of registered gradients, as
caffe2.python.gradient_checker.

``GradientChecker(stepsize, threshold).CheckSimple(op, inputs, i, outs)``
stacks the loss ``L = 1/2 * sum(y**2)`` over the outputs ``outs`` on top of
``op`` (so the output gradient fed to the gradient ops is ``y`` itself),
runs the registered gradient ops, and compares the gradient of input ``i``
with central differences ``(L(x+h) - L(x-h)) / (2h)``. Losses are summed in
float64; the actual step is measured after rounding ``x +- h`` to the input's
dtype, so float32 rounding does not bias the estimate.
"""

import copy

import numpy as np

from . import core, workspace


def _feed(name, arr, device_option):
    workspace.FeedBlob(name, arr, device_option)


def _describe_failure(grad, estimate, fail):
    idx = np.flatnonzero(fail)
    lines = ["gradient check failed at %d of %d elements; [index, grad, estimate]:"
             % (idx.size, grad.size)]
    for i in idx[:20]:
        lines.append("  %6d  % .6g  % .6g" % (i, grad.flat[i], estimate.flat[i]))
    if idx.size > 20:
        lines.append("  ...")
    return "\n".join(lines)


class GradientChecker:
    """Checks an operator's registered gradient against finite differences.

    ``stepsize``: the perturbation h. ``threshold``: used as both the absolute
    and relative tolerance of ``np.isclose``. The check runs in workspace
    ``workspace_name`` (created if needed, emptied afterwards); the caller's
    current workspace is restored afterwards, also on error.
    """

    def __init__(self, stepsize, threshold, device_option=None, workspace_name="gradient_check",
                 input_device_options=None):
        self._stepsize = float(stepsize)
        self._threshold = float(threshold)
        self._device_option = device_option
        self._workspace_name = workspace_name
        self._input_device_options = dict(input_device_options or {})
        self.last_message = ""

    def _loss_and_grad(self, op, grad_ops, inputs, input_names, grad_name, outputs_with_grads,
                       input_device_options, want_grad=True):
        for name, arr in zip(input_names, inputs):
            _feed(name, arr, input_device_options.get(name, self._device_option))
        workspace.RunOperatorOnce(op)
        loss = 0.0
        for idx in outputs_with_grads:
            name = op.output[idx]
            y = workspace.FetchBlob(name)
            loss += float(np.sum(np.square(y.astype(np.float64))))
            if want_grad:
                _feed(name + "_grad", y, self._device_option)
        loss *= 0.5
        if not want_grad:
            return loss, None
        workspace.RunOperatorsOnce(grad_ops)
        return loss, workspace.FetchBlob(grad_name)

    def CheckSimple(self, op, inputs, input_to_check, outputs_with_grads, grad_ops=None,
                    input_device_options=None, ensure_outputs_are_inferred=False):
        """Returns ``(ok, grad, grad_estimate)``.

        ``inputs``: NumPy arrays for ``op.input`` in order (not modified).
        ``input_to_check``: index of the input whose gradient is checked.
        ``outputs_with_grads``: indices of the outputs in the loss; their
        gradients ``<output>_grad`` are fed. ``grad_ops``: the gradient ops;
        by default from the registry with output gradients ``<output>_grad`` for
        the outputs in ``outputs_with_grads`` and None for the others.
        """
        if not isinstance(op, core.OperatorDef):
            raise TypeError("CheckSimple expects an OperatorDef, got %s" % type(op).__name__)
        if len(inputs) != len(op.input):
            raise ValueError("op %s has %d inputs but %d arrays were given"
                             % (op.type, len(op.input), len(inputs)))
        if not 0 <= input_to_check < len(inputs):
            raise IndexError("input_to_check %d is out of range for op %s with %d inputs"
                             % (input_to_check, op.type, len(inputs)))
        outputs_with_grads = list(outputs_with_grads)
        for idx in outputs_with_grads:
            if not 0 <= idx < len(op.output):
                raise IndexError("output index %d is out of range for op %s with %d outputs"
                                 % (idx, op.type, len(op.output)))
        op = copy.deepcopy(op)
        if self._device_option is not None:
            op.device_option = copy.deepcopy(self._device_option)
        input_device_options = dict(self._input_device_options)
        input_device_options.update(input_device_options or {})
        if grad_ops is None:
            # only the outputs in the loss have a gradient; the others' are zero (None), so a
            # gradient maker that checks which outputs receive one (RecurrentNetwork's) agrees
            grad_ops, g_input = core.GradientRegistry.GetGradientForOp(
                op, [s + "_grad" if i in outputs_with_grads else None
                     for i, s in enumerate(op.output)])
            grad_name = g_input[input_to_check]
            if isinstance(grad_name, core.GradientSlice):  # compare it dense
                dense = op.input[input_to_check] + "_grad_dense"
                grad_ops = list(grad_ops) + [core.CreateOperator(
                    "SparseToDense", [grad_name.indices, grad_name.values, op.input[input_to_check]],
                    [dense])]
                grad_name = dense
        else:
            grad_ops = list(grad_ops) if not isinstance(grad_ops, core.OperatorDef) else [grad_ops]
            grad_name = op.input[input_to_check] + "_grad"
        if grad_name is None:
            raise ValueError("op %s: input %d ('%s') has no gradient"
                             % (op.type, input_to_check, op.input[input_to_check]))
        # C order, so that x.reshape(-1) below is a view: a transposed (Fortran-ordered) input
        # would otherwise be reshaped into a copy and its perturbations never fed
        inputs = [np.array(x, copy=True, order="C") for x in inputs]
        x = inputs[input_to_check]
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError("op %s: input %d ('%s') is %s; only floating inputs can be checked"
                            % (op.type, input_to_check, op.input[input_to_check], x.dtype))

        old_ws = workspace.CurrentWorkspace()
        switched = self._workspace_name != old_ws
        if switched:
            workspace.SwitchWorkspace(self._workspace_name, True)
        try:
            _, grad = self._loss_and_grad(op, grad_ops, inputs, op.input, grad_name,
                                          outputs_with_grads, input_device_options)
            if grad.shape != x.shape:
                raise ValueError("op %s: gradient '%s' has shape %s but input '%s' has shape %s"
                                 % (op.type, grad_name, grad.shape, op.input[input_to_check],
                                    x.shape))
            estimate = np.zeros(x.shape, np.float64)
            flat = x.reshape(-1)  # a view: perturbations go to inputs[input_to_check]
            for k in range(flat.size):
                orig = flat[k]
                flat[k] = orig + self._stepsize
                x_pos = float(flat[k])
                pos_loss, _ = self._loss_and_grad(op, grad_ops, inputs, op.input, grad_name,
                                                  outputs_with_grads, input_device_options,
                                                  want_grad=False)
                flat[k] = orig - self._stepsize
                x_neg = float(flat[k])
                neg_loss, _ = self._loss_and_grad(op, grad_ops, inputs, op.input, grad_name,
                                                  outputs_with_grads, input_device_options,
                                                  want_grad=False)
                flat[k] = orig
                estimate.flat[k] = (pos_loss - neg_loss) / (x_pos - x_neg)
        finally:
            if switched:
                workspace.ResetWorkspace()
                workspace.SwitchWorkspace(old_ws)
        estimate = estimate.astype(x.dtype)
        fail = ~np.isclose(grad, estimate, atol=self._threshold, rtol=self._threshold)
        ok = not np.any(fail)
        self.last_message = "" if ok else _describe_failure(grad, estimate, fail)
        if not ok:
            print(self.last_message)
        return ok, grad, estimate


def _assert_close(value1, value2, threshold, err_msg=""):
    np.testing.assert_allclose(value1, value2, atol=threshold, rtol=threshold, err_msg=err_msg)
    delta = np.abs(np.asarray(value1, np.float64) - np.asarray(value2, np.float64)).ravel()
    return (float(np.mean(delta)), float(np.max(delta))) if delta.size else (0.0, 0.0)


def _get_grad(net, outputs, outputs_with_grad, input_values, inputs_with_grads):
    grad_net = net.Clone(net.Name() + "_copy")
    grad_map = grad_net.AddGradientOperators([str(o) for o in outputs_with_grad])
    for name, value in (input_values or {}).items():
        workspace.FeedBlob(name, value)
    for blob in inputs_with_grads:
        if blob not in grad_map:
            raise ValueError("net '%s': blob '%s' has no gradient, cannot check it"
                             % (net.Name(), blob))
        if not workspace.HasBlob(str(blob)):
            raise ValueError("net '%s': blob '%s' has no value in the workspace (pass it in "
                             "input_values)" % (net.Name(), blob))
    dense = {}
    for b in inputs_with_grads:
        g = grad_map[b]
        if isinstance(g, core.GradientSlice):  # compare sparse gradients dense
            g = grad_net.SparseToDense([g.indices, g.values, str(b)], str(b) + "_grad_dense")
        dense[b] = str(g)
    workspace.RunNetOnce(grad_net)
    forward = [(o, workspace.FetchBlob(str(o))) for o in outputs]
    grads = {b: workspace.FetchBlob(dense[b]) for b in inputs_with_grads}
    return forward, grads, grad_net


class NetGradientChecker:
    """Gradient checks of whole nets (in the current workspace)."""

    @staticmethod
    def CompareNets(nets, outputs, outputs_with_grad_ids, inputs_with_grads, input_values=None,
                    threshold=1e-7, print_net_images=False):
        """Runs every net with gradients for ``outputs[k][i]``, i in
        ``outputs_with_grad_ids``, and asserts that forward results and the
        gradients of ``inputs_with_grads`` agree with the first net's."""
        if len(nets) != len(outputs):
            raise ValueError("CompareNets: %d nets but %d output lists" % (len(nets), len(outputs)))
        results = []
        for net, net_outputs in zip(nets, outputs):
            with_grad = [net_outputs[i] for i in outputs_with_grad_ids]
            forward, grads, _ = _get_grad(net, net_outputs, with_grad, input_values,
                                          inputs_with_grads)
            results.append((forward, grads))
        first_forward, first_grads = results[0]
        for forward, grads in results[1:]:
            if len(forward) != len(first_forward):
                raise AssertionError("nets have different numbers of outputs")
            for idx, ((b1, v1), (b2, v2)) in enumerate(zip(first_forward, forward)):
                _assert_close(v1, v2, threshold,
                              "different forward results for output %d ('%s' and '%s')"
                              % (idx, b1, b2))
            for blob, value in grads.items():
                _assert_close(first_grads[blob], value, threshold,
                              "different gradients for input '%s'" % blob)

    @staticmethod
    def Check(net, outputs_with_grad, input_values, input_to_check, step_size=1e-4,
              threshold=0.05, print_net=True):
        """Checks the gradient of ``input_to_check`` for the loss
        ``sum(sum(blob) for blob in outputs_with_grad)`` by central differences
        (the backward pass is seeded with ones). Returns (mean, max) absolute
        difference; raises AssertionError on mismatch."""
        _, grads, full_net = _get_grad(net, [], outputs_with_grad, input_values,
                                       [input_to_check])
        analytic = grads[input_to_check]
        base = np.array(input_values[input_to_check], copy=True)

        def loss(value):
            workspace.FeedBlob(str(input_to_check), value)
            workspace.RunNetOnce(full_net)
            return sum(float(np.sum(workspace.FetchBlob(str(o)).astype(np.float64)))
                       for o in outputs_with_grad)

        estimate = np.zeros(base.shape, np.float64)
        for k in range(base.size):
            v = base.copy()
            v.flat[k] = base.flat[k] + step_size
            x_pos = float(v.flat[k])
            pos = loss(v)
            v.flat[k] = base.flat[k] - step_size
            x_neg = float(v.flat[k])
            neg = loss(v)
            estimate.flat[k] = (pos - neg) / (x_pos - x_neg)
        workspace.FeedBlob(str(input_to_check), base)
        msg = "gradient check failed for net '%s'" % net.Name()
        if print_net:
            msg += ":\n%s" % net.Proto()
        return _assert_close(analytic, estimate.astype(base.dtype), threshold, msg)
