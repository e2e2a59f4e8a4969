"""The pools of ``numgrad.nn.functional`` below its argument parsing: PyTorch's
pooling_output_shape and pool{2,3}d_shape_check errors in its order, then the declared ops of
``numgrad.ops.pooling`` (each one node, as PyTorch's, on batched or unbatched input),
1-d max pooling as 2-d pooling on a unit height, and the adaptive pools (equal windows: one
max or average pool; unequal ones: per-window maxima, or two averaging matrix products)."""

import math
from collections.abc import Iterable

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import elementwise as ew
from numgrad.ops import linalg as la
from numgrad.ops import nn_checks as K
from numgrad.ops import pooling as PO
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import Tensor, _wrap, dtype_of


def batched(input, nd):
    """``input`` with a batch dim (``nd``: the batched rank) and whether one was added."""
    return (sh.unsqueeze(input, 0), True) if input._data.ndim == nd - 1 else (input, False)


def max_pool2d(input, k, s, p, d, out):
    """(maxima, flat indices per plane) of (N, C, H, W) or (C, H, W) input
    (``MaxPool2DWithIndicesBackward0``)."""
    return PO._max2d(input, k, s, p, d, out)


def avg_pool2d(input, k, s, p, count_include_pad, divisor_override, out):
    """Window means of (N, C, H, W) or (C, H, W) input (``AvgPool2DBackward0``)."""
    return PO._avg2d(input, k, s, p, count_include_pad, divisor_override, out)


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


# ---- the checks of the pools -------------------------------------------------------------


def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape, with its checks."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > K.ctrunc(d * (k - 1) + 1, 2):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                           f"kernel_size={k} and dilation={d}")
    o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def _positive(k, s, d, dims):
    """A pool's kernel size, stride and dilation are positive (``dims``: "HW" or "THW")."""
    for what, pre, v in (("kernel size", "k", k), ("stride", "d", s), ("dilation", "dilation", d)):
        if min(v) <= 0:
            got = " ".join(f"{pre}{n}: {x}" for n, x in zip(dims, v))
            raise RuntimeError(f"{what} should be greater than zero, but got {got}")


def _big_enough(shape, out):
    """A pool's output size per channel is positive."""
    if min(out) < 1:
        c, sizes = shape[-len(out) - 1], tuple(shape[-len(out):])
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + sizes))}). Calculated "
                           f"output size: ({'x'.join(map(str, (c,) + tuple(out)))}). Output "
                           "size is too small")


def _pad_words(k, p):
    """How PyTorch's 2-D and 3-D shape checks name the kernel sizes and paddings."""
    if len(k) == 2:
        return f"padW = {p[1]}, padH = {p[0]}, kW = {k[1]}, kH = {k[0]}"
    return f"kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}"


