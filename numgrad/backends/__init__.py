"""``numgrad.backends``: PyTorch's backend switches, so scripts that set them run.

numgrad has one CPU backend (Numba kernels, NumPy's BLAS for matmul) and one CUDA backend
(``numba.cuda``); none of these switches changes its arithmetic. The flags keep the values
scripts set, and the availability queries answer for numgrad (no cuDNN, no MPS).
"""

from numgrad.backends import cpu, cuda, cudnn, mkldnn, mps, openmp  # noqa: F401
