"""CPU kernels (``@njit``). Submodules are imported on first use, which is when Numba loads."""

import importlib

from numgrad._startup import numpy_came_first, openblas_timeout
from numgrad.kernels.cpu import _malloc, _openblas, _threads

# process-wide settings that only affect speed (each module says what and why)
with openblas_timeout():  # OpenBLAS reads its environment again; removed afterwards
    _openblas.settle(numpy_came_first)
_malloc.settle()
_threads.settle()

_SUBMODULES = ("elementwise", "reduction", "indexing", "linalg", "random")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
