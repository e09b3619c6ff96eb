"""RNN cells and the LSTM / GRU / BasicRNN builders, as caffe2.python.rnn_cell
(and caffe2.python.gru_cell).

A cell describes one timestep. ``apply_over_sequence`` builds the step net
from it and hands it to ``recurrent.recurrent_net``, which makes one
``RecurrentNetwork`` op. Several cells stacked in a ``MultiRNNCell`` run in ONE
step net, so the RNN executor can overlap layer l+1 at step t with layer l at
step t+1.

Parameter names (the contract torch_interop relies on), for ``scope='s'``:

* one layer LSTM: ``s/i2h_w``, ``s/i2h_b`` (input projection, 4H x D),
  ``s/gates_t_w``, ``s/gates_t_b`` (recurrent, 4H x H); gate order along the
  4H axis is LSTMUnit's [input, forget, output, cell];
* stacked LSTM (``dim_out`` a list): layer 0's input projection is ``s/i2h_*``
  (it runs once over the whole sequence), its recurrent weights
  ``s/layer_0/gates_t_*``; layer l >= 1 has ``s/layer_l/i2h_*`` and
  ``s/layer_l/gates_t_*``;
* GRU: ``s/i2h_*`` (3H x D, [reset, update, output]), ``s/reset_gate_t_*``,
  ``s/update_gate_t_*``, ``s/output_gate_t_*`` (H x H each); stacked as for
  the LSTM (``s/layer_l/...``);
* MILSTM adds ``alpha``, ``beta1``, ``beta2``, ``b`` (4H) and names its
  recurrent projection ``prev_t``.

Any NameScope active when the builder is called is prepended.

Differences from Caffe2, all deliberate (spec section 9 and DESIGN.md):

* ``layered_LSTM`` gives every layer its own initial states instead of
  seeding layer l+1 with layer l's final states (section 9 item 12);
* stacked cells with one state (GRU, BasicRNN) count two outputs per layer
  when shifting ``outputs_with_grads`` and slicing the last layer's outputs
  (Caffe2 assumed four, which broke multi-layer GRU);
* ``GRUCell`` and ``BasicRNNCell`` get a zero-state initializer by default, so
  ``initial_states=None`` works for them as for the LSTM;
* a MultiRNNCell recomputes what its layers ask to recompute
  (``memory_optimization``); Caffe2 silently dropped it for stacks;
* ``seq_lengths`` given as a string is scoped once, where the builder is
  called, for every cell (Caffe2's GRU re-scoped it inside each layer).

* ``DropoutCell`` masks depend on (seed, run, timestep) only, so the executor
  and the serial loop draw the same ones;
* ``MILSTMWithAttentionCell`` takes ``encoder_lengths`` (Caffe2's could not
  be constructed); ``UnrolledCell`` strips ``timestep_0/`` from the
  concatenated outputs' names under any enclosing name scope.

Also here: ``LayerNormLSTM`` / ``LayerNormMILSTM`` (cells
``LayerNormLSTMCell`` / ``LayerNormMILSTMCell``), ``DropoutCell``,
``AttentionCell`` / ``LSTMWithAttentionCell`` / ``MILSTMWithAttentionCell`` /
``LSTMWithAttention`` (attention types from ``recurrent.attention``) and
``UnrolledCell`` (``static_rnn_unroll_size``), ``GetLSTMParamNames`` /
``InitFromLSTMParams`` (an LSTM's parameters from per-gate values). Not provided:
cudnn_LSTM.
"""

import contextlib
import functools
import inspect

from . import attention, brew, core, recurrent, scope
from ._missing import not_provided
from .attention import AttentionType
from .parameter_sharing import ParameterSharing
from .model_helper import ModelHelper

__all__ = [
    "RNNCell", "LSTMCell", "MILSTMCell", "BasicRNNCell", "GRUCell", "MultiRNNCell",
    "DropoutCell", "LayerNormLSTMCell", "LayerNormMILSTMCell", "AttentionCell", "LSTMWithAttentionCell",
    "MILSTMWithAttentionCell", "AttentionType", "LSTMWithAttention", "UnrolledCell",
    "LSTMInitializer", "MultiRNNCellInitializer",
    "LSTM", "MILSTM", "BasicRNN", "GRU", "LayerNormLSTM", "LayerNormMILSTM", "layered_LSTM",
]


# ---------------------------------------------------------------- helpers
def _RectifyName(blob_reference_or_name):
    """A str becomes a BlobReference scoped with the current NameScope (so a
    later NameScope does not rename it); a BlobReference is kept."""
    if blob_reference_or_name is None:
        return None
    if isinstance(blob_reference_or_name, bytes):
        blob_reference_or_name = blob_reference_or_name.decode()
    if isinstance(blob_reference_or_name, str):
        return core.ScopedBlobReference(blob_reference_or_name)
    if not isinstance(blob_reference_or_name, core.BlobReference):
        raise TypeError("expected a blob name (str) or BlobReference, got %s"
                        % type(blob_reference_or_name).__name__)
    return blob_reference_or_name


def _RectifyNames(blob_references_or_names):
    if blob_references_or_names is None:
        return None
    return [_RectifyName(i) for i in blob_references_or_names]


def _name_scope(name):
    return scope.NameScope(name) if name else contextlib.nullcontext()


def _constant_param(model, name, shape, value):
    """A parameter of ``model`` (or of its param_model) filled with ``value``."""
    return model.create_param(param_name=name, shape=list(shape),
                              initializer=("ConstantFill", {"value": float(value)}))


def _concat(model, blobs, name, axis):
    out, _ = model.net.Concat(list(blobs), [name, name + "_concat_dims"], axis=axis)
    return out


