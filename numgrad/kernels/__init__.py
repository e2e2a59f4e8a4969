"""Numba kernels. Nothing here imports Numba until a kernel is first needed.

``numgrad.kernels.cpu`` holds the ``@njit`` kernels; submodules load on first attribute access,
so ``import numgrad`` stays cheap and compiles nothing.

Kernel handles (``EW``, ``RED``, ...) are the way every other package reaches the kernels: a
``LazyKernels`` imports its module (and Numba) on first attribute access.

Device choice has one path: an op calls a kernel by name on its handle with its data first,
``IDX.gather_axis(x3, flat, out)``, whatever the data's device, and the CPU kernel of that
name hands data that is not a NumPy array to the CUDA module's kernel of the same name
(``numgrad.kernels.cuda.<module>``: same names, same arguments). A CPU module does that for a
kernel in one of two ways: a hot Python launcher by its first line
(``if x.__class__ is not _ND: return _CUDA.name(...)``, as ``EW.binary`` does), any other
kernel by its name in the module's ``EITHER_DEVICE`` tuple (its handle then returns a
launcher that checks the first argument).
"""

import importlib

import numpy as np

_ND = np.ndarray


class LazyKernels:
    """Attribute access to a kernel module that imports it (and Numba) on first use and then
    caches every attribute on the instance, so later lookups cost one dict hit. A name in the
    CPU module's ``EITHER_DEVICE`` is cached as ``either_device``'s launcher of it."""

    def __init__(self, module, backend="cpu"):
        self._module_name = module
        self._backend = backend
        self._twin = None

    def __getattr__(self, name):
        mod = importlib.import_module(f"numgrad.kernels.{self._backend}.{self._module_name}")
        value = getattr(mod, name)
        if name in getattr(mod, "EITHER_DEVICE", ()):
            value = either_device(value, self, name)
        setattr(self, name, value)
        return value

    def cuda(self):
        """The CUDA twin of this kernel module (the CPU launchers hand CUDA data to it)."""
        twin = self._twin
        if twin is None:
            twin = self._twin = LazyKernels(self._module_name, "cuda")
        return twin


def either_device(kernel, handle, name):
    """``kernel`` (``name`` of ``handle``'s CPU module) as a launcher for data of either
    device: a NumPy first argument runs ``kernel``, any other goes to the CUDA module's
    ``name``."""
    def launcher(a, *args):
        if a.__class__ is _ND:
            return kernel(a, *args)
        return getattr(handle.cuda(), name)(a, *args)
    launcher.__name__ = launcher.__qualname__ = name
    launcher.__doc__ = kernel.__doc__
    launcher.kernel = kernel
    return launcher


EW = LazyKernels("elementwise")
RED = LazyKernels("reduction")
IDX = LazyKernels("indexing")
LIN = LazyKernels("linalg")
