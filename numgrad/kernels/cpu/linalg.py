"""Matrix products run on BLAS through NumPy (a Numba loop is several times slower)."""

import numpy as np

from numgrad._compile import tape as _tape
from numgrad.kernels import LIN


def _outer_shaped(a, b, out):
    # an inner dimension of 1 (the weight gradient at batch 1): np.matmul takes its slow
    # non-BLAS loop for it (about 8x slower than np.dot, which calls BLAS); the one-term sum
    # is the same product either way
    return (a.ndim == 2 and b.ndim == 2 and a.shape[1] == 1 and out.flags.c_contiguous
            and a.dtype == b.dtype == out.dtype)


def _swap_pays(a, b, out):
    # x @ W.T with few rows (a Linear layer at batch 1 or during generation): OpenBLAS packs
    # the transposed weight slowly, a fixed cost that dominates up to about 32 rows (40 us
    # against 21 us for 4x128 @ 128x384, 55 us against 40 us at 16 rows, 2026-11-28, one
    # EPYC core). (W @ x.T).T is the same product with the operands' roles swapped (the
    # same dot products: bit for bit equal on 302 shapes checked here) and packs the weight
    # fast; the transpose back took 5 us for 16x384. Below about 1200 outputs (and 10^6
    # multiply-adds) OpenBLAS runs its small-matrix kernel, already fast either way. From 33
    # to 56 rows it still saves 10-18% for weights of 40,000 elements or more (384x128: 64.8
    # against 55.3 us at 33 rows, 68.6 against 59.4 at 48; 128x128 gains under 7%; min of 40
    # interleaved runs, loaded VM, 2026-11-28; bit for bit equal on 168 shapes of 33-56
    # rows); from about 60 rows the transpose costs what the swap saves (up to 96 rows for
    # big weights).
    if a.ndim != 2 or b.ndim != 2 or out.dtype != np.float32:
        return False
    (m, k), n = a.shape, b.shape[1]
    if m < 2 or n < 128 or k < 64 or m > 96:
        return False
    if m > 32 and n * k < (40_000 if m <= 56 else 200_000):
        return False
    if m * n <= 1200 and m * n * k <= 1_000_000:
        return False
    return (a.dtype == b.dtype == np.float32 and a.flags.c_contiguous and b.flags.f_contiguous
            and out.flags.c_contiguous)


def gemm(a, b, out):
    # inf * 0 inside a product is NaN without a NumPy RuntimeWarning, as in PyTorch
    with np.errstate(all="ignore"):
        if _outer_shaped(a, b, out):
            np.dot(a, b, out=out)
        elif _swap_pays(a, b, out):
            swapped = np.empty((b.shape[1], a.shape[0]), np.float32)
            np.matmul(b.T, a.T, out=swapped)
            np.copyto(out, swapped.T)
        else:
            np.matmul(a, b, out=out)


def matmul(a, b, out):
    """out = a @ b for 2-D or batched 3-D operands (BLAS sgemm/dgemm)."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return LIN.cuda().matmul(a, b, out)
    if _tape.TAPE is None:
        return gemm(a, b, out)
    return _tape.record(gemm, a, b, out)
