"""Copy weights between rnn_cell.LSTM / rnn_cell.GRU parameters in the current
workspace and torch.nn.LSTM / torch.nn.GRU (state_dict layout).

torch is optional: it is imported only inside the functions that need it.

Layouts (H hidden size, D input size, l the layer):

LSTM. torch: ``weight_ih_l<l>`` (4H x D), ``weight_hh_l<l>`` (4H x H),
``bias_ih_l<l>``, ``bias_hh_l<l>`` (4H), gate blocks [i, f, g, o].
recurrent: ``i2h_w`` (4H x D), ``i2h_b``, ``gates_t_w`` (4H x H),
``gates_t_b``, gate blocks [i, f, o, g] (LSTMUnit's order). So
i2h = weight_ih / bias_ih and gates_t = weight_hh / bias_hh with the last two
gate blocks swapped. rnn_cell.LSTM must be built with ``forget_bias=0``.

GRU. torch: ``weight_ih_l<l>`` (3H x D, [r, z, n]), ``weight_hh_l<l>`` (3H x
H), ``bias_ih_l<l>``, ``bias_hh_l<l>``, with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn)) and h' = (1 - z) * n + z * h.
recurrent's GRUCell(linear_before_reset=True) computes
o = sigmoid(r) * FC_o(h) + x_o and GRUUnit h' = u * h + (1 - u) * tanh(o),
the same function with u = z. So ``i2h`` = (weight_ih, bias_ih) unchanged
([reset, update, output] = [r, z, n]) and ``reset_gate_t``,
``update_gate_t``, ``output_gate_t`` are the three H-row blocks of
(weight_hh, bias_hh). rnn_cell.GRU must be built with
``linear_before_reset=True``.

Blob names, for the ``scope`` given to rnn_cell (with any NameScope
prepended): one layer ``<scope>/i2h_w``, ``<scope>/gates_t_w`` ...; several
layers: layer 0's input projection ``<scope>/i2h_*`` and its recurrent part
``<scope>/layer_0/...``, layer l >= 1 ``<scope>/layer_<l>/i2h_*`` and
``<scope>/layer_<l>/...``.

Only unidirectional modules with biases and without ``proj_size`` map to
these cells; others raise ValueError.
"""

import re

import numpy as np

from . import workspace

__all__ = [
    "lstm_blob_names", "gru_blob_names",
    "lstm_from_torch", "lstm_to_torch", "gru_from_torch", "gru_to_torch",
]

# torch [i, f, g, o] <-> LSTMUnit [i, f, o, g]: swapping the last two blocks
# is its own inverse.
_LSTM_BLOCKS = (0, 1, 3, 2)
_GRU_GATES = ("reset_gate_t", "update_gate_t", "output_gate_t")


def _layer_prefixes(scope, num_layers, layer):
    """(input-projection prefix, recurrent prefix) of ``layer``."""
    if num_layers == 1:
        return scope + "/", scope + "/"
    lp = "%s/layer_%d/" % (scope, layer)
    return (scope + "/" if layer == 0 else lp), lp


def lstm_blob_names(scope, num_layers=1):
    """Per layer, {'i2h_w', 'i2h_b', 'gates_t_w', 'gates_t_b'} -> blob name."""
    out = []
    for layer in range(num_layers):
        ip, rp = _layer_prefixes(scope, num_layers, layer)
        out.append({"i2h_w": ip + "i2h_w", "i2h_b": ip + "i2h_b",
                    "gates_t_w": rp + "gates_t_w", "gates_t_b": rp + "gates_t_b"})
    return out


def gru_blob_names(scope, num_layers=1):
    """Per layer, {'i2h_w', 'i2h_b', '<gate>_w', '<gate>_b' for the reset,
    update and output gates} -> blob name."""
    out = []
    for layer in range(num_layers):
        ip, rp = _layer_prefixes(scope, num_layers, layer)
        d = {"i2h_w": ip + "i2h_w", "i2h_b": ip + "i2h_b"}
        for g in _GRU_GATES:
            d[g + "_w"] = rp + g + "_w"
            d[g + "_b"] = rp + g + "_b"
        out.append(d)
    return out


def _state_dict(module_or_state_dict, kind):
    """A {key: float32 ndarray} copy of a torch module's or state_dict's
    parameters, after checking the module is one these cells can express."""
    sd = module_or_state_dict
    if hasattr(sd, "state_dict") and callable(sd.state_dict):
        mod = sd
        if getattr(mod, "bidirectional", False):
            raise ValueError("torch_interop: bidirectional torch.nn.%s is not supported" % kind)
        if getattr(mod, "proj_size", 0):
            raise ValueError("torch_interop: torch.nn.LSTM with proj_size is not supported")
        if not getattr(mod, "bias", True):
            raise ValueError("torch_interop: torch.nn.%s(bias=False) is not supported" % kind)
        sd = mod.state_dict()
    out = {}
    for k, v in sd.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        out[k] = np.ascontiguousarray(np.asarray(v, dtype=np.float32))
    return out


def _num_layers(sd, kind):
    layers = sorted(int(m.group(1)) for k in sd for m in [re.fullmatch(r"weight_ih_l(\d+)", k)] if m)
    if not layers or layers != list(range(len(layers))):
        raise ValueError("torch_interop: not a torch.nn.%s state_dict (keys %r)" % (kind, sorted(sd)))
    for k in sd:
        if k.endswith("_reverse"):
            raise ValueError("torch_interop: bidirectional torch.nn.%s is not supported (key %r)" % (kind, k))
        if k.startswith("weight_hr"):
            raise ValueError("torch_interop: torch.nn.LSTM with proj_size is not supported")
    for l in layers:
        for k in ("weight_hh_l%d", "bias_ih_l%d", "bias_hh_l%d"):
            if k % l not in sd:
                raise ValueError("torch_interop: torch.nn.%s state_dict lacks %r (bias=False is not "
                                 "supported)" % (kind, k % l))
    return len(layers)


