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
    (same names, same arguments) for a ``CudaArray``. This is the one way numgrad picks a
    device: callers use ``K.on(a)``, and the CPU launchers (``EW.unary``, ``RED.sum_dims``,
    ...) hand data that is not a NumPy array to ``K.cuda()``."""

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
        return self if a.__class__ is np.ndarray else self.cuda()

    def cuda(self):
        """The CUDA twin of this kernel module (the CPU launchers hand CUDA data to it)."""
        twin = self._twin
        if twin is None:
            twin = self._twin = LazyKernels(self._module_name, "cuda")
        return twin


EW = LazyKernels("elementwise")
RED = LazyKernels("reduction")
IDX = LazyKernels("indexing")
LIN = LazyKernels("linalg")
