"""3-D pooling (max, average, adaptive average, adaptive max) over (N, C, D, H, W) or
unbatched (C, D, H, W) input: PyTorch's argument checks and messages here, the pools the
named composites of ``numgrad.ops.pooling`` (each one node, as PyTorch's)."""

import numpy as np

from numgrad.nn import _checks as C
from numgrad.nn import functional as F
from numgrad.ops import pooling as PO
from numgrad.ops import reduction as red

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]


def _triples(fn, kernel_size, stride, padding, dilation, msgs):
    """kernel_size, stride, padding, dilation as int triples (the argument parser's
    TypeErrors, then PyTorch's length errors)."""
    k = C.int_list(kernel_size, fn, "kernel_size", 2)
    s = () if stride is None else C.int_list(stride, fn, "stride", 3)
    p = C.int_list(padding, fn, "padding", 4)
    d = C.int_list(dilation, fn, "dilation", 5)
    for v, ok, what in zip((k, s, p, d), ((1, 3), (0, 1, 3), (1, 3), (1, 3)), msgs):
        if len(v) not in ok:
            raise RuntimeError(f"{fn}: {what}")
    k, p, d = (v * 3 if len(v) == 1 else tuple(v) for v in (k, p, d))
    s = k if not s else (s * 3 if len(s) == 1 else tuple(s))
    return k, s, p, d


def _geometry(input, fn, k, s, p, d, ceil_mode, check_input_size):
    """Output sizes (oD, oH, oW), with PyTorch's pooling_output_shape and pool3d_shape_check
    errors in its order."""
    shape = input._data.shape
    if len(shape) not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    space = shape[-3:]
    out = tuple(F._pool_size(space[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3))
    for i, n in enumerate(shape):
        if n <= 0 and not (len(shape) == 5 and i == 0):
            raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {list(shape)} and non-batch "
                               f"dimension {n} has length zero!")
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: "
                           f"{k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} "
                           f"dW: {s[2]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} "
                           f"dilationH: {d[1]} dilationW: {d[2]}")
    if k[0] // 2 < p[0] or k[2] // 2 < p[2] or k[1] // 2 < p[1]:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} "
                           f"padH: {p[1]}")
    if check_input_size and (space[0] < k[0] or space[1] < k[1] or space[2] < k[2]):
        raise RuntimeError(f"input image (T: {space[0]} H: {space[1]} W: {space[2]}) smaller "
                           f"than kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if min(out) < 1:
        c = shape[-4]
        raise RuntimeError(f"Given input size: ({c}x{space[0]}x{space[1]}x{space[2]}). "
                           f"Calculated output size: ({c}x{out[0]}x{out[1]}x{out[2]}). Output "
                           "size is too small")
    return out



def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "max_pool3d"
    C.tensor_arg(fn, "input", 1, input)
    k, s, p, d = _triples(fn, kernel_size, stride, padding, dilation, (
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
    k, s, p, _ = _triples(fn, kernel_size, stride, padding, 1, (
        "kernel_size must be a single int, or a tuple of three ints",
        "stride must be omitted, a single int, or a tuple of three ints",
        "padding must be a single int, or a tuple of three ints", ""))
    ceil_mode = C.bool_arg(ceil_mode, fn, "ceil_mode", 5)
    count_include_pad = C.bool_arg(count_include_pad, fn, "count_include_pad", 6)
    if divisor_override is not None:
        divisor_override = C.int_arg(divisor_override, fn, "divisor_override", 7)
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    od, oh, ow = _geometry(input, "avg_pool3d()", k, s, p, (1, 1, 1), ceil_mode, True)
    if input._data.dtype.name not in ("float32", "float64", "int64"):
        raise C.not_implemented("avg_pool3d_out_frame", input)
    return PO.avg_pool3d(input, k, s, p, count_include_pad, divisor_override, (od, oh, ow))



def _adaptive_size(fn, input, output_size):
    if not isinstance(output_size, (list, tuple)) and (
            output_size is None or not C.is_int(output_size)):
        raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
    return tuple(F._adaptive_size(fn, input, output_size, 3))


def _nonempty(fn, shape):
    for i in range(1, len(shape)):
        if shape[i] <= 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(shape)} with dimension "
                               f"{i} being empty")


def adaptive_avg_pool3d(input, output_size):
    """Means over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "adaptive_avg_pool3d"
    C.tensor_arg(fn, "input", 1, input)
    size = _adaptive_size(fn, input, output_size)
    if len(size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if min(size) < 0:
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{{size[0]}, {size[1]},{size[2]}}}")
    shape = input._data.shape
    if size == (1, 1, 1):
        if not input.is_floating_point():
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either "
                               "a floating point or complex dtype. Got: "
                               f"{F.dtype_of(input)._legacy}")
        if len(shape) < 3:
            raise C.dim_error(-3, len(shape))
        return red.mean(input, (-3, -2, -1), keepdim=True)
    if len(shape) not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(shape)}")
    _nonempty(fn, shape)
    C.require_float(input, "adaptive_avg_pool3d_cpu")
    return PO.adaptive_avg_pool3d(input, size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "adaptive_max_pool3d"
    C.tensor_arg(fn, "input", 1, input)
    size = tuple(F._adaptive_size(fn, input, output_size, 3))
    shape = input._data.shape
    if len(shape) not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(shape)}")
    if len(size) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    _nonempty(fn, shape)
    if min(size) < 0:
        out_shape = list(shape[:-3]) + list(size)
        neg = next(v for v in out_shape if v < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {out_shape}")
    C.require_float(input, "adaptive_max_pool3d_cpu")
    return PO.adaptive_max_pool3d(input, size, return_indices)
