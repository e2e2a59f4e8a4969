"""CUDA kernels over pooling windows, one thread per output (per input row for the avg-pool
backward), from the same window functions as the CPU (``numgrad.kernels.windows``; same
launcher names as ``numgrad.kernels.cpu.windows``).
Max-pool backward has only the argmax indices, not the window geometry, so it scatters with
``add_at`` (``cuda.indexing.add_at``: atomic) into a zeroed gradient."""

import types as pytypes

from numba import cuda, float64

from numgrad.kernels import EW
from numgrad.kernels import windows as W
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any
from numgrad.kernels.cuda.indexing import add_at


def _bind():
    """The window functions as device functions (module attributes ``<name>_dev``, so the PTX
    check rebuilds them by name)."""
    g = dict(W.__dict__)
    g["add_at"] = add_at
    if _launch.SIM:
        g["math"] = _launch._SimMath()
    for name in ("max_window", "avg_bounds", "avg_window", "avg_rows_grad",
                 "max_unpool_one"):
        fn = getattr(W, name)
        copy = pytypes.FunctionType(fn.__code__, g, name, fn.__defaults__)
        d = g[name] = cuda.jit(device=True)(copy)
        globals()[name + "_dev"] = d
        _launch._RECIPES[id(d)] = ("attr", __name__, name + "_dev")


_bind()


def _max_pool_k(x, xo, xs, n_c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, out, oo, os,
                idx, io, is_, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        b, c, yo, xc = _launch.unravel4(t, n_c, oh, ow)
        best, bi = f(x, xo + b * xs[0] + c * xs[1], xs[2], xs[3], h, w, yo, xc, kh, kw,  # noqa: F821
                     sh, sw, ph, pw, dh, dw)
        out[oo + b * os[0] + c * os[1] + yo * os[2] + xc * os[3]] = best
        idx[io + b * is_[0] + c * is_[1] + yo * is_[2] + xc * is_[3]] = bi


def _zero_k(a, ao, n):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        a[ao + t] = 0


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


_K = {}


def _kernel(template, fn):
    k = _K.get(template)
    if k is None:
        bind = {"f": globals()[fn + "_dev"]} if fn else {}
        k = _K[template] = _launch.kernel(template, template.__name__.strip("_"), **bind)
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
    _launch.launch(_kernel(_zero_k, None), flat.size, flat.buf, flat.offset, flat.size)
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
