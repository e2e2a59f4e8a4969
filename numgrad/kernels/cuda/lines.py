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


_K = {}


def _kernel(name):
    k = _K.get(name)
    if k is None:
        template, line = {"cumsum": (_cumsum_lines, L.cumsum_line),
                          "cumprod": (_cumsum_lines, L.cumprod_line),
                          "sort": (_sort_lines, L.sort_line)}[name]
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
