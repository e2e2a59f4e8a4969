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


def gemm(a, b, out):
    # inf * 0 inside a product is NaN without a NumPy RuntimeWarning, as in PyTorch
    with np.errstate(all="ignore"):
        if _outer_shaped(a, b, out):
            np.dot(a, b, out=out)
        else:
            np.matmul(a, b, out=out)


def matmul(a, b, out):
    """out = a @ b for 2-D or batched 3-D operands (BLAS sgemm/dgemm)."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return LIN.cuda().matmul(a, b, out)
    if _tape.TAPE is None:
        return gemm(a, b, out)
    return _tape.record(gemm, a, b, out)