# ---------------------------------------------------------------- base class
class RNNCell:
    """Base class for recurrent / stateful operations.

    Subclasses implement ``apply_override`` (one step, called inside
    ``NameScope(self.name)``) and ``get_state_names_override`` -- or override
    ``_apply`` / ``get_state_names`` directly -- plus optionally
    ``prepare_input`` (work on the whole sequence done once before the loop),
    ``get_output_dim`` and ``get_output_state_index``.
    ``apply_over_sequence`` then runs the cell over a sequence of any length.
    """

    def __init__(self, name=None, forward_only=False, initializer=None):
        self.name = name
        self.recompute_blobs = []
        self.forward_only = forward_only
        self._initializer = initializer

    @property
    def initializer(self):
        return self._initializer

    @initializer.setter
    def initializer(self, value):
        self._initializer = value

    def scope(self, name):
        return self.name + "/" + name if self.name is not None else name

    def apply_over_sequence(self, model, inputs, seq_lengths=None, initial_states=None,
                            outputs_with_grads=None):
        """Runs the cell over ``inputs`` (T x N x D) with one RecurrentNetwork op.

        Returns ``(output, states_for_all_steps)``; the latter is
        ``(s1_all, s1_last, s2_all, s2_last, ...)`` in ``get_state_names()``
        order, ``output`` the primary output sequence.
        """
        inputs = _RectifyName(inputs)
        seq_lengths = _RectifyName(seq_lengths)
        if initial_states is None:
            with _name_scope(self.name):
                if self.initializer is None:
                    raise ValueError("Either initial states or initializer have to be set (cell %r)"
                                     % self.name)
                initial_states = self.initializer.create_states(model)
        initial_states = _RectifyNames(list(initial_states))

        preprocessed_inputs = self.prepare_input(model, inputs)
        step_model = ModelHelper(name=self.name, param_model=model)
        input_t, timestep = step_model.net.AddScopedExternalInputs("input_t", "timestep")
        state_names = list(self.get_state_names())
        if len(initial_states) != len(state_names):
            raise ValueError("Number of initial state values provided doesn't match the number of states: "
                             "%d given for states %r" % (len(initial_states), state_names))
        states_prev = step_model.net.AddScopedExternalInputs(*[s + "_prev" for s in state_names])
        states = self._apply(model=step_model, input_t=input_t, seq_lengths=seq_lengths,
                             states=states_prev, timestep=timestep)

        external_outputs = set(str(o) for o in step_model.net.Proto().external_output)
        for state in states:
            if str(state) not in external_outputs:
                step_model.net.AddExternalOutput(state)
                external_outputs.add(str(state))

        if outputs_with_grads is None:
            outputs_with_grads = [self.get_output_state_index() * 2]

        states_for_all_steps = recurrent.recurrent_net(
            net=model.net,
            cell_net=step_model.net,
            inputs=[(input_t, preprocessed_inputs)],
            initial_cell_inputs=list(zip(states_prev, initial_states)),
            links=dict(zip([str(s) for s in states_prev], [str(s) for s in states])),
            timestep=timestep,
            scope=self.name,
            forward_only=self.forward_only,
            outputs_with_grads=outputs_with_grads,
            recompute_blobs_on_backward=self.recompute_blobs,
        )
        output = self._prepare_output_sequence(model, states_for_all_steps)
        return output, states_for_all_steps

    def apply(self, model, input_t, seq_lengths, states, timestep):
        """One step outside a RecurrentNetwork: returns ``(output, states)``."""
        input_t = self.prepare_input(model, _RectifyName(input_t))
        states = self._apply(model, input_t, seq_lengths, states, timestep)
        output = self._prepare_output(model, states)
        return output, states

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        """Rectifies the external blob names (so scoping does not touch them),
        then calls ``apply_override`` inside ``NameScope(self.name)``."""
        args = self._rectify_apply_inputs(input_t, seq_lengths, states, timestep, extra_inputs)
        with _name_scope(self.name):
            return self.apply_override(model, *args)

    def _rectify_apply_inputs(self, input_t, seq_lengths, states, timestep, extra_inputs):
        input_t, seq_lengths, timestep = _RectifyNames([input_t, seq_lengths, timestep])
        states = _RectifyNames(states)
        if extra_inputs:
            names, sizes = zip(*extra_inputs)
            extra_inputs = list(zip(_RectifyNames(names), sizes))
        rectified = [input_t, seq_lengths, states, timestep]
        if "extra_inputs" in inspect.signature(self.apply_override).parameters:
            rectified.append(extra_inputs)
        return rectified

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        """One step of the cell.

        model: the step ModelHelper new operators go to.
        input_t: the (prepared) input of this step, 1 x N x D.
        seq_lengths: int32 N blob or None.
        states: the previous states.
        timestep: the int32 timestep blob.
        extra_inputs: list of (blob, dim) not subject to prepare_input.
        Returns the new states.
        """
        raise NotImplementedError("Abstract method")

    def prepare_input(self, model, input_blob):
        """Work that depends only on the input, done once over the whole
        sequence before the loop (default: none)."""
        return input_blob

    def get_output_state_index(self):
        """Index into the states of the primary step-wise output."""
        return 0

    def get_state_names(self):
        """Recurrent state names with self.name scoping applied."""
        return [self.scope(name) for name in self.get_state_names_override()]

    def get_state_names_override(self):
        raise NotImplementedError("Abstract method")

    def get_output_dim(self):
        raise NotImplementedError("Abstract method")

    def _prepare_output(self, model, states):
        return states[self.get_output_state_index()]

    def _prepare_output_sequence(self, model, state_outputs):
        # state_outputs alternates (all, last) per state
        return state_outputs[2 * self.get_output_state_index()]


# ---------------------------------------------------------------- initializers
class _ZeroStatesInitializer:
    """Creates one zero-filled 1-D parameter per state (broadcast over the
    batch by RecurrentNetwork)."""

    names = ()

    def __init__(self, hidden_size):
        self.hidden_size = hidden_size

    def create_states(self, model):
        return [_constant_param(model, n, [self.hidden_size], 0.0) for n in self.names]


class LSTMInitializer(_ZeroStatesInitializer):
    """Parameters ``initial_hidden_state`` and ``initial_cell_state``, shape
    [hidden_size], zeros."""

    names = ("initial_hidden_state", "initial_cell_state")


class HiddenStateInitializer(_ZeroStatesInitializer):
    """Parameter ``initial_hidden_state``, shape [hidden_size], zeros (GRU,
    BasicRNN)."""

    names = ("initial_hidden_state",)


class MultiRNNCellInitializer:
    def __init__(self, cells):
        self.cells = cells

    def create_states(self, model):
        states = []
        for i, cell in enumerate(self.cells):
            if cell.initializer is None:
                raise ValueError("Either initial states or initializer have to be set (layer %d)" % i)
            with scope.NameScope("layer_{}".format(i)), _name_scope(cell.name):
                states.extend(cell.initializer.create_states(model))
        return states


# ---------------------------------------------------------------- cells
class BasicRNNCell(RNNCell):
    """h_t = act(FC(h_{t-1}) + W_i x_t + b_i), act 'tanh' or 'relu'.

    With ``seq_lengths`` (int32, one length per batch row), rows whose
    sequence has ended (timestep >= length) keep their state, or get 0 with
    ``drop_states`` (GT / LE / Cast masks, as Caffe2's cell).
    """

    def __init__(self, input_size, hidden_size, forget_bias, memory_optimization, drop_states=False,
                 initializer=None, activation=None, **kwargs):
        super().__init__(initializer=initializer, **kwargs)
        self.initializer = initializer or HiddenStateInitializer(hidden_size)
        self.drop_states = drop_states
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.activation = activation
        if self.activation not in ("relu", "tanh"):
            raise RuntimeError("BasicRNNCell with unknown activation function (%s)" % self.activation)

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev = states[0]
        gates_t = brew.fc(model, hidden_t_prev, "gates_t", dim_in=self.hidden_size,
                          dim_out=self.hidden_size, axis=2)
        model.net.Sum([gates_t, input_t], gates_t)
        # Caffe2 wrote the activation to 'hidden_t' and then, with seq_lengths and without
        # drop_states, overwrote 'hidden_t' with the masked sum, so its backward pass failed (Mul's
        # gradient needs the first 'hidden_t'). The activation gets a name of its own there.
        act_name = "hidden_t_act" if seq_lengths is not None and not self.drop_states else "hidden_t"
        if self.activation == "tanh":
            hidden_t = model.net.Tanh(gates_t, act_name)
        else:
            hidden_t = model.net.Relu(gates_t, act_name)
        if seq_lengths is not None:
            valid_b = model.net.GT([seq_lengths, timestep], "valid_b", broadcast=1)
            invalid_b = model.net.LE([seq_lengths, timestep], "invalid_b", broadcast=1)
            # the masks are constants of the step: no gradient flows into them (a gradient reaching GT / LE
            # would be an error: they must not be differentiated, as in Caffe2)
            valid = model.net.StopGradient(model.net.Cast(valid_b, "valid_f", to="float"), "valid")
            invalid = model.net.StopGradient(model.net.Cast(invalid_b, "invalid_f", to="float"), "invalid")
            hidden_valid = model.net.Mul([hidden_t, valid], "hidden_valid", broadcast=1, axis=1)
            if self.drop_states:
                hidden_t = hidden_valid
            else:
                hidden_invalid = model.net.Mul([hidden_t_prev, invalid], "hidden_invalid",
                                               broadcast=1, axis=1)
                hidden_t = model.net.Add([hidden_valid, hidden_invalid], "hidden_t")
        return (hidden_t,)

    def prepare_input(self, model, input_blob):
        return brew.fc(model, input_blob, self.scope("i2h"), dim_in=self.input_size,
                       dim_out=self.hidden_size, axis=2)

    def get_state_names(self):
        return (self.scope("hidden_t"),)

    def get_output_dim(self):
        return self.hidden_size

    def get_input_params(self):
        return {"weights": self.scope("i2h") + "_w", "biases": self.scope("i2h") + "_b"}

    def get_recurrent_params(self):
        return {"weights": self.scope("gates_t") + "_w", "biases": self.scope("gates_t") + "_b"}


