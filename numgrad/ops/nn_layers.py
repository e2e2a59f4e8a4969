"""Layers of ``numgrad.nn.functional`` that PyTorch writes as composites of ops, below their
argument checks (the nodes of the pieces appear, as in PyTorch): RMS norm, prelu's weight
view, the bilinear form, pixel (un)shuffle and channel shuffle (a reshape/permute), channel
dropout and alpha dropout (masks drawn by the host generator in PyTorch's order, so one seed
gives PyTorch's masks on every device), and the embedding bags of weights the
``_embedding_bag`` op does not take (per-bag reductions of looked-up rows)."""

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import activation as act
from numgrad.ops import elementwise as ew
from numgrad.ops import linalg as la
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap


def zeros(shape, like):
    return _wrap(A.zeros(like._data, shape, like._data.dtype))


def _mask(shape, keep, like):
    from numgrad.random import default_generator
    mask = default_generator.bernoulli(shape, keep, like._data.dtype)
    return _wrap(A.to_device(mask, like.device))


def rms_norm(input, dims, weight, eps):
    """x / sqrt(mean(x^2 over ``dims``) + eps) * weight."""
    # PyTorch's composite: its add(Tensor, Scalar) records AddBackward1
    rstd = ew.add.scalar(input.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    out = input * rstd
    return out * weight if weight is not None else out


def prelu(input, weight):
    """x where x > 0, else w x: one weight per channel (dim 1) or one for all, viewed to
    broadcast over ``input`` (``PreluKernelBackward0``)."""
    if input.dim() >= 2:
        weight = sh.reshape(weight, (weight.numel(),) + (1,) * (input.dim() - 2))
    elif weight.dim() != input.dim():
        weight = sh.reshape(weight, (1,) * input.dim())
    return act.prelu(input, weight)


def bilinear(input1, input2, weight, bias):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o] (two matrix products)."""
    o, i, j = weight._data.shape
    x1 = sh.reshape(input1, (-1, i))
    x2 = sh.reshape(input2, (-1, 1, j))
    wm = sh.reshape(sh.permute(weight, (1, 0, 2)), (i, o * j))
    y = (sh.reshape(la.matmul(x1, wm), (-1, o, j)) * x2).sum(-1)
    y = sh.reshape(y, (*input1._data.shape[:-1], o))
    return y + bias if bias is not None else y


def pixel_shuffle(input, r):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    *b, c, h, w = input._data.shape
    n = len(b)
    x = sh.reshape(input, (*b, c // (r * r), r, r, h, w))
    x = sh.permute(x, (*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return sh.reshape(x, (*b, c // (r * r), h * r, w * r))


def pixel_unshuffle(input, r):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    *b, c, h, w = input._data.shape
    n = len(b)
    x = sh.reshape(input, (*b, c, h // r, r, w // r, r))
    x = sh.permute(x, (*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return sh.reshape(x, (*b, c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """(N, g*k, *) -> channels regrouped as (k, g)."""
    n, c, *rest = input._data.shape
    x = sh.reshape(input, (n, groups, c // groups, *rest))
    return sh.reshape(sh.transpose(x, 1, 2), (n, c, *rest))


def feature_dropout(input, p, training, inplace):
    """Zero whole channels of (N, C, *) input with probability p, scaling by 1/(1-p)."""
    if not training or p == 0 or input.numel() == 0:
        return input
    shape = tuple(input._data.shape[:2]) + (1,) * (input.dim() - 2)
    mask = zeros(shape, input) if p == 1 else _mask(shape, 1.0 - p, input) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def alpha_dropout(input, p, training, inplace):
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements go to SELU's
    negative saturation -alpha', then an affine map a x + b restores the statistics."""
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        zero = zeros((), input)
        return input.mul_(zero) if inplace else input * zero
    keep = _mask(tuple(input._data.shape), 1.0 - p, input)
    sat = 1.7580993408473766  # SELU's scale * alpha: the value of a saturated unit (negated)
    a = 1.0 / np.sqrt((sat * sat * p + 1) * (1 - p))
    b = (keep - 1) * (sat * a) + sat * a * p
    scaled = input.mul_(keep * a) if inplace else input * (keep * a)
    return scaled.add_(b) if inplace else scaled + b


def bag_reduce(emb, per_sample_weights, bags, mode, fixed, like):
    """Each bag's max, sum or mean of the rows ``emb`` (scaled by ``per_sample_weights``)
    looked up in ``like`` (an empty bag gives zeros); ``fixed``: bags of one length."""
    if per_sample_weights is not None:
        emb = emb * sh.reshape(per_sample_weights, (-1, 1))
    dim = like._data.shape[1]
    if fixed and bags and bags[0][1] > 0:
        e3 = sh.reshape(emb, (len(bags), -1, dim))
        return e3.max(dim=1)[0] if mode == "max" else (e3.mean(1) if mode == "mean" else
                                                       e3.sum(1))
    out = []
    for a, b in bags:
        if b <= a:
            out.append(zeros((dim,), like))
            continue
        part = emb[a:b]
        out.append(part.max(dim=0)[0] if mode == "max" else
                   part.sum(0) if mode == "sum" else part.mean(0))
    return sh.stack(out, 0) if out else zeros((0, dim), like)
