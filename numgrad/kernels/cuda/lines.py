"""CUDA kernels over the lines of (outer, n, inner) arrays, one thread per line, from the
same line functions as the CPU (``numgrad.kernels.lines``)."""

import numpy as np
from numba import cuda

from numgrad.kernels import lines as L
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any


def _cumsum_lines(x, xo, out, oo, lines, n, inner, acc):
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
        f(x, xo + base, out, oo + base, n, inner, acc)  # noqa: F821


def _sort_lines(x, xo, vals, idx, oo, a, b, lines, n, inner, desc):
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
        f(x, xo + base, vals, idx, oo + base, a, b, line * n, n, inner, desc)  # noqa: F821


def _unfold_backward_lines(g, go, out, oo, lines, n, inner, windows, size, step):
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        o = line // inner
        j = line % inner
        f(g, go + (o * windows * inner + j) * size, out, oo + o * n * inner + j, n,  # noqa: F821
          inner, windows, inner * size, size, step)


def _cumprod_backward_lines(x, xo, y, yo, g, go, out, oo, lines, n, inner):
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
        f(x, xo + base, y, yo + base, g, go + base, out, oo + base, n, inner)  # noqa: F821


_K = {}


def _kernel(name):
    k = _K.get(name)
    if k is None:
        template, line = {"cumsum": (_cumsum_lines, L.cumsum_line),
                          "cumprod": (_cumsum_lines, L.cumprod_line),
                          "sort": (_sort_lines, L.sort_line),
                          "cumprod_backward": (_cumprod_backward_lines,
                                               L.cumprod_backward_line),
                          "unfold_backward": (_unfold_backward_lines,
                                              L.unfold_backward_line)}[name]
        k = _K[name] = _launch.kernel(template, name, f=_launch.device_fn(line, name + "_line"))
    return k


def cumsum_3d(x, out, acc):
    x, out = from_any(x), from_any(out)
    n, inner = x.shape[1], x.shape[2]
    lines = x.size // n if n else 0
    _launch.launch(_kernel("cumsum"), lines, x.buf, x.offset, out.buf, out.offset, lines, n,
                   inner, acc)


def cumprod_3d(x, out, acc):
    x, out = from_any(x), from_any(out)
    n, inner = x.shape[1], x.shape[2]
    lines = x.size // n if n else 0
    _launch.launch(_kernel("cumprod"), lines, x.buf, x.offset, out.buf, out.offset, lines, n,
                   inner, acc)


def cumprod_backward_3d(x, y, g, out):
    x, y, g, out = from_any(x), from_any(y), from_any(g), from_any(out)
    n, inner = x.shape[1], x.shape[2]
    lines = x.size // n if n else 0
    _launch.launch(_kernel("cumprod_backward"), lines, x.buf, x.offset, y.buf, y.offset, g.buf,
                   g.offset, out.buf, out.offset, lines, n, inner)


def sort_3d(x, vals, idx, desc):
    x, vals, idx = from_any(x), from_any(vals), from_any(idx)
    n, inner = x.shape[1], x.shape[2]
    lines = x.size // n if n else 0
    if lines:
        a = CudaArray.empty((x.size,), np.dtype(np.int64))
        b = CudaArray.empty((x.size,), np.dtype(np.int64))
        assert idx.offset == vals.offset  # both fresh outputs of one shape
        _launch.launch(_kernel("sort"), lines, x.buf, x.offset, vals.buf, idx.buf, vals.offset,
                       a.buf, b.buf, lines, n, inner, bool(desc))


def unfold_backward_4d(g, out, step):
    g, out = from_any(g), from_any(out)
    outer, windows, inner, size = g.shape
    lines = outer * inner if out.size else 0
    _launch.launch(_kernel("unfold_backward"), lines, g.buf, g.offset, out.buf, out.offset,
                   lines, out.shape[1], inner, windows, size, step)