def _lstm_perm(a):
    """Reorders the 4 gate blocks along axis 0 (torch <-> LSTMUnit)."""
    blocks = np.split(a, 4, axis=0)
    return np.ascontiguousarray(np.concatenate([blocks[i] for i in _LSTM_BLOCKS], axis=0))


def lstm_from_torch(module_or_state_dict, scope, feed=True):
    """torch.nn.LSTM (module or state_dict) -> rnn_cell.LSTM parameters.

    Returns {blob name: float32 array}; with ``feed`` also feeds them into
    the current workspace (after the model's param_init_net has run, so
    these values win)."""
    sd = _state_dict(module_or_state_dict, "LSTM")
    n = _num_layers(sd, "LSTM")
    out = {}
    for l, names in enumerate(lstm_blob_names(scope, n)):
        out[names["i2h_w"]] = _lstm_perm(sd["weight_ih_l%d" % l])
        out[names["i2h_b"]] = _lstm_perm(sd["bias_ih_l%d" % l])
        out[names["gates_t_w"]] = _lstm_perm(sd["weight_hh_l%d" % l])
        out[names["gates_t_b"]] = _lstm_perm(sd["bias_hh_l%d" % l])
    if feed:
        for k, v in out.items():
            workspace.FeedBlob(k, v)
    return out


def lstm_to_torch(scope, num_layers=1, module=None, suffix=""):
    """rnn_cell.LSTM parameters in the current workspace -> torch.nn.LSTM
    state_dict layout, as {key: float32 ndarray}.

    ``suffix='_grad'`` reads the gradient blobs (``<param>_grad``) instead,
    to compare with the torch parameters' ``.grad``. With ``module`` (and no
    suffix) the values are also loaded into the module."""
    out = {}
    for l, names in enumerate(lstm_blob_names(scope, num_layers)):
        out["weight_ih_l%d" % l] = _lstm_perm(workspace.FetchBlob(names["i2h_w"] + suffix))
        out["weight_hh_l%d" % l] = _lstm_perm(workspace.FetchBlob(names["gates_t_w"] + suffix))
        out["bias_ih_l%d" % l] = _lstm_perm(workspace.FetchBlob(names["i2h_b"] + suffix))
        out["bias_hh_l%d" % l] = _lstm_perm(workspace.FetchBlob(names["gates_t_b"] + suffix))
    if module is not None:
        _load(module, out, suffix, "LSTM", num_layers)
    return out


def gru_from_torch(module_or_state_dict, scope, feed=True):
    """torch.nn.GRU (module or state_dict) -> rnn_cell.GRU parameters (the
    GRU must be built with ``linear_before_reset=True``). Returns {blob name:
    float32 array}; with ``feed`` also feeds them."""
    sd = _state_dict(module_or_state_dict, "GRU")
    n = _num_layers(sd, "GRU")
    out = {}
    for l, names in enumerate(gru_blob_names(scope, n)):
        out[names["i2h_w"]] = sd["weight_ih_l%d" % l]
        out[names["i2h_b"]] = sd["bias_ih_l%d" % l]
        w_blocks = np.split(sd["weight_hh_l%d" % l], 3, axis=0)
        b_blocks = np.split(sd["bias_hh_l%d" % l], 3, axis=0)
        for g, w, b in zip(_GRU_GATES, w_blocks, b_blocks):
            out[names[g + "_w"]] = np.ascontiguousarray(w)
            out[names[g + "_b"]] = np.ascontiguousarray(b)
    if feed:
        for k, v in out.items():
            workspace.FeedBlob(k, v)
    return out


def gru_to_torch(scope, num_layers=1, module=None, suffix=""):
    """rnn_cell.GRU parameters (or, with ``suffix='_grad'``, their gradients)
    in the current workspace -> torch.nn.GRU state_dict layout, as {key:
    float32 ndarray}. With ``module`` (and no suffix) also loads them."""
    out = {}
    for l, names in enumerate(gru_blob_names(scope, num_layers)):
        out["weight_ih_l%d" % l] = workspace.FetchBlob(names["i2h_w"] + suffix)
        out["bias_ih_l%d" % l] = workspace.FetchBlob(names["i2h_b"] + suffix)
        out["weight_hh_l%d" % l] = np.concatenate(
            [workspace.FetchBlob(names[g + "_w"] + suffix) for g in _GRU_GATES], axis=0)
        out["bias_hh_l%d" % l] = np.concatenate(
            [workspace.FetchBlob(names[g + "_b"] + suffix) for g in _GRU_GATES], axis=0)
    if module is not None:
        _load(module, out, suffix, "GRU", num_layers)
    return out


def _load(module, arrays, suffix, kind, num_layers):
    if suffix:
        raise ValueError("torch_interop: cannot load gradients (suffix=%r) into a module" % suffix)
    import torch
    _state_dict(module, kind)  # checks the module kind
    if getattr(module, "num_layers", num_layers) != num_layers:
        raise ValueError("torch_interop: module has %d layers, the parameters %d"
                         % (module.num_layers, num_layers))
    sd = module.state_dict()
    with torch.no_grad():
        for k, v in arrays.items():
            if tuple(sd[k].shape) != v.shape:
                raise ValueError("torch_interop: %s has shape %s in the module, %s here"
                                 % (k, tuple(sd[k].shape), v.shape))
            sd[k].copy_(torch.from_numpy(np.ascontiguousarray(v)))
