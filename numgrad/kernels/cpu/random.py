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
from numgrad.kernels.cpu._boxmuller32 import box_muller16
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


_UPPER = np.uint32(0x80000000)
_LOWER = np.uint32(0x7FFFFFFF)
_MATRIX = np.uint32(0x9908B0DF)
_SHIFT = _N - 397  # 227: the words whose partner 397 ahead is not yet twisted


@jit
def _twist(state):
    """The next 624 words, in place (each word mixes with the one after it and the one 397
    ahead, modulo 624: the wrapped partners are words twisted already in this pass)."""
    for i in range(_SHIFT):
        y = (state[i] & _UPPER) | (state[i + 1] & _LOWER)
        state[i] = state[i + 397] ^ (y >> 1) ^ ((y & 1) * _MATRIX)
    for i in range(_SHIFT, _N - 1):
        y = (state[i] & _UPPER) | (state[i + 1] & _LOWER)
        state[i] = state[i - _SHIFT] ^ (y >> 1) ^ ((y & 1) * _MATRIX)
    y = (state[_N - 1] & _UPPER) | (state[0] & _LOWER)
    state[_N - 1] = state[396] ^ (y >> 1) ^ ((y & 1) * _MATRIX)
    state[_NEXT] = 0
    state[_LEFT] = _N


@jit
def _temper(state, start, out, at, count):
    """out[at:at + count] = the tempered words state[start:start + count]."""
    src = state[start:start + count]
    dst = out[at:at + count]
    for k in range(count):
        y = src[k]
        y ^= y >> 11
        y ^= (y << 7) & np.uint32(0x9D2C5680)
        y ^= (y << 15) & np.uint32(0xEFC60000)
        y ^= y >> 18
        dst[k] = y


@jit
def _draw_into(state, out, at, count):
    """out[at:at + count] = the next ``count`` draws, a run of words at a time: ``left - 1``
    words can be read from ``next`` before the twist that the draw after them makes (a state
    whose ``next`` is past the words, which validation refuses, twists first)."""
    done = 0
    while done < count:
        nxt = np.int64(state[_NEXT])
        avail = min(np.int64(state[_LEFT]) - 1, _N - nxt)
        if avail <= 0:
            _twist(state)
            nxt = 0
            avail = _N
            state[_LEFT] = _N + 1  # the first word after a twist leaves left at 624
        m = min(avail, count - done)
        _temper(state, nxt, out, at + done, m)
        state[_NEXT] = nxt + m
        state[_LEFT] = np.int64(state[_LEFT]) - m
        done += m


@jit
def next_u32(state, out):
    """Fill uint32 array ``out`` with the next draws: ``left -= 1``, a twist when it reaches
    0, then the word at ``next``."""
    _draw_into(state, out, 0, out.size)


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


# The fused fills: the draws go through a small buffer into their transform, chunk by chunk
# (no array of raw draws the size of the output). The draws are sequential; the values are
# those of ``next_u32`` followed by ``uniform32``/``uniform64``/``normal16``.
_CHUNK = 4096  # a multiple of 16: normal fills transform whole blocks of each chunk


@jit
def fill_uniform32(state, out, low, high):
    """``out`` (flat float32) = ``uniform32`` of the next ``out.size`` draws."""
    raw = np.empty(_CHUNK, np.uint32)
    for start in range(0, out.size, _CHUNK):
        m = min(_CHUNK, out.size - start)
        _draw_into(state, raw, 0, m)
        uniform32(raw[:m], out[start:start + m], low, high)


@jit
def fill_uniform64(state, out, low, high):
    """``out`` (flat float64) = ``uniform64`` of the next ``2 * out.size`` draws."""
    raw = np.empty(2 * _CHUNK, np.uint32)
    for start in range(0, out.size, _CHUNK):
        m = min(_CHUNK, out.size - start)
        _draw_into(state, raw, 0, 2 * m)
        uniform64(raw[:2 * m], out[start:start + m], low, high)


@jit
def fill_normal32(state, out, mean, std):
    """PyTorch's normal fill of a contiguous float32 ``out`` of 16 values or more:
    ``out.size`` uniforms in [0, 1) (as ``uniform32`` draws them), float32 Box-Muller on each
    whole block of 16 (``_boxmuller32``), then, when 16 does not divide the size, 16 more
    uniforms turned into the last 16 values (the uniforms they replace are drawn and
    dropped)."""
    n = out.size
    body = n - n % 16
    m32 = np.float32(mean)
    s32 = np.float32(std)
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        fill_uniform32(state, out[start:start + m], 0.0, 1.0)
        blocks = out[start:max(start, min(start + m, body))].reshape(-1, 16)
        for b in range(blocks.shape[0]):
            box_muller16(blocks[b], m32, s32)
    if n % 16:
        tail = np.empty(16, np.float32)
        fill_uniform32(state, tail, 0.0, 1.0)
        box_muller16(tail, m32, s32)
        out[n - 16:] = tail


@jit
def fill_normal64(state, out, mean, std):
    """``fill_normal32`` for float64: 53-bit uniforms (``uniform64``), ``normal16``'s
    float64 Box-Muller."""
    n = out.size
    body = n - n % 16
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        fill_uniform64(state, out[start:start + m], 0.0, 1.0)
        blocks = out[start:max(start, min(start + m, body))].reshape(-1, 16)
        for b in range(blocks.shape[0]):
            normal16(blocks[b], mean, std)
    if n % 16:
        tail = np.empty(16, np.float64)
        fill_uniform64(state, tail, 0.0, 1.0)
        normal16(tail, mean, std)
        out[n - 16:] = tail


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
