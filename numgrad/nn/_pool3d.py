"""3-D pooling (max, average, adaptive average, adaptive max) over (N, C, D, H, W) or
unbatched (C, D, H, W) input, with PyTorch's argument checks and messages.

Every one of these pools is separable: a box's maximum is the maximum over its depth window
of the (H, W) windows' maxima, a box's mean (with PyTorch's divisor, a product of one count
per axis) the mean over depth of the (H, W) means. So each runs as the 2-D op on the
(N, C*D, H, W) view and then the 2-D op with a (kD, 1) window on the (N, C, D, oH*oW) view:
PyTorch's values (up to rounding for the means), gradients through the 2-D ops' rules,
recorded as PyTorch's one node (``MaxPool3DWithIndicesBackward0``, ``AvgPool3DBackward0``,
...). Ties go to the first element in (d, h, w) order, as
in PyTorch's kernels; the indices are flat positions in D*H*W."""

import numpy as np

from numgrad import _arrays
from numgrad.nn import _functional_layers as FL
from numgrad.nn import functional as F
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import _wrap
from numgrad.ops.named_composite import record

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]


def _triples(fn, kernel_size, stride, padding, dilation, msgs):
    """kernel_size, stride, padding, dilation as int triples (the argument parser's
    TypeErrors, then PyTorch's length errors)."""
    k = F._int_list(kernel_size, fn, "kernel_size", 2)
    s = () if stride is None else F._int_list(stride, fn, "stride", 3)
    p = F._int_list(padding, fn, "padding", 4)
    d = F._int_list(dilation, fn, "dilation", 5)
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


def _batched(input):
    return (sh.unsqueeze(input, 0), True) if input._data.ndim == 4 else (input, False)


def _indices_3d(i1, i2, shape5, ohw):
    """Flat D*H*W positions from the (H, W) stage's indices ``i1`` ((N, C*D, oH, oW), flat in
    H*W) and the depth stage's ``i2`` ((N, C, oD, oH*oW), flat in D*oH*oW)."""
    n, c, depth, h, w = shape5
    t = ew.floor_divide(i2, ohw)  # the depth of each maximum
    hw = ix.gather(sh.reshape(i1, (n, c, depth, ohw)), 2, t)
    return ew.add(ew.mul(t, h * w), hw)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "max_pool3d"
    F._tensor_arg(fn, "input", 1, input)
    k, s, p, d = _triples(fn, kernel_size, stride, padding, dilation, (
        "kernel_size must either be a single int, or a tuple of three ints",
        "stride must either be omitted, a single int, or a tuple of three ints",
        "padding must either be a single int, or a tuple of three ints",
        "dilation must be either a single int, or a tuple of three ints"))
    ceil_mode = F._bool_arg(ceil_mode, fn, "ceil_mode", 6)
    od, oh, ow = _geometry(input, "max_pool3d_with_indices_out_cpu_template()", k, s, p, d,
                           ceil_mode, False)
    if input._data.dtype == np.bool_:
        raise F._not_implemented("max_pool3d", input)

    def forward(input):
        x, unbatched = _batched(input)
        n, c, depth, h, w = x._data.shape
        y1, i1 = F.max_pool2d(sh.reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], d[1:],
                              ceil_mode, True)
        y2, i2 = F.max_pool2d(sh.reshape(y1, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1),
                              (p[0], 0), (d[0], 1), ceil_mode, True)
        out = sh.reshape(y2, (n, c, od, oh, ow))
        if unbatched:
            out = sh.squeeze(out, 0)
        if not return_indices:
            return out
        idx = sh.reshape(_indices_3d(i1, i2, (n, c, depth, h, w), oh * ow), (n, c, od, oh, ow))
        return out, sh.squeeze(idx, 0) if unbatched else idx

    return record("MaxPool3DWithIndicesBackward0", forward, (input,), (input,), ("self",))


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "avg_pool3d"
    F._tensor_arg(fn, "input", 1, input)
    k, s, p, _ = _triples(fn, kernel_size, stride, padding, 1, (
        "kernel_size must be a single int, or a tuple of three ints",
        "stride must be omitted, a single int, or a tuple of three ints",
        "padding must be a single int, or a tuple of three ints", ""))
    ceil_mode = F._bool_arg(ceil_mode, fn, "ceil_mode", 5)
    count_include_pad = F._bool_arg(count_include_pad, fn, "count_include_pad", 6)
    if divisor_override is not None:
        divisor_override = F._int_arg(divisor_override, fn, "divisor_override", 7)
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    od, oh, ow = _geometry(input, "avg_pool3d()", k, s, p, (1, 1, 1), ceil_mode, True)
    if input._data.dtype.name not in ("float32", "float64", "int64"):
        raise F._not_implemented("avg_pool3d_out_frame", input)
    geo = (k, s, p, ceil_mode, count_include_pad, (od, oh, ow))

    def forward(input):
        x, unbatched = _batched(input)
        if x._data.dtype.kind in "iu":
            out = _int_avg(x, geo, divisor_override)
        else:
            # with an override, the (H, W) stage sums (divisor 1) and the depth stage divides
            out = _avg_stages(x, geo, None if divisor_override is None else 1, divisor_override)
        return sh.squeeze(out, 0) if unbatched else out

    return record("AvgPool3DBackward0", forward, (input,), (input,), ("self",))


