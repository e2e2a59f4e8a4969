"""CPU loops over pooling windows, one window function of ``numgrad.kernels.windows`` each
(``prange`` over the batch; serial or threaded as ``numgrad.kernels._parallel.pick`` says).

Max pooling has two CPU-only fast paths for windows that all lie inside the plane (no
padding, no dilation): 2x2 windows of stride 2 and any other size; they pick what the window
function picks (the first maximum, the last nan). Each launcher hands data that is not a
NumPy array to the CUDA module of the same names.
"""

import numpy as np
from numba import prange

from numgrad.kernels import LazyKernels
from numgrad.kernels import windows as W
from numgrad.kernels._jit import inline, serial_and_parallel, specialize
from numgrad.kernels._parallel import pick
from numgrad.kernels.cpu._bind import bind

_ND = np.ndarray
_CUDA = LazyKernels("windows").cuda()


def _at(i):
    return np.uint64(i)  # unsigned: no negative-index wraparound (``windows.at``)


# this device's copies of the window functions
_F = bind(W, ("max_window", "avg_bounds", "avg_window", "avg_rows_grad", "max_unpool_one",
              "span", "im2col_rows", "col2im_pixels"), __name__, {"at": inline(_at)})
avg_bounds = _F["avg_bounds"]


# --- max pooling ---------------------------------------------------------------------------


@inline
def _take(v, best, bi, i):
    """One step of a window's max: v wins if larger or nan (the last nan wins)."""
    take = (v > best) | (v != v)
    return (v if take else best), (i if take else bi)


def _max_pool2d_2x2(x, out, idx):
    """2x2 windows with stride 2, every one inside the plane. Written out, rows as 1-D views
    (no index arithmetic per element), as a tree: the winner of each row's pair, then the
    second row's if larger or nan. That picks what the chain a, b, c, d picks (the first
    maximum, the last nan), and the window's position is kept as int32, widened to the flat
    int64 index in a loop of its own: both loops vectorize (3.7x faster)."""
    n_b, n_c, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    for n in prange(n_b):
        pos = np.empty(ow, np.int32)
        for c in range(n_c):
            for yo in range(oh):
                r0 = x[n, c, 2 * yo]
                r1 = x[n, c, 2 * yo + 1]
                o = out[n, c, yo]
                for xo in range(ow):
                    a, b = r0[2 * xo], r0[2 * xo + 1]
                    top, top_at = _take(b, a, np.int32(0), np.int32(1))
                    c0, d = r1[2 * xo], r1[2 * xo + 1]
                    low, low_at = _take(d, c0, np.int32(w), np.int32(w + 1))
                    o[xo], pos[xo] = _take(low, top, top_at, low_at)
                k = idx[n, c, yo]
                base = 2 * yo * w
                for xo in range(ow):
                    k[xo] = base + 2 * xo + pos[xo]


def _max_pool2d_inside(x, kh, kw, sh, sw, out, idx):
    """Windows without padding or dilation, every one inside the plane: no bounds tests, and
    selects instead of branches (on real data the comparison is a coin flip: 2x faster)."""
    n_b, n_c, h, w = x.shape
    oh, ow = out.shape[2], out.shape[3]
    for n in prange(n_b):
        for c in range(n_c):
            for yo in range(oh):
                y0 = yo * sh
                for xo in range(ow):
                    x0 = xo * sw
                    best = x[n, c, y0, x0]
                    bi = y0 * w + x0
                    for i in range(kh):
                        for j in range(kw):
                            v = x[n, c, y0 + i, x0 + j]
                            take = (v > best) | (v != v)
                            bi = (y0 + i) * w + x0 + j if take else bi
                            best = v if take else best
                    out[n, c, yo, xo] = best
                    idx[n, c, yo, xo] = bi


def _max_pool2d_any(x, h, w, kh, kw, sh, sw, ph, pw, dh, dw, out, idx):
    """Any windows (``x``: the flat input of planes h x w)."""
    n_b, n_c, oh, ow = out.shape
    for n in prange(n_b):
        for c in range(n_c):
            base = (n * n_c + c) * h * w
            for yo in range(oh):
                for xo in range(ow):
                    out[n, c, yo, xo], idx[n, c, yo, xo] = f(  # noqa: F821
                        x, base, w, 1, h, w, yo, xo, kh, kw, sh, sw, ph, pw, dh, dw)


_POOL_2X2 = serial_and_parallel(_max_pool2d_2x2)
_POOL_INSIDE = serial_and_parallel(_max_pool2d_inside)
_POOL_ANY = (specialize(_max_pool2d_any, "serial", f=_F["max_window"]),
             specialize(_max_pool2d_any, "parallel", {"parallel": True},
                        f=_F["max_window"]))


