"""CUDA kernels over pooling windows and im2col/col2im, one thread per output (per input row
for the avg-pool backward), from the same window functions as the CPU
(``numgrad.kernels.windows``; same launcher names as ``numgrad.kernels.cpu.windows`` and, for
im2col/col2im, ``numgrad.kernels.cpu.nn``).
Max-pool backward has only the argmax indices, not the window geometry, so it scatters with
``add_at`` (``cuda.indexing.add_at``: atomic) into a zeroed gradient."""

from numba import cuda, float64

from numgrad.kernels import EW
from numgrad.kernels import windows as W
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any
from numgrad.kernels.cuda.indexing import add_at, fill_3d

# the window functions as device functions (module attributes ``<name>_dev``)
_launch.bind(W, ("at", "max_window", "avg_bounds", "avg_window", "avg_rows_grad",
                "max_unpool_one", "span", "im2col_rows", "col2im_pixels"),
             {"add_at": add_at}, __name__)


def _max_pool_k(x, xo, xs, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, out, oo, os,
                idx, io, is_, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, yo, xc = _launch.unravel4(t, n_c, oh, ow)
        best, bi = f(x, xo + b * xs[0] + c * xs[1], xs[2], xs[3], h, w, yo, xc, kh, kw,  # noqa: F821
                     sh, sw, ph, pw, dh, dw)
        out[oo + b * os[0] + c * os[1] + yo * os[2] + xc * os[3]] = best
        idx[io + b * is_[0] + c * is_[1] + yo * is_[2] + xc * is_[3]] = bi


def _max_unpool_k(g, go, gs, idx, io, is_, n_c, oh, ow, hw, gx, gxo, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, yo, xc = _launch.unravel4(t, n_c, oh, ow)
        f(g[go + b * gs[0] + c * gs[1] + yo * gs[2] + xc * gs[3]],  # noqa: F821
          idx[io + b * is_[0] + c * is_[1] + yo * is_[2] + xc * is_[3]], gx,
          gxo + (b * n_c + c) * hw)


def _avg_pool_k(x, xo, xs, n_c, h, w, kh, kw, sh, sw, ph, pw, include, divisor, oh, ow,
                out, oo, os, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, yo, xc = _launch.unravel4(t, n_c, oh, ow)
        out[oo + b * os[0] + c * os[1] + yo * os[2] + xc * os[3]] = f(  # noqa: F821
            x, xo + b * xs[0] + c * xs[1], xs[2], xs[3], h, w, yo, xc, kh, kw, sh, sw, ph, pw,
            include, divisor, float64(0))


def _avg_bwd_k(g, go, gs, n_c, oh, ow, kh, kw, sh, sw, ph, pw, include, divisor, h, w,
               gx, gxo, gxs, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, iy = _launch.unravel3(t, n_c, h)
        f(g, go + b * gs[0] + c * gs[1], gs[2], gs[3], oh, ow, iy, iy + 1, gx,  # noqa: F821
          gxo + b * gxs[0] + c * gxs[1] + iy * gxs[2], gxs[2], gxs[3], h, w, kh, kw, sh, sw,
          ph, pw, include, divisor)


def _im2col_k(x, xo, xs, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols, co, cs, n):
    n_l = oh * ow
    n_k = n_c * kh * kw
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, row, col = _launch.unravel3(t, n_k, n_l)
        yo = col // ow
        xc = col - yo * ow
        q = row // kw
        f(x, xo + b * xs[0] + (q // kh) * xs[1], xs[2], xs[3], h, w, q % kh, row % kw, yo,  # noqa: F821
          yo + 1, xc, xc + 1, sh, sw, ph, pw, dh, dw, ow, cols, co + b * cs[0] + row * cs[1],
          cs[2])


# d/dcols <x, col2im(cols)> = im2col: each pixel sums the column entries that copied it
def _col2im_k(cols, co, cs, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, n_c, h, w, x, xo, xs, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, iy, ix = _launch.unravel4(t, n_c, h, w)
        f(cols, co + b * cs[0] + c * kh * kw * cs[1], cs[1], cs[2], kh, kw, sh, sw, ph, pw,  # noqa: F821
          dh, dw, oh, ow, iy, iy + 1, ix, ix + 1, x, xo + b * xs[0] + c * xs[1], xs[2], xs[3])


_K = {}


def _kernel(template, fn):
    k = _K.get(template)
    if k is None:
        k = _K[template] = _launch.kernel(template, template.__name__.strip("_"),
                                          f=globals()[fn + "_dev"])
    return k


def _nd(a):
    """(buffer, offset, element strides) of a CudaArray."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el


def max_pool2d(x, kh, kw, sh, sw, ph, pw, dh, dw, out, idx):
    """Window maxima and their flat indices (the last nan wins, the first maximum ties)."""
    x, out, idx = from_any(x), from_any(out), from_any(idx)
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    _launch.launch(_kernel(_max_pool_k, "max_window"), out.size, *_nd(x), n_c, h, w, kh, kw,
                   sh, sw, ph, pw, dh, dw, oh, ow, *_nd(out), *_nd(idx), out.size)


# d/dx max_pool = g routed to each window's argmax: gx[n, c].flat[idx] += g (atomic adds)
def max_pool2d_bwd(g, idx, gx):
    """gx = 0; gx[n, c].flat[idx] += g."""
    g, idx, gx = from_any(g), from_any(idx), from_any(gx)
    flat = gx if gx.flags.c_contiguous else CudaArray.empty(gx.shape, gx.dtype)
    n_c, oh, ow = g.shape[1], g.shape[2], g.shape[3]
    hw = gx.shape[2] * gx.shape[3]
    fill_3d(flat.reshape(1, 1, flat.size), 0)
    _launch.launch(_kernel(_max_unpool_k, "max_unpool_one"), g.size, *_nd(g), *_nd(idx), n_c,
                   oh, ow, hw, flat.buf, flat.offset, g.size)
    if flat is not gx:
        EW.cuda().unary(EW.copy, flat, gx.dtype, out=gx)


def avg_pool2d(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, out):
    """Window means with PyTorch's divisor rules (padding counted or not, or an override)."""
    x, out = from_any(x), from_any(out)
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    _launch.launch(_kernel(_avg_pool_k, "avg_window"), out.size, *_nd(x), n_c, h, w, kh, kw, sh,
                   sw, ph, pw, bool(count_include_pad), int(divisor), oh, ow, *_nd(out),
                   out.size)


def avg_pool2d_bwd(g, kh, kw, sh, sw, ph, pw, count_include_pad, divisor, gx):
    """gx = 0; every input of a window receives g / divisor (a thread per input row)."""
    g, gx = from_any(g), from_any(gx)
    n_b, n_c, h, w = gx.shape
    _launch.launch(_kernel(_avg_bwd_k, "avg_rows_grad"), n_b * n_c * h, *_nd(g), n_c,
                   g.shape[2], g.shape[3], kh, kw, sh, sw, ph, pw, bool(count_include_pad),
                   int(divisor), h, w, *_nd(gx), n_b * n_c * h)


def im2col(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols):
    """cols[n, (c*kh + i)*kw + j, y*ow + x] = x[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw] (0 out
    of bounds; ``im2col_rows`` a column entry per thread); ``cols`` may be a strided view
    (the k-major layout)."""
    x, cols = from_any(x), from_any(cols)
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    _launch.launch(_kernel(_im2col_k, "im2col_rows"), cols.size, *_nd(x), n_c, h, w, kh, kw, sh,
                   sw, ph, pw, dh, dw, oh, ow, *_nd(cols), cols.size)


def col2im(cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, x):
    """x = the adjoint of im2col (``col2im_pixels`` a pixel per thread: the CPU's sums, no
    atomics; cols of any strides)."""
    cols, x = from_any(cols), from_any(x)
    n_c, h, w = x.shape[1], x.shape[2], x.shape[3]
    _launch.launch(_kernel(_col2im_k, "col2im_pixels"), x.size, *_nd(cols), kh, kw, sh, sw, ph,
                   pw, dh, dw, oh, ow, n_c, h, w, *_nd(x), x.size)