def _avg_stages(x, geo, first, second):
    """The (H, W) stage (divisor override ``first``), then the depth stage (``second``)."""
    k, s, p, ceil_mode, include, (od, oh, ow) = geo
    n, c, depth, h, w = x._data.shape
    y1 = F.avg_pool2d(sh.reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], ceil_mode,
                      include, first)
    y2 = F.avg_pool2d(sh.reshape(y1, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1),
                      (p[0], 0), ceil_mode, include, second)
    return sh.reshape(y2, (n, c, od, oh, ow))


def _int_avg(x, geo, override):
    """Integer input: each window's exact sum divided once (truncating, as PyTorch's integer
    kernel) by the window's divisor, read off float64 pools of ones (count / mean)."""
    total = _avg_stages(x, geo, 1, 1)
    if override is not None:
        return ew.div(total, override, rounding_mode="trunc")
    ones = _wrap(_arrays.full(x._data, (1, 1) + x._data.shape[2:], 1.0, np.float64))
    count = _avg_stages(ones, geo, 1, 1)
    divisor = ew.div(count, _avg_stages(ones, geo, None, None)).round().to(x.dtype)
    return ew.div(total, divisor, rounding_mode="trunc")


def _adaptive_size(fn, input, output_size):
    if not isinstance(output_size, (list, tuple)) and (
            output_size is None or not F._is_int(output_size)):
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
    F._tensor_arg(fn, "input", 1, input)
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
            raise F._dim_error(-3, len(shape))
        return red.mean(input, (-3, -2, -1), keepdim=True)
    if len(shape) not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(shape)}")
    _nonempty(fn, shape)
    F._require_float(input, "adaptive_avg_pool3d_cpu")

    def forward(input):
        x, unbatched = _batched(input)
        n, c, depth, h, w = x._data.shape
        od, oh, ow = size
        if 0 in (n,) + size:  # empty: a (differentiable) empty slice of the input
            out = sh.reshape(x[:, :, :0, :0, :0], (n, c, od, oh, ow))
        else:
            y1 = F.adaptive_avg_pool2d(sh.reshape(x, (n, c * depth, h, w)), (oh, ow))
            y2 = F.adaptive_avg_pool2d(sh.reshape(y1, (n, c, depth, oh * ow)), (od, oh * ow))
            out = sh.reshape(y2, (n, c, od, oh, ow))
        return sh.squeeze(out, 0) if unbatched else out

    return record("AdaptiveAvgPool3DBackward0", forward, (input,), (input,), ("self",))


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maxima over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W) input."""
    fn = "adaptive_max_pool3d"
    F._tensor_arg(fn, "input", 1, input)
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
    F._require_float(input, "adaptive_max_pool3d_cpu")

    def forward(input):
        x, unbatched = _batched(input)
        n, c, depth, h, w = x._data.shape
        od, oh, ow = size
        out_shape = (n, c, od, oh, ow)
        if 0 in (n,) + size:
            out = sh.reshape(x[:, :, :0, :0, :0], out_shape)
            idx = _wrap(_arrays.zeros(x._data, out_shape, np.int64))
        else:
            y1, i1 = FL.adaptive_max_pool2d(sh.reshape(x, (n, c * depth, h, w)), (oh, ow), True)
            y2, i2 = FL.adaptive_max_pool2d(sh.reshape(y1, (n, c, depth, oh * ow)), (od, oh * ow),
                                            True)
            out = sh.reshape(y2, out_shape)
            idx = sh.reshape(_indices_3d(i1, i2, (n, c, depth, h, w), oh * ow), out_shape) \
                if return_indices else None
        if unbatched:
            out = sh.squeeze(out, 0)
            idx = None if idx is None else sh.squeeze(idx, 0)
        return (out, idx) if return_indices else out

    return record("AdaptiveMaxPool3DBackward0", forward, (input,), (input,), ("self",))
