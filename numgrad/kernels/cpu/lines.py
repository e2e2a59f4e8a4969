"""CPU loops over the lines of (outer, n, inner) arrays, one line function of
``numgrad.kernels.lines`` each (``prange`` over lines)."""

import numpy as np
from numba import prange

from numgrad.kernels import lines as L
from numgrad.kernels._jit import inline, specialize

# the kernels an op calls with data of either device: the handle (LINES.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.lines``'s kernel of the same name
EITHER_DEVICE = ("cumsum_3d", "cumprod_3d", "cumprod_backward_3d", "sort_3d", "unfold_backward_4d")


def _cumsum_lines(x, out, lines, n, inner, acc):
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        f(x, base, out, base, n, inner, acc)  # noqa: F821


def _sort_lines(x, vals, idx, a, b, lines, n, inner, desc):
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        f(x, base, vals, idx, base, a, b, line * n, n, inner, desc)  # noqa: F821


def _unfold_backward_lines(g, out, lines, n, inner, windows, size, step):
    for line in prange(lines):
        o = line // inner
        j = line % inner
        f(g, (o * windows * inner + j) * size, out, o * n * inner + j, n, inner,  # noqa: F821
          windows, inner * size, size, step)


def _cumprod_backward_lines(x, y, g, out, lines, n, inner):
    for line in prange(lines):
        base = (line // inner) * n * inner + line % inner
        f(x, base, y, base, g, base, out, base, n, inner)  # noqa: F821


_cumsum = specialize(_cumsum_lines, "cumsum", {"parallel": True}, f=inline(L.cumsum_line))
_cumprod = specialize(_cumsum_lines, "cumprod", {"parallel": True}, f=inline(L.cumprod_line))
_cumprod_backward = specialize(_cumprod_backward_lines, "cumprod_backward", {"parallel": True},
                               f=inline(L.cumprod_backward_line))
_sort = specialize(_sort_lines, "sort", {"parallel": True}, f=inline(L.sort_line))
_unfold_backward = specialize(_unfold_backward_lines, "unfold_backward", {"parallel": True},
                              f=inline(L.unfold_backward_line))


def cumsum_3d(x, out, acc):
    """Cumulative sums along axis 1 of C-contiguous 3-D ``x`` into ``out`` (same shape)."""
    if x.size:
        _cumsum(x.ravel(), out.ravel(), x.shape[0] * x.shape[2], x.shape[1], x.shape[2], acc)


def cumprod_3d(x, out, acc):
    """Cumulative products along axis 1 of C-contiguous 3-D ``x`` into ``out`` (same shape)."""
    if x.size:
        _cumprod(x.ravel(), out.ravel(), x.shape[0] * x.shape[2], x.shape[1], x.shape[2], acc)


def cumprod_backward_3d(x, y, g, out):
    """The gradient of cumprod along axis 1 of C-contiguous 3-D ``x`` (result ``y``, incoming
    gradient ``g``, all of one shape and dtype) into ``out``."""
    if x.size:
        _cumprod_backward(x.ravel(), y.ravel(), g.ravel(), out.ravel(), x.shape[0] * x.shape[2],
                          x.shape[1], x.shape[2])


def sort_3d(x, vals, idx, desc):
    """Stable sort along axis 1 of C-contiguous 3-D ``x``: values and int64 indices."""
    if x.size:
        n = x.shape[1]
        a = np.empty(x.size, np.int64)
        b = np.empty(x.size, np.int64)
        _sort(x.ravel(), vals.ravel(), idx.ravel(), a, b, x.shape[0] * x.shape[2], n,
              x.shape[2], bool(desc))


def unfold_backward_4d(g, out, step):
    """Into C-contiguous ``out`` (outer, n, inner): the gradient of its unfold along axis 1 in
    windows of ``size`` every ``step``, from C-contiguous ``g`` (outer, windows, inner, size)."""
    if out.size:
        outer, windows, inner, size = g.shape
        _unfold_backward(g.ravel(), out.ravel(), outer * inner, out.shape[1], inner, windows,
                         size, step)