class LSTMCell(RNNCell):
    """The standard LSTM step: gates = FC(h_{t-1}) + (W_i x_t + b_i), then
    LSTMUnit (gate order [i, f, o, g]; f gets ``forget_bias``).
    ``memory_optimization`` recomputes the gates on the backward pass instead
    of keeping them per step."""

    def __init__(self, input_size, hidden_size, forget_bias, memory_optimization, drop_states=False,
                 initializer=None, **kwargs):
        super().__init__(initializer=initializer, **kwargs)
        self.initializer = initializer or LSTMInitializer(hidden_size=hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.forget_bias = float(forget_bias)
        self.memory_optimization = memory_optimization
        self.drop_states = drop_states
        self.gates_size = 4 * self.hidden_size

    def _gates_input(self, model, hidden_t_prev, extra_inputs):
        fc_input = hidden_t_prev
        fc_input_dim = self.hidden_size
        if extra_inputs:
            blobs, sizes = zip(*extra_inputs)
            fc_input = _concat(model, [hidden_t_prev] + list(blobs), "gates_concatenated_input_t", axis=2)
            fc_input_dim += sum(sizes)
        return fc_input, fc_input_dim

    def _lstm_unit(self, model, hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep, outputs):
        if seq_lengths is not None:
            inputs = [hidden_t_prev, cell_t_prev, gates_t, seq_lengths, timestep]
        else:
            inputs = [hidden_t_prev, cell_t_prev, gates_t, timestep]
        return model.net.LSTMUnit(inputs, outputs, forget_bias=self.forget_bias,
                                  drop_states=bool(self.drop_states),
                                  sequence_lengths=(seq_lengths is not None))

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev, cell_t_prev = states
        fc_input, fc_input_dim = self._gates_input(model, hidden_t_prev, extra_inputs)
        gates_t = brew.fc(model, fc_input, "gates_t", dim_in=fc_input_dim, dim_out=self.gates_size, axis=2)
        model.net.Sum([gates_t, input_t], gates_t)
        hidden_t, cell_t = self._lstm_unit(model, hidden_t_prev, cell_t_prev, self._normalize(model, gates_t),
                                           seq_lengths, timestep, ["hidden_state", "cell_state"])
        model.net.AddExternalOutputs(hidden_t, cell_t)
        if self.memory_optimization:
            self.recompute_blobs = [gates_t]
        return hidden_t, cell_t

    def _normalize(self, model, gates_t):
        """The gates LSTMUnit reads (the layer-norm cells normalize them)."""
        return gates_t

    def get_input_params(self):
        return {"weights": self.scope("i2h") + "_w", "biases": self.scope("i2h") + "_b"}

    def get_recurrent_params(self):
        return {"weights": self.scope("gates_t") + "_w", "biases": self.scope("gates_t") + "_b"}

    def prepare_input(self, model, input_blob):
        return brew.fc(model, input_blob, self.scope("i2h"), dim_in=self.input_size,
                       dim_out=self.gates_size, axis=2)

    def get_state_names_override(self):
        return ["hidden_t", "cell_t"]

    def get_output_dim(self):
        return self.hidden_size


class MILSTMCell(LSTMCell):
    """LSTM with multiplicative integration:
    gates = alpha*x*p + beta1*p + beta2*x + b, p = FC(h_{t-1}), x the
    prepared input; alpha, beta1, beta2 start at 1, b at 0."""

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev, cell_t_prev = states
        fc_input, fc_input_dim = self._gates_input(model, hidden_t_prev, extra_inputs)
        prev_t = brew.fc(model, fc_input, "prev_t", dim_in=fc_input_dim, dim_out=self.gates_size, axis=2)
        alpha = _constant_param(model, "alpha", [self.gates_size], 1.0)
        beta_h = _constant_param(model, "beta1", [self.gates_size], 1.0)
        beta_i = _constant_param(model, "beta2", [self.gates_size], 1.0)
        b = _constant_param(model, "b", [self.gates_size], 0.0)
        # (alpha * x + beta_h) * p + (beta_i * x + b)
        ax_bh = model.net.ElementwiseLinear([input_t, alpha, beta_h], "alpha_by_input_t_plus_beta_h", axis=2)
        ax_bh_p = model.net.Mul([ax_bh, prev_t], "alpha_by_input_t_plus_beta_h_by_prev_t")
        bi_x_b = model.net.ElementwiseLinear([input_t, beta_i, b], "beta_i_by_input_t_plus_b", axis=2)
        gates_t = model.net.Sum([ax_bh_p, bi_x_b], "gates_t")
        hidden_t, cell_t = self._lstm_unit(model, hidden_t_prev, cell_t_prev, self._normalize(model, gates_t),
                                           seq_lengths, timestep, ["hidden_t_intermediate", "cell_t"])
        model.net.AddExternalOutputs(cell_t, hidden_t)
        if self.memory_optimization:
            self.recompute_blobs = [gates_t]
        return hidden_t, cell_t

    def get_recurrent_params(self):
        return {"weights": self.scope("prev_t") + "_w", "biases": self.scope("prev_t") + "_b"}


def _layer_norm_gates(cell, model, gates_t):
    """brew.layer_norm over the 4H gates (axis -1) into ``gates_t_norm``, with a
    learned scale (``gates_t_norm_scale``, 1) and bias (``gates_t_norm_bias``, 0)."""
    normalized, _, _ = brew.layer_norm(model, gates_t, "gates_t_norm", dim_in=cell.gates_size, axis=-1)
    return normalized


class LayerNormLSTMCell(LSTMCell):
    """LSTMCell with layer normalization of the gates (FC(h_{t-1}) plus the
    prepared input) before LSTMUnit, as Caffe2's ``LayerNormLSTMCell``."""

    def _normalize(self, model, gates_t):
        return _layer_norm_gates(self, model, gates_t)


class LayerNormMILSTMCell(MILSTMCell):
    """MILSTMCell with layer normalization of the gates before LSTMUnit, as
    Caffe2's ``LayerNormMILSTMCell``."""

    def _normalize(self, model, gates_t):
        return _layer_norm_gates(self, model, gates_t)


class GRUCell(RNNCell):
    """GRU step from GRUUnit (h = u*h_prev + (1-u)*tanh(o), u = sigmoid(update)).

    The input is projected once to 3H ([reset, update, output]); per step
    r = FC_r(h) + x_r, u = FC_u(h) + x_u and
    o = FC_o(sigmoid(r) * h) + x_o, or with ``linear_before_reset``
    (cuDNN / torch.nn.GRU semantics) o = sigmoid(r) * FC_o(h) + x_o.
    ``forget_bias`` is accepted for signature compatibility and unused.
    """

    def __init__(self, input_size, hidden_size, forget_bias, memory_optimization, drop_states=False,
                 linear_before_reset=False, initializer=None, **kwargs):
        super().__init__(initializer=initializer, **kwargs)
        self.initializer = initializer or HiddenStateInitializer(hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.forget_bias = float(forget_bias)
        self.memory_optimization = memory_optimization
        self.drop_states = drop_states
        self.linear_before_reset = linear_before_reset

    def apply_override(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        hidden_t_prev = states[0]
        H = self.hidden_size
        input_t_reset, input_t_update, input_t_output = model.net.Split(
            [input_t], ["input_t_reset", "input_t_update", "input_t_output"], axis=2)
        reset_gate_t = brew.fc(model, hidden_t_prev, "reset_gate_t", dim_in=H, dim_out=H, axis=2)
        update_gate_t = brew.fc(model, hidden_t_prev, "update_gate_t", dim_in=H, dim_out=H, axis=2)
        reset_gate_t = model.net.Sum([reset_gate_t, input_t_reset], reset_gate_t)
        reset_gate_t_sigmoid = model.net.Sigmoid(reset_gate_t, "reset_gate_t_sigmoid")
        if self.linear_before_reset:
            output_gate_fc = brew.fc(model, hidden_t_prev, "output_gate_t", dim_in=H, dim_out=H, axis=2)
            output_gate_t = model.net.Mul([reset_gate_t_sigmoid, output_gate_fc], "output_gate_t_mul")
        else:
            modified_hidden_t_prev = model.net.Mul([reset_gate_t_sigmoid, hidden_t_prev],
                                                   "modified_hidden_t_prev")
            output_gate_t = brew.fc(model, modified_hidden_t_prev, "output_gate_t", dim_in=H, dim_out=H,
                                    axis=2)
        update_gate_t = model.net.Sum([update_gate_t, input_t_update], update_gate_t)
        output_gate_t = model.net.Sum([output_gate_t, input_t_output], "output_gate_t_summed")
        gates_t = _concat(model, [reset_gate_t, update_gate_t, output_gate_t], "gates_t", axis=2)
        if seq_lengths is not None:
            inputs = [hidden_t_prev, gates_t, seq_lengths, timestep]
        else:
            inputs = [hidden_t_prev, gates_t, timestep]
        hidden_t = model.net.GRUUnit(inputs, ["hidden_t"], forget_bias=self.forget_bias,
                                     drop_states=bool(self.drop_states),
                                     sequence_lengths=(seq_lengths is not None))
        model.net.AddExternalOutputs(hidden_t)
        return (hidden_t,)

    def prepare_input(self, model, input_blob):
        return brew.fc(model, input_blob, self.scope("i2h"), dim_in=self.input_size,
                       dim_out=3 * self.hidden_size, axis=2)

    def get_state_names_override(self):
        return ["hidden_t"]

    def get_output_dim(self):
        return self.hidden_size

    def get_input_params(self):
        return {"weights": self.scope("i2h") + "_w", "biases": self.scope("i2h") + "_b"}

    def get_recurrent_params(self):
        return {g: {"weights": self.scope(g) + "_w", "biases": self.scope(g) + "_b"}
                for g in ("reset_gate_t", "update_gate_t", "output_gate_t")}


class MultiRNNCell(RNNCell):
    """Stacked cells run in one step net. Layer i's primary output is layer
    i+1's input (through its ``prepare_input``, per step, for i+1 >= 1).
    Blobs are scoped ``<name>/layer_<i>/...``. ``residual_output_layers``
    lists layers (never 0) whose input is added to their output."""

    def __init__(self, cells, residual_output_layers=None, **kwargs):
        super().__init__(**kwargs)
        self.cells = list(cells)
        if not self.cells:
            raise ValueError("MultiRNNCell needs at least one cell")
        self.residual_output_layers = list(residual_output_layers or [])
        if 0 in self.residual_output_layers:
            raise ValueError("MultiRNNCell: layer 0 cannot have a residual output")

        output_index_per_layer = []
        base_index = 0
        for cell in self.cells:
            output_index_per_layer.append(base_index + cell.get_output_state_index())
            base_index += len(cell.get_state_names())

        # the layers whose outputs are summed into the final output: the last
        # layer and the chain of residual layers directly below it
        self.output_connected_layers = []
        self.output_indices = []
        for i in range(len(self.cells) - 1):
            if (i + 1) in self.residual_output_layers:
                self.output_connected_layers.append(i)
                self.output_indices.append(output_index_per_layer[i])
            else:
                self.output_connected_layers = []
                self.output_indices = []
        self.output_connected_layers.append(len(self.cells) - 1)
        self.output_indices.append(output_index_per_layer[-1])

        self.state_names = []
        for i, cell in enumerate(self.cells):
            self.state_names.extend(map(self.layer_scoper(i), cell.get_state_names()))
        self.initializer = MultiRNNCellInitializer(self.cells)

    def layer_scoper(self, layer_id):
        def helper(name):
            if self.name is None:
                return "layer_{}/{}".format(layer_id, name)
            return "{}/layer_{}/{}".format(self.name, layer_id, name)
        return helper

    def prepare_input(self, model, input_blob):
        input_blob = _RectifyName(input_blob)
        with _name_scope(self.name):
            return self.cells[0].prepare_input(model, input_blob)

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        input_t, seq_lengths, timestep = _RectifyNames([input_t, seq_lengths, timestep])
        states = _RectifyNames(states)
        if extra_inputs:
            names, sizes = zip(*extra_inputs)
            extra_inputs = list(zip(_RectifyNames(names), sizes))
        states_per_layer = [len(cell.get_state_names()) for cell in self.cells]
        if len(states) != sum(states_per_layer):
            raise ValueError("MultiRNNCell: %d states given, the layers have %d"
                             % (len(states), sum(states_per_layer)))
        next_states = []
        states_index = 0
        layer_input = input_t
        for i, layer_cell in enumerate(self.cells):
            with _name_scope(self.name), scope.NameScope("layer_{}".format(i)):
                num_states = states_per_layer[i]
                layer_states = states[states_index:states_index + num_states]
                states_index += num_states
                prepared_input = layer_cell.prepare_input(model, layer_input) if i > 0 else layer_input
                layer_next_states = layer_cell._apply(
                    model, prepared_input, seq_lengths, layer_states, timestep,
                    extra_inputs=(None if i > 0 else extra_inputs))
                # the layers' recompute sets are the stack's (Caffe2 dropped them)
                for b in layer_cell.recompute_blobs:
                    if str(b) not in [str(r) for r in self.recompute_blobs]:
                        self.recompute_blobs.append(b)
                if i != len(self.cells) - 1:
                    layer_output = layer_cell._prepare_output(model, layer_next_states)
                    if i > 0 and i in self.residual_output_layers:
                        layer_input = model.net.Sum([layer_output, layer_input],
                                                    "residual_output_{}".format(i))
                    else:
                        layer_input = layer_output
                next_states.extend(layer_next_states)
        return next_states

    def get_state_names(self):
        return self.state_names

    def get_output_state_index(self):
        index = 0
        for cell in self.cells[:-1]:
            index += len(cell.get_state_names())
        return index + self.cells[-1].get_output_state_index()

    def get_output_dim(self):
        return self.cells[-1].get_output_dim()

    def _prepare_output(self, model, states):
        connected = []
        state_index = 0
        for i, cell in enumerate(self.cells):
            n = len(cell.get_state_names())
            if i in self.output_connected_layers:
                connected.append(cell._prepare_output(model, states[state_index:state_index + n]))
            state_index += n
        if len(connected) > 1:
            with _name_scope(self.name):
                return model.net.Sum(connected, "residual_output")
        return connected[0]

    def _prepare_output_sequence(self, model, states):
        connected = []
        state_index = 0
        for i, cell in enumerate(self.cells):
            n = 2 * len(cell.get_state_names())
            if i in self.output_connected_layers:
                connected.append(cell._prepare_output_sequence(model, states[state_index:state_index + n]))
            state_index += n
        if len(connected) > 1:
            with _name_scope(self.name):
                return model.net.Sum(connected, "residual_output_sequence")
        return connected[0]


class DropoutCell(RNNCell):
    """Dropout on the output of ``internal_cell`` (Caffe2's ``DropoutCell``):
    not on the recurrent path. Inside a ``MultiRNNCell`` it drops the output a
    layer hands to the next one, per step; on a cell's (or the stack's last
    layer's) output sequence it is one Dropout over the whole sequence.

    ``dropout_ratio`` None or 0, or ``forward_only=True``, adds no op.
    ``is_test`` is required (Caffe2's rule): with 1 the Dropout ops pass their
    input through. The masks are int32 blobs ``<output>_with_dropout_mask<k>``
    (brew.dropout's ``_..._mask``). Each op gets a fresh random seed; pass
    ``seed`` for reproducible masks (every op of the cell then uses it; the
    masks still differ per timestep and per run). States, state names,
    initializer, ``prepare_input`` and the output dimension are the internal
    cell's.
    """

    def __init__(self, internal_cell, dropout_ratio=None, use_cudnn=False, seed=None, **kwargs):
        if "is_test" not in kwargs:
            raise ValueError("DropoutCell: argument 'is_test' is required")
        self.is_test = kwargs.pop("is_test")
        super().__init__(**kwargs)
        if dropout_ratio is not None and not 0 <= float(dropout_ratio) < 1:
            raise ValueError("DropoutCell: dropout_ratio must be in [0, 1), got %r" % (dropout_ratio,))
        self.internal_cell = internal_cell
        self.dropout_ratio = dropout_ratio
        self.use_cudnn = use_cudnn
        self.seed = seed
        self.recompute_blobs = internal_cell.recompute_blobs
        self.prepare_input = internal_cell.prepare_input
        self.get_output_state_index = internal_cell.get_output_state_index
        self.get_state_names = internal_cell.get_state_names
        self.get_output_dim = internal_cell.get_output_dim
        self.mask = 0

    @property
    def initializer(self):
        return self._initializer if self._initializer is not None else self.internal_cell.initializer

    @initializer.setter
    def initializer(self, value):
        self._initializer = value

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        return self.internal_cell._apply(model, input_t, seq_lengths, states, timestep, extra_inputs)

    def _prepare_output(self, model, states):
        output = self.internal_cell._prepare_output(model, states)
        return self._apply_dropout(model, output)

    def _prepare_output_sequence(self, model, state_outputs):
        output = self.internal_cell._prepare_output_sequence(model, state_outputs)
        return self._apply_dropout(model, output)

    def _apply_dropout(self, model, output):
        if not self.dropout_ratio or self.forward_only:
            return output
        kwargs = {} if self.seed is None else {"seed": int(self.seed)}
        with _name_scope(self.name or ""):
            output = brew.dropout(model, output, "{}_with_dropout_mask{}".format(output, self.mask),
                                  ratio=float(self.dropout_ratio), is_test=self.is_test,
                                  use_cudnn=self.use_cudnn, **kwargs)
        self.mask += 1
        return output


class AttentionCell(RNNCell):
    """A decoder cell with attention over encoder outputs (Caffe2's
    ``AttentionCell``). Each step runs ``decoder_cell`` with the previous
    attention context as an extra input (concatenated to its recurrent FC
    input), then computes the new context from the decoder's output
    (``attention.apply_*_attention``).

    States: the decoder's (its output state renamed ``<name>/hidden_t_external``)
    and ``<name>/attention_weighted_encoder_context_t`` [1, N, encoder_output_dim].
    The step output is the decoder output concatenated with the context
    (dimension decoder_state_dim + encoder_output_dim).

    encoder_outputs: [T_enc, N, encoder_output_dim], read by every step;
    encoder_lengths: int32 [N] or None; weighted_encoder_outputs: None (an FC
    of the encoder outputs is added) or a [T_enc, N, encoder_output_dim] blob.
    attention_type: AttentionType.Regular, Recurrent, Dot or SoftCoverage;
    SoftCoverage adds a third state, ``<name>/coverage_t`` [1, N, T_enc] (the
    attention weights summed over the steps so far), whose initial value
    ``build_initial_coverage`` makes (zeros of shape [T_enc]).
    """

    def __init__(self, encoder_output_dim, encoder_outputs, encoder_lengths, decoder_cell, decoder_state_dim,
                 attention_type, weighted_encoder_outputs, attention_memory_optimization, **kwargs):
        super().__init__(**kwargs)
        if attention_type not in (attention.AttentionType.Regular, attention.AttentionType.Recurrent,
                                  attention.AttentionType.Dot, attention.AttentionType.SoftCoverage):
            raise ValueError("AttentionCell: unknown attention_type %r" % (attention_type,))
        self.encoder_output_dim = encoder_output_dim
        self.encoder_outputs = encoder_outputs
        self.encoder_lengths = encoder_lengths
        self.decoder_cell = decoder_cell
        self.decoder_state_dim = decoder_state_dim
        self.weighted_encoder_outputs = weighted_encoder_outputs
        self.encoder_outputs_transposed = None
        self.attention_type = attention_type
        self.attention_memory_optimization = attention_memory_optimization
        self.hidden_t_intermediate = None
        self.attention_weights_3d = None
        self.coverage_weights = None

    @property
    def _coverage(self):
        return self.attention_type == attention.AttentionType.SoftCoverage

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        if extra_inputs:
            raise ValueError("AttentionCell takes no extra inputs (the attention context is its own)")
        if self.encoder_outputs_transposed is None:
            raise ValueError("AttentionCell: prepare_input must run before the step (apply_over_sequence "
                             "does this)")
        if self._coverage:
            if self.coverage_weights is None:
                raise ValueError("AttentionCell: SoftCoverage needs build_initial_coverage(model) first "
                                 "(LSTMWithAttention calls it)")
            decoder_prev_states, context_prev, coverage_prev = states[:-2], states[-2], states[-1]
        else:
            decoder_prev_states, context_prev = states[:-1], states[-1]
        decoder_states = self.decoder_cell._apply(
            model, input_t, seq_lengths, decoder_prev_states, timestep,
            extra_inputs=[(context_prev, self.encoder_output_dim)])
        self.hidden_t_intermediate = self.decoder_cell._prepare_output(model, decoder_states)
        common = dict(model=model, encoder_output_dim=self.encoder_output_dim,
                      encoder_outputs_transposed=self.encoder_outputs_transposed,
                      decoder_hidden_state_t=self.hidden_t_intermediate,
                      decoder_hidden_state_dim=self.decoder_state_dim, scope=self.name,
                      encoder_lengths=self.encoder_lengths)
        if self.attention_type == attention.AttentionType.Recurrent:
            context, self.attention_weights_3d, blobs = attention.apply_recurrent_attention(
                weighted_encoder_outputs=self.weighted_encoder_outputs,
                attention_weighted_encoder_context_t_prev=context_prev, **common)
        elif self.attention_type == attention.AttentionType.Regular:
            context, self.attention_weights_3d, blobs = attention.apply_regular_attention(
                weighted_encoder_outputs=self.weighted_encoder_outputs, **common)
        elif self.attention_type == attention.AttentionType.Dot:
            context, self.attention_weights_3d, blobs = attention.apply_dot_attention(**common)
        else:
            context, self.attention_weights_3d, blobs, coverage_t = attention.apply_soft_coverage_attention(
                weighted_encoder_outputs=self.weighted_encoder_outputs, coverage_t_prev=coverage_prev,
                coverage_weights=self.coverage_weights, **common)
        if self.attention_memory_optimization:
            self.recompute_blobs.extend(blobs)
        output = list(decoder_states) + [context]
        if self._coverage:
            output.append(coverage_t)
        k = self.decoder_cell.get_output_state_index()
        output[k] = model.Copy(output[k], self.scope("hidden_t_external"))
        model.net.AddExternalOutputs(*output)
        return output

    def get_attention_weights(self):
        """The step's attention weights blob [N, T_enc, 1] (after the cell was applied)."""
        return self.attention_weights_3d

    def prepare_input(self, model, input_blob):
        if self.encoder_outputs_transposed is None:
            self.encoder_outputs_transposed = brew.transpose(
                model, self.encoder_outputs, self.scope("encoder_outputs_transposed"), axes=[1, 2, 0])
        if self.weighted_encoder_outputs is None and self.attention_type != attention.AttentionType.Dot:
            self.weighted_encoder_outputs = brew.fc(
                model, self.encoder_outputs, self.scope("weighted_encoder_outputs"),
                dim_in=self.encoder_output_dim, dim_out=self.encoder_output_dim, axis=2)
        return self.decoder_cell.prepare_input(model, input_blob)

    def build_initial_coverage(self, model):
        """SoftCoverage: adds the coverage projection of the encoder outputs
        (``<name>/coverage_weights``, an FC) and returns the initial coverage,
        zeros of shape [T_enc] (``<name>/initial_coverage``, computed from the
        encoder outputs' shape when the net runs)."""
        if not self._coverage:
            raise ValueError("AttentionCell.build_initial_coverage: the attention type is not "
                             "SoftCoverage")
        self.coverage_weights = brew.fc(model, self.encoder_outputs, self.scope("coverage_weights"),
                                        dim_in=self.encoder_output_dim, dim_out=self.encoder_output_dim,
                                        axis=2)
        encoder_length = model.net.Slice(model.net.Shape(self.encoder_outputs), starts=[0], ends=[1])
        return model.net.ConstantFill(encoder_length, self.scope("initial_coverage"), value=0.0,
                                      input_as_shape=1)

    def get_state_names(self):
        names = list(self.decoder_cell.get_state_names())
        names[self.get_output_state_index()] = self.scope("hidden_t_external")
        names.append(self.scope("attention_weighted_encoder_context_t"))
        if self._coverage:
            names.append(self.scope("coverage_t"))
        return names

    def get_output_dim(self):
        return self.decoder_state_dim + self.encoder_output_dim

    def get_output_state_index(self):
        return self.decoder_cell.get_output_state_index()

    def _prepare_output(self, model, states):
        with _name_scope(self.name):
            return _concat(model, [self.hidden_t_intermediate, states[-2 if self._coverage else -1]],
                           "states_and_context_combination", axis=2)

    def _prepare_output_sequence(self, model, state_outputs):
        extra = 2 if self._coverage else 1  # the attention states after the decoder's
        decoder_output = self.decoder_cell._prepare_output_sequence(model, state_outputs[:-2 * extra])
        context_all = state_outputs[2 * (len(self.get_state_names()) - extra)]
        with _name_scope(self.name):
            return _concat(model, [decoder_output, context_all], "states_and_context_combination", axis=2)


class _DecoderAttentionCell(AttentionCell):
    """An AttentionCell whose decoder, a ``decoder_class`` named
    ``<name>/decoder``, is built from the LSTM arguments."""

    decoder_class = None

    def __init__(self, encoder_output_dim, encoder_outputs, encoder_lengths, decoder_input_dim,
                 decoder_state_dim, name, attention_type, weighted_encoder_outputs, forget_bias,
                 lstm_memory_optimization, attention_memory_optimization, forward_only=False):
        decoder_cell = self.decoder_class(
            input_size=decoder_input_dim, hidden_size=decoder_state_dim, forget_bias=forget_bias,
            memory_optimization=lstm_memory_optimization, name="{}/decoder".format(name), forward_only=False,
            drop_states=False)
        super().__init__(encoder_output_dim=encoder_output_dim, encoder_outputs=encoder_outputs,
                         encoder_lengths=encoder_lengths, decoder_cell=decoder_cell,
                         decoder_state_dim=decoder_state_dim, name=name, attention_type=attention_type,
                         weighted_encoder_outputs=weighted_encoder_outputs,
                         attention_memory_optimization=attention_memory_optimization,
                         forward_only=forward_only)


class LSTMWithAttentionCell(_DecoderAttentionCell):
    """AttentionCell around an LSTMCell decoder named ``<name>/decoder``."""

    decoder_class = LSTMCell


class MILSTMWithAttentionCell(_DecoderAttentionCell):
    """AttentionCell around an MILSTMCell decoder named ``<name>/decoder``.
    (Caffe2's took no ``encoder_lengths`` and so failed to construct; here it
    is an optional keyword.)"""

    decoder_class = MILSTMCell

    def __init__(self, encoder_output_dim, encoder_outputs, decoder_input_dim, decoder_state_dim, name,
                 attention_type, weighted_encoder_outputs, forget_bias, lstm_memory_optimization,
                 attention_memory_optimization, forward_only=False, encoder_lengths=None):
        super().__init__(encoder_output_dim, encoder_outputs, encoder_lengths, decoder_input_dim,
                         decoder_state_dim, name, attention_type, weighted_encoder_outputs, forget_bias,
                         lstm_memory_optimization, attention_memory_optimization, forward_only)


def LSTMWithAttention(model, decoder_inputs, decoder_input_lengths, initial_decoder_hidden_state,
                      initial_decoder_cell_state, initial_attention_weighted_encoder_context,
                      encoder_output_dim, encoder_outputs, encoder_lengths, decoder_input_dim,
                      decoder_state_dim, scope,
                      attention_type=attention.AttentionType.Regular, outputs_with_grads=(0, 4),
                      weighted_encoder_outputs=None, lstm_memory_optimization=False,
                      attention_memory_optimization=False, forget_bias=0.0, forward_only=False):
    """An LSTM decoder with attention over ``encoder_outputs`` (arXiv
    1409.0473, with the context computed after the hidden state as in
    1508.04025), one RecurrentNetwork op. Returns
    ``(h_all, h_last, c_all, c_last, context_all, context_last)``, with
    SoftCoverage also ``(coverage_all, coverage_last)``; ``outputs_with_grads``
    indexes that tuple."""
    cell = LSTMWithAttentionCell(
        encoder_output_dim=encoder_output_dim, encoder_outputs=encoder_outputs,
        encoder_lengths=encoder_lengths, decoder_input_dim=decoder_input_dim,
        decoder_state_dim=decoder_state_dim, name=scope, attention_type=attention_type,
        weighted_encoder_outputs=weighted_encoder_outputs, forget_bias=forget_bias,
        lstm_memory_optimization=lstm_memory_optimization,
        attention_memory_optimization=attention_memory_optimization, forward_only=forward_only)
    initial_states = [initial_decoder_hidden_state, initial_decoder_cell_state,
                      initial_attention_weighted_encoder_context]
    if attention_type == attention.AttentionType.SoftCoverage:
        initial_states.append(cell.build_initial_coverage(model))
    _, result = cell.apply_over_sequence(model=model, inputs=decoder_inputs,
                                         seq_lengths=decoder_input_lengths, initial_states=initial_states,
                                         outputs_with_grads=outputs_with_grads)
    return result


class UnrolledCell(RNNCell):
    """``cell`` unrolled into T copies of its step in the net itself, no
    RecurrentNetwork op (Caffe2's ``UnrolledCell``, what ``static_rnn_unroll_size``
    builds). Step t runs under name scope ``timestep_<t>`` with
    ``ParameterSharing({'timestep_<t>': ''})``, so all steps use one set of
    parameters, named as the RecurrentNetwork version names them; its timestep
    is an int32 [1] blob ``timestep_<t>/timestep`` filled in ``param_init_net``.
    The input must have exactly T steps. Each state's steps are concatenated
    into ``<state>_concat``; outputs not in ``outputs_with_grads`` get a
    ZeroGradient op, so that the backward pass has a (zero) gradient for them.
    """

    def __init__(self, cell, T):
        super().__init__(name=getattr(cell, "name", None))
        if int(T) < 1:
            raise ValueError("UnrolledCell: T must be >= 1, got %r" % (T,))
        self.T = int(T)
        self.cell = cell

    def apply_over_sequence(self, model, inputs, seq_lengths=None, initial_states=None,
                            outputs_with_grads=None):
        if initial_states is None:
            raise ValueError("UnrolledCell (static_rnn_unroll_size) needs the initial states: the "
                             "initializers' 1-D states are broadcast by the RecurrentNetwork op only")
        inputs = self.cell.prepare_input(model, _RectifyName(inputs))
        seq_lengths = _RectifyName(seq_lengths)
        split = model.net.Split(inputs, [str(inputs) + "_timestep_{}".format(t) for t in range(self.T)],
                                axis=0)
        split = list(split) if isinstance(split, (list, tuple)) else [split]
        outer = scope.CurrentNameScope()
        states = _RectifyNames(list(initial_states))
        per_step = []
        for t in range(self.T):
            name = "timestep_{}".format(t)
            with ParameterSharing({name: ""}), scope.NameScope(name):
                timestep = model.param_init_net.ConstantFill(
                    [], "timestep", value=t, shape=[1], dtype=core.DataType.INT32)
                states = self.cell._apply(model=model, input_t=split[t], seq_lengths=seq_lengths,
                                          states=states, timestep=timestep)
            per_step.append(states)
        first = outer + "timestep_0/"
        all_states = []
        for steps in zip(*per_step):
            base = str(steps[0])
            base = base[len(first):] if base.startswith(first) else base[len(outer):]
            concat = model.net.Concat(list(steps), [base + "_concat", base + "_concat_info"], axis=0)
            all_states.append(concat[0])
        outputs = tuple(x for pair in zip(all_states, states) for x in pair)
        if outputs_with_grads is None:
            outputs_with_grads = [2 * self.cell.get_output_state_index()]
        for i in sorted(set(range(len(outputs))) - {int(k) for k in outputs_with_grads}):
            model.net.ZeroGradient(outputs[i], [])
        return self.cell._prepare_output_sequence(model, outputs), outputs

    def get_state_names(self):
        return self.cell.get_state_names()

    def get_output_state_index(self):
        return self.cell.get_output_state_index()

    def get_output_dim(self):
        return self.cell.get_output_dim()


# ---------------------------------------------------------------- builders
def _LSTM(cell_class, model, input_blob, seq_lengths, initial_states, dim_in, dim_out, scope=None,
          outputs_with_grads=(0,), return_params=False, memory_optimization=False, forget_bias=0.0,
          forward_only=False, drop_states=False, return_last_layer_only=True, static_rnn_unroll_size=None,
          **cell_kwargs):
    """Adds a (stacked) recurrent network of ``cell_class`` cells to ``model``
    as one RecurrentNetwork op.

    input_blob: T x N x dim_in. seq_lengths: int32 N blob or None.
    initial_states: the initial states of every layer in order (LSTM: h, c
        per layer; GRU/BasicRNN: h), each 1-D (broadcast), N x H or 1 x N x H;
        None creates zero parameters via the cells' initializers.
    dim_out: hidden size, or a list of them for a stack (all layers in one
        step net).
    outputs_with_grads: indices into the LAST layer's outputs
        ((h_all, h_last, c_all, c_last) for an LSTM, (h_all, h_last) for a
        GRU) that receive external gradients.
    return_params: append ``{'input': ..., 'recurrent': ...}`` with the
        parameter names (per layer lists for a stack).
    memory_optimization: recompute the gates on backward.
    return_last_layer_only: return only the last layer's outputs (default),
        else every layer's.
    static_rnn_unroll_size: T to unroll the step T times into the net itself
        (UnrolledCell) instead of one RecurrentNetwork op; the input must
        have exactly T steps and ``initial_states`` must be given.
    """
    if not isinstance(dim_out, (list, tuple)):
        dim_out = [dim_out]
    dim_out = list(dim_out)
    if not dim_out:
        raise ValueError("dim_out must be an int or a non-empty list")
    num_layers = len(dim_out)

    cells = []
    for i in range(num_layers):
        cells.append(cell_class(
            input_size=(dim_in if i == 0 else dim_out[i - 1]),
            hidden_size=dim_out[i],
            forget_bias=forget_bias,
            memory_optimization=memory_optimization,
            name=scope if num_layers == 1 else None,
            forward_only=forward_only,
            drop_states=drop_states,
            **cell_kwargs))
    cell = MultiRNNCell(cells, name=scope, forward_only=forward_only) if num_layers > 1 else cells[0]
    if static_rnn_unroll_size is not None:
        cell = UnrolledCell(cell, static_rnn_unroll_size)

    outputs_per_layer = [2 * len(c.get_state_names()) for c in cells]
    shift = sum(outputs_per_layer[:-1])
    outputs_with_grads = [shift + int(i) for i in outputs_with_grads]
    _, result = cell.apply_over_sequence(model=model, inputs=input_blob, seq_lengths=seq_lengths,
                                         initial_states=initial_states, outputs_with_grads=outputs_with_grads)
    if return_last_layer_only:
        result = result[shift:]
    if return_params:
        result = list(result) + [_params_of(cell, cells, scope)]
    return tuple(result)


def _params_of(cell, cells, scope_name):
    """{'input': ..., 'recurrent': ...} parameter names of a built cell."""
    if len(cells) == 1:
        ns = scope.CurrentNameScope()
        return {"input": _prefix_all(cell.get_input_params(), ns),
                "recurrent": _prefix_all(cell.get_recurrent_params(), ns)}
    prefix = scope.CurrentNameScope() + (scope_name + "/" if scope_name else "")
    inputs, recs = [], []
    for i, c in enumerate(cells):
        lp = prefix + "layer_{}/".format(i)
        ip = c.get_input_params()
        rp = c.get_recurrent_params()
        ip_prefix = prefix if i == 0 else lp
        inputs.append({k: ip_prefix + v for k, v in ip.items()})
        recs.append(_prefix_all(rp, lp))
    return {"input": inputs, "recurrent": recs}


def _prefix_all(d, p):
    return {k: (_prefix_all(v, p) if isinstance(v, dict) else p + v) for k, v in d.items()}


LSTM = functools.partial(_LSTM, LSTMCell)
BasicRNN = functools.partial(_LSTM, BasicRNNCell)
MILSTM = functools.partial(_LSTM, MILSTMCell)
LayerNormLSTM = functools.partial(_LSTM, LayerNormLSTMCell)
LayerNormMILSTM = functools.partial(_LSTM, LayerNormMILSTMCell)
GRU = functools.partial(_LSTM, GRUCell)


def _layered_LSTM(model, input_blob, seq_lengths, initial_states, dim_in, dim_out, scope,
                  outputs_with_grads=(0,), return_params=False, memory_optimization=False, forget_bias=0.0,
                  forward_only=False, drop_states=False, create_lstm=None):
    """One RecurrentNetwork op per layer (compare ``LSTM`` with a list
    ``dim_out``, which runs all layers in one op).

    Layer i+1 reads layer i's ``h_all`` and is scoped ``<scope>_layer_<i+1>``.
    Every layer starts from its OWN initial states (Caffe2 seeded layer i+1
    with layer i's final states): ``initial_states`` is either 2*num_layers
    blobs (h, c per layer), or 2 blobs used by every layer (all layers must
    then have the same size), or None (zero parameters per layer).
    ``outputs_with_grads`` applies to the last layer; the inner layers pass
    gradients through their ``h_all`` only. ``return_params`` is not
    supported here. Returns the last layer's (h_all, h_last, c_all, c_last).
    """
    params = dict(model=model, input_blob=input_blob, seq_lengths=seq_lengths, initial_states=initial_states,
                  dim_in=dim_in, dim_out=dim_out, scope=scope, outputs_with_grads=outputs_with_grads,
                  return_params=return_params, memory_optimization=memory_optimization,
                  forget_bias=forget_bias, forward_only=forward_only, drop_states=drop_states)
    if not isinstance(dim_out, (list, tuple)):
        return create_lstm(**params)
    dim_out = list(dim_out)
    if not dim_out:
        raise ValueError("dim_out list can't be empty")
    if len(dim_out) == 1:
        params["dim_out"] = dim_out[0]
        return create_lstm(**params)
    if return_params:
        raise ValueError("layered_LSTM: return_params is not supported for several layers")

    num_layers = len(dim_out)
    if initial_states is None:
        per_layer = [None] * num_layers
    else:
        initial_states = list(initial_states)
        if len(initial_states) == 2 * num_layers:
            per_layer = [initial_states[2 * i:2 * i + 2] for i in range(num_layers)]
        elif len(initial_states) == 2:
            if len(set(dim_out)) != 1:
                raise ValueError("layered_LSTM: 2 initial states shared by layers of different sizes %r; "
                                 "give 2 per layer" % dim_out)
            per_layer = [initial_states] * num_layers
        else:
            raise ValueError("layered_LSTM: initial_states must hold 2 or 2*num_layers (%d) blobs, got %d"
                             % (2 * num_layers, len(initial_states)))
    outputs = None
    layer_input, layer_dim_in = input_blob, dim_in
    for i, d in enumerate(dim_out):
        params.update(
            input_blob=layer_input, dim_in=layer_dim_in, dim_out=d, initial_states=per_layer[i],
            scope=scope if i == 0 else "{}_layer_{}".format(scope, i),
            outputs_with_grads=outputs_with_grads if i == num_layers - 1 else (0,))
        outputs = create_lstm(**params)
        layer_input, layer_dim_in = outputs[0], d
    return outputs


layered_LSTM = functools.partial(_layered_LSTM, create_lstm=LSTM)


def GetLSTMParamNames():
    """Caffe2's names of an LSTM's per-gate parameters, in the order of its gates (LSTMUnit's
    [i, f, o, g]): ``{'weights': [...], 'biases': [...]}``."""
    return {"weights": ["input_gate_w", "forget_gate_w", "output_gate_w", "cell_w"],
            "biases": ["input_gate_b", "forget_gate_b", "output_gate_b", "cell_b"]}


def InitFromLSTMParams(lstm_pblobs, param_values):
    """Caffe2's: sets an LSTM's parameters from per-gate values. ``lstm_pblobs`` is the parameter dict
    ``LSTM(..., return_params=True)`` gives for one layer (``{'input': {'weights': blob, 'biases':
    blob}, 'recurrent': {...}}``); ``param_values[input_type][name]`` holds the values of each name
    of ``GetLSTMParamNames()`` for the input types given. Each blob of the current workspace
    becomes the gates' values in gate order, flattened and reshaped to the blob's shape (float32);
    the values must number the blob's elements (ValueError naming the blob, else)."""
    import numpy as np
    from . import workspace
    names = GetLSTMParamNames()
    for input_type in param_values:
        blobs = lstm_pblobs[input_type]
        if not isinstance(blobs, dict):
            raise TypeError("InitFromLSTMParams: lstm_pblobs['%s'] must be one layer's {'weights': ..., "
                            "'biases': ...} (LSTM(..., return_params=True) with one layer), got %s"
                            % (input_type, type(blobs).__name__))
        for kind in ("weights", "biases"):
            values = np.concatenate([np.asarray(param_values[input_type][n], np.float64).ravel()
                                     for n in names[kind]])
            blob = str(blobs[kind])
            cur = workspace.FetchBlob(blob)
            if values.size != cur.size:
                raise ValueError("InitFromLSTMParams: the %s gate %s of '%s' hold %d values together, but blob "
                                 "'%s' has %d %s" % (input_type, kind, "', '".join(names[kind]), values.size,
                                                     blob, cur.size, list(cur.shape)))
            workspace.FeedBlob(blob, values.reshape(cur.shape).astype(np.float32))


# Caffe2 names that cannot be provided here: asking for one says why instead of a bare AttributeError
_NOT_PROVIDED = {
    "cudnn_LSTM": "it runs cuDNN's LSTM on a GPU, and this build runs on the CPU only; "
                  "rnn_cell.LSTM builds the same layers (dim_out=[hidden] * num_layers)",
}


__getattr__ = not_provided(__name__, "rnn_cell", _NOT_PROVIDED)
