"""Numba kernels. Nothing here imports Numba until a kernel is first needed.

``numgrad.kernels.cpu`` holds the ``@njit`` kernels; submodules load on first attribute access,
so ``import numgrad`` stays cheap and compiles nothing.
"""
