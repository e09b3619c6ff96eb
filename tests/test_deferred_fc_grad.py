"""FC weight gradients of a recurrent step summed after the loop.

RecurrentNetworkGradient rewrites an FCGradient of the backward step net whose
X is a forward link (rnn_cell's FCs on hidden_t_prev and on the layer below):
each step copies dY into row t of a (T, M, N) stash (FCGradient stash_dy; on
AVX-512 CPUs dY^T into a (T, N, M) stash, stash_dy_t, which our kernel sums)
and adds its column sums into db (accumulate_db), and after the loop
dW += stash^T X_all is one GEMM instead of T rank-M updates. (FCGradient's
skip_db, which leaves db alone, is tested here as an op flag.) These tests
check the op flags, that the rewrite happens, that the gradients (biases
included) stay right when T changes from run to run (torch as the reference),
and that the buffers are reused between runs."""

import numpy as np
import pytest

from recurrent import _C, core, rnn_cell, torch_interop, trace, workspace
from recurrent.model_helper import ModelHelper


def test_stash_dy_copies_dy_and_skip_db_leaves_db(rng):
    x = rng.randn(1, 4, 6).astype(np.float32)
    w = rng.randn(8, 6).astype(np.float32)
    dy = rng.randn(1, 4, 8).astype(np.float32)
    stash = np.full((1, 4, 8), 7, np.float32)  # a row of the (T, M, N) stash
    db0 = rng.randn(8).astype(np.float32)
    for k, v in dict(x=x, w=w, dy=dy, stash=stash, db=db0).items():
        workspace.FeedBlob(k, v)
    workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["stash", "db", "dx"], axis=2,
                                                  stash_dy=1, skip_db=1))
    np.testing.assert_array_equal(workspace.FetchBlob("stash"), dy)
    np.testing.assert_array_equal(workspace.FetchBlob("db"), db0)  # untouched
    np.testing.assert_allclose(workspace.FetchBlob("dx"), (dy.reshape(4, 8) @ w).reshape(1, 4, 6), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("M,N", [(4, 8), (16, 40), (9, 17), (1, 3)])
def test_stash_dy_t_copies_dy_transposed(rng, M, N):
    x = rng.randn(M, 6).astype(np.float32)
    w = rng.randn(N, 6).astype(np.float32)
    dy = rng.randn(M, N).astype(np.float32)
    for k, v in dict(x=x, w=w, dy=dy, stash=np.full((1, N, M), 7, np.float32)).items():
        workspace.FeedBlob(k, v)
    workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["stash", "db", "dx"],
                                                  stash_dy=1, stash_dy_t=1))
    np.testing.assert_array_equal(workspace.FetchBlob("stash"), dy.T[None])
    np.testing.assert_allclose(workspace.FetchBlob("db"), dy.sum(0), rtol=1e-5, atol=1e-5)


def test_skip_dw_leaves_output_0(rng):
    x = rng.randn(4, 6).astype(np.float32)
    w = rng.randn(8, 6).astype(np.float32)
    dy = rng.randn(4, 8).astype(np.float32)
    keep = np.full((3,), 7, np.float32)  # any blob: neither written nor checked
    for k, v in dict(x=x, w=w, dy=dy, keep=keep).items():
        workspace.FeedBlob(k, v)
    workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["keep", "db", "dx"], skip_dw=1))
    np.testing.assert_array_equal(workspace.FetchBlob("keep"), keep)
    np.testing.assert_allclose(workspace.FetchBlob("db"), dy.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob("dx"), dy @ w, rtol=1e-5, atol=1e-5)


def test_stash_dy_bad_input(rng):
    workspace.FeedBlob("x", rng.randn(4, 6).astype(np.float32))
    workspace.FeedBlob("w", rng.randn(8, 6).astype(np.float32))
    workspace.FeedBlob("dy", rng.randn(4, 8).astype(np.float32))
    workspace.FeedBlob("small", np.zeros((2, 8), np.float32))
    workspace.FeedBlob("big", np.zeros((2, 4, 8), np.float32))
    with pytest.raises(ValueError, match=r"FCGradient #0: stash_dy: output 0 blob 'small' \(2, 8\) float32 must "
                                         r"already be a float32 tensor of M x N = 4 x 8 elements"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["small", "db"], stash_dy=1))
    with pytest.raises(ValueError, match=r"stash_dy: output 0 blob 'big' \(2, 4, 8\)"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["big", "db"], stash_dy=1))
    with pytest.raises(ValueError, match="'stash_dy' and 'accumulate_dw' exclude each other"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db"], stash_dy=1,
                                                      accumulate_dw=1))
    with pytest.raises(ValueError, match="FCGradient #0: argument 'stash_dy_t' needs 'stash_dy'"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db"], stash_dy_t=1))
    for flag in ("stash_dy", "accumulate_dw"):
        with pytest.raises(ValueError, match="FCGradient #0: argument 'skip_dw' excludes 'stash_dy' and 'accumulate_dw'"):
            workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db"], skip_dw=1,
                                                          **{flag: 1}))
    with pytest.raises(ValueError, match="'skip_db' and 'accumulate_db' exclude each other"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db"], skip_db=1,
                                                      accumulate_db=1))
    workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db"]))  # still usable


