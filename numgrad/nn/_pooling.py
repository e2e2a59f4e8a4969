"""``numgrad.nn.functional``'s pooling: max, average, adaptive, power-average (lp) pooling
in 1, 2 and 3 dims and max unpooling, with PyTorch's argument parsing, shape checks and
messages in its order. The math is ``numgrad.ops.nn_pool`` and the ops of
``numgrad.ops.pooling`` (each one node, as PyTorch's); 1-d pooling is 2-d pooling on a unit
height (as PyTorch does, so the node is ``SqueezeBackward1``), lp pooling an average pool of
x^p scaled back to a sum and taken to the 1/p (a max pool of |x| at p = inf)."""

import math

import numpy as np

from numgrad import _arrays as A
from numgrad.nn import _checks as C
from numgrad.ops import elementwise as ew
from numgrad.ops import nn_pool as NP
from numgrad.ops import pooling as PO
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import dtype_of

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool1d",
           "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


_WHAT2 = tuple(f"{w}, or a tuple of two ints" for w in (
    "kernel_size must either be a single int", "stride must either be omitted, a single int",
    "padding must either be a single int", "dilation must be either a single int"))


def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape, with its checks."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > C.ctrunc(d * (k - 1) + 1, 2):
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


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, H, W) or unbatched (C, H, W) input
    (``MaxPool2DWithIndicesBackward0``)."""
    C.tensor_arg("max_pool2d", "input", 1, input)
    k, s, p, d = C.pool_args("max_pool2d", 2, kernel_size, stride, padding, dilation, _WHAT2)
    ceil_mode = C.bool_arg(ceil_mode, "max_pool2d", "ceil_mode", 6)
    if input._data.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    out = _checked_out(input._data.shape, k, s, p, d, ceil_mode, _shape_2d)
    if input._data.dtype == np.bool_:
        raise C.not_implemented("max_pool2d", input)
    out, idx = NP.max_pool2d(input, k, s, p, d, out)
    return (out, idx) if return_indices else out


def _avg_flags(fn, ceil_mode, count_include_pad, divisor_override):
    """An average pool's ceil_mode, count_include_pad and divisor_override arguments."""
    ceil_mode = C.bool_arg(ceil_mode, fn, "ceil_mode", 5)
    count_include_pad = C.bool_arg(count_include_pad, fn, "count_include_pad", 6)
    if divisor_override is not None:
        divisor_override = C.int_arg(divisor_override, fn, "divisor_override", 7)
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    return ceil_mode, count_include_pad, divisor_override


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, H, W) or unbatched (C, H, W) input (``AvgPool2DBackward0``)."""
    C.tensor_arg("avg_pool2d", "input", 1, input)
    k, s, p, _ = C.pool_args("avg_pool2d", 2, kernel_size, stride, padding, 1, _WHAT2)
    ceil_mode, count_include_pad, divisor_override = _avg_flags(
        "avg_pool2d", ceil_mode, count_include_pad, divisor_override)
    if input._data.ndim < 3:
        raise C.dim_error(-3, input._data.ndim)
    out = _checked_out(input._data.shape, k, s, p, (1, 1), ceil_mode, _shape_2d)
    if input._data.dtype == np.bool_:
        raise C.not_implemented("avg_pool2d", input)
    return NP.avg_pool2d(input, k, s, p, count_include_pad, divisor_override, out)


def _one_int(fn, name, v, pos, allow_empty=False):
    """A pool argument that must hold one int (an int or a one-element list)."""
    vals = C.int_list(v, fn, name, pos)
    if len(vals) != 1 and not (allow_empty and not vals):
        raise RuntimeError(f"{fn}() argument '{name}' should contain one int (got {len(vals)})")
    return vals


def _dim_range(fn, t, lo, hi):
    nd = t._data.ndim
    if not lo <= nd <= hi:
        raise RuntimeError(f"Expected {lo} to {hi} dimensions, but got {nd}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {fn})")


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


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, L) or (C, L): max_pool2d on a unit height."""
    C.tensor_arg("max_pool1d", "input", 1, input)
    k = C.int_list(kernel_size, "max_pool1d", "kernel_size", 2)
    s = () if stride is None else C.int_list(stride, "max_pool1d", "stride", 3)
    p = C.int_list(padding, "max_pool1d", "padding", 4)
    d = C.int_list(dilation, "max_pool1d", "dilation", 5)
    ceil_mode = C.bool_arg(ceil_mode, "max_pool1d", "ceil_mode", 6)
    k, s, p, d = _max_pool1d_checks(input, k, s, p, d, ceil_mode)
    res = max_pool2d(sh.unsqueeze(input, -2), (1, k), (1, s), (0, p), (1, d), ceil_mode,
                       True)
    out, idx = sh.squeeze(res[0], -2), sh.squeeze(res[1], -2)
    return (out, idx) if return_indices else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Window means over (N, C, L) or (C, L): avg_pool2d on a unit height."""
    C.tensor_arg("avg_pool1d", "input", 1, input)
    _dim_range("avg_pool1d", input, 2, 3)
    k = _one_int("avg_pool1d", "kernel_size", kernel_size, 2)[0]
    s = _one_int("avg_pool1d", "stride", () if stride is None else stride, 3, True)
    p = _one_int("avg_pool1d", "padding", padding, 4)[0]
    s = s[0] if s else k
    out = avg_pool2d(sh.unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode,
                       count_include_pad)
    return sh.squeeze(out, -2)


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


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "max_pool3d"
    C.tensor_arg(fn, "input", 1, input)
    k, s, p, d = C.pool_args(fn, 3, kernel_size, stride, padding, dilation, (
        "kernel_size must either be a single int, or a tuple of three ints",
        "stride must either be omitted, a single int, or a tuple of three ints",
        "padding must either be a single int, or a tuple of three ints",
        "dilation must be either a single int, or a tuple of three ints"))
    ceil_mode = C.bool_arg(ceil_mode, fn, "ceil_mode", 6)
    od, oh, ow = _geometry(input, "max_pool3d_with_indices_out_cpu_template()", k, s, p, d,
                           ceil_mode, False)
    if input._data.dtype == np.bool_:
        raise C.not_implemented("max_pool3d", input)
    return PO.max_pool3d(input, k, s, p, d, (od, oh, ow), return_indices)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "avg_pool3d"
    C.tensor_arg(fn, "input", 1, input)
    k, s, p, _ = C.pool_args(fn, 3, kernel_size, stride, padding, 1, (
        "kernel_size must be a single int, or a tuple of three ints",
        "stride must be omitted, a single int, or a tuple of three ints",
        "padding must be a single int, or a tuple of three ints", ""))
    ceil_mode, count_include_pad, divisor_override = _avg_flags(
        fn, ceil_mode, count_include_pad, divisor_override)
    od, oh, ow = _geometry(input, "avg_pool3d()", k, s, p, (1, 1, 1), ceil_mode, True)
    if input._data.dtype.name not in ("float32", "float64", "int64"):
        raise C.not_implemented("avg_pool3d_out_frame", input)
    return PO.avg_pool3d(input, k, s, p, count_include_pad, divisor_override, (od, oh, ow))


def _adaptive_size(fn, input, output_size, n, sized=False):
    """An adaptive pool's output size as ``n`` ints: ``None`` entries keep the input's size,
    one int stands for all ``n`` (``sized``: PyTorch's len() of anything else first)."""
    if sized and not isinstance(output_size, (list, tuple)) and (
            output_size is None or not C.is_int(output_size)):
        raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
    shape = input._data.shape
    if isinstance(output_size, (list, tuple)):
        if len(shape) <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        output_size = [v if v is not None else dflt
                       for v, dflt in zip(output_size, shape[-len(output_size):])]
    size = C.int_list(output_size, fn, "output_size", 2)
    return size * n if len(size) == 1 and not isinstance(output_size, (list, tuple)) else size


def _global_mean(input, n):
    """An adaptive average pool to size 1: PyTorch's mean over the last ``n`` dims."""
    if not dtype_of(input).is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {dtype_of(input)._legacy}")
    if input._data.ndim < n:
        raise C.dim_error(-n, input._data.ndim)
    return red.mean(input, tuple(range(-n, 0)), keepdim=True)


def adaptive_avg_pool2d(input, output_size):
    """Means over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) input."""
    C.tensor_arg("adaptive_avg_pool2d", "input", 1, input)
    shape = input._data.shape
    size = _adaptive_size("adaptive_avg_pool2d", input, output_size, 2, True)
    if len(size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    oh, ow = size
    if oh < 0 or ow < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or "
                           f"equal to 0 but received {{{oh}, {ow}}}")
    if (oh, ow) == (1, 1):
        return _global_mean(input, 2)
    if len(shape) not in (3, 4):
        raise RuntimeError(
            f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(shape)}")
    for i in (-2, -1):
        if shape[i] <= 0:
            raise RuntimeError("adaptive_avg_pool2d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(shape)} with "
                               f"dimension {i + len(shape)} being empty")
    C.require_float(input, "adaptive_avg_pool2d")
    return NP.adaptive_avg_pool2d(input, (oh, ow))


def adaptive_avg_pool1d(input, output_size):
    """Means over PyTorch's adaptive windows along the last dim."""
    C.tensor_arg("adaptive_avg_pool1d", "input", 1, input)
    _dim_range("adaptive_avg_pool1d", input, 2, 3)
    o = _one_int("adaptive_avg_pool1d", "output_size", output_size, 2)[0]
    return sh.squeeze(adaptive_avg_pool2d(sh.unsqueeze(input, -2), (1, o)), -2)


def adaptive_avg_pool3d(input, output_size):
    """Means over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "adaptive_avg_pool3d"
    C.tensor_arg(fn, "input", 1, input)
    size = tuple(_adaptive_size(fn, input, output_size, 3, True))
    if len(size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if min(size) < 0:
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{{size[0]}, {size[1]},{size[2]}}}")
    shape = input._data.shape
    if size == (1, 1, 1):
        return _global_mean(input, 3)
    if len(shape) not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(shape)}")
    C.nonempty(fn, shape)
    C.require_float(input, "adaptive_avg_pool3d_cpu")
    return PO.adaptive_avg_pool3d(input, size)


def _adaptive_max_checks(fn, input, output_size, n, shown_fn=None, shown=None):
    """adaptive_max_pool{n}d's checks (``shown_fn``/``shown``: the name and shape its
    empty-dim message shows); the output size."""
    C.tensor_arg(fn, "input", 1, input)
    size = tuple(_adaptive_size(fn, input, output_size, n))
    shape = input._data.shape
    if len(shape) not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(shape)}")
    if len(size) != n:
        raise RuntimeError(f"{fn}(): internal error: output_size.size() must be {n}")
    C.nonempty(shown_fn or fn, shape if shown is None else shown)
    if min(size) < 0:
        out_shape = list(shape[:-n]) + list(size)
        neg = next(v for v in out_shape if v < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {out_shape}")
    C.require_float(input, fn if n == 2 else fn + "_cpu")
    return size


def adaptive_max_pool2d(input, output_size, return_indices=False, _fn="adaptive_max_pool2d",
                        _shown=None):
    """Maxima over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) input; an output
    size of 0 gives an empty result (``_fn``/``_shown``: the 1-D caller's name and shape)."""
    size = _adaptive_max_checks("adaptive_max_pool2d", input, output_size, 2, _fn, _shown)
    out, idx = NP.adaptive_max_pool2d(input, size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows along the last dim."""
    C.tensor_arg("adaptive_max_pool1d", "input", 1, input)
    _dim_range("adaptive_max_pool1d", input, 2, 3)
    o = _one_int("adaptive_max_pool1d", "output_size", output_size, 2)[0]
    out, idx = adaptive_max_pool2d(sh.unsqueeze(input, -2), (1, o), True,
                                   "adaptive_max_pool1d", input._data.shape)
    out, idx = sh.squeeze(out, -2), sh.squeeze(idx, -2)
    return (out, idx) if return_indices else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    size = _adaptive_max_checks("adaptive_max_pool3d", input, output_size, 3)
    return PO.adaptive_max_pool3d(input, size, return_indices)


def _n(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over each window of x^p)^(1/p) over the last ``n`` dims; at p = +-inf the max
    (min) of |x|."""
    max_pool, avg_pool = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d),
                          3: (max_pool3d, avg_pool3d)}[n]
    if n == 2:  # PyTorch unpacks the kernel size first
        kw, kh = _n(kernel_size, 2)
    elif n == 3:
        kd, kw, kh = _n(kernel_size, 3)
    if isinstance(norm_type, (int, float)) and abs(norm_type) == math.inf:
        if norm_type > 0:
            return max_pool(ew.abs(input), kernel_size, stride, 0, 1, ceil_mode)
        return ew.neg(max_pool(ew.neg(ew.abs(input)), kernel_size, stride, 0, 1, ceil_mode))
    out = avg_pool(ew.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    if n == 1 and isinstance(kernel_size, (list, tuple)):  # PyTorch scales by it as given
        raise TypeError(f"mul(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(kernel_size).__name__}")
    size = kernel_size if n == 1 else math.prod(_n(kernel_size, n))
    return PO.lp_pool_finish(out, size, norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) along the last dim."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) over the last two dims."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) over the last three dims."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


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
    C.nonempty(f"max_unpooling{nd}d_forward_out_cpu", x.shape, "got", ".")
    if x.dtype.kind not in "f":
        raise C.not_implemented(f"max_unpool{nd}d", input)
    plane = math.prod(size)
    flat = A.host(indices._data).reshape(-1)
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
