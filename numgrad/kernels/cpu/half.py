"""Casts between float32 and the 16-bit floats (float16 and bfloat16), on their bit patterns.

Numba has no float16 on the CPU, so a 16-bit tensor's data is handled as uint16 words here:
float16 data is a NumPy float16 array seen as uint16, bfloat16 data a 2-byte record array
seen as uint16. float32 -> 16 bits rounds to nearest, ties to even (PyTorch's rounding);
16 bits -> float32 is exact. Other dtypes cast through float32, as PyTorch's ``c10::Half``
and ``c10::BFloat16`` constructors do (so a float64 is rounded twice, as there).

Each kernel takes flat contiguous arrays: ``bits`` uint16, ``f32`` float32 viewed as uint32.
"""

import numpy as np

from numgrad.kernels._jit import jit


@jit
def f32_to_f16(src, out):
    """float32 bit patterns ``src`` (uint32) -> float16 bit patterns ``out`` (uint16)."""
    for i in range(src.size):
        b = np.uint32(src[i])
        sign = (b >> np.uint32(16)) & np.uint32(0x8000)
        exp = np.int32((b >> np.uint32(23)) & np.uint32(0xFF))
        mant = b & np.uint32(0x7FFFFF)
        if exp == 255:  # inf stays inf; a NaN stays a (quiet) NaN of the same sign
            h = sign | np.uint32(0x7C00) | (np.uint32(0x200) if mant != 0 else np.uint32(0))
        else:
            e = exp - 112  # the float16 exponent field (bias 15 instead of 127)
            if e >= 31:
                h = sign | np.uint32(0x7C00)  # beyond the largest float16: inf
            elif e <= 0:  # a float16 subnormal (or zero)
                if e < -10:
                    h = sign
                else:
                    m = mant | np.uint32(0x800000)
                    shift = np.uint32(14 - e)
                    q = m >> shift
                    rem = m & ((np.uint32(1) << shift) - np.uint32(1))
                    half = np.uint32(1) << (shift - np.uint32(1))
                    if rem > half or (rem == half and (q & np.uint32(1)) != 0):
                        q += np.uint32(1)
                    h = sign | q
            else:
                h = sign | (np.uint32(e) << np.uint32(10)) | (mant >> np.uint32(13))
                rem = mant & np.uint32(0x1FFF)
                if rem > np.uint32(0x1000) or (rem == np.uint32(0x1000)
                                               and (h & np.uint32(1)) != 0):
                    h += np.uint32(1)  # a carry runs into the exponent (up to inf): exact
        out[i] = np.uint16(h)


@jit
def f16_to_f32(src, out):
    """float16 bit patterns ``src`` (uint16) -> float32 bit patterns ``out`` (uint32)."""
    for i in range(src.size):
        h = np.uint32(src[i])
        sign = (h & np.uint32(0x8000)) << np.uint32(16)
        exp = (h >> np.uint32(10)) & np.uint32(0x1F)
        mant = h & np.uint32(0x3FF)
        if exp == 31:
            b = sign | np.uint32(0x7F800000) | (mant << np.uint32(13))
        elif exp == 0:
            if mant == 0:
                b = sign
            else:  # subnormal: normalize (value = mant * 2^-24)
                e = np.uint32(113)
                while (mant & np.uint32(0x400)) == 0:
                    mant <<= np.uint32(1)
                    e -= np.uint32(1)
                b = sign | (e << np.uint32(23)) | ((mant & np.uint32(0x3FF)) << np.uint32(13))
        else:
            b = sign | ((exp + np.uint32(112)) << np.uint32(23)) | (mant << np.uint32(13))
        out[i] = b


@jit
def f32_to_bf16(src, out):
    """float32 bit patterns (uint32) -> bfloat16 bit patterns (the high 16 bits, rounded to
    nearest even; NaN becomes 0xFFFF as PyTorch's CPU cast writes it)."""
    for i in range(src.size):
        b = np.uint32(src[i])
        if (b & np.uint32(0x7F800000)) == np.uint32(0x7F800000) and (
                b & np.uint32(0x7FFFFF)) != 0:
            out[i] = np.uint16(0xFFFF)
        else:
            bias = np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))
            out[i] = np.uint16((np.uint64(b) + np.uint64(bias)) >> np.uint64(16))


@jit
def bf16_to_f32(src, out):
    """bfloat16 bit patterns (uint16) -> float32 bit patterns (uint32): exact."""
    for i in range(src.size):
        out[i] = np.uint32(src[i]) << np.uint32(16)
