"""The 16-bit float dtypes (``float16``/``half`` and ``bfloat16``) as storage types.

A float16 tensor's data is a NumPy float16 array; a bfloat16 tensor's data is a 2-byte record
array (``_dtype.BFLOAT16_NP``) of bfloat16 bit patterns, since NumPy has no bfloat16. Numba
has neither type on the CPU, so every conversion runs the bit-pattern kernels of
``numgrad.kernels.cpu.half`` (round to nearest even, as PyTorch); values of another dtype go
through float32 on the way, as in PyTorch's ``c10::Half``/``c10::BFloat16`` conversions.

What works on 16-bit tensors: creation (``tensor``, ``zeros``, ``ones``, ``full``,
``empty``), casts both ways (``to``, ``half()``, ``bfloat16()``, ``float()``, ``type()``),
views that only move data (indexing, reshape, transpose), printing, ``item``/``tolist``,
``numpy()`` (float16; bfloat16 raises PyTorch's TypeError) and ``save``/``load``. numgrad has
no kernels that compute in them (arithmetic, reductions...): cast to float32 first.
"""

import numpy as np

from numgrad import _dtype

F16 = np.dtype(np.float16)
BF16 = _dtype.BFLOAT16_NP
HALF = (F16, BF16)
_U16, _U32, _F32 = np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.float32)


def is_half(np_dtype):
    return np_dtype == F16 or np_dtype == BF16


def _kernels():
    from numgrad.kernels.cpu import half
    return half


def _host(a, what):
    if a.__class__ is not np.ndarray:
        raise NotImplementedError(f"numgrad has no CUDA kernels for {what}: cast on the CPU")
    return a


def _bits(a):
    """The uint16 bit patterns of 16-bit data ``a``, C-contiguous and flat."""
    from numgrad.kernels import EW
    u = a.view(_U16) if a.flags.c_contiguous else EW.unary(EW.copy, a.view(_U16), _U16)
    return u.reshape(-1)


def to_float32(a):
    """16-bit data ``a`` as a new float32 array of its shape (exact)."""
    _host(a, "float16 and bfloat16")
    out = np.empty(a.shape, _F32)
    if a.size:
        k = _kernels()
        (k.f16_to_f32 if a.dtype == F16 else k.bf16_to_f32)(_bits(a), out.reshape(-1).view(_U32))
    return out


def from_float32(f32, np_dtype):
    """C-contiguous float32 array ``f32`` rounded to 16-bit ``np_dtype``."""
    out = np.empty(f32.shape, np_dtype)
    if f32.size:
        k = _kernels()
        (k.f32_to_f16 if np_dtype == F16 else k.f32_to_bf16)(
            f32.reshape(-1).view(_U32), out.reshape(-1).view(_U16))
    return out


def cast(a, np_dtype):
    """Array ``a`` as a new array of NumPy dtype ``np_dtype``, where either is 16-bit."""
    from numgrad.kernels import EW
    _host(a, "float16 and bfloat16")
    f32 = to_float32(a) if is_half(a.dtype) else (
        a if a.dtype == _F32 and a.flags.c_contiguous else EW.unary(EW.copy, a, _F32))
    if is_half(np_dtype):
        return from_float32(f32 if f32.flags.c_contiguous else f32.copy(), np_dtype)
    if np_dtype == _F32:
        return f32 if f32 is not a else f32.copy()
    return EW.unary(EW.copy, f32, np_dtype)


def host_values(a):
    """Data ``a`` as something NumPy reads values from (bfloat16 becomes float32)."""
    return to_float32(a) if a.dtype == BF16 else a

