"""The 2-D pools of ``numgrad.nn.functional`` below its argument checks: unbatched (C, H, W)
input run as a batch of one, and the adaptive pools composed of the declared ops of
``numgrad.ops.pooling`` (equal windows: one max or average pool; unequal ones: per-window
maxima, or two averaging matrix products). Every argument arrives checked, with the output
size computed."""

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import linalg as la
from numgrad.ops import pooling as PO
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap


def batched(input, nd):
    """``input`` with a batch dim (``nd``: the batched rank) and whether one was added."""
    return (sh.unsqueeze(input, 0), True) if input._data.ndim == nd - 1 else (input, False)


def max_pool2d(input, k, s, p, d, out):
    """(maxima, flat indices per plane) of (N, C, H, W) or (C, H, W) input
    (``MaxPool2DWithIndicesBackward0``)."""
    x, unbatched = batched(input, 4)
    y, idx = PO._max2d(x, k, s, p, d, out)
    return (sh.squeeze(y, 0), _wrap(idx._data[0])) if unbatched else (y, idx)


def avg_pool2d(input, k, s, p, count_include_pad, divisor_override, out):
    """Window means of (N, C, H, W) or (C, H, W) input (``AvgPool2DBackward0``)."""
    x, unbatched = batched(input, 4)
    y = PO._avg2d(x, k, s, p, count_include_pad, divisor_override, out)
    return sh.squeeze(y, 0) if unbatched else y


def _windows(size, out):
    """PyTorch's adaptive windows [floor(i size / out), ceil((i + 1) size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _averaging(size, out, like):
    """(out, size) matrix whose row i is the mean over adaptive window i."""
    m = np.zeros((out, size), like._data.dtype)
    for i, (a, b) in enumerate(_windows(size, out)):
        m[i, a:b] = 1.0 / (b - a)
    return _wrap(A.to_device(m, like.device))


def adaptive_avg_pool2d(input, size):
    """Means over the adaptive windows of nonempty-plane (N, C, H, W) or (C, H, W) input:
    an empty slice when nothing is pooled, the average pool for equal windows, else
    mh @ x @ mw^T (differentiable as it is)."""
    shape, (oh, ow) = input._data.shape, size
    h, w = shape[-2:]
    if 0 in shape or not oh or not ow:
        return sh.reshape(input[..., :0, :0], shape[:-2] + (oh, ow))
    if not (h % oh or w % ow):
        k = (h // oh, w // ow)
        return avg_pool2d(input, k, k, (0, 0), True, None, (oh, ow))
    return la.matmul(la.matmul(_averaging(h, oh, input), input), sh.t(_averaging(w, ow, input)))


def _adaptive_max(x, oh, ow):
    """Per-window maxima (values and flat h*w indices) of (N, C, H, W) x."""
    h, w = x._data.shape[-2:]
    if h % oh == 0 and w % ow == 0:  # equal windows: the max-pool kernel
        k = (h // oh, w // ow)
        return max_pool2d(x, k, k, (0, 0), (1, 1), (oh, ow))
    vals, idxs = [], []
    for a, b in _windows(h, oh):
        for c, d in _windows(w, ow):
            v, li = sh.flatten(x[:, :, a:b, c:d], 2).max(dim=-1)
            vals.append(v)
            idxs.append((li // (d - c) + a) * w + (li % (d - c) + c))
    shape = x._data.shape[:2] + (oh, ow)
    return sh.reshape(sh.stack(vals, -1), shape), sh.reshape(sh.stack(idxs, -1), shape)


def adaptive_max_pool2d(input, size):
    """(maxima, flat indices) over the adaptive windows of nonempty-plane (N, C, H, W) or
    (C, H, W) input; an output size of 0 gives an empty result."""
    x, unbatched = batched(input, 4)
    out_shape = x._data.shape[:2] + tuple(size)
    if 0 in out_shape:  # nothing to pool: an empty slice of x
        out = sh.reshape(x[:, :, :0, :0], out_shape)
        idx = _wrap(A.zeros(x._data, out_shape, np.int64))
    else:
        out, idx = _adaptive_max(x, *size)
    return (sh.squeeze(out, 0), sh.squeeze(idx, 0)) if unbatched else (out, idx)
