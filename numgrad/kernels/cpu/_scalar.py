"""Scalar helpers shared by the kernel modules."""

import numpy as np
from numba import types
from numba.extending import overload

from numgrad.kernels.scalar import like


@overload(like, inline="always")
def _like(x, c):
    ty = x

    def impl(x, c):
        return ty(c)

    return impl


# Rounding that keeps the float type (and inf/nan). On the CPU, Numba's math.floor etc.
# return integers; the CUDA backend registers its own versions (libdevice) for the GPU.


def ffloor(x):
    return np.floor(x)


def fceil(x):
    return np.ceil(x)


def ftrunc(x):
    return np.trunc(x)


def frint(x):
    """Round half to even (PyTorch's ``round``)."""
    return np.rint(x)


def _cpu_rounding(fn, np_fn):
    @overload(fn, target="cpu", inline="always")
    def _impl(x):
        if isinstance(x, types.Float):
            return lambda x: np_fn(x)
        return lambda x: x  # integers are already whole


for _fn, _np_fn in ((ffloor, np.floor), (fceil, np.ceil), (ftrunc, np.trunc), (frint, np.rint)):
    _cpu_rounding(_fn, _np_fn)
