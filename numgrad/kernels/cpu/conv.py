"""Stride-1 convolutions as compiled loops over ranges of the batch, with BLAS called from the loop.

Inner loops index views from 0 (``src = xp[start:start + n]``; ``src[t]``): an index such as
``start + t`` might be negative as far as Numba knows, and its wraparound test per element
keeps the loop from vectorizing (10x slower copies).

The general path (``nn.py``'s im2col, one GEMM over the whole batch, then a layout pass)
writes and reads columns of the whole batch, megabytes that leave the cache, and transposes
the result and the incoming gradient in separate passes. Here each sample is done in turn in
scratch buffers that stay in cache, and the products go straight into the layouts that the
caller wants.

"Wide" columns: with stride 1, copy the sample into a zero-bordered plane ``xp`` of width
``wp = w + 2*pw``; then column row ``r = (c*kh + i)*kw + j`` is one contiguous run of that
plane, ``cols[r, t] = xp[c*hp*wp + i*dh*wp + j*dw + t]`` for ``t < oh*wp``, where ``t = y*wp + x``
is output position (y, x) for ``x < ow``. The ``wp - ow`` extra positions per output row are
computed and thrown away (17% more arithmetic on a 3x3 kernel over a 14-wide plane) in exchange
for plain copies instead of short, bounds-tested loops.

In backward the extra positions must add nothing. The incoming gradient is laid out with zeros
there, so each extra term is 0 * (a weight or an input value): exactly 0 unless that value is
inf or nan, so for non-finite weights or inputs the extra positions are zeroed in the columns
first (a pass that finite data never needs).
"""

import numba
import numpy as np
from numba import prange

from numgrad import _hook
from numgrad.kernels._jit import inline, specialize
from numgrad.kernels.cpu import _blas
from numgrad.kernels.cpu._blas import NO_TRANS, ROW_MAJOR, TRANS, dgemm, sgemm

AVAILABLE = _blas.AVAILABLE  # whether the kernels below can run (else: the general path)


@inline
def _plane(x, n, ph, pw, wp, hpwp, xp, into_plane):
    """x[n, c, y, t] <-> xp[c*hpwp + (y + ph)*wp + pw + t]: the sample into the padded plane
    (``into_plane``, the border of xp left as it is), or the plane's interior back into x."""
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    for c in range(n_c):
        for y in range(h):
            row = x[n, c, y]
            base = c * hpwp + (y + ph) * wp + pw
            run = xp[base:base + w]
            if into_plane:
                for t in range(w):
                    run[t] = row[t]
            else:
                for t in range(w):
                    row[t] = run[t]


@inline
def _wide(xp, n_c, kh, kw, dh, dw, wp, hpwp, cols, adjoint):
    """cols[(c*kh + i)*kw + j, t] = xp[c*hpwp + i*dh*wp + j*dw + t], or its adjoint
    (``adjoint``): each row of cols added into its run of xp."""
    lc = cols.shape[1]
    for c in range(n_c):
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
                start = c * hpwp + i * dh * wp + j * dw
                run = xp[start:start + lc]
                if adjoint:
                    for t in range(lc):
                        run[t] += row[t]
                else:
                    for t in range(lc):
                        row[t] = run[t]


@inline
def _all_finite(a, bits, exponent):
    """Whether no value of the contiguous array ``a`` is inf or nan: the largest exponent
    field (``exponent``, a mask of the integer type ``bits`` of a's width) is not all ones
    (an integer maximum vectorizes; a test per value that stops early does not)."""
    b = a.reshape(a.size).view(bits)
    top = exponent & 0
    for t in range(b.size):
        top = max(top, b[t] & exponent)
    return top != exponent


@inline
def _zero_extra(cols, oh, ow, wp):
    """cols[:, y*wp + t] = 0 for ow <= t < wp: the positions no output has."""
    for r in range(cols.shape[0]):
        for y in range(oh):
            cols[r, y * wp + ow:(y + 1) * wp] = 0


CHUNK = 4  # samples per task: fixed, so the weight gradient's sums never depend on threads


@inline
def _sizes(x, w2, groups, kw, ph, pw, dw, oh):
    """Batch, channels, out channels, column rows and out channels per group, the padded
    plane's width and area, the wide columns' length, and the padded planes' buffer size (the
    last column row runs (kw - 1)*dw past the last plane)."""
    n_b, n_c, h, w = x.shape
    n_o, kg = w2.shape
    wp = w + 2 * pw
    hpwp = (h + 2 * ph) * wp
    return n_b, n_c, n_o, kg, n_o // groups, wp, hpwp, oh * wp, n_c * hpwp + (kw - 1) * dw


