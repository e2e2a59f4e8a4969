"""The float32 Box-Muller step of PyTorch's CPU ``normal_`` for contiguous float32 tensors of 16
values or more, bit for bit: its x86 build computes it in float32 with Cephes' log and sincos
polynomials (the single-precision ones, eight lanes at a time), and its compiler fuses some
multiply-adds into FMAs; each ``ffma`` below stands where that fusion happens, and every
other step rounds to float32 on its own. Written as plain scalar code: LLVM vectorizes it.
Checked against PyTorch's draws in tests/test_api_random.py."""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from numgrad.kernels._jit import inline
from numgrad.kernels.cpu._fastmath import _bits_f32, ffma

_f = np.float32


@intrinsic
def _f32_bits(typingctx, x):
    """The bits of a float32 as an int32."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


# log(x) = log(m) + e log(2), m in [sqrt(1/2), sqrt(2)); log(1 + t) by a degree-9 polynomial
_LOG_P = (_f(7.0376836292e-2), _f(-1.1514610310e-1), _f(1.1676998740e-1),
          _f(-1.2420140846e-1), _f(1.4249322787e-1), _f(-1.6668057665e-1),
          _f(2.0000714765e-1), _f(-2.4999993993e-1), _f(3.3333331174e-1))
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8 = _LOG_P
_LN2_LO = _f(-2.12194440e-4)  # log(2) = _LN2_HI + _LN2_LO
_LN2_HI = _f(0.693359375)
_SQRT_HALF = _f(0.707106781186547524)
_MIN_NORMAL = _f(1.1754943508222875e-38)
# sin and cos: x reduced by multiples of pi/4 (pi/4 in three parts), then one of two
# polynomials on [-pi/4, pi/4]
_FOUR_OVER_PI = _f(1.27323954473516)
_PI4_A, _PI4_B, _PI4_C = _f(-0.78515625), _f(-2.4187564849853515625e-4), \
    _f(-3.77489497744594108e-8)
_SIN_P0, _SIN_P1, _SIN_P2 = _f(-1.9515295891e-4), _f(8.3321608736e-3), _f(-1.6666654611e-1)
_COS_P0, _COS_P1, _COS_P2 = _f(2.443315711809948e-5), _f(-1.388731625493765e-3), \
    _f(4.166664568298827e-2)
_ONE, _HALF, _ZERO = _f(1.0), _f(0.5), _f(0.0)
_TWO_PI = _f(2.0 * math.pi)


@inline
def log32(x):
    """Natural log of a positive float32."""
    bits = _f32_bits(max(x, _MIN_NORMAL))
    e = _f(np.int32((bits >> 23) - 127)) + _ONE
    m = _bits_f32(np.int32((bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)))  # [0.5, 1)
    if m < _SQRT_HALF:
        e = e - _ONE
        t = (m - _ONE) + m
    else:
        t = m - _ONE
    z = t * t
    y = ffma(_P0, t, _P1)
    y = ffma(y, t, _P2)
    y = ffma(y, t, _P3)
    y = ffma(y, t, _P4)
    y = ffma(y, t, _P5)
    y = ffma(y, t, _P6)
    y = ffma(y, t, _P7)
    y = ffma(y, t, _P8)
    y = ffma(y * t, z, e * _LN2_LO)
    y = y - z * _HALF
    return ffma(e, _LN2_HI, t + y)


@inline
def sincos32(x):
    """(sin x, cos x) of a float32 x >= 0."""
    j = np.int32(x * _FOUR_OVER_PI)
    j = (j + np.int32(1)) & np.int32(~1)
    y = _f(j)
    r = ffma(y, _PI4_A, x)
    r = ffma(y, _PI4_B, r)
    r = ffma(y, _PI4_C, r)
    z = r * r
    c = ffma(_COS_P0, z, _COS_P1)
    c = ffma(c, z, _COS_P2)
    c = ffma(c * z, z, -(z * _HALF))
    c = c + _ONE
    s = ffma(_SIN_P0, z, _SIN_P1)
    s = ffma(s, z, _SIN_P2)
    s = ffma(s * z, r, r)
    near = (j & np.int32(2)) == 0  # the sine polynomial gives sin, the cosine one cos
    sin = (s if near else c) + _ZERO
    cos = (c if near else s) + _ZERO
    if (j & np.int32(4)) != 0:
        sin = -sin
    if ((~(j - np.int32(2))) & np.int32(4)) != 0:
        cos = -cos
    return sin, cos


@inline
def box_muller16(d, mean, std):
    """d (16 float32 uniforms in [0, 1)) -> normals: d[j], d[j + 8] from the pair
    (1 - d[j], d[j + 8]) as radius * cos, radius * sin, then * std + mean (one rounding)."""
    for j in range(8):
        radius = math.sqrt(_f(-2.0) * log32(_ONE - d[j]))
        sin, cos = sincos32(_TWO_PI * d[j + 8])
        d[j] = ffma(radius * cos, std, mean)
        d[j + 8] = ffma(radius * sin, std, mean)
