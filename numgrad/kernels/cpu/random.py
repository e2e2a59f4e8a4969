"""MT19937, seeded and consumed exactly as PyTorch's CPU generator consumes it.

The state is a uint32[626] array laid out as PyTorch's engine keeps it: the 624 words, then
``next`` (the word the next draw reads) and ``left`` (one more than the draws before the
next twist); ``numgrad.random`` validates a state before any kernel reads it. Uniform
floats use 24 random bits (float32) or 53 bits from two draws (float64), as PyTorch does,
so ``manual_seed(s); rand(...)`` reproduces PyTorch's numbers.
"""

import math

import numpy as np

from numgrad.kernels._jit import jit
from numgrad.kernels.cpu._fastmath import ffma

_N = 624
_NEXT = 624
_LEFT = 625


@jit
def seed(state, s):
    state[0] = s & 0xFFFFFFFF
    for i in range(1, _N):
        prev = np.uint64(state[i - 1])
        state[i] = (np.uint64(1812433253) * (prev ^ (prev >> np.uint64(30))) + np.uint64(i)) \
            & np.uint64(0xFFFFFFFF)
    state[_NEXT] = 0
    state[_LEFT] = 1  # the first draw twists


@jit
def _twist(state):
    for i in range(_N):
        y = (np.uint64(state[i]) & np.uint64(0x80000000)) | \
            (np.uint64(state[(i + 1) % _N]) & np.uint64(0x7FFFFFFF))
        v = np.uint64(state[(i + 397) % _N]) ^ (y >> np.uint64(1))
        if y & np.uint64(1):
            v ^= np.uint64(0x9908B0DF)
        state[i] = v
    state[_NEXT] = 0
    state[_LEFT] = _N


@jit
def next_u32(state, out):
    """Fill uint32 array ``out`` with the next draws: ``left -= 1``, a twist when it reaches
    0, then the word at ``next``. (A state whose ``next`` is past the words, which validation
    refuses, twists instead of reading outside them.)"""
    for k in range(out.size):
        state[_LEFT] -= 1
        if state[_LEFT] == 0 or state[_NEXT] >= _N:
            _twist(state)
        y = np.uint64(state[state[_NEXT]])
        state[_NEXT] += 1
        y ^= y >> np.uint64(11)
        y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
        y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
        y ^= y >> np.uint64(18)
        out[k] = y


@jit
def uniform32(raw, out, low, high):
    """out = u * (high - low) + low, u from the low 24 bits of one draw; PyTorch evaluates it
    in double with the bounds (and their difference) rounded to float32 first."""
    lo = np.float32(low)
    span = np.float64(np.float32(np.float32(high) - lo))
    for k in range(out.size):
        u = (np.uint64(raw[k]) & np.uint64(0xFFFFFF)) * (1.0 / 16777216.0)
        out[k] = np.float32(u * span + np.float64(lo))


@jit
def uniform64(raw, out, low, high):
    """out = u * (high - low) + low with one rounding (PyTorch's compiled kernel fuses the
    multiply-add), u from 53 bits of two draws (first draw high)."""
    span = np.float64(high - low)
    lo = np.float64(low)
    for k in range(out.size):
        v = ((np.uint64(raw[2 * k]) << np.uint64(32)) | np.uint64(raw[2 * k + 1])) \
            & np.uint64((1 << 53) - 1)
        out[k] = ffma(np.float64(v) * (1.0 / 9007199254740992.0), span, lo)


@jit
def normal16(d, mean, std):
    """Box-Muller on 16 uniforms in place: d[j], d[j+8] from (1 - d[j], d[j+8])."""
    for j in range(8):
        u1 = 1.0 - d[j]
        u2 = d[j + 8]
        radius = math.sqrt(-2.0 * math.log(u1))
        theta = 2.0 * math.pi * u2
        d[j] = ffma(radius * math.cos(theta), np.float64(std), np.float64(mean))
        d[j + 8] = ffma(radius * math.sin(theta), np.float64(std), np.float64(mean))


@jit
def normal_pairs(u, out):
    """Standard normals as PyTorch's serial kernel draws them (fewer than 16 values, or a
    tensor that is not contiguous): (cos, sin) of each pair of uniforms (u1, u2)."""
    for k in range(out.size):
        pair = k // 2
        u1 = u[2 * pair]
        u2 = u[2 * pair + 1]
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        out[k] = radius * math.cos(theta) if k % 2 == 0 else radius * math.sin(theta)


@jit
def scale_shift(z, out, mean, std):
    """out = z * std + mean with one rounding, in float64, then cast to ``out``'s dtype."""
    for k in range(out.size):
        out[k] = ffma(np.float64(z[k]), np.float64(std), np.float64(mean))


@jit
def randint(raw, out, low, span):
    """out = low + raw % span, wrapping around in 64 bits as PyTorch's kernel does; span is a
    uint64, 0 standing for 2**64 (then out is raw's bits)."""
    for k in range(out.size):
        r = np.uint64(raw[k])
        if span != 0:
            r = r % span
        out[k] = np.int64(np.uint64(low) + r)


@jit
def randperm(raw, out):
    """Fisher-Yates as PyTorch's CPU randperm runs it: swap i with i + raw[i] % (n - i)."""
    n = out.size
    for i in range(n):
        out[i] = i
    for i in range(n - 1):
        z = np.int64(np.uint64(raw[i]) % np.uint64(n - i))
        t = out[i]
        out[i] = out[z + i]
        out[z + i] = t


@jit
def bernoulli(raw, out, p):
    """out = 1 where the 53-bit uniform (two draws, first high) is below p, else 0: PyTorch's
    ``bernoulli_(p)`` for a number p, whatever the dtype."""
    for k in range(out.size):
        v = ((np.uint64(raw[2 * k]) << np.uint64(32)) | np.uint64(raw[2 * k + 1])) \
            & np.uint64((1 << 53) - 1)
        out[k] = 1 if v * (1.0 / 9007199254740992.0) < p else 0