def _conv_forward(x, w2, bias, has_bias, groups, kh, kw, ph, pw, dh, dw, oh, ow, out, first,
                  last):
    """out[n, o, y*ow + t] = bias[o] + sum_r w2[o, r] cols_n[r, y*wp + t] for samples
    first..last-1: the weights of group g (rows g*og...) times the columns of its channels
    (rows g*kg...)."""
    n_b, n_c, n_o, kg, og, wp, hpwp, lc, plane = _sizes(x, w2, groups, kw, ph, pw, dw, oh)
    cols = np.empty((n_c * kh * kw, lc), x.dtype)
    res = np.empty((n_o, lc), x.dtype)
    xp = np.zeros(plane, x.dtype)
    for n in range(first, last):
        _plane(x, n, ph, pw, wp, hpwp, xp, True)
        _wide(xp, n_c, kh, kw, dh, dw, wp, hpwp, cols, False)
        for g in range(groups):
            gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, og, lc, kg, 1.0,  # noqa: F821
                 w2[g * og:].ctypes, kg, cols[g * kg:].ctypes, lc, 0.0, res[g * og:].ctypes,
                 lc)
        dst = out[n]
        for o in range(n_o):
            src, row = res[o], dst[o]
            for y in range(oh):
                a, b = src[y * wp:y * wp + ow], row[y * ow:(y + 1) * ow]
                for t in range(ow):
                    b[t] = a[t]
            if has_bias:  # (without one, -0.0 stays -0.0)
                v = bias[o]
                for t in range(oh * ow):
                    row[t] += v


def _conv_backward(x, w2, gy, groups, kh, kw, ph, pw, dh, dw, oh, ow, need_x, need_w, gx,
                   parts, c0, c1):
    """For the chunks c0..c1-1 of CHUNK samples: parts[chunk] = sum_n G_n cols_n^T over the
    chunk's samples (as its transpose, 1.6x faster in OpenBLAS) and gx[n] = col2im(w2^T G_n),
    per group, where G_n is gy[n] laid out as the wide columns are (zero at the extra
    positions)."""
    n_b, n_c, n_o, kg, og, wp, hpwp, lc, plane = _sizes(x, w2, groups, kw, ph, pw, dw, oh)
    w_finite = _all_finite(w2, bits, EXPONENT)  # noqa: F821
    g_wide = np.zeros((n_o, lc), gy.dtype)  # the extra positions stay 0
    cols = np.empty((n_c * kh * kw, lc), x.dtype)
    xp = np.zeros(plane, x.dtype)  # the sample, padded
    gxp = np.empty(plane, x.dtype)  # its gradient
    for chunk in range(c0, c1):
        first = chunk * CHUNK
        for n in range(first, min(n_b, first + CHUNK)):
            src = gy[n]
            for o in range(n_o):
                for y in range(oh):
                    a, b = src[o, y * ow:(y + 1) * ow], g_wide[o, y * wp:y * wp + ow]
                    for t in range(ow):
                        b[t] = a[t]
            if need_w:
                _plane(x, n, ph, pw, wp, hpwp, xp, True)
                _wide(xp, n_c, kh, kw, dh, dw, wp, hpwp, cols, False)
                if not _all_finite(xp, bits, EXPONENT):  # noqa: F821
                    _zero_extra(cols, oh, ow, wp)
                beta = 0.0 if n == first else 1.0
                for g in range(groups):
                    gemm(ROW_MAJOR, NO_TRANS, TRANS, kg, og, lc, 1.0,  # noqa: F821
                         cols[g * kg:].ctypes, lc, g_wide[g * og:].ctypes, lc, beta,
                         parts[chunk, g].ctypes, og)
            if need_x:
                for g in range(groups):  # the columns' gradient, in the columns' buffer
                    gemm(ROW_MAJOR, TRANS, NO_TRANS, kg, lc, og, 1.0,  # noqa: F821
                         w2[g * og:].ctypes, kg, g_wide[g * og:].ctypes, lc, 0.0,
                         cols[g * kg:].ctypes, lc)
                if not w_finite:
                    _zero_extra(cols, oh, ow, wp)
                gxp[:] = 0  # the padded plane's gradient
                _wide(gxp, n_c, kh, kw, dh, dw, wp, hpwp, cols, True)
                _plane(gx, n, ph, pw, wp, hpwp, gxp, False)


def _sum_parts(parts, gw):
    """gw[g*og + o, r] = sum_k parts[k, g, r, o], the chunks added in order (so the sum does
    not depend on how the chunks were shared among threads)."""
    n_chunks, groups, kg, og = parts.shape
    if n_chunks == 0:
        gw[:] = 0
        return
    for g in range(groups):
        for o in range(og):
            row = gw[g * og + o]
            for r in range(kg):
                total = parts[0, g, r, o]
                for k in range(1, n_chunks):
                    total += parts[k, g, r, o]
                row[r] = total


def _forward_split(x, w2, bias, has_bias, groups, kh, kw, ph, pw, dh, dw, oh, ow, out, bounds):
    """``forward`` on the samples of chunks bounds[k]..bounds[k+1]-1, one range a thread."""
    n_b = x.shape[0]
    for k in prange(bounds.size - 1):
        forward(x, w2, bias, has_bias, groups, kh, kw, ph, pw, dh, dw, oh, ow, out,  # noqa: F821
                bounds[k] * CHUNK, min(n_b, bounds[k + 1] * CHUNK))


