"""Row kernels written once for both devices (``numgrad/kernels/rows.py``): edge rows, and the
CPU's serial and multithreaded copies computing the same bits."""

import numpy as np
import pytest

import numgrad
from numgrad.kernels.cpu import rows as ROWS


@pytest.mark.parametrize("shape,dim", [((2, 0, 3), 1), ((0, 4), 1), ((3, 0), 1), ((1, 1, 5), 1)])
def test_logsumexp_of_empty_and_single_rows_matches_pytorch(shape, dim):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = numgrad.logsumexp(numgrad.tensor(x), dim).numpy()
    want = torch.logsumexp(torch.tensor(x), dim).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (3, 33), (40, 17)])
def test_layer_norm_serial_and_threaded_copies_agree(shape):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    gam = rng.standard_normal(shape[1]).astype(np.float32)
    bet = rng.standard_normal(shape[1]).astype(np.float32)
    res = []
    for parallel in (False, True):
        out, mean, rstd = np.empty(shape, np.float32), np.empty(shape[0]), np.empty(shape[0])
        ROWS.layer_norm_fwd(x, gam, bet, 1e-5, out, mean, rstd, parallel=parallel)
        gx = np.empty(shape, np.float32)
        ROWS.layer_norm_bwd_input(g, x, mean, rstd, gam, gx, parallel=parallel)
        res.append((out, mean, rstd, gx))
    for a, b in zip(*res):
        assert np.array_equal(a, b)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    r = 1 / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(res[0][1], mu[:, 0], rtol=1e-12)
    np.testing.assert_allclose(res[0][2], r[:, 0], rtol=1e-12)
    np.testing.assert_allclose(res[0][0], (x64 - mu) * r * gam + bet, rtol=1e-5, atol=1e-5)
