"""Scalar helpers that formulas declared outside ``numgrad.kernels`` may call. This module
imports no Numba (declarations load with ``import numgrad``); the compiled versions are
registered by ``numgrad.kernels.cpu._scalar`` before any formula compiles."""


def like(x, c):
    """``c`` converted to the type of ``x`` (keeps float32 math in float32).

    The Python body serves interpreted kernels (Numba's CUDA simulator); compiled code uses
    the overload in ``numgrad.kernels.cpu._scalar``."""
    return type(x)(c)
