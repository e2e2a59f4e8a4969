"""CPU loops for ``cdist`` (``numgrad.kernels.distance``): ``prange`` over the rows of x1."""

from numba import prange

from numgrad.kernels import distance as D
from numgrad.kernels._jit import inline, specialize

# the kernels an op calls with data of either device: the handle (DIST.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.distance``'s kernel of the same name
EITHER_DEVICE = ("cdist_3d", "cdist_backward_3d")


def _rows(x1, x2, out, rows, p1, r, m, p, mode):
    for row in prange(rows):
        b = row // p1
        f(x1, row * m, x2, b * r * m, out, row * r, r, m, p, mode)  # noqa: F821


def _backward_rows(g, x1, x2, dist, out, rows, p1, r, m, p, mode):
    for row in prange(rows):
        b = row // p1
        f(g, row * r, x1, row * m, x2, b * r * m, dist, row * r, out, row * m, r, m,  # noqa: F821
          p, mode)


_forward = specialize(_rows, "cdist", {"parallel": True}, f=inline(D.cdist_row))
_backward = specialize(_backward_rows, "cdist_backward", {"parallel": True},
                       f=inline(D.cdist_backward_row))


def cdist_3d(x1, x2, out, p, mode):
    """out[b, i, j] = ||x1[b, i] - x2[b, j]||_p for C-contiguous x1 (B, P, M), x2 (B, R, M)
    and out (B, P, R)."""
    if out.size:
        _forward(x1.ravel(), x2.ravel(), out.ravel(), x1.shape[0] * x1.shape[1], x1.shape[1],
                 x2.shape[1], x1.shape[2], float(p), int(mode))


def cdist_backward_3d(g, x1, x2, dist, out, p, mode):
    """The gradient of sum(g * cdist(x1, x2)) with respect to x1 into ``out`` (B, P, M); all
    C-contiguous, ``dist`` the forward's result."""
    if out.size:
        _backward(g.ravel(), x1.ravel(), x2.ravel(), dist.ravel(), out.ravel(),
                  x1.shape[0] * x1.shape[1], x1.shape[1], x2.shape[1], x1.shape[2], float(p),
                  int(mode))
