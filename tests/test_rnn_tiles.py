"""The LSTM layer's register-tile products (``numgrad.kernels.cpu.rnn``): the LLVM vector
tile (``_vector_tile``, AVX2's) gives the loop tile's (``_micro``) numbers bit for bit, in
both products' layouts (plain panels, and panels holding a quarter of each gate), with a
last tile of fewer rows and a last panel of fewer columns."""

import numba
import numpy as np
import pytest

from numgrad.kernels.cpu import rnn


def _product_kernel(dtype, mr, nr, lanes):
    product = rnn._product_kernel(dtype, mr, nr, lanes)

    @numba.njit(error_model="numpy")
    def run(a, lda, m_n, k_n, bp, n_cols, groups, c, ldc):
        product(a, 0, lda, m_n, k_n, bp, n_cols, groups, c, 0, ldc)
    return run


def _packed(b, nr, groups):
    """B (k x n) in ``_product``'s panels, nr wide (``groups`` 4: nr / 4 columns of each
    quarter of B's columns per panel), zeros past the last column."""
    k, n = b.shape
    per, wide = n // groups, nr // groups
    cols = []
    for p in range(-(-per // wide)):
        for q in range(groups):
            idx = list(range(q * per + p * wide, min(q * per + (p + 1) * wide, (q + 1) * per)))
            cols += idx + [-1] * (wide - len(idx))
    padded = np.concatenate([b, np.zeros((k, 1), b.dtype)], 1)[:, cols]
    return np.ascontiguousarray(padded.reshape(k, -1, nr).transpose(1, 0, 2)).reshape(-1)


@pytest.mark.parametrize("dtype, lanes", [(np.float32, 8), (np.float64, 4)])
@pytest.mark.parametrize("mr, vectors", [(4, 3), (6, 2)])  # a step's tiles, all steps' tiles
def test_vector_tile_matches_loop_tile(dtype, lanes, mr, vectors):
    rng = np.random.default_rng(3)
    nr = vectors * lanes
    m, k, n = 7, 13, 4 * (nr // 4 + 2)  # a last tile of fewer rows, a last panel partly filled
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    kernels = [_product_kernel(dtype, mr, nr, use) for use in (lanes, 0)]
    for groups in (1, 4):
        bp = _packed(b, nr, groups)
        outs = []
        for kernel in kernels:
            c = np.full((m, n), np.nan, dtype)
            kernel(a.reshape(-1), k, m, k, bp, n, groups, c.reshape(-1), n)
            outs.append(c)
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_allclose(outs[0], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
