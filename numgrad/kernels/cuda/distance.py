"""CUDA kernels for ``cdist``, one thread per row of x1, from the CPU's row functions
(``numgrad.kernels.distance``)."""

from numba import cuda

from numgrad.kernels import distance as D
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any


def _rows(x1, x1o, x2, x2o, out, oo, rows, p1, r, m, p, mode):
    for row in range(cuda.grid(1), rows, cuda.gridsize(1)):
        b = row // p1
        f(x1, x1o + row * m, x2, x2o + b * r * m, out, oo + row * r, r, m, p, mode)  # noqa: F821


def _backward_rows(g, go, x1, x1o, x2, x2o, dist, do, out, oo, rows, p1, r, m, p, mode):
    for row in range(cuda.grid(1), rows, cuda.gridsize(1)):
        b = row // p1
        f(g, go + row * r, x1, x1o + row * m, x2, x2o + b * r * m, dist,  # noqa: F821
          do + row * r, out, oo + row * m, r, m, p, mode)


_K = {}


def _kernel(name):
    k = _K.get(name)
    if k is None:
        template, row = {"cdist": (_rows, D.cdist_row),
                         "cdist_backward": (_backward_rows, D.cdist_backward_row)}[name]
        k = _K[name] = _launch.kernel(template, name, f=_launch.device_fn(row, name + "_row"))
    return k


def cdist_3d(x1, x2, out, p, mode):
    x1, x2, out = from_any(x1), from_any(x2), from_any(out)
    rows = x1.shape[0] * x1.shape[1] if out.size else 0
    _launch.launch(_kernel("cdist"), rows, x1.buf, x1.offset, x2.buf, x2.offset, out.buf,
                   out.offset, rows, x1.shape[1], x2.shape[1], x1.shape[2], float(p), int(mode))


def cdist_backward_3d(g, x1, x2, dist, out, p, mode):
    g, x1, x2, dist, out = (from_any(a) for a in (g, x1, x2, dist, out))
    rows = x1.shape[0] * x1.shape[1] if out.size else 0
    _launch.launch(_kernel("cdist_backward"), rows, g.buf, g.offset, x1.buf, x1.offset, x2.buf,
                   x2.offset, dist.buf, dist.offset, out.buf, out.offset, rows, x1.shape[1],
                   x2.shape[1], x1.shape[2], float(p), int(mode))