def max_pool2d(x, kh, kw, sh, sw, ph, pw, dh, dw, out, idx, parallel=None):
    """Window maxima and their flat indices in each plane, as in PyTorch: the last nan wins,
    the first maximum wins ties. Each case is its own kernel, so a program compiles only the
    cases it uses. ``out`` and ``idx`` are C-contiguous (N, C, OH, OW)."""
    if x.__class__ is not _ND:
        return _CUDA.max_pool2d(x, kh, kw, sh, sw, ph, pw, dh, dw, out, idx)
    h, w = x.shape[2], x.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    if ph == 0 and pw == 0 and dh == 1 and dw == 1 and (oh - 1) * sh + kh <= h \
            and (ow - 1) * sw + kw <= w:
        if kh == 2 and kw == 2 and sh == 2 and sw == 2:
            return pick(*_POOL_2X2, x.size, parallel=parallel)(x, out, idx)
        return pick(*_POOL_INSIDE, x.size, parallel=parallel)(x, kh, kw, sh, sw, out, idx)
    return pick(*_POOL_ANY, x.size, parallel=parallel)(
        np.ascontiguousarray(x).reshape(-1), h, w, kh, kw, sh, sw, ph, pw, dh, dw, out, idx)


def _max_pool2d_bwd(g, idx, gx, n_c, hw):
    """gx = 0; gx[n, c].flat[idx] += g (``gx`` flat: the launcher's new C-contiguous array,
    so a plane is one run of memory and flat indices need no division)."""
    n_b, _, oh, ow = g.shape
    for n in prange(n_b):
        gx[n * n_c * hw:(n + 1) * n_c * hw] = 0
        for c in range(n_c):
            base = (n * n_c + c) * hw
            for yo in range(oh):
                gr = g[n, c, yo]
                kr = idx[n, c, yo]
                for xo in range(ow):
                    f(gr[xo], kr[xo], gx, base)  # noqa: F821


_POOL_BWD = (specialize(_max_pool2d_bwd, "serial", f=_F["max_unpool_one"]),
             specialize(_max_pool2d_bwd, "parallel", {"parallel": True},
                        f=_F["max_unpool_one"]))


def max_pool2d_bwd(g, idx, gx, parallel=None):
    """gx = 0; gx[n, c].flat[idx] += g, into C-contiguous ``gx``."""
    if g.__class__ is not _ND:
        return _CUDA.max_pool2d_bwd(g, idx, gx)
    flat = gx.reshape(-1) if gx.flags.c_contiguous else np.empty(gx.size, gx.dtype)
    pick(*_POOL_BWD, gx.size, parallel=parallel)(g, idx, flat, gx.shape[1],
                                                 gx.shape[2] * gx.shape[3])
    if not gx.flags.c_contiguous:
        gx[...] = flat.reshape(gx.shape)


# --- average pooling -----------------------------------------------------------------------


def _avg_pool2d(x, h, w, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, out):
    """Window means with PyTorch's divisor rules (``x``: the flat input of planes h x w)."""
    n_b, n_c, oh, ow = out.shape
    for n in prange(n_b):
        for c in range(n_c):
            base = (n * n_c + c) * h * w
            for yo in range(oh):
                for xo in range(ow):
                    out[n, c, yo, xo] = f(x, base, w, 1, h, w, yo, xo, kh, kw, sh, sw, ph,  # noqa: F821
                                          pw, count_include_pad, divisor, 0.0)


_AVG = (specialize(_avg_pool2d, "serial", f=_F["avg_window"]),
        specialize(_avg_pool2d, "parallel", {"parallel": True}, f=_F["avg_window"]))


def avg_pool2d(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, out, parallel=None):
    """Window means with PyTorch's divisor rules (padding counted or not, or an override)."""
    if x.__class__ is not _ND:
        return _CUDA.avg_pool2d(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, out)
    pick(*_AVG, x.size, parallel=parallel)(np.ascontiguousarray(x).reshape(-1), x.shape[2],
                                           x.shape[3], kh, kw, sh, sw, ph, pw,
                                           count_include_pad, divisor, out)


def _avg_pool2d_bwd(g, n_b, n_c, oh, ow, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, gx,
                    h, w):
    """The gradient a plane at a time (``g``: the flat gradient of planes oh x ow, ``gx``:
    the flat input gradient of planes h x w)."""
    for n in prange(n_b):
        for c in range(n_c):
            gbase = (n * n_c + c) * oh * ow
            xbase = (n * n_c + c) * h * w
            f(g, gbase, ow, 1, oh, ow, 0, h, gx, xbase, w, 1, h, w, kh, kw, sh, sw, ph,  # noqa: F821
              pw, count_include_pad, divisor)


_AVG_BWD = (specialize(_avg_pool2d_bwd, "serial", f=_F["avg_rows_grad"]),
            specialize(_avg_pool2d_bwd, "parallel", {"parallel": True}, f=_F["avg_rows_grad"]))


def avg_pool2d_bwd(g, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, gx, parallel=None):
    """gx = the adjoint of avg_pool2d applied to g: every input of a window receives
    g / divisor."""
    if g.__class__ is not _ND:
        return _CUDA.avg_pool2d_bwd(g, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, gx)
    flat = gx.reshape(-1) if gx.flags.c_contiguous else np.empty(gx.size, gx.dtype)
    n_b, n_c, h, w = gx.shape
    pick(*_AVG_BWD, gx.size, parallel=parallel)(
        np.ascontiguousarray(g).reshape(-1), n_b, n_c, g.shape[2], g.shape[3], kh, kw, sh, sw,
        ph, pw, count_include_pad, divisor, flat, h, w)
    if not gx.flags.c_contiguous:
        gx[...] = flat.reshape(gx.shape)