def _lstm(num_layers, D, H, name):
    model = ModelHelper(name=name)
    inits = []
    for l in range(num_layers):
        inits += ["h0_%d" % l, "c0_%d" % l]
    out = rnn_cell.LSTM(model, "x", None, inits, D, [H] * num_layers, scope="lstm", return_last_layer_only=True)
    loss = model.net.SumElements([out[0]], "loss")
    gmap = model.AddGradientOperators([loss])
    return model, out, gmap


def test_lstm_fc_weight_gradients_are_deferred():
    """Backward step: one extra link op per deferred FC (the stash row) -- the
    recurrent FC of every layer and the input FC of layers 2.. (2L - 1). In
    layers 2.. the two FCs' gradients read the same dY (the gates' gradient):
    one of them stashes it, the other (skip_dw) links a placeholder row, and
    both sums read the one stash (L - 1 shared)."""
    L, D, H, N, T = 3, 3, 4, 2, 4
    model, _, _ = _lstm(L, D, H, "lstm_defer_count")
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob("x", np.ones((T, N, D), np.float32))
    for l in range(L):
        workspace.FeedBlob("h0_%d" % l, np.zeros((1, N, H), np.float32))
        workspace.FeedBlob("c0_%d" % l, np.zeros((1, N, H), np.float32))
    (gop,) = [o for o in model.net.Proto().op if o.type == "RecurrentNetworkGradient"]
    args = {a.name: a for a in gop.arg}
    n_links = len(args["link_internal"].strings) + len(args["backward_link_internal"].strings)
    shared = _C.get_flag("shared_stashes")
    with trace.tracing():
        workspace.RunNetOnce(model.net)
    bwd = {(e["step_op"], e["type"]) for e in trace.fetch(model.net) if e["direction"] == "backward"}
    n_link_ops = sum(1 for _, ty in bwd if ty == "rnn_internal_apply_link")
    assert n_link_ops == n_links + 2 * L - 1
    assert _C.get_flag("shared_stashes") - shared == L - 1


def test_deferred_gradients_match_torch_as_T_changes():
    torch = pytest.importorskip("torch")
    L, D, H, N = 2, 5, 6, 3
    torch.manual_seed(3)
    ref = torch.nn.LSTM(D, H, num_layers=L)
    model, out, gmap = _lstm(L, D, H, "lstm_defer_T")
    workspace.RunNetOnce(model.param_init_net)
    torch_interop.lstm_from_torch(ref, "lstm")
    rng = np.random.RandomState(4)
    h0 = rng.uniform(-1, 1, (L, N, H)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (L, N, H)).astype(np.float32)
    for l in range(L):
        workspace.FeedBlob("h0_%d" % l, h0[l:l + 1])
        workspace.FeedBlob("c0_%d" % l, c0[l:l + 1])
    for T in (5, 2, 7, 0, 1, 3):
        x = rng.uniform(-1, 1, (T, N, D)).astype(np.float32)
        workspace.FeedBlob("x", x)
        if T == 5:
            workspace.CreateNet(model.net)  # one net, run with every T in turn
        workspace.RunNet(model.net)
        ours = torch_interop.lstm_to_torch("lstm", L, suffix="_grad")
        if T == 0:
            for name, v in ours.items():
                np.testing.assert_array_equal(v, 0, err_msg=name)
            continue
        ref.zero_grad()
        xt = torch.tensor(x, requires_grad=True)
        y, _ = ref(xt, (torch.tensor(h0), torch.tensor(c0)))
        y.sum().backward()
        for name, p in ref.named_parameters():
            np.testing.assert_allclose(ours[name], p.grad.numpy(), rtol=2e-5, atol=2e-5, err_msg="T=%d %s" % (T, name))
        np.testing.assert_allclose(workspace.FetchBlob(str(gmap["x"])), xt.grad.numpy(), rtol=2e-5, atol=2e-5)


@pytest.mark.skipif("libasan" in open("/proc/self/maps").read(),
                    reason="ASan's allocator quarantine faults in new pages for every allocation")
@pytest.mark.parametrize("enable", (0, 1))
def test_buffers_are_reused_from_run_to_run(enable):
    """The stashes and state gradients (about 12 MB here) keep their buffers
    across training iterations of one shape: the last run's link views of
    them are dropped before the resize, instead of forcing a new allocation
    (page faults and zeroing) at every iteration."""
    import resource
    from test_executor import build_stack
    case = build_stack("lstm", layers=3, H=128, N=16, D=8, name="reuse%d" % enable)
    case.feed(40, 1)
    case.create(enable, threads=2)
    workspace.RunNet(case.net, 3)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    workspace.RunNet(case.net, 5)
    per_iter_bytes = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 5 * 4096
    # 3 stashes of 40 x 16 x 512 floats (5 sums: layers 2-3 share one per layer) + 6 state gradients of 41 x 16 x 128
    assert per_iter_bytes < 1e6, "%.1f MB of new pages per iteration" % (per_iter_bytes / 1e6)
