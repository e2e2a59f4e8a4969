"""Power-average pooling (lp_pool1d/2d/3d) and max unpooling (max_unpool1d/2d/3d) with
PyTorch's checks and messages. The former composes as PyTorch does: an average pool of x^p
scaled back to a sum and taken to the 1/p (``numgrad.ops.pooling.lp_pool_finish``; a max
pool of |x| at p = inf); unpooling is ``numgrad.ops.pooling.max_unpool`` (a scatter into
zero planes, recorded as PyTorch's ``MaxUnpool2DBackward0``/``MaxUnpool3DBackward0``)."""

import math

import numpy as np

from numgrad import _arrays
from numgrad.nn import _checks as C
from numgrad.nn import _functional_layers as FL
from numgrad.nn import _pool3d as P3
from numgrad.nn import functional as F
from numgrad.ops import elementwise as ew
from numgrad.ops import pooling as PO
from numgrad.ops import shape as sh
from numgrad.ops._util import dtype_of

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]


def _n(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _inf(norm_type):
    return isinstance(norm_type, (int, float)) and abs(norm_type) == math.inf


def _lp_inf(max_pool, input, norm_type, kernel_size, stride, ceil_mode):
    if norm_type > 0:
        return max_pool(ew.abs(input), kernel_size, stride, 0, 1, ceil_mode)
    return ew.neg(max_pool(ew.neg(ew.abs(input)), kernel_size, stride, 0, 1, ceil_mode))


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) along the last dim."""
    if _inf(norm_type):
        return _lp_inf(FL.max_pool1d, input, norm_type, kernel_size, stride, ceil_mode)
    out = FL.avg_pool1d(ew.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    if isinstance(kernel_size, (list, tuple)):  # PyTorch scales by kernel_size as given
        raise TypeError(f"mul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(kernel_size).__name__}")
    return PO.lp_pool_finish(out, kernel_size, norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) over the last two dims."""
    kw, kh = _n(kernel_size, 2)
    if _inf(norm_type):
        return _lp_inf(F.max_pool2d, input, norm_type, kernel_size, stride, ceil_mode)
    out = F.avg_pool2d(ew.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return PO.lp_pool_finish(out, kw * kh, norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) over the last three dims."""
    kd, kw, kh = _n(kernel_size, 3)
    if _inf(norm_type):
        return _lp_inf(P3.max_pool3d, input, norm_type, kernel_size, stride, ceil_mode)
    out = P3.avg_pool3d(ew.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    return PO.lp_pool_finish(out, kd * kw * kh, norm_type)


def _unpool_size(input, kernel_size, stride, padding, output_size):
    """PyTorch's default unpooled size ((in - 1) * stride + kernel - 2 * padding per dim), or
    ``output_size`` checked against it."""
    n = len(kernel_size)
    shape = input._data.shape
    default = [(shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(n)]
    if output_size is None:
        return default
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, "
                         f"but it has a length of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f'{lo} and {hi})')
    return output_size


def _unpool(input, indices, size, nd):
    """The values of ``input`` written into zeros of spatial size ``size`` at the flat
    ``indices`` (PyTorch's max_unpool{nd}d checks first)."""
    x = input._data
    if indices._data.dtype != np.int64:
        raise RuntimeError("elements in indices should be type int64" + (
            f" but got: {dtype_of(indices)._legacy}" if nd == 2 else ""))
    if nd == 2 and len(size) != 2:
        raise RuntimeError(f"There should be exactly two elements (height, width) in "
                           f"output_size, but got {len(size)} elements.")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {x.ndim} dimensions.")
    if x.shape != indices._data.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(x.shape)}) but got indices tensor with shape: "
                           f"{list(indices._data.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] <= 0:
            raise RuntimeError(f"max_unpooling{nd}d_forward_out_cpu(): Expected input to have "
                               f"non-zero size for non-batch dimensions, but got "
                               f"{list(x.shape)} with dimension {i} being empty.")
    if x.dtype.kind not in "f":
        raise C.not_implemented(f"max_unpool{nd}d", input)
    plane = math.prod(size)
    flat = _arrays.host(indices._data).reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= plane))
    if bad.size:
        # PyTorch's kernel keeps the last bad index it meets (in a plane: the last in order)
        raise RuntimeError(f"Found an invalid max index: {flat[bad[-1]]} (output volumes are of "
                           f"size {'x'.join(str(v) for v in size)})")
    return PO.max_unpool(input, indices, size, nd)


def _unpool_args(fn, input, kernel_size, stride, padding, output_size, nd):
    C.tensor_arg(fn, "input", 1, input)
    k = _n(kernel_size, nd)
    s = k if stride is None else _n(stride, nd)
    p = _n(padding, nd)
    size = _unpool_size(input, k, s, p, output_size)
    return list(C.int_list(list(size), fn, "output_size", 3)), s, p


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: zeros except the maxima at their indices."""
    size, _, _ = _unpool_args("max_unpool2d", input, kernel_size, stride, padding,
                              output_size, 1)
    return sh.squeeze(_unpool(sh.unsqueeze(input, -1), sh.unsqueeze(indices, -1), size + [1],
                              2), -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: zeros except the maxima at their indices."""
    size, _, _ = _unpool_args("max_unpool2d", input, kernel_size, stride, padding,
                              output_size, 2)
    return _unpool(input, indices, size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: zeros except the maxima at their indices."""
    size, s, _ = _unpool_args("max_unpool3d", input, kernel_size, stride, padding,
                              output_size, 3)
    if indices._data.dtype == np.int64 and min(s) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(s)}")
    return _unpool(input, indices, size, 3)
