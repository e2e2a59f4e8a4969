"""Pixel shuffling as declared ops: ``pixel_shuffle`` (``PixelShuffleBackward0``), (*, C r^2,
H, W) -> (*, C, H r, W r), and ``pixel_unshuffle`` (``PixelUnshuffleBackward0``), its
inverse. Each is a permuted copy and each one's derivative is the other, so every order of
derivative is these two ops. ``numgrad.ops.nn_layers`` checks the arguments."""

from numgrad import _arrays as A
from numgrad.ops._util import EW
from numgrad.ops.registry import op

_F = ("functional",)


def _permuted_copy(x, split_shape, order, out_shape):
    """``x`` viewed as ``split_shape``, its axes permuted by ``order``, copied into a new
    contiguous array of ``out_shape``."""
    v = A.contiguous(x).reshape(split_shape).transpose(order)
    out = A.empty(x, out_shape, x.dtype)
    EW.unary(EW.copy, v, x.dtype, out=out.reshape(v.shape))
    return out


# d/dx shuffle(x, r) = unshuffle(g, r): the two are inverse permutations
def _shuffle_grad(grad, r):
    return pixel_unshuffle(grad, r)


@op(node="PixelShuffleBackward0", variants=_F, grads={"self": _shuffle_grad})
def pixel_shuffle(input, r):
    """(*, C r^2, H, W) -> (*, C, H r, W r): out[..., c, h r + i, w r + j] =
    x[..., c r^2 + i r + j, h, w]."""
    x = input._data
    *b, c, h, w = x.shape
    n = len(b)
    out = _permuted_copy(x, (*b, c // (r * r), r, r, h, w),
                         (*range(n), n, n + 3, n + 1, n + 4, n + 2),
                         (*b, c // (r * r), h * r, w * r))
    return out, {"r": r}


# d/dx unshuffle(x, r) = shuffle(g, r)
def _unshuffle_grad(grad, r):
    return pixel_shuffle(grad, r)


@op(node="PixelUnshuffleBackward0", variants=_F, grads={"self": _unshuffle_grad})
def pixel_unshuffle(input, r):
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of ``pixel_shuffle``."""
    x = input._data
    *b, c, h, w = x.shape
    n = len(b)
    out = _permuted_copy(x, (*b, c, h // r, r, w // r, r),
                         (*range(n), n, n + 2, n + 4, n + 1, n + 3),
                         (*b, c * r * r, h // r, w // r))
    return out, {"r": r}


# the nodes save only the factor: they may run again without retain_graph (PyTorch's)
pixel_shuffle.opdef.node._meta_only = True
pixel_unshuffle.opdef.node._meta_only = True
