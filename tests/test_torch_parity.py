"""rnn_cell.LSTM / rnn_cell.GRU against torch.nn.LSTM / torch.nn.GRU with
weights copied through recurrent.torch_interop: outputs, final states and the
gradients of the input, the initial states and every parameter (DESIGN.md 5).

Max abs differences are printed as ``MAXDIFF <what> <value>`` (pytest -s)."""

import numpy as np
import pytest

from recurrent import rnn_cell, torch_interop, workspace
from recurrent.model_helper import ModelHelper

torch = pytest.importorskip("torch")


def report(what, a, b):
    d = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
    print("MAXDIFF %s %.3g" % (what, d))
    return d


def close(what, a, b, tol=2e-5):
    report(what, a, b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def fetch(b):
    return workspace.FetchBlob(str(b))


def test_interop_round_trip_and_names():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(3, 4, num_layers=2)
    blobs = torch_interop.lstm_from_torch(lstm, "s")
    names = torch_interop.lstm_blob_names("s", 2)
    assert sorted(blobs) == sorted(n for layer in names for n in layer.values())
    assert "s/i2h_w" in blobs and "s/layer_0/gates_t_w" in blobs and "s/layer_1/i2h_w" in blobs
    back = torch_interop.lstm_to_torch("s", 2)
    for k, v in lstm.state_dict().items():
        np.testing.assert_array_equal(back[k], v.numpy())
    # gate order: torch [i, f, g, o] -> LSTMUnit [i, f, o, g]
    H = 4
    w = lstm.weight_hh_l0.detach().numpy()
    np.testing.assert_array_equal(blobs["s/layer_0/gates_t_w"][2 * H:3 * H], w[3 * H:])
    np.testing.assert_array_equal(blobs["s/layer_0/gates_t_w"][3 * H:], w[2 * H:3 * H])
    other = torch.nn.LSTM(3, 4, num_layers=2)
    torch_interop.lstm_to_torch("s", 2, module=other)
    for k, v in lstm.state_dict().items():
        assert torch.equal(other.state_dict()[k], v)

    gru = torch.nn.GRU(3, 4, num_layers=1)
    blobs = torch_interop.gru_from_torch(gru.state_dict(), "g")
    assert sorted(blobs) == sorted(torch_interop.gru_blob_names("g", 1)[0].values())
    back = torch_interop.gru_to_torch("g", 1)
    for k, v in gru.state_dict().items():
        np.testing.assert_array_equal(back[k], v.numpy())

    with pytest.raises(ValueError, match="bidirectional"):
        torch_interop.lstm_from_torch(torch.nn.LSTM(3, 4, bidirectional=True), "x")
    with pytest.raises(ValueError, match="proj_size"):
        torch_interop.lstm_from_torch(torch.nn.LSTM(3, 4, proj_size=2), "x")
    with pytest.raises(ValueError, match="bias"):
        torch_interop.gru_from_torch(torch.nn.GRU(3, 4, bias=False), "x")


def _run_ours_with_grads(model, outs, owg, G):
    gmap = model.net.AddGradientOperators({str(outs[k]): str(outs[k]) + "_grad" for k in owg})
    for k in owg:
        workspace.FeedBlob(str(outs[k]) + "_grad", G[k])
    workspace.RunNetOnce(model.net)
    return {str(k): str(v) for k, v in gmap.items()}


@pytest.mark.parametrize("num_layers", [1, 2])
def test_lstm_matches_torch(num_layers):
    T, N, D, H = 6, 4, 5, 7
    rng = np.random.RandomState(0)
    torch.manual_seed(0)
    ref = torch.nn.LSTM(D, H, num_layers=num_layers)
    x = rng.uniform(-1, 1, (T, N, D)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (num_layers, N, H)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (num_layers, N, H)).astype(np.float32)

    model = ModelHelper(name="lstm_parity")
    inits = []
    for l in range(num_layers):
        inits += ["h0_%d" % l, "c0_%d" % l]
    owg = (0, 1, 3)
    outs = rnn_cell.LSTM(model, "x", None, inits, D, [H] * num_layers, scope="lstm", outputs_with_grads=owg,
                         return_last_layer_only=False)
    workspace.RunNetOnce(model.param_init_net)
    torch_interop.lstm_from_torch(ref, "lstm")
    workspace.FeedBlob("x", x)
    for l in range(num_layers):
        workspace.FeedBlob("h0_%d" % l, h0[l:l + 1])
        workspace.FeedBlob("c0_%d" % l, c0[l:l + 1])
    last = 4 * (num_layers - 1)
    G = {0: rng.uniform(-1, 1, (T, N, H)).astype(np.float32),
         1: rng.uniform(-1, 1, (1, N, H)).astype(np.float32),
         3: rng.uniform(-1, 1, (1, N, H)).astype(np.float32)}
    gmap = _run_ours_with_grads(model, outs[last:], owg, G)

    xt = torch.tensor(x, requires_grad=True)
    h0t = torch.tensor(h0, requires_grad=True)
    c0t = torch.tensor(c0, requires_grad=True)
    y, (hn, cn) = ref(xt, (h0t, c0t))
    loss = (y * torch.tensor(G[0])).sum() + (hn[-1] * torch.tensor(G[1][0])).sum() + \
        (cn[-1] * torch.tensor(G[3][0])).sum()
    loss.backward()

    close("torch_lstm_L%d_output" % num_layers, fetch(outs[last]), y.detach().numpy())
    for l in range(num_layers):
        close("torch_lstm_L%d_h_n" % num_layers, fetch(outs[4 * l + 1])[0], hn[l].detach().numpy())
        close("torch_lstm_L%d_c_n" % num_layers, fetch(outs[4 * l + 3])[0], cn[l].detach().numpy())
    close("torch_lstm_L%d_grad_x" % num_layers, fetch(gmap["x"]), xt.grad.numpy())
    for l in range(num_layers):
        close("torch_lstm_L%d_grad_h0" % num_layers, fetch(gmap["h0_%d" % l])[0], h0t.grad[l].numpy())
        close("torch_lstm_L%d_grad_c0" % num_layers, fetch(gmap["c0_%d" % l])[0], c0t.grad[l].numpy())
    grads = torch_interop.lstm_to_torch("lstm", num_layers, suffix="_grad")
    for name, p in ref.named_parameters():
        close("torch_lstm_L%d_grad_%s" % (num_layers, name), grads[name], p.grad.numpy())


@pytest.mark.parametrize("num_layers", [1, 2])
def test_gru_matches_torch(num_layers):
    T, N, D, H = 6, 4, 5, 7
    rng = np.random.RandomState(1)
    torch.manual_seed(1)
    ref = torch.nn.GRU(D, H, num_layers=num_layers)
    x = rng.uniform(-1, 1, (T, N, D)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (num_layers, N, H)).astype(np.float32)

    model = ModelHelper(name="gru_parity")
    owg = (0, 1)
    outs = rnn_cell.GRU(model, "x", None, ["h0_%d" % l for l in range(num_layers)], D, [H] * num_layers,
                        scope="gru", outputs_with_grads=owg, return_last_layer_only=False,
                        linear_before_reset=True)
    workspace.RunNetOnce(model.param_init_net)
    torch_interop.gru_from_torch(ref, "gru")
    workspace.FeedBlob("x", x)
    for l in range(num_layers):
        workspace.FeedBlob("h0_%d" % l, h0[l:l + 1])
    last = 2 * (num_layers - 1)
    G = {0: rng.uniform(-1, 1, (T, N, H)).astype(np.float32),
         1: rng.uniform(-1, 1, (1, N, H)).astype(np.float32)}
    gmap = _run_ours_with_grads(model, outs[last:], owg, G)

    xt = torch.tensor(x, requires_grad=True)
    h0t = torch.tensor(h0, requires_grad=True)
    y, hn = ref(xt, h0t)
    loss = (y * torch.tensor(G[0])).sum() + (hn[-1] * torch.tensor(G[1][0])).sum()
    loss.backward()

    close("torch_gru_L%d_output" % num_layers, fetch(outs[last]), y.detach().numpy())
    for l in range(num_layers):
        close("torch_gru_L%d_h_n" % num_layers, fetch(outs[2 * l + 1])[0], hn[l].detach().numpy())
    close("torch_gru_L%d_grad_x" % num_layers, fetch(gmap["x"]), xt.grad.numpy())
    for l in range(num_layers):
        close("torch_gru_L%d_grad_h0" % num_layers, fetch(gmap["h0_%d" % l])[0], h0t.grad[l].numpy())
    grads = torch_interop.gru_to_torch("gru", num_layers, suffix="_grad")
    for name, p in ref.named_parameters():
        close("torch_gru_L%d_grad_%s" % (num_layers, name), grads[name], p.grad.numpy())
