"""Matrix products run on BLAS through NumPy (a Numba loop is several times slower)."""

import numpy as np

from numgrad._compile import tape as _tape
from numgrad.kernels import LIN


def gemm(a, b, out):
    # inf * 0 inside a product is NaN without a NumPy RuntimeWarning, as in PyTorch
    with np.errstate(all="ignore"):
        np.matmul(a, b, out=out)


def matmul(a, b, out):
    """out = a @ b for 2-D or batched 3-D operands (BLAS sgemm/dgemm)."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return LIN.cuda().matmul(a, b, out)
    if _tape.TAPE is None:
        with np.errstate(all="ignore"):
            return np.matmul(a, b, out=out)
    return _tape.record(gemm, a, b, out)