def _backward_split(x, w2, gy, groups, kh, kw, ph, pw, dh, dw, oh, ow, need_x, need_w, gx,
                    parts, bounds):
    """``backward`` on chunks bounds[k]..bounds[k+1]-1, one range a thread."""
    for k in prange(bounds.size - 1):
        backward(x, w2, gy, groups, kh, kw, ph, pw, dh, dw, oh, ow, need_x,  # noqa: F821
                 need_w, gx, parts, bounds[k], bounds[k + 1])


class _Kernels:
    """For one real type: the forward over a range of samples, the backward over a range of
    chunks, both split over ranges on Numba's threads (a serial twin runs every range on the
    calling thread while the threaded copy is not compiled yet), and the sum of the chunks'
    weight gradients."""

    __slots__ = ("forward", "backward", "forward_split", "backward_split", "sum_parts")

    def __init__(self, name, gemm, bits, exponent):
        values = {"gemm": gemm, "bits": bits, "EXPONENT": exponent}
        self.forward = specialize(_conv_forward, name, **values)
        self.backward = specialize(_conv_backward, name, **values)
        self.sum_parts = specialize(_sum_parts, name)
        self.forward_split = _split(_forward_split, name, forward=self.forward)
        self.backward_split = _split(_backward_split, name, backward=self.backward)


def _split(template, name, **kernel):
    specialize(template, name, **kernel)  # the serial twin, made first
    return specialize(template, f"{name}_par", {"parallel": True}, **kernel)


_KERNELS = {
    np.dtype(np.float32): _Kernels("f32", sgemm, np.int32, np.int32(0x7F800000)),
    np.dtype(np.float64): _Kernels("f64", dgemm, np.int64, np.int64(0x7FF0000000000000)),
}
DTYPES = frozenset(_KERNELS)  # the dtypes these kernels take

def _bounds(n_chunks):
    """Chunk ranges, one per thread (numgrad's thread count); None for a single range."""
    threads = min(numba.get_num_threads(), n_chunks)
    if threads < 2:
        return None
    return np.array([n_chunks * k // threads for k in range(threads + 1)], np.int64)


def _require_c_arrays(dtype, *arrays):
    """The kernels hand BLAS raw pointers with C-order strides: anything else would be read
    as if it were (the op layer makes every array so; this keeps it true)."""
    for a in arrays:
        if a.dtype != dtype or not a.flags.c_contiguous:
            raise RuntimeError(f"conv kernels: expected C-contiguous {dtype} arrays, got "
                               f"{a.dtype} with strides {a.strides}")


# Threads: Numba's own (a parallel loop over one range of chunks per thread), whose workers
# spin briefly after a parallel kernel, so the next one starts them in about 1.4 µs; handing
# the ranges to Python threads cost 55 µs a call on the 2-core VM (a futex wake and the GIL
# passed back and forth). NumPy's OpenBLAS is held to one thread meanwhile: each thread calls
# BLAS on its own samples, and a BLAS call that started threads of its own would compete.


def _forward(x, w2, bias, has_bias, groups, kh, kw, ph, pw, dh, dw, oh, ow, out):
    _require_c_arrays(x.dtype, x, w2, bias, out)
    kernels, n = _KERNELS[x.dtype], x.shape[0]
    args = (x, w2, bias, has_bias, groups, kh, kw, ph, pw, dh, dw, oh, ow, out)
    bounds = _bounds(-(-n // CHUNK))
    if bounds is None:
        return kernels.forward(*args, 0, n)
    with _blas.one_thread():
        kernels.forward_split(*args, bounds)


def _backward(x, w2, gy, groups, kh, kw, ph, pw, dh, dw, oh, ow, need_x, need_w, gx, gw):
    _require_c_arrays(x.dtype, x, w2, gy, gx, gw)
    kernels = _KERNELS[x.dtype]
    n_chunks = -(-x.shape[0] // CHUNK)
    parts = np.zeros((n_chunks if need_w else 0, groups, w2.shape[1], w2.shape[0] // groups),
                     x.dtype)
    args = (x, w2, gy, groups, kh, kw, ph, pw, dh, dw, oh, ow, need_x, need_w, gx, parts)
    bounds = _bounds(n_chunks)
    if bounds is None:
        kernels.backward(*args, 0, n_chunks)
    else:
        with _blas.one_thread():
            kernels.backward_split(*args, bounds)
    if need_w:
        kernels.sum_parts(parts, gw)


_forward.writes = (13,)
_backward.writes = (14, 15)


def forward(*args):
    """``_conv_forward`` (x and w2 C-contiguous, float32 or float64); a trace records this
    launcher, so that a replay also holds OpenBLAS to one thread."""
    return _forward(*args) if _hook.TAPE is None else _hook.record(_forward, *args)


def backward(*args):
    """``_conv_backward`` (x, w2 and gy C-contiguous, float32 or float64), as ``forward``."""
    return _backward(*args) if _hook.TAPE is None else _hook.record(_backward, *args)
