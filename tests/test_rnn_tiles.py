"""The LSTM layer's register-tile products (``numgrad.kernels.cpu.rnn``): the LLVM vector
tile (``_vector_tile``, AVX2's) gives the loop tile's (``_micro``) numbers bit for bit, with
a last tile of fewer rows and a last panel of fewer columns; the forward's packing of the
stacked weights [W_ih W_hh]^T (``_pack_cat``) is ``_pack`` of their transpose."""

import numba
import numpy as np
import pytest

from numgrad.kernels.cpu import rnn


def _product_kernel(dtype, mr, nr, lanes):
    product = rnn._product_kernel(dtype, mr, nr, lanes)

    @numba.njit(error_model="numpy")
    def run(a, lda, m_n, k_n, bp, n_cols, c, ldc):
        product(a, 0, lda, m_n, k_n, bp, n_cols, c, 0, ldc)
    return run


def _packed(b, nr):
    """B (k x n) in ``_product``'s panels, nr wide, zeros past the last column."""
    k, n = b.shape
    padded = np.zeros((k, -(-n // nr) * nr), b.dtype)
    padded[:, :n] = b
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
    bp = _packed(b, nr)
    outs = []
    for kernel in kernels:
        c = np.full((m, n), np.nan, dtype)
        kernel(a.reshape(-1), k, m, k, bp, n, c.reshape(-1), n)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_pack_cat_is_pack_of_the_stacked_weights():
    rng = np.random.default_rng(4)
    n_in, n, nr = 3, 5, 8  # 4n = 20 columns: a last panel of 4
    w_ih = rng.standard_normal((4 * n, n_in)).astype(np.float32)
    w_hh = rng.standard_normal((4 * n, n)).astype(np.float32)
    pack_cat = rnn._bind(rnn._pack_cat, NR=nr)
    wp = np.zeros(3 * (n_in + n) * nr, np.float32)
    numba.njit(pack_cat)(w_ih.reshape(-1), n_in, w_hh.reshape(-1), n, wp)
    np.testing.assert_array_equal(wp, _packed(np.concatenate([w_ih, w_hh], 1).T, nr))
