"""Matrix products run on BLAS through NumPy (a Numba loop is several times slower)."""

import numpy as np


def matmul(a, b, out):
    """out = a @ b for 2-D or batched 3-D operands (BLAS sgemm/dgemm)."""
    return np.matmul(a, b, out=out)
