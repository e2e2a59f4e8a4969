"""CPU loops for ``embedding_bag`` (``numgrad.kernels.embedding_bag``): ``prange`` over bags
(forward), weight columns (weight gradient) and positions (per-sample-weight gradient)."""

from numba import prange

from numgrad.kernels import embedding_bag as E
from numgrad.kernels._jit import inline, specialize

# the kernels an op calls with data of either device: the handle (EB.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.embedding_bag``'s kernel of the same name
EITHER_DEVICE = ("bag_forward", "bag_weight_grad", "bag_psw_grad")


def _bags(w, idx, psw, starts, ends, out, arg, cnt, bags, dim, pad, mode, has_psw):
    for b in prange(bags):
        f(w, 0, idx, 0, psw, 0, starts, ends, out, 0, arg, 0, cnt, 0, b, dim, pad,  # noqa: F821
          mode, has_psw)


def _cols(g, idx, psw, starts, ends, arg, cnt, gw, bags, dim, pad, mode, has_psw):
    for d in prange(dim):
        f(g, 0, idx, 0, psw, 0, starts, ends, arg, 0, cnt, 0, gw, 0, d, bags, dim, pad,  # noqa: F821
          mode, has_psw)


def _positions(g, w, idx, pos_bag, gp, n, dim, pad):
    for i in prange(n):
        f(g, 0, w, 0, idx, 0, pos_bag, gp, 0, i, dim, pad)  # noqa: F821


_forward = specialize(_bags, "embedding_bag", {"parallel": True}, f=inline(E.bag_forward))
_weight_grad = specialize(_cols, "embedding_bag_weight_grad", {"parallel": True},
                          f=inline(E.bag_weight_grad))
_psw_grad = specialize(_positions, "embedding_bag_psw_grad", {"parallel": True},
                       f=inline(E.bag_psw_grad))


def bag_forward(w, idx, psw, starts, ends, out, arg, cnt, pad, mode, has_psw):
    """Each bag's reduction into out (B, D), the max's rows into arg (B, D), the non-padding
    counts into cnt (B,); w (R, D) C-contiguous, idx/starts/ends int64."""
    bags, dim = out.shape
    _forward(w.ravel(), idx, psw, starts, ends, out.ravel(), arg.ravel(), cnt, bags, dim,
             int(pad), int(mode), bool(has_psw))


def bag_weight_grad(g, idx, psw, starts, ends, arg, cnt, gw, pad, mode, has_psw):
    """The weight's gradient into the zeroed gw (R, D) from the output's gradient g (B, D)."""
    bags, dim = g.shape
    _weight_grad(g.ravel(), idx, psw, starts, ends, arg.ravel(), cnt, gw.ravel(), bags, dim,
                 int(pad), int(mode), bool(has_psw))


def bag_psw_grad(g, w, idx, pos_bag, gp, pad):
    """The per-sample weights' gradient into gp (N,)."""
    _psw_grad(g.ravel(), w.ravel(), idx, pos_bag, gp, gp.shape[0], w.shape[1], int(pad))