def _checked_out(shape, k, s, p, d, ceil_mode, shape_error, small=False):
    """The output sizes of a 2-D or 3-D pool with PyTorch's pooling_output_shape and
    pool{2,3}d_shape_check errors in its order: the output-size formula's, positive kernel,
    stride and dilation, the input's rank and empty dims (``shape_error(shape)``: the message,
    or None), the padding at most half the kernel, (``small``: the input at least the kernel),
    a positive output size."""
    n = len(k)
    space = shape[-n:]
    out = tuple(_pool_size(space[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n))
    _positive(k, s, d, "THW"[-n:])
    msg = shape_error(shape)
    if msg:
        raise RuntimeError(msg)
    if any(kk // 2 < pp for kk, pp in zip(k, p)):
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but got "
                           + _pad_words(k, p))
    if small and any(a < b for a, b in zip(space, k)):
        raise RuntimeError(f"input image (T: {space[0]} H: {space[1]} W: {space[2]}) smaller "
                           f"than kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    _big_enough(shape, out)
    return out


def _shape_2d(shape):
    if not ((len(shape) == 3 and 0 not in shape) or (len(shape) == 4 and 0 not in shape[1:])):
        return ("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                f"but got:{list(shape)}")
    return None


def _max_pool1d_checks(input, k, s, p, d, ceil_mode):
    shape = input._data.shape
    if not ((len(shape) == 2 and 0 not in shape) or (len(shape) == 3 and 0 not in shape[1:])):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{list(shape)}")
    for name, v, what in (("kernel_size", k, "an int, list of ints or tuple of ints of size 1"),
                          ("stride", s,
                           "None, an int, list of ints, or tuple of ints of size 1"),
                          ("padding", p, "an int, list of ints, or tuple of ints of size 1"),
                          ("dilation", d, "an int, list of ints or tuple of ints of size 1")):
        if len(v) != 1 and not (name == "stride" and not v):
            raise RuntimeError(f"max_pool1d() {name} must be {what} but got size {len(v)}")
    k, p, d = k[0], p[0], d[0]
    s = s[0] if s else k
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    o = _pool_size(shape[-1], k, s, p, d, ceil_mode)
    if o <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    return k, s, p, d


def _geometry(input, fn, k, s, p, d, ceil_mode, check_input_size):
    """Output sizes (oD, oH, oW), with PyTorch's pooling_output_shape and pool3d_shape_check
    errors in its order."""
    shape = input._data.shape
    if len(shape) not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")

    def empty_dim(shape):
        for i, n in enumerate(shape):
            if n <= 0 and not (len(shape) == 5 and i == 0):
                return (f"{fn}: Expected input's non-batch dimensions to have positive length, "
                        f"but input has a shape of {list(shape)} and non-batch dimension {n} has "
                        "length zero!")
        return None

    return _checked_out(shape, k, s, p, d, ceil_mode, empty_dim, check_input_size)


def _global_mean(input, n):
    """An adaptive average pool to size 1: PyTorch's mean over the last ``n`` dims."""
    if not dtype_of(input).is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {dtype_of(input)._legacy}")
    if input._data.ndim < n:
        raise K.dim_error(-n, input._data.ndim)
    return red.mean(input, tuple(range(-n, 0)), keepdim=True)



def max_pool(input, k, s, p, d, ceil_mode, return_indices):
    """max_pool{2,3}d of parsed arguments (``len(k)`` ints each): PyTorch's checks in its
    order, then the op (``MaxPool{2,3}DWithIndicesBackward0``)."""
    if len(k) == 2:
        if input._data.ndim not in (3, 4):
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        out = _checked_out(input._data.shape, k, s, p, d, ceil_mode, _shape_2d)
    else:
        out = _geometry(input, "max_pool3d_with_indices_out_cpu_template()", k, s, p, d,
                        ceil_mode, False)
    if input._data.dtype == np.bool_:
        raise K.not_implemented(f"max_pool{len(k)}d", input)
    if len(k) == 3:
        return PO.max_pool3d(input, k, s, p, d, out, return_indices)
    out, idx = max_pool2d(input, k, s, p, d, out)
    return (out, idx) if return_indices else out


def max_pool1d(input, k, s, p, d, ceil_mode):
    """(maxima, indices) of (N, C, L) or (C, L) input of parsed int lists: max_pool2d on a
    unit height after max_pool1d's own checks."""
    k, s, p, d = _max_pool1d_checks(input, k, s, p, d, ceil_mode)
    res = max_pool(sh.unsqueeze(input, -2), (1, k), (1, s), (0, p), (1, d), ceil_mode, True)
    return sh.squeeze(res[0], -2), sh.squeeze(res[1], -2)


def avg_pool(input, k, s, p, ceil_mode, count_include_pad, divisor_override):
    """avg_pool{2,3}d of parsed arguments: PyTorch's checks in its order, then the op
    (``AvgPool{2,3}DBackward0``)."""
    if len(k) == 2:
        if input._data.ndim < 3:
            raise K.dim_error(-3, input._data.ndim)
        out = _checked_out(input._data.shape, k, s, p, (1, 1), ceil_mode, _shape_2d)
        if input._data.dtype == np.bool_:
            raise K.not_implemented("avg_pool2d", input)
        return avg_pool2d(input, k, s, p, count_include_pad, divisor_override, out)
    out = _geometry(input, "avg_pool3d()", k, s, p, (1, 1, 1), ceil_mode, True)
    if input._data.dtype.name not in ("float32", "float64", "int64"):
        raise K.not_implemented("avg_pool3d_out_frame", input)
    return PO.avg_pool3d(input, k, s, p, count_include_pad, divisor_override, out)


def adaptive_avg_pool(input, size, n):
    """adaptive_avg_pool{n}d (n = 2 or 3) to a parsed output size: PyTorch's checks in its
    order, then a mean (size 1) or the op."""
    fn, size, shape = f"adaptive_avg_pool{n}d", tuple(size), input._data.shape
    if len(size) != n:
        raise RuntimeError(f"{fn}: output_size must be {n}")
    if min(size) < 0:
        got = ", ".join(map(str, size)) if n == 2 else f"{size[0]}, {size[1]},{size[2]}"
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{got}}}")
    if size == (1,) * n:
        return _global_mean(input, n)
    if len(shape) not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}(): Expected {n + 1}D or {n + 2}D tensor, but got {list(shape)}")
    if n == 3:
        K.nonempty(fn, shape)
        K.require_float(input, "adaptive_avg_pool3d_cpu")
        return PO.adaptive_avg_pool3d(input, size)
    for i in (-2, -1):
        if shape[i] <= 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(shape)} with dimension "
                               f"{i + len(shape)} being empty")
    K.require_float(input, fn)
    return PO.adaptive_avg_pool2d(input, size)


