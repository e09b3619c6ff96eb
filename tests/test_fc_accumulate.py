"""FCGradient's accumulate_dw / accumulate_db (used by RecurrentNetworkGradient
to sum parameter gradients over timesteps in place) and FC's small-M path."""

import numpy as np
import pytest

from recurrent import core, workspace


@pytest.mark.parametrize("M,K,N", [(3, 5, 7), (16, 32, 128), (1, 4, 64), (200, 8, 16)])
def test_fc_small_and_large_m_match_numpy(rng, M, K, N):
    x = rng.randn(M, K).astype(np.float32)
    w = rng.randn(N, K).astype(np.float32)
    b = rng.randn(N).astype(np.float32)
    workspace.FeedBlob("x", x)
    workspace.FeedBlob("w", w)
    workspace.FeedBlob("b", b)
    workspace.RunOperatorOnce(core.CreateOperator("FC", ["x", "w", "b"], ["y"]))
    np.testing.assert_allclose(workspace.FetchBlob("y"), x @ w.T + b, rtol=1e-5, atol=1e-5)


def test_accumulate_adds_into_existing_gradients(rng):
    x = rng.randn(1, 4, 6).astype(np.float32)
    w = rng.randn(8, 6).astype(np.float32)
    dy = rng.randn(1, 4, 8).astype(np.float32)
    dw0 = rng.randn(8, 6).astype(np.float32)
    db0 = rng.randn(8).astype(np.float32)
    for k, v in dict(x=x, w=w, dy=dy, dw=dw0, db=db0).items():
        workspace.FeedBlob(k, v)
    op = core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db", "dx"], axis=2, accumulate_dw=1,
                             accumulate_db=1)
    workspace.RunOperatorOnce(op)
    X, DY = x.reshape(4, 6), dy.reshape(4, 8)
    np.testing.assert_allclose(workspace.FetchBlob("dw"), dw0 + DY.T @ X, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob("db"), db0 + DY.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob("dx"), (DY @ w).reshape(1, 4, 6), rtol=1e-5, atol=1e-5)
    workspace.RunOperatorOnce(op)
    np.testing.assert_allclose(workspace.FetchBlob("dw"), dw0 + 2 * DY.T @ X, rtol=1e-5, atol=1e-5)


def test_accumulate_needs_shaped_outputs(rng):
    workspace.FeedBlob("x", rng.randn(4, 6).astype(np.float32))
    workspace.FeedBlob("w", rng.randn(8, 6).astype(np.float32))
    workspace.FeedBlob("dy", rng.randn(4, 8).astype(np.float32))
    workspace.FeedBlob("dw", np.zeros((6, 8), np.float32))
    with pytest.raises(ValueError, match=r"FCGradient #0: accumulate_dw: output 0 blob 'dw' \(6, 8\) float32 must "
                                         r"already be shaped like input 1 blob 'w'"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw", "db"],
                                                      accumulate_dw=1))
    with pytest.raises(ValueError, match=r"accumulate_db: output 1 blob 'db2'"):
        workspace.RunOperatorOnce(core.CreateOperator("FCGradient", ["x", "w", "dy"], ["dw2", "db2"],
                                                      accumulate_db=1))
