"""Numba kernels. Nothing here imports Numba until a kernel is first needed.

``numgrad.kernels.cpu`` holds the ``@njit`` kernels; submodules load on first attribute access,
so ``import numgrad`` stays cheap and compiles nothing.

Kernel handles (``EW``, ``RED``, ...) are the way every other package reaches the kernels: a
``LazyKernels`` imports its module (and Numba) on first attribute access.
"""

import importlib

import numpy as np


class LazyKernels:
    """Attribute access to a kernel module that imports it (and Numba) on first use and then
    caches every attribute on the instance, so later lookups cost one dict hit.

    ``K.on(a)`` is the module for data ``a``: ``K`` itself for a NumPy array, the CUDA twin
    (same names, same arguments) for a ``CudaArray``."""

    def __init__(self, module, backend="cpu"):
        self._module_name = module
        self._backend = backend
        self._twin = None

    def __getattr__(self, name):
        mod = importlib.import_module(f"numgrad.kernels.{self._backend}.{self._module_name}")
        value = getattr(mod, name)
        setattr(self, name, value)
        return value

    def on(self, a):
        if a.__class__ is np.ndarray:
            return self
        twin = self._twin
        if twin is None:
            twin = self._twin = LazyKernels(self._module_name, "cuda")
        return twin


EW = LazyKernels("elementwise")
RED = LazyKernels("reduction")
IDX = LazyKernels("indexing")
LIN = LazyKernels("linalg")