def adaptive_max_pool(input, size, n, return_indices, shown_fn=None, shown=None):
    """adaptive_max_pool{n}d (n = 2 or 3) to a parsed output size: PyTorch's checks in its
    order (``shown_fn``/``shown``: the name and shape its empty-dim message shows), then the
    op; an output size of 0 gives an empty result."""
    fn, size, shape = f"adaptive_max_pool{n}d", tuple(size), input._data.shape
    if len(shape) not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(shape)}")
    if len(size) != n:
        raise RuntimeError(f"{fn}(): internal error: output_size.size() must be {n}")
    K.nonempty(shown_fn or fn, shape if shown is None else shown)
    if min(size) < 0:
        out_shape = list(shape[:-n]) + list(size)
        neg = next(v for v in out_shape if v < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {out_shape}")
    K.require_float(input, fn if n == 2 else fn + "_cpu")
    if n == 3:
        return PO.adaptive_max_pool3d(input, size, return_indices)
    out, idx = PO.adaptive_max_pool2d(input, size)
    return (out, idx) if return_indices else out


def max_unpool(input, indices, size, nd, stride):
    """The values of ``input`` written into zeros of spatial size ``size`` at the flat
    ``indices`` (PyTorch's max_unpool{nd}d checks first; 1-d: 2-d of unit width)."""
    if nd == 1:
        res = max_unpool(sh.unsqueeze(input, -1), sh.unsqueeze(indices, -1), size + [1], 2, ())
        return sh.squeeze(res, -1)
    if nd == 3 and indices._data.dtype == np.int64 and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
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
    K.nonempty(f"max_unpooling{nd}d_forward_out_cpu", x.shape, "got", ".")
    if x.dtype.kind not in "f":
        raise K.not_implemented(f"max_unpool{nd}d", input)
    plane = math.prod(size)
    flat = A.host(indices._data).reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= plane))
    if bad.size:
        # PyTorch's kernel keeps the last bad index it meets (in a plane: the last in order)
        raise RuntimeError(f"Found an invalid max index: {flat[bad[-1]]} (output volumes are of "
                           f"size {'x'.join(str(v) for v in size)})")
    return PO.max_unpool(input, indices, size, nd)


# ---- PyTorch's Python-level pieces: lp pooling, unpooled sizes -------------------------


def unpool_size(input, kernel_size, stride, padding, output_size):
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


def dim_range(fn, t, lo, hi):
    nd = t._data.ndim
    if not lo <= nd <= hi:
        raise RuntimeError(f"Expected {lo} to {hi} dimensions, but got {nd}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {fn})")


def as_n(v, n):
    """``v`` as ``n`` values (PyTorch's ``_ntuple``): an iterable's items, anything else ``n``
    times."""
    return tuple(v) if isinstance(v, Iterable) else (v,) * n


def lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode, nnf):
    """(sum over each window of x^p)^(1/p) over the last ``n`` dims; at p = +-inf the max
    (min) of |x| (PyTorch's composite of ``nnf``'s pools: ``numgrad.nn.functional``'s)."""
    max_pool, avg_pool = getattr(nnf, f"max_pool{n}d"), getattr(nnf, f"avg_pool{n}d")
    if n == 2:  # PyTorch unpacks the kernel size first
        kw, kh = as_n(kernel_size, 2)
    elif n == 3:
        kd, kw, kh = as_n(kernel_size, 3)
    if not isinstance(input, Tensor):  # PyTorch's input.pow(norm_type)
        raise AttributeError(f"'{type(input).__name__}' object has no attribute 'pow'")
    if not isinstance(norm_type, (int, float, Tensor)):
        got = type(norm_type).__name__
        why = f"\n      didn't match because some of the arguments have invalid types: (!{got}!)"
        raise TypeError(f"pow() received an invalid combination of arguments - got ({got}), but "
                        f"expected one of:\n * (Tensor exponent){why}\n * (Number exponent){why}\n")
    if isinstance(norm_type, (int, float)) and abs(norm_type) == math.inf:
        if norm_type > 0:
            return max_pool(ew.abs(input), kernel_size, stride, 0, 1, ceil_mode)
        return ew.neg(max_pool(ew.neg(ew.abs(input)), kernel_size, stride, 0, 1, ceil_mode))
    if stride is not None:
        out = avg_pool(ew.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    else:  # (by keyword, as PyTorch: its parser's messages then name no position)
        out = avg_pool(ew.pow(input, norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    if n == 1 and isinstance(kernel_size, (list, tuple)):  # PyTorch scales by it as given
        raise TypeError(f"mul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(kernel_size).__name__}")
    size = kernel_size if n == 1 else math.prod(as_n(kernel_size, n))
    return PO.lp_pool_finish(out, size, norm_type)
