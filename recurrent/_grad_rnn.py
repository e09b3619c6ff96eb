"""Gradient makers for the fused recurrent units: LSTMUnit and GRUUnit.

They mirror Caffe2's GetLSTMUnitGradient / GetGRUUnitGradient (spec
recurrent-network.md §5): the gradient op reads the forward inputs (the
optional ``seq_lengths`` only when the forward op's ``sequence_lengths``
argument is true, its default), the timestep, the forward outputs and the
output gradients, and gets a copy of every forward argument
(``forget_bias``, ``drop_states``, ``sequence_lengths``, ...).

Unlike Caffe2, which required a gradient for every output, a missing output
gradient (``None`` in ``g_output``) is replaced by zeros: a ``ConstantFill``
shaped like that output, named ``<output>_grad_zero``, runs first. So a loss
on ``hidden_t`` alone works through an LSTMUnit.

No gradient flows to ``seq_lengths`` or ``timestep``.
"""

import copy

from .core import CreateOperator, GradientRegistry


def _seq_flag(op):
    for a in op.arg:
        if a.name == "sequence_lengths" and a.i is not None:
            return bool(a.i)
    return True


def _grad_name(blob):
    return str(blob) + "_grad"


def _finish(op, grad_op):
    """Copies every forward argument onto grad_op (as Caffe2's C++ makers did);
    the registry copies the device option and engine."""
    grad_op.arg = [copy.deepcopy(a) for a in op.arg]
    return grad_op


def _output_grads(op, g_output, n):
    """Output-gradient names for outputs 0..n-1, plus ConstantFill ops giving
    zeros for the missing ones."""
    fills, names = [], []
    for i in range(n):
        g = g_output[i] if i < len(g_output) else None
        if g is None:
            g = str(op.output[i]) + "_grad_zero"
            fills.append(CreateOperator("ConstantFill", [op.output[i]], [g], value=0.0))
        names.append(str(g))
    return fills, names


@GradientRegistry.RegisterGradient("LSTMUnit")
def _lstm_unit_grad(op, g_output):
    # forward inputs: hidden_t_prev, cell_t_prev, gates, [seq_lengths], timestep
    if all(g is None for g in g_output):
        return [], [None] * len(op.input)
    n_fwd = 5 if _seq_flag(op) else 4
    ins = [str(b) for b in op.input[:n_fwd]]
    fills, gos = _output_grads(op, g_output, 2)
    g_input = [_grad_name(b) for b in ins[:3]]
    grad = CreateOperator("LSTMUnitGradient", ins + [str(op.output[0]), str(op.output[1])] + gos, g_input)
    return fills + [_finish(op, grad)], g_input + [None] * (len(op.input) - 3)


@GradientRegistry.RegisterGradient("GRUUnit")
def _gru_unit_grad(op, g_output):
    # forward inputs: hidden_t_prev, gates, [seq_lengths], timestep
    if all(g is None for g in g_output):
        return [], [None] * len(op.input)
    n_fwd = 4 if _seq_flag(op) else 3
    ins = [str(b) for b in op.input[:n_fwd]]
    g_input = [_grad_name(b) for b in ins[:2]]
    grad = CreateOperator("GRUUnitGradient", ins + [str(op.output[0]), str(g_output[0])], g_input)
    return [_finish(op, grad)], g_input + [None] * (len(op.input) - 2)


# csrc/ops/inference_lstm.c: inference only (Caffe2: NO_GRADIENT)
GradientRegistry.RegisterNoGradient("InferenceLSTM")
